package connections

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/embedauth/connect/integrations"
)

// GitHub App OAuth (auth mode CUSTOM): one popup installs the app and
// authorizes the end user. The provider's authorization URL is the app's
// installation page (from the integration's app link); GitHub sends the
// end user back with the installation id and, when the app asks for user
// authorization during installation, a code. The connection holds both
// tokens, as Nango's combined credentials {type: CUSTOM, app, user}: the
// app's installation token, minted like an APP connection's with the
// token URL of mode APP, and the user's OAuth token, exchanged with the
// token URL of mode OAUTH2 and the integration's client. Requests through
// the proxy carry the installation token.

// GrantCustom is the grant of a CUSTOM connection's refreshes: a new
// installation token, and a refreshed user token when it expires soon.
const GrantCustom = "custom"

// customUserRefreshWindow: a CUSTOM connection's refresh also refreshes the
// user token when that expires within this window (installation tokens
// live an hour, GitHub's expiring user tokens eight).
const customUserRefreshWindow = 2 * time.Hour

// checkCustomClient checks that a CUSTOM integration has both its app
// credentials and its OAuth client.
func checkCustomClient(c *oauthClient, key string) error {
	if c.appID == "" || c.privateKey == "" || c.appLink == "" {
		return flowErr(FlowErrProviderConfig, "The integration %q needs its app credentials (app_id, app_link, private_key).", key)
	}
	if _, err := parseRSAKey(c.privateKey); err != nil {
		return flowErr(FlowErrProviderConfig, "The private key of integration %q is not an RSA key in PEM form.", key)
	}
	if u, err := url.Parse(c.appLink); err != nil || u.Scheme != "https" && u.Scheme != "http" || u.Host == "" {
		return flowErr(FlowErrProviderConfig, "The app link of integration %q is not an absolute URL.", key)
	}
	if c.id == "" || c.secret == "" {
		return flowErr(FlowErrProviderConfig, "The integration %q needs its OAuth client (client_id, client_secret).", key)
	}
	return nil
}

// installURL is the page a CUSTOM or INSTALL_PLUGIN flow sends the end user
// to, with the flow's state.
func installURL(p *integrations.Provider, client *oauthClient, vars integrations.TemplateVars, state string) (string, error) {
	var u *url.URL
	if p.AuthMode == integrations.AuthModeInstallPlugin {
		var err error
		if u, err = url.Parse(client.appLink); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
			return "", flowErr(FlowErrProviderConfig, "The install link of the integration is not an absolute http(s) URL.")
		}
	} else {
		if p.AuthorizationURL == "" {
			return "", flowErr(FlowErrProviderConfig, "The provider %q has no authorization URL.", p.Name)
		}
		var err error
		if u, err = p.RenderURL(p.AuthorizationURL, vars.Stable()); err != nil {
			return "", flowURLError(err, p, "the authorization URL")
		}
	}
	q := u.Query()
	q.Set("state", state)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// customProvider returns p with the token URL of mode.
func customProvider(p *integrations.Provider, mode string) (*integrations.Provider, error) {
	tu := p.TokenURLs[mode]
	if tu == "" {
		return nil, fmt.Errorf("the provider %q has no token URL for %s", p.Name, mode)
	}
	cp := *p
	cp.TokenURL = tu
	return &cp, nil
}

// finishCustom completes a CUSTOM flow: the installation id and code of
// the callback become the app's installation token and the user's token.
func (ss *Sessions) finishCustom(ctx context.Context, p *integrations.Provider, client *oauthClient, cfg map[string]any, f *OAuthFlow, query url.Values) (*Credentials, error) {
	if id := query.Get("installation_id"); id != "" {
		cfg["installation_id"] = id
	}
	id, _ := cfg["installation_id"].(string)
	if id == "" {
		return nil, flowErr(FlowErrCallback, "The provider sent the end user back without an installation id.")
	}
	if strings.TrimLeft(id, "0123456789") != "" || len(id) > 20 {
		return nil, flowErr(FlowErrCallback, "The installation id %q is not a number.", sanitize(id, 40, nil))
	}
	code := query.Get("code")
	if code == "" {
		return nil, flowErr(FlowErrCallback, "The provider sent the end user back without an authorization code: the app must request user authorization during installation.")
	}
	if len(code) > 4096 {
		return nil, flowErr(FlowErrCallback, "The authorization code is too long.")
	}
	appProv, err := customProvider(p, integrations.AuthModeApp)
	if err != nil {
		return nil, flowErr(FlowErrProviderConfig, "%s.", err)
	}
	userProv, err := customProvider(p, integrations.AuthModeOAuth2)
	if err != nil {
		return nil, flowErr(FlowErrProviderConfig, "%s.", err)
	}
	// The user's token first: a code works once and expires soon.
	tr, err := ss.cc.post(ctx, tokenRequest{
		provider:     userProv,
		endpoint:     userProv.TokenURL,
		vars:         integrations.TemplateVars{ConnectionConfig: stringMap(cfg), ClientID: client.id, ClientSecret: client.secret},
		form:         url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {ss.cfg.CallbackURL}},
		clientID:     client.id,
		clientSecret: client.secret,
		secrets:      []string{code, client.secret},
	})
	if err != nil {
		return nil, tokenFlowError(err, "The provider refused the user authorization")
	}
	now := ss.conns.nowUTC()
	user := mergeTokens(&Credentials{Type: integrations.AuthModeOAuth2}, tr, "authorization_code", now)
	atr, err := ss.cc.appToken(ctx, appProv, client.appID, client.privateKey, stringMap(cfg))
	if err != nil {
		return nil, tokenFlowError(err, "The provider refused the app installation token")
	}
	app := mergeTokens(&Credentials{Type: integrations.AuthModeApp}, atr, GrantAppInstallation, now)
	return combineCustom(app, user), nil
}

