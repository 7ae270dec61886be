package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// nangoProvidersFile is Nango's own provider catalogue as a user gets it from
// `npm i @nangohq/providers@0.71.10` (pinned in e2e/package.json).
var nangoProvidersFile = filepath.Join("node_modules", "@nangohq", "providers", "providers.yaml")

// TestNangoProvidersFile starts the reference server with Nango's whole providers.yaml as
// CONNECT_PROVIDERS_FILE, as a new user would, and requires every provider of the file (read
// here on its own, with a plain YAML parser) to be listed by GET /providers with its auth mode
// and no unusable reason, and an integration to be creatable for every one of them
// (POST /integrations, with app credentials fitting its auth mode). A failure lists every
// provider that failed and why.
func TestNangoProvidersFile(t *testing.T) {
	requirePostgres := os.Getenv("CONNECT_REQUIRE_POSTGRES") == "1"
	requireNode := requirePostgres || os.Getenv("CI") == "true"
	adminURL := os.Getenv("TEST_DATABASE_URL")
	if adminURL == "" {
		if requirePostgres {
			t.Fatal("TEST_DATABASE_URL is not set and CONNECT_REQUIRE_POSTGRES=1: the end-to-end test needs Postgres")
		}
		t.Skip("TEST_DATABASE_URL is not set; set it (e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable) to run the end-to-end test")
	}
	file, err := filepath.Abs(nangoProvidersFile)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		skipOrFail(t, requireNode, "e2e/node_modules is missing @nangohq/providers: run `npm ci --prefix e2e` from the repository root")
	}
	modes := nangoAuthModes(t, data)
	if len(modes) < 1000 {
		t.Fatalf("%s has %d providers; want the whole catalogue (over 1,000)", file, len(modes))
	}

	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	e2eDir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	bin := buildServer(t, filepath.Dir(e2eDir))
	dbURL := createDatabase(ctx, t, adminURL)
	apiKey := "e2e_" + randomHex(t, 24)
	port := freePort(t)
	srv := startServer(ctx, t, bin, []string{
		"CONNECT_PROVIDERS_FILE=" + file,
		"CONNECT_RATE_LIMIT=1000000",
		"PORT=" + port,
		"DATABASE_URL=" + dbURL,
		"CONNECT_ENCRYPTION_KEY=" + base64.StdEncoding.EncodeToString(randomBytes(t, 32)),
		"CONNECT_API_KEY=" + apiKey,
	})
	host := "http://127.0.0.1:" + port
	srv.waitHealthy(ctx, t, host+"/health")

	client := &http.Client{Timeout: 30 * time.Second}
	call := func(method, path, body string) (int, []byte) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, method, host+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+apiKey)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, b
	}

	status, body := call("GET", "/providers", "")
	if status != 200 {
		t.Fatalf("GET /providers = %d %s", status, body)
	}
	var listed struct {
		Data []struct {
			Name        string `json:"name"`
			AuthMode    string `json:"auth_mode"`
			DisplayName string `json:"display_name"`
			Unusable    string `json:"unusable"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &listed); err != nil {
		t.Fatalf("GET /providers: %v", err)
	}
	got := make(map[string]int, len(listed.Data))
	for i, p := range listed.Data {
		got[p.Name] = i
	}
	var missing, wrongMode, unusable []string
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range modes {
			if !yield(k) {
				return
			}
		}
	}) {
		i, ok := got[name]
		switch {
		case !ok:
			missing = append(missing, name)
		case listed.Data[i].AuthMode != modes[name]:
			wrongMode = append(wrongMode, fmt.Sprintf("%s: %q, want %q", name, listed.Data[i].AuthMode, modes[name]))
		case listed.Data[i].Unusable != "":
			unusable = append(unusable, name+": "+listed.Data[i].Unusable)
		}
	}
	if len(missing) > 0 {
		t.Errorf("%d of %d providers of the file are not listed by GET /providers: %s", len(missing), len(modes), strings.Join(missing, ", "))
	}
	if len(wrongMode) > 0 {
		t.Errorf("%d providers are listed with another auth mode:\n%s", len(wrongMode), strings.Join(wrongMode, "\n"))
	}
	if len(unusable) > 0 {
		t.Errorf("%d of %d providers of the file are unusable:\n%s", len(unusable), len(modes), strings.Join(unusable, "\n"))
	}

	var refused []string
	created := 0
	for name, mode := range modes {
		in := map[string]any{"provider": name, "unique_key": name}
		if c := appCredentials(mode); c != nil {
			in["credentials"] = c
		}
		b, _ := json.Marshal(in)
		status, body := call("POST", "/integrations", string(b))
		if status != 200 {
			var e struct {
				Error struct {
					Code string `json:"code"`
				} `json:"error"`
			}
			_ = json.Unmarshal(body, &e)
			refused = append(refused, fmt.Sprintf("%s (%s): %d %s", name, mode, status, e.Error.Code))
			continue
		}
		created++
	}
	if len(refused) > 0 {
		slices.Sort(refused)
		t.Errorf("an integration could be created for %d of %d providers; refused:\n%s", created, len(modes), strings.Join(refused, "\n"))
	}
	srv.stop(t)
}

// nangoAuthModes reads the auth mode of every entry of a providers.yaml in Nango's format,
// following aliases: an entry without auth_mode has the one of its alias.
func nangoAuthModes(t *testing.T, data []byte) map[string]string {
	t.Helper()
	var doc map[string]struct {
		AuthMode string `yaml:"auth_mode"`
		Alias    string `yaml:"alias"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("parsing Nango's providers.yaml: %v", err)
	}
	modes := make(map[string]string, len(doc))
	for name := range doc {
		mode, cur := "", name
		for range 10 { // alias chains are short; a longer one is a cycle
			e := doc[cur]
			if e.AuthMode != "" {
				mode = e.AuthMode
				break
			}
			if cur = e.Alias; cur == "" {
				break
			}
		}
		modes[name] = mode
	}
	return modes
}

// appCredentials are integration credentials that fit an auth mode: an OAuth app for the
// OAuth modes, an app for APP, none for the modes whose secrets the end user supplies.
func appCredentials(mode string) map[string]string {
	switch mode {
	case "OAUTH2", "OAUTH2_CC", "MCP_OAUTH2", "CUSTOM":
		return map[string]string{"type": "OAUTH2", "client_id": "e2e-client", "client_secret": "e2e-secret"}
	case "OAUTH1":
		return map[string]string{"type": "OAUTH1", "client_id": "e2e-client", "client_secret": "e2e-secret"}
	case "TBA":
		return map[string]string{"type": "TBA", "client_id": "e2e-client", "client_secret": "e2e-secret"}
	case "APP":
		return map[string]string{"type": "APP", "app_id": "1", "app_link": "https://github.com/apps/e2e",
			"private_key": "-----BEGIN RSA PRIVATE KEY-----\ne2e\n-----END RSA PRIVATE KEY-----"}
	}
	return nil
}
