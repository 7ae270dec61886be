package functions

import (
	"bytes"
	"cmp"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/embedauth/connect/store"
)

// JSONSchemaer is a type that describes itself: SchemaOf uses the schema
// it returns instead of deriving one. JSONSchema is called on the type's
// zero value (through a pointer when it has a pointer receiver) and must
// return a JSON object.
type JSONSchemaer interface {
	JSONSchema() json.RawMessage
}

// SchemaDialect is the $schema of the documents ModelsSchema builds: the
// JSON Schema draft 2020-12.
const SchemaDialect = "https://json-schema.org/draft/2020-12/schema"

// SchemaOf returns the JSON Schema (draft 2020-12) of the Go type of v,
// describing the JSON that encoding/json makes of its values. v only
// carries the type: SchemaOf(Issue{}) or, for a type with costly zero
// values, SchemaOfType(reflect.TypeFor[Issue]()).
//
// The rules:
//
//   - a struct is {"type":"object"} with "properties" named as
//     encoding/json names them (json tags; `json:"-"` and unexported
//     fields skipped; embedded structs flattened, with encoding/json's
//     rules for names given twice) in field order, and "required" listing
//     the fields without omitempty or omitzero that are not pointers nor
//     reached through an embedded pointer;
//   - string, bool, integers and floats are "string", "boolean",
//     "integer" and "number"; a field with the ",string" option is a
//     "string"; json.Number is a "number";
//   - time.Time is a string of format date-time; []byte a string with
//     contentEncoding base64; json.RawMessage and interfaces (any) are {};
//     another json.Marshaler is {} (its JSON is unknown) and an
//     encoding.TextMarshaler is a "string";
//   - slices are arrays with "items"; arrays too, with minItems and
//     maxItems set to their length; a nil slice, encoded as null, is not
//     allowed for;
//   - maps with string, integer or TextMarshaler keys are objects with
//     "additionalProperties";
//   - a pointer is the schema of what it points to, made nullable:
//     "type" gains "null" ({"type":["string","null"]}), or, for schemas
//     without a type, {"anyOf":[schema,{"type":"null"}]};
//   - a type implementing JSONSchemaer is described by its JSONSchema;
//   - a named type met again while it is being described (a recursive
//     type) is a {"$ref":"#/$defs/Name"} to its schema in the root's
//     "$defs", named after the type. When the root type itself is
//     recursive, the root holds its schema and "$defs" a copy of it under
//     its name, so that the references resolve.
//
// Channels, functions and complex numbers, which encoding/json cannot
// encode, are errors naming the field, as are maps with other keys.
func SchemaOf(v any) (json.RawMessage, error) {
	t := reflect.TypeOf(v)
	if t == nil {
		return nil, errors.New("functions: SchemaOf(nil): want a value of the type to describe")
	}
	return SchemaOfType(t)
}

// SchemaOfType returns the JSON Schema of t, as SchemaOf does.
func SchemaOfType(t reflect.Type) (json.RawMessage, error) {
	if t == nil {
		return nil, errors.New("functions: SchemaOfType(nil): want a type")
	}
	g := newSchemaGen()
	s, err := g.root(t, "")
	if err != nil {
		return nil, err
	}
	return json.Marshal(s)
}

// ModelType names a Go type as a model, for ModelsOf:
// ModelType{Name: "Issue", Type: reflect.TypeFor[Issue]()}.
type ModelType struct {
	Name string
	Type reflect.Type
}

