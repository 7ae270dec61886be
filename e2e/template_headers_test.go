package e2e

import (
	"context"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"github.com/embedauth/connect/internal/sigcheck"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// templateMarkers are what makes a proxy header or query template depend on
// a template function, the clock, randomness or the request.
var templateMarkers = []string{"base64(", "sha256Hex(", "sha256Base64(", "hmacSha1Hex(", "ed25519Sign(", "awsSigV4(",
	"${now", "${random}", "${method}", "${host}", "${path}", "${endpoint}", "${params}", "${bodyCanonicalParams}"}

// recordedRequest is one request the recording upstream received.
type recordedRequest struct {
	Method, Path, RawQuery, Host string
	Header                       http.Header
	Body                         []byte
	ContentLength                int64
}

// recordingUpstream answers 200 to everything and records each request.
type recordingUpstream struct {
	srv  *httptest.Server
	mu   sync.Mutex
	reqs []recordedRequest
}

func newRecordingUpstream(t *testing.T) *recordingUpstream {
	u := &recordingUpstream{}
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		u.reqs = append(u.reqs, recordedRequest{Method: r.Method, Path: r.URL.EscapedPath(), RawQuery: r.URL.RawQuery, Host: r.Host,
			Header: r.Header.Clone(), Body: b, ContentLength: r.ContentLength})
		u.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok":true}`))
	}))
	t.Cleanup(u.srv.Close)
	return u
}

// of returns the requests whose path starts with prefix.
func (u *recordingUpstream) of(prefix string) []recordedRequest {
	u.mu.Lock()
	defer u.mu.Unlock()
	var out []recordedRequest
	for _, r := range u.reqs {
		if strings.HasPrefix(r.Path, prefix+"/") {
			out = append(out, r)
		}
	}
	return out
}

// templateProvider is one provider of the file whose proxy templates are
// computed: how the test connects it and checks what it sends.
type templateProvider struct {
	mode string
	// config is the connection config, creds the import's credentials.
	config map[string]any
	creds  map[string]any
	// check returns what is wrong with one recorded request; endpoint is
	// the endpoint the proxy was asked for (with its query).
	check func(r recordedRequest, endpoint string) []string
}

