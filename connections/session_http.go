package connections

import (
	"context"
	"errors"
	"maps"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/internal/httpapi"
	"github.com/embedauth/connect/store"
)

// CORS of the routes a browser calls (the connect UI and the frontend
// client): any origin, no credentials, the request headers the published
// clients send, preflights cached for 10 minutes.
const (
	corsAllowMethods = "GET, HEAD, PUT, PATCH, POST, DELETE"
	corsAllowHeaders = "Authorization, Content-Type, Accept, Origin, X-Requested-With, Nango-Activity-Log-Id, " +
		"Nango-Is-Dry-Run, Nango-Is-Sync, Provider-Config-Key, Connection-Id, Sentry-Trace, Baggage"
	corsMaxAge = "600"
)

// AuthPaths are the paths (with the {integration} wildcard) of the
// non-OAuth auth calls, by the auth mode each serves.
var AuthPaths = map[string]string{
	integrations.AuthModeAPIKey:   "/api-auth/api-key/{integration}",
	integrations.AuthModeBasic:    "/api-auth/basic/{integration}",
	integrations.AuthModeOAuth2CC: "/oauth2/auth/{integration}",
	integrations.AuthModeNone:     "/auth/unauthenticated/{integration}",
	integrations.AuthModeTBA:      "/auth/tba/{integration}",
	integrations.AuthModeAWSSigV4: "/auth/aws-sigv4/{integration}",
}

func setCORS(h http.Header) { h.Set("Access-Control-Allow-Origin", "*") }

// Preflight answers a CORS preflight request of a browser route.
func Preflight(w http.ResponseWriter, _ *http.Request) {
	h := w.Header()
	setCORS(h)
	h.Set("Access-Control-Allow-Methods", corsAllowMethods)
	h.Set("Access-Control-Allow-Headers", corsAllowHeaders)
	h.Set("Access-Control-Max-Age", corsMaxAge)
	w.WriteHeader(http.StatusNoContent)
}

// APINewSession is the wire form of a new session: the data of the 201
// answer of POST /connect/sessions and POST /connect/sessions/reconnect.
type APINewSession struct {
	Token       string `json:"token"`
	ConnectLink string `json:"connect_link"`
	ExpiresAt   string `json:"expires_at"`
}

// Routes registers the session routes that need an API key (scope
// environment:connect_sessions:write): POST /connect/sessions and
// POST /connect/sessions/reconnect.
func (ss *Sessions) Routes(rt *httpapi.Router) {
	answer := func(w http.ResponseWriter, ns *NewSession) {
		httpapi.WriteJSON(w, http.StatusCreated, map[string]APINewSession{"data": {
			Token: ns.Token, ConnectLink: ns.ConnectLink, ExpiresAt: httpapi.Time(ns.ExpiresAt)}})
	}
	rt.Handle(httpapi.Route{Pattern: "POST /connect/sessions", Scope: environments.ScopeConnectSessionsWrite,
		Handler: func(w http.ResponseWriter, r *http.Request, p *httpapi.Principal) error {
			var in CreateSessionInput
			if err := httpapi.Decode(r, &in); err != nil {
				return err
			}
			ns, err := ss.Create(r.Context(), p.EnvironmentID, in)
			if err != nil {
				return err
			}
			answer(w, ns)
			return nil
		}})
	rt.Handle(httpapi.Route{Pattern: "POST /connect/sessions/reconnect", Scope: environments.ScopeConnectSessionsWrite,
		Handler: func(w http.ResponseWriter, r *http.Request, p *httpapi.Principal) error {
			var in ReconnectSessionInput
			if err := httpapi.Decode(r, &in); err != nil {
				return err
			}
			ns, err := ss.Reconnect(r.Context(), p.EnvironmentID, in)
			if err != nil {
				return err
			}
			answer(w, ns)
			return nil
		}})
}

