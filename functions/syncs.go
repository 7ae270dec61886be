package functions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/jobs"
	"github.com/embedauth/connect/store"
	"github.com/embedauth/connect/webhooks"
)

// SyncJobKind is the Scheduler job kind that runs a sync run.
const SyncJobKind = "functions.sync"

const slogWarn = slog.LevelWarn

// syncJobArgs are the arguments of a SyncJobKind job. A webhook run's
// carry the provider webhook: its payload (base64 in the job's JSON, so
// that its bytes are kept exactly, whatever the job queue stores JSON as)
// and its type.
type syncJobArgs struct {
	RunID       string `json:"run_id"`
	Webhook     []byte `json:"webhook,omitempty"`
	WebhookType string `json:"webhook_type,omitempty"`
}

// RegisterJobs registers the Service's job handlers on sch. connect.New
// calls it before the Scheduler starts.
func (s *Service) RegisterJobs(sch jobs.Scheduler) error {
	if err := sch.Register(ActionJobKind, s.handleActionJob); err != nil {
		return err
	}
	if err := sch.Register(SyncJobKind, s.handleSyncJob); err != nil {
		return err
	}
	if err := sch.Register(RetentionJobKind, s.handleRetentionJob); err != nil {
		return err
	}
	if err := sch.Register(DeployJobKind, s.handleDeletedModelsJob); err != nil {
		return err
	}
	return sch.Register(OnEventJobKind, s.handleOnEventJob)
}

// Start deploys the registered functions and starts the loop that starts
// due syncs and reaps runs whose instance died. Stop ends it.
func (s *Service) Start(ctx context.Context) error {
	if err := s.DeployAll(ctx); err != nil {
		return err
	}
	s.loopMu.Lock()
	defer s.loopMu.Unlock()
	if s.stopLoop != nil {
		return errors.New("functions: Service already started")
	}
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.stopLoop, s.loopDone = cancel, make(chan struct{})
	go s.loop(lctx, s.loopDone)
	return nil
}

