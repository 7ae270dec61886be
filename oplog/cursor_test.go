package oplog

import (
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
	// The log's Stores keep microseconds: a finer time is no position.
	if _, err := ParseCursor(Cursor{CreatedAt: time.Date(2026, 5, 1, 12, 0, 0, 1, time.UTC), ID: "d"}.String()); err == nil {
		t.Error("ParseCursor accepted a time in nanoseconds")
	}
	if _, err := ParseCursor("not a cursor!"); err == nil {
		t.Error("ParseCursor accepted text that is no cursor")
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
