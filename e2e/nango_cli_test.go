package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

const (
	// cliProvider is the provider of the integration fake of e2e/nango-project: a real one of
	// Nango's catalogue (the CLI's dry run looks the provider up there), an API-key provider
	// whose proxy sends "authorization: Bearer ${apiKey}", its base URL moved to the fake API.
	cliProvider    = "private-api-bearer"
	cliIntegration = "fake"
	cliItems       = 25 // items the fake API starts with
	cliPageSize    = 10 // at most this many per page, whatever the limit asked
	cliTimeout     = 3 * time.Minute
)

// TestNangoCLI deploys e2e/nango-project with the real nango CLI (0.71.10) to the reference
// server and drives the deployed functions with the published @nangohq/node client: the sync
// items against a fake provider API (cursor pagination), the actions create-item (with its
// ActionError) and whoami, sync and async, the function code route, and the on-event setup for
// a connection made after the deployment. The official TypeScript MCP client then drives the
// MCP servers (e2e/node-cli/mcp.test.mjs): the connection's deployed actions as tools, and the
// service's management tools, with keys of narrower scopes. It then runs `nango dryrun items`
// and `nango dryrun whoami` and `nango pull whoami` against the server, and redeploys the
// project without whoami: whoami is gone, the rest still runs. Each step logs its duration.
// See doc.go.
func TestNangoCLI(t *testing.T) {
	requirePostgres := os.Getenv("CONNECT_REQUIRE_POSTGRES") == "1"
	requireNode := requirePostgres || os.Getenv("CI") == "true"
	adminURL := os.Getenv("TEST_DATABASE_URL")
	if adminURL == "" {
		if requirePostgres {
			t.Fatal("TEST_DATABASE_URL is not set and CONNECT_REQUIRE_POSTGRES=1: the end-to-end test needs Postgres")
		}
		t.Skip("TEST_DATABASE_URL is not set; set it (e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable) to run the end-to-end test")
	}
	nodeBin, err := exec.LookPath("node")
	if err != nil {
		skipOrFail(t, requireNode, "node is not on PATH: install Node.js 20 or newer, then run `npm ci --prefix e2e`")
	}
	npxBin, err := exec.LookPath("npx")
	if err != nil {
		skipOrFail(t, requireNode, "npx is not on PATH: install npm, then run `npm ci --prefix e2e`")
	}
	e2eDir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"nango/package.json", "@nangohq/node/package.json", "zod/package.json", "@nangohq/providers/providers.yaml",
		"@modelcontextprotocol/sdk/package.json"} {
		if _, err := os.Stat(filepath.Join(e2eDir, "node_modules", p)); err != nil {
			skipOrFail(t, requireNode, "e2e/node_modules is missing "+p+": run `npm ci --prefix e2e` from the repository root")
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	started := time.Now()
	lap := started
	phase := func(name string) {
		t.Logf("--- %s took %s", name, time.Since(lap).Round(100*time.Millisecond))
		lap = time.Now()
	}

	bin := buildServer(t, filepath.Dir(e2eDir))
	phase("building the server")

	fakeKey := "fake_" + randomHex(t, 12)
	fake := startItemsAPI(t, fakeKey, cliItems)
	apiKey := "e2e_" + randomHex(t, 24)
	port := freePort(t)
	dbURL := createDatabase(ctx, t, adminURL)
	encryptionKey := base64.StdEncoding.EncodeToString(randomBytes(t, 32))
	srv := startServer(ctx, t, bin, []string{
		"CONNECT_PROVIDERS_FILE=" + writeCLIProviders(t, e2eDir, fake.srv.URL),
		// The fake API listens on 127.0.0.1.
		"CONNECT_PROXY_ALLOW_PRIVATE_NETWORKS=true",
		"PORT=" + port,
		"DATABASE_URL=" + dbURL,
		"CONNECT_ENCRYPTION_KEY=" + encryptionKey,
		"CONNECT_API_KEY=" + apiKey,
	})
	host := "http://127.0.0.1:" + port
	srv.waitHealthy(ctx, t, host+"/health")
	phase("starting the server")

	// The integration and a first connection exist before the deployment: the CLI deploys to
	// existing integrations only.
	conn := "cli-" + randomHex(t, 4)
	apiCall(ctx, t, host, apiKey, "POST", "/integrations", map[string]any{"unique_key": cliIntegration, "provider": cliProvider})
	apiCall(ctx, t, host, apiKey, "POST", "/connections", map[string]any{"provider_config_key": cliIntegration, "connection_id": conn,
		"credentials": map[string]any{"type": "API_KEY", "apiKey": fakeKey}})

	// The project, copied so that the repository stays clean: the CLI writes build/ and .nango/.
	proj := copyNangoProject(t, e2eDir)
	cli := func(args ...string) (string, int) {
		return runNangoCLI(ctx, t, npxBin, proj, host, apiKey, args...)
	}

	out, rc := cli("deploy", "dev", "--auto-confirm", "--allow-destructive")
	if rc != 0 {
		t.Fatalf("nango deploy dev exited %d:\n%s", rc, out)
	}
	checkDeployed(t, out, []string{"items@v1.0.0", "create-item@v1.0.0", "whoami@v1.0.0", "setup@v0.0.1"})
	phase("nango deploy (compile included)")

	nodeEnv := []string{
		"NANGO_HOST=" + host,
		"NANGO_API_KEY=" + apiKey,
		"NANGO_E2E_CLI=" + mustJSON(t, map[string]any{
			"key": cliIntegration, "connectionId": conn, "fakeURL": fake.srv.URL, "fakeKey": fakeKey,
			"project": filepath.Join(e2eDir, "nango-project"),
		}),
		"NO_COLOR=1",
	}
	runNode(ctx, t, nodeBin, e2eDir, []string{filepath.Join(e2eDir, "node-cli", "deployed.test.mjs")}, nodeEnv)
	phase("node: the deployed functions")

	// The MCP servers, driven by the official TypeScript client: the connection's deployed
	// actions as tools (POST /mcp), the service as tools (POST /mcp/manage), with the server's
	// key and narrower ones.
	mcpTitle := "mcp " + randomHex(t, 4)
	mcpEnv := append(slices.Clone(nodeEnv), "NANGO_E2E_MCP="+mustJSON(t, map[string]any{
		"keys": createAPIKeys(ctx, t, dbURL, encryptionKey, mcpKeys), "title": mcpTitle,
	}))
	mcpStart := fake.count()
	runNode(ctx, t, nodeBin, e2eDir, []string{filepath.Join(e2eDir, "node-cli", "mcp.test.mjs")}, mcpEnv)
	checkMCPWrites(t, fake.requests()[mcpStart:], mcpTitle)
	phase("node: the MCP servers")

	// nango dryrun runs the sync locally in Node, calling the server for the connection, the
	// integration and the proxy.
	dryStart := fake.count()
	out, rc = cli("dryrun", "items", conn, "-e", "dev", "--auto-confirm")
	if rc != 0 {
		t.Fatalf("nango dryrun items exited %d:\n%s", rc, out)
	}
	checkDryrun(t, out, fake.list())
	if got := fake.count() - dryStart; got < (len(fake.list())+cliPageSize-1)/cliPageSize {
		t.Errorf("the dry run made %d requests to the fake API, want one per page", got)
	}
	phase("nango dryrun items")

	// whoami run by the server and by the dry run (in Node, its getConnection through
	// @nangohq/node: GET /connections/{id}, plural) must answer the same.
	deployedOut := apiCall(ctx, t, host, apiKey, "POST", "/action/trigger", map[string]any{"action_name": "whoami", "input": map[string]any{}},
		"Connection-Id", conn, "Provider-Config-Key", cliIntegration)
	out, rc = cli("dryrun", "whoami", conn, "-e", "dev", "--auto-confirm", "--integration-id", cliIntegration, "--input", "{}")
	if rc != 0 {
		t.Fatalf("nango dryrun whoami exited %d:\n%s", rc, out)
	}
	checkSameOutput(t, out, deployedOut)
	phase("nango dryrun whoami")

	// nango pull writes the deployed TypeScript back: GET /integrations/fake/functions/whoami/code.
	whoamiTS := filepath.Join(proj, "fake", "actions", "whoami.ts")
	want, err := os.ReadFile(whoamiTS)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(whoamiTS); err != nil {
		t.Fatal(err)
	}
	out, rc = cli("pull", cliIntegration, "whoami", "-e", "dev", "--action", "--auto-confirm")
	if rc != 0 || !strings.Contains(out, "Successfully pulled: fake/actions/whoami.ts") {
		t.Fatalf("nango pull fake whoami exited %d:\n%s", rc, out)
	}
	if got, err := os.ReadFile(whoamiTS); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("nango pull wrote %q (err %v), want the deployed source %q", got, err, want)
	}
	phase("nango pull whoami")

	// Redeploy without whoami.
	index := filepath.Join(proj, "index.ts")
	src, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	without := regexp.MustCompile(`(?m)^import '\./fake/actions/whoami\.js';\n`).ReplaceAll(src, nil)
	if bytes.Equal(without, src) {
		t.Fatal("index.ts of e2e/nango-project does not import ./fake/actions/whoami.js")
	}
	if err := os.WriteFile(index, without, 0o600); err != nil {
		t.Fatal(err)
	}
	out, rc = cli("deploy", "dev", "--auto-confirm", "--allow-destructive")
	if rc != 0 {
		t.Fatalf("nango deploy dev (without whoami) exited %d:\n%s", rc, out)
	}
	checkDeployed(t, out, []string{"items@v1.0.0", "create-item@v1.0.0", "setup@v0.0.1"})
	out, rc = cli("pull", cliIntegration, "whoami", "-e", "dev", "--action", "--auto-confirm", "--force")
	if rc == 0 || !strings.Contains(out, "(not_found)") {
		t.Errorf("nango pull of the removed whoami exited %d, want a failure saying not_found:\n%s", rc, out)
	}
	phase("nango deploy without whoami, and pull")

	runNode(ctx, t, nodeBin, e2eDir, []string{filepath.Join(e2eDir, "node-cli", "redeployed.test.mjs")}, nodeEnv)
	phase("node: after the redeployment")

	for _, r := range fake.requests() {
		if r.auth != "Bearer "+fakeKey {
			t.Errorf("the fake API was called with authorization %q: %s %s", r.auth, r.method, r.path)
		}
		if strings.Contains(r.auth+r.query+r.body, apiKey) {
			t.Errorf("the server's API key reached the fake API: %s %s", r.method, r.path)
		}
	}
	srv.stop(t)
	t.Logf("TestNangoCLI: %s in all", time.Since(started).Round(100*time.Millisecond))
}

