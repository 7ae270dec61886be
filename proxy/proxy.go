package proxy

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/internal/httpapi"
	"github.com/embedauth/connect/store"
)

// Methods returns the HTTP methods the proxy route serves: GET, POST, PUT,
// PATCH, DELETE, PROPFIND and REPORT.
func Methods() []string {
	return []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete,
		"PROPFIND", "REPORT"}
}

// Defaults of Config.
const (
	DefaultMaxRetries    = 10
	DefaultRetryWaitMin  = 500 * time.Millisecond
	DefaultRetryWaitMax  = 30 * time.Second
	DefaultMaxRetryWait  = time.Minute
	DefaultMaxRedirects  = 10
	DefaultMaxReplayBody = 1 << 20
)

// DefaultResponseHeaderTimeout is the default of Config.ResponseHeaderTimeout:
// each attempt's wait for the upstream's response headers. It is the 100 s
// after which Cloudflare, in front of many providers' APIs, answers 524
// itself (AWS load balancers and nginx give up after 60 s by default), so
// it cuts attempts that would not have been answered anyway, and leaves
// slow but live endpoints (reports, exports, long completions) alone.
const DefaultResponseHeaderTimeout = 100 * time.Second

// Target is what the proxy needs to call a connection's API: the connection
// with its credentials opened (and refreshed when they were about to
// expire), its provider, and the integration's OAuth client when the
// connection signs with it (OAuth 1, TBA) or the provider's templates use
// ${clientId} or ${clientSecret}.
//
// A Target is read-only once returned: the proxy remembers what it
// computed from it (the credentials to inject, the base URL), so a Source
// may return the same *Target for many calls.
type Target struct {
	Connection   *connections.Connection
	Provider     *integrations.Provider
	ClientID     string
	ClientSecret string
	// PrivateKey is the integration's PEM private key, for OAuth 1
	// providers that sign with RSA-SHA1.
	PrivateKey string

	injection atomic.Pointer[injection]
	base      atomic.Pointer[baseResult]
}

type baseResult struct {
	u   *url.URL
	err error
}

// Source finds the target of a call. With forceRefresh it refreshes the
// connection's token first (an upstream answered 401); otherwise it
// refreshes it only when it is about to expire. Errors are store errors
// (not found, refresh failed), written as they are.
type Source interface {
	Target(ctx context.Context, environmentID int64, integrationKey, connectionID string, forceRefresh bool) (*Target, error)
}

// SourceFunc adapts a function to Source.
type SourceFunc func(ctx context.Context, environmentID int64, integrationKey, connectionID string, forceRefresh bool) (*Target, error)

// Target calls f.
func (f SourceFunc) Target(ctx context.Context, environmentID int64, integrationKey, connectionID string, forceRefresh bool) (*Target, error) {
	return f(ctx, environmentID, integrationKey, connectionID, forceRefresh)
}

