package postgres_test

import (
	"cmp"
	"context"
	"errors"
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

// Updates and deletions of connections are listed, per connection, and
// those of integrations as the whole integration; creations are not.
func TestConnectionChanges(t *testing.T) {
	s, _, _ := newStore(t)
	ctx := context.Background()
	envID, _ := seedBatch(t, s)
	cur, err := s.ChangeCursor(ctx)
	if err != nil {
		t.Fatal(err)
	}

	c, err := s.GetConnection(ctx, envID, "github", `with"quote`)
	if err != nil {
		t.Fatal(err)
	}
	c.Metadata = map[string]any{"changed": true}
	if err := s.UpdateConnection(ctx, c); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteConnection(ctx, envID, "slack", "user-3"); err != nil {
		t.Fatal(err)
	}
	created := *c
	created.ConnectionID, created.ID = "brand-new", 0
	if err := s.CreateConnection(ctx, &created); err != nil {
		t.Fatal(err)
	}
	got, cur := awaitChanges(t, s, cur, 2)
	want := []changeKey{{envID, "github", `with"quote`}, {envID, "slack", "user-3"}}
	if !slices.Equal(got, want) {
		t.Fatalf("changes %v, want %v (a creation lists nothing)", got, want)
	}

	it, err := s.GetIntegration(ctx, envID, "slack")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.UpdateIntegration(ctx, it); err != nil {
		t.Fatal(err)
	}
	got, _ = awaitChanges(t, s, cur, 1)
	if want := []changeKey{{envID, "slack", ""}}; !slices.Equal(got, want) {
		t.Fatalf("changes after an integration update %v, want %v", got, want)
	}
}

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

// More pending changes than the limit fail with ErrTooManyChanges and list
// nothing; a new cursor starts after them.
func TestConnectionChangesTooMany(t *testing.T) {
	s, db, schema := newStore(t)
	ctx := context.Background()
	envID, _ := seedBatch(t, s)
	cur, err := s.ChangeCursor(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// One statement, one transaction: 41 changes.
	if _, err := db.ExecContext(ctx, `UPDATE `+pq.QuoteIdentifier(schema)+`.connections SET metadata = '{}' WHERE integration_key = 'slack'`); err != nil {
		t.Fatal(err)
	}
	got, _ := awaitChanges(t, s, cur, 41)
	if len(got) != 41 {
		t.Fatalf("%d changes listed of a 41-row update, want 41", len(got))
	}
	changes, next, err := s.ConnectionChanges(ctx, cur, 40)
	if !errors.Is(err, store.ErrTooManyChanges) || changes != nil || !slices.Equal(next.Seen, cur.Seen) || next.Floor != cur.Floor {
		t.Fatalf("ConnectionChanges(limit 40) of 41 = %d changes, %+v, %v; want none, the same cursor, ErrTooManyChanges", len(changes), next, err)
	}
	fresh, err := s.ChangeCursor(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.GetConnection(ctx, envID, "github", "user-9")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.UpdateConnection(ctx, c); err != nil {
		t.Fatal(err)
	}
	got, _ = awaitChanges(t, s, fresh, 1)
	if want := []changeKey{{envID, "github", "user-9"}}; !slices.Equal(got, want) {
		t.Fatalf("changes from a new cursor %v, want only %v", got, want)
	}
}

// Pruning deletes the changes recorded before the time given.
func TestPruneConnectionChanges(t *testing.T) {
	s, db, schema := newStore(t)
	ctx := context.Background()
	seedBatch(t, s)
	if _, err := db.ExecContext(ctx, `UPDATE `+pq.QuoteIdentifier(schema)+`.connections SET metadata = '{}' WHERE connection_id LIKE 'user-1%'`); err != nil {
		t.Fatal(err)
	}
	n, err := s.PruneConnectionChanges(ctx, time.Now().Add(-time.Hour))
	if err != nil || n != 0 {
		t.Fatalf("PruneConnectionChanges(an hour ago) = %d, %v; want 0", n, err)
	}
	n, err = s.PruneConnectionChanges(ctx, time.Now().Add(time.Hour))
	if err != nil || n != 22 {
		t.Fatalf("PruneConnectionChanges(in an hour) = %d, %v; want 22 (user-1 and user-10..19 in 2 integrations)", n, err)
	}
	var left int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM `+pq.QuoteIdentifier(schema)+`.connection_changes`).Scan(&left); err != nil || left != 0 {
		t.Fatalf("%d changes left, %v", left, err)
	}
}
