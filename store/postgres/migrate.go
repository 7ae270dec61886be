package postgres

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"embed"
	"fmt"
	"hash/fnv"
	"log/slog"

	"github.com/riverqueue/river/riverdriver/riverdatabasesql"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/embedauth/connect/internal/migrations"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

type migration = migrations.Migration

// loadMigrations returns the embedded migrations in version order. Files are
// named NNN_name.up.sql.
func loadMigrations() ([]migration, error) {
	ms, err := migrations.Load(migrationFiles, "migrations/*.up.sql")
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	return ms, nil
}

// Migrate creates or upgrades the tables of a Store in opts.Schema, creating
// the schema when it is missing, then the tables of the job queue that
// [NewScheduler] runs on, in the same schema.
//
// It first applies the embedded migrations that the schema's
// schema_migrations table does not list yet, in order, in one transaction.
// Then it applies River's migrations that River's own river_migration table
// does not list yet (creating river_job, river_leader, river_queue,
// river_migration and river_notification, River's river_job_state type and
// its functions), each in a transaction of its own, as River does: one of
// them adds an enum value that a later one uses, which Postgres refuses
// within one transaction. Migrate is therefore idempotent, and a failure
// leaves each migration applied or not; calling Migrate again finishes the
// job.
//
// It holds a session-level advisory lock (per schema) throughout, on one
// connection of db that runs every statement, so concurrent calls (several
// processes starting at once) wait for each other and Migrate needs a
// single connection of the pool.
//
// The library never migrates on its own: the host calls Migrate, for
// example at start-up or from a deploy step.
func Migrate(ctx context.Context, db *sql.DB, opts *Options) error {
	return migrate(ctx, db, opts, true)
}

// migrate is Migrate; tests that need no job queue leave River's tables
// out, which saves most of the time Migrate takes.
func migrate(ctx context.Context, db *sql.DB, opts *Options, withRiver bool) (err error) {
	o, err := opts.resolve()
	if err != nil {
		return err
	}
	ms, err := loadMigrations()
	if err != nil {
		return err
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return dbErr(ctx, "migrate: connect", err, nil)
	}
	defer conn.Close()
	key := migrationLockKey(o.schema)
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, key); err != nil {
		return dbErr(ctx, "migrate: lock", err, nil)
	}
	defer func() {
		// Unlock even when ctx has ended. Should that fail, drop the
		// connection, which ends the session and so releases the lock,
		// rather than return it to the pool still locked.
		if _, uerr := conn.ExecContext(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, key); uerr != nil {
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
			if err == nil {
				err = dbErr(ctx, "migrate: unlock", uerr, nil)
			}
		}
	}()
	if err := migrateStore(ctx, conn, o, ms); err != nil {
		return err
	}
	if !withRiver {
		return nil
	}
	return migrateRiver(ctx, db, conn, o.schema)
}

// migrateStore applies the migrations of ms that are missing, in one
// transaction on conn.
func migrateStore(ctx context.Context, conn *sql.Conn, o resolved, ms []migration) error {
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return dbErr(ctx, "migrate: begin", err, nil)
	}
	defer func() { _ = tx.Rollback() }()

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
		if applied[m.Version] {
			continue
		}
		if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
			return dbErr(ctx, fmt.Sprintf("migrate: apply %03d_%s", m.Version, m.Name), err, nil)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.Version, m.Name); err != nil {
			return dbErr(ctx, "migrate: record version", err, nil)
		}
	}
	if err := tx.Commit(); err != nil {
		return dbErr(ctx, "migrate: commit", err, nil)
	}
	return nil
}

// migrateRiver applies River's migrations that river_migration does not
// list yet to schema, one per transaction, on conn. River's own Migrate
// does the same on connections of its choosing, outside our lock; MigrateTx
// on a transaction of conn keeps them on the locked connection. (MigrateTx
// is deprecated because it invites running several migrations in one
// transaction, which fails as described at [Migrate].)
func migrateRiver(ctx context.Context, db *sql.DB, conn *sql.Conn, schema string) error {
	migrator, err := rivermigrate.New(riverdatabasesql.New(db), &rivermigrate.Config{
		Schema: schema,
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		return fmt.Errorf("postgres: migrate river: %w", err)
	}
	for {
		tx, err := conn.BeginTx(ctx, nil)
		if err != nil {
			return dbErr(ctx, "migrate: river: begin", err, nil)
		}
		//lint:ignore SA1019 one migration per transaction, on the locked connection
		res, err := migrator.MigrateTx(ctx, tx, rivermigrate.DirectionUp, &rivermigrate.MigrateOpts{MaxSteps: 1}) //nolint:staticcheck
		if err != nil {
			_ = tx.Rollback()
			return dbErr(ctx, "migrate: river", err, nil)
		}
		if err := tx.Commit(); err != nil {
			return dbErr(ctx, "migrate: river: commit", err, nil)
		}
		if len(res.Versions) == 0 {
			return nil
		}
	}
}

// migrationLockKey is the advisory lock key of migrations of one schema.
func migrationLockKey(schema string) int64 {
	h := fnv.New64a()
	h.Write([]byte("github.com/embedauth/connect/store/postgres.Migrate:" + schema))
	return int64(h.Sum64())
}
