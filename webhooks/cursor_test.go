package webhooks

import (
	"strings"
	"testing"
	"time"
)

func TestDeliveryCursor(t *testing.T) {
	t.Parallel()
	for _, c := range []DeliveryCursor{
		{CreatedAt: time.Date(2026, 5, 1, 12, 0, 0, 123456000, time.UTC), ID: "3f1c9a52-0e7b-4c1e-9d5a-2b6f8e4a1c07"},
		{CreatedAt: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC), ID: "x"},
		// Another zone is written in UTC; an id with the separator and
		// non-ASCII letters comes back whole.
		{CreatedAt: time.Date(1999, 12, 31, 23, 59, 59, 1, time.FixedZone("x", 3600)), ID: "a|b|é"},
		{CreatedAt: time.Time{}, ID: strings.Repeat("i", 255)},
	} {
		s := c.String()
		if strings.ContainsAny(s, "+/=|") {
			t.Errorf("%+v: cursor %q is not URL-safe", c, s)
		}
		got, err := ParseDeliveryCursor(s)
		if err != nil || !got.CreatedAt.Equal(c.CreatedAt) || got.ID != c.ID {
			t.Errorf("%+v: ParseDeliveryCursor(%q) = %+v, %v", c, s, got, err)
		}
	}
	// Deliveries keep nanoseconds; the text's form is package keyset's,
	// whose tests refuse every malformed one.
	if _, err := ParseDeliveryCursor("not a cursor!"); err == nil {
		t.Error("ParseDeliveryCursor accepted text that is no cursor")
	}
}

// FuzzParseDeliveryCursor: ParseDeliveryCursor never panics, and a cursor
// it accepts is exactly the String of what it returns (one text per
// position, so a changed cursor is refused rather than misread).
func FuzzParseDeliveryCursor(f *testing.F) {
	f.Add(DeliveryCursor{CreatedAt: time.Date(2026, 5, 1, 12, 0, 0, 123456000, time.UTC), ID: "d1"}.String())
	f.Add(DeliveryCursor{ID: "x|y"}.String())
	f.Add("MXwyMDI2LTA1LTAxVDEyOjAwOjAwWnxkMQ")
	f.Add("")
	f.Add("====")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseDeliveryCursor(s)
		if err != nil {
			return
		}
		if got := c.String(); got != s {
			t.Fatalf("ParseDeliveryCursor(%q) = %+v, whose String is %q", s, c, got)
		}
		if !validText(c.ID) {
			t.Fatalf("ParseDeliveryCursor(%q) accepted the id %q", s, c.ID)
		}
	})
}
