package connect_test

import (
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/integrations"
)

// popupProvidersYAML are real entries of Nango's providers.yaml (0.71.10)
// for the popup modes MCP_OAUTH2 (dynamic and static registration),
// MCP_OAUTH2_GENERIC, CUSTOM and INSTALL_PLUGIN, with their URLs pointed at
// the fake (FAKE), the github-app-oauth alias resolved to its proxy base
// URL, and the mcp_server_url pattern of cloudflare-mcp widened to the
// fake's http loopback address.
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
asana-mcp:
    display_name: Asana (MCP)
    auth_mode: MCP_OAUTH2
    client_registration: static
    authorization_url: FAKE/as/authorize
    token_url: FAKE/as/token
    authorization_params:
        response_type: code
        resource: FAKE/mcp
    token_params:
        grant_type: authorization_code
    refresh_params:
        grant_type: refresh_token
    default_scopes:
        - default
    proxy:
        headers:
            accept: application/json,text/event-stream
        base_url: FAKE/
cloudflare-mcp:
    display_name: Cloudflare (MCP)
    auth_mode: MCP_OAUTH2_GENERIC
    proxy:
        base_url: ${connectionConfig.mcp_server_url}
        headers:
            accept: application/json,text/event-stream
    connection_config:
        mcp_server_url:
            type: string
            title: Worker URL
            description: The full URL of your Cloudflare Worker MCP server.
            example: https://my-mcp.myusername.workers.dev
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
`

const (
	popupAppID     = "4242"
	ghClientID     = "gh-client"
	ghClientSecret = "gh-secret"
	staticClientID = "asana-client"
	staticSecret   = "asana-secret"
	pluginUser     = "plugin-identifier"
	pluginKey      = "plugin-key"
)

// mcpFake is an MCP server with its authorization server (protected
// resource metadata, authorization server metadata, dynamic registration,
// authorize, token), a GitHub App (installation page, user token, app
// installation token) and a Crisp marketplace, all checking what they
// receive. Failures are collected in errs.
type mcpFake struct {
	t   testing.TB
	srv *httptest.Server
	key *rsa.PrivateKey

	mu sync.Mutex
	// clients are the registered client ids; registrations the bodies.
	clients       map[string]bool
	registrations []map[string]any
	// codes maps a code to the authorize request it was issued for.
	codes map[string]url.Values
	// tokens are the access tokens issued and live; refresh the refresh
	// tokens.
	tokens  map[string]bool
	refresh map[string]string // refresh token -> client id
	n       int
	// switches
	noPRM, noASMeta, refuseRegistration, refuseToken, no401Hint, noS256 bool
	// what the upstream saw
	proxied []http.Header
	errs    []string
	appJWTs int
}

func newMCPFake(t testing.TB) *mcpFake {
	key, err := fakeAppKey()
	if err != nil {
		t.Fatal(err)
	}
	f := &mcpFake{t: t, key: key, clients: map[string]bool{}, codes: map[string]url.Values{}, tokens: map[string]bool{}, refresh: map[string]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-protected-resource/mcp", f.prm)
	mux.HandleFunc("GET /.well-known/oauth-authorization-server/as", f.asMeta)
	mux.HandleFunc("POST /as/register", f.register)
	mux.HandleFunc("GET /as/authorize", f.authorize)
	mux.HandleFunc("POST /as/token", f.token)
	mux.HandleFunc("/mcp", f.mcp)
	mux.HandleFunc("/mcp/", f.mcp)
	mux.HandleFunc("GET /apps/fake-gh/installations/new", f.install)
	mux.HandleFunc("POST /login/oauth/access_token", f.ghUserToken)
	mux.HandleFunc("POST /app/installations/{id}/access_tokens", f.ghAppToken)
	mux.HandleFunc("GET /crisp/install", f.crispInstall)
	mux.HandleFunc("/v1/", f.upstream)
	mux.HandleFunc("/repos/", f.upstream)
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *mcpFake) fail(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs = append(f.errs, fmt.Sprintf(format, args...))
}

func (f *mcpFake) check(t *testing.T) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, e := range f.errs {
		t.Error("fake provider: " + e)
	}
	f.errs = nil
}

func (f *mcpFake) set(fn func(f *mcpFake)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (f *mcpFake) prm(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	off := f.noPRM
	f.mu.Unlock()
	if off {
		http.NotFound(w, r)
		return
	}
	writeJSON(w, 200, map[string]any{"resource": f.srv.URL + "/mcp", "authorization_servers": []string{f.srv.URL + "/as"},
		"scopes_supported": []string{"mcp:read", "mcp:write"}})
}

func (f *mcpFake) asMeta(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	off, noS256 := f.noASMeta, f.noS256
	f.mu.Unlock()
	if off {
		http.NotFound(w, r)
		return
	}
	methods := []string{"S256"}
	if noS256 {
		methods = []string{"plain"}
	}
	writeJSON(w, 200, map[string]any{"issuer": f.srv.URL + "/as", "authorization_endpoint": f.srv.URL + "/as/authorize",
		"token_endpoint": f.srv.URL + "/as/token", "registration_endpoint": f.srv.URL + "/as/register",
		"code_challenge_methods_supported": methods, "response_types_supported": []string{"code"}})
}

func (f *mcpFake) register(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&body); err != nil || r.Header.Get("Content-Type") != "application/json" {
		f.fail("registration body: %v", err)
		writeJSON(w, 400, map[string]string{"error": "invalid_client_metadata"})
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.refuseRegistration {
		writeJSON(w, 400, map[string]string{"error": "invalid_redirect_uri", "error_description": "redirect not allowed"})
		return
	}
	uris, _ := body["redirect_uris"].([]any)
	if len(uris) != 1 || uris[0] != "https://connect.example.com/oauth/callback" || body["token_endpoint_auth_method"] != "none" {
		f.errs = append(f.errs, fmt.Sprintf("registration body %v", body))
	}
	f.n++
	id := fmt.Sprintf("dyn-client-%d", f.n)
	f.clients[id] = true
	f.registrations = append(f.registrations, body)
	writeJSON(w, 201, map[string]any{"client_id": id, "redirect_uris": uris, "token_endpoint_auth_method": "none"})
}

func (f *mcpFake) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f.mu.Lock()
	defer f.mu.Unlock()
	cid := q.Get("client_id")
	if !f.clients[cid] && cid != staticClientID {
		f.errs = append(f.errs, "authorize with unknown client "+cid)
	}
	if q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" {
		f.errs = append(f.errs, "authorize without PKCE S256: "+r.URL.RawQuery)
	}
	if q.Get("resource") != f.srv.URL+"/mcp" {
		f.errs = append(f.errs, "authorize resource "+q.Get("resource"))
	}
	if q.Get("redirect_uri") != "https://connect.example.com/oauth/callback" || q.Get("response_type") != "code" {
		f.errs = append(f.errs, "authorize query "+r.URL.RawQuery)
	}
	f.n++
	code := fmt.Sprintf("code-%d", f.n)
	f.codes[code] = q
	http.Redirect(w, r, q.Get("redirect_uri")+"?code="+code+"&state="+url.QueryEscape(q.Get("state")), http.StatusFound)
}

func (f *mcpFake) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		writeJSON(w, 400, map[string]string{"error": "invalid_request"})
		return
	}
	form := r.PostForm
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.refuseToken {
		writeJSON(w, 400, map[string]string{"error": "invalid_grant", "error_description": "code rejected"})
		return
	}
	cid := form.Get("client_id")
	secret := form.Get("client_secret")
	if u, p, ok := r.BasicAuth(); ok {
		cid, secret = u, p
	}
	switch {
	case f.clients[cid]:
		if secret != "" {
			f.errs = append(f.errs, "a registered public client sent a secret")
		}
	case cid == staticClientID:
		if secret != staticSecret {
			f.errs = append(f.errs, "static client secret "+secret)
		}
	default:
		f.errs = append(f.errs, "token request of unknown client "+cid)
		writeJSON(w, 401, map[string]string{"error": "invalid_client"})
		return
	}
	if form.Get("resource") != f.srv.URL+"/mcp" {
		f.errs = append(f.errs, "token request resource "+form.Get("resource"))
	}
	switch form.Get("grant_type") {
	case "authorization_code":
		aq, ok := f.codes[form.Get("code")]
		delete(f.codes, form.Get("code"))
		if !ok || aq.Get("client_id") != cid || form.Get("redirect_uri") != aq.Get("redirect_uri") {
			writeJSON(w, 400, map[string]string{"error": "invalid_grant"})
			return
		}
		sum := sha256.Sum256([]byte(form.Get("code_verifier")))
		if base64.RawURLEncoding.EncodeToString(sum[:]) != aq.Get("code_challenge") {
			f.errs = append(f.errs, "PKCE verifier does not match the challenge")
			writeJSON(w, 400, map[string]string{"error": "invalid_grant"})
			return
		}
	case "refresh_token":
		if owner, ok := f.refresh[form.Get("refresh_token")]; !ok || owner != cid {
			writeJSON(w, 400, map[string]string{"error": "invalid_grant"})
			return
		}
		delete(f.refresh, form.Get("refresh_token"))
	default:
		writeJSON(w, 400, map[string]string{"error": "unsupported_grant_type"})
		return
	}
	f.n++
	at, rt := fmt.Sprintf("mcp-at-%d", f.n), fmt.Sprintf("mcp-rt-%d", f.n)
	f.tokens[at] = true
	f.refresh[rt] = cid
	writeJSON(w, 200, map[string]any{"access_token": at, "refresh_token": rt, "token_type": "Bearer", "expires_in": 3600})
}

func (f *mcpFake) mcp(w http.ResponseWriter, r *http.Request) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	f.mu.Lock()
	live := ok && f.tokens[tok]
	hint := !f.no401Hint
	if live {
		f.proxied = append(f.proxied, r.Header.Clone())
	}
	f.mu.Unlock()
	if !live {
		if hint {
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+f.srv.URL+`/.well-known/oauth-protected-resource/mcp"`)
		}
		w.WriteHeader(401)
		return
	}
	writeJSON(w, 200, map[string]any{"jsonrpc": "2.0", "id": 1, "result": map[string]any{"tools": []any{}}})
}

