// Package jobstest is the conformance suite of [jobs.Scheduler]: the
// behaviour every implementation shares, written once and run against each
// of them. The River schedulers of store/sqlite and store/postgres run it
// in their tests (see TestScheduler in each), and a host that writes a
// Scheduler of its own runs it too.
//
// # What it checks
//
// Handlers receive the job's kind, arguments, attempt and maximum; jobs
// enqueued before Start run after it; several run at once; a failing (or
// panicking) job runs again until MaxAttempts and never after; Snooze runs
// it again without counting an attempt; Cancel ends it at once; RunAt is
// honoured (not early, nor seconds late); a job enqueued in a transaction
// runs once if it commits, only after the commit, and never if it rolls
// back; Stop waits for running jobs within its context, then cancels them,
// and they run again (without counting that attempt) after the next Start,
// on the same Scheduler or a peer; two Schedulers on one queue run each of
// 200 jobs (Env.FleetJobs) exactly once; a job with a UniqueKey is not
// added while an equal one waits or runs; and the errors of Register,
// Enqueue, Start and Stop.
package jobstest

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/embedauth/connect/jobs"
	"github.com/embedauth/connect/store"
)

// Env is one Scheduler under test, with what the suite needs around it.
type Env struct {
	// Scheduler is fresh, not started, with an empty queue private to the
	// test. It must retry a failed job after a few milliseconds at most and
	// start a due job within a few tens of milliseconds, so that the suite
	// runs fast.
	Scheduler jobs.Scheduler
	// Tx is the Store whose transactions Enqueue joins. Nil skips the
	// transaction tests.
	Tx store.Transactor
	// NewPeer returns another Scheduler on the same queue, as a second
	// process has. Nil means the queue cannot be shared (an in-process
	// scheduler): the fleet test is skipped, and the restart tests
	// restart Scheduler itself.
	NewPeer func(t *testing.T) jobs.Scheduler
	// Idle waits until the queue holds no job that is waiting or running:
	// every job enqueued (and committed) so far has completed, failed for
	// good or been cancelled, and its handler has returned.
	Idle func(ctx context.Context) error
	// FleetJobs is the number of jobs the fleet test runs on Scheduler and
	// its peer; 0 means 200. A Scheduler that works few jobs a second (River
	// on SQLite under the race detector: a few tens) asks for fewer, so
	// that they run within the suite's timeout on a loaded machine.
	FleetJobs int
}

type test struct {
	name string
	fn   func(t *testing.T, env *Env)
}

var tests = []test{
	{"Runs", testRuns},
	{"EnqueueBeforeStart", testEnqueueBeforeStart},
	{"Concurrent", testConcurrent},
	{"Retry", testRetry},
	{"Panic", testPanic},
	{"Snooze", testSnooze},
	{"Cancel", testCancel},
	{"RunAt", testRunAt},
	{"Tx", testTx},
	{"StopWaitsForRunningJobs", testStopWaits},
	{"StopCancelsAndRestart", testStopCancels},
	{"Fleet", testFleet},
	{"Errors", testErrors},
	{"Unique", testUnique},
}

// Run runs the suite. newEnv is called once per subtest, concurrently.
func Run(t *testing.T, newEnv func(t *testing.T) *Env) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, newEnv(t))
		})
	}
}

// timeout bounds every wait of the suite.
const timeout = 20 * time.Second

func waitCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	t.Cleanup(cancel)
	return ctx
}

