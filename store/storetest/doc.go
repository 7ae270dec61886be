// Package storetest is the conformance suite of connect's Store: the
// behaviour every implementation must share, written once and run against
// each of them.
//
// [github.com/embedauth/connect/store/sqlite] and
// [github.com/embedauth/connect/store/postgres] run it in their tests, and a
// host that writes a Store of its own runs it too:
//
//	func TestStore(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) storetest.Store {
//			return mystore.New(...) // empty, private to t
//		})
//	}
//
// Each subtest asks newStore for a fresh, empty store and runs in parallel
// with the others (t.Parallel), so newStore must be safe for concurrent use
// and must not return stores that share state.
//
// # What it checks
//
// Create, get, list, update and delete of every record; ErrNotFound for
// missing records and ErrConflict for duplicates; the rules of integration
// keys (unique per environment, not renamed while connections use them,
// deletion cascading to connections); environment isolation; optimistic
// versions of connections; every ListConnections, ListLogs and
// ListDeliveries filter, ordering and pagination; exact round trips (sealed fields verbatim,
// plaintext secrets never persisted, nil versus empty metadata, timestamps to
// the microsecond, webhook bodies byte for byte); copies that do not alias the store; transactions that
// commit, roll back, nest, read their own writes and survive a call that
// failed with ErrNotFound or ErrConflict; concurrent writers; the
// SealedValues registry of key ids (listed after every kind of write,
// counted by kind, forgotten only once no value names them) and
// ResealValues, record payloads and action tasks' inputs, outputs and
// error bodies included (the key of a pending task's input is never
// forgotten; re-sealing keeps a task's Version and UpdatedAt); the records
// of syncs
// (functions.RecordStore: added, updated and unchanged records counted by
// hash, deleted records added again, pruned records updated by a save,
// Seq values above every other of the scope for each change and untouched
// otherwise, isolated scopes, pages by Seq with every filter, touch
// generations, pruning, chunked and orphan deletions, retention, all or
// none in transactions, concurrent saves of one scope, and a reader paging
// by Seq while writers commit that never misses a record); and
// LockConnection (an error outside a transaction, ErrNotFound for a missing
// or concurrently deleted connection, one holder at a time, a waiter that
// proceeds only once the holder committed and then reads its writes, a
// rollback that releases the lock); and, for a Store that implements
// store.ChangeFeed (its group is skipped otherwise), the change feed
// (updates and deletions of connections listed per connection and
// environment, creations not; an integration's update or deletion listed
// as the whole integration; an import listing the connections it updates;
// a rolled back transaction never listed; more pending changes than the
// limit failing with ErrTooManyChanges and listing nothing; pruning by age,
// after which a cursor still lists the next change); and, for a Store that
// implements webhooks.AttemptRecorder (skipped otherwise), recorded attempts
// (each delivery's outcome with its log entry or without one, an attempt of
// a missing delivery skipped, later attempts of one delivery applied after
// earlier ones, all or none in a transaction, an attempt that cannot be
// stored refused alone while the rest of the batch is stored).
//
// Beyond the doc comments of the Store interfaces, the suite pins down these
// choices, which both shipped stores make:
//
//   - Filter.EnvironmentID 0 matches every environment (maintenance only).
//   - Creating an API key or an integration, or setting variables, for a
//     missing environment is ErrNotFound; duplicate variable names are
//     ErrInvalid.
//   - UpdateIntegration and UpdateConnection find the record by ID within
//     the record's EnvironmentID: an ID of another environment is
//     ErrNotFound.
//   - AppendLog with an ID already stored is ErrConflict.
//   - CreateDeliveries stores all of its deliveries or none: an ID already
//     stored or given twice is ErrConflict, a missing environment
//     ErrNotFound (reported first). UpdateDelivery finds the delivery by ID
//     alone. DeliveryFilter.EnvironmentID 0 matches every environment, and
//     ListDeliveries orders by CreatedAt, then ID, both descending. A body
//     comes back byte for byte, never nil (an empty body is empty).
//   - Connect sessions are found by token hash, expired or not; deleting
//     one of another environment is ErrNotFound; DeleteExpiredConnectSessions
//     deletes those that expired strictly before the time, soonest first.
//     A session's nil Tags stay nil and empty Tags stay empty; its plaintext
//     IntegrationsConfigDefaults are never persisted. A connection's session
//     mark survives updates and dies with the connection (a connection
//     created again under the same id is not marked).
//   - Timestamps are given with microsecond precision, as the services
//     store them; JSON values (metadata, config, log meta) come back as
//     encoding/json decodes them (numbers as float64).
//   - Records: a scope needs a connection row id above 0, a model and a
//     variant (the base one is functions.BaseVariant); a record id is 1
//     to functions.MaxRecordIDLen characters, distinct within a save; a
//     save or a deletion takes at most functions.MaxRecordsPerBatch
//     records; a limit below 1, a negative AfterSeq or a filter bit of no
//     filter is ErrInvalid, in every method, and leaves a transaction
//     usable. A page may be larger than functions.MaxRecordsPageLimit (a
//     caller asks for one more record to tell whether more follow).
//     Unknown ids are ignored; RecordQuery.IDs empty means no filter.
//     Seq values may have gaps, and never go back, not even once
//     DeleteAllRecords has emptied the scope. A save without a
//     generation (touch 0) leaves the records' generations as they were.
//     PruneStaleRecords prunes the least recently updated first, deleted
//     records included. A scope's connection is the row of its
//     ConnectionID in its EnvironmentID: DeleteOrphanRecords removes the
//     records of a scope whose row is gone or of another environment.
//   - Text Postgres cannot hold (a NUL byte, invalid UTF-8), anywhere in a
//     record (keys, metadata, tags, log entries) or in a lookup's
//     arguments and filters, is ErrInvalid, never stored with U+FFFD in its
//     place and never ErrNotFound.
package storetest
