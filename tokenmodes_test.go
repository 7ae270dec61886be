package connect_test

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/integrations"
)

// tokenAPI is a fake provider of the token modes: a TWO_STEP token and
// refresh endpoint (Valley's), a Bill login, and an API that records the
// headers it gets. Each token it issues is new.
type tokenAPI struct {
	srv *httptest.Server
	mu  sync.Mutex
	n   int
	// refuse makes the token endpoints answer 401.
	refuse bool
	reqs   []tokenAPIRequest
}

type tokenAPIRequest struct {
	method, path, contentType string
	header                    http.Header
	body                      map[string]any
}

func newTokenAPI(t *testing.T) *tokenAPI {
	f := &tokenAPI{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rec := tokenAPIRequest{method: r.Method, path: r.URL.Path, contentType: r.Header.Get("Content-Type"), header: r.Header.Clone()}
		_ = json.Unmarshal(b, &rec.body)
		f.mu.Lock()
		f.reqs = append(f.reqs, rec)
		f.n++
		n, refuse := f.n, f.refuse
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/api/v1/auth/get-token", "/api/v1/auth/refresh-token", "/connect/v3/login":
			if refuse {
				w.WriteHeader(http.StatusUnauthorized)
				fmt.Fprintf(w, `{"message":"bad credentials for %v"}`, rec.body["password"])
				return
			}
			if r.URL.Path == "/connect/v3/login" {
				fmt.Fprintf(w, `{"sessionId":"sess-%d","userId":"user-1","organizationId":"org-1"}`, n)
				return
			}
			fmt.Fprintf(w, `{"access_token":"tok-%d","refresh_token":"rt-%d","expires_in":3600}`, n, n)
		default:
			fmt.Fprint(w, `{"ok":true}`)
		}
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *tokenAPI) last(t *testing.T) tokenAPIRequest {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.reqs) == 0 {
		t.Fatal("the fake provider got no request")
	}
	return f.reqs[len(f.reqs)-1]
}

func (f *tokenAPI) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.reqs)
}

// tokenModesYAML holds entries of Nango's providers.yaml (0.71.10) for
// each token mode, their URLs pointed at the fake: valley (TWO_STEP),
// snowflake-jwt (JWT), emarsys (SIGNATURE) and bill (BILL; the entry sends
// no header, so two are added here to see the session reach the proxy).
const tokenModesYAML = `
valley:
    display_name: Valley
    auth_mode: TWO_STEP
    proxy:
        base_url: %[1]s/api/
        headers:
            authorization: Bearer ${accessToken}
    token_url: %[1]s/api/v1/auth/get-token
    refresh_url: %[1]s/api/v1/auth/refresh-token
    token_params:
        email: ${credentials.email}
        password: ${credentials.password}
    refresh_token_params:
        refresh_token: ${refresh_token}
    token_headers:
        content-type: application/json
    body_format: json
    token_response:
        token: access_token
        token_expiration: expires_in
        token_expiration_strategy: expireIn
        refresh_token: refresh_token
    credentials:
        email:
            type: string
            title: Email
        password:
            type: string
            title: Password
            secret: true
snowflake-jwt:
    display_name: Snowflake (JWT)
    auth_mode: JWT
    proxy:
        base_url: %[1]s
        headers:
            authorization: Bearer ${accessToken}
            accept: application/json
            x-snowflake-authorization-token-type: KEYPAIR_JWT
    signature:
        protocol: RSA
    token:
        signing_key: ${credentials.privateKey}
        expires_in_ms: 3600000
        header:
            alg: RS256
            typ: JWT
        payload:
            iss: ${credentials.accountIdentifier}.${credentials.userName}.${fingerprint(${credentials.privateKey})}
            sub: ${credentials.accountIdentifier}.${credentials.userName}
    credentials:
        accountIdentifier:
            type: string
            title: Account Identifier
        userName:
            type: string
            title: User Name
        privateKey:
            type: string
            title: Private Key
            secret: true
emarsys:
    display_name: Emarsys Core API (WSSE)
    auth_mode: SIGNATURE
    signature:
        protocol: WSSE
    token:
        expires_in_ms: 300000
    proxy:
        base_url: %[1]s
        headers:
            x-wsse: ${accessToken}
            content-type: application/json
    credentials:
        username:
            type: string
            title: ID
            pattern: ^[a-zA-Z0-9_-]+$
        password:
            type: string
            title: Client Secret
            pattern: ^[a-zA-Z0-9-]+$
bill:
    display_name: Bill (Connect API)
    auth_mode: BILL
    token_url: %[1]s/connect/v3/login
    proxy:
        base_url: %[1]s/connect
        headers:
            sessionId: ${credentials.session_id}
            devKey: ${credentials.dev_key}
`

