-- The core tables: environments, API keys, environment variables,
-- integrations, connections, connect sessions, OAuth flows and the
-- operations log. Timestamps are INTEGER microseconds since the Unix epoch
-- (UTC); JSON values are TEXT, NULL for a nil map or slice; hashes are
-- BLOBs. Table and column names are those of the Postgres store.
--
-- Ids are AUTOINCREMENT, as Postgres identities are: an id is never given
-- again once its row is deleted (a connection's id names its records, sync
-- runs and tasks, and a cache may hold it).

CREATE TABLE environments (
    id                         INTEGER PRIMARY KEY AUTOINCREMENT,
    account                    TEXT    NOT NULL,
    name                       TEXT    NOT NULL UNIQUE,
    webhook_urls               TEXT,             -- JSON array
    sealed_webhook_signing_key TEXT    NOT NULL,
    webhook_settings           TEXT    NOT NULL, -- JSON object
    connect_ui                 TEXT    NOT NULL, -- JSON object
    callback_url               TEXT    NOT NULL,
    created_at                 INTEGER NOT NULL,
    updated_at                 INTEGER NOT NULL
) STRICT;

CREATE TABLE api_keys (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    environment_id INTEGER NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
    name           TEXT    NOT NULL,
    hash           BLOB    NOT NULL UNIQUE, -- GetAPIKeyByHash
    hint           TEXT    NOT NULL,
    scopes         TEXT,                    -- JSON array
    created_at     INTEGER NOT NULL
) STRICT;

-- ListAPIKeys, in id order (the rowid ends every index entry).
CREATE INDEX api_keys_environment_id_idx ON api_keys (environment_id);

