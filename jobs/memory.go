package jobs

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/embedauth/connect/store"
)

// MemoryOptions configure a [Memory] scheduler. The zero value is usable:
// every field has a default.
type MemoryOptions struct {
	// Workers is the number of jobs that run at once. Defaults to 4.
	Workers int

	// Hooker makes Enqueue transactional. When set, Enqueue hands the
	// insertion of its jobs to Hooker.AfterCommit, so a job enqueued with a
	// context of a transaction of that Store is queued when the transaction
	// commits, and never if it rolls back; outside a transaction it is
	// queued at once. Set it to the memory Store the Service uses. When nil,
	// Enqueue queues jobs at once, transaction or not.
	Hooker store.CommitHooker

	// Now returns the current time, against which Job.RunAt, retry backoff
	// and snoozes are measured. Defaults to time.Now. With a clock that a
	// test moves forward, a job that the move makes due starts within a
	// second, or at once when the test calls [Memory.Wait].
	Now func() time.Time

	// RetryBackoff returns how long to wait before running a job again
	// after its attempt number attempt (from 1) failed. Defaults to
	// [DefaultRetryBackoff].
	RetryBackoff func(attempt int) time.Duration

	// CancelGrace is how long Stop waits, once its context has ended and it
	// has cancelled the contexts of the jobs still running, for their
	// handlers to return. Defaults to 10 seconds.
	CancelGrace time.Duration

	// Logger receives a line for each failed attempt. Defaults to a logger
	// that discards everything.
	Logger *slog.Logger
}

// Defaults of MemoryOptions.
const (
	DefaultMemoryWorkers = 4
	DefaultCancelGrace   = 10 * time.Second
)

// DefaultRetryBackoff is the default backoff of [Memory]: 1 second after the
// first failed attempt, doubling after each further one (2s, 4s, 8s, ...),
// capped at 1 hour.
func DefaultRetryBackoff(attempt int) time.Duration {
	if attempt < 1 {
		attempt = 1
	}
	if attempt > 13 { // 2^12 s > 1 h
		return time.Hour
	}
	return min(time.Second<<(attempt-1), time.Hour)
}

// maxTimerWait caps how long the dispatcher sleeps before looking at the
// clock again, so that a job made due by moving an injected clock forward
// starts soon without anyone telling the scheduler.
const maxTimerWait = time.Second

// Memory is an in-process [Scheduler]: it keeps its queue in memory and runs
// jobs in goroutines of the process, for the memory Store and for tests.
// Queued jobs are lost when the process exits. Create one with [NewMemory].
//
// It follows the contract of Scheduler: up to Workers jobs run at once;
// a failing job runs again after RetryBackoff until it has run MaxAttempts
// times; Snooze delays a job without counting an attempt; Cancel ends it at
// once; Job.RunAt delays its first run. Jobs that Stop cancels are queued
// again, without counting the attempt, and run after the next Start.
type Memory struct {
	workers int
	hooker  store.CommitHooker
	now     func() time.Time
	backoff func(attempt int) time.Duration
	grace   time.Duration
	logger  *slog.Logger

	mu       sync.Mutex
	handlers map[string]Handler
	queue    []*memJob // waiting jobs, ordered by runAt then seq
	running  int       // jobs whose handler has not returned
	// uniques holds the unique keys of the jobs queued or running.
	uniques map[string]bool
	lastSeq int64
	started bool
	// changed is closed, and replaced, whenever queue or running changes.
	changed chan struct{}
	// wake asks the dispatcher to look at the queue again; buffered (1).
	wake chan struct{}
	// quit is closed by Stop to end the dispatcher, which then closes
	// loopDone.
	quit     chan struct{}
	loopDone chan struct{}
	// workCtx is the parent of the contexts of the jobs started since the
	// last Start; Stop cancels it when its own context ends.
	workCtx    context.Context
	workCancel context.CancelFunc
}

// memJob is a queued or running job.
type memJob struct {
	seq         int64
	id          string
	kind        string
	args        json.RawMessage
	maxAttempts int
	attempt     int // attempts counted so far
	runAt       time.Time
	unique      string // Kind and UniqueKey; empty when not unique
}

// NewMemory returns a Memory scheduler with opts applied.
func NewMemory(opts MemoryOptions) *Memory {
	m := &Memory{
		workers:  cmp.Or(max(opts.Workers, 0), DefaultMemoryWorkers),
		hooker:   opts.Hooker,
		now:      opts.Now,
		backoff:  opts.RetryBackoff,
		grace:    cmp.Or(max(opts.CancelGrace, 0), DefaultCancelGrace),
		logger:   opts.Logger,
		handlers: map[string]Handler{},
		uniques:  map[string]bool{},
		changed:  make(chan struct{}),
		wake:     make(chan struct{}, 1),
	}
	if m.now == nil {
		m.now = time.Now
	}
	if m.backoff == nil {
		m.backoff = DefaultRetryBackoff
	}
	if m.logger == nil {
		m.logger = slog.New(slog.DiscardHandler)
	}
	return m
}

var _ Scheduler = (*Memory)(nil)

