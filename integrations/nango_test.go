package integrations

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// nangoFixtureWant is testdata/nango-providers.yaml as LoadNangoYAML must
// return it.
func nangoFixtureWant() []*Provider {
	githubRetry := &Retry{At: []string{"x-ratelimit-reset"}, Remaining: "x-ratelimit-remaining", ErrorCodes: []string{"403", "429", "5xx"}}
	return []*Provider{
		{
			Name:             "github",
			DisplayName:      "GitHub",
			AuthMode:         "OAUTH2",
			Categories:       []string{"popular", "dev-tools"},
			Docs:             "https://docs.github.com/en/rest",
			AuthorizationURL: "https://github.com/login/oauth/authorize",
			TokenURL:         "https://github.com/login/oauth/access_token",
			Proxy: &Proxy{BaseURL: "https://api.github.com", Retry: githubRetry,
				Paginate: &Paginate{Type: "link", LinkRelInResponseHeader: "next", LimitNameInRequest: "per_page"}},
			AuthDetails: AuthDetails{SetupGuideURL: "https://docs.github.com/en/apps/oauth-apps", WebhookRoutingScript: "someRoutingScript"},
		},
		{
			Name:             "github-enterprise",
			Alias:            "github",
			DisplayName:      "GitHub Enterprise Server",
			AuthMode:         "OAUTH2",
			Categories:       []string{"popular", "dev-tools"},
			Docs:             "https://docs.github.com/en/rest",
			AuthorizationURL: "https://${connectionConfig.hostname}/login/oauth/authorize",
			TokenURL:         "https://${connectionConfig.hostname}/login/oauth/access_token",
			// A shallow merge: the alias's proxy replaces the whole proxy.
			Proxy: &Proxy{BaseURL: "https://${connectionConfig.hostname}/api/v3"},
			ConnectionConfig: map[string]FieldSpec{
				"hostname": {Type: "string", Title: "Hostname", Description: "The host of your GitHub Enterprise Server.",
					Example: "github.example.com", Format: "hostname", Order: 1},
			},
			// Inherited from github.
			AuthDetails:   AuthDetails{SetupGuideURL: "https://docs.github.com/en/apps/oauth-apps", WebhookRoutingScript: "someRoutingScript"},
			aliasResolved: true,
		},
		{
			Name:                  "slack",
			DisplayName:           "Slack",
			AuthMode:              "OAUTH2",
			Categories:            []string{"popular", "communication"},
			AuthorizationURL:      "https://slack.com/oauth/v2/authorize",
			TokenURL:              "https://slack.com/api/oauth.v2.access",
			DisablePKCE:           true,
			ScopeSeparator:        ",",
			TokenResponseMetadata: []string{"incoming_webhook.url", "team.id"},
			Proxy:                 &Proxy{BaseURL: "https://slack.com/api", Retry: &Retry{After: []string{"retry-after"}}},
			AuthDetails:           AuthDetails{PostConnectionScript: "somePostConnectionScript"},
		},
		{
			Name:             "zendesk",
			DisplayName:      "Zendesk",
			AuthMode:         "OAUTH2",
			Categories:       []string{"support", "ticketing"},
			AuthorizationURL: "https://${connectionConfig.subdomain}.zendesk.com/oauth/authorizations/new",
			TokenURL:         "https://${connectionConfig.subdomain}.zendesk.com/oauth/tokens",
			DefaultScopes:    []string{"read"},
			Proxy:            &Proxy{BaseURL: "https://${connectionConfig.subdomain}.zendesk.com"},
			ConnectionConfig: map[string]FieldSpec{
				"subdomain": {Type: "string", Title: "Subdomain", Pattern: "^[a-zA-Z0-9-]+$", Prefix: "https://",
					Suffix: ".zendesk.com", DocSection: "#subdomain", Order: 1},
			},
		},
		{
			Name:        "openai",
			DisplayName: "OpenAI",
			AuthMode:    "API_KEY",
			Categories:  []string{"ai"},
			DocsConnect: "https://platform.openai.com/api-keys",
			Proxy: &Proxy{
				BaseURL:      "https://api.openai.com",
				Headers:      map[string]string{"authorization": "Bearer ${apiKey}"},
				Verification: &Verification{Method: "GET", Endpoints: []string{"/v1/models"}},
			},
			Credentials: map[string]FieldSpec{
				"apiKey": {Type: "string", Title: "API Key", Example: "sk-...", Secret: true},
			},
		},
		{
			Name:        "twilio",
			DisplayName: "Twilio",
			AuthMode:    "BASIC",
			Categories:  []string{"communication"},
			Proxy: &Proxy{
				BaseURL:      "https://api.twilio.com",
				Verification: &Verification{Endpoints: []string{"/2010-04-01/Accounts/${credentials.username}.json"}},
			},
			Credentials: map[string]FieldSpec{
				"username": {Type: "string", Title: "Account SID"},
				"password": {Type: "string", Title: "Auth Token", Secret: true},
			},
		},
		{
			Name:                "trello",
			DisplayName:         "Trello",
			AuthMode:            "OAUTH1",
			Categories:          []string{"productivity"},
			RequestURL:          "https://trello.com/1/OAuthGetRequestToken",
			AuthorizationURL:    "https://trello.com/1/OAuthAuthorizeToken",
			TokenURL:            "https://trello.com/1/OAuthGetAccessToken",
			SignatureMethod:     "HMAC-SHA1",
			ScopeSeparator:      ",",
			AuthorizationParams: map[string]string{"expiration": "never"},
			Proxy:               &Proxy{BaseURL: "https://api.trello.com"},
		},
		{
			Name:                  "hubspot",
			DisplayName:           "HubSpot",
			AuthMode:              "OAUTH2",
			Categories:            []string{"crm", "marketing"},
			AuthorizationURL:      "https://app.hubspot.com/oauth/authorize",
			TokenURL:              "https://api.hubapi.com/oauth/v1/token",
			TokenExpirationBuffer: 300,
			RefreshParams:         map[string]string{"grant_type": "refresh_token"},
			Proxy: &Proxy{BaseURL: "https://api.hubapi.com", Decompress: true,
				Retry: &Retry{Remaining: "x-hubspot-ratelimit-remaining"}},
		},
		{
			Name:                  "salesforce",
			DisplayName:           "Salesforce",
			AuthMode:              "OAUTH2",
			Categories:            []string{"crm"},
			AuthorizationURL:      "https://${connectionConfig.hostname}/services/oauth2/authorize || https://login.salesforce.com/services/oauth2/authorize",
			TokenURL:              "https://${connectionConfig.hostname}/services/oauth2/token || https://login.salesforce.com/services/oauth2/token",
			AuthorizationParams:   map[string]string{"prompt": "consent"},
			TokenResponseMetadata: []string{"instance_url"},
			Proxy:                 &Proxy{BaseURL: "${connectionConfig.instance_url}"},
			ConnectionConfig: map[string]FieldSpec{
				"hostname":     {Type: "string", Title: "Hostname", Optional: true},
				"instance_url": {Type: "string", Automated: true},
			},
		},
		{
			Name:                   "quickbooks",
			DisplayName:            "QuickBooks",
			AuthMode:               "OAUTH2",
			Categories:             []string{"accounting"},
			AuthorizationURL:       "https://appcenter.intuit.com/connect/oauth2",
			TokenURL:               "https://oauth.platform.intuit.com/oauth2/v1/tokens/bearer",
			TokenRequestAuthMethod: "basic",
			RedirectURIMetadata:    []string{"realmId"},
			TokenParams:            map[string]string{"grant_type": "authorization_code"},
			Proxy:                  &Proxy{BaseURL: "https://quickbooks.api.intuit.com"},
		},
		{
			Name:             "github-app-oauth",
			DisplayName:      "GitHub App OAuth",
			AuthMode:         "CUSTOM",
			Categories:       []string{"dev-tools"},
			AuthorizationURL: "${connectionConfig.appPublicLink}/installations/new",
			// CUSTOM is not a key of the token_url mapping: OAUTH2 wins.
			TokenURL: "https://github.com/login/oauth/access_token",
			Proxy:    &Proxy{BaseURL: "https://api.github.com"},
			AuthDetails: AuthDetails{TokenURLs: map[string]string{
				"APP":    "https://api.github.com/app/installations/${connectionConfig.installation_id}/access_tokens",
				"OAUTH2": "https://github.com/login/oauth/access_token",
			}},
		},
		{
			Name:        "acme-mcp",
			DisplayName: "Acme MCP",
			AuthMode:    "MCP_OAUTH2",
			Categories:  []string{"mcp"},
			Proxy:       &Proxy{BaseURL: "https://mcp.acme.example"},
			AuthDetails: AuthDetails{ClientRegistration: "dynamic"},
		},
		{
			Name:                  "quirky",
			DisplayName:           "Quirky",
			AuthMode:              "OAUTH2",
			Categories:            []string{"other"},
			AuthorizationURL:      "https://quirky.example/authorize",
			TokenURL:              "https://quirky.example/token",
			DisablePKCE:           true,
			TokenExpirationBuffer: 120,
			DefaultScopes:         []string{"read"},
			AuthorizationParams: map[string]string{
				"max_age": "60",
				"claims":  `{"id_token":{"email":null}}`,
			},
			Proxy: &Proxy{
				BaseURL:      "https://api.quirky.example",
				Verification: &Verification{Endpoints: []string{"/me"}},
			},
			ConnectionConfig: map[string]FieldSpec{
				"region": {Type: "string", Order: 2},
			},
		},
		{
			Name:        "unauthenticated",
			DisplayName: "Unauthenticated",
			AuthMode:    "NONE",
			Categories:  []string{"other"},
		},
	}
}

