package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/jobs"
	"github.com/embedauth/connect/oplog"
	"github.com/embedauth/connect/store"
)

// fakeStore is an in-test webhooks.Store, oplog.Store and EnvironmentGetter.
type fakeStore struct {
	mu         sync.Mutex
	deliveries map[string]*Delivery
	order      []string
	logs       []*oplog.Entry
	envs       map[int64]*environments.Environment
	updateErr  error
	claimErr   error
	// claims counts the calls of ClaimDeliveries that returned.
	claims int
}

func newFakeStore() *fakeStore {
	return &fakeStore{deliveries: map[string]*Delivery{}, envs: map[int64]*environments.Environment{}}
}

func clone(d *Delivery) *Delivery {
	c := *d
	c.Body = slices.Clone(d.Body)
	if d.DeliveredAt != nil {
		t := *d.DeliveredAt
		c.DeliveredAt = &t
	}
	return &c
}

func (s *fakeStore) CreateDeliveries(ctx context.Context, ds ...*Delivery) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range ds {
		if _, ok := s.deliveries[d.ID]; ok {
			return store.ErrConflict
		}
	}
	for _, d := range ds {
		s.deliveries[d.ID] = clone(d)
		s.order = append(s.order, d.ID)
	}
	return nil
}

func (s *fakeStore) GetDelivery(ctx context.Context, id string) (*Delivery, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.deliveries[id]
	if !ok {
		return nil, fmt.Errorf("delivery %s: %w", id, store.ErrNotFound)
	}
	return clone(d), nil
}

func (s *fakeStore) UpdateDelivery(ctx context.Context, d *Delivery) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.updateErr != nil {
		return s.updateErr
	}
	old, ok := s.deliveries[d.ID]
	if !ok {
		return store.ErrNotFound
	}
	n := clone(old)
	n.Status, n.Attempts, n.LastStatusCode, n.LastError, n.UpdatedAt, n.DeliveredAt = d.Status, d.Attempts, d.LastStatusCode, d.LastError, d.UpdatedAt, d.DeliveredAt
	n.NextAttemptAt = d.NextAttemptAt
	s.deliveries[d.ID] = clone(n)
	return nil
}

// ClaimDeliveries claims up to limit pending deliveries due at now, earliest
// due first (then oldest), moving their NextAttemptAt to until and counting
// an attempt.
func (s *fakeStore) ClaimDeliveries(ctx context.Context, now time.Time, limit int, until time.Time) ([]*Delivery, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer func() { s.claims++ }()
	if s.claimErr != nil {
		return nil, s.claimErr
	}
	var due []*Delivery
	for _, id := range s.order {
		if d := s.deliveries[id]; d.Status == StatusPending && !d.NextAttemptAt.After(now) {
			due = append(due, d)
		}
	}
	slices.SortStableFunc(due, func(a, b *Delivery) int { return a.NextAttemptAt.Compare(b.NextAttemptAt) })
	if len(due) > limit {
		due = due[:limit]
	}
	out := make([]*Delivery, len(due))
	for i, d := range due {
		d.NextAttemptAt = until
		d.Attempts++
		out[i] = clone(d)
	}
	return out, nil
}

// claimCount returns the number of ClaimDeliveries calls so far.
func (s *fakeStore) claimCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.claims
}

// setDelivery changes a stored delivery in place.
func (s *fakeStore) setDelivery(id string, f func(d *Delivery)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(s.deliveries[id])
}

func (s *fakeStore) ListDeliveries(ctx context.Context, f DeliveryFilter) ([]*Delivery, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*Delivery
	for i := len(s.order) - 1; i >= 0; i-- {
		d := s.deliveries[s.order[i]]
		if (f.EnvironmentID == 0 || d.EnvironmentID == f.EnvironmentID) && (f.Status == "" || d.Status == f.Status) {
			out = append(out, clone(d))
		}
	}
	return out, nil
}

func (s *fakeStore) AppendLog(ctx context.Context, e *oplog.Entry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := *e
	s.logs = append(s.logs, &c)
	return nil
}

func (s *fakeStore) AppendLogs(ctx context.Context, es []*oplog.Entry) error {
	for _, e := range es {
		if err := s.AppendLog(ctx, e); err != nil {
			return err
		}
	}
	return nil
}

