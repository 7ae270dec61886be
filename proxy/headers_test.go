package proxy

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/embedauth/connect/store"
)

func TestParseHeaders(t *testing.T) {
	t.Parallel()
	h := http.Header{}
	h.Set("Connection-Id", " c1 ")
	h.Set("Provider-Config-Key", "gh")
	h.Set("Base-Url-Override", "https://api.example.com/v1")
	h.Set("Retries", "3")
	h.Set("Retry-On", "429,503")
	h.Set("Decompress", "TRUE")
	h.Set("Forward-Headers-On-Redirect", "false")
	h.Set("Nango-Activity-Log-Id", "")
	h.Set("Nango-Is-Sync", "true")
	key, id, opts, err := ParseHeaders(h, 10)
	if err != nil {
		t.Fatal(err)
	}
	want := Options{BaseURLOverride: "https://api.example.com/v1", Retries: 3, RetryOn: []int{429, 503}, Decompress: true}
	if key != "gh" || id != "c1" || opts.BaseURLOverride != want.BaseURLOverride || opts.Retries != 3 ||
		!slices.Equal(opts.RetryOn, want.RetryOn) || !opts.Decompress || opts.ForwardHeadersOnRedirect {
		t.Errorf("= %q %q %+v", key, id, opts)
	}
}

func TestParseHeadersListsEveryProblem(t *testing.T) {
	t.Parallel()
	h := http.Header{}
	h.Set("Retries", "x")
	h["Retry-On"] = []string{""}
	h.Set("Decompress", "1")
	_, _, _, err := ParseHeaders(h, 10)
	var se *store.Error
	if !errAs(err, &se) || se.Code != CodeInvalidHeaders {
		t.Fatalf("err = %v", err)
	}
	var paths []string
	for _, f := range se.Errors {
		paths = append(paths, f.Path[0])
	}
	want := []string{"connection-id", "provider-config-key", "retries", "retry-on", "decompress"}
	if !slices.Equal(paths, want) {
		t.Errorf("paths = %v, want %v", paths, want)
	}
}

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"0", 0, true},
		{" 7 ", 7 * time.Second, true},
		{"-1", 0, false},
		{"1.5", 0, false},
		{"", 0, false},
		{"soon", 0, false},
		{"99999999999999", 86400 * time.Second, true},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second, true},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0, true},
	} {
		got, ok := ParseRetryAfter(tc.in, now)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ParseRetryAfter(%q) = %v %v, want %v %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestParseResetAt(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"1777636830", 30 * time.Second, true},    // Unix seconds
		{"1777636830000", 30 * time.Second, true}, // Unix milliseconds
		{"1777636700", 0, true},                   // past
		{"20", 20 * time.Second, true},            // a small number is a delay
		{now.Add(time.Minute).Format(time.RFC3339), time.Minute, true},
		{now.Add(time.Minute).Format(http.TimeFormat), time.Minute, true},
		{"-5", 0, false},
		{"later", 0, false},
	} {
		got, ok := ParseResetAt(tc.in, now)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ParseResetAt(%q) = %v %v, want %v %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestMatchCodes(t *testing.T) {
	t.Parallel()
	pats := []string{"429", "5xx", "400-402"}
	for code, want := range map[int]bool{429: true, 500: true, 599: true, 400: true, 401: true, 402: true, 403: false, 404: false} {
		if got := matchCodes(pats, code); got != want {
			t.Errorf("matchCodes(%d) = %v", code, got)
		}
	}
}

func TestJoinEndpoint(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ base, endpoint, want string }{
		{"https://api.example.com", "/repos/a%2Fb?x=1", "https://api.example.com/repos/a%2Fb?x=1"},
		{"https://api.example.com/v2/", "/items", "https://api.example.com/v2/items"},
		{"https://api.example.com/v2?key=1", "items?x=2", "https://api.example.com/v2/items?key=1&x=2"},
		{"https://api.example.com/v2", "", "https://api.example.com/v2"},
		{"https://api.example.com", "//evil.example/x", "https://api.example.com/evil.example/x"},
		{"https://api.example.com", "/a b/ü", "https://api.example.com/a%20b/%C3%BC"},
	} {
		b, err := parseBaseURL(tc.base)
		if err != nil {
			t.Fatal(err)
		}
		u, err := joinEndpoint(b, tc.endpoint)
		if err != nil {
			t.Fatalf("%s + %s: %v", tc.base, tc.endpoint, err)
		}
		if u.String() != tc.want {
			t.Errorf("%s + %s = %s, want %s", tc.base, tc.endpoint, u, tc.want)
		}
	}
	b, _ := parseBaseURL("https://api.example.com")
	if _, err := joinEndpoint(b, "/bad%zz"); err == nil {
		t.Error("a malformed escape was accepted")
	}
}

func FuzzParseHeaders(f *testing.F) {
	for _, seed := range [][]string{
		{"3", "429,503", "true", "false", "https://api.example.com"},
		{"", "", "", "", ""},
		{"-1", "429, 503", "yes", "1", "ftp://x"},
		{"99999999999999999999", "0", "TRUE", "False", "http://[::1]:80/a?b#c"},
		{"1", "1000,20", "true", "true", "https://user:pw@host"},
	} {
		f.Add(seed[0], seed[1], seed[2], seed[3], seed[4], "Thu, 01 Jan 1970 00:00:00 GMT")
	}
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, retries, retryOn, decompress, forward, base, retryAfter string) {
		h := http.Header{}
		h.Set("Connection-Id", "c")
		h.Set("Provider-Config-Key", "k")
		h["Retries"] = []string{retries}
		h["Retry-On"] = []string{retryOn}
		h["Decompress"] = []string{decompress}
		h["Forward-Headers-On-Redirect"] = []string{forward}
		h["Base-Url-Override"] = []string{base}
		_, _, opts, err := ParseHeaders(h, 10)
		if err != nil {
			var se *store.Error
			if !errAs(err, &se) || se.Code != CodeInvalidHeaders || len(se.Errors) == 0 {
				t.Fatalf("error %v is not an invalid_headers error with fields", err)
			}
		} else {
			if opts.Retries < 0 || opts.Retries > 10 {
				t.Fatalf("Retries = %d", opts.Retries)
			}
			for _, c := range opts.RetryOn {
				if c < 100 || c > 599 {
					t.Fatalf("Retry-On code %d", c)
				}
			}
			if opts.BaseURLOverride != "" {
				if u, err := parseBaseURL(opts.BaseURLOverride); err != nil || (u.Scheme != "http" && u.Scheme != "https") {
					t.Fatalf("accepted base URL %q", opts.BaseURLOverride)
				}
			}
		}
		for _, parse := range []func(string, time.Time) (time.Duration, bool){ParseRetryAfter, ParseResetAt} {
			if d, ok := parse(retryAfter, now); d < 0 || d > 86400*time.Second || (!ok && d != 0) {
				t.Fatalf("wait %v %v for %q", d, ok, retryAfter)
			}
		}
		if strings.ContainsRune(retryOn, 0) && err == nil && len(opts.RetryOn) > 0 {
			t.Fatalf("Retry-On with a NUL accepted")
		}
	})
}
