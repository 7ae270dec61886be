package oplog

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"
)

func TestCursor(t *testing.T) {
	t.Parallel()
	for _, c := range []Cursor{
		{CreatedAt: time.Date(2026, 5, 1, 12, 0, 0, 123456000, time.UTC), ID: "0189c3a1f2b4d5e6a1b2c3d4e5f6"},
		{CreatedAt: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC), ID: "x"},
		// Another zone is written in UTC; an id with the separator and
		// non-ASCII letters comes back whole.
		{CreatedAt: time.Date(1999, 12, 31, 23, 59, 59, 1000, time.FixedZone("x", 3600)), ID: "a|b|é"},
		{CreatedAt: time.Time{}, ID: strings.Repeat("i", 255)},
	} {
		s := c.String()
		if strings.ContainsAny(s, "+/=|") {
			t.Errorf("%+v: cursor %q is not URL-safe", c, s)
		}
		got, err := ParseCursor(s)
		if err != nil || !got.CreatedAt.Equal(c.CreatedAt) || got.ID != c.ID {
			t.Errorf("%+v: ParseCursor(%q) = %+v, %v", c, s, got, err)
		}
	}
	enc := func(raw string) string { return base64.RawURLEncoding.EncodeToString([]byte(raw)) }
	// 26 bytes: the last of the 35 characters carries 2 unused bits.
	valid := Cursor{CreatedAt: time.Date(2026, 5, 1, 12, 0, 0, 5e8, time.UTC), ID: "d"}.String()
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	nonCanonical := valid[:len(valid)-1] + string(alphabet[strings.IndexByte(alphabet, valid[len(valid)-1])+1])
	if _, err := ParseCursor(valid); err != nil || len(valid) != 35 {
		t.Fatalf("ParseCursor(%q): %v", valid, err)
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
		"nanoseconds":       enc("1|2026-05-01T12:00:00.000000001Z|d1"),
		"NUL in id":         enc("1|2026-05-01T12:00:00.5Z|d\x00"),
		"control in id":     enc("1|2026-05-01T12:00:00.5Z|d\n1"),
		"invalid UTF-8 id":  enc("1|2026-05-01T12:00:00.5Z|\xff"),
		"id too long":       enc("1|2026-05-01T12:00:00.5Z|" + strings.Repeat("i", 256)),
		"too long":          strings.Repeat("A", maxCursorLen+1),
	} {
		if c, err := ParseCursor(s); err == nil {
			t.Errorf("%s: ParseCursor(%q) = {%s %q}, want an error", name, s, c.CreatedAt, c.ID)
		}
	}
}

// FuzzParseCursor: ParseCursor never panics, and a cursor it accepts is
// exactly the String of what it returns (one text per position, so that a
// changed cursor is refused rather than misread), a position an entry can
// have: an id the API accepts, a time at microsecond precision.
func FuzzParseCursor(f *testing.F) {
	f.Add(Cursor{CreatedAt: time.Date(2026, 5, 1, 12, 0, 0, 123456000, time.UTC), ID: "d1"}.String())
	f.Add(Cursor{ID: "x|y"}.String())
	f.Add("MXwyMDI2LTA1LTAxVDEyOjAwOjAwWnxkMQ")
	f.Add("")
	f.Add("====")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseCursor(s)
		if err != nil {
			return
		}
		if got := c.String(); got != s {
			t.Fatalf("ParseCursor(%q) = %+v, whose String is %q", s, c, got)
		}
		if !validText(c.ID) {
			t.Fatalf("ParseCursor(%q) accepted the id %q", s, c.ID)
		}
		if c.CreatedAt.Nanosecond()%1000 != 0 || c.CreatedAt.Location() != time.UTC {
			t.Fatalf("ParseCursor(%q) accepted the time %s", s, c.CreatedAt.Format(time.RFC3339Nano))
		}
	})
}
