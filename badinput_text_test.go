package connect_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/oplog"
	"github.com/embedauth/connect/store"
	"github.com/embedauth/connect/webhooks"
	"github.com/google/go-cmp/cmp"
)

// errorPath is the path of the first errors[] entry of a standard error
// body, dot-joined ("" when there is none).
func errorPath(r *response) string {
	e, _ := r.obj()["error"].(map[string]any)
	list, _ := e["errors"].([]any)
	if len(list) == 0 {
		return ""
	}
	first, _ := list[0].(map[string]any)
	parts, _ := first["path"].([]any)
	s := make([]string, len(parts))
	for i, p := range parts {
		s[i], _ = p.(string)
	}
	return strings.Join(s, ".")
}

// storeErrorPath is errorPath of a Go API error.
func storeErrorPath(err error) string {
	var e *store.Error
	if !errors.As(err, &e) || len(e.Errors) == 0 {
		return ""
	}
	return strings.Join(e.Errors[0].Path, ".")
}

// pemKey returns a new RSA private key in PEM (PKCS #8), with CRLF line
// ends when crlf.
func pemKey(t *testing.T, crlf bool) string {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	s := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	if crlf {
		s = strings.ReplaceAll(s, "\n", "\r\n")
	}
	return s
}

// TestControlCharactersRefusedAtEveryDoor: a credential or connection
// config value with a control character (CR, LF, tab, NUL, ESC, DEL, a C1
// character) is refused with a 400 naming the field on every way in: the
// auth calls of each mode (their bodies and params[...]), the OAuth
// popup's params[...] and own-app credentials[...], a connect session's
// preset connection config, single, legacy and bulk imports (flat and
// nested credentials, connection_config), and the Go API (Import,
// ImportBatch, ConnectSessions().Create and Authorize). Nothing is stored:
// no connection, no session, no operations log entry.
func TestControlCharactersRefusedAtEveryDoor(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		bu := setup(t, b, withClientAuthProviders(t), withModeProviders(t))
		seed(t, bu)
		mtok, _ := seedModes(t, bu)
		ctok, _ := seedClientAuth(t, bu)
		for _, in := range []string{`{"provider":"anthropic","unique_key":"an"}`, `{"provider":"microsoft","unique_key":"ms",
			"credentials":{"type":"OAUTH2","client_id":"ms-client","client_secret":"ms-secret"}}`} {
			bu.mustDo(t, 200, req{method: "POST", path: "/integrations", body: in})
		}
		tok := bu.session(t, `{"tags":{},"allowed_integrations":["oa","tw","an","ms","gh"],
			"integrations_config_defaults":{"gh":{"connection_config":{"oauth_client_id_override":"","oauth_client_secret_override":""}}}}`)
		pk := pemKey(t, false)
		auth := func(path, t string) string { return path + "?connect_session_token=" + t }
		popup := func(key, extra string) string {
			return "/oauth/connect/" + key + "?connect_session_token=" + tok + "&" + extra
		}
		q := url.QueryEscape
		cases := []struct {
			name string
			rq   req
			code string
			// path is errors[0].path, or for popup pages (no errors[])
			// a text the message must hold.
			path string
		}{
			{"api key CRLF", req{method: "POST", path: auth("/api-auth/api-key/oa", tok), body: `{"apiKey":"sk-live\r\nX-Injected: 1"}`}, "invalid_credentials", "apiKey"},
			{"api key trailing line feed", req{method: "POST", path: auth("/api-auth/api-key/oa", tok), body: `{"apiKey":"sk-live\n"}`}, "invalid_credentials", "apiKey"},
			{"api key tab", req{method: "POST", path: auth("/api-auth/api-key/oa", tok), body: `{"apiKey":"sk\tlive"}`}, "invalid_credentials", "apiKey"},
			{"api key DEL", req{method: "POST", path: auth("/api-auth/api-key/oa", tok), body: `{"apiKey":"sk\u007flive"}`}, "invalid_credentials", "apiKey"},
			{"api key C1", req{method: "POST", path: auth("/api-auth/api-key/oa", tok), body: `{"apiKey":"sk\u0085live"}`}, "invalid_credentials", "apiKey"},
			{"api key params CRLF", req{method: "POST", path: auth("/api-auth/api-key/an", tok) + "&params[version]=" + q("2023-06-01\r\nX: 1"),
				body: `{"apiKey":"sk"}`}, "invalid_connection_config", "params.version"},
			{"api key params tab", req{method: "POST", path: auth("/api-auth/api-key/an", tok) + "&params[version]=" + q("a\tb"),
				body: `{"apiKey":"sk"}`}, "invalid_connection_config", "params.version"},
			{"basic password", req{method: "POST", path: auth("/api-auth/basic/tw", tok), body: `{"username":"u","password":"p\r\n"}`}, "invalid_credentials", "password"},
			{"basic username escape", req{method: "POST", path: auth("/api-auth/basic/tw", tok), body: `{"username":"u\u001b[31m","password":"p"}`}, "invalid_credentials", "username"},
			{"client credentials id", req{method: "POST", path: auth("/oauth2/auth/zi", ctok), body: `{"client_id":"i\n","client_secret":"s"}`}, "invalid_credentials", "client_id"},
			{"client credentials secret", req{method: "POST", path: auth("/oauth2/auth/zi", ctok), body: `{"client_id":"i","client_secret":"s\r"}`}, "invalid_credentials", "client_secret"},
			{"client certificate with escape", req{method: "POST", path: auth("/oauth2/auth/adp", ctok),
				body: `{"client_id":"i","client_secret":"s","client_certificate":` + jsonString(strings.Replace(pk, "\n", "\n\u001b", 2)) + `}`}, "invalid_credentials", "client_certificate"},
			{"tba token secret", req{method: "POST", path: auth("/auth/tba/ns", mtok) + "&params[accountId]=acme", body: `{"token_id":"t","token_secret":"s\n"}`}, "invalid_credentials", "token_secret"},
			{"tba own client", req{method: "POST", path: auth("/auth/tba/ns", mtok) + "&params[accountId]=acme",
				body: `{"token_id":"t","token_secret":"s","oauth_client_id_override":"c","oauth_client_secret_override":"cs\t"}`}, "invalid_credentials", "oauth_client_secret_override"},
			{"aws role", req{method: "POST", path: auth("/auth/aws-sigv4/aws", mtok), body: `{"role_arn":"arn:aws:iam::123456789012:role/R\r\n"}`}, "invalid_credentials", "role_arn"},
			{"two-step password", req{method: "POST", path: auth("/auth/two-step/vy", mtok), body: `{"type":"TWO_STEP","email":"a@b.c","password":"p\r\n"}`}, "invalid_credentials", "password"},
			{"jwt account", req{method: "POST", path: auth("/auth/jwt/jw", mtok), body: `{"type":"JWT","accountIdentifier":"A\n","userName":"B","privateKey":` + jsonString(pk) + `}`}, "invalid_credentials", "accountIdentifier"},
			{"jwt key with NUL-like escape", req{method: "POST", path: auth("/auth/jwt/jw", mtok), body: `{"type":"JWT","accountIdentifier":"A","userName":"B","privateKey":` + jsonString(strings.Replace(pk, "\n", "\n\u0007", 1)) + `}`}, "invalid_credentials", "privateKey"},
			{"signature username C1", req{method: "POST", path: auth("/auth/signature/em", mtok), body: `{"type":"SIGNATURE","username":"u\u0085","password":"p"}`}, "invalid_credentials", "username"},
			{"bill organization", req{method: "POST", path: auth("/auth/bill/bl", mtok), body: `{"username":"u","password":"p","organization_id":"o\t","dev_key":"d"}`}, "invalid_credentials", "organization_id"},
			{"popup params", req{method: "GET", path: popup("ms", "params[tenant]="+q("common\r\nx")), key: "-"}, "invalid_connection_config", "tenant"},
			{"popup own client", req{method: "GET", path: popup("gh", "credentials[oauth_client_id_override]="+q("own\n")+"&credentials[oauth_client_secret_override]=s"), key: "-"},
				"url_param_err", "credentials[oauth_client_id_override]"},
			{"session preset", req{method: "POST", path: "/connect/sessions", body: `{"integrations_config_defaults":{"an":{"connection_config":{"version":"a\r\nb"}}}}`},
				"invalid_body", "integrations_config_defaults.an.connection_config.version"},
			{"session preset own client", req{method: "POST", path: "/connect/sessions", body: `{"integrations_config_defaults":{"gh":{"connection_config":{"oauth_client_id_override":"c\n","oauth_client_secret_override":"s"}}}}`},
				"invalid_body", "integrations_config_defaults.gh.connection_config.oauth_client_id_override"},
			{"import api key", req{method: "POST", path: "/connections", body: `{"provider_config_key":"oa","connection_id":"x1","api_key":"sk\r\n"}`}, "invalid_credentials", "api_key"},
			{"import access token", req{method: "POST", path: "/connections", body: `{"provider_config_key":"gh","connection_id":"x1","access_token":"at\n","no_expiration":true}`}, "invalid_credentials", "access_token"},
			{"import refresh token", req{method: "POST", path: "/connections", body: `{"provider_config_key":"gh","connection_id":"x1","access_token":"at","refresh_token":"rt\t","no_expiration":true}`}, "invalid_credentials", "refresh_token"},
			{"import own client", req{method: "POST", path: "/connections", body: `{"provider_config_key":"gh","connection_id":"x1","access_token":"at","no_expiration":true,"oauth_client_secret_override":"s\n"}`}, "invalid_credentials", "oauth_client_secret_override"},
			{"import basic password", req{method: "POST", path: "/connections", body: `{"provider_config_key":"tw","connection_id":"x1","username":"u","password":"p\r"}`}, "invalid_credentials", "password"},
			{"import nested api key", req{method: "POST", path: "/connections", body: `{"provider_config_key":"oa","connection_id":"x1","credentials":{"type":"API_KEY","apiKey":"k\n"}}`}, "invalid_credentials", "credentials.apiKey"},
			{"import nested tba", req{method: "POST", path: "/connections", body: `{"provider_config_key":"ns","connection_id":"x1","credentials":{"type":"TBA","token_id":"t","token_secret":"s\r\n"}}`}, "invalid_credentials", "credentials.token_secret"},
			{"import nested two-step input", req{method: "POST", path: "/connections", body: `{"provider_config_key":"vy","connection_id":"x1","credentials":{"type":"TWO_STEP","email":"a@b.c","password":"p\n"}}`}, "invalid_credentials", "credentials.inputs.password"},
			{"import nested client credentials", req{method: "POST", path: "/connections", body: `{"provider_config_key":"zi","connection_id":"x1","credentials":{"type":"OAUTH2_CC","client_id":"i\t","client_secret":"s"}}`}, "invalid_credentials", "credentials.client_id"},
			{"import connection config", req{method: "POST", path: "/connections", body: `{"provider_config_key":"an","connection_id":"x1","api_key":"k","connection_config":{"version":"2023\r\nX: 1"}}`}, "invalid_connection_config", "connection_config.version"},
			{"bulk import", req{method: "POST", path: "/connections", body: `[{"provider_config_key":"oa","connection_id":"x1","api_key":"k"},{"provider_config_key":"oa","connection_id":"x2","api_key":"k\n"}]`}, "invalid_body", "1.api_key"},
			{"bulk import config", req{method: "POST", path: "/connections", body: `[{"provider_config_key":"an","connection_id":"x1","api_key":"k","connection_config":{"version":"\u0000"}}]`}, "invalid_body", ""},
		}
		before, rows := snapshot(t, bu), tableCounts(t, b)
		for _, tc := range cases {
			r := badInputDo(t, bu, tc.rq)
			if r.status != 400 {
				t.Errorf("%s: %s %s = %d %s, want 400", tc.name, tc.rq.method, tc.rq.path, r.status, r.raw)
				continue
			}
			if got := badInputCode(r); got != tc.code {
				t.Errorf("%s: code %q (%s), want %q", tc.name, got, r.raw, tc.code)
			}
			if strings.HasPrefix(r.header.Get("Content-Type"), "text/html") {
				if !strings.Contains(string(r.raw), tc.path) {
					t.Errorf("%s: the page does not name %s: %s", tc.name, tc.path, r.raw)
				}
				continue
			}
			if tc.path != "" && errorPath(r) != tc.path {
				t.Errorf("%s: errors[0].path %q (%s), want %q", tc.name, errorPath(r), r.raw, tc.path)
			}
			if strings.Contains(string(r.raw), "X-Injected") || strings.Contains(string(r.raw), "sk-live") {
				t.Errorf("%s: the answer echoes the value: %s", tc.name, r.raw)
			}
		}
		legacy := bu.do(t, req{method: "POST", path: "/connection", body: `{"provider_config_key":"oa","connection_id":"x1","api_key":"k\r\n"}`})
		if m, _ := legacy.obj()["message"].(string); legacy.status != 400 || !strings.Contains(m, "api_key") {
			t.Errorf("legacy import: %d %s", legacy.status, legacy.raw)
		}

		// The Go API refuses the same values, naming them the same way.
		ctx := context.Background()
		conns := bu.svc.Connections()
		_, _, err := conns.Import(ctx, bu.env.ID, connections.ImportInput{ProviderConfigKey: "oa", ConnectionID: "x1", APIKey: "k\r\n"})
		if p := storeErrorPath(err); !errors.Is(err, store.ErrInvalid) || p != "api_key" {
			t.Errorf("Import: %v (path %q)", err, p)
		}
		_, _, err = conns.Import(ctx, bu.env.ID, connections.ImportInput{ProviderConfigKey: "an", ConnectionID: "x1", APIKey: "k",
			ConnectionConfig: map[string]any{"version": "bad\x00"}})
		if p := storeErrorPath(err); !errors.Is(err, store.ErrInvalid) || p != "connection_config.version" {
			t.Errorf("Import with connection config: %v (path %q)", err, p)
		}
		_, _, err = conns.Import(ctx, bu.env.ID, connections.ImportInput{ProviderConfigKey: "oa", ConnectionID: "x1", APIKey: "caf\xe9"})
		if p := storeErrorPath(err); !errors.Is(err, store.ErrInvalid) || p != "api_key" {
			t.Errorf("Import of invalid UTF-8: %v (path %q)", err, p)
		}
		_, err = conns.ImportBatch(ctx, bu.env.ID, []connections.ImportInput{{ProviderConfigKey: "oa", ConnectionID: "x1", APIKey: "k"},
			{ProviderConfigKey: "gh", ConnectionID: "x2", AccessToken: "a\nb", NoExpiration: true}})
		if p := storeErrorPath(err); !errors.Is(err, store.ErrInvalid) || p != "1.access_token" {
			t.Errorf("ImportBatch: %v (path %q)", err, p)
		}
		sessions := bu.svc.ConnectSessions()
		_, err = sessions.Create(ctx, bu.env.ID, connections.CreateSessionInput{IntegrationsConfigDefaults: map[string]connections.IntegrationDefaults{
			"an": {ConnectionConfig: map[string]string{"version": "\r\n"}}}})
		if p := storeErrorPath(err); !errors.Is(err, store.ErrInvalid) || p != "integrations_config_defaults.an.connection_config.version" {
			t.Errorf("ConnectSessions().Create: %v (path %q)", err, p)
		}
		sess, err := sessions.Authenticate(ctx, tok)
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			in   connections.AuthorizeInput
			path string
		}{
			{connections.AuthorizeInput{IntegrationKey: "oa", Mode: integrations.AuthModeAPIKey, Credentials: connections.Credentials{APIKey: "k\r\n"}}, "apiKey"},
			{connections.AuthorizeInput{IntegrationKey: "tw", Mode: integrations.AuthModeBasic, Credentials: connections.Credentials{Username: "u", Password: "\x7f"}}, "password"},
			{connections.AuthorizeInput{IntegrationKey: "an", Mode: integrations.AuthModeAPIKey, Credentials: connections.Credentials{APIKey: "k"},
				Params: map[string]string{"version": "v\n"}}, "params.version"},
		} {
			_, err := sessions.Authorize(ctx, sess, tc.in)
			if p := storeErrorPath(err); !errors.Is(err, store.ErrInvalid) || p != tc.path {
				t.Errorf("Authorize %s: %v (path %q), want %s", tc.in.IntegrationKey, err, p, tc.path)
			}
		}

		if diff := cmp.Diff(before, snapshot(t, bu)); diff != "" {
			t.Errorf("refused values changed the store (-before +after):\n%s", diff)
		}
		if diff := cmp.Diff(rows, tableCounts(t, b)); diff != "" {
			t.Errorf("refused values added rows (-before +after):\n%s", diff)
		}
	})
}

