package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// entry is an icon of a set under one of its names, built (read and
// sanitised) the first time a provider matches it.
type entry struct {
	set, name string
	build     func() (*icon, error)

	built bool
	ic    *icon
	err   error
}

func (e *entry) get() (*icon, error) {
	if !e.built {
		e.ic, e.err = e.build()
		e.built = true
	}
	return e.ic, e.err
}

// index finds a set's icons by slug; several icons may answer a slug, best
// first.
type index struct {
	byKey   map[string][]*entry
	byShort map[string][]*entry // products by their name without the brand's
	skipped map[string]string   // "set:name" -> why it cannot be used
}

func newIndex() *index {
	return &index{byKey: map[string][]*entry{}, byShort: map[string][]*entry{}, skipped: map[string]string{}}
}

// brands are the prefixes of SVG Logos names of a brand's products
// ("google-gmail") that the product is also known without ("Gmail").
var brands = []string{"adobe-", "amazon-", "apple-", "aws-", "google-", "meta-", "microsoft-"}

// addShort files e under the slug of name without its brand prefix, for
// display names only: a provider shown as "Gmail" gets google-gmail.
func (x *index) addShort(name string, e *entry) {
	for _, b := range brands {
		if rest, ok := strings.CutPrefix(name, b); ok {
			if k := slug(rest); k != "" && !slices.Contains(x.byShort[k], e) {
				x.byShort[k] = append(x.byShort[k], e)
			}
		}
	}
}

// add files e under the slug of name, after the entries already there,
// once.
func (x *index) add(name string, e *entry) {
	k := slug(name)
	if k == "" || slices.Contains(x.byKey[k], e) {
		return
	}
	x.byKey[k] = append(x.byKey[k], e)
}

// lookup returns the first usable icon filed under key (then, with short,
// under the short names), remembering why the ones before it could not be
// used.
func (x *index) lookup(key string, short bool) *icon {
	list := x.byKey[key]
	if short {
		list = append(slices.Clip(list), x.byShort[key]...)
	}
	for _, e := range list {
		if why, ok := otherBrands[e.set+":"+e.name]; ok {
			x.skipped[e.set+":"+e.name] = "another brand of the same name: " + why
			continue
		}
		ic, err := e.get()
		if err == nil {
			return ic
		}
		x.skipped[e.set+":"+e.name] = err.Error()
	}
	return nil
}

// skippedList is what lookups left out, sorted.
func skippedList(xs ...*index) []string {
	var out []string
	for _, x := range xs {
		for k, why := range x.skipped {
			out = append(out, k+": "+why)
		}
	}
	sort.Strings(out)
	return out
}

// otherBrands are icons whose name is also the name of a provider of
// another brand; they are never used.
var otherBrands = map[string]string{
	"logos:close":           "not known to be Close the CRM",
	"logos:envoy":           "the Envoy proxy, not Envoy the workplace platform",
	"logos:envoy-icon":      "the Envoy proxy, not Envoy the workplace platform",
	"logos:luma":            "Luma AI, not Luma the event platform",
	"logos:luma-icon":       "Luma AI, not Luma the event platform",
	"logos:stitch":          "Stitch the data pipeline, not Google's Stitch",
	"simple-icons:aspire":   "Microsoft's .NET Aspire, not Aspire",
	"simple-icons:firefish": "the Firefish social network, not Firefish the recruitment software",
}

// iconifyFile is an Iconify JSON icon set (icons.json).
type iconifyFile struct {
	Prefix  string                 `json:"prefix"`
	Width   float64                `json:"width"`
	Height  float64                `json:"height"`
	Icons   map[string]iconifyIcon `json:"icons"`
	Aliases map[string]struct {
		Parent string `json:"parent"`
		Rotate int    `json:"rotate"`
		HFlip  bool   `json:"hFlip"`
		VFlip  bool   `json:"vFlip"`
	} `json:"aliases"`
}

type iconifyIcon struct {
	Body   string   `json:"body"`
	Width  *float64 `json:"width"`
	Height *float64 `json:"height"`
	Left   float64  `json:"left"`
	Top    float64  `json:"top"`
	Hidden bool     `json:"hidden"`
	Rotate int      `json:"rotate"`
	HFlip  bool     `json:"hFlip"`
	VFlip  bool     `json:"vFlip"`
}

const setLogos = "logos"

