package connect_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/oplog"
	"github.com/embedauth/connect/webhooks"
)

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// auth posts a frontend client's auth call: no Authorization header, the
// token in the query.
func (bu *bundle) auth(t *testing.T, path, tok, query, body string) *response {
	t.Helper()
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	p := path + sep + "connect_session_token=" + tok
	if query != "" {
		p += "&" + query
	}
	return bu.do(t, req{method: "POST", path: p, key: "-", body: body})
}

func (sb *sessionBundle) connections(t *testing.T) []*connections.Connection {
	t.Helper()
	l, err := sb.svc.Connections().List(t.Context(), sb.env.ID, connections.ListInput{})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func (sb *sessionBundle) connection(t *testing.T, key, id string) *connections.Connection {
	t.Helper()
	c, err := sb.svc.Connections().Get(t.Context(), sb.env.ID, key, id, connections.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestHeadlessAPIKey: the API-key call checks the key against the
// provider's verification endpoints (the second answers 2xx), creates a
// connection with a generated id, the session's tags, webhook URL override
// and connection config (the session's defaults and the end user's params,
// without the OAuth client overrides or a client-side webhook URL), and
// sends the auth webhook in the same transaction. A refused key stores
// nothing.
func TestHeadlessAPIKey(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		sb := sessionSetup(t, b)
		tok := sb.session(t, `{"end_user":{"id":"u1","email":"u1@example.com"},"organization":{"id":"org1"},"tags":{"Team":"Red"},
			"allowed_integrations":["key1","basic1"],"webhook_url_override":"https://hooks.example.com/session",
			"integrations_config_defaults":{"key1":{"connection_config":{"region":"eu",
				"oauth_client_secret_override":"s3cret","oauth_client_id_override":"id"}}}}`)

		// A refused key: 400, nothing stored, no webhook.
		r := sb.auth(t, "/api-auth/api-key/key1", tok, "params[tenant]=acme", `{"apiKey":"bad-key"}`)
		if r.status != 400 || r.errCode() != "connection_validation_failed" || r.header.Get("Access-Control-Allow-Origin") != "*" {
			t.Fatalf("refused key: %d %s", r.status, r.raw)
		}
		if msg := r.obj()["error"].(map[string]any)["message"].(string); !strings.Contains(msg, "401") || strings.Contains(msg, "bad-key") {
			t.Errorf("refusal message %q", msg)
		}
		if n := len(sb.connections(t)); n != 0 || len(sb.events.list()) != 0 {
			t.Fatalf("a refused key stored %d connections and %d events", n, len(sb.events.list()))
		}
		logs, err := sb.svc.ListLogs(t.Context(), oplog.Filter{EnvironmentID: sb.env.ID, Type: "auth"})
		if err != nil || len(logs) != 1 || logs[0].Status != oplog.StatusFailure || logs[0].Meta["error"] != "connection_validation_failed" {
			t.Errorf("log of the refusal: %+v %v", logs, err)
		}

		// The good key, with a client-side connection id and webhook URL.
		r = sb.auth(t, "/api-auth/api-key/key1", tok, "connection_id=mine&params[tenant]=acme&params%5Bwebhook_url%5D=https%3A%2F%2Fevil.example.com", `{"apiKey":"good-key"}`)
		if r.status != 200 || r.header.Get("Access-Control-Allow-Origin") != "*" {
			t.Fatalf("good key: %d %s", r.status, r.raw)
		}
		cid, _ := r.obj()["connectionId"].(string)
		if !uuidRE.MatchString(cid) || r.obj()["providerConfigKey"] != "key1" || len(r.obj()) != 2 {
			t.Errorf("answer %s, want a generated UUID connection id", r.raw)
		}
		c := sb.connection(t, "key1", cid)
		wantTags := map[string]string{"team": "Red", "end_user_id": "u1", "end_user_email": "u1@example.com", "organization_id": "org1"}
		if d := cmp.Diff(wantTags, c.Tags); d != "" {
			t.Errorf("tags (-want +got):\n%s", d)
		}
		if d := cmp.Diff(map[string]any{"tenant": "acme", "region": "eu"}, c.ConnectionConfig); d != "" {
			t.Errorf("connection config (-want +got):\n%s", d)
		}
		if c.WebhookURLOverride != "https://hooks.example.com/session" || c.Credentials.Type != "API_KEY" || c.Credentials.APIKey != "good-key" || c.AuthMode != "API_KEY" {
			t.Errorf("connection: override %q credentials %+v", c.WebhookURLOverride, c.Credentials)
		}

		// The provider saw the key the way the proxy would send it.
		var me []fakeRequest
		for _, rq := range sb.api.requests() {
			if rq.path == "/me" {
				me = append(me, rq)
			}
		}
		if len(me) != 2 {
			t.Fatalf("%d requests to /me, want 2", len(me))
		}
		last := me[1]
		if last.header.Get("X-Api-Key") != "good-key" || last.header.Get("X-Tenant") != "acme" || last.header.Get("X-Region") != "eu" ||
			last.query.Get("tenant") != "acme" || last.method != "GET" {
			t.Errorf("verification request: %+v", last)
		}

		events := sb.events.list()
		if len(events) != 1 {
			t.Fatalf("%d events, want 1", len(events))
		}
		e := events[0]
		if e.Type != webhooks.TypeAuth || e.Operation != webhooks.OperationCreation || e.ConnectionID != cid || e.IntegrationKey != "key1" || e.EnvironmentID != sb.env.ID {
			t.Errorf("event %+v", e)
		}
		body, _ := json.Marshal(e.Payload)
		var payload any
		_ = json.Unmarshal(body, &payload)
		sameJSONValue(t, "auth payload", payload, `{"from":"","type":"","connectionId":"`+cid+`","authMode":"API_KEY","providerConfigKey":"key1",
			"provider":"fake-apikey","environment":"dev","operation":"creation","success":true,
			"tags":{"team":"Red","end_user_id":"u1","end_user_email":"u1@example.com","organization_id":"org1"},
			"endUser":{"endUserId":"u1","organizationId":"org1","endUserEmail":"u1@example.com","tags":{"team":"Red"}}}`)

		logs, err = sb.svc.ListLogs(t.Context(), oplog.Filter{EnvironmentID: sb.env.ID, Type: "auth", ConnectionID: cid})
		if err != nil || len(logs) != 1 || logs[0].Operation != "creation" || logs[0].Status != oplog.StatusSuccess {
			t.Errorf("log of the creation: %+v %v", logs, err)
		}

		// The session can connect again: a second connection.
		r = sb.auth(t, "/api-auth/api-key/key1", tok, "params[tenant]=acme", `{"apiKey":"good-key"}`)
		if r.status != 200 || r.obj()["connectionId"] == cid {
			t.Errorf("second call: %d %s", r.status, r.raw)
		}
		if n := len(sb.connections(t)); n != 2 {
			t.Errorf("%d connections, want 2", n)
		}
	})
}

// TestHeadlessWebhookDelivery: with the default Notifier the auth webhook
// is queued in the outbox for the session's webhook URL override alone.
func TestHeadlessWebhookDelivery(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		api := newFakeAPI(t)
		bu := setup(t, b, func(cfg *connect.Config) { cfg.Providers = sessionCatalog(t, api) })
		urls := []string{"https://hooks.example.com/env"}
		if _, err := bu.svc.Environments().Update(t.Context(), bu.env.ID, environments.UpdateInput{WebhookURLs: &urls}); err != nil {
			t.Fatal(err)
		}
		bu.mustDo(t, 200, req{method: "POST", path: "/integrations", body: `{"provider":"fake-plain","unique_key":"plain"}`})
		tok := bu.session(t, `{"tags":{"customer":"c-42"},"webhook_url_override":"https://hooks.example.com/session"}`)
		r := bu.auth(t, "/api-auth/api-key/plain", tok, "", `{"apiKey":"anything"}`)
		if r.status != 200 {
			t.Fatalf("%d %s", r.status, r.raw)
		}
		cid := r.obj()["connectionId"].(string)
		ds, err := bu.svc.ListWebhookDeliveries(t.Context(), webhooks.DeliveryFilter{EnvironmentID: bu.env.ID})
		if err != nil {
			t.Fatal(err)
		}
		if len(ds) != 1 || ds[0].URL != "https://hooks.example.com/session" || ds[0].ConnectionID != cid || ds[0].Type != "auth" {
			t.Fatalf("deliveries %+v", ds)
		}
		var body map[string]any
		if err := json.Unmarshal(ds[0].Body, &body); err != nil {
			t.Fatal(err)
		}
		if body["type"] != "auth" || body["operation"] != "creation" || body["from"] != "nango" || body["connectionId"] != cid ||
			!cmp.Equal(body["tags"], map[string]any{"customer": "c-42"}) || body["endUser"] != nil {
			t.Errorf("webhook body %v", body)
		}
	})
}

