package oplog

import (
	"fmt"

	"github.com/embedauth/connect/internal/keyset"
)

// Limits of the log API's text (see package keyset).
const (
	maxCursorLen = keyset.MaxCursorLen
	maxTextLen   = keyset.MaxTextLen
)

// errBadCursor is the error of every cursor ParseCursor refuses.
var errBadCursor = fmt.Errorf("oplog: %w of the operations log API", keyset.ErrBadCursor)

// validText reports whether s can be an id or key of the log API.
func validText(s string) bool { return keyset.ValidText(s) }

// String returns the cursor in its opaque form: URL-safe base64, without
// padding, of its version, time and ID.
func (c Cursor) String() string { return keyset.Format(c.CreatedAt, c.ID) }

// ParseCursor reads a cursor written by Cursor.String of a position of
// an entry: its CreatedAt at microsecond precision (which every Store
// compares alike), its ID 1 to 255 characters without control
// characters. It accepts only that exact form: any other text (changed,
// truncated, padded, or of another version) is an error.
func ParseCursor(s string) (Cursor, error) {
	t, id, err := keyset.Parse(s, true)
	if err != nil {
		return Cursor{}, errBadCursor
	}
	return Cursor{CreatedAt: t, ID: id}, nil
}
