package connections

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/embedauth/connect/egress"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/internal/httpapi"
	"github.com/embedauth/connect/oplog"
	"github.com/embedauth/connect/store"
	"github.com/embedauth/connect/webhooks"
)

// Wire codes of the non-OAuth auth flows (HTTP 400), as the frontend client
// surfaces them in AuthError.type.
const (
	CodeIntegrationNotAllowed    = "integration_not_allowed"
	CodeInvalidAuthMode          = "invalid_auth_mode"
	CodeInvalidCredentials       = "invalid_credentials"
	CodeMissingConnectionConfig  = "missing_connection_config"
	CodeInvalidConnectionConfig  = "invalid_connection_config"
	CodeConnectionValidationFail = "connection_validation_failed"
)

// AuthorizeInput is one non-OAuth auth call of a connect session: the
// frontend client's POST /api-auth/api-key/{integration},
// /api-auth/basic/{integration}, /oauth2/auth/{integration} or
// /auth/unauthenticated/{integration}.
type AuthorizeInput struct {
	// IntegrationKey is the integration to connect.
	IntegrationKey string
	// Mode is the auth mode of the call: integrations.AuthModeAPIKey, integrations.AuthModeBasic,
	// integrations.AuthModeOAuth2CC or integrations.AuthModeNone. It must match the integration's
	// provider.
	Mode string
	// ConnectionID is the connection id the client asked for. A connect
	// session chooses the id itself (a new UUID), so it is ignored, except
	// on a reconnect session, where it must be empty or the session's.
	ConnectionID string
	// Params are the end user's connection config values (params[...]).
	// They win over the session's integrations_config_defaults.
	Params map[string]string
	// Credentials hold what the end user typed: APIKey; Username and
	// Password; ClientID and ClientSecret. Type is set from Mode.
	Credentials Credentials
}

// AuthResult is the outcome of a successful auth call.
type AuthResult struct {
	Connection *Connection
	// Created is false when an existing connection was re-authorized.
	Created bool
}

