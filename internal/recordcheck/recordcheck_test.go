package recordcheck

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/embedauth/connect/functions"
	"github.com/embedauth/connect/store"
)

func TestScope(t *testing.T) {
	t.Parallel()
	ok := functions.RecordScope{EnvironmentID: 1, ConnectionID: 2, Model: "Issue", Variant: functions.BaseVariant}
	for name, tc := range map[string]struct {
		change func(*functions.RecordScope)
		valid  bool
	}{
		"valid":                 {func(*functions.RecordScope) {}, true},
		"environment 0":         {func(s *functions.RecordScope) { s.EnvironmentID = 0 }, true},
		"no connection":         {func(s *functions.RecordScope) { s.ConnectionID = 0 }, false},
		"negative connection":   {func(s *functions.RecordScope) { s.ConnectionID = -1 }, false},
		"no model":              {func(s *functions.RecordScope) { s.Model = "" }, false},
		"no variant":            {func(s *functions.RecordScope) { s.Variant = "" }, false},
		"NUL in model":          {func(s *functions.RecordScope) { s.Model = "a\x00" }, false},
		"invalid UTF-8 variant": {func(s *functions.RecordScope) { s.Variant = "\xff" }, false},
		"unicode":               {func(s *functions.RecordScope) { s.Model, s.Variant = "Ïssue", "vä" }, true},
	} {
		s := ok
		tc.change(&s)
		if err := Scope(s); (err == nil) != tc.valid || (err != nil && !errors.Is(err, store.ErrInvalid)) {
			t.Errorf("%s: Scope(%+v) = %v", name, s, err)
		}
	}
}

func TestID(t *testing.T) {
	t.Parallel()
	for id, valid := range map[string]bool{
		"a":                               true,
		"":                                false,
		strings.Repeat("x", 255):          true,
		strings.Repeat("x", 256):          false,
		strings.Repeat("é", 255):          true, // characters, not bytes
		strings.Repeat("é", 256):          false,
		strings.Repeat("🎉", 255):          true,
		"a\x00b":                          false,
		"caf\xe9":                         false,
		`"quoted", {braced} \ NULL`:       true,
		strings.Repeat("x", 254) + "\xff": false,
	} {
		if err := ID(id); (err == nil) != valid || (err != nil && !errors.Is(err, store.ErrInvalid)) {
			t.Errorf("ID(%q) = %v, want valid %v", id, err, valid)
		}
	}
}

func TestWrites(t *testing.T) {
	t.Parallel()
	w := func(ids ...string) []functions.RecordWrite {
		var out []functions.RecordWrite
		for _, id := range ids {
			out = append(out, functions.RecordWrite{ID: id, SealedPayload: "p", Hash: "h"})
		}
		return out
	}
	order, err := Writes(w("c", "a", "b", "A"))
	if err != nil || !slices.Equal(order, []int{3, 1, 2, 0}) {
		t.Errorf("Writes = %v, %v; want the indexes by id", order, err)
	}
	if order, err := Writes(nil); err != nil || len(order) != 0 {
		t.Errorf("Writes(nil) = %v, %v", order, err)
	}
	many := make([]string, functions.MaxRecordsPerBatch)
	for i := range many {
		many[i] = strings.Repeat("x", i+1)[:1] + string(rune('0'+i%10)) + strings.Repeat("y", i/10)
	}
	if _, err := Writes(w(many...)); err != nil {
		t.Errorf("Writes of %d records: %v", len(many), err)
	}
	bad := map[string][]functions.RecordWrite{
		"too many":       w(append(many, "extra")...),
		"an id twice":    w("a", "b", "a"),
		"an empty id":    w("a", ""),
		"NUL in payload": {{ID: "a", SealedPayload: "x\x00", Hash: "h"}},
		"invalid hash":   {{ID: "a", SealedPayload: "x", Hash: "\xc3"}},
	}
	for name, recs := range bad {
		if _, err := Writes(recs); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("Writes with %s = %v, want ErrInvalid", name, err)
		}
	}
}

func TestIDsAndQuery(t *testing.T) {
	t.Parallel()
	in := []string{"b", "a", "b", "", "c"}
	ids, err := IDs(in, 0)
	if err != nil || !slices.Equal(ids, []string{"", "a", "b", "c"}) {
		t.Errorf("IDs = %q, %v", ids, err)
	}
	if !slices.Equal(in, []string{"b", "a", "b", "", "c"}) {
		t.Errorf("IDs changed its argument: %q", in)
	}
	if _, err := IDs(in, 4); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("IDs over the maximum: %v", err)
	}
	if _, err := IDs([]string{"a", "\xff"}, 0); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("IDs of invalid UTF-8: %v", err)
	}
	for _, q := range []functions.RecordQuery{{Limit: 0}, {Limit: -1}, {Limit: 1, AfterSeq: -1}, {Limit: 1, Filter: 8},
		{Limit: 1, IDs: []string{"\x00"}}} {
		if _, err := Query(q); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("Query(%+v) = %v, want ErrInvalid", q, err)
		}
	}
	if ids, err := Query(functions.RecordQuery{Limit: functions.MaxRecordsPageLimit + 1, Filter: 7}); err != nil || ids != nil {
		t.Errorf("Query without ids = %v, %v", ids, err)
	}
	if ids, err := Query(functions.RecordQuery{Limit: 1, IDs: []string{"b", "a"}}); err != nil || !slices.Equal(ids, []string{"a", "b"}) {
		t.Errorf("Query with ids = %v, %v", ids, err)
	}
}

func TestMatches(t *testing.T) {
	t.Parallel()
	actions := []string{functions.ActionAdded, functions.ActionUpdated, functions.ActionDeleted}
	for f := functions.RecordFilter(0); f < 8; f++ {
		for i, a := range actions {
			want := f == 0 || f&(1<<i) != 0
			if got := Matches(f, a); got != want {
				t.Errorf("Matches(%03b, %s) = %v, want %v", f, a, got, want)
			}
		}
	}
}

func FuzzID(f *testing.F) {
	for _, s := range []string{"a", "", "é", "a\x00", "\xff", strings.Repeat("x", 255), strings.Repeat("é", 256)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		err := ID(id)
		valid := id != "" && !strings.ContainsRune(id, 0) && strings.ToValidUTF8(id, "\ufffd") == id &&
			len([]rune(id)) <= functions.MaxRecordIDLen
		if (err == nil) != valid {
			t.Errorf("ID(%q) = %v, want valid %v", id, err, valid)
		}
	})
}
