package connections

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/embedauth/connect/egress"
	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/internal/httpapi"
	"github.com/embedauth/connect/store"
)

// GrantTokenExchange is the grant of the token modes (TWO_STEP, JWT,
// SIGNATURE and BILL): their token is renewed by running the exchange
// again from the stored inputs.
const GrantTokenExchange = "token_exchange"

// CodeTokenExchangeFailed is the wire code (HTTP 400) of an auth call of a
// token mode whose token request the provider refused.
const CodeTokenExchangeFailed = "connection_test_failed"

// DefaultBillSessionLifetime is how long a Bill session is taken to live:
// Bill's login answer gives no lifetime.
const DefaultBillSessionLifetime = 35 * time.Minute

// IsTokenMode reports whether mode is one of the token modes, whose
// credentials are inputs the service exchanges for a token it renews:
// TWO_STEP, JWT, SIGNATURE and BILL.
func IsTokenMode(mode string) bool {
	switch mode {
	case integrations.AuthModeTwoStep, integrations.AuthModeJWT, integrations.AuthModeSignature, integrations.AuthModeBill:
		return true
	}
	return false
}

// The JSON names of the Credentials fields, which the free-form inputs of
// TWO_STEP and JWT credentials do not hold.
var credentialFieldNames = sync.OnceValue(func() map[string]bool {
	out := map[string]bool{}
	t := reflect.TypeFor[Credentials]()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out[name] = true
		}
	}
	return out
})

// UnmarshalJSON decodes credentials. For TWO_STEP and JWT credentials,
// whose fields are the provider's own, every key that is not a field of
// Credentials is kept in Inputs (as is every such key of an import body),
// and so are username, password and the client id and secret, which are
// inputs of those modes too.
func (c *Credentials) UnmarshalJSON(b []byte) error {
	type plain Credentials
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*c = Credentials(p)
	if c.Type != integrations.AuthModeTwoStep && c.Type != integrations.AuthModeJWT && c.Type != integrations.AuthModeBill {
		return nil
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(b, &all); err != nil {
		return err
	}
	known := credentialFieldNames()
	for k, raw := range all {
		if c.Type == integrations.AuthModeBill && !slices.Contains(billInputs, k) {
			continue
		}
		switch k {
		case "username", "password", "client_id", "client_secret", "apiKey":
		default:
			if known[k] {
				continue
			}
		}
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return err
		}
		if v == nil {
			continue
		}
		if c.Inputs == nil {
			c.Inputs = map[string]any{}
		}
		c.Inputs[k] = v
	}
	return nil
}

// billInputs are the fields of Bill credentials kept in Inputs when they
// are decoded (session_id and user_id only from an import body).
var billInputs = []string{"organization_id", "dev_key", "session_id", "user_id"}

// tokenInputs are the inputs of token-mode credentials as their templates
// see them (${credentials.NAME}).
func tokenInputs(c *Credentials) map[string]any {
	out := maps.Clone(c.Inputs)
	if out == nil {
		out = map[string]any{}
	}
	switch c.Type {
	case integrations.AuthModeSignature, integrations.AuthModeBill:
		out["username"], out["password"] = c.Username, c.Password
	}
	return out
}

// flatten writes nested inputs as dotted keys ("privateKey.id") and
// scalars as text, for ${credentials.NAME} templates.
func flatten(prefix string, v any, out map[string]string) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			flatten(prefix+k+".", x, out)
		}
	case string:
		out[strings.TrimSuffix(prefix, ".")] = v
	case float64:
		out[strings.TrimSuffix(prefix, ".")] = strconv.FormatFloat(v, 'f', -1, 64)
	case bool:
		out[strings.TrimSuffix(prefix, ".")] = strconv.FormatBool(v)
	case json.Number:
		out[strings.TrimSuffix(prefix, ".")] = v.String()
	}
}

// exchangeVars are the template values of a token exchange: the
// connection config, the inputs as ${credentials.NAME} and as bare names
// (${assertionOption.privateKey}), the integration's values of the
// provider's integration_config (integ, which win over inputs of the same
// name), the stored refresh token.
func exchangeVars(p *integrations.Provider, c *Credentials, cfg, integ map[string]string) integrations.TemplateVars {
	inputs := tokenInputs(c)
	for k, v := range integ {
		inputs[k] = v
	}
	creds := map[string]string{}
	for k, v := range inputs {
		flatten(k+".", v, creds)
	}
	// A key given as "id:secret" (Ghost's Admin API key) is read as
	// ${credentials.KEY.id} and ${credentials.KEY.secret} when the
	// provider's templates name them so.
	for k, v := range inputs {
		s, ok := v.(string)
		id, secret, split := strings.Cut(s, ":")
		if ok && split && p.Token != nil && strings.Contains(p.Token.SigningKey+fmt.Sprint(p.Token.Header), "credentials."+k+".") {
			creds[k+".id"], creds[k+".secret"] = id, secret
			inputs[k] = map[string]any{"id": id, "secret": secret}
		}
	}
	extra := maps.Clone(inputs)
	if c.RefreshToken != "" {
		extra["refresh_token"] = c.RefreshToken
	}
	return integrations.TemplateVars{ConnectionConfig: cfg, Credentials: creds, Raw: c.Raw, Extra: extra}
}

