package connect_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/webhooks"
)

// fakeAPI is a provider's API for credential checks and client-credentials
// tokens: GET /me answers 200 to the API key good-key (header X-Api-Key),
// GET /basic/{user} to Basic alice:wonderland (and the user in the path),
// POST /token issues a token to the client cc-id/cc-secret.
type fakeAPI struct {
	srv *httptest.Server

	mu   sync.Mutex
	reqs []fakeRequest
}

type fakeRequest struct {
	method, path string
	header       http.Header
	query        url.Values
	form         url.Values
}

func newFakeAPI(t *testing.T) *fakeAPI {
	f := &fakeAPI{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		f.mu.Lock()
		f.reqs = append(f.reqs, fakeRequest{method: r.Method, path: r.URL.Path, header: r.Header.Clone(), query: r.URL.Query(), form: r.PostForm})
		f.mu.Unlock()
		switch {
		case r.Method == "GET" && r.URL.Path == "/me":
			if r.Header.Get("X-Api-Key") != "good-key" {
				http.Error(w, `{"error":"unauthorized"}`, http.StatusUnauthorized)
				return
			}
			w.Write([]byte(`{"id":"me"}`))
		case r.Method == "GET" && strings.HasPrefix(r.URL.Path, "/basic/"):
			u, p, ok := r.BasicAuth()
			if !ok || u != "alice" || p != "wonderland" || r.URL.Path != "/basic/alice" {
				http.Error(w, "no", http.StatusForbidden)
				return
			}
			w.Write([]byte(`{}`))
		case r.Method == "POST" && r.URL.Path == "/token":
			w.Header().Set("Content-Type", "application/json")
			if r.PostForm.Get("client_id") != "cc-id" || r.PostForm.Get("client_secret") != "cc-secret" {
				w.WriteHeader(http.StatusUnauthorized)
				w.Write([]byte(`{"error":"invalid_client","error_description":"unknown client"}`))
				return
			}
			w.Write([]byte(`{"access_token":"cc-token-1","token_type":"bearer","expires_in":3600,"instance":"eu-1"}`))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAPI) requests() []fakeRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeRequest(nil), f.reqs...)
}

// sessionCatalog is the default catalogue plus fake providers on the fake
// API: fake-apikey (verified with GET /missing then GET /me, a required
// tenant with a pattern and an optional region), fake-basic (verified with
// GET /basic/${credentials.username}), fake-plain (an API key without
// verification), fake-cc (client credentials) and fake-none.
func sessionCatalog(t *testing.T, f *fakeAPI) *integrations.Catalog {
	t.Helper()
	base, err := integrations.DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	apiKey := map[string]integrations.FieldSpec{"apiKey": {Title: "API key", Secret: true}}
	cat, err := base.With(
		&integrations.Provider{Name: "fake-apikey", DisplayName: "Fake API key", AuthMode: integrations.AuthModeAPIKey,
			Proxy: &integrations.Proxy{BaseURL: f.srv.URL,
				Headers:      map[string]string{"X-Api-Key": "${apiKey}", "X-Tenant": "${connectionConfig.tenant}", "X-Region": "${connectionConfig.region}"},
				Query:        map[string]string{"tenant": "${connectionConfig.tenant}"},
				Verification: &integrations.Verification{Endpoints: []string{"/missing", "/me"}}},
			ConnectionConfig: map[string]integrations.FieldSpec{
				"tenant": {Title: "Tenant", Pattern: "^[a-z0-9-]+$"},
				"region": {Title: "Region", Optional: true},
			},
			Credentials: apiKey},
		&integrations.Provider{Name: "fake-basic", DisplayName: "Fake Basic", AuthMode: integrations.AuthModeBasic,
			Proxy: &integrations.Proxy{BaseURL: f.srv.URL,
				Verification: &integrations.Verification{Endpoints: []string{"/basic/${credentials.username}"}}},
			Credentials: map[string]integrations.FieldSpec{"username": {Title: "User"}, "password": {Title: "Password", Secret: true}}},
		&integrations.Provider{Name: "fake-plain", DisplayName: "Fake plain", AuthMode: integrations.AuthModeAPIKey,
			Proxy:       &integrations.Proxy{BaseURL: f.srv.URL, Headers: map[string]string{"Authorization": "Bearer ${apiKey}"}},
			Credentials: apiKey},
		&integrations.Provider{Name: "fake-cc", DisplayName: "Fake CC", AuthMode: integrations.AuthModeOAuth2CC,
			TokenURL: f.srv.URL + "/token", TokenParams: map[string]string{"audience": "api"}, TokenResponseMetadata: []string{"instance"},
			ConnectionConfig: map[string]integrations.FieldSpec{"oauth_scopes": {Title: "Scopes", Optional: true}}},
		&integrations.Provider{Name: "fake-none", DisplayName: "Fake none", AuthMode: integrations.AuthModeNone},
	)
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

// sessionBundle is a Service on the fake providers with the integrations
// key1 (fake-apikey), basic1 (fake-basic), plain (fake-plain), cc1
// (fake-cc), none1 (fake-none) and gh (github), an atomic clock, and the
// events of its Notifier (unless a mutate replaced it).
type sessionBundle struct {
	*bundle
	api    *fakeAPI
	clock  *refreshClock
	events *eventLog
}

func sessionSetup(t *testing.T, b *backend, mutate ...func(*connect.Config)) *sessionBundle {
	t.Helper()
	sb := &sessionBundle{api: newFakeAPI(t), clock: newRefreshClock(), events: &eventLog{}}
	cat := sessionCatalog(t, sb.api)
	sb.bundle = setup(t, b, append([]func(*connect.Config){func(cfg *connect.Config) {
		cfg.Now = sb.clock.Now
		cfg.Providers = cat
		cfg.Notifier = sb.events
	}}, mutate...)...)
	for _, in := range []string{
		`{"provider":"fake-apikey","unique_key":"key1"}`,
		`{"provider":"fake-basic","unique_key":"basic1"}`,
		`{"provider":"fake-plain","unique_key":"plain"}`,
		`{"provider":"fake-cc","unique_key":"cc1"}`,
		`{"provider":"fake-none","unique_key":"none1"}`,
		`{"provider":"github","unique_key":"gh","credentials":{"type":"OAUTH2","client_id":"cid","client_secret":"csecret"}}`,
	} {
		sb.mustDo(t, 200, req{method: "POST", path: "/integrations", body: in})
	}
	return sb
}

// session creates a connect session and returns its token.
func (bu *bundle) session(t *testing.T, body string) string {
	t.Helper()
	r := bu.mustDo(t, 201, req{method: "POST", path: "/connect/sessions", body: body})
	tok, _ := r.obj()["data"].(map[string]any)["token"].(string)
	if tok == "" {
		t.Fatalf("no token in %s", r.raw)
	}
	return tok
}

var tokenRE = regexp.MustCompile(`^nango_connect_session_[0-9a-f]{64}$`)

func data(t *testing.T, r *response) map[string]any {
	t.Helper()
	d, ok := r.obj()["data"].(map[string]any)
	if !ok {
		t.Fatalf("no data object in %s", r.raw)
	}
	return d
}

// sameJSONValue compares a decoded JSON value with the JSON text want.
func sameJSONValue(t *testing.T, what string, got any, want string) {
	t.Helper()
	var w any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("%s: bad want %s: %v", what, want, err)
	}
	if d := cmp.Diff(w, got); d != "" {
		t.Errorf("%s (-want +got):\n%s", what, d)
	}
}

