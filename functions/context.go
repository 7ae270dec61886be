package functions

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/oplog"
	"github.com/embedauth/connect/proxy"
	"github.com/embedauth/connect/store"
)

// Context is the run context of one function run: the only door to side
// effects. It calls the provider with the connection's credentials, reads
// the connection and changes its metadata, reads the environment's
// variables, logs into the operations log under the run's entry, and keeps
// the run's checkpoint. Its methods check the run's context first: once
// the run is cancelled or past its deadline, they fail. A Context belongs
// to one run; it is safe for concurrent use by that run's goroutines.
type Context struct {
	// EnvironmentID, Integration (the integration's unique key, Nango's
	// providerConfigKey), Provider and ConnectionID (the connection's id)
	// say what the run is for.
	EnvironmentID int64
	Integration   string
	Provider      string
	ConnectionID  string
	// Kind and Name are the function's.
	Kind Kind
	Name string
	// RunID identifies the run (a sync run or an action task; empty for a
	// synchronous action).
	RunID string
	// LogID is the run's operations log entry: Log writes under it.
	LogID string

	svc     *Service
	connRow int64 // the connection's Connection.ID

	mu sync.Mutex
	cp checkpointState // guarded by mu
}

// checkpointState tracks a run's checkpoint: its key, the stored version,
// and what the run first read and last wrote.
type checkpointState struct {
	key     string
	loaded  bool
	version int64
	current Checkpoint
	from    Checkpoint
	to      Checkpoint
	touched bool
}

// ProxyRequest is a call to the provider's API through the proxy.
type ProxyRequest struct {
	// Method defaults to GET.
	Method string
	// Endpoint is the path after the provider's base URL (or
	// BaseURLOverride), possibly with a query.
	Endpoint string
	Params   url.Values
	Headers  http.Header
	// Data is encoded as the JSON body; Body, when set, is sent instead.
	Data any
	Body []byte
	// Retries, RetryOn, BaseURLOverride, Decompress: see proxy.Options.
	Retries         int
	RetryOn         []int
	BaseURLOverride string
	Decompress      bool
}

// ProxyResponse is a provider's 2xx answer.
type ProxyResponse struct {
	Status int
	Header http.Header
	Body   []byte
	// URL is the address the answer came from (after redirects), when
	// known.
	URL *url.URL
}

// JSON decodes the body into v.
func (r *ProxyResponse) JSON(v any) error { return json.Unmarshal(r.Body, v) }

// MaxProxyResponseBody is the largest provider answer a run reads.
const MaxProxyResponseBody = 100 << 20

// Proxy calls the provider's API with the connection's credentials, with
// the proxy's retries, redirects and address policy. An answer outside
// 2xx is an *UpstreamError.
func (c *Context) Proxy(ctx context.Context, r ProxyRequest) (*ProxyResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	req := &proxy.Request{EnvironmentID: c.EnvironmentID, IntegrationKey: c.Integration, ConnectionID: c.ConnectionID,
		Method: r.Method, Endpoint: r.Endpoint, Query: r.Params, Header: r.Headers.Clone(), ContentLength: -1,
		Options: proxy.Options{Retries: r.Retries, RetryOn: r.RetryOn, BaseURLOverride: r.BaseURLOverride, Decompress: r.Decompress}}
	if req.Header == nil {
		req.Header = http.Header{}
	}
	switch {
	case r.Body != nil:
		req.Body, req.ContentLength = bytes.NewReader(r.Body), int64(len(r.Body))
	case r.Data != nil:
		b, err := json.Marshal(r.Data)
		if err != nil {
			return nil, fmt.Errorf("functions: proxy %s: encode the body: %w", r.Endpoint, err)
		}
		req.Body, req.ContentLength = bytes.NewReader(b), int64(len(b))
		if req.Header.Get("Content-Type") == "" {
			req.Header.Set("Content-Type", "application/json")
		}
	}
	if c.svc.cfg.Proxy == nil {
		return nil, errors.New("functions: the Service has no proxy")
	}
	resp, err := c.svc.cfg.Proxy.Do(ctx, req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxProxyResponseBody+1))
	if err != nil {
		return nil, fmt.Errorf("functions: proxy %s: read the answer: %w", r.Endpoint, err)
	}
	if len(body) > MaxProxyResponseBody {
		return nil, fmt.Errorf("functions: proxy %s: the answer is larger than %d bytes", r.Endpoint, MaxProxyResponseBody)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		if len(body) > MaxUpstreamErrorBody {
			body = body[:MaxUpstreamErrorBody]
		}
		return nil, &UpstreamError{Status: resp.StatusCode, Header: resp.Header, Body: body}
	}
	out := &ProxyResponse{Status: resp.StatusCode, Header: resp.Header, Body: body}
	if resp.Request != nil && resp.Request.URL != nil {
		u := *resp.Request.URL
		out.URL = &u
	}
	return out, nil
}

