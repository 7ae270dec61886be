package connections

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/sync/singleflight"

	"github.com/embedauth/connect/egress"
	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/internal/httpapi"
	"github.com/embedauth/connect/internal/jsonvalue"
	"github.com/embedauth/connect/oplog"
	"github.com/embedauth/connect/store"
	"github.com/embedauth/connect/webhooks"
)

// Defaults of RefreshConfig.
const (
	// DefaultRefreshThreshold: a token expiring within it is refreshed on
	// read, once it has at most half of its lifetime left (RefreshDue).
	DefaultRefreshThreshold = 15 * time.Minute
	// DefaultRefreshTimeout bounds one request to a provider's token
	// endpoint.
	DefaultRefreshTimeout = 10 * time.Second
	// DefaultRefreshBackoff: a non-forced read within it of a failed
	// refresh does not call the provider again.
	DefaultRefreshBackoff = 30 * time.Second
	// DefaultClientCredentialsExpiry is the lifetime assumed for a
	// client-credentials token whose response has no expires_in.
	DefaultClientCredentialsExpiry = 55 * time.Minute
	// MaxTokenResponseSize bounds the token response bodies read.
	MaxTokenResponseSize = 1 << 20
)

// Errors of a refresh, matched with errors.Is. Both are answered with
// HTTP 400, as Nango does; the error body's code tells them apart.
var (
	// ErrRefreshFailed: the provider refused the refresh or could not be
	// reached. errors.As finds the *RefreshError.
	ErrRefreshFailed = errors.New("connections: token refresh failed")
	// ErrRefreshBackoff: a refresh failed less than RefreshConfig.Backoff
	// ago, so a non-forced read did not try again.
	ErrRefreshBackoff = errors.New("connections: token refresh backing off after a failure")
)

// Wire codes of refresh errors: the error.code of the HTTP error body and
// the webhook's error.type when the provider sent no error code.
const (
	CodeRefreshFailed  = "refresh_token_external_error"
	CodeRefreshBackoff = "connection_refresh_backoff"
	// CodeRefreshInProgress is a 503: another refresh of the connection
	// held its lock longer than expected.
	CodeRefreshInProgress = "connection_refresh_in_progress"
)

// Grant types of refresh requests.
const (
	GrantRefreshToken      = "refresh_token"
	GrantClientCredentials = "client_credentials"
)

// RefreshConfig configures the built-in refresher (Service.EnableRefresh).
// Zero fields take their defaults.
type RefreshConfig struct {
	// Threshold: an OAuth 2 token expiring within it is refreshed when the
	// connection is read with its credentials, once it has at most half of
	// its lifetime left (see RefreshDue: a token that lives shorter than
	// the threshold is not refreshed on every read). A provider's
	// token_expiration_buffer (seconds) replaces it. Default 15 minutes.
	Threshold time.Duration
	// Timeout bounds each request to a token endpoint (within the caller's
	// context). Default 10 seconds.
	Timeout time.Duration
	// Backoff: a non-forced read less than Backoff after a failed refresh
	// answers ErrRefreshBackoff without calling the provider. Default 30
	// seconds; negative disables it.
	Backoff time.Duration
	// Policy is the outbound address policy of the default HTTPClient:
	// the zero Policy refuses loopback, private and every other special
	// address (see package egress).
	Policy egress.Policy
	// HTTPClient sends the token requests. Default: a client of its own
	// that enforces Policy at dial time, follows no redirect (a token
	// request is never re-sent, with its secrets, to another URL) and
	// times out after Timeout. A client set here replaces Policy: its
	// transport must enforce an address policy itself (build it on
	// egress.NewTransport).
	HTTPClient *http.Client
	// ClientCredentials returns the OAuth client of an integration, opened.
	// It is used unless the connection carries its own (ConfigOverride, or
	// the client id and secret of OAUTH2_CC credentials). Nil means none:
	// the request then carries no client authentication.
	ClientCredentials func(ctx context.Context, environmentID int64, integrationKey string) (clientID, clientSecret string, err error)
	// AppCredentials returns the app id and PEM private key of an APP
	// integration, opened: they sign the JWT that mints installation
	// tokens. Nil means APP connections are not refreshed.
	AppCredentials func(ctx context.Context, environmentID int64, integrationKey string) (appID, privateKey string, err error)
	// Integration returns an integration with its secrets opened: AWS
	// SigV4 renewals read its STS settings. Nil means AWS SigV4
	// connections are not renewed.
	Integration func(ctx context.Context, environmentID int64, integrationKey string) (*integrations.Integration, error)
	// AWSSTSEndpoint replaces DefaultAWSSTSEndpoint (builtin STS mode).
	AWSSTSEndpoint AWSSTSEndpointFunc
	// Notifier receives the auth webhook (operation refresh) of a
	// connection whose refresh started failing, in the transaction that
	// records the failure. Nil sends none.
	Notifier webhooks.Notifier
	// EnvironmentName names an environment in webhook payloads. Optional.
	EnvironmentName func(ctx context.Context, environmentID int64) (string, error)
	// Logger receives the causes of token requests that got no answer
	// (the caller only learns "address not allowed" or "could not reach
	// the provider"). Nil discards them.
	Logger *slog.Logger
}

func (c *RefreshConfig) applyDefaults() {
	if c.Threshold <= 0 {
		c.Threshold = DefaultRefreshThreshold
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultRefreshTimeout
	}
	if c.Backoff == 0 {
		c.Backoff = DefaultRefreshBackoff
	}
	if c.HTTPClient == nil {
		c.HTTPClient = NewRefreshHTTPClient(c.Timeout, c.Policy)
	}
}

