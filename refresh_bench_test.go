package connect_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/egress"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/internal/pgtest"
	"github.com/embedauth/connect/store/postgres"
)

// BenchmarkRefresh measures token refresh on Postgres against a fake
// provider that answers at once, in one run:
//
//   - refreshes/s: 8 goroutines get distinct connections whose tokens
//     expire in 5 minutes, each get refreshing one;
//
//   - the latency of a get that waits on another instance's refresh of the
//     same connection (two Services on one database, started together)
//     against a get of a connection that needs no refresh.
//
//     TEST_DATABASE_URL=... go test -run '^$' -bench BenchmarkRefresh -benchtime 2000x .
func BenchmarkRefresh(b *testing.B) {
	ctx := context.Background()
	var calls atomic.Int64
	var issued atomic.Int64
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		n := issued.Add(1)
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"access_token": fmt.Sprintf("at-%d", n), "refresh_token": fmt.Sprintf("rt-%d", n),
			"expires_in": 3600, "token_type": "bearer"})
	}))
	b.Cleanup(provider.Close)
	base, err := integrations.DefaultCatalog()
	if err != nil {
		b.Fatal(err)
	}
	cat, err := base.With(&integrations.Provider{Name: "fake-oauth", DisplayName: "Fake", AuthMode: integrations.AuthModeOAuth2,
		AuthorizationURL: provider.URL + "/authorize", TokenURL: provider.URL + "/token"})
	if err != nil {
		b.Fatal(err)
	}

	db, schema := pgtest.Schema(b)
	opts := &postgres.Options{Schema: schema}
	if err := postgres.Migrate(ctx, db, opts); err != nil {
		b.Fatal(err)
	}
	clock := newRefreshClock()
	newInstance := func() *connect.Service {
		st, err := postgres.New(db, opts)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { st.Close() })
		sched, err := postgres.NewScheduler(db, opts, postgres.SchedulerConfig{})
		if err != nil {
			b.Fatal(err)
		}
		svc, err := connect.New(connect.Config{Store: st, Scheduler: sched, EncryptionKeys: []connect.EncryptionKey{testKey},
			Providers: cat, Now: clock.Now, RateLimitRequests: -1, Egress: egress.Policy{AllowLoopback: true}}) // the fake provider is on 127.0.0.1
		if err != nil {
			b.Fatal(err)
		}
		return svc
	}
	a, c := newInstance(), newInstance()
	env, err := a.Environments().Create(ctx, environments.CreateInput{Name: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := a.Integrations().Create(ctx, env.ID, integrations.CreateInput{Provider: "fake-oauth", UniqueKey: "fo",
		Credentials: &integrations.Credentials{Type: "OAUTH2", ClientID: "id", ClientSecret: "secret"}}); err != nil {
		b.Fatal(err)
	}
	next := 0
	var fresh string
	seed := func(expiresIn time.Duration) string {
		next++
		id := fmt.Sprintf("c%d", next)
		in := int64(expiresIn / time.Second)
		if _, _, err := a.Connections().Import(ctx, env.ID, connections.ImportInput{ProviderConfigKey: "fo", ConnectionID: id,
			AccessToken: "old", RefreshToken: "rt-old-" + id, ExpiresIn: &in}); err != nil {
			b.Fatal(err)
		}
		return id
	}
	get := func(svc *connect.Service, id string) time.Duration {
		start := time.Now()
		cn, err := svc.Connections().Get(ctx, env.ID, "fo", id, connections.GetOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if refreshed := cn.Credentials.AccessToken != "old"; refreshed == (id == fresh) {
			b.Fatalf("%s: access token %q", id, cn.Credentials.AccessToken)
		}
		return time.Since(start)
	}

	n := max(b.N, 100)
	expiring := make([]string, n)
	for i := range expiring {
		expiring[i] = seed(5 * time.Minute)
	}
	pairs := make([]string, n)
	for i := range pairs {
		pairs[i] = seed(5 * time.Minute)
	}
	fresh = seed(time.Hour)
	b.ResetTimer()

	// Refreshes per second.
	calls.Store(0)
	start := time.Now()
	var wg sync.WaitGroup
	var cursor atomic.Int64
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(cursor.Add(1)) - 1
				if i >= n {
					return
				}
				get(a, expiring[i])
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if got := calls.Load(); got != int64(n) {
		b.Fatalf("%d provider calls for %d refreshes", got, n)
	}

	// A get that waits on another instance's refresh, against one that
	// needs none.
	var waited, plain []time.Duration
	calls.Store(0)
	for _, id := range pairs {
		var d [2]time.Duration
		var ready, wg sync.WaitGroup
		ready.Add(1)
		for k, svc := range []*connect.Service{a, c} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ready.Wait()
				d[k] = get(svc, id)
			}()
		}
		ready.Done()
		wg.Wait()
		waited = append(waited, max(d[0], d[1]))
		plain = append(plain, get(a, fresh))
	}
	b.StopTimer()
	if got := calls.Load(); got != int64(n) {
		b.Fatalf("%d provider calls for %d contended refreshes", got, n)
	}
	median := func(ds []time.Duration) time.Duration {
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		return ds[len(ds)/2]
	}
	rate := float64(n) / elapsed.Seconds()
	mw, mp := median(waited), median(plain)
	b.ReportMetric(rate, "refreshes/s")
	b.ReportMetric(float64(mw.Microseconds()), "waiting-get-µs")
	b.ReportMetric(float64(mp.Microseconds()), "plain-get-µs")
	fmt.Printf("refresh: %.0f refreshes/s (8 goroutines); median get waiting on another instance's refresh %d µs vs %d µs for a get needing none (+%d µs) (n=%d)\n",
		rate, mw.Microseconds(), mp.Microseconds(), (mw - mp).Microseconds(), n)
}
