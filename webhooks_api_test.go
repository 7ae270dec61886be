package connect_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/webhooks"
)

// deliveriesReceiver answers 500 to webhooks of connection c2 and 200 to
// the others, and counts the requests.
func deliveriesReceiver(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		b, _ := io.ReadAll(r.Body)
		if strings.Contains(string(b), `"connectionId":"c2"`) {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// forwardEvent is a forwarded provider webhook of no connection.
func forwardEvent(bu *bundle) webhooks.Event {
	return webhooks.Event{EnvironmentID: bu.env.ID, IntegrationKey: "gh", Type: webhooks.TypeForward,
		Payload: &webhooks.ForwardPayload{ProviderConfigKey: "gh", Payload: map[string]any{"zen": "x"}}}
}

// listIDs lists through the API and returns the ids, and the next cursor
// ("" for none).
func listIDs(t *testing.T, bu *bundle, query string) ([]string, string) {
	t.Helper()
	r := bu.mustDo(t, 200, req{method: "GET", path: "/webhooks/deliveries" + query})
	var ids []string
	for _, d := range r.obj()["data"].([]any) {
		ids = append(ids, d.(map[string]any)["id"].(string))
	}
	next, _ := r.obj()["next_cursor"].(string)
	if _, ok := r.obj()["next_cursor"]; !ok {
		t.Errorf("GET /webhooks/deliveries%s has no next_cursor: %s", query, r.raw)
	}
	return ids, next
}

func ids(ds []*webhooks.Delivery) []string {
	out := []string{}
	for _, d := range ds {
		out = append(out, d.ID)
	}
	return out
}

// TestWebhookDeliveriesAPI: the deliveries of an environment are listed
// (filtered, newest first, without bodies), read one by one (with the
// body), and resent, through the HTTP API; nothing of another environment
// is visible, and no answer holds the signing key.
func TestWebhookDeliveriesAPI(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		rcv, _ := deliveriesReceiver(t)
		// One attempt each: c2's fail at once.
		bu := hookSetup(t, b, []string{rcv.URL + "/hooks"}, func(cfg *connect.Config) {
			cfg.Webhooks.Retries, cfg.Webhooks.Schedule = -1, []time.Duration{}
		})
		ctx := t.Context()
		for _, e := range []webhooks.Event{authEvent(bu, "c1", webhooks.OperationCreation), authEvent(bu, "c2", webhooks.OperationCreation),
			forwardEvent(bu), authEvent(bu, "c2", webhooks.OperationOverride)} {
			if err := bu.svc.Notify(ctx, e); err != nil {
				t.Fatal(err)
			}
		}
		all := bu.settle(t, 4)
		byStatus := map[string][]string{}
		for _, d := range all {
			byStatus[d.Status] = append(byStatus[d.Status], d.ID)
		}
		if len(byStatus[webhooks.StatusFailed]) != 2 || len(byStatus[webhooks.StatusDelivered]) != 2 {
			t.Fatalf("deliveries by status %v", byStatus)
		}

		// Another environment with a delivery of its own.
		other, err := bu.svc.Environments().Create(ctx, environments.CreateInput{Name: "other", WebhookURLs: []string{"https://other.example.com/hooks"}})
		if err != nil {
			t.Fatal(err)
		}
		if err := bu.svc.Notify(ctx, webhooks.Event{EnvironmentID: other.ID, IntegrationKey: "x", Type: webhooks.TypeForward,
			Payload: &webhooks.ForwardPayload{ProviderConfigKey: "x"}}); err != nil {
			t.Fatal(err)
		}
		otherDs, err := bu.svc.ListWebhookDeliveries(ctx, webhooks.DeliveryFilter{EnvironmentID: other.ID})
		if err != nil || len(otherDs) != 1 {
			t.Fatalf("other environment: %v, %v", otherDs, err)
		}

		// The list: every delivery of the environment, newest first, as
		// the Store orders them.
		got, next := listIDs(t, bu, "")
		if !slices.Equal(got, ids(all)) || next != "" {
			t.Errorf("list = %v (next %q), want %v", got, next, ids(all))
		}
		r := bu.mustDo(t, 200, req{method: "GET", path: "/webhooks/deliveries?status=failed"})
		for _, raw := range r.obj()["data"].([]any) {
			d := raw.(map[string]any)
			if d["status"] != "failed" || d["attempts"] != float64(1) || d["last_status_code"] != float64(500) ||
				d["last_error"] != "status 500" || d["connection_id"] != "c2" || d["provider_config_key"] != "gh" ||
				d["type"] != "auth" || d["url"] != rcv.URL+"/hooks" || d["delivered_at"] != nil || d["next_attempt_at"] != nil ||
				d["event_id"] == "" || d["created_at"] == "" || d["updated_at"] == "" {
				t.Errorf("failed delivery %v", d)
			}
			if _, ok := d["body"]; ok {
				t.Errorf("a listed delivery has its body: %v", d)
			}
		}
		for _, c := range []struct {
			query string
			want  func(d *webhooks.Delivery) bool
		}{
			{"?status=failed", func(d *webhooks.Delivery) bool { return d.Status == webhooks.StatusFailed }},
			{"?status=delivered", func(d *webhooks.Delivery) bool { return d.Status == webhooks.StatusDelivered }},
			{"?status=pending", func(d *webhooks.Delivery) bool { return false }},
			{"?connection_id=c1", func(d *webhooks.Delivery) bool { return d.ConnectionID == "c1" }},
			{"?type=forward", func(d *webhooks.Delivery) bool { return d.Type == webhooks.TypeForward }},
			{"?type=auth&connection_id=c2&status=failed", func(d *webhooks.Delivery) bool { return d.ConnectionID == "c2" }},
			{"?integration_id=gh", func(d *webhooks.Delivery) bool { return true }},
			{"?integration_id=x", func(d *webhooks.Delivery) bool { return false }},
			{"?integration_id=gh&connection_id=c1&status=", func(d *webhooks.Delivery) bool { return d.ConnectionID == "c1" }},
		} {
			var want []string
			for _, d := range all {
				if c.want(d) {
					want = append(want, d.ID)
				}
			}
			if got, _ := listIDs(t, bu, c.query); !slices.Equal(got, want) {
				t.Errorf("list%s = %v, want %v", c.query, got, want)
			}
		}

		// One delivery, with its body; another environment's is not found.
		d := all[slices.IndexFunc(all, func(d *webhooks.Delivery) bool { return d.Type == webhooks.TypeForward })]
		r = bu.mustDo(t, 200, req{method: "GET", path: "/webhooks/deliveries/" + d.ID})
		one := r.obj()["data"].(map[string]any)
		body, _ := one["body"].(map[string]any)
		if one["id"] != d.ID || one["status"] != "delivered" || one["delivered_at"] == nil || one["connection_id"] != nil ||
			body["type"] != "forward" || body["from"] != "nango" || body["payload"].(map[string]any)["zen"] != "x" {
			t.Errorf("GET one: %s", r.raw)
		}
		for _, path := range []string{"/webhooks/deliveries/" + otherDs[0].ID, "/webhooks/deliveries/nope"} {
			if r := bu.mustDo(t, 404, req{method: "GET", path: path}); r.obj()["error"].(map[string]any)["code"] != "webhook_delivery_not_found" {
				t.Errorf("GET %s: %s", path, r.raw)
			}
		}
		bu.mustDo(t, 404, req{method: "POST", path: "/webhooks/deliveries/" + otherDs[0].ID + "/resend"})
		if got, _ := listIDs(t, bu, "?type=forward&integration_id=x"); len(got) != 0 {
			t.Errorf("another environment's delivery is listed: %v", got)
		}

		// Resend one failed delivery: pending again with a fresh set of
		// attempts; it fails again (the receiver still refuses c2).
		failedID := byStatus[webhooks.StatusFailed][0]
		r = bu.mustDo(t, 200, req{method: "POST", path: "/webhooks/deliveries/" + failedID + "/resend"})
		if d := r.obj()["data"].(map[string]any); d["id"] != failedID || d["status"] != "pending" || d["attempts"] != float64(0) ||
			d["last_error"] != nil || d["last_status_code"] != nil {
			t.Errorf("resend: %s", r.raw)
		}
		bu.settle(t, 4)
		again, err := bu.b.store.GetDelivery(ctx, failedID)
		if err != nil || again.Status != webhooks.StatusFailed || again.Attempts != 1 {
			t.Errorf("after the resend: %+v, %v", again, err)
		}
		if n := len(deliveryLogs(t, bu, failedID)); n != 2 {
			t.Errorf("%d attempts logged for the resent delivery, want 2", n)
		}

		// Resend every failed delivery of c2 in one call.
		r = bu.mustDo(t, 200, req{method: "POST", path: "/webhooks/deliveries/resend", body: `{"connection_id":"c2","type":"auth"}`})
		if d := r.obj()["data"].(map[string]any); d["resent"] != float64(2) || d["has_more"] != false {
			t.Errorf("resend all: %s", r.raw)
		}
		bu.settle(t, 4)

		// No answer holds the signing key or a signature of a body.
		for _, path := range []string{"/webhooks/deliveries", "/webhooks/deliveries/" + d.ID, "/webhooks/deliveries/" + failedID} {
			raw := string(bu.mustDo(t, 200, req{method: "GET", path: path}).raw)
			if strings.Contains(raw, hookKey) || strings.Contains(strings.ToLower(raw), "hmac") || strings.Contains(raw, "signature") {
				t.Errorf("GET %s holds the signing key or a signature: %s", path, raw)
			}
		}
	})
}