func (f *mcpFake) install(w http.ResponseWriter, r *http.Request) {
	http.Redirect(w, r, "https://connect.example.com/oauth/callback?installation_id=77&setup_action=install&code=gh-code&state="+
		url.QueryEscape(r.URL.Query().Get("state")), http.StatusFound)
}

func (f *mcpFake) ghUserToken(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	form := r.PostForm
	if form.Get("client_id") != ghClientID || form.Get("client_secret") != ghClientSecret {
		f.fail("GitHub user token request client %q", form.Get("client_id"))
		writeJSON(w, 401, map[string]string{"error": "incorrect_client_credentials"})
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch form.Get("grant_type") {
	case "authorization_code":
		if form.Get("code") != "gh-code" {
			writeJSON(w, 400, map[string]string{"error": "bad_verification_code"})
			return
		}
	case "refresh_token":
		if _, ok := f.refresh[form.Get("refresh_token")]; !ok {
			writeJSON(w, 400, map[string]string{"error": "bad_refresh_token"})
			return
		}
		delete(f.refresh, form.Get("refresh_token"))
	}
	f.n++
	rt := fmt.Sprintf("ghr-%d", f.n)
	f.refresh[rt] = ghClientID
	writeJSON(w, 200, map[string]any{"access_token": fmt.Sprintf("ghu-%d", f.n), "refresh_token": rt, "expires_in": 28800, "token_type": "bearer"})
}

func (f *mcpFake) ghAppToken(w http.ResponseWriter, r *http.Request) {
	raw, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	claims := &jwt.RegisteredClaims{}
	_, err := jwt.ParseWithClaims(raw, claims, func(*jwt.Token) (any, error) { return &f.key.PublicKey, nil },
		jwt.WithValidMethods([]string{"RS256"}), jwt.WithoutClaimsValidation())
	if err != nil || claims.Issuer != popupAppID || r.PathValue("id") != "77" {
		f.fail("app token request: %v issuer %q installation %q", err, claims.Issuer, r.PathValue("id"))
		writeJSON(w, 401, map[string]string{"message": "bad JWT"})
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.appJWTs++
	f.n++
	tok := fmt.Sprintf("ghs-%d", f.n)
	f.tokens[tok] = true
	writeJSON(w, 201, map[string]any{"token": tok, "expires_at": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)})
}

func (f *mcpFake) crispInstall(w http.ResponseWriter, r *http.Request) {
	http.Redirect(w, r, "https://connect.example.com/oauth/callback?website_id=w-42&state="+url.QueryEscape(r.URL.Query().Get("state")), http.StatusFound)
}

// upstream is a provider API: it records what the proxy sent.
func (f *mcpFake) upstream(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.proxied = append(f.proxied, r.Header.Clone())
	f.mu.Unlock()
	writeJSON(w, 200, map[string]any{"ok": true})
}

func (f *mcpFake) lastProxied(t *testing.T) http.Header {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.proxied) == 0 {
		t.Fatal("the upstream received nothing")
	}
	return f.proxied[len(f.proxied)-1]
}

