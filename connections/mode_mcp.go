package connections

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/embedauth/connect/egress"
	"github.com/embedauth/connect/integrations"
)

// OAuth 2 against MCP servers (auth modes MCP_OAUTH2 and
// MCP_OAUTH2_GENERIC). Both end as OAuth 2 credentials; what sets them
// apart is where the client and the endpoints come from:
//
//   - MCP_OAUTH2 with client_registration static: the integration's OAuth
//     app, the provider's authorization and token URLs (plain OAuth 2).
//   - MCP_OAUTH2 with client_registration dynamic: a client registered per
//     flow at the provider's registration_url (RFC 7591), public (no
//     secret, token_endpoint_auth_method none), PKCE S256.
//   - MCP_OAUTH2_GENERIC: the end user names the MCP server
//     (connection_config.mcp_server_url); its authorization server is
//     discovered (RFC 9728 protected resource metadata, then RFC 8414
//     authorization server metadata or OpenID configuration), a client is
//     registered at its registration_endpoint, and the authorization and
//     token requests carry the resource parameter (RFC 8707).
//
// The registered client and the discovered token endpoint are stored in the
// connection's sealed credentials (Credentials.Registered), so that a
// refresh uses them and nothing a caller or end user may edit later
// decides where a refresh token goes. The integration's own client secret
// is never sent to a discovered host: generic flows use registered public
// clients only.

// Error codes of MCP flows (the error_type of the WebSocket error frame and
// the callback page).
const (
	// CodeMCPDiscoveryFailed: the MCP server's authorization server could
	// not be discovered, or its metadata is unusable.
	CodeMCPDiscoveryFailed = "mcp_discovery_failed"
	// CodeMCPRegistrationFailed: the authorization server refused to
	// register a client, or its answer is unusable.
	CodeMCPRegistrationFailed = "mcp_registration_failed"
)

// ConfigMCPServerURL is the connection config key of an MCP_OAUTH2_GENERIC
// connection's server URL.
const ConfigMCPServerURL = "mcp_server_url"

// maxMCPDocument bounds a metadata document or registration answer.
const maxMCPDocument = 64 << 10

// RegisteredClient is the OAuth client and endpoints of an MCP connection,
// stored sealed with its credentials: the client registered for it (or
// none for a static client), the token endpoint discovered for it (or none:
// the provider's token URL), and the resource indicator its token requests
// carry.
type RegisteredClient struct {
	ClientID     string `json:"client_id,omitempty"`
	ClientSecret string `json:"client_secret,omitempty"`
	// TokenEndpoint is the discovered token endpoint (MCP_OAUTH2_GENERIC).
	TokenEndpoint string `json:"token_endpoint,omitempty"`
	// Resource is the RFC 8707 resource indicator sent with token requests.
	Resource string `json:"resource,omitempty"`
}

// isMCPMode reports whether mode is one of the MCP OAuth modes.
func isMCPMode(mode string) bool {
	return mode == integrations.AuthModeMCPOAuth2 || mode == integrations.AuthModeMCPOAuth2Generic
}

// mcpDynamic reports whether a provider's flows register their own client.
func mcpDynamic(p *integrations.Provider) bool {
	return p.AuthMode == integrations.AuthModeMCPOAuth2Generic ||
		p.AuthMode == integrations.AuthModeMCPOAuth2 && p.ClientRegistration == "dynamic"
}

// checkMCPClient checks the client of an MCP flow: a static client needs
// the integration's client id; a dynamic one is registered per flow (and
// no own app applies: OwnAppApplies).
func checkMCPClient(p *integrations.Provider, c *oauthClient, key string) error {
	switch {
	case p.ClientRegistration == "cimd":
		return flowErr(FlowErrProviderConfig, "The provider %q uses client ID metadata documents (client_registration cimd), which this server does not host.", p.Name)
	case !mcpDynamic(p):
		if c.id == "" {
			return flowErr(FlowErrProviderConfig, "The integration %q has no OAuth client id.", key)
		}
	}
	return nil
}