// TestHeadlessBasic: Basic credentials are checked with HTTP Basic
// authentication on the verification endpoint.
func TestHeadlessBasic(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		sb := sessionSetup(t, b)
		tok := sb.session(t, `{"tags":{"who":"alice"}}`)
		for _, tc := range []struct{ body, code string }{
			{`{"username":"alice","password":"wrong"}`, "connection_validation_failed"},
			{`{"username":"bob","password":"wonderland"}`, "connection_validation_failed"},
			{`{"password":"wonderland"}`, "invalid_credentials"},
			{`{"username":"alice"}`, "invalid_credentials"}, // the provider declares a required password
		} {
			if r := sb.auth(t, "/api-auth/basic/basic1", tok, "", tc.body); r.status != 400 || r.errCode() != tc.code {
				t.Errorf("%s: %d %s, want 400 %s", tc.body, r.status, r.raw, tc.code)
			}
		}
		if n := len(sb.connections(t)); n != 0 {
			t.Fatalf("refused credentials stored %d connections", n)
		}
		r := sb.auth(t, "/api-auth/basic/basic1", tok, "", `{"username":"alice","password":"wonderland"}`)
		if r.status != 200 {
			t.Fatalf("%d %s", r.status, r.raw)
		}
		c := sb.connection(t, "basic1", r.obj()["connectionId"].(string))
		if c.Credentials.Type != "BASIC" || c.Credentials.Username != "alice" || c.Credentials.Password != "wonderland" || c.Tags["who"] != "alice" {
			t.Errorf("connection %+v credentials %+v", c, c.Credentials)
		}
	})
}

