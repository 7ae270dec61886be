package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/embedauth/connect/store"
	"github.com/embedauth/connect/webhooks"
)

// DefaultDeliveriesLimit is the number of deliveries ListDeliveries returns
// when the filter's Limit is 0.
const DefaultDeliveriesLimit = 100

// deliveryColumns are the columns a delivery is read from, in the order
// scanDelivery takes them. The body is the eighth.
const deliveryColumns = `id, environment_id, event_id, type, integration_key, connection_id, url,
	body, status, attempts, last_status_code, last_error, created_at, updated_at, delivered_at,
	next_attempt_at, unverified`

// deliveryColumnsOmitBody is deliveryColumns with an empty body.
const deliveryColumnsOmitBody = `id, environment_id, event_id, type, integration_key, connection_id, url,
	X'' AS body, status, attempts, last_status_code, last_error, created_at, updated_at, delivered_at,
	next_attempt_at, unverified`

// insertDeliveryColumns are the columns CreateDeliveries writes, one
// parameter each.
const insertDeliveryColumns = `id, environment_id, event_id, type, integration_key, connection_id, url,
	body, status, attempts, last_status_code, last_error, created_at, updated_at, delivered_at,
	next_attempt_at, unverified, charge`

// insertDeliveryParams is the number of columns of insertDeliveryColumns.
const insertDeliveryParams = 18

// maxDeliveriesPerStatement keeps the parameters of one INSERT of
// CreateDeliveries well under SQLite's limit of 32766.
const maxDeliveriesPerStatement = 500

// scanDelivery reads a row of deliveryColumns.
func scanDelivery(sc interface{ Scan(...any) error }) (*webhooks.Delivery, error) {
	var (
		d                             webhooks.Delivery
		created, updated, nextAttempt int64
		delivered                     sql.NullInt64
	)
	if err := sc.Scan(&d.ID, &d.EnvironmentID, &d.EventID, &d.Type, &d.IntegrationKey, &d.ConnectionID, &d.URL,
		&d.Body, &d.Status, &d.Attempts, &d.LastStatusCode, &d.LastError, &created, &updated, &delivered,
		&nextAttempt, &d.Unverified); err != nil {
		return nil, err
	}
	if d.Body == nil {
		d.Body = []byte{}
	}
	d.CreatedAt, d.UpdatedAt, d.NextAttemptAt = fromMicros(created), fromMicros(updated), fromMicros(nextAttempt)
	d.DeliveredAt = timePtr(delivered)
	return &d, nil
}

