// Package postgres is the production implementation of connect.Store, on
// Postgres through database/sql, sqlx and lib/pq.
//
// The host owns the *sql.DB and shares it with its own code. [Open] makes
// one sized for the Store (any "postgres" database/sql driver works too;
// this package imports lib/pq, which registers one). Every table lives in
// one schema, "connect" unless [Options.Schema] says otherwise, so the Store
// sits safely in the host's database.
//
// [Connect] does everything a connect.Service needs in one call: it opens the
// pool, migrates, and returns the Store, the [Scheduler] and the shared
// [RateLimiter] on it (a [Backend]).
//
//	pg, err := postgres.Connect(ctx, os.Getenv("DATABASE_URL"), opts) // opts may be nil
//	...
//	defer pg.Close() // after the Service's Stop
//	svc, err := connect.New(connect.Config{Store: pg.Store, Scheduler: pg.Scheduler, RateLimiter: pg.RateLimiter, ...})
//
// A host that builds the parts itself, or shares a pool it opened, calls
// the functions Connect calls:
//
//	db, err := postgres.Open(ctx, os.Getenv("DATABASE_URL"), opts) // a pool of opts.MaxConns sessions, kept open
//	...
//	defer db.Close()
//	if err := postgres.Migrate(ctx, db, opts); err != nil { ... } // once, at start-up
//	s, err := postgres.New(db, opts)
//	...
//	defer s.Close() // before db.Close
//
// # Connections
//
// One pool serves the Store, the [Scheduler] (River), the webhook outbox and
// the [RateLimiter] of a process. [Open] sizes it: at most [Options.MaxConns]
// sessions ([DefaultMaxConns], 20, by default), all of which stay open while
// idle, so that a busy process never closes a session it will need a moment
// later; a session is closed after [Options.ConnMaxIdleTime] unused (30
// minutes) and replaced [Options.ConnMaxLifetime] after it opened (1 hour).
// A pool left at database/sql's defaults has no limit and keeps 2 idle
// sessions: under concurrent requests it opens a session for most queries
// and closes it again (a fork and an authentication on the server, and the
// Store's prepared statements prepared anew). [New] logs a warning, once,
// when it is handed such a pool (see [Options.Logger]).
//
// What holds a session, and for how long:
//
//   - An API or proxy request: one at a time, for one statement or one
//     transaction. Requests answered from the Service's in-process caches
//     (API keys, the proxy's connections) take none. Refreshing a token
//     holds one for the provider's token request (up to
//     connect.Config.RefreshTimeout, 10 s), since it locks the connection's
//     row until the new token is stored.
//   - The Scheduler: River's short statements, a fetch of due jobs every
//     SchedulerConfig.FetchPollInterval, batched completions, leader
//     election and maintenance, a few sessions at a time at most.
//     SchedulerConfig.Workers (200) are goroutines, not sessions: a job
//     takes a session only while its handler queries, and the webhook job
//     only wakes the outbox.
//   - The webhook outbox: it claims due deliveries and records outcomes
//     in batches, a session or two at a time whatever
//     Webhooks.Concurrency is; the POSTs hold none.
//   - The change feed: one short statement a second per started Service.
//   - The RateLimiter: one short statement per lease, a block of a key's
//     quota for the window (limit/64 requests, at most
//     [Options.RateLimitMaxLease]); the requests admitted from a lease, and
//     those refused once a window's quota is spent, take none.
//
// When every session is busy, a request waits for one (within its
// context's deadline) rather than opening another. Size the pool so that
// MaxConns times the number of processes, plus the host's other clients,
// stays below Postgres' max_connections minus superuser_reserved_connections
// (100 and 3 by default): four processes at the default fit. More sessions
// than about two to four per CPU core of the database server rarely add
// throughput: past that, queries queue inside Postgres instead of in the
// pool. Raise MaxConns when many tokens are refreshed at once (each refresh
// holds a session for its provider call), or when the host's own jobs hold
// sessions; behind PgBouncer, MaxConns bounds the sessions to PgBouncer.
//
// # Migrations
//
// [Migrate] applies the embedded migrations (migrations/NNN_name.up.sql) that
// the schema's schema_migrations table does not list, in one transaction,
// then River's migrations that River's river_migration table does not list,
// each in a transaction of its own, all on one connection under a
// session-level advisory lock (per schema). It is idempotent and safe to
// call from several processes at once. [New] and [NewScheduler] never
// migrate.
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
//     version bigint for optimistic updates; created_by_connect_session
//     boolean, the mark of connections created through a connect session.
//   - connect_sessions: unique token_hash (bytea, the SHA-256 of the token;
//     the token itself is never stored); environment_id references
//     environments, ON DELETE CASCADE; integration_key and connection_id
//     of a reconnect session (empty otherwise); allowed_integrations text[];
//     sealed_integrations_config_defaults text; overrides and tags jsonb;
//     indexed by expires_at for pruning.
//   - operations_log: text id primary key; indexes by environment and by
//     connection, newest first (the lists by type or integration walk the
//     environment's, filtering: each index costs every write, and a bulk
//     import writes an entry per connection); a B-tree on created_at for
//     retention (DeleteLogsBefore; migration 016 replaced the BRIN index
//     that retention's deletions would have made useless).
//   - rate_limits: the counters of [RateLimiter]: per key and window, the
//     requests leased out, which grows by whole blocks and so may pass the
//     limit (the part of a block beyond it is not granted).
//   - sealing_keys: the key ids that sealed values name (see
//     store.SealedValues), kept by triggers on every table with sealed
//     columns (an insert, or an update that moves a sealed column to
//     another key, registers its key id; on connections the insert
//     trigger runs once per statement, on the statement's new rows,
//     since migration 010, so that a bulk import registers its keys once)
//     and filled from existing rows by migration 008; ids are removed
//     only by ForgetSealingKeyID, under a lock that waits for writers
//     registering ids. The triggers of records (migration 013) run once
//     per statement, on its new rows, for inserts and updates alike.
//     Those of action tasks (migration 015, on sealed_input, sealed_output
//     and sealed_error; it registers the tasks stored before it too) run
//     once per statement for inserts, as on connections, and once per
//     row for updates that move a sealed column to another key id, so
//     that a running task's heartbeats never wait for the registry.
//   - action_tasks: the async action tasks (migration 014;
//     functions.ActionStore), with their sealed input, output and error
//     body (empty until the task succeeded or failed), each a kind of
//     store.SealedValues; re-sealing one leaves the task's version alone.
//   - webhook_deliveries: the outbox of outgoing webhooks; text id primary
//     key; environment_id references environments, ON DELETE CASCADE; body
//     bytea, so that the signed bytes come back exactly; unverified, the
//     mark of forwards of provider webhooks no signature verified
//     (migration 017); indexes for
//     listing by environment, by environment and connection, and the failed
//     ones of an environment, newest first; the due index of pending
//     deliveries (next_attempt_at, id), which the function
//     claim_webhook_attempts reads in order (a function so that its plan
//     can be pinned to that index: see migration 007) while it counts the
//     attempt each claim starts (migration 009, recreated by 017 to return
//     unverified too; claim_webhook_deliveries, which does not count,
//     stays for processes of older versions);
//     partial indexes of the finished deliveries by updated_at, for
//     retention (DeleteDeliveriesBefore), and of the finished forward
//     deliveries of each integration, oldest first, for its quota
//     (TrimForwards; migration 016). Retention deletes by id = ANY(array)
//     of the rows it picks, so that no plan scans the table.
//   - webhook_forward_usage: per (environment, integration), what its
//     forward deliveries are charged (webhooks.ForwardCharge: the body, a
//     sixteenth more, three times the URL, integration key and connection
//     id, and 4096 bytes per row), kept in the statements that insert and
//     delete deliveries (migration 016, which counted the bodies of the
//     forwards stored before it; migration 017 counts them all again with
//     the charge). A forward's insert locks its
//     integration's row until the end of its transaction: forwards of one
//     integration commit in turn.
//   - connection_changes: the change feed (migration 011): one row per
//     connection updated or deleted, or per integration (connection_id
//     NULL), written by statement-level triggers on connections and
//     integrations; primary key (txid, seq), txid the writing
//     transaction's xid8.
//   - record_scopes and records: the records of syncs (migration 013;
//     functions.RecordStore). A scope (environment, connection row id,
//     model, variant) has a row in record_scopes, unique on those four,
//     whose lock serialises the scope's writes and whose last_seq hands
//     out the records' Seq values, so that Seq order is commit order
//     within a scope (a save reserves a value per record given, so Seqs
//     have gaps); the row stays when its records are deleted, so Seqs
//     never go back. records: primary key (scope_id, external_id); a
//     unique index (scope_id, seq) for GET /records' pages; a partial
//     index on updated_at of the records not pruned, for retention; the
//     payload (sealed_payload, empty once pruned), its hash, first_seen_at,
//     updated_at, deleted_at and pruned_at; added_seq (the Seq of the
//     write that last added the record, which tells a save's added from
//     its updated rows without reading them first) and touched (the
//     generation of the last save that named the record). No foreign key
//     to connections: deleting a connection stays fast, and
//     DeleteOrphanRecords removes its records later. A save is one
//     statement (the scope's upsert, then the records' upsert from arrays);
//     statements that write up to a limit of rows pick them in a
//     MATERIALIZED common table expression.
//   - river_job, river_leader, river_queue, river_migration,
//     river_notification (and River's river_job_state type and functions):
//     the job queue of [Scheduler], created by River's own migrations.
//
// Timestamps are timestamptz and round-trip exactly to the microsecond;
// they come back in UTC. Plaintext Credentials and Custom fields are never
// written; their Sealed* counterparts are stored verbatim.
//
// # Batched reads of connections
//
// [Store.GetConnection] outside a transaction coalesces concurrent calls:
// a call made while [DefaultReadsInFlight] reads of connections run waits
// for the next read, which fetches every connection asked for meanwhile (up
// to [DefaultReadBatch]) with one query joining the connections table to
// the arrays of their identities. A call made alone reads at once, alone, so
// a quiet server waits for nothing; a loaded one (the proxy with most
// connections not cached, GET /connections/{id}) spends its round trips and
// Postgres' per-statement work on many rows at a time: 100,000 connections
// read at random at 64 clients went from about 9,400 to 27,000 GET
// /connections/{id} a second on a 2-core machine shared with Postgres. Each
// call still reads after it was made, so a change committed before it is
// always seen. Inside [Store.WithTx] the read runs on the transaction, as
// every other query does.
//
// # Change feed
//
// [Store.ConnectionChanges] lists the connections and integrations that any
// process updated or deleted (store.ChangeFeed), so that each process can
// drop what it cached of them: a started connect.Service polls it every
// second and caches the proxy's connections for minutes instead of seconds.
// Its cursor is a floor, the oldest transaction that was running at the
// last poll (pg_snapshot_xmin), with the transactions above the floor whose
// changes were already listed. A poll reads the rows of transactions at or
// above the floor that it has not listed; they are committed, since they
// are visible. A transaction that commits after younger ones is listed in
// the poll after its commit, never skipped, and a long transaction
// elsewhere in the cluster (which holds the floor back) only lengthens the
// list of transactions seen (at most 10,000: beyond, the caller starts
// again from a new cursor and drops its cache). Inserts write no row: a
// connection that does not exist is never cached. Rows older than an hour
// are pruned by the Service's maintenance sweep
// ([Store.PruneConnectionChanges]).
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
// enqueue a job in the same transaction. [Store.AfterCommit]
// (store.CommitHooker) runs a function once the transaction commits. Updates are optimistic (UPDATE ...
// WHERE version = $n), never SELECT ... FOR UPDATE. Expected refusals
// (duplicates, missing parents, stale versions) are detected without raising
// a database error, so they do not abort an enclosing transaction.
//
// # Jobs
//
// [NewScheduler] returns a jobs.Scheduler built on River
// (github.com/riverqueue/river) through its riverdatabasesql driver, on the
// Store's *sql.DB and schema: one pool serves the Store and the jobs, and
// River needs no connection of its own beyond short borrows from it.
//
//	sched, err := postgres.NewScheduler(db, opts, postgres.SchedulerConfig{})
//	sched.Register("webhooks.deliver", deliver)
//	sched.Start(ctx)
//	defer sched.Stop(stopCtx)
//	...
//	s.WithTx(ctx, func(ctx context.Context) error {
//		// ... the Store's writes ...
//		return sched.Enqueue(ctx, jobs.Job{Kind: "webhooks.deliver", Args: args})
//	})
//
// Enqueue with a context from [Store.WithTx] inserts the jobs in that
// transaction, with River's InsertManyTx, so they exist if and only if it
// commits. Every process of a fleet runs a Scheduler on the same schema,
// and River hands each job to one of them.
//
// River is configured as follows. Every job is one River kind,
// "connect_job", in River's default queue, whose arguments carry the job's
// Kind and Args (as jsonb); one River worker dispatches it to the handler
// registered for its Kind. The database/sql driver has no LISTEN, so River
// runs in poll-only mode: each process looks for due jobs every
// SchedulerConfig.FetchPollInterval (100 ms by default), and a job
// enqueued by this process outside a transaction is fetched at once. River
// records outcomes in batches, at least every 250 ms. JobTimeout (1 minute
// by default) cancels a job's context; RescueStuckJobsAfter (JobTimeout plus
// 1 minute by default) is when River, on the elected leader process, makes a
// job whose process died available again. MaxAttempts, RunAt, Snooze and
// Cancel map to River's InsertOpts.MaxAttempts, InsertOpts.ScheduledAt,
// JobSnooze and JobCancel; a RunAt at most 5 seconds ahead is inserted
// available (not scheduled) so that it starts on time rather than at
// River's next 5-second scheduling pass. A job cancelled by Stop is snoozed
// for zero seconds (River's advice for shutdown), so the attempt does not
// count. River deletes completed and cancelled jobs after 24 hours and
// discarded (failed) ones after 7 days.
//
// # Errors
//
// Errors match the sentinels of [github.com/embedauth/connect/store]:
// unique violations are ErrConflict, missing parents ErrNotFound, data
// Postgres cannot store (a NUL byte in text, say) ErrInvalid, and
// connection failures, serialization failures and deadlocks ErrUnavailable.
package postgres
