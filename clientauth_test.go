package connect_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/egress"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/integrations"
)

// testCA is a certificate authority of a test: it issues client
// certificates (PEM certificate, PKCS #8 PEM key).
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert: cert, key: key, pool: pool}
}

// issue returns a client certificate for cn and its key, in PEM.
func (ca *testCA) issue(t *testing.T, cn string) (certPEM, keyPEM string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	pk, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pk}))
}

// adpEntry is the adp entry of Nango's providers.yaml (0.71.10), its
// token and base URLs replaced by TOKENURL and BASEURL.
const adpEntry = `adp:
    display_name: ADP
    auth_mode: OAUTH2_CC
    categories:
        - hr
    proxy:
        base_url: BASEURL
    token_url: TOKENURL
    token_params:
        grant_type: client_credentials
    require_client_certificate: true
    docs: https://nango.dev/docs/integrations/all/adp
    credentials:
        client_certificate:
            type: string
            title: Client Public Certificate
            pattern: '^-----BEGIN CERTIFICATE-----\s*([A-Za-z0-9+/=\s]+)\s*-----END CERTIFICATE-----$'
            secret: true
        client_private_key:
            type: string
            title: Client Private Key
            pattern: '^-----BEGIN PRIVATE KEY-----\s*([A-Za-z0-9+/=\s]+)\s*-----END PRIVATE KEY-----$'
            secret: true
`

// catalogWith returns the default catalogue with the providers of a
// Nango providers.yaml fragment.
func catalogWith(t *testing.T, yaml string) *integrations.Catalog {
	t.Helper()
	ps, err := integrations.LoadNangoYAML(strings.NewReader(yaml))
	if err != nil {
		t.Fatal(err)
	}
	base, err := integrations.DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	cat, err := base.With(ps...)
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

// fakeMTLS is a token endpoint (/token) and an API (/api/...) served
// over TLS that require a client certificate issued by the test CA for
// CN "adp-client": the TLS handshake fails without one.
type fakeMTLS struct {
	srv *httptest.Server
	mu  sync.Mutex
	// issued is the number of tokens issued; tokenForms and apiCalls
	// what the token endpoint and the API received.
	issued     int
	tokenForms []url.Values
	apiCalls   []string // CN|Authorization|path
}

func newFakeMTLS(t *testing.T, ca *testCA) *fakeMTLS {
	f := &fakeMTLS{}
	f.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 || r.TLS.PeerCertificates[0].Subject.CommonName != "adp-client" {
			http.Error(w, `{"error":"no_client_certificate"}`, 401)
			return
		}
		cn := r.TLS.PeerCertificates[0].Subject.CommonName
		switch {
		case r.URL.Path == "/token":
			b, _ := io.ReadAll(r.Body)
			form, _ := url.ParseQuery(string(b))
			if r.Method != "POST" || form.Get("grant_type") != "client_credentials" || form.Get("client_id") != "adp-id" || form.Get("client_secret") != "adp-secret" {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(401)
				fmt.Fprint(w, `{"error":"invalid_client"}`)
				return
			}
			f.tokenForms = append(f.tokenForms, form)
			f.issued++
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"access_token":"adp-token-%d","token_type":"Bearer","expires_in":3600}`, f.issued)
		case strings.HasPrefix(r.URL.Path, "/api/"):
			want := fmt.Sprintf("Bearer adp-token-%d", f.issued)
			f.apiCalls = append(f.apiCalls, cn+"|"+r.Header.Get("Authorization")+"|"+r.URL.Path)
			if r.Header.Get("Authorization") != want {
				http.Error(w, `{"error":"bad token"}`, 401)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"workers":[]}`)
		default:
			http.NotFound(w, r)
		}
	}))
	f.srv.TLS = &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.pool, MinVersion: tls.VersionTLS12}
	f.srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes of the test
	f.srv.StartTLS()
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeMTLS) snapshot() (tokens []url.Values, api []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]url.Values(nil), f.tokenForms...), append([]string(nil), f.apiCalls...)
}

