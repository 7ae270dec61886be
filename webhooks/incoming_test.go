package webhooks_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/oplog"
	"github.com/embedauth/connect/ratelimit"
	"github.com/embedauth/connect/store"
	"github.com/embedauth/connect/webhooks"
)

// Fakes of the handler's parts.

type fakeEnvs map[string]*environments.Environment

func (f fakeEnvs) GetByName(_ context.Context, name string) (*environments.Environment, error) {
	if e, ok := f[name]; ok {
		return e, nil
	}
	return nil, store.NotFound("not_found", "no environment")
}

type fakeIntegrations map[string]*integrations.Integration

func (f fakeIntegrations) Get(_ context.Context, envID int64, key string) (*integrations.Integration, error) {
	if it, ok := f[key]; ok && it.EnvironmentID == envID {
		c := *it
		return &c, nil
	}
	return nil, store.NotFound("unknown_provider_config", "no integration")
}

type fakeConns struct {
	mu    sync.Mutex
	by    map[string][]webhooks.RoutableConnection
	calls int
}

func (f *fakeConns) ListRoutableConnections(_ context.Context, _ int64, key string, limit, offset int) ([]webhooks.RoutableConnection, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	all := f.by[key]
	if offset >= len(all) {
		return nil, nil
	}
	return all[offset:min(offset+limit, len(all))], nil
}

// finderConns is a fakeConns that can also look up by config value.
type finderConns struct {
	*fakeConns
	finds int
}

func (f *finderConns) FindConnectionsByConfig(_ context.Context, _ int64, key, cfgKey string, values []string) ([]webhooks.RoutableConnection, error) {
	f.finds++
	var out []webhooks.RoutableConnection
	for _, c := range f.by[key] {
		for _, v := range values {
			if fmt.Sprint(c.ConnectionConfig[cfgKey]) == v {
				out = append(out, c)
			}
		}
	}
	return out, nil
}

type capture struct {
	mu     sync.Mutex
	events []webhooks.Event
	err    error
}

func (c *capture) Notify(_ context.Context, e webhooks.Event) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return c.err
	}
	c.events = append(c.events, e)
	return nil
}

func (c *capture) all() []webhooks.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]webhooks.Event(nil), c.events...)
}

type fakeLog struct {
	mu      sync.Mutex
	entries []*oplog.Entry
}

func (l *fakeLog) Record(_ context.Context, e *oplog.Entry) (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries = append(l.entries, e)
	return strconv.Itoa(len(l.entries)), nil
}

func (l *fakeLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.entries)
}

func (l *fakeLog) last(t *testing.T) *oplog.Entry {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.entries) == 0 {
		t.Fatal("no log entry")
	}
	return l.entries[len(l.entries)-1]
}

type fakeTx struct{ calls int }

func (f *fakeTx) WithTx(ctx context.Context, fn func(context.Context) error) error {
	f.calls++
	return fn(ctx)
}

type denyAll struct{}

func (denyAll) Allow(context.Context, string) (ratelimit.Decision, error) {
	return ratelimit.Decision{RetryAfter: 1500 * time.Millisecond}, nil
}

const (
	ghSecret    = "gh-webhook-secret"
	hsSecret    = "hs-client-secret"
	shopSecret  = "shop-client-secret"
	slackSecret = "slack-signing-secret"
	linSecret   = "linear-secret"
)

var fixedNow = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

type fixture struct {
	h     http.Handler
	srv   *httptest.Server
	conns *fakeConns
	cap   *capture
	log   *fakeLog
	tx    *fakeTx
}

func newFixture(t testing.TB, mods ...func(*webhooks.IncomingConfig)) *fixture {
	t.Helper()
	cat, err := integrations.DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	env := &environments.Environment{ID: 7, Name: "dev", Account: "acme"}
	its := fakeIntegrations{}
	add := func(key, provider string, forward bool, c *integrations.Credentials) {
		its[key] = &integrations.Integration{ID: int64(len(its) + 1), EnvironmentID: 7, UniqueKey: key, Provider: provider, ForwardWebhooks: forward, Credentials: c}
	}
	add("gh", "github", true, &integrations.Credentials{Type: "OAUTH2", ClientID: "id", ClientSecret: "cs", WebhookSecret: ghSecret})
	add("quiet", "github", false, &integrations.Credentials{Type: "OAUTH2", ClientID: "id", ClientSecret: "cs", WebhookSecret: ghSecret})
	add("nosecret", "github", true, &integrations.Credentials{Type: "OAUTH2", ClientID: "id", ClientSecret: "cs"})
	add("nocreds", "github-app", true, nil)
	add("hs", "hubspot", true, &integrations.Credentials{Type: "OAUTH2", ClientID: "id", ClientSecret: hsSecret, WebhookSecret: "not-this-one"})
	add("shop", "shopify", true, &integrations.Credentials{Type: "OAUTH2", ClientID: "id", ClientSecret: shopSecret})
	add("slack", "slack", true, &integrations.Credentials{Type: "OAUTH2", ClientID: "id", ClientSecret: "cs", WebhookSecret: slackSecret})
	add("lin", "linear", true, &integrations.Credentials{Type: "OAUTH2", ClientID: "id", ClientSecret: "cs", WebhookSecret: linSecret})
	add("plain", "openai", true, nil)
	add("unknown-provider", "no-such-provider", true, nil)
	rc := func(id string, cfg map[string]any) webhooks.RoutableConnection {
		return webhooks.RoutableConnection{ConnectionID: id, ConnectionConfig: cfg}
	}
	conns := &fakeConns{by: map[string][]webhooks.RoutableConnection{
		"gh": {
			rc("c1", map[string]any{"installation_id": "123"}),
			rc("c2", map[string]any{"installation_id": float64(456)}),
			rc("c3", map[string]any{"installation_id": "123"}),
			rc("c4", nil),
			rc("c5", map[string]any{"installation_id": map[string]any{"id": "123"}}),
		},
		"quiet": {rc("q1", map[string]any{"installation_id": "123"})},
		"hs": {
			rc("p1", map[string]any{"portalId": "62515"}),
			rc("p2", map[string]any{"portalId": json.Number("777")}),
		},
		"shop":  {rc("s1", map[string]any{"subdomain": "my-store"}), rc("s2", map[string]any{"subdomain": "other"})},
		"slack": {rc("sl1", map[string]any{"team.id": "T1"}), rc("sl2", map[string]any{"team": map[string]any{"id": "T2"}})},
	}}
	f := &fixture{conns: conns, cap: &capture{}, log: &fakeLog{}, tx: &fakeTx{}}
	cfg := webhooks.IncomingConfig{
		Environments: fakeEnvs{"dev": env},
		Integrations: its,
		Connections:  conns,
		Providers:    cat,
		Notifier:     f.cap,
		Transactor:   f.tx,
		Log:          f.log,
		Now:          func() time.Time { return fixedNow },
	}
	for _, m := range mods {
		m(&cfg)
	}
	f.h = webhooks.IncomingHandler(cfg)
	f.srv = httptest.NewServer(f.h)
	t.Cleanup(f.srv.Close)
	return f
}

