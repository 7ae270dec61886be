package connect_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/egress"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/oplog"
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

// countingReceiver counts deliveries by delivery id and answers 200, at
// once or, while it holds requests (hold), when released; a request whose
// sender gives up first is not counted.
type countingReceiver struct {
	srv *httptest.Server

	mu       sync.Mutex
	byID     map[string]int
	total    int
	inFlight int           // requests being answered
	held     chan struct{} // while open, requests wait for it to close
	changed  chan struct{} // closed and replaced whenever the above change
}

func newCountingReceiver(t *testing.T) *countingReceiver {
	r := &countingReceiver{byID: map[string]int{}, changed: make(chan struct{})}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		io.Copy(io.Discard, req.Body)
		r.mu.Lock()
		r.inFlight++
		held := r.held
		r.changedLocked()
		r.mu.Unlock()
		defer func() {
			r.mu.Lock()
			r.inFlight--
			r.changedLocked()
			r.mu.Unlock()
		}()
		if held != nil {
			select {
			case <-held:
			case <-req.Context().Done():
				return // the sender gave up: not delivered
			}
		}
		r.mu.Lock()
		r.byID[req.Header.Get(webhooks.HeaderDeliveryID)]++
		r.total++
		r.mu.Unlock()
	}))
	t.Cleanup(func() { r.release(); r.srv.Close() })
	return r
}

func (r *countingReceiver) changedLocked() {
	close(r.changed)
	r.changed = make(chan struct{})
}

// hold makes requests wait until release.
func (r *countingReceiver) hold() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.held = make(chan struct{})
}

// release answers the held requests, and the next ones at once.
func (r *countingReceiver) release() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.held != nil {
		close(r.held)
		r.held = nil
	}
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

// until waits until cond, called with r.mu held, is true. The limit only
// turns a hang into a failure.
func (r *countingReceiver) until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	timeout := time.After(time.Minute)
	for {
		r.mu.Lock()
		ok, changed := cond(), r.changed
		r.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-changed:
		case <-timeout:
			r.mu.Lock()
			defer r.mu.Unlock()
			t.Fatalf("waited a minute for %s: %d distinct webhooks arrived, %d requests in flight", what, len(r.byID), r.inFlight)
		}
	}
}

// waitFor waits until distinct webhooks have arrived.
func (r *countingReceiver) waitFor(t *testing.T, distinct int) map[string]int {
	t.Helper()
	r.until(t, fmt.Sprintf("%d webhooks", distinct), func() bool { return len(r.byID) >= distinct })
	m, _ := r.snapshot()
	return m
}

// waitInFlight waits until n requests are being answered at once.
func (r *countingReceiver) waitInFlight(t *testing.T, n int) {
	t.Helper()
	r.until(t, fmt.Sprintf("%d requests in flight", n), func() bool { return r.inFlight >= n })
}