// Config configures a Proxy. Source is required; zero fields take their
// defaults.
type Config struct {
	// Source finds connections and their credentials. Required.
	Source Source
	// Policy says which upstream addresses may be reached (package
	// egress): by default only public ones (loopback, private, link-local,
	// metadata and the other special-purpose addresses are refused).
	// connect.New sets it from connect.Config.Egress.
	Policy Policy
	// Transport sends upstream requests. Defaults to NewTransport(Policy).
	// A Transport set here must enforce an address policy itself, as
	// NewTransport does at dial time; the proxy still refuses literal IP
	// addresses the Policy refuses.
	Transport http.RoundTripper
	// ResponseHeaderTimeout bounds the wait for the response headers of
	// each request sent upstream (each attempt, and each redirect it
	// follows), from the moment the request is written; the body may then
	// stream for as long as it takes. An attempt that times out is retried
	// like a connection reset when the call asked for retries, and the
	// last one is 504 upstream_timeout. Connecting is bounded apart (30 s
	// to dial, 10 s for the TLS handshake), and the whole call by its
	// request's context. Default DefaultResponseHeaderTimeout (100 s);
	// negative means no limit but the request's context. It applies to
	// the default Transport only.
	ResponseHeaderTimeout time.Duration
	// MaxRetries caps the Retries option. Default 10.
	MaxRetries int
	// RetryWaitMin and RetryWaitMax bound the exponential backoff between
	// retries (RetryWaitMin doubled per attempt). Defaults 500 ms and 30 s.
	RetryWaitMin, RetryWaitMax time.Duration
	// MaxRetryWait: when an upstream asks for a longer wait (Retry-After,
	// a rate-limit reset header) or the wait would outlast the request's
	// deadline, the proxy stops retrying and returns that response as it
	// is, so the caller sees the rate limit. Default 1 minute.
	MaxRetryWait time.Duration
	// MaxRedirects is how many redirects are followed; the response of
	// the last one is returned unchanged. Default 10; negative follows
	// none.
	MaxRedirects int
	// MaxRequestBody limits request bodies (413 payload_too_large).
	// Zero means no limit.
	MaxRequestBody int64
	// MaxResponseBody limits upstream response bodies: a larger declared
	// length is 502 upstream_response_too_large, and a body that grows
	// past it is cut off. Zero means no limit.
	MaxResponseBody int64
	// MaxReplayBody: a request body up to this size is kept in memory so
	// that it can be sent again (retries, the retry after a 401 refresh,
	// 307 and 308 redirects); a larger one is streamed once and never
	// retried. Default 1 MiB.
	MaxReplayBody int64
	// Logger receives warnings (failed refresh after a 401, upstream
	// errors). Defaults to discarding them.
	Logger *slog.Logger
	// Now returns the current time; it dates Retry-After values. Defaults
	// to time.Now.
	Now func() time.Time
	// Sleep waits d between two attempts of a call, or until ctx ends,
	// when it returns ctx's error (and the call ends with it). Defaults to
	// a timer. With Now, it lets tests run retries on a clock of their
	// own, without waiting.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Proxy calls providers' APIs with a connection's credentials. Create it
// with New; it is safe for concurrent use.
type Proxy struct {
	cfg    Config
	base   http.RoundTripper
	hop    *hopTransport
	client *http.Client // for go-retryablehttp: the call's own redirects, never net/http's
	bufs   sync.Pool    // *[]byte of 32 KiB, to copy response bodies
	certs  certTransports
}

// New validates cfg and builds a Proxy.
func New(cfg Config) (*Proxy, error) {
	if cfg.Source == nil {
		return nil, errors.New("proxy: Config.Source is required")
	}
	if cfg.MaxRetries < 0 || cfg.RetryWaitMin < 0 || cfg.RetryWaitMax < 0 || cfg.MaxRetryWait < 0 ||
		cfg.MaxRequestBody < 0 || cfg.MaxResponseBody < 0 || cfg.MaxReplayBody < 0 {
		return nil, errors.New("proxy: Config limits and waits must not be negative")
	}
	if cfg.MaxRetries == 0 {
		cfg.MaxRetries = DefaultMaxRetries
	}
	if cfg.RetryWaitMin == 0 {
		cfg.RetryWaitMin = DefaultRetryWaitMin
	}
	if cfg.RetryWaitMax == 0 {
		cfg.RetryWaitMax = DefaultRetryWaitMax
	}
	if cfg.RetryWaitMax < cfg.RetryWaitMin {
		cfg.RetryWaitMax = cfg.RetryWaitMin
	}
	if cfg.MaxRetryWait == 0 {
		cfg.MaxRetryWait = DefaultMaxRetryWait
	}
	if cfg.MaxRedirects == 0 {
		cfg.MaxRedirects = DefaultMaxRedirects
	}
	if cfg.MaxReplayBody == 0 {
		cfg.MaxReplayBody = DefaultMaxReplayBody
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Sleep == nil {
		cfg.Sleep = sleep
	}
	switch {
	case cfg.ResponseHeaderTimeout == 0:
		cfg.ResponseHeaderTimeout = DefaultResponseHeaderTimeout
	case cfg.ResponseHeaderTimeout < 0:
		cfg.ResponseHeaderTimeout = 0 // http.Transport: no limit
	}
	p := &Proxy{cfg: cfg, base: cfg.Transport}
	if p.base == nil {
		tr := NewTransport(cfg.Policy)
		tr.ResponseHeaderTimeout = cfg.ResponseHeaderTimeout
		p.base = tr
	}
	p.hop = &hopTransport{p: p}
	p.client = &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		return callFrom(r.Context()).follow(r)
	}), CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	p.bufs.New = func() any { b := make([]byte, 32<<10); return &b }
	return p, nil
}

// sleep is the default Config.Sleep.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

type callKey struct{}

func callFrom(ctx context.Context) *call {
	c, _ := ctx.Value(callKey{}).(*call)
	return c
}

