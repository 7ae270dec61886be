package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

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
	qSelectSealed, qReplaceSealed = resealQueries()
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
// variables, integrations, connect sessions, OAuth flows, then connections.
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
// keyID cannot hold it forever.
func (s *Store) ResealValues(ctx context.Context, kind, keyID string, reseal func(string) (string, error)) (int, error) {
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