// NewRefreshHTTPClient returns the default client of token requests: its
// own connection pool whose dials the policy checks, no redirects followed
// (a 3xx answer is a failed refresh) and the timeout.
func NewRefreshHTTPClient(timeout time.Duration, policy egress.Policy) *http.Client {
	return &http.Client{
		Transport:     egress.NewTransport(policy),
		Timeout:       timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// RefreshError is a refresh the provider refused or that could not reach
// it. It never holds a token or a client secret.
type RefreshError struct {
	// Status is the HTTP status of the provider's answer; 0 when there was
	// none (network error, timeout, a template that could not be filled),
	// or when a successful answer cannot be stored (a value with a control
	// character).
	Status int
	// Code is the provider's error code, such as invalid_grant; empty when
	// it sent none. When the provider could not be called (Status 0) it is
	// egress.CodeAddressNotAllowed (the address policy refused its address)
	// or egress.CodeUnreachable.
	Code string
	// Description says what went wrong: the provider's error_description
	// (shortened, with the connection's secrets removed) or our own words.
	Description string
	// Err is the underlying transport or decoding error, if any.
	Err error
}

func (e *RefreshError) Error() string {
	var b strings.Builder
	b.WriteString("token refresh failed")
	if e.Status != 0 {
		fmt.Fprintf(&b, ": HTTP %d", e.Status)
	}
	if e.Code != "" {
		fmt.Fprintf(&b, ": %s", e.Code)
	}
	if e.Description != "" {
		fmt.Fprintf(&b, ": %s", e.Description)
	}
	if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	return b.String()
}

func (e *RefreshError) Unwrap() error { return e.Err }

// notSent reports whether the provider was not called (or did not answer):
// its address was not allowed or could not be reached, or the token URL
// could not be built safely. Code then says which.
func (e *RefreshError) notSent() bool {
	switch e.Code {
	case egress.CodeAddressNotAllowed, egress.CodeUnreachable, CodeInvalidConnectionConfig:
		return e.Status == 0
	}
	return false
}

// EnableRefresh installs the built-in refresher, which Get uses: see
// RefreshConfig and the package documentation. It replaces a RefreshFunc
// set before. Call it before the Service is used.
func (s *Service) EnableRefresh(cfg RefreshConfig) {
	cfg.applyDefaults()
	r := &refresher{s: s, cfg: cfg}
	s.refresh = r.refresh
	s.refresher = r
}

type refresher struct {
	s      *Service
	cfg    RefreshConfig
	flight singleflight.Group
}

// lockWait bounds the wait for another transaction's refresh lock: the
// holder calls the provider once (at most Timeout) and writes a few rows.
func (r *refresher) lockWait() time.Duration { return r.cfg.Timeout + 10*time.Second }

// flightTimeout bounds a whole refresh: waiting for the lock, calling the
// provider and writing the outcome.
func (r *refresher) flightTimeout() time.Duration {
	return r.lockWait() + r.cfg.Timeout + 10*time.Second
}

// threshold is how long before expiry the provider's tokens are refreshed.
func (r *refresher) threshold(p *integrations.Provider) time.Duration {
	if p.TokenExpirationBuffer > 0 {
		return time.Duration(p.TokenExpirationBuffer) * time.Second
	}
	return r.cfg.Threshold
}

// grantFor returns how the credentials can be renewed, or "" when they
// cannot: OAuth 2 with a refresh token (refresh_token grant), OAuth 2 of a
// client-credentials provider, and OAUTH2_CC (client_credentials grant).
func grantFor(p *integrations.Provider, creds *Credentials) string {
	if creds == nil {
		return ""
	}
	switch creds.Type {
	case integrations.AuthModeOAuth2:
		if creds.RefreshToken != "" {
			return GrantRefreshToken
		}
		if p.UsesClientCredentials() {
			return GrantClientCredentials
		}
	case integrations.AuthModeOAuth2CC:
		return GrantClientCredentials
	case integrations.AuthModeApp:
		return GrantAppInstallation
	case integrations.AuthModeTwoStep, integrations.AuthModeJWT, integrations.AuthModeSignature, integrations.AuthModeBill:
		return GrantTokenExchange
	case integrations.AuthModeAWSSigV4:
		return GrantAWSAssumeRole
	case integrations.AuthModeCustom:
		return GrantCustom
	}
	return ""
}

// due reports whether the credentials are due for a refresh: by a read
// (within 0, see RefreshDue) or by a sweep whose window is within (see
// SweepDue).
func (r *refresher) due(p *integrations.Provider, creds *Credentials, now time.Time, within time.Duration) bool {
	if within <= 0 {
		return RefreshDue(creds, now, r.threshold(p))
	}
	return SweepDue(creds, now, max(r.threshold(p), within))
}

// Lifetime returns the lifetime of the credentials' token, from ObtainedAt
// to ExpiresAt, and false when either is unknown or the span is not
// positive.
func (c *Credentials) Lifetime() (time.Duration, bool) {
	if c.ObtainedAt == nil || c.ExpiresAt == nil {
		return 0, false
	}
	life := c.ExpiresAt.Sub(*c.ObtainedAt)
	return life, life > 0
}

// RefreshDue reports whether a read at now refreshes the credentials (when
// they can be renewed at all): client credentials without a token yet, and
// a token that expires within threshold and, when its lifetime is known
// (Lifetime), has at most half of it left. So a token that lives shorter
// than the threshold is refreshed once it is half used, not on every read;
// a token whose lifetime is unknown is refreshed within the threshold, and
// its successor's lifetime is known. A forced refresh ignores this.
func RefreshDue(c *Credentials, now time.Time, threshold time.Duration) bool {
	if c == nil {
		return false
	}
	if c.Type == integrations.AuthModeOAuth2CC && c.Token == "" {
		return true
	}
	if IsTokenMode(c.Type) && c.Token == "" {
		return true // imported without a token
	}
	if c.Type == integrations.AuthModeAWSSigV4 && c.AccessKeyID == "" {
		return true // imported without temporary credentials
	}
	if c.ExpiresAt == nil {
		return false
	}
	left := c.ExpiresAt.Sub(now)
	if left > threshold {
		return false
	}
	life, ok := c.Lifetime()
	return !ok || left <= life/2
}

// SweepDue reports whether a background sweep at now whose window is window
// (the time until its next pass plus the refresh threshold) refreshes the
// credentials: as RefreshDue with the window for the threshold, except that
// a token obtained less than one window ago is left alone. A token that
// expires before the next pass plus the threshold is thus refreshed ahead
// of the reads that need it, while a token that lives shorter than the
// window (which no sweep could keep fresh without refreshing it at every
// pass) is refreshed once per window, which keeps its grant in use, and by
// the reads that need it in between.
func SweepDue(c *Credentials, now time.Time, window time.Duration) bool {
	if !RefreshDue(c, now, window) {
		return false
	}
	if c.Type == integrations.AuthModeOAuth2CC && c.Token == "" {
		return true
	}
	if _, ok := c.Lifetime(); !ok {
		return true
	}
	return now.Sub(*c.ObtainedAt) >= window
}

// backoffUntil returns when the backoff after c's last failed refresh ends,
// and whether it is still running at now.
func (r *refresher) backoffUntil(c *Connection, now time.Time) (time.Time, bool) {
	if r.cfg.Backoff < 0 || c.LastRefreshFailure == nil {
		return time.Time{}, false
	}
	until := c.LastRefreshFailure.Add(r.cfg.Backoff)
	return until, now.Before(until)
}

// refresh is the RefreshFunc of the built-in refresher.
func (r *refresher) refresh(ctx context.Context, c *Connection, force bool) (*Connection, error) {
	return r.run(ctx, c, force, 0)
}

// run refreshes c when forced, or when its token is due: RefreshDue with
// the provider's threshold for a read (within 0), SweepDue with the
// provider's threshold or within, whichever is longer, for a sweep (which
// passes a within that covers the time until its next pass).
func (r *refresher) run(ctx context.Context, c *Connection, force bool, within time.Duration) (*Connection, error) {
	switch c.AuthMode {
	case integrations.AuthModeOAuth2, integrations.AuthModeOAuth2CC, integrations.AuthModeApp, integrations.AuthModeAWSSigV4, integrations.AuthModeCustom:
	case integrations.AuthModeTwoStep, integrations.AuthModeJWT, integrations.AuthModeSignature, integrations.AuthModeBill:
	default:
		return c, nil
	}
	p, ok := r.s.catalog.Get(c.Provider)
	if !ok {
		return c, nil
	}
	now := r.s.nowUTC()
	// Most reads end here, before the credentials are even opened: a token
	// that does not expire soon (or, for OAuth 2, at all) is not due. (An
	// OAUTH2_CC connection without an expiry may hold no token yet.)
	if !force && ((c.CredentialsExpiresAt != nil && c.CredentialsExpiresAt.After(now.Add(max(r.threshold(p), within)))) ||
		(c.CredentialsExpiresAt == nil && c.AuthMode == integrations.AuthModeOAuth2)) {
		return c, nil
	}
	if err := r.s.open(c); err != nil {
		return nil, err
	}
	if grantFor(p, c.Credentials) == "" || (!force && !r.due(p, c.Credentials, now, within)) {
		return c, nil
	}
	if !force {
		if until, on := r.backoffUntil(c, now); on {
			return nil, r.backoffError(c, until, now)
		}
	}
	// One attempt per connection in this process: concurrent reads share
	// it. Forced and unforced reads fly separately, since an unforced one
	// may end without calling the provider. The attempt runs on a context
	// of its own, so that a caller that gives up does not fail the others.
	envID, intKey, connID := c.EnvironmentID, c.IntegrationKey, c.ConnectionID
	key := strconv.FormatInt(envID, 10) + "\x00" + intKey + "\x00" + connID + "\x00" + strconv.FormatBool(force) + "\x00" + within.String()
	seen := &Connection{Version: c.Version, LastRefreshFailure: cloneTime(c.LastRefreshFailure)}
	ch := r.flight.DoChan(key, func() (any, error) {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.flightTimeout())
		defer cancel()
		return r.locked(fctx, envID, intKey, connID, seen, force, within)
	})
	select {
	case res := <-ch:
		if res.Err != nil {
			return nil, res.Err
		}
		return cloneConnection(res.Val.(*Connection)), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// locked refreshes the connection in a transaction that holds its lock:
// it re-reads the connection and reuses what another process did while
// this one waited, or calls the provider and stores the outcome (new
// tokens, or the failure) before the lock is released. seen is what the
// caller read: its Version and LastRefreshFailure.
func (r *refresher) locked(ctx context.Context, envID int64, key, id string, seen *Connection, force bool, within time.Duration) (*Connection, error) {
	var out *Connection
	var failure error
	err := r.s.store.WithTx(ctx, func(ctx context.Context) error {
		out, failure = nil, nil
		if err := r.lock(ctx, envID, key, id); err != nil {
			return err
		}
		cur, err := r.s.store.GetConnection(ctx, envID, key, id)
		if err != nil {
			return r.s.notFound(ctx, err, envID, key, id)
		}
		if err := r.s.open(cur); err != nil {
			return err
		}
		p, ok := r.s.catalog.Get(cur.Provider)
		if !ok {
			out = cur
			return nil
		}
		grant := grantFor(p, cur.Credentials)
		if grant == "" {
			out = cur
			return nil
		}
		now := r.s.nowUTC()
		if force {
			if cur.Version != seen.Version {
				// Another writer got there while this one waited.
				if cur.LastRefreshFailure != nil && !timeEqual(cur.LastRefreshFailure, seen.LastRefreshFailure) {
					failure = r.failedError(cur, nil)
					return nil
				}
				out = cur
				return nil
			}
		} else {
			if !r.due(p, cur.Credentials, now, within) {
				out = cur
				return nil
			}
			if until, on := r.backoffUntil(cur, now); on {
				failure = r.backoffError(cur, until, now)
				return nil
			}
		}
		tr, perr := r.call(ctx, p, cur, grant)
		if perr == nil {
			perr = unstorableAnswer(p, cur, tr, grant, now)
		}
		if perr != nil {
			failure, err = r.recordFailure(ctx, cur, grant, force, perr)
			return err
		}
		out, err = r.recordSuccess(ctx, cur, p, grant, force, tr)
		return err
	})
	if err != nil {
		return nil, err
	}
	if failure != nil {
		return nil, failure
	}
	return out, nil
}

// lock takes the connection's lock, waiting at most lockWait.
func (r *refresher) lock(ctx context.Context, envID int64, key, id string) error {
	lctx, cancel := context.WithTimeout(ctx, r.lockWait())
	defer cancel()
	err := r.s.store.LockConnection(lctx, envID, key, id)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, store.ErrNotFound):
		return r.s.notFound(ctx, err, envID, key, id)
	case lctx.Err() != nil && ctx.Err() == nil:
		return &store.Error{Kind: store.ErrUnavailable, Code: CodeRefreshInProgress,
			Message: "Another refresh of the connection is taking too long; try again.", Err: err}
	}
	return err
}

func timeEqual(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}

// call sends the token request of the grant and parses the answer. Every
// failure is a *RefreshError.
func (r *refresher) call(ctx context.Context, p *integrations.Provider, c *Connection, grant string) (*TokenResponse, error) {
	creds := c.Credentials
	if grant == GrantAppInstallation {
		if r.cfg.AppCredentials == nil {
			return nil, &RefreshError{Description: "no app credentials are configured"}
		}
		appID, key, err := r.cfg.AppCredentials(ctx, c.EnvironmentID, c.IntegrationKey)
		if err != nil {
			return nil, fmt.Errorf("connections: app credentials of integration %q: %w", c.IntegrationKey, err)
		}
		return r.appToken(ctx, p, appID, key, stringMap(c.ConnectionConfig))
	}
	if grant == GrantTokenExchange {
		return r.exchangeToken(ctx, p, c)
	}
	if grant == GrantAWSAssumeRole {
		return r.awsRefresh(ctx, c)
	}
	if grant == GrantCustom {
		return r.customToken(ctx, p, c)
	}
	if reg := creds.Registered; reg != nil && grant == GrantRefreshToken {
		return r.refreshRegistered(ctx, p, c, reg)
	}
	clientID, clientSecret, err := r.client(ctx, c)
	if err != nil {
		return nil, err
	}
	tq := tokenRequest{
		provider: p,
		endpoint: p.TokenURL,
		params:   p.TokenParams,
		vars: integrations.TemplateVars{ConnectionConfig: stringMap(c.ConnectionConfig), ClientID: clientID, ClientSecret: clientSecret,
			Raw: creds.Raw, Extra: map[string]any{"refresh_token": creds.RefreshToken}},
		form:         url.Values{"grant_type": {grant}},
		clientID:     clientID,
		clientSecret: clientSecret,
		secrets:      []string{creds.RefreshToken, creds.AccessToken, creds.Token, clientSecret},
		creds:        creds,
	}
	if grant == GrantRefreshToken {
		tq.params = p.RefreshParams
		if p.RefreshURL != "" {
			tq.endpoint = p.RefreshURL
		}
		tq.form.Set("refresh_token", creds.RefreshToken)
	}
	if s := ccScope(p, grant, c.ConnectionConfig); s != "" {
		tq.form.Set("scope", s)
	}
	return r.post(ctx, tq)
}

// ConfigOAuthScopes is the connection config key of the scopes a
// client-credentials connection asks for (Okta's okta-cc declares it as
// a field: "okta.users.read okta.groups.read").
const ConfigOAuthScopes = "oauth_scopes"

// ccScope is the scope parameter of a client-credentials token request:
// the connection's oauth_scopes config value, as it is, unless the
// provider's token_params set scope themselves.
func ccScope(p *integrations.Provider, grant string, cfg map[string]any) string {
	if grant != GrantClientCredentials {
		return ""
	}
	if _, set := p.TokenParams["scope"]; set {
		return ""
	}
	s, _ := cfg[ConfigOAuthScopes].(string)
	return strings.TrimSpace(s)
}

// tokenRequest is one POST to an OAuth 2 token endpoint.
type tokenRequest struct {
	provider *integrations.Provider
	// endpoint is the token URL template; params are the provider's extra
	// form parameters (templates), filled from vars.
	endpoint string
	params   map[string]string
	vars     integrations.TemplateVars
	// form holds the grant's own parameters (grant_type, code,
	// refresh_token...), which params cannot replace.
	form                   url.Values
	clientID, clientSecret string
	// secrets are scrubbed from error texts.
	secrets []string
	// creds are the connection's credentials, when the request is for
	// one: their client certificate or private key (mode_clientauth.go).
	creds *Credentials
}

// post sends a token request and parses the answer. Every failure is a
// *RefreshError.
func (r *refresher) post(ctx context.Context, tq tokenRequest) (*TokenResponse, error) {
	p := tq.provider
	tu, err := p.RenderURL(tq.endpoint, tq.vars)
	if err != nil {
		return nil, tokenURLError(err, "")
	}
	endpoint := tu.String()
	// One ${now} and one ${random} for the whole request (a JWT's iat
	// and exp, a nonce); ${method}, ${host}, ${path} are the token
	// request's.
	vars := tq.vars.Stable()
	vars.Request = &integrations.TemplateRequest{Method: http.MethodPost, URL: tu, Endpoint: tu.EscapedPath(),
		ContentType: "application/x-www-form-urlencoded"}
	form := url.Values{}
	for _, k := range slices.Sorted(maps.Keys(tq.params)) {
		if _, own := tq.form[k]; own {
			continue
		}
		switch k {
		case "grant_type", "refresh_token", "client_id", "client_secret", "code", "code_verifier", "redirect_uri":
			continue
		}
		v, err := integrations.Interpolate(tq.params[k], vars)
		if err != nil {
			return nil, &RefreshError{Description: fmt.Sprintf("the token request parameter %q cannot be built for this connection", k), Err: err}
		}
		form.Set(k, v)
	}
	for k, vs := range tq.form {
		form[k] = vs
	}
	special, err := r.clientAuthentication(&tq, form, endpoint)
	if err != nil {
		return nil, err
	}
	basic := !special && p.ClientAuthInHeader()
	if !special && !basic && tq.clientID != "" {
		form.Set("client_id", tq.clientID)
		if tq.clientSecret != "" {
			form.Set("client_secret", tq.clientSecret)
		}
	}
	rctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	reqBody, contentType := tokenBody(p, form, form.Encode)
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, endpoint, strings.NewReader(reqBody))
	if err != nil {
		return nil, &RefreshError{Description: "the token request cannot be built", Err: err}
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Accept", "application/json")
	if basic && (tq.clientID != "" || tq.clientSecret != "") {
		req.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString(
			[]byte(url.QueryEscape(tq.clientID)+":"+url.QueryEscape(tq.clientSecret))))
	}
	client, done, err := r.tokenClient(p, tq.creds)
	if err != nil {
		return nil, err
	}
	defer done()
	resp, err := client.Do(req)
	if err != nil {
		return nil, r.unreachable(ctx, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxTokenResponseSize+1))
	if err != nil {
		return nil, &RefreshError{Status: resp.StatusCode, Description: "the token response could not be read", Err: egress.Describe(err)}
	}
	if len(body) > MaxTokenResponseSize {
		return nil, &RefreshError{Status: resp.StatusCode, Description: fmt.Sprintf("the token response is larger than %d bytes", MaxTokenResponseSize)}
	}
	tr, perr := ParseTokenResponse(resp.Header.Get("Content-Type"), body)
	if perr == nil {
		readTokenOptions(p, tr)
		clientCredentialsToken(tq.form.Get("grant_type"), tr)
	}
	ok := resp.StatusCode >= 200 && resp.StatusCode < 300
	switch {
	case tr != nil && tr.Error != "":
		return nil, &RefreshError{Status: resp.StatusCode, Code: sanitize(tr.Error, 100, tq.secrets),
			Description: sanitize(tr.ErrorDescription, 300, tq.secrets)}
	case !ok:
		return nil, &RefreshError{Status: resp.StatusCode, Description: "the token endpoint answered " + resp.Status}
	case perr != nil:
		return nil, &RefreshError{Status: resp.StatusCode, Description: "the token response is not a JSON object or a form", Err: perr}
	case tr.AccessToken == "":
		return nil, &RefreshError{Status: resp.StatusCode, Description: "the token response has no access_token"}
	case textProblem(tr.AccessToken) != "" || textProblem(tr.RefreshToken) != "":
		// Stored, it would fail every request it is sent with.
		return nil, &RefreshError{Status: resp.StatusCode, Description: "the token response's tokens are not one line of text: they were not stored"}
	}
	return tr, nil
}