const fullSessionBody = `{
	"end_user": {"id": "u1", "email": "u1@example.com", "display_name": "User One", "tags": {"Plan": "pro"}},
	"organization": {"id": "org1", "display_name": "Org One"},
	"tags": {"Team": "Red"},
	"allowed_integrations": ["key1", "gh", "key1"],
	"integrations_config_defaults": {
		"gh": {"user_scopes": "a,b", "authorization_params": {"prompt": "consent"},
			"connection_config": {"oauth_scopes_override": "repo", "oauth_client_id_override": "", "oauth_client_secret_override": "very-secret-override"}},
		"key1": {"connection_config": {"region": "eu"}}
	},
	"overrides": {"gh": {"docs_connect": "https://docs.example.com/gh"}},
	"webhook_url_override": "https://hooks.example.com/session"
}`

// TestConnectSessionCreate: POST /connect/sessions answers 201 with a
// token, a connect link and an expiry 30 minutes ahead; GET
// /connect/session shows the session to the connect UI (without the OAuth
// client secret it presets); the token is stored only as its SHA-256.
func TestConnectSessionCreate(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		sb := sessionSetup(t, b)
		sb.mustDo(t, 200, req{method: "PATCH", path: "/integrations/key1", body: `{"display_name":"My key"}`})
		r := sb.mustDo(t, 201, req{method: "POST", path: "/connect/sessions", body: fullSessionBody})
		d := data(t, r)
		tok, _ := d["token"].(string)
		if !tokenRE.MatchString(tok) {
			t.Errorf("token %q", tok)
		}
		if d["expires_at"] != "2026-05-01T12:30:00.000Z" {
			t.Errorf("expires_at %v, want 30 minutes after 2026-05-01T12:00:00Z", d["expires_at"])
		}
		if d["connect_link"] != "https://connect.example.com/connect/?session_token="+tok {
			t.Errorf("connect_link %v", d["connect_link"])
		}
		if len(d) != 3 {
			t.Errorf("data has %d fields: %v", len(d), d)
		}

		got := sb.mustDo(t, 200, req{method: "GET", path: "/connect/session", key: tok})
		if got.header.Get("Access-Control-Allow-Origin") != "*" {
			t.Errorf("GET /connect/session: no CORS header")
		}
		sameJSONValue(t, "GET /connect/session", got.obj(), `{"data":{
			"allowed_integrations": ["key1", "gh"],
			"integrations_config_defaults": {
				"gh": {"user_scopes": "a,b", "authorization_params": {"prompt": "consent"},
					"connection_config": {"oauth_scopes_override": "repo", "oauth_client_id_override": ""}},
				"key1": {"connection_config": {"region": "eu"}}
			},
			"overrides": {"gh": {"docs_connect": "https://docs.example.com/gh"}},
			"tags": {"team": "Red", "plan": "pro", "end_user_id": "u1", "end_user_email": "u1@example.com",
				"end_user_display_name": "User One", "organization_id": "org1", "organization_display_name": "Org One"},
			"endUser": {"id": "u1", "email": "u1@example.com", "display_name": "User One", "tags": {"team": "Red", "plan": "pro"},
				"organization": {"id": "org1", "display_name": "Org One"}},
			"isReconnecting": false,
			"connectUISettings": {"theme": {"light": {"primary": "#00B2E3"}, "dark": {"primary": "#00B2E3"}},
				"defaultTheme": "system", "showWatermark": true},
			"websocketsPath": "/",
			"expires_at": "2026-05-01T12:30:00.000Z"
		}}`)

		// The connect UI lists the allowed integrations with the token.
		list := sb.mustDo(t, 200, req{method: "GET", path: "/integrations", key: tok})
		sameJSONValue(t, "GET /integrations with the session token", list.obj(), `{"data":[
			{"unique_key":"key1","display_name":"My key","provider":"fake-apikey","logo":"https://connect.example.com/providers/fake-apikey/logo.svg",
			 "forward_webhooks":true,"created_at":"2026-05-01T12:00:00.000Z","updated_at":"2026-05-01T12:00:00.000Z"},
			{"unique_key":"gh","display_name":"GitHub","provider":"github","logo":"https://connect.example.com/providers/github/logo.svg",
			 "forward_webhooks":true,"created_at":"2026-05-01T12:00:00.000Z","updated_at":"2026-05-01T12:00:00.000Z"}]}`)

		checkSessionRows(t, b, tok, "very-secret-override")
	})
}

