// Package console serves the operations console: a browser application,
// embedded in the binary, that shows and fixes an environment's
// connections, syncs, records, operations log, webhook deliveries,
// integrations, functions and settings. It calls the same JSON API as
// every client, with an API key the operator gives it (kept in the tab's
// session storage), so a key's scopes decide what the console may do.
package console
