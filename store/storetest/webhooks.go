package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/embedauth/connect/store"
	"github.com/embedauth/connect/webhooks"
)

var deliveryTests = []test{
	{"CRUD", testDeliveryCRUD},
	{"NotFound", testDeliveryNotFound},
	{"Conflict", testDeliveryConflict},
	{"MissingEnvironment", testDeliveryMissingEnvironment},
	{"Filters", testDeliveryFilters},
	{"Limit", testDeliveryLimit},
	{"ExactBody", testDeliveryExactBody},
	{"Copies", testDeliveryCopies},
	{"Tx", testDeliveryTx},
	{"Requeue", testDeliveryRequeue},
	{"Claim", testDeliveryClaim},
	{"ClaimConcurrent", testDeliveryClaimConcurrent},
	{"Paging", testDeliveryPaging},
	{"InvalidFilter", testDeliveryInvalidFilter},
	{"RequeueFailed", testDeliveryRequeueFailed},
	{"RequeueFailedConcurrent", testDeliveryRequeueFailedConcurrent},
	{"Unverified", testDeliveryUnverified},
}

func newDeliveryValue(env int64, id string, created int) *webhooks.Delivery {
	return &webhooks.Delivery{
		ID:             id,
		EnvironmentID:  env,
		EventID:        "evt-" + id,
		Type:           webhooks.TypeAuth,
		IntegrationKey: "github",
		ConnectionID:   "u1",
		URL:            "https://hooks.example.com/" + id,
		Body:           []byte(`{"type":"auth","connectionId":"u1"}`),
		Status:         webhooks.StatusPending,
		CreatedAt:      at(created),
		UpdatedAt:      at(created),
	}
}

func testDeliveryCRUD(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	a := newDeliveryValue(env.ID, "d1", 0)
	b := newDeliveryValue(env.ID, "d2", 0)
	b.EventID = a.EventID // two destinations of one event
	b.URL = "https://other.example.com/hook"
	must(t, s.CreateDeliveries(ctx, a, b))
	must(t, s.CreateDeliveries(ctx)) // nothing to do

	for _, want := range []*webhooks.Delivery{a, b} {
		got, err := s.GetDelivery(ctx, want.ID)
		must(t, err)
		diff(t, "GetDelivery("+want.ID+")", want, got)
	}

	delivered := at(5)
	upd := *a
	upd.Status = webhooks.StatusDelivered
	upd.Attempts = 2
	upd.LastStatusCode = 200
	upd.LastError = "previous attempt: 502 Bad Gateway"
	upd.UpdatedAt = at(5)
	upd.DeliveredAt = &delivered
	// Fields that UpdateDelivery does not change.
	upd.URL = "https://ignored.example.com"
	upd.Body = []byte("ignored")
	upd.EventID = "ignored"
	upd.CreatedAt = at(100)
	must(t, s.UpdateDelivery(ctx, &upd))

	want := *a
	want.Status = webhooks.StatusDelivered
	want.Attempts = 2
	want.LastStatusCode = 200
	want.LastError = "previous attempt: 502 Bad Gateway"
	want.UpdatedAt = at(5)
	want.DeliveredAt = &delivered
	got, err := s.GetDelivery(ctx, a.ID)
	must(t, err)
	diff(t, "GetDelivery after UpdateDelivery", &want, got)

	// DeliveredAt goes back to nil.
	upd.Status = webhooks.StatusFailed
	upd.DeliveredAt = nil
	upd.LastStatusCode = 0
	must(t, s.UpdateDelivery(ctx, &upd))
	got, err = s.GetDelivery(ctx, a.ID)
	must(t, err)
	if got.DeliveredAt != nil || got.Status != webhooks.StatusFailed || got.LastStatusCode != 0 {
		t.Errorf("after the second update: %+v", got)
	}
	got, err = s.GetDelivery(ctx, b.ID)
	must(t, err)
	diff(t, "the other delivery", b, got)
}

func testDeliveryNotFound(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	_, err := s.GetDelivery(ctx, "nope")
	wantErr(t, "GetDelivery(missing)", err, store.ErrNotFound)
	wantErr(t, "UpdateDelivery(missing)", s.UpdateDelivery(ctx, newDeliveryValue(env.ID, "nope", 0)), store.ErrNotFound)
}

