package integrations

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// LoadNangoYAML reads providers in the format of Nango's providers.yaml: a
// mapping from provider key to entry. It returns them in file order.
//
// Every key of Nango's file is read, into [Provider] and its
// [AuthDetails], under the same names; keys it does not know are ignored.
// A token_url given per auth mode (a mapping) is kept whole in
// AuthDetails.TokenURLs, and TokenURL is the URL of the entry's own mode,
// else the OAUTH2 one. Scalars are accepted where a list is expected,
// numbers and booleans where a string is, and nested parameter values are
// kept as JSON text.
//
// An alias entry inherits every field of its target, then its own fields
// replace them (a shallow merge, as Nango does). Entries are not
// validated. Only a document that cannot be parsed is an error: an entry
// that cannot be read (not a mapping, a duplicate key, an alias cycle, a
// value of the wrong type) is returned as a provider with the name,
// display name and auth mode it has, carrying its problem, which
// [Provider.Validate] reports and [BuildCatalog] turns into an unusable
// provider or, when strict, an error.
func LoadNangoYAML(r io.Reader) ([]*Provider, error) {
	data, err := readLimited(r)
	if err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := safeYAML(func() error { return yaml.Unmarshal(data, &doc) }); err != nil {
		return nil, fmt.Errorf("integrations: parsing Nango providers: %w", err)
	}
	root := documentRoot(&doc)
	if root == nil {
		return nil, errors.New("integrations: parsing Nango providers: empty document")
	}
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("integrations: parsing Nango providers: line %d: want a mapping of provider keys to entries", root.Line)
	}
	return loadNangoNode(root)
}

func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 100; i++ {
		n = n.Alias
	}
	return n
}

func loadNangoNode(root *yaml.Node) ([]*Provider, error) {
	type entry struct {
		key  string
		node *yaml.Node // nil when the entry is not a mapping
		bad  *Provider  // set when the entry cannot be read at all
	}
	var entries []entry
	byKey := make(map[string]*yaml.Node)
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := deref(root.Content[i]), deref(root.Content[i+1])
		line := root.Content[i].Line
		switch {
		case k == nil || k.Kind != yaml.ScalarNode || k.Value == "":
			bad := &Provider{}
			bad.addLoadProblem("", fmt.Sprintf("line %d: provider key must be a non-empty string", line))
			entries = append(entries, entry{bad: bad})
		case v == nil || v.Kind != yaml.MappingNode:
			bad := &Provider{Name: k.Value}
			bad.addLoadProblem("", fmt.Sprintf("line %d: want a mapping", line))
			entries = append(entries, entry{key: k.Value, bad: bad})
		default:
			if _, dup := byKey[k.Value]; dup {
				bad := &Provider{Name: k.Value}
				bad.addLoadProblem("", fmt.Sprintf("line %d: duplicate key", line))
				entries = append(entries, entry{key: k.Value, bad: bad})
				continue
			}
			byKey[k.Value] = v
			entries = append(entries, entry{key: k.Value, node: v})
		}
	}

	// Resolve aliases on the nodes, so that an alias's own fields replace
	// its target's exactly as written (false and zero included).
	merged := make(map[string]*yaml.Node, len(entries))
	resolved := make(map[string]bool)
	var resolve func(key string, chain []string) (*yaml.Node, error)
	resolve = func(key string, chain []string) (*yaml.Node, error) {
		if n, ok := merged[key]; ok {
			return n, nil
		}
		for _, c := range chain {
			if c == key {
				return nil, fmt.Errorf("alias cycle %s", strings.Join(append(chain, key), " -> "))
			}
		}
		n := byKey[key]
		target := scalarField(n, "alias")
		if target == "" || byKey[target] == nil {
			merged[key] = n
			return n, nil
		}
		base, err := resolve(target, append(chain, key))
		if err != nil {
			return nil, err
		}
		n = mergeMapping(base, n)
		merged[key] = n
		resolved[key] = true
		return n, nil
	}

	ps := make([]*Provider, 0, len(entries))
	for _, e := range entries {
		if e.bad != nil {
			ps = append(ps, e.bad)
			continue
		}
		n, err := resolve(e.key, nil)
		if err != nil {
			ps = append(ps, badEntry(e.key, e.node, "alias", err))
			continue
		}
		var ne nangoEntry
		if err := safeYAML(func() error { return n.Decode(&ne) }); err != nil {
			ps = append(ps, badEntry(e.key, n, "", err))
			continue
		}
		p := ne.provider(e.key)
		p.aliasResolved = resolved[e.key]
		ps = append(ps, p)
	}
	return ps, nil
}

