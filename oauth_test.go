package connect_test

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/golang-jwt/jwt/v5"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/webhooks"
)

// oauthProvider is a fake OAuth provider: an OAuth 2 authorization server
// (authorize that redirects straight back, token with PKCE checks and
// rotating refresh tokens), an OAuth 1.0a server whose signatures are
// checked by the test's own HMAC-SHA1 code, and a GitHub-App-like
// installation flow whose JWTs are checked with golang-jwt.
type oauthProvider struct {
	t      testing.TB
	srv    *httptest.Server
	now    func() time.Time
	appKey *rsa.PrivateKey

	mu sync.Mutex
	// authorize is every query of GET /authorize.
	authorize []url.Values
	// codes are the codes issued, single use.
	codes map[string]url.Values
	// tokenForms is every form of POST /token.
	tokenForms []url.Values
	refresh    map[string]bool
	issued     int
	// deny makes /authorize send the user back with access_denied.
	deny bool
	// failToken makes /token answer invalid_grant.
	failToken bool
	// accessToken and teamID, when set, replace the access token and the
	// team.id (a token_response_metadata value) of /token's answers.
	accessToken, teamID string

	o1Requests map[string]string // request token -> secret
	o1Verifier map[string]string // request token -> verifier
	o1Callback map[string]string // request token -> callback
	o1Errors   []string

	appTokens []string // installation ids tokens were minted for
	jwtErrors []string
}

const (
	o1ConsumerKey    = "o1-consumer"
	o1ConsumerSecret = "o1 secret&more"
	appID            = "4242"
)

// fakeAppKey is the RSA key of the fake providers' apps (the private key a
// GitHub App or an MCP server's client signs with), made once per run:
// 2048-bit keys took 3 % of the package's CPU, made per fake.
var fakeAppKey = sync.OnceValues(func() (*rsa.PrivateKey, error) { return rsa.GenerateKey(rand.Reader, 2048) })

func newOAuthProvider(t testing.TB, now func() time.Time) *oauthProvider {
	key, err := fakeAppKey()
	if err != nil {
		t.Fatal(err)
	}
	p := &oauthProvider{t: t, now: now, appKey: key, codes: map[string]url.Values{}, refresh: map[string]bool{},
		o1Requests: map[string]string{}, o1Verifier: map[string]string{}, o1Callback: map[string]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /authorize", p.serveAuthorize)
	mux.HandleFunc("POST /token", p.serveToken)
	mux.HandleFunc("POST /oauth1/request_token", p.serveRequestToken)
	mux.HandleFunc("GET /oauth1/authorize", p.serveO1Authorize)
	mux.HandleFunc("POST /oauth1/access_token", p.serveAccessToken)
	mux.HandleFunc("GET /apps/fake-app/installations/new", p.serveInstall)
	mux.HandleFunc("POST /app/installations/{id}/access_tokens", p.serveAppToken)
	p.srv = httptest.NewServer(mux)
	t.Cleanup(p.srv.Close)
	return p
}

func (p *oauthProvider) serveAuthorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.authorize = append(p.authorize, q)
	back, err := url.Parse(q.Get("redirect_uri"))
	if err != nil {
		http.Error(w, "bad redirect_uri", 400)
		return
	}
	bq := url.Values{"state": {q.Get("state")}}
	if p.deny {
		bq.Set("error", "access_denied")
		bq.Set("error_description", "The user said no")
	} else {
		code := "code-" + rand.Text()
		p.codes[code] = q
		bq.Set("code", code)
	}
	back.RawQuery = bq.Encode()
	http.Redirect(w, r, back.String(), http.StatusFound)
}

// oauthClients are the OAuth 2 clients the fake provider knows.
var oauthClients = map[string]string{"fo-client": "fo-secret", "own-client": "own-secret"}