// checkSessionRows reads the raw connect_sessions rows: one holds the
// token's SHA-256, and no column holds the token or the secret.
func checkSessionRows(t *testing.T, b *backend, tok, secret string) {
	t.Helper()
	want := sha256.Sum256([]byte(tok))
	if n := b.count(t, "connect_sessions", "token_hash = $1", want[:]); n != 1 {
		t.Errorf("%d rows hold the token's SHA-256, want 1", n)
	}
	rows := b.rowTexts(t, "connect_sessions")
	if len(rows) == 0 {
		t.Fatal("no connect_sessions row")
	}
	hexPart := strings.TrimPrefix(tok, connections.SessionTokenPrefix)
	for _, row := range rows {
		for _, s := range []string{hexPart, secret, base64.StdEncoding.EncodeToString([]byte(tok))} {
			if strings.Contains(row, s) {
				t.Errorf("a connect_sessions row holds %q in plaintext: %s", s, row)
			}
		}
	}
}

// TestConnectSessionConfig: ConnectUIURL and ConnectSessionTTL shape the
// answer.
func TestConnectSessionConfig(t *testing.T) {
	t.Parallel()
	sb := sessionSetup(t, sqliteBackend(t), func(cfg *connect.Config) {
		cfg.ConnectUIURL = "https://ui.example.com/connect?lang=fr"
		cfg.ConnectSessionTTL = 5 * time.Minute
	})
	d := data(t, sb.mustDo(t, 201, req{method: "POST", path: "/connect/sessions", body: `{"tags":{}}`}))
	tok := d["token"].(string)
	if d["connect_link"] != "https://ui.example.com/connect?lang=fr&session_token="+tok || d["expires_at"] != "2026-05-01T12:05:00.000Z" {
		t.Errorf("answer %v", d)
	}
	for name, mutate := range map[string]func(*connect.Config){
		"relative connect UI": func(cfg *connect.Config) { cfg.ConnectUIURL = "/connect" },
		"negative TTL":        func(cfg *connect.Config) { cfg.ConnectSessionTTL = -time.Minute },
		"negative timeout":    func(cfg *connect.Config) { cfg.CredentialCheckTimeout = -time.Second },
	} {
		cfg := baseConfig(t)
		mutate(&cfg)
		if _, err := connect.New(cfg); err == nil {
			t.Errorf("%s: New succeeded", name)
		}
	}
}

