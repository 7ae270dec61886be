package connections

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/embedauth/connect/egress"
	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/oplog"
	"github.com/embedauth/connect/store"
	"github.com/embedauth/connect/webhooks"
)

const purposeFlowSecrets = "oauth_flow.secrets"

// Error types of OAuth flows: the error_type of the frontend client's
// WebSocket error frame (its AuthError.type), of the callback page's
// message and of the status poll. Errors with a code of their own (for
// example integration_not_allowed or missing_connection_config) keep it.
const (
	// FlowErrAuthMode: the integration does not use an OAuth flow.
	FlowErrAuthMode = "auth_mode_err"
	// FlowErrUnknownIntegration: no such integration.
	FlowErrUnknownIntegration = "unknown_config_key"
	// FlowErrProviderConfig: the integration or its provider lacks what
	// the flow needs (a client id, an authorization URL...).
	FlowErrProviderConfig = "provider_config_err"
	// FlowErrState: the callback's state is unknown, used already or
	// expired.
	FlowErrState = "state_err"
	// FlowErrStateCookie: the callback came back to another browser than
	// the one that started the flow.
	FlowErrStateCookie = "state_cookie_err"
	// FlowErrCallback: the provider sent the end user back with an error
	// (access denied, for example) or without a code.
	FlowErrCallback = "callback_err"
	// FlowErrToken: the token request failed.
	FlowErrToken = "token_err"
	// FlowErrURLParam: a query parameter of the flow is invalid.
	FlowErrURLParam = "url_param_err"
	// FlowErrUnknown: anything else; the details are in the logs.
	FlowErrUnknown = "unknown_err"
)

// FlowError is the failure of an OAuth flow step, in the terms the browser
// is told: Type is the error_type, Message is safe to show to the end user.
type FlowError struct {
	Type    string
	Message string
	// Status is the HTTP status of the page or answer: 400 by default.
	Status int
	Err    error
}

func (e *FlowError) Error() string { return e.Type + ": " + e.Message }
func (e *FlowError) Unwrap() error { return e.Err }

func flowErr(typ, format string, args ...any) *FlowError {
	return &FlowError{Type: typ, Message: fmt.Sprintf(format, args...), Status: http.StatusBadRequest}
}

// AsFlowError turns any error of a flow step into a *FlowError: a
// store.Error keeps its code and message; an unexpected error becomes
// unknown_err with a generic message (its details stay in the logs).
func AsFlowError(err error) *FlowError {
	var fe *FlowError
	if errors.As(err, &fe) {
		return fe
	}
	var se *store.Error
	if errors.As(err, &se) && se.Code != "" {
		status := http.StatusBadRequest
		switch {
		case errors.Is(err, store.ErrUnauthorized):
			status = http.StatusUnauthorized
		case errors.Is(err, store.ErrNotFound):
			status = http.StatusNotFound
		case errors.Is(err, store.ErrRateLimited):
			status = http.StatusTooManyRequests
		case errors.Is(err, store.ErrUnavailable):
			status = http.StatusServiceUnavailable
		case errors.Is(err, store.ErrEncryptionKey):
			status = http.StatusInternalServerError
		}
		return &FlowError{Type: se.Code, Message: se.Message, Status: status, Err: err}
	}
	return &FlowError{Type: FlowErrUnknown, Message: "Something went wrong on the server; try again.", Status: http.StatusInternalServerError, Err: err}
}

// OAuthStartInput is a popup's GET /oauth/connect/{integration}: the
// frontend client's auth() for an OAuth integration, or the connect UI's.
type OAuthStartInput struct {
	IntegrationKey string
	// ConnectionID is ignored but on a reconnect session, where it must be
	// empty or the session's connection.
	ConnectionID string
	// ClientID is the ws_client_id: the browser's handle on the flow for
	// the WebSocket and the status poll. Optional.
	ClientID string
	// Params are the end user's connection config values (params[...]).
	Params map[string]string
	// UserScope is Slack's user_scope, comma-separated.
	UserScope string
	// AuthorizationParams are extra query parameters of the authorization
	// URL (authorization_params[...]).
	AuthorizationParams map[string]string
	// OAuthClientID and OAuthClientSecret are the end user's own OAuth app
	// (credentials[oauth_client_id_override] and
	// credentials[oauth_client_secret_override]). They are accepted only
	// when the session's integrations_config_defaults offer it: both keys
	// present and empty.
	OAuthClientID     string
	OAuthClientSecret string
}

// OAuthStart is where the popup goes next, and the cookie that binds the
// flow to the browser.
type OAuthStart struct {
	Flow        *OAuthFlow
	RedirectURL string
	Cookie      *http.Cookie
}

// reserved authorization URL parameters: neither the provider's nor the
// end user's authorization_params may replace them.
var reservedAuthParams = map[string]bool{
	"client_id": true, "redirect_uri": true, "state": true, "response_type": true,
	"code_challenge": true, "code_challenge_method": true, "oauth_token": true,
}

// oauthClient is the OAuth client (or OAuth 1 consumer, or GitHub App) a
// flow uses.
type oauthClient struct {
	id, secret string
	// own is set when the end user brought the client.
	own bool
	// app credentials (APP).
	appID, appLink, privateKey string
	scopes                     string
}

