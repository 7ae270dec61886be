package connect

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/embedauth/connect/internal/secret"
	"github.com/embedauth/connect/store"
)

// MissingKeysError is the error of CheckEncryptionKeys (and Start): the
// Store holds secrets sealed under encryption keys that
// Config.EncryptionKeys lacks. It matches ErrEncryptionKey under
// errors.Is. It names key ids and counts values, never secret material.
type MissingKeysError struct {
	// Keys are the missing keys, by id.
	Keys []MissingKey
}

// MissingKey is one encryption key the Store needs and the Service lacks.
type MissingKey struct {
	// ID is the key id the sealed values name.
	ID string
	// Values counts the values sealed under it by kind (store.Sealed*,
	// such as connection_credentials).
	Values map[string]int
	// Mismatch is true when the Service holds a key of that id, but not
	// the key material that sealed the values.
	Mismatch bool
}

func (e *MissingKeysError) Error() string {
	var b strings.Builder
	b.WriteString("connect: the database holds secrets sealed under encryption keys this server does not have: ")
	for i, k := range e.Keys {
		if i > 0 {
			b.WriteString("; ")
		}
		total := 0
		var kinds []string
		for _, kind := range slices.Sorted(maps.Keys(k.Values)) {
			total += k.Values[kind]
			kinds = append(kinds, fmt.Sprintf("%d %s", k.Values[kind], kind))
		}
		if k.Mismatch {
			fmt.Fprintf(&b, "the key of id %q is not the key that sealed its %d values (%s)", k.ID, total, strings.Join(kinds, ", "))
			continue
		}
		fmt.Fprintf(&b, "key id %q seals %d values (%s)", k.ID, total, strings.Join(kinds, ", "))
	}
	b.WriteString(". Configure the missing keys again (as previous keys if another is primary): without them these secrets cannot be read")
	return b.String()
}

// Is reports whether target is ErrEncryptionKey.
func (e *MissingKeysError) Is(target error) bool { return target == store.ErrEncryptionKey }

// EncryptionKeyID returns the id of an encryption key derived from the key
// itself: "k" and the first 8 hex digits of the SHA-256 of its bytes, such
// as "k3f2a9c01" (in a shell: base64 -d < connect.key | sha256sum | cut
// -c1-8). It is the id of an EncryptionKey whose ID is empty, and the id
// ParseEncryptionKey and the reference server give a key, so that one key
// opens the same stored secrets whichever of them sealed those. Distinct
// keys get distinct ids (but for a chance of one in four billion, which
// CheckEncryptionKeys would report as a mismatch).
func EncryptionKeyID(key []byte) string {
	sum := sha256.Sum256(key)
	return "k" + hex.EncodeToString(sum[:4])
}

// ParseEncryptionKey decodes an encryption key given as standard base64 of
// 32 bytes (openssl rand -base64 32), spaces and line breaks around it
// ignored, and returns it with the id EncryptionKeyID derives. Its error
// says what is wrong with the text without quoting it.
func ParseEncryptionKey(b64 string) (EncryptionKey, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(b64))
	switch {
	case strings.TrimSpace(b64) == "":
		return EncryptionKey{}, errors.New("connect: the encryption key is empty: make one with openssl rand -base64 32, keep it, and give it at every start")
	case err != nil:
		return EncryptionKey{}, errors.New("connect: the encryption key is not standard base64 (openssl rand -base64 32)")
	case len(key) != secret.KeySize:
		return EncryptionKey{}, fmt.Errorf("connect: the encryption key is %d bytes, want %d (openssl rand -base64 32)", len(key), secret.KeySize)
	}
	return EncryptionKey{ID: EncryptionKeyID(key), Key: key}, nil
}

