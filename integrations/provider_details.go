package integrations

import (
	"fmt"
	"github.com/embedauth/connect/internal/jsonvalue"
	"maps"
	"reflect"
	"slices"
	"strings"
)

// AuthDetails are the fields of a [Provider] that only some auth modes or
// some providers use: the token requests of TWO_STEP, JWT, SIGNATURE and
// BILL, client assertions, MCP client registration, quirks of the OAuth
// authorization URL and token response, webhook settings, and the names of
// the scripts Nango runs for some providers. Every key of Nango's
// providers.yaml has a field here or on Provider, with the same name; the
// README's table of provider-file keys says which ones connect acts on.
// Zero fields are unset. Templates are as on Provider.
type AuthDetails struct {
	// TokenURLs are token URLs per auth mode, read from a token_url that
	// is a mapping (CUSTOM needs "OAUTH2" and "APP"). TokenURL holds the
	// one of the provider's own mode, else the OAUTH2 one.
	TokenURLs map[string]string `yaml:"token_urls,omitempty" json:"token_urls,omitempty"`

	// TokenResponse says where a TWO_STEP (or BILL) token response holds
	// the token, its lifetime and a refresh token.
	TokenResponse *TokenResponse `yaml:"token_response,omitempty" json:"token_response,omitempty"`

	// TokenParamsTree is token_params as written when some value is not
	// text: a mapping or list (Sage Intacct's XML body, Tableau's JSON
	// body), a number or a boolean. String leaves are templates. TWO_STEP
	// token requests build their body from it; TokenParams keeps each
	// value as text (a nested one as JSON).
	TokenParamsTree ParamTree `yaml:"token_params_tree,omitempty" json:"token_params_tree,omitempty"`

	// TokenHeaders (values are templates) are headers of the token
	// request.
	TokenHeaders map[string]string `yaml:"token_headers,omitempty" json:"token_headers,omitempty"`

	// BodyFormat is how token request parameters are sent: "form" (the
	// default), "json", "xml" or "query" (in the URL).
	BodyFormat string `yaml:"body_format,omitempty" json:"body_format,omitempty"`

	// TokenRequestMethod is the token request's HTTP method when it is not
	// POST ("GET").
	TokenRequestMethod string `yaml:"token_request_method,omitempty" json:"token_request_method,omitempty"`

	// TokenExpiresInMs is the lifetime of a token whose response does not
	// give one, in milliseconds.
	TokenExpiresInMs int64 `yaml:"token_expires_in_ms,omitempty" json:"token_expires_in_ms,omitempty"`

	// ExpiresInUnit is the unit of expires_in in OAuth token responses when
	// it is not seconds: "milliseconds".
	ExpiresInUnit string `yaml:"expires_in_unit,omitempty" json:"expires_in_unit,omitempty"`

	// RefreshTokenParams (values are templates, with ${refresh_token}) are
	// the parameters of a TWO_STEP refresh request, which then replaces
	// the token request.
	RefreshTokenParams map[string]string `yaml:"refresh_token_params,omitempty" json:"refresh_token_params,omitempty"`

	// RefreshTokenHeaders (values are templates) are the headers of that
	// refresh request.
	RefreshTokenHeaders map[string]string `yaml:"refresh_token_headers,omitempty" json:"refresh_token_headers,omitempty"`

	// RefreshTokenResponseMetadata lists fields of refresh responses copied
	// into connection_config, as TokenResponseMetadata does for the first
	// token response.
	RefreshTokenResponseMetadata []string `yaml:"refresh_token_response_metadata,omitempty" json:"refresh_token_response_metadata,omitempty"`

	// TokenResponseHeaders lists headers of the token response kept with
	// the credentials ("set-cookie" is kept as ${credentials._cookies}).
	TokenResponseHeaders []string `yaml:"token_response_headers,omitempty" json:"token_response_headers,omitempty"`

	// AdditionalSteps are requests made after the first token request of
	// a TWO_STEP provider, each able to use the previous answers as
	// ${stepN.path}; the last one yields the token.
	AdditionalSteps []TokenStep `yaml:"additional_steps,omitempty" json:"additional_steps,omitempty"`

	// Signature is the protocol of a token the service signs itself: RSA,
	// HMAC or EC for JWT (and TWO_STEP JWT-bearer grants), WSSE for
	// SIGNATURE.
	Signature *Signature `yaml:"signature,omitempty" json:"signature,omitempty"`

	// Token describes that token: its signing key, lifetime, and JWT
	// header and claims.
	Token *SignedToken `yaml:"token,omitempty" json:"token,omitempty"`

	// Assertion describes a JWT client assertion sent in the token request
	// (private_key_jwt, JWT-bearer grants), available there as
	// ${credentials.assertion}.
	Assertion *Assertion `yaml:"assertion,omitempty" json:"assertion,omitempty"`

	// AssertionOption is the schema of the inputs the assertion needs
	// (such as its private key), supplied with the integration.
	AssertionOption map[string]FieldSpec `yaml:"assertion_option,omitempty" json:"assertion_option,omitempty"`

	// Auth holds settings of the OAuth client library of old entries, such
	// as response_type=code; the authorization request sends
	// response_type=code anyway.
	Auth map[string]string `yaml:"auth,omitempty" json:"auth,omitempty"`

	// AuthorizationMethod is where OAuth 2 token requests carry the client
	// credentials in Nango's older spelling: "header" (HTTP Basic) or
	// "body"; see TokenRequestAuthMethod.
	AuthorizationMethod string `yaml:"authorization_method,omitempty" json:"authorization_method,omitempty"`

	// AuthType is how an INSTALL_PLUGIN provider's requests are authorized
	// once installed, as an auth mode ("BASIC").
	AuthType string `yaml:"auth_type,omitempty" json:"auth_type,omitempty"`

	// ClientRegistration is how an MCP_OAUTH2 client is registered:
	// "static" (an OAuth app configured on the integration) or "dynamic"
	// (registered at RegistrationURL, RFC 7591).
	ClientRegistration string `yaml:"client_registration,omitempty" json:"client_registration,omitempty"`

	// RegistrationURL is the dynamic client registration endpoint.
	RegistrationURL string `yaml:"registration_url,omitempty" json:"registration_url,omitempty"`

	// RegistrationParams are extra fields of the registration request (a
	// JSON object).
	RegistrationParams map[string]any `yaml:"registration_params,omitempty" json:"registration_params,omitempty"`

	// AuthorizationURLReplacements are text replacements applied to the
	// built authorization URL, for providers that want other parameter
	// names (redirect_uri= becomes redirect_url=); an empty value removes
	// the parameter.
	AuthorizationURLReplacements map[string]string `yaml:"authorization_url_replacements,omitempty" json:"authorization_url_replacements,omitempty"`

	// AuthorizationURLFragment is a path placed after "#" in the
	// authorization URL, with the query after it, for single-page apps.
	AuthorizationURLFragment string `yaml:"authorization_url_fragment,omitempty" json:"authorization_url_fragment,omitempty"`

	// AuthorizationURLSkipEncode lists parts of the authorization URL left
	// unencoded ("scopes", "base_url").
	AuthorizationURLSkipEncode []string `yaml:"authorization_url_skip_encode,omitempty" json:"authorization_url_skip_encode,omitempty"`

	// AuthorizationURLSkipEmpty leaves parameters with empty values out of
	// the authorization URL.
	AuthorizationURLSkipEmpty bool `yaml:"authorization_url_skip_empty,omitempty" json:"authorization_url_skip_empty,omitempty"`

	// AuthorizationCodeParamInCallback is the callback's query parameter
	// that holds the authorization code when it is not "code".
	AuthorizationCodeParamInCallback string `yaml:"authorization_code_param_in_callback,omitempty" json:"authorization_code_param_in_callback,omitempty"`

	// AuthorizationCodeParamInWebhook is the path, in the body of an
	// installation webhook, of the authorization code of an outbound
	// installation.
	AuthorizationCodeParamInWebhook string `yaml:"authorization_code_param_in_webhook,omitempty" json:"authorization_code_param_in_webhook,omitempty"`

	// AlternateAccessTokenResponsePath is where the token response holds
	// the access token when it is not at the top level (Slack's
	// "authed_user" user token).
	AlternateAccessTokenResponsePath string `yaml:"alternate_access_token_response_path,omitempty" json:"alternate_access_token_response_path,omitempty"`

	// RequireClientCertificate means token and API requests authenticate
	// with a TLS client certificate supplied with the credentials.
	RequireClientCertificate bool `yaml:"require_client_certificate,omitempty" json:"require_client_certificate,omitempty"`

	// DecodeURL means the authorization URL's parameters are sent decoded.
	DecodeURL bool `yaml:"decode_url,omitempty" json:"decode_url,omitempty"`

	// RequestParams (values are templates) are extra parameters of the
	// OAuth 1 request-token request.
	RequestParams map[string]string `yaml:"request_params,omitempty" json:"request_params,omitempty"`

	// Installation is "outbound" for apps installed from the provider's
	// side: the flow starts there, so no authorization URL is needed, and
	// the code arrives by webhook (AuthorizationCodeParamInWebhook).
	Installation string `yaml:"installation,omitempty" json:"installation,omitempty"`

	// IntegrationConfig is the schema of inputs the integration (not the
	// end user) supplies, such as a client ID and private key for an
	// assertion. Templates read them as ${credentials.NAME}.
	IntegrationConfig map[string]FieldSpec `yaml:"integration_config,omitempty" json:"integration_config,omitempty"`

	// ConnectionConfiguration lists connection_config keys the provider's
	// post-connection step fills (Nango's older spelling).
	ConnectionConfiguration []string `yaml:"connection_configuration,omitempty" json:"connection_configuration,omitempty"`

	// WebhookUserDefinedSecret means the integration holds a webhook
	// secret chosen by the user, used to verify incoming webhooks.
	WebhookUserDefinedSecret bool `yaml:"webhook_user_defined_secret,omitempty" json:"webhook_user_defined_secret,omitempty"`

	// WebhookAllowedQueryParams lists query parameters of incoming
	// webhooks kept when they are forwarded.
	WebhookAllowedQueryParams []string `yaml:"webhook_allowed_query_params,omitempty" json:"webhook_allowed_query_params,omitempty"`

	// WebhookResponseMetadata lists paths of an installation webhook's
	// body copied into connection_config.
	WebhookResponseMetadata []string `yaml:"webhook_response_metadata,omitempty" json:"webhook_response_metadata,omitempty"`

	// SetupGuideURL is the URL of a guide to registering an OAuth app with
	// the provider, for the integration's owner.
	SetupGuideURL string `yaml:"setup_guide_url,omitempty" json:"setup_guide_url,omitempty"`

	// PostConnectionScript names a script Nango runs after a connection
	// is made. The script lives inside Nango; connect keeps the name only.
	PostConnectionScript string `yaml:"post_connection_script,omitempty" json:"post_connection_script,omitempty"`

	// WebhookRoutingScript names Nango's script that matches an incoming
	// webhook to connections; connect routes by WebhookRouting instead.
	WebhookRoutingScript string `yaml:"webhook_routing_script,omitempty" json:"webhook_routing_script,omitempty"`

	// CredentialsVerificationScript names Nango's script that checks new
	// credentials; connect uses Proxy.Verification instead.
	CredentialsVerificationScript string `yaml:"credentials_verification_script,omitempty" json:"credentials_verification_script,omitempty"`

	// PreConnectionDeletionScript names a script Nango runs before a
	// connection is deleted. The script lives inside Nango.
	PreConnectionDeletionScript string `yaml:"pre_connection_deletion_script,omitempty" json:"pre_connection_deletion_script,omitempty"`
}