// StartOAuth starts an OAuth flow of a live session: it checks the
// integration and the end user's inputs, stores the flow and returns the
// provider URL the popup is sent to, with the cookie that binds the flow to
// the browser. An OAuth 1 provider is asked for its request token first.
func (ss *Sessions) StartOAuth(ctx context.Context, sess *Session, in OAuthStartInput) (*OAuthStart, error) {
	key := in.IntegrationKey
	if !sess.Allows(key) {
		return nil, store.Invalid(CodeIntegrationNotAllowed, fmt.Sprintf("The connect session does not allow the integration %q.", key))
	}
	it, err := ss.integration(ctx, sess.EnvironmentID, key)
	if err != nil {
		return nil, err
	}
	p, ok := ss.conns.catalog.Get(it.Provider)
	if !ok {
		if err := integrations.UnusableProviderError(ss.conns.catalog, it.Provider); err != nil {
			return nil, err
		}
		return nil, flowErr(FlowErrProviderConfig, "The provider %q of integration %q is not in the catalogue.", it.Provider, key)
	}
	switch p.AuthMode {
	case integrations.AuthModeOAuth2, integrations.AuthModeOAuth1, integrations.AuthModeApp:
	case integrations.AuthModeMCPOAuth2, integrations.AuthModeMCPOAuth2Generic, integrations.AuthModeCustom, integrations.AuthModeInstallPlugin:
	default:
		return nil, flowErr(FlowErrAuthMode, "The integration %q uses the auth mode %s, which has no OAuth flow: use the matching auth call.", key, p.AuthMode)
	}
	if p.AuthMode == integrations.AuthModeOAuth2 && p.UsesClientCredentials() {
		return nil, flowErr(FlowErrAuthMode, "The integration %q uses the client-credentials grant: connect it with POST /oauth2/auth/%s.", key, key)
	}
	if len(in.ClientID) > 200 || strings.ContainsFunc(in.ClientID, func(r rune) bool { return r < 0x21 || r > 0x7e }) {
		return nil, flowErr(FlowErrURLParam, "ws_client_id must be at most 200 printable ASCII characters.")
	}
	connectionID := newConnectionID()
	var existing map[string]any
	if sess.Reconnecting() {
		if in.ConnectionID != "" && in.ConnectionID != sess.ConnectionID {
			return nil, flowErr(FlowErrURLParam, "connection_id must be the connection of the reconnect session.")
		}
		connectionID = sess.ConnectionID
		c, err := ss.conns.store.GetConnection(ctx, sess.EnvironmentID, key, connectionID)
		if err != nil {
			return nil, ss.conns.notFound(ctx, err, sess.EnvironmentID, key, connectionID)
		}
		existing = c.ConnectionConfig
	}
	client, err := ss.flowClient(sess, it, p, in)
	if err != nil {
		return nil, err
	}
	overlay, err := ss.connectionConfig(sess, p, key, in.Params)
	if err != nil {
		return nil, err
	}
	if err := checkPresetParams(sess.IntegrationsConfigDefaults[key], in); err != nil {
		return nil, err
	}
	if p.AuthMode == integrations.AuthModeApp || p.AuthMode == integrations.AuthModeCustom {
		// The app's public page comes from the integration, not from the
		// end user.
		overlay["appPublicLink"] = strings.TrimRight(client.appLink, "/")
	}
	cfg := stringMap(existing)
	maps.Copy(cfg, stringMap(overlay))
	if err := checkRequiredConfig(p, cfg, overlay); err != nil {
		return nil, err
	}
	if err := checkConfigURLs(p, cfg, "params"); err != nil {
		return nil, err
	}
	scopes := ss.flowScopes(sess, key, p, client, in.Params)

	now := ss.conns.nowUTC()
	f := &OAuthFlow{
		EnvironmentID:    sess.EnvironmentID,
		SessionID:        sess.ID,
		ClientID:         in.ClientID,
		IntegrationKey:   key,
		Provider:         it.Provider,
		AuthMode:         p.AuthMode,
		ConnectionID:     connectionID,
		Reconnect:        sess.Reconnecting(),
		ConnectionConfig: overlay,
		Tags:             maps.Clone(sess.Tags),
		Scopes:           scopes,
		Secrets:          &FlowSecrets{},
		Status:           FlowPending,
		CreatedAt:        now,
		ExpiresAt:        now.Add(ss.cfg.FlowTTL),
	}
	if !sess.Reconnecting() || sess.WebhookURLOverride != "" {
		f.WebhookURLOverride = sess.WebhookURLOverride
	}
	if client.own {
		f.Secrets.ClientID, f.Secrets.ClientSecret = client.id, client.secret
	}
	vars := integrations.TemplateVars{ConnectionConfig: cfg, ClientID: client.id, ClientSecret: client.secret}

	var state, redirect string
	switch p.AuthMode {
	case integrations.AuthModeOAuth1:
		state, redirect, err = ss.startOAuth1(ctx, p, client, vars, f, scopes, in.AuthorizationParams, sess)
	case integrations.AuthModeMCPOAuth2, integrations.AuthModeMCPOAuth2Generic:
		state, redirect, err = ss.startMCP(ctx, p, client, vars, f, scopes, in, sess)
	case integrations.AuthModeCustom, integrations.AuthModeInstallPlugin:
		state = randomToken()
		redirect, err = installURL(p, client, vars, state)
	default:
		state = randomToken()
		redirect, err = ss.authorizationURL(p, client, vars, f, state, scopes, in, sess)
	}
	if err != nil {
		return nil, err
	}
	f.StateHash = hashState(state)
	browser := randomToken()
	f.BrowserHash = hashState(browser)
	if err := ss.sealFlow(ctx, f); err != nil {
		return nil, err
	}
	if err := ss.cfg.Store.CreateOAuthFlow(ctx, f); err != nil {
		return nil, err
	}
	if _, err := ss.conns.log.Record(ctx, &oplog.Entry{EnvironmentID: f.EnvironmentID, Type: "auth", Operation: "oauth_start",
		IntegrationKey: key, ConnectionID: connectionID, Message: "OAuth flow started: the end user is sent to the provider",
		Meta: map[string]any{"auth_mode": p.AuthMode, "connect_session_id": sess.ID, "scopes": scopes, "pkce": f.Secrets.CodeVerifier != ""}}); err != nil {
		ss.cfg.Logger.WarnContext(ctx, "logging an OAuth flow start failed", "err", err)
	}
	return &OAuthStart{Flow: f, RedirectURL: redirect, Cookie: ss.flowCookie(state, browser, f.ExpiresAt.Sub(now))}, nil
}

