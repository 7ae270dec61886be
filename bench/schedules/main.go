package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/url"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lib/pq"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/functions"
	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/store/postgres"
)

func main() {
	cfg, err := parseFlags(os.Args[1:], os.Getenv)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "schedules:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if _, err := run(ctx, cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "schedules:", err)
		stop()
		os.Exit(1)
	}
}

// config is the bench's settings (see parseFlags).
type config struct {
	AdminURL  string        `json:"-"`
	Schedules int           `json:"schedules"`
	Instances int           `json:"instances"`
	Frequency string        `json:"frequency"`
	Spread    time.Duration `json:"spread_ns"`
	Duration  time.Duration `json:"duration_ns"`
	Idle      time.Duration `json:"idle_ns"`
	Lead      time.Duration `json:"lead_ns"`
	Tick      time.Duration `json:"tick_ns"`
	JSONPath  string        `json:"-"`

	interval time.Duration // the frequency's
}

// parseFlags parses the command line; getenv supplies TEST_DATABASE_URL
// when -db is not given.
func parseFlags(args []string, getenv func(string) string) (config, error) {
	fs := flag.NewFlagSet("schedules", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: go run ./bench/schedules [flags]\n\n"+
			"Runs -n schedules of a no-op sync on Postgres with -instances Services on one database and measures the lag\n"+
			"of every run from its due time and the CPU of running and of idle schedules. See go doc ./bench/schedules.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	var cfg config
	fs.StringVar(&cfg.AdminURL, "db", "", "`URL` of the Postgres database to create the bench's schema in (default $TEST_DATABASE_URL)")
	fs.IntVar(&cfg.Schedules, "n", 10000, "`schedules` (one connection each)")
	fs.IntVar(&cfg.Instances, "instances", 2, "Services on the database, each with its own pool and River client")
	fs.StringVar(&cfg.Frequency, "frequency", "1m", "the sync's frequency")
	fs.DurationVar(&cfg.Spread, "spread", 0, "the schedules' first due times are spread evenly over this long (default: the frequency's interval)")
	fs.DurationVar(&cfg.Duration, "duration", 2*time.Minute, "the window of due times whose runs are measured")
	fs.DurationVar(&cfg.Idle, "idle", 30*time.Second, "how long the idle cost is measured, no schedule due")
	fs.DurationVar(&cfg.Lead, "lead", 5*time.Second, "the first schedule is due this long after the schedules are spread (the instances start meanwhile)")
	fs.DurationVar(&cfg.Tick, "tick", 0, "Config.Functions.TickInterval of the instances (default: the library's, 1s)")
	fs.StringVar(&cfg.JSONPath, "json", "", "also write the report to this `file` as JSON")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if cfg.AdminURL == "" {
		cfg.AdminURL = getenv("TEST_DATABASE_URL")
	}
	if cfg.AdminURL == "" {
		return cfg, errors.New("-db or TEST_DATABASE_URL must name a Postgres database")
	}
	fr, err := functions.ParseFrequency(cfg.Frequency)
	if err != nil {
		return cfg, fmt.Errorf("-frequency: %w", err)
	}
	cfg.interval = fr.Interval
	if cfg.Spread == 0 {
		cfg.Spread = cfg.interval
	}
	switch {
	case cfg.Schedules < 1:
		return cfg, errors.New("-n must be at least 1")
	case cfg.Instances < 1:
		return cfg, errors.New("-instances must be at least 1")
	case cfg.Spread < 0 || cfg.Spread > cfg.interval:
		return cfg, fmt.Errorf("-spread must be from 0 to the frequency's interval (%s)", cfg.interval)
	case cfg.Duration <= 0 || cfg.Idle <= 0 || cfg.Lead <= 0 || cfg.Tick < 0:
		return cfg, errors.New("-duration, -idle and -lead must be positive, -tick not negative")
	}
	return cfg, nil
}

// report is what the bench measured.
type report struct {
	Config     config        `json:"config"`
	Schema     string        `json:"schema"`
	Seeding    time.Duration `json:"seeding_ns"`
	Expected   int           `json:"expected_runs"`
	Ran        int           `json:"ran"`
	Missing    int           `json:"missing"`
	Twice      int           `json:"run_twice"`
	Early      int           `json:"started_early"`
	ByInstance []int         `json:"by_instance"`
	LagP50     time.Duration `json:"lag_p50_ns"`
	LagP99     time.Duration `json:"lag_p99_ns"`
	LagMax     time.Duration `json:"lag_max_ns"`
	Within5s   int           `json:"within_5s"`
	Running    cpuFigures    `json:"running"`
	Idle       cpuFigures    `json:"idle"`
	// IdleVacuumed is Idle again after a VACUUM of the tables the ticks
	// read.
	IdleVacuumed cpuFigures `json:"idle_vacuumed"`
	Sessions     int        `json:"postgres_sessions"`
}

// cpuFigures is the CPU of the Go process and of the instances' Postgres
// sessions over a phase.
type cpuFigures struct {
	Seconds    float64 `json:"seconds"`
	Go         float64 `json:"go_cpu_seconds"`
	Postgres   float64 `json:"postgres_cpu_seconds"`
	PostgresOK bool    `json:"postgres_measured"`
}

// perSecond returns the CPU per second of wall time, in milliseconds.
func (c cpuFigures) perSecond() (goMS, pgMS float64) {
	return 1000 * c.Go / c.Seconds, 1000 * c.Postgres / c.Seconds
}

// runStart is a run's Run starting: schedule i (its connection's number)
// on an instance.
type runStart struct {
	schedule, instance int
	at                 time.Time
}

// recorder collects the runStarts of every instance.
type recorder struct {
	mu     sync.Mutex
	starts []runStart
}

func (r *recorder) add(s runStart) {
	r.mu.Lock()
	r.starts = append(r.starts, s)
	r.mu.Unlock()
}

func (r *recorder) snapshot() []runStart {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.starts)
}

