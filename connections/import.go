package connections

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/internal/httpapi"
	"github.com/embedauth/connect/oplog"
	"github.com/embedauth/connect/store"
)

// ImportInput imports credentials that already exist, in the body shape of
// POST /connections and the deprecated POST /connection. Either the flat
// credential fields or a nested Credentials object may be given.
type ImportInput struct {
	ProviderConfigKey string `json:"provider_config_key"`
	ConnectionID      string `json:"connection_id"`

	// OAuth 2.
	AccessToken               string         `json:"access_token"`
	RefreshToken              string         `json:"refresh_token"`
	ExpiresAt                 *DateTime      `json:"expires_at"`
	ExpiresIn                 *int64         `json:"expires_in"`
	NoExpiration              bool           `json:"no_expiration"`
	OAuthClientIDOverride     string         `json:"oauth_client_id_override"`
	OAuthClientSecretOverride string         `json:"oauth_client_secret_override"`
	Raw                       map[string]any `json:"raw"`

	// OAuth 1.
	OAuthToken       string `json:"oauth_token"`
	OAuthTokenSecret string `json:"oauth_token_secret"`

	// Basic.
	Username *string `json:"username"`
	Password *string `json:"password"`

	// API key.
	APIKey string `json:"api_key"`

	// Credentials is the nested form: {type, access_token, apiKey, ...}.
	Credentials *Credentials `json:"credentials"`

	Metadata         map[string]any    `json:"metadata"`
	ConnectionConfig map[string]any    `json:"connection_config"`
	Tags             map[string]string `json:"tags"`
	// EndUser and Organization are deprecated; they become tags.
	EndUser      *EndUser      `json:"end_user"`
	Organization *Organization `json:"organization"`
}

// DateTime is a timestamp in a request body: an RFC 3339 date-time or a
// date (YYYY-MM-DD, meaning midnight UTC).
type DateTime struct{ time.Time }

// UnmarshalJSON parses a JSON string.
func (d *DateTime) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return &httpapi.FieldErr{Path: []string{"expires_at"}, Message: "must be a date-time string"}
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			d.Time = t.UTC()
			return nil
		}
	}
	return &httpapi.FieldErr{Path: []string{"expires_at"}, Message: "must be an ISO 8601 date-time such as 2030-01-02T15:04:05Z"}
}

// Import creates a connection from existing credentials, or updates the
// existing connection with the same id. It reports whether it created one.
func (s *Service) Import(ctx context.Context, environmentID int64, in ImportInput) (*Connection, bool, error) {
	if in.ProviderConfigKey == "" {
		return nil, false, httpapi.InvalidField("is required", "provider_config_key")
	}
	if in.ConnectionID == "" {
		in.ConnectionID = newConnectionID()
	}
	if !ValidConnectionID(in.ConnectionID) {
		return nil, false, httpapi.InvalidField(fmt.Sprintf("must be 1 to %d characters without control characters", MaxConnectionIDLen), "connection_id")
	}
	it, err := s.integrations.GetIntegration(ctx, environmentID, in.ProviderConfigKey)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, false, store.NotFound("unknown_provider_config", "The integration %q was not found.", in.ProviderConfigKey)
		}
		return nil, false, err
	}
	mode := ""
	if p, ok := s.catalog.Get(it.Provider); ok {
		mode = p.AuthMode
		// A value that would change more than its part of the provider's
		// URLs is refused now rather than when the URLs are built (which
		// refuses it too).
		if err := checkConfigURLs(p, stringMap(in.ConnectionConfig), "connection_config"); err != nil {
			return nil, false, err
		}
	}
	creds, err := importCredentials(mode, &in, s.now())
	if err != nil {
		return nil, false, err
	}
	tags, err := NormalizeTags(in.Tags)
	if err != nil {
		return nil, false, err
	}
	if in.EndUser != nil || in.Organization != nil {
		eu, err := EndUserTags(in.EndUser, in.Organization)
		if err != nil {
			return nil, false, err
		}
		if tags == nil {
			tags = map[string]string{}
		}
		for k, v := range eu {
			tags[k] = v
		}
		if len(tags) > MaxTags {
			return nil, false, httpapi.InvalidField(fmt.Sprintf("must have at most %d keys", MaxTags), "tags")
		}
	}
	var out *Connection
	created := false
	err = s.store.WithTx(ctx, func(ctx context.Context) error {
		now := s.nowUTC()
		c := &Connection{
			EnvironmentID:    environmentID,
			IntegrationKey:   it.UniqueKey,
			ConnectionID:     in.ConnectionID,
			Provider:         it.Provider,
			ConnectionConfig: in.ConnectionConfig,
			Metadata:         in.Metadata,
			Tags:             tags,
			Credentials:      creds,
			Errors:           []Error{},
			CreatedAt:        now,
			UpdatedAt:        now,
		}
		if c.ConnectionConfig == nil {
			c.ConnectionConfig = map[string]any{}
		}
		if err := s.seal(c); err != nil {
			return err
		}
		err := s.store.CreateConnection(ctx, c)
		switch {
		case err == nil:
			created = true
			out = c
		case errors.Is(err, store.ErrConflict):
			out, err = s.mutate(ctx, environmentID, it.UniqueKey, in.ConnectionID, func(c *Connection) error {
				c.Credentials = creds
				c.Errors = []Error{}
				if in.ConnectionConfig != nil {
					c.ConnectionConfig = in.ConnectionConfig
				}
				if in.Metadata != nil {
					c.Metadata = in.Metadata
				}
				if tags != nil {
					c.Tags = tags
				}
				return nil
			})
			if err != nil {
				return err
			}
		default:
			return err
		}
		op := "import_update"
		if created {
			op = "import_create"
		}
		_, err = s.log.Record(ctx, &oplog.Entry{EnvironmentID: environmentID, Type: "connection", Operation: op,
			IntegrationKey: it.UniqueKey, ConnectionID: in.ConnectionID, Message: "connection imported",
			Meta: map[string]any{"auth_mode": creds.Type}})
		return err
	})
	if err != nil {
		return nil, false, err
	}
	return out, created, nil
}

