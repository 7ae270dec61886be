package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/embedauth/connect/ratelimit"
)

// DefaultRateLimitMaxLease is the default of Options.RateLimitMaxLease: the
// most requests a [RateLimiter] admits from one lease.
const DefaultRateLimitMaxLease = 1000

// RateLimiter is a ratelimit.Limiter whose fixed-window counters live in the
// rate_limits table, so every process sharing the database enforces one
// limit. Windows are aligned to multiples of the window length since the
// zero time (time.Time.Truncate), so all processes agree on them as long as
// their clocks roughly do.
//
// Keys name what is limited (an account, an API key); limiters sharing a
// table and a window length must not reuse each other's keys. Rows of past
// windows are pruned by the limiter at most once per window, and by [Prune].
//
// # Leases
//
// A process does not count each request in the table: that would make every
// request of a key update one row, and under concurrent requests the row's
// lock serialises them all. Instead it leases quota. One statement adds a
// block of requests to the key's count for the window and grants the part of
// the block that was still under the limit: min(block, limit - count
// before), 0 once the window's quota is spent. The process then admits
// requests from its grant in memory, without a round trip, until the grant
// is used up or the window ends. When several requests of a key find the
// grant used up at once, one of them takes the next lease and the others
// wait for it (within their context): one statement per block, never one per
// waiting request.
//
// The block is limit/64 (at least 1) and at most Options.RateLimitMaxLease
// ([DefaultRateLimitMaxLease], 1000). It is fixed rather than adapted to each
// process's traffic, so that the bounds below are simple and hold whatever
// the traffic. limit/64 keeps what a process can strand at a 64th of the
// limit, so that a handful of processes lose little of a key's quota, while
// a key that reaches its limit costs about 64 statements per window across
// the fleet rather than one per request. The cap keeps the loss small in
// absolute terms for large limits, where a statement per 1000 requests
// already leaves Postgres out of the cost of a request. The default limit of
// the reference server, 3000 per minute, leases 46 requests at a time. A
// limit below 128 leases one request at a time: every admitted request is
// counted in the table, as without leases, but refusals are not, once the
// process knows the window's quota is spent.
//
// # Guarantees
//
//   - No over-admission: the grants of a key's window never add up to more
//     than the limit, however many processes share the table, since each
//     grant is a distinct part of the count below the limit. Processes of
//     earlier versions, which count one request per statement, can share
//     the table during a rolling upgrade: each of their requests is such a
//     part too.
//   - Bounded under-admission: when a window ends, a process holds at most
//     block - 1 requests of a key that it leased but did not admit (the
//     request that takes a lease is its first), and that no other process
//     can admit. With n processes, a key whose requests exceed its limit
//     still gets at least limit - n×(block - 1) of them admitted in the
//     window. A lease whose statement commits after the context of the
//     request taking it has ended is lost whole, its result unread: up to
//     block requests.
//   - A refused request's Decision.RetryAfter is the exact time until the
//     window it was counted in ends. Once a lease comes back short, the
//     process refuses the key until then without a round trip.
//   - Decision.Remaining is the process's view: the requests left in its
//     lease plus the quota the table had not leased out after its last
//     lease. It is exact while one process uses the key; with several it
//     misses the leases others took since, and counts the requests left in
//     their leases as used.
//   - A window's lease is never used in another window: a new window starts
//     with a new lease.
//   - A clock that steps back into the window before the one a key's lease
//     belongs to (such as an NTP step across a window boundary) keeps
//     counting the key in the lease's window, so the step admits no extra
//     requests; RetryAfter is then the time until that window ends by the
//     stepped clock. A step back further than that is taken as a corrected
//     clock, so that a clock that ran far ahead does not hold a key in a
//     distant window once it is put right: the key is counted in the clock's window, under whatever count
//     the table still holds for it (none once pruned), and when the clock
//     comes forward again the process leases anew, leaving what remained of
//     its earlier lease unused.
//
// A RateLimiter is safe for concurrent use.
type RateLimiter struct {
	db       *sql.DB
	leaseSQL string // in the schema
	pruneSQL string
	now      func() time.Time
	limit    int
	window   time.Duration
	block    int // requests per lease

	lastPrune atomic.Pointer[time.Time] // nil until the first prune

	mu   sync.Mutex
	keys map[string]*lease
}

