package connect_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/oplog"
	"github.com/embedauth/connect/store/postgres"
	"github.com/embedauth/connect/webhooks"
)

const hookKey = "hook-signing-key-0123456789"

// hookReceiver is a webhook endpoint that checks each request's signatures
// with its own HMAC code (not the webhooks package's) and answers with
// respond(n), n counting its requests from 1.
type hookReceiver struct {
	t       *testing.T
	srv     *httptest.Server
	now     func() time.Time
	mu      sync.Mutex
	got     []hookCall
	respond func(n int, w http.ResponseWriter) bool // false: drop the connection
}

type hookCall struct {
	at        time.Time
	id        string
	body      map[string]any
	authentic bool
}

func newHookReceiver(t *testing.T, now func() time.Time, respond func(n int, w http.ResponseWriter) bool) *hookReceiver {
	r := &hookReceiver{t: t, now: now, respond: respond}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		raw, _ := io.ReadAll(req.Body)
		c := hookCall{at: time.Now(), id: req.Header.Get("X-Svc-Delivery-Id")}
		_ = json.Unmarshal(raw, &c.body)
		c.authentic = r.authentic(req.Header, raw)
		r.mu.Lock()
		r.got = append(r.got, c)
		n := len(r.got)
		r.mu.Unlock()
		if !r.respond(n, w) {
			// Down: drop the connection without an answer.
			if hj, ok := w.(http.Hijacker); ok {
				if conn, _, err := hj.Hijack(); err == nil {
					conn.Close()
				}
			}
		}
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// authentic checks every signature header the way a receiver written from
// the documentation would.
func (r *hookReceiver) authentic(h http.Header, body []byte) bool {
	mac := hmac.New(sha256.New, []byte(hookKey))
	mac.Write(body)
	want := hex.EncodeToString(mac.Sum(nil))
	legacy := sha256.Sum256(append([]byte(hookKey), body...))
	ts := h.Get("X-Svc-Timestamp")
	v1 := hmac.New(sha256.New, []byte(hookKey))
	v1.Write([]byte(h.Get("X-Svc-Delivery-Id") + "." + ts + "." + string(body)))
	ok := h.Get("Content-Type") == "application/json" &&
		hmac.Equal([]byte(h.Get("X-Svc-Hmac-Sha256")), []byte(want)) &&
		h.Get("X-Svc-Signature") == hex.EncodeToString(legacy[:]) &&
		// Nango's names for the same two values, which its receivers read.
		hmac.Equal([]byte(h.Get("X-Nango-Hmac-Sha256")), []byte(want)) &&
		h.Get("X-Nango-Signature") == hex.EncodeToString(legacy[:]) &&
		h.Get("X-Svc-Webhook-Signature") == "v1="+hex.EncodeToString(v1.Sum(nil))
	// And the package's own verifier, with replay protection, agrees.
	verr := webhooks.Verify(h, body, hookKey, &webhooks.VerifyOptions{Tolerance: time.Minute, Now: r.now})
	return ok && verr == nil && webhooks.Verify(h, body, hookKey, nil) == nil
}

func (r *hookReceiver) calls() []hookCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]hookCall(nil), r.got...)
}

func always(code int) func(int, http.ResponseWriter) bool {
	return func(_ int, w http.ResponseWriter) bool { w.WriteHeader(code); return true }
}

