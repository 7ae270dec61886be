package connect_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/functions"
	"github.com/embedauth/connect/oplog"
	"github.com/embedauth/connect/store"
)

// The operations APIs of the operations console: counts of the
// operations log over time, cancelling a sync's run, enabling and
// disabling a function, and the health filter and cursor of the list of
// connections.

// badQuery checks that a request is 400 with code, naming param first.
func badQuery(t *testing.T, bu *bundle, rq req, code, param, msg string) {
	t.Helper()
	r := bu.do(t, rq)
	body, _ := r.obj()["error"].(map[string]any)
	errs, _ := body["errors"].([]any)
	var path []any
	var got string
	if len(errs) > 0 {
		first := errs[0].(map[string]any)
		path, _ = first["path"].([]any)
		got, _ = first["message"].(string)
	}
	if r.status != 400 || r.errCode() != code || len(path) == 0 || path[0] != param || !strings.Contains(got, msg) {
		t.Errorf("%s %s = %d %s, want 400 %s naming %s (%q)", rq.method, rq.path, r.status, r.raw, code, param, msg)
	}
}

// TestLogStatsAPI: GET /logs/stats counts the environment's entries by
// hour or day, type, operation and status, one bucket per hour or day of
// the span with empty ones; entries on a bucket's edge are in the bucket
// they start; by default it counts the 24 hours before now by hour. It
// needs environment:logs:read, and a bad query is 400 naming the
// parameter.
func TestLogStatsAPI(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		bu := setup(t, b)
		ctx := context.Background()
		env, err := bu.svc.Environments().Create(ctx, environments.CreateInput{Name: "stats"})
		if err != nil {
			t.Fatal(err)
		}
		key, _, err := bu.svc.Environments().CreateAPIKey(ctx, env.ID, environments.NewAPIKey{Name: "logs",
			Scopes: []string{environments.ScopeLogsRead}})
		if err != nil {
			t.Fatal(err)
		}
		now := bu.now.Now() // 2026-05-01T12:00:00Z
		n := 0
		add := func(envID int64, at time.Time, typ, op, status string) {
			n++
			if err := b.store.AppendLog(ctx, &oplog.Entry{ID: fmt.Sprintf("s%03d", n), EnvironmentID: envID, Type: typ, Operation: op,
				Status: status, CreatedAt: at}); err != nil {
				t.Fatal(err)
			}
		}
		us := time.Microsecond
		add(env.ID, now.Add(-3*time.Hour), "auth", "refresh", oplog.StatusFailure)    // 09:00, on the edge
		add(env.ID, now.Add(-3*time.Hour+us), "auth", "refresh", oplog.StatusFailure) // 09:00
		add(env.ID, now.Add(-2*time.Hour-us), "auth", "refresh", oplog.StatusSuccess) // 09:59:59.999999
		add(env.ID, now.Add(-time.Hour), "proxy", "call", oplog.StatusSuccess)        // 11:00
		add(env.ID, now.Add(-time.Hour+30*time.Minute), "proxy", "call", oplog.StatusSuccess)
		add(env.ID, now.Add(-us), "sync", "run", oplog.StatusFailure)                   // 11:59:59.999999
		add(env.ID, now, "sync", "run", oplog.StatusSuccess)                            // until: not counted
		add(env.ID, now.Add(-25*time.Hour), "sync", "run", oplog.StatusSuccess)         // before the default span
		add(env.ID, now.Add(-24*time.Hour), "webhook", "delivery", oplog.StatusSuccess) // the default since
		add(bu.env.ID, now.Add(-time.Hour), "proxy", "call", oplog.StatusFailure)       // another environment

		type count struct {
			Type      string `json:"type"`
			Operation string `json:"operation"`
			Status    string `json:"status"`
			Count     int    `json:"count"`
		}
		type bucket struct {
			Start  string  `json:"start"`
			Counts []count `json:"counts"`
		}
		type answer struct {
			Data struct {
				Bucket string   `json:"bucket"`
				Series []bucket `json:"series"`
			} `json:"data"`
		}
		get := func(query string) answer {
			t.Helper()
			r := bu.mustDo(t, 200, req{method: "GET", path: "/logs/stats" + query, key: key})
			var a answer
			if err := json.Unmarshal(r.raw, &a); err != nil {
				t.Fatal(err)
			}
			return a
		}
		a := get("?since=2026-05-01T08:30:00Z&until=2026-05-01T12:00:00Z")
		want := []bucket{
			{Start: "2026-05-01T08:00:00.000Z", Counts: []count{}},
			{Start: "2026-05-01T09:00:00.000Z", Counts: []count{{"auth", "refresh", "failure", 2}, {"auth", "refresh", "success", 1}}},
			{Start: "2026-05-01T10:00:00.000Z", Counts: []count{}},
			{Start: "2026-05-01T11:00:00.000Z", Counts: []count{{"proxy", "call", "success", 2}, {"sync", "run", "failure", 1}}},
		}
		if d := cmp.Diff(want, a.Data.Series); d != "" || a.Data.Bucket != "hour" {
			t.Errorf("hours (bucket %q; -want +got):\n%s", a.Data.Bucket, d)
		}
		// The same span in another time zone.
		if b := get("?since=2026-05-01T10:30:00%2B02:00&until=2026-05-01T14:00:00%2B02:00&bucket=hour"); cmp.Diff(want, b.Data.Series) != "" {
			t.Errorf("the span in +02:00 counted %+v", b.Data.Series)
		}
		a = get("?since=2026-04-30T00:00:00Z&until=2026-05-02T00:00:00Z&bucket=day")
		wantDays := []bucket{
			{Start: "2026-04-30T00:00:00.000Z", Counts: []count{{"sync", "run", "success", 1}, {"webhook", "delivery", "success", 1}}},
			{Start: "2026-05-01T00:00:00.000Z", Counts: []count{{"auth", "refresh", "failure", 2}, {"auth", "refresh", "success", 1},
				{"proxy", "call", "success", 2}, {"sync", "run", "failure", 1}, {"sync", "run", "success", 1}}},
		}
		if d := cmp.Diff(wantDays, a.Data.Series); d != "" || a.Data.Bucket != "day" {
			t.Errorf("days (bucket %q; -want +got):\n%s", a.Data.Bucket, d)
		}
		// By default the 24 hours before now, by hour: 24 buckets when
		// now is on an hour's start, the entry at now not counted yet.
		a = get("")
		if len(a.Data.Series) != 24 || a.Data.Series[0].Start != "2026-04-30T12:00:00.000Z" || a.Data.Series[23].Start != "2026-05-01T11:00:00.000Z" {
			t.Fatalf("the default span: %+v", a.Data.Series)
		}
		total := 0
		for _, s := range a.Data.Series {
			for _, c := range s.Counts {
				total += c.Count
			}
		}
		if total != 7 || a.Data.Series[0].Counts[0] != (count{"webhook", "delivery", "success", 1}) {
			t.Errorf("the default span counted %d entries, want 7: %+v", total, a.Data.Series)
		}

		// The scope.
		other, _, err := bu.svc.Environments().CreateAPIKey(ctx, env.ID, environments.NewAPIKey{Name: "other",
			Scopes: []string{environments.ScopeConnectionsRead}})
		if err != nil {
			t.Fatal(err)
		}
		if r := bu.do(t, req{method: "GET", path: "/logs/stats", key: other}); r.status != 403 || r.errCode() != "forbidden" {
			t.Errorf("a key without environment:logs:read = %d %s", r.status, r.raw)
		}
		for _, tc := range []struct{ query, param, msg string }{
			{"?limit=3", "limit", "unknown parameter"},
			{"?bucket=week", "bucket", "must be hour or day"},
			{"?bucket=hour&bucket=day", "bucket", "given more than once"},
			{"?since=yesterday", "since", "RFC 3339"},
			{"?until=2026-05-01T12:00:00+02:00", "until", "RFC 3339"},
			{"?since=2026-05-01T12:00:00Z&until=2026-05-01T11:00:00Z", "until", "must be after since"},
			{"?since=2026-05-02T00:00:00Z", "until", "must be after since"},
			{"?since=2026-03-01T00:00:00Z&until=2026-05-01T00:00:00Z", "since", "more than 1000 hours"},
			{"?since=2023-01-01T00:00:00Z&until=2026-05-01T00:00:00Z&bucket=day", "since", "more than 1000 days"},
		} {
			badQuery(t, bu, req{method: "GET", path: "/logs/stats" + tc.query, key: key}, "invalid_query_params", tc.param, tc.msg)
		}
		// 1000 buckets are answered.
		if a := get("?since=2023-08-05T00:00:00Z&until=2026-05-01T00:00:00Z&bucket=day"); len(a.Data.Series) != 1000 {
			t.Errorf("1000 days: %d buckets", len(a.Data.Series))
		}
	})
}

