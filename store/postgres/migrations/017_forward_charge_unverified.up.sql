-- Bounded storage under a flood of anonymous provider webhooks. Runs with
-- search_path set to the target schema.

-- The forward deliveries of a provider webhook that no signature verified
-- (its provider does not sign: anyone may have sent it). Their attempts are
-- logged sampled (webhooks.DelivererConfig.Sampler). Adding a column with a
-- constant default rewrites nothing; rows stored before are verified, or
-- were forwarded before the mark existed, and keep every attempt logged.
ALTER TABLE webhook_deliveries ADD COLUMN unverified boolean NOT NULL DEFAULT false;

-- The claim returns the mark with the rest (migration 009 explains the
-- function; this is the same statement). Its result type changes, so it is
-- dropped and created again, in this transaction: a process of the version
-- before selects its columns by name and runs it unchanged.
DROP FUNCTION claim_webhook_attempts(timestamptz, integer, timestamptz);
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
    delivered_at     timestamptz,
    unverified       boolean
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
        d.delivered_at, d.unverified;
END
$$;

-- The storage quota of forwards counts rows, not only bodies: each forward
-- delivery is charged webhooks.ForwardCharge of its row, the body's length
-- plus a sixteenth, plus three times the length of its URL, integration key
-- and connection id, plus 4096 bytes (see webhooks/quota.go for the
-- measurements), so that a flood of tiny bodies cannot store unboundedly
-- many rows. The
-- usage of every integration is counted again with that charge. The ALTER
-- TABLE above holds webhook_deliveries locked until this migration
-- commits, so no forward is stored or deleted meanwhile; processes of the
-- version before, which charge bodies only, should not run on after it (the
-- usage would drift by their difference until the forwards they stored are
-- deleted).
DELETE FROM webhook_forward_usage;
INSERT INTO webhook_forward_usage (environment_id, integration_key, bytes)
SELECT environment_id, integration_key, sum(octet_length(body)::bigint + octet_length(body) / 16
    + 3 * (octet_length(url) + octet_length(integration_key) + octet_length(connection_id))::bigint + 4096)
FROM webhook_deliveries WHERE type = 'forward'
GROUP BY environment_id, integration_key;
