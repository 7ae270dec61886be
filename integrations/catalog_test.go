package integrations

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func defaultCatalog(t testing.TB) *Catalog {
	t.Helper()
	c, err := DefaultCatalog()
	if err != nil {
		t.Fatalf("DefaultCatalog: %v", err)
	}
	return c
}

func names(ps []*Provider) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Name
	}
	return out
}

// TestDefaultCatalogSizeAndOrder: the embedded catalogue is large and lists
// the most used providers first. Its cost is measured by
// BenchmarkDefaultCatalog, not here: a test must not depend on how fast the
// machine is.
// TestDefaultCatalogsShareNothing: the embedded files are parsed once, yet
// each DefaultCatalog is built from copies: a change to one catalogue's
// provider (which callers must not make) does not reach another's.
func TestDefaultCatalogsShareNothing(t *testing.T) {
	t.Parallel()
	a, b := defaultCatalog(t), defaultCatalog(t)
	pa, _ := a.Get("github")
	pb, _ := b.Get("github")
	if pa == nil || pb == nil || pa == pb {
		t.Fatalf("github in two catalogues: %p and %p; want two providers", pa, pb)
	}
	if len(pa.Categories) == 0 {
		t.Fatal("github has no categories")
	}
	pa.DisplayName, pa.Categories[0] = "changed", "changed" // in place
	pb2, _ := defaultCatalog(t).Get("github")
	for _, p := range []*Provider{pb, pb2} {
		if p.DisplayName == "changed" || slices.Contains(p.Categories, "changed") {
			t.Errorf("a change to one catalogue's provider reached another: %+v", p)
		}
	}
}

func TestDefaultCatalogSizeAndOrder(t *testing.T) {
	t.Parallel()
	c := defaultCatalog(t)
	if c.Len() < 150 {
		t.Errorf("DefaultCatalog has %d providers; want at least 150", c.Len())
	}
	if got := names(c.List()[:4]); !slices.Equal(got, []string{"github", "github-app", "google", "google-calendar"}) {
		t.Errorf("first providers = %v; want the most used first", got)
	}
}

