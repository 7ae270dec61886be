package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/embedauth/connect/connections"
)

const sessionColumns = `id, environment_id, token_hash, integration_key, connection_id, allowed_integrations,
	sealed_integrations_config_defaults, overrides, tags, webhook_url_override, created_at, expires_at`

// scanSession reads a row of sessionColumns.
func scanSession(sc scanner) (*connections.Session, error) {
	var (
		s                        connections.Session
		allowed, overrides, tags sql.NullString
		created, expires         int64
	)
	if err := sc.Scan(&s.ID, &s.EnvironmentID, &s.TokenHash, &s.IntegrationKey, &s.ConnectionID, &allowed,
		&s.SealedIntegrationsConfigDefaults, &overrides, &tags, &s.WebhookURLOverride, &created, &expires); err != nil {
		return nil, err
	}
	s.CreatedAt, s.ExpiresAt = fromMicros(created), fromMicros(expires)
	if err := decodeJSON(allowed, &s.AllowedIntegrations); err != nil {
		return nil, err
	}
	if err := decodeJSON(overrides, &s.Overrides); err != nil {
		return nil, err
	}
	if err := decodeJSON(tags, &s.Tags); err != nil {
		return nil, err
	}
	return &s, nil
}

// CreateConnectSession stores sess and sets its ID. A TokenHash already
// stored is store.ErrConflict; a missing environment is store.ErrNotFound.
// IntegrationsConfigDefaults is not stored: SealedIntegrationsConfigDefaults
// is.
func (s *Store) CreateConnectSession(ctx context.Context, sess *connections.Session) error {
	if err := checkText([]any{sess.IntegrationKey, sess.ConnectionID, sess.AllowedIntegrations,
		sess.SealedIntegrationsConfigDefaults, sess.Overrides, sess.Tags, sess.WebhookURLOverride}); err != nil {
		return err
	}
	allowed, err := encodeJSON(sess.AllowedIntegrations)
	if err != nil {
		return err
	}
	overrides, err := encodeJSON(sess.Overrides)
	if err != nil {
		return err
	}
	tags, err := encodeJSON(sess.Tags)
	if err != nil {
		return err
	}
	err = s.writer(ctx).QueryRowContext(ctx, `
		INSERT INTO connect_sessions (environment_id, token_hash, integration_key, connection_id,
			allowed_integrations, sealed_integrations_config_defaults, overrides, tags, webhook_url_override,
			created_at, expires_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		RETURNING id`,
		sess.EnvironmentID, sess.TokenHash, sess.IntegrationKey, sess.ConnectionID, allowed,
		sess.SealedIntegrationsConfigDefaults, overrides, tags, sess.WebhookURLOverride,
		micros(sess.CreatedAt), micros(sess.ExpiresAt)).Scan(&sess.ID)
	if err != nil {
		return parentErr(ctx, "create connect session", err)
	}
	return nil
}

var qGetConnectSession = defineHot(`SELECT ` + sessionColumns + ` FROM connect_sessions WHERE token_hash = ?`)

// GetConnectSession returns the session whose token hash is hash, expired
// or not, or store.ErrNotFound.
func (s *Store) GetConnectSession(ctx context.Context, hash []byte) (*connections.Session, error) {
	var sess *connections.Session
	err := s.hotRow(ctx, false, qGetConnectSession, func(sc scanner) (err error) {
		sess, err = scanSession(sc)
		return err
	}, hash)
	if err != nil {
		return nil, dbErr(ctx, "get connect session", err)
	}
	return sess, nil
}

// DeleteConnectSession deletes a session of the environment, or returns
// store.ErrNotFound.
func (s *Store) DeleteConnectSession(ctx context.Context, environmentID, id int64) error {
	res, err := s.writer(ctx).ExecContext(ctx,
		`DELETE FROM connect_sessions WHERE id = ? AND environment_id = ?`, id, environmentID)
	if err != nil {
		return dbErr(ctx, "delete connect session", err)
	}
	if n, err := rowsAffected(ctx, "delete connect session", res); err != nil {
		return err
	} else if n == 0 {
		return notFound("connect session %d", id)
	}
	return nil
}

// DeleteExpiredConnectSessions deletes at most limit sessions (all when
// limit <= 0) that expired before before, soonest expired first, and
// returns how many it deleted.
func (s *Store) DeleteExpiredConnectSessions(ctx context.Context, before time.Time, limit int) (int, error) {
	if limit <= 0 {
		limit = -1 // no limit
	}
	res, err := s.writer(ctx).ExecContext(ctx, `
		DELETE FROM connect_sessions WHERE id IN (
			SELECT id FROM connect_sessions WHERE expires_at < ?
			ORDER BY expires_at, id LIMIT ?)`, micros(before), limit)
	if err != nil {
		return 0, dbErr(ctx, "delete expired connect sessions", err)
	}
	n, err := rowsAffected(ctx, "delete expired connect sessions", res)
	return int(n), err
}

// MarkSessionConnection marks the connection with the numeric id as
// created through a connect session, or returns store.ErrNotFound.
func (s *Store) MarkSessionConnection(ctx context.Context, environmentID, id int64) error {
	res, err := s.writer(ctx).ExecContext(ctx, `
		UPDATE connections SET created_by_connect_session = 1 WHERE id = ? AND environment_id = ?`,
		id, environmentID)
	if err != nil {
		return dbErr(ctx, "mark connection", err)
	}
	if n, err := rowsAffected(ctx, "mark connection", res); err != nil {
		return err
	} else if n == 0 {
		return notFound("connection %d", id)
	}
	return nil
}

// IsSessionConnection reports whether the connection with the numeric id
// is marked; a missing connection is not.
func (s *Store) IsSessionConnection(ctx context.Context, environmentID, id int64) (bool, error) {
	var marked bool
	err := s.reader(ctx).QueryRowContext(ctx, `
		SELECT created_by_connect_session FROM connections WHERE id = ? AND environment_id = ?`,
		id, environmentID).Scan(&marked)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, dbErr(ctx, "get connection mark", err)
	}
	return marked, nil
}
