package webhooks

import (
	"fmt"

	"github.com/embedauth/connect/internal/keyset"
)

// Limits of the deliveries API's text (see package keyset).
const (
	maxCursorLen = keyset.MaxCursorLen
	maxTextLen   = keyset.MaxTextLen
)

// errBadCursor is the error of every cursor ParseDeliveryCursor refuses.
var errBadCursor = fmt.Errorf("webhooks: %w of the deliveries API", keyset.ErrBadCursor)

// validText reports whether s can be an id or key of the deliveries API:
// 1 to 255 bytes of UTF-8 without control characters.
func validText(s string) bool { return keyset.ValidText(s) }

// String returns the cursor in its opaque form: URL-safe base64, without
// padding, of its version, time and ID.
func (c DeliveryCursor) String() string { return keyset.Format(c.CreatedAt, c.ID) }

// ParseDeliveryCursor reads a cursor written by DeliveryCursor.String. It
// accepts only that exact form: any other text (changed, truncated, padded,
// or of another version) is an error.
func ParseDeliveryCursor(s string) (DeliveryCursor, error) {
	t, id, err := keyset.Parse(s, false)
	if err != nil {
		return DeliveryCursor{}, errBadCursor
	}
	return DeliveryCursor{CreatedAt: t, ID: id}, nil
}
