package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/golang-jwt/jwt/v5"
	"gopkg.in/yaml.v3"
)

// Values the fakes of TestAuthModesTokensBrowser accept, shared with
// e2e/browser/authmodes-tokens.test.mjs through the environment.
const (
	nsAccount       = "acme-1"
	nsClientID      = "ns-cc-client"
	nsCertificateID = "ns-cert-7"
	appleIssuer     = "57246542-96fe-1a63-e053-0824d011072a"
	appleKeyID      = "2X9R4HXF34"
	wsseUser        = "acme_1"
	wsseSecret      = "s3cret-1"
	billUser        = "ap@example.com"
	billPassword    = "bill-pass-1"
	billOrg         = "org-0001"
	billDevKey      = "dev-key-0001"
)

// TestAuthModesTokensBrowser connects, in headless Chromium, one provider
// of each token mode through @nangohq/frontend's headless auth()
// (e2e/browser/authmodes-tokens.test.mjs): netsuite-client-credentials
// (TWO_STEP, a JWT assertion signed with the end user's key from
// assertionOption), apple-app-store (JWT, ES256), emarsys (SIGNATURE,
// WSSE) and bill (BILL). It proxies a call through each, forces a refresh
// and checks the token changed. Then it connects the same four and
// netsuite-tba (TBA) and aws-sigv4 (AWS_SIGV4) through the pre-built
// connect UI's forms, reached by a connect_link, including a refused
// credential whose error the form shows. The entries are Nango's own
// (e2e/node_modules/@nangohq/providers/providers.yaml), with their URLs
// pointed at fakes that check what they receive: the token request's
// form and headers and the assertion's signature (with the public key),
// each JWT's signature, the WSSE digest recomputed from the secret, the
// Bill login's body, the OAuth 1 and SigV4 signatures.
func TestAuthModesTokensBrowser(t *testing.T) { browserTest(t, testAuthModesTokensBrowser) }

func testAuthModesTokensBrowser(t *testing.T, bs *browserSuite) {
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	up := newTokenUpstream(t, &rsaKey.PublicKey, &ecKey.PublicKey)
	signed := newSignedUpstream(t)
	providersFile := filepath.Join(t.TempDir(), "providers.yaml")
	if err := os.WriteFile(providersFile, tokenModeProviders(t, up.srv.URL, signed.srv.URL), 0o600); err != nil {
		t.Fatal(err)
	}

	rs := bs.newServer(t)
	srv := bs.start(t, rs, "CONNECT_PROVIDERS_FILE="+providersFile, "CONNECT_AWS_STS_ENDPOINT="+signed.srv.URL+"/sts/{region}/")
	api := rs.api
	for _, p := range []string{"netsuite-client-credentials", "apple-app-store", "emarsys", "bill"} {
		api.mustCreateIntegration(t, map[string]any{"unique_key": p, "provider": p})
	}
	api.mustCreateIntegration(t, map[string]any{"unique_key": "netsuite-tba", "provider": "netsuite-tba",
		"credentials": map[string]any{"type": "TBA", "client_id": "ns-consumer", "client_secret": "ns-consumer-secret"}})
	api.mustCreateIntegration(t, map[string]any{"unique_key": "aws-sigv4", "provider": "aws-sigv4",
		"integration_config": map[string]any{"service": "execute-api", "defaultRegion": "eu-west-1"},
		"custom":             map[string]any{"awsAccessKeyId": "AKIAOWNER", "awsSecretAccessKey": "owner-secret"}})

	rsaDER, err := x509.MarshalPKCS8PrivateKey(rsaKey)
	if err != nil {
		t.Fatal(err)
	}
	ecDER, err := x509.MarshalPKCS8PrivateKey(ecKey)
	if err != nil {
		t.Fatal(err)
	}
	fixtures, err := json.Marshal(map[string]string{
		"nsAccount": nsAccount, "nsClientID": nsClientID, "nsCertificateID": nsCertificateID,
		"nsPrivateKey":    string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: rsaDER})),
		"appleIssuer":     appleIssuer,
		"appleKeyID":      appleKeyID,
		"applePrivateKey": string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: ecDER})),
		"wsseUser":        wsseUser, "wsseSecret": wsseSecret,
		"billUser": billUser, "billPassword": billPassword, "billOrg": billOrg, "billDevKey": billDevKey,
	})
	if err != nil {
		t.Fatal(err)
	}
	bs.run(t, rs, "authmodes-tokens.test.mjs", "E2E_PAGE_URL="+bs.pageURL(t), "E2E_TOKENS=1", "E2E_TOKENS_FIXTURES="+string(fixtures))

	// What the fakes saw: every exchange and every proxied call checked
	// (a refusal would have failed the Node side); here the counts, and
	// that each proxied call carried the newest token of its connection.
	up.mu.Lock()
	defer up.mu.Unlock()
	if len(up.problems) > 0 {
		t.Errorf("the fake provider refused requests:\n%s", strings.Join(up.problems, "\n"))
	}
	// netsuite-client-credentials: frontend auth, its forced refresh, the
	// connect UI: three assertions, each with its own jti.
	if up.nsTokens != 3 || len(up.jtis) != 3 {
		t.Errorf("netsuite-client-credentials: %d token requests, %d distinct jti; want 3", up.nsTokens, len(up.jtis))
	}
	// bill: frontend auth, its forced refresh, the connect UI's refused
	// and accepted logins.
	if up.billLogins != 4 || up.billRefused != 1 {
		t.Errorf("bill: %d logins, %d refused; want 4 and 1", up.billLogins, up.billRefused)
	}
	for mode, calls := range map[string][]string{"TWO_STEP": up.nsCalls, "JWT": up.appleCalls, "SIGNATURE": up.wsseCalls, "BILL": up.billCalls} {
		// Per connection made through auth(): a call before and one after
		// the forced refresh, with different tokens.
		if len(calls) < 2 || calls[0] == calls[1] {
			t.Errorf("%s: proxied calls carried %q; want two with different tokens", mode, calls)
		}
	}
	signed.mu.Lock()
	defer signed.mu.Unlock()
	if len(signed.tba) != 1 || signed.tba[0] != "ACME_1|/ns/acme-1/account" {
		t.Errorf("TBA: calls %q; want the connect UI's verification", signed.tba)
	}
	if signed.issued != 1 {
		t.Errorf("AWS: %d AssumeRole; want the connect UI's one", signed.issued)
	}
	srv.stop(t)
}

