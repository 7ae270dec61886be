package connect_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"hash"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/egress"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/proxy"
	"github.com/embedauth/connect/store"
)

// upstream is a fake provider API that records every request it gets.
// handle, when set, answers instead of the default 200 {"ok":true}.
type upstream struct {
	t   *testing.T
	srv *httptest.Server

	mu     sync.Mutex
	got    []seen
	handle func(w http.ResponseWriter, r *http.Request, n int) // n counts requests from 1
}

// seen is one request as the upstream received it.
type seen struct {
	method  string
	path    string // escaped, as on the wire
	query   string // raw
	header  http.Header
	body    string
	hostURL string
}

func newUpstream(t *testing.T) *upstream {
	u := &upstream{t: t}
	u.srv = httptest.NewServer(http.HandlerFunc(u.serve))
	t.Cleanup(u.srv.Close)
	return u
}

func (u *upstream) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	u.mu.Lock()
	u.got = append(u.got, seen{method: r.Method, path: r.URL.EscapedPath(), query: r.URL.RawQuery,
		header: r.Header.Clone(), body: string(body), hostURL: "http://" + r.Host})
	n := len(u.got)
	h := u.handle
	u.mu.Unlock()
	if h != nil {
		h(w, r, n)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Upstream", "yes")
	fmt.Fprint(w, `{"ok":true}`)
}

func (u *upstream) setHandle(h func(w http.ResponseWriter, r *http.Request, n int)) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.handle = h
}

func (u *upstream) requests() []seen {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]seen(nil), u.got...)
}

// last returns the last request, failing when there was none.
func (u *upstream) last() seen {
	u.t.Helper()
	r := u.requests()
	if len(r) == 0 {
		u.t.Fatal("the upstream got no request")
	}
	return r[len(r)-1]
}

// proxyBundle is a Service with loopback allowed, fake providers whose
// APIs are the upstream, and one connection per auth mode. The proxy's
// waits between retries go to waits instead of a timer.
type proxyBundle struct {
	*refreshBundle
	up    *upstream
	waits *retryWaits
}

// retryWaits stands in for the proxy's Sleep (Config.Proxy.Sleep): it
// records each wait between two attempts and moves the test's clock by it,
// without sleeping. then, when set, runs before it returns, with the number
// of waits so far.
type retryWaits struct {
	clock *refreshClock
	mu    sync.Mutex
	waits []time.Duration
	then  func(n int)
}

func (w *retryWaits) Sleep(ctx context.Context, d time.Duration) error {
	w.mu.Lock()
	w.waits = append(w.waits, d)
	n, then := len(w.waits), w.then
	w.mu.Unlock()
	w.clock.advance(d)
	if then != nil {
		then(n)
	}
	return ctx.Err()
}

// take returns the waits recorded since the last take, and forgets then.
func (w *retryWaits) take() []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.waits
	w.waits, w.then = nil, nil
	return out
}

func (w *retryWaits) onWait(then func(n int)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.then = then
}

