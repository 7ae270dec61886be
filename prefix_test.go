package connect_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/egress"
	"github.com/embedauth/connect/environments"
)

// TestHandlerUnderPrefix mounts Handler the way the README shows,
// under a path prefix of the host's mux with http.StripPrefix, with
// PublicURL naming that prefix, and follows every address the service hands
// out the way a browser or a provider would: the connect_link and the
// connect UI's assets and API, provider logos, the incoming webhook URL,
// the websocketsPath of GET /connect/session (resolved as @nangohq/frontend
// resolves it), and a whole OAuth popup flow whose redirect URI and cookie
// must carry the prefix.
func TestHandlerUnderPrefix(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		for _, prefix := range []string{"/connect", "/apps/auth"} {
			t.Run(strings.TrimPrefix(prefix, "/"), func(t *testing.T) {
				testHandlerUnderPrefix(t, b, prefix)
			})
		}
	})
}

func testHandlerUnderPrefix(t *testing.T, b *backend, prefix string) {
	clock := newRefreshClock()
	prov := newOAuthProvider(t, clock.Now)
	mux := http.NewServeMux()
	// The host's own routes: the service must not depend on reaching them.
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "the host app", http.StatusTeapot) })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	public := srv.URL + prefix

	cfg := connect.Config{Store: b.store, EncryptionKeys: []connect.EncryptionKey{testKey}, Now: clock.Now,
		Providers: oauthCatalog(t, prov), PublicURL: public, Scheduler: schedulerFor(t, b),
		Egress: egress.Policy{AllowLoopback: true}} // the fake provider listens on 127.0.0.1
	svc, err := connect.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mux.Handle(prefix+"/", http.StripPrefix(prefix, svc.Handler()))

	ctx := t.Context()
	envName := "env-" + strings.ReplaceAll(strings.Trim(prefix, "/"), "/", "-") // one per subtest on the shared store
	env, err := svc.Environments().Create(ctx, environments.CreateInput{Name: envName})
	if err != nil {
		t.Fatal(err)
	}
	key, _, err := svc.Environments().CreateAPIKey(ctx, env.ID, environments.NewAPIKey{Name: "full", Scopes: []string{environments.ScopeAll}})
	if err != nil {
		t.Fatal(err)
	}
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	browser := &http.Client{Jar: jar}
	call := func(method, u, bearer, body string) (int, http.Header, []byte) {
		t.Helper()
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		r, err := http.NewRequestWithContext(ctx, method, u, rd)
		if err != nil {
			t.Fatal(err)
		}
		if bearer != "" {
			r.Header.Set("Authorization", "Bearer "+bearer)
		}
		if body != "" {
			r.Header.Set("Content-Type", "application/json")
		}
		resp, err := browser.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, raw
	}
	mustJSON := func(want int, method, u, bearer, body string) map[string]any {
		t.Helper()
		status, _, raw := call(method, u, bearer, body)
		if status != want {
			t.Fatalf("%s %s = %d %s, want %d", method, u, status, raw, want)
		}
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatalf("%s %s: %q is not JSON", method, u, raw)
		}
		return m
	}

	mustJSON(200, "POST", public+"/integrations", key,
		`{"provider":"fake-oauth2","unique_key":"fo","credentials":{"type":"OAUTH2","client_id":"fo-client","client_secret":"fo-secret"}}`)
	sess := mustJSON(201, "POST", public+"/connect/sessions", key, `{"tags":{"end_user_id":"u1"}}`)["data"].(map[string]any)
	tok := sess["token"].(string)

	// connect_link opens the connect UI, whose assets and API are under the prefix.
	link := sess["connect_link"].(string)
	if want := public + "/connect/?session_token="; !strings.HasPrefix(link, want) {
		t.Fatalf("connect_link %q, want it under %s", link, want)
	}
	for _, page := range []string{link, strings.Replace(link, "/connect/?", "/connect?", 1)} {
		status, hdr, raw := call("GET", page, "", "")
		if status != 200 || !strings.HasPrefix(hdr.Get("Content-Type"), "text/html") {
			t.Errorf("GET %s = %d %s", page, status, hdr.Get("Content-Type"))
			continue
		}
		if !strings.Contains(string(raw), fmt.Sprintf(`data-api-url="%s"`, public)) {
			t.Errorf("GET %s: the page does not call the API at %s", page, public)
		}
		refs := regexp.MustCompile(`(?:href|src)="(ui/[^"]+)"`).FindAllStringSubmatch(string(raw), -1)
		if len(refs) < 2 {
			t.Fatalf("GET %s: no asset references in the page", page)
		}
		for _, m := range refs {
			asset := resolve(t, link, m[1])
			if status, _, _ := call("GET", asset, "", ""); status != 200 {
				t.Errorf("asset %s of the page = %d", asset, status)
			}
		}
	}

	// GET /connect/session announces the WebSocket's path from the origin,
	// which @nangohq/frontend resolves with new URL(websocketsPath, host).
	session := mustJSON(200, "GET", public+"/connect/session", tok, "")["data"].(map[string]any)
	wsPath, _ := session["websocketsPath"].(string)
	if want := prefix + "/"; wsPath != want {
		t.Errorf("websocketsPath %q, want %q", wsPath, want)
	}
	wsURL := "ws" + strings.TrimPrefix(resolve(t, public, wsPath), "http")
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(dctx, wsURL, nil)
	if err != nil {
		t.Fatalf("the frontend's WebSocket at %s: %v", wsURL, err)
	}
	t.Cleanup(func() { ws.CloseNow() })
	var ack map[string]any
	read(t, ws, &ack)
	wsID, _ := ack["ws_client_id"].(string)
	if ack["message_type"] != "connection_ack" || wsID == "" {
		t.Fatalf("first frame %v", ack)
	}

	// Logos the service serves, as the connect UI and the API list them.
	provider := mustJSON(200, "GET", public+"/providers/fake-oauth2", tok, "")["data"].(map[string]any)
	integ := mustJSON(200, "GET", public+"/integrations/fo?include=webhook", key, "")["data"].(map[string]any)
	for what, logo := range map[string]any{"provider logo_url": provider["logo_url"], "integration logo": integ["logo"]} {
		u, _ := logo.(string)
		if !strings.HasPrefix(u, public+"/") {
			t.Errorf("%s %q is not under %s", what, u, public)
			continue
		}
		if status, hdr, _ := call("GET", u, "", ""); status != 200 || hdr.Get("Content-Type") != "image/svg+xml" {
			t.Errorf("GET %s (%s) = %d %s", u, what, status, hdr.Get("Content-Type"))
		}
	}
	// The incoming webhook URL reaches the service's route.
	hook, _ := integ["webhook_url"].(string)
	if want := public + "/webhook/" + envName + "/fo"; hook != want {
		t.Errorf("webhook_url %q, want %q", hook, want)
	}
	if status, _, raw := call("POST", hook, "", `{"event":"ping"}`); status == http.StatusNotFound || status == http.StatusTeapot {
		t.Errorf("POST %s = %d %s: not the service's webhook route", hook, status, raw)
	}

	// The OAuth popup: the provider gets the redirect URI under the prefix,
	// the browser comes back there with the flow's cookie (scoped to that
	// path), and the WebSocket hears of the new connection.
	popup := public + "/oauth/connect/fo?connect_session_token=" + url.QueryEscape(tok) + "&ws_client_id=" + url.QueryEscape(wsID)
	resp, err := browser.Get(popup)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if got := prov.lastAuthorize().Get("redirect_uri"); got != public+"/oauth/callback" {
		t.Errorf("redirect_uri %q, want %s", got, public+"/oauth/callback")
	}
	if resp.StatusCode != 200 || resp.Request.URL.Path != prefix+"/oauth/callback" || !strings.Contains(string(body), connections.CallbackSuccessType) {
		t.Fatalf("the popup ended at %s with %d:\n%s", resp.Request.URL, resp.StatusCode, body)
	}
	var frame map[string]any
	read(t, ws, &frame)
	if frame["message_type"] != "success" || frame["provider_config_key"] != "fo" || frame["connection_id"] == "" {
		t.Errorf("WebSocket frame %v, want success", frame)
	}
}