// PublicRoutes registers the routes a browser calls with a session token
// and no API key, each answering CORS preflights (OPTIONS) and carrying
// Access-Control-Allow-Origin: *:
//
//   - GET /connect/session and DELETE /connect/session, with the token as
//     bearer (the connect UI);
//   - POST /api-auth/api-key/{integration}, /api-auth/basic/{integration},
//     /oauth2/auth/{integration}, /auth/unauthenticated/{integration},
//     /auth/tba/{integration} and /auth/aws-sigv4/{integration},
//     with the token in the connect_session_token query parameter (the
//     frontend client's non-OAuth auth calls);
//   - GET /oauth/connect/{integration} (the OAuth popup, with the token in
//     connect_session_token), GET /oauth/callback (the provider's redirect
//     back) and GET /oauth/status/{client} (the flow's status, with the
//     token as bearer).
//
// The frontend client's WebSocket is served apart: see WebSocketHandler.
func (ss *Sessions) PublicRoutes(mux *http.ServeMux) {
	mux.Handle("GET /connect/session", ss.public(ss.getSession))
	mux.Handle("DELETE /connect/session", ss.public(ss.deleteSession))
	mux.HandleFunc("OPTIONS /connect/session", Preflight)
	for _, mode := range []string{integrations.AuthModeAPIKey, integrations.AuthModeBasic, integrations.AuthModeOAuth2CC, integrations.AuthModeNone,
		integrations.AuthModeTBA, integrations.AuthModeAWSSigV4} {
		mux.Handle("POST "+AuthPaths[mode], ss.public(ss.authHandler(mode)))
		mux.HandleFunc("OPTIONS "+AuthPaths[mode], Preflight)
	}
	ss.tokenRoutes(mux)
	ss.oauthRoutes(mux)
}

// Bearer wraps the API handler so that GET /integrations and
// GET /providers/{provider} also accept a session token as bearer, as the
// connect UI calls them: the integrations listed are then those the session
// allows, and the answers carry Access-Control-Allow-Origin: *. Those two
// routes also answer CORS preflights. Every other request goes to api,
// whose API-key routes refuse a session token.
func (ss *Sessions) Bearer(api http.Handler) http.Handler {
	inner := http.NewServeMux()
	inner.Handle("GET /integrations", ss.public(ss.listIntegrations))
	inner.Handle("GET /providers/{provider}", ss.public(ss.getProvider))
	inner.HandleFunc("OPTIONS /integrations", Preflight)
	inner.HandleFunc("OPTIONS /providers/{provider}", Preflight)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodOptions || LooksLikeSessionToken(bearerValue(r)) {
			if _, pattern := inner.Handler(r); pattern != "" {
				inner.ServeHTTP(w, r)
				return
			}
		}
		api.ServeHTTP(w, r)
	})
}

// bearerValue returns the token of an "Authorization: Bearer" header, or "".
func bearerValue(r *http.Request) string {
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(tok)
}

type publicHandler func(w http.ResponseWriter, r *http.Request) error

// public serves a browser route: CORS, a bounded body, the standard error
// body.
func (ss *Sessions) public(h publicHandler) http.Handler {
	max := ss.cfg.MaxBody
	if max <= 0 {
		max = httpapi.DefaultMaxBody
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		setCORS(w.Header())
		if r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, max)
		}
		if err := h(w, r); err != nil {
			httpapi.WriteError(w, r, ss.cfg.Logger, httpapi.StyleStandard, err)
		}
	})
}

// bearerSession authenticates the session token of the Authorization
// header.
func (ss *Sessions) bearerSession(w http.ResponseWriter, r *http.Request) (*Session, *environments.Environment, error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return nil, nil, store.Errorf(store.ErrUnauthorized, "missing_auth_header", "Authentication failed: the request has no Authorization header.")
	}
	tok := bearerValue(r)
	if tok == "" || strings.ContainsAny(tok, " \t") {
		return nil, nil, store.Errorf(store.ErrUnauthorized, "malformed_auth_header", "Authentication failed: the Authorization header must be 'Bearer <connect session token>'.")
	}
	return ss.live(r.Context(), w, tok)
}

