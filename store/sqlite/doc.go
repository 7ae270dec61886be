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
// connections that run beside the writer. The readers map up to 256 MiB of
// the file (mmap_size): a page missing from a reader's own cache, which
// every commit empties, comes from the OS's page cache without a read call
// and a copy.
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
// # Change feed
//
// The Store has a change feed (store.ChangeFeed), as store/postgres does:
// triggers record every update and deletion of a connection or an
// integration in the table connection_changes, in the writing transaction,
// whichever process or Store writes the file (a tool beside the server
// included). A started connect.Service polls it every ChangePollInterval
// and caches the proxy's connections for ProxyCacheMaxAge (minutes)
// instead of ProxyCacheTTL (seconds). SQLite runs one write transaction at
// a time on a file, each from the last commit, so the rows' seq grows in
// commit order: a cursor is the next seq to list ([Store.ChangeCursor]),
// and a poll ([Store.ConnectionChanges]), one statement on the read pool
// (which, on a file, never waits for the writer), never skips a change that
// commits after it. Inserts write no row. The Service's maintenance sweep prunes rows
// older than an hour ([Store.PruneConnectionChanges]). A trigger adds
// about 5 µs of CPU to each connection an update writes (measured on an
// import of 1,000 existing connections: about 40 µs a connection instead
// of 35 in the Store; a bulk POST /connections costs 120-130 µs a
// connection in all).
//
// # Transactions
//
// [Store.WithTx] holds the one writer connection while fn runs. Inside fn,
// call the Store only with fn's context: a write made with another context
// waits for the writer, which fn holds.
package sqlite
