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
	db := adminURL(t)
	jsonPath := filepath.Join(t.TempDir(), "out.json")
	cfg, err := parseFlags([]string{"-n", "30", "-duration", "300ms", "-slice", "100ms", "-warmup", "100ms", "-rounds", "2",
		"-c", "1,3", "-variants", "get,proxy,bare,direct", "-seed-workers", "3", "-json", jsonPath,
		"-server-bin", builtServer(t)}, env(db))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	rep, err := run(t.Context(), cfg, &out)
	t.Logf("output:\n%s", out.String())
	if err != nil {
		t.Fatal(err)
	}

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
		for k, v := range r.CPUPerReqUs {
			if v < 0 {
				t.Errorf("run %+v: negative %s CPU", r, k)
			}
			cpu[r.Variant+"/"+k] += v
		}
	}
	// The CPU lands on the processes that do the work (/proc counts in
	// 10 ms ticks, so summed over the runs).
	for _, k := range []string{"get/server", "proxy/server", "proxy/upstream", "bare/bare", "bare/upstream", "direct/upstream", "get/client"} {
		if cpu[k] <= 0 {
			t.Errorf("no %s CPU measured: %v", k, cpu)
		}
	}
	if cpu["direct/server"]+cpu["direct/bare"] >= cpu["direct/upstream"] {
		t.Errorf("the direct runs cost the proxies more than the upstream: %v", cpu)
	}
	if len(rep.Summary) != 8 || len(rep.Ratios) != 2 || len(rep.Goals) != 0 {
		t.Errorf("summary %d rows, ratios %d, goals %d; want 8, 2 and 0 (no c=64)", len(rep.Summary), len(rep.Ratios), len(rep.Goals))
	}
	for _, want := range []string{"seeded 30 connections", "summary: median of 2 rounds", "c=3: proxy/bare throughput"} {
		if !strings.Contains(out.String(), want) {
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
	if len(j.Runs) != len(rep.Runs) || j.Seed.Connections != 30 || j.Database != rep.Database || len(j.Summary) != 8 {
		t.Errorf("-json holds %d runs, seed %+v, database %q", len(j.Runs), j.Seed, j.Database)
	}
	checkCleanedUp(t, db, rep)
}

// TestBenchInterrupted cancels the bench in its first run, as Ctrl-C does:
// it stops its processes and drops its database.
func TestBenchInterrupted(t *testing.T) {
	db := adminURL(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	cfg, err := parseFlags([]string{"-n", "5", "-duration", "1h", "-warmup", "1h", "-c", "2", "-server-bin", builtServer(t)}, env(db))
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

// checkCleanedUp checks that the bench's database is gone and its
// processes have exited.
func checkCleanedUp(t *testing.T, db string, rep *report) {
	t.Helper()
	if rep.Database == "" || len(rep.pids) != 3 {
		t.Fatalf("the report names database %q and processes %v", rep.Database, rep.pids)
	}
	admin, err := sql.Open("postgres", db)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	var n int
	if err := admin.QueryRow(`SELECT count(*) FROM pg_database WHERE datname = $1`, rep.Database).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("database %s is still there", rep.Database)
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