// ModelsOf returns a Model per type, in order, with its JSON Schema
// derived as SchemaOf does. The names must be distinct, of ASCII letters,
// digits, '_', '-' and '.' (a sync's models must also pass
// ValidModelName: see CheckSyncModel). Recursive types are described
// once for all the models, named after the model whose type they are or
// else after the Go type (with a "_2" suffix, "_3", ... when the name is
// taken); each model's schema holds in its "$defs" the definitions it
// refers to, so that it stands on its own, and ModelsSchema gathers them
// in one document.
func ModelsOf(types ...ModelType) ([]Model, error) {
	g := newSchemaGen()
	seen := make(map[string]bool, len(types))
	for _, mt := range types {
		switch {
		case !validDefName(mt.Name):
			return nil, fmt.Errorf("functions: model name %q must be letters, digits, '_', '-' and '.'", mt.Name)
		case seen[mt.Name]:
			return nil, fmt.Errorf("functions: model %q is given twice", mt.Name)
		case mt.Type == nil:
			return nil, fmt.Errorf("functions: model %q has no Type", mt.Name)
		}
		seen[mt.Name] = true
		g.reserved[mt.Name] = true
	}
	for _, mt := range types {
		if _, ok := g.names[mt.Type]; !ok {
			g.names[mt.Type] = mt.Name
			g.taken[mt.Name] = mt.Type
		}
	}
	models := make([]Model, 0, len(types))
	for _, mt := range types {
		s, err := g.root(mt.Type, mt.Name)
		if err != nil {
			return nil, err
		}
		b, err := json.Marshal(s)
		if err != nil {
			return nil, fmt.Errorf("functions: model %q: %w", mt.Name, err)
		}
		models = append(models, Model{Name: mt.Name, Schema: b})
	}
	return models, nil
}

// ModelsSchema returns one JSON Schema document describing the models, as
// Nango's json_schema of a function does: {"$schema": SchemaDialect,
// "$defs": {Name: Schema, ...}}, the models in order. The "$defs" of each
// model's schema (see ModelsOf) move to the document's "$defs", after the
// models, sorted by name: a definition given by several models must be
// the same in each, and one named like a model must be that model's
// schema. An empty Schema stands for {}. The names must be distinct, of
// ASCII letters, digits, '_', '-' and '.'; each schema must be a JSON
// object.
func ModelsSchema(models ...Model) (json.RawMessage, error) {
	byName := make(map[string]json.RawMessage, len(models))
	defs := make(schemaObject, 0, len(models))
	hoisted := map[string]json.RawMessage{}
	from := map[string]string{} // hoisted definition -> the model it came from
	for _, m := range models {
		switch {
		case !validDefName(m.Name):
			return nil, fmt.Errorf("functions: model name %q must be letters, digits, '_', '-' and '.'", m.Name)
		case byName[m.Name] != nil:
			return nil, fmt.Errorf("functions: model %q is given twice", m.Name)
		}
		body, nested, err := splitDefs(m.Schema)
		if err != nil {
			return nil, fmt.Errorf("functions: the schema of model %q: %w", m.Name, err)
		}
		byName[m.Name] = body
		defs = append(defs, schemaMember{m.Name, body})
		for _, d := range nested {
			if prev, ok := hoisted[d.Key]; ok {
				if !bytes.Equal(prev, d.Value.(json.RawMessage)) {
					return nil, fmt.Errorf("functions: the definition %q differs between models %q and %q", d.Key, from[d.Key], m.Name)
				}
				continue
			}
			hoisted[d.Key], from[d.Key] = d.Value.(json.RawMessage), m.Name
		}
	}
	for _, name := range slices.Sorted(maps.Keys(hoisted)) {
		if body, ok := byName[name]; ok {
			if !bytes.Equal(body, hoisted[name]) {
				return nil, fmt.Errorf("functions: the definition %q of model %q is not the schema of model %q", name, from[name], name)
			}
			continue
		}
		defs = append(defs, schemaMember{name, hoisted[name]})
	}
	return json.Marshal(schemaObject{{"$schema", SchemaDialect}, {"$defs", defs}})
}

