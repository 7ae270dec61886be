package functions

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/big"
	"net/mail"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// InputProblem is one way an action's input does not fit the input
// schema the action publishes: Path names the value as "input.title" or
// "input.items[0].name"; InstancePath is the same place as a JSON Pointer
// ("/items/0/name", as Ajv reports it in Nango's errors); Keyword is the
// schema keyword that refused it ("type", "required", ...); Message says
// why, in JSON's terms ("expected string, got number"), never in Go's.
type InputProblem struct {
	Path         string `json:"path"`
	InstancePath string `json:"instancePath"`
	Keyword      string `json:"keyword,omitempty"`
	Message      string `json:"message"`
}

// maxInputProblems is the most problems an input check reports.
const maxInputProblems = 20

// maxSchemaDepth bounds the nesting of a check (values and references
// together), so that a schema whose references loop ends.
const maxSchemaDepth = 128

// checkActionInput checks an action's input against the input model of
// its definition (Definition.Input in Definition.JSONSchema, whose
// "$defs" or "definitions" resolve its references). An action without an
// input model, and an absent or null input (the action then gets its
// zero value), pass. The problems are nil when the input fits.
func checkActionInput(d *Definition, input json.RawMessage) ([]InputProblem, error) {
	if d.Input == "" || len(d.JSONSchema) == 0 {
		return nil, nil
	}
	if t := bytes.TrimSpace(input); len(t) == 0 || string(t) == "null" {
		return nil, nil
	}
	var doc any
	if err := decodeNumbers(d.JSONSchema, &doc); err != nil {
		return nil, fmt.Errorf("functions: the JSON schema of the definition: %w", err)
	}
	root, _ := doc.(map[string]any)
	var model any
	for _, defs := range []string{"$defs", "definitions"} {
		if m, ok := root[defs].(map[string]any); ok && m[d.Input] != nil {
			model = m[d.Input]
			break
		}
	}
	if model == nil {
		return nil, nil // nothing to check against
	}
	var v any
	if err := decodeNumbers(input, &v); err != nil {
		return []InputProblem{{Path: "input", InstancePath: "", Keyword: "type", Message: "is not valid JSON"}}, nil
	}
	c := &inputChecker{root: doc, patterns: map[string]*regexp.Regexp{}}
	c.check(model, v, nil, 0)
	return c.problems, nil
}

// decodeNumbers decodes JSON keeping numbers as json.Number.
func decodeNumbers(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err == nil {
		return errors.New("data after the JSON value")
	}
	return nil
}

// inputChecker validates a value against a JSON Schema (draft 2020-12,
// with draft-07's "definitions" and array "items"): type, enum, const,
// properties, required, additionalProperties, patternProperties,
// min/maxProperties, items, prefixItems, min/maxItems, uniqueItems,
// min/maxLength, pattern, format (date-time, date, time, email, uri,
// uuid), contentEncoding base64, minimum, maximum, their exclusive forms,
// multipleOf, allOf, anyOf, oneOf, not, $ref to "#..." JSON Pointers, and
// the boolean schemas. Other keywords are annotations.
type inputChecker struct {
	root     any
	problems []InputProblem
	// patterns are the compiled "pattern" and "patternProperties"
	// expressions (nil for one Go cannot compile), shared with trials.
	patterns map[string]*regexp.Regexp
}

// pattern compiles a schema's regular expression once; nil when Go's
// regexp package cannot (a JavaScript-only construct), which is then not
// enforced.
func (c *inputChecker) pattern(p string) *regexp.Regexp {
	re, ok := c.patterns[p]
	if !ok {
		re, _ = regexp.Compile(p)
		c.patterns[p] = re
	}
	return re
}

// problem records one problem at path.
func (c *inputChecker) problem(path []string, keyword, format string, args ...any) {
	if len(c.problems) >= maxInputProblems {
		return
	}
	c.problems = append(c.problems, InputProblem{Path: dottedPath(path), InstancePath: pointerPath(path),
		Keyword: keyword, Message: fmt.Sprintf(format, args...)})
}

