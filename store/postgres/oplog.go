package postgres

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/embedauth/connect/oplog"
	"github.com/embedauth/connect/store"
)

// DefaultLogsLimit is the number of entries ListLogs returns when the
// filter's Limit is 0.
const DefaultLogsLimit = 100

const logColumns = `id, environment_id, type, operation, status, integration_key, connection_id,
	message, meta, created_at`

type logRow struct {
	ID             string    `db:"id"`
	EnvironmentID  int64     `db:"environment_id"`
	Type           string    `db:"type"`
	Operation      string    `db:"operation"`
	Status         string    `db:"status"`
	IntegrationKey string    `db:"integration_key"`
	ConnectionID   string    `db:"connection_id"`
	Message        string    `db:"message"`
	Meta           []byte    `db:"meta"`
	CreatedAt      time.Time `db:"created_at"`
}

var (
	qAppendLog = newQuery(`
	INSERT INTO {s}.operations_log (id, environment_id, type, operation, status,
		integration_key, connection_id, message, meta, created_at)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
	ON CONFLICT DO NOTHING
	RETURNING id`)
	// qListLogs is completed with the conditions, order and limit of each
	// call.
	qListLogs = newQuery(`SELECT ` + logColumns + ` FROM {s}.operations_log`)
)

// AppendLog stores e. An ID already stored is store.ErrConflict.
func (s *Store) AppendLog(ctx context.Context, e *oplog.Entry) error {
	meta, err := jsonArg("meta", e.Meta)
	if err != nil {
		return err
	}
	var id string
	err = s.get(ctx, qAppendLog, &id,
		e.ID, e.EnvironmentID, e.Type, e.Operation, e.Status, e.IntegrationKey, e.ConnectionID,
		e.Message, meta, e.CreatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return conflict("log entry %q", e.ID)
	}
	return dbErr(ctx, "append log", err, nil)
}

// qAppendLogs inserts every entry of its arrays or, when an ID is stored
// already or given twice, none, without raising an error: a refusal does
// not abort an enclosing transaction.
var qAppendLogs = newQuery(`
	WITH input AS (
		SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[],
			$7::text[], $8::text[], $9::text[], $10::text[])
		AS i(id, environment_id, type, operation, status, integration_key, connection_id, message,
			meta, created_at)),
	refused AS (
		SELECT 1 FROM input i WHERE EXISTS (SELECT 1 FROM {s}.operations_log l WHERE l.id = i.id)
		UNION ALL
		SELECT 1 FROM input GROUP BY id HAVING count(*) > 1)
	INSERT INTO {s}.operations_log (id, environment_id, type, operation, status, integration_key,
		connection_id, message, meta, created_at)
	SELECT id, environment_id, type, operation, status, integration_key, connection_id, message,
		meta::jsonb, created_at::timestamptz
	FROM input WHERE NOT EXISTS (SELECT 1 FROM refused)`)

// AppendLogs stores the entries in one statement, all or none. An ID
// already stored, or given twice, is store.ErrConflict.
func (s *Store) AppendLogs(ctx context.Context, es []*oplog.Entry) error {
	switch len(es) {
	case 0:
		return nil
	case 1:
		return s.AppendLog(ctx, es[0])
	}
	ids, envs := make(pq.StringArray, len(es)), make(pq.Int64Array, len(es))
	var cols [8]textArray // type ... created_at
	for i := range cols {
		cols[i] = make(textArray, len(es))
	}
	for i, e := range es {
		meta, err := jsonArg("meta", e.Meta)
		if err != nil {
			return err
		}
		ids[i], envs[i] = e.ID, e.EnvironmentID
		for k, v := range []string{e.Type, e.Operation, e.Status, e.IntegrationKey, e.ConnectionID, e.Message} {
			cols[k][i] = &v
		}
		if m, ok := meta.(string); ok {
			cols[6][i] = &m
		}
		cols[7][i] = timeText(&e.CreatedAt)
	}
	res, err := s.exec(ctx, qAppendLogs, ids, envs, cols[0], cols[1], cols[2], cols[3], cols[4], cols[5], cols[6], cols[7])
	if err != nil {
		return dbErr(ctx, "append logs", err, nil)
	}
	if n, err := res.RowsAffected(); err != nil {
		return dbErr(ctx, "append logs", err, nil)
	} else if n != int64(len(es)) {
		return conflict("log entries: an id is stored already or given twice")
	}
	return nil
}

