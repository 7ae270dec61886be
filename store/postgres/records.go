package postgres

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"

	"github.com/lib/pq"

	"github.com/embedauth/connect/functions"
	"github.com/embedauth/connect/internal/recordcheck"
)

// The records of syncs (functions.RecordStore), in the tables of migration
// 013: record_scopes, whose row of a scope is the lock that serialises the
// scope's writes and hands out Seq values, and records.
//
// Every write of a scope locks the scope's row first and keeps it until its
// transaction ends. SaveRecords does it in its one statement (the upsert of
// the scope's row, then the upsert of the records): the records' upsert
// reads and updates the latest version of each row whatever its snapshot
// (ON CONFLICT DO UPDATE does), so a save committed while it waited for the
// lock is seen. The other writes lock the row in a statement of their own
// and then write in the next statement, whose snapshot sees every write of
// the scope committed before they got the lock. PruneStaleRecords,
// DeleteOrphanRecords and ResealValues, which do not change Seq values,
// skip the rows other transactions hold (or wait for one row at a time),
// so that no cycle of locks can form.

// recordColumns are the columns of a functions.Record, as recordRow scans
// them.
const recordColumns = `external_id, sealed_payload, hash, first_seen_at, updated_at, deleted_at, pruned_at, seq`

// scopeID is the subquery of the id of the scope of parameters $1 to $4.
const scopeID = `(SELECT id FROM {s}.record_scopes
		WHERE environment_id = $1 AND connection_id = $2 AND model = $3 AND variant = $4)`

type recordRow struct {
	ID                  string
	SealedPayload, Hash string
	FirstSeen, Updated  time.Time
	Deleted, Pruned     sql.NullTime
	Seq                 int64
}

func (r *recordRow) scanTargets() []any {
	return []any{&r.ID, &r.SealedPayload, &r.Hash, &r.FirstSeen, &r.Updated, &r.Deleted, &r.Pruned, &r.Seq}
}

func (r *recordRow) record() *functions.Record {
	out := &functions.Record{ID: r.ID, SealedPayload: r.SealedPayload, Hash: r.Hash,
		FirstSeenAt: r.FirstSeen.UTC(), UpdatedAt: r.Updated.UTC(), Seq: r.Seq}
	if r.Deleted.Valid {
		t := r.Deleted.Time.UTC()
		out.DeletedAt = &t
	}
	if r.Pruned.Valid {
		t := r.Pruned.Time.UTC()
		out.PrunedAt = &t
	}
	return out
}

// The statements that write up to a limit of rows choose them in a
// MATERIALIZED common table expression, which runs once: a subquery
// joined to the table it writes may run again for each row (as the inner
// side of a nested loop), and one that locks its rows then finds new
// ones in place of those the statement has just written.

