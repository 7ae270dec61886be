package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/internal/httpapi"
	"github.com/embedauth/connect/store"
)

// Paths of the two MCP servers.
const (
	// ActionsPath serves a connection's actions as tools (Nango's /mcp).
	ActionsPath = "/mcp"
	// ManagePath serves the service's own operations as tools.
	ManagePath = "/mcp/manage"
)

// Version is the version the servers report in their initialize answer.
const Version = "1.0.0"

// Config configures the MCP servers.
type Config struct {
	// Actions lists and runs a connection's actions: a *functions.Service.
	Actions Actions
	// API serves the JSON API that the management tools call, in process,
	// with the caller's own Authorization header: the routes of the
	// Service's APIHandler and ProxyHandler. It must not rate-limit the
	// calls again (the MCP request already counted).
	API http.Handler
	// Logger hears of failures that no caller sees; nil discards them.
	Logger *slog.Logger
}

// Server serves the two MCP endpoints. Its zero value is not usable: call
// New.
type Server struct {
	actions *endpoint
	manage  *endpoint
}

// New returns the MCP servers of cfg.
func New(cfg Config) *Server {
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	// The SDK logs every session's start and end at INFO: one request
	// each here. Only its warnings and errors reach the host's log.
	logger = slog.New(warnings{logger.Handler()})
	return &Server{
		actions: newEndpoint("connect-actions", &actionTools{fns: cfg.Actions}, logger),
		manage:  newEndpoint("connect-manage", &manageTools{api: cfg.API}, logger),
	}
}

// warnings passes on the records of WARN and above.
type warnings struct{ slog.Handler }

func (w warnings) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn && w.Handler.Enabled(ctx, l)
}

func (w warnings) WithAttrs(as []slog.Attr) slog.Handler { return warnings{w.Handler.WithAttrs(as)} }
func (w warnings) WithGroup(name string) slog.Handler    { return warnings{w.Handler.WithGroup(name)} }

// Routes registers POST /mcp (scope environment:mcp) and POST /mcp/manage
// (any key: each tool needs its own scope) on rt, and their GET and DELETE,
// which answer 405: both servers are stateless, with no event stream.
func (s *Server) Routes(rt *httpapi.Router) {
	rt.Handle(httpapi.Route{Pattern: "POST " + ActionsPath, Scope: environments.ScopeMCP, Handler: s.actions.serve})
	rt.Handle(httpapi.Route{Pattern: "POST " + ManagePath, AnyScope: true, Handler: s.manage.serve})
	for _, p := range []string{ActionsPath, ManagePath} {
		for _, m := range []string{"GET", "DELETE"} {
			rt.Mux.HandleFunc(m+" "+p, methodNotAllowed)
		}
	}
}

// methodNotAllowed answers a GET or DELETE as Nango's MCP server does: 405
// with a JSON-RPC error body.
func methodNotAllowed(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Allow", "POST")
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusMethodNotAllowed)
	_, _ = io.WriteString(w, `{"jsonrpc":"2.0","error":{"code":-32000,"message":"Method not allowed."},"id":null}`)
}

// request is what the tools of one HTTP request know of it.
type request struct {
	principal *httpapi.Principal
	header    http.Header
	// integration and connectionID are the connection-tools headers.
	integration, connectionID string
}

type requestKey struct{}

// requestOf returns the request of a tool call's context.
func requestOf(ctx context.Context) *request {
	r, _ := ctx.Value(requestKey{}).(*request)
	return r
}

// toolset is what one MCP server serves.
type toolset interface {
	// admit checks a request before any MCP message of it is read: an
	// error is the HTTP answer.
	admit(ctx context.Context, rq *request) error
	list(ctx context.Context, rq *request) ([]*sdk.Tool, error)
	// call runs a tool. A tool that does not exist for the request is a
	// *jsonrpc.Error; a tool that fails is a result with IsError set.
	call(ctx context.Context, rq *request, name string, args json.RawMessage) (*sdk.CallToolResult, error)
}

// endpoint is one stateless MCP server: the SDK's streamable HTTP
// transport and one SDK server shared by every request, whose tools/list
// and tools/call are answered by a toolset for the request's caller.
type endpoint struct {
	tools   toolset
	handler http.Handler
	// fast: a request that is one tools/call is answered without the
	// SDK's transport (see fastCall).
	fast bool
}

func newEndpoint(name string, tools toolset, logger *slog.Logger) *endpoint {
	srv := sdk.NewServer(&sdk.Implementation{Name: name, Version: Version}, &sdk.ServerOptions{
		Logger:       logger,
		Capabilities: &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{}},
	})
	srv.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			rq := requestOf(ctx)
			if rq == nil {
				return next(ctx, method, req)
			}
			switch method {
			case "tools/list":
				ts, err := tools.list(ctx, rq)
				if err != nil {
					return nil, rpcError(err)
				}
				// The list is the caller's (its key, its connection),
				// and changes with any deployment.
				return &sdk.ListToolsResult{Tools: ts, Cacheable: sdk.Cacheable{CacheScope: "private"}}, nil
			case "tools/call":
				p, _ := req.GetParams().(*sdk.CallToolParamsRaw)
				if p == nil {
					return nil, &rpcErr{Code: codeInvalidParams, Message: "tools/call needs params"}
				}
				return tools.call(ctx, rq, p.Name, p.Arguments)
			}
			return next(ctx, method, req)
		}
	})
	return &endpoint{tools: tools, fast: true, handler: sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv },
		&sdk.StreamableHTTPOptions{
			Stateless:    true,
			JSONResponse: true,
			Logger:       logger,
			// Every request carries an API key, which a page that
			// rebinds a name to the loopback address does not have; and
			// a server behind a proxy on the same host sees the public
			// Host. The SDK's protection would refuse the latter.
			DisableLocalhostProtection: true,
			// The Router already bounds the body.
			MaxRequestBodyBytes: -1,
		})}
}

