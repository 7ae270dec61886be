package postgres

import (
	"cmp"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lib/pq"
	"github.com/lib/pq/pqerror"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverdatabasesql"
	"github.com/riverqueue/river/rivertype"

	"github.com/embedauth/connect/jobs"
)

// Defaults of SchedulerConfig.
const (
	DefaultSchedulerWorkers   = 200
	DefaultJobTimeout         = time.Minute
	DefaultFetchPollInterval  = 100 * time.Millisecond
	DefaultCancelGrace        = 10 * time.Second
	rescueMargin              = time.Minute
	rescueWithoutTimeout      = time.Hour
	fetchCooldownDefault      = 5 * time.Millisecond
	riverSchedulerIntervalMax = 5 * time.Second // River's maintenance.JobSchedulerIntervalDefault
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
	db       *sql.DB
	quoted   string // the schema, quoted
	client   *river.Client[*sql.Tx]
	grace    time.Duration
	mu       sync.RWMutex
	handlers map[string]jobs.Handler // guarded by mu
	started  bool                    // guarded by mu
	// hardStop is set while Stop cancels running jobs, whose attempts then
	// do not count.
	hardStop atomic.Bool
}

var _ jobs.Scheduler = (*Scheduler)(nil)

// jobKind is the River job kind of every job.
const jobKind = "connect_job"

// jobArgs is the River job of a jobs.Job.
// A job with a UniqueKey is unique by its Kind and UniqueKey (the fields
// tagged river:"unique"), among the jobs waiting or running: see
// uniqueOpts.
type jobArgs struct {
	JobKind string          `json:"kind" river:"unique"`
	Args    json.RawMessage `json:"args,omitempty"`
	Unique  string          `json:"unique,omitempty" river:"unique"`
	// TimeoutMS is the job's own timeout (jobs.Job.Timeout), in
	// milliseconds; 0 for the Scheduler's.
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
}

// uniqueOpts are River's options for a job with a UniqueKey: unique by the
// tagged fields of jobArgs while available, pending, running, retryable or
// scheduled. (River requires the first four; a completed, cancelled or
// discarded job no longer counts.) River enforces it with a unique index,
// inside the inserting transaction: a concurrent transaction inserting the
// same job waits for the first to end, then skips it.
var uniqueOpts = river.UniqueOpts{ByArgs: true, ByState: []rivertype.JobState{
	rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRunning,
	rivertype.JobStateRetryable, rivertype.JobStateScheduled,
}}

// Kind implements river.JobArgs.
func (jobArgs) Kind() string { return jobKind }

type worker struct {
	river.WorkerDefaults[jobArgs]
	s *Scheduler
}

func (w *worker) Work(ctx context.Context, job *river.Job[jobArgs]) error { return w.s.work(ctx, job) }

// Timeout is the job's own timeout, or 0 for the client's (JobTimeout).
func (w *worker) Timeout(job *river.Job[jobArgs]) time.Duration {
	return time.Duration(job.Args.TimeoutMS) * time.Millisecond
}

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
	switch {
	case cfg.Workers < 0:
		return nil, fmt.Errorf("postgres: SchedulerConfig.Workers is %d", cfg.Workers)
	case cfg.FetchPollInterval < 0:
		return nil, fmt.Errorf("postgres: SchedulerConfig.FetchPollInterval is %s", cfg.FetchPollInterval)
	case cfg.JobTimeout < -1:
		return nil, fmt.Errorf("postgres: SchedulerConfig.JobTimeout is %s; want -1 or more", cfg.JobTimeout)
	}
	timeout := cmp.Or(cfg.JobTimeout, DefaultJobTimeout)
	rescue := cfg.RescueStuckJobsAfter
	if rescue == 0 {
		rescue = rescueWithoutTimeout
		if timeout > 0 {
			rescue = timeout + rescueMargin
		}
	}
	poll := cmp.Or(cfg.FetchPollInterval, DefaultFetchPollInterval)
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	id := cfg.ID
	if id == "" {
		id = defaultSchedulerID()
	}
	s := &Scheduler{
		db:       db,
		quoted:   o.quoted,
		grace:    cmp.Or(max(cfg.CancelGrace, 0), DefaultCancelGrace),
		handlers: map[string]jobs.Handler{},
	}
	workers := river.NewWorkers()
	if err := river.AddWorkerSafely(workers, &worker{s: s}); err != nil {
		return nil, fmt.Errorf("postgres: NewScheduler: %w", err)
	}
	rc := &river.Config{
		Schema:               o.schema,
		ID:                   id,
		Logger:               logger,
		Workers:              workers,
		Queues:               map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: cmp.Or(cfg.Workers, DefaultSchedulerWorkers)}},
		JobTimeout:           timeout,
		RescueStuckJobsAfter: rescue,
		FetchPollInterval:    poll,
		FetchCooldown:        min(poll, fetchCooldownDefault),
		MaxAttempts:          jobs.DefaultMaxAttempts,
		Middleware:           []rivertype.Middleware{&nearFutureMiddleware{}},
		TestOnly:             cfg.Test.DisableStaggeredStart,
	}
	if cfg.RetryBackoff != nil {
		rc.RetryPolicy = &retryPolicy{backoff: cfg.RetryBackoff}
	}
	client, err := river.NewClient(riverdatabasesql.New(db), rc)
	if err != nil {
		return nil, fmt.Errorf("postgres: NewScheduler: %w", err)
	}
	s.client = client
	return s, nil
}