// splitDefs returns a schema, compacted, without its top-level "$defs",
// and the definitions of that "$defs", compacted, in order.
func splitDefs(schema json.RawMessage) (json.RawMessage, schemaObject, error) {
	if len(bytes.TrimSpace(schema)) == 0 {
		return json.RawMessage(`{}`), nil, nil
	}
	top, err := decodeObjectMembers(schema)
	if err != nil {
		return nil, nil, err
	}
	var defs schemaObject
	body := make(schemaObject, 0, len(top))
	for _, m := range top {
		if m.Key != "$defs" {
			body = append(body, m)
			continue
		}
		if defs, err = decodeObjectMembers(m.Value.(json.RawMessage)); err != nil {
			return nil, nil, fmt.Errorf("$defs: %w", err)
		}
	}
	b, err := json.Marshal(body)
	if err != nil {
		return nil, nil, err
	}
	return b, defs, nil
}

// decodeObjectMembers returns the members of a JSON object in order, each
// value a compacted json.RawMessage.
func decodeObjectMembers(b []byte) (schemaObject, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("not a JSON object")
	}
	var out schemaObject
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("not JSON: %w", err)
		}
		key := tok.(string) // object keys are strings
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("not JSON: %w", err)
		}
		if seen[key] {
			return nil, fmt.Errorf("the key %q is given twice", key)
		}
		seen[key] = true
		var c bytes.Buffer
		if err := json.Compact(&c, v); err != nil {
			return nil, err
		}
		out = append(out, schemaMember{key, json.RawMessage(c.Bytes())})
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	if _, err := dec.Token(); err == nil {
		return nil, errors.New("data after the JSON object")
	}
	return out, nil
}

// maxModelName is the most characters of a model name.
const maxModelName = 255

var modelNameRE = regexp.MustCompile(`^[A-Z][A-Za-z0-9_]*$`)

// defNameRE matches the names ModelsOf and ModelsSchema accept: those of
// ValidModelName, and also those of the models Nango generates for
// actions ("ActionInput_create-issue"), all of which a $ref holds as is.
var defNameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

func validDefName(name string) bool { return defNameRE.MatchString(name) }

// ValidModelName reports whether name can name a model: an ASCII capital
// letter, then letters, digits and '_', at most 255 characters
// (^[A-Z][A-Za-z0-9_]*$).
func ValidModelName(name string) bool {
	return len(name) <= maxModelName && modelNameRE.MatchString(name)
}

// CodeInvalidModel is the code of the errors of CheckSyncModel.
const CodeInvalidModel = "invalid_model"

// CheckSyncModel checks that m can be a sync's model: a valid name
// (ValidModelName), and a schema that is a JSON object describing objects
// (its "type", if any, is "object") with an "id" property of type
// "string", "number" or "integer" (or a list of those, without "null"),
// since every record needs an id. It returns an ErrInvalid *store.Error
// of code invalid_model saying what is missing.
func CheckSyncModel(m Model) error {
	bad := func(format string, args ...any) error {
		return store.Errorf(store.ErrInvalid, CodeInvalidModel, "model %q: "+format, append([]any{m.Name}, args...)...)
	}
	if !ValidModelName(m.Name) {
		return bad("the name must match ^[A-Z][A-Za-z0-9_]*$ and have at most %d characters", maxModelName)
	}
	var s struct {
		Type       json.RawMessage            `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(m.Schema, &s); err != nil || len(bytes.TrimSpace(m.Schema)) == 0 || m.Schema[schemaFirstNonSpace(m.Schema)] != '{' {
		return bad("the schema is not a JSON object")
	}
	if s.Type != nil {
		if types, ok := schemaTypes(s.Type); !ok || !slices.Equal(types, []string{"object"}) {
			return bad("the schema describes %s, not objects", s.Type)
		}
	}
	raw, ok := s.Properties["id"]
	if !ok {
		return bad(`the schema has no "id" property: every record needs an id`)
	}
	var id struct {
		Type json.RawMessage `json:"type"`
	}
	if err := json.Unmarshal(raw, &id); err != nil || id.Type == nil {
		return bad(`the "id" property has no type (want "string" or "number")`)
	}
	types, ok := schemaTypes(id.Type)
	if !ok || len(types) == 0 {
		return bad(`the "id" property's type %s is not "string" or "number"`, id.Type)
	}
	for _, t := range types {
		switch t {
		case "string", "number", "integer":
		default:
			return bad(`the "id" property's type %s is not "string" or "number"`, id.Type)
		}
	}
	return nil
}