// integration returns the integration with its credentials opened.
func (ss *Sessions) integration(ctx context.Context, envID int64, key string) (*integrations.Integration, error) {
	if ss.cfg.Integrations == nil {
		return nil, errors.New("connections: SessionsConfig.Integrations is not set")
	}
	it, err := ss.cfg.Integrations.Get(ctx, envID, key)
	if errors.Is(err, store.ErrNotFound) {
		return nil, &FlowError{Type: FlowErrUnknownIntegration, Message: fmt.Sprintf("The integration %q was not found.", key), Status: http.StatusNotFound, Err: err}
	}
	return it, err
}

// OwnAppApplies reports whether an end user's own OAuth app (a connect
// session's oauth_client_id_override and oauth_client_secret_override) can
// take part in p's flow: not for a plugin installation (INSTALL_PLUGIN,
// authorized with the integration's plugin credentials) nor for an MCP
// server whose client is registered for each flow (MCP_OAUTH2 with
// client_registration dynamic, MCP_OAUTH2_GENERIC). For those the
// session's own-app keys do not apply and the connect UI does not ask.
func OwnAppApplies(p *integrations.Provider) bool {
	return p.AuthMode != integrations.AuthModeInstallPlugin && !mcpDynamic(p)
}

// flowClient picks the OAuth client of a flow: the session's preset own
// app, the end user's own app when the session offers it, or the
// integration's.
func (ss *Sessions) flowClient(sess *Session, it *integrations.Integration, p *integrations.Provider, in OAuthStartInput) (*oauthClient, error) {
	c := &oauthClient{}
	if cr := it.Credentials; cr != nil {
		c.id, c.secret, c.scopes = cr.ClientID, cr.ClientSecret, cr.Scopes
		c.appID, c.appLink, c.privateKey = cr.AppID, cr.AppLink, cr.PrivateKey
	}
	d := sess.IntegrationsConfigDefaults[in.IntegrationKey].ConnectionConfig
	presetID, offersID := d[ConfigOAuthClientIDOverride]
	presetSecret, offersSecret := d[ConfigOAuthClientSecretOverride]
	if !OwnAppApplies(p) {
		// No OAuth app of the end user's can take part: the session's
		// own-app keys do not apply, and values sent anyway are refused.
		if in.OAuthClientID != "" || in.OAuthClientSecret != "" {
			return nil, flowErr(FlowErrURLParam, "The integration %q has no OAuth app of the end user's: its auth mode %s does not use one.", in.IntegrationKey, p.AuthMode)
		}
		presetID, offersID, offersSecret = "", false, false
	}
	switch {
	case presetID != "":
		c.id, c.secret, c.own = presetID, presetSecret, true
	case in.OAuthClientID != "" || in.OAuthClientSecret != "":
		if !offersID || !offersSecret {
			return nil, flowErr(FlowErrURLParam, "The connect session does not let the end user bring their own OAuth app for %q.", in.IntegrationKey)
		}
		if in.OAuthClientID == "" || in.OAuthClientSecret == "" {
			return nil, flowErr(FlowErrURLParam, "An own OAuth app needs both credentials[oauth_client_id_override] and credentials[oauth_client_secret_override].")
		}
		if len(in.OAuthClientID) > 1024 || len(in.OAuthClientSecret) > 4096 {
			return nil, flowErr(FlowErrURLParam, "The OAuth app credentials are too long.")
		}
		for _, v := range []struct{ name, v string }{{ConfigOAuthClientIDOverride, in.OAuthClientID}, {ConfigOAuthClientSecretOverride, in.OAuthClientSecret}} {
			if reason := textProblem(v.v); reason != "" {
				return nil, flowErr(FlowErrURLParam, "The own OAuth app's credentials[%s] %s.", v.name, reason)
			}
		}
		c.id, c.secret, c.own = in.OAuthClientID, in.OAuthClientSecret, true
	case offersID && offersSecret:
		return nil, flowErr(FlowErrURLParam, "The connect session asks the end user for their own OAuth app for %q: pass credentials[oauth_client_id_override] and credentials[oauth_client_secret_override].", in.IntegrationKey)
	}
	switch p.AuthMode {
	case integrations.AuthModeMCPOAuth2, integrations.AuthModeMCPOAuth2Generic:
		return c, checkMCPClient(p, c, in.IntegrationKey)
	case integrations.AuthModeCustom:
		return c, checkCustomClient(c, in.IntegrationKey)
	case integrations.AuthModeInstallPlugin:
		return c, pluginClient(p, it, c, in.IntegrationKey)
	case integrations.AuthModeApp:
		if c.appID == "" || c.privateKey == "" || c.appLink == "" {
			return nil, flowErr(FlowErrProviderConfig, "The integration %q needs its app credentials (app_id, app_link, private_key).", in.IntegrationKey)
		}
		if _, err := parseRSAKey(c.privateKey); err != nil {
			return nil, flowErr(FlowErrProviderConfig, "The private key of integration %q is not an RSA key in PEM form.", in.IntegrationKey)
		}
		if u, err := url.Parse(c.appLink); err != nil || u.Scheme != "https" && u.Scheme != "http" || u.Host == "" {
			return nil, flowErr(FlowErrProviderConfig, "The app link of integration %q is not an absolute URL.", in.IntegrationKey)
		}
	default:
		if c.id == "" {
			return nil, flowErr(FlowErrProviderConfig, "The integration %q has no OAuth client id.", in.IntegrationKey)
		}
	}
	return c, nil
}

