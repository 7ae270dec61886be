package connectui

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"mime"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
)

//go:embed ui/index.html
var templates embed.FS

//go:embed ui/static
var static embed.FS

// DefaultPath is where connect.Service mounts the UI.
const DefaultPath = "/connect/"

// Config configures the UI. The zero value serves a UI that calls the API
// at the parent of its own address: mounted at https://h/x/connect/, it
// calls https://h/x.
type Config struct {
	// APIURL is the absolute base URL of the API the UI calls when its
	// apiURL query parameter is absent or not allowed, such as
	// "https://connect.example.com/api". Defaults to the parent of the
	// UI's address, resolved in the browser.
	APIURL string

	// AllowedAPIOrigins are origins (scheme://host[:port]), besides the
	// UI's own and APIURL's, that the apiURL query parameter may name. The
	// page's Content-Security-Policy lets it connect to these origins and
	// no others, so that a link with a foreign apiURL cannot send an end
	// user's credentials elsewhere.
	AllowedAPIOrigins []string

	// FrameAncestors lists who may show the UI in an iframe (the CSP
	// frame-ancestors directive): origins, or "'self'". Defaults to any
	// origin, as openConnectUI embeds the UI in the host application's
	// pages, whatever their origin.
	FrameAncestors []string
}

// Handler serves the UI: the page at its root and the assets under ui/.
// Create it with New.
type Handler struct {
	page     *template.Template
	apiURL   string
	origins  []string // allowed API origins besides 'self'
	csp      string   // with %s for the nonce
	assets   map[string]asset
	assetVer string
}

type asset struct {
	body        []byte
	contentType string
	etag        string
}

// New checks cfg and builds the Handler.
func New(cfg Config) (*Handler, error) {
	h := &Handler{assets: make(map[string]asset)}
	if cfg.APIURL != "" {
		o, err := origin(cfg.APIURL)
		if err != nil {
			return nil, fmt.Errorf("connectui: Config.APIURL: %w", err)
		}
		h.apiURL = strings.TrimRight(cfg.APIURL, "/")
		h.origins = append(h.origins, o)
	}
	for _, a := range cfg.AllowedAPIOrigins {
		o, err := origin(a)
		if err != nil {
			return nil, fmt.Errorf("connectui: Config.AllowedAPIOrigins: %w", err)
		}
		if o != strings.TrimRight(a, "/") {
			return nil, fmt.Errorf("connectui: Config.AllowedAPIOrigins: %q is not an origin (scheme://host[:port], no path)", a)
		}
		if !slices.Contains(h.origins, o) {
			h.origins = append(h.origins, o)
		}
	}
	ancestors := "*"
	if len(cfg.FrameAncestors) > 0 {
		for _, a := range cfg.FrameAncestors {
			if a == "" || strings.ContainsAny(a, " ;,\t\r\n") {
				return nil, fmt.Errorf("connectui: Config.FrameAncestors: %q is not a CSP source", a)
			}
		}
		ancestors = strings.Join(cfg.FrameAncestors, " ")
	}
	api := strings.Join(append([]string{"'self'"}, h.origins...), " ")
	// Scripts run only with the nonce; no inline styles (the script sets
	// colours through the CSSOM, which CSP allows); images may also come
	// from https (provider logos of custom providers); the page connects
	// to the API origins only, and submits no forms.
	h.csp = "default-src 'none'; script-src 'nonce-%s'; style-src 'self'; img-src " + api + " data: https:; " +
		"connect-src " + api + "; base-uri 'none'; form-action 'none'; frame-ancestors " + ancestors

	var err error
	h.page, err = template.ParseFS(templates, "ui/index.html")
	if err != nil {
		return nil, fmt.Errorf("connectui: %w", err)
	}
	sum := sha256.New()
	err = fs.WalkDir(static, "ui/static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := static.ReadFile(p)
		if err != nil {
			return err
		}
		s := sha256.Sum256(b)
		sum.Write(s[:])
		ct := mime.TypeByExtension(path.Ext(p))
		if ct == "" {
			ct = "application/octet-stream"
		}
		h.assets[strings.TrimPrefix(p, "ui/static/")] = asset{body: b, contentType: ct, etag: `"` + hex.EncodeToString(s[:8]) + `"`}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("connectui: %w", err)
	}
	h.assetVer = hex.EncodeToString(sum.Sum(nil)[:6])
	return h, nil
}