type hookResp struct {
	status int
	header http.Header
	body   string
}

func (r hookResp) code() string {
	var b struct {
		Error struct{ Code string } `json:"error"`
	}
	json.Unmarshal([]byte(r.body), &b)
	return b.Error.Code
}

func (f *fixture) post(t *testing.T, path string, h http.Header, body string) hookResp {
	t.Helper()
	return f.send(t, "POST", path, h, body)
}

func (f *fixture) send(t *testing.T, method, path string, h http.Header, body string) hookResp {
	t.Helper()
	req, err := http.NewRequest(method, f.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range h {
		req.Header[k] = vs
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return hookResp{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

func githubHeader(secret, body string) http.Header {
	return hdr("X-Hub-Signature-256", "sha256="+macHex(secret, body), "Content-Type", "application/json", "X-GitHub-Event", "push")
}

// forwardOf returns the forward payload of an event, as JSON.
func forwardOf(t *testing.T, e webhooks.Event) map[string]any {
	t.Helper()
	if e.Type != webhooks.TypeForward {
		t.Fatalf("event type %q", e.Type)
	}
	fp, ok := e.Payload.(*webhooks.ForwardPayload)
	if !ok {
		t.Fatalf("payload %T", e.Payload)
	}
	if fp.ConnectionID != e.ConnectionID || fp.ProviderConfigKey != e.IntegrationKey || fp.Type != webhooks.TypeForward {
		t.Errorf("payload %+v disagrees with event %+v", fp, e)
	}
	b, err := json.Marshal(fp)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func jsonEqual(t *testing.T, got any, want string) {
	t.Helper()
	var w any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	gb, _ := json.Marshal(got)
	wb, _ := json.Marshal(w)
	if string(gb) != string(wb) {
		t.Errorf("payload = %s, want %s", gb, wb)
	}
}

func connIDs(es []webhooks.Event) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.ConnectionID
	}
	return out
}

func TestIncomingRoutesByConnectionConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body string
		want []string
	}{
		{"number matches strings", `{"action":"created","installation":{"id":123}}`, []string{"c1", "c3"}},
		{"number with fraction form", `{"installation":{"id":123.0}}`, []string{"c1", "c3"}},
		{"exponent form", `{"installation":{"id":1.23e2}}`, []string{"c1", "c3"}},
		{"string matches a stored number", `{"installation":{"id":"456"}}`, []string{"c2"}},
		{"number matches a stored number", `{"installation":{"id":456}}`, []string{"c2"}},
		{"no match", `{"installation":{"id":999}}`, []string{""}},
		{"no identifier", `{"zen":"Keep it logically awesome.","hook_id":1}`, []string{""}},
		{"object identifier", `{"installation":{"id":{"x":1}}}`, []string{""}},
		{"null identifier", `{"installation":{"id":null}}`, []string{""}},
		{"array body without identifiers", `[1,2]`, []string{""}},
		{"scalar body", `"hello"`, []string{""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			r := f.post(t, "/webhook/dev/gh", githubHeader(ghSecret, tt.body), tt.body)
			if r.status != 200 || strings.TrimSpace(r.body) != `{"success":true}` {
				t.Fatalf("status %d %s", r.status, r.body)
			}
			es := f.cap.all()
			if got := connIDs(es); strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Fatalf("connections %q, want %q", got, tt.want)
			}
			for _, e := range es {
				if e.EnvironmentID != 7 || e.IntegrationKey != "gh" {
					t.Errorf("event %+v", e)
				}
				m := forwardOf(t, e)
				if m["from"] != "github" || m["type"] != "forward" || m["providerConfigKey"] != "gh" {
					t.Errorf("envelope %v", m)
				}
				if _, has := m["connectionId"]; has != (e.ConnectionID != "") {
					t.Errorf("connectionId presence wrong: %v", m)
				}
				jsonEqual(t, m["payload"], tt.body)
			}
			if f.tx.calls != 1 {
				t.Errorf("transactions = %d, want 1", f.tx.calls)
			}
			e := f.log.last(t)
			matched := len(tt.want)
			if tt.want[0] == "" {
				matched = 0
			}
			if e.Type != "webhook" || e.Operation != "incoming" || e.Status != oplog.StatusSuccess || e.EnvironmentID != 7 ||
				e.IntegrationKey != "gh" || e.Meta["verified"] != true || e.Meta["matched"] != matched || e.Meta["provider"] != "github" {
				t.Errorf("log entry %+v", e)
			}
		})
	}
}