// TestHeadlessClientCredentials: POST /oauth2/auth fetches a token with the
// client_credentials grant and stores OAUTH2_CC credentials.
func TestHeadlessClientCredentials(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		sb := sessionSetup(t, b)
		tok := sb.session(t, `{"tags":{}}`)
		r := sb.auth(t, "/oauth2/auth/cc1", tok, "", `{"client_id":"cc-id","client_secret":"wrong"}`)
		if r.status != 400 || r.errCode() != "connection_validation_failed" || strings.Contains(string(r.raw), "wrong") {
			t.Errorf("refused client: %d %s", r.status, r.raw)
		}
		if n := len(sb.connections(t)); n != 0 {
			t.Fatalf("a refused client stored %d connections", n)
		}
		r = sb.auth(t, "/oauth2/auth/cc1", tok, "", `{"client_id":"cc-id","client_secret":"cc-secret"}`)
		if r.status != 200 {
			t.Fatalf("%d %s", r.status, r.raw)
		}
		c := sb.connection(t, "cc1", r.obj()["connectionId"].(string))
		cr := c.Credentials
		if cr.Type != "OAUTH2_CC" || cr.Token != "cc-token-1" || cr.ClientID != "cc-id" || cr.ClientSecret != "cc-secret" ||
			cr.ExpiresAt == nil || !cr.ExpiresAt.Equal(sb.clock.at(time.Hour)) {
			t.Errorf("credentials %+v", cr)
		}
		if c.ConnectionConfig["instance"] != "eu-1" {
			t.Errorf("token_response_metadata not copied: %v", c.ConnectionConfig)
		}
		reqs := sb.api.requests()
		last := reqs[len(reqs)-1]
		if last.path != "/token" || last.form.Get("grant_type") != "client_credentials" || last.form.Get("audience") != "api" {
			t.Errorf("token request %+v", last)
		}
	})
}

