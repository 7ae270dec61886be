package webhooks

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

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

// fixture is a Deliverer over a fake store holding one pending delivery.
type fixture struct {
	st  *fakeStore
	d   *Deliverer
	del *Delivery
	run *jobs.Run
}

func newFixture(t *testing.T, url string, cfg DeliveryConfig) *fixture {
	t.Helper()
	st := newFakeStore()
	del := &Delivery{ID: NewID(), EnvironmentID: 1, EventID: NewID(), Type: TypeAuth, IntegrationKey: "gh", ConnectionID: "c1",
		URL: url, Body: []byte(vecBody), Status: StatusPending}
	if err := st.CreateDeliveries(context.Background(), del); err != nil {
		t.Fatal(err)
	}
	keyFn := func(ctx context.Context, envID int64) (string, error) {
		if envID != 1 {
			return "", store.ErrNotFound
		}
		return testSigningKey, nil
	}
	if cfg.Backoff == 0 {
		cfg.Backoff = time.Millisecond
	}
	d := NewDeliverer(DelivererConfig{Delivery: cfg, Store: st, SigningKey: keyFn, Log: &oplog.Writer{Store: st}})
	j := NewJob(del.ID)
	return &fixture{st: st, d: d, del: del, run: &jobs.Run{ID: "j1", Kind: j.Kind, Args: j.Args, Attempt: 1, MaxAttempts: j.MaxAttempts}}
}

func (f *fixture) get(t *testing.T) *Delivery {
	t.Helper()
	d, err := f.st.GetDelivery(context.Background(), f.del.ID)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestDeliverFirstAttempt(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, status(202))
	f := newFixture(t, rc.srv.URL, DeliveryConfig{})
	if err := f.d.Handle(context.Background(), f.run); err != nil {
		t.Fatal(err)
	}
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
	// Handling the job again sends nothing: it is no longer pending.
	if err := f.d.Handle(context.Background(), f.run); err != nil || len(rc.got()) != 1 {
		t.Errorf("second run: %v, %d calls", err, len(rc.got()))
	}
}

func TestDeliverRetriesThenSucceeds(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, status(500, 502, 200))
	var clock atomic.Int64
	clock.Store(1777636800)
	f := newFixture(t, rc.srv.URL, DeliveryConfig{Backoff: 20 * time.Millisecond, Multiplier: 2})
	// Each attempt reads the clock: one second apart.
	f.d.now = func() time.Time { return time.Unix(clock.Add(1), 0) }
	if err := f.d.Handle(context.Background(), f.run); err != nil {
		t.Fatal(err)
	}
	d := f.get(t)
	if d.Status != StatusDelivered || d.Attempts != 3 || d.LastStatusCode != 200 {
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
	if gap := calls[1].at.Sub(calls[0].at); gap < 20*time.Millisecond {
		t.Errorf("first backoff %s < 20ms", gap)
	}
	if gap := calls[2].at.Sub(calls[1].at); gap < 40*time.Millisecond {
		t.Errorf("second backoff %s < 40ms", gap)
	}
	logs := f.st.logsOf("delivery")
	if len(logs) != 3 || logs[0].Status != oplog.StatusFailure || logs[1].Status != oplog.StatusFailure || logs[2].Status != oplog.StatusSuccess ||
		logs[0].Meta["attempt"] != 1 || logs[2].Meta["attempt"] != 3 || logs[1].Meta["status"] != 502 {
		for _, l := range logs {
			t.Errorf("log %s %s %v", l.Status, l.Message, l.Meta)
		}
	}
}

func TestDeliverGivesUp(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, status(404))
	f := newFixture(t, rc.srv.URL, DeliveryConfig{Retries: 3})
	if err := f.d.Handle(context.Background(), f.run); err != nil {
		t.Fatalf("a failed delivery completes its job: %v", err)
	}
	d := f.get(t)
	if d.Status != StatusFailed || d.Attempts != 4 || d.LastStatusCode != 404 || d.LastError != "status 404" || d.DeliveredAt != nil {
		t.Errorf("delivery %+v", d)
	}
	if n := len(rc.got()); n != 4 {
		t.Errorf("%d calls, want 4", n)
	}
	logs := f.st.logsOf("delivery")
	if len(logs) != 4 || !strings.Contains(logs[3].Message, "giving up") {
		t.Errorf("%d logs; last %q", len(logs), logs[len(logs)-1].Message)
	}

	// Retries < 0: one attempt.
	rc2 := newReceiver(t, status(500))
	f2 := newFixture(t, rc2.srv.URL, DeliveryConfig{Retries: -1})
	if err := f2.d.Handle(context.Background(), f2.run); err != nil || len(rc2.got()) != 1 || f2.get(t).Status != StatusFailed {
		t.Errorf("no retries: %v, %d calls", err, len(rc2.got()))
	}
}