// ServeHTTP serves one proxy request of the environment: the routing and
// option headers (see ParseHeaders), the endpoint after "/proxy" in the
// request path, the query, the headers prefixed Nango-Proxy- and the body
// go upstream; the upstream's status, headers (but the hop-by-hop ones),
// body and trailers come back streamed and unchanged (informational 1xx
// answers aside). The caller has authenticated the request.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request, environmentID int64) {
	key, id, opts, err := ParseHeaders(r.Header, p.cfg.MaxRetries)
	if err != nil {
		p.writeError(w, r, nil, err)
		return
	}
	endpoint := r.URL.EscapedPath()
	if i := strings.Index(endpoint, "/proxy"); i >= 0 {
		endpoint = endpoint[i+len("/proxy"):]
	}
	if r.URL.RawQuery != "" {
		endpoint += "?" + r.URL.RawQuery
	}
	body := r.Body
	if p.cfg.MaxRequestBody > 0 && body != nil {
		body = http.MaxBytesReader(w, body, p.cfg.MaxRequestBody)
	}
	c, out, err := p.prepare(r.Context(), environmentID, key, id, opts, r.Method, endpoint, forwardHeaders(r.Header, opts), body, r.ContentLength)
	if err != nil {
		p.writeError(w, r, c, err)
		return
	}
	resp, err := c.do(out)
	if err == nil {
		if err = c.finish(resp); err != nil {
			resp.Body.Close()
		}
	}
	if err == nil && resp.StatusCode == http.StatusSwitchingProtocols {
		resp.Body.Close()
		err = errSwitchingProtocols
	}
	if err != nil {
		p.writeError(w, r, c, err)
		return
	}
	p.writeResponse(w, r, resp)
}

var errSwitchingProtocols = errors.New("proxy: the upstream switched protocols, which the proxy does not carry")

// writeResponse streams the upstream's response to the caller: its status,
// its headers but the hop-by-hop ones, its body (flushed as it comes when
// its length is unknown or it is an event stream) and its trailers. When
// the body fails once the status is written, the caller's connection is
// cut (http.ErrAbortHandler), so that a truncated body never passes for a
// whole one.
func (p *Proxy) writeResponse(w http.ResponseWriter, r *http.Request, resp *http.Response) {
	defer resp.Body.Close()
	removeHopByHop(resp.Header)
	h := w.Header()
	for k, vv := range resp.Header {
		h[k] = append(h[k], vv...)
	}
	announced := len(resp.Trailer)
	if announced > 0 {
		names := make([]string, 0, announced)
		for k := range resp.Trailer {
			names = append(names, k)
		}
		h.Add("Trailer", strings.Join(names, ", "))
	}
	w.WriteHeader(resp.StatusCode)
	if err := p.copyBody(w, resp); err != nil {
		if r.Context().Value(http.ServerContextKey) != nil {
			panic(http.ErrAbortHandler)
		}
		return
	}
	resp.Body.Close() // now, to read the trailers
	if len(resp.Trailer) == 0 {
		return
	}
	// A flush forces chunking, without which there is no trailer.
	_ = http.NewResponseController(w).Flush()
	prefix := ""
	if len(resp.Trailer) != announced {
		prefix = http.TrailerPrefix
	}
	for k, vv := range resp.Trailer {
		for _, v := range vv {
			h.Add(prefix+k, v)
		}
	}
}

// copyBody copies the response body to w with a pooled buffer. A body of
// unknown length (a stream) or an event stream is flushed after every
// read, so that the caller gets each part when the upstream sends it.
func (p *Proxy) copyBody(w http.ResponseWriter, resp *http.Response) error {
	var flush func() error
	if resp.ContentLength == -1 || isEventStream(resp.Header.Get("Content-Type")) {
		flush = http.NewResponseController(w).Flush
	}
	bp := p.bufs.Get().(*[]byte)
	defer p.bufs.Put(bp)
	buf := *bp
	for {
		n, rerr := resp.Body.Read(buf)
		if n > 0 {
			if _, err := w.Write(buf[:n]); err != nil {
				return err
			}
			if flush != nil {
				if err := flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
					return err
				}
			}
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			if !errors.Is(rerr, context.Canceled) {
				p.cfg.Logger.Warn("proxy: reading the upstream's body failed; the caller's connection is cut", "err", describe(rerr))
			}
			return rerr
		}
	}
}

