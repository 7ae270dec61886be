// Command serverload measures the reference server as users run it: its
// own process on Postgres, a loopback upstream behind the proxy, and many
// clients.
//
//	go run ./bench/serverload -db 'postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable'
//
// It creates a database of its own (dropped at the end), builds
// ./examples/server (or takes -server-bin) and starts it on that database
// with an encryption key, an API key, the provider catalogue plus a bench
// provider whose proxy base URL is the upstream, the private-network
// address policy open for the loopback upstream and rate limiting off
// (-rate-limit). It creates an integration through the API and seeds -n
// OAuth 2 connections (tokens a year from expiry, so nothing refreshes)
// with connections.Service.ImportBatch, the bulk import, in batches of 500
// in this process, on the server's database and key, several batches at a
// time.
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
// warm-up it runs, for -rounds rounds,
// each variant at each concurrency (-c, default 1 and 64) for -duration
// (default 10 s, so that the 10 s API-key cache expires during every run;
// the server follows the change feed, so the proxy keeps connections for
// 5 minutes). The variants of a round take
// turns of -slice (default 1 s) until each has run -duration, so that a
// change in the load of a shared machine falls on all of them alike:
//
//   - get: GET /connections/{id}?provider_config_key=... with credentials
//     (getConnection);
//   - proxy: GET /proxy/user with Connection-Id and Provider-Config-Key
//     (get({endpoint: '/user', ...}));
//   - bare: the same request to the bare reverse proxy;
//   - direct (only when listed in -variants): the upstream alone.
//
// Every run prints req/s, p50, p99 and the maximum latency (exact, from
// every request's latency), the CPU per request of the server, upstream,
// bare proxy and load generator, the Postgres sessions opened to the
// database during the run (pg_stat_database.sessions, Postgres 14+) and
// open at its end, and the connections the upstream accepted. A request
// that fails, or gets another status or body than expected, stops the
// bench with an error. The summary gives, per variant and concurrency, the
// median over the rounds with the minimum and maximum; the proxy/bare
// ratios of throughput and p99, round by round; and the goals of issue 13
// at c=64. -json writes all of it to a file.
//
// Ctrl-C stops the processes and drops the database. The machine's load
// moves the absolute figures: compare the variants of one run, which share
// it.
package main