// querySession authenticates the connect_session_token query parameter.
func (ss *Sessions) querySession(w http.ResponseWriter, r *http.Request, q url.Values) (*Session, *environments.Environment, error) {
	tok := q.Get("connect_session_token")
	if tok == "" {
		if q.Get("public_key") != "" {
			return nil, nil, store.Errorf(store.ErrUnauthorized, "deprecated_authentication",
				"Authentication with a public key is not supported: create a connect session (POST /connect/sessions) and pass its token as connectSessionToken.")
		}
		return nil, nil, store.Errorf(store.ErrUnauthorized, "missing_connect_session_token",
			"Authentication failed: the connect_session_token query parameter is missing.")
	}
	return ss.live(r.Context(), w, tok)
}

// live authenticates a token, finds its environment and applies the rate
// limit of the environment's account.
func (ss *Sessions) live(ctx context.Context, w http.ResponseWriter, tok string) (*Session, *environments.Environment, error) {
	sess, err := ss.Authenticate(ctx, tok)
	if err != nil {
		return nil, nil, err
	}
	env, err := ss.cfg.Environments.GetEnvironment(ctx, sess.EnvironmentID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, errUnknownToken(false)
	}
	if err != nil {
		return nil, nil, err
	}
	if ss.cfg.Limiter != nil {
		d, err := ss.cfg.Limiter.Allow(ctx, env.Account)
		if err != nil {
			ss.cfg.Logger.WarnContext(ctx, "rate limiter failed; request allowed", "err", err)
		} else if !d.Allowed {
			secs := max(int(math.Ceil(d.RetryAfter.Seconds())), 1)
			w.Header().Set("Retry-After", strconv.Itoa(secs))
			return nil, nil, store.Errorf(store.ErrRateLimited, "too_many_requests", "Rate limit exceeded; retry after %d seconds.", secs)
		}
	}
	return sess, env, nil
}

// APISession is the data of GET /connect/session. Its WebsocketsPath is the
// frontend client's websocketsPath option: the WebSocket's path from the
// origin, the mount prefix (PublicURL's path) included.
type APISession struct {
	AllowedIntegrations        []string                       `json:"allowed_integrations,omitempty"`
	IntegrationsConfigDefaults map[string]IntegrationDefaults `json:"integrations_config_defaults,omitempty"`
	Overrides                  map[string]IntegrationOverride `json:"overrides,omitempty"`
	Tags                       map[string]string              `json:"tags"`
	EndUser                    *APIEndUser                    `json:"endUser"`
	IsReconnecting             bool                           `json:"isReconnecting"`
	ConnectUISettings          APIConnectUISettings           `json:"connectUISettings"`
	WebsocketsPath             string                         `json:"websocketsPath"`
	ExpiresAt                  string                         `json:"expires_at"`
}

// APIConnectUISettings is the connect UI branding in Nango's wire shape.
type APIConnectUISettings struct {
	Theme struct {
		Light APIColorPalette `json:"light"`
		Dark  APIColorPalette `json:"dark"`
	} `json:"theme"`
	// DefaultTheme is light, dark or system.
	DefaultTheme  string `json:"defaultTheme"`
	ShowWatermark bool   `json:"showWatermark"`
}

// APIColorPalette is one theme's colours.
type APIColorPalette struct {
	Primary string `json:"primary"`
}

// DefaultPrimaryColor is the connect UI's primary colour when the
// environment sets none.
const DefaultPrimaryColor = "#00B2E3"

// ConnectUISettings returns the wire form of an environment's branding.
func ConnectUISettings(c environments.ConnectUISettings) APIConnectUISettings {
	var out APIConnectUISettings
	out.Theme.Light.Primary, out.Theme.Dark.Primary = c.PrimaryColorLight, c.PrimaryColorDark
	if out.Theme.Light.Primary == "" {
		out.Theme.Light.Primary = DefaultPrimaryColor
	}
	if out.Theme.Dark.Primary == "" {
		out.Theme.Dark.Primary = DefaultPrimaryColor
	}
	out.DefaultTheme = c.Theme
	if out.DefaultTheme == "" {
		out.DefaultTheme = "system"
	}
	out.ShowWatermark = !c.HideSecuredBy
	return out
}

