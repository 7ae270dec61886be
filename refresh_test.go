package connect_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/oplog"
	"github.com/embedauth/connect/store/postgres"
	"github.com/embedauth/connect/webhooks"
)

// tokenServer is a fake OAuth 2 token endpoint. Refresh tokens are single
// use when rotating: each refresh returns a new one and a reused one is
// refused with invalid_grant, as providers with rotation do.
type tokenServer struct {
	t   *testing.T
	srv *httptest.Server

	mu       sync.Mutex
	calls    int
	requests []tokenRequest
	valid    map[string]bool // refresh tokens that may be used
	used     map[string]bool
	issued   int
	// Settings, changed between requests under mu.
	rotate         bool                  // issue a new refresh token on each refresh
	noRefreshToken bool                  // answer without a refresh_token
	noExpiresIn    bool                  // answer without expires_in
	expiresIn      func(path string) int // expires_in of an answer by request path; nil means 3600
	fail           string                // answer 400 with this OAuth error code
	form           bool                  // answer application/x-www-form-urlencoded

	// hold, when set, holds every answer until it is closed.
	hold chan struct{}
}

type tokenRequest struct {
	path string
	form url.Values
	auth string // Authorization header
}

func newTokenServer(t *testing.T) *tokenServer {
	ts := &tokenServer{t: t, valid: map[string]bool{}, used: map[string]bool{}, rotate: true}
	ts.srv = httptest.NewServer(http.HandlerFunc(ts.serve))
	t.Cleanup(ts.srv.Close)
	return ts
}

func (ts *tokenServer) serve(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil || r.Method != http.MethodPost {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	ts.mu.Lock()
	ts.calls++
	ts.requests = append(ts.requests, tokenRequest{path: r.URL.Path, form: r.PostForm, auth: r.Header.Get("Authorization")})
	hold := ts.hold
	ts.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-r.Context().Done():
			return
		}
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	oauthErr := func(code, desc string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		json.NewEncoder(w).Encode(map[string]string{"error": code, "error_description": desc})
	}
	if ts.fail != "" {
		oauthErr(ts.fail, "The refresh token "+r.PostForm.Get("refresh_token")+" is no longer valid.")
		return
	}
	ts.issued++
	resp := map[string]any{"access_token": fmt.Sprintf("at-%d", ts.issued), "token_type": "bearer"}
	switch r.PostForm.Get("grant_type") {
	case "refresh_token":
		rt := r.PostForm.Get("refresh_token")
		if !ts.valid[rt] {
			reason := "unknown"
			if ts.used[rt] {
				reason = "already used"
			}
			oauthErr("invalid_grant", "refresh token "+reason)
			return
		}
		if ts.rotate {
			delete(ts.valid, rt)
			ts.used[rt] = true
			if !ts.noRefreshToken {
				next := fmt.Sprintf("rt-%d", ts.issued)
				ts.valid[next] = true
				resp["refresh_token"] = next
			}
		} else if !ts.noRefreshToken {
			resp["refresh_token"] = rt
		}
	case "client_credentials":
	default:
		oauthErr("unsupported_grant_type", "")
		return
	}
	if !ts.noExpiresIn {
		resp["expires_in"] = 3600
		if ts.expiresIn != nil {
			resp["expires_in"] = ts.expiresIn(r.URL.Path)
		}
	}
	if ts.form {
		v := url.Values{}
		for k, x := range resp {
			v.Set(k, fmt.Sprint(x))
		}
		w.Header().Set("Content-Type", "application/x-www-form-urlencoded")
		fmt.Fprint(w, v.Encode())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(resp)
}

// set changes the server's settings.
func (ts *tokenServer) set(f func(ts *tokenServer)) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	f(ts)
}

func (ts *tokenServer) allow(rt string) { ts.set(func(ts *tokenServer) { ts.valid[rt] = true }) }

func (ts *tokenServer) callCount() int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.calls
}

func (ts *tokenServer) last() tokenRequest {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if len(ts.requests) == 0 {
		ts.t.Fatal("the token server got no request")
	}
	return ts.requests[len(ts.requests)-1]
}

// refreshClock is a clock the test moves, safe for concurrent use.
type refreshClock struct{ ns atomic.Int64 }

func newRefreshClock() *refreshClock {
	c := &refreshClock{}
	c.ns.Store(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC).UnixNano())
	return c
}

func (c *refreshClock) Now() time.Time               { return time.Unix(0, c.ns.Load()).UTC() }
func (c *refreshClock) advance(d time.Duration)      { c.ns.Add(int64(d)) }
func (c *refreshClock) in(d time.Duration) string    { return c.Now().Add(d).Format(time.RFC3339) }
func (c *refreshClock) at(d time.Duration) time.Time { return c.Now().Add(d) }

