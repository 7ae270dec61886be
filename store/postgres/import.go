package postgres

import (
	"cmp"
	"context"
	"database/sql/driver"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lib/pq"

	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/store"
)

// maxImportRounds bounds the statements of one ImportConnections: a
// connection that another transaction creates while the import runs is
// updated by the next round, and one that keeps appearing and vanishing
// under the import fails it after this many rounds.
const maxImportRounds = 8

// qImportConnections writes a batch of imported connections in one
// statement. Its arrays ($2 to $20) hold one element per connection, in
// the order of the identities ($2, $3), which ImportConnections sorts so
// that concurrent imports lock shared rows in the same order.
//
//   - g locks the batch's integrations (FOR KEY SHARE, as the foreign key
//     check does), so that none is deleted before the transaction ends:
//     a later round of the same import finds them all. When one is
//     missing, ok is false and nothing is written.
//   - u updates the existing connections (see connections.ImportItem).
//   - n inserts the others. A connection that another transaction
//     inserted after the statement's snapshot is skipped (ON CONFLICT DO
//     NOTHING; the insert waits for that transaction first) and missing
//     from the result: the next round updates it.
//
// The result has one row per connection written: whether it was created,
// its id and identity, and, for an updated one, every column.
var qImportConnections = newQuery(`
	WITH i AS (
		SELECT * FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
			$8::text[], $9::text[], $10::text[], $11::text[], $12::text[], $13::text[], $14::text[],
			$15::integer[], $16::text[], $17::text[], $18::boolean[], $19::boolean[], $20::boolean[])
		AS i(integration_key, connection_id, provider, connection_config, metadata, tags,
			webhook_url_override, auth_mode, sealed_credentials, credentials_expires_at, errors,
			last_fetched_at, last_refresh_failure, refresh_attempts, created_at, updated_at,
			replace_config, replace_metadata, replace_tags)),
	g AS (
		SELECT unique_key FROM {s}.integrations
		WHERE environment_id = $1 AND unique_key IN (SELECT integration_key FROM i)
		FOR KEY SHARE),
	ok AS (
		SELECT NOT EXISTS (SELECT 1 FROM i WHERE integration_key NOT IN (SELECT unique_key FROM g)) AS ok),
	u AS (
		UPDATE {s}.connections c SET
			auth_mode = i.auth_mode, sealed_credentials = i.sealed_credentials,
			credentials_expires_at = i.credentials_expires_at::timestamptz, errors = i.errors::jsonb,
			updated_at = i.updated_at::timestamptz, last_refresh_failure = NULL, refresh_attempts = 0,
			connection_config = CASE WHEN i.replace_config THEN i.connection_config::jsonb ELSE c.connection_config END,
			metadata = CASE WHEN i.replace_metadata THEN i.metadata::jsonb ELSE c.metadata END,
			tags = CASE WHEN i.replace_tags THEN i.tags::jsonb ELSE c.tags END,
			version = c.version + 1
		FROM i, ok
		WHERE ok.ok AND c.environment_id = $1 AND c.integration_key = i.integration_key
			AND c.connection_id = i.connection_id
		RETURNING ` + prefixed("c.", connectionColumns) + `),
	n AS (
		INSERT INTO {s}.connections (environment_id, integration_key, connection_id, provider,
			connection_config, metadata, tags, webhook_url_override, auth_mode, sealed_credentials,
			credentials_expires_at, errors, last_fetched_at, last_refresh_failure, refresh_attempts,
			version, created_at, updated_at)
		SELECT $1, i.integration_key, i.connection_id, i.provider, i.connection_config::jsonb,
			i.metadata::jsonb, i.tags::jsonb, i.webhook_url_override, i.auth_mode, i.sealed_credentials,
			i.credentials_expires_at::timestamptz, i.errors::jsonb, i.last_fetched_at::timestamptz,
			i.last_refresh_failure::timestamptz, i.refresh_attempts, 1, i.created_at::timestamptz,
			i.updated_at::timestamptz
		FROM i, ok
		WHERE ok.ok AND NOT EXISTS (SELECT 1 FROM u
			WHERE u.integration_key = i.integration_key AND u.connection_id = i.connection_id)
		ON CONFLICT DO NOTHING
		RETURNING id, integration_key, connection_id, created_at, updated_at)
	SELECT false, ` + connectionColumns + ` FROM u
	UNION ALL
	SELECT true, id, $1, integration_key, connection_id, '', NULL, NULL, NULL, '', '', '', NULL, NULL,
		NULL, NULL, 0, 1, created_at, updated_at
	FROM n`)

// qIntegrationKeys finds which of the keys $2 name an integration of
// environment $1, and locks them as qImportConnections does.
var qIntegrationKeys = newQuery(`SELECT unique_key FROM {s}.integrations
	WHERE environment_id = $1 AND unique_key = ANY($2::text[])
	FOR KEY SHARE`)

// prefixed qualifies each column of a comma-separated list with p.
func prefixed(p, columns string) string {
	cols := strings.Split(columns, ",")
	for i, c := range cols {
		cols[i] = p + strings.TrimSpace(c)
	}
	return strings.Join(cols, ", ")
}

