package connections

import "sync"

// flowHub wakes the waiters of this process (WebSockets of the frontend
// client) when a flow with their client id ends. It is only a shortcut:
// a waiter also polls the Store, so that a flow finished by another
// instance is seen too.
type flowHub struct {
	mu      sync.Mutex
	waiters map[string]map[chan *StatusData]struct{}
}

// wait registers a waiter for clientID. The channel receives the flow's
// status when signal is called with one (a failure that was never stored),
// or nil, meaning "read the Store". stop unregisters it.
func (h *flowHub) wait(clientID string) (ch chan *StatusData, stop func()) {
	ch = make(chan *StatusData, 1)
	h.mu.Lock()
	if h.waiters == nil {
		h.waiters = map[string]map[chan *StatusData]struct{}{}
	}
	if h.waiters[clientID] == nil {
		h.waiters[clientID] = map[chan *StatusData]struct{}{}
	}
	h.waiters[clientID][ch] = struct{}{}
	h.mu.Unlock()
	return ch, func() {
		h.mu.Lock()
		delete(h.waiters[clientID], ch)
		if len(h.waiters[clientID]) == 0 {
			delete(h.waiters, clientID)
		}
		h.mu.Unlock()
	}
}

// signal wakes the waiters of clientID, passing d along (nil: read the
// Store). It never blocks.
func (h *flowHub) signal(clientID string, d *StatusData) {
	if clientID == "" {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.waiters[clientID] {
		select {
		case ch <- d:
		default:
		}
	}
}
