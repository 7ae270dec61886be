package riverjobs_test

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
	_ "modernc.org/sqlite"

	"github.com/embedauth/connect/internal/riverjobs"
	"github.com/embedauth/connect/jobs"
	"github.com/embedauth/connect/jobs/jobstest"
)

// openSQLite opens a new SQLite database in a file of the test's temporary
// directory as a SQLite store does: WAL, a busy timeout, immediate
// transactions, and one connection. It does not migrate.
func openSQLite(t *testing.T) *sql.DB {
	t.Helper()
	path := filepath.Join(t.TempDir(), "jobs.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)"+
		"&_pragma=synchronous(NORMAL)&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("close the database: %v", err)
		}
	})
	return db
}

// newSQLite returns a SQLite database with River's tables.
func newSQLite(t *testing.T) *sql.DB {
	t.Helper()
	db := openSQLite(t)
	migrator, err := rivermigrate.New(riversqlite.New(db), &rivermigrate.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	res, err := migrator.Migrate(t.Context(), rivermigrate.DirectionUp, nil)
	if err != nil {
		t.Fatalf("River's migrations: %v", err)
	}
	if len(res.Versions) == 0 {
		t.Fatal("River applied no migration to a new database")
	}
	return db
}

type txKey struct{}

// txState is the transaction of a context of sqliteTx.WithTx.
type txState struct {
	tx   *sql.Tx
	done atomic.Bool
}

// sqliteTx is the transaction seam of a SQLite store (store.Transactor):
// WithTx puts its *sql.Tx in the context, and a nested WithTx joins it.
type sqliteTx struct{ db *sql.DB }

func (s sqliteTx) WithTx(ctx context.Context, fn func(ctx context.Context) error) error {
	if _, ok := txFromContext(ctx); ok {
		return fn(ctx)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	st := &txState{tx: tx}
	committed := false
	defer func() {
		st.done.Store(true)
		if !committed {
			_ = tx.Rollback()
		}
	}()
	if err := fn(context.WithValue(ctx, txKey{}, st)); err != nil {
		return err
	}
	committed = true
	return tx.Commit()
}

// txFromContext is what a SQLite store passes as Config.TxFromContext.
func txFromContext(ctx context.Context) (*sql.Tx, bool) {
	st, ok := ctx.Value(txKey{}).(*txState)
	if !ok || st.done.Load() {
		return nil, false
	}
	return st.tx, true
}

// testConfig makes a Scheduler fast enough for tests: it polls every 50 ms
// and retries after 1 ms. Under the race detector it polls every 250 ms: a
// poll (a fetch of due jobs) then costs milliseconds of CPU, and the idle
// Schedulers of the suite's parallel tests would starve the busy ones.
// Jobs enqueued meanwhile still start within about 50 ms, when River's
// SQLite listener sees their notification.
func testConfig() riverjobs.Config {
	poll := 50 * time.Millisecond
	if raceEnabled {
		poll = 250 * time.Millisecond
	}
	return riverjobs.Config{
		Name:                  "sqlite",
		TxFromContext:         txFromContext,
		FetchPollInterval:     poll,
		RetryBackoff:          func(int) time.Duration { return time.Millisecond },
		DisableStaggeredStart: true,
	}
}

func newScheduler(t *testing.T, db *sql.DB) *riverjobs.Scheduler {
	t.Helper()
	s, err := riverjobs.New(riversqlite.New(db), testConfig())
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s
}

// waitIdle waits until river_job holds no job that is waiting or running.
func waitIdle(ctx context.Context, db *sql.DB) error {
	for {
		var n int
		err := db.QueryRowContext(ctx, `SELECT count(*) FROM river_job
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

// The Scheduler on River's SQLite driver, on one connection, passes the
// conformance suite, transactions included.
func TestSQLiteConformance(t *testing.T) {
	t.Parallel()
	// River completes jobs on SQLite one statement each, which River
	// prepares anew each time: a few tens of jobs a second under the race
	// detector, where 200 take seconds even on an idle machine.
	fleetJobs := 0
	if raceEnabled {
		fleetJobs = 40
	}
	jobstest.Run(t, func(t *testing.T) *jobstest.Env {
		db := newSQLite(t)
		return &jobstest.Env{
			Scheduler: newScheduler(t, db),
			Tx:        sqliteTx{db},
			NewPeer:   func(t *testing.T) jobs.Scheduler { return newScheduler(t, db) },
			Idle:      func(ctx context.Context) error { return waitIdle(ctx, db) },
			FleetJobs: fleetJobs,
		}
	})
}

// A job enqueued in a transaction is a row of it: the transaction sees it,
// it is gone after a rollback, and it runs after a commit. The only
// connection is the transaction's meanwhile: an Enqueue that did not use it
// would wait for it forever, and the deadline of ctx turns that into a
// failure.
func TestSQLiteEnqueueIsPartOfTheTransaction(t *testing.T) {
	t.Parallel()
	db := newSQLite(t)
	s := newScheduler(t, db)
	ran := make(chan string, 2)
	if err := s.Register("k", func(_ context.Context, run *jobs.Run) error {
		ran <- string(run.Args)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Stop(context.Background()); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	count := func(ctx context.Context, q interface {
		QueryRowContext(context.Context, string, ...any) *sql.Row
	}, arg string) int {
		t.Helper()
		var n int
		if err := q.QueryRowContext(ctx, `SELECT count(*) FROM river_job WHERE json_extract(args, '$.args') = ?`,
			arg).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	tr := sqliteTx{db}

	errRollback := errors.New("roll back")
	err := tr.WithTx(ctx, func(ctx context.Context) error {
		if err := s.Enqueue(ctx, jobs.Job{Kind: "k", Args: []byte(`"rolled back"`)}); err != nil {
			return err
		}
		tx, _ := txFromContext(ctx)
		if n := count(ctx, tx, "rolled back"); n != 1 {
			t.Errorf("the transaction sees %d jobs, want 1", n)
		}
		return errRollback
	})
	if !errors.Is(err, errRollback) {
		t.Fatalf("WithTx = %v, want the rollback error", err)
	}
	if n := count(ctx, db, "rolled back"); n != 0 {
		t.Errorf("%d jobs remain after the rollback", n)
	}

	if err := tr.WithTx(ctx, func(ctx context.Context) error {
		return s.Enqueue(ctx, jobs.Job{Kind: "k", Args: []byte(`"committed"`)})
	}); err != nil {
		t.Fatalf("WithTx: %v", err)
	}
	select {
	case got := <-ran:
		if got != `"committed"` {
			t.Errorf("the job that ran has Args %s, want the committed one", got)
		}
	case <-ctx.Done():
		t.Fatal("the committed job never ran")
	}
	if err := waitIdle(ctx, db); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-ran:
		t.Errorf("another job ran, with Args %s", got)
	default:
	}
	if n := count(ctx, db, "committed"); n != 1 {
		t.Errorf("%d committed jobs, want 1", n)
	}
}

func TestSQLiteStartWithoutMigrations(t *testing.T) {
	t.Parallel()
	s := newScheduler(t, openSQLite(t))
	if err := s.Register("k", func(context.Context, *jobs.Run) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(t.Context()); err == nil || !strings.Contains(err.Error(), "run Migrate") {
		t.Errorf("Start without River's tables = %v, want an error that says to run Migrate", err)
	}
	if err := s.Enqueue(t.Context(), jobs.Job{Kind: "k"}); err == nil || !strings.HasPrefix(err.Error(), "sqlite: ") {
		t.Errorf("Enqueue without River's tables = %v, want an error of sqlite", err)
	}
}

func TestNewErrors(t *testing.T) {
	t.Parallel()
	db := openSQLite(t)
	for name, mod := range map[string]func(*riverjobs.Config){
		"no Name":                   func(c *riverjobs.Config) { c.Name = "" },
		"no TxFromContext":          func(c *riverjobs.Config) { c.TxFromContext = nil },
		"negative workers":          func(c *riverjobs.Config) { c.Workers = -1 },
		"negative poll interval":    func(c *riverjobs.Config) { c.FetchPollInterval = -time.Second },
		"job timeout below -1":      func(c *riverjobs.Config) { c.JobTimeout = -2 },
		"rescue before job timeout": func(c *riverjobs.Config) { c.JobTimeout, c.RescueStuckJobsAfter = time.Hour, time.Minute },
		"ID longer than 100 bytes":  func(c *riverjobs.Config) { c.ID = strings.Repeat("x", 101) },
	} {
		cfg := testConfig()
		mod(&cfg)
		if _, err := riverjobs.New(riversqlite.New(db), cfg); err == nil {
			t.Errorf("%s: New succeeded", name)
		}
	}
	if _, err := riverjobs.New(nil, testConfig()); err == nil {
		t.Error("New with a nil driver succeeded")
	}
	// A poll interval below River's default cooldown (100 ms) is valid.
	cfg := testConfig()
	cfg.FetchPollInterval = time.Millisecond
	if _, err := riverjobs.New(riversqlite.New(db), cfg); err != nil {
		t.Errorf("New with a poll interval of 1ms: %v", err)
	}
}
