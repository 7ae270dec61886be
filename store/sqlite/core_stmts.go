package sqlite

import (
	"context"
	"database/sql"
	"fmt"
)

// Prepared statements of the hot paths.
//
// Preparing a statement costs modernc.org/sqlite more than running a simple
// one (measured: GetConnection spends about 55 of its 80 µs of CPU
// preparing its SELECT), so the frequent queries are prepared once, when
// the Store opens, and kept: on the writer, where transactions and writes
// run them (bound to a transaction with Tx.StmtContext, which reuses the
// writer connection's statement), and on the read pool, where database/sql
// prepares them again on each pooled connection that runs them. They are
// prepared at Open because a statement cannot be prepared on the writer
// while a transaction holds its one connection.

// hotStmt is a frequent statement, prepared when the Store opens.
type hotStmt struct {
	id   int // index in hotStmts and in the Store's statements
	text string
}

// hotStmts lists the prepared statements by id. It is filled during package
// initialisation and read-only afterwards.
var hotStmts []*hotStmt

// defineHot defines a statement that the Store prepares when it opens.
func defineHot(text string) *hotStmt {
	h := &hotStmt{id: len(hotStmts), text: text}
	hotStmts = append(hotStmts, h)
	return h
}

// preparedStmts are the Store's statements of hotStmts, by id. They are set
// by prepare, before the Store is used, and read-only afterwards; empty
// until then (the statements then run unprepared).
type preparedStmts struct {
	w []*sql.Stmt // on the writer
	r []*sql.Stmt // on the read pool (w itself for an in-memory database)
}

// prepare prepares every statement of hotStmts on the writer and the read
// pool of s. It runs in Open, once the schema is migrated, when no
// transaction holds the writer.
func (p *preparedStmts) prepare(ctx context.Context, s *Store) error {
	w := make([]*sql.Stmt, len(hotStmts))
	r := w
	if s.r != s.w {
		r = make([]*sql.Stmt, len(hotStmts))
	}
	for _, h := range hotStmts {
		st, err := s.w.PrepareContext(ctx, h.text)
		if err != nil {
			return fmt.Errorf("sqlite: prepare %q: %w", h.text, err)
		}
		w[h.id] = st
		if s.r != s.w {
			if r[h.id], err = s.r.PrepareContext(ctx, h.text); err != nil {
				return fmt.Errorf("sqlite: prepare %q: %w", h.text, err)
			}
		}
	}
	p.w, p.r = w, r
	return nil
}

// hotStmt returns the statement to run h with in ctx: the writer's bound
// to the transaction of ctx, or else the writer's (write) or the read
// pool's, or nil when the statements are not prepared. done releases a
// statement bound to a transaction once it has run.
func (s *Store) hotStmt(ctx context.Context, write bool, h *hotStmt) (st *sql.Stmt, done func()) {
	if s.hot.w == nil {
		return nil, func() {}
	}
	if tx, ok := s.liveTx(ctx); ok {
		// Closing the transaction's copy keeps the statement prepared on
		// the writer connection.
		st := tx.tx.StmtContext(ctx, s.hot.w[h.id])
		return st, func() { st.Close() }
	}
	if write {
		return s.hot.w[h.id], func() {}
	}
	return s.hot.r[h.id], func() {}
}

// hotRow runs h, a query of at most one row, and scans its row with scan
// (sql.ErrNoRows when there is none): in the transaction of ctx, or else on
// the writer (write) or the read pool.
func (s *Store) hotRow(ctx context.Context, write bool, h *hotStmt, scan func(scanner) error, args ...any) error {
	st, done := s.hotStmt(ctx, write, h)
	defer done()
	if st == nil {
		q := s.reader(ctx)
		if write {
			q = s.writer(ctx)
		}
		return scan(q.QueryRowContext(ctx, h.text, args...))
	}
	return scan(st.QueryRowContext(ctx, args...))
}

// hotQuery runs h, a query, and calls each with each of its rows: in the
// transaction of ctx, or else on the writer (write) or the read pool.
func (s *Store) hotQuery(ctx context.Context, write bool, h *hotStmt, each func(scanner) error, args ...any) error {
	st, done := s.hotStmt(ctx, write, h)
	defer done()
	var (
		rows *sql.Rows
		err  error
	)
	switch {
	case st != nil:
		rows, err = st.QueryContext(ctx, args...)
	case write:
		rows, err = s.writer(ctx).QueryContext(ctx, h.text, args...)
	default:
		rows, err = s.reader(ctx).QueryContext(ctx, h.text, args...)
	}
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := each(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// hotExec runs h, a write that returns no rows, in the transaction of ctx
// or else on the writer.
func (s *Store) hotExec(ctx context.Context, h *hotStmt, args ...any) (sql.Result, error) {
	st, done := s.hotStmt(ctx, true, h)
	defer done()
	if st == nil {
		return s.writer(ctx).ExecContext(ctx, h.text, args...)
	}
	return st.ExecContext(ctx, args...)
}

// scanInto returns a scan function of hotRow that scans into dest.
func scanInto(dest ...any) func(scanner) error {
	return func(sc scanner) error { return sc.Scan(dest...) }
}