// HTTPClient returns a client for a provider's Go SDK: requests to the
// provider's base URL (or opts.BaseURLOverride) carry the connection's
// credentials; requests to other hosts carry none. Every request still
// passes the address policy.
func (c *Context) HTTPClient(opts proxy.Options) *http.Client {
	return c.svc.cfg.Proxy.Client(c.EnvironmentID, c.Integration, c.ConnectionID, opts)
}

// Connection returns the connection with its credentials, refreshed when
// about to expire.
func (c *Context) Connection(ctx context.Context) (*connections.Connection, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return c.svc.cfg.Connections.Get(ctx, c.EnvironmentID, c.Integration, c.ConnectionID, connections.GetOptions{})
}

// Metadata returns the connection's metadata.
func (c *Context) Metadata(ctx context.Context) (map[string]any, error) {
	conn, err := c.Connection(ctx)
	if err != nil {
		return nil, err
	}
	if conn.Metadata == nil {
		return map[string]any{}, nil
	}
	return conn.Metadata, nil
}

// SetMetadata replaces the connection's metadata.
func (c *Context) SetMetadata(ctx context.Context, m map[string]any) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return c.svc.cfg.Connections.SetMetadata(ctx, c.EnvironmentID, c.Integration, []string{c.ConnectionID}, m, false)
}

// UpdateMetadata merges m into the connection's metadata (top-level keys
// replaced).
func (c *Context) UpdateMetadata(ctx context.Context, m map[string]any) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return c.svc.cfg.Connections.SetMetadata(ctx, c.EnvironmentID, c.Integration, []string{c.ConnectionID}, m, true)
}

// EnvironmentVariables returns the environment's variables by name.
func (c *Context) EnvironmentVariables(ctx context.Context) (map[string]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if c.svc.cfg.Environments == nil {
		return map[string]string{}, nil
	}
	vars, err := c.svc.cfg.Environments.Variables(ctx, c.EnvironmentID)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(vars))
	for _, v := range vars {
		out[v.Name] = v.Value
	}
	return out, nil
}

// MaxLogMessage is the longest message Log keeps, in bytes.
const MaxLogMessage = 10 << 10

// Log writes a message into the operations log, under the run's entry
// (Meta "run_log_id"), with its level and the key-value pairs args as
// Meta "fields". Messages past MaxLogMessage are cut.
func (c *Context) Log(ctx context.Context, level slog.Level, msg string, args ...any) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(msg) > MaxLogMessage {
		msg = strings.ToValidUTF8(msg[:MaxLogMessage], "") + "…"
	}
	meta := map[string]any{"run_log_id": c.LogID, "level": strings.ToLower(level.String()), "function": c.Name}
	if len(args) > 0 {
		fields := map[string]any{}
		for i := 0; i < len(args); i += 2 {
			k := fmt.Sprint(args[i])
			if i+1 < len(args) {
				fields[k] = args[i+1]
			} else {
				fields["!BADKEY"] = args[i]
			}
		}
		if b, err := json.Marshal(fields); err == nil && len(b) <= MaxLogMessage {
			meta["fields"] = json.RawMessage(b)
		}
	}
	status := oplog.StatusSuccess
	if level >= slog.LevelError {
		status = oplog.StatusFailure
	}
	return c.svc.record(ctx, &oplog.Entry{EnvironmentID: c.EnvironmentID, Type: "function", Operation: "log",
		Status: status, IntegrationKey: c.Integration, ConnectionID: c.ConnectionID, Message: msg, Meta: meta})
}