// TestIncomingPayloadIntact checks that numbers beyond float64 precision
// and unusual JSON survive forwarding.
func TestIncomingPayloadIntact(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	body := `{"installation":{"id":123},"big":12345678901234567890123,"f":1.50,"s":"<é>\u2028","n":null}`
	r := f.post(t, "/webhook/dev/gh", githubHeader(ghSecret, body), body)
	if r.status != 200 {
		t.Fatal(r.status, r.body)
	}
	es := f.cap.all()
	if len(es) != 2 {
		t.Fatalf("%d events", len(es))
	}
	fp := es[0].Payload.(*webhooks.ForwardPayload)
	raw, ok := fp.Payload.(json.RawMessage)
	if !ok || string(raw) != body {
		t.Errorf("payload %T %s, want the raw body", fp.Payload, fp.Payload)
	}
	canon, err := webhooks.Canonical(fp)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(canon), `"big":12345678901234567890123`) || !strings.Contains(string(canon), `"f":1.50`) {
		t.Errorf("canonical body %s", canon)
	}
}

func TestIncomingForwardOff(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	body := `{"installation":{"id":123}}`
	r := f.post(t, "/webhook/dev/quiet", githubHeader(ghSecret, body), body)
	if r.status != 200 {
		t.Fatal(r.status, r.body)
	}
	if es := f.cap.all(); len(es) != 0 {
		t.Errorf("forwarded %d events with forward_webhooks off", len(es))
	}
	e := f.log.last(t)
	if e.Meta["matched"] != 1 || e.Meta["forwarded"] != 0 || !strings.Contains(e.Message, "not forwarded") {
		t.Errorf("log %+v", e)
	}
}

func TestIncomingRefusals(t *testing.T) {
	t.Parallel()
	body := `{"installation":{"id":123}}`
	good := githubHeader(ghSecret, body)
	tests := []struct {
		name   string
		method string
		path   string
		header http.Header
		body   string
		status int
		code   string
		reason string
	}{
		{"wrong signature", "POST", "/webhook/dev/gh", githubHeader("wrong", body), body, 401, "invalid_signature", webhooks.ReasonMismatch},
		{"signature of another body", "POST", "/webhook/dev/gh", good, body + " ", 401, "invalid_signature", webhooks.ReasonMismatch},
		{"no signature", "POST", "/webhook/dev/gh", hdr("Content-Type", "application/json"), body, 401, "invalid_signature", webhooks.ReasonMissingHeader},
		{"malformed signature", "POST", "/webhook/dev/gh", hdr("X-Hub-Signature-256", "sha256=xyz"), body, 401, "invalid_signature", webhooks.ReasonBadEncoding},
		{"integration without webhook secret", "POST", "/webhook/dev/nosecret", githubHeader("", body), body, 401, "invalid_signature", webhooks.ReasonNoSecret},
		{"integration without credentials", "POST", "/webhook/dev/nocreds", githubHeader("x", body), body, 401, "invalid_signature", webhooks.ReasonNoSecret},
		{"hubspot keyed with the webhook secret", "POST", "/webhook/dev/hs", hdr("X-HubSpot-Signature-v3", macB64("not-this-one", "x"), "X-HubSpot-Request-Timestamp", strconv.FormatInt(fixedNow.UnixMilli(), 10)), "[]", 401, "invalid_signature", webhooks.ReasonMismatch},
		{"malformed JSON", "POST", "/webhook/dev/gh", githubHeader(ghSecret, `{"installation":`), `{"installation":`, 400, "invalid_body", ""},
		{"empty body", "POST", "/webhook/dev/gh", githubHeader(ghSecret, ""), "", 400, "invalid_body", ""},
		{"trailing data", "POST", "/webhook/dev/gh", githubHeader(ghSecret, `{} {}`), `{} {}`, 400, "invalid_body", ""},
		{"unknown environment", "POST", "/webhook/prod/gh", good, body, 404, "unknown_environment", ""},
		{"unknown integration", "POST", "/webhook/dev/nope", good, body, 404, "unknown_provider_config", ""},
		{"oversized body", "POST", "/webhook/dev/gh", good, `{"x":"` + strings.Repeat("a", 2000) + `"}`, 413, "payload_too_large", ""},
		{"GET", "GET", "/webhook/dev/gh", good, "", 405, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, func(c *webhooks.IncomingConfig) { c.MaxBody = 1024 })
			r := f.send(t, tt.method, tt.path, tt.header, tt.body)
			if r.status != tt.status || r.code() != tt.code {
				t.Fatalf("got %d %s, want %d %s", r.status, r.body, tt.status, tt.code)
			}
			if es := f.cap.all(); len(es) != 0 {
				t.Errorf("forwarded %d events", len(es))
			}
			if tt.reason != "" {
				e := f.log.last(t)
				if e.Status != oplog.StatusFailure || e.Meta["reason"] != tt.reason || e.Meta["verified"] != false {
					t.Errorf("log %+v", e)
				}
				if strings.Contains(fmt.Sprint(e), "installation") || strings.Contains(fmt.Sprint(e), ghSecret) {
					t.Errorf("log entry leaks the body or secret: %+v", e)
				}
			}
			if strings.Contains(r.body, ghSecret) {
				t.Errorf("response leaks the secret")
			}
		})
	}
}

