package storetest

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/embedauth/connect/oplog"
	"github.com/embedauth/connect/store"
)

var logTests = []test{
	{"Filters", testLogFilters},
	{"Limit", testLogLimit},
	{"Conflict", testLogConflict},
	{"Paging", testLogPaging},
	{"Counts", testLogCounts},
}

func testLogFilters(t *testing.T, s Store) {
	ctx := t.Context()
	a := newEnv(t, s, "a")
	b := newEnv(t, s, "b")
	entries := []*oplog.Entry{
		{ID: "e1", EnvironmentID: a.ID, Type: "connection", Operation: "create", Status: oplog.StatusSuccess,
			IntegrationKey: "github", ConnectionID: "u1", Message: "Connection created",
			Meta: map[string]any{"auth_mode": "OAUTH2", "scopes": []any{"repo", "user"}, "n": float64(2)}, CreatedAt: at(0)},
		{ID: "e2", EnvironmentID: a.ID, Type: "auth", Operation: "refresh", Status: oplog.StatusFailure,
			IntegrationKey: "github", ConnectionID: "u2", Message: "Refresh failed: invalid_grant", CreatedAt: at(1)},
		{ID: "e3", EnvironmentID: a.ID, Type: "connection", Operation: "delete", Status: oplog.StatusSuccess,
			IntegrationKey: "slack", ConnectionID: "u1", CreatedAt: at(2)},
		// Same CreatedAt as e3: the larger ID comes first.
		{ID: "e4", EnvironmentID: a.ID, Type: "webhook", Operation: "delivery", Status: oplog.StatusSuccess,
			Meta: map[string]any{"delivery_id": "d-1", "attempt": float64(2)}, CreatedAt: at(2)},
		{ID: "e5", EnvironmentID: b.ID, Type: "connection", Operation: "create", Status: oplog.StatusSuccess,
			IntegrationKey: "github", ConnectionID: "u1", CreatedAt: at(3)},
	}
	// Appended out of time order: ordering is by CreatedAt, not insertion.
	for _, i := range []int{2, 0, 4, 3, 1} {
		must(t, s.AppendLog(ctx, entries[i]))
	}
	e1, e2, e3, e4, e5 := entries[0], entries[1], entries[2], entries[3], entries[4]

	for _, tc := range []struct {
		name string
		f    oplog.Filter
		want []*oplog.Entry
	}{
		{"environment", oplog.Filter{EnvironmentID: a.ID}, []*oplog.Entry{e4, e3, e2, e1}},
		{"other environment", oplog.Filter{EnvironmentID: b.ID}, []*oplog.Entry{e5}},
		{"every environment", oplog.Filter{}, []*oplog.Entry{e5, e4, e3, e2, e1}},
		{"type", oplog.Filter{EnvironmentID: a.ID, Type: "connection"}, []*oplog.Entry{e3, e1}},
		{"integration", oplog.Filter{EnvironmentID: a.ID, IntegrationKey: "github"}, []*oplog.Entry{e2, e1}},
		{"connection", oplog.Filter{EnvironmentID: a.ID, ConnectionID: "u1"}, []*oplog.Entry{e3, e1}},
		{"since is inclusive", oplog.Filter{EnvironmentID: a.ID, Since: at(1)}, []*oplog.Entry{e4, e3, e2}},
		{"until is exclusive", oplog.Filter{EnvironmentID: a.ID, Until: at(2)}, []*oplog.Entry{e2, e1}},
		{"since and until", oplog.Filter{EnvironmentID: a.ID, Since: at(1), Until: at(2)}, []*oplog.Entry{e2}},
		{"limit", oplog.Filter{EnvironmentID: a.ID, Limit: 2}, []*oplog.Entry{e4, e3}},
		{"combined", oplog.Filter{EnvironmentID: a.ID, Type: "connection", IntegrationKey: "github",
			ConnectionID: "u1", Since: at(0), Until: at(1)}, []*oplog.Entry{e1}},
		{"no match", oplog.Filter{EnvironmentID: a.ID, Type: "proxy"}, []*oplog.Entry{}},
		{"id", oplog.Filter{EnvironmentID: a.ID, ID: "e2"}, []*oplog.Entry{e2}},
		{"id in every environment", oplog.Filter{ID: "e5"}, []*oplog.Entry{e5}},
		{"id of another environment", oplog.Filter{EnvironmentID: a.ID, ID: "e5"}, []*oplog.Entry{}},
		{"id is exact", oplog.Filter{EnvironmentID: a.ID, ID: "e"}, []*oplog.Entry{}},
		{"operation", oplog.Filter{EnvironmentID: a.ID, Operation: "create"}, []*oplog.Entry{e1}},
		{"delivery", oplog.Filter{EnvironmentID: a.ID, DeliveryID: "d-1"}, []*oplog.Entry{e4}},
		{"delivery is exact", oplog.Filter{EnvironmentID: a.ID, DeliveryID: "d-"}, []*oplog.Entry{}},
		{"delivery of a meta without it", oplog.Filter{EnvironmentID: a.ID, DeliveryID: "OAUTH2"}, []*oplog.Entry{}},
		{"status failure", oplog.Filter{EnvironmentID: a.ID, Status: oplog.StatusFailure}, []*oplog.Entry{e2}},
		{"status success", oplog.Filter{EnvironmentID: a.ID, Status: oplog.StatusSuccess}, []*oplog.Entry{e4, e3, e1}},
		{"operation and status", oplog.Filter{EnvironmentID: a.ID, Operation: "refresh", Status: oplog.StatusSuccess}, []*oplog.Entry{}},
		// After a position: strictly older, or as old with a smaller ID.
		{"after the newest", oplog.Filter{EnvironmentID: a.ID, After: &oplog.Cursor{CreatedAt: at(2), ID: "e4"}},
			[]*oplog.Entry{e3, e2, e1}},
		{"after an entry of the same time", oplog.Filter{EnvironmentID: a.ID, After: &oplog.Cursor{CreatedAt: at(2), ID: "e3"}},
			[]*oplog.Entry{e2, e1}},
		{"after a position between two ids", oplog.Filter{EnvironmentID: a.ID, After: &oplog.Cursor{CreatedAt: at(2), ID: "e35"}},
			[]*oplog.Entry{e3, e2, e1}},
		{"after a position of no entry", oplog.Filter{EnvironmentID: a.ID, After: &oplog.Cursor{CreatedAt: at(1).Add(time.Microsecond), ID: ""}},
			[]*oplog.Entry{e2, e1}},
		{"after a time with any id", oplog.Filter{EnvironmentID: a.ID, After: &oplog.Cursor{CreatedAt: at(1), ID: "zzz"}},
			[]*oplog.Entry{e2, e1}},
		{"after a time with the smallest id", oplog.Filter{EnvironmentID: a.ID, After: &oplog.Cursor{CreatedAt: at(1), ID: ""}},
			[]*oplog.Entry{e1}},
		{"after the oldest", oplog.Filter{EnvironmentID: a.ID, After: &oplog.Cursor{CreatedAt: at(0), ID: "e1"}}, []*oplog.Entry{}},
		{"after a position newer than every entry", oplog.Filter{EnvironmentID: a.ID, After: &oplog.Cursor{CreatedAt: at(9), ID: "a"}},
			[]*oplog.Entry{e4, e3, e2, e1}},
		{"after and filters", oplog.Filter{EnvironmentID: a.ID, Type: "connection", Status: oplog.StatusSuccess,
			After: &oplog.Cursor{CreatedAt: at(2), ID: "e3"}, Limit: 5}, []*oplog.Entry{e1}},
		{"after and limit", oplog.Filter{EnvironmentID: a.ID, After: &oplog.Cursor{CreatedAt: at(2), ID: "e4"}, Limit: 1},
			[]*oplog.Entry{e3}},
		{"after in every environment", oplog.Filter{After: &oplog.Cursor{CreatedAt: at(3), ID: "e5"}, Limit: 2},
			[]*oplog.Entry{e4, e3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.ListLogs(ctx, tc.f)
			must(t, err)
			diff(t, fmt.Sprintf("ListLogs(%+v)", tc.f), tc.want, got)
		})
	}

	got, err := s.ListLogs(ctx, oplog.Filter{EnvironmentID: a.ID, Type: "webhook"})
	must(t, err)
	if len(got) != 1 || got[0].Meta == nil {
		t.Errorf("empty Meta came back nil: %+v", got)
	}
	got, err = s.ListLogs(ctx, oplog.Filter{EnvironmentID: a.ID, Type: "auth"})
	must(t, err)
	if len(got) != 1 || got[0].Meta != nil {
		t.Errorf("nil Meta came back non-nil: %+v", got)
	}
}

