package e2e

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// TestPopupAuthModesBrowser connects an MCP_OAUTH2 (dynamic registration),
// an MCP_OAUTH2_GENERIC and a CUSTOM (GitHub App OAuth) integration in
// headless Chromium through @nangohq/frontend's nango.auth(key) popup and
// WebSocket, then those three and an INSTALL_PLUGIN one (a Crisp plugin)
// through the pre-built connect UI opened from a connect_link, against the
// reference server with real providers.yaml entries pointed at a fake MCP
// server, authorization server, GitHub App and Crisp marketplace; then
// proxies a request through each connection (the fake checks the Bearer
// token, or the plugin's Basic credentials) and forces a refresh of the
// OAuth ones (the fake checks the registered client, the resource and the
// app JWT).
func TestPopupAuthModesBrowser(t *testing.T) { browserTest(t, testPopupAuthModesBrowser) }

func testPopupAuthModesBrowser(t *testing.T, bs *browserSuite) {
	fake := newPopupFake(t)
	providersFile := filepath.Join(t.TempDir(), "providers.yaml")
	if err := os.WriteFile(providersFile, []byte(strings.ReplaceAll(popupProvidersYAML, "FAKE", fake.srv.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	rs := bs.newServer(t)
	fake.callback = rs.host + "/oauth/callback"
	srv := bs.start(t, rs, "CONNECT_PROVIDERS_FILE="+providersFile)
	api := rs.api
	pemKey := string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(fake.key)}))
	api.mustCreateIntegration(t, map[string]any{"unique_key": "airtable-mcp", "provider": "airtable-mcp"})
	api.mustCreateIntegration(t, map[string]any{"unique_key": "mcp-generic", "provider": "mcp-generic"})
	api.mustCreateIntegration(t, map[string]any{"unique_key": "github-app-oauth", "provider": "github-app-oauth",
		"credentials": map[string]any{"type": "CUSTOM", "client_id": "gh-client", "client_secret": "gh-secret",
			"app_id": "4242", "app_link": fake.srv.URL + "/apps/fake-gh", "private_key": pemKey}})
	api.mustCreateIntegration(t, map[string]any{"unique_key": "crisp-plugin-install", "provider": "crisp-plugin-install",
		"custom": map[string]any{"app_link": fake.srv.URL + "/crisp/install", "username": crispPluginID, "password": crispPluginKey}})

	results := filepath.Join(t.TempDir(), "results.json")
	bs.run(t, rs, "authmodes-popup.test.mjs", "E2E_PAGE_URL="+bs.pageURL(t), "E2E_POPUP_RESULTS="+results, "E2E_MCP_SERVER_URL="+fake.srv.URL+"/mcp")
	fake.check(t)
	raw, err := os.ReadFile(results)
	if err != nil {
		t.Fatalf("the browser test wrote no results: %v", err)
	}
	// integration -> connection id; "ui/" + integration for the connect UI's.
	var made map[string]string
	if err := json.Unmarshal(raw, &made); err != nil {
		t.Fatalf("results %s: %v", raw, err)
	}
	for _, result := range []string{"airtable-mcp", "mcp-generic", "github-app-oauth",
		"ui/airtable-mcp", "ui/mcp-generic", "ui/github-app-oauth", "ui/crisp-plugin-install"} {
		id, key := made[result], strings.TrimPrefix(result, "ui/")
		if id == "" {
			t.Errorf("no %s connection was made", result)
			continue
		}
		if key != result && id == made[key] {
			t.Errorf("%s: the connect UI reported the connection %s of nango.auth", result, id)
		}
		conn := func(q string) map[string]any {
			status, out := api.do(t, http.MethodGet, "/connections/"+url.PathEscape(id)+"?provider_config_key="+key+q, nil)
			var m map[string]any
			if status != 200 || json.Unmarshal(out, &m) != nil {
				t.Fatalf("GET %s %s: %d %s", key, q, status, out)
			}
			return m
		}
		token := func(m map[string]any) string {
			cr, _ := m["credentials"].(map[string]any)
			if app, ok := cr["app"].(map[string]any); ok {
				cr = app
			}
			s, _ := cr["access_token"].(string)
			return s
		}
		if key == "crisp-plugin-install" {
			// The plugin's requests carry the integration's plugin
			// credentials; the install sent back the website.
			m := conn("")
			cr, _ := m["credentials"].(map[string]any)
			cfg, _ := m["connection_config"].(map[string]any)
			if cr["type"] != "BASIC" || cr["username"] != crispPluginID || cfg["website_id"] != crispWebsiteID {
				t.Errorf("%s: connection %v", result, m)
			}
			calls := fake.basicCalls()
			req, _ := http.NewRequest(http.MethodGet, rs.host+"/proxy/v1/plugin/connect/account", nil)
			req.Header.Set("Authorization", "Bearer "+rs.apiKey)
			req.Header.Set("Connection-Id", id)
			req.Header.Set("Provider-Config-Key", key)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 200 || fake.basicCalls() != calls+1 {
				t.Errorf("%s: proxy answered %d; the plugin API accepted %d calls, want %d", result, resp.StatusCode, fake.basicCalls(), calls+1)
			}
			continue
		}
		if key == "mcp-generic" {
			cfg, _ := conn("")["connection_config"].(map[string]any)
			if cfg["mcp_server_url"] != fake.srv.URL+"/mcp" {
				t.Errorf("%s: mcp_server_url %v", result, cfg["mcp_server_url"])
			}
		}
		before := token(conn(""))
		path := "/proxy/mcp"
		if key == "github-app-oauth" {
			path = "/proxy/repos/o/r"
		}
		if key == "mcp-generic" {
			path = "/proxy/"
		}
		req, _ := http.NewRequest(http.MethodGet, rs.host+path, nil)
		req.Header.Set("Authorization", "Bearer "+rs.apiKey)
		req.Header.Set("Connection-Id", id)
		req.Header.Set("Provider-Config-Key", key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || fake.lastBearer() != before {
			t.Errorf("%s: proxy answered %d, upstream saw Bearer %q, want %q", result, resp.StatusCode, fake.lastBearer(), before)
		}
		after := token(conn("&force_refresh=true"))
		if after == "" || after == before {
			t.Errorf("%s: a forced refresh kept the token %q", result, after)
		}
	}
	fake.check(t)
	srv.stop(t)
}

// popupProvidersYAML are real entries of Nango's providers.yaml (0.71.10)
// with their URLs pointed at the fake (FAKE), github-app-oauth's alias
// resolved to its proxy base URL, and mcp-generic's mcp_server_url pattern
// widened to the fake's http loopback address.
const popupProvidersYAML = `
airtable-mcp:
    display_name: Airtable (MCP)
    auth_mode: MCP_OAUTH2
    client_registration: dynamic
    authorization_url: FAKE/as/authorize
    token_url: FAKE/as/token
    registration_url: FAKE/as/register
    authorization_params:
        response_type: code
        resource: FAKE/mcp
    registration_params:
        response_types:
            - code
        grant_types:
            - authorization_code
            - refresh_token
    token_params:
        grant_type: authorization_code
    refresh_params:
        grant_type: refresh_token
    proxy:
        base_url: FAKE
        headers:
            accept: application/json,text/event-stream
mcp-generic:
    display_name: MCP Server OAuth2 (Generic)
    auth_mode: MCP_OAUTH2_GENERIC
    proxy:
        base_url: ${connectionConfig.mcp_server_url}
    connection_config:
        mcp_server_url:
            type: string
            title: MCP Server URL
            description: The base URL of your MCP server
            example: https://mcp.notion.com/mcp
            pattern: '^https?://[a-zA-Z0-9.-]+(?:\:[0-9]+)?(?:/.*)?$'
github-app-oauth:
    display_name: GitHub App OAuth
    auth_mode: CUSTOM
    authorization_url: ${connectionConfig.appPublicLink}/installations/new
    authorization_url_skip_encode:
        - base_url
    token_url:
        OAUTH2: FAKE/login/oauth/access_token
        APP: FAKE/app/installations/${connectionConfig.installation_id}/access_tokens
    proxy:
        base_url: FAKE
    connection_config:
        appPublicLink:
            type: string
            title: App Public Link
            format: uri
            pattern: '^https?://.*$'
            automated: true
        installation_id:
            type: string
            title: Installation ID
            automated: true
crisp-plugin-install:
    display_name: Crisp (Plugin Install)
    auth_mode: INSTALL_PLUGIN
    auth_type: BASIC
    redirect_uri_metadata:
        - website_id
    proxy:
        base_url: FAKE
        headers:
            x-crisp-tier: plugin
        verification:
            method: GET
            endpoints:
                - /v1/plugin/connect/account
`

// The Crisp plugin's credentials (the integration's custom username and
// password) and the website its fake marketplace installs it on.
const (
	crispPluginID  = "plugin-identifier"
	crispPluginKey = "plugin-key"
	crispWebsiteID = "w-42"
)

// popupFake is an MCP server with its authorization server (RFC 9728 and
// RFC 8414 metadata, RFC 7591 registration, authorize with PKCE, token)
// a GitHub App and a Crisp plugin marketplace and API, checking what they
// receive.
type popupFake struct {
	srv      *httptest.Server
	key      *rsa.PrivateKey
	callback string

	mu      sync.Mutex
	n       int
	clients map[string]bool
	codes   map[string]url.Values
	tokens  map[string]bool
	refresh map[string]string
	bearer  string
	basic   int // plugin API calls with the plugin's credentials
	errs    []string
}

func newPopupFake(t *testing.T) *popupFake {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	f := &popupFake{key: key, clients: map[string]bool{}, codes: map[string]url.Values{}, tokens: map[string]bool{}, refresh: map[string]string{}}
	js := func(w http.ResponseWriter, status int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(v)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		js(w, 200, map[string]any{"resource": f.srv.URL + "/mcp", "authorization_servers": []string{f.srv.URL + "/as"}})
	})
	mux.HandleFunc("GET /.well-known/oauth-authorization-server/as", func(w http.ResponseWriter, r *http.Request) {
		js(w, 200, map[string]any{"issuer": f.srv.URL + "/as", "authorization_endpoint": f.srv.URL + "/as/authorize",
			"token_endpoint": f.srv.URL + "/as/token", "registration_endpoint": f.srv.URL + "/as/register",
			"code_challenge_methods_supported": []string{"S256"}})
	})
	mux.HandleFunc("POST /as/register", func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		f.mu.Lock()
		defer f.mu.Unlock()
		if uris, _ := body["redirect_uris"].([]any); len(uris) != 1 || uris[0] != f.callback || body["token_endpoint_auth_method"] != "none" {
			f.errs = append(f.errs, fmt.Sprintf("registration %v", body))
		}
		f.n++
		id := fmt.Sprintf("dyn-%d", f.n)
		f.clients[id] = true
		js(w, 201, map[string]any{"client_id": id})
	})
	mux.HandleFunc("GET /as/authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		f.mu.Lock()
		defer f.mu.Unlock()
		if !f.clients[q.Get("client_id")] || q.Get("code_challenge_method") != "S256" || q.Get("resource") != f.srv.URL+"/mcp" ||
			q.Get("redirect_uri") != f.callback {
			f.errs = append(f.errs, "authorize "+r.URL.RawQuery)
		}
		f.n++
		code := fmt.Sprintf("code-%d", f.n)
		f.codes[code] = q
		http.Redirect(w, r, q.Get("redirect_uri")+"?code="+code+"&state="+url.QueryEscape(q.Get("state")), http.StatusFound)
	})
	mux.HandleFunc("POST /as/token", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		form := r.PostForm
		f.mu.Lock()
		defer f.mu.Unlock()
		cid := form.Get("client_id")
		if !f.clients[cid] || form.Get("client_secret") != "" || form.Get("resource") != f.srv.URL+"/mcp" {
			f.errs = append(f.errs, "token request "+form.Encode())
			js(w, 400, map[string]string{"error": "invalid_client"})
			return
		}
		switch form.Get("grant_type") {
		case "authorization_code":
			aq, ok := f.codes[form.Get("code")]
			sum := sha256.Sum256([]byte(form.Get("code_verifier")))
			if !ok || aq.Get("client_id") != cid || base64.RawURLEncoding.EncodeToString(sum[:]) != aq.Get("code_challenge") {
				f.errs = append(f.errs, "code exchange without the right code or verifier")
				js(w, 400, map[string]string{"error": "invalid_grant"})
				return
			}
			delete(f.codes, form.Get("code"))
		case "refresh_token":
			if f.refresh[form.Get("refresh_token")] != cid {
				f.errs = append(f.errs, "refresh with a token of another client")
				js(w, 400, map[string]string{"error": "invalid_grant"})
				return
			}
			delete(f.refresh, form.Get("refresh_token"))
		}
		f.n++
		at, rt := fmt.Sprintf("at-%d", f.n), fmt.Sprintf("rt-%d", f.n)
		f.tokens[at], f.refresh[rt] = true, cid
		js(w, 200, map[string]any{"access_token": at, "refresh_token": rt, "expires_in": 3600, "token_type": "Bearer"})
	})
	mux.HandleFunc("GET /apps/fake-gh/installations/new", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, f.callback+"?installation_id=77&setup_action=install&code=gh-code&state="+url.QueryEscape(r.URL.Query().Get("state")), http.StatusFound)
	})
	mux.HandleFunc("POST /login/oauth/access_token", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		if r.PostForm.Get("client_id") != "gh-client" || r.PostForm.Get("client_secret") != "gh-secret" || r.PostForm.Get("code") != "gh-code" {
			f.mu.Lock()
			f.errs = append(f.errs, "GitHub user token request "+r.PostForm.Get("client_id"))
			f.mu.Unlock()
			js(w, 400, map[string]string{"error": "bad_verification_code"})
			return
		}
		js(w, 200, map[string]any{"access_token": "ghu-1", "token_type": "bearer"})
	})
	mux.HandleFunc("POST /app/installations/{id}/access_tokens", func(w http.ResponseWriter, r *http.Request) {
		raw, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		claims := &jwt.RegisteredClaims{}
		_, err := jwt.ParseWithClaims(raw, claims, func(*jwt.Token) (any, error) { return &key.PublicKey, nil }, jwt.WithValidMethods([]string{"RS256"}))
		f.mu.Lock()
		defer f.mu.Unlock()
		if err != nil || claims.Issuer != "4242" || r.PathValue("id") != "77" {
			f.errs = append(f.errs, fmt.Sprintf("app token request: %v %q", err, claims.Issuer))
			js(w, 401, map[string]string{"message": "bad JWT"})
			return
		}
		f.n++
		tok := fmt.Sprintf("ghs-%d", f.n)
		f.tokens[tok] = true
		js(w, 201, map[string]any{"token": tok, "expires_at": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)})
	})
	mux.HandleFunc("GET /crisp/install", func(w http.ResponseWriter, r *http.Request) {
		state := r.URL.Query().Get("state")
		if state == "" {
			f.mu.Lock()
			f.errs = append(f.errs, "plugin install link without a state: "+r.URL.RawQuery)
			f.mu.Unlock()
			http.Error(w, "no state", http.StatusBadRequest)
			return
		}
		http.Redirect(w, r, f.callback+"?website_id="+crispWebsiteID+"&state="+url.QueryEscape(state), http.StatusFound)
	})
	mux.HandleFunc("GET /v1/plugin/connect/account", func(w http.ResponseWriter, r *http.Request) {
		user, pass, ok := r.BasicAuth()
		f.mu.Lock()
		defer f.mu.Unlock()
		if !ok || user != crispPluginID || pass != crispPluginKey || r.Header.Get("X-Crisp-Tier") != "plugin" {
			f.errs = append(f.errs, fmt.Sprintf("plugin API call as %q (basic %v), tier %q", user, ok, r.Header.Get("X-Crisp-Tier")))
			w.WriteHeader(401)
			return
		}
		f.basic++
		js(w, 200, map[string]any{"error": false, "data": map[string]any{"website_id": crispWebsiteID}})
	})
	upstream := func(w http.ResponseWriter, r *http.Request) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		f.mu.Lock()
		live := ok && f.tokens[tok]
		if live {
			f.bearer = tok
		}
		f.mu.Unlock()
		if !live {
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+f.srv.URL+`/.well-known/oauth-protected-resource/mcp"`)
			w.WriteHeader(401)
			return
		}
		js(w, 200, map[string]any{"ok": true})
	}
	mux.HandleFunc("/mcp", upstream)
	mux.HandleFunc("/mcp/", upstream)
	mux.HandleFunc("/repos/", upstream)
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *popupFake) lastBearer() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.bearer
}

func (f *popupFake) basicCalls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.basic
}

func (f *popupFake) check(t *testing.T) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, e := range f.errs {
		t.Error("fake provider: " + e)
	}
	f.errs = nil
}