// TestKeysSpanLines: the values that legitimately hold line breaks, keys
// in PEM (a JWT mode's private key, an mTLS certificate and key, a BASIC
// password that is a PEM key, with LF or CRLF line ends) and a JWK in
// JSON (pretty-printed, with tabs), are accepted and stored as given.
func TestKeysSpanLines(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		bu := setup(t, b, withClientAuthProviders(t), withModeProviders(t))
		seed(t, bu)
		mtok, _ := seedModes(t, bu)
		_, ck := seedClientAuth(t, bu)
		ctx := context.Background()
		stored := func(key, id string) *connections.Credentials {
			t.Helper()
			c, err := bu.svc.Connections().Get(ctx, bu.env.ID, key, id, connections.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			return c.Credentials
		}

		pk := pemKey(t, true)
		r := bu.mustDo(t, 200, req{method: "POST", path: "/auth/jwt/jw?connect_session_token=" + mtok, key: "-",
			body: `{"type":"JWT","accountIdentifier":"ACME","userName":"BOT","privateKey":` + jsonString(pk) + `}`})
		id, _ := r.obj()["connectionId"].(string)
		if got := stored("jw", id); got.Inputs["privateKey"] != pk || got.Token == "" {
			t.Errorf("JWT connection: key stored %v, token %q", got.Inputs["privateKey"] == pk, got.Token)
		}

		bu.mustDo(t, 201, req{method: "POST", path: "/connections", body: `{"provider_config_key":"adp","connection_id":"m1","credentials":{"type":"OAUTH2_CC",
			"token":"t0","expires_at":"2099-01-01T00:00:00Z","client_id":"i","client_secret":"s","client_certificate":` + jsonString(ck.cert) + `,"client_private_key":` + jsonString(ck.key) + `}}`})
		// (their white space around is trimmed)
		if got := stored("adp", "m1"); got.ClientCertificate != strings.TrimSpace(ck.cert) || got.ClientPrivateKey != strings.TrimSpace(ck.key) {
			t.Error("the mTLS certificate and key were not stored as given")
		}

		bu.mustDo(t, 201, req{method: "POST", path: "/connections", body: `{"provider_config_key":"tw","connection_id":"b1","username":"key-id","password":` + jsonString(pk) + `}`})
		if got := stored("tw", "b1"); got.Password != pk {
			t.Error("a PEM password was not stored as given")
		}

		_, compact := privateJWK(t)
		var jwk bytes.Buffer
		if err := json.Indent(&jwk, []byte(compact), "", "\t"); err != nil {
			t.Fatal(err)
		}
		bu.mustDo(t, 201, req{method: "POST", path: "/connections", body: `{"provider_config_key":"okta","connection_id":"j1",
			"credentials":{"type":"OAUTH2_CC","token":"t0","expires_at":"2099-01-01T00:00:00Z","client_id":"i","client_private_key":` + jsonString(jwk.String()) + `}}`})
		if got := stored("okta", "j1"); got.ClientPrivateKey != strings.TrimSpace(jwk.String()) {
			t.Error("a pretty-printed JWK was not stored as given")
		}
	})
}