func isEventStream(contentType string) bool {
	mt, _, _ := strings.Cut(contentType, ";")
	return strings.EqualFold(strings.TrimSpace(mt), "text/event-stream")
}

// writeError writes one of our own errors; upstream failures are mapped
// to 4xx and 5xx statuses first. The body never holds a secret.
func (p *Proxy) writeError(w http.ResponseWriter, r *http.Request, c *call, err error) {
	mapped := p.mapError(c, err)
	status, _ := httpapi.Resolve(mapped)
	if (status >= 500 || status == http.StatusForbidden) && r.Context().Err() == nil {
		// The host's log gets the cause (the caller's answer never does).
		p.cfg.Logger.WarnContext(r.Context(), "proxy call failed", "status", status, "err", c.redact(describe(err)))
	}
	httpapi.WriteError(w, r, nil, httpapi.StyleStandard, mapped)
}

var errResponseTooLarge = errors.New("proxy: upstream response too large")

// sourceError is a failure of the Source (reading the connection), not of
// the upstream: it is answered as the Source's error, never as
// upstream_error, and a Store's text never reaches the answer.
type sourceError struct{ err error }

func (e *sourceError) Error() string { return e.err.Error() }
func (e *sourceError) Unwrap() error { return e.err }

// mapError turns a transport failure into one of our error bodies.
func (p *Proxy) mapError(c *call, err error) error {
	var se *store.Error
	var mbe *http.MaxBytesError
	var src *sourceError
	switch {
	case errors.As(err, &src):
		return src.err
	case errors.As(err, &mbe):
		return httpapi.WithStatus(http.StatusRequestEntityTooLarge, store.Invalid("payload_too_large",
			fmt.Sprintf("The request body is larger than %d bytes.", mbe.Limit)))
	case errors.Is(err, errResponseTooLarge):
		return httpapi.WithStatus(http.StatusBadGateway, store.Invalid(CodeResponseTooLarge,
			fmt.Sprintf("The upstream response is larger than %d bytes.", p.cfg.MaxResponseBody)))
	case errors.As(err, &se):
		return err
	case errors.Is(err, context.Canceled):
		return httpapi.WithStatus(http.StatusServiceUnavailable, store.Invalid("request_cancelled", "The request was cancelled."))
	}
	return transportFailure(c, err)
}

// TransportFailure is the proxy's answer to an upstream request that got
// no answer, for code that sends requests through the proxy's transport
// itself (a client of Proxy.Client, a reader of an upstream body): the
// *store.Error of AddressRefused for an address the Policy refused; 504
// upstream_timeout for a timeout; 502 upstream_error for anything else
// (refused or reset connections, unknown hosts, TLS failures). Its
// message names no address, port or dial error, so that an answer cannot
// help anyone map a network; the error's cause (store.Error.Err, for the
// host's logs, never for an answer) holds the failure without the request
// URL. HTTPStatus gives the status. Proxy.Do fails the same way.
func TransportFailure(err error) error { return transportFailure(nil, err) }

// transportFailure is TransportFailure, with the cause cleared of the
// secrets the call injected.
func transportFailure(c *call, err error) error {
	var ae *AddressError
	if errors.As(err, &ae) {
		return AddressRefused(ae)
	}
	cause := errors.New(c.redact(describe(err)))
	if isTimeout(err) {
		return httpapi.WithStatus(http.StatusGatewayTimeout, &store.Error{Kind: store.ErrInvalid, Code: CodeUpstreamTimeout,
			Message: "The upstream did not answer in time: could not reach the provider.", Err: cause})
	}
	// Not the dial error: it would tell an open port from a closed one.
	return httpapi.WithStatus(http.StatusBadGateway, &store.Error{Kind: store.ErrInvalid, Code: CodeUpstreamError,
		Message: "The upstream failed: could not reach the provider.", Err: cause})
}

// AddressRefused is the proxy's answer to a request the address policy
// refused: 403 upstream_address_refused (a *store.Error of kind
// store.ErrForbidden; HTTPStatus gives the status). Its message names
// neither the address nor its class, so that the answer cannot help
// anyone map a network, but names the setting that allows private
// networks when the policy names one (egress.Policy.Setting).
func AddressRefused(ae *AddressError) error {
	return httpapi.WithStatus(http.StatusForbidden, store.Errorf(store.ErrForbidden, CodeAddressRefused,
		"The network policy refused the upstream: %s.", ae.Message()))
}