// TestConnectSessionWithoutTags: tags and end_user are both optional. A
// session without either is created (201) and creates connections without
// tags, whose auth webhook has no tags and no end user; the deprecated
// organization alone still becomes its tags.
func TestConnectSessionWithoutTags(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		sb := sessionSetup(t, b)
		for _, tc := range []struct{ body, cid, tags string }{
			{`{}`, "", `{}`},
			{`{"allowed_integrations":["key1"]}`, "", `{}`},
			{`{"organization":{"id":"acme","display_name":"Acme"}}`, "", `{"organization_id":"acme","organization_display_name":"Acme"}`},
		} {
			r := sb.do(t, req{method: "POST", path: "/connect/sessions", body: tc.body})
			if r.status != 201 {
				t.Errorf("POST /connect/sessions %s = %d %s, want 201", tc.body, r.status, r.raw)
				continue
			}
			tok, _ := data(t, r)["token"].(string)
			got := data(t, sb.mustDo(t, 200, req{method: "GET", path: "/connect/session", key: tok}))
			sameJSONValue(t, tc.body+": session tags", got["tags"], tc.tags)
			if got["endUser"] != nil {
				t.Errorf("%s: endUser %v, want null", tc.body, got["endUser"])
			}
			a := sb.mustDo(t, 200, req{method: "POST", path: "/api-auth/api-key/key1?connect_session_token=" + tok + "&params[tenant]=acme", key: "-", body: `{"apiKey":"good-key"}`})
			cid, _ := a.obj()["connectionId"].(string)
			c, err := sb.svc.Connections().Get(t.Context(), sb.env.ID, "key1", cid, connections.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]string{}
			if err := json.Unmarshal([]byte(tc.tags), &want); err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(c.Tags) != fmt.Sprint(want) { // maps print sorted; nil as map[]
				t.Errorf("%s: connection tags %v, want %v", tc.body, c.Tags, want)
			}
			var auth *webhooks.Event
			for _, e := range sb.events.list() {
				if e.ConnectionID == cid && e.Type == webhooks.TypeAuth {
					auth = &e
				}
			}
			if auth == nil {
				t.Fatalf("%s: no auth event for %s in %+v", tc.body, cid, sb.events.list())
			}
			p, _ := json.Marshal(auth.Payload)
			var body map[string]any
			_ = json.Unmarshal(p, &body)
			if tc.body == `{}` && (body["tags"] != nil || body["endUser"] != nil) {
				t.Errorf("auth webhook of a session without tags: %s", p)
			}
		}
	})
}

// TestConnectSessionDelete: DELETE /connect/session answers 204, after
// which the token fails everywhere.
func TestConnectSessionDelete(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		sb := sessionSetup(t, b)
		tok := sb.session(t, `{"end_user":{"id":"u1"}}`)
		other := sb.session(t, `{"end_user":{"id":"u2"}}`)
		r := sb.do(t, req{method: "DELETE", path: "/connect/session", key: tok})
		if r.status != 204 || len(r.raw) != 0 || r.header.Get("Access-Control-Allow-Origin") != "*" {
			t.Fatalf("DELETE /connect/session = %d %q %v", r.status, r.raw, r.header)
		}
		for _, rq := range []req{
			{method: "GET", path: "/connect/session", key: tok},
			{method: "DELETE", path: "/connect/session", key: tok},
			{method: "GET", path: "/integrations", key: tok},
			{method: "POST", path: "/api-auth/api-key/plain?connect_session_token=" + tok, key: "-", body: `{"apiKey":"k"}`},
		} {
			if r := sb.do(t, rq); r.status != 401 || r.errCode() != "unknown_connect_session_token" {
				t.Errorf("%s %s after delete = %d %s", rq.method, rq.path, r.status, r.raw)
			}
		}
		sb.mustDo(t, 200, req{method: "GET", path: "/connect/session", key: other})
	})
}

// TestConnectSessionExpiry: a token works until 30 minutes have passed
// (by Config.Now), then answers 401 unknown_connect_session_token; Prune
// deletes expired sessions.
func TestConnectSessionExpiry(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		sb := sessionSetup(t, b)
		tok := sb.session(t, `{"end_user":{"id":"u1"}}`)
		sb.clock.advance(30*time.Minute - time.Millisecond)
		sb.mustDo(t, 200, req{method: "GET", path: "/connect/session", key: tok})
		sb.clock.advance(time.Millisecond)
		fresh := sb.session(t, `{"end_user":{"id":"u2"}}`)
		for _, rq := range []req{
			{method: "GET", path: "/connect/session", key: tok},
			{method: "GET", path: "/integrations", key: tok},
			{method: "POST", path: "/api-auth/api-key/plain?connect_session_token=" + tok, key: "-", body: `{"apiKey":"k"}`},
			{method: "POST", path: "/auth/unauthenticated/none1?connect_session_token=" + tok, key: "-"},
		} {
			r := sb.do(t, rq)
			if r.status != 401 || r.errCode() != "unknown_connect_session_token" || r.header.Get("Access-Control-Allow-Origin") != "*" {
				t.Errorf("%s %s with an expired token = %d %s", rq.method, rq.path, r.status, r.raw)
			}
		}
		sb.clock.advance(time.Second)
		n, err := sb.svc.ConnectSessions().Prune(t.Context())
		if err != nil || n != 1 {
			t.Errorf("Prune = %d, %v; want 1", n, err)
		}
		sb.mustDo(t, 200, req{method: "GET", path: "/connect/session", key: fresh})
		if conns, _ := sb.svc.Connections().List(t.Context(), sb.env.ID, connections.ListInput{}); len(conns) != 0 {
			t.Errorf("an expired token created %d connections", len(conns))
		}
	})
}