func TestIncomingHubSpotBatch(t *testing.T) {
	t.Parallel()
	body := `[{"eventId":1,"portalId":62515,"subscriptionType":"contact.creation"},` +
		`{"eventId":2,"portalId":777},{"eventId":3,"portalId":1},{"eventId":4,"portalId":62515},{"eventId":5}]`
	ts := strconv.FormatInt(fixedNow.Add(-time.Minute).UnixMilli(), 10)
	check := func(t *testing.T, f *fixture, h http.Header) {
		t.Helper()
		r := f.post(t, "/webhook/dev/hs?x=1", h, body)
		if r.status != 200 {
			t.Fatal(r.status, r.body)
		}
		es := f.cap.all()
		if got := connIDs(es); strings.Join(got, ",") != "p1,p2," {
			t.Fatalf("connections %q", got)
		}
		jsonEqual(t, forwardOf(t, es[0])["payload"], `[{"eventId":1,"portalId":62515,"subscriptionType":"contact.creation"},{"eventId":4,"portalId":62515}]`)
		jsonEqual(t, forwardOf(t, es[1])["payload"], `[{"eventId":2,"portalId":777}]`)
		jsonEqual(t, forwardOf(t, es[2])["payload"], `[{"eventId":3,"portalId":1},{"eventId":5}]`)
		if f.log.last(t).Meta["matched"] != 2 {
			t.Errorf("log %+v", f.log.last(t))
		}
	}
	t.Run("public URL", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, func(c *webhooks.IncomingConfig) { c.PublicURL = "https://connect.example.com/api/" })
		u := "https://connect.example.com/api/webhook/dev/hs?x=1"
		check(t, f, hdr("X-HubSpot-Signature-v3", macB64(hsSecret, "POST"+u+body+ts), "X-HubSpot-Request-Timestamp", ts))
	})
	t.Run("URL from the request", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		host := strings.TrimPrefix(f.srv.URL, "http://")
		u := "https://" + host + "/webhook/dev/hs?x=1"
		check(t, f, hdr("X-HubSpot-Signature-v3", macB64(hsSecret, "POST"+u+body+ts), "X-HubSpot-Request-Timestamp", ts,
			"X-Forwarded-Proto", "https"))
	})
	t.Run("stale", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, func(c *webhooks.IncomingConfig) { c.PublicURL = "https://connect.example.com" })
		old := strconv.FormatInt(fixedNow.Add(-6*time.Minute).UnixMilli(), 10)
		u := "https://connect.example.com/webhook/dev/hs"
		r := f.post(t, "/webhook/dev/hs", hdr("X-HubSpot-Signature-v3", macB64(hsSecret, "POST"+u+body+old), "X-HubSpot-Request-Timestamp", old), body)
		if r.status != 401 || len(f.cap.all()) != 0 {
			t.Fatalf("stale delivery: %d %s", r.status, r.body)
		}
	})
	t.Run("empty batch", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, func(c *webhooks.IncomingConfig) { c.PublicURL = "https://connect.example.com" })
		u := "https://connect.example.com/webhook/dev/hs"
		r := f.post(t, "/webhook/dev/hs", hdr("X-HubSpot-Signature-v3", macB64(hsSecret, "POST"+u+"[]"+ts), "X-HubSpot-Request-Timestamp", ts), "[]")
		es := f.cap.all()
		if r.status != 200 || len(es) != 1 || es[0].ConnectionID != "" {
			t.Fatalf("%d %s %+v", r.status, r.body, es)
		}
		jsonEqual(t, forwardOf(t, es[0])["payload"], `[]`)
	})
}

func TestIncomingShopifyHeaderRouting(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	body := `{"id":1,"email":"a@example.com"}`
	h := hdr("X-Shopify-Hmac-Sha256", macB64(shopSecret, body), "X-Shopify-Shop-Domain", "my-store.myshopify.com")
	if r := f.post(t, "/webhook/dev/shop", h, body); r.status != 200 {
		t.Fatal(r.status, r.body)
	}
	// A body that is not JSON is accepted (routing uses the header) and
	// forwarded as a string.
	h2 := hdr("X-Shopify-Hmac-Sha256", macB64(shopSecret, "plain text"), "X-Shopify-Shop-Domain", "other.myshopify.com")
	if r := f.post(t, "/webhook/dev/shop", h2, "plain text"); r.status != 200 {
		t.Fatal(r.status, r.body)
	}
	// Unknown shop.
	h3 := hdr("X-Shopify-Hmac-Sha256", macB64(shopSecret, body), "X-Shopify-Shop-Domain", "nobody.myshopify.com")
	if r := f.post(t, "/webhook/dev/shop", h3, body); r.status != 200 {
		t.Fatal(r.status, r.body)
	}
	es := f.cap.all()
	if got := connIDs(es); strings.Join(got, ",") != "s1,s2," {
		t.Fatalf("connections %q", got)
	}
	if got := forwardOf(t, es[1])["payload"]; got != "plain text" {
		t.Errorf("non-JSON payload = %#v", got)
	}
}

func TestIncomingWithoutRoutingData(t *testing.T) {
	t.Parallel()
	for _, key := range []string{"plain", "unknown-provider"} {
		t.Run(key, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			for _, body := range []string{`{"a":[1,2]}`, "not json \x00", ""} {
				if r := f.post(t, "/webhook/dev/"+key, nil, body); r.status != 200 {
					t.Fatal(r.status, r.body)
				}
			}
			es := f.cap.all()
			if len(es) != 3 {
				t.Fatalf("%d events", len(es))
			}
			jsonEqual(t, forwardOf(t, es[0])["payload"], `{"a":[1,2]}`)
			if got := forwardOf(t, es[1])["payload"]; got != "not json \x00" {
				t.Errorf("payload %#v", got)
			}
			if got := forwardOf(t, es[2])["payload"]; got != "" {
				t.Errorf("payload %#v", got)
			}
			if e := f.log.last(t); e.Meta["verified"] != false {
				t.Errorf("log %+v", e)
			}
		})
	}
}

func slackHeader(body string, at time.Time) http.Header {
	ts := strconv.FormatInt(at.Unix(), 10)
	return hdr("X-Slack-Signature", "v0="+macHex(slackSecret, "v0:"+ts+":"+body), "X-Slack-Request-Timestamp", ts)
}