// saveRecordsSQL is the text of qSaveRecords, or with touch of
// qSaveRecordsTouched. Parameters: the scope ($1 to $4), the number of
// records ($5), their ids, payloads and hashes ($6 to $8, sorted by id so
// that rows are locked in one order), now ($9) and touch ($10).
//
// sc upserts the scope's row, which locks it, and reserves a Seq per
// record: base + n for the n-th. w upserts the records. A record is
// changed when it is new, deleted, pruned or of another hash; a changed
// one takes its new Seq, and an added one (new, or deleted before) the
// same value as added_seq, which is how the count tells added from
// updated without reading the rows first. With touch, an unchanged record
// whose touched generation differs is updated too, its touched column
// alone (every other column keeps its value, Seq included, which is how
// the count leaves it out).
func saveRecordsSQL(touch bool) string {
	const changed = `(r.hash <> EXCLUDED.hash OR r.deleted_at IS NOT NULL OR r.pruned_at IS NOT NULL)`
	set := func(col, v string) string {
		if !touch {
			return col + " = " + v
		}
		return col + " = CASE WHEN " + changed + " THEN " + v + " ELSE r." + col + " END"
	}
	sets := []string{
		set("sealed_payload", "EXCLUDED.sealed_payload"),
		set("hash", "EXCLUDED.hash"),
		set("first_seen_at", "CASE WHEN r.deleted_at IS NULL THEN r.first_seen_at ELSE EXCLUDED.first_seen_at END"),
		set("added_seq", "CASE WHEN r.deleted_at IS NULL THEN r.added_seq ELSE EXCLUDED.added_seq END"),
		set("updated_at", "EXCLUDED.updated_at"),
		set("deleted_at", "NULL"),
		set("pruned_at", "NULL"),
		set("seq", "EXCLUDED.seq"),
	}
	where := changed
	if touch {
		sets = append(sets, "touched = EXCLUDED.touched")
		where += " OR r.touched <> EXCLUDED.touched"
	}
	return `
	WITH sc AS (
		INSERT INTO {s}.record_scopes AS sc (environment_id, connection_id, model, variant, last_seq)
		VALUES ($1, $2, $3, $4, $5::bigint)
		ON CONFLICT (environment_id, connection_id, model, variant)
		DO UPDATE SET last_seq = sc.last_seq + EXCLUDED.last_seq
		RETURNING id, last_seq - $5::bigint AS base),
	w AS (
		INSERT INTO {s}.records AS r (scope_id, seq, added_seq, touched, first_seen_at, updated_at,
			external_id, hash, sealed_payload)
		SELECT sc.id, sc.base + i.n, sc.base + i.n, $10::bigint, $9::timestamptz, $9::timestamptz,
			i.external_id, i.hash, i.sealed_payload
		FROM sc, unnest($6::text[], $7::text[], $8::text[]) WITH ORDINALITY AS i(external_id, sealed_payload, hash, n)
		ORDER BY i.n
		ON CONFLICT (scope_id, external_id) DO UPDATE SET
			` + strings.Join(sets, ",\n\t\t\t") + `
		WHERE ` + where + `
		RETURNING r.seq, r.added_seq)
	SELECT count(*) FILTER (WHERE w.seq > sc.base AND w.added_seq = w.seq),
		count(*) FILTER (WHERE w.seq > sc.base AND w.added_seq <> w.seq)
	FROM w, sc`
}

