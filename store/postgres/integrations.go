package postgres

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/store"
)

const integrationColumns = `id, environment_id, unique_key, provider, display_name, forward_webhooks,
	integration_config, sealed_credentials, sealed_custom, created_at, updated_at`

type integrationRow struct {
	ID                int64     `db:"id"`
	EnvironmentID     int64     `db:"environment_id"`
	UniqueKey         string    `db:"unique_key"`
	Provider          string    `db:"provider"`
	DisplayName       string    `db:"display_name"`
	ForwardWebhooks   bool      `db:"forward_webhooks"`
	IntegrationConfig []byte    `db:"integration_config"`
	SealedCredentials string    `db:"sealed_credentials"`
	SealedCustom      string    `db:"sealed_custom"`
	CreatedAt         time.Time `db:"created_at"`
	UpdatedAt         time.Time `db:"updated_at"`
}

func (r *integrationRow) integration() (*integrations.Integration, error) {
	in := &integrations.Integration{
		ID:                r.ID,
		EnvironmentID:     r.EnvironmentID,
		UniqueKey:         r.UniqueKey,
		Provider:          r.Provider,
		DisplayName:       r.DisplayName,
		ForwardWebhooks:   r.ForwardWebhooks,
		SealedCredentials: r.SealedCredentials,
		SealedCustom:      r.SealedCustom,
		CreatedAt:         r.CreatedAt.UTC(),
		UpdatedAt:         r.UpdatedAt.UTC(),
	}
	if err := decodeJSON("integration_config", r.IntegrationConfig, &in.IntegrationConfig); err != nil {
		return nil, err
	}
	return in, nil
}

var qCreateIntegration = newQuery(`
	INSERT INTO {s}.integrations (environment_id, unique_key, provider, display_name,
		forward_webhooks, integration_config, sealed_credentials, sealed_custom, created_at, updated_at)
	SELECT $1::bigint, $2::text, $3::text, $4::text, $5::boolean, $6::jsonb, $7::text, $8::text,
		$9::timestamptz, $10::timestamptz
	WHERE EXISTS (SELECT 1 FROM {s}.environments WHERE id = $1)
	ON CONFLICT DO NOTHING
	RETURNING id`)

// CreateIntegration stores in and sets its ID. A UniqueKey already used in
// the environment is store.ErrConflict; a missing environment is
// store.ErrNotFound.
func (s *Store) CreateIntegration(ctx context.Context, in *integrations.Integration) error {
	cfg, err := jsonArg("integration_config", in.IntegrationConfig)
	if err != nil {
		return err
	}
	var id int64
	err = s.get(ctx, qCreateIntegration, &id,
		in.EnvironmentID, in.UniqueKey, in.Provider, in.DisplayName, in.ForwardWebhooks, cfg,
		in.SealedCredentials, in.SealedCustom, in.CreatedAt, in.UpdatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		if _, err := s.GetEnvironment(ctx, in.EnvironmentID); err != nil {
			return err
		}
		return conflict("integration %q", in.UniqueKey)
	}
	if err != nil {
		return dbErr(ctx, "create integration", err, store.ErrNotFound)
	}
	in.ID = id
	return nil
}

var (
	qGetIntegration = newPreparedQuery(`SELECT ` + integrationColumns + ` FROM {s}.integrations
	WHERE environment_id = $1 AND unique_key = $2`)
	qListIntegrations = newQuery(`SELECT ` + integrationColumns + ` FROM {s}.integrations
	WHERE environment_id = $1 ORDER BY id`)
)

// GetIntegration returns the integration of the environment with the key, or
// store.ErrNotFound.
func (s *Store) GetIntegration(ctx context.Context, environmentID int64, uniqueKey string) (*integrations.Integration, error) {
	var r integrationRow
	err := s.get(ctx, qGetIntegration, &r, environmentID, uniqueKey)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("integration %q", uniqueKey)
	}
	if err != nil {
		return nil, dbErr(ctx, "get integration", err, nil)
	}
	return r.integration()
}

// ListIntegrations returns the environment's integrations ordered by ID.
func (s *Store) ListIntegrations(ctx context.Context, environmentID int64) ([]*integrations.Integration, error) {
	var rows []integrationRow
	err := sqlx.SelectContext(ctx, s.ext(ctx), &rows, s.text(qListIntegrations), environmentID)
	if err != nil {
		return nil, dbErr(ctx, "list integrations", err, nil)
	}
	out := make([]*integrations.Integration, 0, len(rows))
	for i := range rows {
		in, err := rows[i].integration()
		if err != nil {
			return nil, err
		}
		out = append(out, in)
	}
	return out, nil
}

var (
	qUpdateIntegration = newQuery(`
	UPDATE {s}.integrations AS i SET unique_key = $3, provider = $4, display_name = $5,
		forward_webhooks = $6, integration_config = $7, sealed_credentials = $8,
		sealed_custom = $9, updated_at = $10
	WHERE i.id = $1 AND i.environment_id = $2
		AND NOT EXISTS (SELECT 1 FROM {s}.integrations o
			WHERE o.environment_id = $2 AND o.unique_key = $3 AND o.id <> $1)
		AND (i.unique_key = $3 OR NOT EXISTS (SELECT 1 FROM {s}.connections c
			WHERE c.environment_id = i.environment_id AND c.integration_key = i.unique_key))`)
	qIntegrationExists = newQuery(`SELECT EXISTS (SELECT 1 FROM {s}.integrations
	WHERE id = $1 AND environment_id = $2)`)
	qDeleteIntegration = newQuery(`DELETE FROM {s}.integrations
	WHERE environment_id = $1 AND unique_key = $2`)
)

// UpdateIntegration replaces every field but ID, EnvironmentID and CreatedAt
// of the integration of in.EnvironmentID with in.ID. A UniqueKey used by
// another integration is store.ErrConflict, and so is renaming an
// integration that has connections (the connections' foreign key is ON
// UPDATE RESTRICT). A missing integration is store.ErrNotFound.
func (s *Store) UpdateIntegration(ctx context.Context, in *integrations.Integration) error {
	cfg, err := jsonArg("integration_config", in.IntegrationConfig)
	if err != nil {
		return err
	}
	// The NOT EXISTS conditions refuse the common conflicts without raising
	// an error, which would abort an enclosing transaction; the constraints
	// still catch the races.
	res, err := s.exec(ctx, qUpdateIntegration,
		in.ID, in.EnvironmentID, in.UniqueKey, in.Provider, in.DisplayName, in.ForwardWebhooks, cfg,
		in.SealedCredentials, in.SealedCustom, in.UpdatedAt)
	if err != nil {
		return dbErr(ctx, "update integration", err, store.ErrConflict)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return nil
	}
	var exists bool
	err = s.get(ctx, qIntegrationExists, &exists, in.ID, in.EnvironmentID)
	if err != nil {
		return dbErr(ctx, "update integration", err, nil)
	}
	if !exists {
		return notFound("integration %d", in.ID)
	}
	return conflict("integration %q: the key is taken or the integration has connections", in.UniqueKey)
}

// DeleteIntegration deletes the integration and all its connections, or
// returns store.ErrNotFound.
func (s *Store) DeleteIntegration(ctx context.Context, environmentID int64, uniqueKey string) error {
	res, err := s.exec(ctx, qDeleteIntegration, environmentID, uniqueKey)
	if err != nil {
		return dbErr(ctx, "delete integration", err, nil)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return notFound("integration %q", uniqueKey)
	}
	return nil
}
