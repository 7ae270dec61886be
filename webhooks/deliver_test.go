package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/embedauth/connect/egress"
	"github.com/embedauth/connect/jobs"
	"github.com/embedauth/connect/oplog"
	"github.com/embedauth/connect/store"
)

const testSigningKey = "signing-key-0123456789"

// receiver is an httptest server that checks every request's signatures
// with the reference implementations and answers with respond(n), n from 1.
type receiver struct {
	t       *testing.T
	srv     *httptest.Server
	mu      sync.Mutex
	calls   []call
	respond func(n int, w http.ResponseWriter)
}

type call struct {
	at         time.Time
	id, ts     string
	body       string
	authentic  bool
	legacyOK   bool
	timestamps bool
}

func newReceiver(t *testing.T, respond func(n int, w http.ResponseWriter)) *receiver {
	r := &receiver{t: t, respond: respond}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		c := call{at: time.Now(), id: req.Header.Get(HeaderDeliveryID), ts: req.Header.Get(HeaderTimestamp), body: string(b)}
		c.authentic = req.Method == http.MethodPost && req.Header.Get("Content-Type") == "application/json" &&
			req.Header.Get(HeaderHMAC) == refHMAC(testSigningKey, string(b))
		c.legacyOK = req.Header.Get(HeaderLegacySignature) == refLegacy(testSigningKey, string(b))
		c.timestamps = req.Header.Get(HeaderSignature) == refV1(testSigningKey, c.id, c.ts, string(b))
		r.mu.Lock()
		r.calls = append(r.calls, c)
		n := len(r.calls)
		r.mu.Unlock()
		r.respond(n, w)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) got() []call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]call(nil), r.calls...)
}

func status(codes ...int) func(int, http.ResponseWriter) {
	return func(n int, w http.ResponseWriter) {
		c := codes[len(codes)-1]
		if n <= len(codes) {
			c = codes[n-1]
		}
		w.WriteHeader(c)
		io.WriteString(w, "answer "+strconv.Itoa(n))
	}
}

// fixture is a Deliverer over a fake store holding one pending delivery, due
// at once. Unless a test sets Backoff, it is a minute: each DeliverDue then
// makes exactly one attempt, and the test makes a retry due with makeDue.
type fixture struct {
	st  *fakeStore
	d   *Deliverer
	del *Delivery
}

func testKey(ctx context.Context, envID int64) (string, error) {
	if envID != 1 {
		return "", store.ErrNotFound
	}
	return testSigningKey, nil
}

func newFixture(t *testing.T, url string, cfg DeliveryConfig) *fixture {
	t.Helper()
	st := newFakeStore()
	del := &Delivery{ID: NewID(), EnvironmentID: 1, EventID: NewID(), Type: TypeAuth, IntegrationKey: "gh", ConnectionID: "c1",
		URL: url, Body: []byte(vecBody), Status: StatusPending, NextAttemptAt: schedNow()}
	if err := st.CreateDeliveries(context.Background(), del); err != nil {
		t.Fatal(err)
	}
	if cfg.Backoff == 0 {
		cfg.Backoff = time.Minute
	}
	// The receivers are httptest servers on 127.0.0.1.
	cfg.Policy.AllowLoopback = true
	d := NewDeliverer(DelivererConfig{Delivery: cfg, Store: st, SigningKey: testKey, Log: &oplog.Writer{Store: st}})
	return &fixture{st: st, d: d, del: del}
}

func (f *fixture) get(t *testing.T) *Delivery {
	t.Helper()
	d, err := f.st.GetDelivery(context.Background(), f.del.ID)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// deliverDue calls DeliverDue, which must succeed.
func (f *fixture) deliverDue(t *testing.T) {
	t.Helper()
	if err := f.d.DeliverDue(context.Background()); err != nil {
		t.Fatalf("DeliverDue: %v", err)
	}
}

// makeDue makes the delivery due now, as if its retry's wait had passed.
func (f *fixture) makeDue() {
	f.st.setDelivery(f.del.ID, func(d *Delivery) { d.NextAttemptAt = time.Now().Add(-time.Second) })
}

// checkDue checks that d is due wait after an attempt made between before
// and after, on the real clock.
func checkDue(t *testing.T, d *Delivery, before, after time.Time, wait time.Duration) {
	t.Helper()
	lo, hi := before.Add(wait).Truncate(time.Microsecond), after.Add(wait)
	if d.NextAttemptAt.Before(lo) || d.NextAttemptAt.After(hi) {
		t.Errorf("due at %s, want %s after the attempt (between %s and %s)", d.NextAttemptAt, wait, lo, hi)
	}
}

// waitFor polls cond for up to 30 seconds, a limit that only stops a test
// that hangs.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestDeliverFirstAttempt(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, status(202))
	f := newFixture(t, rc.srv.URL, DeliveryConfig{})
	f.deliverDue(t)
	d := f.get(t)
	if d.Status != StatusDelivered || d.Attempts != 1 || d.LastStatusCode != 202 || d.LastError != "" || d.DeliveredAt == nil {
		t.Errorf("delivery %+v", d)
	}
	calls := rc.got()
	if len(calls) != 1 || !calls[0].authentic || !calls[0].legacyOK || !calls[0].timestamps || calls[0].id != f.del.ID || calls[0].body != vecBody {
		t.Errorf("calls %+v", calls)
	}
	logs := f.st.logsOf("delivery")
	if len(logs) != 1 {
		t.Fatalf("%d delivery logs", len(logs))
	}
	l := logs[0]
	if l.Status != oplog.StatusSuccess || l.EnvironmentID != 1 || l.IntegrationKey != "gh" || l.ConnectionID != "c1" ||
		l.Meta["delivery_id"] != f.del.ID || l.Meta["url"] != rc.srv.URL || l.Meta["attempt"] != 1 || l.Meta["status"] != 202 || l.Meta["response"] != "answer 1" {
		t.Errorf("log %+v %+v", l, l.Meta)
	}
	if _, ok := l.Meta["duration_ms"]; !ok {
		t.Error("no duration_ms")
	}
	// Delivering again sends nothing, even when it looks due: it is no
	// longer pending.
	f.makeDue()
	f.deliverDue(t)
	if n := len(rc.got()); n != 1 {
		t.Errorf("a delivered webhook was sent again: %d calls", n)
	}
}

