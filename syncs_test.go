package connect_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/functions"
	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/webhooks"
)

// issue is a record of the tests' sync.
type issue struct {
	ID    string `json:"id"`
	Title string `json:"title"`
}

// issueAPI serves GET /issues?cursor=N: pages of pageSize issues from
// the list, the next cursor in "next" (absent on the last page).
type issueAPI struct {
	mu       sync.Mutex
	issues   []issue
	pageSize int
	cursors  []string // the cursor of every request
}

func (a *issueAPI) set(n int, title func(i int) string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.issues = make([]issue, n)
	for i := range a.issues {
		a.issues[i] = issue{ID: "i" + strconv.Itoa(i), Title: title(i)}
	}
}

func (a *issueAPI) serve(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	cur := r.URL.Query().Get("cursor")
	a.cursors = append(a.cursors, cur)
	start, _ := strconv.Atoi(cur)
	end := min(start+a.pageSize, len(a.issues))
	body := map[string]any{"issues": a.issues[start:end]}
	if end < len(a.issues) {
		body["next"] = strconv.Itoa(end)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(body)
}

func (a *issueAPI) takeCursors() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := a.cursors
	a.cursors = nil
	return out
}

// issueSync is a sync of the issues, saving a checkpoint after each page
// and resuming from it. failAfter, when positive, makes a run fail after
// that many pages.
func issueSync(failAfter *atomic.Int32, trackDeletes bool, frequency string, autoStart bool) functions.Sync {
	return functions.Sync{
		Integration: "fx", Name: "issues", Frequency: frequency, AutoStart: autoStart, TrackDeletes: trackDeletes,
		Models: []functions.Model{functions.ModelOf[issue]("Issue")},
		Run: func(ctx context.Context, s *functions.SyncContext) error {
			cp, err := s.Checkpoint(ctx)
			if err != nil {
				return err
			}
			cursor, _ := cp["cursor"].(string)
			pages := 0
			for {
				q := url.Values{}
				if cursor != "" {
					q.Set("cursor", cursor)
				}
				if s.Variant != functions.BaseVariant {
					q.Set("variant", s.Variant)
				}
				resp, err := s.Proxy(ctx, functions.ProxyRequest{Endpoint: "/issues", Params: q})
				if err != nil {
					return err
				}
				var page struct {
					Issues []issue `json:"issues"`
					Next   string  `json:"next"`
				}
				if err := resp.JSON(&page); err != nil {
					return err
				}
				if s.Variant != functions.BaseVariant {
					for i := range page.Issues {
						page.Issues[i].Title += " (" + s.Variant + ")"
					}
				}
				if err := s.Save(ctx, "Issue", page.Issues); err != nil {
					return err
				}
				pages++
				if page.Next == "" {
					return s.ClearCheckpoint(ctx)
				}
				cursor = page.Next
				if err := s.SaveCheckpoint(ctx, functions.Checkpoint{"cursor": cursor}); err != nil {
					return err
				}
				if failAfter != nil && failAfter.Load() > 0 && int32(pages) >= failAfter.Load() {
					return errors.New("stopped on purpose")
				}
			}
		},
	}
}

// syncFixture is a fnBundle whose provider serves an issueAPI.
type syncFixture struct {
	*fnBundle
	issues *issueAPI
}

func setupSync(t *testing.T, b *backend, fns ...any) *syncFixture {
	t.Helper()
	return setupSyncConfig(t, b, nil, fns...)
}

// setupSyncConfig is setupSync with mutate applied to the Config (nil for
// none).
func setupSyncConfig(t *testing.T, b *backend, mutate func(*connect.Config), fns ...any) *syncFixture {
	t.Helper()
	api := &issueAPI{pageSize: 100}
	api.set(250, func(i int) string { return "issue " + strconv.Itoa(i) })
	var muts []func(*connect.Config)
	if mutate != nil {
		muts = append(muts, mutate)
	}
	// The issues are served before the connection exists: its sync
	// starts at once (auto start) and may call the API before this
	// function returns.
	fb := setupFunctionsAPI(t, b, func(svc *connect.Service) {
		if err := svc.Functions().Register(fns...); err != nil {
			t.Fatal(err)
		}
	}, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/issues" {
			api.serve(w, r)
			return
		}
		http.NotFound(w, r)
	}, muts...)
	return &syncFixture{fnBundle: fb, issues: api}
}