// flowScopes returns the scopes to request: the end user's or the
// session's oauth_scopes_override, else the integration's, else the
// provider's defaults.
func (ss *Sessions) flowScopes(sess *Session, key string, p *integrations.Provider, client *oauthClient, params map[string]string) []string {
	raw, ok := params[ConfigOAuthScopesOverride]
	if !ok {
		raw, ok = sess.IntegrationsConfigDefaults[key].ConnectionConfig[ConfigOAuthScopesOverride]
	}
	if !ok {
		raw = client.scopes
	}
	if strings.TrimSpace(raw) == "" && !ok {
		return slices.Clone(p.DefaultScopes)
	}
	return splitScopes(raw)
}

// splitScopes splits a scope list written with commas or spaces.
func splitScopes(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' })
}

// authorizationURL builds the OAuth 2 authorization URL (or the app
// installation URL) of a flow and sets its PKCE verifier.
func (ss *Sessions) authorizationURL(p *integrations.Provider, client *oauthClient, vars integrations.TemplateVars, f *OAuthFlow,
	state string, scopes []string, in OAuthStartInput, sess *Session) (string, error) {
	if p.AuthorizationURL == "" {
		return "", flowErr(FlowErrProviderConfig, "The provider %q has no authorization URL.", p.Name)
	}
	vars = vars.Stable() // one ${now} and one ${random} (a nonce) for the URL
	u, err := p.RenderURL(p.AuthorizationURL, vars)
	if err != nil {
		return "", flowURLError(err, p, "the authorization URL")
	}
	q := u.Query()
	if p.AuthMode == integrations.AuthModeApp {
		q.Set("state", state)
		u.RawQuery = q.Encode()
		return u.String(), nil
	}
	for _, k := range slices.Sorted(maps.Keys(p.AuthorizationParams)) {
		if reservedAuthParams[k] {
			continue
		}
		v, err := integrations.Interpolate(p.AuthorizationParams[k], vars)
		if err != nil {
			continue // a parameter this connection has no value for is left out
		}
		q.Set(k, v)
	}
	d := sess.IntegrationsConfigDefaults[f.IntegrationKey]
	for _, m := range []map[string]string{d.AuthorizationParams, in.AuthorizationParams} {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			// The frontend client sends an undefined value as the string
			// "undefined".
			if reservedAuthParams[k] || m[k] == "undefined" {
				continue
			}
			q.Set(k, m[k])
		}
	}
	q.Set("client_id", client.id)
	q.Set("redirect_uri", ss.cfg.CallbackURL)
	q.Set("response_type", "code")
	q.Set("state", state)
	if len(scopes) > 0 {
		sep := p.ScopeSeparator
		if sep == "" {
			sep = " "
		}
		q.Set("scope", strings.Join(scopes, sep))
	}
	userScope := in.UserScope
	if userScope == "" {
		userScope = d.UserScopes
	}
	if userScope != "" {
		q.Set("user_scope", userScope)
	}
	if !p.DisablePKCE {
		f.Secrets.CodeVerifier = oauth2.GenerateVerifier()
		q.Set("code_challenge", oauth2.S256ChallengeFromVerifier(f.Secrets.CodeVerifier))
		q.Set("code_challenge_method", "S256")
	}
	return writeAuthorizationURL(p, u, q), nil
}