func TestDeliverRetriesThenSucceeds(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, status(500, 502, 200))
	var clock atomic.Int64
	clock.Store(1777636800)
	f := newFixture(t, rc.srv.URL, DeliveryConfig{Backoff: time.Minute, Multiplier: 3})
	// Each attempt reads the clock: one second apart. (It stamps; it does
	// not schedule.)
	f.d.now = func() time.Time { return time.Unix(clock.Add(1), 0) }

	// Attempt 1 fails: pending, due after Backoff. DeliverDue does not
	// wait for it (it would then have made attempt 2).
	before := time.Now()
	f.deliverDue(t)
	after := time.Now()
	d := f.get(t)
	if d.Status != StatusPending || d.Attempts != 1 || d.LastStatusCode != 500 || d.LastError != "status 500" || d.DeliveredAt != nil {
		t.Errorf("after attempt 1: %+v", d)
	}
	checkDue(t, d, before, after, time.Minute)
	if n := len(rc.got()); n != 1 {
		t.Fatalf("%d calls after the first DeliverDue, want 1", n)
	}
	// Not due yet: nothing is sent.
	f.deliverDue(t)
	if n := len(rc.got()); n != 1 || f.get(t).Attempts != 1 {
		t.Fatalf("a retry was sent before it was due: %d calls", n)
	}

	// Attempt 2 fails: due after Backoff·Multiplier.
	f.makeDue()
	before = time.Now()
	f.deliverDue(t)
	after = time.Now()
	d = f.get(t)
	if d.Status != StatusPending || d.Attempts != 2 || d.LastStatusCode != 502 || d.LastError != "status 502" {
		t.Errorf("after attempt 2: %+v", d)
	}
	checkDue(t, d, before, after, 3*time.Minute)

	// Attempt 3 delivers.
	f.makeDue()
	f.deliverDue(t)
	d = f.get(t)
	if d.Status != StatusDelivered || d.Attempts != 3 || d.LastStatusCode != 200 || d.LastError != "" || d.DeliveredAt == nil {
		t.Errorf("delivery %+v", d)
	}
	calls := rc.got()
	if len(calls) != 3 {
		t.Fatalf("%d calls", len(calls))
	}
	for i, c := range calls {
		if !c.authentic || !c.timestamps || c.id != f.del.ID {
			t.Errorf("call %d not authentic: %+v", i, c)
		}
		if i > 0 && c.ts == calls[i-1].ts {
			t.Errorf("attempt %d not re-signed with its own timestamp", i+1)
		}
	}
	logs := f.st.logsOf("delivery")
	if len(logs) != 3 || logs[0].Status != oplog.StatusFailure || logs[1].Status != oplog.StatusFailure || logs[2].Status != oplog.StatusSuccess ||
		logs[0].Meta["attempt"] != 1 || logs[2].Meta["attempt"] != 3 || logs[1].Meta["status"] != 502 {
		for _, l := range logs {
			t.Errorf("log %s %s %v", l.Status, l.Message, l.Meta)
		}
	}
}

// With a tiny backoff on the real clock, a retry falls due by itself.
func TestDeliverRetryFallsDue(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, status(500, 200))
	f := newFixture(t, rc.srv.URL, DeliveryConfig{Backoff: 3 * time.Millisecond})
	for i := 0; f.get(t).Status == StatusPending; i++ {
		if i == 1000 {
			t.Fatalf("not delivered: %+v", f.get(t))
		}
		f.deliverDue(t)
		time.Sleep(time.Millisecond)
	}
	if d := f.get(t); d.Status != StatusDelivered || d.Attempts != 2 {
		t.Errorf("delivery %+v", d)
	}
	calls := rc.got()
	if len(calls) != 2 {
		t.Fatalf("%d calls", len(calls))
	}
	if gap := calls[1].at.Sub(calls[0].at); gap < 3*time.Millisecond {
		t.Errorf("retried after %s, before the 3ms backoff", gap)
	}
}

func TestDeliverGivesUp(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, status(404))
	// Fast retries only (no slow schedule): 4 attempts.
	f := newFixture(t, rc.srv.URL, DeliveryConfig{Retries: 3, Schedule: []time.Duration{}})
	for n := 1; n <= 4; n++ {
		f.deliverDue(t)
		d := f.get(t)
		want := StatusPending
		if n == 4 {
			want = StatusFailed
		}
		if d.Status != want || d.Attempts != n || d.LastStatusCode != 404 || d.LastError != "status 404" || d.DeliveredAt != nil {
			t.Fatalf("after attempt %d: %+v", n, d)
		}
		f.makeDue()
	}
	// Failed for good: never sent again.
	f.deliverDue(t)
	if n := len(rc.got()); n != 4 {
		t.Errorf("%d calls, want 4", n)
	}
	if d := f.get(t); d.Status != StatusFailed || d.Attempts != 4 {
		t.Errorf("delivery %+v", d)
	}
	logs := f.st.logsOf("delivery")
	if len(logs) != 4 || !strings.Contains(logs[3].Message, "giving up") || strings.Contains(logs[2].Message, "giving up") {
		t.Errorf("%d logs; last %q", len(logs), logs[len(logs)-1].Message)
	}

	// Retries < 0 and no schedule: one attempt.
	rc2 := newReceiver(t, status(500))
	f2 := newFixture(t, rc2.srv.URL, DeliveryConfig{Retries: -1, Schedule: []time.Duration{}})
	f2.deliverDue(t)
	f2.makeDue()
	f2.deliverDue(t)
	if d := f2.get(t); len(rc2.got()) != 1 || d.Status != StatusFailed || d.Attempts != 1 {
		t.Errorf("no retries: %d calls, %+v", len(rc2.got()), d)
	}
}

// TestDeliverAddressPolicy: the default client follows
// DeliveryConfig.Policy: a receiver on loopback is refused under the zero
// Policy ("address not allowed", nothing sent) and reached when the policy
// allows loopback.
func TestDeliverAddressPolicy(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, status(200))
	st := newFakeStore()
	del := &Delivery{ID: NewID(), EnvironmentID: 1, EventID: NewID(), Type: TypeAuth, URL: rc.srv.URL, Body: []byte(vecBody),
		Status: StatusPending, NextAttemptAt: schedNow()}
	if err := st.CreateDeliveries(context.Background(), del); err != nil {
		t.Fatal(err)
	}
	d := NewDeliverer(DelivererConfig{Delivery: DeliveryConfig{Retries: -1, Schedule: []time.Duration{}}, Store: st, SigningKey: testKey, Log: &oplog.Writer{Store: st}})
	if err := d.DeliverDue(context.Background()); err != nil {
		t.Fatal(err)
	}
	got, err := st.GetDelivery(context.Background(), del.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != StatusFailed || got.LastError != "address not allowed" || len(rc.got()) != 0 {
		t.Errorf("strict policy: %+v, %d calls", got, len(rc.got()))
	}
	f := newFixture(t, rc.srv.URL, DeliveryConfig{}) // loopback allowed
	f.deliverDue(t)
	if got := f.get(t); got.Status != StatusDelivered || len(rc.got()) != 1 {
		t.Errorf("loopback allowed: %+v", got)
	}
}