// API returns the wire form of a session for the browser. An OAuth client
// secret preset in integrations_config_defaults is left out (an empty one,
// which asks the connect UI for the end user's own, stays); so is the
// webhook URL override, which the browser has no use for.
func (ss *Sessions) API(sess *Session, env *environments.Environment) APISession {
	out := APISession{
		AllowedIntegrations: sess.AllowedIntegrations,
		Overrides:           sess.Overrides,
		Tags:                nonNilTags(sess.Tags),
		IsReconnecting:      sess.Reconnecting(),
		ConnectUISettings:   ConnectUISettings(env.ConnectUI),
		WebsocketsPath:      ss.wsPublicPath,
		ExpiresAt:           httpapi.Time(sess.ExpiresAt),
	}
	if u := apiEndUser(sess.Tags); u != nil {
		u.Tags = endUserOwnTags(sess.Tags)
		out.EndUser = u
	}
	if len(sess.IntegrationsConfigDefaults) > 0 {
		out.IntegrationsConfigDefaults = make(map[string]IntegrationDefaults, len(sess.IntegrationsConfigDefaults))
		for k, d := range sess.IntegrationsConfigDefaults {
			d.ConnectionConfig = maps.Clone(d.ConnectionConfig)
			if d.ConnectionConfig[ConfigOAuthClientSecretOverride] != "" {
				delete(d.ConnectionConfig, ConfigOAuthClientSecretOverride)
			}
			out.IntegrationsConfigDefaults[k] = d
		}
	}
	return out
}

func (ss *Sessions) getSession(w http.ResponseWriter, r *http.Request) error {
	sess, env, err := ss.bearerSession(w, r)
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, map[string]APISession{"data": ss.API(sess, env)})
	return nil
}