func TestLoadNangoYAMLFixture(t *testing.T) {
	t.Parallel()
	f, err := os.Open(filepath.Join("testdata", "nango-providers.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := LoadNangoYAML(f)
	if err != nil {
		t.Fatalf("LoadNangoYAML: %v", err)
	}
	want := nangoFixtureWant()
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(Provider{})); diff != "" {
		t.Errorf("LoadNangoYAML mismatch (-want +got):\n%s", diff)
	}
}

func TestLoadNangoYAMLIntoCatalog(t *testing.T) {
	t.Parallel()
	ps, err := LoadFile(filepath.Join("testdata", "nango-providers.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// Entries with modes this package does not know fail validation; the
	// rest make a catalogue.
	var valid []*Provider
	var invalid []string
	for _, p := range ps {
		if err := p.Validate(); err != nil {
			invalid = append(invalid, p.Name)
			continue
		}
		valid = append(valid, p)
	}
	if diff := cmp.Diff([]string{"github-app-oauth", "acme-mcp"}, invalid); diff != "" {
		t.Errorf("invalid entries (-want +got):\n%s", diff)
	}
	c, err := NewCatalog(valid...)
	if err != nil {
		t.Fatalf("NewCatalog: %v", err)
	}
	p, ok := c.Get("github-enterprise")
	if !ok {
		t.Fatal("github-enterprise missing")
	}
	if p.TokenRequestAuthMethod != "body" || p.ScopeSeparator != " " {
		t.Errorf("defaults not applied: %q %q", p.TokenRequestAuthMethod, p.ScopeSeparator)
	}
}

func TestLoadDetectsFormat(t *testing.T) {
	t.Parallel()
	nango, err := os.ReadFile(filepath.Join("testdata", "nango-providers.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	own, err := embeddedProviders.ReadFile("providers/00-popular.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		doc       []byte
		wantFirst string
		wantLen   int
	}{
		{"nango", nango, "github", 14},
		{"own", own, "github", bytes.Count(own, []byte("\n  - name: "))},
		{"own minimal", []byte("providers:\n  - name: x\n    display_name: X\n    auth_mode: NONE\n"), "x", 1},
		{"nango entry called providers", []byte("providers:\n  display_name: P\n  auth_mode: NONE\n"), "providers", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ps, err := Load(bytes.NewReader(tt.doc))
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if len(ps) != tt.wantLen || ps[0].Name != tt.wantFirst {
				t.Errorf("Load: got %d providers, first %q; want %d, first %q", len(ps), ps[0].Name, tt.wantLen, tt.wantFirst)
			}
		})
	}

	viaLoad, err := Load(bytes.NewReader(nango))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(nangoFixtureWant(), viaLoad, cmp.AllowUnexported(Provider{})); diff != "" {
		t.Errorf("Load on a Nango document differs from LoadNangoYAML (-want +got):\n%s", diff)
	}
}

func TestLoadOwnFormatAliases(t *testing.T) {
	t.Parallel()
	doc := `
providers:
  - name: base
    display_name: Base
    auth_mode: OAUTH2
    authorization_url: https://base.example/authorize
    token_url: https://base.example/token
    disable_pkce: true
    proxy: {base_url: "https://api.base.example"}
  - name: child
    alias: base
    display_name: Child
    proxy: {base_url: "https://api.child.example"}
  - name: grandchild
    alias: child
    display_name: Grandchild
  - name: elsewhere
    alias: github
    display_name: Elsewhere
`
	ps, err := Load(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*Provider{}
	for _, p := range ps {
		byName[p.Name] = p
	}
	gc := byName["grandchild"]
	if gc.AuthMode != "OAUTH2" || !gc.DisablePKCE || gc.Proxy.BaseURL != "https://api.child.example" || gc.TokenURL != "https://base.example/token" {
		t.Errorf("grandchild not resolved through child and base: %+v", gc)
	}
	// An alias whose target is not in the document is left for a catalogue.
	if e := byName["elsewhere"]; e.AuthMode != "" || e.aliasResolved {
		t.Errorf("elsewhere resolved without its target: %+v", e)
	}
	def, err := DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	c, err := def.With(ps...)
	if err != nil {
		t.Fatalf("With: %v", err)
	}
	e, _ := c.Get("elsewhere")
	if e.AuthMode != "OAUTH2" || e.TokenURL != "https://github.com/login/oauth/access_token" || e.DisplayName != "Elsewhere" {
		t.Errorf("elsewhere not resolved against the catalogue: %+v", e)
	}
}

func TestNangoAliasOverridesFalse(t *testing.T) {
	t.Parallel()
	// Nango merges alias entries key by key, so an explicit false or an
	// empty list replaces the target's value.
	doc := `
base:
  display_name: Base
  auth_mode: OAUTH2
  authorization_url: https://base.example/authorize
  token_url: https://base.example/token
  disable_pkce: true
  default_scopes: [a, b]
child:
  alias: base
  display_name: Child
  disable_pkce: false
  default_scopes: []
`
	ps, err := LoadNangoYAML(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	child := ps[1]
	if child.DisablePKCE || len(child.DefaultScopes) != 0 || child.TokenURL != "https://base.example/token" {
		t.Errorf("child = %+v; want disable_pkce false, no scopes, base token URL", child)
	}
}

func TestLoadErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		loader  func(string) ([]*Provider, error)
		doc     string
		wantErr string
	}{
		{"empty", load, "", "empty document"},
		{"comment only", load, "# nothing\n", "empty document"},
		{"list at top", load, "- a\n- b\n", "want a mapping"},
		{"scalar at top", loadNango, "hello\n", "want a mapping"},
		{"bad yaml", load, "a: [\n", "parsing providers"},
		{"own unknown top-level key", load, "providers:\n  - {name: x}\nextra: 1\n", `unknown field "extra"`},
		{"too large", load, "a: '" + strings.Repeat("x", maxDocumentSize) + "'\n", "larger than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := tt.loader(tt.doc)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error = %v; want one containing %q", err, tt.wantErr)
			}
		})
	}
}

