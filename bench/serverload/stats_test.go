package main

import (
	"bufio"
	"bytes"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	t.Parallel()
	ds := func(ms ...int) []time.Duration {
		out := make([]time.Duration, len(ms))
		for i, v := range ms {
			out[i] = time.Duration(v) * time.Millisecond
		}
		return out
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = i + 1
	}
	for _, tc := range []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{"none", nil, 50, 0},
		{"one", ds(7), 99, 7 * time.Millisecond},
		{"median of odd", ds(1, 2, 3, 4, 5), 50, 3 * time.Millisecond},
		{"median of even is the lower middle", ds(1, 2, 3, 4), 50, 2 * time.Millisecond},
		{"p99 of 100", ds(hundred...), 99, 99 * time.Millisecond},
		{"p99 of 10 is the largest", ds(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 99, 10 * time.Millisecond},
		{"p100", ds(1, 2, 3), 100, 3 * time.Millisecond},
		{"tiny p", ds(1, 2, 3), 0.001, time.Millisecond},
	} {
		if got := percentile(tc.sorted, tc.p); got != tc.want {
			t.Errorf("%s: percentile(%v, %v) = %v, want %v", tc.name, tc.sorted, tc.p, got, tc.want)
		}
	}
}

func TestSpreadOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   []float64
		want spread
	}{
		{nil, spread{}},
		{[]float64{5}, spread{5, 5, 5}},
		{[]float64{3, 1, 2}, spread{2, 1, 3}},
		{[]float64{4, 1, 3, 2}, spread{2.5, 1, 4}},
	} {
		in := append([]float64(nil), tc.in...)
		if got := spreadOf(in); got != tc.want {
			t.Errorf("spreadOf(%v) = %+v, want %+v", tc.in, got, tc.want)
		}
		for i := range in {
			if in[i] != tc.in[i] {
				t.Errorf("spreadOf reordered its argument: %v", in)
			}
		}
	}
}

func TestParseProcStat(t *testing.T) {
	t.Parallel()
	// utime 250 and stime 130 ticks: 3.8 s.
	tail := " S 1 2 3 4 5 6 7 8 9 10 250 130 0 0 20 0 12 0 100 200 300"
	for _, comm := range []string{"connect-server", "a b", "x) S 9 9 (y", "((", ""} {
		got, err := parseProcStat([]byte("4242 (" + comm + ")" + tail + "\n"))
		if err != nil {
			t.Errorf("comm %q: %v", comm, err)
			continue
		}
		if want := 3800 * time.Millisecond; got != want {
			t.Errorf("comm %q: CPU %v, want %v", comm, got, want)
		}
	}
	for _, bad := range []string{
		"",
		"4242 connect-server S 1 2",
		"4242 (x) S 1 2 3 4 5 6 7 8 9 10 250",
		"4242 (x) S 1 2 3 4 5 6 7 8 9 10 -250 130",
		"4242 (x) S 1 2 3 4 5 6 7 8 9 10 250 1e3",
	} {
		if got, err := parseProcStat([]byte(bad)); err == nil {
			t.Errorf("parseProcStat(%q) = %v, want an error", bad, got)
		}
	}
}

func TestProcessCPUOfThisProcess(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	if _, err := parseProcStat(b); err != nil {
		t.Fatalf("parsing this process's /proc/self/stat %q: %v", b, err)
	}
}

func FuzzParseProcStat(f *testing.F) {
	f.Add([]byte("1 (init) S 0 1 1 0 -1 4194560 1 2 3 4 5 6 7 8 20 0 1 0 9 10 11"))
	f.Add([]byte("7 (a) b) R"))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := parseProcStat(b)
		if err == nil && d < 0 {
			t.Fatalf("negative CPU time %v from %q", d, b)
		}
	})
}

func TestParseProcStatus(t *testing.T) {
	t.Parallel()
	m, err := parseProcStatus([]byte("Name:\tconnect-server\nVmPeak:\t 1300000 kB\nVmHWM:\t   81234 kB\nVmRSS:\t   70123 kB\n" +
		"RssAnon:\t   60000 kB\nRssFile:\t   10123 kB\nThreads:\t9\n"))
	if err != nil || m != (memStats{RSSKiB: 70123, HWMKiB: 81234, AnonKiB: 60000}) {
		t.Errorf("parseProcStatus = %+v, %v", m, err)
	}
	for _, bad := range []string{"VmRSS:\t1 kB\nVmHWM:\t2 kB\n", "VmRSS:\t1 kB\nVmHWM:\t2 kB\nRssAnon:\tx kB\n", "VmRSS:\t1 MB\nVmHWM:\t2 kB\nRssAnon:\t1 kB\n"} {
		if _, err := parseProcStatus([]byte(bad)); err == nil {
			t.Errorf("parseProcStatus(%q) succeeded", bad)
		}
	}
	m, err = procMemory(os.Getpid())
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	if m.RSSKiB <= 0 || m.HWMKiB < m.RSSKiB || m.AnonKiB <= 0 {
		t.Errorf("this process's memory: %+v", m)
	}
}