func (p *oauthProvider) serveToken(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", 400)
		return
	}
	f := r.PostForm
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tokenForms = append(p.tokenForms, f)
	w.Header().Set("Content-Type", "application/json")
	fail := func(code, desc string) {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"error":%q,"error_description":%q}`, code, desc)
	}
	if secret, ok := oauthClients[f.Get("client_id")]; !ok || secret != f.Get("client_secret") {
		fail("invalid_client", "unknown client")
		return
	}
	if p.failToken {
		fail("invalid_grant", "the provider is having a bad day")
		return
	}
	switch f.Get("grant_type") {
	case "authorization_code":
		auth, ok := p.codes[f.Get("code")]
		delete(p.codes, f.Get("code"))
		switch {
		case !ok:
			fail("invalid_grant", "unknown or used code")
			return
		case auth.Get("client_id") != f.Get("client_id") || auth.Get("redirect_uri") != f.Get("redirect_uri"):
			fail("invalid_grant", "client or redirect_uri differ from the authorization request")
			return
		case auth.Get("code_challenge") != "":
			sum := sha256.Sum256([]byte(f.Get("code_verifier")))
			if auth.Get("code_challenge_method") != "S256" || base64.RawURLEncoding.EncodeToString(sum[:]) != auth.Get("code_challenge") {
				fail("invalid_grant", "PKCE verification failed")
				return
			}
		case f.Get("code_verifier") != "":
			fail("invalid_request", "a code_verifier without a challenge")
			return
		}
	case "refresh_token":
		if !p.refresh[f.Get("refresh_token")] {
			fail("invalid_grant", "refresh token reused or unknown")
			return
		}
		delete(p.refresh, f.Get("refresh_token"))
	default:
		fail("unsupported_grant_type", "")
		return
	}
	p.issued++
	rt := fmt.Sprintf("rt-%d", p.issued)
	p.refresh[rt] = true
	at, team := fmt.Sprintf("at-%d", p.issued), fmt.Sprintf("T%d", p.issued)
	if p.accessToken != "" {
		at = p.accessToken
	}
	if p.teamID != "" {
		team = p.teamID
	}
	fmt.Fprintf(w, `{"access_token":%s,"refresh_token":%q,"token_type":"bearer","expires_in":3600,"scope":"read,write","team":{"id":%s}}`,
		jsonString(at), rt, jsonString(team))
}

// oauth1Params returns the OAuth 1 protocol parameters of r (from the
// Authorization header) and verifies the HMAC-SHA1 signature with the test's
// own implementation of RFC 5849 section 3.4.
func (p *oauthProvider) oauth1Params(r *http.Request, tokenSecret string) (map[string]string, bool) {
	h := r.Header.Get("Authorization")
	rest, ok := strings.CutPrefix(h, "OAuth ")
	if !ok {
		return nil, false
	}
	params := map[string]string{}
	for _, part := range strings.Split(rest, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return nil, false
		}
		uv, err := url.PathUnescape(strings.Trim(v, `"`))
		if err != nil {
			return nil, false
		}
		params[k] = uv
	}
	if params["oauth_signature_method"] != "HMAC-SHA1" || params["oauth_consumer_key"] != o1ConsumerKey {
		return nil, false
	}
	enc := func(s string) string { return strings.ReplaceAll(url.QueryEscape(s), "+", "%20") }
	var pairs []string
	for k, v := range params {
		if k == "oauth_signature" || k == "realm" {
			continue
		}
		pairs = append(pairs, enc(k)+"="+enc(v))
	}
	_ = r.ParseForm()
	for k, vs := range r.Form {
		for _, v := range vs {
			pairs = append(pairs, enc(k)+"="+enc(v))
		}
	}
	sort.Strings(pairs)
	base := r.Method + "&" + enc("http://"+r.Host+r.URL.Path) + "&" + enc(strings.Join(pairs, "&"))
	mac := hmac.New(sha1.New, []byte(enc(o1ConsumerSecret)+"&"+enc(tokenSecret)))
	mac.Write([]byte(base))
	want := base64.StdEncoding.EncodeToString(mac.Sum(nil))
	return params, hmac.Equal([]byte(want), []byte(params["oauth_signature"]))
}

func (p *oauthProvider) serveRequestToken(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	params, ok := p.oauth1Params(r, "")
	if !ok || params["oauth_callback"] == "" {
		p.o1Errors = append(p.o1Errors, "request_token: bad signature or no callback")
		http.Error(w, "oauth_problem=signature_invalid", http.StatusUnauthorized)
		return
	}
	tok, sec := "rq-"+rand.Text(), "rqs-"+rand.Text()
	p.o1Requests[tok], p.o1Callback[tok] = sec, params["oauth_callback"]
	w.Header().Set("Content-Type", "application/x-www-form-urlencoded")
	fmt.Fprintf(w, "oauth_token=%s&oauth_token_secret=%s&oauth_callback_confirmed=true", tok, sec)
}

func (p *oauthProvider) serveO1Authorize(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	tok := r.URL.Query().Get("oauth_token")
	cb, ok := p.o1Callback[tok]
	if !ok {
		http.Error(w, "unknown request token", 400)
		return
	}
	ver := "ver-" + rand.Text()
	p.o1Verifier[tok] = ver
	u, _ := url.Parse(cb)
	u.RawQuery = url.Values{"oauth_token": {tok}, "oauth_verifier": {ver}}.Encode()
	http.Redirect(w, r, u.String(), http.StatusFound)
}

func (p *oauthProvider) serveAccessToken(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	h := r.Header.Get("Authorization")
	m := regexp.MustCompile(`oauth_token="([^"]+)"`).FindStringSubmatch(h)
	if m == nil {
		http.Error(w, "no token", 401)
		return
	}
	tok, _ := url.PathUnescape(m[1])
	params, ok := p.oauth1Params(r, p.o1Requests[tok])
	if !ok || params["oauth_verifier"] != p.o1Verifier[tok] || p.o1Verifier[tok] == "" {
		p.o1Errors = append(p.o1Errors, "access_token: bad signature or verifier")
		http.Error(w, "oauth_problem=signature_invalid", http.StatusUnauthorized)
		return
	}
	delete(p.o1Requests, tok)
	delete(p.o1Verifier, tok)
	w.Header().Set("Content-Type", "application/x-www-form-urlencoded")
	fmt.Fprint(w, "oauth_token=o1-access&oauth_token_secret=o1-access-secret&user_id=77")
}

func (p *oauthProvider) serveInstall(w http.ResponseWriter, r *http.Request) {
	// GitHub sends the end user to the app's setup URL, the callback here,
	// with the installation id and the state it was given.
	u := "https://connect.example.com/oauth/callback?" + url.Values{"installation_id": {"99"},
		"setup_action": {"install"}, "state": {r.URL.Query().Get("state")}}.Encode()
	http.Redirect(w, r, u, http.StatusFound)
}

