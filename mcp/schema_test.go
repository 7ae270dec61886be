package mcp

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/embedauth/connect/functions"
)

func schemaJSON(t testing.TB, input, doc string) (string, bool) {
	t.Helper()
	s, wrapped := actionSchema(&functions.Definition{Input: input, JSONSchema: json.RawMessage(doc)})
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b), wrapped
}

func TestActionSchema(t *testing.T) {
	for _, tc := range []struct {
		name, input, doc string
		want             string
		wrapped          bool
	}{
		{"no input", "", ``, `{"properties":{},"type":"object"}`, false},
		{"no model in the document", "In", `{"$defs":{"Other":{"type":"string"}}}`, `{"properties":{},"type":"object"}`, false},
		{"not JSON", "In", `{"$defs":`, `{"properties":{},"type":"object"}`, false},
		{"an object, references inlined where used twice", "In",
			`{"$schema":"x","$defs":{"In":{"type":"object","properties":{"a":{"$ref":"#/$defs/L"},"b":{"$ref":"#/$defs/L"}},"required":["a"]},"L":{"type":"object","properties":{"x":{"type":"string"}}}}}`,
			`{"properties":{"a":{"properties":{"x":{"type":"string"}},"type":"object"},"b":{"properties":{"x":{"type":"string"}},"type":"object"}},"required":["a"],"type":"object"}`, false},
		{"Nango's definitions", "CreateItem",
			`{"definitions":{"CreateItem":{"type":"object","properties":{"owner":{"$ref":"#/definitions/User"}},"additionalProperties":false},"User":{"type":"object","properties":{"id":{"type":"number"}}}}}`,
			`{"additionalProperties":false,"properties":{"owner":{"properties":{"id":{"type":"number"}},"type":"object"}},"type":"object"}`, false},
		{"the model itself a reference", "In", `{"$defs":{"In":{"$ref":"#/$defs/Real"},"Real":{"type":"object","properties":{"q":{"type":"integer"}}}}}`,
			`{"properties":{"q":{"type":"integer"}},"type":"object"}`, false},
		{"a tree keeps one reference into its own $defs", "Node",
			`{"$defs":{"Node":{"type":"object","properties":{"name":{"type":"string"},"children":{"type":"array","items":{"$ref":"#/$defs/Node"}}}}}}`,
			`{"$defs":{"Node":{"properties":{"children":{"items":{"$ref":"#/$defs/Node"},"type":"array"},"name":{"type":"string"}},"type":"object"}},"properties":{"children":{"items":{"$ref":"#/$defs/Node"},"type":"array"},"name":{"type":"string"}},"type":"object"}`, false},
		{"mutual recursion", "A",
			`{"$defs":{"A":{"type":"object","properties":{"b":{"$ref":"#/$defs/B"}}},"B":{"type":"object","properties":{"a":{"$ref":"#/$defs/A"}}}}}`,
			`{"$defs":{"A":{"properties":{"b":{"properties":{"a":{"$ref":"#/$defs/A"}},"type":"object"}},"type":"object"}},"properties":{"b":{"properties":{"a":{"$ref":"#/$defs/A"}},"type":"object"}},"type":"object"}`, false},
		{"a string is wrapped", "In", `{"$defs":{"In":{"type":"string","description":"A title.","minLength":1}}}`,
			`{"description":"A title.","properties":{"input":{"description":"A title.","minLength":1,"type":"string"}},"required":["input"],"type":"object"}`, true},
		{"an array is wrapped", "In", `{"$defs":{"In":{"type":"array","items":{"$ref":"#/$defs/L"}},"L":{"type":"boolean"}}}`,
			`{"properties":{"input":{"items":{"type":"boolean"},"type":"array"}},"required":["input"],"type":"object"}`, true},
		{"a union is wrapped", "In", `{"$defs":{"In":{"anyOf":[{"type":"object"},{"type":"string"}]}}}`,
			`{"properties":{"input":{"anyOf":[{"type":"object"},{"type":"string"}]}},"required":["input"],"type":"object"}`, true},
		{"object or null is an object", "In", `{"$defs":{"In":{"type":["object","null"],"properties":{}}}}`,
			`{"properties":{},"type":"object"}`, false},
		{"siblings of a reference are merged", "In",
			`{"$defs":{"In":{"type":"object","properties":{"a":{"$ref":"#/$defs/L","description":"the a"}}},"L":{"type":"string"}}}`,
			`{"properties":{"a":{"description":"the a","type":"string"}},"type":"object"}`, false},
		{"clashing siblings become allOf", "In",
			`{"$defs":{"In":{"type":"object","properties":{"a":{"$ref":"#/$defs/L","type":"string"}}},"L":{"type":"string","maxLength":3}}}`,
			`{"properties":{"a":{"allOf":[{"maxLength":3,"type":"string"}],"type":"string"}},"type":"object"}`, false},
		{"escaped pointers", "In",
			`{"$defs":{"In":{"type":"object","properties":{"a":{"$ref":"#/$defs/a~1b%20c"}}},"a/b c":{"type":"null"}}}`,
			`{"properties":{"a":{"type":"null"}},"type":"object"}`, false},
		{"another document's reference is kept", "In",
			`{"$defs":{"In":{"type":"object","properties":{"a":{"$ref":"https://example.com/s.json"}}}}}`,
			`{"properties":{"a":{"$ref":"https://example.com/s.json"}},"type":"object"}`, false},
		{"a dangling reference is kept", "In",
			`{"$defs":{"In":{"type":"object","properties":{"a":{"$ref":"#/$defs/Gone"}}}}}`,
			`{"properties":{"a":{"$ref":"#/$defs/Gone"}},"type":"object"}`, false},
		{"large numbers stay exact", "In",
			`{"$defs":{"In":{"type":"object","properties":{"n":{"type":"integer","maximum":12345678901234567890}}}}}`,
			`{"properties":{"n":{"maximum":12345678901234567890,"type":"integer"}},"type":"object"}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, wrapped := schemaJSON(t, tc.input, tc.doc)
			if got != tc.want || wrapped != tc.wrapped {
				t.Errorf("got %s (wrapped %v)\nwant %s (wrapped %v)", got, wrapped, tc.want, tc.wrapped)
			}
		})
	}
}

// TestActionSchemaFanOut: a document whose every model refers twice to
// the next would be 2^n large inlined; past the budget, references are
// kept into $defs, and the schema stays small and complete.
func TestActionSchemaFanOut(t *testing.T) {
	var defs []string
	const n = 40
	for i := range n {
		defs = append(defs, fmt.Sprintf(`"M%d":{"type":"object","properties":{"l":{"$ref":"#/$defs/M%d"},"r":{"$ref":"#/$defs/M%d"}}}`, i, i+1, i+1))
	}
	defs = append(defs, fmt.Sprintf(`"M%d":{"type":"string"}`, n))
	got, _ := schemaJSON(t, "M0", `{"$defs":{`+strings.Join(defs, ",")+`}}`)
	if len(got) > 4<<20 {
		t.Fatalf("the schema is %d bytes", len(got))
	}
	checkRefsResolve(t, got)
}

// checkRefsResolve checks that every local reference of a tool schema
// points into its own $defs.
func checkRefsResolve(t testing.TB, s string) {
	t.Helper()
	var root map[string]any
	if err := json.Unmarshal([]byte(s), &root); err != nil {
		t.Fatal(err)
	}
	defs, _ := root["$defs"].(map[string]any)
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if ref, ok := x["$ref"].(string); ok && strings.HasPrefix(ref, "#/$defs/") {
				name := strings.ReplaceAll(strings.ReplaceAll(strings.TrimPrefix(ref, "#/$defs/"), "~1", "/"), "~0", "~")
				if _, ok := defs[name]; !ok {
					t.Errorf("the reference %s is not in $defs", ref)
				}
			}
			for _, e := range x {
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(root)
}

func FuzzActionSchema(f *testing.F) {
	f.Add("In", `{"$defs":{"In":{"type":"object","properties":{"a":{"$ref":"#/$defs/In"}}}}}`)
	f.Add("In", `{"definitions":{"In":{"type":"string"}}}`)
	f.Add("A", `{"$defs":{"A":{"$ref":"#/$defs/B"},"B":{"$ref":"#/$defs/A"}}}`)
	f.Add("A", `{"$defs":{"A":{"items":[{"$ref":"#/$defs/A/items/0"}]}}}`)
	f.Fuzz(func(t *testing.T, input, doc string) {
		s, wrapped := actionSchema(&functions.Definition{Input: input, JSONSchema: json.RawMessage(doc)})
		if s["type"] != "object" {
			t.Fatalf("type %v", s["type"])
		}
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if wrapped {
			if _, ok := s["properties"].(map[string]any)[inputKey]; !ok {
				t.Fatalf("wrapped without %q: %s", inputKey, b)
			}
		}
	})
}
