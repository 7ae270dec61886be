package jsbox

import (
	"crypto/hmac"
	"crypto/md5"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"errors"
	"fmt"
	"hash"
	"strings"
	"unicode/utf8"
)

// maxRandom bounds crypto.randomBytes, as crypto.js does.
const maxRandom = 1 << 20

// The host's operations for crypto.js (Box.host). Bytes cross as latin1
// strings: each character one byte.

func hostHashOp(args []any) (any, error) {
	if len(args) != 3 {
		return nil, errors.New("hash: want 3 arguments")
	}
	alg, _ := args[0].(string)
	data, ok := fromLatin1(args[2])
	if !ok {
		return nil, errors.New("hash: data is not a byte string")
	}
	var h func() hash.Hash
	switch alg {
	case "md5":
		h = md5.New
	case "sha1":
		h = sha1.New
	case "sha224":
		h = sha256.New224
	case "sha256":
		h = sha256.New
	case "sha384":
		h = sha512.New384
	case "sha512":
		h = sha512.New
	default:
		return nil, fmt.Errorf("Digest method not supported: %q", alg)
	}
	var w hash.Hash
	if args[1] == nil {
		w = h()
	} else {
		key, ok := fromLatin1(args[1])
		if !ok {
			return nil, errors.New("hmac: the key is not a byte string")
		}
		w = hmac.New(h, key)
	}
	w.Write(data)
	return toLatin1(w.Sum(nil)), nil
}

func hostRandomOp(args []any) (any, error) {
	n, ok := args0Int(args)
	if !ok || n < 0 || n > maxRandom {
		return nil, fmt.Errorf("randomBytes: size out of range")
	}
	b := make([]byte, n)
	rand.Read(b)
	return toLatin1(b), nil
}

// uuid4 is a random (version 4) UUID in its canonical form.
func uuid4() string {
	var u [16]byte
	rand.Read(u[:])
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

func hostEqualOp(args []any) (any, error) {
	if len(args) != 2 {
		return nil, errors.New("timingSafeEqual: want 2 arguments")
	}
	a, ok1 := fromLatin1(args[0])
	b, ok2 := fromLatin1(args[1])
	if !ok1 || !ok2 {
		return nil, errors.New("timingSafeEqual: not byte strings")
	}
	return subtle.ConstantTimeCompare(a, b) == 1, nil
}

func args0Int(args []any) (int, bool) {
	if len(args) != 1 {
		return 0, false
	}
	switch n := args[0].(type) {
	case int:
		return n, true
	case float64:
		if n != float64(int(n)) {
			return 0, false
		}
		return int(n), true
	}
	return 0, false
}

// fromLatin1 reads a string of characters below 256 as the bytes they are.
func fromLatin1(v any) ([]byte, bool) {
	s, ok := v.(string)
	if !ok {
		return nil, false
	}
	b := make([]byte, 0, len(s))
	for _, r := range s {
		if r > 0xff {
			return nil, false
		}
		b = append(b, byte(r))
	}
	return b, true
}

// toLatin1 writes bytes as a string of one character each.
func toLatin1(b []byte) string {
	var sb strings.Builder
	sb.Grow(len(b) + len(b)/2)
	for _, c := range b {
		if c < utf8.RuneSelf {
			sb.WriteByte(c)
		} else {
			sb.WriteRune(rune(c))
		}
	}
	return sb.String()
}