// stop stops svc and waits for its attempts in flight: after it, the
// instance sends nothing more.
func stop(t *testing.T, svc *connect.Service) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := svc.Stop(ctx); err != nil {
		t.Fatalf("stop: %v", err)
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
// cancelling the ones in flight (the receiver holds them until then), and
// starts another on the same database: every webhook arrives and ends
// delivered.
func TestWebhooksSurviveCrash(t *testing.T) {
	t.Parallel()
	rc := newCountingReceiver(t)
	rc.hold()
	b, env := clusterSetup(t, rc.srv.URL)
	a := instance(t, b, 4)
	const n = 40
	notifyN(t, a, env, n)
	if err := a.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	rc.waitInFlight(t, 4)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	a.Stop(ctx) // the deadline passes with four deliveries in flight: they are cancelled
	cancel()
	ds, err := a.ListWebhookDeliveries(context.Background(), webhooks.DeliveryFilter{EnvironmentID: env.ID, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ds {
		if d.Status != webhooks.StatusPending {
			t.Errorf("delivery %s is %s after the crash; no webhook was answered", d.ID, d.Status)
		}
	}
	rc.release()

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
	deadline := time.Now().Add(time.Minute)
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
			t.Fatalf("%d deliveries, %d delivered, a minute after every webhook arrived", len(ds), done)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestWebhooksTwoInstancesDeliverOnce runs two instances on one database:
// each webhook arrives exactly once.
func TestWebhooksTwoInstancesDeliverOnce(t *testing.T) {
	t.Parallel()
	rc := newCountingReceiver(t)
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
	rc.waitFor(t, n)
	// Once both have stopped, nothing is in flight: a duplicate would have
	// arrived.
	stop(t, a)
	stop(t, c)
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
// has ended.
func TestWebhooksDeadInstanceLease(t *testing.T) {
	t.Parallel()
	rc := newCountingReceiver(t)
	b, env := clusterSetup(t, rc.srv.URL)
	a := instance(t, b, 4)
	const n = 10
	st, err := postgres.New(b.db, &postgres.Options{Schema: b.schema})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// deadClaims has a process claim the deliveries due now, and die.
	deadClaims := func(lease time.Duration) {
		t.Helper()
		now := time.Now()
		claimed, err := st.ClaimDeliveries(context.Background(), now, 100, now.Add(lease))
		if err != nil || len(claimed) != n {
			t.Fatalf("the dead instance claimed %d deliveries, %v; want %d", len(claimed), err, n)
		}
	}

	// Claimed for an hour, longer than the test: another instance sends
	// the webhook notified after them, which was due later, and not them.
	notifyN(t, a, env, n)
	deadClaims(time.Hour)
	c := instance(t, b, 4)
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stop(t, c) })
	notifyN(t, c, env, 1)
	rc.waitFor(t, 1)
	stop(t, c)
	if _, total := rc.snapshot(); total != 1 {
		t.Fatalf("receiver got %d requests, want 1: webhooks were sent while the dead instance's lease lasted", total)
	}

	// Claimed for a moment: once the lease ends, another instance sends
	// them, once each.
	notifyN(t, a, env, n)
	deadClaims(200 * time.Millisecond)
	d := instance(t, b, 4)
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stop(t, d) })
	rc.waitFor(t, 1+n)
	stop(t, d)
	got, total := rc.snapshot()
	if total != 1+n || len(got) != 1+n {
		t.Errorf("receiver got %d requests for %d webhooks (%d distinct)", total, 1+n, len(got))
	}
}

// deadRecorder is the Store of a process that dies right after its POSTs:
// the outcome of an attempt is never stored (RecordAttempts blocks until
// the test ends, which also keeps that process from claiming anything
// again).
type deadRecorder struct {
	*postgres.Store
	dead chan struct{}
}

func (s *deadRecorder) RecordAttempts(ctx context.Context, as []webhooks.Attempt) error {
	<-s.dead
	return errors.New("the process died before recording its attempts")
}

// shortLeaseInstance is instance with the given Store and a lease of under
// a second, so that a dead process's deliveries are taken over quickly.
func shortLeaseInstance(t *testing.T, b *backend, st connect.Store) *connect.Service {
	t.Helper()
	sched, err := postgres.NewScheduler(b.db, &postgres.Options{Schema: b.schema}, postgres.SchedulerConfig{Workers: 2,
		FetchPollInterval: 20 * time.Millisecond, CancelGrace: time.Second,
		Test: postgres.SchedulerTestConfig{DisableStaggeredStart: true}})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := connect.New(connect.Config{Store: st, EncryptionKeys: []connect.EncryptionKey{testKey}, Scheduler: sched,
		Webhooks: webhooks.DeliveryConfig{Backoff: 5 * time.Millisecond, Timeout: 200 * time.Millisecond,
			Lease: 700 * time.Millisecond, PollInterval: 50 * time.Millisecond,
			Policy: egress.Policy{AllowLoopback: true}}}) // the receiver listens on 127.0.0.1
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// TestWebhookAttemptsCountedAcrossCrash: a process POSTs a webhook and dies
// before it records the outcome; another process takes the delivery over
// when the lease ends and sends it again. The receiver got it twice, under
// the same delivery id, and the delivery shows 2 attempts, not 1: the
// first was counted in the database when it started.
func TestWebhookAttemptsCountedAcrossCrash(t *testing.T) {
	t.Parallel()
	rc := newCountingReceiver(t)
	b, env := clusterSetup(t, rc.srv.URL)
	open := func() *postgres.Store {
		st, err := postgres.New(b.db, &postgres.Options{Schema: b.schema})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	dying := &deadRecorder{Store: open(), dead: make(chan struct{})}
	a := shortLeaseInstance(t, b, dying)
	notifyN(t, a, env, 1)
	if err := a.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		close(dying.dead)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		a.Stop(ctx)
	})
	first := rc.waitFor(t, 1)
	ds, err := a.ListWebhookDeliveries(context.Background(), webhooks.DeliveryFilter{EnvironmentID: env.ID})
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 1 || ds[0].Status != webhooks.StatusPending || ds[0].Attempts != 1 || first[ds[0].ID] != 1 {
		t.Fatalf("after the first POST of the dead process: %+v, received %v", ds, first)
	}
	id := ds[0].ID

	c := shortLeaseInstance(t, b, open())
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c.Stop(ctx)
	})
	deadline := time.Now().Add(15 * time.Second)
	var d *webhooks.Delivery
	for {
		ds, err := c.ListWebhookDeliveries(context.Background(), webhooks.DeliveryFilter{EnvironmentID: env.ID})
		if err != nil {
			t.Fatal(err)
		}
		if d = ds[0]; d.Status != webhooks.StatusPending {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not delivered after the takeover: %+v", d)
		}
		time.Sleep(20 * time.Millisecond)
	}
	got, _ := rc.snapshot()
	if d.Status != webhooks.StatusDelivered || d.Attempts != 2 || got[id] != 2 {
		t.Errorf("after the takeover: %+v; received %d times", d, got[id])
	}
	logs, err := c.ListLogs(context.Background(), oplog.Filter{EnvironmentID: env.ID, Type: "webhook"})
	if err != nil {
		t.Fatal(err)
	}
	var attempts []any
	for _, l := range logs {
		if l.Operation == "delivery" {
			attempts = append(attempts, l.Meta["attempt"])
		}
	}
	// The dead process's attempt left no entry; the one that delivered
	// is attempt 2.
	if len(attempts) != 1 || attempts[0] != float64(2) {
		t.Errorf("delivery log entries of attempts %v, want [2]", attempts)
	}
}