// TestRefreshAnswerWithControlCharacters: a refresh whose answer sets a
// token_response_metadata value with a control character into the
// connection config fails like any other bad answer: 400 refresh_failed
// naming the value's key (not its text), the failure in the connection's
// auth error and its log entry, the failure webhook, and nothing of the
// answer stored: neither its tokens nor the value.
func TestRefreshAnswerWithControlCharacters(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		ob := oauthSetup(t, b)
		tok := ob.session(t, `{"tags":{"end_user_id":"u1"}}`)
		id := ob.mustConnect(t, ob.browser(t), "fo", tok, "")
		before := ob.connection(t, "fo", id)
		team := before.ConnectionConfig["team.id"]
		if team == nil || before.Credentials.AccessToken == "" || before.Credentials.RefreshToken == "" {
			t.Fatalf("the connection before the refresh: config %v, credentials %+v", before.ConnectionConfig, before.Credentials)
		}

		ob.prov.set(func(p *oauthProvider) { p.teamID = "T9\r\nX-Injected: 1" })
		r := ob.mustDo(t, 400, req{method: "GET", path: "/connections/" + id + "?provider_config_key=fo&force_refresh=true"})
		msg, _ := r.obj()["error"].(map[string]any)["message"].(string)
		if r.errCode() != connections.CodeRefreshFailed || !strings.Contains(msg, "connection config team.id") ||
			!strings.Contains(msg, "control character") || strings.Contains(string(r.raw), "X-Injected") {
			t.Errorf("the refresh answered %s", r.raw)
		}
		if calls := ob.prov.tokenCalls(); len(calls) != 2 || calls[1].Get("grant_type") != "refresh_token" {
			t.Errorf("the provider got the token requests %v, want the code's and the refresh's", calls)
		}

		// Nothing stored but the failure.
		after := ob.connection(t, "fo", id)
		if after.ConnectionConfig["team.id"] != team || after.Credentials.AccessToken != before.Credentials.AccessToken ||
			after.Credentials.RefreshToken != before.Credentials.RefreshToken {
			t.Errorf("after the refused answer: team.id %v (was %v), tokens %q %q (were %q %q)", after.ConnectionConfig["team.id"], team,
				after.Credentials.AccessToken, after.Credentials.RefreshToken, before.Credentials.AccessToken, before.Credentials.RefreshToken)
		}
		logID, _ := r.obj()["error"].(map[string]any)["payload"].(map[string]any)["log_id"].(string)
		if after.LastRefreshFailure == nil || after.RefreshAttempts != 1 || len(after.Errors) != 1 ||
			after.Errors[0] != (connections.Error{Type: "auth", LogID: logID}) || logID == "" {
			t.Errorf("the failure is not recorded: last failure %v, attempts %d, errors %v, log id %q",
				after.LastRefreshFailure, after.RefreshAttempts, after.Errors, logID)
		}
		logs, err := ob.svc.ListLogs(t.Context(), oplog.Filter{EnvironmentID: ob.env.ID, Type: "auth", ConnectionID: id})
		if err != nil {
			t.Fatal(err)
		}
		var entry *oplog.Entry
		for _, e := range logs {
			if e.ID == logID {
				entry = e
			}
		}
		if entry == nil || entry.Operation != "refresh" || entry.Status != oplog.StatusFailure ||
			!strings.Contains(fmt.Sprint(entry.Meta["error_description"]), "team.id") {
			t.Errorf("the failure's log entry: %+v", entry)
		}
		if b, _ := json.Marshal(entry); strings.Contains(string(b), "X-Injected") {
			t.Errorf("the log entry holds the refused value: %s", b)
		}
		var failed []*webhooks.AuthPayload
		for _, p := range authEvents(ob.events) {
			if p.Operation == webhooks.OperationRefresh && !p.Success {
				failed = append(failed, p)
			}
		}
		if len(failed) != 1 || failed[0].Error == nil || failed[0].Error.Type != connections.CodeRefreshFailed ||
			!strings.Contains(failed[0].Error.Description, "team.id") || strings.Contains(failed[0].Error.Description, "X-Injected") {
			t.Errorf("refresh failure webhooks: %+v", failed)
		}
	})
}

