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
// The fields this package models are read (display_name, auth_mode, alias,
// categories, docs, docs_connect, authorization_url, token_url, refresh_url,
// request_url, signature_method, token_request_auth_method,
// scope_separator, default_scopes, disable_pkce, authorization_params,
// token_params, refresh_params, token_response_metadata,
// redirect_uri_metadata, token_expiration_buffer, proxy.base_url,
// proxy.headers, proxy.query, proxy.retry, proxy.verification,
// proxy.paginate, proxy.decompress, connection_config and credentials);
// every other field
// is ignored. A token_url given per auth mode (a mapping) yields the URL of
// the entry's own mode, else the OAUTH2 one. Scalars are accepted where a
// list is expected, numbers and booleans where a string is, and nested
// parameter values are kept as JSON text.
//
// An alias entry inherits every field of its target, then its own fields
// replace them (a shallow merge, as Nango does). Entries are not
// validated, and entries with auth modes this package does not know (such
// as MCP_OAUTH2) are returned with their auth_mode as is: filter with
// [Provider.Validate] before [NewCatalog].
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
		node *yaml.Node
	}
	var entries []entry
	byKey := make(map[string]*yaml.Node)
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := deref(root.Content[i]), deref(root.Content[i+1])
		if k == nil || k.Kind != yaml.ScalarNode || k.Value == "" {
			return nil, fmt.Errorf("integrations: parsing Nango providers: line %d: provider key must be a non-empty string", root.Content[i].Line)
		}
		if v == nil || v.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("integrations: parsing Nango providers: provider %q (line %d): want a mapping", k.Value, k.Line)
		}
		if _, dup := byKey[k.Value]; dup {
			return nil, fmt.Errorf("integrations: parsing Nango providers: provider %q (line %d): duplicate key", k.Value, k.Line)
		}
		byKey[k.Value] = v
		entries = append(entries, entry{k.Value, v})
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
				return nil, &ValidationError{Provider: chain[0], Field: "alias",
					Problem: fmt.Sprintf("alias cycle %s", strings.Join(append(chain, key), " -> "))}
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
		n, err := resolve(e.key, nil)
		if err != nil {
			return nil, err
		}
		var ne nangoEntry
		if err := safeYAML(func() error { return n.Decode(&ne) }); err != nil {
			return nil, fmt.Errorf("integrations: parsing Nango providers: provider %q: %w", e.key, err)
		}
		p := ne.provider(e.key)
		p.aliasResolved = resolved[e.key]
		ps = append(ps, p)
	}
	return ps, nil
}

// scalarField returns the value of a scalar key of a mapping node.
func scalarField(n *yaml.Node, key string) string {
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
	TokenParams            nMap        `yaml:"token_params"`
	RefreshParams          nMap        `yaml:"refresh_params"`
	TokenResponseMetadata  nList       `yaml:"token_response_metadata"`
	RedirectURIMetadata    nList       `yaml:"redirect_uri_metadata"`
	TokenExpirationBuffer  nInt        `yaml:"token_expiration_buffer"`
	Proxy                  *nangoProxy `yaml:"proxy"`
	ConnectionConfig       nFields     `yaml:"connection_config"`
	Credentials            nFields     `yaml:"credentials"`
	nangoOAuth2Options     `yaml:",inline"`
}

type nangoProxy struct {
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
}

type nangoVerification struct {
	Method          nText `yaml:"method"`
	Endpoints       nList `yaml:"endpoints"`
	Endpoint        nText `yaml:"endpoint"`
	BaseURLOverride nText `yaml:"base_url_override"`
	Headers         nMap  `yaml:"headers"`
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
		TokenParams:            e.TokenParams,
		RefreshParams:          e.RefreshParams,
		TokenResponseMetadata:  e.TokenResponseMetadata,
		RedirectURIMetadata:    e.RedirectURIMetadata,
		TokenExpirationBuffer:  int(e.TokenExpirationBuffer),
		ConnectionConfig:       e.ConnectionConfig,
		Credentials:            e.Credentials,
		OAuth2Options:          e.nangoOAuth2Options.options(),
	}
	if x := e.Proxy; x != nil {
		p.Proxy = &Proxy{
			BaseURL:    string(x.BaseURL),
			Headers:    x.Headers,
			Query:      x.Query,
			Decompress: bool(x.Decompress),
		}
		if r := x.Retry; r != nil {
			p.Proxy.Retry = &Retry{At: r.At, After: r.After, Remaining: string(r.Remaining), ErrorCodes: r.ErrorCode}
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
		}
	}
	*f = out
	return nil
}