// ImportConnections writes the connections of one import (see
// connections.ImportItem), all or none, in one statement per environment
// (more only when another transaction creates one of the connections
// meanwhile), in a transaction: the caller's, if any. An identity given
// twice is store.ErrConflict and a missing integration store.ErrNotFound;
// either writes nothing and leaves an enclosing transaction usable.
func (s *Store) ImportConnections(ctx context.Context, items []*connections.ImportItem) error {
	if len(items) == 0 {
		return nil
	}
	order := make([]int, len(items))
	for i := range order {
		order[i] = i
	}
	// Environment, then identity: the statements lock shared rows in the
	// same order in every import.
	slices.SortFunc(order, func(a, b int) int {
		ca, cb := items[a].Connection, items[b].Connection
		return cmp.Or(cmp.Compare(ca.EnvironmentID, cb.EnvironmentID),
			strings.Compare(ca.IntegrationKey, cb.IntegrationKey), strings.Compare(ca.ConnectionID, cb.ConnectionID))
	})
	for k := 1; k < len(order); k++ {
		a, b := items[order[k-1]].Connection, items[order[k]].Connection
		if a.EnvironmentID == b.EnvironmentID && a.IntegrationKey == b.IntegrationKey && a.ConnectionID == b.ConnectionID {
			return conflict("connection %q given twice", b.ConnectionID)
		}
	}
	rows := make([]importRow, len(items))
	for k, i := range order {
		if err := rows[k].set(items[i]); err != nil {
			return err
		}
	}
	var envs [][]importRow // rows by environment
	for start := 0; start < len(rows); {
		end := start + 1
		for end < len(rows) && rows[end].env == rows[start].env {
			end++
		}
		envs = append(envs, rows[start:end])
		start = end
	}
	return s.WithTx(ctx, func(ctx context.Context) error {
		if len(envs) > 1 {
			// The statement of each environment refuses a missing
			// integration by writing nothing; with several environments,
			// the integrations of all are checked (and locked) before any
			// is written.
			for _, rows := range envs {
				if err := s.checkIntegrations(ctx, rows); err != nil {
					return err
				}
			}
		}
		for _, rows := range envs {
			if err := s.importRows(ctx, rows); err != nil {
				return err
			}
		}
		return nil
	})
}

// checkIntegrations returns store.ErrNotFound when an integration that
// rows (of one environment, sorted by identity) name is missing, and locks
// the others until the transaction ends.
func (s *Store) checkIntegrations(ctx context.Context, rows []importRow) error {
	if len(rows) == 0 {
		return nil
	}
	keys := make([]string, 0, 4)
	for _, r := range rows {
		if len(keys) == 0 || keys[len(keys)-1] != r.c.IntegrationKey {
			keys = append(keys, r.c.IntegrationKey)
		}
	}
	var found []string
	if err := s.sel(ctx, qIntegrationKeys, &found, rows[0].env, pq.StringArray(keys)); err != nil {
		return dbErr(ctx, "import connections: find integrations", err, nil)
	}
	for _, k := range keys {
		if !slices.Contains(found, k) {
			return notFound("integration %q", k)
		}
	}
	return nil
}

// importRows writes rows, all of one environment and sorted by identity,
// in rounds of qImportConnections.
func (s *Store) importRows(ctx context.Context, rows []importRow) error {
	pending := rows
	for round := 0; len(pending) > 0; round++ {
		if round == maxImportRounds {
			return fmt.Errorf("postgres: import connections: %w: connection %q keeps being created and deleted by other transactions",
				store.ErrUnavailable, pending[0].c.ConnectionID)
		}
		written, err := s.importRound(ctx, pending)
		if err != nil {
			return err
		}
		if written == 0 && round == 0 {
			// Nothing written: an integration is missing (the statement
			// refused the batch), or every connection was created by
			// another transaction meanwhile (the next round updates them).
			if err := s.checkIntegrations(ctx, pending); err != nil {
				return err
			}
		}
		next := pending[:0:0]
		for _, r := range pending {
			if !r.done {
				next = append(next, r)
			}
		}
		pending = next
	}
	return nil
}

// importRound runs qImportConnections once on rows and marks those it
// wrote done, filling their items. It returns how many it wrote.
func (s *Store) importRound(ctx context.Context, rows []importRow) (int, error) {
	a := newImportArrays(len(rows))
	for i := range rows {
		a.add(&rows[i])
	}
	rs, err := s.ext(ctx).QueryContext(ctx, s.text(qImportConnections), a.args(rows[0].env)...)
	if err != nil {
		return 0, dbErr(ctx, "import connections", err, store.ErrNotFound)
	}
	defer rs.Close()
	byIdentity := make(map[[2]string]*importRow, len(rows))
	for i := range rows {
		byIdentity[[2]string{rows[i].c.IntegrationKey, rows[i].c.ConnectionID}] = &rows[i]
	}
	n := 0
	for rs.Next() {
		var created bool
		var cr connectionRow
		if err := rs.Scan(append([]any{&created}, cr.scanTargets()...)...); err != nil {
			return n, dbErr(ctx, "import connections: scan", err, nil)
		}
		r := byIdentity[[2]string{cr.IntegrationKey, cr.ConnectionID}]
		if r == nil || r.done {
			return n, fmt.Errorf("postgres: import connections: unexpected row %q/%q", cr.IntegrationKey, cr.ConnectionID)
		}
		r.done = true
		n++
		r.item.Created = created
		if created {
			r.item.Connection.ID, r.item.Connection.Version = cr.ID, 1
			continue
		}
		c, err := cr.connection()
		if err != nil {
			return n, err
		}
		*r.item.Connection = *c
	}
	if err := rs.Err(); err != nil {
		return n, dbErr(ctx, "import connections", err, store.ErrNotFound)
	}
	return n, nil
}

