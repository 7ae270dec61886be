package connect_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/egress"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/oplog"
	"github.com/embedauth/connect/proxy"
	"github.com/embedauth/connect/store"
	"github.com/embedauth/connect/webhooks"
)

// countingServer is an httptest server that counts the requests it gets.
type countingServer struct {
	srv  *httptest.Server
	hits atomic.Int64
}

func newCountingServer(t *testing.T, status int) *countingServer {
	t.Helper()
	cs := &countingServer{}
	cs.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cs.hits.Add(1)
		w.WriteHeader(status)
	}))
	t.Cleanup(cs.srv.Close)
	return cs
}

func (cs *countingServer) port() string {
	_, p, _ := net.SplitHostPort(cs.srv.Listener.Addr().String())
	return p
}

// closedURL returns the URL of a port nobody listens on any more.
func closedURL(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.NotFoundHandler())
	u := srv.URL
	srv.Close()
	return u
}

// leaksNetworkDetail reports what of an answer would help map a network:
// an address, a port, or the words of a dial error.
func leaksNetworkDetail(s string, ports ...string) string {
	for _, w := range []string{"127.0.0.1", "::1", "169.254", "10.0.0", "localhost", "connection refused", "dial", "connect:", "i/o timeout", "no such host", "connection reset"} {
		if strings.Contains(s, w) {
			return w
		}
	}
	for _, p := range ports {
		if p != "" && strings.Contains(s, p) {
			return p
		}
	}
	return ""
}

