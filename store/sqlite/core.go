package sqlite

// Helpers of the core group: environments, integrations, connections,
// connect sessions, OAuth flows and the operations log.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/store"
)

// notFound, conflict and invalid build the errors of a missing record, of
// a refused write and of refused input.
func notFound(format string, args ...any) error {
	return fmt.Errorf("sqlite: "+format+": %w", append(args, store.ErrNotFound)...)
}

func conflict(format string, args ...any) error {
	return fmt.Errorf("sqlite: "+format+": %w", append(args, store.ErrConflict)...)
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("sqlite: "+format+": %w", append(args, store.ErrInvalid)...)
}

// parentErr is dbErr for a write whose foreign key names a missing parent
// (an environment, an integration): store.ErrNotFound instead of
// store.ErrConflict.
func parentErr(ctx context.Context, op string, err error) error {
	if isForeignKey(err) && ctx.Err() == nil {
		return fmt.Errorf("sqlite: %s: %w", op, errors.Join(store.ErrNotFound, err))
	}
	return dbErr(ctx, op, err)
}

// scanner is what *sql.Row and *sql.Rows have in common.
type scanner interface {
	Scan(dest ...any) error
}

// boolInt returns b as a column value: 1 or 0.
func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// encodeJSON is jsonText with the common empty values written without the
// encoder: a nil map or slice is NULL, an empty one "{}" or "[]".
func encodeJSON(v any) (sql.NullString, error) {
	switch x := v.(type) {
	case map[string]any:
		if x != nil && len(x) == 0 {
			return sql.NullString{String: "{}", Valid: true}, nil
		}
	case map[string]string:
		if x != nil && len(x) == 0 {
			return sql.NullString{String: "{}", Valid: true}, nil
		}
	case []connections.Error:
		if x != nil && len(x) == 0 {
			return sql.NullString{String: "[]", Valid: true}, nil
		}
	}
	return jsonText(v)
}

// decodeJSON is fromJSON with the common empty values read without the
// decoder.
func decodeJSON(v sql.NullString, dst any) error {
	if v.Valid {
		switch v.String {
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
	}
	return fromJSON(v, dst)
}

// rowsAffected returns the rows a statement changed.
func rowsAffected(ctx context.Context, op string, res sql.Result) (int64, error) {
	n, err := res.RowsAffected()
	if err != nil {
		return 0, dbErr(ctx, op, err)
	}
	return n, nil
}

// atomically runs fn so that its writes are made all or none: in a
// savepoint of the transaction of ctx, which is rolled back when fn fails
// and leaves the transaction usable, or else in a transaction of its own.
// fn receives the transaction.
func (s *Store) atomically(ctx context.Context, op string, fn func(ctx context.Context, tx *sql.Tx) error) error {
	st, ok := s.liveTx(ctx)
	if !ok {
		return s.WithTx(ctx, func(ctx context.Context) error {
			st, _ := s.liveTx(ctx)
			return fn(ctx, st.tx)
		})
	}
	if _, err := st.tx.ExecContext(ctx, `SAVEPOINT core_atomically`); err != nil {
		return dbErr(ctx, op, err)
	}
	if err := fn(ctx, st.tx); err != nil {
		rctx := context.WithoutCancel(ctx)
		if _, rerr := st.tx.ExecContext(rctx, `ROLLBACK TO core_atomically`); rerr != nil {
			return fmt.Errorf("%w (and rolling back to the savepoint: %v)", err, rerr)
		}
		if _, rerr := st.tx.ExecContext(rctx, `RELEASE core_atomically`); rerr != nil {
			return fmt.Errorf("%w (and releasing the savepoint: %v)", err, rerr)
		}
		return err
	}
	if _, err := st.tx.ExecContext(ctx, `RELEASE core_atomically`); err != nil {
		return dbErr(ctx, op, err)
	}
	return nil
}
