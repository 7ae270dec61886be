package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/lib/pq"

	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/internal/pgtest"
	"github.com/embedauth/connect/store"
	"github.com/embedauth/connect/store/postgres"
)

// TestSealingKeysMigration: migration 008 registers the key ids of the
// values stored before it.
func TestSealingKeysMigration(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db, schema := pgtest.Schema(t)
	opts := &postgres.Options{Schema: schema}
	if err := postgres.MigrateTo(ctx, db, opts, 7); err != nil {
		t.Fatal(err)
	}
	old := openStore(t, db, opts)
	now := time.Now().UTC().Truncate(time.Microsecond)
	env := &environments.Environment{Account: "default", Name: "dev", SealedWebhookSigningKey: "v1:k-env:x",
		WebhookSettings: environments.DefaultWebhookSettings(), CreatedAt: now, UpdatedAt: now}
	if err := old.CreateEnvironment(ctx, env); err != nil {
		t.Fatal(err)
	}
	if err := old.CreateIntegration(ctx, &integrations.Integration{EnvironmentID: env.ID, UniqueKey: "gh", Provider: "github",
		SealedCredentials: "v1:k-int:x", CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	for i, sealed := range []string{"v1:k-conn:a", "v1:k-conn:b", "v1:k-old_1:c", ""} {
		if err := old.CreateConnection(ctx, &connections.Connection{EnvironmentID: env.ID, IntegrationKey: "gh",
			ConnectionID: string(rune('a' + i)), Provider: "github", AuthMode: integrations.AuthModeOAuth2,
			SealedCredentials: sealed, CreatedAt: now, UpdatedAt: now}); err != nil {
			t.Fatal(err)
		}
	}
	if err := postgres.MigrateWithoutRiver(ctx, db, opts); err != nil {
		t.Fatal(err)
	}
	s := openStore(t, db, opts)
	ids, err := s.SealingKeyIDs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"k-conn", "k-env", "k-int", "k-old_1"}, ids); d != "" {
		t.Errorf("key ids after the migration (-want +got):\n%s", d)
	}
	// A LIKE pattern would take the id's '_' for any character.
	counts, err := s.ForgetSealingKeyID(ctx, "k-old-1")
	if err != nil || len(counts) != 0 {
		t.Errorf("counts of k-old-1: %v, %v", counts, err)
	}
	counts, err = s.ForgetSealingKeyID(ctx, "k-old_1")
	if err != nil || counts[store.SealedConnectionCredentials] != 1 {
		t.Errorf("counts of k-old_1: %v, %v", counts, err)
	}
}

// TestForgetSealingKeyWaitsForWriters: a value being written under a key id
// in a transaction that has not committed yet is counted, not missed: the
// forget waits for the writer, and the id stays registered.
func TestForgetSealingKeyWaitsForWriters(t *testing.T) {
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
		SealedCredentials: "v1:k1:x", CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	written, commit := make(chan struct{}), make(chan struct{})
	txDone := make(chan error, 1)
	go func() {
		txDone <- s.WithTx(context.Background(), func(ctx context.Context) error {
			if err := s.CreateConnection(ctx, &connections.Connection{EnvironmentID: env.ID, IntegrationKey: "gh",
				ConnectionID: "c", Provider: "github", AuthMode: integrations.AuthModeOAuth2,
				SealedCredentials: "v1:k-new:x", CreatedAt: now, UpdatedAt: now}); err != nil {
				close(written)
				return err
			}
			close(written)
			<-commit
			return nil
		})
	}()
	<-written
	type result struct {
		counts map[string]int
		err    error
	}
	forgot := make(chan result, 1)
	go func() {
		c, err := s.ForgetSealingKeyID(context.Background(), "k-new")
		forgot <- result{c, err}
	}()
	// Commit once the forget waits for the writer's lock.
	for waiting := false; !waiting; {
		err := db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE NOT granted
			AND relation = ($1 || '.sealing_keys')::regclass)`, pq.QuoteIdentifier(schema)).Scan(&waiting)
		if err != nil {
			t.Fatal(err)
		}
		select {
		case r := <-forgot:
			t.Fatalf("ForgetSealingKeyID returned %v, %v while a writer of the key had not committed", r.counts, r.err)
		default:
		}
	}
	close(commit)
	if err := <-txDone; err != nil {
		t.Fatal(err)
	}
	r := <-forgot
	if r.err != nil || r.counts[store.SealedConnectionCredentials] != 1 {
		t.Errorf("ForgetSealingKeyID = %v, %v; want the committed value counted", r.counts, r.err)
	}
	ids, err := s.SealingKeyIDs(ctx)
	if err != nil || !contains(ids, "k-new") {
		t.Errorf("key ids %v, %v; want k-new kept", ids, err)
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