// Error codes of the proxy's own failures.
const (
	CodeAddressRefused     = "upstream_address_refused"
	CodeUpstreamError      = "upstream_error"
	CodeUpstreamTimeout    = "upstream_timeout"
	CodeResponseTooLarge   = "upstream_response_too_large"
	CodeMissingBaseURL     = "missing_base_url"
	CodeMissingConfig      = "missing_connection_config"
	CodeInvalidConfig      = "invalid_connection_config"
	CodeUnsupportedSigning = "unsupported_signature_method"
	// CodeTemplateFailed: a header or query template of the provider that
	// is computed per request (a signature) cannot be computed.
	CodeTemplateFailed = "provider_template_failed"
)

// describe returns a transport error without the request URL, which may
// carry credentials in its query.
func describe(err error) string {
	var ue *url.Error
	for errors.As(err, &ue) {
		err = ue.Err
	}
	return err.Error()
}

// Request is a call made from Go (Proxy.Do).
type Request struct {
	// EnvironmentID is the connection's environment.
	EnvironmentID int64
	// IntegrationKey and ConnectionID name the connection. Required.
	IntegrationKey, ConnectionID string
	// Method defaults to GET.
	Method string
	// Endpoint is the path after the base URL, possibly with a query.
	Endpoint string
	// Query is added to the endpoint's query.
	Query url.Values
	// Header is sent upstream as it is (no Nango-Proxy- prefix), but for
	// the headers the route drops too: hop-by-hop headers, Proxy-*
	// headers, Host and Content-Length. A header set here wins over the
	// injected credentials of the same name.
	Header http.Header
	// Body is the request body; nil for none. Bodies of known length (a
	// *bytes.Reader, *bytes.Buffer or *strings.Reader, or ContentLength
	// set) up to Config.MaxReplayBody can be retried.
	Body io.Reader
	// ContentLength is the length of Body, or -1 for unknown. Set from
	// Body when it is one of the types above.
	ContentLength int64
	Options
}

// Do makes a call from Go: the same request the HTTP route would make,
// with the same credentials, retries, redirects and address policy. The
// response is the upstream's, streamed: the caller must close its body.
// Failures of the proxy itself are *store.Error values with the codes of
// the HTTP route; HTTPStatus tells the status the route would answer. An
// upstream that could not be reached is the error of TransportFailure:
// its Code and Message are fit for an answer, its Error text (with the
// dial error in it) only for the host's logs.
func (p *Proxy) Do(ctx context.Context, req *Request) (*http.Response, error) {
	if req.IntegrationKey == "" || req.ConnectionID == "" {
		return nil, store.Invalid(CodeInvalidHeaders, "IntegrationKey and ConnectionID are required.")
	}
	if req.Retries < 0 || req.Retries > p.cfg.MaxRetries {
		return nil, store.Invalid(CodeInvalidHeaders, fmt.Sprintf("Retries must be between 0 and %d.", p.cfg.MaxRetries))
	}
	if req.BaseURLOverride != "" {
		if _, err := parseBaseURL(req.BaseURLOverride); err != nil {
			return nil, store.Invalid(CodeInvalidHeaders, "BaseURLOverride must be an absolute http or https URL.")
		}
	}
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	endpoint := req.Endpoint
	if len(req.Query) > 0 {
		sep := "?"
		if strings.Contains(endpoint, "?") {
			sep = "&"
		}
		endpoint += sep + req.Query.Encode()
	}
	h := req.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	for k := range h {
		if !upstreamHeader(http.CanonicalHeaderKey(k)) {
			delete(h, k)
		}
	}
	if req.Decompress {
		h.Set("Accept-Encoding", "gzip, deflate")
	}
	length := req.ContentLength
	var body io.ReadCloser
	if req.Body != nil {
		switch b := req.Body.(type) {
		case *bytes.Reader:
			length = int64(b.Len())
		case *bytes.Buffer:
			length = int64(b.Len())
		case *strings.Reader:
			length = int64(b.Len())
		default:
			if length == 0 {
				length = -1
			}
		}
		body = io.NopCloser(req.Body)
		if p.cfg.MaxRequestBody > 0 {
			body = &limitedBody{r: body, n: p.cfg.MaxRequestBody, left: p.cfg.MaxRequestBody}
		}
	}
	c, out, err := p.prepare(ctx, req.EnvironmentID, req.IntegrationKey, req.ConnectionID, req.Options, method, endpoint, h, body, length)
	if err != nil {
		return nil, p.mapError(c, err)
	}
	resp, err := c.do(out)
	if err != nil {
		return nil, p.mapError(c, err)
	}
	if err := c.finish(resp); err != nil {
		resp.Body.Close()
		return nil, p.mapError(c, err)
	}
	removeHopByHop(resp.Header)
	return resp, nil
}