// exchangeSecrets are the values scrubbed from the error texts of an
// exchange: every input and the stored tokens.
func exchangeSecrets(c *Credentials, vars integrations.TemplateVars) []string {
	out := []string{c.Token, c.RefreshToken, c.Password}
	for _, v := range vars.Credentials {
		out = append(out, v)
	}
	return out
}

// exchangeToken is the token request of a renewal: the exchange run again
// from the stored inputs. Its TokenResponse carries the new credentials.
func (r *refresher) exchangeToken(ctx context.Context, p *integrations.Provider, c *Connection) (*TokenResponse, error) {
	integ, err := r.integrationValues(ctx, p, c.EnvironmentID, c.IntegrationKey)
	if err != nil {
		return nil, err
	}
	nc, err := r.exchange(ctx, p, c.Credentials, stringMap(c.ConnectionConfig), integ)
	if err != nil {
		return nil, err
	}
	return &TokenResponse{AccessToken: nc.Token, RefreshToken: nc.RefreshToken, Raw: nc.Raw, Credentials: nc}, nil
}

// exchange obtains the token of token-mode credentials from their inputs
// and returns the credentials with it: a TWO_STEP token request (and its
// additional steps), a JWT signed here, a WSSE token, a Bill login. Every
// failure is a *RefreshError; a token that is not one line of text (see
// textProblem) is one, and is not stored.
func (r *refresher) exchange(ctx context.Context, p *integrations.Provider, c *Credentials, cfg, integ map[string]string) (*Credentials, error) {
	out, err := r.obtain(ctx, p, c, cfg, integ)
	if err == nil && (textProblem(out.Token) != "" || textProblem(out.RefreshToken) != "") {
		return nil, &RefreshError{Description: "the provider's token is not one line of text: it was not stored"}
	}
	return out, err
}

// obtain does the work of exchange.
func (r *refresher) obtain(ctx context.Context, p *integrations.Provider, c *Credentials, cfg, integ map[string]string) (*Credentials, error) {
	now := r.s.nowUTC()
	out := *c
	out.Inputs = maps.Clone(c.Inputs)
	obtained := now.Truncate(time.Millisecond)
	out.ObtainedAt = &obtained
	expiresIn := func(d time.Duration) {
		if d > 0 {
			t := now.Add(d).Truncate(time.Millisecond)
			out.ExpiresAt = &t
		} else {
			out.ExpiresAt = nil
		}
	}
	switch c.Type {
	case integrations.AuthModeJWT:
		if p.Token == nil || p.Signature == nil {
			return nil, &RefreshError{Description: "the provider does not describe the token to sign"}
		}
		vars := exchangeVars(p, c, cfg, integ)
		vars.Now = func() time.Time { return now }
		tok, err := signJWT(p.Signature, p.Token.Header, p.Token.Payload, p.Token.SigningKey, time.Duration(p.Token.ExpiresInMs)*time.Millisecond, vars, now)
		if err != nil {
			return nil, err
		}
		out.Token = tok
		expiresIn(time.Duration(p.Token.ExpiresInMs) * time.Millisecond)
		return &out, nil
	case integrations.AuthModeSignature:
		if p.Signature == nil || !strings.EqualFold(p.Signature.Protocol, "WSSE") {
			return nil, &RefreshError{Description: "the provider's signature protocol is not supported"}
		}
		tok, err := wsseToken(c.Username, c.Password, now, nil)
		if err != nil {
			return nil, &RefreshError{Description: "the WSSE token cannot be made", Err: err}
		}
		out.Token = tok
		life := time.Duration(0)
		if p.Token != nil {
			life = time.Duration(p.Token.ExpiresInMs) * time.Millisecond
		}
		expiresIn(life)
		return &out, nil
	case integrations.AuthModeBill:
		return r.billLogin(ctx, p, &out, cfg, now)
	case integrations.AuthModeTwoStep:
		return r.twoStep(ctx, p, &out, cfg, integ, now)
	}
	return nil, &RefreshError{Description: "the credentials are not of a token mode"}
}

// WSSE returns an X-WSSE UsernameToken for username and secret created at
// now, as Nango writes it: the password digest is the base64 encoding of
// the hex SHA-1 of nonce, creation time and secret. nonce nil means 16
// random bytes (written in hex).
func wsseToken(username, secret string, now time.Time, nonce []byte) (string, error) {
	if nonce == nil {
		nonce = make([]byte, 16)
		if _, err := rand.Read(nonce); err != nil {
			return "", err
		}
	}
	n := hex.EncodeToString(nonce)
	created := now.UTC().Format("2006-01-02T15:04:05.000Z")
	sum := sha1.Sum([]byte(n + created + secret))
	digest := base64.StdEncoding.EncodeToString([]byte(hex.EncodeToString(sum[:])))
	return fmt.Sprintf(`UsernameToken Username="%s", PasswordDigest="%s", Nonce="%s", Created="%s"`, username, digest, n, created), nil
}

