// Package memory is an in-memory implementation of connect.Store, for tests
// and for trying connect out without a database.
//
// A [Store] keeps every record in maps guarded by one lock, so it is safe for
// concurrent use. It behaves like [github.com/embedauth/connect/store/postgres]:
// both pass the conformance suite in
// [github.com/embedauth/connect/store/storetest].
//
// # Copies
//
// A Store never shares memory with its callers. It copies every record it
// receives and every record it returns, so mutating a returned map or the
// record passed to a Create or Update method never changes what is stored.
// Free-form values (connection config, metadata, log meta) go through a JSON
// round trip on the way in, exactly as they would through a jsonb column:
// numbers come back as float64, and a value JSON cannot encode is rejected
// with an error matching store.ErrInvalid.
//
// # Transactions
//
// [Store.WithTx] holds the store's lock for the whole call and restores the
// state it found if fn returns an error or panics. Inside fn, call the Store
// with the context fn receives: a call made with another context waits for
// the transaction to end and therefore deadlocks if fn waits for it.
//
// [Store.AfterCommit] (store.CommitHooker) queues a function to run once the
// outermost transaction commits, and never if it rolls back; outside a
// transaction it runs the function at once. jobs.Memory uses it, through
// MemoryOptions.Hooker, so that a job enqueued in a transaction exists only
// if the transaction commits.
//
// Webhook delivery bodies are kept byte for byte, as the Postgres store keeps
// them in a bytea column.
//
// # Records
//
// The records of syncs (functions.RecordStore) are kept by scope, each
// with its last Seq. A transaction copies a scope's records before it
// first changes them, rather than every record at its start, so that a
// rollback restores them; outside a transaction a scope changes in place.
// A call reads every record of its scope (ListRecords sorts the scope's
// matches by Seq), and PruneStaleRecords, DeleteOrphanRecords and the
// SealedValues methods read every record of the store: fine at the sizes
// the memory store is meant for.
//
// State is lost when the process exits.
package memory
