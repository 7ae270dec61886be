package jsonvalue

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestClone(t *testing.T) {
	orig := map[string]any{"a": []any{map[string]any{"b": "c"}, 1.5}, "n": nil, "m": map[string]any(nil), "s": []any(nil)}
	cp := CloneMap(orig)
	if diff := cmp.Diff(orig, cp); diff != "" {
		t.Fatalf("copy differs (-orig +copy):\n%s", diff)
	}
	cp["a"].([]any)[0].(map[string]any)["b"] = "changed"
	cp["a"].([]any)[1] = 2.0
	if got := orig["a"].([]any)[0].(map[string]any)["b"]; got != "c" {
		t.Errorf("changing the copy changed the original: %v", got)
	}
	if got := orig["a"].([]any)[1]; got != 1.5 {
		t.Errorf("changing the copy's slice changed the original: %v", got)
	}
	if cp["m"].(map[string]any) != nil || cp["s"].([]any) != nil || CloneMap(nil) != nil {
		t.Errorf("nil maps and slices must stay nil: %v", cp)
	}
	if Clone("x") != "x" {
		t.Error("scalars are returned as they are")
	}
}