// proxyCatalog adds fake providers on the upstream: px-oauth (OAuth 2, base
// URL templated on the tenant), px-header (API key in a header), px-query
// (API key in the query), px-basic, px-oauth1 (HMAC-SHA1), px-cc (client
// credentials on the token server), px-app, px-retry (rate-limit headers)
// and px-nobase (no base URL).
func proxyCatalog(t *testing.T, ts *tokenServer, up *upstream) *integrations.Catalog {
	t.Helper()
	base := refreshCatalog(t, ts)
	apiKey := map[string]integrations.FieldSpec{"apiKey": {Type: "string", Title: "API key"}}
	region := map[string]integrations.FieldSpec{"region": {Type: "string", Title: "Region", Optional: true}}
	tenant := map[string]integrations.FieldSpec{"tenant": {Type: "string", Title: "Tenant"}}
	u := up.srv.URL
	cat, err := base.With(
		&integrations.Provider{Name: "px-oauth", DisplayName: "PX OAuth", AuthMode: integrations.AuthModeOAuth2,
			AuthorizationURL: ts.srv.URL + "/authorize", TokenURL: ts.srv.URL + "/token", ConnectionConfig: tenant,
			Proxy: &integrations.Proxy{BaseURL: u + "/t/${connectionConfig.tenant}"}},
		&integrations.Provider{Name: "px-header", DisplayName: "PX Header", AuthMode: integrations.AuthModeAPIKey, Credentials: apiKey,
			ConnectionConfig: region,
			Proxy:            &integrations.Proxy{BaseURL: u, Headers: map[string]string{"X-Api-Key": "${apiKey}", "X-Missing": "${connectionConfig.region}"}}},
		&integrations.Provider{Name: "px-query", DisplayName: "PX Query", AuthMode: integrations.AuthModeAPIKey, Credentials: apiKey,
			Proxy: &integrations.Proxy{BaseURL: u + "/v2", Query: map[string]string{"api_key": "${apiKey}"}}},
		&integrations.Provider{Name: "px-basic", DisplayName: "PX Basic", AuthMode: integrations.AuthModeBasic,
			Proxy: &integrations.Proxy{BaseURL: u}},
		&integrations.Provider{Name: "px-oauth1", DisplayName: "PX OAuth1", AuthMode: integrations.AuthModeOAuth1,
			RequestURL: u + "/oauth/request_token", AuthorizationURL: u + "/oauth/authorize", TokenURL: u + "/oauth/access_token",
			Proxy: &integrations.Proxy{BaseURL: u}},
		&integrations.Provider{Name: "px-cc", DisplayName: "PX CC", AuthMode: integrations.AuthModeOAuth2CC,
			TokenURL: ts.srv.URL + "/cc/token", Proxy: &integrations.Proxy{BaseURL: u}},
		&integrations.Provider{Name: "px-retry", DisplayName: "PX Retry", AuthMode: integrations.AuthModeAPIKey, Credentials: apiKey,
			Proxy: &integrations.Proxy{BaseURL: u, Headers: map[string]string{"Authorization": "Token ${apiKey}"},
				Retry: &integrations.Retry{At: []string{"X-Ratelimit-Reset"}, Remaining: "X-Ratelimit-Remaining"}}},
		&integrations.Provider{Name: "px-app", DisplayName: "PX App", AuthMode: integrations.AuthModeApp,
			AuthorizationURL: u + "/install", TokenURL: u + "/app/token", Proxy: &integrations.Proxy{BaseURL: u}},
		&integrations.Provider{Name: "px-tba", DisplayName: "PX TBA", AuthMode: integrations.AuthModeTBA,
			ConnectionConfig: map[string]integrations.FieldSpec{"accountId": {Type: "string", Title: "Account"}},
			Proxy:            &integrations.Proxy{BaseURL: u}},
		&integrations.Provider{Name: "px-nobase", DisplayName: "PX No Base", AuthMode: integrations.AuthModeAPIKey, Credentials: apiKey},
		&integrations.Provider{Name: "px-rsa", DisplayName: "PX OAuth1 RSA", AuthMode: integrations.AuthModeOAuth1, SignatureMethod: "RSA-SHA1",
			RequestURL: u + "/oauth/request_token", AuthorizationURL: u + "/oauth/authorize", TokenURL: u + "/oauth/access_token",
			Proxy: &integrations.Proxy{BaseURL: u}},
	)
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

// Connections of proxySetup: integration key and connection id.
const (
	pxOAuth  = "pxo"
	pxHeader = "pxh"
	pxQuery  = "pxq"
	pxBasic  = "pxb"
	pxOAuth1 = "px1"
	pxCC     = "pxcc"
	pxRetry  = "pxr"
	pxNoBase = "pxn"
	pxApp    = "pxa"
	pxTBA    = "pxt"
	pxConn   = "conn-1"
)

func proxySetup(t *testing.T, b *backend, mutate ...func(*connect.Config)) *proxyBundle {
	t.Helper()
	up := newUpstream(t)
	rb := &refreshBundle{ts: newTokenServer(t), clock: newRefreshClock(), events: &eventLog{}}
	pb := &proxyBundle{refreshBundle: rb, up: up, waits: &retryWaits{clock: rb.clock}}
	cat := proxyCatalog(t, rb.ts, up)
	rb.bundle = setup(t, b, append([]func(*connect.Config){func(cfg *connect.Config) {
		cfg.Now = rb.clock.Now
		cfg.Providers = cat
		cfg.Notifier = rb.events
		cfg.Proxy.RetryWaitMin = time.Millisecond
		cfg.Proxy.RetryWaitMax = 5 * time.Millisecond
		cfg.Proxy.Sleep = pb.waits.Sleep
		rb.cfg = *cfg
	}}, mutate...)...)
	for _, in := range []string{
		`{"provider":"px-oauth","unique_key":"pxo","credentials":{"type":"OAUTH2","client_id":"pxo-client","client_secret":"pxo-secret"}}`,
		`{"provider":"px-header","unique_key":"pxh"}`,
		`{"provider":"px-query","unique_key":"pxq"}`,
		`{"provider":"px-basic","unique_key":"pxb"}`,
		`{"provider":"px-oauth1","unique_key":"px1","credentials":{"type":"OAUTH1","client_id":"consumer-key","client_secret":"consumer-secret"}}`,
		`{"provider":"px-cc","unique_key":"pxcc"}`,
		`{"provider":"px-retry","unique_key":"pxr"}`,
		`{"provider":"px-nobase","unique_key":"pxn"}`,
		`{"provider":"px-app","unique_key":"pxa"}`,
		`{"provider":"px-tba","unique_key":"pxt"}`,
		`{"provider":"px-rsa","unique_key":"pxrsa","credentials":{"type":"OAUTH1","client_id":"rsa-consumer","client_secret":"unused","private_key":` + pxRSAPEM() + `}}`,
	} {
		pb.mustDo(t, 200, req{method: "POST", path: "/integrations", body: in})
	}
	pb.importOAuth(t, pxOAuth, pxConn, "rt-0", 2*time.Hour, "")
	for _, in := range []string{
		`{"provider_config_key":"pxh","connection_id":"conn-1","api_key":"key-header-123"}`,
		`{"provider_config_key":"pxq","connection_id":"conn-1","api_key":"key query&="}`,
		`{"provider_config_key":"pxb","connection_id":"conn-1","username":"ann","password":"pa:ss"}`,
		`{"provider_config_key":"px1","connection_id":"conn-1","oauth_token":"tok-1","oauth_token_secret":"tok-secret"}`,
		`{"provider_config_key":"pxrsa","connection_id":"conn-1","oauth_token":"rsa-tok","oauth_token_secret":"rsa-tok-secret"}`,
		`{"provider_config_key":"pxcc","connection_id":"conn-1","credentials":{"type":"OAUTH2_CC","token":"cc-token","client_id":"cc-id","client_secret":"cc-secret","expires_at":"2027-01-01T00:00:00Z"}}`,
		`{"provider_config_key":"pxr","connection_id":"conn-1","api_key":"retry-key"}`,
		`{"provider_config_key":"pxn","connection_id":"conn-1","api_key":"nobase-key"}`,
		`{"provider_config_key":"pxa","connection_id":"conn-1","access_token":"app-token","no_expiration":true}`,
		`{"provider_config_key":"pxt","connection_id":"conn-1","connection_config":{"accountId":"acme-1"},
			"credentials":{"type":"TBA","token_id":"tid","token_secret":"tsec","config_override":{"client_id":"ck","client_secret":"cs"}}}`,
	} {
		pb.mustDo(t, 201, req{method: "POST", path: "/connections", body: in})
	}
	return pb
}

// call makes a proxy request with raw headers and body, and returns the
// response with its body read.
func (pb *proxyBundle) call(t *testing.T, method, path string, header map[string]string, body string) (*http.Response, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	r, err := http.NewRequest(method, pb.srv.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Authorization", "Bearer "+pb.key)
	for k, v := range header {
		r.Header.Set(k, v)
	}
	resp, err := rawClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// rawClient neither decompresses nor follows redirects.
var rawClient = &http.Client{
	Transport:     &http.Transport{DisableCompression: true},
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

func route(key string) map[string]string {
	return map[string]string{"Connection-Id": pxConn, "Provider-Config-Key": key}
}

func with(h map[string]string, kv ...string) map[string]string {
	out := map[string]string{}
	for k, v := range h {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

// errorCode decodes the standard error body.
func errorCode(t *testing.T, body string) string {
	t.Helper()
	r := &response{raw: []byte(body)}
	if err := jsonUnmarshal([]byte(body), &r.body); err != nil {
		t.Fatalf("error body is not JSON: %q", body)
	}
	return r.errCode()
}

func TestProxyInjectsCredentialsPerAuthMode(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		pb := proxySetup(t, b)
		basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("ann:pa:ss"))
		for _, tc := range []struct {
			key       string
			wantPath  string
			wantQuery string
			check     func(t *testing.T, s seen)
		}{
			{pxOAuth, "/t/acme/repos/a%2Fb/issues", "state=open&q=a+b", func(t *testing.T, s seen) {
				if got := s.header.Get("Authorization"); got != "Bearer at-imported" {
					t.Errorf("Authorization = %q", got)
				}
			}},
			{pxHeader, "/repos/a%2Fb/issues", "state=open&q=a+b", func(t *testing.T, s seen) {
				if got := s.header.Get("X-Api-Key"); got != "key-header-123" {
					t.Errorf("X-Api-Key = %q", got)
				}
				if _, ok := s.header["X-Missing"]; ok {
					t.Error("a header whose template cannot be filled was sent")
				}
				if got := s.header.Get("Authorization"); got != "" {
					t.Errorf("Authorization = %q, want none", got)
				}
			}},
			{pxQuery, "/v2/repos/a%2Fb/issues", "state=open&q=a+b&api_key=key+query%26%3D", func(t *testing.T, s seen) {}},
			{pxBasic, "/repos/a%2Fb/issues", "state=open&q=a+b", func(t *testing.T, s seen) {
				if got := s.header.Get("Authorization"); got != basic {
					t.Errorf("Authorization = %q, want %q", got, basic)
				}
			}},
			{pxOAuth1, "/repos/a%2Fb/issues", "state=open&q=a+b", func(t *testing.T, s seen) {
				checkOAuth1(t, s, oauth1Want{method: "HMAC-SHA1", consumer: "consumer-key", token: "tok-1",
					consumerSecret: "consumer-secret", tokenSecret: "tok-secret"},
					"GET", pb.up.srv.URL+"/repos/a%2Fb/issues", url.Values{"state": {"open"}, "q": {"a b"}})
			}},
			{pxTBA, "/repos/a%2Fb/issues", "state=open&q=a+b", func(t *testing.T, s seen) {
				checkOAuth1(t, s, oauth1Want{method: "HMAC-SHA256", consumer: "ck", token: "tid", consumerSecret: "cs",
					tokenSecret: "tsec", realm: "ACME_1"},
					"GET", pb.up.srv.URL+"/repos/a%2Fb/issues", url.Values{"state": {"open"}, "q": {"a b"}})
			}},
			{pxApp, "/repos/a%2Fb/issues", "state=open&q=a+b", func(t *testing.T, s seen) {
				if got := s.header.Get("Authorization"); got != "Bearer app-token" {
					t.Errorf("Authorization = %q", got)
				}
			}},
			{pxCC, "/repos/a%2Fb/issues", "state=open&q=a+b", func(t *testing.T, s seen) {
				if got := s.header.Get("Authorization"); got != "Bearer cc-token" {
					t.Errorf("Authorization = %q", got)
				}
			}},
			{pxRetry, "/repos/a%2Fb/issues", "state=open&q=a+b", func(t *testing.T, s seen) {
				if got := s.header.Get("Authorization"); got != "Token retry-key" {
					t.Errorf("Authorization = %q", got)
				}
			}},
		} {
			t.Run(tc.key, func(t *testing.T) {
				h := with(route(tc.key), "Nango-Proxy-X-Custom", "v1", "nango-proxy-accept", "application/vnd.x+json",
					"X-Not-Forwarded", "no", "Cookie", "session=1", "Base-Url-Override", "", "Nango-Activity-Log-Id", "")
				resp, body := pb.call(t, "GET", "/proxy/repos/a%2Fb/issues?state=open&q=a+b", h, "")
				if resp.StatusCode != 200 || body != `{"ok":true}` || resp.Header.Get("X-Upstream") != "yes" {
					t.Fatalf("proxy = %d %q %v", resp.StatusCode, body, resp.Header)
				}
				s := pb.up.last()
				if s.path != tc.wantPath || s.query != tc.wantQuery {
					t.Errorf("upstream got %s?%s, want %s?%s", s.path, s.query, tc.wantPath, tc.wantQuery)
				}
				if got := s.header.Get("X-Custom"); got != "v1" {
					t.Errorf("X-Custom = %q, want the Nango-Proxy- header without its prefix", got)
				}
				if got := s.header.Get("Accept"); got != "application/vnd.x+json" {
					t.Errorf("Accept = %q", got)
				}
				for _, k := range []string{"X-Not-Forwarded", "Cookie", "Connection-Id", "Provider-Config-Key", "Nango-Proxy-X-Custom", "Base-Url-Override"} {
					if _, ok := s.header[k]; ok {
						t.Errorf("header %s was forwarded", k)
					}
				}
				for k, vs := range s.header {
					for _, v := range vs {
						if strings.Contains(v, pb.key) {
							t.Errorf("the API key reached the upstream in %s", k)
						}
					}
				}
				tc.check(t, s)
			})
		}
	})
}

// oauth1Want describes the expected OAuth 1.0a signature.
type oauth1Want struct {
	method, consumer, token, consumerSecret, tokenSecret, realm string
}

// checkOAuth1 verifies the OAuth 1.0a Authorization header of a request
// and recomputes its signature independently of the proxy's signer.
func checkOAuth1(t *testing.T, s seen, want oauth1Want, method, baseURL string, query url.Values) {
	t.Helper()
	auth := s.header.Get("Authorization")
	if !strings.HasPrefix(auth, "OAuth ") {
		t.Fatalf("Authorization = %q, want an OAuth 1 header", auth)
	}
	params := map[string]string{}
	for _, part := range strings.Split(strings.TrimPrefix(auth, "OAuth "), ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		uv, _ := url.QueryUnescape(strings.Trim(v, `"`))
		params[k] = uv
	}
	if params["oauth_consumer_key"] != want.consumer || params["oauth_token"] != want.token ||
		params["oauth_signature_method"] != want.method || params["realm"] != want.realm {
		t.Fatalf("OAuth parameters = %v, want %+v", params, want)
	}
	all := url.Values{}
	for k, v := range params {
		if k != "oauth_signature" && k != "realm" {
			all.Set(k, v)
		}
	}
	for k, vs := range query {
		for _, v := range vs {
			all.Add(k, v)
		}
	}
	h := sha1.New
	if want.method == "HMAC-SHA256" {
		h = sha256.New
	}
	if got, exp := params["oauth_signature"], oauth1Signature(h, method, baseURL, all, want.consumerSecret, want.tokenSecret); got != exp {
		t.Errorf("oauth_signature = %q, want %q", got, exp)
	}
}

func TestProxyEveryMethodPassesPathQueryAndBody(t *testing.T) {
	t.Parallel()
	pb := proxySetup(t, sqliteBackend(t))
	for _, m := range proxy.Methods() {
		t.Run(m, func(t *testing.T) {
			body := `{"method":"` + m + `","ü":"x y"}`
			h := with(route(pxHeader), "Content-Type", "application/vnd.api+json", "Nango-Proxy-Content-Type", "application/vnd.api+json")
			resp, _ := pb.call(t, m, "/proxy/items/7?expand=a,b", h, body)
			if resp.StatusCode != 200 {
				t.Fatalf("%s = %d", m, resp.StatusCode)
			}
			s := pb.up.last()
			if s.method != m || s.path != "/items/7" || s.query != "expand=a,b" || s.body != body {
				t.Errorf("upstream got %s %s?%s %q", s.method, s.path, s.query, s.body)
			}
			if got := s.header.Get("Content-Type"); got != "application/vnd.api+json" {
				t.Errorf("Content-Type = %q", got)
			}
			if got := s.header.Get("Content-Length"); got != strconv.Itoa(len(body)) {
				t.Errorf("Content-Length = %q, want %d", got, len(body))
			}
		})
	}
	t.Run("other methods", func(t *testing.T) {
		resp, body := pb.call(t, "OPTIONS", "/proxy/items", route(pxHeader), "")
		if resp.StatusCode != 405 || errorCode(t, body) != "method_not_allowed" {
			t.Errorf("OPTIONS = %d %s", resp.StatusCode, body)
		}
	})
	t.Run("binary body", func(t *testing.T) {
		bin := string([]byte{0, 1, 2, 255, 254, '\r', '\n'})
		resp, _ := pb.call(t, "PUT", "/proxy/blob", with(route(pxHeader), "Content-Type", "application/octet-stream"), bin)
		if resp.StatusCode != 200 || pb.up.last().body != bin {
			t.Errorf("binary body: %d %q", resp.StatusCode, pb.up.last().body)
		}
	})
}

func TestProxyRefusesBadRequests(t *testing.T) {
	t.Parallel()
	pb := proxySetup(t, sqliteBackend(t))
	for _, tc := range []struct {
		name   string
		header map[string]string
		status int
		code   string
		field  string
	}{
		{"no connection id", map[string]string{"Provider-Config-Key": pxHeader}, 400, "invalid_headers", "connection-id"},
		{"no integration", map[string]string{"Connection-Id": pxConn}, 400, "invalid_headers", "provider-config-key"},
		{"retries not a number", with(route(pxHeader), "Retries", "three"), 400, "invalid_headers", "retries"},
		{"negative retries", with(route(pxHeader), "Retries", "-1"), 400, "invalid_headers", "retries"},
		{"too many retries", with(route(pxHeader), "Retries", "11"), 400, "invalid_headers", "retries"},
		{"empty retry-on", with(route(pxHeader), "Retry-On", ""), 400, "invalid_headers", "retry-on"},
		{"retry-on with spaces", with(route(pxHeader), "Retry-On", "429, x"), 400, "invalid_headers", "retry-on"},
		{"retry-on out of range", with(route(pxHeader), "Retry-On", "99"), 400, "invalid_headers", "retry-on"},
		{"decompress", with(route(pxHeader), "Decompress", "yes"), 400, "invalid_headers", "decompress"},
		{"forward headers", with(route(pxHeader), "Forward-Headers-On-Redirect", "1"), 400, "invalid_headers", "forward-headers-on-redirect"},
		{"is sync", with(route(pxHeader), "Nango-Is-Sync", "maybe"), 400, "invalid_headers", "nango-is-sync"},
		{"base url not http", with(route(pxHeader), "Base-Url-Override", "ftp://example.com"), 400, "invalid_headers", "base-url-override"},
		{"base url relative", with(route(pxHeader), "Base-Url-Override", "/api"), 400, "invalid_headers", "base-url-override"},
		{"unknown integration", map[string]string{"Connection-Id": pxConn, "Provider-Config-Key": "nope"}, 404, "unknown_provider_config", ""},
		{"unknown connection", map[string]string{"Connection-Id": "nope", "Provider-Config-Key": pxHeader}, 404, "not_found", ""},
		{"no base url", route(pxNoBase), 400, "missing_base_url", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := pb.call(t, "GET", "/proxy/x", tc.header, "")
			if resp.StatusCode != tc.status || errorCode(t, body) != tc.code {
				t.Fatalf("= %d %s, want %d %s", resp.StatusCode, body, tc.status, tc.code)
			}
			if tc.field != "" && !strings.Contains(body, `"path":["`+tc.field+`"]`) {
				t.Errorf("body %s does not name %s", body, tc.field)
			}
			if strings.Contains(body, "key-header-123") {
				t.Error("a credential leaked into the error body")
			}
		})
	}
	t.Run("no API key", func(t *testing.T) {
		r := pb.do(t, req{method: "GET", path: "/proxy/x", key: "-", header: route(pxHeader)})
		if r.status != 401 || r.errCode() != "missing_auth_header" {
			t.Errorf("= %d %s", r.status, r.raw)
		}
	})
	t.Run("key without the proxy scope", func(t *testing.T) {
		key, _, err := pb.svc.Environments().CreateAPIKey(context.Background(), pb.env.ID,
			environments.NewAPIKey{Name: "read", Scopes: []string{environments.ScopeConnectionsRead}})
		if err != nil {
			t.Fatal(err)
		}
		r := pb.do(t, req{method: "GET", path: "/proxy/x", key: key, header: route(pxHeader)})
		if r.status != 403 || r.errCode() != "forbidden" {
			t.Errorf("= %d %s", r.status, r.raw)
		}
	})
	t.Run("empty base url override and activity log id", func(t *testing.T) {
		resp, _ := pb.call(t, "GET", "/proxy/x", with(route(pxHeader), "Base-Url-Override", "", "Nango-Activity-Log-Id", "", "Retries", "0"), "")
		if resp.StatusCode != 200 {
			t.Errorf("= %d", resp.StatusCode)
		}
	})
	t.Run("base url override", func(t *testing.T) {
		other := newUpstream(t)
		resp, _ := pb.call(t, "GET", "/proxy/x?y=1", with(route(pxNoBase), "Base-Url-Override", other.srv.URL+"/api/"), "")
		if resp.StatusCode != 200 {
			t.Fatalf("= %d", resp.StatusCode)
		}
		if s := other.last(); s.path != "/api/x" || s.query != "y=1" {
			t.Errorf("override upstream got %s?%s", s.path, s.query)
		}
	})
	t.Run("missing connection config", func(t *testing.T) {
		pb.mustDo(t, 201, req{method: "POST", path: "/connections", body: `{"provider_config_key":"pxo","connection_id":"no-tenant","access_token":"a","no_expiration":true}`})
		resp, body := pb.call(t, "GET", "/proxy/x", map[string]string{"Connection-Id": "no-tenant", "Provider-Config-Key": pxOAuth}, "")
		if resp.StatusCode != 400 || errorCode(t, body) != "missing_connection_config" {
			t.Errorf("= %d %s", resp.StatusCode, body)
		}
	})
}

func TestProxyRetries(t *testing.T) {
	t.Parallel()
	pb := proxySetup(t, sqliteBackend(t))
	failFirst := func(n int, status int, h map[string]string) func(w http.ResponseWriter, r *http.Request, i int) {
		var mu sync.Mutex
		count := 0
		return func(w http.ResponseWriter, r *http.Request, _ int) {
			mu.Lock()
			count++
			i := count
			mu.Unlock()
			if i <= n {
				for k, v := range h {
					w.Header().Set(k, v)
				}
				w.Header().Set("X-Attempt", strconv.Itoa(i))
				w.WriteHeader(status)
				fmt.Fprintf(w, "fail %d", i)
				return
			}
			fmt.Fprintf(w, "ok %d", i)
		}
	}
	run := func(t *testing.T, h map[string]string, body string) (*http.Response, string, []seen) {
		t.Helper()
		before := len(pb.up.requests())
		resp, got := pb.call(t, "POST", "/proxy/r", h, body)
		return resp, got, pb.up.requests()[before:]
	}
	waited := func(t *testing.T, want ...time.Duration) {
		t.Helper()
		if got := pb.waits.take(); !slices.Equal(got, want) {
			t.Errorf("waited %v between the attempts, want %v", got, want)
		}
	}
	t.Run("5xx retried until success, body replayed", func(t *testing.T) {
		pb.up.setHandle(failFirst(2, 503, nil))
		t.Cleanup(func() { pb.up.setHandle(nil) })
		pb.waits.take()
		resp, body, got := run(t, with(route(pxHeader), "Retries", "3"), `{"a":1}`)
		if resp.StatusCode != 200 || body != "ok 3" || len(got) != 3 {
			t.Fatalf("= %d %q after %d calls", resp.StatusCode, body, len(got))
		}
		for _, s := range got {
			if s.body != `{"a":1}` || s.header.Get("X-Api-Key") != "key-header-123" {
				t.Errorf("attempt got body %q key %q", s.body, s.header.Get("X-Api-Key"))
			}
		}
		waited(t, time.Millisecond, 2*time.Millisecond) // RetryWaitMin, doubled
	})
	t.Run("default is no retry", func(t *testing.T) {
		pb.up.setHandle(failFirst(5, 500, nil))
		t.Cleanup(func() { pb.up.setHandle(nil) })
		resp, body, got := run(t, route(pxHeader), "")
		if resp.StatusCode != 500 || body != "fail 1" || len(got) != 1 {
			t.Fatalf("= %d %q after %d calls", resp.StatusCode, body, len(got))
		}
	})
	t.Run("last response returned unchanged", func(t *testing.T) {
		pb.up.setHandle(failFirst(9, 502, map[string]string{"X-Reason": "down", "Content-Type": "text/plain"}))
		t.Cleanup(func() { pb.up.setHandle(nil) })
		resp, body, got := run(t, with(route(pxHeader), "Retries", "2"), "x")
		if resp.StatusCode != 502 || body != "fail 3" || len(got) != 3 || resp.Header.Get("X-Reason") != "down" ||
			resp.Header.Get("X-Attempt") != "3" || resp.Header.Get("Content-Type") != "text/plain" {
			t.Fatalf("= %d %q %v after %d calls", resp.StatusCode, body, resp.Header, len(got))
		}
	})
	t.Run("4xx not retried unless in Retry-On", func(t *testing.T) {
		pb.up.setHandle(failFirst(1, 404, nil))
		t.Cleanup(func() { pb.up.setHandle(nil) })
		resp, _, got := run(t, with(route(pxHeader), "Retries", "2"), "")
		if resp.StatusCode != 404 || len(got) != 1 {
			t.Fatalf("= %d after %d calls", resp.StatusCode, len(got))
		}
		pb.up.setHandle(failFirst(1, 404, nil))
		resp, _, got = run(t, with(route(pxHeader), "Retries", "2", "Retry-On", "409,404"), "")
		if resp.StatusCode != 200 || len(got) != 2 {
			t.Fatalf("with Retry-On: %d after %d calls", resp.StatusCode, len(got))
		}
	})
	t.Run("Retry-After seconds honoured", func(t *testing.T) {
		pb.up.setHandle(failFirst(1, 429, map[string]string{"Retry-After": "7"}))
		t.Cleanup(func() { pb.up.setHandle(nil) })
		pb.waits.take()
		resp, _, got := run(t, with(route(pxHeader), "Retries", "1"), "")
		if resp.StatusCode != 200 || len(got) != 2 {
			t.Fatalf("= %d after %d calls", resp.StatusCode, len(got))
		}
		waited(t, 7*time.Second)
	})
	t.Run("Retry-After date honoured", func(t *testing.T) {
		at := pb.clock.Now().Add(5 * time.Second).Format(http.TimeFormat)
		when, err := http.ParseTime(at)
		if err != nil {
			t.Fatal(err)
		}
		want := when.Sub(pb.clock.Now()) // the date has whole seconds
		pb.up.setHandle(failFirst(1, 503, map[string]string{"Retry-After": at}))
		t.Cleanup(func() { pb.up.setHandle(nil) })
		pb.waits.take()
		resp, _, got := run(t, with(route(pxHeader), "Retries", "1"), "")
		if resp.StatusCode != 200 || len(got) != 2 {
			t.Fatalf("= %d after %d calls", resp.StatusCode, len(got))
		}
		waited(t, want)
	})
	t.Run("provider rate-limit reset header honoured", func(t *testing.T) {
		reset := pb.clock.Now().Add(3 * time.Second).Unix()
		want := time.Unix(reset, 0).Sub(pb.clock.Now())
		pb.up.setHandle(failFirst(1, 403, map[string]string{"X-Ratelimit-Reset": strconv.FormatInt(reset, 10), "X-Ratelimit-Remaining": "0"}))
		t.Cleanup(func() { pb.up.setHandle(nil) })
		pb.waits.take()
		resp, _, got := run(t, with(route(pxRetry), "Retries", "1"), "")
		if resp.StatusCode != 200 || len(got) != 2 {
			t.Fatalf("= %d after %d calls (a 403 with remaining 0 is a rate limit)", resp.StatusCode, len(got))
		}
		waited(t, want)
	})
	t.Run("a wait too long is returned to the caller", func(t *testing.T) {
		pb.up.setHandle(failFirst(1, 429, map[string]string{"Retry-After": "3600"}))
		t.Cleanup(func() { pb.up.setHandle(nil) })
		pb.waits.take()
		resp, _, got := run(t, with(route(pxHeader), "Retries", "3"), "")
		if resp.StatusCode != 429 || len(got) != 1 || resp.Header.Get("Retry-After") != "3600" {
			t.Fatalf("= %d after %d calls", resp.StatusCode, len(got))
		}
		waited(t)
	})
	t.Run("connection reset retried", func(t *testing.T) {
		pb.up.setHandle(func(w http.ResponseWriter, r *http.Request, i int) {
			if i%2 == 1 { // every other request: drop the connection without an answer
				conn, _, err := w.(http.Hijacker).Hijack()
				if err == nil {
					if tc, ok := conn.(*net.TCPConn); ok {
						tc.SetLinger(0)
					}
					conn.Close()
				}
				return
			}
			fmt.Fprint(w, "ok")
		})
		t.Cleanup(func() { pb.up.setHandle(nil) })
		before := len(pb.up.requests())
		if n := before % 2; n == 1 {
			pb.call(t, "GET", "/proxy/align", route(pxHeader), "") // make the next request odd
			before++
		}
		resp, body, got := run(t, with(route(pxHeader), "Retries", "1"), "payload")
		if resp.StatusCode != 200 || body != "ok" || len(got) != 2 || got[1].body != "payload" {
			t.Fatalf("= %d %q after %d calls", resp.StatusCode, body, len(got))
		}
	})
}

// TestProxyRetriesTimeouts: an attempt whose response headers do not come
// within ResponseHeaderTimeout is cut and retried when retries were asked
// for; the last one is 504 upstream_timeout.
func TestProxyRetriesTimeouts(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	// hang never answers; the others answer at once.
	hang := func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}

	// An attempt that answers must never meet the timeout, whatever the
	// load: a second is plenty for a loopback answer.
	pb := proxySetup(t, sqliteBackend(t), func(cfg *connect.Config) { cfg.Proxy.ResponseHeaderTimeout = time.Second })
	pb.up.setHandle(func(w http.ResponseWriter, r *http.Request, i int) {
		if i == 1 {
			hang(w, r)
			return
		}
		fmt.Fprint(w, "in time")
	})
	resp, body := pb.call(t, "GET", "/proxy/first", with(route(pxHeader), "Retries", "1"), "")
	if resp.StatusCode != 200 || body != "in time" || len(pb.up.requests()) != 2 {
		t.Fatalf("a timed-out attempt retried: %d %q after %d calls", resp.StatusCode, body, len(pb.up.requests()))
	}

	// When no attempt answers, the timeout's length does not matter.
	pb = proxySetup(t, sqliteBackend(t), func(cfg *connect.Config) { cfg.Proxy.ResponseHeaderTimeout = 50 * time.Millisecond })
	pb.up.setHandle(func(w http.ResponseWriter, r *http.Request, _ int) { hang(w, r) })
	resp, body = pb.call(t, "GET", "/proxy/slow", route(pxHeader), "")
	if resp.StatusCode != 504 || errorCode(t, body) != proxy.CodeUpstreamTimeout || len(pb.up.requests()) != 1 {
		t.Errorf("timeout: %d %s after %d calls, want 504 after 1", resp.StatusCode, body, len(pb.up.requests()))
	}
	resp, body = pb.call(t, "GET", "/proxy/slow", with(route(pxHeader), "Retries", "2"), "")
	if resp.StatusCode != 504 || errorCode(t, body) != proxy.CodeUpstreamTimeout || len(pb.up.requests()) != 4 {
		t.Errorf("every attempt timed out: %d %s after %d calls, want 504 after 3 more", resp.StatusCode, body, len(pb.up.requests()))
	}
	if w := pb.waits.take(); len(w) != 2 {
		t.Errorf("%d waits between the attempts, want 2", len(w))
	}
}

// closingListener accepts connections on loopback and resets each at once,
// before any response; accepts counts them.
func closingListener(t *testing.T) (addr string, accepts *atomic.Int32) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	accepts = new(atomic.Int32)
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			accepts.Add(1)
			if tc, ok := conn.(*net.TCPConn); ok {
				tc.SetLinger(0) // close with a reset
			}
			conn.Close()
		}
	}()
	return ln.Addr().String(), accepts
}

