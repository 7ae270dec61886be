package connections

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/embedauth/connect/egress"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/internal/httpapi"
	"github.com/embedauth/connect/ratelimit"
	"github.com/embedauth/connect/store"
	"github.com/embedauth/connect/webhooks"
)

const purposeSessionDefaults = "connect_session.integrations_config_defaults"

// Limits of connect session inputs.
const (
	// MaxAllowedIntegrations bounds allowed_integrations and the keys of
	// integrations_config_defaults and overrides.
	MaxAllowedIntegrations = 1000
	// MaxConfigEntries bounds each connection_config and
	// authorization_params map, and the params of an auth request.
	MaxConfigEntries = 100
	// MaxConfigKeyLength and MaxConfigValueLength bound their keys and
	// values, in bytes.
	MaxConfigKeyLength   = 255
	MaxConfigValueLength = 8 << 10
)

// DefaultCheckTimeout bounds a credential check (the provider's
// verification request) and a client-credentials token request.
const DefaultCheckTimeout = 10 * time.Second

// DefaultWebsocketsPath is the default path of the frontend client's
// WebSocket under the handler (SessionsConfig.WebsocketsPath).
const DefaultWebsocketsPath = "/"

// EnvironmentGetter finds environments; the Store implements it.
type EnvironmentGetter interface {
	GetEnvironment(ctx context.Context, id int64) (*environments.Environment, error)
}

// SessionsConfig configures Sessions. Store and Environments are required.
type SessionsConfig struct {
	// Store holds the sessions and the connections' session marks.
	Store SessionStore
	// Environments finds a session's environment (its name for webhooks,
	// its account for rate limiting, its connect UI branding).
	Environments EnvironmentGetter
	// Integrations gives the wire form of integrations for
	// GET /integrations with a session token. Required for the HTTP routes.
	Integrations *integrations.Service
	// Notifier receives the auth webhook of every connection a session
	// creates or re-authorizes, in the transaction that stores it. Nil
	// sends none.
	Notifier webhooks.Notifier
	// Limiter limits the requests of a session's account; nil does not.
	Limiter ratelimit.Limiter
	// Logger receives 5xx errors; nil discards them.
	Logger *slog.Logger
	// TTL is the lifetime of a session token. Defaults to
	// DefaultSessionTTL.
	TTL time.Duration
	// ConnectUIURL is the address of the pre-built connect UI; connect_link
	// is it with ?session_token=<token>. Defaults to PublicURL + "/connect/".
	ConnectUIURL string
	// PublicURL is the service's external base URL, path included when the
	// handler is mounted under a prefix: it makes logo URLs absolute, and
	// its path prefixes the websocketsPath GET /connect/session announces.
	PublicURL string
	// CheckTimeout bounds a credential check and a client-credentials token
	// request. Defaults to DefaultCheckTimeout.
	CheckTimeout time.Duration
	// Policy is the outbound address policy of the default HTTPClient: the
	// zero Policy refuses loopback, private and every other special
	// address (see package egress).
	Policy egress.Policy
	// HTTPClient sends credential checks and the token requests of the
	// flows (code exchange, client credentials, OAuth 1, app
	// installations). Defaults to a client of its own that enforces Policy
	// at dial time and follows redirects only to the same origin (so
	// credentials never travel to another host). A client set here
	// replaces Policy: its transport must enforce an address policy itself
	// (build it on egress.NewTransport).
	HTTPClient *http.Client
	// AWSSTSEndpoint replaces DefaultAWSSTSEndpoint for AWS SigV4 auth
	// calls (builtin STS mode): set by the host, never by an end user.
	AWSSTSEndpoint AWSSTSEndpointFunc
	// MaxBody limits request bodies of the public routes; 0 means
	// httpapi.DefaultMaxBody.
	MaxBody int64
	// WebsocketsPath is the path, relative to the handler's mount point,
	// where the frontend client's WebSocket connects (WebSocketHandler).
	// GET /connect/session announces it behind PublicURL's path: the value
	// @nangohq/frontend needs as its websocketsPath option, which it
	// resolves against the origin of its host. Defaults to
	// DefaultWebsocketsPath.
	WebsocketsPath string
	// CallbackURL is the OAuth redirect URI registered with providers: the
	// address of GET /oauth/callback as end users' browsers reach it.
	// Defaults to PublicURL + "/oauth/callback", or the relative
	// "/oauth/callback" without a PublicURL (which providers refuse: set
	// one of them for OAuth).
	CallbackURL string
	// FlowTTL is how long an end user has to finish an OAuth flow once it
	// has started. Defaults to DefaultFlowTTL.
	FlowTTL time.Duration
}

