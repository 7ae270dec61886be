package integrations

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	_ "embed" // the generated logos
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"html"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/embedauth/connect/internal/httpapi"
	"github.com/embedauth/connect/store"
)

//go:generate go run ./internal/genlogos

// logosFile is logos.gen.json.gz: the provider logos genlogos chose from
// two CC0 icon sets (see README.md, "Provider logos"), every SVG already
// through its allow-list sanitiser.
//
//go:embed logos.gen.json.gz
var logosFile []byte

// logoCSP is the Content-Security-Policy of every logo: an SVG opened on
// its own, rather than through <img>, may run nothing and load nothing.
const logoCSP = "default-src 'none'; style-src 'unsafe-inline'"

// A real logo is cached for a week, a monogram (which a later version may
// replace with a real logo) for a day; both revalidate with their ETag.
const (
	logoCacheControl     = "public, max-age=604800"
	monogramCacheControl = "public, max-age=86400"
)

// logo is an SVG with its ETag.
type logo struct {
	svg  []byte
	etag string
}

func newLogo(svg []byte) *logo {
	sum := sha256.Sum256(svg)
	return &logo{svg: svg, etag: `"` + hex.EncodeToString(sum[:12]) + `"`}
}

// embeddedLogos decodes logosFile once: the logo of each provider that has
// one, by provider name. Providers that share an icon share its logo.
var embeddedLogos = sync.OnceValues(func() (map[string]*logo, error) {
	zr, err := gzip.NewReader(bytes.NewReader(logosFile))
	if err != nil {
		return nil, fmt.Errorf("integrations: logos.gen.json.gz: %w", err)
	}
	var f struct {
		Icons     map[string]string `json:"icons"`
		Providers map[string]struct {
			Icon string `json:"icon"`
		} `json:"providers"`
	}
	if err := json.NewDecoder(zr).Decode(&f); err != nil {
		return nil, fmt.Errorf("integrations: logos.gen.json.gz: %w", err)
	}
	icons := make(map[string]*logo, len(f.Icons))
	for k, svg := range f.Icons {
		icons[k] = newLogo([]byte(svg))
	}
	out := make(map[string]*logo, len(f.Providers))
	for name, ref := range f.Providers {
		lg, ok := icons[ref.Icon]
		if !ok {
			return nil, fmt.Errorf("integrations: logos.gen.json.gz: provider %q names icon %q, which it does not hold", name, ref.Icon)
		}
		out[name] = lg
	}
	return out, nil
})

// HasLogo reports whether the library embeds a logo for the provider name
// (LogoHandler serves it); for other providers LogoHandler draws a
// monogram.
func HasLogo(provider string) bool {
	logos, _ := embeddedLogos()
	_, ok := logos[provider]
	return ok
}

// SetLogoBaseURL makes base, an absolute http or https URL without query
// or fragment, the address of provider logos: a provider without a Logo of
// its own has its logo at base + "/" + name + ".svg", which LogoURL returns
// and LogoHandler redirects to. An empty base restores the logos this
// package serves. connect.New calls it with Config.LogoBaseURL.
func (s *Service) SetLogoBaseURL(base string) error {
	if base != "" {
		u, err := url.Parse(base)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
			u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
			return fmt.Errorf("logo base URL %q must be an absolute http or https URL without user info, query or fragment", base)
		}
	}
	s.logoBase = strings.TrimRight(base, "/")
	return nil
}

// LogoURL returns the address of p's logo: p.Logo when the provider has
// one of its own (made absolute under publicURL when it is a path; the
// path of LogoHandler a Catalog fills in is not one of its own), else
// the logo base URL's NAME.svg when the host set one (SetLogoBaseURL),
// else LogoHandler's address publicURL + "/providers/NAME/logo.svg".
func (s *Service) LogoURL(p *Provider, publicURL string) string {
	if s.logoBase != "" && (p.Logo == "" || p.Logo == defaultLogo(p.Name)) {
		return s.logoBase + "/" + url.PathEscape(p.Name) + ".svg"
	}
	return absolute(strings.TrimRight(publicURL, "/"), p.LogoURL())
}

// absolute turns a logo path relative to the API into a URL under publicURL.
func absolute(publicURL, logo string) string {
	if strings.HasPrefix(logo, "/") {
		return publicURL + logo
	}
	return logo
}

// LogoHandler serves GET /providers/{provider}/logo.svg without
// authentication, since browsers load it from <img> tags:
//
//   - with a logo base URL (SetLogoBaseURL), a 302 redirect to the host's
//     base + "/" + provider + ".svg";
//   - else the provider's logo when the library embeds one (see HasLogo):
//     SVG from two CC0 icon sets, cached a week;
//   - else a monogram of the provider's display name on a colour derived
//     from its name, cached a day.
//
// Every SVG answer carries an ETag (a matching If-None-Match is answered
// 304) and the Content-Security-Policy "default-src 'none';
// style-src 'unsafe-inline'". A provider that is not in the catalogue is
// a 404 not_found error.
func (s *Service) LogoHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("provider")
		p, ok := s.catalog.Lookup(name)
		if !ok {
			httpapi.WriteError(w, r, nil, httpapi.StyleStandard, store.NotFound("not_found", "The provider %q was not found.", name))
			return
		}
		if s.logoBase != "" {
			w.Header().Set("Cache-Control", monogramCacheControl)
			http.Redirect(w, r, s.logoBase+"/"+url.PathEscape(p.Name)+".svg", http.StatusFound)
			return
		}
		lg, cache := monogram(p), monogramCacheControl
		if logos, _ := embeddedLogos(); logos[p.Name] != nil {
			lg, cache = logos[p.Name], logoCacheControl
		}
		h := w.Header()
		h.Set("Content-Type", "image/svg+xml")
		h.Set("Content-Security-Policy", logoCSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cache-Control", cache)
		h.Set("ETag", lg.etag)
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(lg.svg))
	})
}

// monogram draws the first letter or digit of p's display name on a
// colour derived from its name.
func monogram(p *Provider) *logo {
	letter := "?"
	for _, c := range p.DisplayName {
		if unicode.IsLetter(c) || unicode.IsDigit(c) {
			letter = string(unicode.ToUpper(c))
			break
		}
	}
	h := fnv.New32a()
	_, _ = io.WriteString(h, p.Name)
	hue := h.Sum32() % 360
	return newLogo(fmt.Appendf(nil, `<svg xmlns="http://www.w3.org/2000/svg" width="64" height="64" viewBox="0 0 64 64" role="img" aria-label="%s">`+
		`<rect width="64" height="64" rx="14" fill="hsl(%d,55%%,45%%)"/>`+
		`<text x="32" y="43" font-family="system-ui,sans-serif" font-size="30" font-weight="600" text-anchor="middle" fill="#fff">%s</text></svg>`,
		html.EscapeString(p.DisplayName), hue, html.EscapeString(letter)))
}