// trusting returns a mutate that trusts the certificates of TLS test
// servers (and allows loopback, as setup does).
func trusting(srvs ...*httptest.Server) func(*connect.Config) {
	pool := x509.NewCertPool()
	for _, s := range srvs {
		pool.AddCert(s.Certificate())
	}
	return func(cfg *connect.Config) {
		cfg.Egress = egress.Policy{AllowLoopback: true, RootCAs: pool}
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestClientCertificate: an ADP connection (require_client_certificate)
// through the frontend client's route: the certificate and key are
// checked, stored sealed and presented on the token request and on the
// proxied calls to a server that only answers with that client
// certificate; a forced refresh gets a new token with it. A certificate of
// another CA, none, or a bad PEM pair are 4xx and store nothing; the list
// of connections never shows the key; an import with the PEMs works too.
func TestClientCertificate(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		ca, other := newTestCA(t, "test CA"), newTestCA(t, "other CA")
		certPEM, keyPEM := ca.issue(t, "adp-client")
		otherCert, otherKey := other.issue(t, "adp-client")
		_, strayKey := ca.issue(t, "adp-client")
		f := newFakeMTLS(t, ca)
		cat := catalogWith(t, strings.NewReplacer("TOKENURL", f.srv.URL+"/token", "BASEURL", f.srv.URL+"/api").Replace(adpEntry))
		bu := setup(t, b, trusting(f.srv), func(cfg *connect.Config) { cfg.Providers = cat })
		bu.mustDo(t, 200, req{method: "POST", path: "/integrations", body: `{"provider":"adp","unique_key":"adp"}`})
		tok := bu.session(t, `{"end_user":{"id":"u1"},"allowed_integrations":["adp"]}`)
		body := func(cert, key string) string {
			return `{"client_id":"adp-id","client_secret":"adp-secret","client_certificate":` + jsonString(cert) + `,"client_private_key":` + jsonString(key) + `}`
		}
		for _, c := range []struct{ name, body, code string }{
			{"no certificate", `{"client_id":"adp-id","client_secret":"adp-secret"}`, "invalid_credentials"},
			{"no key", body(certPEM, ""), "invalid_credentials"},
			{"key of another certificate", body(certPEM, strayKey), "invalid_credentials"},
			{"not PEM", body("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----", keyPEM), "invalid_credentials"},
			{"certificate of another CA", body(otherCert, otherKey), "provider_unreachable"},
		} {
			r := bu.auth(t, "/oauth2/auth/adp", tok, "", c.body)
			if r.status != 400 || r.errCode() != c.code {
				t.Errorf("%s: %d %s, want 400 %s", c.name, r.status, r.raw, c.code)
			}
			for _, secret := range []string{"PRIVATE KEY", "adp-secret"} {
				if strings.Contains(string(r.raw), secret) {
					t.Errorf("%s: the answer holds %q: %s", c.name, secret, r.raw)
				}
			}
		}
		if n := len(listConnections(t, bu)); n != 0 {
			t.Fatalf("refusals stored %d connections", n)
		}
		if tokens, _ := f.snapshot(); len(tokens) != 0 {
			t.Fatalf("refused certificates got tokens: %v", tokens)
		}

		// Pasted with "\n" written out, as a JSON string of a form often is.
		r := bu.auth(t, "/oauth2/auth/adp", tok, "", body(strings.ReplaceAll(certPEM, "\n", `\n`), keyPEM))
		if r.status != 200 {
			t.Fatalf("auth: %d %s", r.status, r.raw)
		}
		id, _ := r.obj()["connectionId"].(string)
		g := bu.mustDo(t, 200, req{method: "GET", path: "/connections/" + id + "?provider_config_key=adp"}).obj()
		cr, _ := g["credentials"].(map[string]any)
		if cr["type"] != "OAUTH2_CC" || cr["token"] != "adp-token-1" || cr["client_certificate"] != strings.TrimSpace(certPEM) ||
			cr["client_private_key"] != strings.TrimSpace(keyPEM) || cr["client_secret"] != "adp-secret" {
			t.Fatalf("credentials %v", cr)
		}
		list := bu.mustDo(t, 200, req{method: "GET", path: "/connections"})
		if strings.Contains(string(list.raw), "PRIVATE KEY") || strings.Contains(string(list.raw), "CERTIFICATE") {
			t.Fatalf("the list shows the key: %s", list.raw)
		}
		readOnly, _, err := bu.svc.Environments().CreateAPIKey(t.Context(), bu.env.ID, environmentsKey("read", "environment:connections:read"))
		if err != nil {
			t.Fatal(err)
		}
		if ro := bu.mustDo(t, 200, req{method: "GET", path: "/connections/" + id + "?provider_config_key=adp", key: readOnly}); strings.Contains(string(ro.raw), "PRIVATE KEY") {
			t.Fatalf("a key without read_credentials sees the key: %s", ro.raw)
		}
		// Stored sealed: the store's row holds neither PEM.
		c := connectionRow(t, bu, "adp", id)
		if strings.Contains(c, "PRIVATE KEY") || strings.Contains(c, "BEGIN CERTIFICATE") {
			t.Fatalf("the stored row holds the PEMs in clear")
		}

		h := map[string]string{"Connection-Id": id, "Provider-Config-Key": "adp"}
		bu.mustDo(t, 200, req{method: "GET", path: "/proxy/v2/workers", header: h})
		f2 := bu.mustDo(t, 200, req{method: "GET", path: "/connections/" + id + "?provider_config_key=adp&force_refresh=true"}).obj()
		if fc, _ := f2["credentials"].(map[string]any); fc["token"] != "adp-token-2" {
			t.Fatalf("after a forced refresh: %v", fc)
		}
		bu.mustDo(t, 200, req{method: "GET", path: "/proxy/v2/workers", header: h})
		tokens, api := f.snapshot()
		if len(tokens) != 2 || len(api) != 2 || api[0] != "adp-client|Bearer adp-token-1|/api/v2/workers" || api[1] != "adp-client|Bearer adp-token-2|/api/v2/workers" {
			t.Fatalf("tokens %v, API calls %q", tokens, api)
		}

		// Import with the PEMs and no token: the first proxied call gets one.
		bu.mustDo(t, 201, req{method: "POST", path: "/connections", body: `{"provider_config_key":"adp","connection_id":"imp",
			"credentials":{"type":"OAUTH2_CC","client_id":"adp-id","client_secret":"adp-secret","client_certificate":` + jsonString(certPEM) +
			`,"client_private_key":` + jsonString(keyPEM) + `}}`})
		bu.mustDo(t, 200, req{method: "GET", path: "/proxy/v2/workers", header: map[string]string{"Connection-Id": "imp", "Provider-Config-Key": "adp"}})
		if tokens, api := f.snapshot(); len(tokens) != 3 || api[len(api)-1] != "adp-client|Bearer adp-token-3|/api/v2/workers" {
			t.Fatalf("after the import: tokens %v, API calls %q", tokens, api)
		}
		for _, c := range []struct{ name, creds string }{
			{"import without certificate", `{"type":"OAUTH2_CC","client_id":"adp-id","client_secret":"adp-secret"}`},
			{"import with a stray key", `{"type":"OAUTH2_CC","client_id":"adp-id","client_secret":"adp-secret","client_certificate":` + jsonString(certPEM) + `,"client_private_key":` + jsonString(strayKey) + `}`},
		} {
			r := bu.do(t, req{method: "POST", path: "/connections", body: `{"provider_config_key":"adp","connection_id":"bad","credentials":` + c.creds + `}`})
			if r.status != 400 || r.errCode() != "invalid_credentials" || strings.Contains(string(r.raw), "PRIVATE KEY") {
				t.Errorf("%s: %d %s", c.name, r.status, r.raw)
			}
		}
		bu.mustDo(t, 404, req{method: "GET", path: "/connections/bad?provider_config_key=adp"})
	})
}

