package integrations

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"encoding/xml"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/embedauth/connect/integrations/internal/svgsafe"
)

func logoServer(t *testing.T, base string) (*Service, http.Handler) {
	t.Helper()
	cat, err := DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	s := NewService(nil, nil, cat, nil, nil, time.Now)
	if err := s.SetLogoBaseURL(base); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /providers/{provider}/logo.svg", s.LogoHandler())
	return s, mux
}

func getLogo(h http.Handler, provider string, header ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest("GET", "/providers/"+provider+"/logo.svg", nil)
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// TestLogoHandlerServesRealLogos: a provider the library has a logo of
// gets it, with a strict CSP, a week of cache and an ETag that answers
// 304; one without gets its monogram; an unknown provider a JSON 404.
func TestLogoHandlerServesRealLogos(t *testing.T) {
	t.Parallel()
	_, h := logoServer(t, "")
	logos, err := embeddedLogos()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"github", "slack", "salesforce", "hubspot", "google-calendar", "microsoft-teams"} {
		w := getLogo(h, p)
		if w.Code != 200 {
			t.Fatalf("%s: %d %s", p, w.Code, w.Body)
		}
		if !HasLogo(p) || !bytes.Equal(w.Body.Bytes(), logos[p].svg) || strings.Contains(w.Body.String(), "<text") {
			t.Errorf("%s: not the embedded logo: %.200s", p, w.Body)
		}
		hd := w.Header()
		if hd.Get("Content-Type") != "image/svg+xml" || hd.Get("Content-Security-Policy") != "default-src 'none'; style-src 'unsafe-inline'" ||
			hd.Get("X-Content-Type-Options") != "nosniff" || hd.Get("Cache-Control") != "public, max-age=604800" || hd.Get("ETag") == "" {
			t.Errorf("%s: headers %v", p, hd)
		}
		if w2 := getLogo(h, p, "If-None-Match", hd.Get("ETag")); w2.Code != http.StatusNotModified || w2.Body.Len() != 0 {
			t.Errorf("%s with If-None-Match: %d %s, want 304", p, w2.Code, w2.Body)
		}
	}

	// Attio is in neither icon set.
	if HasLogo("attio") {
		t.Fatal("attio has a logo: pick another provider without one")
	}
	w := getLogo(h, "attio")
	if w.Code != 200 || !strings.Contains(w.Body.String(), ">A</text>") || w.Header().Get("Cache-Control") != "public, max-age=86400" ||
		w.Header().Get("Content-Security-Policy") == "" || w.Header().Get("ETag") == "" {
		t.Errorf("attio: %d %v %s, want the monogram", w.Code, w.Header(), w.Body)
	}
	if w2 := getLogo(h, "attio", "If-None-Match", w.Header().Get("ETag")); w2.Code != http.StatusNotModified {
		t.Errorf("attio with If-None-Match: %d", w2.Code)
	}

	w = getLogo(h, "nope")
	var body struct {
		Error struct{ Code, Message string }
	}
	if err := json.Unmarshal(w.Body.Bytes(), &body); w.Code != 404 || err != nil || body.Error.Code != "not_found" {
		t.Errorf("unknown provider: %d %s", w.Code, w.Body)
	}
}

// TestLogoBaseURLRedirects: with a base URL, LogoURL and the handler point
// at the host's files; a provider's own Logo still wins.
func TestLogoBaseURLRedirects(t *testing.T) {
	t.Parallel()
	s, h := logoServer(t, "https://cdn.example.com/logos/")
	w := getLogo(h, "github")
	if w.Code != http.StatusFound || w.Header().Get("Location") != "https://cdn.example.com/logos/github.svg" {
		t.Errorf("redirect: %d %v", w.Code, w.Header())
	}
	if w := getLogo(h, "nope"); w.Code != 404 {
		t.Errorf("unknown provider: %d", w.Code)
	}
	gh, _ := s.Catalog().Lookup("github")
	if got := s.LogoURL(gh, "https://api.example.com"); got != "https://cdn.example.com/logos/github.svg" {
		t.Errorf("LogoURL = %s", got)
	}
	own := &Provider{Name: "own", Logo: "https://own.example.com/own.png"}
	if got := s.LogoURL(own, "https://api.example.com"); got != own.Logo {
		t.Errorf("LogoURL of a provider with its own logo = %s", got)
	}
	if err := s.SetLogoBaseURL(""); err != nil {
		t.Fatal(err)
	}
	if got := s.LogoURL(gh, "https://api.example.com/"); got != "https://api.example.com/providers/github/logo.svg" {
		t.Errorf("LogoURL without a base = %s", got)
	}
	for _, bad := range []string{"cdn.example.com", "/logos", "ftp://x", "https://x/?a=b", "https://x/#f", "https://u@x", "https://"} {
		if err := s.SetLogoBaseURL(bad); err == nil {
			t.Errorf("SetLogoBaseURL(%q) accepted", bad)
		}
	}
}

// TestEmbeddedLogos: every embedded SVG is what the sanitiser leaves
// unchanged and parses as XML; every provider's icon is in the file; the
// sources are the two CC0 sets at their pinned versions.
func TestEmbeddedLogos(t *testing.T) {
	t.Parallel()
	zr, err := gzip.NewReader(bytes.NewReader(logosFile))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Sources []struct {
			Package, Version, License string
		}
		Icons     map[string]string
		Providers map[string]struct{ Icon, Match string }
	}
	if err := json.NewDecoder(zr).Decode(&f); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d bytes compressed, %d icons, %d providers", len(logosFile), len(f.Icons), len(f.Providers))
	if len(logosFile) > 1<<20 {
		t.Errorf("logos.gen.json.gz is %d bytes, over 1 MiB", len(logosFile))
	}
	licences := map[string]string{}
	for _, s := range f.Sources {
		licences[s.Package+"@"+s.Version] = s.License
	}
	for _, want := range []string{"simple-icons@16.37.0", "@iconify-json/logos@1.2.19"} {
		if licences[want] != "CC0-1.0" {
			t.Errorf("source %s: licence %q, want CC0-1.0 (sources %v)", want, licences[want], f.Sources)
		}
	}
	for key, svg := range f.Icons {
		set, _, _ := strings.Cut(key, ":")
		if set != "logos" && set != "simple-icons" {
			t.Errorf("icon %s: from set %q", key, set)
		}
		out, dropped, err := svgsafe.Clean([]byte(svg))
		if err != nil || len(dropped) > 0 || string(out) != svg {
			t.Errorf("icon %s does not pass the sanitiser unchanged: %v %q", key, err, dropped)
		}
		dec := xml.NewDecoder(strings.NewReader(svg))
		dec.Strict = true
		for {
			if _, err := dec.Token(); err == io.EOF {
				break
			} else if err != nil {
				t.Errorf("icon %s is not XML: %v", key, err)
				break
			}
		}
	}
	for name, ref := range f.Providers {
		if _, ok := f.Icons[ref.Icon]; !ok {
			t.Errorf("provider %s: icon %s is not in the file", name, ref.Icon)
		}
		if ref.Match != "strict" && ref.Match != "variant" && ref.Match != "family" {
			t.Errorf("provider %s: match %q", name, ref.Match)
		}
	}
}
