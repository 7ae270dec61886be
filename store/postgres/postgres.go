package postgres

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
	"github.com/lib/pq/pqerror"

	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/internal/batch"
	"github.com/embedauth/connect/internal/jsonvalue"
	"github.com/embedauth/connect/store"
)

// DefaultSchema is the schema that holds the tables when Options.Schema is
// empty.
const DefaultSchema = "connect"

// Options configure a Store, Migrate, a Scheduler, a RateLimiter and the
// pool [Open] makes; pass the same Options to each, or to [Connect], which
// makes them all. A nil *Options means the
// zero value: every field takes its default.
type Options struct {
	// Schema is the Postgres schema that holds every table, so that they
	// live safely in the host's database. It is 1 to 63 ASCII letters,
	// digits and underscores, not starting with a digit, and is used
	// verbatim (case-sensitive). Defaults to [DefaultSchema].
	Schema string

	// Now returns the current time. Only RateLimiter uses it, to place
	// requests in windows; tests set it to control time. Store methods
	// persist the timestamps of the records they are given. Defaults to
	// time.Now.
	Now func() time.Time

	// RateLimitMaxLease caps the lease of a [RateLimiter]: the block of a
	// window's quota it takes from the rate_limits table in one statement
	// and then admits requests from without a round trip. A lease is
	// limit/64 requests (at least 1) and at most RateLimitMaxLease.
	// Defaults to [DefaultRateLimitMaxLease] (1000); 1 counts every
	// request in the table, as before leases. It must not be negative.
	// See [RateLimiter] for what the size trades.
	RateLimitMaxLease int

	// DisablePreparedStatements makes the Store send every query unprepared,
	// as lib/pq does for a query with arguments: an unnamed statement parsed
	// on every call, in two round trips. Set it when the Store reaches
	// Postgres through PgBouncer in transaction (or statement) pooling mode,
	// where a server-side prepared statement does not survive from one
	// transaction to the next (PgBouncer 1.21 and later can track them when
	// max_prepared_statements is set).
	//
	// By default the Store runs its hottest queries (GetConnection,
	// UpdateConnection, CountConnections, GetIntegration, GetEnvironment,
	// GetEnvironmentByName, GetAPIKeyByHash) through statements it prepares
	// on first use and keeps until [Store.Close]: one round trip per call,
	// and parsed once per connection rather than on every call.
	DisablePreparedStatements bool

	// MaxConns is the size of the pool [Open] makes: the most Postgres
	// sessions this process opens at once, and the number it keeps open
	// while idle (MaxOpenConns and MaxIdleConns), so that a busy pool never
	// closes and reopens sessions. Defaults to [DefaultMaxConns] (20). See
	// the package documentation's "Connections" section for how to size
	// it against the Scheduler's workers and Postgres' max_connections.
	MaxConns int
	// MinConns is the number of sessions [Open] opens before it returns
	// (at most MaxConns), so that the first burst of requests does not wait
	// for Postgres to fork sessions, and a pool whose concurrency rises now
	// and then (a request arriving while River's maintenance and the
	// change feed's poll hold sessions) does not open one in the middle of
	// the load. They close like any other after ConnMaxIdleTime unused.
	// Defaults to [DefaultMinConns] (8); -1 opens none ahead.
	MinConns int
	// ConnMaxIdleTime is how long a session of Open's pool may stay unused
	// before it is closed. Defaults to [DefaultConnMaxIdleTime] (30
	// minutes); -1 keeps idle sessions open.
	ConnMaxIdleTime time.Duration
	// ConnMaxLifetime is how long after it opened a session of Open's pool
	// is closed (once released) and replaced. Defaults to
	// [DefaultConnMaxLifetime] (1 hour); -1 keeps sessions forever.
	ConnMaxLifetime time.Duration

	// Logger receives the Store's warnings: [New] warns once when the
	// *sql.DB it is given will churn (open and close Postgres sessions
	// under load). Defaults to discarding them.
	Logger *slog.Logger

	// Scheduler configures the Scheduler that [Connect] makes (hosts that
	// call [NewScheduler] give it its SchedulerConfig). Its Logger
	// defaults to Logger.
	Scheduler SchedulerConfig
	// RateLimitRequests and RateLimitWindow are the limit of the
	// RateLimiter that [Connect] makes: requests per account and window.
	// They default to [DefaultRateLimitRequests] (3000) and
	// [DefaultRateLimitWindow] (1 minute), connect.Config's defaults;
	// RateLimitRequests must not be negative, RateLimitWindow must be a
	// multiple of a microsecond. A host that wants no rate limit leaves
	// the Backend's RateLimiter out of connect.Config and sets
	// connect.Config.RateLimitRequests to -1.
	RateLimitRequests int
	RateLimitWindow   time.Duration
}

var schemaPattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}$`)

// resolved is Options with defaults applied and the schema validated.
type resolved struct {
	schema     string // unquoted
	quoted     string // quoted identifier, safe to splice into SQL
	now        func() time.Time
	maxLease   int
	noPrepared bool
	logger     *slog.Logger

	maxConns, minConns               int
	connMaxIdleTime, connMaxLifetime time.Duration

	rateLimitRequests int
	rateLimitWindow   time.Duration
}

func (o *Options) resolve() (resolved, error) {
	var r resolved
	if o != nil {
		r.schema, r.now, r.noPrepared, r.logger = o.Schema, o.Now, o.DisablePreparedStatements, o.Logger
		r.maxLease = o.RateLimitMaxLease
		r.maxConns, r.minConns, r.connMaxIdleTime, r.connMaxLifetime = o.MaxConns, o.MinConns, o.ConnMaxIdleTime, o.ConnMaxLifetime
		r.rateLimitRequests, r.rateLimitWindow = o.RateLimitRequests, o.RateLimitWindow
	}
	if r.logger == nil {
		r.logger = slog.New(slog.DiscardHandler)
	}
	if r.schema == "" {
		r.schema = DefaultSchema
	}
	if !schemaPattern.MatchString(r.schema) {
		return r, fmt.Errorf("postgres: invalid schema name %q: want 1 to 63 letters, digits or underscores, not starting with a digit", r.schema)
	}
	r.quoted = pq.QuoteIdentifier(r.schema)
	if r.now == nil {
		r.now = time.Now
	}
	if r.maxLease == 0 {
		r.maxLease = DefaultRateLimitMaxLease
	}
	return r, nil
}

// Store is a connect.Store on Postgres. Create one with [New] after
// [Migrate] has created its tables, and [Store.Close] it before closing the
// *sql.DB. It is safe for concurrent use.
type Store struct {
	raw   *sql.DB
	db    *sqlx.DB
	sqls  []string   // the text of each query in the schema, by query id
	stmts *stmtCache // nil when prepared statements are disabled
	pool  *poolWatch
	reads *batch.Batcher[connKey, *connectionRow] // GetConnection outside transactions
}

// New returns a Store on db whose tables live in opts.Schema. It does not
// touch the database: call [Migrate] first (once per deployment, or at
// start-up). The caller keeps ownership of db and closes it, after
// [Store.Close].
//
// Unless [Options.DisablePreparedStatements] is set, the Store prepares its
// hot queries on first use and keeps them prepared on the pooled
// connections. Create it after Migrate has run: Postgres refuses to run a
// statement prepared before a migration changed the columns it returns
// ("cached plan must not change result type"). Statements name their tables
// with the schema, so the connections' search_path does not matter.
//
// New logs a warning (to opts.Logger), once per Store, when db will churn:
// at once when db has no MaxOpenConns limit, or later, from the pool's
// statistics, when db closes connections it has just used because its
// MaxIdleConns (database/sql's default is 2) is below the connections in use
// (sql.DBStats.MaxIdleClosed grows). [Open] makes a pool that does neither.
func New(db *sql.DB, opts *Options) (*Store, error) {
	if db == nil {
		return nil, errors.New("postgres: db is nil")
	}
	o, err := opts.resolve()
	if err != nil {
		return nil, err
	}
	s := &Store{raw: db, db: sqlx.NewDb(db, "postgres"), sqls: schemaSQL(o.quoted), pool: newPoolWatch(db, o.logger)}
	s.reads = batch.New(batch.Config[connKey, *connectionRow]{
		Run: s.readConnections, MaxBatch: DefaultReadBatch, MaxInFlight: DefaultReadsInFlight})
	if !o.noPrepared {
		s.stmts = &stmtCache{lazy: make([]lazyStmt, len(queries))}
	}
	return s, nil
}

type txKey struct{}

// txState is what WithTx puts in the context: the transaction and the pool
// it belongs to, so that a Store on another pool does not use it.
type txState struct {
	db   *sql.DB
	tx   *sqlx.Tx
	done atomic.Bool // set once the transaction has ended

	mu          sync.Mutex
	afterCommit []func() // queued by AfterCommit; guarded by mu
}

// liveTx returns the transaction of ctx when it belongs to db and has not
// ended.
func liveTx(ctx context.Context, db *sql.DB) (*txState, bool) {
	st, ok := ctx.Value(txKey{}).(*txState)
	if !ok || st.db != db || st.done.Load() {
		return nil, false
	}
	return st, true
}

// TxFromContext returns the transaction that [Store.WithTx] runs fn in, when
// ctx is (derived from) the context fn received and WithTx has not returned
// yet. A host uses it to make its own writes, or to enqueue jobs, in the same
// transaction as the Store's.
func TxFromContext(ctx context.Context) (*sql.Tx, bool) {
	st, ok := ctx.Value(txKey{}).(*txState)
	if !ok || st.done.Load() {
		return nil, false
	}
	return st.tx.Tx, true
}

// ext returns the transaction of ctx when it belongs to the store's pool,
// else the pool.
func (s *Store) ext(ctx context.Context) sqlx.ExtContext {
	if st, ok := liveTx(ctx, s.raw); ok {
		return st.tx
	}
	return s.db
}

// WithTx runs fn in a transaction (READ COMMITTED) and commits it when fn
// returns nil; otherwise, or when fn panics, it rolls it back. After a
// commit it runs the functions queued by [Store.AfterCommit]. Store calls
// made with the context fn receives run in the transaction. A WithTx called
// with that context joins the transaction instead of starting another one.
//
// Inside the transaction a call that fails with store.ErrNotFound or
// store.ErrConflict leaves the transaction usable. Other database errors
// abort it: every later statement fails until fn returns.
//
// fn must not use its context from several goroutines at once: a
// transaction is one connection. Once WithTx has returned, the context works
// like one without a transaction.
func (s *Store) WithTx(ctx context.Context, fn func(ctx context.Context) error) error {
	if _, ok := liveTx(ctx, s.raw); ok {
		return fn(ctx)
	}
	s.pool.check(s.raw)
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return dbErr(ctx, "begin", err, nil)
	}
	st := &txState{db: s.raw, tx: tx}
	committed := false
	defer func() {
		st.done.Store(true)
		if !committed {
			_ = tx.Rollback()
		}
	}()
	if store.RelaxedDurability(ctx) {
		if _, err := tx.ExecContext(ctx, "SET LOCAL synchronous_commit = off"); err != nil {
			return dbErr(ctx, "set synchronous_commit", err, nil)
		}
	}
	if err := fn(context.WithValue(ctx, txKey{}, st)); err != nil {
		return err
	}
	committed = true
	if err := tx.Commit(); err != nil {
		return dbErr(ctx, "commit", err, nil)
	}
	st.done.Store(true)
	st.mu.Lock()
	hooks := st.afterCommit
	st.afterCommit = nil
	st.mu.Unlock()
	for _, h := range hooks {
		h()
	}
	return nil
}

// AfterCommit runs fn once the transaction of ctx (from [Store.WithTx] on
// this Store's pool) has committed, and never if it rolls back: the
// outermost WithTx runs the queued functions in order after the commit,
// before it returns. Outside a transaction, or with the context of one that
// has ended, AfterCommit runs fn at once. It implements store.CommitHooker.
func (s *Store) AfterCommit(ctx context.Context, fn func()) {
	if st, ok := liveTx(ctx, s.raw); ok {
		st.mu.Lock()
		if !st.done.Load() {
			st.afterCommit = append(st.afterCommit, fn)
			st.mu.Unlock()
			return
		}
		st.mu.Unlock()
	}
	fn()
}

// dbErr wraps err from operation op so that it matches the store sentinel
// errors: a unique violation is store.ErrConflict, a foreign key violation is
// fk (store.ErrConflict when fk is nil), bad data is store.ErrInvalid and a
// failure worth retrying is store.ErrUnavailable. When ctx has ended, the
// error matches ctx.Err() instead: the statement was canceled.
func dbErr(ctx context.Context, op string, err error, fk error) error {
	if err == nil {
		return nil
	}
	if ctxErr := ctx.Err(); ctxErr != nil && !errors.Is(err, ctxErr) {
		return fmt.Errorf("postgres: %s: %w: %w", op, ctxErr, err)
	}
	if kind := classify(err, fk); kind != nil {
		return fmt.Errorf("postgres: %s: %w: %w", op, kind, err)
	}
	return fmt.Errorf("postgres: %s: %w", op, err)
}

func classify(err error, fk error) error {
	if pe := pq.As(err); pe != nil {
		switch code := pe.Code; {
		case code == pqerror.UniqueViolation:
			return store.ErrConflict
		case code == pqerror.ForeignKeyViolation:
			if fk != nil {
				return fk
			}
			return store.ErrConflict
		case code == pqerror.NotNullViolation, code == pqerror.CheckViolation,
			code.Class() == pqerror.ClassDataException:
			return store.ErrInvalid
		case code == pqerror.TRSerializationFailure, code == pqerror.TRDeadlockDetected,
			code.Class() == pqerror.ClassConnectionException,
			code.Class() == pqerror.ClassInsufficientResources,
			code == pqerror.AdminShutdown, code == pqerror.CrashShutdown,
			code == pqerror.CannotConnectNow:
			return store.ErrUnavailable
		}
		return nil
	}
	if errors.Is(err, driver.ErrBadConn) {
		return store.ErrUnavailable
	}
	if ne, ok := errors.AsType[net.Error](err); ok && ne != nil {
		return store.ErrUnavailable
	}
	return nil
}

// notFound and conflict build the errors of a missing record and of a
// refused write.
func notFound(format string, args ...any) error {
	return fmt.Errorf("postgres: "+format+": %w", append(args, store.ErrNotFound)...)
}

func conflict(format string, args ...any) error {
	return fmt.Errorf("postgres: "+format+": %w", append(args, store.ErrConflict)...)
}

// jsonArg encodes v for a jsonb parameter; nil maps and slices become SQL
// NULL. Text that is not UTF-8 is store.ErrInvalid, as in a text column
// (json.Marshal would store U+FFFD in its place), and so is U+0000, which
// jsonb refuses.
func jsonArg(field string, v any) (any, error) {
	// Empty values are common (no config, no errors): skip the encoder.
	switch x := v.(type) {
	case map[string]any:
		if x != nil && len(x) == 0 {
			return "{}", nil
		}
	case map[string]string:
		if x != nil && len(x) == 0 {
			return "{}", nil
		}
	case []connections.Error:
		if x != nil && len(x) == 0 {
			return "[]", nil
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("postgres: %s: %w: %v", field, store.ErrInvalid, err)
	}
	if string(b) == "null" {
		return nil, nil
	}
	if replacedInvalidUTF8(b) {
		return nil, fmt.Errorf("postgres: %s: %w: text is not valid UTF-8", field, store.ErrInvalid)
	}
	return string(b), nil
}

// replacedInvalidUTF8 reports whether json.Marshal replaced invalid UTF-8
// in its output: it writes each invalid byte as the escape \ufffd, while a
// real U+FFFD is written as itself and a backslash as \\.
func replacedInvalidUTF8(b []byte) bool {
	for i := 0; ; {
		j := bytes.Index(b[i:], []byte(`\ufffd`))
		if j < 0 {
			return false
		}
		j += i
		n := 0 // backslashes before the escape's own
		for k := j - 1; k >= 0 && b[k] == '\\'; k-- {
			n++
		}
		if n%2 == 0 {
			return true
		}
		i = j + 1
	}
}

// decodeJSON decodes a jsonb column into dst, leaving dst alone on SQL NULL.
func decodeJSON(field string, b []byte, dst any) error {
	if b == nil {
		return nil
	}
	// Empty values are common (no tags, no errors): skip the decoder.
	switch string(b) {
	case "{}":
		switch d := dst.(type) {
		case *map[string]any:
			*d = map[string]any{}
			return nil
		case *map[string]string:
			*d = map[string]string{}
			return nil
		}
	case "[]":
		if d, ok := dst.(*[]connections.Error); ok {
			*d = []connections.Error{}
			return nil
		}
	}
	if err := jsonvalue.Unmarshal(string(b), dst); err != nil {
		return fmt.Errorf("postgres: decode %s: %w", field, err)
	}
	return nil
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// likePattern returns a LIKE pattern (with ESCAPE '\') matching strings
// that contain sub.
func likePattern(sub string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return "%" + r.Replace(sub) + "%"
}

// where accumulates the conditions and arguments of a dynamic query.
type where struct {
	conds []string
	args  []any
}

// add appends cond, in which "?" stands for the next argument.
func (w *where) add(cond string, arg any) {
	w.args = append(w.args, arg)
	w.conds = append(w.conds, strings.Replace(cond, "?", fmt.Sprintf("$%d", len(w.args)), 1))
}

// arg appends a bare argument and returns its placeholder.
func (w *where) arg(v any) string {
	w.args = append(w.args, v)
	return fmt.Sprintf("$%d", len(w.args))
}

func (w *where) String() string {
	if len(w.conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(w.conds, " AND ")
}

// Durable reports true: the Store's data outlives the process, so
// connect.New requires a Scheduler that keeps its jobs in the same database
// (NewScheduler). It implements store.Durable.
func (s *Store) Durable() bool { return true }