// hookSetup is setup with webhooks configured: a few milliseconds of backoff,
// on Postgres the River scheduler, the environment's signing key set to
// hookKey and its URLs to urls, and the Service started.
func hookSetup(t *testing.T, b *backend, urls []string, mutate ...func(*connect.Config)) *bundle {
	t.Helper()
	bu := setup(t, b, append([]func(*connect.Config){func(cfg *connect.Config) {
		cfg.Webhooks = webhooks.DeliveryConfig{Backoff: 5 * time.Millisecond, Timeout: 5 * time.Second}
		if b.db != nil {
			sched, err := postgres.NewScheduler(b.db, &postgres.Options{Schema: b.schema}, postgres.SchedulerConfig{
				FetchPollInterval: 20 * time.Millisecond,
				JobTimeout:        time.Minute,
				CancelGrace:       time.Second,
				Test:              postgres.SchedulerTestConfig{DisableStaggeredStart: true},
			})
			if err != nil {
				t.Fatal(err)
			}
			cfg.Scheduler = sched
		}
	}}, mutate...)...)
	key := hookKey
	if _, err := bu.svc.Environments().Update(t.Context(), bu.env.ID, environments.UpdateInput{WebhookURLs: &urls, WebhookSigningKey: &key}); err != nil {
		t.Fatal(err)
	}
	bu.start(t)
	bu.mustDo(t, 200, req{method: "POST", path: "/integrations", body: `{"provider":"github","unique_key":"gh"}`})
	for _, id := range []string{"c1", "c2"} {
		bu.mustDo(t, 201, req{method: "POST", path: "/connections", body: `{"provider_config_key":"gh","connection_id":"` + id + `","access_token":"at","no_expiration":true}`})
	}
	return bu
}

func authEvent(bu *bundle, conn, op string) webhooks.Event {
	return webhooks.Event{EnvironmentID: bu.env.ID, IntegrationKey: "gh", ConnectionID: conn, Type: webhooks.TypeAuth, Operation: op,
		Payload: &webhooks.AuthPayload{ConnectionID: conn, AuthMode: "OAUTH2", ProviderConfigKey: "gh", Provider: "github",
			Environment: "dev", Operation: op, Success: op != webhooks.OperationRefresh, Tags: map[string]string{"end_user_id": "u1"}}}
}

