package connections

import (
	"net/url"
	"strings"

	"github.com/embedauth/connect/integrations"
)

// Plugin installations (auth mode INSTALL_PLUGIN, Crisp's for one): the
// popup sends the end user to the integration's install link with the
// flow's state; the provider's marketplace installs the plugin and sends
// the end user back to the callback with the values the provider's
// redirect_uri_metadata names (Crisp: website_id), which become connection
// config. The plugin's requests are then authorized with the
// integration's own plugin credentials: for auth_type BASIC, the
// integration's custom values username (the plugin identifier) and
// password (the plugin key), stored as BASIC credentials, as Nango does.

// Integration custom keys of an INSTALL_PLUGIN integration.
const (
	PluginCustomAppLink  = "app_link"
	PluginCustomUsername = "username"
	PluginCustomPassword = "password"
)

// pluginClient fills c from an INSTALL_PLUGIN integration: the install
// link (its custom app_link, or its credentials' app link) and, for
// auth_type BASIC, its plugin credentials.
func pluginClient(p *integrations.Provider, it *integrations.Integration, c *oauthClient, key string) error {
	if v := it.Custom[PluginCustomAppLink]; v != "" {
		c.appLink = v
	}
	if c.appLink == "" {
		return flowErr(FlowErrProviderConfig, "The integration %q has no install link (custom app_link).", key)
	}
	if u, err := url.Parse(c.appLink); err != nil || u.Scheme != "https" && u.Scheme != "http" || u.Host == "" || u.User != nil {
		return flowErr(FlowErrProviderConfig, "The install link of integration %q is not an absolute http(s) URL.", key)
	}
	if pluginAuthType(p) == integrations.AuthModeBasic && it.Custom[PluginCustomUsername] == "" {
		return flowErr(FlowErrProviderConfig, "The integration %q needs its plugin credentials (custom username and password).", key)
	}
	return nil
}

func pluginAuthType(p *integrations.Provider) string {
	if p.AuthType == "" {
		return integrations.AuthModeBasic
	}
	return p.AuthType
}

// finishPlugin completes a plugin installation: every value the provider's
// redirect_uri_metadata names must have come back (finish put them in
// cfg), and the credentials are the integration's plugin credentials.
func (ss *Sessions) finishPlugin(p *integrations.Provider, it *integrations.Integration, cfg map[string]any) (*Credentials, error) {
	for _, k := range p.RedirectURIMetadata {
		if v, _ := cfg[k].(string); strings.TrimSpace(v) == "" {
			return nil, flowErr(FlowErrCallback, "The provider sent the end user back without %s.", k)
		}
	}
	switch pluginAuthType(p) {
	case integrations.AuthModeBasic:
		u, pw := it.Custom[PluginCustomUsername], it.Custom[PluginCustomPassword]
		if u == "" {
			return nil, flowErr(FlowErrProviderConfig, "The integration %q needs its plugin credentials (custom username and password).", it.UniqueKey)
		}
		return &Credentials{Type: integrations.AuthModeBasic, Username: u, Password: pw}, nil
	case integrations.AuthModeAPIKey:
		k := it.Custom["api_key"]
		if k == "" {
			return nil, flowErr(FlowErrProviderConfig, "The integration %q needs its plugin API key (custom api_key).", it.UniqueKey)
		}
		return &Credentials{Type: integrations.AuthModeAPIKey, APIKey: k}, nil
	}
	return &Credentials{Type: integrations.AuthModeNone}, nil
}
