package connections

import (
	"encoding/json"
	"time"

	"github.com/embedauth/connect/internal/httpapi"
	"github.com/embedauth/connect/internal/jsonvalue"
)

// fullAnswer is the answer of GET /connections/{id}: APIFull(c,
// withCredentials, withRefreshToken), written by AppendJSON byte for byte
// as json.Marshal writes that, without building it or reflecting on it.
type fullAnswer struct {
	c                                 *Connection
	withCredentials, withRefreshToken bool
}

// AppendJSON implements httpapi.JSONAppender.
func (a fullAnswer) AppendJSON(dst []byte) ([]byte, error) {
	c := a.c
	var err error
	dst = append(dst, `{"id":`...)
	dst = jsonInt(dst, c.ID)
	dst = append(dst, `,"connection_id":`...)
	dst = jsonvalue.AppendString(dst, c.ConnectionID)
	dst = append(dst, `,"provider_config_key":`...)
	dst = jsonvalue.AppendString(dst, c.IntegrationKey)
	dst = append(dst, `,"provider":`...)
	dst = jsonvalue.AppendString(dst, c.Provider)
	dst = append(dst, `,"connection_config":`...)
	if c.ConnectionConfig == nil {
		dst = append(dst, "{}"...)
	} else if dst, err = jsonvalue.Append(dst, c.ConnectionConfig); err != nil {
		return dst, err
	}
	dst = append(dst, `,"webhook_url_override":`...)
	if c.WebhookURLOverride == "" {
		dst = append(dst, "null"...)
	} else {
		dst = jsonvalue.AppendString(dst, c.WebhookURLOverride)
	}
	dst = append(dst, `,"created_at":`...)
	dst = appendTime(dst, c.CreatedAt)
	dst = append(dst, `,"updated_at":`...)
	dst = appendTime(dst, c.UpdatedAt)
	dst = append(dst, `,"last_fetched_at":`...)
	if c.LastFetchedAt == nil {
		dst = append(dst, "null"...)
	} else {
		dst = appendTime(dst, *c.LastFetchedAt)
	}
	dst = append(dst, `,"metadata":`...)
	if dst, err = jsonvalue.Append(dst, c.Metadata); err != nil {
		return dst, err
	}
	dst = append(dst, `,"errors":`...)
	dst = appendErrors(dst, nonNilErrors(c.Errors))
	dst = append(dst, `,"end_user":`...)
	dst = appendEndUser(dst, c.Tags)
	dst = append(dst, `,"tags":`...)
	if c.Tags == nil {
		dst = append(dst, "{}"...)
	} else {
		dst = jsonvalue.AppendStringMap(dst, c.Tags)
	}
	dst = append(dst, `,"auth":{"mode":`...)
	dst = jsonvalue.AppendString(dst, c.AuthMode)
	for _, f := range []struct {
		name string
		t    *time.Time
	}{{`,"expires_at":`, c.CredentialsExpiresAt}, {`,"last_refresh_failure":`, c.LastRefreshFailure}} {
		dst = append(dst, f.name...)
		if f.t == nil {
			dst = append(dst, "null"...)
		} else {
			dst = appendTime(dst, *f.t)
		}
	}
	dst = append(dst, `,"refresh_attempts":`...)
	dst = jsonInt(dst, int64(c.RefreshAttempts))
	dst = append(dst, '}')
	if a.withCredentials && c.Credentials != nil {
		dst = append(dst, `,"credentials":`...)
		if dst, err = APICredentials(c.Credentials, a.withRefreshToken).appendJSON(dst); err != nil {
			return dst, err
		}
	}
	return append(dst, '}'), nil
}

// appendTime appends t as the string httpapi.Time returns, which needs no
// escaping.
func appendTime(dst []byte, t time.Time) []byte {
	dst = append(dst, '"')
	dst = t.UTC().AppendFormat(dst, httpapi.TimeFormat)
	return append(dst, '"')
}

