package connect_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/integrations"
	"github.com/google/go-cmp/cmp"
)

// withUnusableProvider adds acme-broken, a provider with an auth mode
// nobody knows, to the embedded catalogue, leniently: it is listed but
// unusable.
func withUnusableProvider(t testing.TB) func(*connect.Config) {
	t.Helper()
	ps, err := integrations.Load(strings.NewReader(`acme-broken:
    display_name: Acme Broken
    auth_mode: QUANTUM
    docs: https://docs.acme.example
`))
	if err != nil {
		t.Fatal(err)
	}
	def, err := integrations.DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	cat, err := integrations.BuildCatalog(def, integrations.BuildOptions{}, ps...)
	if err != nil {
		t.Fatal(err)
	}
	return func(cfg *connect.Config) { cfg.Providers = cat }
}

// TestUnusableProvider: a provider the catalogue lists as unusable is
// served with its reason, and every request that would build on it (a new
// integration, a connection by import, by a connect session's auth call or
// by an OAuth popup) is a 400 provider_unusable that stores nothing. The
// integration it would connect to was stored before the provider became
// unusable (a providers file changed between restarts).
func TestUnusableProvider(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		bu := setup(t, b, withUnusableProvider(t))
		seed(t, bu)
		ctx := context.Background()
		now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
		if err := b.store.CreateIntegration(ctx, &integrations.Integration{EnvironmentID: bu.env.ID, UniqueKey: "broken",
			Provider: "acme-broken", ForwardWebhooks: true, CreatedAt: now, UpdatedAt: now}); err != nil {
			t.Fatal(err)
		}
		const reason = `auth_mode: unknown auth mode "QUANTUM"`

		r := bu.mustDo(t, 200, req{method: "GET", path: "/providers/acme-broken"})
		data, _ := r.obj()["data"].(map[string]any)
		if data["name"] != "acme-broken" || data["auth_mode"] != "QUANTUM" || data["unusable"] != reason {
			t.Errorf("GET /providers/acme-broken = %s; want it with unusable %q", r.raw, reason)
		}
		r = bu.mustDo(t, 200, req{method: "GET", path: "/providers"})
		list, _ := r.obj()["data"].([]any)
		found, usableMarked := false, 0
		for _, e := range list {
			p, _ := e.(map[string]any)
			if p["name"] == "acme-broken" {
				found = p["unusable"] == reason
			} else if _, ok := p["unusable"]; ok {
				usableMarked++
			}
		}
		if !found || usableMarked != 0 {
			t.Errorf("GET /providers: acme-broken with its reason = %v, other providers marked unusable = %d", found, usableMarked)
		}

		tok := bu.session(t, `{"end_user":{"id":"u1"}}`)
		jsonType := map[string]string{"Content-Type": "application/json"}
		auth := map[string]string{"Content-Type": "application/json", "Authorization": "Bearer " + bu.key}
		before, rows := snapshot(t, bu), tableCounts(t, b)
		for _, tc := range []struct {
			name string
			do   func() rawResponse
		}{
			{"create integration", func() rawResponse {
				return rawDo(t, bu.srv.URL, "POST", "/integrations", auth, `{"provider":"acme-broken","unique_key":"b2"}`)
			}},
			{"import connection", func() rawResponse {
				return rawDo(t, bu.srv.URL, "POST", "/connections", auth, `{"provider_config_key":"broken","connection_id":"x1","api_key":"k"}`)
			}},
			{"session api-key auth", func() rawResponse {
				return rawDo(t, bu.srv.URL, "POST", "/api-auth/api-key/broken?connect_session_token="+tok, jsonType, `{"apiKey":"k-123456"}`)
			}},
			{"session basic auth", func() rawResponse {
				return rawDo(t, bu.srv.URL, "POST", "/api-auth/basic/broken?connect_session_token="+tok, jsonType, `{"username":"u","password":"p"}`)
			}},
			{"oauth popup", func() rawResponse {
				return rawDo(t, bu.srv.URL, "GET", "/oauth/connect/broken?connect_session_token="+tok, nil, "")
			}},
		} {
			r := tc.do()
			raw := r.body
			if r.status != 400 || !strings.Contains(raw, "provider_unusable") || !strings.Contains(raw, "QUANTUM") {
				t.Errorf("%s: %d %s; want 400 provider_unusable with the reason", tc.name, r.status, r.body)
			}
		}
		if diff := cmp.Diff(before, snapshot(t, bu)); diff != "" {
			t.Errorf("refused requests changed the store (-before +after):\n%s", diff)
		}
		if diff := cmp.Diff(rows, tableCounts(t, b)); diff != "" {
			t.Errorf("refused requests added rows (-before +after):\n%s", diff)
		}
	})
}

