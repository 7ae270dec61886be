package connect_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/functions"
	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/internal/pgtest"
	"github.com/embedauth/connect/store/postgres"
)

// actionBenchClients is how many clients BenchmarkActionNoop runs at once.
const actionBenchClients = 8

// BenchmarkActionNoop measures POST /action/trigger of an action that does
// nothing against GET /connections/{id} with credentials (the API's
// cheapest read of a connection), both over loopback HTTP on Postgres
// from actionBenchClients concurrent keep-alive clients, interleaved in
// rounds in one run. It reports both rates and their ratio (goal: at
// least 0.7), with the spread over the rounds.
//
//	TEST_DATABASE_URL=... go test -run '^$' -bench BenchmarkActionNoop -benchtime 10x .
//
// Each b.N is one round of 2,000 requests per variant.
func BenchmarkActionNoop(b *testing.B) {
	ctx := context.Background()
	db, schema := pgtest.Schema(b)
	st, sched := openBenchPostgres(b, db, schema, postgres.SchedulerConfig{})
	svc, err := connect.New(connect.Config{Store: st, EncryptionKeys: []connect.EncryptionKey{testKey},
		RateLimitRequests: -1, Scheduler: sched})
	if err != nil {
		b.Fatal(err)
	}
	if err := svc.Functions().Register(functions.NewAction("gh", "noop",
		func(ctx context.Context, c *functions.Context, in struct{}) (map[string]bool, error) {
			return map[string]bool{"ok": true}, nil
		})); err != nil {
		b.Fatal(err)
	}
	env, err := svc.Environments().Create(ctx, environments.CreateInput{Name: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	key, _, err := svc.Environments().CreateAPIKey(ctx, env.ID, environments.NewAPIKey{Name: "bench", Scopes: []string{environments.ScopeAll}})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := svc.Integrations().Create(ctx, env.ID, integrations.CreateInput{Provider: "github", UniqueKey: "gh",
		Credentials: &integrations.Credentials{Type: "OAUTH2", ClientID: "cid", ClientSecret: "csecret", Scopes: "repo"}}); err != nil {
		b.Fatal(err)
	}
	benchSeedConnections(b, svc, env.ID)
	srv := httptest.NewServer(svc.Handler())
	b.Cleanup(srv.Close)
	tr := &http.Transport{MaxIdleConns: 2 * actionBenchClients, MaxIdleConnsPerHost: 2 * actionBenchClients}
	b.Cleanup(tr.CloseIdleConnections)
	client := &http.Client{Transport: tr}
	auth := "Bearer " + key

	do := func(r *http.Request) {
		resp, err := client.Do(r)
		if err != nil {
			b.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("%s %s = %d %s", r.Method, r.URL.Path, resp.StatusCode, body)
		}
	}
	get := func(i int) {
		r, _ := http.NewRequest("GET", srv.URL+"/connections/"+benchConnectionID(i%benchConnections)+"?provider_config_key=gh"+benchGetQuery, nil)
		r.Header.Set("Authorization", auth)
		r.Header.Set("Content-Type", "application/json")
		do(r)
	}
	action := func(i int) {
		r, _ := http.NewRequest("POST", srv.URL+"/action/trigger", strings.NewReader(`{"action_name":"noop","input":{}}`))
		r.Header.Set("Authorization", auth)
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Connection-Id", benchConnectionID(i%benchConnections))
		r.Header.Set("Provider-Config-Key", "gh")
		do(r)
	}
	const perRound = 2000
	run := func(op func(i int)) time.Duration {
		var next atomic.Int64
		var wg sync.WaitGroup
		t0 := time.Now()
		for range actionBenchClients {
			wg.Go(func() {
				for {
					i := int(next.Add(1)) - 1
					if i >= perRound {
						return
					}
					op(i)
				}
			})
		}
		wg.Wait()
		return time.Since(t0)
	}
	run(get) // warm-up: keep-alive connections, caches, the pool
	run(action)
	var getTime, actTime time.Duration
	var ratios []float64
	b.ResetTimer()
	for range b.N {
		g, a := run(get), run(action)
		getTime += g
		actTime += a
		ratios = append(ratios, g.Seconds()/a.Seconds())
	}
	b.StopTimer()
	total := float64(perRound * b.N)
	getRate, actRate := total/getTime.Seconds(), total/actTime.Seconds()
	b.ReportMetric(getRate, "get-req/s")
	b.ReportMetric(actRate, "action-req/s")
	b.ReportMetric(actRate/getRate, "ratio")
	if b.N > 1 {
		slices.Sort(ratios)
		fmt.Printf("no-op action vs GET /connections/{id}, %d clients, %d rounds: action %.0f req/s, get %.0f req/s, ratio %.2f (goal >= 0.7; rounds %.2f-%.2f)\n",
			actionBenchClients, b.N, actRate, getRate, actRate/getRate, ratios[0], ratios[len(ratios)-1])
	}
}
