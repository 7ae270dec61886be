package connect_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/integrations"
)

// mcpGenericYAML is the mcp-generic entry of Nango's providers.yaml
// (0.71.10) as it is: no proxy.base_url.
const mcpGenericYAML = `
mcp-generic:
    display_name: MCP Server OAuth2 (Generic)
    categories:
        - mcp
    auth_mode: MCP_OAUTH2_GENERIC
    connection_config:
        mcp_server_url:
            type: string
            title: MCP Server URL
            description: The base URL of your MCP server
            example: https://mcp.notion.com/mcp
            pattern: '^https://[a-zA-Z0-9.-]+(?:\:[0-9]+)?(?:/.*)?$'
    docs: https://nango.dev/docs/integrations/all/mcp-generic
`

// TestMCPGenericProxyBaseURL: the real mcp-generic entry names no base
// URL, so the proxy sends an MCP_OAUTH2_GENERIC connection's requests to
// the connection's mcp_server_url with its token; a stored URL that a base
// URL template would refuse (a query, user info) is refused with
// invalid_connection_config before anything is sent; Base-Url-Override
// still wins.
func TestMCPGenericProxyBaseURL(t *testing.T) {
	t.Parallel()
	ps, err := integrations.LoadNangoYAML(strings.NewReader(mcpGenericYAML))
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 1 || ps[0].AuthMode != integrations.AuthModeMCPOAuth2Generic || (ps[0].Proxy != nil && ps[0].Proxy.BaseURL != "") {
		t.Fatalf("the entry is not an MCP_OAUTH2_GENERIC provider without a base URL: %+v", ps)
	}
	base, err := integrations.DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	cat, err := base.With(ps...)
	if err != nil {
		t.Fatal(err)
	}
	backends(t, func(t *testing.T, b *backend) {
		type seen struct{ method, path, query, auth string }
		var mu sync.Mutex
		var got []seen
		up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			got = append(got, seen{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Authorization")})
			mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}`))
		}))
		t.Cleanup(up.Close)
		last := func(t *testing.T) (seen, int) {
			t.Helper()
			mu.Lock()
			defer mu.Unlock()
			if len(got) == 0 {
				return seen{}, 0
			}
			return got[len(got)-1], len(got)
		}

		bu := setup(t, b, func(cfg *connect.Config) { cfg.Providers = cat })
		bu.mustDo(t, 200, req{method: "POST", path: "/integrations", body: `{"provider":"mcp-generic","unique_key":"mcpg"}`})
		imp := func(id, server, token string) *response {
			meta, _ := json.Marshal(map[string]string{"token_endpoint": up.URL + "/as/token"})
			body, _ := json.Marshal(map[string]any{"provider_config_key": "mcpg", "connection_id": id, "access_token": token,
				"no_expiration": true, "connection_config": map[string]any{"mcp_server_url": server,
					"oauth_metadata": string(meta), "oauth_client_info": `{"client_id":"registered-client"}`}})
			return bu.do(t, req{method: "POST", path: "/connections", body: string(body)})
		}
		if r := imp("c1", up.URL+"/mcp", "mcp-token-1"); r.status != 201 {
			t.Fatalf("import: %d %s", r.status, r.raw)
		}
		hdr := func(id string) map[string]string {
			return map[string]string{"Connection-Id": id, "Provider-Config-Key": "mcpg"}
		}
		r := bu.do(t, req{method: "POST", path: "/proxy/tools/list?cursor=2", header: hdr("c1"), body: `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`})
		if r.status != 200 {
			t.Fatalf("proxy: %d %s", r.status, r.raw)
		}
		if s, _ := last(t); s != (seen{"POST", "/mcp/tools/list", "cursor=2", "Bearer mcp-token-1"}) {
			t.Errorf("the MCP server saw %+v", s)
		}

		// A base URL override is used instead (its host gets no
		// credentials unless it is the same origin: here it is).
		h := hdr("c1")
		h["Base-Url-Override"] = up.URL + "/other"
		bu.mustDo(t, 200, req{method: "GET", path: "/proxy/x", header: h})
		if s, _ := last(t); s != (seen{"GET", "/other/x", "", "Bearer mcp-token-1"}) {
			t.Errorf("with Base-Url-Override the server saw %+v", s)
		}

		// Stored URLs a base URL may not be (rows written before the
		// import checked them, say): refused before anything is sent.
		for i, c := range []struct{ server, code string }{
			{up.URL + "/mcp?tenant=a", "invalid_connection_config"},
			{strings.Replace(up.URL, "http://", "http://user@", 1) + "/mcp", "invalid_connection_config"},
			{strings.Replace(up.URL, "http://", "ftp://", 1) + "/mcp", "invalid_connection_config"},
			{up.URL + "/mcp#frag", "invalid_connection_config"},
			{"/mcp", "invalid_connection_config"},
			{"", "missing_connection_config"},
		} {
			id := "stored-" + strconv.Itoa(i)
			if r := imp(id, up.URL+"/mcp", "mcp-token-2"); r.status != 201 {
				t.Fatalf("import: %d %s", r.status, r.raw)
			}
			conn, err := b.store.GetConnection(context.Background(), bu.env.ID, "mcpg", id)
			if err != nil {
				t.Fatal(err)
			}
			conn.ConnectionConfig["mcp_server_url"] = c.server
			if err := b.store.UpdateConnection(context.Background(), conn); err != nil {
				t.Fatal(err)
			}
			_, before := last(t)
			r := bu.do(t, req{method: "GET", path: "/proxy/tools", header: hdr(id)})
			if r.status != 400 || r.errCode() != c.code {
				t.Errorf("proxy to %q: %d %s, want 400 %s", c.server, r.status, r.raw, c.code)
			}
			if s, n := last(t); n != before {
				t.Errorf("the MCP server was called for %q: %+v", c.server, s)
			}
		}
	})
}
