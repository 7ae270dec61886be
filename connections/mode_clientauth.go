package connections

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/store"
)

// The client-credentials options of Nango's catalogue that change how an
// OAUTH2_CC connection authenticates: require_client_certificate (mutual
// TLS on token and API requests, ADP), token_request_auth_method
// private_key_jwt (an RS256 client assertion signed with the connection's
// private JWK, Okta) and custom (the client id and secret sent as username
// and password, ZoomInfo).

// Values of Provider.TokenRequestAuthMethod beside integrations.TokenAuthBody
// and integrations.TokenAuthBasic.
const (
	TokenAuthPrivateKeyJWT = "private_key_jwt"
	TokenAuthCustom        = "custom"
)

// ClientAssertionType is the client_assertion_type of a private_key_jwt
// token request (RFC 7523).
const ClientAssertionType = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

// ClientAssertionLifetime is how long a client assertion is valid (exp
// minus iat).
const ClientAssertionLifetime = 5 * time.Minute

// normalizePEM undoes what pasting a PEM block into a form or a JSON
// string often does: surrounding spaces and "\n" written as two
// characters.
func normalizePEM(s string) string {
	if !strings.Contains(s, "\n") && strings.Contains(s, `\n`) {
		s = strings.ReplaceAll(s, `\n`, "\n")
	}
	return strings.TrimSpace(s)
}

// ParseClientCertificate parses a PEM client certificate and its PEM
// private key (as tls.X509KeyPair does, after normalizing pasted PEM).
// Its error says which part is wrong and never holds key material.
func ParseClientCertificate(certPEM, keyPEM string) (tls.Certificate, error) {
	cert, err := tls.X509KeyPair([]byte(normalizePEM(certPEM)), []byte(normalizePEM(keyPEM)))
	if err != nil {
		msg := err.Error()
		switch {
		case strings.Contains(msg, "certificate input"):
			return tls.Certificate{}, errors.New("client_certificate holds no PEM certificate")
		case strings.Contains(msg, "key input"):
			return tls.Certificate{}, errors.New("client_private_key holds no PEM private key")
		case strings.Contains(msg, "does not match"):
			return tls.Certificate{}, errors.New("client_private_key does not belong to client_certificate")
		case strings.Contains(msg, "x509"):
			return tls.Certificate{}, errors.New("client_certificate is not a valid X.509 certificate")
		}
		return tls.Certificate{}, errors.New("client_private_key is not a valid PEM private key of client_certificate")
	}
	return cert, nil
}

// rsaJWK is an RSA private key in JWK form (RFC 7517, RFC 7518 §6.3).
type rsaJWK struct {
	Kty string `json:"kty"`
	Kid string `json:"kid"`
	Alg string `json:"alg"`
	N   string `json:"n"`
	E   string `json:"e"`
	D   string `json:"d"`
	P   string `json:"p"`
	Q   string `json:"q"`
	Dp  string `json:"dp"`
	Dq  string `json:"dq"`
	Qi  string `json:"qi"`
}

