package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/embedauth/connect/store"
)

// sealedColumn is where the values of one kind of sealed value live: the
// table, the column, and the columns that identify a row (rowid but in the
// WITHOUT ROWID table of variables).
type sealedColumn struct {
	table, column string
	key           []string
}

// sealedColumns names the table and column of each kind of sealed value.
// Their insert and update triggers (migration 004) register key ids in
// sealing_keys.
var sealedColumns = map[string]sealedColumn{
	store.SealedSigningKey:             {"environments", "sealed_webhook_signing_key", []string{"rowid"}},
	store.SealedVariable:               {"environment_variables", "sealed_value", []string{"environment_id", "name"}},
	store.SealedIntegrationCredentials: {"integrations", "sealed_credentials", []string{"rowid"}},
	store.SealedIntegrationCustom:      {"integrations", "sealed_custom", []string{"rowid"}},
	store.SealedConnectionCredentials:  {"connections", "sealed_credentials", []string{"rowid"}},
	store.SealedSessionDefaults:        {"connect_sessions", "sealed_integrations_config_defaults", []string{"rowid"}},
	store.SealedOAuthFlowSecrets:       {"oauth_flows", "sealed_secrets", []string{"rowid"}},
	store.SealedRecordPayload:          {"records", "sealed_payload", []string{"rowid"}},
	store.SealedActionInput:            {"action_tasks", "sealed_input", []string{"rowid"}},
	store.SealedActionOutput:           {"action_tasks", "sealed_output", []string{"rowid"}},
	store.SealedActionError:            {"action_tasks", "sealed_error", []string{"rowid"}},
}

// resealPage is how many values ResealValues reads at a time.
const resealPage = 200

// underKey is the condition "the column holds a value sealed under the key
// whose prefix "v1:<id>:" is the parameter": a comparison of the prefix,
// which needs no escaping of the id.
func (c sealedColumn) underKey() string {
	return fmt.Sprintf("substr(%[1]s, 1, length(?1)) = ?1", c.column)
}