func schemaFirstNonSpace(b []byte) int {
	return len(b) - len(bytes.TrimLeft(b, " \t\r\n"))
}

// schemaTypes reads a schema's "type": a string or a list of strings.
func schemaTypes(raw json.RawMessage) ([]string, bool) {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}, true
	}
	var many []string
	if json.Unmarshal(raw, &many) == nil {
		return many, true
	}
	return nil, false
}

// schemaObject is a JSON object whose members keep their order when encoded.
type schemaObject []schemaMember

type schemaMember struct {
	Key   string
	Value any
}

// MarshalJSON encodes the members in order.
func (o schemaObject) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(m.Key)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		v, err := json.Marshal(m.Value)
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

var (
	jsonSchemaerType  = reflect.TypeFor[JSONSchemaer]()
	timeType          = reflect.TypeFor[time.Time]()
	rawMessageType    = reflect.TypeFor[json.RawMessage]()
	numberType        = reflect.TypeFor[json.Number]()
	marshalerType     = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
)

// schemaGen derives schemas. One generator serves every model of a
// document, so that recursive types get one name each.
type schemaGen struct {
	// names are the $defs names given to types: recursive ones, and the
	// root types of models.
	names map[reflect.Type]string
	// taken are the names in use, and reserved the models' names.
	taken    map[string]reflect.Type
	reserved map[string]bool
	// building holds the types being described, outermost first.
	building []reflect.Type
	// defs are the schemas of the recursive types, by name, and defRefs
	// the names each refers to.
	defs    map[string]any
	defRefs map[string]map[string]bool
	// refs collects the names referred to while each type of building
	// (and the root, first) is described.
	refs []map[string]bool
}

func newSchemaGen() *schemaGen {
	return &schemaGen{
		names:    map[reflect.Type]string{},
		taken:    map[string]reflect.Type{},
		reserved: map[string]bool{},
		defs:     map[string]any{},
		defRefs:  map[string]map[string]bool{},
	}
}

// root describes a root type with the $defs it needs. where names it in
// errors: a model name, or "" for the type's name.
func (g *schemaGen) root(t reflect.Type, where string) (any, error) {
	if where == "" {
		where = t.String()
	}
	g.refs = []map[string]bool{{}}
	s, err := g.gen(t, where, true)
	if err != nil {
		return nil, err
	}
	// The root is described in full even when it is recursive.
	if name, ok := g.names[t]; ok && g.defs[name] != nil {
		if r, isRef := s.(schemaObject); isRef && len(r) == 1 && r[0].Key == "$ref" {
			s = g.defs[name]
		}
	}
	used := g.refs[0]
	for changed := true; changed; {
		changed = false
		for name := range used {
			for n := range g.defRefs[name] {
				if !used[n] {
					used[n], changed = true, true
				}
			}
		}
	}
	if len(used) == 0 {
		return s, nil
	}
	defs := make(schemaObject, 0, len(used))
	for _, name := range slices.Sorted(maps.Keys(used)) {
		defs = append(defs, schemaMember{name, g.defs[name]})
	}
	o, ok := s.(schemaObject)
	if !ok { // a JSONSchemaer's schema: it cannot refer to ours
		return s, nil
	}
	return append(slices.Clip(o), schemaMember{"$defs", defs}), nil
}

// schemaRecursible reports whether a type can refer to itself: a named
// composite type.
func schemaRecursible(t reflect.Type) bool {
	if t.Name() == "" {
		return false
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Slice, reflect.Array, reflect.Map, reflect.Pointer:
		return true
	}
	return false
}

