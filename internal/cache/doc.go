// Package cache is the in-process cache of the Service's hot reads: the
// principals of API keys and the webhook signing keys of environments
// (package environments), and the proxy's connections with their
// credentials (package connect).
//
// A [Cache] maps keys to values that its Load function reads from the Store
// on demand, and serves each value for at most its TTL after the load that
// read it started, so a value changed behind its back (by another process)
// is served for at most that long. What it adds to a plain map with
// expiry is what a hot path under concurrent load needs:
//
//   - Single flight per key: the requests that need a key's value while
//     it is being loaded wait for that one load instead of each reading
//     the Store (a stampede when a popular entry expires).
//   - Refresh ahead of expiry: a request that finds a value in the last
//     quarter of its TTL (Config.RefreshAfter) is answered from it and
//     starts one load in the background, so a value in use is replaced
//     before it expires and no request waits for the Store.
//   - Errors are never cached. A refresh that fails leaves the value to be
//     served until it expires (and is not tried again before), unless
//     Config.Gone says the value no longer exists (a key revoked
//     elsewhere), which drops it at once.
//   - Invalidation that wins over loads in flight: after Delete or
//     DeleteFunc returns, no Get returns the dropped value, and a load
//     that started before it does not store what it read.
//   - Bounded memory: at most Config.MaxEntries entries (an entry per live
//     key; a full cache evicts expired or old entries).
package cache