// oktaCCEntry is the okta-cc entry of Nango's providers.yaml (0.71.10),
// its token and base URLs (from connectionConfig.hostname, which cannot
// hold the fake's port) replaced by TOKENURL and BASEURL.
const oktaCCEntry = `okta-cc:
    display_name: Okta (Client Credentials)
    categories:
        - dev-tools
        - iam
    auth_mode: OAUTH2_CC
    token_url: TOKENURL
    token_request_auth_method: private_key_jwt
    token_params:
        grant_type: client_credentials
    proxy:
        base_url: BASEURL
    docs: https://nango.dev/docs/api-integrations/okta-cc
    credentials:
        client_id:
            type: string
            title: Client ID
        client_private_key:
            type: string
            title: Private Key (JWK)
            secret: true
`

// privateJWK returns an RSA key and its private JWK (kid "key-1").
func privateJWK(t *testing.T) (*rsa.PrivateKey, string) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	key.Precompute()
	b64 := func(i *big.Int) string { return base64.RawURLEncoding.EncodeToString(i.Bytes()) }
	j, _ := json.Marshal(map[string]string{"kty": "RSA", "kid": "key-1", "use": "sig",
		"n": b64(key.N), "e": b64(big.NewInt(int64(key.E))), "d": b64(key.D), "p": b64(key.Primes[0]), "q": b64(key.Primes[1]),
		"dp": b64(key.Precomputed.Dp), "dq": b64(key.Precomputed.Dq), "qi": b64(key.Precomputed.Qinv)})
	return key, string(j)
}