// popupSetup is a Service with the popup-mode providers on f and the
// integrations amcp (airtable-mcp), asmcp (asana-mcp), cfmcp
// (cloudflare-mcp), ghao (github-app-oauth) and crisp
// (crisp-plugin-install).
func popupSetup(t *testing.T, b *backend, f *mcpFake) *bundle {
	t.Helper()
	ps, err := integrations.LoadNangoYAML(strings.NewReader(strings.ReplaceAll(popupProvidersYAML, "FAKE", f.srv.URL)))
	if err != nil {
		t.Fatal(err)
	}
	base, err := integrations.DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	cat, err := base.With(ps...)
	if err != nil {
		t.Fatal(err)
	}
	bu := setup(t, b, func(cfg *connect.Config) { cfg.Providers = cat })
	pemKey := string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(f.key)}))
	ghCreds, _ := json.Marshal(map[string]string{"type": "CUSTOM", "client_id": ghClientID, "client_secret": ghClientSecret,
		"app_id": popupAppID, "app_link": f.srv.URL + "/apps/fake-gh", "private_key": pemKey})
	for _, in := range []string{
		`{"provider":"airtable-mcp","unique_key":"amcp"}`,
		`{"provider":"asana-mcp","unique_key":"asmcp","credentials":{"type":"OAUTH2","client_id":"` + staticClientID + `","client_secret":"` + staticSecret + `"}}`,
		`{"provider":"cloudflare-mcp","unique_key":"cfmcp"}`,
		`{"provider":"github-app-oauth","unique_key":"ghao","credentials":` + string(ghCreds) + `}`,
		`{"provider":"crisp-plugin-install","unique_key":"crisp","custom":{"app_link":"` + f.srv.URL + `/crisp/install","username":"` + pluginUser + `","password":"` + pluginKey + `"}}`,
	} {
		bu.mustDo(t, 200, req{method: "POST", path: "/integrations", body: in})
	}
	return bu
}