// BaseURL returns the base URL the calls of a connection go to, as Do
// builds it: opts.BaseURLOverride, or the provider's base URL with the
// connection's config filled in, checked against the address policy when
// its host is an address. Failures are those of Do.
func (p *Proxy) BaseURL(ctx context.Context, environmentID int64, integrationKey, connectionID string, opts Options) (*url.URL, error) {
	t, err := p.cfg.Source.Target(ctx, environmentID, integrationKey, connectionID, false)
	if err != nil {
		return nil, p.mapError(nil, &sourceError{err})
	}
	c := &call{p: p, env: environmentID, key: integrationKey, id: connectionID, opts: opts}
	if err := c.setTarget(t); err != nil {
		return nil, p.mapError(c, err)
	}
	u, err := c.baseURL()
	if err != nil {
		return nil, p.mapError(c, err)
	}
	cp := *u // shared with the cached Target
	return &cp, nil
}

// HTTPStatus returns the HTTP status and code the proxy route answers for
// an error of Do.
func HTTPStatus(err error) (int, string) {
	status, d := httpapi.Resolve(err)
	return status, d.Code
}

// limitedBody fails with *http.MaxBytesError past n bytes.
type limitedBody struct {
	r    io.ReadCloser
	n    int64 // the limit
	left int64
}

func (l *limitedBody) Read(b []byte) (int, error) {
	if l.left < 0 {
		return 0, &http.MaxBytesError{Limit: l.n}
	}
	if int64(len(b)) > l.left+1 {
		b = b[:l.left+1]
	}
	n, err := l.r.Read(b)
	l.left -= int64(n)
	if l.left < 0 {
		return 0, &http.MaxBytesError{Limit: l.n}
	}
	return n, err
}

func (l *limitedBody) Close() error { return l.r.Close() }

// prepare finds the connection and builds the upstream request: its URL
// (base URL plus endpoint), headers and body. The body is kept in memory
// when it may have to be sent again.
func (p *Proxy) prepare(ctx context.Context, envID int64, key, id string, opts Options, method, endpoint string,
	h http.Header, body io.ReadCloser, length int64) (*call, *http.Request, error) {
	if p.cfg.MaxRequestBody > 0 && length > p.cfg.MaxRequestBody {
		return nil, nil, &http.MaxBytesError{Limit: p.cfg.MaxRequestBody}
	}
	t, err := p.cfg.Source.Target(ctx, envID, key, id, false)
	if err != nil {
		return nil, nil, &sourceError{err}
	}
	c := &call{p: p, env: envID, key: key, id: id, opts: opts, endpoint: endpoint}
	if err := c.setTarget(t); err != nil {
		return c, nil, err
	}
	base, err := c.baseURL()
	if err != nil {
		return c, nil, err
	}
	c.origin = base
	u, err := joinEndpoint(base, endpoint) // base's host, which baseURL checked
	if err != nil {
		return c, nil, err
	}
	if !validMethod(method) {
		return c, nil, store.Invalid("invalid_method", "The method is not a valid HTTP method.")
	}
	out := (&http.Request{Method: method, URL: u, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, Host: u.Host}).WithContext(context.WithValue(ctx, callKey{}, c))
	if err := c.setBody(out, body, length); err != nil {
		return c, nil, err
	}
	return c, out, nil
}

// setBody attaches the body to out, in memory when it is small enough to
// be replayed (then GetBody is set) and streamed otherwise.
func (c *call) setBody(out *http.Request, body io.ReadCloser, length int64) error {
	if body == nil || body == http.NoBody || length == 0 {
		if body != nil {
			body.Close()
		}
		c.getBody = func() (io.ReadCloser, error) { return http.NoBody, nil }
		c.bodyKept = true
		return nil
	}
	limit := c.p.cfg.MaxReplayBody
	if length > limit {
		out.Body, out.ContentLength = body, length
		return nil
	}
	buf := bytes.NewBuffer(make([]byte, 0, max(min(length, limit), 512)))
	n, err := io.Copy(buf, io.LimitReader(body, limit+1))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return err
		}
		return store.Invalid("invalid_body", "The request body could not be read.")
	}
	if n > limit { // unknown length, larger than the replay limit: stream it
		out.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(buf.Bytes()), body), body}
		out.ContentLength = -1
		return nil
	}
	body.Close()
	b := buf.Bytes()
	c.body, c.bodyKept = b, true
	c.getBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	out.Body, _ = c.getBody()
	out.GetBody = c.getBody
	out.ContentLength = int64(len(b))
	return nil
}

