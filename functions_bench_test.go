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
	ab := newActionBench(b, nil)
	get := func(i int) {
		r, _ := http.NewRequest("GET", ab.url+"/connections/"+benchConnectionID(i%benchConnections)+"?provider_config_key=gh"+benchGetQuery, nil)
		r.Header.Set("Authorization", ab.auth)
		r.Header.Set("Content-Type", "application/json")
		ab.do(r)
	}
	action := ab.action("noop")
	const perRound = 2000
	run := func(op func(i int)) time.Duration { return benchRound(actionBenchClients, perRound, op, nil) }
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

// actionBench is a Service on Postgres serving over loopback HTTP, with
// the integration "gh", benchConnections connections, and the Go action
// "noop" (answers {"ok":true}).
type actionBench struct {
	svc    *connect.Service
	envID  int64
	url    string
	auth   string
	client *http.Client
	b      *testing.B
}

func newActionBench(b *testing.B, mutate func(*connect.Config)) *actionBench {
	ctx := context.Background()
	db, schema := pgtest.Schema(b)
	st, sched := openBenchPostgres(b, db, schema, postgres.SchedulerConfig{})
	cfg := connect.Config{Store: st, EncryptionKeys: []connect.EncryptionKey{testKey}, RateLimitRequests: -1, Scheduler: sched}
	if mutate != nil {
		mutate(&cfg)
	}
	svc, err := connect.New(cfg)
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
	tr := &http.Transport{MaxIdleConns: 4 * actionBenchClients, MaxIdleConnsPerHost: 4 * actionBenchClients}
	b.Cleanup(tr.CloseIdleConnections)
	return &actionBench{svc: svc, envID: env.ID, url: srv.URL, auth: "Bearer " + key, client: &http.Client{Transport: tr}, b: b}
}

// do sends r and fails the benchmark unless it is answered 200.
func (ab *actionBench) do(r *http.Request) {
	resp, err := ab.client.Do(r)
	if err != nil {
		ab.b.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		ab.b.Fatalf("%s %s = %d %s", r.Method, r.URL.Path, resp.StatusCode, body)
	}
}

// action returns a call of POST /action/trigger of the action name for
// connection i.
func (ab *actionBench) action(name string) func(i int) {
	body := `{"action_name":"` + name + `","input":{}}`
	return func(i int) {
		r, _ := http.NewRequest("POST", ab.url+"/action/trigger", strings.NewReader(body))
		r.Header.Set("Authorization", ab.auth)
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Connection-Id", benchConnectionID(i%benchConnections))
		r.Header.Set("Provider-Config-Key", "gh")
		ab.do(r)
	}
}

// benchRound runs n calls of op from clients concurrent goroutines and
// returns how long they took; with lat not nil, it appends each call's
// latency to it.
func benchRound(clients, n int, op func(i int), lat *[]time.Duration) time.Duration {
	var next atomic.Int64
	var wg sync.WaitGroup
	var mu sync.Mutex
	t0 := time.Now()
	for range clients {
		wg.Go(func() {
			var mine []time.Duration
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					break
				}
				s := time.Now()
				op(i)
				if lat != nil {
					mine = append(mine, time.Since(s))
				}
			}
			if lat != nil {
				mu.Lock()
				*lat = append(*lat, mine...)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return time.Since(t0)
}
