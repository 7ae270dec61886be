package integrations

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"
)

// fullDetails has every field of AuthDetails set.
func fullDetails() AuthDetails {
	return AuthDetails{
		TokenURLs:                    map[string]string{"OAUTH2": "https://a.example/token", "APP": "https://a.example/app"},
		TokenResponse:                &TokenResponse{Token: "data.token", TokenExpiration: "expires", TokenExpirationStrategy: "expireIn", RefreshToken: "refresh"},
		TokenParamsTree:              ParamTree{{"request", ParamTree{{"login", "${credentials.user}"}, {"uniqueid", false}, {"n", 3.0}, {"l", []any{"a", true}}}}},
		TokenHeaders:                 map[string]string{"accept": "application/json"},
		BodyFormat:                   "json",
		TokenRequestMethod:           "GET",
		TokenExpiresInMs:             3600000,
		ExpiresInUnit:                "milliseconds",
		RefreshTokenParams:           map[string]string{"grant_type": "refresh_token"},
		RefreshTokenHeaders:          map[string]string{"authorization": "Bearer ${refresh_token}"},
		RefreshTokenResponseMetadata: []string{"restUrl"},
		TokenResponseHeaders:         []string{"set-cookie"},
		AdditionalSteps:              []TokenStep{{TokenURL: "https://a.example/step2", BodyFormat: "form", TokenParams: map[string]string{"a": "b"}, TokenHeaders: map[string]string{"c": "d"}}},
		Signature:                    &Signature{Protocol: "HMAC", HMACSecretEncoding: "utf8"},
		Token:                        &SignedToken{SigningKey: "${credentials.key}", ExpiresInMs: 300000, Header: map[string]any{"alg": "HS256"}, Payload: map[string]any{"scope": []any{"a", "b"}}},
		Assertion: &Assertion{Type: "jwt", Key: "${credentials.privateKey}", LifetimeInSeconds: 300, SingleUse: true, Header: map[string]any{"alg": "ES256"}, Payload: map[string]any{"iss": "x"},
			Issuer: "i", Audiences: "a,b", Recipient: "https://a.example/token", InResponseTo: "r", SessionIndex: "${random}",
			NameIdentifier: "n", NameIdentifierFormat: "f", AuthnContextClassRef: "c", Attributes: map[string]any{"api_key": "k", "use_username": true}},
		AssertionOption:                  map[string]FieldSpec{"privateKey": {Type: "string", Secret: true}},
		Auth:                             map[string]string{"response_type": "code"},
		AuthorizationMethod:              "header",
		AuthType:                         "BASIC",
		ClientRegistration:               "dynamic",
		RegistrationURL:                  "https://a.example/register",
		RegistrationParams:               map[string]any{"grant_types": []any{"authorization_code"}},
		AuthorizationURLReplacements:     map[string]string{"redirect_uri=": "redirect_url="},
		AuthorizationURLFragment:         "/oauth/authorize",
		AuthorizationURLSkipEncode:       []string{"scopes"},
		AuthorizationURLSkipEmpty:        true,
		AuthorizationCodeParamInCallback: "spapi_oauth_code",
		AuthorizationCodeParamInWebhook:  "data.installation.code",
		AlternateAccessTokenResponsePath: "authed_user",
		RequireClientCertificate:         true,
		DecodeURL:                        true,
		RequestParams:                    map[string]string{"x_auth_access_type": "write"},
		Installation:                     "outbound",
		IntegrationConfig:                map[string]FieldSpec{"mode": {Type: "string", Enum: []string{"a", "b"}, Warnings: map[string]string{"b": "careful"}}},
		ConnectionConfiguration:          []string{"portalId"},
		WebhookUserDefinedSecret:         true,
		WebhookAllowedQueryParams:        []string{"validationToken"},
		WebhookResponseMetadata:          []string{"installation.uuid"},
		SetupGuideURL:                    "https://a.example/guide",
		PostConnectionScript:             "post",
		WebhookRoutingScript:             "route",
		CredentialsVerificationScript:    "verify",
		PreConnectionDeletionScript:      "predelete",
	}
}

