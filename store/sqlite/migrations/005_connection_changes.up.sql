-- The change feed of connections (Store.ConnectionChanges), as in the
-- Postgres store's migration 011.
--
-- A process that caches connections (the proxy's cache) polls this table
-- and drops what it cached of a connection that was updated or deleted,
-- through this Store or another one on the file (another process, a tool
-- beside the server), so that its cache can live minutes instead of
-- seconds.
--
-- A row names a connection updated or deleted, or, with connection_id
-- NULL, an integration updated or deleted (every connection of it). Inserts
-- need no row: a connection that does not exist is never cached. Rows are
-- pruned by age (PruneConnectionChanges) during maintenance sweeps.
--
-- The triggers write the rows in the writing transaction. SQLite runs one
-- write transaction at a time on a file, whatever the process, and each
-- starts from the last commit, so seq grows in commit order: once a reader
-- has seen a seq, no row with a lower one can commit later, and a cursor
-- is the last seq listed. AUTOINCREMENT keeps a seq from being given again
-- once pruning has deleted the highest rows (a plain INTEGER PRIMARY KEY
-- would start again from the highest left, below a cursor).
CREATE TABLE connection_changes (
    seq             INTEGER PRIMARY KEY AUTOINCREMENT,
    environment_id  INTEGER NOT NULL,
    integration_key TEXT    NOT NULL,
    connection_id   TEXT,
    changed_at      INTEGER NOT NULL DEFAULT (CAST(unixepoch('subsec') * 1000000 AS INTEGER))
) STRICT;

-- A connection's identity never changes (an integration with connections
-- is not renamed): OLD names it. The ON CONFLICT DO UPDATE of an import
-- fires the update trigger; the cascades of an integration's or an
-- environment's deletion fire the delete triggers.
CREATE TRIGGER connection_changes_update AFTER UPDATE ON connections
BEGIN
    INSERT INTO connection_changes (environment_id, integration_key, connection_id)
    VALUES (OLD.environment_id, OLD.integration_key, OLD.connection_id);
END;

CREATE TRIGGER connection_changes_delete AFTER DELETE ON connections
BEGIN
    INSERT INTO connection_changes (environment_id, integration_key, connection_id)
    VALUES (OLD.environment_id, OLD.integration_key, OLD.connection_id);
END;

-- An integration's client credentials sign some calls (OAuth 1, templates
-- that use the client id or secret): its connections are cached with them.
CREATE TRIGGER connection_changes_integration_update AFTER UPDATE ON integrations
BEGIN
    INSERT INTO connection_changes (environment_id, integration_key, connection_id)
    VALUES (OLD.environment_id, OLD.unique_key, NULL);
END;

CREATE TRIGGER connection_changes_integration_delete AFTER DELETE ON integrations
BEGIN
    INSERT INTO connection_changes (environment_id, integration_key, connection_id)
    VALUES (OLD.environment_id, OLD.unique_key, NULL);
END;