// badEntry is the provider of an entry that cannot be read: its name,
// display name and auth mode as far as they can be read, and the problem.
func badEntry(key string, n *yaml.Node, field string, err error) *Provider {
	p := &Provider{Name: key, DisplayName: scalarField(n, "display_name"), AuthMode: scalarField(n, "auth_mode")}
	p.addLoadProblem(field, strings.TrimPrefix(err.Error(), "yaml: unmarshal errors:\n  "))
	return p
}

// scalarField returns the value of a scalar key of a mapping node.
func scalarField(n *yaml.Node, key string) string {
	if n == nil {
		return ""
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			if v := deref(n.Content[i+1]); v != nil && v.Kind == yaml.ScalarNode {
				return v.Value
			}
		}
	}
	return ""
}

// mergeMapping returns a mapping with base's pairs whose keys over lacks,
// followed by over's pairs.
func mergeMapping(base, over *yaml.Node) *yaml.Node {
	own := make(map[string]bool, len(over.Content)/2)
	for i := 0; i+1 < len(over.Content); i += 2 {
		own[over.Content[i].Value] = true
	}
	m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: over.Line, Column: over.Column}
	for i := 0; i+1 < len(base.Content); i += 2 {
		if !own[base.Content[i].Value] {
			m.Content = append(m.Content, base.Content[i], base.Content[i+1])
		}
	}
	m.Content = append(m.Content, over.Content...)
	return m
}

