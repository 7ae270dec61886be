package connect_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
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
			case "/echo":
				body, _ := io.ReadAll(r.Body)
				fmt.Fprintf(w, `{"type":%q,"body":%q}`, r.Header.Get("Content-Type"), body)
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

		// The body of a request: a URLSearchParams is a form, a Buffer
		// (any Uint8Array) its bytes, anything else JSON.
		deployJS(t, bu, functions.KindAction, "bodies", jsAction(`
			const form = await nango.post({ endpoint: '/echo', data: new URLSearchParams({ a: '1', b: 'x y' }) });
			const bytes = await nango.post({ endpoint: '/echo', data: Buffer.from('héllo') });
			const json = await nango.post({ endpoint: '/echo', data: { k: [1] } });
			return { form: form.data, bytes: bytes.data, json: json.data };`), functions.Definition{})
		r = bu.mustDo(t, 200, actionReq("bodies", "", nil))
		if string(r.raw) != `{"form":{"type":"application/x-www-form-urlencoded","body":"a=1&b=x+y"},"bytes":{"type":"","body":"héllo"},"json":{"type":"application/json","body":"{\"k\":[1]}"}}` {
			t.Errorf("the bodies the provider got: %s", r.raw)
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
			{"long-builtin", `return /(a+)+$/.test('a'.repeat(40) + '!');`, "execution_timeout", ""},
			// Large steps, so that the limit is reached long before the
			// deadline however busy the machine is.
			{"memory", `const a = []; for (;;) a.push(new Array(65536).fill(a.length));`, "script_internal_error", "more memory than its limit"},
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

// jsIssueSync reads the issueAPI with nango.paginate, saves pages with
// batchSave, checkpoints each page, detects deletes, and reports what
// listRecords and getRecordsByIds read into the connection's metadata.
const jsIssueSync = `"use strict";
module.exports.default = {
	type: 'sync',
	exec: async (nango) => {
		const cp = await nango.getCheckpoint();
		await nango.trackDeletesStart('Issue');
		let pages = 0;
		for await (const page of nango.paginate({ endpoint: '/issues',
			paginate: { type: 'cursor', cursor_name_in_request: 'cursor', cursor_path_in_response: 'next', response_path: 'issues' } })) {
			await nango.batchSave(page.map((i) => ({ ...i, _nango_metadata: { x: 1 } })), 'Issue');
			pages++;
			await nango.saveCheckpoint({ runs: ((cp && cp.runs) || 0) + 1, pages });
		}
		await nango.trackDeletesEnd('Issue');
		const seen = [];
		for await (const r of nango.listRecords('Issue')) seen.push(r.id);
		const got = await nango.getRecordsByIds(['i1', 'nope'], 'Issue');
		await nango.updateMetadata({ listed: seen.length, got: got.size, title: got.get('i1').title, variant: nango.variant,
			first: nango.lastSyncDate === undefined, pages });
	},
	onWebhook: async (nango, payload) => {
		await nango.batchUpdate([{ id: payload.id, title: payload.title }], 'Issue');
	},
};
`

func TestJSSyncRuns(t *testing.T) {
	backends(t, func(t *testing.T, b *backend) {
		api := &issueAPI{pageSize: 100}
		api.set(250, func(i int) string { return "issue " + strconv.Itoa(i) })
		fb := setupFunctionsAPI(t, b, nil, func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/issues" {
				api.serve(w, r)
				return
			}
			http.NotFound(w, r)
		})
		f := &syncFixture{fnBundle: fb, issues: api}
		start := time.Now()
		deployJS(t, fb, functions.KindSync, "issues", jsIssueSync, functions.Definition{Runs: "every hour", AutoStart: true,
			Models: []functions.Model{functions.ModelOf[issue]("Issue")}})
		st := f.waitRun(t, "issues", start)
		if st["status"] != functions.StatusSuccess {
			t.Fatalf("the JavaScript sync's run: %v", st)
		}
		if res := st["latestResult"].(map[string]any)["Issue"].(map[string]any); res["added"] != float64(250) {
			t.Fatalf("the run counted %v, want 250 added", res)
		}
		recs := f.records(t, "")
		if len(recs) != 250 || recs[0]["title"] == nil || recs[0]["_nango_metadata"].(map[string]any)["x"] != nil {
			t.Fatalf("GET /records listed %d records (first %v)", len(recs), recs[0])
		}
		meta := fb.mustDo(t, 200, req{method: "GET", path: "/connection/c1?provider_config_key=fx"}).obj()["metadata"].(map[string]any)
		if meta["listed"] != float64(250) || meta["got"] != float64(1) || meta["title"] != "issue 1" || meta["variant"] != "base" || meta["first"] != true || meta["pages"] != float64(3) {
			t.Errorf("what the run read: %v", meta)
		}
		if cp, _ := st["checkpoint"].(map[string]any); cp["runs"] != float64(1) || cp["pages"] != float64(3) {
			t.Errorf("the checkpoint after the run: %v", st["checkpoint"])
		}

		// Ten issues gone: the next run deletes their records.
		api.set(240, func(i int) string { return "issue " + strconv.Itoa(i) })
		before := time.Now()
		fb.mustDo(t, 200, req{method: "POST", path: "/sync/trigger", body: `{"syncs":["issues"],"provider_config_key":"fx","connection_id":"c1"}`})
		st = f.waitRun(t, "issues", before)
		if res := st["latestResult"].(map[string]any)["Issue"].(map[string]any); st["status"] != functions.StatusSuccess || res["deleted"] != float64(10) {
			t.Fatalf("the second run: %v", st)
		}
		if del := f.records(t, "&filter=deleted"); len(del) != 10 {
			t.Errorf("%d deleted records, want 10", len(del))
		}
		meta = fb.mustDo(t, 200, req{method: "GET", path: "/connection/c1?provider_config_key=fx"}).obj()["metadata"].(map[string]any)
		if meta["first"] != false {
			t.Errorf("lastSyncDate on the second run: first = %v", meta["first"])
		}
	})
}

