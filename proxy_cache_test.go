package connect_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/store/sqlite"
)

// pcStore counts the reads of connections and API keys; while gate is
// set, each such read waits for it to close, after reading.
type pcStore struct {
	*sqlite.Store
	mu        sync.Mutex
	connReads int
	keyReads  int
	gate      chan struct{}
}

func (s *pcStore) wait(ctx context.Context, n *int) error {
	s.mu.Lock()
	*n++
	gate := s.gate
	s.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

func (s *pcStore) GetConnection(ctx context.Context, envID int64, key, id string) (*connections.Connection, error) {
	c, err := s.Store.GetConnection(ctx, envID, key, id)
	if werr := s.wait(ctx, &s.connReads); werr != nil {
		return nil, werr
	}
	return c, err
}

func (s *pcStore) GetAPIKeyByHash(ctx context.Context, hash []byte) (*environments.APIKey, error) {
	k, err := s.Store.GetAPIKeyByHash(ctx, hash)
	if werr := s.wait(ctx, &s.keyReads); werr != nil {
		return nil, werr
	}
	return k, err
}

func (s *pcStore) setGate(g chan struct{}) {
	s.mu.Lock()
	s.gate = g
	s.mu.Unlock()
}

func (s *pcStore) reads() (conns, keys int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.connReads, s.keyReads
}

// pcBundle is a Service on a pcStore with an API-key connection whose
// proxy calls an in-process upstream (Proxy.Transport) that records the
// X-Api-Key it receives.
type pcBundle struct {
	svc     *connect.Service
	other   http.Handler // another instance on the same database
	st      *pcStore
	clock   *pcClock
	env     int64
	key     string
	handler http.Handler

	mu   sync.Mutex
	sent []string // the X-Api-Key of each upstream request
}

func pcSetup(t *testing.T) *pcBundle {
	t.Helper()
	cat, err := integrations.DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	cat, err = cat.With(&integrations.Provider{Name: "cached-api", DisplayName: "Cached API", AuthMode: integrations.AuthModeAPIKey,
		Credentials: map[string]integrations.FieldSpec{"apiKey": {Type: "string", Title: "API key"}},
		Proxy:       &integrations.Proxy{BaseURL: "https://api.example.com", Headers: map[string]string{"X-Api-Key": "${apiKey}"}}})
	if err != nil {
		t.Fatal(err)
	}
	lite := sqliteBackend(t) // in the test's bubble, which it must not outlive
	b := &pcBundle{st: &pcStore{Store: lite.lite}, clock: newPCClock()}
	upstream := pcRoundTrip(func(r *http.Request) (*http.Response, error) {
		b.mu.Lock()
		b.sent = append(b.sent, r.Header.Get("X-Api-Key"))
		b.mu.Unlock()
		return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(strings.NewReader(`{"ok":true}`)), Request: r}, nil
	})
	cfg := connect.Config{Store: b.st, Scheduler: schedulerFor(t, lite), EncryptionKeys: []connect.EncryptionKey{testKey},
		Now: b.clock.Now, Providers: cat, RateLimitRequests: -1}
	cfg.Proxy.Transport = upstream
	if b.svc, err = connect.New(cfg); err != nil {
		t.Fatal(err)
	}
	cfg.Store, cfg.Scheduler = b.st.Store, schedulerFor(t, lite)
	other, err := connect.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b.other = other.Handler()
	ctx := context.Background()
	env, err := b.svc.Environments().Create(ctx, environments.CreateInput{Name: "dev"})
	if err != nil {
		t.Fatal(err)
	}
	b.env = env.ID
	if b.key, _, err = b.svc.Environments().CreateAPIKey(ctx, env.ID, environments.NewAPIKey{Name: "k", Scopes: []string{environments.ScopeAll}}); err != nil {
		t.Fatal(err)
	}
	b.handler = b.svc.Handler()
	b.api(t, "POST", "/integrations", `{"provider":"cached-api","unique_key":"api"}`, 200)
	b.api(t, "POST", "/connections", `{"provider_config_key":"api","connection_id":"c1","api_key":"key-1"}`, 201)
	return b
}

