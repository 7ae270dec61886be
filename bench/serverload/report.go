package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
)

// runResult is one measured run: one variant at one concurrency.
type runResult struct {
	Round       int     `json:"round"` // 0 for the warm-up, -1 for the sweep
	Variant     string  `json:"variant"`
	Concurrency int     `json:"concurrency"`
	Requests    int     `json:"requests"` // answered as expected
	Errors      int     `json:"errors"`   // no answer
	Bad         int     `json:"bad"`      // not 2xx, or not the expected body
	Seconds     float64 `json:"seconds"`
	ReqPerSec   float64 `json:"req_per_s"`
	P50Ms       float64 `json:"p50_ms"`
	P90Ms       float64 `json:"p90_ms"`
	P99Ms       float64 `json:"p99_ms"`
	P999Ms      float64 `json:"p99_9_ms"`
	MaxMs       float64 `json:"max_ms"`
	// CPUPerReqUs is the user+system CPU of each process over the run, in
	// µs per request: server, upstream, bare and client (this process,
	// the load generator).
	CPUPerReqUs map[string]float64 `json:"cpu_us_per_req"`
	// PGNewSessions is the number of sessions opened to the bench's
	// database during the run (-1 when Postgres is older than 14).
	PGNewSessions int64 `json:"pg_new_sessions"`
	// PGBackends is the number of sessions open at the end of the run.
	PGBackends int64 `json:"pg_backends"`
	// UpstreamConns is the number of TCP connections the upstream accepted
	// during the run; ClientRedials those the clients reopened.
	UpstreamConns int64   `json:"upstream_new_conns"`
	ClientRedials int     `json:"client_redials"`
	Load1         float64 `json:"loadavg_1m"` // at the end of the run
}

func newRunResult(round int, name string, conc int, lr loadResult, before, after snapshot) runResult {
	r := runResult{
		Round: round, Variant: name, Concurrency: conc,
		Requests: lr.requests, Errors: lr.errors, Bad: lr.bad,
		Seconds:       lr.elapsed.Seconds(),
		CPUPerReqUs:   map[string]float64{},
		PGNewSessions: -1,
		PGBackends:    after.pg.Backends,
		UpstreamConns: after.upstream.Conns - before.upstream.Conns,
		ClientRedials: lr.redials,
		Load1:         loadavg(),
	}
	if r.Seconds > 0 {
		r.ReqPerSec = float64(lr.requests) / r.Seconds
	}
	msOf := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	r.P50Ms = msOf(percentile(lr.latencies, 50))
	r.P90Ms = msOf(percentile(lr.latencies, 90))
	r.P99Ms = msOf(percentile(lr.latencies, 99))
	r.P999Ms = msOf(percentile(lr.latencies, 99.9))
	if len(lr.latencies) > 0 {
		r.MaxMs = msOf(lr.latencies[len(lr.latencies)-1])
	}
	answered := lr.requests + lr.bad
	for k, v := range after.cpu {
		r.CPUPerReqUs[k] = perRequest(v-before.cpu[k], answered)
	}
	if before.pg.Sessions >= 0 && after.pg.Sessions >= 0 {
		r.PGNewSessions = after.pg.Sessions - before.pg.Sessions
	}
	return r
}

// loadavg is the 1-minute load average, or -1.
func loadavg() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	var l float64
	if _, err := fmt.Sscan(string(b), &l); err != nil {
		return -1
	}
	return l
}

const runFormat = "%-6s %4s %-7s %8s %8s %8s %8s %8s %8s %7s %7s %7s %7s %6s %6s %6s %5s\n"

func printRunHeader(w io.Writer) {
	fmt.Fprintf(w, runFormat, "round", "c", "variant", "req/s", "p50 ms", "p99 ms", "p99.9 ms", "max ms", "requests",
		"server", "upstr", "bare", "client", "pg+", "pg", "up+", "load")
}

