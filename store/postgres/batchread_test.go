package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/store"
	"github.com/embedauth/connect/store/postgres"
)

// batchIDs are connection ids that an array parameter must carry intact.
var batchIDs = []string{`plain`, `with"quote`, `a,b`, `{braces}`, `back\slash`, `ünïcödé`, `NULL`, ` spaced `,
	`'single'`, `semi;colon`, `a"b\c,{d}`}

// seedBatch creates an environment with two integrations and the
// connections of batchIDs (and user-0 to user-29) in each.
func seedBatch(t *testing.T, s *postgres.Store) (envID int64, ids []string) {
	t.Helper()
	ctx := context.Background()
	env := &environments.Environment{Name: "dev", Account: "acme"}
	if err := s.CreateEnvironment(ctx, env); err != nil {
		t.Fatal(err)
	}
	ids = append([]string(nil), batchIDs...)
	for i := range 30 {
		ids = append(ids, fmt.Sprint("user-", i))
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	for _, ik := range []string{"github", "slack"} {
		if err := s.CreateIntegration(ctx, &integrations.Integration{EnvironmentID: env.ID, UniqueKey: ik, Provider: ik}); err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			c := &connections.Connection{EnvironmentID: env.ID, IntegrationKey: ik, ConnectionID: id, Provider: ik,
				AuthMode: "OAUTH2", SealedCredentials: "sealed-" + ik + "-" + id,
				Metadata: map[string]any{"id": id, "integration": ik}, CreatedAt: now, UpdatedAt: now}
			if err := s.CreateConnection(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
	}
	return env.ID, ids
}

func checkConn(c *connections.Connection, envID int64, ik, id string) error {
	if c == nil {
		return errors.New("no connection")
	}
	if c.EnvironmentID != envID || c.IntegrationKey != ik || c.ConnectionID != id ||
		c.SealedCredentials != "sealed-"+ik+"-"+id || c.Metadata["id"] != id || c.Metadata["integration"] != ik {
		return fmt.Errorf("got %s/%s/%q (sealed %q, metadata %v), want %s/%q", c.IntegrationKey, c.ConnectionID, c.ConnectionID,
			c.SealedCredentials, c.Metadata, ik, id)
	}
	return nil
}

// One batched read returns each key's own connection, whatever its id
// holds, tells missing keys apart, and keeps keys that differ only by
// environment or integration apart.
func TestReadConnectionsBatch(t *testing.T) {
	s, _, _ := newStore(t)
	envID, ids := seedBatch(t, s)
	var keys [][3]any
	type want struct {
		ik, id  string
		missing bool
	}
	var wants []want
	for _, id := range ids {
		for _, ik := range []string{"slack", "github"} {
			keys = append(keys, [3]any{envID, ik, id})
			wants = append(wants, want{ik: ik, id: id})
		}
	}
	for _, k := range [][3]any{{envID, "github", "nobody"}, {envID + 1000, "github", "plain"}, {envID, "jira", "plain"}, {envID, "github", "Plain"}} {
		keys = append(keys, k)
		wants = append(wants, want{missing: true})
	}
	got, errs, err := s.ReadConnections(context.Background(), keys)
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range wants {
		if w.missing {
			if !errors.Is(errs[i], store.ErrNotFound) || got[i] != nil {
				t.Errorf("key %v: %v, %v; want ErrNotFound", keys[i], got[i], errs[i])
			}
			continue
		}
		if errs[i] != nil {
			t.Errorf("key %v: %v", keys[i], errs[i])
			continue
		}
		if err := checkConn(got[i], envID, w.ik, w.id); err != nil {
			t.Errorf("key %v: %v", keys[i], err)
		}
	}
}

// Concurrent GetConnection calls that queue behind running reads are
// answered, each with its own connection, by the batches that follow.
func TestGetConnectionCoalesced(t *testing.T) {
	s, db, schema := newStore(t)
	envID, ids := seedBatch(t, s)
	ctx := context.Background()

	// Prepares the single read's statement: preparing it under the lock
	// below would wait, holding the Store's preparation in the other calls.
	if _, err := s.GetConnection(ctx, envID, "github", "plain"); err != nil {
		t.Fatal(err)
	}
	// Hold the reads: every read of the table waits for this lock, so the
	// calls beyond the reads in flight queue for a batch.
	lock, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lock.ExecContext(ctx, `LOCK TABLE "`+schema+`".connections IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	// The first DefaultReadsInFlight calls each start a read, which waits
	// for the lock; every call after them queues for a batch.
	blocked := func() int {
		var n int
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND query LIKE '%' || $1 || '%'`, `"`+schema+`".connections`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	type call struct{ ik, id string }
	var calls []call
	for _, id := range ids {
		calls = append(calls, call{"github", id}, call{"slack", id}, call{"github", id}) // a key twice
	}
	calls = append(calls, call{"github", "nobody"}, call{"nowhere", "plain"})
	errc := make(chan error, len(calls))
	var wg sync.WaitGroup
	for i, c := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := s.GetConnection(ctx, envID, c.ik, c.id)
			if c.id == "nobody" || c.ik == "nowhere" {
				if !errors.Is(err, store.ErrNotFound) {
					errc <- fmt.Errorf("%s/%s: %v, want ErrNotFound", c.ik, c.id, err)
				}
				return
			}
			if err != nil {
				errc <- fmt.Errorf("%s/%q: %w", c.ik, c.id, err)
				return
			}
			if err := checkConn(got, envID, c.ik, c.id); err != nil {
				errc <- err
			}
		}()
		if i < postgres.DefaultReadsInFlight {
			for blocked() < i+1 {
				time.Sleep(time.Millisecond)
			}
		}
	}
	for s.PendingReads() < len(calls)-postgres.DefaultReadsInFlight {
		time.Sleep(time.Millisecond)
	}
	if err := lock.Commit(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}

	// A caller that gives up while it waits gets its context's error.
	lock, err = db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Rollback()
	if _, err := lock.ExecContext(ctx, `LOCK TABLE "`+schema+`".connections IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := s.GetConnection(cctx, envID, "github", "plain")
		done <- err
	}()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: %v, want context.Canceled", err)
	}
	if err := lock.Rollback(); err != nil {
		t.Fatal(err)
	}
}

// Inside a transaction GetConnection reads through it: it sees the
// transaction's own writes, which a batched read on another session could
// not.
func TestGetConnectionInTxNotBatched(t *testing.T) {
	s, _, _ := newStore(t)
	envID, _ := seedBatch(t, s)
	ctx := context.Background()
	err := s.WithTx(ctx, func(ctx context.Context) error {
		c, err := s.GetConnection(ctx, envID, "github", "plain")
		if err != nil {
			return err
		}
		c.Metadata = map[string]any{"id": "plain", "integration": "github", "changed": true}
		if err := s.UpdateConnection(ctx, c); err != nil {
			return err
		}
		got, err := s.GetConnection(ctx, envID, "github", "plain")
		if err != nil {
			return err
		}
		if got.Metadata["changed"] != true {
			return fmt.Errorf("the transaction's read missed its own write: metadata %v", got.Metadata)
		}
		return errors.New("roll back")
	})
	if err == nil || err.Error() != "roll back" {
		t.Fatal(err)
	}
	got, err := s.GetConnection(ctx, envID, "github", "plain")
	if err != nil || got.Metadata["changed"] != nil {
		t.Fatalf("after the rollback: %v, %v", got, err)
	}
}