func testDeliveryConflict(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	first := newDeliveryValue(env.ID, "d1", 0)
	must(t, s.CreateDeliveries(ctx, first))

	dup := newDeliveryValue(env.ID, "d1", 1)
	dup.URL = "https://second.example.com"
	wantErr(t, "CreateDeliveries(stored id)", s.CreateDeliveries(ctx, dup), store.ErrConflict)
	// A batch with one stored ID stores none of its deliveries.
	wantErr(t, "CreateDeliveries(batch with a stored id)",
		s.CreateDeliveries(ctx, newDeliveryValue(env.ID, "d2", 1), dup), store.ErrConflict)
	// So does a batch that gives one ID twice.
	wantErr(t, "CreateDeliveries(id given twice)",
		s.CreateDeliveries(ctx, newDeliveryValue(env.ID, "d3", 1), newDeliveryValue(env.ID, "d3", 2)), store.ErrConflict)

	list, err := s.ListDeliveries(ctx, webhooks.DeliveryFilter{EnvironmentID: env.ID})
	must(t, err)
	diff(t, "deliveries after refused creates", []*webhooks.Delivery{first}, list)
}

func testDeliveryMissingEnvironment(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	err := s.CreateDeliveries(ctx, newDeliveryValue(env.ID, "d1", 0), newDeliveryValue(env.ID+1000, "d2", 0))
	wantErr(t, "CreateDeliveries(missing environment)", err, store.ErrNotFound)
	_, err = s.GetDelivery(ctx, "d1")
	wantErr(t, "GetDelivery(of a refused batch)", err, store.ErrNotFound)
}

func testDeliveryFilters(t *testing.T, s Store) {
	ctx := t.Context()
	a := newEnv(t, s, "a")
	b := newEnv(t, s, "b")
	d1 := newDeliveryValue(a.ID, "d1", 0)
	d2 := newDeliveryValue(a.ID, "d2", 1)
	d2.Status = webhooks.StatusDelivered
	d2.ConnectionID = "u2"
	d3 := newDeliveryValue(a.ID, "d3", 2)
	d3.Status = webhooks.StatusFailed
	// Same CreatedAt as d3: the larger ID comes first.
	d4 := newDeliveryValue(a.ID, "d4", 2)
	d4.ConnectionID = "" // an event that concerns no connection
	d4.Type = webhooks.TypeForward
	d4.IntegrationKey = "slack"
	d5 := newDeliveryValue(b.ID, "d5", 3)
	// Created out of time order: ordering is by CreatedAt, not insertion.
	must(t, s.CreateDeliveries(ctx, d3, d1))
	must(t, s.CreateDeliveries(ctx, d5))
	must(t, s.CreateDeliveries(ctx, d4, d2))

	for _, tc := range []struct {
		name string
		f    webhooks.DeliveryFilter
		want []*webhooks.Delivery
	}{
		{"environment", webhooks.DeliveryFilter{EnvironmentID: a.ID}, []*webhooks.Delivery{d4, d3, d2, d1}},
		{"other environment", webhooks.DeliveryFilter{EnvironmentID: b.ID}, []*webhooks.Delivery{d5}},
		{"every environment", webhooks.DeliveryFilter{}, []*webhooks.Delivery{d5, d4, d3, d2, d1}},
		{"status", webhooks.DeliveryFilter{EnvironmentID: a.ID, Status: webhooks.StatusPending}, []*webhooks.Delivery{d4, d1}},
		{"connection", webhooks.DeliveryFilter{EnvironmentID: a.ID, ConnectionID: "u1"}, []*webhooks.Delivery{d3, d1}},
		{"status and connection", webhooks.DeliveryFilter{EnvironmentID: a.ID, Status: webhooks.StatusFailed,
			ConnectionID: "u1"}, []*webhooks.Delivery{d3}},
		{"type", webhooks.DeliveryFilter{EnvironmentID: a.ID, Type: webhooks.TypeAuth}, []*webhooks.Delivery{d3, d2, d1}},
		{"other type", webhooks.DeliveryFilter{EnvironmentID: a.ID, Type: webhooks.TypeForward}, []*webhooks.Delivery{d4}},
		{"integration", webhooks.DeliveryFilter{EnvironmentID: a.ID, IntegrationKey: "github"}, []*webhooks.Delivery{d3, d2, d1}},
		{"integration and connection", webhooks.DeliveryFilter{EnvironmentID: a.ID, IntegrationKey: "github", ConnectionID: "u2"},
			[]*webhooks.Delivery{d2}},
		{"integration of another connection", webhooks.DeliveryFilter{EnvironmentID: a.ID, IntegrationKey: "slack", ConnectionID: "u1"},
			[]*webhooks.Delivery{}},
		{"every filter", webhooks.DeliveryFilter{EnvironmentID: a.ID, Status: webhooks.StatusPending, Type: webhooks.TypeAuth,
			IntegrationKey: "github", ConnectionID: "u1"}, []*webhooks.Delivery{d1}},
		{"after", webhooks.DeliveryFilter{EnvironmentID: a.ID, After: &webhooks.DeliveryCursor{CreatedAt: d4.CreatedAt, ID: d4.ID}},
			[]*webhooks.Delivery{d3, d2, d1}},
		{"after, same time, smaller id", webhooks.DeliveryFilter{EnvironmentID: a.ID, After: &webhooks.DeliveryCursor{CreatedAt: d3.CreatedAt, ID: d3.ID}},
			[]*webhooks.Delivery{d2, d1}},
		{"after a position between two", webhooks.DeliveryFilter{EnvironmentID: a.ID, After: &webhooks.DeliveryCursor{CreatedAt: d3.CreatedAt, ID: "d3z"}},
			[]*webhooks.Delivery{d3, d2, d1}},
		{"after, with filters and limit", webhooks.DeliveryFilter{EnvironmentID: a.ID, Type: webhooks.TypeAuth, Limit: 1,
			After: &webhooks.DeliveryCursor{CreatedAt: d3.CreatedAt, ID: d3.ID}}, []*webhooks.Delivery{d2}},
		{"after the oldest", webhooks.DeliveryFilter{EnvironmentID: a.ID, After: &webhooks.DeliveryCursor{CreatedAt: d1.CreatedAt, ID: d1.ID}},
			[]*webhooks.Delivery{}},
		{"limit", webhooks.DeliveryFilter{EnvironmentID: a.ID, Limit: 2}, []*webhooks.Delivery{d4, d3}},
		{"no match", webhooks.DeliveryFilter{EnvironmentID: a.ID, ConnectionID: "nobody"}, []*webhooks.Delivery{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.ListDeliveries(ctx, tc.f)
			must(t, err)
			diff(t, fmt.Sprintf("ListDeliveries(%+v)", tc.f), tc.want, got)
		})
	}
}

