-- The outbox of outgoing webhooks: one row per delivery (one event to one
-- destination URL). Runs with search_path set to the target schema.

CREATE TABLE webhook_deliveries (
    id               text        COLLATE "C" PRIMARY KEY,
    environment_id   bigint      NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
    event_id         text        NOT NULL,
    type             text        NOT NULL,
    integration_key  text        NOT NULL,
    connection_id    text        NOT NULL,
    url              text        NOT NULL,
    -- The exact bytes that are signed and sent: bytea, not jsonb, which would
    -- reorder keys and drop whitespace.
    body             bytea       NOT NULL,
    status           text        NOT NULL,
    attempts         integer     NOT NULL,
    last_status_code integer     NOT NULL,
    last_error       text        NOT NULL,
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL,
    delivered_at     timestamptz
);

-- ListDeliveries, newest first: by environment, by environment and status,
-- and by environment and connection.
CREATE INDEX webhook_deliveries_environment_id_created_at_idx
    ON webhook_deliveries (environment_id, created_at DESC, id DESC);
CREATE INDEX webhook_deliveries_environment_id_status_created_at_idx
    ON webhook_deliveries (environment_id, status, created_at DESC, id DESC);
CREATE INDEX webhook_deliveries_environment_id_connection_id_created_at_idx
    ON webhook_deliveries (environment_id, connection_id, created_at DESC, id DESC);
