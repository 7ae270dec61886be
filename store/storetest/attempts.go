package storetest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/oplog"
	"github.com/embedauth/connect/store"
	"github.com/embedauth/connect/webhooks"
)

// attemptTests run when the Store implements webhooks.AttemptRecorder;
// they are skipped otherwise.
var attemptTests = []test{
	{"Stored", recorderTest(testAttemptsStored)},
	{"WithoutEntry", recorderTest(testAttemptsWithoutEntry)},
	{"OneRefused", recorderTest(testAttemptsOneRefused)},
}

// recorderTest returns fn as a test of the suite, skipped when the Store
// does not record attempts.
func recorderTest(fn func(t *testing.T, s Store, r webhooks.AttemptRecorder)) func(t *testing.T, s Store) {
	return func(t *testing.T, s Store) {
		r, ok := s.(webhooks.AttemptRecorder)
		if !ok {
			t.Skip("the Store does not record attempts (webhooks.AttemptRecorder)")
		}
		fn(t, s, r)
	}
}

// attemptFixture creates an environment and a pending delivery of each id
// in it, made by set from a common one.
func attemptFixture(t *testing.T, s Store, set func(d *webhooks.Delivery), ids ...string) (*environments.Environment, []*webhooks.Delivery) {
	t.Helper()
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	env := &environments.Environment{Name: "dev", Account: "a", CreatedAt: now, UpdatedAt: now}
	if err := s.CreateEnvironment(t.Context(), env); err != nil {
		t.Fatal(err)
	}
	var ds []*webhooks.Delivery
	for _, id := range ids {
		d := &webhooks.Delivery{ID: id, EnvironmentID: env.ID, EventID: "e1", URL: "https://x.example",
			Body: []byte(`{}`), Status: webhooks.StatusPending, CreatedAt: now, UpdatedAt: now}
		set(d)
		ds = append(ds, d)
	}
	if err := s.CreateDeliveries(t.Context(), ds...); err != nil {
		t.Fatal(err)
	}
	return env, ds
}