// Authorize runs a non-OAuth auth call of a live session (see
// Authenticate): it checks that the session may connect the integration
// and that the integration's auth mode is Mode, builds the connection
// config and credentials, checks the credentials with the provider when
// its catalogue entry describes a verification request (or fetches the
// token of a client-credentials provider), and then stores the connection,
// its session mark, an operations log entry and the auth webhook in one
// transaction. When a check fails nothing is stored but a log entry.
func (ss *Sessions) Authorize(ctx context.Context, sess *Session, in AuthorizeInput) (*AuthResult, error) {
	key := in.IntegrationKey
	if !sess.Allows(key) {
		return nil, store.Invalid(CodeIntegrationNotAllowed, fmt.Sprintf("The connect session does not allow the integration %q.", key))
	}
	it, err := ss.conns.integrations.GetIntegration(ctx, sess.EnvironmentID, key)
	if errors.Is(err, store.ErrNotFound) {
		return nil, store.NotFound("unknown_provider_config", "The integration %q was not found.", key)
	}
	if err != nil {
		return nil, err
	}
	p, ok := ss.conns.catalog.Get(it.Provider)
	if !ok {
		if err := integrations.UnusableProviderError(ss.conns.catalog, it.Provider); err != nil {
			return nil, err
		}
		return nil, store.Invalid("unknown_provider_template", fmt.Sprintf("The provider %q of integration %q is not in the catalogue.", it.Provider, key))
	}
	if !modeMatches(p, in.Mode) {
		return nil, store.Invalid(CodeInvalidAuthMode, fmt.Sprintf("The integration %q uses the auth mode %s, not %s.", key, p.AuthMode, in.Mode))
	}
	// What the end user typed goes nowhere, not even to the provider's
	// check, unless it can be sent and stored.
	if err := checkTypedCredentials(&in.Credentials); err != nil {
		return nil, err
	}
	connectionID := newConnectionID()
	var existing map[string]any
	if sess.Reconnecting() {
		if in.ConnectionID != "" && in.ConnectionID != sess.ConnectionID {
			return nil, httpapi.InvalidQuery("connection_id", "must be the connection of the reconnect session")
		}
		connectionID = sess.ConnectionID
		c, err := ss.conns.store.GetConnection(ctx, sess.EnvironmentID, key, connectionID)
		if err != nil {
			return nil, ss.conns.notFound(ctx, err, sess.EnvironmentID, key, connectionID)
		}
		existing = c.ConnectionConfig
	}
	overlay, err := ss.connectionConfig(sess, p, key, in.Params)
	if err != nil {
		return nil, err
	}
	// The values a template sees: the stored config (when reconnecting)
	// under the new values.
	cfg := stringMap(existing)
	for k, v := range stringMap(overlay) {
		cfg[k] = v
	}
	if err := checkRequiredConfig(p, cfg, overlay); err != nil {
		return nil, err
	}
	if err := checkConfigURLs(p, cfg, "params"); err != nil {
		return nil, err
	}
	creds, err := authCredentials(p, in)
	if err != nil {
		return nil, err
	}
	op := webhooks.OperationCreation
	if sess.Reconnecting() {
		op = webhooks.OperationOverride
	}
	switch in.Mode {
	case integrations.AuthModeAPIKey, integrations.AuthModeBasic:
		err = ss.verify(ctx, p, creds, cfg)
	case integrations.AuthModeOAuth2CC:
		var tokenConfig map[string]any
		creds, tokenConfig, err = ss.clientCredentials(ctx, p, creds, cfg)
		for k, v := range tokenConfig {
			overlay[k] = v
		}
	case integrations.AuthModeTwoStep, integrations.AuthModeJWT, integrations.AuthModeSignature, integrations.AuthModeBill:
		var tokenConfig map[string]any
		creds, tokenConfig, err = ss.exchangeCredentials(ctx, sess.EnvironmentID, key, p, creds, cfg)
		for k, v := range tokenConfig {
			overlay[k] = v
		}
	case integrations.AuthModeTBA:
		err = ss.verifyTBA(ctx, sess.EnvironmentID, key, p, creds, cfg)
	case integrations.AuthModeAWSSigV4:
		var awsConfig map[string]any
		creds, awsConfig, err = ss.authorizeAWS(ctx, sess.EnvironmentID, key, in, cfg, existing)
		maps.Copy(overlay, awsConfig)
	}
	if err == nil {
		// The provider's answers (a token, token_response_metadata) are
		// stored only when they can be sent again.
		if problem := providerAnswerProblem(creds, overlay); problem != "" {
			err = validationFailed("The provider's answer cannot be stored: %s.", problem)
		}
	}
	if err != nil {
		ss.logFailure(ctx, sess, key, connectionID, op, in.Mode, err)
		return nil, err
	}
	c, created, err := ss.save(ctx, sess, it, connectionID, creds, overlay)
	if err != nil {
		return nil, err
	}
	return &AuthResult{Connection: c, Created: created}, nil
}

// modeMatches reports whether an auth call of mode may connect p.
func modeMatches(p *integrations.Provider, mode string) bool {
	switch mode {
	case integrations.AuthModeAPIKey, integrations.AuthModeBasic, integrations.AuthModeNone, integrations.AuthModeTBA, integrations.AuthModeAWSSigV4:
		return p.AuthMode == mode
	case integrations.AuthModeOAuth2CC:
		return p.UsesClientCredentials()
	case integrations.AuthModeTwoStep, integrations.AuthModeJWT, integrations.AuthModeSignature, integrations.AuthModeBill:
		return p.AuthMode == mode
	}
	return false
}

// isClientWebhookKey reports whether a params key names a webhook URL. A
// webhook URL set from the client side is ignored: only the session (and
// the API) may set one.
func isClientWebhookKey(k string) bool {
	n := strings.Map(func(r rune) rune {
		if r == '_' || r == '-' || r == ' ' {
			return -1
		}
		return unicode.ToLower(r)
	}, k)
	return strings.Contains(n, "webhookurl")
}

