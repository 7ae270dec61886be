package integrations_test

import (
	"fmt"
	"log"
	"strings"

	"github.com/embedauth/connect/integrations"
)

func ExampleCatalog_Search() {
	catalog, err := integrations.DefaultCatalog()
	if err != nil {
		log.Fatal(err)
	}
	// Case, spaces and dashes do not matter.
	for _, p := range catalog.Search("git hub") {
		fmt.Println(p.Name, p.AuthMode)
	}
	// Output:
	// github OAUTH2
	// github-app APP
	// github-pat API_KEY
}

func ExampleInterpolate() {
	p := &integrations.Provider{Proxy: &integrations.Proxy{
		BaseURL: "https://api.${connectionConfig.region}.intercom.io || https://api.intercom.io",
	}}
	for _, region := range []string{"eu", ""} {
		u, err := integrations.Interpolate(p.Proxy.BaseURL, integrations.TemplateVars{
			ConnectionConfig: map[string]string{"region": region},
		})
		fmt.Println(u, err)
	}
	_, err := integrations.Interpolate("https://${connectionConfig.subdomain}.zendesk.com", integrations.TemplateVars{})
	fmt.Println(err)
	// Output:
	// https://api.eu.intercom.io <nil>
	// https://api.intercom.io <nil>
	// integrations: template "https://${connectionConfig.subdomain}.zendesk.com": no value for connectionConfig.subdomain
}

func ExampleLoad() {
	// A document in the format of Nango's providers.yaml.
	doc := `
acme:
    display_name: Acme
    auth_mode: API_KEY
    proxy:
        base_url: https://api.acme.example
        headers:
            authorization: Bearer ${apiKey}
    credentials:
        apiKey:
            type: string
            title: API Key
            secret: true
    some_field_we_ignore: true
acme-mcp:
    display_name: Acme MCP
    auth_mode: MCP_OAUTH2
    client_registration: dynamic
    authorization_url: https://mcp.acme.example/authorize
    token_url: https://mcp.acme.example/token
acme-beta:
    display_name: Acme Beta
    auth_mode: QUANTUM
`
	providers, err := integrations.Load(strings.NewReader(doc))
	if err != nil {
		log.Fatal(err) // the document itself is unreadable
	}
	def, err := integrations.DefaultCatalog()
	if err != nil {
		log.Fatal(err)
	}
	// A lenient build keeps every provider; the bad ones are listed but
	// unusable. Set Strict to fail on any problem instead (for CI).
	catalog, err := integrations.BuildCatalog(def, integrations.BuildOptions{}, providers...)
	if err != nil {
		log.Fatal(err)
	}
	for _, u := range catalog.Problems() {
		fmt.Println("unusable:", u.Provider, "-", u.Reason())
	}
	acme, _ := catalog.Get("acme")
	fmt.Println(acme.DisplayName, acme.Proxy.Headers["authorization"])
	_, ok := catalog.Get("acme-beta")
	listed, _ := catalog.Lookup("acme-beta")
	fmt.Println(ok, listed.DisplayName)
	// Output:
	// unusable: acme-mcp - registration_url: required for client_registration dynamic
	// unusable: acme-beta - auth_mode: unknown auth mode "QUANTUM"
	// Acme Bearer ${apiKey}
	// false Acme Beta
}

// Build a provider's URL for one connection: each value stays in its place,
// so a value that would move the request to another host is refused.
func ExampleProvider_RenderURL() {
	catalog, err := integrations.DefaultCatalog()
	if err != nil {
		log.Fatal(err)
	}
	zendesk, _ := catalog.Get("zendesk")
	for _, sub := range []string{"acme", "evil.example/x?"} {
		u, err := zendesk.RenderURL(zendesk.TokenURL, integrations.TemplateVars{
			ConnectionConfig: map[string]string{"subdomain": sub},
		})
		fmt.Println(u, err)
	}
	// Output:
	// https://acme.zendesk.com/oauth/tokens <nil>
	// <nil> integrations: the value of ${connectionConfig.subdomain} cannot be used in the host of the URL: must be part of a host name: letters, digits, '-' and '.' only (no '@', '/', ':', '?', '#', '\', '%' or port)
}
