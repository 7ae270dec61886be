package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/embedauth/connect/internal/pgtest"
	"github.com/embedauth/connect/store"
	"github.com/embedauth/connect/store/postgres"
)

// logRecorder is a slog.Handler that keeps the messages of warnings.
type logRecorder struct {
	mu   sync.Mutex
	msgs []string
}

func (l *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecorder) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logRecorder) WithGroup(string) slog.Handler            { return l }
func (l *logRecorder) Handle(_ context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		l.mu.Lock()
		l.msgs = append(l.msgs, r.Message)
		l.mu.Unlock()
	}
	return nil
}

func (l *logRecorder) warnings() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.msgs...)
}

// withParam returns the test database's URL with a query parameter set.
func withParam(t *testing.T, key, value string) string {
	t.Helper()
	u, err := url.Parse(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set(key, value)
	u.RawQuery = q.Encode()
	return u.String()
}

// holdAll takes n sessions of db at once, as n concurrent requests do, then
// releases them all.
func holdAll(t *testing.T, db *sql.DB, n int) {
	t.Helper()
	conns := make([]*sql.Conn, n)
	for i := range conns {
		c, err := db.Conn(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if err := c.PingContext(t.Context()); err != nil {
			t.Fatal(err)
		}
		conns[i] = c
	}
	for _, c := range conns {
		c.Close()
	}
}

// TestOpen: Open's pool keeps as many sessions idle as it may open, names
// its sessions, and is limited to MaxConns (DefaultMaxConns by default).
func TestOpen(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db, err := postgres.Open(ctx, pgtest.URL(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if st := db.Stats(); st.MaxOpenConnections != postgres.DefaultMaxConns || st.OpenConnections != postgres.DefaultMinConns || st.Idle != postgres.DefaultMinConns {
		t.Errorf("default pool %+v, want MaxOpenConnections %d and %d sessions open and idle", st, postgres.DefaultMaxConns, postgres.DefaultMinConns)
	}
	var app string
	if err := db.QueryRowContext(ctx, "SELECT current_setting('application_name')").Scan(&app); err != nil || app != postgres.DefaultApplicationName {
		t.Errorf("application_name = %q, %v; want %q", app, err, postgres.DefaultApplicationName)
	}

	// A burst that uses every session leaves them all open: none is closed
	// for want of idle room. MinConns above MaxConns opens MaxConns ahead.
	name := pgtest.Name()
	small, err := postgres.Open(ctx, withParam(t, "application_name", name), &postgres.Options{MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer small.Close()
	if st := small.Stats(); st.OpenConnections != 4 || st.Idle != 4 {
		t.Errorf("MaxConns 4 after Open: %+v, want 4 open ahead (DefaultMinConns is %d)", st, postgres.DefaultMinConns)
	}
	for _, tc := range []struct{ min, want int }{{-1, 1}, {2, 2}} {
		db, err := postgres.Open(ctx, pgtest.URL(t), &postgres.Options{MaxConns: 4, MinConns: tc.min})
		if err != nil {
			t.Fatal(err)
		}
		if st := db.Stats(); st.OpenConnections != tc.want || st.Idle != tc.want {
			t.Errorf("MinConns %d after Open: %+v, want %d open and idle (the ping's included)", tc.min, st, tc.want)
		}
		db.Close()
	}
	for range 3 {
		holdAll(t, small, 4)
	}
	st := small.Stats()
	if st.MaxOpenConnections != 4 || st.OpenConnections != 4 || st.Idle != 4 || st.MaxIdleClosed != 0 {
		t.Errorf("after bursts of 4: %+v, want 4 open and idle, none closed", st)
	}
	var sessions int
	if err := pgtest.DB(t).QueryRowContext(ctx, "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", name).Scan(&sessions); err != nil || sessions != 4 {
		t.Errorf("pg_stat_activity lists %d sessions named %s (%v), want 4: the URL's application_name is kept", sessions, name, err)
	}
}

func TestOpenErrors(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	for name, tc := range map[string]struct {
		dsn  string
		opts *postgres.Options
		want string
	}{
		"unreachable": {dsn: "postgres://app:hunter2-secret@127.0.0.1:1/appdb?sslmode=disable&connect_timeout=5",
			want: `cannot reach database appdb on 127.0.0.1 (port 1) as user "app"`},
		"unreachable, key=value": {dsn: "host=127.0.0.1 port=1 user=app password='hunter2-secret' dbname=appdb sslmode=disable connect_timeout=5",
			want: `cannot reach database appdb on 127.0.0.1 (port 1) as user "app"`},
		"malformed": {dsn: "postgres://app:hunter2-secret@127.0.0.1:port/appdb", want: "malformed"},
		"unknown parameter": {dsn: "postgres://app:hunter2-secret@127.0.0.1/appdb?sslmode=sometimes",
			want: "malformed"},
		"negative size": {dsn: pgtest.URL(t), opts: &postgres.Options{MaxConns: -1}, want: "MaxConns"},
		"bad schema":    {dsn: pgtest.URL(t), opts: &postgres.Options{Schema: "a-b"}, want: "schema"},
	} {
		db, err := postgres.Open(ctx, tc.dsn, tc.opts)
		if err == nil {
			db.Close()
			t.Errorf("%s: no error", name)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: %v; want an error saying %q, without the password", name, err, tc.want)
		}
	}
}

// TestNewWarnsOnChurningPool: New warns, once, about a pool without a
// limit at once, and about a pool whose idle room is smaller than its use
// as soon as it closes a session for want of idle room; it does not warn
// about Open's pool.
func TestNewWarnsOnChurningPool(t *testing.T) {
	t.Parallel()
	_, schema := pgtest.Schema(t)
	ctx := t.Context()
	if err := postgres.MigrateWithoutRiver(ctx, pgtest.DB(t), &postgres.Options{Schema: schema}); err != nil {
		t.Fatal(err)
	}
	// calls makes Store calls, enough for the Store to look at the pool's
	// statistics more than once.
	calls := func(t *testing.T, s *postgres.Store) {
		t.Helper()
		for range 300 {
			if _, err := s.GetEnvironment(ctx, 1); !errors.Is(err, store.ErrNotFound) {
				t.Fatal(err)
			}
		}
	}
	newStore := func(t *testing.T, db *sql.DB) (*postgres.Store, *logRecorder) {
		t.Helper()
		rec := &logRecorder{}
		s, err := postgres.New(db, &postgres.Options{Schema: schema, Logger: slog.New(rec)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s, rec
	}

	t.Run("unlimited", func(t *testing.T) {
		db, err := sql.Open("postgres", pgtest.URL(t))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		s, rec := newStore(t, db)
		if w := rec.warnings(); len(w) != 1 || !strings.Contains(w[0], "no limit") {
			t.Fatalf("warnings at New: %q", w)
		}
		holdAll(t, db, 4)
		calls(t, s)
		if w := rec.warnings(); len(w) != 1 {
			t.Errorf("warnings after use: %q, want the one of New", w)
		}
	})

	t.Run("idle room below use", func(t *testing.T) {
		db, err := sql.Open("postgres", pgtest.URL(t))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		db.SetMaxOpenConns(4) // and database/sql's 2 idle connections
		s, rec := newStore(t, db)
		calls(t, s)
		if w := rec.warnings(); len(w) != 0 {
			t.Fatalf("warnings before any churn: %q", w)
		}
		holdAll(t, db, 4) // 4 in use at once; 2 are closed on release
		calls(t, s)
		holdAll(t, db, 4)
		calls(t, s)
		if w := rec.warnings(); len(w) != 1 || !strings.Contains(w[0], "MaxIdleConns") {
			t.Errorf("warnings after churn: %q, want one", w)
		}
	})

	t.Run("Open", func(t *testing.T) {
		db, err := postgres.Open(ctx, pgtest.URL(t), &postgres.Options{MaxConns: 4})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		s, rec := newStore(t, db)
		holdAll(t, db, 4)
		calls(t, s)
		if w := rec.warnings(); len(w) != 0 {
			t.Errorf("warnings about Open's pool: %q", w)
		}
	})
}
