package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"

	"github.com/embedauth/connect/environments"
)

const envColumns = `id, account, name, webhook_urls, sealed_webhook_signing_key,
	webhook_settings, connect_ui, callback_url, created_at, updated_at`

// scanEnvironment reads a row of envColumns.
func scanEnvironment(sc scanner) (*environments.Environment, error) {
	var (
		e                environments.Environment
		urls             sql.NullString
		settings, ui     sql.NullString
		created, updated int64
	)
	if err := sc.Scan(&e.ID, &e.Account, &e.Name, &urls, &e.SealedWebhookSigningKey,
		&settings, &ui, &e.CallbackURL, &created, &updated); err != nil {
		return nil, err
	}
	e.CreatedAt, e.UpdatedAt = fromMicros(created), fromMicros(updated)
	if err := decodeJSON(urls, &e.WebhookURLs); err != nil {
		return nil, err
	}
	if err := decodeJSON(settings, &e.WebhookSettings); err != nil {
		return nil, err
	}
	if err := decodeJSON(ui, &e.ConnectUI); err != nil {
		return nil, err
	}
	return &e, nil
}

// envArgs returns the values of an environment's columns from account to
// callback_url.
func envArgs(env *environments.Environment) ([]any, error) {
	if err := checkText(env); err != nil {
		return nil, err
	}
	urls, err := encodeJSON(env.WebhookURLs)
	if err != nil {
		return nil, err
	}
	settings, err := encodeJSON(env.WebhookSettings)
	if err != nil {
		return nil, err
	}
	ui, err := encodeJSON(env.ConnectUI)
	if err != nil {
		return nil, err
	}
	return []any{env.Account, env.Name, urls, env.SealedWebhookSigningKey, settings, ui, env.CallbackURL}, nil
}

// CreateEnvironment stores env and sets its ID. A duplicate Name is
// store.ErrConflict.
func (s *Store) CreateEnvironment(ctx context.Context, env *environments.Environment) error {
	args, err := envArgs(env)
	if err != nil {
		return err
	}
	args = append(args, micros(env.CreatedAt), micros(env.UpdatedAt))
	err = s.writer(ctx).QueryRowContext(ctx, `
		INSERT INTO environments (account, name, webhook_urls, sealed_webhook_signing_key,
			webhook_settings, connect_ui, callback_url, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
		RETURNING id`, args...).Scan(&env.ID)
	if err != nil {
		return dbErr(ctx, "create environment", err)
	}
	return nil
}

var (
	qGetEnvironment       = defineHot(`SELECT ` + envColumns + ` FROM environments WHERE id = ?`)
	qGetEnvironmentByName = defineHot(`SELECT ` + envColumns + ` FROM environments WHERE name = ?`)
)

// GetEnvironment returns the environment with the id, or store.ErrNotFound.
func (s *Store) GetEnvironment(ctx context.Context, id int64) (*environments.Environment, error) {
	return s.getEnvironment(ctx, qGetEnvironment, id)
}

func (s *Store) getEnvironment(ctx context.Context, q *hotStmt, arg any) (*environments.Environment, error) {
	var e *environments.Environment
	err := s.hotRow(ctx, false, q, func(sc scanner) (err error) {
		e, err = scanEnvironment(sc)
		return err
	}, arg)
	if err != nil {
		return nil, dbErr(ctx, "get environment", err)
	}
	return e, nil
}

// GetEnvironmentByName returns the environment with the name, or
// store.ErrNotFound.
func (s *Store) GetEnvironmentByName(ctx context.Context, name string) (*environments.Environment, error) {
	if err := checkText(name); err != nil {
		return nil, err
	}
	return s.getEnvironment(ctx, qGetEnvironmentByName, name)
}

