package connect_test

import (
	"fmt"
	"github.com/embedauth/connect/internal/sigcheck"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/integrations"
)

// The fakes of this file check signatures with their own implementations
// of OAuth 1 (RFC 5849, HMAC-SHA256) and AWS Signature Version 4, written
// from the specifications, not with the code under test.

// fakeNetSuite answers GET requests signed with the right consumer and
// token; it records what it saw.
type fakeNetSuite struct {
	srv *httptest.Server

	mu       sync.Mutex
	consumer map[string]string // key -> secret
	tokens   map[string]string // token id -> secret
	seen     []string          // realm|consumer|token|path
}

func newFakeNetSuite(t *testing.T) *fakeNetSuite {
	f := &fakeNetSuite{consumer: map[string]string{"ns-consumer": "ns-consumer-secret", "own-consumer": "own-secret"},
		tokens: map[string]string{"tok-id": "tok-secret"}}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := r.Header.Get("Authorization")
		ck := sigcheck.OAuthParam(h, "oauth_consumer_key")
		tk := sigcheck.OAuthParam(h, "oauth_token")
		f.mu.Lock()
		cs, okc := f.consumer[ck]
		ts, okt := f.tokens[tk]
		f.mu.Unlock()
		if !okc || !okt {
			http.Error(w, `{"error":"unknown consumer or token"}`, 401)
			return
		}
		realm, _, _, err := sigcheck.OAuth1HMACSHA256(r, "http://"+r.Host, cs, ts)
		if err != nil {
			http.Error(w, `{"error":"`+err.Error()+`"}`, 401)
			return
		}
		f.mu.Lock()
		f.seen = append(f.seen, realm+"|"+ck+"|"+tk+"|"+r.URL.Path)
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"path":%q,"q":%q}`, r.URL.Path, r.URL.Query().Get("q"))
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeNetSuite) calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.seen...)
}

// realProvider returns a copy of a provider of Nango's file (the default
// catalogue), its proxy pointed at base.
func realProvider(t *testing.T, name string, edit func(p *integrations.Provider)) *integrations.Catalog {
	t.Helper()
	cat, err := integrations.DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	p, ok := cat.Get(name)
	if !ok {
		t.Fatalf("provider %s not in the catalogue", name)
	}
	cp := *p
	px := integrations.Proxy{}
	if p.Proxy != nil {
		px = *p.Proxy
	}
	cp.Proxy = &px
	edit(&cp)
	out, err := cat.With(&cp)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestTBA: a NetSuite TBA connection through the frontend client's route
// (its verification request signed; bad tokens are connection_test_failed
// and store nothing), proxied with an OAuth 1 HMAC-SHA256 signature that
// the fake checks (the integration's client as consumer, the account id as
// realm), with the connection's client override, imported, and a forced
// refresh that leaves the token alone.
func TestTBA(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		ns := newFakeNetSuite(t)
		cat := realProvider(t, "netsuite-tba", func(p *integrations.Provider) {
			// The real entry's base URL puts the account id in the host;
			// the fake is one host, so the account id goes in the path.
			p.Proxy.BaseURL = ns.srv.URL + "/${connectionConfig.accountId}/services/rest/record/v1"
			p.Proxy.Verification = &integrations.Verification{Endpoints: []string{"/account"}}
		})
		bu := setup(t, b, func(cfg *connect.Config) { cfg.Providers = cat })
		bu.mustDo(t, 200, req{method: "POST", path: "/integrations", body: `{"provider":"netsuite-tba","unique_key":"ns",
			"credentials":{"type":"TBA","client_id":"ns-consumer","client_secret":"ns-consumer-secret"}}`})
		tok := bu.session(t, `{"end_user":{"id":"u1"},"allowed_integrations":["ns"]}`)

		// Refused token: 400 connection_test_failed, nothing stored.
		r := bu.auth(t, "/auth/tba/ns", tok, "params[accountId]=tstdrv-123", `{"token_id":"tok-id","token_secret":"wrong"}`)
		if r.status != 400 || r.errCode() != "connection_test_failed" || strings.Contains(string(r.raw), "wrong") {
			t.Fatalf("refused token: %d %s", r.status, r.raw)
		}
		if n := len(listConnections(t, bu)); n != 0 {
			t.Fatalf("a refused token stored %d connections", n)
		}
		// Missing token secret: invalid_credentials.
		if r := bu.auth(t, "/auth/tba/ns", tok, "params[accountId]=tstdrv-123", `{"token_id":"tok-id"}`); r.status != 400 || r.errCode() != "invalid_credentials" {
			t.Fatalf("no secret: %d %s", r.status, r.raw)
		}

		r = bu.auth(t, "/auth/tba/ns", tok, "params[accountId]=tstdrv-123", `{"token_id":"tok-id","token_secret":"tok-secret"}`)
		if r.status != 200 || r.header.Get("Access-Control-Allow-Origin") != "*" {
			t.Fatalf("auth: %d %s", r.status, r.raw)
		}
		id, _ := r.obj()["connectionId"].(string)
		if got := ns.calls(); len(got) != 1 || got[0] != "TSTDRV_123|ns-consumer|tok-id|/tstdrv-123/services/rest/record/v1/account" {
			t.Fatalf("verification calls %q", got)
		}
		g := bu.mustDo(t, 200, req{method: "GET", path: "/connections/" + id + "?provider_config_key=ns"}).obj()
		cr, _ := g["credentials"].(map[string]any)
		if cr["type"] != "TBA" || cr["token_id"] != "tok-id" || cr["token_secret"] != "tok-secret" {
			t.Fatalf("credentials %v", cr)
		}

		// Proxy: signed for the path and query, realm from the account id.
		px := bu.mustDo(t, 200, req{method: "GET", path: "/proxy/customer/7?q=a+b",
			header: map[string]string{"Connection-Id": id, "Provider-Config-Key": "ns"}})
		if px.obj()["q"] != "a b" {
			t.Errorf("proxy answer %s", px.raw)
		}
		if got := ns.calls(); len(got) != 2 || got[1] != "TSTDRV_123|ns-consumer|tok-id|/tstdrv-123/services/rest/record/v1/customer/7" {
			t.Fatalf("proxy calls %q", got)
		}

		// A forced refresh keeps the token (TBA tokens do not expire).
		f := bu.mustDo(t, 200, req{method: "GET", path: "/connections/" + id + "?provider_config_key=ns&force_refresh=true"}).obj()
		if fc, _ := f["credentials"].(map[string]any); fc["token_secret"] != "tok-secret" {
			t.Errorf("after a forced refresh: %v", fc)
		}

		// The connection's own client (override) signs instead.
		tok2 := bu.session(t, `{"end_user":{"id":"u2"},"allowed_integrations":["ns"]}`)
		r = bu.auth(t, "/auth/tba/ns", tok2, "params[accountId]=acme", `{"token_id":"tok-id","token_secret":"tok-secret",
			"oauth_client_id_override":"own-consumer","oauth_client_secret_override":"own-secret"}`)
		if r.status != 200 {
			t.Fatalf("override: %d %s", r.status, r.raw)
		}
		id2, _ := r.obj()["connectionId"].(string)
		bu.mustDo(t, 200, req{method: "GET", path: "/proxy/x", header: map[string]string{"Connection-Id": id2, "Provider-Config-Key": "ns"}})
		if got := ns.calls(); len(got) != 4 || got[3] != "ACME|own-consumer|tok-id|/acme/services/rest/record/v1/x" {
			t.Fatalf("override calls %q", got)
		}

		// Import, then proxy.
		bu.mustDo(t, 201, req{method: "POST", path: "/connections", body: `{"provider_config_key":"ns","connection_id":"imp",
			"connection_config":{"accountId":"imp-1"},"credentials":{"type":"TBA","token_id":"tok-id","token_secret":"tok-secret"}}`})
		bu.mustDo(t, 200, req{method: "GET", path: "/proxy/y", header: map[string]string{"Connection-Id": "imp", "Provider-Config-Key": "ns"}})
		if got := ns.calls(); len(got) != 5 || got[4] != "IMP_1|ns-consumer|tok-id|/imp-1/services/rest/record/v1/y" {
			t.Fatalf("import calls %q", got)
		}
		if r := bu.do(t, req{method: "POST", path: "/connections", body: `{"provider_config_key":"ns","connection_id":"imp2",
			"credentials":{"type":"TBA","token_id":"tok-id"}}`}); r.status != 400 || r.errCode() != "invalid_credentials" {
			t.Fatalf("import without secret: %d %s", r.status, r.raw)
		}
	})
}

func listConnections(t *testing.T, bu *bundle) []*connections.Connection {
	t.Helper()
	l, err := bu.svc.Connections().List(t.Context(), bu.env.ID, connections.ListInput{})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// fakeAWS is an STS (AssumeRole with the integration's keys,
// GetCallerIdentity with temporary ones) and an API that accepts requests
// signed with the latest temporary credentials and their session token.
type fakeAWS struct {
	sts, api *httptest.Server
	now      func() time.Time

	mu      sync.Mutex
	issued  int
	temp    map[string][2]string // akid -> secret, session token
	latest  string
	assumes []url.Values // AssumeRole forms
	apiSeen []string     // akid|region|service|method path
	deny    bool         // AssumeRole answers AccessDenied
}

func newFakeAWS(t *testing.T, now func() time.Time) *fakeAWS {
	f := &fakeAWS{now: now, temp: map[string][2]string{}}
	f.sts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		defer f.mu.Unlock()
		if r.Method == http.MethodPost {
			akid, region, service, err := sigcheck.SigV4(r, body, func(a string) (string, bool) { return "owner-secret", a == "AKIAOWNER" })
			form, _ := url.ParseQuery(string(body))
			if err != nil || service != "sts" || "/"+region+"/" != r.URL.Path || form.Get("Action") != "AssumeRole" || akid != "AKIAOWNER" {
				http.Error(w, fmt.Sprintf("<ErrorResponse><Error><Code>SignatureDoesNotMatch</Code><Message>%v</Message></Error></ErrorResponse>", err), 403)
				return
			}
			if f.deny || !strings.HasPrefix(form.Get("RoleArn"), "arn:aws:iam::123456789012:role/") || form.Get("ExternalId") == "" {
				http.Error(w, "<ErrorResponse><Error><Code>AccessDenied</Code><Message>not authorized to assume the role</Message></Error></ErrorResponse>", 403)
				return
			}
			f.assumes = append(f.assumes, form)
			f.issued++
			id := fmt.Sprintf("ASIATEMP%d", f.issued)
			f.temp[id] = [2]string{fmt.Sprintf("temp-secret-%d", f.issued), fmt.Sprintf("session-token-%d/+=", f.issued)}
			f.latest = id
			w.Header().Set("Content-Type", "text/xml")
			fmt.Fprintf(w, `<AssumeRoleResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><AssumeRoleResult><Credentials>