// blockingSync is a sync of fx whose first run waits for its context to
// end, and whose later runs return at once. started receives the number
// of each run as it starts; cancelled is closed when the first run's
// context has ended.
func blockingSync(started chan<- int32, cancelled chan<- struct{}) functions.Sync {
	var calls atomic.Int32
	return functions.Sync{Integration: "fx", Name: "slow", Frequency: "1h", AutoStart: true,
		Models: []functions.Model{functions.ModelOf[issue]("Issue")},
		Run: func(ctx context.Context, s *functions.SyncContext) error {
			n := calls.Add(1)
			started <- n
			if n > 1 {
				return nil
			}
			<-ctx.Done()
			close(cancelled)
			return ctx.Err()
		}}
}

// opsClock is a Service clock that a test moves forward.
type opsClock struct{ offset atomic.Int64 }

func (c *opsClock) now() time.Time      { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *opsClock) add(d time.Duration) { c.offset.Add(int64(d)) }

// withManualTicks makes the Service tick its syncs when it starts, then
// only when the test calls Tick (the loop's next tick is an hour away),
// on the test's clock.
func withManualTicks(clock *opsClock) func(*connect.Config) {
	return func(c *connect.Config) {
		c.Now = clock.now
		c.Functions.TickInterval = time.Hour
	}
}