// TokenResponse locates values in a token response: dot paths into its
// JSON body.
type TokenResponse struct {
	// Token is the path of the token; "" means the whole body is the
	// token.
	Token string `yaml:"token" json:"token"`
	// TokenExpiration is the path of its lifetime or expiry.
	TokenExpiration string `yaml:"token_expiration,omitempty" json:"token_expiration,omitempty"`
	// TokenExpirationStrategy says what TokenExpiration holds: "expireIn"
	// (seconds from now) or "expireAt" (a date).
	TokenExpirationStrategy string `yaml:"token_expiration_strategy,omitempty" json:"token_expiration_strategy,omitempty"`
	// RefreshToken is the path of a refresh token.
	RefreshToken string `yaml:"refresh_token,omitempty" json:"refresh_token,omitempty"`
}

// TokenStep is one additional request of a TWO_STEP token exchange.
type TokenStep struct {
	// TokenURL (template) is the request's URL.
	TokenURL string `yaml:"token_url" json:"token_url"`
	// TokenRequestMethod is "GET" when it is not POST.
	TokenRequestMethod string `yaml:"token_request_method,omitempty" json:"token_request_method,omitempty"`
	// BodyFormat is "form" (the default) or "json".
	BodyFormat string `yaml:"body_format,omitempty" json:"body_format,omitempty"`
	// TokenParams (values are templates) are the request's parameters.
	TokenParams map[string]string `yaml:"token_params,omitempty" json:"token_params,omitempty"`
	// TokenHeaders (values are templates) are the request's headers.
	TokenHeaders map[string]string `yaml:"token_headers,omitempty" json:"token_headers,omitempty"`
}

