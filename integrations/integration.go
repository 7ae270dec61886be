package integrations

import (
	"context"
	"time"

	"github.com/embedauth/connect/store"
)

// Integration is a configured provider in one environment: one OAuth app, one
// API-key setup. UniqueKey (the integration ID, also called provider config
// key) is unique within its environment.
type Integration struct {
	ID            int64
	EnvironmentID int64
	UniqueKey     string
	Provider      string
	DisplayName   string
	// ForwardWebhooks forwards the provider's incoming webhooks to the
	// environment's webhook URLs.
	ForwardWebhooks bool
	// IntegrationConfig holds provider-specific settings.
	IntegrationConfig map[string]string
	// Credentials are the OAuth app (or app) credentials. A Store does not
	// persist this field; it persists SealedCredentials.
	Credentials *Credentials
	// SealedCredentials is Credentials as JSON, sealed. Empty when there are
	// none.
	SealedCredentials string
	// Custom holds free-form values for providers without a config schema.
	// A Store does not persist this field; it persists SealedCustom.
	Custom map[string]string
	// SealedCustom is Custom as JSON, sealed. Empty when there is none.
	SealedCustom string
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// Credentials are an integration's app credentials. Type is one of OAUTH1,
// OAUTH2, TBA, APP or CUSTOM.
type Credentials struct {
	Type          string `json:"type"`
	ClientID      string `json:"client_id,omitempty"`
	ClientSecret  string `json:"client_secret,omitempty"`
	Scopes        string `json:"scopes,omitempty"`
	WebhookSecret string `json:"webhook_secret,omitempty"`
	AppID         string `json:"app_id,omitempty"`
	AppLink       string `json:"app_link,omitempty"`
	PrivateKey    string `json:"private_key,omitempty"`
}

// Store is what the integrations package needs from storage.
type Store interface {
	store.Transactor

	// CreateIntegration stores in and sets its ID. A UniqueKey already used
	// in the environment is ErrConflict; a missing environment is
	// ErrNotFound.
	CreateIntegration(ctx context.Context, in *Integration) error
	// GetIntegration returns the integration of the environment with the
	// key, or ErrNotFound.
	GetIntegration(ctx context.Context, environmentID int64, uniqueKey string) (*Integration, error)
	// ListIntegrations returns the environment's integrations ordered by ID.
	ListIntegrations(ctx context.Context, environmentID int64) ([]*Integration, error)
	// UpdateIntegration replaces every field but ID, EnvironmentID and
	// CreatedAt of the integration with in.ID in in.EnvironmentID. A UniqueKey already used by
	// another integration is ErrConflict; renaming an integration that has
	// connections is ErrConflict too. A missing integration is ErrNotFound.
	UpdateIntegration(ctx context.Context, in *Integration) error
	// DeleteIntegration deletes the integration and all its connections, or
	// returns ErrNotFound.
	DeleteIntegration(ctx context.Context, environmentID int64, uniqueKey string) error
}
