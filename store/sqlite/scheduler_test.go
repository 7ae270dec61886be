package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/embedauth/connect/jobs"
	"github.com/embedauth/connect/jobs/jobstest"
	"github.com/embedauth/connect/store/sqlite"
)

// testSchedulerConfig makes a Scheduler fast enough for tests: it polls
// every 20ms and retries after 1ms.
func testSchedulerConfig() sqlite.SchedulerConfig {
	return sqlite.SchedulerConfig{
		FetchPollInterval: 20 * time.Millisecond,
		RetryBackoff:      func(int) time.Duration { return time.Millisecond },
		Test:              sqlite.SchedulerTestConfig{DisableStaggeredStart: true},
	}
}

// waitIdle waits until river_job holds no job that is waiting or running.
func waitIdle(ctx context.Context, s *sqlite.Store) error {
	for {
		var n int
		err := s.DB().QueryRowContext(ctx, `SELECT count(*) FROM river_job
			WHERE state NOT IN ('completed', 'cancelled', 'discarded')`).Scan(&n)
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// The Scheduler of a Store passes the jobs conformance suite, its jobs
// enqueued in the Store's transactions, a peer on the same file working
// the same queue.
func TestScheduler(t *testing.T) {
	for _, mode := range []string{"file", "memory"} {
		t.Run(mode, func(t *testing.T) {
			jobstest.Run(t, func(t *testing.T) *jobstest.Env {
				path := sqlite.MemoryPath
				if mode == "file" {
					path = filepath.Join(t.TempDir(), "connect.db")
				}
				b, err := sqlite.Connect(t.Context(), path, &sqlite.Options{Scheduler: testSchedulerConfig()})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { b.Close() })
				return &jobstest.Env{
					Scheduler: b.Scheduler,
					Tx:        b.Store,
					NewPeer: func(t *testing.T) jobs.Scheduler {
						s, err := sqlite.NewScheduler(t.Context(), b.Store, testSchedulerConfig())
						if err != nil {
							t.Fatal(err)
						}
						return s
					},
					Idle: func(ctx context.Context) error { return waitIdle(ctx, b.Store) },
				}
			})
		})
	}
}

// Connect on a file that has its tables already migrates nothing and keeps
// the jobs it holds.
func TestConnectTwice(t *testing.T) {
	path := filepath.Join(t.TempDir(), "connect.db")
	ctx := t.Context()
	b, err := sqlite.Connect(ctx, path, &sqlite.Options{Scheduler: testSchedulerConfig()})
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan string, 1)
	if err := b.Scheduler.Register("k", func(context.Context, *jobs.Run) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if err := b.Scheduler.Enqueue(ctx, jobs.Job{Kind: "k", Args: []byte(`{"n":1}`)}); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b, err = sqlite.Connect(ctx, path, &sqlite.Options{Scheduler: testSchedulerConfig()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Scheduler.Register("k", func(_ context.Context, r *jobs.Run) error {
		ran <- string(r.Args)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := b.Scheduler.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer b.Scheduler.Stop(context.Background())
	select {
	case args := <-ran:
		if args != `{"n":1}` {
			t.Errorf("args %s, want {\"n\":1}", args)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the job enqueued before the restart did not run")
	}
}