// Register sets the handler of kind. It fails once the scheduler has
// started, and for a kind already registered.
func (m *Memory) Register(kind string, h Handler) error {
	if kind == "" || h == nil {
		return errors.New("jobs: Register needs a kind and a handler")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.started {
		return fmt.Errorf("jobs: Register(%q) after Start", kind)
	}
	if _, dup := m.handlers[kind]; dup {
		return fmt.Errorf("jobs: kind %q is already registered", kind)
	}
	m.handlers[kind] = h
	return nil
}

// Enqueue queues jobs, all or none: it fails, queuing nothing, when a job
// has no Kind, a Kind without a handler, Args that are not JSON, or a
// negative MaxAttempts. With a Hooker, the jobs are queued when the
// transaction of ctx commits (see MemoryOptions.Hooker). A job enqueued
// while the scheduler is stopped runs after Start.
func (m *Memory) Enqueue(ctx context.Context, jobs ...Job) error {
	if len(jobs) == 0 {
		return nil
	}
	m.mu.Lock()
	err := validateJobs(jobs, func(kind string) bool { _, ok := m.handlers[kind]; return ok })
	m.mu.Unlock()
	if err != nil {
		return err
	}
	queued := make([]*memJob, len(jobs))
	for i, j := range jobs {
		queued[i] = &memJob{
			kind:        j.Kind,
			args:        slices.Clone(j.Args),
			maxAttempts: cmp.Or(j.MaxAttempts, DefaultMaxAttempts),
			runAt:       j.RunAt,
		}
		if j.UniqueKey != "" {
			queued[i].unique = j.Kind + "\x00" + j.UniqueKey
		}
	}
	insert := func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		for _, j := range queued {
			if j.unique != "" {
				if m.uniques[j.unique] {
					continue
				}
				m.uniques[j.unique] = true
			}
			m.lastSeq++
			j.seq = m.lastSeq
			j.id = strconv.FormatInt(j.seq, 10)
			m.pushLocked(j)
		}
		m.changedLocked()
	}
	if m.hooker != nil {
		m.hooker.AfterCommit(ctx, insert)
	} else {
		insert()
	}
	return nil
}

// validateJobs checks jobs for Enqueue; registered reports whether a kind
// has a handler.
func validateJobs(jobs []Job, registered func(kind string) bool) error {
	for i, j := range jobs {
		switch {
		case j.Kind == "":
			return fmt.Errorf("jobs: job %d has no Kind", i)
		case !registered(j.Kind):
			return fmt.Errorf("jobs: no handler is registered for kind %q", j.Kind)
		case len(j.Args) > 0 && !json.Valid(j.Args):
			return fmt.Errorf("jobs: the Args of a %q job are not JSON", j.Kind)
		case j.MaxAttempts < 0:
			return fmt.Errorf("jobs: a %q job has MaxAttempts %d", j.Kind, j.MaxAttempts)
		}
	}
	return nil
}

// pushLocked inserts j into the queue in (runAt, seq) order.
func (m *Memory) pushLocked(j *memJob) {
	i, _ := slices.BinarySearchFunc(m.queue, j, func(a, b *memJob) int {
		if c := a.runAt.Compare(b.runAt); c != 0 {
			return c
		}
		return cmp.Compare(a.seq, b.seq)
	})
	m.queue = slices.Insert(m.queue, i, j)
}

// changedLocked wakes the dispatcher and every waiter.
func (m *Memory) changedLocked() {
	close(m.changed)
	m.changed = make(chan struct{})
	m.poke()
}

// poke asks the dispatcher to look at the queue again.
func (m *Memory) poke() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// Start starts running jobs in the background, until Stop. ctx is only the
// parent of the jobs' contexts, for its values: ending it does not stop the
// scheduler. Start fails when the scheduler is already started.
func (m *Memory) Start(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.started {
		return errors.New("jobs: scheduler already started")
	}
	m.started = true
	m.quit = make(chan struct{})
	m.loopDone = make(chan struct{})
	m.workCtx, m.workCancel = context.WithCancel(context.WithoutCancel(ctx))
	go m.loop(m.quit, m.loopDone)
	return nil
}

// loop starts due jobs until quit is closed.
func (m *Memory) loop(quit <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		m.mu.Lock()
		wait, ok := m.dispatchLocked()
		m.mu.Unlock()
		var tick <-chan time.Time
		if ok {
			timer.Reset(min(wait, maxTimerWait))
			tick = timer.C
		}
		select {
		case <-quit:
			return
		case <-m.wake:
		case <-tick:
		}
	}
}

// dispatchLocked starts the due jobs that free workers can take. It
// returns how long until the next queued job is due, and false when there
// is none or no worker is free (a job that ends wakes the dispatcher).
func (m *Memory) dispatchLocked() (time.Duration, bool) {
	if !m.started {
		return 0, false
	}
	now := m.now()
	for m.running < m.workers && len(m.queue) > 0 && !m.queue[0].runAt.After(now) {
		j := m.queue[0]
		m.queue = slices.Delete(m.queue, 0, 1)
		m.running++
		j.attempt++
		go m.run(m.workCtx, m.handlers[j.kind], j)
	}
	if len(m.queue) == 0 || m.running >= m.workers {
		return 0, false
	}
	return max(m.queue[0].runAt.Sub(now), 0), true
}