// appendEndUser appends what apiEndUser(tags) is as JSON.
func appendEndUser(dst []byte, tags map[string]string) []byte {
	id := tags[TagEndUserID]
	if id == "" {
		return append(dst, "null"...)
	}
	optional := func(dst []byte, k string) []byte {
		if v := tags[k]; v != "" {
			return jsonvalue.AppendString(dst, v)
		}
		return append(dst, "null"...)
	}
	dst = append(dst, `{"id":`...)
	dst = jsonvalue.AppendString(dst, id)
	dst = append(dst, `,"display_name":`...)
	dst = optional(dst, TagEndUserDisplayName)
	dst = append(dst, `,"email":`...)
	dst = optional(dst, TagEndUserEmail)
	dst = append(dst, `,"tags":{},"organization":`...)
	if org := tags[TagOrganizationID]; org != "" {
		dst = append(dst, `{"id":`...)
		dst = jsonvalue.AppendString(dst, org)
		dst = append(dst, `,"display_name":`...)
		dst = optional(dst, TagOrganizationDisplayName)
		dst = append(dst, '}')
	} else {
		dst = append(dst, "null"...)
	}
	return append(dst, '}')
}

func jsonInt(dst []byte, n int64) []byte {
	b, _ := jsonvalue.Append(dst, n)
	return b
}

func appendErrors(dst []byte, errs []Error) []byte {
	if errs == nil {
		return append(dst, "null"...)
	}
	dst = append(dst, '[')
	for i, e := range errs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"type":`...)
		dst = jsonvalue.AppendString(dst, e.Type)
		dst = append(dst, `,"log_id":`...)
		dst = jsonvalue.AppendString(dst, e.LogID)
		dst = append(dst, '}')
	}
	return append(dst, ']')
}

// appendJSON appends b as its MarshalJSON writes it. The fields of the
// common types are written here; credentials with further fields, AWS
// SigV4's, a configuration override or CUSTOM's two tokens go through
// MarshalJSON.
func (b *APICredentialsBody) appendJSON(dst []byte) ([]byte, error) {
	if len(b.Fields) > 0 || b.APIAWSSigV4 != nil || b.ConfigOverride != nil || b.App != nil || b.User != nil {
		out, err := b.MarshalJSON()
		if err != nil {
			return dst, err
		}
		return append(dst, out...), nil
	}
	dst = append(dst, '{')
	sep := func() {
		if dst[len(dst)-1] != '{' {
			dst = append(dst, ',')
		}
	}
	str := func(name, v string) {
		if v != "" {
			sep()
			dst = append(dst, name...)
			dst = jsonvalue.AppendString(dst, v)
		}
	}
	ptr := func(name string, v *string) {
		if v != nil {
			sep()
			dst = append(dst, name...)
			dst = jsonvalue.AppendString(dst, *v)
		}
	}
	str(`"type":`, b.Type)
	ptr(`"access_token":`, b.AccessToken)
	str(`"refresh_token":`, b.RefreshToken)
	ptr(`"oauth_token":`, b.OAuthToken)
	ptr(`"oauth_token_secret":`, b.OAuthTokenSecret)
	ptr(`"token":`, b.Token)
	ptr(`"client_id":`, b.ClientID)
	ptr(`"client_secret":`, b.ClientSecret)
	ptr(`"apiKey":`, b.APIKey)
	ptr(`"username":`, b.Username)
	ptr(`"password":`, b.Password)
	ptr(`"token_id":`, b.TokenID)
	ptr(`"token_secret":`, b.TokenSecret)
	str(`"expires_at":`, b.ExpiresAt)
	str(`"jwtToken":`, b.JWTToken)
	if b.Raw != nil {
		sep()
		dst = append(dst, `"raw":`...)
		var err error
		if dst, err = jsonvalue.Append(dst, *b.Raw); err != nil {
			return dst, err
		}
	}
	return append(dst, '}'), nil
}

var _ json.Marshaler = APICredentialsBody{}
