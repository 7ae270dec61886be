package connect_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/environments"
)

// seed creates integrations gh (github, OAuth app), oa (openai) and tw
// (twilio) and connections c1 and c2 on gh, k1 on oa.
func seed(t testing.TB, bu *bundle) {
	t.Helper()
	bu.mustDo(t, 200, req{method: "POST", path: "/integrations", body: `{"provider":"github","unique_key":"gh","display_name":"GitHub",
		"credentials":{"type":"OAUTH2","client_id":"cid","client_secret":"csecret-gh","scopes":"repo,user"}}`})
	bu.mustDo(t, 200, req{method: "POST", path: "/integrations", body: `{"provider":"openai","unique_key":"oa"}`})
	bu.mustDo(t, 200, req{method: "POST", path: "/integrations", body: `{"provider":"twilio","unique_key":"tw"}`})
	bu.mustDo(t, 201, req{method: "POST", path: "/connections", body: `{"provider_config_key":"gh","connection_id":"c1",
		"access_token":"at-c1","refresh_token":"rt-c1","expires_at":"2030-01-02T03:04:05Z","metadata":{"a":1},"tags":{"End_User_Id":"u1"}}`})
	bu.mustDo(t, 201, req{method: "POST", path: "/connections", body: `{"provider_config_key":"gh","connection_id":"c2",
		"access_token":"at-c2","no_expiration":true,"tags":{"team":"red"}}`})
	bu.mustDo(t, 201, req{method: "POST", path: "/connections", body: `{"provider_config_key":"oa","connection_id":"k1","api_key":"sk-live-k1"}`})
}