// writeAuthorizationURL writes the authorization URL u with the query q as
// the provider's options say (see integrations.AuthDetails): empty
// parameters left out, the scope written without form encoding, the
// replacements applied to the query, the query put after a fragment.
func writeAuthorizationURL(p *integrations.Provider, u *url.URL, q url.Values) string {
	if p.AuthorizationURLSkipEmpty {
		for k, vs := range q {
			if !slices.ContainsFunc(vs, func(v string) bool { return v != "" }) {
				delete(q, k)
			}
		}
	}
	var rawScope string
	if p.SkipsEncoding(integrations.SkipEncodeScopes) {
		rawScope = q.Get("scope")
		q.Del("scope")
	}
	query := q.Encode()
	if rawScope != "" {
		if query != "" {
			query += "&"
		}
		query += "scope=" + escapeQueryMinimal(rawScope)
	}
	for _, k := range slices.Sorted(maps.Keys(p.AuthorizationURLReplacements)) {
		query = strings.Replace(query, k, p.AuthorizationURLReplacements[k], 1)
	}
	if p.AuthorizationURLFragment != "" {
		u.RawQuery, u.Fragment, u.RawFragment = "", "", ""
		s := u.String() + "#" + p.AuthorizationURLFragment
		if query != "" {
			s += "?" + query
		}
		return s
	}
	u.RawQuery = query
	return u.String()
}

// escapeQueryMinimal escapes what a URL query cannot hold as it is
// (control characters, space, double and single quotes, '#', '%', '&',
// '<', '>', '+' and bytes beyond ASCII) and leaves the rest, ':' '/' ','
// included, as a browser writes a query it is given.
func escapeQueryMinimal(s string) string {
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte("\"#%&<>'+", c) >= 0 {
			b.WriteByte('%')
			b.WriteByte(hexDigits[c>>4])
			b.WriteByte(hexDigits[c&15])
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// checkPresetParams refuses the end user's user_scope and
// authorization_params that change a value the session presets: the
// backend's values win.
func checkPresetParams(d IntegrationDefaults, in OAuthStartInput) error {
	if d.UserScopes != "" && in.UserScope != "" && in.UserScope != d.UserScopes {
		return flowErr(FlowErrURLParam, "user_scope is preset by the connect session and cannot be changed.")
	}
	for _, k := range slices.Sorted(maps.Keys(in.AuthorizationParams)) {
		if pv, ok := d.AuthorizationParams[k]; ok && in.AuthorizationParams[k] != "undefined" && in.AuthorizationParams[k] != pv {
			return flowErr(FlowErrURLParam, "authorization_params[%s] is preset by the connect session and cannot be changed.", k)
		}
	}
	return nil
}

// flowURLError turns the failure of a URL template of a flow into its
// error: invalid_connection_config for a value that cannot be used where
// the template puts it, missing_connection_config for a missing one,
// provider_config_err for a template that does not make a URL.
func flowURLError(err error, p *integrations.Provider, what string) error {
	var mv *integrations.MissingValueError
	switch {
	case errors.Is(err, integrations.ErrUnsafeValue):
		return unsafeConfig(err, "params")
	case errors.As(err, &mv):
		return missingTemplateValues(err, what)
	}
	return flowErr(FlowErrProviderConfig, "%s of %q is not an absolute http(s) URL.", upperFirst(what), p.Name)
}

// flowCookie is the cookie that binds a flow to the browser: its name is
// derived from the state, its value is a random secret whose hash the flow
// keeps. It is sent only to the callback.
func (ss *Sessions) flowCookie(state, value string, ttl time.Duration) *http.Cookie {
	return &http.Cookie{
		Name:     flowCookieName(state),
		Value:    value,
		Path:     ss.callbackPath(),
		MaxAge:   int(ttl.Seconds()),
		HttpOnly: true,
		Secure:   strings.HasPrefix(ss.cfg.CallbackURL, "https://"),
		SameSite: http.SameSiteLaxMode,
	}
}

func flowCookieName(state string) string {
	h := sha256.Sum256([]byte("cookie:" + state))
	return "connect_oauth_" + hex.EncodeToString(h[:8])
}

func (ss *Sessions) callbackPath() string {
	u, err := url.Parse(ss.cfg.CallbackURL)
	if err != nil || u.Path == "" {
		return "/"
	}
	return u.Path
}

// randomToken returns 32 random bytes, base64url-encoded.
func randomToken() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// hashState returns the SHA-256 of a state (or a cookie value).
func hashState(s string) []byte {
	h := sha256.Sum256([]byte(s))
	return h[:]
}

func (ss *Sessions) sealFlow(ctx context.Context, f *OAuthFlow) error {
	if f.Secrets == nil {
		f.SealedSecrets = ""
		return nil
	}
	b, err := json.Marshal(f.Secrets)
	if err != nil {
		return err
	}
	sealed, err := ss.conns.keyring.Seal(ctx, purposeFlowSecrets, b)
	if err != nil {
		return err
	}
	f.SealedSecrets = sealed
	return nil
}

func (ss *Sessions) openFlow(f *OAuthFlow) error {
	f.Secrets = &FlowSecrets{}
	if f.SealedSecrets == "" {
		return nil
	}
	b, err := ss.conns.keyring.Open(purposeFlowSecrets, f.SealedSecrets)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, f.Secrets)
}

// CallbackResult is the outcome of an OAuth callback.
type CallbackResult struct {
	Flow       *OAuthFlow
	Connection *Connection
}

// Callback finishes the flow a provider's redirect names: it claims the
// flow (a state works once), checks that it came back to the browser that
// started it, exchanges the code (or OAuth 1 verifier, or app
// installation) for credentials and stores the connection with its auth
// webhook. query is the callback's query; cookies are the request's. A
// failure after the flow was found is stored in the flow, so that the
// WebSocket and the status poll report it too. The returned error is a
// *FlowError.
func (ss *Sessions) Callback(ctx context.Context, query url.Values, cookies []*http.Cookie) (*CallbackResult, error) {
	state := query.Get("state")
	if state == "" {
		state = query.Get("oauth_token") // OAuth 1
	}
	if state == "" {
		return nil, flowErr(FlowErrState, "The callback has no state: start the connection again.")
	}
	if len(state) > 2048 {
		return nil, flowErr(FlowErrState, "The callback's state is invalid: start the connection again.")
	}
	f, err := ss.cfg.Store.ClaimOAuthFlow(ctx, hashState(state))
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, flowErr(FlowErrState, "The authorization is unknown or expired: start the connection again.")
	case errors.Is(err, store.ErrConflict):
		return nil, flowErr(FlowErrState, "This authorization was used already: start the connection again.")
	case err != nil:
		return nil, err
	}
	res, ferr := ss.finish(ctx, f, state, query, cookies)
	if ferr != nil {
		fe := AsFlowError(ferr)
		if fe.Type == FlowErrUnknown || fe.Status >= http.StatusInternalServerError {
			ss.cfg.Logger.ErrorContext(ctx, "OAuth callback failed", "integration", f.IntegrationKey, "err", ferr)
		}
		ss.failFlow(ctx, f, fe)
		return &CallbackResult{Flow: f}, fe
	}
	return res, nil
}

