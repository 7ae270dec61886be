package jsbox

import (
	"container/heap"
	"errors"
	"time"
)

// timer is one setTimeout of a Box.
type timer struct {
	id    int
	after time.Duration
	due   time.Time
	ref   bool
	index int // in the heap, -1 once out of it
}

// timers is a Box's queue of timers, earliest first; timers due at the
// same time run in the order they were set, as Node runs them.
type timers struct {
	queue timerHeap
	byID  map[int]*timer
	last  int
	refs  int // timers not unref'd
	// now is the time setTimeout counts from: the time the run's loop
	// last moved on, as Node's event loop keeps it, so that timers set
	// together keep the order of their delays.
	now time.Time
}

type timerHeap []*timer

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	if !h[i].due.Equal(h[j].due) {
		return h[i].due.Before(h[j].due)
	}
	return h[i].id < h[j].id
}
func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}
func (h *timerHeap) Push(x any) {
	t := x.(*timer)
	t.index = len(*h)
	*h = append(*h, t)
}
func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	t.index = -1
	return t
}

var (
	errTimerArgs     = errors.New("jsbox: bad arguments to the timer host function")
	errTooManyTimers = errors.New("too many timers pending")
)

// maxTimers bounds the timers pending in one Box.
const maxTimers = 10000

// Operations of the host function __jsbox_timer, as bootstrap.js calls it.
const (
	timerSet = iota
	timerClear
	timerRef
	timerUnref
	timerRefresh
	timerHasRef
)

func (ts *timers) op(args []any) (any, error) {
	if len(args) != 2 {
		return nil, errTimerArgs
	}
	op, ok1 := number(args[0])
	n, ok2 := number(args[1])
	if !ok1 || !ok2 {
		return nil, errTimerArgs
	}
	if int(op) == timerSet {
		if len(ts.byID) >= maxTimers {
			return nil, errTooManyTimers
		}
		if ts.byID == nil {
			ts.byID = map[int]*timer{}
		}
		ts.last++
		t := &timer{id: ts.last, after: time.Duration(n * float64(time.Millisecond)), ref: true}
		t.due = ts.now.Add(t.after)
		ts.byID[t.id] = t
		ts.refs++
		heap.Push(&ts.queue, t)
		return t.id, nil
	}
	t := ts.byID[int(n)]
	if t == nil {
		if int(op) == timerHasRef {
			return false, nil
		}
		return nil, nil
	}
	switch int(op) {
	case timerClear:
		ts.remove(t)
	case timerRef:
		if !t.ref {
			t.ref = true
			ts.refs++
		}
	case timerUnref:
		if t.ref {
			t.ref = false
			ts.refs--
		}
	case timerRefresh:
		t.due = ts.now.Add(t.after)
		heap.Fix(&ts.queue, t.index)
	case timerHasRef:
		return t.ref, nil
	}
	return nil, nil
}

func (ts *timers) remove(t *timer) {
	delete(ts.byID, t.id)
	if t.ref {
		ts.refs--
	}
	if t.index >= 0 {
		heap.Remove(&ts.queue, t.index)
	}
}

// drop forgets every timer: their callbacks never run.
func (ts *timers) drop() {
	clear(ts.byID)
	ts.queue = nil
	ts.refs = 0
}

// next returns the earliest timer, if any timer keeps the run going: one
// that is not unref'd, as in Node.
func (ts *timers) next() *timer {
	if ts.refs == 0 {
		return nil
	}
	return ts.queue[0]
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}
