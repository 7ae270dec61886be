package pgtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lib/pq"
)

// keptTables are the tables an emptied schema keeps: the migrations'
// bookkeeping, so that the schema stays migrated.
var keptTables = []string{"schema_migrations", "river_migration"}

// pooledSchema is a migrated schema of the pool with the statements that
// empty it and check that it is empty.
type pooledSchema struct {
	name  string
	empty string // deletes every row and restarts the sequences
	check string // answers whether any table holds a row
}

var (
	poolMu   sync.Mutex
	poolIdle = map[string][]*pooledSchema{} // by kind
	poolAll  = map[string]bool{}            // every pooled schema not dropped yet
	poolMain bool                           // Main is running the tests
)

// Main runs the tests of a package that uses [Migrated], then drops the
// schemas of its pool, and returns the exit code for os.Exit. Call it from
// the package's TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
func Main(m *testing.M) int {
	poolMu.Lock()
	poolMain = true
	poolMu.Unlock()
	dropAbandoned()
	code := m.Run()
	poolMu.Lock()
	names := make([]string, 0, len(poolAll))
	for name := range poolAll {
		names = append(names, name)
	}
	poolMu.Unlock()
	if len(names) == 0 {
		return code
	}
	db, err := sql.Open("postgres", os.Getenv("TEST_DATABASE_URL"))
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		err = dropSchemas(ctx, db, names)
		_ = db.Close()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: drop the pooled schemas %s: %v\n", strings.Join(names, ", "), err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// dropAbandoned drops the pooled schemas of test processes of this machine
// that ended without dropping them (killed, or timed out).
func dropAbandoned() {
	url := os.Getenv("TEST_DATABASE_URL")
	if url == "" {
		return
	}
	if _, err := os.Stat("/proc/self"); err != nil {
		return // no /proc: which processes live is unknown
	}
	db, err := sql.Open("postgres", url)
	if err != nil {
		return
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rows, err := db.QueryContext(ctx, `SELECT nspname FROM pg_namespace WHERE nspname LIKE 'pgtest\_pool\_%'`)
	if err != nil {
		return
	}
	var dead []string
	for rows.Next() {
		var name string
		if rows.Scan(&name) != nil {
			break
		}
		pid, _, ok := strings.Cut(strings.TrimPrefix(name, "pgtest_pool_"), "_")
		if !ok {
			continue
		}
		if _, err := os.Stat("/proc/" + pid); os.IsNotExist(err) {
			dead = append(dead, name)
		}
	}
	rows.Close()
	if len(dead) > 0 {
		_ = dropSchemas(ctx, db, dead)
	}
}

// Migrated returns a schema that migrate has brought up to date, for this
// test alone. Migrating a schema costs Postgres a quarter of a second of
// CPU, so a schema is not dropped when its test ends: every row of its
// tables is deleted (the migrations' bookkeeping excepted) and its
// sequences restarted, and the next test that asks for the same kind (a
// name for the migrate function) gets it. A schema that cannot be emptied,
// or that holds a row when it is taken again (a writer outlived its
// test), is dropped instead.
//
// Only tests that do not depend on the schema's history may use it: a
// reused schema has dead rows and a used sequence cache, and its tables'
// statistics are those of earlier tests. Tests that measure pages or plans
// take a fresh [Schema]. The package's TestMain must run [Main], which
// drops the pool when the tests are done.
func Migrated(t testing.TB, kind string, migrate func(ctx context.Context, db *sql.DB, schema string) error) (*sql.DB, string) {
	t.Helper()
	db := DB(t)
	poolMu.Lock()
	ok := poolMain
	poolMu.Unlock()
	if !ok {
		t.Fatal("pgtest: Migrated needs pgtest.Main in the package's TestMain (it drops the pooled schemas)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := takeEmpty(t, ctx, db, kind)
	if p == nil {
		p = &pooledSchema{name: poolName()}
		poolMu.Lock()
		poolAll[p.name] = true
		poolMu.Unlock()
		if _, err := db.ExecContext(ctx, "CREATE SCHEMA "+pq.QuoteIdentifier(p.name)); err != nil {
			forget(p.name)
			t.Fatalf("pgtest: create schema: %v", err)
		}
		if err := migrate(ctx, db, p.name); err != nil {
			dropPooled(t, db, p.name)
			t.Fatalf("pgtest: migrate schema %s: %v", p.name, err)
		}
		var err error
		if p.empty, p.check, err = emptyingStatements(ctx, db, p.name); err != nil {
			dropPooled(t, db, p.name)
			t.Fatalf("pgtest: schema %s: %v", p.name, err)
		}
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := db.ExecContext(ctx, p.empty); err != nil {
			t.Logf("pgtest: empty schema %s: %v; dropping it", p.name, err)
			dropPooled(t, db, p.name)
			return
		}
		poolMu.Lock()
		poolIdle[kind] = append(poolIdle[kind], p)
		poolMu.Unlock()
	})
	return db, p.name
}

// takeEmpty takes an idle schema of kind from the pool, dropping those
// that are not empty; it returns nil when none is left.
func takeEmpty(t testing.TB, ctx context.Context, db *sql.DB, kind string) *pooledSchema {
	t.Helper()
	for {
		poolMu.Lock()
		idle := poolIdle[kind]
		if len(idle) == 0 {
			poolMu.Unlock()
			return nil
		}
		p := idle[len(idle)-1]
		poolIdle[kind] = idle[:len(idle)-1]
		poolMu.Unlock()
		var used bool
		if err := db.QueryRowContext(ctx, p.check).Scan(&used); err != nil || used {
			t.Logf("pgtest: pooled schema %s is not empty (%v); dropping it", p.name, err)
			dropPooled(t, db, p.name)
			continue
		}
		return p
	}
}

// poolName is a fresh name of a pooled schema: "pgtest_pool_", this
// process's id and 8 random hex digits.
func poolName() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return "pgtest_pool_" + strconv.Itoa(os.Getpid()) + "_" + hex.EncodeToString(b)
}

func forget(name string) {
	poolMu.Lock()
	delete(poolAll, name)
	poolMu.Unlock()
}

func dropPooled(t testing.TB, db *sql.DB, name string) {
	t.Helper()
	DropSchema(t, db, name)
	forget(name)
}

func dropSchemas(ctx context.Context, db *sql.DB, names []string) error {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = pq.QuoteIdentifier(n)
	}
	_, err := db.ExecContext(ctx, "DROP SCHEMA IF EXISTS "+strings.Join(quoted, ", ")+" CASCADE")
	return err
}

// emptyingStatements returns the statements that empty schema and that
// check it is empty: its tables in an order where a table comes before
// those its foreign keys reference, twice (a trigger of a delete may
// write to a table emptied before it), and its sequences restarted.
func emptyingStatements(ctx context.Context, db *sql.DB, schema string) (empty, check string, err error) {
	var tables []string
	rows, err := db.QueryContext(ctx, `SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1 AND c.relkind IN ('r', 'p') AND NOT c.relispartition ORDER BY c.relname`, schema)
	if err != nil {
		return "", "", err
	}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return "", "", err
		}
		if !slices.Contains(keptTables, name) {
			tables = append(tables, name)
		}
	}
	if err := rows.Err(); err != nil {
		return "", "", err
	}
	// referencedBy[p] lists the tables whose foreign keys reference p.
	referencedBy := map[string][]string{}
	rows, err = db.QueryContext(ctx, `SELECT c.relname, p.relname FROM pg_constraint k
		JOIN pg_class c ON c.oid = k.conrelid JOIN pg_class p ON p.oid = k.confrelid
		JOIN pg_namespace n ON n.oid = c.relnamespace WHERE k.contype = 'f' AND n.nspname = $1`, schema)
	if err != nil {
		return "", "", err
	}
	for rows.Next() {
		var child, parent string
		if err := rows.Scan(&child, &parent); err != nil {
			rows.Close()
			return "", "", err
		}
		if child != parent {
			referencedBy[parent] = append(referencedBy[parent], child)
		}
	}
	if err := rows.Err(); err != nil {
		return "", "", err
	}
	ordered, err := referencingFirst(tables, referencedBy)
	if err != nil {
		return "", "", err
	}
	var seqs []string
	rows, err = db.QueryContext(ctx, `SELECT format('%I.%I', schemaname, sequencename), start_value FROM pg_sequences WHERE schemaname = $1`, schema)
	if err != nil {
		return "", "", err
	}
	for rows.Next() {
		var name string
		var start int64
		if err := rows.Scan(&name, &start); err != nil {
			rows.Close()
			return "", "", err
		}
		seqs = append(seqs, fmt.Sprintf("setval(%s, %d, false)", pq.QuoteLiteral(name), start))
	}
	if err := rows.Err(); err != nil {
		return "", "", err
	}

	qs := pq.QuoteIdentifier(schema) + "."
	var e, c strings.Builder
	for range 2 {
		for _, t := range ordered {
			e.WriteString("DELETE FROM " + qs + pq.QuoteIdentifier(t) + ";\n")
		}
	}
	if len(seqs) > 0 {
		e.WriteString("SELECT " + strings.Join(seqs, ", ") + ";\n")
	}
	c.WriteString("SELECT false")
	for _, t := range ordered {
		c.WriteString(" OR EXISTS (SELECT 1 FROM " + qs + pq.QuoteIdentifier(t) + ")")
	}
	return e.String(), c.String(), nil
}

// referencingFirst orders tables so that every table comes before the
// tables it references.
func referencingFirst(tables []string, referencedBy map[string][]string) ([]string, error) {
	var ordered []string
	done := map[string]bool{}
	for len(ordered) < len(tables) {
		progress := false
		for _, t := range tables {
			if done[t] {
				continue
			}
			ready := true
			for _, child := range referencedBy[t] {
				if !done[child] && slices.Contains(tables, child) {
					ready = false
					break
				}
			}
			if ready {
				done[t] = true
				ordered = append(ordered, t)
				progress = true
			}
		}
		if !progress {
			return nil, fmt.Errorf("the foreign keys of the tables form a cycle")
		}
	}
	return ordered, nil
}
