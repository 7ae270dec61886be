// Package postgres is the production implementation of connect.Store, on
// Postgres through database/sql, sqlx and lib/pq.
//
// The host owns the *sql.DB (any "postgres" database/sql driver works; this
// package imports lib/pq, which registers one) and shares it with its own
// code. Every table lives in one schema, "connect" unless [Options.Schema]
// says otherwise, so the Store sits safely in the host's database.
//
//	if err := postgres.Migrate(ctx, db, nil); err != nil { ... } // once, at start-up
//	s, err := postgres.New(db, nil)
//	...
//	defer s.Close() // before db.Close
//
// # Migrations
//
// [Migrate] applies the embedded migrations (migrations/NNN_name.up.sql) that
// the schema's schema_migrations table does not list, in one transaction
// under an advisory lock. It is idempotent and safe to call from several
// processes at once. [New] never migrates.
//
// # Tables
//
//   - environments: unique name; webhook_urls text[]; webhook_settings and
//     connect_ui jsonb.
//   - api_keys: unique hash (bytea); scopes text[].
//   - environment_variables: primary key (environment_id, name).
//   - integrations: unique (environment_id, unique_key); integration_config
//     jsonb; sealed_credentials and sealed_custom text.
//   - connections: unique (environment_id, integration_key, connection_id);
//     foreign key (environment_id, integration_key) to integrations, ON
//     DELETE CASCADE and ON UPDATE RESTRICT, which is what refuses to rename
//     an integration that has connections; connection_config, metadata, tags
//     (GIN-indexed for the tags filter) and errors jsonb, SQL NULL for nil;
//     version bigint for optimistic updates.
//   - operations_log: text id primary key; indexes for each filter, newest
//     first.
//   - rate_limits: the counters of [RateLimiter].
//
// Timestamps are timestamptz and round-trip exactly to the microsecond;
// they come back in UTC. Plaintext Credentials and Custom fields are never
// written; their Sealed* counterparts are stored verbatim.
//
// # Prepared statements
//
// The hottest queries (GetConnection, UpdateConnection, CountConnections,
// GetIntegration, GetEnvironment, GetEnvironmentByName, GetAPIKeyByHash) run
// through prepared statements: each is prepared on the *sql.DB by its first
// call outside a transaction, then database/sql prepares it on each pooled
// connection that runs it. A call takes one round trip instead of two
// (Parse and Describe, then Bind and Execute), Postgres parses it once per
// connection, and after a few calls it may reuse a generic plan. Inside [Store.WithTx] a statement already prepared is bound to the
// transaction; one not prepared yet runs unprepared, as every other query
// does. [Store.Close] closes the statements.
//
// Set [Options.DisablePreparedStatements] behind PgBouncer in transaction
// or statement pooling mode, where server-side prepared statements do not
// survive from one transaction to the next. Create the Store after
// [Migrate]: a migration that changes the columns a prepared statement
// returns makes it fail ("cached plan must not change result type") on the
// connections where it was prepared. Every query names its tables with the
// schema, so the connections' search_path does not matter.
//
// # Transactions
//
// [Store.WithTx] carries its *sql.Tx in the context; every Store method uses
// it when present, and [TxFromContext] hands it to the host, for example to
// enqueue a job in the same transaction. Updates are optimistic (UPDATE ...
// WHERE version = $n), never SELECT ... FOR UPDATE. Expected refusals
// (duplicates, missing parents, stale versions) are detected without raising
// a database error, so they do not abort an enclosing transaction.
//
// # Errors
//
// Errors match the sentinels of [github.com/embedauth/connect/store]:
// unique violations are ErrConflict, missing parents ErrNotFound, data
// Postgres cannot store (a NUL byte in text, say) ErrInvalid, and
// connection failures, serialization failures and deadlocks ErrUnavailable.
package postgres