// Sessions manages connect sessions and the flows that use them: the
// session API (POST /connect/sessions, POST /connect/sessions/reconnect),
// the connect UI's calls (GET and DELETE /connect/session, GET /integrations
// and GET /providers/{provider} with a session token) and the frontend
// client's non-OAuth auth calls (API key, Basic, client credentials,
// unauthenticated). Create it with NewSessions.
type Sessions struct {
	conns *Service
	cfg   SessionsConfig
	// cc fetches client-credentials tokens with the refresher's code.
	cc *refresher
	// hub wakes the WebSockets of this process waiting on a flow.
	hub flowHub
	// wsPublicPath is the WebSocket's path as browsers see it: PublicURL's
	// path followed by WebsocketsPath.
	wsPublicPath string
}

// NewSessions returns the connect sessions of conns.
func NewSessions(conns *Service, cfg SessionsConfig) (*Sessions, error) {
	if conns == nil || cfg.Store == nil || cfg.Environments == nil {
		return nil, errors.New("connections: NewSessions needs the connections Service, SessionsConfig.Store and SessionsConfig.Environments")
	}
	if cfg.TTL < 0 || cfg.CheckTimeout < 0 {
		return nil, errors.New("connections: SessionsConfig.TTL and CheckTimeout must not be negative")
	}
	if cfg.TTL == 0 {
		cfg.TTL = DefaultSessionTTL
	}
	if cfg.CheckTimeout == 0 {
		cfg.CheckTimeout = DefaultCheckTimeout
	}
	var publicPath string
	if cfg.PublicURL != "" {
		u, err := url.Parse(cfg.PublicURL)
		if err != nil || u.RawQuery != "" || u.Fragment != "" {
			return nil, fmt.Errorf("connections: SessionsConfig.PublicURL %q must be a URL without query or fragment", cfg.PublicURL)
		}
		publicPath = strings.TrimRight(u.EscapedPath(), "/")
	}
	if cfg.ConnectUIURL == "" {
		cfg.ConnectUIURL = strings.TrimRight(cfg.PublicURL, "/") + "/connect/"
	}
	if _, err := url.Parse(cfg.ConnectUIURL); err != nil {
		return nil, fmt.Errorf("connections: SessionsConfig.ConnectUIURL: %w", err)
	}
	if cfg.WebsocketsPath == "" {
		cfg.WebsocketsPath = DefaultWebsocketsPath
	}
	if u, err := url.Parse(cfg.WebsocketsPath); err != nil || !strings.HasPrefix(cfg.WebsocketsPath, "/") ||
		strings.HasPrefix(cfg.WebsocketsPath, "//") || u.RawQuery != "" || u.Fragment != "" || u.ForceQuery {
		return nil, fmt.Errorf("connections: SessionsConfig.WebsocketsPath %q must be a path that starts with '/', without query or fragment", cfg.WebsocketsPath)
	}
	if cfg.CallbackURL == "" {
		cfg.CallbackURL = strings.TrimRight(cfg.PublicURL, "/") + "/oauth/callback"
	}
	if u, err := url.Parse(cfg.CallbackURL); err != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("connections: SessionsConfig.CallbackURL %q must be a URL without query or fragment", cfg.CallbackURL)
	}
	if cfg.FlowTTL < 0 {
		return nil, errors.New("connections: SessionsConfig.FlowTTL must not be negative")
	}
	if cfg.FlowTTL == 0 {
		cfg.FlowTTL = DefaultFlowTTL
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = newCheckClient(cfg.CheckTimeout, cfg.Policy)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	ss := &Sessions{conns: conns, cfg: cfg, wsPublicPath: publicPath + cfg.WebsocketsPath}
	rc := RefreshConfig{Timeout: cfg.CheckTimeout, HTTPClient: cfg.HTTPClient, Logger: cfg.Logger, AWSSTSEndpoint: cfg.AWSSTSEndpoint}
	rc.applyDefaults()
	ss.cc = &refresher{s: conns, cfg: rc}
	return ss, nil
}

