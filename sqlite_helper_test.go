package connect_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/store/sqlite"
)

// template is a database file whose tables, the Store's and River's, are
// migrated once per run of the tests: migrating River's on SQLite takes
// half a second under the race detector, which every test would pay.
var template struct {
	once sync.Once
	db   []byte
	err  error
}

// templateDB returns the bytes of the template database.
func templateDB() ([]byte, error) {
	template.once.Do(func() {
		dir, err := os.MkdirTemp("", "connect-test-")
		if err != nil {
			template.err = err
			return
		}
		defer os.RemoveAll(dir)
		path := filepath.Join(dir, "template.db")
		be, err := sqlite.Connect(context.Background(), path, nil)
		if err != nil {
			template.err = err
			return
		}
		if template.err = be.Close(); template.err == nil { // the WAL is checkpointed into the file
			template.db, template.err = os.ReadFile(path)
		}
	})
	return template.db, template.err
}

// sqliteBackend returns a backend on a SQLite file of its own in
// t.TempDir(), a copy of the template, closed when the test ends. setup
// gives its Services a Scheduler on it (schedulerFor). Commits are not
// synced to disk (Synchronous NORMAL): the file is thrown away.
func sqliteBackend(t testing.TB) *backend {
	t.Helper()
	db, err := templateDB()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "connect.db")
	if err := os.WriteFile(path, db, 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(t.Context(), path, &sqlite.Options{Synchronous: "NORMAL"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Errorf("close store: %v", err)
		}
	})
	return &backend{store: st, lite: st}
}

// sqliteStore returns the Store of a new sqliteBackend.
func sqliteStore(t testing.TB) *sqlite.Store {
	t.Helper()
	return sqliteBackend(t).lite
}

// baseConfig returns a Config on a new sqliteBackend: its Store, a
// Scheduler on it and the test key.
func baseConfig(t testing.TB) connect.Config {
	t.Helper()
	b := sqliteBackend(t)
	return connect.Config{Store: b.store, Scheduler: schedulerFor(t, b), EncryptionKeys: []connect.EncryptionKey{testKey}}
}

// sqliteSchedulerConfig is the Scheduler configuration of the tests: jobs
// start within 20 ms of being due, and a failed one runs again 10 ms later.
func sqliteSchedulerConfig() sqlite.SchedulerConfig {
	return sqlite.SchedulerConfig{
		FetchPollInterval: 20 * time.Millisecond, JobTimeout: time.Minute, CancelGrace: time.Second,
		RetryBackoff: func(int) time.Duration { return 10 * time.Millisecond },
		Test:         sqlite.SchedulerTestConfig{DisableStaggeredStart: true},
	}
}

// with returns the backend with its Store replaced by st (a wrapper of
// b.store): on the same database, whose Scheduler it keeps.
func (b *backend) with(st connect.Store) *backend {
	c := *b
	c.store = st
	return &c
}
