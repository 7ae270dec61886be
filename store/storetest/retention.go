package storetest

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/embedauth/connect/oplog"
	"github.com/embedauth/connect/store"
	"github.com/embedauth/connect/webhooks"
)

var retentionTests = []test{
	{"DeleteDeliveriesBefore", testDeleteDeliveriesBefore},
	{"DeleteLogsBefore", testDeleteLogsBefore},
	{"TrimForwards", testTrimForwards},
	{"TrimForwardsTx", testTrimForwardsTx},
	{"TrimForwardsChargesRows", testTrimForwardsChargesRows},
}

// finishedDelivery returns a delivery of env with the status, type,
// integration and body given, created at created and last updated at
// updated.
func finishedDelivery(env int64, id, status, typ, key string, created, updated int, body []byte) *webhooks.Delivery {
	d := newDeliveryValue(env, id, created)
	d.Status, d.Type, d.IntegrationKey, d.Body, d.UpdatedAt = status, typ, key, body, at(updated)
	if status == webhooks.StatusDelivered {
		delivered := at(updated)
		d.DeliveredAt, d.LastStatusCode, d.Attempts = &delivered, 200, 1
	}
	if status == webhooks.StatusFailed {
		d.LastStatusCode, d.LastError, d.Attempts = 503, "status 503", 14
	}
	return d
}

// wantDeleted returns a check of what a deletion returned:
// wantDeleted(t, what, want)(s.DeleteLogsBefore(...)).
func wantDeleted(t *testing.T, what string, want int) func(int, error) {
	return func(n int, err error) {
		t.Helper()
		must(t, err)
		if n != want {
			t.Errorf("%s deleted %d, want %d", what, n, want)
		}
	}
}

// deliveryIDs lists the IDs of every delivery, sorted.
func deliveryIDs(t *testing.T, s Store) []string {
	t.Helper()
	list, err := s.ListDeliveries(t.Context(), webhooks.DeliveryFilter{Limit: 1000, OmitBody: true})
	must(t, err)
	out := []string{}
	for _, d := range list {
		out = append(out, d.ID)
	}
	slices.Sort(out)
	return out
}

// testDeleteDeliveriesBefore: finished deliveries whose final state is
// older than the limit go, oldest first and up to the batch size; pending
// ones and newer ones stay, whatever their age.
func testDeleteDeliveriesBefore(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	other := newEnv(t, s, "other")
	body := []byte(`{"type":"auth"}`)
	must(t, s.CreateDeliveries(ctx,
		finishedDelivery(env.ID, "delivered-10", webhooks.StatusDelivered, webhooks.TypeAuth, "github", 0, 10, body),
		finishedDelivery(other.ID, "failed-20", webhooks.StatusFailed, webhooks.TypeSync, "github", 1, 20, body),
		finishedDelivery(env.ID, "forward-30", webhooks.StatusFailed, webhooks.TypeForward, "notion", 2, 30, body),
		// Pending for long (its receiver has been down): kept.
		finishedDelivery(env.ID, "pending-5", webhooks.StatusPending, webhooks.TypeAuth, "github", 0, 5, body),
		// Created long ago, finished at the limit: kept (before is exclusive).
		finishedDelivery(env.ID, "delivered-50", webhooks.StatusDelivered, webhooks.TypeAuth, "github", 0, 50, body),
		finishedDelivery(env.ID, "delivered-90", webhooks.StatusDelivered, webhooks.TypeAuth, "github", 80, 90, body),
	))
	all := deliveryIDs(t, s)

	wantDeleted(t, "a limit of 0", 0)(s.DeleteDeliveriesBefore(ctx, at(50), 0))
	diff(t, "deliveries after a limit of 0", all, deliveryIDs(t, s))

	wantDeleted(t, "a limit of 2", 2)(s.DeleteDeliveriesBefore(ctx, at(50), 2))
	diff(t, "deliveries after the 2 oldest", []string{"delivered-50", "delivered-90", "forward-30", "pending-5"}, deliveryIDs(t, s))
	_, err := s.GetDelivery(ctx, "delivered-10")
	wantErr(t, "GetDelivery(deleted)", err, store.ErrNotFound)

	wantDeleted(t, "the rest", 1)(s.DeleteDeliveriesBefore(ctx, at(50), 100))
	wantDeleted(t, "a second pass", 0)(s.DeleteDeliveriesBefore(ctx, at(50), 100))
	diff(t, "deliveries left", []string{"delivered-50", "delivered-90", "pending-5"}, deliveryIDs(t, s))

	// A delivery made pending again (resent) is not deleted, however old
	// its previous final state.
	_, err = s.RequeueDelivery(ctx, "delivered-50", at(60))
	must(t, err)
	wantDeleted(t, "a later limit", 1)(s.DeleteDeliveriesBefore(ctx, at(1000), 100))
	diff(t, "pending deliveries stay", []string{"delivered-50", "pending-5"}, deliveryIDs(t, s))
}

