package storetest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/store"
)

// changeFeedTests run when the Store implements store.ChangeFeed; they are
// skipped otherwise.
var changeFeedTests = []test{
	{"UpdatesAndDeletes", feedTest(testChangesUpdatesAndDeletes)},
	{"Integrations", feedTest(testChangesIntegrations)},
	{"Import", feedTest(testChangesImport)},
	{"Rollback", feedTest(testChangesRollback)},
	{"TooMany", feedTest(testChangesTooMany)},
	{"Prune", feedTest(testChangesPrune)},
}

// feedTest returns fn as a test of the suite, skipped when the Store has
// no change feed.
func feedTest(fn func(t *testing.T, s Store, f store.ChangeFeed)) func(t *testing.T, s Store) {
	return func(t *testing.T, s Store) {
		f, ok := s.(store.ChangeFeed)
		if !ok {
			t.Skip("the Store has no change feed (store.ChangeFeed)")
		}
		fn(t, s, f)
	}
}

// change is a listed change as a comparable value.
type change struct {
	env    int64
	ik, id string
}

// awaitChanges reads the feed from cur until it has listed at least want
// changes, for at most 30 seconds (a feed may list a change once older
// transactions, of other tests too, have ended), and returns them, sorted,
// with the cursor after them.
func awaitChanges(t *testing.T, f store.ChangeFeed, cur store.ChangeCursor, want int) ([]change, store.ChangeCursor) {
	t.Helper()
	var got []change
	deadline := time.Now().Add(30 * time.Second)
	for {
		changes, next, err := f.ConnectionChanges(t.Context(), cur, 1000)
		if err != nil {
			t.Fatalf("ConnectionChanges: %v", err)
		}
		for _, c := range changes {
			got = append(got, change{c.EnvironmentID, c.IntegrationKey, c.ConnectionID})
		}
		cur = next
		if len(got) >= want || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	slices.SortFunc(got, func(a, b change) int {
		return cmp.Or(cmp.Compare(a.env, b.env), cmp.Compare(a.ik, b.ik), cmp.Compare(a.id, b.id))
	})
	return got, cur
}

// wantChanges fails unless got equals want.
func wantChanges(t *testing.T, what string, got, want []change) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("changes %s: %v, want %v", what, got, want)
	}
}

// noChanges fails unless the feed lists nothing from cur.
func noChanges(t *testing.T, f store.ChangeFeed, cur store.ChangeCursor) {
	t.Helper()
	changes, _, err := f.ConnectionChanges(t.Context(), cur, 1000)
	if err != nil || len(changes) != 0 {
		t.Fatalf("ConnectionChanges after everything was listed = %v, %v; want none", changes, err)
	}
}

func changeCursor(t *testing.T, f store.ChangeFeed) store.ChangeCursor {
	t.Helper()
	cur, err := f.ChangeCursor(t.Context())
	must(t, err)
	return cur
}

// testChangesUpdatesAndDeletes: updates and deletions of connections are
// listed, per connection and environment; creations are not.
func testChangesUpdatesAndDeletes(t *testing.T, s Store, f store.ChangeFeed) {
	ctx := t.Context()
	a, b := newEnv(t, s, "a"), newEnv(t, s, "b")
	for _, env := range []int64{a.ID, b.ID} {
		newIntegration(t, s, env, "github")
		newIntegration(t, s, env, "slack")
	}
	c := newConn(t, s, a.ID, "github", `with"quote`, nil)
	newConn(t, s, a.ID, "slack", "user-3", nil)
	other := newConn(t, s, b.ID, "github", `with"quote`, nil)
	cur := changeCursor(t, f)

	c.Metadata = map[string]any{"changed": true}
	must(t, s.UpdateConnection(ctx, c))
	must(t, s.DeleteConnection(ctx, a.ID, "slack", "user-3"))
	newConn(t, s, a.ID, "github", "brand-new", nil)
	got, cur := awaitChanges(t, f, cur, 2)
	wantChanges(t, "after an update, a deletion and a creation (which lists nothing)", got,
		[]change{{a.ID, "github", `with"quote`}, {a.ID, "slack", "user-3"}})

	other.RefreshAttempts = 2
	must(t, s.UpdateConnection(ctx, other))
	got, cur = awaitChanges(t, f, cur, 1)
	wantChanges(t, "after an update in another environment", got, []change{{b.ID, "github", `with"quote`}})
	noChanges(t, f, cur)
}

// testChangesIntegrations: an update or deletion of an integration is
// listed as the whole integration (an empty ConnectionID).
func testChangesIntegrations(t *testing.T, s Store, f store.ChangeFeed) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	gh := newIntegration(t, s, env.ID, "github")
	newIntegration(t, s, env.ID, "slack")
	newConn(t, s, env.ID, "slack", "user-1", nil)
	cur := changeCursor(t, f)

	gh.DisplayName = "GitHub, renamed"
	must(t, s.UpdateIntegration(ctx, gh))
	got, cur := awaitChanges(t, f, cur, 1)
	wantChanges(t, "after an integration update", got, []change{{env.ID, "github", ""}})

	// The deletion lists the integration; its connections, deleted with
	// it, may be listed too.
	must(t, s.DeleteIntegration(ctx, env.ID, "slack"))
	got, cur = awaitChanges(t, f, cur, 1)
	if !slices.Contains(got, change{env.ID, "slack", ""}) {
		t.Fatalf("changes after an integration deletion: %v, want %v among them", got, change{env.ID, "slack", ""})
	}
	for _, c := range got {
		if c != (change{env.ID, "slack", ""}) && c != (change{env.ID, "slack", "user-1"}) {
			t.Fatalf("changes after an integration deletion: %v lists %v", got, c)
		}
	}
	noChanges(t, f, cur)
}

