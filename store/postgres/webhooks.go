package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/embedauth/connect/store"
	"github.com/embedauth/connect/webhooks"
)

// DefaultDeliveriesLimit is the number of deliveries ListDeliveries returns
// when the filter's Limit is 0.
const DefaultDeliveriesLimit = 100

const deliveryColumns = `id, environment_id, event_id, type, integration_key, connection_id, url,
	body, status, attempts, last_status_code, last_error, created_at, updated_at, delivered_at,
	next_attempt_at, unverified`

// deliveryColumnCount is the number of columns in deliveryColumns: the
// number of parameters per delivery of CreateDeliveries.
const deliveryColumnCount = 17

// forwardCharge is the SQL of webhooks.ForwardCharge of a forward
// delivery's row: what it counts in webhook_forward_usage. Migration 017
// spells it out too.
var forwardCharge = fmt.Sprintf("(octet_length(body)::bigint + octet_length(body) / %d"+
	" + %d * (octet_length(url) + octet_length(integration_key) + octet_length(connection_id))::bigint + %d)",
	webhooks.ForwardBodyDivisor, webhooks.ForwardTextFactor, webhooks.ForwardRowOverhead)

// maxDeliveriesPerStatement keeps CreateDeliveries under Postgres's limit of
// 65535 parameters per statement.
const maxDeliveriesPerStatement = 1000

type deliveryRow struct {
	ID             string     `db:"id"`
	EnvironmentID  int64      `db:"environment_id"`
	EventID        string     `db:"event_id"`
	Type           string     `db:"type"`
	IntegrationKey string     `db:"integration_key"`
	ConnectionID   string     `db:"connection_id"`
	URL            string     `db:"url"`
	Body           []byte     `db:"body"`
	Status         string     `db:"status"`
	Attempts       int        `db:"attempts"`
	LastStatusCode int        `db:"last_status_code"`
	LastError      string     `db:"last_error"`
	CreatedAt      time.Time  `db:"created_at"`
	UpdatedAt      time.Time  `db:"updated_at"`
	DeliveredAt    *time.Time `db:"delivered_at"`
	NextAttemptAt  time.Time  `db:"next_attempt_at"`
	Unverified     bool       `db:"unverified"`
}

func (r *deliveryRow) delivery() *webhooks.Delivery {
	body := r.Body
	if body == nil {
		body = []byte{}
	}
	return &webhooks.Delivery{
		ID:             r.ID,
		EnvironmentID:  r.EnvironmentID,
		EventID:        r.EventID,
		Type:           r.Type,
		IntegrationKey: r.IntegrationKey,
		ConnectionID:   r.ConnectionID,
		URL:            r.URL,
		Body:           body,
		Status:         r.Status,
		Attempts:       r.Attempts,
		LastStatusCode: r.LastStatusCode,
		LastError:      r.LastError,
		CreatedAt:      r.CreatedAt.UTC(),
		UpdatedAt:      r.UpdatedAt.UTC(),
		DeliveredAt:    utcPtr(r.DeliveredAt),
		NextAttemptAt:  r.NextAttemptAt.UTC(),
		Unverified:     r.Unverified,
	}
}