func testLogLimit(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	const n = 105
	for i := range n {
		must(t, s.AppendLog(ctx, &oplog.Entry{ID: fmt.Sprintf("log-%03d", i), EnvironmentID: env.ID,
			Type: "proxy", Operation: "call", Status: oplog.StatusSuccess, CreatedAt: at(i)}))
	}
	ids := func(f oplog.Filter) []string {
		t.Helper()
		list, err := s.ListLogs(ctx, f)
		must(t, err)
		out := []string{}
		for _, e := range list {
			out = append(out, e.ID)
		}
		return out
	}
	var want []string
	for i := n - 1; i >= n-100; i-- {
		want = append(want, fmt.Sprintf("log-%03d", i))
	}
	diff(t, "default limit of 100, newest first", want, ids(oplog.Filter{EnvironmentID: env.ID}))
	diff(t, "limit 3", want[:3], ids(oplog.Filter{EnvironmentID: env.ID, Limit: 3}))
	if got := ids(oplog.Filter{EnvironmentID: env.ID, Limit: 200}); len(got) != n {
		t.Errorf("limit 200 returned %d entries, want %d", len(got), n)
	}
}

func testLogConflict(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	e := &oplog.Entry{ID: "dup", EnvironmentID: env.ID, Type: "auth", Operation: "create",
		Status: oplog.StatusSuccess, Message: "first", CreatedAt: ts}
	must(t, s.AppendLog(ctx, e))
	dup := *e
	dup.Message = "second"
	wantErr(t, "AppendLog(duplicate id)", s.AppendLog(ctx, &dup), store.ErrConflict)
	got, err := s.ListLogs(ctx, oplog.Filter{EnvironmentID: env.ID})
	must(t, err)
	diff(t, "logs", []*oplog.Entry{e}, got)
}

