package secret

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/embedauth/connect/store"
)

func key(id string, b byte) Key { return Key{ID: id, Secret: bytes.Repeat([]byte{b}, KeySize)} }

func TestSealOpen(t *testing.T) {
	t.Parallel()
	k, err := NewKeyring(key("a", 1))
	if err != nil {
		t.Fatal(err)
	}
	s1, err := k.Seal(t.Context(), "p", []byte("hunter2"))
	if err != nil {
		t.Fatal(err)
	}
	s2, _ := k.Seal(t.Context(), "p", []byte("hunter2"))
	if s1 == s2 {
		t.Fatal("two seals of one value are equal: nonce reused")
	}
	if strings.Contains(s1, "hunter2") || !strings.HasPrefix(s1, "v1:a:") {
		t.Fatalf("sealed value %q", s1)
	}
	got, err := k.Open("p", s1)
	if err != nil || string(got) != "hunter2" {
		t.Fatalf("Open = %q, %v", got, err)
	}
	if _, err := k.Open("other", s1); !errors.Is(err, ErrOpen) {
		t.Fatalf("open with another purpose: %v", err)
	}
}

func TestRotation(t *testing.T) {
	t.Parallel()
	old, _ := NewKeyring(key("old", 1))
	sealed, _ := old.Seal(t.Context(), "p", []byte("v"))
	both, err := NewKeyring(key("new", 2), key("old", 1))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := both.Open("p", sealed); err != nil || string(got) != "v" {
		t.Fatalf("old value under new keyring: %q %v", got, err)
	}
	if !both.NeedsReseal(sealed) {
		t.Fatal("old value does not need reseal")
	}
	fresh, _ := both.Seal(t.Context(), "p", []byte("v"))
	if both.NeedsReseal(fresh) || both.NeedsReseal("") {
		t.Fatal("fresh or empty value needs reseal")
	}
	newOnly, _ := NewKeyring(key("new", 2))
	if _, err := newOnly.Open("p", sealed); !errors.Is(err, ErrOpen) {
		t.Fatalf("value of a removed key opened: %v", err)
	}
}

func TestNewKeyringErrors(t *testing.T) {
	t.Parallel()
	for name, keys := range map[string][]Key{
		"none":      nil,
		"short key": {{ID: "a", Secret: []byte("short")}},
		"bad id":    {key("a:b", 1)},
		"empty id":  {key("", 1)},
		"duplicate": {key("a", 1), key("a", 2)},
	} {
		if _, err := NewKeyring(keys...); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestOpenTampered(t *testing.T) {
	t.Parallel()
	k, _ := NewKeyring(key("a", 1))
	s, _ := k.Seal(t.Context(), "p", []byte("value"))
	for _, bad := range []string{"", "v1:", "v1:a", "v1:a:!!", "v1:zz:" + s[5:], "v2:" + s[3:], s[:len(s)-2] + "AA", "v1:a:AAAA"} {
		if _, err := k.Open("p", bad); !errors.Is(err, ErrOpen) {
			t.Errorf("Open(%q) = %v, want ErrOpen", bad, err)
		}
	}
}

func FuzzOpen(f *testing.F) {
	k, _ := NewKeyring(key("a", 1))
	s, _ := k.Seal(f.Context(), "p", []byte("value"))
	f.Add(s)
	f.Add("v1:a:")
	f.Fuzz(func(t *testing.T, in string) {
		out, err := k.Open("p", in)
		if err == nil && in != s && string(out) != "value" {
			t.Fatalf("forged value opened: %q", out)
		}
	})
}

// TestOpenKeyErrors: a value sealed under a key the keyring lacks, and one
// that the key of its id does not open, are errors of kind
// store.ErrEncryptionKey with codes that say which, naming the key id.
func TestOpenKeyErrors(t *testing.T) {
	t.Parallel()
	a, _ := NewKeyring(key("ka", 1))
	sealed, err := a.Seal(t.Context(), "p", []byte("hunter2"))
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		ring *Keyring
		code string
	}{
		"missing key":        {must(NewKeyring(key("kb", 2))), store.CodeUnknownEncryptionKey},
		"other key, same id": {must(NewKeyring(key("ka", 3))), store.CodeEncryptionKeyMismatch},
	} {
		_, err := tc.ring.Open("p", sealed)
		var se *store.Error
		if !errors.Is(err, ErrOpen) || !errors.Is(err, store.ErrEncryptionKey) || !errors.As(err, &se) ||
			se.Code != tc.code || !strings.Contains(se.Message, `"ka"`) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if a.Has("kb") || !a.Has("ka") {
		t.Error("Has")
	}
	// Malformed values stay plain ErrOpen errors.
	for _, v := range []string{"", "v1:ka", "v2:ka:x", "v1:k*:x"} {
		if _, err := a.Open("p", v); !errors.Is(err, ErrOpen) || errors.Is(err, store.ErrEncryptionKey) {
			t.Errorf("Open(%q): %v", v, err)
		}
	}
}

func must(k *Keyring, err error) *Keyring {
	if err != nil {
		panic(err)
	}
	return k
}

// TestGuard: Seal runs the guard's check until a run passes, seals nothing
// while it fails, and never runs it again once it passed (nor once
// MarkChecked recorded a check run elsewhere); Reseal does not run it.
func TestGuard(t *testing.T) {
	t.Parallel()
	k, err := NewKeyring(key("a", 1))
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := k.Seal(t.Context(), "p", []byte("v")) // no guard yet: seals
	if err != nil {
		t.Fatal(err)
	}
	refused := errors.New("keys do not open the store")
	calls, fail := 0, true
	k.Guard(func(ctx context.Context) error {
		calls++
		if fail {
			return refused
		}
		return nil
	})
	for i := range 2 {
		if s, err := k.Seal(t.Context(), "p", []byte("v")); !errors.Is(err, refused) || s != "" {
			t.Fatalf("Seal %d with a failing check = %q, %v", i, s, err)
		}
		if err := k.Ready(t.Context()); !errors.Is(err, refused) {
			t.Fatalf("Ready %d with a failing check = %v", i, err)
		}
	}
	if calls != 4 {
		t.Fatalf("the failing check ran %d times, want once per call (4)", calls)
	}
	if _, err := k.Reseal("p", sealed); err != nil {
		t.Fatalf("Reseal ran the check: %v", err)
	}
	if calls != 4 {
		t.Fatalf("Reseal ran the check")
	}
	fail = false
	for range 3 {
		if _, err := k.Seal(t.Context(), "p", []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	if calls != 5 {
		t.Fatalf("the check ran %d times, want 5: once more, until it passed", calls)
	}

	// MarkChecked: a check passed elsewhere.
	other, _ := NewKeyring(key("a", 1))
	other.Guard(func(context.Context) error { return refused })
	other.MarkChecked()
	if _, err := other.Seal(t.Context(), "p", []byte("v")); err != nil {
		t.Fatalf("Seal after MarkChecked: %v", err)
	}
}
