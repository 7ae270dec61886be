package environments

import (
	"context"
	"time"

	"github.com/embedauth/connect/store"
)

// MaxWebhookURLs is the number of webhook URLs an environment may have.
const MaxWebhookURLs = 2

// Environment is an isolated space of integrations, connections, keys and
// settings. Every API request acts in exactly one environment, the one its
// API key belongs to.
type Environment struct {
	ID int64
	// Account groups environments for rate limiting. Defaults to "default".
	Account string
	// Name is unique within the Store, for example "dev" or "prod".
	Name string
	// WebhookURLs are the (at most two) URLs that receive every webhook.
	WebhookURLs []string
	// SealedWebhookSigningKey is the webhook signing key, sealed. It is
	// distinct from every API key.
	SealedWebhookSigningKey string
	// WebhookSettings selects which webhooks are sent.
	WebhookSettings WebhookSettings
	// ConnectUI holds the branding of the pre-built connect UI.
	ConnectUI ConnectUISettings
	// CallbackURL overrides the OAuth callback URL; empty means the
	// service's default.
	CallbackURL string
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// WebhookSettings selects which webhook types an environment receives.
type WebhookSettings struct {
	// SendAuthCreation sends auth webhooks of operation creation and
	// override. Default true.
	SendAuthCreation bool `json:"send_auth_creation"`
	// SendAuthRefreshError sends auth webhooks of operation refresh (a
	// failed refresh). Default true.
	SendAuthRefreshError bool `json:"send_auth_refresh_error"`
	// SendSync sends sync webhooks. Default true.
	SendSync bool `json:"send_sync"`
	// SendEmptySync also sends a sync webhook when a run changed nothing.
	// Default true.
	SendEmptySync bool `json:"send_empty_sync"`
	// SendAsyncAction sends async action webhooks. Default true.
	SendAsyncAction bool `json:"send_async_action"`
	// SendForward sends forwarded provider webhooks. Default true.
	SendForward bool `json:"send_forward"`
}

// DefaultWebhookSettings enables every webhook type.
func DefaultWebhookSettings() WebhookSettings {
	return WebhookSettings{true, true, true, true, true, true}
}

// ConnectUISettings is the branding of the pre-built connect UI.
type ConnectUISettings struct {
	// Theme is "light", "dark" or "system" (the default).
	Theme string `json:"theme"`
	// PrimaryColorLight and PrimaryColorDark are CSS hex colours such as
	// "#00b2e3"; empty means the default.
	PrimaryColorLight string `json:"primary_color_light,omitempty"`
	PrimaryColorDark  string `json:"primary_color_dark,omitempty"`
	// HideSecuredBy removes the "secured by" mention.
	HideSecuredBy bool `json:"hide_secured_by"`
}

// APIKey is a secret key of an environment. The key itself is shown once, at
// creation; the Store keeps only its SHA-256 hash.
type APIKey struct {
	ID            int64
	EnvironmentID int64
	// Name is a label for people.
	Name string
	// Hash is the SHA-256 of the secret key.
	Hash []byte
	// Hint is the last four characters of the key, to tell keys apart.
	Hint string
	// Scopes the key holds; see the Scope constants.
	Scopes    []string
	CreatedAt time.Time
}

// Variable is an environment variable. Its value is sealed at rest.
type Variable struct {
	Name        string
	SealedValue string
}

// Store is what the environments package needs from storage.
type Store interface {
	store.Transactor

	// CreateEnvironment stores env and sets its ID. A duplicate Name is
	// ErrConflict.
	CreateEnvironment(ctx context.Context, env *Environment) error
	// GetEnvironment returns the environment with the id, or ErrNotFound.
	GetEnvironment(ctx context.Context, id int64) (*Environment, error)
	// GetEnvironmentByName returns the environment with the name, or
	// ErrNotFound.
	GetEnvironmentByName(ctx context.Context, name string) (*Environment, error)
	// ListEnvironments returns every environment ordered by ID.
	ListEnvironments(ctx context.Context) ([]*Environment, error)
	// UpdateEnvironment replaces the mutable fields of the environment with
	// env.ID (everything but ID and CreatedAt), or returns ErrNotFound.
	UpdateEnvironment(ctx context.Context, env *Environment) error

	// CreateAPIKey stores key and sets its ID. A duplicate Hash is
	// ErrConflict; a missing environment is ErrNotFound.
	CreateAPIKey(ctx context.Context, key *APIKey) error
	// GetAPIKeyByHash returns the key with the hash, or ErrNotFound.
	GetAPIKeyByHash(ctx context.Context, hash []byte) (*APIKey, error)
	// ListAPIKeys returns the keys of an environment ordered by ID.
	ListAPIKeys(ctx context.Context, environmentID int64) ([]*APIKey, error)
	// DeleteAPIKey deletes a key of the environment, or returns ErrNotFound.
	DeleteAPIKey(ctx context.Context, environmentID, id int64) error

	// SetVariables replaces every variable of the environment. A missing
	// environment is ErrNotFound; a duplicate name is ErrInvalid.
	SetVariables(ctx context.Context, environmentID int64, vars []Variable) error
	// ListVariables returns the variables of the environment ordered by name.
	ListVariables(ctx context.Context, environmentID int64) ([]Variable, error)
}