// runNangoCLI runs `npx --no-install nango args...` in the project directory, as CI would
// (no prompts, no telemetry, no upgrade check, no npm install), against the server at host
// with apiKey as the dev environment's secret key. It returns the output, colours stripped,
// and the exit code.
func runNangoCLI(ctx context.Context, t *testing.T, npx, dir, host, apiKey string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, cliTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, npx, append([]string{"--no-install", "nango"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(environWithout("NANGO_", "CONNECT_", "NODE_OPTIONS", "CI", "FORCE_COLOR"),
		"CI=true", "NANGO_CLI_TELEMETRY=false", "NANGO_CLI_UPGRADE_MODE=ignore", "NANGO_CLI_DEPENDENCY_UPDATE=false",
		"NANGO_HOSTPORT="+host, "NANGO_SECRET_KEY_DEV="+apiKey, "NO_COLOR=1")
	cmd.WaitDelay = 5 * time.Second
	var buf lockedBuffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	start := time.Now()
	err := cmd.Run()
	out := ansi.ReplaceAllString(buf.String(), "")
	t.Logf("$ nango %s (%s)\n%s", strings.Join(args, " "), time.Since(start).Round(100*time.Millisecond), out)
	if ctx.Err() == context.DeadlineExceeded {
		t.Fatalf("nango %s did not finish within %s", strings.Join(args, " "), cliTimeout)
	}
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		return out, exitErr.ExitCode()
	}
	if err != nil {
		t.Fatalf("running nango %s: %v", strings.Join(args, " "), err)
	}
	return out, 0
}

var ansi = regexp.MustCompile("\x1b\\[[0-9;]*[A-Za-z]")

// checkDeployed requires the CLI's success lines: `Successfully deployed the functions:` then
// one `- name@vversion` per function, exactly want in any order.
func checkDeployed(t *testing.T, out string, want []string) {
	t.Helper()
	_, after, ok := strings.Cut(out, "Successfully deployed the functions:")
	if !ok {
		t.Fatalf("the CLI did not print `Successfully deployed the functions:`:\n%s", out)
	}
	var got []string
	for _, line := range strings.Split(after, "\n") {
		line = strings.TrimSpace(line)
		if name, ok := strings.CutPrefix(line, "- "); ok {
			got = append(got, strings.TrimSpace(name))
		}
	}
	slices.Sort(got)
	want = slices.Sorted(slices.Values(want))
	if !slices.Equal(got, want) {
		t.Errorf("the CLI printed the deployed functions %v, want %v", got, want)
	}
}

// checkDryrun requires the dry run's summary (every item of the fake API added) and each item
// among the records it printed.
func checkDryrun(t *testing.T, out string, items []fakeItem) {
	t.Helper()
	if want := fmt.Sprintf(`"added":%d`, len(items)); !strings.Contains(strings.ReplaceAll(out, " ", ""), want) {
		t.Errorf("the dry run did not print %s:\n%s", want, out)
	}
	if !strings.Contains(out, fmt.Sprintf("saved %d items", len(items))) {
		t.Errorf("the dry run did not log `saved %d items`", len(items))
	}
	for _, it := range items {
		if !strings.Contains(out, strconv.Quote(it.Title)) {
			t.Errorf("the dry run did not print the record of item %s (%q)", it.ID, it.Title)
		}
	}
}

// checkSameOutput requires the output a dry run of an action printed after `Done` to be the
// JSON of want, the output of the same action run by the server.
func checkSameOutput(t *testing.T, out string, want []byte) {
	t.Helper()
	_, after, ok := strings.Cut(out, "\nDone\n")
	var got, exp any
	if ok {
		ok = json.NewDecoder(strings.NewReader(after)).Decode(&got) == nil
	}
	if !ok {
		t.Fatalf("the dry run printed no JSON output after Done:\n%s", out)
	}
	if err := json.Unmarshal(want, &exp); err != nil {
		t.Fatalf("the server's output %s: %v", want, err)
	}
	if !reflect.DeepEqual(got, exp) {
		t.Errorf("the dry run's output %v differs from the server's %v", got, exp)
	}
}

// copyNangoProject copies the sources of e2e/nango-project into a temporary directory, with a
// link to e2e/node_modules (the nango CLI and zod) and the .nango directory the CLI needs to
// take it for a project.
func copyNangoProject(t *testing.T, e2eDir string) string {
	t.Helper()
	src := filepath.Join(e2eDir, "nango-project")
	dst := filepath.Join(t.TempDir(), "nango-project")
	if err := os.CopyFS(filepath.Join(dst, "fake"), os.DirFS(filepath.Join(src, "fake"))); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"index.ts", "package.json", "tsconfig.json"} {
		b, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(e2eDir, "node_modules"), filepath.Join(dst, "node_modules")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dst, ".nango"), 0o755); err != nil {
		t.Fatal(err)
	}
	return dst
}