// loadLogos indexes SVG Logos by name: a name and its "-icon" mark (the
// square one) share a slug, the mark first; hidden (retired) icons and
// transformed aliases are left out.
func loadLogos(dir string) (*index, error) {
	var f iconifyFile
	if err := readJSON(filepath.Join(dir, "icons.json"), &f); err != nil {
		return nil, err
	}
	if f.Prefix != setLogos {
		return nil, fmt.Errorf("%s: prefix %q, want %q", dir, f.Prefix, setLogos)
	}
	if f.Width == 0 {
		f.Width = 16 // Iconify's default
	}
	if f.Height == 0 {
		f.Height = 16
	}
	x := newIndex()
	entries := map[string]*entry{}
	names := make([]string, 0, len(f.Icons))
	for name, ic := range f.Icons {
		if ic.Hidden {
			continue
		}
		entries[name] = &entry{set: setLogos, name: name, build: func() (*icon, error) { return buildIconify(name, ic, f.Width, f.Height) }}
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names { // marks first
		if base, ok := strings.CutSuffix(name, "-icon"); ok {
			x.add(base, entries[name])
		}
	}
	for _, name := range names {
		x.add(name, entries[name])
	}
	for _, name := range names { // marks first
		if base, ok := strings.CutSuffix(name, "-icon"); ok {
			x.addShort(base, entries[name])
		}
	}
	for _, name := range names {
		x.addShort(name, entries[name])
	}
	aliases := make([]string, 0, len(f.Aliases))
	for a := range f.Aliases {
		aliases = append(aliases, a)
	}
	sort.Strings(aliases)
	for _, a := range aliases {
		al := f.Aliases[a]
		if e, ok := entries[al.Parent]; ok && al.Rotate == 0 && !al.HFlip && !al.VFlip {
			x.add(a, e)
		}
	}
	return x, nil
}

// buildIconify makes a standalone SVG of an Iconify icon: its body in an
// <svg> of its own width, height and viewBox.
func buildIconify(name string, ic iconifyIcon, defW, defH float64) (*icon, error) {
	if ic.Rotate != 0 || ic.HFlip || ic.VFlip {
		return nil, errors.New("rotated or flipped")
	}
	w, h := defW, defH
	if ic.Width != nil {
		w = *ic.Width
	}
	if ic.Height != nil {
		h = *ic.Height
	}
	if w <= 0 || h <= 0 {
		return nil, fmt.Errorf("size %vx%v", w, h)
	}
	src := `<svg xmlns="http://www.w3.org/2000/svg" width="` + num(w) + `" height="` + num(h) +
		`" viewBox="` + num(ic.Left) + " " + num(ic.Top) + " " + num(w) + " " + num(h) + `">` + ic.Body + `</svg>`
	svg, err := clean([]byte(src))
	if err != nil {
		return nil, err
	}
	return &icon{set: setLogos, name: name, svg: svg, wide: !strings.HasSuffix(name, "-icon") && w > 1.5*h}, nil
}

// simpleIcon is an entry of simple-icons' data/simple-icons.json.
type simpleIcon struct {
	Title   string `json:"title"`
	Slug    string `json:"slug"`
	Hex     string `json:"hex"`
	License *struct {
		Type string `json:"type"`
	} `json:"license"`
	Aliases struct {
		Aka []string `json:"aka"`
		Dup []struct {
			Title string `json:"title"`
		} `json:"dup"`
		Loc map[string]string `json:"loc"`
	} `json:"aliases"`
}

const setSimple = "simple-icons"

var hexRE = regexp.MustCompile(`^[0-9A-Fa-f]{6}$`)

// loadSimpleIcons indexes simple-icons by slug, then by title, then by
// the titles of its aliases, each level after the one before.
func loadSimpleIcons(dir string) (*index, error) {
	var list []simpleIcon
	if err := readJSON(filepath.Join(dir, "data", "simple-icons.json"), &list); err != nil {
		return nil, err
	}
	x := newIndex()
	entries := make([]*entry, len(list))
	for i, si := range list {
		if si.Slug == "" {
			si.Slug = slug(si.Title)
		}
		entries[i] = &entry{set: setSimple, name: si.Slug, build: func() (*icon, error) { return buildSimple(dir, si) }}
	}
	for _, e := range entries {
		x.add(e.name, e)
	}
	for i, si := range list {
		x.add(si.Title, entries[i])
	}
	for i, si := range list {
		for _, a := range si.Aliases.Aka {
			x.add(a, entries[i])
		}
		for _, d := range si.Aliases.Dup {
			x.add(d.Title, entries[i])
		}
		langs := make([]string, 0, len(si.Aliases.Loc))
		for l := range si.Aliases.Loc {
			langs = append(langs, l)
		}
		sort.Strings(langs)
		for _, l := range langs {
			x.add(si.Aliases.Loc[l], entries[i])
		}
	}
	return x, nil
}

// buildSimple makes the SVG of a simple-icons icon: its path in its brand
// colour on the 24x24 grid. An icon whose own licence is not CC0-1.0 is
// refused.
func buildSimple(dir string, si simpleIcon) (*icon, error) {
	if si.License != nil && si.License.Type != "CC0-1.0" {
		return nil, fmt.Errorf("licence %s, not CC0-1.0", si.License.Type)
	}
	if !hexRE.MatchString(si.Hex) {
		return nil, fmt.Errorf("colour %q", si.Hex)
	}
	data, err := os.ReadFile(filepath.Join(dir, "icons", si.Slug+".svg"))
	if err != nil {
		return nil, err
	}
	d, err := pathData(data)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString(`<svg xmlns="http://www.w3.org/2000/svg" width="24" height="24" viewBox="0 0 24 24"><path fill="#` + strings.ToLower(si.Hex) + `" d="`)
	_ = xml.EscapeText(&b, []byte(d))
	b.WriteString(`"/></svg>`)
	svg, err := clean(b.Bytes())
	if err != nil {
		return nil, err
	}
	return &icon{set: setSimple, name: si.Slug, svg: svg}, nil
}

// pathData returns the d of the one <path> of a simple-icons file.
func pathData(svg []byte) (string, error) {
	dec := xml.NewDecoder(bytes.NewReader(svg))
	dec.Strict = true
	var d []string
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", err
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "path" {
			for _, a := range se.Attr {
				if a.Name.Local == "d" {
					d = append(d, a.Value)
				}
			}
		}
	}
	if len(d) != 1 {
		return "", fmt.Errorf("%d paths, want 1", len(d))
	}
	return d[0], nil
}
