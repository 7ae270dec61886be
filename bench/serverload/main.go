package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	_ "github.com/lib/pq"

	"github.com/embedauth/connect/integrations"
)

func main() {
	if roleMain(os.Args[1:]) {
		return
	}
	cfg, err := parseFlags(os.Args[1:], os.Getenv)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "serverload:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	finished := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			stop() // a second Ctrl-C ends the bench at once
			fmt.Fprintln(os.Stderr, "serverload: interrupted: stopping the processes and dropping the database (Ctrl-C again to quit now)")
		case <-finished:
		}
	}()
	_, err = run(ctx, cfg, os.Stdout)
	close(finished)
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, context.Canceled) {
			err = fmt.Errorf("interrupted; the processes are stopped and the database dropped: %w", err)
		}
		fmt.Fprintln(os.Stderr, "serverload:", err)
		stop()
		os.Exit(1)
	}
}

// config is the bench's settings (see parseFlags).
type config struct {
	AdminURL      string        `json:"-"`
	Connections   int           `json:"connections"`
	Duration      time.Duration `json:"duration_ns"`
	Slice         time.Duration `json:"slice_ns"`
	Warmup        time.Duration `json:"warmup_ns"`
	Sweep         bool          `json:"sweep"`
	Rounds        int           `json:"rounds"`
	Concurrencies []int         `json:"concurrencies"`
	Variants      []string      `json:"variants"`
	ServerBin     string        `json:"server_bin,omitempty"`
	Repo          string        `json:"-"`
	SeedWorkers   int           `json:"seed_workers"`
	RateLimit     int           `json:"rate_limit"` // per minute; -1 is off
	JSONPath      string        `json:"-"`

	// afterRun, when set, is called after each run (tests).
	afterRun func(runResult)
}

// parseFlags parses the command line; getenv supplies TEST_DATABASE_URL
// when -db is not given.
func parseFlags(args []string, getenv func(string) string) (config, error) {
	fs := flag.NewFlagSet("serverload", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: go run ./bench/serverload [flags]\n\n"+
			"Starts the reference server on a fresh Postgres database with N connections, a loopback upstream and a\n"+
			"bare httputil.ReverseProxy, and measures GET /connections/{id}, the proxy and the bare proxy at each\n"+
			"concurrency, interleaved, for several rounds. See the package documentation (go doc ./bench/serverload).\n\nFlags:\n")
		fs.PrintDefaults()
	}
	var cfg config
	var conc, vars, rate string
	fs.StringVar(&cfg.AdminURL, "db", "", "`URL` of a Postgres database the bench creates its database from (default $TEST_DATABASE_URL)")
	fs.IntVar(&cfg.Connections, "n", 1000, "`connections` to seed; each request is for a random one of them (100000 fills the proxy's connection cache during the first rounds)")
	fs.DurationVar(&cfg.Duration, "duration", 10*time.Second, "length of each measured run (at least 10s lets the 10 s API-key cache expire in every run)")
	fs.DurationVar(&cfg.Slice, "slice", time.Second, "the variants of a round take turns for this long each until each has run -duration, so that they share the machine's load (-slice as long as -duration runs them one after the other)")
	fs.DurationVar(&cfg.Warmup, "warmup", 3*time.Second, "warm-up of each variant at the highest concurrency, before the rounds (0 for none)")
	fs.BoolVar(&cfg.Sweep, "sweep", true, "before the warm-up, request each of the -n connections once through each variant at the highest concurrency, so that the rounds measure a server in steady state (its cache holding the connections in use); -sweep=false measures the cache filling during the first rounds")
	fs.IntVar(&cfg.Rounds, "rounds", 3, "rounds: each runs every variant at every concurrency once")
	fs.StringVar(&conc, "c", "1,64", "comma-separated `list` of concurrencies (clients, each with one request in flight)")
	fs.StringVar(&vars, "variants", "get,proxy,bare", "comma-separated `list` of get, proxy, bare and direct (the upstream without a proxy)")
	fs.StringVar(&cfg.ServerBin, "server-bin", "", "an already built reference server `binary` (default: go build ./examples/server)")
	fs.StringVar(&cfg.Repo, "repo", ".", "`directory` inside the connect repository to build the server from")
	fs.IntVar(&cfg.SeedWorkers, "seed-workers", 4, "concurrent import batches while seeding")
	fs.StringVar(&rate, "rate-limit", "off", "the server's CONNECT_RATE_LIMIT: off, or `requests` per minute per account (Postgres-backed)")
	fs.StringVar(&cfg.JSONPath, "json", "", "also write every run and the summary to this `file` as JSON")
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
		return cfg, errors.New("no database: pass -db or set TEST_DATABASE_URL to a Postgres URL " +
			"(such as postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable); the bench creates and drops a database of its own")
	}
	if cfg.Connections < 1 || cfg.Rounds < 1 || cfg.SeedWorkers < 1 {
		return cfg, errors.New("-n, -rounds and -seed-workers must be at least 1")
	}
	if cfg.Duration <= 0 || cfg.Warmup < 0 || cfg.Slice <= 0 {
		return cfg, errors.New("-duration and -slice must be positive and -warmup not negative")
	}
	cfg.Slice = min(cfg.Slice, cfg.Duration)
	for _, s := range splitList(conc) {
		c, err := strconv.Atoi(s)
		if err != nil || c < 1 || c > 4096 {
			return cfg, fmt.Errorf("-c: %q is not a concurrency from 1 to 4096", s)
		}
		cfg.Concurrencies = append(cfg.Concurrencies, c)
	}
	if len(cfg.Concurrencies) == 0 {
		return cfg, errors.New("-c lists no concurrency")
	}
	for _, v := range splitList(vars) {
		if !slices.Contains([]string{"get", "proxy", "bare", "direct"}, v) {
			return cfg, fmt.Errorf("-variants: unknown variant %q (get, proxy, bare, direct)", v)
		}
		if slices.Contains(cfg.Variants, v) {
			return cfg, fmt.Errorf("-variants lists %q twice", v)
		}
		cfg.Variants = append(cfg.Variants, v)
	}
	if len(cfg.Variants) == 0 {
		return cfg, errors.New("-variants lists no variant")
	}
	switch n, err := strconv.Atoi(rate); {
	case rate == "off":
		cfg.RateLimit = -1
	case err != nil || n < 1:
		return cfg, fmt.Errorf("-rate-limit %q must be off or a positive number of requests per minute", rate)
	default:
		cfg.RateLimit = n
	}
	return cfg, nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// bench is a running bench: its processes and database.
