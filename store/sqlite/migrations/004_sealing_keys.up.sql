-- The registry of the encryption key ids that sealed values name, so that a
-- Service can check at start, without reading every sealed value, that it
-- holds every key the database needs (SealingKeyIDs).
--
-- Triggers keep it up to date whoever writes: a row inserted with a sealed
-- value "v1:<key id>:<data>", or updated to one under another key,
-- registers the key id (1 to 32 letters, digits, '-' or '_', as
-- store.SealedKeyID reads it). Ids are only removed by ForgetSealingKeyID,
-- once no value names them; its transaction holds the write lock, so no
-- value is written meanwhile. (NOT EXISTS rather than INSERT OR IGNORE: a
-- trigger's OR IGNORE gives way to the conflict rule of the statement that
-- fired it, such as an upsert's.)

CREATE TABLE sealing_keys (
    key_id        TEXT    NOT NULL PRIMARY KEY,
    registered_at INTEGER NOT NULL DEFAULT (CAST(unixepoch('subsec') * 1000000 AS INTEGER))
) STRICT, WITHOUT ROWID;

CREATE TRIGGER environments_sealed_webhook_signing_key_seal_insert AFTER INSERT ON environments
WHEN NEW.sealed_webhook_signing_key GLOB 'v1:?*:*' AND length(substr(NEW.sealed_webhook_signing_key, 4, instr(substr(NEW.sealed_webhook_signing_key, 4), ':') - 1)) <= 32 AND substr(NEW.sealed_webhook_signing_key, 4, instr(substr(NEW.sealed_webhook_signing_key, 4), ':') - 1) NOT GLOB '*[^A-Za-z0-9_-]*'
BEGIN
    INSERT INTO sealing_keys (key_id) SELECT substr(NEW.sealed_webhook_signing_key, 4, instr(substr(NEW.sealed_webhook_signing_key, 4), ':') - 1) WHERE NOT EXISTS (SELECT 1 FROM sealing_keys WHERE key_id = substr(NEW.sealed_webhook_signing_key, 4, instr(substr(NEW.sealed_webhook_signing_key, 4), ':') - 1));
END;

CREATE TRIGGER environments_sealed_webhook_signing_key_seal_update AFTER UPDATE OF sealed_webhook_signing_key ON environments
WHEN NEW.sealed_webhook_signing_key GLOB 'v1:?*:*' AND length(substr(NEW.sealed_webhook_signing_key, 4, instr(substr(NEW.sealed_webhook_signing_key, 4), ':') - 1)) <= 32 AND substr(NEW.sealed_webhook_signing_key, 4, instr(substr(NEW.sealed_webhook_signing_key, 4), ':') - 1) NOT GLOB '*[^A-Za-z0-9_-]*'
    AND (OLD.sealed_webhook_signing_key NOT GLOB 'v1:?*:*' OR substr(OLD.sealed_webhook_signing_key, 4, instr(substr(OLD.sealed_webhook_signing_key, 4), ':') - 1) IS NOT substr(NEW.sealed_webhook_signing_key, 4, instr(substr(NEW.sealed_webhook_signing_key, 4), ':') - 1))
BEGIN
    INSERT INTO sealing_keys (key_id) SELECT substr(NEW.sealed_webhook_signing_key, 4, instr(substr(NEW.sealed_webhook_signing_key, 4), ':') - 1) WHERE NOT EXISTS (SELECT 1 FROM sealing_keys WHERE key_id = substr(NEW.sealed_webhook_signing_key, 4, instr(substr(NEW.sealed_webhook_signing_key, 4), ':') - 1));
END;

CREATE TRIGGER environment_variables_sealed_value_seal_insert AFTER INSERT ON environment_variables
WHEN NEW.sealed_value GLOB 'v1:?*:*' AND length(substr(NEW.sealed_value, 4, instr(substr(NEW.sealed_value, 4), ':') - 1)) <= 32 AND substr(NEW.sealed_value, 4, instr(substr(NEW.sealed_value, 4), ':') - 1) NOT GLOB '*[^A-Za-z0-9_-]*'
BEGIN
    INSERT INTO sealing_keys (key_id) SELECT substr(NEW.sealed_value, 4, instr(substr(NEW.sealed_value, 4), ':') - 1) WHERE NOT EXISTS (SELECT 1 FROM sealing_keys WHERE key_id = substr(NEW.sealed_value, 4, instr(substr(NEW.sealed_value, 4), ':') - 1));
END;

CREATE TRIGGER environment_variables_sealed_value_seal_update AFTER UPDATE OF sealed_value ON environment_variables
WHEN NEW.sealed_value GLOB 'v1:?*:*' AND length(substr(NEW.sealed_value, 4, instr(substr(NEW.sealed_value, 4), ':') - 1)) <= 32 AND substr(NEW.sealed_value, 4, instr(substr(NEW.sealed_value, 4), ':') - 1) NOT GLOB '*[^A-Za-z0-9_-]*'
    AND (OLD.sealed_value NOT GLOB 'v1:?*:*' OR substr(OLD.sealed_value, 4, instr(substr(OLD.sealed_value, 4), ':') - 1) IS NOT substr(NEW.sealed_value, 4, instr(substr(NEW.sealed_value, 4), ':') - 1))
BEGIN
    INSERT INTO sealing_keys (key_id) SELECT substr(NEW.sealed_value, 4, instr(substr(NEW.sealed_value, 4), ':') - 1) WHERE NOT EXISTS (SELECT 1 FROM sealing_keys WHERE key_id = substr(NEW.sealed_value, 4, instr(substr(NEW.sealed_value, 4), ':') - 1));
END;

CREATE TRIGGER integrations_sealed_credentials_seal_insert AFTER INSERT ON integrations
WHEN NEW.sealed_credentials GLOB 'v1:?*:*' AND length(substr(NEW.sealed_credentials, 4, instr(substr(NEW.sealed_credentials, 4), ':') - 1)) <= 32 AND substr(NEW.sealed_credentials, 4, instr(substr(NEW.sealed_credentials, 4), ':') - 1) NOT GLOB '*[^A-Za-z0-9_-]*'
BEGIN
    INSERT INTO sealing_keys (key_id) SELECT substr(NEW.sealed_credentials, 4, instr(substr(NEW.sealed_credentials, 4), ':') - 1) WHERE NOT EXISTS (SELECT 1 FROM sealing_keys WHERE key_id = substr(NEW.sealed_credentials, 4, instr(substr(NEW.sealed_credentials, 4), ':') - 1));
END;

CREATE TRIGGER integrations_sealed_credentials_seal_update AFTER UPDATE OF sealed_credentials ON integrations
WHEN NEW.sealed_credentials GLOB 'v1:?*:*' AND length(substr(NEW.sealed_credentials, 4, instr(substr(NEW.sealed_credentials, 4), ':') - 1)) <= 32 AND substr(NEW.sealed_credentials, 4, instr(substr(NEW.sealed_credentials, 4), ':') - 1) NOT GLOB '*[^A-Za-z0-9_-]*'
    AND (OLD.sealed_credentials NOT GLOB 'v1:?*:*' OR substr(OLD.sealed_credentials, 4, instr(substr(OLD.sealed_credentials, 4), ':') - 1) IS NOT substr(NEW.sealed_credentials, 4, instr(substr(NEW.sealed_credentials, 4), ':') - 1))
BEGIN
    INSERT INTO sealing_keys (key_id) SELECT substr(NEW.sealed_credentials, 4, instr(substr(NEW.sealed_credentials, 4), ':') - 1) WHERE NOT EXISTS (SELECT 1 FROM sealing_keys WHERE key_id = substr(NEW.sealed_credentials, 4, instr(substr(NEW.sealed_credentials, 4), ':') - 1));
END;

CREATE TRIGGER integrations_sealed_custom_seal_insert AFTER INSERT ON integrations
WHEN NEW.sealed_custom GLOB 'v1:?*:*' AND length(substr(NEW.sealed_custom, 4, instr(substr(NEW.sealed_custom, 4), ':') - 1)) <= 32 AND substr(NEW.sealed_custom, 4, instr(substr(NEW.sealed_custom, 4), ':') - 1) NOT GLOB '*[^A-Za-z0-9_-]*'
BEGIN
    INSERT INTO sealing_keys (key_id) SELECT substr(NEW.sealed_custom, 4, instr(substr(NEW.sealed_custom, 4), ':') - 1) WHERE NOT EXISTS (SELECT 1 FROM sealing_keys WHERE key_id = substr(NEW.sealed_custom, 4, instr(substr(NEW.sealed_custom, 4), ':') - 1));
END;

CREATE TRIGGER integrations_sealed_custom_seal_update AFTER UPDATE OF sealed_custom ON integrations
WHEN NEW.sealed_custom GLOB 'v1:?*:*' AND length(substr(NEW.sealed_custom, 4, instr(substr(NEW.sealed_custom, 4), ':') - 1)) <= 32 AND substr(NEW.sealed_custom, 4, instr(substr(NEW.sealed_custom, 4), ':') - 1) NOT GLOB '*[^A-Za-z0-9_-]*'
    AND (OLD.sealed_custom NOT GLOB 'v1:?*:*' OR substr(OLD.sealed_custom, 4, instr(substr(OLD.sealed_custom, 4), ':') - 1) IS NOT substr(NEW.sealed_custom, 4, instr(substr(NEW.sealed_custom, 4), ':') - 1))
BEGIN
    INSERT INTO sealing_keys (key_id) SELECT substr(NEW.sealed_custom, 4, instr(substr(NEW.sealed_custom, 4), ':') - 1) WHERE NOT EXISTS (SELECT 1 FROM sealing_keys WHERE key_id = substr(NEW.sealed_custom, 4, instr(substr(NEW.sealed_custom, 4), ':') - 1));
END;

CREATE TRIGGER connections_sealed_credentials_seal_insert AFTER INSERT ON connections
WHEN NEW.sealed_credentials GLOB 'v1:?*:*' AND length(substr(NEW.sealed_credentials, 4, instr(substr(NEW.sealed_credentials, 4), ':') - 1)) <= 32 AND substr(NEW.sealed_credentials, 4, instr(substr(NEW.sealed_credentials, 4), ':') - 1) NOT GLOB '*[^A-Za-z0-9_-]*'
BEGIN
    INSERT INTO sealing_keys (key_id) SELECT substr(NEW.sealed_credentials, 4, instr(substr(NEW.sealed_credentials, 4), ':') - 1) WHERE NOT EXISTS (SELECT 1 FROM sealing_keys WHERE key_id = substr(NEW.sealed_credentials, 4, instr(substr(NEW.sealed_credentials, 4), ':') - 1));
END;

CREATE TRIGGER connections_sealed_credentials_seal_update AFTER UPDATE OF sealed_credentials ON connections
WHEN NEW.sealed_credentials GLOB 'v1:?*:*' AND length(substr(NEW.sealed_credentials, 4, instr(substr(NEW.sealed_credentials, 4), ':') - 1)) <= 32 AND substr(NEW.sealed_credentials, 4, instr(substr(NEW.sealed_credentials, 4), ':') - 1) NOT GLOB '*[^A-Za-z0-9_-]*'
    AND (OLD.sealed_credentials NOT GLOB 'v1:?*:*' OR substr(OLD.sealed_credentials, 4, instr(substr(OLD.sealed_credentials, 4), ':') - 1) IS NOT substr(NEW.sealed_credentials, 4, instr(substr(NEW.sealed_credentials, 4), ':') - 1))
BEGIN
    INSERT INTO sealing_keys (key_id) SELECT substr(NEW.sealed_credentials, 4, instr(substr(NEW.sealed_credentials, 4), ':') - 1) WHERE NOT EXISTS (SELECT 1 FROM sealing_keys WHERE key_id = substr(NEW.sealed_credentials, 4, instr(substr(NEW.sealed_credentials, 4), ':') - 1));
END;

CREATE TRIGGER connect_sessions_sealed_integrations_config_defaults_seal_insert AFTER INSERT ON connect_sessions
WHEN NEW.sealed_integrations_config_defaults GLOB 'v1:?*:*' AND length(substr(NEW.sealed_integrations_config_defaults, 4, instr(substr(NEW.sealed_integrations_config_defaults, 4), ':') - 1)) <= 32 AND substr(NEW.sealed_integrations_config_defaults, 4, instr(substr(NEW.sealed_integrations_config_defaults, 4), ':') - 1) NOT GLOB '*[^A-Za-z0-9_-]*'
BEGIN
    INSERT INTO sealing_keys (key_id) SELECT substr(NEW.sealed_integrations_config_defaults, 4, instr(substr(NEW.sealed_integrations_config_defaults, 4), ':') - 1) WHERE NOT EXISTS (SELECT 1 FROM sealing_keys WHERE key_id = substr(NEW.sealed_integrations_config_defaults, 4, instr(substr(NEW.sealed_integrations_config_defaults, 4), ':') - 1));
END;

CREATE TRIGGER connect_sessions_sealed_integrations_config_defaults_seal_update AFTER UPDATE OF sealed_integrations_config_defaults ON connect_sessions
WHEN NEW.sealed_integrations_config_defaults GLOB 'v1:?*:*' AND length(substr(NEW.sealed_integrations_config_defaults, 4, instr(substr(NEW.sealed_integrations_config_defaults, 4), ':') - 1)) <= 32 AND substr(NEW.sealed_integrations_config_defaults, 4, instr(substr(NEW.sealed_integrations_config_defaults, 4), ':') - 1) NOT GLOB '*[^A-Za-z0-9_-]*'
    AND (OLD.sealed_integrations_config_defaults NOT GLOB 'v1:?*:*' OR substr(OLD.sealed_integrations_config_defaults, 4, instr(substr(OLD.sealed_integrations_config_defaults, 4), ':') - 1) IS NOT substr(NEW.sealed_integrations_config_defaults, 4, instr(substr(NEW.sealed_integrations_config_defaults, 4), ':') - 1))
BEGIN
    INSERT INTO sealing_keys (key_id) SELECT substr(NEW.sealed_integrations_config_defaults, 4, instr(substr(NEW.sealed_integrations_config_defaults, 4), ':') - 1) WHERE NOT EXISTS (SELECT 1 FROM sealing_keys WHERE key_id = substr(NEW.sealed_integrations_config_defaults, 4, instr(substr(NEW.sealed_integrations_config_defaults, 4), ':') - 1));
END;

CREATE TRIGGER oauth_flows_sealed_secrets_seal_insert AFTER INSERT ON oauth_flows
WHEN NEW.sealed_secrets GLOB 'v1:?*:*' AND length(substr(NEW.sealed_secrets, 4, instr(substr(NEW.sealed_secrets, 4), ':') - 1)) <= 32 AND substr(NEW.sealed_secrets, 4, instr(substr(NEW.sealed_secrets, 4), ':') - 1) NOT GLOB '*[^A-Za-z0-9_-]*'
BEGIN
    INSERT INTO sealing_keys (key_id) SELECT substr(NEW.sealed_secrets, 4, instr(substr(NEW.sealed_secrets, 4), ':') - 1) WHERE NOT EXISTS (SELECT 1 FROM sealing_keys WHERE key_id = substr(NEW.sealed_secrets, 4, instr(substr(NEW.sealed_secrets, 4), ':') - 1));
END;

CREATE TRIGGER oauth_flows_sealed_secrets_seal_update AFTER UPDATE OF sealed_secrets ON oauth_flows
WHEN NEW.sealed_secrets GLOB 'v1:?*:*' AND length(substr(NEW.sealed_secrets, 4, instr(substr(NEW.sealed_secrets, 4), ':') - 1)) <= 32 AND substr(NEW.sealed_secrets, 4, instr(substr(NEW.sealed_secrets, 4), ':') - 1) NOT GLOB '*[^A-Za-z0-9_-]*'
    AND (OLD.sealed_secrets NOT GLOB 'v1:?*:*' OR substr(OLD.sealed_secrets, 4, instr(substr(OLD.sealed_secrets, 4), ':') - 1) IS NOT substr(NEW.sealed_secrets, 4, instr(substr(NEW.sealed_secrets, 4), ':') - 1))
BEGIN
    INSERT INTO sealing_keys (key_id) SELECT substr(NEW.sealed_secrets, 4, instr(substr(NEW.sealed_secrets, 4), ':') - 1) WHERE NOT EXISTS (SELECT 1 FROM sealing_keys WHERE key_id = substr(NEW.sealed_secrets, 4, instr(substr(NEW.sealed_secrets, 4), ':') - 1));
END;

CREATE TRIGGER records_sealed_payload_seal_insert AFTER INSERT ON records
WHEN NEW.sealed_payload GLOB 'v1:?*:*' AND length(substr(NEW.sealed_payload, 4, instr(substr(NEW.sealed_payload, 4), ':') - 1)) <= 32 AND substr(NEW.sealed_payload, 4, instr(substr(NEW.sealed_payload, 4), ':') - 1) NOT GLOB '*[^A-Za-z0-9_-]*'
BEGIN
    INSERT INTO sealing_keys (key_id) SELECT substr(NEW.sealed_payload, 4, instr(substr(NEW.sealed_payload, 4), ':') - 1) WHERE NOT EXISTS (SELECT 1 FROM sealing_keys WHERE key_id = substr(NEW.sealed_payload, 4, instr(substr(NEW.sealed_payload, 4), ':') - 1));
END;

CREATE TRIGGER records_sealed_payload_seal_update AFTER UPDATE OF sealed_payload ON records
WHEN NEW.sealed_payload GLOB 'v1:?*:*' AND length(substr(NEW.sealed_payload, 4, instr(substr(NEW.sealed_payload, 4), ':') - 1)) <= 32 AND substr(NEW.sealed_payload, 4, instr(substr(NEW.sealed_payload, 4), ':') - 1) NOT GLOB '*[^A-Za-z0-9_-]*'
    AND (OLD.sealed_payload NOT GLOB 'v1:?*:*' OR substr(OLD.sealed_payload, 4, instr(substr(OLD.sealed_payload, 4), ':') - 1) IS NOT substr(NEW.sealed_payload, 4, instr(substr(NEW.sealed_payload, 4), ':') - 1))
BEGIN
    INSERT INTO sealing_keys (key_id) SELECT substr(NEW.sealed_payload, 4, instr(substr(NEW.sealed_payload, 4), ':') - 1) WHERE NOT EXISTS (SELECT 1 FROM sealing_keys WHERE key_id = substr(NEW.sealed_payload, 4, instr(substr(NEW.sealed_payload, 4), ':') - 1));
END;

CREATE TRIGGER action_tasks_sealed_input_seal_insert AFTER INSERT ON action_tasks
WHEN NEW.sealed_input GLOB 'v1:?*:*' AND length(substr(NEW.sealed_input, 4, instr(substr(NEW.sealed_input, 4), ':') - 1)) <= 32 AND substr(NEW.sealed_input, 4, instr(substr(NEW.sealed_input, 4), ':') - 1) NOT GLOB '*[^A-Za-z0-9_-]*'
BEGIN
    INSERT INTO sealing_keys (key_id) SELECT substr(NEW.sealed_input, 4, instr(substr(NEW.sealed_input, 4), ':') - 1) WHERE NOT EXISTS (SELECT 1 FROM sealing_keys WHERE key_id = substr(NEW.sealed_input, 4, instr(substr(NEW.sealed_input, 4), ':') - 1));
END;

CREATE TRIGGER action_tasks_sealed_input_seal_update AFTER UPDATE OF sealed_input ON action_tasks
WHEN NEW.sealed_input GLOB 'v1:?*:*' AND length(substr(NEW.sealed_input, 4, instr(substr(NEW.sealed_input, 4), ':') - 1)) <= 32 AND substr(NEW.sealed_input, 4, instr(substr(NEW.sealed_input, 4), ':') - 1) NOT GLOB '*[^A-Za-z0-9_-]*'
    AND (OLD.sealed_input NOT GLOB 'v1:?*:*' OR substr(OLD.sealed_input, 4, instr(substr(OLD.sealed_input, 4), ':') - 1) IS NOT substr(NEW.sealed_input, 4, instr(substr(NEW.sealed_input, 4), ':') - 1))
BEGIN
    INSERT INTO sealing_keys (key_id) SELECT substr(NEW.sealed_input, 4, instr(substr(NEW.sealed_input, 4), ':') - 1) WHERE NOT EXISTS (SELECT 1 FROM sealing_keys WHERE key_id = substr(NEW.sealed_input, 4, instr(substr(NEW.sealed_input, 4), ':') - 1));
END;

CREATE TRIGGER action_tasks_sealed_output_seal_insert AFTER INSERT ON action_tasks
WHEN NEW.sealed_output GLOB 'v1:?*:*' AND length(substr(NEW.sealed_output, 4, instr(substr(NEW.sealed_output, 4), ':') - 1)) <= 32 AND substr(NEW.sealed_output, 4, instr(substr(NEW.sealed_output, 4), ':') - 1) NOT GLOB '*[^A-Za-z0-9_-]*'
BEGIN
    INSERT INTO sealing_keys (key_id) SELECT substr(NEW.sealed_output, 4, instr(substr(NEW.sealed_output, 4), ':') - 1) WHERE NOT EXISTS (SELECT 1 FROM sealing_keys WHERE key_id = substr(NEW.sealed_output, 4, instr(substr(NEW.sealed_output, 4), ':') - 1));
END;

CREATE TRIGGER action_tasks_sealed_output_seal_update AFTER UPDATE OF sealed_output ON action_tasks
WHEN NEW.sealed_output GLOB 'v1:?*:*' AND length(substr(NEW.sealed_output, 4, instr(substr(NEW.sealed_output, 4), ':') - 1)) <= 32 AND substr(NEW.sealed_output, 4, instr(substr(NEW.sealed_output, 4), ':') - 1) NOT GLOB '*[^A-Za-z0-9_-]*'
    AND (OLD.sealed_output NOT GLOB 'v1:?*:*' OR substr(OLD.sealed_output, 4, instr(substr(OLD.sealed_output, 4), ':') - 1) IS NOT substr(NEW.sealed_output, 4, instr(substr(NEW.sealed_output, 4), ':') - 1))
BEGIN
    INSERT INTO sealing_keys (key_id) SELECT substr(NEW.sealed_output, 4, instr(substr(NEW.sealed_output, 4), ':') - 1) WHERE NOT EXISTS (SELECT 1 FROM sealing_keys WHERE key_id = substr(NEW.sealed_output, 4, instr(substr(NEW.sealed_output, 4), ':') - 1));
END;

CREATE TRIGGER action_tasks_sealed_error_seal_insert AFTER INSERT ON action_tasks
WHEN NEW.sealed_error GLOB 'v1:?*:*' AND length(substr(NEW.sealed_error, 4, instr(substr(NEW.sealed_error, 4), ':') - 1)) <= 32 AND substr(NEW.sealed_error, 4, instr(substr(NEW.sealed_error, 4), ':') - 1) NOT GLOB '*[^A-Za-z0-9_-]*'
BEGIN
    INSERT INTO sealing_keys (key_id) SELECT substr(NEW.sealed_error, 4, instr(substr(NEW.sealed_error, 4), ':') - 1) WHERE NOT EXISTS (SELECT 1 FROM sealing_keys WHERE key_id = substr(NEW.sealed_error, 4, instr(substr(NEW.sealed_error, 4), ':') - 1));
END;

CREATE TRIGGER action_tasks_sealed_error_seal_update AFTER UPDATE OF sealed_error ON action_tasks
WHEN NEW.sealed_error GLOB 'v1:?*:*' AND length(substr(NEW.sealed_error, 4, instr(substr(NEW.sealed_error, 4), ':') - 1)) <= 32 AND substr(NEW.sealed_error, 4, instr(substr(NEW.sealed_error, 4), ':') - 1) NOT GLOB '*[^A-Za-z0-9_-]*'
    AND (OLD.sealed_error NOT GLOB 'v1:?*:*' OR substr(OLD.sealed_error, 4, instr(substr(OLD.sealed_error, 4), ':') - 1) IS NOT substr(NEW.sealed_error, 4, instr(substr(NEW.sealed_error, 4), ':') - 1))
BEGIN
    INSERT INTO sealing_keys (key_id) SELECT substr(NEW.sealed_error, 4, instr(substr(NEW.sealed_error, 4), ':') - 1) WHERE NOT EXISTS (SELECT 1 FROM sealing_keys WHERE key_id = substr(NEW.sealed_error, 4, instr(substr(NEW.sealed_error, 4), ':') - 1));
END;
