package connect_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/internal/pgtest"
	"github.com/embedauth/connect/proxy"
	"github.com/embedauth/connect/store/postgres"
)

// Settings of BenchmarkProxy.
const (
	proxyBenchConnections = 500
	proxyBenchWorkers     = 8       // requests in flight
	proxyBenchBlock       = 500     // requests per variant per interleaved block
	proxyBenchStream      = 1 << 30 // bytes of the streaming run
)

// BenchmarkProxy compares, in one run and against the same loopback
// upstream (a handler answering a 99-byte JSON body), the throughput of
//
//   - bare: an httputil.ReverseProxy whose Rewrite sets the upstream URL
//     and adds a fixed Authorization header, the floor of any credential
//     injecting proxy (with a pooled copy buffer, as the proxy has);
//   - proxy: svc.Handler() on Postgres, as @nangohq/node's get() calls it
//     (API key, Connection-Id, Provider-Config-Key, Base-Url-Override and
//     Nango-Activity-Log-Id empty), of a started Service with its defaults,
//     as the reference server runs it: authentication, the connection's
//     credentials from the Store (cached, following the change feed, for
//     up to Config.ProxyCacheMaxAge), the base URL template, the injected
//     bearer token;
//   - proxy_ttl: the same through a Service that is not started, so that
//     it does not follow the change feed and reads every connection in use
//     again every Config.ProxyCacheTTL (the default 5 s, so once or twice
//     in a run);
//   - proxy_nocache: the same with ProxyCacheTTL -1, so that every request
//     reads and decrypts its connection from Postgres;
//   - proxy_signed: the proxy (started) for a provider whose headers are
//     computed for each request (a sha256Hex signature over the method,
//     path and a credential, a date, a random request id).
//
// The sub-benchmarks bare, proxy, proxy_ttl, proxy_nocache and
// proxy_signed run one variant each (for profiles); throughput runs the
// five interleaved, in an order drawn anew for each block, and compares
// them.
// The client sends all of them the same request (the bare proxy forwards
// every header of it, as a bare reverse proxy does). Each goes through its
// own httptest server and a keep-alive client with
// proxyBenchWorkers requests in flight, each request for a random one of
// proxyBenchConnections connections. The five run interleaved in blocks
// so that they share the machine's load; b.N is the number of requests of
// each. It reports bare-req/s, proxy-req/s, ratio (proxy / bare, the goal
// is at least 0.9), ttl-req/s, ttl-ratio, nocache-req/s, nocache-ratio,
// signed-req/s and signed-ratio (the goal is at least 0.85), and the CPU
// per request.
//
// stream_1GiB streams 1 GiB from the upstream through the proxy with a
// constant-size buffer on each side, and reports the largest heap growth
// seen while it streamed (goal: at most 32 MiB), sampled every 5 ms.
//
//	TEST_DATABASE_URL='postgres://postgres@127.0.0.1:5432/test?sslmode=disable' \
//		go test -run '^$' -bench 'BenchmarkProxy/(throughput|stream_1GiB)' -benchtime 40000x .
func BenchmarkProxy(b *testing.B) {
	f := newProxyBench(b)
	for _, v := range []struct {
		name string
		do   func(i int) error
	}{{"bare", f.bare}, {"proxy", f.proxy(f.cached)}, {"proxy_ttl", f.proxy(f.ttl)}, {"proxy_nocache", f.proxy(f.uncached)}, {"proxy_signed", f.signed}} {
		b.Run(v.name, func(b *testing.B) {
			b.ReportAllocs()
			d, err := runConcurrent(b.N, proxyBenchWorkers, v.do)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/d.Seconds(), "req/s")
		})
	}
	b.Run("throughput", func(b *testing.B) {
		variants := []struct {
			name string
			do   func(i int) error
		}{
			{"bare", f.bare},
			{"proxy", f.proxy(f.cached)},
			{"proxy_ttl", f.proxy(f.ttl)},
			{"proxy_nocache", f.proxy(f.uncached)},
			{"proxy_signed", f.signed},
		}
		// Warm-up, not measured: connection pools, and the proxy's cache
		// (which a long run refills every ProxyCacheTTL anyway).
		for _, v := range variants {
			if _, err := runConcurrent(proxyBenchConnections, proxyBenchWorkers, v.do); err != nil {
				b.Fatalf("%s: %v", v.name, err)
			}
		}
		spent := make([]time.Duration, len(variants))
		cpu := make([]time.Duration, len(variants))
		// The order of the variants changes from block to block (a
		// permutation drawn from a fixed seed): a variant that always ran
		// right after proxy_nocache (whose Postgres reads and garbage
		// leave work behind) would always pay for it.
		order := rand.New(rand.NewPCG(1, 2))
		b.ResetTimer()
		for start := 0; start < b.N; start += proxyBenchBlock {
			n := min(proxyBenchBlock, b.N-start)
			for _, k := range order.Perm(len(variants)) {
				v := variants[k]
				c0 := processCPU()
				d, err := runConcurrent(n, proxyBenchWorkers, v.do)
				if err != nil {
					b.Fatalf("%s: %v", v.name, err)
				}
				spent[k] += d
				cpu[k] += processCPU() - c0
			}
		}
		b.StopTimer()
		perReq := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(b.N) }
		b.ReportMetric(perReq(cpu[0]), "bare-cpu-µs/req")
		b.ReportMetric(perReq(cpu[1]), "proxy-cpu-µs/req")
		b.ReportMetric(perReq(cpu[4]), "signed-cpu-µs/req")
		rate := func(d time.Duration) float64 { return float64(b.N) / d.Seconds() }
		bare, prox, ttl, nocache := rate(spent[0]), rate(spent[1]), rate(spent[2]), rate(spent[3])
		b.ReportMetric(bare, "bare-req/s")
		b.ReportMetric(prox, "proxy-req/s")
		b.ReportMetric(prox/bare, "ratio")
		b.ReportMetric(ttl, "ttl-req/s")
		b.ReportMetric(ttl/bare, "ttl-ratio")
		b.ReportMetric(nocache, "nocache-req/s")
		b.ReportMetric(nocache/bare, "nocache-ratio")
		signed := rate(spent[4])
		b.ReportMetric(signed, "signed-req/s")
		b.ReportMetric(signed/bare, "signed-ratio")
		if b.N >= proxyBenchBlock {
			fmt.Printf("proxy throughput (%d in flight, N=%d each): bare ReverseProxy %.0f req/s, proxy %.0f req/s, ratio %.2f (goal >= 0.9); "+
				"with headers computed per request (sha256Hex, now, random) %.0f req/s, ratio %.2f (goal >= 0.85); "+
				"Service not started (cache on ProxyCacheTTL only) %.0f req/s, ratio %.2f; without the connection cache %.0f req/s, ratio %.2f\n",
				proxyBenchWorkers, b.N, bare, prox, prox/bare, signed, signed/bare, ttl, ttl/bare, nocache, nocache/bare)
			fmt.Printf("CPU of this process per request (client, proxies and upstream together; Postgres not counted): bare %.1f µs, proxy %.1f µs, proxy_ttl %.1f µs, proxy_nocache %.1f µs, proxy_signed %.1f µs; upstream connections opened so far: %d\n",
				perReq(cpu[0]), perReq(cpu[1]), perReq(cpu[2]), perReq(cpu[3]), perReq(cpu[4]), upstreamConns.Load())
		}
	})
	b.Run("stream_1GiB", func(b *testing.B) {
		for range min(b.N, 1) { // one 1 GiB stream per run, whatever -benchtime says
			for _, v := range []struct {
				name string
				url  string
				hdr  http.Header
			}{
				{"bare", f.bareURL + "/big", nil},
				{"proxy", f.cachedURL + "/proxy/big", f.authed(0, f.cached)},
			} {
				growth, took, err := streamHeapGrowth(f.client, v.url, v.hdr)
				if err != nil {
					b.Fatalf("%s: %v", v.name, err)
				}
				b.ReportMetric(float64(growth)/(1<<20), v.name+"-heap-MiB")
				fmt.Printf("stream 1 GiB through %s: heap growth %.1f MiB (goal <= 32), %.0f MiB/s\n",
					v.name, float64(growth)/(1<<20), float64(proxyBenchStream)/(1<<20)/took.Seconds())
			}
		}
	})
}