// TestAuthDetailsForms: every AuthDetails field survives our YAML format,
// JSON, Clone (deeply) and alias inheritance.
func TestAuthDetailsForms(t *testing.T) {
	t.Parallel()
	p := &Provider{Name: "a", DisplayName: "A", AuthMode: AuthModeNone, AuthDetails: fullDetails()}
	if zero := findZeroField(p.AuthDetails); zero != "" {
		t.Fatalf("fullDetails leaves %s unset", zero)
	}

	y, err := yaml.Marshal(ownDocument{Providers: []*Provider{p}})
	if err != nil {
		t.Fatal(err)
	}
	ps, err := Load(strings.NewReader(string(y)))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(p, ps[0], cmp.AllowUnexported(Provider{})); diff != "" {
		t.Errorf("our YAML format round trip (-want +got):\n%s", diff)
	}

	j, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var back Provider
	if err := json.Unmarshal(j, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(p, &back, cmp.AllowUnexported(Provider{})); diff != "" {
		t.Errorf("JSON round trip (-want +got):\n%s", diff)
	}
	var wire map[string]any
	b, _ := json.Marshal(p.API())
	_ = json.Unmarshal(b, &wire)
	for _, k := range []string{"token_response", "client_registration", "integration_config", "setup_guide_url", "additional_steps"} {
		if _, ok := wire[k]; !ok {
			t.Errorf("the wire form has no %q", k)
		}
	}

	c := p.Clone()
	c.TokenURLs["APP"] = "changed"
	c.TokenResponse.Token = "changed"
	c.AdditionalSteps[0].TokenParams["a"] = "changed"
	c.Token.Payload["scope"].([]any)[0] = "changed"
	c.Assertion.Header["alg"] = "changed"
	c.RegistrationParams["grant_types"].([]any)[0] = "changed"
	c.IntegrationConfig["mode"].Enum[0] = "changed"
	if diff := cmp.Diff(&Provider{Name: "a", DisplayName: "A", AuthMode: AuthModeNone, AuthDetails: fullDetails()}, p, cmp.AllowUnexported(Provider{})); diff != "" {
		t.Errorf("changing a clone changed the original (-want +got):\n%s", diff)
	}

	child := &Provider{Name: "b", Alias: "a", AuthDetails: AuthDetails{BodyFormat: "form"}}
	got := inherit(p, child)
	want := fullDetails()
	want.BodyFormat = "form"
	if diff := cmp.Diff(want, got.AuthDetails); diff != "" {
		t.Errorf("alias inheritance (-want +got):\n%s", diff)
	}
}

// findZeroField names the first zero field of d, or "".
func findZeroField(d AuthDetails) string {
	b, _ := json.Marshal(d)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	for _, f := range []string{"token_urls", "token_response", "token_params_tree", "token_headers", "body_format", "token_request_method",
		"token_expires_in_ms", "expires_in_unit", "refresh_token_params", "refresh_token_headers",
		"refresh_token_response_metadata", "token_response_headers", "additional_steps", "signature", "token",
		"assertion", "assertion_option", "auth", "authorization_method", "auth_type", "client_registration",
		"registration_url", "registration_params", "authorization_url_replacements", "authorization_url_fragment",
		"authorization_url_skip_encode", "authorization_url_skip_empty", "authorization_code_param_in_callback",
		"authorization_code_param_in_webhook", "alternate_access_token_response_path", "require_client_certificate",
		"decode_url", "request_params", "installation", "integration_config", "connection_configuration",
		"webhook_user_defined_secret", "webhook_allowed_query_params", "webhook_response_metadata", "setup_guide_url",
		"post_connection_script", "webhook_routing_script", "credentials_verification_script",
		"pre_connection_deletion_script"} {
		if _, ok := m[f]; !ok {
			return f
		}
	}
	if len(m) != 44 {
		return "a field missing from findZeroField's list"
	}
	return ""
}

// TestLoadNangoYAMLDetails: the keys of Nango's file that AuthDetails
// models are read from it, in their Nango shapes.
func TestLoadNangoYAMLDetails(t *testing.T) {
	t.Parallel()
	ps, err := LoadNangoYAML(strings.NewReader(`
two:
    display_name: Two
    auth_mode: TWO_STEP
    token_url: https://two.example/login
    body_format: json
    token_headers: {content-type: application/json}
    token_response: {token: data.token, token_expiration: expires_in, token_expiration_strategy: expireIn}
    token_expires_in_ms: 3600000
    token_response_headers: [set-cookie]
    additional_steps:
        - {token_url: 'https://two.example/step', token_request_method: GET}
    signature: {protocol: RSA}
    token: {signing_key: '${credentials.privateKey}', expires_in_ms: 900000, header: {alg: RS256}, payload: {scope: ['a']}}
    registration_params: {grant_types: [authorization_code]}
    integration_config:
        mode: {type: string, title: Mode, enum: [a, b], warnings: {b: careful}}
    proxy:
        base_url: https://two.example
        body: {key: '${apiKey}'}
        forward_headers_on_redirect: false
        retry: {in_body: {path: error.message, value: 'later', strategy: at}}
        verification: {method: POST, endpoints: [/me], data: {statement: SELECT 1}}
`))
	if err != nil {
		t.Fatal(err)
	}
	p := ps[0]
	no := false
	want := &Provider{Name: "two", DisplayName: "Two", AuthMode: AuthModeTwoStep, TokenURL: "https://two.example/login",
		Proxy: &Proxy{BaseURL: "https://two.example", Body: map[string]string{"key": "${apiKey}"}, ForwardHeadersOnRedirect: &no,
			Retry:        &Retry{InBody: &RetryInBody{Path: "error.message", Value: "later", Strategy: "at"}},
			Verification: &Verification{Method: "POST", Endpoints: []string{"/me"}, Data: map[string]any{"statement": "SELECT 1"}}},
		AuthDetails: AuthDetails{
			BodyFormat:           "json",
			TokenHeaders:         map[string]string{"content-type": "application/json"},
			TokenResponse:        &TokenResponse{Token: "data.token", TokenExpiration: "expires_in", TokenExpirationStrategy: "expireIn"},
			TokenExpiresInMs:     3600000,
			TokenResponseHeaders: []string{"set-cookie"},
			AdditionalSteps:      []TokenStep{{TokenURL: "https://two.example/step", TokenRequestMethod: "GET"}},
			Signature:            &Signature{Protocol: "RSA"},
			Token: &SignedToken{SigningKey: "${credentials.privateKey}", ExpiresInMs: 900000,
				Header: map[string]any{"alg": "RS256"}, Payload: map[string]any{"scope": []any{"a"}}},
			RegistrationParams: map[string]any{"grant_types": []any{"authorization_code"}},
			IntegrationConfig: map[string]FieldSpec{"mode": {Type: "string", Title: "Mode", Enum: []string{"a", "b"},
				Warnings: map[string]string{"b": "careful"}}},
		},
	}
	if diff := cmp.Diff(want, p, cmp.AllowUnexported(Provider{})); diff != "" {
		t.Errorf("LoadNangoYAML (-want +got):\n%s", diff)
	}
	if err := p.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
}