var (
	uuidV4RE  = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	isoSecRE  = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$`)
	amzDateRE = regexp.MustCompile(`^\d{8}T\d{6}Z$`)
)

// TestTemplateHeaders starts the reference server with Nango's providers.yaml as npm ships
// it, only the base URLs of the providers under test rewritten to a recording upstream, and
// checks, for every provider whose proxy headers or query (or verification headers) use a
// template function, the clock, randomness or per-request values, that the proxy sends exactly
// the headers the provider expects: each connection is imported with known credentials and
// connection config, a GET with a query and a POST with a JSON body are proxied as
// @nangohq/node does, and every recorded request's headers are recomputed here with the
// standard library from what the templates mean (signatures verified over the values actually
// sent, dates and UUIDs checked for their format and agreement with what they sign).
func TestTemplateHeaders(t *testing.T) {
	requirePostgres := os.Getenv("CONNECT_REQUIRE_POSTGRES") == "1"
	requireNode := requirePostgres || os.Getenv("CI") == "true"
	adminURL := os.Getenv("TEST_DATABASE_URL")
	if adminURL == "" {
		if requirePostgres {
			t.Fatal("TEST_DATABASE_URL is not set and CONNECT_REQUIRE_POSTGRES=1: the end-to-end test needs Postgres")
		}
		t.Skip("TEST_DATABASE_URL is not set; set it (e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable) to run the end-to-end test")
	}
	data, err := os.ReadFile(nangoProvidersFile)
	if err != nil {
		skipOrFail(t, requireNode, "e2e/node_modules is missing @nangohq/providers: run `npm ci --prefix e2e` from the repository root")
	}

	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("parsing providers.yaml: %v", err)
	}
	var entries map[string]struct {
		AuthMode string `yaml:"auth_mode"`
		Alias    string `yaml:"alias"`
		Proxy    *struct {
			BaseURL      string         `yaml:"base_url"`
			Headers      map[string]any `yaml:"headers"`
			Query        map[string]any `yaml:"query"`
			Verification *struct {
				Headers map[string]any `yaml:"headers"`
			} `yaml:"verification"`
		} `yaml:"proxy"`
	}
	if err := yaml.Unmarshal(data, &entries); err != nil {
		t.Fatalf("parsing providers.yaml: %v", err)
	}
	// Providers whose proxy templates (their own or their alias target's:
	// an alias inherits proxy unless it has its own) are computed.
	var found []string
	for name := range entries {
		e, cur := entries[name], name
		for range 10 {
			if e.Proxy != nil || e.Alias == "" {
				break
			}
			cur = e.Alias
			e = entries[cur]
		}
		if e.Proxy == nil {
			continue
		}
		var vals []any
		for _, m := range []map[string]any{e.Proxy.Headers, e.Proxy.Query} {
			for _, v := range m {
				vals = append(vals, v)
			}
		}
		if e.Proxy.Verification != nil {
			for _, v := range e.Proxy.Verification.Headers {
				vals = append(vals, v)
			}
		}
		for _, v := range vals {
			s, _ := v.(string)
			if slices.ContainsFunc(templateMarkers, func(m string) bool { return strings.Contains(s, m) }) {
				found = append(found, name)
				break
			}
		}
	}
	sort.Strings(found)
	t.Logf("%d providers of providers.yaml compute proxy headers or query with templates: %s", len(found), strings.Join(found, ", "))
	if len(found) < 10 {
		t.Fatalf("only %d providers found with computed proxy templates; the scan is broken", len(found))
	}

	edPub, edPriv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(edPriv)
	if err != nil {
		t.Fatal(err)
	}
	edPEM := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	known := templateProviders(edPub, edPEM)

	var unchecked []string
	for _, name := range found {
		if _, ok := known[name]; !ok {
			unchecked = append(unchecked, name)
		}
	}
	if len(unchecked) > 0 {
		t.Errorf("providers with computed proxy templates that this test neither connects nor checks: %s", strings.Join(unchecked, ", "))
	}
	for name := range known {
		if !slices.Contains(found, name) {
			t.Errorf("%s is checked here but no longer has computed proxy templates in the file", name)
		}
	}

	// The server's providers file: the real one, only the base URLs of the
	// providers under test pointing at the recording upstream (under
	// /p/NAME, then the original base URL's path).
	up := newRecordingUpstream(t)
	rewritten := 0
	top := doc.Content[0]
	for i := 0; i+1 < len(top.Content); i += 2 {
		name := top.Content[i].Value
		if _, ok := known[name]; !ok {
			continue
		}
		base := mapValue(mapValue(top.Content[i+1], "proxy"), "base_url")
		if base == nil {
			t.Fatalf("%s has no proxy.base_url", name)
		}
		path := ""
		if rest, ok := strings.CutPrefix(base.Value, "https://"); ok {
			if j := strings.IndexByte(rest, '/'); j >= 0 {
				path = rest[j:]
			}
		}
		base.Value = up.srv.URL + "/p/" + name + path
		rewritten++
	}
	if rewritten != len(known) {
		t.Fatalf("rewrote %d base URLs, want %d", rewritten, len(known))
	}
	out, err := yaml.Marshal(&doc)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "providers.yaml")
	if err := os.WriteFile(file, out, 0o600); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	e2eDir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	bin := buildServer(t, filepath.Dir(e2eDir))
	dbURL := createDatabase(ctx, t, adminURL)
	apiKey := "e2e_" + randomHex(t, 24)
	port := freePort(t)
	srv := startServer(ctx, t, bin, []string{
		"CONNECT_PROVIDERS_FILE=" + file,
		"CONNECT_PROXY_ALLOW_PRIVATE_NETWORKS=true",
		"CONNECT_RATE_LIMIT=1000000",
		"PORT=" + port,
		"DATABASE_URL=" + dbURL,
		"CONNECT_ENCRYPTION_KEY=" + base64.StdEncoding.EncodeToString(randomBytes(t, 32)),
		"CONNECT_API_KEY=" + apiKey,
	})
	host := "http://127.0.0.1:" + port
	srv.waitHealthy(ctx, t, host+"/health")

	client := &http.Client{Timeout: 30 * time.Second}
	call := func(method, path string, header http.Header, body string) (int, []byte) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, method, host+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		hdr := header.Clone()
		if hdr == nil {
			hdr = http.Header{}
		}
		req.Header = hdr
		req.Header.Set("Authorization", "Bearer "+apiKey)
		if body != "" && req.Header.Get("Content-Type") == "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, b
	}

	const getEndpoint = "/v1/items?b=two%20words&a=1&z=x~y"
	const postEndpoint = "/v1/items"
	const postBody = `{"name":"Ada Lovelace","tag":"a&b=c","n":"42"}`
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range known {
			if !yield(k) {
				return
			}
		}
	}) {
		p := known[name]
		t.Run(name, func(t *testing.T) {
			in := map[string]any{"provider": name, "unique_key": name}
			if c := appCredentials(p.mode); c != nil {
				in["credentials"] = c
			}
			b, _ := json.Marshal(in)
			if status, body := call("POST", "/integrations", nil, string(b)); status != 200 {
				t.Fatalf("POST /integrations: %d %s", status, body)
			}
			imp := map[string]any{"provider_config_key": name, "connection_id": "conn-" + name, "connection_config": p.config}
			if p.mode == "OAUTH2" {
				for k, v := range p.creds {
					imp[k] = v
				}
			} else {
				creds := map[string]any{"type": p.mode}
				for k, v := range p.creds {
					creds[k] = v
				}
				imp["credentials"] = creds
			}
			b, _ = json.Marshal(imp)
			if status, body := call("POST", "/connections", nil, string(b)); status != 201 && status != 200 {
				t.Fatalf("import: %d %s", status, body)
			}
			before := len(up.of("/p/" + name))
			h := http.Header{"Connection-Id": {"conn-" + name}, "Provider-Config-Key": {name}}
			if status, body := call("GET", "/proxy"+getEndpoint, h, ""); status != 200 {
				t.Fatalf("proxied GET: %d %s", status, body)
			}
			hp := h.Clone()
			hp.Set("Content-Type", "application/json")
			if status, body := call("POST", "/proxy"+postEndpoint, hp, postBody); status != 200 {
				t.Fatalf("proxied POST: %d %s", status, body)
			}
			reqs := up.of("/p/" + name)
			if len(reqs) != before+2 {
				t.Fatalf("%d requests reached the upstream, want %d", len(reqs)-before, 2)
			}
			// Requests made before the proxied ones (a credential check) are
			// checked too, with their own endpoint.
			for i, r := range reqs {
				ep := strings.TrimPrefix(r.Path, "/p/"+name)
				if r.RawQuery != "" {
					ep += "?" + r.RawQuery
				}
				switch i - before {
				case 0:
					ep = getEndpoint
					if r.Method != "GET" || !strings.HasSuffix(r.Path, "/v1/items") {
						t.Errorf("GET arrived as %s %s", r.Method, r.Path)
					}
				case 1:
					ep = postEndpoint
					if r.Method != "POST" || string(r.Body) != postBody {
						t.Errorf("POST arrived as %s %s %q", r.Method, r.Path, r.Body)
					}
				}
				for _, problem := range p.check(r, ep) {
					t.Errorf("%s %s: %s", r.Method, r.Path, problem)
				}
			}
		})
	}
	srv.stop(t)
}

// mapValue returns the value node of key in a YAML mapping node, or nil.
func mapValue(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// expect compares one header with its expected value.
func expect(problems *[]string, r recordedRequest, header, want string) {
	if got := r.Header.Values(header); len(got) != 1 || got[0] != want {
		*problems = append(*problems, fmt.Sprintf("header %s = %q, want %q", header, got, want))
	}
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// duoCanonicalParams is Duo's canonical parameter string: the query of a
// GET, the (top-level) parameters of a POST body; sorted by name, names
// and values percent-encoded per RFC 3986, joined with '&'.
func duoCanonicalParams(r recordedRequest) (string, error) {
	params := map[string]string{}
	if r.Method == "POST" || r.Method == "PUT" || r.Method == "PATCH" {
		if len(r.Body) > 0 {
			if err := json.Unmarshal(r.Body, &params); err != nil {
				return "", fmt.Errorf("body is not a flat JSON object: %v", err)
			}
		}
	} else {
		q, err := url.ParseQuery(r.RawQuery)
		if err != nil {
			return "", err
		}
		for k, v := range q {
			params[k] = v[0]
		}
	}
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = sigcheck.PercentEncode(k) + "=" + sigcheck.PercentEncode(params[k])
	}
	return strings.Join(parts, "&"), nil
}

// sigV4Of checks an AWS-signed request: the X-Amz-Date format, the
// signature (verified by sigV4Check, an implementation from AWS's
// specification) and the credential scope.
func sigV4Of(r recordedRequest, akid, secret, region, service string) []string {
	var problems []string
	if d := r.Header.Get("X-Amz-Date"); !amzDateRE.MatchString(d) {
		problems = append(problems, fmt.Sprintf("x-amz-date %q is not YYYYMMDDTHHmmssZ", d))
	} else if at, err := time.Parse("20060102T150405Z", d); err != nil || time.Since(at).Abs() > 5*time.Minute {
		problems = append(problems, fmt.Sprintf("x-amz-date %q is not now", d))
	}
	hr := &http.Request{Method: r.Method, Host: r.Host, Header: r.Header, ContentLength: r.ContentLength,
		URL: &url.URL{Path: r.Path, RawQuery: r.RawQuery}}
	if p, err := url.PathUnescape(r.Path); err == nil {
		hr.URL.Path = p
	}
	gotKey, gotRegion, gotService, err := sigcheck.SigV4(hr, r.Body, func(k string) (string, bool) { return secret, k == akid })
	switch {
	case err != nil:
		problems = append(problems, "SigV4: "+err.Error())
	case gotKey != akid || gotRegion != region || gotService != service:
		problems = append(problems, fmt.Sprintf("SigV4 scope %s/%s/%s, want %s/%s/%s", gotKey, gotRegion, gotService, akid, region, service))
	}
	signed := ""
	if _, rest, ok := strings.Cut(r.Header.Get("Authorization"), "SignedHeaders="); ok {
		signed, _, _ = strings.Cut(rest, ",")
	}
	for _, h := range []string{"host", "x-amz-date"} {
		if !slices.Contains(strings.Split(signed, ";"), h) {
			problems = append(problems, fmt.Sprintf("SigV4 does not sign %s (SignedHeaders=%s)", h, signed))
		}
	}
	if r.Header.Get("Content-Type") != "" && !slices.Contains(strings.Split(signed, ";"), "content-type") {
		problems = append(problems, "SigV4 does not sign content-type")
	}
	return problems
}

// templateProviders are the providers under test: their connection and
// the expected headers, computed from what each template means.
func templateProviders(edPub ed25519.PublicKey, edPEM string) map[string]*templateProvider {
	awsProvider := func(akid, secret, region, service string, config map[string]any) *templateProvider {
		return &templateProvider{mode: "BASIC", config: config, creds: map[string]any{"username": akid, "password": secret},
			check: func(r recordedRequest, _ string) []string { return sigV4Of(r, akid, secret, region, service) }}
	}
	return map[string]*templateProvider{
		// Basic base64(email/token:token).
		"zendesk-api-key": {mode: "BASIC", config: map[string]any{"subdomain": "acme"},
			creds: map[string]any{"username": "agent@example.com", "password": "SDMWuOoZe2eToken9CMz"},
			check: func(r recordedRequest, _ string) []string {
				var p []string
				expect(&p, r, "Authorization", "Basic "+b64("agent@example.com/token:SDMWuOoZe2eToken9CMz"))
				return p
			}},
		// Basic base64(apiKey:) — an empty password.
		"pleo-api-key": {mode: "API_KEY", config: map[string]any{"apiSubdomain": "external"},
			creds: map[string]any{"apiKey": "pls_0123abcd_620d75"},
			check: func(r recordedRequest, _ string) []string {
				var p []string
				expect(&p, r, "Authorization", "Basic "+b64("pls_0123abcd_620d75:"))
				return p
			}},
		// client-auth-token: base64(tenant+username:password).
		"connectsecure": {mode: "BASIC", config: map[string]any{"base_url": "pod123.myconnectsecure.com", "tenant": "acme-tenant"},
			creds: map[string]any{"username": "cs-client", "password": "cs-secret"},
			check: func(r recordedRequest, _ string) []string {
				var p []string
				expect(&p, r, "Client-Auth-Token", b64("acme-tenant+cs-client:cs-secret"))
				expect(&p, r, "Accept", "application/json")
				return p
			}},
		// Userkeyauth base64(apiKey:token) over the TWO_STEP token.
		"redtail-crm-sandbox": {mode: "TWO_STEP",
			creds: map[string]any{"username": "rt-user", "password": "rt-pass", "apiKey": "f1c2d3a4-5b67-4c89-ae01-123456789abc",
				"token": "rt-userkey-token", "expires_at": "2099-01-01T00:00:00Z"},
			check: func(r recordedRequest, _ string) []string {
				var p []string
				expect(&p, r, "Authorization", "Userkeyauth "+b64("f1c2d3a4-5b67-4c89-ae01-123456789abc:rt-userkey-token"))
				return p
			}},
		// Basic base64(proxyCompanyId:token), the session token.
		"tripletex": {mode: "TWO_STEP", config: map[string]any{"environment": "api-test.tripletex.tech", "proxyCompanyId": "12345"},
			creds: map[string]any{"consumerToken": "eyJjb25zdW1lcg==", "employeeToken": "eyJlbXBsb3llZQ==",
				"token": "tt-session-token", "expires_at": "2099-01-01T00:00:00Z"},
			check: func(r recordedRequest, _ string) []string {
				var p []string
				expect(&p, r, "Authorization", "Basic "+b64("12345:tt-session-token"))
				return p
			}},
		// A UUID v4 correlation id per request, the access token.
		"walmart": {mode: "OAUTH2", config: map[string]any{"clientType": "seller"},
			creds: map[string]any{"access_token": "wm-access-token", "no_expiration": true},
			check: func(r recordedRequest, _ string) []string {
				var p []string
				expect(&p, r, "Wm_sec.access_token", "wm-access-token")
				if id := r.Header.Get("Wm_qos.correlation_id"); !uuidV4RE.MatchString(id) {
					p = append(p, fmt.Sprintf("wm_qos.correlation_id %q is not a UUID v4", id))
				}
				return p
			}},
		// x-av-sig: sha256Hex(base64(reqId + appId + date + endpoint + secret)),
		// the request id a UUID v4 and the date YYYY-MM-DDTHH:mm:ss, both
		// the ones sent.
		"avanan": {mode: "TWO_STEP", config: map[string]any{"subdomain": "smart-api-production-1-us"},
			creds: map[string]any{"appId": "9k8me2eapp", "secretKey": "3k9te2esecret0uj5", "token": "av-token", "expires_at": "2099-01-01T00:00:00Z"},
			check: func(r recordedRequest, endpoint string) []string {
				var p []string
				expect(&p, r, "X-Av-App-Id", "9k8me2eapp")
				expect(&p, r, "X-Av-Token", "av-token")
				id, date := r.Header.Get("X-Av-Req-Id"), r.Header.Get("X-Av-Date")
				if !uuidV4RE.MatchString(id) {
					p = append(p, fmt.Sprintf("x-av-req-id %q is not a UUID v4", id))
				}
				if !isoSecRE.MatchString(date) {
					p = append(p, fmt.Sprintf("x-av-date %q is not YYYY-MM-DDTHH:mm:ss", date))
				} else if at, err := time.Parse("2006-01-02T15:04:05", date); err != nil || time.Since(at).Abs() > 5*time.Minute {
					p = append(p, fmt.Sprintf("x-av-date %q is not now (UTC)", date))
				}
				sum := sha256.Sum256([]byte(b64(id + "9k8me2eapp" + date + endpoint + "3k9te2esecret0uj5")))
				expect(&p, r, "X-Av-Sig", hex.EncodeToString(sum[:]))
				return p
			}},
		// Duo: Date in RFC 2822 form, Basic base64(ikey:hex(HMAC-SHA1(skey,
		// date\nMETHOD\nhost\npath\nparams))).
		"cisco-duo-admin": {mode: "BASIC", config: map[string]any{"hostname": "api-e2e01.duosecurity.com"},
			creds: map[string]any{"username": "DIWJ8X6ABCDEFGHIJTQ1", "password": "Zh5eGm0123456789abcdefghijABCDEFGHzLJ4Ep"},
			check: func(r recordedRequest, _ string) []string {
				var p []string
				date := r.Header.Get("Date")
				if at, err := time.Parse("Mon, 02 Jan 2006 15:04:05 -0700", date); err != nil || !strings.HasSuffix(date, " +0000") {
					p = append(p, fmt.Sprintf("date %q is not ddd, DD MMM YYYY HH:mm:ss +0000", date))
				} else if time.Since(at).Abs() > 5*time.Minute {
					p = append(p, fmt.Sprintf("date %q is not now", date))
				}
				params, err := duoCanonicalParams(r)
				if err != nil {
					return append(p, err.Error())
				}
				m := hmac.New(sha1.New, []byte("Zh5eGm0123456789abcdefghijABCDEFGHzLJ4Ep"))
				m.Write([]byte(strings.Join([]string{date, r.Method, strings.ToLower(r.Host), r.Path, params}, "\n")))
				expect(&p, r, "Authorization", "Basic "+b64("DIWJ8X6ABCDEFGHIJTQ1:"+hex.EncodeToString(m.Sum(nil))))
				return p
			}},
		// HTTP message signatures (RFC 9421) with Ed25519 over the method,
		// target URI, content digest and type; created now, expiring a
		// minute later.
		"streamline-ai": {mode: "BASIC", config: map[string]any{"customer": "acme", "domain": "streamline.ai"},
			creds: map[string]any{"username": "slak_e2eKey", "password": edPEM},
			check: func(r recordedRequest, _ string) []string {
				var p []string
				expect(&p, r, "Authorization", `Signature keyid="slak_e2eKey"`)
				expect(&p, r, "Content-Type", "application/json")
				sum := sha256.Sum256(r.Body)
				digest := "sha-256=:" + base64.StdEncoding.EncodeToString(sum[:]) + ":"
				expect(&p, r, "Content-Digest", digest)
				input := r.Header.Get("Signature-Input")
				m := regexp.MustCompile(`^sig=\("@method" "@target-uri" "content-digest" "content-type"\);alg="ed25519";created=(\d+);expires=(\d+);keyid="slak_e2eKey"$`).FindStringSubmatch(input)
				if m == nil {
					return append(p, fmt.Sprintf("signature-input %q", input))
				}
				created, _ := strconv.ParseInt(m[1], 10, 64)
				expires, _ := strconv.ParseInt(m[2], 10, 64)
				if expires != created+60 || time.Since(time.Unix(created, 0)).Abs() > 5*time.Minute {
					p = append(p, fmt.Sprintf("created %d, expires %d: want now and a minute later", created, expires))
				}
				base := strings.Join([]string{
					`"@method": ` + r.Method,
					`"@target-uri": https://` + r.Host + r.Path,
					`"content-digest": ` + digest,
					`"content-type": application/json`,
					`"@signature-params": ` + strings.TrimPrefix(input, "sig="),
				}, "\n")
				sig, ok := strings.CutPrefix(r.Header.Get("Signature"), "sig=:")
				sig, ok2 := strings.CutSuffix(sig, ":")
				raw, err := base64.StdEncoding.DecodeString(sig)
				if !ok || !ok2 || err != nil || !ed25519.Verify(edPub, []byte(base), raw) {
					p = append(p, fmt.Sprintf("signature %q does not verify over %q", r.Header.Get("Signature"), base))
				}
				return p
			}},
		// AWS Signature Version 4, the X-Amz-Date that it signs.
		"aws-iam":           awsProvider("AKIAE2EIAM", "wJalrE2EIamSecret", "us-east-1", "iam", map[string]any{"region": "us-east-1"}),
		"aws-inspector2":    awsProvider("AKIAE2EINSP", "wJalrE2EInspSecret", "eu-west-1", "inspector2", map[string]any{"region": "eu-west-1"}),
		"aws-multi-service": awsProvider("AKIAE2EMULTI", "wJalrE2EMulti/Secret+x", "eu-central-1", "athena", map[string]any{"service": "athena", "region": "eu-central-1"}),
	}
}
