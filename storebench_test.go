package connect_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/embedauth/connect/store/postgres"
	"github.com/embedauth/connect/store/sqlite"
)

// benchStores are the stores of the benchmarks that compare them: each is
// a sub-benchmark of that name, SQLite (the reference server's default)
// first.
var benchStores = []string{"sqlite", "postgres"}

// benchEachStore runs bench as a sub-benchmark of b for each store of
// benchStores, one after the other, then prints, when both ran, SQLite's
// figures of names divided by Postgres's (printRatios).
func benchEachStore(b *testing.B, what string, bench func(b *testing.B, store string, figs storeFigures), names ...string) {
	figs := storeFigures{}
	for _, store := range benchStores {
		b.Run(store, func(b *testing.B) { bench(b, store, figs) })
	}
	figs.printRatios(what, names...)
}

// openBenchSQLite opens a Store on a new file in b.TempDir() with the
// production defaults (nil Options: Synchronous FULL, every commit on disk
// before it is acknowledged, as Postgres does by default; the tests'
// sqliteBackend uses NORMAL), and a Scheduler on it with cfg. It closes
// the Store when the benchmark ends (after the cleanups registered later,
// such as a Service's Stop).
func openBenchSQLite(b *testing.B, cfg sqlite.SchedulerConfig) (*sqlite.Store, *sqlite.Scheduler) {
	b.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "connect.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close() })
	sched, err := sqlite.NewScheduler(ctx, st, cfg)
	if err != nil {
		b.Fatal(err)
	}
	return st, sched
}

// openBenchPostgres migrates schema of db and returns a Store and a
// Scheduler (with cfg) on it; it closes the Store when the benchmark ends
// (after the cleanups registered later).
func openBenchPostgres(b *testing.B, db *sql.DB, schema string, cfg postgres.SchedulerConfig) (*postgres.Store, *postgres.Scheduler) {
	b.Helper()
	opts := &postgres.Options{Schema: schema}
	if err := postgres.Migrate(context.Background(), db, opts); err != nil {
		b.Fatal(err)
	}
	st, err := postgres.New(db, opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close() })
	sched, err := postgres.NewScheduler(db, opts, cfg)
	if err != nil {
		b.Fatal(err)
	}
	return st, sched
}

// storeFigures are figures of the sub-benchmarks of each store, by store
// and name, each from the last run of its sub-benchmark.
type storeFigures map[string]map[string]float64

func (f storeFigures) set(store, name string, v float64) {
	if f[store] == nil {
		f[store] = map[string]float64{}
	}
	f[store][name] = v
}

// printRatios prints, when both stores ran, each figure of names on
// SQLite divided by the same on Postgres, with the two figures.
func (f storeFigures) printRatios(what string, names ...string) {
	lite, pg := f["sqlite"], f["postgres"]
	if lite == nil || pg == nil {
		return
	}
	var parts []string
	for _, n := range names {
		if pg[n] > 0 {
			parts = append(parts, fmt.Sprintf("%s %.2f (%.0f against %.0f)", n, lite[n]/pg[n], lite[n], pg[n]))
		}
	}
	fmt.Printf("%s, sqlite/postgres: %s\n", what, strings.Join(parts, ", "))
}
