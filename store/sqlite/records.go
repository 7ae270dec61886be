package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/embedauth/connect/functions"
	"github.com/embedauth/connect/internal/recordcheck"
)

// The records of syncs (functions.RecordStore), in the tables record_scopes
// and records of migration 003. A scope's row hands out the Seq values of
// the records it changes. The Store's writes run one at a time (one writer
// connection; a transaction holds it from BEGIN IMMEDIATE to its end), so
// every write of a scope is serialised with the others until its
// transaction ends, and a reader that has seen Seq n has seen every
// committed change below n, as functions.RecordStore requires, without a
// lock of its own.
//
// Statements that write up to a limit of rows choose them by rowid in a
// subquery: SQLite has UPDATE ... LIMIT only in builds with an option.

// recordColumns are the columns of a functions.Record, as scanRecords reads
// them.
const recordColumns = `external_id, sealed_payload, hash, first_seen_at, updated_at, deleted_at, pruned_at, seq`

// scopeIDSQL is the subquery of the id of the scope of scopeArgs.
const scopeIDSQL = `(SELECT id FROM record_scopes
	WHERE environment_id = ? AND connection_id = ? AND model = ? AND variant = ?)`

// scopeArgs are the arguments of scopeIDSQL.
func scopeArgs(sc functions.RecordScope) []any {
	return []any{sc.EnvironmentID, sc.ConnectionID, sc.Model, sc.Variant}
}

// saveRecordsChunk is how many records one statement of SaveRecords writes
// (three parameters each). Measured with modernc.org/sqlite on a file
// (synchronous NORMAL; medians of 25 saves on a busy machine of 2 cores),
// saving 1,000 records of 600 bytes: one multi-row upsert per 250 records
// took 17 ms to insert them, 23 ms to update them and 13 ms to leave them
// unchanged; one statement of 1,000 rows 22, 35 and 13 ms; the records as
// one JSON parameter read with json_each 29, 54 and 28 ms; a prepared
// statement run per record in the transaction 66, 63 and 42 ms. Anonymous
// parameters matter: SQLite finds a numbered one (?NNN) by its number in a
// list it scans, which made a statement of 1,000 rows with numbered
// parameters take 90 ms.
const saveRecordsChunk = 250

// saveRecordsSQL returns the statement that upserts n records of scope
// scopeID, the k-th (from 0) with Seq base+k+1, at now, touched at touch
// when they change. Its parameters are each record's id, hash and
// payload. The integers are written in the text, which is made for each
// call anyway.
//
// A record is changed when it is new, deleted, pruned or of another hash;
// a changed one takes its new Seq, and an added one (new, or deleted
// before) the same value as added_seq, which is how the count tells added
// from updated without reading the rows first. An unchanged record is
// left as it is (touchRecordsSQL touches it): an update of it here would
// write the indexes of every column in the SET list, which made a save of
// 1,000 unchanged records with a generation (in a scope of 50,000) take 98
// ms instead of about 30.
func saveRecordsSQL(scopeID, base int64, n int, now, touch int64) string {
	var b strings.Builder
	b.Grow(60*n + 800)
	b.WriteString(`INSERT INTO records AS r (scope_id, seq, added_seq, touched, first_seen_at, updated_at,
		external_id, hash, sealed_payload) VALUES `)
	head := "(" + strconv.FormatInt(scopeID, 10) + ","
	tail := "," + strconv.FormatInt(touch, 10) + "," + strconv.FormatInt(now, 10) + "," + strconv.FormatInt(now, 10) + ",?,?,?)"
	for k := range n {
		if k > 0 {
			b.WriteByte(',')
		}
		seq := strconv.FormatInt(base+int64(k)+1, 10)
		b.WriteString(head)
		b.WriteString(seq)
		b.WriteByte(',')
		b.WriteString(seq)
		b.WriteString(tail)
	}
	b.WriteString(`
	ON CONFLICT (scope_id, external_id) DO UPDATE SET
		sealed_payload = excluded.sealed_payload, hash = excluded.hash,
		first_seen_at = CASE WHEN r.deleted_at IS NULL THEN r.first_seen_at ELSE excluded.first_seen_at END,
		added_seq = CASE WHEN r.deleted_at IS NULL THEN r.added_seq ELSE excluded.added_seq END,
		updated_at = excluded.updated_at, deleted_at = NULL, pruned_at = NULL, seq = excluded.seq`)
	if touch != 0 {
		b.WriteString(`, touched = excluded.touched`)
	}
	b.WriteString(`
	WHERE r.hash <> excluded.hash OR r.deleted_at IS NOT NULL OR r.pruned_at IS NOT NULL
	RETURNING seq, added_seq`)
	return b.String()
}