// newCheckClient returns the default client of credential checks: its own
// connection pool whose dials the policy checks, the timeout, and
// redirects followed only within the same origin, at most 5.
func newCheckClient(timeout time.Duration, policy egress.Policy) *http.Client {
	return &http.Client{
		Transport: egress.NewTransport(policy),
		Timeout:   timeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 5 || req.URL.Scheme != via[0].URL.Scheme || req.URL.Host != via[0].URL.Host {
				return http.ErrUseLastResponse
			}
			return nil
		},
	}
}

// CreateSessionInput is the body of POST /connect/sessions.
type CreateSessionInput struct {
	// EndUser is deprecated: it becomes the tags end_user_id,
	// end_user_email and end_user_display_name (plus its own tags).
	// Optional, like Tags: a session without either creates connections
	// without tags.
	EndUser *EndUser `json:"end_user"`
	// Organization is deprecated: it becomes the tags organization_id and
	// organization_display_name.
	Organization *Organization `json:"organization"`
	// AllowedIntegrations restricts the integrations the end user may
	// connect; each must exist. Empty allows all.
	AllowedIntegrations []string `json:"allowed_integrations"`
	// IntegrationsConfigDefaults preset values per integration key; each
	// key must be an integration of the environment.
	IntegrationsConfigDefaults map[string]IntegrationDefaults `json:"integrations_config_defaults"`
	// Tags are copied onto the connections the session creates.
	Tags map[string]string `json:"tags"`
	// Overrides per integration key; each key must be an integration.
	Overrides map[string]IntegrationOverride `json:"overrides"`
	// WebhookURLOverride becomes the connections' webhook URL override.
	WebhookURLOverride string `json:"webhook_url_override"`
}

// ReconnectSessionInput is the body of POST /connect/sessions/reconnect.
type ReconnectSessionInput struct {
	// ConnectionID and IntegrationID name a connection created through a
	// connect session. Required.
	ConnectionID  string `json:"connection_id"`
	IntegrationID string `json:"integration_id"`
	// Tags, when given (or EndUser, Organization), replace the connection's
	// tags once it is re-authorized.
	Tags                       map[string]string              `json:"tags"`
	EndUser                    *EndUser                       `json:"end_user"`
	Organization               *Organization                  `json:"organization"`
	IntegrationsConfigDefaults map[string]IntegrationDefaults `json:"integrations_config_defaults"`
	Overrides                  map[string]IntegrationOverride `json:"overrides"`
	// WebhookURLOverride, when set, replaces the connection's.
	WebhookURLOverride string `json:"webhook_url_override"`
}

// NewSession is a session just created, with its token, which is shown
// only this once.
type NewSession struct {
	Token       string
	ConnectLink string
	ExpiresAt   time.Time
	Session     *Session
}

// Create creates a connect session.
func (ss *Sessions) Create(ctx context.Context, environmentID int64, in CreateSessionInput) (*NewSession, error) {
	sess := &Session{EnvironmentID: environmentID}
	var err error
	if sess.Tags, err = sessionTags(in.Tags, in.EndUser, in.Organization); err != nil {
		return nil, err
	}
	if sess.AllowedIntegrations, err = ss.allowedIntegrations(ctx, environmentID, in.AllowedIntegrations); err != nil {
		return nil, err
	}
	if err := ss.fill(ctx, sess, in.IntegrationsConfigDefaults, in.Overrides, in.WebhookURLOverride); err != nil {
		return nil, err
	}
	return ss.insert(ctx, sess)
}