// validMethod reports whether m is an HTTP token.
func validMethod(m string) bool {
	if m == "" {
		return false
	}
	for _, r := range m {
		if r <= ' ' || r >= 0x7f || strings.ContainsRune("()<>@,;:\\\"/[]?={}", r) {
			return false
		}
	}
	return true
}

// joinEndpoint appends an endpoint (escaped path, possibly with a raw
// query) to the base URL. The caller's path and query bytes are kept.
func joinEndpoint(base *url.URL, endpoint string) (*url.URL, error) {
	path, rawQuery, _ := strings.Cut(endpoint, "?")
	u := *base
	basePath := strings.TrimRight(base.EscapedPath(), "/")
	escaped := basePath
	if path = strings.TrimLeft(path, "/"); path != "" || strings.HasSuffix(endpoint, "/") {
		escaped = basePath + "/" + path
	}
	unescaped, err := url.PathUnescape(escaped)
	if err != nil {
		return nil, store.Invalid("invalid_endpoint", "The endpoint's path is not validly escaped.")
	}
	u.Path, u.RawPath = unescaped, ""
	if u.EscapedPath() != escaped {
		u.RawPath = escaped
	}
	switch {
	case base.RawQuery != "" && rawQuery != "":
		u.RawQuery = base.RawQuery + "&" + rawQuery
	case rawQuery != "":
		u.RawQuery = rawQuery
	}
	return &u, nil
}

// hopByHop are the hop-by-hop headers (RFC 9110 section 7.6.1).
var hopByHop = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

func removeHopByHop(h http.Header) {
	for _, f := range h.Values("Connection") {
		for _, sf := range strings.Split(f, ",") {
			if sf = textproto(sf); sf != "" {
				h.Del(sf)
			}
		}
	}
	for _, k := range hopByHop {
		h.Del(k)
	}
}

func textproto(s string) string { return http.CanonicalHeaderKey(strings.TrimSpace(s)) }

// forwarded are the caller's own headers that go upstream unprefixed: the
// description of the body and content negotiation, conditional and range
// requests, and trace context.
var forwarded = []string{"Accept", "Accept-Encoding", "Accept-Language", "Content-Type", "Content-Encoding",
	"Content-Language", "If-Match", "If-None-Match", "If-Modified-Since", "If-Unmodified-Since", "If-Range",
	"Range", "User-Agent", "Traceparent", "Tracestate"}

// notForwarded are headers a caller cannot send upstream, with the
// Nango-Proxy- prefix or in Request.Header; every Proxy-* header is
// refused too (see upstreamHeader). They are dropped, as an HTTP
// intermediary drops hop-by-hop headers, rather than answered 400: the
// Nango clients send any header a caller lists with the prefix, and a
// call written for Nango keeps working.
//
//   - The hop-by-hop headers of RFC 9110 section 7.6.1 (Connection,
//     Keep-Alive, TE, Trailer, Transfer-Encoding, Upgrade, and the older
//     Proxy-Connection) describe one connection, not the request; the
//     proxy frames its own connection to the provider.
//   - Proxy-Authorization (and every Proxy-* header) addresses an
//     intermediary: it would hand the caller's value, or a credential, to
//     a forward proxy between the service and the provider.
//   - Host and Content-Length are the proxy's: the credentials go to the
//     base URL's host, never to a virtual host the caller names (a shared
//     front end routes on Host), and the body's length is what is sent.
//
// Authorization and Cookie are forwarded on purpose: they carry the
// caller's own credentials for the provider ("Nango-Proxy-Authorization:
// Bearer ..." is how a Nango client replaces the injected token, and
// Nango forwards it), they go only to the base URL's origin, and a
// redirect to another origin drops them unless
// Forward-Headers-On-Redirect is true. The caller's own (unprefixed)
// Authorization, the API key, is never forwarded.
var notForwarded = map[string]bool{"Host": true, "Content-Length": true, "Connection": true,
	"Keep-Alive": true, "Te": true, "Trailer": true, "Transfer-Encoding": true, "Upgrade": true}

