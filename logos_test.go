package connect_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/embedauth/connect"
)

// TestProviderLogos: without a logo base URL, logo_url points at the
// service's own logo route, which serves a real logo for a provider the
// library has one of, a monogram for the others, and a JSON 404 for an
// unknown provider.
func TestProviderLogos(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		bu := setup(t, b)
		seed(t, bu)
		for _, p := range []string{"github", "twilio"} {
			d := data(t, bu.mustDo(t, 200, req{method: "GET", path: "/providers/" + p}))
			if want := "https://connect.example.com/providers/" + p + "/logo.svg"; d["logo_url"] != want {
				t.Errorf("GET /providers/%s: logo_url %v, want %s", p, d["logo_url"], want)
			}
		}
		for name, tc := range map[string]struct {
			provider string
			status   int
			has      string
		}{
			"real":     {"github", 200, "<path"},
			"monogram": {"attio", 200, ">A</text>"},
			"unknown":  {"nope", 404, `"code":"not_found"`},
		} {
			t.Run(name, func(t *testing.T) {
				resp, err := http.Get(bu.srv.URL + "/providers/" + tc.provider + "/logo.svg")
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != tc.status || !strings.Contains(string(body), tc.has) {
					t.Errorf("logo of %s: %d %s, want %d with %s", tc.provider, resp.StatusCode, body, tc.status, tc.has)
				}
			})
		}
	})
}

// TestLogoBaseURL: with Config.LogoBaseURL, the logo of every provider (of
// the API, the integrations list and the connect UI's session routes) is
// the host's base URL + NAME.svg, and the logo route redirects there.
func TestLogoBaseURL(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		bu := setup(t, b, func(c *connect.Config) { c.LogoBaseURL = "https://cdn.example.com/logos/" })
		seed(t, bu)
		want := func(p string) string { return "https://cdn.example.com/logos/" + p + ".svg" }

		if d := data(t, bu.mustDo(t, 200, req{method: "GET", path: "/providers/github"})); d["logo_url"] != want("github") {
			t.Errorf("GET /providers/github: logo_url %v, want %s", d["logo_url"], want("github"))
		}
		for _, p := range bu.mustDo(t, 200, req{method: "GET", path: "/providers?search=twilio"}).obj()["data"].([]any) {
			p := p.(map[string]any)
			if p["logo_url"] != want(p["name"].(string)) {
				t.Errorf("GET /providers: %v has logo_url %v", p["name"], p["logo_url"])
			}
		}
		list := bu.mustDo(t, 200, req{method: "GET", path: "/integrations"}).obj()["data"].([]any)
		if len(list) != 3 {
			t.Fatalf("GET /integrations: %v", list)
		}
		for _, it := range list {
			it := it.(map[string]any)
			if it["logo"] != want(it["provider"].(string)) {
				t.Errorf("GET /integrations: %v has logo %v", it["unique_key"], it["logo"])
			}
		}
		if d := data(t, bu.mustDo(t, 200, req{method: "GET", path: "/integrations/gh"})); d["logo"] != want("github") {
			t.Errorf("GET /integrations/gh: logo %v", d["logo"])
		}

		// The connect UI reads the same addresses with a session token.
		tok := bu.session(t, `{"tags":{"end_user_id":"u1"}}`)
		for _, it := range bu.mustDo(t, 200, req{method: "GET", path: "/integrations", key: tok}).obj()["data"].([]any) {
			it := it.(map[string]any)
			if it["logo"] != want(it["provider"].(string)) {
				t.Errorf("GET /integrations with a session token: %v has logo %v", it["unique_key"], it["logo"])
			}
		}
		if d := data(t, bu.mustDo(t, 200, req{method: "GET", path: "/providers/github", key: tok})); d["logo_url"] != want("github") {
			t.Errorf("GET /providers/github with a session token: logo_url %v", d["logo_url"])
		}

		noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := noRedirect.Get(bu.srv.URL + "/providers/github/logo.svg")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != want("github") {
			t.Errorf("logo route: %d to %q, want 302 to %s", resp.StatusCode, resp.Header.Get("Location"), want("github"))
		}
	})
}

// TestLogoBaseURLRefused: connect.New refuses a logo base URL that is not
// an absolute http(s) URL without query, fragment or user info.
func TestLogoBaseURLRefused(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		sched := schedulerFor(t, b) // New refuses the URL before it registers anything on it
		for _, base := range []string{"/logos", "ftp://cdn.example.com", "https://cdn.example.com/?v=1", "https://cdn.example.com/#x",
			"https://u:p@cdn.example.com", "https://", "javascript:alert(1)"} {
			_, err := connect.New(connect.Config{Store: b.store, Scheduler: sched, EncryptionKeys: []connect.EncryptionKey{testKey}, LogoBaseURL: base})
			if err == nil || !strings.Contains(err.Error(), "Config.LogoBaseURL") {
				t.Errorf("LogoBaseURL %q: error %v, want one naming Config.LogoBaseURL", base, err)
			}
		}
	})
}