var upstreamConns atomic.Int64

type proxyBench struct {
	client    *http.Client
	bareURL   string
	cachedURL string
	ttlURL    string
	nocache   string
	cached    string // API keys of the three Services
	ttl       string
	uncached  string
}

func newProxyBench(b *testing.B) *proxyBench {
	b.Helper()
	ctx := context.Background()
	body := []byte(`{"id":12345,"login":"octocat","type":"User","site_admin":false,"name":"The Octocat","plan":"free"}` + "\n")
	chunk := make([]byte, 256<<10)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/big" || r.URL.Path == "/api/big" {
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Header().Set("Content-Length", strconv.Itoa(proxyBenchStream))
			for sent := 0; sent < proxyBenchStream; sent += len(chunk) {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
			return
		}
		if r.Header.Get("Authorization") == "" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if strings.HasPrefix(r.URL.Path, "/signed/") && (len(r.Header.Get("X-Sig")) != 64 || r.Header.Get("X-Date") == "" || len(r.Header.Get("X-Request-Id")) != 36) {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.Write(body)
	}))
	b.Cleanup(upstream.Close)
	upstream.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			upstreamConns.Add(1)
		}
	}
	target, _ := url.Parse(upstream.URL)

	upTransport := http.DefaultTransport.(*http.Transport).Clone()
	upTransport.MaxIdleConnsPerHost = 256
	upTransport.DisableCompression = true
	bare := httptest.NewServer(&httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Header.Set("Authorization", "Bearer gho_fixed_token_for_the_baseline_0000")
		},
		Transport:  upTransport,
		BufferPool: benchBufferPool{}, // as the proxy does: no 32 KiB allocation per request
	})
	b.Cleanup(bare.Close)

	db, schema := pgtest.Schema(b)
	opts := &postgres.Options{Schema: schema}
	if err := postgres.Migrate(ctx, db, opts); err != nil {
		b.Fatal(err)
	}
	st, err := postgres.New(db, opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close() })
	base, err := integrations.DefaultCatalog()
	if err != nil {
		b.Fatal(err)
	}
	cat, err := base.With(&integrations.Provider{Name: "bench-api", DisplayName: "Bench API", AuthMode: integrations.AuthModeOAuth2,
		AuthorizationURL: "https://example.com/authorize", TokenURL: "https://example.com/token",
		ConnectionConfig: map[string]integrations.FieldSpec{"path": {Type: "string", Title: "Path"}},
		Proxy:            &integrations.Proxy{BaseURL: upstream.URL + "/${connectionConfig.path}"}},
		// Headers computed for each request: a signature over the method,
		// path and a credential, a date and a request id.
		&integrations.Provider{Name: "bench-signed", DisplayName: "Bench signed API", AuthMode: integrations.AuthModeOAuth2,
			AuthorizationURL: "https://example.com/authorize", TokenURL: "https://example.com/token",
			Credentials: map[string]integrations.FieldSpec{"secret": {Type: "string"}},
			Proxy: &integrations.Proxy{BaseURL: upstream.URL + "/signed", Headers: map[string]string{
				"X-Sig":        "${sha256Hex(${method}${path}${credentials.secret})}",
				"X-Date":       "${now:ddd, DD MMM YYYY HH:mm:ss ZZ}",
				"X-Request-Id": "${random}",
			}}})
	if err != nil {
		b.Fatal(err)
	}
	f := &proxyBench{bareURL: bare.URL}
	for i, v := range []struct {
		ttl   time.Duration
		start bool // as the reference server does: the cache follows the change feed
		url   *string
		key   *string
	}{{0, true, &f.cachedURL, &f.cached}, {0, false, &f.ttlURL, &f.ttl}, {-1, false, &f.nocache, &f.uncached}} {
		sched, err := postgres.NewScheduler(db, opts, postgres.SchedulerConfig{})
		if err != nil {
			b.Fatal(err)
		}
		svc, err := connect.New(connect.Config{Store: st, EncryptionKeys: []connect.EncryptionKey{testKey},
			RateLimitRequests: -1, Scheduler: sched, Providers: cat, ProxyCacheTTL: v.ttl,
			Proxy: connectProxyConfig()})
		if err != nil {
			b.Fatal(err)
		}
		name := "bench-" + strconv.Itoa(i)
		env, err := svc.Environments().Create(ctx, environments.CreateInput{Name: name})
		if err != nil {
			b.Fatal(err)
		}
		key, _, err := svc.Environments().CreateAPIKey(ctx, env.ID, environments.NewAPIKey{Name: "bench", Scopes: []string{environments.ScopeAll}})
		if err != nil {
			b.Fatal(err)
		}
		for _, in := range [][2]string{{"bench-api", "api"}, {"bench-signed", "signed"}} {
			if _, err := svc.Integrations().Create(ctx, env.ID, integrations.CreateInput{Provider: in[0], UniqueKey: in[1],
				Credentials: &integrations.Credentials{Type: "OAUTH2", ClientID: "cid", ClientSecret: "csecret"}}); err != nil {
				b.Fatal(err)
			}
			seedProxyConnections(b, svc, env.ID, in[1])
		}
		if v.start {
			if err := svc.Start(ctx); err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = svc.Stop(context.Background()) })
		}
		srv := httptest.NewServer(svc.Handler())
		b.Cleanup(srv.Close)
		*v.url, *v.key = srv.URL, key
	}
	ct := http.DefaultTransport.(*http.Transport).Clone()
	ct.MaxIdleConnsPerHost = 4 * proxyBenchWorkers
	ct.DisableCompression = true
	f.client = &http.Client{Transport: ct}
	return f
}