func testDeliveryLimit(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	const n = 105
	var ds []*webhooks.Delivery
	for i := range n {
		ds = append(ds, newDeliveryValue(env.ID, fmt.Sprintf("d-%03d", i), i))
	}
	must(t, s.CreateDeliveries(ctx, ds...))
	ids := func(f webhooks.DeliveryFilter) []string {
		t.Helper()
		list, err := s.ListDeliveries(ctx, f)
		must(t, err)
		out := []string{}
		for _, d := range list {
			out = append(out, d.ID)
		}
		return out
	}
	var want []string
	for i := n - 1; i >= n-100; i-- {
		want = append(want, fmt.Sprintf("d-%03d", i))
	}
	diff(t, "default limit of 100, newest first", want, ids(webhooks.DeliveryFilter{EnvironmentID: env.ID}))
	diff(t, "limit 3", want[:3], ids(webhooks.DeliveryFilter{EnvironmentID: env.ID, Limit: 3}))
	if got := ids(webhooks.DeliveryFilter{EnvironmentID: env.ID, Limit: 200}); len(got) != n {
		t.Errorf("limit 200 returned %d deliveries, want %d", len(got), n)
	}
}

// testDeliveryExactBody checks that the body comes back byte for byte: it is
// what was signed, so a store must not re-encode it (as jsonb would).
func testDeliveryExactBody(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	bodies := map[string][]byte{
		"whitespace and key order": []byte("{ \"z\" : 1,\n\t\"a\":[1, 2.50, 1e3],  \"a\": \"dup\" }\n"),
		"escapes and unicode":      []byte(`{"s":"\u00e9\u0000 é \ud83d\ude00 \"q\" \\ \/"}`),
		"big number":               []byte(`{"n":123456789012345678901234567890.000}`),
		"not JSON, binary":         {0x00, 0xff, 0xfe, '{', 0x80, '\n'},
		"empty":                    {},
	}
	var ds []*webhooks.Delivery
	for name, body := range bodies {
		d := newDeliveryValue(env.ID, name, 0)
		d.Body = body
		ds = append(ds, d)
	}
	must(t, s.CreateDeliveries(ctx, ds...))
	for name, body := range bodies {
		got, err := s.GetDelivery(ctx, name)
		must(t, err)
		if string(got.Body) != string(body) {
			t.Errorf("%s: body came back as %q, want %q", name, got.Body, body)
		}
		if got.Body == nil {
			t.Errorf("%s: body came back nil", name)
		}
	}
	list, err := s.ListDeliveries(ctx, webhooks.DeliveryFilter{EnvironmentID: env.ID})
	must(t, err)
	for _, got := range list {
		if string(got.Body) != string(bodies[got.ID]) {
			t.Errorf("ListDeliveries: %s: body came back as %q, want %q", got.ID, got.Body, bodies[got.ID])
		}
	}
	// OmitBody: the same deliveries, with empty bodies.
	omitted, err := s.ListDeliveries(ctx, webhooks.DeliveryFilter{EnvironmentID: env.ID, OmitBody: true})
	must(t, err)
	for i := range list {
		list[i].Body = []byte{}
	}
	diff(t, "ListDeliveries with OmitBody", list, omitted)
	for _, d := range omitted {
		if d.Body == nil {
			t.Errorf("ListDeliveries with OmitBody: %s: nil body, want empty", d.ID)
		}
	}
}

