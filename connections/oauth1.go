package connections

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/dghubble/oauth1"

	"github.com/embedauth/connect/egress"
	"github.com/embedauth/connect/integrations"
)

// OAuth 1.0a (RFC 5849) flows use github.com/dghubble/oauth1 for the
// request-token and access-token legs and their signatures.

// oauth1Config returns the OAuth 1 consumer of a provider and client, with
// the provider's URLs filled in.
func (ss *Sessions) oauth1Config(ctx context.Context, p *integrations.Provider, client *oauthClient, vars integrations.TemplateVars) (*oauth1.Config, error) {
	var urls [3]string
	for i, tmpl := range []string{p.RequestURL, p.AuthorizationURL, p.TokenURL} {
		if tmpl == "" {
			return nil, flowErr(FlowErrProviderConfig, "The OAuth 1 provider %q lacks its request, authorization or access token URL.", p.Name)
		}
		u, err := p.RenderURL(tmpl, vars)
		if err != nil {
			return nil, flowURLError(err, p, "the provider's OAuth 1 URLs")
		}
		urls[i] = u.String()
	}
	signer, err := oauth1Signer(p.SignatureMethod, client)
	if err != nil {
		return nil, err
	}
	return &oauth1.Config{
		ConsumerKey:    client.id,
		ConsumerSecret: client.secret,
		CallbackURL:    ss.cfg.CallbackURL,
		Endpoint:       oauth1.Endpoint{RequestTokenURL: urls[0], AuthorizeURL: urls[1], AccessTokenURL: urls[2]},
		Signer:         signer,
		HTTPClient:     ctxClient(ctx, ss.cc.cfg.HTTPClient),
	}, nil
}

// oauth1Signer returns the signer of a signature method for a flow.
func oauth1Signer(method string, client *oauthClient) (oauth1.Signer, error) {
	sg, err := OAuth1Signer(method, client.secret, client.privateKey)
	if errors.Is(err, ErrOAuth1Method) {
		return nil, flowErr(FlowErrProviderConfig, "The OAuth 1 signature method %q is not supported.", method)
	}
	if err != nil {
		return nil, flowErr(FlowErrProviderConfig, "RSA-SHA1 signatures need the integration's private_key, an RSA key in PEM form.")
	}
	return sg, nil
}

// ErrOAuth1Method: OAuth1Signer does not know the signature method.
var ErrOAuth1Method = errors.New("connections: unsupported OAuth 1 signature method")

// OAuth1Signer returns the github.com/dghubble/oauth1 signer of an OAuth 1
// signature method ("" means HMAC-SHA1): HMAC-SHA1 and HMAC-SHA256 with the
// consumer secret, RSA-SHA1 with privateKeyPEM (the integration's
// private_key), or PLAINTEXT. An unknown method is ErrOAuth1Method; an
// RSA-SHA1 signer without a usable RSA key is another error. The flows and
// the proxy sign with it.
func OAuth1Signer(method, consumerSecret, privateKeyPEM string) (oauth1.Signer, error) {
	switch strings.ToUpper(method) {
	case "", "HMAC-SHA1":
		return &oauth1.HMACSigner{ConsumerSecret: consumerSecret}, nil
	case "HMAC-SHA256":
		return &oauth1.HMAC256Signer{ConsumerSecret: consumerSecret}, nil
	case "RSA-SHA1":
		key, err := parseRSAKey(privateKeyPEM)
		if err != nil {
			return nil, fmt.Errorf("connections: RSA-SHA1 needs an RSA private key in PEM form: %w", err)
		}
		return &oauth1.RSASigner{PrivateKey: key}, nil
	case "PLAINTEXT":
		return plaintextSigner{consumerSecret: consumerSecret}, nil
	}
	return nil, ErrOAuth1Method
}

// plaintextSigner is the PLAINTEXT method of RFC 5849 3.4.4, which
// dghubble/oauth1 lacks: the signature is the encoded consumer secret and
// token secret joined by '&'. It is only safe over TLS.
type plaintextSigner struct{ consumerSecret string }

func (s plaintextSigner) Name() string { return "PLAINTEXT" }

func (s plaintextSigner) Sign(tokenSecret, _ string) (string, error) {
	return percentEncode(s.consumerSecret) + "&" + percentEncode(tokenSecret), nil
}

// percentEncode is RFC 5849 3.6 encoding.
func percentEncode(s string) string {
	return strings.ReplaceAll(url.QueryEscape(s), "+", "%20")
}

