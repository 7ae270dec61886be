package functions

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
			out[k] = deepCopyJSON(v)
		}
	}
	for k, pv := range patch {
		pm, patchIsObject := pv.(map[string]any)
		dm, dstIsObject := dst[k].(map[string]any)
		if patchIsObject && pm != nil && dstIsObject && dm != nil {
			out[k] = DeepMerge(dm, pm)
			continue
		}
		out[k] = deepCopyJSON(pv)
	}
	return out
}

// deepCopyJSON copies the maps and slices of a decoded JSON value.
func deepCopyJSON(v any) any {
	switch x := v.(type) {
	case map[string]any:
		if x == nil {
			return x
		}
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = deepCopyJSON(e)
		}
		return m
	case []any:
		if x == nil {
			return x
		}
		s := make([]any, len(x))
		for i, e := range x {
			s[i] = deepCopyJSON(e)
		}
		return s
	}
	return v
}