func testDeliveryCopies(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	d := newDeliveryValue(env.ID, "d1", 0)
	want := *d
	want.Body = []byte(string(d.Body))
	must(t, s.CreateDeliveries(ctx, d))
	d.Body[0] = 'X'

	got, err := s.GetDelivery(ctx, "d1")
	must(t, err)
	diff(t, "delivery after mutating the input", &want, got)
	got.Body[0] = 'Y'
	list, err := s.ListDeliveries(ctx, webhooks.DeliveryFilter{})
	must(t, err)
	list[0].Body[0] = 'Z'
	delivered := at(1)
	upd := want
	upd.DeliveredAt = &delivered
	must(t, s.UpdateDelivery(ctx, &upd))
	*upd.DeliveredAt = at(99)

	wantDelivered := at(1)
	want.DeliveredAt = &wantDelivered
	got, err = s.GetDelivery(ctx, "d1")
	must(t, err)
	diff(t, "delivery after mutating inputs and outputs", &want, got)
}

// testDeliveryTx checks deliveries written in a transaction: visible inside
// it, gone after a rollback, kept after a commit, and a refused create that
// leaves the transaction usable.
func testDeliveryTx(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	stored := newDeliveryValue(env.ID, "stored", 0)
	must(t, s.CreateDeliveries(ctx, stored))

	err := s.WithTx(ctx, func(ctx context.Context) error {
		must(t, s.CreateDeliveries(ctx, newDeliveryValue(env.ID, "in-tx", 1)))
		upd := *stored
		upd.Status = webhooks.StatusDelivered
		must(t, s.UpdateDelivery(ctx, &upd))
		got, err := s.GetDelivery(ctx, "in-tx")
		must(t, err)
		if got.ID != "in-tx" {
			t.Errorf("GetDelivery in tx = %+v", got)
		}
		list, err := s.ListDeliveries(ctx, webhooks.DeliveryFilter{EnvironmentID: env.ID, Status: webhooks.StatusDelivered})
		must(t, err)
		if len(list) != 1 || list[0].ID != "stored" {
			t.Errorf("ListDeliveries in tx = %+v", list)
		}
		return errRollback
	})
	wantErr(t, "WithTx", err, errRollback)
	_, err = s.GetDelivery(ctx, "in-tx")
	wantErr(t, "GetDelivery(rolled back)", err, store.ErrNotFound)
	got, err := s.GetDelivery(ctx, "stored")
	must(t, err)
	diff(t, "delivery after rolled-back update", stored, got)

	must(t, s.WithTx(ctx, func(ctx context.Context) error {
		wantErr(t, "CreateDeliveries(duplicate) in tx", s.CreateDeliveries(ctx, newDeliveryValue(env.ID, "stored", 1)),
			store.ErrConflict)
		wantErr(t, "CreateDeliveries(missing environment) in tx",
			s.CreateDeliveries(ctx, newDeliveryValue(env.ID+1000, "other", 1)), store.ErrNotFound)
		wantErr(t, "UpdateDelivery(missing) in tx", s.UpdateDelivery(ctx, newDeliveryValue(env.ID, "nope", 1)),
			store.ErrNotFound)
		// The transaction still works.
		return s.CreateDeliveries(ctx, newDeliveryValue(env.ID, "committed", 2))
	}))
	_, err = s.GetDelivery(ctx, "committed")
	must(t, err)
}