// start starts s and stops it when the test ends.
func start(t *testing.T, s jobs.Scheduler) {
	t.Helper()
	if err := s.Start(t.Context()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		if err := s.Stop(ctx); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
}

func register(t *testing.T, s jobs.Scheduler, kind string, h jobs.Handler) {
	t.Helper()
	if err := s.Register(kind, h); err != nil {
		t.Fatalf("Register(%q): %v", kind, err)
	}
}

func enqueue(t *testing.T, ctx context.Context, s jobs.Scheduler, js ...jobs.Job) {
	t.Helper()
	if err := s.Enqueue(ctx, js...); err != nil {
		t.Fatalf("Enqueue: %v", err)
	}
}

func idle(t *testing.T, env *Env) {
	t.Helper()
	if err := env.Idle(waitCtx(t)); err != nil {
		t.Fatalf("Idle: %v", err)
	}
}

// args returns the arguments {"n": n}.
func args(n int) json.RawMessage { return json.RawMessage(fmt.Sprintf(`{"n": %d}`, n)) }

// argN returns n of arguments made by args.
func argN(t *testing.T, raw json.RawMessage) int {
	var a struct{ N int }
	if err := json.Unmarshal(raw, &a); err != nil {
		t.Errorf("handler got Args %q: %v", raw, err)
	}
	return a.N
}

// record is one run a handler saw.
type record struct {
	run jobs.Run
	n   int
	at  time.Time
}

// recorder collects the runs of a handler.
type recorder struct {
	mu   sync.Mutex
	runs []record
}

func (r *recorder) add(t *testing.T, run *jobs.Run) record {
	rec := record{run: *run, at: time.Now()}
	if len(run.Args) > 0 {
		rec.n = argN(t, run.Args)
	}
	r.mu.Lock()
	r.runs = append(r.runs, rec)
	r.mu.Unlock()
	return rec
}

func (r *recorder) all() []record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.runs)
}

// attempts returns the Attempt of every run, in order.
func (r *recorder) attempts() []int {
	var out []int
	for _, rec := range r.all() {
		out = append(out, rec.run.Attempt)
	}
	return out
}

// countByN counts the runs of each job, by n.
func (r *recorder) countByN() map[int]int {
	out := map[int]int{}
	for _, rec := range r.all() {
		out[rec.n]++
	}
	return out
}

var errBoom = errors.New("jobstest: boom")

func testRuns(t *testing.T, env *Env) {
	s := env.Scheduler
	var r recorder
	register(t, s, "echo", func(ctx context.Context, run *jobs.Run) error {
		r.add(t, run)
		return nil
	})
	start(t, s)
	enqueue(t, t.Context(), s,
		jobs.Job{Kind: "echo", Args: args(1)},
		jobs.Job{Kind: "echo", Args: args(2), MaxAttempts: 2},
		jobs.Job{Kind: "echo"})
	enqueue(t, t.Context(), s) // nothing to do
	idle(t, env)

	runs := r.all()
	if len(runs) != 3 {
		t.Fatalf("%d runs, want 3: %+v", len(runs), runs)
	}
	ids := map[string]bool{}
	for _, rec := range runs {
		run := rec.run
		ids[run.ID] = true
		if run.ID == "" || run.Kind != "echo" || run.Attempt != 1 {
			t.Errorf("run %+v: want an ID, kind echo, attempt 1", run)
		}
		switch rec.n {
		case 1:
			if run.MaxAttempts != jobs.DefaultMaxAttempts {
				t.Errorf("MaxAttempts = %d, want the default %d", run.MaxAttempts, jobs.DefaultMaxAttempts)
			}
		case 2:
			if run.MaxAttempts != 2 {
				t.Errorf("MaxAttempts = %d, want 2", run.MaxAttempts)
			}
		case 0:
			if len(run.Args) != 0 {
				t.Errorf("a job without Args ran with Args %q", run.Args)
			}
		}
	}
	if len(ids) != 3 {
		t.Errorf("IDs are not distinct: %v", ids)
	}
}

func testEnqueueBeforeStart(t *testing.T, env *Env) {
	s := env.Scheduler
	var r recorder
	register(t, s, "echo", func(ctx context.Context, run *jobs.Run) error {
		r.add(t, run)
		return nil
	})
	enqueue(t, t.Context(), s, jobs.Job{Kind: "echo", Args: args(1)})
	start(t, s)
	idle(t, env)
	if got := r.countByN(); got[1] != 1 || len(got) != 1 {
		t.Errorf("runs by job = %v, want job 1 once", got)
	}
}

