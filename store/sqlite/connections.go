package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strings"

	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/store"
)

// DefaultConnectionsLimit is the number of connections ListConnections
// returns when the filter's Limit is 0.
const DefaultConnectionsLimit = 1000

const connectionColumns = `id, environment_id, integration_key, connection_id, provider,
	connection_config, metadata, tags, webhook_url_override, auth_mode, sealed_credentials,
	credentials_expires_at, errors, last_fetched_at, last_refresh_failure, refresh_attempts,
	version, created_at, updated_at`

// scanConnection reads a row of connectionColumns.
func scanConnection(sc scanner) (*connections.Connection, error) {
	var (
		c                         connections.Connection
		cfg, md, tags, errs       sql.NullString
		expires, fetched, failure sql.NullInt64
		created, updated          int64
	)
	if err := sc.Scan(&c.ID, &c.EnvironmentID, &c.IntegrationKey, &c.ConnectionID, &c.Provider,
		&cfg, &md, &tags, &c.WebhookURLOverride, &c.AuthMode, &c.SealedCredentials,
		&expires, &errs, &fetched, &failure, &c.RefreshAttempts,
		&c.Version, &created, &updated); err != nil {
		return nil, err
	}
	c.CredentialsExpiresAt, c.LastFetchedAt, c.LastRefreshFailure = timePtr(expires), timePtr(fetched), timePtr(failure)
	c.CreatedAt, c.UpdatedAt = fromMicros(created), fromMicros(updated)
	if err := decodeJSON(cfg, &c.ConnectionConfig); err != nil {
		return nil, err
	}
	if err := decodeJSON(md, &c.Metadata); err != nil {
		return nil, err
	}
	if err := decodeJSON(tags, &c.Tags); err != nil {
		return nil, err
	}
	if err := decodeJSON(errs, &c.Errors); err != nil {
		return nil, err
	}
	return &c, nil
}

// connectionValues are the encoded columns of a connection write.
type connectionValues struct {
	cfg, md, tags, errs sql.NullString
}

// encodeConnection checks the stored text of c and encodes its JSON
// columns. Credentials are not stored.
func encodeConnection(c *connections.Connection) (v connectionValues, err error) {
	if err = checkText([]any{c.IntegrationKey, c.ConnectionID, c.Provider, c.ConnectionConfig, c.Metadata,
		c.Tags, c.WebhookURLOverride, c.AuthMode, c.SealedCredentials, c.Errors}); err != nil {
		return v, err
	}
	if v.cfg, err = encodeJSON(c.ConnectionConfig); err != nil {
		return v, err
	}
	if v.md, err = encodeJSON(c.Metadata); err != nil {
		return v, err
	}
	if v.tags, err = encodeJSON(c.Tags); err != nil {
		return v, err
	}
	v.errs, err = encodeJSON(c.Errors)
	return v, err
}

// foldConnectionID is the connection_id_folded of a connection id: what
// Search looks in.
func foldConnectionID(id string) string { return strings.ToLower(id) }

// CreateConnection stores c, sets its ID and sets Version to 1. A connection
// with the same (EnvironmentID, IntegrationKey, ConnectionID) is
// store.ErrConflict; a missing integration is store.ErrNotFound.
func (s *Store) CreateConnection(ctx context.Context, c *connections.Connection) error {
	v, err := encodeConnection(c)
	if err != nil {
		return err
	}
	var id int64
	err = s.writer(ctx).QueryRowContext(ctx, `
		INSERT INTO connections (environment_id, integration_key, connection_id, connection_id_folded,
			provider, connection_config, metadata, tags, webhook_url_override, auth_mode,
			sealed_credentials, credentials_expires_at, errors, last_fetched_at,
			last_refresh_failure, refresh_attempts, version, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?)
		RETURNING id`,
		c.EnvironmentID, c.IntegrationKey, c.ConnectionID, foldConnectionID(c.ConnectionID),
		c.Provider, v.cfg, v.md, v.tags, c.WebhookURLOverride, c.AuthMode,
		c.SealedCredentials, nullMicros(c.CredentialsExpiresAt), v.errs, nullMicros(c.LastFetchedAt),
		nullMicros(c.LastRefreshFailure), c.RefreshAttempts, micros(c.CreatedAt), micros(c.UpdatedAt)).Scan(&id)
	if err != nil {
		return parentErr(ctx, "create connection", err)
	}
	c.ID, c.Version = id, 1
	return nil
}