func (bu *bundle) deliveries(t *testing.T, f webhooks.DeliveryFilter) []*webhooks.Delivery {
	t.Helper()
	f.EnvironmentID = bu.env.ID
	ds, err := bu.svc.ListWebhookDeliveries(t.Context(), f)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// settle waits until no delivery of the environment is pending and returns
// them all.
func (bu *bundle) settle(t *testing.T, want int) []*webhooks.Delivery {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		ds := bu.deliveries(t, webhooks.DeliveryFilter{})
		pending := 0
		for _, d := range ds {
			if d.Status == webhooks.StatusPending {
				pending++
			}
		}
		if len(ds) >= want && pending == 0 {
			return ds
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d deliveries, %d pending, after 15s (want %d settled)", len(ds), pending, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func deliveryLogs(t *testing.T, bu *bundle, deliveryID string) []*oplog.Entry {
	t.Helper()
	all, err := bu.svc.ListLogs(t.Context(), oplog.Filter{EnvironmentID: bu.env.ID, Type: "webhook", Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var out []*oplog.Entry
	for i := len(all) - 1; i >= 0; i-- { // oldest first
		if all[i].Operation == "delivery" && all[i].Meta["delivery_id"] == deliveryID {
			out = append(out, all[i])
		}
	}
	return out
}

// TestWebhookDeliveredOnThirdAttempt: a receiver that fails twice gets the
// webhook on the third attempt, every attempt signed and logged.
func TestWebhookDeliveredOnThirdAttempt(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		var rc *hookReceiver
		bu := setupLater(t, b, func(now func() time.Time) []string {
			rc = newHookReceiver(t, now, func(n int, w http.ResponseWriter) bool {
				if n < 3 {
					w.WriteHeader(http.StatusInternalServerError)
					io.WriteString(w, "try again")
					return true
				}
				w.WriteHeader(http.StatusOK)
				return true
			})
			return []string{rc.srv.URL}
		})
		if err := bu.svc.Notify(t.Context(), authEvent(bu, "c1", webhooks.OperationCreation)); err != nil {
			t.Fatal(err)
		}
		ds := bu.settle(t, 1)
		d := ds[0]
		if len(ds) != 1 || d.Status != webhooks.StatusDelivered || d.Attempts != 3 || d.LastStatusCode != 200 || d.DeliveredAt == nil ||
			d.Type != "auth" || d.ConnectionID != "c1" || d.IntegrationKey != "gh" {
			t.Fatalf("delivery %+v", d)
		}
		calls := rc.calls()
		if len(calls) != 3 {
			t.Fatalf("%d calls", len(calls))
		}
		for i, c := range calls {
			if !c.authentic || c.id != d.ID {
				t.Errorf("call %d: authentic %v, id %s (delivery %s)", i+1, c.authentic, c.id, d.ID)
			}
		}
		body := calls[2].body
		if body["from"] != "nango" || body["type"] != "auth" || body["operation"] != "creation" || body["connectionId"] != "c1" ||
			body["providerConfigKey"] != "gh" || body["success"] != true || body["tags"].(map[string]any)["end_user_id"] != "u1" {
			t.Errorf("body %v", body)
		}
		logs := deliveryLogs(t, bu, d.ID)
		if len(logs) != 3 {
			t.Fatalf("%d delivery log entries, want 3", len(logs))
		}
		for i, l := range logs {
			want := oplog.StatusFailure
			if i == 2 {
				want = oplog.StatusSuccess
			}
			if l.Status != want || l.Type != "webhook" || l.Operation != "delivery" || l.ConnectionID != "c1" ||
				l.Meta["attempt"] != float64(i+1) || l.Meta["url"] != rc.srv.URL {
				t.Errorf("log %d: %s %s %v", i+1, l.Status, l.Message, l.Meta)
			}
		}
		if logs[0].Meta["status"] != float64(500) || logs[0].Meta["response"] != "try again" {
			t.Errorf("first attempt log meta %v", logs[0].Meta)
		}
	})
}

// setupLater builds the receivers once the bundle's clock exists, then
// calls hookSetup with their URLs.
func setupLater(t *testing.T, b *backend, receivers func(now func() time.Time) []string, mutate ...func(*connect.Config)) *bundle {
	t.Helper()
	clock := &lateClock{}
	urls := receivers(clock.Now)
	bu := hookSetup(t, b, urls, mutate...)
	clock.set(bu.now.Now)
	return bu
}

type lateClock struct {
	mu sync.Mutex
	f  func() time.Time
}

func (c *lateClock) set(f func() time.Time) { c.mu.Lock(); c.f = f; c.mu.Unlock() }
func (c *lateClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.f == nil {
		return time.Now()
	}
	return c.f()
}

// TestWebhookFailedThenResent: a receiver that is down makes the delivery
// fail once its attempts are used up (here the fast ones alone: no slow
// schedule); it is listed, and once the receiver is back ResendWebhook
// delivers it.
func TestWebhookFailedThenResent(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		var mu sync.Mutex
		up := false
		var rc *hookReceiver
		bu := setupLater(t, b, func(now func() time.Time) []string {
			rc = newHookReceiver(t, now, func(n int, w http.ResponseWriter) bool {
				mu.Lock()
				defer mu.Unlock()
				if up {
					w.WriteHeader(http.StatusNoContent)
				}
				return up
			})
			return []string{rc.srv.URL}
		}, func(cfg *connect.Config) { cfg.Webhooks.Schedule = []time.Duration{} })
		ctx := t.Context()
		if err := bu.svc.Notify(ctx, authEvent(bu, "c2", webhooks.OperationOverride)); err != nil {
			t.Fatal(err)
		}
		bu.settle(t, 1)
		failed := bu.deliveries(t, webhooks.DeliveryFilter{Status: webhooks.StatusFailed})
		if len(failed) != 1 {
			t.Fatalf("%d failed deliveries", len(failed))
		}
		d := failed[0]
		if d.Attempts != 3 || d.LastStatusCode != 0 || d.LastError == "" || d.DeliveredAt != nil {
			t.Errorf("failed delivery %+v", d)
		}
		if n := len(rc.calls()); n != 3 {
			t.Errorf("%d calls while down, want 3", n)
		}
		if got := bu.deliveries(t, webhooks.DeliveryFilter{Status: webhooks.StatusDelivered}); len(got) != 0 {
			t.Errorf("delivered: %+v", got)
		}
		if got := bu.deliveries(t, webhooks.DeliveryFilter{ConnectionID: "c2"}); len(got) != 1 || got[0].ID != d.ID {
			t.Errorf("by connection: %+v", got)
		}

		mu.Lock()
		up = true
		mu.Unlock()
		if err := bu.svc.ResendWebhook(ctx, d.ID); err != nil {
			t.Fatal(err)
		}
		ds := bu.settle(t, 1)
		if len(ds) != 1 || ds[0].ID != d.ID || ds[0].Status != webhooks.StatusDelivered || ds[0].Attempts != 1 || ds[0].LastStatusCode != 204 {
			t.Fatalf("after resend %+v", ds[0])
		}
		calls := rc.calls()
		if len(calls) != 4 || calls[3].id != d.ID || !calls[3].authentic || calls[3].body["operation"] != "override" {
			t.Errorf("calls after resend: %d, last %+v", len(calls), calls[len(calls)-1])
		}
		if n := len(deliveryLogs(t, bu, d.ID)); n != 4 {
			t.Errorf("%d delivery log entries, want 4", n)
		}
		// Resending a delivered webhook is allowed; an unknown one is not
		// found.
		if err := bu.svc.ResendWebhook(ctx, "00000000-0000-4000-8000-000000000000"); !errors.Is(err, connect.ErrNotFound) {
			t.Errorf("unknown delivery: %v", err)
		}
	})
}