// snapshot captures everything the API can change in the environment.
func snapshot(t *testing.T, bu *bundle) string {
	t.Helper()
	ctx := context.Background()
	var b strings.Builder
	its, err := bu.svc.Integrations().List(ctx, bu.env.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range its {
		it, err := bu.svc.Integrations().Get(ctx, bu.env.ID, l.UniqueKey)
		if err != nil {
			t.Fatal(err)
		}
		creds := it.Credentials
		it.SealedCredentials, it.SealedCustom, it.Credentials = "", "", nil
		fmt.Fprintf(&b, "%+v %+v\n", *it, creds)
	}
	conns, err := bu.svc.Connections().List(ctx, bu.env.ID, connections.ListInput{})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range conns {
		c, err := bu.svc.Connections().Get(ctx, bu.env.ID, l.IntegrationKey, l.ConnectionID, connections.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		creds, exp := *c.Credentials, c.CredentialsExpiresAt
		c.SealedCredentials, c.Credentials, c.CredentialsExpiresAt, c.Version = "", nil, nil, 0
		fmt.Fprintf(&b, "%+v %+v %v\n", *c, creds, exp)
	}
	vars, err := bu.svc.Environments().Variables(ctx, bu.env.ID)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&b, "%+v\n", vars)
	return b.String()
}

// TestBadInput sends bad input to every route and checks that each gets a
// 4xx with an error code, never a 500, and that nothing stored changes.
func TestBadInput(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		bu := setup(t, b, withClientAuthProviders(t), withModeProviders(t))
		seed(t, bu)
		mtok, otok := seedModes(t, bu)
		ctok, ck := seedClientAuth(t, bu)
		huge := strings.Repeat("k", 70<<10) // over the 64 KiB of one credential
		limited, _, err := bu.svc.Environments().CreateAPIKey(context.Background(), bu.env.ID,
			environments.NewAPIKey{Name: "read-only", Scopes: []string{environments.ScopeConnectionsRead}})
		if err != nil {
			t.Fatal(err)
		}
		big := `{"provider":"github","unique_key":"big","display_name":"` + strings.Repeat("x", 2<<20) + `"}`
		long := strings.Repeat("v", 256)
		tok := bu.session(t, `{"tags":{},"allowed_integrations":["gh","oa","tw"]}`)
		cases := []struct {
			name   string
			rq     req
			status int
			code   string // "" for the {message} style
		}{
			{"no auth", req{method: "GET", path: "/integrations", key: "-"}, 401, "missing_auth_header"},
			{"basic auth", req{method: "GET", path: "/integrations", header: map[string]string{"Authorization": "Basic eDp5"}, key: "-"}, 401, "malformed_auth_header"},
			{"unknown key", req{method: "GET", path: "/integrations", key: "sk_not_a_real_key_000"}, 401, "unknown_account"},
			{"missing scope", req{method: "POST", path: "/integrations", key: limited, body: `{"provider":"github","unique_key":"x"}`}, 403, "forbidden"},
			{"missing scope creds", req{method: "GET", path: "/connections/c1?provider_config_key=gh&refresh_token=true", key: limited}, 403, "forbidden"},
			{"unknown route", req{method: "GET", path: "/nope"}, 404, "not_found"},
			{"unknown provider get", req{method: "GET", path: "/providers/not-a-provider"}, 404, "not_found"},
			{"providers search too long", req{method: "GET", path: "/providers?search=" + long}, 400, "invalid_query_params"},

			{"create malformed", req{method: "POST", path: "/integrations", body: `{"provider":`}, 400, "invalid_body"},
			{"create array", req{method: "POST", path: "/integrations", body: `[1]`}, 400, "invalid_body"},
			{"create wrong type", req{method: "POST", path: "/integrations", body: `{"provider":5,"unique_key":"x"}`}, 400, "invalid_body"},
			{"create no key", req{method: "POST", path: "/integrations", body: `{"provider":"github"}`}, 400, "invalid_body"},
			{"create bad key", req{method: "POST", path: "/integrations", body: `{"provider":"github","unique_key":"a/b"}`}, 400, "invalid_body"},
			{"create no provider", req{method: "POST", path: "/integrations", body: `{"unique_key":"x"}`}, 400, "invalid_body"},
			{"create unknown provider", req{method: "POST", path: "/integrations", body: `{"provider":"nope","unique_key":"x"}`}, 400, "invalid_body"},
			{"create duplicate", req{method: "POST", path: "/integrations", body: `{"provider":"github","unique_key":"gh"}`}, 409, "duplicate_integration"},
			{"create creds mismatch", req{method: "POST", path: "/integrations", body: `{"provider":"openai","unique_key":"x","credentials":{"type":"OAUTH2","client_id":"a","client_secret":"b"}}`}, 400, "invalid_body"},
			{"create creds missing secret", req{method: "POST", path: "/integrations", body: `{"provider":"github","unique_key":"x","credentials":{"type":"OAUTH2","client_id":"a"}}`}, 400, "invalid_body"},
			{"create oversized", req{method: "POST", path: "/integrations", body: big}, 413, "payload_too_large"},
			{"create text content type", req{method: "POST", path: "/integrations", body: `{"provider":"github","unique_key":"x"}`, header: map[string]string{"Content-Type": "text/plain"}}, 415, "invalid_content_type"},
			{"create latin1 charset", req{method: "POST", path: "/integrations", body: `{"provider":"github","unique_key":"x"}`, header: map[string]string{"Content-Type": "application/json; charset=latin1"}}, 415, "invalid_content_type"},
			{"create invalid UTF-8 name", req{method: "POST", path: "/integrations", body: `{"provider":"github","unique_key":"x","display_name":"caf` + "\xe9" + `"}`}, 400, "invalid_body"},
			{"create duplicate key", req{method: "POST", path: "/integrations", body: `{"provider":"github","unique_key":"x","unique_key":"y"}`}, 400, "invalid_body"},
			{"create lone surrogate", req{method: "POST", path: "/integrations", body: `{"provider":"github","unique_key":"x","display_name":"\udc00"}`}, 400, "invalid_body"},
			{"get invalid UTF-8 key", req{method: "GET", path: "/integrations/%ff%fe"}, 400, "invalid_uri_params"},
			{"get NUL key", req{method: "GET", path: "/integrations/%00"}, 400, "invalid_uri_params"},
			{"list invalid UTF-8 search", req{method: "GET", path: "/connections?search=%ff"}, 400, "invalid_query_params"},
			{"get bad include", req{method: "GET", path: "/integrations/gh?include=secrets"}, 400, "invalid_query_params"},
			{"get unknown integration", req{method: "GET", path: "/integrations/nope"}, 404, "unknown_provider_config"},
			{"update unknown", req{method: "PATCH", path: "/integrations/nope", body: `{"display_name":"x"}`}, 404, "unknown_provider_config"},
			{"update rename with connections", req{method: "PATCH", path: "/integrations/gh", body: `{"unique_key":"gh2"}`}, 409, "integration_has_connections"},
			{"update wrong type", req{method: "PATCH", path: "/integrations/gh", body: `{"forward_webhooks":"yes"}`}, 400, "invalid_body"},
			{"update rename onto existing", req{method: "PATCH", path: "/integrations/tw", body: `{"unique_key":"oa"}`}, 409, "duplicate_integration"},
			{"update display name too long", req{method: "PATCH", path: "/integrations/gh", body: `{"display_name":"` + long + `"}`}, 400, "invalid_body"},
			{"delete unknown integration", req{method: "DELETE", path: "/integrations/nope"}, 404, "unknown_provider_config"},

			{"list bad limit", req{method: "GET", path: "/connections?limit=abc"}, 400, "invalid_query_params"},
			{"list zero limit", req{method: "GET", path: "/connections?limit=0"}, 400, "invalid_query_params"},
			{"list negative page", req{method: "GET", path: "/connections?page=-1"}, 400, "invalid_query_params"},
			{"get no integration", req{method: "GET", path: "/connections/c1"}, 400, "invalid_query_params"},
			{"get bad bool", req{method: "GET", path: "/connections/c1?provider_config_key=gh&force_refresh=maybe"}, 400, "invalid_query_params"},
			{"get unknown connection", req{method: "GET", path: "/connections/nope?provider_config_key=gh"}, 404, "not_found"},
			{"get unknown integration", req{method: "GET", path: "/connections/c1?provider_config_key=nope"}, 404, "unknown_provider_config"},

			{"import empty", req{method: "POST", path: "/connections", body: `{}`}, 400, "invalid_body"},
			{"import malformed", req{method: "POST", path: "/connections", body: `{"provider_config_key":"gh",`}, 400, "invalid_body"},
			{"import unknown integration", req{method: "POST", path: "/connections", body: `{"provider_config_key":"nope","access_token":"x","no_expiration":true}`}, 404, "unknown_provider_config"},
			{"import no access token", req{method: "POST", path: "/connections", body: `{"provider_config_key":"gh","connection_id":"c1","no_expiration":true}`}, 400, "invalid_body"},
			{"import no expiry", req{method: "POST", path: "/connections", body: `{"provider_config_key":"gh","connection_id":"c1","access_token":"x"}`}, 400, "invalid_body"},
			{"import bad expires_at", req{method: "POST", path: "/connections", body: `{"provider_config_key":"gh","connection_id":"c1","access_token":"x","expires_at":"soon"}`}, 400, "invalid_body"},
			{"import negative expires_in", req{method: "POST", path: "/connections", body: `{"provider_config_key":"gh","connection_id":"c1","access_token":"x","expires_in":-5}`}, 400, "invalid_body"},
			{"import no api key", req{method: "POST", path: "/connections", body: `{"provider_config_key":"oa","connection_id":"k1"}`}, 400, "invalid_credentials"},
			{"import basic no password", req{method: "POST", path: "/connections", body: `{"provider_config_key":"tw","connection_id":"b1","username":"u"}`}, 400, "invalid_body"},
			{"import long tag", req{method: "POST", path: "/connections", body: `{"provider_config_key":"oa","connection_id":"k1","api_key":"k","tags":{"a":"` + long + `"}}`}, 400, "invalid_body"},
			{"import metadata not object", req{method: "POST", path: "/connections", body: `{"provider_config_key":"oa","connection_id":"k1","api_key":"k","metadata":[1]}`}, 400, "invalid_body"},
			{"import bad connection id", req{method: "POST", path: "/connections", body: `{"provider_config_key":"oa","connection_id":"a\u0000b","api_key":"k"}`}, 400, "invalid_body"},
			{"import nested type mismatch", req{method: "POST", path: "/connections", body: `{"provider_config_key":"oa","connection_id":"k1","credentials":{"type":"BASIC","username":"u"}}`}, 400, "invalid_body"},
			{"legacy import empty", req{method: "POST", path: "/connection", body: `{}`}, 400, ""},
			{"legacy import malformed", req{method: "POST", path: "/connection", body: `nope`}, 400, ""},
			{"legacy import duplicate key", req{method: "POST", path: "/connection", body: `{"provider_config_key":"oa","provider_config_key":"gh","connection_id":"k1","api_key":"k"}`}, 400, ""},
			{"legacy metadata duplicate key", req{method: "POST", path: "/connection/c1/metadata", header: map[string]string{"Provider-Config-Key": "gh"}, body: `{"a":1,"a":2}`}, 400, "invalid_body"},
			{"legacy metadata invalid UTF-8", req{method: "POST", path: "/connection/c1/metadata", header: map[string]string{"Provider-Config-Key": "gh"}, body: `{"a":"` + "\xff" + `"}`}, 400, "invalid_body"},

			{"metadata not object", req{method: "POST", path: "/connections/metadata", body: `{"metadata":[1],"connection_id":"c1","provider_config_key":"gh"}`}, 400, "invalid_body"},
			{"metadata missing", req{method: "POST", path: "/connections/metadata", body: `{"connection_id":"c1","provider_config_key":"gh"}`}, 400, "invalid_body"},
			{"metadata no connection", req{method: "POST", path: "/connections/metadata", body: `{"metadata":{"x":1},"provider_config_key":"gh"}`}, 400, "invalid_body"},
			{"metadata bad id type", req{method: "PATCH", path: "/connections/metadata", body: `{"metadata":{"x":1},"connection_id":5,"provider_config_key":"gh"}`}, 400, "invalid_body"},
			{"metadata partly unknown", req{method: "POST", path: "/connections/metadata", body: `{"metadata":{"x":1},"connection_id":["c1","nope"],"provider_config_key":"gh"}`}, 404, "not_found"},
			{"metadata unknown integration", req{method: "PATCH", path: "/connections/metadata", body: `{"metadata":{"x":1},"connection_id":"c1","provider_config_key":"nope"}`}, 404, "unknown_provider_config"},
			{"legacy metadata no header", req{method: "POST", path: "/connection/c1/metadata", body: `{"x":1}`}, 400, "invalid_headers"},
			{"legacy metadata array", req{method: "POST", path: "/connection/c1/metadata", header: map[string]string{"Provider-Config-Key": "gh"}, body: `[1]`}, 400, "invalid_body"},

			{"patch long tag", req{method: "PATCH", path: "/connections/c1?provider_config_key=gh", body: `{"tags":{"k":"` + long + `"}}`}, 400, "invalid_body"},
			{"patch tags not object", req{method: "PATCH", path: "/connections/c1?provider_config_key=gh", body: `{"tags":"red"}`}, 400, "invalid_body"},
			{"patch bad webhook url", req{method: "PATCH", path: "/connections/c1?provider_config_key=gh", body: `{"webhook_url_override":"ftp://x"}`}, 400, "invalid_body"},
			{"patch end user no id", req{method: "PATCH", path: "/connections/c1?provider_config_key=gh", body: `{"end_user":{"email":"a@b.c"}}`}, 400, "invalid_body"},
			{"patch unknown", req{method: "PATCH", path: "/connections/nope?provider_config_key=gh", body: `{"tags":{}}`}, 404, "not_found"},
			{"patch empty body", req{method: "PATCH", path: "/connections/c1?provider_config_key=gh"}, 400, "invalid_body"},
			{"delete unknown", req{method: "DELETE", path: "/connections/nope?provider_config_key=gh"}, 404, "not_found"},
			{"delete no integration", req{method: "DELETE", path: "/connections/c1"}, 400, "invalid_query_params"},
			{"legacy delete unknown", req{method: "DELETE", path: "/connection/nope?provider_config_key=gh"}, 404, ""},

			{"action no headers", req{method: "POST", path: "/action/trigger", body: `{"action_name":"x"}`}, 400, "invalid_headers"},
			{"action malformed", req{method: "POST", path: "/action/trigger", header: map[string]string{"Connection-Id": "c1", "Provider-Config-Key": "gh"}, body: `{"action_name":`}, 400, "invalid_body"},
			{"action no name", req{method: "POST", path: "/action/trigger", header: map[string]string{"Connection-Id": "c1", "Provider-Config-Key": "gh"}, body: `{"input":{}}`}, 400, "invalid_body"},
			{"action unknown", req{method: "POST", path: "/action/trigger", header: map[string]string{"Connection-Id": "c1", "Provider-Config-Key": "gh"}, body: `{"action_name":"nope"}`}, 404, "not_found"},
			{"action unknown connection", req{method: "POST", path: "/action/trigger", header: map[string]string{"Connection-Id": "nope", "Provider-Config-Key": "gh"}, body: `{"action_name":"x"}`}, 400, "unknown_connection"},
			{"action bad retries", req{method: "POST", path: "/action/trigger", header: map[string]string{"Connection-Id": "c1", "Provider-Config-Key": "gh", "X-Async": "true", "X-Max-Retries": "9"}, body: `{"action_name":"x"}`}, 400, "invalid_headers"},
			{"action result not uuid", req{method: "GET", path: "/action/abc"}, 400, "invalid_uri_params"},
			{"action result unknown", req{method: "GET", path: "/action/00000000-0000-4000-8000-000000000000"}, 404, "not_found"},
			{"sync trigger malformed", req{method: "POST", path: "/sync/trigger", body: `{"syncs":`}, 400, "invalid_body"},
			{"sync trigger unknown", req{method: "POST", path: "/sync/trigger", body: `{"syncs":["nope"],"provider_config_key":"gh"}`}, 404, "not_found"},
			{"sync pause no syncs", req{method: "POST", path: "/sync/pause", body: `{"provider_config_key":"gh"}`}, 400, "invalid_body"},
			{"sync status no key", req{method: "GET", path: "/sync/status?syncs=*"}, 400, "invalid_query_params"},
			{"sync frequency missing", req{method: "PUT", path: "/sync/update-connection-frequency", body: `{"sync_name":"x"}`}, 400, "invalid_body"},
			{"sync variant base", req{method: "POST", path: "/sync/x/variant/base", body: `{"provider_config_key":"gh","connection_id":"c1"}`}, 400, "invalid_uri_params"},
			{"sync variant unknown sync", req{method: "POST", path: "/sync/x/variant/v1", body: `{"provider_config_key":"gh","connection_id":"c1"}`}, 404, "not_found"},
			{"records no model", req{method: "GET", path: "/records", header: map[string]string{"Connection-Id": "c1", "Provider-Config-Key": "gh"}}, 400, "invalid_query_params"},
			{"records unknown connection", req{method: "GET", path: "/records/?model=Issue", header: map[string]string{"Connection-Id": "nope", "Provider-Config-Key": "gh"}}, 400, "unknown_connection"},
			{"records prune no cursor", req{method: "PATCH", path: "/records/prune", header: map[string]string{"Connection-Id": "c1", "Provider-Config-Key": "gh"}, body: `{"model":"Issue"}`}, 400, "invalid_body"},
			{"functions bad type", req{method: "GET", path: "/integrations/gh/functions?type=job"}, 400, "invalid_query_params"},
			{"functions unknown integration", req{method: "GET", path: "/integrations/nope/functions"}, 404, "unknown_provider_config"},
			{"function unknown", req{method: "GET", path: "/integrations/gh/functions/nope"}, 404, "not_found"},
			{"function delete no type", req{method: "DELETE", path: "/integrations/gh/functions/nope"}, 400, "invalid_query_params"},
			{"scripts config bad format", req{method: "GET", path: "/scripts/config?format=yaml"}, 400, "invalid_query_params"},
			{"templates unknown provider", req{method: "GET", path: "/providers/not-a-provider/templates"}, 404, "not_found"},
			{"two-step no session", req{method: "POST", path: "/auth/two-step/gh", key: "-", body: `{"type":"TWO_STEP"}`}, 401, "missing_connect_session_token"},
			{"two-step malformed", req{method: "POST", path: "/auth/two-step/gh?connect_session_token=" + tok, key: "-", body: `{"type":`}, 400, "invalid_body"},
			{"two-step wrong mode", req{method: "POST", path: "/auth/two-step/gh?connect_session_token=" + tok, key: "-", body: `{"type":"TWO_STEP","a":"b"}`}, 400, "invalid_auth_mode"},
			{"two-step wrong type", req{method: "POST", path: "/auth/two-step/gh?connect_session_token=" + tok, key: "-", body: `{"type":"JWT"}`}, 400, "invalid_credentials"},
			{"jwt array", req{method: "POST", path: "/auth/jwt/gh?connect_session_token=" + tok, key: "-", body: `[1]`}, 400, "invalid_body"},
			{"jwt wrong mode", req{method: "POST", path: "/auth/jwt/oa?connect_session_token=" + tok, key: "-", body: `{"privateKey":"k"}`}, 400, "invalid_auth_mode"},
			{"signature bad username", req{method: "POST", path: "/auth/signature/gh?connect_session_token=" + tok, key: "-", body: `{"type":"SIGNATURE","username":5,"password":"p"}`}, 400, "invalid_credentials"},
			{"signature unknown token", req{method: "POST", path: "/auth/signature/gh?connect_session_token=nango_connect_session_" + strings.Repeat("0", 64), key: "-", body: `{}`}, 401, "unknown_connect_session_token"},
			{"bill wrong mode", req{method: "POST", path: "/auth/bill/tw?connect_session_token=" + tok, key: "-", body: `{"username":"u","password":"p","organization_id":"o","dev_key":"d"}`}, 400, "invalid_auth_mode"},
			{"bill unknown integration", req{method: "POST", path: "/auth/bill/nope?connect_session_token=" + tok, key: "-", body: `{"username":"u"}`}, 400, "integration_not_allowed"},

			{"two-step malformed", req{method: "POST", path: "/auth/two-step/vy?connect_session_token=" + mtok, key: "-", body: `{"email":`}, 400, "invalid_body"},
			{"two-step not an object", req{method: "POST", path: "/auth/two-step/vy?connect_session_token=" + mtok, key: "-", body: `"TWO_STEP"`}, 400, "invalid_body"},
			{"two-step type not a string", req{method: "POST", path: "/auth/two-step/vy?connect_session_token=" + mtok, key: "-", body: `{"type":5,"email":"a@b.c","password":"p"}`}, 400, "invalid_credentials"},
			{"two-step missing input", req{method: "POST", path: "/auth/two-step/vy?connect_session_token=" + mtok, key: "-", body: `{"type":"TWO_STEP","email":"a@b.c"}`}, 400, "invalid_credentials"},
			{"two-step oversized input", req{method: "POST", path: "/auth/two-step/vy?connect_session_token=" + mtok, key: "-", body: `{"type":"TWO_STEP","email":"a@b.c","password":"` + huge + `"}`}, 400, "invalid_credentials"},
			{"two-step NUL input", req{method: "POST", path: "/auth/two-step/vy?connect_session_token=" + mtok, key: "-", body: `{"type":"TWO_STEP","email":"a@b.c","password":"p\u0000"}`}, 400, "invalid_body"},
			{"two-step oversized body", req{method: "POST", path: "/auth/two-step/vy?connect_session_token=" + mtok, key: "-", body: `{"type":"TWO_STEP","email":"` + strings.Repeat("e", 2<<20) + `"}`}, 413, "payload_too_large"},
			{"two-step unknown integration", req{method: "POST", path: "/auth/two-step/nope?connect_session_token=" + otok, key: "-", body: `{"type":"TWO_STEP","email":"a"}`}, 404, "unknown_provider_config"},
			{"two-step on signature", req{method: "POST", path: "/auth/two-step/em?connect_session_token=" + mtok, key: "-", body: `{"type":"TWO_STEP","email":"a"}`}, 400, "invalid_auth_mode"},
			{"jwt malformed", req{method: "POST", path: "/auth/jwt/jw?connect_session_token=" + mtok, key: "-", body: `{"privateKey"`}, 400, "invalid_body"},
			{"jwt not a key", req{method: "POST", path: "/auth/jwt/jw?connect_session_token=" + mtok, key: "-", body: `{"type":"JWT","accountIdentifier":"A","userName":"B","privateKey":"not a key"}`}, 400, "invalid_credentials"},
			{"jwt wrong type", req{method: "POST", path: "/auth/jwt/jw?connect_session_token=" + mtok, key: "-", body: `{"type":"TWO_STEP","accountIdentifier":"A","userName":"B","privateKey":"k"}`}, 400, "invalid_credentials"},
			{"jwt missing input", req{method: "POST", path: "/auth/jwt/jw?connect_session_token=" + mtok, key: "-", body: `{"type":"JWT","accountIdentifier":"A","privateKey":"k"}`}, 400, "invalid_credentials"},
			{"jwt oversized key", req{method: "POST", path: "/auth/jwt/jw?connect_session_token=" + mtok, key: "-", body: `{"type":"JWT","accountIdentifier":"A","userName":"B","privateKey":"` + huge + `"}`}, 400, "invalid_credentials"},
			{"jwt unknown integration", req{method: "POST", path: "/auth/jwt/nope?connect_session_token=" + otok, key: "-", body: `{"type":"JWT"}`}, 404, "unknown_provider_config"},
			{"jwt on two-step", req{method: "POST", path: "/auth/jwt/vy?connect_session_token=" + mtok, key: "-", body: `{"type":"JWT","privateKey":"k"}`}, 400, "invalid_auth_mode"},
			{"signature malformed", req{method: "POST", path: "/auth/signature/em?connect_session_token=" + mtok, key: "-", body: `{"username":"u",}`}, 400, "invalid_body"},
			{"signature password not a string", req{method: "POST", path: "/auth/signature/em?connect_session_token=" + mtok, key: "-", body: `{"type":"SIGNATURE","username":"u","password":["p"]}`}, 400, "invalid_credentials"},
			{"signature missing password", req{method: "POST", path: "/auth/signature/em?connect_session_token=" + mtok, key: "-", body: `{"type":"SIGNATURE","username":"u"}`}, 400, "invalid_credentials"},
			{"signature pattern", req{method: "POST", path: "/auth/signature/em?connect_session_token=" + mtok, key: "-", body: `{"type":"SIGNATURE","username":"u","password":"not valid!"}`}, 400, "invalid_credentials"},
			{"signature oversized", req{method: "POST", path: "/auth/signature/em?connect_session_token=" + mtok, key: "-", body: `{"type":"SIGNATURE","username":"u","password":"` + huge + `"}`}, 400, "invalid_credentials"},
			{"signature unknown integration", req{method: "POST", path: "/auth/signature/nope?connect_session_token=" + otok, key: "-", body: `{"type":"SIGNATURE","username":"u","password":"p"}`}, 404, "unknown_provider_config"},
			{"signature on bill", req{method: "POST", path: "/auth/signature/bl?connect_session_token=" + mtok, key: "-", body: `{"type":"SIGNATURE","username":"u","password":"p"}`}, 400, "invalid_auth_mode"},
			{"bill malformed", req{method: "POST", path: "/auth/bill/bl?connect_session_token=" + mtok, key: "-", body: `{"username":}`}, 400, "invalid_body"},
			{"bill org not a string", req{method: "POST", path: "/auth/bill/bl?connect_session_token=" + mtok, key: "-", body: `{"username":"u","password":"p","organization_id":7,"dev_key":"d"}`}, 400, "invalid_credentials"},
			{"bill missing dev key", req{method: "POST", path: "/auth/bill/bl?connect_session_token=" + mtok, key: "-", body: `{"username":"u","password":"p","organization_id":"o"}`}, 400, "invalid_credentials"},
			{"bill oversized", req{method: "POST", path: "/auth/bill/bl?connect_session_token=" + mtok, key: "-", body: `{"username":"u","password":"p","organization_id":"o","dev_key":"` + huge + `"}`}, 400, "invalid_credentials"},
			{"bill on signature", req{method: "POST", path: "/auth/bill/em?connect_session_token=" + mtok, key: "-", body: `{"username":"u","password":"p","organization_id":"o","dev_key":"d"}`}, 400, "invalid_auth_mode"},
			{"tba malformed", req{method: "POST", path: "/auth/tba/ns?connect_session_token=" + mtok + "&params[accountId]=acme", key: "-", body: `{"token_id":`}, 400, "invalid_body"},
			{"tba token id not a string", req{method: "POST", path: "/auth/tba/ns?connect_session_token=" + mtok + "&params[accountId]=acme", key: "-", body: `{"token_id":5,"token_secret":"s"}`}, 400, "invalid_body"},
			{"tba missing secret", req{method: "POST", path: "/auth/tba/ns?connect_session_token=" + mtok + "&params[accountId]=acme", key: "-", body: `{"token_id":"t"}`}, 400, "invalid_credentials"},
			{"tba oversized", req{method: "POST", path: "/auth/tba/ns?connect_session_token=" + mtok + "&params[accountId]=acme", key: "-", body: `{"token_id":"t","token_secret":"` + huge + `"}`}, 400, "invalid_credentials"},
			{"tba unknown integration", req{method: "POST", path: "/auth/tba/nope?connect_session_token=" + otok, key: "-", body: `{"token_id":"t","token_secret":"s"}`}, 404, "unknown_provider_config"},
			{"tba on bill", req{method: "POST", path: "/auth/tba/bl?connect_session_token=" + mtok, key: "-", body: `{"token_id":"t","token_secret":"s"}`}, 400, "invalid_auth_mode"},
			{"aws malformed", req{method: "POST", path: "/auth/aws-sigv4/aws?connect_session_token=" + mtok, key: "-", body: `{"role_arn"`}, 400, "invalid_body"},
			{"aws role not a string", req{method: "POST", path: "/auth/aws-sigv4/aws?connect_session_token=" + mtok, key: "-", body: `{"role_arn":{"a":1}}`}, 400, "invalid_body"},
			{"aws not a role", req{method: "POST", path: "/auth/aws-sigv4/aws?connect_session_token=" + mtok, key: "-", body: `{"role_arn":"arn:aws:s3:::bucket"}`}, 400, "invalid_credentials"},
			{"aws bad region", req{method: "POST", path: "/auth/aws-sigv4/aws?connect_session_token=" + mtok, key: "-", body: `{"role_arn":"arn:aws:iam::123456789012:role/R","region":"evil.com/x"}`}, 400, "invalid_credentials"},
			{"aws oversized role", req{method: "POST", path: "/auth/aws-sigv4/aws?connect_session_token=" + mtok, key: "-", body: `{"role_arn":"arn:aws:iam::123456789012:role/` + huge + `"}`}, 400, "invalid_credentials"},
			{"aws unknown integration", req{method: "POST", path: "/auth/aws-sigv4/nope?connect_session_token=" + otok, key: "-", body: `{"role_arn":"arn:aws:iam::123456789012:role/R"}`}, 404, "unknown_provider_config"},
			{"aws on tba", req{method: "POST", path: "/auth/aws-sigv4/ns?connect_session_token=" + mtok, key: "-", body: `{"role_arn":"arn:aws:iam::123456789012:role/R"}`}, 400, "invalid_auth_mode"},
			{"mcp generic no server", req{method: "GET", path: "/oauth/connect/cfmcp?connect_session_token=" + mtok, key: "-"}, 400, "missing_connection_config"},
			{"mcp generic ftp server", req{method: "GET", path: "/oauth/connect/cfmcp?connect_session_token=" + mtok + "&params[mcp_server_url]=ftp://127.0.0.1/mcp", key: "-"}, 400, "invalid_connection_config"},
			{"mcp generic oversized server", req{method: "GET", path: "/oauth/connect/cfmcp?connect_session_token=" + mtok + "&params[mcp_server_url]=https://a.example.com/" + strings.Repeat("m", 8<<10), key: "-"}, 400, "invalid_query_params"},
			{"mcp bad client id", req{method: "GET", path: "/oauth/connect/amcp?connect_session_token=" + mtok + "&ws_client_id=a%20b", key: "-"}, 400, "url_param_err"},
			{"mcp oversized user scope", req{method: "GET", path: "/oauth/connect/amcp?connect_session_token=" + mtok + "&user_scope=" + strings.Repeat("s", 8<<10+1), key: "-"}, 400, "url_param_err"},
			{"mcp unknown integration", req{method: "GET", path: "/oauth/connect/nope?connect_session_token=" + otok, key: "-"}, 404, "unknown_config_key"},
			{"custom malformed params", req{method: "GET", path: "/oauth/connect/ghao?connect_session_token=" + mtok + "&params[a", key: "-"}, 400, "invalid_query_params"},
			{"custom no session", req{method: "GET", path: "/oauth/connect/ghao", key: "-"}, 401, "missing_connect_session_token"},
			{"plugin oversized param", req{method: "GET", path: "/oauth/connect/crisp?connect_session_token=" + mtok + "&params[website_id]=" + strings.Repeat("w", 8<<10), key: "-"}, 400, "invalid_connection_config"},
			{"plugin not allowed", req{method: "GET", path: "/oauth/connect/crisp?connect_session_token=" + tok, key: "-"}, 400, "integration_not_allowed"},
			{"popup on signature", req{method: "GET", path: "/oauth/connect/em?connect_session_token=" + mtok, key: "-"}, 400, "auth_mode_err"},
			{"mtls no certificate", req{method: "POST", path: "/oauth2/auth/adp?connect_session_token=" + ctok, key: "-", body: `{"client_id":"i","client_secret":"s"}`}, 400, "invalid_credentials"},
			{"mtls not PEM", req{method: "POST", path: "/oauth2/auth/adp?connect_session_token=" + ctok, key: "-", body: ck.body("-----BEGIN CERTIFICATE-----\nnot base64!\n-----END CERTIFICATE-----", ck.key)}, 400, "invalid_credentials"},
			{"mtls bad certificate", req{method: "POST", path: "/oauth2/auth/adp?connect_session_token=" + ctok, key: "-", body: ck.body("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----", ck.key)}, 400, "invalid_credentials"},
			{"mtls stray key", req{method: "POST", path: "/oauth2/auth/adp?connect_session_token=" + ctok, key: "-", body: ck.body(ck.cert, ck.stray)}, 400, "invalid_credentials"},
			{"mtls certificate number", req{method: "POST", path: "/oauth2/auth/adp?connect_session_token=" + ctok, key: "-", body: `{"client_id":"i","client_secret":"s","client_certificate":5}`}, 400, "invalid_body"},
			{"certificate for a provider without mTLS", req{method: "POST", path: "/oauth2/auth/zi?connect_session_token=" + ctok, key: "-", body: ck.body(ck.cert, ck.key)}, 400, "invalid_credentials"},
			{"jwk not JSON", req{method: "POST", path: "/oauth2/auth/okta?connect_session_token=" + ctok, key: "-", body: `{"client_id":"i","client_private_key":"not json"}`}, 400, "invalid_credentials"},
			{"jwk not RSA", req{method: "POST", path: "/oauth2/auth/okta?connect_session_token=" + ctok, key: "-", body: `{"client_id":"i","client_private_key":"{\"kty\":\"oct\",\"kid\":\"k\",\"k\":\"AAAA\"}"}`}, 400, "invalid_credentials"},
			{"jwk small key", req{method: "POST", path: "/oauth2/auth/okta?connect_session_token=" + ctok, key: "-", body: `{"client_id":"i","client_private_key":` + jsonString(ck.smallJWK) + `}`}, 400, "invalid_credentials"},
			{"jwk missing", req{method: "POST", path: "/oauth2/auth/okta?connect_session_token=" + ctok, key: "-", body: `{"client_id":"i","client_secret":"s"}`}, 400, "invalid_credentials"},
			{"import mtls stray key", req{method: "POST", path: "/connections", body: `{"provider_config_key":"adp","connection_id":"m1","credentials":{"type":"OAUTH2_CC","client_id":"i","client_secret":"s","client_certificate":` + jsonString(ck.cert) + `,"client_private_key":` + jsonString(ck.stray) + `}}`}, 400, "invalid_credentials"},
			{"import mtls no certificate", req{method: "POST", path: "/connections", body: `{"provider_config_key":"adp","connection_id":"m1","credentials":{"type":"OAUTH2_CC","client_id":"i","client_secret":"s"}}`}, 400, "invalid_credentials"},
			{"import bad jwk", req{method: "POST", path: "/connections", body: `{"provider_config_key":"okta","connection_id":"m1","credentials":{"type":"OAUTH2_CC","client_id":"i","client_private_key":"{}"}}`}, 400, "invalid_credentials"},
			{"import jwk no key", req{method: "POST", path: "/connections", body: `{"provider_config_key":"okta","connection_id":"m1","credentials":{"type":"OAUTH2_CC","client_id":"i"}}`}, 400, "invalid_credentials"},
		}
		before := snapshot(t, bu)
		for _, tc := range cases {
			r := badInputDo(t, bu, tc.rq)
			if r.status != tc.status {
				t.Errorf("%s: %s %s = %d %s, want %d", tc.name, tc.rq.method, tc.rq.path, r.status, r.raw, tc.status)
				continue
			}
			if tc.code == "" {
				if m, _ := r.obj()["message"].(string); m == "" {
					t.Errorf("%s: body %s has no message", tc.name, r.raw)
				}
				continue
			}
			if got := badInputCode(r); got != tc.code {
				t.Errorf("%s: code %q (%s), want %q", tc.name, got, r.raw, tc.code)
			}
		}
		if diff := cmp.Diff(before, snapshot(t, bu)); diff != "" {
			t.Errorf("bad input changed the store (-before +after):\n%s", diff)
		}
	})
}

