package connect_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/oplog"
	"github.com/embedauth/connect/store"
	"github.com/embedauth/connect/webhooks"
)

// incomingConnections adapts a Store to the webhooks.ConnectionLister the
// incoming webhook handler routes with.
func incomingConnections(st connect.Store) webhooks.ConnectionLister {
	return webhooks.ConnectionListerFunc(func(ctx context.Context, envID int64, key string, limit, offset int) ([]webhooks.RoutableConnection, error) {
		cs, err := st.ListConnections(ctx, connections.Filter{EnvironmentID: envID, IntegrationKeys: []string{key},
			Page: store.Page{Limit: limit, Offset: offset}})
		if err != nil {
			return nil, err
		}
		out := make([]webhooks.RoutableConnection, len(cs))
		for i, c := range cs {
			out[i] = webhooks.RoutableConnection{ConnectionID: c.ConnectionID, ConnectionConfig: c.ConnectionConfig}
		}
		return out, nil
	})
}

// incomingCapture is a Notifier that keeps the events.
type incomingCapture struct {
	mu     sync.Mutex
	events []webhooks.Event
}

func (c *incomingCapture) Notify(_ context.Context, e webhooks.Event) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events = append(c.events, e)
	return nil
}

func (c *incomingCapture) take() []webhooks.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.events
	c.events = nil
	return out
}

const (
	incGitHubSecret = "gh-whsec-123"
	incSlackSecret  = "slack-signing-secret"
	incStripeSecret = "whsec_stripe"
)

// incomingSetup returns a bundle with integrations gh (github), slack and
// stripe carrying webhook secrets, connections on them, and an HTTP server
// of the incoming webhook handler built from the Service's parts.
func incomingSetup(t *testing.T, b *backend) (*bundle, *httptest.Server, *incomingCapture) {
	t.Helper()
	bu := setup(t, b)
	bu.mustDo(t, 200, req{method: "POST", path: "/integrations", body: `{"provider":"github","unique_key":"gh",
		"credentials":{"type":"OAUTH2","client_id":"cid","client_secret":"csecret","webhook_secret":"` + incGitHubSecret + `"}}`})
	bu.mustDo(t, 200, req{method: "POST", path: "/integrations", body: `{"provider":"slack","unique_key":"slack",
		"credentials":{"type":"OAUTH2","client_id":"cid","client_secret":"csecret","webhook_secret":"` + incSlackSecret + `"}}`})
	bu.mustDo(t, 200, req{method: "POST", path: "/integrations", body: `{"provider":"stripe","unique_key":"stripe",
		"credentials":{"type":"OAUTH2","client_id":"cid","client_secret":"csecret","webhook_secret":"` + incStripeSecret + `"}}`})
	for _, c := range []string{
		`{"provider_config_key":"gh","connection_id":"inst-a","access_token":"t","no_expiration":true,"connection_config":{"installation_id":"4242"}}`,
		`{"provider_config_key":"gh","connection_id":"inst-b","access_token":"t","no_expiration":true,"connection_config":{"installation_id":"5151"}}`,
		`{"provider_config_key":"gh","connection_id":"inst-num","access_token":"t","no_expiration":true,"connection_config":{"installation_id":777}}`,
		`{"provider_config_key":"gh","connection_id":"plain","access_token":"t","no_expiration":true}`,
		`{"provider_config_key":"slack","connection_id":"team-1","access_token":"t","no_expiration":true,"connection_config":{"team.id":"T0001"}}`,
		`{"provider_config_key":"stripe","connection_id":"acct","access_token":"t","no_expiration":true,"connection_config":{"stripe_user_id":"acct_1"}}`,
	} {
		bu.mustDo(t, 201, req{method: "POST", path: "/connections", body: c})
	}
	capt := &incomingCapture{}
	h := webhooks.IncomingHandler(webhooks.IncomingConfig{
		Environments: bu.svc.Environments(),
		Integrations: bu.svc.Integrations(),
		Connections:  incomingConnections(b.store),
		Providers:    bu.svc.Integrations().Catalog(),
		Notifier:     capt,
		Transactor:   b.store,
		Log:          &oplog.Writer{Store: b.store, Now: bu.now.Now},
		PublicURL:    "https://connect.example.com",
		Now:          bu.now.Now,
	})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return bu, srv, capt
}

type incomingResp struct {
	status int
	header http.Header
	body   string
}

func (r incomingResp) code() string {
	var b struct {
		Error struct{ Code string } `json:"error"`
	}
	json.Unmarshal([]byte(r.body), &b)
	return b.Error.Code
}