func seedProxyConnections(b *testing.B, svc *connect.Service, envID int64, integration string) {
	b.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, proxyBenchConnections)
	next := make(chan int)
	for range 4 {
		wg.Go(func() {
			for i := range next {
				at := fmt.Sprintf("gho_access_token_%04d_xxxxxxxxxxxxxxxxxxxx", i)
				_, _, err := svc.Connections().Import(context.Background(), envID, connections.ImportInput{
					ProviderConfigKey: integration, ConnectionID: "user-" + strconv.Itoa(i), AccessToken: at,
					RefreshToken: "ghr_refresh_" + strconv.Itoa(i), NoExpiration: true,
					Raw:              map[string]any{"secret": "bench_secret_" + strconv.Itoa(i)},
					ConnectionConfig: map[string]any{"path": "api"},
				})
				if err != nil {
					errs <- err
				}
			}
		})
	}
	for i := range proxyBenchConnections {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
}

func connectProxyConfig() proxy.Config {
	return proxy.Config{Policy: proxy.Policy{AllowLoopback: true}}
}

// headers are the headers @nangohq/node's get() sends for connection i.
func (f *proxyBench) headers(i int) http.Header {
	return f.headersOf(i, "api")
}

func (f *proxyBench) headersOf(i int, integration string) http.Header {
	return http.Header{
		"Connection-Id":         {"user-" + strconv.Itoa(i)},
		"Provider-Config-Key":   {integration},
		"Base-Url-Override":     {""},
		"Nango-Activity-Log-Id": {""},
		"Accept":                {"application/json, text/plain, */*"},
		"User-Agent":            {"nango-node-client/0.71.10 (linux/6; node.js/20)"},
	}
}

