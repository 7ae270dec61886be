package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"math"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/lib/pq"

	connect "github.com/embedauth/connect"
	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/internal/pgtest"
	"github.com/embedauth/connect/oplog"
	"github.com/embedauth/connect/store"
	"github.com/embedauth/connect/store/postgres"
	"github.com/embedauth/connect/store/storetest"
	"github.com/embedauth/connect/webhooks"
)

var _ connect.Store = (*postgres.Store)(nil)

// newStore returns a Store in a fresh schema, migrated without River's
// tables (see newStoreWith).
func newStore(t *testing.T) (*postgres.Store, *sql.DB, string) {
	t.Helper()
	return newStoreWith(t, postgres.Options{})
}

// newStoreWith returns a Store with opts in a fresh schema, and closes it
// when the test ends. The schema is migrated without River's tables, which
// the Store does not use and which take most of Migrate's time: the
// conformance suites migrate hundreds of schemas. Tests of the Scheduler and
// of Migrate use newStoreWithJobs.
func newStoreWith(t testing.TB, opts postgres.Options) (*postgres.Store, *sql.DB, string) {
	t.Helper()
	db, schema := pgtest.Schema(t)
	opts.Schema = schema
	if err := postgres.MigrateWithoutRiver(t.Context(), db, &opts); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return openStore(t, db, &opts), db, schema
}

// newStoreWithJobs returns a Store in a fresh schema fully migrated by
// Migrate, River's tables included.
func newStoreWithJobs(t testing.TB) (*postgres.Store, *sql.DB, string) {
	t.Helper()
	db, schema := pgtest.Schema(t)
	opts := &postgres.Options{Schema: schema}
	if err := postgres.Migrate(t.Context(), db, opts); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return openStore(t, db, opts), db, schema
}

// openStore returns a Store on db and closes it when the test ends (before
// its schema is dropped).
func openStore(t testing.TB, db *sql.DB, opts *postgres.Options) *postgres.Store {
	t.Helper()
	s, err := postgres.New(db, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// pooledStore returns a Store with opts in a schema of pgtest's pool,
// migrated without River's tables (see newStoreWith). The conformance
// suites use it: they migrate hundreds of schemas otherwise.
func pooledStore(t *testing.T, opts postgres.Options) *postgres.Store {
	t.Helper()
	db, schema := pgtest.Migrated(t, "store", func(ctx context.Context, db *sql.DB, schema string) error {
		return postgres.MigrateWithoutRiver(ctx, db, &postgres.Options{Schema: schema})
	})
	opts.Schema = schema
	return openStore(t, db, &opts)
}

func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) storetest.Store {
		return pooledStore(t, postgres.Options{})
	})
}

func TestConformanceUnprepared(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) storetest.Store {
		return pooledStore(t, postgres.Options{DisablePreparedStatements: true})
	})
}

// wantTables is every table Migrate creates.
var wantTables = []string{
	"action_tasks", "api_keys", "checkpoints", "connect_sessions", "connection_changes", "connections", "environment_variables", "environments",
	"function_versions", "functions", "integrations", "oauth_flows", "operations_log", "rate_limits", "record_scopes", "records", "river_job", "river_leader",
	"river_migration", "river_notification", "river_queue", "schema_migrations", "sealing_keys", "sync_runs", "syncs", "webhook_deliveries",
	"webhook_forward_usage",
}

// wantVersions are the versions of our migrations and of River's.
var (
	wantVersions      = []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19}
	wantRiverVersions = []int{1, 2, 3, 4, 5, 6, 7, 8}
)

func versions(ms []appliedMigration) []int {
	out := []int{}
	for _, m := range ms {
		out = append(out, m.Version)
	}
	return out
}