var _ ratelimit.Limiter = (*RateLimiter)(nil)

// lease is what a process holds of one key's quota. Its fields are guarded
// by RateLimiter.mu.
type lease struct {
	start    time.Time // the window the lease belongs to
	left     int       // requests of the lease not admitted yet
	unleased int       // limit minus the table's count after the last lease, at least 0
	spent    bool      // the last lease came back short: the window's quota is gone
	flight   *flight   // non-nil while a request takes a lease for this key
}

// flight is a lease statement under way; the requests waiting for it wait
// on done.
type flight struct {
	done chan struct{}
	// err is the statement's error, for the waiting requests to return,
	// or nil when they should look again: the lease was stored, or the
	// request that took it was cancelled. Set before done is closed.
	err error
}

// NewRateLimiter returns a limiter allowing limit requests per key in each
// window. The rate_limits table must exist (see [Migrate]); opts.Now sets the
// clock and opts.RateLimitMaxLease caps the lease. It panics when limit < 1,
// when window is not a positive multiple of a microsecond (the precision of
// timestamptz), when opts.RateLimitMaxLease is negative or when opts.Schema is
// invalid: these are programming errors.
func NewRateLimiter(db *sql.DB, opts *Options, limit int, window time.Duration) *RateLimiter {
	o, err := opts.resolve()
	if err != nil {
		panic(err)
	}
	if db == nil {
		panic("postgres: NewRateLimiter: db is nil")
	}
	if limit < 1 || window <= 0 || window%time.Microsecond != 0 {
		panic(fmt.Sprintf("postgres: NewRateLimiter: limit %d must be positive and window %v a positive multiple of 1µs", limit, window))
	}
	if o.maxLease < 0 {
		panic(fmt.Sprintf("postgres: NewRateLimiter: Options.RateLimitMaxLease %d is negative", o.maxLease))
	}
	return &RateLimiter{
		db: db,
		// The count grows by the whole block even when only part of it is
		// granted: the statement returns the count after, from which the
		// count before, and so the grant, follow.
		leaseSQL: `INSERT INTO ` + o.quoted + `.rate_limits AS r (key, window_start, window_end, count)
			VALUES ($1, $2, $3, $4)
			ON CONFLICT (key, window_start, window_end) DO UPDATE SET count = r.count + $4
			RETURNING count`,
		pruneSQL: `DELETE FROM ` + o.quoted + `.rate_limits WHERE window_end <= $1`,
		now:      o.now,
		limit:    limit,
		window:   window,
		block:    leaseSize(limit, o.maxLease),
		keys:     map[string]*lease{},
	}
}

// leaseSize is the block a limiter of limit requests per window leases:
// limit/64, at least 1 and at most maxLease.
func leaseSize(limit, maxLease int) int {
	return max(1, min(limit/64, maxLease))
}

