package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/lib/pq"

	"github.com/embedauth/connect/store"
)

// sealedColumns names the table and column of each kind of sealed value.
var sealedColumns = map[string]struct{ table, column string }{
	store.SealedSigningKey:             {"environments", "sealed_webhook_signing_key"},
	store.SealedVariable:               {"environment_variables", "sealed_value"},
	store.SealedIntegrationCredentials: {"integrations", "sealed_credentials"},
	store.SealedIntegrationCustom:      {"integrations", "sealed_custom"},
	store.SealedConnectionCredentials:  {"connections", "sealed_credentials"},
	store.SealedSessionDefaults:        {"connect_sessions", "sealed_integrations_config_defaults"},
	store.SealedOAuthFlowSecrets:       {"oauth_flows", "sealed_secrets"},
	store.SealedRecordPayload:          {"records", "sealed_payload"},
	store.SealedActionInput:            {"action_tasks", "sealed_input"},
	store.SealedActionOutput:           {"action_tasks", "sealed_output"},
	store.SealedActionError:            {"action_tasks", "sealed_error"},
}

// resealPage is how many values ResealValues reads at a time.
const resealPage = 200

var (
	qSealingKeyIDs = newQuery(`SELECT key_id FROM {s}.sealing_keys ORDER BY key_id`)
	// qLockSealingKeys waits for the writers that are registering key ids
	// (the triggers' ROW EXCLUSIVE lock) and keeps new ones out until the
	// transaction ends.
	qLockSealingKeys  = newQuery(`LOCK TABLE {s}.sealing_keys IN SHARE ROW EXCLUSIVE MODE`)
	qCountSealed      = newQuery(countSealedSQL())
	qForgetSealingKey = newQuery(`DELETE FROM {s}.sealing_keys WHERE key_id = $1`)
	// qSampleSealed reads the tables in the order of store.SealedKinds and
	// stops at the first value under the key (an Append under a LIMIT
	// runs its branches one after the other).
	qSampleSealed = newQuery(sampleSealedSQL())
	// qSelectSealed and qReplaceSealed are, by kind, the read of a page of
	// values under a key and the compare-and-swap that replaces one.
	// Records have queries of their own (see resealRecords).
	qSelectSealed, qReplaceSealed = resealQueries()

	// qSelectSealedRecords reads a page of the record payloads under a
	// key ($1) after the key ($2, $3) of the last row read, in the order
	// of the primary key.
	qSelectSealedRecords = newQuery(`
	SELECT scope_id, external_id, sealed_payload FROM {s}.records
	WHERE (scope_id, external_id) > ($2, $3) AND starts_with(sealed_payload, $1)
	ORDER BY scope_id, external_id LIMIT $4`)
	// qReplaceSealedRecords replaces the payloads of a page, each only if
	// it still holds the value read, skipping the rows that another
	// transaction holds, and returns the keys of the rows replaced.
	qReplaceSealedRecords = newQuery(`
	WITH u AS (
		SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[])
		AS u(scope_id, external_id, old, new)),
	l AS (
		SELECT r.scope_id, r.external_id, u.new FROM {s}.records r
		JOIN u ON r.scope_id = u.scope_id AND r.external_id = u.external_id
		WHERE r.sealed_payload = u.old
		FOR UPDATE OF r SKIP LOCKED)
	UPDATE {s}.records r SET sealed_payload = l.new FROM l
	WHERE r.scope_id = l.scope_id AND r.external_id = l.external_id
	RETURNING r.scope_id, r.external_id`)
	// qReplaceSealedRecord replaces one payload if it still holds the
	// value read, waiting for the transaction that holds the row.
	qReplaceSealedRecord = newQuery(`
	UPDATE {s}.records SET sealed_payload = $1
	WHERE scope_id = $2 AND external_id = $3 AND sealed_payload = $4`)
)

// countSealedSQL counts, by kind, the values that start with $1.
func countSealedSQL() string {
	q := ""
	for _, kind := range store.SealedKinds {
		c := sealedColumns[kind]
		if q != "" {
			q += "\nUNION ALL "
		}
		q += fmt.Sprintf(`SELECT '%s' AS kind, count(*) AS n FROM {s}.%s WHERE starts_with(%s, $1)`, kind, c.table, c.column)
	}
	return q
}

