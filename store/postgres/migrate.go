package postgres

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"hash/fnv"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

type migration struct {
	version int
	name    string
	sql     string
}

// loadMigrations returns the embedded migrations in version order. Files are
// named NNN_name.up.sql.
func loadMigrations() ([]migration, error) {
	names, err := fs.Glob(migrationFiles, "migrations/*.up.sql")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, n := range names {
		base := strings.TrimSuffix(path.Base(n), ".up.sql")
		num, label, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("postgres: bad migration file name %q", n)
		}
		b, err := migrationFiles.ReadFile(n)
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: label, sql: string(b)})
	}
	slices.SortFunc(ms, func(a, b migration) int { return a.version - b.version })
	for i := 1; i < len(ms); i++ {
		if ms[i].version == ms[i-1].version {
			return nil, fmt.Errorf("postgres: two migrations have version %d", ms[i].version)
		}
	}
	return ms, nil
}

// Migrate creates or upgrades the tables of a Store in opts.Schema, creating
// the schema when it is missing. It applies the embedded migrations that
// the schema's schema_migrations table does not list yet, in order, in one
// transaction, so it is idempotent and a failure leaves nothing half-done.
// A transaction-scoped advisory lock (per schema) serialises concurrent
// calls, so several processes starting at once may all call Migrate.
//
// The library never migrates on its own: the host calls Migrate, for
// example at start-up or from a deploy step.
func Migrate(ctx context.Context, db *sql.DB, opts *Options) error {
	o, err := opts.resolve()
	if err != nil {
		return err
	}
	ms, err := loadMigrations()
	if err != nil {
		return err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return dbErr(ctx, "migrate: begin", err, nil)
	}
	defer func() { _ = tx.Rollback() }()

	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, migrationLockKey(o.schema)); err != nil {
		return dbErr(ctx, "migrate: lock", err, nil)
	}
	// Create the schema only when it is missing, so that a role without
	// CREATE on the database can migrate a schema its DBA made.
	var exists bool
	if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`, o.schema).Scan(&exists); err != nil {
		return dbErr(ctx, "migrate: find schema", err, nil)
	}
	if !exists {
		if _, err := tx.ExecContext(ctx, `CREATE SCHEMA `+o.quoted); err != nil {
			return dbErr(ctx, "migrate: create schema", err, nil)
		}
	}
	// Migrations name their objects unqualified: they land in the schema.
	if _, err := tx.ExecContext(ctx, `SET LOCAL search_path TO `+o.quoted); err != nil {
		return dbErr(ctx, "migrate: set search_path", err, nil)
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    integer     PRIMARY KEY,
		name       text        NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now()
	)`); err != nil {
		return dbErr(ctx, "migrate: create schema_migrations", err, nil)
	}
	applied := map[int]bool{}
	rows, err := tx.QueryContext(ctx, `SELECT version FROM schema_migrations`)
	if err != nil {
		return dbErr(ctx, "migrate: read schema_migrations", err, nil)
	}
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			rows.Close()
			return dbErr(ctx, "migrate: read schema_migrations", err, nil)
		}
		applied[v] = true
	}
	if err := rows.Err(); err != nil {
		return dbErr(ctx, "migrate: read schema_migrations", err, nil)
	}
	for _, m := range ms {
		if applied[m.version] {
			continue
		}
		if _, err := tx.ExecContext(ctx, m.sql); err != nil {
			return dbErr(ctx, fmt.Sprintf("migrate: apply %03d_%s", m.version, m.name), err, nil)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.version, m.name); err != nil {
			return dbErr(ctx, "migrate: record version", err, nil)
		}
	}
	if err := tx.Commit(); err != nil {
		return dbErr(ctx, "migrate: commit", err, nil)
	}
	return nil
}

// migrationLockKey is the advisory lock key of migrations of one schema.
func migrationLockKey(schema string) int64 {
	h := fnv.New64a()
	h.Write([]byte("github.com/embedauth/connect/store/postgres.Migrate:" + schema))
	return int64(h.Sum64())
}