// eventLog is a Notifier that keeps the events.
type eventLog struct {
	mu     sync.Mutex
	events []webhooks.Event
}

func (l *eventLog) Notify(_ context.Context, e webhooks.Event) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
	return nil
}

func (l *eventLog) list() []webhooks.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]webhooks.Event(nil), l.events...)
}

// refreshCatalog is the default catalogue plus fake providers whose token
// endpoints are the token server: fake-oauth (body client auth, token URL
// and a refresh parameter templated on connection config), fake-basic (HTTP
// Basic client auth, a separate refresh_url), fake-buffer (a 2-hour
// token_expiration_buffer) and fake-cc (client credentials).
func refreshCatalog(t *testing.T, ts *tokenServer) *integrations.Catalog {
	t.Helper()
	base, err := integrations.DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	tenant := map[string]integrations.FieldSpec{"tenant": {Type: "string", Title: "Tenant"}}
	cat, err := base.With(
		&integrations.Provider{Name: "fake-oauth", DisplayName: "Fake OAuth", AuthMode: integrations.AuthModeOAuth2,
			AuthorizationURL: ts.srv.URL + "/authorize", TokenURL: ts.srv.URL + "/${connectionConfig.tenant}/token",
			RefreshParams: map[string]string{"audience": "api-${connectionConfig.tenant}"}, ConnectionConfig: tenant},
		&integrations.Provider{Name: "fake-basic", DisplayName: "Fake Basic", AuthMode: integrations.AuthModeOAuth2,
			AuthorizationURL: ts.srv.URL + "/authorize", TokenURL: ts.srv.URL + "/token", RefreshURL: ts.srv.URL + "/refresh",
			TokenRequestAuthMethod: integrations.TokenAuthBasic},
		&integrations.Provider{Name: "fake-buffer", DisplayName: "Fake Buffer", AuthMode: integrations.AuthModeOAuth2,
			AuthorizationURL: ts.srv.URL + "/authorize", TokenURL: ts.srv.URL + "/token", TokenExpirationBuffer: 7200},
		&integrations.Provider{Name: "fake-cc", DisplayName: "Fake CC", AuthMode: integrations.AuthModeOAuth2CC,
			TokenURL: ts.srv.URL + "/cc/token", TokenParams: map[string]string{"audience": "machines"}},
	)
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

// refreshBundle is a Service on the fake providers, with integrations
// fo (fake-oauth), fb (fake-basic), fbuf (fake-buffer) and fcc (fake-cc).
type refreshBundle struct {
	*bundle
	ts     *tokenServer
	clock  *refreshClock
	events *eventLog
	cfg    connect.Config
}

func refreshSetup(t *testing.T, b *backend, mutate ...func(*connect.Config)) *refreshBundle {
	t.Helper()
	rb := &refreshBundle{ts: newTokenServer(t), clock: newRefreshClock(), events: &eventLog{}}
	cat := refreshCatalog(t, rb.ts)
	rb.bundle = setup(t, b, append([]func(*connect.Config){func(cfg *connect.Config) {
		cfg.Now = rb.clock.Now
		cfg.Providers = cat
		cfg.Notifier = rb.events
		rb.cfg = *cfg
	}}, mutate...)...)
	for _, in := range []string{
		`{"provider":"fake-oauth","unique_key":"fo","credentials":{"type":"OAUTH2","client_id":"fo-client","client_secret":"fo-secret"}}`,
		`{"provider":"fake-basic","unique_key":"fb","credentials":{"type":"OAUTH2","client_id":"fb client","client_secret":"s&cr:t/+"}}`,
		`{"provider":"fake-buffer","unique_key":"fbuf","credentials":{"type":"OAUTH2","client_id":"buf-client","client_secret":"buf-secret"}}`,
		`{"provider":"fake-cc","unique_key":"fcc"}`,
	} {
		rb.mustDo(t, 200, req{method: "POST", path: "/integrations", body: in})
	}
	return rb
}

// importOAuth imports an OAuth 2 connection of integration key with the
// refresh token rt (made valid at the token server) expiring in exp.
func (rb *refreshBundle) importOAuth(t *testing.T, key, id, rt string, exp time.Duration, extra string) {
	t.Helper()
	if rt != "" {
		rb.ts.allow(rt)
	}
	body := fmt.Sprintf(`{"provider_config_key":%q,"connection_id":%q,"access_token":"at-imported","refresh_token":%q,
		"expires_at":%q,"connection_config":{"tenant":"acme"}%s}`, key, id, rt, rb.clock.in(exp), extra)
	rb.mustDo(t, 201, req{method: "POST", path: "/connections", body: body})
}

// get reads a connection through the API and returns its credentials.
func (rb *refreshBundle) get(t *testing.T, key, id, query string) map[string]any {
	t.Helper()
	r := rb.mustDo(t, 200, req{method: "GET", path: "/connections/" + id + "?provider_config_key=" + key + "&refresh_token=true" + query})
	creds, _ := r.obj()["credentials"].(map[string]any)
	if creds == nil {
		t.Fatalf("GET %s: no credentials in %s", id, r.raw)
	}
	return creds
}

func (rb *refreshBundle) stored(t *testing.T, key, id string) *connections.Connection {
	t.Helper()
	c, err := rb.b.store.GetConnection(context.Background(), rb.env.ID, key, id)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestRefreshOnRead: a token expiring in 5 minutes is refreshed by the
// read, once; the new tokens are stored before they are returned.
func TestRefreshOnRead(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		rb := refreshSetup(t, b)
		rb.importOAuth(t, "fo", "c1", "rt-0", 5*time.Minute, `,"tags":{"end_user_id":"u1"}`)
		before := rb.stored(t, "fo", "c1")

		creds := rb.get(t, "fo", "c1", "")
		if n := rb.ts.callCount(); n != 1 {
			t.Fatalf("token endpoint called %d times, want 1", n)
		}
		if creds["access_token"] != "at-1" || creds["refresh_token"] != "rt-1" {
			t.Errorf("credentials after refresh: %v", creds)
		}
		if want := rb.clock.at(time.Hour).Format("2006-01-02T15:04:05.000Z"); creds["expires_at"] != want {
			t.Errorf("expires_at = %v, want %s", creds["expires_at"], want)
		}
		raw, _ := creds["raw"].(map[string]any)
		if raw["access_token"] != "at-1" || raw["token_type"] != "bearer" || raw["expires_in"] != float64(3600) {
			t.Errorf("raw = %v, want the token response", raw)
		}
		// The request: interpolated token URL and refresh parameter, the
		// integration's client in the body.
		rq := rb.ts.last()
		want := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"rt-0"}, "audience": {"api-acme"},
			"client_id": {"fo-client"}, "client_secret": {"fo-secret"}}
		if rq.path != "/acme/token" || rq.form.Encode() != want.Encode() || rq.auth != "" {
			t.Errorf("token request %s %v auth %q, want /acme/token %v and no Authorization", rq.path, rq.form, rq.auth, want)
		}

		// Stored before returned: sealed, Version bumped, expiry recorded.
		after := rb.stored(t, "fo", "c1")
		if after.Version != before.Version+1 || after.CredentialsExpiresAt == nil ||
			!after.CredentialsExpiresAt.Equal(rb.clock.at(time.Hour)) || strings.Contains(after.SealedCredentials, "at-1") {
			t.Errorf("stored connection: version %d (was %d), expires %v", after.Version, before.Version, after.CredentialsExpiresAt)
		}
		c, err := rb.svc.Connections().Get(context.Background(), rb.env.ID, "fo", "c1", connections.GetOptions{})
		if err != nil || c.Credentials.AccessToken != "at-1" || c.Credentials.RefreshToken != "rt-1" {
			t.Fatalf("Get after refresh: %+v, %v", c, err)
		}
		if n := rb.ts.callCount(); n != 1 {
			t.Errorf("a fresh token was refreshed again: %d calls", n)
		}
		// Fifteen minutes before the new expiry it is refreshed again.
		rb.clock.advance(45*time.Minute + time.Second)
		if creds := rb.get(t, "fo", "c1", ""); creds["access_token"] != "at-2" || rb.ts.callCount() != 2 {
			t.Errorf("near expiry: %v after %d calls", creds["access_token"], rb.ts.callCount())
		}
		logs, err := rb.svc.ListLogs(context.Background(), oplog.Filter{EnvironmentID: rb.env.ID, Type: "auth"})
		if err != nil || len(logs) != 2 || logs[0].Operation != "refresh" || logs[0].Status != oplog.StatusSuccess {
			t.Errorf("auth log: %+v, %v", logs, err)
		}
		if len(rb.events.list()) != 0 {
			t.Errorf("a successful refresh sent events: %+v", rb.events.list())
		}
	})
}