// TestWebhookResendPending: a pending delivery cannot be resent.
func TestWebhookResendPending(t *testing.T) {
	t.Parallel()
	bu := setup(t, sqliteBackend(t))
	urls := []string{"http://127.0.0.1:1/hook"}
	if _, err := bu.svc.Environments().Update(t.Context(), bu.env.ID, environments.UpdateInput{WebhookURLs: &urls}); err != nil {
		t.Fatal(err)
	}
	bu.mustDo(t, 200, req{method: "POST", path: "/integrations", body: `{"provider":"github","unique_key":"gh"}`})
	// Not started: the delivery stays pending.
	if err := bu.svc.Notify(t.Context(), authEvent(bu, "c1", webhooks.OperationCreation)); err != nil {
		t.Fatal(err)
	}
	ds := bu.deliveries(t, webhooks.DeliveryFilter{})
	if len(ds) != 1 || ds[0].Status != webhooks.StatusPending {
		t.Fatalf("deliveries %+v", ds)
	}
	if err := bu.svc.ResendWebhook(t.Context(), ds[0].ID); !errors.Is(err, connect.ErrConflict) {
		t.Errorf("resend of a pending delivery: %v", err)
	}
}

// TestWebhookRouting: a connection with webhook_url_override gets its
// webhooks only there; one without gets them at both environment URLs.
func TestWebhookRouting(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		var a, bb, o *hookReceiver
		bu := setupLater(t, b, func(now func() time.Time) []string {
			a = newHookReceiver(t, now, always(200))
			bb = newHookReceiver(t, now, always(200))
			o = newHookReceiver(t, now, always(200))
			return []string{a.srv.URL, bb.srv.URL}
		})
		ctx := t.Context()
		override := o.srv.URL + "/override"
		if _, err := bu.svc.Connections().Patch(ctx, bu.env.ID, "gh", "c1", connections.PatchInput{WebhookURLOverride: &override}); err != nil {
			t.Fatal(err)
		}
		if err := bu.svc.Notify(ctx, authEvent(bu, "c1", webhooks.OperationCreation)); err != nil {
			t.Fatal(err)
		}
		if err := bu.svc.Notify(ctx, authEvent(bu, "c2", webhooks.OperationCreation)); err != nil {
			t.Fatal(err)
		}
		ds := bu.settle(t, 3)
		if len(ds) != 3 {
			t.Fatalf("%d deliveries, want 3", len(ds))
		}
		byConn := map[string][]string{}
		for _, d := range ds {
			if d.Status != webhooks.StatusDelivered {
				t.Errorf("delivery %+v", d)
			}
			byConn[d.ConnectionID] = append(byConn[d.ConnectionID], d.URL)
		}
		if got := byConn["c1"]; len(got) != 1 || got[0] != override {
			t.Errorf("c1 went to %v, want only the override", got)
		}
		if got := byConn["c2"]; len(got) != 2 {
			t.Errorf("c2 went to %v, want both environment URLs", got)
		}
		conns := func(r *hookReceiver) []any {
			var out []any
			for _, c := range r.calls() {
				if !c.authentic {
					t.Errorf("unauthentic call %+v", c)
				}
				out = append(out, c.body["connectionId"])
			}
			return out
		}
		if got := conns(o); len(got) != 1 || got[0] != "c1" {
			t.Errorf("override receiver got %v", got)
		}
		for _, r := range []*hookReceiver{a, bb} {
			if got := conns(r); len(got) != 1 || got[0] != "c2" {
				t.Errorf("environment receiver got %v", got)
			}
		}
		// Both deliveries of c2's event share its event id and body.
		var c2 []*webhooks.Delivery
		for _, d := range ds {
			if d.ConnectionID == "c2" {
				c2 = append(c2, d)
			}
		}
		if c2[0].EventID != c2[1].EventID || string(c2[0].Body) != string(c2[1].Body) || c2[0].ID == c2[1].ID {
			t.Errorf("c2 deliveries %+v %+v", c2[0], c2[1])
		}
	})
}

