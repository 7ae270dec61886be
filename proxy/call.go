package proxy

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/dghubble/oauth1"
	"github.com/hashicorp/go-retryablehttp"

	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/internal/uuid"
	"github.com/embedauth/connect/store"
)

// call is one proxied request: the connection, its injected credentials
// and the options. It travels in the request context.
type call struct {
	p       *Proxy
	env     int64
	key, id string
	opts    Options
	// origin is the base URL: requests to its scheme and host carry the
	// credentials.
	origin *url.URL
	// getBody returns the body again; nil when it cannot be replayed.
	getBody func() (io.ReadCloser, error)
	// noFollow: redirects are returned, not followed (Client transport).
	noFollow bool

	// endpoint is the endpoint asked for, with its query, as Nango's
	// ${endpoint} is: the path after /proxy and the query.
	endpoint string
	// body is the request body when it is kept in memory (bodyKept).
	body     []byte
	bodyKept bool

	mu        sync.Mutex
	t         *Target
	cred      *injection
	refreshed bool
}

// injection is what a target adds to requests to its origin.
type injection struct {
	header []headerField // by canonical name, each once
	query  [][2]string
	signer *oauth1.Transport // OAuth 1 and TBA
	aws    *connections.AWSSigV4
	// tls presents the connection's client certificate (mtls.go).
	tls     http.RoundTripper
	secrets []string
	// perRequest are the header and query templates whose value depends
	// on the request, the clock or chance (signatures, dates, nonces),
	// evaluated for each request with vars; needsBody: one of them reads
	// the body.
	perRequest []perRequestField
	needsBody  bool
	vars       integrations.TemplateVars
}

// perRequestField is a header (or query parameter) computed per request.
type perRequestField struct {
	name      string
	canonical string // a header's canonical name
	query     bool
	tmpl      *integrations.Template
}

// headerField is a header an injection sets: its canonical name and its
// one value (a slice, as http.Header holds it; not modified).
type headerField struct {
	name   string
	values []string
}

// setHeader sets the header named k to v, as http.Header.Set does.
func (inj *injection) setHeader(k, v string) {
	k = http.CanonicalHeaderKey(k)
	for i := range inj.header {
		if inj.header[i].name == k {
			inj.header[i].values = []string{v}
			return
		}
	}
	inj.header = append(inj.header, headerField{name: k, values: []string{v}})
}

// delHeader removes the header named k.
func (inj *injection) delHeader(k string) {
	k = http.CanonicalHeaderKey(k)
	inj.header = slices.DeleteFunc(inj.header, func(f headerField) bool { return f.name == k })
}

func (c *call) target() *Target {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *call) injection() *injection {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cred
}

// setTarget computes the credentials to inject for t, once per Target: a
// Source that returns the same *Target again (a cache) saves the work.
func (c *call) setTarget(t *Target) error {
	if t == nil || t.Connection == nil || t.Provider == nil {
		return errors.New("proxy: Source returned an incomplete target")
	}
	inj := t.injection.Load()
	if inj == nil {
		var err error
		if inj, err = c.p.inject(t); err != nil {
			return err
		}
		t.injection.Store(inj)
	}
	c.mu.Lock()
	c.t, c.cred = t, inj
	c.mu.Unlock()
	return nil
}

// redact removes credential values from s.
func (c *call) redact(s string) string {
	if c == nil {
		return s
	}
	inj := c.injection()
	if inj == nil {
		return s
	}
	for _, v := range inj.secrets {
		if len(v) >= 4 {
			s = strings.ReplaceAll(s, v, "[redacted]")
		}
	}
	return s
}

