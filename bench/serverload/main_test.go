package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/embedauth/connect/internal/pgtest"
)

// TestMain lets the test binary play the helper roles, as the bench binary
// does: the bench starts os.Executable() with -role=....
func TestMain(m *testing.M) {
	if roleMain(os.Args[1:]) {
		return
	}
	os.Exit(m.Run())
}

// adminURL returns TEST_DATABASE_URL, or skips (fails with
// CONNECT_REQUIRE_POSTGRES=1) without it, as every Postgres test does.
func adminURL(t *testing.T) string {
	t.Helper()
	return pgtest.URL(t)
}

var (
	serverOnce sync.Once
	serverBin  string
	serverErr  error
)

// builtServer builds the reference server once for the tests of this
// package.
func builtServer(t *testing.T) string {
	t.Helper()
	serverOnce.Do(func() {
		repo, err := findRepo(".")
		if err != nil {
			serverErr = err
			return
		}
		dir, err := os.MkdirTemp("", "serverload-test-")
		if err != nil {
			serverErr = err
			return
		}
		serverBin, serverErr = buildServer(context.Background(), repo, dir)
	})
	if serverErr != nil {
		t.Fatal(serverErr)
	}
	return serverBin
}

// TestBench runs the whole bench, small and short, against the reference
// server on Postgres, and checks what it measured and that it leaves
// nothing behind.
func TestBench(t *testing.T) {
	t.Parallel() // each run has its own servers, databases and ports
	db := adminURL(t)
	jsonPath := filepath.Join(t.TempDir(), "out.json")
	rep, out := runBench(t, db, "-stores", "postgres", "-n", "30", "-duration", "300ms", "-slice", "100ms", "-warmup", "100ms", "-rounds", "2",
		"-c", "1,3", "-variants", "get,proxy,bare,direct", "-seed-workers", "3", "-json", jsonPath, "-cold-starts", "2")

	if len(rep.Sweep) != 4 || len(rep.Warmup) != 4 || len(rep.Runs) != 2*2*4 {
		t.Fatalf("%d sweeps, %d warm-up runs and %d runs, want 4, 4 and 16", len(rep.Sweep), len(rep.Warmup), len(rep.Runs))
	}
	for _, r := range rep.Sweep {
		// A sweep requests each connection once.
		if r.Requests != 30 || r.Round != -1 {
			t.Errorf("sweep %+v: want 30 requests, one per connection, as round -1", r)
		}
	}
	for _, r := range rep.Runs {
		// Each run is three slices of 100 ms, taken in turns.
		if r.Seconds < 0.3 {
			t.Errorf("run %+v lasted %.3fs, want its three slices of 100ms", r, r.Seconds)
		}
	}
	cpu := map[string]float64{}
	for _, r := range slices.Concat(rep.Sweep, rep.Warmup, rep.Runs) {
		if r.Requests == 0 || r.Errors != 0 || r.Bad != 0 {
			t.Errorf("run %+v: want requests and no errors", r)
		}
		if !(r.P50Ms > 0 && r.P50Ms <= r.P99Ms && r.P99Ms <= r.P999Ms && r.P999Ms <= r.MaxMs) || r.ReqPerSec <= 0 {
			t.Errorf("run %+v: want 0 < p50 <= p99 <= p99.9 <= max and a rate", r)
		}
		if r.PGNewSessions < 0 || r.PGBackends < 1 {
			t.Errorf("run %+v: want the Postgres session counts", r)
		}
		if (r.Server == "postgres") != (r.Variant == "get" || r.Variant == "proxy") || (r.Server != "") != (r.Store == "postgres") {
			t.Errorf("run %+v: want get and proxy on the server on Postgres", r)
		}
		for k, v := range r.CPUPerReqUs {
			if v < 0 {
				t.Errorf("run %+v: negative %s CPU", r, k)
			}
			cpu[r.Variant+"/"+k] += v
		}
	}
	// The CPU lands on the processes that do the work (/proc counts in
	// 10 ms ticks, so summed over the runs).
	// The CPU of Postgres's sessions is known when Postgres runs on this
	// machine.
	if _, ok := rep.Runs[0].CPUPerReqUs["pg"]; ok && cpu["get/pg"] <= 0 {
		t.Errorf("no get/pg CPU measured: %v", cpu)
	}
	for _, k := range []string{"get/server", "proxy/server", "proxy/upstream", "bare/bare", "bare/upstream", "direct/upstream", "get/client"} {
		if cpu[k] <= 0 {
			t.Errorf("no %s CPU measured: %v", k, cpu)
		}
	}
	if cpu["direct/others"]+cpu["direct/bare"] >= cpu["direct/upstream"] || cpu["direct/server"] != 0 {
		t.Errorf("the direct runs cost the proxies more than the upstream: %v", cpu)
	}
	if len(rep.Seeds) != 1 || rep.Seeds[0].Store != "postgres" || rep.Seeds[0].Connections != 30 || rep.Seeds[0].PerSecond <= 0 {
		t.Errorf("seeds %+v", rep.Seeds)
	}
	if len(rep.ColdStarts) != 1 || len(rep.ColdStarts[0].EmptyMs) != 2 || len(rep.ColdStarts[0].WithDataMs) != 2 || rep.ColdStarts[0].EmptyMs[0] <= 0 {
		t.Errorf("cold starts %+v, want 2 on an empty database and 2 with the connections", rep.ColdStarts)
	}
	// The seeded database and the two of the cold starts.
	if len(rep.Databases) != 3 || len(rep.DataDirs) != 0 {
		t.Errorf("databases %q, data directories %q", rep.Databases, rep.DataDirs)
	}
	checkMemory(t, rep, 1)
	if len(rep.Summary) != 8 || len(rep.Ratios) != 2 || len(rep.Goals) != 0 {
		t.Errorf("summary %d rows, ratios %d, goals %d; want 8, 2 and 0 (no c=64)", len(rep.Summary), len(rep.Ratios), len(rep.Goals))
	}
	for _, want := range []string{"seeded 30 connections", "summary: median of 2 rounds", "c=3: proxy/bare throughput"} {
		if !strings.Contains(out, want) {
			t.Errorf("the output lacks %q", want)
		}
	}
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var j report
	if err := json.Unmarshal(b, &j); err != nil {
		t.Fatalf("-json: %v", err)
	}
	if len(j.Runs) != len(rep.Runs) || len(j.Seeds) != 1 || !slices.Equal(j.Databases, rep.Databases) || len(j.Summary) != 8 ||
		len(j.Instances) != 1 || j.Instances[0].AfterLoad.RSSKiB <= 0 {
		t.Errorf("-json holds %d runs, seeds %+v, databases %q, servers %+v", len(j.Runs), j.Seeds, j.Databases, j.Instances)
	}
	checkCleanedUp(t, db, rep)
}

