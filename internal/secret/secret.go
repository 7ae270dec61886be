package secret

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/embedauth/connect/store"
)

// KeySize is the size of an AES-256 key in bytes.
const KeySize = 32

// Key is one key of a keyring.
type Key struct {
	// ID names the key inside sealed values: letters, digits, '-' and '_'.
	ID string
	// Secret is 32 bytes of random key material.
	Secret []byte
}

// Keyring seals with its primary key and opens with any of its keys.
type Keyring struct {
	// bufs holds the scratch buffers of Seal (nonce and ciphertext).
	bufs    sync.Pool
	primary string
	aeads   map[string]cipher.AEAD

	// check is the guard's check (see Guard); nil when none is set.
	check func(ctx context.Context) error
	// checked is true once a check passed: Seal then seals at once.
	checked atomic.Bool
}

// ErrOpen is returned when a sealed value cannot be opened: it is malformed,
// its key is unknown, or it was tampered with. An unknown key, and a value
// that the key of its id does not open, are also *store.Error values of
// kind store.ErrEncryptionKey (codes unknown_encryption_key and
// encryption_key_mismatch), which name the key id and never hold secret
// material.
var ErrOpen = errors.New("secret: cannot open sealed value")

// unknownKey is the error of a value sealed under a key the keyring lacks.
func unknownKey(id string) error {
	return &store.Error{Kind: store.ErrEncryptionKey, Code: store.CodeUnknownEncryptionKey,
		Message: fmt.Sprintf("A secret is sealed under encryption key id %q, which this server does not have: it was started "+
			"without that key (lost, or dropped from its encryption keys). Configure the key again to read it.", id),
		Err: fmt.Errorf("%w: unknown key id %q", ErrOpen, id)}
}

// keyMismatch is the error of a value that the key of its id does not open.
func keyMismatch(id string) error {
	return &store.Error{Kind: store.ErrEncryptionKey, Code: store.CodeEncryptionKeyMismatch,
		Message: fmt.Sprintf("A secret sealed under encryption key id %q does not open with this server's key of that id: "+
			"the key differs from the one that sealed it (or the value was altered).", id),
		Err: fmt.Errorf("%w: key %q: authentication failed", ErrOpen, id)}
}

// NewKeyring builds a keyring whose primary key is keys[0].
func NewKeyring(keys ...Key) (*Keyring, error) {
	if len(keys) == 0 {
		return nil, errors.New("secret: at least one key is required")
	}
	k := &Keyring{primary: keys[0].ID, aeads: make(map[string]cipher.AEAD, len(keys))}
	for _, key := range keys {
		if !validID(key.ID) {
			return nil, fmt.Errorf("secret: key id %q must be 1 to 32 letters, digits, '-' or '_'", key.ID)
		}
		if len(key.Secret) != KeySize {
			return nil, fmt.Errorf("secret: key %q is %d bytes, want %d", key.ID, len(key.Secret), KeySize)
		}
		if _, dup := k.aeads[key.ID]; dup {
			return nil, fmt.Errorf("secret: duplicate key id %q", key.ID)
		}
		block, err := aes.NewCipher(key.Secret)
		if err != nil {
			return nil, fmt.Errorf("secret: key %q: %w", key.ID, err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("secret: key %q: %w", key.ID, err)
		}
		k.aeads[key.ID] = aead
	}
	return k, nil
}

func validID(id string) bool {
	if id == "" || len(id) > 32 {
		return false
	}
	for _, r := range id {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
		default:
			return false
		}
	}
	return true
}

// PrimaryID returns the id of the key new values are sealed with.
func (k *Keyring) PrimaryID() string { return k.primary }

// Guard makes Seal (and Ready) run check before it seals, until a run of
// check passes; after that, sealing costs no check. check verifies that the
// keyring holds the keys the stored values need (connect's
// Service.CheckEncryptionKeys), so that nothing is sealed and written under
// a keyring that does not open what is stored. It runs with the caller's
// context, inside the caller's transaction if there is one; concurrent
// first calls may each run it. Call Guard once, before the keyring is used.
func (k *Keyring) Guard(check func(ctx context.Context) error) { k.check = check }

// Ready runs the guard's check (see Guard) unless one passed already, and
// returns its error. Paths that write without sealing call it before their
// first write.
func (k *Keyring) Ready(ctx context.Context) error {
	if k.check == nil || k.checked.Load() {
		return nil
	}
	if err := k.check(ctx); err != nil {
		return err
	}
	k.checked.Store(true)
	return nil
}