// TestWebhookSettings: disabled types produce no delivery.
func TestWebhookSettings(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		var rc *hookReceiver
		bu := setupLater(t, b, func(now func() time.Time) []string {
			rc = newHookReceiver(t, now, always(200))
			return []string{rc.srv.URL}
		})
		ctx := t.Context()
		s := environments.DefaultWebhookSettings()
		s.SendAuthRefreshError = false
		s.SendEmptySync = false
		if _, err := bu.svc.Environments().Update(ctx, bu.env.ID, environments.UpdateInput{WebhookSettings: &s}); err != nil {
			t.Fatal(err)
		}
		sync := func(empty bool, added int) webhooks.Event {
			return webhooks.Event{EnvironmentID: bu.env.ID, IntegrationKey: "gh", ConnectionID: "c1", Type: webhooks.TypeSync, Empty: empty,
				Payload: &webhooks.SyncPayload{ConnectionID: "c1", ProviderConfigKey: "gh", SyncName: "issues", SyncVariant: "base",
					Model: "Issue", SyncType: webhooks.SyncTypeIncremental, Success: true, ModifiedAfter: bu.now.Now(),
					ResponseResults: webhooks.SyncResults{Added: added}}}
		}
		for _, e := range []webhooks.Event{authEvent(bu, "c1", webhooks.OperationRefresh), sync(true, 0)} {
			if err := bu.svc.Notify(ctx, e); err != nil {
				t.Fatal(err)
			}
		}
		if ds := bu.deliveries(t, webhooks.DeliveryFilter{}); len(ds) != 0 {
			t.Fatalf("disabled events made deliveries: %+v", ds)
		}
		// Enabled ones still go out; they also show that nothing else came.
		if err := bu.svc.Notify(ctx, sync(false, 2)); err != nil {
			t.Fatal(err)
		}
		ds := bu.settle(t, 1)
		calls := rc.calls()
		if len(ds) != 1 || len(calls) != 1 || calls[0].body["type"] != "sync" || calls[0].body["responseResults"].(map[string]any)["added"] != float64(2) {
			t.Errorf("deliveries %d, calls %+v", len(ds), calls)
		}
	})
}

