package riverjobs

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

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/rivertype"

	"github.com/embedauth/connect/jobs"
)

// Defaults of Config.
const (
	DefaultWorkers           = 200
	DefaultJobTimeout        = time.Minute
	DefaultFetchPollInterval = 100 * time.Millisecond
	DefaultCancelGrace       = 10 * time.Second

	fetchCooldown             = 5 * time.Millisecond // at most FetchPollInterval
	rescueMargin              = time.Minute
	rescueWithoutTimeout      = time.Hour
	riverSchedulerIntervalMax = 5 * time.Second // River's maintenance.JobSchedulerIntervalDefault
)

// Config configures a [Scheduler]. Name and TxFromContext are required;
// every other field has a default. The fields that a store's
// SchedulerConfig has too (Workers to ID) mean what store/postgres's
// SchedulerConfig documents, and errors about them name them
// "SchedulerConfig.Field".
type Config struct {
	// Name prefixes every error, as in "postgres: Register(...) after
	// Start". Required.
	Name string

	// TxFromContext returns the transaction that ctx carries (from the
	// store's WithTx, still open), on the driver's *sql.DB. Enqueue inserts
	// in it. Required.
	TxFromContext func(ctx context.Context) (*sql.Tx, bool)

	// Schema is River's Config.Schema: where River's tables are. Empty
	// means the connection's search path (Postgres) or the main database
	// (SQLite).
	Schema string

	// WrapErr returns the error that Enqueue and Start report for err, a
	// database error of the operation op ("enqueue", "start scheduler").
	// Nil wraps err as "Name: op: err".
	WrapErr func(ctx context.Context, op string, err error) error

	// Workers is the number of jobs this process runs at once. Defaults to
	// DefaultWorkers.
	Workers int

	// Logger receives River's logs. Defaults to one that discards them.
	Logger *slog.Logger

	// JobTimeout bounds a job's run; -1 means none. Defaults to
	// DefaultJobTimeout.
	JobTimeout time.Duration

	// RescueStuckJobsAfter is when River makes a job whose process died
	// available again. Defaults to JobTimeout plus 1 minute (1 hour without
	// a JobTimeout); may not be less than JobTimeout.
	RescueStuckJobsAfter time.Duration

	// FetchPollInterval is how often this process looks for due jobs.
	// Defaults to DefaultFetchPollInterval.
	FetchPollInterval time.Duration

	// RetryBackoff returns the wait before the attempt after attempt
	// failed. Defaults to River's DefaultClientRetryPolicy.
	RetryBackoff func(attempt int) time.Duration

	// CancelGrace is how long Stop waits for the handlers it cancelled.
	// Defaults to DefaultCancelGrace.
	CancelGrace time.Duration

	// ID identifies this process in River's tables. Defaults to the host
	// name, the time and a random suffix.
	ID string

	// DisableStaggeredStart is River's TestOnly: maintenance services
	// start at once when this process becomes the leader. For tests.
	DisableStaggeredStart bool
}

// Scheduler is a [jobs.Scheduler] on River. Create it with [New].
type Scheduler struct {
	name     string
	schema   string
	txOf     func(ctx context.Context) (*sql.Tx, bool)
	wrapErr  func(ctx context.Context, op string, err error) error
	exec     riverdriver.Executor
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

// New returns a Scheduler whose jobs River keeps through driver, in
// cfg.Schema. It does not touch the database: the store runs River's
// migrations before Start or Enqueue.
func New(driver riverdriver.Driver[*sql.Tx], cfg Config) (*Scheduler, error) {
	switch {
	case cfg.Name == "":
		return nil, errors.New("riverjobs: Config.Name is empty")
	case driver == nil:
		return nil, fmt.Errorf("%s: the River driver is nil", cfg.Name)
	case cfg.TxFromContext == nil:
		return nil, fmt.Errorf("%s: Config.TxFromContext is nil", cfg.Name)
	case cfg.Workers < 0:
		return nil, fmt.Errorf("%s: SchedulerConfig.Workers is %d", cfg.Name, cfg.Workers)
	case cfg.FetchPollInterval < 0:
		return nil, fmt.Errorf("%s: SchedulerConfig.FetchPollInterval is %s", cfg.Name, cfg.FetchPollInterval)
	case cfg.JobTimeout < -1:
		return nil, fmt.Errorf("%s: SchedulerConfig.JobTimeout is %s; want -1 or more", cfg.Name, cfg.JobTimeout)
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
		id = defaultID()
	}
	s := &Scheduler{
		name:     cfg.Name,
		schema:   cfg.Schema,
		txOf:     cfg.TxFromContext,
		wrapErr:  cfg.WrapErr,
		exec:     driver.GetExecutor(),
		grace:    cmp.Or(max(cfg.CancelGrace, 0), DefaultCancelGrace),
		handlers: map[string]jobs.Handler{},
	}
	workers := river.NewWorkers()
	if err := river.AddWorkerSafely(workers, &worker{s: s}); err != nil {
		return nil, fmt.Errorf("%s: NewScheduler: %w", cfg.Name, err)
	}
	rc := &river.Config{
		Schema:               cfg.Schema,
		ID:                   id,
		Logger:               logger,
		Workers:              workers,
		Queues:               map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: cmp.Or(cfg.Workers, DefaultWorkers)}},
		JobTimeout:           timeout,
		RescueStuckJobsAfter: rescue,
		FetchPollInterval:    poll,
		// River refuses a poll interval shorter than the cooldown.
		FetchCooldown: min(poll, fetchCooldown),
		MaxAttempts:   jobs.DefaultMaxAttempts,
		Middleware:    []rivertype.Middleware{&nearFutureMiddleware{}},
		TestOnly:      cfg.DisableStaggeredStart,
	}
	if cfg.RetryBackoff != nil {
		rc.RetryPolicy = &retryPolicy{backoff: cfg.RetryBackoff}
	}
	client, err := river.NewClient(driver, rc)
	if err != nil {
		return nil, fmt.Errorf("%s: NewScheduler: %w", cfg.Name, err)
	}
	s.client = client
	return s, nil
}

