package batch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestAloneRunsAtOnce(t *testing.T) {
	t.Parallel()
	var runs [][]int
	b := &Batcher[int, string]{Do: func(_ context.Context, in []int) ([]string, error) {
		runs = append(runs, slices.Clone(in))
		out := make([]string, len(in))
		for i, v := range in {
			out[i] = fmt.Sprint(v * 2)
		}
		return out, nil
	}}
	for i := range 3 {
		got, err := b.Call(context.Background(), i)
		if err != nil || got != fmt.Sprint(i*2) {
			t.Fatalf("Call(%d) = %q, %v", i, got, err)
		}
	}
	if len(runs) != 3 {
		t.Errorf("sequential calls ran %d batches %v, want 3 of one", len(runs), runs)
	}
}

// Callers that arrive while a batch runs share the next one, and each gets
// its own output.
func TestConcurrentCallsShareBatches(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var batches atomic.Int64
	var maxSize atomic.Int64
	b := &Batcher[int, int]{Do: func(_ context.Context, in []int) ([]int, error) {
		if batches.Add(1) == 1 {
			<-release // hold the first batch until everyone queued
		}
		if int64(len(in)) > maxSize.Load() {
			maxSize.Store(int64(len(in)))
		}
		out := make([]int, len(in))
		for i, v := range in {
			out[i] = v + 1000
		}
		return out, nil
	}}
	const n = 100
	var wg sync.WaitGroup
	errs := make(chan error, n)
	first := make(chan struct{})
	wg.Go(func() {
		close(first)
		if got, err := b.Call(context.Background(), -1); err != nil || got != 999 {
			errs <- fmt.Errorf("first: %d %v", got, err)
		}
	})
	<-first
	for i := range n {
		wg.Go(func() {
			if got, err := b.Call(context.Background(), i); err != nil || got != i+1000 {
				errs <- fmt.Errorf("Call(%d) = %d, %v", i, got, err)
			}
		})
	}
	// Wait until every caller is queued behind the first batch.
	for {
		b.mu.Lock()
		q := len(b.queue)
		b.mu.Unlock()
		if q == n {
			break
		}
		time.Sleep(time.Millisecond)
	}
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := batches.Load(); got != 2 {
		t.Errorf("%d batches, want 2 (the first caller's, then everyone else's)", got)
	}
	if maxSize.Load() != n {
		t.Errorf("largest batch %d, want %d", maxSize.Load(), n)
	}
}

func TestMaxSplitsBatches(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var mu sync.Mutex
	var sizes []int
	b := &Batcher[int, int]{Max: 7, Do: func(_ context.Context, in []int) ([]int, error) {
		mu.Lock()
		sizes = append(sizes, len(in))
		first := len(sizes) == 1
		mu.Unlock()
		if first {
			<-release
		}
		return in, nil
	}}
	var wg sync.WaitGroup
	started := make(chan struct{})
	wg.Go(func() { close(started); b.Call(context.Background(), 0) })
	<-started
	for i := range 20 {
		wg.Go(func() {
			if got, err := b.Call(context.Background(), i+1); err != nil || got != i+1 {
				t.Errorf("Call(%d) = %d, %v", i+1, got, err)
			}
		})
	}
	for {
		b.mu.Lock()
		q := len(b.queue)
		b.mu.Unlock()
		if q == 20 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	close(release)
	wg.Wait()
	total := 0
	for _, s := range sizes {
		if s > 7 {
			t.Errorf("batch of %d, max 7", s)
		}
		total += s
	}
	if total != 21 {
		t.Errorf("batches %v hold %d inputs, want 21", sizes, total)
	}
}

func TestErrorReachesEveryCallerOfTheBatch(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	b := &Batcher[int, int]{Do: func(_ context.Context, in []int) ([]int, error) { return nil, boom }}
	if _, err := b.Call(context.Background(), 1); !errors.Is(err, boom) {
		t.Errorf("err = %v", err)
	}
	short := &Batcher[int, int]{Do: func(_ context.Context, in []int) ([]int, error) { return nil, nil }}
	if _, err := short.Call(context.Background(), 1); err == nil {
		t.Error("no error for a batch with fewer outputs than inputs")
	}
	panicky := &Batcher[int, int]{Do: func(_ context.Context, in []int) ([]int, error) { panic("bug") }}
	if _, err := panicky.Call(context.Background(), 1); !errors.Is(err, errPanic) {
		t.Errorf("panic: err = %v", err)
	}
	// The Batcher still works after a failure.
	if _, err := panicky.Call(context.Background(), 1); !errors.Is(err, errPanic) {
		t.Errorf("second call after a panic: err = %v", err)
	}
}

// A waiting caller whose context ends leaves its batch; a leader whose
// context ends does not cancel its batch for the others.
func TestContextEnds(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var seen [][]int
	var mu sync.Mutex
	b := &Batcher[int, int]{Do: func(ctx context.Context, in []int) ([]int, error) {
		mu.Lock()
		seen = append(seen, slices.Clone(in))
		n := len(seen)
		mu.Unlock()
		if n == 1 {
			<-release
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return in, nil
	}}
	leaderCtx, cancelLeader := context.WithCancel(context.Background())
	leaderDone := make(chan error, 1)
	go func() { _, err := b.Call(leaderCtx, 1); leaderDone <- err }()
	for {
		mu.Lock()
		n := len(seen)
		mu.Unlock()
		if n == 1 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	waitCtx, cancelWait := context.WithCancel(context.Background())
	waitDone := make(chan error, 1)
	go func() { _, err := b.Call(waitCtx, 2); waitDone <- err }()
	stayDone := make(chan error, 1)
	go func() { _, err := b.Call(context.Background(), 3); stayDone <- err }()
	for {
		b.mu.Lock()
		q := len(b.queue)
		b.mu.Unlock()
		if q == 2 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	cancelWait()
	if err := <-waitDone; !errors.Is(err, context.Canceled) {
		t.Errorf("waiting caller: err = %v, want context.Canceled", err)
	}
	cancelLeader()
	close(release)
	if err := <-leaderDone; err != nil {
		t.Errorf("leader whose context ended during its batch: %v", err)
	}
	if err := <-stayDone; err != nil {
		t.Errorf("third caller: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 || !slices.Equal(seen[1], []int{3}) {
		t.Errorf("batches %v, want [[1] [3]]: the cancelled caller's input must not run", seen)
	}
}