// TestSyncCancel: POST /sync/cancel stops the running run of a sync at
// once: the function's context ends, the run ends as stopped with the
// error type cancelled, GET /sync/status shows it, and the sync runs
// again at its next scheduled slot. Cancelling a sync that does not run
// succeeds and changes nothing.
func TestSyncCancel(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		started, cancelled := make(chan int32, 4), make(chan struct{})
		clock := &opsClock{}
		begin := time.Now()
		f := setupSyncConfig(t, b, withManualTicks(clock), blockingSync(started, cancelled))
		// The tick of the Service's start queues the first run.
		if n := receive(t, started, "the first run"); n != 1 {
			t.Fatalf("run %d started first", n)
		}
		if st := f.status(t, "slow")[0]; st["status"] != functions.StatusRunning {
			t.Fatalf("status while running: %v", st)
		}
		body := `{"provider_config_key":"fx","syncs":["slow"],"connection_id":"c1"}`
		r := f.mustDo(t, 200, req{method: "POST", path: "/sync/cancel", body: body})
		if strings.TrimSpace(string(r.raw)) != `{"success":true}` {
			t.Errorf("cancel answered %s", r.raw)
		}
		receive(t, cancelled, "the run's context to end")
		st := f.waitRun(t, "slow", begin)
		if st["status"] != functions.StatusError || st["latestExecutionStatus"] != functions.RunStopped || st["jobStatus"] != functions.RunStopped {
			t.Fatalf("status after the cancel: %v", st)
		}
		ctx := context.Background()
		scs, err := b.store.ListSyncs(ctx, functions.SyncFilter{EnvironmentID: f.env.ID, Limit: 10})
		if err != nil || len(scs) != 1 {
			t.Fatalf("syncs %v, %v", scs, err)
		}
		runs, err := b.store.LatestFinishedSyncRuns(ctx, []string{scs[0].ID})
		if err != nil {
			t.Fatal(err)
		}
		var failure map[string]any
		if run := runs[scs[0].ID]; run == nil || json.Unmarshal(run.Error, &failure) != nil || failure["type"] != "cancelled" {
			t.Fatalf("the cancelled run: %+v (error %s)", run, runs[scs[0].ID].Error)
		}
		if scs[0].RunID != "" || scs[0].NextRunAt == nil {
			t.Fatalf("the schedule after the cancel: %+v", scs[0])
		}

		// Nothing runs: cancelling succeeds, and no run is queued.
		f.mustDo(t, 200, req{method: "POST", path: "/sync/cancel", body: body})
		f.mustDo(t, 200, req{method: "POST", path: "/sync/cancel", body: `{"provider_config_key":"fx","syncs":[]}`})
		if st := f.status(t, "slow")[0]; st["jobStatus"] != functions.RunStopped {
			t.Fatalf("a cancel of a sync that does not run changed it: %v", st)
		}

		// The next slot runs it again.
		clock.add(time.Hour)
		before := time.Now()
		res, err := f.svc.Functions().Tick(ctx)
		if err != nil || res.Started != 1 {
			t.Fatalf("Tick at the next slot = %+v, %v: want one run started", res, err)
		}
		if n := receive(t, started, "the run of the next slot"); n != 2 {
			t.Fatalf("run %d started", n)
		}
		if st := f.waitRun(t, "slow", before); st["status"] != functions.StatusSuccess {
			t.Fatalf("the run of the next slot: %v", st)
		}

		// Bad input, and what does not exist.
		for _, tc := range []struct {
			body, code, param string
		}{
			{`{"syncs":["slow"]}`, "invalid_body", "provider_config_key"},
			{`{"provider_config_key":"fx"}`, "invalid_body", "syncs"},
			{`{"provider_config_key":"fx","syncs":"slow"}`, "invalid_body", "syncs"},
			{`{"provider_config_key":"fx","syncs":[""]}`, "invalid_body", "syncs"},
			{`{"provider_config_key":"fx","syncs":["slow"],"connection_id":""}`, "invalid_body", "connection_id"},
			{`{"provider_config_key":"fx","syncs":["slow"],"connection_id":7}`, "invalid_body", "connection_id"},
		} {
			badQuery(t, f.bundle, req{method: "POST", path: "/sync/cancel", body: tc.body}, tc.code, tc.param, "")
		}
		for _, tc := range []struct{ body, code string }{
			{`{"provider_config_key":"fx","syncs":["nope"]}`, "not_found"},
			{`{"provider_config_key":"fx","syncs":["slow"],"connection_id":"nobody"}`, "unknown_connection"},
		} {
			if r := f.do(t, req{method: "POST", path: "/sync/cancel", body: tc.body}); r.status != 404 || r.errCode() != tc.code {
				t.Errorf("cancel %s = %d %s, want 404 %s", tc.body, r.status, r.raw, tc.code)
			}
		}
		if r := f.do(t, req{method: "POST", path: "/sync/cancel", body: `{"provider_config_key":"fx","syncs":["slow"],"opts":{"reset":true}}`}); r.status != 400 {
			t.Errorf("cancel with opts = %d %s, want 400", r.status, r.raw)
		}
	})
}