// ref returns a reference to the definition of t, naming it if needed.
func (g *schemaGen) ref(t reflect.Type) schemaObject {
	name, ok := g.names[t]
	if !ok {
		base := schemaDefName(t)
		name = base
		for n := 2; g.reserved[name] || g.taken[name] != nil; n++ {
			name = base + "_" + strconv.Itoa(n)
		}
		g.names[t], g.taken[name] = name, t
	}
	for _, r := range g.refs {
		r[name] = true
	}
	return schemaObject{{"$ref", "#/$defs/" + name}}
}

// schemaDefName is a type's name with what a $defs name cannot hold replaced by
// '_' (generic types: "Page[pkg.Item]" is "Page_pkg_Item_").
func schemaDefName(t reflect.Type) string {
	return strings.Map(func(r rune) rune {
		if r < 0x80 && (unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_') {
			return r
		}
		return '_'
	}, t.Name())
}

// gen describes t; where names it in errors (a path such as
// "Issue.Labels[]").
func (g *schemaGen) gen(t reflect.Type, where string, root bool) (any, error) {
	if schemaRecursible(t) {
		if name, ok := g.names[t]; ok && g.defs[name] != nil {
			return g.ref(t), nil
		}
		if slices.Contains(g.building, t) {
			return g.ref(t), nil
		}
		g.building = append(g.building, t)
		g.refs = append(g.refs, map[string]bool{})
		s, err := g.describe(t, where)
		collected := g.refs[len(g.refs)-1]
		g.building, g.refs = g.building[:len(g.building)-1], g.refs[:len(g.refs)-1]
		if err != nil {
			return nil, err
		}
		if name, ok := g.names[t]; ok && collected[name] { // it refers to itself, maybe through others
			g.defs[name], g.defRefs[name] = s, collected
			if root {
				return s, nil
			}
			return g.ref(t), nil
		}
		return s, nil
	}
	return g.describe(t, where)
}

// describe describes t without the recursion bookkeeping.
func (g *schemaGen) describe(t reflect.Type, where string) (any, error) {
	if t.Kind() == reflect.Pointer {
		s, err := g.gen(t.Elem(), where, false)
		if err != nil {
			return nil, err
		}
		return schemaNullable(s), nil
	}
	if t.Kind() != reflect.Interface {
		if s, ok, err := schemaCustom(t, where); ok || err != nil {
			return s, err
		}
	}
	switch {
	case t == timeType:
		return schemaObject{{"type", "string"}, {"format", "date-time"}}, nil
	case t == rawMessageType:
		return schemaObject{}, nil
	case t == numberType:
		return schemaObject{{"type", "number"}}, nil
	case schemaImplements(t, marshalerType):
		return schemaObject{}, nil
	case schemaImplements(t, textMarshalerType):
		return schemaObject{{"type", "string"}}, nil
	}
	switch t.Kind() {
	case reflect.Bool:
		return schemaObject{{"type", "boolean"}}, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return schemaObject{{"type", "integer"}}, nil
	case reflect.Float32, reflect.Float64:
		return schemaObject{{"type", "number"}}, nil
	case reflect.String:
		return schemaObject{{"type", "string"}}, nil
	case reflect.Interface:
		return schemaObject{}, nil
	case reflect.Slice:
		if e := t.Elem(); e.Kind() == reflect.Uint8 && !schemaImplements(e, marshalerType) && !schemaImplements(e, textMarshalerType) {
			return schemaObject{{"type", "string"}, {"contentEncoding", "base64"}}, nil
		}
		items, err := g.gen(t.Elem(), where+"[]", false)
		if err != nil {
			return nil, err
		}
		return schemaObject{{"type", "array"}, {"items", items}}, nil
	case reflect.Array:
		items, err := g.gen(t.Elem(), where+"[]", false)
		if err != nil {
			return nil, err
		}
		return schemaObject{{"type", "array"}, {"items", items}, {"minItems", t.Len()}, {"maxItems", t.Len()}}, nil
	case reflect.Map:
		switch k := t.Key(); k.Kind() {
		case reflect.String, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		default:
			if !schemaImplements(k, textMarshalerType) {
				return nil, fmt.Errorf("functions: schema of %s: map key type %s is not a string, an integer or an encoding.TextMarshaler", where, k)
			}
		}
		values, err := g.gen(t.Elem(), where+"[]", false)
		if err != nil {
			return nil, err
		}
		return schemaObject{{"type", "object"}, {"additionalProperties", values}}, nil
	case reflect.Struct:
		return g.structSchema(t, where)
	}
	return nil, fmt.Errorf("functions: schema of %s: encoding/json cannot encode a %s", where, t)
}