// importRow is one connection of ImportConnections, encoded for the
// statement's arrays.
type importRow struct {
	item *connections.ImportItem
	c    *connections.Connection
	env  int64
	// The jsonb columns, nil for SQL NULL.
	cfg, md, tags, errs *string
	done                bool
}

func (r *importRow) set(it *connections.ImportItem) error {
	r.item, r.c, r.env = it, it.Connection, it.Connection.EnvironmentID
	for _, f := range []struct {
		name string
		v    any
		dst  **string
	}{
		{"connection_config", r.c.ConnectionConfig, &r.cfg},
		{"metadata", r.c.Metadata, &r.md},
		{"tags", r.c.Tags, &r.tags},
		{"errors", r.c.Errors, &r.errs},
	} {
		v, err := jsonArg(f.name, f.v)
		if err != nil {
			return err
		}
		if s, ok := v.(string); ok {
			*f.dst = &s
		}
	}
	return nil
}

// importArrays are the array arguments of qImportConnections.
type importArrays struct {
	text  [15]textArray // $2 to $14, $16, $17
	ints  pq.Int64Array
	bools [3]pq.BoolArray
	// lastTime and lastText memoise timeText: the connections of an
	// import share their timestamps.
	lastTime time.Time
	lastText *string
}

func newImportArrays(n int) *importArrays {
	a := &importArrays{ints: make(pq.Int64Array, 0, n)}
	for i := range a.text {
		a.text[i] = make(textArray, 0, n)
	}
	for i := range a.bools {
		a.bools[i] = make(pq.BoolArray, 0, n)
	}
	return a
}

func (a *importArrays) add(r *importRow) {
	c := r.c
	str := func(s string) *string { return &s }
	for i, v := range []*string{str(c.IntegrationKey), str(c.ConnectionID), str(c.Provider), r.cfg, r.md, r.tags,
		str(c.WebhookURLOverride), str(c.AuthMode), str(c.SealedCredentials), a.timeText(c.CredentialsExpiresAt), r.errs,
		a.timeText(c.LastFetchedAt), a.timeText(c.LastRefreshFailure), a.timeText(&c.CreatedAt), a.timeText(&c.UpdatedAt)} {
		a.text[i] = append(a.text[i], v)
	}
	a.ints = append(a.ints, int64(c.RefreshAttempts))
	a.bools[0] = append(a.bools[0], r.item.ReplaceConnectionConfig)
	a.bools[1] = append(a.bools[1], r.item.ReplaceMetadata)
	a.bools[2] = append(a.bools[2], r.item.ReplaceTags)
}

func (a *importArrays) args(env int64) []any {
	t := a.text
	return []any{env, t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7], t[8], t[9], t[10], t[11], t[12],
		a.ints, t[13], t[14], a.bools[0], a.bools[1], a.bools[2]}
}

// timeText is the package's timeText, remembering the last result.
func (a *importArrays) timeText(t *time.Time) *string {
	if t == nil {
		return nil
	}
	if a.lastText == nil || !t.Equal(a.lastTime) {
		a.lastTime, a.lastText = *t, timeText(t)
	}
	return a.lastText
}

// timeText formats a timestamp for a text array cast to timestamptz, nil
// for NULL.
func timeText(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := t.UTC().Format(time.RFC3339Nano)
	return &s
}

// textArray is a text[] parameter whose nil elements are NULL
// (pq.StringArray has no NULL).
type textArray []*string

// Value encodes the array literal.
func (a textArray) Value() (driver.Value, error) {
	n := 2
	for _, s := range a {
		if s != nil {
			n += len(*s) + 3
		} else {
			n += 5
		}
	}
	b := make([]byte, 0, n)
	b = append(b, '{')
	for i, s := range a {
		if i > 0 {
			b = append(b, ',')
		}
		if s == nil {
			b = append(b, "NULL"...)
			continue
		}
		b = append(b, '"')
		for v := *s; ; {
			k := strings.IndexAny(v, `"\`)
			if k < 0 {
				b = append(b, v...)
				break
			}
			b = append(append(b, v[:k]...), '\\', v[k])
			v = v[k+1:]
		}
		b = append(b, '"')
	}
	return string(append(b, '}')), nil
}
