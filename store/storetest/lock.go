package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/embedauth/connect/store"
)

var lockTests = []test{
	{"NotFound", testLockNotFound},
	{"OutsideTx", testLockOutsideTx},
	{"WaitsForCommit", testLockWaitsForCommit},
	{"Serialises", testLockSerialises},
	{"RollbackReleases", testLockRollbackReleases},
	{"DeletedWhileWaiting", testLockDeletedWhileWaiting},
}

func testLockNotFound(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	newIntegration(t, s, env.ID, "github")
	newConn(t, s, env.ID, "github", "u1", nil)
	err := s.WithTx(ctx, func(ctx context.Context) error {
		for _, k := range [][2]string{{"github", "u2"}, {"slack", "u1"}, {"github", "U1"}} {
			wantErr(t, "LockConnection("+k[0]+"/"+k[1]+")", s.LockConnection(ctx, env.ID, k[0], k[1]), store.ErrNotFound)
		}
		wantErr(t, "LockConnection(other environment)", s.LockConnection(ctx, env.ID+1000, "github", "u1"), store.ErrNotFound)
		// The transaction is still usable.
		if err := s.LockConnection(ctx, env.ID, "github", "u1"); err != nil {
			return err
		}
		c, err := s.GetConnection(ctx, env.ID, "github", "u1")
		if err != nil {
			return err
		}
		c.Metadata = map[string]any{"locked": true}
		return s.UpdateConnection(ctx, c)
	})
	must(t, err)
	got, err := s.GetConnection(ctx, env.ID, "github", "u1")
	must(t, err)
	if got.Metadata["locked"] != true || got.Version != 2 {
		t.Errorf("after the transaction: metadata %v, version %d; want locked and version 2", got.Metadata, got.Version)
	}
}

func testLockOutsideTx(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	newIntegration(t, s, env.ID, "github")
	newConn(t, s, env.ID, "github", "u1", nil)
	if err := s.LockConnection(ctx, env.ID, "github", "u1"); err == nil {
		t.Error("LockConnection outside a transaction returned nil, want an error")
	}
	var ended context.Context
	must(t, s.WithTx(ctx, func(ctx context.Context) error {
		ended = ctx
		return nil
	}))
	if err := s.LockConnection(ended, env.ID, "github", "u1"); err == nil {
		t.Error("LockConnection with the context of an ended transaction returned nil, want an error")
	}
}

// testLockWaitsForCommit has transaction A lock a connection and, while B
// is trying to lock it too, update it and commit. B's LockConnection must
// return only after A's transaction is over, and B must then read A's
// committed update.
func testLockWaitsForCommit(t *testing.T, s Store) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	env := newEnv(t, s, "dev")
	newIntegration(t, s, env.ID, "github")
	newConn(t, s, env.ID, "github", "u1", nil)

	aLocked := make(chan struct{})
	bStarting := make(chan struct{})
	var aDone atomic.Bool // set when A's function returns, before the commit
	aErr := make(chan error, 1)
	go func() {
		aErr <- s.WithTx(ctx, func(ctx context.Context) error {
			if err := s.LockConnection(ctx, env.ID, "github", "u1"); err != nil {
				return err
			}
			close(aLocked)
			select {
			case <-bStarting:
			case <-ctx.Done():
				return ctx.Err()
			}
			// Give B time to block on the lock; the assertions below do
			// not depend on it, they only become meaningful.
			time.Sleep(100 * time.Millisecond)
			c, err := s.GetConnection(ctx, env.ID, "github", "u1")
			if err != nil {
				return err
			}
			c.Metadata = map[string]any{"by": "A"}
			if err := s.UpdateConnection(ctx, c); err != nil {
				return err
			}
			aDone.Store(true)
			return nil
		})
	}()
	<-aLocked
	var sawADone bool
	var seen map[string]any
	var seenVersion int64
	close(bStarting)
	err := s.WithTx(ctx, func(ctx context.Context) error {
		if err := s.LockConnection(ctx, env.ID, "github", "u1"); err != nil {
			return err
		}
		sawADone = aDone.Load()
		c, err := s.GetConnection(ctx, env.ID, "github", "u1")
		if err != nil {
			return err
		}
		seen, seenVersion = c.Metadata, c.Version
		c.Metadata = map[string]any{"by": "B"}
		return s.UpdateConnection(ctx, c)
	})
	must(t, err)
	must(t, <-aErr)
	if !sawADone {
		t.Error("B's LockConnection returned while A's transaction still held the lock")
	}
	if seen["by"] != "A" || seenVersion != 2 {
		t.Errorf("B read metadata %v at version %d after locking, want A's committed update at version 2", seen, seenVersion)
	}
	got, err := s.GetConnection(ctx, env.ID, "github", "u1")
	must(t, err)
	if got.Metadata["by"] != "B" || got.Version != 3 {
		t.Errorf("final metadata %v, version %d; want B's update at version 3", got.Metadata, got.Version)
	}
}

