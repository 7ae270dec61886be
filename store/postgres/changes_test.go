package postgres_test

import (
	"cmp"
	"context"
	"slices"
	"testing"
	"time"

	"github.com/lib/pq"

	"github.com/embedauth/connect/store"
	"github.com/embedauth/connect/store/postgres"
)

// changeKey is a change as a comparable value.
type changeKey struct {
	env    int64
	ik, id string
}

// awaitChanges reads the feed from cur until it has listed want changes (a
// change of a transaction is listed once every older transaction of the
// cluster has ended or it has been seen: other tests' transactions may
// delay it a little) and returns them, sorted, with the cursor after them.
func awaitChanges(t *testing.T, s *postgres.Store, cur store.ChangeCursor, want int) ([]changeKey, store.ChangeCursor) {
	t.Helper()
	var got []changeKey
	deadline := time.Now().Add(30 * time.Second)
	for {
		changes, next, err := s.ConnectionChanges(t.Context(), cur, 1000)
		if err != nil {
			t.Fatalf("ConnectionChanges: %v", err)
		}
		for _, c := range changes {
			got = append(got, changeKey{c.EnvironmentID, c.IntegrationKey, c.ConnectionID})
		}
		cur = next
		if len(got) >= want || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	slices.SortFunc(got, func(a, b changeKey) int {
		return cmp.Or(cmp.Compare(a.ik, b.ik), cmp.Compare(a.id, b.id))
	})
	return got, cur
}

// The cases every ChangeFeed shares (updates, deletions, integrations,
// imports, rollbacks, the limit, pruning) are in store/storetest's
// ChangeFeed group, which TestConformance runs; here are those of Postgres's
// concurrent transactions.

// A transaction that commits after a younger one is listed when it commits
// (never skipped), the younger one is not held back by it, each is listed
// once, and a rolled back one never.
func TestConnectionChangesLateCommit(t *testing.T) {
	s, db, schema := newStore(t)
	ctx := context.Background()
	envID, _ := seedBatch(t, s)
	cur, err := s.ChangeCursor(ctx)
	if err != nil {
		t.Fatal(err)
	}
	update := `UPDATE ` + pq.QuoteIdentifier(schema) + `.connections SET metadata = '{"n": 1}' WHERE integration_key = 'github' AND connection_id = $1`

	old, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Rollback()
	if _, err := old.ExecContext(ctx, update, "user-1"); err != nil {
		t.Fatal(err)
	}
	aborted, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := aborted.ExecContext(ctx, update, "user-2"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, update, "user-3"); err != nil { // younger, commits first
		t.Fatal(err)
	}
	got, cur := awaitChanges(t, s, cur, 1)
	if want := []changeKey{{envID, "github", "user-3"}}; !slices.Equal(got, want) {
		t.Fatalf("changes while an older transaction runs %v, want %v", got, want)
	}
	if err := aborted.Rollback(); err != nil {
		t.Fatal(err)
	}
	if err := old.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, update, "user-4"); err != nil {
		t.Fatal(err)
	}
	got, cur = awaitChanges(t, s, cur, 2)
	if want := []changeKey{{envID, "github", "user-1"}, {envID, "github", "user-4"}}; !slices.Equal(got, want) {
		t.Fatalf("changes after the older transaction committed %v, want %v (user-3 once, user-2 rolled back)", got, want)
	}
	changes, _, err := s.ConnectionChanges(ctx, cur, 1000)
	if err != nil || len(changes) != 0 {
		t.Fatalf("ConnectionChanges after all was listed = %v, %v; want none", changes, err)
	}
}
