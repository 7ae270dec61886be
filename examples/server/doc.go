// Command server is the reference server: the whole connect Service on one
// HTTP port, configured by environment variables, for teams that drive it
// with the published Nango clients from another language.
//
//	go run ./examples/server
//
// It uses the in-memory store unless DATABASE_URL is set. See the README for
// every variable.
package main
