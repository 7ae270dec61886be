package postgres

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"time"

	"github.com/riverqueue/river/riverdriver/riverdatabasesql"

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
	// Workers is the number of jobs this process runs at once. Defaults to
	// 200: jobs such as webhook deliveries mostly wait on the network, and
	// River fetches at most Workers jobs per fetch (fetches are at least 5
	// ms apart), which bounds the throughput. Workers are goroutines, not
	// database sessions: a job takes a session of the pool only while its
	// handler queries (the webhook job does not), so Workers may exceed
	// Options.MaxConns; jobs that query at once wait for a session (see
	// "Connections" in the package documentation).
	Workers int

	// Logger receives River's logs (start, stop, failed attempts). Defaults
	// to a logger that discards everything.
	Logger *slog.Logger

	// JobTimeout is how long a job may run before its context is
	// cancelled, which makes the attempt fail (and the job retry, if it has
	// attempts left). Defaults to 1 minute; -1 means no timeout.
	JobTimeout time.Duration

	// RescueStuckJobsAfter is how long a job may stay running before River
	// decides that the process running it died, and makes it available
	// again (counting the attempt). A job that legitimately runs longer
	// would then run twice, so it must exceed the longest run: defaults to
	// JobTimeout plus 1 minute (1 hour when JobTimeout is -1), and may not
	// be less than JobTimeout. Rescue is one of River's maintenance
	// services, which only the elected leader among the processes runs.
	RescueStuckJobsAfter time.Duration

	// FetchPollInterval is how often this process looks for due jobs. The
	// database/sql driver of River has no LISTEN, so polling is how a
	// process learns of jobs enqueued by another process, or in a
	// transaction; such a job waits up to this long before it starts.
	// (A job enqueued by this process outside a transaction is fetched at
	// once.) Defaults to 100 ms, so that a webhook leaves within about
	// 100 ms of its transaction's commit; at least 1 millisecond. Each poll
	// is one indexed query per process, cheap when nothing is due.
	FetchPollInterval time.Duration

	// RetryBackoff returns how long to wait before running a job again
	// after its attempt number attempt (from 1) failed. Defaults to River's
	// DefaultClientRetryPolicy: attempt^4 seconds (1s, 16s, 81s, 256s, ...)
	// with 10% jitter.
	RetryBackoff func(attempt int) time.Duration

	// CancelGrace is how long Stop waits, once its context has ended and it
	// has cancelled the contexts of the jobs still running, for their
	// handlers to return. Defaults to 10 seconds.
	CancelGrace time.Duration

	// ID identifies this process among those that work the queue, in River's
	// tables (river_job.attempted_by, leader election); it must be unique
	// among them, and at most 100 characters. Defaults to the host name,
	// the time and a random suffix.
	ID string

	// Test holds settings meant for tests only.
	Test SchedulerTestConfig
}

// SchedulerTestConfig holds settings of a [Scheduler] meant for tests.
type SchedulerTestConfig struct {
	// DisableStaggeredStart starts River's maintenance services (rescue of
	// stuck jobs, scheduling of jobs due later than 5 seconds after they
	// were enqueued or failed, cleaning of old jobs) at once when this
	// process becomes the leader, rather than after random delays that
	// spread the work of a fleet. It is River's TestOnly.
	DisableStaggeredStart bool
}

// Scheduler is a [jobs.Scheduler] on Postgres, built on River
// (github.com/riverqueue/river) through its database/sql driver, over the
// same *sql.DB as the [Store]: River needs no pool of its own. River's
// tables live in the Store's schema ([Migrate] creates them).
//
// Every process of a fleet creates a Scheduler on the same database and
// schema, registers the same handlers, and starts it: each job runs in one
// of them, once, unless a process dies while running it (then River rescues
// it after RescueStuckJobsAfter and runs it again). A job enqueued with a
// context from [Store.WithTx] is inserted in that transaction: it exists if
// and only if the transaction commits.
//
// All jobs are one River job kind, "connect_job", whose arguments carry the
// job's Kind and Args, in River's default queue; a River worker hands each
// to the handler registered for its Kind. Args are stored as jsonb, so
// handlers receive them as Postgres returns jsonb: the same JSON value, not
// the same bytes (whitespace and key order may differ).
type Scheduler struct {
	db *sql.DB
	rs *riverjobs.Scheduler
}

