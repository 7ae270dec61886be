package connect_test

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/integrations"
)

// noRedirects is a client that returns redirects instead of following
// them, to read where /oauth/connect sends the popup.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// popup opens /oauth/connect without following the redirect.
func (bu *bundle) popup(t *testing.T, key, tok, extra string) (*http.Response, string) {
	t.Helper()
	u := bu.srv.URL + "/oauth/connect/" + key + "?connect_session_token=" + tok
	if extra != "" {
		u += "&" + extra
	}
	resp, err := noRedirects.Get(u)
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

// pemOf is the PEM form of the fake provider's app key.
func pemOf(p *oauthProvider) string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(p.appKey)}))
}

// pageError is the error type the callback page posts, from its body.
func pageError(body string) string {
	m := msgRE.FindStringSubmatch(body)
	if m == nil {
		return ""
	}
	var msg map[string]any
	if json.Unmarshal([]byte(m[1]), &msg) != nil {
		return ""
	}
	p, _ := msg["payload"].(map[string]any)
	s, _ := p["errorType"].(string)
	return s
}

// TestSalesforceHostnameAudit is the audit's reproduction: the backend
// presets Salesforce's login hostname in the connect session, the end user
// sends another one to /oauth/connect. That is 400 invalid_connection_config
// naming params.hostname: no redirect, no flow, nothing stored, so no code
// exchange can ever send client_id, client_secret and code_verifier to the
// end user's host. The preset value itself (or none at all) still works,
// and without a preset the end user may only name a Salesforce host.
func TestSalesforceHostnameAudit(t *testing.T) {
	t.Parallel()
	bu := setup(t, sqliteBackend(t))
	bu.mustDo(t, 200, req{method: "POST", path: "/integrations", body: `{"provider":"salesforce","unique_key":"sf",
		"credentials":{"type":"OAUTH2","client_id":"sf-client","client_secret":"sf-secret"}}`})
	preset := bu.session(t, `{"tags":{"end_user_id":"u1"},"integrations_config_defaults":{"sf":{"connection_config":{"hostname":"acme.my.salesforce.com"}}}}`)

	for _, evil := range []string{"evil.example.com", "attacker.my.salesforce.com", "acme.my.salesforce.com.evil.example", "acme.my.salesforce.com:8443"} {
		resp, body := bu.popup(t, "sf", preset, "ws_client_id=audit&params%5Bhostname%5D="+url.QueryEscape(evil))
		if resp.StatusCode != 400 || resp.Header.Get("Location") != "" || pageError(body) != "invalid_connection_config" {
			t.Errorf("hostname %q over the preset: %d %q %s", evil, resp.StatusCode, resp.Header.Get("Location"), pageError(body))
		}
		if !strings.Contains(body, "params[hostname]") {
			t.Errorf("hostname %q: the page does not name params[hostname]", evil)
		}
	}
	st := bu.mustDo(t, 200, req{method: "GET", path: "/oauth/status/audit", key: preset})
	if e, _ := data(t, st)["error"].(map[string]any); e["type"] != "invalid_connection_config" {
		t.Errorf("status of the refused flow: %s", st.raw)
	}

	for _, extra := range []string{"", "params%5Bhostname%5D=acme.my.salesforce.com"} {
		resp, _ := bu.popup(t, "sf", preset, extra)
		loc, _ := url.Parse(resp.Header.Get("Location"))
		if resp.StatusCode != 302 || loc.Host != "acme.my.salesforce.com" || loc.Path != "/services/oauth2/authorize" {
			t.Errorf("with the preset hostname (%q): %d %s", extra, resp.StatusCode, loc)
		}
	}

	open := bu.session(t, `{"tags":{"end_user_id":"u2"}}`)
	for host, ok := range map[string]bool{"evil.example.com": false, "10.0.0.1": false, "mycompany.my.salesforce.com": true, "": true} {
		resp, body := bu.popup(t, "sf", open, "params%5Bhostname%5D="+url.QueryEscape(host))
		loc, _ := url.Parse(resp.Header.Get("Location"))
		want := host
		if want == "" {
			want = "login.salesforce.com"
		}
		switch {
		case ok && (resp.StatusCode != 302 || loc.Host != want):
			t.Errorf("no preset, hostname %q: %d %s", host, resp.StatusCode, loc)
		case !ok && (resp.StatusCode != 400 || pageError(body) != "invalid_connection_config"):
			t.Errorf("no preset, hostname %q: %d %s", host, resp.StatusCode, pageError(body))
		}
	}
	conns, err := bu.svc.Connections().List(t.Context(), bu.env.ID, connections.ListInput{})
	if err != nil || len(conns) != 0 {
		t.Errorf("%d connections stored (%v)", len(conns), err)
	}
}