func printRun(w io.Writer, r runResult) {
	round := "warm"
	switch {
	case r.Round > 0:
		round = fmt.Sprint(r.Round)
	case r.Round < 0:
		round = "sweep"
	}
	sessions := "n/a"
	if r.PGNewSessions >= 0 {
		sessions = fmt.Sprint(r.PGNewSessions)
	}
	cpu := func(k string) string { return fmt.Sprintf("%.0f", r.CPUPerReqUs[k]) }
	fmt.Fprintf(w, runFormat, round, fmt.Sprint(r.Concurrency), r.Variant,
		fmt.Sprintf("%.0f", r.ReqPerSec), msf(r.P50Ms), msf(r.P99Ms), msf(r.P999Ms), msf(r.MaxMs), fmt.Sprint(r.Requests),
		cpu("server"), cpu("upstream"), cpu("bare"), cpu("client"),
		sessions, fmt.Sprint(r.PGBackends), fmt.Sprint(r.UpstreamConns), fmt.Sprintf("%.1f", r.Load1))
	if r.Errors > 0 || r.Bad > 0 {
		fmt.Fprintf(w, "       ^ %d requests failed, %d got an unexpected answer\n", r.Errors, r.Bad)
	}
}

func msf(v float64) string { return ms(time.Duration(v * float64(time.Millisecond))) }

// report is everything the bench measured.
type report struct {
	Config    config       `json:"config"`
	Host      hostReport   `json:"host"`
	Database  string       `json:"database"` // dropped at the end
	Seed      seedReport   `json:"seed"`
	Sweep     []runResult  `json:"sweep"`
	Warmup    []runResult  `json:"warmup"`
	Runs      []runResult  `json:"runs"`
	Summary   []summaryRow `json:"summary"`
	Ratios    []ratioRow   `json:"ratios"`
	Goals     []goal       `json:"goals"`
	ServerLog []string     `json:"server_warnings,omitempty"`

	pids map[string]int // of the processes, for tests
}

type hostReport struct {
	CPUs      int    `json:"cpus"`
	GoVersion string `json:"go_version"`
	Commit    string `json:"commit,omitempty"` // of -repo
	ServerBin string `json:"server_bin"`
}

type seedReport struct {
	Connections int     `json:"connections"`
	Seconds     float64 `json:"seconds"`
	PerSecond   float64 `json:"per_second"`
}

// summaryRow sums up the rounds of one variant at one concurrency.
type summaryRow struct {
	Concurrency int    `json:"concurrency"`
	Variant     string `json:"variant"`
	Rounds      int    `json:"rounds"`
	ReqPerSec   spread `json:"req_per_s"`
	P50Ms       spread `json:"p50_ms"`
	P99Ms       spread `json:"p99_ms"`
	// CPUPerReqUs are the spreads of runResult.CPUPerReqUs.
	CPUPerReqUs map[string]spread `json:"cpu_us_per_req"`
	// PGNewSessions is the sum over the rounds (-1 when unknown).
	PGNewSessions int64 `json:"pg_new_sessions"`
}

// ratioRow compares the proxy with the bare proxy at one concurrency,
// round by round (the two ran next to each other in each round).
type ratioRow struct {
	Concurrency int `json:"concurrency"`
	// Throughput is proxy req/s / bare req/s.
	Throughput spread `json:"throughput"`
	// P99 is proxy p99 / bare p99.
	P99 spread `json:"p99"`
}

// goal is one of the targets of issue 13, checked on this run's figures.
type goal struct {
	Item   int    `json:"item"`
	Text   string `json:"text"`
	Figure string `json:"figure"`
	Met    bool   `json:"met"`
}

// goalConcurrency is the concurrency issue 13 states its goals at.
const goalConcurrency = 64