// testLockSerialises has writers transactions each lock a connection, read
// it and write it back with the version read. The lock makes them take
// turns: no optimistic update may fail and at most one may be inside its
// critical section at a time.
func testLockSerialises(t *testing.T, s Store) {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	env := newEnv(t, s, "dev")
	newIntegration(t, s, env.ID, "github")
	newConn(t, s, env.ID, "github", "u1", nil)
	var inside, most atomic.Int32
	errs := race(func(i int) error {
		return s.WithTx(ctx, func(ctx context.Context) error {
			if err := s.LockConnection(ctx, env.ID, "github", "u1"); err != nil {
				return err
			}
			n := inside.Add(1)
			defer inside.Add(-1)
			for {
				m := most.Load()
				if n <= m || most.CompareAndSwap(m, n) {
					break
				}
			}
			c, err := s.GetConnection(ctx, env.ID, "github", "u1")
			if err != nil {
				return err
			}
			if c.Metadata == nil {
				c.Metadata = map[string]any{}
			}
			c.Metadata[fmt.Sprintf("writer-%02d", i)] = c.Version
			if err := s.UpdateConnection(ctx, c); err != nil {
				return fmt.Errorf("update after locking: %w", err)
			}
			return nil
		})
	})
	for i, err := range errs {
		if err != nil {
			t.Errorf("writer %d: %v", i, err)
		}
	}
	if m := most.Load(); m != 1 {
		t.Errorf("%d transactions held the lock at once, want 1", m)
	}
	c, err := s.GetConnection(ctx, env.ID, "github", "u1")
	must(t, err)
	if len(c.Metadata) != writers || c.Version != writers+1 {
		t.Errorf("metadata has %d keys at version %d, want %d keys at version %d", len(c.Metadata), c.Version, writers, writers+1)
	}
}

func testLockRollbackReleases(t *testing.T, s Store) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	env := newEnv(t, s, "dev")
	newIntegration(t, s, env.ID, "github")
	newConn(t, s, env.ID, "github", "u1", nil)
	err := s.WithTx(ctx, func(ctx context.Context) error {
		if err := s.LockConnection(ctx, env.ID, "github", "u1"); err != nil {
			return err
		}
		return errRollback
	})
	if !errors.Is(err, errRollback) {
		t.Fatalf("WithTx = %v, want the rollback error", err)
	}
	// The lock went with the rolled-back transaction.
	must(t, s.WithTx(ctx, func(ctx context.Context) error {
		return s.LockConnection(ctx, env.ID, "github", "u1")
	}))
}

// testLockDeletedWhileWaiting: a transaction waiting for the lock of a
// connection that the holder deletes gets ErrNotFound once the holder
// commits.
func testLockDeletedWhileWaiting(t *testing.T, s Store) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	env := newEnv(t, s, "dev")
	newIntegration(t, s, env.ID, "github")
	newConn(t, s, env.ID, "github", "u1", nil)
	aLocked := make(chan struct{})
	bStarting := make(chan struct{})
	aErr := make(chan error, 1)
	go func() {
		aErr <- s.WithTx(ctx, func(ctx context.Context) error {
			if err := s.LockConnection(ctx, env.ID, "github", "u1"); err != nil {
				return err
			}
			close(aLocked)
			<-bStarting
			time.Sleep(50 * time.Millisecond)
			return s.DeleteConnection(ctx, env.ID, "github", "u1")
		})
	}()
	<-aLocked
	close(bStarting)
	err := s.WithTx(ctx, func(ctx context.Context) error {
		return s.LockConnection(ctx, env.ID, "github", "u1")
	})
	must(t, <-aErr)
	wantErr(t, "LockConnection(deleted by the holder)", err, store.ErrNotFound)
}
