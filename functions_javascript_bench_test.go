package connect_test

import (
	"bufio"
	"context"
	"encoding/json"
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

// jsNoopCLI is the same no-op action as the nango CLI compiles it from
// createAction: zod required, and its input and output schemas built, at
// the module's top level (shared with internal/jsbox's benchmarks).
var jsNoopCLI = func() string {
	b, err := os.ReadFile("internal/jsbox/testdata/noop_cli.cjs")
	if err != nil {
		panic(err)
	}
	return string(b)
}()

// deployBenchJS deploys code as the JavaScript function name of gh.
func deployBenchJS(b *testing.B, ab *actionBench, kind functions.Kind, name, code string, def functions.Definition) {
	b.Helper()
	deployBenchJSTo(b, ab, "gh", kind, name, code, def)
}

// deployBenchJSTo deploys code as the JavaScript function name of an
// integration.
func deployBenchJSTo(b *testing.B, ab *actionBench, integration string, kind functions.Kind, name, code string, def functions.Definition) {
	b.Helper()
	f := &functions.Function{EnvironmentID: ab.envID, Integration: integration, Kind: kind, Name: name, Runtime: jsruntime.Name,
		Source: "repo", Code: []byte(code), Definition: def}
	if err := ab.svc.Functions().Deploy(context.Background(), f); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkJSActionNoop measures POST /action/trigger of deployed
// JavaScript actions that do nothing (as written by hand, and as the CLI
// compiles one from createAction, zod and its schemas included) against
// the same no-op action in Go, over loopback HTTP on Postgres from
// actionBenchClients concurrent clients, interleaved in rounds in one run.
// It reports the rates, their ratios to Go's (goal: at least 0.5) and the
// median latencies.
//
//	TEST_DATABASE_URL=... go test -run '^$' -bench BenchmarkJSActionNoop -benchtime 10x .
//
// Each b.N is one round of 500 requests per variant.
func BenchmarkJSActionNoop(b *testing.B) {
	ab := newActionBench(b, nil)
	deployBenchJS(b, ab, functions.KindAction, "noop-js", jsNoop, functions.Definition{})
	deployBenchJS(b, ab, functions.KindAction, "noop-cli", jsNoopCLI, functions.Definition{})
	variants := []struct {
		name string
		call func(int)
		lat  []time.Duration
		time time.Duration
	}{{name: "go", call: ab.action("noop")}, {name: "js", call: ab.action("noop-js")}, {name: "js-cli", call: ab.action("noop-cli")}}
	const perRound = 500
	for _, v := range variants { // warm-up
		benchRound(actionBenchClients, perRound, v.call, nil)
	}
	b.ResetTimer()
	for range b.N {
		for i := range variants {
			variants[i].time += benchRound(actionBenchClients, perRound, variants[i].call, &variants[i].lat)
		}
	}
	b.StopTimer()
	total := float64(perRound * b.N)
	goRate := total / variants[0].time.Seconds()
	line := fmt.Sprintf("no-op actions over HTTP, %d clients, %d rounds: go %.0f req/s (p50 %v)", actionBenchClients, b.N, goRate, median(variants[0].lat).Round(time.Microsecond))
	for _, v := range variants[1:] {
		rate := total / v.time.Seconds()
		b.ReportMetric(rate/goRate, v.name+"-ratio")
		b.ReportMetric(float64(median(v.lat).Microseconds()), v.name+"-p50-µs")
		line += fmt.Sprintf("; %s %.0f req/s (p50 %v), %.2f of go", v.name, rate, median(v.lat).Round(time.Microsecond), rate/goRate)
	}
	b.ReportMetric(goRate, "go-req/s")
	if b.N > 1 {
		fmt.Println(line + " (goal >= 0.5)")
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
	deployBenchJSTo(b, ab, "api", functions.KindAction, "wait", `module.exports.default = { type: 'action', exec: async (nango) => {
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
		select {
		case <-done:
		case <-time.After(2 * time.Minute): // a call failed: its error is reported
			b.Fatal("the runs never were all in their provider call at once")
		}
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

// BenchmarkJSRunInProcess measures one run of the no-op actions through
// svc.Functions().RunAction, in process (no HTTP), from GOMAXPROCS
// goroutines: Go, hand-written JavaScript, and as the CLI compiles it.
//
//	TEST_DATABASE_URL=... go test -run '^$' -bench BenchmarkJSRunInProcess .
func BenchmarkJSRunInProcess(b *testing.B) {
	ab := newActionBench(b, nil)
	deployBenchJS(b, ab, functions.KindAction, "noop-js", jsNoop, functions.Definition{})
	deployBenchJS(b, ab, functions.KindAction, "noop-cli", jsNoopCLI, functions.Definition{})
	for _, name := range []string{"noop", "noop-js", "noop-cli"} {
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			b.RunParallel(func(pb *testing.PB) {
				i := 0
				for pb.Next() {
					i++
					if _, err := ab.svc.Functions().RunAction(ctx, functions.ActionCall{EnvironmentID: ab.envID, Integration: "gh",
						ConnectionID: benchConnectionID(i % benchConnections), Action: name, Input: []byte(`{}`)}); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// timedRuntime is a functions.Runtime that reports how long each sync run
// of the runtime it wraps took.
type timedRuntime struct {
	functions.Runtime
	syncs chan time.Duration
}

func (t timedRuntime) RunSync(ctx context.Context, f *functions.Function, c *functions.SyncContext, webhook json.RawMessage) error {
	t0 := time.Now()
	err := t.Runtime.RunSync(ctx, f, c, webhook)
	t.syncs <- time.Since(t0)
	return err
}

// ingestRecords is how many records one run of the ingest benchmarks
// saves, in batches of 1,000.
const ingestRecords = 10000

// BenchmarkJSSyncIngest measures the records ingest of a JavaScript sync
// (batchSave of 10,000 records built in the run, 1,000 a call) against the
// same sync in Go (Save of the same records), on Postgres, runs
// interleaved: the time of each run, without scheduling. Each run changes
// every record. It reports the ratio of their throughputs (goal: at least
// 0.7).
//
//	TEST_DATABASE_URL=... go test -run '^$' -bench BenchmarkJSSyncIngest -benchtime 5x .
func BenchmarkJSSyncIngest(b *testing.B) {
	type ticket struct {
		ID    string `json:"id"`
		Title string `json:"title"`
		N     int    `json:"n"`
		Round int64  `json:"round"`
	}
	goRuns := make(chan time.Duration, 1)
	js, err := jsruntime.New(jsruntime.Options{})
	if err != nil {
		b.Fatal(err)
	}
	timed := timedRuntime{Runtime: js, syncs: make(chan time.Duration, 1)}
	ab := newActionBench(b, func(c *connect.Config) {
		c.Functions.Runtimes = map[string]functions.Runtime{functions.JavaScriptRuntime: timed}
		c.Functions.TickInterval = 10 * time.Millisecond
	})
	model := functions.ModelOf[ticket]("Ticket")
	if err := ab.svc.Functions().Register(functions.Sync{Integration: "gh", Name: "ingest-go", Frequency: "1d", Models: []functions.Model{model},
		Run: func(ctx context.Context, s *functions.SyncContext) error {
			t0 := time.Now()
			round := time.Now().UnixNano()
			batch := make([]ticket, 0, 1000)
			for i := range ingestRecords {
				batch = append(batch, ticket{ID: "t" + strconv.Itoa(i), Title: "ticket " + strconv.Itoa(i), N: i, Round: round})
				if len(batch) == 1000 {
					if err := s.Save(ctx, "Ticket", batch); err != nil {
						return err
					}
					batch = batch[:0]
				}
			}
			goRuns <- time.Since(t0)
			return nil
		}}); err != nil {
		b.Fatal(err)
	}
	deployBenchJS(b, ab, functions.KindSync, "ingest-js", fmt.Sprintf(`module.exports.default = { type: 'sync', exec: async (nango) => {
		const round = Date.now() * 1000000 + Math.floor(Math.random() * 1000000);
		let batch = [];
		for (let i = 0; i < %d; i++) {
			batch.push({ id: 't' + i, title: 'ticket ' + i, n: i, round });
			if (batch.length === 1000) { await nango.batchSave(batch, 'Ticket'); batch = []; }
		}
	} };`, ingestRecords), functions.Definition{Runs: "1d", Models: []functions.Model{model}})
	ctx := context.Background()
	if err := ab.svc.Start(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = ab.svc.Stop(ctx)
	})
	conn := benchConnectionID(0)
	run := func(name string, took chan time.Duration) time.Duration {
		if err := ab.svc.Functions().TriggerSync(ctx, functions.SyncTarget{EnvironmentID: ab.envID, Integration: "gh", ConnectionID: conn,
			Syncs: []functions.SyncRef{{Name: name}}}, functions.TriggerOptions{}); err != nil {
			b.Fatal(err)
		}
		select {
		case d := <-took:
			return d
		case <-time.After(5 * time.Minute):
			b.Fatalf("the run of %s did not end", name)
			return 0
		}
	}
	run("ingest-go", goRuns) // warm-up: the first run adds every record
	run("ingest-js", timed.syncs)
	var goTime, jsTime time.Duration
	var ratios []float64
	b.ResetTimer()
	for range b.N {
		g := run("ingest-go", goRuns)
		j := run("ingest-js", timed.syncs)
		goTime += g
		jsTime += j
		ratios = append(ratios, g.Seconds()/j.Seconds())
	}
	b.StopTimer()
	total := float64(ingestRecords * b.N)
	goRate, jsRate := total/goTime.Seconds(), total/jsTime.Seconds()
	b.ReportMetric(goRate, "go-records/s")
	b.ReportMetric(jsRate, "js-records/s")
	b.ReportMetric(jsRate/goRate, "ratio")
	if b.N > 1 {
		slices.Sort(ratios)
		fmt.Printf("records ingest, %d records a run in batches of 1,000, %d runs each: js %.0f records/s, go %.0f records/s, ratio %.2f (goal >= 0.7; runs %.2f-%.2f)\n",
			ingestRecords, b.N, jsRate, goRate, jsRate/goRate, ratios[0], ratios[len(ratios)-1])
	}
}