var (
	qSaveRecords        = newQuery(saveRecordsSQL(false))
	qSaveRecordsTouched = newQuery(saveRecordsSQL(true))
	// qUnchangedRecords selects which of the records $5 (ids) and $6
	// (hashes) of the scope are stored with the same hash, neither
	// deleted nor pruned. The lookup is a LATERAL subquery with a LIMIT so
	// that each record is one probe of the primary key whatever the
	// table's statistics say: a join of unnest, planned on a table just
	// filled and not analysed yet, can scan the whole scope once per
	// record.
	qUnchangedRecords = newQuery(`SELECT u.external_id FROM unnest($5::text[], $6::text[]) AS u(external_id, hash),
	LATERAL (SELECT 1 FROM {s}.records r
		WHERE r.scope_id = ` + scopeID + ` AND r.external_id = u.external_id AND r.hash = u.hash
		AND r.deleted_at IS NULL AND r.pruned_at IS NULL LIMIT 1) m`)
	// qTouchUnchangedRecords does what qUnchangedRecords does in the scope
	// $1 (locked by the caller) and marks the records it selects touched
	// at $4.
	qTouchUnchangedRecords = newQuery(`
	WITH m AS MATERIALIZED (
		SELECT u.external_id, m.touched FROM unnest($2::text[], $3::text[]) AS u(external_id, hash),
		LATERAL (SELECT r.touched FROM {s}.records r
			WHERE r.scope_id = $1 AND r.external_id = u.external_id AND r.hash = u.hash
			AND r.deleted_at IS NULL AND r.pruned_at IS NULL LIMIT 1) m),
	t AS (
		UPDATE {s}.records r SET touched = $4 FROM m
		WHERE r.scope_id = $1 AND r.external_id = m.external_id AND m.touched <> $4)
	SELECT external_id FROM m`)
	// qReserveSeqs locks the scope's row and reserves $5 Seq values:
	// base + 1 to base + $5. No row when the scope has none.
	qReserveSeqs = newQuery(`
	UPDATE {s}.record_scopes SET last_seq = last_seq + $5::bigint
	WHERE environment_id = $1 AND connection_id = $2 AND model = $3 AND variant = $4
	RETURNING id, last_seq - $5::bigint`)
	// qLockScope locks the scope's row. No row when the scope has none.
	qLockScope = newQuery(`
	SELECT id FROM {s}.record_scopes
	WHERE environment_id = $1 AND connection_id = $2 AND model = $3 AND variant = $4
	FOR UPDATE`)
	// qDeleteRecords deletes the records of the ids $4 (sorted) of scope
	// $1, with Seqs from base $2, at $3.
	qDeleteRecords = newQuery(`
	UPDATE {s}.records r SET deleted_at = $3, updated_at = $3, seq = $2 + u.n
	FROM unnest($4::text[]) WITH ORDINALITY AS u(external_id, n)
	WHERE r.scope_id = $1 AND r.external_id = u.external_id AND r.deleted_at IS NULL`)
	qGetRecords = newQuery(`SELECT ` + recordColumns + ` FROM {s}.records
	WHERE scope_id = ` + scopeID + ` AND external_id = ANY($5::text[]) AND deleted_at IS NULL`)
	// qListRecords is completed with the conditions, order and limit of
	// each call; its first four parameters are the scope's.
	qListRecords = newQuery(`SELECT ` + recordColumns + ` FROM {s}.records
	WHERE scope_id = ` + scopeID)
	qCountRecords = newQuery(`SELECT count(*) FROM {s}.records
	WHERE scope_id = ` + scopeID + ` AND deleted_at IS NULL`)
	// qPruneRecords prunes, at $4, up to $3 records of scope $1 up to Seq
	// $2 and returns how many, and the last Seq.
	qPruneRecords = newQuery(`
	WITH c AS MATERIALIZED (
		SELECT external_id FROM {s}.records
		WHERE scope_id = $1 AND seq <= $2 AND pruned_at IS NULL
		ORDER BY seq LIMIT $3),
	p AS (
		UPDATE {s}.records r SET sealed_payload = '', pruned_at = $4
		FROM c WHERE r.scope_id = $1 AND r.external_id = c.external_id AND r.pruned_at IS NULL
		RETURNING r.seq)
	SELECT count(*), coalesce(max(seq), 0) FROM p`)
	// qDeleteUntouched deletes, at $4, up to $5 records of scope $1 not
	// touched at generation $3 or later, in order of id, with Seqs from
	// base $2.
	qDeleteUntouched = newQuery(`
	WITH c AS MATERIALIZED (
		SELECT external_id FROM {s}.records
		WHERE scope_id = $1 AND deleted_at IS NULL AND touched < $3
		ORDER BY external_id LIMIT $5),
	d AS MATERIALIZED (SELECT external_id, row_number() OVER () AS n FROM c)
	UPDATE {s}.records r SET deleted_at = $4, updated_at = $4, seq = $2 + d.n
	FROM d WHERE r.scope_id = $1 AND r.external_id = d.external_id AND r.deleted_at IS NULL
	RETURNING r.external_id`)
	qDeleteAllRecords = newQuery(`
	WITH c AS MATERIALIZED (SELECT external_id FROM {s}.records WHERE scope_id = $1 LIMIT $2)
	DELETE FROM {s}.records r USING c WHERE r.scope_id = $1 AND r.external_id = c.external_id`)
	// qPruneStaleRecords skips the rows that other transactions hold: a
	// later sweep finds them.
	qPruneStaleRecords = newQuery(`
	WITH c AS MATERIALIZED (
		SELECT scope_id, external_id FROM {s}.records
		WHERE updated_at < $1 AND pruned_at IS NULL
		ORDER BY updated_at LIMIT $2
		FOR UPDATE SKIP LOCKED)
	UPDATE {s}.records r SET sealed_payload = '', pruned_at = $3
	FROM c WHERE r.scope_id = c.scope_id AND r.external_id = c.external_id`)
	// qLockOrphanScopes locks up to $1 scopes whose connection no longer
	// exists, skipping those another transaction holds (a write to a
	// connection being deleted): a later sweep finds them.
	qLockOrphanScopes = newQuery(`
	SELECT id FROM {s}.record_scopes sc
	WHERE NOT EXISTS (SELECT 1 FROM {s}.connections c
		WHERE c.id = sc.connection_id AND c.environment_id = sc.environment_id)
	ORDER BY id LIMIT $1
	FOR UPDATE SKIP LOCKED`)
	qDeleteOrphanRecords = newQuery(`
	WITH c AS MATERIALIZED (
		SELECT scope_id, external_id FROM {s}.records WHERE scope_id = ANY($1::bigint[]) LIMIT $2)
	DELETE FROM {s}.records r USING c WHERE r.scope_id = c.scope_id AND r.external_id = c.external_id`)
	// qDeleteEmptyScopes drops the scopes of $1, locked, that have no
	// record left.
	qDeleteEmptyScopes = newQuery(`
	DELETE FROM {s}.record_scopes sc WHERE id = ANY($1::bigint[])
	AND NOT EXISTS (SELECT 1 FROM {s}.records r WHERE r.scope_id = sc.id)`)
)