// TestClientCredentialsScopes: a client-credentials connection whose
// config has oauth_scopes (a field okta-cc declares) asks for them as the
// scope of its token requests, when connected and when refreshed; one
// without asks for none.
func TestClientCredentialsScopes(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		sb := sessionSetup(t, b)
		lastForm := func() url.Values {
			reqs := sb.api.requests()
			return reqs[len(reqs)-1].form
		}
		for _, tc := range []struct{ query, scope string }{
			{"params%5Boauth_scopes%5D=okta.users.read+okta.groups.read", "okta.users.read okta.groups.read"},
			{"", ""},
		} {
			tok := sb.session(t, `{"tags":{}}`)
			r := sb.auth(t, "/oauth2/auth/cc1", tok, tc.query, `{"client_id":"cc-id","client_secret":"cc-secret"}`)
			if r.status != 200 {
				t.Fatalf("%q: %d %s", tc.query, r.status, r.raw)
			}
			f := lastForm()
			if f.Get("scope") != tc.scope || f.Has("scope") != (tc.scope != "") || f.Get("audience") != "api" {
				t.Errorf("%q: token request %v", tc.query, f)
			}
			id := r.obj()["connectionId"].(string)
			if _, err := sb.svc.Connections().Get(t.Context(), sb.env.ID, "cc1", id, connections.GetOptions{ForceRefresh: true}); err != nil {
				t.Fatal(err)
			}
			if f := lastForm(); f.Get("grant_type") != "client_credentials" || f.Get("scope") != tc.scope || f.Has("scope") != (tc.scope != "") {
				t.Errorf("%q: refresh request %v", tc.query, f)
			}
		}
	})
}

// TestHeadlessUnauthenticated: POST /auth/unauthenticated with no body
// connects a NONE provider.
func TestHeadlessUnauthenticated(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		sb := sessionSetup(t, b)
		tok := sb.session(t, `{"end_user":{"id":"u9"}}`)
		r := sb.auth(t, "/auth/unauthenticated/none1", tok, "", "")
		if r.status != 200 {
			t.Fatalf("%d %s", r.status, r.raw)
		}
		c := sb.connection(t, "none1", r.obj()["connectionId"].(string))
		if c.Credentials.Type != "NONE" || c.Tags["end_user_id"] != "u9" {
			t.Errorf("connection %+v", c)
		}
		if e := sb.events.list(); len(e) != 1 || e[0].Payload.(*webhooks.AuthPayload).AuthMode != "NONE" {
			t.Errorf("events %+v", e)
		}
	})
}

// TestHeadlessParams: params[...] in either bracket form become connection
// config beside the session's defaults, which the end user may repeat but
// not change; required, malformed and undeclared values are refused with
// invalid_connection_config naming the key. (These cases used to let the
// end user replace a preset value and add undeclared keys.)
func TestHeadlessParams(t *testing.T) {
	t.Parallel()
	sb := sessionSetup(t, sqliteBackend(t))
	tok := sb.session(t, `{"tags":{},"integrations_config_defaults":{"key1":{"connection_config":{"region":"eu"}}}}`)
	for _, tc := range []struct {
		query  string
		status int
		code   string
		config map[string]any
	}{
		{"params[tenant]=acme", 200, "", map[string]any{"tenant": "acme", "region": "eu"}},
		{"params%5Btenant%5D=acme-2&params%5Bregion%5D=eu", 200, "", map[string]any{"tenant": "acme-2", "region": "eu"}},
		{"params[tenant]=t1&params[webhookUrl]=https://x.example.com&params[oauth_client_secret_override]=x", 200, "", map[string]any{"tenant": "t1", "region": "eu"}},
		{"params%5Btenant%5D=acme-2&params%5Bregion%5D=us+east", 400, "invalid_connection_config", nil},
		{"params[tenant]=t1&params[extra%20key]=a%26b", 400, "invalid_connection_config", nil},
		{"", 400, "missing_connection_config", nil},
		{"params[region]=eu", 400, "missing_connection_config", nil},
		{"params[tenant]=", 400, "missing_connection_config", nil},
		{"params[tenant]=ACME!", 400, "invalid_connection_config", nil},
		{"params[tenant]=a&params[tenant]=b", 400, "invalid_query_params", nil},
		{"params[]=a", 400, "invalid_query_params", nil},
		{"params[tenant=a", 400, "invalid_query_params", nil},
		{"params[tenant]=%zz", 400, "invalid_query_params", nil},
		{"params[tenant]=a%00b", 400, "invalid_query_params", nil},
	} {
		r := sb.auth(t, "/api-auth/api-key/key1", tok, tc.query, `{"apiKey":"good-key"}`)
		if r.status != tc.status || (tc.code != "" && r.errCode() != tc.code) {
			t.Errorf("%q: %d %s, want %d %s", tc.query, r.status, r.raw, tc.status, tc.code)
			continue
		}
		if tc.config != nil {
			c := sb.connection(t, "key1", r.obj()["connectionId"].(string))
			if d := cmp.Diff(tc.config, c.ConnectionConfig); d != "" {
				t.Errorf("%q: connection config (-want +got):\n%s", tc.query, d)
			}
		}
	}
	// A missing field, a changed preset and an undeclared key are named.
	for query, path := range map[string][]any{
		"":                                    {"params", "tenant"},
		"params[tenant]=t1&params[region]=us": {"params", "region"},
		"params[tenant]=t1&params[extra%20key]=x": {"params", "extra key"},
	} {
		r := sb.auth(t, "/api-auth/api-key/key1", tok, query, `{"apiKey":"good-key"}`)
		errs, _ := r.obj()["error"].(map[string]any)["errors"].([]any)
		if len(errs) != 1 || !cmp.Equal(errs[0].(map[string]any)["path"], path) {
			t.Errorf("%q: the field is not named: %s", query, r.raw)
		}
	}
}