<AccessKeyId>%s</AccessKeyId><SecretAccessKey>%s</SecretAccessKey><SessionToken>%s</SessionToken><Expiration>%s</Expiration>
</Credentials></AssumeRoleResult></AssumeRoleResponse>`, id, f.temp[id][0], f.temp[id][1], f.now().Add(time.Hour).UTC().Format(time.RFC3339))
			return
		}
		// GetCallerIdentity with the temporary credentials.
		akid, _, service, err := f.checkTemp(r, body)
		if err != nil || service != "sts" || r.URL.Query().Get("Action") != "GetCallerIdentity" {
			http.Error(w, fmt.Sprintf("<ErrorResponse><Error><Code>InvalidClientTokenId</Code><Message>%v</Message></Error></ErrorResponse>", err), 403)
			return
		}
		fmt.Fprintf(w, "<GetCallerIdentityResponse><GetCallerIdentityResult><Arn>arn:aws:sts::123456789012:assumed-role/R/%s</Arn></GetCallerIdentityResult></GetCallerIdentityResponse>", akid)
	}))
	t.Cleanup(f.sts.Close)
	f.api = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		defer f.mu.Unlock()
		akid, region, service, err := f.checkTemp(r, body)
		if err != nil {
			http.Error(w, `{"message":"`+err.Error()+`"}`, 403)
			return
		}
		f.apiSeen = append(f.apiSeen, akid+"|"+region+"|"+service+"|"+r.Method+" "+r.URL.Path)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"ok":true,"body":%q}`, body)
	}))
	t.Cleanup(f.api.Close)
	return f
}