// testDeleteLogsBefore: entries older than the limit go, oldest first and
// up to the batch size, in every environment.
func testDeleteLogsBefore(t *testing.T, s Store) {
	ctx := t.Context()
	a := newEnv(t, s, "a")
	b := newEnv(t, s, "b")
	for i, env := range []int64{a.ID, b.ID, a.ID, b.ID, a.ID} {
		must(t, s.AppendLog(ctx, &oplog.Entry{ID: fmt.Sprintf("e%d", i), EnvironmentID: env, Type: "proxy",
			Operation: "call", Status: oplog.StatusSuccess, CreatedAt: at(10 * i)}))
	}
	ids := func() []string {
		t.Helper()
		list, err := s.ListLogs(ctx, oplog.Filter{Limit: 100})
		must(t, err)
		out := []string{}
		for _, e := range list {
			out = append(out, e.ID)
		}
		return out
	}
	wantDeleted(t, "a limit of 0", 0)(s.DeleteLogsBefore(ctx, at(30), 0))
	wantDeleted(t, "a limit of 2", 2)(s.DeleteLogsBefore(ctx, at(30), 2))
	diff(t, "entries after the 2 oldest", []string{"e4", "e3", "e2"}, ids())
	wantDeleted(t, "the rest", 1)(s.DeleteLogsBefore(ctx, at(30), 100))
	// e3 was written at the limit: kept.
	diff(t, "entries left", []string{"e4", "e3"}, ids())
	// A deleted entry's ID is free again.
	must(t, s.AppendLog(ctx, &oplog.Entry{ID: "e0", EnvironmentID: a.ID, Type: "proxy", Operation: "call",
		Status: oplog.StatusSuccess, CreatedAt: at(100)}))
	diff(t, "entries with e0 again", []string{"e0", "e4", "e3"}, ids())
}

// forwardTotal is TrimForwards with a bound nothing exceeds: the total of
// the integration's forward deliveries, each charged
// webhooks.ForwardCharge of its body.
func forwardTotal(t *testing.T, ctx context.Context, s Store, env int64, key string) int64 {
	t.Helper()
	n, err := s.TrimForwards(ctx, env, key, 1<<50)
	must(t, err)
	return n
}

// testTrimForwards: the forward deliveries of one integration are bounded
// by deleting the oldest finished ones; pending ones, other integrations,
// other environments and other types are left alone.
func testTrimForwards(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	other := newEnv(t, s, "other")
	hundred := bytes.Repeat([]byte("x"), 100)
	fwd := func(env int64, id, status, key string, created int) *webhooks.Delivery {
		return finishedDelivery(env, id, status, webhooks.TypeForward, key, created, created+1, hundred)
	}
	// The charge of each forward of notion (ids of the same length), and
	// of zendesk's.
	c := fwd(env.ID, "f0", webhooks.StatusPending, "notion", 0).ForwardCharge()
	cz := fwd(env.ID, "o1", webhooks.StatusPending, "zendesk", 0).ForwardCharge()
	if n := forwardTotal(t, ctx, s, env.ID, "notion"); n != 0 {
		t.Errorf("total of an integration without deliveries = %d", n)
	}
	must(t, s.CreateDeliveries(ctx,
		fwd(env.ID, "f1", webhooks.StatusDelivered, "notion", 1),
		fwd(env.ID, "f2", webhooks.StatusFailed, "notion", 2),
		fwd(env.ID, "f3", webhooks.StatusPending, "notion", 3),
	))
	must(t, s.CreateDeliveries(ctx, fwd(env.ID, "f4", webhooks.StatusDelivered, "notion", 4)))
	must(t, s.CreateDeliveries(ctx,
		fwd(env.ID, "o1", webhooks.StatusDelivered, "zendesk", 0),
		fwd(other.ID, "b1", webhooks.StatusDelivered, "notion", 0),
		finishedDelivery(env.ID, "a1", webhooks.StatusDelivered, webhooks.TypeAuth, "notion", 0, 1, hundred),
	))
	// A refused insert counts nothing.
	wantErr(t, "CreateDeliveries(duplicate)", s.CreateDeliveries(ctx, fwd(env.ID, "f1", webhooks.StatusPending, "notion", 9)),
		store.ErrConflict)

	left, err := s.TrimForwards(ctx, env.ID, "notion", 4*c)
	must(t, err)
	if left != 4*c {
		t.Errorf("within the bound: total %d, want %d", left, 4*c)
	}
	all := []string{"a1", "b1", "f1", "f2", "f3", "f4", "o1"}
	diff(t, "deliveries within the bound", all, deliveryIDs(t, s))

	left, err = s.TrimForwards(ctx, env.ID, "notion", 2*c+c/2)
	must(t, err)
	if left != 2*c {
		t.Errorf("over the bound: total %d, want %d", left, 2*c)
	}
	diff(t, "the two oldest finished forwards deleted", []string{"a1", "b1", "f3", "f4", "o1"}, deliveryIDs(t, s))

	// The pending forward alone exceeds the bound: it stays, and the
	// total says so.
	left, err = s.TrimForwards(ctx, env.ID, "notion", c/2)
	must(t, err)
	if left != c {
		t.Errorf("pending over the bound: total %d, want %d", left, c)
	}
	diff(t, "only the pending forward left", []string{"a1", "b1", "f3", "o1"}, deliveryIDs(t, s))
	if n := forwardTotal(t, ctx, s, env.ID, "zendesk"); n != cz {
		t.Errorf("other integration: total %d, want %d", n, cz)
	}
	if n := forwardTotal(t, ctx, s, other.ID, "notion"); n != c {
		t.Errorf("other environment: total %d, want %d", n, c)
	}

	// Retention takes deleted forwards off the total.
	wantDeleted(t, "retention", 3)(s.DeleteDeliveriesBefore(ctx, at(1000), 100))
	if n := forwardTotal(t, ctx, s, env.ID, "zendesk"); n != 0 {
		t.Errorf("after retention: total %d, want 0", n)
	}
	if n := forwardTotal(t, ctx, s, other.ID, "notion"); n != 0 {
		t.Errorf("other environment after retention: total %d, want 0", n)
	}
	if n := forwardTotal(t, ctx, s, env.ID, "notion"); n != c {
		t.Errorf("pending forward after retention: total %d, want %d", n, c)
	}
}