// signJWT signs a JWT whose header, claims and key are templates, as the
// provider's token (or assertion) describes: string values are filled
// from vars (a value that cannot be filled is left out; a list keeps its
// filled items, split at commas), iat is now and exp now plus life. The
// algorithm is the header's alg; an HMAC key is hex unless the signature
// says utf8, an RSA or EC key is PEM.
func signJWT(sig *integrations.Signature, header, payload map[string]any, keyTmpl string, life time.Duration,
	vars integrations.TemplateVars, now time.Time) (string, error) {
	vars = vars.Stable()
	fill := func(m map[string]any) map[string]any {
		out := map[string]any{}
		for k, v := range m {
			switch v := v.(type) {
			case string:
				if s, err := integrations.Interpolate(v, vars); err == nil {
					out[k] = s
				}
			case []any:
				var items []string
				for _, it := range v {
					s, ok := it.(string)
					if !ok {
						continue
					}
					if s, err := integrations.Interpolate(s, vars); err == nil {
						for _, part := range strings.Split(s, ",") {
							if part = strings.TrimSpace(part); part != "" {
								items = append(items, part)
							}
						}
					}
				}
				if len(items) > 0 {
					out[k] = items
				}
			default:
				out[k] = v
			}
		}
		return out
	}
	h, claims := fill(header), fill(payload)
	claims["iat"] = now.Unix()
	claims["exp"] = now.Add(life).Unix()
	alg, _ := h["alg"].(string)
	method := jwt.GetSigningMethod(alg)
	if method == nil {
		return "", &RefreshError{Description: fmt.Sprintf("the signing algorithm %q is not supported", alg)}
	}
	keyText, err := integrations.Interpolate(keyTmpl, vars)
	if err != nil || keyText == "" {
		return "", &RefreshError{Code: CodeInvalidCredentials, Description: "the signing key is missing from the credentials"}
	}
	var key any
	protocol := ""
	if sig != nil {
		protocol = strings.ToUpper(sig.Protocol)
	}
	switch {
	case protocol == "HMAC" || strings.HasPrefix(alg, "HS"):
		if sig != nil && sig.HMACSecretEncoding == "utf8" {
			key = []byte(keyText)
		} else if key, err = hex.DecodeString(keyText); err != nil {
			return "", &RefreshError{Code: CodeInvalidCredentials, Description: "the HMAC signing key is not hexadecimal"}
		}
	case strings.HasPrefix(alg, "ES"):
		if key, err = jwt.ParseECPrivateKeyFromPEM(pemBytes(keyText)); err != nil {
			return "", &RefreshError{Code: CodeInvalidCredentials, Description: "the signing key is not an EC private key in PEM"}
		}
	case strings.HasPrefix(alg, "RS") || strings.HasPrefix(alg, "PS"):
		if key, err = jwt.ParseRSAPrivateKeyFromPEM(pemBytes(keyText)); err != nil {
			return "", &RefreshError{Code: CodeInvalidCredentials, Description: "the signing key is not an RSA private key in PEM"}
		}
	case strings.HasPrefix(alg, "Ed") || alg == "EdDSA":
		if key, err = jwt.ParseEdPrivateKeyFromPEM(pemBytes(keyText)); err != nil {
			return "", &RefreshError{Code: CodeInvalidCredentials, Description: "the signing key is not an Ed25519 private key in PEM"}
		}
	default:
		return "", &RefreshError{Description: fmt.Sprintf("the signing algorithm %q is not supported", alg)}
	}
	t := jwt.NewWithClaims(method, jwt.MapClaims(claims))
	for k, v := range h {
		t.Header[k] = v
	}
	t.Header["alg"] = method.Alg()
	s, err := t.SignedString(key)
	if err != nil {
		return "", &RefreshError{Code: CodeInvalidCredentials, Description: "the token cannot be signed with the key"}
	}
	return s, nil
}

// pemBytes restores a PEM key pasted on one line or with escaped line
// breaks ("\n" as two characters).
func pemBytes(s string) []byte {
	s = strings.TrimSpace(strings.ReplaceAll(s, `\n`, "\n"))
	begin := strings.Index(s, "-----BEGIN ")
	if begin < 0 {
		return []byte("-----BEGIN PRIVATE KEY-----\n" + s + "\n-----END PRIVATE KEY-----\n")
	}
	headEnd := strings.Index(s[begin+11:], "-----")
	end := strings.LastIndex(s, "-----END ")
	if headEnd < 0 || end < 0 {
		return []byte(s)
	}
	headEnd += begin + 11 + 5
	body := strings.Join(strings.Fields(s[headEnd:end]), "")
	var b strings.Builder
	b.WriteString(s[begin:headEnd])
	b.WriteByte('\n')
	for len(body) > 64 {
		b.WriteString(body[:64] + "\n")
		body = body[64:]
	}
	b.WriteString(body + "\n")
	b.WriteString(s[end:])
	b.WriteByte('\n')
	return []byte(b.String())
}

// billLogin logs in to Bill with the four inputs and keeps the session.
func (r *refresher) billLogin(ctx context.Context, p *integrations.Provider, c *Credentials, cfg map[string]string, now time.Time) (*Credentials, error) {
	org, _ := c.Inputs["organization_id"].(string)
	dev, _ := c.Inputs["dev_key"].(string)
	body, _ := json.Marshal(map[string]string{"username": c.Username, "password": c.Password, "organizationId": org, "devKey": dev})
	vars := exchangeVars(p, c, cfg, nil)
	ans, err := r.send(ctx, p, exchangeRequest{endpoint: p.TokenURL, method: http.MethodPost, body: body,
		contentType: "application/json", secrets: exchangeSecrets(c, vars)}, vars, false)
	if err != nil {
		return nil, err
	}
	raw, _ := ans.value.(map[string]any)
	session, _ := raw["sessionId"].(string)
	if session == "" {
		return nil, &RefreshError{Status: ans.status, Description: "the login answer has no sessionId"}
	}
	c.Token = session
	c.Raw = raw
	if o, ok := raw["organizationId"].(string); ok && o != "" {
		if c.Inputs == nil {
			c.Inputs = map[string]any{}
		}
		c.Inputs["organization_id"] = o
	}
	t := now.Add(DefaultBillSessionLifetime).Truncate(time.Millisecond)
	c.ExpiresAt = &t
	return c, nil
}

