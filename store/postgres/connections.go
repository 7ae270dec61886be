package postgres

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/internal/batch"
	"github.com/embedauth/connect/store"
)

// DefaultConnectionsLimit is the number of connections ListConnections
// returns when the filter's Limit is 0.
const DefaultConnectionsLimit = 1000

// Batched reads of connections (see Store.GetConnection).
const (
	// DefaultReadsInFlight is how many batched reads of connections run at
	// the same time; calls that come meanwhile wait for the next batch.
	DefaultReadsInFlight = 2
	// DefaultReadBatch caps the connections of one batched read.
	DefaultReadBatch = 64
)

const connectionColumns = `id, environment_id, integration_key, connection_id, provider,
	connection_config, metadata, tags, webhook_url_override, auth_mode, sealed_credentials,
	credentials_expires_at, errors, last_fetched_at, last_refresh_failure, refresh_attempts,
	version, created_at, updated_at`

type connectionRow struct {
	ID                   int64      `db:"id"`
	EnvironmentID        int64      `db:"environment_id"`
	IntegrationKey       string     `db:"integration_key"`
	ConnectionID         string     `db:"connection_id"`
	Provider             string     `db:"provider"`
	ConnectionConfig     []byte     `db:"connection_config"`
	Metadata             []byte     `db:"metadata"`
	Tags                 []byte     `db:"tags"`
	WebhookURLOverride   string     `db:"webhook_url_override"`
	AuthMode             string     `db:"auth_mode"`
	SealedCredentials    string     `db:"sealed_credentials"`
	CredentialsExpiresAt *time.Time `db:"credentials_expires_at"`
	Errors               []byte     `db:"errors"`
	LastFetchedAt        *time.Time `db:"last_fetched_at"`
	LastRefreshFailure   *time.Time `db:"last_refresh_failure"`
	RefreshAttempts      int        `db:"refresh_attempts"`
	Version              int64      `db:"version"`
	CreatedAt            time.Time  `db:"created_at"`
	UpdatedAt            time.Time  `db:"updated_at"`
}

// scanTargets lists the fields in the order of connectionColumns.
func (r *connectionRow) scanTargets() []any {
	return []any{&r.ID, &r.EnvironmentID, &r.IntegrationKey, &r.ConnectionID, &r.Provider,
		&r.ConnectionConfig, &r.Metadata, &r.Tags, &r.WebhookURLOverride, &r.AuthMode, &r.SealedCredentials,
		&r.CredentialsExpiresAt, &r.Errors, &r.LastFetchedAt, &r.LastRefreshFailure, &r.RefreshAttempts,
		&r.Version, &r.CreatedAt, &r.UpdatedAt}
}

