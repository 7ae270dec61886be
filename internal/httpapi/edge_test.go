package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/embedauth/connect/store"
)

func TestCheckJSON(t *testing.T) {
	t.Parallel()
	for in, wantPath := range map[string][]string{
		`{"a":"` + "\xff" + `"}`:                 nil,
		`{"a` + "\xc3" + `":1}`:                  nil,
		`{"a":1,"a":2}`:                          {"a"},
		`{"a":1,"\u0061":2}`:                     {"a"},
		`{"x":{"b":[{},{"c":1,"c":1}]}}`:         {"x", "b", "1", "c"},
		`{"k":"\u0000"}`:                         {"k"},
		`{"\u0000":1}`:                           {},
		`{"k":["\ud800"]}`:                       {"k", "0"},
		`{"k":"\udc00\ud800"}`:                   {"k"},
		`{"k":"\ud800\u0041"}`:                   {"k"},
		`{"k":` + strings.Repeat("[", 64) + `]}`: {"k", "0", "0"},
		`{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"j":10,"a":0}`: {"a"},
	} {
		err := CheckJSON([]byte(in))
		var e *store.Error
		if !errors.As(err, &e) || e.Code != "invalid_body" {
			t.Errorf("CheckJSON(%q) = %v, want invalid_body", in, err)
			continue
		}
		if wantPath == nil {
			if len(e.Errors) != 0 {
				t.Errorf("CheckJSON(%q) errors %+v", in, e.Errors)
			}
			continue
		}
		if len(e.Errors) != 1 || len(e.Errors[0].Path) < len(wantPath) || !slices.Equal(e.Errors[0].Path[:len(wantPath)], wantPath) {
			t.Errorf("CheckJSON(%q) errors %+v, want path %q", in, e.Errors, wantPath)
		}
	}
	for _, in := range []string{
		`{}`, `[]`, `"x"`, `1`, `{"a":{"a":{"a":1}},"b":[{"a":1},{"a":2}]}`,
		`{"A":1,"a":2}`, `{"s":"\ud83d\ude00 \u00e9 \" \\ \/ \b\f\n\r\t"}`, `{"u":"\ufffd"}`, `{"raw":"é` + "\ufffd" + `"}`,
		`{"a":"x","\\u0061":"y"}`,
		`{"k":` + strings.Repeat("[", 63) + strings.Repeat("]", 63) + `}`,
		// Not JSON: left to the decoder.
		`{"a":`, `{"a" 1}`, `{"a":"b`, `{,}`, `[1,]`, "{\"a\":\"\n\"}", `{"a":"\u00"}`,
	} {
		if err := CheckJSON([]byte(in)); err != nil {
			t.Errorf("CheckJSON(%q) = %v, want nil", in, err)
		}
	}
}

func TestCheckJSONArray(t *testing.T) {
	t.Parallel()
	for in, want := range map[string][]string{
		`[]`: nil,
		` [ {"a":[1,{"b":2}]} ,"x",  3 ,null, [ ] ] `: {`{"a":[1,{"b":2}]}`, `"x"`, `3`, `null`, `[ ]`},
		"[\n{\"s\":\"]\"}\n]":                         {`{"s":"]"}`},
		`[1,]`:                                        {`1`, ``},
	} {
		elems, err := CheckJSONArray([]byte(in))
		if err != nil {
			t.Errorf("CheckJSONArray(%q) = %v", in, err)
			continue
		}
		var got []string
		for _, e := range elems {
			got = append(got, string(e))
		}
		if !slices.Equal(got, want) {
			t.Errorf("CheckJSONArray(%q) = %q, want %q", in, got, want)
		}
	}
	for in, wantPath := range map[string][]string{
		``:                    nil,
		`{"a":1}`:             nil,
		`[1] [2]`:             nil,
		`[{"a":1}`:            nil,
		`[{"a" 1}]`:           nil,
		"[\"\xff\"]":          nil,
		`[{}, {"a":1,"a":2}]`: {"1", "a"},
		`[{"k":"\u0000"}]`:    {"0", "k"},
		`[` + strings.Repeat("[", 64) + strings.Repeat("]", 64) + `]`: {"0"},
	} {
		_, err := CheckJSONArray([]byte(in))
		var e *store.Error
		if !errors.As(err, &e) || e.Code != "invalid_body" {
			t.Errorf("CheckJSONArray(%q) = %v, want invalid_body", in, err)
			continue
		}
		if wantPath == nil {
			if len(e.Errors) != 0 {
				t.Errorf("CheckJSONArray(%q) errors %+v", in, e.Errors)
			}
			continue
		}
		if len(e.Errors) != 1 || len(e.Errors[0].Path) < len(wantPath) || !slices.Equal(e.Errors[0].Path[:len(wantPath)], wantPath) {
			t.Errorf("CheckJSONArray(%q) errors %+v, want path %q", in, e.Errors, wantPath)
		}
	}
}

