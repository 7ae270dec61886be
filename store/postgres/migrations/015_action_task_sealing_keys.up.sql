-- The key ids of the sealed values of async action tasks (their input,
-- output and error body), in the registry of migration 008. Runs with
-- search_path set to the target schema.
--
-- As migration 010 does for connections: the insert trigger runs once per
-- statement, on the statement's new rows (a transition table), and the
-- update trigger once per row, only for the rows whose sealed columns move
-- to another key id (a transition table cannot go with its column list).
-- A task is updated at every heartbeat of its run, and the instance that
-- ran it may update it with a stale version after another instance
-- finished it (an update of no row): none of those changes a key id, so
-- none runs the trigger or waits for sealing_keys. The triggers' INSERT
-- takes sealing_keys' ROW EXCLUSIVE lock even when it adds nothing, which
-- ForgetSealingKeyID waits for: a key id is never dropped while a task is
-- being written with a value under it that its row did not hold before (a
-- value it held before is counted either way).
CREATE FUNCTION register_action_task_sealing_keys() RETURNS trigger
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
BEGIN
    -- The key id of "v1:<key id>:<data>" is its second ':'-separated part:
    -- the distinct candidates are found with split_part (cheap, on the
    -- value's first 40 characters, which hold any key id), and only they
    -- go through sealing_key_id, which keeps those of the right form.
    INSERT INTO sealing_keys (key_id)
    SELECT key_id FROM (
        SELECT sealing_key_id('v1:' || part || ':') AS key_id
        FROM (SELECT DISTINCT split_part(left(sealed, 40), ':', 2) AS part
              FROM new_action_tasks
              CROSS JOIN LATERAL (VALUES (sealed_input), (sealed_output), (sealed_error)) AS v(sealed)
              WHERE sealed LIKE 'v1:%:%') AS parts
    ) AS ids
    WHERE key_id IS NOT NULL
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END
$$;

CREATE TRIGGER register_sealing_keys_insert AFTER INSERT ON action_tasks
    REFERENCING NEW TABLE AS new_action_tasks
    FOR EACH STATEMENT EXECUTE FUNCTION register_action_task_sealing_keys();

-- register_action_task_sealing_keys_row registers the key ids of the
-- sealed columns of one updated task.
CREATE FUNCTION register_action_task_sealing_keys_row() RETURNS trigger
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
BEGIN
    INSERT INTO sealing_keys (key_id)
    SELECT DISTINCT id
    FROM unnest(ARRAY[sealing_key_id(NEW.sealed_input), sealing_key_id(NEW.sealed_output),
                      sealing_key_id(NEW.sealed_error)]) AS u(id)
    WHERE id IS NOT NULL
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END
$$;

CREATE TRIGGER register_sealing_keys_update AFTER UPDATE OF sealed_input, sealed_output, sealed_error ON action_tasks
    FOR EACH ROW
    WHEN (sealing_key_id(NEW.sealed_input) IS DISTINCT FROM sealing_key_id(OLD.sealed_input)
       OR sealing_key_id(NEW.sealed_output) IS DISTINCT FROM sealing_key_id(OLD.sealed_output)
       OR sealing_key_id(NEW.sealed_error) IS DISTINCT FROM sealing_key_id(OLD.sealed_error))
    EXECUTE FUNCTION register_action_task_sealing_keys_row();

-- The key ids of the tasks stored before this migration.
INSERT INTO sealing_keys (key_id)
SELECT id FROM (
    SELECT sealing_key_id(sealed_input) FROM action_tasks
    UNION SELECT sealing_key_id(sealed_output) FROM action_tasks
    UNION SELECT sealing_key_id(sealed_error) FROM action_tasks
) AS s(id)
WHERE id IS NOT NULL
ON CONFLICT DO NOTHING;