var qGetConnection = defineHot(`SELECT ` + connectionColumns + ` FROM connections
	WHERE environment_id = ? AND integration_key = ? AND connection_id = ?`)

// GetConnection returns the connection or store.ErrNotFound.
func (s *Store) GetConnection(ctx context.Context, environmentID int64, integrationKey, connectionID string) (*connections.Connection, error) {
	if err := checkText([]string{integrationKey, connectionID}); err != nil {
		return nil, err
	}
	var c *connections.Connection
	err := s.hotRow(ctx, false, qGetConnection, func(sc scanner) (err error) {
		c, err = scanConnection(sc)
		return err
	}, environmentID, integrationKey, connectionID)
	if err != nil {
		return nil, dbErr(ctx, "get connection", err)
	}
	return c, nil
}

// ListConnections returns the connections matching f ordered by ID. An
// EnvironmentID of 0 matches every environment (for maintenance jobs; API
// requests always set it). Search matches connection ids containing it
// case-insensitively (Unicode lower case), every character taken
// literally. A Limit of 0 means [DefaultConnectionsLimit]; negative Limit
// and Offset count as 0.
func (s *Store) ListConnections(ctx context.Context, f connections.Filter) ([]*connections.Connection, error) {
	if err := checkText(f); err != nil {
		return nil, err
	}
	var (
		conds []string
		args  []any
	)
	add := func(cond string, a ...any) {
		conds = append(conds, cond)
		args = append(args, a...)
	}
	if f.EnvironmentID != 0 {
		add("environment_id = ?", f.EnvironmentID)
	}
	if f.ConnectionID != "" {
		add("connection_id = ?", f.ConnectionID)
	}
	if len(f.IntegrationKeys) > 0 {
		keys := make([]any, len(f.IntegrationKeys))
		for i, k := range f.IntegrationKeys {
			keys[i] = k
		}
		add("integration_key IN (?"+strings.Repeat(", ?", len(keys)-1)+")", keys...)
	}
	for k, v := range f.Tags {
		add("EXISTS (SELECT 1 FROM json_each(connections.tags) AS t WHERE t.key = ? AND t.value = ? AND t.type = 'text')", k, v)
	}
	if f.Search != "" {
		add("instr(connection_id_folded, ?) > 0", foldConnectionID(f.Search))
	}
	if f.AfterID != 0 {
		add("id > ?", f.AfterID)
	}
	if f.ExpiresBefore != nil {
		add("credentials_expires_at < ?", micros(*f.ExpiresBefore))
	}
	if f.Health != "" {
		cond, err := healthCond(f.Health)
		if err != nil {
			return nil, err
		}
		add(cond)
	}
	limit := f.Limit
	if limit <= 0 {
		limit = DefaultConnectionsLimit
	}
	q := `SELECT ` + connectionColumns + ` FROM connections`
	if len(conds) > 0 {
		q += ` WHERE ` + strings.Join(conds, ` AND `)
	}
	q += ` ORDER BY id LIMIT ? OFFSET ?`
	args = append(args, limit, max(f.Offset, 0))
	rows, err := s.reader(ctx).QueryContext(ctx, q, args...)
	if err != nil {
		return nil, dbErr(ctx, "list connections", err)
	}
	defer rows.Close()
	out := []*connections.Connection{}
	for rows.Next() {
		c, err := scanConnection(rows)
		if err != nil {
			return nil, dbErr(ctx, "list connections", err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, dbErr(ctx, "list connections", err)
	}
	return out, nil
}

var (
	qUpdateConnection = defineHot(`
	UPDATE connections SET provider = ?, connection_config = ?, metadata = ?, tags = ?,
		webhook_url_override = ?, auth_mode = ?, sealed_credentials = ?,
		credentials_expires_at = ?, errors = ?, last_fetched_at = ?, updated_at = ?,
		last_refresh_failure = ?, refresh_attempts = ?, version = version + 1
	WHERE id = ? AND environment_id = ? AND version = ?
	RETURNING version`)
	qConnectionExists = defineHot(`SELECT 1 FROM connections WHERE id = ? AND environment_id = ?`)
)

// UpdateConnection replaces every field but the identity, ID and CreatedAt of
// the connection of c.EnvironmentID with c.ID when its stored Version equals
// c.Version, then sets c.Version to the next version. A stale version is
// store.ErrConflict; a missing connection is store.ErrNotFound.
func (s *Store) UpdateConnection(ctx context.Context, c *connections.Connection) error {
	v, err := encodeConnection(c)
	if err != nil {
		return err
	}
	var version int64
	err = s.hotRow(ctx, true, qUpdateConnection, scanInto(&version),
		c.Provider, v.cfg, v.md, v.tags, c.WebhookURLOverride, c.AuthMode, c.SealedCredentials,
		nullMicros(c.CredentialsExpiresAt), v.errs, nullMicros(c.LastFetchedAt), micros(c.UpdatedAt),
		nullMicros(c.LastRefreshFailure), c.RefreshAttempts, c.ID, c.EnvironmentID, c.Version)
	if errors.Is(err, sql.ErrNoRows) {
		var one int
		err := s.hotRow(ctx, true, qConnectionExists, scanInto(&one), c.ID, c.EnvironmentID)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound("connection %d", c.ID)
		}
		if err != nil {
			return dbErr(ctx, "update connection", err)
		}
		return conflict("connection %q: version %d is stale", c.ConnectionID, c.Version)
	}
	if err != nil {
		return dbErr(ctx, "update connection", err)
	}
	c.Version = version
	return nil
}

// DeleteConnection deletes the connection or returns store.ErrNotFound.
func (s *Store) DeleteConnection(ctx context.Context, environmentID int64, integrationKey, connectionID string) error {
	if err := checkText([]string{integrationKey, connectionID}); err != nil {
		return err
	}
	res, err := s.writer(ctx).ExecContext(ctx, `DELETE FROM connections
		WHERE environment_id = ? AND integration_key = ? AND connection_id = ?`,
		environmentID, integrationKey, connectionID)
	if err != nil {
		return dbErr(ctx, "delete connection", err)
	}
	if n, err := rowsAffected(ctx, "delete connection", res); err != nil {
		return err
	} else if n == 0 {
		return notFound("connection %q", connectionID)
	}
	return nil
}

var qCountConnections = defineHot(`SELECT count(*) FROM connections
	WHERE environment_id = ? AND integration_key = ?`)

// CountConnections returns how many connections the integration has.
func (s *Store) CountConnections(ctx context.Context, environmentID int64, integrationKey string) (int, error) {
	if err := checkText(integrationKey); err != nil {
		return 0, err
	}
	var n int
	err := s.hotRow(ctx, false, qCountConnections, scanInto(&n), environmentID, integrationKey)
	if err != nil {
		return 0, dbErr(ctx, "count connections", err)
	}
	return n, nil
}

var qLockConnection = defineHot(`SELECT 1 FROM connections
	WHERE environment_id = ? AND integration_key = ? AND connection_id = ?`)

// LockConnection makes sure the connection exists, inside a transaction of
// the Store: the transaction holds SQLite's write lock from its start
// (BEGIN IMMEDIATE), so no other transaction, of this process or another,
// writes before it ends, and a read made in it stays current. It must be
// called inside [Store.WithTx]: outside one it returns an error. A missing
// connection is store.ErrNotFound and leaves the transaction usable.
func (s *Store) LockConnection(ctx context.Context, environmentID int64, integrationKey, connectionID string) error {
	if _, ok := s.liveTx(ctx); !ok {
		return errors.New("sqlite: LockConnection must be called inside WithTx")
	}
	if err := checkText([]string{integrationKey, connectionID}); err != nil {
		return err
	}
	var one int
	err := s.hotRow(ctx, true, qLockConnection, scanInto(&one), environmentID, integrationKey, connectionID)
	if err != nil {
		return dbErr(ctx, "lock connection", err)
	}
	return nil
}

// The conditions of the Health filter of ListConnections on a row of
// connections. The syncs of a connection are found through
// syncs_identity_key, which starts with connection_id.
const (
	healthAuthError = `EXISTS (SELECT 1 FROM json_each(connections.errors) AS e WHERE json_extract(e.value, '$.type') = 'auth')`
	healthAnyError  = `coalesce(json_array_length(connections.errors), 0) > 0`
	healthSyncError = `EXISTS (SELECT 1 FROM syncs y WHERE y.connection_id = connections.id AND ` + lastRunFailed + `)`
	healthPaused    = `EXISTS (SELECT 1 FROM syncs y WHERE y.connection_id = connections.id AND y.paused = 1)`
)

// lastRunFailed is 1 when the latest finished run of the sync y stopped
// (one probe of sync_runs_latest_finished_idx), else 0.
const lastRunFailed = `coalesce((SELECT r.status = 'STOPPED' FROM sync_runs r
	WHERE r.sync_id = y.id AND r.status IN ('SUCCESS', 'STOPPED')
	ORDER BY r.created_at DESC, r.id DESC LIMIT 1), 0)`

// healthCond returns the condition of a Health filter (connections.Health*).
func healthCond(h string) (string, error) {
	anyErr := `(` + healthAnyError + ` OR ` + healthSyncError + `)`
	switch h {
	case connections.HealthAuthError:
		return healthAuthError, nil
	case connections.HealthSyncError:
		return healthSyncError, nil
	case connections.HealthPaused:
		return healthPaused, nil
	case connections.HealthError:
		return anyErr, nil
	case connections.HealthOK:
		return `NOT ` + anyErr, nil
	}
	return "", store.Invalid("invalid_filter", "The health filter must be ok, error, auth_error, sync_error or paused.")
}

// qSyncHealth reads the sync state of the connections of a JSON array of
// ids, through syncs_identity_key.
const qSyncHealth = `
	SELECT y.connection_id, max(y.paused), max(` + lastRunFailed + `)
	FROM syncs y WHERE y.connection_id IN (SELECT value FROM json_each(?))
	GROUP BY y.connection_id`

// SyncHealth returns the sync state of each of the connections that has
// syncs (whether one of its syncs is paused, and whether the latest
// finished run of one failed), in one statement.
func (s *Store) SyncHealth(ctx context.Context, connectionIDs []int64) (map[int64]connections.Health, error) {
	out := map[int64]connections.Health{}
	if len(connectionIDs) == 0 {
		return out, nil
	}
	ids, err := json.Marshal(connectionIDs)
	if err != nil {
		return nil, err
	}
	rows, err := s.reader(ctx).QueryContext(ctx, qSyncHealth, string(ids))
	if err != nil {
		return nil, dbErr(ctx, "sync health", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id                int64
			paused, syncError bool
		)
		if err := rows.Scan(&id, &paused, &syncError); err != nil {
			return nil, dbErr(ctx, "sync health", err)
		}
		out[id] = connections.Health{SyncError: syncError, Paused: paused}
	}
	if err := rows.Err(); err != nil {
		return nil, dbErr(ctx, "sync health", err)
	}
	return out, nil
}
