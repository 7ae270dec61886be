package connect_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/functions"
	"github.com/embedauth/connect/functions/jsruntime"
)

// deployJS deploys JavaScript code (a CommonJS module as the nango CLI
// compiles a function to) as a function of the integration fx.
func deployJS(t *testing.T, bu *fnBundle, kind functions.Kind, name, code string, def functions.Definition) *functions.Function {
	t.Helper()
	f := &functions.Function{EnvironmentID: bu.env.ID, Integration: "fx", Kind: kind, Name: name,
		Runtime: jsruntime.Name, Source: "repo", Code: []byte(code), Definition: def}
	if err := bu.svc.Functions().Deploy(context.Background(), f); err != nil {
		t.Fatal(err)
	}
	return f
}

// jsAction is the module of an action whose exec is body.
func jsAction(body string) string {
	return "module.exports.default = { type: 'action', exec: async (nango, input) => {\n" + body + "\n} };\n"
}

func TestJSActionRuns(t *testing.T) {
	backends(t, func(t *testing.T, b *backend) {
		bu := setupFunctionsAPI(t, b, nil, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("X-Rate-Remaining", "7")
			switch r.URL.Path {
			case "/items":
				var in map[string]any
				_ = json.NewDecoder(r.Body).Decode(&in)
				fmt.Fprintf(w, `{"id":42,"title":%q,"key":%q,"q":%q}`, in["title"], r.Header.Get("X-Api-Key"), r.URL.RawQuery)
			case "/missing":
				w.WriteHeader(404)
				fmt.Fprint(w, `{"message":"no such thing"}`)
			default:
				fmt.Fprintf(w, `{"path":%q}`, r.URL.Path)
			}
		})
		deployJS(t, bu, functions.KindAction, "create", jsAction(`
			const res = await nango.post({ endpoint: '/items', data: { title: input.title }, params: { a: 1, b: ['x', 'y'] } });
			return { id: String(res.data.id), title: res.data.title, status: res.status, rate: res.headers['x-rate-remaining'],
				key: res.data.key, q: res.data.q, conn: nango.connectionId, pck: nango.providerConfigKey, type: nango.scriptType };`), functions.Definition{})
		r := bu.mustDo(t, 200, actionReq("create", `{"title":"hello"}`, nil))
		want := map[string]any{"id": "42", "title": "hello", "status": float64(200), "rate": "7", "key": "sk-1",
			"q": "a=1&b=x&b=y", "conn": "c1", "pck": "fx", "type": "action"}
		for k, v := range want {
			if r.obj()[k] != v {
				t.Errorf("%s = %v, want %v (answer %s)", k, r.obj()[k], v, r.raw)
			}
		}

		// A provider's answer outside 2xx throws an Axios-shaped error
		// that user code reads; let through, it is 424 script_http_error.
		deployJS(t, bu, functions.KindAction, "read-error", jsAction(`
			try { await nango.get({ endpoint: '/missing' }); return { thrown: false }; }
			catch (e) { return { thrown: true, axios: e.isAxiosError, status: e.response.status, msg: e.response.data.message, name: e.name }; }`), functions.Definition{})
		r = bu.mustDo(t, 200, actionReq("read-error", "", nil))
		if o := r.obj(); o["thrown"] != true || o["axios"] != true || o["status"] != float64(404) || o["msg"] != "no such thing" {
			t.Errorf("the caught error: %s", r.raw)
		}
		deployJS(t, bu, functions.KindAction, "let-error", jsAction(`await nango.get({ endpoint: '/missing' });`), functions.Definition{})
		r = bu.mustDo(t, 424, actionReq("let-error", "", nil))
		e := r.obj()["error"].(map[string]any)
		if e["code"] != "script_http_error" || e["upstream"].(map[string]any)["status"] != float64(404) {
			t.Errorf("an escaped provider error answered %s", r.raw)
		}

		// ActionError: 500 action_script_runtime_error with its payload.
		deployJS(t, bu, functions.KindAction, "refuse", jsAction(`throw new nango.ActionError({ message: 'no', code: 'refused' });`), functions.Definition{})
		r = bu.mustDo(t, 500, actionReq("refuse", "", nil))
		e = r.obj()["error"].(map[string]any)
		if p, _ := e["payload"].(map[string]any); e["code"] != "action_script_runtime_error" || p["message"] != "no" || p["code"] != "refused" {
			t.Errorf("an ActionError answered %s", r.raw)
		}

		// Any other error: 500 script_internal_error with its name,
		// message and the frames of the function's code.
		deployJS(t, bu, functions.KindAction, "oops", jsAction(`const x = null;
			return x.field;`), functions.Definition{})
		r = bu.mustDo(t, 500, actionReq("oops", "", nil))
		e = r.obj()["error"].(map[string]any)
		p, _ := e["payload"].(map[string]any)
		if e["code"] != "script_internal_error" || p["name"] != "TypeError" || !strings.Contains(fmt.Sprint(p["message"]), "field") {
			t.Errorf("a TypeError answered %s", r.raw)
		}
		if st, _ := p["stacktrace"].([]any); len(st) == 0 || !strings.Contains(fmt.Sprint(st[0]), "fx_actions_oops.cjs:3:") {
			t.Errorf("the stack trace %v does not point at the line of the module", p["stacktrace"])
		}
	})
}