func TestCheckContentType(t *testing.T) {
	t.Parallel()
	for ct, ok := range map[string]bool{
		"": true, "application/json": true, "application/json; charset=utf-8": true, "application/json; charset=UTF-8": true,
		"application/json;charset=utf8": true, "application/vnd.api+json": true,
		"application/json; charset=iso-8859-1": false, "application/json; charset=utf-16": false, "application/json; charset=": false,
		"text/plain": false, "application/json; charset=utf-8; charset=latin1": false,
	} {
		r := httptest.NewRequest("POST", "/", nil)
		if ct != "" {
			r.Header.Set("Content-Type", ct)
		}
		err := CheckContentType(r)
		if (err == nil) != ok {
			t.Errorf("CheckContentType(%q) = %v, want ok %v", ct, err, ok)
		}
		if err != nil {
			if status, d := Resolve(err); status != 415 || d.Code != "invalid_content_type" {
				t.Errorf("CheckContentType(%q) = %d %s", ct, status, d.Code)
			}
		}
	}
}

func TestCheckRequest(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		target string
		header map[string]string
		code   string // "" when accepted
	}{
		{"/integrations/gh?a=b&c=d%20e+f", nil, ""},
		{"/connections?search=%C3%A9t%C3%A9&x=a%09b%0D%0Ac", nil, ""},
		{"/proxy/files/a%2Fb?q=SELECT+Id%0AFROM+Account&fields=a;b&empty=&flag", nil, ""},
		{"/x", map[string]string{"User-Agent": "café\tbar", "Cookie": "a=\xff\x00"}, ""},
		{"/x/%ff", nil, "invalid_uri_params"},
		{"/x/%00", nil, "invalid_uri_params"},
		{"/x/%7f", nil, "invalid_uri_params"},
		{"/x/%c2%80", nil, "invalid_uri_params"},
		{"/x/%e2%82", nil, "invalid_uri_params"},
		{"/x?a=%ff", nil, "invalid_query_params"},
		{"/x?%ff=1", nil, "invalid_query_params"},
		{"/x?a%0a=1", nil, "invalid_query_params"},
		{"/x?a=%00", nil, "invalid_query_params"},
		{"/x?a=%01", nil, "invalid_query_params"},
		{"/x?a=%zz", nil, "invalid_query_params"},
		{"/x?a=%f", nil, "invalid_query_params"},
		{"/x?a=b%", nil, "invalid_query_params"},
		{"/x", map[string]string{"Provider-Config-Key": "\xff"}, "invalid_headers"},
		{"/x", map[string]string{"X-A": "a\x00b"}, "invalid_headers"},
		{"/x", map[string]string{"X-A": "a\nb"}, "invalid_headers"},
		{"/x", map[string]string{"X-A": "a\u0085b"}, "invalid_headers"},
	} {
		u, err := url.ParseRequestURI(tc.target)
		if err != nil {
			t.Fatalf("%s: %v", tc.target, err)
		}
		r := httptest.NewRequest("GET", "/", nil)
		r.URL = u
		for k, v := range tc.header {
			r.Header[k] = []string{v}
		}
		err = CheckRequest(r)
		if tc.code == "" {
			if err != nil {
				t.Errorf("CheckRequest(%q, %q) = %v, want nil", tc.target, tc.header, err)
			}
			continue
		}
		var e *store.Error
		if !errors.As(err, &e) || e.Code != tc.code {
			t.Errorf("CheckRequest(%q, %q) = %v, want %s", tc.target, tc.header, err, tc.code)
			continue
		}
		if b, _ := json.Marshal(e); strings.Contains(string(b), `\ufffd`) || strings.Contains(string(b), "\xff") {
			t.Errorf("CheckRequest(%q) echoes the bad bytes: %s", tc.target, b)
		}
	}
}