// TestFunctionEnable: PATCH /integrations/{key}/functions/{name} enables
// and disables a function and answers it as GET does. A disabled action
// is refused by POST /action/trigger; a disabled sync's scheduled slots
// pass without a run (no run, no failure), and once enabled it runs at
// its next slot.
func TestFunctionEnable(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		started := make(chan int32, 4)
		var calls atomic.Int32
		daily := functions.Sync{Integration: "fx", Name: "daily", Frequency: "1h", AutoStart: true,
			Models: []functions.Model{functions.ModelOf[issue]("Issue")},
			Run: func(ctx context.Context, s *functions.SyncContext) error {
				started <- calls.Add(1)
				return nil
			}}
		echo := functions.NewAction("fx", "hello", func(ctx context.Context, c *functions.Context, in struct{}) (map[string]string, error) {
			return map[string]string{"hello": "world"}, nil
		})
		clock := &opsClock{}
		begin := time.Now()
		f := setupSyncConfig(t, b, withManualTicks(clock), daily, echo)
		receive(t, started, "the first run")
		f.waitRun(t, "daily", begin)
		ctx := context.Background()

		// The action.
		r := f.mustDo(t, 200, req{method: "PATCH", path: "/integrations/fx/functions/hello?type=action", body: `{"enabled":false}`})
		got := f.mustDo(t, 200, req{method: "GET", path: "/integrations/fx/functions/hello?type=action"})
		if d := cmp.Diff(got.obj(), r.obj()); d != "" || r.obj()["data"].(map[string]any)["enabled"] != false {
			t.Errorf("PATCH answered %s; GET answers (-GET +PATCH):\n%s", r.raw, d)
		}
		if r := f.do(t, actionReq("hello", "", nil)); r.status != 404 || r.errCode() != "disabled_resource" {
			t.Errorf("a disabled action ran: %d %s", r.status, r.raw)
		}
		// Without a type: the name is of one function only.
		r = f.mustDo(t, 200, req{method: "PATCH", path: "/integrations/fx/functions/hello", body: `{"enabled":true}`})
		if r.obj()["data"].(map[string]any)["enabled"] != true {
			t.Errorf("enable answered %s", r.raw)
		}
		f.mustDo(t, 200, actionReq("hello", "", nil))

		// The sync: disabled, its slot passes without a run.
		f.mustDo(t, 200, req{method: "PATCH", path: "/integrations/fx/functions/daily?type=sync", body: `{"enabled":false}`})
		st := f.status(t, "daily")[0]
		next, _ := time.Parse(time.RFC3339Nano, st["nextScheduledSyncAt"].(string))
		if st["status"] != functions.StatusStopped {
			t.Errorf("a disabled sync's status: %v", st)
		}
		clock.add(time.Hour)
		res, err := f.svc.Functions().Tick(ctx)
		if err != nil || res.Started != 0 || res.Skipped != 1 {
			t.Fatalf("Tick at the slot of a disabled sync = %+v, %v: want it skipped", res, err)
		}
		after := f.status(t, "daily")[0]
		moved, _ := time.Parse(time.RFC3339Nano, after["nextScheduledSyncAt"].(string))
		if after["jobStatus"] != functions.RunSuccess || after["finishedAt"] != st["finishedAt"] || !moved.Equal(next.Add(time.Hour)) {
			t.Errorf("the skipped slot: before %v, after %v", st, after)
		}
		if n := calls.Load(); n != 1 {
			t.Errorf("the disabled sync ran: %d runs", n)
		}
		// Enabled again: not before its next slot, then at it.
		f.mustDo(t, 200, req{method: "PATCH", path: "/integrations/fx/functions/daily?type=sync", body: `{"enabled":true}`})
		if res, err := f.svc.Functions().Tick(ctx); err != nil || res.Started != 0 || res.Skipped != 0 {
			t.Fatalf("Tick before the next slot = %+v, %v", res, err)
		}
		clock.add(time.Hour)
		before := time.Now()
		if res, err := f.svc.Functions().Tick(ctx); err != nil || res.Started != 1 {
			t.Fatalf("Tick at the next slot of the enabled sync = %+v, %v", res, err)
		}
		if n := receive(t, started, "the run after enabling"); n != 2 {
			t.Fatalf("run %d started", n)
		}
		if st := f.waitRun(t, "daily", before); st["status"] != functions.StatusSuccess {
			t.Fatalf("the run after enabling: %v", st)
		}

		// Bad input, and what does not exist.
		for _, tc := range []struct{ path, body, code, param, msg string }{
			{"/integrations/fx/functions/hello", `{}`, "invalid_body", "enabled", "is required"},
			{"/integrations/fx/functions/hello", `{"enabled":null}`, "invalid_body", "enabled", "is required"},
			{"/integrations/fx/functions/hello", `{"enabled":"yes"}`, "invalid_body", "enabled", "expected boolean"},
			{"/integrations/fx/functions/hello", `{"enabled":true,"name":"x"}`, "invalid_body", "name", "only enabled"},
			{"/integrations/fx/functions/hello?type=webhook", `{"enabled":true}`, "invalid_query_params", "type", "must be one of"},
			{"/integrations/fx/functions/hello?limit=1", `{"enabled":true}`, "invalid_query_params", "limit", "unknown parameter"},
		} {
			badQuery(t, f.bundle, req{method: "PATCH", path: tc.path, body: tc.body}, tc.code, tc.param, tc.msg)
		}
		for _, tc := range []struct{ path, code string }{
			{"/integrations/fx/functions/nope", "not_found"},
			{"/integrations/fx/functions/hello?type=sync", "not_found"},
			{"/integrations/nope/functions/hello", "unknown_provider_config"},
		} {
			if r := f.do(t, req{method: "PATCH", path: tc.path, body: `{"enabled":false}`}); r.status != 404 || r.errCode() != tc.code {
				t.Errorf("PATCH %s = %d %s, want 404 %s", tc.path, r.status, r.raw, tc.code)
			}
		}
	})
}

