package functions

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func mergeTestObject(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("decoding %s: %v", s, err)
	}
	return m
}

func TestDeepMerge(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, dst, patch, want string
	}{
		{"empty patch", `{"id":"1","a":1}`, `{}`, `{"id":"1","a":1}`},
		{"empty dst", `{}`, `{"a":{"b":1}}`, `{"a":{"b":1}}`},
		{"scalar replaced", `{"id":"1","a":1,"b":"x"}`, `{"a":2}`, `{"id":"1","a":2,"b":"x"}`},
		{"objects merged recursively", `{"a":{"b":1,"c":{"d":1,"e":2}}}`, `{"a":{"c":{"e":3,"f":4}}}`,
			`{"a":{"b":1,"c":{"d":1,"e":3,"f":4}}}`},
		{"arrays replaced", `{"a":[1,2,3],"b":[{"x":1}]}`, `{"a":[4],"b":[{"y":2}]}`, `{"a":[4],"b":[{"y":2}]}`},
		{"null sets null", `{"a":{"b":1},"c":2}`, `{"a":null,"c":null}`, `{"a":null,"c":null}`},
		{"null inside an object", `{"a":{"b":1,"c":2}}`, `{"a":{"b":null}}`, `{"a":{"b":null,"c":2}}`},
		{"object replaces scalar", `{"a":1}`, `{"a":{"b":1}}`, `{"a":{"b":1}}`},
		{"scalar replaces object", `{"a":{"b":1}}`, `{"a":"x"}`, `{"a":"x"}`},
		{"array replaces object", `{"a":{"b":1}}`, `{"a":[1]}`, `{"a":[1]}`},
		{"object replaces array", `{"a":[1]}`, `{"a":{"0":2}}`, `{"a":{"0":2}}`},
		{"new keys added", `{"a":1}`, `{"b":{"c":[1,{"d":null}]}}`, `{"a":1,"b":{"c":[1,{"d":null}]}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dst, patch := mergeTestObject(t, tc.dst), mergeTestObject(t, tc.patch)
			got := DeepMerge(dst, patch)
			if diff := cmp.Diff(mergeTestObject(t, tc.want), got); diff != "" {
				t.Errorf("DeepMerge(%s, %s) (-want +got):\n%s", tc.dst, tc.patch, diff)
			}
			// The inputs are unchanged.
			if diff := cmp.Diff(mergeTestObject(t, tc.dst), dst); diff != "" {
				t.Errorf("DeepMerge changed dst (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(mergeTestObject(t, tc.patch), patch); diff != "" {
				t.Errorf("DeepMerge changed patch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDeepMergeNil(t *testing.T) {
	t.Parallel()
	if got := DeepMerge(nil, nil); got == nil || len(got) != 0 {
		t.Errorf("DeepMerge(nil, nil) = %#v, want an empty map", got)
	}
	got := DeepMerge(map[string]any{"a": map[string]any{"b": 1}}, map[string]any{"a": map[string]any(nil)})
	if v, ok := got["a"].(map[string]any); !ok || v != nil {
		t.Errorf("a nil map in the patch: got %#v, want it to replace the object (null)", got["a"])
	}
}

// TestDeepMergeSharesNothing checks that changing the result leaves the
// inputs alone, at every depth.
func TestDeepMergeSharesNothing(t *testing.T) {
	t.Parallel()
	const dstJSON = `{"kept":{"x":[1,{"y":2}]},"merged":{"a":{"b":1}},"replaced":[1]}`
	const patchJSON = `{"merged":{"a":{"c":2},"n":[{"z":1}]},"replaced":[{"q":1}]}`
	dst, patch := mergeTestObject(t, dstJSON), mergeTestObject(t, patchJSON)
	got := DeepMerge(dst, patch)

	got["kept"].(map[string]any)["x"].([]any)[1].(map[string]any)["y"] = "changed"
	got["kept"].(map[string]any)["x"].([]any)[0] = "changed"
	got["merged"].(map[string]any)["a"].(map[string]any)["b"] = "changed"
	got["merged"].(map[string]any)["a"].(map[string]any)["c"] = "changed"
	got["merged"].(map[string]any)["n"].([]any)[0].(map[string]any)["z"] = "changed"
	got["replaced"].([]any)[0].(map[string]any)["q"] = "changed"
	got["new"] = true

	if diff := cmp.Diff(mergeTestObject(t, dstJSON), dst); diff != "" {
		t.Errorf("changing the result changed dst (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(mergeTestObject(t, patchJSON), patch); diff != "" {
		t.Errorf("changing the result changed patch (-want +got):\n%s", diff)
	}
}
