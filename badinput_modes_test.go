package connect_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/integrations"
)

// badInputUpstream is where the providers of TestBadInput's auth-mode rows
// point: nothing listens there, and no bad input may reach it (a request
// that did would fail as unreachable, not with the row's code).
const badInputUpstream = "http://127.0.0.1:9"

// withModeProviders adds to the default catalogue the providers of
// TestBadInput's auth-mode rows: the token modes' (valley, snowflake-jwt,
// emarsys, bill), aws-sigv4 and the popup modes' (airtable-mcp,
// cloudflare-mcp, github-app-oauth, crisp-plugin-install).
func withModeProviders(t *testing.T) func(*connect.Config) {
	t.Helper()
	tokens, err := integrations.Load(strings.NewReader(fmt.Sprintf(tokenModesYAML, badInputUpstream)))
	if err != nil {
		t.Fatal(err)
	}
	others, err := integrations.LoadNangoYAML(strings.NewReader(strings.ReplaceAll(popupProvidersYAML, "FAKE", badInputUpstream) +
		strings.Replace(awsSigV4Entry, "BASEURL", badInputUpstream+"/aws/${connectionConfig.service}/${connectionConfig.region}", 1)))
	if err != nil {
		t.Fatal(err)
	}
	return func(cfg *connect.Config) {
		base := cfg.Providers
		if base == nil {
			if base, err = integrations.DefaultCatalog(); err != nil {
				t.Fatal(err)
			}
		}
		cat, err := base.With(append(tokens, others...)...)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Providers = cat
	}
}

// seedModes creates an integration of each auth mode of the rows (vy
// TWO_STEP, jw JWT, em SIGNATURE, bl BILL, ns TBA, aws AWS_SIGV4, amcp
// MCP_OAUTH2, cfmcp MCP_OAUTH2_GENERIC, ghao CUSTOM, crisp
// INSTALL_PLUGIN) and returns a connect session token allowed all of them
// and gh, and one allowed every integration.
func seedModes(t *testing.T, bu *bundle) (tok, open string) {
	t.Helper()
	ghCreds, _ := json.Marshal(map[string]string{"type": "CUSTOM", "client_id": "gh-app-client", "client_secret": "gh-app-secret",
		"app_id": "12345", "app_link": badInputUpstream + "/apps/fake", "private_key": "-----BEGIN RSA PRIVATE KEY-----\nAA==\n-----END RSA PRIVATE KEY-----"})
	for _, in := range []string{
		`{"provider":"valley","unique_key":"vy"}`,
		`{"provider":"snowflake-jwt","unique_key":"jw"}`,
		`{"provider":"emarsys","unique_key":"em"}`,
		`{"provider":"bill","unique_key":"bl"}`,
		`{"provider":"netsuite-tba","unique_key":"ns","credentials":{"type":"TBA","client_id":"ck","client_secret":"cs"}}`,
		`{"provider":"aws-sigv4","unique_key":"aws","integration_config":{"service":"execute-api","defaultRegion":"eu-west-1"},
			"custom":{"awsAccessKeyId":"AKIAOWNER","awsSecretAccessKey":"owner-secret"}}`,
		`{"provider":"airtable-mcp","unique_key":"amcp"}`,
		`{"provider":"cloudflare-mcp","unique_key":"cfmcp"}`,
		`{"provider":"github-app-oauth","unique_key":"ghao","credentials":` + string(ghCreds) + `}`,
		`{"provider":"crisp-plugin-install","unique_key":"crisp","custom":{"app_link":"` + badInputUpstream + `/crisp/install","username":"u","password":"p"}}`,
	} {
		bu.mustDo(t, 200, req{method: "POST", path: "/integrations", body: in})
	}
	tok = bu.session(t, `{"tags":{},"allowed_integrations":["gh","vy","jw","em","bl","ns","aws","amcp","cfmcp","ghao","crisp"]}`)
	return tok, bu.session(t, `{"tags":{}}`)
}

// badInputCode is the error code of a refusal: the JSON body's, or the
// errorType of the popup's callback page.
func badInputCode(r *response) string {
	if !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") {
		return r.errCode()
	}
	m := msgRE.FindSubmatch(r.raw)
	if m == nil {
		return ""
	}
	var msg struct {
		Type    string         `json:"type"`
		Payload map[string]any `json:"payload"`
	}
	if err := json.Unmarshal(m[1], &msg); err != nil {
		return ""
	}
	s, _ := msg.Payload["errorType"].(string)
	return s
}

// badInputDo sends a row's request: through bu.do, or for the popup's
// pages (an HTML answer) as is.
func badInputDo(t *testing.T, bu *bundle, rq req) *response {
	t.Helper()
	if !strings.HasPrefix(rq.path, "/oauth/connect/") {
		return bu.do(t, rq)
	}
	r := rawDo(t, bu.srv.URL, rq.method, rq.path, rq.header, rq.body)
	return &response{status: r.status, header: r.header, raw: []byte(r.body)}
}