// run runs one attempt of j and files its result.
func (m *Memory) run(ctx context.Context, h Handler, j *memJob) {
	err := callHandler(ctx, h, &Run{
		ID:          j.id,
		Kind:        j.kind,
		Args:        slices.Clone(j.args),
		Attempt:     j.attempt,
		MaxAttempts: j.maxAttempts,
	})
	m.mu.Lock()
	defer m.mu.Unlock()
	m.running--
	defer m.changedLocked()
	now := m.now()
	d, snoozed := SnoozeDuration(err)
	ended := func() {
		if j.unique != "" {
			delete(m.uniques, j.unique)
		}
	}
	switch {
	case err == nil:
		ended()
		return
	case snoozed:
		j.attempt--
		j.runAt = now.Add(max(d, 0))
	case IsCancel(err):
		m.logger.Warn("jobs: job cancelled", "kind", j.kind, "id", j.id, "attempt", j.attempt, "error", err)
		ended()
		return
	case ctx.Err() != nil:
		// Stop cancelled it: run it again after the next Start, without
		// counting this attempt.
		j.attempt--
		j.runAt = now
	case j.attempt >= j.maxAttempts:
		m.logger.Error("jobs: job failed; no attempts left", "kind", j.kind, "id", j.id, "attempt", j.attempt, "error", err)
		ended()
		return
	default:
		delay := max(m.backoff(j.attempt), 0)
		m.logger.Info("jobs: job failed; will retry", "kind", j.kind, "id", j.id, "attempt", j.attempt,
			"retry_in", delay, "error", err)
		j.runAt = now.Add(delay)
	}
	m.pushLocked(j)
}

// callHandler runs h, turning a panic into an error.
func callHandler(ctx context.Context, h Handler, run *Run) (err error) {
	if h == nil {
		return fmt.Errorf("jobs: no handler is registered for kind %q", run.Kind)
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("jobs: handler of %q panicked: %v\n%s", run.Kind, r, debug.Stack())
		}
	}()
	return h(ctx, run)
}

// Stop stops starting jobs and waits for the running ones to return. When
// ctx ends first, it cancels their contexts and waits up to CancelGrace for
// them to return; the jobs they were running are queued again, without
// counting the attempt, and run after the next Start (as do queued jobs).
// Stop returns nil once every handler has returned, and an error when some
// still run after CancelGrace. Stop on a stopped scheduler returns nil.
func (m *Memory) Stop(ctx context.Context) error {
	m.mu.Lock()
	if !m.started {
		m.mu.Unlock()
		return nil
	}
	m.started = false
	close(m.quit)
	loopDone, cancel := m.loopDone, m.workCancel
	m.mu.Unlock()
	<-loopDone

	if m.waitRunning(ctx) == nil {
		cancel()
		return nil
	}
	cancel()
	graceCtx, cancelGrace := context.WithTimeout(context.WithoutCancel(ctx), m.grace)
	defer cancelGrace()
	if err := m.waitRunning(graceCtx); err != nil {
		m.mu.Lock()
		n := m.running
		m.mu.Unlock()
		return fmt.Errorf("jobs: Stop: %d jobs still running %s after their contexts were cancelled: %w",
			n, m.grace, ctx.Err())
	}
	return nil
}

// waitRunning waits until no handler runs, or ctx ends.
func (m *Memory) waitRunning(ctx context.Context) error {
	return m.waitFor(ctx, func() bool { return m.running == 0 })
}

// waitFor waits until cond, called with m.mu held, is true, or ctx ends.
// Each time it looks, it pokes the dispatcher.
func (m *Memory) waitFor(ctx context.Context, cond func() bool) error {
	for {
		m.mu.Lock()
		if cond() {
			m.mu.Unlock()
			return nil
		}
		changed := m.changed
		m.poke()
		m.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Wait blocks until no job is queued or running: every job enqueued so far
// (and committed, with a Hooker) has completed, failed for good or been
// cancelled. It returns ctx's error if ctx ends first, which it does when
// the scheduler is stopped with jobs queued, or a queued job waits for a
// time the clock never reaches. It is meant for tests; it also makes the
// scheduler look at the clock, so jobs made due by moving an injected clock
// forward start at once.
func (m *Memory) Wait(ctx context.Context) error {
	return m.waitFor(ctx, func() bool { return m.running == 0 && len(m.queue) == 0 })
}

// WaitIdle blocks until no job runs and none of the queued ones is due by
// MemoryOptions.Now: every job that moving an injected clock forward made
// due has run (and the retries and snoozes it caused are queued for
// later), while jobs due later stay queued. It returns ctx's error if ctx
// ends first, which it does when the scheduler is stopped with due jobs.
// It is meant for tests that move the clock and then check what ran, and
// what did not.
func (m *Memory) WaitIdle(ctx context.Context) error {
	return m.waitFor(ctx, func() bool {
		return m.running == 0 && (len(m.queue) == 0 || m.queue[0].runAt.After(m.now()))
	})
}
