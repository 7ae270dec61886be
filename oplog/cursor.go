package oplog

import (
	"encoding/base64"
	"errors"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// cursorVersion starts the text of every cursor, so that its form can
// change without old cursors being misread.
const cursorVersion = "1"

// maxCursorLen bounds the text of a cursor that ParseCursor reads.
const maxCursorLen = 1024

// maxTextLen bounds the ids and keys the log API accepts: those of
// entries, integrations and connections are at most 255 characters.
const maxTextLen = 255

// errBadCursor is the error of every cursor ParseCursor refuses.
var errBadCursor = errors.New("oplog: not a cursor of the operations log API")

// String returns the cursor in its opaque form: URL-safe base64, without
// padding, of its version, time and ID.
func (c Cursor) String() string {
	raw := cursorVersion + "|" + c.CreatedAt.UTC().Format(time.RFC3339Nano) + "|" + c.ID
	return base64.RawURLEncoding.EncodeToString([]byte(raw))
}

// ParseCursor reads a cursor written by Cursor.String of a position of
// an entry: its CreatedAt at microsecond precision, its ID 1 to 255
// characters without control characters. It accepts only that exact form:
// any other text (changed, truncated, padded, or of another version) is an
// error.
func ParseCursor(s string) (Cursor, error) {
	if s == "" || len(s) > maxCursorLen {
		return Cursor{}, errBadCursor
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil {
		return Cursor{}, errBadCursor
	}
	version, rest, ok := strings.Cut(string(raw), "|")
	if !ok || version != cursorVersion {
		return Cursor{}, errBadCursor
	}
	ts, id, ok := strings.Cut(rest, "|")
	if !ok || !validText(id) {
		return Cursor{}, errBadCursor
	}
	t, err := time.Parse(time.RFC3339Nano, ts)
	// Only the form String writes (UTC, no trailing zeros), of a time at
	// the precision entries are stored at (microseconds), which every
	// Store compares alike.
	if err != nil || t.Location() != time.UTC || t.Format(time.RFC3339Nano) != ts || t.Nanosecond()%1000 != 0 {
		return Cursor{}, errBadCursor
	}
	return Cursor{CreatedAt: t, ID: id}, nil
}

// validText reports whether s can be an id or key of the log API: 1 to
// 255 bytes of UTF-8 without control characters (so no NUL, which no
// store can hold).
func validText(s string) bool {
	if s == "" || len(s) > maxTextLen || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}