// testChangesImport: an import lists the connections it updates, not those
// it creates.
func testChangesImport(t *testing.T, s Store, f store.ChangeFeed) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	newIntegration(t, s, env.ID, "github")
	newConn(t, s, env.ID, "github", "old", nil)
	cur := changeCursor(t, f)

	must(t, s.ImportConnections(ctx, []*connections.ImportItem{
		importItem(env.ID, "github", "new"), importItem(env.ID, "github", "old"),
	}))
	got, cur := awaitChanges(t, f, cur, 1)
	wantChanges(t, "after an import", got, []change{{env.ID, "github", "old"}})
	noChanges(t, f, cur)
}

// testChangesRollback: the changes of a transaction that rolls back are
// never listed; those of one that commits are, once.
func testChangesRollback(t *testing.T, s Store, f store.ChangeFeed) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	newIntegration(t, s, env.ID, "github")
	c1 := newConn(t, s, env.ID, "github", "user-1", nil)
	c2 := newConn(t, s, env.ID, "github", "user-2", nil)
	newConn(t, s, env.ID, "github", "user-3", nil)
	cur := changeCursor(t, f)

	err := s.WithTx(ctx, func(ctx context.Context) error {
		if err := s.UpdateConnection(ctx, c1); err != nil {
			return err
		}
		return errRollback
	})
	wantErr(t, "WithTx", err, errRollback)
	must(t, s.WithTx(ctx, func(ctx context.Context) error {
		if err := s.UpdateConnection(ctx, c2); err != nil {
			return err
		}
		return s.DeleteConnection(ctx, env.ID, "github", "user-3")
	}))
	got, cur := awaitChanges(t, f, cur, 2)
	wantChanges(t, "after a rolled back and a committed transaction", got,
		[]change{{env.ID, "github", "user-2"}, {env.ID, "github", "user-3"}})
	noChanges(t, f, cur)
}

// testChangesTooMany: more pending changes than the limit fail with
// ErrTooManyChanges and list nothing; as many as the limit are listed; a
// new cursor starts after them.
func testChangesTooMany(t *testing.T, s Store, f store.ChangeFeed) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	newIntegration(t, s, env.ID, "github")
	var items []*connections.ImportItem
	for i := range 41 {
		id := fmt.Sprintf("user-%02d", i)
		newConn(t, s, env.ID, "github", id, nil)
		items = append(items, importItem(env.ID, "github", id))
	}
	cur := changeCursor(t, f)
	must(t, s.ImportConnections(ctx, items)) // one transaction: 41 changes
	if got, _ := awaitChanges(t, f, cur, 41); len(got) != 41 {
		t.Fatalf("%d changes listed of a 41-connection import, want 41", len(got))
	}

	changes, next, err := f.ConnectionChanges(ctx, cur, 40)
	if !errors.Is(err, store.ErrTooManyChanges) || changes != nil || next.Floor != cur.Floor || !slices.Equal(next.Seen, cur.Seen) {
		t.Fatalf("ConnectionChanges(limit 40) of 41 = %d changes, %+v, %v; want none, the same cursor %+v, ErrTooManyChanges",
			len(changes), next, err, cur)
	}
	changes, _, err = f.ConnectionChanges(ctx, cur, 41)
	if err != nil || len(changes) != 41 {
		t.Fatalf("ConnectionChanges(limit 41) of 41 = %d changes, %v; want all", len(changes), err)
	}

	fresh := changeCursor(t, f)
	c, err := s.GetConnection(ctx, env.ID, "github", "user-09")
	must(t, err)
	must(t, s.UpdateConnection(ctx, c))
	got, _ := awaitChanges(t, f, fresh, 1)
	wantChanges(t, "from a new cursor", got, []change{{env.ID, "github", "user-09"}})
}

// testChangesPrune: pruning deletes the changes recorded before the time
// given, and the changes recorded after it are listed from a cursor taken
// before it.
func testChangesPrune(t *testing.T, s Store, f store.ChangeFeed) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	newIntegration(t, s, env.ID, "github")
	var conns []*connections.Connection
	for _, id := range []string{"user-1", "user-2", "user-3"} {
		conns = append(conns, newConn(t, s, env.ID, "github", id, nil))
	}
	cur := changeCursor(t, f)
	for _, c := range conns {
		must(t, s.UpdateConnection(ctx, c))
	}
	_, cur = awaitChanges(t, f, cur, 3)

	n, err := f.PruneConnectionChanges(ctx, time.Now().Add(-time.Hour))
	if err != nil || n != 0 {
		t.Fatalf("PruneConnectionChanges(an hour ago) = %d, %v; want 0", n, err)
	}
	n, err = f.PruneConnectionChanges(ctx, time.Now().Add(time.Hour))
	if err != nil || n != 3 {
		t.Fatalf("PruneConnectionChanges(in an hour) = %d, %v; want 3", n, err)
	}
	noChanges(t, f, cur)

	// Every change is gone: the next one is still listed after the
	// cursor.
	must(t, s.UpdateConnection(ctx, conns[1]))
	got, _ := awaitChanges(t, f, cur, 1)
	wantChanges(t, "after pruning every change", got, []change{{env.ID, "github", "user-2"}})
	n, err = f.PruneConnectionChanges(ctx, time.Now().Add(time.Hour))
	if err != nil || n != 1 {
		t.Fatalf("PruneConnectionChanges(in an hour) = %d, %v; want 1", n, err)
	}
}