// checkTemp verifies a request signed with the latest temporary
// credentials and their session token. f.mu is held.
func (f *fakeAWS) checkTemp(r *http.Request, body []byte) (string, string, string, error) {
	akid, region, service, err := sigcheck.SigV4(r, body, func(a string) (string, bool) {
		c, ok := f.temp[a]
		return c[0], ok && a == f.latest
	})
	if err != nil {
		return "", "", "", err
	}
	if tok := r.Header.Get("X-Amz-Security-Token"); tok != f.temp[akid][1] || !strings.Contains(r.Header.Get("Authorization"), "x-amz-security-token") {
		return "", "", "", fmt.Errorf("session token %q not signed or not the one issued", tok)
	}
	return akid, region, service, nil
}

func (f *fakeAWS) snapshot() (assumes []url.Values, api []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]url.Values(nil), f.assumes...), append([]string(nil), f.apiSeen...)
}

// TestAWSSigV4: an AWS SigV4 connection through the frontend client's
// route: the integration's keys sign AssumeRole (with a stable external
// id) at the integration's STS endpoint, the temporary credentials pass
// GetCallerIdentity and are stored; the proxy signs each request (body
// included) with them and their session token; the refresher assumes the
// role again when forced and when the credentials are due; refusals are
// 4xx and store nothing.
func TestAWSSigV4(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		clock := newRefreshClock()
		aw := newFakeAWS(t, clock.Now)
		// The real entry, its base URL (service and region in the host)
		// pointed at the fake, with service and region in the path.
		ps, err := integrations.LoadNangoYAML(strings.NewReader(strings.Replace(awsSigV4Entry, "BASEURL",
			aw.api.URL+"/${connectionConfig.service}/${connectionConfig.region}", 1)))
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
		bu := setup(t, b, func(cfg *connect.Config) {
			cfg.Providers = cat
			cfg.Now = clock.Now
			cfg.ProxyCacheTTL = -1
			cfg.AWSSTSEndpoint = func(region string) string { return aw.sts.URL + "/" + region + "/" }
		})
		bu.mustDo(t, 200, req{method: "POST", path: "/integrations", body: `{"provider":"aws-sigv4","unique_key":"aws",
			"integration_config":{"service":"execute-api","defaultRegion":"eu-west-1","stsMode":"builtin"},
			"custom":{"awsAccessKeyId":"AKIAOWNER","awsSecretAccessKey":"owner-secret"}}`})
		bu.mustDo(t, 200, req{method: "POST", path: "/integrations", body: `{"provider":"aws-sigv4","unique_key":"aws-nokeys",
			"integration_config":{"service":"execute-api","defaultRegion":"eu-west-1"}}`})
		bu.mustDo(t, 200, req{method: "POST", path: "/integrations", body: `{"provider":"aws-sigv4","unique_key":"aws-noservice",
			"custom":{"awsAccessKeyId":"AKIAOWNER","awsSecretAccessKey":"owner-secret"}}`})
		tok := bu.session(t, `{"end_user":{"id":"u1"},"allowed_integrations":["aws","aws-nokeys","aws-noservice"]}`)

		for _, c := range []struct{ name, path, body, code string }{
			{"no role", "/auth/aws-sigv4/aws", `{}`, "invalid_credentials"},
			{"not a role arn", "/auth/aws-sigv4/aws", `{"role_arn":"arn:aws:s3:::bucket"}`, "invalid_credentials"},
			{"bad region", "/auth/aws-sigv4/aws", `{"role_arn":"arn:aws:iam::123456789012:role/R","region":"evil.com/x"}`, "invalid_credentials"},
			{"role refused", "/auth/aws-sigv4/aws", `{"role_arn":"arn:aws:iam::999999999999:role/R"}`, "aws_sigv4_sts_request_failed"},
			{"no builtin keys", "/auth/aws-sigv4/aws-nokeys", `{"role_arn":"arn:aws:iam::123456789012:role/R"}`, "missing_aws_sigv4_builtin_credentials"},
			{"no service", "/auth/aws-sigv4/aws-noservice", `{"role_arn":"arn:aws:iam::123456789012:role/R"}`, "missing_aws_sigv4_service"},
		} {
			r := bu.auth(t, c.path, tok, "", c.body)
			if r.status != 400 || r.errCode() != c.code || strings.Contains(string(r.raw), "owner-secret") {
				t.Errorf("%s: %d %s, want 400 %s", c.name, r.status, r.raw, c.code)
			}
		}
		if n := len(listConnections(t, bu)); n != 0 {
			t.Fatalf("refusals stored %d connections", n)
		}

		r := bu.auth(t, "/auth/aws-sigv4/aws", tok, "", `{"role_arn":"arn:aws:iam::123456789012:role/Partner","region":"us-west-2"}`)
		if r.status != 200 {
			t.Fatalf("auth: %d %s", r.status, r.raw)
		}
		id, _ := r.obj()["connectionId"].(string)
		assumes, _ := aw.snapshot()
		// The refused role asked once too.
		if len(assumes) != 1 || assumes[0].Get("RoleArn") != "arn:aws:iam::123456789012:role/Partner" || assumes[0].Get("DurationSeconds") != "3600" {
			t.Fatalf("AssumeRole forms %v", assumes)
		}
		ext := assumes[0].Get("ExternalId")
		g := bu.mustDo(t, 200, req{method: "GET", path: "/connections/" + id + "?provider_config_key=aws"}).obj()
		cr, _ := g["credentials"].(map[string]any)
		cc, _ := g["connection_config"].(map[string]any)
		if cr["type"] != "AWS_SIGV4" || cr["access_key_id"] != "ASIATEMP1" || cr["session_token"] != "session-token-1/+=" ||
			cr["region"] != "us-west-2" || cr["service"] != "execute-api" || cr["external_id"] != ext ||
			cr["expires_at"] != clock.Now().Add(time.Hour).Format("2006-01-02T15:04:05.000Z") {
			t.Fatalf("credentials %v", cr)
		}
		if cc["external_id"] != ext || cc["role_arn"] != "arn:aws:iam::123456789012:role/Partner" || cc["region"] != "us-west-2" || cc["service"] != "execute-api" {
			t.Fatalf("connection config %v", cc)
		}
		h := map[string]string{"Connection-Id": id, "Provider-Config-Key": "aws"}
		px := bu.mustDo(t, 200, req{method: "POST", path: "/proxy/prod/items?a=b%20c&z=1", header: h, body: `{"name":"x y"}`})
		if px.obj()["body"] != `{"name":"x y"}` {
			t.Errorf("proxy answer %s", px.raw)
		}
		_, api := aw.snapshot()
		if len(api) != 1 || api[0] != "ASIATEMP1|us-west-2|execute-api|POST /execute-api/us-west-2/prod/items" {
			t.Fatalf("API calls %q", api)
		}

		// Forced refresh: AssumeRole again with the same external id.
		f := bu.mustDo(t, 200, req{method: "GET", path: "/connections/" + id + "?provider_config_key=aws&force_refresh=true"}).obj()
		if fc, _ := f["credentials"].(map[string]any); fc["access_key_id"] != "ASIATEMP2" {
			t.Fatalf("after a forced refresh: %v", fc)
		}
		bu.mustDo(t, 200, req{method: "GET", path: "/proxy/prod/items", header: h})
		// Due: 50 minutes later the credentials have 10 minutes left.
		clock.advance(50 * time.Minute)
		bu.mustDo(t, 200, req{method: "GET", path: "/proxy/prod/items", header: h})
		assumes, api = aw.snapshot()
		if len(assumes) != 3 || assumes[1].Get("ExternalId") != ext || assumes[2].Get("ExternalId") != ext {
			t.Fatalf("AssumeRole calls %v", assumes)
		}
		if len(api) != 3 || !strings.HasPrefix(api[1], "ASIATEMP2|") || !strings.HasPrefix(api[2], "ASIATEMP3|") {
			t.Fatalf("API calls %q", api)
		}

		// A refused renewal is a failed refresh, the credentials kept.
		aw.mu.Lock()
		aw.deny = true
		aw.mu.Unlock()
		r = bu.do(t, req{method: "GET", path: "/connections/" + id + "?provider_config_key=aws&force_refresh=true"})
		if r.status < 400 || r.status > 499 || strings.Contains(string(r.raw), "owner-secret") {
			t.Fatalf("refused renewal: %d %s", r.status, r.raw)
		}
		c, err := bu.svc.Connections().Get(t.Context(), bu.env.ID, "aws", id, connections.GetOptions{})
		if err != nil || c.Credentials.AccessKeyID != "ASIATEMP3" {
			t.Fatalf("after a refused renewal: %v %+v", err, c)
		}

		// Reconnecting keeps the external id.
		aw.mu.Lock()
		aw.deny = false
		aw.mu.Unlock()
		rtok := bu.mustDo(t, 201, req{method: "POST", path: "/connect/sessions/reconnect", body: `{"connection_id":"` + id + `","integration_id":"aws"}`}).obj()
		rt, _ := rtok["data"].(map[string]any)["token"].(string)
		if r := bu.auth(t, "/auth/aws-sigv4/aws", rt, "", `{"role_arn":"arn:aws:iam::123456789012:role/Partner2"}`); r.status != 200 {
			t.Fatalf("reconnect: %d %s", r.status, r.raw)
		}
		assumes, _ = aw.snapshot()
		if last := assumes[len(assumes)-1]; last.Get("ExternalId") != ext || last.Get("RoleArn") != "arn:aws:iam::123456789012:role/Partner2" {
			t.Fatalf("reconnect AssumeRole %v", last)
		}
	})
}

