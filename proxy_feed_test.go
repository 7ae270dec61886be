package connect_test

import (
	"context"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/lib/pq"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/store"
	"github.com/embedauth/connect/store/postgres"
)

// feedStore is a Postgres Store that counts the reads of connections and
// whose change feed can be made to fail.
type feedStore struct {
	*postgres.Store
	mu        sync.Mutex
	connReads int
	fail      bool
}

func (s *feedStore) GetConnection(ctx context.Context, envID int64, key, id string) (*connections.Connection, error) {
	s.mu.Lock()
	s.connReads++
	s.mu.Unlock()
	return s.Store.GetConnection(ctx, envID, key, id)
}

func (s *feedStore) reads() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.connReads
}

func (s *feedStore) setFail(fail bool) {
	s.mu.Lock()
	s.fail = fail
	s.mu.Unlock()
}

func (s *feedStore) failing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fail
}

func (s *feedStore) ChangeCursor(ctx context.Context) (store.ChangeCursor, error) {
	if s.failing() {
		return store.ChangeCursor{}, context.DeadlineExceeded
	}
	return s.Store.ChangeCursor(ctx)
}

func (s *feedStore) ConnectionChanges(ctx context.Context, cur store.ChangeCursor, limit int) ([]store.ConnectionChange, store.ChangeCursor, error) {
	if s.failing() {
		return nil, cur, context.DeadlineExceeded
	}
	return s.Store.ConnectionChanges(ctx, cur, limit)
}

// eventually calls cond every few milliseconds until it holds, for at most
// 20 seconds (the feed's polls are 5 ms apart here; other tests'
// transactions may hold them back a little).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still not so after 20 s: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Two instances on one Postgres: the proxy of the started one keeps a
// connection for minutes (not ProxyCacheTTL) while it follows the change
// feed, drops it when the other instance changes or deletes it, falls back
// to ProxyCacheTTL while the feed fails, and when stopped.
func TestProxyCacheFollowsChangeFeed(t *testing.T) {
	t.Parallel()
	pgb := postgresBackend(t)
	fs := &feedStore{Store: pgb.store.(*postgres.Store)}
	a := proxySetup(t, &backend{store: fs, db: pgb.db, schema: pgb.schema}, func(cfg *connect.Config) {
		cfg.ChangePollInterval = 5 * time.Millisecond
	})
	bcfg := a.cfg
	bcfg.Store, bcfg.Scheduler = pgb.store, schedulerFor(t, pgb)
	bsvc, err := connect.New(bcfg)
	if err != nil {
		t.Fatal(err)
	}
	bsrv := httptest.NewServer(bsvc.Handler())
	t.Cleanup(bsrv.Close)
	b := &bundle{svc: bsvc, srv: bsrv, env: a.env, key: a.key}

	if got := connect.ProxyCacheTTL(a.svc); got != connect.DefaultProxyCacheTTL {
		t.Fatalf("cache TTL %v before Start, want ProxyCacheTTL", got)
	}
	ctx := context.Background()
	if err := a.svc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			a.svc.Stop(ctx)
		}
	})
	eventually(t, "the cache follows the feed", func() bool {
		return connect.ProxyCacheTTL(a.svc) == connect.DefaultProxyCacheMaxAge
	})

	key := func(hdr map[string]string) string {
		t.Helper()
		resp, body := a.call(t, "GET", "/proxy/x", hdr, "")
		if resp.StatusCode != 200 {
			return "status " + resp.Status + " " + body
		}
		return a.up.last().header.Get("X-Api-Key")
	}
	if got := key(route(pxHeader)); got != "key-header-123" {
		t.Fatalf("first call sent %q", got)
	}
	// A change the feed does not list (triggers off for one transaction)
	// is not seen: the cached copy serves a minute later, without a read.
	pb2 := req{method: "POST", path: "/connections", body: `{"provider_config_key":"pxh","connection_id":"conn-2","api_key":"key-behind-back"}`}
	a.mustDo(t, 201, pb2)
	tx, err := pgb.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	q := pq.QuoteIdentifier(pgb.schema)
	if _, err := tx.ExecContext(ctx, `SET LOCAL session_replication_role = replica`); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE `+q+`.connections c SET sealed_credentials = o.sealed_credentials
		FROM `+q+`.connections o WHERE c.integration_key = 'pxh' AND c.connection_id = 'conn-1' AND o.integration_key = 'pxh' AND o.connection_id = 'conn-2'`); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	reads := fs.reads()
	a.clock.advance(time.Minute)
	if got := key(route(pxHeader)); got != "key-header-123" || fs.reads() != reads {
		t.Fatalf("a minute later: sent %q after %d reads, want the cached key and no read", got, fs.reads()-reads)
	}

	// The other instance re-imports the connection: the feed drops it.
	b.mustDo(t, 200, req{method: "POST", path: "/connections", body: `{"provider_config_key":"pxh","connection_id":"conn-1","api_key":"key-rotated-456"}`})
	eventually(t, "the proxy sends the key imported through the other instance", func() bool {
		return key(route(pxHeader)) == "key-rotated-456"
	})
	b.mustDo(t, 200, req{method: "DELETE", path: "/connections/conn-1?provider_config_key=pxh"})
	eventually(t, "the proxy answers 404 for the connection deleted through the other instance", func() bool {
		resp, _ := a.call(t, "GET", "/proxy/x", route(pxHeader), "")
		return resp.StatusCode == 404
	})

	// The feed fails: once it has not answered for ProxyCacheTTL, values
	// older than that are read again.
	if got := key(route(pxQuery)); got != "" && got[:6] == "status" {
		t.Fatalf("pxq: %s", got)
	}
	fs.setFail(true)
	time.Sleep(50 * time.Millisecond) // a few failed polls, within ProxyCacheTTL on the test clock
	if got := connect.ProxyCacheTTL(a.svc); got != connect.DefaultProxyCacheMaxAge {
		t.Fatalf("cache TTL %v after failures shorter than ProxyCacheTTL, want ProxyCacheMaxAge", got)
	}
	a.clock.advance(connect.DefaultProxyCacheTTL + time.Second)
	eventually(t, "the cache falls back to ProxyCacheTTL", func() bool {
		return connect.ProxyCacheTTL(a.svc) == connect.DefaultProxyCacheTTL
	})
	reads = fs.reads()
	key(route(pxQuery))
	if fs.reads() == reads {
		t.Fatal("a connection cached 6 s ago served without a read while the feed fails")
	}
	fs.setFail(false)
	eventually(t, "the cache follows the feed again", func() bool {
		return connect.ProxyCacheTTL(a.svc) == connect.DefaultProxyCacheMaxAge
	})

	if err := a.svc.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	stopped = true
	if got := connect.ProxyCacheTTL(a.svc); got != connect.DefaultProxyCacheTTL {
		t.Fatalf("cache TTL %v after Stop, want ProxyCacheTTL", got)
	}
}