// TestProviderAnswersWithControlCharacters: what a provider answers is
// not stored when it holds a control character: a token_response_metadata
// value or an access token of the code exchange fails the popup's flow
// (token_err, no connection), and a refreshed access token fails the
// refresh, the stored token staying as it was.
func TestProviderAnswersWithControlCharacters(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		ob := oauthSetup(t, b)
		tok := ob.session(t, `{"tags":{"end_user_id":"u1"}}`)
		for _, tc := range []struct {
			name, team, token, names string
		}{
			{"metadata", "T1\r\nX-Injected: 1", "", "team.id"},
			{"access token", "", "at\n1", "tokens"},
		} {
			ob.prov.set(func(p *oauthProvider) { p.teamID, p.accessToken = tc.team, tc.token })
			p := ob.browser(t).open(t, connectURL("fo", tok, ""))
			msg, _ := p.payload()["message"].(string)
			if p.status != 400 || p.errorType() != "token_err" || !strings.Contains(msg, tc.names) || strings.Contains(p.body, "X-Injected") {
				t.Errorf("%s: %d %s %q", tc.name, p.status, p.errorType(), msg)
			}
			if n := len(ob.connections(t)); n != 0 {
				t.Fatalf("%s: %d connections after the refused answer", tc.name, n)
			}
		}

		ob.prov.set(func(p *oauthProvider) { p.teamID, p.accessToken = "", "" })
		id := ob.mustConnect(t, ob.browser(t), "fo", tok, "")
		before := ob.connection(t, "fo", id).Credentials.AccessToken
		ob.prov.set(func(p *oauthProvider) { p.accessToken = "at\r\nX-Injected: 1" })
		_, err := ob.svc.Connections().Get(t.Context(), ob.env.ID, "fo", id, connections.GetOptions{ForceRefresh: true})
		if !errors.Is(err, connections.ErrRefreshFailed) {
			t.Fatalf("refresh with a token holding CRLF: %v", err)
		}
		if got := ob.connection(t, "fo", id).Credentials.AccessToken; got != before {
			t.Errorf("the access token became %q, want %q", got, before)
		}
	})
}
