package connect_test

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/integrations"
)

// optionsProvider is an OAuth 2 provider with the habits the OAuth 2
// options describe: it names the client id "clientId" in the authorization
// request, wants the scope unencoded, sends the code back as "auth_code",
// takes the client's credentials in a Basic header only, and answers with
// the token under "authed_user" and expires_in in milliseconds.
type optionsProvider struct {
	srv *httptest.Server

	mu        sync.Mutex
	rawQuery  string // of the last authorization request
	tokenAuth []string
	tokenForm []url.Values
}

func newOptionsProvider(t *testing.T) *optionsProvider {
	op := &optionsProvider{}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /authorize", func(w http.ResponseWriter, r *http.Request) {
		op.mu.Lock()
		op.rawQuery = r.URL.RawQuery
		op.mu.Unlock()
		q := r.URL.Query()
		back, err := url.Parse(q.Get("redirect_uri"))
		if err != nil || q.Get("clientId") != "opt-client" || q.Has("client_id") {
			http.Error(w, "bad authorization request", 400)
			return
		}
		back.RawQuery = url.Values{"state": {q.Get("state")}, "auth_code": {"the-code"}}.Encode()
		http.Redirect(w, r, back.String(), http.StatusFound)
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		op.mu.Lock()
		op.tokenAuth = append(op.tokenAuth, r.Header.Get("Authorization"))
		op.tokenForm = append(op.tokenForm, r.PostForm)
		op.mu.Unlock()
		want := "Basic " + base64.StdEncoding.EncodeToString([]byte("opt-client:opt-secret"))
		if r.Header.Get("Authorization") != want || r.PostForm.Has("client_secret") || r.PostForm.Get("code") != "the-code" {
			w.WriteHeader(400)
			fmt.Fprint(w, `{"error":"invalid_client"}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"ok":true,"team":{"id":"T9"},"authed_user":{"id":"U1","access_token":"user-token","refresh_token":"user-rt","expires_in":7200000}}`)
	})
	op.srv = httptest.NewServer(mux)
	t.Cleanup(op.srv.Close)
	return op
}

// TestOAuth2Options: a provider read from Nango's format with
// authorization_method, authorization_url_replacements,
// authorization_url_skip_encode, authorization_code_param_in_callback,
// alternate_access_token_response_path and expires_in_unit is connected
// through the popup flow, each option taking effect.
func TestOAuth2Options(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		op := newOptionsProvider(t)
		ps, err := integrations.Load(strings.NewReader(fmt.Sprintf(`
opt-oauth:
    display_name: Options
    auth_mode: OAUTH2
    authorization_url: %[1]s/authorize
    token_url: %[1]s/token
    disable_pkce: true
    scope_separator: ','
    authorization_method: header
    authorization_url_replacements:
        client_id=: clientId=
    authorization_url_skip_encode:
        - scopes
    authorization_code_param_in_callback: auth_code
    alternate_access_token_response_path: authed_user
    expires_in_unit: milliseconds
    token_response_metadata:
        - team.id
    docs: https://example.com/docs
`, op.srv.URL)))
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
		clock := newRefreshClock()
		ob := &oauthBundle{clock: clock, events: &eventLog{}}
		ob.bundle = setup(t, b, func(cfg *connect.Config) {
			cfg.Now = clock.Now
			cfg.Providers = cat
			cfg.Notifier = ob.events
		})
		ob.mustDo(t, 200, req{method: "POST", path: "/integrations", body: `{"provider":"opt-oauth","unique_key":"opt",
			"credentials":{"type":"OAUTH2","client_id":"opt-client","client_secret":"opt-secret","scopes":"https://api.example.com/read,files:write"}}`})
		tok := ob.session(t, `{"tags":{"end_user_id":"u1"},"allowed_integrations":["opt"]}`)
		id := ob.mustConnect(t, ob.browser(t), "opt", tok, "")

		op.mu.Lock()
		raw, auths, forms := op.rawQuery, op.tokenAuth, op.tokenForm
		op.mu.Unlock()
		if !strings.Contains(raw, "clientId=opt-client") || strings.Contains(raw, "client_id=") ||
			!strings.HasSuffix(raw, "&scope=https://api.example.com/read,files:write") {
			t.Errorf("authorization query %s: want clientId and the scope unencoded at the end", raw)
		}
		if len(auths) != 1 || len(forms) != 1 || forms[0].Has("client_id") {
			t.Errorf("token requests: auth %q, forms %v; want one with the client in a Basic header only", auths, forms)
		}
		c := ob.connection(t, "opt", id)
		cr := c.Credentials
		if cr.AccessToken != "user-token" || cr.RefreshToken != "user-rt" || cr.ExpiresAt == nil ||
			!cr.ExpiresAt.Equal(clock.at(2*time.Hour).Truncate(time.Millisecond)) {
			t.Errorf("credentials %+v (expires %v): want the authed_user token, expiring in 2 h", cr, cr.ExpiresAt)
		}
		if c.ConnectionConfig["team.id"] != "T9" {
			t.Errorf("connection config %v", c.ConnectionConfig)
		}
	})
}