// testDeliveryRequeue: RequeueDelivery resets a failed delivery to pending
// and returns it as it was; a pending one is ErrConflict, a missing one
// ErrNotFound; of concurrent requeues exactly one wins.
func testDeliveryRequeue(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	d := newDeliveryValue(env.ID, "d1", 0)
	must(t, s.CreateDeliveries(ctx, d))
	_, err := s.RequeueDelivery(ctx, "d1", at(1))
	wantErr(t, "RequeueDelivery(pending)", err, store.ErrConflict)
	_, err = s.RequeueDelivery(ctx, "nope", at(1))
	wantErr(t, "RequeueDelivery(missing)", err, store.ErrNotFound)

	failed := *d
	failed.Status, failed.Attempts, failed.LastStatusCode, failed.LastError, failed.UpdatedAt = webhooks.StatusFailed, 3, 500, "HTTP 500", at(2)
	must(t, s.UpdateDelivery(ctx, &failed))
	was, err := s.RequeueDelivery(ctx, "d1", at(3))
	must(t, err)
	diff(t, "RequeueDelivery result", &failed, was)
	got, err := s.GetDelivery(ctx, "d1")
	must(t, err)
	want := *d
	want.UpdatedAt = at(3)
	want.NextAttemptAt = time.Time{} // due at once, ahead of the others
	diff(t, "requeued delivery", &want, got)

	// Concurrent requeues of a failed delivery: one wins.
	must(t, s.UpdateDelivery(ctx, &failed))
	const n = 8
	errs := make(chan error, n)
	for range n {
		go func() {
			_, err := s.RequeueDelivery(ctx, "d1", at(4))
			errs <- err
		}()
	}
	won := 0
	for range n {
		switch err := <-errs; {
		case err == nil:
			won++
		case errors.Is(err, store.ErrConflict):
		default:
			t.Errorf("concurrent RequeueDelivery: %v", err)
		}
	}
	if won != 1 {
		t.Errorf("%d of %d concurrent requeues won, want 1", won, n)
	}
}

// testDeliveryClaim: ClaimDeliveries returns the pending deliveries due at
// now, earliest due first, up to limit, with NextAttemptAt moved to until
// and the attempt counted (Attempts+1, stored); a claimed delivery is not
// claimed again before until, or before an update makes it due again.
func testDeliveryClaim(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	mk := func(id string, due int, status string) *webhooks.Delivery {
		d := newDeliveryValue(env.ID, id, 0)
		d.NextAttemptAt = at(due)
		d.Status = status
		return d
	}
	must(t, s.CreateDeliveries(ctx,
		mk("b", 2, webhooks.StatusPending),
		mk("a", 2, webhooks.StatusPending), // same due time: by id
		mk("c", 1, webhooks.StatusPending),
		mk("later", 50, webhooks.StatusPending),
		mk("done", 0, webhooks.StatusDelivered),
		mk("failed", 0, webhooks.StatusFailed),
	))
	ids := func(ds []*webhooks.Delivery) []string {
		out := []string{}
		for _, d := range ds {
			out = append(out, d.ID)
		}
		return out
	}
	got, err := s.ClaimDeliveries(ctx, at(10), 2, at(100))
	must(t, err)
	diff(t, "first claim", []string{"c", "a"}, ids(got))
	for _, d := range got {
		if !d.NextAttemptAt.Equal(at(100)) {
			t.Errorf("claimed %s: NextAttemptAt %v, want the end of the lease %v", d.ID, d.NextAttemptAt, at(100))
		}
		if string(d.Body) != `{"type":"auth","connectionId":"u1"}` || d.URL == "" || d.EnvironmentID != env.ID {
			t.Errorf("claimed %s lacks its fields: %+v", d.ID, d)
		}
		if d.Attempts != 1 {
			t.Errorf("claimed %s: Attempts %d, want 1 (the claim counts the attempt it starts)", d.ID, d.Attempts)
		}
		stored, err := s.GetDelivery(ctx, d.ID)
		must(t, err)
		if stored.Attempts != 1 {
			t.Errorf("claimed %s: stored Attempts %d, want 1", d.ID, stored.Attempts)
		}
	}
	for _, id := range []string{"b", "later", "done", "failed"} {
		d, err := s.GetDelivery(ctx, id)
		must(t, err)
		if d.Attempts != 0 {
			t.Errorf("unclaimed %s: Attempts %d, want 0", id, d.Attempts)
		}
	}
	got, err = s.ClaimDeliveries(ctx, at(10), 10, at(100))
	must(t, err)
	diff(t, "second claim", []string{"b"}, ids(got))
	got, err = s.ClaimDeliveries(ctx, at(10), 10, at(100))
	must(t, err)
	diff(t, "claim with nothing due", []string{}, ids(got))
	got, err = s.ClaimDeliveries(ctx, at(10), 0, at(100))
	must(t, err)
	diff(t, "claim of 0", []string{}, ids(got))

	// An update (the outcome of an attempt, or a release) sets the next
	// due time, claim or not.
	c, err := s.GetDelivery(ctx, "c")
	must(t, err)
	c.Attempts, c.LastStatusCode, c.NextAttemptAt = 1, 500, at(20)
	must(t, s.UpdateDelivery(ctx, c))
	got, err = s.ClaimDeliveries(ctx, at(19), 10, at(100))
	must(t, err)
	diff(t, "claim before the retry is due", []string{}, ids(got))
	got, err = s.ClaimDeliveries(ctx, at(20), 10, at(100))
	must(t, err)
	diff(t, "claim when the retry is due", []string{"c"}, ids(got))
	if got[0].Attempts != 2 || got[0].LastStatusCode != 500 {
		t.Errorf("claimed retry %+v", got[0])
	}
	// The lease ends: another process takes over what a dead one claimed
	// (in an order the store chooses).
	got, err = s.ClaimDeliveries(ctx, at(100), 10, at(200))
	must(t, err)
	claimed := ids(got)
	slices.Sort(claimed)
	diff(t, "claim after the leases end", []string{"a", "b", "c", "later"}, claimed)
}