var notIDChars = regexp.MustCompile(`[^A-Za-z0-9_]+`)

// defaultID returns the host name, the time and a random suffix.
func defaultID() string {
	host, _ := os.Hostname()
	host = notIDChars.ReplaceAllString(host, "_")
	if len(host) > 50 {
		host = host[:50]
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s_%s_%s", cmp.Or(host, "host"), time.Now().UTC().Format("20060102T150405"), hex.EncodeToString(b))
}

// retryPolicy is a river.ClientRetryPolicy from Config.RetryBackoff.
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

// dbErr reports err, a database error of op.
func (s *Scheduler) dbErr(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	if s.wrapErr != nil {
		return s.wrapErr(ctx, op, err)
	}
	return fmt.Errorf("%s: %s: %w", s.name, op, err)
}

// Register sets the handler of kind. It fails once the Scheduler has
// started, and for a kind already registered.
func (s *Scheduler) Register(kind string, h jobs.Handler) error {
	if kind == "" || h == nil {
		return fmt.Errorf("%s: Register needs a kind and a handler", s.name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return fmt.Errorf("%s: Register(%q) after Start", s.name, kind)
	}
	if _, dup := s.handlers[kind]; dup {
		return fmt.Errorf("%s: job kind %q is already registered", s.name, kind)
	}
	s.handlers[kind] = h
	return nil
}

// Enqueue inserts jobs, all or none. With a context that carries a
// transaction (Config.TxFromContext), the insert is part of it; otherwise
// River inserts them in a transaction of its own. It fails, inserting
// nothing, when a job has no Kind, a Kind without a handler, Args that are
// not JSON, or a negative MaxAttempts. Of jobs with the same Kind and
// UniqueKey in one call, only the first is inserted.
func (s *Scheduler) Enqueue(ctx context.Context, js ...jobs.Job) error {
	if len(js) == 0 {
		return nil
	}
	s.mu.RLock()
	err := s.validate(js)
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
	// With the transaction of ctx, always: it may hold the only connection
	// of the pool (SQLite), which an insert of River's own would wait for.
	if tx, ok := s.txOf(ctx); ok {
		_, err = s.client.InsertManyTx(ctx, tx, params)
	} else {
		_, err = s.client.InsertMany(ctx, params)
	}
	return s.dbErr(ctx, "enqueue", err)
}

// validate checks jobs for Enqueue. The caller holds mu.
func (s *Scheduler) validate(js []jobs.Job) error {
	for i, j := range js {
		switch {
		case j.Kind == "":
			return fmt.Errorf("%s: job %d has no Kind", s.name, i)
		case s.handlers[j.Kind] == nil:
			return fmt.Errorf("%s: no handler is registered for job kind %q", s.name, j.Kind)
		case len(j.Args) > 0 && !json.Valid(j.Args):
			return fmt.Errorf("%s: the Args of a %q job are not JSON", s.name, j.Kind)
		case j.MaxAttempts < 0:
			return fmt.Errorf("%s: a %q job has MaxAttempts %d", s.name, j.Kind, j.MaxAttempts)
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
		return fmt.Errorf("%s: no handler is registered for job kind %q in this process", s.name, job.Args.JobKind)
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
		// shutdown). River does so itself for a handler that returns the
		// context's error, but not for one that returns another error.
		return river.JobSnooze(0)
	}
	return err
}

// Start starts working jobs in the background, until Stop. It fails when
// River's tables are missing, or the Scheduler is started. ctx bounds the
// start-up and its values reach the jobs' contexts; ending it later does
// not stop the Scheduler. ctx must not carry a transaction (see the package
// documentation).
func (s *Scheduler) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return fmt.Errorf("%s: Scheduler already started", s.name)
	}
	exists, err := s.exec.TableExists(ctx, &riverdriver.TableExistsParams{Schema: s.schema, Table: "river_job"})
	if err != nil {
		return s.dbErr(ctx, "start scheduler", err)
	}
	if !exists {
		where := ""
		if s.schema != "" {
			where = fmt.Sprintf(" from schema %q", s.schema)
		}
		return fmt.Errorf("%s: Start: the job tables are missing%s: run Migrate", s.name, where)
	}
	s.hardStop.Store(false)
	if err := s.client.Start(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("%s: start scheduler: %w", s.name, err)
	}
	s.started = true
	return nil
}

// Stop stops fetching jobs and waits for the running ones to return. When
// ctx ends first, it cancels their contexts and waits up to CancelGrace for
// them to return; their jobs become available again at once, without
// counting the attempt. Stop returns nil once every handler has returned
// and River has recorded the outcome, and an error when some still run
// after CancelGrace. Stop on a stopped Scheduler returns nil.
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
		return fmt.Errorf("%s: stop scheduler: %w", s.name, err)
	}
	s.hardStop.Store(true)
	graceCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.grace)
	defer cancel()
	if err := s.client.StopAndCancel(graceCtx); err != nil {
		return fmt.Errorf("%s: stop scheduler: jobs still running %s after their contexts were cancelled: %w",
			s.name, s.grace, ctx.Err())
	}
	return nil
}
