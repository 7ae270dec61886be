package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

// Defaults of Options.
const (
	DefaultBusyTimeout = 10 * time.Second
	// MemoryPath opens a private in-memory database (see [Open]).
	MemoryPath = ":memory:"
)

// Options configure [Open] and [Connect]. A nil *Options means the zero
// value: every field takes its default.
type Options struct {
	// ReadConns is the size of the read pool: the most connections that
	// read outside a transaction at once, beside the one writer
	// connection. Defaults to the larger of 4 and GOMAXPROCS. A private
	// in-memory database has no read pool: its one connection serves
	// everything.
	ReadConns int

	// BusyTimeout is how long a connection waits for a lock that another
	// process holds on the file before its statement fails with
	// store.ErrUnavailable. Within one process the writer connection is
	// taken in turn and never waits on SQLite's lock. Defaults to
	// [DefaultBusyTimeout].
	BusyTimeout time.Duration

	// Synchronous is SQLite's synchronous setting of the writer
	// connection: "FULL" (the default) makes every commit durable on disk
	// before it is acknowledged, as Postgres does by default; "NORMAL"
	// keeps every commit through a crash of the process (kill -9) but may
	// lose the last ones when the machine loses power. A transaction
	// started with a context marked by store.WithRelaxedDurability runs
	// with NORMAL whatever this says.
	Synchronous string

	// Logger receives the Store's warnings. Defaults to discarding them.
	Logger *slog.Logger

	// Scheduler configures the Scheduler that [Connect] makes (hosts that
	// call [NewScheduler] give it its SchedulerConfig). Its Logger
	// defaults to Logger.
	Scheduler SchedulerConfig
}

type resolved struct {
	readConns   int
	busyTimeout time.Duration
	synchronous string
	logger      *slog.Logger
}

func (o *Options) resolve() (resolved, error) {
	var r resolved
	if o != nil {
		r.readConns, r.busyTimeout, r.synchronous, r.logger = o.ReadConns, o.BusyTimeout, o.Synchronous, o.Logger
	}
	if r.readConns < 0 {
		return r, fmt.Errorf("sqlite: ReadConns %d is negative", r.readConns)
	}
	if r.readConns == 0 {
		r.readConns = max(4, runtime.GOMAXPROCS(0))
	}
	if r.busyTimeout < 0 {
		return r, fmt.Errorf("sqlite: BusyTimeout %s is negative", r.busyTimeout)
	}
	if r.busyTimeout == 0 {
		r.busyTimeout = DefaultBusyTimeout
	}
	switch strings.ToUpper(r.synchronous) {
	case "":
		r.synchronous = "FULL"
	case "FULL", "NORMAL":
		r.synchronous = strings.ToUpper(r.synchronous)
	default:
		return r, fmt.Errorf("sqlite: Synchronous %q: want FULL or NORMAL", r.synchronous)
	}
	if r.logger == nil {
		r.logger = slog.New(slog.DiscardHandler)
	}
	return r, nil
}

// Store is a connect.Store on one SQLite database file. Make one with
// [Open] (or [Connect], which adds the Scheduler) and
// [Store.Close] it when done. It is safe for concurrent use.
//
// It writes through one connection, taken in turn by the transactions and
// the writes of the process, and reads outside transactions through a pool
// of read-only connections that run beside the writer (the file is in WAL
// mode).
type Store struct {
	w      *sql.DB // the writer: one connection
	r      *sql.DB // the read pool; w itself for an in-memory database
	path   string
	opts   resolved
	closed atomic.Bool
	hot    preparedStmts // the statements of the hot paths (core_stmts.go)

	// anchor keeps an in-memory database alive (nil for a file).
	anchor     *sql.DB
	anchorConn *sql.Conn
}

func (s *Store) closeAnchor() error {
	var errs []error
	if s.anchorConn != nil {
		errs = append(errs, s.anchorConn.Close())
	}
	if s.anchor != nil {
		errs = append(errs, s.anchor.Close())
	}
	return errors.Join(errs...)
}

var memoryDatabases atomic.Int64

