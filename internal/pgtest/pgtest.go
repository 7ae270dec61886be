package pgtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/lib/pq"
)

// MaxOpenConns is the size of the shared pool of each URL.
const MaxOpenConns = 10

var (
	mu    sync.Mutex
	pools = map[string]*sql.DB{}
)

// URL returns TEST_DATABASE_URL. When it is unset it skips the test, or
// fails it when CONNECT_REQUIRE_POSTGRES=1.
func URL(t testing.TB) string {
	t.Helper()
	url := os.Getenv("TEST_DATABASE_URL")
	if url == "" {
		if os.Getenv("CONNECT_REQUIRE_POSTGRES") == "1" {
			t.Fatal("pgtest: TEST_DATABASE_URL is unset and CONNECT_REQUIRE_POSTGRES=1")
		}
		t.Skip("pgtest: TEST_DATABASE_URL is unset; skipping Postgres test")
	}
	return url
}

// DB returns the process's shared pool on TEST_DATABASE_URL, after checking
// that the database answers. Do not close it.
func DB(t testing.TB) *sql.DB {
	t.Helper()
	url := URL(t)
	mu.Lock()
	db, ok := pools[url]
	if !ok {
		var err error
		db, err = sql.Open("postgres", url)
		if err != nil {
			mu.Unlock()
			t.Fatalf("pgtest: open: %v", err)
		}
		db.SetMaxOpenConns(MaxOpenConns)
		db.SetMaxIdleConns(MaxOpenConns)
		db.SetConnMaxIdleTime(30 * time.Second)
		pools[url] = db
	}
	mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		t.Fatalf("pgtest: cannot reach TEST_DATABASE_URL: %v", err)
	}
	return db
}

// Name returns a fresh schema name, "pgtest_" and 16 random hex digits. It
// does not create the schema.
func Name() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "pgtest_" + hex.EncodeToString(b)
}

// Schema creates an empty schema with a fresh name and drops it, with
// everything in it, when the test ends.
func Schema(t testing.TB) (db *sql.DB, schema string) {
	t.Helper()
	db = DB(t)
	schema = Name()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := db.ExecContext(ctx, "CREATE SCHEMA "+pq.QuoteIdentifier(schema)); err != nil {
		t.Fatalf("pgtest: create schema: %v", err)
	}
	t.Cleanup(func() { DropSchema(t, db, schema) })
	return db, schema
}

// DropSchema drops schema and everything in it, if it exists. Tests that
// create a schema themselves register it with t.Cleanup.
func DropSchema(t testing.TB, db *sql.DB, schema string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := db.ExecContext(ctx, "DROP SCHEMA IF EXISTS "+pq.QuoteIdentifier(schema)+" CASCADE"); err != nil {
		t.Errorf("pgtest: drop schema %s: %v", schema, err)
	}
}