// writeCLIProviders writes a providers file with the entry of cliProvider from Nango's
// catalogue as npm ships it (e2e/node_modules/@nangohq/providers), its proxy.base_url moved
// to the fake API.
func writeCLIProviders(t *testing.T, e2eDir, baseURL string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(e2eDir, nangoProvidersFile))
	if err != nil {
		t.Fatal(err)
	}
	var all map[string]map[string]any
	if err := yaml.Unmarshal(data, &all); err != nil {
		t.Fatalf("parsing Nango's providers.yaml: %v", err)
	}
	entry, ok := all[cliProvider]
	if !ok {
		t.Fatalf("Nango's providers.yaml has no %s", cliProvider)
	}
	proxy, _ := entry["proxy"].(map[string]any)
	if entry["auth_mode"] != "API_KEY" || proxy == nil || proxy["base_url"] == nil {
		t.Fatalf("%s of Nango's providers.yaml is not an API-key provider with a proxy base URL: %v", cliProvider, entry)
	}
	proxy["base_url"] = baseURL
	out, err := yaml.Marshal(map[string]any{cliProvider: entry})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "providers.yaml")
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// apiCall sends a JSON request to the server with its API key and requires a 2xx answer.
func apiCall(ctx context.Context, t *testing.T, host, apiKey, method, path string, body any, headers ...string) []byte {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctx, method, host+path, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+apiKey)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, out)
	}
	return out
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// itemsAPI is the provider API of e2e/nango-project's functions: items listed with cursor
// pagination (GET /items?limit=&cursor= → {items, next}, next "" on the last page, at most
// cliPageSize a page), created (POST /items {title, n} → 201 the item) and deleted
// (DELETE /items/{id} → 204). Every request needs "authorization: Bearer <key>".
type itemsAPI struct {
	srv *httptest.Server
	key string

	mu     sync.Mutex
	items  []fakeItem
	nextID int
	reqs   []itemsRequest
}