// TestHeadlessAllowedIntegrations: a session with allowed_integrations
// refuses the others with integration_not_allowed.
func TestHeadlessAllowedIntegrations(t *testing.T) {
	t.Parallel()
	sb := sessionSetup(t, sqliteBackend(t))
	tok := sb.session(t, `{"tags":{},"allowed_integrations":["plain"]}`)
	for _, path := range []string{"/api-auth/basic/basic1", "/api-auth/api-key/key1", "/auth/unauthenticated/none1", "/oauth2/auth/cc1", "/api-auth/api-key/nope"} {
		if r := sb.auth(t, path, tok, "", `{"apiKey":"k","username":"u","password":"p","client_id":"a","client_secret":"b"}`); r.status != 400 || r.errCode() != "integration_not_allowed" {
			t.Errorf("%s: %d %s", path, r.status, r.raw)
		}
	}
	sb.mustDo(t, 200, req{method: "POST", path: "/api-auth/api-key/plain?connect_session_token=" + tok, key: "-", body: `{"apiKey":"k"}`})
	// Without allowed_integrations every integration is allowed, and an
	// unknown one is unknown.
	open := sb.session(t, `{"tags":{}}`)
	if r := sb.auth(t, "/api-auth/api-key/nope", open, "", `{"apiKey":"k"}`); r.status != 404 || r.errCode() != "unknown_provider_config" {
		t.Errorf("unknown integration: %d %s", r.status, r.raw)
	}
}

// TestHeadlessCORS: the browser routes answer preflights and carry
// Access-Control-Allow-Origin: * on their answers, errors included.
func TestHeadlessCORS(t *testing.T) {
	t.Parallel()
	sb := sessionSetup(t, sqliteBackend(t))
	for _, path := range []string{
		"/api-auth/api-key/key1", "/api-auth/basic/basic1", "/oauth2/auth/cc1", "/auth/unauthenticated/none1",
		"/connect/session", "/integrations", "/providers/github",
	} {
		rq, _ := http.NewRequest("OPTIONS", sb.srv.URL+path, nil)
		rq.Header.Set("Origin", "https://app.example.com")
		rq.Header.Set("Access-Control-Request-Method", "POST")
		rq.Header.Set("Access-Control-Request-Headers", "content-type,authorization")
		resp, err := http.DefaultClient.Do(rq)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		h := resp.Header
		if resp.StatusCode != 204 || h.Get("Access-Control-Allow-Origin") != "*" || h.Get("Access-Control-Max-Age") != "600" ||
			!strings.Contains(h.Get("Access-Control-Allow-Methods"), "POST") || !strings.Contains(h.Get("Access-Control-Allow-Methods"), "DELETE") {
			t.Errorf("OPTIONS %s: %d %v", path, resp.StatusCode, h)
			continue
		}
		allowed := map[string]bool{}
		for _, v := range strings.Split(h.Get("Access-Control-Allow-Headers"), ",") {
			allowed[strings.ToLower(strings.TrimSpace(v))] = true
		}
		for _, want := range []string{"Authorization", "Content-Type", "Accept", "Origin", "X-Requested-With", "Nango-Activity-Log-Id",
			"Nango-Is-Dry-Run", "Nango-Is-Sync", "Provider-Config-Key", "Connection-Id", "Sentry-Trace", "Baggage"} {
			if !allowed[strings.ToLower(want)] {
				t.Errorf("OPTIONS %s: %s not allowed (%s)", path, want, h.Get("Access-Control-Allow-Headers"))
			}
		}
	}
	tok := sb.session(t, `{"tags":{}}`)
	for _, rq := range []req{
		{method: "POST", path: "/api-auth/api-key/plain?connect_session_token=" + tok, key: "-", body: `{"apiKey":"k"}`},
		{method: "POST", path: "/api-auth/api-key/plain", key: "-", body: `{"apiKey":"k"}`},
		{method: "POST", path: "/api-auth/basic/plain?connect_session_token=" + tok, key: "-", body: `{"username":"k"}`},
		{method: "GET", path: "/connect/session", key: tok},
		{method: "GET", path: "/connect/session", key: "-"},
		{method: "GET", path: "/providers/github", key: tok},
	} {
		if r := sb.do(t, rq); r.header.Get("Access-Control-Allow-Origin") != "*" {
			t.Errorf("%s %s = %d without Access-Control-Allow-Origin", rq.method, rq.path, r.status)
		}
	}
}

