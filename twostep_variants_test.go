package connect_test

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/integrations"
)

// variantsYAML holds entries of Nango's providers.yaml (0.71.10) as
// written there but for their URLs, pointed at the fake: docuware (a GET
// token request, then two additional steps: a GET whose URL the first
// answer gives, a form POST to the URL the second gives), avanan (a GET
// with signed headers whose whole answer is the token), sap-business-one
// (token_response_headers: set-cookie, sent back by the proxy) and
// sage-intacct (an XML body from nested token_params, an XML answer).
const variantsYAML = `
docuware:
    display_name: DocuWare
    auth_mode: TWO_STEP
    token_url: %[1]s/DocuWare/Platform/Home/IdentityServiceInfo
    body_format: form
    token_request_method: GET
    token_headers:
        content-type: application/x-www-form-urlencoded
    additional_steps:
        - body_format: form
          token_url: ${step1.IdentityServiceUrl}/.well-known/openid-configuration
          token_request_method: GET
        - body_format: form
          token_url: ${step2.token_endpoint}
          token_headers:
              content-type: application/x-www-form-urlencoded
          token_params:
              grant_type: password
              scope: docuware.platform
              client_id: docuware.platform.net.client
              username: ${credentials.username}
              password: ${credentials.password}
    proxy:
        base_url: %[1]s/DocuWare/Platform
    token_response:
        token: access_token
        token_expiration: expires_in
        token_expiration_strategy: expireIn
    credentials:
        username:
            type: string
            title: Username
        password:
            type: string
            title: Password
            secret: true
avanan:
    display_name: Avanan
    auth_mode: TWO_STEP
    token_request_method: GET
    token_url: %[1]s/v1.0/auth
    token_headers:
        x-av-app-id: ${credentials.appId}
        x-av-req-id: ${random}
        x-av-date: ${now:YYYY-MM-DDTHH:mm:ss}
        x-av-sig: ${sha256Hex(${base64(${random}${credentials.appId}${now:YYYY-MM-DDTHH:mm:ss}${credentials.secretKey})})}
    token_response:
        token: ''
    token_expires_in_ms: 3600000
    proxy:
        base_url: %[1]s
        headers:
            x-av-token: ${accessToken}
    credentials:
        appId:
            type: string
            title: Client ID
            pattern: ^[a-z0-9]+$
        secretKey:
            type: string
            title: Secret Key
            pattern: ^[a-z0-9]+$
            secret: true
sap-business-one:
    display_name: SAP Business One
    body_format: json
    auth_mode: TWO_STEP
    token_url: %[1]s/Login
    token_params:
        CompanyDB: ${connectionConfig.companyDb}
        UserName: ${credentials.userName}
        Password: ${credentials.password}
    token_headers:
        content-type: application/json
    token_expires_in_ms: 1700000
    proxy:
        base_url: %[1]s
        headers:
            cookie: ${credentials._cookies}
    token_response:
        token: SessionId
    token_response_headers:
        - set-cookie
    connection_config:
        companyDb:
            type: string
            title: Company Database Name
    credentials:
        userName:
            type: string
            title: Username
        password:
            type: string
            title: Password
            secret: true
sage-intacct:
    display_name: Sage Intacct
    auth_mode: TWO_STEP
    proxy:
        base_url: %[1]s/ia/xml/xmlgw.phtml
    token_url: %[1]s/ia/xml/xmlgw.phtml
    body_format: xml
    token_params:
        request:
            control:
                senderid: ${credentials.senderId}
                password: ${credentials.senderPassword}
                controlid: ${now}
                uniqueid: false
                dtdversion: '3.0'
                includewhitespace: false
            operation:
                authentication:
                    login:
                        userid: ${credentials.userId}
                        companyid: ${credentials.companyId}
                        password: ${credentials.userPassword}
                content:
                    function:
                        $controlid: '{{$guid}}'
                        getAPISession: ''
    token_headers:
        content-type: application/xml
    token_response:
        token: response.operation.result.data.api.sessionid
        token_expiration: response.operation.authentication.sessiontimeout
        token_expiration_strategy: expireAt
    credentials:
        senderId:
            type: string
            title: Sender ID
        senderPassword:
            type: string
            title: Sender Password
            secret: true
        userId:
            type: string
            title: User ID
        companyId:
            type: string
            title: Company ID
        userPassword:
            type: string
            title: User Password
            secret: true
`

type variantRequest struct {
	method, path, query, contentType, body string
	header                                 http.Header
}

// variantsAPI is the fake of the four providers: it records every request
// and answers each the way its provider does.
type variantsAPI struct {
	srv  *httptest.Server
	mu   sync.Mutex
	reqs []variantRequest
}

