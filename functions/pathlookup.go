package functions

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// maxLodashPathSegments bounds the segments of a path (and so the work of a
// lookup): far more than any API nests.
const maxLodashPathSegments = 64

// parseLodashPath splits a lodash-style property path into its segments:
// keys separated by dots ("paging.next.after"), with brackets for indexes
// and quoted keys ("items[0].id", `data["a.b"]`). As in lodash, "a..b"
// and a leading dot name the empty key. A path that cannot be split
// (an unclosed bracket or quote) is an error.
func parseLodashPath(path string) ([]string, error) {
	var segs []string
	i := 0
	// expectKey: a key may start here (after a dot or at the start).
	for expectKey := true; i < len(path); {
		switch c := path[i]; {
		case c == '.':
			if expectKey {
				segs = append(segs, "") // "a..b", ".a"
			}
			expectKey = true
			i++
			if i == len(path) {
				segs = append(segs, "") // "a."
			}
		case c == '[':
			end, seg, err := parseLodashBracket(path, i)
			if err != nil {
				return nil, err
			}
			segs = append(segs, seg)
			i, expectKey = end, false
		default:
			j := i
			for j < len(path) && path[j] != '.' && path[j] != '[' {
				j++
			}
			segs = append(segs, path[i:j])
			i, expectKey = j, false
		}
		if len(segs) > maxLodashPathSegments {
			return nil, fmt.Errorf("the path %.60q has more than %d segments", path, maxLodashPathSegments)
		}
	}
	return segs, nil
}

// parseLodashBracket reads the bracket at path[i] ('['): an index, a bare key,
// or a quoted key with backslash escapes. It returns the position after
// the ']' and the segment.
func parseLodashBracket(path string, i int) (int, string, error) {
	i++
	if i < len(path) && (path[i] == '"' || path[i] == '\'') {
		q := path[i]
		var b strings.Builder
		for j := i + 1; j < len(path); j++ {
			switch path[j] {
			case '\\':
				if j+1 < len(path) {
					j++
					b.WriteByte(path[j])
				}
			case q:
				if j+1 < len(path) && path[j+1] == ']' {
					return j + 2, b.String(), nil
				}
				return 0, "", fmt.Errorf("the path %.60q has a quote not followed by ']' at byte %d", path, j)
			default:
				b.WriteByte(path[j])
			}
		}
		return 0, "", fmt.Errorf("the path %.60q has an unclosed quote at byte %d", path, i)
	}
	end := strings.IndexByte(path[i:], ']')
	if end < 0 {
		return 0, "", fmt.Errorf("the path %.60q has an unclosed '[' at byte %d", path, i-1)
	}
	return i + end + 1, path[i : i+end], nil
}

// lookupLodashPath returns the value at a lodash-style path (see
// parseLodashPath) in a JSON document, as lodash's get reads it: object
// members by key, array elements by index ("0", "12"; not "01" nor
// "-1"); and, as lodash does, the whole path as one key when the root
// object has a member of that name ("a.b"). found is false when the path
// leads nowhere: a missing key or index, or a step into a scalar or null.
// An empty path is the whole document. A body that is empty or only
// spaces reads as null. It returns an error when the body is not JSON or
// the path cannot be parsed.
func lookupLodashPath(body []byte, path string) (v json.RawMessage, found bool, err error) {
	cur := json.RawMessage(bytes.TrimSpace(body))
	if len(cur) == 0 {
		cur = json.RawMessage("null")
	}
	if !json.Valid(cur) {
		return nil, false, errBodyNotJSON
	}
	if path == "" {
		return cur, true, nil
	}
	if cur[0] == '{' {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(cur, &obj); err != nil {
			return nil, false, errBodyNotJSON
		}
		if v, ok := obj[path]; ok {
			return v, true, nil
		}
	}
	segs, err := parseLodashPath(path)
	if err != nil {
		return nil, false, err
	}
	for _, seg := range segs {
		switch cur[0] {
		case '{':
			var obj map[string]json.RawMessage
			if err := json.Unmarshal(cur, &obj); err != nil {
				return nil, false, errBodyNotJSON
			}
			next, ok := obj[seg]
			if !ok {
				return nil, false, nil
			}
			cur = next
		case '[':
			n, err := strconv.Atoi(seg)
			if err != nil || n < 0 || strconv.Itoa(n) != seg {
				return nil, false, nil
			}
			var arr []json.RawMessage
			if err := json.Unmarshal(cur, &arr); err != nil {
				return nil, false, errBodyNotJSON
			}
			if n >= len(arr) {
				return nil, false, nil
			}
			cur = arr[n]
		default:
			return nil, false, nil
		}
	}
	return cur, true, nil
}

// errBodyNotJSON is a body that is not JSON.
var errBodyNotJSON = fmt.Errorf("the body is not JSON")

// describeJSONKind names the kind of a JSON value, for messages.
func describeJSONKind(v json.RawMessage) string {
	if len(v) == 0 {
		return "nothing"
	}
	switch v[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}
