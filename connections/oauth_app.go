package connections

import (
	"context"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/embedauth/connect/egress"
	"github.com/embedauth/connect/integrations"
)

// GitHub App installations (auth mode APP): the integration holds the
// app's id and RSA private key; a connection is one installation. Its
// token is an installation access token, minted by POSTing to the
// provider's token URL with a short-lived RS256 JWT signed by the app key
// (RFC 7519; iss = app id). Tokens live an hour and are re-minted the way
// OAuth 2 tokens are refreshed.

// GrantAppInstallation is the grant of an APP connection's token requests.
const GrantAppInstallation = "app_installation"

// appJWTLifetime is the lifetime of an app JWT: GitHub accepts at most ten
// minutes.
const appJWTLifetime = 9 * time.Minute

// parseRSAKey parses an RSA private key in PEM form (PKCS #1 or PKCS #8),
// also when the whole PEM text was base64-encoded once more, as some
// dashboards store it.
func parseRSAKey(s string) (*rsa.PrivateKey, error) {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "-----BEGIN") {
		if b, err := base64.StdEncoding.DecodeString(s); err == nil {
			s = strings.TrimSpace(string(b))
		}
	}
	// Keys pasted into a single-line field often carry literal "\n".
	s = strings.ReplaceAll(s, `\n`, "\n")
	block, _ := pem.Decode([]byte(s))
	if block == nil {
		return nil, errors.New("not a PEM block")
	}
	if k, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, errors.New("not an RSA private key in PKCS #1 or PKCS #8 form")
	}
	rk, ok := k.(*rsa.PrivateKey)
	if !ok {
		return nil, errors.New("not an RSA private key")
	}
	return rk, nil
}

// appJWT returns the RS256 JWT that authenticates the app: issued 60
// seconds in the past (clock skew), expiring within ten minutes.
func appJWT(appID string, key *rsa.PrivateKey, now time.Time) (string, error) {
	t := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.RegisteredClaims{
		Issuer:    appID,
		IssuedAt:  jwt.NewNumericDate(now.Add(-time.Minute)),
		ExpiresAt: jwt.NewNumericDate(now.Add(appJWTLifetime)),
	})
	return t.SignedString(key)
}

// appToken mints an installation token: POST to the provider's token URL
// (filled from the connection config, which holds installation_id) with
// the app JWT as bearer. GitHub answers {"token": ..., "expires_at": ...}.
// Every failure is a *RefreshError.
func (r *refresher) appToken(ctx context.Context, p *integrations.Provider, appID, privateKey string, cfg map[string]string) (*TokenResponse, error) {
	if appID == "" || privateKey == "" {
		return nil, &RefreshError{Description: "the integration has no app id or private key"}
	}
	key, err := parseRSAKey(privateKey)
	if err != nil {
		return nil, &RefreshError{Description: "the integration's private key is not an RSA key in PEM form"}
	}
	u, err := p.RenderURL(p.TokenURL, integrations.TemplateVars{ConnectionConfig: cfg})
	if err != nil {
		return nil, tokenURLError(err, "(is installation_id set?)")
	}
	endpoint := u.String()
	now := r.s.nowUTC()
	signed, err := appJWT(appID, key, now)
	if err != nil {
		return nil, &RefreshError{Description: "the app JWT cannot be signed", Err: err}
	}
	rctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, endpoint, nil)
	if err != nil {
		return nil, &RefreshError{Description: "the token request cannot be built", Err: err}
	}
	req.Header.Set("Authorization", "Bearer "+signed)
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
	resp, err := r.cfg.HTTPClient.Do(req)
	if err != nil {
		return nil, r.unreachable(ctx, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxTokenResponseSize+1))
	if err != nil {
		return nil, &RefreshError{Status: resp.StatusCode, Description: "the token response could not be read", Err: egress.Describe(err)}
	}
	if len(body) > MaxTokenResponseSize {
		return nil, &RefreshError{Status: resp.StatusCode, Description: fmt.Sprintf("the token response is larger than %d bytes", MaxTokenResponseSize)}
	}
	secrets := []string{signed}
	tr, perr := ParseTokenResponse(resp.Header.Get("Content-Type"), body)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		re := &RefreshError{Status: resp.StatusCode, Description: "the token endpoint answered " + resp.Status}
		if tr != nil {
			if m, ok := tr.Raw["message"].(string); ok && m != "" {
				re.Description = sanitize(m, 300, secrets)
			}
		}
		return nil, re
	}
	if perr != nil {
		return nil, &RefreshError{Status: resp.StatusCode, Description: "the token response is not a JSON object", Err: perr}
	}
	tok, _ := tr.Raw["token"].(string)
	if tok == "" {
		tok = tr.AccessToken
	}
	if tok == "" {
		return nil, &RefreshError{Status: resp.StatusCode, Description: "the token response has no token"}
	}
	tr.AccessToken = tok
	if s, ok := tr.Raw["expires_at"].(string); ok {
		if t, err := time.Parse(time.RFC3339, s); err == nil && t.After(now) {
			tr.ExpiresIn = t.Sub(now)
		}
	}
	if tr.ExpiresIn <= 0 {
		tr.ExpiresIn = time.Hour - time.Minute
	}
	delete(tr.Raw, "token") // stored once, as access_token
	tr.Raw["access_token"] = tok
	return tr, nil
}

// finishApp completes an app installation: the callback carries the
// installation id (redirect_uri_metadata put it in cfg), and a first
// installation token proves the installation belongs to this app.
func (ss *Sessions) finishApp(ctx context.Context, p *integrations.Provider, client *oauthClient, cfg map[string]any, f *OAuthFlow, query url.Values) (*Credentials, error) {
	id, _ := cfg["installation_id"].(string)
	if id == "" {
		return nil, flowErr(FlowErrCallback, "The provider sent the end user back without an installation id.")
	}
	if strings.TrimLeft(id, "0123456789") != "" || len(id) > 20 {
		return nil, flowErr(FlowErrCallback, "The installation id %q is not a number.", sanitize(id, 40, nil))
	}
	tr, err := ss.cc.appToken(ctx, p, client.appID, client.privateKey, stringMap(cfg))
	if err != nil {
		return nil, tokenFlowError(err, "The provider refused the app installation token")
	}
	// The app JWT is not stored: it is minted again for every token.
	return mergeTokens(&Credentials{Type: integrations.AuthModeApp}, tr, GrantAppInstallation, ss.conns.nowUTC()), nil
}