// ParsePrivateJWK parses an RSA private key in JWK form, the
// client_private_key of a private_key_jwt connection: a JSON object with
// kty "RSA", kid, n, e, d, p and q (dp, dq and qi, when present, must be
// the key's). The key must have at least 2048 bits. It returns the key
// and its kid. Its error never holds key material.
func ParsePrivateJWK(s string) (*rsa.PrivateKey, string, error) {
	var j rsaJWK
	if err := json.Unmarshal([]byte(strings.TrimSpace(s)), &j); err != nil {
		return nil, "", errors.New("client_private_key is not a JSON object (a private JWK)")
	}
	if j.Kty != "RSA" {
		return nil, "", errors.New(`client_private_key is not an RSA JWK (kty must be "RSA")`)
	}
	if j.Alg != "" && j.Alg != "RS256" {
		return nil, "", errors.New(`client_private_key is for another algorithm than RS256`)
	}
	if j.Kid == "" || len(j.Kid) > 256 {
		return nil, "", errors.New("client_private_key needs a kid")
	}
	num := func(name, v string, required bool) (*big.Int, error) {
		if v == "" {
			if required {
				return nil, fmt.Errorf("client_private_key lacks %s", name)
			}
			return nil, nil
		}
		b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(v, "="))
		if err != nil || len(b) == 0 {
			return nil, fmt.Errorf("client_private_key's %s is not base64url", name)
		}
		return new(big.Int).SetBytes(b), nil
	}
	var vals [8]*big.Int
	for i, f := range []struct {
		name, v  string
		required bool
	}{{"n", j.N, true}, {"e", j.E, true}, {"d", j.D, true}, {"p", j.P, true}, {"q", j.Q, true},
		{"dp", j.Dp, false}, {"dq", j.Dq, false}, {"qi", j.Qi, false}} {
		v, err := num(f.name, f.v, f.required)
		if err != nil {
			return nil, "", err
		}
		vals[i] = v
	}
	n, e := vals[0], vals[1]
	if n.BitLen() < 2048 || n.BitLen() > 8192 {
		return nil, "", errors.New("client_private_key must be an RSA key of 2048 to 8192 bits")
	}
	if !e.IsInt64() || e.Int64() < 3 || e.Int64() > 1<<31-1 {
		return nil, "", errors.New("client_private_key has an unusable public exponent")
	}
	key := &rsa.PrivateKey{PublicKey: rsa.PublicKey{N: n, E: int(e.Int64())}, D: vals[2], Primes: []*big.Int{vals[3], vals[4]}}
	if err := key.Validate(); err != nil {
		return nil, "", errors.New("client_private_key is not a consistent RSA private key")
	}
	key.Precompute()
	for i, want := range []*big.Int{key.Precomputed.Dp, key.Precomputed.Dq, key.Precomputed.Qinv} {
		if got := vals[5+i]; got != nil && got.Cmp(want) != 0 {
			return nil, "", errors.New("client_private_key's dp, dq or qi do not belong to its key")
		}
	}
	return key, j.Kid, nil
}

// ClientAssertion returns a private_key_jwt client assertion (RFC 7523
// §2.2): a JWT signed RS256 with key, kid in its header, whose issuer and
// subject are the client id, audience the token URL, with a random jti,
// iat now and exp now plus ClientAssertionLifetime.
func ClientAssertion(key *rsa.PrivateKey, kid, clientID, tokenURL string, now time.Time) (string, error) {
	var id [16]byte
	if _, err := rand.Read(id[:]); err != nil {
		return "", err
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims{
		"iss": clientID,
		"sub": clientID,
		"aud": tokenURL,
		"jti": hex.EncodeToString(id[:]),
		"iat": now.Unix(),
		"exp": now.Add(ClientAssertionLifetime).Unix(),
	})
	tok.Header["kid"] = kid
	return tok.SignedString(key)
}

// clientCredentialFields returns the credential fields an OAUTH2_CC auth
// call must carry for p, and what it checks: client_id always;
// client_secret unless p signs a client assertion (private_key_jwt,
// which needs client_private_key instead); client_certificate and
// client_private_key when p requires a client certificate. A certificate
// or key p has no use for is refused. PEM values are normalized in c.
func clientCredentialFields(p *integrations.Provider, c *Credentials) (fields map[string]string, required []string, err error) {
	c.ClientCertificate, c.ClientPrivateKey = normalizeKeyInput(p, c.ClientCertificate), normalizeKeyInput(p, c.ClientPrivateKey)
	fields = map[string]string{"client_id": c.ClientID, "client_secret": c.ClientSecret}
	required = []string{"client_id"}
	jwk := p.TokenRequestAuthMethod == TokenAuthPrivateKeyJWT
	switch {
	case jwk:
		fields["client_private_key"] = c.ClientPrivateKey
		required = append(required, "client_private_key")
	default:
		required = append(required, "client_secret")
	}
	if p.RequireClientCertificate {
		fields["client_certificate"], fields["client_private_key"] = c.ClientCertificate, c.ClientPrivateKey
		required = append(required, "client_certificate", "client_private_key")
	}
	if c.ClientCertificate != "" && !p.RequireClientCertificate {
		return nil, nil, store.Invalid(CodeInvalidCredentials, fmt.Sprintf("The provider %s takes no client certificate.", p.Name),
			store.FieldError{Code: "invalid_value", Message: "is not used by this provider", Path: []string{"client_certificate"}})
	}
	if c.ClientPrivateKey != "" && !p.RequireClientCertificate && !jwk {
		return nil, nil, store.Invalid(CodeInvalidCredentials, fmt.Sprintf("The provider %s takes no client private key.", p.Name),
			store.FieldError{Code: "invalid_value", Message: "is not used by this provider", Path: []string{"client_private_key"}})
	}
	return fields, required, nil
}