func (r *connectionRow) connection() (*connections.Connection, error) {
	c := &connections.Connection{
		ID:                   r.ID,
		EnvironmentID:        r.EnvironmentID,
		IntegrationKey:       r.IntegrationKey,
		ConnectionID:         r.ConnectionID,
		Provider:             r.Provider,
		WebhookURLOverride:   r.WebhookURLOverride,
		AuthMode:             r.AuthMode,
		SealedCredentials:    r.SealedCredentials,
		CredentialsExpiresAt: utcPtr(r.CredentialsExpiresAt),
		LastFetchedAt:        utcPtr(r.LastFetchedAt),
		LastRefreshFailure:   utcPtr(r.LastRefreshFailure),
		RefreshAttempts:      r.RefreshAttempts,
		Version:              r.Version,
		CreatedAt:            r.CreatedAt.UTC(),
		UpdatedAt:            r.UpdatedAt.UTC(),
	}
	for _, f := range []struct {
		name string
		b    []byte
		dst  any
	}{
		{"connection_config", r.ConnectionConfig, &c.ConnectionConfig},
		{"metadata", r.Metadata, &c.Metadata},
		{"tags", r.Tags, &c.Tags},
		{"errors", r.Errors, &c.Errors},
	} {
		if err := decodeJSON(f.name, f.b, f.dst); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// connectionJSON encodes the jsonb columns of c: connection_config,
// metadata, tags and errors.
func connectionJSON(c *connections.Connection) (cfg, md, tags, errs any, err error) {
	if cfg, err = jsonArg("connection_config", c.ConnectionConfig); err != nil {
		return
	}
	if md, err = jsonArg("metadata", c.Metadata); err != nil {
		return
	}
	if tags, err = jsonArg("tags", c.Tags); err != nil {
		return
	}
	errs, err = jsonArg("errors", c.Errors)
	return
}

var qCreateConnection = newQuery(`
	INSERT INTO {s}.connections (environment_id, integration_key, connection_id, provider,
		connection_config, metadata, tags, webhook_url_override, auth_mode, sealed_credentials,
		credentials_expires_at, errors, last_fetched_at, version, created_at, updated_at,
		last_refresh_failure, refresh_attempts)
	SELECT $1::bigint, $2::text, $3::text, $4::text, $5::jsonb, $6::jsonb, $7::jsonb, $8::text,
		$9::text, $10::text, $11::timestamptz, $12::jsonb, $13::timestamptz, 1,
		$14::timestamptz, $15::timestamptz, $16::timestamptz, $17::integer
	WHERE EXISTS (SELECT 1 FROM {s}.integrations WHERE environment_id = $1 AND unique_key = $2)
	ON CONFLICT DO NOTHING
	RETURNING id`)

// CreateConnection stores c, sets its ID and sets Version to 1. A connection
// with the same (EnvironmentID, IntegrationKey, ConnectionID) is
// store.ErrConflict; a missing integration is store.ErrNotFound.
func (s *Store) CreateConnection(ctx context.Context, c *connections.Connection) error {
	cfg, md, tags, errs, err := connectionJSON(c)
	if err != nil {
		return err
	}
	var id int64
	err = s.get(ctx, qCreateConnection, &id,
		c.EnvironmentID, c.IntegrationKey, c.ConnectionID, c.Provider, cfg, md, tags,
		c.WebhookURLOverride, c.AuthMode, c.SealedCredentials, c.CredentialsExpiresAt, errs,
		c.LastFetchedAt, c.CreatedAt, c.UpdatedAt, c.LastRefreshFailure, c.RefreshAttempts)
	if errors.Is(err, sql.ErrNoRows) {
		if _, err := s.GetIntegration(ctx, c.EnvironmentID, c.IntegrationKey); err != nil {
			return err
		}
		return conflict("connection %q", c.ConnectionID)
	}
	if err != nil {
		return dbErr(ctx, "create connection", err, store.ErrNotFound)
	}
	c.ID = id
	c.Version = 1
	return nil
}

var qGetConnection = newPreparedQuery(`SELECT ` + connectionColumns + ` FROM {s}.connections
	WHERE environment_id = $1 AND integration_key = $2 AND connection_id = $3`)

// qGetConnections reads many connections by identity: the keys come as
// three arrays of the same length.
var qGetConnections = newPreparedQuery(`SELECT ` + connectionColumns + `
	FROM unnest($1::bigint[], $2::text[], $3::text[]) AS k(environment_id, integration_key, connection_id)
	JOIN {s}.connections USING (environment_id, integration_key, connection_id)`)

// GetConnection returns the connection or store.ErrNotFound.
//
// Outside a transaction, the reads of concurrent calls are coalesced: a
// call made while [DefaultReadsInFlight] reads of connections run waits
// for the next one, which reads every connection asked for meanwhile (up
// to [DefaultReadBatch]) with one query. A call made alone runs its query
// at once. Each call still reads after it was made, so a change committed
// before the call is always seen.
func (s *Store) GetConnection(ctx context.Context, environmentID int64, integrationKey, connectionID string) (*connections.Connection, error) {
	k := connKey{environmentID, integrationKey, connectionID}
	if _, inTx := liveTx(ctx, s.raw); !inTx && s.reads != nil {
		r, err := s.reads.Do(ctx, k)
		if err != nil {
			if ctxErr := ctx.Err(); ctxErr != nil && errors.Is(err, ctxErr) {
				return nil, dbErr(ctx, "get connection", err, nil)
			}
			return nil, err // readConnections' own
		}
		return r.connection()
	}
	r, err := s.getConnectionRow(ctx, k)
	if err != nil {
		return nil, err
	}
	return r.connection()
}

// connKey is the identity of a connection.
type connKey struct {
	env     int64
	key, id string
}

// getConnectionRow reads one connection.
func (s *Store) getConnectionRow(ctx context.Context, k connKey) (*connectionRow, error) {
	var r connectionRow
	err := s.get(ctx, qGetConnection, &r, k.env, k.key, k.id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("connection %q", k.id)
	}
	if err != nil {
		return nil, dbErr(ctx, "get connection", err, nil)
	}
	return &r, nil
}

// readConnections is the Run of the Store's batched reads: one key reads
// as GetConnection does in a transaction, more read with qGetConnections.
// A key without a row is store.ErrNotFound.
func (s *Store) readConnections(ctx context.Context, keys []connKey) ([]batch.Result[*connectionRow], error) {
	out := make([]batch.Result[*connectionRow], len(keys))
	if len(keys) == 1 {
		r, err := s.getConnectionRow(ctx, keys[0])
		out[0] = batch.Result[*connectionRow]{V: r, Err: err}
		return out, nil
	}
	envs := make([]int64, len(keys))
	ikeys := make([]string, len(keys))
	ids := make([]string, len(keys))
	index := make(map[connKey]int, len(keys))
	for i, k := range keys {
		envs[i], ikeys[i], ids[i] = k.env, k.key, k.id
		index[k] = i
	}
	found := make([]bool, len(keys))
	err := s.queryRows(ctx, qGetConnections, func(rows *sql.Rows) error {
		r := new(connectionRow)
		if err := rows.Scan(r.scanTargets()...); err != nil {
			return err
		}
		if i, ok := index[connKey{r.EnvironmentID, r.IntegrationKey, r.ConnectionID}]; ok {
			out[i].V, found[i] = r, true
		}
		return nil
	}, pq.Array(envs), pq.Array(ikeys), pq.Array(ids))
	if err != nil {
		return nil, dbErr(ctx, "get connections", err, nil)
	}
	for i, k := range keys {
		if !found[i] {
			out[i].Err = notFound("connection %q", k.id)
		}
	}
	return out, nil
}

// qListConnections is completed with the conditions, order and limits of
// each call.
var qListConnections = newQuery(`SELECT ` + connectionColumns + ` FROM {s}.connections`)

// ListConnections returns the connections matching f ordered by ID. An
// EnvironmentID of 0 matches every environment (for maintenance jobs; API
// requests always set it). Search matches connection ids containing it
// case-insensitively, with '%', '_' and '\' taken literally. A Limit of 0
// means [DefaultConnectionsLimit]; negative Limit and Offset count as 0.
func (s *Store) ListConnections(ctx context.Context, f connections.Filter) ([]*connections.Connection, error) {
	var w where
	if f.EnvironmentID != 0 {
		w.add("environment_id = ?", f.EnvironmentID)
	}
	if f.ConnectionID != "" {
		w.add("connection_id = ?", f.ConnectionID)
	}
	if len(f.IntegrationKeys) > 0 {
		w.add("integration_key = ANY(?::text[])", pq.StringArray(f.IntegrationKeys))
	}
	if len(f.Tags) > 0 {
		tags, err := jsonArg("tags", f.Tags)
		if err != nil {
			return nil, err
		}
		w.add("tags @> ?::jsonb", tags)
	}
	if f.Search != "" {
		w.add(`connection_id ILIKE ? ESCAPE '\'`, likePattern(f.Search))
	}
	if f.AfterID != 0 {
		w.add("id > ?", f.AfterID)
	}
	if f.ExpiresBefore != nil {
		w.add("credentials_expires_at < ?", *f.ExpiresBefore)
	}
	if f.Health != "" {
		cond, err := s.healthCond(f.Health)
		if err != nil {
			return nil, err
		}
		w.conds = append(w.conds, cond)
	}
	limit := f.Limit
	if limit <= 0 {
		limit = DefaultConnectionsLimit
	}
	query := s.text(qListConnections) + w.String() +
		` ORDER BY id LIMIT ` + w.arg(limit) + ` OFFSET ` + w.arg(max(f.Offset, 0))
	var rows []connectionRow
	if err := sqlx.SelectContext(ctx, s.ext(ctx), &rows, query, w.args...); err != nil {
		return nil, dbErr(ctx, "list connections", err, nil)
	}
	out := make([]*connections.Connection, 0, len(rows))
	for i := range rows {
		c, err := rows[i].connection()
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// The conditions of the Health filter of ListConnections on a row of
// connections, and the subquery that tells whether a sync's latest
// finished run failed (one probe of sync_runs_latest_finished_idx). The
// syncs of a connection are found through syncs_identity_key, which
// starts with connection_id.
var (
	qHealthAuthError = newQuery(`connections.errors @> '[{"type": "auth"}]'::jsonb`)
	// Never NULL (errors may be), so that NOT of it is what it says.
	qHealthAnyError  = newQuery(`coalesce(jsonb_typeof(connections.errors) = 'array' AND connections.errors <> '[]'::jsonb, false)`)
	qHealthSyncError = newQuery(`EXISTS (SELECT 1 FROM {s}.syncs y WHERE y.connection_id = connections.id AND ` + lastRunFailed + `)`)
	qHealthPaused    = newQuery(`EXISTS (SELECT 1 FROM {s}.syncs y WHERE y.connection_id = connections.id AND y.paused)`)
)

// lastRunFailed is true when the latest finished run of the sync y
// stopped.
const lastRunFailed = `coalesce((SELECT r.status = 'STOPPED' FROM {s}.sync_runs r
	WHERE r.sync_id = y.id AND r.status IN ('SUCCESS', 'STOPPED')
	ORDER BY r.created_at DESC, r.id DESC LIMIT 1), false)`

// healthCond returns the condition of a Health filter (connections.Health*).
func (s *Store) healthCond(h string) (string, error) {
	anyErr := `(` + s.text(qHealthAnyError) + ` OR ` + s.text(qHealthSyncError) + `)`
	switch h {
	case connections.HealthAuthError:
		return s.text(qHealthAuthError), nil
	case connections.HealthSyncError:
		return s.text(qHealthSyncError), nil
	case connections.HealthPaused:
		return s.text(qHealthPaused), nil
	case connections.HealthError:
		return anyErr, nil
	case connections.HealthOK:
		return `NOT ` + anyErr, nil
	}
	return "", store.Invalid("invalid_filter", "The health filter must be ok, error, auth_error, sync_error or paused.")
}

// qSyncHealth reads the sync state of connections: whether one of each
// one's syncs is paused, and whether the latest finished run of one
// failed.
var qSyncHealth = newQuery(`
	SELECT y.connection_id, bool_or(y.paused) AS paused, bool_or(` + lastRunFailed + `) AS sync_error
	FROM {s}.syncs y WHERE y.connection_id = ANY($1::bigint[])
	GROUP BY y.connection_id`)

// SyncHealth returns the sync state of each of the connections that has
// syncs, in one statement.
func (s *Store) SyncHealth(ctx context.Context, connectionIDs []int64) (map[int64]connections.Health, error) {
	out := map[int64]connections.Health{}
	if len(connectionIDs) == 0 {
		return out, nil
	}
	var rows []struct {
		ConnectionID int64 `db:"connection_id"`
		Paused       bool  `db:"paused"`
		SyncError    bool  `db:"sync_error"`
	}
	if err := sqlx.SelectContext(ctx, s.ext(ctx), &rows, s.text(qSyncHealth), pq.Int64Array(connectionIDs)); err != nil {
		return nil, dbErr(ctx, "sync health", err, nil)
	}
	for _, r := range rows {
		out[r.ConnectionID] = connections.Health{SyncError: r.SyncError, Paused: r.Paused}
	}
	return out, nil
}

var (
	qUpdateConnection = newPreparedQuery(`
	UPDATE {s}.connections SET provider = $4, connection_config = $5, metadata = $6, tags = $7,
		webhook_url_override = $8, auth_mode = $9, sealed_credentials = $10,
		credentials_expires_at = $11, errors = $12, last_fetched_at = $13, updated_at = $14,
		last_refresh_failure = $15, refresh_attempts = $16, version = version + 1
	WHERE id = $1 AND environment_id = $2 AND version = $3
	RETURNING version`)
	qConnectionExists = newQuery(`SELECT EXISTS (SELECT 1 FROM {s}.connections
	WHERE id = $1 AND environment_id = $2)`)
)

// UpdateConnection replaces every field but the identity, ID and CreatedAt of
// the connection of c.EnvironmentID with c.ID when its stored Version equals
// c.Version, then sets c.Version to the next version. A stale version is
// store.ErrConflict; a missing connection is store.ErrNotFound.
func (s *Store) UpdateConnection(ctx context.Context, c *connections.Connection) error {
	cfg, md, tags, errs, err := connectionJSON(c)
	if err != nil {
		return err
	}
	var version int64
	err = s.get(ctx, qUpdateConnection, &version,
		c.ID, c.EnvironmentID, c.Version, c.Provider, cfg, md, tags, c.WebhookURLOverride,
		c.AuthMode, c.SealedCredentials, c.CredentialsExpiresAt, errs, c.LastFetchedAt, c.UpdatedAt,
		c.LastRefreshFailure, c.RefreshAttempts)
	if errors.Is(err, sql.ErrNoRows) {
		var exists bool
		err := s.get(ctx, qConnectionExists, &exists, c.ID, c.EnvironmentID)
		if err != nil {
			return dbErr(ctx, "update connection", err, nil)
		}
		if !exists {
			return notFound("connection %d", c.ID)
		}
		return conflict("connection %q: version %d is stale", c.ConnectionID, c.Version)
	}
	if err != nil {
		return dbErr(ctx, "update connection", err, nil)
	}
	c.Version = version
	return nil
}

var qDeleteConnection = newQuery(`DELETE FROM {s}.connections
	WHERE environment_id = $1 AND integration_key = $2 AND connection_id = $3`)

// DeleteConnection deletes the connection or returns store.ErrNotFound.
func (s *Store) DeleteConnection(ctx context.Context, environmentID int64, integrationKey, connectionID string) error {
	res, err := s.exec(ctx, qDeleteConnection, environmentID, integrationKey, connectionID)
	if err != nil {
		return dbErr(ctx, "delete connection", err, nil)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return notFound("connection %q", connectionID)
	}
	return nil
}

var qCountConnections = newPreparedQuery(`SELECT count(*) FROM {s}.connections
	WHERE environment_id = $1 AND integration_key = $2`)

// CountConnections returns how many connections the integration has.
func (s *Store) CountConnections(ctx context.Context, environmentID int64, integrationKey string) (int, error) {
	var n int
	err := s.get(ctx, qCountConnections, &n, environmentID, integrationKey)
	if err != nil {
		return 0, dbErr(ctx, "count connections", err, nil)
	}
	return n, nil
}

// qLockConnection locks the connection's row. A row lock rather than
// pg_advisory_xact_lock on a hash of the identity: it needs no key space
// shared with other advisory-lock users (Migrate, River) and cannot collide;
// it also makes concurrent UpdateConnection and DeleteConnection wait for
// the holder, so whatever the holder reads after locking stays current
// until it commits; and, being a transaction lock like every row lock, it
// is released by the commit or rollback (or by Postgres when the session
// dies), so no holder can outlive it or release another's.
var qLockConnection = newQuery(`SELECT 1 FROM {s}.connections
	WHERE environment_id = $1 AND integration_key = $2 AND connection_id = $3
	FOR UPDATE`)

// LockConnection locks the connection's row (SELECT ... FOR UPDATE) until
// the transaction of ctx ends, waiting for another transaction that holds
// it. It must be called inside [Store.WithTx] on this Store's pool: outside
// one it returns an error. A missing connection is store.ErrNotFound and
// leaves the transaction usable.
func (s *Store) LockConnection(ctx context.Context, environmentID int64, integrationKey, connectionID string) error {
	if _, ok := liveTx(ctx, s.raw); !ok {
		return errors.New("postgres: LockConnection must be called inside WithTx")
	}
	var one int
	err := s.get(ctx, qLockConnection, &one, environmentID, integrationKey, connectionID)
	if errors.Is(err, sql.ErrNoRows) {
		return notFound("connection %q", connectionID)
	}
	if err != nil {
		return dbErr(ctx, "lock connection", err, nil)
	}
	return nil
}