// connectionID is the id of schedule i's connection.
func connectionID(i int) string { return fmt.Sprintf("sched-%06d", i) }

// instance is one Service on the database.
type instance struct {
	db  *sql.DB
	st  *postgres.Store
	svc *connect.Service
}

// run runs the bench and writes its progress and results to out.
func run(ctx context.Context, cfg config, out io.Writer) (rep *report, err error) {
	admin, err := sql.Open("postgres", cfg.AdminURL)
	if err != nil {
		return nil, err
	}
	defer admin.Close()
	admin.SetMaxOpenConns(2)
	if err := admin.PingContext(ctx); err != nil {
		return nil, fmt.Errorf("Postgres does not answer at -db: %w", err)
	}
	suffix := randomHex(4)
	rep = &report{Config: cfg, Schema: "schedules_bench_" + suffix}
	app := "connect_schedules_bench_" + suffix
	opts := &postgres.Options{Schema: rep.Schema}
	defer func() {
		// Dropped whatever happened, also after Ctrl-C.
		dctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, derr := admin.ExecContext(dctx, "DROP SCHEMA IF EXISTS "+pq.QuoteIdentifier(rep.Schema)+" CASCADE"); derr != nil {
			err = errors.Join(err, fmt.Errorf("dropping schema %s: %w", rep.Schema, derr))
		}
	}()

	rec := &recorder{}
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	dsn, err := withApplicationName(cfg.AdminURL, app)
	if err != nil {
		return rep, err
	}
	var insts []*instance
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, in := range insts {
			err = errors.Join(err, in.svc.Stop(sctx))
			_ = in.st.Close()
			in.db.Close()
		}
	}()
	for k := range cfg.Instances {
		in, err := newInstance(ctx, cfg, dsn, opts, key, k, rec, k == 0)
		if err != nil {
			return rep, fmt.Errorf("instance %d: %w", k, err)
		}
		insts = append(insts, in)
	}
	fmt.Fprintf(out, "schedules: %d schedules of a no-op sync every %s on Postgres, %d instance(s), schema %s\n",
		cfg.Schedules, cfg.Frequency, cfg.Instances, rep.Schema)

	t0 := time.Now()
	if err := seed(ctx, insts[0].svc, cfg.Schedules); err != nil {
		return rep, err
	}
	rep.Seeding = time.Since(t0)
	fmt.Fprintf(out, "  imported %d connections (each creating its schedule) in %.1fs\n", cfg.Schedules, rep.Seeding.Seconds())

	// Schedule i is due at base + i*step, then every interval.
	step := cfg.Spread / time.Duration(cfg.Schedules)
	base := time.Now().Add(cfg.Lead).UTC().Truncate(time.Millisecond)
	syncs := pq.QuoteIdentifier(rep.Schema) + ".syncs"
	r, err := admin.ExecContext(ctx, `UPDATE `+syncs+` SET next_run_at = $1::timestamptz + substring(connection_ref from 7)::int * $2::bigint * interval '1 microsecond',
		version = version + 1`, base, step.Microseconds())
	if err != nil {
		return rep, fmt.Errorf("spreading the schedules: %w", err)
	}
	if n, _ := r.RowsAffected(); n != int64(cfg.Schedules) {
		return rep, fmt.Errorf("%d schedules, want %d", n, cfg.Schedules)
	}
	step = step.Truncate(time.Microsecond)
	for k, in := range insts {
		if err := in.svc.Start(ctx); err != nil {
			return rep, fmt.Errorf("starting instance %d: %w", k, err)
		}
	}
	fmt.Fprintf(out, "  schedule i due at start + i×%s, every %s; measuring the runs due in the %s from start\n", step, cfg.interval, cfg.Duration)

	// The runs due in [base, end).
	end := base.Add(cfg.Duration)
	for i := range cfg.Schedules {
		for due := base.Add(time.Duration(i) * step); due.Before(end); due = due.Add(cfg.interval) {
			rep.Expected++
		}
	}
	cpu := newCPUMeter(admin, app)
	if err := sleepUntil(ctx, base); err != nil {
		return rep, err
	}
	before := cpu.read()
	if err := sleepUntil(ctx, end); err != nil {
		return rep, err
	}
	rep.Running = cpu.since(before)
	// Wait for the runs due before end that have not started yet.
	lags := measureLags(rec.snapshot(), cfg, base, step, rep)
	for wait := time.Now().Add(30 * time.Second); rep.Ran < rep.Expected && time.Now().Before(wait); {
		if err := sleepUntil(ctx, time.Now().Add(200*time.Millisecond)); err != nil {
			return rep, err
		}
		lags = measureLags(rec.snapshot(), cfg, base, step, rep)
	}
	if len(lags) > 0 {
		rep.LagP50, rep.LagP99, rep.LagMax = percentile(lags, 50), percentile(lags, 99), lags[len(lags)-1]
	}
	byInst := make([]string, len(rep.ByInstance))
	for k, n := range rep.ByInstance {
		byInst[k] = fmt.Sprintf("instance %d: %d", k, n)
	}
	fmt.Fprintf(out, "  runs due in the window: %d expected, %d ran (%s), %d missing, %d run twice, %d started before their due time\n",
		rep.Expected, rep.Ran, strings.Join(byInst, ", "), rep.Missing, rep.Twice, rep.Early)
	fmt.Fprintf(out, "  lag from due time to Run: p50 %s, p99 %s, max %s; %d of %d runs within 5 s (goal: all)\n",
		ms(rep.LagP50), ms(rep.LagP99), ms(rep.LagMax), rep.Within5s, rep.Expected)
	goMS, pgMS := rep.Running.perSecond()
	runs := float64(rep.Expected) / cfg.Duration.Seconds()
	fmt.Fprintf(out, "  CPU while running (%.0f runs/s): Go %.0f ms/s (%.0f µs/run)%s\n", runs, goMS, 1000*goMS/runs,
		pgFigure(rep.Running, fmt.Sprintf(", Postgres sessions %.0f ms/s (%.0f µs/run)", pgMS, 1000*pgMS/runs)))

	// Idle: no schedule due.
	if _, err := admin.ExecContext(ctx, `UPDATE `+syncs+` SET next_run_at = now() + interval '1 day', version = version + 1`); err != nil {
		return rep, fmt.Errorf("moving the schedules a day ahead: %w", err)
	}
	if err := waitIdle(ctx, admin, pq.QuoteIdentifier(rep.Schema)+".sync_runs"); err != nil {
		return rep, err
	}
	before = cpu.read()
	if err := sleepUntil(ctx, time.Now().Add(cfg.Idle)); err != nil {
		return rep, err
	}
	rep.Idle = cpu.since(before)
	rep.Sessions = cpu.sessions()
	goMS, pgMS = rep.Idle.perSecond()
	fmt.Fprintf(out, "  idle (%d schedules, none due, %s, %d instance(s) ticking): Go %.1f ms/s%s\n", cfg.Schedules, cfg.Idle,
		cfg.Instances, goMS, pgFigure(rep.Idle, fmt.Sprintf(", Postgres sessions %.1f ms/s (%d sessions)", pgMS, rep.Sessions)))
	// The same after a VACUUM of the tables the ticks read, as autovacuum
	// does in time: the runs and the move ahead left dead row versions
	// that the claims' index scans step over.
	for _, t := range []string{"syncs", "sync_runs", "action_tasks"} {
		if _, err := admin.ExecContext(ctx, "VACUUM ANALYZE "+pq.QuoteIdentifier(rep.Schema)+"."+t); err != nil {
			return rep, fmt.Errorf("vacuum %s: %w", t, err)
		}
	}
	before = cpu.read()
	if err := sleepUntil(ctx, time.Now().Add(cfg.Idle)); err != nil {
		return rep, err
	}
	rep.IdleVacuumed = cpu.since(before)
	goMS, pgMS = rep.IdleVacuumed.perSecond()
	fmt.Fprintf(out, "  idle after VACUUM ANALYZE of syncs, sync_runs and action_tasks: Go %.1f ms/s%s\n", goMS,
		pgFigure(rep.IdleVacuumed, fmt.Sprintf(", Postgres sessions %.1f ms/s", pgMS)))
	if cfg.JSONPath != "" {
		b, _ := json.MarshalIndent(rep, "", "  ")
		if err := os.WriteFile(cfg.JSONPath, append(b, '\n'), 0o644); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// pgFigure is s when the Postgres CPU was measured.
func pgFigure(c cpuFigures, s string) string {
	if !c.PostgresOK {
		return " (Postgres CPU not measured: Postgres runs on another host)"
	}
	return s
}

// newInstance creates a Service on its own pool, with the no-op sync
// registered; with migrate, it migrates the schema first.
func newInstance(ctx context.Context, cfg config, dsn string, opts *postgres.Options, key []byte, k int, rec *recorder, migrate bool) (*instance, error) {
	db, err := postgres.Open(ctx, dsn, opts)
	if err != nil {
		return nil, err
	}
	if migrate {
		if err := postgres.Migrate(ctx, db, opts); err != nil {
			db.Close()
			return nil, err
		}
	}
	st, err := postgres.New(db, opts)
	if err != nil {
		db.Close()
		return nil, err
	}
	sched, err := postgres.NewScheduler(db, opts, postgres.SchedulerConfig{})
	if err != nil {
		db.Close()
		return nil, err
	}
	svc, err := connect.New(connect.Config{Store: st, Scheduler: sched, RateLimitRequests: -1,
		EncryptionKeys: []connect.EncryptionKey{{ID: "bench", Key: key}},
		Functions:      connect.FunctionsConfig{TickInterval: cfg.Tick}})
	if err != nil {
		db.Close()
		return nil, err
	}
	err = svc.Functions().Register(functions.Sync{Integration: "gh", Name: "noop", Frequency: cfg.Frequency, AutoStart: true,
		Models: []functions.Model{functions.ModelOf[noopRecord]("Noop")},
		Run: func(ctx context.Context, s *functions.SyncContext) error {
			at := time.Now()
			i, err := strconv.Atoi(strings.TrimPrefix(s.ConnectionID, "sched-"))
			if err != nil {
				return err
			}
			rec.add(runStart{schedule: i, instance: k, at: at})
			return nil
		}})
	if err != nil {
		db.Close()
		return nil, err
	}
	return &instance{db: db, st: st, svc: svc}, nil
}

// noopRecord is the model of the no-op sync, which saves none.
type noopRecord struct {
	ID string `json:"id"`
}

// seed creates an environment and an integration, and imports n OAuth 2
// connections in batches of connections.MaxImportBatch, two at a time.
func seed(ctx context.Context, svc *connect.Service, n int) error {
	env, err := svc.Environments().Create(ctx, environments.CreateInput{Name: "bench"})
	if err != nil {
		return err
	}
	if _, err := svc.Integrations().Create(ctx, env.ID, integrations.CreateInput{Provider: "github", UniqueKey: "gh",
		Credentials: &integrations.Credentials{Type: "OAUTH2", ClientID: "cid", ClientSecret: "csecret", Scopes: "repo"}}); err != nil {
		return err
	}
	exp := &connections.DateTime{Time: time.Now().Add(365 * 24 * time.Hour).UTC().Truncate(time.Second)}
	batches := make(chan int)
	errs := make(chan error, 2)
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for from := range batches {
				var in []connections.ImportInput
				for i := from; i < min(from+connections.MaxImportBatch, n); i++ {
					in = append(in, connections.ImportInput{ProviderConfigKey: "gh", ConnectionID: connectionID(i),
						AccessToken: "gho_" + strconv.Itoa(i), ExpiresAt: exp})
				}
				if _, err := svc.Connections().ImportBatch(ctx, env.ID, in); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	var err2 error
loop:
	for from := 0; from < n; from += connections.MaxImportBatch {
		select {
		case batches <- from:
		case err2 = <-errs:
			break loop
		}
	}
	close(batches)
	wg.Wait()
	close(errs)
	for err := range errs {
		err2 = errors.Join(err2, err)
	}
	return err2
}

// measureLags matches the run starts with the due times of the window
// [base, base+cfg.Duration), fills in rep's counts and returns the lags of
// the window's runs, sorted. A run belongs to the last due time of its
// schedule at or before its start (a lag under the interval).
func measureLags(starts []runStart, cfg config, base time.Time, step time.Duration, rep *report) []time.Duration {
	end := base.Add(cfg.Duration)
	type slot struct{ schedule, k int }
	seen := map[slot]int{}
	rep.ByInstance = make([]int, cfg.Instances)
	rep.Early, rep.Twice, rep.Within5s = 0, 0, 0
	var lags []time.Duration
	for _, s := range starts {
		first := base.Add(time.Duration(s.schedule) * step)
		k := 0
		if d := s.at.Sub(first); d > 0 {
			k = int(d / cfg.interval)
		}
		due := first.Add(time.Duration(k) * cfg.interval)
		if due.Before(base) || !due.Before(end) {
			continue
		}
		lag := s.at.Sub(due)
		if lag < 0 {
			rep.Early++
		}
		if seen[slot{s.schedule, k}]++; seen[slot{s.schedule, k}] > 1 {
			rep.Twice++
			continue
		}
		if lag <= 5*time.Second {
			rep.Within5s++
		}
		rep.ByInstance[s.instance]++
		lags = append(lags, lag)
	}
	rep.Ran = len(lags)
	rep.Missing = rep.Expected - rep.Ran
	slices.Sort(lags)
	return lags
}

// percentile returns the p-th percentile of sorted (nearest rank).
func percentile(sorted []time.Duration, p float64) time.Duration {
	i := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	return sorted[max(i, 0)]
}

// waitIdle waits until no sync run is queued or running, then a second
// more (the jobs' completion, the operations log entries).
func waitIdle(ctx context.Context, admin *sql.DB, runs string) error {
	for deadline := time.Now().Add(time.Minute); ; {
		var n int
		if err := admin.QueryRowContext(ctx, `SELECT count(*) FROM `+runs+` WHERE status IN ('QUEUED', 'RUNNING')`).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return sleepUntil(ctx, time.Now().Add(time.Second))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d sync runs still queued or running a minute after the schedules were moved ahead", n)
		}
		if err := sleepUntil(ctx, time.Now().Add(100*time.Millisecond)); err != nil {
			return err
		}
	}
}

// sleepUntil sleeps until t or the end of ctx.
func sleepUntil(ctx context.Context, t time.Time) error {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// cpuMeter reads the CPU of this process and of the Postgres sessions
// named app.
type cpuMeter struct {
	admin *sql.DB
	app   string
}

func newCPUMeter(admin *sql.DB, app string) *cpuMeter { return &cpuMeter{admin: admin, app: app} }

// cpuSample is the CPU used up to an instant.
type cpuSample struct {
	at       time.Time
	goCPU    time.Duration
	pgCPU    time.Duration
	pgByPID  map[int]time.Duration
	pgReadOK bool
}

func (m *cpuMeter) read() cpuSample {
	s := cpuSample{at: time.Now(), goCPU: processCPU()}
	s.pgByPID, s.pgReadOK = m.sessionCPU()
	for _, d := range s.pgByPID {
		s.pgCPU += d
	}
	return s
}

// since returns the CPU used since before. A session that ended meanwhile
// is left out (the pools keep their sessions open).
func (m *cpuMeter) since(before cpuSample) cpuFigures {
	now := m.read()
	f := cpuFigures{Seconds: now.at.Sub(before.at).Seconds(), Go: (now.goCPU - before.goCPU).Seconds(),
		PostgresOK: before.pgReadOK && now.pgReadOK}
	for pid, d := range now.pgByPID {
		f.Postgres += (d - before.pgByPID[pid]).Seconds()
	}
	return f
}

// sessions returns the number of Postgres sessions named app.
func (m *cpuMeter) sessions() int {
	by, _ := m.sessionCPU()
	return len(by)
}

// sessionCPU returns the CPU time of each Postgres session named app, from
// /proc: ok is false when Postgres runs on another host.
func (m *cpuMeter) sessionCPU() (map[int]time.Duration, bool) {
	out := map[int]time.Duration{}
	rows, err := m.admin.Query(`SELECT pid FROM pg_stat_activity WHERE application_name = $1`, m.app)
	if err != nil {
		return out, false
	}
	defer rows.Close()
	ok := true
	for rows.Next() {
		var pid int
		if rows.Scan(&pid) != nil {
			return out, false
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			ok = false
			continue
		}
		// utime and stime are the 12th and 13th fields after the command
		// name, in clock ticks of 1/100 s.
		fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(fields) < 13 {
			ok = false
			continue
		}
		var d time.Duration
		for _, f := range fields[11:13] {
			n, err := strconv.ParseInt(f, 10, 64)
			if err != nil {
				ok = false
			}
			d += time.Duration(n) * 10 * time.Millisecond
		}
		out[pid] = d
	}
	return out, ok && rows.Err() == nil && len(out) > 0
}

// processCPU returns the CPU time this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// withApplicationName returns the URL u with the application_name app.
func withApplicationName(u, app string) (string, error) {
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "postgres" && p.Scheme != "postgresql") {
		return "", errors.New("the database URL (-db or TEST_DATABASE_URL) must be a postgres:// URL")
	}
	q := p.Query()
	q.Set("application_name", app)
	p.RawQuery = q.Encode()
	return p.String(), nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// ms formats d in milliseconds.
func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 0, 64) + " ms"
}