func (s *fakeStore) ListLogs(ctx context.Context, f oplog.Filter) ([]*oplog.Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*oplog.Entry
	for _, e := range s.logs {
		if f.Type == "" || e.Type == f.Type {
			out = append(out, e)
		}
	}
	return out, nil
}

func (s *fakeStore) logsOf(op string) []*oplog.Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*oplog.Entry
	for _, e := range s.logs {
		if e.Type == "webhook" && e.Operation == op {
			out = append(out, e)
		}
	}
	return out
}

func (s *fakeStore) GetEnvironment(ctx context.Context, id int64) (*environments.Environment, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	env, ok := s.envs[id]
	if !ok {
		return nil, store.ErrNotFound
	}
	c := *env
	return &c, nil
}

func (s *fakeStore) all() []*Delivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*Delivery
	for _, id := range s.order {
		out = append(out, clone(s.deliveries[id]))
	}
	return out
}

// fakeScheduler records enqueued jobs.
type fakeScheduler struct {
	mu   sync.Mutex
	jobs []jobs.Job
	err  error
}

func (s *fakeScheduler) Register(string, jobs.Handler) error { return nil }
func (s *fakeScheduler) Start(context.Context) error         { return nil }
func (s *fakeScheduler) Stop(context.Context) error          { return nil }
func (s *fakeScheduler) Enqueue(ctx context.Context, js ...jobs.Job) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	s.jobs = append(s.jobs, js...)
	return nil
}

type overrides map[string]string

func (o overrides) WebhookURLOverride(ctx context.Context, envID int64, key, id string) (string, error) {
	u, ok := o[key+"/"+id]
	if !ok {
		return "", fmt.Errorf("connection: %w", store.ErrNotFound)
	}
	return u, nil
}

func newTestNotifier(t *testing.T, settings environments.WebhookSettings, urls ...string) (*WebhookNotifier, *fakeStore, *fakeScheduler) {
	t.Helper()
	st := newFakeStore()
	st.envs[1] = &environments.Environment{ID: 1, Name: "dev", WebhookURLs: urls, WebhookSettings: settings}
	sch := &fakeScheduler{}
	n := NewNotifier(NotifierConfig{
		Environments: st,
		Overrides:    overrides{"gh/with": "https://override.example/hook", "gh/without": ""},
		Store:        st,
		Scheduler:    sch,
		Log:          &oplog.Writer{Store: st},
	})
	return n, st, sch
}

func authEvent(conn, op string) Event {
	return Event{EnvironmentID: 1, IntegrationKey: "gh", ConnectionID: conn, Type: TypeAuth, Operation: op,
		Payload: &AuthPayload{ConnectionID: conn, ProviderConfigKey: "gh", Provider: "github", Operation: op, Success: true}}
}

func TestNotifyRouting(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	envURLs := []string{"https://a.example/hook", "https://b.example/hook"}
	for _, c := range []struct {
		name string
		conn string
		want []string
	}{
		{"no override: both environment URLs", "without", envURLs},
		{"override alone", "with", []string{"https://override.example/hook"}},
		{"unknown connection: environment URLs", "gone", envURLs},
		{"no connection: environment URLs", "", envURLs},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			n, st, sch := newTestNotifier(t, environments.DefaultWebhookSettings(), envURLs...)
			before := time.Now().UTC().Truncate(time.Microsecond)
			if err := n.Notify(ctx, authEvent(c.conn, OperationCreation)); err != nil {
				t.Fatal(err)
			}
			ds := st.all()
			var got []string
			for _, d := range ds {
				got = append(got, d.URL)
			}
			sort.Strings(got)
			if !slices.Equal(got, c.want) {
				t.Fatalf("destinations %v, want %v", got, c.want)
			}
			// One job for the event, whatever the number of destinations:
			// it only says that the outbox has work.
			if len(sch.jobs) != 1 {
				t.Fatalf("%d jobs for %d deliveries, want 1", len(sch.jobs), len(ds))
			}
			checkJob(t, sch.jobs[0])
			ids := map[string]bool{}
			for _, d := range ds {
				if d.Status != StatusPending || d.Attempts != 0 || d.EventID != ds[0].EventID || string(d.Body) != string(ds[0].Body) ||
					d.Type != TypeAuth || d.EnvironmentID != 1 || d.IntegrationKey != "gh" || d.ConnectionID != c.conn || d.CreatedAt.IsZero() {
					t.Errorf("delivery %+v", d)
				}
				if d.NextAttemptAt.Before(before) || d.NextAttemptAt.After(time.Now()) {
					t.Errorf("delivery due at %s, want between %s and now", d.NextAttemptAt, before)
				}
				ids[d.ID] = true
			}
			if len(ids) != len(ds) {
				t.Error("delivery ids repeat")
			}
			var body map[string]any
			if err := json.Unmarshal(ds[0].Body, &body); err != nil || body["from"] != "nango" || body["type"] != "auth" {
				t.Errorf("body %s", ds[0].Body)
			}
			logs := st.logsOf("enqueue")
			if len(logs) != 1 || logs[0].EnvironmentID != 1 || logs[0].ConnectionID != c.conn || logs[0].Meta["event_id"] != ds[0].EventID {
				t.Errorf("enqueue log %+v", logs)
			}
		})
	}
}