// touchRecordsSQL returns the statement that marks the records of n ids
// (its parameters) of scope scopeID touched at touch, when they are not
// already. The ids are the outer loop (CROSS JOIN), each one probe of
// records_scope_id_external_id_idx.
func touchRecordsSQL(scopeID int64, n int, touch int64) string {
	t := strconv.FormatInt(touch, 10)
	return `UPDATE records SET touched = ` + t + ` WHERE rowid IN (
		SELECT r.rowid FROM (VALUES ` + fnPlaceholders("(?)", n) + `) AS u
		CROSS JOIN records r ON r.scope_id = ` + strconv.FormatInt(scopeID, 10) + ` AND r.external_id = u.column1
			AND r.touched <> ` + t + `)`
}

// SaveRecords upserts recs (see functions.RecordStore) in a transaction
// (the caller's, if any): the scope's row first, which reserves a Seq per
// record given (a save of unchanged records leaves a gap), then the
// records, in ascending order of id, saveRecordsChunk per statement, then,
// with touch, the unchanged ones are touched in one more statement.
func (s *Store) SaveRecords(ctx context.Context, scope functions.RecordScope, recs []functions.RecordWrite, now time.Time, touch int64) (functions.SaveResult, error) {
	var res functions.SaveResult
	order, err := recordcheck.ScopeWrites(scope, recs)
	if err != nil {
		return res, err
	}
	if len(recs) == 0 {
		return res, nil
	}
	n := int64(len(recs))
	err = s.WithTx(ctx, func(ctx context.Context) error {
		res = functions.SaveResult{}
		q := s.writer(ctx)
		var id, last int64
		err := q.QueryRowContext(ctx, `INSERT INTO record_scopes (environment_id, connection_id, model, variant, last_seq)
		VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (environment_id, connection_id, model, variant) DO UPDATE SET last_seq = last_seq + excluded.last_seq
		RETURNING id, last_seq`, append(scopeArgs(scope), n)...).Scan(&id, &last)
		if err != nil {
			return dbErr(ctx, "save records: reserve", err)
		}
		base := last - n
		args := make([]any, 0, 3*min(len(order), saveRecordsChunk))
		for lo := 0; lo < len(order); lo += saveRecordsChunk {
			chunk := order[lo:min(lo+saveRecordsChunk, len(order))]
			args = args[:0]
			for _, i := range chunk {
				r := &recs[i]
				args = append(args, r.ID, r.Hash, r.SealedPayload)
			}
			err := fnQueryEach(ctx, q, "save records", func(r fnScanner) error {
				var seq, added int64
				if err := r.Scan(&seq, &added); err != nil {
					return err
				}
				if seq == added {
					res.Added++
				} else {
					res.Updated++
				}
				return nil
			}, saveRecordsSQL(id, base+int64(lo), len(chunk), micros(now), touch), args...)
			if err != nil {
				return err
			}
		}
		if touch == 0 || res.Added+res.Updated == len(recs) {
			return nil
		}
		ids := make([]any, len(order))
		for k, i := range order {
			ids[k] = recs[i].ID
		}
		_, err = q.ExecContext(ctx, touchRecordsSQL(id, len(ids), touch), ids...)
		return dbErr(ctx, "save records: touch", err)
	})
	if err != nil {
		return functions.SaveResult{}, err
	}
	return res, nil
}