var _ jobs.Scheduler = (*Scheduler)(nil)

// NewScheduler returns a Scheduler whose jobs live in the schema of opts
// (see [Options]; only Schema matters), on db. It does not touch the
// database: run [Migrate] before Start or Enqueue. River requires the schema
// name to be at most 46 characters (it prefixes its notification topics
// with it), where a Store takes 63.
func NewScheduler(db *sql.DB, opts *Options, cfg SchedulerConfig) (*Scheduler, error) {
	if db == nil {
		return nil, errors.New("postgres: db is nil")
	}
	o, err := opts.resolve()
	if err != nil {
		return nil, err
	}
	rs, err := riverjobs.New(riverdatabasesql.New(db), riverjobs.Config{
		Name:   "postgres",
		Schema: o.schema,
		TxFromContext: func(ctx context.Context) (*sql.Tx, bool) {
			if st, ok := liveTx(ctx, db); ok {
				return st.tx.Tx, true
			}
			return nil, false
		},
		WrapErr:               func(ctx context.Context, op string, err error) error { return dbErr(ctx, op, err, nil) },
		Workers:               cfg.Workers,
		Logger:                cfg.Logger,
		JobTimeout:            cfg.JobTimeout,
		RescueStuckJobsAfter:  cfg.RescueStuckJobsAfter,
		FetchPollInterval:     cfg.FetchPollInterval,
		RetryBackoff:          cfg.RetryBackoff,
		CancelGrace:           cfg.CancelGrace,
		ID:                    cfg.ID,
		DisableStaggeredStart: cfg.Test.DisableStaggeredStart,
	})
	if err != nil {
		return nil, err
	}
	return &Scheduler{db: db, rs: rs}, nil
}

// Register sets the handler of kind. It fails once the Scheduler has
// started, and for a kind already registered. Every process of a fleet
// registers the same kinds: a job whose kind this process lacks fails its
// attempt here (and retries, perhaps in another process).
func (s *Scheduler) Register(kind string, h jobs.Handler) error { return s.rs.Register(kind, h) }

// Enqueue inserts jobs, all or none, in one statement. With a context from
// [Store.WithTx] (of a Store on the same *sql.DB), the insert is part of
// that transaction; with the context of a transaction on another *sql.DB,
// Enqueue fails rather than insert outside it. It also fails, inserting
// nothing, when a job has no Kind, a Kind without a handler, Args that are
// not JSON, or a negative MaxAttempts. A job whose RunAt has passed runs
// now. Jobs may be enqueued before Start, and by a process that never
// starts its Scheduler.
func (s *Scheduler) Enqueue(ctx context.Context, js ...jobs.Job) error {
	if st, ok := ctx.Value(txKey{}).(*txState); ok && !st.done.Load() && st.db != s.db && len(js) > 0 {
		return errors.New("postgres: Enqueue: the transaction of ctx is on another *sql.DB than the Scheduler's")
	}
	return s.rs.Enqueue(ctx, js...)
}

// Start starts working jobs in the background, until Stop. It fails when
// River's tables are missing (run [Migrate]), or the Scheduler is started.
// ctx bounds the start-up and its values reach the jobs' contexts; ending
// it later does not stop the Scheduler.
func (s *Scheduler) Start(ctx context.Context) error { return s.rs.Start(ctx) }

// Stop stops fetching jobs and waits for the running ones to return. When
// ctx ends first, it cancels their contexts and waits up to CancelGrace for
// them to return; their jobs become available again at once, without
// counting the attempt, for this process after the next Start or for
// another process. Stop returns nil once every handler has returned and
// River has recorded the outcome, and an error when some still run after
// CancelGrace. Stop on a stopped Scheduler returns nil.
func (s *Scheduler) Stop(ctx context.Context) error { return s.rs.Stop(ctx) }