// fits reports whether v fits s, without recording anything.
func (c *inputChecker) fits(s, v any, path []string, depth int) bool {
	return len(c.trial(s, v, path, depth)) == 0
}

// trial returns the problems of v against s without recording them.
func (c *inputChecker) trial(s, v any, path []string, depth int) []InputProblem {
	sub := &inputChecker{root: c.root, patterns: c.patterns}
	sub.check(s, v, path, depth)
	return sub.problems
}

func (c *inputChecker) check(schema, v any, path []string, depth int) {
	if depth > maxSchemaDepth {
		return
	}
	switch s := schema.(type) {
	case bool:
		if !s {
			c.problem(path, "false schema", "is not allowed")
		}
		return
	case map[string]any:
		c.object(s, v, path, depth)
	}
}

func (c *inputChecker) object(s map[string]any, v any, path []string, depth int) {
	if ref, ok := s["$ref"].(string); ok {
		if target, ok := c.resolve(ref); ok {
			c.check(target, v, path, depth+1)
		}
	}
	if t, ok := s["type"]; ok {
		if want := schemaTypeList(t); len(want) > 0 && !slices.ContainsFunc(want, func(w string) bool { return typeMatches(w, v) }) {
			c.problem(path, "type", "expected %s, got %s", strings.Join(want, " or "), jsonKind(v))
			return // the other keywords would only repeat it
		}
	}
	if e, ok := s["enum"].([]any); ok && !slices.ContainsFunc(e, func(x any) bool { return jsonEqual(x, v) }) {
		c.problem(path, "enum", "must be one of %s", listValues(e))
	}
	if cv, ok := s["const"]; ok && !jsonEqual(cv, v) {
		c.problem(path, "const", "must be %s", showValue(cv))
	}
	switch x := v.(type) {
	case map[string]any:
		c.properties(s, x, path, depth)
	case []any:
		c.items(s, x, path, depth)
	case string:
		c.text(s, x, path)
	case json.Number:
		c.number(s, x, path)
	}
	if all, ok := s["allOf"].([]any); ok {
		for _, sub := range all {
			c.check(sub, v, path, depth+1)
		}
	}
	if anyOf, ok := s["anyOf"].([]any); ok {
		c.alternatives("anyOf", anyOf, v, path, depth)
	}
	if oneOf, ok := s["oneOf"].([]any); ok {
		c.alternatives("oneOf", oneOf, v, path, depth)
	}
	if not, ok := s["not"]; ok && c.fits(not, v, path, depth+1) {
		c.problem(path, "not", "must not match the schema it matches")
	}
}

// alternatives checks anyOf (at least one fits) and oneOf (exactly one).
// When none fits and all alternatives but one refuse the value's type,
// the problems of that one are reported: {"anyOf":[X,{"type":"null"}]}
// reports what X says.
func (c *inputChecker) alternatives(keyword string, alts []any, v any, path []string, depth int) {
	var passing int
	var close [][]InputProblem
	here := dottedPath(path)
	for _, a := range alts {
		ps := c.trial(a, v, path, depth+1)
		if len(ps) == 0 {
			passing++
			continue
		}
		if !slices.ContainsFunc(ps, func(p InputProblem) bool { return p.Path == here && p.Keyword == "type" }) {
			close = append(close, ps)
		}
	}
	switch {
	case passing == 0 && len(close) == 1:
		for _, p := range close[0] {
			if len(c.problems) < maxInputProblems {
				c.problems = append(c.problems, p)
			}
		}
	case passing == 0:
		c.problem(path, keyword, "does not match any of the allowed schemas")
	case passing > 1 && keyword == "oneOf":
		c.problem(path, keyword, "matches more than one of the schemas of which it must match exactly one")
	}
}