// importCredentials builds credentials of the provider's auth mode from an
// import body, applying the 400 rules.
func importCredentials(mode string, in *ImportInput, now time.Time) (*Credentials, error) {
	if in.Credentials != nil {
		c := *in.Credentials
		// When the token was obtained is not the caller's to say: unknown
		// (see Credentials.ObtainedAt).
		c.ObtainedAt = nil
		if c.Type == "" {
			c.Type = mode
		}
		if mode != "" && c.Type != mode && !(mode == integrations.AuthModeOAuth2CC && c.Type == integrations.AuthModeOAuth2) {
			return nil, httpapi.InvalidField(fmt.Sprintf("type %s does not match the provider's auth mode %s", c.Type, mode), "credentials", "type")
		}
		return checkCredentials(&c)
	}
	switch mode {
	case integrations.AuthModeOAuth2, integrations.AuthModeApp, "CUSTOM", "MCP_OAUTH2":
		if in.AccessToken == "" {
			return nil, httpapi.InvalidField("is required for OAuth 2 connections", "access_token")
		}
		c := &Credentials{Type: integrations.AuthModeOAuth2, AccessToken: in.AccessToken, RefreshToken: in.RefreshToken}
		if mode == integrations.AuthModeApp {
			c.Type = integrations.AuthModeApp
		}
		switch {
		case in.ExpiresAt != nil:
			t := in.ExpiresAt.Time.Truncate(time.Millisecond)
			c.ExpiresAt = &t
		case in.ExpiresIn != nil:
			if *in.ExpiresIn < 0 || *in.ExpiresIn > 100*365*24*3600 {
				return nil, httpapi.InvalidField("must be a positive number of seconds", "expires_in")
			}
			t := now.UTC().Add(time.Duration(*in.ExpiresIn) * time.Second).Truncate(time.Millisecond)
			c.ExpiresAt = &t
			// expires_in counts from now: the token's lifetime is known.
			obtained := now.UTC().Truncate(time.Millisecond)
			c.ObtainedAt = &obtained
		case !in.NoExpiration:
			return nil, httpapi.InvalidField("expires_at or expires_in is required unless no_expiration is true", "expires_at")
		}
		raw := map[string]any{"access_token": in.AccessToken}
		if in.RefreshToken != "" {
			raw["refresh_token"] = in.RefreshToken
		}
		if c.ExpiresAt != nil {
			raw["expires_at"] = c.ExpiresAt.Format(time.RFC3339Nano)
		}
		for k, v := range in.Raw {
			raw[k] = v
		}
		c.Raw = raw
		if in.OAuthClientIDOverride != "" || in.OAuthClientSecretOverride != "" {
			c.ConfigOverride = &ConfigOverride{ClientID: in.OAuthClientIDOverride, ClientSecret: in.OAuthClientSecretOverride}
		}
		return checkCredentials(c)
	case integrations.AuthModeOAuth2CC:
		c := &Credentials{Type: integrations.AuthModeOAuth2CC, Token: in.AccessToken, ClientID: in.OAuthClientIDOverride, ClientSecret: in.OAuthClientSecretOverride}
		if in.ExpiresAt != nil {
			t := in.ExpiresAt.Time.Truncate(time.Millisecond)
			c.ExpiresAt = &t
		} else if in.ExpiresIn != nil && *in.ExpiresIn >= 0 {
			t := now.UTC().Add(time.Duration(*in.ExpiresIn) * time.Second).Truncate(time.Millisecond)
			c.ExpiresAt = &t
			obtained := now.UTC().Truncate(time.Millisecond)
			c.ObtainedAt = &obtained
		}
		c.Raw = in.Raw
		return checkCredentials(c)
	case integrations.AuthModeOAuth1:
		return checkCredentials(&Credentials{Type: integrations.AuthModeOAuth1, OAuthToken: in.OAuthToken, OAuthTokenSecret: in.OAuthTokenSecret, Raw: in.Raw})
	case integrations.AuthModeBasic:
		c := &Credentials{Type: integrations.AuthModeBasic}
		if in.Username == nil {
			return nil, httpapi.InvalidField("is required for Basic connections", "username")
		}
		if in.Password == nil {
			return nil, httpapi.InvalidField("is required for Basic connections", "password")
		}
		c.Username, c.Password = *in.Username, *in.Password
		return checkCredentials(c)
	case integrations.AuthModeAPIKey:
		return checkCredentials(&Credentials{Type: integrations.AuthModeAPIKey, APIKey: in.APIKey})
	case integrations.AuthModeNone, "":
		return &Credentials{Type: integrations.AuthModeNone}, nil
	case integrations.AuthModeTBA:
		return nil, httpapi.InvalidField("TBA connections are imported with a nested credentials object {type, token_id, token_secret}", "credentials")
	default:
		return nil, store.Invalid("invalid_auth_mode", fmt.Sprintf("Connections of auth mode %s cannot be imported.", mode))
	}
}

