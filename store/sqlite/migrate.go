package sqlite

import (
	"context"
	"embed"
	"fmt"
	"time"

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
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	return ms, nil
}

// migrate applies the embedded migrations that the schema_migrations table
// does not list yet, in order, in one transaction: either all of them are
// applied or none. The transaction takes the write lock first, so two
// processes opening the file at once migrate it once. A database that a
// newer version of the module migrated (a version this one does not know)
// is refused rather than used.
func migrate(ctx context.Context, s *Store) error {
	ms, err := loadMigrations()
	if err != nil {
		return err
	}
	return s.WithTx(ctx, func(ctx context.Context) error {
		q := s.writer(ctx)
		if _, err := q.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    INTEGER PRIMARY KEY,
			name       TEXT    NOT NULL,
			applied_at INTEGER NOT NULL
		) STRICT`); err != nil {
			return dbErr(ctx, "migrate", err)
		}
		rows, err := q.QueryContext(ctx, `SELECT version FROM schema_migrations`)
		if err != nil {
			return dbErr(ctx, "migrate", err)
		}
		applied := map[int]bool{}
		for rows.Next() {
			var v int
			if err := rows.Scan(&v); err != nil {
				rows.Close()
				return dbErr(ctx, "migrate", err)
			}
			applied[v] = true
		}
		if err := rows.Err(); err != nil {
			return dbErr(ctx, "migrate", err)
		}
		rows.Close()
		known := map[int]bool{}
		for _, m := range ms {
			known[m.Version] = true
		}
		for v := range applied {
			if !known[v] {
				return fmt.Errorf("sqlite: %s was migrated to version %d by a newer version of connect; this one knows versions up to %d", s.path, v, ms[len(ms)-1].Version)
			}
		}
		for _, m := range ms {
			if applied[m.Version] {
				continue
			}
			if _, err := q.ExecContext(ctx, m.SQL); err != nil {
				return fmt.Errorf("sqlite: migration %03d_%s: %w", m.Version, m.Name, err)
			}
			if _, err := q.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
				m.Version, m.Name, micros(time.Now())); err != nil {
				return dbErr(ctx, "migrate", err)
			}
		}
		return nil
	})
}
