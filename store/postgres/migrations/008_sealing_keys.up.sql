-- The registry of the encryption key ids that sealed values name, so that a
-- Service can check at start, without reading every sealed value, that it
-- holds every key the database needs. Runs with search_path set to the
-- target schema.
--
-- Triggers keep it up to date whoever writes (any instance, any version of
-- the code that has this migration): a row inserted with a sealed value,
-- or updated to a value sealed under another key, registers the key id.
-- Ids are only removed by the Store's ForgetSealingKeyID, once no value
-- names them.

CREATE TABLE sealing_keys (
    key_id        text        COLLATE "C" PRIMARY KEY,
    registered_at timestamptz NOT NULL DEFAULT now()
);

-- sealing_key_id returns the key id of a sealed value "v1:<key id>:<data>",
-- or NULL for anything else (an empty value).
CREATE FUNCTION sealing_key_id(sealed text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT substring(sealed FROM '^v1:([A-Za-z0-9_-]{1,32}):') $$;

-- register_sealing_keys registers the key ids of the sealed columns of the
-- row. Its INSERT takes the table's ROW EXCLUSIVE lock even when the id is
-- registered already, which ForgetSealingKeyID's SHARE ROW EXCLUSIVE lock
-- waits for: a key id is never dropped while a value naming it is being
-- written.
CREATE FUNCTION register_sealing_keys() RETURNS trigger
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
DECLARE
    ids text[];
BEGIN
    CASE TG_TABLE_NAME
    WHEN 'environments' THEN
        ids := ARRAY[sealing_key_id(NEW.sealed_webhook_signing_key)];
    WHEN 'environment_variables' THEN
        ids := ARRAY[sealing_key_id(NEW.sealed_value)];
    WHEN 'integrations' THEN
        ids := ARRAY[sealing_key_id(NEW.sealed_credentials), sealing_key_id(NEW.sealed_custom)];
    WHEN 'connections' THEN
        ids := ARRAY[sealing_key_id(NEW.sealed_credentials)];
    WHEN 'connect_sessions' THEN
        ids := ARRAY[sealing_key_id(NEW.sealed_integrations_config_defaults)];
    WHEN 'oauth_flows' THEN
        ids := ARRAY[sealing_key_id(NEW.sealed_secrets)];
    END CASE;
    INSERT INTO sealing_keys (key_id)
    SELECT DISTINCT id FROM unnest(ids) AS u(id) WHERE id IS NOT NULL
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END
$$;

-- Every insert registers; an update only when a sealed column moves to
-- another key (a refresh re-sealing under the same key costs nothing).
CREATE TRIGGER register_sealing_keys_insert AFTER INSERT ON environments
    FOR EACH ROW EXECUTE FUNCTION register_sealing_keys();
CREATE TRIGGER register_sealing_keys_update AFTER UPDATE OF sealed_webhook_signing_key ON environments
    FOR EACH ROW
    WHEN (sealing_key_id(NEW.sealed_webhook_signing_key) IS DISTINCT FROM sealing_key_id(OLD.sealed_webhook_signing_key))
    EXECUTE FUNCTION register_sealing_keys();

CREATE TRIGGER register_sealing_keys_insert AFTER INSERT ON environment_variables
    FOR EACH ROW EXECUTE FUNCTION register_sealing_keys();
CREATE TRIGGER register_sealing_keys_update AFTER UPDATE OF sealed_value ON environment_variables
    FOR EACH ROW
    WHEN (sealing_key_id(NEW.sealed_value) IS DISTINCT FROM sealing_key_id(OLD.sealed_value))
    EXECUTE FUNCTION register_sealing_keys();

CREATE TRIGGER register_sealing_keys_insert AFTER INSERT ON integrations
    FOR EACH ROW EXECUTE FUNCTION register_sealing_keys();
CREATE TRIGGER register_sealing_keys_update AFTER UPDATE OF sealed_credentials, sealed_custom ON integrations
    FOR EACH ROW
    WHEN (sealing_key_id(NEW.sealed_credentials) IS DISTINCT FROM sealing_key_id(OLD.sealed_credentials)
       OR sealing_key_id(NEW.sealed_custom) IS DISTINCT FROM sealing_key_id(OLD.sealed_custom))
    EXECUTE FUNCTION register_sealing_keys();

CREATE TRIGGER register_sealing_keys_insert AFTER INSERT ON connections
    FOR EACH ROW EXECUTE FUNCTION register_sealing_keys();
CREATE TRIGGER register_sealing_keys_update AFTER UPDATE OF sealed_credentials ON connections
    FOR EACH ROW
    WHEN (sealing_key_id(NEW.sealed_credentials) IS DISTINCT FROM sealing_key_id(OLD.sealed_credentials))
    EXECUTE FUNCTION register_sealing_keys();

CREATE TRIGGER register_sealing_keys_insert AFTER INSERT ON connect_sessions
    FOR EACH ROW EXECUTE FUNCTION register_sealing_keys();
CREATE TRIGGER register_sealing_keys_update AFTER UPDATE OF sealed_integrations_config_defaults ON connect_sessions
    FOR EACH ROW
    WHEN (sealing_key_id(NEW.sealed_integrations_config_defaults)
          IS DISTINCT FROM sealing_key_id(OLD.sealed_integrations_config_defaults))
    EXECUTE FUNCTION register_sealing_keys();

CREATE TRIGGER register_sealing_keys_insert AFTER INSERT ON oauth_flows
    FOR EACH ROW EXECUTE FUNCTION register_sealing_keys();
CREATE TRIGGER register_sealing_keys_update AFTER UPDATE OF sealed_secrets ON oauth_flows
    FOR EACH ROW
    WHEN (sealing_key_id(NEW.sealed_secrets) IS DISTINCT FROM sealing_key_id(OLD.sealed_secrets))
    EXECUTE FUNCTION register_sealing_keys();

-- The key ids of the values stored before this migration.
INSERT INTO sealing_keys (key_id)
SELECT id FROM (
    SELECT sealing_key_id(sealed_webhook_signing_key) FROM environments
    UNION SELECT sealing_key_id(sealed_value) FROM environment_variables
    UNION SELECT sealing_key_id(sealed_credentials) FROM integrations
    UNION SELECT sealing_key_id(sealed_custom) FROM integrations
    UNION SELECT sealing_key_id(sealed_credentials) FROM connections
    UNION SELECT sealing_key_id(sealed_integrations_config_defaults) FROM connect_sessions
    UNION SELECT sealing_key_id(sealed_secrets) FROM oauth_flows
) AS s(id)
WHERE id IS NOT NULL
ON CONFLICT DO NOTHING;