// client returns the OAuth client of a token request: the connection's
// override, the client of OAUTH2_CC credentials, or the integration's.
func (r *refresher) client(ctx context.Context, c *Connection) (id, secret string, err error) {
	creds := c.Credentials
	if o := creds.ConfigOverride; o != nil && o.ClientID != "" {
		return o.ClientID, o.ClientSecret, nil
	}
	if creds.Type == integrations.AuthModeOAuth2CC && creds.ClientID != "" {
		return creds.ClientID, creds.ClientSecret, nil
	}
	if r.cfg.ClientCredentials == nil {
		return "", "", nil
	}
	id, secret, err = r.cfg.ClientCredentials(ctx, c.EnvironmentID, c.IntegrationKey)
	if err != nil {
		return "", "", fmt.Errorf("connections: client credentials of integration %q: %w", c.IntegrationKey, err)
	}
	return id, secret, nil
}

// tokenURLError is the *RefreshError of a token URL that cannot be built:
// a connection config value that cannot be used where the template puts
// it (code invalid_connection_config: nothing is sent, wherever the value
// came from), a missing one, or a template that makes no http(s) URL.
func tokenURLError(err error, hint string) *RefreshError {
	var ue *integrations.UnsafeValueError
	var mv *integrations.MissingValueError
	switch {
	case errors.As(err, &ue):
		return &RefreshError{Code: CodeInvalidConnectionConfig, Err: err,
			Description: fmt.Sprintf("the connection config %s cannot be used in the token URL: it %s", ue.Key, ue.Reason)}
	case errors.As(err, &mv):
		return &RefreshError{Description: strings.TrimSpace("the token URL cannot be built for this connection " + hint), Err: err}
	}
	return &RefreshError{Description: "the token URL is not an absolute http(s) URL", Err: err}
}