func incomingPost(t *testing.T, srv *httptest.Server, path string, header map[string]string, body string) incomingResp {
	t.Helper()
	r, err := http.NewRequest("POST", srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		r.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return incomingResp{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

func incomingHMAC(secret, msg string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(msg))
	return hex.EncodeToString(m.Sum(nil))
}

func githubDelivery(secret, body string) map[string]string {
	return map[string]string{"Content-Type": "application/json", "X-GitHub-Event": "installation",
		"X-Hub-Signature-256": "sha256=" + incomingHMAC(secret, body)}
}

// forwardJSON returns the event's forward body as the Notifier would
// serialise it.
func forwardJSON(t *testing.T, e webhooks.Event) map[string]any {
	t.Helper()
	b, err := webhooks.Canonical(e.Payload)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func sameJSON(t *testing.T, got any, want string) {
	t.Helper()
	var w any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	gb, _ := json.Marshal(got)
	wb, _ := json.Marshal(w)
	if string(gb) != string(wb) {
		t.Errorf("payload %s, want %s", gb, wb)
	}
}

func TestIncomingWebhooks(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		bu, srv, capt := incomingSetup(t, b)
		ctx := context.Background()

		// A signed GitHub delivery naming installation 4242 (a number)
		// reaches the connection whose installation_id is "4242".
		body := `{"action":"created","installation":{"id":4242,"account":{"login":"octo"}},"sender":{"id":1}}`
		r := incomingPost(t, srv, "/webhook/dev/gh", githubDelivery(incGitHubSecret, body), body)
		if r.status != 200 || strings.TrimSpace(r.body) != `{"success":true}` {
			t.Fatalf("github delivery: %d %s", r.status, r.body)
		}
		es := capt.take()
		if len(es) != 1 || es[0].ConnectionID != "inst-a" || es[0].IntegrationKey != "gh" || es[0].EnvironmentID != bu.env.ID || es[0].Type != webhooks.TypeForward {
			t.Fatalf("events %+v", es)
		}
		m := forwardJSON(t, es[0])
		if m["from"] != "github" || m["type"] != "forward" || m["connectionId"] != "inst-a" || m["providerConfigKey"] != "gh" {
			t.Errorf("envelope %v", m)
		}
		sameJSON(t, m["payload"], body)

		// A number stored in connection_config matches a string in the
		// payload.
		body = `{"installation":{"id":"777"}}`
		incomingPost(t, srv, "/webhook/dev/gh", githubDelivery(incGitHubSecret, body), body)
		if es := capt.take(); len(es) != 1 || es[0].ConnectionID != "inst-num" {
			t.Errorf("numeric config: %+v", es)
		}

		// No connection matches: one envelope without a connection id.
		body = `{"installation":{"id":9999}}`
		r = incomingPost(t, srv, "/webhook/dev/gh", githubDelivery(incGitHubSecret, body), body)
		es = capt.take()
		if r.status != 200 || len(es) != 1 || es[0].ConnectionID != "" {
			t.Fatalf("unmatched: %d %+v", r.status, es)
		}
		m = forwardJSON(t, es[0])
		if _, ok := m["connectionId"]; ok || m["type"] != "forward" || m["providerConfigKey"] != "gh" {
			t.Errorf("unmatched envelope %v", m)
		}
		sameJSON(t, m["payload"], body)

		// The operations log says what happened, without the body.
		logs, err := bu.svc.ListLogs(ctx, oplog.Filter{EnvironmentID: bu.env.ID, Type: "webhook"})
		if err != nil {
			t.Fatal(err)
		}
		if len(logs) != 3 {
			t.Fatalf("%d log entries", len(logs))
		}
		last := logs[0]
		if last.Operation != "incoming" || last.Status != oplog.StatusSuccess || last.IntegrationKey != "gh" ||
			fmt.Sprint(last.Meta["verified"]) != "true" || fmt.Sprint(last.Meta["matched"]) != "0" || fmt.Sprint(last.Meta["provider"]) != "github" {
			t.Errorf("log entry %+v", last)
		}
		for _, l := range logs {
			if s := fmt.Sprintf("%+v", l); strings.Contains(s, "octo") || strings.Contains(s, incGitHubSecret) {
				t.Errorf("log entry leaks: %s", s)
			}
		}

		// forward_webhooks off: accepted, nothing forwarded.
		bu.mustDo(t, 200, req{method: "PATCH", path: "/integrations/gh", body: `{"forward_webhooks":false}`})
		body = `{"installation":{"id":4242}}`
		r = incomingPost(t, srv, "/webhook/dev/gh", githubDelivery(incGitHubSecret, body), body)
		if r.status != 200 {
			t.Fatalf("forward off: %d %s", r.status, r.body)
		}
		if es := capt.take(); len(es) != 0 {
			t.Errorf("forward off: %d events", len(es))
		}
		bu.mustDo(t, 200, req{method: "PATCH", path: "/integrations/gh", body: `{"forward_webhooks":true}`})
	})
}

func TestIncomingWebhookRefusals(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		_, srv, capt := incomingSetup(t, b)
		body := `{"installation":{"id":4242}}`
		big := `{"installation":{"id":4242},"x":"` + strings.Repeat("a", webhooks.DefaultIncomingMaxBody) + `"}`
		tests := []struct {
			name   string
			path   string
			header map[string]string
			body   string
			status int
			code   string
		}{
			{"wrong signature", "/webhook/dev/gh", githubDelivery("not-the-secret", body), body, 401, "invalid_signature"},
			{"no signature", "/webhook/dev/gh", map[string]string{"Content-Type": "application/json"}, body, 401, "invalid_signature"},
			{"malformed signature", "/webhook/dev/gh", map[string]string{"X-Hub-Signature-256": "sha256=nothex"}, body, 401, "invalid_signature"},
			{"malformed JSON", "/webhook/dev/gh", githubDelivery(incGitHubSecret, `{"installation":{"id":`), `{"installation":{"id":`, 400, "invalid_body"},
			{"unknown integration", "/webhook/dev/nope", githubDelivery(incGitHubSecret, body), body, 404, "unknown_provider_config"},
			{"unknown environment", "/webhook/prod/gh", githubDelivery(incGitHubSecret, body), body, 404, "unknown_environment"},
			{"oversized body", "/webhook/dev/gh", githubDelivery(incGitHubSecret, big), big, 413, "payload_too_large"},
		}
		for _, tt := range tests {
			r := incomingPost(t, srv, tt.path, tt.header, tt.body)
			if r.status != tt.status || r.code() != tt.code {
				t.Errorf("%s: %d %.200s, want %d %s", tt.name, r.status, r.body, tt.status, tt.code)
			}
			if es := capt.take(); len(es) != 0 {
				t.Errorf("%s: forwarded %d events", tt.name, len(es))
			}
		}
	})
}