// CheckEncryptionKeys verifies that Config.EncryptionKeys holds every key
// that the Store's sealed values were sealed under, and returns a
// *MissingKeysError naming the missing key ids (and how many values of
// each kind each seals) when it does not. A server calls it before it
// serves (Start calls it too): started without a key, it would answer
// every read of those secrets with 500 unknown_encryption_key.
//
// It also opens one value sealed under each key id the Service holds, so
// that a key whose id was kept while its material changed is refused too
// (Mismatch).
//
// It reads the Store's registry of key ids (store.SealedValues) and one
// value per key, which costs the same however many secrets there are.
// Only for an id that the registry lists and the Service lacks (or holds
// with other material) does it count the values, reading them all; an id
// that no value names any longer (its values re-sealed or deleted) is then
// dropped from the registry, and is no error.
//
// Nothing is sealed and written before a check passed: the first write
// that seals a secret (creating an environment, an integration, a
// connection, ...) and Environments().Ensure run this check when neither
// Start nor the host ran it, and fail with its error. A check that passed
// is not run again, however many values are sealed after it.
func (s *Service) CheckEncryptionKeys(ctx context.Context) error {
	if err := s.checkEncryptionKeys(ctx); err != nil {
		return err
	}
	s.keyring.MarkChecked()
	return nil
}

// checkEncryptionKeys is CheckEncryptionKeys without recording that it
// passed: the keyring's guard (secret.Keyring.Guard) runs it and records
// that itself.
func (s *Service) checkEncryptionKeys(ctx context.Context) error {
	ids, err := s.store.SealingKeyIDs(ctx)
	if err != nil {
		return fmt.Errorf("connect: check encryption keys: %w", err)
	}
	var missing []MissingKey
	for _, id := range ids {
		mismatch := false
		if s.keyring.Has(id) {
			if mismatch, err = s.keyMismatch(ctx, id); err != nil {
				return fmt.Errorf("connect: check encryption keys: %w", err)
			}
			if !mismatch {
				continue
			}
		}
		counts, err := s.store.ForgetSealingKeyID(ctx, id)
		if err != nil {
			return fmt.Errorf("connect: check encryption keys: %w", err)
		}
		if len(counts) > 0 {
			missing = append(missing, MissingKey{ID: id, Values: counts, Mismatch: mismatch})
		}
	}
	if len(missing) > 0 {
		return &MissingKeysError{Keys: missing}
	}
	return nil
}

// keyMismatch reports whether a value sealed under the key id, which the
// Service holds, does not open with its key of that id. An id that no
// value names is no mismatch; neither is a value that is malformed rather
// than sealed under other key material.
func (s *Service) keyMismatch(ctx context.Context, id string) (bool, error) {
	kind, sealed, err := s.store.SampleSealedValue(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	open := s.resealer(kind)
	if open == nil {
		return false, nil
	}
	_, err = open(sealed)
	return store.CodeOf(err) == store.CodeEncryptionKeyMismatch, nil
}

// resealer returns the function that re-seals a value of kind, whichever
// package owns it.
func (s *Service) resealer(kind string) func(string) (string, error) {
	if f := s.environments.Resealer(kind); f != nil {
		return f
	}
	if f := s.integrations.Resealer(kind); f != nil {
		return f
	}
	if f := s.connections.Resealer(kind); f != nil {
		return f
	}
	return s.functions.Resealer(kind)
}

// restSealedKinds are the kinds of sealed values that ReencryptSecrets
// does not go through record by record, but re-seals in the Store with
// ResealValues: connect sessions' defaults, OAuth flows' secrets, async
// action tasks' inputs, outputs and error bodies, and sync records'
// payloads (the most numerous, last).
var restSealedKinds = []string{store.SealedSessionDefaults, store.SealedOAuthFlowSecrets,
	store.SealedActionInput, store.SealedActionOutput, store.SealedActionError, store.SealedRecordPayload}

// resealRest re-seals the values of restSealedKinds that are sealed under
// another key than the primary, then drops from the Store's registry the
// key ids that no value names any longer, so that a later start without
// those keys passes CheckEncryptionKeys without reading every value.
func (s *Service) resealRest(ctx context.Context) (int, error) {
	ids, err := s.store.SealingKeyIDs(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, id := range ids {
		if id == s.keyring.PrimaryID() || !s.keyring.Has(id) {
			continue
		}
		for _, kind := range restSealedKinds {
			k, err := s.store.ResealValues(ctx, kind, id, s.resealer(kind))
			n += k
			if err != nil {
				return n, fmt.Errorf("connect: re-seal %s: %w", kind, err)
			}
		}
		if _, err := s.store.ForgetSealingKeyID(ctx, id); err != nil {
			return n, err
		}
	}
	return n, nil
}