// unreachable is the *RefreshError of a token request that got no answer:
// the address policy refused the provider's address
// (egress.CodeAddressNotAllowed) or it could not be reached
// (egress.CodeUnreachable). It says nothing more, so that neither the
// caller nor the operations log learns an address, a port or a dial error;
// the host's Logger gets the cause.
func (r *refresher) unreachable(ctx context.Context, err error) *RefreshError {
	f := egress.Describe(err)
	if r.cfg.Logger != nil {
		r.cfg.Logger.WarnContext(ctx, "a token request got no answer", "code", f.Code, "err", redactErr(err))
	}
	return &RefreshError{Code: f.Code, Description: f.Message, Err: f}
}

// redactErr drops the URL from an *url.Error: a token URL built from
// connection config is not secret, but there is no need to log it.
func redactErr(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s: %w", ue.Op, ue.Err)
	}
	return err
}

// recordSuccess stores the new tokens (sealed, Version bumped) and clears
// the refresh failure, in the transaction that holds the lock.
func (r *refresher) recordSuccess(ctx context.Context, cur *Connection, p *integrations.Provider, grant string, force bool, tr *TokenResponse) (*Connection, error) {
	now := r.s.nowUTC()
	out, err := r.s.update(ctx, cur.EnvironmentID, cur.IntegrationKey, cur.ConnectionID, true, func(c *Connection) error {
		if c.Credentials == nil {
			return errors.New("connections: the connection lost its credentials during a refresh")
		}
		c.Credentials = mergeTokens(c.Credentials, tr, grant, now)
		c.Errors = withoutAuthErrors(c.Errors)
		c.LastRefreshFailure = nil
		c.RefreshAttempts = 0
		if md := responseMetadata(p, tr); len(md) > 0 {
			if c.ConnectionConfig == nil {
				c.ConnectionConfig = map[string]any{}
			}
			maps.Copy(c.ConnectionConfig, md)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	meta := map[string]any{"grant_type": grant, "forced": force, "refresh_token_rotated": tr.RefreshToken != ""}
	if out.Credentials.ExpiresAt != nil {
		meta["expires_at"] = out.Credentials.ExpiresAt.Format(time.RFC3339)
	}
	if _, err := r.s.log.Record(ctx, &oplog.Entry{EnvironmentID: cur.EnvironmentID, Type: "auth", Operation: "refresh",
		IntegrationKey: cur.IntegrationKey, ConnectionID: cur.ConnectionID, Message: "access token refreshed", Meta: meta}); err != nil {
		return nil, err
	}
	return out, nil
}

// responseMetadata returns the values of the provider's
// token_response_metadata paths that the token response holds, keyed by
// path: the connection config values a refresh sets.
func responseMetadata(p *integrations.Provider, tr *TokenResponse) map[string]any {
	md := map[string]any{}
	for _, path := range p.TokenResponseMetadata {
		if v, ok := lookupPath(tr.Raw, path); ok {
			md[path] = v
		}
	}
	return md
}

// unstorableAnswer returns the *RefreshError of a token response that
// cannot be stored, as a connect refuses one (providerAnswerProblem): the
// credentials it makes, or a connection config value it sets
// (token_response_metadata), with a control character that would fail
// every request it is sent with. The refresh fails like any other bad
// answer, and nothing of it is stored. nil when it can be stored.
func unstorableAnswer(p *integrations.Provider, cur *Connection, tr *TokenResponse, grant string, now time.Time) error {
	problem := providerAnswerProblem(mergeTokens(cur.Credentials, tr, grant, now), responseMetadata(p, tr))
	if problem == "" {
		return nil
	}
	return &RefreshError{Description: "the token response cannot be stored: " + problem}
}

// mergeTokens returns old with the token response applied. A response
// without a refresh token keeps the old one.
func mergeTokens(old *Credentials, tr *TokenResponse, grant string, now time.Time) *Credentials {
	if tr.Credentials != nil {
		return tr.Credentials // a token mode's exchange made the credentials
	}
	if grant == GrantAWSAssumeRole {
		return mergeAWS(old, tr, now)
	}
	if tr.Combined != nil {
		return tr.Combined
	}
	c := *old
	raw := maps.Clone(tr.Raw)
	if raw == nil {
		raw = map[string]any{}
	}
	var exp *time.Time
	if tr.ExpiresIn > 0 {
		t := now.Add(tr.ExpiresIn).Truncate(time.Millisecond)
		exp = &t
	} else if grant == GrantClientCredentials {
		t := now.Add(DefaultClientCredentialsExpiry).Truncate(time.Millisecond)
		exp = &t
	}
	c.ExpiresAt = exp
	obtained := now.Truncate(time.Millisecond)
	c.ObtainedAt = &obtained
	if c.Type == integrations.AuthModeOAuth2CC {
		c.Token = tr.AccessToken
	} else {
		c.AccessToken = tr.AccessToken
	}
	if tr.RefreshToken != "" {
		c.RefreshToken = tr.RefreshToken
	} else if c.RefreshToken != "" {
		raw["refresh_token"] = c.RefreshToken
	}
	if tr.Scope != "" {
		c.Scopes = strings.FieldsFunc(tr.Scope, func(r rune) bool { return r == ' ' || r == ',' })
	}
	c.Raw = raw
	return &c
}

// recordFailure logs the failure, points the connection's auth error at
// the log entry, marks the failure time and, when the connection's
// refreshes were healthy until now, sends the auth webhook, all in the
// transaction that holds the lock. It returns the error for the caller.
func (r *refresher) recordFailure(ctx context.Context, cur *Connection, grant string, force bool, perr error) (error, error) {
	var re *RefreshError
	if !errors.As(perr, &re) {
		return nil, perr // not the provider's doing: let the transaction fail
	}
	now := r.s.nowUTC()
	meta := map[string]any{"grant_type": grant, "forced": force, "attempts": cur.RefreshAttempts + 1}
	if re.Status != 0 {
		meta["status"] = re.Status
	}
	if re.Code != "" {
		meta["error"] = re.Code
	}
	if re.Description != "" {
		meta["error_description"] = re.Description
	}
	if re.Err != nil {
		meta["cause"] = re.Err.Error()
	}
	logID, err := r.s.log.Record(ctx, &oplog.Entry{EnvironmentID: cur.EnvironmentID, Type: "auth", Operation: "refresh",
		Status: oplog.StatusFailure, IntegrationKey: cur.IntegrationKey, ConnectionID: cur.ConnectionID,
		Message: "refreshing the access token failed: " + re.summary(), Meta: meta})
	if err != nil {
		return nil, err
	}
	healthy := cur.LastRefreshFailure == nil
	updated, err := r.s.update(ctx, cur.EnvironmentID, cur.IntegrationKey, cur.ConnectionID, false, func(c *Connection) error {
		c.Errors = append(withoutAuthErrors(c.Errors), Error{Type: ErrorTypeAuth, LogID: logID})
		c.LastRefreshFailure = &now
		c.RefreshAttempts++
		return nil
	})
	if err != nil {
		return nil, err
	}
	if healthy && r.cfg.Notifier != nil {
		if err := r.notify(ctx, updated, re); err != nil {
			return nil, err
		}
	}
	return r.failedError(updated, re), nil
}

// summary is the short form of the error for messages.
func (e *RefreshError) summary() string {
	parts := []string{}
	if e.Status != 0 {
		parts = append(parts, "HTTP "+strconv.Itoa(e.Status))
	}
	if e.Code != "" {
		parts = append(parts, e.Code)
	}
	if e.Description != "" {
		parts = append(parts, e.Description)
	}
	if len(parts) == 0 {
		return "unknown error"
	}
	return strings.Join(parts, ": ")
}

func (r *refresher) notify(ctx context.Context, c *Connection, re *RefreshError) error {
	envName := ""
	if r.cfg.EnvironmentName != nil {
		n, err := r.cfg.EnvironmentName(ctx, c.EnvironmentID)
		if err != nil {
			return err
		}
		envName = n
	}
	typ := re.Code
	if typ == "" {
		typ = CodeRefreshFailed
	}
	desc := re.Description
	if desc == "" {
		desc = re.summary()
	}
	payload := &webhooks.AuthPayload{
		ConnectionID:      c.ConnectionID,
		AuthMode:          c.AuthMode,
		ProviderConfigKey: c.IntegrationKey,
		Provider:          c.Provider,
		Environment:       envName,
		Operation:         webhooks.OperationRefresh,
		Success:           false,
		Error:             &webhooks.ErrorPayload{Type: typ, Description: desc},
		Tags:              c.Tags,
	}
	if id := c.Tags[TagEndUserID]; id != "" {
		payload.EndUser = &webhooks.EndUser{EndUserID: id, OrganizationID: c.Tags[TagOrganizationID], EndUserEmail: c.Tags[TagEndUserEmail]}
	}
	return r.cfg.Notifier.Notify(ctx, webhooks.Event{EnvironmentID: c.EnvironmentID, IntegrationKey: c.IntegrationKey,
		ConnectionID: c.ConnectionID, Type: webhooks.TypeAuth, Operation: webhooks.OperationRefresh, Payload: payload})
}

// authLogID returns the log id of the connection's auth error.
func authLogID(c *Connection) string {
	for _, e := range c.Errors {
		if e.Type == ErrorTypeAuth {
			return e.LogID
		}
	}
	return ""
}

func withoutAuthErrors(errs []Error) []Error {
	out := make([]Error, 0, len(errs))
	for _, e := range errs {
		if e.Type != ErrorTypeAuth {
			out = append(out, e)
		}
	}
	return out
}

// failedError is the error a failed refresh answers: HTTP 400 with code
// refresh_token_external_error, the log id and the provider's status and
// error code in the payload. re is nil when another process's attempt
// failed.
func (r *refresher) failedError(c *Connection, re *RefreshError) error {
	payload := map[string]any{"log_id": authLogID(c)}
	msg := "The provider refused to refresh the access token; see the connection's auth error log."
	var cause error
	if re != nil {
		cause = re
		switch {
		case re.Status != 0:
			payload["provider_status"] = re.Status
			if re.Code != "" {
				payload["provider_error"] = re.Code
			}
		case re.Code != "":
			payload["error"] = re.Code // the provider was not called
		}
		msg = "Refreshing the access token failed: " + re.summary() + "."
	}
	return httpapi.WithStatus(http.StatusBadRequest, &store.Error{Kind: ErrRefreshFailed, Code: CodeRefreshFailed,
		Message: msg, Payload: payload, Err: cause})
}

// backoffError is the error of a read during the backoff after a failure.
func (r *refresher) backoffError(c *Connection, until, now time.Time) error {
	secs := int(math.Ceil(until.Sub(now).Seconds()))
	return httpapi.WithStatus(http.StatusBadRequest, &store.Error{Kind: ErrRefreshBackoff, Code: CodeRefreshBackoff,
		Message: fmt.Sprintf("Refreshing the access token failed at %s; the next attempt is allowed in %ds (or now with force_refresh=true).",
			c.LastRefreshFailure.UTC().Format(time.RFC3339), secs),
		Payload: map[string]any{"log_id": authLogID(c), "retry_after": secs}})
}

// TokenResponse is a parsed answer of an OAuth 2 token endpoint.
type TokenResponse struct {
	AccessToken  string
	RefreshToken string
	// ExpiresIn is the access token's lifetime; 0 when the response gave
	// none or an unusable one (not a positive number of seconds of at most
	// ten years).
	ExpiresIn time.Duration
	TokenType string
	// Scope is the granted scope as sent (an array is joined with spaces).
	Scope string
	// Error and ErrorDescription are the OAuth error fields, when present.
	Error            string
	ErrorDescription string
	// Raw is the whole response: a JSON object as decoded by
	// encoding/json, or the fields of a form (first value of each).
	Raw map[string]any
	// Credentials are the new credentials a token mode's exchange made
	// (see IsTokenMode); nil for an OAuth token response.
	Credentials *Credentials
	// Combined is set by the refresh of CUSTOM credentials: the whole new
	// credentials (app and user tokens), which replace the old ones.
	Combined *Credentials
}

// maxExpiresIn bounds a usable expires_in.
const maxExpiresIn = 10 * 365 * 24 * time.Hour

// ParseTokenResponse parses a token endpoint's answer: a JSON object, or an
// application/x-www-form-urlencoded body (GitHub answers with one unless
// asked for JSON). expires_in may be a number or a numeric string. A
// response that is neither (an HTML error page, a JSON array) is an error;
// missing fields are not (the caller checks access_token).
func ParseTokenResponse(contentType string, body []byte) (*TokenResponse, error) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return nil, errors.New("empty token response")
	}
	media, _, _ := mime.ParseMediaType(contentType)
	var raw map[string]any
	switch {
	case body[0] == '{' || media == "application/json" || strings.HasSuffix(media, "+json"):
		dec := json.NewDecoder(bytes.NewReader(body))
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("token response: %w", err)
		}
		if raw == nil {
			return nil, errors.New("token response: not a JSON object")
		}
		if _, err := dec.Token(); err != io.EOF {
			return nil, errors.New("token response: data after the JSON object")
		}
	case media == "application/x-www-form-urlencoded" || media == "text/plain" || media == "":
		if !utf8.Valid(body) || bytes.ContainsAny(body, "\r\n<>") || !bytes.Contains(body, []byte("=")) {
			return nil, errors.New("token response: not a form")
		}
		vals, err := url.ParseQuery(string(body))
		if err != nil {
			return nil, fmt.Errorf("token response: %w", err)
		}
		raw = make(map[string]any, len(vals))
		for k, v := range vals {
			raw[k] = v[0]
		}
	default:
		return nil, fmt.Errorf("token response: unexpected content type %q", media)
	}
	tr := &TokenResponse{Raw: raw}
	tr.AccessToken, _ = raw["access_token"].(string)
	tr.RefreshToken, _ = raw["refresh_token"].(string)
	tr.TokenType, _ = raw["token_type"].(string)
	tr.ExpiresIn = parseExpiresIn(raw["expires_in"])
	switch s := raw["scope"].(type) {
	case string:
		tr.Scope = s
	case []any:
		parts := make([]string, 0, len(s))
		for _, v := range s {
			if str, ok := v.(string); ok {
				parts = append(parts, str)
			}
		}
		tr.Scope = strings.Join(parts, " ")
	}
	switch e := raw["error"].(type) {
	case string:
		tr.Error = e
	case map[string]any: // {"error": {"code": ..., "message": ...}}
		for _, k := range []string{"code", "type", "status"} {
			if s, ok := e[k].(string); ok && s != "" {
				tr.Error = s
				break
			}
		}
		if tr.Error == "" {
			tr.Error = "error"
		}
		tr.ErrorDescription, _ = e["message"].(string)
	case bool:
		if e {
			tr.Error = "error"
		}
	}
	if d, ok := raw["error_description"].(string); ok {
		tr.ErrorDescription = d
	}
	if tr.Error == "" {
		// Slack and a few others answer 200 {"ok": false, "error": ...}.
		if okv, isBool := raw["ok"].(bool); isBool && !okv {
			tr.Error = "error"
		}
	}
	return tr, nil
}