// serve is the route of the endpoint: the caller is authenticated and
// holds the route's scope.
func (e *endpoint) serve(w http.ResponseWriter, r *http.Request, p *httpapi.Principal) error {
	if err := onlyEmptyQuery(r); err != nil {
		return err
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return httpapi.WithStatus(http.StatusUnsupportedMediaType, store.Errorf(store.ErrInvalid, "invalid_content_type",
			"An MCP request is JSON: its Content-Type must be application/json."))
	}
	if !accepts(r.Header.Values("Accept")) {
		return httpapi.WithStatus(http.StatusNotAcceptable, store.Errorf(store.ErrInvalid, "not_acceptable",
			"An MCP client must accept both application/json and text/event-stream."))
	}
	// The body is checked as every JSON body of the API is (UTF-8, no
	// duplicate keys, no NUL, bounded nesting) before the SDK reads it.
	body, err := httpapi.ReadJSON(r)
	if err != nil {
		return err
	}
	rq := &request{principal: p, header: r.Header}
	if err := e.tools.admit(r.Context(), rq); err != nil {
		return err
	}
	r = r.WithContext(context.WithValue(r.Context(), requestKey{}, rq))
	r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	if !json.Valid(body) {
		writeRPCError(w, http.StatusBadRequest, codeParseError, "Parse error: the body is not JSON.")
		return nil
	}
	if e.fast && e.fastCall(r.Context(), w, r, rq, body) {
		return nil
	}
	jw := &jsonErrors{ResponseWriter: w}
	e.handler.ServeHTTP(jw, r)
	jw.finish()
	return nil
}

// writeRPCError writes a JSON-RPC error that answers no request id.
func writeRPCError(w http.ResponseWriter, status int, code int64, msg string) {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "error": map[string]any{"code": code, "message": msg}, "id": nil})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Del("Content-Length")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// jsonErrors turns the SDK transport's plain-text refusals (a JSON-RPC
// message it cannot read, a protocol version it does not speak) into
// JSON-RPC error bodies, as every other answer is JSON.
type jsonErrors struct {
	http.ResponseWriter
	status int
	text   bytes.Buffer
}

func (j *jsonErrors) WriteHeader(status int) {
	if status >= 400 && strings.HasPrefix(j.Header().Get("Content-Type"), "text/plain") {
		j.status = status
		return
	}
	j.ResponseWriter.WriteHeader(status)
}

func (j *jsonErrors) Write(p []byte) (int, error) {
	if j.status != 0 {
		if j.text.Len() < 4096 {
			j.text.Write(p)
		}
		return len(p), nil
	}
	return j.ResponseWriter.Write(p)
}

func (j *jsonErrors) Flush() {
	if f, ok := j.ResponseWriter.(http.Flusher); ok && j.status == 0 {
		f.Flush()
	}
}

func (j *jsonErrors) Unwrap() http.ResponseWriter { return j.ResponseWriter }

// finish writes the JSON-RPC error of a refusal held back.
func (j *jsonErrors) finish() {
	if j.status == 0 {
		return
	}
	msg := strings.TrimSpace(strings.ToValidUTF8(j.text.String(), ""))
	if msg == "" {
		msg = http.StatusText(j.status)
	}
	writeRPCError(j.ResponseWriter, j.status, codeInvalidRequest, msg)
}

// onlyEmptyQuery refuses query parameters: MCP takes none.
func onlyEmptyQuery(r *http.Request) error {
	for k := range r.URL.Query() {
		return httpapi.InvalidQuery(k, "is not a parameter of an MCP server")
	}
	return nil
}

// accepts reports whether Accept headers name both media types of the
// streamable HTTP transport (or their wildcards).
func accepts(values []string) bool {
	var js, sse bool
	for _, v := range values {
		for part := range strings.SplitSeq(v, ",") {
			mt, _, _ := strings.Cut(strings.TrimSpace(part), ";")
			switch strings.ToLower(strings.TrimSpace(mt)) {
			case "application/json", "application/*":
				js = true
			case "text/event-stream", "text/*":
				sse = true
			case "*/*":
				js, sse = true, true
			}
		}
	}
	return js && sse
}

// JSON-RPC error codes.
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
	codeInvalidParams  = -32602
	codeInternal       = -32603
)

// rpcErr is a JSON-RPC error answered to a request.
type rpcErr = jsonrpc.Error

// rpcError turns an error of the service into a JSON-RPC error whose data
// is the API's error body.
func rpcError(err error) error {
	var re *rpcErr
	if errors.As(err, &re) {
		return re
	}
	status, d := httpapi.Resolve(err)
	data, _ := json.Marshal(httpapi.ErrorBody{Error: d})
	code := int64(codeInternal)
	if status < 500 {
		code = codeInvalidParams
	}
	msg := d.Message
	if msg == "" {
		msg = d.Code
	}
	return &rpcErr{Code: code, Message: msg, Data: data}
}