type bench struct {
	cfg       config
	out       io.Writer
	admin     *sql.DB
	dbName    string
	server    *proc
	upstream  *proc
	bare      *proc
	variants  map[string]variant
	serverURL string
}

// run runs the whole bench and returns its report. Whatever happens, it
// stops the processes it started and drops its database before it returns.
func run(ctx context.Context, cfg config, out io.Writer) (rep *report, err error) {
	b := &bench{cfg: cfg, out: out}
	tmp, err := os.MkdirTemp("", "serverload-")
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil && ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
			// A statement or request cut short by the interruption.
			err = fmt.Errorf("%w: %v", ctx.Err(), err)
		}
		if err != nil && b.upstream != nil {
			// Keep the processes' logs for the post-mortem.
			err = fmt.Errorf("%w\n(the processes' logs are in %s)", err, tmp)
		} else {
			os.RemoveAll(tmp)
		}
	}()
	defer func() { err = errors.Join(err, b.close()) }()

	if b.admin, err = openAdmin(ctx, cfg.AdminURL); err != nil {
		return nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	bin := cfg.ServerBin
	if bin != "" {
		if bin, err = filepath.Abs(bin); err != nil {
			return nil, err
		}
	} else {
		repo, err := findRepo(cfg.Repo)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(out, "building the reference server (go build ./examples/server in %s)\n", repo)
		if bin, err = buildServer(ctx, repo, tmp); err != nil {
			return nil, err
		}
	}

	rnd := make([]byte, 64)
	if _, err := rand.Read(rnd); err != nil {
		return nil, err
	}
	key, apiKey, salt := rnd[:32], "sk_serverload_"+hex.EncodeToString(rnd[32:56]), hex.EncodeToString(rnd[56:])

	var upstreamAddr, bareAddr string
	if b.upstream, upstreamAddr, err = startHelper(exe, tmp, roleUpstream, nil, []string{envAPIKey + "=" + apiKey}); err != nil {
		return nil, err
	}
	if b.bare, bareAddr, err = startHelper(exe, tmp, roleBare, []string{"-upstream=http://" + upstreamAddr}, nil); err != nil {
		return nil, err
	}

	var dbURL string
	if b.dbName, dbURL, err = createDatabase(ctx, b.admin, cfg.AdminURL, salt); err != nil {
		return nil, err
	}
	providersYAML := fmt.Sprintf(`providers:
  - name: %s
    display_name: Serverload bench API
    auth_mode: OAUTH2
    authorization_url: https://bench.invalid/authorize
    token_url: https://bench.invalid/token
    proxy:
      base_url: "http://%s/${connectionConfig.path}"
    connection_config:
      path:
        type: string
        title: Path
`, benchProvider, upstreamAddr)
	providersFile := filepath.Join(tmp, "providers.yaml")
	if err := os.WriteFile(providersFile, []byte(providersYAML), 0o600); err != nil {
		return nil, err
	}
	providers, err := integrations.LoadFile(providersFile)
	if err != nil {
		return nil, err
	}

	port, err := freePort()
	if err != nil {
		return nil, err
	}
	serverAddr := "127.0.0.1:" + port
	b.serverURL = "http://" + serverAddr
	cmd := exec.Command(bin)
	cmd.Env = append(environWithout("PORT", "DATABASE_URL", "CONNECT_"),
		"PORT="+port,
		"DATABASE_URL="+dbURL,
		"CONNECT_ENCRYPTION_KEY="+base64.StdEncoding.EncodeToString(key),
		"CONNECT_API_KEY="+apiKey,
		"CONNECT_PUBLIC_URL="+b.serverURL,
		"CONNECT_PROVIDERS_FILE="+providersFile,
		"CONNECT_PROVIDER_ALLOW_PRIVATE_NETWORKS=true", // the upstream is on 127.0.0.1
		"CONNECT_RATE_LIMIT="+strconv.Itoa(cfg.RateLimit),
	)
	if b.server, err = start("server", cmd, tmp); err != nil {
		return nil, err
	}
	if err := waitHealthy(ctx, b.server, b.serverURL, 2*time.Minute); err != nil {
		return nil, err
	}
	if err := createIntegration(ctx, b.serverURL, apiKey); err != nil {
		return nil, fmt.Errorf("%w\n%s", err, b.server.logTail())
	}

	fmt.Fprintf(out, "seeding %d connections (connections.Service.ImportBatch in this process, batches of %d, %d at a time, on the server's database and key)\n",
		cfg.Connections, seedBatch, cfg.SeedWorkers)
	took, err := seed(ctx, seedConfig{dbURL: dbURL, key: key, providers: providers, n: cfg.Connections,
		workers: cfg.SeedWorkers, salt: salt, progress: out})
	if err != nil {
		return nil, err
	}
	rep = &report{Config: cfg, Seed: seedReport{Connections: cfg.Connections, Seconds: took.Seconds(),
		PerSecond: float64(cfg.Connections) / took.Seconds()}}
	rep.Host = hostInfo(cfg.Repo, bin)
	rep.Database = b.dbName
	rep.pids = map[string]int{"server": b.server.pid(), "upstream": b.upstream.pid(), "bare": b.bare.pid()}
	fmt.Fprintf(out, "seeded %d connections in %.1f s (%.0f/s)\n\n", cfg.Connections, took.Seconds(), rep.Seed.PerSecond)

	b.variants = variants(serverAddr, bareAddr, upstreamAddr, apiKey, salt)
	if err := b.measureAll(ctx, rep); err != nil {
		return rep, err
	}
	rep.summarize()
	rep.print(out)
	rep.ServerLog = serverWarnings(b.server.logPath)
	if len(rep.ServerLog) > 0 {
		fmt.Fprintf(out, "\nthe server logged %d warnings or errors; the first:\n", len(rep.ServerLog))
		for _, l := range rep.ServerLog[:min(5, len(rep.ServerLog))] {
			fmt.Fprintf(out, "  %s\n", l)
		}
	}
	if cfg.JSONPath != "" {
		j, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return rep, err
		}
		if err := os.WriteFile(cfg.JSONPath, append(j, '\n'), 0o644); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// close stops the processes (the server first, so that its sessions end)
// and drops the database.
func (b *bench) close() error {
	var errs []error
	if b.server != nil {
		if err := b.server.stop(20 * time.Second); err != nil {
			errs = append(errs, fmt.Errorf("%w\n%s", err, b.server.logTail()))
		}
	}
	for _, p := range []*proc{b.bare, b.upstream} {
		if p != nil {
			_ = p.stop(5 * time.Second)
		}
	}
	if b.admin != nil {
		if b.dbName != "" {
			if err := dropDatabase(b.admin, b.dbName); err != nil {
				errs = append(errs, fmt.Errorf("dropping database %s: %w", b.dbName, err))
			}
		}
		b.admin.Close()
	}
	return errors.Join(errs...)
}

// createIntegration creates the bench's integration through the server's
// API, as @nangohq/node's createIntegration does.
func createIntegration(ctx context.Context, serverURL, apiKey string) error {
	body := `{"provider":"` + benchProvider + `","unique_key":"` + benchIntegration +
		`","credentials":{"type":"OAUTH2","client_id":"bench-client","client_secret":"bench-secret"}}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, serverURL+"/integrations", strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+apiKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("POST /integrations: %w", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("POST /integrations: %s: %s", resp.Status, b)
	}
	return nil
}

// measureAll runs the warm-up, then the rounds.
func (b *bench) measureAll(ctx context.Context, rep *report) error {
	cfg := b.cfg
	fmt.Fprintf(b.out, "%d rounds of %s per run, the variants of a round taking turns of %s; every request for a random one of %d connections; CPU in µs per request\n",
		cfg.Rounds, cfg.Duration, cfg.Slice, cfg.Connections)
	printRunHeader(b.out)
	top := slices.Max(cfg.Concurrencies)
	if cfg.Sweep {
		for _, name := range cfg.Variants {
			r, err := b.measure(ctx, -1, name, top, 0)
			if err != nil {
				return err
			}
			rep.Sweep = append(rep.Sweep, r)
		}
	}
	if cfg.Warmup > 0 {
		for _, name := range cfg.Variants {
			r, err := b.measure(ctx, 0, name, top, cfg.Warmup)
			if err != nil {
				return err
			}
			rep.Warmup = append(rep.Warmup, r)
		}
	}
	for round := 1; round <= cfg.Rounds; round++ {
		for _, c := range cfg.Concurrencies {
			// Each round starts with the next variant, so that none always
			// follows the same one.
			k := (round - 1) % len(cfg.Variants)
			order := append(slices.Clone(cfg.Variants[k:]), cfg.Variants[:k]...)
			runs, err := b.measureRound(ctx, round, order, c)
			if err != nil {
				return err
			}
			rep.Runs = append(rep.Runs, runs...)
		}
	}
	return nil
}

// measureRound runs each variant of order at concurrency conc for
// -duration, in turns of -slice (variant after variant, over and over), so
// that a change in the machine's load during the round falls on all of
// them; each variant's slices add up to its run.
func (b *bench) measureRound(ctx context.Context, round int, order []string, conc int) ([]runResult, error) {
	acc := make([]sliceSum, len(order))
	for left := b.cfg.Duration; left > 0; left -= b.cfg.Slice {
		d := min(b.cfg.Slice, left)
		for i, name := range order {
			before, err := b.snapshot(ctx)
			if err != nil {
				return nil, err
			}
			lr, err := drive(ctx, b.variants[name], conc, b.cfg.Connections, d,
				uint64(round)<<48|uint64(conc)<<32|uint64(left/time.Millisecond))
			if err != nil {
				return nil, err
			}
			after, err := b.snapshot(ctx)
			if err != nil {
				return nil, err
			}
			acc[i].add(lr, before, after)
		}
	}
	runs := make([]runResult, len(order))
	for i, name := range order {
		slices.Sort(acc[i].lr.latencies)
		r := newRunResult(round, name, conc, acc[i].lr, acc[i].before, acc[i].after)
		if err := b.finishRun(r, acc[i].lr); err != nil {
			return nil, err
		}
		runs[i] = r
	}
	return runs, nil
}

// sliceSum adds up the slices of one variant's run: their requests and
// latencies, and what the snapshots around each slice counted (before
// holds zeros and after the sums, as newRunResult expects).
type sliceSum struct {
	lr            loadResult
	before, after snapshot
}

func (s *sliceSum) add(lr loadResult, before, after snapshot) {
	if s.after.cpu == nil {
		s.before = snapshot{cpu: map[string]time.Duration{}}
		s.after = snapshot{cpu: map[string]time.Duration{}}
	}
	s.lr.latencies = append(s.lr.latencies, lr.latencies...)
	s.lr.requests += lr.requests
	s.lr.errors += lr.errors
	s.lr.bad += lr.bad
	s.lr.redials += lr.redials
	s.lr.elapsed += lr.elapsed
	if room := 5 - len(s.lr.samples); room > 0 {
		s.lr.samples = append(s.lr.samples, lr.samples[:min(room, len(lr.samples))]...)
	}
	for k, v := range after.cpu {
		s.after.cpu[k] += v - before.cpu[k]
	}
	if before.pg.Sessions < 0 || after.pg.Sessions < 0 || s.after.pg.Sessions < 0 {
		s.before.pg.Sessions, s.after.pg.Sessions = -1, -1
	} else {
		s.after.pg.Sessions += after.pg.Sessions - before.pg.Sessions
	}
	s.after.pg.Backends = after.pg.Backends
	s.after.upstream.Conns += after.upstream.Conns - before.upstream.Conns
	s.after.upstream.Requests += after.upstream.Requests - before.upstream.Requests
}

// snapshot is what is read before and after a run.
type snapshot struct {
	cpu      map[string]time.Duration
	pg       pgStats
	upstream helperStats
}

func (b *bench) snapshot(ctx context.Context) (snapshot, error) {
	s := snapshot{cpu: map[string]time.Duration{}}
	for name, p := range map[string]*proc{"server": b.server, "upstream": b.upstream, "bare": b.bare} {
		if p.exited() {
			return s, fmt.Errorf("the %s process exited (%v):\n%s", name, p.waitErr, p.logTail())
		}
		d, err := processCPU(p.pid())
		if err != nil {
			return s, err
		}
		s.cpu[name] = d
	}
	d, err := processCPU(os.Getpid())
	if err != nil {
		return s, err
	}
	s.cpu["client"] = d
	if s.pg, err = readPGStats(ctx, b.admin, b.dbName); err != nil {
		return s, err
	}
	if s.upstream, err = b.upstream.stats(); err != nil {
		return s, err
	}
	return s, nil
}

// measure runs one variant at one concurrency for d (round 0 is the
// warm-up), prints its line and fails on any error or unexpected answer.
func (b *bench) measure(ctx context.Context, round int, name string, conc int, d time.Duration) (runResult, error) {
	v := b.variants[name]
	before, err := b.snapshot(ctx)
	if err != nil {
		return runResult{}, err
	}
	lr, err := drive(ctx, v, conc, b.cfg.Connections, d, uint64(round)<<32|uint64(conc))
	if err != nil {
		return runResult{}, err
	}
	after, err := b.snapshot(ctx)
	if err != nil {
		return runResult{}, err
	}
	r := newRunResult(round, name, conc, lr, before, after)
	return r, b.finishRun(r, lr)
}

// finishRun prints a run and fails on any error or unexpected answer.
func (b *bench) finishRun(r runResult, lr loadResult) error {
	printRun(b.out, r)
	if b.cfg.afterRun != nil {
		b.cfg.afterRun(r)
	}
	if lr.errors > 0 || lr.bad > 0 {
		return fmt.Errorf("%s at c=%d: %d requests failed and %d got an unexpected answer (of %d); first: %s\nserver log:\n%s",
			r.Variant, r.Concurrency, lr.errors, lr.bad, lr.requests+lr.errors+lr.bad, strings.Join(lr.samples, "; "), b.server.logTail())
	}
	if lr.requests == 0 {
		return fmt.Errorf("%s at c=%d: no request completed in %.1fs", r.Variant, r.Concurrency, r.Seconds)
	}
	return nil
}

// serverWarnings returns the server's log lines at level WARN or ERROR.
func serverWarnings(path string) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var out []string
	for _, l := range bytes.Split(b, []byte("\n")) {
		if bytes.Contains(l, []byte("level=WARN")) || bytes.Contains(l, []byte("level=ERROR")) {
			out = append(out, string(l))
		}
	}
	return out
}

// hostInfo describes where the figures come from.
func hostInfo(repo, bin string) hostReport {
	h := hostReport{CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), ServerBin: bin}
	if out, err := exec.Command("git", "-C", repo, "rev-parse", "--short", "HEAD").Output(); err == nil {
		h.Commit = strings.TrimSpace(string(out))
		if st, err := exec.Command("git", "-C", repo, "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(bytes.TrimSpace(st)) > 0 {
			h.Commit += "+dirty"
		}
	}
	return h
}
