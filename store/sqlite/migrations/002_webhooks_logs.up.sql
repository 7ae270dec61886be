-- The outbox of outgoing webhooks: one row per delivery (one event to one
-- destination URL), and the storage each integration's forwarded provider
-- webhooks take. Timestamps are INTEGER microseconds since the epoch.

CREATE TABLE webhook_deliveries (
    id               TEXT    NOT NULL PRIMARY KEY,
    environment_id   INTEGER NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
    event_id         TEXT    NOT NULL,
    type             TEXT    NOT NULL,
    integration_key  TEXT    NOT NULL,
    connection_id    TEXT    NOT NULL,
    url              TEXT    NOT NULL,
    -- The exact bytes that are signed and sent.
    body             BLOB    NOT NULL,
    status           TEXT    NOT NULL,
    attempts         INTEGER NOT NULL,
    last_status_code INTEGER NOT NULL,
    last_error       TEXT    NOT NULL,
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL,
    delivered_at     INTEGER,
    -- When a pending delivery is due. A claim leaves it and sets
    -- claimed_until instead (NULL: not claimed): a pending delivery is due
    -- when both have passed. An update of the delivery ends its claim.
    next_attempt_at  INTEGER NOT NULL,
    claimed_until    INTEGER,
    unverified       INTEGER NOT NULL,
    -- webhooks.ForwardCharge of the row, set when it is created: what a
    -- forward delivery counts against its integration's storage quota.
    charge           INTEGER NOT NULL
) STRICT;

-- ListDeliveries, newest first (read backwards): by environment (with or
-- without a status, type or integration), and by environment and
-- connection. The first also serves the foreign key.
CREATE INDEX webhook_deliveries_environment_created_idx
    ON webhook_deliveries (environment_id, created_at, id);
CREATE INDEX webhook_deliveries_environment_connection_created_idx
    ON webhook_deliveries (environment_id, connection_id, created_at, id);
-- The failed deliveries of an environment: ListDeliveries by status and
-- RequeueFailed, oldest first.
CREATE INDEX webhook_deliveries_environment_failed_idx
    ON webhook_deliveries (environment_id, created_at, id) WHERE status = 'failed';
-- ClaimDeliveries: the pending deliveries, earliest due first.
CREATE INDEX webhook_deliveries_due_idx
    ON webhook_deliveries (next_attempt_at, id) WHERE status = 'pending';
-- DeleteDeliveriesBefore: the finished deliveries by the time of their
-- final state, oldest first.
CREATE INDEX webhook_deliveries_finished_updated_idx
    ON webhook_deliveries (updated_at) WHERE status <> 'pending';
-- TrimForwards: the finished forward deliveries of an integration, oldest
-- first.
CREATE INDEX webhook_deliveries_forward_finished_idx
    ON webhook_deliveries (environment_id, integration_key, created_at, id)
    WHERE type = 'forward' AND status <> 'pending';

-- The charges of each integration's forward deliveries, kept by the
-- triggers below in the statement that inserts or deletes a delivery, so
-- that TrimForwards reads the total without summing the outbox.
CREATE TABLE webhook_forward_usage (
    environment_id  INTEGER NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
    integration_key TEXT    NOT NULL,
    bytes           INTEGER NOT NULL,
    PRIMARY KEY (environment_id, integration_key)
) STRICT, WITHOUT ROWID;

CREATE TRIGGER webhook_deliveries_forward_insert
AFTER INSERT ON webhook_deliveries WHEN NEW.type = 'forward'
BEGIN
    INSERT INTO webhook_forward_usage (environment_id, integration_key, bytes)
    VALUES (NEW.environment_id, NEW.integration_key, NEW.charge)
    ON CONFLICT (environment_id, integration_key) DO UPDATE SET bytes = bytes + excluded.bytes;
END;

CREATE TRIGGER webhook_deliveries_forward_delete
AFTER DELETE ON webhook_deliveries WHEN OLD.type = 'forward'
BEGIN
    UPDATE webhook_forward_usage SET bytes = bytes - OLD.charge
    WHERE environment_id = OLD.environment_id AND integration_key = OLD.integration_key;
END;
