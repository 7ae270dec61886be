package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/internal/pgtest"
	"github.com/embedauth/connect/store"
	"github.com/embedauth/connect/store/postgres"
)

// hotQueries is the number of queries a Store prepares.
const hotQueries = 7

// fixtureIDs is a populated environment.
type fixtureIDs struct {
	env  *environments.Environment
	key  *environments.APIKey
	conn *connections.Connection
}

func seed(t testing.TB, s *postgres.Store) fixtureIDs {
	t.Helper()
	ctx := context.Background()
	env := &environments.Environment{Name: "dev", Account: "acme"}
	if err := s.CreateEnvironment(ctx, env); err != nil {
		t.Fatal(err)
	}
	key := &environments.APIKey{EnvironmentID: env.ID, Name: "k", Hash: []byte("hash-0001"), Scopes: []string{"all"}}
	if err := s.CreateAPIKey(ctx, key); err != nil {
		t.Fatal(err)
	}
	in := &integrations.Integration{EnvironmentID: env.ID, UniqueKey: "github", Provider: "github",
		IntegrationConfig: map[string]string{"scopes": "repo,user"}, SealedCredentials: "sealed-integration"}
	if err := s.CreateIntegration(ctx, in); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	conn := &connections.Connection{EnvironmentID: env.ID, IntegrationKey: "github", ConnectionID: "u1",
		Provider: "github", AuthMode: "OAUTH2", SealedCredentials: "sealed-credentials",
		Metadata: map[string]any{"user": "u1", "plan": "pro"}, Tags: map[string]string{"team": "a"},
		ConnectionConfig: map[string]any{"subdomain": "acme"}, CredentialsExpiresAt: &now,
		CreatedAt: now, UpdatedAt: now}
	if err := s.CreateConnection(ctx, conn); err != nil {
		t.Fatal(err)
	}
	return fixtureIDs{env: env, key: key, conn: conn}
}

// callHot calls every method that runs a prepared query.
func callHot(ctx context.Context, s *postgres.Store, f fixtureIDs) error {
	if _, err := s.GetConnection(ctx, f.env.ID, "github", "u1"); err != nil {
		return fmt.Errorf("GetConnection: %w", err)
	}
	if err := s.UpdateConnection(ctx, f.conn); err != nil {
		return fmt.Errorf("UpdateConnection: %w", err)
	}
	if n, err := s.CountConnections(ctx, f.env.ID, "github"); err != nil || n != 1 {
		return fmt.Errorf("CountConnections = %d, %v; want 1", n, err)
	}
	if _, err := s.GetIntegration(ctx, f.env.ID, "github"); err != nil {
		return fmt.Errorf("GetIntegration: %w", err)
	}
	if _, err := s.GetEnvironment(ctx, f.env.ID); err != nil {
		return fmt.Errorf("GetEnvironment: %w", err)
	}
	if _, err := s.GetEnvironmentByName(ctx, "dev"); err != nil {
		return fmt.Errorf("GetEnvironmentByName: %w", err)
	}
	if _, err := s.GetAPIKeyByHash(ctx, f.key.Hash); err != nil {
		return fmt.Errorf("GetAPIKeyByHash: %w", err)
	}
	return nil
}