// TestPrivateKeyJWT: an Okta client-credentials connection
// (private_key_jwt): the token request carries a client assertion that
// the fake verifies with the public key, checking every claim; no client
// secret is sent; a bad JWK is refused at connect time.
func TestPrivateKeyJWT(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		key, jwk := privateJWK(t)
		clock := newRefreshClock()
		var mu sync.Mutex
		var jtis []string
		var issued int
		var problems []string
		srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			defer mu.Unlock()
			tokenURL := "https://" + r.Host + "/oauth2/v1/token"
			if r.URL.Path != "/oauth2/v1/token" {
				if r.Header.Get("Authorization") != fmt.Sprintf("Bearer okta-token-%d", issued) {
					http.Error(w, "bad token", 401)
					return
				}
				fmt.Fprint(w, `{"users":[]}`)
				return
			}
			b, _ := io.ReadAll(r.Body)
			form, _ := url.ParseQuery(string(b))
			fail := func(format string, args ...any) {
				problems = append(problems, fmt.Sprintf(format, args...))
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(401)
				fmt.Fprint(w, `{"error":"invalid_client","error_description":"bad assertion"}`)
			}
			if form.Get("grant_type") != "client_credentials" || form.Get("client_assertion_type") != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer" ||
				form.Has("client_secret") || r.Header.Get("Authorization") != "" {
				fail("form %v", form)
				return
			}
			claims := jwt.MapClaims{}
			tok, err := jwt.ParseWithClaims(form.Get("client_assertion"), claims, func(tk *jwt.Token) (any, error) {
				if tk.Header["kid"] != "key-1" {
					return nil, fmt.Errorf("kid %v", tk.Header["kid"])
				}
				return &key.PublicKey, nil
			}, jwt.WithValidMethods([]string{"RS256"}), jwt.WithTimeFunc(clock.Now), jwt.WithIssuedAt(),
				jwt.WithAudience(tokenURL), jwt.WithIssuer("okta-client"), jwt.WithSubject("okta-client"), jwt.WithExpirationRequired())
			if err != nil || !tok.Valid {
				fail("assertion: %v", err)
				return
			}
			iat, _ := claims.GetIssuedAt()
			exp, _ := claims.GetExpirationTime()
			jti, _ := claims["jti"].(string)
			if !iat.Time.Equal(clock.Now().Truncate(time.Second)) || exp.Sub(iat.Time) != 5*time.Minute || len(jti) < 16 {
				fail("iat %v exp %v jti %q", iat, exp, jti)
				return
			}
			for _, seen := range jtis {
				if seen == jti {
					fail("jti %s reused", jti)
					return
				}
			}
			jtis = append(jtis, jti)
			issued++
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"access_token":"okta-token-%d","token_type":"Bearer","expires_in":3600,"scope":"okta.users.read"}`, issued)
		}))
		t.Cleanup(srv.Close)
		bu := setup(t, b, trusting(srv), func(cfg *connect.Config) {
			cfg.Providers = catalogWith(t, strings.NewReplacer("TOKENURL", srv.URL+"/oauth2/v1/token", "BASEURL", srv.URL).Replace(oktaCCEntry))
			cfg.Now = clock.Now
		})
		bu.mustDo(t, 200, req{method: "POST", path: "/integrations", body: `{"provider":"okta-cc","unique_key":"okta"}`})
		tok := bu.session(t, `{"end_user":{"id":"u1"},"allowed_integrations":["okta"]}`)
		q := ""
		var wrong map[string]any
		_ = json.Unmarshal([]byte(jwk), &wrong)
		wrong["dp"] = "AQAB"
		wrongDP, _ := json.Marshal(wrong)
		for _, c := range []struct{ name, body string }{
			{"no key", `{"client_id":"okta-client"}`},
			{"not JSON", `{"client_id":"okta-client","client_private_key":"-----BEGIN PRIVATE KEY-----"}`},
			{"EC key", `{"client_id":"okta-client","client_private_key":"{\"kty\":\"EC\",\"kid\":\"k\",\"crv\":\"P-256\"}"}`},
			{"no kid", `{"client_id":"okta-client","client_private_key":` + jsonString(strings.Replace(jwk, `"kid":"key-1"`, `"kid":""`, 1)) + `}`},
			{"inconsistent dp", `{"client_id":"okta-client","client_private_key":` + jsonString(string(wrongDP)) + `}`},
			{"certificate", `{"client_id":"okta-client","client_private_key":` + jsonString(jwk) + `,"client_certificate":"-----BEGIN CERTIFICATE-----"}`},
		} {
			r := bu.auth(t, "/oauth2/auth/okta", tok, q, c.body)
			if r.status != 400 || r.errCode() != "invalid_credentials" || strings.Contains(string(r.raw), `"d"`) {
				t.Errorf("%s: %d %s", c.name, r.status, r.raw)
			}
		}
		if n := len(listConnections(t, bu)); n != 0 || issued != 0 {
			t.Fatalf("refusals stored %d connections, got %d tokens", n, issued)
		}
		r := bu.auth(t, "/oauth2/auth/okta", tok, q, `{"client_id":"okta-client","client_private_key":`+jsonString(jwk)+`}`)
		if r.status != 200 {
			t.Fatalf("auth: %d %s (fake: %v)", r.status, r.raw, problems)
		}
		id, _ := r.obj()["connectionId"].(string)
		h := map[string]string{"Connection-Id": id, "Provider-Config-Key": "okta"}
		bu.mustDo(t, 200, req{method: "GET", path: "/proxy/api/v1/users", header: h})
		clock.advance(time.Minute)
		g := bu.mustDo(t, 200, req{method: "GET", path: "/connections/" + id + "?provider_config_key=okta&force_refresh=true"}).obj()
		if cr, _ := g["credentials"].(map[string]any); cr["token"] != "okta-token-2" || cr["client_private_key"] != jwk {
			t.Fatalf("after a forced refresh: %v", cr)
		}
		bu.mustDo(t, 200, req{method: "GET", path: "/proxy/api/v1/users", header: h})
		mu.Lock()
		defer mu.Unlock()
		if issued != 2 || len(problems) != 0 {
			t.Fatalf("issued %d, problems %v", issued, problems)
		}
	})
}

// zoominfoEntry is the zoominfo entry of Nango's providers.yaml (0.71.10),
// its URLs replaced.
const zoominfoEntry = `zoominfo:
    display_name: ZoomInfo
    categories:
        - crm
    auth_mode: OAUTH2_CC
    proxy:
        base_url: BASEURL
    token_url: TOKENURL
    token_request_auth_method: custom
    body_format: json
