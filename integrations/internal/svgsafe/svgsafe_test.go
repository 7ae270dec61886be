package svgsafe

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"testing"
)

const head = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24">`

func TestCleanKeepsShapesAndGradients(t *testing.T) {
	t.Parallel()
	in := head + `<defs><linearGradient id="g0" x1="0%" x2="100%"><stop offset="0" stop-color="#fff" stop-opacity=".5"/></linearGradient>` +
		`<filter id="f" filterUnits="userSpaceOnUse" color-interpolation-filters="sRGB"><feGaussianBlur stdDeviation="2" result="b"/><feBlend in="SourceGraphic" in2="b" mode="normal"/></filter>` +
		`<mask id="m" style="mask-type:alpha" maskUnits="userSpaceOnUse"><rect width="24" height="24" fill="#fff"/></mask></defs>` +
		`<g fill="url(#g0)" mask="url(#m)" filter="url(#f)" transform="translate(1 1)"><path d="M0 0h24v24H0z" fill-rule="evenodd"/>` +
		`<circle cx="1" cy="1" r="1"/><use href="#g0"/></g></svg>`
	out, dropped, err := Clean([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(dropped) != 0 {
		t.Errorf("dropped %q from a clean document", dropped)
	}
	if string(out) != in {
		t.Errorf("Clean changed a clean document:\n got %s\nwant %s", out, in)
	}
}

func TestCleanDrops(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		in, want string
		dropped  []string
	}{
		"script": {
			in:      head + `<script>alert(1)</script><path d="M0 0"/></svg>`,
			want:    head + `<path d="M0 0"/></svg>`,
			dropped: []string{"element <http://www.w3.org/2000/svg:script>"},
		},
		"foreignObject and its content": {
			in:      head + `<foreignObject><body xmlns="http://www.w3.org/1999/xhtml"><iframe src="https://x"/></body></foreignObject></svg>`,
			want:    `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24"/>`,
			dropped: []string{"element <http://www.w3.org/2000/svg:foreignObject>"},
		},
		"event attribute": {
			in:      head + `<path d="M0 0" onclick="alert(1)" onload="x()"/></svg>`,
			want:    head + `<path d="M0 0"/></svg>`,
			dropped: []string{"attribute onclick of <path>", "attribute onload of <path>"},
		},
		"event attribute on the root": {
			in:      `<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)" viewBox="0 0 1 1"/>`,
			want:    `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 1 1"/>`,
			dropped: []string{"attribute onload of <svg>"},
		},
		"external href": {
			in:      head + `<use href="https://evil.example/x.svg#a"/><use xlink:href="javascript:alert(1)"/></svg>`,
			want:    head + `<use/><use/></svg>`,
			dropped: []string{"attribute href of <use>: not a reference to #id of the document", "attribute href of <use>: not a reference to #id of the document"},
		},
		"xlink href made local href": {
			in:   `<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink"><use xlink:href="#a"/></svg>`,
			want: `<svg xmlns="http://www.w3.org/2000/svg"><use href="#a"/></svg>`,
		},
		"href and xlink:href": {
			in:      head + `<use href="#a" xlink:href="#b"/></svg>`,
			want:    head + `<use href="#a"/></svg>`,
			dropped: []string{"repeated attribute href of <use>"},
		},
		"external url in a paint": {
			in:      head + `<path fill="url(https://evil.example/p.svg#g)" stroke="URL(#ok) red" d="M0 0"/></svg>`,
			want:    head + `<path stroke="URL(#ok) red" d="M0 0"/></svg>`,
			dropped: []string{"attribute fill of <path>: url() not of #id of the document"},
		},
		"css escape": {
			in:      head + `<path fill="u\72l(https://x)"/></svg>`,
			want:    head + `<path/></svg>`,
			dropped: []string{`attribute fill of <path>: holds \, < or >`},
		},
		"style with a url": {
			in:      head + `<path style="fill:url(https://x)"/><path style="fill:url(x)"/><path style="mask-type:alpha;fill:url(#a)"/></svg>`,
			want:    head + `<path/><path/><path style="mask-type:alpha;fill:url(#a)"/></svg>`,
			dropped: []string{"attribute style of <path>: style value of fill is not plain", "attribute style of <path>: style: url() not of #id of the document"},
		},
		"style with another property": {
			in:      head + `<path style="background-image:x"/><path style="fill:'x'"/></svg>`,
			want:    head + `<path/><path/></svg>`,
			dropped: []string{`attribute style of <path>: style sets "background-image", not a presentation property`, "attribute style of <path>: style value of fill is not plain"},
		},
		"style element, image, text, animation": {
			in: head + `<style>@import url(https://x)</style><image href="https://x/a.png"/><text>hi</text>` +
				`<path d="M0 0"><animate attributeName="href" to="javascript:alert(1)"/><set attributeName="onclick"/></path></svg>`,
			want: head + `<path d="M0 0"/></svg>`,
			dropped: []string{"element <http://www.w3.org/2000/svg:style>", "element <http://www.w3.org/2000/svg:image>", "element <http://www.w3.org/2000/svg:text>",
				"element <http://www.w3.org/2000/svg:animate>", "element <http://www.w3.org/2000/svg:set>"},
		},
		"feImage": {
			in:      head + `<filter id="f"><feImage href="https://x/a.png"/></filter></svg>`,
			want:    head + `<filter id="f"/></svg>`,
			dropped: []string{"element <http://www.w3.org/2000/svg:feImage>"},
		},
		"other namespaces": {
			in: `<svg xmlns="http://www.w3.org/2000/svg" xmlns:h="http://www.w3.org/1999/xhtml" xmlns:s="http://www.w3.org/2000/svg" xml:space="preserve">` +
				`<h:script>alert(1)</h:script><s:path d="M0 0"/><g xmlns="http://www.w3.org/1999/xhtml"><script/></g></svg>`,
			want: `<svg xmlns="http://www.w3.org/2000/svg"><path d="M0 0"/></svg>`,
			dropped: []string{"attribute http://www.w3.org/XML/1998/namespace:space of <svg>", "element <http://www.w3.org/1999/xhtml:script>",
				"element <http://www.w3.org/1999/xhtml:g>"},
		},
		"declaration, comment, doctype, text": {
			in:      `<?xml version="1.0"?><!DOCTYPE svg><svg xmlns="http://www.w3.org/2000/svg"><!-- hi --><title>T</title>x</svg>`,
			want:    `<svg xmlns="http://www.w3.org/2000/svg"/>`,
			dropped: []string{"processing instruction <?xml?>", "directive <!...>", "comment", "element <http://www.w3.org/2000/svg:title>", "text"},
		},
		"nested svg": {
			in:      head + `<svg><path d="M0 0"/></svg></svg>`,
			want:    `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24"/>`,
			dropped: []string{"element <http://www.w3.org/2000/svg:svg>"},
		},
		"bad id": {
			in:      head + `<g id="a b"/></svg>`,
			want:    head + `<g/></svg>`,
			dropped: []string{"attribute id of <g>: not a plain id"},
		},
		"escaped values stay escaped": {
			in:   head + `<path d="M0 0&amp;&quot;&#9;"/></svg>`,
			want: head + `<path d="M0 0&amp;&#34;&#x9;"/></svg>`,
		},
		"no namespace is SVG": {
			in:   `<svg viewBox="0 0 1 1"><path d="M0 0"/></svg>`,
			want: `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 1 1"><path d="M0 0"/></svg>`,
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			out, dropped, err := Clean([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != tc.want {
				t.Errorf("Clean:\n got %s\nwant %s", out, tc.want)
			}
			if strings.Join(dropped, "\n") != strings.Join(tc.dropped, "\n") {
				t.Errorf("dropped:\n got %q\nwant %q", dropped, tc.dropped)
			}
			again, dropped, err := Clean(out)
			if err != nil || !bytes.Equal(again, out) || len(dropped) != 0 {
				t.Errorf("Clean of the output = %s, %q, %v; want it unchanged", again, dropped, err)
			}
		})
	}
}

func TestCleanRefuses(t *testing.T) {
	t.Parallel()
	deep := head + strings.Repeat("<g>", MaxDepth) + strings.Repeat("</g>", MaxDepth) + "</svg>"
	for name, in := range map[string]string{
		"empty":              "",
		"html root":          `<html><svg/></html>`,
		"xhtml svg":          `<svg xmlns="http://www.w3.org/1999/xhtml"/>`,
		"not closed":         head + `<path d="M0 0">`,
		"mismatched":         head + `<g></path></svg>`,
		"two roots":          `<svg/><svg/>`,
		"undefined entity":   `<!DOCTYPE svg [<!ENTITY x "y">]><svg>&x;</svg>`,
		"too deep":           deep,
		"too large":          head + strings.Repeat(" ", MaxSize) + "</svg>",
		"other encoding":     `<?xml version="1.0" encoding="ISO-8859-1"?><svg/>`,
		"text only":          `hello`,
		"svg in a namespace": `<x:svg xmlns:x="urn:x"/>`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if out, _, err := Clean([]byte(in)); err == nil {
				t.Errorf("Clean = %s, want an error", out)
			}
		})
	}
	if _, _, err := Clean([]byte(`<html/>`)); !errors.Is(err, ErrNotSVG) {
		t.Errorf("Clean(<html/>) error = %v, want ErrNotSVG", err)
	}
}

