package connect_test

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/oplog"
)

// importLogs returns the connection ids of the environment's import log
// entries, by operation.
func importLogs(t *testing.T, bu *bundle) map[string][]string {
	t.Helper()
	logs, err := bu.svc.ListLogs(context.Background(), oplog.Filter{EnvironmentID: bu.env.ID, Type: "connection", Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, e := range logs {
		if strings.HasPrefix(e.Operation, "import_") {
			out[e.Operation] = append(out[e.Operation], e.IntegrationKey+"/"+e.ConnectionID)
		}
	}
	for _, ids := range out {
		slices.Sort(ids)
	}
	return out
}

// errorPaths returns the errors[] of a standard error body as
// "path: code" strings.
func errorPaths(r *response) []string {
	e, _ := r.obj()["error"].(map[string]any)
	list, _ := e["errors"].([]any)
	var out []string
	for _, x := range list {
		m := x.(map[string]any)
		var path []string
		for _, p := range m["path"].([]any) {
			path = append(path, p.(string))
		}
		out = append(out, strings.Join(path, ".")+": "+m["code"].(string))
	}
	return out
}

// TestBulkImport: POST /connections with an array imports every connection
// in it as single imports do (validation, sealing, log entries, no
// webhook), or none.
func TestBulkImport(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		events := &eventLog{}
		bu := setup(t, b, func(cfg *connect.Config) { cfg.Notifier = events })
		seed(t, bu)
		before := importLogs(t, bu)

		r := bu.mustDo(t, 200, req{method: "POST", path: "/connections", body: `[
			{"provider_config_key":"gh","connection_id":"b1","access_token":"at-b1","refresh_token":"rt-b1","expires_in":3600,
			 "metadata":{"plan":"pro"},"tags":{"End_User_Id":"u-b1"}},
			{"provider_config_key":"oa","connection_id":"b2","api_key":"sk-b2"},
			{"provider_config_key":"gh","connection_id":"c1","access_token":"at-c1-new","no_expiration":true},
			{"provider_config_key":"tw","connection_id":"b3","username":"AC3","password":"pw3","connection_config":{"region":"eu"}},
			{"provider_config_key":"oa","api_key":"sk-generated"}
		]`})
		body := r.obj()
		if body["created"] != float64(4) || body["updated"] != float64(1) {
			t.Errorf("counts: created %v updated %v, want 4 and 1", body["created"], body["updated"])
		}
		items := body["connections"].([]any)
		if len(items) != 5 {
			t.Fatalf("%d connections in the answer: %s", len(items), r.raw)
		}
		var got []string
		for _, x := range items {
			m := x.(map[string]any)
			got = append(got, fmt.Sprintf("%s/%s %s", m["provider_config_key"], m["connection_id"], m["result"]))
			if _, ok := m["credentials"]; ok {
				t.Errorf("the answer holds credentials: %v", m)
			}
		}
		generated := items[4].(map[string]any)["connection_id"].(string)
		want := []string{"gh/b1 created", "oa/b2 created", "gh/c1 updated", "tw/b3 created", "oa/" + generated + " created"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("answer (-want +got):\n%s", diff)
		}
		if len(generated) != 36 {
			t.Errorf("generated connection id %q", generated)
		}
		b1 := items[0].(map[string]any)
		wantB1 := map[string]any{"id": b1["id"], "connection_id": "b1", "provider_config_key": "gh", "result": "created"}
		if diff := cmp.Diff(wantB1, b1); diff != "" {
			t.Errorf("first connection (-want +got):\n%s", diff)
		}
		// The ids are those of the list.
		listed := map[string]any{}
		for _, x := range bu.mustDo(t, 200, req{method: "GET", path: "/connections"}).obj()["connections"].([]any) {
			m := x.(map[string]any)
			listed[m["provider_config_key"].(string)+"/"+m["connection_id"].(string)] = m["id"]
		}
		for _, x := range items {
			m := x.(map[string]any)
			if id := listed[m["provider_config_key"].(string)+"/"+m["connection_id"].(string)]; id != m["id"] || id == nil {
				t.Errorf("%v: id %v, listed with %v", m["connection_id"], m["id"], id)
			}
		}
		b1list := bu.mustDo(t, 200, req{method: "GET", path: "/connections?connectionId=b1"}).obj()["connections"].([]any)[0]
		wantList := map[string]any{"id": b1["id"], "connection_id": "b1", "provider": "github", "provider_config_key": "gh",
			"created": "2026-05-01T12:00:00.000Z", "metadata": map[string]any{"plan": "pro"}, "tags": map[string]any{"end_user_id": "u-b1"},
			"end_user": map[string]any{"id": "u-b1", "display_name": nil, "email": nil, "tags": map[string]any{}, "organization": nil},
			"errors":   []any{},
			"health":   map[string]any{"auth_error": false, "sync_error": false, "paused": false}}
		if diff := cmp.Diff(wantList, b1list); diff != "" {
			t.Errorf("b1 listed (-want +got):\n%s", diff)
		}

		get := func(key, id string) map[string]any {
			t.Helper()
			return bu.mustDo(t, 200, req{method: "GET", path: "/connections/" + url.PathEscape(id) + "?provider_config_key=" + key + "&refresh_token=true"}).obj()
		}
		wantCreds := map[string]any{"type": "OAUTH2", "access_token": "at-b1", "refresh_token": "rt-b1", "expires_at": "2026-05-01T13:00:00.000Z",
			"raw": map[string]any{"access_token": "at-b1", "refresh_token": "rt-b1", "expires_at": "2026-05-01T13:00:00Z"}}
		if diff := cmp.Diff(wantCreds, get("gh", "b1")["credentials"]); diff != "" {
			t.Errorf("b1 credentials (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(map[string]any{"type": "API_KEY", "apiKey": "sk-b2"}, get("oa", "b2")["credentials"]); diff != "" {
			t.Errorf("b2 credentials (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(map[string]any{"type": "API_KEY", "apiKey": "sk-generated"}, get("oa", generated)["credentials"]); diff != "" {
			t.Errorf("generated connection's credentials (-want +got):\n%s", diff)
		}
		b3 := get("tw", "b3")
		if diff := cmp.Diff(map[string]any{"type": "BASIC", "username": "AC3", "password": "pw3"}, b3["credentials"]); diff != "" ||
			b3["connection_config"].(map[string]any)["region"] != "eu" {
			t.Errorf("b3: %v", b3)
		}
		c1full := get("gh", "c1")
		if c1full["credentials"].(map[string]any)["access_token"] != "at-c1-new" {
			t.Errorf("c1 credentials after the update: %v", c1full["credentials"])
		}
		// The update kept what it was not given: c1's metadata and tags.
		if diff := cmp.Diff(map[string]any{"a": float64(1)}, c1full["metadata"]); diff != "" {
			t.Errorf("re-imported c1 metadata (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(map[string]any{"end_user_id": "u1"}, c1full["tags"]); diff != "" {
			t.Errorf("c1 tags (-want +got):\n%s", diff)
		}

		// One log entry per connection, as single imports write them.
		logs := importLogs(t, bu)
		wantLogs := map[string][]string{
			"import_create": append(slices.Clone(before["import_create"]), "gh/b1", "oa/b2", "oa/"+generated, "tw/b3"),
			"import_update": {"gh/c1"},
		}
		slices.Sort(wantLogs["import_create"])
		if diff := cmp.Diff(wantLogs, logs); diff != "" {
			t.Errorf("import log entries (-want +got):\n%s", diff)
		}
		all, err := bu.svc.ListLogs(context.Background(), oplog.Filter{EnvironmentID: bu.env.ID, ConnectionID: "b1"})
		if err != nil {
			t.Fatal(err)
		}
		if len(all) != 1 || all[0].Meta["auth_mode"] != "OAUTH2" || all[0].Message != "connection imported" || all[0].Status != oplog.StatusSuccess {
			t.Errorf("log entry of b1: %+v", all)
		}
		for _, e := range all {
			if s := fmt.Sprintf("%+v", *e); strings.Contains(s, "at-b1") || strings.Contains(s, "rt-b1") {
				t.Errorf("log entry holds a secret: %s", s)
			}
		}
		// Imports, single or bulk, send no webhook.
		if ev := events.list(); len(ev) != 0 {
			t.Errorf("imports sent events: %+v", ev)
		}
	})
}

// TestBulkImportRefused: a batch with an invalid item, or the same
// connection twice, stores nothing and names every problem by index.
func TestBulkImportRefused(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		bu := setup(t, b)
		seed(t, bu)
		snap, logs := snapshot(t, bu), importLogs(t, bu)
		unchanged := func(what string) {
			t.Helper()
			if s := snapshot(t, bu); s != snap {
				t.Errorf("%s changed stored data:\n%s\nwant\n%s", what, s, snap)
			}
			if l := importLogs(t, bu); !cmp.Equal(l, logs) {
				t.Errorf("%s wrote log entries: %v", what, l)
			}
		}
		for _, tc := range []struct {
			name, body string
			status     int
			code       string
			paths      []string
		}{
			{"invalid items", `[
				{"provider_config_key":"gh","connection_id":"x1","access_token":"at","no_expiration":true},
				{"provider_config_key":"gh","connection_id":"x2","no_expiration":true},
				{"provider_config_key":"oa","connection_id":"c1","api_key":""},
				{"provider_config_key":"nope","connection_id":"x4","api_key":"k"},
				{"connection_id":"x5"},
				{"provider_config_key":"gh","connection_id":"x6","access_token":"at"},
				{"provider_config_key":"oa","connection_id":"x7","api_key":"k","tags":{"":"v"}},
				{"provider_config_key":"oa","connection_id":"bad\u0007id","api_key":"k"}
			]`, 400, "invalid_body", []string{"1.access_token: invalid_value", "2.api_key: required",
				"3.provider_config_key: unknown_provider_config", "4.provider_config_key: invalid_value",
				"5.expires_at: invalid_value", "6.tags.: invalid_value", "7.connection_id: invalid_value"}},
			{"same connection twice", `[
				{"provider_config_key":"gh","connection_id":"d1","access_token":"at","no_expiration":true},
				{"provider_config_key":"oa","connection_id":"d1","api_key":"k"},
				{"provider_config_key":"oa","connection_id":"c2","api_key":"k"},
				{"provider_config_key":"gh","connection_id":"d1","access_token":"at2","no_expiration":true},
				{"provider_config_key":"oa","connection_id":"c2","api_key":"k2"}
			]`, 400, "invalid_body", []string{"3.connection_id: duplicate", "4.connection_id: duplicate"}},
			{"wrong types", `[
				{"provider_config_key":"oa","connection_id":"t1","api_key":"k"},
				{"provider_config_key":"gh","connection_id":"t2","access_token":"at","expires_in":"3600"},
				"not an object",
				{"provider_config_key":"gh","connection_id":"t4","access_token":"at","expires_at":"tomorrow"},
				null,
				{"provider_config_key":"oa","connection_id":"t6","api_key":"k","metadata":[1]}
			]`, 400, "invalid_body", []string{"1.expires_in: invalid_type", "2: invalid_type", "3.expires_at: invalid_type",
				"4: invalid_type", "5.metadata: invalid_type"}},
			{"a key given twice", `[{"provider_config_key":"oa","connection_id":"k1","api_key":"a","api_key":"b"}]`,
				400, "invalid_body", []string{"0.api_key: invalid_value"}},
			{"U+0000", `[{"provider_config_key":"oa","connection_id":"k1","api_key":"a\u0000b"}]`,
				400, "invalid_body", []string{"0.api_key: invalid_value"}},
			{"empty", `[]`, 400, "invalid_body", []string{": invalid_size"}},
			{"not JSON", `[{"provider_config_key":"oa"`, 400, "invalid_body", nil},
			{"data after the array", `[{"provider_config_key":"oa","api_key":"a"}] {}`, 400, "invalid_body", nil},
			{"too many", "[" + strings.Repeat(`{"provider_config_key":"oa","api_key":"a"},`, connections.MaxImportBatch) +
				`{"provider_config_key":"oa","api_key":"a"}]`, 400, "invalid_body", []string{": invalid_size"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r := bu.mustDo(t, tc.status, req{method: "POST", path: "/connections", body: tc.body})
				if r.errCode() != tc.code {
					t.Errorf("code %q, want %q: %s", r.errCode(), tc.code, r.raw)
				}
				if tc.paths != nil {
					if diff := cmp.Diff(tc.paths, errorPaths(r)); diff != "" {
						t.Errorf("errors (-want +got):\n%s\n%s", diff, r.raw)
					}
				}
				if strings.Contains(string(r.raw), "at2") || strings.Contains(string(r.raw), `"k2"`) {
					t.Errorf("the error repeats a secret: %s", r.raw)
				}
				unchanged(tc.name)
			})
		}

		// Invalid UTF-8.
		r := bu.mustDo(t, 400, req{method: "POST", path: "/connections", body: "[{\"provider_config_key\":\"oa\",\"api_key\":\"\xff\"}]"})
		if r.errCode() != "invalid_body" {
			t.Errorf("invalid UTF-8: %s", r.raw)
		}
		// A charset other than UTF-8.
		bu.mustDo(t, 415, req{method: "POST", path: "/connections", header: map[string]string{"Content-Type": "application/json; charset=latin1"},
			body: `[{"provider_config_key":"oa","api_key":"a"}]`})
		// The deprecated route takes one object only, and answers {"message"}.
		r = bu.mustDo(t, 400, req{method: "POST", path: "/connection", body: `[{"provider_config_key":"oa","api_key":"a"}]`})
		if _, ok := r.obj()["message"].(string); !ok || len(r.obj()) != 1 {
			t.Errorf("POST /connection with an array: %s", r.raw)
		}
		// The scope of imports.
		ro, _, err := bu.svc.Environments().CreateAPIKey(context.Background(), bu.env.ID, environments.NewAPIKey{Scopes: []string{environments.ScopeConnectionsRead}})
		if err != nil {
			t.Fatal(err)
		}
		bu.mustDo(t, 403, req{method: "POST", path: "/connections", key: ro, body: `[{"provider_config_key":"oa","api_key":"a"}]`})
		unchanged("the refused requests")
	})
}

// TestBulkImportLimits: a bulk import's body has its own limit
// (Config.MaxImportBody); a single import's body keeps MaxRequestBody.
func TestBulkImportLimits(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		bu := setup(t, b, func(cfg *connect.Config) {
			cfg.MaxRequestBody = 2 << 10
			cfg.MaxImportBody = 16 << 10
		})
		bu.mustDo(t, 200, req{method: "POST", path: "/integrations", body: `{"provider":"openai","unique_key":"oa"}`})
		item := func(i int) string {
			return fmt.Sprintf(`{"provider_config_key":"oa","connection_id":"c%03d","api_key":"sk-%03d","metadata":{"pad":%q}}`,
				i, i, strings.Repeat("x", 200))
		}
		batch := func(n int) string {
			var items []string
			for i := range n {
				items = append(items, item(i))
			}
			return "[" + strings.Join(items, ",") + "]"
		}
		// Larger than MaxRequestBody, within MaxImportBody.
		small := batch(20)
		if len(small) <= 2<<10 || len(small) > 16<<10 {
			t.Fatalf("batch of %d bytes", len(small))
		}
		r := bu.mustDo(t, 200, req{method: "POST", path: "/connections", body: "  \n" + small})
		if r.obj()["created"] != float64(20) {
			t.Errorf("answer %s", r.raw)
		}
		// Larger than MaxImportBody.
		r = bu.mustDo(t, 413, req{method: "POST", path: "/connections", body: batch(80)})
		if r.errCode() != "payload_too_large" || !strings.Contains(string(r.raw), "16384") {
			t.Errorf("too large a batch: %s", r.raw)
		}
		// A single import larger than MaxRequestBody.
		r = bu.mustDo(t, 413, req{method: "POST", path: "/connections", body: fmt.Sprintf(
			`{"provider_config_key":"oa","connection_id":"big","api_key":"k","metadata":{"pad":%q}}`, strings.Repeat("x", 3<<10))})
		if r.errCode() != "payload_too_large" || !strings.Contains(string(r.raw), "2048") {
			t.Errorf("too large a single import: %s", r.raw)
		}
		r = bu.mustDo(t, 413, req{method: "POST", path: "/connection", body: fmt.Sprintf(
			`{"provider_config_key":"oa","connection_id":"big","api_key":"k","metadata":{"pad":%q}}`, strings.Repeat("x", 3<<10))})
		if r.obj()["message"] == nil {
			t.Errorf("too large a deprecated import: %s", r.raw)
		}
		list := bu.mustDo(t, 200, req{method: "GET", path: "/connections"}).obj()["connections"].([]any)
		if len(list) != 20 {
			t.Errorf("%d connections stored, want 20", len(list))
		}
	})
}