// exchangeRequest is one request of an exchange.
type exchangeRequest struct {
	endpoint    string // URL template
	method      string
	body        []byte
	contentType string
	query       url.Values
	headers     map[string]string // templates
	secrets     []string
}

// exchangeAnswer is a parsed answer: a JSON value, or the text.
type exchangeAnswer struct {
	status  int
	value   any
	text    string
	header  http.Header
	fromMap bool
}

// send sends one request of an exchange and reads its answer. free means
// the URL template may take its host from the values (an additional step
// whose URL an earlier answer of the provider gave).
func (r *refresher) send(ctx context.Context, p *integrations.Provider, rq exchangeRequest, vars integrations.TemplateVars, free bool) (*exchangeAnswer, error) {
	var u *url.URL
	var err error
	if free {
		var s string
		if s, err = integrations.Interpolate(rq.endpoint, vars); err == nil {
			u, err = url.Parse(s)
			if err == nil && (u.Scheme != "http" && u.Scheme != "https" || u.Host == "") {
				err = errors.New("not an absolute http(s) URL")
			}
		}
	} else {
		u, err = p.RenderURL(rq.endpoint, vars)
	}
	if err != nil {
		return nil, tokenURLError(err, "")
	}
	if len(rq.query) > 0 {
		q := u.Query()
		for k, vs := range rq.query {
			q[k] = vs
		}
		u.RawQuery = q.Encode()
	}
	rv := vars.Stable()
	rv.Request = &integrations.TemplateRequest{Method: rq.method, URL: u, Endpoint: u.EscapedPath(), Body: rq.body, ContentType: rq.contentType}
	rctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	var body io.Reader
	if rq.body != nil {
		body = bytes.NewReader(rq.body)
	}
	req, err := http.NewRequestWithContext(rctx, rq.method, u.String(), body)
	if err != nil {
		return nil, &RefreshError{Description: "the token request cannot be built", Err: err}
	}
	if rq.contentType != "" {
		req.Header.Set("Content-Type", rq.contentType)
	}
	req.Header.Set("Accept", "application/json")
	for _, k := range slices.Sorted(maps.Keys(rq.headers)) {
		v, err := integrations.Interpolate(rq.headers[k], rv)
		if err != nil {
			return nil, &RefreshError{Code: CodeInvalidCredentials, Description: fmt.Sprintf("the token request header %q cannot be built from the credentials", k), Err: err}
		}
		req.Header.Set(k, v)
	}
	resp, err := r.cfg.HTTPClient.Do(req)
	if err != nil {
		return nil, r.unreachable(ctx, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxTokenResponseSize+1))
	if err != nil {
		return nil, &RefreshError{Status: resp.StatusCode, Description: "the token response could not be read", Err: egress.Describe(err)}
	}
	if len(b) > MaxTokenResponseSize {
		return nil, &RefreshError{Status: resp.StatusCode, Description: fmt.Sprintf("the token response is larger than %d bytes", MaxTokenResponseSize)}
	}
	ans := &exchangeAnswer{status: resp.StatusCode, text: string(bytes.TrimSpace(b)), header: resp.Header}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err == nil {
		if _, more := dec.Token(); more == io.EOF {
			ans.value = plainNumbers(v)
		}
	} else if strings.HasPrefix(ans.text, "<") {
		if m, err := parseXMLAnswer(b); err == nil {
			ans.value = m
		}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, &RefreshError{Status: resp.StatusCode, Code: providerErrorCode(ans.value, rq.secrets),
			Description: "the token endpoint answered " + resp.Status + providerErrorText(ans, rq.secrets)}
	}
	return ans, nil
}

// plainNumbers turns the json.Numbers of a decoded value into float64, as
// encoding/json decodes them (the credentials are stored as JSON).
func plainNumbers(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			v[k] = plainNumbers(x)
		}
	case []any:
		for i, x := range v {
			v[i] = plainNumbers(x)
		}
	case json.Number:
		if f, err := v.Float64(); err == nil {
			return f
		}
		return v.String()
	}
	return v
}

// providerErrorCode is the error code of a refusal, when the provider
// sent one in an OAuth-like "error" field.
func providerErrorCode(v any, secrets []string) string {
	if m, ok := v.(map[string]any); ok {
		if s, ok := m["error"].(string); ok {
			return sanitize(s, 100, secrets)
		}
	}
	return ""
}

// providerErrorText is what the provider said in a refusal, shortened and
// scrubbed: an error description or message field, or the body's text.
func providerErrorText(ans *exchangeAnswer, secrets []string) string {
	text := ""
	if m, ok := ans.value.(map[string]any); ok {
		for _, k := range []string{"error_description", "message", "error", "detail", "title"} {
			if s, ok := m[k].(string); ok && s != "" {
				text = s
				break
			}
		}
	} else if !strings.HasPrefix(ans.text, "<") {
		text = ans.text
	}
	text = sanitize(text, 200, secrets)
	if text == "" {
		return ""
	}
	return ": " + text
}

