package storetest

import (
	"context"
	"errors"
	"testing"

	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/oplog"
	"github.com/embedauth/connect/store"
	"github.com/embedauth/connect/webhooks"
)

var txTests = []test{
	{"Commit", testTxCommit},
	{"Rollback", testTxRollback},
	{"Nested", testTxNested},
	{"ReadsOwnWrites", testTxReadsOwnWrites},
	{"SurvivesRefusedCalls", testTxSurvivesRefusedCalls},
	{"Panic", testTxPanic},
	{"EndedContext", testTxEndedContext},
}

func testTxCommit(t *testing.T, s Store) {
	ctx := t.Context()
	var env *environments.Environment
	err := s.WithTx(ctx, func(ctx context.Context) error {
		env = &environments.Environment{Name: "dev", CreatedAt: ts, UpdatedAt: ts}
		if err := s.CreateEnvironment(ctx, env); err != nil {
			return err
		}
		if err := s.CreateIntegration(ctx, newIntegrationValue(env.ID, "github")); err != nil {
			return err
		}
		return s.CreateConnection(ctx, &connections.Connection{EnvironmentID: env.ID, IntegrationKey: "github",
			ConnectionID: "u1", CreatedAt: ts, UpdatedAt: ts})
	})
	must(t, err)
	_, err = s.GetConnection(ctx, env.ID, "github", "u1")
	must(t, err)
}

// fixture is a small populated store that the transaction tests change and
// then expect unchanged.
type fixture struct {
	env  *environments.Environment
	key  *environments.APIKey
	conn *connections.Connection
}

func newFixture(t *testing.T, s Store) fixture {
	env := newEnv(t, s, "dev")
	newIntegration(t, s, env.ID, "github")
	newIntegration(t, s, env.ID, "slack")
	f := fixture{
		env:  env,
		key:  newAPIKey(t, s, env.ID, "hash-0001", nil),
		conn: newConn(t, s, env.ID, "github", "u1", nil),
	}
	must(t, s.SetVariables(t.Context(), env.ID, []environments.Variable{{Name: "v", SealedValue: "old"}}))
	must(t, s.CreateDeliveries(t.Context(), newDeliveryValue(env.ID, "fixture", 0)))
	return f
}

// snapshot reads everything the transaction tests touch.
type snapshot struct {
	Envs  []*environments.Environment
	Keys  []*environments.APIKey
	Vars  []environments.Variable
	Conns []*connections.Connection
	Logs  []*oplog.Entry
	Ins   []string
	Dels  []*webhooks.Delivery
}

func takeSnapshot(t *testing.T, s Store, env int64) snapshot {
	t.Helper()
	ctx := t.Context()
	var sn snapshot
	var err error
	sn.Envs, err = s.ListEnvironments(ctx)
	must(t, err)
	sn.Keys, err = s.ListAPIKeys(ctx, env)
	must(t, err)
	sn.Vars, err = s.ListVariables(ctx, env)
	must(t, err)
	sn.Conns, err = s.ListConnections(ctx, connections.Filter{})
	must(t, err)
	sn.Logs, err = s.ListLogs(ctx, oplog.Filter{})
	must(t, err)
	sn.Dels, err = s.ListDeliveries(ctx, webhooks.DeliveryFilter{})
	must(t, err)
	ins, err := s.ListIntegrations(ctx, env)
	must(t, err)
	for _, in := range ins {
		sn.Ins = append(sn.Ins, in.UniqueKey+":"+in.DisplayName)
	}
	return sn
}