// normalizeKeyInput normalizes a pasted PEM value; a JWK is only trimmed.
func normalizeKeyInput(p *integrations.Provider, v string) string {
	if p.TokenRequestAuthMethod == TokenAuthPrivateKeyJWT && !p.RequireClientCertificate {
		return strings.TrimSpace(v)
	}
	return normalizePEM(v)
}

// checkClientKeys checks the key material of OAUTH2_CC credentials for p
// (after the required fields): the certificate and key of a provider that
// requires a client certificate form a valid pair, and the JWK of a
// private_key_jwt provider is a usable RSA private key. It also refuses
// token_request_auth_method values this service cannot send.
func checkClientKeys(p *integrations.Provider, c *Credentials) error {
	if c == nil || c.Type != integrations.AuthModeOAuth2CC {
		return nil
	}
	if p.RequireClientCertificate {
		if c.ClientCertificate == "" || c.ClientPrivateKey == "" {
			return store.Invalid(CodeInvalidCredentials, fmt.Sprintf("The provider %s requires a client certificate: send client_certificate and client_private_key (PEM).", p.Name),
				store.FieldError{Code: "required", Message: "is required", Path: []string{"client_certificate"}})
		}
		if _, err := ParseClientCertificate(c.ClientCertificate, c.ClientPrivateKey); err != nil {
			return store.Invalid(CodeInvalidCredentials, "The client certificate cannot be used: "+err.Error()+".",
				store.FieldError{Code: "invalid_value", Message: err.Error(), Path: []string{"client_certificate"}})
		}
	}
	if p.TokenRequestAuthMethod == TokenAuthPrivateKeyJWT && !p.RequireClientCertificate {
		if _, _, err := ParsePrivateJWK(c.ClientPrivateKey); err != nil {
			return store.Invalid(CodeInvalidCredentials, "The private key cannot be used: "+err.Error()+".",
				store.FieldError{Code: "invalid_value", Message: err.Error(), Path: []string{"client_private_key"}})
		}
	}
	return nil
}

// checkImportedClientKeys applies the rules of clientCredentialFields and
// checkClientKeys to imported OAUTH2_CC credentials.
func checkImportedClientKeys(p *integrations.Provider, c *Credentials) error {
	if p == nil || c == nil || c.Type != integrations.AuthModeOAuth2CC {
		return nil
	}
	if _, _, err := clientCredentialFields(p, c); err != nil {
		return err
	}
	if p.TokenRequestAuthMethod != TokenAuthPrivateKeyJWT && strings.TrimSpace(c.ClientSecret) == "" {
		return store.Invalid(CodeInvalidCredentials, "client_secret is required for OAUTH2_CC connections.",
			store.FieldError{Code: "required", Message: "is required", Path: []string{"client_secret"}})
	}
	if p.TokenRequestAuthMethod == TokenAuthPrivateKeyJWT && c.ClientPrivateKey == "" {
		return store.Invalid(CodeInvalidCredentials, "client_private_key (a private JWK) is required for this provider's connections.",
			store.FieldError{Code: "required", Message: "is required", Path: []string{"client_private_key"}})
	}
	return checkClientKeys(p, c)
}

// clientAuthentication writes the client authentication of the special
// token_request_auth_method values into a token request's form and reports
// whether it did (the caller then adds no client_id, client_secret or
// Basic header): private_key_jwt signs a client assertion for the token
// URL with the connection's JWK; custom sends the client id and secret as
// username and password, and no grant_type unless the provider's
// token_params set one, as Nango does.
func (r *refresher) clientAuthentication(tq *tokenRequest, form map[string][]string, tokenURL string) (bool, error) {
	p := tq.provider
	if tq.form.Get("grant_type") != GrantClientCredentials {
		return false, nil
	}
	switch p.TokenRequestAuthMethod {
	case TokenAuthPrivateKeyJWT:
		if tq.creds == nil || tq.creds.ClientPrivateKey == "" {
			return false, &RefreshError{Code: CodeInvalidCredentials, Description: "the connection has no private key (client_private_key) to sign the client assertion"}
		}
		key, kid, err := ParsePrivateJWK(tq.creds.ClientPrivateKey)
		if err != nil {
			return false, &RefreshError{Code: CodeInvalidCredentials, Description: err.Error()}
		}
		a, err := ClientAssertion(key, kid, tq.clientID, tokenURL, r.s.nowUTC())
		if err != nil {
			return false, &RefreshError{Description: "the client assertion cannot be signed"}
		}
		form["client_assertion_type"] = []string{ClientAssertionType}
		form["client_assertion"] = []string{a}
		tq.secrets = append(tq.secrets, a)
		return true, nil
	case TokenAuthCustom:
		if _, ok := p.TokenParams["grant_type"]; !ok {
			delete(form, "grant_type")
		}
		form["username"] = []string{tq.clientID}
		form["password"] = []string{tq.clientSecret}
		return true, nil
	}
	return false, nil
}

