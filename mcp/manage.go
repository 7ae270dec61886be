package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/internal/httpapi"
)

// manageTools serves the service's own operations as tools. Each tool is
// one route of the JSON API, called in process with the caller's API key:
// the tool needs that route's scope, validates as it does and answers its
// body, so the management server can do nothing the key could not do
// through the API. tools/list lists the tools the key may call.
type manageTools struct {
	api http.Handler
}

func (t *manageTools) admit(context.Context, *request) error { return nil }

func (t *manageTools) list(_ context.Context, rq *request) ([]*sdk.Tool, error) {
	out := make([]*sdk.Tool, 0, len(manageCatalogue))
	for _, at := range manageCatalogue {
		if rq.principal.Allows(at.scope) {
			out = append(out, at.tool)
		}
	}
	return out, nil
}

func (t *manageTools) call(ctx context.Context, rq *request, name string, args json.RawMessage) (*sdk.CallToolResult, error) {
	i := slices.IndexFunc(manageCatalogue, func(at *apiTool) bool { return at.tool.Name == name })
	if i < 0 {
		return nil, unknownTool(name)
	}
	at := manageCatalogue[i]
	if !rq.principal.Allows(at.scope) {
		// Listed to no one without the scope, and refused the same way.
		return nil, &rpcErr{Code: codeInvalidParams, Message: fmt.Sprintf("tool %q needs an API key with the scope %s", name, at.scope)}
	}
	values, err := at.arguments(args)
	if err != nil {
		return bodyResult(httpapi.ErrorBody{Error: httpapi.ErrorDetail{Code: "invalid_arguments", Message: err.Error()}}, true), nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := at.request(ctx, values)
	if err != nil {
		return bodyResult(httpapi.ErrorBody{Error: httpapi.ErrorDetail{Code: "invalid_arguments", Message: err.Error()}}, true), nil
	}
	req.Header.Set("Authorization", rq.header.Get("Authorization"))
	rec := newRecorder(at.maxResponse)
	rec.overflowed = cancel // stop reading an answer past the bound
	serveInProcess(t.api, rec, req)
	return at.result(rec), nil
}

// serveInProcess serves req with h. A handler that stops a response
// midway (the proxy, once the answer passed the bound and the request was
// cancelled) panics with http.ErrAbortHandler, as net/http's server
// expects; here the answer read so far stands.
func serveInProcess(h http.Handler, w http.ResponseWriter, req *http.Request) {
	defer func() {
		if v := recover(); v != nil && v != http.ErrAbortHandler { //nolint:errorlint // the sentinel is panicked as it is
			panic(v)
		}
	}()
	h.ServeHTTP(w, req)
}

// apiTool is a management tool: one route of the API.
type apiTool struct {
	tool  *sdk.Tool
	scope string
	// method and path are the route's; {name} in path is the argument
	// name, path-escaped ({name...} keeps its slashes).
	method, path string
	// query lists the arguments sent as query parameters (arrays joined
	// by commas), and headers those sent as headers.
	query   []string
	headers map[string]string
	// body: the arguments not sent otherwise are the JSON body; bodyArg:
	// the argument sent as the body, as it is.
	body    bool
	bodyArg string
	// proxy: the answer is the upstream's, wrapped with its status.
	proxy bool
	// maxResponse bounds the answer read; 0 is defaultMaxResponse.
	maxResponse int
}

// defaultMaxResponse bounds the answers of the management tools: an agent
// reads them whole.
const defaultMaxResponse = 1 << 20

// arguments decodes and checks a call's arguments against the tool's
// input schema: an object, with the required members, no unknown member
// (unless the schema allows more) and each of the type it declares.
func (at *apiTool) arguments(args json.RawMessage) (map[string]any, error) {
	values := map[string]any{}
	if t := bytes.TrimSpace(args); len(t) > 0 && string(t) != "null" {
		dec := json.NewDecoder(bytes.NewReader(t))
		dec.UseNumber()
		if err := dec.Decode(&values); err != nil {
			return nil, fmt.Errorf("the arguments must be a JSON object")
		}
	}
	schema := at.tool.InputSchema.(map[string]any)
	props := schema["properties"].(map[string]any)
	for _, r := range schema["required"].([]any) {
		if _, ok := values[r.(string)]; !ok {
			return nil, fmt.Errorf("the argument %q is required", r)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(values)) {
		p, ok := props[name].(map[string]any)
		if !ok {
			if schema["additionalProperties"] == false {
				return nil, fmt.Errorf("%q is not an argument of %s", name, at.tool.Name)
			}
			continue
		}
		if err := checkType(name, p, values[name]); err != nil {
			return nil, err
		}
	}
	return values, nil
}

// checkType checks one argument against the type of its property schema.
func checkType(name string, p map[string]any, v any) error {
	want, _ := p["type"].(string)
	ok := true
	switch want {
	case "string":
		s, isStr := v.(string)
		ok = isStr
		if ok {
			if enum, has := p["enum"].([]any); has && !slices.Contains(enum, any(s)) {
				return fmt.Errorf("the argument %q must be one of %v", name, enum)
			}
		}
	case "integer":
		n, isNum := v.(json.Number)
		if ok = isNum; ok {
			i, err := strconv.ParseInt(string(n), 10, 64)
			ok = err == nil
			if min, has := p["minimum"].(int); ok && has && i < int64(min) {
				return fmt.Errorf("the argument %q must be at least %d", name, min)
			}
			if max, has := p["maximum"].(int); ok && has && i > int64(max) {
				return fmt.Errorf("the argument %q must be at most %d", name, max)
			}
		}
	case "boolean":
		_, ok = v.(bool)
	case "object":
		_, ok = v.(map[string]any)
	case "array":
		items, isArr := v.([]any)
		ok = isArr
		for _, e := range items {
			if _, isStr := e.(string); !isStr {
				ok = false
			}
		}
		want = "array of strings"
	}
	if !ok {
		return fmt.Errorf("the argument %q must be of type %s", name, want)
	}
	return nil
}

// request builds the API request of a call.
func (at *apiTool) request(ctx context.Context, values map[string]any) (*http.Request, error) {
	used := map[string]bool{}
	method := at.method
	if method == "" { // the proxy's: an argument
		method, used["method"] = values["method"].(string), true
	}
	path := at.path
	for {
		start := strings.IndexByte(path, '{')
		if start < 0 {
			break
		}
		end := strings.IndexByte(path[start:], '}') + start
		name, rest := strings.CutSuffix(path[start+1:end], "...")
		s, _ := values[name].(string)
		if s == "" {
			return nil, fmt.Errorf("the argument %q must not be empty", name)
		}
		used[name] = true
		var seg string
		if rest {
			parts := strings.Split(strings.TrimPrefix(s, "/"), "/")
			for i, p := range parts {
				if p == "." || p == ".." {
					return nil, fmt.Errorf("the argument %q must not hold the segments . or ..", name)
				}
				parts[i] = url.PathEscape(p)
			}
			seg = strings.Join(parts, "/")
		} else {
			seg = url.PathEscape(s)
		}
		path = path[:start] + seg + path[end+1:]
	}
	q := url.Values{}
	for _, name := range at.query {
		v, ok := values[name]
		if !ok {
			continue
		}
		used[name] = true
		if name == "params" { // the proxy's own query
			for k, pv := range v.(map[string]any) {
				q.Add(k, scalar(pv))
			}
			continue
		}
		q.Set(name, scalar(v))
	}
	header := http.Header{}
	for name, h := range at.headers {
		if v, ok := values[name]; ok {
			used[name] = true
			if name == "headers" { // the proxy's headers, to the provider
				for k, hv := range v.(map[string]any) {
					header.Set(h+k, scalar(hv))
				}
				continue
			}
			header.Set(h, scalar(v))
		}
	}
	var body []byte
	switch {
	case at.bodyArg != "":
		if v, ok := values[at.bodyArg]; ok {
			used[at.bodyArg] = true
			if s, isStr := v.(string); isStr {
				body = []byte(s)
				if header.Get("Nango-Proxy-Content-Type") == "" {
					header.Set("Content-Type", "text/plain; charset=utf-8")
				}
			} else {
				body, _ = json.Marshal(v)
				header.Set("Content-Type", "application/json")
			}
		}
	case at.body:
		rest := map[string]any{}
		for k, v := range values {
			if !used[k] {
				rest[k] = v
			}
		}
		body, _ = json.Marshal(rest)
		header.Set("Content-Type", "application/json")
	}
	u := path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("the arguments make no valid request: %v", err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if ct := header.Get("Nango-Proxy-Content-Type"); ct != "" && len(body) > 0 {
		req.Header.Set("Content-Type", ct)
	}
	req.ContentLength = int64(len(body))
	return req, nil
}

// scalar writes an argument as a query or header value: arrays joined by
// commas, numbers and booleans as JSON writes them.
func scalar(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = scalar(e)
		}
		return strings.Join(parts, ",")
	case nil:
		return ""
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// result turns the API's answer into the tool's result: its JSON body
// (isError for a status of 400 or more), or for the proxy the upstream's
// status, content type and body.
func (at *apiTool) result(rec *recorder) *sdk.CallToolResult {
	if rec.overflow && !at.proxy {
		return bodyResult(httpapi.ErrorBody{Error: httpapi.ErrorDetail{Code: "response_too_large",
			Message: fmt.Sprintf("The answer is larger than %d bytes: narrow the request (a smaller limit, a filter).", rec.limit)}}, true)
	}
	body := rec.buf.Bytes()
	if !at.proxy {
		if rec.status == http.StatusNoContent || len(bytes.TrimSpace(body)) == 0 {
			body = []byte(`{"success":true}`)
		}
		if !json.Valid(body) {
			b, _ := json.Marshal(map[string]any{"status": rec.status, "body": string(body)})
			body = b
		}
		return bodyResult(json.RawMessage(body), rec.status >= 400)
	}
	out := map[string]any{"status": rec.status, "content_type": rec.header.Get("Content-Type")}
	switch {
	case rec.overflow:
		out["body"] = strings.ToValidUTF8(string(body), "\uFFFD")
		out["truncated"] = true
		out["truncated_at_bytes"] = rec.limit
	case json.Valid(body) && len(bytes.TrimSpace(body)) > 0:
		out["body"] = json.RawMessage(body)
	case utf8.Valid(body):
		out["body"] = string(body)
	default:
		out["body_base64"] = body
	}
	// The proxy's own refusals (no connection, bad headers) are its JSON
	// error body; the upstream's answers are tagged so an agent can tell.
	return bodyResult(out, rec.status >= 400)
}

// recorder is an in-process response writer that keeps up to limit
// bytes of the body.
type recorder struct {
	header   http.Header
	status   int
	buf      bytes.Buffer
	limit    int
	overflow bool
	// overflowed is called once when the body passes the limit.
	overflowed func()
}

func newRecorder(limit int) *recorder {
	if limit <= 0 {
		limit = defaultMaxResponse
	}
	return &recorder{header: http.Header{}, limit: limit}
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	room := r.limit - r.buf.Len()
	if len(p) > room {
		r.buf.Write(p[:max(room, 0)])
		if !r.overflow && r.overflowed != nil {
			r.overflowed()
		}
		r.overflow = true
		return len(p), nil
	}
	return r.buf.Write(p)
}

// Flush lets streaming handlers (the proxy) flush: nothing to do.
func (r *recorder) Flush() {}

// Schema helpers for the catalogue.
type prop struct {
	name, typ, desc string
	enum            []any
	min, max        int
}

func str(name, desc string) prop { return prop{name: name, typ: "string", desc: desc} }
func integer(name, desc string, min, max int) prop {
	return prop{name: name, typ: "integer", desc: desc, min: min, max: max}
}
func boolean(name, desc string) prop { return prop{name: name, typ: "boolean", desc: desc} }
func object(name, desc string) prop  { return prop{name: name, typ: "object", desc: desc} }
func strings_(name, desc string) prop {
	return prop{name: name, typ: "array", desc: desc}
}
func enum(name, desc string, values ...any) prop {
	return prop{name: name, typ: "string", desc: desc, enum: values}
}

// schema is an object schema of props; those in required are required;
// open allows members it does not list (a body the API validates).
func schema(required []string, open bool, props ...prop) map[string]any {
	ps := map[string]any{}
	for _, p := range props {
		s := map[string]any{"type": p.typ, "description": p.desc}
		if p.enum != nil {
			s["enum"] = p.enum
		}
		if p.typ == "integer" {
			s["minimum"], s["maximum"] = p.min, p.max
		}
		if p.typ == "array" {
			s["items"] = map[string]any{"type": "string"}
		}
		ps[p.name] = s
	}
	req := make([]any, len(required))
	for i, r := range required {
		req[i] = r
	}
	return map[string]any{"type": "object", "properties": ps, "required": req, "additionalProperties": open}
}

func hints(readOnly, destructive, idempotent, openWorld bool) *sdk.ToolAnnotations {
	return &sdk.ToolAnnotations{ReadOnlyHint: readOnly, DestructiveHint: &destructive, IdempotentHint: idempotent, OpenWorldHint: &openWorld}
}

// manageCatalogue is every management tool, in the order tools/list
// answers them.
var manageCatalogue = []*apiTool{
	{
		tool: &sdk.Tool{Name: "integrations_list", Title: "List integrations",
			Description: "List the integrations of the environment: their unique keys, providers and display names.",
			InputSchema: schema(nil, false), Annotations: hints(true, false, true, false)},
		scope: environments.ScopeIntegrationsRead, method: "GET", path: "/integrations",
	},
	{
		tool: &sdk.Tool{Name: "integrations_get", Title: "Get an integration",
			Description: "Get one integration by its unique key. Its credentials (client secret) are included only when asked and the API key may read them.",
			InputSchema: schema([]string{"unique_key"}, false,
				str("unique_key", "The integration's unique key (provider_config_key)."),
				enum("include", "credentials: include the integration's credentials.", "credentials", "webhook")),
			Annotations: hints(true, false, true, false)},
		scope: environments.ScopeIntegrationsRead, method: "GET", path: "/integrations/{unique_key}", query: []string{"include"},
	},
	{
		tool: &sdk.Tool{Name: "integrations_create", Title: "Create an integration",
			Description: "Create an integration of a provider of the catalogue. The arguments are the body of POST /integrations: provider, unique_key, display_name and, for OAuth, credentials {type, client_id, client_secret, scopes}.",
			InputSchema: schema([]string{"provider", "unique_key"}, true,
				str("provider", "The provider's name in the catalogue, such as github."),
				str("unique_key", "The new integration's unique key."),
				str("display_name", "A display name."),
				object("credentials", "The app's credentials: {type: OAUTH2|OAUTH1|APP|CUSTOM|TBA|MCP_OAUTH2, client_id, client_secret, scopes, ...}.")),
			Annotations: hints(false, false, false, false)},
		scope: environments.ScopeIntegrationsWrite, method: "POST", path: "/integrations", body: true,
	},
	{
		tool: &sdk.Tool{Name: "integrations_update", Title: "Update an integration",
			Description: "Change an integration: its unique key, display name or credentials. The other arguments are the body of PATCH /integrations/{unique_key}.",
			InputSchema: schema([]string{"unique_key"}, true,
				str("unique_key", "The integration's current unique key."),
				str("display_name", "A new display name."),
				object("credentials", "New credentials: {type, client_id, client_secret, scopes, ...}.")),
			Annotations: hints(false, true, true, false)},
		scope: environments.ScopeIntegrationsWrite, method: "PATCH", path: "/integrations/{unique_key}", body: true,
	},
	{
		tool: &sdk.Tool{Name: "integrations_delete", Title: "Delete an integration",
			Description: "Delete an integration and every connection of it. This cannot be undone.",
			InputSchema: schema([]string{"unique_key"}, false, str("unique_key", "The integration's unique key.")),
			Annotations: hints(false, true, true, false)},
		scope: environments.ScopeIntegrationsWrite, method: "DELETE", path: "/integrations/{unique_key}",
	},
	{
		tool: &sdk.Tool{Name: "connect_session_create", Title: "Create a connect session",
			Description: "Create a connect session for an end user and answer its connect_link: the page where the user connects an account. The arguments are the body of POST /connect/sessions: end_user {id, email, display_name, tags}, allowed_integrations, integrations_config_defaults, organization.",
			InputSchema: schema(nil, true,
				object("end_user", "The end user: {id, email, display_name, tags}."),
				strings_("allowed_integrations", "The unique keys of the integrations the user may connect."),
				object("tags", "Tags stored on the connections the session creates.")),
			Annotations: hints(false, false, false, false)},
		scope: environments.ScopeConnectSessionsWrite, method: "POST", path: "/connect/sessions", body: true,
	},
	{
		tool: &sdk.Tool{Name: "connections_list", Title: "List connections",
			Description: "List and search the connections of the environment, newest first, without their credentials.",
			InputSchema: schema(nil, false,
				str("search", "Text found in the connection id or the end user's id, email or display name."),
				str("integrationId", "Only connections of this integration (unique key)."),
				str("connectionId", "Only the connection with this id."),
				str("endUserId", "Only connections of this end user."),
				str("endUserOrganizationId", "Only connections of this end user organization."),
				integer("limit", "How many connections to answer.", 1, 1000),
				integer("page", "The page, from 0.", 0, 1_000_000)),
			Annotations: hints(true, false, true, false)},
		scope: environments.ScopeConnectionsRead, method: "GET", path: "/connections",
		query: []string{"search", "integrationId", "connectionId", "endUserId", "endUserOrganizationId", "limit", "page"},
	},
	{
		tool: &sdk.Tool{Name: "connections_get", Title: "Get a connection",
			Description: "Get one connection: its state, metadata, tags and errors. Its credentials are included only when the API key may read them.",
			InputSchema: schema([]string{"connection_id", "provider_config_key"}, false,
				str("connection_id", "The connection's id."),
				str("provider_config_key", "The unique key of its integration.")),
			Annotations: hints(true, false, true, false)},
		scope: environments.ScopeConnectionsRead, method: "GET", path: "/connections/{connection_id}", query: []string{"provider_config_key"},
	},
	{
		tool: &sdk.Tool{Name: "proxy_request", Title: "Call a provider's API",
			Description: "Call the API of a connection's provider with the connection's credentials injected, through the proxy: the endpoint is a path of the provider's base URL. Answers the upstream's status, content type and body (cut at 1 MiB).",
			InputSchema: schema([]string{"method", "endpoint", "connection_id", "provider_config_key"}, false,
				enum("method", "The HTTP method.", "GET", "POST", "PUT", "PATCH", "DELETE"),
				str("endpoint", "The path on the provider's API, such as /user or /repos/o/r/issues."),
				str("connection_id", "The connection whose credentials are used."),
				str("provider_config_key", "The unique key of its integration."),
				object("params", "Query parameters: {name: value}."),
				object("headers", "Headers for the provider: {name: value}."),
				prop{name: "data", desc: "The request body: a JSON value, or a string sent as it is."},
				integer("retries", "How many times to retry a failed call.", 0, 10)),
			Annotations: hints(false, true, false, true)},
		scope: environments.ScopeProxy, method: "", path: "/proxy/{endpoint...}", query: []string{"params"},
		headers: map[string]string{"connection_id": "Connection-Id", "provider_config_key": "Provider-Config-Key",
			"retries": "Retries", "headers": "Nango-Proxy-"},
		bodyArg: "data", proxy: true,
	},
	{
		tool: &sdk.Tool{Name: "functions_list", Title: "List the functions of an integration",
			Description: "List the actions, syncs and on-event functions deployed to an integration, with their input and output models.",
			InputSchema: schema([]string{"unique_key"}, false,
				str("unique_key", "The integration's unique key."),
				enum("type", "Only functions of this type.", "action", "sync", "on-event")),
			Annotations: hints(true, false, true, false)},
		scope: environments.ScopeFunctionsRead, method: "GET", path: "/integrations/{unique_key}/functions", query: []string{"type"},
	},
	{
		tool: &sdk.Tool{Name: "syncs_status", Title: "Read the status of syncs",
			Description: "Read the status of syncs of an integration: state, last and next run, records counts, errors; for one connection or all.",
			InputSchema: schema([]string{"provider_config_key", "syncs"}, false,
				str("provider_config_key", "The integration's unique key."),
				strings_("syncs", "The sync names, or [\"*\"] for all."),
				str("connection_id", "Only this connection.")),
			Annotations: hints(true, false, true, false)},
		scope: environments.ScopeSyncsRead, method: "GET", path: "/sync/status", query: []string{"provider_config_key", "syncs", "connection_id"},
	},
	{
		tool: &sdk.Tool{Name: "syncs_trigger", Title: "Run syncs now",
			Description: "Run syncs of an integration now, for one connection or all: incremental, or a full resync that starts over from the first page. The arguments are the body of POST /sync/trigger.",
			InputSchema: schema([]string{"provider_config_key", "syncs"}, true,
				str("provider_config_key", "The integration's unique key."),
				strings_("syncs", "The sync names."),
				str("connection_id", "Only this connection."),
				enum("sync_mode", "incremental (default), full_refresh or full_refresh_and_clear_cache.", "incremental", "full_refresh", "full_refresh_and_clear_cache")),
			Annotations: hints(false, false, false, true)},
		scope: environments.ScopeSyncsWrite, method: "POST", path: "/sync/trigger", body: true,
	},
	{
		tool: &sdk.Tool{Name: "records_list", Title: "List the records of a sync",
			Description: "List the records a sync stored for a connection, by cursor.",
			InputSchema: schema([]string{"provider_config_key", "connection_id", "model"}, false,
				str("provider_config_key", "The integration's unique key."),
				str("connection_id", "The connection's id."),
				str("model", "The model name."),
				str("cursor", "The next_cursor of the previous page."),
				integer("limit", "How many records to answer.", 1, 1000),
				str("modified_after", "Only records changed after this RFC 3339 time.")),
			Annotations: hints(true, false, true, false)},
		scope: environments.ScopeRecordsRead, method: "GET", path: "/records", query: []string{"model", "cursor", "limit", "modified_after"},
		headers: map[string]string{"connection_id": "Connection-Id", "provider_config_key": "Provider-Config-Key"},
	},
	{
		tool: &sdk.Tool{Name: "logs_list_operations", Title: "List operations",
			Description: "List the operations log, newest first: authorizations, refreshes, proxy calls, runs, webhooks and deployments, with their status; page with next_cursor.",
			InputSchema: schema(nil, false,
				str("type", "Only entries of this type, such as auth, connection, proxy, action, sync, webhook."),
				str("operation", "Only entries of this operation, such as refresh or run."),
				enum("status", "Only successes or only failures.", "success", "failure"),
				str("integration", "Only entries of this integration (unique key)."),
				str("connection_id", "Only entries of this connection."),
				str("since", "Only entries at or after this RFC 3339 time."),
				str("until", "Only entries before this RFC 3339 time."),
				str("cursor", "The next_cursor of the previous page."),
				integer("limit", "How many entries to answer.", 1, 100)),
			Annotations: hints(true, false, true, false)},
		scope: environments.ScopeLogsRead, method: "GET", path: "/logs/operations",
		query: []string{"type", "operation", "status", "integration", "connection_id", "since", "until", "cursor", "limit"},
	},
	{
		tool: &sdk.Tool{Name: "logs_get_operation", Title: "Get an operation",
			Description: "Get one entry of the operations log by its id (the log_id a connection's error names), with its details.",
			InputSchema: schema([]string{"id"}, false, str("id", "The entry's id.")),
			Annotations: hints(true, false, true, false)},
		scope: environments.ScopeLogsRead, method: "GET", path: "/logs/operations/{id}",
	},
	{
		tool: &sdk.Tool{Name: "webhooks_list_deliveries", Title: "List webhook deliveries",
			Description: "List the webhooks sent to the environment's webhook URLs, newest first, with their status and attempts; page with next_cursor.",
			InputSchema: schema(nil, false,
				enum("status", "Only deliveries in this state.", "pending", "delivered", "failed"),
				str("type", "Only webhooks of this type, such as auth, sync or forward."),
				str("integration_id", "Only webhooks of this integration (unique key)."),
				str("connection_id", "Only webhooks of this connection."),
				str("cursor", "The next_cursor of the previous page."),
				integer("limit", "How many deliveries to answer.", 1, 1000)),
			Annotations: hints(true, false, true, false)},
		scope: environments.ScopeWebhooksRead, method: "GET", path: "/webhooks/deliveries",
		query: []string{"status", "type", "integration_id", "connection_id", "cursor", "limit"},
	},
}