// BenchmarkDefaultCatalog measures the first call of DefaultCatalog in a
// process (the parse of the embedded files, then the catalogue; later calls
// skip the parse), which connect.New makes when Config.Providers is nil,
// against a baseline in the same run:
// decoding the same embedded YAML files into generic values with yaml.v3,
// the work any loader of this data does. DefaultCatalog adds typed
// decoding with unknown fields refused, alias resolution, defaults and
// validation of every provider. The goal is at most 1.5 times the baseline
// (measured: 0.96-1.22, at 10-33 ms per catalogue on a loaded 2-core
// machine, where the absolute figure varied threefold and the ratio did not).
//
// Sub-benchmarks: yaml (the baseline), catalog (the first call), and ratio,
// which runs the two alternately so that they see the same machine load and
// reports yaml-ms, catalog-ms and ratio (catalog / yaml, the goal metric);
// its ns/op is the sum of the two.
//
//	go test -run '^$' -bench BenchmarkDefaultCatalog ./integrations
func BenchmarkDefaultCatalog(b *testing.B) {
	files := embeddedFiles(b)
	decode := func() {
		for _, data := range files {
			var v any
			if err := yaml.Unmarshal(data, &v); err != nil {
				b.Fatal(err)
			}
		}
	}
	load := func() { // DefaultCatalog's first call: the parse, then the catalogue
		all, err := parseEmbedded()
		if err != nil {
			b.Fatal(err)
		}
		if _, err := NewCatalog(all...); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("yaml", func(b *testing.B) {
		for b.Loop() {
			decode()
		}
	})
	b.Run("catalog", func(b *testing.B) {
		for b.Loop() {
			load()
		}
	})
	b.Run("ratio", func(b *testing.B) {
		var base, cat time.Duration
		for b.Loop() {
			start := time.Now()
			decode()
			mid := time.Now()
			load()
			base, cat = base+mid.Sub(start), cat+time.Since(mid)
		}
		b.ReportMetric(float64(base.Microseconds())/1e3/float64(b.N), "yaml-ms")
		b.ReportMetric(float64(cat.Microseconds())/1e3/float64(b.N), "catalog-ms")
		b.ReportMetric(float64(cat)/float64(base), "ratio")
	})
}

// embeddedFiles returns the embedded provider files.
func embeddedFiles(tb testing.TB) [][]byte {
	tb.Helper()
	entries, err := fs.ReadDir(embeddedProviders, "providers")
	if err != nil {
		tb.Fatal(err)
	}
	var files [][]byte
	for _, e := range entries {
		data, err := embeddedProviders.ReadFile(path.Join("providers", e.Name()))
		if err != nil {
			tb.Fatal(err)
		}
		files = append(files, data)
	}
	if len(files) == 0 {
		tb.Fatal("no embedded provider files")
	}
	return files
}

// mustHave are providers the embedded catalogue must hold.
var mustHave = []string{
	"github", "github-app", "google", "google-calendar", "google-drive", "google-mail", "google-sheet", "google-docs",
	"slack", "salesforce", "hubspot", "notion", "jira", "confluence", "linear", "stripe", "zendesk", "intercom",
	"shopify", "microsoft", "outlook", "microsoft-teams", "sharepoint-online", "one-drive", "asana", "airtable",
	"dropbox", "box", "zoom", "gitlab", "bitbucket", "discord", "figma", "calendly", "xero", "quickbooks",
	"pipedrive", "twitter-v2", "twitter", "linkedin", "mailchimp", "sendgrid", "twilio", "openai", "anthropic",
	"trello", "monday", "clickup", "todoist", "typeform", "docusign", "okta", "servicenow", "freshdesk", "front",
	"gong", "greenhouse", "lever", "bamboohr", "gusto", "deel", "workday", "netsuite", "zoho-crm", "attio", "close",
	"copper", "brex", "ramp", "mercury", "mailgun", "postmark", "resend", "segment", "mixpanel", "amplitude",
	"posthog", "sentry", "datadog", "pagerduty", "vercel", "netlify", "heroku", "digitalocean", "cloudflare",
	"algolia", "pinecone", "mistral", "cohere", "groq", "perplexity", "replicate", "elevenlabs", "deepgram",
	"assemblyai", "spotify", "strava", "fitbit", "twitch", "youtube", "reddit", "pinterest", "facebook",
	"instagram", "whatsapp-business", "miro", "canva", "webflow", "wordpress", "contentful", "sanity",
	"smartsheet", "wrike", "basecamp", "harvest", "toggl", "clockify", "jotform", "surveymonkey", "eventbrite",
	"square", "paypal", "chargebee", "recurly", "paddle", "lemon-squeezy", "klaviyo", "activecampaign", "brevo",
	"constant-contact", "outreach", "salesloft", "apollo", "gorgias", "help-scout", "dialpad", "aircall",
	"ringcentral", "cal-com", "acuity-scheduling", "freshbooks", "wave", "sage-accounting",
}

var categories = []string{
	"popular", "dev-tools", "ticketing", "productivity", "storage", "communication", "email", "crm", "marketing",
	"support", "knowledge-base", "payment", "e-commerce", "video", "design", "scheduling", "accounting", "social",
	"ai", "monitoring", "search", "other", "analytics", "surveys", "legal", "cms", "banking", "erp", "hr", "ats",
	"identity", "sports", "gaming",
}

// placeholderOrigin matches an alternative that starts with a placeholder
// supplying a whole origin.
var placeholderOrigin = regexp.MustCompile(`^\$\{connectionConfig\.[A-Za-z0-9_.-]+\}`)

// checkHTTPS reports a problem when an alternative of a URL template is not
// an https URL.
func checkHTTPS(tmpl string) error {
	t, err := ParseTemplate(tmpl)
	if err != nil {
		return err
	}
	for _, alt := range t.alts {
		src := altSource(alt)
		if placeholderOrigin.MatchString(src) {
			continue
		}
		if !strings.HasPrefix(src, "https://") {
			return fmt.Errorf("%q is not https", src)
		}
		a, err := analyze(alt, false)
		if err != nil || a.scheme != "https" || a.host == "" || strings.ContainsAny(src, " \t") {
			return fmt.Errorf("%q does not parse as an https URL", src)
		}
	}
	return nil
}

func TestEmbeddedProviders(t *testing.T) {
	t.Parallel()
	c := defaultCatalog(t)
	seen := map[string]bool{}
	displays := map[string]string{}
	for _, p := range c.List() {
		t.Run(p.Name, func(t *testing.T) {
			if err := p.Validate(); err != nil {
				t.Errorf("Validate: %v", err)
			}
			if seen[p.Name] {
				t.Errorf("duplicate name")
			}
			seen[p.Name] = true
			if other, dup := displays[p.DisplayName]; dup {
				t.Errorf("display name %q also used by %s", p.DisplayName, other)
			}
			displays[p.DisplayName] = p.Name

			urls := map[string]string{
				"docs": p.Docs, "docs_connect": p.DocsConnect, "authorization_url": p.AuthorizationURL,
				"token_url": p.TokenURL, "refresh_url": p.RefreshURL, "request_url": p.RequestURL,
			}
			if p.Proxy != nil {
				urls["proxy.base_url"] = p.Proxy.BaseURL
				if v := p.Proxy.Verification; v != nil {
					urls["proxy.verification.base_url_override"] = v.BaseURLOverride
				}
			}
			for field, u := range urls {
				if u == "" {
					continue
				}
				if err := checkHTTPS(u); err != nil {
					t.Errorf("%s: %v", field, err)
				}
			}
			if p.Docs == "" && !slices.Contains([]string{"gong", "gong-oauth", "workday", "unauthenticated"}, p.Name) {
				t.Errorf("docs missing")
			}
			if p.AuthMode != AuthModeNone && (p.Proxy == nil || p.Proxy.BaseURL == "") {
				t.Errorf("proxy.base_url missing")
			}
			switch p.AuthMode {
			case AuthModeOAuth2:
				if p.TokenURL == "" || (p.AuthorizationURL == "" && !p.UsesClientCredentials()) {
					t.Errorf("OAUTH2 without authorization_url or token_url")
				}
			case AuthModeAPIKey:
				injected := false
				for _, v := range slices.Concat(slices.Collect(maps.Values(p.Proxy.Headers)), slices.Collect(maps.Values(p.Proxy.Query))) {
					injected = injected || strings.Contains(v, "${apiKey}")
				}
				if !injected {
					t.Errorf("API_KEY provider injects ${apiKey} in no header or query parameter")
				}
			}
			if p.Proxy != nil && p.Proxy.Verification != nil {
				for _, e := range p.Proxy.Verification.Endpoints {
					if !strings.HasPrefix(e, "/") {
						t.Errorf("verification endpoint %q does not start with /", e)
					}
				}
			}
			if len(p.Categories) == 0 {
				t.Errorf("no categories")
			}
			for _, cat := range p.Categories {
				if !slices.Contains(categories, cat) {
					t.Errorf("unknown category %q", cat)
				}
			}
			for field, fs := range map[string]map[string]FieldSpec{"connection_config": p.ConnectionConfig, "credentials": p.Credentials} {
				for k, spec := range fs {
					if spec.Pattern == "" {
						continue
					}
					if _, err := regexp.Compile(spec.Pattern); err != nil {
						t.Errorf("%s.%s.pattern: %v", field, k, err)
					}
				}
			}
		})
	}
	for _, name := range mustHave {
		if _, ok := c.Get(name); !ok {
			t.Errorf("provider %q missing", name)
		}
	}
	for _, name := range []string{"github", "github-app", "slack", "stripe", "shopify", "hubspot", "linear"} {
		p, _ := c.Get(name)
		if p == nil || p.WebhookRouting == nil || p.WebhookRouting.Signature == nil || p.WebhookRouting.Connection == nil {
			t.Errorf("%s: webhook_routing with signature and connection missing", name)
		}
	}
}

func TestWebhookRoutingData(t *testing.T) {
	t.Parallel()
	c := defaultCatalog(t)
	tests := []struct {
		provider string
		want     WebhookRouting
	}{
		{"github", WebhookRouting{
			Signature:  &WebhookSignature{Header: "X-Hub-Signature-256", Algorithm: "HMAC-SHA256", Encoding: "hex", Prefix: "sha256=", Secret: "webhook_secret"},
			Connection: &WebhookConnection{Source: "body", Path: "installation.id", ConnectionConfigKey: "installation_id"},
			Type:       &WebhookType{Source: "header", Path: "X-GitHub-Event"},
		}},
		{"slack", WebhookRouting{
			Signature: &WebhookSignature{Header: "X-Slack-Signature", Algorithm: "HMAC-SHA256", Encoding: "hex", Prefix: "v0=",
				TimestampHeader: "X-Slack-Request-Timestamp", SignedPayload: "v0:${timestamp}:${body}", MaxAge: 300, Secret: "webhook_secret"},
			Connection: &WebhookConnection{Source: "body", Path: "team_id", ConnectionConfigKey: "team.id"},
			Challenge:  &WebhookChallenge{Path: "type", Value: "url_verification", ResponsePath: "challenge"},
			Type:       &WebhookType{Path: "type"},
		}},
		{"stripe", WebhookRouting{
			Signature: &WebhookSignature{Header: "Stripe-Signature", Algorithm: "HMAC-SHA256", Encoding: "hex", Format: "key_value",
				SignatureKey: "v1", TimestampKey: "t", SignedPayload: "${timestamp}.${body}", MaxAge: 300, Secret: "webhook_secret"},
			Connection: &WebhookConnection{Source: "body", Path: "account", ConnectionConfigKey: "stripe_user_id"},
			Type:       &WebhookType{Path: "type"},
		}},
		{"shopify", WebhookRouting{
			Signature:  &WebhookSignature{Header: "X-Shopify-Hmac-Sha256", Algorithm: "HMAC-SHA256", Encoding: "base64", Secret: "client_secret"},
			Connection: &WebhookConnection{Source: "header", Path: "X-Shopify-Shop-Domain", ConnectionConfigKey: "subdomain", TrimSuffix: ".myshopify.com"},
			Type:       &WebhookType{Source: "header", Path: "X-Shopify-Topic"},
		}},
		{"hubspot", WebhookRouting{
			Signature: &WebhookSignature{Header: "X-HubSpot-Signature-v3", Algorithm: "HMAC-SHA256", Encoding: "base64",
				TimestampHeader: "X-HubSpot-Request-Timestamp", TimestampUnit: "milliseconds",
				SignedPayload: "${method}${url}${body}${timestamp}", MaxAge: 300, Secret: "client_secret"},
			Connection: &WebhookConnection{Source: "body", Path: "portalId", ConnectionConfigKey: "portalId"},
			Type:       &WebhookType{Path: "subscriptionType"},
		}},
		{"linear", WebhookRouting{
			Signature:  &WebhookSignature{Header: "Linear-Signature", Algorithm: "HMAC-SHA256", Encoding: "hex", Secret: "webhook_secret"},
			Connection: &WebhookConnection{Source: "body", Path: "organizationId", ConnectionConfigKey: "organizationId"},
			Type:       &WebhookType{Path: "type"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.provider, func(t *testing.T) {
			t.Parallel()
			p, ok := c.Get(tt.provider)
			if !ok {
				t.Fatal("missing")
			}
			if diff := cmp.Diff(&tt.want, p.WebhookRouting); diff != "" {
				t.Errorf("webhook_routing (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSearch(t *testing.T) {
	t.Parallel()
	c := defaultCatalog(t)
	tests := []struct {
		q         string
		wantFirst []string
		wantNone  bool
	}{
		{q: "git hub", wantFirst: []string{"github", "github-app", "github-pat"}},
		{q: "GitHub", wantFirst: []string{"github", "github-app", "github-pat"}},
		{q: "git-hub", wantFirst: []string{"github", "github-app", "github-pat"}},
		{q: "  slack ", wantFirst: []string{"slack"}},
		{q: "cal com", wantFirst: []string{"cal-com"}},
		{q: "Google Calendar", wantFirst: []string{"google-calendar"}},
		{q: "gmail", wantFirst: []string{"google-mail"}},
		{q: "hubspot", wantFirst: []string{"hubspot"}},
		{q: "ats", wantFirst: []string{"whatsapp-business", "greenhouse", "lever", "lever-basic", "ashby", "workable"}},
		{q: "zzzz-no-such-provider", wantNone: true},
	}
	for _, tt := range tests {
		t.Run(tt.q, func(t *testing.T) {
			t.Parallel()
			got := names(c.Search(tt.q))
			if tt.wantNone {
				if len(got) != 0 {
					t.Errorf("Search(%q) = %v; want none", tt.q, got)
				}
				return
			}
			if len(got) < len(tt.wantFirst) || !slices.Equal(got[:len(tt.wantFirst)], tt.wantFirst) {
				t.Errorf("Search(%q) = %v; want it to start with %v", tt.q, got, tt.wantFirst)
			}
		})
	}
	if got := c.Search(" - "); len(got) != c.Len() {
		t.Errorf("Search of punctuation returned %d providers; want all %d", len(got), c.Len())
	}
	// Category matches (anthropic) rank after name prefix matches
	// (airtable).
	ai := names(c.Search("ai"))
	if i, j := slices.Index(ai, "airtable"), slices.Index(ai, "anthropic"); i < 0 || j < i {
		t.Errorf("Search(ai) = %v; want airtable, then the ai category", ai)
	}
}

func TestGetAndList(t *testing.T) {
	t.Parallel()
	c := defaultCatalog(t)
	if _, ok := c.Get("no-such-provider"); ok {
		t.Error("Get found a provider that does not exist")
	}
	p, ok := c.Get("outlook")
	if !ok {
		t.Fatal("outlook missing")
	}
	// Inherited from microsoft, with its own display name, docs and logo.
	want := &Provider{
		Name:                   "outlook",
		DisplayName:            "Outlook",
		Alias:                  "microsoft",
		AuthMode:               "OAUTH2",
		Categories:             []string{"popular", "communication", "email"},
		Docs:                   "https://learn.microsoft.com/en-us/graph/outlook-mail-concept-overview",
		Logo:                   "/providers/outlook/logo.svg",
		AuthorizationURL:       "https://login.microsoftonline.com/${connectionConfig.tenant}/oauth2/v2.0/authorize || https://login.microsoftonline.com/common/oauth2/v2.0/authorize",
		TokenURL:               "https://login.microsoftonline.com/${connectionConfig.tenant}/oauth2/v2.0/token || https://login.microsoftonline.com/common/oauth2/v2.0/token",
		TokenRequestAuthMethod: "body",
		ScopeSeparator:         " ",
		DefaultScopes:          []string{"offline_access"},
		DisablePKCE:            true,
		Proxy:                  &Proxy{BaseURL: "https://graph.microsoft.com", Decompress: true, Retry: &Retry{After: []string{"retry-after"}}},
		ConnectionConfig: map[string]FieldSpec{"tenant": {Type: "string", Title: "Tenant",
			Description: "Directory (tenant) ID or domain. Leave empty for any work, school or personal account.",
			Example:     "contoso.onmicrosoft.com", Optional: true}},
		aliasResolved: true,
	}
	if diff := cmp.Diff(want, p, cmp.AllowUnexported(Provider{})); diff != "" {
		t.Errorf("Get(outlook) (-want +got):\n%s", diff)
	}
	l := c.List()
	l[0] = nil
	if c.List()[0] == nil {
		t.Error("List exposes the catalogue's slice")
	}
}

func validProvider(name string) *Provider {
	return &Provider{
		Name: name, DisplayName: strings.ToUpper(name), AuthMode: AuthModeOAuth2,
		AuthorizationURL: "https://" + name + ".example/authorize", TokenURL: "https://" + name + ".example/token",
		Proxy: &Proxy{BaseURL: "https://api." + name + ".example"},
	}
}

func TestNewCatalogCopiesAndDefaults(t *testing.T) {
	t.Parallel()
	in := validProvider("acme")
	in.Proxy.Verification = &Verification{Endpoints: []string{"/me"}}
	c, err := NewCatalog(in)
	if err != nil {
		t.Fatal(err)
	}
	in.DisplayName = "changed"
	in.Proxy.BaseURL = "changed"
	p, _ := c.Get("acme")
	if p.DisplayName != "ACME" || p.Proxy.BaseURL != "https://api.acme.example" {
		t.Errorf("catalogue shares its input: %+v", p)
	}
	if p.ScopeSeparator != " " || p.TokenRequestAuthMethod != "body" || p.Logo != "/providers/acme/logo.svg" || p.Proxy.Verification.Method != "GET" {
		t.Errorf("defaults not applied: %+v", p)
	}
	o1, _ := NewCatalog(&Provider{Name: "o", DisplayName: "O", AuthMode: AuthModeOAuth1,
		RequestURL: "https://o.example/r", AuthorizationURL: "https://o.example/a", TokenURL: "https://o.example/t"})
	if p, _ := o1.Get("o"); p.SignatureMethod != "HMAC-SHA1" {
		t.Errorf("OAUTH1 signature_method default = %q", p.SignatureMethod)
	}
	k, _ := NewCatalog(&Provider{Name: "k", DisplayName: "K", AuthMode: AuthModeAPIKey, Credentials: map[string]FieldSpec{"apiKey": {}}})
	if p, _ := k.Get("k"); p.ScopeSeparator != "" || p.TokenRequestAuthMethod != "" {
		t.Errorf("OAuth defaults applied to an API_KEY provider: %+v", p)
	}
}

func TestNewCatalogErrors(t *testing.T) {
	t.Parallel()
	mod := func(f func(p *Provider)) *Provider {
		p := validProvider("acme")
		f(p)
		return p
	}
	tests := []struct {
		name      string
		providers []*Provider
		wantField string // of the first *ValidationError
		wantText  string
	}{
		{"missing name", []*Provider{mod(func(p *Provider) { p.Name = "" })}, "name", "missing"},
		{"bad name", []*Provider{mod(func(p *Provider) { p.Name = "a/b" })}, "name", "letters"},
		{"missing display name", []*Provider{mod(func(p *Provider) { p.DisplayName = " " })}, "display_name", "missing"},
		{"missing auth mode", []*Provider{mod(func(p *Provider) { p.AuthMode = "" })}, "auth_mode", "missing"},
		{"unknown auth mode", []*Provider{mod(func(p *Provider) { p.AuthMode = "MCP_OAUTH3" })}, "auth_mode", `unknown auth mode "MCP_OAUTH3"`},
		{"two step without token url", []*Provider{mod(func(p *Provider) { p.AuthMode = AuthModeTwoStep })}, "token_response.token", "required for auth mode TWO_STEP"},
		{"jwt without signature", []*Provider{mod(func(p *Provider) { p.AuthMode = AuthModeJWT })}, "signature.protocol", "required for auth mode JWT"},
		{"mcp dynamic without registration url", []*Provider{mod(func(p *Provider) {
			p.AuthMode, p.ClientRegistration = AuthModeMCPOAuth2, "dynamic"
		})}, "registration_url", "required for client_registration dynamic"},
		{"custom without app token url", []*Provider{mod(func(p *Provider) {
			p.AuthMode, p.TokenURLs = AuthModeCustom, map[string]string{"OAUTH2": p.TokenURL}
		})}, "token_url.APP", "required for auth mode CUSTOM"},
		{"unknown body format", []*Provider{mod(func(p *Provider) { p.BodyFormat = "yaml" })}, "body_format", `unknown value "yaml"`},
		{"oauth2 without authorization url", []*Provider{mod(func(p *Provider) { p.AuthorizationURL = "" })}, "authorization_url", "required for auth mode OAUTH2"},
		{"oauth2 without token url", []*Provider{mod(func(p *Provider) { p.TokenURL = "" })}, "token_url", "required"},
		{"oauth1 without request url", []*Provider{mod(func(p *Provider) { p.AuthMode = AuthModeOAuth1 })}, "request_url", "required for auth mode OAUTH1"},
		{"app without urls", []*Provider{mod(func(p *Provider) { p.AuthMode = AuthModeApp; p.TokenURL = "" })}, "token_url", "required for auth mode APP"},
		{"api key without credential", []*Provider{mod(func(p *Provider) { p.AuthMode = AuthModeAPIKey })}, "credentials.apiKey", "required for auth mode API_KEY"},
		{"undeclared connection config", []*Provider{mod(func(p *Provider) { p.Proxy.BaseURL = "https://${connectionConfig.subdomain}.acme.example" })},
			"proxy.base_url", `connection_config does not declare "subdomain"`},
		{"undeclared credential", []*Provider{mod(func(p *Provider) { p.Proxy.Headers = map[string]string{"X-Key": "${credentials.secret}"} })},
			"proxy.headers.X-Key", `credentials does not declare "secret"`},
		{"unknown variable", []*Provider{mod(func(p *Provider) { p.TokenURL = "https://acme.example/${nope}" })}, "token_url", `unknown variable "nope"`},
		{"unknown function", []*Provider{mod(func(p *Provider) { p.Proxy.Headers = map[string]string{"X-Sig": "${md5(${apiKey})}"} })},
			"proxy.headers.X-Sig", `unknown function "md5"`},
		{"unterminated placeholder", []*Provider{mod(func(p *Provider) { p.AuthorizationParams = map[string]string{"a": "${apiKey"} })},
			"authorization_params.a", "unterminated"},
		{"relative url", []*Provider{mod(func(p *Provider) { p.TokenURL = "/token" })}, "token_url", "not an absolute http(s) URL"},
		{"bad fallback url", []*Provider{mod(func(p *Provider) { p.TokenURL = "https://acme.example/t || ftp://acme.example/t" })}, "token_url", "ftp://"},
		{"bad docs url", []*Provider{mod(func(p *Provider) { p.Docs = "docs.acme.example" })}, "docs", "not an absolute"},
		{"bad token auth method", []*Provider{mod(func(p *Provider) { p.TokenRequestAuthMethod = "header" })}, "token_request_auth_method", "unknown value"},
		{"bad signature method", []*Provider{mod(func(p *Provider) { p.SignatureMethod = "MD5" })}, "signature_method", "unknown value"},
		{"negative buffer", []*Provider{mod(func(p *Provider) { p.TokenExpirationBuffer = -1 })}, "token_expiration_buffer", "negative"},
		{"verification without endpoints", []*Provider{mod(func(p *Provider) { p.Proxy.Verification = &Verification{} })}, "proxy.verification.endpoints", "missing"},
		{"verification bad method", []*Provider{mod(func(p *Provider) { p.Proxy.Verification = &Verification{Method: "FETCH", Endpoints: []string{"/"}} })},
			"proxy.verification.method", "unknown HTTP method"},
		{"bad field type", []*Provider{mod(func(p *Provider) { p.ConnectionConfig = map[string]FieldSpec{"x": {Type: "date"}} })}, "connection_config.x.type", "unknown type"},
		{"webhook bad algorithm", []*Provider{mod(func(p *Provider) {
			p.WebhookRouting = &WebhookRouting{Signature: &WebhookSignature{Header: "X-Sig", Algorithm: "MD5", Encoding: "hex"}}
		})}, "webhook_routing.signature.algorithm", "unknown algorithm"},
		{"webhook key_value without key", []*Provider{mod(func(p *Provider) {
			p.WebhookRouting = &WebhookRouting{Signature: &WebhookSignature{Header: "X-Sig", Algorithm: "HMAC-SHA256", Encoding: "hex", Format: "key_value"}}
		})}, "webhook_routing.signature.signature_key", "required"},
		{"webhook undeclared key", []*Provider{mod(func(p *Provider) {
			p.WebhookRouting = &WebhookRouting{Connection: &WebhookConnection{Path: "a.b", ConnectionConfigKey: "nope"}}
		})}, "webhook_routing.connection.connection_config_key", "not declared"},
		{"webhook type bad source", []*Provider{mod(func(p *Provider) {
			p.WebhookRouting = &WebhookRouting{Type: &WebhookType{Source: "query", Path: "t"}}
		})}, "webhook_routing.type.source", "unknown source"},
		{"webhook type without path", []*Provider{mod(func(p *Provider) {
			p.WebhookRouting = &WebhookRouting{Type: &WebhookType{Source: "header"}}
		})}, "webhook_routing.type.path", "missing"},
		{"duplicate names", []*Provider{validProvider("acme"), validProvider("acme")}, "name", "duplicate"},
		{"alias to unknown", []*Provider{{Name: "a", Alias: "ghost"}}, "alias", `unknown provider "ghost"`},
		{"alias to itself", []*Provider{{Name: "a", Alias: "a"}}, "alias", "cannot alias itself"},
		{"alias cycle", []*Provider{{Name: "a", Alias: "b"}, {Name: "b", Alias: "a"}}, "alias", "alias cycle a -> b -> a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := NewCatalog(tt.providers...)
			if err == nil {
				t.Fatalf("NewCatalog succeeded with %d providers; want an error", c.Len())
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("error %v is not a *ValidationError", err)
			}
			if ve.Field != tt.wantField || !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("error = %v (field %q); want field %q and text %q", err, ve.Field, tt.wantField, tt.wantText)
			}
			if !strings.Contains(err.Error(), "provider ") {
				t.Errorf("error %v does not name the provider", err)
			}
		})
	}
	if _, err := NewCatalog(nil); err == nil {
		t.Error("NewCatalog(nil) succeeded")
	}
}

func TestValidateAcceptsTemplates(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		p    *Provider
	}{
		{"metadata placeholder", &Provider{Name: "a", DisplayName: "A", AuthMode: AuthModeOAuth2,
			AuthorizationURL: "https://a.example/auth", TokenURL: "https://a.example/token",
			TokenResponseMetadata: []string{"instance_url"}, Proxy: &Proxy{BaseURL: "${connectionConfig.instance_url}"}}},
		{"redirect placeholder", &Provider{Name: "a", DisplayName: "A", AuthMode: AuthModeOAuth2,
			AuthorizationURL: "https://a.example/auth", TokenURL: "https://a.example/token",
			RedirectURIMetadata: []string{"realmId"}, Proxy: &Proxy{BaseURL: "https://a.example/${connectionConfig.realmId}"}}},
		{"client credentials oauth2", &Provider{Name: "a", DisplayName: "A", AuthMode: AuthModeOAuth2,
			TokenURL: "https://a.example/token", TokenParams: map[string]string{"grant_type": "client_credentials"}}},
		{"basic implicit credentials", &Provider{Name: "a", DisplayName: "A", AuthMode: AuthModeBasic,
			Proxy: &Proxy{BaseURL: "https://a.example", Verification: &Verification{Endpoints: []string{"/u/${credentials.username}"}}}}},
		{"local http url", &Provider{Name: "a", DisplayName: "A", AuthMode: AuthModeOAuth2,
			AuthorizationURL: "http://127.0.0.1:8080/auth", TokenURL: "http://127.0.0.1:8080/token"}},
		{"two step", &Provider{Name: "a", DisplayName: "A", AuthMode: AuthModeTwoStep, TokenURL: "https://a.example/login",
			AuthDetails: AuthDetails{TokenResponse: &TokenResponse{Token: "token"}}}},
		{"two step raw response", &Provider{Name: "a", DisplayName: "A", AuthMode: AuthModeTwoStep, TokenURL: "https://a.example/login",
			AuthDetails: AuthDetails{TokenResponse: &TokenResponse{}},
			Proxy:       &Proxy{BaseURL: "https://a.example", Query: map[string]string{"account": "${credentials.raw.accountID}"}}}},
		{"outbound installation", &Provider{Name: "a", DisplayName: "A", AuthMode: AuthModeOAuth2, TokenURL: "https://a.example/token",
			AuthDetails: AuthDetails{Installation: "outbound"}}},
		{"integration config as credentials", &Provider{Name: "a", DisplayName: "A", AuthMode: AuthModeOAuth2CC, TokenURL: "https://a.example/token",
			TokenParams: map[string]string{"scope": "${credentials.scope}"},
			AuthDetails: AuthDetails{IntegrationConfig: map[string]FieldSpec{"scope": {Type: "string"}}}}},
		{"mcp generic", &Provider{Name: "a", DisplayName: "A", AuthMode: AuthModeMCPOAuth2Generic,
			ConnectionConfig: map[string]FieldSpec{"mcp_server_url": {Type: "string"}}}},
		{"relative logo", &Provider{Name: "a", DisplayName: "A", AuthMode: AuthModeNone, Logo: "/img/a.svg"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if err := tt.p.Validate(); err != nil {
				t.Errorf("Validate: %v", err)
			}
		})
	}
}

func TestWith(t *testing.T) {
	t.Parallel()
	base, err := NewCatalog(validProvider("a"), validProvider("b"))
	if err != nil {
		t.Fatal(err)
	}
	newB := validProvider("b")
	newB.DisplayName = "New B"
	c, err := base.With(validProvider("c"), newB, &Provider{Name: "d", Alias: "a", DisplayName: "D"})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(c.List()); !slices.Equal(got, []string{"a", "b", "c", "d"}) {
		t.Errorf("With order = %v; want replacements in place and additions appended", got)
	}
	if b, _ := c.Get("b"); b.DisplayName != "New B" {
		t.Errorf("b not replaced: %q", b.DisplayName)
	}
	if b, _ := base.Get("b"); b.DisplayName != "B" || base.Len() != 2 {
		t.Errorf("With changed the original catalogue")
	}
	d, _ := c.Get("d")
	if d.TokenURL != "https://a.example/token" || d.Logo != "/providers/d/logo.svg" || d.DisplayName != "D" {
		t.Errorf("d did not inherit from a: %+v", d)
	}
	if _, err := base.With(validProvider("x"), validProvider("x")); err == nil {
		t.Error("With accepted duplicate names")
	}
	if _, err := base.With(&Provider{Name: "bad"}); err == nil {
		t.Error("With accepted an invalid provider")
	}
}

func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	c := defaultCatalog(t)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 50 {
				p, _ := c.Get("github")
				_ = p.API()
				_ = c.Search([]string{"git", "google", "crm", "a"}[(i+j)%4])
				_ = c.List()
			}
		})
	}
	wg.Wait()
}

func TestInterpolate(t *testing.T) {
	t.Parallel()
	vars := TemplateVars{
		ConnectionConfig: map[string]string{"subdomain": "acme", "region": "", "api_domain": "https://acme.pipedrive.com"},
		Credentials:      map[string]string{"username": "AC123", "apiKey": "from-credentials"},
		APIKey:           "sk-1",
		AccessToken:      "tok",
		ClientID:         "cid",
	}
	tests := []struct {
		tmpl    string
		vars    *TemplateVars // nil: the vars above
		want    string
		missing []string // a *MissingValueError with these names
		wantErr string   // another error containing this
	}{
		{tmpl: "", want: ""},
		{tmpl: "https://api.example.com", want: "https://api.example.com"},
		{tmpl: "costs $5 {each}", want: "costs $5 {each}"},
		{tmpl: "https://${connectionConfig.subdomain}.zendesk.com", want: "https://acme.zendesk.com"},
		{tmpl: "Bearer ${apiKey}", want: "Bearer sk-1"},
		{tmpl: "Bearer ${ apiKey }", want: "Bearer sk-1"},
		{tmpl: "${apiKey}", vars: &TemplateVars{Credentials: map[string]string{"apiKey": "k2"}}, want: "k2"},
		{tmpl: "${accessToken}/${clientId}", want: "tok/cid"},
		{tmpl: "/Accounts/${credentials.username}.json", want: "/Accounts/AC123.json"},
		{tmpl: "${connectionConfig.api_domain}/api", want: "https://acme.pipedrive.com/api"},
		{tmpl: "https://api.${connectionConfig.region}.intercom.io || https://api.intercom.io", want: "https://api.intercom.io"},
		{tmpl: "https://api.${connectionConfig.subdomain}.io||https://fallback.io", want: "https://api.acme.io"},
		{tmpl: "https://${connectionConfig.x}.io || ${connectionConfig.api_domain} || https://z.io", want: "https://acme.pipedrive.com"},
		{tmpl: "https://${connectionConfig.x}.io || https://${connectionConfig.y}.io", missing: []string{"connectionConfig.x", "connectionConfig.y"}},
		{tmpl: "https://${connectionConfig.region}.example", missing: []string{"connectionConfig.region"}},
		{tmpl: "${clientSecret}", missing: []string{"clientSecret"}},
		{tmpl: "${ apiKey}", vars: &TemplateVars{}, missing: []string{"apiKey"}},
		{tmpl: "a ${apiKey", wantErr: "unterminated"},
		{tmpl: "${}", wantErr: "empty placeholder"},
		{tmpl: "${now+1}", wantErr: "needs a unit"},
		{tmpl: "${now:YYYY${apiKey}}", wantErr: `cannot hold "${"`},
		{tmpl: "${sha256Hex(a, b)}", wantErr: "sha256Hex takes 1 argument, not 2"},
		{tmpl: "${connectionConfig.}", wantErr: "bad placeholder"},
		{tmpl: "ok || ${nope}", wantErr: `unknown variable "nope"`},
		{tmpl: "value with ${apiKey} inside ${apiKey}", want: "value with sk-1 inside sk-1"},
	}
	for _, tt := range tests {
		t.Run(tt.tmpl, func(t *testing.T) {
			t.Parallel()
			v := vars
			if tt.vars != nil {
				v = *tt.vars
			}
			got, err := Interpolate(tt.tmpl, v)
			switch {
			case tt.missing != nil:
				var me *MissingValueError
				if !errors.As(err, &me) {
					t.Fatalf("Interpolate = %q, %v; want a *MissingValueError", got, err)
				}
				if diff := cmp.Diff(tt.missing, me.Names); diff != "" {
					t.Errorf("missing names (-want +got):\n%s", diff)
				}
				if !strings.Contains(err.Error(), tt.missing[0]) {
					t.Errorf("error %q does not name %s", err, tt.missing[0])
				}
			case tt.wantErr != "":
				var me *MissingValueError
				if err == nil || errors.As(err, &me) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("Interpolate error = %v; want one containing %q", err, tt.wantErr)
				}
			default:
				if err != nil || got != tt.want {
					t.Errorf("Interpolate = %q, %v; want %q", got, err, tt.want)
				}
			}
		})
	}
}

