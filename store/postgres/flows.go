package postgres

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/lib/pq"

	"github.com/embedauth/connect/connections"
)

const flowColumns = `id, environment_id, session_id, state_hash, client_id, integration_key, provider, auth_mode,
	connection_id, reconnect, connection_config, tags, webhook_url_override, scopes, sealed_secrets, browser_hash,
	status, error_type, error_message, created_at, expires_at, completed_at`

type flowRow struct {
	ID                 int64
	EnvironmentID      int64
	SessionID          int64
	StateHash          []byte
	ClientID           string
	IntegrationKey     string
	Provider           string
	AuthMode           string
	ConnectionID       string
	Reconnect          bool
	ConnectionConfig   []byte
	Tags               []byte
	WebhookURLOverride string
	Scopes             pq.StringArray
	SealedSecrets      string
	BrowserHash        []byte
	Status             string
	ErrorType          string
	ErrorMessage       string
	CreatedAt          time.Time
	ExpiresAt          time.Time
	CompletedAt        *time.Time
}

// scanTargets lists the fields in the order of flowColumns.
func (r *flowRow) scanTargets() []any {
	return []any{&r.ID, &r.EnvironmentID, &r.SessionID, &r.StateHash, &r.ClientID, &r.IntegrationKey, &r.Provider,
		&r.AuthMode, &r.ConnectionID, &r.Reconnect, &r.ConnectionConfig, &r.Tags, &r.WebhookURLOverride, &r.Scopes,
		&r.SealedSecrets, &r.BrowserHash, &r.Status, &r.ErrorType, &r.ErrorMessage, &r.CreatedAt, &r.ExpiresAt,
		&r.CompletedAt}
}

func (r *flowRow) flow() (*connections.OAuthFlow, error) {
	f := &connections.OAuthFlow{
		ID:                 r.ID,
		EnvironmentID:      r.EnvironmentID,
		SessionID:          r.SessionID,
		StateHash:          r.StateHash,
		ClientID:           r.ClientID,
		IntegrationKey:     r.IntegrationKey,
		Provider:           r.Provider,
		AuthMode:           r.AuthMode,
		ConnectionID:       r.ConnectionID,
		Reconnect:          r.Reconnect,
		WebhookURLOverride: r.WebhookURLOverride,
		Scopes:             []string(r.Scopes),
		SealedSecrets:      r.SealedSecrets,
		BrowserHash:        r.BrowserHash,
		Status:             r.Status,
		ErrorType:          r.ErrorType,
		ErrorMessage:       r.ErrorMessage,
		CreatedAt:          r.CreatedAt.UTC(),
		ExpiresAt:          r.ExpiresAt.UTC(),
		CompletedAt:        utcPtr(r.CompletedAt),
	}
	if err := decodeJSON("connection_config", r.ConnectionConfig, &f.ConnectionConfig); err != nil {
		return nil, err
	}
	if err := decodeJSON("tags", r.Tags, &f.Tags); err != nil {
		return nil, err
	}
	return f, nil
}

var (
	qCreateFlow = newQuery(`
	INSERT INTO {s}.oauth_flows (environment_id, session_id, state_hash, client_id, integration_key, provider,
		auth_mode, connection_id, reconnect, connection_config, tags, webhook_url_override, scopes, sealed_secrets,
		browser_hash, status, error_type, error_message, created_at, expires_at, completed_at)
	SELECT $1::bigint, $2::bigint, $3::bytea, $4::text, $5::text, $6::text, $7::text, $8::text, $9::boolean,
		$10::jsonb, $11::jsonb, $12::text, $13::text[], $14::text, $15::bytea, $16::text, $17::text, $18::text,
		$19::timestamptz, $20::timestamptz, $21::timestamptz
	WHERE EXISTS (SELECT 1 FROM {s}.environments WHERE id = $1)
	ON CONFLICT DO NOTHING
	RETURNING id`)
	qClaimFlow = newQuery(`
	UPDATE {s}.oauth_flows SET status = 'exchanging'
	WHERE state_hash = $1 AND status = 'pending'
	RETURNING ` + flowColumns)
	qFlowStatusByState = newQuery(`SELECT status FROM {s}.oauth_flows WHERE state_hash = $1`)
	qCompleteFlow      = newQuery(`
	UPDATE {s}.oauth_flows SET status = $2, error_type = $3, error_message = $4, completed_at = $5
	WHERE id = $1`)
	// qFlowByClient is run with $2 = 0 for any session.
	qFlowByClient = newPreparedQuery(`
	SELECT ` + flowColumns + ` FROM {s}.oauth_flows
	WHERE client_id = $1 AND client_id <> '' AND ($2 = 0 OR session_id = $2)
	ORDER BY id DESC LIMIT 1`)
	qDeleteExpiredFlows = newQuery(`
	DELETE FROM {s}.oauth_flows WHERE id IN (
		SELECT id FROM {s}.oauth_flows WHERE expires_at < $1
		ORDER BY expires_at, id LIMIT $2
		FOR UPDATE SKIP LOCKED)`)
)

