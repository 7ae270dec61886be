package cache

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Defaults of Config.
const (
	// DefaultMaxEntries is the default of Config.MaxEntries.
	DefaultMaxEntries = 10000
	// DefaultRefreshTimeout is the default of Config.RefreshTimeout.
	DefaultRefreshTimeout = 30 * time.Second
	// evictSample is how many entries a full cache looks at to choose the
	// one to evict.
	evictSample = 8
)

// ErrLoadPanicked is the error of the callers waiting on a load that
// panicked (the panic goes on in the goroutine that ran it).
var ErrLoadPanicked = errors.New("cache: the load panicked")

// Config configures a Cache. Load and TTL are required.
type Config[K comparable, V any] struct {
	// Load reads the value of a key from the source of truth. It runs in
	// the goroutine of the request that needs the value (with its
	// context), or, for a refresh ahead of expiry, in a goroutine of its
	// own with a context of its own (see RefreshTimeout). Its errors are
	// never cached.
	Load func(ctx context.Context, k K) (V, error)

	// TTL is how long a value may be served after its load started: a
	// value changed behind the cache's back is served for at most this
	// long. Zero or negative disables caching: every Get loads.
	TTL time.Duration

	// RefreshAfter is the age from which a Get that finds the value still
	// serves it but starts a refresh in the background, so that a value in
	// use is replaced before it expires and no request waits for it.
	// Defaults to three quarters of TTL; TTL or more disables refreshes
	// ahead of expiry.
	RefreshAfter time.Duration

	// Fresh, when set, reports whether a cached value may still be served
	// at now (a token due for refresh may not): when it returns false the
	// Get loads the value again, as for an expired one.
	Fresh func(v V, now time.Time) bool

	// Gone, when set, reports whether the error of a refresh ahead of
	// expiry means that the value no longer exists (a key revoked, a
	// record deleted): the entry is then dropped at once. Any other error
	// of a refresh leaves the entry to be served until it expires (a
	// database that fails for a moment does not fail the requests the
	// cache can answer) without another refresh: the first Get after it
	// expires loads it.
	Gone func(err error) bool

	// RefreshTimeout bounds a refresh ahead of expiry, which runs with a
	// context of its own: the request that started it does not wait for
	// it. Defaults to DefaultRefreshTimeout.
	RefreshTimeout time.Duration

	// RefreshFailed, when set, is told of each refresh ahead of expiry
	// that failed with an error other than Gone (to log it).
	RefreshFailed func(k K, err error)

	// MaxEntries bounds the number of entries: a cache that is full evicts
	// an expired entry, or the oldest of a few it samples, to make room.
	// Defaults to DefaultMaxEntries.
	MaxEntries int

	// Now returns the current time. Defaults to time.Now.
	Now func() time.Time
}

// Cache is a map from keys to values loaded on demand, safe for concurrent
// use. Loads are single-flight per key: of the Gets that need a key's value
// at the same time, one loads it and the others wait for its result; a
// value in use is refreshed ahead of expiry by one background load while
// the cached value keeps being served; errors are never cached; Delete
// and DeleteFunc take effect at once, even over loads in flight.
type Cache[K comparable, V any] struct {
	cfg      Config[K, V]
	disabled bool // Config.TTL was not positive: every Get loads

	mu sync.RWMutex
	// ttl and refreshAfter start as Config.TTL and Config.RefreshAfter;
	// SetTTL changes them. Guarded by mu.
	ttl, refreshAfter time.Duration
	entries           map[K]*entry[V]  // guarded by mu
	flights           map[K]*flight[V] // loads in flight, by key; guarded by mu
	// bgRunning counts the refreshes running in the background; bgIdle is
	// closed whenever it is zero. Both guarded by mu.
	bgRunning int
	bgIdle    chan struct{}
}

type entry[V any] struct {
	v      V
	loaded time.Time // when the load that read v started
	// refreshFailed: a refresh of v failed; no other is tried, and the
	// Get after expiry loads. Guarded by the Cache's mu.
	refreshFailed bool
}

// flight is one load of a key. done is closed once v and err are set.
type flight[V any] struct {
	done    chan struct{}
	started time.Time
	v       V
	err     error
	// stale: a Delete, DeleteFunc or Set came while it was in flight, so
	// its value must not be stored (it may predate the change). Guarded
	// by the Cache's mu.
	stale bool
	// retry: the load failed because the context of the request running
	// it ended; the callers waiting for it load again.
	retry bool
}