func newVariantsAPI(t *testing.T) *variantsAPI {
	f := &variantsAPI{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.reqs = append(f.reqs, variantRequest{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Content-Type"), string(b), r.Header.Clone()})
		n := len(f.reqs)
		f.mu.Unlock()
		switch r.URL.Path {
		case "/DocuWare/Platform/Home/IdentityServiceInfo":
			fmt.Fprintf(w, `{"IdentityServiceUrl":"%s/identity"}`, f.srv.URL)
		case "/identity/.well-known/openid-configuration":
			fmt.Fprintf(w, `{"token_endpoint":"%s/identity/connect/token"}`, f.srv.URL)
		case "/identity/connect/token":
			fmt.Fprintf(w, `{"access_token":"dw-%d","expires_in":3600}`, n)
		case "/v1.0/auth":
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprintf(w, "av-%d", n)
		case "/Login":
			w.Header().Add("Set-Cookie", fmt.Sprintf("B1SESSION=s%d; HttpOnly; Path=/b1s", n))
			w.Header().Add("Set-Cookie", "ROUTEID=.node1; Path=/b1s")
			fmt.Fprintf(w, `{"SessionId":"s%d","Version":"1000"}`, n)
		case "/ia/xml/xmlgw.phtml":
			w.Header().Set("Content-Type", "text/xml")
			fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>
<response><control><status>success</status></control><operation><authentication><status>success</status>
<sessiontimeout>2030-01-02T03:04:05+00:00</sessiontimeout></authentication><result><status>success</status>
<data><api><sessionid>si-%d</sessionid><endpoint>https://api.intacct.com/ia/xml/xmlgw.phtml</endpoint></api></data></result></operation></response>`, n)
		default:
			fmt.Fprint(w, `{"ok":true}`)
		}
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *variantsAPI) since(n int) []variantRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]variantRequest(nil), f.reqs[n:]...)
}

func (f *variantsAPI) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.reqs)
}