// testDeliveryClaimConcurrent: concurrent claimers never get the same
// delivery, and together get them all.
func testDeliveryClaimConcurrent(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	const n = 200
	ds := make([]*webhooks.Delivery, n)
	for i := range ds {
		ds[i] = newDeliveryValue(env.ID, fmt.Sprintf("d%03d", i), 0)
		ds[i].NextAttemptAt = at(i % 7)
	}
	must(t, s.CreateDeliveries(ctx, ds...))
	const claimers = 6
	got := make(chan string, 2*n)
	errs := make(chan error, claimers)
	for range claimers {
		go func() {
			for {
				batch, err := s.ClaimDeliveries(ctx, at(10), 7, at(1000))
				if err != nil || len(batch) == 0 {
					errs <- err
					return
				}
				for _, d := range batch {
					got <- d.ID
				}
			}
		}()
	}
	for range claimers {
		must(t, <-errs)
	}
	close(got)
	seen := map[string]int{}
	for id := range got {
		seen[id]++
	}
	if len(seen) != n {
		t.Errorf("%d distinct deliveries claimed, want %d", len(seen), n)
	}
	for id, k := range seen {
		if k != 1 {
			t.Errorf("delivery %s claimed %d times", id, k)
		}
	}
}

// testDeliveryPaging: paging newest first with the last delivery of each
// page as the next position visits every delivery once, even while newer
// deliveries are created between pages, including some with the same
// CreatedAt as the last one seen.
func testDeliveryPaging(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	other := newEnv(t, s, "other")
	var want []string
	var ds []*webhooks.Delivery
	for i := range 23 {
		// Three at each time: ties are broken by id.
		d := newDeliveryValue(env.ID, fmt.Sprintf("d%02d", i), i/3)
		ds = append(ds, d)
		want = append([]string{d.ID}, want...)
	}
	must(t, s.CreateDeliveries(ctx, ds...))
	must(t, s.CreateDeliveries(ctx, newDeliveryValue(other.ID, "o1", 3)))
	var got []string
	var after *webhooks.DeliveryCursor
	for page := 0; ; page++ {
		if page > 20 {
			t.Fatal("paging does not end")
		}
		list, err := s.ListDeliveries(ctx, webhooks.DeliveryFilter{EnvironmentID: env.ID, Limit: 4, After: after})
		must(t, err)
		if len(list) == 0 {
			break
		}
		for _, d := range list {
			got = append(got, d.ID)
		}
		last := list[len(list)-1]
		after = &webhooks.DeliveryCursor{CreatedAt: last.CreatedAt, ID: last.ID}
		// Deliveries created meanwhile: newer ones, and one at the time of
		// the newest, with a larger id. None is listed on a later page.
		must(t, s.CreateDeliveries(ctx,
			newDeliveryValue(env.ID, fmt.Sprintf("new%02d", page), 100+page),
			newDeliveryValue(env.ID, fmt.Sprintf("z-new%02d", page), 7)))
	}
	diff(t, "deliveries paged through", want, got)
}