// TestConnectSessionTokenErrors: the 401 codes of the session routes.
func TestConnectSessionTokenErrors(t *testing.T) {
	t.Parallel()
	sb := sessionSetup(t, sqliteBackend(t))
	for _, tc := range []struct {
		name   string
		header string
		code   string
	}{
		{"none", "", "missing_auth_header"},
		{"basic", "Basic eDp5", "malformed_auth_header"},
		{"malformed", "Bearer abc", "invalid_connect_session_token_format"},
		{"short", "Bearer nango_connect_session_abc", "invalid_connect_session_token_format"},
		{"uppercase", "Bearer nango_connect_session_" + strings.Repeat("A", 64), "invalid_connect_session_token_format"},
		{"api key", "Bearer " + sb.key, "invalid_connect_session_token_format"},
		{"unknown", "Bearer nango_connect_session_" + strings.Repeat("0", 64), "unknown_connect_session_token"},
	} {
		h := map[string]string{}
		if tc.header != "" {
			h["Authorization"] = tc.header
		}
		r := sb.do(t, req{method: "GET", path: "/connect/session", key: "-", header: h})
		if r.status != 401 || r.errCode() != tc.code {
			t.Errorf("%s: %d %s, want 401 %s", tc.name, r.status, r.raw, tc.code)
		}
	}
}

// TestConnectSessionTokenIsNotAnAPIKey: a session token opens nothing but
// its own flow: every API route refuses it, except GET /integrations (the
// session's integrations) and GET /providers/{provider}, which the connect
// UI calls with it.
func TestConnectSessionTokenIsNotAnAPIKey(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		sb := sessionSetup(t, b)
		sb.mustDo(t, 201, req{method: "POST", path: "/connections", body: `{"provider_config_key":"plain","connection_id":"c1","api_key":"k"}`})
		tok := sb.session(t, `{"end_user":{"id":"u1"},"allowed_integrations":["plain"]}`)
		for _, rq := range []req{
			{method: "GET", path: "/connections"},
			{method: "GET", path: "/connections/c1?provider_config_key=plain"},
			{method: "DELETE", path: "/connections/c1?provider_config_key=plain"},
			{method: "POST", path: "/connections", body: `{"provider_config_key":"plain","connection_id":"c2","api_key":"k"}`},
			{method: "GET", path: "/integrations/plain"},
			{method: "POST", path: "/integrations", body: `{"provider":"github","unique_key":"x"}`},
			{method: "GET", path: "/providers"},
			{method: "GET", path: "/environment-variables"},
			{method: "POST", path: "/connect/sessions", body: `{"tags":{}}`},
			{method: "POST", path: "/connect/sessions/reconnect", body: `{"connection_id":"c1","integration_id":"plain"}`},
		} {
			rq.key = tok
			if r := sb.do(t, rq); r.status != 401 || r.errCode() != "unknown_account" {
				t.Errorf("%s %s with a session token = %d %s, want 401 unknown_account", rq.method, rq.path, r.status, r.raw)
			}
		}
		list := sb.mustDo(t, 200, req{method: "GET", path: "/integrations", key: tok})
		if d := list.obj()["data"].([]any); len(d) != 1 || d[0].(map[string]any)["unique_key"] != "plain" || list.header.Get("Access-Control-Allow-Origin") != "*" {
			t.Errorf("GET /integrations with the session token: %s", list.raw)
		}
		p := sb.mustDo(t, 200, req{method: "GET", path: "/providers/fake-apikey", key: tok})
		if d := data(t, p); d["auth_mode"] != "API_KEY" || d["logo_url"] != "https://connect.example.com/providers/fake-apikey/logo.svg" {
			t.Errorf("GET /providers/fake-apikey with the session token: %s", p.raw)
		}
		if r := sb.do(t, req{method: "GET", path: "/providers/nope", key: tok}); r.status != 404 || r.errCode() != "not_found" {
			t.Errorf("GET /providers/nope: %d %s", r.status, r.raw)
		}
		if r := sb.do(t, req{method: "GET", path: "/integrations", key: "nango_connect_session_zz"}); r.status != 401 || r.errCode() != "invalid_connect_session_token_format" {
			t.Errorf("GET /integrations with a malformed session token: %d %s", r.status, r.raw)
		}
		// The API key still sees everything, without CORS.
		all := sb.mustDo(t, 200, req{method: "GET", path: "/integrations"})
		if d := all.obj()["data"].([]any); len(d) != 6 || all.header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("GET /integrations with the API key: %s %v", all.raw, all.header)
		}
		// The connection is still there.
		sb.mustDo(t, 200, req{method: "GET", path: "/connections/c1?provider_config_key=plain"})

		// APIHandler mounted under a prefix serves the session token too.
		mux := http.NewServeMux()
		mux.Handle("/api/", http.StripPrefix("/api", sb.svc.APIHandler()))
		srv := httptest.NewServer(mux)
		defer srv.Close()
		rq, _ := http.NewRequest("GET", srv.URL+"/api/integrations", nil)
		rq.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(rq)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("GET /api/integrations with the session token = %d", resp.StatusCode)
		}
	})
}

