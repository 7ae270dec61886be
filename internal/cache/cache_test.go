package cache_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/embedauth/connect/internal/cache"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type clock struct{ ns atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	c.ns.Store(t0.UnixNano())
	return c
}

func (c *clock) now() time.Time          { return time.Unix(0, c.ns.Load()).UTC() }
func (c *clock) advance(d time.Duration) { c.ns.Add(int64(d)) }

var errGone = errors.New("gone")

// source is a counting, controllable Load: each load takes the value of its
// key at the time it starts, and waits for a release when gated.
type source struct {
	mu     sync.Mutex
	values map[string]string
	errs   map[string]error
	loads  map[string]int
	gate   chan struct{} // when not nil, each load waits for a receive
}

func newSource() *source {
	return &source{values: map[string]string{}, errs: map[string]error{}, loads: map[string]int{}}
}

func (s *source) set(k, v string, err error) {
	s.mu.Lock()
	s.values[k], s.errs[k] = v, err
	s.mu.Unlock()
}

func (s *source) count(k string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.loads[k]
}

func (s *source) load(ctx context.Context, k string) (string, error) {
	s.mu.Lock()
	s.loads[k]++
	v, err, gate := s.values[k], s.errs[k], s.gate
	s.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	return v, err
}

func newCache(src *source, clk *clock, mutate ...func(*cache.Config[string, string])) *cache.Cache[string, string] {
	cfg := cache.Config[string, string]{
		Load: src.load,
		TTL:  10 * time.Second,
		Now:  clk.now,
		Gone: func(err error) bool { return errors.Is(err, errGone) },
	}
	for _, m := range mutate {
		m(&cfg)
	}
	return cache.New(cfg)
}

func mustGet(t *testing.T, c *cache.Cache[string, string], k, want string) {
	t.Helper()
	if v, err := c.Get(context.Background(), k); err != nil || v != want {
		t.Fatalf("Get(%q) = %q, %v; want %q", k, v, err, want)
	}
}

// getAll runs n Gets of k at once and returns their results once they are
// all waiting or done (synctest.Wait), with a function that waits for them.
func getAll(n int, c *cache.Cache[string, string], k string) (results []string, errs []error, wait func()) {
	results, errs = make([]string, n), make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { results[i], errs[i] = c.Get(context.Background(), k) })
	}
	synctest.Wait()
	return results, errs, wg.Wait
}

// TestSingleFlightOnExpiry: N Gets of an expired entry at once make one
// load, and all get its value.
func TestSingleFlightOnExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, clk := newSource(), newClock()
		c := newCache(src, clk)
		src.set("k", "v1", nil)
		mustGet(t, c, "k", "v1")
		clk.advance(11 * time.Second)
		src.set("k", "v2", nil)
		src.gate = make(chan struct{})
		results, errs, wait := getAll(64, c, "k")
		if n := src.count("k"); n != 2 {
			t.Fatalf("%d loads while 64 Gets wait for the expired entry, want 2 (the first, then one)", n)
		}
		close(src.gate)
		wait()
		for i := range results {
			if results[i] != "v2" || errs[i] != nil {
				t.Fatalf("Get %d = %q, %v", i, results[i], errs[i])
			}
		}
		mustGet(t, c, "k", "v2")
		if n := src.count("k"); n != 2 {
			t.Errorf("%d loads, want 2", n)
		}
	})
}