type tokenBundle struct {
	*sessionBundle
	api *tokenAPI
}

func tokenSetup(t *testing.T, b *backend) *tokenBundle {
	t.Helper()
	f := newTokenAPI(t)
	ps, err := integrations.Load(strings.NewReader(fmt.Sprintf(tokenModesYAML, f.srv.URL)))
	if err != nil {
		t.Fatal(err)
	}
	sb := sessionSetup(t, b, func(cfg *connect.Config) {
		cat, err := cfg.Providers.With(ps...)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Providers = cat
	})
	for _, p := range []string{"valley", "snowflake-jwt", "emarsys", "bill"} {
		sb.mustDo(t, 200, req{method: "POST", path: "/integrations", body: `{"provider":"` + p + `","unique_key":"` + p + `"}`})
	}
	return &tokenBundle{sessionBundle: sb, api: f}
}

// getCreds reads a connection with its credentials (query: extra
// parameters such as force_refresh=true).
func (tb *tokenBundle) getCreds(t *testing.T, key, id, query string) map[string]any {
	t.Helper()
	r := tb.mustDo(t, 200, req{method: "GET", path: "/connections/" + id + "?provider_config_key=" + key + "&" + query})
	c, _ := r.obj()["credentials"].(map[string]any)
	if c == nil {
		t.Fatalf("no credentials in %s", r.raw)
	}
	return c
}

// proxyHeaders proxies GET /probe through the connection and returns what
// the fake upstream got.
func (tb *tokenBundle) proxyHeaders(t *testing.T, key, id string) http.Header {
	t.Helper()
	tb.mustDo(t, 200, req{method: "GET", path: "/proxy/probe", header: map[string]string{"Connection-Id": id, "Provider-Config-Key": key}})
	last := tb.api.last(t)
	if !strings.HasSuffix(last.path, "/probe") {
		t.Fatalf("the upstream got %s, want the proxied request", last.path)
	}
	return last.header
}

// TestTokenModeTwoStep: Valley's entry. The frontend route sends the token
// request the entry describes (JSON body of the filled params), stores the
// token, the refresh token and the expiry, the proxy sends the entry's
// header, a forced refresh uses refresh_url with the stored refresh token,
// and a due one (the clock moved near the expiry) does too. A refused
// token request answers 400 without the password and stores nothing.
func TestTokenModeTwoStep(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		tb := tokenSetup(t, b)
		tok := tb.session(t, `{"tags":{}}`)

		tb.api.mu.Lock()
		tb.api.refuse = true
		tb.api.mu.Unlock()
		r := tb.auth(t, "/auth/two-step/valley", tok, "", `{"type":"TWO_STEP","email":"a@example.com","password":"hunter22"}`)
		if r.status != 400 || r.errCode() != "connection_test_failed" || strings.Contains(string(r.raw), "hunter22") ||
			!strings.Contains(string(r.raw), "401") || r.header.Get("Access-Control-Allow-Origin") != "*" {
			t.Fatalf("refused token request: %d %s", r.status, r.raw)
		}
		if n := len(tb.connections(t)); n != 0 {
			t.Fatalf("a refused token request stored %d connections", n)
		}
		tb.api.mu.Lock()
		tb.api.refuse = false
		tb.api.mu.Unlock()

		r = tb.auth(t, "/auth/two-step/valley", tok, "", `{"type":"TWO_STEP","email":"a@example.com","password":"hunter22"}`)
		if r.status != 200 || r.obj()["providerConfigKey"] != "valley" {
			t.Fatalf("%d %s", r.status, r.raw)
		}
		id := r.obj()["connectionId"].(string)
		first := tb.api.last(t)
		n := tb.api.count()
		if first.method != "POST" || first.path != "/api/v1/auth/get-token" || first.contentType != "application/json" ||
			fmt.Sprint(first.body) != fmt.Sprint(map[string]any{"email": "a@example.com", "password": "hunter22"}) {
			t.Errorf("token request %+v", first)
		}
		creds := tb.getCreds(t, "valley", id, "refresh_token=true")
		want := map[string]any{"type": "TWO_STEP", "email": "a@example.com", "password": "hunter22", "token": fmt.Sprintf("tok-%d", n),
			"refresh_token": fmt.Sprintf("rt-%d", n), "expires_at": tb.clock.at(time.Hour).Format("2006-01-02T15:04:05.000Z")}
		for k, v := range want {
			if creds[k] != v {
				t.Errorf("credentials[%s] = %v, want %v (%v)", k, creds[k], v, creds)
			}
		}
		if h := tb.proxyHeaders(t, "valley", id); h.Get("Authorization") != fmt.Sprintf("Bearer tok-%d", n) {
			t.Errorf("proxied Authorization %q", h.Get("Authorization"))
		}

		// Forced: the refresh request with the stored refresh token.
		creds = tb.getCreds(t, "valley", id, "force_refresh=true")
		rf := tb.api.last(t)
		if rf.path != "/api/v1/auth/refresh-token" || fmt.Sprint(rf.body) != fmt.Sprint(map[string]any{"refresh_token": fmt.Sprintf("rt-%d", n)}) {
			t.Errorf("refresh request %+v", rf)
		}
		if creds["token"] == want["token"] || creds["token"] == nil {
			t.Errorf("forced refresh kept the token %v", creds["token"])
		}
		forced := creds["token"]
		if h := tb.proxyHeaders(t, "valley", id); h.Get("Authorization") != fmt.Sprint("Bearer ", forced) {
			t.Errorf("after refresh, proxied Authorization %q, want Bearer %v", h.Get("Authorization"), forced)
		}

		// Due: 5 minutes before the expiry a read renews it.
		tb.clock.advance(55 * time.Minute)
		creds = tb.getCreds(t, "valley", id, "")
		if creds["token"] == forced {
			t.Errorf("a due token was not renewed: %v", creds)
		}
	})
}