// TestClientCredentialsWithoutTokenURL: an OAUTH2_CC provider whose entry
// has no token URL (Nango's certn-partner) is usable: an integration is
// created, a connection imported with its token is stored, and connecting
// through POST /oauth2/auth answers a 400 provider_config_err that says
// why and stores nothing.
func TestClientCredentialsWithoutTokenURL(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		ps, err := integrations.Load(strings.NewReader(`cc-no-token:
    display_name: CC without token URL
    auth_mode: OAUTH2_CC
    docs: https://docs.example.com
    proxy:
        base_url: https://api.example.com
`))
		if err != nil {
			t.Fatal(err)
		}
		def, err := integrations.DefaultCatalog()
		if err != nil {
			t.Fatal(err)
		}
		cat, err := integrations.BuildCatalog(def, integrations.BuildOptions{Strict: true}, ps...)
		if err != nil {
			t.Fatalf("the provider is refused in strict mode: %v", err)
		}
		bu := setup(t, b, func(cfg *connect.Config) { cfg.Providers = cat })
		r := bu.mustDo(t, 200, req{method: "GET", path: "/providers/cc-no-token"})
		if _, has := r.obj()["data"].(map[string]any)["unusable"]; has {
			t.Errorf("the provider is listed as unusable: %s", r.raw)
		}
		bu.mustDo(t, 200, req{method: "POST", path: "/integrations", body: `{"provider":"cc-no-token","unique_key":"ccnt"}`})
		tok := bu.session(t, `{"end_user":{"id":"u1"}}`)
		before := snapshot(t, bu)
		res := rawDo(t, bu.srv.URL, "POST", "/oauth2/auth/ccnt?connect_session_token="+tok, map[string]string{"Content-Type": "application/json"}, `{"client_id":"id","client_secret":"secret"}`)
		if res.status != 400 || !strings.Contains(res.body, `"provider_config_err"`) || !strings.Contains(res.body, "no token URL") ||
			strings.Contains(res.body, "secret") {
			t.Errorf("POST /oauth2/auth = %d %s; want a 400 provider_config_err naming the missing token URL, without the secret", res.status, res.body)
		}
		if diff := cmp.Diff(before, snapshot(t, bu)); diff != "" {
			t.Errorf("the refused auth call stored something (-before +after):\n%s", diff)
		}
		bu.mustDo(t, 201, req{method: "POST", path: "/connections", body: `{"provider_config_key":"ccnt","connection_id":"c1",
			"credentials":{"type":"OAUTH2_CC","token":"tok-1","client_id":"id","client_secret":"secret"}}`})
	})
}

// TestIntegrationConfigSecrets: a value for an integration_config field the
// provider marks secret (AWS SigV4's keys) is refused in integration_config,
// which is stored and served as it is, on create and on update, and nothing
// changes; the same values are accepted in custom, which is sealed, and
// neither the integration nor its listing serves them.
func TestIntegrationConfigSecrets(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		cat := catalogWith(t, strings.Replace(awsSigV4Entry, "BASEURL", "https://aws.example.com/${connectionConfig.service}", 1))
		bu := setup(t, b, func(cfg *connect.Config) { cfg.Providers = cat })
		before := snapshot(t, bu)
		r := bu.do(t, req{method: "POST", path: "/integrations", body: `{"provider":"aws-sigv4","unique_key":"aws",
			"integration_config":{"service":"s3","awsAccessKeyId":"AKIA1","awsSecretAccessKey":"very-secret-key"}}`})
		if r.status != 400 || !strings.Contains(string(r.raw), "awsAccessKeyId") || strings.Contains(string(r.raw), "very-secret-key") {
			t.Errorf("a secret in integration_config: %d %s; want a 400 naming the field, without the value", r.status, r.raw)
		}
		if diff := cmp.Diff(before, snapshot(t, bu)); diff != "" {
			t.Errorf("the refused integration was stored (-before +after):\n%s", diff)
		}
		bu.mustDo(t, 200, req{method: "POST", path: "/integrations", body: `{"provider":"aws-sigv4","unique_key":"aws",
			"integration_config":{"service":"s3"},"custom":{"awsAccessKeyId":"AKIA1","awsSecretAccessKey":"very-secret-key"}}`})
		r = bu.do(t, req{method: "PATCH", path: "/integrations/aws", body: `{"integration_config":{"service":"s3","awsSecretAccessKey":"very-secret-key"}}`})
		if r.status != 400 || strings.Contains(string(r.raw), "very-secret-key") {
			t.Errorf("a secret in integration_config on update: %d %s", r.status, r.raw)
		}
		for _, path := range []string{"/integrations/aws", "/integrations"} {
			if got := bu.mustDo(t, 200, req{method: "GET", path: path}); strings.Contains(string(got.raw), "very-secret-key") {
				t.Errorf("GET %s serves the secret: %s", path, got.raw)
			}
		}
	})
}