// upstreamHeader reports whether a caller's header (its canonical name)
// may go upstream: not one of notForwarded, and not a Proxy-* header.
func upstreamHeader(name string) bool {
	return !notForwarded[name] && !strings.HasPrefix(name, "Proxy-")
}

// forwardHeaders builds the upstream headers of a route request: the
// forwarded ones, then every Nango-Proxy- header without its prefix (which
// wins) that upstreamHeader allows. The caller's Authorization, cookies
// and routing headers are dropped, and so is every header the caller's
// Connection header names (hop-by-hop on the caller's own connection).
func forwardHeaders(in http.Header, opts Options) http.Header {
	h := make(http.Header, 8)
	for _, k := range forwarded {
		if v, ok := in[k]; ok {
			h[k] = v
		}
	}
	var hop map[string]bool
	for _, f := range in.Values("Connection") {
		for _, name := range strings.Split(f, ",") {
			if name = textproto(name); name != "" {
				if hop == nil {
					hop = map[string]bool{}
				}
				hop[name] = true
			}
		}
	}
	for k := range hop {
		delete(h, k)
	}
	for k, v := range in {
		if len(k) <= len(HeaderPrefix) || !strings.EqualFold(k[:len(HeaderPrefix)], HeaderPrefix) || hop[http.CanonicalHeaderKey(k)] {
			continue
		}
		name := http.CanonicalHeaderKey(k[len(HeaderPrefix):])
		if !upstreamHeader(name) {
			continue
		}
		h[name] = v
	}
	if opts.Decompress {
		h.Set("Accept-Encoding", "gzip, deflate")
	}
	if _, ok := h["User-Agent"]; !ok {
		// None rather than Go's own.
		h["User-Agent"] = []string{""}
	}
	return h
}

// finish applies decompression and the response size limit.
func (c *call) finish(resp *http.Response) error {
	if max := c.p.cfg.MaxResponseBody; max > 0 {
		if resp.ContentLength > max {
			return errResponseTooLarge
		}
		resp.Body = &limitedResponse{r: resp.Body, n: max}
	}
	if c.opts.Decompress || (c.target().Provider.Proxy != nil && c.target().Provider.Proxy.Decompress) {
		enc := strings.ToLower(strings.TrimSpace(resp.Header.Get("Content-Encoding")))
		var zr io.ReadCloser
		switch enc {
		case "gzip", "x-gzip":
			zr = &lazyGzip{src: resp.Body}
		case "deflate":
			zr = &lazyFlate{src: resp.Body}
		}
		if zr != nil {
			resp.Body = zr
			resp.Header.Del("Content-Encoding")
			resp.Header.Del("Content-Length")
			resp.ContentLength = -1
			resp.Uncompressed = true
		}
	}
	return nil
}

type limitedResponse struct {
	r io.ReadCloser
	n int64
}

func (l *limitedResponse) Read(b []byte) (int, error) {
	if l.n <= 0 { // at the limit: anything more is too much
		var one [1]byte
		n, err := l.r.Read(one[:])
		if n > 0 {
			return 0, errResponseTooLarge
		}
		return 0, err
	}
	if int64(len(b)) > l.n {
		b = b[:l.n]
	}
	n, err := l.r.Read(b)
	l.n -= int64(n)
	return n, err
}

func (l *limitedResponse) Close() error { return l.r.Close() }

// lazyGzip opens the gzip stream on first read, so that a malformed header
// fails the body read (the status and headers are already decided).
type lazyGzip struct {
	src io.ReadCloser
	zr  *gzip.Reader
}

func (g *lazyGzip) Read(b []byte) (int, error) {
	if g.zr == nil {
		zr, err := gzip.NewReader(g.src)
		if err != nil {
			return 0, err
		}
		g.zr = zr
	}
	return g.zr.Read(b)
}

func (g *lazyGzip) Close() error { return g.src.Close() }

type lazyFlate struct {
	src io.ReadCloser
	zr  io.ReadCloser
}

func (f *lazyFlate) Read(b []byte) (int, error) {
	if f.zr == nil {
		zr, err := zlib.NewReader(f.src)
		if err != nil {
			return 0, err
		}
		f.zr = zr
	}
	return f.zr.Read(b)
}

func (f *lazyFlate) Close() error { return f.src.Close() }