func TestIncomingSlack(t *testing.T) {
	t.Parallel()
	t.Run("challenge", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		body := `{"token":"Jhj5dZrVaK7ZwHHjRyZWjbDl","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"}`
		r := f.post(t, "/webhook/dev/slack", slackHeader(body, fixedNow), body)
		if r.status != 200 || r.body != "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P" || !strings.HasPrefix(r.header.Get("Content-Type"), "text/plain") {
			t.Fatalf("%d %q %v", r.status, r.body, r.header)
		}
		if es := f.cap.all(); len(es) != 0 {
			t.Errorf("challenge forwarded")
		}
		if e := f.log.last(t); e.Meta["challenge"] != true || e.Meta["verified"] != true {
			t.Errorf("log %+v", e)
		}
		// Unsigned, it is refused.
		r = f.post(t, "/webhook/dev/slack", nil, body)
		if r.status != 401 || r.code() != "invalid_signature" {
			t.Errorf("unsigned challenge: %d %s", r.status, r.body)
		}
		// Without the challenge field.
		noValue := `{"type":"url_verification"}`
		if r := f.post(t, "/webhook/dev/slack", slackHeader(noValue, fixedNow), noValue); r.status != 400 || r.code() != "invalid_body" {
			t.Errorf("challenge without value: %d %s", r.status, r.body)
		}
	})
	t.Run("event", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		body := `{"type":"event_callback","team_id":"T1","event":{"type":"message"}}`
		if r := f.post(t, "/webhook/dev/slack", slackHeader(body, fixedNow), body); r.status != 200 {
			t.Fatal(r.status, r.body)
		}
		nested := `{"type":"event_callback","team_id":"T2"}`
		if r := f.post(t, "/webhook/dev/slack", slackHeader(nested, fixedNow), nested); r.status != 200 {
			t.Fatal(r.status, r.body)
		}
		if got := connIDs(f.cap.all()); strings.Join(got, ",") != "sl1,sl2" {
			t.Errorf("connections %q", got)
		}
	})
	t.Run("replayed", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		body := `{"type":"event_callback","team_id":"T1"}`
		if r := f.post(t, "/webhook/dev/slack", slackHeader(body, fixedNow.Add(-10*time.Minute)), body); r.status != 401 {
			t.Fatal(r.status, r.body)
		}
		if f.log.last(t).Meta["reason"] != webhooks.ReasonStaleTimestamp {
			t.Errorf("log %+v", f.log.last(t))
		}
	})
	t.Run("form bodies", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		slash := "token=x&team_id=T1&command=%2Fweather&text=94070"
		h := slackHeader(slash, fixedNow)
		h.Set("Content-Type", "application/x-www-form-urlencoded")
		if r := f.post(t, "/webhook/dev/slack", h, slash); r.status != 200 {
			t.Fatal(r.status, r.body)
		}
		interactive := "payload=" + url.QueryEscape(`{"type":"block_actions","team":{"id":"T1"}}`)
		h = slackHeader(interactive, fixedNow)
		h.Set("Content-Type", "application/x-www-form-urlencoded")
		if r := f.post(t, "/webhook/dev/slack", h, interactive); r.status != 200 {
			t.Fatal(r.status, r.body)
		}
		notForm := "token=x&team_id=T1"
		if r := f.post(t, "/webhook/dev/slack", slackHeader(notForm, fixedNow), notForm); r.status != 400 {
			t.Errorf("form body without form content type: %d", r.status)
		}
		es := f.cap.all()
		if got := connIDs(es); strings.Join(got, ",") != "sl1," {
			t.Fatalf("connections %q", got)
		}
		jsonEqual(t, forwardOf(t, es[0])["payload"], `{"token":"x","team_id":"T1","command":"/weather","text":"94070"}`)
		jsonEqual(t, forwardOf(t, es[1])["payload"], `{"type":"block_actions","team":{"id":"T1"}}`)
	})
}

func TestIncomingLinearUnmatched(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	body := `{"action":"create","organizationId":"org-1"}`
	h := hdr("Linear-Signature", macHex(linSecret, body))
	if r := f.post(t, "/webhook/dev/lin", h, body); r.status != 200 {
		t.Fatal(r.status, r.body)
	}
	es := f.cap.all()
	if len(es) != 1 || es[0].ConnectionID != "" {
		t.Fatalf("events %+v", es)
	}
	m := forwardOf(t, es[0])
	if _, ok := m["connectionId"]; ok || m["from"] != "linear" {
		t.Errorf("envelope %v", m)
	}
}

func TestIncomingScan(t *testing.T) {
	t.Parallel()
	many := make([]webhooks.RoutableConnection, 2500)
	for i := range many {
		many[i] = webhooks.RoutableConnection{ConnectionID: fmt.Sprintf("m%d", i), ConnectionConfig: map[string]any{"installation_id": strconv.Itoa(10000 + i)}}
	}
	body := `{"installation":{"id":12400}}`
	t.Run("paged", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		f.conns.by["gh"] = many
		if r := f.post(t, "/webhook/dev/gh", githubHeader(ghSecret, body), body); r.status != 200 {
			t.Fatal(r.status, r.body)
		}
		if got := connIDs(f.cap.all()); strings.Join(got, ",") != "m2400" {
			t.Errorf("connections %q", got)
		}
		if f.conns.calls != 3 {
			t.Errorf("%d list calls, want 3", f.conns.calls)
		}
	})
	t.Run("bounded", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, func(c *webhooks.IncomingConfig) { c.MaxScan = 1500 })
		f.conns.by["gh"] = many
		if r := f.post(t, "/webhook/dev/gh", githubHeader(ghSecret, body), body); r.status != 200 {
			t.Fatal(r.status, r.body)
		}
		if got := connIDs(f.cap.all()); strings.Join(got, ",") != "" {
			t.Errorf("connections %q", got)
		}
		if e := f.log.last(t); e.Meta["truncated"] != true {
			t.Errorf("log %+v", e)
		}
	})
	t.Run("finder", func(t *testing.T) {
		t.Parallel()
		var fc *finderConns
		f := newFixture(t, func(c *webhooks.IncomingConfig) {
			fc = &finderConns{fakeConns: c.Connections.(*fakeConns)}
			c.Connections = fc
		})
		f.conns.by["gh"] = many
		if r := f.post(t, "/webhook/dev/gh", githubHeader(ghSecret, body), body); r.status != 200 {
			t.Fatal(r.status, r.body)
		}
		if got := connIDs(f.cap.all()); strings.Join(got, ",") != "m2400" {
			t.Errorf("connections %q", got)
		}
		if fc.finds != 1 || f.conns.calls != 0 {
			t.Errorf("finds %d, list calls %d", fc.finds, f.conns.calls)
		}
	})
}

