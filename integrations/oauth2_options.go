package integrations

import (
	"slices"
)

// The values of AuthDetails.AuthorizationMethod and of the entries of
// AuthDetails.AuthorizationURLSkipEncode, and AuthDetails.ExpiresInUnit's.
// The OAuth 2 options of Nango's providers.yaml (authorization_method,
// authorization_url_replacements, authorization_url_skip_encode,
// authorization_url_skip_empty, authorization_url_fragment,
// authorization_code_param_in_callback,
// alternate_access_token_response_path, expires_in_unit) are read into
// AuthDetails; the connections package applies them.
const (
	AuthorizationMethodHeader = "header"
	AuthorizationMethodBody   = "body"
	SkipEncodeScopes          = "scopes"
	SkipEncodeBaseURL         = "base_url"
	ExpiresInMilliseconds     = "milliseconds"
)

// ClientAuthInHeader reports whether token requests send the client
// credentials in an HTTP Basic header: token_request_auth_method "basic" or
// authorization_method "header".
func (p *Provider) ClientAuthInHeader() bool {
	return p.TokenRequestAuthMethod == TokenAuthBasic || p.AuthorizationMethod == AuthorizationMethodHeader
}

// SkipsEncoding reports whether part (SkipEncodeScopes...) of the
// authorization URL is written without form encoding.
func (p *Provider) SkipsEncoding(part string) bool {
	return slices.Contains(p.AuthorizationURLSkipEncode, part)
}

// checkOAuth2Options adds the problems of the OAuth 2 options to v.
func (v *validator) checkOAuth2Options() {
	o := &v.p.AuthDetails
	switch o.AuthorizationMethod {
	case "", AuthorizationMethodHeader, AuthorizationMethodBody:
	default:
		v.addf("authorization_method", "want %q or %q, not %q", AuthorizationMethodHeader, AuthorizationMethodBody, o.AuthorizationMethod)
	}
	switch o.ExpiresInUnit {
	case "", ExpiresInMilliseconds:
	default:
		v.addf("expires_in_unit", "want %q or nothing, not %q", ExpiresInMilliseconds, o.ExpiresInUnit)
	}
	for k := range o.AuthorizationURLReplacements {
		if k == "" {
			v.addf("authorization_url_replacements", "empty key")
		}
	}
}