// vars returns the template values of a target.
func vars(t *Target) integrations.TemplateVars {
	conn := t.Connection
	v := integrations.TemplateVars{
		ConnectionConfig: make(map[string]string, len(conn.ConnectionConfig)),
		Credentials:      map[string]string{},
		ClientID:         t.ClientID,
		ClientSecret:     t.ClientSecret,
	}
	for k, x := range conn.ConnectionConfig {
		switch x := x.(type) {
		case string:
			v.ConnectionConfig[k] = x
		case nil:
		default:
			v.ConnectionConfig[k] = fmt.Sprint(x)
		}
	}
	cr := conn.Credentials
	if cr == nil {
		return v
	}
	v.Raw = cr.Raw
	if cr.Token != "" {
		v.Extra = map[string]any{"token": cr.Token}
	}
	for k, x := range cr.Raw {
		if s, ok := x.(string); ok {
			v.Credentials[k] = s
		}
	}
	switch cr.Type {
	case integrations.AuthModeOAuth2, integrations.AuthModeApp:
		v.AccessToken = cr.AccessToken
	case integrations.AuthModeCustom:
		v.AccessToken = customAccessToken(cr)
	case integrations.AuthModeOAuth2CC:
		v.AccessToken = cr.Token
		if cr.ClientID != "" {
			v.ClientID, v.ClientSecret = cr.ClientID, cr.ClientSecret
		}
	case integrations.AuthModeAPIKey:
		v.APIKey = cr.APIKey
		v.Credentials["apiKey"] = cr.APIKey
	case integrations.AuthModeBasic:
		v.Credentials["username"], v.Credentials["password"] = cr.Username, cr.Password
	case integrations.AuthModeOAuth1:
		v.Credentials["oauth_token"], v.Credentials["oauth_token_secret"] = cr.OAuthToken, cr.OAuthTokenSecret
	case integrations.AuthModeTBA:
		v.Credentials["token_id"], v.Credentials["token_secret"] = cr.TokenID, cr.TokenSecret
	case integrations.AuthModeTwoStep, integrations.AuthModeJWT, integrations.AuthModeSignature, integrations.AuthModeBill:
		tokenVars(&v, cr)
	}
	if cr.ConfigOverride != nil && cr.ConfigOverride.ClientID != "" {
		v.ClientID, v.ClientSecret = cr.ConfigOverride.ClientID, cr.ConfigOverride.ClientSecret
	}
	return v
}

