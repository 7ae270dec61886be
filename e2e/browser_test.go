package e2e

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Values the fake providers accept, shared with e2e/browser/*.test.mjs through the environment.
const (
	fakeClientID      = "e2e-client"
	fakeClientSecret  = "e2e-client-secret"
	fakeOwnClientID   = "own-client"
	fakeOwnSecret     = "own-client-secret"
	fakeAPIKey        = "good-api-key-0123"
	fakeSubdomain     = "acme"
	webhookSigningKey = "e2e-webhook-signing-key-0123456789"
	webhookWait       = 30 * time.Second
)

// TestConnectUIBrowser drives the pre-built connect UI and @nangohq/frontend in headless
// Chromium against the reference server, with a fake OAuth 2 provider and a fake API-key
// check endpoint (see doc.go). The host's webhook receiver verifies every webhook's
// X-Svc-Hmac-Sha256 itself.
func TestConnectUIBrowser(t *testing.T) { browserTest(t, testConnectUIBrowser) }

func testConnectUIBrowser(t *testing.T, bs *browserSuite) {
	// The connect UI's own files: the authmodes-* ones belong to the
	// tests of the auth modes, which start their own fakes, and
	// console.test.mjs to TestConsole.
	var testFiles []string
	all, err := filepath.Glob(filepath.Join(bs.dir, "browser", "*.test.mjs"))
	for _, f := range all {
		if base := filepath.Base(f); !strings.HasPrefix(base, "authmodes-") && base != "console.test.mjs" {
			testFiles = append(testFiles, f)
		}
	}
	if err != nil || len(testFiles) == 0 {
		t.Fatalf("no e2e/browser/*.test.mjs files found (err=%v)", err)
	}
	shots := t.TempDir()
	if os.Getenv("CONNECT_UPDATE_SCREENSHOTS") == "1" && bs.store == storeSQLite { // one writer of docs/
		shots = filepath.Join(filepath.Dir(bs.dir), "docs")
	}

	provider := newFakeProvider(t)
	hooks := newWebhookReceiver(t, webhookSigningKey)

	providersFile := filepath.Join(t.TempDir(), "providers.yaml")
	if err := os.WriteFile(providersFile, []byte(fakeProvidersYAML(provider.srv.URL)), 0o600); err != nil {
		t.Fatal(err)
	}

	// The fake provider and webhook receiver listen on 127.0.0.1: provider
	// calls may reach private networks here (start allows them; webhooks
	// may on the reference server by default).
	rs := bs.newServer(t)
	srv := bs.start(t, rs,
		"CONNECT_PROVIDERS_FILE="+providersFile,
		"CONNECT_WEBHOOK_URLS="+hooks.srv.URL+"/hooks",
		"CONNECT_WEBHOOK_SIGNING_KEY="+webhookSigningKey,
		"CONNECT_UI_PRIMARY_COLOR_LIGHT=#6d28d9",
		"CONNECT_UI_PRIMARY_COLOR_DARK=#a78bfa",
	)

	api := rs.api
	api.mustCreateIntegration(t, map[string]any{"unique_key": "e2e-oauth", "provider": "e2e-oauth",
		"credentials": map[string]any{"type": "OAUTH2", "client_id": fakeClientID, "client_secret": fakeClientSecret, "scopes": "read"}})
	api.mustCreateIntegration(t, map[string]any{"unique_key": "e2e-apikey", "provider": "e2e-apikey"})
	api.mustCreateIntegration(t, map[string]any{"unique_key": "github", "provider": "github",
		"credentials": map[string]any{"type": "OAUTH2", "client_id": "unused", "client_secret": "unused"}})

	results := filepath.Join(t.TempDir(), "results.json")
	start := time.Now()
	// The test page of @nangohq/frontend, served from another origin than
	// the server, with the package's own ES modules from node_modules (no
	// CDN).
	bs.runFiles(t, rs, testFiles,
		"E2E_PAGE_URL="+bs.pageURL(t),
		"E2E_SCREENSHOT_DIR="+shots,
		"E2E_RESULTS="+results,
		"E2E_API_KEY_VALUE="+fakeAPIKey,
		"E2E_SUBDOMAIN="+fakeSubdomain,
		"E2E_OWN_CLIENT_ID="+fakeOwnClientID,
		"E2E_OWN_CLIENT_SECRET="+fakeOwnSecret,
	)
	t.Logf("browser tests took %s", time.Since(start).Round(time.Millisecond))

	// Every connection the browser made exists, and the host got its signed auth webhook.
	raw, err := os.ReadFile(results)
	if err != nil {
		t.Fatalf("the browser tests wrote no results: %v", err)
	}
	var made []struct {
		Integration  string `json:"integration"`
		ConnectionID string `json:"connectionId"`
		Via          string `json:"via"`
		Operation    string `json:"operation"`
		EndUserID    string `json:"endUserId"`
		AuthMode     string `json:"authMode"`
	}
	if err := json.Unmarshal(raw, &made); err != nil {
		t.Fatalf("results %s: %v", raw, err)
	}
	wantVia := map[string]bool{"connect_link/API_KEY": false, "connect_link/OAUTH2": false,
		"connect_link_own_app/OAUTH2": false, "connect_link_poll/OAUTH2": false, "connect_link_reconnect/API_KEY": false,
		"openConnectUI/API_KEY": false, "openConnectUI/OAUTH2": false, "frontend.auth/API_KEY": false, "frontend.auth/OAUTH2": false}
	hookDeadline := time.Now().Add(webhookWait)
	for _, m := range made {
		wantVia[m.Via+"/"+m.AuthMode] = true
		if m.ConnectionID == "" {
			t.Errorf("%s %s: no connection id", m.Via, m.Integration)
			continue
		}
		api.mustHaveConnection(t, m.Integration, m.ConnectionID)
		op := m.Operation
		if op == "" {
			op = "creation"
		}
		hook := hooks.waitAuth(t, m.ConnectionID, op, time.Until(hookDeadline))
		if hook == nil {
			continue
		}
		if hook["success"] != true || hook["providerConfigKey"] != m.Integration || hook["authMode"] != m.AuthMode {
			t.Errorf("%s %s: auth webhook %v", m.Via, m.Integration, hook)
		}
		if m.EndUserID != "" {
			tags, _ := hook["tags"].(map[string]any)
			if tags["end_user_id"] != m.EndUserID {
				t.Errorf("%s %s: webhook tags %v, want end_user_id %s", m.Via, m.Integration, hook["tags"], m.EndUserID)
			}
		}
	}
	for k, seen := range wantVia {
		if !seen {
			t.Errorf("no connection was made through %s", k)
		}
	}
	if n := hooks.badSignatures(); n > 0 {
		t.Errorf("%d webhooks had a wrong X-Svc-Hmac-Sha256", n)
	}
	if n := provider.tokenExchanges(); n < 4 {
		t.Errorf("the fake provider exchanged %d codes, want at least 4 (connect UI, own OAuth app, status poll, frontend auth)", n)
	}
	for _, name := range []string{"connect-ui-light.png", "connect-ui-dark.png", "connect-ui-form-light.png", "connect-ui-form-dark.png"} {
		b, err := os.ReadFile(filepath.Join(shots, name))
		if err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
			t.Errorf("screenshot %s missing or not a PNG (err=%v)", name, err)
		}
	}
	srv.stop(t)
}

// findChromium returns CHROMIUM_PATH, or Debian's chromium, or "".
func findChromium() string {
	if p := os.Getenv("CHROMIUM_PATH"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// fakeProvidersYAML is the CONNECT_PROVIDERS_FILE of the test: an OAuth 2 provider and an
// API-key provider whose credential check calls the fake provider with the key and the
// end user's subdomain.
func fakeProvidersYAML(base string) string {
	return fmt.Sprintf(`providers:
  - name: e2e-oauth
    display_name: Acme CRM
    auth_mode: OAUTH2
    authorization_url: %[1]s/authorize
    token_url: %[1]s/token
    default_scopes: [read]
    docs_connect: https://docs.example.com/acme-crm
    proxy:
      base_url: %[1]s
  - name: e2e-apikey
    display_name: Acme Analytics
    auth_mode: API_KEY
    docs_connect: https://docs.example.com/acme-analytics
    proxy:
      base_url: %[1]s
      headers:
        X-Api-Key: "${apiKey}"
        X-Subdomain: "${connectionConfig.subdomain}"
      verification:
        method: GET
        endpoints: [/api/me]
    connection_config:
      subdomain:
        type: string
        title: Workspace subdomain
        example: mycompany
        pattern: "^[a-z0-9-]+$"
        prefix: "https://"
        suffix: .acme.test
        doc_section: subdomain
    credentials:
      apiKey:
        type: string
        title: API key
        description: Create one under Settings, API keys.
        secret: true
`, base)
}

// fakeProvider is an OAuth 2 authorization server whose authorize endpoint redirects straight
// back with a code, and an API whose /api/me accepts one API key for one subdomain.
type fakeProvider struct {
	srv       *httptest.Server
	mu        sync.Mutex
	codes     map[string]fakeCode
	exchanges int
}

type fakeCode struct {
	clientID, redirectURI, challenge string
}

func newFakeProvider(t *testing.T) *fakeProvider {
	p := &fakeProvider{codes: map[string]fakeCode{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		cid, redirect, state := q.Get("client_id"), q.Get("redirect_uri"), q.Get("state")
		if (cid != fakeClientID && cid != fakeOwnClientID) || redirect == "" || state == "" || q.Get("response_type") != "code" {
			http.Error(w, "bad authorization request: "+r.URL.RawQuery, http.StatusBadRequest)
			return
		}
		if q.Get("code_challenge") != "" && q.Get("code_challenge_method") != "S256" {
			http.Error(w, "only S256", http.StatusBadRequest)
			return
		}
		if q.Get("e2e_deny") == "1" { // the end user refuses
			u, err := url.Parse(redirect)
			if err != nil {
				http.Error(w, "bad redirect_uri", http.StatusBadRequest)
				return
			}
			rq := u.Query()
			rq.Set("error", "access_denied")
			rq.Set("error_description", "The user denied access")
			rq.Set("state", state)
			u.RawQuery = rq.Encode()
			http.Redirect(w, r, u.String(), http.StatusFound)
			return
		}
		code := "code-" + randomHex(t, 8)
		p.mu.Lock()
		p.codes[code] = fakeCode{clientID: cid, redirectURI: redirect, challenge: q.Get("code_challenge")}
		p.mu.Unlock()
		u, err := url.Parse(redirect)
		if err != nil {
			http.Error(w, "bad redirect_uri", http.StatusBadRequest)
			return
		}
		rq := u.Query()
		rq.Set("code", code)
		rq.Set("state", state)
		u.RawQuery = rq.Encode()
		http.Redirect(w, r, u.String(), http.StatusFound)
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		cid, secret, ok := r.BasicAuth()
		if !ok {
			cid, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
		}
		tokenErr := func(desc string) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": "invalid_grant", "error_description": desc})
		}
		if !(cid == fakeClientID && secret == fakeClientSecret) && !(cid == fakeOwnClientID && secret == fakeOwnSecret) {
			tokenErr("bad client credentials")
			return
		}
		if r.PostForm.Get("grant_type") != "authorization_code" {
			tokenErr("unsupported grant_type")
			return
		}
		p.mu.Lock()
		c, found := p.codes[r.PostForm.Get("code")]
		delete(p.codes, r.PostForm.Get("code"))
		p.mu.Unlock()
		switch {
		case !found:
			tokenErr("unknown or reused code")
			return
		case c.clientID != cid || c.redirectURI != r.PostForm.Get("redirect_uri"):
			tokenErr("code issued to another client or redirect_uri")
			return
		case c.challenge != "":
			sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
			if base64.RawURLEncoding.EncodeToString(sum[:]) != c.challenge {
				tokenErr("PKCE verifier does not match")
				return
			}
		}
		p.mu.Lock()
		p.exchanges++
		p.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": "at-" + randomHex(t, 8), "refresh_token": "rt-" + randomHex(t, 8),
			"token_type": "bearer", "expires_in": 3600, "scope": "read"})
	})
	mux.HandleFunc("GET /api/me", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Api-Key") != fakeAPIKey || r.Header.Get("X-Subdomain") != fakeSubdomain {
			http.Error(w, `{"error":"invalid api key"}`, http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"ok":true}`)
	})
	p.srv = httptest.NewServer(mux)
	t.Cleanup(p.srv.Close)
	return p
}

func (p *fakeProvider) tokenExchanges() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exchanges
}

// webhookReceiver is the host application: it verifies each webhook's signature with the
// signing key, independently of the library, and keeps the auth webhooks by connection id.
type webhookReceiver struct {
	srv  *httptest.Server
	key  string
	mu   sync.Mutex
	auth map[string][]map[string]any // by connection id, in arrival order
	bad  int
}

func newWebhookReceiver(t *testing.T, key string) *webhookReceiver {
	h := &webhookReceiver{key: key, auth: map[string][]map[string]any{}}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mac := hmac.New(sha256.New, []byte(h.key))
		mac.Write(body)
		want := hex.EncodeToString(mac.Sum(nil))
		got := r.Header.Get("X-Svc-Hmac-Sha256")
		h.mu.Lock()
		defer h.mu.Unlock()
		if !hmac.Equal([]byte(got), []byte(want)) {
			h.bad++
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil {
			http.Error(w, "not JSON", http.StatusBadRequest)
			return
		}
		if m["type"] == "auth" {
			if id, _ := m["connectionId"].(string); id != "" {
				h.auth[id] = append(h.auth[id], m)
			}
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

// waitAuth returns the auth webhook of a connection with the operation, waiting up to d; nil
// (and an error) when none came.
func (h *webhookReceiver) waitAuth(t *testing.T, connectionID, operation string, d time.Duration) map[string]any {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		h.mu.Lock()
		for _, m := range h.auth[connectionID] {
			if m["operation"] == operation {
				h.mu.Unlock()
				return m
			}
		}
		h.mu.Unlock()
		if time.Now().After(deadline) {
			t.Errorf("no signed auth webhook with operation %s for connection %s within %s", operation, connectionID, d)
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (h *webhookReceiver) badSignatures() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.bad
}

// apiClient calls the server's API with the API key.
type apiClient struct {
	base, key string
}

func (a *apiClient) do(t *testing.T, method, path string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, a.base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+a.key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

func (a *apiClient) mustCreateIntegration(t *testing.T, body map[string]any) {
	t.Helper()
	if status, out := a.do(t, http.MethodPost, "/integrations", body); status != http.StatusOK && status != http.StatusCreated {
		t.Fatalf("POST /integrations %v: %d %s", body["unique_key"], status, out)
	}
}

func (a *apiClient) mustHaveConnection(t *testing.T, integration, connectionID string) {
	t.Helper()
	path := "/connections/" + url.PathEscape(connectionID) + "?provider_config_key=" + url.QueryEscape(integration)
	status, out := a.do(t, http.MethodGet, path, nil)
	if status != http.StatusOK {
		t.Errorf("GET %s: %d %s", path, status, out)
		return
	}
	if !strings.Contains(string(out), connectionID) {
		t.Errorf("GET %s: %s does not name the connection", path, out)
	}
}
