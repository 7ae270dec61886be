-- Token refresh bookkeeping of a connection: when refreshing last failed
-- (NULL after a success) and how many refreshes failed since the last
-- success. Runs with search_path set to the target schema.

ALTER TABLE connections
    ADD COLUMN last_refresh_failure timestamptz,
    ADD COLUMN refresh_attempts     integer     NOT NULL DEFAULT 0;