// MarkChecked records that a check run outside Ready passed (the host
// calling CheckEncryptionKeys): Seal seals at once from then on. Once
// passed, a check is never run again by Seal, so a caller that called
// Ready may seal on goroutines that must not use the Store.
func (k *Keyring) MarkChecked() { k.checked.Store(true) }

// Seal encrypts plaintext for the given purpose under the primary key,
// after the guard's check passed (see Guard and Ready).
func (k *Keyring) Seal(ctx context.Context, purpose string, plaintext []byte) (string, error) {
	if err := k.Ready(ctx); err != nil {
		return "", err
	}
	return k.seal(purpose, plaintext)
}

// Reseal opens a sealed value of purpose and seals it again under the
// primary key. It does not run the guard's check: it is for values read
// from the Store, re-sealed by a caller that checked the keys first
// (connect's Service.ReencryptSecrets), or whose result it discards (the
// check itself, which only needs to know whether the value opens).
func (k *Keyring) Reseal(purpose, sealed string) (string, error) {
	b, err := k.Open(purpose, sealed)
	if err != nil {
		return "", err
	}
	return k.seal(purpose, b)
}

func (k *Keyring) seal(purpose string, plaintext []byte) (string, error) {
	aead := k.aeads[k.primary]
	n := aead.NonceSize() + len(plaintext) + aead.Overhead()
	bp, _ := k.bufs.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	defer k.bufs.Put(bp)
	if cap(*bp) < n {
		*bp = make([]byte, 0, n)
	}
	buf := (*bp)[:aead.NonceSize()]
	if _, err := rand.Read(buf); err != nil {
		return "", fmt.Errorf("secret: nonce: %w", err)
	}
	buf = aead.Seal(buf, buf, plaintext, []byte(purpose))
	// One allocation for the result: the prefix and the base64 text are
	// written into it, and the string shares it (nothing writes it after).
	out := make([]byte, 0, len("v1:")+len(k.primary)+1+base64.RawURLEncoding.EncodedLen(len(buf)))
	out = append(append(append(out, "v1:"...), k.primary...), ':')
	out = base64.RawURLEncoding.AppendEncode(out, buf)
	if cap(*bp) > maxPooledSeal {
		*bp = nil // do not keep a huge buffer alive
	}
	return unsafe.String(unsafe.SliceData(out), len(out)), nil
}

// maxPooledSeal is the largest scratch buffer Seal gives back to the pool.
const maxPooledSeal = 64 << 10

// Open decrypts a value sealed for purpose.
func (k *Keyring) Open(purpose, sealed string) ([]byte, error) {
	id, aead, raw, err := k.parse(sealed)
	if err != nil {
		return nil, err
	}
	n := aead.NonceSize()
	if len(raw) < n+aead.Overhead() {
		return nil, fmt.Errorf("%w: too short", ErrOpen)
	}
	out, err := aead.Open(nil, raw[:n], raw[n:], []byte(purpose))
	if err != nil {
		return nil, keyMismatch(id)
	}
	return out, nil
}

// KeyID returns the id of the key a sealed value was sealed with.
func KeyID(sealed string) (string, bool) { return store.SealedKeyID(sealed) }

// Has reports whether the keyring holds a key with the id.
func (k *Keyring) Has(id string) bool {
	_, ok := k.aeads[id]
	return ok
}

// NeedsReseal reports whether sealed was sealed with a key other than the
// primary. An empty value needs nothing.
func (k *Keyring) NeedsReseal(sealed string) bool {
	if sealed == "" {
		return false
	}
	id, ok := KeyID(sealed)
	return !ok || id != k.primary
}

func (k *Keyring) parse(sealed string) (string, cipher.AEAD, []byte, error) {
	rest, ok := strings.CutPrefix(sealed, "v1:")
	if !ok {
		return "", nil, nil, fmt.Errorf("%w: unknown format", ErrOpen)
	}
	id, body, ok := strings.Cut(rest, ":")
	if !ok {
		return "", nil, nil, fmt.Errorf("%w: unknown format", ErrOpen)
	}
	aead, ok := k.aeads[id]
	if !ok {
		if _, valid := store.SealedKeyID(sealed); valid {
			return "", nil, nil, unknownKey(id)
		}
		return "", nil, nil, fmt.Errorf("%w: unknown format", ErrOpen)
	}
	raw, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil {
		return "", nil, nil, fmt.Errorf("%w: bad encoding", ErrOpen)
	}
	return id, aead, raw, nil
}
