package postgres

import (
	"cmp"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lib/pq"

	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/store"
)

// importOutput is the RETURNING list of the import statements, on the
// inserted or updated row c: whether the row was created (an update sets
// version to 2 or more), then every column of connectionColumns, empty or
// NULL for a created row those its caller has already.
var importOutput = func() string {
	keep := map[string]bool{"id": true, "environment_id": true, "integration_key": true, "connection_id": true,
		"version": true, "created_at": true, "updated_at": true}
	out := []string{"c.version = 1"}
	for _, c := range strings.Split(connectionColumns, ",") {
		c = strings.TrimSpace(c)
		switch {
		case keep[c]:
			out = append(out, "c."+c)
		case c == "provider" || c == "webhook_url_override" || c == "auth_mode" || c == "sealed_credentials":
			out = append(out, "CASE WHEN c.version = 1 THEN '' ELSE c."+c+" END")
		case c == "refresh_attempts":
			out = append(out, "CASE WHEN c.version = 1 THEN 0 ELSE c."+c+" END")
		default:
			out = append(out, "CASE WHEN c.version = 1 THEN NULL ELSE c."+c+" END")
		}
	}
	return strings.Join(out, ", ")
}()

// importConflict is the conflict action of an import's insert: the update
// of an existing connection (see connections.ImportItem), whose Replace
// flags are the parameters $18 to $20.
var importConflict = `
	ON CONFLICT (environment_id, integration_key, connection_id) DO UPDATE SET
		auth_mode = EXCLUDED.auth_mode, sealed_credentials = EXCLUDED.sealed_credentials,
		credentials_expires_at = EXCLUDED.credentials_expires_at, errors = EXCLUDED.errors,
		updated_at = EXCLUDED.updated_at, last_refresh_failure = NULL, refresh_attempts = 0,
		connection_config = CASE WHEN $18::boolean THEN EXCLUDED.connection_config ELSE c.connection_config END,
		metadata = CASE WHEN $19::boolean THEN EXCLUDED.metadata ELSE c.metadata END,
		tags = CASE WHEN $20::boolean THEN EXCLUDED.tags ELSE c.tags END,
		version = c.version + 1
	RETURNING ` + importOutput

// importStatement is the text of qImportConnections, or with logged of
// qImportConnectionsLogged.
func importStatement(logged bool) string {
	logArrays, logNames, log := "", "", ""
	if logged {
		logArrays = ",\n\t\t\t$21::text[], $22::text[], $23::text[], $24::text[], $25::text[], $26::text[]"
		logNames = ",\n\t\t\tlog_id, log_type, log_status, log_message, log_meta, log_created_at"
		log = `,
	l AS (
		INSERT INTO {s}.operations_log (id, environment_id, type, operation, status, integration_key,
			connection_id, message, meta, created_at)
		SELECT i.log_id, $1, i.log_type, CASE WHEN w.created THEN $27 ELSE $28 END, i.log_status,
			w.integration_key, w.connection_id, i.log_message, i.log_meta::jsonb,
			i.log_created_at::timestamptz
		FROM w JOIN i ON i.integration_key = w.integration_key AND i.connection_id = w.connection_id)`
	}
	return `
	WITH i AS (
		SELECT * FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
			$8::text[], $9::text[], $10::text[], $11::text[], $12::text[], $13::text[], $14::text[],
			$15::integer[], $16::text[], $17::text[]` + logArrays + `) WITH ORDINALITY
		AS i(integration_key, connection_id, provider, connection_config, metadata, tags,
			webhook_url_override, auth_mode, sealed_credentials, credentials_expires_at, errors,
			last_fetched_at, last_refresh_failure, refresh_attempts, created_at, updated_at` + logNames + `, n)),
	g AS (
		SELECT unique_key FROM {s}.integrations
		WHERE environment_id = $1 AND unique_key IN (SELECT integration_key FROM i)
		FOR KEY SHARE),
	ok AS (
		SELECT NOT EXISTS (SELECT 1 FROM i WHERE integration_key NOT IN (SELECT unique_key FROM g)) AS ok),
	w(created, ` + connectionColumns + `) AS (
	INSERT INTO {s}.connections AS c (environment_id, integration_key, connection_id, provider,
		connection_config, metadata, tags, webhook_url_override, auth_mode, sealed_credentials,
		credentials_expires_at, errors, last_fetched_at, last_refresh_failure, refresh_attempts,
		version, created_at, updated_at)
	SELECT $1, i.integration_key, i.connection_id, i.provider, i.connection_config::jsonb,
		i.metadata::jsonb, i.tags::jsonb, i.webhook_url_override, i.auth_mode, i.sealed_credentials,
		i.credentials_expires_at::timestamptz, i.errors::jsonb, i.last_fetched_at::timestamptz,
		i.last_refresh_failure::timestamptz, i.refresh_attempts, 1, i.created_at::timestamptz,
		i.updated_at::timestamptz
	FROM i, ok WHERE ok.ok
	ORDER BY i.n` + importConflict + `)` + log + `
	SELECT * FROM w`
}