// TestTokenModeJWT: snowflake-jwt's entry. The token is signed here with
// the end user's RSA key: the fake verifies it with the public key and
// checks the claims computed from the inputs (the fingerprint
// independently); the proxy sends it as the entry's header; a forced
// refresh signs a new one.
func TestTokenModeJWT(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		tb := tokenSetup(t, b)
		tok := tb.session(t, `{"tags":{}}`)
		key, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			t.Fatal(err)
		}
		der, _ := x509.MarshalPKCS8PrivateKey(key)
		pemKey := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
		pub, _ := x509.MarshalPKIXPublicKey(&key.PublicKey)
		sum := sha256.Sum256(pub)
		fp := "SHA256:" + base64.StdEncoding.EncodeToString(sum[:])

		// A key that is not a key: 400, nothing stored.
		r := tb.auth(t, "/auth/jwt/snowflake-jwt", tok, "", `{"type":"JWT","accountIdentifier":"ACME","userName":"BOB","privateKey":"nope"}`)
		if r.status != 400 || r.errCode() != "invalid_credentials" || len(tb.connections(t)) != 0 {
			t.Fatalf("bad key: %d %s", r.status, r.raw)
		}
		body, _ := json.Marshal(map[string]string{"type": "JWT", "accountIdentifier": "ACME", "userName": "BOB", "privateKey": pemKey})
		r = tb.auth(t, "/auth/jwt/snowflake-jwt", tok, "", string(body))
		if r.status != 200 {
			t.Fatalf("%d %s", r.status, r.raw)
		}
		id := r.obj()["connectionId"].(string)
		check := func(h http.Header) string {
			t.Helper()
			if h.Get("X-Snowflake-Authorization-Token-Type") != "KEYPAIR_JWT" {
				t.Errorf("headers %v", h)
			}
			raw, ok := strings.CutPrefix(h.Get("Authorization"), "Bearer ")
			if !ok {
				t.Fatalf("Authorization %q", h.Get("Authorization"))
			}
			claims := jwt.MapClaims{}
			if _, err := jwt.ParseWithClaims(raw, claims, func(*jwt.Token) (any, error) { return &key.PublicKey, nil },
				jwt.WithValidMethods([]string{"RS256"}), jwt.WithoutClaimsValidation()); err != nil {
				t.Fatalf("the token does not verify: %v", err)
			}
			if claims["iss"] != "ACME.BOB."+fp || claims["sub"] != "ACME.BOB" {
				t.Errorf("claims %v", claims)
			}
			iat, _ := claims["iat"].(float64)
			exp, _ := claims["exp"].(float64)
			if exp-iat != 3600 {
				t.Errorf("lifetime %v", exp-iat)
			}
			return raw
		}
		t1 := check(tb.proxyHeaders(t, "snowflake-jwt", id))
		creds := tb.getCreds(t, "snowflake-jwt", id, "")
		if creds["token"] != t1 || creds["privateKey"] != pemKey || creds["userName"] != "BOB" || creds["type"] != "JWT" {
			t.Errorf("credentials %v", creds)
		}
		tb.clock.advance(2 * time.Second)
		creds = tb.getCreds(t, "snowflake-jwt", id, "force_refresh=true")
		t2 := check(tb.proxyHeaders(t, "snowflake-jwt", id))
		if t2 == t1 || creds["token"] != t2 {
			t.Errorf("a forced refresh kept the token")
		}
	})
}