// scanDeliveries reads every row of rows and closes it.
func scanDeliveries(rows *sql.Rows) ([]*webhooks.Delivery, error) {
	defer rows.Close()
	out := []*webhooks.Delivery{}
	for rows.Next() {
		d, err := scanDelivery(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

// CreateDeliveries stores the deliveries, all or none. An ID already stored,
// or given twice, is store.ErrConflict; a missing environment is
// store.ErrNotFound, reported first. Neither aborts an enclosing
// transaction. The charges of forward deliveries are added to their
// integration's usage by a trigger, in the same statement.
func (s *Store) CreateDeliveries(ctx context.Context, ds ...*webhooks.Delivery) error {
	for _, d := range ds {
		if err := checkText(d); err != nil {
			return err
		}
	}
	switch {
	case len(ds) == 0:
		return nil
	case len(ds) <= maxDeliveriesPerStatement:
		return s.createDeliveries(ctx, ds)
	}
	// More rows than one statement takes: insert them in several, in a
	// transaction (the caller's, if any), under a savepoint so that a
	// refused batch undoes the batches before it.
	return s.WithTx(ctx, func(ctx context.Context) error {
		q := s.writer(ctx)
		if _, err := q.ExecContext(ctx, `SAVEPOINT connect_create_deliveries`); err != nil {
			return dbErr(ctx, "create deliveries: savepoint", err)
		}
		for chunk := range slices.Chunk(ds, maxDeliveriesPerStatement) {
			if err := s.createDeliveries(ctx, chunk); err != nil {
				if _, rbErr := q.ExecContext(ctx, `ROLLBACK TO connect_create_deliveries`); rbErr != nil {
					return errors.Join(err, dbErr(ctx, "create deliveries: rollback to savepoint", rbErr))
				}
				_, _ = q.ExecContext(ctx, `RELEASE connect_create_deliveries`)
				return err
			}
		}
		_, err := q.ExecContext(ctx, `RELEASE connect_create_deliveries`)
		return dbErr(ctx, "create deliveries: release savepoint", err)
	})
}

// createDeliveries inserts ds, at most maxDeliveriesPerStatement, in one
// statement: all of them or, when one is refused, none.
func (s *Store) createDeliveries(ctx context.Context, ds []*webhooks.Delivery) error {
	var b strings.Builder
	b.WriteString(`INSERT INTO webhook_deliveries (` + insertDeliveryColumns + `) VALUES `)
	row := "(?" + strings.Repeat(", ?", insertDeliveryParams-1) + ")"
	args := make([]any, 0, len(ds)*insertDeliveryParams)
	for i, d := range ds {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(row)
		body := d.Body
		if body == nil {
			body = []byte{} // the column is NOT NULL; nil would be NULL
		}
		args = append(args, d.ID, d.EnvironmentID, d.EventID, d.Type, d.IntegrationKey, d.ConnectionID, d.URL,
			body, d.Status, d.Attempts, d.LastStatusCode, d.LastError, micros(d.CreatedAt), micros(d.UpdatedAt),
			nullMicros(d.DeliveredAt), micros(d.NextAttemptAt), d.Unverified, d.ForwardCharge())
	}
	q := s.writer(ctx)
	_, err := q.ExecContext(ctx, b.String(), args...)
	if err == nil {
		return nil
	}
	if !isUnique(err) && !isForeignKey(err) {
		return dbErr(ctx, "create webhook deliveries", err)
	}
	// Refused: report a missing environment before a duplicate.
	seen := map[int64]bool{}
	for _, d := range ds {
		if seen[d.EnvironmentID] {
			continue
		}
		seen[d.EnvironmentID] = true
		var one int
		err := q.QueryRowContext(ctx, `SELECT 1 FROM environments WHERE id = ?`, d.EnvironmentID).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("sqlite: create webhook deliveries: environment %d: %w", d.EnvironmentID, store.ErrNotFound)
		}
		if err != nil {
			return dbErr(ctx, "create webhook deliveries", err)
		}
	}
	return fmt.Errorf("sqlite: create webhook deliveries: an id is already stored or given twice: %w", store.ErrConflict)
}

// GetDelivery returns the delivery with the id, or store.ErrNotFound.
func (s *Store) GetDelivery(ctx context.Context, id string) (*webhooks.Delivery, error) {
	if err := checkText(id); err != nil {
		return nil, err
	}
	d, err := scanDelivery(s.reader(ctx).QueryRowContext(ctx,
		`SELECT `+deliveryColumns+` FROM webhook_deliveries WHERE id = ?`, id))
	if err != nil {
		return nil, dbErr(ctx, fmt.Sprintf("get webhook delivery %q", id), err)
	}
	return d, nil
}

// UpdateDelivery replaces Status, Attempts, LastStatusCode, LastError,
// UpdatedAt, DeliveredAt and NextAttemptAt of the delivery with d.ID, and
// ends its claim, or returns store.ErrNotFound.
func (s *Store) UpdateDelivery(ctx context.Context, d *webhooks.Delivery) error {
	if err := checkText(d); err != nil {
		return err
	}
	res, err := s.writer(ctx).ExecContext(ctx, `
	UPDATE webhook_deliveries
	SET status = ?, attempts = ?, last_status_code = ?, last_error = ?, updated_at = ?,
		delivered_at = ?, next_attempt_at = ?, claimed_until = NULL
	WHERE id = ?`,
		d.Status, d.Attempts, d.LastStatusCode, d.LastError, micros(d.UpdatedAt),
		nullMicros(d.DeliveredAt), micros(d.NextAttemptAt), d.ID)
	if err != nil {
		return dbErr(ctx, "update webhook delivery", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return dbErr(ctx, "update webhook delivery", err)
	}
	if n == 0 {
		return fmt.Errorf("sqlite: webhook delivery %q: %w", d.ID, store.ErrNotFound)
	}
	return nil
}

// ClaimDeliveries claims up to limit pending deliveries due at now,
// earliest due first, by moving their claim to until, counts the attempt
// it starts (Attempts+1), and returns them with NextAttemptAt until. It is
// one statement on the one writer connection, so that of concurrent
// claims each delivery goes to one. As on Postgres, the stored
// next_attempt_at stays the due time the claim found (GetDelivery shows
// it); claimed_until holds the lease, and an update ends it. It is refused
// inside a transaction: a claim must be visible at once, and durable
// before the attempt it counts starts.
func (s *Store) ClaimDeliveries(ctx context.Context, now time.Time, limit int, until time.Time) ([]*webhooks.Delivery, error) {
	if limit <= 0 {
		return nil, nil
	}
	if _, ok := s.liveTx(ctx); ok {
		return nil, errors.New("sqlite: ClaimDeliveries inside a transaction")
	}
	// The due index is named so that the plan never depends on
	// statistics: read in order, it stops after limit rows, however long
	// the backlog. RETURNING gives the rows in no particular order;
	// next_attempt_at, which the claim leaves, gives it back.
	rows, err := s.w.QueryContext(ctx, `
	UPDATE webhook_deliveries SET claimed_until = ?3, attempts = attempts + 1
	WHERE rowid IN (
		SELECT rowid FROM webhook_deliveries INDEXED BY webhook_deliveries_due_idx
		WHERE status = 'pending' AND next_attempt_at <= ?1 AND (claimed_until IS NULL OR claimed_until <= ?1)
		ORDER BY next_attempt_at, id
		LIMIT ?2)
	RETURNING `+deliveryColumns, micros(now), limit, micros(until))
	if err != nil {
		return nil, dbErr(ctx, "claim webhook deliveries", err)
	}
	ds, err := scanDeliveries(rows)
	if err != nil {
		return nil, dbErr(ctx, "claim webhook deliveries", err)
	}
	slices.SortFunc(ds, func(a, b *webhooks.Delivery) int {
		return cmp.Or(a.NextAttemptAt.Compare(b.NextAttemptAt), strings.Compare(a.ID, b.ID))
	})
	lease := fromMicros(micros(until))
	for _, d := range ds {
		d.NextAttemptAt = lease
	}
	return ds, nil
}

// deliveryRequeueSet is the SET clause that makes a delivery pending again,
// due at once: its parameters are the time of the requeue and the zero
// time.
const deliveryRequeueSet = `SET status = 'pending', attempts = 0, last_status_code = 0, last_error = '',
	delivered_at = NULL, updated_at = ?, next_attempt_at = ?, claimed_until = NULL`

// RequeueDelivery makes a delivery that is not pending pending again and
// returns it as it was before. It reads and updates it in one transaction,
// which holds the writer: of concurrent calls, one wins.
func (s *Store) RequeueDelivery(ctx context.Context, id string, at time.Time) (*webhooks.Delivery, error) {
	if err := checkText(id); err != nil {
		return nil, err
	}
	var before *webhooks.Delivery
	err := s.WithTx(ctx, func(ctx context.Context) error {
		var err error
		before, err = s.GetDelivery(ctx, id)
		if err != nil {
			return err
		}
		if before.Status == webhooks.StatusPending {
			return fmt.Errorf("sqlite: webhook delivery %q is pending: %w", id, store.ErrConflict)
		}
		_, err = s.writer(ctx).ExecContext(ctx, `UPDATE webhook_deliveries `+deliveryRequeueSet+` WHERE id = ?`,
			micros(at), micros(time.Time{}), id)
		return dbErr(ctx, "requeue webhook delivery", err)
	})
	if err != nil {
		return nil, err
	}
	return before, nil
}

// deliveryConds returns the conditions on the environment, type,
// integration and connection of f, and their arguments.
func deliveryConds(f webhooks.DeliveryFilter) (conds []string, args []any) {
	if f.EnvironmentID != 0 {
		conds, args = append(conds, "environment_id = ?"), append(args, f.EnvironmentID)
	}
	if f.Type != "" {
		conds, args = append(conds, "type = ?"), append(args, f.Type)
	}
	if f.IntegrationKey != "" {
		conds, args = append(conds, "integration_key = ?"), append(args, f.IntegrationKey)
	}
	if f.ConnectionID != "" {
		conds, args = append(conds, "connection_id = ?"), append(args, f.ConnectionID)
	}
	return conds, args
}

// deliveryWhere joins conds into a WHERE clause, or returns "" for none.
func deliveryWhere(conds []string) string {
	if len(conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(conds, " AND ")
}

// ListDeliveries returns the deliveries matching f, newest first (by
// CreatedAt, then by ID, both descending), after f.After when set. An
// EnvironmentID of 0 matches every environment; a Limit of 0 means
// [DefaultDeliveriesLimit].
func (s *Store) ListDeliveries(ctx context.Context, f webhooks.DeliveryFilter) ([]*webhooks.Delivery, error) {
	if err := checkText(f); err != nil {
		return nil, err
	}
	var conds []string
	var args []any
	switch f.Status {
	case "":
	case webhooks.StatusPending, webhooks.StatusDelivered, webhooks.StatusFailed:
		// A literal, so that the planner may use the partial index of
		// failed deliveries.
		conds = append(conds, "status = '"+f.Status+"'")
	default:
		conds, args = append(conds, "status = ?"), append(args, f.Status)
	}
	c, a := deliveryConds(f)
	conds, args = append(conds, c...), append(args, a...)
	if f.After != nil {
		// A row value comparison, which the indexes ordered by
		// (created_at, id) serve as a range.
		conds, args = append(conds, "(created_at, id) < (?, ?)"), append(args, micros(f.After.CreatedAt), f.After.ID)
	}
	limit := f.Limit
	if limit <= 0 {
		limit = DefaultDeliveriesLimit
	}
	cols := deliveryColumns
	if f.OmitBody {
		cols = deliveryColumnsOmitBody
	}
	rows, err := s.reader(ctx).QueryContext(ctx, `SELECT `+cols+` FROM webhook_deliveries`+deliveryWhere(conds)+
		` ORDER BY created_at DESC, id DESC LIMIT ?`, append(args, limit)...)
	if err != nil {
		return nil, dbErr(ctx, "list webhook deliveries", err)
	}
	ds, err := scanDeliveries(rows)
	if err != nil {
		return nil, dbErr(ctx, "list webhook deliveries", err)
	}
	return ds, nil
}

// RequeueFailed makes up to limit failed deliveries matching f pending
// again, oldest first, in one statement, and returns how many.
func (s *Store) RequeueFailed(ctx context.Context, f webhooks.DeliveryFilter, limit int, at time.Time) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	if err := checkText(f); err != nil {
		return 0, err
	}
	conds, args := deliveryConds(f)
	conds = append([]string{"status = 'failed'"}, conds...)
	args = append([]any{micros(at), micros(time.Time{})}, args...)
	res, err := s.writer(ctx).ExecContext(ctx, `UPDATE webhook_deliveries `+deliveryRequeueSet+`
	WHERE rowid IN (SELECT rowid FROM webhook_deliveries`+deliveryWhere(conds)+` ORDER BY created_at, id LIMIT ?)`,
		append(args, limit)...)
	if err != nil {
		return 0, dbErr(ctx, "requeue failed webhook deliveries", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, dbErr(ctx, "requeue failed webhook deliveries", err)
	}
	return int(n), nil
}

// DeleteDeliveriesBefore deletes up to limit delivered or failed
// deliveries whose UpdatedAt is before before, the oldest first, in one
// statement, and returns how many. A trigger takes the charges of forward
// deliveries off their integration's usage.
func (s *Store) DeleteDeliveriesBefore(ctx context.Context, before time.Time, limit int) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	res, err := s.writer(ctx).ExecContext(ctx, `
	DELETE FROM webhook_deliveries WHERE rowid IN (
		SELECT rowid FROM webhook_deliveries
		WHERE status <> 'pending' AND updated_at < ?
		ORDER BY updated_at
		LIMIT ?)`, micros(before), limit)
	if err != nil {
		return 0, dbErr(ctx, "delete webhook deliveries", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, dbErr(ctx, "delete webhook deliveries", err)
	}
	return int(n), nil
}

// trimForwardsBatch is the number of candidates one statement of TrimForwards
// reads.
const trimForwardsBatch = 100

// TrimForwards deletes the oldest delivered or failed forward deliveries
// of the integration while its forward deliveries, each charged
// webhooks.ForwardCharge of its row, total more than max bytes, and
// returns the total left. It reads the total from webhook_forward_usage,
// which triggers keep, in a transaction (the caller's, if any): concurrent
// calls take turns, as every transaction of the Store does.
func (s *Store) TrimForwards(ctx context.Context, environmentID int64, integrationKey string, max int64) (int64, error) {
	if err := checkText(integrationKey); err != nil {
		return 0, err
	}
	var left int64
	err := s.WithTx(ctx, func(ctx context.Context) error {
		q := s.writer(ctx)
		err := q.QueryRowContext(ctx, `SELECT bytes FROM webhook_forward_usage
			WHERE environment_id = ? AND integration_key = ?`, environmentID, integrationKey).Scan(&left)
		if errors.Is(err, sql.ErrNoRows) {
			left = 0
			return nil
		}
		if err != nil {
			return dbErr(ctx, "read forward usage", err)
		}
		for left > max {
			// Of the oldest finished forwards, those needed to bring the
			// total down to max: each one whose predecessors' charges do
			// not reach the excess yet.
			rows, err := q.QueryContext(ctx, `
			DELETE FROM webhook_deliveries WHERE rowid IN (
				SELECT rid FROM (
					SELECT rid, charge, sum(charge) OVER (ORDER BY created_at, id) AS run FROM (
						SELECT rowid AS rid, charge, created_at, id FROM webhook_deliveries
						WHERE environment_id = ? AND integration_key = ? AND type = 'forward' AND status <> 'pending'
						ORDER BY created_at, id
						LIMIT ?))
				WHERE run - charge < ?)
			RETURNING charge`, environmentID, integrationKey, trimForwardsBatch, left-max)
			if err != nil {
				return dbErr(ctx, "trim forward deliveries", err)
			}
			var deleted int
			var freed int64
			for rows.Next() {
				var n int64
				if err := rows.Scan(&n); err != nil {
					rows.Close()
					return dbErr(ctx, "trim forward deliveries", err)
				}
				deleted++
				freed += n
			}
			if err := rows.Err(); err != nil {
				rows.Close()
				return dbErr(ctx, "trim forward deliveries", err)
			}
			rows.Close()
			if deleted == 0 {
				break
			}
			left -= freed
		}
		return nil
	})
	return left, err
}

var (
	_ webhooks.Store    = (*Store)(nil)
	_ webhooks.Requeuer = (*Store)(nil)
	_ webhooks.Pruner   = (*Store)(nil)
)
