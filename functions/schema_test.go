package functions

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/big"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/embedauth/connect/store"
)

type schemaTestLabel struct {
	Name  string `json:"name"`
	Color string `json:"color,omitempty"`
}

type schemaTestBase struct {
	ID      string    `json:"id"`
	Created time.Time `json:"created_at"`
}

type schemaTestMeta struct {
	Source string `json:"source"`
}

type schemaTestIssue struct {
	schemaTestBase
	*schemaTestMeta
	Title   string             `json:"title"`
	Body    *string            `json:"body"`
	Labels  []schemaTestLabel  `json:"labels"`
	Extra   map[string]any     `json:"extra,omitempty"`
	Raw     json.RawMessage    `json:"raw,omitzero"`
	Data    []byte             `json:"data"`
	Count   int64              `json:"count,string"`
	Score   float64            `json:"score"`
	Ok      bool               `json:"ok"`
	Skip    string             `json:"-"`
	private int                //nolint:unused // unexported: not described
	Dash    string             `json:"-,"`
	Addr    netip.Addr         `json:"addr"`
	Ptrs    []*schemaTestLabel `json:"ptrs"`
	Fixed   [2]byte            `json:"fixed"`
	Counts  map[int]float32    `json:"counts"`
	Any     any                `json:"any"`
	Num     json.Number        `json:"num"`
	Big     *big.Int           `json:"big"`
	Due     *time.Time         `json:"due"`
	NoTag   uint8
}

type schemaTestNode struct {
	Value    int              `json:"value"`
	Children []schemaTestNode `json:"children"`
	Parent   *schemaTestNode  `json:"parent,omitempty"`
}

type schemaTestTree struct {
	ID   string          `json:"id"`
	Root *schemaTestNode `json:"root"`
}

// Mutual recursion: A refers to B, which refers to A.
type schemaTestA struct {
	B *schemaTestB `json:"b"`
}
type schemaTestB struct {
	As []schemaTestA `json:"as"`
}

type schemaTestList []schemaTestList

type schemaTestColor int

func (schemaTestColor) JSONSchema() json.RawMessage {
	return json.RawMessage(`{"type": "string", "enum": ["red", "green"]}`)
}

type schemaTestPtrSchema struct{ X int }

func (*schemaTestPtrSchema) JSONSchema() json.RawMessage {
	return json.RawMessage(`{"type":"object","description":"custom"}`)
}

type schemaTestBadSchema struct{}

func (schemaTestBadSchema) JSONSchema() json.RawMessage { return json.RawMessage(`[1]`) }

type schemaTestPanicSchema struct{ m map[string]int }

func (s schemaTestPanicSchema) JSONSchema() json.RawMessage {
	s.m["x"] = 1 // nil map: panics
	return nil
}

type schemaTestPage[T any] struct {
	Items []T                `json:"items"`
	Next  *schemaTestPage[T] `json:"next"`
}

// Embedding rules: the shallower field wins; of equal depth the tagged
// one; two untagged ones of equal depth cancel each other out.
type schemaTestE1 struct {
	Name  string
	Both  string
	Inner string `json:"inner"`
	Title string
}
type schemaTestE2 struct {
	Both    string
	Inner   string
	Heading int `json:"Title"`
}
type schemaTestEmbedding struct {
	schemaTestE1
	schemaTestE2
	Name   int                 `json:"Name"`
	Tagged schemaTestE1        `json:"tagged"`
	Ptr    *schemaTestE2Holder `json:"ptr"`
}
type schemaTestE2Holder struct {
	*schemaTestE2
	Own string `json:"own"`
}

func TestSchemaOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		v    any
		want string
	}{
		{"string", "", `{"type":"string"}`},
		{"int", 0, `{"type":"integer"}`},
		{"uint16", uint16(0), `{"type":"integer"}`},
		{"float32", float32(0), `{"type":"number"}`},
		{"bool", false, `{"type":"boolean"}`},
		{"pointer", new(int), `{"type":["integer","null"]}`},
		{"pointer to pointer", new(*string), `{"type":["string","null"]}`},
		{"slice", []string{}, `{"type":"array","items":{"type":"string"}}`},
		{"bytes", []byte{}, `{"type":"string","contentEncoding":"base64"}`},
		{"array", [3]int{}, `{"type":"array","items":{"type":"integer"},"minItems":3,"maxItems":3}`},
		{"map", map[string]int{}, `{"type":"object","additionalProperties":{"type":"integer"}}`},
		{"map of pointers", map[string]*bool{}, `{"type":"object","additionalProperties":{"type":["boolean","null"]}}`},
		{"map with integer keys", map[int64]string{}, `{"type":"object","additionalProperties":{"type":"string"}}`},
		{"map with TextMarshaler keys", map[netip.Addr]string{}, `{"type":"object","additionalProperties":{"type":"string"}}`},
		{"any", []any{}, `{"type":"array","items":{}}`},
		{"time", time.Time{}, `{"type":"string","format":"date-time"}`},
		{"raw", json.RawMessage(nil), `{}`},
		{"pointer to raw", new(json.RawMessage), `{}`},
		{"json.Number", json.Number(""), `{"type":"number"}`},
		{"duration", time.Duration(0), `{"type":"integer"}`},
		{"empty struct", struct{}{}, `{"type":"object"}`},
		{"JSONSchemaer", schemaTestColor(0), `{"type":"string","enum":["red","green"]}`},
		{"pointer to JSONSchemaer", new(schemaTestColor), `{"anyOf":[{"type":"string","enum":["red","green"]},{"type":"null"}]}`},
		{"JSONSchemaer with a pointer receiver", schemaTestPtrSchema{}, `{"type":"object","description":"custom"}`},
		{"struct", schemaTestIssue{}, `{"type":"object","properties":{
			"id":{"type":"string"},
			"created_at":{"type":"string","format":"date-time"},
			"source":{"type":"string"},
			"title":{"type":"string"},
			"body":{"type":["string","null"]},
			"labels":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string"},"color":{"type":"string"}},"required":["name"]}},
			"extra":{"type":"object","additionalProperties":{}},
			"raw":{},
			"data":{"type":"string","contentEncoding":"base64"},
			"count":{"type":"string"},
			"score":{"type":"number"},
			"ok":{"type":"boolean"},
			"-":{"type":"string"},
			"addr":{"type":"string"},
			"ptrs":{"type":"array","items":{"type":["object","null"],"properties":{"name":{"type":"string"},"color":{"type":"string"}},"required":["name"]}},
			"fixed":{"type":"array","items":{"type":"integer"},"minItems":2,"maxItems":2},
			"counts":{"type":"object","additionalProperties":{"type":"number"}},
			"any":{},
			"num":{"type":"number"},
			"big":{},
			"due":{"type":["string","null"],"format":"date-time"},
			"NoTag":{"type":"integer"}},
			"required":["id","created_at","title","labels","data","count","score","ok","-","addr","ptrs","fixed","counts","any","num","NoTag"]}`},
		{"embedding rules", schemaTestEmbedding{}, `{"type":"object","properties":{
			"inner":{"type":"string"},
			"Inner":{"type":"string"},
			"Title":{"type":"integer"},
			"Name":{"type":"integer"},
			"tagged":{"type":"object","properties":{"Name":{"type":"string"},"Both":{"type":"string"},"inner":{"type":"string"},"Title":{"type":"string"}},
				"required":["Name","Both","inner","Title"]},
			"ptr":{"type":["object","null"],"properties":{"Both":{"type":"string"},"Inner":{"type":"string"},"Title":{"type":"integer"},"own":{"type":"string"}},"required":["own"]}},
			"required":["inner","Inner","Title","Name","tagged"]}`},
		{"quoted pointer", struct {
			N *int `json:"n,string"`
			B bool `json:",string"`
		}{}, `{"type":"object","properties":{"n":{"type":["string","null"]},"B":{"type":"string"}},"required":["B"]}`},
		{"recursive", schemaTestNode{}, `{"type":"object","properties":{
			"value":{"type":"integer"},
			"children":{"type":"array","items":{"$ref":"#/$defs/schemaTestNode"}},
			"parent":{"anyOf":[{"$ref":"#/$defs/schemaTestNode"},{"type":"null"}]}},
			"required":["value","children"],
			"$defs":{"schemaTestNode":{"type":"object","properties":{
				"value":{"type":"integer"},
				"children":{"type":"array","items":{"$ref":"#/$defs/schemaTestNode"}},
				"parent":{"anyOf":[{"$ref":"#/$defs/schemaTestNode"},{"type":"null"}]}},
				"required":["value","children"]}}}`},
		{"refers to a recursive type", schemaTestTree{}, `{"type":"object","properties":{
			"id":{"type":"string"},
			"root":{"anyOf":[{"$ref":"#/$defs/schemaTestNode"},{"type":"null"}]}},
			"required":["id"],
			"$defs":{"schemaTestNode":{"type":"object","properties":{
				"value":{"type":"integer"},
				"children":{"type":"array","items":{"$ref":"#/$defs/schemaTestNode"}},
				"parent":{"anyOf":[{"$ref":"#/$defs/schemaTestNode"},{"type":"null"}]}},
				"required":["value","children"]}}}`},
		{"mutual recursion", schemaTestB{}, `{"type":"object","properties":{
			"as":{"type":"array","items":{"type":"object","properties":{
				"b":{"anyOf":[{"$ref":"#/$defs/schemaTestB"},{"type":"null"}]}}}}},
			"required":["as"],
			"$defs":{"schemaTestB":{"type":"object","properties":{
				"as":{"type":"array","items":{"type":"object","properties":{
					"b":{"anyOf":[{"$ref":"#/$defs/schemaTestB"},{"type":"null"}]}}}}},
				"required":["as"]}}}`},
		{"recursive slice", schemaTestList{}, `{"type":"array","items":{"$ref":"#/$defs/schemaTestList"},
			"$defs":{"schemaTestList":{"type":"array","items":{"$ref":"#/$defs/schemaTestList"}}}}`},
		{"generic", schemaTestPage[int]{}, `{"type":"object","properties":{
			"items":{"type":"array","items":{"type":"integer"}},
			"next":{"anyOf":[{"$ref":"#/$defs/schemaTestPage_int_"},{"type":"null"}]}},
			"required":["items"],
			"$defs":{"schemaTestPage_int_":{"type":"object","properties":{
				"items":{"type":"array","items":{"type":"integer"}},
				"next":{"anyOf":[{"$ref":"#/$defs/schemaTestPage_int_"},{"type":"null"}]}},
				"required":["items"]}}}`},
	} {
		got, err := SchemaOf(tc.v)
		if err != nil {
			t.Errorf("%s: SchemaOf: %v", tc.name, err)
			continue
		}
		if want := compactJSON(t, tc.want); string(got) != want {
			t.Errorf("%s: SchemaOf =\n%s\nwant\n%s", tc.name, got, want)
		}
	}
}