// The outcomes of delivery attempts are stored with their log entries, an
// attempt of a missing delivery skipped, in a transaction with it.
func testAttemptsStored(t *testing.T, s Store, r webhooks.AttemptRecorder) {
	ctx := t.Context()
	env, ds := attemptFixture(t, s, func(d *webhooks.Delivery) { d.Type, d.Body = "auth", []byte(`{"a":1}`) }, "d1", "d2", "d3")
	now := ds[0].CreatedAt
	at := now.Add(time.Second)
	entry := func(id string, meta map[string]any) *oplog.Entry {
		return &oplog.Entry{ID: id, EnvironmentID: env.ID, Type: "webhook", Operation: "delivery", Status: "success",
			IntegrationKey: "gh", ConnectionID: "c1", Message: "m " + id, Meta: meta, CreatedAt: at}
	}
	d1 := *ds[0]
	d1.Status, d1.Attempts, d1.LastStatusCode, d1.UpdatedAt, d1.DeliveredAt = webhooks.StatusDelivered, 1, 204, at, &at
	d2a := *ds[1]
	d2a.Attempts, d2a.LastStatusCode, d2a.LastError, d2a.UpdatedAt = 1, 500, "status 500", at
	d2b := d2a
	d2b.Status, d2b.Attempts, d2b.UpdatedAt = webhooks.StatusFailed, 2, at.Add(time.Second)
	missing := webhooks.Delivery{ID: "nope", Status: webhooks.StatusDelivered, UpdatedAt: at}
	err := r.RecordAttempts(ctx, []webhooks.Attempt{
		{Delivery: &d1, Entry: entry("log1", map[string]any{"attempt": 1})},
		{Delivery: &d2a, Entry: entry("log2", nil)},
		{Delivery: &missing, Entry: entry("log3", nil)},
		{Delivery: &d2b, Entry: entry("log4", map[string]any{"attempt": 2})}, // same delivery again: applied after log2's
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []*webhooks.Delivery
	for _, id := range []string{"d1", "d2", "d3"} {
		g, err := s.GetDelivery(ctx, id)
		if err != nil {
			t.Fatalf("GetDelivery(%s): %v", id, err)
		}
		got = append(got, g)
	}
	if _, err := s.GetDelivery(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the attempt of a missing delivery created it: GetDelivery(nope) = %v", err)
	}
	if g := got[0]; g.Status != webhooks.StatusDelivered || g.Attempts != 1 || g.LastStatusCode != 204 || g.DeliveredAt == nil || !g.DeliveredAt.Equal(at) {
		t.Errorf("d1 = %+v", g)
	}
	if g := got[1]; g.Status != webhooks.StatusFailed || g.Attempts != 2 || g.LastError != "status 500" || g.DeliveredAt != nil || !g.UpdatedAt.Equal(at.Add(time.Second)) {
		t.Errorf("d2 = %+v, want the later of its two attempts", g)
	}
	if g := got[2]; g.Status != webhooks.StatusPending || g.Attempts != 0 {
		t.Errorf("d3 changed: %+v", g)
	}
	logs, err := s.ListLogs(ctx, oplog.Filter{EnvironmentID: env.ID})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, l := range logs {
		ids = append(ids, l.ID)
		if l.ID == "log1" && (l.Meta["attempt"] != float64(1) || l.Message != "m log1" || l.IntegrationKey != "gh" || l.ConnectionID != "c1") {
			t.Errorf("log1 = %+v", l)
		}
	}
	slices.Sort(ids)
	if !slices.Equal(ids, []string{"log1", "log2", "log4"}) {
		t.Errorf("log entries %v, want log1, log2, log4 (none for the missing delivery)", ids)
	}
	// In a transaction: applied with it, or not at all.
	d3 := *ds[2]
	d3.Status, d3.Attempts, d3.UpdatedAt = webhooks.StatusDelivered, 1, at
	rollback := s.WithTx(ctx, func(ctx context.Context) error {
		if err := r.RecordAttempts(ctx, []webhooks.Attempt{{Delivery: &d3, Entry: entry("log5", nil)},
			{Delivery: &missing, Entry: entry("log6", nil)}}); err != nil {
			return err
		}
		return context.Canceled
	})
	if rollback != context.Canceled {
		t.Fatalf("WithTx = %v", rollback)
	}
	if g, _ := s.GetDelivery(ctx, "d3"); g.Status != webhooks.StatusPending {
		t.Errorf("rolled back attempt stored: %+v", g)
	}
	if err := s.WithTx(ctx, func(ctx context.Context) error {
		return r.RecordAttempts(ctx, []webhooks.Attempt{{Delivery: &d3, Entry: entry("log5", nil)}})
	}); err != nil {
		t.Fatal(err)
	}
	if g, _ := s.GetDelivery(ctx, "d3"); g.Status != webhooks.StatusDelivered {
		t.Errorf("attempt in a committed transaction not stored: %+v", g)
	}
}

// testAttemptsWithoutEntry: an attempt without a log entry (one the
// Deliverer's Sampler left out) stores its delivery's outcome and no
// entry, in one statement with others that have theirs, and in a
// transaction.
func testAttemptsWithoutEntry(t *testing.T, s Store, r webhooks.AttemptRecorder) {
	ctx := t.Context()
	env, ds := attemptFixture(t, s, func(d *webhooks.Delivery) { d.Type, d.Unverified = webhooks.TypeForward, true }, "d1", "d2", "d3")
	now := ds[0].CreatedAt
	at := now.Add(time.Second)
	done := func(d *webhooks.Delivery) *webhooks.Delivery {
		c := *d
		c.Status, c.Attempts, c.LastStatusCode, c.UpdatedAt, c.DeliveredAt = webhooks.StatusDelivered, 1, 200, at, &at
		return &c
	}
	entry := &oplog.Entry{ID: "log1", EnvironmentID: env.ID, Type: "webhook", Operation: "delivery", Status: "success",
		Message: "m", CreatedAt: at}
	if err := r.RecordAttempts(ctx, []webhooks.Attempt{{Delivery: done(ds[0])}, {Delivery: done(ds[1]), Entry: entry}}); err != nil {
		t.Fatal(err)
	}
	if err := s.WithTx(ctx, func(ctx context.Context) error {
		return r.RecordAttempts(ctx, []webhooks.Attempt{{Delivery: done(ds[2])}})
	}); err != nil {
		t.Fatal(err)
	}
	for _, d := range ds {
		g, err := s.GetDelivery(ctx, d.ID)
		if err != nil || g.Status != webhooks.StatusDelivered || g.Attempts != 1 || !g.Unverified {
			t.Errorf("%s = %+v, %v", d.ID, g, err)
		}
	}
	logs, err := s.ListLogs(ctx, oplog.Filter{EnvironmentID: env.ID})
	if err != nil {
		t.Fatal(err)
	}
	if len(logs) != 1 || logs[0].ID != "log1" {
		t.Errorf("log entries %+v, want log1 alone", logs)
	}
}

// An attempt that cannot be stored (its log entry holds text no record can
// hold) is refused alone: the others of the batch are stored.
func testAttemptsOneRefused(t *testing.T, s Store, r webhooks.AttemptRecorder) {
	ctx := t.Context()
	env, ds := attemptFixture(t, s, func(d *webhooks.Delivery) { d.Type = "auth" }, "d1", "d2")
	now := ds[0].CreatedAt
	at := now.Add(time.Second)
	done := func(d *webhooks.Delivery) *webhooks.Delivery {
		c := *d
		c.Status, c.Attempts, c.UpdatedAt, c.DeliveredAt = webhooks.StatusDelivered, 1, at, &at
		return &c
	}
	bad := &oplog.Entry{ID: "log1", EnvironmentID: env.ID, Type: "webhook", Operation: "delivery", Message: "a\x00b", CreatedAt: at}
	good := &oplog.Entry{ID: "log2", EnvironmentID: env.ID, Type: "webhook", Operation: "delivery", Message: "ok", CreatedAt: at}
	err := r.RecordAttempts(ctx, []webhooks.Attempt{{Delivery: done(ds[0]), Entry: bad}, {Delivery: done(ds[1]), Entry: good}})
	if !errors.Is(err, store.ErrInvalid) {
		t.Errorf("RecordAttempts = %v, want the refused attempt's ErrInvalid", err)
	}
	if g, _ := s.GetDelivery(ctx, "d1"); g.Status != webhooks.StatusPending {
		t.Errorf("d1, whose attempt was refused, = %+v; want it unchanged", g)
	}
	if g, _ := s.GetDelivery(ctx, "d2"); g.Status != webhooks.StatusDelivered {
		t.Errorf("d2 = %+v, want delivered", g)
	}
	logs, err := s.ListLogs(ctx, oplog.Filter{EnvironmentID: env.ID})
	if err != nil {
		t.Fatal(err)
	}
	if len(logs) != 1 || logs[0].ID != "log2" {
		t.Errorf("log entries %+v, want log2 alone", logs)
	}
}
