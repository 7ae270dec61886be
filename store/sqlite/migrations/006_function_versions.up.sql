-- Functions deployed with the nango CLI, and the versions of every
-- function: store/postgres' migration 018, in SQLite.

-- A deployed function keeps the source it was built from (the TypeScript
-- entry file) and the version of the SDK it was built with; the functions
-- stored before have neither.
ALTER TABLE functions ADD COLUMN source_code BLOB NOT NULL DEFAULT x'';
ALTER TABLE functions ADD COLUMN sdk_version TEXT NOT NULL DEFAULT '';

-- The versions a function had before its current one: PutFunction adds
-- the one it replaces, DeleteFunction the one it deletes, in their
-- transaction, and keeps the newest (functions.FunctionVersionsKept) of
-- each function. They belong to the integration by key, as functions do.
-- AUTOINCREMENT: ids grow, so the newest is the highest even after the
-- highest were pruned.
CREATE TABLE function_versions (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    environment_id  INTEGER NOT NULL,
    integration_key TEXT    NOT NULL,
    kind            TEXT    NOT NULL,
    name            TEXT    NOT NULL,
    version         TEXT    NOT NULL,
    runtime         TEXT    NOT NULL,
    source          TEXT    NOT NULL,
    sdk_version     TEXT    NOT NULL,
    definition      TEXT    NOT NULL,
    code            BLOB    NOT NULL,
    source_code     BLOB    NOT NULL,
    deployed_at     INTEGER NOT NULL,
    CONSTRAINT function_versions_integration_fkey FOREIGN KEY (environment_id, integration_key)
        REFERENCES integrations (environment_id, unique_key)
        ON DELETE CASCADE ON UPDATE CASCADE
) STRICT;

CREATE INDEX function_versions_function_idx ON function_versions (environment_id, integration_key, kind, name, id);
