// Command serverload measures the reference server as users run it, on
// each of its stores in one run: its own process on SQLite (its default)
// and on Postgres, a loopback upstream behind the proxy, and many clients.
//
//	go run ./bench/serverload -db 'postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable'
//
// It builds ./examples/server (or takes -server-bin) and starts one server
// per store of -stores (default sqlite,postgres), each with an API key, the
// provider catalogue plus a bench provider whose proxy base URL is the
// upstream, the private-network address policy open for the loopback
// upstream and rate limiting off (-rate-limit):
//
//   - sqlite: the server's default, started with no DATABASE_URL and no
//     key: its data in a fresh CONNECT_DATA_DIR (a directory made in
//     -data-dir, default $TMPDIR, removed at the end), where it makes
//     connect.db and encryption.key at its first start;
//   - postgres: DATABASE_URL, a database the bench creates from -db
//     (default TEST_DATABASE_URL; dropped at the end), and
//     CONNECT_ENCRYPTION_KEY.
//
// With -gomaxprocs (such as 1,2) it starts one server per store and value,
// with GOMAXPROCS set: the first of each store is seeded, the others start
// on a copy of its data (its database as a template, or its files), and
// all of them are measured in the same rounds.
//
// First it measures cold starts (-cold-starts, 3 per store, the stores
// taking turns): exec of the built binary to its first 200 to GET /health,
// polled every 2 ms, on an empty database or data directory (a new one
// each time: the server creates its tables, and on SQLite its key).
//
// Then it starts each store's server, creates an integration through the
// API and seeds -n OAuth 2 connections (tokens a year from expiry, so
// nothing refreshes) with connections.Service.ImportBatch, the bulk
// import, in batches of 500 in this process, on the server's database and
// key (on SQLite the key the server made), several batches at a time,
// while the servers run: one store after the other, each reported in
// connections/s. On SQLite this process opens the server's file with
// store/sqlite's defaults, a second process on the file, which its WAL
// mode allows: the two processes' writers take SQLite's lock in turn. Then
// it stops the servers and starts them again on their data, -cold-starts
// times per store (the cold start with the connections present; the last
// start stays up).
//
// The upstream (a handler answering a 99-byte JSON body) and the baseline,
// a bare httputil.ReverseProxy that sets a fixed Authorization header and
// forwards to the same upstream, are this program started again with a
// -role flag, so that the CPU of every process can be read from
// /proc/<pid>/stat.
//
// Its load generator opens one keep-alive connection per client and keeps
// one request in flight on each, like wrk; each request is for a random one
// of the -n connections (default 1,000), with the bytes
// @nangohq/node@0.71.10 sends. First it sweeps (-sweep, on by default):
// each variant requests each of the -n connections once at the highest
// concurrency, so that the rounds measure a server in steady state, its
// proxy cache holding the connections in use (with -sweep=false and
// 100,000 connections the cache fills during the first rounds). After a
// warm-up it runs, for -rounds rounds, each variant at each concurrency
// (-c, default 1 and 64) for -duration (default 10 s, so that the 10 s
// API-key cache expires during every run). On both stores the server
// follows the change feed, so its proxy keeps connections for up to 5
// minutes. The
// variants of a round, those of every server together, take turns of
// -slice (default 1 s) until each has run -duration, so that a change in
// the load of a shared machine falls on all of them alike, on every store:
//
//   - get, on each server: GET /connections/{id}?provider_config_key=...
//     with credentials (getConnection);
//   - proxy, on each server: GET /proxy/user with Connection-Id and
//     Provider-Config-Key (get({endpoint: '/user', ...}));
//   - bare: the same request to the bare reverse proxy;
//   - direct (only when listed in -variants): the upstream alone.
//
// The servers measured wait idle while the others run.
//
// Every run prints req/s, p50, p99 and the maximum latency (exact, from
// every request's latency), the CPU per request of the server measured,
// of the Postgres sessions of the bench's databases (read from /proc when
// Postgres runs on this machine: a server on SQLite does that work in its
// own process), of the other servers, the upstream, bare proxy and load
// generator, the Postgres sessions opened to the bench's databases during
// the run (pg_stat_database.sessions, Postgres 14+) and open at its end,
// and the connections the upstream accepted. A request that fails, or gets
// another status or body than expected, stops the bench with an error.
//
// The summary gives, per server, variant and concurrency, the median over
// the rounds with the minimum and maximum; the proxy/bare ratios of
// throughput and p99, round by round; SQLite/Postgres of get and proxy,
// req/s and p99, round by round; with -gomaxprocs, each store's req/s at
// each value and their ratios, round by round; the import rates; the cold
// starts; the resident memory of each server (VmRSS and VmHWM of
// /proc/<pid>/status) idle on its data before the sweep and after the
// rounds, with, on Postgres, the private memory of its database's
// sessions; and the goals of issues 13 and 26 at c=64. -json writes all of
// it to a file.
//
// Ctrl-C stops the processes, drops the databases and removes the data
// directories. The machine's load moves the absolute figures: compare the
// variants of one run, which share it.
package main
