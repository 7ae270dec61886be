// Package pgtest gives tests a real Postgres, isolated per test.
//
// Tests find the database through the TEST_DATABASE_URL environment
// variable, for example
//
//	TEST_DATABASE_URL='postgres://postgres@127.0.0.1:5432/test?sslmode=disable'
//
// When it is unset, [DB] and [Schema] skip the test, so `go test ./...` passes
// without Postgres; with CONNECT_REQUIRE_POSTGRES=1 (as in CI) they fail it
// instead.
//
// All tests of a process share one small connection pool per URL, so that
// parallel tests and parallel test binaries stay well under Postgres's
// max_connections. A test must not close the pool or change session state
// on it, and should not hold one connection while waiting for another.
//
// [Schema] gives a test an empty schema of its own, dropped when it ends.
// [Migrated] gives it a migrated one from a pool: migrating a schema costs
// Postgres a quarter of a second of CPU, so pooled schemas are emptied after
// their test (rows deleted, sequences restarted) and reused; a package that
// uses it runs [Main] in its TestMain, which drops the pool at the end.
package pgtest