// TestWebhookRetryAfter: a 429 with Retry-After: 1 delays the next attempt
// by a second rather than the backoff.
func TestWebhookRetryAfter(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		var rc *hookReceiver
		bu := setupLater(t, b, func(now func() time.Time) []string {
			rc = newHookReceiver(t, now, func(n int, w http.ResponseWriter) bool {
				if n == 1 {
					w.Header().Set("Retry-After", "1")
					w.WriteHeader(http.StatusTooManyRequests)
					return true
				}
				w.WriteHeader(http.StatusOK)
				return true
			})
			return []string{rc.srv.URL}
		})
		if err := bu.svc.Notify(t.Context(), authEvent(bu, "c1", webhooks.OperationCreation)); err != nil {
			t.Fatal(err)
		}
		ds := bu.settle(t, 1)
		if ds[0].Status != webhooks.StatusDelivered || ds[0].Attempts != 2 {
			t.Fatalf("delivery %+v", ds[0])
		}
		calls := rc.calls()
		if len(calls) != 2 {
			t.Fatalf("%d calls", len(calls))
		}
		// The receiver stamps the first call before it answers, and the
		// retry falls due a second after the 429 was read: whatever the
		// load, the gap cannot be shorter. (That the wait is the
		// Retry-After and no longer is checked on the deliverer's own
		// clock, by webhooks' TestDeliverRetryAfter.)
		if gap := calls[1].at.Sub(calls[0].at); gap < time.Second {
			t.Errorf("gap between attempts %s, want at least the 1s of Retry-After (backoff is 5ms)", gap)
		}
		logs := deliveryLogs(t, bu, ds[0].ID)
		if len(logs) != 2 || logs[0].Meta["status"] != float64(429) {
			t.Errorf("logs %+v", logs)
		}
	})
}

// TestWebhookNotifyRolledBack: an event notified in a transaction that
// rolls back leaves no delivery and sends nothing.
func TestWebhookNotifyRolledBack(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		var rc *hookReceiver
		bu := setupLater(t, b, func(now func() time.Time) []string {
			rc = newHookReceiver(t, now, always(200))
			return []string{rc.srv.URL}
		})
		ctx := t.Context()
		rollback := errors.New("rollback")
		err := bu.b.store.WithTx(ctx, func(ctx context.Context) error {
			if err := bu.svc.Notify(ctx, authEvent(bu, "c1", webhooks.OperationCreation)); err != nil {
				return err
			}
			// Inside the transaction the delivery exists.
			ds, err := bu.svc.ListWebhookDeliveries(ctx, webhooks.DeliveryFilter{EnvironmentID: bu.env.ID})
			if err != nil || len(ds) != 1 {
				t.Errorf("inside the transaction: %d deliveries, %v", len(ds), err)
			}
			return rollback
		})
		if !errors.Is(err, rollback) {
			t.Fatal(err)
		}
		// A committed event afterwards: once it is delivered, the rolled
		// back one would have been too.
		err = bu.b.store.WithTx(ctx, func(ctx context.Context) error {
			return bu.svc.Notify(ctx, authEvent(bu, "c2", webhooks.OperationCreation))
		})
		if err != nil {
			t.Fatal(err)
		}
		ds := bu.settle(t, 1)
		if len(ds) != 1 || ds[0].ConnectionID != "c2" || ds[0].Status != webhooks.StatusDelivered {
			t.Fatalf("deliveries %+v", ds)
		}
		// Once the Service has stopped, no attempt is in flight: every
		// webhook it was going to send has arrived.
		stopCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := bu.svc.Stop(stopCtx); err != nil {
			t.Fatal(err)
		}
		calls := rc.calls()
		if len(calls) != 1 || calls[0].body["connectionId"] != "c2" {
			t.Errorf("calls %+v", calls)
		}
		logs, err := bu.svc.ListLogs(ctx, oplog.Filter{EnvironmentID: bu.env.ID, Type: "webhook"})
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range logs {
			if l.ConnectionID == "c1" {
				t.Errorf("log entry of the rolled back event: %+v", l)
			}
		}
	})
}

