package oplog

import (
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/embedauth/connect/store"
)

// TestListQuery: the list's query parameters become a Filter; times are
// rounded up to the microsecond (the precision of entries), so that every
// Store selects the same entries.
func TestListQuery(t *testing.T) {
	t.Parallel()
	cur := Cursor{CreatedAt: time.Date(2026, 5, 1, 12, 0, 0, 123456000, time.UTC), ID: "e1"}
	plus2 := time.FixedZone("", 2*3600)
	for _, tc := range []struct {
		query string
		want  Filter
	}{
		{"", Filter{}},
		{"type=auth&operation=refresh&status=failure&integration=gh&connection_id=c%201", Filter{Type: "auth", Operation: "refresh",
			Status: StatusFailure, IntegrationKey: "gh", ConnectionID: "c 1"}},
		{"status=success&limit=7&cursor=" + cur.String(), Filter{Status: StatusSuccess, Limit: 7, After: &cur}},
		{"since=2026-05-01T12:00:00Z&until=2026-05-01T15:00:00%2B02:00", Filter{Since: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC),
			Until: time.Date(2026, 5, 1, 15, 0, 0, 0, plus2)}},
		{"since=2026-05-01T12:00:00.0000001Z&until=2026-05-01T12:00:00.000002Z", Filter{
			Since: time.Date(2026, 5, 1, 12, 0, 0, 1000, time.UTC), Until: time.Date(2026, 5, 1, 12, 0, 0, 2000, time.UTC)}},
		// An empty value is the same as none.
		{"type=&status=&since=&limit=&cursor=", Filter{}},
		{"limit=1", Filter{Limit: 1}},
		{"limit=100", Filter{Limit: 100}},
	} {
		f, err := listQuery(httptest.NewRequest("GET", "/logs/operations?"+tc.query, nil))
		if err != nil {
			t.Errorf("%q: %v", tc.query, err)
			continue
		}
		if d := cmp.Diff(tc.want, f); d != "" {
			t.Errorf("%q: filter (-want +got):\n%s", tc.query, d)
		}
	}
}

// TestListQueryErrors: a bad query is invalid_query_params naming each
// parameter in error, with a message saying what it must be.
func TestListQueryErrors(t *testing.T) {
	t.Parallel()
	valid := Cursor{CreatedAt: time.Date(2026, 5, 1, 12, 0, 0, 5e8, time.UTC), ID: "d"}.String()
	for _, tc := range []struct {
		query string
		paths []string
		msg   string // in the first field error
	}{
		{"foo=1", []string{"foo"}, `unknown parameter "foo"; the list takes type, operation, status`},
		{"page=2&offset=1&limit=3", []string{"offset", "page"}, "unknown parameter"},
		{"status=success&status=failure", []string{"status"}, "given more than once"},
		{"status=ok", []string{"status"}, "must be success or failure"},
		{"status=FAILURE", []string{"status"}, "must be success or failure"},
		{"limit=0", []string{"limit"}, "must be an integer from 1 to 100"},
		{"limit=101", []string{"limit"}, "must be an integer from 1 to 100"},
		{"limit=-1", []string{"limit"}, "must be an integer from 1 to 100"},
		{"limit=ten", []string{"limit"}, "must be an integer from 1 to 100"},
		{"limit=99999999999999999999", []string{"limit"}, "must be an integer from 1 to 100"},
		{"since=yesterday", []string{"since"}, "must be an RFC 3339 time"},
		{"until=2026-05-01", []string{"until"}, "must be an RFC 3339 time"},
		// An unescaped + is a space.
		{"since=2026-05-01T12:00:00+02:00", []string{"since"}, "%2B"},
		{"since=2026-05-01T12:00:00Z&until=2026-05-01T12:00:00Z", []string{"until"}, "must be after since"},
		{"since=2026-05-01T12:00:00Z&until=2026-05-01T11:00:00Z", []string{"until"}, "must be after since"},
		{"cursor=garbage", []string{"cursor"}, "not a next_cursor of this list"},
		{"cursor=" + valid[:len(valid)-3], []string{"cursor"}, "not a next_cursor of this list"},
		{"cursor=" + valid + "A", []string{"cursor"}, "not a next_cursor of this list"},
		{"type=" + strings.Repeat("t", 256), []string{"type"}, "must be 1 to 255 characters"},
		{"connection_id=" + strings.Repeat("c", 256), []string{"connection_id"}, "must be 1 to 255 characters"},
		{"integration=a%09b", []string{"integration"}, "without control characters"},
		// Every parameter in error at once.
		{"status=x&limit=0&cursor=x&since=x", []string{"cursor", "limit", "since", "status"}, "not a next_cursor"},
	} {
		_, err := listQuery(httptest.NewRequest("GET", "/logs/operations?"+tc.query, nil))
		var se *store.Error
		if !errors.As(err, &se) || !errors.Is(err, store.ErrInvalid) || se.Code != "invalid_query_params" {
			t.Errorf("%q: error %v, want invalid_query_params", tc.query, err)
			continue
		}
		var paths []string
		for _, fe := range se.Errors {
			paths = append(paths, fe.Path...)
		}
		if d := cmp.Diff(tc.paths, paths); d != "" {
			t.Errorf("%q: paths (-want +got):\n%s", tc.query, d)
		}
		if len(se.Errors) == 0 || !strings.Contains(se.Errors[0].Message, tc.msg) {
			t.Errorf("%q: errors %+v, want the first to say %q", tc.query, se.Errors, tc.msg)
		}
	}
}