// readTokenOptions applies the provider's options on reading a token
// response (see integrations.AuthDetails): expires_in in milliseconds,
// and the token under alternate_access_token_response_path when the
// response has none at the top level.
func readTokenOptions(p *integrations.Provider, tr *TokenResponse) {
	ms := p.ExpiresInUnit == integrations.ExpiresInMilliseconds
	if ms {
		tr.ExpiresIn = parseExpiresInMillis(tr.Raw["expires_in"])
	}
	path := p.AlternateAccessTokenResponsePath
	if tr.AccessToken != "" || path == "" {
		return
	}
	v, _ := lookupPath(tr.Raw, path)
	switch alt := v.(type) {
	case string:
		tr.AccessToken = alt
	case map[string]any:
		tr.AccessToken, _ = alt["access_token"].(string)
		if rt, _ := alt["refresh_token"].(string); rt != "" {
			tr.RefreshToken = rt
		}
		if _, has := alt["expires_in"]; has {
			if ms {
				tr.ExpiresIn = parseExpiresInMillis(alt["expires_in"])
			} else {
				tr.ExpiresIn = parseExpiresIn(alt["expires_in"])
			}
		}
	}
}

// parseExpiresInMillis is parseExpiresIn of a number of milliseconds.
func parseExpiresInMillis(v any) time.Duration {
	switch x := v.(type) {
	case float64:
		v = x / 1000
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		if err != nil {
			return 0
		}
		v = f / 1000
	}
	return parseExpiresIn(v)
}