func (c *inputChecker) properties(s map[string]any, o map[string]any, path []string, depth int) {
	at := func(k string) []string { return append(slices.Clip(path), k) }
	if req, ok := s["required"].([]any); ok {
		for _, r := range req {
			if k, ok := r.(string); ok {
				if _, present := o[k]; !present {
					c.problem(at(k), "required", "is required")
				}
			}
		}
	}
	props, _ := s["properties"].(map[string]any)
	var patterns []*regexp.Regexp
	var patternSchemas []any
	if pp, ok := s["patternProperties"].(map[string]any); ok {
		for _, p := range slices.Sorted(maps.Keys(pp)) {
			if re := c.pattern(p); re != nil {
				patterns, patternSchemas = append(patterns, re), append(patternSchemas, pp[p])
			}
		}
	}
	additional, hasAdditional := s["additionalProperties"]
	for _, k := range slices.Sorted(maps.Keys(o)) {
		matched := false
		if ps, ok := props[k]; ok {
			matched = true
			c.check(ps, o[k], at(k), depth+1)
		}
		for i, re := range patterns {
			if re.MatchString(k) {
				matched = true
				c.check(patternSchemas[i], o[k], at(k), depth+1)
			}
		}
		if !matched && hasAdditional {
			if b, ok := additional.(bool); ok && !b {
				c.problem(at(k), "additionalProperties", "is not allowed")
			} else {
				c.check(additional, o[k], at(k), depth+1)
			}
		}
	}
	if n, ok := intKeyword(s, "minProperties"); ok && len(o) < n {
		c.problem(path, "minProperties", "must have at least %d properties", n)
	}
	if n, ok := intKeyword(s, "maxProperties"); ok && len(o) > n {
		c.problem(path, "maxProperties", "must have at most %d properties", n)
	}
}

func (c *inputChecker) items(s map[string]any, a []any, path []string, depth int) {
	at := func(i int) []string { return append(slices.Clip(path), strconv.Itoa(i)) }
	prefix, _ := s["prefixItems"].([]any)
	rest, hasRest := s["items"]
	if tuple, ok := rest.([]any); ok { // draft-07: items as a list
		prefix = tuple
		rest, hasRest = s["additionalItems"]
	}
	for i, e := range a {
		switch {
		case i < len(prefix):
			c.check(prefix[i], e, at(i), depth+1)
		case hasRest:
			c.check(rest, e, at(i), depth+1)
		}
	}
	if n, ok := intKeyword(s, "minItems"); ok && len(a) < n {
		c.problem(path, "minItems", "must have at least %d items", n)
	}
	if n, ok := intKeyword(s, "maxItems"); ok && len(a) > n {
		c.problem(path, "maxItems", "must have at most %d items", n)
	}
	if u, _ := s["uniqueItems"].(bool); u {
		seen := make(map[string]int, len(a))
		for i, e := range a {
			k := canonicalJSON(e)
			if j, dup := seen[k]; dup {
				c.problem(at(i), "uniqueItems", "repeats item %d", j)
				continue
			}
			seen[k] = i
		}
	}
}

// formatNames describe the formats checked, for messages.
var formatNames = map[string]string{
	"date-time": "a date-time (RFC 3339, such as 2026-05-01T12:00:00Z)",
	"date":      "a date (YYYY-MM-DD)",
	"time":      "a time (RFC 3339, such as 12:00:00Z)",
	"email":     "an email address",
	"uri":       "an absolute URI",
	"uuid":      "a UUID",
}

var uuidInput = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

func (c *inputChecker) text(s map[string]any, v string, path []string) {
	n := utf8.RuneCountInString(v)
	if m, ok := intKeyword(s, "minLength"); ok && n < m {
		c.problem(path, "minLength", "must be at least %d characters long", m)
	}
	if m, ok := intKeyword(s, "maxLength"); ok && n > m {
		c.problem(path, "maxLength", "must be at most %d characters long", m)
	}
	if p, ok := s["pattern"].(string); ok {
		if re := c.pattern(p); re != nil && !re.MatchString(v) {
			c.problem(path, "pattern", "must match the pattern %s", p)
		}
	}
	if f, ok := s["format"].(string); ok {
		var bad bool
		switch f {
		case "date-time":
			_, err := time.Parse(time.RFC3339Nano, v)
			bad = err != nil
		case "date":
			_, err := time.Parse(time.DateOnly, v)
			bad = err != nil
		case "time":
			_, err := time.Parse("15:04:05Z07:00", v)
			_, err2 := time.Parse("15:04:05.999999999Z07:00", v)
			bad = err != nil && err2 != nil
		case "email":
			a, err := mail.ParseAddress(v)
			bad = err != nil || a.Address != v
		case "uri":
			u, err := url.Parse(v)
			bad = err != nil || u.Scheme == ""
		case "uuid":
			bad = !uuidInput.MatchString(v)
		}
		if bad {
			c.problem(path, "format", "must be %s", formatNames[f])
		}
	}
	if e, _ := s["contentEncoding"].(string); e == "base64" {
		if _, err := base64.StdEncoding.DecodeString(v); err != nil {
			c.problem(path, "contentEncoding", "must be base64")
		}
	}
}

