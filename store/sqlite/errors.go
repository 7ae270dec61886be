package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	sqlite3 "modernc.org/sqlite"

	"github.com/embedauth/connect/store"
)

// SQLite's result codes that the Store tells apart (https://sqlite.org/rescode.html).
const (
	codeBusy       = 5
	codeLocked     = 6
	codeConstraint = 19

	codeConstraintUnique     = 2067
	codeConstraintPrimaryKey = 1555
	codeConstraintForeignKey = 787
)

var errClosed = errors.New("sqlite: the store is closed")

// sqliteCode returns the extended result code of a SQLite error, or 0.
func sqliteCode(err error) int {
	var e *sqlite3.Error
	if errors.As(err, &e) {
		return e.Code()
	}
	return 0
}

// isUnique reports whether err is a violation of a UNIQUE constraint or a
// primary key.
func isUnique(err error) bool {
	c := sqliteCode(err)
	return c == codeConstraintUnique || c == codeConstraintPrimaryKey
}

// isForeignKey reports whether err is a violation of a foreign key.
func isForeignKey(err error) bool { return sqliteCode(err) == codeConstraintForeignKey }

// dbErr wraps err from operation op so that it matches the store sentinel
// errors: sql.ErrNoRows is store.ErrNotFound, a unique or foreign key
// violation store.ErrConflict, another constraint store.ErrInvalid, a busy
// or locked database store.ErrUnavailable. When ctx has ended, the error
// matches ctx.Err() instead: the statement was interrupted.
func dbErr(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("sqlite: %s: %w", op, errors.Join(cerr, err))
	}
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("sqlite: %s: %w", op, store.ErrNotFound)
	}
	switch c := sqliteCode(err); {
	case c == codeConstraintUnique || c == codeConstraintPrimaryKey || c == codeConstraintForeignKey:
		return fmt.Errorf("sqlite: %s: %w", op, errors.Join(store.ErrConflict, err))
	case c&0xff == codeConstraint:
		return fmt.Errorf("sqlite: %s: %w", op, errors.Join(store.ErrInvalid, err))
	case c&0xff == codeBusy || c&0xff == codeLocked:
		return fmt.Errorf("sqlite: %s: %w", op, errors.Join(store.ErrUnavailable, err))
	}
	return fmt.Errorf("sqlite: %s: %w", op, err)
}
