package sqlite

import (
	"context"
	"database/sql"
	"strings"
	"time"

	"github.com/embedauth/connect/oplog"
	"github.com/embedauth/connect/store"
)

// DefaultLogsLimit is the number of entries ListLogs returns when the
// filter's Limit is 0.
const DefaultLogsLimit = 100

const logColumns = `id, environment_id, type, operation, status, integration_key, connection_id,
	message, meta, created_at`

var qAppendLog = defineHot(`
	INSERT INTO operations_log (id, environment_id, type, operation, status,
		integration_key, connection_id, message, meta, created_at)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)

// logArgs checks the text of e and returns the arguments of qAppendLog.
func logArgs(e *oplog.Entry) ([]any, error) {
	if err := checkText(e); err != nil {
		return nil, err
	}
	meta, err := encodeJSON(e.Meta)
	if err != nil {
		return nil, err
	}
	return []any{e.ID, e.EnvironmentID, e.Type, e.Operation, e.Status, e.IntegrationKey, e.ConnectionID,
		e.Message, meta, micros(e.CreatedAt)}, nil
}

// AppendLog stores e. An ID already stored is store.ErrConflict.
func (s *Store) AppendLog(ctx context.Context, e *oplog.Entry) error {
	args, err := logArgs(e)
	if err != nil {
		return err
	}
	if _, err := s.hotExec(ctx, qAppendLog, args...); err != nil {
		return dbErr(ctx, "append log", err)
	}
	return nil
}

// AppendLogs stores the entries, all or none. An ID already stored, or
// given twice, is store.ErrConflict, and leaves an enclosing transaction
// usable.
func (s *Store) AppendLogs(ctx context.Context, es []*oplog.Entry) error {
	switch len(es) {
	case 0:
		return nil
	case 1:
		return s.AppendLog(ctx, es[0])
	}
	args := make([][]any, len(es))
	for i, e := range es {
		a, err := logArgs(e)
		if err != nil {
			return err
		}
		args[i] = a
	}
	return s.atomically(ctx, "append logs", func(ctx context.Context, _ *sql.Tx) error {
		return s.appendLogs(ctx, args)
	})
}

// appendLogs inserts the entries of args (each the arguments of
// qAppendLog), one statement each: SQLite runs in the process, where a
// statement costs no round trip.
func (s *Store) appendLogs(ctx context.Context, args [][]any) error {
	for _, a := range args {
		if _, err := s.hotExec(ctx, qAppendLog, a...); err != nil {
			return dbErr(ctx, "append logs", err)
		}
	}
	return nil
}

// ListLogs returns the entries matching f, newest first (by CreatedAt, then
// by ID, both descending), after f.After when set. An EnvironmentID of 0
// matches every environment; a Limit of 0 means [DefaultLogsLimit].
func (s *Store) ListLogs(ctx context.Context, f oplog.Filter) ([]*oplog.Entry, error) {
	if err := checkText(f); err != nil {
		return nil, err
	}
	q, args := listLogsSQL(f)
	rows, err := s.reader(ctx).QueryContext(ctx, q, args...)
	if err != nil {
		return nil, dbErr(ctx, "list logs", err)
	}
	defer rows.Close()
	out := []*oplog.Entry{}
	for rows.Next() {
		var (
			e       oplog.Entry
			meta    sql.NullString
			created int64
		)
		if err := rows.Scan(&e.ID, &e.EnvironmentID, &e.Type, &e.Operation, &e.Status, &e.IntegrationKey,
			&e.ConnectionID, &e.Message, &meta, &created); err != nil {
			return nil, dbErr(ctx, "list logs", err)
		}
		e.CreatedAt = fromMicros(created)
		if err := decodeJSON(meta, &e.Meta); err != nil {
			return nil, dbErr(ctx, "list logs", err)
		}
		out = append(out, &e)
	}
	if err := rows.Err(); err != nil {
		return nil, dbErr(ctx, "list logs", err)
	}
	return out, nil
}

// listLogsSQL returns the statement of ListLogs and its arguments.
func listLogsSQL(f oplog.Filter) (string, []any) {
	var (
		conds []string
		args  []any
	)
	add := func(cond string, a any) {
		conds = append(conds, cond)
		args = append(args, a)
	}
	if f.EnvironmentID != 0 {
		add("environment_id = ?", f.EnvironmentID)
	}
	if f.ID != "" {
		add("id = ?", f.ID)
	}
	if f.Type != "" {
		add("type = ?", f.Type)
	}
	if f.Operation != "" {
		add("operation = ?", f.Operation)
	}
	switch f.Status {
	case "":
	case oplog.StatusSuccess, oplog.StatusFailure:
		// A literal, so that the planner may use the partial index of
		// failures (migration 007).
		conds = append(conds, "status = '"+f.Status+"'")
	default:
		add("status = ?", f.Status)
	}
	if f.IntegrationKey != "" {
		add("integration_key = ?", f.IntegrationKey)
	}
	if f.DeliveryID != "" {
		add("json_extract(meta, '$.delivery_id') = ?", f.DeliveryID)
	}
	if f.ConnectionID != "" {
		add("connection_id = ?", f.ConnectionID)
	}
	if !f.Since.IsZero() {
		add("created_at >= ?", micros(f.Since))
	}
	if !f.Until.IsZero() {
		add("created_at < ?", micros(f.Until))
	}
	if f.After != nil {
		// A row value comparison, which the indexes ordered by
		// (created_at, id) serve as a range.
		conds, args = append(conds, "(created_at, id) < (?, ?)"), append(args, micros(f.After.CreatedAt), f.After.ID)
	}
	limit := f.Limit
	if limit <= 0 {
		limit = DefaultLogsLimit
	}
	q := `SELECT ` + logColumns + ` FROM operations_log`
	if len(conds) > 0 {
		q += ` WHERE ` + strings.Join(conds, ` AND `)
	}
	q += ` ORDER BY created_at DESC, id DESC LIMIT ?`
	args = append(args, limit)
	return q, args
}

// CountLogs counts the entries of f.Since <= CreatedAt < f.Until by
// bucket, type, operation and status, in one grouped read of the
// environment's range of its index on (environment_id, created_at). An
// EnvironmentID of 0 counts every environment.
//
// The bucket of an entry is its created_at (microseconds since the Unix
// epoch) rounded down to a multiple of the bucket's microseconds, in
// integers: Unix time has no leap seconds, so that is the whole UTC hour
// or day, as strftime would find it, and exact to the microsecond, where
// strftime's fractional seconds are a float64 that can round an entry a
// microsecond before a bucket's end into the next bucket.
func (s *Store) CountLogs(ctx context.Context, f oplog.CountFilter) ([]oplog.Count, error) {
	if f.Bucket.Duration() == 0 {
		return nil, store.Invalid("invalid_filter", "The bucket must be hour or day.")
	}
	q, args := countLogsSQL(f)
	rows, err := s.reader(ctx).QueryContext(ctx, q, args...)
	if err != nil {
		return nil, dbErr(ctx, "count logs", err)
	}
	defer rows.Close()
	out := []oplog.Count{}
	for rows.Next() {
		var (
			c     oplog.Count
			start int64
		)
		if err := rows.Scan(&start, &c.Type, &c.Operation, &c.Status, &c.Count); err != nil {
			return nil, dbErr(ctx, "count logs", err)
		}
		c.Start = fromMicros(start)
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, dbErr(ctx, "count logs", err)
	}
	return out, nil
}

// countLogsSQL returns the statement of CountLogs and its arguments.
func countLogsSQL(f oplog.CountFilter) (string, []any) {
	d := f.Bucket.Duration().Microseconds()
	conds, args := []string{"created_at >= ?", "created_at < ?"}, []any{d, d, d, micros(f.Since), micros(f.Until)}
	if f.EnvironmentID != 0 {
		conds, args = append(conds, "environment_id = ?"), append(args, f.EnvironmentID)
	}
	// ((x % d) + d) % d is x mod d also for an x before 1970.
	return `SELECT created_at - ((created_at % ?) + ?) % ? AS start, type, operation, status, count(*)
		FROM operations_log WHERE ` + strings.Join(conds, ` AND `) + ` GROUP BY 1, 2, 3, 4`, args
}

// DeleteLogsBefore deletes up to limit entries whose CreatedAt is before
// before, the oldest first, in one statement, and returns how many.
func (s *Store) DeleteLogsBefore(ctx context.Context, before time.Time, limit int) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	res, err := s.writer(ctx).ExecContext(ctx, `
		DELETE FROM operations_log WHERE rowid IN (
			SELECT rowid FROM operations_log WHERE created_at < ?
			ORDER BY created_at LIMIT ?)`, micros(before), limit)
	if err != nil {
		return 0, dbErr(ctx, "delete logs", err)
	}
	n, err := rowsAffected(ctx, "delete logs", res)
	return int(n), err
}