func TestInterpolateDoesNotReexpand(t *testing.T) {
	t.Parallel()
	got, err := Interpolate("${apiKey}", TemplateVars{APIKey: "${accessToken} || x", AccessToken: "secret"})
	if err != nil || got != "${accessToken} || x" {
		t.Errorf("Interpolate = %q, %v; want the value inserted as is", got, err)
	}
}

func TestPlaceholders(t *testing.T) {
	t.Parallel()
	got, err := Placeholders("https://${connectionConfig.a}.x/${apiKey} || ${connectionConfig.a} ${credentials.u}")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"connectionConfig.a", "apiKey", "credentials.u"}, got); diff != "" {
		t.Errorf("Placeholders (-want +got):\n%s", diff)
	}
}

// FuzzInterpolate checks that Interpolate never panics, leaves plain text
// alone, and fails whenever Placeholders does.
func FuzzInterpolate(f *testing.F) {
	for _, s := range []string{
		"", "plain", "${apiKey}", "https://${connectionConfig.subdomain}.x.com || https://x.com", "${", "}${}",
		"${credentials.username}:${credentials.password}", "||", " || ${accessToken} ||", "${connectionConfig.}",
		"$${apiKey}}", "${ clientId }${clientSecret}", "\xff${apiKey\x00}",
	} {
		f.Add(s, "v")
	}
	f.Fuzz(func(t *testing.T, tmpl, value string) {
		vars := TemplateVars{
			ConnectionConfig: map[string]string{"subdomain": value, "region": ""},
			Credentials:      map[string]string{"username": value, "password": value},
			APIKey:           value,
			AccessToken:      value,
		}
		out, err := Interpolate(tmpl, vars)
		if !strings.Contains(tmpl, "${") && !strings.Contains(tmpl, "||") && (err != nil || out != tmpl) {
			t.Fatalf("Interpolate(%q) = %q, %v; want the template unchanged", tmpl, out, err)
		}
		if _, perr := Placeholders(tmpl); perr != nil && err == nil {
			t.Fatalf("Placeholders(%q) failed (%v) but Interpolate succeeded", tmpl, perr)
		}
		var me *MissingValueError
		if errors.As(err, &me) && len(me.Names) == 0 {
			t.Fatalf("MissingValueError without names for %q", tmpl)
		}
	})
}

