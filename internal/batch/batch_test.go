package batch_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/embedauth/connect/internal/batch"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// recorder is a Run that records its batches and can hold each one until
// released.
type recorder struct {
	mu      sync.Mutex
	batches [][]string
	started chan []string // when not nil, each Run sends its keys
	gate    chan struct{} // when not nil, each Run waits for a receive
	fail    map[string]error
}

func (r *recorder) run(ctx context.Context, keys []string) ([]batch.Result[string], error) {
	r.mu.Lock()
	r.batches = append(r.batches, slices.Clone(keys))
	started, gate := r.started, r.gate
	r.mu.Unlock()
	if started != nil {
		started <- slices.Clone(keys)
	}
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	out := make([]batch.Result[string], len(keys))
	for i, k := range keys {
		if err := r.fail[k]; err != nil {
			out[i].Err = err
			continue
		}
		out[i].V = "value of " + k
	}
	return out, nil
}

func (r *recorder) all() [][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.batches)
}

func TestAloneRunsAtOnce(t *testing.T) {
	r := &recorder{}
	b := batch.New(batch.Config[string, string]{Run: r.run})
	for i := range 3 {
		k := fmt.Sprint("k", i)
		v, err := b.Do(context.Background(), k)
		if err != nil || v != "value of "+k {
			t.Fatalf("Do(%s) = %q, %v", k, v, err)
		}
	}
	if got := r.all(); len(got) != 3 || len(got[0]) != 1 || len(got[2]) != 1 {
		t.Fatalf("batches = %v, want three of one key each", got)
	}
}

// A call alone reads on its own context: its values, and no cancellation
// added (a context that cannot end spares database/sql a goroutine per
// query); a cancellable caller's cancellation reaches the Run.
func TestAloneRunsOnTheCallersContext(t *testing.T) {
	type key struct{}
	var got []context.Context
	b := batch.New(batch.Config[string, string]{Run: func(ctx context.Context, keys []string) ([]batch.Result[string], error) {
		got = append(got, ctx)
		return make([]batch.Result[string], len(keys)), nil
	}})
	plain := context.WithValue(context.Background(), key{}, "v")
	cancellable, cancel := context.WithCancel(plain)
	defer cancel()
	for _, ctx := range []context.Context{plain, cancellable} {
		if _, err := b.Do(ctx, "k"); err != nil {
			t.Fatal(err)
		}
	}
	if len(got) != 2 || got[0].Value(key{}) != "v" || got[0].Done() != nil {
		t.Fatalf("Run of a lone call on a context that cannot end got %v; want its value and no Done", got)
	}
	cancel()
	select {
	case <-got[1].Done():
	default:
		t.Fatal("Run of a lone call: the caller's cancellation does not reach it")
	}
}

// doAll calls Do for each of keys, each in a goroutine of its own, and
// returns the channel of their values (or "key: error").
func doAll(b *batch.Batcher[string, string], ctx context.Context, keys []string) chan string {
	out := make(chan string, len(keys))
	for _, k := range keys {
		go func() {
			v, err := b.Do(ctx, k)
			if err != nil {
				v = k + ": " + err.Error()
			}
			out <- v
		}()
	}
	return out
}

func TestCallsDuringARunGoTogether(t *testing.T) {
	r := &recorder{started: make(chan []string, 10), gate: make(chan struct{})}
	b := batch.New(batch.Config[string, string]{Run: r.run, MaxInFlight: 1})
	first := doAll(b, context.Background(), []string{"a"})
	if got := <-r.started; !slices.Equal(got, []string{"a"}) {
		t.Fatalf("first batch %v", got)
	}
	// While "a" runs, five calls queue, two of them for the same key.
	rest := doAll(b, context.Background(), []string{"b", "c", "d", "c", "e"})
	waitPending(t, b, 5)
	r.gate <- struct{}{}
	if v := <-first; v != "value of a" {
		t.Fatalf("a: %q", v)
	}
	got := <-r.started
	slices.Sort(got)
	if !slices.Equal(got, []string{"b", "c", "d", "e"}) {
		t.Fatalf("second batch %v, want b, c, d, e once each", got)
	}
	r.gate <- struct{}{}
	var vals []string
	for range 5 {
		vals = append(vals, <-rest)
	}
	slices.Sort(vals)
	want := []string{"value of b", "value of c", "value of c", "value of d", "value of e"}
	if !slices.Equal(vals, want) {
		t.Fatalf("values %v, want %v", vals, want)
	}
	if n := len(r.all()); n != 2 {
		t.Fatalf("%d runs, want 2", n)
	}
}

func TestMaxBatch(t *testing.T) {
	r := &recorder{started: make(chan []string, 10), gate: make(chan struct{})}
	b := batch.New(batch.Config[string, string]{Run: r.run, MaxInFlight: 1, MaxBatch: 3})
	first := doAll(b, context.Background(), []string{"a"})
	<-r.started
	keys := []string{"b", "c", "d", "e", "f", "g", "h"}
	rest := doAll(b, context.Background(), keys)
	waitPending(t, b, len(keys))
	close(r.gate) // every batch runs through
	<-first
	for range keys {
		if v := <-rest; v[:9] != "value of " {
			t.Fatalf("got %q", v)
		}
	}
	runs := r.all()
	if len(runs) != 4 { // a, then 7 keys in batches of at most 3
		t.Fatalf("runs %v, want 4", runs)
	}
	for _, keys := range runs {
		if len(keys) > 3 {
			t.Fatalf("a batch of %d keys: %v", len(keys), keys)
		}
	}
}