// TestRefreshAhead: an entry past RefreshAfter is served while one
// background load replaces it; the new value counts its TTL from the start
// of that load.
func TestRefreshAhead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, clk := newSource(), newClock()
		c := newCache(src, clk)
		src.set("k", "v1", nil)
		mustGet(t, c, "k", "v1")
		clk.advance(7 * time.Second) // before RefreshAfter (7.5 s)
		mustGet(t, c, "k", "v1")
		synctest.Wait()
		if n := src.count("k"); n != 1 {
			t.Fatalf("%d loads before RefreshAfter, want 1", n)
		}

		clk.advance(time.Second) // 8 s: refresh ahead
		src.set("k", "v2", nil)
		src.gate = make(chan struct{})
		results, errs, wait := getAll(32, c, "k")
		wait() // none of them waits for the load
		for i := range results {
			if results[i] != "v1" || errs[i] != nil {
				t.Fatalf("Get %d during the refresh = %q, %v; want the cached v1", i, results[i], errs[i])
			}
		}
		if n := src.count("k"); n != 2 {
			t.Fatalf("%d loads, want 2: one refresh for 32 Gets", n)
		}
		close(src.gate)
		c.Wait()
		mustGet(t, c, "k", "v2")

		// The refresh started at 8 s: the value lives until 18 s.
		clk.advance(9 * time.Second) // 17 s: past RefreshAfter of the new value
		src.gate = make(chan struct{})
		mustGet(t, c, "k", "v2")
		close(src.gate)
		c.Wait()
		if n := src.count("k"); n != 3 {
			t.Errorf("%d loads, want 3", n)
		}
	})
}

// TestRefreshErrorKeepsValue: a refresh that fails leaves the value served
// until its TTL ends; then the failure of the load that the next Get runs
// is returned, and not cached.
func TestRefreshErrorKeepsValue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, clk := newSource(), newClock()
		var failed atomic.Int32
		c := newCache(src, clk, func(cfg *cache.Config[string, string]) {
			cfg.RefreshFailed = func(string, error) { failed.Add(1) }
		})
		src.set("k", "v1", nil)
		mustGet(t, c, "k", "v1")
		down := errors.New("database down")
		src.set("k", "", down)
		clk.advance(8 * time.Second)
		mustGet(t, c, "k", "v1")
		c.Wait()
		clk.advance(time.Second)
		mustGet(t, c, "k", "v1") // no other refresh before it expires
		c.Wait()
		if n, f := src.count("k"), failed.Load(); n != 2 || f != 1 {
			t.Fatalf("%d loads, %d failed refreshes; want 2 and 1", n, f)
		}
		clk.advance(time.Second) // 10 s: expired
		if _, err := c.Get(context.Background(), "k"); !errors.Is(err, down) {
			t.Fatalf("Get after expiry: %v, want the load's error", err)
		}
		src.set("k", "v2", nil)
		mustGet(t, c, "k", "v2")
		if n := src.count("k"); n != 4 {
			t.Errorf("%d loads, want 4: the error was not cached", n)
		}
		// The new value is refreshed ahead of expiry again.
		clk.advance(8 * time.Second)
		mustGet(t, c, "k", "v2")
		c.Wait()
		if n := src.count("k"); n != 5 {
			t.Errorf("%d loads, want 5", n)
		}
	})
}

// TestRefreshGoneDrops: a refresh that finds the value gone drops it at
// once.
func TestRefreshGoneDrops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, clk := newSource(), newClock()
		c := newCache(src, clk)
		src.set("k", "v1", nil)
		mustGet(t, c, "k", "v1")
		src.set("k", "", errGone)
		clk.advance(8 * time.Second)
		mustGet(t, c, "k", "v1") // served; the refresh finds it gone
		c.Wait()
		if _, err := c.Get(context.Background(), "k"); !errors.Is(err, errGone) {
			t.Errorf("Get after the refresh found it gone: %v", err)
		}
	})
}

// TestDeleteWinsOverLoadInFlight: a load that started before Delete does
// not store what it read, whether a Get or a refresh runs it, and a Get
// after Delete does not wait for it.
func TestDeleteWinsOverLoadInFlight(t *testing.T) {
	for _, background := range []bool{false, true} {
		t.Run(fmt.Sprint("background=", background), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				src, clk := newSource(), newClock()
				c := newCache(src, clk)
				src.set("k", "old", nil)
				if background {
					mustGet(t, c, "k", "old")
					clk.advance(8 * time.Second) // the Gets below start a refresh
				}
				gate := make(chan struct{})
				src.gate = gate
				results, _, wait := getAll(4, c, "k") // a load of "old" is in flight
				src.set("k", "new", nil)
				c.Delete("k") // as after a change through the Service
				src.gate = nil
				mustGet(t, c, "k", "new")
				close(gate)
				wait()
				c.Wait()
				if results[0] != "old" {
					t.Errorf("the Gets that came before Delete got %q", results[0])
				}
				before := src.count("k")
				mustGet(t, c, "k", "new")
				if n := src.count("k"); n != before {
					t.Errorf("the value after Delete was not cached: %d loads, then %d", before, n)
				}
			})
		})
	}
}