// twoStep runs a TWO_STEP exchange: the token request (or, with a stored
// refresh token and the provider's refresh_token_params, the refresh
// request), then each additional step, which sees the earlier answers as
// ${stepN.PATH}; the last answer holds the token.
func (r *refresher) twoStep(ctx context.Context, p *integrations.Provider, c *Credentials, cfg, integ map[string]string, now time.Time) (*Credentials, error) {
	vars := exchangeVars(p, c, cfg, integ)
	vars.Now = func() time.Time { return now } // ${now} is the service's clock
	secrets := exchangeSecrets(c, vars)
	if p.Signature != nil && p.Token != nil && p.Token.SigningKey != "" {
		tok, err := signJWT(p.Signature, p.Token.Header, p.Token.Payload, p.Token.SigningKey, time.Duration(p.Token.ExpiresInMs)*time.Millisecond, vars, now)
		if err != nil {
			return nil, err
		}
		vars.Extra["token"] = tok
		secrets = append(secrets, tok)
	}
	if a := p.Assertion; a != nil {
		var tok string
		var err error
		switch a.Type {
		case "", "jwt":
			alg, _ := a.Header["alg"].(string)
			sig := &integrations.Signature{Protocol: alg}
			tok, err = signJWT(sig, a.Header, a.Payload, a.Key, time.Duration(a.LifetimeInSeconds)*time.Second, vars, now)
		case "saml":
			tok, err = samlAssertion(a, vars, now, "")
		default:
			return nil, &RefreshError{Description: fmt.Sprintf("%s assertions are not supported", a.Type)}
		}
		if err != nil {
			return nil, err
		}
		vars.Credentials["assertion"] = tok
		vars.Extra["assertion"] = tok
		secrets = append(secrets, tok)
	}
	format := p.BodyFormat
	if format == "" {
		format = "json"
	}
	endpoint, params, headers, tree := p.TokenURL, p.TokenParams, p.TokenHeaders, p.TokenParamsTree
	if c.RefreshToken != "" && len(p.RefreshTokenParams) > 0 {
		params, tree = p.RefreshTokenParams, nil
		if p.RefreshURL != "" {
			endpoint = p.RefreshURL
		}
		if p.RefreshTokenHeaders != nil {
			headers = p.RefreshTokenHeaders
		}
	}
	ans, err := r.twoStepRequest(ctx, p, endpoint, p.TokenRequestMethod, format, params, tree, headers, vars, secrets, false)
	if err != nil {
		return nil, err
	}
	answers := []*exchangeAnswer{ans}
	for i, st := range p.AdditionalSteps {
		vars.Extra["step"+strconv.Itoa(i+1)] = ans.value
		f := st.BodyFormat
		if f == "" {
			f = format
		}
		if ans, err = r.twoStepRequest(ctx, p, st.TokenURL, st.TokenRequestMethod, f, st.TokenParams, nil, st.TokenHeaders, vars, secrets, true); err != nil {
			return nil, err
		}
		answers = append(answers, ans)
	}
	last := answers[len(answers)-1]
	tr := p.TokenResponse
	if tr == nil {
		tr = &integrations.TokenResponse{Token: "access_token"}
	}
	token, ok := answerPath(last, tr.Token)
	if !ok || token == "" {
		return nil, &RefreshError{Status: last.status, Description: fmt.Sprintf("the token response has no %q", tr.Token)}
	}
	c.Token = token
	raw, _ := last.value.(map[string]any)
	if raw == nil {
		raw = map[string]any{}
	}
	// Kept headers of every answer: in raw, and as inputs, which
	// templates read as ${credentials.NAME} (set-cookie as _cookies, and
	// each cookie by its name).
	var cookies []string
	kept := map[string]string{}
	for _, ans := range answers {
		for _, h := range p.TokenResponseHeaders {
			if strings.EqualFold(h, "set-cookie") {
				for _, ck := range ans.header.Values("Set-Cookie") {
					nv, _, _ := strings.Cut(ck, ";")
					name, value, ok := strings.Cut(strings.TrimSpace(nv), "=")
					if ok && strings.TrimSpace(name) != "" {
						kept[strings.TrimSpace(name)] = strings.TrimSpace(value)
						cookies = append(cookies, strings.TrimSpace(name)+"="+strings.TrimSpace(value))
					}
				}
			} else if v := ans.header.Get(h); v != "" {
				kept[h] = v
			}
		}
	}
	if len(cookies) > 0 {
		kept["_cookies"] = strings.Join(cookies, "; ")
	}
	for k, v := range kept {
		if k == "type" || k == "token" || k == "refresh_token" || k == "expires_at" || k == "raw" || credentialFieldNames()[k] {
			continue
		}
		raw[k] = v
		if c.Inputs == nil {
			c.Inputs = map[string]any{}
		}
		c.Inputs[k] = v
	}
	c.Raw = raw
	if tr.RefreshToken != "" {
		if rt, ok := answerPath(last, tr.RefreshToken); ok && rt != "" {
			c.RefreshToken = rt
		}
	}
	c.ExpiresAt = nil
	var exp any
	if tr.TokenExpiration != "" {
		if m, ok := last.value.(map[string]any); ok {
			exp = lookupAny(m, tr.TokenExpiration)
		}
	}
	switch {
	case exp != nil && tr.TokenExpirationStrategy == "expireAt":
		t, ok := parseExpireAt(exp)
		if !ok {
			return nil, &RefreshError{Status: last.status, Description: "the token response's expiry date cannot be read"}
		}
		t = t.UTC().Truncate(time.Millisecond)
		c.ExpiresAt = &t
	case exp != nil && tr.TokenExpirationStrategy == "expireIn":
		d, ok := parseExpireIn(exp)
		if !ok {
			return nil, &RefreshError{Status: last.status, Description: "the token response's lifetime cannot be read"}
		}
		t := now.Add(d).Truncate(time.Millisecond)
		c.ExpiresAt = &t
	case p.TokenExpiresInMs > 0:
		t := now.Add(time.Duration(p.TokenExpiresInMs) * time.Millisecond).Truncate(time.Millisecond)
		c.ExpiresAt = &t
	}
	return c, nil
}