// closedPort returns a loopback address where nothing listens: connecting
// to it is refused.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestProxyRetriesNetworkErrors: with Retries, a refused connection and one
// reset before the response are sent again, up to the retries asked for;
// the last failure is 502 upstream_error. Without Retries, with a body that
// cannot be replayed, and for an address the policy refuses, there is one
// attempt only.
func TestProxyRetriesNetworkErrors(t *testing.T) {
	t.Parallel()
	pb := proxySetup(t, sqliteBackend(t), func(cfg *connect.Config) { cfg.Proxy.MaxReplayBody = 16 })
	override := func(addr string, kv ...string) map[string]string {
		return with(route(pxQuery), append([]string{"Base-Url-Override", "http://" + addr}, kv...)...)
	}
	noSecret := func(t *testing.T, body string) {
		t.Helper()
		if strings.Contains(body, "key query") || strings.Contains(body, "key+query") {
			t.Errorf("the API key leaked: %s", body)
		}
	}

	t.Run("refused until the upstream is up", func(t *testing.T) {
		addr := closedPort(t)
		pb.waits.take()
		pb.waits.onWait(func(n int) {
			if n != 2 {
				return
			}
			// The upstream comes up during the second wait: the third
			// attempt reaches it.
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				t.Errorf("listening on %s again: %v", addr, err)
				return
			}
			srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				fmt.Fprint(w, "up at last")
			})}}
			srv.Start()
			t.Cleanup(srv.Close)
		})
		resp, body := pb.call(t, "GET", "/proxy/x", override(addr, "Retries", "4"), "")
		if resp.StatusCode != 200 || body != "up at last" {
			t.Fatalf("= %d %s", resp.StatusCode, body)
		}
		if w := pb.waits.take(); len(w) != 2 {
			t.Errorf("%d waits, want 2 (two refused attempts, then the one that got through)", len(w))
		}
	})
	t.Run("refused every time", func(t *testing.T) {
		addr := closedPort(t)
		pb.waits.take()
		resp, body := pb.call(t, "GET", "/proxy/x?api_key=zzz", override(addr, "Retries", "2"), "")
		if resp.StatusCode != 502 || errorCode(t, body) != proxy.CodeUpstreamError {
			t.Fatalf("= %d %s", resp.StatusCode, body)
		}
		if w := pb.waits.take(); len(w) != 2 {
			t.Errorf("%d waits, want 2 (three attempts)", len(w))
		}
		noSecret(t, body)
	})
	t.Run("reset before the response", func(t *testing.T) {
		addr, accepts := closingListener(t)
		pb.waits.take()
		resp, body := pb.call(t, "POST", "/proxy/x", override(addr, "Retries", "3"), "replayable")
		if resp.StatusCode != 502 || errorCode(t, body) != proxy.CodeUpstreamError {
			t.Fatalf("= %d %s", resp.StatusCode, body)
		}
		if n := accepts.Load(); n != 4 {
			t.Errorf("%d attempts reached the upstream, want 4", n)
		}
		if w := pb.waits.take(); len(w) != 3 {
			t.Errorf("%d waits, want 3", len(w))
		}
		noSecret(t, body)
	})
	t.Run("no retries asked", func(t *testing.T) {
		addr, accepts := closingListener(t)
		pb.waits.take()
		resp, body := pb.call(t, "GET", "/proxy/x", override(addr), "")
		if resp.StatusCode != 502 || accepts.Load() != 1 {
			t.Errorf("= %d %s after %d attempts, want 502 after 1", resp.StatusCode, body, accepts.Load())
		}
		if w := pb.waits.take(); len(w) != 0 {
			t.Errorf("waited %v", w)
		}
	})
	t.Run("a body that cannot be replayed is sent once", func(t *testing.T) {
		addr, accepts := closingListener(t)
		pb.waits.take()
		resp, body := pb.call(t, "POST", "/proxy/x", override(addr, "Retries", "3"), strings.Repeat("b", 64))
		if resp.StatusCode != 502 || accepts.Load() != 1 {
			t.Errorf("= %d %s after %d attempts, want 502 after 1", resp.StatusCode, body, accepts.Load())
		}
		if w := pb.waits.take(); len(w) != 0 {
			t.Errorf("waited %v", w)
		}
	})
	t.Run("from Go", func(t *testing.T) {
		addr, accepts := closingListener(t)
		pb.waits.take()
		_, err := pb.svc.Proxy(context.Background(), &proxy.Request{EnvironmentID: pb.env.ID, IntegrationKey: pxQuery,
			ConnectionID: pxConn, Endpoint: "/x", Options: proxy.Options{Retries: 2, BaseURLOverride: "http://" + addr}})
		if status, code := proxy.HTTPStatus(err); status != 502 || code != proxy.CodeUpstreamError || accepts.Load() != 3 {
			t.Errorf("= %d %s (%v) after %d attempts, want 502 after 3", status, code, err, accepts.Load())
		}
		pb.waits.take()
	})

	// An address the policy refuses is never retried: the dial-time check
	// (localhost resolves to loopback, refused here) answers the same with
	// and without Retries, without a wait.
	refusing := proxySetup(t, sqliteBackend(t), func(cfg *connect.Config) { cfg.Proxy.Policy = proxy.Policy{} })
	_, port, _ := net.SplitHostPort(refusing.up.srv.Listener.Addr().String())
	once, onceBody := refusing.call(t, "GET", "/proxy/x", with(route(pxHeader), "Base-Url-Override", "http://localhost:"+port), "")
	again, againBody := refusing.call(t, "GET", "/proxy/x", with(route(pxHeader), "Base-Url-Override", "http://localhost:"+port, "Retries", "3"), "")
	if once.StatusCode != http.StatusForbidden || again.StatusCode != once.StatusCode || errorCode(t, againBody) != errorCode(t, onceBody) {
		t.Errorf("refused address: %d %s without retries, %d %s with", once.StatusCode, onceBody, again.StatusCode, againBody)
	}
	if w := refusing.waits.take(); len(w) != 0 {
		t.Errorf("a refused address was retried: waited %v", w)
	}
	if n := len(refusing.up.requests()); n != 0 {
		t.Errorf("the refused upstream got %d requests", n)
	}
}