// TestDeleteFunc drops matching values and keeps loads in flight from
// storing theirs.
func TestDeleteFunc(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, clk := newSource(), newClock()
		c := newCache(src, clk)
		for _, k := range []string{"a1", "a2", "b1"} {
			src.set(k, k+"-old", nil)
			mustGet(t, c, k, k+"-old")
		}
		src.set("c", "c-old", nil)
		gate := make(chan struct{})
		src.gate = gate
		results, _, wait := getAll(2, c, "c") // in flight
		for _, k := range []string{"a1", "a2", "b1", "c"} {
			src.set(k, k+"-new", nil)
		}
		c.DeleteFunc(func(k, v string) bool { return k[0] == 'a' })
		src.gate = nil
		close(gate)
		wait()
		if results[0] != "c-old" {
			t.Errorf("the Gets of c that came first got %q", results[0])
		}
		mustGet(t, c, "a1", "a1-new")
		mustGet(t, c, "a2", "a2-new")
		mustGet(t, c, "b1", "b1-old") // kept
		mustGet(t, c, "c", "c-new")   // the load in flight did not store its value
	})
}

// TestWaiterCanceled: a Get whose context ends while it waits returns;
// the load goes on for the others.
func TestWaiterCanceled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, clk := newSource(), newClock()
		c := newCache(src, clk)
		src.set("k", "v", nil)
		src.gate = make(chan struct{})
		_, _, wait := getAll(1, c, "k") // the loader
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() {
			_, err := c.Get(ctx, "k")
			done <- err
		}()
		synctest.Wait()
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("canceled waiter: %v", err)
		}
		close(src.gate)
		wait()
		src.gate = nil
		mustGet(t, c, "k", "v")
		if n := src.count("k"); n != 1 {
			t.Errorf("%d loads, want 1", n)
		}
	})
}

// TestLoaderCanceled: when the Get running the load is canceled, the Gets
// waiting for it load again rather than fail with its error.
func TestLoaderCanceled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, clk := newSource(), newClock()
		c := newCache(src, clk)
		src.set("k", "v", nil)
		src.gate = make(chan struct{})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() {
			_, err := c.Get(ctx, "k")
			done <- err
		}()
		synctest.Wait()
		results, errs, wait := getAll(8, c, "k")
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("canceled loader: %v", err)
		}
		synctest.Wait()
		close(src.gate)
		wait()
		for i := range results {
			if results[i] != "v" || errs[i] != nil {
				t.Errorf("waiter %d = %q, %v", i, results[i], errs[i])
			}
		}
		if n := src.count("k"); n != 2 {
			t.Errorf("%d loads, want 2", n)
		}
	})
}

// TestFresh: a value that is not Fresh is loaded again, once.
func TestFresh(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, clk := newSource(), newClock()
		c := newCache(src, clk, func(cfg *cache.Config[string, string]) {
			cfg.Fresh = func(v string, _ time.Time) bool { return v != "due" }
		})
		src.set("k", "due", nil)
		mustGet(t, c, "k", "due")
		src.set("k", "fine", nil)
		src.gate = make(chan struct{})
		_, _, wait := getAll(16, c, "k")
		close(src.gate)
		wait()
		src.gate = nil
		mustGet(t, c, "k", "fine")
		if n := src.count("k"); n != 2 {
			t.Errorf("%d loads, want 2", n)
		}
	})
}

func TestPanickingLoad(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := newClock()
		release := make(chan struct{})
		c := cache.New(cache.Config[string, string]{TTL: time.Second, Now: clk.now, Load: func(context.Context, string) (string, error) {
			<-release
			panic("boom")
		}})
		panicked := make(chan any)
		go func() {
			defer func() { panicked <- recover() }()
			c.Get(context.Background(), "k")
		}()
		synctest.Wait()
		_, errs, wait := getAll(3, c, "k")
		close(release)
		if p := <-panicked; p != "boom" {
			t.Errorf("the loader's panic: %v", p)
		}
		wait()
		for _, err := range errs {
			if !errors.Is(err, cache.ErrLoadPanicked) {
				t.Errorf("waiter: %v", err)
			}
		}
	})
}

