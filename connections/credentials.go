package connections

import "time"

// Credentials are a connection's secrets. Type, one of the auth modes of
// package integrations (integrations.AuthModeOAuth2 and the others: one set
// of constants serves providers and credentials), selects which fields are
// meaningful:
//
//   - OAUTH2: AccessToken, RefreshToken, ExpiresAt, ObtainedAt, Raw, ConfigOverride
//   - OAUTH1: OAuthToken, OAuthTokenSecret, Raw
//   - OAUTH2_CC: Token, ExpiresAt, ObtainedAt, ClientID, ClientSecret, Raw
//   - API_KEY: APIKey
//   - BASIC: Username, Password
//   - APP: AccessToken, ExpiresAt, ObtainedAt, Raw, JWTToken
//   - TBA: TokenID, TokenSecret, ConfigOverride
//   - TWO_STEP, JWT: Inputs, Token, RefreshToken (TWO_STEP), ExpiresAt, ObtainedAt, Raw
//   - SIGNATURE: Username, Password, Token, ExpiresAt, ObtainedAt
//   - BILL: Username, Password, Inputs, Token (the session id), ExpiresAt, ObtainedAt, Raw
//   - AWS_SIGV4: RoleARN, Region, Service, ExternalID, AccessKeyID, SecretAccessKey, SessionToken, ExpiresAt, ObtainedAt, Raw
//   - CUSTOM: App, User, ExpiresAt (the earlier of the two), ObtainedAt
//   - NONE: nothing
type Credentials struct {
	Type string `json:"type"`

	AccessToken  string     `json:"access_token,omitempty"`
	RefreshToken string     `json:"refresh_token,omitempty"`
	ExpiresAt    *time.Time `json:"expires_at,omitempty"`
	// ObtainedAt is when the current token was obtained from the provider
	// (code exchange, refresh, client credentials, app installation token,
	// or an import with expires_in): with ExpiresAt it gives the token's
	// lifetime, which decides when it is refreshed (see RefreshDue). Nil
	// when unknown: tokens stored before it was recorded, and imports with
	// expires_at only. It is never part of the API's answers.
	ObtainedAt *time.Time     `json:"obtained_at,omitempty"`
	Raw        map[string]any `json:"raw,omitempty"`
	// Scopes are the scopes granted, as stored at connection time.
	Scopes         []string        `json:"scopes,omitempty"`
	ConfigOverride *ConfigOverride `json:"config_override,omitempty"`

	OAuthToken       string `json:"oauth_token,omitempty"`
	OAuthTokenSecret string `json:"oauth_token_secret,omitempty"`

	Token        string `json:"token,omitempty"`
	ClientID     string `json:"client_id,omitempty"`
	ClientSecret string `json:"client_secret,omitempty"`

	APIKey string `json:"apiKey,omitempty"`

	Username string `json:"username,omitempty"`
	Password string `json:"password,omitempty"`

	JWTToken string `json:"jwtToken,omitempty"`

	TokenID     string `json:"token_id,omitempty"`
	TokenSecret string `json:"token_secret,omitempty"`

	// Inputs are what the token modes exchange for their Token: the
	// provider's credential fields of TWO_STEP and JWT, Bill's
	// organization_id and dev_key (see IsTokenMode).
	Inputs map[string]any `json:"inputs,omitempty"`
	// ClientCertificate and ClientPrivateKey are the PEM client certificate
	// and key of an OAUTH2_CC connection whose provider requires one
	// (mutual TLS), or, for private_key_jwt, the private JWK that signs
	// the client assertion (ClientPrivateKey only).
	ClientCertificate string `json:"client_certificate,omitempty"`
	ClientPrivateKey  string `json:"client_private_key,omitempty"`

	AWSSigV4
	// Registered is the client and token endpoint of an MCP connection
	// (OAUTH2 credentials of MCP_OAUTH2 and MCP_OAUTH2_GENERIC providers).
	Registered *RegisteredClient `json:"registered_client,omitempty"`
	// App and User are the two tokens of CUSTOM credentials (GitHub App
	// OAuth): the installation token (APP) and the user's (OAUTH2).
	App  *Credentials `json:"app,omitempty"`
	User *Credentials `json:"user,omitempty"`
}

// ConfigOverride replaces the integration's OAuth client for one connection.
type ConfigOverride struct {
	ClientID     string `json:"client_id,omitempty"`
	ClientSecret string `json:"client_secret,omitempty"`
}
