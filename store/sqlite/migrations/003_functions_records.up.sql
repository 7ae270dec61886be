-- The functions group: the records of syncs (functions.RecordStore),
-- deployed functions, their syncs and runs, checkpoints and async action
-- tasks (functions.FunctionStore, SyncStore, CheckpointStore and
-- ActionStore). The tables of store/postgres' migrations 013 and 014, in
-- SQLite: times are INTEGER microseconds since the epoch, JSON is TEXT,
-- UUIDs are TEXT in canonical form (lower case, which sorts as the bytes
-- do), booleans are INTEGER 0 or 1. Text compares and sorts by bytes
-- (BINARY), as Postgres' "C" collation does.

-- A scope is one model of one sync variant of one connection row. Its row
-- hands out the Seq values of the records it changes from last_seq. The
-- Store's writes run one at a time (one writer connection, transactions
-- that take the write lock when they begin), so Seq order is commit order
-- within a scope, which is what lets a reader page by Seq without missing a
-- record. Writes may leave gaps in the Seq values (a save reserves one per
-- record given, changed or not).
--
-- There is no foreign key to connections: deleting a connection must stay
-- fast whatever its records, and DeleteOrphanRecords removes them later.
-- connection_id is the connection's row id, never reused, so a connection
-- deleted and created again under the same id starts without records.
CREATE TABLE record_scopes (
    id             INTEGER PRIMARY KEY,
    environment_id INTEGER NOT NULL,
    connection_id  INTEGER NOT NULL,
    last_seq       INTEGER NOT NULL DEFAULT 0,
    model          TEXT    NOT NULL,
    variant        TEXT    NOT NULL,
    UNIQUE (environment_id, connection_id, model, variant)
) STRICT;

-- The orphan sweep finds the scopes of connections that no longer exist.
CREATE INDEX record_scopes_connection_id_idx ON record_scopes (connection_id);

-- added_seq is the Seq of the write that last added the record (first, or
-- again after a deletion): a save counts a row as added when it sets both
-- to the same new value, without reading the rows first. touched is the
-- generation of the last save that named the record (0 for none), which
-- DeleteUntouched compares. sealed_payload is '' once pruned; it is the
-- last column, so that reading the others never reads a large payload's
-- overflow pages.
CREATE TABLE records (
    scope_id       INTEGER NOT NULL,
    seq            INTEGER NOT NULL,
    added_seq      INTEGER NOT NULL,
    touched        INTEGER NOT NULL DEFAULT 0,
    first_seen_at  INTEGER NOT NULL,
    updated_at     INTEGER NOT NULL,
    deleted_at     INTEGER,
    pruned_at      INTEGER,
    external_id    TEXT    NOT NULL,
    hash           TEXT    NOT NULL,
    sealed_payload TEXT    NOT NULL
) STRICT;

-- A record by id. Named, so that the statements that look up records by
-- id can tell the planner to use it (INDEXED BY).
CREATE UNIQUE INDEX records_scope_id_external_id_idx ON records (scope_id, external_id);

-- GET /records pages a scope by Seq; PruneRecords walks it in Seq order.
CREATE UNIQUE INDEX records_scope_id_seq_idx ON records (scope_id, seq);

-- CountRecords counts the records of a scope that are not deleted in it
-- alone, without reading the rows.
CREATE INDEX records_live_idx ON records (scope_id) WHERE deleted_at IS NULL;

-- Retention (PruneStaleRecords) finds the oldest payloads not pruned yet;
-- a pruned record leaves the index.
CREATE INDEX records_stale_idx ON records (updated_at) WHERE pruned_at IS NULL;

-- A function belongs to an integration by key: deleting the integration
-- deletes its functions, renaming it renames them. Its id is never reused
-- (AUTOINCREMENT), as Postgres' identity.
CREATE TABLE functions (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    environment_id  INTEGER NOT NULL,
    integration_key TEXT    NOT NULL,
    kind            TEXT    NOT NULL,
    name            TEXT    NOT NULL,
    runtime         TEXT    NOT NULL,
    version         TEXT    NOT NULL,
    source          TEXT    NOT NULL,
    enabled         INTEGER NOT NULL,
    deployed_at     INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    definition      TEXT    NOT NULL,
    code            BLOB    NOT NULL,
    CONSTRAINT functions_identity_key UNIQUE (environment_id, integration_key, kind, name),
    CONSTRAINT functions_integration_fkey FOREIGN KEY (environment_id, integration_key)
        REFERENCES integrations (environment_id, unique_key)
        ON DELETE CASCADE ON UPDATE CASCADE
) STRICT;

