package functions

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

type checkLabel struct {
	Name  string `json:"name"`
	Color string `json:"color,omitempty"`
}

type checkNode struct {
	Value    int          `json:"value"`
	Children []*checkNode `json:"children,omitempty"`
}

type checkInput struct {
	Title  string            `json:"title"`
	Count  int               `json:"count"`
	Ratio  float64           `json:"ratio,omitempty"`
	Due    *time.Time        `json:"due,omitempty"`
	Labels []checkLabel      `json:"labels,omitempty"`
	Extra  map[string]string `json:"extra,omitempty"`
	Blob   []byte            `json:"blob,omitempty"`
	Pair   [2]int            `json:"pair,omitzero"`
	Tree   *checkNode        `json:"tree,omitempty"`
	Any    any               `json:"any,omitempty"`
}

// definitionOf is the definition NewAction gives an action whose input
// is In.
func definitionOf[In any](t *testing.T) *Definition {
	t.Helper()
	a := NewAction("it", "do-it", func(context.Context, *Context, In) (any, error) { return nil, nil })
	r, err := compile(a)
	if err != nil {
		t.Fatal(err)
	}
	return &r.fn.Definition
}

func TestCheckActionInput(t *testing.T) {
	t.Parallel()
	structDef := definitionOf[checkInput](t)
	for _, tc := range []struct {
		name, input string
		want        []string // "path: message" of each problem, in order
	}{
		{"fits", `{"title":"t","count":2,"labels":[{"name":"bug"}],"due":"2026-05-01T12:00:00Z","blob":"aGk=","pair":[1,2],"any":[1,"x"]}`, nil},
		{"absent", ``, nil},
		{"null", `null`, nil},
		{"wrong type", `{"title":5,"count":1}`, []string{"input.title: expected string, got number"}},
		{"missing", `{"count":1}`, []string{"input.title: is required"}},
		{"several", `{"count":"x"}`, []string{"input.title: is required", "input.count: expected integer, got string"}},
		{"not an integer", `{"title":"t","count":1.5}`, []string{"input.count: expected integer, got number"}},
		{"integer written with an exponent", `{"title":"t","count":1e2}`, nil},
		{"nested in an array", `{"title":"t","count":1,"labels":[{"name":"a"},{"name":true}]}`, []string{"input.labels[1].name: expected string, got boolean"}},
		{"nested required", `{"title":"t","count":1,"labels":[{}]}`, []string{"input.labels[0].name: is required"}},
		{"map value", `{"title":"t","count":1,"extra":{"a.b":5}}`, []string{`input.extra["a.b"]: expected string, got number`}},
		{"nullable pointer", `{"title":"t","count":1,"due":null}`, nil},
		{"bad date-time", `{"title":"t","count":1,"due":"tomorrow"}`, []string{"input.due: must be a date-time (RFC 3339, such as 2026-05-01T12:00:00Z)"}},
		{"bad base64", `{"title":"t","count":1,"blob":"!!"}`, []string{"input.blob: must be base64"}},
		{"array length", `{"title":"t","count":1,"pair":[1]}`, []string{"input.pair: must have at least 2 items"}},
		{"recursive type", `{"title":"t","count":1,"tree":{"value":1,"children":[{"value":"x"}]}}`, []string{"input.tree.children[0].value: expected integer, got string"}},
		{"not an object", `[1]`, []string{"input: expected object, got array"}},
	} {
		ps, err := checkActionInput(structDef, json.RawMessage(tc.input))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var got []string
		for _, p := range ps {
			got = append(got, p.Path+": "+p.Message)
			if strings.Contains(p.Message, "checkInput") || strings.Contains(p.Message, "Go ") {
				t.Errorf("%s: a Go name in %q", tc.name, p.Message)
			}
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: problems %q, want %q", tc.name, got, tc.want)
		}
	}

	ps, _ := checkActionInput(structDef, json.RawMessage(`{"title":5,"count":1,"labels":[{"name":1}]}`))
	if len(ps) != 2 || ps[0].InstancePath != "/labels/0/name" || ps[0].Keyword != "type" || ps[1].InstancePath != "/title" {
		t.Errorf("instance paths: %+v", ps)
	}

	// Scalars and arrays as the whole input.
	for _, tc := range []struct {
		def         *Definition
		input, want string
	}{
		{definitionOf[string](t), `5`, "input: expected string, got number"},
		{definitionOf[string](t), `"ok"`, ""},
		{definitionOf[[]checkLabel](t), `[{"name":"a"},{"name":2}]`, "input[1].name: expected string, got number"},
		{definitionOf[[]checkLabel](t), `{"name":"a"}`, "input: expected array, got object"},
		{definitionOf[int64](t), `true`, "input: expected integer, got boolean"},
	} {
		ps, err := checkActionInput(tc.def, json.RawMessage(tc.input))
		got := ""
		if len(ps) > 0 {
			got = ps[0].Path + ": " + ps[0].Message
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: %q %v, want %q", tc.input, got, err, tc.want)
		}
	}
}