func TestIncomingNotifierFailure(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.cap.err = errors.New("outbox down")
	body := `{"installation":{"id":123}}`
	r := f.post(t, "/webhook/dev/gh", githubHeader(ghSecret, body), body)
	if r.status != 500 || r.code() != "server_error" || strings.Contains(r.body, "outbox") {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if e := f.log.last(t); e.Status != oplog.StatusFailure {
		t.Errorf("log %+v", e)
	}
}

func TestIncomingRateLimit(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(c *webhooks.IncomingConfig) { c.Limiter = denyAll{} })
	body := `{"installation":{"id":123}}`
	r := f.post(t, "/webhook/dev/gh", githubHeader(ghSecret, body), body)
	if r.status != 429 || r.code() != "too_many_requests" || r.header.Get("Retry-After") != "2" {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if len(f.cap.all()) != 0 {
		t.Error("forwarded")
	}
}

func TestIncomingHandlerRequiresParts(t *testing.T) {
	t.Parallel()
	defer func() {
		if recover() == nil {
			t.Error("no panic for an empty config")
		}
	}()
	webhooks.IncomingHandler(webhooks.IncomingConfig{})
}

// FuzzIncomingHandler sends correctly signed deliveries with arbitrary
// bodies and content types: the handler answers 200 or 400, never a server
// error or a panic.
func FuzzIncomingHandler(f *testing.F) {
	f.Add(uint8(0), `{"installation":{"id":123}}`, "application/json")
	f.Add(uint8(1), `[{"portalId":62515},{"portalId":"777"},3,null,[]]`, "")
	f.Add(uint8(2), "payload=%7B%22team_id%22%3A%22T1%22%7D", "application/x-www-form-urlencoded")
	f.Add(uint8(2), `{"type":"url_verification","challenge":{"a":1}}`, "application/json")
	f.Add(uint8(3), "\xff\x00", "text/plain; charset=")
	f.Add(uint8(4), `{"installation":{"id":1e400}}`, "application/json")
	fx := newFixture(f, func(c *webhooks.IncomingConfig) {
		c.Notifier = webhooks.NotifierFunc(func(context.Context, webhooks.Event) error { return nil })
		c.Log = nil
		c.PublicURL = "https://connect.example.com"
	})
	ms := strconv.FormatInt(fixedNow.UnixMilli(), 10)
	f.Fuzz(func(t *testing.T, which uint8, body, contentType string) {
		var path string
		h := http.Header{}
		switch which % 5 {
		case 0, 4:
			path = "/webhook/dev/gh"
			h = githubHeader(ghSecret, body)
		case 1:
			path = "/webhook/dev/hs"
			h.Set("X-HubSpot-Request-Timestamp", ms)
			h.Set("X-HubSpot-Signature-v3", macB64(hsSecret, "POST"+"https://connect.example.com"+path+body+ms))
		case 2:
			path = "/webhook/dev/slack"
			h = slackHeader(body, fixedNow)
		case 3:
			path = "/webhook/dev/shop"
			h.Set("X-Shopify-Hmac-Sha256", macB64(shopSecret, body))
			h.Set("X-Shopify-Shop-Domain", "my-store.myshopify.com")
		}
		h.Set("Content-Type", contentType)
		req := httptest.NewRequest("POST", path, strings.NewReader(body))
		req.Header = h
		rec := httptest.NewRecorder()
		fx.h.ServeHTTP(rec, req)
		if rec.Code != 200 && rec.Code != 400 {
			t.Fatalf("status %d %s", rec.Code, rec.Body)
		}
	})
}

// TestIncomingRefusalsAreSampled: a refusal before authentication (anyone
// may send it) is recorded at most once per integration, reason and
// RefusalLogInterval, with the count of those left out; refusals after a
// valid signature are all recorded.
func TestIncomingRefusalsAreSampled(t *testing.T) {
	t.Parallel()
	now := fixedNow
	var mu sync.Mutex
	f := newFixture(t, func(c *webhooks.IncomingConfig) {
		c.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	})
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	body := `{"installation":{"id":123}}`
	count := func() int { f.log.mu.Lock(); defer f.log.mu.Unlock(); return len(f.log.entries) }
	const n = 50
	for range n {
		if r := f.post(t, "/webhook/dev/gh", githubHeader("wrong", body), body); r.status != 401 {
			t.Fatalf("bad signature: %d %s", r.status, r.body)
		}
		// Another reason and another integration are counted apart.
		if r := f.post(t, "/webhook/dev/gh", hdr("Content-Type", "application/json"), body); r.status != 401 {
			t.Fatalf("no signature: %d %s", r.status, r.body)
		}
		if r := f.post(t, "/webhook/dev/lin", hdr("Linear-Signature", "00"), body); r.status != 401 {
			t.Fatalf("linear: %d %s", r.status, r.body)
		}
	}
	if got := count(); got != 3 {
		t.Fatalf("%d bad deliveries wrote %d log entries, want one per integration and reason (3)", 3*n, got)
	}
	before := count()
	advance(59 * time.Second)
	f.post(t, "/webhook/dev/gh", githubHeader("wrong", body), body)
	if got := count(); got != before {
		t.Fatalf("a refusal within the interval was recorded: %d entries, want %d", got, before)
	}
	advance(time.Second)
	f.post(t, "/webhook/dev/gh", githubHeader("wrong", body), body)
	e := f.log.last(t)
	if count() != before+1 || e.Meta["reason"] != webhooks.ReasonMismatch || e.Meta["suppressed"] != n {
		t.Fatalf("after the interval: %d entries, last %+v; want one more with suppressed %d", count(), e, n)
	}
	// Refusals of authenticated deliveries are all recorded.
	before = count()
	for range 5 {
		bad := `{"installation":`
		if r := f.post(t, "/webhook/dev/gh", githubHeader(ghSecret, bad), bad); r.status != 400 {
			t.Fatalf("signed bad body: %d %s", r.status, r.body)
		}
	}
	if got := count(); got != before+5 {
		t.Errorf("5 signed bad bodies wrote %d entries, want 5", got-before)
	}
}

// fakeTrimmer is a ForwardTrimmer that reports a set total.
type fakeTrimmer struct {
	mu    sync.Mutex
	left  int64
	calls []string
}

func (f *fakeTrimmer) TrimForwards(_ context.Context, env int64, key string, max int64) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf("%d/%s/%d", env, key, max))
	return f.left, nil
}

