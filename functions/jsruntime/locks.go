package jsruntime

import (
	"sync"
	"time"
)

// lockKey names a lock of nango.tryAcquireLock: a key of one connection.
type lockKey struct {
	env                          int64
	integration, connection, key string
}

// lockTable holds the locks runs take, in this process: a lock is held by
// one run until it releases it, its time to live passes, or the run ends.
type lockTable struct {
	mu   sync.Mutex
	held map[lockKey]lockHold
}

type lockHold struct {
	owner   *host
	expires time.Time
}

func newLockTable() *lockTable { return &lockTable{held: map[lockKey]lockHold{}} }

func (t *lockTable) acquire(k lockKey, owner *host, ttl time.Duration) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	if h, ok := t.held[k]; ok && h.owner != owner && now.Before(h.expires) {
		return false
	}
	t.held[k] = lockHold{owner: owner, expires: now.Add(ttl)}
	return true
}

func (t *lockTable) release(k lockKey, owner *host) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if h, ok := t.held[k]; ok && h.owner == owner {
		delete(t.held, k)
		return true
	}
	return false
}