// Allow admits or refuses one request of key in the current window. It
// admits from the process's lease of the key's quota, and takes a new lease
// from the table when that is used up (see [RateLimiter]). When it refuses,
// RetryAfter is the exact time left in the window. It returns an error when
// the table cannot be reached, or when ctx ends while the request waits for
// another's lease.
func (l *RateLimiter) Allow(ctx context.Context, key string) (ratelimit.Decision, error) {
	now := l.now()
	if err := l.maybePrune(ctx, now); err != nil {
		return ratelimit.Decision{}, err
	}
	for {
		l.mu.Lock()
		s := l.keys[key]
		if s == nil {
			s = &lease{}
			l.keys[key] = s
		}
		start := now.Truncate(l.window)
		if start.Add(l.window).Equal(s.start) {
			// The clock stepped back into the window before the
			// lease's: keep counting in the lease's.
			start = s.start
		}
		end := start.Add(l.window)
		if s.start.Equal(start) {
			if s.left > 0 {
				s.left--
				d := ratelimit.Decision{Allowed: true, Remaining: s.left + s.unleased}
				l.mu.Unlock()
				return d, nil
			}
			if s.spent {
				l.mu.Unlock()
				return ratelimit.Decision{RetryAfter: end.Sub(now)}, nil
			}
		}
		if f := s.flight; f != nil {
			l.mu.Unlock()
			select {
			case <-f.done:
				if f.err != nil {
					return ratelimit.Decision{}, f.err
				}
				continue
			case <-ctx.Done():
				return ratelimit.Decision{}, fmt.Errorf("postgres: rate limit: waiting for a lease: %w", ctx.Err())
			}
		}
		if !s.start.Equal(start) {
			// A new window (or a corrected clock): whatever is left
			// of the previous lease belongs to its window.
			*s = lease{start: start, unleased: l.limit}
		}
		f := &flight{done: make(chan struct{})}
		s.flight = f
		l.mu.Unlock()

		grant, count, err := l.lease(ctx, key, start, end)

		l.mu.Lock()
		s.flight = nil
		var d ratelimit.Decision
		if err == nil {
			s.left, s.unleased, s.spent = grant, int(max(0, int64(l.limit)-count)), grant < l.block
			if grant == 0 {
				d = ratelimit.Decision{RetryAfter: end.Sub(now)}
			} else {
				s.left--
				d = ratelimit.Decision{Allowed: true, Remaining: s.left + s.unleased}
			}
		} else if ctx.Err() == nil {
			// The table failed, not this request: the waiting
			// requests fail with it rather than each trying again.
			f.err = err
		}
		l.mu.Unlock()
		close(f.done)
		return d, err
	}
}

// lease adds a block to key's count for the window and returns the part of
// it granted (0 to block) and the count after.
func (l *RateLimiter) lease(ctx context.Context, key string, start, end time.Time) (grant int, count int64, err error) {
	block := int64(l.block)
	if err := l.db.QueryRowContext(ctx, l.leaseSQL, key, start, end, block).Scan(&count); err != nil {
		return 0, 0, dbErr(ctx, "rate limit", err, nil)
	}
	before := count - block
	return int(max(0, min(block, int64(l.limit)-before))), count, nil
}

// maybePrune prunes past windows, from the table and from the leases in
// memory, when the limiter has not done so during the last window.
func (l *RateLimiter) maybePrune(ctx context.Context, now time.Time) error {
	last := l.lastPrune.Load()
	if last != nil && now.Sub(*last) < l.window && !now.Before(*last) {
		return nil
	}
	pruned := now // only a prune's time escapes, not every request's
	if !l.lastPrune.CompareAndSwap(last, &pruned) {
		return nil // another request prunes
	}
	l.mu.Lock()
	for key, s := range l.keys {
		if s.flight == nil && !now.Before(s.start.Add(l.window)) {
			delete(l.keys, key)
		}
	}
	l.mu.Unlock()
	_, err := l.Prune(ctx)
	return err
}

// Prune deletes the counters of every window that has ended, of every
// limiter sharing the table, and returns how many it deleted.
func (l *RateLimiter) Prune(ctx context.Context) (int64, error) {
	// Truncated to timestamptz's microseconds: Postgres would round a
	// time less than half a microsecond before a window's end up to it,
	// and delete the counter of a window still under way.
	res, err := l.db.ExecContext(ctx, l.pruneSQL, l.now().Truncate(time.Microsecond))
	if err != nil {
		return 0, dbErr(ctx, "rate limit prune", err, nil)
	}
	return res.RowsAffected()
}