// probeCatalog adds one API-key provider per base URL, each checking
// credentials with GET {base}/check.
func probeCatalog(t *testing.T, bases map[string]string) *integrations.Catalog {
	t.Helper()
	base, err := integrations.DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	var ps []*integrations.Provider
	for name, u := range bases {
		ps = append(ps, &integrations.Provider{Name: name, DisplayName: name, AuthMode: integrations.AuthModeAPIKey,
			Proxy: &integrations.Proxy{BaseURL: u, Headers: map[string]string{"X-Key": "${apiKey}"},
				Verification: &integrations.Verification{Endpoints: []string{"/check"}}},
			Credentials: map[string]integrations.FieldSpec{"apiKey": {Title: "Key", Secret: true}}})
	}
	cat, err := base.With(ps...)
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

// TestCredentialCheckCannotProbeTheNetwork: with the default address
// policy, a credential check aimed at an open port, a closed port, a name
// that resolves to loopback, the metadata address, a private address or
// IPv6 forms of them gets the same answer, 400 address_not_allowed, that
// names no address, port or dial error; nothing is sent and nothing
// stored. With loopback allowed, a closed port is "could not reach the
// provider", still without detail.
func TestCredentialCheckCannotProbeTheNetwork(t *testing.T) {
	t.Parallel()
	open := newCountingServer(t, http.StatusUnauthorized)
	closed := closedURL(t)
	_, closedPort, _ := net.SplitHostPort(strings.TrimPrefix(closed, "http://"))
	bases := map[string]string{
		"probe-open":     open.srv.URL,
		"probe-closed":   closed,
		"probe-name":     "http://localhost:" + open.port(),
		"probe-metadata": "http://169.254.169.254",
		"probe-private":  "http://10.0.0.1:8080",
		"probe-mapped":   "http://[::ffff:127.0.0.1]:" + open.port(),
		"probe-nat64":    "http://[64:ff9b::a9fe:a9fe]",
		"probe-compat":   "http://[::7f00:1]:" + open.port(),
		"probe-zero":     "http://0.0.0.0:" + open.port(),
	}
	cat := probeCatalog(t, bases)
	check := func(bu *bundle, name string) *response {
		t.Helper()
		tok := bu.session(t, `{"tags":{"end_user_id":"u1"}}`)
		return bu.auth(t, "/api-auth/api-key/"+name, tok, "", `{"apiKey":"k-123456"}`)
	}
	strict := setupStrict(t, sqliteBackend(t), func(cfg *connect.Config) { cfg.Providers = cat })
	first := ""
	for name := range bases {
		strict.mustDo(t, 200, req{method: "POST", path: "/integrations", body: `{"provider":"` + name + `","unique_key":"` + name + `"}`})
		r := check(strict, name)
		if r.status != 400 || r.errCode() != egress.CodeAddressNotAllowed {
			t.Errorf("%s: %d %s, want 400 %s", name, r.status, r.raw, egress.CodeAddressNotAllowed)
			continue
		}
		msg := r.obj()["error"].(map[string]any)["message"].(string)
		if !strings.Contains(msg, "address not allowed") || !strings.Contains(msg, "allowed by connect.Config.Egress.AllowPrivateNetworks") {
			t.Errorf("%s: message %q", name, msg)
		}
		if w := leaksNetworkDetail(string(r.raw), open.port(), closedPort); w != "" {
			t.Errorf("%s: the answer gives away %q: %s", name, w, r.raw)
		}
		if first == "" {
			first = string(r.raw)
		} else if string(r.raw) != first {
			t.Errorf("%s answers differently from another refused address:\n%s\n%s", name, r.raw, first)
		}
	}
	if n := open.hits.Load(); n != 0 {
		t.Errorf("the open port got %d requests through the strict policy", n)
	}
	conns, err := strict.svc.Connections().List(t.Context(), strict.env.ID, connections.ListInput{})
	if err != nil || len(conns) != 0 {
		t.Errorf("refused checks stored %d connections (%v)", len(conns), err)
	}
	logs, err := strict.svc.ListLogs(t.Context(), oplog.Filter{EnvironmentID: strict.env.ID, Type: "auth", Limit: 100})
	if err != nil || len(logs) != len(bases) {
		t.Fatalf("%d auth log entries (%v), want %d", len(logs), err, len(bases))
	}
	for _, l := range logs {
		if w := leaksNetworkDetail(l.Message, open.port(), closedPort); w != "" || l.Meta["error"] != egress.CodeAddressNotAllowed {
			t.Errorf("log entry gives away %q or lacks the code: %+v", w, l)
		}
	}

	// Loopback allowed: the closed port cannot be reached, the open one
	// answers (and refuses the key).
	loop := setup(t, sqliteBackend(t), func(cfg *connect.Config) { cfg.Providers = cat })
	for name, want := range map[string]string{"probe-closed": egress.CodeUnreachable, "probe-open": "connection_validation_failed",
		"probe-metadata": egress.CodeAddressNotAllowed, "probe-private": egress.CodeAddressNotAllowed} {
		loop.mustDo(t, 200, req{method: "POST", path: "/integrations", body: `{"provider":"` + name + `","unique_key":"` + name + `"}`})
		r := check(loop, name)
		if r.status != 400 || r.errCode() != want {
			t.Errorf("loopback allowed, %s: %d %s, want 400 %s", name, r.status, r.raw, want)
		}
		if w := leaksNetworkDetail(string(r.raw), open.port(), closedPort); w != "" {
			t.Errorf("loopback allowed, %s: the answer gives away %q: %s", name, w, r.raw)
		}
	}
	if r := check(loop, "probe-closed"); !strings.Contains(string(r.raw), "could not reach the provider") {
		t.Errorf("closed port: %s", r.raw)
	}
}

// TestFlowTokenRequestsFollowThePolicy: with the default policy, the
// token requests of the OAuth flows (OAuth 2 code exchange, OAuth 1
// request token, app installation token) to a provider on loopback are
// refused before anything is sent: the popup's error is
// address_not_allowed, and so is the failure webhook, without detail.
func TestFlowTokenRequestsFollowThePolicy(t *testing.T) {
	t.Parallel()
	ob := oauthSetup(t, sqliteBackend(t), func(cfg *connect.Config) { cfg.Egress = egress.Policy{} })
	tok := ob.session(t, `{"tags":{"end_user_id":"u1"}}`)
	_, port, _ := net.SplitHostPort(ob.prov.srv.Listener.Addr().String())
	for _, key := range []string{"fo", "f1", "fapp"} {
		br := ob.browser(t)
		p := br.open(t, connectURL(key, tok, "ws_client_id=w-"+key))
		if p.status != 400 || p.errorType() != egress.CodeAddressNotAllowed {
			t.Errorf("%s: popup ended with %d %v", key, p.status, p.msg)
		}
		if w := leaksNetworkDetail(p.body, port); w != "" {
			t.Errorf("%s: the page gives away %q", key, w)
		}
		st := ob.mustDo(t, 200, req{method: "GET", path: "/oauth/status/w-" + key, key: tok})
		if e, _ := data(t, st)["error"].(map[string]any); e["type"] != egress.CodeAddressNotAllowed {
			t.Errorf("%s: status %s", key, st.raw)
		}
	}
	ob.prov.set(func(p *oauthProvider) {
		if len(p.tokenForms) != 0 || len(p.o1Requests) != 0 || len(p.appTokens) != 0 || len(p.jwtErrors) != 0 {
			t.Errorf("the provider was called: %d token requests, %d request tokens, %d app tokens", len(p.tokenForms), len(p.o1Requests), len(p.appTokens))
		}
	})
	// The code exchange and the app token were attempted after the end
	// user came back: their failure is an auth webhook.
	var failed int
	for _, e := range authEvents(ob.events) {
		if e.Success || e.Error == nil {
			continue
		}
		failed++
		if e.Error.Type != egress.CodeAddressNotAllowed || leaksNetworkDetail(e.Error.Description, port) != "" {
			t.Errorf("failure webhook %+v", e.Error)
		}
	}
	if failed != 2 {
		t.Errorf("%d failure webhooks, want 2 (code exchange and app token)", failed)
	}
	if n := len(ob.connections(t)); n != 0 {
		t.Errorf("%d connections stored", n)
	}
}

// TestClientCredentialsFollowThePolicy: the token request of a
// client-credentials auth call to a provider on loopback is refused with
// address_not_allowed under the default policy.
func TestClientCredentialsFollowThePolicy(t *testing.T) {
	t.Parallel()
	sb := sessionSetup(t, sqliteBackend(t), func(cfg *connect.Config) { cfg.Egress = egress.Policy{} })
	tok := sb.session(t, `{"tags":{"end_user_id":"u1"}}`)
	r := sb.auth(t, "/oauth2/auth/cc1", tok, "", `{"client_id":"cc-id","client_secret":"cc-secret"}`)
	if r.status != 400 || r.errCode() != egress.CodeAddressNotAllowed || leaksNetworkDetail(string(r.raw)) != "" {
		t.Errorf("= %d %s", r.status, r.raw)
	}
	if n := len(sb.api.requests()); n != 0 {
		t.Errorf("the provider got %d requests", n)
	}
}

// TestRefreshFollowsThePolicy: a refresh whose token endpoint the policy
// refuses, or that cannot be reached, fails with a payload, an operations
// log entry and a webhook that say address_not_allowed or
// provider_unreachable and nothing more.
func TestRefreshFollowsThePolicy(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		strict bool
		code   string
	}{{"refused", true, egress.CodeAddressNotAllowed}, {"unreachable", false, egress.CodeUnreachable}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rb := refreshSetup(t, sqliteBackend(t), func(cfg *connect.Config) {
				if tc.strict {
					cfg.Egress = egress.Policy{}
				}
			})
			rb.importOAuth(t, "fo", "c1", "rt-0", 5*time.Minute, "")
			_, port, _ := net.SplitHostPort(rb.ts.srv.Listener.Addr().String())
			if !tc.strict {
				rb.ts.srv.Close()
			}
			r := rb.do(t, req{method: "GET", path: "/connections/c1?provider_config_key=fo&force_refresh=true"})
			if r.status != 400 || r.errCode() != "refresh_token_external_error" {
				t.Fatalf("= %d %s", r.status, r.raw)
			}
			e := r.obj()["error"].(map[string]any)
			payload, _ := e["payload"].(map[string]any)
			if payload["error"] != tc.code || payload["provider_status"] != nil || leaksNetworkDetail(string(r.raw), port) != "" {
				t.Errorf("answer %s", r.raw)
			}
			if n := rb.ts.callCount(); n != 0 {
				t.Errorf("the token endpoint got %d calls", n)
			}
			logs, err := rb.svc.ListLogs(t.Context(), oplog.Filter{EnvironmentID: rb.env.ID, Type: "auth"})
			if err != nil || len(logs) == 0 {
				t.Fatalf("logs %v %v", logs, err)
			}
			l := logs[0]
			if l.Operation != "refresh" || l.Status != oplog.StatusFailure || leaksNetworkDetail(l.Message, port) != "" ||
				leaksNetworkDetail(fmt.Sprint(l.Meta), port) != "" || l.Meta["error"] != tc.code {
				t.Errorf("log entry %+v", l)
			}
			ev := authEvents(rb.events)
			if len(ev) != 1 || ev[0].Error == nil || ev[0].Error.Type != tc.code || leaksNetworkDetail(ev[0].Error.Description, port) != "" {
				t.Errorf("webhooks %+v", ev)
			}
		})
	}
}