// Reconnect creates a session that re-authorizes an existing connection,
// which must have been created through a connect session.
func (ss *Sessions) Reconnect(ctx context.Context, environmentID int64, in ReconnectSessionInput) (*NewSession, error) {
	if in.ConnectionID == "" {
		return nil, httpapi.InvalidField("is required", "connection_id")
	}
	if in.IntegrationID == "" {
		return nil, httpapi.InvalidField("is required", "integration_id")
	}
	c, err := ss.conns.store.GetConnection(ctx, environmentID, in.IntegrationID, in.ConnectionID)
	if err != nil {
		return nil, ss.conns.notFound(ctx, err, environmentID, in.IntegrationID, in.ConnectionID)
	}
	marked, err := ss.cfg.Store.IsSessionConnection(ctx, environmentID, c.ID)
	if err != nil {
		return nil, err
	}
	if !marked {
		return nil, store.Invalid("invalid_body", fmt.Sprintf("The connection %q was not created through a connect session: only such connections can be reconnected.", in.ConnectionID),
			store.FieldError{Code: "not_created_by_session", Message: "was not created through a connect session", Path: []string{"connection_id"}})
	}
	sess := &Session{EnvironmentID: environmentID, ConnectionID: c.ConnectionID, IntegrationKey: c.IntegrationKey,
		AllowedIntegrations: []string{c.IntegrationKey}}
	if in.Tags != nil || in.EndUser != nil || in.Organization != nil {
		if sess.Tags, err = sessionTags(in.Tags, in.EndUser, in.Organization); err != nil {
			return nil, err
		}
		if sess.Tags == nil {
			sess.Tags = map[string]string{}
		}
	}
	if err := ss.fill(ctx, sess, in.IntegrationsConfigDefaults, in.Overrides, in.WebhookURLOverride); err != nil {
		return nil, err
	}
	return ss.insert(ctx, sess)
}

// sessionTags merges the tags and the deprecated end user and
// organization, as Import does: the end user's conventional keys win.
func sessionTags(given map[string]string, u *EndUser, org *Organization) (map[string]string, error) {
	tags, err := NormalizeTags(given)
	if err != nil {
		return nil, err
	}
	if u != nil || org != nil {
		eu, err := EndUserTags(u, org)
		if err != nil {
			return nil, err
		}
		if tags == nil {
			tags = map[string]string{}
		}
		for k, v := range eu {
			tags[k] = v
		}
		if len(tags) > MaxTags {
			return nil, httpapi.InvalidField(fmt.Sprintf("must have at most %d keys", MaxTags), "tags")
		}
	}
	for k, v := range tags {
		if strings.IndexByte(v, 0) >= 0 || strings.IndexByte(k, 0) >= 0 {
			return nil, httpapi.InvalidField("must not hold NUL characters", "tags", k)
		}
	}
	return tags, nil
}