// idHashValues returns the VALUES rows "(?, ?)" of n records, and their
// arguments: the id and hash of each of recs at order.
func idHashValues(recs []functions.RecordWrite, order []int) (string, []any) {
	var b strings.Builder
	b.Grow(6 * len(order))
	args := make([]any, 0, 2*len(order))
	for k, i := range order {
		if k > 0 {
			b.WriteByte(',')
		}
		b.WriteString("(?,?)")
		args = append(args, recs[i].ID, recs[i].Hash)
	}
	return b.String(), args
}

// unchangedCond joins the records of idHashValues (u) to those stored
// unchanged (r). A CROSS JOIN makes u the outer loop, so that each of them
// is one probe of records_scope_id_external_id_idx: otherwise SQLite, which
// does not know how few they are, may scan the scope once for each.
const unchangedCond = `r.scope_id = ` + scopeIDSQL + ` AND r.external_id = u.column1 AND r.hash = u.column2
	AND r.deleted_at IS NULL AND r.pruned_at IS NULL`

// unchangedRecordsSQL returns the statement that selects the ids of the
// records of values (from idHashValues) that are stored unchanged, and
// with touch marks them touched. Every unchanged record is written,
// touched at the generation already or not: a generation is new at each
// run, so few are. Its parameters are those of values, then scopeArgs.
func unchangedRecordsSQL(values string, touch int64) string {
	if touch == 0 {
		return `SELECT r.external_id FROM (VALUES ` + values + `) AS u CROSS JOIN records r ON ` + unchangedCond
	}
	return `UPDATE records SET touched = ` + strconv.FormatInt(touch, 10) + `
	WHERE rowid IN (SELECT r.rowid FROM (VALUES ` + values + `) AS u CROSS JOIN records r ON ` + unchangedCond + `)
	RETURNING external_id`
}

// UnchangedRecords returns the ids of recs stored with the same hash,
// neither deleted nor pruned (see functions.RecordStore); with touch it
// marks them touched in the same statement.
func (s *Store) UnchangedRecords(ctx context.Context, scope functions.RecordScope, recs []functions.RecordWrite, touch int64) ([]string, error) {
	order, err := recordcheck.ScopeWrites(scope, recs)
	if err != nil {
		return nil, err
	}
	out := []string{}
	if len(recs) == 0 {
		return out, nil
	}
	values, args := idHashValues(recs, order)
	q := s.reader(ctx)
	if touch != 0 {
		q = s.writer(ctx)
	}
	rows, err := q.QueryContext(ctx, unchangedRecordsSQL(values, touch), append(args, scopeArgs(scope)...)...)
	if err != nil {
		return nil, dbErr(ctx, "unchanged records", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, dbErr(ctx, "unchanged records", err)
		}
		out = append(out, id)
	}
	if err := rows.Err(); err != nil {
		return nil, dbErr(ctx, "unchanged records", err)
	}
	return out, nil
}

// recordIDsJSON encodes ids as a JSON array, the parameter that json_each
// reads: one parameter for any number of ids.
func recordIDsJSON(ids []string) string {
	b, _ := json.Marshal(ids) // strings always encode
	return string(b)
}

// withRecordScope runs fn in a transaction (the caller's, if any) with the
// id of the scope and the last Seq it handed out, after reserving n more
// when n is above 0. When the scope has no row (no record was ever saved in it),
// fn is not called.
func (s *Store) withRecordScope(ctx context.Context, op string, scope functions.RecordScope, n int64, fn func(ctx context.Context, id, last int64) error) error {
	return s.WithTx(ctx, func(ctx context.Context) error {
		var id, last int64
		err := s.writer(ctx).QueryRowContext(ctx, `UPDATE record_scopes SET last_seq = last_seq + ?
		WHERE environment_id = ? AND connection_id = ? AND model = ? AND variant = ?
		RETURNING id, last_seq - ?`, append(append([]any{n}, scopeArgs(scope)...), n)...).Scan(&id, &last)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return dbErr(ctx, op+": find the scope", err)
		}
		return fn(ctx, id, last)
	})
}