// TestWebhookDeliveriesAPIPaging: next_cursor pages through every delivery
// once, newest first, while new ones are created between pages.
func TestWebhookDeliveriesAPIPaging(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		bu := setup(t, b) // not started: the deliveries stay pending
		urls := []string{"https://hooks.example.com/a"}
		if _, err := bu.svc.Environments().Update(t.Context(), bu.env.ID, environments.UpdateInput{WebhookURLs: &urls}); err != nil {
			t.Fatal(err)
		}
		notify := func(n int) {
			for range n {
				// Some share their creation time: ties are broken by id.
				bu.now.t = bu.now.t.Add(500 * time.Millisecond)
				if err := bu.svc.Notify(t.Context(), forwardEvent(bu)); err != nil {
					t.Fatal(err)
				}
				if err := bu.svc.Notify(t.Context(), forwardEvent(bu)); err != nil {
					t.Fatal(err)
				}
			}
		}
		notify(6)
		want := ids(bu.deliveries(t, webhooks.DeliveryFilter{}))
		if len(want) != 12 {
			t.Fatalf("%d deliveries", len(want))
		}
		var got []string
		query := "?limit=5"
		for page := 0; ; page++ {
			if page > 10 {
				t.Fatal("paging does not end")
			}
			ids, next := listIDs(t, bu, query)
			got = append(got, ids...)
			if next == "" {
				break
			}
			if len(ids) != 5 {
				t.Errorf("page %d has %d deliveries, want 5", page, len(ids))
			}
			notify(1) // newer deliveries, created between pages
			query = "?limit=5&cursor=" + url.QueryEscape(next)
		}
		if !slices.Equal(got, want) {
			t.Errorf("paged %v, want %v", got, want)
		}
		// A page with filters and the cursor of another listing: the same
		// position, the filters of this one.
		_, next := listIDs(t, bu, "?limit=1")
		if got, _ := listIDs(t, bu, "?type=auth&cursor="+next); len(got) != 0 {
			t.Errorf("auth deliveries after the newest: %v", got)
		}
	})
}