-- A sync is the schedule of one sync function for one connection and
-- variant. It dies with its connection. run_id is the run queued or
-- running, NULL when none.
CREATE TABLE syncs (
    id              TEXT    NOT NULL PRIMARY KEY,
    environment_id  INTEGER NOT NULL,
    connection_id   INTEGER NOT NULL REFERENCES connections (id) ON DELETE CASCADE,
    integration_key TEXT    NOT NULL,
    connection_ref  TEXT    NOT NULL,
    name            TEXT    NOT NULL,
    variant         TEXT    NOT NULL,
    frequency       TEXT    NOT NULL,
    interval_ms     INTEGER NOT NULL,
    paused          INTEGER NOT NULL,
    next_run_at     INTEGER,
    last_sync_date  INTEGER,
    run_id          TEXT,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    version         INTEGER NOT NULL,
    -- Also the index of the cascade from connections.
    CONSTRAINT syncs_identity_key UNIQUE (connection_id, name, variant)
) STRICT, WITHOUT ROWID;

-- The syncs of a function (DeleteFunction, listings by integration and
-- name).
CREATE INDEX syncs_function_idx ON syncs (environment_id, integration_key, name);
-- ClaimDueSyncs: only syncs that may become due are in it, in due order,
-- so a claim reads the due ones and stops at the first that is not due,
-- however many syncs are paused, running or due later. (SQLite uses a
-- partial index when the query's WHERE holds each term of the index's as
-- written: the claim repeats them.)
CREATE INDEX syncs_due_idx ON syncs (next_run_at, id)
    WHERE paused = 0 AND run_id IS NULL AND next_run_at IS NOT NULL;

CREATE TABLE sync_runs (
    id                  TEXT    NOT NULL PRIMARY KEY,
    sync_id             TEXT    NOT NULL REFERENCES syncs (id) ON DELETE CASCADE,
    status              TEXT    NOT NULL,
    type                TEXT    NOT NULL,
    "trigger"           TEXT    NOT NULL,
    reset               INTEGER NOT NULL,
    empty_cache         INTEGER NOT NULL,
    log_id              TEXT    NOT NULL,
    created_at          INTEGER NOT NULL,
    started_at          INTEGER,
    finished_at         INTEGER,
    heartbeat_at        INTEGER,
    cancel_requested    INTEGER NOT NULL,
    supersedes          TEXT,
    checkpoints_touched INTEGER NOT NULL,
    version             INTEGER NOT NULL,
    result              TEXT,
    checkpoint_from     TEXT,
    checkpoint_to       TEXT,
    error               TEXT
) STRICT;

-- The latest run of a sync (LatestSyncRuns), and the cascade from syncs.
CREATE INDEX sync_runs_latest_idx ON sync_runs (sync_id, created_at DESC, id DESC);
-- The latest finished run of a sync (LatestFinishedSyncRuns, and the run
-- retention keeps).
CREATE INDEX sync_runs_latest_finished_idx ON sync_runs (sync_id, created_at DESC, id DESC)
    WHERE status IN ('SUCCESS', 'STOPPED');
-- Stale runs (StaleSyncRuns): running ones by heartbeat, queued ones by
-- creation. Only runs in progress are in it.
CREATE INDEX sync_runs_stale_idx ON sync_runs
    ((CASE WHEN status = 'RUNNING' THEN heartbeat_at ELSE created_at END), id)
    WHERE status IN ('QUEUED', 'RUNNING');
-- Retention (DeleteSyncRunsBefore).
CREATE INDEX sync_runs_finished_at_idx ON sync_runs (finished_at, id)
    WHERE status IN ('SUCCESS', 'STOPPED');

CREATE TABLE checkpoints (
    connection_id INTEGER NOT NULL REFERENCES connections (id) ON DELETE CASCADE,
    "key"         TEXT    NOT NULL,
    version       INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL,
    value         TEXT    NOT NULL,
    PRIMARY KEY (connection_id, "key")
) STRICT, WITHOUT ROWID;

-- No foreign key to connections: a task's outcome outlives its connection
-- until retention deletes it. The sealed values are the last columns.
CREATE TABLE action_tasks (
    id              TEXT    NOT NULL PRIMARY KEY,
    environment_id  INTEGER NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
    connection_id   INTEGER NOT NULL,
    integration_key TEXT    NOT NULL,
    connection_ref  TEXT    NOT NULL,
    action_name     TEXT    NOT NULL,
    status          TEXT    NOT NULL,
    attempts        INTEGER NOT NULL,
    max_retries     INTEGER NOT NULL,
    error_status    INTEGER NOT NULL,
    log_id          TEXT    NOT NULL,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    finished_at     INTEGER,
    version         INTEGER NOT NULL,
    sealed_input    TEXT    NOT NULL,
    sealed_output   TEXT    NOT NULL,
    sealed_error    TEXT    NOT NULL
) STRICT;

-- Retention (DeleteActionTasksBefore).
CREATE INDEX action_tasks_finished_at_idx ON action_tasks (finished_at, id)
    WHERE finished_at IS NOT NULL;
-- Running tasks by heartbeat (StaleActionTasks): only those running are in
-- it.
CREATE INDEX action_tasks_running_idx ON action_tasks (updated_at, id)
    WHERE status = 'RUNNING';
