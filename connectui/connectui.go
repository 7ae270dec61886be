package connectui

import (
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"path"
	"slices"
	"strings"

	"github.com/embedauth/connect/internal/webui"
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
	page    *template.Template
	apiURL  string
	origins []string // allowed API origins besides 'self'
	csp     string   // with %s for the nonce
	assets  *webui.Assets
}

// New checks cfg and builds the Handler.
func New(cfg Config) (*Handler, error) {
	h := &Handler{}
	if cfg.APIURL != "" {
		o, err := webui.Origin(cfg.APIURL)
		if err != nil {
			return nil, fmt.Errorf("connectui: Config.APIURL: %w", err)
		}
		h.apiURL = strings.TrimRight(cfg.APIURL, "/")
		h.origins = append(h.origins, o)
	}
	for _, a := range cfg.AllowedAPIOrigins {
		o, err := webui.Origin(a)
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
	if h.assets, err = webui.ReadAssets(static, "ui/static"); err != nil {
		return nil, fmt.Errorf("connectui: %w", err)
	}
	return h, nil
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
			webui.RedirectToDir(w, r, last)
		})
	}
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
		if name := webui.RequestBase(r); name != "" {
			webui.RedirectToDir(w, r, name)
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

type pageData struct {
	Nonce          string
	Version        string
	APIURL         string
	AllowedOrigins string
}

func (h *Handler) servePage(w http.ResponseWriter, r *http.Request) {
	nonce := webui.Nonce()
	origins, _ := json.Marshal(h.origins)
	webui.WritePage(w, h.page, pageData{Nonce: nonce, Version: h.assets.Version, APIURL: h.apiURL, AllowedOrigins: string(origins)},
		fmt.Sprintf(h.csp, nonce))
}

func (h *Handler) serveAsset(w http.ResponseWriter, r *http.Request) {
	h.assets.Serve(w, r, r.PathValue("asset"))
}

// Assets returns the names of the UI's assets (served under ui/).
func (h *Handler) Assets() []string {
	names := h.assets.Names()
	slices.Sort(names)
	return names
}