func TestProxyRetryOnlyReplayableBodies(t *testing.T) {
	t.Parallel()
	pb := proxySetup(t, sqliteBackend(t), func(cfg *connect.Config) { cfg.Proxy.MaxReplayBody = 16 })
	pb.up.setHandle(func(w http.ResponseWriter, r *http.Request, i int) {
		w.WriteHeader(503)
		fmt.Fprintf(w, "fail %d", i)
	})
	big := strings.Repeat("b", 64)
	resp, body := pb.call(t, "POST", "/proxy/big", with(route(pxHeader), "Retries", "3"), big)
	if resp.StatusCode != 503 || body != "fail 1" || len(pb.up.requests()) != 1 || pb.up.last().body != big {
		t.Fatalf("a body larger than MaxReplayBody: %d %q after %d calls", resp.StatusCode, body, len(pb.up.requests()))
	}
	resp, _ = pb.call(t, "POST", "/proxy/small", with(route(pxHeader), "Retries", "2"), "small")
	if resp.StatusCode != 503 || len(pb.up.requests()) != 4 {
		t.Fatalf("a small body: %d after %d calls, want 3 more", resp.StatusCode, len(pb.up.requests()))
	}
}

func TestProxyRefreshesOn401(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		pb := proxySetup(t, b)
		pb.up.setHandle(func(w http.ResponseWriter, r *http.Request, i int) {
			if r.Header.Get("Authorization") != "Bearer at-1" {
				w.WriteHeader(401)
				fmt.Fprint(w, `{"error":"expired"}`)
				return
			}
			fmt.Fprint(w, "fresh")
		})
		resp, body := pb.call(t, "POST", "/proxy/me", route(pxOAuth), `{"x":1}`)
		if resp.StatusCode != 200 || body != "fresh" {
			t.Fatalf("= %d %q", resp.StatusCode, body)
		}
		got := pb.up.requests()
		if len(got) != 2 || got[0].header.Get("Authorization") != "Bearer at-imported" || got[1].body != `{"x":1}` {
			t.Fatalf("upstream got %d requests: %+v", len(got), got)
		}
		if n := pb.ts.callCount(); n != 1 {
			t.Errorf("token endpoint called %d times, want 1", n)
		}
		// The refreshed token is stored: the next call uses it at once.
		resp, _ = pb.call(t, "GET", "/proxy/me", route(pxOAuth), "")
		if resp.StatusCode != 200 || len(pb.up.requests()) != 3 || pb.ts.callCount() != 1 {
			t.Errorf("second call: %d, %d upstream calls, %d refreshes", resp.StatusCode, len(pb.up.requests()), pb.ts.callCount())
		}

		// A 401 that a refresh cannot cure comes back as it is, once.
		pb.up.setHandle(func(w http.ResponseWriter, r *http.Request, i int) {
			w.Header().Set("Www-Authenticate", `Bearer error="invalid_token"`)
			w.WriteHeader(401)
			fmt.Fprint(w, "still no")
		})
		before := len(pb.up.requests())
		resp, body = pb.call(t, "GET", "/proxy/me", route(pxOAuth), "")
		if resp.StatusCode != 401 || body != "still no" || resp.Header.Get("Www-Authenticate") == "" || len(pb.up.requests()) != before+2 {
			t.Errorf("= %d %q after %d calls, want the 401 after one refresh", resp.StatusCode, body, len(pb.up.requests())-before)
		}
		// An API key connection is never refreshed: one call.
		before = len(pb.up.requests())
		resp, _ = pb.call(t, "GET", "/proxy/me", route(pxHeader), "")
		if resp.StatusCode != 401 || len(pb.up.requests()) != before+1 {
			t.Errorf("API key 401: %d after %d calls", resp.StatusCode, len(pb.up.requests())-before)
		}
	})
}

