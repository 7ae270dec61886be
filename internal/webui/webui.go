// Package webui serves the embedded browser pages of the service (the
// connect UI, the operations console): a page rendered from a template
// with a fresh CSP nonce per response, and static assets with ETags,
// addressed relatively so that they work under any prefix.
package webui

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"html/template"
	"io/fs"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strings"
)

// Assets are the static files of a page, by name (their path below the
// directory they were read from).
type Assets struct {
	files map[string]asset
	// Version changes with any file: pages append it to asset URLs so
	// that a new build is fetched anew.
	Version string
	// CacheControl is the Cache-Control of the assets: by default
	// "public, max-age=300". Pages whose modules import one another
	// (whose URLs carry no Version) want "no-cache": revalidated, by
	// ETag, at every load.
	CacheControl string
}

type asset struct {
	body        []byte
	contentType string
	etag        string
}

// ReadAssets reads every file below dir of fsys.
func ReadAssets(fsys fs.FS, dir string) (*Assets, error) {
	a := &Assets{files: map[string]asset{}}
	sum := sha256.New()
	err := fs.WalkDir(fsys, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		s := sha256.Sum256(b)
		sum.Write(s[:])
		ct := mime.TypeByExtension(path.Ext(p))
		if ct == "" {
			ct = "application/octet-stream"
		}
		a.files[strings.TrimPrefix(p, dir+"/")] = asset{body: b, contentType: ct, etag: `"` + hex.EncodeToString(s[:8]) + `"`}
		return nil
	})
	if err != nil {
		return nil, err
	}
	a.Version = hex.EncodeToString(sum.Sum(nil)[:6])
	return a, nil
}

// Names returns the names of the assets.
func (a *Assets) Names() []string {
	out := make([]string, 0, len(a.files))
	for n := range a.files {
		out = append(out, n)
	}
	return out
}

// Size returns the size of the asset name, and whether there is one.
func (a *Assets) Size(name string) (int, bool) {
	f, ok := a.files[name]
	return len(f.body), ok
}

// Serve serves the asset name: 404 when there is none, 304 for a
// matching If-None-Match.
func (a *Assets) Serve(w http.ResponseWriter, r *http.Request, name string) {
	f, ok := a.files[name]
	if !ok {
		http.NotFound(w, r)
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", f.contentType)
	hd.Set("ETag", f.etag)
	cc := a.CacheControl
	if cc == "" {
		cc = "public, max-age=300"
	}
	hd.Set("Cache-Control", cc)
	hd.Set("X-Content-Type-Options", "nosniff")
	if match := r.Header.Get("If-None-Match"); match != "" && match == f.etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	_, _ = w.Write(f.body)
}

// Nonce returns a fresh random CSP nonce.
func Nonce() string {
	var b [18]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// WritePage renders page with data and writes it as an HTML page that
// nothing caches, under the Content-Security-Policy csp.
func WritePage(w http.ResponseWriter, page *template.Template, data any, csp string) {
	var buf bytes.Buffer
	if err := page.Execute(&buf, data); err != nil {
		http.Error(w, "page template failed", http.StatusInternalServerError)
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", "text/html; charset=utf-8")
	hd.Set("Content-Security-Policy", csp)
	hd.Set("Cache-Control", "no-store")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(buf.Bytes())
}

// RedirectToDir redirects a request for .../name to .../name/ with the
// same query, by a Location relative to the request's own address: the
// path the handler sees may lack the prefix the browser used
// (http.StripPrefix), and http.Redirect would resolve a relative target
// against that shorter path.
func RedirectToDir(w http.ResponseWriter, r *http.Request, name string) {
	loc := "./" + url.PathEscape(name) + "/"
	if r.URL.RawQuery != "" {
		loc += "?" + r.URL.RawQuery
	}
	w.Header().Set("Location", loc)
	w.WriteHeader(http.StatusMovedPermanently)
}

// RequestBase returns the last segment of the path the client asked for
// (before any http.StripPrefix), or "" when that path ends with "/".
func RequestBase(r *http.Request) string {
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

// Origin returns the origin of an absolute http or https URL.
func Origin(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return "", fmt.Errorf("%q must be an absolute http or https URL", raw)
	}
	return u.Scheme + "://" + strings.ToLower(u.Host), nil
}
