package connect_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/egress"
	"github.com/embedauth/connect/functions"
	"github.com/embedauth/connect/functions/jsruntime"
	"github.com/embedauth/connect/integrations"
)

// jsNoop is a deployed JavaScript action that does nothing, as the nango
// CLI compiles one.
const jsNoop = `"use strict";
var noop_exports = {};
module.exports = noop_exports;
module.exports.default = { type: 'action', description: 'does nothing', exec: async (nango, input) => ({ ok: true }) };
`

// deployBenchJS deploys code as the JavaScript function name of gh.
func deployBenchJS(b *testing.B, ab *actionBench, kind functions.Kind, name, code string, def functions.Definition) {
	b.Helper()
	f := &functions.Function{EnvironmentID: ab.envID, Integration: "gh", Kind: kind, Name: name, Runtime: jsruntime.Name,
		Source: "repo", Code: []byte(code), Definition: def}
	if err := ab.svc.Functions().Deploy(context.Background(), f); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkJSActionNoop measures POST /action/trigger of a deployed
// JavaScript action that does nothing against the same no-op action in
// Go, over loopback HTTP on Postgres from actionBenchClients concurrent
// clients, interleaved in rounds in one run. It reports both rates, their
// ratio (goal: at least 0.5) and the median latencies.
//
//	TEST_DATABASE_URL=... go test -run '^$' -bench BenchmarkJSActionNoop -benchtime 10x .
//
// Each b.N is one round of 1,000 requests per variant.
func BenchmarkJSActionNoop(b *testing.B) {
	ab := newActionBench(b, nil)
	deployBenchJS(b, ab, functions.KindAction, "noop-js", jsNoop, functions.Definition{})
	goAction, jsAction := ab.action("noop"), ab.action("noop-js")
	const perRound = 1000
	var goLat, jsLat []time.Duration
	benchRound(actionBenchClients, perRound, goAction, nil) // warm-up
	benchRound(actionBenchClients, perRound, jsAction, nil)
	var goTime, jsTime time.Duration
	var ratios []float64
	b.ResetTimer()
	for range b.N {
		g := benchRound(actionBenchClients, perRound, goAction, &goLat)
		j := benchRound(actionBenchClients, perRound, jsAction, &jsLat)
		goTime += g
		jsTime += j
		ratios = append(ratios, g.Seconds()/j.Seconds())
	}
	b.StopTimer()
	total := float64(perRound * b.N)
	goRate, jsRate := total/goTime.Seconds(), total/jsTime.Seconds()
	b.ReportMetric(goRate, "go-req/s")
	b.ReportMetric(jsRate, "js-req/s")
	b.ReportMetric(jsRate/goRate, "ratio")
	b.ReportMetric(float64(median(jsLat).Microseconds()), "js-p50-µs")
	if b.N > 1 {
		slices.Sort(ratios)
		fmt.Printf("no-op JavaScript action vs the same action in Go, %d clients, %d rounds: js %.0f req/s (p50 %v), go %.0f req/s (p50 %v), ratio %.2f (goal >= 0.5; rounds %.2f-%.2f)\n",
			actionBenchClients, b.N, jsRate, median(jsLat).Round(time.Microsecond), goRate, median(goLat).Round(time.Microsecond),
			jsRate/goRate, ratios[0], ratios[len(ratios)-1])
	}
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkJSRunCost measures one JavaScript action run from one client:
// cold (the first run of a new deployment, which compiles its code) and
// warm (the runs after), each against the Go no-op action's request.
//
//	TEST_DATABASE_URL=... go test -run '^$' -bench BenchmarkJSRunCost -benchtime 20x .
func BenchmarkJSRunCost(b *testing.B) {
	ab := newActionBench(b, nil)
	goAction, jsAction := ab.action("noop"), ab.action("noop-js")
	deployBenchJS(b, ab, functions.KindAction, "noop-js", jsNoop, functions.Definition{})
	for i := range 50 { // warm-up
		goAction(i)
		jsAction(i)
	}
	var cold, warm, goRun time.Duration
	b.ResetTimer()
	for i := range b.N {
		// A new deployment: the same action with other code.
		deployBenchJS(b, ab, functions.KindAction, "noop-js", jsNoop+"// deployment "+strconv.Itoa(i)+"\n", functions.Definition{})
		t0 := time.Now()
		jsAction(i)
		cold += time.Since(t0)
		t0 = time.Now()
		for j := range 10 {
			jsAction(i + j)
		}
		warm += time.Since(t0) / 10
		t0 = time.Now()
		for j := range 10 {
			goAction(i + j)
		}
		goRun += time.Since(t0) / 10
	}
	b.StopTimer()
	n := time.Duration(b.N)
	b.ReportMetric(float64((cold / n).Microseconds()), "cold-µs")
	b.ReportMetric(float64((warm / n).Microseconds()), "warm-µs")
	b.ReportMetric(float64((goRun / n).Microseconds()), "go-µs")
	if b.N > 1 {
		fmt.Printf("JavaScript action run over HTTP, one client, %d deployments: cold %v, warm %v; the Go action %v\n",
			b.N, (cold / n).Round(time.Microsecond), (warm / n).Round(time.Microsecond), (goRun / n).Round(time.Microsecond))
	}
}

// BenchmarkJSRunMemory measures the memory of concurrent JavaScript runs:
// runs actions that each wait in a provider call until all of them are
// running, and reads the process's resident memory then, against before.
// It reports the memory per run and how many runs fit in 256 MiB.
//
//	TEST_DATABASE_URL=... go test -run '^$' -bench BenchmarkJSRunMemory -benchtime 3x .
func BenchmarkJSRunMemory(b *testing.B) {
	const runs = 64
	var mu sync.Mutex
	arrived := 0
	all := make(chan struct{})
	api := newBenchAPI(b, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		arrived++
		if arrived == runs {
			close(all)
		}
		mu.Unlock()
		<-all
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"ok":true}`)
	})
	ab := newActionBench(b, func(c *connect.Config) {
		c.Functions.JavaScript = jsruntime.Options{MaxRuns: runs}
		c.Providers = api.catalog
		c.Egress = egress.Policy{AllowLoopback: true}
	})
	api.integration(b, ab)
	deployBenchJS(b, ab, functions.KindAction, "wait", `module.exports.default = { type: 'action', exec: async (nango) => {
		const items = []; for (let i = 0; i < 1000; i++) items.push({ id: 'i' + i, title: 'item ' + i });
		const r = await nango.get({ endpoint: '/wait' }); return { ok: r.data.ok, n: items.length }; } };`, functions.Definition{})
	wait := ab.actionOf("api", "wait")
	var perRun []float64
	b.ResetTimer()
	for range b.N {
		mu.Lock()
		arrived, all = 0, make(chan struct{})
		done := all
		mu.Unlock()
		before := rss(b)
		var wg sync.WaitGroup
		for i := range runs {
			wg.Go(func() { wait(i) })
		}
		<-done
		during := rss(b)
		wg.Wait()
		perRun = append(perRun, float64(during-before)/runs)
	}
	b.StopTimer()
	slices.Sort(perRun)
	m := perRun[len(perRun)/2]
	b.ReportMetric(m/(1<<20), "MiB/run")
	b.ReportMetric(256*(1<<20)/m, "runs/256MiB")
	fmt.Printf("JavaScript runs held at once: %d; resident memory per run %.2f MiB (median of %d), %.0f runs fit in 256 MiB\n",
		runs, m/(1<<20), len(perRun), 256*(1<<20)/m)
}

// rss is the process's resident memory, in bytes.
func rss(b *testing.B) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		b.Skip("resident memory needs /proc")
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	b.Fatal("no VmRSS in /proc/self/status")
	return 0
}

// benchAPI is a fake provider API for benchmarks: the provider "bench-api"
// (API key) whose calls go to handle.
type benchAPI struct {
	catalog *integrations.Catalog
}

func newBenchAPI(b *testing.B, handle http.HandlerFunc) *benchAPI {
	srv := httptest.NewServer(handle)
	b.Cleanup(srv.Close)
	cat, err := integrations.DefaultCatalog()
	if err != nil {
		b.Fatal(err)
	}
	cat, err = cat.With(&integrations.Provider{Name: "bench-api", DisplayName: "Bench API", AuthMode: integrations.AuthModeAPIKey,
		Credentials: map[string]integrations.FieldSpec{"apiKey": {Type: "string", Title: "API key"}},
		Proxy:       &integrations.Proxy{BaseURL: srv.URL, Headers: map[string]string{"X-Api-Key": "${apiKey}"}}})
	if err != nil {
		b.Fatal(err)
	}
	return &benchAPI{catalog: cat}
}

// integration creates the integration "api" of the provider and its
// connection "c1".
func (a *benchAPI) integration(b *testing.B, ab *actionBench) {
	ctx := context.Background()
	if _, err := ab.svc.Integrations().Create(ctx, ab.envID, integrations.CreateInput{Provider: "bench-api", UniqueKey: "api"}); err != nil {
		b.Fatal(err)
	}
	if _, _, err := ab.svc.Connections().Import(ctx, ab.envID, connections.ImportInput{ProviderConfigKey: "api",
		ConnectionID: "c1", APIKey: "sk-bench"}); err != nil {
		b.Fatal(err)
	}
}

// actionOf returns a call of POST /action/trigger of the action name of
// integration for its connection c1.
func (ab *actionBench) actionOf(integration, name string) func(i int) {
	body := `{"action_name":"` + name + `","input":{}}`
	return func(int) {
		r, _ := http.NewRequest("POST", ab.url+"/action/trigger", strings.NewReader(body))
		r.Header.Set("Authorization", ab.auth)
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Connection-Id", "c1")
		r.Header.Set("Provider-Config-Key", integration)
		ab.do(r)
	}
}