func TestDeliverNetworkErrorAndTimeout(t *testing.T) {
	t.Parallel()
	// A closed server: connection refused.
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	f := newFixture(t, dead.URL+"/hook", DeliveryConfig{Retries: 1})
	if err := f.d.Handle(context.Background(), f.run); err != nil {
		t.Fatal(err)
	}
	d := f.get(t)
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
	f = newFixture(t, slow.URL, DeliveryConfig{Retries: -1, Timeout: 50 * time.Millisecond})
	start := time.Now()
	if err := f.d.Handle(context.Background(), f.run); err != nil {
		t.Fatal(err)
	}
	if d := f.get(t); d.Status != StatusFailed || !strings.Contains(d.LastError, "timeout") || time.Since(start) > 5*time.Second {
		t.Errorf("delivery %+v after %s", d, time.Since(start))
	}
}

func TestDeliverRedirectIsFailure(t *testing.T) {
	t.Parallel()
	target := newReceiver(t, status(200))
	redirect := newReceiver(t, func(n int, w http.ResponseWriter) {
		w.Header().Set("Location", target.srv.URL)
		w.WriteHeader(http.StatusTemporaryRedirect)
	})
	f := newFixture(t, redirect.srv.URL, DeliveryConfig{Retries: -1})
	if err := f.d.Handle(context.Background(), f.run); err != nil {
		t.Fatal(err)
	}
	if d := f.get(t); d.Status != StatusFailed || d.LastStatusCode != 307 {
		t.Errorf("delivery %+v", d)
	}
	if n := len(target.got()); n != 0 {
		t.Errorf("the redirect was followed (%d calls)", n)
	}
}

