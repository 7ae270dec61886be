package postgres

import (
	"context"
	"database/sql"
)

// MigrateWithoutRiver is Migrate without River's tables, for the tests of
// the Store alone: River's migrations take most of Migrate's time, and the
// conformance suites migrate hundreds of schemas.
func MigrateWithoutRiver(ctx context.Context, db *sql.DB, opts *Options) error {
	return migrate(ctx, db, opts, false)
}