// testConcurrent runs two jobs that each wait for the other to start.
func testConcurrent(t *testing.T, env *Env) {
	s := env.Scheduler
	var wg sync.WaitGroup
	wg.Add(2)
	both := make(chan struct{})
	go func() { wg.Wait(); close(both) }()
	register(t, s, "pair", func(ctx context.Context, run *jobs.Run) error {
		wg.Done()
		select {
		case <-both:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	start(t, s)
	enqueue(t, t.Context(), s, jobs.Job{Kind: "pair", Args: args(1), MaxAttempts: 1},
		jobs.Job{Kind: "pair", Args: args(2), MaxAttempts: 1})
	select {
	case <-both:
	case <-waitCtx(t).Done():
		t.Fatal("two jobs never ran at the same time")
	}
	idle(t, env)
}

func testRetry(t *testing.T, env *Env) {
	s := env.Scheduler
	var failing, flaky recorder
	register(t, s, "failing", func(ctx context.Context, run *jobs.Run) error {
		failing.add(t, run)
		return fmt.Errorf("attempt %d: %w", run.Attempt, errBoom)
	})
	register(t, s, "flaky", func(ctx context.Context, run *jobs.Run) error {
		flaky.add(t, run)
		if run.Attempt == 1 {
			return errBoom
		}
		return nil
	})
	start(t, s)
	enqueue(t, t.Context(), s, jobs.Job{Kind: "failing", MaxAttempts: 3}, jobs.Job{Kind: "flaky", MaxAttempts: 3})
	idle(t, env)
	if got := failing.attempts(); !slices.Equal(got, []int{1, 2, 3}) {
		t.Errorf("failing job ran attempts %v, want [1 2 3] and no more", got)
	}
	if got := flaky.attempts(); !slices.Equal(got, []int{1, 2}) {
		t.Errorf("flaky job ran attempts %v, want [1 2]", got)
	}
	for _, rec := range failing.all() {
		if rec.run.MaxAttempts != 3 {
			t.Errorf("run %+v: want MaxAttempts 3", rec.run)
		}
	}
}

func testPanic(t *testing.T, env *Env) {
	s := env.Scheduler
	var r recorder
	register(t, s, "panics", func(ctx context.Context, run *jobs.Run) error {
		r.add(t, run)
		if run.Attempt == 1 {
			panic("jobstest: handler panic")
		}
		return nil
	})
	start(t, s)
	enqueue(t, t.Context(), s, jobs.Job{Kind: "panics", MaxAttempts: 2})
	idle(t, env)
	if got := r.attempts(); !slices.Equal(got, []int{1, 2}) {
		t.Errorf("panicking job ran attempts %v, want [1 2]", got)
	}
}

func testSnooze(t *testing.T, env *Env) {
	s := env.Scheduler
	const delay = 20 * time.Millisecond
	var r recorder
	register(t, s, "snoozes", func(ctx context.Context, run *jobs.Run) error {
		r.add(t, run)
		if len(r.all()) < 3 {
			return jobs.Snooze(delay)
		}
		return nil
	})
	start(t, s)
	// MaxAttempts 1: snoozes must not use attempts up.
	enqueue(t, t.Context(), s, jobs.Job{Kind: "snoozes", Args: args(1), MaxAttempts: 1})
	idle(t, env)
	runs := r.all()
	if got := r.attempts(); !slices.Equal(got, []int{1, 1, 1}) {
		t.Fatalf("snoozed job ran attempts %v, want [1 1 1]", got)
	}
	for i := 1; i < len(runs); i++ {
		if gap := runs[i].at.Sub(runs[i-1].at); gap < delay {
			t.Errorf("run %d came %s after the snooze of %s", i+1, gap, delay)
		}
	}
}

func testCancel(t *testing.T, env *Env) {
	s := env.Scheduler
	var r recorder
	register(t, s, "cancels", func(ctx context.Context, run *jobs.Run) error {
		r.add(t, run)
		return jobs.Cancel(errBoom)
	})
	start(t, s)
	enqueue(t, t.Context(), s, jobs.Job{Kind: "cancels", MaxAttempts: 5})
	idle(t, env)
	if got := r.attempts(); !slices.Equal(got, []int{1}) {
		t.Errorf("cancelled job ran attempts %v, want [1]", got)
	}
}

// testRunAt: a job does not run before its RunAt, and runs once it is
// due (Idle waits for it, within the suite's timeout); a job whose RunAt
// has passed runs at once.
func testRunAt(t *testing.T, env *Env) {
	s := env.Scheduler
	var r recorder
	register(t, s, "later", func(ctx context.Context, run *jobs.Run) error {
		r.add(t, run)
		return nil
	})
	start(t, s)
	later := time.Now().Add(300 * time.Millisecond)
	enqueue(t, t.Context(), s,
		jobs.Job{Kind: "later", Args: args(1), RunAt: later},
		jobs.Job{Kind: "later", Args: args(2), RunAt: time.Now().Add(-time.Hour)})
	idle(t, env)
	for _, rec := range r.all() {
		// Postgres keeps microseconds: allow for the truncation.
		if rec.n == 1 && rec.at.Before(later.Add(-time.Millisecond)) {
			t.Errorf("job with RunAt %s ran at %s", later.Format(time.StampMicro), rec.at.Format(time.StampMicro))
		}
	}
	if got := r.countByN(); got[1] != 1 || got[2] != 1 {
		t.Errorf("runs by job = %v, want each once", got)
	}
}

func testTx(t *testing.T, env *Env) {
	if env.Tx == nil {
		t.Skip("jobstest: Env.Tx is nil")
	}
	s := env.Scheduler
	var r recorder
	var fnReturned atomic.Bool
	var early atomic.Bool
	register(t, s, "tx", func(ctx context.Context, run *jobs.Run) error {
		if r.add(t, run).n == 2 && !fnReturned.Load() {
			early.Store(true)
		}
		return nil
	})
	start(t, s)
	ctx := t.Context()
	errRollback := errors.New("jobstest: roll back")
	err := env.Tx.WithTx(ctx, func(ctx context.Context) error {
		enqueue(t, ctx, s, jobs.Job{Kind: "tx", Args: args(1)})
		return errRollback
	})
	if !errors.Is(err, errRollback) {
		t.Fatalf("WithTx = %v, want the rollback error", err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(env.Tx.WithTx(ctx, func(ctx context.Context) error {
		enqueue(t, ctx, s, jobs.Job{Kind: "tx", Args: args(2)})
		// Nested transactions join the outer one.
		must(env.Tx.WithTx(ctx, func(ctx context.Context) error {
			enqueue(t, ctx, s, jobs.Job{Kind: "tx", Args: args(3)})
			return nil
		}))
		fnReturned.Store(true)
		return nil
	}))
	idle(t, env)
	if got := r.countByN(); got[1] != 0 || got[2] != 1 || got[3] != 1 {
		t.Errorf("runs by job = %v, want the rolled-back job 1 never, and jobs 2 and 3 once", got)
	}
	if early.Load() {
		t.Error("a job ran before its transaction committed")
	}
}

// testStopWaits stops a scheduler while a job runs: Stop waits for it, the
// job completes (its context is not cancelled), and it does not run again
// after a restart of the same scheduler.
func testStopWaits(t *testing.T, env *Env) {
	s := env.Scheduler
	var r recorder
	started := make(chan struct{}, 1)
	release := make(chan struct{})
	var cancelled atomic.Bool
	register(t, s, "slow", func(ctx context.Context, run *jobs.Run) error {
		r.add(t, run)
		select {
		case started <- struct{}{}:
		default:
		}
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			cancelled.Store(true)
			return ctx.Err()
		}
	})
	if err := s.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	enqueue(t, t.Context(), s, jobs.Job{Kind: "slow", Args: args(1)})
	select {
	case <-started:
	case <-waitCtx(t).Done():
		t.Fatal("the job never started")
	}
	stopped := make(chan error, 1)
	go func() { stopped <- s.Stop(waitCtx(t)) }()
	select {
	case err := <-stopped:
		t.Fatalf("Stop returned %v while a job was running", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	select {
	case err := <-stopped:
		if err != nil {
			t.Errorf("Stop: %v", err)
		}
	case <-waitCtx(t).Done():
		t.Fatal("Stop did not return after the job did")
	}
	if cancelled.Load() {
		t.Error("Stop cancelled a job while its context had time left")
	}
	// Restartable, and the completed job is not run again.
	enqueue(t, t.Context(), s, jobs.Job{Kind: "slow", Args: args(2)})
	start(t, s)
	<-started
	idle(t, env)
	if got := r.countByN(); got[1] != 1 || got[2] != 1 {
		t.Errorf("runs by job = %v, want each once", got)
	}
}

// testStopCancels stops a scheduler whose jobs block until cancelled, with
// a short deadline: Stop cancels them and returns, and they run to
// completion, once, after a restart (of a peer when there is one), with
// the cancelled attempt not counted.
func testStopCancels(t *testing.T, env *Env) {
	const n = 3
	var blocking atomic.Bool
	blocking.Store(true)
	var r, cancelled recorder
	// A job may be started again while Stop cancels (fetched as the
	// others were cancelled): its context is cancelled already.
	started := make(chan struct{}, 2*n)
	handler := func(ctx context.Context, run *jobs.Run) error {
		if blocking.Load() {
			started <- struct{}{}
			<-ctx.Done()
			cancelled.add(t, run)
			return ctx.Err()
		}
		r.add(t, run)
		return nil
	}
	a := env.Scheduler
	register(t, a, "block", handler)
	if err := a.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		enqueue(t, t.Context(), a, jobs.Job{Kind: "block", Args: args(i + 1), MaxAttempts: 1})
	}
	for range n {
		select {
		case <-started:
		case <-waitCtx(t).Done():
			t.Fatal("the jobs never all started")
		}
	}
	// The handlers return only when cancelled: Stop returns only if its
	// deadline made it cancel them. The suite's timeout only keeps a Stop
	// that never cancels from hanging the test.
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- a.Stop(ctx) }()
	select {
	case err := <-stopped:
		if err != nil {
			t.Errorf("Stop: %v", err)
		}
	case <-waitCtx(t).Done():
		t.Fatalf("Stop did not return within %s of its 100ms deadline: it did not cancel the running jobs", timeout)
	}
	// Every job saw its context cancelled (a job started again during
	// Stop sees it too; that its attempt is not counted is checked
	// below).
	if got := cancelled.countByN(); len(got) != n || got[1] == 0 || got[2] == 0 || got[3] == 0 {
		t.Errorf("handlers that saw their context cancelled, by job: %v; want each of 1..%d", got, n)
	}

	blocking.Store(false)
	b := a
	if env.NewPeer != nil {
		b = env.NewPeer(t)
		register(t, b, "block", handler)
	}
	start(t, b)
	idle(t, env)
	if got := r.countByN(); len(got) != n || got[1] != 1 || got[2] != 1 || got[3] != 1 {
		t.Errorf("runs by job after the restart = %v, want each of 1..%d once", got, n)
	}
	for _, rec := range r.all() {
		if rec.run.Attempt != 1 {
			t.Errorf("job %d ran again as attempt %d, want 1: cancelling it at Stop must not count", rec.n, rec.run.Attempt)
		}
	}
}

// testFleet runs 200 jobs (Env.FleetJobs) on two schedulers sharing a
// queue: each runs once.
func testFleet(t *testing.T, env *Env) {
	if env.NewPeer == nil {
		t.Skip("jobstest: Env.NewPeer is nil")
	}
	n := cmp.Or(env.FleetJobs, 200)
	var r recorder
	handler := func(ctx context.Context, run *jobs.Run) error {
		r.add(t, run)
		return nil
	}
	a := env.Scheduler
	b := env.NewPeer(t)
	register(t, a, "fleet", handler)
	register(t, b, "fleet", handler)
	start(t, a)
	start(t, b)
	var js []jobs.Job
	for i := range n {
		js = append(js, jobs.Job{Kind: "fleet", Args: args(i)})
	}
	enqueue(t, t.Context(), a, js[:n/2]...)
	enqueue(t, t.Context(), b, js[n/2:]...)
	idle(t, env)
	got := r.countByN()
	for i := range n {
		if got[i] != 1 {
			t.Errorf("job %d ran %d times, want once", i, got[i])
		}
	}
	if len(r.all()) != n {
		t.Errorf("%d runs, want %d", len(r.all()), n)
	}
}

func testErrors(t *testing.T, env *Env) {
	s := env.Scheduler
	ctx := t.Context()
	var r recorder
	noop := func(ctx context.Context, run *jobs.Run) error { r.add(t, run); return nil }
	if err := s.Stop(ctx); err != nil {
		t.Errorf("Stop before Start: %v", err)
	}
	if s.Register("", noop) == nil {
		t.Error("Register accepted an empty kind")
	}
	if s.Register("nil", nil) == nil {
		t.Error("Register accepted a nil handler")
	}
	register(t, s, "ok", noop)
	if s.Register("ok", noop) == nil {
		t.Error("Register accepted a kind twice")
	}
	for name, j := range map[string]jobs.Job{
		"no kind":               {},
		"unregistered kind":     {Kind: "unknown"},
		"args that are no JSON": {Kind: "ok", Args: json.RawMessage(`{"n":`)},
		"negative MaxAttempts":  {Kind: "ok", MaxAttempts: -1},
	} {
		// The valid job of the batch is not enqueued either.
		if s.Enqueue(ctx, jobs.Job{Kind: "ok", Args: args(1)}, j) == nil {
			t.Errorf("Enqueue accepted a job with %s", name)
		}
	}
	start(t, s)
	if s.Start(ctx) == nil {
		t.Error("Start accepted a started scheduler")
	}
	if s.Register("late", noop) == nil {
		t.Error("Register accepted a kind after Start")
	}
	enqueue(t, ctx, s, jobs.Job{Kind: "ok", Args: args(2)})
	idle(t, env)
	if got := r.countByN(); got[1] != 0 || got[2] != 1 {
		t.Errorf("runs by job = %v, want only job 2, once: a refused Enqueue enqueues nothing", got)
	}
	stopCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := s.Stop(stopCtx); err != nil {
		t.Errorf("Stop: %v", err)
	}
	if err := s.Stop(stopCtx); err != nil {
		t.Errorf("second Stop: %v", err)
	}
}

// testUnique: a job with a UniqueKey is not added while one with the same
// Kind and key waits or runs, and is once that one has ended; other keys
// and kinds are independent.
func testUnique(t *testing.T, env *Env) {
	s := env.Scheduler
	var r recorder
	release := make(chan struct{})
	started := make(chan struct{}, 10)
	register(t, s, "unique", func(ctx context.Context, run *jobs.Run) error {
		r.add(t, run)
		started <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
			return ctx.Err()
		}
		return nil
	})
	register(t, s, "unique2", func(ctx context.Context, run *jobs.Run) error {
		r.add(t, run)
		return nil
	})
	ctx := t.Context()
	job := func(n int, key string) jobs.Job { return jobs.Job{Kind: "unique", Args: args(n), UniqueKey: key} }
	// Waiting: the second of each key adds nothing, in one call or two.
	enqueue(t, ctx, s, job(1, "a"), job(2, "a"))
	enqueue(t, ctx, s, job(3, "a"), job(4, "b"))
	enqueue(t, ctx, s, jobs.Job{Kind: "unique2", Args: args(5), UniqueKey: "a"})
	start(t, s)
	for range 2 {
		select {
		case <-started:
		case <-waitCtx(t).Done():
			t.Fatal("the unique jobs did not start")
		}
	}
	// Running: still no second job of key a.
	enqueue(t, ctx, s, job(6, "a"))
	close(release)
	idle(t, env)
	got := r.countByN()
	if got[1] != 1 || got[2] != 0 || got[3] != 0 || got[4] != 1 || got[5] != 1 || got[6] != 0 {
		t.Errorf("runs by job = %v, want 1, 4 and 5 once and the duplicates 2, 3 and 6 never", got)
	}
	// Ended: the key is free again.
	enqueue(t, ctx, s, job(7, "a"))
	idle(t, env)
	if got := r.countByN(); got[7] != 1 {
		t.Errorf("runs by job = %v, want job 7 once after the first of its key ended", got)
	}
	if env.Tx != nil {
		// In transactions: a rolled-back unique job does not hold its key.
		errRollback := errors.New("jobstest: roll back")
		_ = env.Tx.WithTx(ctx, func(ctx context.Context) error {
			enqueue(t, ctx, s, job(8, "c"))
			return errRollback
		})
		if err := env.Tx.WithTx(ctx, func(ctx context.Context) error {
			enqueue(t, ctx, s, job(9, "c"))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		idle(t, env)
		if got := r.countByN(); got[8] != 0 || got[9] != 1 {
			t.Errorf("runs by job = %v, want the rolled-back job 8 never and job 9 once", got)
		}
	}
}
