package e2e

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
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
func TestAuthModesSignedBrowser(t *testing.T) {
	bs := newBrowserSuite(t)

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
			if oauthParam(h, "oauth_consumer_key") != "ns-consumer" || oauthParam(h, "oauth_token") != "tok-id" {
				http.Error(w, "unknown consumer or token", 401)
				return
			}
			realm, _, _, err := checkOAuth1HMAC256(r, "http://"+r.Host, "ns-consumer-secret", "tok-secret")
			if err != nil {
				http.Error(w, err.Error(), 401)
				return
			}
			u.tba = append(u.tba, realm+"|"+r.URL.Path)
			fmt.Fprint(w, `{"ok":true}`)
		case strings.HasPrefix(r.URL.Path, "/sts/") && r.Method == http.MethodPost:
			form, _ := url.ParseQuery(string(body))
			akid, _, service, err := sigV4Check(r, body, func(a string) (string, bool) { return "owner-secret", a == "AKIAOWNER" })
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
			akid, _, _, err := sigV4Check(r, body, func(a string) (string, bool) { c, ok := u.temp[a]; return c[0], ok && a == u.latest })
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

// pctEncode is RFC 3986 percent-encoding (unreserved characters kept).
func pctEncode(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// checkOAuth1HMAC256 verifies the OAuth 1 HMAC-SHA256 signature of r
// (whose scheme and host are base's) and returns its realm, consumer key
// and token, or an error.
func checkOAuth1HMAC256(r *http.Request, base, consumerSecret, tokenSecret string) (realm, consumer, token string, err error) {
	h, ok := strings.CutPrefix(r.Header.Get("Authorization"), "OAuth ")
	if !ok {
		return "", "", "", fmt.Errorf("no OAuth header: %q", r.Header.Get("Authorization"))
	}
	params := map[string]string{}
	for _, part := range strings.Split(h, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		uv, uerr := url.PathUnescape(strings.Trim(v, `"`))
		if uerr != nil {
			return "", "", "", uerr
		}
		params[k] = uv
	}
	if params["oauth_signature_method"] != "HMAC-SHA256" {
		return "", "", "", fmt.Errorf("signature method %q", params["oauth_signature_method"])
	}
	var pairs []string
	for k, v := range params {
		if k == "oauth_signature" || k == "realm" {
			continue
		}
		pairs = append(pairs, pctEncode(k)+"="+pctEncode(v))
	}
	for k, vs := range r.URL.Query() {
		for _, v := range vs {
			pairs = append(pairs, pctEncode(k)+"="+pctEncode(v))
		}
	}
	sort.Strings(pairs)
	baseString := r.Method + "&" + pctEncode(base+r.URL.Path) + "&" + pctEncode(strings.Join(pairs, "&"))
	mac := hmac.New(sha256.New, []byte(pctEncode(consumerSecret)+"&"+pctEncode(tokenSecret)))
	mac.Write([]byte(baseString))
	if want := base64.StdEncoding.EncodeToString(mac.Sum(nil)); !hmac.Equal([]byte(want), []byte(params["oauth_signature"])) {
		return "", "", "", fmt.Errorf("bad signature")
	}
	return params["realm"], params["oauth_consumer_key"], params["oauth_token"], nil
}

func oauthParam(h, name string) string {
	for _, part := range strings.Split(strings.TrimPrefix(h, "OAuth "), ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		if k == name {
			s, _ := url.PathUnescape(strings.Trim(v, `"`))
			return s
		}
	}
	return ""
}

// sigV4Check verifies the AWS Signature Version 4 of r for the secret
// key, written from AWS's specification: canonical request, string to
// sign, derived key. It returns the access key id, region and service of
// the credential scope.
func sigV4Check(r *http.Request, body []byte, secretOf func(akid string) (string, bool)) (akid, region, service string, err error) {
	auth, ok := strings.CutPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ")
	if !ok {
		return "", "", "", fmt.Errorf("no SigV4 Authorization: %q", r.Header.Get("Authorization"))
	}
	fields := map[string]string{}
	for _, part := range strings.Split(auth, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		fields[k] = v
	}
	scope := strings.Split(fields["Credential"], "/")
	if len(scope) != 5 || scope[4] != "aws4_request" {
		return "", "", "", fmt.Errorf("credential %q", fields["Credential"])
	}
	akid, date, region, service := scope[0], scope[1], scope[2], scope[3]
	secret, ok := secretOf(akid)
	if !ok {
		return "", "", "", fmt.Errorf("unknown access key %s", akid)
	}
	amzDate := r.Header.Get("X-Amz-Date")
	if !strings.HasPrefix(amzDate, date) {
		return "", "", "", fmt.Errorf("date %q, scope %q", amzDate, date)
	}
	signed := strings.Split(fields["SignedHeaders"], ";")
	var ch strings.Builder
	for _, h := range signed {
		var v string
		switch h {
		case "host":
			v = r.Host
		case "content-length":
			v = strconv.FormatInt(r.ContentLength, 10)
		default:
			v = strings.Join(r.Header.Values(h), ",")
		}
		ch.WriteString(h + ":" + strings.Join(strings.Fields(v), " ") + "\n")
	}
	q := r.URL.Query()
	var qs []string
	for k, vs := range q {
		for _, v := range vs {
			qs = append(qs, pctEncode(k)+"="+pctEncode(v))
		}
	}
	sort.Strings(qs)
	var segs []string
	for _, s := range strings.Split(r.URL.Path, "/") {
		segs = append(segs, pctEncode(s))
	}
	path := strings.Join(segs, "/")
	if service != "s3" { // every service but S3 encodes the path twice
		segs = segs[:0]
		for _, s := range strings.Split(path, "/") {
			segs = append(segs, pctEncode(s))
		}
		path = strings.Join(segs, "/")
	}
	sum := sha256.Sum256(body)
	creq := strings.Join([]string{r.Method, path, strings.Join(qs, "&"), ch.String(), fields["SignedHeaders"], hex.EncodeToString(sum[:])}, "\n")
	cs := sha256.Sum256([]byte(creq))
	sts := strings.Join([]string{"AWS4-HMAC-SHA256", amzDate, strings.Join(scope[1:], "/"), hex.EncodeToString(cs[:])}, "\n")
	mac := func(key []byte, s string) []byte {
		m := hmac.New(sha256.New, key)
		m.Write([]byte(s))
		return m.Sum(nil)
	}
	k := mac(mac(mac(mac([]byte("AWS4"+secret), date), region), service), "aws4_request")
	if want := hex.EncodeToString(mac(k, sts)); want != fields["Signature"] {
		return "", "", "", fmt.Errorf("bad signature")
	}
	return akid, region, service, nil
}