// nangoEntry is one entry of Nango's providers.yaml, with lenient types.
type nangoEntry struct {
	DisplayName            nText       `yaml:"display_name"`
	Alias                  nText       `yaml:"alias"`
	AuthMode               nText       `yaml:"auth_mode"`
	Categories             nList       `yaml:"categories"`
	Docs                   nText       `yaml:"docs"`
	DocsConnect            nText       `yaml:"docs_connect"`
	AuthorizationURL       nText       `yaml:"authorization_url"`
	TokenURL               yaml.Node   `yaml:"token_url"`
	RefreshURL             nText       `yaml:"refresh_url"`
	RequestURL             nText       `yaml:"request_url"`
	SignatureMethod        nText       `yaml:"signature_method"`
	TokenRequestAuthMethod nText       `yaml:"token_request_auth_method"`
	ScopeSeparator         nText       `yaml:"scope_separator"`
	DefaultScopes          nList       `yaml:"default_scopes"`
	DisablePKCE            nBool       `yaml:"disable_pkce"`
	AuthorizationParams    nMap        `yaml:"authorization_params"`
	TokenParams            nParams     `yaml:"token_params"`
	RefreshParams          nMap        `yaml:"refresh_params"`
	TokenResponseMetadata  nList       `yaml:"token_response_metadata"`
	RedirectURIMetadata    nList       `yaml:"redirect_uri_metadata"`
	TokenExpirationBuffer  nInt        `yaml:"token_expiration_buffer"`
	Proxy                  *nangoProxy `yaml:"proxy"`
	ConnectionConfig       nFields     `yaml:"connection_config"`
	Credentials            nFields     `yaml:"credentials"`

	TokenResponse                    *nangoTokenResponse `yaml:"token_response"`
	TokenHeaders                     nMap                `yaml:"token_headers"`
	BodyFormat                       nText               `yaml:"body_format"`
	TokenRequestMethod               nText               `yaml:"token_request_method"`
	TokenExpiresInMs                 nInt64              `yaml:"token_expires_in_ms"`
	ExpiresInUnit                    nText               `yaml:"expires_in_unit"`
	RefreshTokenParams               nMap                `yaml:"refresh_token_params"`
	RefreshTokenHeaders              nMap                `yaml:"refresh_token_headers"`
	RefreshTokenResponseMetadata     nList               `yaml:"refresh_token_response_metadata"`
	TokenResponseHeaders             nList               `yaml:"token_response_headers"`
	AdditionalSteps                  []nangoStep         `yaml:"additional_steps"`
	Signature                        *nangoSignature     `yaml:"signature"`
	Token                            *nangoToken         `yaml:"token"`
	Assertion                        *nangoAssertion     `yaml:"assertion"`
	AssertionOption                  nFields             `yaml:"assertion_option"`
	Auth                             nMap                `yaml:"auth"`
	AuthorizationMethod              nText               `yaml:"authorization_method"`
	AuthType                         nText               `yaml:"auth_type"`
	ClientRegistration               nText               `yaml:"client_registration"`
	RegistrationURL                  nText               `yaml:"registration_url"`
	RegistrationParams               nObject             `yaml:"registration_params"`
	AuthorizationURLReplacements     nMap                `yaml:"authorization_url_replacements"`
	AuthorizationURLFragment         nText               `yaml:"authorization_url_fragment"`
	AuthorizationURLSkipEncode       nList               `yaml:"authorization_url_skip_encode"`
	AuthorizationURLSkipEmpty        nBool               `yaml:"authorization_url_skip_empty"`
	AuthorizationCodeParamInCallback nText               `yaml:"authorization_code_param_in_callback"`
	AuthorizationCodeParamInWebhook  nText               `yaml:"authorization_code_param_in_webhook"`
	AlternateAccessTokenResponsePath nText               `yaml:"alternate_access_token_response_path"`
	RequireClientCertificate         nBool               `yaml:"require_client_certificate"`
	DecodeURL                        nBool               `yaml:"decode_url"`
	RequestParams                    nMap                `yaml:"request_params"`
	Installation                     nText               `yaml:"installation"`
	IntegrationConfig                nFields             `yaml:"integration_config"`
	ConnectionConfiguration          nList               `yaml:"connection_configuration"`
	WebhookUserDefinedSecret         nBool               `yaml:"webhook_user_defined_secret"`
	WebhookAllowedQueryParams        nList               `yaml:"webhook_allowed_query_params"`
	WebhookResponseMetadata          nList               `yaml:"webhook_response_metadata"`
	SetupGuideURL                    nText               `yaml:"setup_guide_url"`
	PostConnectionScript             nText               `yaml:"post_connection_script"`
	WebhookRoutingScript             nText               `yaml:"webhook_routing_script"`
	CredentialsVerificationScript    nText               `yaml:"credentials_verification_script"`
	PreConnectionDeletionScript      nText               `yaml:"pre_connection_deletion_script"`
}

type nangoTokenResponse struct {
	Token                   nText `yaml:"token"`
	TokenExpiration         nText `yaml:"token_expiration"`
	TokenExpirationStrategy nText `yaml:"token_expiration_strategy"`
	RefreshToken            nText `yaml:"refresh_token"`
}

type nangoStep struct {
	TokenURL           nText `yaml:"token_url"`
	TokenRequestMethod nText `yaml:"token_request_method"`
	BodyFormat         nText `yaml:"body_format"`
	TokenParams        nMap  `yaml:"token_params"`
	TokenHeaders       nMap  `yaml:"token_headers"`
}

type nangoSignature struct {
	Protocol           nText `yaml:"protocol"`
	HMACSecretEncoding nText `yaml:"hmac_secret_encoding"`
}

type nangoToken struct {
	SigningKey  nText   `yaml:"signing_key"`
	ExpiresInMs nInt64  `yaml:"expires_in_ms"`
	Header      nObject `yaml:"header"`
	Payload     nObject `yaml:"payload"`
}

type nangoAssertion struct {
	Type                 nText   `yaml:"type"`
	Key                  nText   `yaml:"key"`
	LifetimeInSeconds    nInt64  `yaml:"lifetimeInSeconds"`
	SingleUse            nBool   `yaml:"singleUse"`
	Header               nObject `yaml:"header"`
	Payload              nObject `yaml:"payload"`
	Issuer               nText   `yaml:"issuer"`
	Audiences            nText   `yaml:"audiences"`
	Recipient            nText   `yaml:"recipient"`
	InResponseTo         nText   `yaml:"inResponseTo"`
	SessionIndex         nText   `yaml:"sessionIndex"`
	NameIdentifier       nText   `yaml:"nameIdentifier"`
	NameIdentifierFormat nText   `yaml:"nameIdentifierFormat"`
	AuthnContextClassRef nText   `yaml:"authnContextClassRef"`
	Attributes           nObject `yaml:"attributes"`
}