// orphanScopesPage is how many orphan scopes DeleteOrphanRecords locks at
// a time.
const orphanScopesPage = 1000

// scopeArgs are the parameters $1 to $4 of a scope.
func scopeArgs(sc functions.RecordScope) []any {
	return []any{sc.EnvironmentID, sc.ConnectionID, sc.Model, sc.Variant}
}

// SaveRecords upserts recs in one statement (see functions.RecordStore),
// which locks the scope until the transaction ends (the caller's, if any).
// Seq values are reserved for every record given, so a save of unchanged
// records leaves a gap.
func (s *Store) SaveRecords(ctx context.Context, scope functions.RecordScope, recs []functions.RecordWrite, now time.Time, touch int64) (functions.SaveResult, error) {
	var res functions.SaveResult
	order, err := recordcheck.ScopeWrites(scope, recs)
	if err != nil {
		return res, err
	}
	if len(recs) == 0 {
		return res, nil
	}
	ids, payloads, hashes := make(textArray, len(recs)), make(textArray, len(recs)), make(textArray, len(recs))
	for k, i := range order {
		r := &recs[i]
		ids[k], payloads[k], hashes[k] = &r.ID, &r.SealedPayload, &r.Hash
	}
	q := qSaveRecords
	if touch != 0 {
		q = qSaveRecordsTouched
	}
	args := append(scopeArgs(scope), int64(len(recs)), ids, payloads, hashes, now, touch)
	err = s.ext(ctx).QueryRowxContext(ctx, s.text(q), args...).Scan(&res.Added, &res.Updated)
	if err != nil {
		return functions.SaveResult{}, dbErr(ctx, "save records", err, nil)
	}
	return res, nil
}

// UnchangedRecords returns the ids of recs stored with the same hash,
// neither deleted nor pruned (see functions.RecordStore). With touch it
// locks the scope, as SaveRecords does, and marks them touched.
func (s *Store) UnchangedRecords(ctx context.Context, scope functions.RecordScope, recs []functions.RecordWrite, touch int64) ([]string, error) {
	order, err := recordcheck.ScopeWrites(scope, recs)
	if err != nil {
		return nil, err
	}
	out := []string{}
	if len(recs) == 0 {
		return out, nil
	}
	ids, hashes := make(textArray, len(recs)), make(textArray, len(recs))
	for k, i := range order {
		r := &recs[i]
		ids[k], hashes[k] = &r.ID, &r.Hash
	}
	scan := func(ctx context.Context, q *query, args ...any) error {
		rows, err := s.ext(ctx).QueryContext(ctx, s.text(q), args...)
		if err != nil {
			return dbErr(ctx, "unchanged records", err, nil)
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				return dbErr(ctx, "unchanged records", err, nil)
			}
			out = append(out, id)
		}
		return dbErr(ctx, "unchanged records", rows.Err(), nil)
	}
	if touch == 0 {
		err = scan(ctx, qUnchangedRecords, append(scopeArgs(scope), ids, hashes)...)
	} else {
		err = s.withScope(ctx, "unchanged records", scope, 0, func(ctx context.Context, id, _ int64) error {
			return scan(ctx, qTouchUnchangedRecords, id, ids, hashes, touch)
		})
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// withScope runs fn in a transaction (the caller's, if any) once the
// scope's row is locked, and reserves n Seq values when n is above 0: fn
// receives the scope's id and the base of the reserved values. When the
// scope has no row (no record was ever saved in it), fn is not called.
func (s *Store) withScope(ctx context.Context, op string, scope functions.RecordScope, n int64, fn func(ctx context.Context, id, base int64) error) error {
	return s.WithTx(ctx, func(ctx context.Context) error {
		var id, base int64
		var err error
		if n > 0 {
			err = s.ext(ctx).QueryRowxContext(ctx, s.text(qReserveSeqs), append(scopeArgs(scope), n)...).Scan(&id, &base)
		} else {
			err = s.ext(ctx).QueryRowxContext(ctx, s.text(qLockScope), scopeArgs(scope)...).Scan(&id)
		}
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return dbErr(ctx, op+": lock the scope", err, nil)
		}
		return fn(ctx, id, base)
	})
}

