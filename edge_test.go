package connect_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// rawResponse is an answer whose body may be HTML.
type rawResponse struct {
	status int
	header http.Header
	body   string
}

// rawDo sends a request without interpreting the answer.
func rawDo(t *testing.T, base, method, path string, header map[string]string, body string) rawResponse {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	r, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	for k, v := range header {
		r.Header[http.CanonicalHeaderKey(k)] = []string{v}
	}
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return rawResponse{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

// leaks lists text that must never be in an answer: a Store's or driver's
// error, or the raw bytes a caller sent.
var leaks = []string{"pq:", "postgres", "invalid byte sequence", "22021", "22P05", "\xff", `\xff`, `\ufffd`, "\ufffd", "\x00", `\u0000`}

// edgeRoute is one request of a route that passes the edge; the table of
// bad variants is built from it.
type edgeRoute struct {
	name   string
	method string
	path   string // may hold a query
	header map[string]string
	body   string
	// jsonBody: the route decodes body as JSON (the body variants apply).
	jsonBody bool
	// popup: errors are the OAuth popup's HTML page; message: {"message"}.
	popup, message bool
}

// edgeRoutes returns one valid request per route of svc.Handler(): the API
// (with the API key), the browser routes (with a session token), the OAuth
// popup, the WebSocket, the connect UI, the proxy, incoming webhooks,
// health and logos.
func edgeRoutes(key, tok string) []edgeRoute {
	auth := map[string]string{"Authorization": "Bearer " + key}
	bearer := map[string]string{"Authorization": "Bearer " + tok}
	with := func(h map[string]string, kv ...string) map[string]string {
		out := map[string]string{}
		for k, v := range h {
			out[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	var out []edgeRoute
	for _, rq := range apiKeyRoutes {
		h := with(auth)
		for k, v := range rq.header {
			h[k] = v
		}
		if rq.body != "" {
			h["Content-Type"] = "application/json"
		}
		proxy := strings.HasPrefix(rq.path, "/proxy/")
		out = append(out, edgeRoute{name: rq.method + " " + rq.path, method: rq.method, path: rq.path, header: h, body: rq.body,
			jsonBody: rq.body != "" && !proxy,
			message:  (rq.method == "POST" && rq.path == "/connection") || (rq.method == "DELETE" && strings.HasPrefix(rq.path, "/connection/"))})
	}
	q := "?connect_session_token=" + tok
	jsonCT := map[string]string{"Content-Type": "application/json"}
	return append(out,
		edgeRoute{name: "unknown route", method: "GET", path: "/nope", header: auth},
		edgeRoute{name: "health", method: "GET", path: "/health"},
		edgeRoute{name: "logo", method: "GET", path: "/providers/github/logo.svg"},
		edgeRoute{name: "incoming webhook", method: "POST", path: "/webhook/dev/gh", header: jsonCT, body: `{"installation":{"id":1}}`},
		edgeRoute{name: "cli telemetry", method: "POST", path: "/cli/telemetry", header: jsonCT, body: `{"event":"cli:deploy"}`},
		edgeRoute{name: "get session", method: "GET", path: "/connect/session", header: bearer},
		edgeRoute{name: "delete session", method: "DELETE", path: "/connect/session", header: bearer},
		edgeRoute{name: "preflight", method: "OPTIONS", path: "/connect/session"},
		edgeRoute{name: "session integrations", method: "GET", path: "/integrations", header: bearer},
		edgeRoute{name: "session provider", method: "GET", path: "/providers/github", header: bearer},
		edgeRoute{name: "api key auth", method: "POST", path: "/api-auth/api-key/oa" + q, header: jsonCT, body: `{"apiKey":"sk-1"}`, jsonBody: true},
		edgeRoute{name: "basic auth", method: "POST", path: "/api-auth/basic/tw" + q, header: jsonCT, body: `{"username":"u","password":"p"}`, jsonBody: true},
		edgeRoute{name: "client credentials", method: "POST", path: "/oauth2/auth/oa" + q, header: jsonCT, body: `{"client_id":"a","client_secret":"b"}`, jsonBody: true},
		edgeRoute{name: "unauthenticated", method: "POST", path: "/auth/unauthenticated/oa" + q},
		edgeRoute{name: "oauth connect", method: "GET", path: "/oauth/connect/gh" + q + "&ws_client_id=w1", popup: true},
		edgeRoute{name: "oauth callback", method: "GET", path: "/oauth/callback?state=s&code=c", popup: true},
		edgeRoute{name: "oauth status", method: "GET", path: "/oauth/status/w1", header: bearer},
		edgeRoute{name: "websocket", method: "GET", path: "/?x=1", header: map[string]string{"Upgrade": "websocket", "Connection": "Upgrade",
			"Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}},
		edgeRoute{name: "connect UI", method: "GET", path: "/connect/?session_token=" + tok},
		edgeRoute{name: "connect UI asset", method: "GET", path: "/connect/ui/app.js"},
	)
}

// edgeVariant is one bad request derived from a route.
type edgeVariant struct {
	name   string
	status int
	code   string
	build  func(r edgeRoute) (path string, header map[string]string, body string)
}

func addQuery(path, kv string) string {
	if strings.Contains(path, "?") {
		return path + "&" + kv
	}
	return path + "?" + kv
}

// addSegment appends s to the path's last segment.
func addSegment(path, s string) string {
	p, q, ok := strings.Cut(path, "?")
	if !ok {
		return p + s
	}
	return p + s + "?" + q
}

func cloneHeader(h map[string]string, kv ...string) map[string]string {
	out := map[string]string{}
	for k, v := range h {
		out[k] = v
	}
	for i := 0; i < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

// prependMember adds a member at the start of a JSON object body.
func prependMember(body, member string) string {
	return "{" + member + "," + strings.TrimPrefix(strings.TrimSpace(body), "{")
}

var edgeVariants = []edgeVariant{
	{"path invalid UTF-8", 400, "invalid_uri_params", func(r edgeRoute) (string, map[string]string, string) {
		return addSegment(r.path, "%ff%fe"), r.header, r.body
	}},
	{"path NUL", 400, "invalid_uri_params", func(r edgeRoute) (string, map[string]string, string) {
		return addSegment(r.path, "%00"), r.header, r.body
	}},
	{"path line feed", 400, "invalid_uri_params", func(r edgeRoute) (string, map[string]string, string) {
		return addSegment(r.path, "%0a"), r.header, r.body
	}},
	{"path C1 control", 400, "invalid_uri_params", func(r edgeRoute) (string, map[string]string, string) {
		return addSegment(r.path, "%c2%85"), r.header, r.body
	}},
	{"query value invalid UTF-8", 400, "invalid_query_params", func(r edgeRoute) (string, map[string]string, string) {
		return addQuery(r.path, "v=%ff%fe"), r.header, r.body
	}},
	{"query key invalid UTF-8", 400, "invalid_query_params", func(r edgeRoute) (string, map[string]string, string) {
		return addQuery(r.path, "%ff=1"), r.header, r.body
	}},
	{"query NUL", 400, "invalid_query_params", func(r edgeRoute) (string, map[string]string, string) {
		return addQuery(r.path, "v=a%00b"), r.header, r.body
	}},
	{"query malformed escape", 400, "invalid_query_params", func(r edgeRoute) (string, map[string]string, string) {
		return addQuery(r.path, "v=%zz"), r.header, r.body
	}},
	{"header invalid UTF-8", 400, "invalid_headers", func(r edgeRoute) (string, map[string]string, string) {
		return r.path, cloneHeader(r.header, "X-Extra", "\xff\xfe"), r.body
	}},
	{"authorization invalid UTF-8", 400, "invalid_headers", func(r edgeRoute) (string, map[string]string, string) {
		return r.path, cloneHeader(r.header, "Authorization", "Bearer \xff\xfe-0123456789abcdef"), r.body
	}},
	{"provider-config-key invalid UTF-8", 400, "invalid_headers", func(r edgeRoute) (string, map[string]string, string) {
		return r.path, cloneHeader(r.header, "Provider-Config-Key", "\xff\xfe", "Connection-Id", "c1"), r.body
	}},
	{"connection-id invalid UTF-8", 400, "invalid_headers", func(r edgeRoute) (string, map[string]string, string) {
		return r.path, cloneHeader(r.header, "Provider-Config-Key", "gh", "Connection-Id", "c\xff"), r.body
	}},
}

var edgeBodyVariants = []edgeVariant{
	{"body invalid UTF-8", 400, "invalid_body", func(r edgeRoute) (string, map[string]string, string) {
		return r.path, r.header, prependMember(r.body, `"zz":"a`+"\xff\xfe"+`b"`)
	}},
	{"body invalid UTF-8 in a key", 400, "invalid_body", func(r edgeRoute) (string, map[string]string, string) {
		return r.path, r.header, prependMember(r.body, `"z`+"\xc3"+`":1`)
	}},
	{"body duplicate key", 400, "invalid_body", func(r edgeRoute) (string, map[string]string, string) {
		return r.path, r.header, prependMember(r.body, `"dup":1,"dup":2`)
	}},
	{"body duplicate key by escape", 400, "invalid_body", func(r edgeRoute) (string, map[string]string, string) {
		return r.path, r.header, prependMember(r.body, `"dup":1,"d\u0075p":2`)
	}},
	{"body nested duplicate key", 400, "invalid_body", func(r edgeRoute) (string, map[string]string, string) {
		return r.path, r.header, prependMember(r.body, `"n":[{"a":{"b":1,"b":2}}]`)
	}},
	{"body NUL", 400, "invalid_body", func(r edgeRoute) (string, map[string]string, string) {
		return r.path, r.header, prependMember(r.body, `"zz":"a\u0000b"`)
	}},
	{"body lone surrogate", 400, "invalid_body", func(r edgeRoute) (string, map[string]string, string) {
		return r.path, r.header, prependMember(r.body, `"zz":"a\ud800b"`)
	}},
	{"body too deep", 400, "invalid_body", func(r edgeRoute) (string, map[string]string, string) {
		return r.path, r.header, prependMember(r.body, `"zz":`+strings.Repeat("[", 70)+strings.Repeat("]", 70))
	}},
	{"charset latin1", 415, "invalid_content_type", func(r edgeRoute) (string, map[string]string, string) {
		return r.path, cloneHeader(r.header, "Content-Type", "application/json; charset=iso-8859-1"), r.body
	}},
	{"charset utf-16", 415, "invalid_content_type", func(r edgeRoute) (string, map[string]string, string) {
		return r.path, cloneHeader(r.header, "Content-Type", "application/json; charset=utf-16"), r.body
	}},
}

// checkRefusal checks one bad request's answer: the status, the code in
// the route's error shape, and no leaked text.
func checkRefusal(t *testing.T, what string, rt edgeRoute, v edgeVariant, r rawResponse) {
	t.Helper()
	if r.status != v.status {
		t.Errorf("%s: %d %q, want %d", what, r.status, r.body, v.status)
		return
	}
	switch {
	case rt.popup:
		if !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") || !strings.Contains(r.body, "_err") {
			t.Errorf("%s: not the popup's error page: %s %q", what, r.header.Get("Content-Type"), r.body)
		}
	case rt.message:
		if !strings.Contains(r.body, `"message":"`) {
			t.Errorf("%s: body %q, want {\"message\"}", what, r.body)
		}
	default:
		if !strings.Contains(r.body, `"code":"`+v.code+`"`) {
			t.Errorf("%s: body %q, want code %s", what, r.body, v.code)
		}
	}
	for _, l := range leaks {
		if strings.Contains(r.body, l) {
			t.Errorf("%s: the answer holds %q: %q", what, l, r.body)
		}
	}
}

// tableCounts counts the rows of every table of the backend's database,
// the Store's and River's.
func tableCounts(t *testing.T, b *backend) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, n := range b.tables(t) {
		out[n] = b.count(t, n, "")
	}
	return out
}

// TestBadInputAtTheEdge sends bad input in every position (path, query,
// headers, JSON bodies, charsets) to every route of svc.Handler() on both
// stores: each gets a 4xx with a clear code in the route's error shape and
// no Store text, and nothing stored changes.
func TestBadInputAtTheEdge(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		bu := setup(t, b)
		seed(t, bu)
		tok := bu.session(t, `{"tags":{"a":"b"}}`)
		routes := edgeRoutes(bu.key, tok)
		before, rows := snapshot(t, bu), tableCounts(t, b)
		n := 0
		for _, rt := range routes {
			vs := edgeVariants
			if rt.jsonBody {
				vs = append(append([]edgeVariant{}, vs...), edgeBodyVariants...)
			}
			for _, v := range vs {
				path, h, body := v.build(rt)
				r := rawDo(t, bu.srv.URL, rt.method, path, h, body)
				got := rt
				// A path changed off the popup's is another route.
				p, _, _ := strings.Cut(path, "?")
				got.popup = rt.popup && (strings.HasPrefix(p, "/oauth/connect/") || p == "/oauth/callback")
				checkRefusal(t, rt.name+": "+v.name, got, v, r)
				n++
			}
		}
		if diff := cmp.Diff(before, snapshot(t, bu)); diff != "" {
			t.Errorf("bad input changed the store (-before +after):\n%s", diff)
		}
		if diff := cmp.Diff(rows, tableCounts(t, b)); diff != "" {
			t.Errorf("bad input added rows (-before +after):\n%s", diff)
		}
		if n < 400 {
			t.Fatalf("only %d bad requests sent", n)
		}
	})
}

// TestBadInputInProcess: what net/http cannot carry over the wire (control
// characters in header values, any bytes in a path) reaches a handler
// called in process; the edge refuses it there too, for each of the
// Service's handlers.
func TestBadInputInProcess(t *testing.T) {
	t.Parallel()
	bu := setup(t, sqliteBackend(t))
	seed(t, bu)
	before := snapshot(t, bu)
	handlers := map[string]http.Handler{"Handler": bu.svc.Handler(), "APIHandler": bu.svc.APIHandler(),
		"ProxyHandler": bu.svc.ProxyHandler(), "ConnectHandler": bu.svc.ConnectHandler()}
	for name, h := range handlers {
		for _, tc := range []struct {
			what, path, header, value, code string
		}{
			{"NUL in a header", "/integrations", "X-Extra", "a\x00b", "invalid_headers"},
			{"line feed in a header", "/connect/session", "X-Extra", "a\nb", "invalid_headers"},
			{"NUL in Provider-Config-Key", "/proxy/user", "Provider-Config-Key", "g\x00h", "invalid_headers"},
			{"DEL in Connection-Id", "/proxy/user", "Connection-Id", "c\x7f1", "invalid_headers"},
			{"raw invalid UTF-8 path", "/integrations/g\xffh", "", "", "invalid_uri_params"},
			{"raw NUL path", "/proxy/a\x00b", "", "", "invalid_uri_params"},
		} {
			r := httptest.NewRequest("GET", "/", nil)
			r.URL.Path, r.URL.RawPath = tc.path, ""
			r.Header.Set("Authorization", "Bearer "+bu.key)
			r.Header.Set("Provider-Config-Key", "gh")
			r.Header.Set("Connection-Id", "c1")
			if tc.header != "" {
				r.Header[tc.header] = []string{tc.value}
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != 400 || !strings.Contains(w.Body.String(), `"code":"`+tc.code+`"`) {
				t.Errorf("%s: %s = %d %s, want 400 %s", name, tc.what, w.Code, w.Body, tc.code)
			}
			for _, l := range leaks {
				if strings.Contains(w.Body.String(), l) {
					t.Errorf("%s: %s: the answer holds %q", name, tc.what, l)
				}
			}
		}
	}
	if diff := cmp.Diff(before, snapshot(t, bu)); diff != "" {
		t.Errorf("bad input changed the store (-before +after):\n%s", diff)
	}
}

// TestGoodInputPassesTheEdge: what the edge allows: UTF-8 text (accents,
// emoji), tab and line breaks in query values, a cookie of another site
// with any bytes, JSON with escapes and repeated keys in different objects,
// and charset=utf-8 in any case.
func TestGoodInputPassesTheEdge(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		bu := setup(t, b)
		seed(t, bu)
		for _, rq := range []req{
			{method: "GET", path: "/connections?search=%C3%A9t%C3%A9%20%F0%9F%98%80"},
			{method: "GET", path: "/connections?search=a%09b%0Ac"},
			{method: "GET", path: "/integrations", header: map[string]string{"Cookie": "other=\xff\xfe; x=1", "User-Agent": "café/1.0"}},
			{method: "POST", path: "/connections", header: map[string]string{"Content-Type": "application/json; charset=UTF-8"},
				body: `{"provider_config_key":"oa","connection_id":"k\u00e9-\ud83d\ude00","api_key":"sk-1","metadata":{"a":{"x":1},"b":{"x":2},"s":"tab\tnl\n"}}`},
			{method: "POST", path: "/connections/metadata", header: map[string]string{"Content-Type": "application/json;charset=utf8"},
				body: `{"metadata":{"deep":` + strings.Repeat("[", 60) + strings.Repeat("]", 60) + `},"connection_id":"c1","provider_config_key":"gh"}`},
		} {
			r := bu.do(t, rq)
			if r.status >= 300 {
				t.Errorf("%s %s = %d %s", rq.method, rq.path, r.status, r.raw)
			}
		}
		c := bu.mustDo(t, 200, req{method: "GET", path: "/connections/k%C3%A9-%F0%9F%98%80?provider_config_key=oa"})
		if md := fmt.Sprint(c.obj()["metadata"]); !strings.Contains(md, "tab\tnl\n") {
			t.Errorf("metadata %s", md)
		}
	})
}

// TestAnonymousRequestsDoNotGrowStorage: requests nobody authenticated
// (bad webhook signatures, unknown environments and integrations, garbage
// OAuth callback state, unknown session tokens and API keys) cannot make
// the Store grow with their number. A refused incoming webhook is
// recorded once per integration, reason and minute; nothing else of them
// is stored.
func TestAnonymousRequestsDoNotGrowStorage(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		bu := setup(t, b)
		seed(t, bu)
		bu.mustDo(t, 200, req{method: "POST", path: "/integrations", body: `{"provider":"github","unique_key":"ghw",
			"credentials":{"type":"OAUTH2","client_id":"cid","client_secret":"cs","webhook_secret":"whsec-123"}}`})
		before, logs := tableCounts(t, b), snapshot(t, bu)
		unknownTok := "nango_connect_session_" + strings.Repeat("ab", 32)
		body := `{"installation":{"id":1}}`
		const n = 25
		for i := range n {
			for _, rq := range []struct {
				method, path string
				header       map[string]string
				body         string
			}{
				{"POST", "/webhook/dev/ghw", map[string]string{"X-Hub-Signature-256": "sha256=" + strings.Repeat("0", 64), "Content-Type": "application/json"}, body},
				{"POST", "/webhook/dev/ghw", map[string]string{"Content-Type": "application/json"}, body},
				{"POST", "/webhook/nope/ghw", nil, body},
				{"POST", "/webhook/dev/nope", nil, body},
				{"GET", fmt.Sprintf("/oauth/callback?state=garbage-%d&code=x", i), nil, ""},
				{"GET", "/oauth/connect/gh?connect_session_token=" + unknownTok + "&ws_client_id=w" + fmt.Sprint(i), nil, ""},
				{"GET", "/oauth/status/w1", map[string]string{"Authorization": "Bearer " + unknownTok}, ""},
				{"GET", "/connect/session", map[string]string{"Authorization": "Bearer " + unknownTok}, ""},
				{"POST", "/api-auth/api-key/oa?connect_session_token=" + unknownTok, map[string]string{"Content-Type": "application/json"}, `{"apiKey":"k"}`},
				{"POST", "/connections", map[string]string{"Authorization": "Bearer sk_unknown_key_0000000000", "Content-Type": "application/json"},
					`{"provider_config_key":"oa","connection_id":"x","api_key":"k"}`},
			} {
				r := rawDo(t, bu.srv.URL, rq.method, rq.path, rq.header, rq.body)
				if r.status < 400 || r.status >= 500 {
					t.Fatalf("%s %s = %d %s, want a 4xx", rq.method, rq.path, r.status, r.body)
				}
			}
		}
		after := tableCounts(t, b)
		const log = "operations_log"
		if got := after[log] - before[log]; got != 2 {
			t.Errorf("%d anonymous refusals wrote %d log entries, want 2 (one per integration and reason)", 10*n, got)
		}
		delete(before, log)
		delete(after, log)
		if diff := cmp.Diff(before, after); diff != "" {
			t.Errorf("anonymous requests added rows (-before +after):\n%s", diff)
		}
		if diff := cmp.Diff(logs, snapshot(t, bu)); diff != "" {
			t.Errorf("anonymous requests changed the store (-before +after):\n%s", diff)
		}
	})
}
