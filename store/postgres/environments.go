package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/store"
)

const envColumns = `id, account, name, webhook_urls, sealed_webhook_signing_key,
	webhook_settings, connect_ui, callback_url, created_at, updated_at`

type envRow struct {
	ID                      int64          `db:"id"`
	Account                 string         `db:"account"`
	Name                    string         `db:"name"`
	WebhookURLs             pq.StringArray `db:"webhook_urls"`
	SealedWebhookSigningKey string         `db:"sealed_webhook_signing_key"`
	WebhookSettings         []byte         `db:"webhook_settings"`
	ConnectUI               []byte         `db:"connect_ui"`
	CallbackURL             string         `db:"callback_url"`
	CreatedAt               time.Time      `db:"created_at"`
	UpdatedAt               time.Time      `db:"updated_at"`
}

func (r *envRow) environment() (*environments.Environment, error) {
	e := &environments.Environment{
		ID:                      r.ID,
		Account:                 r.Account,
		Name:                    r.Name,
		WebhookURLs:             []string(r.WebhookURLs),
		SealedWebhookSigningKey: r.SealedWebhookSigningKey,
		CallbackURL:             r.CallbackURL,
		CreatedAt:               r.CreatedAt.UTC(),
		UpdatedAt:               r.UpdatedAt.UTC(),
	}
	if err := decodeJSON("webhook_settings", r.WebhookSettings, &e.WebhookSettings); err != nil {
		return nil, err
	}
	if err := decodeJSON("connect_ui", r.ConnectUI, &e.ConnectUI); err != nil {
		return nil, err
	}
	return e, nil
}

// envArgs returns the arguments $2.. of an environment write: account, name,
// webhook_urls, sealed_webhook_signing_key, webhook_settings, connect_ui,
// callback_url, created_at, updated_at.
func envArgs(env *environments.Environment) ([]any, error) {
	settings, err := jsonArg("webhook_settings", env.WebhookSettings)
	if err != nil {
		return nil, err
	}
	ui, err := jsonArg("connect_ui", env.ConnectUI)
	if err != nil {
		return nil, err
	}
	return []any{env.Account, env.Name, pq.StringArray(env.WebhookURLs), env.SealedWebhookSigningKey,
		settings, ui, env.CallbackURL, env.CreatedAt, env.UpdatedAt}, nil
}

var qCreateEnvironment = newQuery(`
	INSERT INTO {s}.environments (account, name, webhook_urls, sealed_webhook_signing_key,
		webhook_settings, connect_ui, callback_url, created_at, updated_at)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
	ON CONFLICT DO NOTHING
	RETURNING id`)

// CreateEnvironment stores env and sets its ID. A duplicate Name is
// store.ErrConflict.
func (s *Store) CreateEnvironment(ctx context.Context, env *environments.Environment) error {
	args, err := envArgs(env)
	if err != nil {
		return err
	}
	var id int64
	err = s.get(ctx, qCreateEnvironment, &id, args...)
	if errors.Is(err, sql.ErrNoRows) {
		return conflict("environment %q", env.Name)
	}
	if err != nil {
		return dbErr(ctx, "create environment", err, nil)
	}
	env.ID = id
	return nil
}

var (
	qGetEnvironment       = newPreparedQuery(`SELECT ` + envColumns + ` FROM {s}.environments WHERE id = $1`)
	qGetEnvironmentByName = newPreparedQuery(`SELECT ` + envColumns + ` FROM {s}.environments WHERE name = $1`)
	qListEnvironments     = newQuery(`SELECT ` + envColumns + ` FROM {s}.environments ORDER BY id`)
)

// GetEnvironment returns the environment with the id, or store.ErrNotFound.
func (s *Store) GetEnvironment(ctx context.Context, id int64) (*environments.Environment, error) {
	return s.getEnvironment(ctx, qGetEnvironment, id)
}

// GetEnvironmentByName returns the environment with the name, or
// store.ErrNotFound.
func (s *Store) GetEnvironmentByName(ctx context.Context, name string) (*environments.Environment, error) {
	return s.getEnvironment(ctx, qGetEnvironmentByName, name)
}