// After the fast retries, the slow Schedule: each failed attempt leaves the
// delivery pending, due after the schedule's next wait (a Retry-After
// shorter than it does not bring it forward), until the last attempt
// fails.
func TestDeliverSlowSchedule(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, func(n int, w http.ResponseWriter) {
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	f := newFixture(t, rc.srv.URL, DeliveryConfig{Retries: 1, Backoff: time.Minute, Schedule: []time.Duration{2 * time.Minute, 3 * time.Hour}})
	for n, wait := range []time.Duration{time.Minute, 2 * time.Minute, 3 * time.Hour} {
		before := time.Now()
		f.deliverDue(t)
		after := time.Now()
		d := f.get(t)
		if d.Status != StatusPending || d.Attempts != n+1 || d.LastStatusCode != 503 {
			t.Fatalf("after attempt %d: %+v", n+1, d)
		}
		checkDue(t, d, before, after, wait)
		// Not due: nothing is sent.
		f.deliverDue(t)
		if got := len(rc.got()); got != n+1 {
			t.Fatalf("%d calls after attempt %d", got, n+1)
		}
		f.makeDue()
	}
	f.deliverDue(t)
	if d := f.get(t); d.Status != StatusFailed || d.Attempts != 4 || len(rc.got()) != 4 {
		t.Fatalf("after the last attempt: %+v, %d calls", d, len(rc.got()))
	}
	logs := f.st.logsOf("delivery")
	if len(logs) != 4 {
		t.Fatalf("%d logs", len(logs))
	}
	for i, want := range []string{
		"auth webhook attempt 1 of 4 failed: status 503; next attempt in 1m0s",
		"auth webhook attempt 2 of 4 failed: status 503; next attempt in 2m0s",
		"auth webhook attempt 3 of 4 failed: status 503; next attempt in 3h0m0s",
		"auth webhook attempt 4 of 4 failed: status 503; giving up",
	} {
		if logs[i].Message != want {
			t.Errorf("log %d: %q, want %q", i+1, logs[i].Message, want)
		}
	}
	if logs[1].Meta["next_attempt_in_ms"] != int64(2*time.Minute/time.Millisecond) {
		t.Errorf("log 2 meta %v", logs[1].Meta)
	}
	if _, ok := logs[3].Meta["next_attempt_in_ms"]; ok {
		t.Errorf("the last attempt's log names a next attempt: %v", logs[3].Meta)
	}
}

// recordFailStore is a batchStore whose RecordAttempts fails (a process
// that dies after its POST, before storing the outcome) while fail is set.
type recordFailStore struct {
	*batchStore
	fail atomic.Bool
}

func (s *recordFailStore) RecordAttempts(ctx context.Context, as []Attempt) error {
	if s.fail.Load() {
		return errors.New("process died")
	}
	return s.batchStore.RecordAttempts(ctx, as)
}

// An attempt is counted when it is claimed, in the Store, before its POST:
// when the outcome is never stored (the process died after its POST), the
// delivery taken over after the lease shows the second attempt as attempt
// 2, not 1.
func TestDeliverAttemptCountedAtClaim(t *testing.T) {
	t.Parallel()
	var st *recordFailStore
	var during atomic.Int64
	rc := newReceiver(t, func(n int, w http.ResponseWriter) {
		// While the POST is in flight, the Store already counts it.
		for _, d := range st.all() {
			during.Store(int64(d.Attempts))
		}
		w.WriteHeader(200)
	})
	st = &recordFailStore{batchStore: &batchStore{fakeStore: newFakeStore()}}
	st.fail.Store(true)
	del := &Delivery{ID: NewID(), EnvironmentID: 1, EventID: NewID(), Type: TypeAuth, URL: rc.srv.URL,
		Body: []byte(vecBody), Status: StatusPending, NextAttemptAt: schedNow()}
	if err := st.CreateDeliveries(context.Background(), del); err != nil {
		t.Fatal(err)
	}
	newDeliverer := func() *Deliverer {
		return NewDeliverer(DelivererConfig{Delivery: DeliveryConfig{Policy: egress.Policy{AllowLoopback: true}},
			Store: st, SigningKey: testKey, Log: &oplog.Writer{Store: st}})
	}
	// The first process POSTs, then dies before its outcome is stored.
	if err := newDeliverer().DeliverDue(context.Background()); err != nil {
		t.Fatal(err)
	}
	if during.Load() != 1 {
		t.Errorf("the Store counted %d attempts during the first POST, want 1", during.Load())
	}
	d, err := st.GetDelivery(context.Background(), del.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(rc.got()) != 1 || d.Status != StatusPending || d.Attempts != 1 {
		t.Fatalf("after the lost outcome: %d calls, %+v", len(rc.got()), d)
	}
	// Its lease ends; another process takes the delivery over.
	st.fail.Store(false)
	st.setDelivery(del.ID, func(d *Delivery) { d.NextAttemptAt = time.Now().Add(-time.Second) })
	if err := newDeliverer().DeliverDue(context.Background()); err != nil {
		t.Fatal(err)
	}
	d, err = st.GetDelivery(context.Background(), del.ID)
	if err != nil {
		t.Fatal(err)
	}
	if calls := rc.got(); len(calls) != 2 || calls[1].id != del.ID || d.Status != StatusDelivered || d.Attempts != 2 {
		t.Errorf("after the takeover: %d calls, %+v", len(calls), d)
	}
	if logs := st.logsOf("delivery"); len(logs) != 1 || logs[0].Meta["attempt"] != 2 ||
		!strings.HasPrefix(logs[0].Message, "auth webhook delivered (attempt 2 of ") {
		t.Errorf("logs %+v", logs)
	}
}

func TestDeliverNetworkErrorAndTimeout(t *testing.T) {
	t.Parallel()
	// A closed server: connection refused.
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	f := newFixture(t, dead.URL+"/hook", DeliveryConfig{Retries: 1, Schedule: []time.Duration{}})
	f.deliverDue(t)
	d := f.get(t)
	// Only "could not reach the receiver": the dial error would tell a
	// closed port from a filtered one.
	if d.Status != StatusPending || d.Attempts != 1 || d.LastStatusCode != 0 || d.LastError != "could not reach the receiver" {
		t.Errorf("after attempt 1: %+v", d)
	}
	f.makeDue()
	f.deliverDue(t)
	d = f.get(t)
	if d.Status != StatusFailed || d.Attempts != 2 || d.LastStatusCode != 0 || d.LastError == "" || strings.Contains(d.LastError, dead.URL) {
		t.Errorf("delivery %+v", d)
	}

	// A slow server: the attempt times out.
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); slow.Close() })
	// The server answers only when the test ends: DeliverDue returns
	// because the attempt's Timeout cut it.
	f = newFixture(t, slow.URL, DeliveryConfig{Retries: -1, Schedule: []time.Duration{}, Timeout: 50 * time.Millisecond})
	f.deliverDue(t)
	if d := f.get(t); d.Status != StatusFailed || d.Attempts != 1 || !strings.Contains(d.LastError, "timeout") {
		t.Errorf("delivery %+v", d)
	}
}