// TestWebhookDeliveriesAPIResendFailedInBatches: resending every failed
// delivery goes in bounded batches (limit), oldest first, until has_more
// is false; filters select which; delivered and pending ones are left
// alone; the resent ones are then delivered.
func TestWebhookDeliveriesAPIResendFailedInBatches(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		rcv, received := deliveriesReceiver(t)
		var bu *bundle
		bu = setup(t, b, func(cfg *connect.Config) {
			cfg.Webhooks = webhooks.DeliveryConfig{Backoff: 5 * time.Millisecond, Timeout: 5 * time.Second}
		})
		ctx := t.Context()
		urls := []string{rcv.URL + "/hooks"}
		if _, err := bu.svc.Environments().Update(ctx, bu.env.ID, environments.UpdateInput{WebhookURLs: &urls}); err != nil {
			t.Fatal(err)
		}
		bu.mustDo(t, 200, req{method: "POST", path: "/integrations", body: `{"provider":"github","unique_key":"gh"}`})
		for range 7 {
			bu.now.t = bu.now.t.Add(time.Second)
			if err := bu.svc.Notify(ctx, authEvent(bu, "c1", webhooks.OperationCreation)); err != nil {
				t.Fatal(err)
			}
		}
		bu.now.t = bu.now.t.Add(time.Second)
		if err := bu.svc.Notify(ctx, forwardEvent(bu)); err != nil {
			t.Fatal(err)
		}
		bu.now.t = bu.now.t.Add(time.Second)
		if err := bu.svc.Notify(ctx, authEvent(bu, "c1", webhooks.OperationOverride)); err != nil {
			t.Fatal(err)
		}
		// As if their attempts were used up while the receiver was down:
		// all failed but the newest, which is pending.
		all := bu.deliveries(t, webhooks.DeliveryFilter{})
		for _, d := range all[1:] {
			d.Status, d.Attempts, d.LastStatusCode, d.LastError = webhooks.StatusFailed, 14, 503, "status 503"
			if err := bu.b.store.UpdateDelivery(ctx, d); err != nil {
				t.Fatal(err)
			}
		}
		oldestFirst := ids(all[1:])
		slices.Reverse(oldestFirst)
		pending := func() []string {
			var out []string
			for _, d := range bu.deliveries(t, webhooks.DeliveryFilter{Status: webhooks.StatusPending}) {
				if d.ID != all[0].ID {
					out = append(out, d.ID)
				}
			}
			slices.Sort(out)
			return out
		}
		sorted := func(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }
		resend := func(body string, resent int, more bool) {
			t.Helper()
			r := bu.mustDo(t, 200, req{method: "POST", path: "/webhooks/deliveries/resend", body: body})
			if d := r.obj()["data"].(map[string]any); d["resent"] != float64(resent) || d["has_more"] != more {
				t.Errorf("resend %s: %s, want resent %d, has_more %v", body, r.raw, resent, more)
			}
		}
		resend(`{"connection_id":"nobody"}`, 0, false)
		resend(`{"type":"forward"}`, 1, false)
		forward := all[slices.IndexFunc(all, func(d *webhooks.Delivery) bool { return d.Type == webhooks.TypeForward })].ID
		if got := pending(); !slices.Equal(got, []string{forward}) {
			t.Errorf("pending after resending the forward webhooks: %v", got)
		}
		// The auth ones, three at a time, oldest first.
		resend(`{"limit":3,"status":"failed","integration_id":"gh"}`, 3, true)
		if got, want := pending(), sorted(append([]string{forward}, oldestFirst[:3]...)); !slices.Equal(got, want) {
			t.Errorf("pending after the first batch: %v, want %v", got, want)
		}
		resend(`{"limit":3}`, 3, true)
		resend(`{"limit":3,"connection_id":null}`, 1, false)
		resend(``, 0, false)
		if got := pending(); !slices.Equal(got, sorted(oldestFirst)) {
			t.Errorf("pending after every batch: %v, want %v", got, sorted(oldestFirst))
		}
		if received.Load() != 0 {
			t.Fatalf("%d webhooks sent before the start", received.Load())
		}
		// Started, the service delivers them all.
		if err := bu.svc.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			bu.svc.Stop(ctx)
		})
		for _, d := range bu.settle(t, len(all)) {
			if d.Status != webhooks.StatusDelivered || d.Attempts != 1 {
				t.Errorf("delivery %s: %s after %d attempts", d.ID, d.Status, d.Attempts)
			}
		}
		if n := received.Load(); n != int64(len(all)) {
			t.Errorf("the receiver got %d webhooks, want %d", n, len(all))
		}
	})
}

