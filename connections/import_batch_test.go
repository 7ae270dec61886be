package connections

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/embedauth/connect/store"
)

func TestDecodeImportBatch(t *testing.T) {
	t.Parallel()
	ins, err := DecodeImportBatch([]byte(` [ {"provider_config_key":"a","connection_id":"1","api_key":"k"} ,
		{"provider_config_key":"b","expires_at":"2030-01-02","metadata":{"x":[1]}} ] `))
	if err != nil {
		t.Fatal(err)
	}
	if len(ins) != 2 || ins[0].ProviderConfigKey != "a" || ins[0].APIKey != "k" || ins[1].ExpiresAt == nil ||
		ins[1].ExpiresAt.Year() != 2030 || ins[1].Metadata["x"] == nil {
		t.Errorf("decoded %+v", ins)
	}
	paths := func(err error) []string {
		var e *store.Error
		if !errors.As(err, &e) || !errors.Is(err, store.ErrInvalid) || e.Code != "invalid_body" {
			t.Fatalf("error %v is not invalid_body", err)
		}
		var out []string
		for _, f := range e.Errors {
			out = append(out, strings.Join(f.Path, "."))
		}
		return out
	}
	for _, tc := range []struct {
		body  string
		paths []string
	}{
		{``, nil},
		{`{"provider_config_key":"a"}`, nil},
		{`[`, nil},
		{`[{}`, nil},
		{`[{},]`, nil},
		{`[] []`, nil},
		{`[1, {"api_key":2}, {"expires_at":"soon"}, {"tags":{"a":1}}, {}]`, []string{"0", "1.api_key", "2.expires_at", "3.tags"}},
		{`[{"a":1,"a":2}]`, []string{"0.a"}},
		{`[[{}]]`, []string{"0"}},
		{"[" + strings.Repeat(`{},`, MaxImportBatch) + `{}]`, []string{""}},
	} {
		_, err := DecodeImportBatch([]byte(tc.body))
		if err == nil {
			t.Errorf("%.40q: no error", tc.body)
			continue
		}
		if got := paths(err); tc.paths != nil {
			if diff := cmp.Diff(tc.paths, got); diff != "" {
				t.Errorf("%.40q (-want +got):\n%s", tc.body, diff)
			}
		}
	}
}

// FuzzDecodeImportBatch: any body is decoded or refused with invalid_body,
// never a panic; what is decoded has as many items as the array, at most
// MaxImportBatch.
func FuzzDecodeImportBatch(f *testing.F) {
	for _, s := range []string{
		`[{"provider_config_key":"gh","connection_id":"a","access_token":"t","expires_in":60}]`,
		`[{"provider_config_key":"oa","credentials":{"type":"API_KEY","apiKey":"k"}},{"tags":{"A":"b"}}]`,
		`[1,"x",null,[],{"expires_at":3}]`, `[]`, `[{}]  `, `[{}] x`, `[{"a":1,"a":2}]`, "[{\"a\":\"\xff\"}]",
		`[{"a":"\u0000"}]`, `[{"metadata":{"a":{"b":[{"c":{}}]}}}]`, `{"provider_config_key":"gh"}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		ins, err := DecodeImportBatch([]byte(body))
		if err != nil {
			var e *store.Error
			if !errors.As(err, &e) || !errors.Is(err, store.ErrInvalid) || e.Code != "invalid_body" {
				t.Fatalf("%q: error %v is not invalid_body", body, err)
			}
			return
		}
		var raw []json.RawMessage
		if err := json.Unmarshal([]byte(body), &raw); err != nil {
			t.Fatalf("%q decoded, but is not a JSON array: %v", body, err)
		}
		if len(ins) != len(raw) || len(ins) > MaxImportBatch {
			t.Fatalf("%q: %d items decoded from an array of %d", body, len(ins), len(raw))
		}
	})
}