// status returns the sync status entries of c1's issues syncs.
func (f *syncFixture) status(t *testing.T, syncs string) []map[string]any {
	t.Helper()
	r := f.mustDo(t, 200, req{method: "GET", path: "/sync/status?syncs=" + syncs + "&provider_config_key=fx&connection_id=c1"})
	var out []map[string]any
	for _, s := range r.obj()["syncs"].([]any) {
		out = append(out, s.(map[string]any))
	}
	return out
}

// waitRun waits until the sync's latest run has finished after since
// (its finishedAt) and returns its status entry.
func (f *syncFixture) waitRun(t *testing.T, syncs string, since time.Time) map[string]any {
	t.Helper()
	var st map[string]any
	waitFor(t, 30*time.Second, "the sync run of "+syncs, func() bool {
		ss := f.status(t, syncs)
		if len(ss) != 1 {
			t.Fatalf("status of %s: %v", syncs, ss)
		}
		st = ss[0]
		fin, _ := st["finishedAt"].(string)
		at, err := time.Parse(time.RFC3339Nano, fin)
		return err == nil && !at.Before(since) && st["status"] != functions.StatusRunning
	})
	return st
}

// records lists every record of a model through GET /records, page by
// page.
func (f *syncFixture) records(t *testing.T, query string) []map[string]any {
	t.Helper()
	var out []map[string]any
	cursor := ""
	for range 1000 {
		path := "/records/?model=Issue&limit=70" + query
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		r := f.mustDo(t, 200, req{method: "GET", path: path, header: map[string]string{"Connection-Id": "c1", "Provider-Config-Key": "fx"}})
		for _, rec := range r.obj()["records"].([]any) {
			out = append(out, rec.(map[string]any))
		}
		next, _ := r.obj()["next_cursor"].(string)
		if next == "" {
			return out
		}
		cursor = next
	}
	t.Fatal("GET /records never ended")
	return nil
}

