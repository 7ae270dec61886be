-- The change feed of connections (Store.ConnectionChanges). Runs with
-- search_path set to the target schema.
--
-- Every process that caches connections (the proxy's cache) polls this
-- table and drops what it cached of a connection that another process
-- updated or deleted, so that caches can live minutes instead of seconds.
--
-- A row names a connection updated or deleted, or, with connection_id
-- NULL, an integration updated or deleted (every connection of it). txid is
-- the writing transaction's id: a poller reads only rows of transactions
-- older than the oldest one still running (pg_snapshot_xmin), all of which
-- have ended, so a transaction that commits late is never skipped. Inserts
-- need no row: a connection that does not exist is never cached. Rows are
-- pruned by age (PruneConnectionChanges) during maintenance sweeps.
CREATE TABLE connection_changes (
    txid            xid8        NOT NULL DEFAULT pg_current_xact_id(),
    seq             bigint      GENERATED ALWAYS AS IDENTITY,
    environment_id  bigint      NOT NULL,
    integration_key text        NOT NULL,
    connection_id   text,
    changed_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (txid, seq)
);

-- Per statement, on its transition table: a bulk update (an import that
-- replaces connections, a re-encryption) writes its rows in one INSERT.
CREATE FUNCTION note_connection_changes() RETURNS trigger
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
BEGIN
    INSERT INTO connection_changes (environment_id, integration_key, connection_id)
    SELECT environment_id, integration_key, connection_id FROM changed_connections;
    RETURN NULL;
END
$$;

CREATE TRIGGER connection_changes_update AFTER UPDATE ON connections
    REFERENCING OLD TABLE AS changed_connections
    FOR EACH STATEMENT EXECUTE FUNCTION note_connection_changes();
CREATE TRIGGER connection_changes_delete AFTER DELETE ON connections
    REFERENCING OLD TABLE AS changed_connections
    FOR EACH STATEMENT EXECUTE FUNCTION note_connection_changes();

-- An integration's client credentials sign some calls (OAuth 1, templates
-- that use the client id or secret): its connections are cached with them.
CREATE FUNCTION note_integration_changes() RETURNS trigger
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
BEGIN
    INSERT INTO connection_changes (environment_id, integration_key, connection_id)
    SELECT environment_id, unique_key, NULL FROM changed_integrations;
    RETURN NULL;
END
$$;

CREATE TRIGGER connection_changes_integration_update AFTER UPDATE ON integrations
    REFERENCING OLD TABLE AS changed_integrations
    FOR EACH STATEMENT EXECUTE FUNCTION note_integration_changes();
CREATE TRIGGER connection_changes_integration_delete AFTER DELETE ON integrations
    REFERENCING OLD TABLE AS changed_integrations
    FOR EACH STATEMENT EXECUTE FUNCTION note_integration_changes();
