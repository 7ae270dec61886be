package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// runResult is one measured run: one variant of one server (or the bare
// proxy, or the upstream) at one concurrency.
type runResult struct {
	Round int `json:"round"` // 0 for the warm-up, -1 for the sweep
	// Server is the label of the server measured ("sqlite", "postgres",
	// "sqlite-p1" ...); empty for bare and direct.
	Server      string  `json:"server,omitempty"`
	Store       string  `json:"store,omitempty"`
	GoMaxProcs  int     `json:"gomaxprocs,omitempty"` // 0: unset
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
	// CPUPerReqUs is the user+system CPU over the run, in µs per request,
	// of: server (the server measured; 0 for bare and direct), others
	// (the other servers, idle), pg (the Postgres sessions of the bench's
	// databases; absent when Postgres runs elsewhere or no server is on
	// it), upstream, bare and client (this process, the load generator).
	CPUPerReqUs map[string]float64 `json:"cpu_us_per_req"`
	// PGNewSessions is the number of sessions opened to the bench's
	// databases during the run (-1 when Postgres is older than 14 or no
	// server is on it).
	PGNewSessions int64 `json:"pg_new_sessions"`
	// PGBackends is the number of sessions open at the end of the run.
	PGBackends int64 `json:"pg_backends"`
	// UpstreamConns is the number of TCP connections the upstream accepted
	// during the run; ClientRedials those the clients reopened.
	UpstreamConns int64   `json:"upstream_new_conns"`
	ClientRedials int     `json:"client_redials"`
	Load1         float64 `json:"loadavg_1m"` // at the end of the run
}

// name is the run's server and variant, such as "sqlite get" or "bare".
func (r runResult) name() string {
	if r.Server == "" {
		return r.Variant
	}
	return r.Server + " " + r.Variant
}

// delta is what the snapshots before and after a run (or the slices of a
// run) counted.
type delta struct {
	cpu           map[string]time.Duration // by process, as in snapshot
	pgCPU         time.Duration
	pgCPUKnown    bool
	sessions      int64 // -1: unknown
	backends      int64 // at the end
	upstreamConns int64
}

// diff is what happened between two snapshots.
func diff(before, after snapshot) delta {
	d := delta{cpu: map[string]time.Duration{}, sessions: -1, backends: after.pg.Backends,
		upstreamConns: after.upstream.Conns - before.upstream.Conns}
	for k, v := range after.cpu {
		d.cpu[k] = v - before.cpu[k]
	}
	if before.pg.Sessions >= 0 && after.pg.Sessions >= 0 {
		d.sessions = after.pg.Sessions - before.pg.Sessions
	}
	if before.pg.CPU != nil && after.pg.CPU != nil {
		// A session that appeared during the run counts whole; one that
		// ended during it is lost (the bench expects none of either).
		d.pgCPUKnown = true
		for pid, v := range after.pg.CPU {
			d.pgCPU += v - before.pg.CPU[pid]
		}
	}
	return d
}

// add adds e, a later delta, to d.
func (d *delta) add(e delta) {
	if d.cpu == nil {
		*d = e
		return
	}
	for k, v := range e.cpu {
		d.cpu[k] += v
	}
	d.pgCPU += e.pgCPU
	d.pgCPUKnown = d.pgCPUKnown && e.pgCPUKnown
	if d.sessions < 0 || e.sessions < 0 {
		d.sessions = -1
	} else {
		d.sessions += e.sessions
	}
	d.backends = e.backends
	d.upstreamConns += e.upstreamConns
}

