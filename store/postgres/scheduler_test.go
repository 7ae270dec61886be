package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lib/pq"

	"github.com/embedauth/connect/internal/pgtest"
	"github.com/embedauth/connect/jobs"
	"github.com/embedauth/connect/jobs/jobstest"
	"github.com/embedauth/connect/store/postgres"
)

// testSchedulerConfig makes a Scheduler fast enough for tests: it polls
// every 50ms and retries after 1ms.
func testSchedulerConfig() postgres.SchedulerConfig {
	return postgres.SchedulerConfig{
		FetchPollInterval: 50 * time.Millisecond,
		RetryBackoff:      func(int) time.Duration { return time.Millisecond },
		Test:              postgres.SchedulerTestConfig{DisableStaggeredStart: true},
	}
}

func newScheduler(t *testing.T, db *sql.DB, schema string, cfg postgres.SchedulerConfig) *postgres.Scheduler {
	t.Helper()
	s, err := postgres.NewScheduler(db, &postgres.Options{Schema: schema}, cfg)
	if err != nil {
		t.Fatalf("NewScheduler: %v", err)
	}
	return s
}

// waitIdle waits until the river_job table of schema holds no job that is
// waiting or running.
func waitIdle(ctx context.Context, db *sql.DB, schema string) error {
	for {
		var n int
		err := db.QueryRowContext(ctx, `SELECT count(*) FROM `+pq.QuoteIdentifier(schema)+`.river_job
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

func TestSchedulerConformance(t *testing.T) {
	t.Parallel()
	jobstest.Run(t, func(t *testing.T) *jobstest.Env {
		st, db, schema := newStoreWithJobs(t)
		return &jobstest.Env{
			Scheduler: newScheduler(t, db, schema, testSchedulerConfig()),
			Tx:        st,
			NewPeer: func(t *testing.T) jobs.Scheduler {
				return newScheduler(t, db, schema, testSchedulerConfig())
			},
			Idle: func(ctx context.Context) error { return waitIdle(ctx, db, schema) },
		}
	})
}

// A job enqueued in Store.WithTx is a row of the transaction: visible in
// it, invisible to other connections until the commit, gone after a
// rollback.
func TestSchedulerEnqueueIsPartOfTheTransaction(t *testing.T) {
	t.Parallel()
	st, db, schema := newStoreWithJobs(t)
	s := newScheduler(t, db, schema, testSchedulerConfig())
	if err := s.Register("k", func(context.Context, *jobs.Run) error { return nil }); err != nil {
		t.Fatal(err)
	}
	count := func(ctx context.Context, q interface {
		QueryRowContext(context.Context, string, ...any) *sql.Row
	}) int {
		t.Helper()
		var n int
		if err := q.QueryRowContext(ctx, `SELECT count(*) FROM `+pq.QuoteIdentifier(schema)+`.river_job`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	ctx := t.Context()
	err := st.WithTx(ctx, func(ctx context.Context) error {
		if err := s.Enqueue(ctx, jobs.Job{Kind: "k"}, jobs.Job{Kind: "k"}); err != nil {
			return err
		}
		tx, _ := postgres.TxFromContext(ctx)
		if n := count(ctx, tx); n != 2 {
			t.Errorf("the transaction sees %d jobs, want 2", n)
		}
		if n := count(ctx, db); n != 0 {
			t.Errorf("another connection sees %d uncommitted jobs", n)
		}
		return errors.New("roll back")
	})
	if err == nil {
		t.Fatal("WithTx returned nil")
	}
	if n := count(ctx, db); n != 0 {
		t.Errorf("%d jobs remain after the rollback", n)
	}
	if err := s.Enqueue(ctx, jobs.Job{Kind: "k"}); err != nil {
		t.Fatal(err)
	}
	if n := count(ctx, db); n != 1 {
		t.Errorf("%d jobs after an Enqueue outside a transaction, want 1", n)
	}
}

// A transaction on another pool is refused rather than ignored.
func TestSchedulerEnqueueInATransactionOfAnotherPool(t *testing.T) {
	t.Parallel()
	_, db, schema := newStoreWithJobs(t)
	other, err := sql.Open("postgres", pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Close() })
	otherStore := openStore(t, other, &postgres.Options{Schema: schema})
	s := newScheduler(t, db, schema, testSchedulerConfig())
	if err := s.Register("k", func(context.Context, *jobs.Run) error { return nil }); err != nil {
		t.Fatal(err)
	}
	_ = otherStore.WithTx(t.Context(), func(ctx context.Context) error {
		if err := s.Enqueue(ctx, jobs.Job{Kind: "k"}); err == nil || !strings.Contains(err.Error(), "another *sql.DB") {
			t.Errorf("Enqueue in a transaction of another pool = %v, want an error", err)
		}
		return nil
	})
}

func TestSchedulerWithoutMigrate(t *testing.T) {
	t.Parallel()
	db, schema := pgtest.Schema(t)
	opts := &postgres.Options{Schema: schema}
	if err := postgres.MigrateWithoutRiver(t.Context(), db, opts); err != nil {
		t.Fatal(err)
	}
	s := newScheduler(t, db, schema, testSchedulerConfig())
	if err := s.Register("k", func(context.Context, *jobs.Run) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(t.Context()); err == nil || !strings.Contains(err.Error(), "Migrate") {
		t.Errorf("Start without River's tables = %v, want an error that says to run Migrate", err)
	}
	if err := s.Enqueue(t.Context(), jobs.Job{Kind: "k"}); err == nil {
		t.Error("Enqueue without River's tables succeeded")
	}
}

func TestNewSchedulerErrors(t *testing.T) {
	t.Parallel()
	db := &sql.DB{}
	for name, tc := range map[string]struct {
		db   *sql.DB
		opts *postgres.Options
		cfg  postgres.SchedulerConfig
	}{
		"nil db":                    {nil, nil, postgres.SchedulerConfig{}},
		"bad schema":                {db, &postgres.Options{Schema: "bad-name"}, postgres.SchedulerConfig{}},
		"schema too long for River": {db, &postgres.Options{Schema: strings.Repeat("s", 47)}, postgres.SchedulerConfig{}},
		"negative workers":          {db, nil, postgres.SchedulerConfig{Workers: -1}},
		"negative poll interval":    {db, nil, postgres.SchedulerConfig{FetchPollInterval: -time.Second}},
		"job timeout below -1":      {db, nil, postgres.SchedulerConfig{JobTimeout: -2}},
		"rescue before job timeout": {db, nil, postgres.SchedulerConfig{JobTimeout: time.Hour, RescueStuckJobsAfter: time.Minute}},
		"ID longer than 100 bytes":  {db, nil, postgres.SchedulerConfig{ID: strings.Repeat("x", 101)}},
	} {
		if _, err := postgres.NewScheduler(tc.db, tc.opts, tc.cfg); err == nil {
			t.Errorf("%s: NewScheduler succeeded", name)
		}
	}
	if _, err := postgres.NewScheduler(db, nil, postgres.SchedulerConfig{}); err != nil {
		t.Errorf("NewScheduler with defaults: %v", err)
	}
}

// A job that outlives JobTimeout has its context cancelled: the attempt
// fails and counts (unlike one cancelled by Stop), and the job retries.
func TestSchedulerJobTimeout(t *testing.T) {
	t.Parallel()
	_, db, schema := newStoreWithJobs(t)
	cfg := testSchedulerConfig()
	cfg.JobTimeout = 50 * time.Millisecond
	s := newScheduler(t, db, schema, cfg)
	var attempts atomic.Int32
	if err := s.Register("slow", func(ctx context.Context, run *jobs.Run) error {
		attempts.Add(1)
		if run.Attempt == 1 {
			<-ctx.Done()
			return ctx.Err()
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	if err := s.Enqueue(t.Context(), jobs.Job{Kind: "slow", MaxAttempts: 2}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := waitIdle(ctx, db, schema); err != nil {
		t.Fatal(err)
	}
	var state string
	var attempt int
	if err := db.QueryRowContext(ctx, `SELECT state, attempt FROM `+pq.QuoteIdentifier(schema)+`.river_job`).Scan(&state, &attempt); err != nil {
		t.Fatal(err)
	}
	if attempts.Load() != 2 || state != "completed" || attempt != 2 {
		t.Errorf("handler ran %d times; job %s after attempt %d; want 2 runs, completed after attempt 2",
			attempts.Load(), state, attempt)
	}
}

// Schema names are case-sensitive: River's tables and queries use the
// quoted name too.
func TestSchedulerMixedCaseSchema(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t)
	schema := "Pgtest_" + strings.TrimPrefix(pgtest.Name(), "pgtest_")
	t.Cleanup(func() { pgtest.DropSchema(t, db, schema) })
	opts := &postgres.Options{Schema: schema}
	if err := postgres.Migrate(t.Context(), db, opts); err != nil {
		t.Fatal(err)
	}
	s, err := postgres.NewScheduler(db, opts, testSchedulerConfig())
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan struct{}, 1)
	if err := s.Register("k", func(context.Context, *jobs.Run) error { ran <- struct{}{}; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	if err := s.Enqueue(t.Context(), jobs.Job{Kind: "k"}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ran:
	case <-time.After(10 * time.Second):
		t.Fatal("the job never ran")
	}
	var folded bool
	if err := db.QueryRowContext(t.Context(), `SELECT to_regclass($1) IS NOT NULL`,
		strings.ToLower(schema)+".river_job").Scan(&folded); err != nil {
		t.Fatal(err)
	}
	if folded {
		t.Error("River's tables are in the lower-cased schema")
	}
}