// startMCP builds the authorization URL of an MCP flow: for a dynamic
// client it registers one first (after discovery, for a generic server),
// keeps it in the flow's secrets, and adds the resource indicator.
func (ss *Sessions) startMCP(ctx context.Context, p *integrations.Provider, client *oauthClient, vars integrations.TemplateVars,
	f *OAuthFlow, scopes []string, in OAuthStartInput, sess *Session) (string, string, error) {
	reg := &RegisteredClient{}
	prov := p
	if p.AuthMode == integrations.AuthModeMCPOAuth2Generic {
		server := vars.ConnectionConfig[ConfigMCPServerURL]
		d, err := ss.discoverMCP(ctx, server)
		if err != nil {
			return "", "", err
		}
		cp := *p
		cp.AuthorizationURL, cp.TokenURL = d.AuthorizationEndpoint, d.TokenEndpoint
		cp.AuthorizationParams = map[string]string{"resource": d.Resource}
		cp.DisablePKCE = false
		prov = &cp
		reg.TokenEndpoint, reg.Resource = d.TokenEndpoint, d.Resource
		if len(scopes) == 0 {
			scopes = d.Scopes
			f.Scopes = scopes
		}
		meta, _ := json.Marshal(map[string]string{"issuer": d.Issuer, "authorization_endpoint": d.AuthorizationEndpoint,
			"token_endpoint": d.TokenEndpoint, "registration_endpoint": d.RegistrationEndpoint})
		f.ConnectionConfig["oauth_metadata"] = string(meta)
		f.ConnectionConfig["oauth_resource_url"] = d.Resource
		registered, err := ss.registerMCPClient(ctx, d.RegistrationEndpoint, nil, scopes)
		if err != nil {
			return "", "", err
		}
		reg.ClientID, reg.ClientSecret = registered.ClientID, registered.ClientSecret
	} else {
		reg.Resource = p.AuthorizationParams["resource"]
		if mcpDynamic(p) {
			if err := checkMCPURL(p.RegistrationURL, ss.cfg.Policy); err != nil {
				return "", "", flowErr(FlowErrProviderConfig, "The registration URL of %q cannot be used: %s.", p.Name, err)
			}
			registered, err := ss.registerMCPClient(ctx, p.RegistrationURL, p.RegistrationParams, scopes)
			if err != nil {
				return "", "", err
			}
			reg.ClientID, reg.ClientSecret = registered.ClientID, registered.ClientSecret
		}
	}
	if reg.ClientID != "" {
		f.ConnectionConfig["oauth_client_info"] = fmt.Sprintf(`{"client_id":%q}`, reg.ClientID)
		client = &oauthClient{id: reg.ClientID, secret: reg.ClientSecret}
	}
	f.Secrets.MCP = reg
	state := randomToken()
	redirect, err := ss.authorizationURL(prov, client, vars, f, state, scopes, in, sess)
	if err != nil {
		return "", "", err
	}
	if f.Secrets.CodeVerifier == "" {
		// PKCE is not optional against an MCP server.
		return "", "", flowErr(FlowErrProviderConfig, "The provider %q disables PKCE, which MCP authorization requires.", p.Name)
	}
	return state, redirect, nil
}

// finishMCP exchanges the code of an MCP flow for tokens with the flow's
// client and endpoint, and keeps them with the credentials.
func (ss *Sessions) finishMCP(ctx context.Context, p *integrations.Provider, client *oauthClient, cfg map[string]any, f *OAuthFlow, query url.Values) (*Credentials, error) {
	reg := f.Secrets.MCP
	if reg == nil {
		reg = &RegisteredClient{}
	}
	prov := p
	if reg.TokenEndpoint != "" || p.AuthMode == integrations.AuthModeMCPOAuth2Generic {
		if err := checkMCPURL(reg.TokenEndpoint, ss.cfg.Policy); err != nil {
			return nil, flowErr(CodeMCPDiscoveryFailed, "The token endpoint cannot be used: %s.", err)
		}
		cp := *p
		cp.TokenURL, cp.TokenParams = reg.TokenEndpoint, nil
		cp.AuthDetails.BodyFormat = ""
		prov = &cp
	}
	c := client
	if reg.ClientID != "" {
		c = &oauthClient{id: reg.ClientID, secret: reg.ClientSecret}
	}
	extra := url.Values{}
	if reg.Resource != "" {
		extra.Set("resource", reg.Resource)
	}
	creds, err := ss.finishOAuth2With(ctx, prov, c, cfg, f, query, extra)
	if err != nil {
		return nil, err
	}
	if reg.ClientID != "" || reg.TokenEndpoint != "" || reg.Resource != "" {
		creds.Registered = reg
	}
	return creds, nil
}