// TestLoadEntryProblems: a bad entry does not fail Load. It comes back as
// a provider carrying its problem, which a strict catalogue reports and a
// lenient one lists as unusable, with the good entries around it usable.
func TestLoadEntryProblems(t *testing.T) {
	t.Parallel()
	const nangoGood = "ok: {display_name: OK, auth_mode: NONE}\n"
	const ownGood = "providers:\n  - {name: ok, display_name: OK, auth_mode: NONE}\n"
	tests := []struct {
		name    string
		doc     string
		bad     string // the unusable provider; "" when the entry cannot be listed
		wantErr string
	}{
		{"nango entry not a mapping", nangoGood + "github: 1\n", "github", "line 2: want a mapping"},
		{"nango alias cycle", nangoGood + "a: {alias: b}\nb: {alias: a}\n", "a", "alias cycle a -> b -> a"},
		{"nango unknown alias", nangoGood + "a: {alias: nope, display_name: A}\n", "a", `alias: unknown provider "nope"`},
		{"nango bad bool", nangoGood + "a: {display_name: A, auth_mode: NONE, disable_pkce: maybe}\n", "a", "want a boolean"},
		{"nango bad list", nangoGood + "a: {display_name: A, default_scopes: {x: 1}}\n", "a", "want a list of strings"},
		{"nango unknown mode", nangoGood + "a: {display_name: A, auth_mode: FANCY}\n", "a", `auth_mode: unknown auth mode "FANCY"`},
		{"nango bad template", nangoGood + "a: {display_name: A, auth_mode: NONE, proxy: {base_url: 'https://${nope}.example'}}\n", "a", `unknown variable "nope"`},
		{"nango duplicate key", nangoGood + "a: {display_name: A, auth_mode: NONE}\na: {display_name: B}\n", "", "duplicate"},
		{"own unknown field", ownGood + "  - name: x\n    display_nam: X\n", "x", "display_nam"},
		{"own wrong type", ownGood + "  - name: x\n    categories: {a: b}\n", "x", "cannot unmarshal"},
		{"own empty entry", ownGood + "  -\n", "", "entry 1 is empty"},
		{"own alias cycle", ownGood + "  - {name: a, alias: b}\n  - {name: b, alias: a}\n", "a", "alias cycle"},
		{"own unknown alias", ownGood + "  - {name: a, alias: nope}\n", "a", `unknown provider "nope"`},
		{"own unknown mode", ownGood + "  - {name: a, display_name: A, auth_mode: FANCY}\n", "a", `unknown auth mode "FANCY"`},
		{"own bad template", ownGood + "  - {name: a, display_name: A, auth_mode: NONE, proxy: {base_url: 'https://${nope}.example'}}\n", "a", `unknown variable "nope"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ps, err := load(tt.doc)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if _, err := BuildCatalog(nil, BuildOptions{Strict: true}, ps...); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("strict build: error = %v; want one containing %q", err, tt.wantErr)
			}
			c, err := BuildCatalog(nil, BuildOptions{}, ps...)
			if err != nil {
				t.Fatalf("lenient build: %v", err)
			}
			if p, ok := c.Get("ok"); !ok || p.DisplayName != "OK" {
				t.Errorf("Get(ok) = %v, %v; want the good provider", p, ok)
			}
			if c.Unusable("ok") != nil {
				t.Errorf("Unusable(ok) = %v; want nil", c.Unusable("ok"))
			}
			var all []string
			for _, u := range c.Problems() {
				all = append(all, u.Error())
			}
			if !strings.Contains(strings.Join(all, "\n"), tt.wantErr) {
				t.Errorf("Problems() = %q; want one containing %q", all, tt.wantErr)
			}
			if tt.bad == "" {
				return
			}
			if _, ok := c.Get(tt.bad); ok {
				t.Errorf("Get(%q) returned an unusable provider", tt.bad)
			}
			if _, ok := c.Lookup(tt.bad); !ok {
				t.Errorf("Lookup(%q) = false; want the unusable provider listed", tt.bad)
			}
			var ue *UnusableError
			if err := c.Unusable(tt.bad); !errors.As(err, &ue) || ue.Provider != tt.bad || !strings.Contains(ue.Reason(), tt.wantErr) {
				t.Errorf("Unusable(%q) = %v; want an *UnusableError containing %q", tt.bad, err, tt.wantErr)
			}
		})
	}
}

func load(s string) ([]*Provider, error)      { return Load(strings.NewReader(s)) }
func loadNango(s string) ([]*Provider, error) { return LoadNangoYAML(strings.NewReader(s)) }

func TestLoadFileMissing(t *testing.T) {
	t.Parallel()
	_, err := LoadFile(filepath.Join(t.TempDir(), "nope.yaml"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("LoadFile: %v; want a not-exist error", err)
	}
}

// FuzzLoad checks that no input makes the loaders, validation, the wire form
// or catalogue construction panic.
func FuzzLoad(f *testing.F) {
	if b, err := os.ReadFile(filepath.Join("testdata", "nango-providers.yaml")); err == nil {
		f.Add(b)
	}
	for _, s := range []string{
		"", "providers: []", "providers:\n  - name: a\n    alias: a\n", "a: {alias: a}",
		"a: &x {alias: b}\nb: *x\n", "a: {token_url: {OAUTH2: 1}, proxy: {headers: {x: [1]}}}",
		"a: {authorization_params: {x: {y: [1, {z: .nan}]}}}", "a: {connection_config: {b: {order: 1e99}}}",
		"providers:\n  - name: x\n    display_name: X\n    auth_mode: OAUTH2\n    token_url: '${'\n",
		"providers:\n  - name: z\n    display_name: Z\n    auth_mode: API_KEY\n    proxy:\n      base_url: 'https://${connectionConfig.s}.z.example || https://z.example'\n" +
			"      headers: {Authorization: 'Bearer ${apiKey}'}\n      verification: {endpoints: [/me]}\n" +
			"    connection_config: {s: {type: string, optional: true}}\n    credentials: {apiKey: {type: string, secret: true}}\n" +
			"    webhook_routing: {signature: {header: X-Sig, algorithm: HMAC-SHA256, encoding: hex}, connection: {path: a.b, connection_config_key: s}}\n" +
			"  - {name: y, alias: z, display_name: Y}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 64<<10 {
			return // the loaders cap input far above this; large inputs only slow the fuzzer
		}
		for _, loader := range []func([]byte) ([]*Provider, error){
			func(b []byte) ([]*Provider, error) { return Load(bytes.NewReader(b)) },
			func(b []byte) ([]*Provider, error) { return LoadNangoYAML(bytes.NewReader(b)) },
		} {
			ps, err := loader(data)
			if err != nil {
				continue
			}
			var valid []*Provider
			for _, p := range ps {
				if p == nil {
					t.Fatal("nil provider without an error")
				}
				if p.Validate() == nil {
					valid = append(valid, p)
				}
				if _, err := json.Marshal(p.API()); err != nil {
					t.Fatalf("marshal API form: %v", err)
				}
				if p.Proxy != nil {
					_, _ = Interpolate(p.Proxy.BaseURL, TemplateVars{APIKey: "k"})
				}
			}
			_, _ = NewCatalog(valid...)
		}
	})
}
