package jsbox_test

import (
	"encoding/json"
	"os"
	"testing"
)

// asNode is the wrapper the generators under testdata run each expression
// in, in Node and here: an exception answers "throws Name: message [code]".
func asNode(expr string) string {
	return "(() => { try { return String(" + expr + "); } catch (e) { return 'throws ' + e.name + ': ' + e.message + (e.code ? ' [' + e.code + ']' : ''); } })()"
}

// nodeCases reads testdata/name: pairs of an expression and Node's answer.
func nodeCases(t *testing.T, name string, atLeast int) [][2]string {
	t.Helper()
	raw, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	var cases [][2]string
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) < atLeast {
		t.Fatalf("%s: %d cases", name, len(cases))
	}
	return cases
}
