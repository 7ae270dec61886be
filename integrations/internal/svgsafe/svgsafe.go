package svgsafe

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// Namespace is the SVG namespace, the only one whose elements Clean keeps.
const Namespace = "http://www.w3.org/2000/svg"

const (
	xlinkNamespace = "http://www.w3.org/1999/xlink"

	// MaxSize is the largest document Clean reads, in bytes.
	MaxSize = 1 << 20
	// MaxDepth is the deepest nesting of elements Clean reads.
	MaxDepth = 32
)

// ErrNotSVG is returned by Clean for a document whose root element is not
// an SVG <svg>.
var ErrNotSVG = errors.New("svgsafe: the root element is not <svg> of the SVG namespace")

// elements are the elements Clean keeps below the root: shapes, their
// grouping and references, paint servers, and filter primitives that draw
// from the document itself.
var elements = set(
	"g", "defs", "symbol", "use",
	"path", "rect", "circle", "ellipse", "line", "polyline", "polygon",
	"linearGradient", "radialGradient", "stop", "pattern",
	"clipPath", "mask",
	"filter", "feBlend", "feColorMatrix", "feComposite", "feDropShadow", "feFlood",
	"feGaussianBlur", "feMerge", "feMergeNode", "feMorphology", "feOffset",
)

// presentation are the presentation properties: allowed as attributes and
// as declarations of a style attribute.
var presentation = set(
	"clip-path", "clip-rule", "color", "color-interpolation", "color-interpolation-filters",
	"display", "fill", "fill-opacity", "fill-rule", "filter", "flood-color", "flood-opacity",
	"mask", "mask-type", "mix-blend-mode", "opacity", "paint-order", "shape-rendering",
	"stop-color", "stop-opacity", "stroke", "stroke-dasharray", "stroke-dashoffset",
	"stroke-linecap", "stroke-linejoin", "stroke-miterlimit", "stroke-opacity", "stroke-width",
	"transform-origin", "vector-effect", "visibility",
)

// attributes are the other attributes allowed on any kept element:
// identity, geometry, and the attributes of gradients, clipping, masking,
// patterns and filter primitives. href and style are checked by value.
var attributes = set(
	"id", "href", "style", "transform",
	"viewBox", "preserveAspectRatio", "width", "height", "x", "y",
	"d", "pathLength", "cx", "cy", "r", "rx", "ry", "x1", "y1", "x2", "y2", "points",
	"offset", "gradientUnits", "gradientTransform", "spreadMethod", "fx", "fy", "fr",
	"clipPathUnits", "maskUnits", "maskContentUnits",
	"patternUnits", "patternContentUnits", "patternTransform",
	"filterUnits", "primitiveUnits", "in", "in2", "result", "mode", "type", "values",
	"operator", "k1", "k2", "k3", "k4", "stdDeviation", "edgeMode", "dx", "dy", "radius",
)

func set(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

var (
	idRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.:-]{0,127}$`)
	// localRefRE is a reference to a fragment of the document.
	localRefRE = regexp.MustCompile(`^#[A-Za-z_][A-Za-z0-9_.:-]{0,127}$`)
	// urlRE matches every url( of a value, with what it must be: a local
	// reference.
	urlRE      = regexp.MustCompile(`(?i)url\(`)
	localURLRE = regexp.MustCompile(`(?i)^url\(#[A-Za-z_][A-Za-z0-9_.:-]{0,127}\)`)
	// styleValueRE is a plain CSS value: words, numbers, colours,
	// percentages and url(#id) references.
	styleValueRE = regexp.MustCompile(`^[A-Za-z0-9#.,%+ ()_:-]*$`)
)

// Clean returns src rebuilt from the allowed elements and attributes (see
// the package documentation), and a description of each thing it left out.
// Whitespace between elements and namespace declarations are not reported:
// the output always declares the SVG namespace on its root and writes no
// prefix. A clean document comes back byte for byte with nothing dropped.
//
// It fails on a document that is not well-formed XML, is larger than
// MaxSize, nests deeper than MaxDepth, or whose root is not an SVG <svg>
// (ErrNotSVG).
func Clean(src []byte) ([]byte, []string, error) {
	if len(src) > MaxSize {
		return nil, nil, fmt.Errorf("svgsafe: the document is larger than %d bytes", MaxSize)
	}
	c := cleaner{dec: xml.NewDecoder(bytes.NewReader(src))}
	c.dec.Strict = true
	if err := c.run(); err != nil {
		return nil, nil, err
	}
	return c.out.Bytes(), c.dropped, nil
}

type cleaner struct {
	dec     *xml.Decoder
	out     bytes.Buffer
	dropped []string

	depth int // open elements, dropped ones included
	skip  int // open dropped elements
	open  []openElement
	root  int // 0 before the root, 1 inside, 2 after
}

// openElement is a kept element whose end tag is to come; pending while
// its start tag still waits for ">" or "/>".
type openElement struct {
	name    string
	pending bool
}

func (c *cleaner) drop(format string, args ...any) {
	c.dropped = append(c.dropped, fmt.Sprintf(format, args...))
}

