package postgres

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/lib/pq"

	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/store"
)

const sessionColumns = `id, environment_id, token_hash, integration_key, connection_id, allowed_integrations,
	sealed_integrations_config_defaults, overrides, tags, webhook_url_override, created_at, expires_at`

type sessionRow struct {
	ID                  int64
	EnvironmentID       int64
	TokenHash           []byte
	IntegrationKey      string
	ConnectionID        string
	AllowedIntegrations pq.StringArray
	SealedDefaults      string
	Overrides           []byte
	Tags                []byte
	WebhookURLOverride  string
	CreatedAt           time.Time
	ExpiresAt           time.Time
}

// scanTargets lists the fields in the order of sessionColumns.
func (r *sessionRow) scanTargets() []any {
	return []any{&r.ID, &r.EnvironmentID, &r.TokenHash, &r.IntegrationKey, &r.ConnectionID, &r.AllowedIntegrations,
		&r.SealedDefaults, &r.Overrides, &r.Tags, &r.WebhookURLOverride, &r.CreatedAt, &r.ExpiresAt}
}

func (r *sessionRow) session() (*connections.Session, error) {
	s := &connections.Session{
		ID:                               r.ID,
		EnvironmentID:                    r.EnvironmentID,
		TokenHash:                        r.TokenHash,
		IntegrationKey:                   r.IntegrationKey,
		ConnectionID:                     r.ConnectionID,
		AllowedIntegrations:              []string(r.AllowedIntegrations),
		SealedIntegrationsConfigDefaults: r.SealedDefaults,
		WebhookURLOverride:               r.WebhookURLOverride,
		CreatedAt:                        r.CreatedAt.UTC(),
		ExpiresAt:                        r.ExpiresAt.UTC(),
	}
	if err := decodeJSON("overrides", r.Overrides, &s.Overrides); err != nil {
		return nil, err
	}
	if err := decodeJSON("tags", r.Tags, &s.Tags); err != nil {
		return nil, err
	}
	return s, nil
}

var (
	qCreateSession = newQuery(`
	INSERT INTO {s}.connect_sessions (environment_id, token_hash, integration_key, connection_id,
		allowed_integrations, sealed_integrations_config_defaults, overrides, tags, webhook_url_override,
		created_at, expires_at)
	SELECT $1::bigint, $2::bytea, $3::text, $4::text, $5::text[], $6::text, $7::jsonb, $8::jsonb, $9::text,
		$10::timestamptz, $11::timestamptz
	WHERE EXISTS (SELECT 1 FROM {s}.environments WHERE id = $1)
	ON CONFLICT DO NOTHING
	RETURNING id`)
	qGetSession    = newQuery(`SELECT ` + sessionColumns + ` FROM {s}.connect_sessions WHERE token_hash = $1`)
	qDeleteSession = newQuery(`DELETE FROM {s}.connect_sessions WHERE environment_id = $1 AND id = $2`)
	// qDeleteExpiredSessions deletes the soonest expired first; a limit of
	// NULL deletes them all.
	qDeleteExpiredSessions = newQuery(`
	DELETE FROM {s}.connect_sessions WHERE id IN (
		SELECT id FROM {s}.connect_sessions WHERE expires_at < $1
		ORDER BY expires_at, id LIMIT $2
		FOR UPDATE SKIP LOCKED)`)
	qMarkSessionConnection = newQuery(`
	UPDATE {s}.connections SET created_by_connect_session = true WHERE environment_id = $1 AND id = $2`)
	qIsSessionConnection = newQuery(`
	SELECT created_by_connect_session FROM {s}.connections WHERE environment_id = $1 AND id = $2`)
)

// CreateConnectSession stores sess and sets its ID. A TokenHash already
// stored is store.ErrConflict; a missing environment is store.ErrNotFound.
// IntegrationsConfigDefaults is not stored: SealedIntegrationsConfigDefaults
// is.
func (s *Store) CreateConnectSession(ctx context.Context, sess *connections.Session) error {
	overrides, err := jsonArg("overrides", sess.Overrides)
	if err != nil {
		return err
	}
	tags, err := jsonArg("tags", sess.Tags)
	if err != nil {
		return err
	}
	var id int64
	err = s.get(ctx, qCreateSession, &id,
		sess.EnvironmentID, sess.TokenHash, sess.IntegrationKey, sess.ConnectionID, pq.StringArray(sess.AllowedIntegrations),
		sess.SealedIntegrationsConfigDefaults, overrides, tags, sess.WebhookURLOverride, sess.CreatedAt, sess.ExpiresAt)
	if errors.Is(err, sql.ErrNoRows) {
		if _, err := s.GetEnvironment(ctx, sess.EnvironmentID); err != nil {
			return err
		}
		return conflict("connect session token")
	}
	if err != nil {
		return dbErr(ctx, "create connect session", err, store.ErrNotFound)
	}
	sess.ID = id
	return nil
}

// GetConnectSession returns the session whose token hash is hash, expired
// or not, or store.ErrNotFound.
func (s *Store) GetConnectSession(ctx context.Context, hash []byte) (*connections.Session, error) {
	var r sessionRow
	err := s.get(ctx, qGetSession, &r, hash)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("connect session")
	}
	if err != nil {
		return nil, dbErr(ctx, "get connect session", err, nil)
	}
	return r.session()
}

// DeleteConnectSession deletes a session of the environment, or returns
// store.ErrNotFound.
func (s *Store) DeleteConnectSession(ctx context.Context, environmentID, id int64) error {
	res, err := s.exec(ctx, qDeleteSession, environmentID, id)
	if err != nil {
		return dbErr(ctx, "delete connect session", err, nil)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return notFound("connect session %d", id)
	}
	return nil
}

// DeleteExpiredConnectSessions deletes at most limit sessions (all when
// limit <= 0) that expired before before, soonest expired first, and
// returns how many it deleted. Sessions another transaction is deleting
// are skipped.
func (s *Store) DeleteExpiredConnectSessions(ctx context.Context, before time.Time, limit int) (int, error) {
	var lim any
	if limit > 0 {
		lim = limit
	}
	res, err := s.exec(ctx, qDeleteExpiredSessions, before, lim)
	if err != nil {
		return 0, dbErr(ctx, "delete expired connect sessions", err, nil)
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// MarkSessionConnection marks the connection with the numeric id as
// created through a connect session, or returns store.ErrNotFound.
func (s *Store) MarkSessionConnection(ctx context.Context, environmentID, id int64) error {
	res, err := s.exec(ctx, qMarkSessionConnection, environmentID, id)
	if err != nil {
		return dbErr(ctx, "mark connection", err, nil)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return notFound("connection %d", id)
	}
	return nil
}

// IsSessionConnection reports whether the connection with the numeric id
// is marked; a missing connection is not.
func (s *Store) IsSessionConnection(ctx context.Context, environmentID, id int64) (bool, error) {
	var marked bool
	err := s.get(ctx, qIsSessionConnection, &marked, environmentID, id)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, dbErr(ctx, "get connection mark", err, nil)
	}
	return marked, nil
}
