package postgres

import (
	"context"
	"database/sql"

	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/oplog"
)

// MigrateWithoutRiver is Migrate without River's tables, for the tests of
// the Store alone: River's migrations take most of Migrate's time, and the
// conformance suites migrate hundreds of schemas.
func MigrateWithoutRiver(ctx context.Context, db *sql.DB, opts *Options) error {
	return migrate(ctx, db, opts, false)
}

// MigrateTo applies the Store's migrations up to version only, as an older
// release of the module would have.
func MigrateTo(ctx context.Context, db *sql.DB, opts *Options, version int) error {
	o, err := opts.resolve()
	if err != nil {
		return err
	}
	ms, err := loadMigrations()
	if err != nil {
		return err
	}
	var upTo []migration
	for _, m := range ms {
		if m.Version <= version {
			upTo = append(upTo, m)
		}
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return migrateStore(ctx, conn, o, upTo)
}

// LeasedKeys returns how many keys the limiter holds lease state for.
func (l *RateLimiter) LeasedKeys() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.keys)
}

// PendingReads returns the GetConnection calls waiting for a batched read.
func (s *Store) PendingReads() int { return s.reads.Pending() }

// ReadConnections runs one batched read of connections, as GetConnection's
// batches do: result i is keys[i]'s connection or its error.
func (s *Store) ReadConnections(ctx context.Context, keys [][3]any) ([]*connections.Connection, []error, error) {
	ks := make([]connKey, len(keys))
	for i, k := range keys {
		ks[i] = connKey{k[0].(int64), k[1].(string), k[2].(string)}
	}
	res, err := s.readConnections(ctx, ks)
	if err != nil {
		return nil, nil, err
	}
	out := make([]*connections.Connection, len(res))
	errs := make([]error, len(res))
	for i, r := range res {
		if errs[i] = r.Err; r.Err == nil {
			out[i], errs[i] = r.V.connection()
		}
	}
	return out, errs, nil
}

// RetentionSQL returns the statements of DeleteDeliveriesBefore,
// DeleteLogsBefore and TrimForwards's deletion, for EXPLAIN.
func (s *Store) RetentionSQL() (deliveries, logs, trim string) {
	return s.text(qDeleteDeliveriesBefore), s.text(qDeleteLogsBefore), s.text(qTrimForwards)
}

// ListLogsSQL returns the statement of ListLogs of f and its arguments,
// for EXPLAIN.
func (s *Store) ListLogsSQL(f oplog.Filter) (string, []any) { return s.listLogsQuery(f) }

// ForwardChargeSQL is the SQL of webhooks.ForwardCharge of a row's body.
var ForwardChargeSQL = forwardCharge
