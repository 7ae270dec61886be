package mcp

import (
	"bytes"
	"encoding/json"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/embedauth/connect/functions"
)

// emptyObjectSchema is the input schema of an action without input.
func emptyObjectSchema() map[string]any {
	return map[string]any{"type": "object", "properties": map[string]any{}}
}

// inputKey is the one argument of a tool whose action's input is not an
// object: MCP tools take objects, so {"input": value} carries it.
const inputKey = "input"

// actionSchema returns the input schema of an action's tool, from the
// input model of its definition in its JSON Schema document, with every
// reference into the document resolved: inlined, or, for a model that
// refers to itself (a tree), kept as a reference into the "$defs" of the
// tool's schema. wrapped reports that the input is not an object: the
// tool then takes {"input": value}. An action without an input model, or
// whose model the document lacks, takes any object.
func actionSchema(d *functions.Definition) (schema map[string]any, wrapped bool) {
	if d.Input == "" || len(d.JSONSchema) == 0 {
		return emptyObjectSchema(), false
	}
	var doc any
	dec := json.NewDecoder(bytes.NewReader(d.JSONSchema))
	dec.UseNumber()
	if dec.Decode(&doc) != nil {
		return emptyObjectSchema(), false
	}
	root, _ := doc.(map[string]any)
	var model any
	var ptr string
	for _, defs := range []string{"$defs", "definitions"} {
		if m, ok := root[defs].(map[string]any); ok && m[d.Input] != nil {
			model, ptr = m[d.Input], "/"+defs+"/"+escapePointer(d.Input)
			break
		}
	}
	if model == nil {
		return emptyObjectSchema(), false
	}
	r := &resolver{root: doc, names: map[string]string{}, budget: maxSchemaNodes}
	resolved := r.resolve(model, []string{ptr})
	defs := r.collectDefs()
	obj, ok := resolved.(map[string]any)
	if ok && isObjectSchema(obj) {
		obj["type"] = "object"
		if len(defs) > 0 {
			obj["$defs"] = defs
		}
		return obj, false
	}
	out := map[string]any{
		"type":       "object",
		"properties": map[string]any{inputKey: resolved},
		"required":   []any{inputKey},
	}
	if ok {
		if desc, has := obj["description"]; has {
			out["description"] = desc
		}
	}
	if len(defs) > 0 {
		out["$defs"] = defs
	}
	return out, true
}

// isObjectSchema reports whether a schema describes objects only: type
// "object" (or a list of types whose only one other than "null" is
// object; an MCP argument is never null), or no type with object keywords.
func isObjectSchema(s map[string]any) bool {
	switch t := s["type"].(type) {
	case string:
		return t == "object"
	case []any:
		obj := false
		for _, v := range t {
			switch v {
			case "object":
				obj = true
			case "null":
			default:
				return false
			}
		}
		return obj
	case nil:
		_, props := s["properties"]
		_, addl := s["additionalProperties"]
		return props || addl
	}
	return false
}

// maxSchemaNodes bounds the values a resolved schema holds: a document
// whose references fan out (each model referring twice to the next) would
// otherwise grow without end when inlined. Past it, references are kept
// as references into "$defs".
const maxSchemaNodes = 20000

// resolver inlines the references of a schema into one document.
type resolver struct {
	root any
	// names are the "$defs" names of the targets kept as references, by
	// JSON pointer; defs their resolved schemas.
	names map[string]string
	defs  map[string]any
	// budget is how many more values may be built before references stop
	// being inlined.
	budget int
}

// resolve returns a copy of s with its references resolved. stack holds
// the pointers of the targets being inlined: a reference to one of them
// is a cycle.
func (r *resolver) resolve(s any, stack []string) any {
	r.budget--
	switch v := s.(type) {
	case map[string]any:
		if ref, ok := v["$ref"].(string); ok {
			if target, ptr, found := r.lookup(ref); found {
				return r.resolveRef(v, target, ptr, stack)
			}
		}
		out := make(map[string]any, len(v))
		for k, e := range v {
			switch k {
			case "$defs", "definitions", "$schema", "$id":
				// Inlined wherever they are used.
				continue
			}
			out[k] = r.resolve(e, stack)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = r.resolve(e, stack)
		}
		return out
	}
	return s
}

// resolveRef resolves the reference node v, whose target is at ptr.
func (r *resolver) resolveRef(v map[string]any, target any, ptr string, stack []string) any {
	var res any
	if r.budget <= 0 || slices.Contains(stack, ptr) {
		res = map[string]any{"$ref": "#/$defs/" + escapePointer(r.nameOf(ptr))}
	} else {
		res = r.resolve(target, append(stack, ptr))
	}
	if len(v) == 1 {
		return res
	}
	siblings := make(map[string]any, len(v)-1)
	for k, e := range v {
		if k != "$ref" {
			siblings[k] = r.resolve(e, stack)
		}
	}
	if m, ok := res.(map[string]any); ok {
		if _, isRef := m["$ref"]; !isRef {
			clash := false
			for k := range siblings {
				if _, has := m[k]; has {
					clash = true
					break
				}
			}
			if !clash {
				merged := maps.Clone(m)
				maps.Copy(merged, siblings)
				return merged
			}
		}
	}
	siblings["allOf"] = []any{res}
	return siblings
}

// nameOf returns the "$defs" name of a target kept as a reference: the
// last segment of its pointer, made distinct.
func (r *resolver) nameOf(ptr string) string {
	if n, ok := r.names[ptr]; ok {
		return n
	}
	base := ptr[strings.LastIndexByte(ptr, '/')+1:]
	base = strings.ReplaceAll(strings.ReplaceAll(base, "~1", "/"), "~0", "~")
	if base == "" {
		base = "def"
	}
	name := base
	for i := 2; slices.Contains(slices.Collect(maps.Values(r.names)), name); i++ {
		name = base + strconv.Itoa(i)
	}
	r.names[ptr] = name
	return name
}

// collectDefs resolves the targets kept as references, and those they
// keep in turn, into the "$defs" of the tool's schema.
func (r *resolver) collectDefs() map[string]any {
	for {
		var pending []string
		for ptr := range r.names {
			if _, done := r.defs[r.names[ptr]]; !done {
				pending = append(pending, ptr)
			}
		}
		if len(pending) == 0 {
			return r.defs
		}
		if r.defs == nil {
			r.defs = map[string]any{}
		}
		slices.Sort(pending)
		for _, ptr := range pending {
			target, _, _ := r.lookup("#" + ptr)
			r.defs[r.names[ptr]] = r.resolve(target, []string{ptr})
		}
	}
}

// lookup finds the target of a reference to a place in the document ("#"
// and a JSON pointer, possibly %-encoded). Other references (to other
// documents, or to the whole document) are not resolved.
func (r *resolver) lookup(ref string) (target any, ptr string, ok bool) {
	frag, isLocal := strings.CutPrefix(ref, "#")
	if !isLocal || frag == "" || frag[0] != '/' {
		return nil, "", false
	}
	if u, err := url.PathUnescape(frag); err == nil {
		frag = u
	}
	cur := r.root
	for _, seg := range strings.Split(frag[1:], "/") {
		seg = strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case map[string]any:
			next, has := c[seg]
			if !has {
				return nil, "", false
			}
			cur = next
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(c) {
				return nil, "", false
			}
			cur = c[i]
		default:
			return nil, "", false
		}
	}
	return cur, frag, true
}

// escapePointer escapes a JSON pointer segment.
func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