// TestRefreshNotDue: a token expiring in an hour is not refreshed unless
// forced; a provider's token_expiration_buffer replaces the threshold; a
// connection without a refresh token or expiry is never refreshed.
func TestRefreshNotDue(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		rb := refreshSetup(t, b)
		rb.importOAuth(t, "fo", "c1", "rt-0", time.Hour, "")
		if creds := rb.get(t, "fo", "c1", ""); creds["access_token"] != "at-imported" || rb.ts.callCount() != 0 {
			t.Fatalf("not due: token %v after %d calls", creds["access_token"], rb.ts.callCount())
		}
		if creds := rb.get(t, "fo", "c1", "&force_refresh=false"); creds["access_token"] != "at-imported" || rb.ts.callCount() != 0 {
			t.Fatalf("force_refresh=false: token %v after %d calls", creds["access_token"], rb.ts.callCount())
		}
		if creds := rb.get(t, "fo", "c1", "&force_refresh=true"); creds["access_token"] != "at-1" || rb.ts.callCount() != 1 {
			t.Fatalf("forced: token %v after %d calls", creds["access_token"], rb.ts.callCount())
		}

		// Expiring in an hour, with a two-hour buffer: due.
		rb.importOAuth(t, "fbuf", "c2", "rt-buf", time.Hour, "")
		if creds := rb.get(t, "fbuf", "c2", ""); creds["access_token"] != "at-2" || rb.ts.callCount() != 2 {
			t.Fatalf("buffer: token %v after %d calls", creds["access_token"], rb.ts.callCount())
		}

		// No refresh token: nothing to do, even forced or expired.
		rb.mustDo(t, 201, req{method: "POST", path: "/connections", body: fmt.Sprintf(
			`{"provider_config_key":"fo","connection_id":"c3","access_token":"at-c3","expires_at":%q}`, rb.clock.in(-time.Minute))})
		// No expiry: never due.
		rb.mustDo(t, 201, req{method: "POST", path: "/connections", body: `{"provider_config_key":"fo","connection_id":"c4",
			"access_token":"at-c4","refresh_token":"rt-c4","no_expiration":true}`})
		for _, q := range []string{"", "&force_refresh=true"} {
			if creds := rb.get(t, "fo", "c3", q); creds["access_token"] != "at-c3" {
				t.Errorf("c3%s: %v", q, creds)
			}
		}
		if creds := rb.get(t, "fo", "c4", ""); creds["access_token"] != "at-c4" {
			t.Errorf("c4: %v", creds)
		}
		if n := rb.ts.callCount(); n != 2 {
			t.Errorf("token endpoint called %d times, want 2", n)
		}
	})
}

