package jsruntime

import (
	"encoding/base64"
	"encoding/json"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/embedauth/connect/internal/jsbox"
)

// sourceMap maps positions of the code the CLI compiled back to its
// TypeScript sources (an inline source map, version 3).
type sourceMap struct {
	sources []string
	lines   [][]segment // by generated line (0-based)
}

// segment maps a generated column to a source position.
type segment struct {
	col, src, line, srcCol int
}

const inlinePrefix = "//# sourceMappingURL=data:application/json;base64,"

// inlineSourceMap reads the inline source map at the end of src; nil when
// it has none or it cannot be read (frames then keep the compiled
// positions).
func inlineSourceMap(src string) *sourceMap {
	i := strings.LastIndex(src, inlinePrefix)
	if i < 0 {
		return nil
	}
	enc := strings.TrimSpace(src[i+len(inlinePrefix):])
	b, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		if b, err = base64.RawStdEncoding.DecodeString(enc); err != nil {
			return nil
		}
	}
	var doc struct {
		Version  int      `json:"version"`
		Sources  []string `json:"sources"`
		Mappings string   `json:"mappings"`
	}
	if json.Unmarshal(b, &doc) != nil || doc.Version != 3 {
		return nil
	}
	m := &sourceMap{sources: make([]string, len(doc.Sources))}
	for i, s := range doc.Sources {
		for strings.HasPrefix(s, "../") {
			s = s[3:]
		}
		m.sources[i] = strings.TrimPrefix(s, "./")
	}
	var src0, line0, col0 int
	for _, l := range strings.Split(doc.Mappings, ";") {
		var segs []segment
		gen := 0
		for _, s := range strings.Split(l, ",") {
			if s == "" {
				continue
			}
			v, ok := vlq(s)
			if !ok || len(v) < 1 {
				return nil
			}
			gen += v[0]
			if len(v) < 4 {
				continue
			}
			src0 += v[1]
			line0 += v[2]
			col0 += v[3]
			if src0 < 0 || src0 >= len(m.sources) {
				return nil
			}
			segs = append(segs, segment{col: gen, src: src0, line: line0, srcCol: col0})
		}
		sort.Slice(segs, func(i, j int) bool { return segs[i].col < segs[j].col })
		m.lines = append(m.lines, segs)
	}
	return m
}

// vlq decodes one segment of base64 VLQ numbers.
func vlq(s string) ([]int, bool) {
	var out []int
	val, shift := 0, 0
	for i := 0; i < len(s); i++ {
		d := strings.IndexByte("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", s[i])
		if d < 0 || shift > 30 {
			return nil, false
		}
		val += (d & 31) << shift
		if d&32 != 0 {
			shift += 5
			continue
		}
		n := val >> 1
		if val&1 != 0 {
			n = -n
		}
		out = append(out, n)
		val, shift = 0, 0
	}
	return out, shift == 0
}

// lookup maps a generated position (1-based line and column) to its
// source and 1-based line and column.
func (m *sourceMap) lookup(line, col int) (string, int, int, bool) {
	if m == nil || line < 1 || line > len(m.lines) {
		return "", 0, 0, false
	}
	segs := m.lines[line-1]
	i := sort.Search(len(segs), func(i int) bool { return segs[i].col > col-1 }) - 1
	if i < 0 {
		if len(segs) == 0 {
			return "", 0, 0, false
		}
		i = 0
	}
	s := segs[i]
	return m.sources[s.src], s.line + 1, s.srcCol + 1, true
}

var frameRE = regexp.MustCompile(`^\s*at (?:(.*?) \()?([^()]*?):(\d+)(?::(\d+))?\)?$`)

// frames turns the lines of a JavaScript stack into frames of the
// function's code ("name (source.ts:line:col)"), mapped through the
// source map when there is one, at most 10; frames of other files than
// module (our own code, zod's) are left out.
func (m *sourceMap) frames(module, stack string) []string {
	var out []string
	for _, l := range strings.Split(stack, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || !strings.HasPrefix(l, "at ") {
			continue
		}
		f := frameRE.FindStringSubmatch(l)
		if f == nil {
			continue
		}
		name, file := f[1], f[2]
		if file != module { // our own code, zod's, the engine's
			continue
		}
		line, _ := strconv.Atoi(f[3])
		col := 1
		if f[4] != "" {
			col, _ = strconv.Atoi(f[4])
		}
		if line == 1 {
			col = max(1, col-jsbox.ModuleColumnOffset)
		}
		if src, sl, sc, ok := m.lookup(line, col); ok {
			file, line, col = src, sl, sc
		}
		pos := file + ":" + strconv.Itoa(line) + ":" + strconv.Itoa(col)
		if name == "" {
			out = append(out, pos)
		} else {
			out = append(out, name+" ("+pos+")")
		}
		if len(out) == 10 {
			break
		}
	}
	return out
}