// tokenModeProviders is the CONNECT_PROVIDERS_FILE of the test: Nango's
// own entries of the providers used, read from the published
// providers.yaml, with only their addresses moved to the fakes (base is
// the token modes' fake, signed the TBA and AWS one). Two entries get
// what the proxy needs and Nango's leaves to elsewhere: a proxy base URL
// for netsuite-client-credentials, and for netsuite-tba the account id
// and a verification call; bill gets the two headers Bill's API reads.
func tokenModeProviders(t *testing.T, base, signed string) []byte {
	t.Helper()
	raw, err := os.ReadFile(nangoProvidersFile)
	if err != nil {
		t.Fatal(err)
	}
	var all map[string]map[string]any
	if err := yaml.Unmarshal(raw, &all); err != nil {
		t.Fatal(err)
	}
	entry := func(name string) map[string]any {
		e := all[name]
		if e == nil {
			t.Fatalf("%s is not in %s", name, nangoProvidersFile)
		}
		return e
	}
	sub := func(m map[string]any, key string) map[string]any {
		v, ok := m[key].(map[string]any)
		if !ok {
			t.Fatalf("the entry has no %s object: %v", key, m)
		}
		return v
	}
	ns := entry("netsuite-client-credentials")
	nsToken := base + "/nscc/${connectionConfig.accountId}/services/rest/auth/oauth2/v1/token"
	ns["token_url"] = nsToken
	sub(sub(ns, "assertion"), "payload")["aud"] = nsToken
	ns["proxy"] = map[string]any{"base_url": base + "/nscc/${connectionConfig.accountId}/services/rest"}

	apple := entry("apple-app-store")
	sub(apple, "proxy")["base_url"] = base + "/apple"

	em := entry("emarsys")
	sub(em, "proxy")["base_url"] = base + "/emarsys"

	bill := entry("bill")
	bill["token_url"] = base + "/bill/connect/v3/login"
	sub(bill, "proxy")["base_url"] = base + "/bill/connect"
	sub(bill, "proxy")["headers"] = map[string]any{"sessionId": "${credentials.session_id}", "devKey": "${credentials.dev_key}"}

	tba := entry("netsuite-tba")
	tba["proxy"] = map[string]any{"base_url": signed + "/ns/${connectionConfig.accountId}",
		"verification": map[string]any{"endpoints": []any{"/account"}}}
	tba["connection_config"] = map[string]any{"accountId": map[string]any{"type": "string", "title": "Account ID",
		"pattern": "^[a-zA-Z0-9-_]+$"}}

	aws := entry("aws-sigv4")
	sub(aws, "proxy")["base_url"] = signed + "/aws/${connectionConfig.service}/${connectionConfig.region}"

	out, err := yaml.Marshal(map[string]any{"netsuite-client-credentials": ns, "apple-app-store": apple, "emarsys": em,
		"bill": bill, "netsuite-tba": tba, "aws-sigv4": aws})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// tokenUpstream is the fake NetSuite token endpoint and REST API
// (/nscc/), App Store Connect API (/apple/), Emarsys API (/emarsys/) and
// Bill Connect API (/bill/connect/). Every request is checked with the
// fake's own implementation of the scheme; a refusal is kept in problems
// (besides the deliberate Bill refusal).
type tokenUpstream struct {
	srv      *httptest.Server
	nsPub    *rsa.PublicKey
	applePub *ecdsa.PublicKey

	mu          sync.Mutex
	n           int
	problems    []string
	nsTokens    int
	jtis        map[string]bool
	nsIssued    string // the newest token
	billLogins  int
	billRefused int
	billSession string // the newest session
	nsCalls     []string
	appleCalls  []string
	wsseCalls   []string
	billCalls   []string
}

var wsseHeaderRE = regexp.MustCompile(`^UsernameToken Username="([^"]*)", PasswordDigest="([^"]*)", Nonce="([0-9a-f]+)", Created="([^"]*)"$`)

func newTokenUpstream(t *testing.T, nsPub *rsa.PublicKey, applePub *ecdsa.PublicKey) *tokenUpstream {
	u := &tokenUpstream{nsPub: nsPub, applePub: applePub, jtis: map[string]bool{}}
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		defer u.mu.Unlock()
		u.n++
		refuse := func(status int, format string, args ...any) {
			msg := fmt.Sprintf(format, args...)
			u.problems = append(u.problems, r.Method+" "+r.URL.Path+": "+msg)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": "invalid_request", "error_description": msg})
		}
		w.Header().Set("Content-Type", "application/json")
		nsToken := "/nscc/" + nsAccount + "/services/rest/auth/oauth2/v1/token"
		switch {
		case r.URL.Path == nsToken:
			if err := u.checkNetSuiteToken(r, body); err != nil {
				refuse(http.StatusBadRequest, "%v", err)
				return
			}
			u.nsTokens++
			u.nsIssued = fmt.Sprintf("ns-at-%d", u.n)
			fmt.Fprintf(w, `{"access_token":%q,"token_type":"Bearer","expires_in":3600}`, u.nsIssued)
		case strings.HasPrefix(r.URL.Path, "/nscc/"+nsAccount+"/services/rest/"):
			if got := r.Header.Get("Authorization"); got != "Bearer "+u.nsIssued {
				refuse(http.StatusUnauthorized, "Authorization %q, want the newest token %s", got, u.nsIssued)
				return
			}
			u.nsCalls = append(u.nsCalls, u.nsIssued)
			fmt.Fprint(w, `{"items":[]}`)
		case strings.HasPrefix(r.URL.Path, "/apple/"):
			tok, err := u.checkAppleJWT(r)
			if err != nil {
				refuse(http.StatusUnauthorized, "%v", err)
				return
			}
			u.appleCalls = append(u.appleCalls, tok)
			fmt.Fprint(w, `{"data":[]}`)
		case strings.HasPrefix(r.URL.Path, "/emarsys/"):
			h, err := checkWSSE(r.Header.Get("X-Wsse"))
			if err != nil {
				refuse(http.StatusUnauthorized, "%v", err)
				return
			}
			if r.URL.Path != "/emarsys/api/v2/settings" { // the verification call is not a proxied one
				u.wsseCalls = append(u.wsseCalls, h)
			}
			fmt.Fprint(w, `{"replyCode":0}`)
		case r.URL.Path == "/bill/connect/v3/login" && r.Method == http.MethodPost:
			var in map[string]any
			ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
			if err := json.Unmarshal(body, &in); err != nil || ct != "application/json" || len(in) != 4 ||
				in["username"] != billUser || in["organizationId"] != billOrg || in["devKey"] != billDevKey {
				refuse(http.StatusBadRequest, "login %s (%s)", body, ct)
				return
			}
			u.billLogins++
			if in["password"] != billPassword {
				u.billRefused++
				w.WriteHeader(http.StatusUnauthorized)
				fmt.Fprint(w, `{"error":"BDC_1109","message":"Invalid username or password"}`)
				return
			}
			u.billSession = fmt.Sprintf("bill-sess-%d", u.n)
			fmt.Fprintf(w, `{"sessionId":%q,"userId":"user-9","organizationId":%q}`, u.billSession, billOrg)
		case strings.HasPrefix(r.URL.Path, "/bill/connect/"):
			if r.Header.Get("SessionId") != u.billSession || r.Header.Get("DevKey") != billDevKey {
				refuse(http.StatusUnauthorized, "sessionId %q devKey %q, want %s", r.Header.Get("SessionId"), r.Header.Get("DevKey"), u.billSession)
				return
			}
			u.billCalls = append(u.billCalls, u.billSession)
			fmt.Fprint(w, `{"results":[]}`)
		default:
			refuse(http.StatusNotFound, "unexpected request")
		}
	}))
	t.Cleanup(u.srv.Close)
	return u
}