var wsseRE = regexp.MustCompile(`^UsernameToken Username="([^"]*)", PasswordDigest="([^"]*)", Nonce="([0-9a-f]{32})", Created="([^"]*)"$`)

// TestTokenModeSignature: emarsys's entry. The proxy sends X-WSSE, whose
// digest the fake recomputes from the nonce, the creation time and the
// secret; a forced refresh and an import (without a token) make new ones.
func TestTokenModeSignature(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		tb := tokenSetup(t, b)
		tok := tb.session(t, `{"tags":{}}`)
		r := tb.auth(t, "/auth/signature/emarsys", tok, "", `{"type":"SIGNATURE","username":"acme_1","password":"bad secret!"}`)
		if r.status != 400 || r.errCode() != "invalid_credentials" {
			t.Fatalf("pattern: %d %s", r.status, r.raw)
		}
		r = tb.auth(t, "/auth/signature/emarsys", tok, "", `{"type":"SIGNATURE","username":"acme_1","password":"s3cret-1"}`)
		if r.status != 200 {
			t.Fatalf("%d %s", r.status, r.raw)
		}
		id := r.obj()["connectionId"].(string)
		check := func(h http.Header) string {
			t.Helper()
			m := wsseRE.FindStringSubmatch(h.Get("X-Wsse"))
			if m == nil || m[1] != "acme_1" {
				t.Fatalf("X-WSSE %q", h.Get("X-Wsse"))
			}
			sum := sha1.Sum([]byte(m[3] + m[4] + "s3cret-1"))
			if want := base64.StdEncoding.EncodeToString([]byte(hex.EncodeToString(sum[:]))); m[2] != want {
				t.Errorf("digest %s, want %s", m[2], want)
			}
			if h.Get("Authorization") != "Bearer "+h.Get("X-Wsse") {
				t.Errorf("Authorization %q", h.Get("Authorization"))
			}
			return h.Get("X-Wsse")
		}
		w1 := check(tb.proxyHeaders(t, "emarsys", id))
		creds := tb.getCreds(t, "emarsys", id, "")
		if creds["token"] != w1 || creds["username"] != "acme_1" || creds["password"] != "s3cret-1" ||
			creds["expires_at"] != tb.clock.at(5*time.Minute).Format("2006-01-02T15:04:05.000Z") {
			t.Errorf("credentials %v", creds)
		}
		tb.getCreds(t, "emarsys", id, "force_refresh=true")
		if w2 := check(tb.proxyHeaders(t, "emarsys", id)); w2 == w1 {
			t.Error("a forced refresh kept the token")
		}

		// Import without a token: one is made on the first read.
		tb.mustDo(t, 201, req{method: "POST", path: "/connections", body: `{"provider_config_key":"emarsys","connection_id":"imp",
			"credentials":{"type":"SIGNATURE","username":"acme_1","password":"s3cret-1"}}`})
		check(tb.proxyHeaders(t, "emarsys", "imp"))
	})
}