// schemaImplements reports whether t or *t implements the interface it.
func schemaImplements(t, it reflect.Type) bool {
	return t.Implements(it) || (t.Kind() != reflect.Pointer && reflect.PointerTo(t).Implements(it))
}

// schemaCustom returns the schema of a JSONSchemaer type.
func schemaCustom(t reflect.Type, where string) (s any, ok bool, err error) {
	var v JSONSchemaer
	switch {
	case t.Implements(jsonSchemaerType):
		v, _ = reflect.New(t).Elem().Interface().(JSONSchemaer)
	case reflect.PointerTo(t).Implements(jsonSchemaerType):
		v, _ = reflect.New(t).Interface().(JSONSchemaer)
	default:
		return nil, false, nil
	}
	defer func() {
		if r := recover(); r != nil {
			s, ok, err = nil, true, fmt.Errorf("functions: schema of %s: %s.JSONSchema panicked: %v", where, t, r)
		}
	}()
	raw := v.JSONSchema()
	var c bytes.Buffer
	if trimmed := bytes.TrimSpace(raw); len(trimmed) == 0 || trimmed[0] != '{' || json.Compact(&c, raw) != nil {
		return nil, true, fmt.Errorf("functions: schema of %s: %s.JSONSchema returned %.100q, not a JSON object", where, t, raw)
	}
	return json.RawMessage(c.Bytes()), true, nil
}

// schemaNullable returns s accepting null too.
func schemaNullable(s any) any {
	o, ok := s.(schemaObject)
	if ok && len(o) == 0 {
		return o // {} accepts null already
	}
	if ok {
		for i, m := range o {
			if m.Key != "type" {
				continue
			}
			var types []string
			switch v := m.Value.(type) {
			case string:
				types = []string{v}
			case []string:
				types = v
			}
			if types == nil {
				break
			}
			if !slices.Contains(types, "null") {
				types = append(slices.Clip(types), "null")
			}
			c := slices.Clone(o)
			c[i].Value = types
			return c
		}
	}
	return schemaObject{{"anyOf", []any{s, schemaObject{{"type", "null"}}}}}
}

// structSchema describes a struct as encoding/json encodes it.
func (g *schemaGen) structSchema(t reflect.Type, where string) (any, error) {
	fields := schemaStructFields(t)
	props := make(schemaObject, 0, len(fields))
	var required []string
	for _, f := range fields {
		at := where + "." + f.name
		var s any
		if f.quoted {
			s = schemaObject{{"type", "string"}}
			if f.typ.Kind() == reflect.Pointer {
				s = schemaNullable(s)
			}
		} else {
			var err error
			if s, err = g.gen(f.typ, at, false); err != nil {
				return nil, err
			}
		}
		props = append(props, schemaMember{f.name, s})
		if !f.omit && !f.optional && f.typ.Kind() != reflect.Pointer {
			required = append(required, f.name)
		}
	}
	o := schemaObject{{"type", "object"}}
	if len(props) > 0 {
		o = append(o, schemaMember{"properties", props})
	}
	if len(required) > 0 {
		o = append(o, schemaMember{"required", required})
	}
	return o, nil
}