// TestConnectSessionEnvironments: a session sees only its environment.
func TestConnectSessionEnvironments(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		sb := sessionSetup(t, b)
		ctx := context.Background()
		prod, err := sb.svc.Environments().Create(ctx, environments.CreateInput{Name: "prod"})
		if err != nil {
			t.Fatal(err)
		}
		prodKey, _, err := sb.svc.Environments().CreateAPIKey(ctx, prod.ID, environments.NewAPIKey{Name: "full", Scopes: []string{environments.ScopeAll}})
		if err != nil {
			t.Fatal(err)
		}
		sb.mustDo(t, 200, req{method: "POST", path: "/integrations", key: prodKey, body: `{"provider":"fake-plain","unique_key":"prod-only"}`})
		r := sb.mustDo(t, 201, req{method: "POST", path: "/connect/sessions", key: prodKey, body: `{"tags":{"who":"prod"}}`})
		prodTok := data(t, r)["token"].(string)
		devTok := sb.session(t, `{"tags":{"who":"dev"}}`)

		keys := func(tok string) []string {
			var out []string
			for _, it := range sb.mustDo(t, 200, req{method: "GET", path: "/integrations", key: tok}).obj()["data"].([]any) {
				out = append(out, it.(map[string]any)["unique_key"].(string))
			}
			return out
		}
		if got := keys(prodTok); !cmp.Equal(got, []string{"prod-only"}) {
			t.Errorf("prod session lists %v", got)
		}
		if got := keys(devTok); len(got) != 6 {
			t.Errorf("dev session lists %v", got)
		}
		// The prod token cannot connect a dev integration, nor the dev
		// token a prod one.
		if r := sb.do(t, req{method: "POST", path: "/api-auth/api-key/plain?connect_session_token=" + prodTok, key: "-", body: `{"apiKey":"k"}`}); r.status != 404 || r.errCode() != "unknown_provider_config" {
			t.Errorf("prod token on a dev integration: %d %s", r.status, r.raw)
		}
		if r := sb.do(t, req{method: "POST", path: "/api-auth/api-key/prod-only?connect_session_token=" + devTok, key: "-", body: `{"apiKey":"k"}`}); r.status != 404 || r.errCode() != "unknown_provider_config" {
			t.Errorf("dev token on a prod integration: %d %s", r.status, r.raw)
		}
		// A dev session cannot allow a prod integration.
		if r := sb.do(t, req{method: "POST", path: "/connect/sessions", body: `{"tags":{},"allowed_integrations":["prod-only"]}`}); r.status != 400 || r.errCode() != "invalid_body" {
			t.Errorf("dev session allowing a prod integration: %d %s", r.status, r.raw)
		}
		// The prod session's connection lands in prod, with its tags.
		r = sb.mustDo(t, 200, req{method: "POST", path: "/api-auth/api-key/prod-only?connect_session_token=" + prodTok, key: "-", body: `{"apiKey":"k"}`})
		if l, _ := sb.svc.Connections().List(ctx, prod.ID, connections.ListInput{}); len(l) != 1 || l[0].Tags["who"] != "prod" {
			t.Errorf("prod connections: %+v", l)
		}
		if l, _ := sb.svc.Connections().List(ctx, sb.env.ID, connections.ListInput{}); len(l) != 0 {
			t.Errorf("dev connections: %+v", l)
		}
	})
}

// TestConnectSessionScope: creating sessions needs
// environment:connect_sessions:write.
func TestConnectSessionScope(t *testing.T) {
	t.Parallel()
	sb := sessionSetup(t, sqliteBackend(t))
	ctx := context.Background()
	read, _, err := sb.svc.Environments().CreateAPIKey(ctx, sb.env.ID, environments.NewAPIKey{Name: "read", Scopes: []string{environments.ScopeConnectionsRead}})
	if err != nil {
		t.Fatal(err)
	}
	write, _, err := sb.svc.Environments().CreateAPIKey(ctx, sb.env.ID, environments.NewAPIKey{Name: "sessions", Scopes: []string{environments.ScopeConnectSessionsWrite}})
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/connect/sessions", "/connect/sessions/reconnect"} {
		if r := sb.do(t, req{method: "POST", path: path, key: read, body: `{"tags":{}}`}); r.status != 403 || r.errCode() != "forbidden" {
			t.Errorf("POST %s without the scope: %d %s", path, r.status, r.raw)
		}
	}
	sb.mustDo(t, 201, req{method: "POST", path: "/connect/sessions", key: write, body: `{"tags":{}}`})
	if r := sb.do(t, req{method: "GET", path: "/integrations", key: write}); r.status != 403 {
		t.Errorf("GET /integrations with the sessions-only key: %d", r.status)
	}
}