// qDeleteRecords deletes the records of the ids $1 (a JSON array, sorted)
// of scope $2 at $3 (= $4), with Seqs from base $5. The ids are the outer
// loop (CROSS JOIN), each one probe of records_scope_id_external_id_idx;
// materialized, so that SQLite does not flatten the join into the
// UPDATE's, whose order it chooses.
const qDeleteRecords = `WITH c AS MATERIALIZED (
	SELECT r.rowid AS rid, u.key + 1 AS n FROM json_each(?) AS u
	CROSS JOIN records r ON r.scope_id = ? AND r.external_id = u.value AND r.deleted_at IS NULL)
UPDATE records SET deleted_at = ?, updated_at = ?, seq = ? + c.n
FROM c WHERE records.rowid = c.rid`

// DeleteRecords soft-deletes the stored records of ids that are not
// deleted. It reserves a Seq per id.
func (s *Store) DeleteRecords(ctx context.Context, scope functions.RecordScope, ids []string, now time.Time) (functions.SaveResult, error) {
	var res functions.SaveResult
	if err := recordcheck.Scope(scope); err != nil {
		return res, err
	}
	ids, err := recordcheck.IDs(ids, functions.MaxRecordsPerBatch)
	if err != nil || len(ids) == 0 {
		return res, err
	}
	err = s.withRecordScope(ctx, "delete records", scope, int64(len(ids)), func(ctx context.Context, id, base int64) error {
		r, err := s.writer(ctx).ExecContext(ctx, qDeleteRecords, recordIDsJSON(ids), id, micros(now), micros(now), base)
		if err != nil {
			return dbErr(ctx, "delete records", err)
		}
		n, err := r.RowsAffected()
		res.Deleted = int(n)
		return dbErr(ctx, "delete records", err)
	})
	if err != nil {
		return functions.SaveResult{}, err
	}
	return res, nil
}

// scanRecords reads rows of recordColumns.
func scanRecords(ctx context.Context, op string, rows *sql.Rows, err error) ([]*functions.Record, error) {
	if err != nil {
		return nil, dbErr(ctx, op, err)
	}
	defer rows.Close()
	out := []*functions.Record{}
	for rows.Next() {
		r := &functions.Record{}
		var first, updated int64
		var deleted, pruned sql.NullInt64
		if err := rows.Scan(&r.ID, &r.SealedPayload, &r.Hash, &first, &updated, &deleted, &pruned, &r.Seq); err != nil {
			return nil, dbErr(ctx, op, err)
		}
		r.FirstSeenAt, r.UpdatedAt = fromMicros(first), fromMicros(updated)
		r.DeletedAt, r.PrunedAt = timePtr(deleted), timePtr(pruned)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, dbErr(ctx, op, err)
	}
	return out, nil
}

// qGetRecords selects the records of the ids (a JSON array) after
// scopeArgs that are not deleted.
const qGetRecords = `SELECT ` + recordColumns + ` FROM records INDEXED BY records_scope_id_external_id_idx
WHERE scope_id = ` + scopeIDSQL + ` AND external_id IN (SELECT value FROM json_each(?)) AND deleted_at IS NULL`

// GetRecords returns the stored records of ids that are not deleted.
func (s *Store) GetRecords(ctx context.Context, scope functions.RecordScope, ids []string) ([]*functions.Record, error) {
	if err := recordcheck.Scope(scope); err != nil {
		return nil, err
	}
	ids, err := recordcheck.IDs(ids, 0)
	if err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return []*functions.Record{}, nil
	}
	rows, err := s.reader(ctx).QueryContext(ctx, qGetRecords, append(scopeArgs(scope), recordIDsJSON(ids))...)
	return scanRecords(ctx, "get records", rows, err)
}