// tokenBody encodes a token request's form: as a JSON object of strings
// for a custom client-credentials provider whose body_format is json (as
// Nango sends it), else form-encoded. It returns the body and its
// content type.
func tokenBody(p *integrations.Provider, form map[string][]string, encode func() string) (string, string) {
	if p.TokenRequestAuthMethod == TokenAuthCustom && p.BodyFormat == "json" {
		m := make(map[string]string, len(form))
		for k, vs := range form {
			if len(vs) > 0 {
				m[k] = vs[0]
			}
		}
		b, _ := json.Marshal(m)
		return string(b), "application/json"
	}
	return encode(), "application/x-www-form-urlencoded"
}

// clientCredentialsToken reads the token of a client-credentials answer
// that has no access_token where Nango also looks: data.token, then jwt
// (ZoomInfo answers {"jwt": ...}).
func clientCredentialsToken(grant string, tr *TokenResponse) {
	if grant != GrantClientCredentials || tr == nil || tr.AccessToken != "" {
		return
	}
	if d, ok := tr.Raw["data"].(map[string]any); ok {
		if s, ok := d["token"].(string); ok && s != "" {
			tr.AccessToken = s
			return
		}
	}
	if s, ok := tr.Raw["jwt"].(string); ok {
		tr.AccessToken = s
	}
}

// tokenClient returns the client of a token request: the refresher's, or,
// for a provider that requires a client certificate, one whose transport
// is a clone of the refresher's (same address policy) presenting the
// connection's certificate. done releases the clone's idle connections.
func (r *refresher) tokenClient(p *integrations.Provider, creds *Credentials) (client *http.Client, done func(), err error) {
	if !p.RequireClientCertificate || creds == nil || creds.ClientCertificate == "" || creds.ClientPrivateKey == "" {
		return r.cfg.HTTPClient, func() {}, nil
	}
	cert, err := ParseClientCertificate(creds.ClientCertificate, creds.ClientPrivateKey)
	if err != nil {
		return nil, nil, &RefreshError{Code: CodeInvalidCredentials, Description: err.Error()}
	}
	base, ok := r.cfg.HTTPClient.Transport.(*http.Transport)
	if !ok {
		return nil, nil, &RefreshError{Description: "the token client's transport is not an *http.Transport: the client certificate cannot be presented"}
	}
	tr := WithClientCertificate(base, cert)
	c := *r.cfg.HTTPClient
	c.Transport = tr
	return &c, tr.CloseIdleConnections, nil
}

// WithClientCertificate returns a clone of base (its dialer, and so its
// address policy, included) that presents cert to servers that ask for a
// client certificate.
func WithClientCertificate(base *http.Transport, cert tls.Certificate) *http.Transport {
	tr := base.Clone()
	if tr.TLSClientConfig == nil {
		tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	tr.TLSClientConfig.Certificates = []tls.Certificate{cert}
	return tr
}

// apiClientKeys adds the certificate and private key of OAUTH2_CC
// credentials to their wire form, when they have them.
func apiClientKeys(m *APICredentialsBody, c *Credentials) {
	if c.ClientCertificate == "" && c.ClientPrivateKey == "" {
		return
	}
	if m.Fields == nil {
		m.Fields = map[string]any{}
	}
	if c.ClientCertificate != "" {
		m.Fields["client_certificate"] = c.ClientCertificate
	}
	if c.ClientPrivateKey != "" {
		m.Fields["client_private_key"] = c.ClientPrivateKey
	}
}