// writeEverything makes one write of every kind in ctx.
func writeEverything(ctx context.Context, s Store, f fixture) error {
	for _, step := range []func() error{
		func() error {
			return s.CreateEnvironment(ctx, &environments.Environment{Name: "in-tx", CreatedAt: ts, UpdatedAt: ts})
		},
		func() error {
			e := *f.env
			e.CallbackURL = "https://changed.example.com"
			return s.UpdateEnvironment(ctx, &e)
		},
		func() error {
			return s.CreateAPIKey(ctx, &environments.APIKey{EnvironmentID: f.env.ID, Hash: []byte("hash-tx"), CreatedAt: ts})
		},
		func() error { return s.DeleteAPIKey(ctx, f.env.ID, f.key.ID) },
		func() error {
			return s.SetVariables(ctx, f.env.ID, []environments.Variable{{Name: "w", SealedValue: "new"}})
		},
		func() error {
			in, err := s.GetIntegration(ctx, f.env.ID, "slack")
			if err != nil {
				return err
			}
			in.DisplayName = "changed"
			return s.UpdateIntegration(ctx, in)
		},
		func() error { return s.CreateIntegration(ctx, newIntegrationValue(f.env.ID, "jira")) },
		func() error {
			return s.CreateConnection(ctx, &connections.Connection{EnvironmentID: f.env.ID, IntegrationKey: "jira",
				ConnectionID: "u2", CreatedAt: ts, UpdatedAt: ts})
		},
		func() error {
			c := storedConnection(f.conn)
			c.Metadata = map[string]any{"changed": true}
			return s.UpdateConnection(ctx, c)
		},
		func() error { return s.DeleteIntegration(ctx, f.env.ID, "github") },
		func() error {
			return s.AppendLog(ctx, &oplog.Entry{ID: "in-tx", EnvironmentID: f.env.ID, Type: "auth",
				Operation: "create", Status: oplog.StatusSuccess, CreatedAt: ts})
		},
		func() error { return s.CreateDeliveries(ctx, newDeliveryValue(f.env.ID, "in-tx", 1)) },
		func() error {
			d := newDeliveryValue(f.env.ID, "fixture", 0)
			d.Status = webhooks.StatusDelivered
			d.Attempts = 1
			return s.UpdateDelivery(ctx, d)
		},
	} {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

func testTxRollback(t *testing.T, s Store) {
	ctx := t.Context()
	f := newFixture(t, s)
	before := takeSnapshot(t, s, f.env.ID)
	err := s.WithTx(ctx, func(ctx context.Context) error {
		if err := writeEverything(ctx, s, f); err != nil {
			t.Errorf("write in transaction: %v", err)
		}
		return errRollback
	})
	if !errors.Is(err, errRollback) {
		t.Errorf("WithTx returned %v, want fn's error", err)
	}
	diff(t, "state after rollback", before, takeSnapshot(t, s, f.env.ID))
	_, err = s.GetAPIKeyByHash(ctx, []byte("hash-tx"))
	wantErr(t, "GetAPIKeyByHash(rolled back)", err, store.ErrNotFound)

	// The same writes commit when fn succeeds.
	must(t, s.WithTx(ctx, func(ctx context.Context) error { return writeEverything(ctx, s, f) }))
	_, err = s.GetEnvironmentByName(ctx, "in-tx")
	must(t, err)
}

func testTxNested(t *testing.T, s Store) {
	ctx := t.Context()
	create := func(ctx context.Context, name string) error {
		return s.CreateEnvironment(ctx, &environments.Environment{Name: name, CreatedAt: ts, UpdatedAt: ts})
	}
	exists := func(name string) bool {
		t.Helper()
		_, err := s.GetEnvironmentByName(ctx, name)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			t.Fatal(err)
		}
		return err == nil
	}

	// The inner transaction joins the outer one: the outer error undoes the
	// inner writes.
	err := s.WithTx(ctx, func(ctx context.Context) error {
		if err := create(ctx, "outer-1"); err != nil {
			return err
		}
		if err := s.WithTx(ctx, func(ctx context.Context) error { return create(ctx, "inner-1") }); err != nil {
			return err
		}
		return errRollback
	})
	wantErr(t, "WithTx", err, errRollback)
	if exists("outer-1") || exists("inner-1") {
		t.Error("outer error did not roll back the nested transaction")
	}

	// An inner error returned by the outer fn undoes everything.
	err = s.WithTx(ctx, func(ctx context.Context) error {
		if err := create(ctx, "outer-2"); err != nil {
			return err
		}
		return s.WithTx(ctx, func(ctx context.Context) error {
			if err := create(ctx, "inner-2"); err != nil {
				return err
			}
			return errRollback
		})
	})
	wantErr(t, "WithTx", err, errRollback)
	if exists("outer-2") || exists("inner-2") {
		t.Error("inner error did not roll back the transaction")
	}

	// Both succeed: both commit.
	must(t, s.WithTx(ctx, func(ctx context.Context) error {
		if err := create(ctx, "outer-3"); err != nil {
			return err
		}
		return s.WithTx(ctx, func(ctx context.Context) error { return create(ctx, "inner-3") })
	}))
	if !exists("outer-3") || !exists("inner-3") {
		t.Error("nested transaction did not commit")
	}
}

func testTxReadsOwnWrites(t *testing.T, s Store) {
	ctx := t.Context()
	must(t, s.WithTx(ctx, func(ctx context.Context) error {
		env := &environments.Environment{Name: "dev", CreatedAt: ts, UpdatedAt: ts}
		must(t, s.CreateEnvironment(ctx, env))
		got, err := s.GetEnvironment(ctx, env.ID)
		must(t, err)
		diff(t, "GetEnvironment in tx", env, got)
		got, err = s.GetEnvironmentByName(ctx, "dev")
		must(t, err)
		diff(t, "GetEnvironmentByName in tx", env, got)
		envs, err := s.ListEnvironments(ctx)
		must(t, err)
		diff(t, "ListEnvironments in tx", []*environments.Environment{env}, envs)

		must(t, s.SetVariables(ctx, env.ID, []environments.Variable{{Name: "v", SealedValue: "s"}}))
		vars, err := s.ListVariables(ctx, env.ID)
		must(t, err)
		diff(t, "ListVariables in tx", []environments.Variable{{Name: "v", SealedValue: "s"}}, vars)

		in := newIntegrationValue(env.ID, "github")
		must(t, s.CreateIntegration(ctx, in))
		gotIn, err := s.GetIntegration(ctx, env.ID, "github")
		must(t, err)
		diff(t, "GetIntegration in tx", in, gotIn)

		c := &connections.Connection{EnvironmentID: env.ID, IntegrationKey: "github", ConnectionID: "u1",
			CreatedAt: ts, UpdatedAt: ts}
		must(t, s.CreateConnection(ctx, c))
		c.Metadata = map[string]any{"k": "v"}
		must(t, s.UpdateConnection(ctx, c))
		gotC, err := s.GetConnection(ctx, env.ID, "github", "u1")
		must(t, err)
		diff(t, "GetConnection in tx", c, gotC)
		list, err := s.ListConnections(ctx, connections.Filter{EnvironmentID: env.ID})
		must(t, err)
		diff(t, "ListConnections in tx", []*connections.Connection{c}, list)
		n, err := s.CountConnections(ctx, env.ID, "github")
		must(t, err)
		if n != 1 {
			t.Errorf("CountConnections in tx = %d, want 1", n)
		}

		e := &oplog.Entry{ID: "l1", EnvironmentID: env.ID, Type: "auth", CreatedAt: ts}
		must(t, s.AppendLog(ctx, e))
		logs, err := s.ListLogs(ctx, oplog.Filter{EnvironmentID: env.ID})
		must(t, err)
		diff(t, "ListLogs in tx", []*oplog.Entry{e}, logs)

		must(t, s.DeleteIntegration(ctx, env.ID, "github"))
		_, err = s.GetConnection(ctx, env.ID, "github", "u1")
		wantErr(t, "GetConnection after cascading delete in tx", err, store.ErrNotFound)
		return nil
	}))
}

// testTxSurvivesRefusedCalls checks that a call failing with ErrNotFound or
// ErrConflict inside a transaction leaves it usable: services try a write
// and fall back to another on a conflict.
func testTxSurvivesRefusedCalls(t *testing.T, s Store) {
	ctx := t.Context()
	f := newFixture(t, s)
	other := newEnv(t, s, "other")
	must(t, s.AppendLog(ctx, &oplog.Entry{ID: "l1", EnvironmentID: f.env.ID, Type: "auth", CreatedAt: ts}))
	must(t, s.WithTx(ctx, func(ctx context.Context) error {
		err := s.CreateEnvironment(ctx, &environments.Environment{Name: "dev", CreatedAt: ts, UpdatedAt: ts})
		wantErr(t, "CreateEnvironment(duplicate)", err, store.ErrConflict)
		rename := *other
		rename.Name = "dev"
		wantErr(t, "UpdateEnvironment(duplicate name)", s.UpdateEnvironment(ctx, &rename), store.ErrConflict)
		err = s.CreateAPIKey(ctx, &environments.APIKey{EnvironmentID: f.env.ID, Hash: []byte("hash-0001"), CreatedAt: ts})
		wantErr(t, "CreateAPIKey(duplicate)", err, store.ErrConflict)
		err = s.CreateAPIKey(ctx, &environments.APIKey{EnvironmentID: f.env.ID + 1000, Hash: []byte("h"), CreatedAt: ts})
		wantErr(t, "CreateAPIKey(missing environment)", err, store.ErrNotFound)
		err = s.CreateIntegration(ctx, newIntegrationValue(f.env.ID, "github"))
		wantErr(t, "CreateIntegration(duplicate)", err, store.ErrConflict)
		err = s.CreateIntegration(ctx, newIntegrationValue(f.env.ID+1000, "github"))
		wantErr(t, "CreateIntegration(missing environment)", err, store.ErrNotFound)
		in, err := s.GetIntegration(ctx, f.env.ID, "github")
		must(t, err)
		in.UniqueKey = "renamed"
		wantErr(t, "UpdateIntegration(rename with connections)", s.UpdateIntegration(ctx, in), store.ErrConflict)
		in.UniqueKey = "slack"
		wantErr(t, "UpdateIntegration(onto existing key)", s.UpdateIntegration(ctx, in), store.ErrConflict)
		err = s.CreateConnection(ctx, &connections.Connection{EnvironmentID: f.env.ID, IntegrationKey: "github",
			ConnectionID: "u1", CreatedAt: ts, UpdatedAt: ts})
		wantErr(t, "CreateConnection(duplicate)", err, store.ErrConflict)
		err = s.CreateConnection(ctx, &connections.Connection{EnvironmentID: f.env.ID, IntegrationKey: "nope",
			ConnectionID: "u1", CreatedAt: ts, UpdatedAt: ts})
		wantErr(t, "CreateConnection(missing integration)", err, store.ErrNotFound)
		stale := storedConnection(f.conn)
		stale.Version = 7
		wantErr(t, "UpdateConnection(stale)", s.UpdateConnection(ctx, stale), store.ErrConflict)
		_, err = s.GetConnection(ctx, f.env.ID, "github", "nope")
		wantErr(t, "GetConnection(missing)", err, store.ErrNotFound)
		err = s.AppendLog(ctx, &oplog.Entry{ID: "l1", EnvironmentID: f.env.ID, Type: "auth", CreatedAt: ts})
		wantErr(t, "AppendLog(duplicate)", err, store.ErrConflict)

		// The transaction still works.
		return s.CreateEnvironment(ctx, &environments.Environment{Name: "after", CreatedAt: ts, UpdatedAt: ts})
	}))
	_, err := s.GetEnvironmentByName(ctx, "after")
	must(t, err)
}

func testTxPanic(t *testing.T, s Store) {
	ctx := t.Context()
	func() {
		defer func() {
			if r := recover(); r != "storetest: boom" {
				t.Errorf("recovered %v, want the panic of fn", r)
			}
		}()
		_ = s.WithTx(ctx, func(ctx context.Context) error {
			must(t, s.CreateEnvironment(ctx, &environments.Environment{Name: "p", CreatedAt: ts, UpdatedAt: ts}))
			panic("storetest: boom")
		})
	}()
	_, err := s.GetEnvironmentByName(ctx, "p")
	wantErr(t, "GetEnvironmentByName(written before panic)", err, store.ErrNotFound)
	// The store is still usable.
	newEnv(t, s, "after")
}

// testTxEndedContext uses the context of a transaction after WithTx has
// returned, as work started inside fn and finishing later would: it works
// like a context without a transaction.
func testTxEndedContext(t *testing.T, s Store) {
	var kept context.Context
	must(t, s.WithTx(t.Context(), func(ctx context.Context) error {
		kept = ctx
		return s.CreateEnvironment(ctx, &environments.Environment{Name: "in-tx", CreatedAt: ts, UpdatedAt: ts})
	}))
	must(t, s.CreateEnvironment(kept, &environments.Environment{Name: "after", CreatedAt: ts, UpdatedAt: ts}))
	err := s.WithTx(kept, func(ctx context.Context) error {
		if err := s.CreateEnvironment(ctx, &environments.Environment{Name: "new-tx", CreatedAt: ts, UpdatedAt: ts}); err != nil {
			return err
		}
		return errRollback
	})
	wantErr(t, "WithTx with an ended transaction's context", err, errRollback)
	envs, err := s.ListEnvironments(kept)
	must(t, err)
	var names []string
	for _, e := range envs {
		names = append(names, e.Name)
	}
	diff(t, "environments", []string{"in-tx", "after"}, names)
}