type nangoProxy struct {
	ConnectionConfig         nMap   `yaml:"connection_config"`
	Body                     nMap   `yaml:"body"`
	ForwardHeadersOnRedirect *nBool `yaml:"forward_headers_on_redirect"`

	BaseURL      nText              `yaml:"base_url"`
	Headers      nMap               `yaml:"headers"`
	Query        nMap               `yaml:"query"`
	Retry        *nangoRetry        `yaml:"retry"`
	Verification *nangoVerification `yaml:"verification"`
	Paginate     *nangoPaginate     `yaml:"paginate"`
	Decompress   nBool              `yaml:"decompress"`
}

type nangoPaginate struct {
	Type                    nText  `yaml:"type"`
	LimitNameInRequest      nText  `yaml:"limit_name_in_request"`
	CursorPathInResponse    nText  `yaml:"cursor_path_in_response"`
	CursorNameInRequest     nText  `yaml:"cursor_name_in_request"`
	LinkRelInResponseHeader nText  `yaml:"link_rel_in_response_header"`
	LinkPathInResponseBody  nText  `yaml:"link_path_in_response_body"`
	OffsetNameInRequest     nText  `yaml:"offset_name_in_request"`
	OffsetStartValue        nInt   `yaml:"offset_start_value"`
	OffsetCalculationMethod nText  `yaml:"offset_calculation_method"`
	ResponsePath            nText  `yaml:"response_path"`
	InBody                  *nBool `yaml:"in_body"`
	Limit                   nInt   `yaml:"limit"`
}

type nangoRetry struct {
	At        nList `yaml:"at"`
	After     nList `yaml:"after"`
	Remaining nText `yaml:"remaining"`
	ErrorCode nList `yaml:"error_code"`
	InBody    *struct {
		Path     nText `yaml:"path"`
		Value    nText `yaml:"value"`
		Strategy nText `yaml:"strategy"`
	} `yaml:"in_body"`
}

type nangoVerification struct {
	Method          nText `yaml:"method"`
	Endpoints       nList `yaml:"endpoints"`
	Endpoint        nText `yaml:"endpoint"`
	BaseURLOverride nText `yaml:"base_url_override"`
	Headers         nMap  `yaml:"headers"`
	Data            nAny  `yaml:"data"`
}

type nangoField struct {
	Type         nText `yaml:"type"`
	Title        nText `yaml:"title"`
	Description  nText `yaml:"description"`
	Example      nText `yaml:"example"`
	Pattern      nText `yaml:"pattern"`
	Format       nText `yaml:"format"`
	Prefix       nText `yaml:"prefix"`
	Suffix       nText `yaml:"suffix"`
	DefaultValue nText `yaml:"default_value"`
	DocSection   nText `yaml:"doc_section"`
	Order        nInt  `yaml:"order"`
	Optional     nBool `yaml:"optional"`
	Secret       nBool `yaml:"secret"`
	Automated    nBool `yaml:"automated"`
	Hidden       nBool `yaml:"hidden"`
	Enum         nList `yaml:"enum"`
	Warnings     nMap  `yaml:"warnings"`
}