// riverApplied returns River's record of its migrations in schema.
func riverApplied(t *testing.T, db *sql.DB, schema string) []appliedMigration {
	t.Helper()
	rows, err := db.QueryContext(t.Context(), `SELECT version, line, created_at FROM `+
		pq.QuoteIdentifier(schema)+`.river_migration ORDER BY version`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []appliedMigration
	for rows.Next() {
		var m appliedMigration
		if err := rows.Scan(&m.Version, &m.Name, &m.AppliedAt); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func tables(t *testing.T, db *sql.DB, schema string) []string {
	t.Helper()
	rows, err := db.QueryContext(t.Context(), `SELECT table_name FROM information_schema.tables
		WHERE table_schema = $1 ORDER BY table_name`, schema)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := []string{}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

type appliedMigration struct {
	Version   int
	Name      string
	AppliedAt time.Time
}

func applied(t *testing.T, db *sql.DB, schema string) []appliedMigration {
	t.Helper()
	rows, err := db.QueryContext(t.Context(), `SELECT version, name, applied_at FROM `+
		pq.QuoteIdentifier(schema)+`.schema_migrations ORDER BY version`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []appliedMigration
	for rows.Next() {
		var m appliedMigration
		if err := rows.Scan(&m.Version, &m.Name, &m.AppliedAt); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestMigrateTwiceIsNoOp(t *testing.T) {
	t.Parallel()
	_, db, schema := newStoreWithJobs(t)
	first := applied(t, db, schema)
	if len(first) == 0 || first[0].Version != 1 || first[0].Name != "init" {
		t.Fatalf("schema_migrations = %+v, want 001 init first", first)
	}
	if d := cmp.Diff(wantVersions, versions(first)); d != "" {
		t.Errorf("versions (-want +got):\n%s", d)
	}
	firstRiver := riverApplied(t, db, schema)
	if d := cmp.Diff(wantRiverVersions, versions(firstRiver)); d != "" {
		t.Errorf("River versions (-want +got):\n%s", d)
	}
	if err := postgres.Migrate(t.Context(), db, &postgres.Options{Schema: schema}); err != nil {
		t.Fatalf("second Migrate: %v", err)
	}
	if d := cmp.Diff(first, applied(t, db, schema)); d != "" {
		t.Errorf("second Migrate changed schema_migrations (-before +after):\n%s", d)
	}
	if d := cmp.Diff(firstRiver, riverApplied(t, db, schema)); d != "" {
		t.Errorf("second Migrate changed river_migration (-before +after):\n%s", d)
	}
	if d := cmp.Diff(wantTables, tables(t, db, schema)); d != "" {
		t.Errorf("tables (-want +got):\n%s", d)
	}
}

func TestMigrateConcurrently(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t)
	// A schema that does not exist yet, so the migrations also race to
	// create it.
	schema := pgtest.Name()
	t.Cleanup(func() { pgtest.DropSchema(t, db, schema) })
	errs := make([]error, 4)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() { errs[i] = postgres.Migrate(t.Context(), db, &postgres.Options{Schema: schema}) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Migrate %d: %v", i, err)
		}
	}
	if d := cmp.Diff(wantVersions, versions(applied(t, db, schema))); d != "" {
		t.Errorf("schema_migrations versions (-want +got):\n%s", d)
	}
	if d := cmp.Diff(wantRiverVersions, versions(riverApplied(t, db, schema))); d != "" {
		t.Errorf("river_migration versions (-want +got):\n%s", d)
	}
	if d := cmp.Diff(wantTables, tables(t, db, schema)); d != "" {
		t.Errorf("tables (-want +got):\n%s", d)
	}
}

func TestMigrateStaysInItsSchema(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t)
	schema := pgtest.Name()
	t.Cleanup(func() { pgtest.DropSchema(t, db, schema) })
	publicBefore := tables(t, db, "public")

	if err := postgres.Migrate(t.Context(), db, &postgres.Options{Schema: schema}); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(wantTables, tables(t, db, schema)); d != "" {
		t.Errorf("tables of %s (-want +got):\n%s", schema, d)
	}
	if d := cmp.Diff(publicBefore, tables(t, db, "public")); d != "" {
		t.Errorf("Migrate changed the tables of public (-before +after):\n%s", d)
	}
	// Indexes, sequences, River's enum type and functions are in the
	// schema too.
	var outside int
	err := db.QueryRowContext(t.Context(), `
		SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = 'public' AND c.relname LIKE ANY (ARRAY['connections%', 'integrations%',
			'environments%', 'api_keys%', 'operations_log%', 'rate_limits%', 'schema_migrations%',
			'webhook_deliveries%', 'oauth_flows%', 'connect_sessions%', 'river%'])`).Scan(&outside)
	if err != nil {
		t.Fatal(err)
	}
	if outside != 0 {
		t.Errorf("%d relations named like ours are in public", outside)
	}
	var types, funcs, typesInSchema, funcsInSchema int
	err = db.QueryRowContext(t.Context(), `
		SELECT
			(SELECT count(*) FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
			 WHERE n.nspname = 'public' AND t.typname LIKE 'river%'),
			(SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
			 WHERE n.nspname = 'public' AND p.proname LIKE 'river%'),
			(SELECT count(*) FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
			 WHERE n.nspname = $1 AND t.typname = 'river_job_state'),
			(SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
			 WHERE n.nspname = $1 AND p.proname LIKE 'river%')`, schema).Scan(&types, &funcs, &typesInSchema, &funcsInSchema)
	if err != nil {
		t.Fatal(err)
	}
	if types != 0 || funcs != 0 {
		t.Errorf("public holds %d River types and %d River functions", types, funcs)
	}
	if typesInSchema != 1 || funcsInSchema == 0 {
		t.Errorf("the schema holds %d river_job_state types and %d River functions, want 1 and some", typesInSchema, funcsInSchema)
	}
}

func TestInvalidOptions(t *testing.T) {
	t.Parallel()
	for _, schema := range []string{"bad-name", `x"; DROP TABLE y; --`, "1abc", string(make([]byte, 64))} {
		if _, err := postgres.New(&sql.DB{}, &postgres.Options{Schema: schema}); err == nil {
			t.Errorf("New accepted schema %q", schema)
		}
		if err := postgres.Migrate(t.Context(), &sql.DB{}, &postgres.Options{Schema: schema}); err == nil {
			t.Errorf("Migrate accepted schema %q", schema)
		}
	}
	if _, err := postgres.New(nil, nil); err == nil {
		t.Error("New accepted a nil db")
	}
}

func TestInvalidData(t *testing.T) {
	t.Parallel()
	s, _, _ := newStore(t)
	ctx := t.Context()
	env := &environments.Environment{Name: "dev"}
	if err := s.CreateEnvironment(ctx, env); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateIntegration(ctx, &integrations.Integration{EnvironmentID: env.ID, UniqueKey: "github"}); err != nil {
		t.Fatal(err)
	}
	conn := func(cid string, md map[string]any) *connections.Connection {
		return &connections.Connection{EnvironmentID: env.ID, IntegrationKey: "github", ConnectionID: cid, Metadata: md}
	}
	for name, err := range map[string]error{
		"NaN metadata":         s.CreateConnection(ctx, conn("u1", map[string]any{"nan": math.NaN()})),
		"NUL in metadata":      s.CreateConnection(ctx, conn("u2", map[string]any{"k": "a\x00b"})),
		"NUL in connection id": s.CreateConnection(ctx, conn("u\x00", nil)),
		"invalid UTF-8 name":   s.CreateEnvironment(ctx, &environments.Environment{Name: "\xff"}),
		"NUL in variable":      s.SetVariables(ctx, env.ID, []environments.Variable{{Name: "v", SealedValue: "\x00"}}),
		"NUL in log":           s.AppendLog(ctx, &oplog.Entry{ID: "l\x00"}),
	} {
		if !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%s: got %v, want ErrInvalid", name, err)
		}
	}
	if err := s.CreateAPIKey(ctx, &environments.APIKey{EnvironmentID: env.ID, Hash: []byte{0, 0xff}}); err != nil {
		t.Errorf("CreateAPIKey with a binary hash: %v", err)
	}
	c := conn("u3", nil)
	c.Credentials = &connections.Credentials{AccessToken: "\x00"}
	if err := s.CreateConnection(ctx, c); err != nil {
		t.Errorf("CreateConnection with NUL in plaintext credentials: %v", err)
	}
}

func TestTxFromContext(t *testing.T) {
	t.Parallel()
	s, _, schema := newStore(t)
	ctx := t.Context()
	if _, ok := postgres.TxFromContext(ctx); ok {
		t.Fatal("TxFromContext found a transaction outside WithTx")
	}
	var kept context.Context
	err := s.WithTx(ctx, func(ctx context.Context) error {
		kept = ctx
		tx, ok := postgres.TxFromContext(ctx)
		if !ok {
			t.Fatal("TxFromContext found no transaction inside WithTx")
		}
		if err := s.CreateEnvironment(ctx, &environments.Environment{Name: "dev"}); err != nil {
			return err
		}
		// The host's statements on tx see the Store's writes, and roll
		// back with them.
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM `+pq.QuoteIdentifier(schema)+`.environments`).Scan(&n); err != nil {
			return err
		}
		if n != 1 {
			t.Errorf("count through the host's tx = %d, want 1", n)
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO `+pq.QuoteIdentifier(schema)+`.environments
			(account, name, sealed_webhook_signing_key, webhook_settings, connect_ui, callback_url, created_at, updated_at)
			VALUES ('', 'host', '', '{}', '{}', '', now(), now())`)
		if err != nil {
			return err
		}
		return errors.New("roll back")
	})
	if err == nil {
		t.Fatal("WithTx returned nil")
	}
	if _, ok := postgres.TxFromContext(kept); ok {
		t.Error("TxFromContext found a transaction after WithTx returned")
	}
	envs, err := s.ListEnvironments(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(envs) != 0 {
		t.Errorf("rolled-back environments remain: %+v", envs)
	}
}

// Two Stores on one pool (in two schemas) are isolated from each other, and
// share a transaction when one runs inside the other's WithTx.
func TestStoresInTwoSchemas(t *testing.T) {
	t.Parallel()
	a, db, _ := newStore(t)
	_, schemaB := pgtest.Schema(t)
	optsB := &postgres.Options{Schema: schemaB}
	if err := postgres.Migrate(t.Context(), db, optsB); err != nil {
		t.Fatal(err)
	}
	b := openStore(t, db, optsB)
	ctx := t.Context()
	if err := a.CreateEnvironment(ctx, &environments.Environment{Name: "dev"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.GetEnvironmentByName(ctx, "dev"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("store b sees store a's environment: %v", err)
	}
	err := a.WithTx(ctx, func(ctx context.Context) error {
		if err := b.CreateEnvironment(ctx, &environments.Environment{Name: "in-tx"}); err != nil {
			return err
		}
		return errors.New("roll back")
	})
	if err == nil {
		t.Fatal("WithTx returned nil")
	}
	envs, err := b.ListEnvironments(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if names := envNames(envs); !slices.Equal(names, []string{}) {
		t.Errorf("store b kept %v written in store a's rolled-back transaction", names)
	}
}

func envNames(envs []*environments.Environment) []string {
	out := []string{}
	for _, e := range envs {
		out = append(out, e.Name)
	}
	return out
}

func TestCanceledContext(t *testing.T) {
	t.Parallel()
	s, _, _ := newStore(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := s.ListEnvironments(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("ListEnvironments with a canceled context: got %v, want context.Canceled", err)
	}
	err := s.WithTx(ctx, func(context.Context) error { return nil })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("WithTx with a canceled context: got %v, want context.Canceled", err)
	}
}

// A statement canceled by its context while it runs (here, waiting for a
// row lock) fails with the context's error.
func TestStatementCanceled(t *testing.T) {
	t.Parallel()
	s, _, _ := newStore(t)
	ctx := t.Context()
	env := &environments.Environment{Name: "dev"}
	if err := s.CreateEnvironment(ctx, env); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateIntegration(ctx, &integrations.Integration{EnvironmentID: env.ID, UniqueKey: "github"}); err != nil {
		t.Fatal(err)
	}
	c := &connections.Connection{EnvironmentID: env.ID, IntegrationKey: "github", ConnectionID: "u1"}
	if err := s.CreateConnection(ctx, c); err != nil {
		t.Fatal(err)
	}
	err := s.WithTx(ctx, func(txCtx context.Context) error {
		locked := *c
		if err := s.UpdateConnection(txCtx, &locked); err != nil {
			return err
		}
		// The row is locked by the open transaction: this update waits
		// until its deadline.
		waitCtx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		waiting := *c
		err := s.UpdateConnection(waitCtx, &waiting)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("update waiting for a lock: got %v, want DeadlineExceeded", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// AfterCommit runs after the outermost commit, never after a rollback, and
// at once outside a transaction.
func TestAfterCommit(t *testing.T) {
	t.Parallel()
	s, _, _ := newStore(t)
	var _ store.CommitHooker = s
	ctx := t.Context()
	var got []string
	s.AfterCommit(ctx, func() { got = append(got, "outside") })
	err := s.WithTx(ctx, func(ctx context.Context) error {
		s.AfterCommit(ctx, func() { got = append(got, "rolled back") })
		return errors.New("roll back")
	})
	if err == nil {
		t.Fatal("WithTx returned nil")
	}
	var kept context.Context
	err = s.WithTx(ctx, func(ctx context.Context) error {
		kept = ctx
		s.AfterCommit(ctx, func() {
			got = append(got, "first")
			// The transaction has committed: its writes are visible.
			if _, err := s.GetEnvironmentByName(context.Background(), "dev"); err != nil {
				t.Errorf("in AfterCommit: %v", err)
			}
		})
		if err := s.CreateEnvironment(ctx, &environments.Environment{Name: "dev"}); err != nil {
			return err
		}
		return s.WithTx(ctx, func(ctx context.Context) error {
			s.AfterCommit(ctx, func() { got = append(got, "nested") })
			if len(got) != 1 {
				t.Errorf("ran before the commit: %v", got)
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	s.AfterCommit(kept, func() { got = append(got, "ended tx") })
	if want := []string{"outside", "first", "nested", "ended tx"}; !slices.Equal(got, want) {
		t.Errorf("ran %v, want %v", got, want)
	}
}

// Deleting an environment deletes its webhook deliveries (ON DELETE
// CASCADE). environments.Store has no delete, so this is SQL.
func TestDeliveriesCascadeWithEnvironment(t *testing.T) {
	t.Parallel()
	s, db, schema := newStore(t)
	ctx := t.Context()
	var envs []*environments.Environment
	for _, name := range []string{"gone", "kept"} {
		env := &environments.Environment{Name: name}
		if err := s.CreateEnvironment(ctx, env); err != nil {
			t.Fatal(err)
		}
		envs = append(envs, env)
		if err := s.CreateDeliveries(ctx, &webhooks.Delivery{ID: name + "-1", EnvironmentID: env.ID, Body: []byte("{}")},
			&webhooks.Delivery{ID: name + "-2", EnvironmentID: env.ID}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.ExecContext(ctx, `DELETE FROM `+pq.QuoteIdentifier(schema)+`.environments WHERE id = $1`, envs[0].ID); err != nil {
		t.Fatal(err)
	}
	all, err := s.ListDeliveries(ctx, webhooks.DeliveryFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, d := range all {
		ids = append(ids, d.ID)
	}
	if want := []string{"kept-2", "kept-1"}; !slices.Equal(ids, want) {
		t.Errorf("deliveries after deleting an environment: %v, want %v", ids, want)
	}
}