// checkSafe fails t unless svg, the output of Clean, holds only allowed
// elements and attributes, with local references only. It parses the
// document on its own rather than trusting Clean's bookkeeping.
func checkSafe(t *testing.T, svg []byte) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(svg))
	dec.Strict = true
	depth := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("output does not parse: %v\n%s", err, svg)
		}
		switch tk := tok.(type) {
		case xml.StartElement:
			depth++
			if tk.Name.Space != Namespace {
				t.Fatalf("element %v outside the SVG namespace: %s", tk.Name, svg)
			}
			if (depth == 1) != (tk.Name.Local == "svg") || (depth > 1 && !elements[tk.Name.Local]) {
				t.Fatalf("element <%s> at depth %d: %s", tk.Name.Local, depth, svg)
			}
			for _, a := range tk.Attr {
				n := a.Name.Local
				if depth == 1 && a.Name.Space == "" && n == "xmlns" {
					continue
				}
				if a.Name.Space != "" || !(attributes[n] || presentation[n]) || strings.HasPrefix(strings.ToLower(n), "on") {
					t.Fatalf("attribute %v: %s", a.Name, svg)
				}
				v := strings.ToLower(a.Value)
				if n == "href" && !strings.HasPrefix(v, "#") {
					t.Fatalf("href %q: %s", a.Value, svg)
				}
				for i := strings.Index(v, "url("); i >= 0; i = strings.Index(v, "url(") {
					if !strings.HasPrefix(v[i:], "url(#") {
						t.Fatalf("attribute %s = %q: %s", n, a.Value, svg)
					}
					v = v[i+4:]
				}
			}
		case xml.EndElement:
			depth--
		case xml.CharData:
			t.Fatalf("text %q in %s", tk, svg)
		default:
			t.Fatalf("token %T in %s", tk, svg)
		}
	}
}