// TestWebhookDeliveriesAPIScopesAndBadInput: the routes need their scopes
// (environment:* grants them), and bad input is a 400 with the standard
// error body that changes nothing.
func TestWebhookDeliveriesAPIScopesAndBadInput(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		bu := setup(t, b) // not started
		ctx := t.Context()
		urls := []string{"https://hooks.example.com/a"}
		if _, err := bu.svc.Environments().Update(ctx, bu.env.ID, environments.UpdateInput{WebhookURLs: &urls}); err != nil {
			t.Fatal(err)
		}
		if err := bu.svc.Notify(ctx, forwardEvent(bu)); err != nil {
			t.Fatal(err)
		}
		d := bu.deliveries(t, webhooks.DeliveryFilter{})[0]
		d.Status, d.Attempts = webhooks.StatusFailed, 14
		if err := bu.b.store.UpdateDelivery(ctx, d); err != nil {
			t.Fatal(err)
		}
		key := func(scopes ...string) string {
			k, _, err := bu.svc.Environments().CreateAPIKey(ctx, bu.env.ID, environments.NewAPIKey{Name: strings.Join(scopes, ","), Scopes: scopes})
			if err != nil {
				t.Fatal(err)
			}
			return k
		}
		read, write, conns := key(environments.ScopeWebhooksRead), key(environments.ScopeWebhooksWrite), key(environments.ScopeConnectionsRead)
		all := key(environments.ScopeAll)
		for _, c := range []struct {
			rq   req
			want int
		}{
			{req{method: "GET", path: "/webhooks/deliveries", key: read}, 200},
			{req{method: "GET", path: "/webhooks/deliveries/" + d.ID, key: read}, 200},
			{req{method: "GET", path: "/webhooks/deliveries", key: write}, 403},
			{req{method: "GET", path: "/webhooks/deliveries/" + d.ID, key: conns}, 403},
			{req{method: "POST", path: "/webhooks/deliveries/" + d.ID + "/resend", key: read}, 403},
			{req{method: "POST", path: "/webhooks/deliveries/resend", key: read}, 403},
			{req{method: "POST", path: "/webhooks/deliveries/resend", key: conns}, 403},
			{req{method: "GET", path: "/webhooks/deliveries", key: "-"}, 401},
			{req{method: "GET", path: "/webhooks/deliveries", key: all}, 200},
		} {
			r := bu.do(t, c.rq)
			if r.status != c.want {
				t.Errorf("%s %s with %s: %d %s, want %d", c.rq.method, c.rq.path, c.rq.key, r.status, r.raw, c.want)
			}
			if c.want == 403 && r.obj()["error"].(map[string]any)["code"] != "forbidden" {
				t.Errorf("%s %s: %s", c.rq.method, c.rq.path, r.raw)
			}
		}
		before := bu.deliveries(t, webhooks.DeliveryFilter{})

		valid := webhooks.DeliveryCursor{CreatedAt: d.CreatedAt, ID: d.ID}.String()
		for _, c := range []struct {
			rq   req
			path string // the error's path
		}{
			{req{method: "GET", path: "/webhooks/deliveries?status=lost"}, "status"},
			{req{method: "GET", path: "/webhooks/deliveries?status=failed&status=pending"}, "status"},
			{req{method: "GET", path: "/webhooks/deliveries?state=failed"}, "state"},
			{req{method: "GET", path: "/webhooks/deliveries?limit=0"}, "limit"},
			{req{method: "GET", path: "/webhooks/deliveries?limit=1001"}, "limit"},
			{req{method: "GET", path: "/webhooks/deliveries?limit=ten"}, "limit"},
			{req{method: "GET", path: "/webhooks/deliveries?limit=-1"}, "limit"},
			{req{method: "GET", path: "/webhooks/deliveries?cursor=not-a-cursor"}, "cursor"},
			{req{method: "GET", path: "/webhooks/deliveries?cursor=" + valid + "A"}, "cursor"},
			{req{method: "GET", path: "/webhooks/deliveries?cursor=" + valid[:len(valid)-2]}, "cursor"},
			{req{method: "GET", path: "/webhooks/deliveries?cursor=" + url.QueryEscape(valid+"==")}, "cursor"},
			{req{method: "GET", path: "/webhooks/deliveries?connection_id=%00"}, "connection_id"},
			{req{method: "GET", path: "/webhooks/deliveries?connection_id=%ff%fe"}, "connection_id"},
			{req{method: "GET", path: "/webhooks/deliveries?type=" + strings.Repeat("t", 256)}, "type"},
			{req{method: "GET", path: "/webhooks/deliveries?integration_id=a%0Ab"}, "integration_id"},
			{req{method: "POST", path: "/webhooks/deliveries/resend", body: `{"status":"delivered"}`}, "status"},
			{req{method: "POST", path: "/webhooks/deliveries/resend", body: `{"status":"lost"}`}, "status"},
			{req{method: "POST", path: "/webhooks/deliveries/resend", body: `{"limit":0}`}, "limit"},
			{req{method: "POST", path: "/webhooks/deliveries/resend", body: `{"limit":1001}`}, "limit"},
			{req{method: "POST", path: "/webhooks/deliveries/resend", body: `{"limit":"all"}`}, "limit"},
			{req{method: "POST", path: "/webhooks/deliveries/resend", body: `{"limit":2.5}`}, "limit"},
			{req{method: "POST", path: "/webhooks/deliveries/resend", body: `{"type":""}`}, "type"},
			{req{method: "POST", path: "/webhooks/deliveries/resend", body: `{"connection_id":5}`}, "connection_id"},
			{req{method: "POST", path: "/webhooks/deliveries/resend", body: `{"connection":"c1"}`}, "connection"},
			{req{method: "POST", path: "/webhooks/deliveries/resend", body: `{"connection_id":"a\u0000b"}`}, "connection_id"},
			{req{method: "POST", path: "/webhooks/deliveries/resend", body: `[]`}, ""},
			{req{method: "POST", path: "/webhooks/deliveries/resend", body: `{"type":`}, ""},
			// Refused at the edge, before routing: the error names the path.
			{req{method: "GET", path: "/webhooks/deliveries/%00"}, "path"},
			{req{method: "POST", path: "/webhooks/deliveries/%ff/resend"}, "path"},
		} {
			r := bu.do(t, c.rq)
			e, _ := r.obj()["error"].(map[string]any)
			if r.status != 400 || e == nil || e["code"] == "" || e["message"] == "" {
				t.Errorf("%s %s %s: %d %s, want 400 with an error body", c.rq.method, c.rq.path, c.rq.body, r.status, r.raw)
				continue
			}
			if c.path != "" {
				errs, _ := e["errors"].([]any)
				if len(errs) != 1 || fmt.Sprint(errs[0].(map[string]any)["path"]) != "["+c.path+"]" {
					t.Errorf("%s %s %s: error %s, want one about %s", c.rq.method, c.rq.path, c.rq.body, r.raw, c.path)
				}
			}
		}
		// Nothing changed.
		after := bu.deliveries(t, webhooks.DeliveryFilter{})
		if len(after) != len(before) || after[0].Status != webhooks.StatusFailed || after[0].Attempts != 14 || !after[0].UpdatedAt.Equal(before[0].UpdatedAt) {
			t.Errorf("bad input changed the deliveries: %+v", after[0])
		}

		// A pending delivery cannot be resent: 409.
		if r := bu.mustDo(t, 200, req{method: "POST", path: "/webhooks/deliveries/" + d.ID + "/resend", key: write}); r.obj()["data"].(map[string]any)["status"] != "pending" {
			t.Errorf("resend: %s", r.raw)
		}
		r := bu.mustDo(t, 409, req{method: "POST", path: "/webhooks/deliveries/" + d.ID + "/resend"})
		if r.obj()["error"].(map[string]any)["code"] != "webhook_delivery_pending" {
			t.Errorf("resend of a pending delivery: %s", r.raw)
		}
	})
}