// TestConnectSessionBadInput: bad session bodies get a 4xx and create no
// session.
func TestConnectSessionBadInput(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		sb := sessionSetup(t, b)
		sb.mustDo(t, 201, req{method: "POST", path: "/connections", body: `{"provider_config_key":"plain","connection_id":"imported","api_key":"k"}`})
		long := strings.Repeat("v", 256)
		many := make([]string, 70)
		for i := range many {
			many[i] = fmt.Sprintf(`"k%d":"v"`, i)
		}
		cases := []struct {
			name, path, body string
			status           int
			code             string
		}{
			{"malformed", "/connect/sessions", `{"tags":`, 400, "invalid_body"},
			{"array", "/connect/sessions", `[]`, 400, "invalid_body"},
			{"empty body", "/connect/sessions", ``, 400, "invalid_body"},
			{"end user without id", "/connect/sessions", `{"end_user":{"email":"a@b.c"}}`, 400, "invalid_body"},
			{"end user wrong type", "/connect/sessions", `{"end_user":"u1"}`, 400, "invalid_body"},
			{"organization without id", "/connect/sessions", `{"tags":{},"organization":{"display_name":"x"}}`, 400, "invalid_body"},
			{"tags wrong type", "/connect/sessions", `{"tags":["a"]}`, 400, "invalid_body"},
			{"tag too long", "/connect/sessions", `{"tags":{"a":"` + long + `"}}`, 400, "invalid_body"},
			{"too many tags", "/connect/sessions", `{"tags":{` + strings.Join(many, ",") + `}}`, 400, "invalid_body"},
			{"NUL in a tag", "/connect/sessions", `{"tags":{"a":"x\u0000y"}}`, 400, "invalid_body"},
			{"unknown allowed integration", "/connect/sessions", `{"tags":{},"allowed_integrations":["key1","nope"]}`, 400, "invalid_body"},
			{"allowed integrations not a list", "/connect/sessions", `{"tags":{},"allowed_integrations":"key1"}`, 400, "invalid_body"},
			{"defaults of unknown integration", "/connect/sessions", `{"tags":{},"integrations_config_defaults":{"nope":{}}}`, 400, "invalid_body"},
			{"defaults config number", "/connect/sessions", `{"tags":{},"integrations_config_defaults":{"key1":{"connection_config":{"region":5}}}}`, 400, "invalid_body"},
			{"defaults empty config key", "/connect/sessions", `{"tags":{},"integrations_config_defaults":{"key1":{"connection_config":{"":"x"}}}}`, 400, "invalid_body"},
			{"override of unknown integration", "/connect/sessions", `{"tags":{},"overrides":{"nope":{"docs_connect":"https://x.example.com"}}}`, 400, "invalid_body"},
			{"override bad docs url", "/connect/sessions", `{"tags":{},"overrides":{"key1":{"docs_connect":"javascript:alert(1)"}}}`, 400, "invalid_body"},
			{"bad webhook url", "/connect/sessions", `{"tags":{},"webhook_url_override":"ftp://x"}`, 400, "invalid_body"},
			{"webhook url wrong type", "/connect/sessions", `{"tags":{},"webhook_url_override":5}`, 400, "invalid_body"},
			{"reconnect malformed", "/connect/sessions/reconnect", `{"connection_id":`, 400, "invalid_body"},
			{"reconnect no connection", "/connect/sessions/reconnect", `{"integration_id":"plain"}`, 400, "invalid_body"},
			{"reconnect no integration", "/connect/sessions/reconnect", `{"connection_id":"imported"}`, 400, "invalid_body"},
			{"reconnect unknown connection", "/connect/sessions/reconnect", `{"connection_id":"nope","integration_id":"plain"}`, 404, "not_found"},
			{"reconnect unknown integration", "/connect/sessions/reconnect", `{"connection_id":"imported","integration_id":"nope"}`, 404, "unknown_provider_config"},
			{"reconnect imported connection", "/connect/sessions/reconnect", `{"connection_id":"imported","integration_id":"plain"}`, 400, "invalid_body"},
		}
		for _, tc := range cases {
			r := sb.do(t, req{method: "POST", path: tc.path, body: tc.body})
			if r.status != tc.status || r.errCode() != tc.code {
				t.Errorf("%s: %d %s, want %d %s", tc.name, r.status, r.raw, tc.status, tc.code)
			}
		}
		r := sb.do(t, req{method: "POST", path: "/connect/sessions", body: `{"tags":{}}`, header: map[string]string{"Content-Type": "text/plain"}})
		if r.status != 415 || r.errCode() != "invalid_content_type" {
			t.Errorf("text/plain: %d %s", r.status, r.raw)
		}
		if n := b.count(t, "connect_sessions", ""); n != 0 {
			t.Errorf("bad input stored %d sessions", n)
		}
	})
}