// TestRefreshConcurrentInstances: two Services, each with a Store of its
// own on the same data (two postgres.Store on one schema; one sqlite.Store,
// which one process uses, shared), and 50 concurrent reads of an expiring connection: the provider,
// which answers only once every read has begun, is called exactly once,
// and every read returns the new token.
func TestRefreshConcurrentInstances(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		rb := refreshSetup(t, b)
		hold := make(chan struct{})
		rb.ts.set(func(ts *tokenServer) { ts.hold = hold })
		rb.importOAuth(t, "fo", "c1", "rt-0", 5*time.Minute, "")

		cfg2 := rb.cfg
		cfg2.Scheduler = schedulerFor(t, b)
		if b.db != nil {
			opts := &postgres.Options{Schema: b.schema}
			st, err := postgres.New(b.db, opts)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			cfg2.Store = st
		}
		svc2, err := connect.New(cfg2)
		if err != nil {
			t.Fatal(err)
		}
		services := []*connect.Service{rb.svc, svc2}

		const readers = 50
		tokens := make([]string, readers)
		errs := make([]error, readers)
		start := make(chan struct{})
		var wg, begun sync.WaitGroup
		begun.Add(readers)
		go func() { begun.Wait(); close(hold) }()
		for i := range readers {
			wg.Go(func() {
				<-start
				begun.Done()
				c, err := services[i%2].Connections().Get(context.Background(), rb.env.ID, "fo", "c1", connections.GetOptions{})
				if err != nil {
					errs[i] = err
					return
				}
				tokens[i] = c.Credentials.AccessToken
			})
		}
		close(start)
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("reader %d: %v", i, err)
			}
		}
		for i, tok := range tokens {
			if errs[i] == nil && tok != "at-1" {
				t.Errorf("reader %d got token %q, want at-1", i, tok)
			}
		}
		if n := rb.ts.callCount(); n != 1 {
			t.Errorf("token endpoint called %d times by %d concurrent reads, want exactly 1", n, readers)
		}
		if c := rb.stored(t, "fo", "c1"); c.Version != 2 {
			t.Errorf("stored version %d, want 2 (one refresh)", c.Version)
		}
	})
}

// TestRefreshRotatingForced: 20 consecutive forced refreshes with rotating,
// single-use refresh tokens all succeed, so none reused a refresh token.
func TestRefreshRotatingForced(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		rb := refreshSetup(t, b)
		rb.importOAuth(t, "fo", "c1", "rt-0", time.Hour, "")
		sent := map[string]bool{}
		for i := 1; i <= 20; i++ {
			creds := rb.get(t, "fo", "c1", "&force_refresh=true")
			if creds["access_token"] != fmt.Sprintf("at-%d", i) || creds["refresh_token"] != fmt.Sprintf("rt-%d", i) {
				t.Fatalf("refresh %d: %v", i, creds)
			}
			rt := rb.ts.last().form.Get("refresh_token")
			if sent[rt] {
				t.Fatalf("refresh %d reused refresh token %s", i, rt)
			}
			sent[rt] = true
		}
		if n := rb.ts.callCount(); n != 20 {
			t.Errorf("token endpoint called %d times, want 20", n)
		}
		if c := rb.stored(t, "fo", "c1"); len(c.Errors) != 0 || c.LastRefreshFailure != nil {
			t.Errorf("errors %v, last failure %v", c.Errors, c.LastRefreshFailure)
		}
	})
}