func TestProxyCacheDroppedOnChange(t *testing.T) {
	t.Parallel()
	pb := proxySetup(t, sqliteBackend(t), func(cfg *connect.Config) { cfg.ProxyCacheTTL = time.Hour })
	if resp, _ := pb.call(t, "GET", "/proxy/x", route(pxHeader), ""); resp.StatusCode != 200 {
		t.Fatalf("= %d", resp.StatusCode)
	}
	// Re-import with another key: the next call uses it.
	pb.mustDo(t, 200, req{method: "POST", path: "/connections", body: `{"provider_config_key":"pxh","connection_id":"conn-1","api_key":"key-rotated-456"}`})
	if resp, _ := pb.call(t, "GET", "/proxy/x", route(pxHeader), ""); resp.StatusCode != 200 || pb.up.last().header.Get("X-Api-Key") != "key-rotated-456" {
		t.Errorf("after re-import: %d with key %q", resp.StatusCode, pb.up.last().header.Get("X-Api-Key"))
	}
	pb.mustDo(t, 200, req{method: "DELETE", path: "/connections/conn-1?provider_config_key=pxh"})
	if resp, body := pb.call(t, "GET", "/proxy/x", route(pxHeader), ""); resp.StatusCode != 404 {
		t.Errorf("after delete: %d %s", resp.StatusCode, body)
	}
}