func TestParseFlags(t *testing.T) {
	t.Parallel()
	cfg, err := parseFlags(nil, env("postgres://postgres@127.0.0.1:5432/test"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Connections != 1000 || cfg.Duration != 10*time.Second || cfg.Slice != time.Second || cfg.Rounds != 3 ||
		!equal(cfg.Concurrencies, []int{1, 64}) || !equal(cfg.Variants, []string{"get", "proxy", "bare"}) || cfg.RateLimit != -1 ||
		!equal(cfg.Stores, []string{"sqlite", "postgres"}) || cfg.GoMaxProcs != nil || cfg.ColdStarts != 3 || cfg.DataDir != os.TempDir() {
		t.Errorf("defaults: %+v", cfg)
	}
	// SQLite alone needs no Postgres.
	cfg, err = parseFlags([]string{"-stores", "sqlite", "-gomaxprocs", "1, 2", "-cold-starts", "0", "-data-dir", "/var/tmp"}, env(""))
	if err != nil {
		t.Fatal(err)
	}
	if !equal(cfg.Stores, []string{"sqlite"}) || !equal(cfg.GoMaxProcs, []int{1, 2}) || cfg.ColdStarts != 0 || cfg.DataDir != "/var/tmp" || cfg.AdminURL != "" {
		t.Errorf("-stores sqlite: %+v", cfg)
	}
	cfg, err = parseFlags([]string{"-db", "postgres://h/db", "-n", "5", "-c", "2, 8", "-variants", "bare,direct", "-rate-limit", "100000",
		"-duration", "3s", "-slice", "5s"}, env("postgres://other/db"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.AdminURL != "postgres://h/db" || cfg.Connections != 5 || cfg.Slice != 3*time.Second || !equal(cfg.Concurrencies, []int{2, 8}) ||
		!equal(cfg.Variants, []string{"bare", "direct"}) || cfg.RateLimit != 100000 {
		t.Errorf("flags: %+v", cfg)
	}
	for _, tc := range []struct {
		args []string
		db   string
		want string
	}{
		{nil, "", "no database"},
		{[]string{"-c", "0"}, "postgres://h/db", "-c"},
		{[]string{"-c", ","}, "postgres://h/db", "-c lists no concurrency"},
		{[]string{"-variants", "get,post"}, "postgres://h/db", "unknown variant"},
		{[]string{"-variants", "get,get"}, "postgres://h/db", "twice"},
		{[]string{"-rate-limit", "0"}, "postgres://h/db", "-rate-limit"},
		{[]string{"-duration", "0s"}, "postgres://h/db", "-duration"},
		{[]string{"-slice", "0s"}, "postgres://h/db", "-slice"},
		{[]string{"-n", "0"}, "postgres://h/db", "-n"},
		{[]string{"extra"}, "postgres://h/db", "unexpected arguments"},
		{[]string{"-stores", "postgres"}, "", "no database"},
		{[]string{"-stores", "sqlite,mysql"}, "postgres://h/db", "unknown store"},
		{[]string{"-stores", "sqlite,sqlite"}, "postgres://h/db", "twice"},
		{[]string{"-stores", ""}, "postgres://h/db", "no store"},
		{[]string{"-gomaxprocs", "0"}, "postgres://h/db", "-gomaxprocs"},
		{[]string{"-gomaxprocs", "2,2"}, "postgres://h/db", "twice"},
		{[]string{"-cold-starts", "-1"}, "postgres://h/db", "-cold-starts"},
		{[]string{"-data-dir", ""}, "postgres://h/db", "-data-dir"},
	} {
		_, err := parseFlags(tc.args, env(tc.db))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseFlags(%q, %q) = %v, want an error with %q", tc.args, tc.db, err, tc.want)
		}
	}
}

// env is a getenv with TEST_DATABASE_URL set to db.
func env(db string) func(string) string {
	return func(k string) string {
		if k == "TEST_DATABASE_URL" {
			return db
		}
		return ""
	}
}

func equal[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// The requests are the ones @nangohq/node@0.71.10 sends (captured from the
// client talking to a TCP socket), for the connection asked for.
func TestVariantRequests(t *testing.T) {
	t.Parallel()
	vs := variants("127.0.0.1:3003", "127.0.0.1:4004", "127.0.0.1:5005", "sk_test", "salt")
	read := func(v variant, i int) *http.Request {
		t.Helper()
		b := v.request(nil, i)
		r, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(b)))
		if err != nil {
			t.Fatalf("%s: %q is not an HTTP request: %v", v.name, b, err)
		}
		return r
	}
	r := read(vs["get"], 42)
	if r.Method != "GET" || r.URL.Path != "/connections/user-42" || r.Host != "127.0.0.1:3003" ||
		r.URL.RawQuery != "provider_config_key=api&force_refresh=false&refresh_token=false&refresh_github_app_jwt_token=false" {
		t.Errorf("get: %s %s host %s", r.Method, r.URL, r.Host)
	}
	for k, want := range map[string]string{
		"Authorization": "Bearer sk_test", "Content-Type": "application/json",
		"Accept": "application/json, text/plain, */*", "Accept-Encoding": "gzip, compress, deflate, br",
		"Connection": "keep-alive", "User-Agent": nodeUserAgent,
	} {
		if got := r.Header.Get(k); got != want {
			t.Errorf("get: %s %q, want %q", k, got, want)
		}
	}
	for name, want := range map[string]struct{ path, host string }{
		"proxy":  {"/proxy/user", "127.0.0.1:3003"},
		"bare":   {upstreamPath, "127.0.0.1:4004"},
		"direct": {upstreamPath, "127.0.0.1:5005"},
	} {
		r := read(vs[name], 7)
		if r.URL.Path != want.path || r.Host != want.host {
			t.Errorf("%s: %s host %s, want %s host %s", name, r.URL, r.Host, want.path, want.host)
		}
		h := r.Header
		auth := "Bearer sk_test"
		if name == "direct" {
			auth = "Bearer at_7_salt" // what the proxy sends the upstream
		}
		if h.Get("Connection-Id") != "user-7" || h.Get("Provider-Config-Key") != "api" || h.Get("Authorization") != auth ||
			h.Get("User-Agent") != nodeUserAgent || h.Get("Content-Type") != "" {
			t.Errorf("%s: headers %v", name, h)
		}
		for _, k := range []string{"Base-Url-Override", "Nango-Activity-Log-Id"} {
			if v, ok := h[k]; !ok || len(v) != 1 || v[0] != "" {
				t.Errorf("%s: %s %q, want present and empty", name, k, v)
			}
		}
	}
	if vs["get"].addr != "127.0.0.1:3003" || vs["bare"].addr != "127.0.0.1:4004" || vs["direct"].addr != "127.0.0.1:5005" {
		t.Errorf("addresses: %+v", vs)
	}

	// The checks accept the expected answer only.
	if err := vs["get"].check(3, 200, []byte(`{"credentials":{"type":"OAUTH2","access_token":"at_3_salt"}}`)); err != nil {
		t.Errorf("get check refused its connection's token: %v", err)
	}
	for _, tc := range []struct {
		status int
		body   string
	}{{200, `{"credentials":{"access_token":"at_4_salt"}}`}, {200, `{"access_token":"at_33_salt"}`}, {500, `{"access_token":"at_3_salt"}`}} {
		if err := vs["get"].check(3, tc.status, []byte(tc.body)); err == nil {
			t.Errorf("get check accepted %d %s for connection 3", tc.status, tc.body)
		}
	}
	if err := vs["proxy"].check(0, 200, upstreamBody); err != nil {
		t.Errorf("proxy check refused the upstream's body: %v", err)
	}
	if err := vs["proxy"].check(0, 200, upstreamBody[1:]); err == nil {
		t.Error("proxy check accepted a truncated body")
	}
}

func TestUpstreamRefusesTheAPIKey(t *testing.T) {
	t.Parallel()
	h := upstreamHandler("sk_test")
	for _, tc := range []struct {
		path, auth string
		want       int
	}{
		{upstreamPath, "Bearer at_1_x", 200},
		{upstreamPath, "", 401},
		{upstreamPath, "Bearer sk_test", 403},
		{"/api/other", "Bearer at_1_x", 404},
	} {
		r, _ := http.NewRequest("GET", "http://upstream"+tc.path, nil)
		if tc.auth != "" {
			r.Header.Set("Authorization", tc.auth)
		}
		w := &recorder{header: http.Header{}}
		h.ServeHTTP(w, r)
		if w.status != tc.want {
			t.Errorf("%s with %q: %d, want %d", tc.path, tc.auth, w.status, tc.want)
		}
		if tc.want == 200 && !bytes.Equal(w.body.Bytes(), upstreamBody) {
			t.Errorf("body %q", w.body.Bytes())
		}
	}
}

type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) WriteHeader(s int) {
	if r.status == 0 {
		r.status = s
	}
}
func (r *recorder) Write(b []byte) (int, error) {
	r.WriteHeader(200)
	return r.body.Write(b)
}

func TestSummarize(t *testing.T) {
	t.Parallel()
	run := func(round int, v string, c int, rps, p99 float64, sessions int64) runResult {
		r := runResult{Round: round, Variant: v, Concurrency: c, ReqPerSec: rps, P99Ms: p99, P50Ms: p99 / 10,
			PGNewSessions: sessions, CPUPerReqUs: map[string]float64{"server": rps / 100}}
		if v != "bare" {
			r.Server, r.Store = "postgres", "postgres"
		}
		return r
	}
	rep := &report{Config: config{Concurrencies: []int{1, 64}, Variants: []string{"get", "proxy", "bare"}, Rounds: 3}}
	// Out of order, as a reader of JSON might build it; the ratios pair
	// the proxy and bare runs of the same round.
	rep.Runs = []runResult{
		run(2, "proxy", 64, 900, 20, 0), run(1, "proxy", 64, 800, 40, 0), run(3, "proxy", 64, 1000, 10, 0),
		run(1, "bare", 64, 1000, 10, 0), run(2, "bare", 64, 1000, 10, 0), run(3, "bare", 64, 1000, 10, 0),
		run(1, "get", 64, 500, 50, 0), run(2, "get", 64, 600, 50, 3), run(3, "get", 64, 700, 50, 0),
		run(1, "proxy", 1, 100, 1, 0), run(1, "bare", 1, 200, 1, 0), run(1, "get", 1, 300, 1, 0),
	}
	rep.summarize()
	if len(rep.Summary) != 6 {
		t.Fatalf("%d summary rows, want 6: %+v", len(rep.Summary), rep.Summary)
	}
	var proxy64 summaryRow
	for _, s := range rep.Summary {
		if s.Concurrency == 64 && s.Variant == "proxy" {
			proxy64 = s
		}
	}
	if proxy64.ReqPerSec != (spread{900, 800, 1000}) || proxy64.P99Ms != (spread{20, 10, 40}) || proxy64.Rounds != 3 ||
		proxy64.CPUPerReqUs["server"] != (spread{9, 8, 10}) {
		t.Errorf("proxy at c=64: %+v", proxy64)
	}
	if len(rep.Ratios) != 2 || rep.Ratios[1].Concurrency != 64 ||
		rep.Ratios[1].Throughput != (spread{0.9, 0.8, 1}) || rep.Ratios[1].P99 != (spread{2, 1, 4}) {
		t.Errorf("ratios: %+v", rep.Ratios)
	}
	if len(rep.Goals) != 3 {
		t.Fatalf("goals: %+v", rep.Goals)
	}
	for i, want := range []struct {
		item int
		met  bool
	}{{1, false}, {2, false}, {3, true}} {
		if g := rep.Goals[i]; g.Item != want.item || g.Met != want.met {
			t.Errorf("goal %d: %+v, want item %d met %v", i, g, want.item, want.met)
		}
	}
	if !strings.Contains(rep.Goals[0].Figure, "get 3") {
		t.Errorf("item 1 figure %q does not name the run that opened sessions", rep.Goals[0].Figure)
	}
	var out bytes.Buffer
	rep.print(&out)
	for _, want := range []string{"c=64: proxy/bare throughput 0.90 [0.80–1.00], proxy p99 / bare p99 2.00 [1.00–4.00]", "item 3", "NOT met"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the summary lacks %q:\n%s", want, out.String())
		}
	}
}

