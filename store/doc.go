// Package store is the leaf package shared by every part of connect: the error
// vocabulary, pagination, and the transaction seam that Store implementations
// provide.
//
// It imports nothing of the module. Feature packages (integrations,
// connections, environments, oplog) declare the small Store interfaces they
// consume; the root package composes them into connect.Store. Two
// implementations ship with the module: [github.com/embedauth/connect/store/sqlite],
// one process on one file with nothing to install (or a private in-memory
// database, for tests), and [github.com/embedauth/connect/store/postgres]
// for several instances on a database of their own. Both pass the conformance suite in
// [github.com/embedauth/connect/store/storetest], which a host can run against a
// Store of its own.
//
// # Errors
//
// Store methods report a missing record with an error that matches
// [ErrNotFound] under errors.Is, a uniqueness violation with [ErrConflict], and
// a stale optimistic update with [ErrConflict] as well. Services wrap these in
// [*Error], which carries the wire error code the HTTP layer answers with.
//
// # Secrets
//
// A Store never sees a plaintext secret: credentials, client secrets, signing
// keys and environment variable values reach it already sealed (AES-256-GCM
// under a keyring, see the Sealed* fields of each record), and API keys and
// session tokens only as hashes. A sealed value names the key that sealed
// it ([SealedKeyID]); [SealedValues] lets a Service learn which keys its
// Store needs without reading every value, and a read that meets a value
// under a missing key is an [ErrEncryptionKey] error.
package store
