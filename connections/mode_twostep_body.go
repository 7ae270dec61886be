package connections

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/embedauth/connect/integrations"
)

// evalTree fills the string leaves of a parameter tree (templates) from
// vars; other values stay as they are. path names the leaf in errors.
func evalTree(t integrations.ParamTree, vars integrations.TemplateVars, path string) (integrations.ParamTree, error) {
	out := make(integrations.ParamTree, 0, len(t))
	for _, e := range t {
		v, err := evalTreeValue(e.Value, vars, path+e.Key)
		if err != nil {
			return nil, err
		}
		out = append(out, integrations.ParamEntry{Key: e.Key, Value: v})
	}
	return out, nil
}

func evalTreeValue(v any, vars integrations.TemplateVars, path string) (any, error) {
	switch x := v.(type) {
	case string:
		s, err := integrations.Interpolate(x, vars)
		if err != nil {
			var mv *integrations.MissingValueError
			if errors.As(err, &mv) {
				return nil, &RefreshError{Code: CodeInvalidCredentials, Description: fmt.Sprintf("the token request parameter %q needs %s", path, strings.Join(mv.Names, ", ")), Err: err}
			}
			return nil, &RefreshError{Description: fmt.Sprintf("the token request parameter %q cannot be built", path), Err: err}
		}
		return s, nil
	case integrations.ParamTree:
		return evalTree(x, vars, path+".")
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			r, err := evalTreeValue(e, vars, path)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	}
	return v, nil
}

// xmlBody writes a filled parameter tree as an XML document the way
// Nango's builder does: each key an element (in order), a key starting
// with "$" an attribute of its parent, a list repeated elements, scalars
// as text; indented by two spaces, no XML declaration.
func xmlBody(t integrations.ParamTree) []byte {
	var b bytes.Buffer
	writeXMLElements(&b, t, 0)
	return b.Bytes()
}

func writeXMLElements(b *bytes.Buffer, t integrations.ParamTree, depth int) {
	for _, e := range t {
		if strings.HasPrefix(e.Key, "$") {
			continue
		}
		items := []any{e.Value}
		if l, ok := e.Value.([]any); ok {
			items = l
		}
		for _, v := range items {
			writeXMLElement(b, e.Key, v, depth)
		}
	}
}

func writeXMLElement(b *bytes.Buffer, name string, v any, depth int) {
	indent := strings.Repeat("  ", depth)
	b.WriteString(indent + "<" + name)
	sub, isTree := v.(integrations.ParamTree)
	children := false
	for _, e := range sub {
		if k, ok := strings.CutPrefix(e.Key, "$"); ok {
			b.WriteString(" " + k + `="` + xmlAttrEscape(scalarText(e.Value)) + `"`)
		} else {
			children = true
		}
	}
	b.WriteString(">")
	switch {
	case isTree && children:
		b.WriteString("\n")
		writeXMLElements(b, sub, depth+1)
		b.WriteString(indent)
	case !isTree:
		_ = xml.EscapeText(b, []byte(scalarText(v)))
	}
	b.WriteString("</" + name + ">\n")
}

// scalarText is a scalar's text as JavaScript's String() writes it.
func scalarText(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case float64:
		b, _ := json.Marshal(x)
		return string(b)
	}
	return fmt.Sprint(v)
}

func xmlAttrEscape(s string) string {
	r := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "\t", "&#x9;", "\n", "&#xA;", "\r", "&#xD;")
	return r.Replace(s)
}

// maxXMLDepth bounds the nesting of an XML token response.
const maxXMLDepth = 64

// parseXMLAnswer reads an XML token response as nested objects: the root
// element is the one key of the result; an element with only text is its
// text, one with children or attributes an object (attributes as "@_NAME",
// text as "#text"); repeated elements make a list.
func parseXMLAnswer(b []byte) (map[string]any, error) {
	dec := xml.NewDecoder(bytes.NewReader(b))
	dec.Strict = true
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		if se, ok := tok.(xml.StartElement); ok {
			v, err := parseXMLElement(dec, se, 1)
			if err != nil {
				return nil, err
			}
			for {
				if _, err := dec.Token(); err == io.EOF {
					break
				} else if err != nil {
					return nil, err
				}
			}
			return map[string]any{se.Name.Local: v}, nil
		}
	}
}

func parseXMLElement(dec *xml.Decoder, se xml.StartElement, depth int) (any, error) {
	if depth > maxXMLDepth {
		return nil, errors.New("the XML nests too deeply")
	}
	obj := map[string]any{}
	for _, a := range se.Attr {
		if a.Name.Space == "xmlns" || a.Name.Local == "xmlns" {
			continue
		}
		obj["@_"+a.Name.Local] = a.Value
	}
	var text strings.Builder
	hasChild := false
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			v, err := parseXMLElement(dec, t, depth+1)
			if err != nil {
				return nil, err
			}
			hasChild = true
			k := t.Name.Local
			switch prev := obj[k].(type) {
			case nil:
				obj[k] = v
			case []any:
				obj[k] = append(prev, v)
			default:
				obj[k] = []any{prev, v}
			}
		case xml.CharData:
			text.Write(t)
		case xml.EndElement:
			s := strings.TrimSpace(text.String())
			if !hasChild && len(obj) == 0 {
				return s, nil
			}
			if s != "" {
				obj["#text"] = s
			}
			return obj, nil
		}
	}
}
