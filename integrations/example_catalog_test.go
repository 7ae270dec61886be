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
`
	providers, err := integrations.Load(strings.NewReader(doc))
	if err != nil {
		log.Fatal(err)
	}
	// Keep the entries this package can serve and add them to the
	// embedded catalogue.
	var valid []*integrations.Provider
	for _, p := range providers {
		if err := p.Validate(); err != nil {
			fmt.Println("skipped:", err)
			continue
		}
		valid = append(valid, p)
	}
	def, err := integrations.DefaultCatalog()
	if err != nil {
		log.Fatal(err)
	}
	catalog, err := def.With(valid...)
	if err != nil {
		log.Fatal(err)
	}
	acme, _ := catalog.Get("acme")
	fmt.Println(acme.DisplayName, acme.Proxy.Headers["authorization"])
	// Output:
	// skipped: integrations: provider "acme-mcp": auth_mode: unknown auth mode "MCP_OAUTH2"
	// Acme Bearer ${apiKey}
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