func (c *inputChecker) number(s map[string]any, v json.Number, path []string) {
	x, ok := new(big.Rat).SetString(string(v))
	if !ok {
		return
	}
	bound := func(k string) (*big.Rat, bool) {
		n, ok := s[k].(json.Number)
		if !ok {
			return nil, false
		}
		return new(big.Rat).SetString(string(n))
	}
	if b, ok := bound("minimum"); ok && x.Cmp(b) < 0 {
		c.problem(path, "minimum", "must be at least %s", s["minimum"])
	}
	if b, ok := bound("maximum"); ok && x.Cmp(b) > 0 {
		c.problem(path, "maximum", "must be at most %s", s["maximum"])
	}
	if b, ok := bound("exclusiveMinimum"); ok && x.Cmp(b) <= 0 {
		c.problem(path, "exclusiveMinimum", "must be greater than %s", s["exclusiveMinimum"])
	}
	if b, ok := bound("exclusiveMaximum"); ok && x.Cmp(b) >= 0 {
		c.problem(path, "exclusiveMaximum", "must be less than %s", s["exclusiveMaximum"])
	}
	if b, ok := bound("multipleOf"); ok && b.Sign() > 0 && !new(big.Rat).Quo(x, b).IsInt() {
		c.problem(path, "multipleOf", "must be a multiple of %s", s["multipleOf"])
	}
}

