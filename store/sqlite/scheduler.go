package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/embedauth/connect/internal/riverjobs"
	"github.com/embedauth/connect/jobs"
)

// Defaults of SchedulerConfig.
const (
	DefaultSchedulerWorkers  = riverjobs.DefaultWorkers
	DefaultJobTimeout        = riverjobs.DefaultJobTimeout
	DefaultFetchPollInterval = riverjobs.DefaultFetchPollInterval
	DefaultCancelGrace       = riverjobs.DefaultCancelGrace
)

// SchedulerConfig configures a [Scheduler]. The zero value is usable: every
// field has a default.
type SchedulerConfig struct {
	// Workers is the number of jobs the process runs at once. Defaults to
	// 200: jobs such as webhook deliveries mostly wait on the network.
	// Workers are goroutines; a job takes the writer only while its
	// handler writes.
	Workers int

	// Logger receives River's logs (start, stop, failed attempts). Defaults
	// to a logger that discards everything.
	Logger *slog.Logger

	// JobTimeout is how long a job may run before its context is
	// cancelled, which makes the attempt fail (and the job retry, if it has
	// attempts left). Defaults to 1 minute; -1 means no timeout.
	JobTimeout time.Duration

	// RescueStuckJobsAfter is how long a job may stay running before River
	// decides that the process running it died (a crash, kill -9), and
	// makes it available again, counting the attempt. It must exceed the
	// longest run: defaults to JobTimeout plus 1 minute (1 hour when
	// JobTimeout is -1), and may not be less than JobTimeout.
	RescueStuckJobsAfter time.Duration

	// FetchPollInterval is how often the process looks for due jobs, such
	// as those enqueued in a transaction, which wait up to this long
	// before they start. Defaults to 100 ms; at least 1 millisecond.
	FetchPollInterval time.Duration

	// RetryBackoff returns how long to wait before running a job again
	// after its attempt number attempt (from 1) failed. Defaults to River's
	// DefaultClientRetryPolicy: attempt^4 seconds with 10% jitter.
	RetryBackoff func(attempt int) time.Duration

	// CancelGrace is how long Stop waits, once its context has ended and it
	// has cancelled the contexts of the jobs still running, for their
	// handlers to return. Defaults to 10 seconds.
	CancelGrace time.Duration

	// Test holds settings meant for tests only.
	Test SchedulerTestConfig
}

// SchedulerTestConfig holds settings of a [Scheduler] meant for tests.
type SchedulerTestConfig struct {
	// DisableStaggeredStart starts River's maintenance services (rescue of
	// stuck jobs, scheduling of jobs due later than 5 seconds ahead,
	// cleaning of old jobs) at once rather than after random delays. It is
	// River's TestOnly.
	DisableStaggeredStart bool
}

// Scheduler is a [jobs.Scheduler] in the database file of a [Store], built
// on River (github.com/riverqueue/river) through its SQLite driver, on the
// Store's writer: River needs no connection of its own. A job enqueued with
// a context from [Store.WithTx] is inserted in that transaction: it exists
// if and only if the transaction commits, and survives a crash once it has.
//
// Jobs are worked by the process that has the file open. A job whose
// process died while running it runs again after RescueStuckJobsAfter.
// Args are stored as JSON, so handlers receive the same JSON value, not
// necessarily the same bytes.
type Scheduler struct {
	rs *riverjobs.Scheduler
}

var _ jobs.Scheduler = (*Scheduler)(nil)

// NewScheduler creates or updates River's tables in the Store's file (River's
// own migrations, applied once) and returns a Scheduler on it.
func NewScheduler(ctx context.Context, s *Store, cfg SchedulerConfig) (*Scheduler, error) {
	if s == nil {
		return nil, errors.New("sqlite: NewScheduler: the Store is nil")
	}
	driver := riversqlite.New(s.w)
	migrator, err := rivermigrate.New(driver, &rivermigrate.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, fmt.Errorf("sqlite: migrate the job queue: %w", err)
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return nil, fmt.Errorf("sqlite: migrate the job queue: %w", dbErr(ctx, "migrate", err))
	}
	rs, err := riverjobs.New(driver, riverjobs.Config{
		Name: "sqlite",
		TxFromContext: func(ctx context.Context) (*sql.Tx, bool) {
			if st, ok := s.liveTx(ctx); ok {
				return st.tx, true
			}
			return nil, false
		},
		WrapErr:               dbErr,
		Workers:               cfg.Workers,
		Logger:                cfg.Logger,
		JobTimeout:            cfg.JobTimeout,
		RescueStuckJobsAfter:  cfg.RescueStuckJobsAfter,
		FetchPollInterval:     cfg.FetchPollInterval,
		RetryBackoff:          cfg.RetryBackoff,
		CancelGrace:           cfg.CancelGrace,
		DisableStaggeredStart: cfg.Test.DisableStaggeredStart,
	})
	if err != nil {
		return nil, err
	}
	return &Scheduler{rs: rs}, nil
}

// Register sets the handler of a kind. It must be called before Start.
func (s *Scheduler) Register(kind string, h jobs.Handler) error { return s.rs.Register(kind, h) }

// Enqueue inserts jobs: in the transaction of ctx when ctx comes from
// [Store.WithTx], else on their own.
func (s *Scheduler) Enqueue(ctx context.Context, js ...jobs.Job) error {
	return s.rs.Enqueue(ctx, js...)
}

// Start starts working jobs in the background until Stop. Do not call it
// with the context of a transaction.
func (s *Scheduler) Start(ctx context.Context) error { return s.rs.Start(ctx) }

// Stop stops taking jobs and waits for the running ones within ctx's
// deadline; jobs still running then are cancelled and run again after the
// next Start.
func (s *Scheduler) Stop(ctx context.Context) error { return s.rs.Stop(ctx) }
