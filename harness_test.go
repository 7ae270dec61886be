package connect_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/egress"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/internal/pgtest"
	"github.com/embedauth/connect/jobs"
	"github.com/embedauth/connect/store/postgres"
	"github.com/embedauth/connect/store/sqlite"
)

// backends runs fn once per Store implementation: SQLite (a file of its
// own, see sqliteBackend), and Postgres in a schema of its own (skipped without
// TEST_DATABASE_URL unless required).
func backends(t *testing.T, fn func(t *testing.T, b *backend)) {
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		fn(t, sqliteBackend(t))
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		fn(t, postgresBackend(t))
	})
}

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// postgresBackend returns a Store on a migrated schema of its own, from
// pgtest's pool (emptied after the test that had it).
func postgresBackend(t *testing.T) *backend {
	t.Helper()
	db, schema := pgtest.Migrated(t, "connect", func(ctx context.Context, db *sql.DB, schema string) error {
		return postgres.Migrate(ctx, db, &postgres.Options{Schema: schema})
	})
	opts := &postgres.Options{Schema: schema}
	st, err := postgres.New(db, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Errorf("close store: %v", err)
		}
	})
	return &backend{store: st, db: db, schema: schema}
}

type backend struct {
	store  connect.Store
	lite   *sqlite.Store // the Store of a SQLite backend, else nil
	db     *sql.DB       // the database of a Postgres backend, else nil
	schema string
}

var testKey = connect.EncryptionKey{ID: "test1", Key: bytes.Repeat([]byte{7}, 32)}

// bundle is a Service with a dev environment, a full-access key and an HTTP
// server.
type bundle struct {
	svc *connect.Service
	srv *httptest.Server
	env *environments.Environment
	key string
	b   *backend
	now *fakeClock
}

type fakeClock struct{ t time.Time }

func (c *fakeClock) Now() time.Time { return c.t }

// setup builds a bundle. The fake providers and webhook receivers of the
// tests are httptest servers on 127.0.0.1, so its Service allows loopback
// addresses for provider calls (Config.Egress) and webhooks
// (Config.Webhooks.Policy): here, and only here, since the library's
// default refuses them. The tests of the address policy use setupStrict.
func setup(t testing.TB, b *backend, mutate ...func(*connect.Config)) *bundle {
	t.Helper()
	return setupPolicy(t, b, true, mutate...)
}

// setupStrict is setup with the library's default address policies: only
// public addresses for provider calls and webhooks.
func setupStrict(t testing.TB, b *backend, mutate ...func(*connect.Config)) *bundle {
	t.Helper()
	return setupPolicy(t, b, false, mutate...)
}

func setupPolicy(t testing.TB, b *backend, loopback bool, mutate ...func(*connect.Config)) *bundle {
	t.Helper()
	clock := &fakeClock{t: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
	cfg := connect.Config{Store: b.store, EncryptionKeys: []connect.EncryptionKey{testKey}, Now: clock.Now,
		PublicURL: "https://connect.example.com"}
	loose := egress.Policy{AllowLoopback: true}
	if loopback {
		cfg.Egress = loose
		cfg.Proxy.Policy = loose // the older name of Egress, which some tests set
		cfg.Webhooks.Policy = loose
	}
	for _, m := range mutate {
		m(&cfg)
	}
	if loopback {
		switch {
		case cfg.Egress != loose: // a mutate set the policy
			cfg.Proxy.Policy = cfg.Egress
		case cfg.Proxy.Policy != loose: // a mutate set it by its older name
			cfg.Egress = cfg.Proxy.Policy
		}
		if cfg.Webhooks.Policy == (egress.Policy{}) {
			cfg.Webhooks.Policy = loose // a mutate replaced cfg.Webhooks
		}
	}
	if cfg.Scheduler == nil {
		cfg.Scheduler = schedulerFor(t, b)
	}
	svc, err := connect.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	env, err := svc.Environments().Create(ctx, environments.CreateInput{Name: "dev"})
	if err != nil {
		t.Fatal(err)
	}
	key, _, err := svc.Environments().CreateAPIKey(ctx, env.ID, environments.NewAPIKey{Name: "full", Scopes: []string{environments.ScopeAll}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(svc.Handler())
	t.Cleanup(srv.Close)
	return &bundle{svc: svc, srv: srv, env: env, key: key, b: b, now: clock}
}

// start starts the bundle's Service and stops it when the test ends.
func (bu *bundle) start(t testing.TB) {
	t.Helper()
	if err := bu.svc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := bu.svc.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
}

type response struct {
	status int
	header http.Header
	raw    []byte
	body   any
}

func (r *response) obj() map[string]any {
	m, _ := r.body.(map[string]any)
	return m
}

// errCode returns error.code of a standard error body.
func (r *response) errCode() string {
	e, _ := r.obj()["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

type req struct {
	method, path string
	key          string // "" means the bundle's key; "-" means none
	header       map[string]string
	body         string
}

func (bu *bundle) do(t testing.TB, rq req) *response {
	t.Helper()
	var body io.Reader
	if rq.body != "" {
		body = strings.NewReader(rq.body)
	}
	r, err := http.NewRequest(rq.method, bu.srv.URL+rq.path, body)
	if err != nil {
		t.Fatal(err)
	}
	if rq.body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	switch rq.key {
	case "":
		r.Header.Set("Authorization", "Bearer "+bu.key)
	case "-":
	default:
		r.Header.Set("Authorization", "Bearer "+rq.key)
	}
	for k, v := range rq.header {
		r.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	out := &response{status: resp.StatusCode, header: resp.Header, raw: raw}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &out.body); err != nil {
			t.Fatalf("%s %s: body is not JSON: %q", rq.method, rq.path, raw)
		}
	}
	return out
}

// mustDo performs the request and fails unless the status is want.
func (bu *bundle) mustDo(t testing.TB, want int, rq req) *response {
	t.Helper()
	r := bu.do(t, rq)
	if r.status != want {
		t.Fatalf("%s %s = %d %s, want %d", rq.method, rq.path, r.status, r.raw, want)
	}
	return r
}

func newServer(t testing.TB, svc *connect.Service) *httptest.Server {
	srv := httptest.NewServer(svc.Handler())
	t.Cleanup(srv.Close)
	return srv
}

// schedulerFor returns a new River scheduler on the backend's database,
// polling every 20 ms: one per Service (connect.New registers its handlers
// on it).
func schedulerFor(t testing.TB, b *backend) jobs.Scheduler {
	t.Helper()
	if b.lite != nil {
		sched, err := sqlite.NewScheduler(t.Context(), b.lite, sqliteSchedulerConfig())
		if err != nil {
			t.Fatal(err)
		}
		return sched
	}
	if b.db == nil {
		t.Fatal("schedulerFor: a backend with neither SQLite nor Postgres")
	}
	sched, err := postgres.NewScheduler(b.db, &postgres.Options{Schema: b.schema}, postgres.SchedulerConfig{
		FetchPollInterval: 20 * time.Millisecond, JobTimeout: time.Minute, CancelGrace: time.Second,
		Test: postgres.SchedulerTestConfig{DisableStaggeredStart: true}})
	if err != nil {
		t.Fatal(err)
	}
	return sched
}