// finish does the work of Callback once the flow is claimed.
func (ss *Sessions) finish(ctx context.Context, f *OAuthFlow, state string, query url.Values, cookies []*http.Cookie) (*CallbackResult, error) {
	if !ss.conns.nowUTC().Before(f.ExpiresAt) {
		return nil, flowErr(FlowErrState, "The authorization took too long and expired: start the connection again.")
	}
	if !browserMatches(f, state, cookies) {
		return nil, flowErr(FlowErrStateCookie, "The authorization came back to another browser than the one that started it: start the connection again in one browser.")
	}
	if e := query.Get("error"); e != "" {
		desc := query.Get("error_description")
		msg := "The provider did not grant access: " + sanitize(e, 100, nil)
		if desc != "" {
			msg += " (" + sanitize(desc, 300, nil) + ")"
		}
		return nil, flowErr(FlowErrCallback, "%s.", msg)
	}
	if query.Get("denied") != "" { // OAuth 1 providers such as Twitter
		return nil, flowErr(FlowErrCallback, "The end user did not grant access.")
	}
	if err := ss.openFlow(f); err != nil {
		return nil, err
	}
	p, ok := ss.conns.catalog.Get(f.Provider)
	if !ok {
		if err := integrations.UnusableProviderError(ss.conns.catalog, f.Provider); err != nil {
			return nil, err
		}
		return nil, flowErr(FlowErrProviderConfig, "The provider %q is no longer in the catalogue.", f.Provider)
	}
	it, err := ss.integration(ctx, f.EnvironmentID, f.IntegrationKey)
	if err != nil {
		return nil, err
	}
	client := &oauthClient{}
	if cr := it.Credentials; cr != nil {
		client.id, client.secret = cr.ClientID, cr.ClientSecret
		client.appID, client.appLink, client.privateKey = cr.AppID, cr.AppLink, cr.PrivateKey
	}
	if f.Secrets.ClientID != "" {
		client.id, client.secret, client.own = f.Secrets.ClientID, f.Secrets.ClientSecret, true
	}
	cfg := maps.Clone(f.ConnectionConfig)
	if cfg == nil {
		cfg = map[string]any{}
	}
	for _, k := range p.RedirectURIMetadata {
		if v := query.Get(k); v != "" {
			if len(v) > MaxConfigValueLength {
				return nil, flowErr(FlowErrCallback, "The callback's %s is invalid.", k)
			}
			// The end user's browser brings these: they are checked as
			// end-user values.
			if reason := checkCallbackValue(p, k, v); reason != "" {
				return nil, flowErr(FlowErrCallback, "The callback's %s cannot be used: it %s.", k, reason)
			}
			cfg[k] = v
		}
	}
	if err := p.CheckURLValues(stringMap(cfg)); err != nil {
		var ue *integrations.UnsafeValueError
		if errors.As(err, &ue) {
			return nil, flowErr(FlowErrCallback, "The connection config %s cannot be used in the provider's URLs: it %s.", ue.Key, ue.Reason)
		}
		return nil, err
	}
	var creds *Credentials
	switch f.AuthMode {
	case integrations.AuthModeOAuth1:
		creds, err = ss.finishOAuth1(ctx, p, client, cfg, f, query)
	case integrations.AuthModeApp:
		creds, err = ss.finishApp(ctx, p, client, cfg, f, query)
	case integrations.AuthModeMCPOAuth2, integrations.AuthModeMCPOAuth2Generic:
		creds, err = ss.finishMCP(ctx, p, client, cfg, f, query)
	case integrations.AuthModeCustom:
		creds, err = ss.finishCustom(ctx, p, client, cfg, f, query)
	case integrations.AuthModeInstallPlugin:
		creds, err = ss.finishPlugin(p, it, cfg)
	default:
		creds, err = ss.finishOAuth2(ctx, p, client, cfg, f, query)
	}
	if err != nil {
		return nil, err
	}
	if client.own && creds.Type == integrations.AuthModeOAuth2 {
		creds.ConfigOverride = &ConfigOverride{ClientID: client.id, ClientSecret: client.secret}
	}
	sess := &Session{ID: f.SessionID, EnvironmentID: f.EnvironmentID, Tags: f.Tags, WebhookURLOverride: f.WebhookURLOverride}
	if f.Reconnect {
		sess.ConnectionID, sess.IntegrationKey = f.ConnectionID, f.IntegrationKey
	}
	if problem := providerAnswerProblem(creds, cfg); problem != "" {
		return nil, flowErr(FlowErrToken, "The provider's answer cannot be stored: %s.", problem)
	}
	var c *Connection
	err = ss.conns.store.WithTx(ctx, func(ctx context.Context) error {
		var err error
		c, _, err = ss.save(ctx, sess, it, f.ConnectionID, creds, cfg)
		if err != nil {
			return err
		}
		return ss.cfg.Store.CompleteOAuthFlow(ctx, f.ID, FlowSuccess, "", "", ss.conns.nowUTC())
	})
	if err != nil {
		return nil, err
	}
	f.Status = FlowSuccess
	ss.hub.signal(f.ClientID, nil)
	return &CallbackResult{Flow: f, Connection: c}, nil
}