// checkJob checks a delivery job: of JobKind, unique, with args {}.
func checkJob(t *testing.T, j jobs.Job) {
	t.Helper()
	var args map[string]any
	if err := json.Unmarshal(j.Args, &args); err != nil || len(args) != 0 || j.Kind != JobKind ||
		!strings.HasPrefix(j.UniqueKey, "outbox-") || !j.RunAt.IsZero() {
		t.Errorf("job %s %s unique %q run at %s", j.Kind, j.Args, j.UniqueKey, j.RunAt)
	}
}

func TestNewJob(t *testing.T) {
	t.Parallel()
	keys := map[string]bool{}
	for range 200 {
		j := NewJob()
		checkJob(t, j)
		keys[j.UniqueKey] = true
	}
	// A few shards, so that a burst of events costs a job or a few.
	if len(keys) < 2 || len(keys) > jobShards {
		t.Errorf("%d distinct unique keys, want 2 to %d: %v", len(keys), jobShards, keys)
	}
}

// Many destinations still make one job; the deliveries are due at once on
// the real clock even when the notifier's clock is frozen in the past.
func TestNotifyOneJobManyDestinations(t *testing.T) {
	t.Parallel()
	var urls []string
	for i := range 10 {
		urls = append(urls, fmt.Sprintf("https://%d.example/hook", i))
	}
	st := newFakeStore()
	st.envs[1] = &environments.Environment{ID: 1, Name: "dev", WebhookURLs: urls, WebhookSettings: environments.DefaultWebhookSettings()}
	sch := &fakeScheduler{}
	frozen := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	n := NewNotifier(NotifierConfig{Environments: st, Store: st, Scheduler: sch, Now: func() time.Time { return frozen }})
	before := time.Now().UTC().Truncate(time.Microsecond)
	if err := n.Notify(context.Background(), authEvent("c", OperationCreation)); err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	ds := st.all()
	if len(ds) != len(urls) {
		t.Fatalf("%d deliveries, want %d", len(ds), len(urls))
	}
	if len(sch.jobs) != 1 {
		t.Fatalf("%d jobs for %d deliveries, want 1", len(sch.jobs), len(ds))
	}
	checkJob(t, sch.jobs[0])
	for _, d := range ds {
		if !d.CreatedAt.Equal(frozen) {
			t.Errorf("created at %s, want the notifier's clock %s", d.CreatedAt, frozen)
		}
		if d.NextAttemptAt.IsZero() || d.NextAttemptAt.Before(before) || d.NextAttemptAt.After(after) {
			t.Errorf("due at %s, want on the real clock between %s and %s", d.NextAttemptAt, before, after)
		}
	}
	// A second event enqueues its own job (the scheduler dedupes it).
	if err := n.Notify(context.Background(), authEvent("c", OperationCreation)); err != nil {
		t.Fatal(err)
	}
	if len(st.all()) != 2*len(urls) || len(sch.jobs) != 2 {
		t.Errorf("second event: %d deliveries, %d jobs", len(st.all()), len(sch.jobs))
	}
}

