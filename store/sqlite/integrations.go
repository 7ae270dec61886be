package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/embedauth/connect/integrations"
)

const integrationColumns = `id, environment_id, unique_key, provider, display_name, forward_webhooks,
	integration_config, sealed_credentials, sealed_custom, created_at, updated_at`

// scanIntegration reads a row of integrationColumns.
func scanIntegration(sc scanner) (*integrations.Integration, error) {
	var (
		in               integrations.Integration
		cfg              sql.NullString
		created, updated int64
	)
	if err := sc.Scan(&in.ID, &in.EnvironmentID, &in.UniqueKey, &in.Provider, &in.DisplayName,
		&in.ForwardWebhooks, &cfg, &in.SealedCredentials, &in.SealedCustom, &created, &updated); err != nil {
		return nil, err
	}
	in.CreatedAt, in.UpdatedAt = fromMicros(created), fromMicros(updated)
	if err := decodeJSON(cfg, &in.IntegrationConfig); err != nil {
		return nil, err
	}
	return &in, nil
}

// integrationConfig checks the stored text of in and encodes its
// configuration. Credentials and Custom are not stored.
func integrationConfig(in *integrations.Integration) (sql.NullString, error) {
	if err := checkText([]any{in.UniqueKey, in.Provider, in.DisplayName, in.IntegrationConfig,
		in.SealedCredentials, in.SealedCustom}); err != nil {
		return sql.NullString{}, err
	}
	return encodeJSON(in.IntegrationConfig)
}

// CreateIntegration stores in and sets its ID. A UniqueKey already used in
// the environment is store.ErrConflict; a missing environment is
// store.ErrNotFound.
func (s *Store) CreateIntegration(ctx context.Context, in *integrations.Integration) error {
	cfg, err := integrationConfig(in)
	if err != nil {
		return err
	}
	err = s.writer(ctx).QueryRowContext(ctx, `
		INSERT INTO integrations (environment_id, unique_key, provider, display_name,
			forward_webhooks, integration_config, sealed_credentials, sealed_custom, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		RETURNING id`,
		in.EnvironmentID, in.UniqueKey, in.Provider, in.DisplayName, boolInt(in.ForwardWebhooks), cfg,
		in.SealedCredentials, in.SealedCustom, micros(in.CreatedAt), micros(in.UpdatedAt)).Scan(&in.ID)
	if err != nil {
		return parentErr(ctx, "create integration", err)
	}
	return nil
}

var qGetIntegration = defineHot(`SELECT ` + integrationColumns + `
	FROM integrations WHERE environment_id = ? AND unique_key = ?`)

// GetIntegration returns the integration of the environment with the key, or
// store.ErrNotFound.
func (s *Store) GetIntegration(ctx context.Context, environmentID int64, uniqueKey string) (*integrations.Integration, error) {
	if err := checkText(uniqueKey); err != nil {
		return nil, err
	}
	var in *integrations.Integration
	err := s.hotRow(ctx, false, qGetIntegration, func(sc scanner) (err error) {
		in, err = scanIntegration(sc)
		return err
	}, environmentID, uniqueKey)
	if err != nil {
		return nil, dbErr(ctx, "get integration", err)
	}
	return in, nil
}

// ListIntegrations returns the environment's integrations ordered by ID.
func (s *Store) ListIntegrations(ctx context.Context, environmentID int64) ([]*integrations.Integration, error) {
	rows, err := s.reader(ctx).QueryContext(ctx, `SELECT `+integrationColumns+`
		FROM integrations WHERE environment_id = ? ORDER BY id`, environmentID)
	if err != nil {
		return nil, dbErr(ctx, "list integrations", err)
	}
	defer rows.Close()
	out := []*integrations.Integration{}
	for rows.Next() {
		in, err := scanIntegration(rows)
		if err != nil {
			return nil, dbErr(ctx, "list integrations", err)
		}
		out = append(out, in)
	}
	if err := rows.Err(); err != nil {
		return nil, dbErr(ctx, "list integrations", err)
	}
	return out, nil
}

// UpdateIntegration replaces every field but ID, EnvironmentID and CreatedAt
// of the integration of in.EnvironmentID with in.ID. A UniqueKey used by
// another integration is store.ErrConflict, and so is renaming an
// integration that has connections (the connections' foreign key is ON
// UPDATE RESTRICT). A missing integration is store.ErrNotFound. A refused
// update undoes only itself: an enclosing transaction goes on.
func (s *Store) UpdateIntegration(ctx context.Context, in *integrations.Integration) error {
	cfg, err := integrationConfig(in)
	if err != nil {
		return err
	}
	// The update skips a rename of an integration that has connections
	// rather than let the foreign key refuse it (SQLite reports ON UPDATE
	// RESTRICT as a trigger's constraint, not as a foreign key's).
	q := s.writer(ctx)
	res, err := q.ExecContext(ctx, `
		UPDATE integrations SET unique_key = ?, provider = ?, display_name = ?,
			forward_webhooks = ?, integration_config = ?, sealed_credentials = ?,
			sealed_custom = ?, updated_at = ?
		WHERE id = ? AND environment_id = ?
			AND (unique_key = ? OR NOT EXISTS (SELECT 1 FROM connections c
				WHERE c.environment_id = integrations.environment_id AND c.integration_key = integrations.unique_key))`,
		in.UniqueKey, in.Provider, in.DisplayName, boolInt(in.ForwardWebhooks), cfg,
		in.SealedCredentials, in.SealedCustom, micros(in.UpdatedAt), in.ID, in.EnvironmentID, in.UniqueKey)
	if err != nil {
		return dbErr(ctx, "update integration", err)
	}
	if n, err := rowsAffected(ctx, "update integration", res); err != nil || n == 1 {
		return err
	}
	var one int
	err = q.QueryRowContext(ctx, `SELECT 1 FROM integrations WHERE id = ? AND environment_id = ?`,
		in.ID, in.EnvironmentID).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return notFound("integration %d", in.ID)
	}
	if err != nil {
		return dbErr(ctx, "update integration", err)
	}
	return conflict("integration %q: it has connections, and cannot be renamed", in.UniqueKey)
}

// DeleteIntegration deletes the integration and all its connections, or
// returns store.ErrNotFound.
func (s *Store) DeleteIntegration(ctx context.Context, environmentID int64, uniqueKey string) error {
	if err := checkText(uniqueKey); err != nil {
		return err
	}
	res, err := s.writer(ctx).ExecContext(ctx,
		`DELETE FROM integrations WHERE environment_id = ? AND unique_key = ?`, environmentID, uniqueKey)
	if err != nil {
		return dbErr(ctx, "delete integration", err)
	}
	if n, err := rowsAffected(ctx, "delete integration", res); err != nil {
		return err
	} else if n == 0 {
		return notFound("integration %q", uniqueKey)
	}
	return nil
}