var _ oauth1.Signer = plaintextSigner{}

// startOAuth1 gets a request token and returns it (the flow's state) with
// the provider's authorization URL.
func (ss *Sessions) startOAuth1(ctx context.Context, p *integrations.Provider, client *oauthClient, vars integrations.TemplateVars,
	f *OAuthFlow, scopes []string, clientParams map[string]string, sess *Session) (string, string, error) {
	cfg, err := ss.oauth1Config(ctx, p, client, vars)
	if err != nil {
		return "", "", err
	}
	token, secret, err := cfg.RequestToken()
	if err != nil {
		return "", "", oauth1Error(err, "The provider refused the request token", client)
	}
	f.Secrets.RequestTokenSecret = secret
	u, err := cfg.AuthorizationURL(token)
	if err != nil {
		return "", "", flowErr(FlowErrProviderConfig, "The authorization URL of %q is invalid.", p.Name)
	}
	q := u.Query()
	for _, k := range slices.Sorted(maps.Keys(p.AuthorizationParams)) {
		if reservedAuthParams[k] {
			continue
		}
		if v, err := integrations.Interpolate(p.AuthorizationParams[k], vars); err == nil {
			q.Set(k, v)
		}
	}
	for _, m := range []map[string]string{sess.IntegrationsConfigDefaults[f.IntegrationKey].AuthorizationParams, clientParams} {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if reservedAuthParams[k] || m[k] == "undefined" {
				continue
			}
			q.Set(k, m[k])
		}
	}
	if len(scopes) > 0 {
		sep := p.ScopeSeparator
		if sep == "" {
			sep = " "
		}
		q.Set("scope", strings.Join(scopes, sep))
	}
	u.RawQuery = q.Encode()
	return token, u.String(), nil
}

// finishOAuth1 exchanges the request token and verifier for the access
// token.
func (ss *Sessions) finishOAuth1(ctx context.Context, p *integrations.Provider, client *oauthClient, cfg map[string]any, f *OAuthFlow, query url.Values) (*Credentials, error) {
	token, verifier := query.Get("oauth_token"), query.Get("oauth_verifier")
	if verifier == "" {
		return nil, flowErr(FlowErrCallback, "The provider sent the end user back without an oauth_verifier.")
	}
	if len(verifier) > 1024 {
		return nil, flowErr(FlowErrCallback, "The oauth_verifier is too long.")
	}
	oc, err := ss.oauth1Config(ctx, p, client, integrations.TemplateVars{ConnectionConfig: stringMap(cfg), ClientID: client.id, ClientSecret: client.secret})
	if err != nil {
		return nil, err
	}
	access, secret, err := oc.AccessToken(token, f.Secrets.RequestTokenSecret, verifier)
	if err != nil {
		return nil, oauth1Error(err, "The provider refused the access token request", client, f.Secrets.RequestTokenSecret, verifier)
	}
	return &Credentials{Type: integrations.AuthModeOAuth1, OAuthToken: access, OAuthTokenSecret: secret, Scopes: slices.Clone(f.Scopes)}, nil
}

// oauth1Error turns an error of dghubble/oauth1's token requests into the
// flow's error: the provider's refusal (token_err: refused, then the
// answer dghubble/oauth1 quotes, without secrets), or, when the request
// got no answer, address_not_allowed or provider_unreachable and no more.
func oauth1Error(err error, refused string, client *oauthClient, secrets ...string) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		f := egress.Describe(err)
		return &FlowError{Type: f.Code, Message: "The token request failed: " + f.Message + ".", Status: http.StatusBadRequest, Err: f}
	}
	msg := sanitize(strings.TrimPrefix(err.Error(), "oauth1: "), 200, append(secrets, client.secret))
	return &FlowError{Type: FlowErrToken, Message: refused + ": " + msg + ".", Status: http.StatusBadRequest, Err: err}
}

// ctxClient returns a client whose requests carry ctx: dghubble/oauth1's
// token requests take no context.
func ctxClient(ctx context.Context, base *http.Client) *http.Client {
	c := *base
	rt := base.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	c.Transport = ctxTransport{ctx: ctx, base: rt}
	return &c
}

type ctxTransport struct {
	ctx  context.Context
	base http.RoundTripper
}

func (t ctxTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return t.base.RoundTrip(r.WithContext(t.ctx))
}