func (ss *Sessions) deleteSession(w http.ResponseWriter, r *http.Request) error {
	sess, _, err := ss.bearerSession(w, r)
	if err != nil {
		return err
	}
	if err := ss.Delete(r.Context(), sess); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// APISessionIntegration is an integration as GET /integrations lists it
// for a session token.
type APISessionIntegration struct {
	UniqueKey       string `json:"unique_key"`
	DisplayName     string `json:"display_name"`
	Provider        string `json:"provider"`
	Logo            string `json:"logo"`
	ForwardWebhooks bool   `json:"forward_webhooks"`
	CreatedAt       string `json:"created_at"`
	UpdatedAt       string `json:"updated_at"`
}

func (ss *Sessions) listIntegrations(w http.ResponseWriter, r *http.Request) error {
	sess, _, err := ss.bearerSession(w, r)
	if err != nil {
		return err
	}
	if ss.cfg.Integrations == nil {
		return errors.New("connections: SessionsConfig.Integrations is not set")
	}
	list, err := ss.cfg.Integrations.List(r.Context(), sess.EnvironmentID)
	if err != nil {
		return err
	}
	data := make([]APISessionIntegration, 0, len(list))
	for _, it := range list {
		if !sess.Allows(it.UniqueKey) {
			continue
		}
		a := ss.cfg.Integrations.API(it, false, "")
		data = append(data, APISessionIntegration{UniqueKey: a.UniqueKey, DisplayName: a.DisplayName, Provider: a.Provider,
			Logo: a.Logo, ForwardWebhooks: a.ForwardWebhooks, CreatedAt: a.CreatedAt, UpdatedAt: a.UpdatedAt})
	}
	httpapi.WriteJSON(w, http.StatusOK, map[string]any{"data": data})
	return nil
}

func (ss *Sessions) getProvider(w http.ResponseWriter, r *http.Request) error {
	if _, _, err := ss.bearerSession(w, r); err != nil {
		return err
	}
	name := r.PathValue("provider")
	p, ok := ss.conns.catalog.Lookup(name)
	if !ok {
		return store.NotFound("not_found", "The provider %q was not found.", name)
	}
	a := p.API()
	var u *integrations.UnusableError
	if errors.As(ss.conns.catalog.Unusable(name), &u) {
		a.Unusable = u.Reason()
	}
	if ss.cfg.Integrations != nil {
		a.LogoURL = ss.cfg.Integrations.LogoURL(p, ss.cfg.PublicURL)
	} else if strings.HasPrefix(a.LogoURL, "/") {
		a.LogoURL = strings.TrimRight(ss.cfg.PublicURL, "/") + a.LogoURL
	}
	httpapi.WriteJSON(w, http.StatusOK, map[string]any{"data": a})
	return nil
}

// authBody is the JSON body of the non-OAuth auth calls; each reads its
// fields.
type authBody struct {
	APIKey            *string `json:"apiKey"`
	Username          *string `json:"username"`
	Password          *string `json:"password"`
	ClientID          *string `json:"client_id"`
	ClientSecret      *string `json:"client_secret"`
	ClientCertificate *string `json:"client_certificate"`
	ClientPrivateKey  *string `json:"client_private_key"`
	// TBA
	TokenID                   *string `json:"token_id"`
	TokenSecret               *string `json:"token_secret"`
	OAuthClientIDOverride     *string `json:"oauth_client_id_override"`
	OAuthClientSecretOverride *string `json:"oauth_client_secret_override"`
	// AWS SigV4
	RoleARN *string `json:"role_arn"`
	Region  *string `json:"region"`
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// authHandler serves the auth call of one mode.
func (ss *Sessions) authHandler(mode string) publicHandler {
	return func(w http.ResponseWriter, r *http.Request) error {
		q, err := url.ParseQuery(r.URL.RawQuery)
		if err != nil {
			return store.Invalid("invalid_query_params", "The query string cannot be parsed.")
		}
		sess, _, err := ss.querySession(w, r, q)
		if err != nil {
			return err
		}
		params, err := ParseParams(r.URL.RawQuery)
		if err != nil {
			return err
		}
		in := AuthorizeInput{IntegrationKey: r.PathValue("integration"), Mode: mode, ConnectionID: q.Get("connection_id"), Params: params}
		if mode != integrations.AuthModeNone {
			if r.ContentLength > 0 || len(r.TransferEncoding) > 0 {
				if err := httpapi.CheckContentType(r); err != nil {
					return err
				}
			}
			var body authBody
			if err := httpapi.Decode(r, &body); err != nil {
				return err
			}
			switch mode {
			case integrations.AuthModeAPIKey:
				in.Credentials.APIKey = deref(body.APIKey)
			case integrations.AuthModeBasic:
				in.Credentials.Username, in.Credentials.Password = deref(body.Username), deref(body.Password)
			case integrations.AuthModeOAuth2CC:
				in.Credentials.ClientID, in.Credentials.ClientSecret = deref(body.ClientID), deref(body.ClientSecret)
				in.Credentials.ClientCertificate, in.Credentials.ClientPrivateKey = deref(body.ClientCertificate), deref(body.ClientPrivateKey)
			case integrations.AuthModeTBA:
				in.Credentials.TokenID, in.Credentials.TokenSecret = deref(body.TokenID), deref(body.TokenSecret)
				tbaCredentials(&in.Credentials, deref(body.OAuthClientIDOverride), deref(body.OAuthClientSecretOverride))
			case integrations.AuthModeAWSSigV4:
				in.Credentials.RoleARN, in.Credentials.Region = deref(body.RoleARN), deref(body.Region)
			}
		}
		res, err := ss.Authorize(r.Context(), sess, in)
		if err != nil {
			return err
		}
		httpapi.WriteJSON(w, http.StatusOK, map[string]string{
			"connectionId": res.Connection.ConnectionID, "providerConfigKey": res.Connection.IntegrationKey})
		return nil
	}
}
