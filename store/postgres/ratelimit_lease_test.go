package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/lib/pq"

	"github.com/embedauth/connect/internal/pgtest"
	"github.com/embedauth/connect/ratelimit"
	"github.com/embedauth/connect/store/postgres"
)

// leasing is a table of limiters sharing one schema, as processes sharing a
// database do, and one clock.
type leasing struct {
	db     *sql.DB
	schema string
	clk    *clock
	opts   *postgres.Options
}

func newLeasing(t *testing.T, opts postgres.Options) *leasing {
	t.Helper()
	_, db, schema := newStore(t)
	clk := &clock{now: window0.Add(10 * time.Second)}
	opts.Schema, opts.Now = schema, clk.Now
	return &leasing{db: db, schema: schema, clk: clk, opts: &opts}
}

// limiter returns a limiter on the table: another process.
func (lt *leasing) limiter(limit int) *postgres.RateLimiter {
	return postgres.NewRateLimiter(lt.db, lt.opts, limit, time.Minute)
}

// count returns key's count in the table for the minute starting at start, 0
// when it has no row.
func (lt *leasing) count(t *testing.T, key string, start time.Time) int64 {
	t.Helper()
	var n int64
	err := lt.db.QueryRowContext(t.Context(), `SELECT count FROM `+pq.QuoteIdentifier(lt.schema)+
		`.rate_limits WHERE key = $1 AND window_start = $2`, key, start).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// rows returns how many rows the table holds.
func (lt *leasing) rows(t *testing.T) int {
	t.Helper()
	var n int
	if err := lt.db.QueryRowContext(t.Context(), `SELECT count(*) FROM `+pq.QuoteIdentifier(lt.schema)+`.rate_limits`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// holdRow inserts key's row of the minute starting at start in a
// transaction left open, on a pool of its own (not the tests' shared one),
// so that lease statements on that row wait until commit is called. The
// pool's second session watches them (see lockWaiters).
func (lt *leasing) holdRow(t *testing.T, key string, start time.Time) (side *sql.DB, commit func()) {
	t.Helper()
	side, err := sql.Open("postgres", pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { side.Close() })
	tx, err := side.BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(t.Context(), `INSERT INTO `+pq.QuoteIdentifier(lt.schema)+
		`.rate_limits (key, window_start, window_end, count) VALUES ($1, $2, $3, 0)`, key, start, start.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	commit = func() {
		once.Do(func() {
			if err := tx.Commit(); err != nil {
				t.Error(err)
			}
		})
	}
	t.Cleanup(commit)
	return side, commit
}

// lockWaiters returns how many sessions wait for a lock in a statement on
// the table.
func (lt *leasing) lockWaiters(t *testing.T, side *sql.DB) int {
	t.Helper()
	var n int
	err := side.QueryRowContext(t.Context(), `SELECT count(*) FROM pg_stat_activity
		WHERE pid <> pg_backend_pid() AND wait_event_type = 'Lock' AND position($1 in query) > 0`,
		pq.QuoteIdentifier(lt.schema)+".rate_limits").Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// waitLockWaiters waits until at least one session waits for the held row,
// then lets any other request that would send a statement do so, and
// returns how many wait.
func (lt *leasing) waitLockWaiters(t *testing.T, side *sql.DB) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for lt.lockWaiters(t, side) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no lease statement waits for the held row")
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	return lt.lockWaiters(t, side)
}

// TestRateLimiterLeaseSize checks the block one lease adds to the table:
// limit/64, at least 1, at most Options.RateLimitMaxLease (1000 by
// default).
func TestRateLimiterLeaseSize(t *testing.T) {
	t.Parallel()
	lt := newLeasing(t, postgres.Options{})
	capped := newLeasing(t, postgres.Options{RateLimitMaxLease: 100})
	exact := newLeasing(t, postgres.Options{RateLimitMaxLease: 1})
	for _, tc := range []struct {
		name  string
		lt    *leasing
		limit int
		want  int64
	}{
		{"small limit", lt, 3, 1},
		{"just below 128", lt, 127, 1},
		{"128", lt, 128, 2},
		{"reference server default", lt, 3000, 46},
		{"limit/64 equals the default cap", lt, 64000, 1000},
		{"default cap", lt, 1_000_000, 1000},
		{"RateLimitMaxLease", capped, 1_000_000, 100},
		{"limit/64 rounds down", capped, 6000, 93},
		{"RateLimitMaxLease 1", exact, 1_000_000, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := "size-" + tc.name
			if d := allow(t, tc.lt.limiter(tc.limit), key); !d.Allowed || d.Remaining != tc.limit-1 {
				t.Errorf("first request: %+v, want allowed with %d remaining", d, tc.limit-1)
			}
			if got := tc.lt.count(t, key, window0); got != tc.want {
				t.Errorf("count after one request = %d, want a lease of %d", got, tc.want)
			}
		})
	}
}

// TestRateLimiterRemaining checks that Remaining is exact while one process
// uses a key, across leases, and is the process's own view with several.
func TestRateLimiterRemaining(t *testing.T) {
	t.Parallel()
	lt := newLeasing(t, postgres.Options{})
	a, b := lt.limiter(6400), lt.limiter(6400) // leases of 100
	for i := 1; i <= 250; i++ {
		if d := allow(t, a, "k"); !d.Allowed || d.Remaining != 6400-i {
			t.Fatalf("request %d: %+v, want allowed with %d remaining", i, d, 6400-i)
		}
	}
	if got := lt.count(t, "k", window0); got != 300 {
		t.Errorf("count = %d, want 300 (three leases)", got)
	}
	// b takes the fourth lease: the 50 left in a's lease count as used.
	if d := allow(t, b, "k"); !d.Allowed || d.Remaining != 99+6400-400 {
		t.Errorf("other process: %+v, want allowed with %d remaining", d, 99+6400-400)
	}
	// a has not seen b's lease.
	if d := allow(t, a, "k"); !d.Allowed || d.Remaining != 6400-251 {
		t.Errorf("first process again: %+v, want allowed with %d remaining", d, 6400-251)
	}
}

// TestRateLimiterProcessesNeverOverAdmit runs three limiters on one table
// (three processes), eight goroutines each, each goroutine requesting until
// it is refused, in three windows: every window admits exactly the limit,
// never more, and no lease is left with unused requests.
func TestRateLimiterProcessesNeverOverAdmit(t *testing.T) {
	t.Parallel()
	const limit = 10_000 // leases of 156: the last one of the window is short
	lt := newLeasing(t, postgres.Options{})
	limiters := []*postgres.RateLimiter{lt.limiter(limit), lt.limiter(limit), lt.limiter(limit)}
	for w := range 3 {
		start := window0.Add(time.Duration(w) * time.Minute)
		lt.clk.Set(start.Add(15 * time.Second))
		var allowed, refused atomic.Int64
		var wg sync.WaitGroup
		for _, l := range limiters {
			for range 8 {
				wg.Go(func() {
					for {
						d, err := l.Allow(t.Context(), "shared")
						if err != nil {
							t.Error(err)
							return
						}
						if !d.Allowed {
							refused.Add(1)
							if d.RetryAfter != 45*time.Second || d.Remaining != 0 {
								t.Errorf("refusal: %+v, want RetryAfter 45s", d)
							}
							return
						}
						if allowed.Add(1) > limit {
							t.Errorf("window %d: more than %d requests allowed", w, limit)
							return
						}
					}
				})
			}
		}
		wg.Wait()
		if got := allowed.Load(); got != limit {
			t.Errorf("window %d: %d requests allowed, want %d", w, got, limit)
		}
		if got := refused.Load(); got != 24 {
			t.Errorf("window %d: %d refusals, want one per goroutine", w, got)
		}
		// The table saw leases, not requests.
		if got := lt.count(t, "shared", start); got < limit || got > limit+3*156 {
			t.Errorf("window %d: count = %d, want between %d and %d", w, got, limit, limit+3*156)
		}
		// Once refused, every process refuses the key without a statement.
		before := lt.count(t, "shared", start)
		for _, l := range limiters {
			if d := allow(t, l, "shared"); d.Allowed {
				t.Errorf("window %d: allowed after the limit", w)
			}
		}
		if after := lt.count(t, "shared", start); after != before {
			t.Errorf("window %d: refusals changed the count from %d to %d", w, before, after)
		}
	}
}

// TestRateLimiterStrandedBound checks the bound of under-admission: a
// process strands at most block - 1 requests of a window, which the others
// cannot admit, while it can still admit them itself.
func TestRateLimiterStrandedBound(t *testing.T) {
	t.Parallel()
	const limit, block = 6400, 100
	lt := newLeasing(t, postgres.Options{})
	a, b, c := lt.limiter(limit), lt.limiter(limit), lt.limiter(limit)
	allow(t, a, "k") // leases 100, admits 1
	allow(t, b, "k") // leases 100, admits 1
	admitted := 2
	for {
		d := allow(t, c, "k")
		if !d.Allowed {
			break
		}
		admitted++
	}
	if want := limit - 2*(block-1); admitted != want {
		t.Errorf("%d admitted with two processes holding a lease, want limit - 2×(block-1) = %d", admitted, want)
	}
	// The stranded requests are a's and b's to admit.
	for range block - 1 {
		if d := allow(t, a, "k"); !d.Allowed {
			t.Fatalf("a's lease: %+v", d)
		}
	}
	if d := allow(t, a, "k"); d.Allowed {
		t.Errorf("a beyond its lease: %+v", d)
	}
}

// TestRateLimiterWindowBoundary checks that a lease is never used in the
// next window, that the next window starts with a fresh lease, and that
// RetryAfter is exact at the edges of a window.
func TestRateLimiterWindowBoundary(t *testing.T) {
	t.Parallel()
	const limit = 6400
	lt := newLeasing(t, postgres.Options{})
	a, b := lt.limiter(limit), lt.limiter(limit)
	allow(t, a, "k") // 99 left in a's lease of window0
	next := window0.Add(time.Minute)
	lt.clk.Set(next)
	// b spends the next window's quota.
	for i := 0; ; i++ {
		if d := allow(t, b, "k"); !d.Allowed {
			if i != limit || d.RetryAfter != time.Minute {
				t.Errorf("b refused after %d requests with %+v, want after %d with RetryAfter 1m", i, d, limit)
			}
			break
		}
	}
	// a's 99 requests of window0 are gone with it.
	lt.clk.Set(next.Add(time.Minute - time.Nanosecond))
	if d := cmp.Diff(ratelimit.Decision{RetryAfter: time.Nanosecond}, allow(t, a, "k")); d != "" {
		t.Errorf("a in the next window (-want +got):\n%s", d)
	}
	// At the first instant of the window after, a starts afresh.
	lt.clk.Set(next.Add(time.Minute))
	if d := cmp.Diff(ratelimit.Decision{Allowed: true, Remaining: limit - 1}, allow(t, a, "k")); d != "" {
		t.Errorf("a in the window after (-want +got):\n%s", d)
	}
	if got := lt.count(t, "k", next.Add(time.Minute)); got != 100 {
		t.Errorf("count of the window after = %d, want one lease of 100", got)
	}
}

// TestRateLimiterClockStepsBack checks that a clock stepping back across a
// window boundary admits no extra requests: the key stays counted in the
// window of its lease. A step back of more than a window is a corrected
// clock: the key is counted in the clock's window.
func TestRateLimiterClockStepsBack(t *testing.T) {
	t.Parallel()
	t.Run("spent", func(t *testing.T) {
		t.Parallel()
		lt := newLeasing(t, postgres.Options{})
		l := lt.limiter(3)
		next := window0.Add(time.Minute)
		lt.clk.Set(next.Add(10 * time.Second))
		for range 3 {
			allow(t, l, "k")
		}
		lt.clk.Set(next.Add(-5 * time.Second)) // back into window0
		if d := cmp.Diff(ratelimit.Decision{RetryAfter: 65 * time.Second}, allow(t, l, "k")); d != "" {
			t.Errorf("after the step back (-want +got):\n%s", d)
		}
		if got := lt.count(t, "k", window0); got != 0 {
			t.Errorf("window0 counted %d requests, want none", got)
		}
	})
	t.Run("leased", func(t *testing.T) {
		t.Parallel()
		lt := newLeasing(t, postgres.Options{})
		l := lt.limiter(6400)
		next := window0.Add(time.Minute)
		lt.clk.Set(next.Add(time.Second))
		allow(t, l, "k")
		lt.clk.Set(next.Add(-time.Second))
		for i := 2; i <= 150; i++ { // the rest of the lease, then a new one
			if d := allow(t, l, "k"); !d.Allowed || d.Remaining != 6400-i {
				t.Fatalf("request %d after the step back: %+v, want allowed with %d remaining", i, d, 6400-i)
			}
		}
		if got := lt.count(t, "k", window0); got != 0 {
			t.Errorf("window0 counted %d requests, want none", got)
		}
		if got := lt.count(t, "k", next); got != 200 {
			t.Errorf("count of the lease's window = %d, want 200", got)
		}
		// A step back of more than a window is the clock's window.
		lt.clk.Set(window0.Add(-time.Second))
		if d := allow(t, l, "k"); !d.Allowed || d.Remaining != 6399 {
			t.Errorf("after a step back of more than a window: %+v, want allowed with 6399 remaining", d)
		}
		if got := lt.count(t, "k", window0.Add(-time.Minute)); got != 100 {
			t.Errorf("count of the clock's window = %d, want 100", got)
		}
	})
}

// TestRateLimiterSingleFlight holds the key's row locked while 64 requests
// find the lease empty: one of them sends a statement, the others wait for
// its lease. Counting every request in the table (one statement each) fails
// it.
func TestRateLimiterSingleFlight(t *testing.T) {
	t.Parallel()
	lt := newLeasing(t, postgres.Options{RateLimitMaxLease: 100})
	l := lt.limiter(1_000_000)
	side, commit := lt.holdRow(t, "k", window0)
	wave := func() {
		var wg sync.WaitGroup
		for range 64 {
			wg.Go(func() {
				d, err := l.Allow(context.Background(), "k")
				if err != nil || !d.Allowed {
					t.Errorf("Allow: %+v, %v", d, err)
				}
			})
		}
		wg.Wait()
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		wave()
	}()
	if n := lt.waitLockWaiters(t, side); n != 1 {
		t.Errorf("%d statements wait for the row, want 1", n)
	}
	commit()
	<-done
	if got := lt.count(t, "k", window0); got != 100 {
		t.Errorf("count after a wave of 64 = %d, want one lease of 100", got)
	}
	// The second wave uses the 36 left, and one lease more.
	wave()
	if got := lt.count(t, "k", window0); got != 200 {
		t.Errorf("count after two waves = %d, want two leases of 100", got)
	}
}

// TestRateLimiterWaiterContext checks that a request waiting for another's
// lease gives up when its context ends, while the lease goes on.
func TestRateLimiterWaiterContext(t *testing.T) {
	t.Parallel()
	lt := newLeasing(t, postgres.Options{})
	l := lt.limiter(1_000_000)
	side, commit := lt.holdRow(t, "k", window0)
	leader := make(chan error, 1)
	go func() {
		_, err := l.Allow(context.Background(), "k")
		leader <- err
	}()
	lt.waitLockWaiters(t, side)
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	began := time.Now()
	_, err := l.Allow(ctx, "k")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("waiting request: %v, want context.DeadlineExceeded", err)
	}
	if took := time.Since(began); took > 5*time.Second {
		t.Errorf("waiting request returned after %v", took)
	}
	if n := lt.lockWaiters(t, side); n != 1 {
		t.Errorf("%d statements wait for the row, want the leader's only", n)
	}
	commit()
	if err := <-leader; err != nil {
		t.Errorf("leader: %v", err)
	}
	if d := allow(t, l, "k"); !d.Allowed {
		t.Errorf("after the lease: %+v", d)
	}
	if got := lt.count(t, "k", window0); got != 1000 {
		t.Errorf("count = %d, want one lease of 1000", got)
	}
}

// TestRateLimiterLeaderCancelled checks that when the request taking a lease
// is cancelled, a waiting request takes the lease instead of failing.
func TestRateLimiterLeaderCancelled(t *testing.T) {
	t.Parallel()
	lt := newLeasing(t, postgres.Options{})
	l := lt.limiter(1_000_000)
	side, commit := lt.holdRow(t, "k", window0)
	ctx, cancel := context.WithCancel(t.Context())
	leader := make(chan error, 1)
	go func() {
		_, err := l.Allow(ctx, "k")
		leader <- err
	}()
	lt.waitLockWaiters(t, side)
	waiter := make(chan error, 1)
	go func() {
		d, err := l.Allow(context.Background(), "k")
		if err == nil && !d.Allowed {
			err = errors.New("refused")
		}
		waiter <- err
	}()
	time.Sleep(50 * time.Millisecond)
	cancel()
	if err := <-leader; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled leader: %v, want context.Canceled", err)
	}
	// The waiter's own statement now waits for the row.
	if n := lt.waitLockWaiters(t, side); n != 1 {
		t.Errorf("%d statements wait for the row, want the waiter's", n)
	}
	commit()
	if err := <-waiter; err != nil {
		t.Errorf("waiter: %v", err)
	}
	if got := lt.count(t, "k", window0); got != 1000 {
		t.Errorf("count = %d, want one lease of 1000 (the cancelled statement is rolled back)", got)
	}
}

// TestRateLimiterLeaseErrorSharedByWaiters checks that when the lease
// statement fails, the requests waiting for it fail with its error at once
// rather than each sending a statement in turn.
func TestRateLimiterLeaseErrorSharedByWaiters(t *testing.T) {
	t.Parallel()
	lt := newLeasing(t, postgres.Options{})
	// A pool of its own whose sessions give up waiting for a lock after
	// 300 ms.
	url := pgtest.URL(t)
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	db, err := sql.Open("postgres", url+sep+"lock_timeout=300")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	l := postgres.NewRateLimiter(db, lt.opts, 1_000_000, time.Minute)
	_, commit := lt.holdRow(t, "k", window0)
	defer commit()
	began := time.Now()
	errs := make(chan error, 16)
	var wg sync.WaitGroup
	for range cap(errs) {
		wg.Go(func() {
			_, err := l.Allow(context.Background(), "k")
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err == nil || !strings.Contains(err.Error(), "lock timeout") {
			t.Errorf("Allow: %v, want the lock timeout", err)
		}
	}
	if took := time.Since(began); took > 3*time.Second { // 16 statements in turn take 4.8 s
		t.Errorf("16 requests failed in %v: the waiters sent statements of their own", took)
	}
}

// TestRateLimiterPrunesLeases checks that the limiter prunes both the
// table's rows and its leases in memory once their window has ended.
func TestRateLimiterPrunesLeases(t *testing.T) {
	t.Parallel()
	lt := newLeasing(t, postgres.Options{})
	l := lt.limiter(6400)
	for _, key := range []string{"a", "b", "c"} {
		allow(t, l, key)
	}
	if n := l.LeasedKeys(); n != 3 {
		t.Errorf("%d leased keys, want 3", n)
	}
	lt.clk.Set(window0.Add(time.Minute + 10*time.Second))
	allow(t, l, "d") // prunes window0
	if n := l.LeasedKeys(); n != 1 {
		t.Errorf("%d leased keys after the window, want 1", n)
	}
	if n := lt.rows(t); n != 1 {
		t.Errorf("%d rows after the window, want 1", n)
	}
	// A key pruned from memory starts afresh in its new window.
	if d := allow(t, l, "a"); !d.Allowed || d.Remaining != 6399 {
		t.Errorf("pruned key: %+v, want allowed with 6399 remaining", d)
	}
}

func TestNewRateLimiterNegativeMaxLease(t *testing.T) {
	t.Parallel()
	defer func() {
		if recover() == nil {
			t.Error("NewRateLimiter with a negative RateLimitMaxLease did not panic")
		}
	}()
	postgres.NewRateLimiter(&sql.DB{}, &postgres.Options{RateLimitMaxLease: -1}, 10, time.Minute)
}