// FuzzCheckJSON compares CheckJSON with encoding/json on any input: a
// body it accepts is UTF-8 and, decoded, holds no duplicate key, no U+0000
// and no nesting beyond MaxJSONDepth; a valid JSON body with one of those
// is refused, and so is one that is not UTF-8.
func FuzzCheckJSON(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `{"a":1,"a":2}`, `{"a":{"b":[{"c":1,"c":2}]}}`, `{"a":"\u0000"}`, `{"a":"\ud800"}`,
		`{"a":"\ud83d\ude00"}`, `{"\u0061":1,"a":2}`, "{\"a\":\"\xff\"}", `[[[[]]]]`, `{"a":`, `"x"`, `{"a":1,"b":{"a":1}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		err := CheckJSON(b)
		if err != nil {
			var e *store.Error
			if !errors.As(err, &e) || e.Code != "invalid_body" {
				t.Fatalf("CheckJSON(%q) = %v, not invalid_body", b, err)
			}
		}
		if !utf8.Valid(b) {
			if err == nil {
				t.Fatalf("CheckJSON(%q) accepted invalid UTF-8", b)
			}
			return
		}
		if !json.Valid(b) {
			return
		}
		dup, nul, deep := refScan(t, b)
		if err == nil && (dup || nul || deep) {
			t.Fatalf("CheckJSON(%q) accepted: duplicate %v, NUL %v, deep %v", b, dup, nul, deep)
		}
		// Without escapes nothing else can be refused (lone surrogates
		// need one).
		if err != nil && !dup && !nul && !deep && !bytes.Contains(b, []byte(`\u`)) {
			t.Fatalf("CheckJSON(%q) = %v without a reason", b, err)
		}
	})
}

// refScan walks valid JSON with encoding/json's tokenizer: a key given
// twice in one object, U+0000 in a string, nesting deeper than
// MaxJSONDepth.
func refScan(t *testing.T, b []byte) (dup, nul, deep bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	type frame struct {
		obj  bool
		keys map[string]bool
		key  bool // the next string of this object is a key
	}
	var stack []*frame
	top := func() *frame {
		if len(stack) == 0 {
			return nil
		}
		return stack[len(stack)-1]
	}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatalf("Token on valid JSON %q: %v", b, err)
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			continue
		}
		f := top()
		if s, ok := tok.(string); ok {
			if strings.IndexByte(s, 0) >= 0 {
				nul = true
			}
			if f != nil && f.obj && f.key {
				dup = dup || f.keys[s]
				f.keys[s], f.key = true, false
				continue
			}
		}
		// A value: the next string of its object is a key again.
		if f != nil && f.obj {
			f.key = true
		}
		if d, ok := tok.(json.Delim); ok {
			stack = append(stack, &frame{obj: d == '{', keys: map[string]bool{}, key: true})
			if len(stack) > MaxJSONDepth {
				deep = true
			}
		}
	}
}

// FuzzCheckRequest: CheckRequest never panics, and a request it accepts
// has a clean path, and query keys and values that decode to UTF-8.
func FuzzCheckRequest(f *testing.F) {
	for _, s := range []string{"/a/b", "/a%ff", "/%00", "/p?x=%ff", "/p?x=1&y=%zz", "/p?%e2%82%ac=%e2%82%ac", "/p?a=b;c", "/p?q=a+b%0A"} {
		f.Add(s, "v")
		f.Add(s, "\xff")
	}
	f.Fuzz(func(t *testing.T, target, header string) {
		u, err := url.ParseRequestURI(target)
		if err != nil {
			return
		}
		r := httptest.NewRequest("GET", "/", nil)
		r.URL = u
		r.Header["X-Fuzz"] = []string{header}
		if err := CheckRequest(r); err != nil {
			if !errors.Is(err, store.ErrInvalid) {
				t.Fatalf("CheckRequest(%q) = %v", target, err)
			}
			return
		}
		if !utf8.ValidString(u.Path) || strings.ContainsFunc(u.Path, unicode.IsControl) ||
			!utf8.ValidString(header) || strings.ContainsFunc(header, func(r rune) bool { return r != '\t' && unicode.IsControl(r) }) {
			t.Fatalf("CheckRequest accepted path %q header %q", u.Path, header)
		}
		q, err := url.ParseQuery(u.RawQuery)
		if err != nil {
			return // semicolons: url.ParseQuery refuses them; the proxy forwards them
		}
		for k, vs := range q {
			if !utf8.ValidString(k) || strings.ContainsFunc(k, unicode.IsControl) {
				t.Fatalf("CheckRequest accepted query key %q", k)
			}
			for _, v := range vs {
				if !utf8.ValidString(v) || strings.ContainsRune(v, 0) {
					t.Fatalf("CheckRequest accepted query value %q", v)
				}
			}
		}
	})
}

// BenchmarkCheckRequest measures the edge's cost on a request shaped like
// @nangohq/node's proxy call (goal: well under a microsecond, no
// allocation).
func BenchmarkCheckRequest(b *testing.B) {
	r := httptest.NewRequest("GET", "/proxy/repos/octo/hello/issues?state=open&per_page=100", nil)
	for k, v := range map[string]string{"Authorization": "Bearer sk_0123456789abcdef0123456789abcdef", "Connection-Id": "user-42",
		"Provider-Config-Key": "github", "Base-Url-Override": "", "Nango-Activity-Log-Id": "", "Accept": "application/json",
		"User-Agent": "axios/1.7.7", "Accept-Encoding": "gzip, compress, deflate, br"} {
		r.Header.Set(k, v)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := CheckRequest(r); err != nil {
			b.Fatal(err)
		}
	}
}