func TestAPIGolden(t *testing.T) {
	t.Parallel()
	c := defaultCatalog(t)
	p, ok := c.Get("github")
	if !ok {
		t.Fatal("github missing")
	}
	got, err := json.MarshalIndent(p.API(), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	golden := filepath.Join("testdata", "github.golden.json")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("GET /providers/github body (-want +got):\n%s", diff)
	}
}

func TestAPIForm(t *testing.T) {
	t.Parallel()
	c := defaultCatalog(t)
	for _, p := range c.List() {
		a := p.API()
		if a.Name != p.Name || a.LogoURL == "" || a.Categories == nil || a.AuthMode == "" {
			t.Errorf("%s: incomplete wire form %+v", p.Name, a)
		}
		b, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"name", "display_name", "logo_url", "auth_mode", "categories"} {
			if _, ok := m[k]; !ok {
				t.Errorf("%s: wire form lacks %q", p.Name, k)
			}
		}
		if _, ok := m["webhook_routing"]; ok {
			t.Errorf("%s: wire form exposes webhook_routing", p.Name)
		}
	}
	// The wire form shares nothing with the catalogue.
	p, _ := c.Get("openai")
	a := p.API()
	a.Proxy.Headers["Authorization"] = "changed"
	a.Credentials["apiKey"] = FieldSpec{}
	if p.Proxy.Headers["Authorization"] != "Bearer ${apiKey}" || p.Credentials["apiKey"].Title != "API Key" {
		t.Error("API shares maps with the catalogue")
	}
	// A provider without categories still serves an array.
	if b, _ := json.Marshal((&Provider{Name: "x"}).API()); !strings.Contains(string(b), `"categories":[]`) {
		t.Errorf("categories not an array: %s", b)
	}
}

func TestClone(t *testing.T) {
	t.Parallel()
	c := defaultCatalog(t)
	for _, p := range c.List() {
		cl := p.Clone()
		if diff := cmp.Diff(p, cl, cmp.AllowUnexported(Provider{})); diff != "" {
			t.Fatalf("%s: Clone differs:\n%s", p.Name, diff)
		}
	}
	p, _ := c.Get("github")
	cl := p.Clone()
	cl.Proxy.Retry.At[0] = "changed"
	cl.WebhookRouting.Signature.Header = "changed"
	cl.ConnectionConfig["x"] = FieldSpec{}
	if p.Proxy.Retry.At[0] != "x-ratelimit-reset" || p.WebhookRouting.Signature.Header != "X-Hub-Signature-256" || len(p.ConnectionConfig) != 1 {
		t.Error("Clone shares state with the original")
	}
	if (*Provider)(nil).Clone() != nil {
		t.Error("Clone of nil is not nil")
	}
}