func TestNotifySettings(t *testing.T) {
	t.Parallel()
	all := environments.DefaultWebhookSettings()
	off := func(f func(s *environments.WebhookSettings)) environments.WebhookSettings { s := all; f(&s); return s }
	sync := func(empty bool) Event {
		return Event{EnvironmentID: 1, IntegrationKey: "gh", ConnectionID: "c", Type: TypeSync, Empty: empty,
			Payload: &SyncPayload{ConnectionID: "c", Success: true}}
	}
	async := Event{EnvironmentID: 1, IntegrationKey: "gh", ConnectionID: "c", Type: TypeAsyncAction, Payload: &AsyncActionPayload{}}
	fwd := Event{EnvironmentID: 1, IntegrationKey: "gh", Type: TypeForward, Payload: &ForwardPayload{Payload: json.RawMessage(`{}`)}}
	for _, c := range []struct {
		name     string
		settings environments.WebhookSettings
		e        Event
		want     bool
	}{
		{"creation on", all, authEvent("c", OperationCreation), true},
		{"creation off", off(func(s *environments.WebhookSettings) { s.SendAuthCreation = false }), authEvent("c", OperationCreation), false},
		{"override off with creation", off(func(s *environments.WebhookSettings) { s.SendAuthCreation = false }), authEvent("c", OperationOverride), false},
		{"override on", all, authEvent("c", OperationOverride), true},
		{"refresh off", off(func(s *environments.WebhookSettings) { s.SendAuthRefreshError = false }), authEvent("c", OperationRefresh), false},
		{"refresh off, creation still on", off(func(s *environments.WebhookSettings) { s.SendAuthRefreshError = false }), authEvent("c", OperationCreation), true},
		{"sync on", all, sync(false), true},
		{"sync off", off(func(s *environments.WebhookSettings) { s.SendSync = false }), sync(false), false},
		{"empty sync on", all, sync(true), true},
		{"empty sync off", off(func(s *environments.WebhookSettings) { s.SendEmptySync = false }), sync(true), false},
		{"empty sync off, changes sent", off(func(s *environments.WebhookSettings) { s.SendEmptySync = false }), sync(false), true},
		{"empty sync on, sync off", off(func(s *environments.WebhookSettings) { s.SendSync = false }), sync(true), false},
		{"async off", off(func(s *environments.WebhookSettings) { s.SendAsyncAction = false }), async, false},
		{"async on", all, async, true},
		{"forward off", off(func(s *environments.WebhookSettings) { s.SendForward = false }), fwd, false},
		{"forward on", all, fwd, true},
		{"unknown type always", environments.WebhookSettings{}, Event{EnvironmentID: 1, Type: "custom", Payload: map[string]any{"type": "custom"}}, true},
	} {
		if got := Enabled(c.settings, c.e); got != c.want {
			t.Errorf("%s: Enabled = %v", c.name, got)
		}
		n, st, sch := newTestNotifier(t, c.settings, "https://a.example/hook")
		if err := n.Notify(context.Background(), c.e); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := len(st.all()) == 1 && len(sch.jobs) == 1; got != c.want {
			t.Errorf("%s: %d deliveries, %d jobs", c.name, len(st.all()), len(sch.jobs))
		}
		if !c.want && len(st.logs) != 0 {
			t.Errorf("%s: logged a dropped event", c.name)
		}
	}
}

func TestNotifyNoDestinations(t *testing.T) {
	t.Parallel()
	n, st, sch := newTestNotifier(t, environments.DefaultWebhookSettings())
	if err := n.Notify(context.Background(), authEvent("without", OperationCreation)); err != nil {
		t.Fatal(err)
	}
	if len(st.all()) != 0 || len(sch.jobs) != 0 || len(st.logs) != 0 {
		t.Errorf("something was queued without URLs")
	}
	// The override is a destination even when the environment has none.
	if err := n.Notify(context.Background(), authEvent("with", OperationCreation)); err != nil {
		t.Fatal(err)
	}
	if ds := st.all(); len(ds) != 1 || ds[0].URL != "https://override.example/hook" {
		t.Errorf("override without environment URLs: %+v", ds)
	}
}

func TestNotifyErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n, st, sch := newTestNotifier(t, environments.DefaultWebhookSettings(), "https://a.example/hook")
	e := authEvent("c", OperationCreation)
	e.EnvironmentID = 2
	if err := n.Notify(ctx, e); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown environment: %v", err)
	}
	e = authEvent("c", OperationCreation)
	e.Type = TypeSync
	if err := n.Notify(ctx, e); err == nil {
		t.Error("auth payload as a sync event accepted")
	}
	if err := n.Notify(ctx, Event{EnvironmentID: 1, Type: TypeAuth, Operation: OperationCreation}); err == nil {
		t.Error("event without payload accepted")
	}
	if err := n.Notify(ctx, Event{EnvironmentID: 1, Payload: &AuthPayload{}}); err == nil {
		t.Error("event without type accepted")
	}
	boom := errors.New("boom")
	sch.err = boom
	if err := n.Notify(ctx, authEvent("c", OperationCreation)); !errors.Is(err, boom) {
		t.Errorf("enqueue error: %v", err)
	}
	if err := NewNotifier(NotifierConfig{}).Notify(ctx, authEvent("c", OperationCreation)); err == nil {
		t.Error("empty config accepted")
	}
	// With a custom From and a payload given by value.
	st2 := newFakeStore()
	st2.envs[1] = st.envs[1]
	n2 := NewNotifier(NotifierConfig{Environments: st2, Store: st2, Scheduler: &fakeScheduler{}, From: "acme"})
	if err := n2.Notify(ctx, Event{EnvironmentID: 1, Type: TypeAsyncAction, Payload: AsyncActionPayload{ConnectionID: "c"}}); err != nil {
		t.Fatal(err)
	}
	if ds := st2.all(); len(ds) != 1 || string(ds[0].Body) != `{"connectionId":"c","from":"acme","payload":{"id":"","statusUrl":""},"providerConfigKey":"","type":"async_action"}` {
		t.Errorf("custom from: %s", ds[0].Body)
	}
}

func TestNewID(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for i := 0; i < 1000; i++ {
		id := NewID()
		if len(id) != 36 || id[14] != '4' || !validDeliveryID(id) || seen[id] {
			t.Fatalf("id %q", id)
		}
		seen[id] = true
	}
}

// TestNotifyUnverified: the deliveries of an Unverified event (a forward
// that anyone may have caused) are marked Unverified, for the Deliverer to
// sample their attempts' log entries, and the event writes no log entry of
// its own (the incoming webhook handler's, sampled, says what it queued);
// other events' deliveries are not marked and each gets its entry.
func TestNotifyUnverified(t *testing.T) {
	t.Parallel()
	n, st, _ := newTestNotifier(t, environments.WebhookSettings{SendForward: true}, "https://a.example/hook", "https://b.example/hook")
	forward := func(unverified bool) Event {
		return Event{EnvironmentID: 1, IntegrationKey: "notion", Type: TypeForward, Unverified: unverified,
			Payload: &ForwardPayload{From: "notion", Type: TypeForward, ProviderConfigKey: "notion", Payload: json.RawMessage(`{}`)}}
	}
	for range 3 {
		if err := n.Notify(t.Context(), forward(true)); err != nil {
			t.Fatal(err)
		}
	}
	ds := st.all()
	if len(ds) != 6 {
		t.Fatalf("%d deliveries of 3 events to 2 URLs", len(ds))
	}
	for _, d := range ds {
		if !d.Unverified {
			t.Errorf("delivery of an unverified event not marked: %+v", d)
		}
	}
	if logs := st.logsOf("enqueue"); len(logs) != 0 {
		t.Errorf("unverified events logged: %+v", logs)
	}
	if err := n.Notify(t.Context(), forward(false)); err != nil {
		t.Fatal(err)
	}
	for _, d := range st.all()[6:] {
		if d.Unverified {
			t.Errorf("delivery of a verified event marked: %+v", d)
		}
	}
	if logs := st.logsOf("enqueue"); len(logs) != 1 {
		t.Errorf("a verified event logged %d entries", len(logs))
	}
}
