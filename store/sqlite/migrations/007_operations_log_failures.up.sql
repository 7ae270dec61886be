-- The failures of the operations log, newest first: store/postgres'
-- migration 019, in SQLite. Failures are rare among entries, so a list of
-- them through operations_log_environment_id_created_at_idx walks every
-- success of the environment between two failures, and all of them when
-- none matches. Partial, so only a failure's write pays for it.
CREATE INDEX operations_log_failures_idx
    ON operations_log (environment_id, created_at, id)
    WHERE status = 'failure';
