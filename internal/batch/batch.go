package batch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Defaults of Config.
const (
	DefaultMaxBatch    = 64
	DefaultMaxInFlight = 4
	DefaultTimeout     = 30 * time.Second
)

// ErrRunPanicked is the error of the calls whose batch's Run panicked.
var ErrRunPanicked = errors.New("batch: the run panicked")

// Config configures a Batcher. Run is required.
type Config[K comparable, V any] struct {
	// Run reads the values of keys, which are distinct, in one go. It
	// returns one Result per key, in the order of keys (a missing value is
	// a Result with an error, not a shorter slice), or an error that
	// every call of the batch receives. A call that finds no call waiting
	// and a worker slot free runs its key alone in its own goroutine, on
	// its own context, which alone bounds it. Other batches run in a
	// goroutine of their own with a context that carries the values of the
	// context of the call that started the worker, ends when every call of
	// the batch has given up, and at the latest after Timeout.
	Run func(ctx context.Context, keys []K) ([]Result[V], error)
	// MaxBatch caps the keys of one Run. Default DefaultMaxBatch.
	MaxBatch int
	// MaxInFlight caps the Runs at the same time; calls that come while
	// that many run wait for the next batch. Default DefaultMaxInFlight.
	MaxInFlight int
	// Timeout bounds each Run of a worker (not a call's run alone, see
	// Run). Default DefaultTimeout.
	Timeout time.Duration
}

// Result is the value of one key, or why there is none.
type Result[V any] struct {
	V   V
	Err error
}

// Batcher coalesces concurrent calls for values into batches: a call that
// comes while fewer than MaxInFlight batches run starts one at once (alone
// it waits for nothing: batching adds no wait to a quiet system), and the
// calls that come while MaxInFlight batches run wait together and go as
// the next batch. A Batcher is safe for concurrent use.
type Batcher[K comparable, V any] struct {
	cfg Config[K, V]

	mu      sync.Mutex
	pending []*call[K, V] // guarded by mu, in arrival order
	running int           // workers; guarded by mu
}

type call[K comparable, V any] struct {
	key  K
	done chan struct{}
	res  Result[V]
	run  *run // the batch that took the call; guarded by the Batcher's mu
}

// run is one batch being read.
type run struct {
	waiting int // calls of the batch still waiting; guarded by the Batcher's mu
	cancel  context.CancelFunc
}

// New returns a Batcher. It panics when cfg.Run is nil.
func New[K comparable, V any](cfg Config[K, V]) *Batcher[K, V] {
	if cfg.Run == nil {
		panic("batch: Config.Run is nil")
	}
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = DefaultMaxBatch
	}
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = DefaultMaxInFlight
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	return &Batcher[K, V]{cfg: cfg}
}

// Do returns the value of k, read by a Run together with the keys that
// other calls asked for at the same time. A call whose ctx ends first
// returns ctx's error at once; its batch goes on for the others, and is
// cancelled when none is left.
func (b *Batcher[K, V]) Do(ctx context.Context, k K) (V, error) {
	b.mu.Lock()
	if len(b.pending) == 0 && b.running < b.cfg.MaxInFlight {
		// Alone: the call reads k itself, sparing two goroutine handoffs
		// (a worker to start, a caller to wake), which cost more than the
		// read on a busy machine.
		b.running++
		b.mu.Unlock()
		return b.alone(ctx, k)
	}
	c := &call[K, V]{key: k, done: make(chan struct{})}
	b.pending = append(b.pending, c)
	start := b.running < b.cfg.MaxInFlight
	if start {
		b.running++
	}
	b.mu.Unlock()
	if start {
		go b.work(context.WithoutCancel(ctx))
	}
	select {
	case <-c.done:
		return c.res.V, c.res.Err
	case <-ctx.Done():
		b.leave(c)
		var zero V
		return zero, ctx.Err()
	}
}

// alone reads k in the caller's goroutine, as a batch of one that holds a
// worker slot, on ctx: its end cancels the read, which no other call
// shares. (No Timeout is added: a context that cannot end spares
// database/sql a goroutine per query.) Calls that queued meanwhile get the
// slot's worker.
func (b *Batcher[K, V]) alone(ctx context.Context, k K) (V, error) {
	results, err := b.safeRun(ctx, []K{k})
	b.mu.Lock()
	if len(b.pending) > 0 {
		b.mu.Unlock()
		go b.work(context.WithoutCancel(ctx))
	} else {
		b.running--
		b.mu.Unlock()
	}
	var zero V
	switch {
	case ctx.Err() != nil:
		return zero, ctx.Err()
	case err != nil:
		return zero, err
	case len(results) != 1:
		return zero, fmt.Errorf("batch: Run returned %d results for 1 key", len(results))
	}
	return results[0].V, results[0].Err
}

// leave takes back a call that gave up: out of the queue when no batch
// took it yet, else out of its batch's count, which is cancelled when no
// call of it waits any more.
func (b *Batcher[K, V]) leave(c *call[K, V]) {
	b.mu.Lock()
	var cancel context.CancelFunc
	if r := c.run; r != nil {
		if r.waiting--; r.waiting == 0 {
			cancel = r.cancel
		}
	} else if i := slices.Index(b.pending, c); i >= 0 {
		b.pending = slices.Delete(b.pending, i, i+1)
	}
	b.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// Pending returns the number of calls waiting for a batch to take them.
func (b *Batcher[K, V]) Pending() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.pending)
}

// work runs batches until none is pending, then gives its worker slot back.
func (b *Batcher[K, V]) work(ctx context.Context) {
	for {
		b.mu.Lock()
		n := min(len(b.pending), b.cfg.MaxBatch)
		if n == 0 {
			b.running--
			b.mu.Unlock()
			return
		}
		batch := make([]*call[K, V], n)
		copy(batch, b.pending)
		// The rest go to a new array: the old one would pin the calls
		// taken.
		b.pending = append([]*call[K, V](nil), b.pending[n:]...)
		runCtx, cancel := context.WithTimeout(ctx, b.cfg.Timeout)
		r := &run{waiting: n, cancel: cancel}
		for _, c := range batch {
			c.run = r
		}
		b.mu.Unlock()

		b.run(runCtx, batch)
		cancel()
	}
}

// run runs one batch and answers its calls. A panic of Run is answered as
// ErrRunPanicked (with the panic's value) rather than ending the process
// from a goroutine no request owns.
func (b *Batcher[K, V]) run(ctx context.Context, batch []*call[K, V]) {
	keys := make([]K, 0, len(batch))
	index := make(map[K]int, len(batch))
	for _, c := range batch {
		if _, ok := index[c.key]; !ok {
			index[c.key] = len(keys)
			keys = append(keys, c.key)
		}
	}
	results, err := b.safeRun(ctx, keys)
	if err == nil && len(results) != len(keys) {
		err = fmt.Errorf("batch: Run returned %d results for %d keys", len(results), len(keys))
	}
	for _, c := range batch {
		if err != nil {
			c.res = Result[V]{Err: err}
		} else {
			c.res = results[index[c.key]]
		}
		close(c.done)
	}
}

func (b *Batcher[K, V]) safeRun(ctx context.Context, keys []K) (results []Result[V], err error) {
	defer func() {
		if p := recover(); p != nil {
			results, err = nil, fmt.Errorf("%w: %v", ErrRunPanicked, p)
		}
	}()
	return b.cfg.Run(ctx, keys)
}