// TestRefreshKeepsRefreshToken: a response without a refresh token (or
// without expires_in) keeps the stored refresh token, which the next
// refresh sends again.
func TestRefreshKeepsRefreshToken(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		rb := refreshSetup(t, b)
		rb.ts.set(func(ts *tokenServer) { ts.rotate, ts.noRefreshToken, ts.form = false, true, true })
		rb.importOAuth(t, "fo", "c1", "rt-keep", 5*time.Minute, "")
		creds := rb.get(t, "fo", "c1", "")
		if creds["access_token"] != "at-1" || creds["refresh_token"] != "rt-keep" {
			t.Fatalf("after a response without refresh_token: %v", creds)
		}
		if raw, _ := creds["raw"].(map[string]any); raw["refresh_token"] != "rt-keep" || raw["expires_in"] != "3600" {
			t.Errorf("raw = %v, want the form response with the kept refresh token", raw)
		}
		// Without refresh_token=true the refresh token is hidden, in raw too.
		r := rb.mustDo(t, 200, req{method: "GET", path: "/connections/c1?provider_config_key=fo"})
		if strings.Contains(string(r.raw), "rt-keep") {
			t.Errorf("refresh token shown without refresh_token=true: %s", r.raw)
		}
		rb.ts.set(func(ts *tokenServer) { ts.noExpiresIn = true })
		creds = rb.get(t, "fo", "c1", "&force_refresh=true")
		if creds["access_token"] != "at-2" || creds["refresh_token"] != "rt-keep" || creds["expires_at"] != nil {
			t.Errorf("second refresh: %v", creds)
		}
		if rt := rb.ts.last().form.Get("refresh_token"); rt != "rt-keep" {
			t.Errorf("second refresh sent refresh token %q, want rt-keep", rt)
		}
	})
}

// TestRefreshFailure: a refused refresh answers 400, records a failed
// auth log entry the connection's errors point at, and sends one auth
// webhook; reads within the backoff do not call the provider; a forced
// read does; a success clears the error.
func TestRefreshFailure(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		rb := refreshSetup(t, b)
		ctx := context.Background()
		rb.importOAuth(t, "fo", "c1", "rt-secret-0", 5*time.Minute, `,"tags":{"end_user_id":"u1","organization_id":"o1"}`)
		rb.ts.set(func(ts *tokenServer) { ts.fail = "invalid_grant" })

		r := rb.mustDo(t, 400, req{method: "GET", path: "/connections/c1?provider_config_key=fo"})
		if r.errCode() != connections.CodeRefreshFailed {
			t.Fatalf("error code %q, want %s: %s", r.errCode(), connections.CodeRefreshFailed, r.raw)
		}
		if strings.Contains(string(r.raw), "rt-secret-0") || strings.Contains(string(r.raw), "fo-secret") {
			t.Errorf("error body holds a secret: %s", r.raw)
		}
		payload, _ := r.obj()["error"].(map[string]any)["payload"].(map[string]any)
		logID, _ := payload["log_id"].(string)
		if logID == "" || payload["provider_error"] != "invalid_grant" || payload["provider_status"] != float64(400) {
			t.Errorf("error payload %v", payload)
		}
		c := rb.stored(t, "fo", "c1")
		if len(c.Errors) != 1 || c.Errors[0] != (connections.Error{Type: "auth", LogID: logID}) ||
			c.LastRefreshFailure == nil || !c.LastRefreshFailure.Equal(rb.clock.Now()) || c.RefreshAttempts != 1 {
			t.Fatalf("connection after the failure: errors %v, last failure %v, attempts %d", c.Errors, c.LastRefreshFailure, c.RefreshAttempts)
		}
		// The errors entry resolves to the log entry, which holds no token.
		logs, err := rb.svc.ListLogs(ctx, oplog.Filter{EnvironmentID: rb.env.ID, Type: "auth", ConnectionID: "c1"})
		if err != nil || len(logs) != 1 {
			t.Fatalf("auth log: %+v, %v", logs, err)
		}
		e := logs[0]
		if e.ID != logID || e.Operation != "refresh" || e.Status != oplog.StatusFailure ||
			e.Meta["error"] != "invalid_grant" || e.Meta["status"] != float64(400) {
			t.Errorf("log entry %+v", e)
		}
		if b, _ := json.Marshal(e); strings.Contains(string(b), "rt-secret-0") || strings.Contains(string(b), "fo-secret") {
			t.Errorf("log entry holds a secret: %s", b)
		}
		// One auth webhook, refresh, failed.
		events := rb.events.list()
		if len(events) != 1 {
			t.Fatalf("%d events, want 1: %+v", len(events), events)
		}
		ev := events[0]
		ap, _ := ev.Payload.(*webhooks.AuthPayload)
		if ev.Type != webhooks.TypeAuth || ev.Operation != webhooks.OperationRefresh || ev.ConnectionID != "c1" || ap == nil ||
			ap.Success || ap.Error == nil || ap.Error.Type != "invalid_grant" || ap.Operation != webhooks.OperationRefresh ||
			ap.ProviderConfigKey != "fo" || ap.Provider != "fake-oauth" || ap.AuthMode != "OAUTH2" || ap.Environment != "dev" ||
			ap.EndUser == nil || ap.EndUser.EndUserID != "u1" || ap.EndUser.OrganizationID != "o1" {
			t.Errorf("event %+v payload %+v", ev, ap)
		}
		if b, _ := json.Marshal(ap); strings.Contains(string(b), "rt-secret-0") {
			t.Errorf("webhook payload holds the refresh token: %s", b)
		}

		// Backoff: no second call within 30 s.
		rb.clock.advance(10 * time.Second)
		r = rb.mustDo(t, 400, req{method: "GET", path: "/connections/c1?provider_config_key=fo"})
		if r.errCode() != connections.CodeRefreshBackoff || rb.ts.callCount() != 1 {
			t.Fatalf("within the backoff: %s after %d calls", r.raw, rb.ts.callCount())
		}
		_, err = rb.svc.Connections().Get(ctx, rb.env.ID, "fo", "c1", connections.GetOptions{})
		if !errors.Is(err, connections.ErrRefreshBackoff) {
			t.Errorf("Get within the backoff: %v, want ErrRefreshBackoff", err)
		}
		// After it, a read tries again; the error entry is replaced and no
		// second webhook is sent (the connection was already failing).
		rb.clock.advance(21 * time.Second)
		r = rb.mustDo(t, 400, req{method: "GET", path: "/connections/c1?provider_config_key=fo"})
		if r.errCode() != connections.CodeRefreshFailed || rb.ts.callCount() != 2 {
			t.Fatalf("after the backoff: %s after %d calls", r.raw, rb.ts.callCount())
		}
		c = rb.stored(t, "fo", "c1")
		if len(c.Errors) != 1 || c.Errors[0].LogID == logID || c.RefreshAttempts != 2 {
			t.Errorf("errors after the second failure: %v (attempts %d)", c.Errors, c.RefreshAttempts)
		}
		if n := len(rb.events.list()); n != 1 {
			t.Errorf("%d events after the second failure, want still 1", n)
		}

		// A forced read bypasses the backoff; once the provider works again
		// the success clears the error.
		rb.ts.set(func(ts *tokenServer) { ts.fail = "" })
		rb.clock.advance(time.Second)
		creds := rb.get(t, "fo", "c1", "&force_refresh=true")
		if creds["access_token"] != "at-1" || rb.ts.callCount() != 3 {
			t.Fatalf("forced read in the backoff: %v after %d calls", creds, rb.ts.callCount())
		}
		c = rb.stored(t, "fo", "c1")
		if len(c.Errors) != 0 || c.LastRefreshFailure != nil || c.RefreshAttempts != 0 {
			t.Errorf("after the success: errors %v, last failure %v, attempts %d", c.Errors, c.LastRefreshFailure, c.RefreshAttempts)
		}
		list := rb.mustDo(t, 200, req{method: "GET", path: "/connections"})
		if !strings.Contains(string(list.raw), `"errors":[]`) {
			t.Errorf("list after the success: %s", list.raw)
		}
		// A new failure is a new transition: a second webhook.
		rb.ts.set(func(ts *tokenServer) { ts.fail = "server_error" })
		rb.mustDo(t, 400, req{method: "GET", path: "/connections/c1?provider_config_key=fo&force_refresh=true"})
		if events := rb.events.list(); len(events) != 2 || events[1].Payload.(*webhooks.AuthPayload).Error.Type != "server_error" {
			t.Errorf("events after a new failure: %+v", events)
		}
	})
}

// TestRefreshFailureWebhook: with the default Notifier, the refresh
// failure's auth webhook is stored in the outbox for the environment's URL.
func TestRefreshFailureWebhook(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		rb := refreshSetup(t, b, func(cfg *connect.Config) { cfg.Notifier = nil })
		ctx := context.Background()
		urls := []string{"https://hooks.example.com/refresh"}
		if _, err := rb.svc.Environments().Update(ctx, rb.env.ID, environments.UpdateInput{WebhookURLs: &urls}); err != nil {
			t.Fatal(err)
		}
		rb.importOAuth(t, "fo", "c1", "rt-0", 5*time.Minute, "")
		rb.ts.set(func(ts *tokenServer) { ts.fail = "invalid_grant" })
		rb.mustDo(t, 400, req{method: "GET", path: "/connections/c1?provider_config_key=fo"})
		ds, err := rb.svc.ListWebhookDeliveries(ctx, webhooks.DeliveryFilter{EnvironmentID: rb.env.ID})
		if err != nil || len(ds) != 1 {
			t.Fatalf("deliveries: %+v, %v", ds, err)
		}
		var body map[string]any
		if err := json.Unmarshal(ds[0].Body, &body); err != nil {
			t.Fatal(err)
		}
		errBody, _ := body["error"].(map[string]any)
		if ds[0].Type != "auth" || ds[0].URL != urls[0] || body["operation"] != "refresh" || body["success"] != false ||
			body["connectionId"] != "c1" || errBody["type"] != "invalid_grant" {
			t.Errorf("delivery %+v body %s", ds[0], ds[0].Body)
		}
	})
}

// TestRefreshClientAuth: HTTP Basic client authentication with the id and
// secret form-encoded, a separate refresh_url, and the connection's client
// override instead of the integration's client.
func TestRefreshClientAuth(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		rb := refreshSetup(t, b)
		rb.importOAuth(t, "fb", "c1", "rt-0", time.Minute, "")
		rb.get(t, "fb", "c1", "")
		rq := rb.ts.last()
		wantAuth := "Basic " + base64.StdEncoding.EncodeToString([]byte("fb+client:s%26cr%3At%2F%2B"))
		if rq.path != "/refresh" || rq.auth != wantAuth || rq.form.Has("client_id") || rq.form.Has("client_secret") {
			t.Errorf("basic: %s auth %q form %v, want /refresh with %q", rq.path, rq.auth, rq.form, wantAuth)
		}
		rb.importOAuth(t, "fo", "c2", "rt-x", time.Minute, `,"oauth_client_id_override":"own-id","oauth_client_secret_override":"own-secret"`)
		rb.get(t, "fo", "c2", "")
		if f := rb.ts.last().form; f.Get("client_id") != "own-id" || f.Get("client_secret") != "own-secret" {
			t.Errorf("override: form %v", f)
		}
	})
}

// TestRefreshClientCredentials: an OAUTH2_CC connection gets a new token
// with the client_credentials grant, its own client and the provider's
// token_params; without expires_in the token lasts 55 minutes.
func TestRefreshClientCredentials(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		rb := refreshSetup(t, b)
		rb.ts.set(func(ts *tokenServer) { ts.noExpiresIn = true })
		rb.mustDo(t, 201, req{method: "POST", path: "/connections", body: fmt.Sprintf(`{"provider_config_key":"fcc","connection_id":"m1",
			"credentials":{"type":"OAUTH2_CC","client_id":"m-id","client_secret":"m-secret","token":"old","expires_at":%q}}`, rb.clock.in(2*time.Minute))})
		creds := rb.get(t, "fcc", "m1", "")
		if creds["token"] != "at-1" || creds["client_id"] != "m-id" || creds["client_secret"] != "m-secret" ||
			creds["expires_at"] != rb.clock.at(55*time.Minute).Format("2006-01-02T15:04:05.000Z") {
			t.Errorf("credentials: %v", creds)
		}
		rq := rb.ts.last()
		want := url.Values{"grant_type": {"client_credentials"}, "audience": {"machines"}, "client_id": {"m-id"}, "client_secret": {"m-secret"}}
		if rq.path != "/cc/token" || rq.form.Encode() != want.Encode() {
			t.Errorf("request %s %v, want /cc/token %v", rq.path, rq.form, want)
		}
		if creds := rb.get(t, "fcc", "m1", ""); creds["token"] != "at-1" || rb.ts.callCount() != 1 {
			t.Errorf("fresh token fetched again: %v after %d calls", creds["token"], rb.ts.callCount())
		}
		if creds := rb.get(t, "fcc", "m1", "&force_refresh=true"); creds["token"] != "at-2" || rb.ts.callCount() != 2 {
			t.Errorf("forced: %v after %d calls", creds["token"], rb.ts.callCount())
		}
		// A connection imported without a token fetches one on first read.
		rb.mustDo(t, 201, req{method: "POST", path: "/connections", body: `{"provider_config_key":"fcc","connection_id":"m2",
			"credentials":{"type":"OAUTH2_CC","client_id":"m-id","client_secret":"m-secret"}}`})
		if creds := rb.get(t, "fcc", "m2", ""); creds["token"] != "at-3" {
			t.Errorf("no token yet: %v", creds)
		}
	})
}

