package httpapi

import (
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/embedauth/connect/store"
)

// MaxJSONDepth is how deeply arrays and objects of a JSON body may nest.
const MaxJSONDepth = 64

// CheckJSON refuses, with an invalid_body error, a JSON body that
// encoding/json would otherwise accept by changing it silently or that a
// Store cannot hold the same way everywhere:
//
//   - bytes that are not UTF-8 (the decoder would store U+FFFD instead);
//   - an object holding the same key twice, at any depth (the decoder
//     would keep the last one, another parser the first);
//   - a \u escape of a lone UTF-16 surrogate (decoded as U+FFFD);
//   - the character U+0000, which Postgres cannot store in text or jsonb;
//   - arrays and objects nested deeper than MaxJSONDepth.
//
// A body that is not JSON at all passes: the decoder reports that with the
// position of the error.
func CheckJSON(b []byte) error {
	if !utf8.Valid(b) {
		return store.Invalid("invalid_body", "The request body is not valid UTF-8.")
	}
	sc := jsonScanner{b: b}
	sc.value(0, nil)
	return sc.err
}

// CheckJSONArray refuses what CheckJSON refuses in a body that must be a
// JSON array, and returns the array's elements: sub-slices of b, for a
// handler that decodes each on its own. It also refuses, with an
// invalid_body error, a body that is not an array, that is not well-formed
// where the scan can tell (an element's literals and numbers are left to
// its decoder), or that has data after the array.
func CheckJSONArray(b []byte) ([][]byte, error) {
	if !utf8.Valid(b) {
		return nil, store.Invalid("invalid_body", "The request body is not valid UTF-8.")
	}
	sc := jsonScanner{b: b, collect: true}
	sc.space()
	if sc.i >= len(b) || b[sc.i] != '[' {
		return nil, store.Invalid("invalid_body", "The request body must be a JSON array.")
	}
	sc.value(0, nil)
	if sc.err != nil {
		return nil, sc.err
	}
	if sc.bad {
		return nil, store.Invalid("invalid_body", "The request body is not valid JSON.")
	}
	sc.space()
	if sc.i < len(b) {
		return nil, store.Invalid("invalid_body", "The request body has data after the JSON array.")
	}
	return sc.elems, nil
}

// jsonScanner walks a JSON text. It stops at the first problem: err is set
// for a refused body, bad for a syntax error (left to the decoder).
type jsonScanner struct {
	b   []byte
	i   int
	err error
	bad bool
	// collect: record the elements of a top-level array in elems.
	collect bool
	elems   [][]byte
}

func (s *jsonScanner) stopped() bool { return s.err != nil || s.bad }

func (s *jsonScanner) fail(path []string, format string, args ...any) {
	if s.err == nil {
		p := append([]string{}, path...)
		if len(p) == 0 {
			p = []string{}
		}
		s.err = store.Invalid("invalid_body", "The request body is invalid.", store.FieldError{
			Code: "invalid_value", Message: fmt.Sprintf(format, args...), Path: p})
	}
}

func (s *jsonScanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// value scans one value at nesting depth with the given path.
func (s *jsonScanner) value(depth int, path []string) {
	s.space()
	if s.i >= len(s.b) {
		s.bad = true
		return
	}
	switch c := s.b[s.i]; {
	case c == '{':
		if depth >= MaxJSONDepth {
			s.fail(path, "nests deeper than %d levels", MaxJSONDepth)
			return
		}
		s.object(depth+1, path)
	case c == '[':
		if depth >= MaxJSONDepth {
			s.fail(path, "nests deeper than %d levels", MaxJSONDepth)
			return
		}
		s.i++
		s.space()
		if s.i < len(s.b) && s.b[s.i] == ']' {
			s.i++
			return
		}
		for n := 0; ; n++ {
			top := s.collect && depth == 0
			if top {
				s.space()
			}
			start := s.i
			s.value(depth+1, append(path, strconv.Itoa(n)))
			if s.stopped() {
				return
			}
			if top {
				s.elems = append(s.elems, s.b[start:s.i])
			}
			s.space()
			if s.i >= len(s.b) {
				s.bad = true
				return
			}
			if s.b[s.i] == ']' {
				s.i++
				return
			}
			if s.b[s.i] != ',' {
				s.bad = true
				return
			}
			s.i++
		}
	case c == '"':
		s.str(path, nil)
	default:
		// A number or literal: its bytes up to the next delimiter; the
		// decoder checks its syntax.
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case ',', ']', '}', ' ', '\t', '\n', '\r':
				return
			}
			s.i++
		}
	}
}