func TestDeliverRetryAfter(t *testing.T) {
	t.Parallel()
	// A long Retry-After ends the run with a snooze, after persisting the
	// attempt.
	rc := newReceiver(t, func(n int, w http.ResponseWriter) {
		if n == 1 {
			w.Header().Set("Retry-After", "30")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.WriteHeader(200)
	})
	f := newFixture(t, rc.srv.URL, DeliveryConfig{})
	err := f.d.Handle(context.Background(), f.run)
	if d, ok := jobs.SnoozeDuration(err); !ok || d != 30*time.Second {
		t.Fatalf("Handle = %v, want a 30s snooze", err)
	}
	if d := f.get(t); d.Status != StatusPending || d.Attempts != 1 || d.LastStatusCode != 429 {
		t.Errorf("delivery after snooze %+v", d)
	}
	// The snoozed run goes on from attempt 2.
	if err := f.d.Handle(context.Background(), f.run); err != nil {
		t.Fatal(err)
	}
	if d := f.get(t); d.Status != StatusDelivered || d.Attempts != 2 {
		t.Errorf("delivery %+v", d)
	}

	// MaxRetryAfter caps the wait.
	rc2 := newReceiver(t, func(n int, w http.ResponseWriter) {
		w.Header().Set("Retry-After", "3600")
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	f2 := newFixture(t, rc2.srv.URL, DeliveryConfig{MaxRetryAfter: 5 * time.Second})
	if d, ok := jobs.SnoozeDuration(f2.d.Handle(context.Background(), f2.run)); !ok || d != 5*time.Second {
		t.Errorf("capped snooze %s %v", d, ok)
	}
	// A short one is slept through within the run.
	rc3 := newReceiver(t, func(n int, w http.ResponseWriter) {
		if n == 1 {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.WriteHeader(200)
	})
	f3 := newFixture(t, rc3.srv.URL, DeliveryConfig{})
	if err := f3.d.Handle(context.Background(), f3.run); err != nil || f3.get(t).Status != StatusDelivered {
		t.Errorf("short Retry-After: %v %+v", err, f3.get(t))
	}
	// A long exponential backoff snoozes too.
	rc4 := newReceiver(t, status(500))
	f4 := newFixture(t, rc4.srv.URL, DeliveryConfig{Backoff: time.Minute})
	if d, ok := jobs.SnoozeDuration(f4.d.Handle(context.Background(), f4.run)); !ok || d != time.Minute {
		t.Errorf("long backoff: %s %v", d, ok)
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

func TestDeliverStopping(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, status(500, 500, 200))
	// A long in-run backoff, cut short by the context: the run returns the
	// context's error with the first attempt persisted.
	f := newFixture(t, rc.srv.URL, DeliveryConfig{Backoff: 1500 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for len(rc.got()) == 0 {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(20 * time.Millisecond)
		cancel()
	}()
	err := f.d.Handle(ctx, f.run)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Handle = %v, want context.Canceled", err)
	}
	if d := f.get(t); d.Status != StatusPending || d.Attempts != 1 {
		t.Fatalf("after stop %+v", d)
	}
	// Restarted (another Deliverer, as after a restart): it goes on from
	// the stored count, so the budget stays three attempts in total.
	f.d = NewDeliverer(DelivererConfig{Delivery: DeliveryConfig{Backoff: time.Millisecond}, Store: f.st, SigningKey: f.d.signingKey, Log: f.d.log})
	if err := f.d.Handle(context.Background(), f.run); err != nil {
		t.Fatal(err)
	}
	if d := f.get(t); d.Status != StatusDelivered || d.Attempts != 3 || len(rc.got()) != 3 {
		t.Errorf("after restart %+v, %d calls", d, len(rc.got()))
	}
}

func TestDeliverCancelledDuringAttempt(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body) // so that the server notices the client leaving
		cancel()
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}))
	t.Cleanup(srv.Close)
	f := newFixture(t, srv.URL, DeliveryConfig{})
	if err := f.d.Handle(ctx, f.run); !errors.Is(err, context.Canceled) {
		t.Fatalf("Handle = %v", err)
	}
	if d := f.get(t); d.Status != StatusPending || d.Attempts != 0 {
		t.Errorf("an interrupted attempt was counted: %+v", d)
	}
}

func TestDeliverSkipsAndEdgeCases(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rc := newReceiver(t, status(200))
	f := newFixture(t, rc.srv.URL, DeliveryConfig{})

	// Bad args: cancelled without retries.
	if err := f.d.Handle(ctx, &jobs.Run{Kind: JobKind, Args: []byte(`{}`)}); !jobs.IsCancel(err) {
		t.Errorf("bad args: %v", err)
	}
	// Unknown delivery (rolled back, deleted): done.
	j := NewJob("00000000-0000-4000-8000-000000000000")
	if err := f.d.Handle(ctx, &jobs.Run{Kind: JobKind, Args: j.Args}); err != nil {
		t.Errorf("unknown delivery: %v", err)
	}
	// Already failed: nothing sent.
	d := f.get(t)
	d.Status = StatusFailed
	f.st.UpdateDelivery(ctx, d)
	if err := f.d.Handle(ctx, f.run); err != nil || len(rc.got()) != 0 {
		t.Errorf("failed delivery resent: %v", err)
	}
	// Pending with the budget used up (the config shrank): failed, nothing
	// sent.
	d.Status, d.Attempts = StatusPending, 3
	f.st.UpdateDelivery(ctx, d)
	if err := f.d.Handle(ctx, f.run); err != nil || len(rc.got()) != 0 || f.get(t).Status != StatusFailed {
		t.Errorf("exhausted delivery: %v, %d calls, %+v", err, len(rc.got()), f.get(t))
	}
	// The environment is gone: failed.
	d.Status, d.Attempts, d.EnvironmentID = StatusPending, 0, 1
	f.st.UpdateDelivery(ctx, d)
	f.st.mu.Lock()
	f.st.deliveries[d.ID].EnvironmentID = 9
	f.st.mu.Unlock()
	if err := f.d.Handle(ctx, f.run); err != nil || f.get(t).Status != StatusFailed || f.get(t).LastError != "environment not found" {
		t.Errorf("environment gone: %v %+v", err, f.get(t))
	}
	// A storage failure is returned, for the scheduler to retry.
	f2 := newFixture(t, rc.srv.URL, DeliveryConfig{})
	boom := errors.New("db down")
	f2.st.updateErr = boom
	if err := f2.d.Handle(ctx, f2.run); !errors.Is(err, boom) {
		t.Errorf("storage failure: %v", err)
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
	if err := f.d.Handle(context.Background(), f.run); err != nil {
		t.Fatal(err)
	}
	l := f.st.logsOf("delivery")[0]
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
	if c.Retries != 2 || c.Backoff != 100*time.Millisecond || c.Multiplier != 2 || c.Timeout != 20*time.Second || c.Client == nil || c.Client.CheckRedirect == nil {
		t.Errorf("defaults %+v", c)
	}
	if tr, ok := c.Client.Transport.(*http.Transport); !ok || tr.MaxIdleConnsPerHost < 64 {
		t.Errorf("the default client keeps too few idle connections per receiver: %+v", c.Client.Transport)
	}
	if c.wait(1) != 100*time.Millisecond || c.wait(2) != 200*time.Millisecond || c.wait(3) != 400*time.Millisecond {
		t.Errorf("waits %s %s %s", c.wait(1), c.wait(2), c.wait(3))
	}
	if (DeliveryConfig{}).Attempts() != 3 || (DeliveryConfig{Retries: -1}).Attempts() != 1 || (DeliveryConfig{Retries: 5}).Attempts() != 6 {
		t.Error("Attempts")
	}
	if (DeliveryConfig{Backoff: time.Hour, Multiplier: 1e9}).withDefaults().wait(40) != 24*time.Hour {
		t.Error("wait is not capped")
	}
	for _, bad := range []DeliveryConfig{{Backoff: -1}, {Multiplier: -1}, {Timeout: -1}, {MaxRetryAfter: -1}} {
		if bad.Validate() == nil {
			t.Errorf("%+v valid", bad)
		}
	}
	if (DeliveryConfig{}).Validate() != nil {
		t.Error("zero config invalid")
	}
}

// batchStore is a fakeStore with the batch interfaces, counting their calls.
type batchStore struct {
	*fakeStore
	gets, records atomic.Int64
	gate          chan struct{} // when set, the first RecordAttempts waits on it
	once          sync.Once
}

func (s *batchStore) GetDeliveries(ctx context.Context, ids []string) ([]*Delivery, error) {
	s.gets.Add(1)
	time.Sleep(5 * time.Millisecond) // a round trip, during which others queue
	var out []*Delivery
	for _, id := range ids {
		if d, err := s.GetDelivery(ctx, id); err == nil {
			out = append(out, d)
		}
	}
	return out, nil
}

func (s *batchStore) RecordAttempts(ctx context.Context, as []Attempt) error {
	s.records.Add(1)
	if s.gate != nil {
		s.once.Do(func() { <-s.gate })
	}
	for _, a := range as {
		if err := s.UpdateDelivery(ctx, a.Delivery); errors.Is(err, store.ErrNotFound) {
			continue
		} else if err != nil {
			return err
		}
		if err := s.AppendLog(ctx, a.Entry); err != nil {
			return err
		}
	}
	return nil
}

// Concurrent delivery jobs share the Store's batch reads and writes: each
// webhook is delivered and recorded once, with its log entry, in fewer
// store calls than jobs.
func TestDeliverBatchesStoreCalls(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, status(200))
	st := &batchStore{fakeStore: newFakeStore(), gate: make(chan struct{})}
	keyFn := func(context.Context, int64) (string, error) { return testSigningKey, nil }
	d := NewDeliverer(DelivererConfig{Store: st, SigningKey: keyFn, Log: &oplog.Writer{Store: st}})
	if d.reads == nil || d.records == nil {
		t.Fatal("the Deliverer does not use the batch interfaces of the Store")
	}
	const n = 40
	runs := make([]*jobs.Run, n)
	for i := range runs {
		del := &Delivery{ID: NewID(), EnvironmentID: 1, EventID: NewID(), Type: TypeAuth, URL: rc.srv.URL,
			Body: []byte(`{"n":` + strconv.Itoa(i) + `}`), Status: StatusPending}
		if err := st.CreateDeliveries(context.Background(), del); err != nil {
			t.Fatal(err)
		}
		j := NewJob(del.ID)
		runs[i] = &jobs.Run{ID: strconv.Itoa(i), Kind: j.Kind, Args: j.Args, Attempt: 1, MaxAttempts: j.MaxAttempts}
	}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for _, run := range runs {
		wg.Go(func() { errs <- d.Handle(context.Background(), run) })
	}
	// The first record holds everyone else's behind it until they all
	// wait, so they can only share one batch.
	for d.records.Waiting() < n-1 {
		time.Sleep(time.Millisecond)
	}
	close(st.gate)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
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
		t.Errorf("%d RecordAttempts calls for %d concurrent jobs, want at most 2", r, n)
	}
	if g := st.gets.Load(); g >= n {
		t.Errorf("%d GetDeliveries calls for %d jobs: reads are not shared", g, n)
	}
}