func (e *nangoEntry) provider(key string) *Provider {
	p := &Provider{
		Name:                   key,
		DisplayName:            string(e.DisplayName),
		Alias:                  string(e.Alias),
		AuthMode:               string(e.AuthMode),
		Categories:             e.Categories,
		Docs:                   string(e.Docs),
		DocsConnect:            string(e.DocsConnect),
		AuthorizationURL:       string(e.AuthorizationURL),
		TokenURL:               tokenURLFor(&e.TokenURL, string(e.AuthMode)),
		RefreshURL:             string(e.RefreshURL),
		RequestURL:             string(e.RequestURL),
		SignatureMethod:        string(e.SignatureMethod),
		TokenRequestAuthMethod: string(e.TokenRequestAuthMethod),
		ScopeSeparator:         string(e.ScopeSeparator),
		DefaultScopes:          e.DefaultScopes,
		DisablePKCE:            bool(e.DisablePKCE),
		AuthorizationParams:    e.AuthorizationParams,
		TokenParams:            e.TokenParams.m,
		RefreshParams:          e.RefreshParams,
		TokenResponseMetadata:  e.TokenResponseMetadata,
		RedirectURIMetadata:    e.RedirectURIMetadata,
		TokenExpirationBuffer:  int(e.TokenExpirationBuffer),
		ConnectionConfig:       e.ConnectionConfig,
		Credentials:            e.Credentials,
		AuthDetails:            e.details(),
	}
	p.TokenURLs = tokenURLs(&e.TokenURL)
	if x := e.Proxy; x != nil {
		p.Proxy = &Proxy{
			BaseURL:          string(x.BaseURL),
			Headers:          x.Headers,
			Query:            x.Query,
			Decompress:       bool(x.Decompress),
			ConnectionConfig: x.ConnectionConfig,
			Body:             x.Body,
		}
		if x.ForwardHeadersOnRedirect != nil {
			b := bool(*x.ForwardHeadersOnRedirect)
			p.Proxy.ForwardHeadersOnRedirect = &b
		}
		if r := x.Retry; r != nil {
			p.Proxy.Retry = &Retry{At: r.At, After: r.After, Remaining: string(r.Remaining), ErrorCodes: r.ErrorCode}
			if ib := r.InBody; ib != nil {
				p.Proxy.Retry.InBody = &RetryInBody{Path: string(ib.Path), Value: string(ib.Value), Strategy: string(ib.Strategy)}
			}
		}
		if v := x.Verification; v != nil {
			endpoints := []string(v.Endpoints)
			if len(endpoints) == 0 && v.Endpoint != "" {
				endpoints = []string{string(v.Endpoint)}
			}
			p.Proxy.Verification = &Verification{
				Method:          string(v.Method),
				Endpoints:       endpoints,
				BaseURLOverride: string(v.BaseURLOverride),
				Headers:         v.Headers,
				Data:            v.Data.v,
			}
		}
		if pg := x.Paginate; pg != nil {
			p.Proxy.Paginate = &Paginate{
				Type:                    string(pg.Type),
				LimitNameInRequest:      string(pg.LimitNameInRequest),
				CursorPathInResponse:    string(pg.CursorPathInResponse),
				CursorNameInRequest:     string(pg.CursorNameInRequest),
				LinkRelInResponseHeader: string(pg.LinkRelInResponseHeader),
				LinkPathInResponseBody:  string(pg.LinkPathInResponseBody),
				OffsetNameInRequest:     string(pg.OffsetNameInRequest),
				OffsetStartValue:        int(pg.OffsetStartValue),
				OffsetCalculationMethod: string(pg.OffsetCalculationMethod),
				ResponsePath:            string(pg.ResponsePath),
				Limit:                   int(pg.Limit),
			}
			if pg.InBody != nil {
				b := bool(*pg.InBody)
				p.Proxy.Paginate.InBody = &b
			}
		}
	}
	return p
}