// popupConnect runs a popup flow that must succeed and returns the
// connection id.
func popupConnect(t *testing.T, bu *bundle, key, tok, extra string) string {
	t.Helper()
	p := bu.browser(t).open(t, connectURL(key, tok, extra))
	if p.status != 200 || p.msg["type"] != connections.CallbackSuccessType {
		t.Fatalf("popup for %s ended with %d %s: %v\n%s", key, p.status, p.url, p.msg, p.body)
	}
	id, _ := p.payload()["connectionId"].(string)
	if id == "" {
		t.Fatalf("no connection id in %v", p.msg)
	}
	return id
}

func getConn(t *testing.T, bu *bundle, key, id, q string) map[string]any {
	t.Helper()
	return bu.mustDo(t, 200, req{method: "GET", path: "/connections/" + id + "?provider_config_key=" + key + q}).obj()
}

func proxyGet(t *testing.T, bu *bundle, key, id, path string) {
	t.Helper()
	bu.mustDo(t, 200, req{method: "GET", path: "/proxy" + path, header: map[string]string{"Connection-Id": id, "Provider-Config-Key": key}})
}

func credsOf(t *testing.T, c map[string]any) map[string]any {
	t.Helper()
	m, ok := c["credentials"].(map[string]any)
	if !ok {
		t.Fatalf("no credentials in %v", c)
	}
	return m
}