// finishOAuth2With is finishOAuth2 with extra form parameters.
func (ss *Sessions) finishOAuth2With(ctx context.Context, p *integrations.Provider, client *oauthClient, cfg map[string]any, f *OAuthFlow, query url.Values, extra url.Values) (*Credentials, error) {
	code := query.Get("code")
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
	for k, vs := range extra {
		form[k] = vs
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
	return creds, nil
}

// refreshRegistered is the refresh_token request of a connection with a
// registered client or a discovered token endpoint.
func (r *refresher) refreshRegistered(ctx context.Context, p *integrations.Provider, c *Connection, reg *RegisteredClient) (*TokenResponse, error) {
	creds := c.Credentials
	prov := p
	endpoint := p.TokenURL
	if p.RefreshURL != "" {
		endpoint = p.RefreshURL
	}
	params := p.RefreshParams
	if reg.TokenEndpoint != "" {
		cp := *p
		cp.AuthDetails.BodyFormat = ""
		prov, endpoint, params = &cp, reg.TokenEndpoint, nil
	}
	id, secret := reg.ClientID, reg.ClientSecret
	if id == "" && reg.TokenEndpoint == "" {
		// A static client: the integration's (never sent to a discovered
		// endpoint).
		var err error
		if id, secret, err = r.client(ctx, c); err != nil {
			return nil, err
		}
	}
	form := url.Values{"grant_type": {GrantRefreshToken}, "refresh_token": {creds.RefreshToken}}
	if reg.Resource != "" {
		form.Set("resource", reg.Resource)
	}
	return r.post(ctx, tokenRequest{
		provider: prov,
		endpoint: endpoint,
		params:   params,
		vars: integrations.TemplateVars{ConnectionConfig: stringMap(c.ConnectionConfig), ClientID: id, ClientSecret: secret,
			Raw: creds.Raw, Extra: map[string]any{"refresh_token": creds.RefreshToken}},
		form:         form,
		clientID:     id,
		clientSecret: secret,
		secrets:      []string{creds.RefreshToken, creds.AccessToken, secret},
	})
}

// checkMCPURL checks a URL of an MCP server or authorization server: an
// absolute https URL without user info, fragment or template syntax. Plain
// http is accepted only for a loopback host when the policy allows
// loopback (tests). Where the request then goes is checked again at dial
// time by the egress policy.
func checkMCPURL(raw string, policy egress.Policy) error {
	if raw == "" {
		return errors.New("it is missing")
	}
	if len(raw) > 2048 {
		return errors.New("it is longer than 2048 characters")
	}
	if strings.Contains(raw, "${") || strings.ContainsFunc(raw, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return errors.New("it contains characters a URL cannot hold")
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" || u.Opaque != "" {
		return errors.New("it is not an absolute URL")
	}
	if u.User != nil {
		return errors.New("it carries user info")
	}
	if u.Fragment != "" {
		return errors.New("it has a fragment")
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !(policy.AllowLoopback || policy.AllowPrivateNetworks) || !isLoopbackHost(u.Hostname()) {
			return errors.New("it must use https")
		}
	default:
		return errors.New("it must use https")
	}
	if err := policy.CheckHost(u.Host); err != nil {
		var ae *egress.AddressError
		if errors.As(err, &ae) && ae.Remedy() != "" {
			return errors.New("its address is not allowed (" + ae.Remedy() + ")")
		}
		return errors.New("its address is not allowed")
	}
	return nil
}

func isLoopbackHost(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// mcpDiscovery is what discovery found out about an MCP server.
type mcpDiscovery struct {
	Resource              string
	Issuer                string
	AuthorizationEndpoint string
	TokenEndpoint         string
	RegistrationEndpoint  string
	Scopes                []string
}

// protectedResourceMetadata is the part of an RFC 9728 document used.
type protectedResourceMetadata struct {
	Resource             string   `json:"resource"`
	AuthorizationServers []string `json:"authorization_servers"`
	ScopesSupported      []string `json:"scopes_supported"`
}

// authServerMetadata is the part of an RFC 8414 document used.
type authServerMetadata struct {
	Issuer                        string   `json:"issuer"`
	AuthorizationEndpoint         string   `json:"authorization_endpoint"`
	TokenEndpoint                 string   `json:"token_endpoint"`
	RegistrationEndpoint          string   `json:"registration_endpoint"`
	ScopesSupported               []string `json:"scopes_supported"`
	ResponseTypesSupported        []string `json:"response_types_supported"`
	CodeChallengeMethodsSupported []string `json:"code_challenge_methods_supported"`
}

func discoveryErr(format string, args ...any) *FlowError {
	return flowErr(CodeMCPDiscoveryFailed, format, args...)
}

// discoverMCP finds the authorization server of the MCP server at server:
// its protected resource metadata (path-aware, then at the root, then the
// resource_metadata of a 401's WWW-Authenticate), then the authorization
// server's metadata. Without protected resource metadata the server's
// origin is taken as its own authorization server.
func (ss *Sessions) discoverMCP(ctx context.Context, server string) (*mcpDiscovery, error) {
	if err := checkMCPURL(server, ss.cfg.Policy); err != nil {
		return nil, flowErr(CodeInvalidConnectionConfig, "The connection config mcp_server_url cannot be used: %s.", err)
	}
	su, _ := url.Parse(server)
	su.RawQuery = ""
	d := &mcpDiscovery{Resource: strings.TrimRight(su.String(), "/")}
	var prm *protectedResourceMetadata
	var candidates []string
	if p := strings.TrimRight(su.EscapedPath(), "/"); p != "" {
		candidates = append(candidates, origin(su)+"/.well-known/oauth-protected-resource"+p)
	}
	candidates = append(candidates, origin(su)+"/.well-known/oauth-protected-resource")
	if m := ss.resourceMetadataHint(ctx, su.String()); m != "" {
		candidates = append([]string{m}, candidates...)
	}
	for _, c := range candidates {
		var doc protectedResourceMetadata
		ok, err := ss.fetchMCPDocument(ctx, c, &doc)
		if err != nil {
			return nil, err
		}
		if ok {
			prm = &doc
			break
		}
	}
	asURL := origin(su)
	if prm != nil {
		if prm.Resource != "" {
			ru, err := url.Parse(prm.Resource)
			if err != nil || origin(ru) != origin(su) || !strings.HasPrefix(su.EscapedPath()+"/", strings.TrimRight(ru.EscapedPath(), "/")+"/") {
				return nil, discoveryErr("The MCP server's protected resource metadata names another resource (%s).", sanitize(prm.Resource, 200, nil))
			}
			d.Resource = strings.TrimRight(prm.Resource, "/")
		}
		if len(prm.AuthorizationServers) > 0 {
			asURL = prm.AuthorizationServers[0]
		}
		d.Scopes = prm.ScopesSupported
	}
	if err := checkMCPURL(asURL, ss.cfg.Policy); err != nil {
		return nil, discoveryErr("The MCP server's authorization server cannot be used: %s.", err)
	}
	au, _ := url.Parse(asURL)
	as, err := ss.fetchAuthServerMetadata(ctx, au)
	if err != nil {
		return nil, err
	}
	if as == nil {
		return nil, discoveryErr("The MCP server publishes no OAuth authorization server metadata (RFC 9728, RFC 8414).")
	}
	if as.Issuer != "" && strings.TrimRight(as.Issuer, "/") != strings.TrimRight(asURL, "/") {
		return nil, discoveryErr("The authorization server's metadata names another issuer.")
	}
	for _, e := range []struct{ name, v string }{{"authorization_endpoint", as.AuthorizationEndpoint}, {"token_endpoint", as.TokenEndpoint}} {
		if err := checkMCPURL(e.v, ss.cfg.Policy); err != nil {
			return nil, discoveryErr("The authorization server's %s cannot be used: %s.", e.name, err)
		}
	}
	if !slices.Contains(as.CodeChallengeMethodsSupported, "S256") {
		return nil, discoveryErr("The authorization server does not announce PKCE with S256, which MCP authorization requires.")
	}
	if as.RegistrationEndpoint == "" {
		return nil, discoveryErr("The authorization server offers no dynamic client registration (registration_endpoint).")
	}
	if err := checkMCPURL(as.RegistrationEndpoint, ss.cfg.Policy); err != nil {
		return nil, discoveryErr("The authorization server's registration_endpoint cannot be used: %s.", err)
	}
	d.Issuer = strings.TrimRight(asURL, "/")
	if as.Issuer != "" {
		d.Issuer = as.Issuer
	}
	d.AuthorizationEndpoint, d.TokenEndpoint, d.RegistrationEndpoint = as.AuthorizationEndpoint, as.TokenEndpoint, as.RegistrationEndpoint
	if len(d.Scopes) == 0 {
		d.Scopes = as.ScopesSupported
	}
	if len(d.Scopes) > 50 {
		d.Scopes = d.Scopes[:50]
	}
	return d, nil
}

// fetchAuthServerMetadata tries the RFC 8414 and OpenID well-known URLs of
// an authorization server, path-aware first. Nil without error means none
// was found.
func (ss *Sessions) fetchAuthServerMetadata(ctx context.Context, au *url.URL) (*authServerMetadata, error) {
	o := origin(au)
	p := strings.TrimRight(au.EscapedPath(), "/")
	var candidates []string
	if p != "" {
		candidates = append(candidates, o+"/.well-known/oauth-authorization-server"+p, o+"/.well-known/openid-configuration"+p, o+p+"/.well-known/openid-configuration")
	} else {
		candidates = append(candidates, o+"/.well-known/oauth-authorization-server", o+"/.well-known/openid-configuration")
	}
	for _, c := range candidates {
		var m authServerMetadata
		ok, err := ss.fetchMCPDocument(ctx, c, &m)
		if err != nil {
			return nil, err
		}
		if ok {
			return &m, nil
		}
	}
	return nil, nil
}

// resourceMetadataHint asks the MCP server without credentials and returns
// the resource_metadata URL of its 401's WWW-Authenticate, or "".
func (ss *Sessions) resourceMetadataHint(ctx context.Context, server string) string {
	rctx, cancel := context.WithTimeout(ctx, ss.cc.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, server, nil)
	if err != nil {
		return ""
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := ss.cfg.HTTPClient.Do(req)
	if err != nil {
		return ""
	}
	drainBody(resp.Body)
	if resp.StatusCode != http.StatusUnauthorized {
		return ""
	}
	for _, h := range resp.Header.Values("WWW-Authenticate") {
		if v := authParam(h, "resource_metadata"); v != "" && checkMCPURL(v, ss.cfg.Policy) == nil {
			return v
		}
	}
	return ""
}

// authParam returns the value of the parameter name of a WWW-Authenticate
// challenge (quoted or not), or "".
func authParam(h, name string) string {
	i := strings.Index(strings.ToLower(h), name+"=")
	if i < 0 || len(h) > 4096 {
		return ""
	}
	rest := h[i+len(name)+1:]
	if strings.HasPrefix(rest, `"`) {
		if j := strings.IndexByte(rest[1:], '"'); j >= 0 {
			return rest[1 : j+1]
		}
		return ""
	}
	if j := strings.IndexAny(rest, ", "); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

// fetchMCPDocument GETs a JSON metadata document into v. A 404 or other
// 4xx answer is "not here" (false, nil); an unreachable host, a 5xx, a
// document larger than maxMCPDocument or one that is not a JSON object is
// an error.
func (ss *Sessions) fetchMCPDocument(ctx context.Context, u string, v any) (bool, error) {
	if err := checkMCPURL(u, ss.cfg.Policy); err != nil {
		return false, discoveryErr("A metadata URL cannot be used: %s.", err)
	}
	rctx, cancel := context.WithTimeout(ctx, ss.cc.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, u, nil)
	if err != nil {
		return false, discoveryErr("A metadata URL cannot be requested.")
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("MCP-Protocol-Version", "2025-06-18")
	resp, err := ss.cfg.HTTPClient.Do(req)
	if err != nil {
		f := egress.Describe(err)
		ss.cfg.Logger.WarnContext(ctx, "MCP discovery request got no answer", "code", f.Code, "err", redactErr(err))
		return false, &FlowError{Type: f.Code, Message: "MCP discovery failed: " + f.Message + ".", Status: http.StatusBadRequest, Err: f}
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode >= 400 && resp.StatusCode < 500:
		drainBody(resp.Body)
		return false, nil
	case resp.StatusCode != http.StatusOK:
		drainBody(resp.Body)
		return false, discoveryErr("A metadata document could not be read: the server answered %s.", resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxMCPDocument+1))
	if err != nil {
		return false, discoveryErr("A metadata document could not be read.")
	}
	if len(body) > maxMCPDocument {
		return false, discoveryErr("A metadata document is larger than %d bytes.", maxMCPDocument)
	}
	if err := decodeJSONObject(resp.Header.Get("Content-Type"), body, v); err != nil {
		return false, discoveryErr("A metadata document is not a JSON object.")
	}
	return true, nil
}

// decodeJSONObject decodes a JSON object body (any JSON content type, or
// none) into v.
func decodeJSONObject(contentType string, body []byte, v any) error {
	if contentType != "" {
		mt, _, err := mime.ParseMediaType(contentType)
		if err != nil || !(mt == "application/json" || strings.HasSuffix(mt, "+json")) {
			return errors.New("not JSON")
		}
	}
	b := bytes.TrimSpace(body)
	if len(b) == 0 || b[0] != '{' {
		return errors.New("not a JSON object")
	}
	return json.Unmarshal(b, v)
}

// registrationAnswer is the part of an RFC 7591 answer used.
type registrationAnswer struct {
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret"`
}

// registerMCPClient registers a public client (RFC 7591) for this server's
// callback at endpoint, with the provider's registration_params.
func (ss *Sessions) registerMCPClient(ctx context.Context, endpoint string, params map[string]any, scopes []string) (*registrationAnswer, error) {
	body := map[string]any{}
	for k, v := range params {
		body[k] = v
	}
	body["redirect_uris"] = []string{ss.cfg.CallbackURL}
	body["token_endpoint_auth_method"] = "none"
	if _, ok := body["grant_types"]; !ok {
		body["grant_types"] = []string{"authorization_code", "refresh_token"}
	}
	if _, ok := body["response_types"]; !ok {
		body["response_types"] = []string{"code"}
	}
	if _, ok := body["client_name"]; !ok {
		body["client_name"] = "connect"
	}
	if len(scopes) > 0 {
		if _, ok := body["scope"]; !ok {
			body["scope"] = strings.Join(scopes, " ")
		}
	}
	b, err := json.Marshal(body)
	if err != nil {
		return nil, flowErr(FlowErrProviderConfig, "The registration parameters cannot be encoded.")
	}
	rctx, cancel := context.WithTimeout(ctx, ss.cc.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, endpoint, bytes.NewReader(b))
	if err != nil {
		return nil, flowErr(CodeMCPRegistrationFailed, "The registration request cannot be built.")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := ss.cc.cfg.HTTPClient.Do(req)
	if err != nil {
		f := egress.Describe(err)
		ss.cfg.Logger.WarnContext(ctx, "MCP client registration got no answer", "code", f.Code, "err", redactErr(err))
		return nil, &FlowError{Type: f.Code, Message: "The client registration failed: " + f.Message + ".", Status: http.StatusBadRequest, Err: f}
	}
	defer resp.Body.Close()
	rb, err := io.ReadAll(io.LimitReader(resp.Body, maxMCPDocument+1))
	if err != nil || len(rb) > maxMCPDocument {
		return nil, flowErr(CodeMCPRegistrationFailed, "The registration answer could not be read.")
	}
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusCreated {
		var e struct {
			Error            string `json:"error"`
			ErrorDescription string `json:"error_description"`
		}
		msg := "the registration endpoint answered " + resp.Status
		if json.Unmarshal(rb, &e) == nil && e.Error != "" {
			msg = sanitize(e.Error, 100, nil)
			if e.ErrorDescription != "" {
				msg += " (" + sanitize(e.ErrorDescription, 300, nil) + ")"
			}
		}
		return nil, flowErr(CodeMCPRegistrationFailed, "The authorization server refused to register a client: %s.", msg)
	}
	var a registrationAnswer
	if err := decodeJSONObject(resp.Header.Get("Content-Type"), rb, &a); err != nil {
		return nil, flowErr(CodeMCPRegistrationFailed, "The registration answer is not a JSON object.")
	}
	if a.ClientID == "" || len(a.ClientID) > 1024 || textProblem(a.ClientID) != "" || len(a.ClientSecret) > 4096 || textProblem(a.ClientSecret) != "" {
		return nil, flowErr(CodeMCPRegistrationFailed, "The registration answer has no usable client_id and client_secret (one line of text each).")
	}
	return &a, nil
}

// origin returns scheme://host of u.
func origin(u *url.URL) string { return u.Scheme + "://" + u.Host }

func drainBody(b io.ReadCloser) {
	_, _ = io.Copy(io.Discard, io.LimitReader(b, 64<<10))
	_ = b.Close()
}