// TestWebhooksFollowTheirPolicy: webhook deliveries follow
// Config.Webhooks.Policy: under the default one, a receiver on loopback
// is refused when its URL is set, and one stored anyway (set under an
// earlier, looser policy, or a host name that resolved elsewhere then)
// gets nothing: the delivery fails with "address not allowed" at dial
// time, naming the setting that allows private networks for webhooks.
func TestWebhooksFollowTheirPolicy(t *testing.T) {
	t.Parallel()
	rc := newHookReceiver(t, time.Now, always(http.StatusOK))
	b := sqliteBackend(t)
	st := b.lite
	bu := setupStrict(t, b, func(cfg *connect.Config) {
		// No slow schedule: the delivery fails after its first attempts.
		cfg.Webhooks = webhooks.DeliveryConfig{Backoff: time.Millisecond, Timeout: 5 * time.Second, Schedule: []time.Duration{}}
	})
	urls := []string{rc.srv.URL}
	if _, err := bu.svc.Environments().Update(t.Context(), bu.env.ID, environments.UpdateInput{WebhookURLs: &urls}); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("setting a loopback webhook URL under the default policy: %v", err)
	}
	env, err := st.GetEnvironment(t.Context(), bu.env.ID)
	if err != nil {
		t.Fatal(err)
	}
	env.WebhookURLs = urls
	if err := st.UpdateEnvironment(t.Context(), env); err != nil {
		t.Fatal(err)
	}
	if err := bu.svc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = bu.svc.Stop(ctx)
	})
	if err := bu.svc.Notify(t.Context(), authEvent(bu, "c1", webhooks.OperationCreation)); err != nil {
		t.Fatal(err)
	}
	const refused = "address not allowed (loopback and private network addresses are allowed by connect.Config.Webhooks.Policy.AllowPrivateNetworks)"
	ds := bu.settle(t, 1)
	if len(ds) != 1 || ds[0].Status != webhooks.StatusFailed || ds[0].LastError != refused {
		t.Fatalf("deliveries %+v", ds[0])
	}
	if n := len(rc.calls()); n != 0 {
		t.Errorf("the receiver got %d calls", n)
	}
	logs := deliveryLogs(t, bu, ds[0].ID)
	if len(logs) == 0 {
		t.Fatal("no delivery log entry")
	}
	for _, l := range logs {
		if w := leaksNetworkDetail(l.Message); w != "" || l.Meta["error"] != refused {
			t.Errorf("delivery log gives away %q: %+v", w, l)
		}
	}
}