func parseExpiresIn(v any) time.Duration {
	var secs float64
	switch x := v.(type) {
	case float64:
		secs = x
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		if err != nil {
			return 0
		}
		secs = f
	default:
		return 0
	}
	if math.IsNaN(secs) || secs <= 0 || secs > maxExpiresIn.Seconds() {
		return 0
	}
	return time.Duration(secs * float64(time.Second))
}

// sanitize shortens a provider's text, drops control characters and
// replaces any of the secrets it contains.
func sanitize(s string, max int, secrets []string) string {
	for _, sec := range secrets {
		if len(sec) >= 4 {
			s = strings.ReplaceAll(s, sec, "[redacted]")
		}
	}
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == utf8.RuneError {
			return -1
		}
		return r
	}, s)
	if utf8.RuneCountInString(s) > max {
		s = string([]rune(s)[:max]) + "…"
	}
	return strings.TrimSpace(s)
}

// stringMap renders connection config values for templates: strings as
// they are, other values as JSON (numbers without a fraction as integers).
func stringMap(m map[string]any) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		switch x := v.(type) {
		case nil:
		case string:
			out[k] = x
		case float64:
			out[k] = strconv.FormatFloat(x, 'f', -1, 64)
		case bool:
			out[k] = strconv.FormatBool(x)
		default:
			if b, err := json.Marshal(x); err == nil {
				out[k] = string(b)
			}
		}
	}
	return out
}