// recordFilters are the conditions of the bits of a functions.RecordFilter:
// a record's last action, as functions.Record.LastAction tells it.
var recordFilters = []struct {
	bit  functions.RecordFilter
	cond string
}{
	{functions.FilterAdded, "(deleted_at IS NULL AND first_seen_at = updated_at)"},
	{functions.FilterUpdated, "(deleted_at IS NULL AND first_seen_at <> updated_at)"},
	{functions.FilterDeleted, "deleted_at IS NOT NULL"},
}

// ListRecords returns a page of the scope's records matching q, by
// ascending Seq.
func (s *Store) ListRecords(ctx context.Context, scope functions.RecordScope, q functions.RecordQuery) ([]*functions.Record, error) {
	if err := recordcheck.Scope(scope); err != nil {
		return nil, err
	}
	ids, err := recordcheck.Query(q)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	b.WriteString(`SELECT ` + recordColumns + ` FROM records`)
	if ids != nil {
		// Each id is one probe of the index; otherwise SQLite may walk the
		// scope in Seq order (records_scope_id_seq_idx), which needs no
		// sort, looking for them.
		b.WriteString(` INDEXED BY records_scope_id_external_id_idx`)
	}
	b.WriteString(` WHERE scope_id = ` + scopeIDSQL)
	args := scopeArgs(scope)
	if q.AfterSeq > 0 {
		b.WriteString(` AND seq > ?`)
		args = append(args, q.AfterSeq)
	}
	if q.ModifiedAfter != nil {
		b.WriteString(` AND updated_at >= ?`)
		args = append(args, micros(*q.ModifiedAfter))
	}
	if ids != nil {
		b.WriteString(` AND external_id IN (SELECT value FROM json_each(?))`)
		args = append(args, recordIDsJSON(ids))
	}
	var conds []string
	for _, f := range recordFilters {
		if q.Filter&f.bit != 0 {
			conds = append(conds, f.cond)
		}
	}
	if len(conds) > 0 && len(conds) < len(recordFilters) {
		b.WriteString(" AND (" + strings.Join(conds, " OR ") + ")")
	}
	b.WriteString(` ORDER BY seq LIMIT ?`)
	args = append(args, q.Limit)
	rows, err := s.reader(ctx).QueryContext(ctx, b.String(), args...)
	return scanRecords(ctx, "list records", rows, err)
}

// qCountRecords counts the entries of the scope in records_live_idx, which
// holds the records that are not deleted: it reads no record.
const qCountRecords = `SELECT count(*) FROM records WHERE scope_id = ` + scopeIDSQL + ` AND deleted_at IS NULL`

// CountRecords returns how many records of the scope are not deleted.
func (s *Store) CountRecords(ctx context.Context, scope functions.RecordScope) (int, error) {
	if err := recordcheck.Scope(scope); err != nil {
		return 0, err
	}
	var n int
	err := s.reader(ctx).QueryRowContext(ctx, qCountRecords, scopeArgs(scope)...).Scan(&n)
	if err != nil {
		return 0, dbErr(ctx, "count records", err)
	}
	return n, nil
}

// qPruneRecords prunes at $1 up to $7 records of the scope of $2 to $5 up
// to Seq $6, in Seq order, and returns their Seqs.
const qPruneRecords = `UPDATE records SET sealed_payload = '', pruned_at = ?
WHERE rowid IN (SELECT rowid FROM records
	WHERE scope_id = ` + scopeIDSQL + ` AND seq <= ? AND pruned_at IS NULL
	ORDER BY seq LIMIT ?)
RETURNING seq`