// TestBenchStores runs the bench on both stores with two GOMAXPROCS values:
// four servers (SQLite as the server runs by default, in a data directory
// of its own, and Postgres; each store's second server on a copy of the
// first one's data), interleaved in the same rounds.
func TestBenchStores(t *testing.T) {
	t.Parallel() // each run has its own servers, databases and ports
	db := adminURL(t)
	rep, out := runBench(t, db, "-n", "20", "-duration", "200ms", "-slice", "100ms", "-warmup", "0", "-rounds", "2",
		"-c", "1,2", "-gomaxprocs", "1,2", "-cold-starts", "1", "-data-dir", t.TempDir())
	// 4 servers x (get, proxy) + bare.
	if len(rep.Sweep) != 9 || len(rep.Warmup) != 0 || len(rep.Runs) != 9*2*2 {
		t.Fatalf("%d sweeps, %d warm-up runs and %d runs, want 9, 0 and 36", len(rep.Sweep), len(rep.Warmup), len(rep.Runs))
	}
	servers := map[string]int{}
	for _, r := range slices.Concat(rep.Sweep, rep.Runs) {
		if r.Requests == 0 || r.Errors != 0 || r.Bad != 0 {
			t.Errorf("run %+v: want requests and no errors", r)
		}
		servers[r.Server]++
		if r.Server != "" && r.Server != r.Store+"-p"+strconv.Itoa(r.GoMaxProcs) {
			t.Errorf("run %+v: server, store and GOMAXPROCS disagree", r)
		}
		if _, ok := r.CPUPerReqUs["pg"]; ok != pgCPU(rep) {
			t.Errorf("run %+v: the CPU of Postgres's sessions is measured in some runs only", r)
		}
	}
	for _, s := range []string{"sqlite-p1", "sqlite-p2", "postgres-p1", "postgres-p2"} {
		if servers[s] != 2+2*2*2 {
			t.Errorf("%d runs of %s, want 10: %v", servers[s], s, servers)
		}
	}
	if len(rep.Stores) != 2*2*2 || len(rep.Scaling) != 2*2*2 {
		t.Errorf("%d store ratios and %d GOMAXPROCS rows, want 8 and 8", len(rep.Stores), len(rep.Scaling))
	}
	if len(rep.Seeds) != 2 || rep.Seeds[0].Store != "sqlite" || rep.Seeds[1].Store != "postgres" {
		t.Errorf("seeds %+v", rep.Seeds)
	}
	if len(rep.ColdStarts) != 2 {
		t.Errorf("cold starts %+v", rep.ColdStarts)
	}
	for _, c := range rep.ColdStarts {
		if len(c.EmptyMs) != 1 || len(c.WithDataMs) != 1 {
			t.Errorf("cold starts %+v, want one of each", c)
		}
	}
	// Postgres: the seeded database, its copy and the cold start's; SQLite
	// the same in data directories.
	if len(rep.Databases) != 3 || len(rep.DataDirs) != 3 {
		t.Errorf("databases %q, data directories %q", rep.Databases, rep.DataDirs)
	}
	checkMemory(t, rep, 4)
	for _, want := range []string{"seeded 20 connections on sqlite", "seeded 20 connections on postgres", "SQLite / Postgres, round by round",
		"GOMAXPROCS=2 c=2 proxy", "sqlite   get   c=2   1: ", "cold start (exec to the first 200 of GET /health", "memory of the servers",
		"issue 26 item 4, bulk import of 20 connections on SQLite"} {
		if !strings.Contains(out, want) {
			t.Errorf("the output lacks %q", want)
		}
	}
	checkCleanedUp(t, db, rep)
}

