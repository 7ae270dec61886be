package functions

import "github.com/embedauth/connect/internal/jsonvalue"

// DeepMerge returns a new map: dst with patch merged into it, as
// SyncContext.Update (Nango's batchUpdate) merges a partial record into
// the stored one. A key of patch whose value and dst's value are both
// objects (map[string]any) is merged recursively; any other value of
// patch (an array, a scalar, nil) replaces dst's, so a nil in patch sets
// the key to null rather than deleting it. Keys of dst absent from patch
// are kept.
//
// Neither argument is modified, and the result shares no map or slice
// with them: maps and slices ([]any) are copied at every depth. Either
// argument may be nil; the result never is.
func DeepMerge(dst, patch map[string]any) map[string]any {
	out := make(map[string]any, len(dst)+len(patch))
	for k, v := range dst {
		if _, patched := patch[k]; !patched {
			out[k] = jsonvalue.Clone(v)
		}
	}
	for k, pv := range patch {
		pm, patchIsObject := pv.(map[string]any)
		dm, dstIsObject := dst[k].(map[string]any)
		if patchIsObject && pm != nil && dstIsObject && dm != nil {
			out[k] = DeepMerge(dm, pm)
			continue
		}
		out[k] = jsonvalue.Clone(pv)
	}
	return out
}
