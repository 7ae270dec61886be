package ratelimit

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// FixedWindow is an in-memory [Limiter] that allows a fixed number of
// requests per key in each window. Windows are aligned to multiples of the
// window length (time.Time.Truncate) and shared by all keys, so when a window
// ends every counter is dropped: memory holds only the keys seen in the
// current window. It is safe for concurrent use.
type FixedWindow struct {
	limit  int
	window time.Duration
	now    func() time.Time

	mu     sync.Mutex
	start  time.Time // start of the window counts belong to
	counts map[string]int
}

var _ Limiter = (*FixedWindow)(nil)

// NewFixedWindow returns a limiter allowing limit requests per key in each
// window. now is the clock; nil means time.Now. It panics when limit < 1 or
// window <= 0.
func NewFixedWindow(limit int, window time.Duration, now func() time.Time) *FixedWindow {
	if limit < 1 || window <= 0 {
		panic(fmt.Sprintf("ratelimit: NewFixedWindow: limit %d and window %v must be positive", limit, window))
	}
	if now == nil {
		now = time.Now
	}
	return &FixedWindow{limit: limit, window: window, now: now, counts: map[string]int{}}
}

// Allow counts one request of key and reports whether it is within the
// limit. When it is not, RetryAfter is the exact time left in the window. It
// never returns an error.
func (f *FixedWindow) Allow(_ context.Context, key string) (Decision, error) {
	now := f.now()
	start := now.Truncate(f.window)
	f.mu.Lock()
	defer f.mu.Unlock()
	if !start.Equal(f.start) {
		f.start = start
		f.counts = map[string]int{}
	}
	n := f.counts[key]
	if n >= f.limit {
		return Decision{Allowed: false, Remaining: 0, RetryAfter: start.Add(f.window).Sub(now)}, nil
	}
	n++
	f.counts[key] = n
	return Decision{Allowed: true, Remaining: f.limit - n}, nil
}
