package store

import (
	"regexp"
	"strings"
	"testing"
)

func TestSealedKeyID(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"v1:k1:abc":                            "k1",
		"v1:a_b-C9::":                          "a_b-C9",
		"v1:" + strings.Repeat("x", 32) + ":d": strings.Repeat("x", 32),
		"v1:" + strings.Repeat("x", 33) + ":d": "",
		"v1::abc":                              "",
		"v1:k1":                                "",
		"v2:k1:abc":                            "",
		"v1:k 1:abc":                           "",
		"v1:kü:abc":                            "",
		"":                                     "",
		"plain":                                "",
	} {
		got, ok := SealedKeyID(in)
		if got != want || ok != (want != "") {
			t.Errorf("SealedKeyID(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
}

// sealedKeyIDPattern is the expression of store/postgres's sealing_key_id
// (migration 008): both must agree on every value.
var sealedKeyIDPattern = regexp.MustCompile(`^v1:([A-Za-z0-9_-]{1,32}):`)

func FuzzSealedKeyID(f *testing.F) {
	for _, s := range []string{"v1:k1:abc", "v1::x", "v1:k1", "v1:a_b-c:", "v1:" + strings.Repeat("y", 33) + ":", "v1:k\x00:x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, ok := SealedKeyID(s)
		m := sealedKeyIDPattern.FindStringSubmatch(s)
		if ok != (m != nil) || (ok && id != m[1]) {
			t.Fatalf("SealedKeyID(%q) = %q, %v; the SQL pattern finds %q", s, id, ok, m)
		}
		if ok && !strings.HasPrefix(s, "v1:"+id+":") {
			t.Fatalf("SealedKeyID(%q) = %q, not the value's prefix", s, id)
		}
	})
}
