package webhooks

import (
	"encoding/base64"
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
	enc := func(raw string) string { return base64.RawURLEncoding.EncodeToString([]byte(raw)) }
	// 26 bytes: the last of the 35 characters carries 2 unused bits.
	valid := DeliveryCursor{CreatedAt: time.Date(2026, 5, 1, 12, 0, 0, 5e8, time.UTC), ID: "d"}.String()
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	nonCanonical := valid[:len(valid)-1] + string(alphabet[strings.IndexByte(alphabet, valid[len(valid)-1])+1])
	if _, err := ParseDeliveryCursor(valid); err != nil || len(valid) != 35 {
		t.Fatalf("ParseDeliveryCursor(%q): %v", valid, err)
	}
	for name, s := range map[string]string{
		"empty":             "",
		"not base64":        "not a cursor!",
		"padded":            base64.URLEncoding.EncodeToString([]byte("1|2026-05-01T12:00:00.5Z|d")),
		"standard base64":   base64.RawStdEncoding.EncodeToString([]byte("1|2026-05-01T12:00:00.5Z|d1?>?")),
		"truncated":         valid[:20],
		"extra character":   valid + "A",
		"non-canonical end": nonCanonical,
		"other version":     enc("2|2026-05-01T12:00:00.5Z|d1"),
		"no id":             enc("1|2026-05-01T12:00:00.5Z|"),
		"no time":           enc("1||d1"),
		"no separator":      enc("1"),
		"bad time":          enc("1|yesterday|d1"),
		"not UTC":           enc("1|2026-05-01T12:00:00.5+01:00|d1"),
		"trailing zeros":    enc("1|2026-05-01T12:00:00.500Z|d1"),
		"NUL in id":         enc("1|2026-05-01T12:00:00.5Z|d\x00"),
		"control in id":     enc("1|2026-05-01T12:00:00.5Z|d\n1"),
		"invalid UTF-8 id":  enc("1|2026-05-01T12:00:00.5Z|\xff"),
		"id too long":       enc("1|2026-05-01T12:00:00.5Z|" + strings.Repeat("i", 256)),
		"too long":          strings.Repeat("A", maxCursorLen+1),
	} {
		if c, err := ParseDeliveryCursor(s); err == nil {
			t.Errorf("%s: ParseDeliveryCursor(%q) = {%s %q}, want an error", name, s, c.CreatedAt, c.ID)
		}
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