// Signature names the protocol of a token the service signs.
type Signature struct {
	// Protocol is "RSA", "HMAC" or "EC" (a JWT), or "WSSE".
	Protocol string `yaml:"protocol" json:"protocol"`
	// HMACSecretEncoding is how an HMAC key is read from the credentials:
	// "utf8" (the text as is) or, by default, hex.
	HMACSecretEncoding string `yaml:"hmac_secret_encoding,omitempty" json:"hmac_secret_encoding,omitempty"`
}

// SignedToken describes a token the service signs itself.
type SignedToken struct {
	// SigningKey (template) is the key, such as ${credentials.privateKey}.
	SigningKey string `yaml:"signing_key,omitempty" json:"signing_key,omitempty"`
	// ExpiresInMs is the token's lifetime in milliseconds.
	ExpiresInMs int64 `yaml:"expires_in_ms,omitempty" json:"expires_in_ms,omitempty"`
	// Header is the JWT header (values are templates).
	Header map[string]any `yaml:"header,omitempty" json:"header,omitempty"`
	// Payload is the JWT claims (string values are templates).
	Payload map[string]any `yaml:"payload,omitempty" json:"payload,omitempty"`
}

// Assertion describes a client assertion: a JWT, or a SAML 2.0 bearer
// assertion (the SAML fields).
type Assertion struct {
	// Type is "jwt" or "saml".
	Type string `yaml:"type,omitempty" json:"type,omitempty"`
	// Key (template) is the signing key.
	Key string `yaml:"key,omitempty" json:"key,omitempty"`
	// LifetimeInSeconds is the assertion's lifetime.
	LifetimeInSeconds int64 `yaml:"lifetimeInSeconds,omitempty" json:"lifetimeInSeconds,omitempty"`
	// SingleUse means a new assertion is signed for every token request.
	SingleUse bool `yaml:"singleUse,omitempty" json:"singleUse,omitempty"`
	// Header is the JWT header (values are templates).
	Header map[string]any `yaml:"header,omitempty" json:"header,omitempty"`
	// Payload is the JWT claims (string values are templates).
	Payload map[string]any `yaml:"payload,omitempty" json:"payload,omitempty"`

	// Issuer (template) is a SAML assertion's Issuer.
	Issuer string `yaml:"issuer,omitempty" json:"issuer,omitempty"`
	// Audiences (template) are its audiences, separated by commas.
	Audiences string `yaml:"audiences,omitempty" json:"audiences,omitempty"`
	// Recipient (template) is its SubjectConfirmationData Recipient.
	Recipient string `yaml:"recipient,omitempty" json:"recipient,omitempty"`
	// InResponseTo (template) is its SubjectConfirmationData InResponseTo.
	InResponseTo string `yaml:"inResponseTo,omitempty" json:"inResponseTo,omitempty"`
	// SessionIndex (template) is its AuthnStatement SessionIndex.
	SessionIndex string `yaml:"sessionIndex,omitempty" json:"sessionIndex,omitempty"`
	// NameIdentifier (template) is its subject's NameID.
	NameIdentifier string `yaml:"nameIdentifier,omitempty" json:"nameIdentifier,omitempty"`
	// NameIdentifierFormat is the NameID Format (unspecified by default).
	NameIdentifierFormat string `yaml:"nameIdentifierFormat,omitempty" json:"nameIdentifierFormat,omitempty"`
	// AuthnContextClassRef is the AuthnContextClassRef (unspecified by
	// default).
	AuthnContextClassRef string `yaml:"authnContextClassRef,omitempty" json:"authnContextClassRef,omitempty"`
	// Attributes are its attributes (string values are templates).
	Attributes map[string]any `yaml:"attributes,omitempty" json:"attributes,omitempty"`
}