// awsSigV4Entry is the aws-sigv4 entry of Nango's providers.yaml (0.71.10),
// its base URL replaced by BASEURL.
const awsSigV4Entry = `aws-sigv4:
    display_name: AWS SigV4 Proxy
    categories:
        - storage
    auth_mode: AWS_SIGV4
    proxy:
        base_url: BASEURL
    docs: https://nango.dev/docs/integrations/all/aws-sigv4
    docs_connect: https://nango.dev/docs/integrations/all/aws-sigv4/connect
    credentials:
        role_arn:
            type: string
            title: IAM Role ARN
            description: The ARN of the IAM role your customer creates via your onboarding template.
            example: arn:aws:iam::123456789012:role/NangoAccessRole
            doc_section: '#step-1-provide-the-role-arn'
    connection_config:
        region:
            type: string
            title: AWS Region (optional)
            description: Override the region if it differs from the integration default set by the integration owner.
            example: us-east-1
            optional: true
            doc_section: '#step-3-enter-connection-details'
        service:
            type: string
            title: ''
            description: ''
            automated: true
    integration_config:
        service:
            type: string
            title: AWS Service
            description: The AWS service requests are signed for (e.g. s3, execute-api).
            example: s3
            pattern: ^[a-z0-9-]+$
            order: 1
        defaultRegion:
            type: string
            title: Default AWS Region
            description: Region used to sign requests when a connection does not specify one.
            example: us-east-1
            optional: true
            order: 2
        stsMode:
            type: string
            title: STS Mode
            description: How temporary AWS credentials are issued.
            enum:
                - builtin
                - custom
            default_value: builtin
            optional: true
            order: 3
        awsAccessKeyId:
            type: string
            title: AWS Access Key ID
            description: Access key for the IAM principal Nango uses to call STS AssumeRole.
            secret: true
            optional: true
            visible_when:
                field: stsMode
                equals: builtin
            order: 4
        awsSecretAccessKey:
            type: string
            title: AWS Secret Access Key
            description: Secret access key paired with the access key ID above.
            secret: true
            optional: true
            visible_when:
                field: stsMode
                equals: builtin
            order: 5
        stsEndpointUrl:
            type: string
            title: STS Endpoint URL
            description: HTTPS endpoint that issues temporary AWS credentials.
            format: uri
            pattern: ^https://
            example: https://sts.example.com/assume
            optional: true
            visible_when:
                field: stsMode
                equals: custom
            order: 6
        stsAuthType:
            type: string
            title: STS Auth Type
            description: How Nango authenticates to the custom STS endpoint.
            enum:
                - none
                - api_key
                - basic
            default_value: none
            optional: true
            visible_when:
                field: stsMode
                equals: custom
            order: 7
        stsAuthHeader:
            type: string
            title: STS Auth Header
            description: Header name used to send the API key to the custom STS endpoint.
            default_value: x-api-key
            optional: true
            visible_when:
                field: stsAuthType
                equals: api_key
            order: 8
        stsApiKey:
            type: string
            title: STS API Key
            description: API key value sent to the custom STS endpoint.
            secret: true
            visible_when:
                field: stsAuthType
                equals: api_key
            order: 9
        stsAuthUsername:
            type: string
            title: STS Username
            description: Username for basic auth to the custom STS endpoint.
            optional: true
            visible_when:
                field: stsAuthType
                equals: basic
            order: 10
        stsAuthPassword:
            type: string
            title: STS Password
            description: Password for basic auth to the custom STS endpoint.
            secret: true
            visible_when:
                field: stsAuthType
                equals: basic
            order: 11
`