// TestWebhookCustomNotifierAndFrom: Config.Notifier replaces the default;
// Config.WebhookFrom sets the body's "from".
func TestWebhookCustomNotifierAndFrom(t *testing.T) {
	t.Parallel()
	var got []webhooks.Event
	bu := setup(t, sqliteBackend(t), func(cfg *connect.Config) {
		cfg.Notifier = webhooks.NotifierFunc(func(ctx context.Context, e webhooks.Event) error {
			got = append(got, e)
			return nil
		})
	})
	if err := bu.svc.Notify(t.Context(), authEvent(bu, "c1", webhooks.OperationCreation)); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].ConnectionID != "c1" {
		t.Errorf("custom notifier got %+v", got)
	}
	if ds := bu.deliveries(t, webhooks.DeliveryFilter{}); len(ds) != 0 {
		t.Errorf("the default notifier ran too: %+v", ds)
	}

	var rc *hookReceiver
	bu = setupLater(t, sqliteBackend(t), func(now func() time.Time) []string {
		rc = newHookReceiver(t, now, always(200))
		return []string{rc.srv.URL}
	}, func(cfg *connect.Config) { cfg.WebhookFrom = "acme" })
	if err := bu.svc.Notify(t.Context(), authEvent(bu, "c1", webhooks.OperationCreation)); err != nil {
		t.Fatal(err)
	}
	bu.settle(t, 1)
	if calls := rc.calls(); len(calls) != 1 || calls[0].body["from"] != "acme" || !calls[0].authentic {
		t.Errorf("calls %+v", calls)
	}
}

// TestWebhookConfigErrors: a bad DeliveryConfig is refused by New.
func TestWebhookConfigErrors(t *testing.T) {
	t.Parallel()
	cfg := baseConfig(t)
	_, err := connect.New(connect.Config{Store: cfg.Store, Scheduler: cfg.Scheduler, EncryptionKeys: cfg.EncryptionKeys,
		Webhooks: webhooks.DeliveryConfig{Backoff: -time.Second}})
	if err == nil {
		t.Error("negative backoff accepted")
	}
}

// outageSchedule is a slow schedule shortened for tests: after the fast
// retries (5 ms, 10 ms), waits from 20 ms growing to 250 ms, 44 of them
// (about 10 s in all), so that the deliveries of a test outlive an outage
// of a fraction of that.
func outageSchedule() []time.Duration {
	s := []time.Duration{20 * time.Millisecond, 40 * time.Millisecond, 80 * time.Millisecond, 160 * time.Millisecond}
	for range 40 {
		s = append(s, 250*time.Millisecond)
	}
	return s
}

