package connections

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"

	"github.com/embedauth/connect/store"
)

// Connect session tokens: SessionTokenPrefix followed by 64 lowercase hex
// digits (32 random bytes), the format of Nango's tokens.
const (
	SessionTokenPrefix = "nango_connect_session_"
	sessionTokenHexLen = 64
)

// DefaultSessionTTL is how long a connect session token lasts.
const DefaultSessionTTL = 30 * time.Minute

// Session is a connect session: a short-lived token that lets an end user's
// browser (the pre-built connect UI, or the host's own UI through the
// frontend client) create one or more connections of an environment, or
// re-authorize one (a reconnect session). The token itself is never stored:
// TokenHash is its SHA-256.
type Session struct {
	ID            int64
	EnvironmentID int64
	// TokenHash is the SHA-256 of the token (HashSessionToken).
	TokenHash []byte
	// ConnectionID and IntegrationKey are set together on a reconnect
	// session: the session may only re-authorize that connection.
	ConnectionID   string
	IntegrationKey string
	// AllowedIntegrations restricts the integrations (unique keys) the end
	// user may connect; empty allows every integration of the environment.
	AllowedIntegrations []string
	// IntegrationsConfigDefaults are preset inputs per integration key. A
	// Store does not persist this field (it may hold an OAuth client
	// secret); it persists SealedIntegrationsConfigDefaults.
	IntegrationsConfigDefaults map[string]IntegrationDefaults
	// SealedIntegrationsConfigDefaults is IntegrationsConfigDefaults as
	// JSON, sealed; empty when there are none.
	SealedIntegrationsConfigDefaults string
	// Overrides change what the connect UI shows per integration key.
	Overrides map[string]IntegrationOverride
	// Tags are copied onto the connections the session creates and sent in
	// their auth webhooks. Lowercase keys; the deprecated end_user and
	// organization are stored here as the conventional keys. Nil on a
	// reconnect session that leaves the connection's tags as they are.
	Tags map[string]string
	// WebhookURLOverride becomes the webhook URL override of the
	// connections the session creates; empty leaves it unset (or, when
	// reconnecting, unchanged).
	WebhookURLOverride string
	CreatedAt          time.Time
	ExpiresAt          time.Time
}

// Reconnecting reports whether s is a reconnect session.
func (s *Session) Reconnecting() bool { return s.ConnectionID != "" }

// Allows reports whether the session may connect the integration.
func (s *Session) Allows(integrationKey string) bool {
	if s.Reconnecting() {
		return integrationKey == s.IntegrationKey
	}
	if len(s.AllowedIntegrations) == 0 {
		return true
	}
	for _, k := range s.AllowedIntegrations {
		if k == integrationKey {
			return true
		}
	}
	return false
}

// Expired reports whether the session has expired at now.
func (s *Session) Expired(now time.Time) bool { return !now.Before(s.ExpiresAt) }

// IntegrationDefaults are the values a connect session presets for one
// integration (integrations_config_defaults.<key>).
type IntegrationDefaults struct {
	// UserScopes are the OAuth user scopes (Slack), comma-separated.
	UserScopes string `json:"user_scopes,omitempty"`
	// AuthorizationParams are extra query parameters of the OAuth
	// authorization URL.
	AuthorizationParams map[string]string `json:"authorization_params,omitempty"`
	// ConnectionConfig presets connection_config values. The end user's
	// params win over them. The keys oauth_scopes_override,
	// oauth_client_id_override and oauth_client_secret_override steer OAuth
	// flows; the last two are never copied into a connection's config.
	ConnectionConfig map[string]string `json:"connection_config,omitempty"`
}

// IntegrationOverride changes what the connect UI shows for one
// integration (overrides.<key>).
type IntegrationOverride struct {
	// DocsConnect replaces the documentation link of the info icons.
	DocsConnect string `json:"docs_connect,omitempty"`
}

// Connection config keys with a meaning for OAuth flows.
const (
	ConfigOAuthScopesOverride       = "oauth_scopes_override"
	ConfigOAuthClientIDOverride     = "oauth_client_id_override"
	ConfigOAuthClientSecretOverride = "oauth_client_secret_override"
)

// SessionStore is what connect sessions need from storage.
type SessionStore interface {
	store.Transactor
	FlowStore

	// CreateConnectSession stores s and sets its ID. A TokenHash already
	// stored is ErrConflict; a missing environment is ErrNotFound.
	CreateConnectSession(ctx context.Context, s *Session) error
	// GetConnectSession returns the session whose TokenHash is hash, expired
	// or not, or ErrNotFound.
	GetConnectSession(ctx context.Context, hash []byte) (*Session, error)
	// DeleteConnectSession deletes a session of the environment, or returns
	// ErrNotFound.
	DeleteConnectSession(ctx context.Context, environmentID, id int64) error
	// DeleteExpiredConnectSessions deletes at most limit sessions (every
	// one when limit <= 0) whose ExpiresAt is before before, and returns
	// how many it deleted.
	DeleteExpiredConnectSessions(ctx context.Context, before time.Time, limit int) (int, error)

	// MarkSessionConnection records that the connection with the numeric
	// id (Connection.ID) of the environment was created through a connect
	// session, or returns ErrNotFound. The mark lives and dies with the
	// connection: a connection created again under the same connection id
	// is not marked.
	MarkSessionConnection(ctx context.Context, environmentID, id int64) error
	// IsSessionConnection reports whether the connection with the numeric
	// id is marked; a missing connection is not.
	IsSessionConnection(ctx context.Context, environmentID, id int64) (bool, error)
}

// NewSessionToken returns a fresh connect session token.
func NewSessionToken() string {
	b := make([]byte, sessionTokenHexLen/2)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return SessionTokenPrefix + hex.EncodeToString(b)
}

// IsSessionToken reports whether tok has the form of a connect session
// token (it may still be unknown or expired).
func IsSessionToken(tok string) bool {
	hexPart, ok := strings.CutPrefix(tok, SessionTokenPrefix)
	if !ok || len(hexPart) != sessionTokenHexLen {
		return false
	}
	for i := 0; i < len(hexPart); i++ {
		c := hexPart[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// LooksLikeSessionToken reports whether tok claims to be a connect session
// token: it starts with SessionTokenPrefix, well-formed or not.
func LooksLikeSessionToken(tok string) bool { return strings.HasPrefix(tok, SessionTokenPrefix) }

// HashSessionToken returns the SHA-256 of a token, the form it is stored
// and looked up in.
func HashSessionToken(tok string) []byte {
	h := sha256.Sum256([]byte(tok))
	return h[:]
}