type fakeItem struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	N     int    `json:"n"`
}

type itemsRequest struct {
	method, path, query, auth, body string
}

func startItemsAPI(t *testing.T, key string, n int) *itemsAPI {
	t.Helper()
	a := &itemsAPI{key: key}
	for range n {
		a.add(fmt.Sprintf("seeded item %d", a.nextID+1), a.nextID+1)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /items", a.listItems)
	mux.HandleFunc("POST /items", a.createItem)
	mux.HandleFunc("DELETE /items/{id}", a.deleteItem)
	a.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		a.mu.Lock()
		a.reqs = append(a.reqs, itemsRequest{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Authorization"), string(body)})
		a.mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer "+key {
			writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "bad key"})
			return
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(a.srv.Close)
	return a
}

// add appends an item; a.mu is held or the server not started.
func (a *itemsAPI) add(title string, n int) fakeItem {
	a.nextID++
	it := fakeItem{ID: "item-" + strconv.Itoa(a.nextID), Title: title, N: n}
	a.items = append(a.items, it)
	return it
}

func (a *itemsAPI) listItems(w http.ResponseWriter, r *http.Request) {
	limit, err := strconv.Atoi(r.URL.Query().Get("limit"))
	if err != nil || limit <= 0 {
		limit = cliPageSize
	}
	limit = min(limit, cliPageSize)
	start := 0
	if c := r.URL.Query().Get("cursor"); c != "" {
		if start, err = strconv.Atoi(strings.TrimPrefix(c, "off-")); err != nil || start < 0 {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "bad cursor"})
			return
		}
	}
	a.mu.Lock()
	start = min(start, len(a.items))
	end := min(start+limit, len(a.items))
	page := slices.Clone(a.items[start:end])
	next := ""
	if end < len(a.items) {
		next = "off-" + strconv.Itoa(end)
	}
	a.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"items": page, "next": next})
}

func (a *itemsAPI) createItem(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Title string `json:"title"`
		N     int    `json:"n"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Title == "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "title required"})
		return
	}
	a.mu.Lock()
	it := a.add(in.Title, in.N)
	a.mu.Unlock()
	writeJSON(w, http.StatusCreated, it)
}

func (a *itemsAPI) deleteItem(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	i := slices.IndexFunc(a.items, func(it fakeItem) bool { return it.ID == r.PathValue("id") })
	if i < 0 {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "not found"})
		return
	}
	a.items = slices.Delete(a.items, i, i+1)
	w.WriteHeader(http.StatusNoContent)
}

func (a *itemsAPI) list() []fakeItem {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.items)
}

func (a *itemsAPI) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.reqs)
}

func (a *itemsAPI) requests() []itemsRequest {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.reqs)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