// checkCredentials applies the required-field rules of each type.
func checkCredentials(c *Credentials) (*Credentials, error) {
	req := func(v, field string) error {
		if strings.TrimSpace(v) == "" {
			return store.Invalid("invalid_credentials", fmt.Sprintf("%s is required for %s connections.", field, c.Type),
				store.FieldError{Code: "required", Message: "is required", Path: []string{field}})
		}
		if len(v) > 64<<10 {
			return store.Invalid("invalid_credentials", fmt.Sprintf("%s is too long.", field),
				store.FieldError{Code: "too_long", Message: "is at most 64 KiB", Path: []string{field}})
		}
		return nil
	}
	var err error
	switch c.Type {
	case integrations.AuthModeOAuth2, integrations.AuthModeApp:
		err = req(c.AccessToken, "access_token")
	case integrations.AuthModeOAuth1:
		if err = req(c.OAuthToken, "oauth_token"); err == nil {
			err = req(c.OAuthTokenSecret, "oauth_token_secret")
		}
	case integrations.AuthModeOAuth2CC:
		if err = req(c.ClientID, "client_id"); err == nil {
			err = req(c.ClientSecret, "client_secret")
		}
	case integrations.AuthModeAPIKey:
		err = req(c.APIKey, "api_key")
	case integrations.AuthModeBasic:
		err = req(c.Username, "username")
	case integrations.AuthModeTBA:
		if err = req(c.TokenID, "token_id"); err == nil {
			err = req(c.TokenSecret, "token_secret")
		}
	case integrations.AuthModeNone:
	default:
		err = store.Invalid("invalid_credentials", fmt.Sprintf("Unknown credentials type %q.", c.Type))
	}
	if err != nil {
		return nil, err
	}
	if c.ExpiresAt != nil {
		t := c.ExpiresAt.UTC()
		c.ExpiresAt = &t
	}
	return c, nil
}

func parseURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return "", errors.New("bad url")
	}
	return u.String(), nil
}

// StringList is a JSON string or array of strings.
type StringList []string

// UnmarshalJSON accepts "a" and ["a","b"].
func (l *StringList) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*l = StringList{s}
		return nil
	}
	var list []string
	if err := json.Unmarshal(b, &list); err != nil {
		return &httpapi.FieldErr{Path: []string{"connection_id"}, Message: "must be a string or an array of strings"}
	}
	*l = list
	return nil
}