func (rep *report) summarize() {
	rep.Summary, rep.Ratios, rep.Goals = nil, nil, nil
	for _, c := range rep.Config.Concurrencies {
		for _, v := range rep.Config.Variants {
			runs := rep.runs(c, v)
			if len(runs) == 0 {
				continue
			}
			row := summaryRow{Concurrency: c, Variant: v, Rounds: len(runs), CPUPerReqUs: map[string]spread{}}
			pick := func(f func(runResult) float64) spread {
				vs := make([]float64, len(runs))
				for i, r := range runs {
					vs[i] = f(r)
				}
				return spreadOf(vs)
			}
			row.ReqPerSec = pick(func(r runResult) float64 { return r.ReqPerSec })
			row.P50Ms = pick(func(r runResult) float64 { return r.P50Ms })
			row.P99Ms = pick(func(r runResult) float64 { return r.P99Ms })
			for _, k := range []string{"server", "upstream", "bare", "client"} {
				row.CPUPerReqUs[k] = pick(func(r runResult) float64 { return r.CPUPerReqUs[k] })
			}
			for _, r := range runs {
				if r.PGNewSessions < 0 {
					row.PGNewSessions = -1
					break
				}
				row.PGNewSessions += r.PGNewSessions
			}
			rep.Summary = append(rep.Summary, row)
		}
		proxy, bare := rep.runs(c, "proxy"), rep.runs(c, "bare")
		if len(proxy) == 0 || len(proxy) != len(bare) {
			continue
		}
		var tput, p99 []float64
		for i := range proxy {
			if bare[i].ReqPerSec > 0 && bare[i].P99Ms > 0 {
				tput = append(tput, proxy[i].ReqPerSec/bare[i].ReqPerSec)
				p99 = append(p99, proxy[i].P99Ms/bare[i].P99Ms)
			}
		}
		row := ratioRow{Concurrency: c, Throughput: spreadOf(tput), P99: spreadOf(p99)}
		rep.Ratios = append(rep.Ratios, row)
		if c != goalConcurrency {
			continue
		}
		var worst float64
		for _, v := range p99 {
			worst = max(worst, v)
		}
		rep.Goals = append(rep.Goals,
			goal{Item: 2, Text: "proxy p99 within 3x the bare proxy's p99 in the same round, at c=64",
				Figure: fmt.Sprintf("worst round %.2fx", worst), Met: len(p99) > 0 && worst <= 3},
			goal{Item: 3, Text: "proxy throughput at least 0.85 of the bare proxy's at c=64 (median of the rounds)",
				Figure: fmt.Sprintf("median %.2f", row.Throughput.Median), Met: len(tput) > 0 && row.Throughput.Median >= 0.85})
	}
	var sessions []string
	met, known := true, false
	for _, v := range []string{"get", "proxy"} {
		for _, r := range rep.runs(goalConcurrency, v) {
			if r.PGNewSessions < 0 {
				continue
			}
			known = true
			sessions = append(sessions, fmt.Sprintf("%s %d", v, r.PGNewSessions))
			met = met && r.PGNewSessions == 0
		}
	}
	if known {
		rep.Goals = append([]goal{{Item: 1, Text: "no run at c=64 opens new Postgres sessions after the warm-up",
			Figure: "new sessions per run: " + strings.Join(sessions, ", "), Met: met}}, rep.Goals...)
	}
}

// runs are the measured runs of variant v at concurrency c, by round.
func (rep *report) runs(c int, v string) []runResult {
	var out []runResult
	for _, r := range rep.Runs {
		if r.Concurrency == c && r.Variant == v {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b runResult) int { return a.Round - b.Round })
	return out
}

func (rep *report) print(w io.Writer) {
	fmt.Fprintf(w, "\nsummary: median of %d rounds [min–max]; CPU in µs per request; pg+ is the new Postgres sessions of all rounds\n",
		rep.Config.Rounds)
	const f = "%4s  %-7s %-22s %-22s %-22s %-16s %-16s %-16s %s\n"
	fmt.Fprintf(w, f, "c", "variant", "req/s", "p50 ms", "p99 ms", "server CPU", "upstream CPU", "bare CPU", "pg+")
	for _, s := range rep.Summary {
		sessions := "n/a"
		if s.PGNewSessions >= 0 {
			sessions = fmt.Sprint(s.PGNewSessions)
		}
		fmt.Fprintf(w, f, fmt.Sprint(s.Concurrency), s.Variant,
			spreadString(s.ReqPerSec, "%.0f"), spreadMs(s.P50Ms), spreadMs(s.P99Ms),
			spreadString(s.CPUPerReqUs["server"], "%.0f"), spreadString(s.CPUPerReqUs["upstream"], "%.0f"),
			spreadString(s.CPUPerReqUs["bare"], "%.0f"), sessions)
	}
	for _, r := range rep.Ratios {
		fmt.Fprintf(w, "c=%d: proxy/bare throughput %s, proxy p99 / bare p99 %s\n",
			r.Concurrency, spreadString(r.Throughput, "%.2f"), spreadString(r.P99, "%.2f"))
	}
	for _, g := range rep.Goals {
		verdict := "met"
		if !g.Met {
			verdict = "NOT met"
		}
		fmt.Fprintf(w, "issue 13 item %d, %s: %s (%s)\n", g.Item, g.Text, verdict, g.Figure)
	}
}

func spreadString(s spread, f string) string {
	return fmt.Sprintf(f+" ["+f+"–"+f+"]", s.Median, s.Min, s.Max)
}

func spreadMs(s spread) string {
	return msf(s.Median) + " [" + msf(s.Min) + "–" + msf(s.Max) + "]"
}