// PruneRecords empties the payload of up to limit records not pruned, by
// ascending Seq, up to and including untilSeq, in one statement.
func (s *Store) PruneRecords(ctx context.Context, scope functions.RecordScope, untilSeq int64, limit int, now time.Time) (int, int64, error) {
	if err := recordcheck.Scope(scope); err != nil {
		return 0, 0, err
	}
	if err := recordcheck.Limit(limit); err != nil {
		return 0, 0, err
	}
	var n int
	var last int64
	rows, err := s.writer(ctx).QueryContext(ctx, qPruneRecords, append(append([]any{micros(now)}, scopeArgs(scope)...), untilSeq, limit)...)
	if err != nil {
		return 0, 0, dbErr(ctx, "prune records", err)
	}
	defer rows.Close()
	for rows.Next() {
		var seq int64
		if err := rows.Scan(&seq); err != nil {
			return 0, 0, dbErr(ctx, "prune records", err)
		}
		n, last = n+1, max(last, seq)
	}
	if err := rows.Err(); err != nil {
		return 0, 0, dbErr(ctx, "prune records", err)
	}
	return n, last, nil
}

// qDeleteUntouched deletes at $1 (= $2) up to $6 records of scope $4 (=
// $7) not deleted and not touched at generation $5 or later, in order of
// id, with the Seqs that follow $3, and returns their ids.
const qDeleteUntouched = `UPDATE records AS r SET deleted_at = ?, updated_at = ?, seq = ? + c.n
FROM (SELECT external_id, row_number() OVER (ORDER BY external_id) AS n FROM records
	WHERE scope_id = ? AND deleted_at IS NULL AND touched < ?
	ORDER BY external_id LIMIT ?) AS c
WHERE r.scope_id = ? AND r.external_id = c.external_id
RETURNING external_id`

// DeleteUntouched soft-deletes up to limit records not deleted and not
// touched at generation since or later, in ascending order of id, and
// returns their ids. Their Seqs follow the scope's last one without a gap.
func (s *Store) DeleteUntouched(ctx context.Context, scope functions.RecordScope, since int64, limit int, now time.Time) ([]string, error) {
	if err := recordcheck.Scope(scope); err != nil {
		return nil, err
	}
	if err := recordcheck.Limit(limit); err != nil {
		return nil, err
	}
	ids := []string{}
	err := s.withRecordScope(ctx, "delete untouched records", scope, 0, func(ctx context.Context, id, last int64) error {
		ids = ids[:0]
		q := s.writer(ctx)
		rows, err := q.QueryContext(ctx, qDeleteUntouched, micros(now), micros(now), last, id, since, limit, id)
		if err != nil {
			return dbErr(ctx, "delete untouched records", err)
		}
		for rows.Next() {
			var v string
			if err := rows.Scan(&v); err != nil {
				rows.Close()
				return dbErr(ctx, "delete untouched records", err)
			}
			ids = append(ids, v)
		}
		if err := rows.Close(); err != nil {
			return dbErr(ctx, "delete untouched records", err)
		}
		if err := rows.Err(); err != nil {
			return dbErr(ctx, "delete untouched records", err)
		}
		if len(ids) == 0 {
			return nil
		}
		_, err = q.ExecContext(ctx, `UPDATE record_scopes SET last_seq = last_seq + ? WHERE id = ?`, len(ids), id)
		return dbErr(ctx, "delete untouched records", err)
	})
	if err != nil {
		return nil, err
	}
	return ids, nil
}

const qDeleteAllRecords = `DELETE FROM records WHERE rowid IN (
	SELECT rowid FROM records WHERE scope_id = ` + scopeIDSQL + ` LIMIT ?)`

// DeleteAllRecords hard-deletes up to limit records of the scope. The
// scope's row stays, and with it the last Seq handed out, so that records
// saved later get Seqs above those of the deleted ones.
func (s *Store) DeleteAllRecords(ctx context.Context, scope functions.RecordScope, limit int) (int, error) {
	if err := recordcheck.Scope(scope); err != nil {
		return 0, err
	}
	if err := recordcheck.Limit(limit); err != nil {
		return 0, err
	}
	r, err := s.writer(ctx).ExecContext(ctx, qDeleteAllRecords, append(scopeArgs(scope), limit)...)
	if err != nil {
		return 0, dbErr(ctx, "delete all records", err)
	}
	n, err := r.RowsAffected()
	if err != nil {
		return 0, dbErr(ctx, "delete all records", err)
	}
	return int(n), nil
}