// browserMatches reports whether the request carries the flow's cookie.
func browserMatches(f *OAuthFlow, state string, cookies []*http.Cookie) bool {
	name := flowCookieName(state)
	for _, c := range cookies {
		if c.Name == name && subtle.ConstantTimeCompare(hashState(c.Value), f.BrowserHash) == 1 {
			return true
		}
	}
	return false
}

// ClearCookie returns the cookie that removes the flow cookie of state.
func (ss *Sessions) ClearCookie(state string) *http.Cookie {
	c := ss.flowCookie(state, "", 0)
	c.MaxAge = -1
	return c
}

// failFlow stores a flow's failure, logs it, and tells the browser's
// channels. Best effort: the caller answers the failure anyway.
func (ss *Sessions) failFlow(ctx context.Context, f *OAuthFlow, fe *FlowError) {
	ctx = context.WithoutCancel(ctx)
	f.Status, f.ErrorType, f.ErrorMessage = FlowFailed, fe.Type, fe.Message
	if err := ss.cfg.Store.CompleteOAuthFlow(ctx, f.ID, FlowFailed, fe.Type, fe.Message, ss.conns.nowUTC()); err != nil {
		ss.cfg.Logger.WarnContext(ctx, "storing a failed OAuth flow failed", "err", err)
	}
	op := webhooks.OperationCreation
	if f.Reconnect {
		op = webhooks.OperationOverride
	}
	sess := &Session{ID: f.SessionID, EnvironmentID: f.EnvironmentID}
	ss.logFailure(ctx, sess, f.IntegrationKey, f.ConnectionID, op, f.AuthMode, store.Invalid(fe.Type, fe.Message))
	if isTokenFailure(fe.Type) {
		ss.notifyFailure(ctx, f, op, fe)
	}
	ss.hub.signal(f.ClientID, nil)
}

// notifyFailure sends the auth webhook of a connection that could not be
// created because the provider refused the token request.
func (ss *Sessions) notifyFailure(ctx context.Context, f *OAuthFlow, op string, fe *FlowError) {
	if ss.cfg.Notifier == nil {
		return
	}
	env, err := ss.cfg.Environments.GetEnvironment(ctx, f.EnvironmentID)
	if err != nil {
		ss.cfg.Logger.WarnContext(ctx, "OAuth failure webhook: environment", "err", err)
		return
	}
	p := &webhooks.AuthPayload{ConnectionID: f.ConnectionID, AuthMode: f.AuthMode, ProviderConfigKey: f.IntegrationKey,
		Provider: f.Provider, Environment: env.Name, Operation: op, Success: false, Tags: maps.Clone(f.Tags),
		Error: &webhooks.ErrorPayload{Type: fe.Type, Description: fe.Message}}
	err = ss.conns.store.WithTx(ctx, func(ctx context.Context) error {
		return ss.cfg.Notifier.Notify(ctx, webhooks.Event{EnvironmentID: f.EnvironmentID, IntegrationKey: f.IntegrationKey,
			ConnectionID: f.ConnectionID, Type: webhooks.TypeAuth, Operation: op, Payload: p})
	})
	if err != nil {
		ss.cfg.Logger.WarnContext(ctx, "OAuth failure webhook", "err", err)
	}
}

