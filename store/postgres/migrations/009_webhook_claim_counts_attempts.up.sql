-- The outbox's claim counts the attempt it starts. Runs with search_path set
-- to the target schema.

-- claim_webhook_attempts is claim_webhook_deliveries (migration 007: same
-- rows, same order, same plan settings, for the same reasons) that also adds
-- one to the attempts of each delivery it claims, in the same statement. An
-- attempt is thus counted when it starts, in the database, and not only when
-- its outcome is recorded: a process that dies after its POST and before the
-- record leaves the attempt counted, and the delivery taken over when the
-- lease ends shows two attempts, not one. A claimed delivery that is not
-- attempted after all (the process stops first) is released by an update
-- that takes the count back.
--
-- It returns its columns by name, not the table's row type: a column added
-- to the table later changes nothing here.
--
-- claim_webhook_deliveries stays for processes of the version before, which
-- count attempts when they record them; a later migration may drop it.
-- Nothing else changes: no table is rewritten or locked beyond creating the
-- function.
CREATE FUNCTION claim_webhook_attempts(due_at timestamptz, max_rows integer, lease_until timestamptz)
RETURNS TABLE (
    id               text,
    environment_id   bigint,
    event_id         text,
    type             text,
    integration_key  text,
    connection_id    text,
    url              text,
    body             bytea,
    status           text,
    attempts         integer,
    last_status_code integer,
    last_error       text,
    created_at       timestamptz,
    updated_at       timestamptz,
    delivered_at     timestamptz
)
LANGUAGE plpgsql VOLATILE
SET enable_bitmapscan = off
SET search_path FROM CURRENT
AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    WITH due AS (
        SELECT w.id FROM webhook_deliveries w
        WHERE w.status = 'pending' AND w.next_attempt_at <= due_at AND w.claimed_until <= due_at
        ORDER BY w.next_attempt_at, w.id
        LIMIT max_rows
        FOR UPDATE SKIP LOCKED)
    UPDATE webhook_deliveries d
    SET claimed_until = lease_until, attempts = d.attempts + 1
    FROM due
    WHERE d.id = due.id
    RETURNING d.id, d.environment_id, d.event_id, d.type, d.integration_key, d.connection_id, d.url,
        d.body, d.status, d.attempts, d.last_status_code, d.last_error, d.created_at, d.updated_at,
        d.delivered_at;
END
$$;
