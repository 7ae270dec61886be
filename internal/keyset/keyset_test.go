package keyset

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"
)

func TestFormatParse(t *testing.T) {
	t.Parallel()
	type position struct {
		CreatedAt time.Time
		ID        string
	}
	for _, c := range []position{
		{CreatedAt: time.Date(2026, 5, 1, 12, 0, 0, 123456000, time.UTC), ID: "0189c3a1f2b4d5e6a1b2c3d4e5f6"},
		{CreatedAt: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC), ID: "x"},
		// Another zone is written in UTC; an id with the separator and
		// non-ASCII letters comes back whole.
		{CreatedAt: time.Date(1999, 12, 31, 23, 59, 59, 1000, time.FixedZone("x", 3600)), ID: "a|b|é"},
		{CreatedAt: time.Time{}, ID: strings.Repeat("i", 255)},
	} {
		s := Format(c.CreatedAt, c.ID)
		if strings.ContainsAny(s, "+/=|") {
			t.Errorf("%+v: cursor %q is not URL-safe", c, s)
		}
		gotT, gotID, err := Parse(s, true)
		if err != nil || !gotT.Equal(c.CreatedAt) || gotID != c.ID {
			t.Errorf("%+v: Parse(%q) = %s %q, %v", c, s, gotT, gotID, err)
		}
	}
	enc := func(raw string) string { return base64.RawURLEncoding.EncodeToString([]byte(raw)) }
	// 26 bytes: the last of the 35 characters carries 2 unused bits.
	valid := Format(time.Date(2026, 5, 1, 12, 0, 0, 5e8, time.UTC), "d")
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	nonCanonical := valid[:len(valid)-1] + string(alphabet[strings.IndexByte(alphabet, valid[len(valid)-1])+1])
	if _, _, err := Parse(valid, true); err != nil || len(valid) != 35 {
		t.Fatalf("Parse(%q): %v", valid, err)
	}
	// Nanoseconds only where the list's Stores keep them.
	nano := Format(time.Date(2026, 5, 1, 12, 0, 0, 1, time.UTC), "d1")
	if _, _, err := Parse(nano, false); err != nil {
		t.Errorf("Parse(%q, false): %v", nano, err)
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
		"too long":          strings.Repeat("A", MaxCursorLen+1),
		"a line break":      valid[:10] + "\n" + valid[10:],
		"a carriage return": valid[:10] + "\r" + valid[10:],
	} {
		if ct, id, err := Parse(s, true); err == nil {
			t.Errorf("%s: Parse(%q) = {%s %q}, want an error", name, s, ct, id)
		}
	}
}

// FuzzParse: Parse never panics, and a cursor it accepts is exactly the
// Format of what it returns (one text per position, so that a changed
// cursor is refused rather than misread), with an id ValidText accepts.
func FuzzParse(f *testing.F) {
	f.Add(Format(time.Date(2026, 5, 1, 12, 0, 0, 123456000, time.UTC), "d1"), true)
	f.Add(Format(time.Time{}, "x|y"), false)
	f.Add("MXwyMDI2LTA1LTAxVDEyOjAwOjAwWnxkMQ", true)
	f.Add("====", false)
	f.Fuzz(func(t *testing.T, s string, micro bool) {
		ct, id, err := Parse(s, micro)
		if err != nil {
			return
		}
		if got := Format(ct, id); got != s {
			t.Fatalf("Parse(%q) = %s %q, whose Format is %q", s, ct, id, got)
		}
		if !ValidText(id) || ct.Location() != time.UTC || (micro && ct.Nanosecond()%1000 != 0) {
			t.Fatalf("Parse(%q, %v) accepted %s %q", s, micro, ct.Format(time.RFC3339Nano), id)
		}
	})
}

func TestFormatParseID(t *testing.T) {
	t.Parallel()
	for _, id := range []int64{1, 9, 10, 1234567, 1<<63 - 1} {
		s := FormatID(id)
		if strings.ContainsAny(s, "+/=|") {
			t.Errorf("%d: cursor %q is not URL-safe", id, s)
		}
		if got, err := ParseID(s); err != nil || got != id {
			t.Errorf("ParseID(FormatID(%d)) = %d, %v", id, got, err)
		}
	}
	enc := func(raw string) string { return base64.RawURLEncoding.EncodeToString([]byte(raw)) }
	valid := FormatID(42)
	for name, s := range map[string]string{
		"empty":             "",
		"not base64":        "not a cursor!",
		"padded":            base64.URLEncoding.EncodeToString([]byte("1|id|42")),
		"truncated":         valid[:5],
		"extra character":   valid + "A",
		"other version":     enc("2|id|42"),
		"other tag":         enc("1|ix|42"),
		"no tag":            enc("1|42"),
		"no id":             enc("1|id|"),
		"zero":              enc("1|id|0"),
		"negative":          enc("1|id|-4"),
		"plus sign":         enc("1|id|+4"),
		"leading zero":      enc("1|id|042"),
		"not a number":      enc("1|id|4x"),
		"space":             enc("1|id| 4"),
		"overflow":          enc("1|id|9223372036854775808"),
		"a time cursor":     Format(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC), "42"),
		"too long":          strings.Repeat("A", MaxCursorLen+1),
		"a line break":      valid[:4] + "\n" + valid[4:],
		"a carriage return": valid[:4] + "\r" + valid[4:],
	} {
		if id, err := ParseID(s); err == nil {
			t.Errorf("%s: ParseID(%q) = %d, want an error", name, s, id)
		}
	}
	// A cursor of FormatID is no cursor of Format.
	if _, _, err := Parse(valid, false); err == nil {
		t.Errorf("Parse(%q) of an id cursor: want an error", valid)
	}
}

// FuzzParseID: ParseID never panics, and a cursor it accepts is exactly
// the FormatID of what it returns, a positive id.
func FuzzParseID(f *testing.F) {
	f.Add(FormatID(42))
	f.Add("MXxpZHw0Mg")
	f.Add("====")
	f.Fuzz(func(t *testing.T, s string) {
		id, err := ParseID(s)
		if err != nil {
			return
		}
		if got := FormatID(id); got != s || id <= 0 {
			t.Fatalf("ParseID(%q) = %d, whose FormatID is %q", s, id, got)
		}
	})
}
