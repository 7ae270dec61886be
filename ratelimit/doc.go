// Package ratelimit decides whether a request may proceed under a budget of
// requests per time window.
//
// [Limiter] is the seam: [FixedWindow] keeps its counters in memory, for a
// single process; the Postgres RateLimiter in
// [github.com/embedauth/connect/store/postgres] shares them through the
// database so that a fleet of processes enforces one limit. It leases blocks
// of each window's quota to the process, which decides most requests in
// memory: a fleet never admits more than the limit, and may admit a little
// less (what a process leased but did not use when the window ends).
//
// Both count fixed windows aligned to multiples of the window length: a key
// gets limit requests per window, and a refused request learns in
// Decision.RetryAfter exactly how long remains until the next window.
// Rounding that up to whole seconds for a Retry-After header is the HTTP
// layer's job.
package ratelimit