-- Listed by name, byte-wise (BINARY, as Postgres' COLLATE "C").
CREATE TABLE environment_variables (
    environment_id INTEGER NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
    name           TEXT    NOT NULL,
    sealed_value   TEXT    NOT NULL,
    PRIMARY KEY (environment_id, name)
) STRICT, WITHOUT ROWID;

CREATE TABLE integrations (
    id                 INTEGER PRIMARY KEY AUTOINCREMENT,
    environment_id     INTEGER NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
    unique_key         TEXT    NOT NULL,
    provider           TEXT    NOT NULL,
    display_name       TEXT    NOT NULL,
    forward_webhooks   INTEGER NOT NULL, -- 0 or 1
    integration_config TEXT,             -- JSON object
    sealed_credentials TEXT    NOT NULL,
    sealed_custom      TEXT    NOT NULL,
    created_at         INTEGER NOT NULL,
    updated_at         INTEGER NOT NULL,
    UNIQUE (environment_id, unique_key) -- GetIntegration; the connections' foreign key
) STRICT;

-- A connection points at its integration by key. ON UPDATE RESTRICT refuses
-- to rename an integration that has connections; ON DELETE CASCADE deletes
-- them with it.
--
-- connection_id_folded is connection_id in lower case (Go's
-- strings.ToLower, written by the Store: the identity never changes), what
-- ListConnections' Search looks in: SQLite's own lower() and LIKE fold ASCII
-- letters only.
CREATE TABLE connections (
    id                         INTEGER PRIMARY KEY AUTOINCREMENT,
    environment_id             INTEGER NOT NULL,
    integration_key            TEXT    NOT NULL,
    connection_id              TEXT    NOT NULL,
    connection_id_folded       TEXT    NOT NULL,
    provider                   TEXT    NOT NULL,
    connection_config          TEXT,             -- JSON object
    metadata                   TEXT,             -- JSON object
    tags                       TEXT,             -- JSON object of strings
    webhook_url_override       TEXT    NOT NULL,
    auth_mode                  TEXT    NOT NULL,
    sealed_credentials         TEXT    NOT NULL,
    credentials_expires_at     INTEGER,
    errors                     TEXT,             -- JSON array
    last_fetched_at            INTEGER,
    last_refresh_failure       INTEGER,
    refresh_attempts           INTEGER NOT NULL,
    created_by_connect_session INTEGER NOT NULL DEFAULT 0, -- 0 or 1
    version                    INTEGER NOT NULL,
    created_at                 INTEGER NOT NULL,
    updated_at                 INTEGER NOT NULL,
    -- GetConnection, CountConnections, the identity of imports.
    UNIQUE (environment_id, integration_key, connection_id),
    FOREIGN KEY (environment_id, integration_key)
        REFERENCES integrations (environment_id, unique_key)
        ON DELETE CASCADE ON UPDATE RESTRICT
) STRICT;

-- ListConnections of an environment, in id order.
CREATE INDEX connections_environment_id_idx ON connections (environment_id);
-- The filter on a connection id across integrations, in id order.
CREATE INDEX connections_environment_id_connection_id_idx ON connections (environment_id, connection_id);
-- Refresh sweeps (ExpiresBefore).
CREATE INDEX connections_credentials_expires_at_idx ON connections (credentials_expires_at)
    WHERE credentials_expires_at IS NOT NULL;

-- Connect sessions: short-lived tokens that let an end user's browser create
-- (or, bound to one connection, re-authorize) connections. Only the SHA-256
-- of a token is stored.
CREATE TABLE connect_sessions (
    id                                  INTEGER PRIMARY KEY AUTOINCREMENT,
    environment_id                      INTEGER NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
    token_hash                          BLOB    NOT NULL UNIQUE, -- GetConnectSession
    -- Set together on a reconnect session; empty otherwise.
    integration_key                     TEXT    NOT NULL,
    connection_id                       TEXT    NOT NULL,
    allowed_integrations                TEXT,             -- JSON array
    sealed_integrations_config_defaults TEXT    NOT NULL,
    overrides                           TEXT,             -- JSON object
    tags                                TEXT,             -- JSON object of strings
    webhook_url_override                TEXT    NOT NULL,
    created_at                          INTEGER NOT NULL,
    expires_at                          INTEGER NOT NULL
) STRICT;

-- Pruning of expired sessions, soonest expired first.
CREATE INDEX connect_sessions_expires_at_idx ON connect_sessions (expires_at);

-- OAuth flows in progress: one row per trip of an end user's browser to a
-- provider and back, started by a connect session. The state (or OAuth 1
-- request token) is stored only as its SHA-256.
CREATE TABLE oauth_flows (
    id                   INTEGER PRIMARY KEY AUTOINCREMENT,
    environment_id       INTEGER NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
    session_id           INTEGER NOT NULL,
    state_hash           BLOB    NOT NULL UNIQUE, -- ClaimOAuthFlow
    client_id            TEXT    NOT NULL,
    integration_key      TEXT    NOT NULL,
    provider             TEXT    NOT NULL,
    auth_mode            TEXT    NOT NULL,
    connection_id        TEXT    NOT NULL,
    reconnect            INTEGER NOT NULL, -- 0 or 1
    connection_config    TEXT,             -- JSON object
    tags                 TEXT,             -- JSON object of strings
    webhook_url_override TEXT    NOT NULL,
    scopes               TEXT,             -- JSON array
    sealed_secrets       TEXT    NOT NULL,
    browser_hash         BLOB    NOT NULL,
    status               TEXT    NOT NULL,
    error_type           TEXT    NOT NULL,
    error_message        TEXT    NOT NULL,
    created_at           INTEGER NOT NULL,
    expires_at           INTEGER NOT NULL,
    completed_at         INTEGER
) STRICT;

-- The status poll and the WebSocket find the newest flow of a client id.
CREATE INDEX oauth_flows_client_id_idx ON oauth_flows (client_id, id) WHERE client_id <> '';
-- Pruning of expired flows, soonest expired first.
CREATE INDEX oauth_flows_expires_at_idx ON oauth_flows (expires_at);

-- The operations log: written once per connection imported, refresh,
-- logged proxy call or webhook sent; read by ListLogs, newest first (by
-- created_at, then id), by environment, optionally by type, integration or
-- connection. The lists by type and by integration walk the environment's
-- index and filter (types and integrations are few and common), while a
-- connection id is rare and has its own index. Ids are random text.
CREATE TABLE operations_log (
    id              TEXT    NOT NULL PRIMARY KEY,
    environment_id  INTEGER NOT NULL,
    type            TEXT    NOT NULL,
    operation       TEXT    NOT NULL,
    status          TEXT    NOT NULL,
    integration_key TEXT    NOT NULL,
    connection_id   TEXT    NOT NULL,
    message         TEXT    NOT NULL,
    meta            TEXT,             -- JSON object
    created_at      INTEGER NOT NULL
) STRICT;

CREATE INDEX operations_log_environment_id_created_at_idx
    ON operations_log (environment_id, created_at, id);
CREATE INDEX operations_log_environment_id_connection_id_created_at_idx
    ON operations_log (environment_id, connection_id, created_at, id);
-- ListLogs of every environment, and retention (DeleteLogsBefore), oldest
-- first.
CREATE INDEX operations_log_created_at_idx ON operations_log (created_at, id);