`

// TestCustomTokenAuth: ZoomInfo's token_request_auth_method custom: the
// client id and secret go as username and password in a JSON body, and
// the token comes back as jwt.
func TestCustomTokenAuth(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		var mu sync.Mutex
		var bodies []string
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			defer mu.Unlock()
			if r.URL.Path == "/authenticate" {
				raw, _ := io.ReadAll(r.Body)
				bodies = append(bodies, r.Header.Get("Content-Type")+" "+string(raw))
				var m map[string]any
				if json.Unmarshal(raw, &m) != nil || len(m) != 2 || m["username"] != "zi-user" || m["password"] != "zi-pass" {
					http.Error(w, `{"error":"bad credentials"}`, 401)
					return
				}
				fmt.Fprintf(w, `{"jwt":"zi-jwt-%d"}`, len(bodies))
				return
			}
			if r.Header.Get("Authorization") != fmt.Sprintf("Bearer zi-jwt-%d", len(bodies)) {
				http.Error(w, "no", 401)
				return
			}
			fmt.Fprint(w, `{"data":[]}`)
		}))
		t.Cleanup(srv.Close)
		cat := catalogWith(t, strings.NewReplacer("TOKENURL", srv.URL+"/authenticate", "BASEURL", srv.URL).Replace(zoominfoEntry))
		bu := setup(t, b, func(cfg *connect.Config) { cfg.Providers = cat })
		bu.mustDo(t, 200, req{method: "POST", path: "/integrations", body: `{"provider":"zoominfo","unique_key":"zi"}`})
		tok := bu.session(t, `{"end_user":{"id":"u1"},"allowed_integrations":["zi"]}`)
		if r := bu.auth(t, "/oauth2/auth/zi", tok, "", `{"client_id":"zi-user","client_secret":"wrong"}`); r.status != 400 || strings.Contains(string(r.raw), "wrong") {
			t.Fatalf("bad password: %d %s", r.status, r.raw)
		}
		r := bu.auth(t, "/oauth2/auth/zi", tok, "", `{"client_id":"zi-user","client_secret":"zi-pass"}`)
		if r.status != 200 {
			t.Fatalf("auth: %d %s", r.status, r.raw)
		}
		id, _ := r.obj()["connectionId"].(string)
		bu.mustDo(t, 200, req{method: "GET", path: "/proxy/search/contact", header: map[string]string{"Connection-Id": id, "Provider-Config-Key": "zi"}})
		mu.Lock()
		defer mu.Unlock()
		if len(bodies) != 2 || bodies[1] != `application/json {"password":"zi-pass","username":"zi-user"}` {
			t.Fatalf("token requests %q", bodies)
		}
	})
}

// TestAWSSigV4Import: an AWS SigV4 connection imported with its role and
// no temporary credentials: the first proxied call assumes the role (with
// the imported external id) and signs with the temporary credentials;
// bad imports are 400 and store nothing.
func TestAWSSigV4Import(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		clock := newRefreshClock()
		aw := newFakeAWS(t, clock.Now)
		bu := setup(t, b, func(cfg *connect.Config) {
			cfg.Providers = catalogWith(t, strings.Replace(awsSigV4Entry, "BASEURL", aw.api.URL+"/${connectionConfig.service}/${connectionConfig.region}", 1))
			cfg.Now = clock.Now
			cfg.AWSSTSEndpoint = func(region string) string { return aw.sts.URL + "/" + region + "/" }
		})
		bu.mustDo(t, 200, req{method: "POST", path: "/integrations", body: `{"provider":"aws-sigv4","unique_key":"aws",
			"integration_config":{"service":"execute-api","defaultRegion":"eu-west-1","stsMode":"builtin"},
			"custom":{"awsAccessKeyId":"AKIAOWNER","awsSecretAccessKey":"owner-secret"}}`})
		for _, c := range []struct{ name, body, code string }{
			{"flat", `{"provider_config_key":"aws","connection_id":"x","access_token":"a"}`, "invalid_body"},
			{"no role", `{"provider_config_key":"aws","connection_id":"x","credentials":{"type":"AWS_SIGV4","region":"us-west-2"}}`, "invalid_credentials"},
			{"bad role", `{"provider_config_key":"aws","connection_id":"x","credentials":{"type":"AWS_SIGV4","role_arn":"arn:aws:s3:::b"}}`, "invalid_credentials"},
			{"bad region", `{"provider_config_key":"aws","connection_id":"x","credentials":{"type":"AWS_SIGV4","role_arn":"arn:aws:iam::123456789012:role/R","region":"evil.com/"}}`, "invalid_credentials"},
			{"partial keys", `{"provider_config_key":"aws","connection_id":"x","credentials":{"type":"AWS_SIGV4","role_arn":"arn:aws:iam::123456789012:role/R","access_key_id":"ASIA1"}}`, "invalid_credentials"},
			{"keys without expiry", `{"provider_config_key":"aws","connection_id":"x","credentials":{"type":"AWS_SIGV4","role_arn":"arn:aws:iam::123456789012:role/R","access_key_id":"A","secret_access_key":"S","session_token":"T"}}`, "invalid_credentials"},
		} {
			r := bu.do(t, req{method: "POST", path: "/connections", body: c.body})
			if r.status != 400 || r.errCode() != c.code {
				t.Errorf("%s: %d %s, want 400 %s", c.name, r.status, r.raw, c.code)
			}
		}
		if n := len(listConnections(t, bu)); n != 0 {
			t.Fatalf("refusals stored %d connections", n)
		}
		bu.mustDo(t, 201, req{method: "POST", path: "/connections", body: `{"provider_config_key":"aws","connection_id":"imp",
			"credentials":{"type":"AWS_SIGV4","role_arn":"arn:aws:iam::123456789012:role/Partner","region":"us-west-2","external_id":"ext-imported"}}`})
		if assumes, _ := aw.snapshot(); len(assumes) != 0 {
			t.Fatalf("the import assumed the role: %v", assumes)
		}
		h := map[string]string{"Connection-Id": "imp", "Provider-Config-Key": "aws"}
		px := bu.mustDo(t, 200, req{method: "POST", path: "/proxy/prod/items", header: h, body: `{"n":1}`})
		if px.obj()["body"] != `{"n":1}` {
			t.Errorf("proxy answer %s", px.raw)
		}
		assumes, api := aw.snapshot()
		if len(assumes) != 1 || assumes[0].Get("ExternalId") != "ext-imported" || assumes[0].Get("RoleArn") != "arn:aws:iam::123456789012:role/Partner" {
			t.Fatalf("AssumeRole %v", assumes)
		}
		if len(api) != 1 || api[0] != "ASIATEMP1|us-west-2|execute-api|POST /execute-api/us-west-2/prod/items" {
			t.Fatalf("API calls %q", api)
		}
		g := bu.mustDo(t, 200, req{method: "GET", path: "/connections/imp?provider_config_key=aws"}).obj()
		cr, _ := g["credentials"].(map[string]any)
		cc, _ := g["connection_config"].(map[string]any)
		if cr["access_key_id"] != "ASIATEMP1" || cr["service"] != "execute-api" || cr["external_id"] != "ext-imported" ||
			cc["region"] != "us-west-2" || cc["service"] != "execute-api" || cc["role_arn"] != "arn:aws:iam::123456789012:role/Partner" {
			t.Fatalf("credentials %v, config %v", cr, cc)
		}
		// A forced refresh assumes the role again.
		f := bu.mustDo(t, 200, req{method: "GET", path: "/connections/imp?provider_config_key=aws&force_refresh=true"}).obj()
		if fc, _ := f["credentials"].(map[string]any); fc["access_key_id"] != "ASIATEMP2" {
			t.Fatalf("after a forced refresh: %v", fc)
		}
	})
}

func environmentsKey(name, scope string) environments.NewAPIKey {
	return environments.NewAPIKey{Name: name, Scopes: []string{scope}}
}

// connectionRow returns the stored form of a connection: its sealed
// credentials and the rest, as the store holds them.
func connectionRow(t *testing.T, bu *bundle, key, id string) string {
	t.Helper()
	c, err := bu.b.store.GetConnection(t.Context(), bu.env.ID, key, id)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%+v", *c)
}

// withClientAuthProviders adds adp, okta-cc and zoominfo (their URLs on
// example hosts: bad input never reaches them) to the catalogue.
func withClientAuthProviders(t *testing.T) func(*connect.Config) {
	r := strings.NewReplacer("TOKENURL", "https://provider.example.com/token", "BASEURL", "https://provider.example.com")
	cat := catalogWith(t, r.Replace(adpEntry)+r.Replace(oktaCCEntry)+r.Replace(zoominfoEntry))
	return func(cfg *connect.Config) { cfg.Providers = cat }
}

// clientKeys are key material for bad-input rows.
type clientKeys struct {
	cert, key, stray, smallJWK string
}

func (k clientKeys) body(cert, key string) string {
	return `{"client_id":"i","client_secret":"s","client_certificate":` + jsonString(cert) + `,"client_private_key":` + jsonString(key) + `}`
}

// seedClientAuth creates the integrations adp, okta and zi and returns a
// session token that may connect them, and key material.
func seedClientAuth(t *testing.T, bu *bundle) (string, clientKeys) {
	t.Helper()
	for _, p := range [][2]string{{"adp", "adp"}, {"okta-cc", "okta"}, {"zoominfo", "zi"}} {
		bu.mustDo(t, 200, req{method: "POST", path: "/integrations", body: `{"provider":"` + p[0] + `","unique_key":"` + p[1] + `"}`})
	}
	ca := newTestCA(t, "bad input CA")
	var k clientKeys
	k.cert, k.key = ca.issue(t, "c")
	_, k.stray = ca.issue(t, "c")
	small, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	small.Precompute()
	b64 := func(i *big.Int) string { return base64.RawURLEncoding.EncodeToString(i.Bytes()) }
	j, _ := json.Marshal(map[string]string{"kty": "RSA", "kid": "k", "n": b64(small.N), "e": b64(big.NewInt(int64(small.E))),
		"d": b64(small.D), "p": b64(small.Primes[0]), "q": b64(small.Primes[1])})
	k.smallJWK = string(j)
	return bu.session(t, `{"tags":{},"allowed_integrations":["adp","okta","zi"]}`), k
}
