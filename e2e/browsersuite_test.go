package e2e

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The stores a browser test runs on, each a subtest of browserTest: the
// reference server's default, a SQLite file in a fresh CONNECT_DATA_DIR
// with the key the server makes there, and Postgres, a fresh database
// through TEST_DATABASE_URL with a random CONNECT_ENCRYPTION_KEY.
const (
	storeSQLite   = "sqlite"
	storePostgres = "postgres"
)

// browserSuite is what a browser end-to-end test needs: Node.js, the e2e
// packages (playwright-core and @nangohq/frontend), Chromium, and for
// Postgres TEST_DATABASE_URL.
type browserSuite struct {
	ctx      context.Context
	store    string // storeSQLite or storePostgres
	adminURL string // TEST_DATABASE_URL, for storePostgres
	node     string // the node binary
	dir      string // the e2e directory
	chromium string
}

// browserTest runs fn once per store, as the parallel subtests "sqlite"
// and "postgres", each with a suite whose start puts the reference server
// on that store. It skips the test when Node.js, the e2e packages or
// Chromium is missing, and the postgres subtest without TEST_DATABASE_URL;
// it fails them instead when CI=true or CONNECT_REQUIRE_POSTGRES=1.
func browserTest(t *testing.T, fn func(t *testing.T, bs *browserSuite)) {
	t.Helper()
	var s browserSuite
	s.node, s.dir, s.chromium = browserTools(t, "playwright-core", "@nangohq/frontend")
	for _, store := range []string{storeSQLite, storePostgres} {
		t.Run(store, func(t *testing.T) {
			t.Parallel()
			bs := s
			bs.store = store
			if store == storePostgres {
				if bs.adminURL = os.Getenv("TEST_DATABASE_URL"); bs.adminURL == "" {
					skipOrFail(t, os.Getenv("CONNECT_REQUIRE_POSTGRES") == "1", "TEST_DATABASE_URL is not set; set it to run the browser end-to-end test on Postgres")
				}
			}
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			bs.ctx = ctx
			fn(t, &bs)
		})
	}
}

// browserTools returns the node binary, the e2e directory and Chromium, and
// checks that e2e/node_modules holds the packages pkgs. It skips the test
// when one is missing unless CI=true or CONNECT_REQUIRE_POSTGRES=1, when it
// fails it instead.
func browserTools(t *testing.T, pkgs ...string) (node, dir, chromium string) {
	t.Helper()
	requireNode := os.Getenv("CONNECT_REQUIRE_POSTGRES") == "1" || os.Getenv("CI") == "true"
	var err error
	if node, err = exec.LookPath("node"); err != nil {
		skipOrFail(t, requireNode, "node is not on PATH: install Node.js 20 or newer, then run `npm ci --prefix e2e`")
	}
	if dir, err = filepath.Abs("."); err != nil {
		t.Fatal(err)
	}
	for _, pkg := range pkgs {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", pkg, "package.json")); err != nil {
			skipOrFail(t, requireNode, "e2e/node_modules is missing "+pkg+": run `npm ci --prefix e2e` from the repository root")
		}
	}
	if chromium = findChromium(); chromium == "" {
		skipOrFail(t, requireNode, "Chromium is not installed: apt-get install chromium (or set CHROMIUM_PATH)")
	}
	return node, dir, chromium
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

// start builds the reference server and starts it on a fresh database of
// the suite's store with private provider addresses allowed and env added,
// and waits until it is healthy and has said where its data is.
func (s *browserSuite) start(t *testing.T, rs *refServer, env ...string) *server {
	t.Helper()
	bin := buildServer(t, filepath.Dir(s.dir))
	var storage []string
	var says []string // what the server's startup log must say of its data
	var file string   // the SQLite file
	switch s.store {
	case storeSQLite:
		dir := t.TempDir()
		file = filepath.Join(dir, "connect.db")
		storage = []string{"CONNECT_DATA_DIR=" + dir}
		says = []string{`msg="data in SQLite`, " database=" + file + " "}
	case storePostgres:
		dbURL := createDatabase(s.ctx, t, s.adminURL)
		u, err := url.Parse(dbURL)
		if err != nil {
			t.Fatal(err)
		}
		storage = []string{"DATABASE_URL=" + dbURL,
			"CONNECT_ENCRYPTION_KEY=" + base64.StdEncoding.EncodeToString(randomBytes(t, 32))}
		says = []string{`msg="data in Postgres`, u.Path}
	default:
		t.Fatalf("unknown store %q", s.store)
	}
	srv := startServer(s.ctx, t, bin, append(append([]string{
		"CONNECT_PROVIDER_ALLOW_PRIVATE_NETWORKS=true",
		"PORT=" + rs.port,
		"CONNECT_API_KEY=" + rs.apiKey,
		"CONNECT_PUBLIC_URL=" + rs.host,
	}, storage...), env...))
	srv.waitHealthy(s.ctx, t, rs.host+"/health")
	for _, want := range says {
		if !strings.Contains(srv.output.String(), want) {
			t.Fatalf("the server's startup log does not say %q:\n%s", want, srv.output.String())
		}
	}
	if file != "" {
		if fi, err := os.Stat(file); err != nil || fi.Size() == 0 {
			t.Fatalf("the server made no SQLite file %s: %v", file, err)
		}
	}
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
	s.runFiles(t, rs, []string{filepath.Join(s.dir, "browser", name)}, env...)
}

// runFiles is run with the paths of several files.
func (s *browserSuite) runFiles(t *testing.T, rs *refServer, files []string, env ...string) {
	t.Helper()
	runNode(s.ctx, t, s.node, s.dir, files, append([]string{
		"NANGO_HOST=" + rs.host,
		"NANGO_API_KEY=" + rs.apiKey,
		"E2E_CHROMIUM=" + s.chromium,
		"NO_COLOR=1",
	}, env...))
}