// TestHeadlessBadInput: bad auth calls get a 4xx with the frontend's error
// shape and write nothing.
func TestHeadlessBadInput(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		sb := sessionSetup(t, b)
		tok := sb.session(t, `{"tags":{}}`)
		q := "?connect_session_token=" + tok
		bigKey := strings.Repeat("k", 70<<10)
		cases := []struct {
			name, path, body string
			header           map[string]string
			status           int
			code             string
		}{
			{"no token", "/api-auth/api-key/plain", `{"apiKey":"k"}`, nil, 401, "missing_connect_session_token"},
			{"public key", "/api-auth/api-key/plain?public_key=pk-123", `{"apiKey":"k"}`, nil, 401, "deprecated_authentication"},
			{"malformed token", "/api-auth/api-key/plain?connect_session_token=abc", `{"apiKey":"k"}`, nil, 401, "invalid_connect_session_token_format"},
			{"unknown token", "/api-auth/api-key/plain?connect_session_token=nango_connect_session_" + strings.Repeat("1", 64), `{"apiKey":"k"}`, nil, 401, "unknown_connect_session_token"},
			{"api key as token", "/api-auth/api-key/plain?connect_session_token=" + sb.key, `{"apiKey":"k"}`, nil, 401, "invalid_connect_session_token_format"},
			{"bad query", "/api-auth/api-key/plain" + q + "&x=%zz", `{"apiKey":"k"}`, nil, 400, "invalid_query_params"},
			{"malformed json", "/api-auth/api-key/plain" + q, `{"apiKey":`, nil, 400, "invalid_body"},
			{"empty body", "/api-auth/api-key/plain" + q, ``, nil, 400, "invalid_body"},
			{"array body", "/api-auth/api-key/plain" + q, `["k"]`, nil, 400, "invalid_body"},
			{"api key wrong type", "/api-auth/api-key/plain" + q, `{"apiKey":5}`, nil, 400, "invalid_body"},
			{"no api key", "/api-auth/api-key/plain" + q, `{}`, nil, 400, "invalid_credentials"},
			{"blank api key", "/api-auth/api-key/plain" + q, `{"apiKey":"  "}`, nil, 400, "invalid_credentials"},
			{"huge api key", "/api-auth/api-key/plain" + q, `{"apiKey":"` + bigKey + `"}`, nil, 400, "invalid_credentials"},
			{"text body", "/api-auth/api-key/plain" + q, `{"apiKey":"k"}`, map[string]string{"Content-Type": "text/plain"}, 415, "invalid_content_type"},
			{"unknown integration", "/api-auth/api-key/nope" + q, `{"apiKey":"k"}`, nil, 404, "unknown_provider_config"},
			{"api key on basic", "/api-auth/api-key/basic1" + q, `{"apiKey":"k"}`, nil, 400, "invalid_auth_mode"},
			{"basic on api key", "/api-auth/basic/plain" + q, `{"username":"u","password":"p"}`, nil, 400, "invalid_auth_mode"},
			{"unauthenticated on api key", "/auth/unauthenticated/plain" + q, ``, nil, 400, "invalid_auth_mode"},
			{"client credentials on oauth", "/oauth2/auth/gh" + q, `{"client_id":"a","client_secret":"b"}`, nil, 400, "invalid_auth_mode"},
			{"api key on oauth", "/api-auth/api-key/gh" + q, `{"apiKey":"k"}`, nil, 400, "invalid_auth_mode"},
			{"client credentials without secret", "/oauth2/auth/cc1" + q, `{"client_id":"a"}`, nil, 400, "invalid_credentials"},
			{"client credentials with a key", "/oauth2/auth/cc1" + q, `{"client_id":"a","client_private_key":"pem"}`, nil, 400, "invalid_credentials"},
			{"refused client credentials", "/oauth2/auth/cc1" + q, `{"client_id":"a","client_secret":"b"}`, nil, 400, "connection_validation_failed"},
			{"missing config", "/api-auth/api-key/key1" + q, `{"apiKey":"good-key"}`, nil, 400, "missing_connection_config"},
			{"refused key", "/api-auth/api-key/key1" + q + "&params[tenant]=acme", `{"apiKey":"bad"}`, nil, 400, "connection_validation_failed"},
			{"refused basic", "/api-auth/basic/basic1" + q, `{"username":"alice","password":"nope"}`, nil, 400, "connection_validation_failed"},
			{"too many params", "/api-auth/api-key/plain" + q + manyParams(101), `{"apiKey":"k"}`, nil, 400, "invalid_query_params"},
		}
		before := snapshot(t, sb.bundle)
		for _, tc := range cases {
			r := sb.do(t, req{method: "POST", path: tc.path, key: "-", body: tc.body, header: tc.header})
			if r.status != tc.status || r.errCode() != tc.code {
				t.Errorf("%s: %d %s, want %d %s", tc.name, r.status, truncate(r.raw), tc.status, tc.code)
			}
			if m, _ := r.obj()["error"].(map[string]any)["message"].(string); m == "" {
				t.Errorf("%s: no error.message in %s", tc.name, truncate(r.raw))
			}
		}
		if d := cmp.Diff(before, snapshot(t, sb.bundle)); d != "" {
			t.Errorf("bad input changed the store (-before +after):\n%s", d)
		}
		if e := sb.events.list(); len(e) != 0 {
			t.Errorf("bad input sent %d events", len(e))
		}
	})
}

