package connect_test

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/functions"
	"github.com/embedauth/connect/store"
)

// hookedStore is a Store whose methods a test can intercept: a hook runs
// before the method of the Store it wraps, unless its method says
// otherwise.
type hookedStore struct {
	connect.Store
	deleteUntouched func(ctx context.Context)
	latestSyncRuns  func(ctx context.Context)
	// afterUpdateSyncRun and afterUpdateActionTask run after the write;
	// an error they return replaces its answer.
	afterUpdateSyncRun    func(r *functions.SyncRun) error
	afterUpdateActionTask func(t *functions.ActionTask) error
}

func (h *hookedStore) UpdateSyncRun(ctx context.Context, r *functions.SyncRun) error {
	err := h.Store.UpdateSyncRun(ctx, r)
	if err == nil && h.afterUpdateSyncRun != nil {
		err = h.afterUpdateSyncRun(r)
	}
	return err
}

func (h *hookedStore) UpdateActionTask(ctx context.Context, t *functions.ActionTask) error {
	err := h.Store.UpdateActionTask(ctx, t)
	if err == nil && h.afterUpdateActionTask != nil {
		err = h.afterUpdateActionTask(t)
	}
	return err
}

func (h *hookedStore) DeleteUntouched(ctx context.Context, scope functions.RecordScope, before int64, limit int, now time.Time) ([]string, error) {
	if h.deleteUntouched != nil {
		h.deleteUntouched(ctx)
	}
	return h.Store.DeleteUntouched(ctx, scope, before, limit, now)
}

// LatestSyncRuns runs its hook after the wrapped method.
func (h *hookedStore) LatestSyncRuns(ctx context.Context, syncIDs []string) (map[string]*functions.SyncRun, error) {
	runs, err := h.Store.LatestSyncRuns(ctx, syncIDs)
	if h.latestSyncRuns != nil {
		h.latestSyncRuns(ctx)
	}
	return runs, err
}

// The optional interfaces of the wrapped Store.
func (h *hookedStore) AfterCommit(ctx context.Context, fn func()) {
	if c, ok := h.Store.(store.CommitHooker); ok {
		c.AfterCommit(ctx, fn)
		return
	}
	fn()
}

func (h *hookedStore) Durable() bool {
	d, ok := h.Store.(store.Durable)
	return ok && d.Durable()
}

