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

	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/oplog"
)

// appendLogEntries appends 25 entries to the environment through the
// Store: five times (base and the four minutes before it), five entries
// at each, with ids that follow neither time nor insertion, of several
// types, operations, statuses, integrations and connections.
func appendLogEntries(t *testing.T, bu *bundle, envID int64, prefix string, base time.Time) []*oplog.Entry {
	t.Helper()
	types := []string{"connection", "auth", "webhook"}
	operations := []string{"create", "refresh", "delivery", "delete"}
	var out []*oplog.Entry
	for i := range 25 {
		e := &oplog.Entry{ID: fmt.Sprintf("%s%02d", prefix, (i*7)%25), EnvironmentID: envID, Type: types[i%3],
			Operation: operations[i%4], Status: oplog.StatusSuccess, Message: fmt.Sprintf("entry %d", i),
			CreatedAt: base.Add(-time.Duration(i/5) * time.Minute)}
		if i%4 == 1 {
			e.Status = oplog.StatusFailure
		}
		if i%2 == 0 {
			e.IntegrationKey = "gh"
		}
		if i%3 != 2 {
			e.ConnectionID = fmt.Sprintf("c%d", i%3+1)
		}
		if i%5 == 0 {
			e.Meta = map[string]any{"auth_mode": "OAUTH2", "n": float64(i)}
		}
		if err := bu.b.store.AppendLog(t.Context(), e); err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

// logPages lists GET /logs/operations?query with the key, following
// next_cursor to the end, and returns the ids in order, the entries as
// the API wrote them, and the raw bodies.
func logPages(t *testing.T, bu *bundle, key, query string, limit int) (ids []string, entries []map[string]any, raw string) {
	t.Helper()
	ids, cursor := []string{}, ""
	for page := 0; ; page++ {
		if page > 200 {
			t.Fatalf("listing ?%s does not end", query)
		}
		q, err := url.ParseQuery(query)
		if err != nil {
			t.Fatal(err)
		}
		if limit > 0 {
			q.Set("limit", fmt.Sprint(limit))
		}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		r := bu.mustDo(t, 200, req{method: "GET", path: "/logs/operations?" + q.Encode(), key: key})
		raw += string(r.raw)
		data, ok := r.obj()["data"].([]any)
		if !ok {
			t.Fatalf("?%s: no data: %s", q.Encode(), r.raw)
		}
		if limit > 0 && len(data) > limit {
			t.Fatalf("?%s: %d entries", q.Encode(), len(data))
		}
		for _, d := range data {
			e := d.(map[string]any)
			ids = append(ids, e["id"].(string))
			entries = append(entries, e)
		}
		next, present := r.obj()["next_cursor"]
		if !present {
			t.Fatalf("?%s: no next_cursor: %s", q.Encode(), r.raw)
		}
		if next == nil {
			return ids, entries, raw
		}
		if len(data) == 0 {
			t.Fatalf("?%s: an empty page with a next_cursor", q.Encode())
		}
		cursor = next.(string)
	}
}

func entryIDs(es []*oplog.Entry) []string {
	out := []string{}
	for _, e := range es {
		out = append(out, e.ID)
	}
	return out
}

// TestOperationsLogAPI: GET /logs/operations lists the key's environment's
// entries newest first, filtered, page by page without duplicates or gaps
// (many entries share a timestamp); GET /logs/operations/{id} reads one;
// another environment's entries are never visible; no answer holds a
// secret of the operations that wrote the entries.
func TestOperationsLogAPI(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		bu := setup(t, b)
		// Operations that log entries, their inputs full of secrets.
		seed(t, bu)
		ctx := context.Background()
		base := bu.now.Now()
		mine := appendLogEntries(t, bu, bu.env.ID, "e-", base)
		other, err := bu.svc.Environments().Create(ctx, environments.CreateInput{Name: "other"})
		if err != nil {
			t.Fatal(err)
		}
		otherKey, _, err := bu.svc.Environments().CreateAPIKey(ctx, other.ID, environments.NewAPIKey{Name: "o", Scopes: []string{environments.ScopeAll}})
		if err != nil {
			t.Fatal(err)
		}
		// The other environment's entries: the same times, and ids that
		// interleave ours.
		theirs := appendLogEntries(t, bu, other.ID, "e-o", base)

		all, err := bu.svc.ListLogs(ctx, oplog.Filter{EnvironmentID: bu.env.ID, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		if len(all) <= len(mine) {
			t.Fatalf("the environment has %d entries; seed wrote none?", len(all))
		}
		for _, e := range mine {
			if !slices.Contains(entryIDs(all), e.ID) {
				t.Fatalf("ListLogs lacks %s", e.ID)
			}
		}

		// Every page size yields every entry once, in the Store's order.
		for _, limit := range []int{0, 1, 4, 7, 100} {
			got, _, raw := logPages(t, bu, "", "", limit)
			if d := cmp.Diff(entryIDs(all), got); d != "" {
				t.Errorf("pages of %d (-want +got):\n%s", limit, d)
			}
			for _, secret := range []string{"csecret-gh", "at-c1", "rt-c1", "at-c2", "sk-live-k1"} {
				if strings.Contains(raw, secret) {
					t.Errorf("the log answers hold the secret %q", secret)
				}
			}
		}

		// Filters, alone and together, and with paging.
		match := func(keep func(e *oplog.Entry) bool) []string {
			out := []string{}
			for _, e := range all {
				if keep(e) {
					out = append(out, e.ID)
				}
			}
			return out
		}
		minute := func(n int) string { return base.Add(time.Duration(n) * time.Minute).Format(time.RFC3339) }
		for _, tc := range []struct {
			query string
			want  []string
		}{
			{"type=auth", match(func(e *oplog.Entry) bool { return e.Type == "auth" })},
			{"operation=refresh", match(func(e *oplog.Entry) bool { return e.Operation == "refresh" })},
			{"status=failure", match(func(e *oplog.Entry) bool { return e.Status == oplog.StatusFailure })},
			{"status=success", match(func(e *oplog.Entry) bool { return e.Status == oplog.StatusSuccess })},
			{"integration=gh", match(func(e *oplog.Entry) bool { return e.IntegrationKey == "gh" })},
			{"connection_id=c1", match(func(e *oplog.Entry) bool { return e.ConnectionID == "c1" })},
			{"since=" + minute(-2), match(func(e *oplog.Entry) bool { return !e.CreatedAt.Before(base.Add(-2 * time.Minute)) })},
			{"until=" + minute(-2), match(func(e *oplog.Entry) bool { return e.CreatedAt.Before(base.Add(-2 * time.Minute)) })},
			{"since=" + minute(-3) + "&until=" + minute(0), match(func(e *oplog.Entry) bool {
				return !e.CreatedAt.Before(base.Add(-3*time.Minute)) && e.CreatedAt.Before(base)
			})},
			{"type=connection&status=success&integration=gh&connection_id=c1&operation=create", match(func(e *oplog.Entry) bool {
				return e.Type == "connection" && e.Status == oplog.StatusSuccess && e.IntegrationKey == "gh" && e.ConnectionID == "c1" &&
					e.Operation == "create"
			})},
			{"type=proxy", match(func(e *oplog.Entry) bool { return e.Type == "proxy" })},
		} {
			for _, limit := range []int{0, 2} {
				got, entries, _ := logPages(t, bu, "", tc.query, limit)
				if d := cmp.Diff(tc.want, got); d != "" {
					t.Errorf("?%s, pages of %d (-want +got):\n%s", tc.query, limit, d)
				}
				for _, e := range entries {
					if e["id"] == "" || e["created_at"] == "" {
						t.Errorf("?%s: entry %v", tc.query, e)
					}
				}
			}
		}
		if failures, _, _ := logPages(t, bu, "", "status=failure", 0); len(failures) < 6 {
			t.Errorf("status=failure lists %d entries, want at least the 6 appended", len(failures))
		}

		// One entry, as the list shows it too.
		for _, tc := range []struct {
			id   string
			want map[string]any
		}{
			{"e-00", map[string]any{"id": "e-00", "type": "connection", "operation": "create", "status": "success",
				"integration": "gh", "connection_id": "c1", "message": "entry 0", "meta": map[string]any{"auth_mode": "OAUTH2", "n": float64(0)},
				"created_at": "2026-05-01T12:00:00.000Z"}},
			// i = 17: no integration, no connection, no meta; a failure.
			{"e-19", map[string]any{"id": "e-19", "type": "webhook", "operation": "refresh", "status": "failure",
				"integration": nil, "connection_id": nil, "message": "entry 17", "meta": nil,
				"created_at": "2026-05-01T11:57:00.000Z"}},
		} {
			r := bu.mustDo(t, 200, req{method: "GET", path: "/logs/operations/" + tc.id})
			if d := cmp.Diff(map[string]any{"data": tc.want}, r.body); d != "" {
				t.Errorf("GET /logs/operations/%s (-want +got):\n%s", tc.id, d)
			}
			_, entries, _ := logPages(t, bu, "", "", 100)
			for _, e := range entries {
				if e["id"] == tc.id {
					if d := cmp.Diff(tc.want, e); d != "" {
						t.Errorf("%s in the list (-want +got):\n%s", tc.id, d)
					}
				}
			}
		}

		// Another environment's entries are invisible, and it sees none
		// of ours.
		gotTheirs, _, _ := logPages(t, bu, otherKey, "", 3)
		for _, id := range gotTheirs {
			if slices.Contains(entryIDs(all), id) {
				t.Errorf("the other environment lists our entry %s", id)
			}
		}
		for _, e := range theirs {
			if !slices.Contains(gotTheirs, e.ID) {
				t.Errorf("the other environment does not list its entry %s", e.ID)
			}
		}
		ours, _, _ := logPages(t, bu, "", "", 0)
		for _, e := range theirs {
			if slices.Contains(ours, e.ID) {
				t.Errorf("our list holds the other environment's entry %s", e.ID)
			}
		}
		for _, rq := range []req{
			{method: "GET", path: "/logs/operations/" + theirs[0].ID},
			{method: "GET", path: "/logs/operations/" + mine[0].ID, key: otherKey},
			{method: "GET", path: "/logs/operations/nope"},
			{method: "GET", path: "/logs/operations/" + strings.Repeat("x", 300)},
		} {
			r := bu.mustDo(t, 404, rq)
			if r.errCode() != "not_found" {
				t.Errorf("GET %s = %s, want not_found", rq.path, r.raw)
			}
		}
		// A cursor of one environment's list lists nothing of it in
		// another's.
		r := bu.mustDo(t, 200, req{method: "GET", path: "/logs/operations?limit=1"})
		cur := r.obj()["next_cursor"].(string)
		gotAfter, _, _ := logPages(t, bu, otherKey, "cursor="+cur, 0)
		for _, id := range gotAfter {
			if slices.Contains(entryIDs(all), id) {
				t.Errorf("the other environment lists our entry %s after our cursor", id)
			}
		}
	})
}

// TestOperationsLogAPIBadQuery: a bad query or path gets 400 with a body
// that names the parameter, never a 500.
func TestOperationsLogAPIBadQuery(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		bu := setup(t, b)
		appendLogEntries(t, bu, bu.env.ID, "e-", bu.now.Now())
		r := bu.mustDo(t, 200, req{method: "GET", path: "/logs/operations?limit=2"})
		cur := r.obj()["next_cursor"].(string)
		for _, tc := range []struct {
			path, param, msg string
		}{
			{"/logs/operations?foo=1", "foo", "unknown parameter"},
			{"/logs/operations?page=2", "page", "unknown parameter"},
			{"/logs/operations?status=ok", "status", "must be success or failure"},
			{"/logs/operations?status=success&status=failure", "status", "given more than once"},
			{"/logs/operations?limit=0", "limit", "from 1 to 100"},
			{"/logs/operations?limit=101", "limit", "from 1 to 100"},
			{"/logs/operations?limit=x", "limit", "from 1 to 100"},
			{"/logs/operations?since=yesterday", "since", "RFC 3339"},
			{"/logs/operations?until=2026-05-01", "until", "RFC 3339"},
			{"/logs/operations?since=2026-05-01T12:00:00+02:00", "since", "RFC 3339"},
			{"/logs/operations?since=2026-05-01T12:00:00Z&until=2026-05-01T12:00:00Z", "until", "after since"},
			{"/logs/operations?cursor=garbage", "cursor", "next_cursor"},
			{"/logs/operations?cursor=" + cur + "%3D%3D", "cursor", "next_cursor"},
			{"/logs/operations?cursor=" + cur + "A", "cursor", "next_cursor"},
			{"/logs/operations?cursor=" + cur[:len(cur)-2], "cursor", "next_cursor"},
			{"/logs/operations?type=" + strings.Repeat("t", 256), "type", "1 to 255 characters"},
			{"/logs/operations?connection_id=a%09b", "connection_id", "control characters"},
			{"/logs/operations/e-00?cursor=x", "cursor", "unknown parameter"},
		} {
			r := bu.do(t, req{method: "GET", path: tc.path})
			body, _ := r.obj()["error"].(map[string]any)
			errs, _ := body["errors"].([]any)
			var path []any
			var msg string
			if len(errs) > 0 {
				first := errs[0].(map[string]any)
				path, _ = first["path"].([]any)
				msg, _ = first["message"].(string)
			}
			if r.status != 400 || r.errCode() != "invalid_query_params" || len(path) != 1 || path[0] != tc.param ||
				!strings.Contains(msg, tc.msg) {
				t.Errorf("GET %s = %d %s, want 400 invalid_query_params naming %s (%q)", tc.path, r.status, r.raw, tc.param, tc.msg)
			}
		}
	})
}