func (f *proxyBench) authed(i int, key string) http.Header {
	h := f.headers(i)
	h.Set("Authorization", "Bearer "+key)
	return h
}

// bare sends the bare proxy the same request as the proxy gets, so that
// both parse the same bytes.
func (f *proxyBench) bare(int) error {
	return f.get(f.bareURL+"/api/user", f.authed(rand.IntN(proxyBenchConnections), f.cached))
}

func (f *proxyBench) proxy(key string) func(i int) error {
	u := map[string]string{f.cached: f.cachedURL, f.ttl: f.ttlURL, f.uncached: f.nocache}[key]
	return func(int) error {
		return f.get(u+"/proxy/user", f.authed(rand.IntN(proxyBenchConnections), key))
	}
}

// signed calls the provider whose headers are computed per request
// (through the cached service).
func (f *proxyBench) signed(int) error {
	h := f.headersOf(rand.IntN(proxyBenchConnections), "signed")
	h.Set("Authorization", "Bearer "+f.cached)
	return f.get(f.cachedURL+"/proxy/user", h)
}

func (f *proxyBench) get(u string, h http.Header) error {
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header = h
	resp, err := f.client.Do(req)
	if err != nil {
		return err
	}
	n, _ := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || n != 99 {
		return fmt.Errorf("GET %s: %d with %d bytes", u, resp.StatusCode, n)
	}
	return nil
}