// inject computes what requests to the target's origin carry: the auth
// mode's Authorization (Bearer for OAuth 2, app and client-credentials
// tokens, Basic for BASIC), then the provider's header templates (which
// win; a header whose template cannot be filled is left out), the
// provider's query templates, and for OAuth 1 and TBA a signer.
func (p *Proxy) inject(t *Target) (*injection, error) {
	v := vars(t)
	inj := &injection{}
	cr := t.Connection.Credentials
	if cr == nil {
		cr = &connections.Credentials{Type: t.Connection.AuthMode}
	}
	switch cr.Type {
	case integrations.AuthModeOAuth2, integrations.AuthModeApp, integrations.AuthModeOAuth2CC, integrations.AuthModeCustom:
		if v.AccessToken != "" {
			inj.setHeader("Authorization", "Bearer "+v.AccessToken)
		}
	case integrations.AuthModeBasic:
		inj.setHeader("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(cr.Username+":"+cr.Password)))
	case integrations.AuthModeTwoStep, integrations.AuthModeJWT, integrations.AuthModeSignature:
		if tokenBearer(t.Provider, cr) {
			inj.setHeader("Authorization", "Bearer "+cr.Token)
		}
	case integrations.AuthModeOAuth1, integrations.AuthModeTBA:
		s, err := p.signer(t, cr, v)
		if err != nil {
			return nil, err
		}
		inj.signer = s
	case integrations.AuthModeAWSSigV4:
		inj.aws = awsSigner(t, cr)
	}
	if t.Provider.RequireClientCertificate {
		var err error
		if inj.tls, err = p.clientCertTransport(cr); err != nil {
			return nil, err
		}
	}
	if px := t.Provider.Proxy; px != nil {
		for _, f := range []struct {
			m     map[string]string
			query bool
		}{{px.Headers, false}, {px.Query, true}} {
			for _, k := range slices.Sorted(maps.Keys(f.m)) {
				tmpl, err := integrations.ParseTemplate(f.m[k])
				if err != nil {
					continue // the catalogue validates templates: left out, as one without values
				}
				if tmpl.PerRequest() {
					if !f.query {
						// The template replaces the auth mode's header
						// (Duo's and AWS's Authorization over Basic).
						inj.delHeader(k)
					}
					inj.perRequest = append(inj.perRequest, perRequestField{name: k, canonical: http.CanonicalHeaderKey(k), query: f.query, tmpl: tmpl})
					inj.needsBody = inj.needsBody || readsBody(tmpl)
					continue
				}
				val, err := tmpl.Eval(&v)
				if err != nil {
					continue
				}
				if f.query {
					inj.query = append(inj.query, [2]string{k, val})
				} else {
					inj.setHeader(k, val)
				}
			}
		}
		if len(inj.perRequest) > 0 {
			inj.vars = v
		}
	}
	for _, s := range []string{cr.Token, v.AccessToken, v.APIKey, cr.RefreshToken, cr.Password, cr.OAuthTokenSecret,
		cr.TokenSecret, cr.ClientSecret, v.ClientSecret, cr.OAuthToken, cr.SecretAccessKey, cr.SessionToken} {
		if s != "" {
			inj.secrets = append(inj.secrets, s, url.QueryEscape(s))
		}
	}
	for _, f := range inj.header {
		inj.secrets = append(inj.secrets, f.values...)
	}
	for _, q := range inj.query {
		inj.secrets = append(inj.secrets, q[1], url.QueryEscape(q[1]))
	}
	return inj, nil
}

// readsBody reports whether a per-request template reads the body.
func readsBody(t *integrations.Template) bool {
	for _, n := range t.Names() {
		if n == "bodyCanonicalParams" || n == "params" {
			return true
		}
	}
	return strings.Contains(t.String(), "awsSigV4(")
}

// addPerRequest sets the per-request headers and query parameters of r
// (a copy the transport owns): query parameters first, then headers,
// computed over the final URL, each for this request (one ${now} and one
// ${random} for all of them). A header or parameter whose template has no
// value is left out, as when it is computed once; a function that fails
// (a key that is not a key) fails the request.
func (c *call) addPerRequest(inj *injection, r *http.Request) error {
	var body []byte
	if r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0 {
		if !c.bodyKept && inj.needsBody {
			return store.Invalid(CodeTemplateFailed, fmt.Sprintf(
				"The provider signs the request body, which must then be at most %d bytes with a known length.", c.p.cfg.MaxReplayBody))
		}
		body = c.body
	}
	s := newPerRequestState(inj, c.p.cfg.Now)
	defer s.release()
	s.req = integrations.TemplateRequest{Method: r.Method, URL: r.URL, Endpoint: c.endpoint, Body: body,
		ContentType: r.Header.Get("Content-Type")}
	vars := &s.vars
	eval := func(f *perRequestField) (string, bool, error) {
		val, err := f.tmpl.Eval(vars)
		if err == nil {
			return val, true, nil
		}
		if fe := (*integrations.FunctionError)(nil); errors.As(err, &fe) {
			return "", false, store.Invalid(CodeTemplateFailed, fmt.Sprintf("The provider's %s template %s cannot be computed: %s: %s.",
				map[bool]string{true: "query", false: "header"}[f.query], f.name, fe.Function, fe.Problem))
		}
		return "", false, nil
	}
	var raw string
	var query url.Values // r's query, parsed when a query field is met
	headers := 0
	for i := range inj.perRequest {
		f := &inj.perRequest[i]
		if !f.query {
			headers++
			continue
		}
		if query == nil {
			query = r.URL.Query()
		}
		if query.Has(f.name) {
			continue
		}
		val, ok, err := eval(f)
		if err != nil {
			return err
		}
		if ok {
			raw += "&" + url.QueryEscape(f.name) + "=" + url.QueryEscape(val)
		}
	}
	if raw != "" {
		u := *r.URL
		if u.RawQuery == "" {
			raw = raw[1:]
		}
		u.RawQuery += raw
		r.URL = &u
		s.req.URL = r.URL
	}
	values := make([]string, 0, headers) // the headers' values, one each
	for i := range inj.perRequest {
		f := &inj.perRequest[i]
		if _, set := r.Header[f.canonical]; f.query || set {
			continue
		}
		val, ok, err := eval(f)
		if err != nil {
			return err
		}
		if ok {
			values = append(values, val)
			r.Header[f.canonical] = values[len(values)-1 : len(values) : len(values)]
		}
	}
	return nil
}

// perRequestState holds the template values of one request's per-request
// fields: the connection's values, the request, and the one ${now} and
// ${random} of the request, each taken on first use (what
// integrations.TemplateVars.Stable gives, without allocating its clock
// and random functions for each request). States are pooled.
type perRequestState struct {
	vars   integrations.TemplateVars
	req    integrations.TemplateRequest
	clock  func() time.Time
	random func() string
	now    time.Time
	id     string
	hasNow bool
	hasID  bool
	// nowFn and randFn are stableNow and stableRandom, bound once.
	nowFn  func() time.Time
	randFn func() string
}

var perRequestStates = sync.Pool{New: func() any {
	s := new(perRequestState)
	s.nowFn, s.randFn = s.stableNow, s.stableRandom
	return s
}}

// newPerRequestState returns a state for one request to inj's origin,
// with clock as the clock of ${now}.
func newPerRequestState(inj *injection, clock func() time.Time) *perRequestState {
	s := perRequestStates.Get().(*perRequestState)
	s.vars = inj.vars
	s.clock, s.random = clock, uuid.New
	if inj.vars.Random != nil {
		s.random = inj.vars.Random
	}
	s.vars.Now, s.vars.Random, s.vars.Request = s.nowFn, s.randFn, &s.req
	return s
}

func (s *perRequestState) stableNow() time.Time {
	if !s.hasNow {
		s.now, s.hasNow = s.clock(), true
	}
	return s.now
}

func (s *perRequestState) stableRandom() string {
	if !s.hasID {
		s.id, s.hasID = s.random(), true
	}
	return s.id
}

// release returns s to the pool, keeping nothing of the request.
func (s *perRequestState) release() {
	s.vars, s.req = integrations.TemplateVars{}, integrations.TemplateRequest{}
	s.clock, s.random = nil, nil
	s.now, s.id, s.hasNow, s.hasID = time.Time{}, "", false, false
	perRequestStates.Put(s)
}

// signer builds the OAuth 1 signer of a connection: the integration's
// client as consumer and the connection's token. TBA signs with
// HMAC-SHA256 and the account id as realm.
func (p *Proxy) signer(t *Target, cr *connections.Credentials, v integrations.TemplateVars) (*oauth1.Transport, error) {
	cfg := oauth1.NewConfig(v.ClientID, v.ClientSecret)
	token, secret := cr.OAuthToken, cr.OAuthTokenSecret
	method := strings.ToUpper(t.Provider.SignatureMethod)
	if cr.Type == integrations.AuthModeTBA {
		token, secret = cr.TokenID, cr.TokenSecret
		method = "HMAC-SHA256"
		cfg.Realm = strings.ToUpper(strings.ReplaceAll(v.ConnectionConfig["accountId"], "-", "_"))
	}
	sg, err := connections.OAuth1Signer(method, v.ClientSecret, t.PrivateKey)
	switch {
	case errors.Is(err, connections.ErrOAuth1Method):
		return nil, store.Invalid(CodeUnsupportedSigning, fmt.Sprintf("The proxy cannot sign with the OAuth 1 signature method %s.", method))
	case err != nil:
		return nil, store.Invalid(CodeUnsupportedSigning, "The integration's private_key is not an RSA key in PEM form: the proxy cannot sign with RSA-SHA1.")
	}
	cfg.Signer = sg
	tr, ok := oauth1.NewClient(context.Background(), cfg, oauth1.NewToken(token, secret)).Transport.(*oauth1.Transport)
	if !ok {
		return nil, errors.New("proxy: unexpected oauth1 transport")
	}
	tr.Base = p.base
	return tr, nil
}

// baseURL is the Base-Url-Override, or the provider's base URL template
// filled from the connection. The URL returned must not be modified.
func (c *call) baseURL() (*url.URL, error) {
	if c.opts.BaseURLOverride != "" {
		return c.checkedBaseURL()
	}
	t := c.target()
	if b := t.base.Load(); b != nil {
		return b.u, b.err // shared: callers do not modify it
	}
	u, err := c.checkedBaseURL()
	if err == nil {
		t.base.Store(&baseResult{u: u})
	} else {
		t.base.Store(&baseResult{err: err})
	}
	return u, err
}

// checkedBaseURL is computeBaseURL whose host the address policy allows
// (a literal IP address it refuses is refused here; names are checked
// when dialled). Calls go to the base URL's host, so that a base URL
// remembered with the Target needs no check per call.
func (c *call) checkedBaseURL() (*url.URL, error) {
	u, err := c.computeBaseURL()
	if err != nil {
		return nil, err
	}
	if err := c.p.cfg.Policy.CheckHost(u.Hostname()); err != nil {
		return nil, err
	}
	return u, nil
}

func (c *call) computeBaseURL() (*url.URL, error) {
	raw := c.opts.BaseURLOverride
	t := c.target()
	if raw == "" {
		tmpl := baseURLTemplate(t.Provider)
		if tmpl == "" {
			return nil, store.Invalid(CodeMissingBaseURL, fmt.Sprintf(
				"The provider %s has no base URL; send Base-Url-Override (baseUrlOverride).", t.Provider.Name))
		}
		// Rendered safely: a connection config value, stored ones
		// included, cannot pick the host that receives the credentials.
		u, err := t.Provider.RenderURL(tmpl, vars(t))
		if err != nil {
			return nil, baseURLError(err)
		}
		raw = u.String()
	}
	u, err := parseBaseURL(raw)
	if err != nil {
		return nil, store.Invalid(CodeMissingBaseURL, "The base URL is not an absolute http or https URL.")
	}
	return u, nil
}

// baseURLError is the error of a provider base URL that cannot be built:
// 400 invalid_connection_config for a connection config value that cannot
// be used where the template puts it, missing_connection_config for a
// missing one, missing_base_url for a template that makes no URL.
func baseURLError(err error) error {
	var mv *integrations.MissingValueError
	var ue *integrations.UnsafeValueError
	switch {
	case errors.As(err, &ue):
		key := ue.Key
		if key == "" {
			key = ue.Name
		}
		return store.Invalid(CodeInvalidConfig, fmt.Sprintf(
			"The connection config %s cannot be used in the %s of the provider's base URL: it %s.", key, ue.Position, ue.Reason),
			store.FieldError{Code: "invalid_value", Message: ue.Reason, Path: []string{"connection_config", key}})
	case errors.As(err, &mv):
		var fe []store.FieldError
		for _, n := range mv.Names {
			fe = append(fe, store.FieldError{Code: "required", Message: "is required", Path: strings.Split(n, ".")})
		}
		return store.Invalid(CodeMissingConfig, fmt.Sprintf(
			"The provider's base URL needs %s, which the connection lacks.", strings.Join(mv.Names, ", ")), fe...)
	}
	return store.Invalid(CodeMissingBaseURL, "The provider's base URL template does not make an absolute http or https URL.")
}

// canRefresh reports whether a 401 may be cured by a refresh: OAuth 2
// (and client-credentials) connections.
func (c *call) canRefresh() bool {
	switch c.target().Connection.AuthMode {
	case integrations.AuthModeOAuth2, integrations.AuthModeOAuth2CC, integrations.AuthModeCustom:
		return true
	case integrations.AuthModeTwoStep, integrations.AuthModeJWT, integrations.AuthModeSignature, integrations.AuthModeBill:
		return true
	}
	return false
}

// do sends the request with retries, and on a 401 of an OAuth 2
// connection refreshes the token once and sends it again.
func (c *call) do(req *http.Request) (*http.Response, error) {
	resp, err := c.send(req)
	if err != nil || resp.StatusCode != http.StatusUnauthorized || c.refreshed || !c.canRefresh() ||
		(c.getBody == nil && req.Body != nil && req.Body != http.NoBody) {
		return resp, err
	}
	c.refreshed = true
	ctx := req.Context()
	t, rerr := c.p.cfg.Source.Target(ctx, c.env, c.key, c.id, true)
	if rerr == nil {
		rerr = c.setTarget(t)
	}
	if rerr != nil {
		c.p.cfg.Logger.WarnContext(ctx, "proxy: refresh after an upstream 401 failed; the 401 is returned",
			"integration", c.key, "connection", c.id, "err", rerr)
		return resp, nil
	}
	drain(resp.Body)
	again := req.Clone(ctx)
	if c.getBody != nil {
		if again.Body, err = c.getBody(); err != nil {
			return nil, err
		}
	}
	return c.send(again)
}

func drain(b io.ReadCloser) {
	_, _ = io.Copy(io.Discard, io.LimitReader(b, 64<<10))
	b.Close()
}

// send makes the request, with retries when they were asked for and the
// body can be replayed.
func (c *call) send(req *http.Request) (*http.Response, error) {
	if c.opts.Retries == 0 || c.getBody == nil {
		return c.follow(req)
	}
	r2 := req.Clone(req.Context())
	r2.Body, r2.GetBody = nil, nil
	rr, err := retryablehttp.FromRequest(r2)
	if err != nil {
		return nil, err
	}
	if req.Body != nil && req.Body != http.NoBody {
		length := req.ContentLength
		if err := rr.SetBody(retryablehttp.ReaderFunc(func() (io.Reader, error) { return c.getBody() })); err != nil {
			return nil, err
		}
		rr.ContentLength = length
	}
	// The wait between attempts goes through Config.Sleep: Backoff only
	// decides it, go-retryablehttp's own timer gets zero, and PrepareRetry
	// (run before each retry) waits.
	var wait time.Duration
	rc := &retryablehttp.Client{
		HTTPClient:   c.p.client,
		RetryWaitMin: c.p.cfg.RetryWaitMin,
		RetryWaitMax: c.p.cfg.RetryWaitMax,
		RetryMax:     c.opts.Retries,
		CheckRetry:   c.checkRetry,
		Backoff: func(minWait, maxWait time.Duration, attempt int, resp *http.Response) time.Duration {
			wait = c.backoff(minWait, maxWait, attempt, resp)
			return 0
		},
		PrepareRetry: func(r *http.Request) error { return c.p.cfg.Sleep(r.Context(), wait) },
		ErrorHandler: retryablehttp.PassthroughErrorHandler,
	}
	resp, err := rc.Do(rr)
	if err != nil && resp != nil {
		drain(resp.Body)
		resp = nil
	}
	return resp, err
}

// checkRetry is the retry policy: the transient network errors of
// retryableError; 5xx and 429 (or the provider's own error codes when its
// catalogue entry lists them); the Retry-On statuses; a provider's
// rate-limit "remaining" header at 0. A response asking for a wait longer
// than MaxRetryWait, or past the request's deadline, is not retried: it is
// returned as it is.
func (c *call) checkRetry(ctx context.Context, resp *http.Response, err error) (bool, error) {
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	if err != nil {
		return retryableError(err), nil
	}
	if !c.retryableStatus(resp) {
		return false, nil
	}
	if w, ok := c.headerWait(resp); ok {
		if w > c.p.cfg.MaxRetryWait {
			return false, nil
		}
		if dl, ok := ctx.Deadline(); ok && c.p.cfg.Now().Add(w).After(dl) {
			return false, nil
		}
	}
	return true, nil
}

// retryableError reports whether a failed attempt may succeed if sent
// again: the network errors Nango's proxy retries (connection reset,
// refused or aborted, timeouts, unreachable host or network, a temporary
// DNS failure such as EAI_AGAIN) and a connection closed before the
// response (EOF, EPIPE). A name that does not exist (NXDOMAIN) and an
// address the Policy refuses are not retried, nor is anything else (TLS
// certificate errors, malformed responses).
func retryableError(err error) bool {
	var ae *AddressError
	if errors.As(err, &ae) {
		return false
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return !dnsErr.IsNotFound && (dnsErr.IsTemporary || dnsErr.IsTimeout)
	}
	for _, e := range retryableErrnos {
		if errors.Is(err, e) {
			return true
		}
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return true
	}
	return isTimeout(err)
}

// retryableErrnos are the system errors of a connection that failed
// before, or while, the upstream answered.
var retryableErrnos = []error{syscall.ECONNRESET, syscall.ECONNREFUSED, syscall.ECONNABORTED, syscall.ETIMEDOUT,
	syscall.EHOSTUNREACH, syscall.ENETUNREACH, syscall.EPIPE}

func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func (c *call) retryableStatus(resp *http.Response) bool {
	code := resp.StatusCode
	if slices.Contains(c.opts.RetryOn, code) {
		return true
	}
	var rc *integrations.Retry
	if px := c.target().Provider.Proxy; px != nil {
		rc = px.Retry
	}
	if rc != nil && rc.Remaining != "" && strings.TrimSpace(resp.Header.Get(rc.Remaining)) == "0" {
		return true
	}
	if rc != nil && len(rc.ErrorCodes) > 0 {
		return matchCodes(rc.ErrorCodes, code)
	}
	return code == http.StatusTooManyRequests || code >= 500
}

// matchCodes matches a status against "429", "5xx" or "500-502" patterns.
func matchCodes(patterns []string, code int) bool {
	s := strconv.Itoa(code)
	for _, p := range patterns {
		p = strings.ToLower(strings.TrimSpace(p))
		if lo, hi, ok := strings.Cut(p, "-"); ok {
			l, e1 := strconv.Atoi(strings.TrimSpace(lo))
			h, e2 := strconv.Atoi(strings.TrimSpace(hi))
			if e1 == nil && e2 == nil && code >= l && code <= h {
				return true
			}
			continue
		}
		if len(p) == 3 && strings.HasSuffix(p, "xx") && p[0] == s[0] {
			return true
		}
		if p == s {
			return true
		}
	}
	return false
}

// headerWait is the wait a response asks for: Retry-After (seconds or an
// HTTP date) and the provider's rate-limit headers (retry.after in
// seconds, retry.at an absolute time); the longest wins.
func (c *call) headerWait(resp *http.Response) (time.Duration, bool) {
	if resp == nil {
		return 0, false
	}
	now := c.p.cfg.Now()
	var wait time.Duration
	found := false
	take := func(d time.Duration, ok bool) {
		if ok {
			found = true
			wait = max(wait, d)
		}
	}
	take(ParseRetryAfter(resp.Header.Get("Retry-After"), now))
	if px := c.target().Provider.Proxy; px != nil && px.Retry != nil {
		for _, h := range px.Retry.After {
			take(ParseRetryAfter(resp.Header.Get(h), now))
		}
		for _, h := range px.Retry.At {
			take(ParseResetAt(resp.Header.Get(h), now))
		}
	}
	return wait, found
}

// backoff waits what the response asks for, or RetryWaitMin doubled per
// attempt up to RetryWaitMax.
func (c *call) backoff(minWait, maxWait time.Duration, attempt int, resp *http.Response) time.Duration {
	if w, ok := c.headerWait(resp); ok {
		return w
	}
	d := minWait
	for i := 0; i < attempt && d < maxWait; i++ {
		d *= 2
	}
	return min(d, maxWait)
}

// follow sends the request and follows up to MaxRedirects redirects (unless
// the call returns them as they are); the response of the last one is
// returned unchanged. 301, 302 and 303 continue with GET (HEAD stays HEAD)
// and no body; 307 and 308 keep the method and send the body again, when
// it can be replayed (otherwise the 307 or 308 is returned). Authorization
// and cookies are dropped on a redirect to another origin (scheme, host
// and port) unless Forward-Headers-On-Redirect is true; the injected
// credentials only ever go to the base URL's origin, or with
// Forward-Headers-On-Redirect to wherever the redirects lead.
func (c *call) follow(req *http.Request) (*http.Response, error) {
	first := req
	for hops := 0; ; hops++ {
		resp, err := c.p.hop.RoundTrip(req)
		if err != nil || c.noFollow || hops >= c.p.cfg.MaxRedirects {
			return resp, err
		}
		next, ok := c.redirect(first, req, resp)
		if !ok {
			return resp, nil
		}
		drain(resp.Body)
		req = next
	}
}

// redirect returns the request a redirect response asks for, or false
// when it is not one to follow.
func (c *call) redirect(first, req *http.Request, resp *http.Response) (*http.Request, bool) {
	method, withBody := req.Method, false
	switch resp.StatusCode {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther:
		if method != http.MethodGet && method != http.MethodHead {
			method = http.MethodGet
		}
	case http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		withBody = true
	default:
		return nil, false
	}
	loc := resp.Header.Get("Location")
	if loc == "" {
		return nil, false
	}
	u, err := req.URL.Parse(loc)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, false
	}
	u.Fragment, u.RawFragment = "", ""
	next := &http.Request{Method: method, URL: u, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: first.Header.Clone(), Host: u.Host, Response: resp}
	next = next.WithContext(req.Context())
	if withBody && req.ContentLength != 0 && req.Body != nil && req.Body != http.NoBody {
		if req.GetBody == nil {
			return nil, false
		}
		body, err := req.GetBody()
		if err != nil {
			return nil, false
		}
		next.Body, next.GetBody, next.ContentLength = body, req.GetBody, req.ContentLength
	} else if !withBody {
		for _, k := range []string{"Content-Type", "Content-Length", "Content-Encoding"} {
			next.Header.Del(k)
		}
	}
	if !c.opts.ForwardHeadersOnRedirect && !sameOrigin(u, first.URL) {
		for _, k := range []string{"Authorization", "Cookie", "Cookie2", "Proxy-Authorization"} {
			next.Header.Del(k)
		}
	}
	return next, true
}