// TestImportStartsRefreshOver: re-importing credentials, single or bulk,
// clears the connection's errors and its refresh bookkeeping (the failure
// that starts the refresh backoff, and the count of failed refreshes that
// makes the sweep give up), as a reconnection does.
func TestImportStartsRefreshOver(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		bu := setup(t, b)
		seed(t, bu)
		ctx := context.Background()
		fail := func(id string) {
			t.Helper()
			c, err := b.store.GetConnection(ctx, bu.env.ID, "gh", id)
			if err != nil {
				t.Fatal(err)
			}
			failed := bu.now.t.Add(-time.Minute)
			c.LastRefreshFailure, c.RefreshAttempts = &failed, connections.MaxSweepAttempts
			c.Errors = []connections.Error{{Type: "auth", LogID: "log-1"}}
			if err := b.store.UpdateConnection(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
		check := func(what, id string) {
			t.Helper()
			c, err := b.store.GetConnection(ctx, bu.env.ID, "gh", id)
			if err != nil {
				t.Fatal(err)
			}
			if c.LastRefreshFailure != nil || c.RefreshAttempts != 0 || len(c.Errors) != 0 {
				t.Errorf("%s: last refresh failure %v, %d attempts, errors %v; want none", what, c.LastRefreshFailure, c.RefreshAttempts, c.Errors)
			}
		}
		fail("c1")
		bu.mustDo(t, 200, req{method: "POST", path: "/connections", body: `{"provider_config_key":"gh","connection_id":"c1","access_token":"at-new","expires_in":3600}`})
		check("after a single import", "c1")
		fail("c1")
		fail("c2")
		bu.mustDo(t, 200, req{method: "POST", path: "/connections", body: `[
			{"provider_config_key":"gh","connection_id":"c1","access_token":"at-new","expires_in":3600},
			{"provider_config_key":"gh","connection_id":"c2","access_token":"at-new","expires_in":3600}]`})
		check("after a bulk import", "c1")
		check("after a bulk import", "c2")
	})
}

// TestBulkImportDropsProxyCache: a bulk re-import replaces the credentials
// that the proxy has cached.
func TestBulkImportDropsProxyCache(t *testing.T) {
	t.Parallel()
	pb := proxySetup(t, sqliteBackend(t), func(cfg *connect.Config) { cfg.ProxyCacheTTL = time.Hour })
	if resp, _ := pb.call(t, "GET", "/proxy/x", route(pxHeader), ""); resp.StatusCode != 200 || pb.up.last().header.Get("X-Api-Key") != "key-header-123" {
		t.Fatalf("= %d", resp.StatusCode)
	}
	pb.mustDo(t, 200, req{method: "POST", path: "/connections", body: `[{"provider_config_key":"pxh","connection_id":"conn-1","api_key":"key-rotated-789"}]`})
	if resp, _ := pb.call(t, "GET", "/proxy/x", route(pxHeader), ""); resp.StatusCode != 200 || pb.up.last().header.Get("X-Api-Key") != "key-rotated-789" {
		t.Errorf("after a bulk re-import: %d with key %q", resp.StatusCode, pb.up.last().header.Get("X-Api-Key"))
	}
}