var (
	// qCreateDeliveriesHead and qCreateDeliveriesTail surround the VALUES
	// rows of one CreateDeliveries statement. The statement inserts every
	// row or, when one of them has a missing environment or an ID already
	// stored or given twice, none, without raising an error: a refusal does
	// not abort an enclosing transaction.
	qCreateDeliveriesHead = newQuery(`
	WITH input (` + deliveryColumns + `) AS (VALUES `)
	//
	// The charges of forward deliveries (forwardCharge) are added to their
	// integration's row of webhook_forward_usage (migration 016), in the
	// same statement.
	qCreateDeliveriesTail = newQuery(`),
	refused AS (
		SELECT 1 FROM input i
		WHERE NOT EXISTS (SELECT 1 FROM {s}.environments e WHERE e.id = i.environment_id)
			OR EXISTS (SELECT 1 FROM {s}.webhook_deliveries d WHERE d.id = i.id)
		UNION ALL
		SELECT 1 FROM input GROUP BY id HAVING count(*) > 1
	),
	usage AS (
		INSERT INTO {s}.webhook_forward_usage AS u (environment_id, integration_key, bytes)
		SELECT environment_id, integration_key, sum(` + forwardCharge + `) FROM input
		WHERE type = 'forward' AND NOT EXISTS (SELECT 1 FROM refused)
		GROUP BY environment_id, integration_key
		ON CONFLICT (environment_id, integration_key) DO UPDATE SET bytes = u.bytes + EXCLUDED.bytes
	)
	INSERT INTO {s}.webhook_deliveries (` + deliveryColumns + `)
	SELECT ` + deliveryColumns + ` FROM input WHERE NOT EXISTS (SELECT 1 FROM refused)`)
	qGetDelivery = newPreparedQuery(`SELECT ` + deliveryColumns + ` FROM {s}.webhook_deliveries WHERE id = $1`)
	// qListDeliveries is completed with the conditions, order and limit of
	// each call.
	qListDeliveries = newQuery(`SELECT ` + deliveryColumns + ` FROM {s}.webhook_deliveries`)
	// qListDeliveriesOmitBody is qListDeliveries without the bodies.
	qListDeliveriesOmitBody = newQuery(`SELECT id, environment_id, event_id, type, integration_key, connection_id, url,
	NULL::bytea AS body, status, attempts, last_status_code, last_error, created_at, updated_at, delivered_at,
	next_attempt_at, unverified FROM {s}.webhook_deliveries`)
	// qWebhookDeliveriesTable is the outbox table's qualified name, for
	// statements built per call.
	qWebhookDeliveriesTable = newQuery(`{s}.webhook_deliveries`)
	// qRecordAttempts updates deliveries and appends their log entries in
	// one statement, committed without waiting for the WAL flush
	// (synchronous_commit off for its own implicit transaction only). Each
	// array holds one element per attempt; an attempt whose delivery is
	// gone gets no log entry, nor does one whose log id is empty (an
	// attempt not logged). It returns the ids of the updated deliveries.
	qRecordAttempts = newPreparedQuery(`
	WITH cfg AS (SELECT set_config('synchronous_commit', 'off', true) AS v),
	a AS (
		SELECT * FROM unnest($1::text[], $2::text[], $3::integer[], $4::integer[], $5::text[],
			$6::timestamptz[], $7::timestamptz[],
			$8::text[], $9::bigint[], $10::text[], $11::text[], $12::text[], $13::text[], $14::text[],
			$15::text[], $16::text[], $17::timestamptz[], $18::timestamptz[])
		AS a(id, status, attempts, last_status_code, last_error, updated_at, delivered_at,
			log_id, environment_id, type, operation, log_status, integration_key, connection_id,
			message, meta, created_at, next_attempt_at)),
	u AS (
		UPDATE {s}.webhook_deliveries d
		SET status = a.status, attempts = a.attempts, last_status_code = a.last_status_code,
			last_error = a.last_error, updated_at = a.updated_at, delivered_at = a.delivered_at,
			next_attempt_at = a.next_attempt_at, claimed_until = '-infinity'
		FROM a, cfg
		WHERE d.id = a.id
		RETURNING d.id),
	l AS (
		INSERT INTO {s}.operations_log (id, environment_id, type, operation, status,
			integration_key, connection_id, message, meta, created_at)
		SELECT a.log_id, a.environment_id, a.type, a.operation, a.log_status, a.integration_key,
			a.connection_id, a.message, a.meta::jsonb, a.created_at
		FROM a WHERE a.id IN (SELECT id FROM u) AND a.log_id <> ''
		ON CONFLICT DO NOTHING)
	SELECT id FROM u`)
	// qRequeueDelivery returns the row as it was: the outer SELECT reads
	// the snapshot from before the UPDATE, and the row lock of the UPDATE
	// makes a concurrent requeue wait and then see a pending row.
	qRequeueDelivery = newQuery(`
	WITH old AS (
		SELECT id, status FROM {s}.webhook_deliveries WHERE id = $1 FOR UPDATE
	), upd AS (
		UPDATE {s}.webhook_deliveries d
		SET status = 'pending', attempts = 0, last_status_code = 0, last_error = '', delivered_at = NULL,
			updated_at = $2, next_attempt_at = '0001-01-01 00:00:00+00', claimed_until = '-infinity'
		FROM old WHERE d.id = old.id AND old.status <> 'pending'
		RETURNING d.id
	)
	SELECT old.status, (SELECT count(*) FROM upd) FROM old`)
	qUpdateDelivery = newQuery(`
	UPDATE {s}.webhook_deliveries
	SET status = $2, attempts = $3, last_status_code = $4, last_error = $5, updated_at = $6,
		delivered_at = $7, next_attempt_at = $8, claimed_until = '-infinity'
	WHERE id = $1`)
	// qClaimDeliveries claims the pending deliveries due at $1, at most
	// $2, earliest due first, skipping rows another transaction has
	// locked (another process claiming them), moves their claim to $3 and
	// counts the attempt it starts (claim_webhook_attempts, migration 009,
	// which migration 017 makes return unverified too; migration 007
	// explains why it is a function). The delivery's
	// NextAttemptAt becomes $3, the lease's end. Unlike qRecordAttempts it
	// waits for the WAL flush (one per claimed batch): the count of an
	// attempt is durable before its POST leaves, so that not even a
	// database crash undercounts.
	qClaimDeliveries = newPreparedQuery(`
	SELECT c.id, c.environment_id, c.event_id, c.type, c.integration_key, c.connection_id, c.url,
		c.body, c.status, c.attempts, c.last_status_code, c.last_error, c.created_at, c.updated_at,
		c.delivered_at, $3::timestamptz AS next_attempt_at, c.unverified
	FROM {s}.claim_webhook_attempts($1, $2, $3) c`)
)

