// Package keyset writes and reads the opaque cursors of the API's
// keyset-paged lists: a position (created_at, id) in a list ordered
// newest first (webhook deliveries, the operations log), or a numeric id
// in a list ordered by it (connections).
package keyset

import (
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// version starts the text of every cursor, so that its form can change
// without old cursors being misread.
const version = "1"

// MaxCursorLen bounds the text of a cursor that Parse reads.
const MaxCursorLen = 1024

// MaxTextLen bounds the ids and keys the paged APIs accept: those of
// entries, deliveries, integrations and connections are at most 255
// characters.
const MaxTextLen = 255

// ErrBadCursor is the error of every cursor Parse refuses.
var ErrBadCursor = errors.New("not a cursor of this list")

// Format returns the opaque form of a position: URL-safe base64, without
// padding, of the version, the time in UTC (RFC 3339 with nanoseconds)
// and the id.
func Format(t time.Time, id string) string {
	raw := version + "|" + t.UTC().Format(time.RFC3339Nano) + "|" + id
	return base64.RawURLEncoding.EncodeToString([]byte(raw))
}

// Parse reads a cursor written by Format, whose id is ValidText. It
// accepts only that exact form: any other text (changed, truncated,
// padded, or of another version) is ErrBadCursor. With micro, the time
// must be whole microseconds (the precision a list's Stores compare at).
func Parse(s string, micro bool) (time.Time, string, error) {
	// The decoder skips line breaks: a cursor has none.
	if s == "" || len(s) > MaxCursorLen || strings.ContainsAny(s, "\r\n") {
		return time.Time{}, "", ErrBadCursor
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil {
		return time.Time{}, "", ErrBadCursor
	}
	v, rest, ok := strings.Cut(string(raw), "|")
	if !ok || v != version {
		return time.Time{}, "", ErrBadCursor
	}
	ts, id, ok := strings.Cut(rest, "|")
	if !ok || !ValidText(id) {
		return time.Time{}, "", ErrBadCursor
	}
	t, err := time.Parse(time.RFC3339Nano, ts)
	// Only the form Format writes: UTC, no trailing zeros.
	if err != nil || t.Location() != time.UTC || t.Format(time.RFC3339Nano) != ts || (micro && t.Nanosecond()%1000 != 0) {
		return time.Time{}, "", ErrBadCursor
	}
	return t, id, nil
}

// ValidText reports whether s can be an id or key of a paged API: 1 to
// MaxTextLen bytes of UTF-8 without control characters (so no NUL, which
// no Store can hold).
func ValidText(s string) bool {
	if s == "" || len(s) > MaxTextLen || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}

// idTag marks the cursors of FormatID, so that a cursor of one kind of
// list is never read as one of the other.
const idTag = "id"

// FormatID returns the opaque form of a position in a list ordered by a
// numeric id: URL-safe base64, without padding, of the version, a tag
// and the id in decimal.
func FormatID(id int64) string {
	raw := version + "|" + idTag + "|" + strconv.FormatInt(id, 10)
	return base64.RawURLEncoding.EncodeToString([]byte(raw))
}

// ParseID reads a cursor written by FormatID of a positive id. It accepts
// only that exact form: any other text (changed, truncated, padded, of
// another version, or a cursor of Format) is ErrBadCursor.
func ParseID(s string) (int64, error) {
	if s == "" || len(s) > MaxCursorLen || strings.ContainsAny(s, "\r\n") {
		return 0, ErrBadCursor
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil {
		return 0, ErrBadCursor
	}
	v, rest, ok := strings.Cut(string(raw), "|")
	if !ok || v != version {
		return 0, ErrBadCursor
	}
	tag, digits, ok := strings.Cut(rest, "|")
	if !ok || tag != idTag {
		return 0, ErrBadCursor
	}
	id, err := strconv.ParseInt(digits, 10, 64)
	// Only the form FormatID writes: no sign, no leading zero.
	if err != nil || id <= 0 || strconv.FormatInt(id, 10) != digits {
		return 0, ErrBadCursor
	}
	return id, nil
}