// TestTokenModeBill: bill's entry. The login gets the four fields as Bill
// names them, the session id is kept (35 minutes), sent through the proxy,
// and renewed by a forced refresh; a refused login stores nothing.
func TestTokenModeBill(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		tb := tokenSetup(t, b)
		tok := tb.session(t, `{"tags":{}}`)
		r := tb.auth(t, "/auth/bill/bill", tok, "", `{"username":"u@example.com","password":"pw-1234","organization_id":"org-1"}`)
		if r.status != 400 || r.errCode() != "invalid_credentials" || len(tb.connections(t)) != 0 {
			t.Fatalf("missing dev_key: %d %s", r.status, r.raw)
		}
		tb.api.mu.Lock()
		tb.api.refuse = true
		tb.api.mu.Unlock()
		body := `{"username":"u@example.com","password":"pw-1234","organization_id":"org-1","dev_key":"dk-1"}`
		r = tb.auth(t, "/auth/bill/bill", tok, "", body)
		if r.status != 400 || strings.Contains(string(r.raw), "pw-1234") || len(tb.connections(t)) != 0 {
			t.Fatalf("refused login: %d %s", r.status, r.raw)
		}
		tb.api.mu.Lock()
		tb.api.refuse = false
		tb.api.mu.Unlock()
		r = tb.auth(t, "/auth/bill/bill", tok, "", body)
		if r.status != 200 {
			t.Fatalf("%d %s", r.status, r.raw)
		}
		id := r.obj()["connectionId"].(string)
		login := tb.api.last(t)
		if login.path != "/connect/v3/login" || login.contentType != "application/json" || fmt.Sprint(login.body) !=
			fmt.Sprint(map[string]any{"username": "u@example.com", "password": "pw-1234", "organizationId": "org-1", "devKey": "dk-1"}) {
			t.Errorf("login %+v", login)
		}
		sess := fmt.Sprintf("sess-%d", tb.api.count())
		creds := tb.getCreds(t, "bill", id, "")
		if creds["session_id"] != sess || creds["user_id"] != "user-1" || creds["organization_id"] != "org-1" || creds["dev_key"] != "dk-1" ||
			creds["expires_at"] != tb.clock.at(35*time.Minute).Format("2006-01-02T15:04:05.000Z") {
			t.Errorf("credentials %v", creds)
		}
		if h := tb.proxyHeaders(t, "bill", id); h.Get("Sessionid") != sess || h.Get("Devkey") != "dk-1" || h.Get("Authorization") != "" {
			t.Errorf("proxied headers %v", h)
		}
		creds = tb.getCreds(t, "bill", id, "force_refresh=true")
		if creds["session_id"] == sess {
			t.Error("a forced refresh kept the session")
		}
	})
}

// TestTokenModeImport: a TWO_STEP import with its token stores it as
// given (no token request); bad imports are 400 and store nothing.
func TestTokenModeImport(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		tb := tokenSetup(t, b)
		n := tb.api.count()
		tb.mustDo(t, 201, req{method: "POST", path: "/connections", body: `{"provider_config_key":"valley","connection_id":"v1",
			"credentials":{"type":"TWO_STEP","email":"a@example.com","password":"pw","token":"given","expires_at":"2030-01-01T00:00:00Z"}}`})
		creds := tb.getCreds(t, "valley", "v1", "")
		if creds["token"] != "given" || creds["email"] != "a@example.com" || creds["expires_at"] != "2030-01-01T00:00:00.000Z" || tb.api.count() != n {
			t.Errorf("credentials %v, %d requests", creds, tb.api.count()-n)
		}
		if h := tb.proxyHeaders(t, "valley", "v1"); h.Get("Authorization") != "Bearer given" {
			t.Errorf("Authorization %q", h.Get("Authorization"))
		}
		for _, body := range []string{
			`{"provider_config_key":"emarsys","connection_id":"x","credentials":{"type":"SIGNATURE","username":"u"}}`,
			`{"provider_config_key":"bill","connection_id":"x","credentials":{"type":"BILL","username":"u","password":"p","organization_id":"o"}}`,
			`{"provider_config_key":"valley","connection_id":"x","credentials":{"type":"TWO_STEP"}}`,
			`{"provider_config_key":"valley","connection_id":"x","credentials":{"type":"JWT","privateKey":"k"}}`,
		} {
			if r := tb.do(t, req{method: "POST", path: "/connections", body: body}); r.status != 400 {
				t.Errorf("%s: %d %s", body, r.status, r.raw)
			}
		}
		if r := tb.do(t, req{method: "GET", path: "/connections/x?provider_config_key=valley"}); r.status != 404 {
			t.Errorf("a bad import stored a connection: %d", r.status)
		}
	})
}