// loadProblem is a problem found while reading an entry.
type loadProblem struct{ field, problem string }

func (p *Provider) addLoadProblem(field, problem string) {
	if field == "" {
		field = "entry"
	}
	p.loadProblems = append(p.loadProblems, loadProblem{field, problem})
}

// clone returns a deep copy of d.
func (d *AuthDetails) clone() AuthDetails {
	c := *d
	c.TokenURLs = maps.Clone(d.TokenURLs)
	if d.TokenResponse != nil {
		r := *d.TokenResponse
		c.TokenResponse = &r
	}
	c.TokenParamsTree = d.TokenParamsTree.Clone()
	c.TokenHeaders = maps.Clone(d.TokenHeaders)
	c.RefreshTokenParams = maps.Clone(d.RefreshTokenParams)
	c.RefreshTokenHeaders = maps.Clone(d.RefreshTokenHeaders)
	c.RefreshTokenResponseMetadata = slices.Clone(d.RefreshTokenResponseMetadata)
	c.TokenResponseHeaders = slices.Clone(d.TokenResponseHeaders)
	if d.AdditionalSteps != nil {
		c.AdditionalSteps = make([]TokenStep, len(d.AdditionalSteps))
		for i, s := range d.AdditionalSteps {
			s.TokenParams = maps.Clone(s.TokenParams)
			s.TokenHeaders = maps.Clone(s.TokenHeaders)
			c.AdditionalSteps[i] = s
		}
	}
	if d.Signature != nil {
		s := *d.Signature
		c.Signature = &s
	}
	if d.Token != nil {
		t := *d.Token
		t.Header, t.Payload = jsonvalue.CloneMap(t.Header), jsonvalue.CloneMap(t.Payload)
		c.Token = &t
	}
	if d.Assertion != nil {
		a := *d.Assertion
		a.Header, a.Payload = jsonvalue.CloneMap(a.Header), jsonvalue.CloneMap(a.Payload)
		a.Attributes = jsonvalue.CloneMap(a.Attributes)
		c.Assertion = &a
	}
	c.AssertionOption = maps.Clone(d.AssertionOption)
	c.Auth = maps.Clone(d.Auth)
	c.RegistrationParams = jsonvalue.CloneMap(d.RegistrationParams)
	c.AuthorizationURLReplacements = maps.Clone(d.AuthorizationURLReplacements)
	c.AuthorizationURLSkipEncode = slices.Clone(d.AuthorizationURLSkipEncode)
	c.RequestParams = maps.Clone(d.RequestParams)
	c.IntegrationConfig = cloneFields(d.IntegrationConfig)
	c.ConnectionConfiguration = slices.Clone(d.ConnectionConfiguration)
	c.WebhookAllowedQueryParams = slices.Clone(d.WebhookAllowedQueryParams)
	c.WebhookResponseMetadata = slices.Clone(d.WebhookResponseMetadata)
	return c
}