// testLogPaging: listing page after page, each After the position of the
// last entry of the page before, yields every matching entry once, in
// order, whatever the page size, with many entries of one time; entries
// written meanwhile (newer) do not enter a listing under way, and another
// environment's never do.
func testLogPaging(t *testing.T, s Store) {
	ctx := t.Context()
	a := newEnv(t, s, "a")
	b := newEnv(t, s, "b")
	// 30 entries in a: ten times, three entries each (ids not in time
	// order, so that the order by id within a time matters), every third a
	// failure; appended in an order of neither time nor id.
	var want []*oplog.Entry // newest first
	for sec := 9; sec >= 0; sec-- {
		for _, k := range []int{2, 1, 0} {
			n := sec*3 + k
			status := oplog.StatusSuccess
			if n%3 == 0 {
				status = oplog.StatusFailure
			}
			want = append(want, &oplog.Entry{ID: fmt.Sprintf("p%02d-%d", (n*7)%30, k), EnvironmentID: a.ID, Type: "proxy",
				Operation: "call", Status: status, CreatedAt: at(sec)})
		}
	}
	// Within a time, ids descending.
	for i := 0; i < len(want); i += 3 {
		slices.SortFunc(want[i:i+3], func(x, y *oplog.Entry) int { return strings.Compare(y.ID, x.ID) })
	}
	for _, i := range []int{7, 3, 29, 0, 15, 22, 1, 8, 14, 28, 2, 9, 16, 21, 4, 10, 17, 23, 5, 11, 18, 24, 6, 12, 19, 25, 13, 20, 26, 27} {
		must(t, s.AppendLog(ctx, want[i]))
	}
	// b's entries interleave a's in time and id.
	for sec := range 10 {
		must(t, s.AppendLog(ctx, &oplog.Entry{ID: fmt.Sprintf("p%02d-9", sec*3), EnvironmentID: b.ID, Type: "proxy",
			Operation: "call", Status: oplog.StatusFailure, CreatedAt: at(sec)}))
	}

	pages := func(f oplog.Filter, size int) [][]*oplog.Entry {
		t.Helper()
		var out [][]*oplog.Entry
		f.Limit = size
		for range 100 {
			page, err := s.ListLogs(ctx, f)
			must(t, err)
			if len(page) > size {
				t.Fatalf("ListLogs(%+v) returned %d entries", f, len(page))
			}
			if len(page) == 0 {
				return out
			}
			out = append(out, page)
			last := page[len(page)-1]
			f.After = &oplog.Cursor{CreatedAt: last.CreatedAt, ID: last.ID}
		}
		t.Fatalf("paging %+v does not end", f)
		return nil
	}
	for _, size := range []int{1, 2, 3, 4, 7, 29, 30, 31} {
		got := slices.Concat(pages(oplog.Filter{EnvironmentID: a.ID}, size)...)
		diff(t, fmt.Sprintf("pages of %d", size), want, got)
	}
	var failures []*oplog.Entry
	for _, e := range want {
		if e.Status == oplog.StatusFailure {
			failures = append(failures, e)
		}
	}
	diff(t, "pages of failures", failures, slices.Concat(pages(oplog.Filter{EnvironmentID: a.ID, Status: oplog.StatusFailure}, 4)...))
	diff(t, "pages within since and until", want[3:24],
		slices.Concat(pages(oplog.Filter{EnvironmentID: a.ID, Since: at(2), Until: at(9)}, 5)...))

	// A listing under way: the first page, then entries written after it
	// (newer, and one as old as its last entry with a larger id), then the
	// rest: the rest is what was there after the first page.
	first, err := s.ListLogs(ctx, oplog.Filter{EnvironmentID: a.ID, Limit: 4})
	must(t, err)
	diff(t, "first page", want[:4], first)
	last := first[len(first)-1]
	must(t, s.AppendLog(ctx, &oplog.Entry{ID: "zz-new", EnvironmentID: a.ID, Type: "proxy", Operation: "call",
		Status: oplog.StatusSuccess, CreatedAt: at(20)}))
	must(t, s.AppendLog(ctx, &oplog.Entry{ID: last.ID + "z", EnvironmentID: a.ID, Type: "proxy", Operation: "call",
		Status: oplog.StatusSuccess, CreatedAt: last.CreatedAt}))
	rest, err := s.ListLogs(ctx, oplog.Filter{EnvironmentID: a.ID, After: &oplog.Cursor{CreatedAt: last.CreatedAt, ID: last.ID}})
	must(t, err)
	diff(t, "the rest of a listing under way", want[4:], rest)
}

