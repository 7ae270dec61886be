package webhooks_test

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/oplog"
	"github.com/embedauth/connect/webhooks"
)

// fakeSyncs is a SyncRunner that keeps what it is given.
type fakeSyncs struct {
	mu    sync.Mutex
	calls [][]webhooks.RoutedWebhook
	keys  []string
	err   error
}

func (f *fakeSyncs) RunWebhookSyncs(_ context.Context, env int64, key string, ws []webhooks.RoutedWebhook) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return 0, f.err
	}
	f.calls = append(f.calls, ws)
	f.keys = append(f.keys, strconv.FormatInt(env, 10)+"/"+key)
	return 3 * len(ws), nil
}

func (f *fakeSyncs) take() ([][]webhooks.RoutedWebhook, []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, k := f.calls, f.keys
	f.calls, f.keys = nil, nil
	return c, k
}

// routedString renders routed webhooks as "connection type payload;...",
// payloads compacted.
func routedString(t *testing.T, ws []webhooks.RoutedWebhook) string {
	t.Helper()
	var parts []string
	for _, w := range ws {
		var v any
		if err := json.Unmarshal(w.Payload, &v); err != nil {
			t.Fatalf("payload %q is not JSON: %v", w.Payload, err)
		}
		b, _ := json.Marshal(v)
		parts = append(parts, w.ConnectionID+" "+w.Type+" "+string(b))
	}
	return strings.Join(parts, ";")
}

// TestIncomingSyncRuns: a verified delivery routed to connections gives
// the SyncRunner one routed webhook per connection (per element routed to
// it, for an array body) with the type webhook_routing.type locates, in
// the transaction of its forwards, forwarded or not; unrouted and
// unverified deliveries give it nothing.
func TestIncomingSyncRuns(t *testing.T) {
	t.Parallel()
	syncs := &fakeSyncs{}
	f := newFixture(t, func(c *webhooks.IncomingConfig) {
		c.Syncs = syncs
		c.Providers = extraCatalog{c.Providers, map[string]*integrations.Provider{"anon": {Name: "anon",
			WebhookRouting: &integrations.WebhookRouting{
				Connection: &integrations.WebhookConnection{Path: "account", ConnectionConfigKey: "account"},
				Type:       &integrations.WebhookType{Path: "type"},
			}}}}
		c.Integrations.(fakeIntegrations)["anon"] = &integrations.Integration{ID: 100, EnvironmentID: 7, UniqueKey: "anon",
			Provider: "anon", ForwardWebhooks: true}
		c.Connections.(*fakeConns).by["anon"] = []webhooks.RoutableConnection{{ConnectionID: "a1", ConnectionConfig: map[string]any{"account": "x"}}}
	})
	expect := func(what, key, want string) {
		t.Helper()
		calls, keys := syncs.take()
		if want == "" {
			if len(calls) != 0 {
				t.Fatalf("%s: the SyncRunner got %v", what, calls)
			}
			return
		}
		if len(calls) != 1 || keys[0] != "7/"+key {
			t.Fatalf("%s: %d calls %v", what, len(calls), keys)
		}
		if got := routedString(t, calls[0]); got != want {
			t.Fatalf("%s: routed %s, want %s", what, got, want)
		}
	}

	// GitHub: the type is the X-GitHub-Event header (githubHeader sends
	// "push"); both connections of installation 123.
	body := `{"installation":{"id":123},"ref":"main"}`
	if r := f.post(t, "/webhook/dev/gh", githubHeader(ghSecret, body), body); r.status != 200 {
		t.Fatal(r.status, r.body)
	}
	expect("github", "gh", `c1 push {"installation":{"id":123},"ref":"main"};c3 push {"installation":{"id":123},"ref":"main"}`)
	if e := f.log.last(t); e.Meta["sync_runs"] != 6 || !strings.Contains(e.Message, "6 sync run(s) queued") {
		t.Errorf("log entry %+v", e)
	}
	if got := len(f.cap.all()); got != 2 {
		t.Fatalf("%d forwards", got)
	}
	txs := f.tx.calls

	// Not forwarded: the runs are queued all the same, in a transaction.
	if r := f.post(t, "/webhook/dev/quiet", githubHeader(ghSecret, body), body); r.status != 200 {
		t.Fatal(r.status, r.body)
	}
	expect("forward off", "quiet", `q1 push {"installation":{"id":123},"ref":"main"}`)
	if f.tx.calls != txs+1 || len(f.cap.all()) != 2 {
		t.Errorf("forward off: %d transactions (before %d), %d forwards", f.tx.calls, txs, len(f.cap.all()))
	}

	// No connection matches: no run.
	body = `{"installation":{"id":999}}`
	f.post(t, "/webhook/dev/gh", githubHeader(ghSecret, body), body)
	expect("unmatched", "gh", "")

	// HubSpot: each element routed to a connection is a webhook of its
	// own, with its own type (subscriptionType); unmatched ones run
	// nothing.
	body = `[{"eventId":1,"portalId":62515,"subscriptionType":"contact.creation"},` +
		`{"eventId":2,"portalId":777,"subscriptionType":"deal.deletion"},{"eventId":3,"portalId":1},{"eventId":4,"portalId":62515}]`
	ts := strconv.FormatInt(fixedNow.Add(-time.Minute).UnixMilli(), 10)
	host := strings.TrimPrefix(f.srv.URL, "http://")
	u := "http://" + host + "/webhook/dev/hs"
	if r := f.post(t, "/webhook/dev/hs", hdr("X-HubSpot-Signature-v3", macB64(hsSecret, "POST"+u+body+ts), "X-HubSpot-Request-Timestamp", ts), body); r.status != 200 {
		t.Fatal(r.status, r.body)
	}
	expect("hubspot", "hs", `p1 contact.creation {"eventId":1,"portalId":62515,"subscriptionType":"contact.creation"};`+
		`p1  {"eventId":4,"portalId":62515};p2 deal.deletion {"eventId":2,"portalId":777,"subscriptionType":"deal.deletion"}`)

	// Shopify: the type is the X-Shopify-Topic header; a body that is not
	// JSON is given as a JSON string.
	h := hdr("X-Shopify-Hmac-Sha256", macB64(shopSecret, "plain text"), "X-Shopify-Shop-Domain", "my-store.myshopify.com",
		"X-Shopify-Topic", "orders/create")
	if r := f.post(t, "/webhook/dev/shop", h, "plain text"); r.status != 200 {
		t.Fatal(r.status, r.body)
	}
	expect("shopify", "shop", `s1 orders/create "plain text"`)

	// A delivery no signature verified (its provider does not sign) runs
	// nothing, routed or not.
	if r := f.post(t, "/webhook/dev/anon", hdr("Content-Type", "application/json"), `{"account":"x","type":"t"}`); r.status != 200 {
		t.Fatal(r.status, r.body)
	}
	expect("unverified", "anon", "")
	if len(f.cap.all()) != 8 { // gh 2, unmatched 1, hs 3, shop 1, anon 1
		t.Errorf("%d forwards", len(f.cap.all()))
	}

	// A SyncRunner that fails fails the delivery (500, for the provider
	// to send it again), with its forwards rolled back by the Store.
	syncs.err = errors.New("queue down")
	body = `{"installation":{"id":456}}`
	r := f.post(t, "/webhook/dev/gh", githubHeader(ghSecret, body), body)
	if r.status != 500 || strings.Contains(r.body, "queue down") {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if e := f.log.last(t); e.Status != oplog.StatusFailure || e.Meta["reason"] != "enqueue_failed" {
		t.Errorf("log %+v", e)
	}
}