// TestTokenModeTwoStepVariants: the TWO_STEP variants of real entries
// through the frontend route, each request checked as the fake gets it,
// then the token through the proxy.
func TestTokenModeTwoStepVariants(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		f := newVariantsAPI(t)
		ps, err := integrations.Load(strings.NewReader(fmt.Sprintf(variantsYAML, f.srv.URL)))
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
		for _, p := range []string{"docuware", "avanan", "sap-business-one", "sage-intacct"} {
			sb.mustDo(t, 200, req{method: "POST", path: "/integrations", body: `{"provider":"` + p + `","unique_key":"` + p + `"}`})
		}
		tok := sb.session(t, `{"tags":{}}`)
		creds := func(key, id string) map[string]any {
			t.Helper()
			r := sb.mustDo(t, 200, req{method: "GET", path: "/connections/" + id + "?provider_config_key=" + key})
			c, _ := r.obj()["credentials"].(map[string]any)
			return c
		}
		proxied := func(key, id string) http.Header {
			t.Helper()
			n := f.count()
			sb.mustDo(t, 200, req{method: "GET", path: "/proxy/probe", header: map[string]string{"Connection-Id": id, "Provider-Config-Key": key}})
			got := f.since(n)
			if len(got) == 0 || !strings.HasSuffix(got[len(got)-1].path, "/probe") {
				t.Fatalf("the upstream got %+v", got)
			}
			return got[len(got)-1].header
		}

		t.Run("docuware", func(t *testing.T) {
			n := f.count()
			r := sb.auth(t, "/auth/two-step/docuware", tok, "", `{"type":"TWO_STEP","username":"ann","password":"pw&1"}`)
			if r.status != 200 {
				t.Fatalf("%d %s", r.status, r.raw)
			}
			got := f.since(n)
			if len(got) != 3 {
				t.Fatalf("%d requests, want 3: %+v", len(got), got)
			}
			if got[0].method != "GET" || got[0].path != "/DocuWare/Platform/Home/IdentityServiceInfo" || got[0].body != "" {
				t.Errorf("first %+v", got[0])
			}
			if got[1].method != "GET" || got[1].path != "/identity/.well-known/openid-configuration" || got[1].body != "" {
				t.Errorf("second %+v", got[1])
			}
			form, _ := url.ParseQuery(got[2].body)
			want := url.Values{"grant_type": {"password"}, "scope": {"docuware.platform"}, "client_id": {"docuware.platform.net.client"},
				"username": {"ann"}, "password": {"pw&1"}}
			if got[2].method != "POST" || got[2].path != "/identity/connect/token" || got[2].contentType != "application/x-www-form-urlencoded" ||
				form.Encode() != want.Encode() {
				t.Errorf("third %+v", got[2])
			}
			id := r.obj()["connectionId"].(string)
			c := creds("docuware", id)
			if c["token"] != fmt.Sprintf("dw-%d", n+3) || c["expires_at"] != sb.clock.at(time.Hour).Format("2006-01-02T15:04:05.000Z") {
				t.Errorf("credentials %v", c)
			}
		})

		t.Run("avanan", func(t *testing.T) {
			n := f.count()
			r := sb.auth(t, "/auth/two-step/avanan", tok, "", `{"type":"TWO_STEP","appId":"app1","secretKey":"sec2"}`)
			if r.status != 200 {
				t.Fatalf("%d %s", r.status, r.raw)
			}
			got := f.since(n)
			if len(got) != 1 || got[0].method != "GET" || got[0].body != "" {
				t.Fatalf("requests %+v", got)
			}
			h := got[0].header
			reqID, date := h.Get("X-Av-Req-Id"), h.Get("X-Av-Date")
			sum := sha256.Sum256([]byte(base64.StdEncoding.EncodeToString([]byte(reqID + "app1" + date + "sec2"))))
			if h.Get("X-Av-App-Id") != "app1" || reqID == "" || date != sb.clock.at(0).Format("2006-01-02T15:04:05") ||
				h.Get("X-Av-Sig") != hex.EncodeToString(sum[:]) {
				t.Errorf("headers %v (clock %s, sig want %s)", h, sb.clock.at(0).Format("2006-01-02T15:04:05"), hex.EncodeToString(sum[:]))
			}
			id := r.obj()["connectionId"].(string)
			c := creds("avanan", id)
			if c["token"] != fmt.Sprintf("av-%d", n+1) || c["expires_at"] != sb.clock.at(time.Hour).Format("2006-01-02T15:04:05.000Z") {
				t.Errorf("credentials %v", c)
			}
			if got := proxied("avanan", id).Get("X-Av-Token"); got != fmt.Sprintf("av-%d", n+1) {
				t.Errorf("proxied X-Av-Token %q", got)
			}
		})

		t.Run("sap-business-one", func(t *testing.T) {
			n := f.count()
			r := sb.auth(t, "/auth/two-step/sap-business-one", tok, "params[companyDb]=SBODEMO", `{"type":"TWO_STEP","userName":"manager","password":"pw"}`)
			if r.status != 200 {
				t.Fatalf("%d %s", r.status, r.raw)
			}
			got := f.since(n)
			if len(got) != 1 || got[0].body != `{"CompanyDB":"SBODEMO","Password":"pw","UserName":"manager"}` || got[0].contentType != "application/json" {
				t.Fatalf("requests %+v", got)
			}
			id := r.obj()["connectionId"].(string)
			wantCookie := fmt.Sprintf("B1SESSION=s%d; ROUTEID=.node1", n+1)
			c := creds("sap-business-one", id)
			if c["token"] != fmt.Sprintf("s%d", n+1) || c["_cookies"] != wantCookie || c["B1SESSION"] != fmt.Sprintf("s%d", n+1) {
				t.Errorf("credentials %v", c)
			}
			if got := proxied("sap-business-one", id).Get("Cookie"); got != wantCookie {
				t.Errorf("proxied Cookie %q, want %q", got, wantCookie)
			}
		})

		t.Run("sage-intacct", func(t *testing.T) {
			n := f.count()
			r := sb.auth(t, "/auth/two-step/sage-intacct", tok, "", `{"type":"TWO_STEP","senderId":"snd","senderPassword":"sp<1>",
				"userId":"usr","companyId":"co","userPassword":"up&2"}`)
			if r.status != 200 {
				t.Fatalf("%d %s", r.status, r.raw)
			}
			got := f.since(n)
			if len(got) != 1 || got[0].method != "POST" || got[0].contentType != "application/xml" {
				t.Fatalf("requests %+v", got)
			}
			// The body, read by an XML parser: the elements in the
			// entry's order, the attribute, the escaped values.
			var doc struct {
				XMLName xml.Name `xml:"request"`
				Control struct {
					Inner string `xml:",innerxml"`
				} `xml:"control"`
				Login struct {
					UserID string `xml:"userid"`
				} `xml:"operation>authentication>login"`
				Function struct {
					ControlID string    `xml:"controlid,attr"`
					Session   *struct{} `xml:"getAPISession"`
				} `xml:"operation>content>function"`
			}
			if err := xml.Unmarshal([]byte(got[0].body), &doc); err != nil {
				t.Fatalf("the body is not XML: %v\n%s", err, got[0].body)
			}
			var order []string
			dec := xml.NewDecoder(strings.NewReader("<c>" + doc.Control.Inner + "</c>"))
			values := map[string]string{}
			var cur string
			for {
				tk, err := dec.Token()
				if err != nil {
					break
				}
				switch e := tk.(type) {
				case xml.StartElement:
					if e.Name.Local != "c" {
						cur = e.Name.Local
						order = append(order, cur)
					}
				case xml.CharData:
					if cur != "" {
						values[cur] += string(e)
					}
				case xml.EndElement:
					cur = ""
				}
			}
			if strings.Join(order, ",") != "senderid,password,controlid,uniqueid,dtdversion,includewhitespace" ||
				values["senderid"] != "snd" || values["password"] != "sp<1>" || values["uniqueid"] != "false" || values["dtdversion"] != "3.0" ||
				values["controlid"] == "" || strings.Contains(values["controlid"], "$") {
				t.Errorf("control %v %v\n%s", order, values, got[0].body)
			}
			if doc.Function.ControlID != "{{$guid}}" || doc.Function.Session == nil || !strings.Contains(got[0].body, "<password>up&amp;2</password>") {
				t.Errorf("body %s", got[0].body)
			}
			id := r.obj()["connectionId"].(string)
			c := creds("sage-intacct", id)
			if c["token"] != fmt.Sprintf("si-%d", n+1) || c["expires_at"] != "2030-01-02T03:04:05.000Z" {
				t.Errorf("credentials %v", c)
			}
		})
	})
}