// TestMCPOAuth2Popup: an MCP_OAUTH2 provider with dynamic registration
// registers a public client at its registration_url for the callback,
// authorizes with PKCE S256 and the resource of its authorization params,
// exchanges the code as that client; the proxy sends the token as Bearer,
// and a forced refresh uses the registered client and the resource. With
// static registration, the integration's own client is used.
func TestMCPOAuth2Popup(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		f := newMCPFake(t)
		bu := popupSetup(t, b, f)
		tok := bu.session(t, `{"tags":{"end_user_id":"u1"}}`)
		id := popupConnect(t, bu, "amcp", tok, "")
		f.check(t)
		if len(f.registrations) != 1 {
			t.Fatalf("registrations %v", f.registrations)
		}
		if gt, _ := f.registrations[0]["grant_types"].([]any); len(gt) != 2 {
			t.Errorf("registration_params not sent: %v", f.registrations[0])
		}
		c := getConn(t, bu, "amcp", id, "")
		cr := credsOf(t, c)
		at, _ := cr["access_token"].(string)
		if cr["type"] != "OAUTH2" || !strings.HasPrefix(at, "mcp-at-") || cr["registered_client"] != nil {
			t.Errorf("credentials %v", cr)
		}
		cfg, _ := c["connection_config"].(map[string]any)
		if info, _ := cfg["oauth_client_info"].(string); !strings.Contains(info, "dyn-client-1") {
			t.Errorf("connection config %v", cfg)
		}
		proxyGet(t, bu, "amcp", id, "/mcp")
		h := f.lastProxied(t)
		if h.Get("Authorization") != "Bearer "+at || h.Get("Accept") != "application/json,text/event-stream" {
			t.Errorf("upstream headers %v", h)
		}
		c = getConn(t, bu, "amcp", id, "&force_refresh=true")
		f.check(t)
		at2, _ := credsOf(t, c)["access_token"].(string)
		if at2 == at || !strings.HasPrefix(at2, "mcp-at-") {
			t.Fatalf("after a forced refresh: %q (was %q)", at2, at)
		}
		proxyGet(t, bu, "amcp", id, "/mcp")
		if got := f.lastProxied(t).Get("Authorization"); got != "Bearer "+at2 {
			t.Errorf("upstream saw %q after the refresh", got)
		}

		// Static registration: the integration's client, no registration.
		id = popupConnect(t, bu, "asmcp", tok, "")
		f.check(t)
		if len(f.registrations) != 1 {
			t.Errorf("a static client was registered: %v", f.registrations)
		}
		getConn(t, bu, "asmcp", id, "&force_refresh=true")
		f.check(t)
	})
}