// latestRun returns the run the sync issues of c1 has queued or running.
func latestRun(t *testing.T, st connect.Store, env int64) *functions.SyncRun {
	t.Helper()
	ctx := context.Background()
	scs, err := st.ListSyncs(ctx, functions.SyncFilter{EnvironmentID: env, Limit: 10})
	if err != nil || len(scs) != 1 || scs[0].RunID == "" {
		t.Fatalf("syncs %v, %v: want one with a run", scs, err)
	}
	r, err := st.GetSyncRun(ctx, scs[0].RunID)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestFinishingRunIsLive: a run whose function has returned and that is
// still finishing (applying its delete tracking) is not interrupted,
// however long finishing takes and however late its heartbeat looks: not
// by its own process, which knows it runs it, and not by another, which
// sees its heartbeat go on. Before, the heartbeat and the local guard
// ended with the function, and a busy machine had finished runs reaped
// as interrupted (STOPPED although they had saved their records).
func TestFinishingRunIsLive(t *testing.T) {
	backends(t, func(t *testing.T, b *backend) {
		h := &hookedStore{Store: b.store}
		entered, release := make(chan struct{}), make(chan struct{})
		var once sync.Once
		h.deleteUntouched = func(context.Context) {
			once.Do(func() {
				close(entered)
				<-release
			})
		}
		var offset atomic.Int64
		now := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
		start := time.Now()
		f := setupSyncConfig(t, b.with(h), func(c *connect.Config) { c.Now = now },
			issueSync(nil, true, "1h", true))
		select {
		case <-entered:
		case <-time.After(30 * time.Second):
			close(release)
			t.Fatal("the run never reached its delete tracking")
		}
		released := false
		defer func() {
			if !released {
				close(release)
			}
		}()

		// Half an hour later by the Service's clock: the run's last
		// heartbeat is far older than three heartbeats.
		offset.Store(int64(30 * time.Minute))
		ctx := context.Background()
		res, err := f.svc.Functions().Tick(ctx)
		if err != nil || res.Reaped != 0 {
			t.Fatalf("Tick of the process running it = %+v, %v: want nothing reaped", res, err)
		}
		// Another instance on the same Store sees the heartbeat go on.
		advanced := now()
		waitFor(t, 30*time.Second, "a heartbeat while the run finishes", func() bool {
			r := latestRun(t, b.store, f.env.ID)
			return r.Status == functions.RunRunning && r.HeartbeatAt != nil && !r.HeartbeatAt.Before(advanced)
		})
		other, err := connect.New(connect.Config{Store: b.store, Scheduler: schedulerFor(t, b), Now: now,
			EncryptionKeys: []connect.EncryptionKey{testKey}, PublicURL: "https://connect.example.com"})
		if err != nil {
			t.Fatal(err)
		}
		res, err = other.Functions().Tick(ctx)
		if err != nil || res.Reaped != 0 {
			t.Fatalf("Tick of another instance = %+v, %v: want nothing reaped", res, err)
		}

		close(release)
		released = true
		st := f.waitRun(t, "issues", start)
		if st["status"] != functions.StatusSuccess {
			t.Fatalf("the run ended %v, want SUCCESS", st)
		}
		if n := st["recordCount"].(map[string]any)["Issue"]; n != float64(250) {
			t.Fatalf("records after the run: %v", n)
		}
	})
}

type retentionMark struct{}

// TestRetentionSparesARunningSync: the records of a sync that has not run
// for 60 days are deleted, unless it runs again meanwhile: a run queued
// between the retention pass's look at the syncs and its deletes keeps
// its records. Before, the pass deleted the records the new run had just
// saved.
func TestRetentionSparesARunningSync(t *testing.T) {
	backends(t, func(t *testing.T, b *backend) {
		h := &hookedStore{Store: b.store}
		var offset atomic.Int64
		f := setupSyncConfig(t, b.with(h), func(c *connect.Config) {
			c.Now = func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
		}, issueSync(nil, false, "1h", false))
		start := time.Now()
		f.mustDo(t, 200, req{method: "POST", path: "/sync/trigger", body: `{"syncs":["issues"],"provider_config_key":"fx"}`})
		f.waitRun(t, "issues", start)

		// 61 days later, the pass this test makes finds the sync stale;
		// before it deletes, the sync is triggered and runs.
		offset.Store(int64(61 * 24 * time.Hour))
		var fired atomic.Bool
		h.latestSyncRuns = func(ctx context.Context) {
			if ctx.Value(retentionMark{}) == nil || !fired.CompareAndSwap(false, true) {
				return
			}
			before := time.Now()
			f.mustDo(t, 200, req{method: "POST", path: "/sync/trigger", body: `{"syncs":["issues"],"provider_config_key":"fx"}`})
			if st := f.waitRun(t, "issues", before); st["latestExecutionStatus"] != functions.StatusSuccess {
				t.Errorf("the run during retention ended %v", st)
			}
		}
		res, err := f.svc.Functions().Retain(context.WithValue(context.Background(), retentionMark{}, true))
		if err != nil {
			t.Fatal(err)
		}
		if !fired.Load() {
			t.Fatal("the retention pass did not look at the sync's runs: the test tests nothing")
		}
		if res.RecordsDeleted != 0 || res.StaleSyncsFound != 0 {
			t.Errorf("retention during a run: %+v, want nothing deleted", res)
		}
		if got := len(f.records(t, "")); got != 250 {
			t.Fatalf("%d records after the run and the retention pass, want 250", got)
		}
	})
}

// TestLostHeartbeatAnswer: a heartbeat write that was applied but whose
// answer was lost (a write cut short by a cancelled context, a dropped
// connection) leaves the process with an old version of its run. The
// run still ends with its own outcome, once, and its later heartbeats are
// stored: before, its final write failed on the version, the run stayed
// RUNNING until a reaper ended it as interrupted (a sync STOPPED with its
// records saved), and an async action ran again; and an async action's
// next heartbeat took the lost one for a reaper's change and abandoned
// the attempt.
func TestLostHeartbeatAnswer(t *testing.T) {
	backends(t, func(t *testing.T, b *backend) {
		h := &hookedStore{Store: b.store}
		lostRun, lostTask := make(chan struct{}), make(chan struct{})
		var runOnce, taskOnce sync.Once
		h.afterUpdateSyncRun = func(r *functions.SyncRun) error {
			if r.Status != functions.RunRunning || r.HeartbeatAt == nil || r.StartedAt == nil || r.HeartbeatAt.Equal(*r.StartedAt) {
				return nil // not a heartbeat
			}
			err := error(nil)
			runOnce.Do(func() { err = context.Canceled; close(lostRun) })
			return err
		}
		var runningWrites atomic.Int32
		beatAfterLost := make(chan struct{})
		var afterOnce sync.Once
		h.afterUpdateActionTask = func(tk *functions.ActionTask) error {
			if tk.Status != functions.TaskRunning || tk.ActionName != "wait" {
				return nil
			}
			err := error(nil)
			switch n := runningWrites.Add(1); {
			case n == 2: // the first heartbeat: its answer is lost
				taskOnce.Do(func() { err = context.Canceled; close(lostTask) })
			case n > 2: // a heartbeat stored after it
				afterOnce.Do(func() { close(beatAfterLost) })
			}
			return err
		}
		var actionRuns atomic.Int32
		sy := functions.Sync{Integration: "fx", Name: "issues", Frequency: "1h", AutoStart: true,
			Models: []functions.Model{functions.ModelOf[issue]("Issue")},
			Run: func(ctx context.Context, s *functions.SyncContext) error {
				if err := s.Save(ctx, "Issue", []issue{{ID: "i1", Title: "one"}}); err != nil {
					return err
				}
				select {
				case <-lostRun:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			}}
		start := time.Now()
		f := setupSyncConfig(t, b.with(h), nil, sy,
			functions.NewAction("fx", "wait", func(ctx context.Context, c *functions.Context, in struct{}) (map[string]int32, error) {
				n := actionRuns.Add(1)
				// The attempt outlives the lost answer by a heartbeat,
				// which must be stored too, not taken for a reaper's
				// change.
				select {
				case <-beatAfterLost:
					return map[string]int32{"run": n}, nil
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}))
		st := f.waitRun(t, "issues", start)
		if st["latestExecutionStatus"] != functions.StatusSuccess {
			t.Fatalf("the sync run ended %v, want SUCCESS", st)
		}

		r := f.mustDo(t, 202, actionReq("wait", "{}", map[string]string{"X-Async": "true", "X-Max-Retries": "3"}))
		id, _ := r.obj()["id"].(string)
		var res *response
		waitFor(t, 30*time.Second, "the async action's result", func() bool {
			res = f.do(t, req{method: "GET", path: "/action/" + id})
			return res.status != 404
		})
		var out map[string]int32
		if res.status != 200 || json.Unmarshal(res.raw, &out) != nil || out["run"] != 1 || actionRuns.Load() != 1 {
			t.Fatalf("the async action answered %d %s after %d runs, want its first run's output", res.status, res.raw, actionRuns.Load())
		}
	})
}
