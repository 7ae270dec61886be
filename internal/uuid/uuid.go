// Package uuid makes random UUIDs and reads them as Postgres' uuid type
// does, so that the stores agree on which IDs are UUIDs and on their
// canonical form.
package uuid

import (
	"crypto/rand"
	"encoding/hex"
)

// New returns a random (version 4) UUID in canonical form: lower-case hex
// in groups of 8-4-4-4-12.
func New() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return format(b)
}

// Parse returns s in canonical form, and false when s is not a UUID in a
// form Postgres' uuid input accepts: 32 hex digits of either case, with at
// most one hyphen after each group of four digits but the last, optionally
// in braces.
func Parse(s string) (string, bool) {
	if len(s) > 0 && s[0] == '{' {
		if len(s) < 2 || s[len(s)-1] != '}' {
			return "", false
		}
		s = s[1 : len(s)-1]
	}
	var b [16]byte
	i := 0
	for n := range b {
		if i+2 > len(s) {
			return "", false
		}
		hi, ok1 := unhex(s[i])
		lo, ok2 := unhex(s[i+1])
		if !ok1 || !ok2 {
			return "", false
		}
		b[n] = hi<<4 | lo
		i += 2
		if i < len(s) && s[i] == '-' && n%2 == 1 && n < len(b)-1 {
			i++
		}
	}
	if i != len(s) {
		return "", false
	}
	return format(b), true
}

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

func format(b [16]byte) string {
	var out [36]byte
	hex.Encode(out[0:8], b[0:4])
	out[8] = '-'
	hex.Encode(out[9:13], b[4:6])
	out[13] = '-'
	hex.Encode(out[14:18], b[6:8])
	out[18] = '-'
	hex.Encode(out[19:23], b[8:10])
	out[23] = '-'
	hex.Encode(out[24:36], b[10:16])
	return string(out[:])
}