// deliveryValueTypes are the SQL types of the columns of deliveryColumns, in
// order, for the casts of the VALUES rows.
var deliveryValueTypes = [deliveryColumnCount]string{
	"text", "bigint", "text", "text", "text", "text", "text",
	"bytea", "text", "integer", "integer", "text", "timestamptz", "timestamptz", "timestamptz",
	"timestamptz", "boolean",
}

// CreateDeliveries stores the deliveries, all or none. An ID already stored,
// or given twice, is store.ErrConflict; a missing environment is
// store.ErrNotFound. Neither aborts an enclosing transaction.
func (s *Store) CreateDeliveries(ctx context.Context, ds ...*webhooks.Delivery) error {
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
		st, _ := liveTx(ctx, s.raw)
		if _, err := st.tx.ExecContext(ctx, `SAVEPOINT connect_create_deliveries`); err != nil {
			return dbErr(ctx, "create deliveries: savepoint", err, nil)
		}
		for chunk := range slices.Chunk(ds, maxDeliveriesPerStatement) {
			if err := s.createDeliveries(ctx, chunk); err != nil {
				if _, rbErr := st.tx.ExecContext(ctx, `ROLLBACK TO SAVEPOINT connect_create_deliveries`); rbErr != nil {
					return errors.Join(err, dbErr(ctx, "create deliveries: rollback to savepoint", rbErr, nil))
				}
				return err
			}
		}
		_, err := st.tx.ExecContext(ctx, `RELEASE SAVEPOINT connect_create_deliveries`)
		return dbErr(ctx, "create deliveries: release savepoint", err, nil)
	})
}

