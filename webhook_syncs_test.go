package connect_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/egress"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/functions"
	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/oplog"
	"github.com/embedauth/connect/webhooks"
)

// The tests of webhook-triggered sync runs use the provider fxhook: its
// webhooks are signed (HMAC-SHA256 of the body in X-Fx-Signature, with the
// integration's webhook secret), name their connection in "account"
// (connection_config account_id) and their type in "event".

const whsSecret = "fxhook-webhook-secret"

// whsEventTimeout bounds each wait for an event of these tests: it is a
// guard against a hang, not a pace (every wait ends on the event itself).
const whsEventTimeout = 2 * time.Minute

func whsCatalog(t *testing.T) *integrations.Catalog {
	t.Helper()
	cat, err := integrations.DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	cat, err = cat.With(&integrations.Provider{Name: "fxhook", DisplayName: "FX Hook", AuthMode: integrations.AuthModeOAuth2,
		AuthorizationURL: "https://fxhook.example/authorize", TokenURL: "https://fxhook.example/token",
		Proxy:            &integrations.Proxy{BaseURL: "https://api.fxhook.example"},
		ConnectionConfig: map[string]integrations.FieldSpec{"account_id": {Type: "string", Title: "Account"}},
		WebhookRouting: &integrations.WebhookRouting{
			Signature:  &integrations.WebhookSignature{Header: "X-Fx-Signature", Algorithm: "HMAC-SHA256", Encoding: "hex", Secret: "webhook_secret"},
			Connection: &integrations.WebhookConnection{Path: "account", ConnectionConfigKey: "account_id"},
			Type:       &integrations.WebhookType{Path: "event"},
		}})
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

// whsSink receives the environment's webhooks on a channel.
type whsSink struct {
	srv    *httptest.Server
	bodies chan map[string]any
	// held are the sync webhooks received while waiting for another
	// sync's, in their order.
	held []map[string]any
}

func newWhsSink(t *testing.T) *whsSink {
	s := &whsSink{bodies: make(chan map[string]any, 1000)}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m map[string]any
		if err := json.NewDecoder(r.Body).Decode(&m); err == nil {
			s.bodies <- m
		}
		w.WriteHeader(200)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

// syncHook returns the next sync webhook received for the sync name,
// skipping the webhooks of other types and holding those of other syncs
// for their turn.
func (s *whsSink) syncHook(t *testing.T, name string) map[string]any {
	t.Helper()
	for i, b := range s.held {
		if b["syncName"] == name {
			s.held = append(s.held[:i:i], s.held[i+1:]...)
			return b
		}
	}
	deadline := time.NewTimer(whsEventTimeout)
	defer deadline.Stop()
	for {
		select {
		case b := <-s.bodies:
			if b["type"] != webhooks.TypeSync {
				continue
			}
			if b["syncName"] == name {
				return b
			}
			s.held = append(s.held, b)
		case <-deadline.C:
			t.Fatalf("no sync webhook of %s arrived", name)
		}
	}
}

// whsCall is one call of a webhook handler.
type whsCall struct {
	sync, connection, variant string
	webhook                   bool
	payload                   json.RawMessage
	trackErr                  error
}

// whsSyncs returns the syncs of the tests, which report each call of
// their webhook handlers on calls: contacts (types contact.created, which
// saves the payload's contact, and contact.updated, which merges it into
// the stored one), everything ("*": saves an Event of each payload's id)
// and deals (deal.created).
func whsSyncs(calls chan<- whsCall) []any {
	type contact struct {
		ID    string `json:"id"`
		Name  string `json:"name,omitempty"`
		Email string `json:"email,omitempty"`
	}
	type event struct {
		ID   string `json:"id"`
		Type string `json:"type"`
	}
	report := func(name string, s *functions.SyncContext, payload json.RawMessage, trackErr error) {
		calls <- whsCall{sync: name, connection: s.ConnectionID, variant: s.Variant, webhook: s.Webhook(),
			payload: append(json.RawMessage(nil), payload...), trackErr: trackErr}
	}
	noRun := func(ctx context.Context, s *functions.SyncContext) error { return nil }
	return []any{
		functions.Sync{Integration: "hk", Name: "contacts", Frequency: "every day",
			Models:               []functions.Model{functions.ModelOf[contact]("Contact")},
			WebhookSubscriptions: []string{"contact.created", "contact.updated"},
			Run:                  noRun,
			OnWebhook: func(ctx context.Context, s *functions.SyncContext, payload json.RawMessage) error {
				var in struct {
					Event   string  `json:"event"`
					Contact contact `json:"contact"`
				}
				if err := json.Unmarshal(payload, &in); err != nil {
					return err
				}
				trackErr := s.TrackDeletesStart(ctx, "Contact")
				var err error
				if in.Event == "contact.created" {
					err = s.Save(ctx, "Contact", []contact{in.Contact})
				} else {
					err = s.Update(ctx, "Contact", []contact{in.Contact})
				}
				report("contacts", s, payload, trackErr)
				return err
			}},
		functions.Sync{Integration: "hk", Name: "everything", Frequency: "every day",
			Models:               []functions.Model{functions.ModelOf[event]("Event")},
			WebhookSubscriptions: []string{"*"},
			Run:                  noRun,
			OnWebhook: func(ctx context.Context, s *functions.SyncContext, payload json.RawMessage) error {
				var in struct {
					ID    string `json:"id"`
					Event string `json:"event"`
				}
				if err := json.Unmarshal(payload, &in); err != nil {
					return err
				}
				err := s.Save(ctx, "Event", []event{{ID: in.ID, Type: in.Event}})
				report("everything", s, payload, nil)
				return err
			}},
		functions.Sync{Integration: "hk", Name: "deals", Frequency: "every day",
			Models:               []functions.Model{functions.ModelOf[event]("Deal")},
			WebhookSubscriptions: []string{"deal.created"},
			Run:                  noRun,
			OnWebhook: func(ctx context.Context, s *functions.SyncContext, payload json.RawMessage) error {
				report("deals", s, payload, nil)
				return nil
			}},
	}
}

// whsConfig configures a Service of these tests: the fxhook catalogue,
// the real clock, fast ticks.
func whsConfig(cat *integrations.Catalog) func(*connect.Config) {
	return func(c *connect.Config) {
		c.Providers = cat
		c.Now = time.Now
		c.Functions.TickInterval = 20 * time.Millisecond
		c.Functions.Heartbeat = 50 * time.Millisecond
	}
}

// whsSetup returns a bundle (not started) with the syncs registered, the
// integration hk (fxhook) with its webhook secret, the connections c1
// (account A1) and c2 (account A2), and the environment's webhooks sent
// to a sink.
func whsSetup(t *testing.T, b *backend, calls chan<- whsCall) (*bundle, *whsSink) {
	t.Helper()
	bu := setup(t, b, whsConfig(whsCatalog(t)))
	if err := bu.svc.Functions().Register(whsSyncs(calls)...); err != nil {
		t.Fatal(err)
	}
	sink := newWhsSink(t)
	urls := []string{sink.srv.URL}
	if _, err := bu.svc.Environments().Update(context.Background(), bu.env.ID, environments.UpdateInput{WebhookURLs: &urls}); err != nil {
		t.Fatal(err)
	}
	bu.mustDo(t, 200, req{method: "POST", path: "/integrations", body: `{"provider":"fxhook","unique_key":"hk",
		"credentials":{"type":"OAUTH2","client_id":"cid","client_secret":"csecret","webhook_secret":"` + whsSecret + `"}}`})
	for _, c := range []string{
		`{"provider_config_key":"hk","connection_id":"c1","access_token":"t","no_expiration":true,"connection_config":{"account_id":"A1"}}`,
		`{"provider_config_key":"hk","connection_id":"c2","access_token":"t","no_expiration":true,"connection_config":{"account_id":"A2"}}`,
	} {
		bu.mustDo(t, 201, req{method: "POST", path: "/connections", body: c})
	}
	return bu, sink
}

// whsPost sends a signed delivery to hk through the bundle's server.
func whsPost(t *testing.T, bu *bundle, body string) {
	t.Helper()
	r := incomingPost(t, bu.srv, "/webhook/dev/hk", map[string]string{"Content-Type": "application/json",
		"X-Fx-Signature": incomingHMAC(whsSecret, body)}, body)
	if r.status != 200 {
		t.Fatalf("delivery answered %d %s", r.status, r.body)
	}
}

// whsStatus returns the status entry of a sync of a connection of hk.
func whsStatus(t *testing.T, bu *bundle, conn, name string) map[string]any {
	t.Helper()
	r := bu.mustDo(t, 200, req{method: "GET", path: "/sync/status?syncs=" + name + "&provider_config_key=hk&connection_id=" + conn})
	ss, _ := r.obj()["syncs"].([]any)
	if len(ss) != 1 {
		t.Fatalf("status of %s of %s: %s", name, conn, r.raw)
	}
	return ss[0].(map[string]any)
}

// whsCalls returns the next n handler calls.
func whsCalls(t *testing.T, calls <-chan whsCall, n int) map[string]whsCall {
	t.Helper()
	out := map[string]whsCall{}
	deadline := time.NewTimer(whsEventTimeout)
	defer deadline.Stop()
	for len(out) < n {
		select {
		case c := <-calls:
			if _, dup := out[c.sync]; dup {
				t.Fatalf("the webhook handler of %s ran twice", c.sync)
			}
			out[c.sync] = c
		case <-deadline.C:
			t.Fatalf("%d of %d webhook handler calls arrived: %v", len(out), n, out)
		}
	}
	return out
}

// samePayload checks that a handler's payload is the JSON of body.
func samePayload(t *testing.T, payload json.RawMessage, body string) {
	t.Helper()
	var v any
	if err := json.Unmarshal(payload, &v); err != nil {
		t.Fatalf("payload %q: %v", payload, err)
	}
	sameJSON(t, v, body)
}

func whsRecords(t *testing.T, bu *bundle, conn, model string) map[string]map[string]any {
	t.Helper()
	r := bu.mustDo(t, 200, req{method: "GET", path: "/records?model=" + model,
		header: map[string]string{"Connection-Id": conn, "Provider-Config-Key": "hk"}})
	out := map[string]map[string]any{}
	for _, rec := range r.obj()["records"].([]any) {
		m := rec.(map[string]any)
		out[m["id"].(string)] = m
	}
	return out
}

func TestWebhookSyncRuns(t *testing.T) {
	backends(t, func(t *testing.T, b *backend) {
		calls := make(chan whsCall, 100)
		bu, sink := whsSetup(t, b, calls)
		bu.start(t)
		ctx := context.Background()

		// A verified delivery of type contact.created for account A1 runs
		// the webhook handlers of contacts and everything ("*") on c1, once
		// each, and queues nothing for deals; the schedules are paused (the
		// syncs do not auto-start), as Nango runs webhooks regardless.
		body := `{"id":"e1","event":"contact.created","account":"A1","contact":{"id":"p1","name":"Ann"}}`
		whsPost(t, bu, body)
		if st := whsStatus(t, bu, "c1", "deals"); st["jobStatus"] != nil || st["finishedAt"] != nil {
			t.Fatalf("deals got a run: %v", st)
		}
		entries, err := bu.svc.ListLogs(ctx, oplog.Filter{EnvironmentID: bu.env.ID, Type: "webhook", IntegrationKey: "hk"})
		if err != nil {
			t.Fatal(err)
		}
		var logs []*oplog.Entry
		for _, e := range entries {
			if e.Operation == "incoming" {
				logs = append(logs, e)
			}
		}
		if len(logs) != 1 || fmt.Sprint(logs[0].Meta["sync_runs"]) != "2" || fmt.Sprint(logs[0].Meta["verified"]) != "true" {
			t.Fatalf("incoming log entries %+v", logs)
		}
		got := whsCalls(t, calls, 2)
		for _, name := range []string{"contacts", "everything"} {
			c, ok := got[name]
			if !ok || c.connection != "c1" || c.variant != functions.BaseVariant || !c.webhook {
				t.Fatalf("call of %s: %+v", name, c)
			}
			samePayload(t, c.payload, body)
		}
		if got["contacts"].trackErr == nil {
			t.Error("TrackDeletesStart worked in a webhook run")
		}
		h := sink.syncHook(t, "contacts")
		if h["syncType"] != "WEBHOOK" || h["success"] != true || h["model"] != "Contact" || h["connectionId"] != "c1" ||
			h["providerConfigKey"] != "hk" || h["syncVariant"] != "base" {
			t.Fatalf("sync webhook %v", h)
		}
		if res := h["responseResults"].(map[string]any); res["added"] != float64(1) || res["updated"] != float64(0) {
			t.Fatalf("sync webhook results %v", res)
		}
		if h := sink.syncHook(t, "everything"); h["syncType"] != "WEBHOOK" || h["model"] != "Event" {
			t.Fatalf("sync webhook of everything %v", h)
		}
		recs := whsRecords(t, bu, "c1", "Contact")
		if len(recs) != 1 || recs["p1"]["name"] != "Ann" {
			t.Fatalf("records %v", recs)
		}
		st := whsStatus(t, bu, "c1", "contacts")
		if st["status"] != functions.StatusPaused || st["jobStatus"] != functions.RunSuccess || st["latestExecutionStatus"] != functions.RunSuccess ||
			st["type"] != "INCREMENTAL" || st["recordCount"].(map[string]any)["Contact"] != float64(1) {
			t.Fatalf("status after the webhook run %v", st)
		}
		if res := st["latestResult"].(map[string]any)["Contact"].(map[string]any); res["added"] != float64(1) {
			t.Fatalf("latestResult %v", st["latestResult"])
		}

		// contact.updated merges into the stored record (Update, Nango's
		// batchUpdate), counted as updated.
		body = `{"id":"e2","event":"contact.updated","account":"A1","contact":{"id":"p1","email":"ann@example.com"}}`
		whsPost(t, bu, body)
		got = whsCalls(t, calls, 2)
		if got["contacts"].connection != "c1" || got["everything"].connection != "c1" {
			t.Fatalf("calls %+v", got)
		}
		h = sink.syncHook(t, "contacts")
		if res := h["responseResults"].(map[string]any); h["syncType"] != "WEBHOOK" || res["added"] != float64(0) || res["updated"] != float64(1) {
			t.Fatalf("sync webhook of the update %v", h)
		}
		sink.syncHook(t, "everything")
		recs = whsRecords(t, bu, "c1", "Contact")
		if recs["p1"]["name"] != "Ann" || recs["p1"]["email"] != "ann@example.com" {
			t.Fatalf("record after the update %v", recs["p1"])
		}
		before := whsStatus(t, bu, "c1", "contacts")

		// A type no subscription but "*" names runs everything only:
		// contacts and deals get no run (runs are queued with the answer).
		whsPost(t, bu, `{"id":"e3","event":"deal.updated","account":"A1"}`)
		if st := whsStatus(t, bu, "c1", "contacts"); st["jobStatus"] != functions.RunSuccess || st["finishedAt"] != before["finishedAt"] {
			t.Fatalf("contacts after deal.updated: %v, before %v", st, before)
		}
		if st := whsStatus(t, bu, "c1", "deals"); st["jobStatus"] != nil {
			t.Fatalf("deals after deal.updated: %v", st)
		}
		if got := whsCalls(t, calls, 1); got["everything"].connection != "c1" {
			t.Fatalf("calls %+v", got)
		}
		sink.syncHook(t, "everything")
		everything := whsStatus(t, bu, "c1", "everything")

		// A delivery for an account no connection has runs nothing; nor
		// does one whose signature is wrong (refused).
		whsPost(t, bu, `{"id":"e4","event":"contact.created","account":"nobody","contact":{"id":"p9"}}`)
		r := incomingPost(t, bu.srv, "/webhook/dev/hk", map[string]string{"Content-Type": "application/json",
			"X-Fx-Signature": incomingHMAC("wrong", "x")}, `{"id":"e5","event":"contact.created","account":"A1","contact":{"id":"p8"}}`)
		if r.status != 401 {
			t.Fatalf("a bad signature answered %d", r.status)
		}
		for _, conn := range []string{"c1", "c2"} {
			for _, name := range []string{"contacts", "everything", "deals"} {
				st := whsStatus(t, bu, conn, name)
				var want map[string]any
				switch {
				case conn == "c2":
					want = map[string]any{}
				case name == "contacts":
					want = before
				case name == "everything":
					want = everything
				default:
					want = map[string]any{}
				}
				if st["jobStatus"] != want["jobStatus"] || st["finishedAt"] != want["finishedAt"] {
					t.Fatalf("%s of %s after unrouted deliveries: %v, want the run of %v", name, conn, st, want)
				}
			}
		}

		// A disabled sync gets no run: only contacts runs on c2.
		if err := b.store.SetFunctionEnabled(ctx, bu.env.ID, "hk", functions.KindSync, "everything", false); err != nil {
			t.Fatal(err)
		}
		whsPost(t, bu, `{"id":"e6","event":"contact.created","account":"A2","contact":{"id":"q1","name":"Bob"}}`)
		if got := whsCalls(t, calls, 1); got["contacts"].connection != "c2" {
			t.Fatalf("calls %+v", got)
		}
		if h := sink.syncHook(t, "contacts"); h["connectionId"] != "c2" {
			t.Fatalf("sync webhook %v", h)
		}
		if recs := whsRecords(t, bu, "c2", "Contact"); len(recs) != 1 || recs["q1"]["name"] != "Bob" {
			t.Fatalf("records of c2 %v", recs)
		}
		if st := whsStatus(t, bu, "c2", "everything"); st["jobStatus"] != nil {
			t.Fatalf("the disabled sync ran: %v", st)
		}
		select {
		case c := <-calls:
			t.Fatalf("an unexpected webhook handler call: %+v", c)
		default:
		}

		// Each run has its operations log entry (written in the
		// background; Stop waits for them).
		stopCtx, cancel := context.WithTimeout(ctx, whsEventTimeout)
		defer cancel()
		if err := bu.svc.Stop(stopCtx); err != nil {
			t.Fatal(err)
		}
		entries, err = bu.svc.ListLogs(ctx, oplog.Filter{EnvironmentID: bu.env.ID, Type: "sync", Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		types := map[string]int{}
		for _, e := range entries {
			if e.Operation == "webhook" && e.Status == oplog.StatusSuccess && e.Meta["trigger"] == functions.TriggerWebhook {
				types[fmt.Sprintf("%s %v", e.Meta["function"], e.Meta["webhook_type"])]++
			}
		}
		want := map[string]int{"contacts contact.created": 2, "contacts contact.updated": 1,
			"everything contact.created": 1, "everything contact.updated": 1, "everything deal.updated": 1}
		if fmt.Sprint(types) != fmt.Sprint(want) {
			t.Errorf("webhook run log entries %v, want %v", types, want)
		}
	})
}

// TestWebhookSyncRunSurvivesRestart: a webhook run is queued with the
// answer to the provider and runs from the Store, by a Service that
// starts after the one that accepted the delivery is gone.
func TestWebhookSyncRunSurvivesRestart(t *testing.T) {
	backends(t, func(t *testing.T, b *backend) {
		var early atomic.Int32
		first := make(chan whsCall, 100)
		go func() {
			for range first {
				early.Add(1)
			}
		}()
		t.Cleanup(func() { close(first) })
		bu, sink := whsSetup(t, b, first) // never started: it runs nothing
		body := `{"id":"e1","event":"contact.created","account":"A1","contact":{"id":"p1","name":"Ann"}}`
		whsPost(t, bu, body)
		if st := whsStatus(t, bu, "c1", "contacts"); st["jobStatus"] != functions.RunQueued || st["status"] != functions.StatusRunning {
			t.Fatalf("status of the queued run %v", st)
		}

		// Another Service on the same Store, with a Scheduler of its own.
		cat := whsCatalog(t)
		loose := egress.Policy{AllowLoopback: true}
		cfg := connect.Config{Store: b.store, EncryptionKeys: []connect.EncryptionKey{testKey}, Scheduler: schedulerFor(t, b),
			PublicURL: "https://connect.example.com", Egress: loose}
		cfg.Webhooks.Policy = loose
		whsConfig(cat)(&cfg)
		svc, err := connect.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		calls := make(chan whsCall, 100)
		if err := svc.Functions().Register(whsSyncs(calls)...); err != nil {
			t.Fatal(err)
		}
		startInstance(t, svc)
		got := whsCalls(t, calls, 2)
		samePayload(t, got["contacts"].payload, body)
		if h := sink.syncHook(t, "contacts"); h["syncType"] != "WEBHOOK" || h["responseResults"].(map[string]any)["added"] != float64(1) {
			t.Fatalf("sync webhook %v", h)
		}
		if recs := whsRecords(t, bu, "c1", "Contact"); recs["p1"]["name"] != "Ann" {
			t.Fatalf("records %v", recs)
		}
		if n := early.Load(); n != 0 {
			t.Fatalf("the Service that accepted the delivery ran %d handlers", n)
		}
	})
}