// The Store prepares its hot queries once, reuses them inside transactions,
// never takes a second connection inside one, and Close deallocates them.
func TestPreparedStatements(t *testing.T) {
	t.Parallel()
	shared, schema := pgtest.Schema(t)
	if err := postgres.Migrate(t.Context(), shared, &postgres.Options{Schema: schema}); err != nil {
		t.Fatal(err)
	}
	// A pool of one connection: pg_prepared_statements on it lists every
	// statement of the Store, and a call needing a second connection would
	// wait forever.
	db, err := sql.Open("postgres", pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { _ = db.Close() })
	s := openStore(t, db, &postgres.Options{Schema: schema})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()

	count := func(q interface {
		QueryRowContext(context.Context, string, ...any) *sql.Row
	}) int {
		t.Helper()
		var n int
		if err := q.QueryRowContext(ctx, `SELECT count(*) FROM pg_prepared_statements`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	// Not prepared yet, inside a transaction: runs unprepared on the
	// transaction rather than waiting for a second connection.
	txCtx, txCancel := context.WithTimeout(ctx, 10*time.Second)
	defer txCancel()
	err = s.WithTx(txCtx, func(ctx context.Context) error {
		_, err := s.GetConnection(ctx, 1, "github", "u1")
		if !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("GetConnection in a transaction: got %v, want ErrNotFound", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := count(db); n != 0 {
		t.Errorf("%d statements prepared inside a transaction, want 0", n)
	}

	f := seed(t, s)
	if n := count(db); n != 0 {
		t.Errorf("%d statements prepared by writes, want 0", n)
	}
	for range 2 {
		if err := callHot(ctx, s, f); err != nil {
			t.Fatal(err)
		}
		if n := count(db); n != hotQueries {
			t.Errorf("%d statements prepared, want %d", n, hotQueries)
		}
	}
	err = s.WithTx(ctx, func(ctx context.Context) error {
		if err := callHot(ctx, s, f); err != nil {
			return err
		}
		tx, _ := postgres.TxFromContext(ctx)
		if n := count(tx); n != hotQueries {
			t.Errorf("%d statements prepared inside a transaction, want the %d of the pool", n, hotQueries)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if n := count(db); n != 0 {
		t.Errorf("%d statements left after Close, want 0", n)
	}
	// Still usable, unprepared.
	if err := callHot(ctx, s, f); err != nil {
		t.Fatalf("after Close: %v", err)
	}
	if n := count(db); n != 0 {
		t.Errorf("%d statements prepared after Close, want 0", n)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}

	// Disabled: nothing is ever prepared.
	u := openStore(t, db, &postgres.Options{Schema: schema, DisablePreparedStatements: true})
	if err := callHot(ctx, u, f); err != nil {
		t.Fatal(err)
	}
	if n := count(db); n != 0 {
		t.Errorf("%d statements prepared with DisablePreparedStatements, want 0", n)
	}
}

// Close waits for the calls running on prepared statements; calls racing it
// either use the statements or run unprepared, and never fail.
func TestCloseConcurrently(t *testing.T) {
	t.Parallel()
	s, db, schema := newStore(t)
	f := seed(t, s)
	ctx := t.Context()
	for range 20 {
		s := openStore(t, db, &postgres.Options{Schema: schema})
		errs := make(chan error, 8)
		for range cap(errs) {
			go func() {
				for range 5 {
					if _, err := s.GetConnection(ctx, f.env.ID, "github", "u1"); err != nil {
						errs <- err
						return
					}
				}
				errs <- nil
			}()
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		for range cap(errs) {
			if err := <-errs; err != nil {
				t.Fatalf("GetConnection racing Close: %v", err)
			}
		}
	}
}

// BenchmarkGetConnection compares GetConnection through the cached prepared
// statement with the unprepared query (Options.DisablePreparedStatements),
// on one schema and one pool.
func BenchmarkGetConnection(b *testing.B) {
	db, schema := pgtest.Schema(b)
	if err := postgres.Migrate(context.Background(), db, &postgres.Options{Schema: schema}); err != nil {
		b.Fatal(err)
	}
	f := seed(b, openStore(b, db, &postgres.Options{Schema: schema}))
	for _, bc := range []struct {
		name    string
		disable bool
	}{{"prepared", false}, {"unprepared", true}} {
		b.Run(bc.name, func(b *testing.B) {
			s := openStore(b, db, &postgres.Options{Schema: schema, DisablePreparedStatements: bc.disable})
			ctx := context.Background()
			// Prepares the statement, outside the measurement.
			if _, err := s.GetConnection(ctx, f.env.ID, "github", "u1"); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.GetConnection(ctx, f.env.ID, "github", "u1"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