// TestJSSandbox: what a function may not do fails its run with a clear
// error, and the host and the next run go on.
func TestJSSandbox(t *testing.T) {
	backends(t, func(t *testing.T, b *backend) {
		bu := setupFunctions(t, b, nil, func(c *connect.Config) {
			c.Functions.ActionTimeout = 2 * time.Second
			c.Functions.JavaScript = jsruntime.Options{Memory: 32 << 20}
		})
		cases := []struct {
			name, body, code, want string
		}{
			{"process", `return process.env;`, "script_internal_error", "'process' is not defined"},
			{"fs", `require('fs'); return 1;`, "script_internal_error", "Cannot find module 'fs'"},
			{"child-process", `require('child_process'); return 1;`, "script_internal_error", "Cannot find module 'child_process'"},
			{"eval", `return eval('1 + 1');`, "script_internal_error", "code generation from strings"},
			{"new-function", `return new Function('return 1')();`, "script_internal_error", "code generation from strings"},
			{"fetch", `return await fetch('http://127.0.0.1/');`, "script_internal_error", "'fetch' is not defined"},
			{"loop", `for (;;) {}`, "execution_timeout", ""},
			{"memory", `const a = []; for (;;) a.push({ x: a.length, y: 'x' + a.length });`, "script_internal_error", "more memory than its limit"},
			{"recursion", `const f = (n) => f(n + 1) + 1; return f(0);`, "script_internal_error", "nested deeper"},
			{"huge-string", `let s = 'x'; for (;;) s = s + s; `, "script_internal_error", "string too long"},
			{"refused-address", `return await nango.get({ endpoint: '/x', baseUrlOverride: 'http://169.254.169.254' });`, "upstream_address_refused", ""},
		}
		for _, c := range cases {
			deployJS(t, bu, functions.KindAction, c.name, jsAction(c.body), functions.Definition{})
		}
		deployJS(t, bu, functions.KindAction, "pollute", jsAction(`Object.prototype.polluted = 'yes'; Array.prototype.push = () => 0; return 'done';`), functions.Definition{})
		deployJS(t, bu, functions.KindAction, "check", jsAction(`return { polluted: ({}).polluted === undefined ? 'no' : 'yes', push: [].push(1) };`), functions.Definition{})
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				r := bu.do(t, actionReq(c.name, "", nil))
				if r.status < 400 {
					t.Fatalf("the run succeeded: %d %s", r.status, r.raw)
				}
				e, _ := r.obj()["error"].(map[string]any)
				if c.code != "" && e["code"] != c.code {
					t.Errorf("code %v, want %s: %s", e["code"], c.code, r.raw)
				}
				if c.want != "" && !strings.Contains(string(r.raw), c.want) {
					t.Errorf("the answer %s does not say %q", r.raw, c.want)
				}
			})
		}
		bu.mustDo(t, 200, actionReq("pollute", "", nil))
		r := bu.mustDo(t, 200, actionReq("check", "", nil))
		if r.obj()["polluted"] != "no" || r.obj()["push"] != float64(1) {
			t.Errorf("one run's changes to the built-ins reached the next: %s", r.raw)
		}
	})
}
