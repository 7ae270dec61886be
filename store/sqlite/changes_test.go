package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/store"
	"github.com/embedauth/connect/store/sqlite"
)

// The cases every ChangeFeed shares are in store/storetest's ChangeFeed
// group (TestConformance); here are those of several Stores on one file.

// twoStores returns two Stores on one new file, as two processes have,
// with the fixture of coreFixture made through the first.
func twoStores(t *testing.T) (a, b *sqlite.Store, env int64) {
	t.Helper()
	a, env = coreFixture(t)
	return a, openPath(t, a.Path()), env
}

// listed reads the feed from cur once and returns the changes as strings
// "integration/connection", in the order listed, and the next cursor.
func listed(t *testing.T, ctx context.Context, f store.ChangeFeed, cur store.ChangeCursor) ([]string, store.ChangeCursor) {
	t.Helper()
	changes, next, err := f.ConnectionChanges(ctx, cur, 10000)
	if err != nil {
		t.Fatalf("ConnectionChanges: %v", err)
	}
	var out []string
	for _, c := range changes {
		out = append(out, c.IntegrationKey+"/"+c.ConnectionID)
	}
	return out, next
}

func createConn(t *testing.T, s *sqlite.Store, env int64, id string) *connections.Connection {
	t.Helper()
	c := &connections.Connection{EnvironmentID: env, IntegrationKey: "github", ConnectionID: id}
	if err := s.CreateConnection(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	return c
}

// The changes made through a second Store on the file (another process)
// are listed by the first, in commit order, and after a prune through the
// second the first's cursor still lists the next change.
func TestChangeFeedSecondStore(t *testing.T) {
	t.Parallel()
	a, b, env := twoStores(t)
	ctx := t.Context()
	c1 := createConn(t, a, env, "user-1")
	createConn(t, a, env, "user-2")
	cur, err := a.ChangeCursor(ctx)
	if err != nil {
		t.Fatal(err)
	}

	c1.Metadata = map[string]any{"changed": "through b"}
	if err := b.UpdateConnection(ctx, c1); err != nil {
		t.Fatal(err)
	}
	if err := b.DeleteConnection(ctx, env, "github", "user-2"); err != nil {
		t.Fatal(err)
	}
	in, err := b.GetIntegration(ctx, env, "github")
	if err != nil {
		t.Fatal(err)
	}
	if err := b.UpdateIntegration(ctx, in); err != nil {
		t.Fatal(err)
	}
	got, cur := listed(t, ctx, a, cur)
	if want := []string{"github/user-1", "github/user-2", "github/"}; !slices.Equal(got, want) {
		t.Fatalf("the first Store lists %v, want %v", got, want)
	}
	fresh, err := a.ChangeCursor(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := listed(t, ctx, a, fresh); len(got) != 0 {
		t.Fatalf("a cursor taken after the changes lists %v", got)
	}

	if n, err := b.PruneConnectionChanges(ctx, time.Now().Add(time.Hour)); err != nil || n != 3 {
		t.Fatalf("PruneConnectionChanges through the second Store = %d, %v; want 3", n, err)
	}
	if err := b.UpdateConnection(ctx, c1); err != nil {
		t.Fatal(err)
	}
	if got, _ := listed(t, ctx, a, cur); !slices.Equal(got, []string{"github/user-1"}) {
		t.Fatalf("after the prune the first Store lists %v, want [github/user-1]", got)
	}
}

// A transaction that has not committed lists nothing, and does not hold
// back the readers of the feed (of this Store or of another on the file):
// its changes are listed once it commits.
func TestChangeFeedUncommitted(t *testing.T) {
	t.Parallel()
	a, b, env := twoStores(t)
	ctx := t.Context()
	c := createConn(t, a, env, "user-1")
	cur, err := a.ChangeCursor(ctx)
	if err != nil {
		t.Fatal(err)
	}
	err = a.WithTx(ctx, func(txctx context.Context) error {
		if err := a.UpdateConnection(txctx, c); err != nil {
			return err
		}
		// Outside the transaction: the feed reads beside the writer.
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		for _, s := range []*sqlite.Store{a, b} {
			if got, _ := listed(t, rctx, s, cur); len(got) != 0 {
				t.Errorf("an uncommitted change is listed: %v", got)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []*sqlite.Store{a, b} {
		if got, _ := listed(t, ctx, s, cur); !slices.Equal(got, []string{"github/user-1"}) {
			t.Errorf("after the commit: %v, want [github/user-1]", got)
		}
	}
}

// Writers of two Stores on one file commit and roll back transactions
// while a reader of each follows the feed: each reader lists every
// committed change exactly once and no rolled back one (seq grows in
// commit order, so a cursor never skips a change that commits later).
func TestChangeFeedCommitOrder(t *testing.T) {
	t.Parallel()
	a, b, env := twoStores(t)
	ctx := t.Context()
	const writers, rounds = 2, 15 // per Store
	for _, s := range []string{"a", "b"} {
		for w := range writers {
			for i := range rounds {
				createConn(t, a, env, fmt.Sprintf("%s-%d-%d", s, w, i))
			}
		}
	}
	createConn(t, a, env, "rolled-back")
	type reader struct {
		s   *sqlite.Store
		cur store.ChangeCursor
		got []string
	}
	readers := []*reader{{s: a}, {s: b}}
	for _, r := range readers {
		var err error
		if r.cur, err = r.s.ChangeCursor(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// poll runs on the reader's goroutine, then on the test's.
	poll := func(r *reader) error {
		changes, next, err := r.s.ConnectionChanges(ctx, r.cur, 10000)
		if err != nil {
			return err
		}
		for _, c := range changes {
			r.got = append(r.got, c.IntegrationKey+"/"+c.ConnectionID)
		}
		r.cur = next
		return nil
	}

	update := func(s *sqlite.Store, id string, commit bool) error {
		err := s.WithTx(ctx, func(ctx context.Context) error {
			c, err := s.GetConnection(ctx, env, "github", id)
			if err != nil {
				return err
			}
			if err := s.UpdateConnection(ctx, c); err != nil {
				return err
			}
			if !commit {
				return errRolledBack
			}
			return nil
		})
		if !commit && errors.Is(err, errRolledBack) {
			return nil
		}
		return err
	}
	var (
		wg   sync.WaitGroup
		errs = make(chan error, 2*writers+len(readers))
		done = make(chan struct{})
	)
	for k, s := range []*sqlite.Store{a, b} {
		for w := range writers {
			wg.Go(func() {
				for i := range rounds {
					id := fmt.Sprintf("%s-%d-%d", []string{"a", "b"}[k], w, i)
					if err := update(s, id, true); err != nil {
						errs <- err
						return
					}
					if err := update(s, "rolled-back", false); err != nil {
						errs <- err
						return
					}
				}
			})
		}
	}
	var readersDone sync.WaitGroup
	for _, r := range readers {
		readersDone.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				if err := poll(r); err != nil {
					errs <- err
					return
				}
				time.Sleep(time.Millisecond)
			}
		})
	}
	wg.Wait()
	close(done)
	readersDone.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	var want []string
	for _, s := range []string{"a", "b"} {
		for w := range writers {
			for i := range rounds {
				want = append(want, fmt.Sprintf("github/%s-%d-%d", s, w, i))
			}
		}
	}
	slices.Sort(want)
	for k, r := range readers {
		if err := poll(r); err != nil { // the changes committed after its last poll
			t.Fatal(err)
		}
		got := slices.Sorted(slices.Values(r.got))
		if !slices.Equal(got, want) {
			t.Errorf("reader %d listed %d changes, want each of the %d committed once: %v", k, len(got), len(want), got)
		}
	}
}

var errRolledBack = errors.New("rolled back")
