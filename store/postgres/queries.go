package postgres

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/jmoiron/sqlx"
)

// query is one SQL statement of the Store, written with "{s}" standing for
// the quoted schema. [New] splices the schema into every query once.
type query struct {
	id       int // index in queries, Store.sqls and stmtCache.lazy
	template string
	prepared bool // run through a cached prepared statement, unless disabled
}

// queries lists every query, by id. It is filled during package
// initialisation and read-only afterwards.
var queries []*query

func defineQuery(template string, prepared bool) *query {
	q := &query{id: len(queries), template: template, prepared: prepared}
	queries = append(queries, q)
	return q
}

// newQuery defines a query that always runs as is: lib/pq parses and plans
// it on every call.
func newQuery(template string) *query { return defineQuery(template, false) }

// newPreparedQuery defines a hot query, which the Store runs through a
// prepared statement unless [Options.DisablePreparedStatements] is set.
func newPreparedQuery(template string) *query { return defineQuery(template, true) }

// schemaSQL returns the text of every query with the quoted schema spliced
// in, by query id.
func schemaSQL(quoted string) []string {
	out := make([]string, len(queries))
	for i, q := range queries {
		out[i] = strings.ReplaceAll(q.template, "{s}", quoted)
	}
	return out
}

// stmtCache holds the prepared statements of a Store, each prepared on the
// *sql.DB the first time it is needed outside a transaction; database/sql
// then prepares it on each pooled connection that runs it.
type stmtCache struct {
	// mu is held for reading while a cached statement is acquired and
	// runs, and for writing by Close, so that Close never closes a
	// statement in use and nothing is prepared after it.
	mu     sync.RWMutex
	closed bool       // guarded by mu
	lazy   []lazyStmt // by query id; those of unprepared queries stay empty
}

type lazyStmt struct {
	mu   sync.Mutex // serialises preparation
	stmt atomic.Pointer[sqlx.Stmt]
}

// get returns the statement, preparing it on db the first time. A failed
// preparation is not cached: the next call tries again.
func (l *lazyStmt) get(ctx context.Context, db *sqlx.DB, text string) (*sqlx.Stmt, error) {
	if st := l.stmt.Load(); st != nil {
		return st, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if st := l.stmt.Load(); st != nil {
		return st, nil
	}
	st, err := db.PreparexContext(ctx, text)
	if err != nil {
		return nil, err
	}
	l.stmt.Store(st)
	return st, nil
}

// acquire returns the prepared statement to run q with in ctx, or nil when q
// runs unprepared: prepared statements are disabled or closed, q is not a
// prepared query, or ctx carries a transaction and the statement has not
// been prepared yet. Preparing it then would take a second connection from
// the pool while this goroutine holds the transaction's, which waits forever
// when every connection is held that way; the call runs unprepared on the
// transaction instead, and a later call outside a transaction prepares it.
//
// Inside a transaction the statement is bound to it with Tx.StmtContext,
// which reuses the statement already prepared on the transaction's
// connection, or prepares it there.
//
// When the statement is not nil the caller must call release(st, bound)
// once it has run.
func (s *Store) acquire(ctx context.Context, q *query) (st *sqlx.Stmt, bound bool, err error) {
	s.pool.check(s.raw)
	c := s.stmts
	if c == nil || !q.prepared {
		return nil, false, nil
	}
	c.mu.RLock()
	if c.closed {
		c.mu.RUnlock()
		return nil, false, nil
	}
	l := &c.lazy[q.id]
	tx, inTx := liveTx(ctx, s.raw)
	if inTx {
		st = l.stmt.Load()
		if st == nil {
			c.mu.RUnlock()
			return nil, false, nil
		}
		return tx.tx.StmtxContext(ctx, st), true, nil
	}
	st, err = l.get(ctx, s.db, s.sqls[q.id])
	if err != nil {
		c.mu.RUnlock()
		return nil, false, err
	}
	return st, false, nil
}

// release ends the use of a statement returned by acquire.
func (s *Store) release(st *sqlx.Stmt, bound bool) {
	if bound {
		// Closing the transaction's copy keeps the statement prepared on
		// the connection for later calls.
		_ = st.Close()
	}
	s.stmts.mu.RUnlock()
}

// get runs q, which returns one row, and scans it into dest. No row is
// sql.ErrNoRows.
func (s *Store) get(ctx context.Context, q *query, dest any, args ...any) error {
	st, bound, err := s.acquire(ctx, q)
	if err != nil {
		return err
	}
	// A row type that lists its scan targets skips sqlx's reflection: the
	// hot reads use it.
	targets, direct := dest.(interface{ scanTargets() []any })
	if st == nil {
		if direct {
			return s.ext(ctx).QueryRowxContext(ctx, s.sqls[q.id], args...).Scan(targets.scanTargets()...)
		}
		return sqlx.GetContext(ctx, s.ext(ctx), dest, s.sqls[q.id], args...)
	}
	defer s.release(st, bound)
	if direct {
		return st.QueryRowContext(ctx, args...).Scan(targets.scanTargets()...)
	}
	return st.GetContext(ctx, dest, args...)
}

// sel runs q, which returns rows, and scans them into dest, a pointer to a
// slice.
func (s *Store) sel(ctx context.Context, q *query, dest any, args ...any) error {
	st, bound, err := s.acquire(ctx, q)
	if err != nil {
		return err
	}
	if st == nil {
		return sqlx.SelectContext(ctx, s.ext(ctx), dest, s.sqls[q.id], args...)
	}
	defer s.release(st, bound)
	return st.SelectContext(ctx, dest, args...)
}

// queryRows runs q and calls scan for each row it returns.
func (s *Store) queryRows(ctx context.Context, q *query, scan func(*sql.Rows) error, args ...any) error {
	st, bound, err := s.acquire(ctx, q)
	if err != nil {
		return err
	}
	var rows *sql.Rows
	if st == nil {
		rows, err = s.ext(ctx).QueryContext(ctx, s.sqls[q.id], args...)
	} else {
		defer s.release(st, bound)
		rows, err = st.QueryContext(ctx, args...)
	}
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// exec runs q, which returns no rows.
func (s *Store) exec(ctx context.Context, q *query, args ...any) (sql.Result, error) {
	st, bound, err := s.acquire(ctx, q)
	if err != nil {
		return nil, err
	}
	if st == nil {
		return s.ext(ctx).ExecContext(ctx, s.sqls[q.id], args...)
	}
	defer s.release(st, bound)
	return st.ExecContext(ctx, args...)
}

// text returns the SQL of q in the store's schema.
func (s *Store) text(q *query) string { return s.sqls[q.id] }

// Close closes the prepared statements of the Store, on every pooled
// connection that holds them (on a connection in use, once it is released).
// It waits for calls running on a prepared statement to finish. The Store
// stays usable: later calls run without prepared statements. Close does not
// close the *sql.DB, which the caller owns and closes after Close. It is
// safe to call Close more than once; a Store created with
// [Options.DisablePreparedStatements] has nothing to close.
func (s *Store) Close() error {
	c := s.stmts
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	var errs []error
	for i := range c.lazy {
		if st := c.lazy[i].stmt.Swap(nil); st != nil {
			if err := st.Close(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
