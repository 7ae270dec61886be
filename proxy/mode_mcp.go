package proxy

import "github.com/embedauth/connect/integrations"

// mcpServerURLTemplate is the base URL of an MCP_OAUTH2_GENERIC connection
// whose provider names none (Nango's mcp-generic entry has no
// proxy.base_url): the MCP server URL the end user gave at connect time
// (connection config mcp_server_url).
//
// It is rendered as a base URL template is, by Provider.RenderURL: the
// value supplies the whole origin, so it must be an absolute http or https
// URL without user info, query or fragment, and the egress policy still
// decides which addresses may be reached. Letting the end user choose this
// host is safe because of what goes there: the connection's own
// credentials, which the MCP server's authorization server issued to a
// client registered for this connection alone (generic flows register a
// public client per connection, and the token endpoint is the discovered
// one stored sealed). No integration secret, and no credential of another
// connection, is ever sent to it.
const mcpServerURLTemplate = "${connectionConfig.mcp_server_url}"

// baseURLTemplate is the provider's proxy base URL template, or for an
// MCP_OAUTH2_GENERIC provider without one, mcpServerURLTemplate; "" when
// there is none.
func baseURLTemplate(p *integrations.Provider) string {
	if p.Proxy != nil && p.Proxy.BaseURL != "" {
		return p.Proxy.BaseURL
	}
	if p.AuthMode == integrations.AuthModeMCPOAuth2Generic {
		return mcpServerURLTemplate
	}
	return ""
}
