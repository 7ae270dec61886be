-- The outbox's claim, with a plan that does not depend on statistics, and
-- fewer index writes per delivery and per log entry. Runs with search_path
-- set to the target schema.

-- claim_webhook_deliveries claims up to max_rows pending deliveries due at
-- due_at, earliest due first, skipping rows that another transaction holds
-- locked, and moves their claim to lease_until. It is a function only for
-- the settings its plan needs: the due index read in order, stopping after
-- max_rows. The planner's alternative, a bitmap scan of every pending row
-- followed by a sort, looks cheaper whenever the statistics say that few
-- rows are pending (a fresh table, or the usual state of an outbox whose
-- rows are nearly all delivered); during a backlog it costs one pass over
-- the whole backlog per claim, and draining the backlog becomes quadratic.
-- The body is planned once per connection (PL/pgSQL caches it), and
-- search_path is pinned to this schema.
CREATE FUNCTION claim_webhook_deliveries(due_at timestamptz, max_rows integer, lease_until timestamptz)
RETURNS SETOF webhook_deliveries
LANGUAGE plpgsql VOLATILE
SET enable_bitmapscan = off
SET search_path FROM CURRENT
AS $$
BEGIN
    RETURN QUERY
    WITH due AS (
        SELECT w.id FROM webhook_deliveries w
        WHERE w.status = 'pending' AND w.next_attempt_at <= due_at AND w.claimed_until <= due_at
        ORDER BY w.next_attempt_at, w.id
        LIMIT max_rows
        FOR UPDATE SKIP LOCKED)
    UPDATE webhook_deliveries d
    SET claimed_until = lease_until
    FROM due
    WHERE d.id = due.id
    RETURNING d.*;
END
$$;

-- Listing by status: pending deliveries are few and in the due index;
-- delivered ones are nearly all rows, which the environment's index serves;
-- failed ones get a partial index. An index with status in it took a write
-- on every recorded attempt.
DROP INDEX webhook_deliveries_environment_id_status_created_at_idx;
CREATE INDEX webhook_deliveries_environment_id_failed_created_at_idx
    ON webhook_deliveries (environment_id, created_at DESC, id DESC) WHERE status = 'failed';

-- Retention pruning reads the log by time, which is also the order rows are
-- appended in: a block-range index serves it at a fraction of a B-tree's
-- cost per insert.
DROP INDEX operations_log_created_at_idx;
CREATE INDEX operations_log_created_at_brin_idx ON operations_log USING brin (created_at);
