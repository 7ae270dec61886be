package connect_test

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// BenchmarkMCPToolCall measures an MCP tools/call of a no-op action
// (POST /mcp, one stateless JSON-RPC request, as an agent's client sends
// it after initialize) against POST /action/trigger of the same action,
// both over loopback HTTP on Postgres from actionBenchClients concurrent
// keep-alive clients, interleaved in rounds in one run. It reports both
// rates and their ratio (goal: at least 0.8), with the spread over the
// rounds.
//
//	TEST_DATABASE_URL=... go test -run '^$' -bench BenchmarkMCPToolCall -benchtime 10x .
//
// Each b.N is one round of 2,000 requests per variant.
func BenchmarkMCPToolCall(b *testing.B) {
	ab := newActionBench(b, nil)
	action := ab.action("noop")
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"noop","arguments":{}}}`
	tool := func(i int) {
		r, _ := http.NewRequest("POST", ab.url+"/mcp", strings.NewReader(body))
		r.Header.Set("Authorization", ab.auth)
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		r.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		r.Header.Set("Connection-Id", benchConnectionID(i%benchConnections))
		r.Header.Set("Provider-Config-Key", "gh")
		ab.do(r)
	}
	// The answer is the action's output, not an error.
	probe, _ := http.NewRequest("POST", ab.url+"/mcp", strings.NewReader(body))
	probe.Header = http.Header{"Authorization": {ab.auth}, "Content-Type": {"application/json"},
		"Accept": {"application/json, text/event-stream"}, "Connection-Id": {benchConnectionID(0)}, "Provider-Config-Key": {"gh"}}
	if out := ab.body(probe); !strings.Contains(out, `"text":"{\n  \"ok\": true\n}"`) || strings.Contains(out, "isError") {
		b.Fatalf("tools/call answered %s", out)
	}
	const perRound = 2000
	run := func(op func(i int)) time.Duration { return benchRound(actionBenchClients, perRound, op, nil) }
	run(action) // warm-up
	run(tool)
	var actTime, toolTime time.Duration
	var ratios []float64
	b.ResetTimer()
	for range b.N {
		a, m := run(action), run(tool)
		actTime += a
		toolTime += m
		ratios = append(ratios, a.Seconds()/m.Seconds())
	}
	b.StopTimer()
	total := float64(perRound * b.N)
	actRate, toolRate := total/actTime.Seconds(), total/toolTime.Seconds()
	b.ReportMetric(actRate, "trigger-req/s")
	b.ReportMetric(toolRate, "mcp-req/s")
	b.ReportMetric(toolRate/actRate, "ratio")
	if b.N > 1 {
		slices.Sort(ratios)
		fmt.Printf("MCP tools/call vs POST /action/trigger (no-op), %d clients, %d rounds: mcp %.0f req/s, trigger %.0f req/s, ratio %.2f (goal >= 0.8; rounds %.2f-%.2f)\n",
			actionBenchClients, b.N, toolRate, actRate, toolRate/actRate, ratios[0], ratios[len(ratios)-1])
	}
}

// body sends r and returns its answer, failing the benchmark unless it is
// 200.
func (ab *actionBench) body(r *http.Request) string {
	resp, err := ab.client.Do(r)
	if err != nil {
		ab.b.Fatal(err)
	}
	defer resp.Body.Close()
	var sb strings.Builder
	_, _ = io.Copy(&sb, resp.Body)
	if resp.StatusCode != 200 {
		ab.b.Fatalf("%s %s = %d %s", r.Method, r.URL.Path, resp.StatusCode, sb.String())
	}
	return sb.String()
}