// TestBenchSQLite runs the bench on SQLite alone, which needs no Postgres.
func TestBenchSQLite(t *testing.T) {
	t.Parallel() // each run has its own servers, databases and ports
	rep, _ := runBench(t, "", "-stores", "sqlite", "-n", "10", "-duration", "100ms", "-warmup", "0", "-rounds", "1",
		"-c", "2", "-cold-starts", "1", "-data-dir", t.TempDir())
	if len(rep.Runs) != 3 || len(rep.Seeds) != 1 || len(rep.Databases) != 0 || len(rep.DataDirs) != 2 {
		t.Fatalf("%d runs, seeds %+v, databases %q, data directories %q", len(rep.Runs), rep.Seeds, rep.Databases, rep.DataDirs)
	}
	for _, r := range rep.Runs {
		if _, ok := r.CPUPerReqUs["pg"]; ok || r.PGNewSessions != -1 || r.Requests == 0 {
			t.Errorf("run %+v: want requests and no Postgres figures", r)
		}
	}
	checkMemory(t, rep, 1)
	checkCleanedUp(t, "", rep)
}

// runBench runs the bench with args and the built server, db as
// TEST_DATABASE_URL, logs its output and returns its report and output.
func runBench(t *testing.T, db string, args ...string) (*report, string) {
	t.Helper()
	cfg, err := parseFlags(append(args, "-server-bin", builtServer(t)), env(db))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	rep, err := run(t.Context(), cfg, &out)
	t.Logf("output:\n%s", out.String())
	if err != nil {
		t.Fatal(err)
	}
	return rep, out.String()
}