func (f *fakeTrimmer) set(left int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.left, f.calls = left, nil
}

func (f *fakeTrimmer) taken() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

// errTx is a Transactor that records what each transaction returned (a
// real one rolls back on an error).
type errTx struct {
	mu   sync.Mutex
	errs []error
}

func (x *errTx) WithTx(ctx context.Context, fn func(context.Context) error) error {
	err := fn(ctx)
	x.mu.Lock()
	x.errs = append(x.errs, err)
	x.mu.Unlock()
	return err
}

func (x *errTx) last() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.errs[len(x.errs)-1]
}

// TestIncomingForwardQuota: the forwards of a delivery are trimmed to the
// quota in their transaction; when the quota cannot hold them, a delivery
// no signature verified is refused with 429 and its transaction fails (so
// that nothing it stored stays), while a verified one is kept.
func TestIncomingForwardQuota(t *testing.T) {
	t.Parallel()
	trim := &fakeTrimmer{}
	tx := &errTx{}
	const quota = 1000
	f := newFixture(t, func(c *webhooks.IncomingConfig) {
		c.Forwards, c.MaxForward, c.Transactor = trim, quota, tx
	})

	trim.set(quota)
	if r := f.post(t, "/webhook/dev/plain", nil, `{"n":1}`); r.status != 200 {
		t.Fatalf("within the quota: %d %s", r.status, r.body)
	}
	if got := trim.taken(); !slices.Equal(got, []string{"7/plain/1000"}) {
		t.Errorf("trims %v", got)
	}

	trim.set(quota + 1)
	r := f.post(t, "/webhook/dev/plain", nil, `{"n":2}`)
	if r.status != 429 || r.code() != "webhook_storage_full" || r.header.Get("Retry-After") != "60" {
		t.Fatalf("over the quota: %d %v %s", r.status, r.header, r.body)
	}
	if err := tx.last(); err == nil {
		t.Error("the refused delivery's transaction did not fail")
	}
	if e := f.log.last(t); e.Status != oplog.StatusFailure || e.Meta["reason"] != "storage_full" || e.Meta["verified"] != false {
		t.Errorf("log entry %+v", e)
	}
	// Refusals are sampled, as other refusals of unverified deliveries.
	n := f.log.count()
	if r := f.post(t, "/webhook/dev/plain", nil, `{"n":3}`); r.status != 429 {
		t.Fatalf("over the quota again: %d", r.status)
	}
	if f.log.count() != n {
		t.Errorf("a second refusal within the interval was logged")
	}

	// A verified delivery is kept over the quota: only the provider sends it.
	body := `{"installation":{"id":123}}`
	if r := f.post(t, "/webhook/dev/gh", githubHeader(ghSecret, body), body); r.status != 200 {
		t.Fatalf("verified over the quota: %d %s", r.status, r.body)
	}
	if err := tx.last(); err != nil {
		t.Errorf("the verified delivery's transaction failed: %v", err)
	}

	// Nothing forwarded, nothing trimmed.
	trim.set(quota + 1)
	if r := f.post(t, "/webhook/dev/quiet", githubHeader(ghSecret, body), body); r.status != 200 {
		t.Fatalf("not forwarded: %d %s", r.status, r.body)
	}
	if got := trim.taken(); len(got) != 0 {
		t.Errorf("trimmed without forwards: %v", got)
	}

	// A negative quota is none.
	off := newFixture(t, func(c *webhooks.IncomingConfig) { c.Forwards, c.MaxForward = trim, -1 })
	if r := off.post(t, "/webhook/dev/plain", nil, `{}`); r.status != 200 || len(trim.taken()) != 0 {
		t.Fatalf("without a quota: %d, trims %v", r.status, trim.taken())
	}

	defer func() {
		if recover() == nil {
			t.Error("Forwards without Transactor did not panic")
		}
	}()
	newFixture(t, func(c *webhooks.IncomingConfig) { c.Forwards, c.Transactor = trim, nil })
}

// extraCatalog is a catalogue with providers added.
type extraCatalog struct {
	webhooks.ProviderCatalog
	extra map[string]*integrations.Provider
}

func (c extraCatalog) Get(name string) (*integrations.Provider, bool) {
	if p, ok := c.extra[name]; ok {
		return p, true
	}
	return c.ProviderCatalog.Get(name)
}