// ListEnvironments returns every environment ordered by ID.
func (s *Store) ListEnvironments(ctx context.Context) ([]*environments.Environment, error) {
	rows, err := s.reader(ctx).QueryContext(ctx, `SELECT `+envColumns+` FROM environments ORDER BY id`)
	if err != nil {
		return nil, dbErr(ctx, "list environments", err)
	}
	defer rows.Close()
	out := []*environments.Environment{}
	for rows.Next() {
		e, err := scanEnvironment(rows)
		if err != nil {
			return nil, dbErr(ctx, "list environments", err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, dbErr(ctx, "list environments", err)
	}
	return out, nil
}

// UpdateEnvironment replaces every field of the environment with env.ID but
// ID and CreatedAt. A missing environment is store.ErrNotFound; a Name used
// by another environment is store.ErrConflict.
func (s *Store) UpdateEnvironment(ctx context.Context, env *environments.Environment) error {
	args, err := envArgs(env)
	if err != nil {
		return err
	}
	args = append(args, micros(env.UpdatedAt), env.ID)
	res, err := s.writer(ctx).ExecContext(ctx, `
		UPDATE environments SET account = ?, name = ?, webhook_urls = ?,
			sealed_webhook_signing_key = ?, webhook_settings = ?, connect_ui = ?,
			callback_url = ?, updated_at = ?
		WHERE id = ?`, args...)
	if err != nil {
		return dbErr(ctx, "update environment", err)
	}
	if n, err := rowsAffected(ctx, "update environment", res); err != nil {
		return err
	} else if n == 0 {
		return notFound("environment %d", env.ID)
	}
	return nil
}

const apiKeyColumns = `id, environment_id, name, hash, hint, scopes, created_at`

// scanAPIKey reads a row of apiKeyColumns.
func scanAPIKey(sc scanner) (*environments.APIKey, error) {
	var (
		k       environments.APIKey
		scopes  sql.NullString
		created int64
	)
	if err := sc.Scan(&k.ID, &k.EnvironmentID, &k.Name, &k.Hash, &k.Hint, &scopes, &created); err != nil {
		return nil, err
	}
	k.CreatedAt = fromMicros(created)
	if err := decodeJSON(scopes, &k.Scopes); err != nil {
		return nil, err
	}
	return &k, nil
}

// CreateAPIKey stores key and sets its ID. A duplicate Hash is
// store.ErrConflict; a missing environment is store.ErrNotFound.
func (s *Store) CreateAPIKey(ctx context.Context, key *environments.APIKey) error {
	if err := checkText(key); err != nil {
		return err
	}
	scopes, err := encodeJSON(key.Scopes)
	if err != nil {
		return err
	}
	err = s.writer(ctx).QueryRowContext(ctx, `
		INSERT INTO api_keys (environment_id, name, hash, hint, scopes, created_at)
		VALUES (?, ?, ?, ?, ?, ?)
		RETURNING id`,
		key.EnvironmentID, key.Name, key.Hash, key.Hint, scopes, micros(key.CreatedAt)).Scan(&key.ID)
	if err != nil {
		return parentErr(ctx, "create api key", err)
	}
	return nil
}

var qGetAPIKeyByHash = defineHot(`SELECT ` + apiKeyColumns + ` FROM api_keys WHERE hash = ?`)

// GetAPIKeyByHash returns the key with the hash, or store.ErrNotFound.
func (s *Store) GetAPIKeyByHash(ctx context.Context, hash []byte) (*environments.APIKey, error) {
	var k *environments.APIKey
	err := s.hotRow(ctx, false, qGetAPIKeyByHash, func(sc scanner) (err error) {
		k, err = scanAPIKey(sc)
		return err
	}, hash)
	if err != nil {
		return nil, dbErr(ctx, "get api key", err)
	}
	return k, nil
}

// ListAPIKeys returns the keys of an environment ordered by ID.
func (s *Store) ListAPIKeys(ctx context.Context, environmentID int64) ([]*environments.APIKey, error) {
	rows, err := s.reader(ctx).QueryContext(ctx,
		`SELECT `+apiKeyColumns+` FROM api_keys WHERE environment_id = ? ORDER BY id`, environmentID)
	if err != nil {
		return nil, dbErr(ctx, "list api keys", err)
	}
	defer rows.Close()
	out := []*environments.APIKey{}
	for rows.Next() {
		k, err := scanAPIKey(rows)
		if err != nil {
			return nil, dbErr(ctx, "list api keys", err)
		}
		out = append(out, k)
	}
	if err := rows.Err(); err != nil {
		return nil, dbErr(ctx, "list api keys", err)
	}
	return out, nil
}

// DeleteAPIKey deletes a key of the environment, or returns
// store.ErrNotFound.
func (s *Store) DeleteAPIKey(ctx context.Context, environmentID, id int64) error {
	res, err := s.writer(ctx).ExecContext(ctx,
		`DELETE FROM api_keys WHERE id = ? AND environment_id = ?`, id, environmentID)
	if err != nil {
		return dbErr(ctx, "delete api key", err)
	}
	if n, err := rowsAffected(ctx, "delete api key", res); err != nil {
		return err
	} else if n == 0 {
		return notFound("api key %d", id)
	}
	return nil
}

// SetVariables replaces every variable of the environment. A missing
// environment is store.ErrNotFound; two variables with one name are
// store.ErrInvalid.
func (s *Store) SetVariables(ctx context.Context, environmentID int64, vars []environments.Variable) error {
	if err := checkText(vars); err != nil {
		return err
	}
	for i, v := range vars {
		if slices.ContainsFunc(vars[:i], func(w environments.Variable) bool { return w.Name == v.Name }) {
			return invalid("variable %q is given twice", v.Name)
		}
	}
	return s.atomically(ctx, "set variables", func(ctx context.Context, tx *sql.Tx) error {
		var one int
		err := tx.QueryRowContext(ctx, `SELECT 1 FROM environments WHERE id = ?`, environmentID).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound("environment %d", environmentID)
		}
		if err != nil {
			return dbErr(ctx, "set variables", err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM environment_variables WHERE environment_id = ?`, environmentID); err != nil {
			return dbErr(ctx, "set variables", err)
		}
		if len(vars) == 0 {
			return nil
		}
		// One statement of up to 100 rows at a time (3 parameters each,
		// far below SQLite's limit of parameters).
		for chunk := range slices.Chunk(vars, 100) {
			args := make([]any, 0, 3*len(chunk))
			for _, v := range chunk {
				args = append(args, environmentID, v.Name, v.SealedValue)
			}
			q := `INSERT INTO environment_variables (environment_id, name, sealed_value) VALUES ` +
				strings.Repeat(`(?, ?, ?), `, len(chunk)-1) + `(?, ?, ?)`
			if _, err := tx.ExecContext(ctx, q, args...); err != nil {
				return parentErr(ctx, "set variables", err)
			}
		}
		return nil
	})
}

// ListVariables returns the variables of the environment ordered by name.
func (s *Store) ListVariables(ctx context.Context, environmentID int64) ([]environments.Variable, error) {
	rows, err := s.reader(ctx).QueryContext(ctx, `
		SELECT name, sealed_value FROM environment_variables
		WHERE environment_id = ? ORDER BY name`, environmentID)
	if err != nil {
		return nil, dbErr(ctx, "list variables", err)
	}
	defer rows.Close()
	out := []environments.Variable{}
	for rows.Next() {
		var v environments.Variable
		if err := rows.Scan(&v.Name, &v.SealedValue); err != nil {
			return nil, dbErr(ctx, "list variables", err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, dbErr(ctx, "list variables", err)
	}
	return out, nil
}