func fieldErrors(err error) []store.FieldError {
	var e *store.Error
	if errors.As(err, &e) {
		return e.Errors
	}
	return nil
}

// checkRequiredConfig fills the default value of a required connection
// config field the end user left empty (into overlay) and answers
// missing_connection_config naming the fields still empty. A field whose
// value does not match its pattern is invalid_connection_config.
func checkRequiredConfig(p *integrations.Provider, cfg map[string]string, overlay map[string]any) error {
	var missing []store.FieldError
	for _, k := range slices.Sorted(maps.Keys(p.ConnectionConfig)) {
		f := p.ConnectionConfig[k]
		v := cfg[k]
		if v == "" && !f.Optional && !f.Automated {
			if f.DefaultValue == "" {
				missing = append(missing, store.FieldError{Code: "required", Message: "is required", Path: []string{"params", k}})
				continue
			}
			v = f.DefaultValue
			cfg[k], overlay[k] = v, v
		}
		if v != "" && !matches(f.Pattern, v) {
			return store.Invalid(CodeInvalidConnectionConfig, fmt.Sprintf("The connection config %q does not match the pattern %s.", k, f.Pattern),
				store.FieldError{Code: "invalid_value", Message: "does not match " + f.Pattern, Path: []string{"params", k}})
		}
	}
	if len(missing) > 0 {
		names := make([]string, len(missing))
		for i, m := range missing {
			names[i] = m.Path[1]
		}
		return store.Invalid(CodeMissingConnectionConfig, fmt.Sprintf("The integration needs the connection config %s (params[%s]).",
			strings.Join(names, ", "), names[0]), missing...)
	}
	return nil
}

// matches reports whether v matches a catalogue pattern. Patterns are
// written for JavaScript; one that Go's regexp package cannot compile is
// not enforced.
func matches(pattern, v string) bool {
	if pattern == "" {
		return true
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return true
	}
	return re.MatchString(v)
}

// authCredentials checks what the end user typed against the mode and the
// provider's credential fields and returns the credentials to store.
func authCredentials(p *integrations.Provider, in AuthorizeInput) (*Credentials, error) {
	c := in.Credentials
	c.Type = in.Mode
	var fields map[string]string
	var required []string
	switch in.Mode {
	case integrations.AuthModeAPIKey:
		fields = map[string]string{"apiKey": c.APIKey}
		required = []string{"apiKey"}
	case integrations.AuthModeBasic:
		fields = map[string]string{"username": c.Username, "password": c.Password}
		required = []string{"username"}
	case integrations.AuthModeOAuth2CC:
		var err error
		if fields, required, err = clientCredentialFields(p, &c); err != nil {
			return nil, err
		}
	case integrations.AuthModeTBA:
		fields = map[string]string{"token_id": c.TokenID, "token_secret": c.TokenSecret}
		required = []string{"token_id", "token_secret"}
	case integrations.AuthModeAWSSigV4:
		fields = map[string]string{"role_arn": c.RoleARN, "region": c.Region}
	case integrations.AuthModeNone:
		return &Credentials{Type: integrations.AuthModeNone}, nil
	case integrations.AuthModeTwoStep, integrations.AuthModeJWT, integrations.AuthModeSignature, integrations.AuthModeBill:
		return tokenModeCredentials(p, in)
	}
	for _, k := range slices.Sorted(maps.Keys(p.Credentials)) {
		if _, known := fields[k]; known && !p.Credentials[k].Optional && !p.Credentials[k].Automated && !slices.Contains(required, k) {
			required = append(required, k)
		}
	}
	for _, k := range required {
		if strings.TrimSpace(fields[k]) == "" {
			return nil, store.Invalid(CodeInvalidCredentials, fmt.Sprintf("The credentials need %s.", k),
				store.FieldError{Code: "required", Message: "is required", Path: []string{k}})
		}
	}
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		v := fields[k]
		if len(v) > 64<<10 {
			return nil, store.Invalid(CodeInvalidCredentials, fmt.Sprintf("The credential %s is too long.", k),
				store.FieldError{Code: "invalid_value", Message: "is at most 64 KiB", Path: []string{k}})
		}
		if f, ok := p.Credentials[k]; ok && v != "" && !matches(f.Pattern, v) {
			return nil, store.Invalid(CodeInvalidCredentials, fmt.Sprintf("The credential %s does not match the pattern %s.", k, f.Pattern),
				store.FieldError{Code: "invalid_value", Message: "does not match " + f.Pattern, Path: []string{k}})
		}
	}
	return &c, nil
}

