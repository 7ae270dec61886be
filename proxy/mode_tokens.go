package proxy

import (
	"strings"

	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/integrations"
)

// tokenVars sets the template values of token-mode credentials (TWO_STEP,
// JWT, SIGNATURE, BILL): ${accessToken} and ${token} are the token, and
// ${credentials.NAME} the inputs (see Credentials.TemplateCredentials).
func tokenVars(v *integrations.TemplateVars, cr *connections.Credentials) {
	v.AccessToken = cr.Token
	if v.Extra == nil {
		v.Extra = map[string]any{}
	}
	v.Extra["token"] = cr.Token
	for k, s := range cr.TemplateCredentials() {
		if _, raw := v.Credentials[k]; !raw || s != "" {
			v.Credentials[k] = s
		}
	}
	// ${credentials.token} is the token, as in Nango's stored credentials
	// (tripletex's Basic header).
	if cr.Token != "" {
		v.Credentials["token"] = cr.Token
	}
}

// tokenBearer reports whether requests of token-mode credentials carry
// "Authorization: Bearer <token>" before the provider's header templates
// apply, as Nango sends it: always for JWT and SIGNATURE, for TWO_STEP
// unless a header template uses ${accessToken}. A credential without a
// token sends none.
func tokenBearer(p *integrations.Provider, cr *connections.Credentials) bool {
	if cr.Token == "" {
		return false
	}
	if cr.Type != integrations.AuthModeTwoStep || p.Proxy == nil {
		return true
	}
	for _, h := range p.Proxy.Headers {
		if strings.Contains(h, "${accessToken}") {
			return false
		}
	}
	return true
}