func compactJSON(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		t.Fatalf("compact %s: %v", s, err)
	}
	return b.String()
}

// TestSchemaOfMatchesEncoding checks that the properties of a struct are
// the keys encoding/json writes, in the same order.
func TestSchemaOfMatchesEncoding(t *testing.T) {
	t.Parallel()
	s := "x"
	for _, v := range []any{
		schemaTestIssue{schemaTestMeta: &schemaTestMeta{}, Body: &s, Extra: map[string]any{"a": 1}, Raw: json.RawMessage(`1`)},
		schemaTestEmbedding{Ptr: &schemaTestE2Holder{}},
		schemaTestNode{Parent: &schemaTestNode{}},
	} {
		enc, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		members, err := decodeObjectMembers(enc)
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, m := range members {
			keys = append(keys, m.Key)
		}
		sch, err := SchemaOf(v)
		if err != nil {
			t.Fatal(err)
		}
		top, _ := decodeObjectMembers(sch)
		var props []string
		for _, m := range top {
			if m.Key == "properties" {
				ps, _ := decodeObjectMembers(m.Value.(json.RawMessage))
				for _, p := range ps {
					props = append(props, p.Key)
				}
			}
		}
		if !slices.Equal(keys, props) {
			t.Errorf("%T: encoding/json writes %q, the schema has properties %q", v, keys, props)
		}
	}
}

func TestSchemaOfErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		v    any
		says string
	}{
		{"nil", nil, "SchemaOf(nil)"},
		{"channel", struct {
			C chan int `json:"c"`
		}{}, "schema of struct { C chan int \"json:\\\"c\\\"\" }.c: encoding/json cannot encode a chan int"},
		{"nested func", schemaTestTree{}, ""},
		{"func in a slice", struct{ F []func() }{}, ".F[]: encoding/json cannot encode a func()"},
		{"complex", complex(1, 2), "cannot encode a complex128"},
		{"map key", map[[2]int]string{}, "map key type [2]int is not a string"},
		{"bad JSONSchemaer", struct{ X schemaTestBadSchema }{}, `.X: functions.schemaTestBadSchema.JSONSchema returned "[1]", not a JSON object`},
		{"panicking JSONSchemaer", schemaTestPanicSchema{}, "JSONSchema panicked"},
	} {
		_, err := SchemaOf(tc.v)
		if tc.says == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: SchemaOf = %v, want an error saying %q", tc.name, err, tc.says)
		}
	}
	if _, err := SchemaOfType(nil); err == nil {
		t.Error("SchemaOfType(nil): no error")
	}
}

func TestModelsOfAndModelsSchema(t *testing.T) {
	t.Parallel()
	models, err := ModelsOf(
		ModelType{"Tree", reflect.TypeFor[schemaTestTree]()},
		ModelType{"Node", reflect.TypeFor[schemaTestNode]()},
		ModelType{"Label", reflect.TypeFor[schemaTestLabel]()},
	)
	if err != nil {
		t.Fatal(err)
	}
	node := `{"type":"object","properties":{
		"value":{"type":"integer"},
		"children":{"type":"array","items":{"$ref":"#/$defs/Node"}},
		"parent":{"anyOf":[{"$ref":"#/$defs/Node"},{"type":"null"}]}},
		"required":["value","children"]}`
	tree := `{"type":"object","properties":{"id":{"type":"string"},"root":{"anyOf":[{"$ref":"#/$defs/Node"},{"type":"null"}]}},"required":["id"]}`
	label := `{"type":"object","properties":{"name":{"type":"string"},"color":{"type":"string"}},"required":["name"]}`
	want := []Model{
		// The recursive type is named after the model of that type.
		{Name: "Tree", Schema: json.RawMessage(compactJSON(t, tree[:len(tree)-1]+`,"$defs":{"Node":`+node+`}}`))},
		{Name: "Node", Schema: json.RawMessage(compactJSON(t, node[:len(node)-1]+`,"$defs":{"Node":`+node+`}}`))},
		{Name: "Label", Schema: json.RawMessage(compactJSON(t, label))},
	}
	for i := range want {
		if models[i].Name != want[i].Name || string(models[i].Schema) != string(want[i].Schema) {
			t.Errorf("model %d = %s %s\nwant %s %s", i, models[i].Name, models[i].Schema, want[i].Name, want[i].Schema)
		}
	}

	doc, err := ModelsSchema(models...)
	if err != nil {
		t.Fatal(err)
	}
	wantDoc := compactJSON(t, `{"$schema":"https://json-schema.org/draft/2020-12/schema","$defs":{
		"Tree":`+tree+`,"Node":`+node+`,"Label":`+label+`}}`)
	if string(doc) != wantDoc {
		t.Errorf("ModelsSchema =\n%s\nwant\n%s", doc, wantDoc)
	}

	// Models derived one by one: helper definitions are hoisted, once.
	treeAlone, err := SchemaOf(schemaTestTree{})
	if err != nil {
		t.Fatal(err)
	}
	nodeAlone, err := SchemaOf(schemaTestNode{})
	if err != nil {
		t.Fatal(err)
	}
	doc, err = ModelsSchema(Model{Name: "Tree", Schema: treeAlone}, Model{Name: "Node", Schema: nodeAlone}, Model{Name: "Empty"})
	if err != nil {
		t.Fatal(err)
	}
	helper := strings.ReplaceAll(node, "#/$defs/Node", "#/$defs/schemaTestNode")
	wantDoc = compactJSON(t, `{"$schema":"https://json-schema.org/draft/2020-12/schema","$defs":{
		"Tree":`+strings.ReplaceAll(tree, "#/$defs/Node", "#/$defs/schemaTestNode")+`,
		"Node":`+helper+`,"Empty":{},"schemaTestNode":`+helper+`}}`)
	if string(doc) != wantDoc {
		t.Errorf("ModelsSchema of separate schemas =\n%s\nwant\n%s", doc, wantDoc)
	}
}