func (s *Store) getEnvironment(ctx context.Context, q *query, arg any) (*environments.Environment, error) {
	var r envRow
	err := s.get(ctx, q, &r, arg)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("environment %v", arg)
	}
	if err != nil {
		return nil, dbErr(ctx, "get environment", err, nil)
	}
	return r.environment()
}

// ListEnvironments returns every environment ordered by ID.
func (s *Store) ListEnvironments(ctx context.Context) ([]*environments.Environment, error) {
	var rows []envRow
	if err := sqlx.SelectContext(ctx, s.ext(ctx), &rows, s.text(qListEnvironments)); err != nil {
		return nil, dbErr(ctx, "list environments", err, nil)
	}
	out := make([]*environments.Environment, 0, len(rows))
	for i := range rows {
		e, err := rows[i].environment()
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

var qUpdateEnvironment = newQuery(`
	UPDATE {s}.environments SET account = $1, name = $2, webhook_urls = $3,
		sealed_webhook_signing_key = $4, webhook_settings = $5, connect_ui = $6,
		callback_url = $7, updated_at = $9
	WHERE id = $8
		AND NOT EXISTS (SELECT 1 FROM {s}.environments o WHERE o.name = $2 AND o.id <> $8)`)

// UpdateEnvironment replaces every field of the environment with env.ID but
// ID and CreatedAt. A missing environment is store.ErrNotFound; a Name used
// by another environment is store.ErrConflict.
func (s *Store) UpdateEnvironment(ctx context.Context, env *environments.Environment) error {
	args, err := envArgs(env)
	if err != nil {
		return err
	}
	// args[7] is created_at, which does not change; $8 is reused for the id.
	args[7] = env.ID
	res, err := s.exec(ctx, qUpdateEnvironment, args...)
	if err != nil {
		return dbErr(ctx, "update environment", err, nil)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return nil
	}
	if _, err := s.GetEnvironment(ctx, env.ID); err != nil {
		return err
	}
	return conflict("environment %q", env.Name)
}

var qCreateAPIKey = newQuery(`
	INSERT INTO {s}.api_keys (environment_id, name, hash, hint, scopes, created_at)
	SELECT $1::bigint, $2::text, $3::bytea, $4::text, $5::text[], $6::timestamptz
	WHERE EXISTS (SELECT 1 FROM {s}.environments WHERE id = $1)
	ON CONFLICT DO NOTHING
	RETURNING id`)

// CreateAPIKey stores key and sets its ID. A duplicate Hash is
// store.ErrConflict; a missing environment is store.ErrNotFound.
func (s *Store) CreateAPIKey(ctx context.Context, key *environments.APIKey) error {
	var id int64
	err := s.get(ctx, qCreateAPIKey, &id,
		key.EnvironmentID, key.Name, key.Hash, key.Hint, pq.StringArray(key.Scopes), key.CreatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		if _, err := s.GetEnvironment(ctx, key.EnvironmentID); err != nil {
			return err
		}
		return conflict("api key")
	}
	if err != nil {
		return dbErr(ctx, "create api key", err, store.ErrNotFound)
	}
	key.ID = id
	return nil
}

const apiKeyColumns = `id, environment_id, name, hash, hint, scopes, created_at`

type apiKeyRow struct {
	ID            int64          `db:"id"`
	EnvironmentID int64          `db:"environment_id"`
	Name          string         `db:"name"`
	Hash          []byte         `db:"hash"`
	Hint          string         `db:"hint"`
	Scopes        pq.StringArray `db:"scopes"`
	CreatedAt     time.Time      `db:"created_at"`
}

func (r *apiKeyRow) apiKey() *environments.APIKey {
	return &environments.APIKey{
		ID:            r.ID,
		EnvironmentID: r.EnvironmentID,
		Name:          r.Name,
		Hash:          r.Hash,
		Hint:          r.Hint,
		Scopes:        []string(r.Scopes),
		CreatedAt:     r.CreatedAt.UTC(),
	}
}

var (
	qGetAPIKeyByHash = newPreparedQuery(`SELECT ` + apiKeyColumns + ` FROM {s}.api_keys WHERE hash = $1`)
	qListAPIKeys     = newQuery(`SELECT ` + apiKeyColumns + ` FROM {s}.api_keys WHERE environment_id = $1 ORDER BY id`)
	qDeleteAPIKey    = newQuery(`DELETE FROM {s}.api_keys WHERE environment_id = $1 AND id = $2`)
)

// GetAPIKeyByHash returns the key with the hash, or store.ErrNotFound.
func (s *Store) GetAPIKeyByHash(ctx context.Context, hash []byte) (*environments.APIKey, error) {
	var r apiKeyRow
	err := s.get(ctx, qGetAPIKeyByHash, &r, hash)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("api key")
	}
	if err != nil {
		return nil, dbErr(ctx, "get api key", err, nil)
	}
	return r.apiKey(), nil
}

// ListAPIKeys returns the keys of an environment ordered by ID.
func (s *Store) ListAPIKeys(ctx context.Context, environmentID int64) ([]*environments.APIKey, error) {
	var rows []apiKeyRow
	err := sqlx.SelectContext(ctx, s.ext(ctx), &rows, s.text(qListAPIKeys), environmentID)
	if err != nil {
		return nil, dbErr(ctx, "list api keys", err, nil)
	}
	out := make([]*environments.APIKey, len(rows))
	for i := range rows {
		out[i] = rows[i].apiKey()
	}
	return out, nil
}

// DeleteAPIKey deletes a key of the environment, or returns
// store.ErrNotFound.
func (s *Store) DeleteAPIKey(ctx context.Context, environmentID, id int64) error {
	res, err := s.exec(ctx, qDeleteAPIKey, environmentID, id)
	if err != nil {
		return dbErr(ctx, "delete api key", err, nil)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return notFound("api key %d", id)
	}
	return nil
}

var (
	qLockEnvironment = newQuery(`SELECT id FROM {s}.environments WHERE id = $1 FOR NO KEY UPDATE`)
	qDeleteVariables = newQuery(`DELETE FROM {s}.environment_variables WHERE environment_id = $1`)
	qInsertVariables = newQuery(`
	INSERT INTO {s}.environment_variables (environment_id, name, sealed_value)
	SELECT $1, n, v FROM unnest($2::text[], $3::text[]) AS t(n, v)`)
	qListVariables = newQuery(`
	SELECT name, sealed_value FROM {s}.environment_variables
	WHERE environment_id = $1 ORDER BY name`)
)

// SetVariables replaces every variable of the environment. A missing
// environment is store.ErrNotFound; two variables with one name are
// store.ErrInvalid.
func (s *Store) SetVariables(ctx context.Context, environmentID int64, vars []environments.Variable) error {
	names := make([]string, len(vars))
	values := make([]string, len(vars))
	for i, v := range vars {
		if slices.Contains(names[:i], v.Name) {
			return fmt.Errorf("postgres: %w: variable %q is given twice", store.ErrInvalid, v.Name)
		}
		names[i], values[i] = v.Name, v.SealedValue
	}
	return s.WithTx(ctx, func(ctx context.Context) error {
		// Lock the environment row so that concurrent replacements of one
		// environment's variables run one after the other.
		var id int64
		err := s.get(ctx, qLockEnvironment, &id, environmentID)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound("environment %d", environmentID)
		}
		if err != nil {
			return dbErr(ctx, "set variables", err, nil)
		}
		if _, err := s.exec(ctx, qDeleteVariables, environmentID); err != nil {
			return dbErr(ctx, "set variables", err, nil)
		}
		if len(vars) == 0 {
			return nil
		}
		_, err = s.exec(ctx, qInsertVariables,
			environmentID, pq.StringArray(names), pq.StringArray(values))
		return dbErr(ctx, "set variables", err, store.ErrNotFound)
	})
}

// ListVariables returns the variables of the environment ordered by name.
func (s *Store) ListVariables(ctx context.Context, environmentID int64) ([]environments.Variable, error) {
	rows, err := s.ext(ctx).QueryContext(ctx, s.text(qListVariables), environmentID)
	if err != nil {
		return nil, dbErr(ctx, "list variables", err, nil)
	}
	defer rows.Close()
	out := []environments.Variable{}
	for rows.Next() {
		var v environments.Variable
		if err := rows.Scan(&v.Name, &v.SealedValue); err != nil {
			return nil, dbErr(ctx, "list variables", err, nil)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, dbErr(ctx, "list variables", err, nil)
	}
	return out, nil
}
