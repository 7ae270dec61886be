package integrations

import (
	"fmt"
	"hash/fnv"
	"html"
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"
)

// absolute turns a logo path relative to the API into a URL under publicURL.
func absolute(publicURL, logo string) string {
	if strings.HasPrefix(logo, "/") {
		return publicURL + logo
	}
	return logo
}

// LogoHandler serves GET /providers/{provider}/logo.svg without
// authentication: a monogram of the provider's display name on a colour
// derived from its name, for providers whose catalogue entry has no logo
// URL of its own. Browsers load it from <img> tags, so it needs no key.
func (s *Service) LogoHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, ok := s.catalog.Lookup(r.PathValue("provider"))
		if !ok {
			http.NotFound(w, r)
			return
		}
		letter := "?"
		for _, c := range p.DisplayName {
			if unicode.IsLetter(c) || unicode.IsDigit(c) {
				letter = string(unicode.ToUpper(c))
				break
			}
		}
		if !utf8.ValidString(letter) {
			letter = "?"
		}
		h := fnv.New32a()
		h.Write([]byte(p.Name))
		hue := h.Sum32() % 360
		w.Header().Set("Content-Type", "image/svg+xml")
		w.Header().Set("Cache-Control", "public, max-age=86400")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		fmt.Fprintf(w, `<svg xmlns="http://www.w3.org/2000/svg" width="64" height="64" viewBox="0 0 64 64" role="img" aria-label="%s">`+
			`<rect width="64" height="64" rx="14" fill="hsl(%d,55%%,45%%)"/>`+
			`<text x="32" y="43" font-family="system-ui,sans-serif" font-size="30" font-weight="600" text-anchor="middle" fill="#fff">%s</text></svg>`,
			html.EscapeString(p.DisplayName), hue, html.EscapeString(letter))
	})
}
