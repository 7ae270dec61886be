package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/lib/pq"

	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/integrations"
)

// TestImportRacesACreate: an import of a connection that another
// transaction has created but not committed waits for that transaction and
// then updates the connection, instead of failing or creating a second
// one.
func TestImportRacesACreate(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, db, schema := newStore(t)
	now := time.Now().UTC().Truncate(time.Microsecond)
	env := &environments.Environment{Account: "default", Name: "dev", SealedWebhookSigningKey: "v1:k1:x",
		WebhookSettings: environments.DefaultWebhookSettings(), CreatedAt: now, UpdatedAt: now}
	if err := s.CreateEnvironment(ctx, env); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateIntegration(ctx, &integrations.Integration{EnvironmentID: env.ID, UniqueKey: "gh", Provider: "github",
		CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	item := func(id, sealed string) *connections.ImportItem {
		return &connections.ImportItem{Connection: &connections.Connection{EnvironmentID: env.ID, IntegrationKey: "gh",
			ConnectionID: id, Provider: "github", ConnectionConfig: map[string]any{}, AuthMode: integrations.AuthModeAPIKey,
			SealedCredentials: sealed, Errors: []connections.Error{}, CreatedAt: now, UpdatedAt: now},
			ReplaceMetadata: true}
	}

	// The first import creates "c" and "d" and keeps its transaction open.
	written, commit := make(chan struct{}), make(chan struct{})
	first := []*connections.ImportItem{item("c", "v1:k1:first"), item("d", "v1:k1:first")}
	firstDone := make(chan error, 1)
	go func() {
		firstDone <- s.WithTx(context.Background(), func(ctx context.Context) error {
			err := s.ImportConnections(ctx, first)
			close(written)
			if err != nil {
				return err
			}
			<-commit
			return nil
		})
	}()
	<-written
	// The second imports "b", "c" and "e": its insert of "c" waits for
	// the first transaction.
	second := []*connections.ImportItem{item("b", "v1:k1:second"), item("c", "v1:k1:second"), item("e", "v1:k1:second")}
	secondDone := make(chan error, 1)
	go func() { secondDone <- s.ImportConnections(context.Background(), second) }()
	for waiting := false; !waiting; {
		// The schema is the test's own, so a statement on it that waits
		// for a lock is the second import. (pg_stat_activity keeps the
		// first 1 KiB of a statement: the schema is named early in it.)
		err := db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
			WHERE NOT l.granted AND a.query LIKE '%' || $1 || '.%')`, pq.QuoteIdentifier(schema)).Scan(&waiting)
		if err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-secondDone:
			t.Fatalf("the second import returned %v while the first had not committed", err)
		default:
		}
	}
	close(commit)
	if err := <-firstDone; err != nil {
		t.Fatal(err)
	}
	if err := <-secondDone; err != nil {
		t.Fatalf("second import: %v", err)
	}
	for i, want := range []bool{true, false, true} {
		if second[i].Created != want {
			t.Errorf("second import, item %d (%s): Created = %v, want %v", i, second[i].Connection.ConnectionID, second[i].Created, want)
		}
	}
	got, err := s.GetConnection(ctx, env.ID, "gh", "c")
	if err != nil {
		t.Fatal(err)
	}
	if got.SealedCredentials != "v1:k1:second" || got.Version != 2 || got.ID != first[0].Connection.ID {
		t.Errorf("c after both imports: %q version %d id %d; want the second's credentials, version 2, id %d",
			got.SealedCredentials, got.Version, got.ID, first[0].Connection.ID)
	}
	if second[1].Connection.ID != got.ID || second[1].Connection.Version != 2 {
		t.Errorf("the second import's item of c: id %d version %d", second[1].Connection.ID, second[1].Connection.Version)
	}
	n, err := s.CountConnections(ctx, env.ID, "gh")
	if err != nil || n != 4 {
		t.Errorf("CountConnections = %d, %v; want 4", n, err)
	}
}