// details returns the AuthDetails of the entry.
func (e *nangoEntry) details() AuthDetails {
	d := AuthDetails{
		TokenHeaders:                     e.TokenHeaders,
		BodyFormat:                       string(e.BodyFormat),
		TokenRequestMethod:               string(e.TokenRequestMethod),
		TokenExpiresInMs:                 int64(e.TokenExpiresInMs),
		ExpiresInUnit:                    string(e.ExpiresInUnit),
		RefreshTokenParams:               e.RefreshTokenParams,
		RefreshTokenHeaders:              e.RefreshTokenHeaders,
		RefreshTokenResponseMetadata:     e.RefreshTokenResponseMetadata,
		TokenResponseHeaders:             e.TokenResponseHeaders,
		AssertionOption:                  e.AssertionOption,
		Auth:                             e.Auth,
		AuthorizationMethod:              string(e.AuthorizationMethod),
		AuthType:                         string(e.AuthType),
		ClientRegistration:               string(e.ClientRegistration),
		RegistrationURL:                  string(e.RegistrationURL),
		RegistrationParams:               e.RegistrationParams.m,
		AuthorizationURLReplacements:     e.AuthorizationURLReplacements,
		AuthorizationURLFragment:         string(e.AuthorizationURLFragment),
		AuthorizationURLSkipEncode:       e.AuthorizationURLSkipEncode,
		AuthorizationURLSkipEmpty:        bool(e.AuthorizationURLSkipEmpty),
		AuthorizationCodeParamInCallback: string(e.AuthorizationCodeParamInCallback),
		AuthorizationCodeParamInWebhook:  string(e.AuthorizationCodeParamInWebhook),
		AlternateAccessTokenResponsePath: string(e.AlternateAccessTokenResponsePath),
		RequireClientCertificate:         bool(e.RequireClientCertificate),
		DecodeURL:                        bool(e.DecodeURL),
		RequestParams:                    e.RequestParams,
		Installation:                     string(e.Installation),
		IntegrationConfig:                e.IntegrationConfig,
		ConnectionConfiguration:          e.ConnectionConfiguration,
		WebhookUserDefinedSecret:         bool(e.WebhookUserDefinedSecret),
		WebhookAllowedQueryParams:        e.WebhookAllowedQueryParams,
		WebhookResponseMetadata:          e.WebhookResponseMetadata,
		SetupGuideURL:                    string(e.SetupGuideURL),
		PostConnectionScript:             string(e.PostConnectionScript),
		WebhookRoutingScript:             string(e.WebhookRoutingScript),
		CredentialsVerificationScript:    string(e.CredentialsVerificationScript),
		PreConnectionDeletionScript:      string(e.PreConnectionDeletionScript),
	}
	if r := e.TokenResponse; r != nil {
		d.TokenResponse = &TokenResponse{Token: string(r.Token), TokenExpiration: string(r.TokenExpiration),
			TokenExpirationStrategy: string(r.TokenExpirationStrategy), RefreshToken: string(r.RefreshToken)}
	}
	for _, s := range e.AdditionalSteps {
		d.AdditionalSteps = append(d.AdditionalSteps, TokenStep{TokenURL: string(s.TokenURL),
			TokenRequestMethod: string(s.TokenRequestMethod), BodyFormat: string(s.BodyFormat),
			TokenParams: s.TokenParams, TokenHeaders: s.TokenHeaders})
	}
	if s := e.Signature; s != nil {
		d.Signature = &Signature{Protocol: string(s.Protocol), HMACSecretEncoding: string(s.HMACSecretEncoding)}
	}
	if t := e.Token; t != nil {
		d.Token = &SignedToken{SigningKey: string(t.SigningKey), ExpiresInMs: int64(t.ExpiresInMs), Header: t.Header.m, Payload: t.Payload.m}
	}
	if a := e.Assertion; a != nil {
		d.Assertion = &Assertion{Type: string(a.Type), Key: string(a.Key), LifetimeInSeconds: int64(a.LifetimeInSeconds),
			SingleUse: bool(a.SingleUse), Header: a.Header.m, Payload: a.Payload.m,
			Issuer: string(a.Issuer), Audiences: string(a.Audiences), Recipient: string(a.Recipient),
			InResponseTo: string(a.InResponseTo), SessionIndex: string(a.SessionIndex),
			NameIdentifier: string(a.NameIdentifier), NameIdentifierFormat: string(a.NameIdentifierFormat),
			AuthnContextClassRef: string(a.AuthnContextClassRef), Attributes: a.Attributes.m}
	}
	d.TokenParamsTree = e.TokenParams.tree
	return d
}