// validationFailed is the error of a refused credential check.
func validationFailed(format string, args ...any) error {
	return store.Invalid(CodeConnectionValidationFail, fmt.Sprintf(format, args...))
}

// verify runs the provider's verification request, when its catalogue
// entry describes one, with the credentials injected as the proxy would
// inject them: the proxy's header and query templates, plus HTTP Basic
// authentication for BASIC providers whose headers set no Authorization.
// Any 2xx answer of one of the endpoints passes.
func (ss *Sessions) verify(ctx context.Context, p *integrations.Provider, creds *Credentials, cfg map[string]string) error {
	return ss.verifyWith(ctx, p, creds, cfg, ss.cfg.HTTPClient)
}

// verifyWith is verify with the client that sends the requests.
func (ss *Sessions) verifyWith(ctx context.Context, p *integrations.Provider, creds *Credentials, cfg map[string]string, client *http.Client) error {
	if p.Proxy == nil || p.Proxy.Verification == nil {
		return nil
	}
	vf := p.Proxy.Verification
	vars := integrations.TemplateVars{ConnectionConfig: cfg, APIKey: creds.APIKey, Credentials: map[string]string{}, Raw: creds.Raw}
	switch creds.Type {
	case integrations.AuthModeAPIKey:
		vars.Credentials["apiKey"] = creds.APIKey
	case integrations.AuthModeBasic:
		vars.Credentials["username"], vars.Credentials["password"] = creds.Username, creds.Password
	}
	baseTmpl := vf.BaseURLOverride
	if baseTmpl == "" {
		baseTmpl = p.Proxy.BaseURL
	}
	if baseTmpl == "" {
		return nil // nothing to call: the catalogue entry is incomplete
	}
	bu, err := p.RenderURL(baseTmpl, vars)
	if err != nil {
		return urlTemplateError(err, "the provider's base URL")
	}
	// The headers are computed for each request: a signature covers its
	// method, URL and body, a date or nonce is its own.
	headerTmpls := [][2]string{}
	for _, m := range []map[string]string{p.Proxy.Headers, vf.Headers} {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			headerTmpls = append(headerTmpls, [2]string{k, m[k]})
		}
	}
	query := url.Values{}
	for _, k := range slices.Sorted(maps.Keys(p.Proxy.Query)) {
		if v, err := integrations.Interpolate(p.Proxy.Query[k], vars); err == nil {
			query.Set(k, v)
		}
	}
	method := vf.Method
	if method == "" {
		method = http.MethodGet
	}
	secrets := []string{creds.APIKey, creds.Password}
	ctx, cancel := context.WithTimeout(ctx, ss.cfg.CheckTimeout)
	defer cancel()
	var last string
	unreachable := false
	for _, tmpl := range vf.Endpoints {
		ep, err := p.RenderPath(tmpl, vars)
		if err != nil {
			return urlTemplateError(err, "the provider's verification endpoint")
		}
		target, err := joinURL(bu, ep, query)
		if err != nil {
			return validationFailed("The provider's verification endpoint %q is invalid.", ep)
		}
		req, err := http.NewRequestWithContext(ctx, method, target, nil)
		if err != nil {
			return validationFailed("The provider's verification request cannot be built.")
		}
		rv := vars.Stable()
		rv.Request = &integrations.TemplateRequest{Method: method, URL: req.URL, Endpoint: ep}
		for _, h := range headerTmpls {
			v, err := integrations.Interpolate(h[1], rv)
			var fe *integrations.FunctionError
			switch {
			case errors.As(err, &fe):
				return validationFailed("The provider's header %s cannot be computed: %s: %s.", h[0], fe.Function, fe.Problem)
			case err == nil:
				req.Header.Set(h[0], v)
			}
		}
		if creds.Type == integrations.AuthModeBasic && req.Header.Get("Authorization") == "" {
			req.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(creds.Username+":"+creds.Password)))
		}
		req.Header.Set("Accept", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			// Only "address not allowed" or "could not reach the provider":
			// the dial error would tell an open port from a closed one.
			f := egress.Describe(err)
			ss.cfg.Logger.WarnContext(ctx, "credential check: the provider could not be called", "code", f.Code,
				"err", sanitize(redactErr(err).Error(), 300, secrets))
			if f.Code == egress.CodeAddressNotAllowed {
				return store.Invalid(f.Code, "The credentials could not be checked: "+f.Message+".")
			}
			unreachable = true
			if ctx.Err() != nil {
				break
			}
			continue
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		if resp.StatusCode >= 200 && resp.StatusCode < 300 {
			return nil
		}
		last = fmt.Sprintf("the provider answered %s to %s %s", resp.Status, method, sanitize(req.URL.Path, 200, secrets))
	}
	switch {
	case last != "":
		return validationFailed("The credentials were refused: %s.", last)
	case unreachable:
		return store.Invalid(egress.CodeUnreachable, "The credentials could not be checked: could not reach the provider.")
	}
	return nil // no endpoint listed
}

