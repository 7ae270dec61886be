package sqlite

import (
	"context"
	"database/sql"
	"math"
	"time"

	"github.com/embedauth/connect/store"
)

var _ store.ChangeFeed = (*Store)(nil)

// The change feed is the table connection_changes (migration 005), which
// triggers fill in the writing transaction. SQLite runs one write
// transaction at a time on a file, of any process, and each starts from the
// last commit: seq grows in commit order, and a statement reads a snapshot
// of the file, so once it has read a seq no lower one can commit later. A
// cursor is therefore the seq to list from (ChangeCursor.Floor, Seen
// empty): every change below it was listed.
var (
	qChangeCursor      = defineHot(`SELECT coalesce(max(seq), 0) + 1 FROM connection_changes`)
	qConnectionChanges = defineHot(`SELECT seq, environment_id, integration_key, connection_id
	FROM connection_changes WHERE seq >= ? ORDER BY seq LIMIT ?`)
)

// ChangeCursor returns a cursor after the last change committed: the
// changes committed after the call are listed from it. It implements
// store.ChangeFeed.
func (s *Store) ChangeCursor(ctx context.Context) (store.ChangeCursor, error) {
	var floor int64
	if err := s.hotRow(ctx, false, qChangeCursor, scanInto(&floor)); err != nil {
		return store.ChangeCursor{}, dbErr(ctx, "read the change cursor", err)
	}
	return store.ChangeCursor{Floor: uint64(floor)}, nil
}

// ConnectionChanges returns the changes to connections and integrations
// committed after cur, in commit order, and the cursor after them. When more
// than limit are pending it returns none, cur and store.ErrTooManyChanges.
// It implements store.ChangeFeed.
func (s *Store) ConnectionChanges(ctx context.Context, cur store.ChangeCursor, limit int) ([]store.ConnectionChange, store.ChangeCursor, error) {
	limit = min(max(limit, 0), math.MaxInt32)
	from := int64(min(cur.Floor, math.MaxInt64))
	var (
		out  []store.ConnectionChange
		last int64
	)
	err := s.hotQuery(ctx, false, qConnectionChanges, func(sc scanner) error {
		var (
			c      store.ConnectionChange
			connID sql.NullString
		)
		if err := sc.Scan(&last, &c.EnvironmentID, &c.IntegrationKey, &connID); err != nil {
			return err
		}
		c.ConnectionID = connID.String
		out = append(out, c)
		return nil
	}, from, limit+1)
	if err != nil {
		return nil, cur, dbErr(ctx, "list connection changes", err)
	}
	if len(out) > limit {
		return nil, cur, store.ErrTooManyChanges
	}
	if len(out) == 0 {
		return nil, cur, nil
	}
	return out, store.ChangeCursor{Floor: uint64(last) + 1}, nil
}

// PruneConnectionChanges deletes the changes recorded before t and returns
// how many it deleted. It implements store.ChangeFeed.
func (s *Store) PruneConnectionChanges(ctx context.Context, before time.Time) (int, error) {
	res, err := s.writer(ctx).ExecContext(ctx, `DELETE FROM connection_changes WHERE changed_at < ?`, micros(before))
	if err != nil {
		return 0, dbErr(ctx, "prune connection changes", err)
	}
	n, err := rowsAffected(ctx, "prune connection changes", res)
	return int(n), err
}