func TestErrors(t *testing.T) {
	missing := errors.New("missing")
	r := &recorder{fail: map[string]error{"x": missing}}
	b := batch.New(batch.Config[string, string]{Run: r.run})
	if _, err := b.Do(context.Background(), "x"); !errors.Is(err, missing) {
		t.Fatalf("x: %v, want its own error", err)
	}
	if v, err := b.Do(context.Background(), "y"); err != nil || v != "value of y" {
		t.Fatalf("y: %q, %v", v, err)
	}

	down := errors.New("database down")
	b = batch.New(batch.Config[string, string]{Run: func(context.Context, []string) ([]batch.Result[string], error) {
		return nil, down
	}})
	if _, err := b.Do(context.Background(), "y"); !errors.Is(err, down) {
		t.Fatalf("batch error: %v", err)
	}
	b = batch.New(batch.Config[string, string]{Run: func(context.Context, []string) ([]batch.Result[string], error) {
		return nil, nil // fewer results than keys: a bug of Run, not a panic
	}})
	if _, err := b.Do(context.Background(), "y"); err == nil {
		t.Fatal("a Run returning too few results answered without an error")
	}
}

// TestCancelledCaller: a call whose context ends returns its error at once,
// also while its batch runs; the batch goes on for the other calls in it,
// and its context ends when no call of it is left.
func TestCancelledCaller(t *testing.T) {
	runErr := make(chan error, 10)
	r := &recorder{started: make(chan []string, 10), gate: make(chan struct{})}
	run := func(ctx context.Context, keys []string) ([]batch.Result[string], error) {
		res, err := r.run(ctx, keys)
		runErr <- err
		return res, err
	}
	b := batch.New(batch.Config[string, string]{Run: run, MaxInFlight: 1})

	// Alone in its batch: the call returns, and the batch is cancelled.
	ctx, cancel := context.WithCancel(context.Background())
	alone := doAll(b, ctx, []string{"a"})
	<-r.started
	cancel()
	if v := <-alone; v != "a: context canceled" {
		t.Fatalf("a: %q", v)
	}
	if err := <-runErr; !errors.Is(err, context.Canceled) {
		t.Fatalf("the batch of a call that left: %v, want its context cancelled", err)
	}

	// Two calls queue behind a running batch and go together; one leaves,
	// the other is answered.
	first := doAll(b, context.Background(), []string{"x"})
	<-r.started
	ctx, cancel = context.WithCancel(context.Background())
	leaver := doAll(b, ctx, []string{"b"})
	stayer := doAll(b, context.Background(), []string{"c"})
	waitPending(t, b, 2)
	r.gate <- struct{}{}
	if v := <-first; v != "value of x" {
		t.Fatalf("x: %q", v)
	}
	<-runErr
	if got := <-r.started; len(got) != 2 {
		t.Fatalf("batch %v, want b and c", got)
	}
	cancel()
	if v := <-leaver; v != "b: context canceled" {
		t.Fatalf("b: %q", v)
	}
	r.gate <- struct{}{}
	if v := <-stayer; v != "value of c" {
		t.Fatalf("c: %q", v)
	}
	if err := <-runErr; err != nil {
		t.Fatalf("the batch was cancelled while a call of it waited: %v", err)
	}

	// A call that leaves before a batch takes it is not read.
	first = doAll(b, context.Background(), []string{"y"})
	<-r.started
	ctx, cancel = context.WithCancel(context.Background())
	gone := doAll(b, ctx, []string{"gone"})
	waitPending(t, b, 1)
	cancel()
	if v := <-gone; v != "gone: context canceled" {
		t.Fatalf("gone: %q", v)
	}
	if n := b.Pending(); n != 0 {
		t.Fatalf("%d calls pending after the only one left", n)
	}
	later := doAll(b, context.Background(), []string{"z"})
	waitPending(t, b, 1)
	r.gate <- struct{}{}
	<-first
	<-runErr
	if got := <-r.started; !slices.Equal(got, []string{"z"}) {
		t.Fatalf("batch %v, want z alone", got)
	}
	r.gate <- struct{}{}
	<-later
	<-runErr
	waitIdle(t, b)
}

func TestRunPanics(t *testing.T) {
	b := batch.New(batch.Config[string, string]{Run: func(ctx context.Context, keys []string) ([]batch.Result[string], error) {
		if keys[0] == "boom" {
			panic("kaboom")
		}
		return []batch.Result[string]{{V: "ok"}}, nil
	}})
	_, err := b.Do(context.Background(), "boom")
	if !errors.Is(err, batch.ErrRunPanicked) || !strings.Contains(err.Error(), "kaboom") {
		t.Fatalf("Do = %v, want ErrRunPanicked with the panic's value", err)
	}
	if v, err := b.Do(context.Background(), "next"); err != nil || v != "ok" {
		t.Fatalf("after a panic: %q, %v", v, err)
	}
	waitIdle(t, b)
}

func TestConcurrent(t *testing.T) {
	r := &recorder{}
	b := batch.New(batch.Config[string, string]{Run: r.run, MaxInFlight: 2, MaxBatch: 8})
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				k := fmt.Sprint(g, "/", i%7)
				if v, err := b.Do(context.Background(), k); err != nil || v != "value of "+k {
					t.Errorf("Do(%s) = %q, %v", k, v, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	waitIdle(t, b)
}

// waitPending waits until n calls wait for a batch (the test's timeout
// bounds it).
func waitPending(t *testing.T, b *batch.Batcher[string, string], n int) {
	t.Helper()
	for b.Pending() < n {
		time.Sleep(time.Millisecond)
	}
}

// waitIdle waits until no worker runs, so that goleak sees none.
func waitIdle(t *testing.T, b *batch.Batcher[string, string]) {
	t.Helper()
	for b.Running() > 0 {
		time.Sleep(time.Millisecond)
	}
}