type pcClock struct{ ns atomic.Int64 }

func newPCClock() *pcClock {
	c := &pcClock{}
	c.ns.Store(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC).UnixNano())
	return c
}

func (c *pcClock) Now() time.Time          { return time.Unix(0, c.ns.Load()).UTC() }
func (c *pcClock) advance(d time.Duration) { c.ns.Add(int64(d)) }

type pcRoundTrip func(*http.Request) (*http.Response, error)

func (f pcRoundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// api makes an API request and checks its status.
func (b *pcBundle) api(t *testing.T, method, path, body string, want int) {
	t.Helper()
	b.apiOn(t, b.handler, method, path, body, want)
}

func (b *pcBundle) apiOn(t *testing.T, h http.Handler, method, path, body string, want int) {
	t.Helper()
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	r.Header.Set("Authorization", "Bearer "+b.key)
	if body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != want {
		t.Errorf("%s %s = %d %s, want %d", method, path, w.Code, w.Body, want)
	}
}

// proxy makes a proxy call to connection c1 and returns its status.
func (b *pcBundle) proxy() int {
	r := httptest.NewRequest("GET", "/proxy/items", nil)
	r.Header.Set("Authorization", "Bearer "+b.key)
	r.Header.Set("Connection-Id", "c1")
	r.Header.Set("Provider-Config-Key", "api")
	w := httptest.NewRecorder()
	b.handler.ServeHTTP(w, r)
	return w.Code
}

// proxyAll makes n proxy calls at once; once they all wait or are done
// (synctest.Wait) it returns their statuses so far and a function that
// waits for the rest.
func (b *pcBundle) proxyAll(n int) (codes []int, wait func()) {
	codes = make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { codes[i] = b.proxy() })
	}
	synctest.Wait()
	return codes, wg.Wait
}

func (b *pcBundle) sentCount() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.sent)
}

func (b *pcBundle) lastSent() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.sent) == 0 {
		return ""
	}
	return b.sent[len(b.sent)-1]
}

// TestProxyCacheSingleFlight: when the cached connection has expired, 64
// concurrent proxy calls read it from the Store once; when the cached API
// key has expired too, they read each once.
func TestProxyCacheSingleFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := pcSetup(t)
		if code := b.proxy(); code != 200 {
			t.Fatalf("first call: %d", code)
		}
		for _, step := range []struct {
			advance        time.Duration
			what           string
			conns, keys    int // reads while the calls wait
			connsAfter     int
			keysAfterwards int
		}{
			// 6 s: past the connection's 5 s, within the key's 10 s.
			{6 * time.Second, "the connection expired", 1, 0, 1, 0},
			// 17 s: both expired (the key was read at 0 s, the
			// connection at 6 s).
			{11 * time.Second, "the connection and the API key expired", 0, 1, 1, 1},
		} {
			b.clock.advance(step.advance)
			conns0, keys0 := b.st.reads()
			gate := make(chan struct{})
			b.st.setGate(gate)
			codes, wait := b.proxyAll(64)
			if conns, keys := b.st.reads(); conns-conns0 != step.conns || keys-keys0 != step.keys {
				t.Errorf("%s: %d connection and %d API key reads while 64 calls wait, want %d and %d",
					step.what, conns-conns0, keys-keys0, step.conns, step.keys)
			}
			b.st.setGate(nil)
			close(gate)
			wait()
			for i, code := range codes {
				if code != 200 {
					t.Fatalf("%s: call %d = %d", step.what, i, code)
				}
			}
			if conns, keys := b.st.reads(); conns-conns0 != step.connsAfter || keys-keys0 != step.keysAfterwards {
				t.Errorf("%s: 64 calls read the connection %d times and the API key %d times, want %d and %d",
					step.what, conns-conns0, keys-keys0, step.connsAfter, step.keysAfterwards)
			}
		}
	})
}