func (p *oauthProvider) serveAppToken(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	raw, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	claims := &jwt.RegisteredClaims{}
	_, err := jwt.ParseWithClaims(raw, claims, func(*jwt.Token) (any, error) { return &p.appKey.PublicKey, nil },
		jwt.WithValidMethods([]string{"RS256"}), jwt.WithIssuer(appID), jwt.WithIssuedAt(), jwt.WithExpirationRequired(),
		jwt.WithTimeFunc(p.now))
	if !ok || err != nil || claims.ExpiresAt.Sub(claims.IssuedAt.Time) > 10*time.Minute {
		p.jwtErrors = append(p.jwtErrors, fmt.Sprint(err))
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"message":"A JSON web token could not be decoded"}`)
		return
	}
	if r.Header.Get("Accept") != "application/vnd.github+json" {
		w.WriteHeader(http.StatusUnsupportedMediaType)
		return
	}
	p.appTokens = append(p.appTokens, r.PathValue("id"))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	fmt.Fprintf(w, `{"token":"ghs_%d","expires_at":%q,"permissions":{"issues":"write"}}`, len(p.appTokens),
		p.now().Add(time.Hour).Format(time.RFC3339))
}

func (p *oauthProvider) lastAuthorize() url.Values {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.authorize) == 0 {
		p.t.Fatal("the provider's authorize endpoint was not called")
	}
	return p.authorize[len(p.authorize)-1]
}

func (p *oauthProvider) tokenCalls() []url.Values {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.tokenForms)
}

func (p *oauthProvider) set(f func(p *oauthProvider)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f(p)
}

// oauthCatalog adds the fake providers: fake-oauth2 (scopes joined with
// ",", default scopes, a token response field kept as connection config),
// fake-oauth2-nopkce, fake-oauth1 and fake-app.
func oauthCatalog(t testing.TB, p *oauthProvider) *integrations.Catalog {
	t.Helper()
	base, err := integrations.DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	cat, err := base.With(
		&integrations.Provider{Name: "fake-oauth2", DisplayName: "Fake OAuth 2", AuthMode: integrations.AuthModeOAuth2,
			AuthorizationURL: p.srv.URL + "/authorize", TokenURL: p.srv.URL + "/token", ScopeSeparator: ",",
			DefaultScopes: []string{"read", "write"}, AuthorizationParams: map[string]string{"access_type": "offline"},
			TokenResponseMetadata: []string{"team.id"},
			ConnectionConfig:      map[string]integrations.FieldSpec{"subdomain": {Title: "Subdomain", Optional: true, Pattern: "^[a-z0-9-]+$"}}},
		&integrations.Provider{Name: "fake-oauth2-nopkce", DisplayName: "Fake OAuth 2 without PKCE", AuthMode: integrations.AuthModeOAuth2,
			AuthorizationURL: p.srv.URL + "/authorize", TokenURL: p.srv.URL + "/token", DisablePKCE: true},
		&integrations.Provider{Name: "fake-oauth1", DisplayName: "Fake OAuth 1", AuthMode: integrations.AuthModeOAuth1,
			RequestURL: p.srv.URL + "/oauth1/request_token", AuthorizationURL: p.srv.URL + "/oauth1/authorize",
			TokenURL: p.srv.URL + "/oauth1/access_token"},
		&integrations.Provider{Name: "fake-app", DisplayName: "Fake App", AuthMode: integrations.AuthModeApp,
			AuthorizationURL:    "${connectionConfig.appPublicLink}/installations/new",
			TokenURL:            p.srv.URL + "/app/installations/${connectionConfig.installation_id}/access_tokens",
			RedirectURIMetadata: []string{"installation_id", "setup_action"},
			ConnectionConfig: map[string]integrations.FieldSpec{
				"appPublicLink":   {Type: "string", Title: "App public link", Automated: true},
				"installation_id": {Type: "string", Title: "Installation", Automated: true},
			}},
	)
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

// oauthBundle is a Service on the fake provider with the integrations fo
// (fake-oauth2), fnp (fake-oauth2-nopkce), f1 (fake-oauth1), fapp
// (fake-app) and key1 (an API-key integration).
type oauthBundle struct {
	*bundle
	prov   *oauthProvider
	clock  *refreshClock
	events *eventLog
}

func oauthSetup(t testing.TB, b *backend, mutate ...func(*connect.Config)) *oauthBundle {
	t.Helper()
	ob := &oauthBundle{clock: newRefreshClock(), events: &eventLog{}}
	ob.prov = newOAuthProvider(t, ob.clock.Now)
	cat := oauthCatalog(t, ob.prov)
	ob.bundle = setup(t, b, append([]func(*connect.Config){func(cfg *connect.Config) {
		cfg.Now = ob.clock.Now
		cfg.Providers = cat
		cfg.Notifier = ob.events
	}}, mutate...)...)
	pemKey := string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(ob.prov.appKey)}))
	appCreds, _ := json.Marshal(map[string]string{"type": "APP", "app_id": appID,
		"app_link": ob.prov.srv.URL + "/apps/fake-app", "private_key": pemKey})
	for _, in := range []string{
		`{"provider":"fake-oauth2","unique_key":"fo","credentials":{"type":"OAUTH2","client_id":"fo-client","client_secret":"fo-secret"}}`,
		`{"provider":"fake-oauth2-nopkce","unique_key":"fnp","credentials":{"type":"OAUTH2","client_id":"fo-client","client_secret":"fo-secret","scopes":"a b"}}`,
		`{"provider":"fake-oauth1","unique_key":"f1","credentials":{"type":"OAUTH1","client_id":"` + o1ConsumerKey + `","client_secret":"` + o1ConsumerSecret + `"}}`,
		`{"provider":"fake-app","unique_key":"fapp","credentials":` + string(appCreds) + `}`,
		`{"provider":"openai","unique_key":"key1"}`,
	} {
		ob.mustDo(t, 200, req{method: "POST", path: "/integrations", body: in})
	}
	return ob
}

// browser is an end user's browser: cookies, redirects followed, and
// https://connect.example.com (the service's PublicURL) reaching the
// test server.
type browser struct {
	c *http.Client
}

func (bu *bundle) browser(t *testing.T) *browser {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	srv, _ := url.Parse(bu.srv.URL)
	return &browser{c: &http.Client{Jar: jar, Transport: hostRewrite{host: srv.Host}}}
}

type hostRewrite struct{ host string }

func (h hostRewrite) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Host == "connect.example.com" {
		r = r.Clone(r.Context())
		r.URL.Scheme, r.URL.Host = "http", h.host
	}
	return http.DefaultTransport.RoundTrip(r)
}

// page is the popup's last page.
type page struct {
	status int
	url    *url.URL
	header http.Header
	body   string
	// msg is the message the callback page posts to its opener.
	msg map[string]any
}

var msgRE = regexp.MustCompile(`var msg = (.*);`)

func (br *browser) open(t *testing.T, u string) *page {
	t.Helper()
	resp, err := br.c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	p := &page{status: resp.StatusCode, url: resp.Request.URL, header: resp.Header, body: string(b)}
	if m := msgRE.FindStringSubmatch(p.body); m != nil {
		if err := json.Unmarshal([]byte(m[1]), &p.msg); err != nil {
			t.Fatalf("the page's message is not JSON: %s", m[1])
		}
	}
	return p
}

func (p *page) payload() map[string]any {
	m, _ := p.msg["payload"].(map[string]any)
	return m
}

// errorType is the error type the page posts, or "".
func (p *page) errorType() string {
	if p.msg["type"] != connections.CallbackErrorType {
		return ""
	}
	s, _ := p.payload()["errorType"].(string)
	return s
}

func connectURL(key, tok, extra string) string {
	u := "https://connect.example.com/oauth/connect/" + key + "?connect_session_token=" + tok
	if extra != "" {
		u += "&" + extra
	}
	return u
}

// mustConnect runs a whole popup flow that must succeed and returns the
// new connection's id.
func (ob *oauthBundle) mustConnect(t *testing.T, br *browser, key, tok, extra string) string {
	t.Helper()
	p := br.open(t, connectURL(key, tok, extra))
	if p.status != 200 || p.msg["type"] != connections.CallbackSuccessType {
		t.Fatalf("popup for %s ended with %d %s: %v\n%s", key, p.status, p.url, p.msg, p.body)
	}
	if p.payload()["providerConfigKey"] != key {
		t.Errorf("callback payload %v, want providerConfigKey %s", p.payload(), key)
	}
	id, _ := p.payload()["connectionId"].(string)
	if !uuidRE.MatchString(id) {
		t.Fatalf("connectionId %q is not a generated UUID", id)
	}
	return id
}

func (ob *oauthBundle) connections(t *testing.T) []*connections.Connection {
	t.Helper()
	l, err := ob.svc.Connections().List(t.Context(), ob.env.ID, connections.ListInput{})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func (ob *oauthBundle) connection(t *testing.T, key, id string) *connections.Connection {
	t.Helper()
	c, err := ob.svc.Connections().Get(t.Context(), ob.env.ID, key, id, connections.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func authEvents(l *eventLog) []*webhooks.AuthPayload {
	var out []*webhooks.AuthPayload
	for _, e := range l.list() {
		if p, ok := e.Payload.(*webhooks.AuthPayload); ok {
			out = append(out, p)
		}
	}
	return out
}

// TestOAuth2Flow: the popup goes to the provider with client id, callback
// URL, a random state, PKCE S256, the scopes joined with the provider's
// separator and the authorization parameters; the callback exchanges the
// code (the fake provider checks the PKCE verifier and the redirect URI),
// stores the connection with its tokens, granted scopes, the session's
// tags and the token response metadata, sends the auth webhook, and
// answers the page that tells the opener. The status poll reports it.
func TestOAuth2Flow(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		ob := oauthSetup(t, b)
		tok := ob.session(t, `{"tags":{"End_User_Id":"u1","team":"red"},"allowed_integrations":["fo","fnp"],
			"integrations_config_defaults":{"fo":{"authorization_params":{"prompt":"consent"}}},
			"webhook_url_override":"https://hooks.example.com/mine"}`)
		br := ob.browser(t)
		id := ob.mustConnect(t, br, "fo", tok, "ws_client_id=flow-1&params%5Bsubdomain%5D=acme&authorization_params%5Blogin_hint%5D=a%40b.c&authorization_params%5Bx%5D=undefined&connection_id=ignored")

		aq := ob.prov.lastAuthorize()
		if aq.Get("client_id") != "fo-client" || aq.Get("redirect_uri") != "https://connect.example.com/oauth/callback" ||
			aq.Get("response_type") != "code" || aq.Get("scope") != "read,write" || aq.Get("access_type") != "offline" ||
			aq.Get("prompt") != "consent" || aq.Get("login_hint") != "a@b.c" || aq.Has("x") {
			t.Errorf("authorization request %v", aq)
		}
		if len(aq.Get("state")) < 40 || aq.Get("code_challenge_method") != "S256" || len(aq.Get("code_challenge")) != 43 {
			t.Errorf("state %q and PKCE %q %q: want a long random state and an S256 challenge", aq.Get("state"), aq.Get("code_challenge"), aq.Get("code_challenge_method"))
		}
		calls := ob.prov.tokenCalls()
		if len(calls) != 1 || calls[0].Get("grant_type") != "authorization_code" || len(calls[0].Get("code_verifier")) < 43 {
			t.Fatalf("token calls %v", calls)
		}

		c := ob.connection(t, "fo", id)
		cr := c.Credentials
		if cr.Type != "OAUTH2" || cr.AccessToken != "at-1" || cr.RefreshToken != "rt-1" || cr.ExpiresAt == nil ||
			!cr.ExpiresAt.Equal(ob.clock.at(time.Hour).Truncate(time.Millisecond)) || !slices.Equal(cr.Scopes, []string{"read", "write"}) {
			t.Errorf("credentials %+v", cr)
		}
		if c.ConnectionConfig["subdomain"] != "acme" || c.ConnectionConfig["team.id"] != "T1" {
			t.Errorf("connection config %v", c.ConnectionConfig)
		}
		if c.Tags["end_user_id"] != "u1" || c.Tags["team"] != "red" || c.WebhookURLOverride != "https://hooks.example.com/mine" {
			t.Errorf("tags %v, webhook override %q", c.Tags, c.WebhookURLOverride)
		}
		ev := authEvents(ob.events)
		if len(ev) != 1 || !ev[0].Success || ev[0].Operation != "creation" || ev[0].ConnectionID != id ||
			ev[0].AuthMode != "OAUTH2" || ev[0].ProviderConfigKey != "fo" || ev[0].Tags["end_user_id"] != "u1" {
			t.Errorf("auth webhooks %+v", ev)
		}

		st := ob.mustDo(t, 200, req{method: "GET", path: "/oauth/status/flow-1", key: tok})
		sameJSONValue(t, "status", st.obj()["data"],
			fmt.Sprintf(`{"status":"success","providerConfigKey":"fo","connectionId":%q,"isPending":false}`, id))
		if r := ob.do(t, req{method: "GET", path: "/oauth/status/other", key: tok}); r.status != 404 {
			t.Errorf("status of an unknown flow = %d %s", r.status, r.raw)
		}
		other := ob.session(t, `{"tags":{"end_user_id":"u2"}}`)
		if r := ob.do(t, req{method: "GET", path: "/oauth/status/flow-1", key: other}); r.status != 404 {
			t.Errorf("another session sees the flow: %d %s", r.status, r.raw)
		}

		// Without PKCE, with the integration's scopes (space-separated).
		ob.mustConnect(t, br, "fnp", tok, "")
		aq = ob.prov.lastAuthorize()
		if aq.Has("code_challenge") || aq.Get("scope") != "a b" {
			t.Errorf("authorization without PKCE: %v", aq)
		}
		if n := len(ob.connections(t)); n != 2 {
			t.Errorf("%d connections, want 2", n)
		}
	})
}

// TestOAuthStateIsSingleUseAndBound: replaying the callback, a forged
// state, a callback in another browser, a callback after the flow expired,
// and a provider error each answer a 400 page with the right error type and
// write no connection; the flow then reports the error.
func TestOAuthStateIsSingleUseAndBound(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		ob := oauthSetup(t, b)
		tok := ob.session(t, `{"tags":{"end_user_id":"u1"}}`)

		// Stop at the provider's redirect back, to replay it.
		stopAtCallback := func(br *browser) func() {
			br.c.CheckRedirect = func(r *http.Request, _ []*http.Request) error {
				if r.URL.Path == "/oauth/callback" {
					return http.ErrUseLastResponse
				}
				return nil
			}
			return func() { br.c.CheckRedirect = nil }
		}
		callbackOf := func(br *browser, key, extra string) string {
			undo := stopAtCallback(br)
			defer undo()
			p := br.open(t, connectURL(key, tok, extra))
			if p.status != http.StatusFound {
				t.Fatalf("the provider did not redirect back: %d %s", p.status, p.body)
			}
			return p.header.Get("Location")
		}

		br := ob.browser(t)
		cb := callbackOf(br, "fo", "ws_client_id=replay")
		if p := br.open(t, cb); p.status != 200 {
			t.Fatalf("first callback: %d %s", p.status, p.body)
		}
		if p := br.open(t, cb); p.status != 400 || p.errorType() != "state_err" {
			t.Errorf("replayed callback: %d %v", p.status, p.msg)
		}
		if n := len(ob.prov.tokenCalls()); n != 1 {
			t.Errorf("the replay reached the token endpoint: %d calls", n)
		}

		// A forged state.
		u, _ := url.Parse(cb)
		q := u.Query()
		q.Set("state", "forged-"+rand.Text())
		u.RawQuery = q.Encode()
		if p := br.open(t, u.String()); p.status != 400 || p.errorType() != "state_err" {
			t.Errorf("forged state: %d %v", p.status, p.msg)
		}
		// No state at all.
		if p := br.open(t, "https://connect.example.com/oauth/callback?code=x"); p.status != 400 || p.errorType() != "state_err" {
			t.Errorf("no state: %d %v", p.status, p.msg)
		}

		// The right state in another browser: the cookie is missing.
		cb = callbackOf(br, "fo", "ws_client_id=stolen")
		if p := ob.browser(t).open(t, cb); p.status != 400 || p.errorType() != "state_cookie_err" {
			t.Errorf("callback in another browser: %d %v", p.status, p.msg)
		}
		// ... and the flow is spent: the right browser cannot use it now.
		if p := br.open(t, cb); p.status != 400 || p.errorType() != "state_err" {
			t.Errorf("callback after a failed one: %d %v", p.status, p.msg)
		}
		st := ob.mustDo(t, 200, req{method: "GET", path: "/oauth/status/stolen", key: tok})
		if d := st.obj()["data"].(map[string]any); d["status"] != "error" || d["error"].(map[string]any)["type"] != "state_cookie_err" {
			t.Errorf("status of the stolen flow: %s", st.raw)
		}

		// Expired: the end user took longer than the flow's 15 minutes.
		cb = callbackOf(br, "fo", "")
		ob.clock.advance(connections.DefaultFlowTTL + time.Second)
		if p := br.open(t, cb); p.status != 400 || p.errorType() != "state_err" {
			t.Errorf("expired flow: %d %v", p.status, p.msg)
		}
		tok = ob.session(t, `{"tags":{"end_user_id":"u1"}}`)

		// The provider sends the user back with an error.
		ob.prov.set(func(p *oauthProvider) { p.deny = true })
		p := br.open(t, connectURL("fo", tok, "ws_client_id=denied"))
		if p.status != 400 || p.errorType() != "callback_err" || !strings.Contains(p.payload()["message"].(string), "access_denied") {
			t.Errorf("denied: %d %v", p.status, p.msg)
		}
		ob.prov.set(func(p *oauthProvider) { p.deny = false })

		if n := len(ob.connections(t)); n != 1 {
			t.Errorf("%d connections, want only the first flow's", n)
		}
		if n := len(ob.prov.tokenCalls()); n != 1 {
			t.Errorf("%d token calls, want 1", n)
		}
	})
}

// TestOAuthTokenFailure: a refused code exchange answers token_err, writes
// no connection and sends an auth webhook with success false.
func TestOAuthTokenFailure(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		ob := oauthSetup(t, b)
		tok := ob.session(t, `{"tags":{"end_user_id":"u1"}}`)
		ob.prov.set(func(p *oauthProvider) { p.failToken = true })
		p := ob.browser(t).open(t, connectURL("fo", tok, ""))
		if p.status != 400 || p.errorType() != "token_err" || !strings.Contains(p.payload()["message"].(string), "invalid_grant") {
			t.Fatalf("token failure: %d %v", p.status, p.msg)
		}
		if strings.Contains(p.body, "fo-secret") {
			t.Error("the page shows the client secret")
		}
		if n := len(ob.connections(t)); n != 0 {
			t.Errorf("%d connections after a failed exchange", n)
		}
		ev := authEvents(ob.events)
		if len(ev) != 1 || ev[0].Success || ev[0].Error == nil || ev[0].Error.Type != "token_err" || ev[0].Operation != "creation" ||
			ev[0].Tags["end_user_id"] != "u1" {
			t.Errorf("auth webhooks %+v", ev)
		}
	})
}

// TestOAuthConnectErrors: /oauth/connect refuses, with a 400 (or 401) page
// and no trip to the provider: a disallowed integration, an unknown one,
// an integration that is not OAuth, expired, unknown and missing session
// tokens, a public key, own OAuth credentials the session does not offer,
// and a malformed parameter.
func TestOAuthConnectErrors(t *testing.T) {
	t.Parallel()
	ob := oauthSetup(t, sqliteBackend(t))
	expired := ob.session(t, `{"tags":{"end_user_id":"u1"}}`)
	ob.clock.advance(31 * time.Minute)
	tok := ob.session(t, `{"tags":{"end_user_id":"u1"},"allowed_integrations":["fo","key1","f1"]}`)
	tok2 := ob.session(t, `{"tags":{"end_user_id":"u1"}}`)
	br := ob.browser(t)
	for _, tc := range []struct {
		name, url string
		status    int
		errType   string
	}{
		{"disallowed", connectURL("fnp", tok, ""), 400, "integration_not_allowed"},
		{"unknown integration", connectURL("nope", tok2, ""), 404, "unknown_config_key"},
		{"not oauth", connectURL("key1", tok, ""), 400, "auth_mode_err"},
		{"expired session", connectURL("fo", expired, ""), 401, "unknown_connect_session_token"},
		{"unknown session", connectURL("fo", "nango_connect_session_"+strings.Repeat("0", 64), ""), 401, "unknown_connect_session_token"},
		{"no session", "https://connect.example.com/oauth/connect/fo", 401, "missing_connect_session_token"},
		{"public key", "https://connect.example.com/oauth/connect/fo?public_key=abc", 401, "deprecated_authentication"},
		{"own app not offered", connectURL("fo", tok, "credentials%5Boauth_client_id_override%5D=own-client&credentials%5Boauth_client_secret_override%5D=own-secret"), 400, "url_param_err"},
		{"bad params", connectURL("fo", tok, "params%5B%5D=x"), 400, "invalid_query_params"},
		{"bad ws_client_id", connectURL("fo", tok, "ws_client_id=a%20b"), 400, "url_param_err"},
	} {
		p := br.open(t, tc.url)
		if p.status != tc.status || p.errorType() != tc.errType {
			t.Errorf("%s: %d %v, want %d %s", tc.name, p.status, p.msg, tc.status, tc.errType)
		}
		if p.url.Path != "/oauth/connect/"+path.Base(p.url.Path) {
			t.Errorf("%s: the popup went to %s", tc.name, p.url)
		}
		if csp := p.header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'nonce-") || strings.Contains(csp, "unsafe-inline") {
			t.Errorf("%s: CSP %q", tc.name, csp)
		}
	}
	if n := len(ob.prov.authorize); n != 0 {
		t.Errorf("the provider saw %d authorization requests", n)
	}
	if n := len(ob.connections(t)); n != 0 {
		t.Errorf("%d connections", n)
	}
}

// TestOAuthOwnApp: a session whose defaults offer the end user's own OAuth
// app (empty client id and secret overrides) requires it, and the flow,
// the token exchange and later refreshes use it.
func TestOAuthOwnApp(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		ob := oauthSetup(t, b)
		tok := ob.session(t, `{"tags":{"end_user_id":"u1"},"integrations_config_defaults":{"fo":{"connection_config":
			{"oauth_client_id_override":"","oauth_client_secret_override":""}}}}`)
		br := ob.browser(t)
		if p := br.open(t, connectURL("fo", tok, "")); p.status != 400 || p.errorType() != "url_param_err" {
			t.Fatalf("without own app credentials: %d %v", p.status, p.msg)
		}
		id := ob.mustConnect(t, br, "fo", tok, "credentials%5Boauth_client_id_override%5D=own-client&credentials%5Boauth_client_secret_override%5D=own-secret")
		if aq := ob.prov.lastAuthorize(); aq.Get("client_id") != "own-client" {
			t.Errorf("authorization with client %q", aq.Get("client_id"))
		}
		calls := ob.prov.tokenCalls()
		if calls[len(calls)-1].Get("client_id") != "own-client" {
			t.Errorf("token exchange with client %q", calls[len(calls)-1].Get("client_id"))
		}
		c, err := ob.svc.Connections().Get(t.Context(), ob.env.ID, "fo", id, connections.GetOptions{ForceRefresh: true})
		if err != nil {
			t.Fatal(err)
		}
		calls = ob.prov.tokenCalls()
		if last := calls[len(calls)-1]; last.Get("grant_type") != "refresh_token" || last.Get("client_id") != "own-client" || c.Credentials.AccessToken != "at-2" {
			t.Errorf("refresh with %v gave %q", last, c.Credentials.AccessToken)
		}
	})
}

// TestOAuthReconnect: a reconnect session re-authorizes its connection
// through the popup: same connection id, new tokens, operation override.
func TestOAuthReconnect(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		ob := oauthSetup(t, b)
		tok := ob.session(t, `{"tags":{"end_user_id":"u1"}}`)
		br := ob.browser(t)
		id := ob.mustConnect(t, br, "fo", tok, "params%5Bsubdomain%5D=acme")
		r := ob.mustDo(t, 201, req{method: "POST", path: "/connect/sessions/reconnect",
			body: fmt.Sprintf(`{"connection_id":%q,"integration_id":"fo"}`, id)})
		rtok := r.obj()["data"].(map[string]any)["token"].(string)
		if p := br.open(t, connectURL("fo", rtok, "connection_id=someone-else")); p.status != 400 || p.errorType() != "url_param_err" {
			t.Errorf("reconnect of another connection: %d %v", p.status, p.msg)
		}
		if got := ob.mustConnect(t, br, "fo", rtok, ""); got != id {
			t.Errorf("reconnect made connection %s, want %s", got, id)
		}
		c := ob.connection(t, "fo", id)
		if c.Credentials.AccessToken != "at-2" || c.ConnectionConfig["subdomain"] != "acme" {
			t.Errorf("after reconnect: %+v %v", c.Credentials, c.ConnectionConfig)
		}
		ev := authEvents(ob.events)
		if len(ev) != 2 || ev[1].Operation != "override" || !ev[1].Success || ev[1].ConnectionID != id {
			t.Errorf("auth webhooks %+v", ev)
		}
		if n := len(ob.connections(t)); n != 1 {
			t.Errorf("%d connections", n)
		}
	})
}

// TestOAuth1Flow: request token, authorization, access token, each signed
// (HMAC-SHA1) as the test's own RFC 5849 code expects.
func TestOAuth1Flow(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		ob := oauthSetup(t, b)
		tok := ob.session(t, `{"tags":{"end_user_id":"u1"}}`)
		id := ob.mustConnect(t, ob.browser(t), "f1", tok, "ws_client_id=o1")
		if len(ob.prov.o1Errors) != 0 {
			t.Fatalf("the provider refused signatures: %v", ob.prov.o1Errors)
		}
		c := ob.connection(t, "f1", id)
		if c.Credentials.Type != "OAUTH1" || c.Credentials.OAuthToken != "o1-access" || c.Credentials.OAuthTokenSecret != "o1-access-secret" {
			t.Errorf("credentials %+v", c.Credentials)
		}
		if ev := authEvents(ob.events); len(ev) != 1 || ev[0].AuthMode != "OAUTH1" || !ev[0].Success {
			t.Errorf("auth webhooks %+v", ev)
		}
		// The request token works once.
		if n := len(ob.prov.o1Requests); n != 0 {
			t.Errorf("%d request tokens left unused", n)
		}
	})
}

// TestAppFlow: a GitHub-App-like installation: the install page sends the
// end user back with installation_id and the state; the service mints an
// installation token with an RS256 JWT of the app, and mints a new one when
// it is near expiry.
func TestAppFlow(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		ob := oauthSetup(t, b)
		tok := ob.session(t, `{"tags":{"end_user_id":"u1"}}`)
		id := ob.mustConnect(t, ob.browser(t), "fapp", tok, "")
		if len(ob.prov.jwtErrors) != 0 {
			t.Fatalf("the provider refused the JWT: %v", ob.prov.jwtErrors)
		}
		c := ob.connection(t, "fapp", id)
		if c.Credentials.Type != "APP" || c.Credentials.AccessToken != "ghs_1" || c.ConnectionConfig["installation_id"] != "99" ||
			c.ConnectionConfig["appPublicLink"] != ob.prov.srv.URL+"/apps/fake-app" {
			t.Errorf("connection %+v %v", c.Credentials, c.ConnectionConfig)
		}
		ob.clock.advance(50 * time.Minute)
		c = ob.connection(t, "fapp", id)
		if c.Credentials.AccessToken != "ghs_2" || !slices.Equal(ob.prov.appTokens, []string{"99", "99"}) {
			t.Errorf("after 50 minutes: token %q, minted for %v", c.Credentials.AccessToken, ob.prov.appTokens)
		}
	})
}

// TestOAuthWebSocket: @nangohq/frontend's WebSocket gets connection_ack
// with a UUID, then one success frame for the flow started with that id
// (or one error frame), and is closed.
func TestOAuthWebSocket(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		ob := oauthSetup(t, b)
		tok := ob.session(t, `{"tags":{"end_user_id":"u1"}}`)
		dial := func() (*websocket.Conn, string) {
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(ob.srv.URL, "http")+"/", &websocket.DialOptions{
				HTTPHeader: http.Header{"Origin": {"https://app.example.org"}}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.CloseNow() })
			var ack map[string]any
			read(t, c, &ack)
			id, _ := ack["ws_client_id"].(string)
			if ack["message_type"] != "connection_ack" || !uuidRE.MatchString(id) {
				t.Fatalf("first frame %v", ack)
			}
			return c, id
		}

		c, wsID := dial()
		id := ob.mustConnect(t, ob.browser(t), "fo", tok, "ws_client_id="+wsID)
		var f map[string]any
		read(t, c, &f)
		sameJSONValue(t, "success frame", f, fmt.Sprintf(
			`{"message_type":"success","provider_config_key":"fo","connection_id":%q,"is_pending":false}`, id))
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		if _, _, err := c.Read(ctx); websocket.CloseStatus(err) != websocket.StatusNormalClosure {
			t.Errorf("after the frame: %v, want a normal close", err)
		}

		// An error at /oauth/connect reaches the socket too.
		c, wsID = dial()
		ob.browser(t).open(t, connectURL("key1", tok, "ws_client_id="+wsID))
		read(t, c, &f)
		if f["message_type"] != "error" || f["error_type"] != "auth_mode_err" || f["error_desc"] == "" {
			t.Errorf("error frame %v", f)
		}
		// And one from the callback.
		c, wsID = dial()
		ob.prov.set(func(p *oauthProvider) { p.deny = true })
		ob.browser(t).open(t, connectURL("fo", tok, "ws_client_id="+wsID))
		read(t, c, &f)
		if f["message_type"] != "error" || f["error_type"] != "callback_err" || f["provider_config_key"] != "fo" {
			t.Errorf("error frame %v", f)
		}
	})
}

func read(t *testing.T, c *websocket.Conn, v *map[string]any) {
	t.Helper()
	*v = nil
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	typ, b, err := c.Read(ctx)
	if err != nil {
		t.Fatalf("reading a frame: %v", err)
	}
	if typ != websocket.MessageText {
		t.Fatalf("frame type %v", typ)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("frame %q: %v", b, err)
	}
}

// FuzzOAuthEndpoints sends arbitrary queries to the OAuth popup routes and
// the status poll: none is answered with a 5xx, and none writes a
// connection.
func FuzzOAuthEndpoints(f *testing.F) {
	ob := oauthSetup(f, sqliteBackend(f))
	ns, err := ob.svc.ConnectSessions().Create(context.Background(), ob.env.ID, connections.CreateSessionInput{Tags: map[string]string{"end_user_id": "u1"}})
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{
		"state=abc&code=x", "oauth_token=t&oauth_verifier=v", "error=access_denied&state=x", "state=%zz",
		"connect_session_token=" + ns.Token + "&ws_client_id=a&params%5Bx%5D=1",
		"connect_session_token=" + ns.Token + "&credentials%5Boauth_client_id_override%5D=a&user_scope=" + strings.Repeat("s", 9000),
		"connect_session_token=" + ns.Token + "&authorization_params%5B%5D=1&params[a]=1&params[a]=2",
		"installation_id=1&setup_action=install&state=q", "\x00", "state=" + strings.Repeat("x", 3000),
	} {
		for route := range 3 {
			f.Add(uint8(route), "fo", s)
		}
	}
	h := ob.svc.Handler()
	f.Fuzz(func(t *testing.T, route uint8, key, query string) {
		// The query goes in raw, malformed escapes and all, as a client
		// can send it.
		u := &url.URL{RawQuery: query}
		switch route % 3 {
		case 0:
			u.Path = "/oauth/connect/" + key
		case 1:
			u.Path = "/oauth/callback"
		default:
			u.Path = "/oauth/status/" + key
		}
		target := u.String()
		r := httptest.NewRequest("GET", "http://connect.example.com/", nil)
		r.URL = u
		r.RequestURI = u.RequestURI()
		if route%3 == 2 {
			r.Header.Set("Authorization", "Bearer "+ns.Token)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code >= 500 {
			t.Fatalf("GET %s = %d %s", target, w.Code, w.Body)
		}
		if l, _ := ob.svc.Connections().List(context.Background(), ob.env.ID, connections.ListInput{}); len(l) != 0 {
			t.Fatalf("GET %s wrote a connection", target)
		}
	})
}