// createDeliveries inserts ds, at most maxDeliveriesPerStatement, in one
// statement.
func (s *Store) createDeliveries(ctx context.Context, ds []*webhooks.Delivery) error {
	var b strings.Builder
	b.WriteString(s.text(qCreateDeliveriesHead))
	args := make([]any, 0, len(ds)*deliveryColumnCount)
	for i, d := range ds {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteByte('(')
		for j, typ := range deliveryValueTypes {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "$%d::%s", len(args)+j+1, typ)
		}
		b.WriteByte(')')
		body := d.Body
		if body == nil {
			body = []byte{} // the column is NOT NULL; nil would be NULL
		}
		args = append(args, d.ID, d.EnvironmentID, d.EventID, d.Type, d.IntegrationKey, d.ConnectionID,
			d.URL, body, d.Status, d.Attempts, d.LastStatusCode, d.LastError, d.CreatedAt, d.UpdatedAt,
			utcPtr(d.DeliveredAt), d.NextAttemptAt.UTC(), d.Unverified)
	}
	b.WriteString(s.text(qCreateDeliveriesTail))
	res, err := s.ext(ctx).ExecContext(ctx, b.String(), args...)
	if err != nil {
		return dbErr(ctx, "create deliveries", err, nil)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return dbErr(ctx, "create deliveries", err, nil)
	}
	if int(n) == len(ds) {
		return nil
	}
	// Refused: report a missing environment before a duplicate.
	seen := map[int64]bool{}
	for _, d := range ds {
		if seen[d.EnvironmentID] {
			continue
		}
		seen[d.EnvironmentID] = true
		if _, err := s.GetEnvironment(ctx, d.EnvironmentID); err != nil {
			return err
		}
	}
	return conflict("webhook delivery: an id is already stored or given twice")
}

// GetDelivery returns the delivery with the id, or store.ErrNotFound.
func (s *Store) GetDelivery(ctx context.Context, id string) (*webhooks.Delivery, error) {
	var r deliveryRow
	err := s.get(ctx, qGetDelivery, &r, id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("webhook delivery %q", id)
	}
	if err != nil {
		return nil, dbErr(ctx, "get webhook delivery", err, nil)
	}
	return r.delivery(), nil
}

// RequeueDelivery makes a delivery that is not pending pending again and
// returns it as it was before; of concurrent calls, one wins.
func (s *Store) RequeueDelivery(ctx context.Context, id string, at time.Time) (*webhooks.Delivery, error) {
	var out *webhooks.Delivery
	err := s.WithTx(ctx, func(ctx context.Context) error {
		before, err := s.GetDelivery(ctx, id)
		if err != nil {
			return err
		}
		var status string
		var n int
		if err := s.ext(ctx).QueryRowxContext(ctx, s.text(qRequeueDelivery), id, at.UTC()).Scan(&status, &n); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return notFound("webhook delivery %q", id)
			}
			return dbErr(ctx, "requeue webhook delivery", err, nil)
		}
		if n == 0 {
			return fmt.Errorf("webhook delivery %q is pending: %w", id, store.ErrConflict)
		}
		before.Status = status
		out = before
		return nil
	})
	return out, err
}

// UpdateDelivery replaces Status, Attempts, LastStatusCode, LastError,
// UpdatedAt, DeliveredAt and NextAttemptAt of the delivery with d.ID, or
// returns store.ErrNotFound.
func (s *Store) UpdateDelivery(ctx context.Context, d *webhooks.Delivery) error {
	res, err := s.exec(ctx, qUpdateDelivery, d.ID, d.Status, d.Attempts, d.LastStatusCode, d.LastError,
		d.UpdatedAt, utcPtr(d.DeliveredAt), d.NextAttemptAt.UTC())
	if err != nil {
		return dbErr(ctx, "update webhook delivery", err, nil)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return dbErr(ctx, "update webhook delivery", err, nil)
	}
	if n == 0 {
		return notFound("webhook delivery %q", d.ID)
	}
	return nil
}