// Stop ends the loop Start started and waits, within ctx, for the
// operations log entries of finished runs to be written.
func (s *Service) Stop(ctx context.Context) error {
	s.loopMu.Lock()
	cancel, done := s.stopLoop, s.loopDone
	s.stopLoop, s.loopDone = nil, nil
	s.loopMu.Unlock()
	if cancel != nil {
		cancel()
		select {
		case <-done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return s.pendingLogs.wait(ctx)
}

func (s *Service) loop(ctx context.Context, done chan struct{}) {
	defer close(done)
	t := time.NewTicker(s.cfg.TickInterval)
	defer t.Stop()
	for {
		if _, err := s.Tick(ctx); err != nil && ctx.Err() == nil {
			s.logger.Warn("functions: tick", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// TickResult is what one Tick did.
type TickResult struct {
	// Started counts the scheduled runs queued.
	Started int
	// Skipped counts the due syncs whose slot passed without a run: their
	// function is disabled.
	Skipped int
	// Reaped counts the runs found interrupted (their instance died).
	Reaped int
}

// claimBatch is how many due syncs one transaction claims.
const claimBatch = 100

// Tick queues the runs of the syncs that are due and reaps the runs whose
// instance died. A started Service calls it every Config.TickInterval;
// several instances may tick at once: each due run is queued once.
func (s *Service) Tick(ctx context.Context) (TickResult, error) {
	var res TickResult
	for {
		claimed, queued, err := s.claimDue(ctx)
		res.Started += queued
		res.Skipped += claimed - queued
		if err != nil {
			return res, err
		}
		if claimed < claimBatch {
			break
		}
	}
	n, err := s.reap(ctx)
	res.Reaped = n
	if err != nil {
		return res, err
	}
	n, err = s.reapActions(ctx)
	res.Reaped += n
	if err != nil {
		return res, err
	}
	return res, s.maybeQueueRetention(ctx)
}

// claimDue queues the runs of up to claimBatch due syncs in one
// transaction, and moves each to its next slot. The slot of a sync whose
// function is disabled passes without a run.
// It returns how many syncs it claimed and how many runs it queued.
func (s *Service) claimDue(ctx context.Context) (claimed, queued int, err error) {
	now := s.nowUTC()
	err = s.st.WithTx(ctx, func(ctx context.Context) error {
		claimed, queued = 0, 0
		due, err := s.st.ClaimDueSyncs(ctx, now, claimBatch)
		if err != nil {
			return err
		}
		claimed = len(due)
		enabled := map[fnCacheKey]bool{}
		for _, sc := range due {
			next := nextSlot(*sc.NextRunAt, sc.Interval, now)
			// A disabled sync skips its slot: no run, no failure; it
			// runs again at the first slot after it is enabled.
			k := fnCacheKey{sc.EnvironmentID, sc.Integration, KindSync, sc.Name}
			on, ok := enabled[k]
			if !ok {
				f, err := s.st.GetFunction(ctx, sc.EnvironmentID, sc.Integration, KindSync, sc.Name)
				switch {
				case errors.Is(err, store.ErrNotFound):
					on = true // the run reports it
				case err != nil:
					return err
				default:
					on = f.Enabled
				}
				enabled[k] = on
			}
			if on {
				if err := s.queueRun(ctx, sc, TriggerSchedule, false, false, "", now); err != nil {
					return err
				}
				queued++
			}
			sc.NextRunAt = &next
			if err := s.st.UpdateSync(ctx, sc); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, 0, err
	}
	return claimed, queued, nil
}

// nextSlot is the first slot of the grid due, due+interval, ... after now:
// missed slots are not caught up.
func nextSlot(due time.Time, interval time.Duration, now time.Time) time.Time {
	if interval <= 0 {
		interval = time.Hour
	}
	if !due.After(now) {
		k := now.Sub(due)/interval + 1
		due = due.Add(k * interval)
	}
	return due
}

// queueRun creates a run of sc and its job, and sets sc.RunID (the caller
// stores sc), in the transaction of ctx.
func (s *Service) queueRun(ctx context.Context, sc *Schedule, trigger string, reset, emptyCache bool, supersedes string, now time.Time) error {
	r := &SyncRun{ID: newUUID(), SyncID: sc.ID, Status: RunQueued, Trigger: trigger, Reset: reset,
		EmptyCache: emptyCache, Supersedes: supersedes, CreatedAt: now}
	if err := s.st.CreateSyncRun(ctx, r); err != nil {
		return err
	}
	sc.RunID, sc.UpdatedAt = r.ID, now
	b, _ := json.Marshal(syncJobArgs{RunID: r.ID})
	return s.cfg.Scheduler.Enqueue(ctx, jobs.Job{Kind: SyncJobKind, Args: b, MaxAttempts: 1,
		Timeout: s.cfg.SyncTimeout + time.Minute})
}

// reap finds the runs whose instance died (a RUNNING run whose heartbeat
// is older than three heartbeats, or a run queued for over an hour) and
// ends them as interrupted.
func (s *Service) reap(ctx context.Context) (int, error) {
	now := s.nowUTC()
	stale, err := s.st.StaleSyncRuns(ctx, now.Add(-s.staleAfter()), 100)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, r := range stale {
		if r.Status == RunQueued && r.CreatedAt.After(now.Add(-time.Hour)) {
			continue // waiting for a worker
		}
		if s.liveHere("run:" + r.ID) {
			continue // alive here: its heartbeat is late, not missing
		}
		sc, err := s.st.GetSyncByID(ctx, r.SyncID)
		if err != nil {
			if errors.Is(err, store.ErrNotFound) {
				continue
			}
			return n, err
		}
		st := &runStatus{run: r, sched: sc}
		if err := s.finishRun(ctx, st, false, runFailure("interrupted",
			"The run was interrupted: the instance running it stopped answering.")); err != nil {
			if errors.Is(err, store.ErrConflict) {
				continue // it moved meanwhile
			}
			return n, err
		}
		n++
	}
	return n, nil
}

// liveHere reports whether key ("run:ID", "task:ID") is live in this
// process (see liveRun).
func (s *Service) liveHere(key string) bool {
	v, ok := s.local.Load(key)
	return ok && v.(*liveRun).alive()
}

// liveRun is a sync run or an action attempt that this process took. It
// is live from the moment the process takes it until its outcome is
// stored, finishing included (delete tracking, the final write), so that
// this process's reapers never take it however late its heartbeats are
// written: a busy machine or a slow database delays them. Only a function
// that keeps running past its deadline by more than staleAfter (one that
// ignores its context) stops being live: then its heartbeat stops and a
// reaper, here or in another process, ends it as interrupted.
type liveRun struct {
	until     time.Time // the function's deadline plus staleAfter
	executing atomic.Bool
	// stop cancels a sync run's context (nil for an action attempt).
	stop context.CancelFunc
}

func (l *liveRun) alive() bool { return !l.executing.Load() || time.Now().Before(l.until) }

// returned marks the function as returned: the run is finishing.
func (l *liveRun) returned() { l.executing.Store(false) }

// markLive registers key as live here for a function with the given
// timeout, which stop (nil for none) cancels; the returned function ends
// it, once the outcome is stored.
func (s *Service) markLive(key string, timeout time.Duration, stop context.CancelFunc) (*liveRun, func()) {
	l := &liveRun{until: time.Now().Add(timeout + s.staleAfter()), stop: stop}
	l.executing.Store(true)
	s.local.Store(key, l)
	return l, func() { s.local.Delete(key) }
}

// cancelHere cancels the sync run runID if this process runs it, once
// the transaction of ctx (if any) commits: the cancellation request is
// stored by then, and a run cancelled for a request that rolled back
// would end for nothing.
func (s *Service) cancelHere(ctx context.Context, runID string) {
	stop := func() {
		if v, ok := s.local.Load("run:" + runID); ok {
			if l := v.(*liveRun); l.stop != nil {
				l.stop()
			}
		}
	}
	if h, ok := s.st.(store.CommitHooker); ok {
		h.AfterCommit(ctx, stop)
		return
	}
	stop()
}

// staleAfter is how long a running run (or action attempt) may go without
// a heartbeat before it is taken as interrupted: three heartbeats, plus
// two seconds so that a database or a machine slow for a moment does not
// make a live run look dead.
func (s *Service) staleAfter() time.Duration { return 3*s.cfg.Heartbeat + 2*time.Second }

// errCancelledQueued ends a run cancelled before it started.
var errCancelledQueued = runFailure("cancelled", "The run was cancelled before it started.")

// runFailure is the error of a stopped run.
func runFailure(typ, description string) error {
	return &stoppedError{typ: typ, description: description}
}

type stoppedError struct{ typ, description string }

func (e *stoppedError) Error() string { return e.typ + ": " + e.description }

// updateOwnRun stores r, the outcome of a run that r.Version saw
// running. A newer version that is still running is the run's own (a
// cancellation request, a heartbeat whose answer was lost): r is stored
// over it. A run no longer running was ended by another (a reaper):
// ErrConflict.
func (s *Service) updateOwnRun(ctx context.Context, r *SyncRun) error {
	for range 5 {
		err := s.st.UpdateSyncRun(ctx, r)
		if !errors.Is(err, store.ErrConflict) {
			return err
		}
		fresh, ferr := s.st.GetSyncRun(ctx, r.ID)
		if ferr != nil {
			return ferr
		}
		if fresh.Version == r.Version || (fresh.Status != RunRunning && fresh.Status != RunQueued) {
			return err
		}
		r.Version, r.CancelRequested = fresh.Version, fresh.CancelRequested
	}
	return store.Errorf(store.ErrConflict, "conflict", "The run %s kept changing.", r.ID)
}

// runStatus is a run in progress with its schedule.
type runStatus struct {
	mu    sync.Mutex
	run   *SyncRun
	sched *Schedule
	fn    *Function
	conn  *connections.Connection
	sc    *SyncContext
	// webhookType is the type of a webhook run's provider webhook.
	webhookType string
}

// handleSyncJob runs a queued sync run.
func (s *Service) handleSyncJob(ctx context.Context, job *jobs.Run) error {
	var a syncJobArgs
	if err := json.Unmarshal(job.Args, &a); err != nil {
		return jobs.Cancel(fmt.Errorf("functions: sync job arguments: %w", err))
	}
	r, err := s.st.GetSyncRun(ctx, a.RunID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if r.Status != RunQueued {
		return nil // started by another attempt, or reaped
	}
	webhook := r.Trigger == TriggerWebhook
	if r.Supersedes != "" {
		old, err := s.st.GetSyncRun(ctx, r.Supersedes)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if err == nil && (old.Status == RunRunning || old.Status == RunQueued) {
			return jobs.Snooze(time.Second) // wait for the cancelled run to end
		}
	}
	sc, err := s.st.GetSyncByID(ctx, r.SyncID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	st := &runStatus{run: r, sched: sc, webhookType: a.WebhookType}
	if r.CancelRequested {
		return s.finishRun(ctx, st, false, errCancelledQueued)
	}
	if webhook && a.Webhook == nil {
		return s.finishRun(ctx, st, false, runFailure("payload_missing", "The webhook run's job holds no provider webhook."))
	}
	now := s.nowUTC()
	r.Status, r.StartedAt, r.HeartbeatAt = RunRunning, &now, &now
	r.Type = "INCREMENTAL"
	if (sc.LastSyncDate == nil || r.Reset) && !webhook {
		r.Type = "INITIAL"
	}
	var touchErr error
	start := func(ctx context.Context) error {
		if err := s.st.UpdateSyncRun(ctx, r); err != nil {
			return err
		}
		if webhook {
			// A scheduled run holds the schedule (RunID); a webhook run
			// writes its row as it starts, for retention (see
			// touchSchedule).
			touchErr = s.touchSchedule(ctx, sc.ID)
			return touchErr
		}
		return nil
	}
	if err := s.st.WithTx(ctx, start); err != nil {
		if touchErr != nil && errors.Is(touchErr, store.ErrConflict) {
			return jobs.Snooze(time.Second) // the schedule kept changing: the run is still queued
		}
		if errors.Is(err, store.ErrConflict) {
			// Changed meanwhile: started by another attempt, reaped, or
			// asked to stop before it started.
			fresh, ferr := s.st.GetSyncRun(ctx, r.ID)
			if ferr == nil && fresh.Status == RunQueued && fresh.CancelRequested {
				st.run = fresh
				return s.finishRun(ctx, st, false, errCancelledQueued)
			}
			return nil
		}
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		return err
	}
	runCtx, cancel := context.WithTimeout(ctx, s.cfg.SyncTimeout)
	defer cancel()
	live, unmark := s.markLive("run:"+r.ID, s.cfg.SyncTimeout, cancel)
	defer unmark()
	// The heartbeat goes on while the run finishes (its delete tracking
	// can take a while), and stops before the final write, which reads
	// the run's version it leaves.
	stopBeat, hbDone := make(chan struct{}), make(chan struct{})
	go s.heartbeat(ctx, st, live, cancel, stopBeat, hbDone)
	runErr := s.execSync(runCtx, st, a.webhook())
	live.returned()
	cancel()
	fctx := context.WithoutCancel(ctx)
	if runErr == nil && !webhook {
		runErr = s.applyTrackedDeletes(fctx, st)
	}
	close(stopBeat)
	<-hbDone
	return s.finishRun(fctx, st, true, runErr)
}

// heartbeat marks the run alive every Config.Heartbeat until stop is
// closed or ctx ends, and cancels it (cancel) when a cancellation is
// requested or another process took it. A function stuck past its
// deadline (live is no longer alive) gets no more heartbeats, so that a
// reaper ends its run.
//
// Stopping never cuts a write short: a write cancelled in flight may
// have been applied all the same, and the run's version in memory would
// then be stale, so that the run's final write failed and left it
// RUNNING, for a reaper to end it as interrupted.
func (s *Service) heartbeat(ctx context.Context, st *runStatus, live *liveRun, cancel context.CancelFunc, stop <-chan struct{}, done chan struct{}) {
	defer close(done)
	t := time.NewTicker(s.cfg.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !live.alive() {
			return
		}
		wctx, wcancel := context.WithTimeout(context.WithoutCancel(ctx), s.staleAfter())
		st.mu.Lock()
		taken, err := s.beat(wctx, st)
		cancelled := st.run.CancelRequested
		st.mu.Unlock()
		wcancel()
		if err != nil {
			s.logger.Warn("functions: sync run heartbeat", "run", st.run.ID, "err", err)
		}
		if cancelled {
			cancel()
		}
		if taken {
			return
		}
	}
}

// beat writes the run's heartbeat, reading it again after a concurrent
// change (a cancellation request). taken reports a run that is no longer
// running (another process ended it): it is not marked again.
func (s *Service) beat(ctx context.Context, st *runStatus) (taken bool, err error) {
	for range 3 {
		now := s.nowUTC()
		r := *st.run
		r.HeartbeatAt = &now
		err := s.st.UpdateSyncRun(ctx, &r)
		if err == nil {
			st.run = &r
			return false, nil
		}
		if !errors.Is(err, store.ErrConflict) {
			return false, err
		}
		fresh, err := s.st.GetSyncRun(ctx, st.run.ID)
		if err != nil {
			return false, err
		}
		st.run.CancelRequested = fresh.CancelRequested
		st.run.Version = fresh.Version
		if fresh.Status != RunRunning {
			st.run.CancelRequested = true
			return true, nil
		}
	}
	return false, errors.New("functions: the run kept changing")
}

// webhook returns the payload of a webhook run's job, nil for other runs.
func (a syncJobArgs) webhook() json.RawMessage {
	if a.Webhook == nil {
		return nil
	}
	return json.RawMessage(a.Webhook)
}

// execSync runs the sync of st (with webhook, its webhook handler).
func (s *Service) execSync(ctx context.Context, st *runStatus, webhook json.RawMessage) error {
	sc := st.sched
	if err := s.deploy(ctx, sc.EnvironmentID, sc.Integration); err != nil {
		return err
	}
	p, err := s.prepare(ctx, sc.EnvironmentID, sc.Integration, sc.ConnectionRef, KindSync, sc.Name)
	if err != nil {
		return err
	}
	st.mu.Lock()
	st.fn, st.conn = p.fn, p.conn
	r := *st.run // the heartbeat replaces st.run meanwhile
	st.mu.Unlock()
	if p.conn.ID != sc.ConnectionID {
		return runFailure("connection_replaced", "The connection was deleted and created again.")
	}
	if r.Reset {
		if _, err := s.st.DeleteCheckpoints(ctx, p.conn.ID, runKey(sc)); err != nil {
			return err
		}
		if r.EmptyCache {
			for _, m := range p.fn.Definition.Models {
				scope := RecordScope{EnvironmentID: sc.EnvironmentID, ConnectionID: p.conn.ID, Model: m.Name, Variant: sc.Variant}
				for {
					n, err := s.st.DeleteAllRecords(ctx, scope, 10000)
					if err != nil {
						return err
					}
					if n == 0 {
						break
					}
				}
			}
		}
	}
	logID, start := s.cfg.Log.NewID(), s.cfg.Now()
	st.mu.Lock()
	st.run.LogID = logID
	st.mu.Unlock()
	c := s.newContext(p, r.ID, logID, runKey(sc))
	models := map[string]bool{}
	for _, m := range p.fn.Definition.Models {
		models[m.Name] = true
	}
	rs := &runState{models: models, prefix: runKey(sc), touch: r.CreatedAt.UnixMicro(),
		trackAll: p.fn.Definition.TrackDeletes, webhook: webhook != nil, results: map[string]*ModelResult{},
		ends: map[string]int64{}, tracking: map[string]int64{}}
	syncCtx := &SyncContext{Context: c, Variant: sc.Variant, LastSyncDate: sc.LastSyncDate, run: rs}
	if r.Reset {
		syncCtx.LastSyncDate = nil
	}
	st.mu.Lock()
	st.sc = syncCtx
	st.mu.Unlock()
	if rs.trackAll && webhook == nil {
		for m := range models {
			if err := syncCtx.TrackDeletesStart(ctx, m); err != nil {
				return err
			}
		}
	}
	err = runEnd(ctx, protect(func() error { return p.rt.RunSync(ctx, p.fn, syncCtx, webhook) }))
	if errors.Is(err, ErrNoWebhookHandler) {
		err = runFailure("webhook_handler_missing", fmt.Sprintf(
			"The sync %q subscribes to provider webhooks but has no webhook handler (onWebhook).", p.fn.Name))
	}
	meta := map[string]any{"run_id": r.ID, "variant": sc.Variant, "trigger": r.Trigger}
	op := "run"
	if webhook != nil {
		op = "webhook"
		meta["webhook_type"] = st.webhookType
		meta["payload_bytes"] = len(webhook)
	}
	s.logRunOp(ctx, p, logID, "sync", op, start, meta, err)
	return err
}

// runKey is the checkpoint key of a sync's runs: "sync:<name>:<variant>".
func runKey(sc *Schedule) string { return "sync:" + sc.Name + ":" + sc.Variant }

// applyTrackedDeletes applies the delete tracking of a successful run:
// the records of its tracked models that the run did not save are marked
// deleted, then their tracking ends. The heartbeat goes on meanwhile: st
// is read under st.mu only where the heartbeat writes it.
func (s *Service) applyTrackedDeletes(ctx context.Context, st *runStatus) error {
	st.mu.Lock()
	sc, conn, syncCtx := st.sched, st.conn, st.sc
	st.mu.Unlock()
	if syncCtx == nil {
		return nil
	}
	now := s.nowUTC()
	ends := syncCtx.run.ends
	if syncCtx.run.trackAll {
		for m := range syncCtx.run.models {
			if _, ok := ends[m]; !ok {
				if since, err := syncCtx.trackingSince(ctx, m); err == nil && since != 0 {
					ends[m] = since
				}
			}
		}
	}
	for m, since := range ends {
		scope := RecordScope{EnvironmentID: sc.EnvironmentID, ConnectionID: conn.ID, Model: m, Variant: sc.Variant}
		for {
			ids, err := s.st.DeleteUntouched(ctx, scope, since, 10000, now)
			if err != nil {
				return err
			}
			syncCtx.run.count(m, SaveResult{Deleted: len(ids)})
			if len(ids) < 10000 {
				break
			}
		}
		if _, err := s.st.DeleteCheckpoints(ctx, conn.ID, syncCtx.trackingKey(m)); err != nil {
			return err
		}
	}
	return nil
}

// finishRun ends a run: stores the outcome, frees the schedule
// (LastSyncDate moves on success) and sends the sync webhooks, in one
// transaction. own tells the process running it (see updateOwnRun) from a
// reaper.
func (s *Service) finishRun(ctx context.Context, st *runStatus, own bool, runErr error) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	r, sc := st.run, st.sched
	now := s.nowUTC()
	r.FinishedAt = &now
	if r.StartedAt == nil {
		r.StartedAt = &now
	}
	if st.sc != nil {
		st.sc.run.mu.Lock()
		r.Result = map[string]ModelResult{}
		for m, res := range st.sc.run.results {
			r.Result[m] = *res
		}
		st.sc.run.mu.Unlock()
		from, to, touched := st.sc.checkpoints()
		r.CheckpointsTouched = touched
		r.CheckpointFrom, r.CheckpointTo = checkpointJSON(from), checkpointJSON(to)
	}
	var failure map[string]any
	if runErr == nil {
		r.Status = RunSuccess
	} else {
		r.Status = RunStopped
		failure = describeFailure(runErr)
		b, _ := json.Marshal(failure)
		r.Error = b
	}
	return s.st.WithTx(ctx, func(ctx context.Context) error {
		update := s.st.UpdateSyncRun // a reaper's view must be current
		if own {
			update = s.updateOwnRun
		}
		if err := update(ctx, r); err != nil {
			return err
		}
		// The schedule's row may change between its read and its write
		// (a webhook run starting writes it): read it again then, in this
		// transaction.
		var previous *time.Time
		for attempt := 1; ; attempt++ {
			fresh, err := s.st.GetSyncByID(ctx, sc.ID)
			if errors.Is(err, store.ErrNotFound) {
				return nil // deleted meanwhile
			}
			if err != nil {
				return err
			}
			previous = fresh.LastSyncDate
			if r.Trigger == TriggerWebhook {
				// A webhook run leaves the schedule as it is: its last
				// sync date (the window of the next scheduled run) and
				// the run it holds.
				*sc = *fresh
				break
			}
			if fresh.RunID == r.ID {
				fresh.RunID = ""
			}
			if r.Status == RunSuccess {
				fresh.LastSyncDate = r.StartedAt
			} else if r.Reset {
				fresh.LastSyncDate = nil
			}
			fresh.UpdatedAt = now
			err = s.st.UpdateSync(ctx, fresh)
			if errors.Is(err, store.ErrConflict) && attempt < 5 {
				continue
			}
			if err != nil {
				return err
			}
			*sc = *fresh
			break
		}
		return s.notifySync(ctx, st, previous, failure)
	})
}

// checkpointJSON encodes a checkpoint for a run, nil for none.
func checkpointJSON(cp Checkpoint) json.RawMessage {
	if cp == nil {
		return nil
	}
	b, err := json.Marshal(cp)
	if err != nil {
		return nil
	}
	return b
}

// checkpointMap decodes a stored checkpoint, nil for none.
func checkpointMap(b json.RawMessage) map[string]any {
	if len(b) == 0 || string(b) == "null" {
		return nil
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return nil
	}
	return m
}

// describeFailure is the error object of a stopped run: {type,
// description, payload?}.
func describeFailure(err error) map[string]any {
	var se *stoppedError
	if errors.As(err, &se) {
		return map[string]any{"type": se.typ, "description": se.description}
	}
	f := Classify(err)
	out := map[string]any{"type": "script_error", "description": f.Body.Error.Message}
	if f.Body.Error.Code != "" {
		out["code"] = f.Body.Error.Code
	}
	if f.Body.Error.Payload != nil {
		out["payload"] = f.Body.Error.Payload
	}
	switch f.Body.Error.Code {
	case "execution_timeout": // not a provider's timeout (upstream_timeout)
		out["type"], out["description"] = "timeout", "The run ran past its deadline."
	case "script_aborted":
		out["type"], out["description"] = "cancelled", "The run was cancelled."
	}
	return out
}

// notifySync sends the webhooks of a finished run: one per model on
// success, one for the run on failure.
func (s *Service) notifySync(ctx context.Context, st *runStatus, previous *time.Time, failure map[string]any) error {
	if s.cfg.Notifier == nil {
		return nil
	}
	r, sc := st.run, st.sched
	syncType := webhooks.SyncTypeIncremental
	if previous == nil || r.Reset {
		syncType = webhooks.SyncTypeInitial
	}
	if r.Trigger == TriggerWebhook {
		syncType = webhooks.SyncTypeWebhook
	}
	var cps *webhooks.Checkpoints
	if r.CheckpointsTouched {
		cps = &webhooks.Checkpoints{From: checkpointMap(r.CheckpointFrom), To: checkpointMap(r.CheckpointTo)}
	}
	var models []string
	if st.fn != nil {
		for _, m := range st.fn.Definition.Models {
			models = append(models, m.Name)
		}
	}
	base := webhooks.SyncPayload{From: s.cfg.WebhookFrom, Type: webhooks.TypeSync, ConnectionID: sc.ConnectionRef,
		ProviderConfigKey: sc.Integration, SyncName: sc.Name, SyncVariant: sc.Variant, SyncType: syncType, Checkpoints: cps}
	if failure != nil {
		p := base
		p.Model = strings.Join(models, ",")
		p.Success = false
		p.Error = &webhooks.ErrorPayload{Type: fmt.Sprint(failure["type"]), Description: fmt.Sprint(failure["description"])}
		p.StartedAt = *r.StartedAt
		p.FailedAt = *r.FinishedAt
		return s.cfg.Notifier.Notify(ctx, webhooks.Event{EnvironmentID: sc.EnvironmentID, IntegrationKey: sc.Integration,
			ConnectionID: sc.ConnectionRef, Type: webhooks.TypeSync, Payload: &p})
	}
	for _, m := range models {
		res := r.Result[m]
		p := base
		p.Model, p.Success = m, true
		p.ModifiedAfter = *r.StartedAt
		p.ResponseResults = webhooks.SyncResults{Added: res.Added, Updated: res.Updated, Deleted: res.Deleted}
		qts := *r.StartedAt
		p.QueryTimeStamp = &qts
		empty := res == (ModelResult{})
		if err := s.cfg.Notifier.Notify(ctx, webhooks.Event{EnvironmentID: sc.EnvironmentID, IntegrationKey: sc.Integration,
			ConnectionID: sc.ConnectionRef, Type: webhooks.TypeSync, Empty: empty, Payload: &p}); err != nil {
			return err
		}
	}
	return nil
}
