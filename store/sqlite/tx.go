package sqlite

import (
	"context"
	"database/sql"
	"sync"
	"sync/atomic"

	"github.com/embedauth/connect/store"
)

type txKey struct{}

// txState is what WithTx puts in the context: the transaction and the
// Store it belongs to, so that another Store does not use it.
type txState struct {
	s    *Store
	tx   *sql.Tx
	done atomic.Bool // set once the transaction has ended

	mu          sync.Mutex
	afterCommit []func() // queued by AfterCommit; guarded by mu
}

// liveTx returns the transaction of ctx when it belongs to s and has not
// ended.
func (s *Store) liveTx(ctx context.Context) (*txState, bool) {
	st, ok := ctx.Value(txKey{}).(*txState)
	if !ok || st.s != s || st.done.Load() {
		return nil, false
	}
	return st, true
}

// TxFromContext returns the transaction that [Store.WithTx] runs fn in, when
// ctx is (derived from) the context fn received and WithTx has not returned
// yet. A host uses it to make its own writes in the same transaction as the
// Store's; the Scheduler uses it to enqueue jobs in it.
func TxFromContext(ctx context.Context) (*sql.Tx, bool) {
	st, ok := ctx.Value(txKey{}).(*txState)
	if !ok || st.done.Load() {
		return nil, false
	}
	return st.tx, true
}

// querier is what *sql.DB and *sql.Tx have in common.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// writer returns the transaction of ctx, or the writer connection: where a
// write (or a read that must see the writes of its transaction) goes.
func (s *Store) writer(ctx context.Context) querier {
	if st, ok := s.liveTx(ctx); ok {
		return st.tx
	}
	return s.w
}

// reader returns the transaction of ctx, or the read pool.
func (s *Store) reader(ctx context.Context) querier {
	if st, ok := s.liveTx(ctx); ok {
		return st.tx
	}
	return s.r
}

// WithTx runs fn in a transaction and commits it when fn returns nil;
// otherwise, or when fn panics, it rolls it back. After a commit it runs the
// functions queued by [Store.AfterCommit]. Store calls made with the context
// fn receives run in the transaction. A WithTx called with that context
// joins the transaction instead of starting another one.
//
// The transaction takes the write lock when it begins (BEGIN IMMEDIATE), so
// transactions of the Store run one at a time, and never fail with a busy
// error halfway. A call that fails with store.ErrNotFound or
// store.ErrConflict leaves the transaction usable (SQLite undoes the one
// statement).
//
// fn must not use its context from several goroutines at once, and must not
// call the Store with another context while it runs: the transaction holds
// the one writer connection, which such a call would wait for.
func (s *Store) WithTx(ctx context.Context, fn func(ctx context.Context) error) error {
	if _, ok := s.liveTx(ctx); ok {
		return fn(ctx)
	}
	if s.closed.Load() {
		return errClosed
	}
	conn, err := s.w.Conn(ctx)
	if err != nil {
		return dbErr(ctx, "begin", err)
	}
	defer conn.Close()
	relaxed := store.RelaxedDurability(ctx) && s.opts.synchronous != "NORMAL" && s.Durable()
	if relaxed {
		if _, err := conn.ExecContext(ctx, "PRAGMA synchronous = NORMAL"); err != nil {
			return dbErr(ctx, "set synchronous", err)
		}
		defer func() {
			_, _ = conn.ExecContext(context.WithoutCancel(ctx), "PRAGMA synchronous = "+s.opts.synchronous)
		}()
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return dbErr(ctx, "begin", err)
	}
	st := &txState{s: s, tx: tx}
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
	if err := tx.Commit(); err != nil {
		return dbErr(ctx, "commit", err)
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
// this Store) has committed, and never if it rolls back: the outermost
// WithTx runs the queued functions in order after the commit, before it
// returns. Outside a transaction, or with the context of one that has
// ended, AfterCommit runs fn at once. It implements store.CommitHooker.
func (s *Store) AfterCommit(ctx context.Context, fn func()) {
	if st, ok := s.liveTx(ctx); ok {
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