// testLogCounts: CountLogs groups the entries of a span by bucket (whole
// UTC hours or days), type, operation and status. An entry at a bucket's
// start is in that bucket, one a microsecond before it in the bucket
// before; since is inclusive and until exclusive, also when given in
// another time zone; other environments are not counted unless the
// environment is 0.
func testLogCounts(t *testing.T, s Store) {
	ctx := t.Context()
	a := newEnv(t, s, "a")
	b := newEnv(t, s, "b")
	h := time.Date(2025, 3, 14, 15, 0, 0, 0, time.UTC) // a bucket's start
	us := time.Microsecond
	type entry struct {
		env                    int64
		at                     time.Time
		typ, operation, status string
	}
	n := 0
	for _, e := range []entry{
		{a.ID, h, "auth", "refresh", oplog.StatusFailure},
		{a.ID, h.Add(20 * time.Minute), "auth", "refresh", oplog.StatusFailure},
		{a.ID, h.Add(30 * time.Minute), "auth", "refresh", oplog.StatusSuccess},
		{a.ID, h.Add(time.Hour - us), "proxy", "call", oplog.StatusSuccess},
		{a.ID, h.Add(time.Hour), "proxy", "call", oplog.StatusSuccess},
		{a.ID, h.Add(time.Hour + us), "proxy", "call", oplog.StatusSuccess},
		{a.ID, h.Add(-us), "sync", "run", oplog.StatusSuccess},
		{a.ID, h.Add(3 * time.Hour), "sync", "run", oplog.StatusFailure},
		{a.ID, h.Add(9*time.Hour - us), "sync", "run", oplog.StatusFailure}, // 23:59:59.999999
		{a.ID, h.Add(9 * time.Hour), "sync", "run", oplog.StatusFailure},    // the next day
		{b.ID, h.Add(10 * time.Minute), "auth", "refresh", oplog.StatusFailure},
	} {
		n++
		must(t, s.AppendLog(ctx, &oplog.Entry{ID: fmt.Sprintf("c%02d", n), EnvironmentID: e.env, Type: e.typ, Operation: e.operation,
			Status: e.status, CreatedAt: e.at}))
	}
	count := func(start time.Time, typ, op, status string, c int64) oplog.Count {
		return oplog.Count{Start: start, Type: typ, Operation: op, Status: status, Count: c}
	}
	day := time.Date(2025, 3, 14, 0, 0, 0, 0, time.UTC)
	plus2 := time.FixedZone("", 2*3600)
	for _, tc := range []struct {
		name string
		f    oplog.CountFilter
		want []oplog.Count
	}{
		{"hours", oplog.CountFilter{EnvironmentID: a.ID, Since: h.Add(-time.Hour), Until: h.Add(4 * time.Hour), Bucket: oplog.BucketHour},
			[]oplog.Count{
				count(h.Add(-time.Hour), "sync", "run", oplog.StatusSuccess, 1),
				count(h, "auth", "refresh", oplog.StatusFailure, 2),
				count(h, "auth", "refresh", oplog.StatusSuccess, 1),
				count(h, "proxy", "call", oplog.StatusSuccess, 1),
				count(h.Add(time.Hour), "proxy", "call", oplog.StatusSuccess, 2),
				count(h.Add(3*time.Hour), "sync", "run", oplog.StatusFailure, 1),
			}},
		{"since is inclusive, until exclusive", oplog.CountFilter{EnvironmentID: a.ID, Since: h, Until: h.Add(time.Hour), Bucket: oplog.BucketHour},
			[]oplog.Count{
				count(h, "auth", "refresh", oplog.StatusFailure, 2),
				count(h, "auth", "refresh", oplog.StatusSuccess, 1),
				count(h, "proxy", "call", oplog.StatusSuccess, 1),
			}},
		{"partial buckets", oplog.CountFilter{EnvironmentID: a.ID, Since: h.Add(20 * time.Minute), Until: h.Add(time.Hour + us), Bucket: oplog.BucketHour},
			[]oplog.Count{
				count(h, "auth", "refresh", oplog.StatusFailure, 1),
				count(h, "auth", "refresh", oplog.StatusSuccess, 1),
				count(h, "proxy", "call", oplog.StatusSuccess, 1),
				count(h.Add(time.Hour), "proxy", "call", oplog.StatusSuccess, 1),
			}},
		{"another time zone", oplog.CountFilter{EnvironmentID: a.ID, Since: h.In(plus2), Until: h.Add(time.Hour).In(plus2), Bucket: oplog.BucketHour},
			[]oplog.Count{
				count(h, "auth", "refresh", oplog.StatusFailure, 2),
				count(h, "auth", "refresh", oplog.StatusSuccess, 1),
				count(h, "proxy", "call", oplog.StatusSuccess, 1),
			}},
		{"days", oplog.CountFilter{EnvironmentID: a.ID, Since: day, Until: day.Add(48 * time.Hour), Bucket: oplog.BucketDay},
			[]oplog.Count{
				count(day, "auth", "refresh", oplog.StatusFailure, 2),
				count(day, "auth", "refresh", oplog.StatusSuccess, 1),
				count(day, "proxy", "call", oplog.StatusSuccess, 3),
				count(day, "sync", "run", oplog.StatusFailure, 2),
				count(day, "sync", "run", oplog.StatusSuccess, 1),
				count(day.Add(24*time.Hour), "sync", "run", oplog.StatusFailure, 1),
			}},
		{"other environment", oplog.CountFilter{EnvironmentID: b.ID, Since: day, Until: day.Add(48 * time.Hour), Bucket: oplog.BucketDay},
			[]oplog.Count{count(day, "auth", "refresh", oplog.StatusFailure, 1)}},
		{"every environment", oplog.CountFilter{Since: h, Until: h.Add(time.Hour), Bucket: oplog.BucketHour},
			[]oplog.Count{
				count(h, "auth", "refresh", oplog.StatusFailure, 3),
				count(h, "auth", "refresh", oplog.StatusSuccess, 1),
				count(h, "proxy", "call", oplog.StatusSuccess, 1),
			}},
		{"none", oplog.CountFilter{EnvironmentID: a.ID, Since: h.Add(4 * time.Hour), Until: h.Add(5 * time.Hour), Bucket: oplog.BucketHour}, nil},
	} {
		got, err := s.CountLogs(ctx, tc.f)
		must(t, err)
		for i := range got {
			if got[i].Start.Location() != time.UTC {
				t.Errorf("%s: a bucket's start %v is not in UTC", tc.name, got[i].Start)
			}
		}
		slices.SortFunc(got, func(x, y oplog.Count) int {
			return cmp.Or(x.Start.Compare(y.Start), strings.Compare(x.Type, y.Type), strings.Compare(x.Operation, y.Operation),
				strings.Compare(x.Status, y.Status))
		})
		diff(t, tc.name, tc.want, got)
	}
}