func TestProxyRefreshesTokenNearExpiry(t *testing.T) {
	t.Parallel()
	pb := proxySetup(t, sqliteBackend(t))
	pb.importOAuth(t, pxOAuth, "soon", "rt-soon", time.Minute, "")
	resp, _ := pb.call(t, "GET", "/proxy/me", map[string]string{"Connection-Id": "soon", "Provider-Config-Key": pxOAuth}, "")
	if resp.StatusCode != 200 {
		t.Fatalf("= %d", resp.StatusCode)
	}
	if got := pb.up.last().header.Get("Authorization"); got != "Bearer at-1" || pb.ts.callCount() != 1 {
		t.Errorf("upstream got %q after %d refreshes, want the refreshed token", got, pb.ts.callCount())
	}

	// A client-credentials connection without a token gets one first.
	pb.mustDo(t, 201, req{method: "POST", path: "/connections", body: `{"provider_config_key":"pxcc","connection_id":"cc-new",
		"credentials":{"type":"OAUTH2_CC","client_id":"cc-id","client_secret":"cc-secret"}}`})
	resp, _ = pb.call(t, "GET", "/proxy/me", map[string]string{"Connection-Id": "cc-new", "Provider-Config-Key": pxCC}, "")
	if resp.StatusCode != 200 {
		t.Fatalf("client credentials: %d", resp.StatusCode)
	}
	if got := pb.up.last().header.Get("Authorization"); got != "Bearer at-2" || pb.ts.callCount() != 2 ||
		pb.ts.last().form.Get("grant_type") != "client_credentials" {
		t.Errorf("upstream got %q after %d token calls (last grant %q)", got, pb.ts.callCount(), pb.ts.last().form.Get("grant_type"))
	}
}

func TestProxyRedirects(t *testing.T) {
	t.Parallel()
	pb := proxySetup(t, sqliteBackend(t))
	other := newUpstream(t)
	pb.up.setHandle(func(w http.ResponseWriter, r *http.Request, i int) {
		switch r.URL.Path {
		case "/away":
			http.Redirect(w, r, other.srv.URL+"/landed", http.StatusFound)
		case "/here":
			http.Redirect(w, r, "/landed", http.StatusTemporaryRedirect)
		default:
			fmt.Fprint(w, "landed")
		}
	})
	t.Run("other host gets no credentials", func(t *testing.T) {
		resp, body := pb.call(t, "GET", "/proxy/away", with(route(pxHeader), "Nango-Proxy-Authorization", "Bearer mine"), "")
		if resp.StatusCode != 200 || body != `{"ok":true}` {
			t.Fatalf("= %d %q", resp.StatusCode, body)
		}
		s := other.last()
		if s.header.Get("X-Api-Key") != "" || s.header.Get("Authorization") != "" {
			t.Errorf("the other host got credentials: %v", s.header)
		}
	})
	t.Run("Forward-Headers-On-Redirect", func(t *testing.T) {
		resp, _ := pb.call(t, "GET", "/proxy/away", with(route(pxHeader), "Forward-Headers-On-Redirect", "true", "Nango-Proxy-Authorization", "Bearer mine"), "")
		if resp.StatusCode != 200 {
			t.Fatalf("= %d", resp.StatusCode)
		}
		s := other.last()
		if s.header.Get("X-Api-Key") != "key-header-123" || s.header.Get("Authorization") != "Bearer mine" {
			t.Errorf("forwarded headers: %v", s.header)
		}
	})
	t.Run("same host keeps credentials and replays the body", func(t *testing.T) {
		resp, body := pb.call(t, "POST", "/proxy/here", route(pxHeader), "data")
		if resp.StatusCode != 200 || body != "landed" {
			t.Fatalf("= %d %q", resp.StatusCode, body)
		}
		s := pb.up.last()
		if s.path != "/landed" || s.method != "POST" || s.body != "data" || s.header.Get("X-Api-Key") != "key-header-123" {
			t.Errorf("after the 307: %s %s %q key %q", s.method, s.path, s.body, s.header.Get("X-Api-Key"))
		}
	})
}

func TestProxyRedirectLimit(t *testing.T) {
	t.Parallel()
	pb := proxySetup(t, sqliteBackend(t), func(cfg *connect.Config) { cfg.Proxy.MaxRedirects = -1 })
	pb.up.setHandle(func(w http.ResponseWriter, r *http.Request, i int) {
		http.Redirect(w, r, "/elsewhere", http.StatusFound)
	})
	resp, _ := pb.call(t, "GET", "/proxy/away", route(pxHeader), "")
	if resp.StatusCode != 302 || resp.Header.Get("Location") != "/elsewhere" || len(pb.up.requests()) != 1 {
		t.Errorf("with redirects off: %d %v after %d calls", resp.StatusCode, resp.Header, len(pb.up.requests()))
	}
}

func TestProxyDropsHopByHopHeaders(t *testing.T) {
	t.Parallel()
	pb := proxySetup(t, sqliteBackend(t))
	for _, status := range []int{200, 500} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			pb.up.setHandle(func(w http.ResponseWriter, r *http.Request, i int) {
				h := w.Header()
				h.Set("Connection", "X-Hop")
				h.Set("X-Hop", "1")
				h.Set("Keep-Alive", "timeout=5")
				h.Set("Proxy-Authenticate", "Basic")
				h.Set("Upgrade", "h2c")
				h.Set("X-End-To-End", "kept")
				h.Set("Set-Cookie", "a=b")
				w.WriteHeader(status)
				fmt.Fprint(w, "body")
			})
			h := with(route(pxHeader), "Nango-Proxy-Connection", "close", "Nango-Proxy-Transfer-Encoding", "chunked",
				"Nango-Proxy-Host", "evil.example", "Nango-Proxy-Keep-Alive", "1", "Te", "trailers", "Nango-Proxy-Upgrade", "x",
				"Nango-Proxy-Proxy-Authorization", "Basic c2VjcmV0OnZhbHVl", "nango-proxy-proxy-connection", "keep-alive",
				"Nango-Proxy-Proxy-Authenticate", "Basic", "Nango-Proxy-Te", "trailers", "Nango-Proxy-Trailer", "X-Sum",
				"Nango-Proxy-Content-Length", "99",
				// Hop-by-hop on the caller's own connection: not forwarded.
				"Connection", "Nango-Proxy-X-Hop-Only", "Nango-Proxy-X-Hop-Only", "1",
				// End to end, the caller's own credentials for the provider.
				"Nango-Proxy-Authorization", "Bearer mine", "Nango-Proxy-Cookie", "c=1", "Nango-Proxy-X-Custom", "v")
			resp, body := pb.call(t, "GET", "/proxy/hop", h, "")
			if resp.StatusCode != status || body != "body" || resp.Header.Get("X-End-To-End") != "kept" || resp.Header.Get("Set-Cookie") != "a=b" {
				t.Fatalf("= %d %q %v", resp.StatusCode, body, resp.Header)
			}
			for _, k := range []string{"X-Hop", "Keep-Alive", "Proxy-Authenticate", "Upgrade"} {
				if v := resp.Header.Get(k); v != "" {
					t.Errorf("response header %s: %q reached the caller", k, v)
				}
			}
			s := pb.up.last()
			for _, k := range []string{"Transfer-Encoding", "Keep-Alive", "Te", "Upgrade", "Proxy-Authorization", "Proxy-Connection",
				"Proxy-Authenticate", "Trailer", "Connection", "X-Hop-Only", "Nango-Proxy-X-Hop-Only"} {
				if v, ok := s.header[k]; ok {
					t.Errorf("request header %s: %q reached the upstream", k, v)
				}
			}
			for k, v := range map[string]string{"Authorization": "Bearer mine", "Cookie": "c=1", "X-Custom": "v"} {
				if got := s.header.Get(k); got != v {
					t.Errorf("request header %s = %q upstream, want %q", k, got, v)
				}
			}
			if s.hostURL != pb.up.srv.URL {
				t.Errorf("upstream Host = %s", s.hostURL)
			}
		})
	}
}