// Open opens the SQLite database at path, creating the file when it is
// missing, applies the migrations it lacks and returns a Store
// on it. path is a file name; [MemoryPath] (":memory:") opens a private
// in-memory database instead, which lives as long as the Store and serves
// every call through one connection (for tests).
//
// More than one Store may open a file, in this process or another on the
// same machine (a tool beside the server): SQLite serialises their writes,
// and the change feed tells a Service of the others' changes. Run one
// Service on a file; several instances need store/postgres (see the
// package documentation).
func Open(ctx context.Context, path string, opts *Options) (*Store, error) {
	o, err := opts.resolve()
	if err != nil {
		return nil, err
	}
	if path == "" {
		return nil, errors.New("sqlite: the database path is empty")
	}
	s := &Store{path: path, opts: o}
	if path == MemoryPath {
		// A database of SQLite's memdb VFS lives as long as a connection
		// to it is open: the anchor keeps one open until Close, so that
		// the writer may drop its connection (database/sql does, after an
		// interrupted statement) and open another to the same data.
		name := fmt.Sprintf("file:/connect-memory-%d?vfs=memdb&", memoryDatabases.Add(1))
		s.anchor, err = sql.Open("sqlite", name)
		if err == nil {
			s.anchorConn, err = s.anchor.Conn(ctx)
		}
		if err != nil {
			s.closeAnchor()
			return nil, fmt.Errorf("sqlite: open: %w", err)
		}
		s.w, err = sql.Open("sqlite", name+"_txlock=immediate&"+pragmas(o, o.synchronous, false))
		if err != nil {
			s.closeAnchor()
			return nil, fmt.Errorf("sqlite: open: %w", err)
		}
		s.w.SetMaxOpenConns(1)
		s.w.SetMaxIdleConns(1)
		s.w.SetConnMaxIdleTime(0)
		s.w.SetConnMaxLifetime(0)
		s.r = s.w
	} else {
		abs, err := filepath.Abs(path)
		if err != nil {
			return nil, fmt.Errorf("sqlite: %w", err)
		}
		s.path = abs
		base := "file:" + (&url.URL{Path: abs}).EscapedPath() + "?"
		s.w, err = sql.Open("sqlite", base+"_txlock=immediate&"+pragmas(o, o.synchronous, true))
		if err != nil {
			return nil, fmt.Errorf("sqlite: open: %w", err)
		}
		s.w.SetMaxOpenConns(1)
		s.w.SetMaxIdleConns(1)
		s.w.SetConnMaxIdleTime(0)
		s.w.SetConnMaxLifetime(0)
		// The writer sets WAL on the file first; the readers then find it.
		if err := s.w.PingContext(ctx); err != nil {
			s.w.Close()
			return nil, dbErr(ctx, "open", err)
		}
		// The readers map the file (mmapSize): a read whose pages are not
		// in the connection's own cache takes them from the OS's page
		// cache without a read call and a copy each; a commit of the
		// writer empties every reader's own cache.
		s.r, err = sql.Open("sqlite", base+pragmas(o, "", false)+fmt.Sprintf("&_pragma=mmap_size(%d)", mmapSize)+"&_pragma=query_only(1)")
		if err != nil {
			s.w.Close()
			return nil, fmt.Errorf("sqlite: open: %w", err)
		}
		s.r.SetMaxOpenConns(o.readConns)
		s.r.SetMaxIdleConns(o.readConns)
		s.r.SetConnMaxIdleTime(0)
		s.r.SetConnMaxLifetime(0)
	}
	if err := migrate(ctx, s); err != nil {
		s.Close()
		return nil, err
	}
	if err := s.hot.prepare(ctx, s); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// mmapSize is how much of the file a reader maps, at most: 256 MiB.
const mmapSize = 256 << 20

// pragmas returns the _pragma query parameters of a connection.
func pragmas(o resolved, synchronous string, wal bool) string {
	q := []string{
		fmt.Sprintf("_pragma=busy_timeout(%d)", o.busyTimeout.Milliseconds()),
		"_pragma=foreign_keys(1)",
	}
	if wal {
		q = append(q, "_pragma=journal_mode(WAL)")
	}
	if synchronous != "" {
		q = append(q, "_pragma=synchronous("+synchronous+")")
	}
	return strings.Join(q, "&")
}

// DB returns the writer's *sql.DB: one connection, taken in turn. The
// Scheduler of [Connect] runs River on it. A host that writes tables of its
// own in the file uses it too, or [TxFromContext] inside [Store.WithTx]:
// a write through DB made while a transaction of the Store is open on the
// same goroutine waits for that transaction forever.
func (s *Store) DB() *sql.DB { return s.w }

// Path returns the absolute path of the database file, or MemoryPath.
func (s *Store) Path() string { return s.path }

// Durable reports that the data outlives the process, except for an
// in-memory database. It implements store.Durable.
func (s *Store) Durable() bool { return s.path != MemoryPath }

// Close closes the database. Calls after it fail.
func (s *Store) Close() error {
	if !s.closed.CompareAndSwap(false, true) {
		return nil
	}
	var errs []error
	if s.r != s.w {
		errs = append(errs, s.r.Close())
	}
	errs = append(errs, s.w.Close(), s.closeAnchor())
	return errors.Join(errs...)
}