func TestMaxEntries(t *testing.T) {
	src, clk := newSource(), newClock()
	c := newCache(src, clk, func(cfg *cache.Config[string, string]) { cfg.MaxEntries = 10 })
	for i := range 100 {
		k := fmt.Sprint(i)
		src.set(k, k, nil)
		mustGet(t, c, k, k)
		clk.advance(time.Millisecond)
		if c.Len() > 10 {
			t.Fatalf("%d entries after %d keys, want at most 10", c.Len(), i+1)
		}
	}
	// The latest key is cached.
	mustGet(t, c, "99", "99")
	if n := src.count("99"); n != 1 {
		t.Errorf("the latest key was loaded %d times", n)
	}
}

func TestDisabled(t *testing.T) {
	src, clk := newSource(), newClock()
	c := newCache(src, clk, func(cfg *cache.Config[string, string]) { cfg.TTL = -1 })
	src.set("k", "v", nil)
	for range 3 {
		mustGet(t, c, "k", "v")
	}
	c.Set("k", "x", clk.now())
	mustGet(t, c, "k", "v")
	if n := src.count("k"); n != 4 {
		t.Errorf("%d loads, want 4", n)
	}
}

// BenchmarkGetHit measures a Get that finds its value, from every
// processor at once (the proxy's and the API key check's hot path).
func BenchmarkGetHit(b *testing.B) {
	src, clk := newSource(), newClock()
	c := newCache(src, clk)
	src.set("k", "v", nil)
	if _, err := c.Get(context.Background(), "k"); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			if _, err := c.Get(ctx, "k"); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// TestSetTTL: a longer TTL keeps cached values served past the old one, and
// refreshes start at three quarters of the new TTL; a shorter TTL makes the
// older values unusable at once.
func TestSetTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, clk := newSource(), newClock()
		c := newCache(src, clk)
		src.set("k", "v1", nil)
		mustGet(t, c, "k", "v1")
		c.SetTTL(time.Minute)
		if got := c.TTL(); got != time.Minute {
			t.Fatalf("TTL() = %v after SetTTL(1m)", got)
		}
		src.set("k", "v2", nil)
		clk.advance(30 * time.Second) // past the old TTL, before 45 s
		mustGet(t, c, "k", "v1")
		synctest.Wait()
		if n := src.count("k"); n != 1 {
			t.Fatalf("%d loads at 30 s of a 1 min TTL, want 1 (no refresh before 45 s)", n)
		}
		clk.advance(16 * time.Second) // 46 s: served, refreshed behind
		mustGet(t, c, "k", "v1")
		c.Wait()
		if n := src.count("k"); n != 2 {
			t.Fatalf("%d loads at 46 s of a 1 min TTL, want 2 (one refresh)", n)
		}
		mustGet(t, c, "k", "v2")

		clk.advance(20 * time.Second) // v2 is 20 s old
		src.set("k", "v3", nil)
		c.SetTTL(10 * time.Second)
		mustGet(t, c, "k", "v3")
		if n := src.count("k"); n != 3 {
			t.Fatalf("%d loads, want 3: a 20 s old value is not served under a 10 s TTL", n)
		}
	})
}

// TestSetTTLDisabled: SetTTL does not turn on a Cache made without a TTL.
func TestSetTTLDisabled(t *testing.T) {
	src, clk := newSource(), newClock()
	c := newCache(src, clk, func(cfg *cache.Config[string, string]) { cfg.TTL = 0 })
	c.SetTTL(time.Minute)
	src.set("k", "v1", nil)
	mustGet(t, c, "k", "v1")
	mustGet(t, c, "k", "v1")
	if n := src.count("k"); n != 2 {
		t.Fatalf("%d loads for two Gets of a disabled cache, want 2", n)
	}
}