// finishOAuth2 exchanges the authorization code for tokens.
func (ss *Sessions) finishOAuth2(ctx context.Context, p *integrations.Provider, client *oauthClient, cfg map[string]any, f *OAuthFlow, query url.Values) (*Credentials, error) {
	codeParam := "code"
	if p.AuthorizationCodeParamInCallback != "" {
		codeParam = p.AuthorizationCodeParamInCallback
	}
	code := query.Get(codeParam)
	if code == "" {
		return nil, flowErr(FlowErrCallback, "The provider sent the end user back without an authorization code.")
	}
	if len(code) > 4096 {
		return nil, flowErr(FlowErrCallback, "The authorization code is too long.")
	}
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {ss.cfg.CallbackURL}}
	if v := f.Secrets.CodeVerifier; v != "" {
		form.Set("code_verifier", v)
	}
	tr, err := ss.cc.post(ctx, tokenRequest{
		provider:     p,
		endpoint:     p.TokenURL,
		params:       p.TokenParams,
		vars:         integrations.TemplateVars{ConnectionConfig: stringMap(cfg), ClientID: client.id, ClientSecret: client.secret},
		form:         form,
		clientID:     client.id,
		clientSecret: client.secret,
		secrets:      []string{code, client.secret, f.Secrets.CodeVerifier},
	})
	if err != nil {
		return nil, tokenFlowError(err, "The provider refused the authorization")
	}
	creds := mergeTokens(&Credentials{Type: integrations.AuthModeOAuth2}, tr, "authorization_code", ss.conns.nowUTC())
	if tr.Scope == "" {
		creds.Scopes = slices.Clone(f.Scopes)
	}
	for _, path := range p.TokenResponseMetadata {
		if v, ok := lookupPath(tr.Raw, path); ok {
			cfg[path] = v
		}
	}
	return creds, nil
}

// tokenFlowError is the FlowError of a flow's failed token request: the
// provider's refusal (token_err, refused says so), or, when the provider
// could not be called, address_not_allowed or provider_unreachable with
// no more detail.
func tokenFlowError(err error, refused string) error {
	var re *RefreshError
	if !errors.As(err, &re) {
		return err
	}
	if re.notSent() {
		return &FlowError{Type: re.Code, Message: "The token request failed: " + re.Description + ".", Status: http.StatusBadRequest, Err: err}
	}
	return &FlowError{Type: FlowErrToken, Message: refused + ": " + re.summary() + ".", Status: http.StatusBadRequest, Err: err}
}

// isTokenFailure reports whether a flow error type is a failed token
// request, which an auth webhook reports.
func isTokenFailure(typ string) bool {
	return typ == FlowErrToken || typ == egress.CodeAddressNotAllowed || typ == egress.CodeUnreachable || typ == CodeInvalidConnectionConfig
}

// StatusData is the data of GET /oauth/status/{clientID}.
type StatusData struct {
	// Status is pending, success or error.
	Status            string     `json:"status"`
	ProviderConfigKey string     `json:"providerConfigKey"`
	ConnectionID      string     `json:"connectionId,omitempty"`
	IsPending         bool       `json:"isPending"`
	Error             *StatusErr `json:"error,omitempty"`
}

// StatusErr is the failure of a flow in StatusData.
type StatusErr struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// FlowStatus returns the status of the session's newest flow with the
// client id, or ErrNotFound.
func (ss *Sessions) FlowStatus(ctx context.Context, sess *Session, clientID string) (*StatusData, error) {
	f, err := ss.cfg.Store.GetOAuthFlowByClientID(ctx, clientID, sess.ID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, store.NotFound("not_found", "No OAuth flow of this session has the id %q.", clientID)
	}
	if err != nil {
		return nil, err
	}
	return statusOf(f, ss.conns.nowUTC()), nil
}

// statusOf is the browser's view of a flow at now: a pending flow that
// expired is an error.
func statusOf(f *OAuthFlow, now time.Time) *StatusData {
	d := &StatusData{Status: "pending", ProviderConfigKey: f.IntegrationKey}
	switch {
	case f.Status == FlowSuccess:
		d.Status, d.ConnectionID = "success", f.ConnectionID
	case f.Status == FlowFailed:
		d.Status = "error"
		d.Error = &StatusErr{Type: f.ErrorType, Message: f.ErrorMessage}
	case !now.Before(f.ExpiresAt):
		d.Status = "error"
		d.Error = &StatusErr{Type: FlowErrState, Message: "The authorization was not completed in time: start the connection again."}
	}
	return d
}