// ClaimDeliveries claims up to limit pending deliveries due at now,
// earliest due first, by moving their NextAttemptAt to until, counts the
// attempt it starts (Attempts+1), and returns them. Rows that another transaction holds locked (another process
// claiming them at the same moment) are skipped, not waited for. It is
// refused inside a transaction: a claim must be visible to other processes
// at once.
func (s *Store) ClaimDeliveries(ctx context.Context, now time.Time, limit int, until time.Time) ([]*webhooks.Delivery, error) {
	if limit <= 0 {
		return nil, nil
	}
	if _, ok := liveTx(ctx, s.raw); ok {
		return nil, errors.New("postgres: ClaimDeliveries inside a transaction")
	}
	var rows []deliveryRow
	if err := s.sel(ctx, qClaimDeliveries, &rows, now.UTC(), limit, until.UTC()); err != nil {
		return nil, dbErr(ctx, "claim webhook deliveries", err, nil)
	}
	out := make([]*webhooks.Delivery, len(rows))
	for i := range rows {
		out[i] = rows[i].delivery()
	}
	return out, nil
}

// RecordAttempts stores the outcomes of delivery attempts and their log
// entries. Outside a transaction it is one statement per batch of distinct
// deliveries, whose commit does not wait for the WAL flush: a database
// crash may lose it, and then the deliveries are claimed again when their
// lease ends (webhooks are delivered at least once). Inside a transaction
// it is UpdateDelivery and AppendLog per attempt, durable with that
// transaction. An attempt whose delivery is gone is skipped; one that
// cannot be stored (see checkAttempt) is refused alone, with
// store.ErrInvalid, and the others are stored. It implements
// webhooks.AttemptRecorder.
func (s *Store) RecordAttempts(ctx context.Context, as []webhooks.Attempt) error {
	// An attempt holding what Postgres cannot store is refused alone,
	// before a statement that would fail for the whole batch (or abort
	// the caller's transaction).
	var refused []error
	storable := make([]webhooks.Attempt, 0, len(as))
	for i, a := range as {
		if err := checkAttempt(a); err != nil {
			refused = append(refused, fmt.Errorf("postgres: attempt %d of the batch: %w", i, err))
			continue
		}
		storable = append(storable, a)
	}
	return errors.Join(s.recordStorable(ctx, storable), errors.Join(refused...))
}

// checkAttempt refuses an attempt without its delivery or whose text
// Postgres cannot store (not UTF-8, or a NUL byte) with store.ErrInvalid.
func checkAttempt(a webhooks.Attempt) error {
	d, e := a.Delivery, a.Entry
	if d == nil {
		return fmt.Errorf("an attempt without its delivery: %w", store.ErrInvalid)
	}
	texts := []string{d.ID, d.Status, d.LastError}
	if e != nil {
		texts = append(texts, e.ID, e.Type, e.Operation, e.Status, e.IntegrationKey, e.ConnectionID, e.Message)
		if _, err := jsonArg("meta", e.Meta); err != nil {
			return err
		}
	}
	for _, t := range texts {
		if !utf8.ValidString(t) || strings.IndexByte(t, 0) >= 0 {
			return fmt.Errorf("text Postgres cannot store (not UTF-8, or a NUL byte): %w", store.ErrInvalid)
		}
	}
	return nil
}

