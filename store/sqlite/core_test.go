package sqlite_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/oplog"
	"github.com/embedauth/connect/store"
	"github.com/embedauth/connect/store/sqlite"
)

// coreFixture returns a Store on a file with one environment and its
// integration "github".
func coreFixture(t *testing.T) (*sqlite.Store, int64) {
	t.Helper()
	s := openFile(t)
	ts := time.Date(2025, 3, 14, 15, 9, 26, 0, time.UTC)
	env := &environments.Environment{Name: "dev", CreatedAt: ts, UpdatedAt: ts}
	if err := s.CreateEnvironment(t.Context(), env); err != nil {
		t.Fatal(err)
	}
	in := &integrations.Integration{EnvironmentID: env.ID, UniqueKey: "github", CreatedAt: ts, UpdatedAt: ts}
	if err := s.CreateIntegration(t.Context(), in); err != nil {
		t.Fatal(err)
	}
	return s, env.ID
}

// TestSearchFoldsUnicode: Search is case-insensitive beyond ASCII, as
// Postgres' ILIKE (in a UTF-8 locale) is; SQLite's own
// LIKE folds ASCII letters only.
func TestSearchFoldsUnicode(t *testing.T) {
	t.Parallel()
	s, env := coreFixture(t)
	ctx := t.Context()
	for _, id := range []string{"Ünïcode-Ærø", "plain"} {
		c := &connections.Connection{EnvironmentID: env, IntegrationKey: "github", ConnectionID: id}
		if err := s.CreateConnection(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	for _, search := range []string{"ünïcode-æ", "ÜNÏCODE", "RØ"} {
		list, err := s.ListConnections(ctx, connections.Filter{EnvironmentID: env, Search: search})
		if err != nil {
			t.Fatal(err)
		}
		if len(list) != 1 || list[0].ConnectionID != "Ünïcode-Ærø" {
			t.Errorf("Search %q found %d connections, want Ünïcode-Ærø", search, len(list))
		}
	}
}

// TestImportRefusedInTransaction: an import refused inside a transaction,
// here by a log entry ID stored already, writes none of its connections,
// and the transaction goes on.
func TestImportRefusedInTransaction(t *testing.T) {
	t.Parallel()
	s, env := coreFixture(t)
	ctx := t.Context()
	entry := func(id string) *oplog.Entry {
		return &oplog.Entry{ID: id, EnvironmentID: env, Type: "connection", Status: oplog.StatusSuccess}
	}
	if err := s.AppendLog(ctx, entry("taken")); err != nil {
		t.Fatal(err)
	}
	item := func(id, logID string) *connections.ImportItem {
		return &connections.ImportItem{
			Connection: &connections.Connection{EnvironmentID: env, IntegrationKey: "github", ConnectionID: id},
			Log:        entry(logID),
		}
	}
	err := s.WithTx(ctx, func(ctx context.Context) error {
		err := s.ImportConnections(ctx, []*connections.ImportItem{item("a", "log-a"), item("b", "taken")})
		if !errors.Is(err, store.ErrConflict) {
			t.Errorf("ImportConnections = %v, want ErrConflict", err)
		}
		return s.ImportConnections(ctx, []*connections.ImportItem{item("c", "log-c")})
	})
	if err != nil {
		t.Fatal(err)
	}
	list, err := s.ListConnections(ctx, connections.Filter{EnvironmentID: env})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].ConnectionID != "c" {
		t.Errorf("connections after the transaction: %d, want only c", len(list))
	}
	logs, err := s.ListLogs(ctx, oplog.Filter{EnvironmentID: env})
	if err != nil {
		t.Fatal(err)
	}
	if len(logs) != 2 {
		t.Errorf("%d log entries after the transaction, want taken and log-c", len(logs))
	}
}

// TestLockConnectionAcrossStores: two Stores on one file (as two processes
// would be) take turns: a transaction that locked a connection keeps the
// other Store's transaction from starting until it ends.
func TestLockConnectionAcrossStores(t *testing.T) {
	t.Parallel()
	a, env := coreFixture(t)
	ctx := t.Context()
	c := &connections.Connection{EnvironmentID: env, IntegrationKey: "github", ConnectionID: "u1"}
	if err := a.CreateConnection(ctx, c); err != nil {
		t.Fatal(err)
	}
	b, err := sqlite.Open(ctx, a.Path(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()

	locked := make(chan struct{})
	release := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- a.WithTx(ctx, func(ctx context.Context) error {
			if err := a.LockConnection(ctx, env, "github", "u1"); err != nil {
				return err
			}
			close(locked)
			<-release
			got, err := a.GetConnection(ctx, env, "github", "u1")
			if err != nil {
				return err
			}
			got.Metadata = map[string]any{"by": "a"}
			return a.UpdateConnection(ctx, got)
		})
	}()
	<-locked
	entered := make(chan struct{})
	bErr := make(chan error, 1)
	go func() {
		bErr <- b.WithTx(ctx, func(ctx context.Context) error {
			close(entered)
			if err := b.LockConnection(ctx, env, "github", "u1"); err != nil {
				return err
			}
			got, err := b.GetConnection(ctx, env, "github", "u1")
			if err != nil {
				return err
			}
			if got.Metadata["by"] != "a" {
				t.Errorf("b read metadata %v after locking, want a's committed update", got.Metadata)
			}
			return nil
		})
	}()
	select {
	case <-entered:
		t.Error("b's transaction started while a's held the lock")
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := <-bErr; err != nil {
		t.Fatal(err)
	}
}
