package webhooks

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

// maxCursorLen bounds the text of a cursor that ParseDeliveryCursor reads.
const maxCursorLen = 1024

// maxTextLen bounds the ids and keys the deliveries API accepts: those of
// connections and integrations are at most 255 characters.
const maxTextLen = 255

// errBadCursor is the error of every cursor ParseDeliveryCursor refuses.
var errBadCursor = errors.New("webhooks: not a cursor of the deliveries API")

// String returns the cursor in its opaque form: URL-safe base64, without
// padding, of its version, time and ID.
func (c DeliveryCursor) String() string {
	raw := cursorVersion + "|" + c.CreatedAt.UTC().Format(time.RFC3339Nano) + "|" + c.ID
	return base64.RawURLEncoding.EncodeToString([]byte(raw))
}

// ParseDeliveryCursor reads a cursor written by DeliveryCursor.String. It
// accepts only that exact form: any other text (changed, truncated, padded,
// or of another version) is an error.
func ParseDeliveryCursor(s string) (DeliveryCursor, error) {
	if s == "" || len(s) > maxCursorLen {
		return DeliveryCursor{}, errBadCursor
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil {
		return DeliveryCursor{}, errBadCursor
	}
	version, rest, ok := strings.Cut(string(raw), "|")
	if !ok || version != cursorVersion {
		return DeliveryCursor{}, errBadCursor
	}
	ts, id, ok := strings.Cut(rest, "|")
	if !ok || !validText(id) {
		return DeliveryCursor{}, errBadCursor
	}
	t, err := time.Parse(time.RFC3339Nano, ts)
	// Only the form String writes: UTC, no trailing zeros.
	if err != nil || t.Location() != time.UTC || t.Format(time.RFC3339Nano) != ts {
		return DeliveryCursor{}, errBadCursor
	}
	return DeliveryCursor{CreatedAt: t, ID: id}, nil
}

// validText reports whether s can be an id or key of the deliveries API:
// 1 to 255 bytes of UTF-8 without control characters (so no NUL, which no
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
