package integrations

import (
	"maps"
	"slices"
)

// OAuth2Options are the OAuth 2 details of a provider that Nango's
// providers.yaml describes beyond the endpoints: how the authorization URL
// is written, where the code comes back, how the client authenticates at
// the token endpoint and how its answer is read. They are embedded in
// Provider, so their keys sit at the top level of an entry.
type OAuth2Options struct {
	// AuthorizationMethod is "header" to send the client credentials of
	// token requests in an HTTP Basic header (as TokenRequestAuthMethod
	// "basic" does) or "body" (the default) to send them in the form.
	AuthorizationMethod string `yaml:"authorization_method,omitempty" json:"authorization_method,omitempty"`

	// AlternateAccessTokenResponsePath is a dot path into the token
	// response used when it has no top-level access_token: Slack answers a
	// user-token-only installation with the token under "authed_user".
	// When the value there is an object, its access_token, refresh_token
	// and expires_in are read; when it is a string, it is the token.
	AlternateAccessTokenResponsePath string `yaml:"alternate_access_token_response_path,omitempty" json:"alternate_access_token_response_path,omitempty"`

	// AuthorizationURLReplacements rewrite the query of the authorization
	// URL once it is built: each key, where it first occurs in the query,
	// is replaced by its value (keys in sorted order), for providers that
	// name the standard parameters otherwise ("client_id=" as
	// "clientId=") or want one left out (a key replaced by "").
	AuthorizationURLReplacements map[string]string `yaml:"authorization_url_replacements,omitempty" json:"authorization_url_replacements,omitempty"`

	// AuthorizationURLFragment puts the query of the authorization URL
	// after a fragment: https://host/path#FRAGMENT?query, for providers
	// whose consent page is a single-page application route.
	AuthorizationURLFragment string `yaml:"authorization_url_fragment,omitempty" json:"authorization_url_fragment,omitempty"`

	// AuthorizationCodeParamInCallback is the query parameter of the
	// callback that carries the authorization code, when it is not "code"
	// (Amazon's Selling Partner API sends spapi_oauth_code).
	AuthorizationCodeParamInCallback string `yaml:"authorization_code_param_in_callback,omitempty" json:"authorization_code_param_in_callback,omitempty"`

	// AuthorizationURLSkipEncode lists parts of the authorization URL
	// written without form encoding: "scopes" (the scope parameter keeps
	// its ':', '/' and ',' characters; only what a URL query cannot hold is
	// escaped) and "base_url" (a URL given as a template value is used as
	// it is).
	AuthorizationURLSkipEncode []string `yaml:"authorization_url_skip_encode,omitempty" json:"authorization_url_skip_encode,omitempty"`

	// AuthorizationURLSkipEmpty leaves the parameters with empty values
	// out of the authorization URL.
	AuthorizationURLSkipEmpty bool `yaml:"authorization_url_skip_empty,omitempty" json:"authorization_url_skip_empty,omitempty"`

	// RequireClientCertificate means the provider's token endpoint and API
	// require mutual TLS with the client certificate and private key (PEM)
	// of the connection's credentials (client_certificate,
	// client_private_key).
	RequireClientCertificate bool `yaml:"require_client_certificate,omitempty" json:"require_client_certificate,omitempty"`

	// ExpiresInUnit is "milliseconds" when the token response's expires_in
	// counts milliseconds instead of seconds.
	ExpiresInUnit string `yaml:"expires_in_unit,omitempty" json:"expires_in_unit,omitempty"`
}

// The values of OAuth2Options.AuthorizationMethod and of the entries of
// AuthorizationURLSkipEncode, and OAuth2Options.ExpiresInUnit's.
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

func (o OAuth2Options) clone() OAuth2Options {
	o.AuthorizationURLReplacements = maps.Clone(o.AuthorizationURLReplacements)
	o.AuthorizationURLSkipEncode = slices.Clone(o.AuthorizationURLSkipEncode)
	return o
}

// inherit returns o with every option over sets replacing o's.
func (o OAuth2Options) inherit(over OAuth2Options) OAuth2Options {
	set := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	set(&o.AuthorizationMethod, over.AuthorizationMethod)
	set(&o.AlternateAccessTokenResponsePath, over.AlternateAccessTokenResponsePath)
	set(&o.AuthorizationURLFragment, over.AuthorizationURLFragment)
	set(&o.AuthorizationCodeParamInCallback, over.AuthorizationCodeParamInCallback)
	set(&o.ExpiresInUnit, over.ExpiresInUnit)
	if over.AuthorizationURLReplacements != nil {
		o.AuthorizationURLReplacements = over.AuthorizationURLReplacements
	}
	if over.AuthorizationURLSkipEncode != nil {
		o.AuthorizationURLSkipEncode = over.AuthorizationURLSkipEncode
	}
	o.AuthorizationURLSkipEmpty = o.AuthorizationURLSkipEmpty || over.AuthorizationURLSkipEmpty
	o.RequireClientCertificate = o.RequireClientCertificate || over.RequireClientCertificate
	return o
}

// check adds the problems of the options to v.
func (o *OAuth2Options) check(v *validator) {
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

// nangoOAuth2Options reads OAuth2Options from a Nango entry, leniently.
type nangoOAuth2Options struct {
	AuthorizationMethod              nText `yaml:"authorization_method"`
	AlternateAccessTokenResponsePath nText `yaml:"alternate_access_token_response_path"`
	AuthorizationURLReplacements     nMap  `yaml:"authorization_url_replacements"`
	AuthorizationURLFragment         nText `yaml:"authorization_url_fragment"`
	AuthorizationCodeParamInCallback nText `yaml:"authorization_code_param_in_callback"`
	AuthorizationURLSkipEncode       nList `yaml:"authorization_url_skip_encode"`
	AuthorizationURLSkipEmpty        nBool `yaml:"authorization_url_skip_empty"`
	RequireClientCertificate         nBool `yaml:"require_client_certificate"`
	ExpiresInUnit                    nText `yaml:"expires_in_unit"`
}

func (n nangoOAuth2Options) options() OAuth2Options {
	return OAuth2Options{
		AuthorizationMethod:              string(n.AuthorizationMethod),
		AlternateAccessTokenResponsePath: string(n.AlternateAccessTokenResponsePath),
		AuthorizationURLReplacements:     n.AuthorizationURLReplacements,
		AuthorizationURLFragment:         string(n.AuthorizationURLFragment),
		AuthorizationCodeParamInCallback: string(n.AuthorizationCodeParamInCallback),
		AuthorizationURLSkipEncode:       n.AuthorizationURLSkipEncode,
		AuthorizationURLSkipEmpty:        bool(n.AuthorizationURLSkipEmpty),
		RequireClientCertificate:         bool(n.RequireClientCertificate),
		ExpiresInUnit:                    string(n.ExpiresInUnit),
	}
}
