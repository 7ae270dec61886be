package connections

import (
	"encoding/json"
	"fmt"

	"github.com/embedauth/connect/egress"
	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/internal/httpapi"
)

// Imports (POST /connections) of the popup modes MCP_OAUTH2,
// MCP_OAUTH2_GENERIC, CUSTOM and INSTALL_PLUGIN.

// importTypeFits reports whether nested import credentials of type typ fit
// a provider of auth mode mode although they differ: MCP connections hold
// OAUTH2 credentials, plugin installations BASIC (or API_KEY) ones.
func importTypeFits(mode, typ string) bool {
	switch mode {
	case integrations.AuthModeMCPOAuth2, integrations.AuthModeMCPOAuth2Generic:
		return typ == integrations.AuthModeOAuth2
	case integrations.AuthModeInstallPlugin:
		return typ == integrations.AuthModeBasic || typ == integrations.AuthModeAPIKey || typ == integrations.AuthModeNone
	}
	return false
}

// importRegistered reads the client and token endpoint of an imported
// MCP_OAUTH2_GENERIC connection from its connection config, in Nango's
// keys: oauth_metadata (a JSON object with token_endpoint),
// oauth_client_info (a JSON object with client_id, and client_secret for
// a confidential client) and oauth_resource_url. The refresh uses them.
func importRegistered(c *Credentials, cfg map[string]any) error {
	meta, _ := cfg["oauth_metadata"].(string)
	info, _ := cfg["oauth_client_info"].(string)
	server, _ := cfg[ConfigMCPServerURL].(string)
	if server == "" || meta == "" || info == "" {
		return httpapi.InvalidField("must hold mcp_server_url, oauth_metadata and oauth_client_info for MCP_OAUTH2_GENERIC connections", "connection_config")
	}
	var m struct {
		TokenEndpoint string `json:"token_endpoint"`
	}
	var ci struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
	}
	if json.Unmarshal([]byte(meta), &m) != nil || m.TokenEndpoint == "" {
		return httpapi.InvalidField("must be a JSON object with token_endpoint", "connection_config", "oauth_metadata")
	}
	if json.Unmarshal([]byte(info), &ci) != nil || ci.ClientID == "" {
		return httpapi.InvalidField("must be a JSON object with client_id", "connection_config", "oauth_client_info")
	}
	// Plain http is accepted for a loopback host only, which the egress
	// policy refuses at dial time unless it allows loopback (tests).
	loose := egress.Policy{AllowLoopback: true}
	if err := checkMCPURL(m.TokenEndpoint, loose); err != nil {
		return httpapi.InvalidField(fmt.Sprintf("token_endpoint cannot be used: %s", err), "connection_config", "oauth_metadata")
	}
	if err := checkMCPURL(server, loose); err != nil {
		return httpapi.InvalidField(fmt.Sprintf("cannot be used: %s", err), "connection_config", ConfigMCPServerURL)
	}
	resource, _ := cfg["oauth_resource_url"].(string)
	c.Registered = &RegisteredClient{ClientID: ci.ClientID, ClientSecret: ci.ClientSecret, TokenEndpoint: m.TokenEndpoint, Resource: resource}
	return nil
}

// checkCustomImport checks nested CUSTOM credentials: the app's
// installation token is required, the user's token optional.
func checkCustomImport(c *Credentials, req func(v, field string) error) error {
	if c.App == nil {
		return req("", "app")
	}
	c.App.Type = integrations.AuthModeApp
	c.App.ObtainedAt = nil
	if err := req(c.App.AccessToken, "app.access_token"); err != nil {
		return err
	}
	if c.User != nil {
		c.User.Type = integrations.AuthModeOAuth2
		c.User.ObtainedAt = nil
		if err := req(c.User.AccessToken, "user.access_token"); err != nil {
			return err
		}
	}
	if c.ExpiresAt == nil {
		c.ExpiresAt = cloneTime(c.App.ExpiresAt)
	}
	return nil
}

// nestedRegistered replaces what nested import credentials say about a
// registered client: only an MCP_OAUTH2_GENERIC connection has one, read
// from its connection config like a flat import's.
func nestedRegistered(mode string, c *Credentials, cfg map[string]any) error {
	c.Registered = nil
	if mode == integrations.AuthModeMCPOAuth2Generic && c.Type == integrations.AuthModeOAuth2 {
		return importRegistered(c, cfg)
	}
	return nil
}
