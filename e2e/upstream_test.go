package e2e

import (
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// fakeUpstream is the provider API the proxy tests of e2e/node/proxy.test.mjs call through the
// server. It answers every request with what it received (an echo), so the Node test can check
// what the proxy sent, and it records every request so that the Go test can check afterwards
// that the server's API key never reached it. Special paths:
//
//	.../status/NNN                 answers NNN with the echo
//	.../flaky/ID?fail=N&code=C     answers C for the first N requests of the path and query
//	.../gzip                       answers the echo gzip-compressed (Content-Encoding: gzip)
//	.../redirect-other             302 to the second upstream's /landed
//	.../redirect-same              307 to /landed on this host
//	/token                         an OAuth 2 token endpoint: access token "fresh-token"
//	/oauth/...                     401 unless the bearer is "fresh-token"
type fakeUpstream struct {
	srv   *httptest.Server
	other string // base URL of the redirect target

	mu       sync.Mutex
	requests []echo
	attempts map[string]int
}

// echo is the answer body: the request as received.
type echo struct {
	Method  string            `json:"method"`
	Path    string            `json:"path"`
	Query   string            `json:"query"`
	Headers map[string]string `json:"headers"`
	Body    string            `json:"body"`
	Attempt int               `json:"attempt,omitempty"`
}

func startUpstream(t *testing.T, other string) *fakeUpstream {
	u := &fakeUpstream{other: other, attempts: map[string]int{}}
	u.srv = httptest.NewServer(http.HandlerFunc(u.serve))
	t.Cleanup(u.srv.Close)
	return u
}

func (u *fakeUpstream) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	e := echo{Method: r.Method, Path: r.URL.EscapedPath(), Query: r.URL.RawQuery, Headers: map[string]string{}, Body: string(body)}
	for k, v := range r.Header {
		e.Headers[strings.ToLower(k)] = strings.Join(v, ", ")
	}
	u.mu.Lock()
	u.requests = append(u.requests, e)
	key := r.URL.Path + "?" + r.URL.RawQuery
	u.attempts[key]++
	e.Attempt = u.attempts[key]
	u.mu.Unlock()

	w.Header().Set("X-Upstream-Echo", "1")
	status := http.StatusOK
	p := r.URL.Path
	switch {
	case p == "/token":
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"access_token":"fresh-token","refresh_token":"rt-next","expires_in":3600,"token_type":"bearer"}`)
		return
	case strings.HasPrefix(p, "/oauth/") && r.Header.Get("Authorization") != "Bearer fresh-token":
		status = http.StatusUnauthorized
	case strings.Contains(p, "/status/"):
		status, _ = strconv.Atoi(p[strings.LastIndex(p, "/")+1:])
		if status < 200 || status > 599 {
			status = http.StatusBadRequest
		}
	case strings.Contains(p, "/flaky/"):
		fail, _ := strconv.Atoi(r.URL.Query().Get("fail"))
		code, _ := strconv.Atoi(r.URL.Query().Get("code"))
		if e.Attempt <= fail && code >= 400 && code <= 599 {
			status = code
		}
	case strings.HasSuffix(p, "/redirect-other"):
		http.Redirect(w, r, u.other+"/landed", http.StatusFound)
		return
	case strings.HasSuffix(p, "/redirect-same"):
		http.Redirect(w, r, "/landed", http.StatusTemporaryRedirect)
		return
	case strings.HasSuffix(p, "/gzip"):
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		json.NewEncoder(zw).Encode(e)
		zw.Close()
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(e)
}

// leaked returns the requests that carried secret in a header, the query or the body.
func (u *fakeUpstream) leaked(secret string) []echo {
	u.mu.Lock()
	defer u.mu.Unlock()
	var out []echo
	for _, e := range u.requests {
		hit := strings.Contains(e.Query, secret) || strings.Contains(e.Body, secret)
		for _, v := range e.Headers {
			hit = hit || strings.Contains(v, secret)
		}
		if hit {
			out = append(out, e)
		}
	}
	return out
}

func (u *fakeUpstream) count() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.requests)
}

// writeProviders writes the providers file of the proxy tests: e2e-echo (API key in a header,
// base URL templated on connection config) and e2e-oauth (OAuth 2 whose token endpoint is the
// upstream's /token).
func writeProviders(t *testing.T, upstreamURL string) string {
	t.Helper()
	yaml := `providers:
  - name: e2e-echo
    display_name: E2E Echo
    auth_mode: API_KEY
    proxy:
      base_url: "UPSTREAM/base/${connectionConfig.tenant}"
      headers:
        X-Api-Key: "${apiKey}"
    connection_config:
      tenant:
        type: string
        title: Tenant
    credentials:
      apiKey:
        type: string
        title: API key
  - name: e2e-oauth
    display_name: E2E OAuth
    auth_mode: OAUTH2
    authorization_url: UPSTREAM/authorize
    token_url: UPSTREAM/token
    proxy:
      base_url: UPSTREAM/oauth
`
	path := filepath.Join(t.TempDir(), "providers.yaml")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(yaml, "UPSTREAM", upstreamURL)), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