func TestSyncRunsAndRecords(t *testing.T) {
	backends(t, func(t *testing.T, b *backend) {
		start := time.Now()
		f := setupSync(t, b, issueSync(nil, false, "every hour", true))

		// Auto start: the new connection's sync runs at once.
		st := f.waitRun(t, "issues", start)
		// type is the latest run's: INITIAL after the first run (the next
		// one will be incremental, but has not run).
		if st["status"] != functions.StatusSuccess || st["frequency"] != "1h" || st["type"] != "INITIAL" {
			t.Fatalf("status after the first run: %v", st)
		}
		res := st["latestResult"].(map[string]any)["Issue"].(map[string]any)
		if res["added"] != float64(250) || res["updated"] != float64(0) || st["recordCount"].(map[string]any)["Issue"] != float64(250) {
			t.Fatalf("first run result %v, recordCount %v", res, st["recordCount"])
		}
		if st["checkpoint"] != nil {
			t.Errorf("the run cleared its checkpoint, status shows %v", st["checkpoint"])
		}
		next, _ := time.Parse(time.RFC3339Nano, st["nextScheduledSyncAt"].(string))
		if d := next.Sub(start); d < 59*time.Minute || d > 61*time.Minute {
			t.Errorf("next run at %v, %v after the start; want about an hour", next, d)
		}
		recs := f.records(t, "")
		if len(recs) != 250 {
			t.Fatalf("GET /records listed %d records, want 250", len(recs))
		}
		seen := map[string]bool{}
		for _, r := range recs {
			id := r["id"].(string)
			if seen[id] {
				t.Fatalf("record %s listed twice", id)
			}
			seen[id] = true
			meta := r["_nango_metadata"].(map[string]any)
			if meta["last_action"] != "ADDED" || r["title"] == nil {
				t.Fatalf("record %v", r)
			}
		}

		// An unchanged run counts nothing; a changed record is updated.
		before := time.Now()
		f.mustDo(t, 200, req{method: "POST", path: "/sync/trigger", body: `{"syncs":["issues"],"provider_config_key":"fx","connection_id":"c1"}`})
		st = f.waitRun(t, "issues", before)
		res = st["latestResult"].(map[string]any)["Issue"].(map[string]any)
		if res["added"] != float64(0) || res["updated"] != float64(0) {
			t.Fatalf("an unchanged run counted %v", res)
		}
		if st["type"] != "INCREMENTAL" {
			t.Errorf("type after an incremental run: %v", st["type"])
		}
		f.issues.set(251, func(i int) string {
			if i == 7 {
				return "changed"
			}
			return "issue " + strconv.Itoa(i)
		})
		before = time.Now()
		f.mustDo(t, 200, req{method: "POST", path: "/sync/trigger", body: `{"syncs":["issues"],"provider_config_key":"fx","connection_id":"c1"}`})
		st = f.waitRun(t, "issues", before)
		res = st["latestResult"].(map[string]any)["Issue"].(map[string]any)
		if res["added"] != float64(1) || res["updated"] != float64(1) {
			t.Fatalf("run after a change counted %v, want 1 added and 1 updated", res)
		}
		upd := f.records(t, "&filter=updated")
		if len(upd) != 1 || upd[0]["id"] != "i7" || upd[0]["title"] != "changed" {
			t.Fatalf("filter=updated listed %v", upd)
		}
		added := f.records(t, "&filter=added&ids=i250&ids=i1")
		if len(added) != 2 {
			t.Fatalf("filter=added with ids listed %d records", len(added))
		}

		// Webhooks: one per model and run, with the counts.
		var syncHooks []map[string]any
		waitFor(t, 10*time.Second, "three sync webhooks", func() bool {
			syncHooks = f.hook.ofType(webhooks.TypeSync)
			return len(syncHooks) >= 3
		})
		for _, h := range syncHooks {
			if h["syncName"] != "issues" || h["model"] != "Issue" || h["success"] != true || h["modifiedAfter"] == nil {
				t.Errorf("sync webhook %v", h)
			}
		}

		// Prune: payloads emptied up to a cursor.
		all := f.records(t, "")
		until := all[9]["_nango_metadata"].(map[string]any)["cursor"].(string)
		r := f.mustDo(t, 200, req{method: "PATCH", path: "/records/prune", header: map[string]string{"Connection-Id": "c1", "Provider-Config-Key": "fx"},
			body: fmt.Sprintf(`{"model":"Issue","until_cursor":%q}`, until)})
		if r.obj()["count"] != float64(10) {
			t.Fatalf("prune answered %s", r.raw)
		}
		all = f.records(t, "")
		for i, rec := range all[:10] {
			if rec["title"] != nil || rec["_nango_metadata"].(map[string]any)["pruned_at"] == nil {
				t.Fatalf("record %d after prune: %v", i, rec)
			}
		}
		if all[10]["title"] == nil {
			t.Fatalf("record 10 was pruned: %v", all[10])
		}

		// A run saving the pruned records again, unchanged otherwise,
		// restores their payloads and counts them as updated.
		before = time.Now()
		f.mustDo(t, 200, req{method: "POST", path: "/sync/trigger", body: `{"syncs":["issues"],"provider_config_key":"fx","connection_id":"c1"}`})
		st = f.waitRun(t, "issues", before)
		res = st["latestResult"].(map[string]any)["Issue"].(map[string]any)
		if res["added"] != float64(0) || res["updated"] != float64(10) {
			t.Fatalf("the run after pruning counted %v, want 10 updated", res)
		}
		for _, rec := range f.records(t, "") {
			if rec["title"] == nil || rec["_nango_metadata"].(map[string]any)["pruned_at"] != nil {
				t.Fatalf("record after the run that saved it again: %v", rec)
			}
		}
	})
}

