package e2e

import (
	"fmt"
	"github.com/embedauth/connect/internal/sigcheck"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestAuthModesSignedBrowser connects a NetSuite TBA and an AWS SigV4
// integration in headless Chromium through @nangohq/frontend's headless
// auth() (e2e/browser/authmodes-signed.test.mjs), proxies a call through
// each (the fake upstreams check the OAuth 1 HMAC-SHA256 and SigV4
// signatures with their own implementations) and forces a refresh (AWS:
// AssumeRole again). The reference server's STS is the fake's
// (CONNECT_AWS_STS_ENDPOINT).
func TestAuthModesSignedBrowser(t *testing.T) { browserTest(t, testAuthModesSignedBrowser) }

func testAuthModesSignedBrowser(t *testing.T, bs *browserSuite) {
	up := newSignedUpstream(t)
	providersFile := filepath.Join(t.TempDir(), "providers.yaml")
	if err := os.WriteFile(providersFile, []byte(fmt.Sprintf(`providers:
  - name: e2e-tba
    display_name: NetSuite TBA (fake)
    auth_mode: TBA
    proxy:
      base_url: %[1]s/ns/${connectionConfig.accountId}
      verification:
        endpoints: [/account]
    connection_config:
      accountId:
        type: string
        title: Account ID
        pattern: "^[a-zA-Z0-9-_]+$"
  - name: e2e-aws
    display_name: AWS (fake)
    auth_mode: AWS_SIGV4
    proxy:
      base_url: %[1]s/aws/${connectionConfig.service}/${connectionConfig.region}
    credentials:
      role_arn:
        type: string
        title: IAM Role ARN
    connection_config:
      region:
        type: string
        title: AWS Region
        optional: true
      service:
        type: string
        title: Service
        automated: true
`, up.srv.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	rs := bs.newServer(t)
	srv := bs.start(t, rs, "CONNECT_PROVIDERS_FILE="+providersFile, "CONNECT_AWS_STS_ENDPOINT="+up.srv.URL+"/sts/{region}/")
	api := rs.api
	api.mustCreateIntegration(t, map[string]any{"unique_key": "e2e-tba", "provider": "e2e-tba",
		"credentials": map[string]any{"type": "TBA", "client_id": "ns-consumer", "client_secret": "ns-consumer-secret"}})
	api.mustCreateIntegration(t, map[string]any{"unique_key": "e2e-aws", "provider": "e2e-aws",
		"integration_config": map[string]any{"service": "execute-api", "defaultRegion": "eu-west-1"},
		"custom":             map[string]any{"awsAccessKeyId": "AKIAOWNER", "awsSecretAccessKey": "owner-secret"}})

	bs.run(t, rs, "authmodes-signed.test.mjs", "E2E_PAGE_URL="+bs.pageURL(t), "E2E_SIGNED=1")

	up.mu.Lock()
	defer up.mu.Unlock()
	// TBA: the verification and one proxied call, signed with the realm.
	if len(up.tba) != 2 || up.tba[0] != "ACME_1|/ns/acme-1/account" || up.tba[1] != "ACME_1|/ns/acme-1/records/7" {
		t.Errorf("TBA calls %q", up.tba)
	}
	// AWS: AssumeRole at connection, at the forced refresh; proxied calls
	// with the first and then the renewed credentials.
	if up.issued != 2 || len(up.aws) != 2 || up.aws[0] != "ASIATEMP1|POST /aws/execute-api/us-west-2/items" ||
		up.aws[1] != "ASIATEMP2|GET /aws/execute-api/us-west-2/items" {
		t.Errorf("AWS: %d AssumeRole, calls %q", up.issued, up.aws)
	}
	srv.stop(t)
}

// signedUpstream is a fake NetSuite (/ns/), STS (/sts/) and AWS API
// (/aws/) that check every signature.
type signedUpstream struct {
	srv    *httptest.Server
	mu     sync.Mutex
	tba    []string // realm|path
	aws    []string // akid|method path
	issued int
	temp   map[string][2]string
	latest string
}

func newSignedUpstream(t *testing.T) *signedUpstream {
	u := &signedUpstream{temp: map[string][2]string{}}
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		defer u.mu.Unlock()
		switch {
		case strings.HasPrefix(r.URL.Path, "/ns/"):
			h := r.Header.Get("Authorization")
			if sigcheck.OAuthParam(h, "oauth_consumer_key") != "ns-consumer" || sigcheck.OAuthParam(h, "oauth_token") != "tok-id" {
				http.Error(w, "unknown consumer or token", 401)
				return
			}
			realm, _, _, err := sigcheck.OAuth1HMACSHA256(r, "http://"+r.Host, "ns-consumer-secret", "tok-secret")
			if err != nil {
				http.Error(w, err.Error(), 401)
				return
			}
			u.tba = append(u.tba, realm+"|"+r.URL.Path)
			fmt.Fprint(w, `{"ok":true}`)
		case strings.HasPrefix(r.URL.Path, "/sts/") && r.Method == http.MethodPost:
			form, _ := url.ParseQuery(string(body))
			akid, _, service, err := sigcheck.SigV4(r, body, func(a string) (string, bool) { return "owner-secret", a == "AKIAOWNER" })
			if err != nil || akid != "AKIAOWNER" || service != "sts" || form.Get("Action") != "AssumeRole" || form.Get("ExternalId") == "" {
				http.Error(w, "<ErrorResponse><Error><Code>AccessDenied</Code><Message>no</Message></Error></ErrorResponse>", 403)
				return
			}
			u.issued++
			id := fmt.Sprintf("ASIATEMP%d", u.issued)
			u.temp[id] = [2]string{fmt.Sprintf("temp-secret-%d", u.issued), fmt.Sprintf("session-%d", u.issued)}
			u.latest = id
			fmt.Fprintf(w, "<AssumeRoleResponse><AssumeRoleResult><Credentials><AccessKeyId>%s</AccessKeyId><SecretAccessKey>%s</SecretAccessKey>"+
				"<SessionToken>%s</SessionToken><Expiration>%s</Expiration></Credentials></AssumeRoleResult></AssumeRoleResponse>",
				id, u.temp[id][0], u.temp[id][1], time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
		default: // GetCallerIdentity and the API: the latest temporary credentials
			akid, _, _, err := sigcheck.SigV4(r, body, func(a string) (string, bool) { c, ok := u.temp[a]; return c[0], ok && a == u.latest })
			if err != nil || r.Header.Get("X-Amz-Security-Token") != u.temp[akid][1] {
				http.Error(w, fmt.Sprintf("refused: %v", err), 403)
				return
			}
			if strings.HasPrefix(r.URL.Path, "/aws/") {
				u.aws = append(u.aws, akid+"|"+r.Method+" "+r.URL.Path)
			}
			fmt.Fprint(w, `{"ok":true}`)
		}
	}))
	t.Cleanup(u.srv.Close)
	return u
}
