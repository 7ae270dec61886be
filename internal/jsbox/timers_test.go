package jsbox_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/embedauth/connect/internal/jsbox"
)

// TestTimersOrder: the loop runs the promise jobs first, then the timers
// by due time, those set together in the order of their delays and, for
// equal delays, in the order they were set; a timer set by a timer counts
// from when its setter ran. clearTimeout cancels, by the Timeout or its
// number.
func TestTimersOrder(t *testing.T) {
	t.Parallel()
	b := newBox(t, jsbox.Options{})
	_, err := b.Eval(`
		globalThis.order = [];
		setTimeout(() => order.push('c'), 30);
		setTimeout((x, y) => order.push('a' + x + y), 1, 1, 2);
		setTimeout(() => {
			order.push('b');
			setTimeout(() => order.push('nested'), 40);
		}, 0);
		const gone = setTimeout(() => order.push('cleared'), 2);
		clearTimeout(gone);
		clearTimeout(+setTimeout(() => order.push('cleared by number'), 2));
		clearTimeout(12345);
		Promise.resolve().then(() => order.push('job'));
		new Promise((r) => setTimeout(r, 10)).then(() => order.push('p'));
		1`)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := b.Eval(`order.join()`); err != nil || v != "job,a12,b,p,c,nested" {
		t.Errorf("order: %v, %v", v, err)
	}
}

// TestTimersBackoff: awaiting a timer's promise, as functions back off,
// gives the awaited value; an evaluation whose value is a promise answers
// its value, or its rejection as the error.
func TestTimersBackoff(t *testing.T) {
	t.Parallel()
	b := newBox(t, jsbox.Options{})
	v, err := b.Eval(`(async () => {
		let tries = 0;
		for (let i = 0; i < 3; i++) { tries++; await new Promise((r) => setTimeout(r, 2 ** i)); }
		return 'done after ' + tries;
	})()`)
	if err != nil || v != "done after 3" {
		t.Errorf("backoff: %v, %v", v, err)
	}
	_, err = b.Eval(`(async () => { await new Promise((r) => setTimeout(r, 1)); throw new RangeError('too far'); })()`)
	if err == nil || err.Error() != "RangeError: too far" {
		t.Errorf("rejection: %v", err)
	}
	// The promise settles before a timer still pending: it is not waited for.
	v, err = b.Eval(`setTimeout(() => {}, 60000).unref(); setTimeout(() => { globalThis.late = true; }, 60000); Promise.resolve(7)`)
	if err != nil || v != 7 {
		t.Errorf("settled before a timer: %v, %v", v, err)
	}
}

// TestTimersUnref: a timer unref'd does not keep the run going, as in
// Node: the evaluation ends without it, and a promise only it could
// settle is ErrUnsettled. Timeout has Node's methods.
func TestTimersUnref(t *testing.T) {
	t.Parallel()
	b := newBox(t, jsbox.Options{})
	v, err := b.Eval(`const t = setTimeout(() => { globalThis.ran = true; }, 60000); t.unref(); [t.hasRef(), t.ref().hasRef(), t.unref() === t, typeof t[Symbol.toPrimitive]()].join()`)
	if err != nil || v != "false,true,true,number" {
		t.Fatalf("%v, %v", v, err)
	}
	if v, err := b.Eval(`typeof ran`); err != nil || v != "undefined" {
		t.Errorf("the unref'd timer ran: %v, %v", v, err)
	}
	_, err = b.Eval(`new Promise((r) => setTimeout(r, 60000).unref())`)
	if !errors.Is(err, jsbox.ErrUnsettled) {
		t.Errorf("a promise only an unref'd timer settles: %v", err)
	}
	_, err = b.Eval(`new Promise(() => {})`)
	if !errors.Is(err, jsbox.ErrUnsettled) {
		t.Errorf("a promise nothing settles: %v", err)
	}
}

// TestTimerPastTheDeadline: a timer due after the Box's deadline ends the
// evaluation with ErrTimeout at once, without waiting for it.
func TestTimerPastTheDeadline(t *testing.T) {
	t.Parallel()
	b := newBox(t, jsbox.Options{Limits: jsbox.Limits{Timeout: 5 * time.Second}})
	start := time.Now()
	_, err := b.Eval(`new Promise((r) => setTimeout(r, 60000))`)
	if !errors.Is(err, jsbox.ErrTimeout) {
		t.Fatalf("error %v, want ErrTimeout", err)
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("it waited %v", d)
	}
	if v, err := b.Eval(`1 + 1`); err != nil || v != 2 {
		t.Errorf("after: %v, %v", v, err)
	}
}

// TestTimerCallbackThrows: a timer's callback that throws ends the
// evaluation with its exception, as an uncaught exception ends Node's.
func TestTimerCallbackThrows(t *testing.T) {
	t.Parallel()
	b := newBox(t, jsbox.Options{})
	_, err := b.Eval(`setTimeout(() => { throw new Error('in a timer'); }, 1); 1`)
	if err == nil || !strings.Contains(err.Error(), "Error: in a timer") {
		t.Errorf("error %v", err)
	}
}

// TestCancelAWait: a context cancelled while the run waits for a timer,
// or while its JavaScript runs, ends the evaluation promptly with an
// error wrapping context.Canceled; a context's deadline, with one
// wrapping context.DeadlineExceeded. The Box runs code afterwards.
func TestCancelAWait(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, src string }{
		{"waiting for a timer", `started(); new Promise((r) => setTimeout(r, 50000))`},
		{"running a loop", `started(); for (;;) {}`},
		{"running a loop in a timer", `setTimeout(() => { started(); for (;;) {} }, 1); 1`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := newBox(t, jsbox.Options{Limits: jsbox.Limits{Timeout: time.Minute}})
			started := make(chan struct{}, 1)
			if err := b.Func("started", func([]any) (any, error) {
				started <- struct{}{}
				return nil, nil
			}); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			go func() {
				<-started
				cancel()
			}()
			start := time.Now()
			_, err := b.EvalContext(ctx, tc.src)
			if !errors.Is(err, context.Canceled) || errors.Is(err, jsbox.ErrTimeout) {
				t.Fatalf("error %v, want one wrapping context.Canceled", err)
			}
			if d := time.Since(start); d > 40*time.Second {
				t.Errorf("returned after %v", d)
			}
			if v, err := b.Eval(`1 + 1`); err != nil || v != 2 {
				t.Errorf("after: %v, %v", v, err)
			}
		})
	}
	t.Run("deadline", func(t *testing.T) {
		t.Parallel()
		b := newBox(t, jsbox.Options{Limits: jsbox.Limits{Timeout: time.Minute}})
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		_, err := b.EvalContext(ctx, `new Promise((r) => setTimeout(r, 50000))`)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("error %v, want one wrapping context.DeadlineExceeded", err)
		}
	})
	t.Run("already cancelled", func(t *testing.T) {
		t.Parallel()
		b := newBox(t, jsbox.Options{})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := b.EvalContext(ctx, `globalThis.ran = 1`); !errors.Is(err, context.Canceled) {
			t.Errorf("error %v", err)
		}
		if v, err := b.Eval(`typeof ran`); err != nil || v != "undefined" {
			t.Errorf("it ran: %v, %v", v, err)
		}
	})
}