// TestProxyDoDropsHopByHopHeaders: a call from Go (Proxy.Do, which a
// function's Context.Proxy makes) drops the headers the route drops.
func TestProxyDoDropsHopByHopHeaders(t *testing.T) {
	t.Parallel()
	pb := proxySetup(t, sqliteBackend(t))
	resp, err := pb.svc.Proxy(t.Context(), &proxy.Request{EnvironmentID: pb.env.ID, IntegrationKey: pxHeader, ConnectionID: pxConn,
		Endpoint: "/hop", Header: http.Header{"Proxy-Authorization": {"Basic c2VjcmV0OnZhbHVl"}, "proxy-connection": {"keep-alive"},
			"Keep-Alive": {"1"}, "Upgrade": {"x"}, "Te": {"trailers"}, "Connection": {"X-Custom"}, "Host": {"evil.example"},
			"Authorization": {"Bearer mine"}, "X-Custom": {"v"}}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	s := pb.up.last()
	for _, k := range []string{"Proxy-Authorization", "Proxy-Connection", "Keep-Alive", "Upgrade", "Te", "Connection"} {
		if v, ok := s.header[k]; ok {
			t.Errorf("request header %s: %q reached the upstream", k, v)
		}
	}
	if s.header.Get("Authorization") != "Bearer mine" || s.header.Get("X-Custom") != "v" || s.hostURL != pb.up.srv.URL {
		t.Errorf("upstream got Authorization %q, X-Custom %q, Host %s", s.header.Get("Authorization"), s.header.Get("X-Custom"), s.hostURL)
	}
}

func TestProxyDecompress(t *testing.T) {
	t.Parallel()
	pb := proxySetup(t, sqliteBackend(t))
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(`{"big":"` + strings.Repeat("z", 1000) + `"}`))
	zw.Close()
	pb.up.setHandle(func(w http.ResponseWriter, r *http.Request, i int) {
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(gz.Len()))
		w.Write(gz.Bytes())
	})
	resp, body := pb.call(t, "GET", "/proxy/z", with(route(pxHeader), "Accept-Encoding", "gzip"), "")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Encoding") != "gzip" || body != gz.String() {
		t.Fatalf("compressed body not passed through: %d %v (%d bytes)", resp.StatusCode, resp.Header, len(body))
	}
	if got := pb.up.last().header.Get("Accept-Encoding"); got != "gzip" {
		t.Errorf("upstream Accept-Encoding = %q, want the caller's", got)
	}
	resp, body = pb.call(t, "GET", "/proxy/z", with(route(pxHeader), "Decompress", "true"), "")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Encoding") != "" || body != `{"big":"`+strings.Repeat("z", 1000)+`"}` {
		t.Fatalf("Decompress: %d %v %q", resp.StatusCode, resp.Header, body)
	}
}

func TestProxyStreamsResponses(t *testing.T) {
	t.Parallel()
	pb := proxySetup(t, sqliteBackend(t))
	release := make(chan struct{})
	pb.up.setHandle(func(w http.ResponseWriter, r *http.Request, i int) {
		fmt.Fprint(w, "first chunk\n")
		w.(http.Flusher).Flush()
		<-release
		fmt.Fprint(w, "second chunk\n")
	})
	r, _ := http.NewRequest("GET", pb.srv.URL+"/proxy/stream", nil)
	r.Header.Set("Authorization", "Bearer "+pb.key)
	for k, v := range route(pxHeader) {
		r.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		close(release)
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, len("first chunk\n"))
	if _, err := io.ReadFull(resp.Body, buf); err != nil || string(buf) != "first chunk\n" {
		close(release)
		t.Fatalf("first chunk: %q %v", buf, err)
	}
	close(release) // the first chunk arrived while the upstream was still answering
	rest, _ := io.ReadAll(resp.Body)
	if string(rest) != "second chunk\n" {
		t.Errorf("rest = %q", rest)
	}
}

func TestProxyRefusesPrivateAddresses(t *testing.T) {
	t.Parallel()
	up := newUpstream(t)
	_, port, _ := net.SplitHostPort(up.srv.Listener.Addr().String())
	for _, tc := range []struct {
		name   string
		policy proxy.Policy
		base   string
		status int
	}{
		{"loopback by default", proxy.Policy{}, up.srv.URL, 403},
		{"localhost resolved at dial time", proxy.Policy{}, "http://localhost:" + port, 403},
		{"ipv6 loopback", proxy.Policy{}, "http://[::1]:" + port, 403},
		{"mapped loopback", proxy.Policy{}, "http://[::ffff:127.0.0.1]:" + port, 403},
		{"private", proxy.Policy{AllowLoopback: true}, "http://10.1.2.3:" + port, 403},
		{"link-local", proxy.Policy{AllowLoopback: true}, "http://169.254.10.1", 403},
		{"metadata even with private networks", proxy.Policy{AllowPrivateNetworks: true}, "http://169.254.169.254", 403},
		{"unspecified", proxy.Policy{AllowPrivateNetworks: true}, "http://0.0.0.0:" + port, 403},
		{"loopback allowed", proxy.Policy{AllowLoopback: true}, up.srv.URL, 200},
		{"localhost allowed with private networks", proxy.Policy{AllowPrivateNetworks: true}, "http://localhost:" + port, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			bu := setupStrict(t, sqliteBackend(t), func(cfg *connect.Config) { cfg.Egress = tc.policy })
			bu.mustDo(t, 200, req{method: "POST", path: "/integrations", body: `{"provider":"openai","unique_key":"oa"}`})
			bu.mustDo(t, 201, req{method: "POST", path: "/connections", body: `{"provider_config_key":"oa","connection_id":"c","api_key":"sk-secret-value"}`})
			r := bu.do(t, req{method: "GET", path: "/proxy/v1/models", header: map[string]string{
				"Connection-Id": "c", "Provider-Config-Key": "oa", "Base-Url-Override": tc.base}})
			if r.status != tc.status {
				t.Fatalf("= %d %s, want %d", r.status, r.raw, tc.status)
			}
			if tc.status == 403 && r.errCode() != proxy.CodeAddressRefused {
				t.Errorf("code = %q", r.errCode())
			}
			if strings.Contains(string(r.raw), "sk-secret-value") {
				t.Error("the API key leaked into the error")
			}
		})
	}
}

func TestProxyBodyLimits(t *testing.T) {
	t.Parallel()
	pb := proxySetup(t, sqliteBackend(t), func(cfg *connect.Config) {
		cfg.Proxy.MaxRequestBody = 10
		cfg.Proxy.MaxResponseBody = 10
	})
	resp, body := pb.call(t, "POST", "/proxy/x", route(pxHeader), strings.Repeat("a", 11))
	if resp.StatusCode != 413 || errorCode(t, body) != "payload_too_large" || len(pb.up.requests()) != 0 {
		t.Errorf("request body too large: %d %s after %d calls", resp.StatusCode, body, len(pb.up.requests()))
	}
	pb.up.setHandle(func(w http.ResponseWriter, r *http.Request, i int) { fmt.Fprint(w, strings.Repeat("r", 11)) })
	resp, body = pb.call(t, "GET", "/proxy/x", route(pxHeader), "")
	if resp.StatusCode != 502 || errorCode(t, body) != "upstream_response_too_large" {
		t.Errorf("response too large: %d %s", resp.StatusCode, body)
	}
	pb.up.setHandle(func(w http.ResponseWriter, r *http.Request, i int) { fmt.Fprint(w, "0123456789") })
	resp, body = pb.call(t, "GET", "/proxy/x", route(pxHeader), "")
	if resp.StatusCode != 200 || body != "0123456789" {
		t.Errorf("response at the limit: %d %q", resp.StatusCode, body)
	}

	// A streamed response of unknown length is cut off at the limit.
	pb.up.setHandle(func(w http.ResponseWriter, r *http.Request, i int) {
		fmt.Fprint(w, "01234")
		w.(http.Flusher).Flush()
		fmt.Fprint(w, "56789abcdef")
	})
	r, _ := http.NewRequest("GET", pb.srv.URL+"/proxy/x", nil)
	r.Header.Set("Authorization", "Bearer "+pb.key)
	for k, v := range route(pxHeader) {
		r.Header.Set(k, v)
	}
	sresp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	got, rerr := io.ReadAll(sresp.Body)
	sresp.Body.Close()
	if rerr == nil || len(got) > 10 {
		t.Errorf("streamed response past the limit: %q, %v (want a cut-off body)", got, rerr)
	}

	// From Go, a body of unknown length past the limit is refused too.
	_, err = pb.svc.Proxy(context.Background(), &proxy.Request{EnvironmentID: pb.env.ID, IntegrationKey: pxHeader,
		ConnectionID: pxConn, Method: "POST", Body: io.MultiReader(strings.NewReader("0123456789"), strings.NewReader("x"))})
	if status, code := proxy.HTTPStatus(err); status != 413 || code != "payload_too_large" || !strings.Contains(err.Error(), "10 bytes") {
		t.Errorf("Go body too large: %d %s (%v)", status, code, err)
	}
}