func newRunResult(round int, t target, conc int, lr loadResult, d delta) runResult {
	r := runResult{
		Round: round, Variant: t.v.name, Concurrency: conc,
		Requests: lr.requests, Errors: lr.errors, Bad: lr.bad,
		Seconds:       lr.elapsed.Seconds(),
		CPUPerReqUs:   map[string]float64{},
		PGNewSessions: d.sessions,
		PGBackends:    d.backends,
		UpstreamConns: d.upstreamConns,
		ClientRedials: lr.redials,
		Load1:         loadavg(),
	}
	if t.inst != nil {
		r.Server, r.Store, r.GoMaxProcs = t.inst.Label, t.inst.Store, t.inst.GoMaxProcs
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
	var server, others time.Duration
	for k, v := range d.cpu {
		switch {
		case k == "upstream" || k == "bare" || k == "client":
			r.CPUPerReqUs[k] = perRequest(v, answered)
		case r.Server == k:
			server += v
		default:
			others += v
		}
	}
	r.CPUPerReqUs["server"] = perRequest(server, answered)
	r.CPUPerReqUs["others"] = perRequest(others, answered)
	if d.pgCPUKnown {
		r.CPUPerReqUs["pg"] = perRequest(d.pgCPU, answered)
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

const runFormat = "%-6s %-11s %4s %-7s %8s %8s %8s %8s %8s %8s %7s %6s %6s %6s %6s %6s %5s %4s %5s %5s\n"

func printRunHeader(w io.Writer) {
	fmt.Fprintf(w, runFormat, "round", "server", "c", "variant", "req/s", "p50 ms", "p99 ms", "p99.9 ms", "max ms", "requests",
		"server", "pgCPU", "others", "upstr", "bare", "client", "pg+", "pg", "up+", "load")
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
	server := r.Server
	if server == "" {
		server = "-"
	}
	fmt.Fprintf(w, runFormat, round, server, fmt.Sprint(r.Concurrency), r.Variant,
		fmt.Sprintf("%.0f", r.ReqPerSec), msf(r.P50Ms), msf(r.P99Ms), msf(r.P999Ms), msf(r.MaxMs), fmt.Sprint(r.Requests),
		cpuString(r.CPUPerReqUs, "server"), cpuString(r.CPUPerReqUs, "pg"), cpuString(r.CPUPerReqUs, "others"),
		cpuString(r.CPUPerReqUs, "upstream"), cpuString(r.CPUPerReqUs, "bare"), cpuString(r.CPUPerReqUs, "client"),
		sessions, fmt.Sprint(r.PGBackends), fmt.Sprint(r.UpstreamConns), fmt.Sprintf("%.1f", r.Load1))
	if r.Errors > 0 || r.Bad > 0 {
		fmt.Fprintf(w, "       ^ %d requests failed, %d got an unexpected answer\n", r.Errors, r.Bad)
	}
}

// cpuString is the CPU figure k of m, or n/a.
func cpuString(m map[string]float64, k string) string {
	v, ok := m[k]
	if !ok {
		return "n/a"
	}
	return fmt.Sprintf("%.0f", v)
}

func msf(v float64) string { return ms(time.Duration(v * float64(time.Millisecond))) }

// report is everything the bench measured.
type report struct {
	Config     config            `json:"config"`
	Host       hostReport        `json:"host"`
	Databases  []string          `json:"databases,omitempty"` // dropped at the end
	DataDirs   []string          `json:"data_dirs,omitempty"` // removed at the end
	Seeds      []seedReport      `json:"seeds"`
	ColdStarts []coldStartReport `json:"cold_starts,omitempty"`
	Instances  []instanceReport  `json:"servers"`
	Sweep      []runResult       `json:"sweep"`
	Warmup     []runResult       `json:"warmup"`
	Runs       []runResult       `json:"runs"`
	Summary    []summaryRow      `json:"summary"`
	Ratios     []ratioRow        `json:"ratios"`
	Stores     []storeRatio      `json:"store_ratios,omitempty"`
	Scaling    []scalingRow      `json:"gomaxprocs_scaling,omitempty"`
	Goals      []goal            `json:"goals"`

	pids map[string]int // of the processes, for tests
}

type hostReport struct {
	CPUs      int    `json:"cpus"`
	GoVersion string `json:"go_version"`
	Commit    string `json:"commit,omitempty"` // of -repo
	ServerBin string `json:"server_bin"`
}

// seedReport is the bulk import of the -n connections on one store.
type seedReport struct {
	Store       string  `json:"store"`
	Connections int     `json:"connections"`
	Seconds     float64 `json:"seconds"`
	PerSecond   float64 `json:"per_second"`
}

// coldStartReport is the cold starts of the server on one store: exec to
// its first 200 to GET /health, on an empty database and with the -n
// connections.
type coldStartReport struct {
	Store      string    `json:"store"`
	EmptyMs    []float64 `json:"empty_ms"`
	WithDataMs []float64 `json:"with_connections_ms"`
}

func (rep *report) addColdStart(store string, withData bool, d time.Duration) {
	i := slices.IndexFunc(rep.ColdStarts, func(c coldStartReport) bool { return c.Store == store })
	if i < 0 {
		rep.ColdStarts = append(rep.ColdStarts, coldStartReport{Store: store})
		i = len(rep.ColdStarts) - 1
	}
	v := float64(d) / float64(time.Millisecond)
	if withData {
		rep.ColdStarts[i].WithDataMs = append(rep.ColdStarts[i].WithDataMs, v)
	} else {
		rep.ColdStarts[i].EmptyMs = append(rep.ColdStarts[i].EmptyMs, v)
	}
}

// instanceReport is one server measured.
type instanceReport struct {
	Label      string `json:"label"`
	Store      string `json:"store"`
	GoMaxProcs int    `json:"gomaxprocs,omitempty"`
	Database   string `json:"database,omitempty"` // Postgres
	DataDir    string `json:"data_dir,omitempty"` // SQLite
	// Idle is its memory before the sweep, started on its data; AfterLoad
	// after the rounds.
	Idle      memStats `json:"memory_idle"`
	AfterLoad memStats `json:"memory_after_load"`
	// PGSessions is the number of Postgres sessions open to its database
	// after the rounds, and PGSessionsAnonKiB the sum of their RssAnon
	// (-1: not on Postgres, or unreadable).
	PGSessions        int      `json:"pg_sessions"`
	PGSessionsAnonKiB int64    `json:"pg_sessions_rss_anon_kib"`
	ServerLog         []string `json:"server_warnings,omitempty"`
}

// summaryRow sums up the rounds of one variant of one server at one
// concurrency.
type summaryRow struct {
	Concurrency int    `json:"concurrency"`
	Server      string `json:"server,omitempty"`
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

// ratioRow compares one server's proxy with the bare proxy at one
// concurrency, round by round (the two ran next to each other in each
// round).
type ratioRow struct {
	Concurrency int    `json:"concurrency"`
	Server      string `json:"server"`
	// Throughput is proxy req/s / bare req/s.
	Throughput spread `json:"throughput"`
	// P99 is proxy p99 / bare p99.
	P99 spread `json:"p99"`
}

// storeRatio compares a variant on SQLite with the same on Postgres (the
// servers of one GOMAXPROCS value), round by round.
type storeRatio struct {
	GoMaxProcs  int    `json:"gomaxprocs,omitempty"`
	Concurrency int    `json:"concurrency"`
	Variant     string `json:"variant"`
	// Throughput is SQLite's req/s / Postgres's.
	Throughput spread `json:"throughput"`
	// P99 is SQLite's p99 / Postgres's.
	P99 spread `json:"p99"`
}

// scalingRow is a variant of one store at one concurrency with each
// GOMAXPROCS value.
type scalingRow struct {
	Store       string `json:"store"`
	Variant     string `json:"variant"`
	Concurrency int    `json:"concurrency"`
	// ReqPerSec is by GOMAXPROCS value, in the order of -gomaxprocs.
	ReqPerSec []procsFigure `json:"req_per_s"`
	// Ratios are the req/s of each other value / that of the first,
	// round by round.
	Ratios []procsFigure `json:"ratios"`
}

type procsFigure struct {
	GoMaxProcs int    `json:"gomaxprocs"`
	Value      spread `json:"value"`
}

// goal is one of the targets of an issue, checked on this run's figures.
type goal struct {
	Issue  int    `json:"issue"`
	Item   int    `json:"item"`
	Server string `json:"server,omitempty"`
	Text   string `json:"text"`
	Figure string `json:"figure"`
	Met    bool   `json:"met"`
}

// goalConcurrency is the concurrency issues 13 and 26 state their goals
// at.
const goalConcurrency = 64

// servers are the labels of the servers of the runs, in order of
// appearance.
func (rep *report) servers() []string {
	var out []string
	for _, r := range rep.Runs {
		if r.Server != "" && !slices.Contains(out, r.Server) {
			out = append(out, r.Server)
		}
	}
	return out
}

func (rep *report) summarize() {
	rep.Summary, rep.Ratios, rep.Stores, rep.Scaling, rep.Goals = nil, nil, nil, nil, nil
	servers := rep.servers()
	rows := append(slices.Clone(servers), "")
	var goals13 []goal
	for _, c := range rep.Config.Concurrencies {
		for _, srv := range rows {
			for _, v := range rep.Config.Variants {
				runs := rep.runs(c, srv, v)
				if len(runs) == 0 {
					continue
				}
				row := summaryRow{Concurrency: c, Server: srv, Variant: v, Rounds: len(runs), CPUPerReqUs: map[string]spread{}}
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
				for _, k := range []string{"server", "pg", "others", "upstream", "bare", "client"} {
					if _, ok := runs[0].CPUPerReqUs[k]; ok {
						row.CPUPerReqUs[k] = pick(func(r runResult) float64 { return r.CPUPerReqUs[k] })
					}
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
		}
		for _, srv := range servers {
			proxy, bare := rep.runs(c, srv, "proxy"), rep.runs(c, "", "bare")
			tput, p99 := roundRatios(proxy, bare)
			if tput == nil {
				continue
			}
			row := ratioRow{Concurrency: c, Server: srv, Throughput: spreadOf(tput), P99: spreadOf(p99)}
			rep.Ratios = append(rep.Ratios, row)
			if c != goalConcurrency {
				continue
			}
			goals13 = append(goals13,
				goal{Issue: 13, Item: 2, Server: srv, Text: "proxy p99 within 3x the bare proxy's p99 in the same round, at c=64",
					Figure: fmt.Sprintf("worst round %.2fx", slices.Max(p99)), Met: slices.Max(p99) <= 3},
				goal{Issue: 13, Item: 3, Server: srv, Text: "proxy throughput at least 0.85 of the bare proxy's at c=64 (median of the rounds)",
					Figure: fmt.Sprintf("median %.2f", row.Throughput.Median), Met: row.Throughput.Median >= 0.85})
		}
	}
	var sessions []string
	met, known := true, false
	for _, srv := range servers {
		for _, v := range []string{"get", "proxy"} {
			for _, r := range rep.runs(goalConcurrency, srv, v) {
				if r.PGNewSessions < 0 {
					continue
				}
				known = true
				sessions = append(sessions, fmt.Sprintf("%s %d", r.name(), r.PGNewSessions))
				met = met && r.PGNewSessions == 0
			}
		}
	}
	if known {
		rep.Goals = append(rep.Goals, goal{Issue: 13, Item: 1, Text: "no run at c=64 opens new Postgres sessions after the warm-up",
			Figure: "new sessions per run: " + strings.Join(sessions, ", "), Met: met})
	}
	rep.Goals = append(rep.Goals, goals13...)
	rep.compareStores()
	rep.compareProcs()
}

// compareStores sets the SQLite/Postgres ratios of the servers of each
// GOMAXPROCS value and the goals of issue 26 §4.
func (rep *report) compareStores() {
	pairs := map[int][2]string{} // GOMAXPROCS: SQLite's and Postgres's labels
	var procs []int
	for _, r := range rep.Runs {
		if r.Server == "" {
			continue
		}
		p := pairs[r.GoMaxProcs]
		if !slices.Contains(procs, r.GoMaxProcs) {
			procs = append(procs, r.GoMaxProcs)
		}
		switch r.Store {
		case storeSQLite:
			p[0] = r.Server
		case storePostgres:
			p[1] = r.Server
		}
		pairs[r.GoMaxProcs] = p
	}
	for _, gmp := range procs {
		p := pairs[gmp]
		if p[0] == "" || p[1] == "" {
			continue
		}
		for _, c := range rep.Config.Concurrencies {
			for _, v := range []string{"get", "proxy"} {
				tput, p99 := roundRatios(rep.runs(c, p[0], v), rep.runs(c, p[1], v))
				if tput == nil {
					continue
				}
				sr := storeRatio{GoMaxProcs: gmp, Concurrency: c, Variant: v, Throughput: spreadOf(tput), P99: spreadOf(p99)}
				rep.Stores = append(rep.Stores, sr)
				if c == goalConcurrency {
					rep.Goals = append(rep.Goals, goal{Issue: 26, Item: 4, Server: p[0],
						Text:   fmt.Sprintf("%s on SQLite within 10 %% of Postgres at c=64 (req/s SQLite/Postgres, median of the rounds, at least 0.90)", v),
						Figure: fmt.Sprintf("median %.2f, rounds %.2f–%.2f", sr.Throughput.Median, sr.Throughput.Min, sr.Throughput.Max),
						Met:    sr.Throughput.Median >= 0.9})
				}
			}
		}
	}
	var lite, pg *seedReport
	for i, s := range rep.Seeds {
		switch s.Store {
		case storeSQLite:
			lite = &rep.Seeds[i]
		case storePostgres:
			pg = &rep.Seeds[i]
		}
	}
	if lite != nil && pg != nil && pg.PerSecond > 0 {
		r := lite.PerSecond / pg.PerSecond
		rep.Goals = append(rep.Goals, goal{Issue: 26, Item: 4,
			Text:   fmt.Sprintf("bulk import of %d connections on SQLite at least half as fast as on Postgres", lite.Connections),
			Figure: fmt.Sprintf("%.0f/s against %.0f/s, ratio %.2f", lite.PerSecond, pg.PerSecond, r), Met: r >= 0.5})
	}
}

// compareProcs sets the GOMAXPROCS scaling of each store.
func (rep *report) compareProcs() {
	procs := rep.Config.GoMaxProcs
	if len(procs) < 2 {
		return
	}
	for _, store := range rep.Config.Stores {
		for _, v := range []string{"get", "proxy"} {
			for _, c := range rep.Config.Concurrencies {
				row := scalingRow{Store: store, Variant: v, Concurrency: c}
				first := rep.runs(c, store+"-p"+strconv.Itoa(procs[0]), v)
				if len(first) == 0 {
					continue
				}
				for k, p := range procs {
					runs := rep.runs(c, store+"-p"+strconv.Itoa(p), v)
					vs := make([]float64, len(runs))
					for i, r := range runs {
						vs[i] = r.ReqPerSec
					}
					row.ReqPerSec = append(row.ReqPerSec, procsFigure{GoMaxProcs: p, Value: spreadOf(vs)})
					if k > 0 {
						tput, _ := roundRatios(runs, first)
						row.Ratios = append(row.Ratios, procsFigure{GoMaxProcs: p, Value: spreadOf(tput)})
					}
				}
				rep.Scaling = append(rep.Scaling, row)
			}
		}
	}
}

// roundRatios returns a's req/s and p99 divided by b's, round by round
// (nil unless both have the same rounds).
func roundRatios(a, b []runResult) (tput, p99 []float64) {
	if len(a) == 0 || len(a) != len(b) {
		return nil, nil
	}
	for i := range a {
		if a[i].Round == b[i].Round && b[i].ReqPerSec > 0 && b[i].P99Ms > 0 {
			tput = append(tput, a[i].ReqPerSec/b[i].ReqPerSec)
			p99 = append(p99, a[i].P99Ms/b[i].P99Ms)
		}
	}
	return tput, p99
}

// runs are the measured runs of variant v of server (empty for bare and
// direct) at concurrency c, by round.
func (rep *report) runs(c int, server, v string) []runResult {
	var out []runResult
	for _, r := range rep.Runs {
		if r.Concurrency == c && r.Server == server && r.Variant == v {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b runResult) int { return a.Round - b.Round })
	return out
}

func (rep *report) print(w io.Writer) {
	fmt.Fprintf(w, "\nsummary: median of %d rounds [min–max]; CPU in µs per request (pg: the Postgres sessions of the bench's databases, "+
		"beside a server on SQLite, whose database is in its process); pg+ is the new Postgres sessions of all rounds\n", rep.Config.Rounds)
	const f = "%4s  %-11s %-7s %-22s %-22s %-22s %-16s %-16s %-16s %-16s %s\n"
	fmt.Fprintf(w, f, "c", "server", "variant", "req/s", "p50 ms", "p99 ms", "server CPU", "pg CPU", "upstream CPU", "bare CPU", "pg+")
	cpu := func(s summaryRow, k string) string {
		v, ok := s.CPUPerReqUs[k]
		if !ok {
			return "n/a"
		}
		return spreadString(v, "%.0f")
	}
	for _, s := range rep.Summary {
		sessions := "n/a"
		if s.PGNewSessions >= 0 {
			sessions = fmt.Sprint(s.PGNewSessions)
		}
		server := s.Server
		if server == "" {
			server = "-"
		}
		fmt.Fprintf(w, f, fmt.Sprint(s.Concurrency), server, s.Variant,
			spreadString(s.ReqPerSec, "%.0f"), spreadMs(s.P50Ms), spreadMs(s.P99Ms),
			cpu(s, "server"), cpu(s, "pg"), cpu(s, "upstream"), cpu(s, "bare"), sessions)
	}
	for _, r := range rep.Ratios {
		fmt.Fprintf(w, "%s c=%d: proxy/bare throughput %s, proxy p99 / bare p99 %s\n",
			r.Server, r.Concurrency, spreadString(r.Throughput, "%.2f"), spreadString(r.P99, "%.2f"))
	}
	if len(rep.Stores) > 0 {
		fmt.Fprintf(w, "\nSQLite / Postgres, round by round (median [min–max]):\n")
		for _, s := range rep.Stores {
			procs := ""
			if s.GoMaxProcs > 0 {
				procs = fmt.Sprintf("GOMAXPROCS=%d ", s.GoMaxProcs)
			}
			fmt.Fprintf(w, "  %sc=%d %-5s req/s %s, p99 %s\n", procs, s.Concurrency, s.Variant,
				spreadString(s.Throughput, "%.2f"), spreadString(s.P99, "%.2f"))
		}
	}
	if len(rep.Scaling) > 0 {
		fmt.Fprintf(w, "\nGOMAXPROCS of the server (req/s, median [min–max]; the ratios round by round):\n")
		for _, s := range rep.Scaling {
			var parts []string
			for _, p := range s.ReqPerSec {
				parts = append(parts, fmt.Sprintf("%d: %s", p.GoMaxProcs, spreadString(p.Value, "%.0f")))
			}
			for _, p := range s.Ratios {
				parts = append(parts, fmt.Sprintf("%d/%d %s", p.GoMaxProcs, s.ReqPerSec[0].GoMaxProcs, spreadString(p.Value, "%.2f")))
			}
			fmt.Fprintf(w, "  %-8s %-5s c=%-3d %s\n", s.Store, s.Variant, s.Concurrency, strings.Join(parts, "; "))
		}
	}
	if len(rep.Seeds) > 0 {
		fmt.Fprintf(w, "\nbulk import (seeding, connections.Service.ImportBatch, %d at a time):", rep.Config.SeedWorkers)
		for _, s := range rep.Seeds {
			fmt.Fprintf(w, " %s %d in %.1f s, %.0f/s;", s.Store, s.Connections, s.Seconds, s.PerSecond)
		}
		fmt.Fprintln(w)
	}
	if len(rep.ColdStarts) > 0 {
		fmt.Fprintf(w, "cold start (exec to the first 200 of GET /health; median [min–max] ms):")
		for _, c := range rep.ColdStarts {
			fmt.Fprintf(w, " %s empty %s, with %d connections %s;", c.Store,
				spreadMs(spreadOf(c.EmptyMs)), rep.Config.Connections, spreadMs(spreadOf(c.WithDataMs)))
		}
		fmt.Fprintln(w)
	}
	if len(rep.Instances) > 0 {
		fmt.Fprintf(w, "memory of the servers (VmRSS / VmHWM in MiB, idle on their data before the sweep, and after the rounds):\n")
		for _, ir := range rep.Instances {
			fmt.Fprintf(w, "  %-11s idle %s / %s, after the load %s / %s", ir.Label, mib(ir.Idle.RSSKiB), mib(ir.Idle.HWMKiB),
				mib(ir.AfterLoad.RSSKiB), mib(ir.AfterLoad.HWMKiB))
			if ir.PGSessions >= 0 {
				fmt.Fprintf(w, " (and %d Postgres sessions of its database, RssAnon %s MiB in all)", ir.PGSessions, mib(ir.PGSessionsAnonKiB))
			}
			fmt.Fprintln(w)
		}
	}
	for _, g := range rep.Goals {
		verdict := "met"
		if !g.Met {
			verdict = "NOT met"
		}
		server := ""
		if g.Server != "" {
			server = " (" + g.Server + ")"
		}
		fmt.Fprintf(w, "issue %d item %d%s, %s: %s (%s)\n", g.Issue, g.Item, server, g.Text, verdict, g.Figure)
	}
}

func spreadString(s spread, f string) string {
	return fmt.Sprintf(f+" ["+f+"–"+f+"]", s.Median, s.Min, s.Max)
}

func spreadMs(s spread) string {
	return msf(s.Median) + " [" + msf(s.Min) + "–" + msf(s.Max) + "]"
}
