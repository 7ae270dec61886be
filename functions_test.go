package connect_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/functions"
	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/oplog"
	"github.com/embedauth/connect/proxy"
	"github.com/embedauth/connect/webhooks"
)

// fnAPI is a fake provider API for functions: it records the requests it
// gets and answers with its handler.
type fnAPI struct {
	srv    *httptest.Server
	mu     sync.Mutex
	seen   []*http.Request
	handle func(w http.ResponseWriter, r *http.Request)
}

func newFnAPI(t *testing.T) *fnAPI {
	a := &fnAPI{}
	a.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		a.seen = append(a.seen, r.Clone(context.Background()))
		h := a.handle
		a.mu.Unlock()
		if h == nil {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"path":%q}`, r.URL.Path)
			return
		}
		h(w, r)
	}))
	t.Cleanup(a.srv.Close)
	return a
}

func (a *fnAPI) setHandle(h func(w http.ResponseWriter, r *http.Request)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.handle = h
}

func (a *fnAPI) requests() []*http.Request {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]*http.Request(nil), a.seen...)
}

// fnBundle is a Service on the real clock with an integration "fx" of a
// provider whose API is a fnAPI (API key in the X-Api-Key header) and a
// connection "c1" with the key "sk-1".
type fnBundle struct {
	*bundle
	api  *fnAPI
	hook *hookSink
}

// hookSink receives the environment's webhooks.
type hookSink struct {
	srv    *httptest.Server
	mu     sync.Mutex
	bodies []map[string]any
}

func newHookSink(t *testing.T) *hookSink {
	h := &hookSink{}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m map[string]any
		if err := json.NewDecoder(r.Body).Decode(&m); err == nil {
			h.mu.Lock()
			h.bodies = append(h.bodies, m)
			h.mu.Unlock()
		}
		w.WriteHeader(200)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

// ofType returns the webhooks received of a type.
func (h *hookSink) ofType(typ string) []map[string]any {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []map[string]any
	for _, b := range h.bodies {
		if b["type"] == typ {
			out = append(out, b)
		}
	}
	return out
}

func setupFunctions(t *testing.T, b *backend, register func(svc *connect.Service), mutate ...func(*connect.Config)) *fnBundle {
	t.Helper()
	return setupFunctionsAPI(t, b, register, nil, mutate...)
}

// setupFunctionsAPI is setupFunctions whose fake provider API answers with
// handle (nil: the default answer) from the start, before a run the new
// connection starts can call it.
func setupFunctionsAPI(t *testing.T, b *backend, register func(svc *connect.Service), handle func(w http.ResponseWriter, r *http.Request),
	mutate ...func(*connect.Config)) *fnBundle {
	t.Helper()
	api := newFnAPI(t)
	if handle != nil {
		api.setHandle(handle)
	}
	cat := fxCatalog(t, api.srv.URL)
	bu := setup(t, b, append([]func(*connect.Config){func(c *connect.Config) {
		c.Providers = cat
		c.Now = time.Now
		c.Functions.RetryBackoff = func(int) time.Duration { return 10 * time.Millisecond }
		c.Functions.TickInterval = 20 * time.Millisecond
		c.Functions.Heartbeat = 50 * time.Millisecond
	}}, mutate...)...)
	if register != nil {
		register(bu.svc)
	}
	sink := newHookSink(t)
	urls := []string{sink.srv.URL}
	if _, err := bu.svc.Environments().Update(context.Background(), bu.env.ID, environments.UpdateInput{WebhookURLs: &urls}); err != nil {
		t.Fatal(err)
	}
	bu.mustDo(t, 200, req{method: "POST", path: "/integrations", body: `{"provider":"fx-api","unique_key":"fx"}`})
	bu.mustDo(t, 201, req{method: "POST", path: "/connections",
		body: `{"provider_config_key":"fx","connection_id":"c1","api_key":"sk-1"}`})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := bu.svc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = bu.svc.Stop(ctx)
	})
	return &fnBundle{bundle: bu, api: api, hook: sink}
}

// fxCatalog is the provider catalogue with the provider "fx-api", whose
// API (at base) takes an API key in the X-Api-Key header.
func fxCatalog(t testing.TB, base string) *integrations.Catalog {
	t.Helper()
	cat, err := integrations.DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	cat, err = cat.With(&integrations.Provider{Name: "fx-api", DisplayName: "FX API", AuthMode: integrations.AuthModeAPIKey,
		Credentials: map[string]integrations.FieldSpec{"apiKey": {Type: "string", Title: "API key"}},
		Proxy:       &integrations.Proxy{BaseURL: base, Headers: map[string]string{"X-Api-Key": "${apiKey}"}}})
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

func actionReq(name, input string, header map[string]string) req {
	h := map[string]string{"Connection-Id": "c1", "Provider-Config-Key": "fx"}
	for k, v := range header {
		h[k] = v
	}
	body := fmt.Sprintf(`{"action_name":%q}`, name)
	if input != "" {
		body = fmt.Sprintf(`{"action_name":%q,"input":%s}`, name, input)
	}
	return req{method: "POST", path: "/action/trigger", header: h, body: body}
}

type echoIn struct {
	Title string `json:"title"`
	N     int    `json:"n,omitempty"` // optional: inputs may leave it out
}

type echoOut struct {
	Title    string `json:"title"`
	Upstream string `json:"upstream"`
}

// registerTestActions registers the 8 actions of the tests: echo (calls
// the provider and echoes its input), fail (an ActionError), missing (an
// ActionError with a Type), boom (a panic), big (an output of size bytes
// from its input), upstream (a provider call whose answer is not 2xx),
// refused and refused-sdk (calls to addresses the policy refuses, through
// the proxy and the SDK client).
func registerTestActions(t *testing.T, svc *connect.Service) {
	t.Helper()
	err := svc.Functions().Register(
		functions.NewAction("fx", "echo", func(ctx context.Context, c *functions.Context, in echoIn) (echoOut, error) {
			resp, err := c.Proxy(ctx, functions.ProxyRequest{Endpoint: "/issues"})
			if err != nil {
				return echoOut{}, err
			}
			var body struct {
				Path string `json:"path"`
			}
			if err := resp.JSON(&body); err != nil {
				return echoOut{}, err
			}
			return echoOut{Title: in.Title, Upstream: body.Path}, nil
		}),
		functions.NewAction("fx", "fail", func(ctx context.Context, c *functions.Context, in map[string]any) (any, error) {
			return nil, &functions.ActionError{Payload: map[string]any{"reason": "nope", "input": in}}
		}),
		functions.NewAction("fx", "missing", func(ctx context.Context, c *functions.Context, in map[string]any) (any, error) {
			return nil, &functions.ActionError{Type: "not_found", Payload: map[string]any{"message": "No such issue", "input": in}}
		}),
		functions.NewAction("fx", "boom", func(ctx context.Context, c *functions.Context, in struct{}) (any, error) {
			var m map[string]int
			m["x"]++ // a nil map: panics
			return nil, nil
		}),
		functions.NewAction("fx", "big", func(ctx context.Context, c *functions.Context, in struct{ Size int }) (string, error) {
			return strings.Repeat("a", in.Size), nil
		}),
		functions.NewAction("fx", "upstream", func(ctx context.Context, c *functions.Context, in struct{}) (any, error) {
			_, err := c.Proxy(ctx, functions.ProxyRequest{Endpoint: "/missing"})
			return nil, err
		}),
		functions.NewAction("fx", "refused", func(ctx context.Context, c *functions.Context, in struct{}) (any, error) {
			_, err := c.Proxy(ctx, functions.ProxyRequest{Endpoint: "/latest", BaseURLOverride: "http://169.254.169.254"})
			return nil, fmt.Errorf("read the metadata: %w", err)
		}),
		functions.NewAction("fx", "refused-sdk", func(ctx context.Context, c *functions.Context, in struct{}) (any, error) {
			resp, err := c.HTTPClient(proxy.Options{}).Get("http://10.0.0.7/latest")
			if err == nil {
				resp.Body.Close()
			}
			return nil, err
		}),
	)
	if err != nil {
		t.Fatal(err)
	}
}

func TestActionTrigger(t *testing.T) {
	backends(t, func(t *testing.T, b *backend) {
		bu := setupFunctions(t, b, func(svc *connect.Service) { registerTestActions(t, svc) })

		// A run answers the action's output; its provider call carries
		// the connection's key.
		r := bu.mustDo(t, 200, actionReq("echo", `{"title":"hello","n":2}`, nil))
		if got := r.obj(); got["title"] != "hello" || got["upstream"] != "/issues" {
			t.Errorf("echo answered %s", r.raw)
		}
		reqs := bu.api.requests()
		if len(reqs) != 1 || reqs[0].Header.Get("X-Api-Key") != "sk-1" {
			t.Fatalf("the provider got %d requests, the first with X-Api-Key %q", len(reqs), reqs[0].Header.Get("X-Api-Key"))
		}

		// An ActionError is 500 action_script_runtime_error with its payload.
		r = bu.mustDo(t, 500, actionReq("fail", `{"a":1}`, nil))
		e := r.obj()["error"].(map[string]any)
		if e["code"] != "action_script_runtime_error" || e["payload"].(map[string]any)["reason"] != "nope" {
			t.Errorf("fail answered %s", r.raw)
		}

		// Its Type is the payload's "type", first, as in Nango's payloads.
		r = bu.mustDo(t, 500, actionReq("missing", `{"id":9}`, nil))
		if !strings.Contains(string(r.raw), `"payload":{"type":"not_found","input":{"id":9},"message":"No such issue"}`) {
			t.Errorf("missing answered %s", r.raw)
		}

		// A panic is 500 script_internal_error; the host lives. The stack
		// is in the run's log entry, never in the answer.
		r = bu.mustDo(t, 500, actionReq("boom", "", nil))
		e = r.obj()["error"].(map[string]any)
		p, _ := e["payload"].(map[string]any)
		if e["code"] != "script_internal_error" || p["name"] != "panic" || !strings.Contains(fmt.Sprint(p["message"]), "nil map") {
			t.Errorf("boom answered %s", r.raw)
		}
		if _, ok := p["stacktrace"]; ok || strings.Contains(string(r.raw), "functions_test") || strings.Contains(string(r.raw), ".go:") {
			t.Errorf("the answer holds a stack: %s", r.raw)
		}
		waitFor(t, 10*time.Second, "the stack in the run's log entry", func() bool {
			es, err := bu.svc.ListLogs(context.Background(), oplog.Filter{EnvironmentID: bu.env.ID, Type: "action", Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range es {
				if e.Operation == "run" && e.Meta["function"] == "boom" && e.Status == oplog.StatusFailure {
					// []string, or []any once read back from JSON.
					return strings.Contains(fmt.Sprint(e.Meta["stacktrace"]), "functions_test.go")
				}
			}
			return false
		})

		// An upstream failure is 424 script_http_error with the upstream.
		bu.api.setHandle(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("X-RateLimit-Remaining", "7")
			w.WriteHeader(404)
			fmt.Fprint(w, `{"message":"Not Found"}`)
		})
		r = bu.mustDo(t, 424, actionReq("upstream", "", nil))
		e = r.obj()["error"].(map[string]any)
		up, _ := e["upstream"].(map[string]any)
		if e["code"] != "script_http_error" || up["status"] != float64(404) ||
			up["body"].(map[string]any)["message"] != "Not Found" ||
			up["headers"].(map[string]any)["content-type"] != "application/json" ||
			up["headers"].(map[string]any)["x-ratelimit-remaining"] != "7" {
			t.Errorf("upstream answered %s", r.raw)
		}
		bu.api.setHandle(nil)

		// A request the address policy refuses, through the proxy or the
		// SDK client, is answered as the proxy answers it: 403
		// upstream_address_refused, naming the setting and not the
		// address.
		for _, name := range []string{"refused", "refused-sdk"} {
			r = bu.mustDo(t, 403, actionReq(name, "", nil))
			e = r.obj()["error"].(map[string]any)
			if e["code"] != proxy.CodeAddressRefused || e["message"] != "The network policy refused the upstream: address not allowed "+
				"(loopback and private network addresses are allowed by connect.Config.Egress.AllowPrivateNetworks)." || e["payload"] != nil {
				t.Errorf("%s answered %s", name, r.raw)
			}
			if w := leaksNetworkDetail(string(r.raw)); w != "" || strings.Contains(string(r.raw), "10.0.0.7") {
				t.Errorf("%s: the answer gives away %q: %s", name, w, r.raw)
			}
		}

		// Outputs up to 10 MB pass whole; larger ones are refused, not cut.
		r = bu.mustDo(t, 200, actionReq("big", `{"Size":1000}`, nil))
		if s, _ := r.body.(string); len(s) != 1000 {
			t.Errorf("big(1000) answered %d bytes", len(r.raw))
		}
		r = bu.mustDo(t, 400, actionReq("big", fmt.Sprintf(`{"Size":%d}`, 10<<20), nil))
		if r.errCode() != "script_output_too_large" {
			t.Errorf("big(10 MB) answered %s", r.raw)
		}

		// Input that does not fit the action's type.
		r = bu.mustDo(t, 400, actionReq("echo", `{"title":5}`, nil))
		if r.errCode() != "invalid_action_input" {
			t.Errorf("echo with a bad input answered %s", r.raw)
		}
	})
}

func TestActionTriggerRefusals(t *testing.T) {
	backends(t, func(t *testing.T, b *backend) {
		bu := setupFunctions(t, b, func(svc *connect.Service) { registerTestActions(t, svc) })
		for _, tc := range []struct {
			name   string
			rq     req
			status int
			code   string
		}{
			{"unknown action", actionReq("nope", "", nil), 404, "not_found"},
			{"unknown connection", actionReq("echo", "", map[string]string{"Connection-Id": "zz"}), 400, "unknown_connection"},
			{"no connection header", req{method: "POST", path: "/action/trigger", header: map[string]string{"Provider-Config-Key": "fx"},
				body: `{"action_name":"echo"}`}, 400, "invalid_headers"},
			{"bad X-Async", actionReq("echo", "", map[string]string{"X-Async": "maybe"}), 400, "invalid_headers"},
			{"retries too many", actionReq("echo", "", map[string]string{"X-Async": "true", "X-Max-Retries": "6"}), 400, "invalid_headers"},
			{"no action name", req{method: "POST", path: "/action/trigger", header: map[string]string{"Provider-Config-Key": "fx", "Connection-Id": "c1"},
				body: `{"input":{}}`}, 400, "invalid_body"},
			{"not JSON", req{method: "POST", path: "/action/trigger", header: map[string]string{"Provider-Config-Key": "fx", "Connection-Id": "c1"},
				body: `{"action_name":`}, 400, "invalid_body"},
			{"query", req{method: "POST", path: "/action/trigger?x=1", header: map[string]string{"Provider-Config-Key": "fx", "Connection-Id": "c1"},
				body: `{"action_name":"echo"}`}, 400, "invalid_query_params"},
			{"result id not a UUID", req{method: "GET", path: "/action/123"}, 400, "invalid_uri_params"},
			{"result unknown", req{method: "GET", path: "/action/8c1b9a52-4a8e-4d43-9d53-3a3c8f1f3e11"}, 404, "not_found"},
		} {
			r := bu.do(t, tc.rq)
			if r.status != tc.status || r.errCode() != tc.code {
				t.Errorf("%s: %d %s, want %d %s", tc.name, r.status, r.raw, tc.status, tc.code)
			}
		}
		if n := len(bu.api.requests()); n != 0 {
			t.Errorf("refused calls reached the provider %d times", n)
		}
	})
}

// waitFor polls cond every 10 ms until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestActionAsync(t *testing.T) {
	backends(t, func(t *testing.T, b *backend) {
		var calls atomic.Int32
		gate := make(chan struct{})
		bu := setupFunctions(t, b, func(svc *connect.Service) {
			registerTestActions(t, svc)
			err := svc.Functions().Register(functions.NewAction("fx", "flaky", func(ctx context.Context, c *functions.Context, in struct{ FailTimes int32 }) (map[string]int32, error) {
				<-gate
				n := calls.Add(1)
				if n <= in.FailTimes {
					return nil, errors.New("not yet")
				}
				return map[string]int32{"attempt": n}, nil
			}))
			if err != nil {
				t.Fatal(err)
			}
		})
		r := bu.mustDo(t, 202, actionReq("flaky", `{"FailTimes":2}`, map[string]string{"X-Async": "true", "X-Max-Retries": "2"}))
		id, _ := r.obj()["id"].(string)
		if loc := r.header.Get("Location"); loc != "/action/"+id || r.obj()["statusUrl"] != "/action/"+id {
			t.Fatalf("async answer %s, Location %q", r.raw, loc)
		}
		// Pending: 404.
		bu.mustDo(t, 404, req{method: "GET", path: "/action/" + id})
		close(gate)
		var res *response
		waitFor(t, 20*time.Second, "the async action's result", func() bool {
			res = bu.do(t, req{method: "GET", path: "/action/" + id})
			return res.status != 404
		})
		if res.status != 200 || res.obj()["attempt"] != float64(3) {
			t.Fatalf("result %d %s, want 200 after the third attempt", res.status, res.raw)
		}
		// The async action webhook names the task.
		waitFor(t, 10*time.Second, "the async action webhook", func() bool {
			for _, h := range bu.hook.ofType(webhooks.TypeAsyncAction) {
				p, _ := h["payload"].(map[string]any)
				if p["id"] == id && p["statusUrl"] == "/action/"+id && h["connectionId"] == "c1" && h["providerConfigKey"] == "fx" {
					return true
				}
			}
			return false
		})

		// Retries exhausted: the last error is the result.
		calls.Store(0)
		r = bu.mustDo(t, 202, actionReq("flaky", `{"FailTimes":5}`, map[string]string{"X-Async": "true", "X-Max-Retries": "1"}))
		id = r.obj()["id"].(string)
		waitFor(t, 20*time.Second, "the failed async action", func() bool {
			res = bu.do(t, req{method: "GET", path: "/action/" + id})
			return res.status != 404
		})
		if res.status != 500 || res.errCode() != "script_internal_error" || calls.Load() != 2 {
			t.Fatalf("failed result %d %s after %d calls, want 500 script_internal_error after 2", res.status, res.raw, calls.Load())
		}

		// Another environment's key cannot read it.
		other := otherEnvKey(t, bu.bundle)
		bu.mustDo(t, 404, req{method: "GET", path: "/action/" + id, key: other})
	})
}

// otherEnvKey creates a second environment and returns a full key of it.
func otherEnvKey(t *testing.T, bu *bundle) string {
	t.Helper()
	ctx := context.Background()
	env, err := bu.svc.Environments().Create(ctx, environments.CreateInput{Name: "prod"})
	if err != nil {
		t.Fatal(err)
	}
	key, _, err := bu.svc.Environments().CreateAPIKey(ctx, env.ID, environments.NewAPIKey{Name: "full", Scopes: []string{environments.ScopeAll}})
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func TestActionFromGo(t *testing.T) {
	backends(t, func(t *testing.T, b *backend) {
		bu := setupFunctions(t, b, func(svc *connect.Service) { registerTestActions(t, svc) })
		var out echoOut
		err := bu.svc.Functions().TriggerAction(context.Background(), bu.env.ID, "fx", "c1", "echo", echoIn{Title: "go"}, &out)
		if err != nil || out.Title != "go" || out.Upstream != "/issues" {
			t.Fatalf("TriggerAction = %+v, %v", out, err)
		}
		err = bu.svc.Functions().TriggerAction(context.Background(), bu.env.ID, "fx", "c1", "fail", nil, nil)
		var re *functions.RunError
		if !errors.As(err, &re) || re.Failure.Status != 500 {
			t.Fatalf("TriggerAction(fail) = %v, want a *RunError of status 500", err)
		}
		h, err := bu.svc.Functions().TriggerActionAsync(context.Background(), functions.ActionCall{EnvironmentID: bu.env.ID,
			Integration: "fx", ConnectionID: "c1", Action: "echo", Input: json.RawMessage(`{"title":"later"}`)}, 0)
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, 20*time.Second, "the async result", func() bool {
			out, f, err := bu.svc.Functions().ActionResult(context.Background(), bu.env.ID, h.ID)
			if err != nil {
				return false
			}
			if f != nil {
				t.Fatalf("async echo failed: %+v", f)
			}
			return strings.Contains(string(out), "later")
		})
	})
}

// TestFunctionsFollowTheIntegration: an integration deleted and created
// again under the same key gets the functions registered for it again.
func TestFunctionsFollowTheIntegration(t *testing.T) {
	backends(t, func(t *testing.T, b *backend) {
		bu := setupFunctions(t, b, func(svc *connect.Service) { registerTestActions(t, svc) })
		r := bu.mustDo(t, 200, req{method: "GET", path: "/integrations/fx/functions"})
		if n := len(r.obj()["data"].([]any)); n != 8 {
			t.Fatalf("%d functions listed, want 8", n)
		}
		bu.mustDo(t, 200, req{method: "DELETE", path: "/integrations/fx"})
		bu.mustDo(t, 200, req{method: "POST", path: "/integrations", body: `{"provider":"fx-api","unique_key":"fx"}`})
		r = bu.mustDo(t, 200, req{method: "GET", path: "/integrations/fx/functions"})
		if n := len(r.obj()["data"].([]any)); n != 8 {
			t.Fatalf("after the integration was created again: %d functions listed, want 8", n)
		}
		bu.mustDo(t, 201, req{method: "POST", path: "/connections", body: `{"provider_config_key":"fx","connection_id":"c1","api_key":"sk-1"}`})
		bu.mustDo(t, 200, actionReq("echo", `{"title":"again"}`, nil))
	})
}

// echoRuntime is a Runtime for code deployed at run time: its "code" is
// the JSON its actions answer.
type echoRuntime struct{}

func (echoRuntime) RunAction(ctx context.Context, f *functions.Function, c *functions.Context, input json.RawMessage) (json.RawMessage, error) {
	return json.RawMessage(f.Code), nil
}

func (echoRuntime) RunSync(ctx context.Context, f *functions.Function, c *functions.SyncContext, webhook json.RawMessage) error {
	return c.Save(ctx, "Issue", []issue{{ID: "from-" + f.Runtime, Title: string(f.Code)}})
}

func (echoRuntime) RunOnEvent(ctx context.Context, f *functions.Function, c *functions.Context) error {
	return nil
}

// TestDeployAtRunTime: a function deployed at run time on a runtime the
// host added is listed and runs like a registered one; deleting it works.
func TestDeployAtRunTime(t *testing.T) {
	backends(t, func(t *testing.T, b *backend) {
		bu := setupFunctions(t, b, func(svc *connect.Service) {
			if err := svc.Functions().AddRuntime("echo", echoRuntime{}); err != nil {
				t.Fatal(err)
			}
		})
		ctx := context.Background()
		f := &functions.Function{EnvironmentID: bu.env.ID, Integration: "fx", Kind: functions.KindAction, Name: "hello",
			Runtime: "echo", Source: "deployed", Code: []byte(`{"hello":"world"}`)}
		if err := bu.svc.Functions().Deploy(ctx, f); err != nil {
			t.Fatal(err)
		}
		r := bu.mustDo(t, 200, actionReq("hello", "", nil))
		if r.obj()["hello"] != "world" {
			t.Fatalf("the deployed action answered %s", r.raw)
		}
		r = bu.mustDo(t, 200, req{method: "GET", path: "/integrations/fx/functions/hello/code"})
		if r.obj()["code"] != `{"hello":"world"}` {
			t.Errorf("code answered %s", r.raw)
		}
		// A new version replaces it at once.
		f.Code, f.Version = []byte(`{"hello":"again"}`), ""
		if err := bu.svc.Functions().Deploy(ctx, f); err != nil {
			t.Fatal(err)
		}
		if r := bu.mustDo(t, 200, actionReq("hello", "", nil)); r.obj()["hello"] != "again" || f.Version != "2" {
			t.Fatalf("after a redeploy: %s, version %q", r.raw, f.Version)
		}
		// A sync deployed at run time runs for the existing connection.
		s := &functions.Function{EnvironmentID: bu.env.ID, Integration: "fx", Kind: functions.KindSync, Name: "deployed-sync",
			Runtime: "echo", Code: []byte("t"), Definition: functions.Definition{Runs: "1h", AutoStart: true,
				Models: []functions.Model{functions.ModelOf[issue]("Issue")}}}
		if err := bu.svc.Functions().Deploy(ctx, s); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 10*time.Second, "the deployed sync's run", func() bool {
			r := bu.mustDo(t, 200, req{method: "GET", path: "/sync/status?syncs=deployed-sync&provider_config_key=fx&connection_id=c1"})
			st := r.obj()["syncs"].([]any)[0].(map[string]any)
			return st["status"] == functions.StatusSuccess && st["recordCount"].(map[string]any)["Issue"] == float64(1)
		})
		bu.mustDo(t, 200, req{method: "DELETE", path: "/integrations/fx/functions/hello?type=action"})
		bu.mustDo(t, 404, actionReq("hello", "", nil))
		if err := bu.svc.Functions().Deploy(ctx, &functions.Function{EnvironmentID: bu.env.ID, Integration: "fx",
			Kind: functions.KindAction, Name: "x", Runtime: "nope"}); err == nil {
			t.Error("Deploy on a runtime the host did not add succeeded")
		}
	})
}
