package postgres_test

import (
	"context"
	"database/sql"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/embedauth/connect/ratelimit"
	"github.com/embedauth/connect/store/postgres"
)

// clock is a settable time source.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// window0 is the start of a one-minute window.
var window0 = time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)

func newLimiter(t *testing.T, limit int, window time.Duration) (*postgres.RateLimiter, *clock, func() *postgres.RateLimiter) {
	t.Helper()
	_, db, schema := newStore(t)
	clk := &clock{now: window0}
	opts := &postgres.Options{Schema: schema, Now: clk.Now}
	another := func() *postgres.RateLimiter { return postgres.NewRateLimiter(db, opts, limit, window) }
	return another(), clk, another
}

func allow(t *testing.T, l ratelimit.Limiter, key string) ratelimit.Decision {
	t.Helper()
	d, err := l.Allow(t.Context(), key)
	if err != nil {
		t.Fatalf("Allow(%q): %v", key, err)
	}
	return d
}

func TestRateLimiter(t *testing.T) {
	t.Parallel()
	l, clk, _ := newLimiter(t, 3, time.Minute)
	clk.Set(window0.Add(10 * time.Second))
	for i, want := range []ratelimit.Decision{
		{Allowed: true, Remaining: 2},
		{Allowed: true, Remaining: 1},
		{Allowed: true, Remaining: 0},
		{Allowed: false, Remaining: 0, RetryAfter: 50 * time.Second},
	} {
		if d := cmp.Diff(want, allow(t, l, "acct-1")); d != "" {
			t.Errorf("request %d (-want +got):\n%s", i+1, d)
		}
	}
	// Other keys have their own budget.
	if d := allow(t, l, "acct-2"); !d.Allowed || d.Remaining != 2 {
		t.Errorf("other key: %+v", d)
	}
	// RetryAfter is exact, not rounded.
	clk.Set(window0.Add(59*time.Second + 250*time.Millisecond))
	if d := allow(t, l, "acct-1"); d.Allowed || d.RetryAfter != 750*time.Millisecond {
		t.Errorf("late in the window: %+v, want refused with RetryAfter 750ms", d)
	}
	// A new window resets the budget.
	clk.Set(window0.Add(time.Minute))
	if d := allow(t, l, "acct-1"); !d.Allowed || d.Remaining != 2 {
		t.Errorf("next window: %+v, want allowed with 2 remaining", d)
	}
}

func TestRateLimiterSharedByInstances(t *testing.T) {
	t.Parallel()
	const limit = 10
	_, _, another := newLimiter(t, limit, time.Minute)
	limiters := []*postgres.RateLimiter{another(), another(), another()}
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for i := range 30 {
		wg.Go(func() {
			d, err := limiters[i%len(limiters)].Allow(context.Background(), "shared")
			if err != nil {
				t.Error(err)
				return
			}
			if d.Allowed {
				allowed.Add(1)
			}
		})
	}
	wg.Wait()
	if got := allowed.Load(); got != limit {
		t.Errorf("%d requests allowed across instances, want %d", got, limit)
	}
}

func TestRateLimiterPrune(t *testing.T) {
	t.Parallel()
	l, clk, _ := newLimiter(t, 5, time.Minute)
	allow(t, l, "a")
	allow(t, l, "b")
	clk.Set(window0.Add(time.Minute + time.Second))
	n, err := l.Prune(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Errorf("Prune deleted %d rows, want 2", n)
	}
	n, err = l.Prune(t.Context())
	if err != nil || n != 0 {
		t.Errorf("second Prune: %d rows, %v; want 0, nil", n, err)
	}
}

func TestRateLimiterWindowsOfDifferentLengths(t *testing.T) {
	t.Parallel()
	_, db, schema := newStore(t)
	clk := &clock{now: window0}
	opts := &postgres.Options{Schema: schema, Now: clk.Now}
	minute := postgres.NewRateLimiter(db, opts, 1, time.Minute)
	hour := postgres.NewRateLimiter(db, opts, 2, time.Hour)
	// The same key at the same window start counts separately per window
	// length.
	if d := allow(t, minute, "k"); !d.Allowed {
		t.Errorf("minute limiter: %+v", d)
	}
	if d := allow(t, hour, "k"); !d.Allowed || d.Remaining != 1 {
		t.Errorf("hour limiter: %+v, want allowed with 1 remaining", d)
	}
	// When the minute ends, its pruning keeps the hour's counter.
	clk.Set(window0.Add(2 * time.Minute))
	if d := allow(t, minute, "k"); !d.Allowed {
		t.Errorf("minute limiter, next window: %+v", d)
	}
	if d := allow(t, hour, "k"); !d.Allowed || d.Remaining != 0 {
		t.Errorf("hour limiter after pruning: %+v, want allowed with 0 remaining", d)
	}
	if d := allow(t, hour, "k"); d.Allowed || d.RetryAfter != 58*time.Minute {
		t.Errorf("hour limiter over its limit: %+v, want refused with RetryAfter 58m", d)
	}
}

func TestNewRateLimiterPanics(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		limit  int
		window time.Duration
		schema string
	}{
		{0, time.Minute, ""},
		{1, 0, ""},
		{1, time.Minute, "bad-schema"},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("NewRateLimiter(%d, %v, %q) did not panic", tc.limit, tc.window, tc.schema)
				}
			}()
			postgres.NewRateLimiter(&sql.DB{}, &postgres.Options{Schema: tc.schema}, tc.limit, tc.window)
		}()
	}
}