// schemaField is a field of a struct's JSON encoding.
type schemaField struct {
	name   string
	tagged bool
	index  []int
	typ    reflect.Type
	// omit: omitempty or omitzero; quoted: the ",string" option on a
	// scalar; optional: reached through an embedded pointer.
	omit, quoted, optional bool
}

// schemaStructFields returns the fields encoding/json encodes for a struct, in
// order, with its rules: embedded structs are flattened breadth first,
// and of fields of one name the shallowest wins, then the tagged one;
// others of equal standing cancel each other out.
func schemaStructFields(t reflect.Type) []schemaField {
	type embedded struct {
		typ    reflect.Type
		index  []int
		viaPtr bool
	}
	var current []embedded
	next := []embedded{{typ: t}}
	var count, nextCount map[reflect.Type]int
	visited := map[reflect.Type]bool{}
	var fields []schemaField
	for len(next) > 0 {
		current, next = next, current[:0]
		count, nextCount = nextCount, map[reflect.Type]int{}
		for _, f := range current {
			if visited[f.typ] {
				continue
			}
			visited[f.typ] = true
			for i := range f.typ.NumField() {
				sf := f.typ.Field(i)
				if sf.Anonymous {
					et := sf.Type
					if et.Kind() == reflect.Pointer {
						et = et.Elem()
					}
					if !sf.IsExported() && et.Kind() != reflect.Struct {
						continue
					}
				} else if !sf.IsExported() {
					continue
				}
				tag := sf.Tag.Get("json")
				if tag == "-" {
					continue
				}
				name, opts, _ := strings.Cut(tag, ",")
				if !schemaValidTagName(name) {
					name = ""
				}
				index := append(slices.Clone(f.index), i)
				ft := sf.Type
				if ft.Name() == "" && ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if name != "" || !sf.Anonymous || ft.Kind() != reflect.Struct {
					quoted := false
					if schemaTagOption(opts, "string") {
						switch ft.Kind() {
						case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
							reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
							reflect.Float32, reflect.Float64, reflect.String:
							quoted = true
						}
					}
					tagged := name != ""
					if name == "" {
						name = sf.Name
					}
					fields = append(fields, schemaField{
						name: name, tagged: tagged, index: index, typ: sf.Type, quoted: quoted, optional: f.viaPtr,
						omit: schemaTagOption(opts, "omitempty") || schemaTagOption(opts, "omitzero"),
					})
					if count[f.typ] > 1 {
						// The struct is embedded more than once at this
						// depth: the copies cancel each other out below.
						fields = append(fields, fields[len(fields)-1])
					}
					continue
				}
				nextCount[ft]++
				if nextCount[ft] == 1 {
					next = append(next, embedded{typ: ft, index: index, viaPtr: f.viaPtr || sf.Type.Kind() == reflect.Pointer})
				}
			}
		}
	}
	slices.SortFunc(fields, func(a, b schemaField) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		if c := cmp.Compare(len(a.index), len(b.index)); c != 0 {
			return c
		}
		if a.tagged != b.tagged {
			if a.tagged {
				return -1
			}
			return 1
		}
		return slices.Compare(a.index, b.index)
	})
	out := fields[:0]
	for i, n := 0, 0; i < len(fields); i += n {
		for n = 1; i+n < len(fields) && fields[i+n].name == fields[i].name; n++ {
		}
		if n > 1 && len(fields[i].index) == len(fields[i+1].index) && fields[i].tagged == fields[i+1].tagged {
			continue // no dominant field: none is encoded
		}
		out = append(out, fields[i])
	}
	slices.SortFunc(out, func(a, b schemaField) int { return slices.Compare(a.index, b.index) })
	return out
}

func schemaTagOption(opts, want string) bool {
	for opts != "" {
		var o string
		o, opts, _ = strings.Cut(opts, ",")
		if o == want {
			return true
		}
	}
	return false
}

// schemaValidTagName reports whether encoding/json accepts a tag's name.
func schemaValidTagName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}
