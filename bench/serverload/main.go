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
	Stores        []string      `json:"stores"`
	GoMaxProcs    []int         `json:"gomaxprocs,omitempty"`
	ColdStarts    int           `json:"cold_starts"`
	DataDir       string        `json:"data_dir"`
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

// The stores the bench runs the server on.
const (
	storeSQLite   = "sqlite"
	storePostgres = "postgres"
)

// parseFlags parses the command line; getenv supplies TEST_DATABASE_URL
// when -db is not given.
func parseFlags(args []string, getenv func(string) string) (config, error) {
	fs := flag.NewFlagSet("serverload", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: go run ./bench/serverload [flags]\n\n"+
			"Starts the reference server on each store (SQLite, its default, in a fresh data directory; Postgres on a fresh\n"+
			"database) with N connections, a loopback upstream and a bare httputil.ReverseProxy, measures cold starts, the\n"+
			"bulk import, GET /connections/{id}, the proxy and the bare proxy at each concurrency, interleaved, for several\n"+
			"rounds, and the servers' memory. See the package documentation (go doc ./bench/serverload).\n\nFlags:\n")
		fs.PrintDefaults()
	}
	var cfg config
	var stores, procs, conc, vars, rate string
	fs.StringVar(&cfg.AdminURL, "db", "", "`URL` of a Postgres database the bench creates its databases from (default $TEST_DATABASE_URL; not needed with -stores sqlite)")
	fs.StringVar(&stores, "stores", "sqlite,postgres", "comma-separated `list` of the stores to run the server on, side by side: sqlite (no DATABASE_URL: the default, a fresh CONNECT_DATA_DIR) and postgres")
	fs.StringVar(&procs, "gomaxprocs", "", "comma-separated `list` of GOMAXPROCS values: one server per store and value, all measured in the same rounds (default: one server per store, GOMAXPROCS unset)")
	fs.IntVar(&cfg.ColdStarts, "cold-starts", 3, "`repetitions` of the cold start measured per store, on an empty database and with the -n connections (0 for none)")
	fs.StringVar(&cfg.DataDir, "data-dir", os.TempDir(), "`directory` in which the SQLite servers' data directories are made (and removed at the end); put it on the disk Postgres keeps its data on")
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
	fs.StringVar(&rate, "rate-limit", "off", "the server's CONNECT_RATE_LIMIT: off, or `requests` per minute per account (kept in Postgres on Postgres, in the process on SQLite)")
	fs.StringVar(&cfg.JSONPath, "json", "", "also write every run and the summary to this `file` as JSON")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	var err error
	if cfg.Stores, err = nameList("-stores", "store", stores, []string{storeSQLite, storePostgres}); err != nil {
		return cfg, err
	}
	for _, s := range splitList(procs) {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 1024 {
			return cfg, fmt.Errorf("-gomaxprocs: %q is not a number from 1 to 1024", s)
		}
		if slices.Contains(cfg.GoMaxProcs, n) {
			return cfg, fmt.Errorf("-gomaxprocs lists %d twice", n)
		}
		cfg.GoMaxProcs = append(cfg.GoMaxProcs, n)
	}
	if cfg.AdminURL == "" {
		cfg.AdminURL = getenv("TEST_DATABASE_URL")
	}
	if cfg.AdminURL == "" && slices.Contains(cfg.Stores, storePostgres) {
		return cfg, errors.New("no database: pass -db or set TEST_DATABASE_URL to a Postgres URL " +
			"(such as postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable); the bench creates and drops databases of its own " +
			"(or measure SQLite alone with -stores sqlite)")
	}
	if !slices.Contains(cfg.Stores, storePostgres) {
		cfg.AdminURL = ""
	}
	if cfg.DataDir == "" {
		return cfg, errors.New("-data-dir is empty")
	}
	if cfg.Connections < 1 || cfg.Rounds < 1 || cfg.SeedWorkers < 1 {
		return cfg, errors.New("-n, -rounds and -seed-workers must be at least 1")
	}
	if cfg.ColdStarts < 0 {
		return cfg, errors.New("-cold-starts must not be negative")
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
	if cfg.Variants, err = nameList("-variants", "variant", vars, []string{"get", "proxy", "bare", "direct"}); err != nil {
		return cfg, err
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

// nameList parses the comma-separated list of flag, each a kind of
// allowed, once at the most, at least one.
func nameList(flag, kind, list string, allowed []string) ([]string, error) {
	var out []string
	for _, s := range splitList(list) {
		if !slices.Contains(allowed, s) {
			return nil, fmt.Errorf("%s: unknown %s %q (%s)", flag, kind, s, strings.Join(allowed, ", "))
		}
		if slices.Contains(out, s) {
			return nil, fmt.Errorf("%s lists %q twice", flag, s)
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s lists no %s", flag, kind)
	}
	return out, nil
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

// bench is a running bench: its processes, databases and data
// directories.
type bench struct {
	cfg           config
	out           io.Writer
	tmp           string // the processes' logs and the providers file
	bin           string // the reference server
	admin         *sql.DB
	apiKey, salt  string
	pgKey         []byte // the encryption key given to the servers on Postgres
	providersFile string
	upstream      *proc
	bare          *proc
	upstreamAddr  string
	bareAddr      string
	instances     []*instance
	targets       []target

	servers   []*proc  // every server process started, stopped by close
	databases []string // every database created, dropped by close
	dataDirs  []string // every SQLite data directory, removed by close
	starts    int      // server processes started, for their log names
}

// run runs the whole bench and returns its report. Whatever happens, it
// stops the processes it started, drops its databases and removes its
// data directories before it returns.
func run(ctx context.Context, cfg config, out io.Writer) (rep *report, err error) {
	b := &bench{cfg: cfg, out: out}
	if b.tmp, err = os.MkdirTemp("", "serverload-"); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil && ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
			// A statement or request cut short by the interruption.
			err = fmt.Errorf("%w: %v", ctx.Err(), err)
		}
		if err != nil && b.upstream != nil {
			// Keep the processes' logs for the post-mortem.
			err = fmt.Errorf("%w\n(the processes' logs are in %s)", err, b.tmp)
		} else {
			os.RemoveAll(b.tmp)
		}
	}()
	defer func() {
		err = errors.Join(err, b.close())
		if rep != nil {
			rep.Databases, rep.DataDirs = b.databases, b.dataDirs
			for _, p := range b.servers {
				rep.pids[p.name] = p.pid()
			}
		}
	}()

	if cfg.AdminURL != "" {
		if b.admin, err = openAdmin(ctx, cfg.AdminURL); err != nil {
			return nil, err
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	if b.bin = cfg.ServerBin; b.bin != "" {
		if b.bin, err = filepath.Abs(b.bin); err != nil {
			return nil, err
		}
	} else {
		repo, err := findRepo(cfg.Repo)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(out, "building the reference server (go build ./examples/server in %s)\n", repo)
		if b.bin, err = buildServer(ctx, repo, b.tmp); err != nil {
			return nil, err
		}
	}

	rnd := make([]byte, 64)
	if _, err := rand.Read(rnd); err != nil {
		return nil, err
	}
	b.pgKey, b.apiKey, b.salt = rnd[:32], "sk_serverload_"+hex.EncodeToString(rnd[32:56]), hex.EncodeToString(rnd[56:])

	if b.upstream, b.upstreamAddr, err = startHelper(exe, b.tmp, roleUpstream, nil, []string{envAPIKey + "=" + b.apiKey}); err != nil {
		return nil, err
	}
	if b.bare, b.bareAddr, err = startHelper(exe, b.tmp, roleBare, []string{"-upstream=http://" + b.upstreamAddr}, nil); err != nil {
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
`, benchProvider, b.upstreamAddr)
	b.providersFile = filepath.Join(b.tmp, "providers.yaml")
	if err := os.WriteFile(b.providersFile, []byte(providersYAML), 0o600); err != nil {
		return nil, err
	}
	providers, err := integrations.LoadFile(b.providersFile)
	if err != nil {
		return nil, err
	}
	if slices.Contains(cfg.Stores, storeSQLite) && onTmpfs(cfg.DataDir) {
		fmt.Fprintf(out, "warning: -data-dir %s is on tmpfs: SQLite's commits are not synced to a disk there, Postgres's are\n", cfg.DataDir)
	}

	rep = &report{Config: cfg, Host: hostInfo(cfg.Repo, b.bin), pids: map[string]int{}}
	rep.pids["upstream"], rep.pids["bare"] = b.upstream.pid(), b.bare.pid()
	b.instances = newInstances(cfg.Stores, cfg.GoMaxProcs)

	// Cold starts on an empty database, the stores taking turns.
	if cfg.ColdStarts > 0 {
		fmt.Fprintf(out, "cold starts (exec to the first 200 of GET /health), %d per store, each on an empty database\n", cfg.ColdStarts)
		for rep1 := range cfg.ColdStarts {
			for _, store := range rotate(cfg.Stores, rep1) {
				inst := &instance{Store: store, GoMaxProcs: b.primary(store).GoMaxProcs, Label: store + "-cold"}
				if err := b.freshStorage(ctx, inst, fmt.Sprintf("cold%d", rep1+1)); err != nil {
					return rep, err
				}
				d, err := b.startServer(ctx, inst)
				if err != nil {
					return rep, err
				}
				if err := b.stopServer(inst); err != nil {
					return rep, err
				}
				rep.addColdStart(store, false, d)
				fmt.Fprintf(out, "  %-8s empty database: %s ms\n", store, ms(d))
			}
		}
	}

	// One server per store on a fresh database, with the integration
	// created through its API.
	for _, inst := range b.instances {
		if inst.copyOf != nil {
			continue
		}
		if err := b.freshStorage(ctx, inst, inst.Store); err != nil {
			return rep, err
		}
		if _, err := b.startServer(ctx, inst); err != nil {
			return rep, err
		}
		if err := createIntegration(ctx, inst.url, b.apiKey); err != nil {
			return rep, fmt.Errorf("%s: %w\n%s", inst.Label, err, inst.server.logTail())
		}
		if inst.Store == storeSQLite {
			// The server made the key of its data directory at its first
			// start, as it does for anyone who starts it without one.
			if inst.key, err = readKeyFile(filepath.Join(inst.dataDir, "encryption.key")); err != nil {
				return rep, err
			}
		}
	}

	// Seeding: the bulk import of -n connections, one store after the
	// other, each while its server (and the other store's) runs.
	for _, inst := range b.instances {
		if inst.copyOf != nil {
			continue
		}
		fmt.Fprintf(out, "seeding %d connections on %s (connections.Service.ImportBatch in this process, batches of %d, %d at a time, on the server's database and key, the server running)\n",
			cfg.Connections, inst.Store, seedBatch, cfg.SeedWorkers)
		took, err := seed(ctx, seedConfig{store: inst.Store, dbURL: inst.dbURL, path: inst.dbPath(), key: inst.key,
			providers: providers, n: cfg.Connections, workers: cfg.SeedWorkers, salt: b.salt, progress: out})
		if err != nil {
			return rep, fmt.Errorf("seeding %s: %w", inst.Store, err)
		}
		s := seedReport{Store: inst.Store, Connections: cfg.Connections, Seconds: took.Seconds(), PerSecond: float64(cfg.Connections) / took.Seconds()}
		rep.Seeds = append(rep.Seeds, s)
		fmt.Fprintf(out, "seeded %d connections on %s in %.1f s (%.0f/s)\n", cfg.Connections, inst.Store, s.Seconds, s.PerSecond)
	}

	if err := b.restart(ctx, rep); err != nil {
		return rep, err
	}

	b.targets = b.makeTargets()
	for _, inst := range b.instances {
		ir := instanceReport{Label: inst.Label, Store: inst.Store, GoMaxProcs: inst.GoMaxProcs, Database: inst.dbName, DataDir: inst.dataDir}
		if ir.Idle, err = procMemory(inst.server.pid()); err != nil {
			return rep, err
		}
		rep.Instances = append(rep.Instances, ir)
	}
	fmt.Fprintln(out)
	if err := b.measureAll(ctx, rep); err != nil {
		return rep, err
	}
	for i, inst := range b.instances {
		ir := &rep.Instances[i]
		if ir.AfterLoad, err = procMemory(inst.server.pid()); err != nil {
			return rep, err
		}
		ir.PGSessions, ir.PGSessionsAnonKiB = -1, -1
		if inst.Store == storePostgres {
			ir.PGSessions, ir.PGSessionsAnonKiB = postgresMemory(ctx, b.admin, inst.dbName)
		}
		ir.ServerLog = serverWarnings(inst.logs...)
	}
	rep.summarize()
	rep.print(out)
	for _, ir := range rep.Instances {
		if len(ir.ServerLog) > 0 {
			fmt.Fprintf(out, "\nthe %s server logged %d warnings or errors; the first:\n", ir.Label, len(ir.ServerLog))
			for _, l := range ir.ServerLog[:min(5, len(ir.ServerLog))] {
				fmt.Fprintf(out, "  %s\n", l)
			}
		}
	}
	if cfg.JSONPath != "" {
		rep.Databases, rep.DataDirs = b.databases, b.dataDirs
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

// restart stops the seeded servers, copies each one's data for the other
// GOMAXPROCS values, measures cold starts with the -n connections present
// (the stores taking turns; the last start of each store stays up) and
// starts the copies, so that every server measured was started on its
// data as an operator starts one.
func (b *bench) restart(ctx context.Context, rep *report) error {
	copies := len(b.instances) > len(b.cfg.Stores)
	if b.cfg.ColdStarts == 0 && !copies {
		return nil
	}
	for _, inst := range b.instances {
		if inst.copyOf == nil {
			if err := b.stopServer(inst); err != nil {
				return err
			}
		}
	}
	for _, inst := range b.instances {
		if inst.copyOf != nil {
			if err := b.copyStorage(ctx, inst); err != nil {
				return err
			}
		}
	}
	reps := max(b.cfg.ColdStarts, 1)
	if b.cfg.ColdStarts > 0 {
		fmt.Fprintf(b.out, "cold starts with the %d connections, %d per store\n", b.cfg.Connections, reps)
	}
	for r := range reps {
		for _, store := range rotate(b.cfg.Stores, r) {
			inst := b.primary(store)
			d, err := b.startServer(ctx, inst)
			if err != nil {
				return err
			}
			if b.cfg.ColdStarts > 0 {
				rep.addColdStart(store, true, d)
				fmt.Fprintf(b.out, "  %-8s %d connections: %s ms\n", store, b.cfg.Connections, ms(d))
			}
			if r < reps-1 {
				if err := b.stopServer(inst); err != nil {
					return err
				}
			}
		}
	}
	for _, inst := range b.instances {
		if inst.copyOf != nil {
			if _, err := b.startServer(ctx, inst); err != nil {
				return err
			}
		}
	}
	return nil
}

// rotate returns s starting at its k-th element (modulo its length).
func rotate[T any](s []T, k int) []T {
	k %= len(s)
	return append(slices.Clone(s[k:]), s[:k]...)
}

// close stops the processes (the servers first, so that their sessions
// end), drops the databases and removes the data directories.
func (b *bench) close() error {
	var errs []error
	for _, p := range b.servers {
		if err := p.stop(20 * time.Second); err != nil {
			errs = append(errs, fmt.Errorf("%w\n%s", err, p.logTail()))
		}
	}
	for _, p := range []*proc{b.bare, b.upstream} {
		if p != nil {
			_ = p.stop(5 * time.Second)
		}
	}
	if b.admin != nil {
		for _, name := range b.databases {
			if err := dropDatabase(b.admin, name); err != nil {
				errs = append(errs, fmt.Errorf("dropping database %s: %w", name, err))
			}
		}
		b.admin.Close()
	}
	for _, dir := range b.dataDirs {
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, err)
		}
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

// measureAll runs the sweep and the warm-up, then the rounds.
func (b *bench) measureAll(ctx context.Context, rep *report) error {
	cfg := b.cfg
	fmt.Fprintf(b.out, "%d rounds of %s per run, the %d variants of a round taking turns of %s; every request for a random one of %d connections; CPU in µs per request\n",
		cfg.Rounds, cfg.Duration, len(b.targets), cfg.Slice, cfg.Connections)
	printRunHeader(b.out)
	top := slices.Max(cfg.Concurrencies)
	if cfg.Sweep {
		for _, t := range b.targets {
			r, err := b.measure(ctx, -1, t, top, 0)
			if err != nil {
				return err
			}
			rep.Sweep = append(rep.Sweep, r)
		}
	}
	if cfg.Warmup > 0 {
		for _, t := range b.targets {
			r, err := b.measure(ctx, 0, t, top, cfg.Warmup)
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
			runs, err := b.measureRound(ctx, round, rotate(b.targets, round-1), c)
			if err != nil {
				return err
			}
			rep.Runs = append(rep.Runs, runs...)
		}
	}
	return nil
}

// measureRound runs each target of order at concurrency conc for
// -duration, in turns of -slice (target after target, over and over), so
// that a change in the machine's load during the round falls on all of
// them; each target's slices add up to its run.
func (b *bench) measureRound(ctx context.Context, round int, order []target, conc int) ([]runResult, error) {
	acc := make([]sliceSum, len(order))
	for left := b.cfg.Duration; left > 0; left -= b.cfg.Slice {
		d := min(b.cfg.Slice, left)
		for i, t := range order {
			before, err := b.snapshot(ctx)
			if err != nil {
				return nil, err
			}
			lr, err := drive(ctx, t.v, conc, b.cfg.Connections, d,
				uint64(round)<<48|uint64(conc)<<32|uint64(left/time.Millisecond))
			if err != nil {
				return nil, err
			}
			after, err := b.snapshot(ctx)
			if err != nil {
				return nil, err
			}
			acc[i].add(lr, diff(before, after))
		}
	}
	runs := make([]runResult, len(order))
	for i, t := range order {
		slices.Sort(acc[i].lr.latencies)
		r := newRunResult(round, t, conc, acc[i].lr, acc[i].d)
		if err := b.finishRun(r, acc[i].lr); err != nil {
			return nil, err
		}
		runs[i] = r
	}
	return runs, nil
}

// sliceSum adds up the slices of one target's run: their requests and
// latencies, and what the snapshots around each slice counted.
type sliceSum struct {
	lr loadResult
	d  delta
}

func (s *sliceSum) add(lr loadResult, d delta) {
	s.lr.latencies = append(s.lr.latencies, lr.latencies...)
	s.lr.requests += lr.requests
	s.lr.errors += lr.errors
	s.lr.bad += lr.bad
	s.lr.redials += lr.redials
	s.lr.elapsed += lr.elapsed
	if room := 5 - len(s.lr.samples); room > 0 {
		s.lr.samples = append(s.lr.samples, lr.samples[:min(room, len(lr.samples))]...)
	}
	s.d.add(d)
}

// snapshot is what is read before and after a run.
type snapshot struct {
	cpu      map[string]time.Duration // by process: the servers' labels, upstream, bare, client
	pg       pgStats
	upstream helperStats
}

func (b *bench) snapshot(ctx context.Context) (snapshot, error) {
	s := snapshot{cpu: map[string]time.Duration{}}
	procs := map[string]*proc{"upstream": b.upstream, "bare": b.bare}
	for _, inst := range b.instances {
		procs[inst.Label] = inst.server
	}
	for name, p := range procs {
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
	s.pg = pgStats{Sessions: -1}
	if names := b.pgDatabases(); len(names) > 0 {
		if s.pg, err = readPGStats(ctx, b.admin, names); err != nil {
			return s, err
		}
	}
	if s.upstream, err = b.upstream.stats(); err != nil {
		return s, err
	}
	return s, nil
}

// pgDatabases are the databases of the servers measured on Postgres.
func (b *bench) pgDatabases() []string {
	var names []string
	for _, inst := range b.instances {
		if inst.Store == storePostgres {
			names = append(names, inst.dbName)
		}
	}
	return names
}

// measure runs one target at one concurrency for d (round 0 is the
// warm-up, d 0 the sweep), prints its line and fails on any error or
// unexpected answer.
func (b *bench) measure(ctx context.Context, round int, t target, conc int, d time.Duration) (runResult, error) {
	before, err := b.snapshot(ctx)
	if err != nil {
		return runResult{}, err
	}
	lr, err := drive(ctx, t.v, conc, b.cfg.Connections, d, uint64(round)<<32|uint64(conc))
	if err != nil {
		return runResult{}, err
	}
	after, err := b.snapshot(ctx)
	if err != nil {
		return runResult{}, err
	}
	r := newRunResult(round, t, conc, lr, diff(before, after))
	return r, b.finishRun(r, lr)
}

// finishRun prints a run and fails on any error or unexpected answer.
func (b *bench) finishRun(r runResult, lr loadResult) error {
	printRun(b.out, r)
	if b.cfg.afterRun != nil {
		b.cfg.afterRun(r)
	}
	if lr.errors > 0 || lr.bad > 0 {
		log := ""
		for _, inst := range b.instances {
			if inst.Label == r.Server {
				log = "\nserver log:\n" + inst.server.logTail()
			}
		}
		return fmt.Errorf("%s at c=%d: %d requests failed and %d got an unexpected answer (of %d); first: %s%s",
			r.name(), r.Concurrency, lr.errors, lr.bad, lr.requests+lr.errors+lr.bad, strings.Join(lr.samples, "; "), log)
	}
	if lr.requests == 0 {
		return fmt.Errorf("%s at c=%d: no request completed in %.1fs", r.name(), r.Concurrency, r.Seconds)
	}
	return nil
}

// serverWarnings returns the lines at level WARN or ERROR of the server
// logs at paths, each after its file's name.
func serverWarnings(paths ...string) []string {
	var out []string
	for _, path := range paths {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		for _, l := range bytes.Split(b, []byte("\n")) {
			if bytes.Contains(l, []byte("level=WARN")) || bytes.Contains(l, []byte("level=ERROR")) {
				out = append(out, filepath.Base(path)+": "+string(l))
			}
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