// resolve resolves ref against base, as a browser does.
func resolve(t *testing.T, base, ref string) string {
	t.Helper()
	b, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	r, err := url.Parse(ref)
	if err != nil {
		t.Fatal(err)
	}
	return b.ResolveReference(r).String()
}

// TestPublicURLChecked: PublicURL is a base that paths are appended to, and
// WebsocketsPath a path: anything else is refused by New rather than turned
// into broken links.
func TestPublicURLChecked(t *testing.T) {
	t.Parallel()
	for name, cfg := range map[string]connect.Config{
		"query":                   {PublicURL: "https://app.example.com/connect?x=1"},
		"empty query":             {PublicURL: "https://app.example.com/connect?"},
		"fragment":                {PublicURL: "https://app.example.com/connect#top"},
		"user info":               {PublicURL: "https://user:pw@app.example.com/connect"},
		"relative":                {PublicURL: "/connect"},
		"relative websocket path": {WebsocketsPath: "ws"},
		"websocket path query":    {WebsocketsPath: "/ws?x=1"},
		"websocket path host":     {WebsocketsPath: "//evil.example.com/ws"},
	} {
		base := baseConfig(t)
		cfg.Store, cfg.Scheduler, cfg.EncryptionKeys = base.Store, base.Scheduler, base.EncryptionKeys
		if _, err := connect.New(cfg); err == nil {
			t.Errorf("%s: New accepted PublicURL %q, WebsocketsPath %q", name, cfg.PublicURL, cfg.WebsocketsPath)
		}
	}
	// A trailing slash is the same base, and WebsocketsPath follows its path.
	bu := setup(t, sqliteBackend(t), func(c *connect.Config) {
		c.PublicURL = "https://app.example.com/auth/"
		c.WebsocketsPath = "/ws"
	})
	r := bu.mustDo(t, 201, req{method: "POST", path: "/connect/sessions", body: `{"tags":{"end_user_id":"u1"}}`})
	d := data(t, r)
	if link := d["connect_link"].(string); !strings.HasPrefix(link, "https://app.example.com/auth/connect/?session_token=") {
		t.Errorf("connect_link %q", link)
	}
	s := data(t, bu.mustDo(t, 200, req{method: "GET", path: "/connect/session", key: d["token"].(string)}))
	if s["websocketsPath"] != "/auth/ws" {
		t.Errorf("websocketsPath %v, want /auth/ws", s["websocketsPath"])
	}
}