// runConcurrent makes n calls of do with workers in flight and returns the
// time it took.
func runConcurrent(n, workers int, do func(i int) error) (time.Duration, error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	var first atomic.Pointer[error]
	start := time.Now()
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n || first.Load() != nil {
					return
				}
				if err := do(i); err != nil {
					first.CompareAndSwap(nil, &err)
					return
				}
			}
		})
	}
	wg.Wait()
	if p := first.Load(); p != nil {
		return 0, *p
	}
	return time.Since(start), nil
}

// streamHeapGrowth downloads u to io.Discard and returns the largest heap
// growth over the heap before it started, sampled every 5 ms.
func streamHeapGrowth(client *http.Client, u string, h http.Header) (uint64, time.Duration, error) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	before := ms.HeapAlloc
	var peak atomic.Uint64
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		var m runtime.MemStats
		for {
			select {
			case <-done:
				return
			case <-t.C:
				runtime.ReadMemStats(&m)
				if m.HeapAlloc > peak.Load() {
					peak.Store(m.HeapAlloc)
				}
			}
		}
	}()
	start := time.Now()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	if h != nil {
		req.Header = h
	}
	resp, err := client.Do(req)
	var n int64
	if err == nil {
		buf := make([]byte, 64<<10)
		n, err = io.CopyBuffer(io.Discard, resp.Body, buf)
		resp.Body.Close()
		if err == nil && (resp.StatusCode != 200 || n != proxyBenchStream) {
			err = fmt.Errorf("status %d, %d bytes", resp.StatusCode, n)
		}
	}
	took := time.Since(start)
	close(done)
	<-sampled
	if p := peak.Load(); p > before {
		return p - before, took, err
	}
	return 0, took, err
}

type benchBufferPool struct{}

var benchBuffers = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

func (benchBufferPool) Get() []byte  { return *(benchBuffers.Get().(*[]byte)) }
func (benchBufferPool) Put(b []byte) { benchBuffers.Put(&b) }

