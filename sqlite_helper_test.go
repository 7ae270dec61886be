package connect_test

import (
	"testing"
	"time"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/store/sqlite"
)

// sqliteBackend returns a backend on a private in-memory SQLite database,
// closed when the test ends. setup gives its Services a Scheduler on it
// (schedulerFor).
func sqliteBackend(t testing.TB) *backend {
	t.Helper()
	st, err := sqlite.Open(t.Context(), sqlite.MemoryPath, nil)
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