// sampleSealedSQL returns one value that starts with $1, and its kind.
func sampleSealedSQL() string {
	q := ""
	for _, kind := range store.SealedKinds {
		c := sealedColumns[kind]
		if q != "" {
			q += "\n\tUNION ALL "
		}
		q += fmt.Sprintf(`(SELECT '%s' AS kind, %s AS value FROM {s}.%s WHERE starts_with(%[2]s, $1) LIMIT 1)`, kind, c.column, c.table)
	}
	return "SELECT kind, value FROM (" + q + ") AS sample LIMIT 1"
}

// resealQueries defines, for each kind, the read of a page of values under
// a key and the compare-and-swap that replaces one of them. A row is
// addressed by its ctid: a value replaced no longer matches the read, and a
// row changed meanwhile has moved, or no longer holds the value read.
func resealQueries() (sel, replace map[string]*query) {
	sel, replace = map[string]*query{}, map[string]*query{}
	for _, kind := range store.SealedKinds {
		if kind == store.SealedRecordPayload {
			continue
		}
		c := sealedColumns[kind]
		sel[kind] = newQuery(fmt.Sprintf(`SELECT ctid::text AS ctid, %[2]s AS value FROM {s}.%[1]s WHERE starts_with(%[2]s, $1) LIMIT $2`,
			c.table, c.column))
		replace[kind] = newQuery(fmt.Sprintf(`UPDATE {s}.%[1]s SET %[2]s = $1 WHERE ctid = $2::tid AND %[2]s = $3`,
			c.table, c.column))
	}
	return sel, replace
}

// SealingKeyIDs returns, sorted, the key ids of the registry that triggers
// keep up to date (migration 008): every id a sealed value names, and ids
// that no value names any longer until ForgetSealingKeyID drops them. It
// reads the registry only, however many values the Store holds.
func (s *Store) SealingKeyIDs(ctx context.Context) ([]string, error) {
	ids := []string{}
	if err := s.sel(ctx, qSealingKeyIDs, &ids); err != nil {
		return nil, dbErr(ctx, "list sealing key ids", err, nil)
	}
	return ids, nil
}

