package connections

import (
	"context"
	"time"
)

// Statuses of an OAuthFlow.
const (
	// FlowPending: the end user is at the provider; the callback has not
	// come back yet.
	FlowPending = "pending"
	// FlowExchanging: the callback came back and claimed the flow (a state
	// is used once); the code is being exchanged for tokens.
	FlowExchanging = "exchanging"
	// FlowSuccess: the connection is stored.
	FlowSuccess = "success"
	// FlowFailed: the flow failed; ErrorType and ErrorMessage say why.
	FlowFailed = "error"
)

// DefaultFlowTTL is how long an end user has to complete an OAuth flow once
// it has started.
const DefaultFlowTTL = 15 * time.Minute

// OAuthFlow is one OAuth authorization in progress, started by a connect
// session: the server side of the browser's trip to the provider and back.
// It is stored, not kept in memory, so that the callback, the status poll
// and the WebSocket of the frontend client may each reach any instance.
type OAuthFlow struct {
	ID            int64
	EnvironmentID int64
	// SessionID is the connect session that started the flow.
	SessionID int64
	// StateHash is the SHA-256 of the flow's state: the OAuth 2 state
	// parameter (also sent to app installations), or the OAuth 1 request
	// token. The state itself is never stored. Unique.
	StateHash []byte
	// ClientID is the browser's handle on the flow: the ws_client_id of
	// the frontend client's WebSocket, or the id the connect UI chose. It
	// may be empty.
	ClientID       string
	IntegrationKey string
	Provider       string
	// AuthMode is OAUTH2, OAUTH1 or APP.
	AuthMode string
	// ConnectionID is the connection the flow creates, or re-authorizes
	// when Reconnect is set.
	ConnectionID string
	Reconnect    bool
	// ConnectionConfig holds the end user's and the session's connection
	// config values (never a secret).
	ConnectionConfig map[string]any
	// Tags and WebhookURLOverride are copied from the session onto the
	// connection. Tags is nil on a reconnect that keeps the connection's.
	Tags               map[string]string
	WebhookURLOverride string
	// Scopes are the scopes requested.
	Scopes []string
	// Secrets are the flow's secrets. A Store does not persist this field;
	// it persists SealedSecrets.
	Secrets *FlowSecrets
	// SealedSecrets is Secrets as JSON, sealed.
	SealedSecrets string
	// BrowserHash is the SHA-256 of the value of the cookie that binds the
	// flow to the browser that started it.
	BrowserHash []byte
	// Status is FlowPending, FlowExchanging, FlowSuccess or FlowFailed.
	Status string
	// ErrorType and ErrorMessage explain a failed flow, in the words of the
	// frontend client's error frames (error_type, error_desc).
	ErrorType    string
	ErrorMessage string
	CreatedAt    time.Time
	ExpiresAt    time.Time
	CompletedAt  *time.Time
}

// FlowSecrets are the secrets of an OAuth flow.
type FlowSecrets struct {
	// CodeVerifier is the PKCE verifier (OAuth 2).
	CodeVerifier string `json:"code_verifier,omitempty"`
	// RequestTokenSecret is the secret of the OAuth 1 request token.
	RequestTokenSecret string `json:"request_token_secret,omitempty"`
	// ClientID and ClientSecret are the end user's own OAuth app, when the
	// session let them bring one; empty means the integration's.
	ClientID     string `json:"client_id,omitempty"`
	ClientSecret string `json:"client_secret,omitempty"`
	// MCP is the client registered for an MCP flow and its endpoints.
	MCP *RegisteredClient `json:"mcp,omitempty"`
}

// Done reports whether the flow has ended, well or badly.
func (f *OAuthFlow) Done() bool { return f.Status == FlowSuccess || f.Status == FlowFailed }

// FlowStore is what OAuth flows need from storage. It is part of
// SessionStore.
type FlowStore interface {
	// CreateOAuthFlow stores f and sets its ID. A StateHash already stored
	// is ErrConflict; a missing environment is ErrNotFound.
	CreateOAuthFlow(ctx context.Context, f *OAuthFlow) error
	// ClaimOAuthFlow moves the pending flow whose StateHash is hash to
	// FlowExchanging and returns it as it is after the change: a state is
	// used once. An unknown hash is ErrNotFound; a flow that is not pending
	// (claimed already) is ErrConflict. Expiry is the caller's to check.
	ClaimOAuthFlow(ctx context.Context, hash []byte) (*OAuthFlow, error)
	// CompleteOAuthFlow sets the outcome of the flow with the id: status
	// (FlowSuccess or FlowFailed), the error's type and message, and when.
	// A missing flow is ErrNotFound.
	CompleteOAuthFlow(ctx context.Context, id int64, status, errorType, errorMessage string, at time.Time) error
	// GetOAuthFlowByClientID returns the newest flow with the client id,
	// of the session when sessionID is not 0, or ErrNotFound.
	GetOAuthFlowByClientID(ctx context.Context, clientID string, sessionID int64) (*OAuthFlow, error)
	// DeleteExpiredOAuthFlows deletes at most limit flows (all when limit
	// <= 0) that expired before before, and returns how many it deleted.
	DeleteExpiredOAuthFlows(ctx context.Context, before time.Time, limit int) (int, error)
}