// hostPickCatalog: fake providers whose every URL puts the connection
// config value h in the host, followed by the fake servers' port, so that
// a value such as "127.0.0.1:<evil port>/x?" would, unchecked, send the
// request to another server. The fields' patterns accept anything, so that
// what is tested is the rendering of URL templates, not the patterns.
func hostPickCatalog(t *testing.T, good *oauthProvider, api *fakeAPI) *integrations.Catalog {
	t.Helper()
	base, err := integrations.DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	_, gp, _ := net.SplitHostPort(good.srv.Listener.Addr().String())
	_, ap, _ := net.SplitHostPort(api.srv.Listener.Addr().String())
	g := "http://${connectionConfig.h}:" + gp
	a := "http://${connectionConfig.h}:" + ap
	h := map[string]integrations.FieldSpec{"h": {Title: "Host", Pattern: "^.*$"}}
	cat, err := base.With(
		&integrations.Provider{Name: "hp-oauth2", DisplayName: "HP OAuth 2", AuthMode: integrations.AuthModeOAuth2,
			AuthorizationURL: g + "/authorize", TokenURL: g + "/token", RefreshURL: g + "/token",
			Proxy: &integrations.Proxy{BaseURL: g + "/api"}, ConnectionConfig: h},
		&integrations.Provider{Name: "hp-oauth1", DisplayName: "HP OAuth 1", AuthMode: integrations.AuthModeOAuth1,
			RequestURL: g + "/oauth1/request_token", AuthorizationURL: g + "/oauth1/authorize", TokenURL: g + "/oauth1/access_token",
			ConnectionConfig: h},
		&integrations.Provider{Name: "hp-cc", DisplayName: "HP CC", AuthMode: integrations.AuthModeOAuth2CC,
			TokenURL: a + "/token", ConnectionConfig: h},
		&integrations.Provider{Name: "hp-key", DisplayName: "HP key", AuthMode: integrations.AuthModeAPIKey,
			Proxy: &integrations.Proxy{BaseURL: a, Headers: map[string]string{"X-Api-Key": "${apiKey}"},
				Verification: &integrations.Verification{Endpoints: []string{"/me"}}},
			ConnectionConfig: h, Credentials: map[string]integrations.FieldSpec{"apiKey": {Title: "Key", Secret: true}}},
		&integrations.Provider{Name: "hp-app", DisplayName: "HP App", AuthMode: integrations.AuthModeApp,
			AuthorizationURL: "${connectionConfig.appPublicLink}/installations/new",
			TokenURL:         g + "/app/installations/${connectionConfig.installation_id}/access_tokens",
			ConnectionConfig: map[string]integrations.FieldSpec{"h": {Title: "Host", Pattern: "^.*$"},
				"appPublicLink": {Automated: true}, "installation_id": {Automated: true}}},
		&integrations.Provider{Name: "hp-meta", DisplayName: "HP metadata", AuthMode: integrations.AuthModeOAuth2,
			AuthorizationURL: good.srv.URL + "/authorize", TokenURL: "http://${connectionConfig.region}:" + gp + "/token",
			RedirectURIMetadata: []string{"region"},
			ConnectionConfig:    map[string]integrations.FieldSpec{"region": {Automated: true, Pattern: "^.*$"}}},
	)
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

// TestNoValueChoosesTheHostOfAnyURL: a connection config value that would
// move a request to another server (here "127.0.0.1:<evil port>/x?",
// which makes "http://127.0.0.1:<evil port>/x?:<port>/token" of the
// template "http://${connectionConfig.h}:<port>/token") is refused for
// every URL built from a template: authorization, token (code exchange,
// client credentials, OAuth 1 request token, app installation token),
// refresh, verification and proxy base URLs; whether it comes from the end
// user (params, the provider's redirect back), the backend (a session's
// preset, an import) or a row stored before the checks. The evil server
// receives nothing, and nothing is stored. The same value made safe
// ("localhost") goes through to the right server.
func TestNoValueChoosesTheHostOfAnyURL(t *testing.T) {
	t.Parallel()
	clock := newRefreshClock()
	good := newOAuthProvider(t, clock.Now)
	api := newFakeAPI(t)
	evil := newCountingServer(t, http.StatusOK)
	attack := "127.0.0.1:" + evil.port() + "/x?"
	cat := hostPickCatalog(t, good, api)
	bu := setup(t, sqliteBackend(t), func(cfg *connect.Config) {
		cfg.Now = clock.Now
		cfg.Providers = cat
		cfg.ProxyCacheTTL = -1 // rows are changed behind the Service's back below
	})
	for _, in := range []string{
		`{"provider":"hp-oauth2","unique_key":"o2","credentials":{"type":"OAUTH2","client_id":"fo-client","client_secret":"fo-secret"}}`,
		`{"provider":"hp-oauth1","unique_key":"o1","credentials":{"type":"OAUTH1","client_id":"` + o1ConsumerKey + `","client_secret":"` + o1ConsumerSecret + `"}}`,
		`{"provider":"hp-cc","unique_key":"cc"}`,
		`{"provider":"hp-key","unique_key":"key"}`,
		`{"provider":"hp-meta","unique_key":"meta","credentials":{"type":"OAUTH2","client_id":"fo-client","client_secret":"fo-secret"}}`,
	} {
		bu.mustDo(t, 200, req{method: "POST", path: "/integrations", body: in})
	}
	noEvil := func(step string) {
		t.Helper()
		if n := evil.hits.Load(); n != 0 {
			t.Fatalf("%s: the evil server got %d requests", step, n)
		}
	}
	refused := func(step string, r *response, code string) {
		t.Helper()
		if r.status != 400 || r.errCode() != code {
			t.Errorf("%s: %d %s, want 400 %s", step, r.status, r.raw, code)
		}
		noEvil(step)
	}

	// 1. From the end user (params) and from the session's preset.
	q := "params%5Bh%5D=" + url.QueryEscape(attack)
	user := bu.session(t, `{"tags":{"end_user_id":"u1"}}`)
	presetBody, _ := json.Marshal(map[string]any{"tags": map[string]string{"end_user_id": "u1"}, "integrations_config_defaults": map[string]any{
		"o2": map[string]any{"connection_config": map[string]string{"h": attack}}, "o1": map[string]any{"connection_config": map[string]string{"h": attack}},
		"cc": map[string]any{"connection_config": map[string]string{"h": attack}}, "key": map[string]any{"connection_config": map[string]string{"h": attack}}}})
	preset := bu.session(t, string(presetBody))
	for _, tc := range []struct{ tok, extra, who string }{{user, q, "params"}, {preset, "", "preset"}} {
		for _, key := range []string{"o2", "o1"} { // authorization URL; OAuth 1 request token URL
			resp, body := bu.popup(t, key, tc.tok, tc.extra)
			if resp.StatusCode != 400 || pageError(body) != "invalid_connection_config" || resp.Header.Get("Location") != "" {
				t.Errorf("%s, /oauth/connect/%s: %d %s", tc.who, key, resp.StatusCode, pageError(body))
			}
			noEvil(tc.who + " " + key)
		}
		refused(tc.who+", client credentials", bu.auth(t, "/oauth2/auth/cc", tc.tok, tc.extra, `{"client_id":"cc-id","client_secret":"cc-secret"}`), "invalid_connection_config")
		refused(tc.who+", verification", bu.auth(t, "/api-auth/api-key/key", tc.tok, tc.extra, `{"apiKey":"good-key"}`), "invalid_connection_config")
	}

	// 2. From the backend: an import.
	refused("import", bu.do(t, req{method: "POST", path: "/connections", body: `{"provider_config_key":"key","connection_id":"imp","api_key":"k",
		"connection_config":{"h":` + jsonQuote(attack) + `}}`}), "invalid_connection_config")

	// 3. The safe value reaches the right servers.
	br := bu.browser(t)
	p := br.open(t, connectURL("o2", user, "params%5Bh%5D=localhost"))
	if p.status != 200 || p.msg["type"] != connections.CallbackSuccessType {
		t.Fatalf("OAuth 2 with h=localhost: %d %v %s", p.status, p.msg, p.body)
	}
	o2ID := p.payload()["connectionId"].(string)
	r := bu.auth(t, "/oauth2/auth/cc", user, "params%5Bh%5D=localhost", `{"client_id":"cc-id","client_secret":"cc-secret"}`)
	if r.status != 200 {
		t.Fatalf("client credentials with h=localhost: %d %s", r.status, r.raw)
	}
	ccID := r.obj()["connectionId"].(string)
	r = bu.auth(t, "/api-auth/api-key/key", user, "params%5Bh%5D=localhost", `{"apiKey":"good-key"}`)
	if r.status != 200 {
		t.Fatalf("API key with h=localhost: %d %s", r.status, r.raw)
	}
	keyID := r.obj()["connectionId"].(string)
	noEvil("safe values")

	// 4. Rows stored before the checks: refresh (token and refresh URLs),
	// proxy base URL, app installation token.
	poison := func(key, id string) {
		t.Helper()
		c, err := bu.b.store.GetConnection(context.Background(), bu.env.ID, key, id)
		if err != nil {
			t.Fatal(err)
		}
		c.ConnectionConfig["h"] = attack
		if err := bu.b.store.UpdateConnection(context.Background(), c); err != nil {
			t.Fatal(err)
		}
	}
	poison("o2", o2ID)
	poison("cc", ccID)
	poison("key", keyID)
	for key, id := range map[string]string{"o2": o2ID, "cc": ccID} {
		r := bu.do(t, req{method: "GET", path: "/connections/" + id + "?provider_config_key=" + key + "&force_refresh=true"})
		refused("stored row, refresh of "+key, r, "refresh_token_external_error")
		if payload, _ := r.obj()["error"].(map[string]any)["payload"].(map[string]any); payload["error"] != "invalid_connection_config" {
			t.Errorf("refresh of %s: payload %v", key, payload)
		}
	}
	for key, id := range map[string]string{"o2": o2ID, "key": keyID} {
		r := bu.do(t, req{method: "GET", path: "/proxy/items", header: map[string]string{"Connection-Id": id, "Provider-Config-Key": key}})
		refused("stored row, proxy of "+key, r, "invalid_connection_config")
	}
	app := appPickSetup(t, bu, good, attack)
	refused("stored row, app token", bu.do(t, req{method: "GET", path: "/connections/" + app + "?provider_config_key=app&force_refresh=true"}), "refresh_token_external_error")

	// 5. From the provider's redirect back, which the end user's browser
	// carries: hp-meta's token URL takes its host from the callback's
	// region.
	stop := func(r *http.Request, _ []*http.Request) error {
		if r.URL.Path == "/oauth/callback" {
			return http.ErrUseLastResponse
		}
		return nil
	}
	br.c.CheckRedirect = stop
	p = br.open(t, connectURL("meta", user, "ws_client_id=meta"))
	br.c.CheckRedirect = nil
	if p.status != http.StatusFound {
		t.Fatalf("hp-meta did not come back: %d %s", p.status, p.body)
	}
	before := len(good.tokenCalls())
	p = br.open(t, p.header.Get("Location")+"&region="+url.QueryEscape(attack))
	if p.status != 400 || p.errorType() != "callback_err" || len(good.tokenCalls()) != before {
		t.Errorf("callback with an evil region: %d %v", p.status, p.msg)
	}
	noEvil("callback metadata")
}

// appPickSetup adds the hp-app integration and a connection whose stored
// host value is attack, and returns the connection id.
func appPickSetup(t *testing.T, bu *bundle, good *oauthProvider, attack string) string {
	t.Helper()
	creds, _ := json.Marshal(map[string]string{"type": "APP", "app_id": appID, "app_link": "https://github.com/apps/hp",
		"private_key": pemOf(good)})
	bu.mustDo(t, 200, req{method: "POST", path: "/integrations", body: `{"provider":"hp-app","unique_key":"app","credentials":` + string(creds) + `}`})
	bu.mustDo(t, 201, req{method: "POST", path: "/connections", body: `{"provider_config_key":"app","connection_id":"inst-1","access_token":"ghs_0",
		"expires_at":"` + time.Now().Add(time.Minute).UTC().Format(time.RFC3339) + `","connection_config":{"h":"localhost","installation_id":"7"}}`})
	c, err := bu.b.store.GetConnection(context.Background(), bu.env.ID, "app", "inst-1")
	if err != nil {
		t.Fatal(err)
	}
	c.ConnectionConfig["h"] = attack
	if err := bu.b.store.UpdateConnection(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	return "inst-1"
}

func jsonQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestEndUserConfigFollowsTheFields: each end-user value is checked against
// its connection_config field (type, format, prefix and suffix, pattern);
// keys the provider does not declare, and those the service fills itself,
// are refused, each named in errors[].path; the documented special keys
// keep working (oauth_scopes_override is accepted, webhook URLs and OAuth
// client overrides are dropped); a preset value may be repeated, not
// changed, and so may the preset authorization_params and user_scope of
// an OAuth popup.
func TestEndUserConfigFollowsTheFields(t *testing.T) {
	t.Parallel()
	base, err := integrations.DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	api := newFakeAPI(t)
	cat, err := base.With(&integrations.Provider{Name: "typed", DisplayName: "Typed", AuthMode: integrations.AuthModeAPIKey,
		Proxy: &integrations.Proxy{BaseURL: api.srv.URL, Headers: map[string]string{"X-Api-Key": "${apiKey}"}},
		ConnectionConfig: map[string]integrations.FieldSpec{
			"count": {Type: "number", Optional: true},
			"flag":  {Type: "boolean", Optional: true},
			"email": {Format: "email", Optional: true},
			"site":  {Prefix: "https://", Suffix: ".example.com", Pattern: "^[a-z0-9-]+$", Optional: true},
			"auto":  {Automated: true, Optional: true},
		},
		Credentials: map[string]integrations.FieldSpec{"apiKey": {Title: "Key"}}})
	if err != nil {
		t.Fatal(err)
	}
	bu := setup(t, sqliteBackend(t), func(cfg *connect.Config) { cfg.Providers = cat })
	bu.mustDo(t, 200, req{method: "POST", path: "/integrations", body: `{"provider":"typed","unique_key":"typed"}`})
	bu.mustDo(t, 200, req{method: "POST", path: "/integrations", body: `{"provider":"github","unique_key":"gh","credentials":{"type":"OAUTH2","client_id":"c","client_secret":"s"}}`})
	tok := bu.session(t, `{"tags":{"end_user_id":"u1"},"integrations_config_defaults":{"typed":{"connection_config":{"site":"acme"}},
		"gh":{"user_scopes":"repo","authorization_params":{"prompt":"consent"},"connection_config":{"oauth_scopes_override":"read:user"}}}}`)
	for _, tc := range []struct {
		query string
		path  string // the key named in errors[].path; "" for success
	}{
		{"params[count]=12&params[flag]=true&params[email]=a%40b.example&params[site]=acme", ""},
		{"params[oauth_scopes_override]=x&params[webhook_url]=https%3A%2F%2Fevil.example&params[oauth_client_id_override]=x", ""},
		{"params[count]=twelve", "count"},
		{"params[flag]=yes", "flag"},
		{"params[email]=nope", "email"},
		{"params[site]=other", "site"},
		{"params[auto]=x", "auto"},
		{"params[undeclared]=x", "undeclared"},
	} {
		r := bu.auth(t, "/api-auth/api-key/typed", tok, tc.query, `{"apiKey":"k"}`)
		if tc.path == "" {
			if r.status != 200 {
				t.Errorf("%s: %d %s", tc.query, r.status, r.raw)
			}
			continue
		}
		errs, _ := r.obj()["error"].(map[string]any)["errors"].([]any)
		if r.status != 400 || r.errCode() != "invalid_connection_config" || len(errs) != 1 ||
			fmt.Sprint(errs[0].(map[string]any)["path"]) != fmt.Sprint([]any{"params", tc.path}) {
			t.Errorf("%s: %d %s, want params.%s named", tc.query, r.status, r.raw, tc.path)
		}
	}
	// The value is what goes between the prefix and the suffix.
	tok2 := bu.session(t, `{"tags":{"end_user_id":"u2"}}`)
	for _, q := range []string{"params[site]=https%3A%2F%2Facme", "params[site]=acme.example.com"} {
		if r := bu.auth(t, "/api-auth/api-key/typed", tok2, q, `{"apiKey":"k"}`); r.status != 400 || r.errCode() != "invalid_connection_config" {
			t.Errorf("%s: %d %s", q, r.status, r.raw)
		}
	}
	// The OAuth popup: preset scopes, authorization_params and user_scope
	// win.
	for extra, ok := range map[string]bool{
		"params%5Boauth_scopes_override%5D=read%3Auser": true,
		"params%5Boauth_scopes_override%5D=repo":        false,
		"authorization_params%5Bprompt%5D=consent":      true,
		"authorization_params%5Bprompt%5D=none":         false,
		"authorization_params%5Bprompt%5D=undefined":    true,
		"user_scope=repo":                               true,
		"user_scope=admin":                              false,
	} {
		resp, body := bu.popup(t, "gh", tok, extra)
		if ok != (resp.StatusCode == 302) || (!ok && pageError(body) == "") {
			t.Errorf("%s: %d %s", extra, resp.StatusCode, pageError(body))
		}
	}
}