// checkNetSuiteToken checks a client-credentials token request with a JWT
// client assertion, as NetSuite's token endpoint does: a form POST whose
// assertion is signed with the key of the certificate it names, issued by
// the client, for this endpoint, unique and one hour long.
func (u *tokenUpstream) checkNetSuiteToken(r *http.Request, body []byte) error {
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if r.Method != http.MethodPost || ct != "application/x-www-form-urlencoded" {
		return fmt.Errorf("%s with Content-Type %q, want a form POST", r.Method, r.Header.Get("Content-Type"))
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return err
	}
	if form.Get("grant_type") != "client_credentials" || form.Get("client_assertion_type") != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer" || len(form) != 3 {
		return fmt.Errorf("form %v", form)
	}
	claims := jwt.MapClaims{}
	tok, err := jwt.ParseWithClaims(form.Get("client_assertion"), claims, func(*jwt.Token) (any, error) { return u.nsPub, nil },
		jwt.WithValidMethods([]string{"RS256"}), jwt.WithIssuedAt(), jwt.WithExpirationRequired())
	if err != nil {
		return fmt.Errorf("the client assertion does not verify: %v", err)
	}
	iat, _ := claims["iat"].(float64)
	exp, _ := claims["exp"].(float64)
	jti, _ := claims["jti"].(string)
	if tok.Header["kid"] != nsCertificateID || claims["iss"] != nsClientID || claims["aud"] != "http://"+r.Host+r.URL.Path ||
		exp-iat != 3600 || jti == "" || u.jtis[jti] {
		return fmt.Errorf("assertion header %v claims %v", tok.Header, claims)
	}
	u.jtis[jti] = true
	return nil
}