// origin returns the origin of an absolute http or https URL.
func origin(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return "", fmt.Errorf("%q must be an absolute http or https URL", raw)
	}
	return u.Scheme + "://" + strings.ToLower(u.Host), nil
}

// Register mounts h on mux under prefix, which must start and end with
// "/" (DefaultPath when empty): GET prefix (the page), GET prefix + "ui/..."
// (the assets), and GET prefix without its trailing slash (a redirect to
// the page that keeps the query). The page refers to its assets, and the
// redirect to the page, by relative URLs, so they hold wherever mux itself
// is mounted (under http.StripPrefix, for example).
func (h *Handler) Register(mux *http.ServeMux, prefix string) {
	if prefix == "" {
		prefix = DefaultPath
	}
	mux.HandleFunc("GET "+prefix+"{$}", h.servePage)
	mux.HandleFunc("GET "+prefix+"ui/{asset...}", h.serveAsset)
	if bare := strings.TrimSuffix(prefix, "/"); bare != "" {
		last := path.Base(bare)
		mux.HandleFunc("GET "+bare, func(w http.ResponseWriter, r *http.Request) {
			redirectToDir(w, r, last)
		})
	}
}

// redirectToDir redirects a request for .../name to .../name/ with the same
// query, by a Location relative to the request's own address: the path the
// handler sees may lack the prefix the browser used (http.StripPrefix), and
// http.Redirect would resolve a relative target against that shorter path.
func redirectToDir(w http.ResponseWriter, r *http.Request, name string) {
	loc := "./" + url.PathEscape(name) + "/"
	if r.URL.RawQuery != "" {
		loc += "?" + r.URL.RawQuery
	}
	w.Header().Set("Location", loc)
	w.WriteHeader(http.StatusMovedPermanently)
}

// ServeHTTP serves the page at "/" and the assets at "/ui/...", for a
// Handler mounted with http.StripPrefix.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	switch p := r.URL.Path; {
	case p == "":
		// Mounted with http.StripPrefix("/x", h) and asked for /x: the
		// page's relative asset URLs need /x/.
		if name := requestBase(r); name != "" {
			redirectToDir(w, r, name)
			return
		}
		h.servePage(w, r)
	case p == "/":
		h.servePage(w, r)
	case strings.HasPrefix(p, "/ui/"):
		r2 := r.Clone(r.Context())
		r2.SetPathValue("asset", strings.TrimPrefix(p, "/ui/"))
		h.serveAsset(w, r2)
	default:
		http.NotFound(w, r)
	}
}

// requestBase returns the last segment of the path the client asked for
// (before any http.StripPrefix), or "" when that path ends with "/".
func requestBase(r *http.Request) string {
	u, err := url.ParseRequestURI(r.RequestURI)
	if err != nil || strings.HasSuffix(u.Path, "/") {
		return ""
	}
	b := path.Base(u.Path)
	if b == "/" || b == "." {
		return ""
	}
	return b
}

type pageData struct {
	Nonce          string
	Version        string
	APIURL         string
	AllowedOrigins string
}

func (h *Handler) servePage(w http.ResponseWriter, r *http.Request) {
	var b [18]byte
	_, _ = rand.Read(b[:])
	nonce := base64.RawURLEncoding.EncodeToString(b[:])
	origins, _ := json.Marshal(h.origins)
	var buf bytes.Buffer
	if err := h.page.Execute(&buf, pageData{Nonce: nonce, Version: h.assetVer, APIURL: h.apiURL, AllowedOrigins: string(origins)}); err != nil {
		http.Error(w, "connect UI template failed", http.StatusInternalServerError)
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", "text/html; charset=utf-8")
	hd.Set("Content-Security-Policy", fmt.Sprintf(h.csp, nonce))
	hd.Set("Cache-Control", "no-store")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(buf.Bytes())
}

func (h *Handler) serveAsset(w http.ResponseWriter, r *http.Request) {
	a, ok := h.assets[r.PathValue("asset")]
	if !ok {
		http.NotFound(w, r)
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", a.contentType)
	hd.Set("ETag", a.etag)
	hd.Set("Cache-Control", "public, max-age=300")
	hd.Set("X-Content-Type-Options", "nosniff")
	if match := r.Header.Get("If-None-Match"); match != "" && match == a.etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	_, _ = w.Write(a.body)
}

// Assets returns the names of the UI's assets (served under ui/).
func (h *Handler) Assets() []string {
	names := make([]string, 0, len(h.assets))
	for n := range h.assets {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
