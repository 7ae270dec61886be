package jobs_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/embedauth/connect/jobs"
	"github.com/embedauth/connect/jobs/jobstest"
	"github.com/embedauth/connect/store/memory"
)

func fastBackoff(int) time.Duration { return time.Millisecond }

func TestMemoryConformance(t *testing.T) {
	t.Parallel()
	jobstest.Run(t, func(t *testing.T) *jobstest.Env {
		st := memory.New()
		s := jobs.NewMemory(jobs.MemoryOptions{Hooker: st, RetryBackoff: fastBackoff})
		return &jobstest.Env{Scheduler: s, Tx: st, Idle: s.Wait}
	})
}

func start(t *testing.T, s *jobs.Memory) {
	t.Helper()
	if err := s.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Stop(context.Background()); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
}

func wait(t *testing.T, s *jobs.Memory) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := s.Wait(ctx); err != nil {
		t.Fatalf("Wait: %v", err)
	}
}

// Without a Hooker, Enqueue in a transaction queues at once: the job runs
// even though the transaction rolls back.
func TestMemoryWithoutHooker(t *testing.T) {
	t.Parallel()
	st := memory.New()
	s := jobs.NewMemory(jobs.MemoryOptions{})
	var runs atomic.Int32
	if err := s.Register("k", func(context.Context, *jobs.Run) error { runs.Add(1); return nil }); err != nil {
		t.Fatal(err)
	}
	start(t, s)
	_ = st.WithTx(t.Context(), func(ctx context.Context) error {
		if err := s.Enqueue(ctx, jobs.Job{Kind: "k"}); err != nil {
			t.Fatal(err)
		}
		return errors.New("roll back")
	})
	wait(t, s)
	if runs.Load() != 1 {
		t.Errorf("%d runs, want 1", runs.Load())
	}
}

// Workers jobs run at once, and no more: the first ones wait until Workers
// of them run together (which never happens with fewer workers: Wait then
// fails), and no job ever sees more than Workers running.
func TestMemoryWorkers(t *testing.T) {
	t.Parallel()
	const workers, n = 3, 20
	s := jobs.NewMemory(jobs.MemoryOptions{Workers: workers})
	var running, most atomic.Int32
	full := make(chan struct{})
	var fullOnce sync.Once
	if err := s.Register("k", func(ctx context.Context, _ *jobs.Run) error {
		now := running.Add(1)
		defer running.Add(-1)
		for m := most.Load(); now > m && !most.CompareAndSwap(m, now); m = most.Load() {
		}
		if now == workers {
			fullOnce.Do(func() { close(full) })
		}
		select {
		case <-full:
		case <-ctx.Done():
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for range n {
		if err := s.Enqueue(t.Context(), jobs.Job{Kind: "k"}); err != nil {
			t.Fatal(err)
		}
	}
	start(t, s)
	wait(t, s)
	if got := most.Load(); got != workers {
		t.Errorf("at most %d jobs ran at once, want %d", got, workers)
	}
}

// fakeClock is a clock that only moves when told to.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// RunAt, backoff and snoozes follow the injected clock, not the wall
// clock, and Wait starts what moving it made due.
func TestMemoryInjectedClock(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{now: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
	var backoffs []int
	s := jobs.NewMemory(jobs.MemoryOptions{Now: clock.Now, RetryBackoff: func(attempt int) time.Duration {
		backoffs = append(backoffs, attempt) // runs under the scheduler's lock
		return time.Hour
	}})
	var mu sync.Mutex
	var attempts []int
	if err := s.Register("k", func(ctx context.Context, run *jobs.Run) error {
		mu.Lock()
		defer mu.Unlock()
		attempts = append(attempts, run.Attempt)
		switch len(attempts) {
		case 1:
			return errors.New("fail")
		case 2:
			return jobs.Snooze(time.Minute)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	start(t, s)
	if err := s.Enqueue(t.Context(), jobs.Job{Kind: "k", RunAt: clock.Now().Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	got := func() []int {
		mu.Lock()
		defer mu.Unlock()
		return append([]int(nil), attempts...)
	}
	// short returns once no job runs and none is due at the clock's time
	// (WaitIdle): Wait itself would wait for the job scheduled in the
	// future. Then Wait, with a context already ended, must report that
	// a job is still queued.
	short := func() {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		if err := s.WaitIdle(ctx); err != nil {
			t.Fatalf("WaitIdle: %v", err)
		}
		ended, end := context.WithCancel(t.Context())
		end()
		if err := s.Wait(ended); !errors.Is(err, context.Canceled) {
			t.Fatalf("Wait = %v with a job in the future, want the context's error", err)
		}
	}
	short()
	if n := len(got()); n != 0 {
		t.Fatalf("%d runs before RunAt", n)
	}
	clock.Add(time.Minute)
	short() // runs attempt 1, which fails and backs off an hour
	if a := got(); len(a) != 1 {
		t.Fatalf("attempts %v after reaching RunAt, want [1]", a)
	}
	clock.Add(59 * time.Minute)
	short()
	if a := got(); len(a) != 1 {
		t.Fatalf("attempts %v before the backoff ended, want [1]", a)
	}
	clock.Add(time.Minute)
	short() // attempt 2 snoozes a minute
	clock.Add(time.Minute)
	wait(t, s)
	if a := got(); len(a) != 3 || a[0] != 1 || a[1] != 2 || a[2] != 2 {
		t.Errorf("attempts %v, want [1 2 2]", a)
	}
	if len(backoffs) != 1 || backoffs[0] != 1 {
		t.Errorf("RetryBackoff called with %v, want [1]", backoffs)
	}
}

func TestDefaultRetryBackoff(t *testing.T) {
	t.Parallel()
	for attempt, want := range map[int]time.Duration{
		0: time.Second, 1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 5: 16 * time.Second,
		12: 2048 * time.Second, 13: time.Hour, 100: time.Hour,
	} {
		if got := jobs.DefaultRetryBackoff(attempt); got != want {
			t.Errorf("DefaultRetryBackoff(%d) = %s, want %s", attempt, got, want)
		}
	}
}

// A handler that ignores cancellation makes Stop give up after CancelGrace;
// its job runs again after the next Start.
func TestMemoryStopGivesUp(t *testing.T) {
	t.Parallel()
	s := jobs.NewMemory(jobs.MemoryOptions{CancelGrace: 20 * time.Millisecond})
	release := make(chan struct{})
	started := make(chan struct{}, 2)
	var runs atomic.Int32
	if err := s.Register("stubborn", func(ctx context.Context, run *jobs.Run) error {
		if runs.Add(1) == 1 {
			started <- struct{}{}
			<-release // ignores ctx
			return ctx.Err()
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := s.Enqueue(t.Context(), jobs.Job{Kind: "stubborn"}); err != nil {
		t.Fatal(err)
	}
	<-started
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
	defer cancel()
	if err := s.Stop(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Stop = %v, want an error matching DeadlineExceeded", err)
	}
	close(release)
	start(t, s)
	wait(t, s)
	if runs.Load() != 2 {
		t.Errorf("%d runs, want 2", runs.Load())
	}
}
