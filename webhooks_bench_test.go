package connect_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/egress"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/internal/pgtest"
	"github.com/embedauth/connect/store/postgres"
	"github.com/embedauth/connect/store/sqlite"
	"github.com/embedauth/connect/webhooks"
)

// benchWorkers is the number of goroutines of the concurrent baseline.
const benchWorkers = 10

// BenchmarkWebhookOutbox measures webhook deliveries per second through the
// outbox of each store (sub-benchmarks sqlite, a file in b.TempDir() with
// the production defaults, synchronous FULL, and postgres, one after the
// other; when both ran it prints SQLite's rates divided by Postgres's):
// each event committed in its own transaction with its River delivery
// job, then delivered (claimed from the outbox, signed, POSTed, the
// attempt recorded with its log entry) to a loopback receiver, in the
// same run as two baselines that only sign and POST the same payloads to
// the same receiver: one loop (the baseline of the goal), and
// benchWorkers loops side by side. It prints both ratios; the goal is an
// outbox at least half as fast as the loop.
//
//	TEST_DATABASE_URL=... go test -run '^$' -bench BenchmarkWebhookOutbox -benchtime 8000x .
func BenchmarkWebhookOutbox(b *testing.B) {
	benchEachStore(b, "webhook outbox", benchmarkWebhookOutbox, "outbox-deliveries/s", "baseline-loop/s")
}

// benchmarkWebhookOutbox is BenchmarkWebhookOutbox on one store; it
// records its rates in figs.
func benchmarkWebhookOutbox(b *testing.B, store string, figs storeFigures) {
	ctx := context.Background()
	var cfg connect.Config
	var withTx func(ctx context.Context, fn func(ctx context.Context) error) error
	switch store {
	case "postgres":
		db, schema := pgtest.Schema(b)
		st, sched := openBenchPostgres(b, db, schema, postgres.SchedulerConfig{FetchPollInterval: 20 * time.Millisecond})
		cfg.Store, cfg.Scheduler, withTx = st, sched, st.WithTx
	case "sqlite":
		st, sched := openBenchSQLite(b, sqlite.SchedulerConfig{FetchPollInterval: 20 * time.Millisecond})
		cfg.Store, cfg.Scheduler, withTx = st, sched, st.WithTx
	}

	var received atomic.Int64
	var mu sync.Mutex
	var done chan struct{}
	var want int64
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.Header.Get(webhooks.HeaderHMAC) == "" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		if n := received.Add(1); n == want {
			mu.Lock()
			close(done)
			mu.Unlock()
		}
	}))
	b.Cleanup(receiver.Close)

	cfg.EncryptionKeys, cfg.RateLimitRequests = []connect.EncryptionKey{testKey}, -1
	cfg.Webhooks = webhooks.DeliveryConfig{Policy: egress.Policy{AllowLoopback: true}} // the receiver is on 127.0.0.1
	svc, err := connect.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	env, err := svc.Environments().Create(ctx, environments.CreateInput{Name: "bench", WebhookURLs: []string{receiver.URL}})
	if err != nil {
		b.Fatal(err)
	}
	key, err := svc.Environments().WebhookSigningKey(env)
	if err != nil {
		b.Fatal(err)
	}
	if err := svc.Start(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		svc.Stop(sctx)
	})

	event := func(i int) webhooks.Event {
		id := fmt.Sprintf("conn-%d", i)
		return webhooks.Event{EnvironmentID: env.ID, IntegrationKey: "github", ConnectionID: id, Type: webhooks.TypeAuth,
			Operation: webhooks.OperationCreation, Payload: &webhooks.AuthPayload{ConnectionID: id, AuthMode: "OAUTH2",
				ProviderConfigKey: "github", Provider: "github", Environment: "bench", Operation: "creation", Success: true,
				Tags: map[string]string{"end_user_id": "u" + id}}}
	}
	reset := func(n int) {
		mu.Lock()
		received.Store(0)
		want = int64(n)
		done = make(chan struct{})
		mu.Unlock()
	}
	wait := func() {
		select {
		case <-done:
		case <-time.After(5 * time.Minute):
			b.Fatalf("only %d of %d webhooks arrived", received.Load(), want)
		}
	}

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: benchWorkers}}
	post := func(i int) {
		body, err := webhooks.Canonical(event(i).Payload)
		if err != nil {
			b.Fatal(err)
		}
		req, _ := http.NewRequest(http.MethodPost, receiver.URL, bytes.NewReader(body))
		req.Header = webhooks.Sign(key, body, fmt.Sprintf("bench-%d", i), time.Now())
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	baseline := func(n, workers int) time.Duration {
		reset(n)
		start := time.Now()
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < n; i += workers {
					post(i)
				}
			}()
		}
		wg.Wait()
		wait()
		return time.Since(start)
	}
	// outbox fills the outbox with n events while the workers are
	// stopped, each committed in its own transaction as a change would,
	// then starts the workers and measures from the first arrival to the
	// last: the rate at which the outbox drains.
	outbox := func(n int) time.Duration {
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := svc.Stop(sctx); err != nil {
			b.Fatal(err)
		}
		reset(n)
		var fill sync.WaitGroup
		for w := range benchWorkers {
			fill.Go(func() {
				for i := w; i < n; i += benchWorkers {
					if err := withTx(ctx, func(ctx context.Context) error { return svc.Notify(ctx, event(i)) }); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		fill.Wait()
		if b.Failed() {
			b.FailNow()
		}
		if err := svc.Start(ctx); err != nil {
			b.Fatal(err)
		}
		for received.Load() == 0 {
			time.Sleep(time.Millisecond)
		}
		start := time.Now()
		wait()
		return time.Since(start) * time.Duration(n) / time.Duration(n-1)
	}

	n := max(b.N, 50)
	outbox(50) // warm up the pools, prepared statements and River's producers
	baseline(50, benchWorkers)
	b.ResetTimer()
	serial := baseline(n, 1)
	concurrent := baseline(n, benchWorkers)
	ob := outbox(n)
	b.StopTimer()
	rate := func(d time.Duration) float64 { return float64(n) / d.Seconds() }
	b.ReportMetric(rate(ob), "outbox-deliveries/s")
	b.ReportMetric(rate(serial), "baseline-loop/s")
	b.ReportMetric(rate(concurrent), "baseline-concurrent/s")
	b.ReportMetric(rate(ob)/rate(serial), "ratio-vs-loop")
	b.ReportMetric(rate(ob)/rate(concurrent), "ratio-vs-concurrent")
	figs.set(store, "outbox-deliveries/s", rate(ob))
	figs.set(store, "baseline-loop/s", rate(serial))
	if b.N < 2 { // the probe run: 50 events, drained in one claim
		return
	}
	fmt.Printf("webhooks on %s: outbox %.0f/s, baseline loop %.0f/s (ratio %.2f), baseline x%d %.0f/s (ratio %.2f); goal >= 0.5 (n=%d)\n",
		store, rate(ob), rate(serial), rate(ob)/rate(serial), benchWorkers, rate(concurrent), rate(ob)/rate(concurrent), n)
}