// TestMCPGenericPopup: the end user's MCP server URL is discovered (the
// 401's resource_metadata, RFC 8414 metadata), a client registered at the
// discovered registration endpoint, authorization and token requests carry
// PKCE S256 and the resource; the endpoints and client are stored; proxy
// and forced refresh work. Failures end in an error page with the
// discovery or registration code, and store nothing.
func TestMCPGenericPopup(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		f := newMCPFake(t)
		bu := popupSetup(t, b, f)
		tok := bu.session(t, `{"tags":{"end_user_id":"u1"}}`)
		server := url.QueryEscape(f.srv.URL + "/mcp")
		id := popupConnect(t, bu, "cfmcp", tok, "params[mcp_server_url]="+server)
		f.check(t)
		c := getConn(t, bu, "cfmcp", id, "")
		cfg, _ := c["connection_config"].(map[string]any)
		if cfg["mcp_server_url"] != f.srv.URL+"/mcp" || cfg["oauth_resource_url"] != f.srv.URL+"/mcp" ||
			!strings.Contains(fmt.Sprint(cfg["oauth_metadata"]), f.srv.URL+"/as/token") {
			t.Errorf("connection config %v", cfg)
		}
		at, _ := credsOf(t, c)["access_token"].(string)
		proxyGet(t, bu, "cfmcp", id, "/")
		if got := f.lastProxied(t).Get("Authorization"); got != "Bearer "+at {
			t.Errorf("upstream saw %q, want Bearer %s", got, at)
		}
		c = getConn(t, bu, "cfmcp", id, "&force_refresh=true")
		f.check(t)
		if at2, _ := credsOf(t, c)["access_token"].(string); at2 == at || at2 == "" {
			t.Errorf("forced refresh kept %q", at2)
		}

		count := func() int {
			r := bu.mustDo(t, 200, req{method: "GET", path: "/connections?integrationId=cfmcp"})
			l, _ := r.obj()["connections"].([]any)
			return len(l)
		}
		for _, tc := range []struct {
			name  string
			set   func(f *mcpFake)
			extra string
			want  string
		}{
			{"no metadata", func(f *mcpFake) { f.noPRM, f.noASMeta, f.no401Hint = true, true, true }, "params[mcp_server_url]=" + server, "mcp_discovery_failed"},
			{"no S256", func(f *mcpFake) { f.noS256 = true }, "params[mcp_server_url]=" + server, "mcp_discovery_failed"},
			{"registration refused", func(f *mcpFake) { f.refuseRegistration = true }, "params[mcp_server_url]=" + server, "mcp_registration_failed"},
			{"token refused", func(f *mcpFake) { f.refuseToken = true }, "params[mcp_server_url]=" + server, "token_err"},
			{"ftp url", nil, "params[mcp_server_url]=" + url.QueryEscape("ftp://127.0.0.1/mcp"), "invalid_connection_config"},
			{"no url", nil, "", "missing_connection_config"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				before := count()
				f.set(func(f *mcpFake) {
					f.noPRM, f.noASMeta, f.no401Hint, f.noS256, f.refuseRegistration, f.refuseToken = false, false, false, false, false, false
					if tc.set != nil {
						tc.set(f)
					}
				})
				p := bu.browser(t).open(t, connectURL("cfmcp", tok, tc.extra))
				if p.status != 400 || p.errorType() != tc.want {
					t.Errorf("status %d error %q, want 400 %s (%v)", p.status, p.errorType(), tc.want, p.msg)
				}
				if n := count(); n != before {
					t.Errorf("%d connections after a failure, was %d", n, before)
				}
			})
		}
		f.set(func(f *mcpFake) { f.refuseToken = false })
	})
}

// TestMCPGenericRefusesPrivateServer: with the default address policy, an
// MCP server on a loopback address is refused before anything is sent.
func TestMCPGenericRefusesPrivateServer(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		f := newMCPFake(t)
		ps, err := integrations.LoadNangoYAML(strings.NewReader(strings.ReplaceAll(popupProvidersYAML, "FAKE", f.srv.URL)))
		if err != nil {
			t.Fatal(err)
		}
		base, _ := integrations.DefaultCatalog()
		cat, err := base.With(ps...)
		if err != nil {
			t.Fatal(err)
		}
		bu := setupStrict(t, b, func(cfg *connect.Config) { cfg.Providers = cat })
		bu.mustDo(t, 200, req{method: "POST", path: "/integrations", body: `{"provider":"cloudflare-mcp","unique_key":"cfmcp"}`})
		tok := bu.session(t, `{"tags":{"end_user_id":"u1"}}`)
		for _, u := range []string{f.srv.URL + "/mcp", "https://127.0.0.1:1/mcp"} {
			p := bu.browser(t).open(t, connectURL("cfmcp", tok, "params[mcp_server_url]="+url.QueryEscape(u)))
			if e := p.errorType(); p.status != 400 || e != "invalid_connection_config" && e != "address_not_allowed" {
				t.Errorf("%s: status %d error %q", u, p.status, p.errorType())
			}
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		if len(f.registrations) != 0 || f.n != 0 {
			t.Errorf("the fake was contacted")
		}
	})
}