// The summary compares the stores round by round, and each store's
// servers of different GOMAXPROCS values.
func TestSummarizeStores(t *testing.T) {
	t.Parallel()
	run := func(round int, store string, procs int, v string, rps, p99 float64) runResult {
		r := runResult{Round: round, Variant: v, Concurrency: 64, ReqPerSec: rps, P99Ms: p99, P50Ms: p99 / 10,
			CPUPerReqUs: map[string]float64{"server": 1}, PGNewSessions: -1}
		if store != "" {
			r.Server, r.Store, r.GoMaxProcs = fmt.Sprintf("%s-p%d", store, procs), store, procs
		}
		return r
	}
	rep := &report{Config: config{Concurrencies: []int{64}, Variants: []string{"get", "proxy", "bare"}, Rounds: 2,
		Stores: []string{"sqlite", "postgres"}, GoMaxProcs: []int{1, 2}, Connections: 100}}
	for round := 1; round <= 2; round++ {
		f := float64(round)
		rep.Runs = append(rep.Runs,
			run(round, "sqlite", 1, "get", 500*f, 4), run(round, "sqlite", 2, "get", 900*f, 2),
			run(round, "postgres", 1, "get", 1000*f, 2), run(round, "postgres", 2, "get", 1000*f, 1),
			run(round, "sqlite", 1, "proxy", 1000, 1), run(round, "sqlite", 2, "proxy", 1000, 1),
			run(round, "postgres", 1, "proxy", 1000, 1), run(round, "postgres", 2, "proxy", 1000*f, 1),
			run(round, "", 0, "bare", 1000, 1))
	}
	rep.Seeds = []seedReport{{Store: "sqlite", Connections: 100, PerSecond: 400}, {Store: "postgres", Connections: 100, PerSecond: 1000}}
	rep.ColdStarts = []coldStartReport{{Store: "sqlite", EmptyMs: []float64{30, 10, 20}, WithDataMs: []float64{5}}}
	rep.Instances = []instanceReport{{Label: "sqlite-p1", Idle: memStats{RSSKiB: 2048, HWMKiB: 4096}, AfterLoad: memStats{RSSKiB: 3072, HWMKiB: 5120}, PGSessions: -1}}
	rep.summarize()

	var ratios []string
	for _, s := range rep.Stores {
		ratios = append(ratios, fmt.Sprintf("p%d %s %.2f-%.2f", s.GoMaxProcs, s.Variant, s.Throughput.Min, s.Throughput.Max))
	}
	if want := []string{"p1 get 0.50-0.50", "p1 proxy 1.00-1.00", "p2 get 0.90-0.90", "p2 proxy 0.50-1.00"}; !equal(ratios, want) {
		t.Errorf("store ratios %q, want %q", ratios, want)
	}
	var scaling []string
	for _, s := range rep.Scaling {
		scaling = append(scaling, fmt.Sprintf("%s %s %.0f %.0f %.2f", s.Store, s.Variant, s.ReqPerSec[0].Value.Median, s.ReqPerSec[1].Value.Median, s.Ratios[0].Value.Median))
	}
	if want := []string{"sqlite get 750 1350 1.80", "sqlite proxy 1000 1000 1.00", "postgres get 1500 1500 1.00", "postgres proxy 1000 1500 1.50"}; !equal(scaling, want) {
		t.Errorf("scaling %q, want %q", scaling, want)
	}
	var goals []string
	for _, g := range rep.Goals {
		if g.Issue == 26 {
			goals = append(goals, fmt.Sprintf("%s %v", g.Server, g.Met))
		}
	}
	// get and proxy of each GOMAXPROCS value, then the import (0.4).
	if want := []string{"sqlite-p1 false", "sqlite-p1 true", "sqlite-p2 true", "sqlite-p2 false", " false"}; !equal(goals, want) {
		t.Errorf("issue 26 goals %q, want %q", goals, want)
	}
	var out bytes.Buffer
	rep.print(&out)
	for _, want := range []string{
		"GOMAXPROCS=1 c=64 get   req/s 0.50 [0.50–0.50], p99 2.00 [2.00–2.00]",
		"sqlite   get   c=64  1: 750 [500–1000]; 2: 1350 [900–1800]; 2/1 1.80 [1.80–1.80]",
		"sqlite 100 in 0.0 s, 400/s",
		"sqlite empty 20.0 [10.0–30.0], with 100 connections 5.00 [5.00–5.00]",
		"sqlite-p1   idle 2.0 / 4.0, after the load 3.0 / 5.0",
		"issue 26 item 4, bulk import of 100 connections on SQLite at least half as fast as on Postgres: NOT met (400/s against 1000/s, ratio 0.40)",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the summary lacks %q:\n%s", want, out.String())
		}
	}
}