func TestMountUnderPrefix(t *testing.T) {
	t.Parallel()
	bu := setup(t, sqliteBackend(t))
	mux := http.NewServeMux()
	mux.Handle("/api/", http.StripPrefix("/api", bu.svc.APIHandler()))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	r, _ := http.NewRequest("GET", srv.URL+"/api/integrations", nil)
	r.Header.Set("Authorization", "Bearer "+bu.key)
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET /api/integrations = %d", resp.StatusCode)
	}
}

func TestNewValidatesConfig(t *testing.T) {
	t.Parallel()
	b := sqliteBackend(t)
	st, sched := b.store, schedulerFor(t, b)
	for name, cfg := range map[string]connect.Config{
		"no store":        {Scheduler: sched, EncryptionKeys: []connect.EncryptionKey{testKey}},
		"no keys":         {Store: st, Scheduler: sched},
		"short key":       {Store: st, Scheduler: sched, EncryptionKeys: []connect.EncryptionKey{{ID: "a", Key: []byte("short")}}},
		"bad key id":      {Store: st, Scheduler: sched, EncryptionKeys: []connect.EncryptionKey{{ID: "a b", Key: testKey.Key}}},
		"bad public url":  {Store: st, Scheduler: sched, EncryptionKeys: []connect.EncryptionKey{testKey}, PublicURL: "not a url"},
		"negative window": {Store: st, Scheduler: sched, EncryptionKeys: []connect.EncryptionKey{testKey}, RateLimitWindow: -1},
	} {
		if _, err := connect.New(cfg); err == nil {
			t.Errorf("%s: New succeeded", name)
		}
	}
}

func TestNewRequiresScheduler(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		_, err := connect.New(connect.Config{Store: b.store, EncryptionKeys: []connect.EncryptionKey{testKey}})
		if !errors.Is(err, connect.ErrMissingScheduler) {
			t.Fatalf("New without a Scheduler: %v", err)
		}
		for _, name := range []string{"sqlite.Connect", "postgres.Connect"} {
			if !strings.Contains(err.Error(), name) {
				t.Errorf("the error does not name %s: %v", name, err)
			}
		}
	})
}
