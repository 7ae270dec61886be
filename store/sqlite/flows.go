package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/embedauth/connect/connections"
)

const flowColumns = `id, environment_id, session_id, state_hash, client_id, integration_key, provider, auth_mode,
	connection_id, reconnect, connection_config, tags, webhook_url_override, scopes, sealed_secrets, browser_hash,
	status, error_type, error_message, created_at, expires_at, completed_at`

// scanFlow reads a row of flowColumns.
func scanFlow(sc scanner) (*connections.OAuthFlow, error) {
	var (
		f                 connections.OAuthFlow
		cfg, tags, scopes sql.NullString
		created, expires  int64
		completed         sql.NullInt64
	)
	if err := sc.Scan(&f.ID, &f.EnvironmentID, &f.SessionID, &f.StateHash, &f.ClientID, &f.IntegrationKey,
		&f.Provider, &f.AuthMode, &f.ConnectionID, &f.Reconnect, &cfg, &tags, &f.WebhookURLOverride, &scopes,
		&f.SealedSecrets, &f.BrowserHash, &f.Status, &f.ErrorType, &f.ErrorMessage, &created, &expires,
		&completed); err != nil {
		return nil, err
	}
	f.CreatedAt, f.ExpiresAt, f.CompletedAt = fromMicros(created), fromMicros(expires), timePtr(completed)
	if err := decodeJSON(cfg, &f.ConnectionConfig); err != nil {
		return nil, err
	}
	if err := decodeJSON(tags, &f.Tags); err != nil {
		return nil, err
	}
	if err := decodeJSON(scopes, &f.Scopes); err != nil {
		return nil, err
	}
	return &f, nil
}

// CreateOAuthFlow stores f and sets its ID. A StateHash already stored is
// store.ErrConflict; a missing environment is store.ErrNotFound. Secrets is
// not stored: SealedSecrets is.
func (s *Store) CreateOAuthFlow(ctx context.Context, f *connections.OAuthFlow) error {
	if err := checkText([]any{f.ClientID, f.IntegrationKey, f.Provider, f.AuthMode, f.ConnectionID,
		f.ConnectionConfig, f.Tags, f.WebhookURLOverride, f.Scopes, f.SealedSecrets, f.Status,
		f.ErrorType, f.ErrorMessage}); err != nil {
		return err
	}
	cfg, err := encodeJSON(f.ConnectionConfig)
	if err != nil {
		return err
	}
	tags, err := encodeJSON(f.Tags)
	if err != nil {
		return err
	}
	scopes, err := encodeJSON(f.Scopes)
	if err != nil {
		return err
	}
	browser := f.BrowserHash
	if browser == nil {
		browser = []byte{}
	}
	err = s.writer(ctx).QueryRowContext(ctx, `
		INSERT INTO oauth_flows (environment_id, session_id, state_hash, client_id, integration_key, provider,
			auth_mode, connection_id, reconnect, connection_config, tags, webhook_url_override, scopes,
			sealed_secrets, browser_hash, status, error_type, error_message, created_at, expires_at, completed_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		RETURNING id`,
		f.EnvironmentID, f.SessionID, f.StateHash, f.ClientID, f.IntegrationKey, f.Provider,
		f.AuthMode, f.ConnectionID, boolInt(f.Reconnect), cfg, tags, f.WebhookURLOverride, scopes,
		f.SealedSecrets, browser, f.Status, f.ErrorType, f.ErrorMessage, micros(f.CreatedAt), micros(f.ExpiresAt),
		nullMicros(f.CompletedAt)).Scan(&f.ID)
	if err != nil {
		return parentErr(ctx, "create oauth flow", err)
	}
	return nil
}

// ClaimOAuthFlow moves the pending flow with the state hash to
// connections.FlowExchanging, in one statement (two callbacks with the
// same state cannot both claim it), and returns it. An unknown hash is
// store.ErrNotFound; a flow that is not pending is store.ErrConflict.
func (s *Store) ClaimOAuthFlow(ctx context.Context, hash []byte) (*connections.OAuthFlow, error) {
	q := s.writer(ctx)
	f, err := scanFlow(q.QueryRowContext(ctx, `
		UPDATE oauth_flows SET status = ?
		WHERE state_hash = ? AND status = ?
		RETURNING `+flowColumns, connections.FlowExchanging, hash, connections.FlowPending))
	if errors.Is(err, sql.ErrNoRows) {
		var status string
		err := q.QueryRowContext(ctx, `SELECT status FROM oauth_flows WHERE state_hash = ?`, hash).Scan(&status)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, notFound("oauth flow")
		}
		if err != nil {
			return nil, dbErr(ctx, "claim oauth flow", err)
		}
		return nil, conflict("oauth flow is %s", status)
	}
	if err != nil {
		return nil, dbErr(ctx, "claim oauth flow", err)
	}
	return f, nil
}

// CompleteOAuthFlow sets the outcome of a flow, or returns
// store.ErrNotFound.
func (s *Store) CompleteOAuthFlow(ctx context.Context, id int64, status, errorType, errorMessage string, at time.Time) error {
	if err := checkText([]string{status, errorType, errorMessage}); err != nil {
		return err
	}
	res, err := s.writer(ctx).ExecContext(ctx, `
		UPDATE oauth_flows SET status = ?, error_type = ?, error_message = ?, completed_at = ?
		WHERE id = ?`, status, errorType, errorMessage, micros(at), id)
	if err != nil {
		return dbErr(ctx, "complete oauth flow", err)
	}
	if n, err := rowsAffected(ctx, "complete oauth flow", res); err != nil {
		return err
	} else if n == 0 {
		return notFound("oauth flow %d", id)
	}
	return nil
}

var qFlowByClientID = defineHot(`
	SELECT ` + flowColumns + ` FROM oauth_flows
	WHERE client_id = ? AND client_id <> '' AND (? = 0 OR session_id = ?)
	ORDER BY id DESC LIMIT 1`)

// GetOAuthFlowByClientID returns the newest flow with the client id, of the
// session when sessionID is not 0, or store.ErrNotFound.
func (s *Store) GetOAuthFlowByClientID(ctx context.Context, clientID string, sessionID int64) (*connections.OAuthFlow, error) {
	if err := checkText(clientID); err != nil {
		return nil, err
	}
	var f *connections.OAuthFlow
	err := s.hotRow(ctx, false, qFlowByClientID, func(sc scanner) (err error) {
		f, err = scanFlow(sc)
		return err
	}, clientID, sessionID, sessionID)
	if err != nil {
		return nil, dbErr(ctx, "get oauth flow", err)
	}
	return f, nil
}

// DeleteExpiredOAuthFlows deletes at most limit flows (all when limit <= 0)
// that expired before before, soonest expired first, and returns how many
// it deleted.
func (s *Store) DeleteExpiredOAuthFlows(ctx context.Context, before time.Time, limit int) (int, error) {
	if limit <= 0 {
		limit = -1 // no limit
	}
	res, err := s.writer(ctx).ExecContext(ctx, `
		DELETE FROM oauth_flows WHERE id IN (
			SELECT id FROM oauth_flows WHERE expires_at < ?
			ORDER BY expires_at, id LIMIT ?)`, micros(before), limit)
	if err != nil {
		return 0, dbErr(ctx, "delete expired oauth flows", err)
	}
	n, err := rowsAffected(ctx, "delete expired oauth flows", res)
	return int(n), err
}