func TestIncomingWebhookSlackChallenge(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		bu, srv, capt := incomingSetup(t, b)
		sign := func(body string, at time.Time) map[string]string {
			ts := strconv.FormatInt(at.Unix(), 10)
			return map[string]string{"Content-Type": "application/json", "X-Slack-Request-Timestamp": ts,
				"X-Slack-Signature": "v0=" + incomingHMAC(incSlackSecret, "v0:"+ts+":"+body)}
		}
		body := `{"token":"Jhj5dZrVaK7ZwHHjRyZWjbDl","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"}`
		r := incomingPost(t, srv, "/webhook/dev/slack", sign(body, bu.now.Now()), body)
		if r.status != 200 || r.body != "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P" {
			t.Fatalf("challenge: %d %q", r.status, r.body)
		}
		if es := capt.take(); len(es) != 0 {
			t.Errorf("challenge forwarded: %+v", es)
		}
		// An event reaches the team's connection (team.id is stored flat,
		// as token_response_metadata writes it).
		body = `{"type":"event_callback","team_id":"T0001","event":{"type":"app_mention"}}`
		r = incomingPost(t, srv, "/webhook/dev/slack", sign(body, bu.now.Now()), body)
		if es := capt.take(); r.status != 200 || len(es) != 1 || es[0].ConnectionID != "team-1" {
			t.Errorf("slack event: %d %+v", r.status, es)
		}
		// A replay ten minutes later is refused.
		r = incomingPost(t, srv, "/webhook/dev/slack", sign(body, bu.now.Now().Add(-10*time.Minute)), body)
		if r.status != 401 || len(capt.take()) != 0 {
			t.Errorf("replay: %d %s", r.status, r.body)
		}
	})
}

func TestIncomingWebhookStripe(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		bu, srv, capt := incomingSetup(t, b)
		body := `{"id":"evt_1","object":"event","account":"acct_1","type":"account.updated"}`
		sign := func(at time.Time) map[string]string {
			ts := strconv.FormatInt(at.Unix(), 10)
			return map[string]string{"Content-Type": "application/json",
				"Stripe-Signature": "t=" + ts + ",v1=" + incomingHMAC(incStripeSecret, ts+"."+body)}
		}
		r := incomingPost(t, srv, "/webhook/dev/stripe", sign(bu.now.Now().Add(-time.Minute)), body)
		if es := capt.take(); r.status != 200 || len(es) != 1 || es[0].ConnectionID != "acct" {
			t.Fatalf("fresh: %d %s %+v", r.status, r.body, es)
		}
		r = incomingPost(t, srv, "/webhook/dev/stripe", sign(bu.now.Now().Add(-6*time.Minute)), body)
		if r.status != 401 || r.code() != "invalid_signature" {
			t.Errorf("stale: %d %s", r.status, r.body)
		}
		if es := capt.take(); len(es) != 0 {
			t.Errorf("stale delivery forwarded")
		}
		logs, err := bu.svc.ListLogs(context.Background(), oplog.Filter{EnvironmentID: bu.env.ID, Type: "webhook", IntegrationKey: "stripe"})
		if err != nil {
			t.Fatal(err)
		}
		if len(logs) != 2 || logs[0].Status != oplog.StatusFailure || fmt.Sprint(logs[0].Meta["reason"]) != webhooks.ReasonStaleTimestamp {
			t.Errorf("logs %+v", logs)
		}
	})
}
