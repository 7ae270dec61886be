-- The failures of the operations log, newest first, for GET
-- /logs/operations?status=failure (ListLogs with Status "failure"):
-- failures are rare among entries, so a list of them through
-- operations_log_environment_id_created_at_idx walks every success of the
-- environment between two failures, and all of them when none matches.
-- Partial, so only a failure's write pays for it. Runs with search_path
-- set to the target schema.
CREATE INDEX operations_log_failures_idx
    ON operations_log (environment_id, created_at DESC, id DESC)
    WHERE status = 'failure';