func TestDeliverRedirectIsFailure(t *testing.T) {
	t.Parallel()
	target := newReceiver(t, status(200))
	redirect := newReceiver(t, func(n int, w http.ResponseWriter) {
		w.Header().Set("Location", target.srv.URL)
		w.WriteHeader(http.StatusTemporaryRedirect)
	})
	f := newFixture(t, redirect.srv.URL, DeliveryConfig{Retries: -1, Schedule: []time.Duration{}})
	f.deliverDue(t)
	if d := f.get(t); d.Status != StatusFailed || d.LastStatusCode != 307 || d.Attempts != 1 {
		t.Errorf("delivery %+v", d)
	}
	if n := len(target.got()); n != 0 {
		t.Errorf("the redirect was followed (%d calls)", n)
	}
}

// retryAfter answers the first request with code and a Retry-After header,
// the others with 200.
func retryAfter(code int, value func() string) func(int, http.ResponseWriter) {
	return func(n int, w http.ResponseWriter) {
		if n == 1 {
			w.Header().Set("Retry-After", value())
			w.WriteHeader(code)
			return
		}
		w.WriteHeader(200)
	}
}

func TestDeliverRetryAfter(t *testing.T) {
	t.Parallel()
	// A 429's Retry-After, not the (tiny) backoff, schedules the retry;
	// DeliverDue returns without waiting for it.
	rc := newReceiver(t, retryAfter(http.StatusTooManyRequests, func() string { return "30" }))
	f := newFixture(t, rc.srv.URL, DeliveryConfig{Backoff: time.Millisecond})
	before := time.Now()
	f.deliverDue(t)
	after := time.Now()
	// Had DeliverDue waited for the retry, it would have made attempt 2.
	d := f.get(t)
	if d.Status != StatusPending || d.Attempts != 1 || d.LastStatusCode != 429 || d.LastError != "status 429" {
		t.Errorf("delivery after a 429 %+v", d)
	}
	checkDue(t, d, before, after, 30*time.Second)
	if n := len(rc.got()); n != 1 {
		t.Errorf("%d calls, want 1", n)
	}
	// Once due, the next attempt goes on from attempt 2.
	f.makeDue()
	f.deliverDue(t)
	if d := f.get(t); d.Status != StatusDelivered || d.Attempts != 2 || len(rc.got()) != 2 {
		t.Errorf("delivery %+v, %d calls", d, len(rc.got()))
	}

	// An HTTP date.
	rc2 := newReceiver(t, retryAfter(http.StatusTooManyRequests, func() string {
		return time.Now().Add(2 * time.Minute).UTC().Format(http.TimeFormat)
	}))
	f2 := newFixture(t, rc2.srv.URL, DeliveryConfig{Backoff: time.Millisecond})
	before = time.Now()
	f2.deliverDue(t)
	after = time.Now()
	d = f2.get(t)
	// The date has whole seconds: the wait is within a second of 2 minutes.
	if lo, hi := before.Add(2*time.Minute-time.Second).Add(-time.Millisecond), after.Add(2*time.Minute); d.Status != StatusPending ||
		d.Attempts != 1 || d.NextAttemptAt.Before(lo) || d.NextAttemptAt.After(hi) {
		t.Errorf("HTTP-date Retry-After: due at %s, want between %s and %s: %+v", d.NextAttemptAt, lo, hi, d)
	}

	// A 503 too, capped by MaxRetryAfter.
	rc3 := newReceiver(t, retryAfter(http.StatusServiceUnavailable, func() string { return "3600" }))
	f3 := newFixture(t, rc3.srv.URL, DeliveryConfig{Backoff: time.Millisecond, MaxRetryAfter: 5 * time.Second})
	before = time.Now()
	f3.deliverDue(t)
	after = time.Now()
	d = f3.get(t)
	if d.Status != StatusPending || d.Attempts != 1 || d.LastStatusCode != 503 {
		t.Errorf("delivery after a 503 %+v", d)
	}
	checkDue(t, d, before, after, 5*time.Second)
	if n := len(rc3.got()); n != 1 {
		t.Errorf("%d calls, want 1", n)
	}

	// Other statuses' Retry-After, and one that cannot be read, leave the
	// backoff.
	for _, c := range []struct {
		code  int
		value string
	}{{http.StatusInternalServerError, "30"}, {http.StatusTooManyRequests, "soon"}} {
		rc := newReceiver(t, retryAfter(c.code, func() string { return c.value }))
		f := newFixture(t, rc.srv.URL, DeliveryConfig{Backoff: time.Minute})
		before := time.Now()
		f.deliverDue(t)
		after := time.Now()
		d := f.get(t)
		if d.Status != StatusPending || d.Attempts != 1 || d.LastStatusCode != c.code {
			t.Errorf("%d %q: %+v", c.code, c.value, d)
		}
		checkDue(t, d, before, after, time.Minute)
	}
}

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"1", time.Second, true},
		{" 120 ", 2 * time.Minute, true},
		{"0", 0, true},
		{"99999999999999999999", 24 * time.Hour, true},
		{"Fri, 01 May 2026 12:00:07 GMT", 7 * time.Second, true},
		{"Fri, 01 May 2026 11:00:00 GMT", 0, true},
		{"", 0, false},
		{"-1", 0, false},
		{"1.5", 0, false},
		{"soon", 0, false},
	} {
		got, ok := parseRetryAfter(c.in, now)
		if got != c.want || ok != c.ok {
			t.Errorf("parseRetryAfter(%q) = %s %v, want %s %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestDeliverCancelledDuringAttempt(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) > 1 {
			w.WriteHeader(200)
			return
		}
		io.ReadAll(r.Body) // so that the server notices the client leaving
		cancel()
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}))
	t.Cleanup(srv.Close)
	f := newFixture(t, srv.URL, DeliveryConfig{})
	if err := f.d.DeliverDue(ctx); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("DeliverDue = %v", err)
	}
	if n.Load() != 1 {
		t.Fatalf("%d calls, want 1", n.Load())
	}
	d := f.get(t)
	if d.Status != StatusPending || d.Attempts != 0 || d.LastStatusCode != 0 || d.LastError != "" {
		t.Errorf("an interrupted attempt was counted: %+v", d)
	}
	if d.NextAttemptAt.After(time.Now()) {
		t.Errorf("an interrupted delivery is due at %s, not at once", d.NextAttemptAt)
	}
	if logs := f.st.logsOf("delivery"); len(logs) != 0 {
		t.Errorf("an interrupted attempt was logged: %+v", logs[0])
	}
	// It is due again: the next look delivers it, on its first counted
	// attempt.
	f.deliverDue(t)
	if d := f.get(t); d.Status != StatusDelivered || d.Attempts != 1 || n.Load() != 2 {
		t.Errorf("after the interruption: %+v, %d calls", d, n.Load())
	}
}

