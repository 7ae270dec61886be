package connect_test

import (
	"context"
	"crypto/sha256"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/embedauth/connect/environments"
)

// apiKeyRoutes is one request per API-key route, each valid but for its
// authorization (on the data of seed).
var apiKeyRoutes = []req{
	{method: "GET", path: "/providers"},
	{method: "GET", path: "/providers/github"},
	{method: "GET", path: "/integrations"},
	{method: "GET", path: "/integrations/gh"},
	{method: "GET", path: "/integrations/gh?include=credentials"},
	{method: "POST", path: "/integrations", body: `{"provider":"github","unique_key":"gh-new"}`},
	{method: "PATCH", path: "/integrations/gh", body: `{"display_name":"Renamed"}`},
	{method: "DELETE", path: "/integrations/tw"},
	{method: "GET", path: "/connections"},
	{method: "GET", path: "/connection"},
	{method: "GET", path: "/connections/c1?provider_config_key=gh"},
	{method: "GET", path: "/connection/c1?provider_config_key=gh"},
	{method: "POST", path: "/connections", body: `{"provider_config_key":"oa","connection_id":"k9","api_key":"sk-9"}`},
	{method: "POST", path: "/connection", body: `{"provider_config_key":"oa","connection_id":"k9","api_key":"sk-9"}`},
	{method: "POST", path: "/connections/metadata", body: `{"metadata":{"x":1},"connection_id":"c1","provider_config_key":"gh"}`},
	{method: "PATCH", path: "/connections/metadata", body: `{"metadata":{"x":1},"connection_id":"c1","provider_config_key":"gh"}`},
	{method: "POST", path: "/connection/metadata", body: `{"metadata":{"x":1},"connection_id":"c1","provider_config_key":"gh"}`},
	{method: "PATCH", path: "/connection/metadata", body: `{"metadata":{"x":1},"connection_id":"c1","provider_config_key":"gh"}`},
	{method: "POST", path: "/connection/c1/metadata", header: map[string]string{"Provider-Config-Key": "gh"}, body: `{"x":1}`},
	{method: "PATCH", path: "/connection/c1/metadata", header: map[string]string{"Provider-Config-Key": "gh"}, body: `{"x":1}`},
	{method: "PATCH", path: "/connections/c1?provider_config_key=gh", body: `{"tags":{"a":"b"}}`},
	{method: "DELETE", path: "/connections/c2?provider_config_key=gh"},
	{method: "DELETE", path: "/connection/c2?provider_config_key=gh"},
	{method: "GET", path: "/environment-variables"},
	{method: "PUT", path: "/environment-variables", body: `[{"name":"REGION","value":"eu"}]`},
	{method: "GET", path: "/environment"},
	{method: "PATCH", path: "/environment", body: `{"connect_ui":{"theme":"dark"}}`},
	{method: "POST", path: "/environment/webhook-signing-key"},
	{method: "GET", path: "/environment/api-keys"},
	{method: "POST", path: "/environment/api-keys", body: `{"name":"ci","scopes":["environment:proxy"]}`},
	{method: "DELETE", path: "/environment/api-keys/1"},
	{method: "GET", path: "/logs/operations?status=failure&limit=10"},
	{method: "GET", path: "/logs/operations/0189c3a1f2b4d5e6a1b2c3d4e5f6"},
	{method: "GET", path: "/logs/stats?bucket=day"},
	{method: "GET", path: "/connections?status=auth_error&limit=10"},
	{method: "POST", path: "/sync/cancel", body: `{"provider_config_key":"gh","syncs":[]}`},
	{method: "PATCH", path: "/integrations/gh/functions/x?type=action", body: `{"enabled":false}`},
	{method: "POST", path: "/connect/sessions", body: `{"tags":{"a":"b"}}`},
	{method: "POST", path: "/connect/sessions/reconnect", body: `{"connection_id":"c1","integration_id":"gh"}`},
	{method: "GET", path: "/proxy/user", header: map[string]string{"Connection-Id": "c1", "Provider-Config-Key": "gh"}},
	{method: "POST", path: "/proxy/user", header: map[string]string{"Connection-Id": "c1", "Provider-Config-Key": "gh"}, body: `{}`},
	{method: "POST", path: "/sync/deploy/confirmation", body: `{"flowConfigs":[],"reconcile":false,"deployMode":"all"}`},
	{method: "POST", path: "/sync/deploy", body: `{"flowConfigs":[],"reconcile":false,"deployMode":"single"}`},
	{method: "POST", path: "/functions/deployments/bundle/preview", body: `{"reconciliationScope":{"kind":"environment"},"functions":[]}`},
	{method: "POST", path: "/functions/deployments/bundle", body: `{"reconciliationScope":{"kind":"integration","integrationId":"gh"},"functions":[]}`},
	{method: "POST", path: "/mcp", header: map[string]string{"Connection-Id": "c1", "Provider-Config-Key": "gh", "Accept": "application/json, text/event-stream"},
		body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"noop","arguments":{}}}`},
}

// TestAPIKeyWithoutScopes: authorization fails closed. A key created
// without scopes (nil or empty) holds none: every API-key route answers
// it 403 and nothing changes; only an explicit environment:* grants
// everything.
func TestAPIKeyWithoutScopes(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		bu := setup(t, b)
		seed(t, bu)
		ctx := context.Background()
		envs := bu.svc.Environments()
		var keys []string
		for _, in := range []environments.NewAPIKey{{Name: "nil scopes"}, {Name: "empty scopes", Scopes: []string{}}} {
			raw, k, err := envs.CreateAPIKey(ctx, bu.env.ID, in)
			if err != nil {
				t.Fatal(err)
			}
			if len(k.Scopes) != 0 {
				t.Errorf("%s: stored scopes %q, want none", in.Name, k.Scopes)
			}
			keys = append(keys, raw)
		}
		all, _, err := envs.CreateAPIKey(ctx, bu.env.ID, environments.NewAPIKey{Name: "all", Scopes: []string{environments.ScopeAll}})
		if err != nil {
			t.Fatal(err)
		}
		before := snapshot(t, bu)
		for _, key := range keys {
			p, err := envs.Authenticate(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Scopes) != 0 {
				t.Errorf("principal scopes %q, want none", p.Scopes)
			}
			for _, s := range append(environments.AllScopes(), environments.ScopeAll) {
				if p.Allows(s) {
					t.Errorf("a key without scopes allows %s", s)
				}
			}
			for _, rq := range apiKeyRoutes {
				rq.key = key
				r := bu.do(t, rq)
				// The deprecated import and delete routes answer {"message"}.
				msg, _ := r.obj()["message"].(string)
				if r.status != 403 || (r.errCode() != "forbidden" && msg == "") {
					t.Errorf("%s %s with a key without scopes = %d %s, want 403 forbidden", rq.method, rq.path, r.status, r.raw)
				}
			}
		}
		if diff := cmp.Diff(before, snapshot(t, bu)); diff != "" {
			t.Errorf("a key without scopes changed the store (-before +after):\n%s", diff)
		}
		// An explicit environment:* reaches the routes.
		for _, rq := range []req{{method: "GET", path: "/integrations"}, {method: "GET", path: "/environment-variables"}} {
			rq.key = all
			bu.mustDo(t, 200, rq)
		}
	})
}

// TestStoredAPIKeysKeepTheirScopes: keys are stored with the scopes they
// hold. The code before fail-closed authorization expanded an empty list
// to environment:* when it created the key, not when it checked it, so a
// stored row says what the key may do and needs no migration: a row with
// environment:* keeps full access, and a row without scopes (only ever
// written to a Store directly) has none.
func TestStoredAPIKeysKeepTheirScopes(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		bu := setup(t, b)
		seed(t, bu)
		ctx := context.Background()
		row := func(raw string, scopes []string) string {
			h := sha256.Sum256([]byte(raw))
			k := &environments.APIKey{EnvironmentID: bu.env.ID, Name: raw, Hash: h[:], Hint: raw[len(raw)-4:], Scopes: scopes,
				CreatedAt: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
			if err := b.store.CreateAPIKey(ctx, k); err != nil {
				t.Fatal(err)
			}
			return raw
		}
		old := row("sk_created_before_fail_closed_0001", []string{environments.ScopeAll})
		none := row("sk_stored_without_any_scope_00001", nil)
		for _, rq := range apiKeyRoutes {
			rq.key = none
			if r := bu.do(t, rq); r.status != 403 {
				t.Errorf("%s %s with a stored key without scopes = %d %s, want 403", rq.method, rq.path, r.status, r.raw)
			}
		}
		for _, rq := range []req{{method: "GET", path: "/integrations"}, {method: "GET", path: "/connections/c1?provider_config_key=gh"},
			{method: "GET", path: "/environment-variables"}} {
			rq.key = old
			bu.mustDo(t, 200, rq)
		}
	})
}
