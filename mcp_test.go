package connect_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/functions"
)

// headerTransport adds headers to every request: the API key and the
// connection an MCP client is configured with.
type headerTransport struct {
	header map[string]string
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.header {
		r.Header.Set(k, v)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// mcpSession connects the official Go SDK's client to an MCP server of
// bu with key and extra headers.
func mcpSession(t *testing.T, bu *bundle, path, key string, header map[string]string) *sdk.ClientSession {
	t.Helper()
	h := map[string]string{"Authorization": "Bearer " + key}
	for k, v := range header {
		h[k] = v
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "connect-test", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: bu.srv.URL + path,
		HTTPClient: &http.Client{Transport: headerTransport{h}}, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// treeNode is an input that refers to itself.
type treeNode struct {
	Name     string     `json:"name"`
	Children []treeNode `json:"children,omitempty"`
}

type labelled struct {
	Label string `json:"label"`
}

// refInput refers twice to one type: it is inlined in both places.
type refInput struct {
	From labelled `json:"from"`
	To   labelled `json:"to"`
}

func registerMCPActions(t *testing.T, svc *connect.Service) {
	t.Helper()
	registerTestActions(t, svc)
	err := svc.Functions().Register(
		functions.NewAction("fx", "shout", func(ctx context.Context, c *functions.Context, in string) (string, error) {
			return strings.ToUpper(in), nil
		}),
		functions.NewAction("fx", "tree", func(ctx context.Context, c *functions.Context, in treeNode) (int, error) {
			var count func(n treeNode) int
			count = func(n treeNode) int {
				k := 1
				for _, ch := range n.Children {
					k += count(ch)
				}
				return k
			}
			return count(in), nil
		}),
		functions.NewAction("fx", "route", func(ctx context.Context, c *functions.Context, in refInput) (string, error) {
			return in.From.Label + "->" + in.To.Label, nil
		}),
	)
	if err != nil {
		t.Fatal(err)
	}
}

func toolText(t *testing.T, res *sdk.CallToolResult) string {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("the result has %d contents", len(res.Content))
	}
	tc, ok := res.Content[0].(*sdk.TextContent)
	if !ok {
		t.Fatalf("the content is %T", res.Content[0])
	}
	return tc.Text
}

func TestMCPActionTools(t *testing.T) {
	backends(t, func(t *testing.T, b *backend) {
		bu := setupFunctions(t, b, func(svc *connect.Service) { registerMCPActions(t, svc) })
		ctx := context.Background()
		conn := map[string]string{"Connection-Id": "c1", "Provider-Config-Key": "fx"}
		cs := mcpSession(t, bu.bundle, "/mcp", bu.key, conn)

		// Every enabled action is a tool, sorted by name.
		lt, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		tools := map[string]*sdk.Tool{}
		for _, tl := range lt.Tools {
			names = append(names, tl.Name)
			tools[tl.Name] = tl
		}
		want := []string{"big", "boom", "echo", "fail", "missing", "refused", "refused-sdk", "route", "shout", "tree", "upstream"}
		if !slices.Equal(names, want) {
			t.Fatalf("tools = %v, want %v", names, want)
		}
		schemaOf := func(name string) map[string]any {
			b, _ := json.Marshal(tools[name].InputSchema)
			var m map[string]any
			_ = json.Unmarshal(b, &m)
			return m
		}
		// An object input is the schema; a description defaults to the name.
		echo := schemaOf("echo")
		if echo["type"] != "object" || echo["properties"].(map[string]any)["title"].(map[string]any)["type"] != "string" || tools["echo"].Description != "echo" {
			t.Errorf("echo's tool = %+v, schema %v", tools["echo"], echo)
		}
		// References are resolved: no $ref is left where a type is used
		// twice, and a type that refers to itself keeps one into the
		// schema's own $defs.
		route, _ := json.Marshal(schemaOf("route"))
		if strings.Contains(string(route), "$ref") || !strings.Contains(string(route), `"from":{"properties":{"label":{"type":"string"}}`) {
			t.Errorf("route's schema = %s", route)
		}
		tree, _ := json.Marshal(schemaOf("tree"))
		if !strings.Contains(string(tree), `"$ref":"#/$defs/`) || !strings.Contains(string(tree), `"$defs":{`) {
			t.Errorf("tree's schema = %s", tree)
		}
		// A string input is kept, as the argument "input".
		shout := schemaOf("shout")
		if shout["type"] != "object" || shout["properties"].(map[string]any)["input"].(map[string]any)["type"] != "string" ||
			fmt.Sprint(shout["required"]) != "[input]" {
			t.Errorf("shout's schema = %v", shout)
		}

		// A call runs the action as POST /action/trigger does: the
		// provider gets the connection's key; the output is indented JSON.
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"title": "hi"}})
		if err != nil {
			t.Fatal(err)
		}
		if res.IsError || toolText(t, res) != "{\n  \"title\": \"hi\",\n  \"upstream\": \"/issues\"\n}" {
			t.Errorf("echo = %v %q", res.IsError, toolText(t, res))
		}
		if reqs := bu.api.requests(); len(reqs) != 1 || reqs[0].Header.Get("X-Api-Key") != "sk-1" {
			t.Errorf("the provider got %d requests", len(reqs))
		}
		res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "shout", Arguments: map[string]any{"input": "quiet"}})
		if err != nil || toolText(t, res) != `"QUIET"` {
			t.Errorf("shout = %v, %v", res, err)
		}
		res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "tree", Arguments: map[string]any{"name": "a",
			"children": []any{map[string]any{"name": "b", "children": []any{map[string]any{"name": "c"}}}}}})
		if err != nil || toolText(t, res) != `3` {
			t.Errorf("tree = %v, %v", res, err)
		}

		// A failure is a result with isError, carrying the code and payload.
		res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "fail", Arguments: map[string]any{"a": 1}})
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			Error struct {
				Code    string         `json:"code"`
				Payload map[string]any `json:"payload"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(toolText(t, res)), &body); err != nil || !res.IsError ||
			body.Error.Code != "action_script_runtime_error" || body.Error.Payload["reason"] != "nope" {
			t.Errorf("fail = %v %s", res.IsError, toolText(t, res))
		}
		sc, _ := json.Marshal(res.StructuredContent)
		if !strings.Contains(string(sc), `"code":"action_script_runtime_error"`) {
			t.Errorf("fail's structured content = %s", sc)
		}

		// Arguments that break the schema: refused, nothing run.
		before := len(bu.api.requests())
		for _, tc := range []struct {
			name string
			args any
		}{
			{"echo", map[string]any{"title": 5}},
			{"shout", map[string]any{}},
			{"shout", map[string]any{"input": "x", "other": 1}},
			{"shout", map[string]any{"input": 7}},
		} {
			res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tc.name, Arguments: tc.args})
			if err != nil {
				t.Fatal(err)
			}
			if !res.IsError || !strings.Contains(toolText(t, res), `"code": "invalid_action_input"`) {
				t.Errorf("%s(%v) = %v %s", tc.name, tc.args, res.IsError, toolText(t, res))
			}
		}
		if n := len(bu.api.requests()); n != before {
			t.Errorf("refused calls reached the provider %d times", n-before)
		}

		// An unknown tool is a protocol error.
		if _, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "nope", Arguments: map[string]any{}}); err == nil ||
			!strings.Contains(err.Error(), `unknown tool "nope"`) {
			t.Errorf("an unknown tool: %v", err)
		}

		// A disabled action is neither listed nor run.
		if err := bu.svc.Functions().SetEnabled(ctx, bu.env.ID, "fx", functions.KindAction, "shout", false); err != nil {
			t.Fatal(err)
		}
		lt, err = cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tl := range lt.Tools {
			if tl.Name == "shout" {
				t.Error("a disabled action is listed")
			}
		}
		if _, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "shout", Arguments: map[string]any{"input": "x"}}); err == nil {
			t.Error("a disabled action ran")
		}
	})
}

// mcpPost posts one JSON-RPC message as an MCP client does.
func mcpPost(path string, header map[string]string, body string) req {
	h := map[string]string{"Accept": "application/json, text/event-stream"}
	for k, v := range header {
		h[k] = v
	}
	return req{method: "POST", path: path, header: h, body: body}
}

const mcpInitialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

func TestMCPRefusals(t *testing.T) {
	backends(t, func(t *testing.T, b *backend) {
		bu := setupFunctions(t, b, func(svc *connect.Service) { registerMCPActions(t, svc) })
		ctx := context.Background()
		conn := map[string]string{"Connection-Id": "c1", "Provider-Config-Key": "fx"}

		// GET and DELETE: 405 with Nango's JSON-RPC body.
		for _, m := range []string{"GET", "DELETE"} {
			for _, p := range []string{"/mcp", "/mcp/manage"} {
				r := bu.do(t, req{method: m, path: p, header: conn})
				if r.status != 405 || string(r.raw) != `{"jsonrpc":"2.0","error":{"code":-32000,"message":"Method not allowed."},"id":null}` {
					t.Errorf("%s %s = %d %s", m, p, r.status, r.raw)
				}
			}
		}
		// The headers name the connection.
		for _, tc := range []struct {
			header map[string]string
			code   string
		}{
			{map[string]string{}, "invalid_headers"},
			{map[string]string{"Connection-Id": "c1"}, "invalid_headers"},
			{map[string]string{"Provider-Config-Key": "fx"}, "invalid_headers"},
			{map[string]string{"Connection-Id": "c2", "Provider-Config-Key": "fx"}, "unknown_connection"},
			{map[string]string{"Connection-Id": "c1", "Provider-Config-Key": "other"}, "unknown_connection"},
		} {
			r := bu.do(t, mcpPost("/mcp", tc.header, mcpInitialize))
			if r.status != 400 || r.errCode() != tc.code {
				t.Errorf("headers %v: %d %s", tc.header, r.status, r.raw)
			}
		}
		// A key without environment:mcp is refused; so is none.
		narrow, _, err := bu.svc.Environments().CreateAPIKey(ctx, bu.env.ID, environments.NewAPIKey{Name: "narrow",
			Scopes: []string{environments.ScopeActionsExecute}})
		if err != nil {
			t.Fatal(err)
		}
		if r := bu.do(t, req{method: "POST", path: "/mcp", key: narrow, header: mcpPost("", conn, "").header, body: mcpInitialize}); r.status != 403 || r.errCode() != "forbidden" {
			t.Errorf("a key without the scope: %d %s", r.status, r.raw)
		}
		if r := bu.do(t, req{method: "POST", path: "/mcp", key: "-", header: mcpPost("", conn, "").header, body: mcpInitialize}); r.status != 401 {
			t.Errorf("no key: %d %s", r.status, r.raw)
		}
		// Transport refusals, in the API's error shape.
		for _, tc := range []struct {
			name   string
			rq     req
			status int
			code   string
		}{
			{"a query", mcpPost("/mcp?x=1", conn, mcpInitialize), 400, "invalid_query_params"},
			{"no Accept", req{method: "POST", path: "/mcp", header: conn, body: mcpInitialize}, 406, "not_acceptable"},
			{"a text body", mcpPost("/mcp", map[string]string{"Content-Type": "text/plain", "Connection-Id": "c1", "Provider-Config-Key": "fx"}, mcpInitialize), 415, "invalid_content_type"},
			{"an oversized body", mcpPost("/mcp", conn, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"title":"`+strings.Repeat("a", 2<<20)+`"}}}`), 413, ""},
		} {
			r := bu.do(t, tc.rq)
			if r.status != tc.status || (tc.code != "" && r.errCode() != tc.code) || r.errCode() == "" {
				t.Errorf("%s: %d %s", tc.name, r.status, r.raw)
			}
		}
		// Malformed JSON-RPC is a JSON-RPC error, never a 500.
		for _, body := range []string{`{`, `[]`, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":7}}`,
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":"x"}}`, `null`, `"x"`} {
			r := bu.do(t, mcpPost("/mcp", conn, body))
			if r.status >= 500 {
				t.Errorf("%s: %d %s", body, r.status, r.raw)
			}
		}
		if n := len(bu.api.requests()); n != 0 {
			t.Errorf("refused requests reached the provider %d times", n)
		}
		// A stateless call without initialize works (one request).
		r := bu.do(t, mcpPost("/mcp", conn, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"route","arguments":{"from":{"label":"a"},"to":{"label":"b"}}}}`))
		var rpc struct {
			Result struct {
				Content []struct{ Text string } `json:"content"`
			} `json:"result"`
		}
		_ = json.Unmarshal(r.raw, &rpc)
		var out string
		if r.status != 200 || len(rpc.Result.Content) != 1 || json.Unmarshal([]byte(rpc.Result.Content[0].Text), &out) != nil || out != "a->b" {
			t.Errorf("a call without initialize: %d %s", r.status, r.raw)
		}
	})
}

// callJSON calls a tool and decodes its text as JSON.
func callJSON(t *testing.T, cs *sdk.ClientSession, name string, args map[string]any) (map[string]any, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(toolText(t, res)), &out); err != nil {
		t.Fatalf("%s answered %q: %v", name, toolText(t, res), err)
	}
	return out, res.IsError
}

func TestMCPManageTools(t *testing.T) {
	backends(t, func(t *testing.T, b *backend) {
		bu := setupFunctions(t, b, func(svc *connect.Service) { registerMCPActions(t, svc) })
		ctx := context.Background()
		cs := mcpSession(t, bu.bundle, "/mcp/manage", bu.key, nil)

		lt, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		tools := map[string]*sdk.Tool{}
		for _, tl := range lt.Tools {
			names = append(names, tl.Name)
			tools[tl.Name] = tl
		}
		want := []string{"integrations_list", "integrations_get", "integrations_create", "integrations_update", "integrations_delete",
			"connect_session_create", "connections_list", "connections_get", "proxy_request", "functions_list", "syncs_status",
			"syncs_trigger", "records_list", "logs_list_operations", "logs_get_operation", "webhooks_list_deliveries"}
		if !slices.Equal(names, want) {
			t.Fatalf("tools = %v, want %v", names, want)
		}
		if a := tools["integrations_list"].Annotations; a == nil || !a.ReadOnlyHint || *a.DestructiveHint {
			t.Errorf("integrations_list's annotations = %+v", a)
		}
		if a := tools["integrations_delete"].Annotations; a == nil || a.ReadOnlyHint || !*a.DestructiveHint {
			t.Errorf("integrations_delete's annotations = %+v", a)
		}

		// Tools answer what the API answers.
		out, isErr := callJSON(t, cs, "integrations_list", nil)
		if isErr || !strings.Contains(fmt.Sprint(out["data"]), "unique_key:fx") {
			t.Errorf("integrations_list = %v", out)
		}
		out, isErr = callJSON(t, cs, "connect_session_create", map[string]any{"end_user": map[string]any{"id": "u1"}})
		if data, _ := out["data"].(map[string]any); isErr || !strings.Contains(fmt.Sprint(data["connect_link"]), "/connect") {
			t.Errorf("connect_session_create = %v", out)
		}
		out, isErr = callJSON(t, cs, "proxy_request", map[string]any{"method": "POST", "endpoint": "/issues/new", "connection_id": "c1",
			"provider_config_key": "fx", "params": map[string]any{"state": "open"}, "headers": map[string]any{"X-Trace": "t1"},
			"data": map[string]any{"title": "x"}})
		if isErr || out["status"] != float64(200) || out["body"].(map[string]any)["path"] != "/issues/new" {
			t.Errorf("proxy_request = %v", out)
		}
		reqs := bu.api.requests()
		last := reqs[len(reqs)-1]
		if last.Method != "POST" || last.URL.RawQuery != "state=open" || last.Header.Get("X-Api-Key") != "sk-1" ||
			last.Header.Get("X-Trace") != "t1" || last.Header.Get("Authorization") != "" {
			t.Errorf("the provider got %s %s with %v", last.Method, last.URL, last.Header)
		}
		// An answer past 1 MiB is cut, and says so.
		bu.api.setHandle(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			_, _ = w.Write([]byte(strings.Repeat("z", 3<<20)))
		})
		out, isErr = callJSON(t, cs, "proxy_request", map[string]any{"method": "GET", "endpoint": "big", "connection_id": "c1", "provider_config_key": "fx"})
		if isErr || out["truncated"] != true || len(fmt.Sprint(out["body"])) != 1<<20 {
			t.Errorf("a large answer: truncated=%v, %d bytes", out["truncated"], len(fmt.Sprint(out["body"])))
		}
		bu.api.setHandle(nil)

		// The API's refusals are isError results with its error body;
		// arguments that break the schema never reach it.
		for _, tc := range []struct {
			name string
			args map[string]any
			code string
		}{
			{"integrations_get", map[string]any{"unique_key": "nope"}, "unknown_provider_config"},
			{"integrations_get", map[string]any{}, "invalid_arguments"},
			{"integrations_get", map[string]any{"unique_key": "fx", "extra": 1}, "invalid_arguments"},
			{"integrations_get", map[string]any{"unique_key": 5}, "invalid_arguments"},
			{"integrations_create", map[string]any{"provider": "no-such-provider", "unique_key": "x"}, ""},
			{"connections_list", map[string]any{"limit": 0}, "invalid_arguments"},
			{"proxy_request", map[string]any{"method": "TRACE", "endpoint": "/x", "connection_id": "c1", "provider_config_key": "fx"}, "invalid_arguments"},
			{"logs_get_operation", map[string]any{"id": ""}, "invalid_arguments"},
		} {
			out, isErr := callJSON(t, cs, tc.name, tc.args)
			e, _ := out["error"].(map[string]any)
			if !isErr || e == nil || (tc.code != "" && e["code"] != tc.code) {
				t.Errorf("%s(%v) = %v %v", tc.name, tc.args, isErr, out)
			}
		}
		r := bu.mustDo(t, 200, req{method: "GET", path: "/integrations"})
		if strings.Contains(string(r.raw), `"unique_key":"x"`) {
			t.Error("a refused integrations_create stored an integration")
		}

		// A key sees and calls only the tools of its scopes; credentials
		// only with read_credentials.
		narrow, _, err := bu.svc.Environments().CreateAPIKey(ctx, bu.env.ID, environments.NewAPIKey{Name: "narrow",
			Scopes: []string{environments.ScopeIntegrationsRead, environments.ScopeConnectionsRead}})
		if err != nil {
			t.Fatal(err)
		}
		ns := mcpSession(t, bu.bundle, "/mcp/manage", narrow, nil)
		lt, err = ns.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		names = names[:0]
		for _, tl := range lt.Tools {
			names = append(names, tl.Name)
		}
		if !slices.Equal(names, []string{"integrations_list", "integrations_get", "connections_list", "connections_get"}) {
			t.Errorf("a narrow key lists %v", names)
		}
		if _, err := ns.CallTool(ctx, &sdk.CallToolParams{Name: "integrations_delete", Arguments: map[string]any{"unique_key": "fx"}}); err == nil ||
			!strings.Contains(err.Error(), environments.ScopeIntegrationsWrite) {
			t.Errorf("a narrow key deleting: %v", err)
		}
		bu.mustDo(t, 200, req{method: "GET", path: "/integrations/fx"})
		// A key without scopes reaches the server and sees no tool.
		none, _, err := bu.svc.Environments().CreateAPIKey(ctx, bu.env.ID, environments.NewAPIKey{Name: "none"})
		if err != nil {
			t.Fatal(err)
		}
		zs := mcpSession(t, bu.bundle, "/mcp/manage", none, nil)
		if lt, err := zs.ListTools(ctx, nil); err != nil || len(lt.Tools) != 0 {
			t.Errorf("a key without scopes lists %v (%v)", lt, err)
		}
		if _, err := zs.CallTool(ctx, &sdk.CallToolParams{Name: "integrations_list"}); err == nil {
			t.Error("a key without scopes called integrations_list")
		}
		out, isErr = callJSON(t, ns, "connections_get", map[string]any{"connection_id": "c1", "provider_config_key": "fx"})
		if isErr || out["connection_id"] != "c1" || strings.Contains(fmt.Sprint(out), "sk-1") {
			t.Errorf("connections_get with a narrow key = %v", out)
		}
		out, _ = callJSON(t, cs, "connections_get", map[string]any{"connection_id": "c1", "provider_config_key": "fx"})
		if !strings.Contains(fmt.Sprint(out), "sk-1") {
			t.Errorf("connections_get with environment:* has no credentials: %v", out)
		}
	})
}