// combineCustom returns CUSTOM credentials of an app and a user token. The
// outer expiry is the earlier of the two renewable tokens', so that the
// connection is refreshed when either needs it.
func combineCustom(app, user *Credentials) *Credentials {
	c := &Credentials{Type: integrations.AuthModeCustom, App: app, User: user}
	c.ExpiresAt, c.ObtainedAt = cloneTime(app.ExpiresAt), cloneTime(app.ObtainedAt)
	if user != nil && user.RefreshToken != "" && user.ExpiresAt != nil && (c.ExpiresAt == nil || user.ExpiresAt.Before(*c.ExpiresAt)) {
		c.ExpiresAt, c.ObtainedAt = cloneTime(user.ExpiresAt), cloneTime(user.ObtainedAt)
	}
	return c
}

// customToken renews a CUSTOM connection's tokens: a new installation
// token, and the user token when it can be refreshed and expires within
// customUserRefreshWindow. The result rides in TokenResponse.Combined.
func (r *refresher) customToken(ctx context.Context, p *integrations.Provider, c *Connection) (*TokenResponse, error) {
	creds := c.Credentials
	if r.cfg.AppCredentials == nil {
		return nil, &RefreshError{Description: "no app credentials are configured"}
	}
	appID, key, err := r.cfg.AppCredentials(ctx, c.EnvironmentID, c.IntegrationKey)
	if err != nil {
		return nil, fmt.Errorf("connections: app credentials of integration %q: %w", c.IntegrationKey, err)
	}
	appProv, err := customProvider(p, integrations.AuthModeApp)
	if err != nil {
		return nil, &RefreshError{Description: err.Error()}
	}
	now := r.s.nowUTC()
	user := creds.User
	if user != nil && user.RefreshToken != "" && user.ExpiresAt != nil && user.ExpiresAt.Before(now.Add(customUserRefreshWindow)) {
		userProv, err := customProvider(p, integrations.AuthModeOAuth2)
		if err != nil {
			return nil, &RefreshError{Description: err.Error()}
		}
		id, secret, err := r.client(ctx, c)
		if err != nil {
			return nil, err
		}
		utr, err := r.post(ctx, tokenRequest{
			provider:     userProv,
			endpoint:     userProv.TokenURL,
			vars:         integrations.TemplateVars{ConnectionConfig: stringMap(c.ConnectionConfig), ClientID: id, ClientSecret: secret},
			form:         url.Values{"grant_type": {GrantRefreshToken}, "refresh_token": {user.RefreshToken}},
			clientID:     id,
			clientSecret: secret,
			secrets:      []string{user.RefreshToken, user.AccessToken, secret},
		})
		if err != nil {
			return nil, err
		}
		user = mergeTokens(user, utr, GrantRefreshToken, now)
	}
	atr, err := r.appToken(ctx, appProv, appID, key, stringMap(c.ConnectionConfig))
	if err != nil {
		return nil, err
	}
	app := &Credentials{Type: integrations.AuthModeApp}
	if creds.App != nil {
		app = creds.App
	}
	app = mergeTokens(app, atr, GrantAppInstallation, now)
	out := combineCustom(app, user)
	out.ConfigOverride = creds.ConfigOverride
	return &TokenResponse{AccessToken: atr.AccessToken, ExpiresIn: atr.ExpiresIn, Raw: atr.Raw, Combined: out}, nil
}

// apiCustomCredentials is the wire form of CUSTOM credentials: Nango's
// {type: CUSTOM, app: AppCredentials, user: OAuth2Credentials | null, raw}.
func apiCustomCredentials(c *Credentials, withRefreshToken bool) *APICredentialsBody {
	m := &APICredentialsBody{Type: c.Type, Raw: &map[string]any{}}
	if c.App != nil {
		m.App = APICredentials(c.App, withRefreshToken)
	}
	var user *APICredentialsBody
	if c.User != nil {
		user = APICredentials(c.User, withRefreshToken)
	}
	m.User = &user
	return m
}