func manyParams(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString("&params[p")
		b.WriteString(strings.Repeat("x", i%3))
		b.WriteString(string(rune('a' + i%26)))
		b.WriteString(strings.Repeat("y", i/26))
		b.WriteString("]=v")
	}
	return b.String()
}

func truncate(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "…"
	}
	return string(b)
}

// TestHeadlessRequiresNoAPIKey: the auth calls work without any
// Authorization header, and an API key does not replace the session token.
func TestHeadlessRequiresNoAPIKey(t *testing.T) {
	t.Parallel()
	sb := sessionSetup(t, sqliteBackend(t))
	r := sb.do(t, req{method: "POST", path: "/api-auth/api-key/plain", body: `{"apiKey":"k"}`}) // with the API key as bearer
	if r.status != 401 || r.errCode() != "missing_connect_session_token" {
		t.Errorf("API key instead of a session token: %d %s", r.status, r.raw)
	}
}

// TestHeadlessRateLimit: the browser routes count against the account of
// the session's environment, with Retry-After when it is exceeded.
func TestHeadlessRateLimit(t *testing.T) {
	t.Parallel()
	sb := sessionSetup(t, sqliteBackend(t), func(cfg *connect.Config) { cfg.RateLimitRequests = 12 })
	tok := sb.session(t, `{"tags":{}}`)
	var last *response
	for range 20 {
		if last = sb.do(t, req{method: "GET", path: "/connect/session", key: tok}); last.status != 200 {
			break
		}
	}
	if last.status != 429 || last.errCode() != "too_many_requests" || last.header.Get("Retry-After") == "" ||
		last.header.Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("over the limit: %d %s %v", last.status, last.raw, last.header)
	}
}