// cloneFields deep-copies a field schema.
func cloneFields(fs map[string]FieldSpec) map[string]FieldSpec {
	if fs == nil {
		return nil
	}
	out := make(map[string]FieldSpec, len(fs))
	for k, f := range fs {
		f.Enum = slices.Clone(f.Enum)
		f.Warnings = maps.Clone(f.Warnings)
		out[k] = f
	}
	return out
}

// inheritDetails sets every field of over that is set on base's copy p, as
// inherit does for the other fields: a shallow merge.
func inheritDetails(p, over *AuthDetails) {
	dst, src := reflect.ValueOf(p).Elem(), reflect.ValueOf(over).Elem()
	for i := range src.NumField() {
		if f := src.Field(i); !f.IsZero() {
			dst.Field(i).Set(f)
		}
	}
}

// checkDetails checks what each auth mode needs beyond the URLs check
// validates, and the enumerated values of AuthDetails.
func (v *validator) checkDetails() {
	p := v.p
	d := &p.AuthDetails
	need := func(field string, ok bool) {
		if !ok {
			v.addf(field, "required for auth mode %s", p.AuthMode)
		}
	}
	switch p.AuthMode {
	case AuthModeTwoStep:
		need("token_url", strings.TrimSpace(p.TokenURL) != "")
		need("token_response.token", d.TokenResponse != nil)
	case AuthModeBill:
		need("token_url", strings.TrimSpace(p.TokenURL) != "")
	case AuthModeJWT:
		need("signature.protocol", d.Signature != nil && d.Signature.Protocol != "")
		need("token.signing_key", d.Token != nil && d.Token.SigningKey != "")
	case AuthModeSignature:
		need("signature.protocol", d.Signature != nil && d.Signature.Protocol != "")
	case AuthModeMCPOAuth2:
		need("authorization_url", strings.TrimSpace(p.AuthorizationURL) != "")
		need("token_url", strings.TrimSpace(p.TokenURL) != "")
		if d.ClientRegistration == "dynamic" {
			if strings.TrimSpace(d.RegistrationURL) == "" {
				v.addf("registration_url", "required for client_registration dynamic")
			}
		}
	case AuthModeMCPOAuth2Generic:
		if _, ok := p.ConnectionConfig["mcp_server_url"]; !ok {
			v.addf("connection_config.mcp_server_url", "required for auth mode %s", p.AuthMode)
		}
	case AuthModeAWSSigV4:
		need("proxy.base_url", p.Proxy != nil && p.Proxy.BaseURL != "")
	case AuthModeCustom:
		need("authorization_url", strings.TrimSpace(p.AuthorizationURL) != "")
		need("token_url.OAUTH2", d.TokenURLs[AuthModeOAuth2] != "")
		need("token_url.APP", d.TokenURLs[AuthModeApp] != "")
	case AuthModeInstallPlugin:
		switch d.AuthType {
		case "", AuthModeBasic, AuthModeAPIKey, AuthModeNone:
		default:
			v.addf("auth_type", "unknown value %q (want BASIC, API_KEY or NONE)", d.AuthType)
		}
	}

	enum := func(field, value string, allowed ...string) {
		if value != "" && !slices.Contains(allowed, value) {
			v.addf(field, "unknown value %q (want %s)", value, strings.Join(allowed, ", "))
		}
	}
	enum("body_format", d.BodyFormat, "form", "json", "xml", "query")
	enum("token_request_method", d.TokenRequestMethod, "GET", "POST", "PUT")
	enum("expires_in_unit", d.ExpiresInUnit, "seconds", "milliseconds")
	enum("authorization_method", d.AuthorizationMethod, "header", "body")
	enum("client_registration", d.ClientRegistration, "static", "dynamic")
	enum("installation", d.Installation, "outbound")
	if r := d.TokenResponse; r != nil {
		enum("token_response.token_expiration_strategy", r.TokenExpirationStrategy, "expireIn", "expireAt")
	}
	if s := d.Signature; s != nil {
		enum("signature.protocol", s.Protocol, "RSA", "HMAC", "EC", "WSSE")
		enum("signature.hmac_secret_encoding", s.HMACSecretEncoding, "utf8", "hex", "base64")
	}
	if d.TokenExpiresInMs < 0 {
		v.addf("token_expires_in_ms", "must not be negative")
	}
	if d.Token != nil && d.Token.ExpiresInMs < 0 {
		v.addf("token.expires_in_ms", "must not be negative")
	}
	if d.Assertion != nil && d.Assertion.LifetimeInSeconds < 0 {
		v.addf("assertion.lifetimeInSeconds", "must not be negative")
	}
	for i, s := range d.AdditionalSteps {
		field := fmt.Sprintf("additional_steps[%d]", i)
		if strings.TrimSpace(s.TokenURL) == "" {
			v.addf(field+".token_url", "missing")
		}
		enum(field+".body_format", s.BodyFormat, "form", "json", "xml", "query")
		enum(field+".token_request_method", s.TokenRequestMethod, "GET", "POST", "PUT")
	}
	if d.RegistrationURL != "" {
		v.checkURL("registration_url", d.RegistrationURL)
	}
	if d.SetupGuideURL != "" {
		v.checkURL("setup_guide_url", d.SetupGuideURL)
	}
	v.checkFields("integration_config", d.IntegrationConfig)
	v.checkFields("assertion_option", d.AssertionOption)
}