// allowedIntegrations checks that every key exists and drops duplicates.
func (ss *Sessions) allowedIntegrations(ctx context.Context, environmentID int64, keys []string) ([]string, error) {
	if len(keys) > MaxAllowedIntegrations {
		return nil, httpapi.InvalidField(fmt.Sprintf("must have at most %d entries", MaxAllowedIntegrations), "allowed_integrations")
	}
	var out []string
	for i, k := range keys {
		if slices.Contains(out, k) {
			continue
		}
		if err := ss.mustExist(ctx, environmentID, k, "allowed_integrations", strconv.Itoa(i)); err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, nil
}

// mustExist answers invalid_body naming the field when the environment has
// no integration key.
func (ss *Sessions) mustExist(ctx context.Context, environmentID int64, key string, path ...string) error {
	if key != "" && len(key) <= 255 {
		_, err := ss.conns.integrations.GetIntegration(ctx, environmentID, key)
		if err == nil {
			return nil
		}
		if !errors.Is(err, store.ErrNotFound) {
			return err
		}
	}
	return store.Invalid("invalid_body", fmt.Sprintf("The request body is invalid: the integration %q does not exist.", key),
		store.FieldError{Code: "unknown_integration", Message: fmt.Sprintf("integration %q does not exist", key), Path: path})
}

// fill validates and sets the fields shared by both kinds of session.
func (ss *Sessions) fill(ctx context.Context, sess *Session, defaults map[string]IntegrationDefaults, overrides map[string]IntegrationOverride, webhookURL string) error {
	envID := sess.EnvironmentID
	if len(defaults) > MaxAllowedIntegrations {
		return httpapi.InvalidField(fmt.Sprintf("must have at most %d entries", MaxAllowedIntegrations), "integrations_config_defaults")
	}
	for _, k := range sortedKeys(defaults) {
		if err := ss.mustExist(ctx, envID, k, "integrations_config_defaults", k); err != nil {
			return err
		}
		d := defaults[k]
		if err := checkString(d.UserScopes, MaxConfigValueLength, "integrations_config_defaults", k, "user_scopes"); err != nil {
			return err
		}
		if err := checkStringMap(d.AuthorizationParams, "integrations_config_defaults", k, "authorization_params"); err != nil {
			return err
		}
		if err := checkStringMap(d.ConnectionConfig, "integrations_config_defaults", k, "connection_config"); err != nil {
			return err
		}
		if ck, reason := configStringProblem(d.ConnectionConfig); ck != "" {
			return httpapi.InvalidField(reason, "integrations_config_defaults", k, "connection_config", ck)
		}
	}
	if len(defaults) > 0 {
		sess.IntegrationsConfigDefaults = defaults
	}
	if len(overrides) > MaxAllowedIntegrations {
		return httpapi.InvalidField(fmt.Sprintf("must have at most %d entries", MaxAllowedIntegrations), "overrides")
	}
	for _, k := range sortedKeys(overrides) {
		if err := ss.mustExist(ctx, envID, k, "overrides", k); err != nil {
			return err
		}
		if d := overrides[k].DocsConnect; d != "" {
			if _, err := parseURL(d); err != nil || len(d) > 2048 {
				return httpapi.InvalidField("must be an absolute http or https URL of at most 2048 characters", "overrides", k, "docs_connect")
			}
		}
	}
	if len(overrides) > 0 {
		sess.Overrides = overrides
	}
	if webhookURL != "" {
		if err := ss.conns.checkWebhookURL(ctx, webhookURL); err != nil {
			return err
		}
		sess.WebhookURLOverride = webhookURL
	}
	return nil
}

func checkString(v string, max int, path ...string) error {
	if len(v) > max {
		return httpapi.InvalidField(fmt.Sprintf("must be at most %d bytes", max), path...)
	}
	if strings.IndexByte(v, 0) >= 0 || !utf8.ValidString(v) {
		return httpapi.InvalidField("must be valid UTF-8 without NUL characters", path...)
	}
	return nil
}

func checkStringMap(m map[string]string, path ...string) error {
	if len(m) > MaxConfigEntries {
		return httpapi.InvalidField(fmt.Sprintf("must have at most %d entries", MaxConfigEntries), path...)
	}
	for k, v := range m {
		p := append(slices.Clone(path), k)
		if k == "" {
			return httpapi.InvalidField("keys must not be empty", path...)
		}
		if err := checkString(k, MaxConfigKeyLength, p...); err != nil {
			return err
		}
		if err := checkString(v, MaxConfigValueLength, p...); err != nil {
			return err
		}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// insert gives the session a token, seals its defaults and stores it.
func (ss *Sessions) insert(ctx context.Context, sess *Session) (*NewSession, error) {
	now := ss.conns.nowUTC()
	tok := NewSessionToken()
	sess.TokenHash = HashSessionToken(tok)
	sess.CreatedAt = now
	sess.ExpiresAt = now.Add(ss.cfg.TTL)
	if err := ss.seal(ctx, sess); err != nil {
		return nil, err
	}
	if err := ss.cfg.Store.CreateConnectSession(ctx, sess); err != nil {
		return nil, err
	}
	// Best effort: a few expired sessions go with every new one, so the
	// table does not grow without bound. Prune deletes them all.
	if _, err := ss.cfg.Store.DeleteExpiredConnectSessions(ctx, now, 100); err != nil {
		ss.cfg.Logger.WarnContext(ctx, "pruning expired connect sessions failed", "err", err)
	}
	return &NewSession{Token: tok, ConnectLink: ss.ConnectLink(tok), ExpiresAt: sess.ExpiresAt, Session: sess}, nil
}

// ConnectLink returns the connect UI address for a token: ConnectUIURL with
// the query parameter session_token.
func (ss *Sessions) ConnectLink(token string) string {
	u, err := url.Parse(ss.cfg.ConnectUIURL)
	if err != nil { // checked by NewSessions
		return ss.cfg.ConnectUIURL
	}
	q := u.Query()
	q.Set("session_token", token)
	u.RawQuery = q.Encode()
	return u.String()
}

func (ss *Sessions) seal(ctx context.Context, sess *Session) error {
	if len(sess.IntegrationsConfigDefaults) == 0 {
		sess.SealedIntegrationsConfigDefaults = ""
		return nil
	}
	b, err := json.Marshal(sess.IntegrationsConfigDefaults)
	if err != nil {
		return err
	}
	sess.SealedIntegrationsConfigDefaults, err = ss.conns.keyring.Seal(ctx, purposeSessionDefaults, b)
	return err
}

func (ss *Sessions) open(sess *Session) error {
	sess.IntegrationsConfigDefaults = nil
	if sess.SealedIntegrationsConfigDefaults == "" {
		return nil
	}
	b, err := ss.conns.keyring.Open(purposeSessionDefaults, sess.SealedIntegrationsConfigDefaults)
	if err != nil {
		return fmt.Errorf("open defaults of connect session %d: %w", sess.ID, err)
	}
	return json.Unmarshal(b, &sess.IntegrationsConfigDefaults)
}

// Errors of session token authentication (HTTP 401).
func errTokenFormat() error {
	return store.Errorf(store.ErrUnauthorized, "invalid_connect_session_token_format",
		"Authentication failed: the connect session token is malformed.")
}

func errUnknownToken(expired bool) error {
	msg := "Authentication failed: the connect session token is unknown."
	if expired {
		msg = "Authentication failed: the connect session token has expired."
	}
	return store.Errorf(store.ErrUnauthorized, "unknown_connect_session_token", "%s", msg)
}

// Authenticate returns the live session of a token, with its defaults
// opened. A malformed token is an ErrUnauthorized error with code
// invalid_connect_session_token_format; an unknown, deleted or expired one
// unknown_connect_session_token.
func (ss *Sessions) Authenticate(ctx context.Context, token string) (*Session, error) {
	if !IsSessionToken(token) {
		return nil, errTokenFormat()
	}
	sess, err := ss.cfg.Store.GetConnectSession(ctx, HashSessionToken(token))
	if errors.Is(err, store.ErrNotFound) {
		return nil, errUnknownToken(false)
	}
	if err != nil {
		return nil, err
	}
	if sess.Expired(ss.conns.now()) {
		return nil, errUnknownToken(true)
	}
	if err := ss.open(sess); err != nil {
		return nil, err
	}
	return sess, nil
}

// Delete deletes a session: its token stops working at once.
func (ss *Sessions) Delete(ctx context.Context, sess *Session) error {
	err := ss.cfg.Store.DeleteConnectSession(ctx, sess.EnvironmentID, sess.ID)
	if errors.Is(err, store.ErrNotFound) {
		return errUnknownToken(false)
	}
	return err
}

// Prune deletes every expired session and returns how many it deleted.
// Expired sessions are refused whether or not they were pruned.
func (ss *Sessions) Prune(ctx context.Context) (int, error) {
	return ss.cfg.Store.DeleteExpiredConnectSessions(ctx, ss.conns.nowUTC(), 0)
}
