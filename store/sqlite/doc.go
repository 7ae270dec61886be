// Package sqlite is a connect.Store on one SQLite database file, through
// modernc.org/sqlite (pure Go: a binary that uses it builds with
// CGO_ENABLED=0). It is the embedded default: durable, with nothing to
// install or run beside the process.
//
// # What it is for
//
// One process on one machine: the reference server started without a
// Postgres URL, an application that runs as a single instance, tests. The
// file is in WAL mode; the Store writes through one connection, taken in
// turn (transactions begin IMMEDIATE, so they never fail halfway on a busy
// lock), and reads outside transactions through a pool of read-only
// connections that run beside the writer.
//
// Use store/postgres when the service outgrows that: several instances
// behind a load balancer, several machines, a database that is backed up,
// replicated and monitored on its own. SQLite allows one writer at a time,
// and its file must be on a local disk (not NFS or another network file
// system, whose locks SQLite cannot trust).
//
// # Durability
//
// A commit is on disk before it is acknowledged (synchronous FULL, as
// Postgres by default); Options.Synchronous "NORMAL" keeps every commit
// through a crash of the process but may lose the last ones when the machine
// loses power.
//
// # Transactions
//
// [Store.WithTx] holds the one writer connection while fn runs. Inside fn,
// call the Store only with fn's context: a write made with another context
// waits for the writer, which fn holds.
package sqlite