func FuzzClean(f *testing.F) {
	f.Add([]byte(head + `<path d="M0 0" fill="url(#a)"/></svg>`))
	f.Add([]byte(head + `<script>alert(1)</script><foreignObject/><use xlink:href="https://x"/><path onload="x" style="fill:red"/></svg>`))
	f.Add([]byte(`<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink"><defs><linearGradient id="a"><stop offset="0"/></linearGradient></defs><use xlink:href="#a"/></svg>`))
	f.Add([]byte(`<?xml version="1.0"?><!DOCTYPE svg><svg><!-- c --><g xmlns="urn:x"><path/></g><mask style="mask-type:alpha"/></svg>`))
	f.Add([]byte(`<svg><path fill="u\72l(x)" stroke="URL(#a) url(x)"/></svg>`))
	f.Fuzz(func(t *testing.T, in []byte) {
		out, dropped, err := Clean(in)
		if err != nil {
			return
		}
		checkSafe(t, out)
		again, dropped2, err := Clean(out)
		if err != nil {
			t.Fatalf("Clean of its own output failed: %v\n%s", err, out)
		}
		if !bytes.Equal(again, out) || len(dropped2) != 0 {
			t.Fatalf("Clean is not idempotent:\n in %q\nout %s\nagain %s (dropped %q, first %q)", in, out, again, dropped2, dropped)
		}
	})
}