// testDeliveryInvalidFilter: text that a store cannot hold (a NUL byte,
// invalid UTF-8) in a filter is store.ErrInvalid, not a database error.
func testDeliveryInvalidFilter(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	must(t, s.CreateDeliveries(ctx, newDeliveryValue(env.ID, "d1", 0)))
	for name, f := range map[string]webhooks.DeliveryFilter{
		"NUL in connection":    {EnvironmentID: env.ID, ConnectionID: "u\x001"},
		"invalid UTF-8 type":   {EnvironmentID: env.ID, Type: "\xff\xfe"},
		"invalid UTF-8 key":    {EnvironmentID: env.ID, IntegrationKey: "gh\xc3"},
		"NUL in the cursor id": {EnvironmentID: env.ID, After: &webhooks.DeliveryCursor{CreatedAt: at(5), ID: "d\x00"}},
	} {
		_, err := s.ListDeliveries(ctx, f)
		wantErr(t, "ListDeliveries("+name+")", err, store.ErrInvalid)
	}
}

// testDeliveryRequeueFailed: RequeueFailed makes failed deliveries that
// match the filter pending again, oldest first, up to the limit, reset as
// RequeueDelivery resets one; others are left alone.
func testDeliveryRequeueFailed(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	other := newEnv(t, s, "other")
	mk := func(env int64, id string, created int, status, typ, key, conn string) *webhooks.Delivery {
		d := newDeliveryValue(env, id, created)
		d.Status, d.Type, d.IntegrationKey, d.ConnectionID = status, typ, key, conn
		if status != webhooks.StatusPending {
			d.Attempts, d.LastStatusCode, d.LastError, d.NextAttemptAt = 14, 503, "status 503", at(created+50)
		}
		if status == webhooks.StatusDelivered {
			delivered := at(created + 1)
			d.DeliveredAt, d.LastStatusCode, d.LastError = &delivered, 200, ""
		}
		return d
	}
	all := []*webhooks.Delivery{
		mk(env.ID, "f1", 1, webhooks.StatusFailed, webhooks.TypeAuth, "github", "u1"),
		mk(env.ID, "f2", 2, webhooks.StatusFailed, webhooks.TypeSync, "github", "u2"),
		mk(env.ID, "f3", 3, webhooks.StatusFailed, webhooks.TypeAuth, "slack", "u1"),
		mk(env.ID, "f4", 4, webhooks.StatusFailed, webhooks.TypeAuth, "github", "u1"),
		mk(env.ID, "f0", 0, webhooks.StatusFailed, webhooks.TypeAuth, "github", "u1"),
		mk(env.ID, "ok", 0, webhooks.StatusDelivered, webhooks.TypeAuth, "github", "u1"),
		mk(env.ID, "p", 0, webhooks.StatusPending, webhooks.TypeAuth, "github", "u1"),
		mk(other.ID, "of", 0, webhooks.StatusFailed, webhooks.TypeAuth, "github", "u1"),
	}
	must(t, s.CreateDeliveries(ctx, all...))
	before := map[string]*webhooks.Delivery{}
	for _, d := range all {
		got, err := s.GetDelivery(ctx, d.ID)
		must(t, err)
		before[d.ID] = got
	}
	pendingIDs := func() []string {
		list, err := s.ListDeliveries(ctx, webhooks.DeliveryFilter{Status: webhooks.StatusPending, Limit: 100})
		must(t, err)
		out := []string{}
		for _, d := range list {
			if d.ID != "p" {
				out = append(out, d.ID)
			}
		}
		slices.Sort(out)
		return out
	}

	n, err := s.RequeueFailed(ctx, webhooks.DeliveryFilter{EnvironmentID: env.ID}, 0, at(9))
	must(t, err)
	if n != 0 || len(pendingIDs()) != 0 {
		t.Errorf("a limit of 0 requeued %d: %v", n, pendingIDs())
	}
	// Filters: type, integration and connection; the oldest first.
	n, err = s.RequeueFailed(ctx, webhooks.DeliveryFilter{EnvironmentID: env.ID, Type: webhooks.TypeAuth,
		IntegrationKey: "github", ConnectionID: "u1"}, 2, at(10))
	must(t, err)
	if n != 2 {
		t.Errorf("requeued %d, want 2", n)
	}
	diff(t, "requeued with filters and a limit", []string{"f0", "f1"}, pendingIDs())
	got, err := s.GetDelivery(ctx, "f1")
	must(t, err)
	want := *before["f1"]
	want.Status, want.Attempts, want.LastStatusCode, want.LastError = webhooks.StatusPending, 0, 0, ""
	want.UpdatedAt, want.NextAttemptAt = at(10), time.Time{}
	diff(t, "a requeued delivery", &want, got)
	// The rest of the environment.
	n, err = s.RequeueFailed(ctx, webhooks.DeliveryFilter{EnvironmentID: env.ID}, 100, at(11))
	must(t, err)
	if n != 3 {
		t.Errorf("requeued %d, want 3", n)
	}
	diff(t, "requeued in the environment", []string{"f0", "f1", "f2", "f3", "f4"}, pendingIDs())
	// Untouched: a delivered one, a pending one and another environment's.
	for _, id := range []string{"ok", "p", "of"} {
		got, err := s.GetDelivery(ctx, id)
		must(t, err)
		diff(t, "untouched "+id, before[id], got)
	}
	n, err = s.RequeueFailed(ctx, webhooks.DeliveryFilter{EnvironmentID: env.ID}, 100, at(12))
	must(t, err)
	if n != 0 {
		t.Errorf("requeued %d with none failed", n)
	}
}

