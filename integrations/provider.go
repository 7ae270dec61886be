package integrations

import (
	"errors"
	"fmt"
	"github.com/embedauth/connect/internal/jsonvalue"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// The auth modes a provider may declare: the values of Provider.AuthMode,
// spelled as in Nango's providers.yaml so that data and wire forms stay
// interchangeable: every mode of Nango's file has a constant. Each mode
// needs some fields, which [Provider.Validate] checks.
const (
	// AuthModeOAuth2 is the OAuth 2 authorization-code grant, with refresh.
	AuthModeOAuth2 = "OAUTH2"
	// AuthModeOAuth1 is three-legged OAuth 1.0a.
	AuthModeOAuth1 = "OAUTH1"
	// AuthModeOAuth2CC is the OAuth 2 client-credentials grant, with the
	// client ID and secret stored per connection.
	AuthModeOAuth2CC = "OAUTH2_CC"
	// AuthModeAPIKey is a static key injected by the proxy's header or query
	// templates.
	AuthModeAPIKey = "API_KEY"
	// AuthModeBasic is HTTP Basic authentication with a username and a
	// password.
	AuthModeBasic = "BASIC"
	// AuthModeApp is an app installation (a GitHub App): the integration's
	// private key mints short-lived installation tokens.
	AuthModeApp = "APP"
	// AuthModeNone means unauthenticated; used for webhook-only providers.
	AuthModeNone = "NONE"
	// AuthModeTBA is NetSuite token-based authentication.
	AuthModeTBA = "TBA"
	// AuthModeJWT is a JWT minted locally and sent as a bearer token.
	AuthModeJWT = "JWT"
	// AuthModeTwoStep exchanges user-supplied credentials for a token: a
	// request to TokenURL (after any AdditionalSteps) whose answer holds
	// the token at TokenResponse.Token.
	AuthModeTwoStep = "TWO_STEP"
	// AuthModeMCPOAuth2 is OAuth 2 against an MCP server, with the client
	// registered statically or dynamically (ClientRegistration,
	// RegistrationURL).
	AuthModeMCPOAuth2 = "MCP_OAUTH2"
	// AuthModeMCPOAuth2Generic is OAuth 2 against any MCP server, whose
	// endpoints are discovered from the connection's mcp_server_url.
	AuthModeMCPOAuth2Generic = "MCP_OAUTH2_GENERIC"
	// AuthModeAWSSigV4 signs each proxied request with AWS Signature
	// Version 4, with credentials from an assumed IAM role.
	AuthModeAWSSigV4 = "AWS_SIGV4"
	// AuthModeBill is Bill.com's session login: credentials are posted to
	// TokenURL for a session ID.
	AuthModeBill = "BILL"
	// AuthModeSignature computes a signed header per request (Signature
	// protocol WSSE) from a username and password.
	AuthModeSignature = "SIGNATURE"
	// AuthModeInstallPlugin is a plugin installed from the provider's
	// marketplace; AuthType says how its requests are then authorized.
	AuthModeInstallPlugin = "INSTALL_PLUGIN"
	// AuthModeCustom combines an OAuth 2 user authorization with an app
	// installation (GitHub App OAuth): TokenURLs holds both token URLs.
	AuthModeCustom = "CUSTOM"
)

// KnownAuthMode reports whether mode is one of the AuthMode constants.
// Providers with another mode load but do not validate: a lenient
// catalogue lists them as unusable.
func KnownAuthMode(mode string) bool {
	switch mode {
	case AuthModeOAuth2, AuthModeOAuth1, AuthModeOAuth2CC, AuthModeAPIKey, AuthModeBasic,
		AuthModeApp, AuthModeNone, AuthModeTBA, AuthModeJWT, AuthModeTwoStep,
		AuthModeMCPOAuth2, AuthModeMCPOAuth2Generic, AuthModeAWSSigV4, AuthModeBill,
		AuthModeSignature, AuthModeInstallPlugin, AuthModeCustom:
		return true
	}
	return false
}

// Token request authentication methods, the values of
// Provider.TokenRequestAuthMethod.
const (
	// TokenAuthBody sends client_id and client_secret in the form body.
	TokenAuthBody = "body"
	// TokenAuthBasic sends them in an HTTP Basic Authorization header.
	TokenAuthBasic = "basic"
)

// Provider describes one external API: how to authorize against it, how to
// call it through the proxy, and what an end user must supply to connect.
// It is pure data: the same struct is read from YAML (our format, see
// [Load]) and written as JSON.
//
// Strings marked "template" may contain placeholders that [Interpolate]
// resolves per connection: ${connectionConfig.KEY}, ${credentials.KEY},
// ${apiKey}, ${accessToken}, ${clientId} and ${clientSecret}. A template may
// list alternatives separated by "||": the first alternative whose
// placeholders all have values is used.
//
// A Provider obtained from a [Catalog] is shared and must be treated as
// read-only; use [Provider.Clone] for a copy to modify.
type Provider struct {
	// Name is the provider's key, unique in a catalogue: lowercase words
	// joined by dashes, such as "github" or "google-calendar". It is the
	// "provider" of an integration. Required; letters, digits, '.', '_' and
	// '-' only.
	Name string `yaml:"name" json:"name"`

	// DisplayName is the human-readable name, such as "GitHub". Required.
	DisplayName string `yaml:"display_name" json:"display_name"`

	// Alias names another provider this one inherits from: every field of
	// the aliased provider is copied, then the fields set here replace them.
	// The replacement is shallow (a Proxy set here replaces the whole Proxy).
	// After loading, Alias is kept for information and the inherited fields
	// are filled in.
	Alias string `yaml:"alias,omitempty" json:"alias,omitempty"`

	// AuthMode is how calls are authorized: one of the AuthMode constants,
	// such as "OAUTH2" or "API_KEY". Required; see KnownAuthMode.
	AuthMode string `yaml:"auth_mode" json:"auth_mode"`

	// Categories tag the provider for search and display, such as "crm" or
	// "dev-tools".
	Categories []string `yaml:"categories,omitempty" json:"categories,omitempty"`

	// Docs is the URL of the provider's API documentation.
	Docs string `yaml:"docs,omitempty" json:"docs,omitempty"`

	// DocsConnect is the URL of a page that tells an end user how to connect
	// (where to find an API key, which permissions to grant).
	DocsConnect string `yaml:"docs_connect,omitempty" json:"docs_connect,omitempty"`

	// Logo is the URL of the provider's logo: absolute, or a path relative
	// to the serving host. When empty, a Catalog fills in
	// "/providers/NAME/logo.svg" (see [Provider.LogoURL]); this package
	// ships no image files, so a host that wants logos serves them at that
	// path or sets Logo.
	Logo string `yaml:"logo,omitempty" json:"logo,omitempty"`

	// AuthorizationURL (template) is where the end user grants access: the
	// OAuth 2 authorization endpoint, the OAuth 1 user authorization page, or
	// the app installation page for APP. Required for OAUTH2 (except the
	// client-credentials grant), OAUTH1 and APP.
	AuthorizationURL string `yaml:"authorization_url,omitempty" json:"authorization_url,omitempty"`

	// TokenURL (template) is the token endpoint: the OAuth 2 code exchange
	// and client-credentials endpoint, the OAuth 1 access-token endpoint, or
	// the APP installation-token endpoint. Required for OAUTH2, OAUTH2_CC,
	// OAUTH1 and APP.
	TokenURL string `yaml:"token_url,omitempty" json:"token_url,omitempty"`

	// RefreshURL (template) is the endpoint for refresh_token grants when it
	// differs from TokenURL.
	RefreshURL string `yaml:"refresh_url,omitempty" json:"refresh_url,omitempty"`

	// RequestURL (template) is the OAuth 1 temporary-credentials (request
	// token) endpoint. Required for OAUTH1.
	RequestURL string `yaml:"request_url,omitempty" json:"request_url,omitempty"`

	// SignatureMethod is the OAuth 1 signature method: HMAC-SHA1 (the
	// default), HMAC-SHA256, RSA-SHA1 or PLAINTEXT.
	SignatureMethod string `yaml:"signature_method,omitempty" json:"signature_method,omitempty"`

	// TokenRequestAuthMethod is where the client credentials go on token
	// requests: "body" (the default) or "basic" (an HTTP Basic header).
	// Nango's "custom" and "private_key_jwt" are accepted as data.
	TokenRequestAuthMethod string `yaml:"token_request_auth_method,omitempty" json:"token_request_auth_method,omitempty"`

	// ScopeSeparator joins scopes in the authorization request. Default " ";
	// some providers (Slack, Linear, Zoom, Strava...) want ",".
	ScopeSeparator string `yaml:"scope_separator,omitempty" json:"scope_separator,omitempty"`

	// DefaultScopes are requested when the integration configures none.
	DefaultScopes []string `yaml:"default_scopes,omitempty" json:"default_scopes,omitempty"`

	// DisablePKCE turns PKCE off. OAUTH2 flows use PKCE (S256) by default;
	// a few providers reject it.
	DisablePKCE bool `yaml:"disable_pkce,omitempty" json:"disable_pkce,omitempty"`

	// AuthorizationParams (values are templates) are extra query parameters
	// of the authorization URL, such as access_type=offline.
	AuthorizationParams map[string]string `yaml:"authorization_params,omitempty" json:"authorization_params,omitempty"`

	// TokenParams (values are templates) are extra form parameters of the
	// token request. grant_type=client_credentials marks an OAUTH2 provider
	// that uses the client-credentials grant.
	TokenParams map[string]string `yaml:"token_params,omitempty" json:"token_params,omitempty"`

	// RefreshParams (values are templates) are extra form parameters of
	// refresh requests.
	RefreshParams map[string]string `yaml:"refresh_params,omitempty" json:"refresh_params,omitempty"`

	// TokenResponseMetadata lists fields of the token response (dot paths
	// such as "team.id") copied into the connection's connection_config
	// under the same key, such as Salesforce's instance_url.
	TokenResponseMetadata []string `yaml:"token_response_metadata,omitempty" json:"token_response_metadata,omitempty"`

	// RedirectURIMetadata lists query parameters of the OAuth callback
	// copied into connection_config, such as QuickBooks' realmId.
	RedirectURIMetadata []string `yaml:"redirect_uri_metadata,omitempty" json:"redirect_uri_metadata,omitempty"`

	// TokenExpirationBuffer is how many seconds before expiry an access
	// token is refreshed. Zero means the service default.
	TokenExpirationBuffer int `yaml:"token_expiration_buffer,omitempty" json:"token_expiration_buffer,omitempty"`

	// Proxy says how the credential-injecting proxy calls the API.
	Proxy *Proxy `yaml:"proxy,omitempty" json:"proxy,omitempty"`

	// ConnectionConfig is the schema of per-connection, non-secret inputs
	// (a subdomain, a region, an account ID), keyed by the name used in
	// ${connectionConfig.NAME}. Every such placeholder must be declared here
	// or be filled from TokenResponseMetadata or RedirectURIMetadata.
	ConnectionConfig map[string]FieldSpec `yaml:"connection_config,omitempty" json:"connection_config,omitempty"`

	// Credentials is the schema of the secret inputs of non-OAuth modes,
	// keyed by the name used in ${credentials.NAME}. API_KEY providers must
	// declare "apiKey"; BASIC providers may describe "username" and
	// "password".
	Credentials map[string]FieldSpec `yaml:"credentials,omitempty" json:"credentials,omitempty"`

	// WebhookRouting says how the provider's incoming webhooks are verified
	// and matched to a connection. Nil when not described.
	WebhookRouting *WebhookRouting `yaml:"webhook_routing,omitempty" json:"webhook_routing,omitempty"`

	// AuthDetails are the fields of the less common auth modes and of
	// Nango's per-provider quirks; see the type.
	AuthDetails `yaml:",inline"`

	// loadProblems are problems found while reading the provider's entry;
	// Validate reports them.
	loadProblems []loadProblem

	// aliasResolved records that Alias has already been applied, so a
	// catalogue does not apply it a second time.
	aliasResolved bool
}

// Proxy says how the proxy builds requests to the provider's API.
type Proxy struct {
	// BaseURL (template) is prefixed to every proxied path. For example
	// "https://api.${connectionConfig.region}.intercom.io || https://api.intercom.io".
	BaseURL string `yaml:"base_url,omitempty" json:"base_url,omitempty"`

	// Headers (values are templates) are set on every proxied request, such
	// as "Authorization: Bearer ${apiKey}". A header whose template cannot
	// be resolved for a connection is left out.
	Headers map[string]string `yaml:"headers,omitempty" json:"headers,omitempty"`

	// Query (values are templates) are query parameters added to every
	// proxied request, for APIs that take the key in the URL.
	Query map[string]string `yaml:"query,omitempty" json:"query,omitempty"`

	// Retry says which response headers tell when to retry.
	Retry *Retry `yaml:"retry,omitempty" json:"retry,omitempty"`

	// Verification is a cheap authenticated request that checks new
	// credentials.
	Verification *Verification `yaml:"verification,omitempty" json:"verification,omitempty"`

	// Decompress asks the proxy to decompress responses itself.
	Decompress bool `yaml:"decompress,omitempty" json:"decompress,omitempty"`

	// Paginate says how the API's list endpoints page their results, for
	// functions that page through them (Nango's proxy.paginate). A
	// function's own settings are merged over it. Nil when not described.
	Paginate *Paginate `yaml:"paginate,omitempty" json:"paginate,omitempty"`

	// ConnectionConfig (values are templates) are values computed from a
	// connection's own for proxied requests, such as a header built from
	// several keys (Nango's proxy.connection_config).
	ConnectionConfig map[string]string `yaml:"connection_config,omitempty" json:"connection_config,omitempty"`

	// Body (values are templates) are fields added to the JSON body of
	// every proxied request, for APIs that take the key in the body.
	Body map[string]string `yaml:"body,omitempty" json:"body,omitempty"`

	// ForwardHeadersOnRedirect says whether the injected headers follow a
	// redirect to another host. Nil means the proxy's default.
	ForwardHeadersOnRedirect *bool `yaml:"forward_headers_on_redirect,omitempty" json:"forward_headers_on_redirect,omitempty"`
}

// The types of pagination (Paginate.Type).
const (
	// PaginateCursor: each page names the cursor of the next one in its
	// body (CursorPathInResponse), sent back as CursorNameInRequest.
	PaginateCursor = "cursor"
	// PaginateLink: each page links to the next one, in its Link header
	// (LinkRelInResponseHeader) or its body (LinkPathInResponseBody).
	PaginateLink = "link"
	// PaginateOffset: the requests count the records (or pages) already
	// read in OffsetNameInRequest.
	PaginateOffset = "offset"
)

// The ways of counting an offset (Paginate.OffsetCalculationMethod).
const (
	// OffsetByResponseSize adds the number of records of each page (the
	// default).
	OffsetByResponseSize = "by-response-size"
	// OffsetPerPage adds one per page: the offset is a page number.
	OffsetPerPage = "per-page"
)

// Paginate describes the pagination of a provider's API, with the names
// of Nango's providers.yaml. Zero fields are unset. Which fields a type
// needs is checked when a function pages, after its own settings are
// merged over the provider's: cursor needs CursorNameInRequest and
// CursorPathInResponse, link one of LinkRelInResponseHeader and
// LinkPathInResponseBody, offset OffsetNameInRequest, and Limit needs
// LimitNameInRequest.
type Paginate struct {
	// Type is PaginateCursor, PaginateLink or PaginateOffset. It may be
	// left empty in a provider for functions to give it.
	Type string `yaml:"type,omitempty" json:"type,omitempty"`
	// LimitNameInRequest is the parameter that carries Limit, such as
	// "per_page"; a dotted name ("page.size") nests it in a JSON body.
	LimitNameInRequest string `yaml:"limit_name_in_request,omitempty" json:"limit_name_in_request,omitempty"`
	// CursorPathInResponse is the path of the next cursor in the body, such
	// as "response_metadata.next_cursor" (lodash-style: "a.b.0.c").
	CursorPathInResponse string `yaml:"cursor_path_in_response,omitempty" json:"cursor_path_in_response,omitempty"`
	// CursorNameInRequest is the parameter that carries the cursor.
	CursorNameInRequest string `yaml:"cursor_name_in_request,omitempty" json:"cursor_name_in_request,omitempty"`
	// LinkRelInResponseHeader is the relation of the next page's link in
	// the Link header, usually "next".
	LinkRelInResponseHeader string `yaml:"link_rel_in_response_header,omitempty" json:"link_rel_in_response_header,omitempty"`
	// LinkPathInResponseBody is the path of the next page's URL in the
	// body.
	LinkPathInResponseBody string `yaml:"link_path_in_response_body,omitempty" json:"link_path_in_response_body,omitempty"`
	// OffsetNameInRequest is the parameter that carries the offset.
	OffsetNameInRequest string `yaml:"offset_name_in_request,omitempty" json:"offset_name_in_request,omitempty"`
	// OffsetStartValue is the offset of the first page (default 0).
	OffsetStartValue int `yaml:"offset_start_value,omitempty" json:"offset_start_value,omitempty"`
	// OffsetCalculationMethod is OffsetByResponseSize (the default) or
	// OffsetPerPage.
	OffsetCalculationMethod string `yaml:"offset_calculation_method,omitempty" json:"offset_calculation_method,omitempty"`
	// ResponsePath is the path of the page's records in the body, such as
	// "results"; empty when the body is the array of records.
	ResponsePath string `yaml:"response_path,omitempty" json:"response_path,omitempty"`
	// InBody sends the pagination parameters in the JSON body rather than
	// the query. Nil means: in the body for POST, PUT and PATCH.
	InBody *bool `yaml:"in_body,omitempty" json:"in_body,omitempty"`
	// Limit is the page size asked for (0: the API's default). A page with
	// fewer records ends offset pagination.
	Limit int `yaml:"limit,omitempty" json:"limit,omitempty"`
}

// Clone returns a copy of x that shares nothing with it.
func (x *Paginate) Clone() *Paginate {
	if x == nil {
		return nil
	}
	c := *x
	if x.InBody != nil {
		b := *x.InBody
		c.InBody = &b
	}
	return &c
}

// Retry names the rate-limit headers of a provider.
type Retry struct {
	// At lists headers holding the absolute time (Unix seconds or HTTP
	// date) at which to retry, such as x-ratelimit-reset.
	At []string `yaml:"at,omitempty" json:"at,omitempty"`
	// After lists headers holding a delay in seconds, such as retry-after.
	After []string `yaml:"after,omitempty" json:"after,omitempty"`
	// Remaining is a header whose value "0" means the quota is exhausted.
	Remaining string `yaml:"remaining,omitempty" json:"remaining,omitempty"`
	// ErrorCodes lists the statuses worth retrying, such as "429", "5xx"
	// or "500-502". Empty means the proxy's defaults.
	ErrorCodes []string `yaml:"error_code,omitempty" json:"error_code,omitempty"`
	// InBody detects a rate limit from the response body rather than its
	// headers.
	InBody *RetryInBody `yaml:"in_body,omitempty" json:"in_body,omitempty"`
}

// RetryInBody detects a rate limit in a response body: the value at Path
// matches the regular expression Value, whose first group tells when to
// retry, read as Strategy says ("at": a time, "after": a delay).
type RetryInBody struct {
	Path     string `yaml:"path" json:"path"`
	Value    string `yaml:"value" json:"value"`
	Strategy string `yaml:"strategy,omitempty" json:"strategy,omitempty"`
}

// Verification is a request that succeeds only with valid credentials.
type Verification struct {
	// Method is the HTTP method; default GET.
	Method string `yaml:"method,omitempty" json:"method,omitempty"`
	// Endpoints (templates) are paths tried in order, relative to the base
	// URL; the credentials are valid when one answers 2xx.
	Endpoints []string `yaml:"endpoints,omitempty" json:"endpoints,omitempty"`
	// BaseURLOverride (template) replaces Proxy.BaseURL for verification.
	BaseURLOverride string `yaml:"base_url_override,omitempty" json:"base_url_override,omitempty"`
	// Headers (values are templates) are added to the verification request.
	Headers map[string]string `yaml:"headers,omitempty" json:"headers,omitempty"`
	// Data is the JSON body of the verification request.
	Data any `yaml:"data,omitempty" json:"data,omitempty"`
}

// FieldSpec describes one input an end user (or the OAuth flow) supplies:
// an entry of Provider.ConnectionConfig or Provider.Credentials. Connect UIs
// render a form from it.
type FieldSpec struct {
	// Type is "string" (the default), "number" or "boolean".
	Type string `yaml:"type,omitempty" json:"type,omitempty"`
	// Title is the form label.
	Title string `yaml:"title,omitempty" json:"title,omitempty"`
	// Description is help text under the field.
	Description string `yaml:"description,omitempty" json:"description,omitempty"`
	// Example is a sample value, shown as a placeholder.
	Example string `yaml:"example,omitempty" json:"example,omitempty"`
	// Pattern is a regular expression the value must match.
	Pattern string `yaml:"pattern,omitempty" json:"pattern,omitempty"`
	// Format is a well-known format, such as "hostname", "uri" or "uuid".
	Format string `yaml:"format,omitempty" json:"format,omitempty"`
	// Prefix is shown before the input, such as "https://".
	Prefix string `yaml:"prefix,omitempty" json:"prefix,omitempty"`
	// Suffix is shown after the input, such as ".zendesk.com".
	Suffix string `yaml:"suffix,omitempty" json:"suffix,omitempty"`
	// DefaultValue pre-fills the input.
	DefaultValue string `yaml:"default_value,omitempty" json:"default_value,omitempty"`
	// DocSection is an anchor in DocsConnect about this field.
	DocSection string `yaml:"doc_section,omitempty" json:"doc_section,omitempty"`
	// Order sorts fields in a form (ascending; 0 first).
	Order int `yaml:"order,omitempty" json:"order,omitempty"`
	// Optional fields may be left empty.
	Optional bool `yaml:"optional,omitempty" json:"optional,omitempty"`
	// Secret values are masked in forms and never logged.
	Secret bool `yaml:"secret,omitempty" json:"secret,omitempty"`
	// Automated values are filled by the service (from the token response,
	// the callback or a post-connection step), not typed by the end user.
	Automated bool `yaml:"automated,omitempty" json:"automated,omitempty"`
	// Hidden fields are not shown in forms.
	Hidden bool `yaml:"hidden,omitempty" json:"hidden,omitempty"`
	// Enum lists the values the field may take, for a form's select.
	Enum []string `yaml:"enum,omitempty" json:"enum,omitempty"`
	// Warnings are texts shown when a value is chosen, keyed by value.
	Warnings map[string]string `yaml:"warnings,omitempty" json:"warnings,omitempty"`
}

// WebhookRouting describes, as data, how an incoming webhook from the
// provider is authenticated and which connection it concerns. This package
// only carries the description; the webhooks package acts on it.
type WebhookRouting struct {
	// Signature says how deliveries are signed.
	Signature *WebhookSignature `yaml:"signature,omitempty" json:"signature,omitempty"`
	// Connection says which part of a delivery names the connection.
	Connection *WebhookConnection `yaml:"connection,omitempty" json:"connection,omitempty"`
	// Challenge describes a handshake the provider sends when a webhook URL
	// is registered; it is answered, not routed.
	Challenge *WebhookChallenge `yaml:"challenge,omitempty" json:"challenge,omitempty"`
	// Type says which part of a delivery names its type, such as GitHub's
	// X-GitHub-Event header or Linear's "type" field: a sync whose
	// webhook subscriptions hold that value (or "*") runs its webhook
	// handler for each delivery routed to a connection. Without it only
	// "*" subscriptions match.
	Type *WebhookType `yaml:"type,omitempty" json:"type,omitempty"`
}

// WebhookType locates the type of a delivery (the event it reports).
type WebhookType struct {
	// Source is "body" (the default: Path is a dot path into the JSON
	// body; when the body is a JSON array, into each element) or "header"
	// (Path is a header name).
	Source string `yaml:"source,omitempty" json:"source,omitempty"`
	// Path locates the value, such as "type" or "X-GitHub-Event".
	Path string `yaml:"path" json:"path"`
}

// WebhookSignature describes a provider's webhook signature.
type WebhookSignature struct {
	// Header carries the signature, such as "X-Hub-Signature-256".
	Header string `yaml:"header" json:"header"`
	// Algorithm is "HMAC-SHA256" or "HMAC-SHA1".
	Algorithm string `yaml:"algorithm" json:"algorithm"`
	// Encoding of the digest: "hex" or "base64".
	Encoding string `yaml:"encoding" json:"encoding"`
	// Format of the header value: "plain" (the default) is Prefix followed
	// by the digest; "key_value" is comma-separated key=value elements, as
	// in Stripe's "t=...,v1=...".
	Format string `yaml:"format,omitempty" json:"format,omitempty"`
	// Prefix precedes the digest in a plain header, such as "sha256=".
	Prefix string `yaml:"prefix,omitempty" json:"prefix,omitempty"`
	// SignatureKey is the key of the digest elements in a key_value header
	// ("v1"); any one of several may match.
	SignatureKey string `yaml:"signature_key,omitempty" json:"signature_key,omitempty"`
	// TimestampKey is the key of the timestamp element in a key_value
	// header ("t").
	TimestampKey string `yaml:"timestamp_key,omitempty" json:"timestamp_key,omitempty"`
	// TimestampHeader carries the delivery timestamp, such as
	// "X-Slack-Request-Timestamp".
	TimestampHeader string `yaml:"timestamp_header,omitempty" json:"timestamp_header,omitempty"`
	// TimestampUnit is "seconds" (the default) or "milliseconds".
	TimestampUnit string `yaml:"timestamp_unit,omitempty" json:"timestamp_unit,omitempty"`
	// SignedPayload is the layout of the signed bytes, with the
	// placeholders ${body} (the raw body), ${timestamp}, ${method} and ${url}
	// (the full request URL). Default "${body}".
	SignedPayload string `yaml:"signed_payload,omitempty" json:"signed_payload,omitempty"`
	// MaxAge rejects deliveries whose timestamp is older than this many
	// seconds. Zero disables the check.
	MaxAge int `yaml:"max_age,omitempty" json:"max_age,omitempty"`
	// Secret names the integration secret that keys the HMAC:
	// "webhook_secret" (the default) or "client_secret".
	Secret string `yaml:"secret,omitempty" json:"secret,omitempty"`
}

// WebhookConnection says how a delivery names its connection: a value is
// taken from the delivery and compared with a connection_config value.
type WebhookConnection struct {
	// Source is "body" (the default: Path is a dot path into the JSON
	// body; when the body is a JSON array each element is routed on its
	// own) or "header" (Path is a header name).
	Source string `yaml:"source,omitempty" json:"source,omitempty"`
	// Path locates the value, such as "installation.id".
	Path string `yaml:"path" json:"path"`
	// ConnectionConfigKey is the connection_config key whose value must
	// equal the extracted one, such as "installation_id".
	ConnectionConfigKey string `yaml:"connection_config_key" json:"connection_config_key"`
	// TrimSuffix is removed from the extracted value before comparing, such
	// as ".myshopify.com".
	TrimSuffix string `yaml:"trim_suffix,omitempty" json:"trim_suffix,omitempty"`
}

// WebhookChallenge identifies a URL-verification handshake in a JSON body
// and says what to answer.
type WebhookChallenge struct {
	// Path and Value identify the handshake: the body field at Path equals
	// Value, such as type = "url_verification".
	Path  string `yaml:"path" json:"path"`
	Value string `yaml:"value" json:"value"`
	// ResponsePath is the body field whose value is sent back as the
	// response body, such as "challenge".
	ResponsePath string `yaml:"response_path" json:"response_path"`
}

// LogoURL returns Logo, or "/providers/NAME/logo.svg" when Logo is empty.
func (p *Provider) LogoURL() string {
	if p.Logo != "" {
		return p.Logo
	}
	return defaultLogo(p.Name)
}

func defaultLogo(name string) string { return "/providers/" + name + "/logo.svg" }

// UsesClientCredentials reports whether the provider obtains tokens with
// the client-credentials grant: OAUTH2_CC, or OAUTH2 with
// token_params.grant_type client_credentials.
func (p *Provider) UsesClientCredentials() bool {
	return p.AuthMode == AuthModeOAuth2CC ||
		(p.AuthMode == AuthModeOAuth2 && p.TokenParams["grant_type"] == "client_credentials")
}

// Clone returns a deep copy of p.
func (p *Provider) Clone() *Provider {
	if p == nil {
		return nil
	}
	c := *p
	c.Categories = slices.Clone(p.Categories)
	c.DefaultScopes = slices.Clone(p.DefaultScopes)
	c.AuthorizationParams = maps.Clone(p.AuthorizationParams)
	c.TokenParams = maps.Clone(p.TokenParams)
	c.RefreshParams = maps.Clone(p.RefreshParams)
	c.TokenResponseMetadata = slices.Clone(p.TokenResponseMetadata)
	c.RedirectURIMetadata = slices.Clone(p.RedirectURIMetadata)
	c.Proxy = p.Proxy.clone()
	c.ConnectionConfig = cloneFields(p.ConnectionConfig)
	c.Credentials = cloneFields(p.Credentials)
	c.WebhookRouting = p.WebhookRouting.clone()
	c.AuthDetails = p.AuthDetails.clone()
	c.loadProblems = slices.Clone(p.loadProblems)
	return &c
}

func (x *Proxy) clone() *Proxy {
	if x == nil {
		return nil
	}
	c := *x
	c.Headers = maps.Clone(x.Headers)
	c.Query = maps.Clone(x.Query)
	if x.Retry != nil {
		r := *x.Retry
		r.At = slices.Clone(x.Retry.At)
		r.After = slices.Clone(x.Retry.After)
		r.ErrorCodes = slices.Clone(x.Retry.ErrorCodes)
		if x.Retry.InBody != nil {
			b := *x.Retry.InBody
			r.InBody = &b
		}
		c.Retry = &r
	}
	if x.Verification != nil {
		v := *x.Verification
		v.Endpoints = slices.Clone(x.Verification.Endpoints)
		v.Headers = maps.Clone(x.Verification.Headers)
		v.Data = jsonvalue.Clone(x.Verification.Data)
		c.Verification = &v
	}
	c.Paginate = x.Paginate.Clone()
	c.ConnectionConfig = maps.Clone(x.ConnectionConfig)
	c.Body = maps.Clone(x.Body)
	if x.ForwardHeadersOnRedirect != nil {
		b := *x.ForwardHeadersOnRedirect
		c.ForwardHeadersOnRedirect = &b
	}
	return &c
}

func (w *WebhookRouting) clone() *WebhookRouting {
	if w == nil {
		return nil
	}
	c := *w
	if w.Signature != nil {
		s := *w.Signature
		c.Signature = &s
	}
	if w.Connection != nil {
		k := *w.Connection
		c.Connection = &k
	}
	if w.Challenge != nil {
		h := *w.Challenge
		c.Challenge = &h
	}
	if w.Type != nil {
		t := *w.Type
		c.Type = &t
	}
	return &c
}

// inherit returns base with every field that over sets replacing base's.
// Name and Alias always come from over. A false bool or a zero number in
// over cannot replace a true or non-zero value of base.
func inherit(base, over *Provider) *Provider {
	p := base.Clone()
	o := over.Clone()
	p.Name, p.Alias, p.aliasResolved = o.Name, o.Alias, true
	setString := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	setString(&p.DisplayName, o.DisplayName)
	if o.AuthMode != "" {
		p.AuthMode = o.AuthMode
	}
	if o.Categories != nil {
		p.Categories = o.Categories
	}
	setString(&p.Docs, o.Docs)
	setString(&p.DocsConnect, o.DocsConnect)
	if p.Logo == defaultLogo(base.Name) {
		p.Logo = "" // derived from the target's name: derive it again from ours
	}
	setString(&p.Logo, o.Logo)
	setString(&p.AuthorizationURL, o.AuthorizationURL)
	setString(&p.TokenURL, o.TokenURL)
	setString(&p.RefreshURL, o.RefreshURL)
	setString(&p.RequestURL, o.RequestURL)
	setString(&p.SignatureMethod, o.SignatureMethod)
	setString(&p.TokenRequestAuthMethod, o.TokenRequestAuthMethod)
	setString(&p.ScopeSeparator, o.ScopeSeparator)
	if o.DefaultScopes != nil {
		p.DefaultScopes = o.DefaultScopes
	}
	p.DisablePKCE = p.DisablePKCE || o.DisablePKCE
	if o.AuthorizationParams != nil {
		p.AuthorizationParams = o.AuthorizationParams
	}
	if o.TokenParams != nil {
		p.TokenParams = o.TokenParams
	}
	if o.RefreshParams != nil {
		p.RefreshParams = o.RefreshParams
	}
	if o.TokenResponseMetadata != nil {
		p.TokenResponseMetadata = o.TokenResponseMetadata
	}
	if o.RedirectURIMetadata != nil {
		p.RedirectURIMetadata = o.RedirectURIMetadata
	}
	if o.TokenExpirationBuffer != 0 {
		p.TokenExpirationBuffer = o.TokenExpirationBuffer
	}
	if o.Proxy != nil {
		p.Proxy = o.Proxy
	}
	if o.ConnectionConfig != nil {
		p.ConnectionConfig = o.ConnectionConfig
	}
	if o.Credentials != nil {
		p.Credentials = o.Credentials
	}
	if o.WebhookRouting != nil {
		p.WebhookRouting = o.WebhookRouting
	}
	inheritDetails(&p.AuthDetails, &o.AuthDetails)
	p.loadProblems = append(p.loadProblems, o.loadProblems...)
	return p
}

// applyDefaults fills the documented defaults in place.
func (p *Provider) applyDefaults() {
	if p.Logo == "" {
		p.Logo = defaultLogo(p.Name)
	}
	switch p.AuthMode {
	case AuthModeOAuth2, AuthModeOAuth2CC, AuthModeOAuth1:
		if p.ScopeSeparator == "" {
			p.ScopeSeparator = " "
		}
	}
	switch p.AuthMode {
	case AuthModeOAuth2, AuthModeOAuth2CC:
		if p.TokenRequestAuthMethod == "" {
			p.TokenRequestAuthMethod = TokenAuthBody
		}
	case AuthModeOAuth1:
		if p.SignatureMethod == "" {
			p.SignatureMethod = "HMAC-SHA1"
		}
	}
	if p.Proxy != nil && p.Proxy.Verification != nil && p.Proxy.Verification.Method == "" {
		p.Proxy.Verification.Method = "GET"
	}
}

// ValidationError is one problem with a provider's data.
type ValidationError struct {
	// Provider is the provider's name ("" when the name is missing).
	Provider string
	// Field is the offending field as a YAML path, such as
	// "proxy.base_url" or "credentials.apiKey".
	Field string
	// Problem says what is wrong.
	Problem string
}

func (e *ValidationError) Error() string {
	return fmt.Sprintf("integrations: provider %q: %s: %s", e.Provider, e.Field, e.Problem)
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$`)

// Validate checks the provider's data and returns every problem found, each
// a *ValidationError, joined with errors.Join; nil when p is valid.
//
// It checks that Name, DisplayName and a Known AuthMode are set; that the
// URLs an auth mode needs are present (OAUTH2: authorization and token URL,
// or only the token URL for the client-credentials grant; OAUTH2_CC: token
// URL; OAUTH1: request, authorization and token URL; APP: authorization and
// token URL); that URLs are absolute http(s) URLs or start with a
// placeholder; that templates are well formed and use known variables; that
// every ${connectionConfig.X} is declared in ConnectionConfig (or filled
// from TokenResponseMetadata or RedirectURIMetadata); that every
// ${credentials.X} is declared in Credentials; that API_KEY providers
// declare credentials.apiKey; and that enumerated fields hold known values.
// It also checks what each other mode needs (TWO_STEP: token_url and
// token_response; BILL: token_url; JWT: signature.protocol and
// token.signing_key; SIGNATURE: signature.protocol; MCP_OAUTH2:
// authorization and token URL, and registration_url for dynamic client
// registration; MCP_OAUTH2_GENERIC: connection_config.mcp_server_url;
// AWS_SIGV4: proxy.base_url; CUSTOM: authorization_url and token_url for
// OAUTH2 and APP), and reports the problems found while reading the
// provider's entry (see [Load]).
func (p *Provider) Validate() error {
	v := validator{p: p}
	v.check()
	return errors.Join(v.errs...)
}

type validator struct {
	p    *Provider
	errs []error
}

func (v *validator) addf(field, format string, args ...any) {
	v.errs = append(v.errs, &ValidationError{Provider: v.p.Name, Field: field, Problem: fmt.Sprintf(format, args...)})
}

func (v *validator) check() {
	p := v.p
	for _, lp := range p.loadProblems {
		v.addf(lp.field, "%s", lp.problem)
	}
	switch {
	case p.Name == "":
		v.addf("name", "missing")
	case !nameRE.MatchString(p.Name):
		v.addf("name", "must be 1 to 100 letters, digits, '.', '_' or '-', starting with a letter or digit")
	}
	if strings.TrimSpace(p.DisplayName) == "" {
		v.addf("display_name", "missing")
	}
	v.checkOAuth2Options()
	switch {
	case p.AuthMode == "":
		v.addf("auth_mode", "missing")
	case !KnownAuthMode(p.AuthMode):
		v.addf("auth_mode", "unknown auth mode %q", p.AuthMode)
	}

	need := func(field, value string) {
		if strings.TrimSpace(value) == "" {
			v.addf(field, "required for auth mode %s", p.AuthMode)
		}
	}
	switch p.AuthMode {
	case AuthModeOAuth2:
		if !p.UsesClientCredentials() && p.Installation != "outbound" {
			need("authorization_url", p.AuthorizationURL)
		}
		need("token_url", p.TokenURL)
	case AuthModeOAuth2CC:
		// Without a token URL the client credentials cannot be exchanged,
		// but a connection imported with its token can still be used:
		// connecting through POST /oauth2/auth answers why instead.
	case AuthModeOAuth1:
		need("request_url", p.RequestURL)
		need("authorization_url", p.AuthorizationURL)
		need("token_url", p.TokenURL)
	case AuthModeApp:
		need("authorization_url", p.AuthorizationURL)
		need("token_url", p.TokenURL)
	case AuthModeAPIKey:
		if _, ok := p.Credentials["apiKey"]; !ok {
			v.addf("credentials.apiKey", "required for auth mode API_KEY")
		}
	}

	switch p.TokenRequestAuthMethod {
	case "", TokenAuthBody, TokenAuthBasic, "custom", "private_key_jwt":
	default:
		v.addf("token_request_auth_method", "unknown value %q (want body or basic)", p.TokenRequestAuthMethod)
	}
	switch p.SignatureMethod {
	case "", "HMAC-SHA1", "HMAC-SHA256", "RSA-SHA1", "PLAINTEXT":
	default:
		v.addf("signature_method", "unknown value %q", p.SignatureMethod)
	}
	if p.TokenExpirationBuffer < 0 {
		v.addf("token_expiration_buffer", "must not be negative")
	}
	for _, u := range []struct{ field, value string }{
		{"docs", p.Docs}, {"docs_connect", p.DocsConnect},
	} {
		if u.value != "" {
			v.checkURL(u.field, u.value)
		}
	}
	if p.Logo != "" && !strings.HasPrefix(p.Logo, "/") {
		v.checkURL("logo", p.Logo)
	}

	for _, u := range []struct{ field, value string }{
		{"authorization_url", p.AuthorizationURL},
		{"token_url", p.TokenURL},
		{"refresh_url", p.RefreshURL},
		{"request_url", p.RequestURL},
	} {
		if u.value != "" {
			v.checkTemplateURL(u.field, u.value)
		}
	}
	v.checkTemplateMap("authorization_params", p.AuthorizationParams)
	v.checkTemplateMap("token_params", p.TokenParams)
	v.checkTemplateMap("refresh_params", p.RefreshParams)

	if x := p.Proxy; x != nil {
		if x.BaseURL != "" {
			v.checkTemplateURL("proxy.base_url", x.BaseURL)
		}
		v.checkTemplateMap("proxy.headers", x.Headers)
		v.checkTemplateMap("proxy.query", x.Query)
		if vf := x.Verification; vf != nil {
			switch vf.Method {
			case "", "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE":
			default:
				v.addf("proxy.verification.method", "unknown HTTP method %q", vf.Method)
			}
			if len(vf.Endpoints) == 0 {
				v.addf("proxy.verification.endpoints", "missing")
			}
			for i, e := range vf.Endpoints {
				field := fmt.Sprintf("proxy.verification.endpoints[%d]", i)
				if e == "" {
					v.addf(field, "empty")
				}
				v.checkTemplate(field, e)
			}
			if vf.BaseURLOverride != "" {
				v.checkTemplateURL("proxy.verification.base_url_override", vf.BaseURLOverride)
			}
			v.checkTemplateMap("proxy.verification.headers", vf.Headers)
		}
		v.checkPaginate(x.Paginate)
	}
	v.checkFields("connection_config", p.ConnectionConfig)
	v.checkFields("credentials", p.Credentials)
	v.checkWebhook()
	v.checkDetails()
}

// checkPaginate checks the values of proxy.paginate that a provider
// cannot leave to functions: the type, the offset method and the limit.
func (v *validator) checkPaginate(pg *Paginate) {
	if pg == nil {
		return
	}
	switch pg.Type {
	case "", PaginateCursor, PaginateLink, PaginateOffset:
	default:
		v.addf("proxy.paginate.type", "unknown pagination type %q (want cursor, link or offset)", pg.Type)
	}
	switch pg.OffsetCalculationMethod {
	case "", OffsetByResponseSize, OffsetPerPage:
	default:
		v.addf("proxy.paginate.offset_calculation_method", "unknown method %q (want by-response-size or per-page)", pg.OffsetCalculationMethod)
	}
	if pg.Limit < 0 {
		v.addf("proxy.paginate.limit", "must not be negative")
	}
}

func (v *validator) checkFields(field string, fs map[string]FieldSpec) {
	for _, k := range slices.Sorted(maps.Keys(fs)) {
		if k == "" {
			v.addf(field, "empty field name")
		}
		switch fs[k].Type {
		case "", "string", "number", "boolean":
		default:
			v.addf(field+"."+k+".type", "unknown type %q (want string, number or boolean)", fs[k].Type)
		}
	}
}

func (v *validator) checkWebhook() {
	w := v.p.WebhookRouting
	if w == nil {
		return
	}
	if s := w.Signature; s != nil {
		if s.Header == "" {
			v.addf("webhook_routing.signature.header", "missing")
		}
		switch s.Algorithm {
		case "HMAC-SHA256", "HMAC-SHA1":
		default:
			v.addf("webhook_routing.signature.algorithm", "unknown algorithm %q (want HMAC-SHA256 or HMAC-SHA1)", s.Algorithm)
		}
		switch s.Encoding {
		case "hex", "base64":
		default:
			v.addf("webhook_routing.signature.encoding", "unknown encoding %q (want hex or base64)", s.Encoding)
		}
		switch s.Format {
		case "", "plain":
		case "key_value":
			if s.SignatureKey == "" {
				v.addf("webhook_routing.signature.signature_key", "required for format key_value")
			}
		default:
			v.addf("webhook_routing.signature.format", "unknown format %q (want plain or key_value)", s.Format)
		}
		switch s.TimestampUnit {
		case "", "seconds", "milliseconds":
		default:
			v.addf("webhook_routing.signature.timestamp_unit", "unknown unit %q", s.TimestampUnit)
		}
		switch s.Secret {
		case "", "webhook_secret", "client_secret":
		default:
			v.addf("webhook_routing.signature.secret", "unknown secret %q (want webhook_secret or client_secret)", s.Secret)
		}
		if s.MaxAge < 0 {
			v.addf("webhook_routing.signature.max_age", "must not be negative")
		}
	}
	if c := w.Connection; c != nil {
		switch c.Source {
		case "", "body", "header":
		default:
			v.addf("webhook_routing.connection.source", "unknown source %q (want body or header)", c.Source)
		}
		if c.Path == "" {
			v.addf("webhook_routing.connection.path", "missing")
		}
		if c.ConnectionConfigKey == "" {
			v.addf("webhook_routing.connection.connection_config_key", "missing")
		} else if !v.configDeclared(c.ConnectionConfigKey) {
			v.addf("webhook_routing.connection.connection_config_key", "%q is not declared in connection_config", c.ConnectionConfigKey)
		}
	}
	if c := w.Challenge; c != nil && (c.Path == "" || c.ResponsePath == "") {
		v.addf("webhook_routing.challenge", "path and response_path are required")
	}
	if t := w.Type; t != nil {
		switch t.Source {
		case "", "body", "header":
		default:
			v.addf("webhook_routing.type.source", "unknown source %q (want body or header)", t.Source)
		}
		if t.Path == "" {
			v.addf("webhook_routing.type.path", "missing")
		}
	}
}

func (v *validator) configDeclared(key string) bool {
	p := v.p
	if _, ok := p.ConnectionConfig[key]; ok {
		return true
	}
	return slices.Contains(p.TokenResponseMetadata, key) || slices.Contains(p.RedirectURIMetadata, key)
}

func (v *validator) credentialDeclared(key string) bool {
	if _, ok := v.p.Credentials[key]; ok {
		return true
	}
	switch v.p.AuthMode {
	case AuthModeBasic:
		return key == "username" || key == "password"
	case AuthModeAPIKey:
		if key == "apiKey" {
			return true
		}
	}
	return v.p.declaresCredential(v.p.AuthMode, key)
}

func (v *validator) checkURL(field, s string) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		v.addf(field, "not an absolute http(s) URL: %q", s)
	}
}

// APIProvider is a provider as served by GET /providers and
// GET /providers/{provider}: Nango's ApiProvider shape, JSON snake_case.
type APIProvider struct {
	Name                   string               `json:"name"`
	DisplayName            string               `json:"display_name"`
	LogoURL                string               `json:"logo_url"`
	AuthMode               string               `json:"auth_mode"`
	Alias                  string               `json:"alias,omitempty"`
	Categories             []string             `json:"categories"`
	Docs                   string               `json:"docs,omitempty"`
	DocsConnect            string               `json:"docs_connect,omitempty"`
	AuthorizationURL       string               `json:"authorization_url,omitempty"`
	TokenURL               string               `json:"token_url,omitempty"`
	RefreshURL             string               `json:"refresh_url,omitempty"`
	RequestURL             string               `json:"request_url,omitempty"`
	SignatureMethod        string               `json:"signature_method,omitempty"`
	TokenRequestAuthMethod string               `json:"token_request_auth_method,omitempty"`
	ScopeSeparator         string               `json:"scope_separator,omitempty"`
	DefaultScopes          []string             `json:"default_scopes,omitempty"`
	DisablePKCE            bool                 `json:"disable_pkce,omitempty"`
	AuthorizationParams    map[string]string    `json:"authorization_params,omitempty"`
	TokenParams            map[string]string    `json:"token_params,omitempty"`
	RefreshParams          map[string]string    `json:"refresh_params,omitempty"`
	TokenResponseMetadata  []string             `json:"token_response_metadata,omitempty"`
	RedirectURIMetadata    []string             `json:"redirect_uri_metadata,omitempty"`
	TokenExpirationBuffer  int                  `json:"token_expiration_buffer,omitempty"`
	Proxy                  *Proxy               `json:"proxy,omitempty"`
	ConnectionConfig       map[string]FieldSpec `json:"connection_config,omitempty"`
	Credentials            map[string]FieldSpec `json:"credentials,omitempty"`
	AuthDetails
	// Unusable says why the catalogue cannot use the provider; empty when
	// it can. API leaves it empty: the catalogue knows (Catalog.Unusable).
	Unusable string `json:"unusable,omitempty"`
}

// API returns the wire form of p. It shares nothing with p. Webhook routing
// is not part of the wire form; [AuthDetails] are.
func (p *Provider) API() APIProvider {
	c := p.Clone()
	cats := c.Categories
	if cats == nil {
		cats = []string{}
	}
	return APIProvider{
		Name:                   c.Name,
		DisplayName:            c.DisplayName,
		LogoURL:                c.LogoURL(),
		AuthMode:               c.AuthMode,
		Alias:                  c.Alias,
		Categories:             cats,
		Docs:                   c.Docs,
		DocsConnect:            c.DocsConnect,
		AuthorizationURL:       c.AuthorizationURL,
		TokenURL:               c.TokenURL,
		RefreshURL:             c.RefreshURL,
		RequestURL:             c.RequestURL,
		SignatureMethod:        c.SignatureMethod,
		TokenRequestAuthMethod: c.TokenRequestAuthMethod,
		ScopeSeparator:         c.ScopeSeparator,
		DefaultScopes:          c.DefaultScopes,
		DisablePKCE:            c.DisablePKCE,
		AuthorizationParams:    c.AuthorizationParams,
		TokenParams:            c.TokenParams,
		RefreshParams:          c.RefreshParams,
		TokenResponseMetadata:  c.TokenResponseMetadata,
		RedirectURIMetadata:    c.RedirectURIMetadata,
		TokenExpirationBuffer:  c.TokenExpirationBuffer,
		Proxy:                  c.Proxy,
		ConnectionConfig:       c.ConnectionConfig,
		Credentials:            c.Credentials,
		AuthDetails:            c.AuthDetails,
	}
}