// DeleteRecords soft-deletes the stored records of ids that are not
// deleted.
func (s *Store) DeleteRecords(ctx context.Context, scope functions.RecordScope, ids []string, now time.Time) (functions.SaveResult, error) {
	var res functions.SaveResult
	if err := recordcheck.Scope(scope); err != nil {
		return res, err
	}
	ids, err := recordcheck.IDs(ids, functions.MaxRecordsPerBatch)
	if err != nil || len(ids) == 0 {
		return res, err
	}
	err = s.withScope(ctx, "delete records", scope, int64(len(ids)), func(ctx context.Context, id, base int64) error {
		r, err := s.exec(ctx, qDeleteRecords, id, base, now, pq.StringArray(ids))
		if err != nil {
			return dbErr(ctx, "delete records", err, nil)
		}
		n, err := r.RowsAffected()
		res.Deleted = int(n)
		return dbErr(ctx, "delete records", err, nil)
	})
	if err != nil {
		return functions.SaveResult{}, err
	}
	return res, nil
}

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
	return s.queryRecords(ctx, "get records", s.text(qGetRecords), append(scopeArgs(scope), pq.StringArray(ids))...)
}

// queryRecords runs a query of recordColumns.
func (s *Store) queryRecords(ctx context.Context, op, query string, args ...any) ([]*functions.Record, error) {
	rows, err := s.ext(ctx).QueryContext(ctx, query, args...)
	if err != nil {
		return nil, dbErr(ctx, op, err, nil)
	}
	defer rows.Close()
	out := []*functions.Record{}
	for rows.Next() {
		var r recordRow
		if err := rows.Scan(r.scanTargets()...); err != nil {
			return nil, dbErr(ctx, op, err, nil)
		}
		out = append(out, r.record())
	}
	if err := rows.Err(); err != nil {
		return nil, dbErr(ctx, op, err, nil)
	}
	return out, nil
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
	w := where{args: scopeArgs(scope)}
	if q.AfterSeq > 0 {
		w.add("seq > ?", q.AfterSeq)
	}
	if q.ModifiedAfter != nil {
		w.add("updated_at >= ?", *q.ModifiedAfter)
	}
	if ids != nil {
		w.add("external_id = ANY(?::text[])", pq.StringArray(ids))
	}
	var conds []string
	for _, f := range recordFilters {
		if q.Filter&f.bit != 0 {
			conds = append(conds, f.cond)
		}
	}
	if len(conds) > 0 && len(conds) < len(recordFilters) {
		w.conds = append(w.conds, "("+strings.Join(conds, " OR ")+")")
	}
	query := s.text(qListRecords)
	for _, c := range w.conds {
		query += " AND " + c
	}
	query += " ORDER BY seq LIMIT " + w.arg(q.Limit)
	return s.queryRecords(ctx, "list records", query, w.args...)
}

// CountRecords returns how many records of the scope are not deleted. It
// reads them all.
func (s *Store) CountRecords(ctx context.Context, scope functions.RecordScope) (int, error) {
	if err := recordcheck.Scope(scope); err != nil {
		return 0, err
	}
	var n int
	if err := s.get(ctx, qCountRecords, &n, scopeArgs(scope)...); err != nil {
		return 0, dbErr(ctx, "count records", err, nil)
	}
	return n, nil
}

// PruneRecords empties the payload of up to limit records not pruned, by
// ascending Seq, up to and including untilSeq.
func (s *Store) PruneRecords(ctx context.Context, scope functions.RecordScope, untilSeq int64, limit int, now time.Time) (int, int64, error) {
	if err := recordcheck.Scope(scope); err != nil {
		return 0, 0, err
	}
	if err := recordcheck.Limit(limit); err != nil {
		return 0, 0, err
	}
	var n int
	var last int64
	err := s.withScope(ctx, "prune records", scope, 0, func(ctx context.Context, id, _ int64) error {
		err := s.ext(ctx).QueryRowxContext(ctx, s.text(qPruneRecords), id, untilSeq, limit, now).Scan(&n, &last)
		return dbErr(ctx, "prune records", err, nil)
	})
	if err != nil {
		return 0, 0, err
	}
	return n, last, nil
}