func TestSyncControls(t *testing.T) {
	backends(t, func(t *testing.T, b *backend) {
		start := time.Now()
		f := setupSync(t, b, issueSync(nil, false, "1d", false))
		st := f.status(t, "issues")[0]
		if st["status"] != functions.StatusPaused {
			t.Fatalf("a sync without auto start is %v", st["status"])
		}
		// Start runs it.
		f.mustDo(t, 200, req{method: "POST", path: "/sync/start", body: `{"syncs":["issues"],"provider_config_key":"fx"}`})
		st = f.waitRun(t, "issues", start)
		if st["status"] != functions.StatusSuccess || st["frequency"] != "1d" {
			t.Fatalf("after start: %v", st)
		}
		// Frequency override, normalised; too short refused; null reverts.
		body := `{"sync_name":"issues","provider_config_key":"fx","connection_id":"c1","frequency":%s}`
		r := f.mustDo(t, 200, req{method: "PUT", path: "/sync/update-connection-frequency", body: fmt.Sprintf(body, `"every 30 minutes"`)})
		if r.obj()["frequency"] != "30m" {
			t.Errorf("frequency answer %s", r.raw)
		}
		st = f.status(t, "issues")[0]
		next, _ := time.Parse(time.RFC3339Nano, st["nextScheduledSyncAt"].(string))
		if d := time.Until(next); d > 31*time.Minute || st["frequency"] != "30m" {
			t.Errorf("after the override: next run in %v, frequency %v", d, st["frequency"])
		}
		r = f.mustDo(t, 400, req{method: "PUT", path: "/sync/update-connection-frequency", body: fmt.Sprintf(body, `"10s"`)})
		if r.errCode() != "sync_interval_too_short" {
			t.Errorf("10s answered %s", r.raw)
		}
		r = f.mustDo(t, 200, req{method: "PUT", path: "/sync/update-connection-frequency", body: fmt.Sprintf(body, `null`)})
		if r.obj()["frequency"] != "1d" {
			t.Errorf("null answered %s", r.raw)
		}
		// Pause.
		f.mustDo(t, 200, req{method: "POST", path: "/sync/pause", body: `{"syncs":["issues"],"provider_config_key":"fx","connection_id":"c1"}`})
		if st := f.status(t, "issues")[0]; st["status"] != functions.StatusPaused || st["nextScheduledSyncAt"] != nil {
			t.Errorf("after pause: %v", st)
		}
		// Variants: their own records.
		r = f.mustDo(t, 200, req{method: "POST", path: "/sync/issues/variant/blue", body: `{"provider_config_key":"fx","connection_id":"c1"}`})
		if r.obj()["variant"] != "blue" || r.obj()["name"] != "issues" || r.obj()["id"] == "" {
			t.Fatalf("create variant answered %s", r.raw)
		}
		f.mustDo(t, 409, req{method: "POST", path: "/sync/issues/variant/blue", body: `{"provider_config_key":"fx","connection_id":"c1"}`})
		r = f.mustDo(t, 400, req{method: "POST", path: "/sync/issues/variant/base", body: `{"provider_config_key":"fx","connection_id":"c1"}`})
		st = f.waitRun(t, "issues::blue", start)
		if st["variant"] != "blue" || st["recordCount"].(map[string]any)["Issue"] != float64(250) {
			t.Fatalf("variant status %v", st)
		}
		blue := f.records(t, "&variant=blue")
		if len(blue) != 250 || !strings.HasSuffix(blue[0]["title"].(string), "(blue)") {
			t.Fatalf("variant records: %d, first %v", len(blue), blue[0])
		}
		if base := f.records(t, ""); strings.HasSuffix(base[0]["title"].(string), "(blue)") {
			t.Fatalf("the base variant's records were changed: %v", base[0])
		}
		f.mustDo(t, 200, req{method: "DELETE", path: "/sync/issues/variant/blue", body: `{"provider_config_key":"fx","connection_id":"c1"}`})
		f.mustDo(t, 404, req{method: "DELETE", path: "/sync/issues/variant/blue", body: `{"provider_config_key":"fx","connection_id":"c1"}`})
	})
}