// TestProxyCacheRefreshAhead: near the end of its TTL a cached connection
// keeps serving calls while one background read replaces it; the next calls
// use what that read found, without reading again.
func TestProxyCacheRefreshAhead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := pcSetup(t)
		if code := b.proxy(); code != 200 {
			t.Fatalf("first call: %d", code)
		}
		// A change through this Service is used at once.
		b.api(t, "POST", "/connections", `{"provider_config_key":"api","connection_id":"c1","api_key":"key-2"}`, 200)
		if code := b.proxy(); code != 200 || b.lastSent() != "key-2" {
			t.Fatalf("after a change through the Service: %d with %q, want key-2 at once", code, b.lastSent())
		}
		// Another instance rotates the key.
		b.apiOn(t, b.other, "POST", "/connections", `{"provider_config_key":"api","connection_id":"c1","api_key":"key-3"}`, 200)

		b.clock.advance(4 * time.Second) // past 3/4 of the proxy cache's 5 s
		conns0, _ := b.st.reads()
		gate := make(chan struct{})
		b.st.setGate(gate)
		codes, wait := b.proxyAll(32)
		wait() // every call is answered while the refresh waits in the Store
		for i, code := range codes {
			if code != 200 {
				t.Errorf("call %d during the refresh = %d", i, code)
				break
			}
		}
		if got := b.lastSent(); got != "key-2" {
			t.Errorf("during the refresh the upstream got %q, want the cached key-2", got)
		}
		if conns, _ := b.st.reads(); conns-conns0 != 1 {
			t.Errorf("%d connection reads near expiry, want 1 in the background", conns-conns0)
		}
		b.st.setGate(nil)
		close(gate)
		synctest.Wait()
		if code := b.proxy(); code != 200 || b.lastSent() != "key-3" {
			t.Errorf("after the refresh: %d with %q, want key-3", code, b.lastSent())
		}
		if conns, _ := b.st.reads(); conns-conns0 != 1 {
			t.Errorf("%d connection reads, want 1", conns-conns0)
		}
	})
}

// TestProxyCacheDropsWinOverRefresh: while a background read of the
// connection is in flight, a change through the Service (re-import,
// deletion of the connection, deletion of its integration) takes effect at
// once, and the read in flight does not bring the old copy back.
func TestProxyCacheDropsWinOverRefresh(t *testing.T) {
	for _, change := range []struct {
		name       string
		method     string
		path, body string
		status     int
		wantCode   int
		wantKey    string
	}{
		{"re-import", "POST", "/connections", `{"provider_config_key":"api","connection_id":"c1","api_key":"key-new"}`, 200, 200, "key-new"},
		{"delete connection", "DELETE", "/connections/c1?provider_config_key=api", "", 200, 404, ""},
		{"delete integration", "DELETE", "/integrations/api", "", 200, 404, ""},
	} {
		t.Run(change.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := pcSetup(t)
				if code := b.proxy(); code != 200 {
					t.Fatalf("first call: %d", code)
				}
				b.clock.advance(4 * time.Second)
				gate := make(chan struct{})
				b.st.setGate(gate)
				if code := b.proxy(); code != 200 { // starts the refresh, which reads key-1 and waits
					t.Errorf("call that starts the refresh: %d", code)
				}
				synctest.Wait()
				b.st.setGate(nil)
				b.api(t, change.method, change.path, change.body, change.status)
				check := func(when string) {
					t.Helper()
					n := b.sentCount()
					code := b.proxy()
					if code != change.wantCode || (change.wantKey != "" && b.lastSent() != change.wantKey) ||
						(change.wantKey == "" && b.sentCount() != n) {
						t.Errorf("%s: %d with %q, want %d with %q", when, code, b.lastSent(), change.wantCode, change.wantKey)
					}
				}
				check("right after the change")
				close(gate)
				synctest.Wait()
				check("after the refresh that read the old copy ended")
			})
		})
	}
}