func TestDeliverSkipsAndEdgeCases(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rc := newReceiver(t, status(200))
	f := newFixture(t, rc.srv.URL, DeliveryConfig{})

	// Not pending: nothing sent, even when due.
	f.st.setDelivery(f.del.ID, func(d *Delivery) { d.Status = StatusFailed })
	f.deliverDue(t)
	if n := len(rc.got()); n != 0 || f.get(t).Status != StatusFailed {
		t.Errorf("failed delivery resent: %d calls, %+v", n, f.get(t))
	}
	// Nor when a store hands one out anyway.
	f.d.deliver(ctx, nil, f.get(t))
	if d := f.get(t); len(rc.got()) != 0 || d.Status != StatusFailed || d.Attempts != 0 {
		t.Errorf("failed delivery resent: %d calls, %+v", len(rc.got()), d)
	}
	// Pending with the budget used up (the config shrank, or a crash
	// ended the last attempt before its outcome was recorded): failed,
	// nothing sent, and the claim's count taken back.
	budget := (DeliveryConfig{}).Attempts()
	f.st.setDelivery(f.del.ID, func(d *Delivery) { d.Status, d.Attempts, d.NextAttemptAt = StatusPending, budget, time.Time{} })
	f.deliverDue(t)
	if d := f.get(t); len(rc.got()) != 0 || d.Status != StatusFailed || d.Attempts != budget || d.LastError != "no attempts left" {
		t.Errorf("exhausted delivery: %d calls, %+v", len(rc.got()), d)
	}
	// One attempt left: it is made.
	f.st.setDelivery(f.del.ID, func(d *Delivery) {
		d.Status, d.Attempts, d.NextAttemptAt, d.LastError = StatusPending, budget-1, time.Time{}, ""
	})
	f.deliverDue(t)
	if d := f.get(t); len(rc.got()) != 1 || d.Status != StatusDelivered || d.Attempts != budget {
		t.Errorf("last attempt: %d calls, %+v", len(rc.got()), d)
	}
	rc.mu.Lock()
	rc.calls = nil
	rc.mu.Unlock()
	// The environment is gone: failed, nothing sent.
	f.st.setDelivery(f.del.ID, func(d *Delivery) {
		d.Status, d.Attempts, d.NextAttemptAt, d.EnvironmentID = StatusPending, 0, time.Time{}, 9
	})
	f.deliverDue(t)
	if d := f.get(t); len(rc.got()) != 0 || d.Status != StatusFailed || d.LastError != "environment not found" || d.Attempts != 0 {
		t.Errorf("environment gone: %d calls, %+v", len(rc.got()), d)
	}

	// The signing key cannot be opened: released, due again a second
	// later (not at once, which would make the drain spin), not counted.
	f2 := newFixture(t, rc.srv.URL, DeliveryConfig{})
	var keyCalls atomic.Int64
	f2.d.signingKey = func(context.Context, int64) (string, error) {
		keyCalls.Add(1)
		return "", errors.New("kms down")
	}
	f2.deliverDue(t)
	d := f2.get(t)
	if d.Status != StatusPending || d.Attempts != 0 || keyCalls.Load() != 1 || len(rc.got()) != 0 ||
		d.NextAttemptAt.Before(time.Now().Add(keyRetry/2)) || d.NextAttemptAt.After(time.Now().Add(keyRetry)) {
		t.Errorf("signing key failure: %d key calls, %d calls, %+v", keyCalls.Load(), len(rc.got()), d)
	}
	if logs := f2.st.logsOf("delivery"); len(logs) != 0 {
		t.Errorf("a failure to open the key was logged as an attempt: %+v", logs[0])
	}
	// Once the key opens, it is delivered on its first attempt.
	f2.d.signingKey = testKey
	f2.makeDue()
	f2.deliverDue(t)
	if d := f2.get(t); d.Status != StatusDelivered || d.Attempts != 1 || len(rc.got()) != 1 {
		t.Errorf("after the key came back: %d calls, %+v", len(rc.got()), d)
	}

	// A failing claim is returned.
	f3 := newFixture(t, rc.srv.URL, DeliveryConfig{})
	boom := errors.New("db down")
	f3.st.claimErr = boom
	if err := f3.d.DeliverDue(ctx); !errors.Is(err, boom) {
		t.Errorf("claim failure: %v", err)
	}

	// A failure to record the attempt leaves the delivery claimed: another
	// look takes it when the lease ends. The attempt was made, and counted
	// by its claim: the next one is attempt 2.
	f4 := newFixture(t, rc.srv.URL, DeliveryConfig{Timeout: time.Second})
	f4.st.updateErr = boom
	before := time.Now()
	f4.deliverDue(t)
	after := time.Now()
	f4.st.updateErr = nil
	d = f4.get(t)
	if d.Status != StatusPending || d.Attempts != 1 {
		t.Errorf("after a failed record: %+v", d)
	}
	checkDue(t, d, before, after, 3*time.Second+time.Minute) // the default Lease
}

// Handle only says that there is work: whatever JSON args the job has (those
// of older versions name a delivery), it kicks the background loop and
// returns nil without delivering anything itself.
func TestDelivererHandle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rc := newReceiver(t, status(200))
	f := newFixture(t, rc.srv.URL, DeliveryConfig{})
	for _, args := range []string{`{"delivery_id":"x"}`, `{}`, string(NewJob().Args), ``} {
		if err := f.d.Handle(ctx, &jobs.Run{ID: "j1", Kind: JobKind, Args: json.RawMessage(args), Attempt: 1, MaxAttempts: 3}); err != nil {
			t.Errorf("Handle(%s) = %v", args, err)
		}
		select {
		case <-f.d.kick:
		default:
			t.Errorf("Handle(%s) did not kick", args)
		}
	}
	for _, args := range []string{`not json`, `{"delivery_id":`} {
		if err := f.d.Handle(ctx, &jobs.Run{ID: "j2", Kind: JobKind, Args: json.RawMessage(args)}); !jobs.IsCancel(err) {
			t.Errorf("Handle(%s) = %v, want a cancel", args, err)
		}
	}
	// Not started: nothing was delivered.
	if d := f.get(t); len(rc.got()) != 0 || d.Status != StatusPending || d.Attempts != 0 {
		t.Errorf("Handle delivered: %d calls, %+v", len(rc.got()), d)
	}
}

