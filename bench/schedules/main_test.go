package main

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/embedauth/connect/internal/pgtest"
)

// TestBench runs the whole bench small and short (40 schedules spread over
// 1 s, two instances, a window of 2 s) and checks what it measured and
// that it drops its schema.
func TestBench(t *testing.T) {
	db := pgtest.URL(t)
	jsonPath := filepath.Join(t.TempDir(), "out.json")
	cfg, err := parseFlags([]string{"-n", "40", "-instances", "2", "-spread", "1s", "-duration", "2s", "-lead", "1s",
		"-idle", "500ms", "-json", jsonPath}, func(k string) string {
		if k == "TEST_DATABASE_URL" {
			return db
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	rep, err := run(t.Context(), cfg, &out)
	t.Logf("output:\n%s", out.String())
	if err != nil {
		t.Fatal(err)
	}
	// Each schedule is due once in the window (the next slot is a minute
	// later).
	if rep.Expected != 40 || rep.Ran != 40 || rep.Missing != 0 || rep.Twice != 0 || rep.Early != 0 {
		t.Errorf("expected %d, ran %d, missing %d, twice %d, early %d; want 40 ran", rep.Expected, rep.Ran, rep.Missing, rep.Twice, rep.Early)
	}
	if rep.Within5s != 40 || rep.LagMax <= 0 || rep.LagMax > 5*time.Second || rep.LagP50 > rep.LagP99 || rep.LagP99 > rep.LagMax {
		t.Errorf("lags p50 %s, p99 %s, max %s, %d within 5 s", rep.LagP50, rep.LagP99, rep.LagMax, rep.Within5s)
	}
	if len(rep.ByInstance) != 2 || rep.ByInstance[0]+rep.ByInstance[1] != 40 {
		t.Errorf("runs by instance %v", rep.ByInstance)
	}
	for name, c := range map[string]cpuFigures{"running": rep.Running, "idle": rep.Idle, "idle after VACUUM": rep.IdleVacuumed} {
		if c.Seconds <= 0 || c.Go <= 0 {
			t.Errorf("%s: no Go CPU measured: %+v", name, c)
		}
	}
	if !strings.Contains(out.String(), "40 ran") {
		t.Errorf("the output lacks the runs")
	}
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var j report
	if err := json.Unmarshal(b, &j); err != nil || j.Ran != 40 || j.Schema != rep.Schema {
		t.Errorf("-json: %v, %d runs, schema %q", err, j.Ran, j.Schema)
	}
	admin, err := sql.Open("postgres", db)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	var n int
	if err := admin.QueryRow(`SELECT count(*) FROM pg_namespace WHERE nspname = $1`, rep.Schema).Scan(&n); err != nil || n != 0 {
		t.Errorf("schema %s left behind (%d, %v)", rep.Schema, n, err)
	}
}

// TestFlags checks the defaults and what parseFlags refuses.
func TestFlags(t *testing.T) {
	cfg, err := parseFlags(nil, func(string) string { return "postgres://x@localhost/db" })
	if err != nil || cfg.Schedules != 10000 || cfg.Instances != 2 || cfg.interval != time.Minute || cfg.Spread != time.Minute ||
		cfg.Duration != 2*time.Minute {
		t.Errorf("defaults: %+v, %v", cfg, err)
	}
	for _, args := range [][]string{{"-frequency", "10s"}, {"-spread", "2m"}, {"-n", "0"}, {"-instances", "0"}, {"extra"}} {
		if _, err := parseFlags(args, func(string) string { return "postgres://x@localhost/db" }); err == nil {
			t.Errorf("parseFlags(%q) = nil error", args)
		}
	}
	if _, err := parseFlags(nil, func(string) string { return "" }); err == nil {
		t.Error("parseFlags without a database = nil error")
	}
}
