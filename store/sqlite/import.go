package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"slices"
	"strings"

	"github.com/embedauth/connect/connections"
)

// qImportConnection writes the connection of one import item: an insert
// whose conflict action is the update of an existing connection (see
// connections.ImportItem), with the item's Replace flags as its last three
// parameters. It returns the connection as stored: a created one has
// version 1, an updated one a later version.
var qImportConnection = defineHot(`
	INSERT INTO connections (environment_id, integration_key, connection_id, connection_id_folded,
		provider, connection_config, metadata, tags, webhook_url_override, auth_mode,
		sealed_credentials, credentials_expires_at, errors, last_fetched_at,
		last_refresh_failure, refresh_attempts, version, created_at, updated_at)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?)
	ON CONFLICT (environment_id, integration_key, connection_id) DO UPDATE SET
		auth_mode = excluded.auth_mode, sealed_credentials = excluded.sealed_credentials,
		credentials_expires_at = excluded.credentials_expires_at, errors = excluded.errors,
		updated_at = excluded.updated_at, last_refresh_failure = NULL, refresh_attempts = 0,
		connection_config = CASE WHEN ? THEN excluded.connection_config ELSE connection_config END,
		metadata = CASE WHEN ? THEN excluded.metadata ELSE metadata END,
		tags = CASE WHEN ? THEN excluded.tags ELSE tags END,
		version = version + 1
	RETURNING ` + connectionColumns)

// ImportConnections writes the connections of one import (see
// connections.ImportItem), all or none, with the log entries of the items
// that have one, in a transaction (or a savepoint of the caller's). An
// identity given twice is store.ErrConflict and a missing integration
// store.ErrNotFound; a log entry ID stored already or given twice is
// store.ErrConflict. Each writes nothing and leaves an enclosing
// transaction usable.
//
// The connections are written in the order of their identities (as the
// Postgres store does): created connections get increasing IDs in that
// order.
func (s *Store) ImportConnections(ctx context.Context, items []*connections.ImportItem) error {
	if len(items) == 0 {
		return nil
	}
	type row struct {
		it   *connections.ImportItem
		args []any
		log  []any
	}
	rows := make([]row, len(items))
	for i, it := range items {
		c := it.Connection
		v, err := encodeConnection(c)
		if err != nil {
			return err
		}
		r := row{it: it, args: []any{c.EnvironmentID, c.IntegrationKey, c.ConnectionID, foldConnectionID(c.ConnectionID),
			c.Provider, v.cfg, v.md, v.tags, c.WebhookURLOverride, c.AuthMode,
			c.SealedCredentials, nullMicros(c.CredentialsExpiresAt), v.errs, nullMicros(c.LastFetchedAt),
			nullMicros(c.LastRefreshFailure), c.RefreshAttempts, micros(c.CreatedAt), micros(c.UpdatedAt),
			boolInt(it.ReplaceConnectionConfig), boolInt(it.ReplaceMetadata), boolInt(it.ReplaceTags)}}
		if it.Log != nil {
			if r.log, err = logArgs(it.Log); err != nil {
				return err
			}
		}
		rows[i] = r
	}
	slices.SortFunc(rows, func(a, b row) int {
		ca, cb := a.it.Connection, b.it.Connection
		return cmp.Or(cmp.Compare(ca.EnvironmentID, cb.EnvironmentID),
			strings.Compare(ca.IntegrationKey, cb.IntegrationKey), strings.Compare(ca.ConnectionID, cb.ConnectionID))
	})
	for k := 1; k < len(rows); k++ {
		a, b := rows[k-1].it.Connection, rows[k].it.Connection
		if a.EnvironmentID == b.EnvironmentID && a.IntegrationKey == b.IntegrationKey && a.ConnectionID == b.ConnectionID {
			return conflict("connection %q given twice", b.ConnectionID)
		}
	}
	return s.atomically(ctx, "import connections", func(ctx context.Context, _ *sql.Tx) error {
		st, done := s.hotStmt(ctx, true, qImportConnection)
		defer done()
		// The outcome is set on the items only once everything is
		// written: a refused import leaves them as they were.
		stored := make([]*connections.Connection, len(rows))
		for i, r := range rows {
			var row *sql.Row
			if st != nil {
				row = st.QueryRowContext(ctx, r.args...)
			} else {
				row = s.writer(ctx).QueryRowContext(ctx, qImportConnection.text, r.args...)
			}
			c, err := scanConnection(row)
			if err != nil {
				if isForeignKey(err) && ctx.Err() == nil {
					return notFound("integration %q of environment %d", r.it.Connection.IntegrationKey, r.it.Connection.EnvironmentID)
				}
				return dbErr(ctx, "import connections", err)
			}
			stored[i] = c
		}
		// Then the log entries, whose operation depends on the outcome.
		var logs [][]any
		for i, r := range rows {
			if r.log == nil {
				continue
			}
			op := connections.OpImportUpdate
			if stored[i].Version == 1 {
				op = connections.OpImportCreate
			}
			a := slices.Clone(r.log)
			a[3] = op // operation
			logs = append(logs, a)
		}
		if len(logs) > 0 {
			if err := s.appendLogs(ctx, logs); err != nil {
				return err
			}
		}
		for i, r := range rows {
			it, c := r.it, stored[i]
			it.Created = c.Version == 1
			if it.Created {
				it.Connection.ID, it.Connection.Version = c.ID, 1
			} else {
				*it.Connection = *c
			}
			if it.Log != nil {
				it.Log.Operation = connections.OpImportUpdate
				if it.Created {
					it.Log.Operation = connections.OpImportCreate
				}
			}
		}
		return nil
	})
}