// pgCPU reports whether the first run of rep has the CPU of Postgres's
// sessions (Postgres runs on this machine).
func pgCPU(rep *report) bool {
	_, ok := rep.Sweep[0].CPUPerReqUs["pg"]
	return ok
}

// checkMemory checks the memory figures of the report's n servers.
func checkMemory(t *testing.T, rep *report, n int) {
	t.Helper()
	if len(rep.Instances) != n {
		t.Fatalf("%d servers reported, want %d", len(rep.Instances), n)
	}
	for _, ir := range rep.Instances {
		if ir.Idle.RSSKiB <= 0 || ir.AfterLoad.RSSKiB <= 0 || ir.AfterLoad.HWMKiB < ir.AfterLoad.RSSKiB || ir.AfterLoad.HWMKiB < ir.Idle.HWMKiB {
			t.Errorf("server %s: memory idle %+v, after the load %+v", ir.Label, ir.Idle, ir.AfterLoad)
		}
		// RssAnon is -1 when Postgres runs elsewhere.
		if (ir.Store == "postgres") != (ir.PGSessions >= 1 && ir.PGSessionsAnonKiB != 0) {
			t.Errorf("server %s on %s: %d Postgres sessions, %d KiB", ir.Label, ir.Store, ir.PGSessions, ir.PGSessionsAnonKiB)
		}
	}
}

// TestBenchInterrupted cancels the bench in its first run, as Ctrl-C does:
// it stops its processes and drops its database.
func TestBenchInterrupted(t *testing.T) {
	t.Parallel() // each run has its own servers, databases and ports
	db := adminURL(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	cfg, err := parseFlags([]string{"-n", "5", "-duration", "1h", "-warmup", "1h", "-c", "2", "-cold-starts", "0",
		"-data-dir", t.TempDir(), "-server-bin", builtServer(t)}, env(db))
	if err != nil {
		t.Fatal(err)
	}
	cfg.afterRun = func(runResult) { t.Error("a run finished: the bench was not interrupted") }
	started := make(chan struct{})
	go func() {
		// The warm-up has started once the seeding is printed; the bench
		// is then driving requests until the context ends.
		<-started
		cancel()
	}()
	out := &signalWriter{want: "seeded 5 connections", signal: started}
	rep, err := run(ctx, cfg, out)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("run = %v, want context.Canceled", err)
	}
	if rep == nil {
		t.Fatal("no report after the seeding")
	}
	checkCleanedUp(t, db, rep)
}

// signalWriter closes signal once want has been written.
type signalWriter struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	want   string
	signal chan struct{}
	done   bool
}

func (w *signalWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(b)
	if !w.done && strings.Contains(w.buf.String(), w.want) {
		w.done = true
		close(w.signal)
	}
	return len(b), nil
}

// checkCleanedUp checks that the bench's databases and data directories
// are gone and its processes have exited.
func checkCleanedUp(t *testing.T, db string, rep *report) {
	t.Helper()
	if len(rep.Databases)+len(rep.DataDirs) == 0 || len(rep.pids) < 3 {
		t.Fatalf("the report names databases %q, data directories %q and processes %v", rep.Databases, rep.DataDirs, rep.pids)
	}
	if len(rep.Databases) > 0 {
		admin, err := sql.Open("postgres", db)
		if err != nil {
			t.Fatal(err)
		}
		defer admin.Close()
		for _, name := range rep.Databases {
			var n int
			if err := admin.QueryRow(`SELECT count(*) FROM pg_database WHERE datname = $1`, name).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n != 0 {
				t.Errorf("database %s is still there", name)
			}
		}
	}
	for _, dir := range rep.DataDirs {
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("data directory %s is still there: %v", dir, err)
		}
	}
	for name, pid := range rep.pids {
		// The processes were children of this one and have been waited
		// for: their pids no longer exist (unless reused, which takes a
		// wrap-around of the pid space).
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("the %s process (pid %d) is still there: %v", name, pid, err)
		}
	}
}