// lookupPath finds a dot path ("team.id") in a decoded JSON object.
func lookupPath(m map[string]any, path string) (any, bool) {
	if v, ok := m[path]; ok {
		return v, true
	}
	var cur any = m
	for _, part := range strings.Split(path, ".") {
		obj, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = obj[part]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// cloneConnection deep-copies c, so that the callers sharing one refresh
// each get a connection of their own.
func cloneConnection(c *Connection) *Connection {
	cp := *c
	cp.ConnectionConfig = jsonvalue.CloneMap(c.ConnectionConfig)
	cp.Metadata = jsonvalue.CloneMap(c.Metadata)
	cp.Tags = maps.Clone(c.Tags)
	cp.Errors = slices.Clone(c.Errors)
	cp.CredentialsExpiresAt = cloneTime(c.CredentialsExpiresAt)
	cp.LastFetchedAt = cloneTime(c.LastFetchedAt)
	cp.LastRefreshFailure = cloneTime(c.LastRefreshFailure)
	if c.Credentials != nil {
		cr := *c.Credentials
		cr.ExpiresAt = cloneTime(cr.ExpiresAt)
		cr.ObtainedAt = cloneTime(cr.ObtainedAt)
		cr.Raw = jsonvalue.CloneMap(cr.Raw)
		cr.Scopes = slices.Clone(cr.Scopes)
		if cr.ConfigOverride != nil {
			o := *cr.ConfigOverride
			cr.ConfigOverride = &o
		}
		cp.Credentials = &cr
	}
	return &cp
}

func cloneTime(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	v := *t
	return &v
}