// testDeliveryRequeueFailedConcurrent: concurrent RequeueFailed calls
// requeue each failed delivery once, all of them together.
func testDeliveryRequeueFailedConcurrent(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	const n = 60
	ds := make([]*webhooks.Delivery, n)
	for i := range ds {
		ds[i] = newDeliveryValue(env.ID, fmt.Sprintf("d%02d", i), i)
		ds[i].Status, ds[i].Attempts = webhooks.StatusFailed, 3
	}
	must(t, s.CreateDeliveries(ctx, ds...))
	const callers = 5
	counts := make(chan int, callers*n)
	errs := make(chan error, callers)
	for range callers {
		go func() {
			for {
				k, err := s.RequeueFailed(ctx, webhooks.DeliveryFilter{EnvironmentID: env.ID}, 7, at(100))
				if err != nil || k == 0 {
					errs <- err
					return
				}
				counts <- k
			}
		}()
	}
	for range callers {
		must(t, <-errs)
	}
	close(counts)
	total := 0
	for k := range counts {
		total += k
	}
	if total != n {
		t.Errorf("requeued %d in all, want %d", total, n)
	}
	list, err := s.ListDeliveries(ctx, webhooks.DeliveryFilter{EnvironmentID: env.ID, Status: webhooks.StatusPending})
	must(t, err)
	if len(list) != n {
		t.Errorf("%d pending, want %d", len(list), n)
	}
}

// testDeliveryUnverified: a delivery's Unverified mark (the forward of a
// provider webhook that no signature verified) is stored as created and
// read back by every read, claims included; updates and requeues leave it.
func testDeliveryUnverified(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	anon := newDeliveryValue(env.ID, "anon", 0)
	anon.Type, anon.Unverified = webhooks.TypeForward, true
	signed := newDeliveryValue(env.ID, "signed", 1)
	signed.Type = webhooks.TypeForward
	must(t, s.CreateDeliveries(ctx, anon, signed))
	marks := func(what string, ds []*webhooks.Delivery, want map[string]bool) {
		t.Helper()
		got := map[string]bool{}
		for _, d := range ds {
			got[d.ID] = d.Unverified
		}
		diff(t, what, want, got)
	}
	both := map[string]bool{"anon": true, "signed": false}
	for _, id := range []string{"anon", "signed"} {
		got, err := s.GetDelivery(ctx, id)
		must(t, err)
		marks("GetDelivery("+id+")", []*webhooks.Delivery{got}, map[string]bool{id: both[id]})
	}
	for _, omit := range []bool{false, true} {
		list, err := s.ListDeliveries(ctx, webhooks.DeliveryFilter{EnvironmentID: env.ID, OmitBody: omit})
		must(t, err)
		marks(fmt.Sprintf("ListDeliveries(OmitBody %v)", omit), list, both)
	}
	claimed, err := s.ClaimDeliveries(ctx, at(10), 10, at(100))
	must(t, err)
	marks("ClaimDeliveries", claimed, both)

	// An update does not change the mark, whatever the value it is given.
	for _, d := range claimed {
		d.Status, d.UpdatedAt, d.Unverified = webhooks.StatusFailed, at(20), !d.Unverified
		must(t, s.UpdateDelivery(ctx, d))
	}
	_, err = s.RequeueDelivery(ctx, "anon", at(30))
	must(t, err)
	n, err := s.RequeueFailed(ctx, webhooks.DeliveryFilter{EnvironmentID: env.ID}, 10, at(30))
	must(t, err)
	if n != 1 {
		t.Errorf("RequeueFailed requeued %d, want 1", n)
	}
	list, err := s.ListDeliveries(ctx, webhooks.DeliveryFilter{EnvironmentID: env.ID})
	must(t, err)
	marks("after updates and requeues", list, both)
}