func TestSyncFailureResumesFromCheckpoint(t *testing.T) {
	backends(t, func(t *testing.T, b *backend) {
		var failAfter atomic.Int32
		failAfter.Store(1)
		start := time.Now()
		f := setupSync(t, b, issueSync(&failAfter, true, "1h", true))
		st := f.waitRun(t, "issues", start)
		if st["status"] != functions.StatusError || st["latestExecutionStatus"] != functions.RunStopped {
			t.Fatalf("a failed run shows %v", st)
		}
		if cp, _ := st["checkpoint"].(map[string]any); cp["cursor"] != "100" {
			t.Fatalf("checkpoint after the failed run: %v", st["checkpoint"])
		}
		if got := f.issues.takeCursors(); len(got) != 1 || got[0] != "" {
			t.Fatalf("the first run asked cursors %q", got)
		}
		// The next run resumes from the checkpoint; with track deletes, the
		// records of the failed run count as seen.
		failAfter.Store(0)
		before := time.Now()
		f.mustDo(t, 200, req{method: "POST", path: "/sync/trigger", body: `{"syncs":["issues"],"provider_config_key":"fx"}`})
		st = f.waitRun(t, "issues", before)
		if st["status"] != functions.StatusSuccess {
			t.Fatalf("the resumed run: %v", st)
		}
		if got := f.issues.takeCursors(); len(got) != 2 || got[0] != "100" || got[1] != "200" {
			t.Fatalf("the resumed run asked cursors %q, want 100 and 200", got)
		}
		if n := st["recordCount"].(map[string]any)["Issue"]; n != float64(250) {
			t.Fatalf("records after the resumed run: %v", n)
		}
		// Deletes are detected only by a complete run: an issue gone is
		// deleted then, and a failing run deletes nothing.
		f.issues.set(249, func(i int) string { return "issue " + strconv.Itoa(i) })
		failAfter.Store(1)
		before = time.Now()
		f.mustDo(t, 200, req{method: "POST", path: "/sync/trigger", body: `{"syncs":["issues"],"provider_config_key":"fx","opts":{"reset":true}}`})
		st = f.waitRun(t, "issues", before)
		if st["status"] != functions.StatusError || st["recordCount"].(map[string]any)["Issue"] != float64(250) {
			t.Fatalf("a failing run deleted records: %v", st)
		}
		if st["type"] != "INITIAL" {
			t.Errorf("type after a reset run: %v", st["type"])
		}
		failAfter.Store(0)
		before = time.Now()
		f.mustDo(t, 200, req{method: "POST", path: "/sync/trigger", body: `{"syncs":["issues"],"provider_config_key":"fx"}`})
		st = f.waitRun(t, "issues", before)
		res := st["latestResult"].(map[string]any)["Issue"].(map[string]any)
		if st["status"] != functions.StatusSuccess || res["deleted"] != float64(1) || st["recordCount"].(map[string]any)["Issue"] != float64(249) {
			t.Fatalf("the complete run: %v", st)
		}
		del := f.records(t, "&filter=deleted")
		if len(del) != 1 || del[0]["id"] != "i249" || del[0]["_nango_metadata"].(map[string]any)["last_action"] != "DELETED" {
			t.Fatalf("deleted records: %v", del)
		}
	})
}