// twoStepRequest builds and sends one request of a TWO_STEP exchange: the
// parameters go in the body (form, JSON or XML) of a POST, in the query of
// a GET. tree, when set, is the parameters as written (nested, typed): a
// JSON or XML body is built from it.
func (r *refresher) twoStepRequest(ctx context.Context, p *integrations.Provider, endpoint, method, format string,
	params map[string]string, tree integrations.ParamTree, headers map[string]string, vars integrations.TemplateVars, secrets []string, free bool) (*exchangeAnswer, error) {
	vals := map[string]string{}
	get := strings.EqualFold(method, http.MethodGet)
	if tree != nil && !get && (format == "json" || format == "xml") {
		params = nil // the body is built from the tree
	}
	for _, k := range slices.Sorted(maps.Keys(params)) {
		v, err := integrations.Interpolate(params[k], vars)
		if err != nil {
			var mv *integrations.MissingValueError
			if errors.As(err, &mv) {
				return nil, &RefreshError{Code: CodeInvalidCredentials, Description: fmt.Sprintf("the token request parameter %q needs %s", k, strings.Join(mv.Names, ", ")), Err: err}
			}
			return nil, &RefreshError{Description: fmt.Sprintf("the token request parameter %q cannot be built", k), Err: err}
		}
		vals[k] = v
	}
	rq := exchangeRequest{endpoint: endpoint, method: http.MethodPost, headers: headers, secrets: secrets}
	if get {
		rq.method = http.MethodGet
		if len(vals) > 0 {
			rq.query = url.Values{}
			for k, v := range vals {
				rq.query.Set(k, v)
			}
		}
	} else {
		switch format {
		case "form":
			f := url.Values{}
			for k, v := range vals {
				f.Set(k, v)
			}
			rq.body, rq.contentType = []byte(f.Encode()), "application/x-www-form-urlencoded"
		case "json":
			rq.body, _ = json.Marshal(vals)
			if tree != nil {
				filled, err := evalTree(tree, vars, "")
				if err != nil {
					return nil, err
				}
				rq.body, _ = json.Marshal(filled)
			}
			rq.contentType = "application/json"
		case "xml":
			t := tree
			if t == nil {
				for _, k := range slices.Sorted(maps.Keys(params)) {
					t = append(t, integrations.ParamEntry{Key: k, Value: params[k]})
				}
			}
			filled, err := evalTree(t, vars, "")
			if err != nil {
				return nil, err
			}
			rq.body, rq.contentType = xmlBody(filled), "application/xml"
		default:
			return nil, &RefreshError{Description: fmt.Sprintf("the token request body format %q is not supported", format)}
		}
	}
	if h := headerValue(headers, "content-type"); h != "" {
		rq.contentType = ""
	}
	return r.send(ctx, p, rq, vars, free)
}

func headerValue(h map[string]string, name string) string {
	for k, v := range h {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return ""
}

// answerPath reads a dot path of an answer as text; "" is the whole
// answer (a JSON string, or the body's text).
func answerPath(a *exchangeAnswer, path string) (string, bool) {
	if path == "" {
		if s, ok := a.value.(string); ok {
			return s, true
		}
		if a.value == nil {
			return a.text, a.text != "" && !strings.HasPrefix(a.text, "<")
		}
		return "", false
	}
	m, ok := a.value.(map[string]any)
	if !ok {
		return "", false
	}
	switch v := lookupAny(m, path).(type) {
	case string:
		return v, true
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64), true
	}
	return "", false
}

// lookupAny reads a dot path of nested objects, then a key holding the
// dots.
func lookupAny(m map[string]any, path string) any {
	var cur any = m
	for _, k := range strings.Split(path, ".") {
		obj, ok := cur.(map[string]any)
		if !ok {
			cur = nil
			break
		}
		cur = obj[k]
	}
	if cur == nil {
		return m[path]
	}
	return cur
}

// parseExpireIn reads a lifetime: seconds (a number or numeric text), or a
// duration such as "1h" or "30m".
func parseExpireIn(v any) (time.Duration, bool) {
	var d time.Duration
	switch v := v.(type) {
	case float64:
		d = time.Duration(v * float64(time.Second))
	case string:
		if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
			d = time.Duration(f * float64(time.Second))
		} else if pd, err := time.ParseDuration(strings.ReplaceAll(strings.TrimSpace(v), " ", "")); err == nil {
			d = pd
		}
	}
	return d, d > 0 && d <= maxExpiresIn
}