// CreateOAuthFlow stores f and sets its ID. A StateHash already stored is
// store.ErrConflict; a missing environment is store.ErrNotFound. Secrets is
// not stored: SealedSecrets is.
func (s *Store) CreateOAuthFlow(ctx context.Context, f *connections.OAuthFlow) error {
	cfg, err := jsonArg("connection_config", f.ConnectionConfig)
	if err != nil {
		return err
	}
	tags, err := jsonArg("tags", f.Tags)
	if err != nil {
		return err
	}
	browser := f.BrowserHash
	if browser == nil {
		browser = []byte{}
	}
	var id int64
	err = s.get(ctx, qCreateFlow, &id,
		f.EnvironmentID, f.SessionID, f.StateHash, f.ClientID, f.IntegrationKey, f.Provider, f.AuthMode,
		f.ConnectionID, f.Reconnect, cfg, tags, f.WebhookURLOverride, pq.StringArray(f.Scopes), f.SealedSecrets,
		browser, f.Status, f.ErrorType, f.ErrorMessage, f.CreatedAt, f.ExpiresAt, utcPtr(f.CompletedAt))
	if errors.Is(err, sql.ErrNoRows) {
		if _, err := s.GetEnvironment(ctx, f.EnvironmentID); err != nil {
			return err
		}
		return conflict("oauth flow state")
	}
	if err != nil {
		return dbErr(ctx, "create oauth flow", err, nil)
	}
	f.ID = id
	return nil
}

// ClaimOAuthFlow moves the pending flow with the state hash to
// connections.FlowExchanging, in one statement (two callbacks with the
// same state cannot both claim it), and returns it. An unknown hash is
// store.ErrNotFound; a flow that is not pending is store.ErrConflict.
func (s *Store) ClaimOAuthFlow(ctx context.Context, hash []byte) (*connections.OAuthFlow, error) {
	var r flowRow
	err := s.get(ctx, qClaimFlow, &r, hash)
	if errors.Is(err, sql.ErrNoRows) {
		var status string
		err := s.get(ctx, qFlowStatusByState, &status, hash)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, notFound("oauth flow")
		}
		if err != nil {
			return nil, dbErr(ctx, "claim oauth flow", err, nil)
		}
		return nil, conflict("oauth flow is %s", status)
	}
	if err != nil {
		return nil, dbErr(ctx, "claim oauth flow", err, nil)
	}
	return r.flow()
}

// CompleteOAuthFlow sets the outcome of a flow, or returns
// store.ErrNotFound.
func (s *Store) CompleteOAuthFlow(ctx context.Context, id int64, status, errorType, errorMessage string, at time.Time) error {
	res, err := s.exec(ctx, qCompleteFlow, id, status, errorType, errorMessage, at.UTC())
	if err != nil {
		return dbErr(ctx, "complete oauth flow", err, nil)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return notFound("oauth flow %d", id)
	}
	return nil
}

// GetOAuthFlowByClientID returns the newest flow with the client id, of the
// session when sessionID is not 0, or store.ErrNotFound.
func (s *Store) GetOAuthFlowByClientID(ctx context.Context, clientID string, sessionID int64) (*connections.OAuthFlow, error) {
	var r flowRow
	err := s.get(ctx, qFlowByClient, &r, clientID, sessionID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("oauth flow of client %q", clientID)
	}
	if err != nil {
		return nil, dbErr(ctx, "get oauth flow", err, nil)
	}
	return r.flow()
}

// DeleteExpiredOAuthFlows deletes at most limit flows (all when limit <= 0)
// that expired before before, soonest expired first, and returns how many
// it deleted. Flows another transaction is deleting are skipped.
func (s *Store) DeleteExpiredOAuthFlows(ctx context.Context, before time.Time, limit int) (int, error) {
	var lim any
	if limit > 0 {
		lim = limit
	}
	res, err := s.exec(ctx, qDeleteExpiredFlows, before, lim)
	if err != nil {
		return 0, dbErr(ctx, "delete expired oauth flows", err, nil)
	}
	n, err := res.RowsAffected()
	return int(n), err
}
