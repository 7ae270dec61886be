-- The insert trigger of migration 008 on connections, per statement instead
-- of per row. Runs with search_path set to the target schema.
--
-- A bulk import inserts hundreds of connections in one statement; the
-- per-row trigger ran its INSERT into sealing_keys once per row, which
-- doubled the cost of such an insert. This one runs once per statement, on
-- the statement's new rows (a transition table), and registers their
-- distinct key ids. Its INSERT takes sealing_keys' ROW EXCLUSIVE lock even
-- when it adds nothing, as before: ForgetSealingKeyID still waits for every
-- transaction that writes a connection.
--
-- The update trigger stays per row: a transition table cannot go with its
-- column list (UPDATE OF sealed_credentials), and it fires only for rows
-- that move to another key.

DROP TRIGGER register_sealing_keys_insert ON connections;

CREATE FUNCTION register_connection_sealing_keys() RETURNS trigger
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
BEGIN
    -- The key id of "v1:<key id>:<data>" is its second ':'-separated part:
    -- the distinct candidates are found with split_part (cheap), and only
    -- they go through sealing_key_id (a regular expression), which keeps
    -- those of the right form. A value without a second ':' has no key id.
    INSERT INTO sealing_keys (key_id)
    SELECT key_id FROM (
        SELECT sealing_key_id('v1:' || part || ':') AS key_id
        FROM (SELECT DISTINCT split_part(sealed_credentials, ':', 2) AS part
              FROM new_connections
              WHERE sealed_credentials LIKE 'v1:%:%') AS parts
    ) AS ids
    WHERE key_id IS NOT NULL
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END
$$;

CREATE TRIGGER register_sealing_keys_insert AFTER INSERT ON connections
    REFERENCING NEW TABLE AS new_connections
    FOR EACH STATEMENT EXECUTE FUNCTION register_connection_sealing_keys();