func sameOrigin(a, b *url.URL) bool {
	return a.Scheme == b.Scheme && strings.EqualFold(a.Host, b.Host)
}

// hopTransport injects the credentials into each request that goes to the
// call's origin (every attempt and every redirect hop), or to any host of
// a redirect with Forward-Headers-On-Redirect.
type hopTransport struct{ p *Proxy }

func (h *hopTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	c := callFrom(req.Context())
	if c == nil {
		return h.p.base.RoundTrip(req)
	}
	if !sameOrigin(req.URL, c.origin) && !(c.opts.ForwardHeadersOnRedirect && req.Response != nil) {
		return h.p.base.RoundTrip(req)
	}
	inj := c.injection()
	r := new(http.Request)
	*r = *req // the caller's request is not modified: only the copy's header map and URL are new
	r.Header = make(http.Header, len(req.Header)+len(inj.header)+len(inj.perRequest))
	for k, v := range req.Header {
		r.Header[k] = v
	}
	for _, f := range inj.header {
		if _, ok := r.Header[f.name]; !ok {
			r.Header[f.name] = f.values
		}
	}
	if len(inj.query) > 0 {
		q := r.URL.Query()
		raw := r.URL.RawQuery
		for _, kv := range inj.query {
			if q.Has(kv[0]) {
				continue
			}
			if raw != "" {
				raw += "&"
			}
			raw += url.QueryEscape(kv[0]) + "=" + url.QueryEscape(kv[1])
		}
		u := *r.URL
		u.RawQuery = raw
		r.URL = &u
	}
	if len(inj.perRequest) > 0 {
		if err := c.addPerRequest(inj, r); err != nil {
			if req.Body != nil {
				req.Body.Close()
			}
			return nil, err
		}
	}
	if inj.signer != nil && r.Header.Get("Authorization") == "" {
		return inj.signer.RoundTrip(r)
	}
	if inj.aws != nil {
		if err := c.signAWS(inj.aws, r); err != nil {
			if req.Body != nil {
				req.Body.Close()
			}
			return nil, err
		}
	}
	if inj.tls != nil {
		return inj.tls.RoundTrip(r)
	}
	return h.p.base.RoundTrip(r)
}

// customAccessToken is the token requests of a CUSTOM (GitHub App OAuth)
// connection carry: the app installation token, as Nango's proxy does.
func customAccessToken(cr *connections.Credentials) string {
	if cr.App != nil {
		return cr.App.AccessToken
	}
	return ""
}
