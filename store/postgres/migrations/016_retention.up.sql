-- Retention of finished webhook deliveries and of the operations log
-- (connect.Service.Retain), and the storage quota of forwarded provider
-- webhooks (TrimForwards). Runs with search_path set to the target schema.

-- DeleteDeliveriesBefore: the finished deliveries by the time of their final
-- state, oldest first. A delivery enters it when it is delivered or fails
-- for good, an update that writes its index entries anyway (its status and
-- due time change); the claims of pending deliveries, which change neither,
-- stay HOT.
CREATE INDEX webhook_deliveries_finished_updated_at_idx
    ON webhook_deliveries (updated_at) WHERE status <> 'pending';

-- TrimForwards: the finished forward deliveries of an integration, oldest
-- first. Only forwarded provider webhooks are in it.
CREATE INDEX webhook_deliveries_forward_finished_idx
    ON webhook_deliveries (environment_id, integration_key, created_at, id)
    WHERE type = 'forward' AND status <> 'pending';

-- The bytes of the bodies of each integration's forward deliveries, kept by
-- the statements that insert and delete deliveries (CreateDeliveries,
-- DeleteDeliveriesBefore, TrimForwards), so that the quota is checked
-- without summing the outbox. The row of an integration is locked from the
-- insert of a forward delivery to the end of its transaction: forwards of
-- one integration commit in turn.
CREATE TABLE webhook_forward_usage (
    environment_id  bigint NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
    integration_key text   NOT NULL,
    bytes           bigint NOT NULL,
    PRIMARY KEY (environment_id, integration_key)
);
INSERT INTO webhook_forward_usage (environment_id, integration_key, bytes)
SELECT environment_id, integration_key, sum(octet_length(body))
FROM webhook_deliveries WHERE type = 'forward'
GROUP BY environment_id, integration_key;

-- DeleteLogsBefore reads the log oldest first. The BRIN index of migration
-- 012 served that only while the table was append-only: once retention
-- deletes old rows, new ones fill the freed pages, every block range then
-- spans old and new times, and the BRIN scan for old rows reads the whole
-- reused part of the table (measured: of 200,000 rows, the older half
-- deleted and its pages refilled by 100,000 new rows, finding the 500 rows
-- left before the limit read 3,307 of the 6,251 pages, every page the new
-- rows had reused). A B-tree stays exact; inserts in time order append to
-- its rightmost page.
DROP INDEX operations_log_created_at_brin_idx;
CREATE INDEX operations_log_created_at_idx ON operations_log (created_at);
