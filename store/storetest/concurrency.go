package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/store"
)

var concurrencyTests = []test{
	{"DistinctCreates", testConcurrentDistinctCreates},
	{"SameCreate", testConcurrentSameCreate},
	{"OptimisticUpdates", testConcurrentOptimisticUpdates},
	{"Transactions", testConcurrentTransactions},
}

const writers = 20

// race runs fn in writers goroutines released at once and returns their
// errors.
func race(fn func(i int) error) []error {
	errs := make([]error, writers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			<-start
			errs[i] = fn(i)
		})
	}
	close(start)
	wg.Wait()
	return errs
}

func testConcurrentDistinctCreates(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	newIntegration(t, s, env.ID, "github")
	errs := race(func(i int) error {
		return s.CreateConnection(ctx, &connections.Connection{EnvironmentID: env.ID, IntegrationKey: "github",
			ConnectionID: fmt.Sprintf("u%02d", i), CreatedAt: ts, UpdatedAt: ts})
	})
	for i, err := range errs {
		if err != nil {
			t.Errorf("writer %d: %v", i, err)
		}
	}
	list, err := s.ListConnections(ctx, connections.Filter{EnvironmentID: env.ID})
	must(t, err)
	seen := map[string]bool{}
	for _, c := range list {
		seen[c.ConnectionID] = true
	}
	for i := range writers {
		if id := fmt.Sprintf("u%02d", i); !seen[id] {
			t.Errorf("connection %s is missing", id)
		}
	}
	if len(list) != writers {
		t.Errorf("ListConnections returned %d connections, want %d", len(list), writers)
	}
}

func testConcurrentSameCreate(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	newIntegration(t, s, env.ID, "github")
	errs := race(func(i int) error {
		return s.CreateConnection(ctx, &connections.Connection{EnvironmentID: env.ID, IntegrationKey: "github",
			ConnectionID: "same", Provider: fmt.Sprint(i), CreatedAt: ts, UpdatedAt: ts})
	})
	won := 0
	for i, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, store.ErrConflict):
			t.Errorf("writer %d: got %v, want nil or ErrConflict", i, err)
		}
	}
	if won != 1 {
		t.Errorf("%d writers created the connection, want exactly 1", won)
	}
	n, err := s.CountConnections(ctx, env.ID, "github")
	must(t, err)
	if n != 1 {
		t.Errorf("CountConnections = %d, want 1", n)
	}
}

// testConcurrentOptimisticUpdates has every writer add one metadata key,
// retrying on ErrConflict; no write may be lost.
func testConcurrentOptimisticUpdates(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	newIntegration(t, s, env.ID, "github")
	newConn(t, s, env.ID, "github", "u1", nil)
	errs := race(func(i int) error {
		for attempt := 0; attempt < 10*writers; attempt++ {
			c, err := s.GetConnection(ctx, env.ID, "github", "u1")
			if err != nil {
				return err
			}
			if c.Metadata == nil {
				c.Metadata = map[string]any{}
			}
			c.Metadata[fmt.Sprintf("writer-%02d", i)] = "done"
			err = s.UpdateConnection(ctx, c)
			if errors.Is(err, store.ErrConflict) {
				continue
			}
			return err
		}
		return errors.New("too many conflicts")
	})
	for i, err := range errs {
		if err != nil {
			t.Errorf("writer %d: %v", i, err)
		}
	}
	c, err := s.GetConnection(ctx, env.ID, "github", "u1")
	must(t, err)
	if len(c.Metadata) != writers {
		t.Errorf("metadata has %d keys, want %d: %v", len(c.Metadata), writers, c.Metadata)
	}
	if c.Version != writers+1 {
		t.Errorf("Version = %d, want %d", c.Version, writers+1)
	}
}

// testConcurrentTransactions runs transactions that each write several
// records, half of them rolling back; every committed transaction is
// complete and no rolled-back write remains.
func testConcurrentTransactions(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	newIntegration(t, s, env.ID, "github")
	errs := race(func(i int) error {
		err := s.WithTx(ctx, func(ctx context.Context) error {
			for j := range 3 {
				err := s.CreateConnection(ctx, &connections.Connection{EnvironmentID: env.ID, IntegrationKey: "github",
					ConnectionID: fmt.Sprintf("tx%02d-%d", i, j), CreatedAt: ts, UpdatedAt: ts})
				if err != nil {
					return err
				}
			}
			if i%2 == 1 {
				return errRollback
			}
			return nil
		})
		if i%2 == 1 && errors.Is(err, errRollback) {
			return nil
		}
		return err
	})
	for i, err := range errs {
		if err != nil {
			t.Errorf("writer %d: %v", i, err)
		}
	}
	list, err := s.ListConnections(ctx, connections.Filter{EnvironmentID: env.ID})
	must(t, err)
	got := map[string]bool{}
	for _, c := range list {
		got[c.ConnectionID] = true
	}
	want := map[string]bool{}
	for i := 0; i < writers; i += 2 {
		for j := range 3 {
			want[fmt.Sprintf("tx%02d-%d", i, j)] = true
		}
	}
	diff(t, "committed connections", want, got)
}
