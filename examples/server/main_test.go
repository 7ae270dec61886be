package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

func envFunc(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// TestRunDefault starts the server on its default store (SQLite in a
// temporary data directory) with a custom provider, calls it with the
// configured key and stops it with the context.
func TestRunDefault(t *testing.T) {
	t.Parallel()
	providers := filepath.Join(t.TempDir(), "providers.yaml")
	// A provider in Nango's providers.yaml format.
	if err := os.WriteFile(providers, []byte(`acme-internal:
    display_name: Acme Internal
    auth_mode: API_KEY
    categories: [other]
    docs: https://docs.acme.example
    proxy:
        base_url: https://api.acme.example
        headers:
            authorization: Bearer ${apiKey}
    credentials:
        apiKey:
            type: string
            title: API Key
acme-broken:
    display_name: Acme Broken
    auth_mode: QUANTUM
    docs: https://docs.acme.example
`), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	port := freePort(t)
	key := "test-key-0123456789abcdef"
	env := envFunc(map[string]string{"PORT": port, "CONNECT_API_KEY": key, "CONNECT_PROVIDERS_FILE": providers,
		"CONNECT_DEV_ENV_VARS": `{"REGION":"eu"}`, "CONNECT_DATA_DIR": t.TempDir()})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, slog.New(slog.NewTextHandler(&logs, nil)), env) }()

	base := "http://127.0.0.1:" + port
	// Wait until the server answers, or run returns; the limit only turns a
	// hang into a failure.
	timeout := time.After(time.Minute)
	for {
		resp, err := http.Get(base + "/health")
		if err == nil {
			resp.Body.Close()
			break
		}
		select {
		case err := <-done:
			t.Fatalf("run returned %v before the server answered", err)
		case <-timeout:
			t.Fatalf("the server did not answer within a minute: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
	}

	// do sends a request with the API key, a JSON body (unless empty) and
	// header.
	do := func(method, path, body string, header map[string]string) (int, string) {
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	get := func(path string) (int, string) { return do("GET", path, "", nil) }
	status, body := get("/providers/acme-internal")
	var p struct {
		Data struct {
			Name     string `json:"name"`
			AuthMode string `json:"auth_mode"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(body), &p); err != nil || status != 200 || p.Data.Name != "acme-internal" || p.Data.AuthMode != "API_KEY" {
		t.Errorf("custom provider: %d %s", status, body)
	}
	if status, body := get("/environment-variables"); status != 200 || !strings.Contains(body, `"value":"eu"`) {
		t.Errorf("variables: %d %s", status, body)
	}
	if status, _ := get("/providers/github"); status != 200 {
		t.Errorf("embedded provider missing: %d", status)
	}

	// The bad entry did not take the file down: it is listed, unusable,
	// with its reason, and logged once.
	status, body = get("/providers/acme-broken")
	var broken struct {
		Data struct {
			Name     string `json:"name"`
			AuthMode string `json:"auth_mode"`
			Unusable string `json:"unusable"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(body), &broken); err != nil || status != 200 || broken.Data.AuthMode != "QUANTUM" ||
		broken.Data.Unusable != `auth_mode: unknown auth mode "QUANTUM"` {
		t.Errorf("unusable provider: %d %s", status, body)
	}
	var lines []string
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "provider unusable") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 || !strings.Contains(lines[0], "provider=acme-broken") || !strings.Contains(lines[0], "QUANTUM") {
		t.Errorf("log lines about unusable providers = %q; want one naming acme-broken", lines)
	}
	status, body = do("POST", "/integrations", `{"provider":"acme-broken","unique_key":"broken"}`, nil)
	if status != 400 || !strings.Contains(body, `"code":"provider_unusable"`) || !strings.Contains(body, "QUANTUM") {
		t.Errorf("integration for an unusable provider: %d %s", status, body)
	}
	if status, body := get("/integrations/broken"); status != 404 {
		t.Errorf("the refused integration was stored: %d %s", status, body)
	}

	// A provider call to a private address is refused, naming the
	// variable that allows it.
	if status, body := do("POST", "/integrations", `{"provider":"acme-internal","unique_key":"acme"}`, nil); status != 200 {
		t.Fatalf("create the integration: %d %s", status, body)
	}
	if status, body := do("POST", "/connections", `{"provider_config_key":"acme","connection_id":"c1","api_key":"sk-acme"}`, nil); status != 201 {
		t.Fatalf("import the connection: %d %s", status, body)
	}
	status, body = do("GET", "/proxy/items", "", map[string]string{"Connection-Id": "c1", "Provider-Config-Key": "acme",
		"Base-Url-Override": "http://10.0.0.7"})
	if status != 403 || !strings.Contains(body, `"code":"upstream_address_refused"`) ||
		!strings.Contains(body, "allowed by CONNECT_PROVIDER_ALLOW_PRIVATE_NETWORKS=true") || strings.Contains(body, "10.0.0.7") {
		t.Errorf("proxy to a private address: %d %s", status, body)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run returned %v after shutdown", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("server did not stop")
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent writes and reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestLoadProvidersStrict: CONNECT_PROVIDERS_STRICT=true refuses a file
// with bad entries, naming every problem; without it the same file loads.
func TestLoadProvidersStrict(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "providers.yaml")
	if err := os.WriteFile(path, []byte(`good: {display_name: Good, auth_mode: NONE}
bad-mode: {display_name: Bad, auth_mode: QUANTUM}
bad-alias: {display_name: Bad alias, alias: nowhere}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := loadProviders(slog.New(slog.DiscardHandler), path, "true")
	if err == nil || !strings.Contains(err.Error(), `"bad-mode"`) || !strings.Contains(err.Error(), `"bad-alias"`) {
		t.Errorf("strict: %v; want an error naming bad-mode and bad-alias", err)
	}
	cat, err := loadProviders(slog.New(slog.DiscardHandler), path, "false")
	if err != nil {
		t.Fatalf("lenient: %v", err)
	}
	if _, ok := cat.Get("good"); !ok || len(cat.Problems()) != 2 {
		t.Errorf("lenient: good usable = %v, %d problems; want true, 2", ok, len(cat.Problems()))
	}
	if _, err := loadProviders(slog.New(slog.DiscardHandler), path, "yes"); err == nil {
		t.Error("CONNECT_PROVIDERS_STRICT=yes accepted")
	}
}

func TestRunRejectsBadConfig(t *testing.T) {
	t.Parallel()
	for name, vars := range map[string]map[string]string{
		"bad port":          {"PORT": "http"},
		"short key":         {"CONNECT_ENCRYPTION_KEY": "c2hvcnQ="},
		"postgres no key":   {"DATABASE_URL": "postgres://127.0.0.1:1/x"},
		"bad previous key":  {"CONNECT_PREVIOUS_ENCRYPTION_KEYS": "nope"},
		"bad rate limit":    {"CONNECT_RATE_LIMIT": "many"},
		"bad retry wait":    {"CONNECT_WEBHOOK_RETRY_SCHEDULE": "1m,soon"},
		"negative retry":    {"CONNECT_WEBHOOK_RETRY_SCHEDULE": "-1m"},
		"bad window":        {"CONNECT_RATE_LIMIT_WINDOW": "1ns"},
		"bad cache entries": {"CONNECT_PROXY_CACHE_ENTRIES": "0"},
		"missing providers": {"CONNECT_PROVIDERS_FILE": "/does/not/exist.yaml"},
		"bad env vars":      {"CONNECT_DEV_ENV_VARS": "[1]"},
		"short api key":     {"CONNECT_API_KEY": "short"},
		"bad public url":    {"CONNECT_PUBLIC_URL": "nope"},
		"public url query":  {"CONNECT_PUBLIC_URL": "http://localhost:3003/auth?x=1"},
		"public url dots":   {"CONNECT_PUBLIC_URL": "http://localhost:3003/a/../b"},
		"bad logo base url": {"CONNECT_LOGO_BASE_URL": "ftp://logos.example.com"},
		"bad proxy policy":  {"CONNECT_PROXY_ALLOW_PRIVATE_NETWORKS": "yes"},
		"bad provider flag": {"CONNECT_PROVIDER_ALLOW_PRIVATE_NETWORKS": "1"},
		"bad webhook flag":  {"CONNECT_WEBHOOK_ALLOW_PRIVATE_NETWORKS": "no"},
		"flags disagree":    {"CONNECT_PROVIDER_ALLOW_PRIVATE_NETWORKS": "true", "CONNECT_PROXY_ALLOW_PRIVATE_NETWORKS": "false"},
		"retention no unit": {"CONNECT_WEBHOOK_DELIVERY_RETENTION": "30"},
		"retention short":   {"CONNECT_LOG_RETENTION": "10m"},
		"retention days":    {"CONNECT_LOG_RETENTION": "0d"},
		"max body":          {"CONNECT_INCOMING_WEBHOOK_MAX_BODY": "1MiB"},
		"max body off":      {"CONNECT_INCOMING_WEBHOOK_MAX_BODY": "off"},
		"quota negative":    {"CONNECT_INCOMING_WEBHOOK_QUOTA": "-5"},
		"quota too small":   {"CONNECT_INCOMING_WEBHOOK_MAX_BODY": "1000", "CONNECT_INCOMING_WEBHOOK_QUOTA": "3999"},
		"body window":       {"CONNECT_BODY_WINDOW": "fast"},
		"body min bytes":    {"CONNECT_BODY_MIN_BYTES": "0"},
	} {
		vars["PORT"] = map[bool]string{true: vars["PORT"], false: freePort(t)}[vars["PORT"] != ""]
		vars["CONNECT_DATA_DIR"] = t.TempDir()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := run(ctx, slog.New(slog.DiscardHandler), envFunc(vars))
		cancel()
		if err == nil {
			t.Errorf("%s: run succeeded", name)
		} else if testing.Verbose() {
			fmt.Println(name+":", err)
		}
	}
}

// TestRunRefusesUnreachableWebhookURL: a dev webhook URL that the webhook
// address policy refuses stops the start, saying which variable allows it.
func TestRunRefusesUnreachableWebhookURL(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := run(ctx, slog.New(slog.DiscardHandler), envFunc(map[string]string{"PORT": freePort(t), "CONNECT_DATA_DIR": t.TempDir(),
		"CONNECT_WEBHOOK_URLS": "http://127.0.0.1:9/hooks", "CONNECT_WEBHOOK_ALLOW_PRIVATE_NETWORKS": "false"}))
	if err == nil || !strings.Contains(err.Error(), "CONNECT_WEBHOOK_URLS") || !strings.Contains(err.Error(), "CONNECT_WEBHOOK_ALLOW_PRIVATE_NETWORKS") {
		t.Fatalf("run with a loopback webhook URL and private networks refused: %v", err)
	}
}

func TestNetworkPolicies(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		vars             map[string]string
		providers, hooks bool
	}{
		"defaults":          {map[string]string{}, false, true},
		"providers":         {map[string]string{"CONNECT_PROVIDER_ALLOW_PRIVATE_NETWORKS": "true"}, true, true},
		"older name":        {map[string]string{"CONNECT_PROXY_ALLOW_PRIVATE_NETWORKS": "true"}, true, true},
		"both names agree":  {map[string]string{"CONNECT_PROXY_ALLOW_PRIVATE_NETWORKS": "true", "CONNECT_PROVIDER_ALLOW_PRIVATE_NETWORKS": "true"}, true, true},
		"webhooks public":   {map[string]string{"CONNECT_WEBHOOK_ALLOW_PRIVATE_NETWORKS": "false"}, false, false},
		"explicit defaults": {map[string]string{"CONNECT_PROVIDER_ALLOW_PRIVATE_NETWORKS": "false", "CONNECT_WEBHOOK_ALLOW_PRIVATE_NETWORKS": "true"}, false, true},
	} {
		p, w, err := networkPolicies(envFunc(tc.vars))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if p.AllowPrivateNetworks != tc.providers || w.AllowPrivateNetworks != tc.hooks || p.AllowLoopback || w.AllowLoopback {
			t.Errorf("%s: providers %+v, webhooks %+v", name, p, w)
		}
		// A refusal names the variable to set.
		if p.Setting != "CONNECT_PROVIDER_ALLOW_PRIVATE_NETWORKS=true" || w.Setting != "CONNECT_WEBHOOK_ALLOW_PRIVATE_NETWORKS=true" {
			t.Errorf("%s: settings named %q and %q", name, p.Setting, w.Setting)
		}
	}
}

// TestRunUnderPublicURLPath: with a path in CONNECT_PUBLIC_URL the server
// serves the service under that path, as the README's "Embed it" mounts it,
// and the addresses it hands out lead back to it: connect_link, and the
// websocketsPath of GET /connect/session, resolved as @nangohq/frontend
// resolves it.
func TestRunUnderPublicURLPath(t *testing.T) {
	t.Parallel()
	port := freePort(t)
	key := "test-key-0123456789abcdef"
	base := "http://127.0.0.1:" + port
	public := base + "/auth"
	env := envFunc(map[string]string{"PORT": port, "CONNECT_API_KEY": key, "CONNECT_PUBLIC_URL": public, "CONNECT_DATA_DIR": t.TempDir()})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, slog.New(slog.DiscardHandler), env) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("run returned %v after shutdown", err)
			}
		case <-time.After(15 * time.Second):
			t.Error("server did not stop")
		}
	})

	call := func(method, u, bearer, body string) (int, []byte) {
		t.Helper()
		req, _ := http.NewRequest(method, u, strings.NewReader(body))
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	var err error
	for i := 0; i < 100; i++ {
		var resp *http.Response
		if resp, err = http.Get(public + "/health"); err == nil {
			resp.Body.Close()
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	if status, _ := call("GET", public+"/health", "", ""); status != 200 {
		t.Fatalf("GET /auth/health = %d", status)
	}
	if status, _ := call("GET", base+"/health", "", ""); status != 404 {
		t.Errorf("GET /health outside the path = %d, want 404", status)
	}
	status, raw := call("POST", public+"/connect/sessions", key, `{"tags":{"end_user_id":"u1"}}`)
	var sess struct {
		Data struct {
			Token       string `json:"token"`
			ConnectLink string `json:"connect_link"`
		} `json:"data"`
	}
	if err := json.Unmarshal(raw, &sess); err != nil || status != 201 {
		t.Fatalf("POST /auth/connect/sessions = %d %s", status, raw)
	}
	if !strings.HasPrefix(sess.Data.ConnectLink, public+"/connect/?session_token=") {
		t.Errorf("connect_link %q", sess.Data.ConnectLink)
	}
	if status, _ := call("GET", sess.Data.ConnectLink, "", ""); status != 200 {
		t.Errorf("GET connect_link = %d", status)
	}
	status, raw = call("GET", public+"/connect/session", sess.Data.Token, "")
	var s struct {
		Data struct {
			WebsocketsPath string `json:"websocketsPath"`
		} `json:"data"`
	}
	if err := json.Unmarshal(raw, &s); err != nil || status != 200 || s.Data.WebsocketsPath != "/auth/" {
		t.Fatalf("GET /auth/connect/session = %d %s, want websocketsPath /auth/", status, raw)
	}
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	ws, _, err := websocket.Dial(wctx, "ws://127.0.0.1:"+port+s.Data.WebsocketsPath, nil)
	if err != nil {
		t.Fatalf("WebSocket at %s: %v", s.Data.WebsocketsPath, err)
	}
	defer ws.CloseNow()
	_, frame, err := ws.Read(wctx)
	if err != nil || !strings.Contains(string(frame), `"message_type":"connection_ack"`) {
		t.Errorf("first frame %s, %v", frame, err)
	}
}

func TestRetrySchedule(t *testing.T) {
	for in, want := range map[string][]time.Duration{
		"":           nil,
		"none":       {},
		"1m, 10m,1h": {time.Minute, 10 * time.Minute, time.Hour},
		"250ms":      {250 * time.Millisecond},
	} {
		got, err := retrySchedule(in)
		if err != nil || (got == nil) != (want == nil) || len(got) != len(want) {
			t.Errorf("retrySchedule(%q) = %v, %v; want %v", in, got, err, want)
			continue
		}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("retrySchedule(%q) = %v, want %v", in, got, want)
			}
		}
	}
}