func TestJSOnEvent(t *testing.T) {
	backends(t, func(t *testing.T, b *backend) {
		bu := setupFunctions(t, b, nil)
		deployJS(t, bu, functions.KindOnEvent, "setup", `module.exports.default = { type: 'onEvent', event: 'post-connection-creation',
			exec: async (nango) => { await nango.log('setting up', { level: 'info' }); await nango.setMetadata({ set_up: nango.connectionId, type: nango.scriptType }); } };`,
			functions.Definition{Event: functions.EventPostConnectionCreation})
		bu.mustDo(t, 201, req{method: "POST", path: "/connections", body: `{"provider_config_key":"fx","connection_id":"c2","api_key":"sk-2"}`})
		waitFor(t, 20*time.Second, "the on-event function's metadata", func() bool {
			m, _ := bu.mustDo(t, 200, req{method: "GET", path: "/connection/c2?provider_config_key=fx"}).obj()["metadata"].(map[string]any)
			return m["set_up"] == "c2" && m["type"] == "on-event"
		})
	})
}

// cliBundle reads a function as the nango CLI compiled it
// (e2e/nango-project, built into functions/jsruntime/testdata/cli).
func cliBundle(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("functions", "jsruntime", "testdata", "cli", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// itemsAPI is the fake API of e2e/nango-project: GET /items lists items
// in pages (cursor in "next"), POST /items creates one.
type itemsAPI struct {
	mu    sync.Mutex
	items []map[string]any
}

func (a *itemsAPI) serve(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.Method == "GET" && r.URL.Path == "/items":
		start, _ := strconv.Atoi(r.URL.Query().Get("cursor"))
		end := min(start+100, len(a.items))
		body := map[string]any{"items": a.items[start:end]}
		if end < len(a.items) {
			body["next"] = strconv.Itoa(end)
		}
		_ = json.NewEncoder(w).Encode(body)
	case r.Method == "POST" && r.URL.Path == "/items":
		var in map[string]any
		_ = json.NewDecoder(r.Body).Decode(&in)
		if in["title"] == "null" { // an answer the function does not expect
			fmt.Fprint(w, "null")
			return
		}
		in["id"] = len(a.items) + 1000
		a.items = append(a.items, in)
		w.WriteHeader(201)
		_ = json.NewEncoder(w).Encode(in)
	default:
		http.NotFound(w, r)
	}
}

// TestJSCLIBundles runs the functions of e2e/nango-project as the real
// nango CLI compiled them: zod, crypto, Buffer and URL, pagination with
// on_page checkpoints, trackDeletes, an ActionError, an on-event function,
// errors mapped to the TypeScript source.
func TestJSCLIBundles(t *testing.T) {
	backends(t, func(t *testing.T, b *backend) {
		api := &itemsAPI{}
		for i := range 230 {
			api.items = append(api.items, map[string]any{"id": i, "title": "item " + strconv.Itoa(i), "n": i})
		}
		fb := setupFunctionsAPI(t, b, nil, api.serve)
		f := &syncFixture{fnBundle: fb}
		deployJS(t, fb, functions.KindAction, "create-item", cliBundle(t, "fake_actions_create-item.cjs"), functions.Definition{})
		deployJS(t, fb, functions.KindAction, "whoami", cliBundle(t, "fake_actions_whoami.cjs"), functions.Definition{})
		deployJS(t, fb, functions.KindOnEvent, "setup", cliBundle(t, "fake_on-events_setup.cjs"),
			functions.Definition{Event: functions.EventPostConnectionCreation})

		r := fb.mustDo(t, 200, actionReq("create-item", `{"title":"new one","n":3}`, nil))
		if r.obj()["title"] != "new one" || r.obj()["id"] != "1230" {
			t.Errorf("create-item answered %s", r.raw)
		}
		r = fb.mustDo(t, 500, actionReq("create-item", `{"title":"boom"}`, nil))
		e := r.obj()["error"].(map[string]any)
		if p, _ := e["payload"].(map[string]any); e["code"] != "action_script_runtime_error" || p["message"] != "boom refused" || p["code"] != "refused" {
			t.Errorf("the ActionError answered %s", r.raw)
		}
		// A TypeError in the function points at its TypeScript line, as
		// the CLI's source map gives it: a line of the source after the
		// CLI's own rewrite (createAction's object inlined), which the map
		// holds as sourcesContent, as Nango's runner reports it.
		r = fb.mustDo(t, 500, actionReq("create-item", `{"title":"null"}`, nil))
		e = r.obj()["error"].(map[string]any)
		p, _ := e["payload"].(map[string]any)
		if st, _ := p["stacktrace"].([]any); e["code"] != "script_internal_error" || p["name"] != "TypeError" || len(st) == 0 ||
			!strings.HasPrefix(fmt.Sprint(st[0]), "exec (fake/actions/create-item.ts:34:") {
			t.Errorf("a TypeError answered %s", r.raw)
		}
		fb.mustDo(t, 200, req{method: "PATCH", path: "/connection/metadata", body: `{"connection_id":"c1","provider_config_key":"fx","metadata":{"team":"blue","baseUrl":"https://api.fake.test/base"}}`})
		r = fb.mustDo(t, 200, actionReq("whoami", `{}`, nil))
		// The metadata's keys come back sorted, as the API answers them.
		sum := sha256.Sum256([]byte(`{"baseUrl":"https://api.fake.test/base","team":"blue"}`))
		want := map[string]any{"connectionId": "c1", "providerConfigKey": "fx", "metadataHash": hex.EncodeToString(sum[:]),
			"token": base64.StdEncoding.EncodeToString([]byte("c1:fx")), "host": "api.fake.test"}
		for k, v := range want {
			if r.obj()[k] != v {
				t.Errorf("whoami: %s = %v, want %v", k, r.obj()[k], v)
			}
		}

		start := time.Now()
		deployJS(t, fb, functions.KindSync, "items", cliBundle(t, "fake_syncs_items.cjs"), functions.Definition{Runs: "every hour", AutoStart: true,
			Models: []functions.Model{{Name: "Item", Schema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"},"title":{"type":"string"},"n":{"type":"number"}},"required":["id","title","n"]}`)}}})
		st := f.waitRun(t, "items", start)
		if res, _ := st["latestResult"].(map[string]any)["Item"].(map[string]any); st["status"] != functions.StatusSuccess || res["added"] != float64(231) {
			t.Fatalf("the sync's run: %v", st)
		}

		// The on-event function runs for a new connection.
		fb.mustDo(t, 201, req{method: "POST", path: "/connections", body: `{"provider_config_key":"fx","connection_id":"c2","api_key":"sk-2"}`})
		waitFor(t, 20*time.Second, "the on-event function's metadata", func() bool {
			m, _ := fb.mustDo(t, 200, req{method: "GET", path: "/connection/c2?provider_config_key=fx"}).obj()["metadata"].(map[string]any)
			return m["runs"] == float64(1) && m["setupAt"] != nil
		})
	})
}

// TestJSWebhookSyncRun: a verified provider webhook runs the onWebhook
// handler of a deployed JavaScript sync that subscribes to its type.
func TestJSWebhookSyncRun(t *testing.T) {
	backends(t, func(t *testing.T, b *backend) {
		bu, sink := whsSetup(t, b, make(chan whsCall, 100))
		f := &functions.Function{EnvironmentID: bu.env.ID, Integration: "hk", Kind: functions.KindSync, Name: "js-contacts",
			Runtime: jsruntime.Name, Source: "repo", Code: []byte(`module.exports.default = { type: 'sync',
				exec: async (nango) => {},
				onWebhook: async (nango, payload) => {
					if (nango.scriptType !== 'webhook') throw new Error('scriptType ' + nango.scriptType);
					await nango.batchSave([{ id: payload.contact.id, name: payload.contact.name + ' (js)' }], 'JsContact');
				} };`),
			Definition: functions.Definition{Runs: "every day", WebhookSubscriptions: []string{"contact.created"},
				Models: []functions.Model{{Name: "JsContact", Schema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}`)}}}}
		if err := bu.svc.Functions().Deploy(context.Background(), f); err != nil {
			t.Fatal(err)
		}
		bu.start(t)
		whsPost(t, bu, `{"id":"e1","event":"contact.created","account":"A1","contact":{"id":"p1","name":"Ann"}}`)
		h := sink.syncHook(t, "js-contacts")
		if h["syncType"] != "WEBHOOK" || h["success"] != true || h["connectionId"] != "c1" {
			t.Fatalf("sync webhook %v", h)
		}
		recs := whsRecords(t, bu, "c1", "JsContact")
		if len(recs) != 1 || recs["p1"]["name"] != "Ann (js)" {
			t.Fatalf("records %v", recs)
		}
	})
}
