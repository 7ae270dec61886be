package batch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// DefaultTimeout bounds one run of a Batcher's function when Timeout is 0.
const DefaultTimeout = 30 * time.Second

// Batcher coalesces concurrent calls of Do. The zero value is not usable:
// set Do. A Batcher must not be copied after first use.
type Batcher[In, Out any] struct {
	// Do runs the operation on several inputs and returns one output per
	// input, in order, or an error that every caller of the batch gets.
	// Required. Its context is the context of the caller that runs the
	// batch, without its cancellation (a caller that gives up must not
	// fail the others), and with Timeout.
	Do func(ctx context.Context, in []In) ([]Out, error)
	// Max caps the inputs of one run of Do; 0 means no cap.
	Max int
	// Timeout bounds one run of Do; 0 means DefaultTimeout.
	Timeout time.Duration

	mu    sync.Mutex
	queue []*call[In, Out] // guarded by mu
	busy  bool             // a caller is running Do; guarded by mu
}

type call[In, Out any] struct {
	in   In
	out  Out
	err  error
	lead bool          // this caller runs the next batch; guarded by Batcher.mu
	wake chan struct{} // closed or sent on when out/err is set or lead is
}

// Call runs Do with in, alone or with the inputs of concurrent callers, and
// returns in's output. It returns ctx's error when ctx ends while in is still
// waiting for its batch; once its batch runs, it waits for the outcome.
func (b *Batcher[In, Out]) Call(ctx context.Context, in In) (Out, error) {
	c := &call[In, Out]{in: in, wake: make(chan struct{}, 1)}
	b.mu.Lock()
	b.queue = append(b.queue, c)
	if !b.busy {
		// Invariant: the queue is empty whenever nobody is busy, so c is
		// at its head and goes into the batch run now.
		b.busy = true
		b.mu.Unlock()
		b.lead(ctx, c)
		return c.out, c.err
	}
	b.mu.Unlock()
	select {
	case <-c.wake:
	case <-ctx.Done():
		b.mu.Lock()
		if !c.lead {
			if i := b.index(c); i >= 0 {
				// Not taken into a batch yet: leave.
				b.queue = append(b.queue[:i], b.queue[i+1:]...)
				b.mu.Unlock()
				var zero Out
				return zero, ctx.Err()
			}
		}
		b.mu.Unlock()
		// Taken into a running batch, or made the next leader (which
		// must lead: others wait on it): wait for the outcome.
		<-c.wake
	}
	b.mu.Lock()
	lead := c.lead
	b.mu.Unlock()
	if lead {
		b.lead(ctx, c)
	}
	return c.out, c.err
}

// Waiting returns the number of inputs queued for the next batch.
func (b *Batcher[In, Out]) Waiting() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.queue)
}

// index returns the position of c in the queue, or -1. b.mu is held.
func (b *Batcher[In, Out]) index(c *call[In, Out]) int {
	for i, q := range b.queue {
		if q == c {
			return i
		}
	}
	return -1
}

// lead runs one batch, which holds self, and hands the lead to the next
// waiting caller, if any.
func (b *Batcher[In, Out]) lead(ctx context.Context, self *call[In, Out]) {
	b.mu.Lock()
	n := len(b.queue)
	if b.Max > 0 {
		n = min(n, b.Max)
	}
	batch := make([]*call[In, Out], n)
	copy(batch, b.queue[:n])
	b.queue = append(b.queue[:0:0], b.queue[n:]...)
	b.mu.Unlock()

	b.run(ctx, batch)
	for _, c := range batch {
		if c != self {
			c.wake <- struct{}{}
		}
	}

	b.mu.Lock()
	if len(b.queue) > 0 {
		next := b.queue[0]
		next.lead = true
		b.mu.Unlock()
		next.wake <- struct{}{}
		return
	}
	b.busy = false
	b.mu.Unlock()
}

// run calls Do for the batch and stores each outcome in its call.
func (b *Batcher[In, Out]) run(ctx context.Context, batch []*call[In, Out]) {
	in := make([]In, len(batch))
	for i, c := range batch {
		in[i] = c.in
	}
	timeout := b.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	out, err := b.safeDo(ctx, in)
	if err == nil && len(out) != len(in) {
		err = fmt.Errorf("batch: %d outputs for %d inputs", len(out), len(in))
	}
	for i, c := range batch {
		if err != nil {
			c.err = err
			continue
		}
		c.out = out[i]
	}
}

// errPanic is returned to every caller of a batch whose Do panicked.
var errPanic = errors.New("batch: the batch function panicked")

func (b *Batcher[In, Out]) safeDo(ctx context.Context, in []In) (out []Out, err error) {
	defer func() {
		if r := recover(); r != nil {
			// Fail the batch rather than leave its callers waiting
			// forever; the panic itself is a bug of Do.
			out, err = nil, fmt.Errorf("%w: %v", errPanic, r)
		}
	}()
	return b.Do(ctx, in)
}
