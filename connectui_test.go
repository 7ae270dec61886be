package connect_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/connectui"
)

// The connect UI is served by Handler and ConnectHandler at /connect/, next
// to GET /connect/session, and it calls the API at PublicURL by default.
func TestConnectUIMounted(t *testing.T) {
	t.Parallel()
	bu := setup(t, sqliteBackend(t), func(c *connect.Config) {
		c.ConnectUI.AllowedAPIOrigins = []string{"https://other.example.com"}
	})
	connectSrv := httptest.NewServer(bu.svc.ConnectHandler())
	t.Cleanup(connectSrv.Close)
	for name, base := range map[string]string{"Handler": bu.srv.URL, "ConnectHandler": connectSrv.URL} {
		resp, err := http.Get(base + "/connect/")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
			t.Fatalf("%s GET /connect/: %d %s", name, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		csp := resp.Header.Get("Content-Security-Policy")
		if !strings.Contains(csp, "connect-src 'self' https://connect.example.com https://other.example.com;") {
			t.Errorf("%s: CSP %q does not allow exactly the PublicURL and the configured origins", name, csp)
		}
		if !strings.Contains(string(body), `data-api-url="https://connect.example.com"`) {
			t.Errorf("%s: the page does not default to PublicURL", name)
		}
		resp, err = http.Get(base + "/connect/ui/app.js")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s GET /connect/ui/app.js: %d", name, resp.StatusCode)
		}
		// The session route next to it still answers (401 without a token).
		resp, err = http.Get(base + "/connect/session")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s GET /connect/session without a token: %d, want 401", name, resp.StatusCode)
		}
	}
	// POST /connect/sessions is still the API's.
	bu.mustDo(t, http.StatusCreated, req{method: "POST", path: "/connect/sessions", body: `{"end_user":{"id":"u1"}}`})
}

func TestConnectUIConfigChecked(t *testing.T) {
	t.Parallel()
	cfg := baseConfig(t)
	_, err := connect.New(connect.Config{Store: cfg.Store, Scheduler: cfg.Scheduler, EncryptionKeys: cfg.EncryptionKeys,
		ConnectUI: connectui.Config{AllowedAPIOrigins: []string{"not a url"}}})
	if err == nil || !strings.Contains(err.Error(), "ConnectUI") {
		t.Fatalf("New with a bad ConnectUI config: %v", err)
	}
}