// A started Deliverer delivers in the background when a job runs, and its
// retries when they fall due; Stop returns.
func TestDelivererStartedDelivers(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, status(500, 200))
	// No polling during the test: the job and the retry timer do the work.
	f := newFixture(t, rc.srv.URL, DeliveryConfig{Backoff: 5 * time.Millisecond, PollInterval: time.Hour})
	f.st.setDelivery(f.del.ID, func(d *Delivery) { d.NextAttemptAt = time.Now().Add(time.Hour) })
	if err := f.d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := f.d.Start(context.Background()); err == nil {
		t.Error("started twice")
	}
	// The first look, at Start, finds nothing due.
	waitFor(t, "the first look", func() bool { return f.st.claimCount() >= 1 })
	// As Notify does: a due delivery, then its job.
	f.st.setDelivery(f.del.ID, func(d *Delivery) { d.NextAttemptAt = schedNow() })
	j := NewJob()
	if err := f.d.Handle(context.Background(), &jobs.Run{ID: "j1", Kind: j.Kind, Args: j.Args, Attempt: 1, MaxAttempts: j.MaxAttempts}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the delivery", func() bool { return f.get(t).Status != StatusPending })
	if d := f.get(t); d.Status != StatusDelivered || d.Attempts != 2 || len(rc.got()) != 2 {
		t.Errorf("delivery %+v, %d calls", d, len(rc.got()))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := f.d.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := f.d.Stop(ctx); err != nil {
		t.Errorf("second Stop: %v", err)
	}
}

// A started Deliverer finds due deliveries that no job announced every
// PollInterval.
func TestDelivererPolls(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, status(200))
	f := newFixture(t, rc.srv.URL, DeliveryConfig{PollInterval: 10 * time.Millisecond})
	f.st.setDelivery(f.del.ID, func(d *Delivery) { d.NextAttemptAt = time.Now().Add(time.Hour) })
	if err := f.d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.d.Stop(context.Background()) })
	waitFor(t, "the first look", func() bool { return f.st.claimCount() >= 1 })
	f.st.setDelivery(f.del.ID, func(d *Delivery) { d.NextAttemptAt = schedNow() })
	waitFor(t, "the delivery", func() bool { return f.get(t).Status == StatusDelivered })
	if n := len(rc.got()); n != 1 {
		t.Errorf("%d calls", n)
	}
}

// Stop waits for the attempts in flight; when its context ends first, it
// cuts them short, and they do not count.
func TestDelivererStop(t *testing.T) {
	t.Parallel()
	// The server answers only when the test ends (or the attempt is cut):
	// Stop returns only if it cut the attempt short.
	started := make(chan struct{}, 1)
	hold := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		select {
		case started <- struct{}{}:
		default:
		}
		select {
		case <-r.Context().Done():
		case <-hold:
		}
	}))
	t.Cleanup(func() { close(hold); srv.Close() })
	f := newFixture(t, srv.URL, DeliveryConfig{PollInterval: time.Hour})
	if err := f.d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-time.After(30 * time.Second):
		t.Fatal("no attempt")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- f.d.Stop(ctx) }()
	select {
	case err := <-stopped:
		if err != nil {
			t.Errorf("Stop = %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Stop did not return after its deadline: it did not cut the attempt in flight")
	}
	d := f.get(t)
	if d.Status != StatusPending || d.Attempts != 0 || d.NextAttemptAt.After(time.Now()) {
		t.Errorf("a cut attempt counted, or its delivery was not released: %+v", d)
	}
	if logs := f.st.logsOf("delivery"); len(logs) != 0 {
		t.Errorf("a cut attempt was logged: %+v", logs[0])
	}

	// With time enough, Stop waits for the attempt, which counts: the
	// receiver answers once Stop has been called.
	answer := make(chan struct{})
	rc := newReceiver(t, func(n int, w http.ResponseWriter) {
		<-answer
		w.WriteHeader(200)
	})
	f2 := newFixture(t, rc.srv.URL, DeliveryConfig{PollInterval: time.Hour})
	if err := f2.d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "an attempt", func() bool { return len(rc.got()) == 1 })
	ctx2, cancel2 := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel2()
	stopped2 := make(chan error, 1)
	go func() { stopped2 <- f2.d.Stop(ctx2) }()
	close(answer)
	if err := <-stopped2; err != nil {
		t.Fatal(err)
	}
	if d := f2.get(t); d.Status != StatusDelivered || d.Attempts != 1 {
		t.Errorf("Stop did not wait for the attempt: %+v", d)
	}
}

// DeliverDue attempts up to Concurrency deliveries at once, and goes on
// until none is due.
func TestDeliverConcurrency(t *testing.T) {
	t.Parallel()
	// The first attempts wait until Concurrency of them are in flight
	// together (if that never happens, they give up after 30 s and the
	// test fails), and none may see more.
	var inflight, peak atomic.Int64
	full := make(chan struct{})
	var fullOnce sync.Once
	rc := newReceiver(t, func(n int, w http.ResponseWriter) {
		cur := inflight.Add(1)
		for p := peak.Load(); cur > p && !peak.CompareAndSwap(p, cur); p = peak.Load() {
		}
		if cur == 3 {
			fullOnce.Do(func() { close(full) })
		}
		select {
		case <-full:
		case <-time.After(30 * time.Second):
		}
		inflight.Add(-1)
		w.WriteHeader(200)
	})
	st := newFakeStore()
	const n = 10
	for i := range n {
		del := &Delivery{ID: NewID(), EnvironmentID: 1, EventID: NewID(), Type: TypeAuth, URL: rc.srv.URL,
			Body: []byte(`{"n":` + strconv.Itoa(i) + `}`), Status: StatusPending, NextAttemptAt: schedNow()}
		if err := st.CreateDeliveries(context.Background(), del); err != nil {
			t.Fatal(err)
		}
	}
	d := NewDeliverer(DelivererConfig{Delivery: DeliveryConfig{Concurrency: 3, Policy: egress.Policy{AllowLoopback: true}}, Store: st, SigningKey: testKey, Log: &oplog.Writer{Store: st}})
	if err := d.DeliverDue(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, del := range st.all() {
		if del.Status != StatusDelivered || del.Attempts != 1 {
			t.Errorf("delivery %s: %s after %d attempts", del.ID, del.Status, del.Attempts)
		}
	}
	if got := len(rc.got()); got != n {
		t.Errorf("%d POSTs, want %d", got, n)
	}
	if p := peak.Load(); p != 3 {
		t.Errorf("%d attempts at once, want 3 (Concurrency 3)", p)
	}
}

func TestDeliverLogExcerptAndSecrets(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("é", 300) // 600 bytes; a cut at 256 splits no rune
	rc := newReceiver(t, func(n int, w http.ResponseWriter) {
		w.WriteHeader(500)
		io.WriteString(w, "x"+big)
	})
	f := newFixture(t, strings.Replace(rc.srv.URL, "http://", "http://user:pa55word@", 1), DeliveryConfig{Retries: -1})
	f.deliverDue(t)
	logs := f.st.logsOf("delivery")
	if len(logs) != 1 {
		t.Fatalf("%d delivery logs, want 1", len(logs))
	}
	l := logs[0]
	ex := l.Meta["response"].(string)
	if len(ex) > 256 || len(ex) < 250 || !utf8.ValidString(ex) || !strings.HasPrefix(ex, "xé") {
		t.Errorf("excerpt of %d bytes: %q", len(ex), ex)
	}
	all := l.Message + " " + strings.Join(func() []string {
		var s []string
		for k, v := range l.Meta {
			s = append(s, k+"="+toString(v))
		}
		return s
	}(), " ")
	for _, secret := range []string{testSigningKey, "pa55word", refHMAC(testSigningKey, vecBody)} {
		if strings.Contains(all, secret) {
			t.Errorf("log holds a secret %q: %s", secret, all)
		}
	}
}

func toString(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case int:
		return strconv.Itoa(v)
	case int64:
		return strconv.FormatInt(v, 10)
	}
	return ""
}

