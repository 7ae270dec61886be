package connections

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/dghubble/oauth1"

	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/store"
)

// NetSuite token-based authentication (TBA) is OAuth 1.0a with a token
// the end user created in NetSuite: the integration's client (or the
// connection's override) is the consumer, the token id and secret the
// token, HMAC-SHA256 the signature method and the account id, upper-cased
// with '-' turned into '_', the realm.

// TBARealm returns the OAuth 1 realm of a NetSuite account id.
func TBARealm(accountID string) string {
	return strings.ToUpper(strings.ReplaceAll(accountID, "-", "_"))
}

// TBATransport returns a transport that signs each request it sends on
// base as NetSuite TBA requires.
func TBATransport(base http.RoundTripper, consumerKey, consumerSecret, tokenID, tokenSecret, accountID string) http.RoundTripper {
	cfg := oauth1.NewConfig(consumerKey, consumerSecret)
	cfg.Realm = TBARealm(accountID)
	cfg.Signer = &oauth1.HMAC256Signer{ConsumerSecret: consumerSecret}
	tr, ok := oauth1.NewClient(context.Background(), cfg, oauth1.NewToken(tokenID, tokenSecret)).Transport.(*oauth1.Transport)
	if !ok {
		panic("connections: unexpected oauth1 transport")
	}
	tr.Base = base
	return tr
}

// tbaCredentials applies the client override of a TBA auth call.
func tbaCredentials(c *Credentials, idOverride, secretOverride string) {
	if idOverride != "" || secretOverride != "" {
		c.ConfigOverride = &ConfigOverride{ClientID: idOverride, ClientSecret: secretOverride}
	}
}

// verifyTBA runs the provider's verification request (when its catalogue
// entry describes one) signed as the proxy signs TBA calls. A refusal is
// connection_test_failed, as Nango answers.
func (ss *Sessions) verifyTBA(ctx context.Context, envID int64, key string, p *integrations.Provider, creds *Credentials, cfg map[string]string) error {
	if p.Proxy == nil || p.Proxy.Verification == nil {
		return nil
	}
	id, secret := "", ""
	if ss.cfg.Integrations != nil {
		it, err := ss.cfg.Integrations.Get(ctx, envID, key)
		if err != nil {
			return err
		}
		if it.Credentials != nil {
			id, secret = it.Credentials.ClientID, it.Credentials.ClientSecret
		}
	}
	if o := creds.ConfigOverride; o != nil && o.ClientID != "" {
		id, secret = o.ClientID, o.ClientSecret
	}
	hc := *ss.cfg.HTTPClient
	base := hc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	hc.Transport = TBATransport(base, id, secret, creds.TokenID, creds.TokenSecret, cfg["accountId"])
	err := ss.verifyWith(ctx, p, creds, cfg, &hc)
	var se *store.Error
	if errors.As(err, &se) && se.Code == CodeConnectionValidationFail {
		return store.Invalid(CodeConnectionTestFailed, se.Message)
	}
	return err
}