// TestCheckActionInputHandWritten: schemas written by hand (a
// JSONSchemaer, or published by another runtime in draft-07 with
// "definitions") are checked with the keywords they use.
func TestCheckActionInputHandWritten(t *testing.T) {
	t.Parallel()
	doc := `{"definitions":{
		"In":{"type":"object","additionalProperties":false,"required":["kind"],"properties":{
			"kind":{"enum":["a","b"]},
			"n":{"type":"number","minimum":1,"exclusiveMaximum":10,"multipleOf":0.5},
			"code":{"type":"string","pattern":"^[A-Z]{3}$","minLength":3},
			"email":{"type":"string","format":"email"},
			"tags":{"type":"array","items":{"$ref":"#/definitions/Tag"},"uniqueItems":true,"maxItems":3},
			"tuple":{"type":"array","items":[{"type":"string"},{"type":"integer"}],"additionalItems":false},
			"either":{"oneOf":[{"type":"string"},{"type":"integer","minimum":0}]},
			"fixed":{"const":{"v":1}},
			"never":false}},
		"Tag":{"type":"string","maxLength":5}}}`
	d := &Definition{Input: "In", JSONSchema: json.RawMessage(doc)}
	for _, tc := range []struct {
		input string
		want  []string
	}{
		{`{"kind":"a","n":2.5,"code":"ABC","email":"a@b.co","tags":["x","y"],"tuple":["s",1],"either":3,"fixed":{"v":1.0}}`, nil},
		{`{"kind":"c"}`, []string{`input.kind: must be one of "a", "b"`}},
		{`{}`, []string{"input.kind: is required"}},
		{`{"kind":"a","other":1}`, []string{"input.other: is not allowed"}},
		{`{"kind":"a","n":0}`, []string{"input.n: must be at least 1"}},
		{`{"kind":"a","n":10}`, []string{"input.n: must be less than 10"}},
		{`{"kind":"a","n":1.25}`, []string{"input.n: must be a multiple of 0.5"}},
		{`{"kind":"a","code":"abc"}`, []string{"input.code: must match the pattern ^[A-Z]{3}$"}},
		{`{"kind":"a","email":"nope"}`, []string{"input.email: must be an email address"}},
		{`{"kind":"a","tags":["toolong"]}`, []string{"input.tags[0]: must be at most 5 characters long"}},
		{`{"kind":"a","tags":["x","x"]}`, []string{"input.tags[1]: repeats item 0"}},
		{`{"kind":"a","tuple":["s","t"]}`, []string{"input.tuple[1]: expected integer, got string"}},
		{`{"kind":"a","tuple":["s",1,2]}`, []string{"input.tuple[2]: is not allowed"}},
		{`{"kind":"a","either":-1}`, []string{"input.either: must be at least 0"}},
		{`{"kind":"a","either":true}`, []string{"input.either: does not match any of the allowed schemas"}},
		{`{"kind":"a","fixed":{"v":2}}`, []string{`input.fixed: must be {"v":1}`}},
		{`{"kind":"a","never":1}`, []string{"input.never: is not allowed"}},
	} {
		ps, err := checkActionInput(d, json.RawMessage(tc.input))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, p := range ps {
			got = append(got, p.Path+": "+p.Message)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.input, got, tc.want)
		}
	}

	// A reference that loops ends; one that goes nowhere checks nothing.
	loop := &Definition{Input: "A", JSONSchema: json.RawMessage(`{"$defs":{"A":{"$ref":"#/$defs/B"},"B":{"$ref":"#/$defs/A"},"C":{"$ref":"#/nowhere"}}}`)}
	if ps, err := checkActionInput(loop, json.RawMessage(`{"x":1}`)); err != nil || ps != nil {
		t.Errorf("looping references: %v %v", ps, err)
	}
	loop.Input = "C"
	if ps, err := checkActionInput(loop, json.RawMessage(`{"x":1}`)); err != nil || ps != nil {
		t.Errorf("a dangling reference: %v %v", ps, err)
	}
	// No input model, or a model the document lacks: nothing to check.
	for _, d := range []*Definition{{}, {Input: "Missing", JSONSchema: json.RawMessage(doc)}} {
		if ps, err := checkActionInput(d, json.RawMessage(`5`)); err != nil || ps != nil {
			t.Errorf("%+v: %v %v", d, ps, err)
		}
	}
}

// TestDecodeProblem: what encoding/json says about an input that does
// not decode into an action's Go type is said in JSON's terms.
func TestDecodeProblem(t *testing.T) {
	t.Parallel()
	var v struct {
		Small int8       `json:"small"`
		Items []struct{} `json:"items"`
	}
	for _, tc := range []struct{ input, want string }{
		{`{"small":300}`, "input.small: expected integer, got 300, which is out of range"},
		{`{"items":{}}`, "input.items: expected array, got object"},
		{`[1]`, "input: expected object, got array"},
		{`{"small":`, "input: is not valid JSON"},
	} {
		err := json.Unmarshal([]byte(tc.input), &v)
		p := decodeProblem(err)
		if got := p.Path + ": " + p.Message; got != tc.want {
			t.Errorf("%s: %q, want %q", tc.input, got, tc.want)
		}
	}
	if p := decodeProblem(errors.New("custom")); p.Path != "input" || strings.Contains(p.Message, "custom") {
		t.Errorf("another error: %+v", p)
	}
}
