package ratelimit_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/embedauth/connect/ratelimit"
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

var window0 = time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)

func allow(t *testing.T, l ratelimit.Limiter, key string) ratelimit.Decision {
	t.Helper()
	d, err := l.Allow(t.Context(), key)
	if err != nil {
		t.Fatalf("Allow(%q): %v", key, err)
	}
	return d
}

func TestFixedWindow(t *testing.T) {
	t.Parallel()
	clk := &clock{now: window0.Add(10 * time.Second)}
	l := ratelimit.NewFixedWindow(3, time.Minute, clk.Now)
	for i, want := range []ratelimit.Decision{
		{Allowed: true, Remaining: 2},
		{Allowed: true, Remaining: 1},
		{Allowed: true, Remaining: 0},
		{Allowed: false, Remaining: 0, RetryAfter: 50 * time.Second},
		{Allowed: false, Remaining: 0, RetryAfter: 50 * time.Second},
	} {
		if d := cmp.Diff(want, allow(t, l, "acct-1")); d != "" {
			t.Errorf("request %d (-want +got):\n%s", i+1, d)
		}
	}
	// Other keys have their own budget.
	if d := cmp.Diff(ratelimit.Decision{Allowed: true, Remaining: 2}, allow(t, l, "acct-2")); d != "" {
		t.Errorf("other key (-want +got):\n%s", d)
	}
	// RetryAfter is the exact time left, not rounded.
	clk.Set(window0.Add(59*time.Second + 999*time.Millisecond + 1))
	if d := cmp.Diff(ratelimit.Decision{RetryAfter: time.Millisecond - 1}, allow(t, l, "acct-1")); d != "" {
		t.Errorf("end of the window (-want +got):\n%s", d)
	}
	// A new window resets every key.
	clk.Set(window0.Add(time.Minute))
	if d := cmp.Diff(ratelimit.Decision{Allowed: true, Remaining: 2}, allow(t, l, "acct-1")); d != "" {
		t.Errorf("next window (-want +got):\n%s", d)
	}
	// Skipping windows resets too.
	clk.Set(window0.Add(time.Hour + 30*time.Second))
	for range 3 {
		allow(t, l, "acct-1")
	}
	if d := cmp.Diff(ratelimit.Decision{RetryAfter: 30 * time.Second}, allow(t, l, "acct-1")); d != "" {
		t.Errorf("after skipped windows (-want +got):\n%s", d)
	}
	// A clock going backwards starts over in the earlier window rather
	// than refusing forever.
	clk.Set(window0.Add(5 * time.Second))
	if d := allow(t, l, "acct-1"); !d.Allowed {
		t.Errorf("after the clock went back: %+v", d)
	}
}

func TestFixedWindowDefaultClock(t *testing.T) {
	t.Parallel()
	l := ratelimit.NewFixedWindow(1, time.Hour, nil)
	if d := allow(t, l, "k"); !d.Allowed {
		t.Errorf("first request: %+v", d)
	}
	d := allow(t, l, "k")
	if d.Allowed || d.RetryAfter <= 0 || d.RetryAfter > time.Hour {
		t.Errorf("second request: %+v, want refused with 0 < RetryAfter <= 1h", d)
	}
}

func TestFixedWindowConcurrent(t *testing.T) {
	t.Parallel()
	clk := &clock{now: window0}
	l := ratelimit.NewFixedWindow(50, time.Minute, clk.Now)
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for range 200 {
		wg.Go(func() {
			if d, _ := l.Allow(t.Context(), "shared"); d.Allowed {
				allowed.Add(1)
			}
		})
	}
	wg.Wait()
	if got := allowed.Load(); got != 50 {
		t.Errorf("%d requests allowed, want 50", got)
	}
}

func TestNewFixedWindowPanics(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		limit  int
		window time.Duration
	}{{0, time.Second}, {-1, time.Second}, {1, 0}, {1, -time.Second}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("NewFixedWindow(%d, %v) did not panic", tc.limit, tc.window)
				}
			}()
			ratelimit.NewFixedWindow(tc.limit, tc.window, nil)
		}()
	}
}
