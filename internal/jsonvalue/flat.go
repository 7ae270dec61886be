package jsonvalue

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// DecodeFlatObject decodes s as json.Unmarshal decodes it into a
// map[string]any, when s is an object whose values are all strings,
// numbers, booleans or null and whose strings have no escapes: the JSON
// columns a Store keeps (metadata, tags) mostly are. It reports false,
// having decoded nothing, for anything else (nested values, escapes, text
// that is not UTF-8, numbers out of range, bad JSON): decode those with
// encoding/json.
func DecodeFlatObject(s string) (map[string]any, bool) {
	p := flatParser{s: s}
	p.space()
	if !p.take('{') {
		return nil, false
	}
	m := map[string]any{}
	p.space()
	if p.take('}') {
		return m, p.end()
	}
	for {
		p.space()
		k, ok := p.str()
		if !ok {
			return nil, false
		}
		p.space()
		if !p.take(':') {
			return nil, false
		}
		p.space()
		v, ok := p.value()
		if !ok {
			return nil, false
		}
		m[k] = v
		p.space()
		if p.take(',') {
			continue
		}
		if p.take('}') {
			return m, p.end()
		}
		return nil, false
	}
}

// DecodeFlatStringObject is DecodeFlatObject for an object whose values are
// all strings, as json.Unmarshal decodes it into a map[string]string.
func DecodeFlatStringObject(s string) (map[string]string, bool) {
	m, ok := DecodeFlatObject(s)
	if !ok {
		return nil, false
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		str, ok := v.(string)
		if !ok {
			return nil, false
		}
		out[k] = str
	}
	return out, true
}

type flatParser struct {
	s string
	i int
}

func (p *flatParser) space() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *flatParser) take(c byte) bool {
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

// end reports whether only white space is left.
func (p *flatParser) end() bool {
	p.space()
	return p.i == len(p.s)
}

// str reads a string without escapes.
func (p *flatParser) str() (string, bool) {
	if !p.take('"') {
		return "", false
	}
	start, ascii := p.i, true
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '"':
			v := p.s[start:p.i]
			p.i++
			if !ascii && !utf8.ValidString(v) {
				return "", false // encoding/json replaces the bad bytes
			}
			return v, true
		case c == '\\' || c < 0x20:
			return "", false
		case c >= utf8.RuneSelf:
			ascii = false
		}
		p.i++
	}
	return "", false
}

func (p *flatParser) literal(word string) bool {
	if len(p.s)-p.i >= len(word) && p.s[p.i:p.i+len(word)] == word {
		p.i += len(word)
		return true
	}
	return false
}

func (p *flatParser) value() (any, bool) {
	if p.i >= len(p.s) {
		return nil, false
	}
	switch c := p.s[p.i]; {
	case c == '"':
		return p.str()
	case c == 't':
		return true, p.literal("true")
	case c == 'f':
		return false, p.literal("false")
	case c == 'n':
		return nil, p.literal("null")
	case c == '-' || ('0' <= c && c <= '9'):
		start := p.i
		for p.i < len(p.s) {
			switch c := p.s[p.i]; {
			case c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' || ('0' <= c && c <= '9'):
				p.i++
				continue
			}
			break
		}
		n := p.s[start:p.i]
		if !validNumber(n) {
			return nil, false
		}
		f, err := strconv.ParseFloat(n, 64)
		return f, err == nil
	}
	return nil, false
}

// Unmarshal decodes s into dst as json.Unmarshal does; a flat object into
// a nil *map[string]any or *map[string]string is decoded without
// encoding/json (see DecodeFlatObject).
func Unmarshal(s string, dst any) error {
	switch d := dst.(type) {
	case *map[string]any:
		if *d == nil {
			if m, ok := DecodeFlatObject(s); ok {
				*d = m
				return nil
			}
		}
	case *map[string]string:
		if *d == nil {
			if m, ok := DecodeFlatStringObject(s); ok {
				*d = m
				return nil
			}
		}
	}
	return json.Unmarshal([]byte(s), dst)
}
