package console_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/embedauth/connect/console"
)

func get(t *testing.T, h http.Handler, path string) *http.Response {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
	return rec.Result()
}

// TestPage: the page loads its modules by relative URLs under a strict
// policy (no inline script or style, no frame, the API alone), and is
// never cached.
func TestPage(t *testing.T) {
	h, err := console.New(console.Config{APIURL: "https://api.example.com/v1/"})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	h.Register(mux, "/admin/console/")
	resp := get(t, mux, "/admin/console/")
	body, _ := io.ReadAll(resp.Body)
	csp := resp.Header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "script-src 'self';", "style-src 'self';", "connect-src 'self' https://api.example.com;", "frame-ancestors 'none'", "form-action 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("the policy %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
		t.Errorf("the policy allows inline code: %q", csp)
	}
	if resp.Header.Get("Cache-Control") != "no-store" || resp.Header.Get("Content-Type") != "text/html; charset=utf-8" {
		t.Errorf("page headers %v", resp.Header)
	}
	if !strings.Contains(string(body), `data-api-url="https://api.example.com/v1"`) || !regexp.MustCompile(`src="ui/app.js\?v=[0-9a-f]+"`).Match(body) {
		t.Errorf("the page %s", body)
	}
	if strings.Contains(string(body), "<script>") || strings.Contains(string(body), "style=") {
		t.Error("the page has inline script or style")
	}
	// The bare prefix redirects to the page, relatively.
	if r := get(t, mux, "/admin/console"); r.StatusCode != http.StatusMovedPermanently || r.Header.Get("Location") != "./console/" {
		t.Errorf("GET /admin/console = %d %q", r.StatusCode, r.Header.Get("Location"))
	}
	// Assets are revalidated at every load (modules import one another).
	r := get(t, mux, "/admin/console/ui/app.js")
	if r.StatusCode != 200 || r.Header.Get("Cache-Control") != "no-cache" || r.Header.Get("ETag") == "" || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/javascript") {
		t.Errorf("app.js: %d %v", r.StatusCode, r.Header)
	}
	if r := get(t, mux, "/admin/console/ui/nope.js"); r.StatusCode != 404 {
		t.Errorf("a missing asset = %d", r.StatusCode)
	}
}

// TestServeHTTPUnderStripPrefix: the Handler serves under any prefix.
func TestServeHTTPUnderStripPrefix(t *testing.T) {
	h, err := console.New(console.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv := http.StripPrefix("/ops", h)
	if r := get(t, srv, "/ops/"); r.StatusCode != 200 || !strings.Contains(r.Header.Get("Content-Security-Policy"), "connect-src 'self';") {
		t.Errorf("GET /ops/ = %d %v", r.StatusCode, r.Header)
	}
	if r := get(t, srv, "/ops/ui/lib.js"); r.StatusCode != 200 {
		t.Errorf("GET /ops/ui/lib.js = %d", r.StatusCode)
	}
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, httptest.NewRequest("POST", "/ops/", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST = %d", rec.Code)
	}
	if _, err := console.New(console.Config{APIURL: "ftp://x"}); err == nil {
		t.Error("an ftp API URL was accepted")
	}
}

// TestScriptWeight: the console's scripts stay light: under 200 KB in all,
// every module loaded at the first paint.
func TestScriptWeight(t *testing.T) {
	h, err := console.New(console.Config{})
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, name := range h.Assets() {
		if strings.HasSuffix(name, ".js") {
			total += h.AssetSize(name)
		}
	}
	if total == 0 || total > 200_000 {
		t.Errorf("the scripts weigh %d bytes, want at most 200,000", total)
	}
	t.Logf("scripts: %d bytes", total)
}
