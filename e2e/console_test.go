package e2e

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/embedauth/connect/integrations"
)

// The data of TestConsole: the catalogue's HubSpot, GitHub and Slack
// providers with their addresses moved to fakes (their logos stay): a
// HubSpot whose token endpoint refuses every refresh (revokedProvider), and
// the GitHub and Slack APIs of the example functions (see
// functions_apis_test.go), which the server registers for the
// integrations github and slack.
const (
	consoleCRMKey     = "hubspot"
	consoleGithubKey  = "github"
	consoleSlackKey   = "slack"
	consoleHealthy    = "initech"
	consoleBroken     = "globex" // its refresh token was revoked
	consoleStale      = "acme"   // its token expired, and its refresh token was revoked
	consoleGithubConn = "initech"
	consoleSigningKey = "e2e-console-signing-key-0123456789"
	consoleDataWait   = 60 * time.Second
)

// TestConsole drives the operations console (/console/) in headless
// Chromium against the reference server on Postgres, with data made
// through the API and real flows: a connection whose refresh the
// provider refused (an auth error pointing at its log entry), the
// example GitHub issues sync with records, and webhook deliveries that a
// receiver first answers with 500 and then with 200. See
// e2e/browser/console.test.mjs for what the browser does. With
// CONNECT_E2E_SCREENSHOTS=<dir>, the test writes the screenshots of
// docs/ (console-<screen>-<theme>.png) there.
func TestConsole(t *testing.T) {
	node, dir, chromium := browserTools(t, "playwright-core")
	adminURL := os.Getenv("TEST_DATABASE_URL")
	if adminURL == "" {
		skipOrFail(t, os.Getenv("CONNECT_REQUIRE_POSTGRES") == "1" || os.Getenv("CI") == "true",
			"TEST_DATABASE_URL is not set; set it to run the console's browser test on Postgres")
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	bs := &browserSuite{ctx: ctx, store: storePostgres, adminURL: adminURL, node: node, dir: dir, chromium: chromium}

	shots := os.Getenv("CONNECT_E2E_SCREENSHOTS")
	if shots != "" {
		var err error
		if shots, err = filepath.Abs(shots); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Stat(shots); err != nil || !fi.IsDir() {
			t.Fatalf("CONNECT_E2E_SCREENSHOTS=%s is not a directory (err=%v)", shots, err)
		}
	}

	crm := newRevokedProvider(t)
	fns := startFunctionAPIs(t)
	hooks := newSwitchReceiver(t, consoleSigningKey)

	providers := filepath.Join(t.TempDir(), "providers.yaml")
	if err := os.WriteFile(providers, consoleProvidersYAML(t, crm.srv.URL, fns), 0o600); err != nil {
		t.Fatal(err)
	}
	rs := bs.newServer(t)
	srv := bs.start(t, rs,
		"CONNECT_PROVIDERS_FILE="+providers,
		"CONNECT_EXAMPLE_FUNCTIONS=github="+consoleGithubKey+",slack="+consoleSlackKey,
		"CONNECT_WEBHOOK_URLS="+hooks.srv.URL+"/hooks",
		"CONNECT_WEBHOOK_SIGNING_KEY="+consoleSigningKey,
		// Fast retries only: a refused delivery is failed within a second.
		"CONNECT_WEBHOOK_RETRY_SCHEDULE=none",
	)
	api := rs.api

	// Integrations.
	api.mustCreateIntegration(t, map[string]any{"unique_key": consoleCRMKey, "provider": "hubspot", "display_name": "HubSpot",
		"credentials": map[string]any{"type": "OAUTH2", "client_id": fakeClientID, "client_secret": fakeClientSecret, "scopes": "crm.objects.contacts.read"}})
	api.mustCreateIntegration(t, map[string]any{"unique_key": consoleGithubKey, "provider": "github", "display_name": "GitHub issues",
		"credentials": map[string]any{"type": "OAUTH2", "client_id": "gh-client", "client_secret": "gh-secret", "scopes": "repo"}})
	api.mustCreateIntegration(t, map[string]any{"unique_key": consoleSlackKey, "provider": "slack", "display_name": "Slack",
		"credentials": map[string]any{"type": "OAUTH2", "client_id": "slack-client", "client_secret": "slack-secret", "scopes": "chat:write"}})

	// Connections of customers' end users, imported with their tokens.
	// HubSpot's tokens expire in an hour; it refuses every refresh.
	endUser := func(id, name, email string) map[string]string {
		return map[string]string{"end_user_id": id, "end_user_display_name": name, "end_user_email": email}
	}
	initech := endUser("u-1001", "Peter Gibbons", "peter@initech.example")
	crmConns := []struct {
		id   string
		tags map[string]string
	}{
		{consoleHealthy, initech},
		{"hooli", endUser("u-1002", "Gavin Belson", "gavin@hooli.example")},
		{consoleBroken, endUser("u-1003", "Hank Scorpio", "hank@globex.example")},
		{"umbrella", endUser("u-1004", "Albert Wesker", "albert@umbrella.example")},
	}
	refreshTokens := map[string]string{}
	for _, c := range crmConns {
		refreshTokens[c.id] = "rt-" + randomHex(t, 8)
		api.mustImport(t, map[string]any{"provider_config_key": consoleCRMKey, "connection_id": c.id,
			"access_token": "at-" + randomHex(t, 8), "refresh_token": refreshTokens[c.id], "expires_in": 3600, "tags": c.tags})
	}
	// The issues sync starts by itself for the GitHub connection (it
	// auto-starts); its repository is in the metadata.
	api.mustImport(t, map[string]any{"provider_config_key": consoleGithubKey, "connection_id": consoleGithubConn,
		"access_token": fnGithubToken, "no_expiration": true, "metadata": map[string]any{"owner": fnGithubOwner, "repo": fnGithubRepo},
		"tags": initech})
	api.mustImport(t, map[string]any{"provider_config_key": consoleSlackKey, "connection_id": consoleHealthy,
		"access_token": fnSlackToken, "no_expiration": true, "tags": initech})

	// A connection whose token has expired: its first read refreshes it,
	// which the provider refuses (the browser test opens it).
	refreshTokens[consoleStale] = "rt-" + randomHex(t, 8)
	api.mustImport(t, map[string]any{"provider_config_key": consoleCRMKey, "connection_id": consoleStale,
		"access_token": "at-" + randomHex(t, 8), "refresh_token": refreshTokens[consoleStale],
		"expires_at": time.Now().Add(-time.Minute).UTC().Format(time.RFC3339), "tags": endUser("u-1005", "Wile E. Coyote", "wile@acme.example")})
	// The broken connection: a forced refresh, which the provider refuses.
	// The refresh records an auth error pointing at its log entry, and
	// sends the failed refresh's auth webhook, which the receiver refuses
	// (500) for now.
	path := "/connections/" + consoleBroken + "?provider_config_key=" + consoleCRMKey
	if status, out := api.do(t, http.MethodGet, path+"&force_refresh=true", nil); status != http.StatusBadRequest {
		t.Fatalf("GET %s&force_refresh=true: %d %s, want 400 (the provider refuses the refresh)", path, status, out)
	}
	if n := crm.refreshes(refreshTokens[consoleBroken]); n != 1 {
		t.Fatalf("the provider got %d requests to refresh %s, want 1", n, consoleBroken)
	}
	var broken struct {
		Errors []struct {
			Type  string `json:"type"`
			LogID string `json:"log_id"`
		} `json:"errors"`
	}
	api.mustGetJSON(t, path, &broken)
	if len(broken.Errors) != 1 || broken.Errors[0].Type != "auth" || broken.Errors[0].LogID == "" {
		t.Fatalf("the broken connection's errors are %+v, want one auth error with a log id", broken.Errors)
	}
	hooks.waitRefused(t, consoleBroken, webhookWait)
	waitSynced(t, api, consoleGithubKey, consoleGithubConn)

	cfg, err := json.Marshal(map[string]any{
		"broken":   map[string]string{"integration": consoleCRMKey, "connection": consoleBroken, "logId": broken.Errors[0].LogID},
		"stale":    map[string]string{"integration": consoleCRMKey, "connection": consoleStale},
		"github":   map[string]string{"integration": consoleGithubKey, "connection": consoleGithubConn, "sync": "issues", "model": "GithubIssue"},
		"receiver": hooks.srv.URL + "/control",
		"hookUrl":  hooks.srv.URL + "/hooks",
		"slack":    consoleSlackKey,
		"imported": len(crmConns) + 3, // and GitHub's, Slack's and the expired one
	})
	if err != nil {
		t.Fatal(err)
	}
	results := filepath.Join(t.TempDir(), "results.json")
	start := time.Now()
	bs.run(t, rs, "console.test.mjs",
		"E2E_CONSOLE="+string(cfg),
		"E2E_SCREENSHOT_DIR="+shots,
		"E2E_RESULTS="+results,
	)
	t.Logf("the console's browser test took %s", time.Since(start).Round(time.Millisecond))

	// What the browser did, checked through the API and the receiver.
	raw, err := os.ReadFile(results)
	if err != nil {
		t.Fatalf("the browser test wrote no results: %v", err)
	}
	var res struct {
		NarrowKeyHint  string `json:"narrowKeyHint"`
		ScriptBytes    int    `json:"scriptBytes"`
		ResentDelivery string `json:"resentDelivery"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatalf("results %s: %v", raw, err)
	}
	t.Logf("the console's scripts for the first paint: %d bytes", res.ScriptBytes)
	var keys struct {
		Data []struct {
			Name   string   `json:"name"`
			Hint   string   `json:"hint"`
			Scopes []string `json:"scopes"`
		} `json:"data"`
	}
	api.mustGetJSON(t, "/environment/api-keys", &keys)
	found := false
	for _, k := range keys.Data {
		if k.Hint == res.NarrowKeyHint {
			found = true
			if slices.Sort(k.Scopes); strings.Join(k.Scopes, " ") != "environment:connections:read environment:logs:read" {
				t.Errorf("the key made in the console has the scopes %v", k.Scopes)
			}
		}
	}
	if !found {
		t.Errorf("no API key ends with %q, the key made in the console: %+v", res.NarrowKeyHint, keys.Data)
	}
	// The delivery the browser followed: refused, delivered by a retry once
	// the receiver answered 200, and delivered again by the resend.
	if refused, accepted := hooks.attempts(res.ResentDelivery); refused != 3 || accepted != 1 {
		t.Errorf("the receiver refused the delivery %q %d times and accepted it %d times, want 3 and 1", res.ResentDelivery, refused, accepted)
	}
	if crm.refreshes(refreshTokens[consoleStale]) == 0 {
		t.Errorf("the expired connection %s was never refreshed", consoleStale)
	}
	if n := hooks.badSignatures(); n > 0 {
		t.Errorf("%d webhooks had a wrong X-Svc-Hmac-Sha256", n)
	}
	if shots != "" {
		for _, screen := range []string{"overview", "connections", "connection", "syncs", "logs", "deliveries", "integrations", "settings"} {
			for _, theme := range []string{"light", "dark"} {
				b, err := os.ReadFile(filepath.Join(shots, "console-"+screen+"-"+theme+".png"))
				if err != nil || !strings.HasPrefix(string(b), "\x89PNG") {
					t.Errorf("screenshot console-%s-%s.png missing or not a PNG (err=%v)", screen, theme, err)
				}
			}
		}
	}
	srv.stop(t)
}

// consoleProvidersYAML is a providers file of the catalogue's hubspot,
// github and slack with their addresses moved: HubSpot's to crm, GitHub's
// and Slack's to the fakes of fns.
func consoleProvidersYAML(t *testing.T, crm string, fns *functionAPIs) []byte {
	t.Helper()
	cat, err := integrations.DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	var ps []*integrations.Provider
	for name, base := range map[string]string{"hubspot": crm, "github": fns.github.URL, "slack": fns.slack.URL} {
		orig, ok := cat.Get(name)
		if !ok || orig.Proxy == nil {
			t.Fatalf("the catalogue has no %s provider with a proxy", name)
		}
		p := orig.Clone()
		p.AuthorizationURL, p.TokenURL, p.RefreshURL, p.Proxy.BaseURL = base+"/authorize", base+"/token", "", base
		ps = append(ps, p)
	}
	b, err := yaml.Marshal(map[string]any{"providers": ps})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// revokedProvider is an OAuth 2 token endpoint that refuses every refresh
// as a revoked grant, and counts them by refresh token.
type revokedProvider struct {
	srv *httptest.Server
	mu  sync.Mutex
	n   map[string]int
}

func newRevokedProvider(t *testing.T) *revokedProvider {
	p := &revokedProvider{n: map[string]int{}}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/token" {
			http.NotFound(w, r)
			return
		}
		_ = r.ParseForm()
		p.mu.Lock()
		p.n[r.PostForm.Get("refresh_token")]++
		p.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": "invalid_grant",
			"error_description": "The refresh token was revoked by the user."})
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *revokedProvider) refreshes(refreshToken string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n[refreshToken]
}

// switchReceiver is the host's webhook endpoint (/hooks): it verifies each
// webhook's signature and answers with its current status, 500 at first;
// POST /control with a status code in the body changes it (the browser
// test does). It keeps the refused and accepted attempts by delivery id.
type switchReceiver struct {
	srv      *httptest.Server
	key      string
	mu       sync.Mutex
	status   int
	refused  map[string]int    // delivery id: attempts answered with an error
	accepted map[string]int    // delivery id: attempts answered with 2xx
	conn     map[string]string // connection id: the delivery id of its first webhook
	bad      int
}

func newSwitchReceiver(t *testing.T, key string) *switchReceiver {
	h := &switchReceiver{key: key, status: http.StatusInternalServerError,
		refused: map[string]int{}, accepted: map[string]int{}, conn: map[string]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /control", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		code, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || code < 200 || code > 599 {
			http.Error(w, "the body is a status code", http.StatusBadRequest)
			return
		}
		h.mu.Lock()
		h.status = code
		h.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("POST /hooks", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mac := hmac.New(sha256.New, []byte(h.key))
		mac.Write(body)
		h.mu.Lock()
		defer h.mu.Unlock()
		if !hmac.Equal([]byte(r.Header.Get("X-Svc-Hmac-Sha256")), []byte(hex.EncodeToString(mac.Sum(nil)))) {
			h.bad++
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		id := r.Header.Get("X-Svc-Delivery-Id")
		var m struct {
			ConnectionID string `json:"connectionId"`
		}
		_ = json.Unmarshal(body, &m)
		if _, ok := h.conn[m.ConnectionID]; !ok && m.ConnectionID != "" {
			h.conn[m.ConnectionID] = id
		}
		if h.status >= 300 {
			h.refused[id]++
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(h.status)
			_, _ = io.WriteString(w, `{"error":"the receiver is down for maintenance"}`)
			return
		}
		h.accepted[id]++
		w.WriteHeader(h.status)
	})
	h.srv = httptest.NewServer(mux)
	t.Cleanup(h.srv.Close)
	return h
}

// waitRefused waits until the first webhook of a connection has been
// refused at least three times (the fast retries).
func (h *switchReceiver) waitRefused(t *testing.T, connectionID string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		h.mu.Lock()
		id := h.conn[connectionID]
		n := h.refused[id]
		h.mu.Unlock()
		if id != "" && n >= 3 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the receiver did not refuse the webhook of %s three times within %s (delivery %q, %d refusals)", connectionID, d, id, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (h *switchReceiver) attempts(id string) (refused, accepted int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.refused[id], h.accepted[id]
}

func (h *switchReceiver) badSignatures() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.bad
}

func (a *apiClient) mustImport(t *testing.T, body map[string]any) {
	t.Helper()
	if status, out := a.do(t, http.MethodPost, "/connections", body); status != http.StatusOK && status != http.StatusCreated {
		t.Fatalf("POST /connections %v: %d %s", body["connection_id"], status, out)
	}
}

func (a *apiClient) mustGetJSON(t *testing.T, path string, v any) {
	t.Helper()
	status, out := a.do(t, http.MethodGet, path, nil)
	if status != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, status, out)
	}
	if err := json.Unmarshal(out, v); err != nil {
		t.Fatalf("GET %s: %v in %s", path, err, out)
	}
}

// waitSynced waits until the issues sync of the connection has finished a
// run that saved records.
func waitSynced(t *testing.T, api *apiClient, key, conn string) {
	t.Helper()
	deadline := time.Now().Add(consoleDataWait)
	q := url.Values{"provider_config_key": {key}, "connection_id": {conn}, "syncs": {"*"}}
	for {
		var st struct {
			Syncs []struct {
				Status      string         `json:"status"`
				FinishedAt  *string        `json:"finishedAt"`
				RecordCount map[string]int `json:"recordCount"`
			} `json:"syncs"`
		}
		api.mustGetJSON(t, "/sync/status?"+q.Encode(), &st)
		if len(st.Syncs) == 1 && st.Syncs[0].FinishedAt != nil && st.Syncs[0].RecordCount["GithubIssue"] > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the issues sync of %s saved no record within %s: %+v", conn, consoleDataWait, st.Syncs)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