// TestConnectionsHealthAndCursor: GET /connections?status= keeps the
// connections with an auth error, a failed sync, a paused sync, any
// error, or none; each listed connection carries its health; cursor
// pages the list by id with next_cursor, alone or with filters, and a
// cursor with a page, an unknown status or a bad cursor is 400.
func TestConnectionsHealthAndCursor(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		bu := setup(t, b)
		seed(t, bu) // gh/c1, gh/c2, oa/k1
		ctx := context.Background()
		st := b.store
		for _, id := range []string{"k2", "k3", "k4"} {
			bu.mustDo(t, 201, req{method: "POST", path: "/connections", body: `{"provider_config_key":"oa","connection_id":"` + id + `","api_key":"sk-` + id + `"}`})
		}
		conn := func(key, id string) *connections.Connection {
			c, err := st.GetConnection(ctx, bu.env.ID, key, id)
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
		// c2: an auth error; k1: a failed sync; k2: a paused sync, whose
		// last run succeeded; k3: a sync that failed, then succeeded.
		c2 := conn("gh", "c2")
		c2.Errors = []connections.Error{{Type: connections.ErrorTypeAuth, LogID: "log-auth"}}
		if err := st.UpdateConnection(ctx, c2); err != nil {
			t.Fatal(err)
		}
		now := bu.now.Now()
		schedule := func(c *connections.Connection, paused bool, runs ...string) {
			sc := &functions.Schedule{EnvironmentID: bu.env.ID, ConnectionID: c.ID, Integration: c.IntegrationKey, ConnectionRef: c.ConnectionID,
				Name: "issues", Variant: functions.BaseVariant, Interval: time.Hour, Paused: paused, CreatedAt: now, UpdatedAt: now}
			if !paused {
				next := now.Add(time.Hour)
				sc.NextRunAt = &next
			}
			if _, err := st.CreateSyncs(ctx, []*functions.Schedule{sc}); err != nil {
				t.Fatal(err)
			}
			for i, status := range runs {
				at := now.Add(time.Duration(i) * time.Minute)
				r := &functions.SyncRun{ID: fmt.Sprintf("00000000-0000-4000-8000-%012d", c.ID*10+int64(i)), SyncID: sc.ID, Status: status,
					Type: "INITIAL", Trigger: "schedule", CreatedAt: at, StartedAt: &at, FinishedAt: &at}
				if err := st.CreateSyncRun(ctx, r); err != nil {
					t.Fatal(err)
				}
			}
		}
		schedule(conn("oa", "k1"), false, functions.RunStopped)
		schedule(conn("oa", "k2"), true, functions.RunSuccess)
		schedule(conn("oa", "k3"), false, functions.RunStopped, functions.RunSuccess)

		type listed struct {
			ConnectionID string             `json:"connection_id"`
			Health       connections.Health `json:"health"`
		}
		list := func(query string) ([]listed, *string) {
			t.Helper()
			r := bu.mustDo(t, 200, req{method: "GET", path: "/connections" + query})
			var a struct {
				Connections []listed `json:"connections"`
				NextCursor  *string  `json:"next_cursor"`
			}
			if err := json.Unmarshal(r.raw, &a); err != nil {
				t.Fatal(err)
			}
			return a.Connections, a.NextCursor
		}
		ids := func(ls []listed) []string {
			out := []string{}
			for _, l := range ls {
				out = append(out, l.ConnectionID)
			}
			return out
		}
		all, next := list("")
		wantHealth := []listed{
			{"c1", connections.Health{}},
			{"c2", connections.Health{AuthError: true}},
			{"k1", connections.Health{SyncError: true}},
			{"k2", connections.Health{Paused: true}},
			{"k3", connections.Health{}},
			{"k4", connections.Health{}},
		}
		if d := cmp.Diff(wantHealth, all); d != "" || next != nil {
			t.Errorf("the list (next_cursor %v; -want +got):\n%s", next, d)
		}
		for _, tc := range []struct {
			query string
			want  []string
		}{
			{"?status=auth_error", []string{"c2"}},
			{"?status=sync_error", []string{"k1"}},
			{"?status=paused", []string{"k2"}},
			{"?status=error", []string{"c2", "k1"}},
			{"?status=ok", []string{"c1", "k2", "k3", "k4"}},
			{"?status=ok&integrationId=oa", []string{"k2", "k3", "k4"}},
			{"?status=error&search=K", []string{"k1"}},
			{"?status=ok&limit=2&page=1", []string{"k3", "k4"}},
		} {
			got, _ := list(tc.query)
			if d := cmp.Diff(tc.want, ids(got)); d != "" {
				t.Errorf("GET /connections%s (-want +got):\n%s", tc.query, d)
			}
		}

		// Paging with the cursor: every connection once, in order, also
		// when one is created meanwhile (it comes last) and one of a page
		// still to come is deleted.
		var paged []string
		query := "?limit=2"
		for page := 0; ; page++ {
			if page > 10 {
				t.Fatal("the cursor paging does not end")
			}
			got, next := list(query)
			paged = append(paged, ids(got)...)
			if page == 0 {
				bu.mustDo(t, 201, req{method: "POST", path: "/connections", body: `{"provider_config_key":"oa","connection_id":"k5","api_key":"sk-5"}`})
				bu.mustDo(t, 200, req{method: "DELETE", path: "/connections/k3?provider_config_key=oa"})
			}
			if next == nil {
				break
			}
			if len(got) != 2 {
				t.Fatalf("a page before the last has %d connections", len(got))
			}
			query = "?limit=2&cursor=" + url.QueryEscape(*next)
		}
		if d := cmp.Diff([]string{"c1", "c2", "k1", "k2", "k4", "k5"}, paged); d != "" {
			t.Errorf("paged with the cursor (-want +got):\n%s", d)
		}
		// A cursor with filters: the page after the position among the
		// matching ones.
		first, next := list("?status=ok&limit=1")
		if d := cmp.Diff([]string{"c1"}, ids(first)); d != "" || next == nil {
			t.Fatalf("first ok page %v, next %v", ids(first), next)
		}
		rest, last := list("?status=ok&limit=10&cursor=" + url.QueryEscape(*next))
		if d := cmp.Diff([]string{"k2", "k4", "k5"}, ids(rest)); d != "" || last != nil {
			t.Errorf("the ok connections after c1 (next %v; -want +got):\n%s", last, d)
		}

		for _, tc := range []struct{ query, param, msg string }{
			{"?status=broken", "status", "must be ok, error, auth_error, sync_error or paused"},
			{"?status=ok&status=error", "status", "given more than once"},
			{"?cursor=garbage", "cursor", "not a next_cursor"},
			{"?cursor=" + url.QueryEscape(*next) + "&page=0", "cursor", "cannot be given with page"},
			{"?cursor=" + url.QueryEscape(*next) + "&page=2", "cursor", "cannot be given with page"},
			{"?cursor=" + url.QueryEscape(*next) + "&cursor=" + url.QueryEscape(*next), "cursor", "given more than once"},
		} {
			badQuery(t, bu, req{method: "GET", path: "/connections" + tc.query}, "invalid_query_params", tc.param, tc.msg)
		}
	})
}