func TestSyncTriggerConflict(t *testing.T) {
	backends(t, func(t *testing.T, b *backend) {
		release := make(chan struct{})
		var runs atomic.Int32
		blocking := functions.Sync{Integration: "fx", Name: "slow", Frequency: "1h", AutoStart: false,
			Models: []functions.Model{functions.ModelOf[issue]("Issue")},
			Run: func(ctx context.Context, s *functions.SyncContext) error {
				runs.Add(1)
				select {
				case <-release:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			}}
		f := setupSync(t, b, blocking)
		trigger := `{"syncs":["slow"],"provider_config_key":"fx","connection_id":"c1"}`
		f.mustDo(t, 200, req{method: "POST", path: "/sync/trigger", body: trigger})
		waitFor(t, 10*time.Second, "the run to start", func() bool { return runs.Load() == 1 })
		if st := f.status(t, "slow")[0]; st["status"] != functions.StatusRunning {
			t.Fatalf("status while running: %v", st)
		}
		r := f.mustDo(t, 409, req{method: "POST", path: "/sync/trigger", body: trigger})
		if r.errCode() != "sync_already_running" {
			t.Fatalf("a trigger of a running sync answered %s", r.raw)
		}
		// A reset cancels the running run and starts another.
		before := time.Now()
		f.mustDo(t, 200, req{method: "POST", path: "/sync/trigger", body: `{"syncs":["slow"],"provider_config_key":"fx","opts":{"reset":true}}`})
		waitFor(t, 10*time.Second, "the second run", func() bool { return runs.Load() == 2 })
		close(release)
		st := f.waitRun(t, "slow", before)
		if st["latestExecutionStatus"] != functions.RunSuccess || st["status"] != functions.StatusPaused {
			t.Fatalf("after the reset run of a paused sync: %v", st)
		}
	})
}

func TestSyncBadInput(t *testing.T) {
	backends(t, func(t *testing.T, b *backend) {
		f := setupSync(t, b, issueSync(nil, false, "1h", false))
		rc := map[string]string{"Connection-Id": "c1", "Provider-Config-Key": "fx"}
		for _, tc := range []struct {
			name   string
			rq     req
			status int
			code   string
		}{
			{"trigger without key", req{method: "POST", path: "/sync/trigger", body: `{"syncs":["issues"]}`}, 400, "invalid_body"},
			{"trigger unknown sync", req{method: "POST", path: "/sync/trigger", body: `{"syncs":["nope"],"provider_config_key":"fx"}`}, 404, "not_found"},
			{"trigger bad syncs", req{method: "POST", path: "/sync/trigger", body: `{"syncs":"issues","provider_config_key":"fx"}`}, 400, "invalid_body"},
			{"trigger opts and sync_mode", req{method: "POST", path: "/sync/trigger", body: `{"syncs":["issues"],"provider_config_key":"fx","opts":{},"sync_mode":"incremental"}`}, 400, "invalid_body"},
			{"trigger unknown connection", req{method: "POST", path: "/sync/trigger", body: `{"syncs":["issues"],"provider_config_key":"fx","connection_id":"zz"}`}, 404, "unknown_connection"},
			{"pause without syncs", req{method: "POST", path: "/sync/pause", body: `{"provider_config_key":"fx"}`}, 400, "invalid_body"},
			{"status without syncs", req{method: "GET", path: "/sync/status?provider_config_key=fx"}, 400, "invalid_query_params"},
			{"status unknown param", req{method: "GET", path: "/sync/status?syncs=*&provider_config_key=fx&x=1"}, 400, "invalid_query_params"},
			{"frequency garbage", req{method: "PUT", path: "/sync/update-connection-frequency",
				body: `{"sync_name":"issues","provider_config_key":"fx","connection_id":"c1","frequency":"sometimes"}`}, 400, "invalid_frequency"},
			{"frequency missing", req{method: "PUT", path: "/sync/update-connection-frequency",
				body: `{"sync_name":"issues","provider_config_key":"fx","connection_id":"c1"}`}, 400, "invalid_body"},
			{"variant bad name", req{method: "POST", path: "/sync/issues/variant/a%20b", body: `{"provider_config_key":"fx","connection_id":"c1"}`}, 400, "invalid_uri_params"},
			{"records without model", req{method: "GET", path: "/records", header: rc}, 400, "invalid_query_params"},
			{"records bad limit", req{method: "GET", path: "/records?model=Issue&limit=10001", header: rc}, 400, "invalid_query_params"},
			{"records bad cursor", req{method: "GET", path: "/records?model=Issue&cursor=%25%25", header: rc}, 400, "invalid_query_params"},
			{"records bad filter", req{method: "GET", path: "/records?model=Issue&filter=added,updated,deleted", header: rc}, 400, "invalid_query_params"},
			{"records unknown param", req{method: "GET", path: "/records?model=Issue&foo=1", header: rc}, 400, "invalid_query_params"},
			{"records unknown connection", req{method: "GET", path: "/records?model=Issue",
				header: map[string]string{"Connection-Id": "zz", "Provider-Config-Key": "fx"}}, 400, "unknown_connection"},
			{"records no headers", req{method: "GET", path: "/records?model=Issue"}, 400, "invalid_headers"},
			{"prune without cursor", req{method: "PATCH", path: "/records/prune", header: rc, body: `{"model":"Issue"}`}, 400, "invalid_body"},
			{"prune bad limit", req{method: "PATCH", path: "/records/prune", header: rc, body: `{"model":"Issue","until_cursor":"MjAyNnx8MQ==","limit":0}`}, 400, "invalid_body"},
			{"functions bad type", req{method: "GET", path: "/integrations/fx/functions?type=x"}, 400, "invalid_query_params"},
			{"functions bad limit", req{method: "GET", path: "/integrations/fx/functions?limit=101"}, 400, "invalid_query_params"},
			{"functions unknown integration", req{method: "GET", path: "/integrations/nope/functions"}, 404, "unknown_provider_config"},
			{"delete without type", req{method: "DELETE", path: "/integrations/fx/functions/issues"}, 400, "invalid_query_params"},
			{"delete registered", req{method: "DELETE", path: "/integrations/fx/functions/issues?type=sync"}, 409, "function_managed_by_deploy"},
			{"scripts config bad format", req{method: "GET", path: "/scripts/config?format=xml"}, 400, "invalid_query_params"},
		} {
			r := f.do(t, tc.rq)
			if r.status != tc.status || r.errCode() != tc.code {
				t.Errorf("%s: %d %s, want %d %s", tc.name, r.status, r.raw, tc.status, tc.code)
			}
		}
		// Nothing changed: the sync is still paused, never ran, and
		// deployed.
		st := f.status(t, "issues")[0]
		if st["status"] != functions.StatusPaused || st["finishedAt"] != nil {
			t.Errorf("after the refused requests: %v", st)
		}
		f.mustDo(t, 200, req{method: "GET", path: "/integrations/fx/functions/issues?type=sync"})
	})
}

func TestFunctionsListing(t *testing.T) {
	backends(t, func(t *testing.T, b *backend) {
		f := setupSync(t, b, issueSync(nil, true, "every 2 hours", true),
			functions.NewAction("fx", "create-issue", func(ctx context.Context, c *functions.Context, in issue) (issue, error) { return in, nil }),
			functions.OnEvent{Integration: "fx", Name: "setup", Event: functions.EventPostConnectionCreation,
				Run: func(ctx context.Context, c *functions.Context) error { return nil }})
		r := f.mustDo(t, 200, req{method: "GET", path: "/integrations/fx/functions"})
		data := r.obj()["data"].([]any)
		if len(data) != 3 || r.obj()["pagination"].(map[string]any)["total"] != float64(3) {
			t.Fatalf("list answered %s", r.raw)
		}
		r = f.mustDo(t, 200, req{method: "GET", path: "/integrations/fx/functions?type=sync"})
		s := r.obj()["data"].([]any)[0].(map[string]any)
		if s["name"] != "issues" || s["runs"] != "2h" || s["auto_start"] != true || s["track_deletes"] != true ||
			s["enabled"] != true || s["json_schema"] == nil || s["returns"].([]any)[0] != "Issue" || s["last_deployed"] == nil {
			t.Errorf("sync item %v", s)
		}
		r = f.mustDo(t, 200, req{method: "GET", path: "/integrations/fx/functions/create-issue"})
		a := r.obj()["data"].(map[string]any)
		if a["type"] != "action" || a["input"] == nil {
			t.Errorf("action item %v", a)
		}
		r = f.mustDo(t, 200, req{method: "GET", path: "/integrations/fx/functions/create-issue/code?type=action"})
		if r.obj()["type"] != "action" || !strings.Contains(r.obj()["code"].(string), "Go") {
			t.Errorf("code answered %s", r.raw)
		}
		r = f.mustDo(t, 200, req{method: "GET", path: "/integrations/fx/functions?search=ISS&limit=1&page=0"})
		if len(r.obj()["data"].([]any)) != 1 || r.obj()["pagination"].(map[string]any)["total"] != float64(2) {
			t.Errorf("search answered %s", r.raw)
		}
		r = f.mustDo(t, 200, req{method: "GET", path: "/scripts/config"})
		cfg := r.body.([]any)
		if len(cfg) != 1 || cfg[0].(map[string]any)["providerConfigKey"] != "fx" ||
			len(cfg[0].(map[string]any)["syncs"].([]any)) != 1 || len(cfg[0].(map[string]any)["actions"].([]any)) != 1 {
			t.Errorf("scripts config %s", r.raw)
		}
		r = f.mustDo(t, 200, req{method: "GET", path: "/scripts/config?format=openai"})
		if len(r.obj()["data"].([]any)) != 2 {
			t.Errorf("openai config %s", r.raw)
		}
	})
}

var _ = integrations.AuthModeAPIKey
