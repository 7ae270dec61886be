package e2e

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// browserSuite is what a browser end-to-end test needs: Postgres
// (TEST_DATABASE_URL), Node.js, the e2e packages (playwright-core and
// @nangohq/frontend) and Chromium. newBrowserSuite skips the test when one
// is missing, or fails it when CI=true or CONNECT_REQUIRE_POSTGRES=1.
type browserSuite struct {
	ctx      context.Context
	adminURL string
	node     string // the node binary
	dir      string // the e2e directory
	chromium string
}

func newBrowserSuite(t *testing.T) *browserSuite {
	t.Helper()
	requirePostgres := os.Getenv("CONNECT_REQUIRE_POSTGRES") == "1"
	requireNode := requirePostgres || os.Getenv("CI") == "true"
	s := &browserSuite{adminURL: os.Getenv("TEST_DATABASE_URL")}
	if s.adminURL == "" {
		if requirePostgres {
			t.Fatal("TEST_DATABASE_URL is not set and CONNECT_REQUIRE_POSTGRES=1: the end-to-end test needs Postgres")
		}
		t.Skip("TEST_DATABASE_URL is not set; set it to run the browser end-to-end test")
	}
	var err error
	if s.node, err = exec.LookPath("node"); err != nil {
		skipOrFail(t, requireNode, "node is not on PATH: install Node.js 20 or newer, then run `npm ci --prefix e2e`")
	}
	if s.dir, err = filepath.Abs("."); err != nil {
		t.Fatal(err)
	}
	for _, pkg := range []string{"playwright-core", "@nangohq/frontend"} {
		if _, err := os.Stat(filepath.Join(s.dir, "node_modules", pkg, "package.json")); err != nil {
			skipOrFail(t, requireNode, "e2e/node_modules is missing "+pkg+": run `npm ci --prefix e2e` from the repository root")
		}
	}
	if s.chromium = findChromium(); s.chromium == "" {
		skipOrFail(t, requireNode, "Chromium is not installed: apt-get install chromium (or set CHROMIUM_PATH)")
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	s.ctx = ctx
	return s
}

// refServer is a reference server of a browser suite: its address and API
// key are known before it starts (a fake provider may need its callback
// URL first).
type refServer struct {
	port, host, apiKey string
	api                *apiClient
}

// newServer picks the address and API key of a reference server.
func (s *browserSuite) newServer(t *testing.T) *refServer {
	t.Helper()
	rs := &refServer{port: freePort(t), apiKey: "e2e_" + randomHex(t, 24)}
	rs.host = "http://127.0.0.1:" + rs.port
	rs.api = &apiClient{base: rs.host, key: rs.apiKey}
	return rs
}

// start builds the reference server and starts it on a fresh database with
// private provider addresses allowed and env added, and waits until it is
// healthy.
func (s *browserSuite) start(t *testing.T, rs *refServer, env ...string) *server {
	t.Helper()
	bin := buildServer(t, filepath.Dir(s.dir))
	dbURL := createDatabase(s.ctx, t, s.adminURL)
	srv := startServer(s.ctx, t, bin, append([]string{
		"CONNECT_PROVIDER_ALLOW_PRIVATE_NETWORKS=true",
		"PORT=" + rs.port,
		"DATABASE_URL=" + dbURL,
		"CONNECT_ENCRYPTION_KEY=" + base64.StdEncoding.EncodeToString(randomBytes(t, 32)),
		"CONNECT_API_KEY=" + rs.apiKey,
		"CONNECT_PUBLIC_URL=" + rs.host,
	}, env...))
	srv.waitHealthy(s.ctx, t, rs.host+"/health")
	return srv
}

// pageURL serves the test page (e2e/browser/page.html), which loads
// @nangohq/frontend from e2e/node_modules, on an origin of its own, and
// returns its URL.
func (s *browserSuite) pageURL(t *testing.T) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("GET /frontend/", http.StripPrefix("/frontend/",
		http.FileServer(http.Dir(filepath.Join(s.dir, "node_modules", "@nangohq", "frontend", "dist")))))
	mux.HandleFunc("GET /page.html", func(w http.ResponseWriter, r *http.Request) {
		http.ServeFile(w, r, filepath.Join(s.dir, "browser", "page.html"))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL + "/page.html"
}

// run runs the browser test file e2e/browser/name with node --test, with
// the server's address and key (NANGO_HOST, NANGO_API_KEY), Chromium
// (E2E_CHROMIUM) and env.
func (s *browserSuite) run(t *testing.T, rs *refServer, name string, env ...string) {
	t.Helper()
	runNode(s.ctx, t, s.node, s.dir, []string{filepath.Join(s.dir, "browser", name)}, append([]string{
		"NANGO_HOST=" + rs.host,
		"NANGO_API_KEY=" + rs.apiKey,
		"E2E_CHROMIUM=" + s.chromium,
		"NO_COLOR=1",
	}, env...))
}