// New returns a Cache. It panics when cfg.Load is nil.
func New[K comparable, V any](cfg Config[K, V]) *Cache[K, V] {
	if cfg.Load == nil {
		panic("cache: Config.Load is nil")
	}
	if cfg.RefreshAfter <= 0 {
		cfg.RefreshAfter = cfg.TTL - cfg.TTL/4
	}
	if cfg.RefreshTimeout <= 0 {
		cfg.RefreshTimeout = DefaultRefreshTimeout
	}
	if cfg.MaxEntries <= 0 {
		cfg.MaxEntries = DefaultMaxEntries
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	idle := make(chan struct{})
	close(idle)
	return &Cache[K, V]{cfg: cfg, disabled: cfg.TTL <= 0, ttl: cfg.TTL, refreshAfter: cfg.RefreshAfter,
		entries: map[K]*entry[V]{}, flights: map[K]*flight[V]{}, bgIdle: idle}
}

// SetTTL changes the TTL, and RefreshAfter to three quarters of it, for the
// values cached already too (their age counts from their load): a shorter
// TTL makes the older ones unusable at once. It does nothing on a Cache
// made with a TTL that disables caching.
func (c *Cache[K, V]) SetTTL(ttl time.Duration) {
	if c.disabled || ttl <= 0 {
		return
	}
	c.mu.Lock()
	c.ttl, c.refreshAfter = ttl, ttl-ttl/4
	c.mu.Unlock()
}

// TTL returns the TTL in force.
func (c *Cache[K, V]) TTL() time.Duration {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.ttl
}

// Get returns the value of k: the cached one while it is within its TTL
// (and Fresh), else the result of a load, shared with every Get of k that
// needs it at the same time. A Get that finds the value older than
// RefreshAfter starts one background refresh and returns the cached value.
// A Get whose ctx ends while it waits for another's load returns ctx's
// error; a load that fails because the context of the Get running it ended
// is run again by the Gets waiting for it.
func (c *Cache[K, V]) Get(ctx context.Context, k K) (V, error) {
	if c.disabled {
		return c.cfg.Load(ctx, k)
	}
	for {
		now := c.cfg.Now()
		c.mu.RLock()
		e, f := c.entries[k], c.flights[k]
		if c.usable(e, now) {
			v := e.v
			refresh := f == nil && !e.refreshFailed && now.Sub(e.loaded) >= c.refreshAfter
			c.mu.RUnlock()
			if refresh {
				c.refresh(k, now)
			}
			return v, nil
		}
		c.mu.RUnlock()

		c.mu.Lock()
		e, f = c.entries[k], c.flights[k]
		if c.usable(e, now) { // stored meanwhile
			v := e.v
			c.mu.Unlock()
			return v, nil
		}
		if f == nil {
			f = &flight[V]{done: make(chan struct{}), started: now}
			c.flights[k] = f
			c.mu.Unlock()
			return c.run(ctx, k, f, false)
		}
		c.mu.Unlock()
		select {
		case <-f.done:
		case <-ctx.Done():
			var zero V
			return zero, ctx.Err()
		}
		if !f.retry {
			return f.v, f.err
		}
	}
}

// usable reports whether e may be served at now. The caller holds mu.
func (c *Cache[K, V]) usable(e *entry[V], now time.Time) bool {
	if e == nil || now.Sub(e.loaded) >= c.ttl || now.Before(e.loaded.Add(-c.ttl)) {
		return false
	}
	return c.cfg.Fresh == nil || c.cfg.Fresh(e.v, now)
}

// refresh starts a background load of k, unless one is in flight.
func (c *Cache[K, V]) refresh(k K, now time.Time) {
	c.mu.Lock()
	if _, ok := c.flights[k]; ok {
		c.mu.Unlock()
		return
	}
	f := &flight[V]{done: make(chan struct{}), started: now}
	c.flights[k] = f
	if c.bgRunning == 0 {
		c.bgIdle = make(chan struct{})
	}
	c.bgRunning++
	c.mu.Unlock()
	go func() {
		defer func() {
			c.mu.Lock()
			if c.bgRunning--; c.bgRunning == 0 {
				close(c.bgIdle)
			}
			c.mu.Unlock()
		}()
		ctx, cancel := context.WithTimeout(context.Background(), c.cfg.RefreshTimeout)
		defer cancel()
		_, _ = c.run(ctx, k, f, true)
	}()
}

// run loads k for flight f and settles it: stores the value (unless f went
// stale), hands the result to the callers waiting on f, and, for a failed
// background refresh, drops the entry when the value is Gone.
func (c *Cache[K, V]) run(ctx context.Context, k K, f *flight[V], background bool) (v V, err error) {
	settled := false
	defer func() {
		if !settled { // Load panicked: release the waiters, then go on panicking
			var zero V
			c.settle(k, f, zero, ErrLoadPanicked, false, background)
		}
	}()
	v, err = c.cfg.Load(ctx, k)
	settled = true
	c.settle(k, f, v, err, err != nil && !background && ctx.Err() != nil, background)
	if err != nil && background && c.cfg.RefreshFailed != nil && (c.cfg.Gone == nil || !c.cfg.Gone(err)) {
		c.cfg.RefreshFailed(k, err)
	}
	return v, err
}

func (c *Cache[K, V]) settle(k K, f *flight[V], v V, err error, retry, background bool) {
	c.mu.Lock()
	if c.flights[k] == f {
		delete(c.flights, k)
	}
	switch {
	case f.stale:
	case err == nil:
		c.storeLocked(k, v, f.started)
	case !background:
		// The entry, if any, was expired or not Fresh: the failure
		// replaces nothing, and the next Get loads again.
		delete(c.entries, k)
	case c.cfg.Gone != nil && c.cfg.Gone(err):
		delete(c.entries, k)
	default:
		if e, ok := c.entries[k]; ok {
			e.refreshFailed = true
		}
	}
	f.v, f.err, f.retry = v, err, retry
	c.mu.Unlock()
	close(f.done)
}

// storeLocked stores v for k, loaded at the time at, evicting an entry when
// the cache is full. The caller holds mu.
func (c *Cache[K, V]) storeLocked(k K, v V, at time.Time) {
	if e, ok := c.entries[k]; ok {
		e.v, e.loaded, e.refreshFailed = v, at, false
		return
	}
	if len(c.entries) >= c.cfg.MaxEntries {
		c.evictLocked(at)
	}
	c.entries[k] = &entry[V]{v: v, loaded: at}
}

// evictLocked removes entries to make room for one: the expired ones among
// a few it looks at (map iteration starts at a random place), or else the
// oldest of them.
func (c *Cache[K, V]) evictLocked(now time.Time) {
	var oldest K
	var oldestAt time.Time
	n, expired := 0, false
	for k, e := range c.entries {
		if now.Sub(e.loaded) >= c.ttl {
			delete(c.entries, k)
			expired = true
		} else if n == 0 || e.loaded.Before(oldestAt) {
			oldest, oldestAt = k, e.loaded
		}
		if n++; n >= evictSample {
			break
		}
	}
	if !expired && n > 0 {
		delete(c.entries, oldest)
	}
}

// Set stores v as the value of k, read by a load that started at the time
// at (a caller that had to bypass the cache, for example to force a
// refresh, shares what it read). A load of k in flight does not overwrite
// it.
func (c *Cache[K, V]) Set(k K, v V, at time.Time) {
	if c.disabled {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.staleLocked(k)
	c.storeLocked(k, v, at)
}

// Delete drops the value of k at once: the next Get loads it, and a load of
// k already in flight does not store what it read (the callers already
// waiting for it still receive it).
func (c *Cache[K, V]) Delete(k K) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.entries, k)
	c.staleLocked(k)
}

// DeleteFunc drops every value for which del returns true, at once, and
// keeps every load in flight from storing what it read (del cannot judge a
// value not read yet).
func (c *Cache[K, V]) DeleteFunc(del func(K, V) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, e := range c.entries {
		if del(k, e.v) {
			delete(c.entries, k)
		}
	}
	for k := range c.flights {
		c.staleLocked(k)
	}
}

// staleLocked marks the load of k in flight, if any, stale, and forgets it:
// a Get that comes later starts a load of its own. The caller holds mu.
func (c *Cache[K, V]) staleLocked(k K) {
	if f, ok := c.flights[k]; ok {
		f.stale = true
		delete(c.flights, k)
	}
}

// Len returns the number of entries, expired ones included.
func (c *Cache[K, V]) Len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.entries)
}

// Wait waits until no refresh runs in the background (tests and shutdown
// use it). Gets may start refreshes while it waits.
func (c *Cache[K, V]) Wait() {
	c.mu.RLock()
	idle := c.bgIdle
	c.mu.RUnlock()
	<-idle
}
