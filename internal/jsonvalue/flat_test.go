package jsonvalue_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/embedauth/connect/internal/jsonvalue"
)

// checkFlat fails unless DecodeFlatObject and DecodeFlatStringObject,
// where they decode s, decode it as json.Unmarshal does.
func checkFlat(t *testing.T, s string) (decoded bool) {
	t.Helper()
	if got, ok := jsonvalue.DecodeFlatObject(s); ok {
		var want map[string]any
		if err := json.Unmarshal([]byte(s), &want); err != nil {
			t.Fatalf("DecodeFlatObject(%q) = %v, but json.Unmarshal fails: %v", s, got, err)
		}
		if d := cmp.Diff(want, got); d != "" || (want == nil) != (got == nil) {
			t.Fatalf("DecodeFlatObject(%q) (-json.Unmarshal +got):\n%s", s, d)
		}
		decoded = true
	}
	if got, ok := jsonvalue.DecodeFlatStringObject(s); ok {
		var want map[string]string
		if err := json.Unmarshal([]byte(s), &want); err != nil {
			t.Fatalf("DecodeFlatStringObject(%q) = %v, but json.Unmarshal fails: %v", s, got, err)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Fatalf("DecodeFlatStringObject(%q) (-json.Unmarshal +got):\n%s", s, d)
		}
	}
	return decoded
}

func TestDecodeFlatObject(t *testing.T) {
	for _, s := range []string{`{}`, ` { } `, `{"a":"b"}`, `{"team":"red","n":7}`, `{"x":-0.5e-3,"y":true,"z":false,"w":null}`,
		`{"a":"1","a":"2"}`, `{"日本":"語"}`, `{"a" : "b" , "c":1E5}`, `{"n":0}`, `{"n":-0}`, `{"n":12345678901234567890}`} {
		if !checkFlat(t, s) {
			t.Errorf("DecodeFlatObject(%q) declined", s)
		}
	}
	// Left to encoding/json: decoded or refused there.
	for _, s := range []string{``, `null`, `[]`, `{"a":{"b":1}}`, `{"a":[1]}`, `{"a":"\u00e9"}`, `{"a":"b\"c"}`, "{\"a\":\"\xff\"}",
		`{"a":1e400}`, `{"a":01}`, `{"a":1.}`, `{"a":}`, `{"a" "b"}`, `{"a":"b",}`, `{"a":"b"} x`, `{a:1}`, "{\"a\":\"\x01\"}", `{"a":tru}`,
		`{"a":--1}`, `{"a":1-2}`} {
		if checkFlat(t, s) {
			t.Errorf("DecodeFlatObject(%q) decoded it", s)
		}
	}
}

func FuzzDecodeFlatObject(f *testing.F) {
	for _, s := range []string{`{}`, `{"team":"red","n":7}`, `{"x":-0.5e-3,"y":true,"z":null}`, `{"a":"1","a":"2"}`, `{"a":1e400}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkFlat(t, s) })
}
