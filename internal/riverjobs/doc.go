// Package riverjobs is the [jobs.Scheduler] built on River
// (github.com/riverqueue/river) for any River driver on database/sql: the
// part of a SQL store's Scheduler that does not depend on the database.
// store/postgres wraps it around River's riverdatabasesql driver
// (postgres.NewScheduler); an SQLite store wraps it around riversqlite.
//
// # What a store provides
//
// A store calls [New] with River's driver on the store's own *sql.DB, so
// that River needs no pool of its own, and a [Config] that says:
//
//   - TxFromContext: the transaction of the store's WithTx that ctx
//     carries, when ctx is (derived from) the context WithTx handed to its
//     function and WithTx has not returned. Enqueue then inserts the jobs
//     in that transaction (River's InsertManyTx), so they exist if and only
//     if it commits. It must return only transactions on the driver's
//     *sql.DB; a store whose contexts may carry a transaction of another
//     pool refuses those before calling Enqueue (store/postgres does).
//   - Name, which prefixes every error ("postgres", "sqlite").
//   - Schema: River's Config.Schema, where River's tables are (empty for
//     the search path, or SQLite's main database).
//   - WrapErr (optional): how the store reports a database error of
//     Enqueue or Start, such as store/postgres classifying lib/pq's codes
//     into store.ErrUnavailable.
//
// River's migrations are the store's to run, before Start or Enqueue:
// rivermigrate.New(driver, &rivermigrate.Config{Schema: schema}) and its
// Migrate (store/postgres runs them one per transaction, under its
// migration lock). Start fails when river_job is missing.
//
// # SQLite
//
// SQLite has one writer. A SQLite store opens its database with WAL, a busy
// timeout and immediate transactions, and gives River and itself one *sql.DB
// of one connection:
//
//	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)"+
//		"&_pragma=busy_timeout(10000)&_pragma=synchronous(NORMAL)&_txlock=immediate")
//	db.SetMaxOpenConns(1)
//	sched, err := riverjobs.New(riversqlite.New(db), riverjobs.Config{
//		Name:          "sqlite",
//		TxFromContext: txFromContext, // the *sql.Tx of the store's WithTx
//	})
//
// With one connection, a goroutine that holds the connection in a
// transaction and then waits for another use of the pool waits forever.
// The Scheduler therefore always inserts into the transaction of ctx when
// there is one, and TxFromContext must find it whenever the store's own
// methods would. For the same reason, do not call Start or Stop with the
// context of a transaction: River's own work (fetching, completing jobs,
// electing a leader) borrows the connection. Jobs' handlers may use the
// store freely: River holds no connection while a handler runs.
//
// riversqlite has no LISTEN/NOTIFY: it polls a river_notification table
// (every 50 ms), and each process also looks for due jobs every
// FetchPollInterval. River refuses a FetchPollInterval shorter than
// FetchCooldown; [New] sets FetchCooldown to at most FetchPollInterval.
//
// # River's configuration
//
// Every job is one River kind, "connect_job", in River's default queue,
// whose arguments carry the job's Kind and Args; one River worker hands
// each to the handler registered for its Kind. MaxAttempts, RunAt, Snooze
// and Cancel map to River's InsertOpts.MaxAttempts, InsertOpts.ScheduledAt,
// JobSnooze and JobCancel; a UniqueKey to River's UniqueOpts by the job's
// Kind and UniqueKey among waiting and running jobs. A RunAt at most 5
// seconds ahead is inserted available (not scheduled), so that it starts on
// time rather than at River's next 5-second scheduling pass. A job whose
// context Stop cancelled is snoozed for zero seconds, so that the attempt
// does not count.
package riverjobs
