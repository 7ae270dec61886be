package integrations

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzParamTreeJSON: any JSON object reads as a tree that writes back to
// the same tree, keys in order; anything else is an error, never a panic.
func FuzzParamTreeJSON(f *testing.F) {
	f.Add([]byte(`{"b":{"z":1,"a":[true,null,"x"]},"a":""}`))
	f.Add([]byte(`[1]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var tr ParamTree
		if err := json.Unmarshal(b, &tr); err != nil {
			return
		}
		out, err := json.Marshal(tr)
		if err != nil {
			t.Fatal(err)
		}
		var back ParamTree
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		if diff := cmp.Diff(tr, back); diff != "" {
			t.Fatalf("round trip of %s: %s", b, diff)
		}
	})
}
