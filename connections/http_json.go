package connections

import (
	"encoding/json"

	"github.com/embedauth/connect/internal/jsonvalue"
)

// AppendJSON appends c as json.Marshal writes it, byte for byte, without
// reflection: GET /connections/{id} answers it on every read of a
// connection's credentials.
func (c APIConnectionFull) AppendJSON(dst []byte) ([]byte, error) {
	var err error
	dst = append(dst, `{"id":`...)
	dst = jsonInt(dst, c.ID)
	dst = append(dst, `,"connection_id":`...)
	dst = jsonvalue.AppendString(dst, c.ConnectionID)
	dst = append(dst, `,"provider_config_key":`...)
	dst = jsonvalue.AppendString(dst, c.ProviderConfigKey)
	dst = append(dst, `,"provider":`...)
	dst = jsonvalue.AppendString(dst, c.Provider)
	dst = append(dst, `,"connection_config":`...)
	if dst, err = jsonvalue.Append(dst, c.ConnectionConfig); err != nil {
		return dst, err
	}
	dst = append(dst, `,"webhook_url_override":`...)
	dst = appendStringPtr(dst, c.WebhookURLOverride)
	dst = append(dst, `,"created_at":`...)
	dst = jsonvalue.AppendString(dst, c.CreatedAt)
	dst = append(dst, `,"updated_at":`...)
	dst = jsonvalue.AppendString(dst, c.UpdatedAt)
	dst = append(dst, `,"last_fetched_at":`...)
	dst = appendStringPtr(dst, c.LastFetchedAt)
	dst = append(dst, `,"metadata":`...)
	if dst, err = jsonvalue.Append(dst, c.Metadata); err != nil {
		return dst, err
	}
	dst = append(dst, `,"errors":`...)
	dst = appendErrors(dst, c.Errors)
	dst = append(dst, `,"end_user":`...)
	dst = c.EndUser.appendJSON(dst)
	dst = append(dst, `,"tags":`...)
	dst = jsonvalue.AppendStringMap(dst, c.Tags)
	if c.Credentials != nil {
		dst = append(dst, `,"credentials":`...)
		if dst, err = c.Credentials.appendJSON(dst); err != nil {
			return dst, err
		}
	}
	return append(dst, '}'), nil
}

func jsonInt(dst []byte, n int64) []byte {
	b, _ := jsonvalue.Append(dst, n)
	return b
}

func appendStringPtr(dst []byte, s *string) []byte {
	if s == nil {
		return append(dst, "null"...)
	}
	return jsonvalue.AppendString(dst, *s)
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

func (u *APIEndUser) appendJSON(dst []byte) []byte {
	if u == nil {
		return append(dst, "null"...)
	}
	dst = append(dst, `{"id":`...)
	dst = jsonvalue.AppendString(dst, u.ID)
	dst = append(dst, `,"display_name":`...)
	dst = appendStringPtr(dst, u.DisplayName)
	dst = append(dst, `,"email":`...)
	dst = appendStringPtr(dst, u.Email)
	dst = append(dst, `,"tags":`...)
	dst = jsonvalue.AppendStringMap(dst, u.Tags)
	dst = append(dst, `,"organization":`...)
	if u.Organization == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, `{"id":`...)
		dst = jsonvalue.AppendString(dst, u.Organization.ID)
		dst = append(dst, `,"display_name":`...)
		dst = appendStringPtr(dst, u.Organization.DisplayName)
		dst = append(dst, '}')
	}
	return append(dst, '}')
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
