package httpapi

import (
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/embedauth/connect/store"
)

// CheckRequest validates what every route reads from a request before it
// is routed, so that no handler, no Store and no upstream sees text that
// one Store would keep and another refuse. It refuses, with a 400:
//
//   - invalid_uri_params: a decoded path that is not UTF-8 or holds a
//     control character (C0, DEL or C1, NUL included);
//   - invalid_query_params: a query with a malformed %-escape, or whose
//     decoded keys or values are not UTF-8, or hold a control character
//     (tab, line feed and carriage return are allowed in values);
//   - invalid_headers: a header value that is not UTF-8 or holds a control
//     character other than tab. Cookie is left to the routes that read
//     one cookie of theirs: a browser sends every cookie of the site.
//
// The proxy's path and query are forwarded byte for byte, and get the same
// rules: a provider API takes UTF-8 text, and refusing here keeps bytes
// that cannot be shown, stored or logged faithfully from going out with a
// connection's credentials.
//
// Messages name the offending parameter or header, never its value.
func CheckRequest(r *http.Request) error {
	if !cleanText(r.URL.Path, "") {
		return store.Invalid("invalid_uri_params", "The request path is invalid.", store.FieldError{
			Code: "invalid_value", Message: "must be UTF-8 without control characters", Path: []string{"path"}})
	}
	if err := checkQuery(r.URL.RawQuery); err != nil {
		return err
	}
	for name, values := range r.Header {
		if name == "Cookie" {
			continue
		}
		for _, v := range values {
			if !cleanText(v, "\t") {
				return store.Invalid("invalid_headers", fmt.Sprintf("The %s header is invalid.", printableName(name)), store.FieldError{
					Code: "invalid_value", Message: "must be UTF-8 without control characters", Path: []string{strings.ToLower(printableName(name))}})
			}
		}
	}
	return nil
}

// cleanText reports whether s is UTF-8 without control characters (C0,
// DEL, C1) other than those in allow.
func cleanText(s string, allow string) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if (c < 0x20 || c == 0x7f) && strings.IndexByte(allow, c) < 0 {
				return false
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || r >= 0x80 && r <= 0x9f {
			return false
		}
		i += n
	}
	return true
}

// checkQuery decodes each key and value of a raw query ('&'-separated,
// '+' as space) and checks it.
func checkQuery(raw string) error {
	var buf [256]byte
	for raw != "" {
		var part string
		part, raw, _ = strings.Cut(raw, "&")
		if part == "" {
			continue
		}
		k, v, _ := strings.Cut(part, "=")
		key, ok := unescapeQuery(k, buf[:0])
		name := "query"
		if !ok || !cleanText(key, "") {
			return invalidQuery(name, "must be %-encoded UTF-8 without control characters")
		}
		name = key
		val, ok := unescapeQuery(v, buf[:0])
		if !ok {
			return invalidQuery(name, "is not well-formed %-encoding")
		}
		if !cleanText(val, "\t\n\r") {
			return invalidQuery(name, "must be UTF-8 without control characters")
		}
	}
	return nil
}

func invalidQuery(name, message string) error {
	return store.Invalid("invalid_query_params", "The query is invalid.", store.FieldError{
		Code: "invalid_value", Message: message, Path: []string{name}})
}

// unescapeQuery decodes %-escapes and '+' into dst; ok is false for a
// malformed escape.
func unescapeQuery(s string, dst []byte) (string, bool) {
	if strings.IndexByte(s, '%') < 0 && strings.IndexByte(s, '+') < 0 {
		return s, true
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '%':
			if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
				return "", false
			}
			dst = append(dst, unhex(s[i+1])<<4|unhex(s[i+2]))
			i += 2
		case '+':
			dst = append(dst, ' ')
		default:
			dst = append(dst, c)
		}
	}
	return string(dst), true
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

// printableName returns a header name fit for a message: net/http only
// delivers token names, but a handler may be called in process with any.
func printableName(name string) string {
	if cleanText(name, "") {
		return name
	}
	return "request's"
}