// parseExpireAt reads an expiry date: RFC 3339 text (or a date and time
// without zone, taken as UTC), or seconds or milliseconds since the epoch.
func parseExpireAt(v any) (time.Time, bool) {
	switch v := v.(type) {
	case float64:
		if v > 1e12 {
			return time.UnixMilli(int64(v)), true
		}
		if v > 0 {
			return time.Unix(int64(v), 0), true
		}
	case string:
		s := strings.TrimSpace(v)
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			return parseExpireAt(f)
		}
		for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02 15:04:05", time.RFC1123, time.RFC1123Z} {
			if t, err := time.Parse(layout, s); err == nil {
				return t, true
			}
		}
	}
	return time.Time{}, false
}

// tokenModeCredentials checks the inputs of a token-mode auth call: the
// provider's credential fields that are not optional (nor computed: the
// assertion) are required, each text at most 64 KiB and matching its
// pattern (Authorize has refused control characters: textProblem).
func tokenModeCredentials(p *integrations.Provider, in AuthorizeInput) (*Credentials, error) {
	c := in.Credentials
	c.Type = in.Mode
	inputs := tokenInputs(&c)
	var required []string
	switch in.Mode {
	case integrations.AuthModeSignature:
		required = []string{"username", "password"}
	case integrations.AuthModeBill:
		required = []string{"username", "password", "organization_id", "dev_key"}
	default:
		for _, k := range slices.Sorted(maps.Keys(p.Credentials)) {
			f := p.Credentials[k]
			if !f.Optional && !f.Automated && !(k == "assertion" && p.Assertion != nil) {
				required = append(required, k)
			}
		}
	}
	for _, k := range required {
		v, ok := inputs[k]
		if s, isStr := v.(string); !ok || v == nil || (isStr && strings.TrimSpace(s) == "") {
			return nil, store.Invalid(CodeInvalidCredentials, fmt.Sprintf("The credentials need %s.", k),
				store.FieldError{Code: "required", Message: "is required", Path: []string{k}})
		}
	}
	flat := map[string]string{}
	for k, v := range inputs {
		flatten(k+".", v, flat)
	}
	for _, k := range slices.Sorted(maps.Keys(flat)) {
		v := flat[k]
		if len(v) > 64<<10 {
			return nil, store.Invalid(CodeInvalidCredentials, fmt.Sprintf("The credential %s is too long.", k),
				store.FieldError{Code: "invalid_value", Message: "is at most 64 KiB", Path: strings.Split(k, ".")})
		}
		if f, ok := p.Credentials[k]; ok && v != "" && !matches(f.Pattern, v) {
			return nil, store.Invalid(CodeInvalidCredentials, fmt.Sprintf("The credential %s does not match the pattern %s.", k, f.Pattern),
				store.FieldError{Code: "invalid_value", Message: "does not match " + f.Pattern, Path: []string{k}})
		}
	}
	return &c, nil
}

// exchangeCredentials obtains the token of a token-mode auth call (nothing
// is stored when it fails) and returns the credentials and the connection
// config values the provider's token_response_metadata names.
func (ss *Sessions) exchangeCredentials(ctx context.Context, envID int64, key string, p *integrations.Provider, creds *Credentials, cfg map[string]string) (*Credentials, map[string]any, error) {
	var integ map[string]string
	if len(p.IntegrationConfig) > 0 && ss.cfg.Integrations != nil {
		it, err := ss.cfg.Integrations.Get(ctx, envID, key)
		if err != nil {
			return nil, nil, err
		}
		integ = integrationConfigValues(p, it)
	}
	out, err := ss.cc.exchange(ctx, p, creds, cfg, integ)
	if err != nil {
		var re *RefreshError
		switch {
		case errors.As(err, &re) && re.notSent():
			return nil, nil, store.Invalid(re.Code, "The token request failed: "+re.Description+".")
		case errors.As(err, &re) && re.Code == CodeInvalidCredentials && re.Status == 0:
			return nil, nil, store.Invalid(CodeInvalidCredentials, "The credentials cannot be used: "+re.Description+".")
		case errors.As(err, &re):
			return nil, nil, store.Invalid(CodeTokenExchangeFailed, "The provider refused the credentials: "+re.summary()+".")
		}
		return nil, nil, err
	}
	meta := map[string]any{}
	for _, path := range p.TokenResponseMetadata {
		if v := lookupAny(out.Raw, path); v != nil {
			meta[path] = v
		}
	}
	return out, meta, nil
}