// Checkpoint returns the run's checkpoint: the state its function saved
// for this connection (and variant), nil when there is none.
func (c *Context) Checkpoint(ctx context.Context) (Checkpoint, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.loadCheckpoint(ctx); err != nil {
		return nil, err
	}
	return cloneCheckpoint(c.cp.current), nil
}

// loadCheckpoint reads the stored checkpoint once per run.
func (c *Context) loadCheckpoint(ctx context.Context) error {
	if c.cp.loaded {
		return nil
	}
	sc, err := c.svc.st.GetCheckpoint(ctx, c.connRow, c.cp.key)
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return err
	default:
		cp, err := DecodeCheckpoint(sc.Value)
		if err != nil {
			return fmt.Errorf("functions: the stored checkpoint %q is not valid: %w", c.cp.key, err)
		}
		c.cp.current, c.cp.version = cp, sc.Version
	}
	c.cp.loaded, c.cp.touched = true, true
	c.cp.from = cloneCheckpoint(c.cp.current)
	return nil
}

// SaveCheckpoint stores cp as the run's checkpoint: a flat object of
// string, number and boolean values. A concurrent write by another run
// makes it fail with a conflict rather than overwrite.
func (c *Context) SaveCheckpoint(ctx context.Context, cp Checkpoint) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := cp.Validate(); err != nil {
		return err
	}
	b, err := json.Marshal(cp)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.loadCheckpoint(ctx); err != nil {
		return err
	}
	v, err := c.svc.st.PutCheckpoint(ctx, c.connRow, c.cp.key, b, c.cp.version, c.svc.nowUTC())
	if err != nil {
		if errors.Is(err, store.ErrConflict) {
			return store.Errorf(store.ErrConflict, "checkpoint_conflict", "The checkpoint %q was changed by another run.", c.cp.key)
		}
		return err
	}
	c.cp.version, c.cp.current, c.cp.to = v, cloneCheckpoint(cp), cloneCheckpoint(cp)
	return nil
}

// ClearCheckpoint deletes the run's checkpoint.
func (c *Context) ClearCheckpoint(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.loadCheckpoint(ctx); err != nil {
		return err
	}
	if err := c.svc.st.DeleteCheckpoint(ctx, c.connRow, c.cp.key, c.cp.version); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return store.Errorf(store.ErrConflict, "checkpoint_conflict", "The checkpoint %q was changed by another run.", c.cp.key)
		}
		return err
	}
	c.cp.version, c.cp.current, c.cp.to = 0, nil, nil
	return nil
}

// checkpoints returns what the run first read and last wrote, and whether
// it touched its checkpoint at all.
func (c *Context) checkpoints() (from, to Checkpoint, touched bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cp.from, c.cp.to, c.cp.touched
}

func cloneCheckpoint(cp Checkpoint) Checkpoint {
	if cp == nil {
		return nil
	}
	out := make(Checkpoint, len(cp))
	for k, v := range cp {
		out[k] = v
	}
	return out
}

// Paginate iterates over the pages of records of a provider endpoint,
// called through Proxy: the pagination settings are the provider's
// (its catalogue entry's proxy.paginate) with those of p laid over them
// (p may be nil). Each page is the records found at the settings'
// response_path. The iteration ends with an error when a call fails. An
// absolute next-page link is followed only to the host the previous page
// came from: a provider's answer never sends the connection's
// credentials elsewhere. PaginatePages yields each page with its
// next-page parameter, to checkpoint and resume.
func (c *Context) Paginate(ctx context.Context, r ProxyRequest, p *integrations.Paginate) iter.Seq2[[]json.RawMessage, error] {
	return recordsOf(c.PaginatePages(ctx, r, p, nil))
}

