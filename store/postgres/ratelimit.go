package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"time"

	"github.com/embedauth/connect/ratelimit"
)

// RateLimiter is a ratelimit.Limiter whose fixed-window counters live in the
// rate_limits table, so every process sharing the database enforces one
// limit. Windows are aligned to multiples of the window length since the
// zero time (time.Time.Truncate), so all processes agree on them as long as
// their clocks roughly do.
//
// Keys name what is limited (an account, an API key); limiters sharing a
// table and a window length must not reuse each other's keys. Rows of past
// windows are pruned by the limiter at most once per window, and by [Prune].
type RateLimiter struct {
	db       *sql.DB
	allowSQL string // in the schema
	pruneSQL string
	now      func() time.Time
	limit    int
	window   time.Duration

	mu        sync.Mutex
	lastPrune time.Time
}

var _ ratelimit.Limiter = (*RateLimiter)(nil)

// NewRateLimiter returns a limiter allowing limit requests per key in each
// window. The rate_limits table must exist (see [Migrate]); opts.Now sets the
// clock. It panics when limit < 1, when window is not a positive multiple of
// a microsecond (the precision of timestamptz) or when opts.Schema is
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
	return &RateLimiter{
		db: db,
		allowSQL: `INSERT INTO ` + o.quoted + `.rate_limits AS r (key, window_start, window_end, count)
			VALUES ($1, $2, $3, 1)
			ON CONFLICT (key, window_start, window_end) DO UPDATE SET count = r.count + 1
			RETURNING count`,
		pruneSQL: `DELETE FROM ` + o.quoted + `.rate_limits WHERE window_end <= $1`,
		now:      o.now,
		limit:    limit,
		window:   window,
	}
}

// Allow counts one request of key in the current window and reports whether
// it is within the limit. When it is not, RetryAfter is the exact time left
// in the window.
func (l *RateLimiter) Allow(ctx context.Context, key string) (ratelimit.Decision, error) {
	now := l.now()
	start := now.Truncate(l.window)
	end := start.Add(l.window)
	if err := l.maybePrune(ctx, now); err != nil {
		return ratelimit.Decision{}, err
	}
	var count int64
	err := l.db.QueryRowContext(ctx, l.allowSQL, key, start, end).Scan(&count)
	if err != nil {
		return ratelimit.Decision{}, dbErr(ctx, "rate limit", err, nil)
	}
	if count > int64(l.limit) {
		return ratelimit.Decision{Allowed: false, Remaining: 0, RetryAfter: end.Sub(now)}, nil
	}
	return ratelimit.Decision{Allowed: true, Remaining: l.limit - int(count)}, nil
}

// maybePrune prunes past windows when the limiter has not done so during the
// last window.
func (l *RateLimiter) maybePrune(ctx context.Context, now time.Time) error {
	l.mu.Lock()
	due := l.lastPrune.IsZero() || now.Sub(l.lastPrune) >= l.window || now.Before(l.lastPrune)
	if due {
		l.lastPrune = now
	}
	l.mu.Unlock()
	if !due {
		return nil
	}
	_, err := l.Prune(ctx)
	return err
}

// Prune deletes the counters of every window that has ended, of every
// limiter sharing the table, and returns how many it deleted.
func (l *RateLimiter) Prune(ctx context.Context) (int64, error) {
	res, err := l.db.ExecContext(ctx, l.pruneSQL, l.now())
	if err != nil {
		return 0, dbErr(ctx, "rate limit prune", err, nil)
	}
	return res.RowsAffected()
}
