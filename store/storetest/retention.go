package storetest

import (
	"bytes"
	"context"
	"fmt"
	"slices"
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
// the integration's forward bodies.
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

	left, err := s.TrimForwards(ctx, env.ID, "notion", 400)
	must(t, err)
	if left != 400 {
		t.Errorf("within the bound: total %d, want 400", left)
	}
	all := []string{"a1", "b1", "f1", "f2", "f3", "f4", "o1"}
	diff(t, "deliveries within the bound", all, deliveryIDs(t, s))

	left, err = s.TrimForwards(ctx, env.ID, "notion", 250)
	must(t, err)
	if left != 200 {
		t.Errorf("over the bound: total %d, want 200", left)
	}
	diff(t, "the two oldest finished forwards deleted", []string{"a1", "b1", "f3", "f4", "o1"}, deliveryIDs(t, s))

	// The pending forward alone exceeds the bound: it stays, and the
	// total says so.
	left, err = s.TrimForwards(ctx, env.ID, "notion", 50)
	must(t, err)
	if left != 100 {
		t.Errorf("pending over the bound: total %d, want 100", left)
	}
	diff(t, "only the pending forward left", []string{"a1", "b1", "f3", "o1"}, deliveryIDs(t, s))
	if n := forwardTotal(t, ctx, s, env.ID, "zendesk"); n != 100 {
		t.Errorf("other integration: total %d, want 100", n)
	}
	if n := forwardTotal(t, ctx, s, other.ID, "notion"); n != 100 {
		t.Errorf("other environment: total %d, want 100", n)
	}

	// Retention takes deleted forwards off the total.
	wantDeleted(t, "retention", 3)(s.DeleteDeliveriesBefore(ctx, at(1000), 100))
	if n := forwardTotal(t, ctx, s, env.ID, "zendesk"); n != 0 {
		t.Errorf("after retention: total %d, want 0", n)
	}
	if n := forwardTotal(t, ctx, s, other.ID, "notion"); n != 0 {
		t.Errorf("other environment after retention: total %d, want 0", n)
	}
	if n := forwardTotal(t, ctx, s, env.ID, "notion"); n != 100 {
		t.Errorf("pending forward after retention: total %d, want 100", n)
	}
}

// testTrimForwardsTx: in a transaction, the total counts the forwards the
// transaction stored, and a rollback undoes them and the deletions.
func testTrimForwardsTx(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	hundred := bytes.Repeat([]byte("y"), 100)
	must(t, s.CreateDeliveries(ctx,
		finishedDelivery(env.ID, "old", webhooks.StatusDelivered, webhooks.TypeForward, "notion", 0, 1, hundred)))
	err := s.WithTx(ctx, func(ctx context.Context) error {
		must(t, s.CreateDeliveries(ctx,
			finishedDelivery(env.ID, "new", webhooks.StatusPending, webhooks.TypeForward, "notion", 5, 5, hundred)))
		left, err := s.TrimForwards(ctx, env.ID, "notion", 150)
		must(t, err)
		if left != 100 {
			t.Errorf("in the transaction: total %d, want 100", left)
		}
		if _, err := s.GetDelivery(ctx, "old"); err == nil {
			t.Errorf("the old forward is still there in the transaction")
		}
		return errRollback
	})
	wantErr(t, "WithTx", err, errRollback)
	diff(t, "deliveries after the rollback", []string{"old"}, deliveryIDs(t, s))
	if n := forwardTotal(t, ctx, s, env.ID, "notion"); n != 100 {
		t.Errorf("after the rollback: total %d, want 100", n)
	}
}