// gatedStore holds the first GetSyncRun (the sync job's read of its run)
// until released: before its read of the Store, or after it (then the
// job holds the run as it was, and its start meets a change).
type gatedStore struct {
	connect.Store
	afterRead         bool
	entered, released chan struct{}
	once              atomic.Bool
}

func (g *gatedStore) GetSyncRun(ctx context.Context, id string) (*functions.SyncRun, error) {
	if !g.once.CompareAndSwap(false, true) {
		return g.Store.GetSyncRun(ctx, id)
	}
	var r *functions.SyncRun
	var err error
	if g.afterRead {
		r, err = g.Store.GetSyncRun(ctx, id)
	}
	close(g.entered)
	<-g.released
	if !g.afterRead {
		r, err = g.Store.GetSyncRun(ctx, id)
	}
	return r, err
}

// The optional interfaces of the wrapped Store.
func (g *gatedStore) AfterCommit(ctx context.Context, fn func()) {
	if c, ok := g.Store.(store.CommitHooker); ok {
		c.AfterCommit(ctx, fn)
		return
	}
	fn()
}

func (g *gatedStore) Durable() bool {
	d, ok := g.Store.(store.Durable)
	return ok && d.Durable()
}

// TestSyncCancelQueued: a run cancelled while it is queued ends as
// cancelled without running, whether its job reads the run after the
// request or before it (and then finds it changed as it starts).
func TestSyncCancelQueued(t *testing.T) {
	t.Parallel()
	for _, afterRead := range []bool{false, true} {
		t.Run(fmt.Sprintf("job read first %v", afterRead), func(t *testing.T) {
			backends(t, func(t *testing.T, b *backend) {
				g := &gatedStore{Store: b.store, afterRead: afterRead, entered: make(chan struct{}), released: make(chan struct{})}
				var calls atomic.Int32
				never := functions.Sync{Integration: "fx", Name: "never", Frequency: "1h", AutoStart: false,
					Models: []functions.Model{functions.ModelOf[issue]("Issue")},
					Run: func(ctx context.Context, s *functions.SyncContext) error {
						calls.Add(1)
						return nil
					}}
				clock := &opsClock{}
				f := setupSyncConfig(t, b.with(g), withManualTicks(clock), never)
				begin := time.Now()
				body := `{"provider_config_key":"fx","syncs":["never"],"connection_id":"c1"}`
				f.mustDo(t, 200, req{method: "POST", path: "/sync/trigger", body: body})
				receive(t, g.entered, "the job to read its run")
				f.mustDo(t, 200, req{method: "POST", path: "/sync/cancel", body: body})
				close(g.released)
				st := f.waitRun(t, "never", begin)
				if st["latestExecutionStatus"] != functions.RunStopped || st["status"] != functions.StatusPaused {
					t.Fatalf("status after cancelling the queued run: %v", st)
				}
				if n := calls.Load(); n != 0 {
					t.Errorf("the cancelled run ran %d times", n)
				}
				scs, err := b.store.ListSyncs(context.Background(), functions.SyncFilter{EnvironmentID: f.env.ID, Limit: 10})
				if err != nil || len(scs) != 1 || scs[0].RunID != "" {
					t.Fatalf("syncs %+v, %v: want one, free", scs, err)
				}
				runs, err := b.store.LatestFinishedSyncRuns(context.Background(), []string{scs[0].ID})
				if err != nil {
					t.Fatal(err)
				}
				var failure map[string]any
				if run := runs[scs[0].ID]; run == nil || json.Unmarshal(run.Error, &failure) != nil || failure["type"] != "cancelled" {
					t.Fatalf("the cancelled run: %+v", run)
				}
			})
		})
	}
}