// checkTokenModeImport applies the rules of imported token-mode
// credentials: SIGNATURE and BILL need their fixed inputs, TWO_STEP and
// JWT at least one input. A token (for BILL, session_id) and expires_at
// may be given; without a token one is obtained when the connection is
// first read (see RefreshDue).
func checkTokenModeImport(c *Credentials) error {
	req := func(ok bool, field string) error {
		if ok {
			return nil
		}
		return store.Invalid(CodeInvalidCredentials, fmt.Sprintf("%s is required for %s connections.", field, c.Type),
			store.FieldError{Code: "required", Message: "is required", Path: []string{"credentials", field}})
	}
	text := func(k string) string { s, _ := c.Inputs[k].(string); return strings.TrimSpace(s) }
	c.ObtainedAt = nil
	switch c.Type {
	case integrations.AuthModeSignature:
		if err := req(c.Username != "", "username"); err != nil {
			return err
		}
		return req(c.Password != "", "password")
	case integrations.AuthModeBill:
		for _, f := range []struct {
			ok   bool
			name string
		}{{c.Username != "", "username"}, {c.Password != "", "password"}, {text("organization_id") != "", "organization_id"}, {text("dev_key") != "", "dev_key"}} {
			if err := req(f.ok, f.name); err != nil {
				return err
			}
		}
		if s := text("session_id"); s != "" {
			c.Token = s
		}
		if u := text("user_id"); u != "" {
			if c.Raw == nil {
				c.Raw = map[string]any{}
			}
			c.Raw["userId"] = u
		}
		delete(c.Inputs, "session_id")
		delete(c.Inputs, "user_id")
	default:
		// The free-form inputs hold these; the fields stay empty.
		c.Username, c.Password, c.ClientID, c.ClientSecret, c.APIKey = "", "", "", "", ""
		if err := req(len(c.Inputs) > 0, "the provider's credential fields"); err != nil {
			return err
		}
	}
	flat := map[string]string{}
	for k, v := range c.Inputs {
		flatten(k+".", v, flat)
	}
	for k, v := range flat {
		if len(v) > 64<<10 {
			return store.Invalid(CodeInvalidCredentials, fmt.Sprintf("The credential %s is too long.", k),
				store.FieldError{Code: "invalid_value", Message: "is at most 64 KiB", Path: []string{"credentials", k}})
		}
	}
	return nil
}

// apiTokenCredentials fills the wire form of token-mode credentials, as
// Nango's types shape them: TWO_STEP and JWT {type, ...inputs, token,
// refresh_token (TWO_STEP, with withRefreshToken), expires_at, raw};
// SIGNATURE {type, username, password, token, expires_at}; BILL {type,
// username, password, organization_id, dev_key, session_id, user_id,
// expires_at, raw}.
func apiTokenCredentials(m *APICredentialsBody, c *Credentials, withRefreshToken bool) {
	token := c.Token
	m.Token = &token
	if c.ExpiresAt != nil {
		m.ExpiresAt = httpapi.Time(*c.ExpiresAt)
	}
	raw := func() *map[string]any {
		r := map[string]any{}
		for k, v := range c.Raw {
			if k != "refresh_token" || withRefreshToken {
				r[k] = v
			}
		}
		return &r
	}
	switch c.Type {
	case integrations.AuthModeSignature:
		m.Username, m.Password = &c.Username, &c.Password
	case integrations.AuthModeBill:
		m.Username, m.Password, m.Raw = &c.Username, &c.Password, raw()
		m.Token = nil
		user, _ := c.Raw["userId"].(string)
		m.Fields = map[string]any{"organization_id": c.Inputs["organization_id"], "dev_key": c.Inputs["dev_key"],
			"session_id": c.Token, "user_id": user}
	default:
		m.Fields = maps.Clone(c.Inputs)
		if c.Type == integrations.AuthModeTwoStep {
			m.Raw = raw()
			if withRefreshToken {
				m.RefreshToken = c.RefreshToken
			}
		}
	}
}

// MarshalJSON writes the credentials with their Fields beside the others
// (a field of the same name as one of them is left out).
func (b APICredentialsBody) MarshalJSON() ([]byte, error) {
	type plain APICredentialsBody
	out, err := json.Marshal(plain(b))
	if err != nil || len(b.Fields) == 0 {
		return out, err
	}
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		return nil, err
	}
	for k, v := range b.Fields {
		if _, taken := m[k]; !taken {
			m[k] = v
		}
	}
	return json.Marshal(m)
}

// TemplateCredentials are the values of ${credentials.NAME} in the proxy's
// templates for token-mode credentials: the inputs (nested ones as dotted
// names), username and password, and for BILL session_id, organization_id,
// dev_key and user_id.
func (c *Credentials) TemplateCredentials() map[string]string {
	out := map[string]string{}
	for k, v := range tokenInputs(c) {
		flatten(k+".", v, out)
	}
	if c.Type == integrations.AuthModeBill {
		out["session_id"] = c.Token
		if u, ok := c.Raw["userId"].(string); ok {
			out["user_id"] = u
		}
	}
	return out
}

// integrationConfigValues are the values an integration holds for its
// provider's integration_config fields: its custom value (sealed) else its
// integration_config value; fields without one are left out.
func integrationConfigValues(p *integrations.Provider, it *integrations.Integration) map[string]string {
	out := map[string]string{}
	for k, f := range p.IntegrationConfig {
		if v := it.Custom[k]; strings.TrimSpace(v) != "" {
			out[k] = v
		} else if v := it.IntegrationConfig[k]; strings.TrimSpace(v) != "" && !f.Secret {
			out[k] = v // a secret is read only from custom, which is sealed
		}
	}
	return out
}

// integrationValues reads the integration_config values of a connection's
// integration for a renewal (none when the provider declares none).
func (r *refresher) integrationValues(ctx context.Context, p *integrations.Provider, envID int64, key string) (map[string]string, error) {
	if len(p.IntegrationConfig) == 0 || r.cfg.Integration == nil {
		return nil, nil
	}
	it, err := r.cfg.Integration(ctx, envID, key)
	if err != nil {
		return nil, fmt.Errorf("connections: integration %q: %w", key, err)
	}
	return integrationConfigValues(p, it), nil
}