func (c *cleaner) run() error {
	for {
		tok, err := c.dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("svgsafe: %w", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if err := c.start(t); err != nil {
				return err
			}
		case xml.EndElement:
			c.end()
		case xml.CharData:
			if c.skip == 0 && len(bytes.TrimSpace(t)) > 0 {
				c.drop("text")
			}
		case xml.Comment:
			if c.skip == 0 {
				c.drop("comment")
			}
		case xml.ProcInst:
			c.drop("processing instruction <?%s?>", t.Target)
		case xml.Directive:
			c.drop("directive <!...>")
		}
	}
	if c.root != 2 {
		return ErrNotSVG
	}
	return nil
}

func inSVG(n xml.Name) bool { return n.Space == Namespace || n.Space == "" }

func (c *cleaner) start(t xml.StartElement) error {
	c.depth++
	if c.depth > MaxDepth {
		return fmt.Errorf("svgsafe: elements nest deeper than %d", MaxDepth)
	}
	if c.skip > 0 {
		c.skip++
		return nil
	}
	switch c.root {
	case 0:
		if t.Name.Local != "svg" || !inSVG(t.Name) {
			return ErrNotSVG
		}
		c.root = 1
		c.out.WriteString(`<svg xmlns="` + Namespace + `"`)
	case 2:
		return errors.New("svgsafe: an element follows the root element")
	default:
		if !inSVG(t.Name) || !elements[t.Name.Local] {
			c.drop("element <%s>", qualified(t.Name))
			c.skip = 1
			return nil
		}
		if top := &c.open[len(c.open)-1]; top.pending {
			c.out.WriteByte('>')
			top.pending = false
		}
		c.out.WriteString("<" + t.Name.Local)
	}
	c.attrs(t)
	c.open = append(c.open, openElement{name: t.Name.Local, pending: true})
	return nil
}

func (c *cleaner) end() {
	c.depth--
	if c.skip > 0 {
		c.skip--
		return
	}
	top := c.open[len(c.open)-1]
	c.open = c.open[:len(c.open)-1]
	if top.pending {
		c.out.WriteString("/>")
	} else {
		c.out.WriteString("</" + top.name + ">")
	}
	if len(c.open) == 0 {
		c.root = 2
	}
}

// attrs writes the allowed attributes of t, each name once.
func (c *cleaner) attrs(t xml.StartElement) {
	seen := make(map[string]bool, len(t.Attr))
	for _, a := range t.Attr {
		if a.Name.Space == "xmlns" || (a.Name.Space == "" && a.Name.Local == "xmlns") {
			continue // namespace declarations: the output declares its own
		}
		name := a.Name.Local
		switch a.Name.Space {
		case "":
		case xlinkNamespace, "xlink":
			if name != "href" {
				name = ""
			}
		default:
			name = ""
		}
		if name == "" || !(attributes[name] || presentation[name]) {
			c.drop("attribute %s of <%s>", qualified(a.Name), t.Name.Local)
			continue
		}
		if seen[name] {
			c.drop("repeated attribute %s of <%s>", name, t.Name.Local)
			continue
		}
		if why := badValue(name, a.Value); why != "" {
			c.drop("attribute %s of <%s>: %s", name, t.Name.Local, why)
			continue
		}
		seen[name] = true
		c.out.WriteString(" " + name + `="`)
		_ = xml.EscapeText(&c.out, []byte(a.Value)) // a bytes.Buffer does not fail
		c.out.WriteByte('"')
	}
}

// badValue says why value cannot be kept for the attribute name, or "".
func badValue(name, value string) string {
	switch name {
	case "href":
		if !localRefRE.MatchString(value) {
			return "not a reference to #id of the document"
		}
		return ""
	case "id":
		if !idRE.MatchString(value) {
			return "not a plain id"
		}
		return ""
	case "style":
		return badStyle(value)
	}
	if strings.ContainsAny(value, `\<>`) {
		return "holds \\, < or >"
	}
	return badURLs(value)
}

// badURLs checks that every url( of value is url(#id).
func badURLs(value string) string {
	for _, loc := range urlRE.FindAllStringIndex(value, -1) {
		if !localURLRE.MatchString(value[loc[0]:]) {
			return "url() not of #id of the document"
		}
	}
	return ""
}

// badStyle checks that every declaration of a style attribute sets a
// presentation property to a plain value.
func badStyle(value string) string {
	for decl := range strings.SplitSeq(value, ";") {
		if strings.TrimSpace(decl) == "" {
			continue
		}
		prop, v, ok := strings.Cut(decl, ":")
		prop, v = strings.TrimSpace(prop), strings.TrimSpace(v)
		if !ok || !presentation[prop] {
			return fmt.Sprintf("style sets %q, not a presentation property", prop)
		}
		if !styleValueRE.MatchString(v) {
			return fmt.Sprintf("style value of %s is not plain", prop)
		}
		if why := badURLs(v); why != "" {
			return "style: " + why
		}
	}
	return ""
}

func qualified(n xml.Name) string {
	if n.Space == "" {
		return n.Local
	}
	return n.Space + ":" + n.Local
}