// DeleteUntouched soft-deletes up to limit records not deleted and not
// touched at generation since or later, in ascending order of id, and
// returns their ids. It reserves limit Seq values.
func (s *Store) DeleteUntouched(ctx context.Context, scope functions.RecordScope, since int64, limit int, now time.Time) ([]string, error) {
	if err := recordcheck.Scope(scope); err != nil {
		return nil, err
	}
	if err := recordcheck.Limit(limit); err != nil {
		return nil, err
	}
	ids := []string{}
	err := s.withScope(ctx, "delete untouched records", scope, int64(limit), func(ctx context.Context, id, base int64) error {
		err := s.queryRows(ctx, qDeleteUntouched, func(rows *sql.Rows) error {
			var v string
			err := rows.Scan(&v)
			ids = append(ids, v)
			return err
		}, id, base, since, now, limit)
		return dbErr(ctx, "delete untouched records", err, nil)
	})
	if err != nil {
		return nil, err
	}
	return ids, nil
}

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
	var n int64
	err := s.withScope(ctx, "delete all records", scope, 0, func(ctx context.Context, id, _ int64) error {
		r, err := s.exec(ctx, qDeleteAllRecords, id, limit)
		if err != nil {
			return dbErr(ctx, "delete all records", err, nil)
		}
		n, err = r.RowsAffected()
		return dbErr(ctx, "delete all records", err, nil)
	})
	if err != nil {
		return 0, err
	}
	return int(n), nil
}

// PruneStaleRecords empties the payload of up to limit records, of every
// scope, not updated since before and not pruned, the least recently
// updated first. It skips the records that other transactions hold.
func (s *Store) PruneStaleRecords(ctx context.Context, before time.Time, limit int, now time.Time) (int, error) {
	if err := recordcheck.Limit(limit); err != nil {
		return 0, err
	}
	r, err := s.exec(ctx, qPruneStaleRecords, before, limit, now)
	if err != nil {
		return 0, dbErr(ctx, "prune stale records", err, nil)
	}
	n, err := r.RowsAffected()
	if err != nil {
		return 0, dbErr(ctx, "prune stale records", err, nil)
	}
	return int(n), nil
}

// DeleteOrphanRecords hard-deletes up to limit records of scopes whose
// connection (row id, in the scope's environment) no longer exists, and
// drops the scopes it empties. It works in transactions of up to
// orphanScopesPage scopes, each locked (skipping those that a write holds),
// so that no save can add records to a scope it drops.
func (s *Store) DeleteOrphanRecords(ctx context.Context, limit int) (int, error) {
	if err := recordcheck.Limit(limit); err != nil {
		return 0, err
	}
	total := 0
	for total < limit {
		var scopes pq.Int64Array
		dropped := int64(0)
		err := s.WithTx(ctx, func(ctx context.Context) error {
			scopes = nil
			if err := s.sel(ctx, qLockOrphanScopes, &scopes, orphanScopesPage); err != nil {
				return dbErr(ctx, "delete orphan records: find scopes", err, nil)
			}
			if len(scopes) == 0 {
				return nil
			}
			r, err := s.exec(ctx, qDeleteOrphanRecords, scopes, limit-total)
			if err != nil {
				return dbErr(ctx, "delete orphan records", err, nil)
			}
			n, err := r.RowsAffected()
			if err != nil {
				return dbErr(ctx, "delete orphan records", err, nil)
			}
			total += int(n)
			if r, err = s.exec(ctx, qDeleteEmptyScopes, scopes); err != nil {
				return dbErr(ctx, "delete orphan records: drop scopes", err, nil)
			}
			dropped, err = r.RowsAffected()
			return dbErr(ctx, "delete orphan records: drop scopes", err, nil)
		})
		if err != nil {
			return total, err
		}
		if len(scopes) == 0 || dropped == 0 {
			// Nothing left, or the limit is reached within scopes that
			// still hold records.
			return total, nil
		}
	}
	return total, nil
}