// joinURL appends an endpoint (a path, possibly with its own query) to the
// base URL and adds the query.
func joinURL(base *url.URL, endpoint string, query url.Values) (string, error) {
	path, rawQuery, _ := strings.Cut(endpoint, "?")
	u := *base
	u.Path = strings.TrimRight(base.Path, "/") + "/" + strings.TrimLeft(path, "/")
	u.RawPath = ""
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return "", err
	}
	for k, vs := range base.Query() {
		for _, v := range vs {
			q.Add(k, v)
		}
	}
	for k, vs := range query {
		for _, v := range vs {
			q.Set(k, v)
		}
	}
	u.RawQuery = q.Encode()
	u.Fragment = ""
	return u.String(), nil
}

// urlTemplateError turns the failure of a URL template of an auth call
// into its error: a value that cannot be used where the template puts it
// is invalid_connection_config, a missing one missing_connection_config
// (see missingTemplateValues).
func urlTemplateError(err error, what string) error {
	if errors.Is(err, integrations.ErrUnsafeValue) {
		return unsafeConfig(err, "params")
	}
	return missingTemplateValues(err, what)
}

// missingTemplateValues turns a template that cannot be filled into
// missing_connection_config (or a catalogue problem into a failed check).
func missingTemplateValues(err error, what string) error {
	var mv *integrations.MissingValueError
	if errors.As(err, &mv) {
		var fe []store.FieldError
		for _, n := range mv.Names {
			if k, ok := strings.CutPrefix(n, "connectionConfig."); ok {
				fe = append(fe, store.FieldError{Code: "required", Message: "is required", Path: []string{"params", k}})
			}
		}
		if len(fe) > 0 {
			return store.Invalid(CodeMissingConnectionConfig, fmt.Sprintf("%s needs %s.", upperFirst(what), strings.Join(mv.Names, ", ")), fe...)
		}
		return store.Invalid(CodeInvalidCredentials, fmt.Sprintf("%s needs %s.", upperFirst(what), strings.Join(mv.Names, ", ")))
	}
	return validationFailed("%s cannot be built.", upperFirst(what))
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// clientCredentials fetches a token with the client_credentials grant, as
// the refresher does, and returns the OAUTH2_CC credentials and the
// connection config values the provider's token_response_metadata names.
func (ss *Sessions) clientCredentials(ctx context.Context, p *integrations.Provider, creds *Credentials, cfg map[string]string) (*Credentials, map[string]any, error) {
	if err := checkClientKeys(p, creds); err != nil {
		return nil, nil, err
	}
	if strings.TrimSpace(p.TokenURL) == "" {
		return nil, nil, store.Invalid(FlowErrProviderConfig, fmt.Sprintf(
			"The provider %s has no token URL: client credentials cannot be exchanged for a token. Import the connection with its token instead (POST /connections).", p.Name))
	}
	tmp := &Connection{ConnectionConfig: make(map[string]any, len(cfg)), Credentials: creds}
	for k, v := range cfg {
		tmp.ConnectionConfig[k] = v
	}
	tr, err := ss.cc.call(ctx, p, tmp, GrantClientCredentials)
	if err != nil {
		var re *RefreshError
		switch {
		case errors.As(err, &re) && re.notSent():
			return nil, nil, store.Invalid(re.Code, "The token request failed: "+re.Description+".")
		case errors.As(err, &re):
			return nil, nil, validationFailed("The provider refused the client credentials: %s.", re.summary())
		}
		return nil, nil, err
	}
	out := mergeTokens(creds, tr, GrantClientCredentials, ss.conns.nowUTC())
	meta := map[string]any{}
	for _, path := range p.TokenResponseMetadata {
		if v, ok := lookupPath(tr.Raw, path); ok {
			meta[path] = v
		}
	}
	return out, meta, nil
}

// logFailure records a refused auth call in the operations log. It is best
// effort: the caller answers the refusal anyway.
func (ss *Sessions) logFailure(ctx context.Context, sess *Session, key, connectionID, op, mode string, cause error) {
	var e *store.Error
	code, msg := "", cause.Error()
	if errors.As(cause, &e) {
		code, msg = e.Code, e.Message
	}
	_, err := ss.conns.log.Record(ctx, &oplog.Entry{EnvironmentID: sess.EnvironmentID, Type: "auth", Operation: op,
		Status: oplog.StatusFailure, IntegrationKey: key, ConnectionID: connectionID, Message: msg,
		Meta: map[string]any{"auth_mode": mode, "error": code, "connect_session_id": sess.ID}})
	if err != nil {
		ss.cfg.Logger.WarnContext(ctx, "recording a failed auth call failed", "err", err)
	}
}

// save creates the connection (or re-authorizes the session's), marks it
// as created through a session, and records the log entry and the auth
// webhook, in one transaction with the Hooks' ConnectionSaved. When the
// Hooks validate connections of the integration, the connection is
// stored first, validated, and only then (when valid) marked, logged and
// announced; an invalid new connection is deleted again.
func (ss *Sessions) save(ctx context.Context, sess *Session, it *integrations.Integration, connectionID string,
	creds *Credentials, overlay map[string]any) (*Connection, bool, error) {
	var out *Connection
	created := !sess.Reconnecting()
	write := func(ctx context.Context) error {
		var err error
		if created {
			now := ss.conns.nowUTC()
			c := &Connection{
				EnvironmentID:      sess.EnvironmentID,
				IntegrationKey:     it.UniqueKey,
				ConnectionID:       connectionID,
				Provider:           it.Provider,
				ConnectionConfig:   maps.Clone(overlay),
				Tags:               maps.Clone(sess.Tags),
				WebhookURLOverride: sess.WebhookURLOverride,
				Credentials:        creds,
				Errors:             []Error{},
				CreatedAt:          now,
				UpdatedAt:          now,
			}
			if err := ss.conns.seal(ctx, c); err != nil {
				return err
			}
			if err := ss.conns.store.CreateConnection(ctx, c); err != nil {
				return err
			}
			out = c
			return nil
		}
		out, err = ss.conns.mutate(ctx, sess.EnvironmentID, it.UniqueKey, connectionID, func(c *Connection) error {
			c.Credentials = creds
			c.Errors = []Error{}
			c.LastRefreshFailure = nil
			c.RefreshAttempts = 0
			if c.ConnectionConfig == nil {
				c.ConnectionConfig = map[string]any{}
			}
			maps.Copy(c.ConnectionConfig, overlay)
			if sess.Tags != nil {
				c.Tags = maps.Clone(sess.Tags)
			}
			if sess.WebhookURLOverride != "" {
				c.WebhookURLOverride = sess.WebhookURLOverride
			}
			return nil
		})
		return err
	}
	announce := func(ctx context.Context) error {
		if err := ss.cfg.Store.MarkSessionConnection(ctx, out.EnvironmentID, out.ID); err != nil {
			return err
		}
		op := webhooks.OperationCreation
		msg := "connection created through a connect session"
		if !created {
			op = webhooks.OperationOverride
			msg = "connection re-authorized through a connect session"
		}
		if _, err := ss.conns.log.Record(ctx, &oplog.Entry{EnvironmentID: out.EnvironmentID, Type: "auth", Operation: op,
			IntegrationKey: out.IntegrationKey, ConnectionID: out.ConnectionID, Message: msg,
			Meta: map[string]any{"auth_mode": out.AuthMode, "provider": out.Provider, "connect_session_id": sess.ID}}); err != nil {
			return err
		}
		if err := ss.conns.saved(ctx, out, created); err != nil {
			return err
		}
		return ss.notify(ctx, out, op)
	}
	validates, err := ss.conns.validates(ctx, sess.EnvironmentID, it.UniqueKey)
	if err != nil {
		return nil, false, err
	}
	if !validates {
		err := ss.conns.store.WithTx(ctx, func(ctx context.Context) error {
			if err := write(ctx); err != nil {
				return err
			}
			return announce(ctx)
		})
		if err != nil {
			return nil, false, err
		}
		return out, created, nil
	}
	if err := ss.conns.store.WithTx(ctx, write); err != nil {
		return nil, false, err
	}
	if err := ss.conns.validate(ctx, out, created); err != nil {
		return nil, false, err
	}
	if err := ss.conns.store.WithTx(ctx, announce); err != nil {
		return nil, false, err
	}
	return out, created, nil
}

// notify sends the auth webhook of a connection a session created or
// re-authorized.
func (ss *Sessions) notify(ctx context.Context, c *Connection, op string) error {
	if ss.cfg.Notifier == nil {
		return nil
	}
	env, err := ss.cfg.Environments.GetEnvironment(ctx, c.EnvironmentID)
	if err != nil {
		return err
	}
	return ss.cfg.Notifier.Notify(ctx, webhooks.Event{EnvironmentID: c.EnvironmentID, IntegrationKey: c.IntegrationKey,
		ConnectionID: c.ConnectionID, Type: webhooks.TypeAuth, Operation: op, Payload: AuthPayload(c, env, op)})
}

// AuthPayload is the body of the successful auth webhook of operation op
// (creation or override) for c: its tags, and the end user they name.
func AuthPayload(c *Connection, env *environments.Environment, op string) *webhooks.AuthPayload {
	p := &webhooks.AuthPayload{
		ConnectionID:      c.ConnectionID,
		AuthMode:          c.AuthMode,
		ProviderConfigKey: c.IntegrationKey,
		Provider:          c.Provider,
		Environment:       env.Name,
		Operation:         op,
		Success:           true,
		Tags:              maps.Clone(c.Tags),
	}
	if id := c.Tags[TagEndUserID]; id != "" {
		p.EndUser = &webhooks.EndUser{EndUserID: id, OrganizationID: c.Tags[TagOrganizationID],
			EndUserEmail: c.Tags[TagEndUserEmail], Tags: endUserOwnTags(c.Tags)}
	}
	return p
}

// endUserOwnTags are the tags but the conventional end user and
// organization keys.
func endUserOwnTags(tags map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range tags {
		switch k {
		case TagEndUserID, TagEndUserEmail, TagEndUserDisplayName, TagOrganizationID, TagOrganizationDisplayName:
		default:
			out[k] = v
		}
	}
	return out
}