// qPruneStaleRecords prunes at $1 up to $3 records not updated since $2,
// the least recently updated first (records_stale_idx in order).
const qPruneStaleRecords = `UPDATE records SET sealed_payload = '', pruned_at = ?
WHERE rowid IN (SELECT rowid FROM records WHERE updated_at < ? AND pruned_at IS NULL
	ORDER BY updated_at LIMIT ?)`

// PruneStaleRecords empties the payload of up to limit records, of every
// scope, not updated since before and not pruned, the least recently
// updated first.
func (s *Store) PruneStaleRecords(ctx context.Context, before time.Time, limit int, now time.Time) (int, error) {
	if err := recordcheck.Limit(limit); err != nil {
		return 0, err
	}
	r, err := s.writer(ctx).ExecContext(ctx, qPruneStaleRecords, micros(now), micros(before), limit)
	if err != nil {
		return 0, dbErr(ctx, "prune stale records", err)
	}
	n, err := r.RowsAffected()
	if err != nil {
		return 0, dbErr(ctx, "prune stale records", err)
	}
	return int(n), nil
}

// qOrphanScopes selects, as a JSON array, up to $1 scopes whose connection
// (row id, in the scope's environment) no longer exists. It reads every
// scope, each with one probe of connections.
const qOrphanScopes = `SELECT json_group_array(id) FROM (
	SELECT id FROM record_scopes sc
	WHERE NOT EXISTS (SELECT 1 FROM connections c
		WHERE c.id = sc.connection_id AND c.environment_id = sc.environment_id)
	ORDER BY id LIMIT ?)`

// orphanScopesPage is how many orphan scopes DeleteOrphanRecords takes at a
// time.
const orphanScopesPage = 1000

// DeleteOrphanRecords hard-deletes up to limit records of scopes whose
// connection (row id, in the scope's environment) no longer exists, and
// drops the scopes it empties, in transactions of up to orphanScopesPage
// scopes.
func (s *Store) DeleteOrphanRecords(ctx context.Context, limit int) (int, error) {
	if err := recordcheck.Limit(limit); err != nil {
		return 0, err
	}
	total := 0
	for total < limit {
		var found, dropped int64
		err := s.WithTx(ctx, func(ctx context.Context) error {
			found, dropped = 0, 0
			q := s.writer(ctx)
			var scopes string
			err := q.QueryRowContext(ctx, qOrphanScopes, orphanScopesPage).Scan(&scopes)
			if err != nil {
				return dbErr(ctx, "delete orphan records: find scopes", err)
			}
			if scopes == "[]" {
				return nil
			}
			found = 1
			r, err := q.ExecContext(ctx, `DELETE FROM records WHERE rowid IN (
				SELECT rowid FROM records WHERE scope_id IN (SELECT value FROM json_each(?)) LIMIT ?)`,
				scopes, limit-total)
			if err != nil {
				return dbErr(ctx, "delete orphan records", err)
			}
			n, err := r.RowsAffected()
			if err != nil {
				return dbErr(ctx, "delete orphan records", err)
			}
			r, err = q.ExecContext(ctx, `DELETE FROM record_scopes WHERE id IN (SELECT value FROM json_each(?))
				AND NOT EXISTS (SELECT 1 FROM records r WHERE r.scope_id = record_scopes.id)`, scopes)
			if err != nil {
				return dbErr(ctx, "delete orphan records: drop scopes", err)
			}
			if dropped, err = r.RowsAffected(); err != nil {
				return dbErr(ctx, "delete orphan records: drop scopes", err)
			}
			total += int(n)
			return nil
		})
		if err != nil {
			return total, err
		}
		if found == 0 || dropped == 0 {
			// Nothing left, or the limit is reached within scopes that
			// still hold records.
			return total, nil
		}
	}
	return total, nil
}