func (s *Store) recordStorable(ctx context.Context, as []webhooks.Attempt) error {
	if len(as) == 0 {
		return nil
	}
	if _, ok := liveTx(ctx, s.raw); ok {
		for _, a := range as {
			err := s.UpdateDelivery(ctx, a.Delivery)
			if errors.Is(err, store.ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			if a.Entry == nil {
				continue
			}
			if err := s.AppendLog(ctx, a.Entry); err != nil {
				return err
			}
		}
		return nil
	}
	// One statement updates a delivery at most once: attempts of the same
	// delivery (which one batch should not hold) go to later statements,
	// in order.
	for len(as) > 0 {
		seen := make(map[string]bool, len(as))
		var now, later []webhooks.Attempt
		for _, a := range as {
			if seen[a.Delivery.ID] {
				later = append(later, a)
				continue
			}
			seen[a.Delivery.ID] = true
			now = append(now, a)
		}
		if err := s.recordAttempts(ctx, now); err != nil {
			return err
		}
		as = later
	}
	return nil
}

func (s *Store) recordAttempts(ctx context.Context, as []webhooks.Attempt) error {
	n := len(as)
	var (
		ids, statuses, lastErrors                    = make([]string, n), make([]string, n), make([]string, n)
		attempts, codes                              = make([]int64, n), make([]int64, n)
		updated, created                             = make([]string, n), make([]string, n)
		delivered, metas                             = make([]sql.NullString, n), make([]sql.NullString, n)
		next                                         = make([]string, n)
		logIDs, types, ops, logStatuses, keys, conns = make([]string, n), make([]string, n), make([]string, n),
			make([]string, n), make([]string, n), make([]string, n)
		envs     = make([]int64, n)
		messages = make([]string, n)
	)
	for i, a := range as {
		d, e := a.Delivery, a.Entry
		ids[i], statuses[i], attempts[i], codes[i], lastErrors[i] = d.ID, d.Status, int64(d.Attempts),
			int64(d.LastStatusCode), d.LastError
		updated[i] = d.UpdatedAt.UTC().Format(time.RFC3339Nano)
		next[i] = d.NextAttemptAt.UTC().Format(time.RFC3339Nano)
		if d.DeliveredAt != nil {
			delivered[i] = sql.NullString{String: d.DeliveredAt.UTC().Format(time.RFC3339Nano), Valid: true}
		}
		if e == nil {
			// Not logged: an empty log id, which the statement skips.
			created[i] = updated[i]
			continue
		}
		meta, err := jsonArg("meta", e.Meta)
		if err != nil {
			return err
		}
		if m, ok := meta.(string); ok {
			metas[i] = sql.NullString{String: m, Valid: true}
		}
		logIDs[i], envs[i], types[i], ops[i], logStatuses[i] = e.ID, e.EnvironmentID, e.Type, e.Operation, e.Status
		keys[i], conns[i], messages[i] = e.IntegrationKey, e.ConnectionID, e.Message
		created[i] = e.CreatedAt.UTC().Format(time.RFC3339Nano)
	}
	var updatedIDs []string
	err := s.sel(ctx, qRecordAttempts, &updatedIDs, pq.StringArray(ids), pq.StringArray(statuses),
		pq.Int64Array(attempts), pq.Int64Array(codes), pq.StringArray(lastErrors), pq.StringArray(updated),
		pq.Array(delivered), pq.StringArray(logIDs), pq.Int64Array(envs), pq.StringArray(types),
		pq.StringArray(ops), pq.StringArray(logStatuses), pq.StringArray(keys), pq.StringArray(conns),
		pq.StringArray(messages), pq.Array(metas), pq.StringArray(created), pq.StringArray(next))
	return dbErr(ctx, "record webhook attempts", err, nil)
}

// deliveryConds adds the conditions on the environment, type, integration
// and connection of f.
func deliveryConds(w *where, f webhooks.DeliveryFilter) {
	if f.EnvironmentID != 0 {
		w.add("environment_id = ?", f.EnvironmentID)
	}
	if f.Type != "" {
		w.add("type = ?", f.Type)
	}
	if f.IntegrationKey != "" {
		w.add("integration_key = ?", f.IntegrationKey)
	}
	if f.ConnectionID != "" {
		w.add("connection_id = ?", f.ConnectionID)
	}
}

// ListDeliveries returns the deliveries matching f, newest first (by
// CreatedAt, then by ID, both descending), after f.After when set. An
// EnvironmentID of 0 matches every environment; a Limit of 0 means
// [DefaultDeliveriesLimit].
func (s *Store) ListDeliveries(ctx context.Context, f webhooks.DeliveryFilter) ([]*webhooks.Delivery, error) {
	var w where
	switch f.Status {
	case "":
	case webhooks.StatusPending, webhooks.StatusDelivered, webhooks.StatusFailed:
		// A literal, so that any plan can use the partial index of its
		// status (failed: migration 007; pending: the due index).
		w.conds = append(w.conds, "status = "+pq.QuoteLiteral(f.Status))
	default:
		w.add("status = ?", f.Status)
	}
	deliveryConds(&w, f)
	if f.After != nil {
		// A row comparison, which the indexes ordered by (created_at,
		// id) serve as a range.
		w.conds = append(w.conds, "(created_at, id) < ("+w.arg(f.After.CreatedAt.UTC())+"::timestamptz, "+w.arg(f.After.ID)+")")
	}
	limit := f.Limit
	if limit <= 0 {
		limit = DefaultDeliveriesLimit
	}
	q := qListDeliveries
	if f.OmitBody {
		q = qListDeliveriesOmitBody
	}
	query := s.text(q) + w.String() +
		` ORDER BY created_at DESC, id DESC LIMIT ` + w.arg(limit)
	var rows []deliveryRow
	if err := sqlx.SelectContext(ctx, s.ext(ctx), &rows, query, w.args...); err != nil {
		return nil, dbErr(ctx, "list webhook deliveries", err, nil)
	}
	out := make([]*webhooks.Delivery, len(rows))
	for i := range rows {
		out[i] = rows[i].delivery()
	}
	return out, nil
}

// RequeueFailed makes up to limit failed deliveries matching f pending
// again, oldest first, in one statement, and returns how many. Rows that
// another transaction holds locked are skipped. The failed deliveries of
// an environment are read through their partial index (migration 007).
func (s *Store) RequeueFailed(ctx context.Context, f webhooks.DeliveryFilter, limit int, at time.Time) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	var w where
	w.conds = append(w.conds, "status = 'failed'")
	deliveryConds(&w, f)
	lim := w.arg(limit)
	query := `
	WITH picked AS (
		SELECT id FROM ` + s.text(qWebhookDeliveriesTable) + w.String() + `
		ORDER BY created_at, id
		LIMIT ` + lim + `
		FOR UPDATE SKIP LOCKED)
	UPDATE ` + s.text(qWebhookDeliveriesTable) + ` d
	SET status = 'pending', attempts = 0, last_status_code = 0, last_error = '', delivered_at = NULL,
		updated_at = ` + w.arg(at.UTC()) + `, next_attempt_at = '0001-01-01 00:00:00+00', claimed_until = '-infinity'
	FROM picked WHERE d.id = picked.id`
	res, err := s.ext(ctx).ExecContext(ctx, query, w.args...)
	if err != nil {
		return 0, dbErr(ctx, "requeue failed webhook deliveries", err, nil)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, dbErr(ctx, "requeue failed webhook deliveries", err, nil)
	}
	return int(n), nil
}