// tokenURLs reads every URL of a token_url: one per auth mode for a
// mapping, nil for a plain string.
func tokenURLs(n *yaml.Node) map[string]string {
	n = deref(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	out := make(map[string]string, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		if v := deref(n.Content[i+1]); v != nil && v.Kind == yaml.ScalarNode && v.Tag != "!!null" {
			out[n.Content[i].Value] = v.Value
		}
	}
	return out
}

// tokenURLFor reads a token_url that is either a string or a mapping from
// auth mode to URL.
func tokenURLFor(n *yaml.Node, mode string) string {
	n = deref(n)
	if n == nil {
		return ""
	}
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return ""
		}
		return n.Value
	case yaml.MappingNode:
		first := ""
		byMode := make(map[string]string)
		for i := 0; i+1 < len(n.Content); i += 2 {
			v := deref(n.Content[i+1])
			if v == nil || v.Kind != yaml.ScalarNode {
				continue
			}
			byMode[n.Content[i].Value] = v.Value
			if first == "" {
				first = v.Value
			}
		}
		if u, ok := byMode[mode]; ok {
			return u
		}
		if u, ok := byMode[AuthModeOAuth2]; ok {
			return u
		}
		return first
	}
	return ""
}

// nText is a string read from any scalar; null and non-scalars read as "".
type nText string

func (t *nText) UnmarshalYAML(n *yaml.Node) error {
	n = deref(n)
	if n != nil && n.Kind == yaml.ScalarNode && n.Tag != "!!null" {
		*t = nText(n.Value)
	}
	return nil
}

// nList is a list of strings; a single scalar reads as a one-element list.
type nList []string

func (l *nList) UnmarshalYAML(n *yaml.Node) error {
	n = deref(n)
	if n == nil {
		return nil
	}
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Tag != "!!null" {
			*l = nList{n.Value}
		}
		return nil
	case yaml.SequenceNode:
		out := make(nList, 0, len(n.Content))
		for _, c := range n.Content {
			c = deref(c)
			if c == nil || c.Kind != yaml.ScalarNode {
				return fmt.Errorf("line %d: want a list of strings", n.Line)
			}
			out = append(out, c.Value)
		}
		*l = out
		return nil
	}
	return fmt.Errorf("line %d: want a list of strings", n.Line)
}

// nBool is a boolean; "true"/"false" strings are accepted too.
type nBool bool

func (b *nBool) UnmarshalYAML(n *yaml.Node) error {
	n = deref(n)
	if n == nil || (n.Kind == yaml.ScalarNode && (n.Tag == "!!null" || n.Value == "")) {
		return nil
	}
	if n.Kind == yaml.ScalarNode {
		if v, err := strconv.ParseBool(strings.ToLower(n.Value)); err == nil {
			*b = nBool(v)
			return nil
		}
	}
	return fmt.Errorf("line %d: want a boolean", n.Line)
}

// nInt is an integer; numeric strings are accepted too.
type nInt int

func (i *nInt) UnmarshalYAML(n *yaml.Node) error {
	n = deref(n)
	if n == nil || (n.Kind == yaml.ScalarNode && (n.Tag == "!!null" || n.Value == "")) {
		return nil
	}
	if n.Kind == yaml.ScalarNode {
		if v, err := strconv.ParseInt(strings.TrimSpace(n.Value), 10, 32); err == nil {
			*i = nInt(v)
			return nil
		}
		if f, err := strconv.ParseFloat(strings.TrimSpace(n.Value), 64); err == nil && f >= -1<<31 && f < 1<<31 {
			*i = nInt(f)
			return nil
		}
	}
	return fmt.Errorf("line %d: want an integer", n.Line)
}

// nInt64 is a 64-bit integer; numeric strings are accepted too.
type nInt64 int64

func (i *nInt64) UnmarshalYAML(n *yaml.Node) error {
	n = deref(n)
	if n == nil || (n.Kind == yaml.ScalarNode && (n.Tag == "!!null" || n.Value == "")) {
		return nil
	}
	if n.Kind == yaml.ScalarNode {
		if v, err := strconv.ParseInt(strings.TrimSpace(n.Value), 10, 64); err == nil {
			*i = nInt64(v)
			return nil
		}
		if f, err := strconv.ParseFloat(strings.TrimSpace(n.Value), 64); err == nil && f >= -1<<62 && f < 1<<62 {
			*i = nInt64(f)
			return nil
		}
	}
	return fmt.Errorf("line %d: want an integer", n.Line)
}

// nAny is any YAML value, converted to what encoding/json accepts.
type nAny struct{ v any }