// TestOperationsLogAPIScope: the log routes need environment:logs:read; a
// key with other scopes gets 403, and one with that scope alone reads.
func TestOperationsLogAPIScope(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		bu := setup(t, b)
		appendLogEntries(t, bu, bu.env.ID, "e-", bu.now.Now())
		ctx := context.Background()
		others, _, err := bu.svc.Environments().CreateAPIKey(ctx, bu.env.ID, environments.NewAPIKey{Name: "others",
			Scopes: []string{environments.ScopeWebhooksRead, environments.ScopeConnectionsRead, environments.ScopeIntegrationsRead}})
		if err != nil {
			t.Fatal(err)
		}
		logs, _, err := bu.svc.Environments().CreateAPIKey(ctx, bu.env.ID, environments.NewAPIKey{Name: "logs",
			Scopes: []string{environments.ScopeLogsRead}})
		if err != nil {
			t.Fatal(err)
		}
		routes := []req{{method: "GET", path: "/logs/operations"}, {method: "GET", path: "/logs/operations?status=failure&limit=1"},
			{method: "GET", path: "/logs/operations/e-00"}}
		for _, rq := range routes {
			rq.key = others
			if r := bu.do(t, rq); r.status != 403 || r.errCode() != "forbidden" || !strings.Contains(string(r.raw), environments.ScopeLogsRead) {
				t.Errorf("GET %s with a key without environment:logs:read = %d %s, want 403 forbidden naming the scope", rq.path, r.status, r.raw)
			}
			rq.key = logs
			bu.mustDo(t, 200, rq)
		}
		// The key with the scope reads nothing else.
		bu.mustDo(t, 403, req{method: "GET", path: "/connections", key: logs})
	})
}