// processCPU is the user and system CPU time of this process so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkProxyHandlerOverhead measures the proxy's own work without a
// network (go test -run '^$' -bench BenchmarkProxyHandlerOverhead .): svc.Handler() with a Transport that answers at once, against an
// httputil.ReverseProxy that adds a fixed header, with the same Transport
// and the same request, served in process; proxy_signed is the proxy for
// a provider whose headers are computed per request (as BenchmarkProxy's). The connection comes from the
// proxy's cache after the first call (SQLite in memory).
func BenchmarkProxyHandlerOverhead(b *testing.B) {
	ctx := context.Background()
	body := []byte(`{"id":12345,"login":"octocat"}`)
	stub := roundTripperFunc(func(r *http.Request) (*http.Response, error) {
		if r.Body != nil {
			r.Body.Close()
		}
		return &http.Response{StatusCode: 200, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header:        http.Header{"Content-Type": {"application/json"}, "Content-Length": {strconv.Itoa(len(body))}},
			Body:          io.NopCloser(bytesReader(body)),
			ContentLength: int64(len(body)), Request: r}, nil
	})
	base, _ := integrations.DefaultCatalog()
	cat, err := base.With(&integrations.Provider{Name: "bench-api", DisplayName: "Bench API", AuthMode: integrations.AuthModeOAuth2,
		AuthorizationURL: "https://example.com/authorize", TokenURL: "https://example.com/token",
		Proxy: &integrations.Proxy{BaseURL: "https://api.example.com"}},
		&integrations.Provider{Name: "bench-signed", DisplayName: "Bench signed API", AuthMode: integrations.AuthModeOAuth2,
			AuthorizationURL: "https://example.com/authorize", TokenURL: "https://example.com/token",
			Credentials: map[string]integrations.FieldSpec{"secret": {Type: "string"}},
			Proxy: &integrations.Proxy{BaseURL: "https://api.example.com", Headers: map[string]string{
				"X-Sig":        "${sha256Hex(${method}${path}${credentials.secret})}",
				"X-Date":       "${now:ddd, DD MMM YYYY HH:mm:ss ZZ}",
				"X-Request-Id": "${random}",
			}}})
	if err != nil {
		b.Fatal(err)
	}
	lite := baseConfig(b)
	svc, err := connect.New(connect.Config{Store: lite.Store, Scheduler: lite.Scheduler, EncryptionKeys: lite.EncryptionKeys,
		RateLimitRequests: -1, Providers: cat, Proxy: proxy.Config{Transport: stub}})
	if err != nil {
		b.Fatal(err)
	}
	env, _ := svc.Environments().Create(ctx, environments.CreateInput{Name: "bench"})
	key, _, _ := svc.Environments().CreateAPIKey(ctx, env.ID, environments.NewAPIKey{Name: "bench", Scopes: []string{environments.ScopeAll}})
	for _, k := range []string{"api", "signed"} {
		svc.Integrations().Create(ctx, env.ID, integrations.CreateInput{Provider: "bench-" + k, UniqueKey: k})
		if _, _, err := svc.Connections().Import(ctx, env.ID, connections.ImportInput{ProviderConfigKey: k, ConnectionID: "user-0",
			AccessToken: "gho_token", NoExpiration: true, Raw: map[string]any{"secret": "bench_secret_0"}}); err != nil {
			b.Fatal(err)
		}
	}
	target, _ := url.Parse("https://api.example.com")
	bare := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(target)
		pr.Out.Header.Set("Authorization", "Bearer gho_fixed")
	}, Transport: stub, BufferPool: benchBufferPool{}}
	h := svc.Handler()
	newReq := func(integration string) *http.Request {
		r := httptest.NewRequest("GET", "/proxy/user", nil)
		r.Header = http.Header{
			"Authorization":         {"Bearer " + key},
			"Connection-Id":         {"user-0"},
			"Provider-Config-Key":   {integration},
			"Base-Url-Override":     {""},
			"Nango-Activity-Log-Id": {""},
			"Accept":                {"application/json, text/plain, */*"},
			"User-Agent":            {"nango-node-client/0.71.10 (linux/6; node.js/20)"},
		}
		return r
	}
	for _, v := range []struct {
		name, integration string
		h                 http.Handler
	}{{"bare", "api", bare}, {"proxy", "api", h}, {"proxy_signed", "signed", h}} {
		b.Run(v.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				w := httptest.NewRecorder()
				v.h.ServeHTTP(w, newReq(v.integration))
				if w.Code != 200 {
					b.Fatalf("%d %s", w.Code, w.Body)
				}
			}
		})
	}
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }
