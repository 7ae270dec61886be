package connectui_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/embedauth/connect/connectui"
)

func newServer(t *testing.T, cfg connectui.Config) *httptest.Server {
	t.Helper()
	h, err := connectui.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	h.Register(mux, "")
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func get(t *testing.T, url string, hdr ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// directives parses a Content-Security-Policy into directive -> sources.
func directives(csp string) map[string][]string {
	out := map[string][]string{}
	for _, d := range strings.Split(csp, ";") {
		f := strings.Fields(d)
		if len(f) > 0 {
			out[f[0]] = f[1:]
		}
	}
	return out
}

var (
	scriptTag = regexp.MustCompile(`<script\b[^>]*>`)
	nonceAttr = regexp.MustCompile(`nonce="([^"]+)"`)
)

func TestPageCSPAndNonce(t *testing.T) {
	srv := newServer(t, connectui.Config{APIURL: "https://api.example.com/base/", AllowedAPIOrigins: []string{"https://other.example.com"}})
	resp, body := get(t, srv.URL+"/connect/?session_token=nango_connect_session_x&theme=dark")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}
	for h, want := range map[string]string{"Cache-Control": "no-store", "Referrer-Policy": "no-referrer", "X-Content-Type-Options": "nosniff"} {
		if got := resp.Header.Get(h); got != want {
			t.Errorf("%s = %q, want %q", h, got, want)
		}
	}
	csp := directives(resp.Header.Get("Content-Security-Policy"))
	if got := strings.Join(csp["default-src"], " "); got != "'none'" {
		t.Errorf("default-src %q", got)
	}
	if got := strings.Join(csp["connect-src"], " "); got != "'self' https://api.example.com https://other.example.com" {
		t.Errorf("connect-src %q", got)
	}
	if got := strings.Join(csp["frame-ancestors"], " "); got != "*" {
		t.Errorf("frame-ancestors %q", got)
	}
	if got := strings.Join(csp["base-uri"], " "); got != "'none'" {
		t.Errorf("base-uri %q", got)
	}
	src := csp["script-src"]
	if len(src) != 1 || !strings.HasPrefix(src[0], "'nonce-") {
		t.Fatalf("script-src %q: want only a nonce", src)
	}
	nonce := strings.TrimSuffix(strings.TrimPrefix(src[0], "'nonce-"), "'")
	if len(nonce) < 16 {
		t.Errorf("nonce %q is short", nonce)
	}
	for _, s := range csp["style-src"] {
		if s == "'unsafe-inline'" {
			t.Error("style-src allows inline styles")
		}
	}

	// Every script has the nonce and a src: no inline script.
	tags := scriptTag.FindAllString(body, -1)
	if len(tags) == 0 {
		t.Fatal("no script tag")
	}
	for _, tag := range tags {
		m := nonceAttr.FindStringSubmatch(tag)
		if m == nil || m[1] != nonce {
			t.Errorf("script %s does not carry the nonce %q", tag, nonce)
		}
		if !strings.Contains(tag, ` src="`) {
			t.Errorf("inline script %s", tag)
		}
	}
	if strings.Contains(body, " style=") || strings.Contains(body, "<style") || regexp.MustCompile(`\son[a-z]+=`).MatchString(body) {
		t.Error("the page has inline styles or inline event handlers")
	}
	// The token is never rendered into the page (the script reads it).
	if strings.Contains(body, "nango_connect_session_x") {
		t.Error("the page echoes the session token")
	}
	if !strings.Contains(body, `data-api-url="https://api.example.com/base"`) {
		t.Error("the page does not carry the default API URL")
	}

	// A fresh nonce per response.
	resp2, _ := get(t, srv.URL+"/connect/")
	if resp2.Header.Get("Content-Security-Policy") == resp.Header.Get("Content-Security-Policy") {
		t.Error("two responses share a nonce")
	}
}

func TestAssets(t *testing.T) {
	h, err := connectui.New(connectui.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv := newServer(t, connectui.Config{})
	_, page := get(t, srv.URL+"/connect/")
	for _, ref := range []string{`href="ui/app.css?v=`, `src="ui/app.js?v=`} {
		if !strings.Contains(page, ref) {
			t.Errorf("the page does not reference %s", ref)
		}
	}
	names := h.Assets()
	for _, want := range []string{"app.css", "app.js"} {
		found := false
		for _, n := range names {
			found = found || n == want
		}
		if !found {
			t.Errorf("asset %s missing from %v", want, names)
		}
	}
	// No asset (and not the page) loads anything from another host: no
	// absolute URL at all, except in comments of the licence kind, of
	// which there are none.
	external := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}`)
	wantType := map[string]string{"app.css": "text/css; charset=utf-8", "app.js": "text/javascript; charset=utf-8"}
	for _, name := range names {
		resp, body := get(t, srv.URL+"/connect/ui/"+name+"?v=1")
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: status %d", name, resp.StatusCode)
		}
		if want, ok := wantType[name]; ok && resp.Header.Get("Content-Type") != want {
			t.Errorf("%s: Content-Type %q, want %q", name, resp.Header.Get("Content-Type"), want)
		}
		if resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: no nosniff", name)
		}
		if m := external.FindString(body); m != "" {
			t.Errorf("%s refers to an external URL: %q", name, m)
		}
		if strings.Contains(body, "@import") {
			t.Errorf("%s imports a stylesheet", name)
		}
		etag := resp.Header.Get("ETag")
		if etag == "" {
			t.Errorf("%s: no ETag", name)
			continue
		}
		resp, _ = get(t, srv.URL+"/connect/ui/"+name, "If-None-Match", etag)
		if resp.StatusCode != http.StatusNotModified {
			t.Errorf("%s with If-None-Match: status %d, want 304", name, resp.StatusCode)
		}
	}
	if m := external.FindString(page); m != "" {
		t.Errorf("the page refers to an external URL: %q", m)
	}
}

func TestNotFoundAndRedirect(t *testing.T) {
	srv := newServer(t, connectui.Config{})
	for _, p := range []string{"/connect/ui/nope.js", "/connect/ui/", "/connect/ui/index.html", "/connect/other", "/connect/ui/static/app.js"} {
		resp, _ := get(t, srv.URL+p)
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: status %d, want 404", p, resp.StatusCode)
		}
	}
	// The redirect's Location is relative to the request (see
	// TestRedirectUnderStripPrefix for why): it resolves to the page.
	resp, _ := get(t, srv.URL+"/connect?session_token=abc&theme=dark")
	if got := redirectTarget(t, srv.URL+"/connect?session_token=abc&theme=dark", resp); resp.StatusCode != http.StatusMovedPermanently ||
		got != srv.URL+"/connect/?session_token=abc&theme=dark" {
		t.Errorf("GET /connect: %d to %q (Location %q)", resp.StatusCode, got, resp.Header.Get("Location"))
	}
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/connect/", nil)
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /connect/: status %d, want 405", r.StatusCode)
	}
}

// redirectTarget resolves resp's Location against the URL that was asked
// for, as a browser does.
func redirectTarget(t *testing.T, asked string, resp *http.Response) string {
	t.Helper()
	base, err := url.Parse(asked)
	if err != nil {
		t.Fatal(err)
	}
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		t.Fatalf("Location %q: %v", resp.Header.Get("Location"), err)
	}
	return base.ResolveReference(loc).String()
}

// Under http.StripPrefix the handler sees a shorter path than the browser
// asked for: the redirect from the page's address without its slash must
// still lead to the page (and so must a Handler mounted with ServeHTTP), or
// its relative asset URLs miss.
func TestRedirectUnderStripPrefix(t *testing.T) {
	h, err := connectui.New(connectui.Config{})
	if err != nil {
		t.Fatal(err)
	}
	inner := http.NewServeMux()
	h.Register(inner, "/connect/")
	mux := http.NewServeMux()
	mux.Handle("/app/", http.StripPrefix("/app", inner))
	mux.Handle("/ui-root/", http.StripPrefix("/ui-root", h))
	mux.Handle("/ui-root", http.StripPrefix("/ui-root", h))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	for asked, want := range map[string]string{
		"/app/connect?session_token=abc&theme=dark": "/app/connect/?session_token=abc&theme=dark",
		"/ui-root?lang=fr":                          "/ui-root/?lang=fr",
	} {
		resp, _ := get(t, srv.URL+asked)
		if got := redirectTarget(t, srv.URL+asked, resp); resp.StatusCode != http.StatusMovedPermanently || got != srv.URL+want {
			t.Errorf("GET %s: %d to %q, want 301 to %s", asked, resp.StatusCode, got, want)
			continue
		}
		resp, page := get(t, srv.URL+want)
		if resp.StatusCode != http.StatusOK || !strings.Contains(page, `src="ui/app.js`) {
			t.Errorf("GET %s: %d", want, resp.StatusCode)
		}
		dir, _, _ := strings.Cut(want, "?")
		if resp, _ := get(t, srv.URL+dir+"ui/app.js"); resp.StatusCode != http.StatusOK {
			t.Errorf("the page's script under %s: %d", want, resp.StatusCode)
		}
	}
}

func TestServeHTTPUnderStripPrefix(t *testing.T) {
	h, err := connectui.New(connectui.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.StripPrefix("/ui-root", h))
	t.Cleanup(srv.Close)
	resp, body := get(t, srv.URL+"/ui-root/")
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "ui/app.js") {
		t.Fatalf("page: %d", resp.StatusCode)
	}
	if resp, _ := get(t, srv.URL+"/ui-root/ui/app.js"); resp.StatusCode != http.StatusOK {
		t.Errorf("asset: %d", resp.StatusCode)
	}
	if resp, _ := get(t, srv.URL+"/ui-root/missing"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("missing: %d", resp.StatusCode)
	}
}

func TestConfigErrors(t *testing.T) {
	for name, cfg := range map[string]connectui.Config{
		"relative API URL":       {APIURL: "/api"},
		"ftp API URL":            {APIURL: "ftp://x.example"},
		"origin with a path":     {AllowedAPIOrigins: []string{"https://x.example/path"}},
		"not a URL":              {AllowedAPIOrigins: []string{"x.example"}},
		"bad frame ancestor":     {FrameAncestors: []string{"https://a.example; script-src *"}},
		"empty frame ancestor":   {FrameAncestors: []string{""}},
		"credentials in the URL": {APIURL: "https://user:pw@x.example"},
	} {
		if _, err := connectui.New(cfg); err == nil {
			t.Errorf("%s: New accepted %+v", name, cfg)
		}
	}
	srv := newServer(t, connectui.Config{FrameAncestors: []string{"'self'", "https://app.example.com"}})
	resp, _ := get(t, srv.URL+"/connect/")
	if got := strings.Join(directives(resp.Header.Get("Content-Security-Policy"))["frame-ancestors"], " "); got != "'self' https://app.example.com" {
		t.Errorf("frame-ancestors %q", got)
	}
}