// TestReconnectSession: only a connection created through a session can be
// reconnected; the reconnect session re-authorizes that connection alone
// (auth webhook of operation override) and replaces its tags.
func TestReconnectSession(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		sb := sessionSetup(t, b)
		ctx := context.Background()
		tok := sb.session(t, `{"end_user":{"id":"u1"},"tags":{"team":"red"},"webhook_url_override":"https://hooks.example.com/a",
			"integrations_config_defaults":{"key1":{"connection_config":{"region":"eu"}}}}`)
		r := sb.mustDo(t, 200, req{method: "POST", path: "/api-auth/api-key/key1?connect_session_token=" + tok + "&params[tenant]=acme", key: "-", body: `{"apiKey":"good-key"}`})
		cid := r.obj()["connectionId"].(string)

		rc := sb.mustDo(t, 201, req{method: "POST", path: "/connect/sessions/reconnect", body: fmt.Sprintf(
			`{"connection_id":%q,"integration_id":"key1","tags":{"team":"blue"}}`, cid)})
		rtok := data(t, rc)["token"].(string)
		if !tokenRE.MatchString(rtok) || data(t, rc)["connect_link"] != "https://connect.example.com/connect/?session_token="+rtok {
			t.Errorf("reconnect answer %s", rc.raw)
		}
		s := data(t, sb.mustDo(t, 200, req{method: "GET", path: "/connect/session", key: rtok}))
		if s["isReconnecting"] != true || !cmp.Equal(s["allowed_integrations"], []any{"key1"}) || s["endUser"] != nil {
			t.Errorf("reconnect session: %v", s)
		}
		// Only its integration and its connection.
		if r := sb.do(t, req{method: "POST", path: "/api-auth/api-key/plain?connect_session_token=" + rtok, key: "-", body: `{"apiKey":"x"}`}); r.status != 400 || r.errCode() != "integration_not_allowed" {
			t.Errorf("reconnect token on another integration: %d %s", r.status, r.raw)
		}
		if r := sb.do(t, req{method: "POST", path: "/api-auth/api-key/key1?connect_session_token=" + rtok + "&connection_id=other", key: "-", body: `{"apiKey":"good-key"}`}); r.status != 400 || r.errCode() != "invalid_query_params" {
			t.Errorf("reconnect token with another connection id: %d %s", r.status, r.raw)
		}
		// A refused key changes nothing.
		if r := sb.do(t, req{method: "POST", path: "/api-auth/api-key/key1?connect_session_token=" + rtok, key: "-", body: `{"apiKey":"wrong"}`}); r.status != 400 || r.errCode() != "connection_validation_failed" {
			t.Errorf("reconnect with a refused key: %d %s", r.status, r.raw)
		}
		before := len(sb.events.list())
		r = sb.mustDo(t, 200, req{method: "POST", path: "/api-auth/api-key/key1?connect_session_token=" + rtok + "&connection_id=" + cid + "&params[region]=us", key: "-", body: `{"apiKey":"good-key"}`})
		if r.obj()["connectionId"] != cid || r.obj()["providerConfigKey"] != "key1" {
			t.Errorf("reconnect answer %s", r.raw)
		}
		c, err := sb.svc.Connections().Get(ctx, sb.env.ID, "key1", cid, connections.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !cmp.Equal(c.Tags, map[string]string{"team": "blue"}) || c.WebhookURLOverride != "https://hooks.example.com/a" ||
			!cmp.Equal(c.ConnectionConfig, map[string]any{"tenant": "acme", "region": "us"}) {
			t.Errorf("reconnected connection: tags %v override %q config %v", c.Tags, c.WebhookURLOverride, c.ConnectionConfig)
		}
		if l, _ := sb.svc.Connections().List(ctx, sb.env.ID, connections.ListInput{}); len(l) != 1 {
			t.Errorf("%d connections after the reconnect, want 1", len(l))
		}
		events := sb.events.list()[before:]
		if len(events) != 1 || events[0].Operation != "override" || events[0].ConnectionID != cid {
			t.Fatalf("events %+v", events)
		}
		// Reconnecting again works (the mark stays), and a connection
		// deleted meanwhile answers 404.
		rtok2 := data(t, sb.mustDo(t, 201, req{method: "POST", path: "/connect/sessions/reconnect", body: fmt.Sprintf(
			`{"connection_id":%q,"integration_id":"key1"}`, cid)}))["token"].(string)
		sb.mustDo(t, 200, req{method: "DELETE", path: "/connections/" + cid + "?provider_config_key=key1"})
		if r := sb.do(t, req{method: "POST", path: "/api-auth/api-key/key1?connect_session_token=" + rtok2, key: "-", body: `{"apiKey":"good-key"}`}); r.status != 404 || r.errCode() != "not_found" {
			t.Errorf("reconnect of a deleted connection: %d %s", r.status, r.raw)
		}
		// Imported again under the same id: not created by a session.
		sb.mustDo(t, 201, req{method: "POST", path: "/connections", body: fmt.Sprintf(`{"provider_config_key":"key1","connection_id":%q,"api_key":"k","connection_config":{"tenant":"t"}}`, cid)})
		if r := sb.do(t, req{method: "POST", path: "/connect/sessions/reconnect", body: fmt.Sprintf(`{"connection_id":%q,"integration_id":"key1"}`, cid)}); r.status != 400 {
			t.Errorf("reconnect of a re-imported connection: %d %s", r.status, r.raw)
		}
	})
}