func TestDeliveryConfig(t *testing.T) {
	t.Parallel()
	c := DeliveryConfig{}.withDefaults()
	if c.Retries != 2 || c.Backoff != 100*time.Millisecond || c.Multiplier != 2 || c.Timeout != 20*time.Second || c.Client == nil || c.Client.CheckRedirect == nil ||
		c.MaxRetryAfter != 10*time.Minute || c.Concurrency != 64 || c.Lease != 2*time.Minute || c.PollInterval != time.Second {
		t.Errorf("defaults %+v", c)
	}
	if c := (DeliveryConfig{Timeout: 10 * time.Second}).withDefaults(); c.Lease != 90*time.Second {
		t.Errorf("default lease with a 10s timeout: %s", c.Lease)
	}
	if c := (DeliveryConfig{Concurrency: 5, Lease: time.Hour, PollInterval: time.Minute}).withDefaults(); c.Concurrency != 5 || c.Lease != time.Hour || c.PollInterval != time.Minute {
		t.Errorf("set values not kept: %+v", c)
	}
	if tr, ok := c.Client.Transport.(*http.Transport); !ok || tr.MaxIdleConnsPerHost < 64 {
		t.Errorf("the default client keeps too few idle connections per receiver: %+v", c.Client.Transport)
	}
	// The spec's first attempts, then the slow schedule.
	var waits []time.Duration
	for n := 1; n < c.budget(); n++ {
		waits = append(waits, c.wait(n))
	}
	wantWaits := append([]time.Duration{100 * time.Millisecond, 200 * time.Millisecond}, DefaultSchedule()...)
	if !slices.Equal(waits, wantWaits) {
		t.Errorf("waits %v, want %v", waits, wantWaits)
	}
	if n := len(DefaultSchedule()); (DeliveryConfig{}).Attempts() != 3+n || (DeliveryConfig{Retries: -1}).Attempts() != 1+n ||
		(DeliveryConfig{Retries: 5}).Attempts() != 6+n || (DeliveryConfig{Schedule: []time.Duration{}}).Attempts() != 3 ||
		(DeliveryConfig{Retries: -1, Schedule: []time.Duration{}}).Attempts() != 1 ||
		(DeliveryConfig{Schedule: []time.Duration{time.Second, time.Minute}}).Attempts() != 5 {
		t.Error("Attempts")
	}
	if (DeliveryConfig{Retries: 50, Backoff: time.Hour, Multiplier: 1e9}).withDefaults().wait(40) != 24*time.Hour {
		t.Error("wait is not capped")
	}
	// The default attempts span at least a day: an outage of the receiver
	// shorter than that loses nothing.
	if span := (DeliveryConfig{}).Span(); span < 24*time.Hour ||
		span != 300*time.Millisecond+25*time.Hour+48*time.Minute+46*time.Second {
		t.Errorf("default span %s, want 25h48m46.3s (at least 24h)", span)
	}
	if span := (DeliveryConfig{Schedule: []time.Duration{}}).Span(); span != 300*time.Millisecond {
		t.Errorf("span of the fast retries alone: %s", span)
	}
	if span := (DeliveryConfig{Retries: -1, Schedule: []time.Duration{time.Second, time.Minute}}).Span(); span != time.Minute+time.Second {
		t.Errorf("span of a schedule alone: %s", span)
	}
	for _, bad := range []DeliveryConfig{{Backoff: -1}, {Multiplier: -1}, {Timeout: -1}, {MaxRetryAfter: -1},
		{Concurrency: -1}, {PollInterval: -1}, {Lease: -1},
		{Lease: time.Minute},                           // 3 × the default 20s Timeout
		{Lease: 59 * time.Second},                      // under it
		{Timeout: time.Second, Lease: 3 * time.Second}, // not more than 3 × Timeout
		{Schedule: []time.Duration{0}}, {Schedule: []time.Duration{time.Second, -time.Second}},
	} {
		if bad.Validate() == nil {
			t.Errorf("%+v valid", bad)
		}
	}
	for _, good := range []DeliveryConfig{{}, {Lease: time.Minute + time.Second}, {Timeout: time.Second, Lease: 3*time.Second + 1},
		{Timeout: time.Hour}, {Concurrency: 1, PollInterval: time.Millisecond},
		{Schedule: []time.Duration{}}, {Schedule: []time.Duration{time.Nanosecond}}} {
		if err := good.Validate(); err != nil {
			t.Errorf("%+v invalid: %v", good, err)
		}
	}
}

// batchStore is a fakeStore with the batch interface, counting its calls.
type batchStore struct {
	*fakeStore
	records atomic.Int64
	first   atomic.Int64  // the number of attempts of the first RecordAttempts
	gate    chan struct{} // when set, the first RecordAttempts waits on it
	once    sync.Once
}

func (s *batchStore) RecordAttempts(ctx context.Context, as []Attempt) error {
	if s.records.Add(1) == 1 {
		s.first.Store(int64(len(as)))
	}
	if s.gate != nil {
		s.once.Do(func() { <-s.gate })
	}
	for _, a := range as {
		if err := s.UpdateDelivery(ctx, a.Delivery); errors.Is(err, store.ErrNotFound) {
			continue
		} else if err != nil {
			return err
		}
		if a.Entry == nil {
			continue // not logged
		}
		if err := s.AppendLog(ctx, a.Entry); err != nil {
			return err
		}
	}
	return nil
}

