package connect_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/oplog"
	"github.com/embedauth/connect/ratelimit"
)

func TestIntegrationsAPI(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		bu := setup(t, b)
		seed(t, bu)

		list := bu.mustDo(t, 200, req{method: "GET", path: "/integrations"})
		data := list.obj()["data"].([]any)
		if len(data) != 3 {
			t.Fatalf("list has %d integrations", len(data))
		}
		first := data[0].(map[string]any)
		var keys []string
		for k := range first {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if diff := cmp.Diff([]string{"created_at", "logo", "provider", "unique_key", "updated_at"}, keys); diff != "" {
			t.Errorf("list form fields (-want +got):\n%s", diff)
		}
		if first["unique_key"] != "gh" || first["provider"] != "github" || first["created_at"] != "2026-05-01T12:00:00.000Z" {
			t.Errorf("list item %v", first)
		}

		plain := bu.mustDo(t, 200, req{method: "GET", path: "/integrations/gh", header: map[string]string{"Content-Type": "application/json"}}).obj()["data"].(map[string]any)
		if _, ok := plain["credentials"]; ok {
			t.Errorf("credentials without include: %v", plain)
		}
		if plain["display_name"] != "GitHub" || plain["forward_webhooks"] != true {
			t.Errorf("single form %v", plain)
		}
		withCreds := bu.mustDo(t, 200, req{method: "GET", path: "/integrations/gh?include=credentials"}).obj()["data"].(map[string]any)
		wantCreds := map[string]any{"type": "OAUTH2", "client_id": "cid", "client_secret": "csecret-gh", "scopes": "repo,user"}
		if diff := cmp.Diff(wantCreds, withCreds["credentials"]); diff != "" {
			t.Errorf("credentials (-want +got):\n%s", diff)
		}
		hook := bu.mustDo(t, 200, req{method: "GET", path: "/integrations/gh?include=webhook&include=credentials"}).obj()["data"].(map[string]any)
		if hook["webhook_url"] != "https://connect.example.com/webhook/dev/gh" || hook["credentials"] == nil {
			t.Errorf("include both: %v", hook)
		}
		none := bu.mustDo(t, 200, req{method: "GET", path: "/integrations/oa?include=credentials"})
		if v, ok := none.obj()["data"].(map[string]any)["credentials"]; !ok || v != nil {
			t.Errorf("API-key integration credentials = %v (present %v), want null", v, ok)
		}

		// Only the passed fields change.
		bu.now.t = bu.now.t.Add(time.Hour)
		upd := bu.mustDo(t, 200, req{method: "PATCH", path: "/integrations/gh", body: `{"display_name":"GH"}`}).obj()["data"].(map[string]any)
		if upd["display_name"] != "GH" || upd["forward_webhooks"] != true || upd["updated_at"] != "2026-05-01T13:00:00.000Z" || upd["created_at"] != "2026-05-01T12:00:00.000Z" {
			t.Errorf("after display_name update: %v", upd)
		}
		after := bu.mustDo(t, 200, req{method: "GET", path: "/integrations/gh?include=credentials"}).obj()["data"].(map[string]any)
		if diff := cmp.Diff(wantCreds, after["credentials"]); diff != "" {
			t.Errorf("credentials changed by a display_name update (-want +got):\n%s", diff)
		}
		bu.mustDo(t, 200, req{method: "PATCH", path: "/integrations/gh", body: `{"forward_webhooks":false,"credentials":{"type":"OAUTH2","client_id":"cid2","client_secret":"s2"}}`})
		after = bu.mustDo(t, 200, req{method: "GET", path: "/integrations/gh?include=credentials"}).obj()["data"].(map[string]any)
		if after["display_name"] != "GH" || after["forward_webhooks"] != false || after["credentials"].(map[string]any)["client_id"] != "cid2" {
			t.Errorf("after second update: %v", after)
		}

		// Rename without connections works; with connections it is refused.
		r := bu.mustDo(t, 200, req{method: "PATCH", path: "/integrations/tw", body: `{"unique_key":"twilio-main"}`})
		if r.obj()["data"].(map[string]any)["unique_key"] != "twilio-main" {
			t.Errorf("rename: %s", r.raw)
		}
		bu.mustDo(t, 404, req{method: "GET", path: "/integrations/tw"})
		bu.mustDo(t, 409, req{method: "PATCH", path: "/integrations/gh", body: `{"unique_key":"gh-renamed"}`})

		// Delete removes the integration and its connections.
		del := bu.mustDo(t, 200, req{method: "DELETE", path: "/integrations/gh"})
		if del.obj()["success"] != true {
			t.Errorf("delete body %s", del.raw)
		}
		bu.mustDo(t, 404, req{method: "GET", path: "/integrations/gh"})
		conns := bu.mustDo(t, 200, req{method: "GET", path: "/connections"}).obj()["connections"].([]any)
		if len(conns) != 1 || conns[0].(map[string]any)["connection_id"] != "k1" {
			t.Errorf("connections after deleting gh: %v", conns)
		}
	})
}