// testTrimForwardsTx: in a transaction, the total counts the forwards the
// transaction stored, and a rollback undoes them and the deletions.
func testTrimForwardsTx(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	hundred := bytes.Repeat([]byte("y"), 100)
	old := finishedDelivery(env.ID, "old", webhooks.StatusDelivered, webhooks.TypeForward, "notion", 0, 1, hundred)
	c := old.ForwardCharge() // "new" has as long an id
	must(t, s.CreateDeliveries(ctx, old))
	err := s.WithTx(ctx, func(ctx context.Context) error {
		must(t, s.CreateDeliveries(ctx,
			finishedDelivery(env.ID, "new", webhooks.StatusPending, webhooks.TypeForward, "notion", 5, 5, hundred)))
		left, err := s.TrimForwards(ctx, env.ID, "notion", c+c/2)
		must(t, err)
		if left != c {
			t.Errorf("in the transaction: total %d, want %d", left, c)
		}
		if _, err := s.GetDelivery(ctx, "old"); err == nil {
			t.Errorf("the old forward is still there in the transaction")
		}
		return errRollback
	})
	wantErr(t, "WithTx", err, errRollback)
	diff(t, "deliveries after the rollback", []string{"old"}, deliveryIDs(t, s))
	if n := forwardTotal(t, ctx, s, env.ID, "notion"); n != c {
		t.Errorf("after the rollback: total %d, want %d", n, c)
	}
}

// testTrimForwardsChargesRows: each forward is charged its body and its
// row (Delivery.ForwardCharge: body, URL, integration key and connection
// id), so that forwards of empty or tiny bodies count against the bound as
// surely as large ones; the charge is the same whatever the delivery's
// status, and a deleted forward takes all of it away.
func testTrimForwardsChargesRows(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	sizes := []int{0, 1, 15, 16, 1000, 70000}
	var want int64
	var ds []*webhooks.Delivery
	for i, n := range sizes {
		status := webhooks.StatusDelivered
		if i == len(sizes)-1 {
			status = webhooks.StatusPending
		}
		d := finishedDelivery(env.ID, fmt.Sprint("f", i), status, webhooks.TypeForward, "notion", i, i+1, bytes.Repeat([]byte("z"), n))
		if i == 1 {
			d.URL += "/" + strings.Repeat("u", 1000) // a long URL is charged too
			d.ConnectionID = ""
		}
		ds = append(ds, d)
		want += d.ForwardCharge()
	}
	must(t, s.CreateDeliveries(ctx, ds[:3]...))
	must(t, s.CreateDeliveries(ctx, ds[3:]...))
	if n := forwardTotal(t, ctx, s, env.ID, "notion"); n != want {
		t.Fatalf("total of forwards of %v bytes: %d, want %d", sizes, n, want)
	}
	text := func(d *webhooks.Delivery) int { return len(d.URL) + len(d.IntegrationKey) + len(d.ConnectionID) }
	for _, d := range ds {
		n := len(d.Body)
		if got, want := d.ForwardCharge(), int64(n+n/16+3*text(d)+4096); got != want {
			t.Fatalf("charge of a forward of %d bytes and %d of text: %d, want %d", n, text(d), got, want)
		}
	}
	// A bound under one row: every finished forward goes, the pending one
	// stays, and the total is its charge.
	left, err := s.TrimForwards(ctx, env.ID, "notion", webhooks.ForwardRowOverhead-1)
	must(t, err)
	if last := ds[len(ds)-1].ForwardCharge(); left != last {
		t.Errorf("after trimming: total %d, want the pending forward's %d", left, last)
	}
	diff(t, "forwards left", []string{fmt.Sprint("f", len(sizes)-1)}, deliveryIDs(t, s))
}