// PaginatePages is Paginate yielding each page whole (see PageResult):
// its records, its response and its NextPageParam, the cursor, offset or
// link of the next page (Nango's on_page callback, as the body of the
// range loop). With from not nil (a NextPageParam saved in a checkpoint),
// the iteration starts at the page it names instead of the first (see
// the package function PaginatePages). An absolute link to resume from is
// followed only to the host of the provider's base URL (or of
// r.BaseURLOverride).
func (c *Context) PaginatePages(ctx context.Context, r ProxyRequest, p *integrations.Paginate, from any) iter.Seq2[*PageResult, error] {
	var provider *integrations.Paginate
	if c.svc.cfg.Catalog != nil {
		if pr, ok := c.svc.cfg.Catalog.Get(c.Provider); ok && pr.Proxy != nil {
			provider = pr.Proxy.Paginate
		}
	}
	settings := MergePaginate(provider, p)
	var body map[string]any
	if r.Data != nil {
		b, err := json.Marshal(r.Data)
		if err == nil {
			_ = json.Unmarshal(b, &body)
		}
	}
	first := PageRequest{Method: r.Method, Endpoint: r.Endpoint, Params: r.Params, Body: body, BaseURLOverride: r.BaseURLOverride}
	return func(yield func(*PageResult, error) bool) {
		// The host of the last page read: the only one an absolute
		// next-page link may lead to.
		lastHost := ""
		if r.BaseURLOverride != "" {
			if u, err := url.Parse(r.BaseURLOverride); err == nil {
				lastHost = u.Host
			}
		}
		fetch := func(ctx context.Context, pr PageRequest) (*Page, error) {
			if pr.BaseURLOverride != "" && pr.BaseURLOverride != r.BaseURLOverride {
				if lastHost == "" { // resumed from a link: no page read yet
					lastHost = c.baseHost(ctx, r)
				}
				u, err := url.Parse(pr.BaseURLOverride)
				if err != nil || lastHost == "" || !strings.EqualFold(u.Host, lastHost) {
					return nil, fmt.Errorf("functions: paginate %s: the next page's link points at another host than the provider's; not followed", r.Endpoint)
				}
			}
			call := r
			call.Method, call.Endpoint, call.Params, call.BaseURLOverride = pr.Method, pr.Endpoint, pr.Params, pr.BaseURLOverride
			call.Data, call.Body = nil, nil
			if pr.Body != nil {
				call.Data = pr.Body
			}
			resp, err := c.Proxy(ctx, call)
			if err != nil {
				return nil, err
			}
			if resp.URL != nil {
				lastHost = resp.URL.Host
			}
			return &Page{Status: resp.Status, Header: resp.Header, Body: resp.Body}, nil
		}
		for page, err := range PaginatePages(ctx, fetch, first, settings, from) {
			if !yield(page, err) {
				return
			}
		}
	}
}

// baseURLer gives the base URL of a connection's calls; *proxy.Proxy
// implements it.
type baseURLer interface {
	BaseURL(ctx context.Context, environmentID int64, integrationKey, connectionID string, opts proxy.Options) (*url.URL, error)
}

// baseHost returns the host of the base URL r goes to, or "" when the
// Proxier cannot tell.
func (c *Context) baseHost(ctx context.Context, r ProxyRequest) string {
	b, ok := c.svc.cfg.Proxy.(baseURLer)
	if !ok {
		return ""
	}
	u, err := b.BaseURL(ctx, c.EnvironmentID, c.Integration, c.ConnectionID, proxy.Options{BaseURLOverride: r.BaseURLOverride})
	if err != nil {
		return ""
	}
	return u.Host
}