// Concurrent attempts share the Store's batch writes: each webhook is
// delivered and recorded once, with its log entry, in fewer store calls than
// deliveries; the deliveries are claimed in batches too. An attempt does not
// wait for its outcome to be stored before the next one starts.
func TestDeliverBatchesStoreCalls(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, status(200))
	st := &batchStore{fakeStore: newFakeStore(), gate: make(chan struct{})}
	const lanes = 4
	d := NewDeliverer(DelivererConfig{Store: st, SigningKey: testKey, Log: &oplog.Writer{Store: st},
		Delivery: DeliveryConfig{Concurrency: lanes, Policy: egress.Policy{AllowLoopback: true}}})
	if d.recorder == nil {
		t.Fatal("the Deliverer does not use the batch interface of the Store")
	}
	const n = 40 // ten times the lanes
	for i := range n {
		del := &Delivery{ID: NewID(), EnvironmentID: 1, EventID: NewID(), Type: TypeAuth, URL: rc.srv.URL,
			Body: []byte(`{"n":` + strconv.Itoa(i) + `}`), Status: StatusPending, NextAttemptAt: schedNow()}
		if err := st.CreateDeliveries(context.Background(), del); err != nil {
			t.Fatal(err)
		}
	}
	errc := make(chan error, 1)
	go func() { errc <- d.DeliverDue(context.Background()) }()
	// The first record is held until every webhook has arrived: the
	// attempts go on while it is held, and the other outcomes can only
	// share one batch after it.
	waitFor(t, "every outcome to be handed over while the first record is held", func() bool {
		first := st.first.Load()
		return first > 0 && len(rc.got()) == n && d.recordsQueued.Load() == n-first
	})
	if r := st.records.Load(); r != 1 {
		t.Errorf("%d RecordAttempts calls started while the first was held, want 1", r)
	}
	close(st.gate)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	for _, del := range st.all() {
		if del.Status != StatusDelivered || del.Attempts != 1 {
			t.Errorf("delivery %s: %s after %d attempts", del.ID, del.Status, del.Attempts)
		}
	}
	if got := len(st.logsOf("delivery")); got != n {
		t.Errorf("%d log entries, want %d", got, n)
	}
	if got := len(rc.got()); got != n {
		t.Errorf("%d POSTs, want %d", got, n)
	}
	if r := st.records.Load(); r > 2 {
		t.Errorf("%d RecordAttempts calls for %d concurrent attempts, want at most 2", r, n)
	}
	// Claims of a lane's worth each, and one that finds none.
	if c := st.claimCount(); c > n/lanes+1 {
		t.Errorf("%d claims for %d deliveries in batches of %d, want at most %d", c, n, lanes, n/lanes+1)
	}
}

// TestDeliverUnverifiedAttemptsSampled: the attempts of Unverified
// deliveries (forwards that anyone may have caused) are logged at most once
// per environment, integration and outcome (delivered, retrying, given up)
// in each interval of the Sampler, by Now, with the count of those left
// out; each delivery keeps its own status and attempt count. The attempts
// of other deliveries are all logged. With and without the Store's batch
// interface.
func TestDeliverUnverifiedAttemptsSampled(t *testing.T) {
	t.Parallel()
	for _, batch := range []bool{false, true} {
		t.Run(fmt.Sprint("batch=", batch), func(t *testing.T) {
			t.Parallel()
			ok := newReceiver(t, status(200))
			down := newReceiver(t, status(500))
			fs := newFakeStore()
			var st Store = fs
			if batch {
				st = &batchStore{fakeStore: fs}
			}
			var mu sync.Mutex
			now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
			sampler := oplog.NewSampler(time.Minute)
			d := NewDeliverer(DelivererConfig{Store: st, SigningKey: testKey, Log: &oplog.Writer{Store: fs}, Sampler: sampler,
				Now: func() time.Time { mu.Lock(); defer mu.Unlock(); return now },
				Delivery: DeliveryConfig{Retries: 1, Backoff: time.Millisecond, Schedule: []time.Duration{},
					Policy: egress.Policy{AllowLoopback: true}}})
			if (d.recorder != nil) != batch {
				t.Fatalf("batch interface used: %v", d.recorder != nil)
			}
			add := func(url string, unverified bool) {
				t.Helper()
				del := &Delivery{ID: NewID(), EnvironmentID: 1, EventID: NewID(), Type: TypeForward, IntegrationKey: "notion",
					URL: url, Body: []byte(`{}`), Status: StatusPending, NextAttemptAt: schedNow(), Unverified: unverified}
				if err := fs.CreateDeliveries(t.Context(), del); err != nil {
					t.Fatal(err)
				}
			}
			settle := func() {
				t.Helper()
				waitFor(t, "every delivery to be final", func() bool {
					if err := d.DeliverDue(t.Context()); err != nil {
						t.Fatal(err)
					}
					for _, del := range fs.all() {
						if del.Status == StatusPending {
							return false
						}
					}
					return true
				})
			}
			const n = 10
			for range n {
				add(ok.srv.URL, true)
				add(down.srv.URL, true)
			}
			for range 3 {
				add(down.srv.URL, false)
			}
			settle()
			for _, del := range fs.all() {
				want, attempts := StatusFailed, 2
				if del.URL == ok.srv.URL {
					want, attempts = StatusDelivered, 1
				}
				if del.Status != want || del.Attempts != attempts || !del.Unverified && del.URL == ok.srv.URL {
					t.Errorf("delivery %+v", del)
				}
			}
			count := func(logs []*oplog.Entry) map[string]int {
				out := map[string]int{}
				for _, e := range logs {
					k := "verified"
					if e.Meta["unverified"] == true {
						k = "unverified"
					}
					switch msg := e.Message; {
					case e.Status == oplog.StatusSuccess:
						k += " delivered"
					case strings.HasSuffix(msg, "giving up"):
						k += " given_up"
					default:
						k += " retrying"
					}
					out[k]++
				}
				return out
			}
			logs := fs.logsOf("delivery")
			want := map[string]int{"unverified delivered": 1, "unverified retrying": 1, "unverified given_up": 1,
				"verified retrying": 3, "verified given_up": 3}
			if got := count(logs); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("%d attempts of unverified deliveries and 6 of others logged %v, want %v", 3*n, got, want)
			}
			for _, e := range logs {
				if e.Meta["suppressed"] != nil {
					t.Errorf("first entry of its key with suppressed: %+v", e.Meta)
				}
			}

			// An interval later: one entry per outcome again, counting
			// the attempts left out.
			mu.Lock()
			now = now.Add(time.Minute)
			mu.Unlock()
			add(ok.srv.URL, true)
			add(down.srv.URL, true)
			settle()
			later := fs.logsOf("delivery")[len(logs):]
			if got := count(later); fmt.Sprint(got) != fmt.Sprint(map[string]int{"unverified delivered": 1,
				"unverified retrying": 1, "unverified given_up": 1}) {
				t.Fatalf("entries an interval later: %v", got)
			}
			for _, e := range later {
				if e.Meta["suppressed"] != n-1 {
					t.Errorf("entry %q counts %v left out, want %d", e.Message, e.Meta["suppressed"], n-1)
				}
			}
		})
	}
}