func TestCeilMicro(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct{ in, want time.Duration }{
		{0, 0}, {1, time.Microsecond}, {999, time.Microsecond}, {1000, time.Microsecond}, {1001, 2 * time.Microsecond},
	} {
		if got := ceilMicro(base.Add(tc.in)); !got.Equal(base.Add(tc.want)) {
			t.Errorf("ceilMicro(+%dns) = %s, want +%s", tc.in, got.Format(time.RFC3339Nano), tc.want)
		}
	}
}

// TestStatsQuery: the query of GET /logs/stats becomes a CountFilter, by
// default the 24 hours before now by hour; a bad query is
// invalid_query_params naming each parameter in error.
func TestStatsQuery(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 5, 1, 12, 34, 56, 789, time.UTC)
	w := &Writer{Now: func() time.Time { return now }}
	up := now.Truncate(time.Microsecond).Add(time.Microsecond)
	h := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		query string
		want  CountFilter
	}{
		{"", CountFilter{Since: up.Add(-24 * time.Hour), Until: up, Bucket: BucketHour}},
		{"bucket=&since=&until=", CountFilter{Since: up.Add(-24 * time.Hour), Until: up, Bucket: BucketHour}},
		{"bucket=day", CountFilter{Since: up.Add(-24 * time.Hour), Until: up, Bucket: BucketDay}},
		{"since=2026-05-01T12:00:00Z", CountFilter{Since: h, Until: up, Bucket: BucketHour}},
		{"until=2026-05-01T12:00:00Z", CountFilter{Since: h.Add(-24 * time.Hour), Until: h, Bucket: BucketHour}},
		{"since=2026-05-01T14:00:00%2B02:00&until=2026-05-01T13:00:00.0000001Z&bucket=hour",
			CountFilter{Since: h, Until: h.Add(time.Hour + time.Microsecond), Bucket: BucketHour}},
		{"since=2023-08-05T00:00:00Z&until=2026-05-01T00:00:00Z&bucket=day", CountFilter{Since: time.Date(2023, 8, 5, 0, 0, 0, 0, time.UTC),
			Until: time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC), Bucket: BucketDay}},
	} {
		f, err := w.statsQuery(httptest.NewRequest("GET", "/logs/stats?"+tc.query, nil))
		if err != nil {
			t.Errorf("%q: %v", tc.query, err)
			continue
		}
		if d := cmp.Diff(tc.want, f); d != "" {
			t.Errorf("%q: filter (-want +got):\n%s", tc.query, d)
		}
	}

	for _, tc := range []struct {
		query string
		paths []string
		msg   string // in the first field error
	}{
		{"limit=1", []string{"limit"}, `unknown parameter "limit"; the list takes since, until, bucket`},
		{"bucket=hour&bucket=day", []string{"bucket"}, "given more than once"},
		{"bucket=week", []string{"bucket"}, "must be hour or day"},
		{"bucket=HOUR", []string{"bucket"}, "must be hour or day"},
		{"since=yesterday", []string{"since"}, "must be an RFC 3339 time"},
		{"until=2026-05-01", []string{"until"}, "must be an RFC 3339 time"},
		{"since=2026-05-01T12:00:00+02:00", []string{"since"}, "%2B"},
		{"since=2026-05-01T12:00:00Z&until=2026-05-01T12:00:00Z", []string{"until"}, "must be after since"},
		{"since=2026-05-02T12:00:00Z", []string{"until"}, "must be after since"},
		{"since=2026-03-20T00:00:00Z&until=2026-05-01T16:00:01Z", []string{"since"}, "spans more than 1000 hours"},
		{"since=2023-08-04T00:00:00Z&until=2026-05-01T00:00:00Z&bucket=day", []string{"since"}, "spans more than 1000 days"},
		{"since=0001-01-01T00:00:00Z&until=9999-12-31T23:59:59Z&bucket=day", []string{"since"}, "spans more than 1000 days"},
		// Every parameter in error at once.
		{"bucket=x&since=x&until=y", []string{"bucket", "since", "until"}, "must be hour or day"},
	} {
		_, err := w.statsQuery(httptest.NewRequest("GET", "/logs/stats?"+tc.query, nil))
		var se *store.Error
		if !errors.As(err, &se) || !errors.Is(err, store.ErrInvalid) || se.Code != "invalid_query_params" {
			t.Errorf("%q: error %v, want invalid_query_params", tc.query, err)
			continue
		}
		var paths []string
		for _, fe := range se.Errors {
			paths = append(paths, fe.Path...)
		}
		if d := cmp.Diff(tc.paths, paths); d != "" {
			t.Errorf("%q: paths (-want +got):\n%s", tc.query, d)
		}
		if len(se.Errors) == 0 || !strings.Contains(se.Errors[0].Message, tc.msg) {
			t.Errorf("%q: errors %+v, want the first to say %q", tc.query, se.Errors, tc.msg)
		}
	}
}