var (
	// qDeleteDeliveriesBefore deletes finished deliveries by the time of
	// their final state, through their index (migration 016), skipping
	// rows that another transaction holds, and takes the charges of forward
	// deliveries off their integration's usage. The rows picked are
	// deleted by id = ANY(array), a lookup in the primary key whatever the
	// statistics say; a join with them may be planned as a scan of the
	// whole table.
	qDeleteDeliveriesBefore = newQuery(`
	WITH gone AS (
		DELETE FROM {s}.webhook_deliveries
		WHERE id = ANY(ARRAY(
			SELECT id FROM {s}.webhook_deliveries
			WHERE status <> 'pending' AND updated_at < $1
			ORDER BY updated_at
			LIMIT $2
			FOR UPDATE SKIP LOCKED))
		RETURNING environment_id, integration_key, type, ` + forwardCharge + ` AS n),
	usage AS (
		UPDATE {s}.webhook_forward_usage u SET bytes = u.bytes - f.n
		FROM (SELECT environment_id, integration_key, sum(n) AS n FROM gone WHERE type = 'forward'
			GROUP BY environment_id, integration_key) f
		WHERE u.environment_id = f.environment_id AND u.integration_key = f.integration_key)
	SELECT count(*) FROM gone`)
	// qForwardUsage reads an integration's usage and locks it until the
	// end of the transaction.
	qForwardUsage = newQuery(`
	SELECT bytes FROM {s}.webhook_forward_usage
	WHERE environment_id = $1 AND integration_key = $2
	FOR UPDATE`)
	// qTrimForwards deletes, of the $4 oldest finished forward deliveries
	// of an integration (skipping rows that another transaction holds),
	// the oldest ones until their charges total at least $3 bytes, takes
	// them off the usage, and returns how many it deleted and their
	// charges.
	// It deletes by id = ANY(array), as qDeleteDeliveriesBefore does.
	qTrimForwards = newQuery(`
	WITH cand AS (
		SELECT id, n, sum(n) OVER (ORDER BY created_at, id) AS run FROM (
			SELECT id, created_at, ` + forwardCharge + ` AS n FROM {s}.webhook_deliveries
			WHERE environment_id = $1 AND integration_key = $2 AND type = 'forward' AND status <> 'pending'
			ORDER BY created_at, id
			LIMIT $4
			FOR UPDATE SKIP LOCKED) c),
	gone AS (
		DELETE FROM {s}.webhook_deliveries
		WHERE id = ANY(ARRAY(SELECT id FROM cand WHERE run - n < $3))
		RETURNING ` + forwardCharge + ` AS n),
	usage AS (
		UPDATE {s}.webhook_forward_usage SET bytes = bytes - (SELECT coalesce(sum(n), 0) FROM gone)
		WHERE environment_id = $1 AND integration_key = $2)
	SELECT count(*) AS deleted, coalesce(sum(n), 0) AS bytes FROM gone`)
)

