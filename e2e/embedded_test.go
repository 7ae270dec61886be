package e2e

import (
	"context"
	"database/sql"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/store/postgres"
)

// embedPrefix is where TestEmbeddedUnderPrefix mounts the service in its host application.
const embedPrefix = "/connect"

// TestEmbeddedUnderPrefix embeds the library the way the README's "Embed it" section does: a
// host application's ServeMux mounts svc.Handler() under /connect with http.StripPrefix, on
// Postgres, with Config.PublicURL naming that prefix. The host serves its own page, with the
// published @nangohq/frontend, on the same origin. In headless Chromium (see
// e2e/embedded/prefix.test.mjs), the connect_link completes an API-key and an OAuth 2
// connection in the connect UI, openConnectUI does the same in its iframe, and the frontend's
// auth() completes an OAuth 2 connection through its popup and its WebSocket, with the
// websocketsPath that GET /connect/session announces, and an API-key connection; no request
// the browser makes under the prefix may fail. Every connection must then exist.
func TestEmbeddedUnderPrefix(t *testing.T) {
	p := browserPrereqs(t)
	testFiles, err := filepath.Glob(filepath.Join(p.e2eDir, "embedded", "*.test.mjs"))
	if err != nil || len(testFiles) == 0 {
		t.Fatalf("no e2e/embedded/*.test.mjs files found (err=%v)", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)

	provider := newFakeProvider(t)
	providersFile := filepath.Join(t.TempDir(), "providers.yaml")
	if err := os.WriteFile(providersFile, []byte(fakeProvidersYAML(provider.srv.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	extra, err := integrations.LoadFile(providersFile)
	if err != nil {
		t.Fatal(err)
	}
	cat, err := integrations.DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	if cat, err = cat.With(extra...); err != nil {
		t.Fatal(err)
	}

	// The host application: its own page and the frontend package at the root, the service
	// under the prefix.
	mux := http.NewServeMux()
	host := httptest.NewServer(mux)
	t.Cleanup(host.Close)
	public := host.URL + embedPrefix

	db, err := sql.Open("postgres", createDatabase(ctx, t, p.adminURL))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := postgres.Migrate(ctx, db, nil); err != nil {
		t.Fatal(err)
	}
	st, err := postgres.New(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	sched, err := postgres.NewScheduler(db, nil, postgres.SchedulerConfig{JobTimeout: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	cfg := connect.Config{
		Store:          st,
		Scheduler:      sched,
		EncryptionKeys: []connect.EncryptionKey{{ID: "e2e", Key: randomBytes(t, 32)}},
		Providers:      cat,
		PublicURL:      public,
	}
	// The fake provider listens on 127.0.0.1.
	cfg.Proxy.Policy.AllowLoopback = true
	svc, err := connect.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := svc.Stop(sctx); err != nil {
			t.Errorf("svc.Stop: %v", err)
		}
	})
	mux.Handle(embedPrefix+"/", http.StripPrefix(embedPrefix, svc.Handler()))
	mux.Handle("GET /frontend/", http.StripPrefix("/frontend/",
		http.FileServer(http.Dir(filepath.Join(p.e2eDir, "node_modules", "@nangohq", "frontend", "dist")))))
	mux.HandleFunc("GET /page.html", func(w http.ResponseWriter, r *http.Request) {
		http.ServeFile(w, r, filepath.Join(p.e2eDir, "browser", "page.html"))
	})

	env, err := svc.Environments().Create(ctx, environments.CreateInput{Name: "prod"})
	if err != nil {
		t.Fatal(err)
	}
	apiKey, _, err := svc.Environments().CreateAPIKey(ctx, env.ID, environments.NewAPIKey{Name: "backend", Scopes: []string{environments.ScopeAll}})
	if err != nil {
		t.Fatal(err)
	}
	api := &apiClient{base: public, key: apiKey}
	api.mustCreateIntegration(t, map[string]any{"unique_key": "e2e-oauth", "provider": "e2e-oauth",
		"credentials": map[string]any{"type": "OAUTH2", "client_id": fakeClientID, "client_secret": fakeClientSecret, "scopes": "read"}})
	api.mustCreateIntegration(t, map[string]any{"unique_key": "e2e-apikey", "provider": "e2e-apikey"})

	results := filepath.Join(t.TempDir(), "results.json")
	runNode(ctx, t, p.node, p.e2eDir, testFiles, []string{
		"NANGO_HOST=" + public,
		"NANGO_API_KEY=" + apiKey,
		"E2E_PREFIX=" + embedPrefix,
		"E2E_PAGE_URL=" + host.URL + "/page.html",
		"E2E_CHROMIUM=" + p.chromium,
		"E2E_RESULTS=" + results,
		"E2E_API_KEY_VALUE=" + fakeAPIKey,
		"E2E_SUBDOMAIN=" + fakeSubdomain,
		"NO_COLOR=1",
	})

	raw, err := os.ReadFile(results)
	if err != nil {
		t.Fatalf("the browser tests wrote no results: %v", err)
	}
	var made []struct {
		Integration  string `json:"integration"`
		ConnectionID string `json:"connectionId"`
		Via          string `json:"via"`
		AuthMode     string `json:"authMode"`
	}
	if err := json.Unmarshal(raw, &made); err != nil {
		t.Fatalf("results %s: %v", raw, err)
	}
	want := map[string]bool{"connect_link/API_KEY": false, "connect_link/OAUTH2": false, "openConnectUI/API_KEY": false,
		"frontend.auth/API_KEY": false, "frontend.auth/OAUTH2": false}
	for _, m := range made {
		want[m.Via+"/"+m.AuthMode] = true
		if m.ConnectionID == "" {
			t.Errorf("%s %s: no connection id", m.Via, m.Integration)
			continue
		}
		api.mustHaveConnection(t, m.Integration, m.ConnectionID)
	}
	for k, seen := range want {
		if !seen {
			t.Errorf("no connection was made through %s", k)
		}
	}
	if n := provider.tokenExchanges(); n < 2 {
		t.Errorf("the fake provider exchanged %d codes, want at least 2 (connect UI, frontend auth)", n)
	}
}

// browserEnv is what the browser tests need: Postgres, node with e2e/node_modules, Chromium.
type browserEnv struct {
	adminURL, node, e2eDir, chromium string
}

// browserPrereqs finds what the browser tests need, and skips the test without it unless
// CONNECT_REQUIRE_POSTGRES=1 or CI=true, when it fails instead.
func browserPrereqs(t *testing.T) browserEnv {
	t.Helper()
	var p browserEnv
	p.adminURL = os.Getenv("TEST_DATABASE_URL")
	if p.adminURL == "" {
		skipOrFail(t, os.Getenv("CONNECT_REQUIRE_POSTGRES") == "1", "TEST_DATABASE_URL is not set; set it to run the browser end-to-end tests")
	}
	p.node, p.e2eDir, p.chromium = browserTools(t, "playwright-core", "@nangohq/frontend", "@nangohq/node")
	return p
}