// ForgetSealingKeyID counts, by kind, the values sealed under keyID (a
// sequential read of every table with sealed values) and, when there are
// none, drops keyID from the registry. It holds a lock on the registry
// meanwhile, so writes that seal values under a key not registered yet
// wait for it.
func (s *Store) ForgetSealingKeyID(ctx context.Context, keyID string) (map[string]int, error) {
	var counts map[string]int
	err := s.WithTx(ctx, func(ctx context.Context) error {
		counts = map[string]int{}
		if _, err := s.exec(ctx, qLockSealingKeys); err != nil {
			return dbErr(ctx, "lock sealing keys", err, nil)
		}
		var rows []struct {
			Kind string `db:"kind"`
			N    int    `db:"n"`
		}
		if err := s.sel(ctx, qCountSealed, &rows, "v1:"+keyID+":"); err != nil {
			return dbErr(ctx, "count sealed values", err, nil)
		}
		for _, r := range rows {
			if r.N > 0 {
				counts[r.Kind] = r.N
			}
		}
		if len(counts) > 0 {
			return nil
		}
		if _, err := s.exec(ctx, qForgetSealingKey, keyID); err != nil {
			return dbErr(ctx, "forget sealing key", err, nil)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return counts, nil
}

// SampleSealedValue returns one value sealed under keyID, and its kind,
// or store.ErrNotFound: the first found in the tables of signing keys,
// variables, integrations, connect sessions, OAuth flows, connections,
// action tasks, then records.
func (s *Store) SampleSealedValue(ctx context.Context, keyID string) (string, string, error) {
	var row struct {
		Kind  string `db:"kind"`
		Value string `db:"value"`
	}
	err := s.get(ctx, qSampleSealed, &row, "v1:"+keyID+":")
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", notFound("no value sealed under key %q", keyID)
	}
	if err != nil {
		return "", "", dbErr(ctx, "sample sealed value", err, nil)
	}
	return row.Kind, row.Value, nil
}

// ResealValues replaces each value of kind sealed under keyID with
// reseal's result, a page at a time, each row with a compare-and-swap. It
// stops when a page replaced nothing (every row read was changed
// meanwhile), so that values that another process keeps sealing under
// keyID cannot hold it forever. A replacement changes nothing else of its
// row: an action task keeps its version, so that the instance running it
// is not refused its next write; should that write put back a value read
// before (its output or error), the value names keyID again, and
// ForgetSealingKeyID counts it.
func (s *Store) ResealValues(ctx context.Context, kind, keyID string, reseal func(string) (string, error)) (int, error) {
	if kind == store.SealedRecordPayload {
		return s.resealRecords(ctx, keyID, reseal)
	}
	sel, ok := qSelectSealed[kind]
	if !ok {
		return 0, fmt.Errorf("postgres: sealed value kind %q: %w", kind, store.ErrInvalid)
	}
	prefix := "v1:" + keyID + ":"
	n := 0
	for {
		var page []struct {
			CTID  string `db:"ctid"`
			Value string `db:"value"`
		}
		if err := s.sel(ctx, sel, &page, prefix, resealPage); err != nil {
			return n, dbErr(ctx, "read sealed values", err, nil)
		}
		replaced := 0
		for _, row := range page {
			v, err := reseal(row.Value)
			if err != nil {
				return n, err
			}
			if id, _ := store.SealedKeyID(v); id == keyID {
				return n, fmt.Errorf("postgres: resealing a %s value: the new value is still sealed under key %q: %w", kind, keyID, store.ErrInvalid)
			}
			res, err := s.exec(ctx, qReplaceSealed[kind], v, row.CTID, row.Value)
			if err != nil {
				return n, dbErr(ctx, "replace sealed value", err, nil)
			}
			if k, _ := res.RowsAffected(); k > 0 {
				replaced++
				n++
			}
		}
		if len(page) < resealPage || replaced == 0 {
			return n, nil
		}
	}
}

// resealRecords is ResealValues of record payloads, which may be many: it
// walks the records once, in the order of their primary key, a page at a
// time (a read that starts over from the first row, as the other kinds'
// does, would read the rows already re-sealed again for every page), and
// replaces each page's values in one statement that skips the rows other
// transactions hold. It then replaces those one at a time, waiting for
// each: it never holds one row while it waits for another, so it cannot
// deadlock with a write of the scope, which holds its rows until it
// commits. A value changed meanwhile is left alone; one sealed under keyID
// after the walk passed its row is not seen.
func (s *Store) resealRecords(ctx context.Context, keyID string, reseal func(string) (string, error)) (int, error) {
	prefix := "v1:" + keyID + ":"
	n := 0
	var lastScope int64
	lastID := ""
	for {
		type row struct {
			scope        int64
			id, old, new string
		}
		var page []row
		err := s.queryRows(ctx, qSelectSealedRecords, func(rs *sql.Rows) error {
			var r row
			err := rs.Scan(&r.scope, &r.id, &r.old)
			page = append(page, r)
			return err
		}, prefix, lastScope, lastID, resealPage)
		if err != nil {
			return n, dbErr(ctx, "read sealed record payloads", err, nil)
		}
		if len(page) == 0 {
			return n, nil
		}
		lastScope, lastID = page[len(page)-1].scope, page[len(page)-1].id
		var resealErr error
		for i := range page {
			v, err := reseal(page[i].old)
			if err == nil {
				if id, _ := store.SealedKeyID(v); id == keyID {
					err = fmt.Errorf("postgres: resealing a %s value: the new value is still sealed under key %q: %w",
						store.SealedRecordPayload, keyID, store.ErrInvalid)
				}
			}
			if err != nil {
				// Store what was re-sealed before the error.
				page, resealErr = page[:i], err
				break
			}
			page[i].new = v
		}
		if len(page) > 0 {
			scopes, ids := make(pq.Int64Array, len(page)), make(textArray, len(page))
			olds, news := make(textArray, len(page)), make(textArray, len(page))
			for i := range page {
				r := &page[i]
				scopes[i], ids[i], olds[i], news[i] = r.scope, &r.id, &r.old, &r.new
			}
			type key struct {
				scope int64
				id    string
			}
			done := map[key]bool{}
			err := s.queryRows(ctx, qReplaceSealedRecords, func(rs *sql.Rows) error {
				var scope int64
				var id string
				err := rs.Scan(&scope, &id)
				done[key{scope, id}] = true
				return err
			}, scopes, ids, olds, news)
			if err != nil {
				return n, dbErr(ctx, "replace sealed record payloads", err, nil)
			}
			n += len(done)
			for i := range page {
				r := &page[i]
				if done[key{r.scope, r.id}] {
					continue
				}
				res, err := s.exec(ctx, qReplaceSealedRecord, r.new, r.scope, r.id, r.old)
				if err != nil {
					return n, dbErr(ctx, "replace sealed record payload", err, nil)
				}
				if k, _ := res.RowsAffected(); k > 0 {
					n++
				}
			}
		}
		if resealErr != nil {
			return n, resealErr
		}
	}
}