var notIDChars = regexp.MustCompile(`[^A-Za-z0-9_]+`)

// defaultSchedulerID returns the host name, the time and a random suffix.
func defaultSchedulerID() string {
	host, _ := os.Hostname()
	host = notIDChars.ReplaceAllString(host, "_")
	if len(host) > 50 {
		host = host[:50]
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s_%s_%s", cmp.Or(host, "host"), time.Now().UTC().Format("20060102T150405"), hex.EncodeToString(b))
}

// retryPolicy is a river.ClientRetryPolicy from SchedulerConfig.RetryBackoff.
type retryPolicy struct {
	backoff func(attempt int) time.Duration
}

func (p *retryPolicy) NextRetry(job *rivertype.JobRow) time.Time {
	return time.Now().Add(max(p.backoff(job.Attempt), 0))
}

// nearFutureMiddleware inserts a job whose RunAt is at most 5 seconds away
// as available rather than scheduled. River fetches an available job only
// once its scheduled_at has passed, while a scheduled one waits for River's
// scheduler, which makes it available every 5 seconds, and only on the
// leader: without this, a job due in 200 ms would start up to 5 s late.
// River itself does the same for retries and snoozes shorter than 5
// seconds.
type nearFutureMiddleware struct {
	river.MiddlewareDefaults
}

func (*nearFutureMiddleware) InsertMany(ctx context.Context, params []*rivertype.JobInsertParams,
	doInner func(context.Context) ([]*rivertype.JobInsertResult, error),
) ([]*rivertype.JobInsertResult, error) {
	now := time.Now()
	for _, p := range params {
		if p.Kind == jobKind && p.State == rivertype.JobStateScheduled && p.ScheduledAt != nil &&
			p.ScheduledAt.Sub(now) <= riverSchedulerIntervalMax {
			p.State = rivertype.JobStateAvailable
		}
	}
	return doInner(ctx)
}

// Register sets the handler of kind. It fails once the Scheduler has
// started, and for a kind already registered. Every process of a fleet
// registers the same kinds: a job whose kind this process lacks fails its
// attempt here (and retries, perhaps in another process).
func (s *Scheduler) Register(kind string, h jobs.Handler) error {
	if kind == "" || h == nil {
		return errors.New("postgres: Register needs a kind and a handler")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return fmt.Errorf("postgres: Register(%q) after Start", kind)
	}
	if _, dup := s.handlers[kind]; dup {
		return fmt.Errorf("postgres: job kind %q is already registered", kind)
	}
	s.handlers[kind] = h
	return nil
}

// Enqueue inserts jobs, all or none, in one statement. With a context from
// [Store.WithTx] (of a Store on the same *sql.DB), the insert is part of
// that transaction; with the context of a transaction on another *sql.DB,
// Enqueue fails rather than insert outside it. It also fails, inserting
// nothing, when a job has no Kind, a Kind without a handler, Args that are
// not JSON, or a negative MaxAttempts. A job whose RunAt has passed runs
// now. Jobs may be enqueued before Start, and by a process that never
// starts its Scheduler.
func (s *Scheduler) Enqueue(ctx context.Context, js ...jobs.Job) error {
	if len(js) == 0 {
		return nil
	}
	s.mu.RLock()
	err := validateJobs(js, s.handlers)
	s.mu.RUnlock()
	if err != nil {
		return err
	}
	now := time.Now()
	// River refuses two equal unique jobs in one insert: keep the first.
	var seen map[[2]string]bool
	params := make([]river.InsertManyParams, 0, len(js))
	for _, j := range js {
		if j.UniqueKey != "" {
			k := [2]string{j.Kind, j.UniqueKey}
			if seen[k] {
				continue
			}
			if seen == nil {
				seen = map[[2]string]bool{}
			}
			seen[k] = true
		}
		opts := &river.InsertOpts{MaxAttempts: cmp.Or(j.MaxAttempts, jobs.DefaultMaxAttempts)}
		if j.RunAt.After(now) {
			opts.ScheduledAt = j.RunAt
		}
		if j.UniqueKey != "" {
			opts.UniqueOpts = uniqueOpts
		}
		params = append(params, river.InsertManyParams{Args: jobArgs{JobKind: j.Kind, Args: j.Args, Unique: j.UniqueKey,
			TimeoutMS: max(j.Timeout, 0).Milliseconds()}, InsertOpts: opts})
	}
	if st, ok := ctx.Value(txKey{}).(*txState); ok && !st.done.Load() {
		if st.db != s.db {
			return errors.New("postgres: Enqueue: the transaction of ctx is on another *sql.DB than the Scheduler's")
		}
		_, err = s.client.InsertManyTx(ctx, st.tx.Tx, params)
	} else {
		_, err = s.client.InsertMany(ctx, params)
	}
	return dbErr(ctx, "enqueue", err, nil)
}

// validateJobs checks jobs for Enqueue.
func validateJobs(js []jobs.Job, handlers map[string]jobs.Handler) error {
	for i, j := range js {
		switch {
		case j.Kind == "":
			return fmt.Errorf("postgres: job %d has no Kind", i)
		case handlers[j.Kind] == nil:
			return fmt.Errorf("postgres: no handler is registered for job kind %q", j.Kind)
		case len(j.Args) > 0 && !json.Valid(j.Args):
			return fmt.Errorf("postgres: the Args of a %q job are not JSON", j.Kind)
		case j.MaxAttempts < 0:
			return fmt.Errorf("postgres: a %q job has MaxAttempts %d", j.Kind, j.MaxAttempts)
		}
	}
	return nil
}

// work runs one attempt of a job: River's worker.
func (s *Scheduler) work(ctx context.Context, job *river.Job[jobArgs]) error {
	s.mu.RLock()
	h := s.handlers[job.Args.JobKind]
	s.mu.RUnlock()
	if h == nil {
		return fmt.Errorf("postgres: no handler is registered for job kind %q in this process", job.Args.JobKind)
	}
	err := h(ctx, &jobs.Run{
		ID:          strconv.FormatInt(job.ID, 10),
		Kind:        job.Args.JobKind,
		Args:        job.Args.Args,
		Attempt:     job.Attempt,
		MaxAttempts: job.MaxAttempts,
	})
	if err == nil {
		return nil
	}
	if d, ok := jobs.SnoozeDuration(err); ok {
		return river.JobSnooze(max(d, 0))
	}
	if jobs.IsCancel(err) {
		return river.JobCancel(err)
	}
	if ctx.Err() != nil && s.hardStop.Load() {
		// Stop cancelled it: make it available again at once, without
		// counting the attempt (River's advice for jobs interrupted by
		// shutdown).
		return river.JobSnooze(0)
	}
	return err
}

// Start starts working jobs in the background, until Stop. It fails when
// River's tables are missing (run [Migrate]), or the Scheduler is started.
// ctx bounds the start-up and its values reach the jobs' contexts; ending
// it later does not stop the Scheduler.
func (s *Scheduler) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return errors.New("postgres: Scheduler already started")
	}
	if _, err := s.db.ExecContext(ctx, `SELECT 1 FROM `+s.quoted+`.river_job LIMIT 0`); err != nil {
		if pe := pq.As(err); pe != nil && pe.Code == pqerror.UndefinedTable {
			return fmt.Errorf("postgres: Start: the job tables are missing from schema %s: run Migrate: %w", s.quoted, err)
		}
		return dbErr(ctx, "start scheduler", err, nil)
	}
	s.hardStop.Store(false)
	if err := s.client.Start(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("postgres: start scheduler: %w", err)
	}
	s.started = true
	return nil
}

// Stop stops fetching jobs and waits for the running ones to return. When
// ctx ends first, it cancels their contexts and waits up to CancelGrace for
// them to return; their jobs become available again at once, without
// counting the attempt, for this process after the next Start or for
// another process. Stop returns nil once every handler has returned and
// River has recorded the outcome, and an error when some still run after
// CancelGrace. Stop on a stopped Scheduler returns nil.
func (s *Scheduler) Stop(ctx context.Context) error {
	s.mu.Lock()
	if !s.started {
		s.mu.Unlock()
		return nil
	}
	s.started = false
	s.mu.Unlock()
	err := s.client.Stop(ctx)
	if err == nil {
		return nil
	}
	if ctx.Err() == nil {
		return fmt.Errorf("postgres: stop scheduler: %w", err)
	}
	s.hardStop.Store(true)
	graceCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.grace)
	defer cancel()
	if err := s.client.StopAndCancel(graceCtx); err != nil {
		return fmt.Errorf("postgres: stop scheduler: jobs still running %s after their contexts were cancelled: %w",
			s.grace, ctx.Err())
	}
	return nil
}