func TestConnectionsAPI(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		bu := setup(t, b)
		seed(t, bu)
		bu.mustDo(t, 201, req{method: "POST", path: "/connections", body: `{"provider_config_key":"oa","connection_id":"c1","api_key":"k-oa-c1"}`})
		bu.mustDo(t, 201, req{method: "POST", path: "/connection", body: `{"provider_config_key":"tw","connection_id":"c 1/x","username":"AC1","password":"pw","connection_config":{"region":"eu"}}`})

		ids := func(q string) []string {
			t.Helper()
			r := bu.mustDo(t, 200, req{method: "GET", path: "/connections" + q, header: map[string]string{"Content-Type": "application/json"}})
			var out []string
			for _, c := range r.obj()["connections"].([]any) {
				m := c.(map[string]any)
				out = append(out, m["provider_config_key"].(string)+"/"+m["connection_id"].(string))
			}
			return out
		}
		for q, want := range map[string][]string{
			"":                                  {"gh/c1", "gh/c2", "oa/k1", "oa/c1", "tw/c 1/x"},
			"?connectionId=c1":                  {"gh/c1", "oa/c1"},
			"?integrationId=oa%2Ctw":            {"oa/k1", "oa/c1", "tw/c 1/x"},
			"?integrationId=gh&connectionId=c1": {"gh/c1"},
			"?tags%5Bteam%5D=red":               {"gh/c2"},
			"?tags%5BTEAM%5D=red":               {"gh/c2"},
			"?tags%5Bteam%5D=blue":              nil,
			"?endUserId=u1":                     {"gh/c1"},
			"?limit=2":                          {"gh/c1", "gh/c2"},
			"?limit=2&page=1":                   {"oa/k1", "oa/c1"},
			"?limit=2&page=2":                   {"tw/c 1/x"},
			"?search=C":                         {"gh/c1", "gh/c2", "oa/c1", "tw/c 1/x"},
		} {
			if diff := cmp.Diff(want, ids(q)); diff != "" {
				t.Errorf("GET /connections%s (-want +got):\n%s", q, diff)
			}
		}

		list := bu.mustDo(t, 200, req{method: "GET", path: "/connections?connectionId=c1&integrationId=gh"}).obj()["connections"].([]any)[0].(map[string]any)
		wantList := map[string]any{"id": list["id"], "connection_id": "c1", "provider": "github", "provider_config_key": "gh",
			"created": "2026-05-01T12:00:00.000Z", "metadata": map[string]any{"a": float64(1)}, "tags": map[string]any{"end_user_id": "u1"},
			"end_user": map[string]any{"id": "u1", "display_name": nil, "email": nil, "tags": map[string]any{}, "organization": nil},
			"errors":   []any{},
			"health":   map[string]any{"auth_error": false, "sync_error": false, "paused": false}}
		if diff := cmp.Diff(wantList, list); diff != "" {
			t.Errorf("list form (-want +got):\n%s", diff)
		}

		// Credentials per type; the refresh token only when asked.
		get := func(id, key, flags string) map[string]any {
			t.Helper()
			return bu.mustDo(t, 200, req{method: "GET", path: "/connections/" + url.PathEscape(id) + "?provider_config_key=" + key + flags}).obj()
		}
		c1 := get("c1", "gh", "&force_refresh=false&refresh_token=false&refresh_github_app_jwt_token=false")
		wantCreds := map[string]any{"type": "OAUTH2", "access_token": "at-c1", "expires_at": "2030-01-02T03:04:05.000Z",
			"raw": map[string]any{"access_token": "at-c1", "expires_at": "2030-01-02T03:04:05Z"}}
		if diff := cmp.Diff(wantCreds, c1["credentials"]); diff != "" {
			t.Errorf("OAuth2 credentials (-want +got):\n%s", diff)
		}
		if strings.Contains(fmt.Sprint(c1), "rt-c1") {
			t.Errorf("refresh token leaked without refresh_token=true: %v", c1)
		}
		withRT := get("c1", "gh", "&refresh_token=true")["credentials"].(map[string]any)
		if withRT["refresh_token"] != "rt-c1" || withRT["raw"].(map[string]any)["refresh_token"] != "rt-c1" {
			t.Errorf("refresh_token=true: %v", withRT)
		}
		if diff := cmp.Diff(map[string]any{"type": "API_KEY", "apiKey": "sk-live-k1"}, get("k1", "oa", "")["credentials"]); diff != "" {
			t.Errorf("API key credentials (-want +got):\n%s", diff)
		}
		basic := get("c 1/x", "tw", "")
		if diff := cmp.Diff(map[string]any{"type": "BASIC", "username": "AC1", "password": "pw"}, basic["credentials"]); diff != "" {
			t.Errorf("Basic credentials (-want +got):\n%s", diff)
		}
		if basic["connection_config"].(map[string]any)["region"] != "eu" || basic["webhook_url_override"] != nil {
			t.Errorf("full form %v", basic)
		}
		if _, ok := get("c2", "gh", "")["credentials"].(map[string]any)["expires_at"]; ok {
			t.Errorf("no_expiration connection has expires_at")
		}

		// A read-only key sees the connection without credentials.
		ro, _, err := bu.svc.Environments().CreateAPIKey(context.Background(), bu.env.ID, environments.NewAPIKey{Scopes: []string{environments.ScopeConnectionsRead}})
		if err != nil {
			t.Fatal(err)
		}
		if r := bu.mustDo(t, 200, req{method: "GET", path: "/connections/c1?provider_config_key=gh", key: ro}); r.obj()["credentials"] != nil {
			t.Errorf("read-only key got credentials: %s", r.raw)
		}

		// Import again updates instead of duplicating.
		bu.mustDo(t, 200, req{method: "POST", path: "/connections", body: `{"provider_config_key":"gh","connection_id":"c1","access_token":"at-new","expires_in":3600}`})
		again := get("c1", "gh", "")
		if again["credentials"].(map[string]any)["access_token"] != "at-new" || again["credentials"].(map[string]any)["expires_at"] != "2026-05-01T13:00:00.000Z" {
			t.Errorf("re-import: %v", again["credentials"])
		}
		if again["metadata"].(map[string]any)["a"] != float64(1) {
			t.Errorf("re-import without metadata dropped it: %v", again["metadata"])
		}
		if n := len(ids("?connectionId=c1&integrationId=gh")); n != 1 {
			t.Errorf("re-import duplicated: %d", n)
		}

		// Metadata: set replaces, update merges, for one or many ids.
		r := bu.mustDo(t, 200, req{method: "POST", path: "/connections/metadata", body: `{"metadata":{"x":1},"connection_id":["c1","c2"],"provider_config_key":"gh"}`})
		if diff := cmp.Diff(map[string]any{"metadata": map[string]any{"x": float64(1)}, "connection_id": []any{"c1", "c2"}, "provider_config_key": "gh"}, r.obj()); diff != "" {
			t.Errorf("set metadata body (-want +got):\n%s", diff)
		}
		bu.mustDo(t, 200, req{method: "PATCH", path: "/connections/metadata", body: `{"metadata":{"y":{"z":true}},"connection_id":"c1","provider_config_key":"gh"}`})
		if diff := cmp.Diff(map[string]any{"x": float64(1), "y": map[string]any{"z": true}}, get("c1", "gh", "")["metadata"]); diff != "" {
			t.Errorf("merged metadata (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(map[string]any{"x": float64(1)}, get("c2", "gh", "")["metadata"]); diff != "" {
			t.Errorf("c2 metadata (-want +got):\n%s", diff)
		}
		bu.mustDo(t, 200, req{method: "POST", path: "/connection/c2/metadata", header: map[string]string{"Provider-Config-Key": "gh"}, body: `{"only":"this"}`})
		if diff := cmp.Diff(map[string]any{"only": "this"}, get("c2", "gh", "")["metadata"]); diff != "" {
			t.Errorf("legacy set metadata (-want +got):\n%s", diff)
		}

		// Patch: tags lowercased, webhook override set and cleared, end user.
		bu.mustDo(t, 200, req{method: "PATCH", path: "/connections/c2?provider_config_key=gh", body: `{"tags":{"Plan":"Pro"},"webhook_url_override":"https://hooks.example.com/x"}`})
		c2 := get("c2", "gh", "")
		if diff := cmp.Diff(map[string]any{"plan": "Pro"}, c2["tags"]); diff != "" || c2["webhook_url_override"] != "https://hooks.example.com/x" {
			t.Errorf("after patch: tags %v override %v", c2["tags"], c2["webhook_url_override"])
		}
		bu.mustDo(t, 200, req{method: "PATCH", path: "/connections/c2?provider_config_key=gh", body: `{"webhook_url_override":"","end_user":{"id":"u9","email":"u9@example.com","organization":{"id":"o1"}}}`})
		c2 = get("c2", "gh", "")
		if c2["webhook_url_override"] != nil {
			t.Errorf("override not cleared: %v", c2["webhook_url_override"])
		}
		wantTags := map[string]any{"plan": "Pro", "end_user_id": "u9", "end_user_email": "u9@example.com", "organization_id": "o1"}
		if diff := cmp.Diff(wantTags, c2["tags"]); diff != "" {
			t.Errorf("tags after end_user (-want +got):\n%s", diff)
		}

		// Delete, new and deprecated routes.
		bu.mustDo(t, 200, req{method: "DELETE", path: "/connections/c2?provider_config_key=gh", header: map[string]string{"Content-Type": "application/json"}})
		bu.mustDo(t, 404, req{method: "GET", path: "/connections/c2?provider_config_key=gh"})
		r = bu.mustDo(t, 200, req{method: "DELETE", path: "/connection/c%201%2Fx?provider_config_key=tw"})
		if r.obj()["success"] != true {
			t.Errorf("legacy delete body %s", r.raw)
		}

		// Every mutation is in the operations log, without secrets.
		logs, err := bu.svc.ListLogs(context.Background(), oplog.Filter{EnvironmentID: bu.env.ID, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		ops := map[string]int{}
		for _, e := range logs {
			ops[e.Type+"/"+e.Operation]++
			if s := fmt.Sprintf("%+v", *e); strings.Contains(s, "at-c1") || strings.Contains(s, "sk-live") || strings.Contains(s, "csecret") {
				t.Errorf("log entry holds a secret: %s", s)
			}
		}
		for _, op := range []string{"integration/create", "connection/import_create", "connection/import_update", "connection/set_metadata", "connection/update_metadata", "connection/update", "connection/delete"} {
			if ops[op] == 0 {
				t.Errorf("no %s log entry (have %v)", op, ops)
			}
		}
		byConn, err := bu.svc.ListLogs(context.Background(), oplog.Filter{EnvironmentID: bu.env.ID, ConnectionID: "c2", Type: "connection"})
		if err != nil {
			t.Fatal(err)
		}
		if len(byConn) == 0 || byConn[0].Operation != "delete" {
			t.Errorf("newest log of c2 = %+v", byConn)
		}
	})
}

func TestEnvironmentIsolation(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		bu := setup(t, b)
		seed(t, bu)
		ctx := context.Background()
		prod, err := bu.svc.Environments().Create(ctx, environments.CreateInput{Name: "prod"})
		if err != nil {
			t.Fatal(err)
		}
		prodKey, _, err := bu.svc.Environments().CreateAPIKey(ctx, prod.ID, environments.NewAPIKey{Scopes: []string{environments.ScopeAll}})
		if err != nil {
			t.Fatal(err)
		}
		if n := len(bu.mustDo(t, 200, req{method: "GET", path: "/integrations", key: prodKey}).obj()["data"].([]any)); n != 0 {
			t.Errorf("prod sees %d integrations of dev", n)
		}
		if n := len(bu.mustDo(t, 200, req{method: "GET", path: "/connections", key: prodKey}).obj()["connections"].([]any)); n != 0 {
			t.Errorf("prod sees %d connections of dev", n)
		}
		bu.mustDo(t, 404, req{method: "GET", path: "/connections/c1?provider_config_key=gh", key: prodKey})
		bu.mustDo(t, 404, req{method: "DELETE", path: "/connections/c1?provider_config_key=gh", key: prodKey})
		bu.mustDo(t, 404, req{method: "POST", path: "/connections/metadata", key: prodKey, body: `{"metadata":{},"connection_id":"c1","provider_config_key":"gh"}`})
		// The same integration key in another environment is a different integration.
		bu.mustDo(t, 200, req{method: "POST", path: "/integrations", key: prodKey, body: `{"provider":"openai","unique_key":"gh"}`})
		if p := bu.mustDo(t, 200, req{method: "GET", path: "/integrations/gh"}).obj()["data"].(map[string]any)["provider"]; p != "github" {
			t.Errorf("dev gh became %v", p)
		}
		if err := bu.svc.Environments().SetVariables(ctx, prod.ID, map[string]string{"SECRET": "prod-only"}); err != nil {
			t.Fatal(err)
		}
		if r := bu.mustDo(t, 200, req{method: "GET", path: "/environment-variables"}); strings.Contains(string(r.raw), "prod-only") {
			t.Errorf("dev sees prod variables: %s", r.raw)
		}
		r := bu.mustDo(t, 200, req{method: "GET", path: "/environment-variables", key: prodKey})
		if diff := cmp.Diff([]any{map[string]any{"name": "SECRET", "value": "prod-only"}}, r.body); diff != "" {
			t.Errorf("prod variables (-want +got):\n%s", diff)
		}
	})
}