// SealingKeyIDs returns the key ids of the registry that the triggers of
// migration 004 keep, sorted.
func (s *Store) SealingKeyIDs(ctx context.Context) ([]string, error) {
	rows, err := s.reader(ctx).QueryContext(ctx, `SELECT key_id FROM sealing_keys ORDER BY key_id`)
	if err != nil {
		return nil, dbErr(ctx, "list sealing key ids", err)
	}
	defer rows.Close()
	ids := []string{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, dbErr(ctx, "list sealing key ids", err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, dbErr(ctx, "list sealing key ids", err)
	}
	return ids, nil
}

// sealedPrefix returns the prefix of the values sealed under keyID, or false
// for an id no value can name.
func sealedPrefix(keyID string) (string, bool) {
	p := "v1:" + keyID + ":"
	id, ok := store.SealedKeyID(p)
	return p, ok && id == keyID
}

// ForgetSealingKeyID counts, by kind, the values sealed under keyID (a read
// of every table with sealed values) and, when there are none, drops keyID
// from the registry. Its transaction holds the write lock, so no value is
// sealed under keyID meanwhile.
func (s *Store) ForgetSealingKeyID(ctx context.Context, keyID string) (map[string]int, error) {
	if err := checkText(keyID); err != nil {
		return nil, err
	}
	counts := map[string]int{}
	err := s.WithTx(ctx, func(ctx context.Context) error {
		clear(counts)
		q := s.writer(ctx)
		if prefix, ok := sealedPrefix(keyID); ok {
			for _, kind := range store.SealedKinds {
				c := sealedColumns[kind]
				var n int
				if err := q.QueryRowContext(ctx, `SELECT count(*) FROM `+c.table+` WHERE `+c.underKey(), prefix).Scan(&n); err != nil {
					return dbErr(ctx, "count sealed values", err)
				}
				if n > 0 {
					counts[kind] = n
				}
			}
		}
		if len(counts) > 0 {
			return nil
		}
		if _, err := q.ExecContext(ctx, `DELETE FROM sealing_keys WHERE key_id = ?`, keyID); err != nil {
			return dbErr(ctx, "forget sealing key", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return counts, nil
}

// SampleSealedValue returns one value sealed under keyID, and its kind, or
// store.ErrNotFound: the first found in the order of store.SealedKinds
// (the kinds with few rows first).
func (s *Store) SampleSealedValue(ctx context.Context, keyID string) (string, string, error) {
	if err := checkText(keyID); err != nil {
		return "", "", err
	}
	prefix, ok := sealedPrefix(keyID)
	if ok {
		q := s.reader(ctx)
		for _, kind := range store.SealedKinds {
			c := sealedColumns[kind]
			var v string
			err := q.QueryRowContext(ctx, `SELECT `+c.column+` FROM `+c.table+` WHERE `+c.underKey()+` LIMIT 1`, prefix).Scan(&v)
			if err == sql.ErrNoRows {
				continue
			}
			if err != nil {
				return "", "", dbErr(ctx, "sample sealed value", err)
			}
			return kind, v, nil
		}
	}
	return "", "", fmt.Errorf("sqlite: no value sealed under key %q: %w", keyID, store.ErrNotFound)
}

// ResealValues replaces each value of kind sealed under keyID with reseal's
// result, a page at a time in the order of the rows, each row with a
// compare-and-swap in a short transaction of its page (so that the writer
// is not held while reseal runs). A value changed meanwhile is left alone.
func (s *Store) ResealValues(ctx context.Context, kind, keyID string, reseal func(string) (string, error)) (int, error) {
	c, ok := sealedColumns[kind]
	if !ok {
		return 0, fmt.Errorf("sqlite: sealed value kind %q: %w", kind, store.ErrInvalid)
	}
	if err := checkText(keyID); err != nil {
		return 0, err
	}
	prefix, ok := sealedPrefix(keyID)
	if !ok {
		return 0, nil
	}
	keys := strings.Join(c.key, ", ")
	params := make([]string, len(c.key))
	for i := range params {
		params[i] = fmt.Sprintf("?%d", i+2) // ?1 is the prefix
	}
	after := "(" + keys + ") > (" + strings.Join(params, ", ") + ")"
	match := strings.Join(c.key, " = ? AND ") + " = ?"
	selFirst := fmt.Sprintf(`SELECT %s, %s FROM %s WHERE %s ORDER BY %s LIMIT %d`, keys, c.column, c.table, c.underKey(), keys, resealPage)
	selAfter := fmt.Sprintf(`SELECT %s, %s FROM %s WHERE %s AND %s ORDER BY %s LIMIT %d`, keys, c.column, c.table,
		c.underKey(), after, keys, resealPage)
	update := fmt.Sprintf(`UPDATE %s SET %s = ? WHERE %s AND %s = ?`, c.table, c.column, match, c.column)

	type row struct {
		key      []any
		old, new string
	}
	n := 0
	var last []any
	for {
		var rows *sql.Rows
		var err error
		if last == nil {
			rows, err = s.reader(ctx).QueryContext(ctx, selFirst, prefix)
		} else {
			rows, err = s.reader(ctx).QueryContext(ctx, selAfter, append([]any{prefix}, last...)...)
		}
		if err != nil {
			return n, dbErr(ctx, "read sealed values", err)
		}
		var page []row
		for rows.Next() {
			r := row{key: make([]any, len(c.key))}
			dst := make([]any, 0, len(c.key)+1)
			for i := range r.key {
				dst = append(dst, &r.key[i])
			}
			if err := rows.Scan(append(dst, &r.old)...); err != nil {
				rows.Close()
				return n, dbErr(ctx, "read sealed values", err)
			}
			page = append(page, r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return n, dbErr(ctx, "read sealed values", err)
		}
		if len(page) == 0 {
			return n, nil
		}
		last = page[len(page)-1].key
		var resealErr error
		for i := range page {
			v, err := reseal(page[i].old)
			if err == nil {
				if id, _ := store.SealedKeyID(v); id == keyID {
					err = fmt.Errorf("sqlite: resealing a %s value: the new value is still sealed under key %q: %w", kind, keyID, store.ErrInvalid)
				}
			}
			if err != nil {
				// Store what was re-sealed before the error.
				page, resealErr = page[:i], err
				break
			}
			page[i].new = v
		}
		err = s.WithTx(ctx, func(ctx context.Context) error {
			q := s.writer(ctx)
			for _, r := range page {
				args := append(append([]any{r.new}, r.key...), r.old)
				res, err := q.ExecContext(ctx, update, args...)
				if err != nil {
					return dbErr(ctx, "replace sealed value", err)
				}
				if k, _ := res.RowsAffected(); k > 0 {
					n++
				}
			}
			return nil
		})
		if err != nil {
			return n, err
		}
		if resealErr != nil {
			return n, resealErr
		}
	}
}
