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
	"github.com/embedauth/connect/store/sqlite"
)

// feedStore is a Store with a change feed that counts the reads of
// connections and whose feed can be made to fail.
type feedStore struct {
	connect.Store
	feed      store.ChangeFeed
	mu        sync.Mutex
	connReads int
	fail      bool
}

func newFeedStore(t *testing.T, st connect.Store) *feedStore {
	t.Helper()
	feed, ok := st.(store.ChangeFeed)
	if !ok {
		t.Fatalf("%T has no change feed", st)
	}
	return &feedStore{Store: st, feed: feed}
}

// AfterCommit is the Store's: the Service drops cached connections again
// after the commit of a transaction that changed them.
func (s *feedStore) AfterCommit(ctx context.Context, fn func()) {
	if h, ok := s.Store.(store.CommitHooker); ok {
		h.AfterCommit(ctx, fn)
		return
	}
	fn()
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
	return s.feed.ChangeCursor(ctx)
}

func (s *feedStore) ConnectionChanges(ctx context.Context, cur store.ChangeCursor, limit int) ([]store.ConnectionChange, store.ChangeCursor, error) {
	if s.failing() {
		return nil, cur, context.DeadlineExceeded
	}
	return s.feed.ConnectionChanges(ctx, cur, limit)
}

func (s *feedStore) PruneConnectionChanges(ctx context.Context, before time.Time) (int, error) {
	return s.feed.PruneConnectionChanges(ctx, before)
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

// Two instances on one database (on SQLite, two Stores on the file, as
// two processes have): the proxy of the started one keeps a connection for
// minutes (not ProxyCacheTTL) while it follows the change feed, drops it
// when the other instance changes or deletes it, falls back to
// ProxyCacheTTL while the feed fails, and when stopped.
func TestProxyCacheFollowsChangeFeed(t *testing.T) {
	t.Parallel()
	backends(t, testProxyCacheFollowsChangeFeed)
}

func testProxyCacheFollowsChangeFeed(t *testing.T, be *backend) {
	fs := newFeedStore(t, be.store)
	a := proxySetup(t, be.with(fs), func(cfg *connect.Config) {
		cfg.ChangePollInterval = 5 * time.Millisecond
	})
	other := be
	if be.lite != nil {
		st, err := sqlite.Open(t.Context(), be.lite.Path(), &sqlite.Options{Synchronous: "NORMAL"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		other = &backend{store: st, lite: st}
	}
	bcfg := a.cfg
	bcfg.Store, bcfg.Scheduler = other.store, schedulerFor(t, other)
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
	// A change the feed does not list (made with its triggers off) is not
	// seen: the cached copy serves a minute later, without a read.
	pb2 := req{method: "POST", path: "/connections", body: `{"provider_config_key":"pxh","connection_id":"conn-2","api_key":"key-behind-back"}`}
	a.mustDo(t, 201, pb2)
	copyCredentialsUnlisted(t, be, "pxh", "conn-2", "conn-1")
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

// copyCredentialsUnlisted gives connection to of integration key the sealed
// credentials of connection from, behind the change feed's back: on
// Postgres with the triggers off for the transaction, on SQLite with the
// update trigger dropped and created again in it.
func copyCredentialsUnlisted(t *testing.T, be *backend, key, from, to string) {
	t.Helper()
	ctx := t.Context()
	db, table := be.db, "connections"
	if be.lite != nil {
		db = be.lite.DB()
	} else {
		table = pq.QuoteIdentifier(be.schema) + ".connections"
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	exec := func(q string, args ...any) int64 {
		t.Helper()
		res, err := tx.ExecContext(ctx, q, args...)
		if err != nil {
			t.Fatal(err)
		}
		n, _ := res.RowsAffected()
		return n
	}
	var trigger string
	if be.lite != nil {
		if err := tx.QueryRowContext(ctx, `SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = 'connection_changes_update'`).Scan(&trigger); err != nil {
			t.Fatal(err)
		}
		exec(`DROP TRIGGER connection_changes_update`)
	} else {
		exec(`SET LOCAL session_replication_role = replica`)
	}
	if n := exec(`UPDATE `+table+` SET sealed_credentials = (SELECT o.sealed_credentials FROM `+table+` o
		WHERE o.environment_id = `+table+`.environment_id AND o.integration_key = $1 AND o.connection_id = $2)
		WHERE integration_key = $1 AND connection_id = $3`, key, from, to); n != 1 {
		t.Fatalf("%d connections updated, want 1", n)
	}
	if trigger != "" {
		exec(trigger)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}