// TestCustomPopup: GitHub App OAuth installs the app and authorizes the
// user in one popup: the callback's installation id and code become the
// installation token (JWT signed with the app key) and the user token
// (the integration's client); GET answers Nango's {type: CUSTOM, app,
// user}; the proxy sends the installation token; a forced refresh mints a
// new installation token.
func TestCustomPopup(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		f := newMCPFake(t)
		bu := popupSetup(t, b, f)
		tok := bu.session(t, `{"tags":{"end_user_id":"u1"}}`)
		id := popupConnect(t, bu, "ghao", tok, "")
		f.check(t)
		c := getConn(t, bu, "ghao", id, "")
		cr := credsOf(t, c)
		app, _ := cr["app"].(map[string]any)
		user, _ := cr["user"].(map[string]any)
		cfg, _ := c["connection_config"].(map[string]any)
		appTok, _ := app["access_token"].(string)
		if cr["type"] != "CUSTOM" || app["type"] != "APP" || !strings.HasPrefix(appTok, "ghs-") || user["type"] != "OAUTH2" ||
			!strings.HasPrefix(fmt.Sprint(user["access_token"]), "ghu-") || cfg["installation_id"] != "77" {
			t.Fatalf("connection %v", c)
		}
		proxyGet(t, bu, "ghao", id, "/repos/o/r")
		if got := f.lastProxied(t).Get("Authorization"); got != "Bearer "+appTok {
			t.Errorf("upstream saw %q, want the installation token", got)
		}
		c = getConn(t, bu, "ghao", id, "&force_refresh=true")
		f.check(t)
		app2, _ := credsOf(t, c)["app"].(map[string]any)
		if app2["access_token"] == appTok || f.appJWTs != 2 {
			t.Errorf("after a forced refresh: %v (%d app tokens)", app2, f.appJWTs)
		}
	})
}

// TestInstallPluginPopup: the popup goes to the integration's install link;
// the marketplace comes back with website_id; the connection holds the
// integration's plugin credentials as BASIC, which the proxy sends.
func TestInstallPluginPopup(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		f := newMCPFake(t)
		bu := popupSetup(t, b, f)
		tok := bu.session(t, `{"tags":{"end_user_id":"u1"}}`)
		id := popupConnect(t, bu, "crisp", tok, "")
		c := getConn(t, bu, "crisp", id, "")
		cr := credsOf(t, c)
		cfg, _ := c["connection_config"].(map[string]any)
		if cr["type"] != "BASIC" || cr["username"] != pluginUser || cr["password"] != pluginKey || cfg["website_id"] != "w-42" {
			t.Fatalf("connection %v", c)
		}
		proxyGet(t, bu, "crisp", id, "/v1/plugin/connect/account")
		h := f.lastProxied(t)
		want := "Basic " + base64.StdEncoding.EncodeToString([]byte(pluginUser+":"+pluginKey))
		if h.Get("Authorization") != want || h.Get("X-Crisp-Tier") != "plugin" {
			t.Errorf("upstream headers %v", h)
		}
		// The connection list never shows the plugin key.
		r := bu.mustDo(t, 200, req{method: "GET", path: "/connections?integrationId=crisp"})
		if strings.Contains(string(r.raw), pluginKey) {
			t.Error("the list shows the plugin key")
		}
	})
}

// TestPopupModesOwnAppDoesNotApply: a connect session that asks the end
// user for their own OAuth app (empty oauth_client_id_override and
// oauth_client_secret_override) does not ask it of a plugin installation
// nor of an MCP server whose client is registered per flow: both connect
// without one, own-app values sent anyway are refused (400 url_param_err,
// nothing stored), and the connection config never gets the keys.
func TestPopupModesOwnAppDoesNotApply(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		f := newMCPFake(t)
		bu := popupSetup(t, b, f)
		for _, key := range []string{"crisp", "amcp"} {
			tok := bu.session(t, `{"tags":{"end_user_id":"u1"},"integrations_config_defaults":{"`+key+`":{"connection_config":
				{"oauth_client_id_override":"","oauth_client_secret_override":""}}}}`)
			p := bu.browser(t).open(t, connectURL(key, tok, "credentials%5Boauth_client_id_override%5D=own-client&credentials%5Boauth_client_secret_override%5D=own-secret"))
			if p.status != 400 || p.errorType() != "url_param_err" {
				t.Fatalf("%s with own app values: %d %v", key, p.status, p.msg)
			}
			r := bu.mustDo(t, 200, req{method: "GET", path: "/connections?integrationId=" + key})
			if n := len(r.obj()["connections"].([]any)); n != 0 {
				t.Fatalf("%s: %d connections after a refused flow", key, n)
			}
			id := popupConnect(t, bu, key, tok, "")
			c := getConn(t, bu, key, id, "")
			cfg, _ := c["connection_config"].(map[string]any)
			if _, ok := cfg["oauth_client_id_override"]; ok {
				t.Errorf("%s: connection config %v", key, cfg)
			}
		}
		// An OAuth 2 provider with a static client still asks for it.
		tok := bu.session(t, `{"tags":{"end_user_id":"u1"},"integrations_config_defaults":{"asmcp":{"connection_config":
			{"oauth_client_id_override":"","oauth_client_secret_override":""}}}}`)
		if p := bu.browser(t).open(t, connectURL("asmcp", tok, "")); p.status != 400 || p.errorType() != "url_param_err" {
			t.Fatalf("static MCP client without own app values: %d %v", p.status, p.msg)
		}
	})
}

