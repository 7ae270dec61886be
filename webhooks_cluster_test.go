package connect_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/egress"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/store/postgres"
	"github.com/embedauth/connect/webhooks"
)

// instance is one process of a fleet on one Postgres schema: its own
// Store, River scheduler and Service.
func instance(t *testing.T, b *backend, workers int) *connect.Service {
	t.Helper()
	opts := &postgres.Options{Schema: b.schema}
	st, err := postgres.New(b.db, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	sched, err := postgres.NewScheduler(b.db, opts, postgres.SchedulerConfig{Workers: workers,
		FetchPollInterval: 20 * time.Millisecond, CancelGrace: time.Second,
		Test: postgres.SchedulerTestConfig{DisableStaggeredStart: true}})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := connect.New(connect.Config{Store: st, EncryptionKeys: []connect.EncryptionKey{testKey}, Scheduler: sched,
		Webhooks: webhooks.DeliveryConfig{Backoff: 5 * time.Millisecond, Timeout: 5 * time.Second, Concurrency: workers,
			Policy: egress.Policy{AllowLoopback: true}}}) // the receivers are on 127.0.0.1
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// countingReceiver counts deliveries by delivery id; each request waits
// delay before answering 200.
type countingReceiver struct {
	srv   *httptest.Server
	mu    sync.Mutex
	byID  map[string]int
	total int
}

func newCountingReceiver(t *testing.T, delay time.Duration) *countingReceiver {
	r := &countingReceiver{byID: map[string]int{}}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		io.Copy(io.Discard, req.Body)
		select {
		case <-time.After(delay):
		case <-req.Context().Done():
			return // the sender gave up: not delivered
		}
		r.mu.Lock()
		r.byID[req.Header.Get(webhooks.HeaderDeliveryID)]++
		r.total++
		r.mu.Unlock()
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *countingReceiver) snapshot() (map[string]int, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := make(map[string]int, len(r.byID))
	for k, v := range r.byID {
		m[k] = v
	}
	return m, r.total
}

func (r *countingReceiver) waitFor(t *testing.T, distinct int) map[string]int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		m, _ := r.snapshot()
		if len(m) >= distinct {
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d webhooks arrived after 30s", len(m), distinct)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func clusterSetup(t *testing.T, url string) (*backend, *environments.Environment) {
	t.Helper()
	b := postgresBackend(t)
	svc := instance(t, b, 1)
	env, err := svc.Environments().Create(context.Background(), environments.CreateInput{Name: "dev", WebhookURLs: []string{url}})
	if err != nil {
		t.Fatal(err)
	}
	return b, env
}

func notifyN(t *testing.T, svc *connect.Service, env *environments.Environment, n int) {
	t.Helper()
	for i := range n {
		e := webhooks.Event{EnvironmentID: env.ID, IntegrationKey: "gh", Type: webhooks.TypeForward,
			Payload: &webhooks.ForwardPayload{ProviderConfigKey: "gh", Payload: map[string]any{"n": i}}}
		if err := svc.Notify(context.Background(), e); err != nil {
			t.Fatal(err)
		}
	}
}

// TestWebhooksSurviveCrash stops an instance in the middle of deliveries,
// cancelling the ones in flight, and starts another on the same database:
// every webhook arrives and ends delivered.
func TestWebhooksSurviveCrash(t *testing.T) {
	t.Parallel()
	rc := newCountingReceiver(t, 150*time.Millisecond)
	b, env := clusterSetup(t, rc.srv.URL)
	a := instance(t, b, 4)
	const n = 40
	notifyN(t, a, env, n)
	if err := a.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	rc.waitFor(t, 4)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	a.Stop(ctx) // the deadline passes with deliveries in flight: they are cancelled
	cancel()
	before, _ := rc.snapshot()
	if len(before) >= n {
		t.Fatalf("all %d delivered before the stop; the test proves nothing", n)
	}

	bSvc := instance(t, b, 4)
	if err := bSvc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		bSvc.Stop(ctx)
	})
	rc.waitFor(t, n)
	deadline := time.Now().Add(15 * time.Second)
	for {
		ds, err := bSvc.ListWebhookDeliveries(context.Background(), webhooks.DeliveryFilter{EnvironmentID: env.ID, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		done := 0
		for _, d := range ds {
			if d.Status == webhooks.StatusDelivered {
				done++
			}
		}
		if len(ds) == n && done == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d deliveries, %d delivered", len(ds), done)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestWebhooksTwoInstancesDeliverOnce runs two instances on one database:
// each webhook arrives exactly once.
func TestWebhooksTwoInstancesDeliverOnce(t *testing.T) {
	t.Parallel()
	rc := newCountingReceiver(t, time.Millisecond)
	b, env := clusterSetup(t, rc.srv.URL)
	a, c := instance(t, b, 5), instance(t, b, 5)
	for _, svc := range []*connect.Service{a, c} {
		if err := svc.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			svc.Stop(ctx)
		})
	}
	const n = 100
	notifyN(t, a, env, n/2)
	notifyN(t, c, env, n/2)
	got := rc.waitFor(t, n)
	time.Sleep(300 * time.Millisecond) // time for a duplicate to show up
	got, total := rc.snapshot()
	if total != n {
		t.Errorf("receiver got %d requests for %d webhooks", total, n)
	}
	for id, k := range got {
		if k != 1 {
			t.Errorf("delivery %s arrived %d times", id, k)
		}
	}
}

// TestWebhooksDeadInstanceLease: deliveries claimed by a process that died
// (its claim is in the outbox, nobody works it) are not sent by another
// instance while the claim's lease lasts, and are sent, once each, when it
// ends.
func TestWebhooksDeadInstanceLease(t *testing.T) {
	t.Parallel()
	rc := newCountingReceiver(t, time.Millisecond)
	b, env := clusterSetup(t, rc.srv.URL)
	a := instance(t, b, 4)
	const n = 10
	notifyN(t, a, env, n)
	st, err := postgres.New(b.db, &postgres.Options{Schema: b.schema})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Now()
	const lease = 2 * time.Second
	claimed, err := st.ClaimDeliveries(context.Background(), now, 100, now.Add(lease))
	if err != nil || len(claimed) != n {
		t.Fatalf("the dead instance claimed %d deliveries, %v; want %d", len(claimed), err, n)
	}
	// a never starts: it died holding the claims. Another instance starts.
	c := instance(t, b, 4)
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c.Stop(ctx)
	})
	time.Sleep(lease / 2)
	if _, total := rc.snapshot(); total != 0 {
		t.Fatalf("%d webhooks sent while the dead instance's lease lasted", total)
	}
	got := rc.waitFor(t, n)
	if elapsed := time.Since(now); elapsed < lease {
		t.Errorf("delivered %s after the claim, before its lease of %s ended", elapsed, lease)
	}
	time.Sleep(200 * time.Millisecond)
	got, total := rc.snapshot()
	if total != n || len(got) != n {
		t.Errorf("receiver got %d requests for %d webhooks (%d distinct)", total, n, len(got))
	}
}