// qImportConnections writes connections of one environment whose items
// have the same Replace flags ($18 to $20) in one statement: an insert
// whose conflict action updates the existing ones. Its arrays ($2 to $17)
// hold one element per connection, in the order of their identities,
// which ImportConnections sorts so that concurrent imports lock shared
// rows in the same order. g locks the integrations (FOR KEY SHARE, as the
// foreign key check does) so that none is deleted before the transaction
// ends; when one is missing, nothing is written and no row is returned.
var qImportConnections = newQuery(importStatement(false))

// qImportConnectionsLogged is qImportConnections that also stores each
// connection's operations log entry (ImportItem.Log), from the arrays $21
// to $26 (id, type, status, message, meta, created_at) and the operation
// $27 of a created connection or $28 of an updated one, in the same
// statement: a bulk import writes its connections and their log in one
// round trip per batch.
var qImportConnectionsLogged = newQuery(importStatement(true))

// qImportConnection is qImportConnections for one connection, with its
// values as parameters: a plain upsert, cheaper to plan than the batch's
// statement. It returns what qImportConnections returns, or no row when
// the integration is missing.
var qImportConnection = newQuery(`
	INSERT INTO {s}.connections AS c (environment_id, integration_key, connection_id, provider,
		connection_config, metadata, tags, webhook_url_override, auth_mode, sealed_credentials,
		credentials_expires_at, errors, last_fetched_at, version, created_at, updated_at,
		last_refresh_failure, refresh_attempts)
	SELECT $1::bigint, $2::text, $3::text, $4::text, $5::jsonb, $6::jsonb, $7::jsonb, $8::text,
		$9::text, $10::text, $11::timestamptz, $12::jsonb, $13::timestamptz, 1,
		$14::timestamptz, $15::timestamptz, $16::timestamptz, $17::integer
	WHERE EXISTS (SELECT 1 FROM {s}.integrations WHERE environment_id = $1 AND unique_key = $2)` +
	importConflict)

// qIntegrationKeys finds which of the keys $2 name an integration of
// environment $1, and locks them as qImportConnections does.
var qIntegrationKeys = newQuery(`SELECT unique_key FROM {s}.integrations
	WHERE environment_id = $1 AND unique_key = ANY($2::text[])
	FOR KEY SHARE`)

// ImportConnections writes the connections of one import (see
// connections.ImportItem), all or none, in a transaction (the caller's,
// if any): one statement per environment and combination of Replace
// flags (usually one in all). An identity given twice is
// store.ErrConflict and a missing integration store.ErrNotFound; either
// writes nothing and leaves an enclosing transaction usable.
func (s *Store) ImportConnections(ctx context.Context, items []*connections.ImportItem) error {
	switch len(items) {
	case 0:
		return nil
	case 1:
		return s.importOne(ctx, items[0])
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
	// The statements: by environment, then by flags, each in identity
	// order.
	type group struct {
		env    int64
		flags  [3]bool
		logged bool
	}
	var groups []group
	rows := map[group][]importRow{}
	for _, i := range order {
		it := items[i]
		g := group{it.Connection.EnvironmentID, [3]bool{it.ReplaceConnectionConfig, it.ReplaceMetadata, it.ReplaceTags}, it.Log != nil}
		if _, ok := rows[g]; !ok {
			groups = append(groups, g)
		}
		var r importRow
		if err := r.set(it); err != nil {
			return err
		}
		rows[g] = append(rows[g], r)
	}
	return s.WithTx(ctx, func(ctx context.Context) error {
		if len(groups) > 1 {
			// A statement refuses a missing integration by writing
			// nothing; with several statements, every integration is
			// checked (and locked) before any is written.
			checked := map[int64]bool{}
			for _, g := range groups {
				if !checked[g.env] {
					checked[g.env] = true
					var all []importRow
					for _, h := range groups {
						if h.env == g.env {
							all = append(all, rows[h]...)
						}
					}
					if err := s.checkIntegrations(ctx, all); err != nil {
						return err
					}
				}
			}
		}
		for _, g := range groups {
			if err := s.importRows(ctx, rows[g], g.flags, g.logged); err != nil {
				return err
			}
		}
		return nil
	})
}

// importOne is ImportConnections of one item.
func (s *Store) importOne(ctx context.Context, it *connections.ImportItem) error {
	if it.Log == nil {
		return s.upsertOne(ctx, it)
	}
	return s.WithTx(ctx, func(ctx context.Context) error {
		if err := s.upsertOne(ctx, it); err != nil {
			return err
		}
		it.Log.Operation = connections.OpImportUpdate
		if it.Created {
			it.Log.Operation = connections.OpImportCreate
		}
		return s.AppendLog(ctx, it.Log)
	})
}

// upsertOne writes the connection of it, and not its Log.
func (s *Store) upsertOne(ctx context.Context, it *connections.ImportItem) error {
	c := it.Connection
	cfg, md, tags, errs, err := connectionJSON(c)
	if err != nil {
		return err
	}
	var r importedRow
	err = s.get(ctx, qImportConnection, &r,
		c.EnvironmentID, c.IntegrationKey, c.ConnectionID, c.Provider, cfg, md, tags,
		c.WebhookURLOverride, c.AuthMode, c.SealedCredentials, c.CredentialsExpiresAt, errs,
		c.LastFetchedAt, c.CreatedAt, c.UpdatedAt, c.LastRefreshFailure, c.RefreshAttempts,
		it.ReplaceConnectionConfig, it.ReplaceMetadata, it.ReplaceTags)
	if errors.Is(err, sql.ErrNoRows) {
		return notFound("integration %q", c.IntegrationKey)
	}
	if err != nil {
		return dbErr(ctx, "import connection", err, store.ErrNotFound)
	}
	return r.fill(it)
}

// importedRow is a row of the result of an import statement.
type importedRow struct {
	created bool
	connectionRow
}

func (r *importedRow) scanTargets() []any {
	return append([]any{&r.created}, r.connectionRow.scanTargets()...)
}

// fill sets the outcome of it: Created, and the ID and Version of a
// created connection, or the whole of an updated one.
func (r *importedRow) fill(it *connections.ImportItem) error {
	it.Created = r.created
	if r.created {
		it.Connection.ID, it.Connection.Version = r.ID, 1
		return nil
	}
	c, err := r.connection()
	if err != nil {
		return err
	}
	*it.Connection = *c
	return nil
}

// checkIntegrations returns store.ErrNotFound when an integration that
// rows (of one environment) name is missing, and locks the others until
// the transaction ends.
func (s *Store) checkIntegrations(ctx context.Context, rows []importRow) error {
	if len(rows) == 0 {
		return nil
	}
	var keys []string
	for _, r := range rows {
		if !slices.Contains(keys, r.c.IntegrationKey) {
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

// importRows writes rows, all of one environment, with the Replace flags
// flags, in one qImportConnections, or with logged (every row has a Log)
// one qImportConnectionsLogged.
func (s *Store) importRows(ctx context.Context, rows []importRow, flags [3]bool, logged bool) error {
	a := newImportArrays(len(rows), logged)
	for i := range rows {
		if err := a.add(&rows[i]); err != nil {
			return err
		}
	}
	q := qImportConnections
	args := append(a.args(rows[0].env), flags[0], flags[1], flags[2])
	if logged {
		q = qImportConnectionsLogged
		l := a.log
		args = append(args, l[0], l[1], l[2], l[3], l[4], l[5], connections.OpImportCreate, connections.OpImportUpdate)
	}
	rs, err := s.ext(ctx).QueryContext(ctx, s.text(q), args...)
	if err != nil {
		return dbErr(ctx, "import connections", err, store.ErrNotFound)
	}
	defer rs.Close()
	byIdentity := make(map[[2]string]*connections.ImportItem, len(rows))
	for _, r := range rows {
		byIdentity[[2]string{r.c.IntegrationKey, r.c.ConnectionID}] = r.item
	}
	n := 0
	for ; rs.Next(); n++ {
		var r importedRow
		if err := rs.Scan(r.scanTargets()...); err != nil {
			return dbErr(ctx, "import connections: scan", err, nil)
		}
		k := [2]string{r.IntegrationKey, r.ConnectionID}
		it := byIdentity[k]
		if it == nil {
			return fmt.Errorf("postgres: import connections: unexpected row %q/%q", k[0], k[1])
		}
		delete(byIdentity, k)
		if err := r.fill(it); err != nil {
			return err
		}
		if it.Log != nil {
			it.Log.Operation = connections.OpImportUpdate
			if it.Created {
				it.Log.Operation = connections.OpImportCreate
			}
		}
	}
	if err := rs.Err(); err != nil {
		return dbErr(ctx, "import connections", err, store.ErrNotFound)
	}
	if n == 0 {
		// Refused: an integration is missing.
		if err := s.checkIntegrations(ctx, rows); err != nil {
			return err
		}
	}
	if n != len(rows) {
		return fmt.Errorf("postgres: import connections: %d rows written of %d", n, len(rows))
	}
	return nil
}

// importRow is one connection of ImportConnections, encoded for the
// statement's arrays.
type importRow struct {
	item *connections.ImportItem
	c    *connections.Connection
	env  int64
	// The jsonb columns, nil for SQL NULL.
	cfg, md, tags, errs *string
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

// importArrays are the array arguments of qImportConnections and
// qImportConnectionsLogged.
type importArrays struct {
	text [15]textArray // $2 to $14, $16, $17
	ints pq.Int64Array
	log  [6]textArray // $21 to $26, when logged
	// lastTime and lastText memoise timeText: the connections of an
	// import share their timestamps.
	lastTime time.Time
	lastText *string
}

func newImportArrays(n int, logged bool) *importArrays {
	a := &importArrays{ints: make(pq.Int64Array, 0, n)}
	for i := range a.text {
		a.text[i] = make(textArray, 0, n)
	}
	if logged {
		for i := range a.log {
			a.log[i] = make(textArray, 0, n)
		}
	}
	return a
}

func (a *importArrays) add(r *importRow) error {
	c := r.c
	str := func(s string) *string { return &s }
	for i, v := range []*string{str(c.IntegrationKey), str(c.ConnectionID), str(c.Provider), r.cfg, r.md, r.tags,
		str(c.WebhookURLOverride), str(c.AuthMode), str(c.SealedCredentials), a.timeText(c.CredentialsExpiresAt), r.errs,
		a.timeText(c.LastFetchedAt), a.timeText(c.LastRefreshFailure), a.timeText(&c.CreatedAt), a.timeText(&c.UpdatedAt)} {
		a.text[i] = append(a.text[i], v)
	}
	a.ints = append(a.ints, int64(c.RefreshAttempts))
	if a.log[0] == nil {
		return nil
	}
	e := r.item.Log
	meta, err := jsonArg("meta", e.Meta)
	if err != nil {
		return err
	}
	var m *string
	if v, ok := meta.(string); ok {
		m = &v
	}
	for i, v := range []*string{str(e.ID), str(e.Type), str(e.Status), str(e.Message), m, a.timeText(&e.CreatedAt)} {
		a.log[i] = append(a.log[i], v)
	}
	return nil
}

func (a *importArrays) args(env int64) []any {
	t := a.text
	return []any{env, t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7], t[8], t[9], t[10], t[11], t[12],
		a.ints, t[13], t[14]}
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