// declaresCredential reports whether ${credentials.key} is filled by the
// auth mode's own machinery rather than by the end user: the raw token
// response (raw.PATH) of the modes that obtain a token, kept response
// headers (_cookies), a signed assertion, and the
// integration's own inputs (integration_config, assertion_option).
func (d *AuthDetails) declaresCredential(mode, key string) bool {
	if _, ok := d.IntegrationConfig[key]; ok {
		return true
	}
	if _, ok := d.AssertionOption[key]; ok {
		return true
	}
	switch {
	case key == "assertion":
		return d.Assertion != nil
	case key == "_cookies":
		return len(d.TokenResponseHeaders) > 0
	case mode == AuthModeSignature && (key == "username" || key == "password"):
		return true
	case mode == AuthModeBill:
		return slices.Contains([]string{"username", "password", "organization_id", "dev_key", "session_id", "user_id"}, key)
	case strings.HasPrefix(key, "raw."): // the raw token response
		return mode != AuthModeAPIKey && mode != AuthModeBasic && mode != AuthModeNone
	case key == "token" || key == "refresh_token": // the token the mode obtains
		switch mode {
		case AuthModeTwoStep, AuthModeJWT, AuthModeSignature, AuthModeBill, AuthModeOAuth2CC:
			return true
		}
	}
	return false
}