// resolve finds the schema of a reference within the document: "#" and
// "#/JSON/Pointer" (with ~0 and ~1 escapes and %-encoding).
func (c *inputChecker) resolve(ref string) (any, bool) {
	frag, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil, false // another document: not resolved
	}
	if u, err := url.PathUnescape(frag); err == nil {
		frag = u
	}
	cur := c.root
	if frag == "" {
		return cur, true
	}
	if !strings.HasPrefix(frag, "/") {
		return nil, false // an anchor
	}
	for _, tok := range strings.Split(frag[1:], "/") {
		tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
		switch x := cur.(type) {
		case map[string]any:
			if cur, ok = x[tok]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			cur = x[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// schemaTypeList reads "type": a name or a list of names.
func schemaTypeList(t any) []string {
	switch x := t.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, e := range x {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// typeMatches reports whether v is of the JSON Schema type t.
func typeMatches(t string, v any) bool {
	switch t {
	case "integer":
		n, ok := v.(json.Number)
		if !ok {
			return false
		}
		r, ok := new(big.Rat).SetString(string(n))
		return ok && r.IsInt()
	case "number":
		_, ok := v.(json.Number)
		return ok
	}
	return jsonKind(v) == t
}

// jsonKind names the JSON type of a decoded value.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "unknown"
}

// jsonEqual compares decoded JSON values, numbers by value.
func jsonEqual(a, b any) bool {
	na, aok := a.(json.Number)
	nb, bok := b.(json.Number)
	if aok || bok {
		if !aok || !bok {
			return false
		}
		ra, ok1 := new(big.Rat).SetString(string(na))
		rb, ok2 := new(big.Rat).SetString(string(nb))
		return ok1 && ok2 && ra.Cmp(rb) == 0
	}
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !jsonEqual(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !jsonEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a, b)
}

// canonicalJSON writes a decoded JSON value so that values jsonEqual
// calls equal are written alike: object keys sorted, numbers as exact
// fractions.
func canonicalJSON(v any) string {
	var b strings.Builder
	var write func(v any)
	write = func(v any) {
		switch x := v.(type) {
		case json.Number:
			if r, ok := new(big.Rat).SetString(string(x)); ok {
				b.WriteString("n" + r.RatString())
				return
			}
			b.WriteString("n" + string(x))
		case string:
			b.WriteString(strconv.Quote(x))
		case []any:
			b.WriteByte('[')
			for _, e := range x {
				write(e)
				b.WriteByte(',')
			}
			b.WriteByte(']')
		case map[string]any:
			b.WriteByte('{')
			for _, k := range slices.Sorted(maps.Keys(x)) {
				b.WriteString(strconv.Quote(k) + ":")
				write(x[k])
				b.WriteByte(',')
			}
			b.WriteByte('}')
		default:
			fmt.Fprint(&b, x) // nil, true, false
		}
	}
	write(v)
	return b.String()
}

// showValue writes a schema's value for a message, shortened.
func showValue(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "the allowed value"
	}
	if len(b) > 100 {
		return string(b[:97]) + "..."
	}
	return string(b)
}

// listValues writes the values of an enum for a message, at most ten.
func listValues(vs []any) string {
	var parts []string
	for i, v := range vs {
		if i == 10 {
			parts = append(parts, fmt.Sprintf("(%d more)", len(vs)-10))
			break
		}
		parts = append(parts, showValue(v))
	}
	return strings.Join(parts, ", ")
}

func intKeyword(s map[string]any, k string) (int, bool) {
	n, ok := s[k].(json.Number)
	if !ok {
		return 0, false
	}
	i, err := n.Int64()
	if err != nil || i < 0 || i > 1<<31 {
		return 0, false
	}
	return int(i), true
}

var identRE = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$]*$`)

// dottedPath writes a path under "input": input.title, input.items[0],
// input["a.b"].
func dottedPath(path []string) string {
	var b strings.Builder
	b.WriteString("input")
	for _, p := range path {
		switch {
		case isIndex(p):
			b.WriteString("[" + p + "]")
		case identRE.MatchString(p):
			b.WriteString("." + p)
		default:
			b.WriteString("[" + strconv.Quote(p) + "]")
		}
	}
	return b.String()
}

// isIndex reports whether a path element is an array index. Object keys
// that look like one ("0") are written as indexes too: the message reads
// the same.
func isIndex(p string) bool {
	if p == "" {
		return false
	}
	for _, r := range p {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// pointerPath writes a path as a JSON Pointer: "/items/0/name".
func pointerPath(path []string) string {
	var b strings.Builder
	for _, p := range path {
		b.WriteString("/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(p))
	}
	return b.String()
}

// decodeProblem turns an error of encoding/json decoding an action's
// input into its Go type (after the input passed the schema check, or for
// an action without one) into an InputProblem: the JSON path encoding/json
// names (without array indexes) and JSON's terms, never Go's types or
// fields.
func decodeProblem(err error) InputProblem {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		var path []string
		if te.Field != "" {
			path = strings.Split(te.Field, ".")
		}
		want := goKindName(te.Type)
		if n, ok := strings.CutPrefix(te.Value, "number "); ok && (want == "integer" || want == "number") {
			return InputProblem{Path: dottedPath(path), InstancePath: pointerPath(path), Keyword: "type",
				Message: fmt.Sprintf("expected %s, got %s, which is out of range", want, n)}
		}
		got, _, _ := strings.Cut(te.Value, " ")
		if got == "bool" {
			got = "boolean"
		}
		return InputProblem{Path: dottedPath(path), InstancePath: pointerPath(path), Keyword: "type",
			Message: fmt.Sprintf("expected %s, got %s", want, got)}
	case errors.As(err, &se):
		return InputProblem{Path: "input", Keyword: "type", Message: "is not valid JSON"}
	}
	return InputProblem{Path: "input", Message: "does not fit the action's input"}
}

// goKindName names in JSON's terms what a Go type decodes from.
func goKindName(t reflect.Type) string {
	if t == nil {
		return "a value"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice, reflect.Array:
		if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 {
			return "string"
		}
		return "array"
	case reflect.Map, reflect.Struct:
		return "object"
	}
	return "a value"
}