// TestOperationsLogMCPTools: the management MCP server's log tools call
// these routes: a key with environment:logs:read alone lists both tools,
// pages the failures with next_cursor and reads one entry.
func TestOperationsLogMCPTools(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		bu := setup(t, b)
		mine := appendLogEntries(t, bu, bu.env.ID, "e-", bu.now.Now())
		logs, _, err := bu.svc.Environments().CreateAPIKey(context.Background(), bu.env.ID, environments.NewAPIKey{Name: "logs",
			Scopes: []string{environments.ScopeLogsRead}})
		if err != nil {
			t.Fatal(err)
		}
		cs := mcpSession(t, bu, "/mcp/manage", logs, nil)
		lt, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tl := range lt.Tools {
			names = append(names, tl.Name)
		}
		if !slices.Equal(names, []string{"logs_list_operations", "logs_get_operation"}) {
			t.Errorf("a logs:read key's tools = %v", names)
		}
		var want []string
		for _, e := range mine {
			if e.Status == oplog.StatusFailure {
				want = append(want, e.ID)
			}
		}
		all, err := bu.svc.ListLogs(context.Background(), oplog.Filter{EnvironmentID: bu.env.ID, Status: oplog.StatusFailure})
		if err != nil || len(all) != len(want) {
			t.Fatalf("ListLogs(failures) = %d entries, %v; want %d", len(all), err, len(want))
		}
		var got []string
		args := map[string]any{"status": "failure", "limit": 4}
		for range 10 {
			out, isErr := callJSON(t, cs, "logs_list_operations", args)
			if isErr {
				t.Fatalf("logs_list_operations(%v) = %v", args, out)
			}
			for _, d := range out["data"].([]any) {
				got = append(got, d.(map[string]any)["id"].(string))
			}
			next, _ := out["next_cursor"].(string)
			if next == "" {
				break
			}
			args["cursor"] = next
		}
		if d := cmp.Diff(entryIDs(all), got); d != "" {
			t.Errorf("the failures through logs_list_operations (-want +got):\n%s", d)
		}
		out, isErr := callJSON(t, cs, "logs_get_operation", map[string]any{"id": "e-19"})
		if data, _ := out["data"].(map[string]any); isErr || data["id"] != "e-19" || data["status"] != "failure" {
			t.Errorf("logs_get_operation = %v", out)
		}
		out, isErr = callJSON(t, cs, "logs_list_operations", map[string]any{"cursor": "nope"})
		if e, _ := out["error"].(map[string]any); !isErr || e["code"] != "invalid_query_params" {
			t.Errorf("logs_list_operations(a bad cursor) = %v", out)
		}
	})
}
