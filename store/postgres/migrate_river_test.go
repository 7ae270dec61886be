package postgres_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/riverqueue/river/riverdriver/riverdatabasesql"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/embedauth/connect/internal/pgtest"
	"github.com/embedauth/connect/jobs"
	"github.com/embedauth/connect/store/postgres"
)

// river041Version is the newest migration of River v0.41.0, which connect
// used before v0.51.2. The SQL of versions 1 to 7 is the same in both
// releases (only a comment differs), so migrating River up to 7 leaves a
// schema as a Migrate of that time left it.
const river041Version = 7

// A schema migrated when connect used River v0.41.0 upgrades: Migrate adds
// River's version 8 (a no-op on Postgres), a job that waited through the
// upgrade runs, new jobs run, and a second Migrate changes nothing.
func TestMigrateUpgradesRiverOf041(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db, schema := pgtest.Schema(t)
	opts := &postgres.Options{Schema: schema}
	if err := postgres.MigrateWithoutRiver(ctx, db, opts); err != nil {
		t.Fatal(err)
	}
	migrator, err := rivermigrate.New(riverdatabasesql.New(db), &rivermigrate.Config{
		Schema: schema,
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp,
		&rivermigrate.MigrateOpts{TargetVersion: river041Version}); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(wantRiverVersions[:river041Version], versions(riverApplied(t, db, schema))); d != "" {
		t.Fatalf("River versions before the upgrade (-want +got):\n%s", d)
	}

	s := newScheduler(t, db, schema, testSchedulerConfig())
	ran := make(chan int, 2)
	if err := s.Register("k", func(_ context.Context, run *jobs.Run) error {
		var a struct{ N int }
		if err := json.Unmarshal(run.Args, &a); err != nil {
			return jobs.Cancel(err)
		}
		ran <- a.N
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Enqueue(ctx, jobs.Job{Kind: "k", Args: json.RawMessage(`{"n": 1}`)}); err != nil {
		t.Fatalf("Enqueue before the upgrade: %v", err)
	}

	storeBefore := applied(t, db, schema)
	if err := postgres.Migrate(ctx, db, opts); err != nil {
		t.Fatalf("Migrate of a schema of River v0.41.0: %v", err)
	}
	riverAfter := riverApplied(t, db, schema)
	if d := cmp.Diff(wantRiverVersions, versions(riverAfter)); d != "" {
		t.Errorf("River versions after the upgrade (-want +got):\n%s", d)
	}
	if d := cmp.Diff(storeBefore, applied(t, db, schema)); d != "" {
		t.Errorf("the upgrade changed schema_migrations (-before +after):\n%s", d)
	}
	if d := cmp.Diff(wantTables, tables(t, db, schema)); d != "" {
		t.Errorf("tables (-want +got):\n%s", d)
	}
	if err := postgres.Migrate(ctx, db, opts); err != nil {
		t.Fatalf("second Migrate: %v", err)
	}
	if d := cmp.Diff(riverAfter, riverApplied(t, db, schema)); d != "" {
		t.Errorf("second Migrate changed river_migration (-before +after):\n%s", d)
	}

	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	if err := s.Enqueue(ctx, jobs.Job{Kind: "k", Args: json.RawMessage(`{"n": 2}`)}); err != nil {
		t.Fatalf("Enqueue after the upgrade: %v", err)
	}
	got := map[int]bool{}
	for len(got) < 2 {
		select {
		case n := <-ran:
			got[n] = true
		case <-time.After(10 * time.Second):
			t.Fatalf("jobs that ran: %v, want 1 (enqueued before the upgrade) and 2", got)
		}
	}
	waitCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := waitIdle(waitCtx, db, schema); err != nil {
		t.Fatal(err)
	}
}