// waitPastFastRetries waits until every delivery of the environment has
// used up the spec's first three attempts and started a fourth (Attempts is
// counted when an attempt starts), or one of them failed; it returns them.
func waitPastFastRetries(t *testing.T, bu *bundle, n int) []*webhooks.Delivery {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		ds := bu.deliveries(t, webhooks.DeliveryFilter{})
		past := 0
		for _, d := range ds {
			if d.Status == webhooks.StatusFailed {
				return ds
			}
			if d.Attempts >= 4 {
				past++
			}
		}
		if len(ds) == n && past == n {
			return ds
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 15s, %d of %d deliveries are past their first three attempts", past, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestWebhooksOutliveReceiverOutage: a receiver that is down (it answers
// 503, or refuses connections) well past the spec's first three attempts
// and then comes back gets every webhook: the deliveries stay pending on
// the slow schedule instead of failing, and each arrives, signed, under its
// delivery id, with every attempt counted and logged.
func TestWebhooksOutliveReceiverOutage(t *testing.T) {
	t.Parallel()
	const n = 10
	notify := func(t *testing.T, bu *bundle) {
		for i := range n {
			conn := []string{"c1", "c2"}[i%2]
			if err := bu.svc.Notify(t.Context(), authEvent(bu, conn, webhooks.OperationCreation)); err != nil {
				t.Fatal(err)
			}
		}
	}
	schedule := func(cfg *connect.Config) { cfg.Webhooks.Schedule = outageSchedule() }
	// check: every delivery is delivered after more than the first three
	// attempts, and each attempt is in the log.
	check := func(t *testing.T, bu *bundle, ds []*webhooks.Delivery) {
		t.Helper()
		for _, d := range ds {
			if d.Status != webhooks.StatusDelivered || d.Attempts < 4 || d.LastStatusCode != 200 {
				t.Errorf("delivery %s: %s after %d attempts (last status %d)", d.ID, d.Status, d.Attempts, d.LastStatusCode)
				continue
			}
			logs := deliveryLogs(t, bu, d.ID)
			if len(logs) != d.Attempts {
				t.Errorf("delivery %s: %d attempts, %d log entries", d.ID, d.Attempts, len(logs))
				continue
			}
			for i, l := range logs {
				if l.Meta["attempt"] != float64(i+1) {
					t.Errorf("delivery %s: log entry %d is of attempt %v", d.ID, i+1, l.Meta["attempt"])
				}
			}
			if last := logs[len(logs)-1]; last.Status != oplog.StatusSuccess {
				t.Errorf("delivery %s: last log entry %s %q", d.ID, last.Status, last.Message)
			}
		}
	}

	t.Run("503", func(t *testing.T) {
		t.Parallel()
		backends(t, func(t *testing.T, b *backend) {
			var mu sync.Mutex
			up := false
			var rc *hookReceiver
			bu := setupLater(t, b, func(now func() time.Time) []string {
				rc = newHookReceiver(t, now, func(_ int, w http.ResponseWriter) bool {
					mu.Lock()
					defer mu.Unlock()
					if !up {
						w.WriteHeader(http.StatusServiceUnavailable)
						return true
					}
					w.WriteHeader(http.StatusOK)
					return true
				})
				return []string{rc.srv.URL}
			}, schedule)
			notify(t, bu)
			for _, d := range waitPastFastRetries(t, bu, n) {
				if d.Status != webhooks.StatusPending {
					t.Fatalf("delivery %s is %s after %d attempts while the receiver is down; want pending", d.ID, d.Status, d.Attempts)
				}
			}
			mu.Lock()
			up = true
			mu.Unlock()
			ds := bu.settle(t, n)
			check(t, bu, ds)
			// Every webhook arrived, authentic, under its delivery id.
			ok := map[string]bool{}
			for _, c := range rc.calls() {
				if !c.authentic {
					t.Errorf("a call of %s was not authentic", c.id)
				}
				ok[c.id] = true
			}
			for _, d := range ds {
				if !ok[d.ID] {
					t.Errorf("delivery %s never reached the receiver", d.ID)
				}
			}
		})
	})

	t.Run("refused", func(t *testing.T) {
		t.Parallel()
		backends(t, func(t *testing.T, b *backend) {
			// An address nobody listens on: connections are refused.
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := ln.Addr().String()
			ln.Close()
			var mu sync.Mutex
			got := map[string]int{}
			bu := hookSetup(t, b, []string{"http://" + addr + "/hooks"}, schedule)
			notify(t, bu)
			for _, d := range waitPastFastRetries(t, bu, n) {
				if d.Status != webhooks.StatusPending || d.LastStatusCode != 0 || d.LastError == "" {
					t.Fatalf("delivery %s is %s after %d attempts (%q) while the receiver refuses connections; want pending",
						d.ID, d.Status, d.Attempts, d.LastError)
				}
			}
			// The receiver comes back on the same address.
			ln, err = net.Listen("tcp", addr)
			if err != nil {
				t.Fatalf("listening again on %s: %v", addr, err)
			}
			srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				if webhooks.Verify(r.Header, body, hookKey, nil) != nil {
					w.WriteHeader(http.StatusUnauthorized)
					return
				}
				mu.Lock()
				got[r.Header.Get(webhooks.HeaderDeliveryID)]++
				mu.Unlock()
			})}
			go srv.Serve(ln)
			t.Cleanup(func() { srv.Close() })
			ds := bu.settle(t, n)
			check(t, bu, ds)
			mu.Lock()
			defer mu.Unlock()
			for _, d := range ds {
				if got[d.ID] != 1 {
					t.Errorf("delivery %s arrived %d times", d.ID, got[d.ID])
				}
			}
		})
	})
}