func TestModelsOfNames(t *testing.T) {
	t.Parallel()
	type Node struct{ N []Node }
	// A helper type named like a model gets another name.
	models, err := ModelsOf(ModelType{"Node", reflect.TypeFor[schemaTestLabel]()}, ModelType{"Holder", reflect.TypeFor[struct{ X Node }]()})
	if err != nil {
		t.Fatal(err)
	}
	if s := string(models[1].Schema); !strings.Contains(s, `"$ref":"#/$defs/Node_2"`) || !strings.Contains(s, `"$defs":{"Node_2":`) {
		t.Errorf("Holder = %s, want its Node type named Node_2", s)
	}
	if _, err := ModelsSchema(models...); err != nil {
		t.Errorf("ModelsSchema: %v", err)
	}

	for _, tc := range []struct {
		types []ModelType
		says  string
	}{
		{[]ModelType{{"Is sue", reflect.TypeFor[int]()}}, `model name "Is sue" must be letters`},
		{[]ModelType{{"", reflect.TypeFor[int]()}}, `model name "" must be letters`},
		{[]ModelType{{"A", reflect.TypeFor[int]()}, {"A", reflect.TypeFor[int]()}}, `model "A" is given twice`},
		{[]ModelType{{"A", nil}}, `model "A" has no Type`},
		{[]ModelType{{"A", reflect.TypeFor[chan int]()}}, "schema of A: encoding/json cannot encode a chan int"},
	} {
		if _, err := ModelsOf(tc.types...); err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("ModelsOf(%v) = %v, want an error saying %q", tc.types, err, tc.says)
		}
	}
}

func TestModelsSchemaErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		models []Model
		says   string
	}{
		{[]Model{{Name: "a/b"}}, `model name "a/b" must be letters`},
		{[]Model{{Name: "~"}}, `model name "~" must be letters`},
		{[]Model{{Name: "A"}, {Name: "A"}}, `model "A" is given twice`},
		{[]Model{{Name: "A", Schema: json.RawMessage(`[]`)}}, `the schema of model "A": not a JSON object`},
		{[]Model{{Name: "A", Schema: json.RawMessage(`{"a":1,"a":2}`)}}, `the key "a" is given twice`},
		{[]Model{{Name: "A", Schema: json.RawMessage(`{} {}`)}}, `data after the JSON object`},
		{[]Model{{Name: "A", Schema: json.RawMessage(`{"$defs":[]}`)}}, `$defs: not a JSON object`},
		{[]Model{
			{Name: "A", Schema: json.RawMessage(`{"$defs":{"X":{"type":"string"}}}`)},
			{Name: "B", Schema: json.RawMessage(`{"$defs":{"X":{"type":"integer"}}}`)},
		}, `the definition "X" differs between models "A" and "B"`},
		{[]Model{
			{Name: "A", Schema: json.RawMessage(`{"$defs":{"B":{"type":"string"}}}`)},
			{Name: "B", Schema: json.RawMessage(`{"type":"integer"}`)},
		}, `the definition "B" of model "A" is not the schema of model "B"`},
	} {
		if _, err := ModelsSchema(tc.models...); err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("ModelsSchema(%v) = %v, want an error saying %q", tc.models, err, tc.says)
		}
	}
	// The models Nango generates for actions are accepted too.
	if _, err := ModelsSchema(Model{Name: "ActionInput_create-issue"}, Model{Name: "lower.case"}); err != nil {
		t.Errorf("ModelsSchema of generated names: %v", err)
	}
	doc, err := ModelsSchema()
	if err != nil || string(doc) != `{"$schema":"https://json-schema.org/draft/2020-12/schema","$defs":{}}` {
		t.Errorf("ModelsSchema() = %s, %v", doc, err)
	}
}

func TestValidModelName(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{
		"Issue": true, "A": true, "GithubIssue_2": true, "ActionInput_create_issue": true,
		strings.Repeat("A", 255): true, strings.Repeat("A", 256): false,
		"": false, "issue": false, "_Issue": false, "1Issue": false, "Issue-1": false, "Issue 1": false,
		"Éissue": false, "Issue\n": false,
	} {
		if got := ValidModelName(name); got != want {
			t.Errorf("ValidModelName(%.20q) = %v, want %v", name, got, want)
		}
	}
}

func TestCheckSyncModel(t *testing.T) {
	t.Parallel()
	issue, err := SchemaOf(schemaTestIssue{})
	if err != nil {
		t.Fatal(err)
	}
	type numbered struct {
		ID int `json:"id"`
	}
	num, _ := SchemaOf(numbered{})
	type optional struct {
		ID *string `json:"id"`
	}
	opt, _ := SchemaOf(optional{})
	for _, tc := range []struct {
		m    Model
		says string
	}{
		{Model{Name: "Issue", Schema: issue}, ""},
		{Model{Name: "Numbered", Schema: num}, ""},
		{Model{Name: "Mixed", Schema: json.RawMessage(`{"properties":{"id":{"type":["string","number"]}}}`)}, ""},
		{Model{Name: "issue", Schema: issue}, "the name must match"},
		{Model{Name: "Issue"}, "not a JSON object"},
		{Model{Name: "Issue", Schema: json.RawMessage(`null`)}, "not a JSON object"},
		{Model{Name: "Issue", Schema: json.RawMessage(`[]`)}, "not a JSON object"},
		{Model{Name: "Issue", Schema: json.RawMessage(`{"type":"array"}`)}, `describes "array", not objects`},
		{Model{Name: "Issue", Schema: json.RawMessage(`{"type":"object"}`)}, `no "id" property`},
		{Model{Name: "Issue", Schema: json.RawMessage(`{"properties":{"id":{}}}`)}, `"id" property has no type`},
		{Model{Name: "Issue", Schema: json.RawMessage(`{"properties":{"id":{"type":"boolean"}}}`)}, `type "boolean" is not`},
		{Model{Name: "Optional", Schema: opt}, `type ["string","null"] is not`},
	} {
		err := CheckSyncModel(tc.m)
		if tc.says == "" {
			if err != nil {
				t.Errorf("CheckSyncModel(%s): %v", tc.m.Name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("CheckSyncModel(%s %s) = %v, want an error saying %q", tc.m.Name, tc.m.Schema, err, tc.says)
			continue
		}
		if !errors.Is(err, store.ErrInvalid) || store.CodeOf(err) != CodeInvalidModel {
			t.Errorf("CheckSyncModel(%s): %v: want ErrInvalid with code %s", tc.m.Name, err, CodeInvalidModel)
		}
	}
}
