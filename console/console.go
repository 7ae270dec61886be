package console

import (
	"embed"
	"fmt"
	"html/template"
	"net/http"
	"slices"
	"strings"

	"github.com/embedauth/connect/internal/webui"
)

//go:embed ui/index.html
var templates embed.FS

//go:embed ui/static
var static embed.FS

// DefaultPath is where connect.Service's Handler mounts the console.
const DefaultPath = "/console/"

// Config configures the console. The zero value serves a console that
// calls the API at the parent of its own address: mounted at
// https://h/x/console/, it calls https://h/x.
type Config struct {
	// APIURL is the absolute base URL of the API the console calls, such
	// as "https://connect.example.com/api", when it is not the parent of
	// the console's address. The page's Content-Security-Policy lets it
	// connect there and nowhere else.
	APIURL string
}

// Handler serves the console: the page at its root and its assets under
// ui/. Create it with New.
type Handler struct {
	page   *template.Template
	apiURL string
	csp    string
	assets *webui.Assets
}

// New checks cfg and builds the Handler.
func New(cfg Config) (*Handler, error) {
	h := &Handler{}
	api := "'self'"
	if cfg.APIURL != "" {
		o, err := webui.Origin(cfg.APIURL)
		if err != nil {
			return nil, fmt.Errorf("console: Config.APIURL: %w", err)
		}
		h.apiURL = strings.TrimRight(cfg.APIURL, "/")
		api += " " + o
	}
	// Scripts are the console's own modules; no inline script or style
	// (colours go through the CSSOM); provider logos may come from any
	// https host (a host's logo base URL); the page talks to the API
	// only, submits no forms and is shown in no frame (clickjacking of
	// its destructive buttons).
	h.csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src " + api + " data: https:; " +
		"connect-src " + api + "; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
	var err error
	if h.page, err = template.ParseFS(templates, "ui/index.html"); err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	if h.assets, err = webui.ReadAssets(static, "ui/static"); err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	// The modules import one another by URLs without the version:
	// revalidated at every load, so that an upgrade is never half seen.
	h.assets.CacheControl = "no-cache"
	return h, nil
}

// Register mounts h on mux under prefix, which must start and end with
// "/" (DefaultPath when empty): GET prefix (the page), GET prefix +
// "ui/..." (the assets) and GET prefix without its slash (a redirect to
// the page). The page refers to its assets by relative URLs, so they hold
// wherever mux itself is mounted.
func (h *Handler) Register(mux *http.ServeMux, prefix string) {
	if prefix == "" {
		prefix = DefaultPath
	}
	mux.HandleFunc("GET "+prefix+"{$}", h.servePage)
	mux.HandleFunc("GET "+prefix+"ui/{asset...}", func(w http.ResponseWriter, r *http.Request) {
		h.assets.Serve(w, r, r.PathValue("asset"))
	})
	if bare := strings.TrimSuffix(prefix, "/"); bare != "" {
		last := bare[strings.LastIndexByte(bare, '/')+1:]
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
		if name := webui.RequestBase(r); name != "" {
			webui.RedirectToDir(w, r, name)
			return
		}
		h.servePage(w, r)
	case p == "/":
		h.servePage(w, r)
	case strings.HasPrefix(p, "/ui/"):
		h.assets.Serve(w, r, strings.TrimPrefix(p, "/ui/"))
	default:
		http.NotFound(w, r)
	}
}

type pageData struct {
	Version string
	APIURL  string
}

func (h *Handler) servePage(w http.ResponseWriter, r *http.Request) {
	webui.WritePage(w, h.page, pageData{Version: h.assets.Version, APIURL: h.apiURL}, h.csp)
}

// Assets returns the names of the console's assets (served under ui/),
// sorted.
func (h *Handler) Assets() []string {
	names := h.assets.Names()
	slices.Sort(names)
	return names
}

// AssetSize returns the size in bytes of the asset name.
func (h *Handler) AssetSize(name string) int {
	n, _ := h.assets.Size(name)
	return n
}