func (a *nAny) UnmarshalYAML(n *yaml.Node) error {
	n = deref(n)
	if n == nil {
		return nil
	}
	var x any
	if err := n.Decode(&x); err != nil {
		return err
	}
	a.v = jsonable(x)
	return nil
}

// nObject is a mapping of any values; anything else reads as nothing.
type nObject struct{ m map[string]any }

func (o *nObject) UnmarshalYAML(n *yaml.Node) error {
	var a nAny
	if err := a.UnmarshalYAML(n); err != nil {
		return err
	}
	o.m, _ = a.v.(map[string]any)
	return nil
}

// nParams is a token_params mapping: its values as text (nMap), and as
// written when some value is not text (a mapping, list, number or
// boolean).
type nParams struct {
	m    nMap
	tree ParamTree
}

func (p *nParams) UnmarshalYAML(n *yaml.Node) error {
	if err := p.m.UnmarshalYAML(n); err != nil {
		return err
	}
	n = deref(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	typed := false
	for i := 1; i < len(n.Content); i += 2 {
		if v := deref(n.Content[i]); v != nil && (v.Kind != yaml.ScalarNode || (v.Tag != "!!str" && v.Tag != "!!null")) {
			typed = true
		}
	}
	if !typed {
		return nil
	}
	return p.tree.UnmarshalYAML(n)
}

// nMap is a mapping of strings; scalar values read as their text, nested
// values as JSON.
type nMap map[string]string

func (m *nMap) UnmarshalYAML(n *yaml.Node) error {
	n = deref(n)
	if n == nil || (n.Kind == yaml.ScalarNode && n.Tag == "!!null") {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: want a mapping", n.Line)
	}
	out := make(nMap, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := deref(n.Content[i]), deref(n.Content[i+1])
		if k == nil || k.Kind != yaml.ScalarNode || v == nil {
			return fmt.Errorf("line %d: want a mapping of strings", n.Line)
		}
		if v.Kind == yaml.ScalarNode {
			if v.Tag != "!!null" {
				out[k.Value] = v.Value
			} else {
				out[k.Value] = ""
			}
			continue
		}
		var x any
		if err := v.Decode(&x); err != nil {
			return err
		}
		j, err := json.Marshal(jsonable(x))
		if err != nil {
			return fmt.Errorf("line %d: value of %q: %w", v.Line, k.Value, err)
		}
		out[k.Value] = string(j)
	}
	*m = out
	return nil
}

// jsonable converts YAML-decoded values to ones encoding/json accepts.
func jsonable(x any) any {
	switch v := x.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = jsonable(e)
		}
		return v
	case map[any]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			m[fmt.Sprint(k)] = jsonable(e)
		}
		return m
	case []any:
		for i, e := range v {
			v[i] = jsonable(e)
		}
		return v
	}
	return x
}

// nFields is a connection_config or credentials schema; entries that are
// not mappings are skipped.
type nFields map[string]FieldSpec

func (f *nFields) UnmarshalYAML(n *yaml.Node) error {
	n = deref(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	out := make(nFields, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := deref(n.Content[i]), deref(n.Content[i+1])
		if k == nil || k.Kind != yaml.ScalarNode || v == nil || v.Kind != yaml.MappingNode {
			continue
		}
		var nf nangoField
		if err := v.Decode(&nf); err != nil {
			return fmt.Errorf("field %q: %w", k.Value, err)
		}
		out[k.Value] = FieldSpec{
			Type:         string(nf.Type),
			Title:        string(nf.Title),
			Description:  string(nf.Description),
			Example:      string(nf.Example),
			Pattern:      string(nf.Pattern),
			Format:       string(nf.Format),
			Prefix:       string(nf.Prefix),
			Suffix:       string(nf.Suffix),
			DefaultValue: string(nf.DefaultValue),
			DocSection:   string(nf.DocSection),
			Order:        int(nf.Order),
			Optional:     bool(nf.Optional),
			Secret:       bool(nf.Secret),
			Automated:    bool(nf.Automated),
			Hidden:       bool(nf.Hidden),
			Enum:         nf.Enum,
			Warnings:     nf.Warnings,
		}
	}
	*f = out
	return nil
}
