package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/embedauth/connect/store"
)

var _ store.ChangeFeed = (*Store)(nil)

// The feed reads the rows of transactions that have committed and that it
// has not listed: those at or above the cursor's floor, less the ones it
// has seen. The snapshot's xmin is the oldest transaction still running:
// every transaction below it has ended, and its rows are visible to the
// same statement, so the next floor is xmin. A transaction that commits
// after an younger one is listed when it commits, and a long transaction
// elsewhere in the cluster (which holds xmin back) delays nothing: it only
// makes the seen list longer. One row comes back even when there is no
// change (its change columns NULL), to carry xmin.
var (
	qChangeCursor = newPreparedQuery(`
	WITH snap AS (SELECT pg_snapshot_xmin(pg_current_snapshot()) AS xmin)
	SELECT snap.xmin::text, c.txid::text
	FROM snap LEFT JOIN LATERAL (
		SELECT DISTINCT txid FROM {s}.connection_changes WHERE txid >= snap.xmin ORDER BY txid LIMIT $1
	) c ON true`)
	qConnectionChanges = newPreparedQuery(`
	WITH snap AS (SELECT pg_snapshot_xmin(pg_current_snapshot()) AS xmin)
	SELECT snap.xmin::text, c.txid::text, c.environment_id, c.integration_key, c.connection_id
	FROM snap LEFT JOIN LATERAL (
		SELECT txid, seq, environment_id, integration_key, connection_id FROM {s}.connection_changes
		WHERE txid >= $1::text::xid8 AND NOT (txid = ANY($2::text::xid8[]))
		ORDER BY txid, seq
		LIMIT $3
	) c ON true
	ORDER BY c.txid, c.seq`)
	qPruneConnectionChanges = newQuery(`DELETE FROM {s}.connection_changes WHERE changed_at < $1`)
)

// ChangeCursor returns a cursor at the oldest transaction running now, which
// has seen the transactions above it that have committed: the changes of
// every transaction that commits later come after it.
func (s *Store) ChangeCursor(ctx context.Context) (store.ChangeCursor, error) {
	var (
		cur   store.ChangeCursor
		xmin  string
		n     int
		limit = maxSeen + 1
	)
	err := s.queryRows(ctx, qChangeCursor, func(rows *sql.Rows) error {
		var txid sql.NullString
		if err := rows.Scan(&xmin, &txid); err != nil || !txid.Valid {
			return err
		}
		tx, err := parseXID(txid.String)
		if err != nil {
			return err
		}
		cur.Seen = append(cur.Seen, tx)
		n++
		return nil
	}, limit)
	if err != nil {
		return cur, dbErr(ctx, "read the change cursor", err, nil)
	}
	if n > maxSeen {
		return store.ChangeCursor{}, store.ErrTooManyChanges
	}
	if cur.Floor, err = parseXID(xmin); err != nil {
		return store.ChangeCursor{}, err
	}
	return cur, nil
}

// maxSeen bounds the transactions a cursor remembers above its floor (the
// length of the array each poll sends).
const maxSeen = 10000

// ConnectionChanges returns the changes to connections and integrations of
// the transactions that committed after cur.
func (s *Store) ConnectionChanges(ctx context.Context, cur store.ChangeCursor, limit int) ([]store.ConnectionChange, store.ChangeCursor, error) {
	if limit <= 0 {
		return nil, cur, store.ErrTooManyChanges
	}
	var (
		out  []store.ConnectionChange
		txs  []uint64
		xmin string
	)
	err := s.queryRows(ctx, qConnectionChanges, func(rows *sql.Rows) error {
		var (
			txid   sql.NullString
			envID  sql.NullInt64
			key    sql.NullString
			connID sql.NullString
		)
		if err := rows.Scan(&xmin, &txid, &envID, &key, &connID); err != nil || !txid.Valid {
			return err
		}
		tx, err := parseXID(txid.String)
		if err != nil {
			return err
		}
		if len(txs) == 0 || txs[len(txs)-1] != tx {
			txs = append(txs, tx)
		}
		out = append(out, store.ConnectionChange{EnvironmentID: envID.Int64, IntegrationKey: key.String, ConnectionID: connID.String})
		return nil
	}, strconv.FormatUint(cur.Floor, 10), xidArray(cur.Seen), limit+1)
	if err != nil {
		return nil, cur, dbErr(ctx, "list connection changes", err, nil)
	}
	if len(out) > limit {
		return nil, cur, store.ErrTooManyChanges
	}
	floor, err := parseXID(xmin)
	if err != nil {
		return nil, cur, err
	}
	next := store.ChangeCursor{Floor: max(floor, cur.Floor)}
	for _, tx := range slices.Concat(cur.Seen, txs) {
		if tx >= next.Floor {
			next.Seen = append(next.Seen, tx)
		}
	}
	slices.Sort(next.Seen)
	next.Seen = slices.Compact(next.Seen)
	if len(next.Seen) > maxSeen {
		return nil, cur, store.ErrTooManyChanges
	}
	return out, next, nil
}

// PruneConnectionChanges deletes the changes recorded before t.
func (s *Store) PruneConnectionChanges(ctx context.Context, before time.Time) (int, error) {
	res, err := s.exec(ctx, qPruneConnectionChanges, before)
	if err != nil {
		return 0, dbErr(ctx, "prune connection changes", err, nil)
	}
	n, err := res.RowsAffected()
	return int(n), err
}

func parseXID(s string) (uint64, error) {
	x, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("postgres: bad transaction id %q from the change feed", s)
	}
	return x, nil
}

// xidArray writes txs as a Postgres array literal.
func xidArray(txs []uint64) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, tx := range txs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatUint(tx, 10))
	}
	b.WriteByte('}')
	return b.String()
}