func TestRateLimit(t *testing.T) {
	t.Parallel()
	bu := setup(t, sqliteBackend(t), func(c *connect.Config) {
		c.RateLimitRequests = 3
		c.RateLimitWindow = time.Minute
	})
	for i := 0; i < 3; i++ {
		bu.mustDo(t, 200, req{method: "GET", path: "/integrations"})
	}
	r := bu.mustDo(t, 429, req{method: "GET", path: "/integrations"})
	if r.header.Get("Retry-After") != "60" || r.errCode() != "too_many_requests" {
		t.Errorf("429: Retry-After %q body %s", r.header.Get("Retry-After"), r.raw)
	}
	bu.now.t = bu.now.t.Add(45 * time.Second)
	if r := bu.mustDo(t, 429, req{method: "GET", path: "/integrations"}); r.header.Get("Retry-After") != "15" {
		t.Errorf("Retry-After after 45s = %q", r.header.Get("Retry-After"))
	}
	bu.now.t = bu.now.t.Add(15 * time.Second)
	bu.mustDo(t, 200, req{method: "GET", path: "/integrations"})
}

// TestRateLimitShared checks that a shared limiter limits two services
// together.
func TestRateLimitShared(t *testing.T) {
	t.Parallel()
	b := sqliteBackend(t)
	shared := ratelimit.NewFixedWindow(4, time.Minute, nil)
	a := setup(t, b, func(c *connect.Config) { c.RateLimiter = shared })
	svcB, err := connect.New(connect.Config{Store: b.store, Scheduler: schedulerFor(t, b), EncryptionKeys: []connect.EncryptionKey{testKey}, RateLimiter: shared})
	if err != nil {
		t.Fatal(err)
	}
	bB := &bundle{svc: svcB, key: a.key, srv: newServer(t, svcB)}
	for i := 0; i < 2; i++ {
		a.mustDo(t, 200, req{method: "GET", path: "/integrations"})
		bB.mustDo(t, 200, req{method: "GET", path: "/integrations"})
	}
	a.mustDo(t, 429, req{method: "GET", path: "/integrations"})
	bB.mustDo(t, 429, req{method: "GET", path: "/integrations"})
}