// TestPopupModesImport: POST /connections imports each popup mode, and
// the imported MCP_OAUTH2_GENERIC connection refreshes at the token
// endpoint of its oauth_metadata with its oauth_client_info's client.
func TestPopupModesImport(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		f := newMCPFake(t)
		bu := popupSetup(t, b, f)
		f.set(func(f *mcpFake) { f.clients["imported-client"] = true; f.refresh["imp-rt"] = "imported-client" })
		meta, _ := json.Marshal(map[string]string{"token_endpoint": f.srv.URL + "/as/token"})
		body, _ := json.Marshal(map[string]any{"provider_config_key": "cfmcp", "connection_id": "imp-g", "access_token": "old",
			"refresh_token": "imp-rt", "expires_in": 3600,
			"connection_config": map[string]any{"mcp_server_url": f.srv.URL + "/mcp", "oauth_metadata": string(meta),
				"oauth_client_info": `{"client_id":"imported-client"}`, "oauth_resource_url": f.srv.URL + "/mcp"}})
		bu.mustDo(t, 201, req{method: "POST", path: "/connections", body: string(body)})
		c := getConn(t, bu, "cfmcp", "imp-g", "&force_refresh=true")
		f.check(t)
		if at, _ := credsOf(t, c)["access_token"].(string); !strings.HasPrefix(at, "mcp-at-") {
			t.Errorf("imported generic connection after refresh: %v", credsOf(t, c))
		}
		for _, tc := range []struct {
			body string
			want int
		}{
			{`{"provider_config_key":"crisp","connection_id":"imp-p","username":"u","password":"p"}`, 201},
			{`{"provider_config_key":"crisp","connection_id":"imp-p2","credentials":{"type":"BASIC","username":"u","password":"p"}}`, 201},
			{`{"provider_config_key":"amcp","connection_id":"imp-a","credentials":{"type":"OAUTH2","access_token":"x"}}`, 201},
			{`{"provider_config_key":"ghao","connection_id":"imp-c","credentials":{"type":"CUSTOM","app":{"access_token":"ghs-x"},"user":null}}`, 201},
			{`{"provider_config_key":"ghao","connection_id":"imp-c2","credentials":{"type":"CUSTOM","user":{"access_token":"u"}}}`, 400},
			{`{"provider_config_key":"cfmcp","connection_id":"imp-g2","access_token":"x","no_expiration":true}`, 400},
			{`{"provider_config_key":"cfmcp","connection_id":"imp-g3","access_token":"x","no_expiration":true,"connection_config":{"mcp_server_url":"https://mcp.example.com","oauth_metadata":"{\"token_endpoint\":\"ftp://x\"}","oauth_client_info":"{\"client_id\":\"c\"}"}}`, 400},
		} {
			r := bu.do(t, req{method: "POST", path: "/connections", body: tc.body})
			if r.status != tc.want {
				t.Errorf("%s: %d %s, want %d", tc.body, r.status, r.raw, tc.want)
			}
		}
		c = getConn(t, bu, "ghao", "imp-c", "")
		if cr := credsOf(t, c); cr["type"] != "CUSTOM" || cr["user"] != nil || fmt.Sprint(cr["app"].(map[string]any)["access_token"]) != "ghs-x" {
			t.Errorf("imported CUSTOM %v", cr)
		}
	})
}