// trimBatch is the number of candidates one statement of TrimForwards
// reads.
const trimBatch = 100

// DeleteDeliveriesBefore deletes up to limit delivered or failed
// deliveries whose UpdatedAt is before before, the oldest first, in one
// statement, and returns how many. Rows that another transaction holds
// locked are skipped.
func (s *Store) DeleteDeliveriesBefore(ctx context.Context, before time.Time, limit int) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	var n int
	if err := s.get(ctx, qDeleteDeliveriesBefore, &n, before.UTC(), limit); err != nil {
		return 0, dbErr(ctx, "delete webhook deliveries", err, nil)
	}
	return n, nil
}

// TrimForwards deletes the oldest delivered or failed forward deliveries
// of the integration while its forward deliveries, each charged
// webhooks.ForwardCharge of its row, total more than max bytes, and
// returns the total left. It reads the total from
// webhook_forward_usage and locks it there until its transaction ends (the
// caller's, if any): concurrent forwards of the integration take turns.
// Finished deliveries that another transaction holds locked are skipped.
func (s *Store) TrimForwards(ctx context.Context, environmentID int64, integrationKey string, max int64) (int64, error) {
	var left int64
	err := s.WithTx(ctx, func(ctx context.Context) error {
		err := s.get(ctx, qForwardUsage, &left, environmentID, integrationKey)
		if errors.Is(err, sql.ErrNoRows) {
			left = 0
			return nil
		}
		if err != nil {
			return dbErr(ctx, "read forward usage", err, nil)
		}
		for left > max {
			var r struct {
				Deleted int   `db:"deleted"`
				Bytes   int64 `db:"bytes"`
			}
			if err := s.get(ctx, qTrimForwards, &r, environmentID, integrationKey, left-max, trimBatch); err != nil {
				return dbErr(ctx, "trim forward deliveries", err, nil)
			}
			if r.Deleted == 0 {
				break
			}
			left -= r.Bytes
		}
		return nil
	})
	return left, err
}

var (
	_ webhooks.AttemptRecorder = (*Store)(nil)
	_ webhooks.Pruner          = (*Store)(nil)
)