// TestRefreshSweep: a sweep refreshes the tokens that expire before the
// next sweep (plus the threshold) and no others, even when two instances
// sweep at once; a connection whose refresh fails gets its error entry and
// is skipped once it failed MaxSweepAttempts times; expired sessions go.
func TestRefreshSweep(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		rb := refreshSetup(t, b)
		rb.importOAuth(t, "fo", "soon", "rt-a", 10*time.Minute, "")
		rb.importOAuth(t, "fo", "before-next", "rt-b", 18*time.Minute, "")
		rb.importOAuth(t, "fo", "later", "rt-c", 2*time.Hour, "")
		rb.importOAuth(t, "fo", "revoked", "rt-revoked", 5*time.Minute, "")
		rb.ts.set(func(ts *tokenServer) { delete(ts.valid, "rt-revoked") })
		rb.mustDo(t, 201, req{method: "POST", path: "/connections", body: `{"provider_config_key":"fo","connection_id":"no-rt",
			"access_token":"at-x","expires_at":"` + rb.clock.in(time.Minute) + `","connection_config":{"tenant":"acme"}}`})

		cfg2 := rb.cfg
		cfg2.Scheduler = schedulerFor(t, b)
		if b.db != nil {
			st, err := postgres.New(b.db, &postgres.Options{Schema: b.schema})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			cfg2.Store = st
		}
		svc2, err := connect.New(cfg2)
		if err != nil {
			t.Fatal(err)
		}
		res, err := rb.svc.Sweep(context.Background(), 5*time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if r := res.Refresh; r.Checked != 4 || r.Refreshed != 2 || r.Failed != 1 || rb.ts.callCount() != 3 {
			t.Errorf("sweep: %+v with %d token calls, want 4 checked (the token without a refresh token too), 2 refreshed, 1 failed, 3 calls",
				r, rb.ts.callCount())
		}
		for id, want := range map[string]string{"soon": "at-", "before-next": "at-", "later": "at-imported", "no-rt": "at-x"} {
			c, err := rb.svc.Connections().Get(context.Background(), rb.env.ID, "fo", id, connections.GetOptions{})
			if err != nil {
				t.Fatalf("%s: %v", id, err)
			}
			if !strings.HasPrefix(c.Credentials.AccessToken, want) || (want == "at-" && c.Credentials.AccessToken == "at-imported") {
				t.Errorf("%s: access token %q after the sweep", id, c.Credentials.AccessToken)
			}
		}
		if c := rb.stored(t, "fo", "revoked"); len(c.Errors) != 1 || c.Errors[0].Type != "auth" || c.RefreshAttempts != 1 {
			t.Errorf("revoked connection: errors %v, attempts %d", c.Errors, c.RefreshAttempts)
		}

		// 50 minutes later the two refreshed tokens are due again: two
		// instances sweeping at once call the provider once for each (and
		// once for the failing one). The provider answers once both
		// sweeps have begun.
		rb.clock.advance(50 * time.Minute)
		hold := make(chan struct{})
		rb.ts.set(func(ts *tokenServer) { ts.hold = hold })
		var wg, begun sync.WaitGroup
		begun.Add(2)
		go func() { begun.Wait(); close(hold) }()
		for i, svc := range []*connect.Service{rb.svc, svc2} {
			wg.Go(func() {
				begun.Done()
				if _, err := svc.Sweep(context.Background(), 5*time.Minute); err != nil {
					t.Errorf("sweep %d: %v", i, err)
				}
			})
		}
		wg.Wait()
		if n := rb.ts.callCount(); n != 6 {
			t.Errorf("two concurrent sweeps made %d token calls in all, want 6 (3 before, then 2 refreshes and 1 failure)", n)
		}

		// The failing connection is tried again by later sweeps until it
		// has failed MaxSweepAttempts times.
		for range 3 {
			rb.clock.advance(time.Minute)
			if _, err := rb.svc.Sweep(context.Background(), 5*time.Minute); err != nil {
				t.Fatal(err)
			}
		}
		if c := rb.stored(t, "fo", "revoked"); c.RefreshAttempts != connections.MaxSweepAttempts {
			t.Errorf("revoked connection tried %d times, want %d", c.RefreshAttempts, connections.MaxSweepAttempts)
		}
		rb.session(t, `{"tags":{"end_user_id":"u1"}}`)
		rb.clock.advance(31 * time.Minute)
		res, err = rb.svc.Sweep(context.Background(), 5*time.Minute)
		if err != nil || res.SessionsDeleted != 1 {
			t.Errorf("sweep after the session expired: %+v, %v", res, err)
		}
	})
}