// TestIncomingUnverifiedEntriesAreSampled: every log entry of a delivery
// that no signature verified (anyone may send it: accepted, challenge
// answered or refused, forwarded or not) is recorded at most once per
// environment, integration and outcome in each interval of the Sampler,
// with the count of those left out; its forward events are marked
// Unverified. Verified deliveries are all recorded, their forwards
// unmarked.
func TestIncomingUnverifiedEntriesAreSampled(t *testing.T) {
	t.Parallel()
	now := fixedNow
	var mu sync.Mutex
	sampler := oplog.NewSampler(time.Minute)
	f := newFixture(t, func(c *webhooks.IncomingConfig) {
		c.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
		c.Sampler = sampler
		// A provider that does not sign, with a challenge and routing.
		c.Providers = extraCatalog{c.Providers, map[string]*integrations.Provider{"anon": {Name: "anon",
			WebhookRouting: &integrations.WebhookRouting{
				Challenge:  &integrations.WebhookChallenge{Path: "type", Value: "verify", ResponsePath: "challenge"},
				Connection: &integrations.WebhookConnection{Path: "account", ConnectionConfigKey: "account"},
			}}}}
		c.Integrations.(fakeIntegrations)["anon"] = &integrations.Integration{ID: 100, EnvironmentID: 7, UniqueKey: "anon",
			Provider: "anon", ForwardWebhooks: true}
	})
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	entries := func() []*oplog.Entry {
		f.log.mu.Lock()
		defer f.log.mu.Unlock()
		return append([]*oplog.Entry(nil), f.log.entries...)
	}
	post := func(path, body string, h http.Header, want int) {
		t.Helper()
		if r := f.post(t, path, h, body); r.status != want {
			t.Fatalf("POST %s %q: %d %s, want %d", path, body, r.status, r.body, want)
		}
	}
	jsonHdr := hdr("Content-Type", "application/json")
	const n = 20
	for range n {
		post("/webhook/dev/plain", `{"a":1}`, nil, 200)
		post("/webhook/dev/anon", `{"account":"x"}`, jsonHdr, 200)
		post("/webhook/dev/anon", `{"type":"verify","challenge":"c-1"}`, jsonHdr, 200)
		post("/webhook/dev/anon", `{"type":"verify"}`, jsonHdr, 400)
		post("/webhook/dev/anon", `{"account":`, jsonHdr, 400)
	}
	for _, e := range f.cap.all() {
		if !e.Unverified {
			t.Fatalf("forward of an unsigned delivery not marked unverified: %+v", e)
		}
	}
	if got := len(f.cap.all()); got != 2*n {
		t.Fatalf("%d forward events, want %d", got, 2*n)
	}
	type key struct{ integration, outcome string }
	outcome := func(e *oplog.Entry) key {
		o, _ := e.Meta["reason"].(string)
		switch {
		case o != "":
		case e.Meta["challenge"] == true:
			o = "challenge"
		default:
			o = "accepted"
		}
		return key{e.IntegrationKey, o}
	}
	first := entries()
	got := map[key]int{}
	for _, e := range first {
		got[outcome(e)]++
		if e.Meta["verified"] != false || e.Meta["suppressed"] != nil {
			t.Errorf("entry %+v", e)
		}
	}
	want := map[key]int{{"plain", "accepted"}: 1, {"anon", "accepted"}: 1, {"anon", "challenge"}: 1,
		{"anon", "invalid_challenge"}: 1, {"anon", "invalid_body"}: 1}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%d unverified deliveries wrote entries %v, want one per integration and outcome %v", 5*n, got, want)
	}
	// The Sampler given is the one used: the key is taken for this interval.
	if ok, _ := sampler.Admit(oplog.SampleKey{EnvironmentID: 7, IntegrationKey: "plain", Operation: "incoming", Outcome: "accepted"}, fixedNow); ok {
		t.Error("the handler did not use the Sampler of its config")
	}

	// Verified deliveries are all recorded, and not marked.
	body := `{"installation":{"id":456}}`
	for range 5 {
		post("/webhook/dev/gh", body, githubHeader(ghSecret, body), 200)
	}
	if got := len(entries()) - len(first); got != 5 {
		t.Errorf("5 verified deliveries wrote %d entries", got)
	}
	for _, e := range f.cap.all()[2*n:] {
		if e.Unverified {
			t.Errorf("forward of a verified delivery marked unverified: %+v", e)
		}
	}

	// An interval later, one more entry per outcome, counting those left
	// out (and, for plain, the probe of the Sampler above).
	before := len(entries())
	advance(time.Minute)
	post("/webhook/dev/plain", `{"a":1}`, nil, 200)
	post("/webhook/dev/anon", `{"type":"verify"}`, jsonHdr, 400)
	post("/webhook/dev/plain", `{"a":1}`, nil, 200)
	es := entries()[before:]
	if len(es) != 2 || outcome(es[0]) != (key{"plain", "accepted"}) || es[0].Meta["suppressed"] != n {
		t.Fatalf("entries after the interval: %+v", es)
	}
	if outcome(es[1]) != (key{"anon", "invalid_challenge"}) || es[1].Meta["suppressed"] != n-1 {
		t.Errorf("entry of a refusal after the interval: %+v", es[1])
	}

	// A Notifier that fails: its refusals (enqueue_failed) are sampled too.
	f.cap.err = errors.New("outbox down")
	before = len(entries())
	for range 5 {
		post("/webhook/dev/plain", `{"a":1}`, nil, 500)
	}
	es = entries()[before:]
	if len(es) != 1 || es[0].Status != oplog.StatusFailure || es[0].Meta["reason"] != "enqueue_failed" {
		t.Errorf("entries of 5 failed forwards: %+v", es)
	}
}
