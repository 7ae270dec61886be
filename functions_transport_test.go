package connect_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/functions"
	"github.com/embedauth/connect/oplog"
	"github.com/embedauth/connect/proxy"
	"github.com/embedauth/connect/webhooks"
)

// TestFunctionCallsThatGetNoAnswer: a provider call of a function that
// gets no answer (here a refused connection: a port nobody listens on
// any more) is answered as the proxy answers it, 502 upstream_error
// without the address, the port, the URL or the dial error, whether the
// call went through Context.Proxy or a client of Context.HTTPClient:
// in the answer of POST /action/trigger, the result of an async action
// and its webhook, a sync's failure webhook, and the 400 of a
// validate-connection function, over the API and over a connect session.
// A provider that does not answer in time is 504 upstream_timeout. The
// run's operations log entry keeps the dial error. An error the
// function returns itself keeps its text.
func TestFunctionCallsThatGetNoAnswer(t *testing.T) {
	backends(t, func(t *testing.T, b *backend) {
		closed := closedURL(t)
		_, port, err := net.SplitHostPort(strings.TrimPrefix(closed, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		// leaks reports what of s would tell where the call went and how
		// it failed.
		leaks := func(s string) string {
			if w := leaksNetworkDetail(s, port); w != "" {
				return w
			}
			if strings.Contains(s, "/users") {
				return "/users"
			}
			return ""
		}
		// A provider that never answers: the proxy's header timeout ends
		// the calls to it.
		release := make(chan struct{})
		silent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-release:
			}
		}))
		t.Cleanup(silent.Close)
		t.Cleanup(func() { close(release) }) // first: the handlers return
		_, silentPort, _ := net.SplitHostPort(strings.TrimPrefix(silent.URL, "http://"))
		sdkCall := func(ctx context.Context, c *functions.Context) error {
			resp, err := c.HTTPClient(proxy.Options{}).Get(closed + "/users?page=2")
			if err != nil {
				return fmt.Errorf("list the users: %w", err)
			}
			resp.Body.Close()
			return nil
		}
		bu := setupFunctions(t, b, func(svc *connect.Service) {
			err := svc.Functions().Register(
				functions.NewAction("fx", "sdk", func(ctx context.Context, c *functions.Context, in struct{}) (any, error) {
					return nil, sdkCall(ctx, c)
				}),
				functions.NewAction("fx", "proxied", func(ctx context.Context, c *functions.Context, in struct{}) (any, error) {
					_, err := c.Proxy(ctx, functions.ProxyRequest{Endpoint: "/users", BaseURLOverride: closed})
					return nil, err
				}),
				functions.NewAction("fx", "slow", func(ctx context.Context, c *functions.Context, in struct{}) (any, error) {
					resp, err := c.HTTPClient(proxy.Options{}).Get(silent.URL + "/users")
					if err == nil {
						resp.Body.Close()
					}
					return nil, err
				}),
				functions.NewAction("fx", "plain", func(ctx context.Context, c *functions.Context, in struct{}) (any, error) {
					return nil, errors.New("the account is locked")
				}),
				functions.OnEvent{Integration: "fx", Name: "check", Event: functions.EventValidateConnection,
					Run: func(ctx context.Context, c *functions.Context) error {
						conn, err := c.Connection(ctx)
						if err != nil {
							return err
						}
						if conn.Credentials.APIKey == "unreachable" {
							return sdkCall(ctx, c)
						}
						return nil
					}},
				functions.Sync{Integration: "fx", Name: "users", Frequency: "1h", AutoStart: true,
					Models: []functions.Model{functions.ModelOf[issue]("Issue")},
					Run: func(ctx context.Context, s *functions.SyncContext) error {
						return sdkCall(ctx, s.Context)
					}},
			)
			if err != nil {
				t.Fatal(err)
			}
		}, func(cfg *connect.Config) { cfg.Proxy.ResponseHeaderTimeout = 200 * time.Millisecond })
		const msg = "The upstream failed: could not reach the provider."
		// runEntry waits for the failed run entry of a function (of the
		// log type typ) that holds the dial error, and returns it.
		runEntry := func(typ, function string, match func(e *oplog.Entry) bool) *oplog.Entry {
			t.Helper()
			var found *oplog.Entry
			waitFor(t, 20*time.Second, "the log entry of "+function, func() bool {
				es, err := bu.svc.ListLogs(context.Background(), oplog.Filter{EnvironmentID: bu.env.ID, Type: typ, Limit: 100})
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range es {
					if e.Operation == "run" && e.Meta["function"] == function && e.Status == oplog.StatusFailure && (match == nil || match(e)) {
						found = e
						return true
					}
				}
				return false
			})
			d, _ := found.Meta["error_detail"].(string)
			if !strings.Contains(d, "connection refused") || !strings.Contains(d, port) || strings.Contains(d, "/users") {
				t.Errorf("%s: the log entry's error_detail is %q, want the dial error without the URL's path", function, d)
			}
			return found
		}

		// Synchronous actions, through the SDK client and the proxy.
		for _, name := range []string{"sdk", "proxied"} {
			r := bu.mustDo(t, 502, actionReq(name, "", nil))
			e := r.obj()["error"].(map[string]any)
			if e["code"] != proxy.CodeUpstreamError || e["message"] != msg || e["payload"] != nil {
				t.Errorf("%s answered %s", name, r.raw)
			}
			if w := leaks(string(r.raw)); w != "" {
				t.Errorf("%s: the answer gives away %q: %s", name, w, r.raw)
			}
			if e := runEntry("action", name, nil); e.Meta["error"] != proxy.CodeUpstreamError {
				t.Errorf("%s: the log entry's error is %v", name, e.Meta["error"])
			}
		}

		// A provider that does not answer in time: 504 upstream_timeout,
		// not the run's own execution_timeout.
		r := bu.mustDo(t, 504, actionReq("slow", "", nil))
		if e := r.obj()["error"].(map[string]any); e["code"] != proxy.CodeUpstreamTimeout ||
			e["message"] != "The upstream did not answer in time: could not reach the provider." {
			t.Errorf("slow answered %s", r.raw)
		}
		if w := leaksNetworkDetail(string(r.raw), silentPort); w != "" || strings.Contains(string(r.raw), "timeout awaiting") {
			t.Errorf("slow: the answer gives away %q: %s", w, r.raw)
		}

		// An error of the function's own keeps its text.
		r = bu.mustDo(t, 500, actionReq("plain", "", nil))
		if p, _ := r.obj()["error"].(map[string]any)["payload"].(map[string]any); r.errCode() != "script_internal_error" ||
			p["name"] != "error" || p["message"] != "the account is locked" {
			t.Errorf("plain answered %s", r.raw)
		}

		// An async action: its stored result, and its webhook.
		r = bu.mustDo(t, 202, actionReq("sdk", "", map[string]string{"X-Async": "true", "X-Max-Retries": "0"}))
		id, _ := r.obj()["id"].(string)
		var res *response
		waitFor(t, 20*time.Second, "the async action's result", func() bool {
			res = bu.do(t, req{method: "GET", path: "/action/" + id})
			return res.status != 404
		})
		if res.status != 502 || res.errCode() != proxy.CodeUpstreamError || res.obj()["error"].(map[string]any)["message"] != msg {
			t.Errorf("the async result is %d %s", res.status, res.raw)
		}
		if w := leaks(string(res.raw)); w != "" {
			t.Errorf("the async result gives away %q: %s", w, res.raw)
		}
		runEntry("action", "sdk", func(e *oplog.Entry) bool { return e.Meta["task_id"] == id })
		waitFor(t, 10*time.Second, "the async action webhook", func() bool {
			for _, h := range bu.hook.ofType(webhooks.TypeAsyncAction) {
				if p, _ := h["payload"].(map[string]any); p["id"] == id {
					b, _ := json.Marshal(h)
					if w := leaks(string(b)); w != "" {
						t.Errorf("the async action webhook gives away %q: %s", w, b)
					}
					return true
				}
			}
			return false
		})

		// The sync (started with the connection): its failure webhook.
		waitFor(t, 20*time.Second, "the failed sync's webhook", func() bool {
			for _, h := range bu.hook.ofType(webhooks.TypeSync) {
				if h["syncName"] != "users" || h["success"] != false {
					continue
				}
				b, _ := json.Marshal(h)
				if e, _ := h["error"].(map[string]any); e["type"] != "script_error" || e["description"] != msg {
					t.Errorf("the sync's failure webhook: %s", b)
				}
				if w := leaks(string(b)); w != "" {
					t.Errorf("the sync's failure webhook gives away %q: %s", w, b)
				}
				return true
			}
			return false
		})
		runEntry("sync", "users", nil)

		// A validate-connection function, for an import and through a
		// connect session: refused, with the proxy's words only, and no
		// connection is left.
		r = bu.mustDo(t, 400, req{method: "POST", path: "/connections", body: `{"provider_config_key":"fx","connection_id":"c2","api_key":"unreachable"}`})
		tok := bu.session(t, `{"end_user":{"id":"u1"},"allowed_integrations":["fx"]}`)
		r2 := bu.auth(t, "/api-auth/api-key/fx", tok, "connection_id=c3", `{"apiKey":"unreachable"}`)
		for i, r := range []*response{r, r2} {
			if r.status != 400 || r.errCode() != "connection_validation_failed" || r.obj()["error"].(map[string]any)["message"] != msg {
				t.Errorf("validation %d answered %d %s", i, r.status, r.raw)
			}
			if w := leaks(string(r.raw)); w != "" {
				t.Errorf("validation %d: the answer gives away %q: %s", i, w, r.raw)
			}
		}
		bu.mustDo(t, 404, req{method: "GET", path: "/connections/c2?provider_config_key=fx"})
		bu.mustDo(t, 404, req{method: "GET", path: "/connections/c3?provider_config_key=fx"})
		// (The session's connection gets an id of its own.)
		runEntry("on-event", "check", func(e *oplog.Entry) bool { return e.ConnectionID == "c2" })
		runEntry("on-event", "check", func(e *oplog.Entry) bool { return e.ConnectionID != "c2" })
		es, err := bu.svc.ListLogs(context.Background(), oplog.Filter{EnvironmentID: bu.env.ID, Type: "auth", Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			b, _ := json.Marshal(e)
			if w := leaks(string(b)); w != "" {
				t.Errorf("an auth log entry gives away %q: %s", w, b)
			}
		}
	})
}