// TestProxyPolicyIsTheEgressPolicy: Config.Proxy.Policy, the policy's name
// before Config.Egress, still works and now governs every provider call
// (here a credential check); set together with a different Egress it is
// refused by New.
func TestProxyPolicyIsTheEgressPolicy(t *testing.T) {
	t.Parallel()
	open := newCountingServer(t, http.StatusOK)
	cat := probeCatalog(t, map[string]string{"probe-open": open.srv.URL})
	bu := setupStrict(t, sqliteBackend(t), func(cfg *connect.Config) {
		cfg.Providers = cat
		cfg.Proxy.Policy = egress.Policy{AllowLoopback: true}
	})
	bu.mustDo(t, 200, req{method: "POST", path: "/integrations", body: `{"provider":"probe-open","unique_key":"p"}`})
	tok := bu.session(t, `{"tags":{"end_user_id":"u1"}}`)
	if r := bu.auth(t, "/api-auth/api-key/p", tok, "", `{"apiKey":"k"}`); r.status != 200 || open.hits.Load() != 1 {
		t.Errorf("credential check with Proxy.Policy allowing loopback: %d %s, %d hits", r.status, r.raw, open.hits.Load())
	}
	cfg := baseConfig(t)
	_, err := connect.New(connect.Config{Store: cfg.Store, Scheduler: cfg.Scheduler, EncryptionKeys: cfg.EncryptionKeys,
		Egress: egress.Policy{AllowPrivateNetworks: true}, Proxy: proxy.Config{Policy: egress.Policy{AllowLoopback: true}}})
	if err == nil {
		t.Error("New accepted a Proxy.Policy that differs from Egress")
	}
}