// ListLogs returns the entries matching f, newest first (by CreatedAt, then
// by ID, both descending), after f.After when set. An EnvironmentID of 0
// matches every environment; a Limit of 0 means [DefaultLogsLimit].
func (s *Store) ListLogs(ctx context.Context, f oplog.Filter) ([]*oplog.Entry, error) {
	query, args := s.listLogsQuery(f)
	var rows []logRow
	if err := sqlx.SelectContext(ctx, s.ext(ctx), &rows, query, args...); err != nil {
		return nil, dbErr(ctx, "list logs", err, nil)
	}
	out := make([]*oplog.Entry, 0, len(rows))
	for i := range rows {
		r := &rows[i]
		e := &oplog.Entry{
			ID:             r.ID,
			EnvironmentID:  r.EnvironmentID,
			Type:           r.Type,
			Operation:      r.Operation,
			Status:         r.Status,
			IntegrationKey: r.IntegrationKey,
			ConnectionID:   r.ConnectionID,
			Message:        r.Message,
			CreatedAt:      r.CreatedAt.UTC(),
		}
		if err := decodeJSON("meta", r.Meta, &e.Meta); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// listLogsQuery returns the statement of ListLogs and its arguments.
func (s *Store) listLogsQuery(f oplog.Filter) (string, []any) {
	var w where
	if f.EnvironmentID != 0 {
		w.add("environment_id = ?", f.EnvironmentID)
	}
	if f.ID != "" {
		w.add("id = ?", f.ID)
	}
	if f.Type != "" {
		w.add("type = ?", f.Type)
	}
	if f.Operation != "" {
		w.add("operation = ?", f.Operation)
	}
	switch f.Status {
	case "":
	case oplog.StatusSuccess, oplog.StatusFailure:
		// A literal, so that any plan can use the partial index of
		// failures (migration 019).
		w.conds = append(w.conds, "status = "+pq.QuoteLiteral(f.Status))
	default:
		w.add("status = ?", f.Status)
	}
	if f.IntegrationKey != "" {
		w.add("integration_key = ?", f.IntegrationKey)
	}
	if f.DeliveryID != "" {
		w.add("meta->>'delivery_id' = ?", f.DeliveryID)
	}
	if f.ConnectionID != "" {
		w.add("connection_id = ?", f.ConnectionID)
	}
	if !f.Since.IsZero() {
		w.add("created_at >= ?", f.Since)
	}
	if !f.Until.IsZero() {
		w.add("created_at < ?", f.Until)
	}
	if f.After != nil {
		// A row comparison, which the indexes ordered by (created_at,
		// id) serve as a range.
		w.conds = append(w.conds, "(created_at, id) < ("+w.arg(f.After.CreatedAt.UTC())+"::timestamptz, "+w.arg(f.After.ID)+")")
	}
	limit := f.Limit
	if limit <= 0 {
		limit = DefaultLogsLimit
	}
	query := s.text(qListLogs) + w.String() +
		` ORDER BY created_at DESC, id DESC LIMIT ` + w.arg(limit)
	return query, w.args
}

// qCountLogs is completed with the conditions of each call; $1 is the
// bucket's unit ('hour' or 'day'). The bucket is truncated in UTC,
// whatever the session's time zone.
var qCountLogs = newQuery(`
	SELECT date_trunc($1, created_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS start,
		type, operation, status, count(*) AS count
	FROM {s}.operations_log`)

type countRow struct {
	Start     time.Time `db:"start"`
	Type      string    `db:"type"`
	Operation string    `db:"operation"`
	Status    string    `db:"status"`
	Count     int64     `db:"count"`
}

// CountLogs counts the entries of f.Since <= CreatedAt < f.Until by
// bucket (date_trunc in UTC), type, operation and status, in one grouped
// read of the environment's range of its index on (environment_id,
// created_at). An EnvironmentID of 0 counts every environment.
func (s *Store) CountLogs(ctx context.Context, f oplog.CountFilter) ([]oplog.Count, error) {
	if f.Bucket.Duration() == 0 {
		return nil, store.Invalid("invalid_filter", "The bucket must be hour or day.")
	}
	var w where
	w.arg(string(f.Bucket))
	if f.EnvironmentID != 0 {
		w.add("environment_id = ?", f.EnvironmentID)
	}
	w.add("created_at >= ?", f.Since.UTC())
	w.add("created_at < ?", f.Until.UTC())
	query := s.text(qCountLogs) + w.String() + ` GROUP BY 1, 2, 3, 4`
	var rows []countRow
	if err := sqlx.SelectContext(ctx, s.ext(ctx), &rows, query, w.args...); err != nil {
		return nil, dbErr(ctx, "count logs", err, nil)
	}
	out := make([]oplog.Count, len(rows))
	for i, r := range rows {
		out[i] = oplog.Count{Start: r.Start.UTC(), Type: r.Type, Operation: r.Operation, Status: r.Status, Count: r.Count}
	}
	return out, nil
}

// qDeleteLogsBefore deletes the oldest entries, through the index on
// created_at (migration 016), skipping rows another transaction holds, by
// id = ANY(array): a lookup in the primary key whatever the statistics say
// (a join with the rows picked may be planned as a scan of the table).
var qDeleteLogsBefore = newQuery(`
	DELETE FROM {s}.operations_log
	WHERE id = ANY(ARRAY(
		SELECT id FROM {s}.operations_log WHERE created_at < $1
		ORDER BY created_at
		LIMIT $2
		FOR UPDATE SKIP LOCKED))`)

// DeleteLogsBefore deletes up to limit entries whose CreatedAt is before
// before, the oldest first, in one statement, and returns how many.
func (s *Store) DeleteLogsBefore(ctx context.Context, before time.Time, limit int) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	res, err := s.exec(ctx, qDeleteLogsBefore, before.UTC(), limit)
	if err != nil {
		return 0, dbErr(ctx, "delete logs", err, nil)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, dbErr(ctx, "delete logs", err, nil)
	}
	return int(n), nil
}
