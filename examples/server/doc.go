// Command server is the reference server: the whole connect Service on one
// HTTP port, configured by environment variables, for teams that drive it
// with the published Nango clients from another language.
//
//	go run ./examples/server
//
// Without DATABASE_URL it keeps its data in the SQLite file connect.db of
// its data directory (CONNECT_DATA_DIR, default ~/.connect), and, without
// an encryption key given, seals secrets with the key of the file
// encryption.key there, made at the first start. DATABASE_URL names a
// Postgres database (postgres://...) or another SQLite file. See
// docs/configuration.md for every variable.
package main