// object scans an object whose '{' is at s.i, refusing a key seen before.
func (s *jsonScanner) object(depth int, path []string) {
	s.i++
	var small [8]string
	keys := small[:0]
	var seen map[string]struct{}
	for first := true; ; first = false {
		s.space()
		if s.i >= len(s.b) {
			s.bad = true
			return
		}
		if first && s.b[s.i] == '}' {
			s.i++
			return
		}
		if s.b[s.i] != '"' {
			s.bad = true
			return
		}
		var buf [64]byte
		key := s.str(path, buf[:0])
		if s.stopped() {
			return
		}
		dup := false
		if seen != nil {
			_, dup = seen[key]
		} else {
			for _, k := range keys {
				if k == key {
					dup = true
					break
				}
			}
		}
		if dup {
			s.fail(append(path, key), "is given twice")
			return
		}
		switch {
		case seen != nil:
			seen[key] = struct{}{}
		case len(keys) < cap(small):
			keys = append(keys, key)
		default:
			seen = make(map[string]struct{}, 2*len(keys))
			for _, k := range keys {
				seen[k] = struct{}{}
			}
			seen[key] = struct{}{}
		}
		s.space()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			s.bad = true
			return
		}
		s.i++
		s.value(depth, append(path, key))
		if s.stopped() {
			return
		}
		s.space()
		if s.i >= len(s.b) {
			s.bad = true
			return
		}
		if s.b[s.i] == '}' {
			s.i++
			return
		}
		if s.b[s.i] != ',' {
			s.bad = true
			return
		}
		s.i++
	}
}

// str scans a string whose '"' is at s.i. With a non-nil dst it returns
// the decoded string (object keys); otherwise it only checks it.
func (s *jsonScanner) str(path []string, dst []byte) string {
	s.i++
	start := s.i
	escaped := false
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			raw := s.b[start:s.i]
			s.i++
			if dst == nil {
				return ""
			}
			if !escaped {
				return string(raw)
			}
			return s.unescape(raw, dst)
		case c == '\\':
			escaped = true
			if s.i+1 >= len(s.b) {
				s.bad = true
				return ""
			}
			if s.b[s.i+1] != 'u' {
				s.i += 2
				continue
			}
			r, ok := hex4(s.b, s.i+2)
			if !ok {
				s.bad = true
				return ""
			}
			s.i += 6
			switch {
			case r == 0:
				s.fail(path, "holds the character U+0000")
				return ""
			case utf16.IsSurrogate(r):
				lo, ok := rune(0), false
				if r < 0xdc00 && s.i+1 < len(s.b) && s.b[s.i] == '\\' && s.b[s.i+1] == 'u' {
					lo, ok = hex4(s.b, s.i+2)
					ok = ok && lo >= 0xdc00 && lo <= 0xdfff
				}
				if !ok {
					s.fail(path, "holds a lone UTF-16 surrogate escape")
					return ""
				}
				s.i += 6
			}
		case c < 0x20:
			s.bad = true // control characters must be escaped: the decoder says so
			return ""
		default:
			s.i++
		}
	}
	s.bad = true
	return ""
}

// unescape decodes the inside of a valid string with escapes, into dst.
func (s *jsonScanner) unescape(raw, dst []byte) string {
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' {
			dst = append(dst, c)
			i++
			continue
		}
		switch raw[i+1] {
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, _ := hex4(raw, i+2)
			i += 6
			if utf16.IsSurrogate(r) {
				lo, _ := hex4(raw, i+2)
				r = utf16.DecodeRune(r, lo)
				i += 6
			}
			dst = utf8.AppendRune(dst, r)
			continue
		default: // " \ /
			dst = append(dst, raw[i+1])
		}
		i += 2
	}
	return string(dst)
}

func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			r = r<<4 | rune(c-'0')
		case 'a' <= c && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case 'A' <= c && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}