// checkAppleJWT checks an App Store Connect API token: ES256 with the
// key, its key id, issuer and audience, at most 20 minutes long.
func (u *tokenUpstream) checkAppleJWT(r *http.Request) (string, error) {
	raw, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return "", fmt.Errorf("Authorization %q", r.Header.Get("Authorization"))
	}
	claims := jwt.MapClaims{}
	tok, err := jwt.ParseWithClaims(raw, claims, func(*jwt.Token) (any, error) { return u.applePub, nil },
		jwt.WithValidMethods([]string{"ES256"}), jwt.WithAudience("appstoreconnect-v1"), jwt.WithIssuer(appleIssuer),
		jwt.WithIssuedAt(), jwt.WithExpirationRequired())
	if err != nil {
		return "", fmt.Errorf("the token does not verify: %v", err)
	}
	iat, _ := claims["iat"].(float64)
	exp, _ := claims["exp"].(float64)
	if tok.Header["kid"] != appleKeyID || exp-iat != 900 {
		return "", fmt.Errorf("token header %v claims %v", tok.Header, claims)
	}
	return raw, nil
}

// checkWSSE recomputes the digest of an X-WSSE UsernameToken, as Emarsys
// does: base64 of the hex SHA-1 of nonce, creation time and secret.
func checkWSSE(h string) (string, error) {
	m := wsseHeaderRE.FindStringSubmatch(h)
	if m == nil || m[1] != wsseUser {
		return "", fmt.Errorf("X-WSSE %q", h)
	}
	sum := sha1.Sum([]byte(m[3] + m[4] + wsseSecret))
	if want := base64.StdEncoding.EncodeToString([]byte(hex.EncodeToString(sum[:]))); !hmac.Equal([]byte(m[2]), []byte(want)) {
		return "", fmt.Errorf("WSSE digest %s, want %s", m[2], want)
	}
	return h, nil
}
