package connect_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/environments"
)

// TestEncryptionKeyID: the id derived from a key is "k" and the first 8 hex
// digits of its SHA-256, the reference server's derivation since its first
// release (databases it sealed keep opening); ParseEncryptionKey sets it,
// and a key of Config.EncryptionKeys without an id gets it.
func TestEncryptionKeyID(t *testing.T) {
	t.Parallel()
	key := bytes.Repeat([]byte{7}, 32)
	// printf %s "$KEY" | base64 -d | sha256sum | cut -c1-8
	const b64, want = "BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=", "k4bb06f8e"
	if got := connect.EncryptionKeyID(key); got != want {
		t.Fatalf("EncryptionKeyID = %q, want %q", got, want)
	}
	for _, in := range []string{b64, " " + b64 + "\n"} {
		k, err := connect.ParseEncryptionKey(in)
		if err != nil || k.ID != want || !bytes.Equal(k.Key, key) {
			t.Errorf("ParseEncryptionKey(%q) = %+v, %v", in, k, err)
		}
	}
	if other := connect.EncryptionKeyID(bytes.Repeat([]byte{8}, 32)); other == want {
		t.Errorf("two keys, one id %q", other)
	}

	for name, in := range map[string]string{
		"empty":        "  ",
		"not base64":   "not a key, surely not base64 at all!",
		"16 bytes":     "BwcHBwcHBwcHBwcHBwcHBw==",
		"33 bytes":     "BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcH",
		"URL encoding": "-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_8=",
	} {
		k, err := connect.ParseEncryptionKey(in)
		if err == nil || k.Key != nil || k.ID != "" {
			t.Errorf("%s: ParseEncryptionKey = %+v, %v; want an error", name, k, err)
			continue
		}
		if strings.TrimSpace(in) != "" && strings.Contains(err.Error(), strings.TrimSpace(in)) {
			t.Errorf("%s: the error quotes the key: %v", name, err)
		}
	}

	// A key without an id seals under the derived id.
	b := sqliteBackend(t)
	st := b.lite
	svc, err := connect.New(connect.Config{Store: st, Scheduler: schedulerFor(t, b), EncryptionKeys: []connect.EncryptionKey{{Key: key}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Environments().Create(context.Background(), environments.CreateInput{Name: "dev"}); err != nil {
		t.Fatal(err)
	}
	if ids, err := st.SealingKeyIDs(context.Background()); err != nil || len(ids) != 1 || ids[0] != want {
		t.Errorf("key ids of the sealed values: %v, %v; want [%s]", ids, err, want)
	}
}
