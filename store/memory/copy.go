package memory

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/internal/jsonvalue"
	"github.com/embedauth/connect/oplog"
	"github.com/embedauth/connect/store"
)

// normalizeJSON returns a copy of m as it would come back from a jsonb
// column: nil stays nil, numbers become float64, and values JSON cannot
// encode are rejected.
func normalizeJSON(field string, m map[string]any) (map[string]any, error) {
	if m == nil {
		return nil, nil
	}
	// Checked before the round trip, which would turn invalid UTF-8 into
	// U+FFFD.
	if err := checkText(m); err != nil {
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", store.ErrInvalid, field, err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", store.ErrInvalid, field, err)
	}
	return out, nil
}

func copyTime(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	c := *t
	return &c
}

func copyEnvironment(e *environments.Environment) *environments.Environment {
	c := *e
	c.WebhookURLs = slices.Clone(e.WebhookURLs)
	return &c
}

func copyAPIKey(k *environments.APIKey) *environments.APIKey {
	c := *k
	c.Hash = slices.Clone(k.Hash)
	c.Scopes = slices.Clone(k.Scopes)
	return &c
}

// copyIntegration copies in without its plaintext fields, which a Store does
// not persist.
func copyIntegration(in *integrations.Integration) *integrations.Integration {
	c := *in
	c.IntegrationConfig = maps.Clone(in.IntegrationConfig)
	c.Credentials = nil
	c.Custom = nil
	return &c
}

// copyConnection deep-copies a stored connection.
func copyConnection(conn *connections.Connection) *connections.Connection {
	c := *conn
	c.ConnectionConfig = jsonvalue.CloneMap(conn.ConnectionConfig)
	c.Metadata = jsonvalue.CloneMap(conn.Metadata)
	c.Tags = maps.Clone(conn.Tags)
	c.Credentials = nil
	c.CredentialsExpiresAt = copyTime(conn.CredentialsExpiresAt)
	c.Errors = slices.Clone(conn.Errors)
	c.LastFetchedAt = copyTime(conn.LastFetchedAt)
	c.LastRefreshFailure = copyTime(conn.LastRefreshFailure)
	return &c
}

// storableConnection copies a caller's connection into the form the store
// keeps: JSON values normalized, plaintext credentials dropped.
func storableConnection(conn *connections.Connection) (*connections.Connection, error) {
	cfg, err := normalizeJSON("connection_config", conn.ConnectionConfig)
	if err != nil {
		return nil, err
	}
	md, err := normalizeJSON("metadata", conn.Metadata)
	if err != nil {
		return nil, err
	}
	c := *conn
	c.ConnectionConfig = cfg
	c.Metadata = md
	c.Tags = maps.Clone(conn.Tags)
	c.Credentials = nil
	c.CredentialsExpiresAt = copyTime(conn.CredentialsExpiresAt)
	c.Errors = slices.Clone(conn.Errors)
	c.LastFetchedAt = copyTime(conn.LastFetchedAt)
	c.LastRefreshFailure = copyTime(conn.LastRefreshFailure)
	return &c, nil
}

func copyEntry(e *oplog.Entry) *oplog.Entry {
	c := *e
	c.Meta = jsonvalue.CloneMap(e.Meta)
	return &c
}
