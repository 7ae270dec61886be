package connections

import (
	"context"
	"time"

	"github.com/embedauth/connect/oplog"
	"github.com/embedauth/connect/store"
)

// Connection is one end user's authorization against one integration. It is
// identified by (EnvironmentID, IntegrationKey, ConnectionID).
type Connection struct {
	// ID is the numeric id assigned by the Store.
	ID            int64
	EnvironmentID int64
	// IntegrationKey is the integration's unique key (provider config key).
	IntegrationKey string
	// ConnectionID is unique within the integration.
	ConnectionID string
	// Provider is the integration's provider, copied at creation.
	Provider string
	// ConnectionConfig holds provider-specific values such as a subdomain.
	ConnectionConfig map[string]any
	// Metadata is free-form; nil is shown as null.
	Metadata map[string]any
	// Tags have lowercase keys and values of at most 255 characters. The
	// conventional keys end_user_id, end_user_email, end_user_display_name,
	// organization_id and organization_display_name carry the end user.
	Tags map[string]string
	// WebhookURLOverride, when set, receives this connection's webhooks
	// instead of the environment's URLs.
	WebhookURLOverride string
	// AuthMode is the type of the credentials, such as OAUTH2 or API_KEY.
	AuthMode string
	// Credentials are the connection's credentials. A Store does not
	// persist this field; it persists SealedCredentials.
	Credentials *Credentials
	// SealedCredentials is Credentials as JSON, sealed.
	SealedCredentials string
	// CredentialsExpiresAt is when the access token expires, if it does.
	CredentialsExpiresAt *time.Time
	// Errors lists the connection's current problems. Empty when healthy.
	Errors []Error
	// LastFetchedAt is when credentials were last read.
	LastFetchedAt *time.Time
	// LastRefreshFailure is when refreshing the credentials last failed;
	// nil when the last attempt succeeded or none failed. Non-forced reads
	// within the refresh backoff of it do not call the provider again.
	LastRefreshFailure *time.Time
	// RefreshAttempts counts the failed refreshes since the last success.
	RefreshAttempts int
	// Version increases by one on every update; UpdateConnection refuses a
	// stale version with ErrConflict.
	Version   int64
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Error is a problem of a connection, pointing at the operations log entry
// that explains it.
type Error struct {
	Type  string `json:"type"`
	LogID string `json:"log_id"`
}

// Filter selects connections. Zero fields match anything.
type Filter struct {
	// EnvironmentID selects one environment; 0 means every environment
	// (for maintenance such as key rotation, never for API requests).
	EnvironmentID int64
	// ConnectionID matches exactly, possibly across integrations.
	ConnectionID string
	// IntegrationKeys matches any of the keys.
	IntegrationKeys []string
	// Tags must all be present with equal values.
	Tags map[string]string
	// Search matches connection ids containing it, case-insensitively.
	Search string
	// AfterID keeps connections whose ID is greater: keyset paging that
	// neither skips nor repeats rows while earlier ones change.
	AfterID int64
	// ExpiresBefore keeps connections whose credentials expire
	// (CredentialsExpiresAt) before it; nil does not filter.
	ExpiresBefore *time.Time
	// Health keeps the connections in one state, one of the Health*
	// constants (see Health); empty keeps every connection.
	Health string
	store.Page
}

// The states of Filter.Health (GET /connections?status=).
const (
	// HealthOK: no error, neither among the connection's Errors nor a
	// failed sync (a paused sync is no error).
	HealthOK = "ok"
	// HealthError: an error of any kind, among the connection's Errors or
	// a failed sync: not HealthOK.
	HealthError = "error"
	// HealthAuthError: an error of type ErrorTypeAuth among the
	// connection's Errors (its credentials' last refresh failed).
	HealthAuthError = "auth_error"
	// HealthSyncError: the latest finished run of one of its syncs (any
	// variant) stopped (failed, timed out, was cancelled or interrupted;
	// what GET /sync/status reports as ERROR).
	HealthSyncError = "sync_error"
	// HealthPaused: one of its syncs is paused.
	HealthPaused = "paused"
)

// ErrorTypeAuth is the Error.Type of a failed refresh of the
// credentials, cleared by the next success.
const ErrorTypeAuth = "auth"

// Health is the state of a connection that GET /connections reports: the
// conditions of HealthAuthError, HealthSyncError and HealthPaused.
type Health struct {
	AuthError bool `json:"auth_error"`
	SyncError bool `json:"sync_error"`
	Paused    bool `json:"paused"`
}

// Store is what the connections package needs from storage.
type Store interface {
	store.Transactor

	// CreateConnection stores c, sets its ID and sets Version to 1. A
	// connection with the same (EnvironmentID, IntegrationKey,
	// ConnectionID) is ErrConflict; a missing integration is ErrNotFound.
	CreateConnection(ctx context.Context, c *Connection) error
	// GetConnection returns the connection or ErrNotFound.
	GetConnection(ctx context.Context, environmentID int64, integrationKey, connectionID string) (*Connection, error)
	// ListConnections returns the matching connections ordered by ID.
	// The Health filter reads the connections' sync state (the syncs and
	// sync runs of functions.SyncStore) in the same statement.
	ListConnections(ctx context.Context, f Filter) ([]*Connection, error)
	// SyncHealth returns, for each of the connections (by ID) that has
	// syncs, its Health with SyncError and Paused set as Filter.Health
	// reads them (AuthError is left false), in one read; a connection
	// without syncs is absent.
	SyncHealth(ctx context.Context, connectionIDs []int64) (map[int64]Health, error)
	// UpdateConnection replaces every field but the identity, ID and
	// CreatedAt of the connection with c.ID in c.EnvironmentID, when its stored Version equals
	// c.Version; then it sets c.Version to the next version. A stale
	// version is ErrConflict; a missing connection is ErrNotFound.
	UpdateConnection(ctx context.Context, c *Connection) error
	// DeleteConnection deletes the connection or returns ErrNotFound.
	DeleteConnection(ctx context.Context, environmentID int64, integrationKey, connectionID string) error
	// CountConnections returns how many connections the integration has.
	CountConnections(ctx context.Context, environmentID int64, integrationKey string) (int, error)
	// ImportConnections writes the connections of one import (see
	// ImportItem), all or none. An identity given twice is ErrConflict and
	// a missing integration ErrNotFound; either writes nothing and leaves
	// an enclosing transaction usable.
	ImportConnections(ctx context.Context, items []*ImportItem) error
	// LockConnection locks the connection until the transaction of ctx
	// ends, so that one transaction at a time, in any process sharing the
	// Store, holds it: it must be called inside WithTx (outside a
	// transaction it returns an error), and blocks until no other
	// transaction holds the lock or ctx ends. A transaction holding the
	// lock also keeps others from updating or deleting the connection
	// until it ends, so a read made after LockConnection stays current. A
	// missing connection is ErrNotFound (the transaction stays usable).
	// Token refresh uses it to call the provider once per connection.
	LockConnection(ctx context.Context, environmentID int64, integrationKey, connectionID string) error
}

// ImportItem is one connection of Store.ImportConnections: what an import
// (Service.Import, Service.ImportBatch) writes.
//
// When no connection has the identity (EnvironmentID, IntegrationKey,
// ConnectionID) of Connection, Connection is created as CreateConnection
// creates it. Otherwise the existing connection gets the import's
// credentials (SealedCredentials, AuthMode, CredentialsExpiresAt), Errors
// and UpdatedAt; its refresh bookkeeping starts over (LastRefreshFailure
// nil, RefreshAttempts 0); its ConnectionConfig, Metadata and Tags are
// replaced only when the matching Replace field is true; its Version
// increases by one; every other field stays.
//
// ImportConnections sets Created, and sets the ID and Version of a created
// Connection; it replaces an updated Connection with the connection as
// stored, Credentials nil.
type ImportItem struct {
	Connection              *Connection
	ReplaceConnectionConfig bool
	ReplaceMetadata         bool
	ReplaceTags             bool
	// Log, when set, is the import's operations log entry, stamped
	// (oplog.Writer.Stamp), with the connection's EnvironmentID,
	// IntegrationKey and ConnectionID. ImportConnections stores it with
	// the connection, in the same write, after setting its Operation to
	// OpImportCreate or OpImportUpdate by outcome. An ID stored already,
	// or given twice, fails the import with ErrConflict (which, unlike the
	// refusals above, may abort an enclosing transaction).
	Log *oplog.Entry
	// Created is set by ImportConnections: whether Connection was created
	// rather than updated.
	Created bool
}

// The operations of an import's operations log entry (ImportItem.Log).
const (
	OpImportCreate = "import_create"
	OpImportUpdate = "import_update"
)
