-- The outbox is claimed by due time: a pending delivery is due when its
-- next_attempt_at has passed and no process holds a claim on it
-- (claimed_until has passed too). A claim sets only claimed_until, which no
-- index holds, so that it is a HOT update (no index entries written) when
-- the row's page has room: hence the fill factor. A failed attempt sets
-- next_attempt_at to the time of the retry. Runs with search_path set to
-- the target schema.

ALTER TABLE webhook_deliveries ADD COLUMN next_attempt_at timestamptz;
UPDATE webhook_deliveries SET next_attempt_at = updated_at;
ALTER TABLE webhook_deliveries ALTER COLUMN next_attempt_at SET NOT NULL;
ALTER TABLE webhook_deliveries ADD COLUMN claimed_until timestamptz NOT NULL DEFAULT '-infinity';
ALTER TABLE webhook_deliveries SET (fillfactor = 70);

-- ClaimDeliveries: the pending deliveries, earliest due first. Delivered
-- and failed ones, nearly all rows in time, are not in it.
CREATE INDEX webhook_deliveries_due_idx
    ON webhook_deliveries (next_attempt_at, id) WHERE status = 'pending';