func TestProvidersAPI(t *testing.T) {
	t.Parallel()
	bu := setup(t, sqliteBackend(t))
	all := bu.mustDo(t, 200, req{method: "GET", path: "/providers"}).obj()["data"].([]any)
	if len(all) < 150 {
		t.Fatalf("%d providers", len(all))
	}
	if first := all[0].(map[string]any); first["name"] != "github" {
		t.Errorf("first provider %v, want the most used first", first["name"])
	}
	found := bu.mustDo(t, 200, req{method: "GET", path: "/providers?search=git+hub"}).obj()["data"].([]any)
	if len(found) == 0 || len(found) >= len(all) || found[0].(map[string]any)["name"] != "github" {
		t.Errorf("search git hub: %v", found)
	}
	gh := bu.mustDo(t, 200, req{method: "GET", path: "/providers/github"}).obj()["data"].(map[string]any)
	if gh["auth_mode"] != "OAUTH2" || gh["logo_url"] != "https://connect.example.com/providers/github/logo.svg" {
		t.Errorf("github: auth_mode %v logo %v", gh["auth_mode"], gh["logo_url"])
	}
	resp, err := http.Get(bu.srv.URL + "/providers/github/logo.svg")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/svg+xml" || !strings.Contains(string(body), "<path") {
		t.Errorf("logo: %d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
}