func TestProxyUpstreamUnreachable(t *testing.T) {
	t.Parallel()
	pb := proxySetup(t, sqliteBackend(t))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	resp, body := pb.call(t, "GET", "/proxy/x?api_key=zzz", with(route(pxQuery), "Base-Url-Override", "http://"+addr), "")
	if resp.StatusCode != 502 || errorCode(t, body) != proxy.CodeUpstreamError {
		t.Fatalf("= %d %s", resp.StatusCode, body)
	}
	if strings.Contains(body, "key query") || strings.Contains(body, "key+query") {
		t.Errorf("the API key leaked: %s", body)
	}
}

func TestServiceProxyFromGo(t *testing.T) {
	t.Parallel()
	pb := proxySetup(t, sqliteBackend(t))
	ctx := context.Background()
	resp, err := pb.svc.Proxy(ctx, &proxy.Request{EnvironmentID: pb.env.ID, IntegrationKey: pxBasic, ConnectionID: pxConn,
		Method: "POST", Endpoint: "/items?a=1", Query: url.Values{"b": {"2"}}, Header: http.Header{"X-Mine": {"m"}},
		Body: strings.NewReader("go body")})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != `{"ok":true}` {
		t.Fatalf("= %d %q", resp.StatusCode, b)
	}
	s := pb.up.last()
	if s.path != "/items" || s.query != "a=1&b=2" || s.body != "go body" || s.header.Get("X-Mine") != "m" ||
		!strings.HasPrefix(s.header.Get("Authorization"), "Basic ") {
		t.Errorf("upstream got %s?%s %q %v", s.path, s.query, s.body, s.header)
	}
	_, err = pb.svc.Proxy(ctx, &proxy.Request{EnvironmentID: pb.env.ID, IntegrationKey: pxBasic, ConnectionID: "nope"})
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown connection: %v", err)
	}
	_, err = pb.svc.Proxy(ctx, &proxy.Request{EnvironmentID: pb.env.ID, IntegrationKey: pxBasic, ConnectionID: pxConn,
		Options: proxy.Options{BaseURLOverride: "http://169.254.169.254"}})
	if status, code := proxy.HTTPStatus(err); status != 403 || code != proxy.CodeAddressRefused {
		t.Errorf("metadata address: %d %s (%v)", status, code, err)
	}
}

func TestServiceProxyClient(t *testing.T) {
	t.Parallel()
	pb := proxySetup(t, sqliteBackend(t))
	other := newUpstream(t)
	pb.up.setHandle(func(w http.ResponseWriter, r *http.Request, i int) {
		if r.Header.Get("Authorization") != "Bearer at-1" {
			w.WriteHeader(401)
			return
		}
		fmt.Fprint(w, "sdk ok")
	})
	client := pb.svc.ProxyClient(pb.env.ID, pxOAuth, pxConn, proxy.Options{})
	// An SDK posts to the provider's API: the first answer is a 401, the
	// token is refreshed and the call made again with the body.
	resp, err := client.Post(pb.up.srv.URL+"/t/acme/things", "text/plain", strings.NewReader("sdk body"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != "sdk ok" || pb.up.last().body != "sdk body" || pb.ts.callCount() != 1 {
		t.Fatalf("= %d %q, upstream body %q, %d refreshes", resp.StatusCode, b, pb.up.last().body, pb.ts.callCount())
	}
	// Another host gets no credentials.
	resp, err = client.Get(other.srv.URL + "/upload")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := other.last().header.Get("Authorization"); got != "" {
		t.Errorf("another host got Authorization %q", got)
	}
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// oauth1Signature computes an OAuth 1.0a HMAC signature (RFC 5849
// section 3.4) independently of the proxy's signer.
func oauth1Signature(h func() hash.Hash, method, baseURL string, params url.Values, consumerSecret, tokenSecret string) string {
	pct := func(s string) string {
		return strings.ReplaceAll(strings.ReplaceAll(url.QueryEscape(s), "+", "%20"), "%7E", "~")
	}
	var pairs []string
	for k, vs := range params {
		for _, v := range vs {
			pairs = append(pairs, pct(k)+"="+pct(v))
		}
	}
	sort.Strings(pairs)
	base := method + "&" + pct(baseURL) + "&" + pct(strings.Join(pairs, "&"))
	mac := hmac.New(h, []byte(pct(consumerSecret)+"&"+pct(tokenSecret)))
	mac.Write([]byte(base))
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// pxRSAKey is the private key of the px-rsa integration.
var pxRSAKey = sync.OnceValue(func() *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	return k
})

// pxRSAPEM is pxRSAKey in PEM, as a JSON string.
func pxRSAPEM() string {
	b, _ := json.Marshal(string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(pxRSAKey())})))
	return string(b)
}

// TestProxyOAuth1RSA: a provider that signs with RSA-SHA1 gets requests
// signed with the integration's private key; the test checks the
// signature with the public key over its own base string.
func TestProxyOAuth1RSA(t *testing.T) {
	t.Parallel()
	pb := proxySetup(t, sqliteBackend(t))
	resp, body := pb.call(t, "GET", "/proxy/items?x=1%202", route("pxrsa"), "")
	if resp.StatusCode != 200 {
		t.Fatalf("proxy = %d %s", resp.StatusCode, body)
	}
	s := pb.up.last()
	params := map[string]string{}
	for _, part := range strings.Split(strings.TrimPrefix(s.header.Get("Authorization"), "OAuth "), ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		uv, _ := url.QueryUnescape(strings.Trim(v, `"`))
		params[k] = uv
	}
	if params["oauth_signature_method"] != "RSA-SHA1" || params["oauth_consumer_key"] != "rsa-consumer" || params["oauth_token"] != "rsa-tok" {
		t.Fatalf("OAuth parameters %v", params)
	}
	pct := func(s string) string {
		return strings.ReplaceAll(strings.ReplaceAll(url.QueryEscape(s), "+", "%20"), "%7E", "~")
	}
	pairs := []string{"x=" + pct("1 2")}
	for k, v := range params {
		if k != "oauth_signature" && k != "realm" {
			pairs = append(pairs, pct(k)+"="+pct(v))
		}
	}
	sort.Strings(pairs)
	base := "GET&" + pct(pb.up.srv.URL+"/items") + "&" + pct(strings.Join(pairs, "&"))
	sig, err := base64.StdEncoding.DecodeString(params["oauth_signature"])
	if err != nil {
		t.Fatal(err)
	}
	sum := sha1.Sum([]byte(base))
	if err := rsa.VerifyPKCS1v15(&pxRSAKey().PublicKey, crypto.SHA1, sum[:], sig); err != nil {
		t.Errorf("RSA-SHA1 signature does not verify: %v", err)
	}
}

// TestProxyFailuresNameNoAddress: the proxy's answers for a refused, an
// unreachable and a slow upstream say "address not allowed" or "could not
// reach the provider" and name no address, port or dial error. A refusal
// names the setting that allows private networks, unless the policy
// allows them already.
func TestProxyFailuresNameNoAddress(t *testing.T) {
	t.Parallel()
	closed := closedURL(t)
	_, closedPort, _ := net.SplitHostPort(strings.TrimPrefix(closed, "http://"))
	const remedy = "The network policy refused the upstream: address not allowed (loopback and private network addresses are allowed by connect.Config.Egress.AllowPrivateNetworks)."
	for _, tc := range []struct {
		name, base, code, phrase string
		status                   int
		policy                   egress.Policy
	}{
		{"refused", "http://169.254.169.254", proxy.CodeAddressRefused, "The network policy refused the upstream: address not allowed.", 403, egress.Policy{AllowPrivateNetworks: true}},
		{"refused loopback", closed, proxy.CodeAddressRefused, remedy, 403, egress.Policy{}},
		{"refused metadata", "http://169.254.169.254", proxy.CodeAddressRefused, remedy, 403, egress.Policy{AllowLoopback: true}},
		{"closed port", closed, proxy.CodeUpstreamError, "could not reach the provider", 502, egress.Policy{AllowLoopback: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			bu := setupStrict(t, sqliteBackend(t), func(cfg *connect.Config) { cfg.Egress = tc.policy })
			bu.mustDo(t, 200, req{method: "POST", path: "/integrations", body: `{"provider":"openai","unique_key":"oa"}`})
			bu.mustDo(t, 201, req{method: "POST", path: "/connections", body: `{"provider_config_key":"oa","connection_id":"c","api_key":"sk-secret-value"}`})
			r := bu.do(t, req{method: "GET", path: "/proxy/v1/models", header: map[string]string{
				"Connection-Id": "c", "Provider-Config-Key": "oa", "Base-Url-Override": tc.base}})
			if r.status != tc.status || r.errCode() != tc.code || !strings.Contains(string(r.raw), tc.phrase) {
				t.Fatalf("= %d %s, want %d %s saying %q", r.status, r.raw, tc.status, tc.code, tc.phrase)
			}
			if w := leaksNetworkDetail(string(r.raw), closedPort); w != "" {
				t.Errorf("the answer gives away %q: %s", w, r.raw)
			}
		})
	}
}
