package oplog_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/embedauth/connect/oplog"
	"github.com/embedauth/connect/store"
)

// TestStats: Stats asks the Store for the span rounded up to the
// microsecond, in UTC, and answers one bucket per whole hour or day of
// the span, empty ones included (with no counts, not nil), each with its
// counts sorted; it refuses, before reading, a span it cannot answer.
func TestStats(t *testing.T) {
	t.Parallel()
	h := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	var asked []oplog.CountFilter
	w := &oplog.Writer{Store: listStore{CountLogsFunc: func(f oplog.CountFilter) ([]oplog.Count, error) {
		asked = append(asked, f)
		return []oplog.Count{
			{Start: h.Add(3 * time.Hour).In(time.FixedZone("", 3600)), Type: "sync", Operation: "run", Status: oplog.StatusFailure, Count: 1},
			{Start: h.Add(time.Hour), Type: "proxy", Operation: "call", Status: oplog.StatusSuccess, Count: 7},
			{Start: h.Add(time.Hour), Type: "auth", Operation: "refresh", Status: oplog.StatusSuccess, Count: 2},
			{Start: h.Add(time.Hour), Type: "auth", Operation: "refresh", Status: oplog.StatusFailure, Count: 3},
		}, nil
	}}}
	ctx := t.Context()
	plus2 := time.FixedZone("", 2*3600)
	since, until := h.Add(30*time.Minute+1).In(plus2), h.Add(3*time.Hour+10*time.Minute)
	st, err := w.Stats(ctx, oplog.CountFilter{EnvironmentID: 7, Since: since, Until: until, Bucket: oplog.BucketHour})
	if err != nil {
		t.Fatal(err)
	}
	want := &oplog.Stats{Bucket: oplog.BucketHour, Series: []oplog.StatsBucket{
		{Start: h, Counts: []oplog.Count{}},
		{Start: h.Add(time.Hour), Counts: []oplog.Count{
			{Start: h.Add(time.Hour), Type: "auth", Operation: "refresh", Status: oplog.StatusFailure, Count: 3},
			{Start: h.Add(time.Hour), Type: "auth", Operation: "refresh", Status: oplog.StatusSuccess, Count: 2},
			{Start: h.Add(time.Hour), Type: "proxy", Operation: "call", Status: oplog.StatusSuccess, Count: 7},
		}},
		{Start: h.Add(2 * time.Hour), Counts: []oplog.Count{}},
		{Start: h.Add(3 * time.Hour), Counts: []oplog.Count{
			{Start: h.Add(3 * time.Hour), Type: "sync", Operation: "run", Status: oplog.StatusFailure, Count: 1},
		}},
	}}
	if d := cmp.Diff(want, st); d != "" {
		t.Errorf("stats (-want +got):\n%s", d)
	}
	wantAsked := []oplog.CountFilter{{EnvironmentID: 7, Since: h.Add(30*time.Minute + time.Microsecond), Until: until, Bucket: oplog.BucketHour}}
	if d := cmp.Diff(wantAsked, asked); d != "" {
		t.Errorf("the Store was asked (-want +got):\n%s", d)
	}

	// Days: an until at a day's start ends the span with the day before.
	day := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	empty := &oplog.Writer{Store: listStore{CountLogsFunc: func(oplog.CountFilter) ([]oplog.Count, error) { return nil, nil }}}
	st, err = empty.Stats(ctx, oplog.CountFilter{Since: day.Add(5 * time.Hour), Until: day.Add(48 * time.Hour), Bucket: oplog.BucketDay})
	if err != nil || len(st.Series) != 2 || !st.Series[0].Start.Equal(day) || !st.Series[1].Start.Equal(day.Add(24*time.Hour)) ||
		st.Series[1].Counts == nil {
		t.Errorf("two days = %+v, %v", st, err)
	}
	// The most buckets, and one more.
	if st, err := empty.Stats(ctx, oplog.CountFilter{Since: h, Until: h.Add(oplog.MaxStatsBuckets * time.Hour), Bucket: oplog.BucketHour}); err != nil ||
		len(st.Series) != oplog.MaxStatsBuckets {
		t.Errorf("%d hours: %d buckets, %v", oplog.MaxStatsBuckets, len(st.Series), err)
	}

	asked = nil
	for name, f := range map[string]oplog.CountFilter{
		"unknown bucket":     {Since: h, Until: h.Add(time.Hour), Bucket: "week"},
		"no bucket":          {Since: h, Until: h.Add(time.Hour)},
		"no since":           {Until: h, Bucket: oplog.BucketHour},
		"no until":           {Since: h, Bucket: oplog.BucketHour},
		"until is since":     {Since: h, Until: h, Bucket: oplog.BucketHour},
		"until before since": {Since: h, Until: h.Add(-time.Hour), Bucket: oplog.BucketHour},
		"too many hours":     {Since: h, Until: h.Add(oplog.MaxStatsBuckets*time.Hour + 1), Bucket: oplog.BucketHour},
		"too many days":      {Since: day, Until: day.AddDate(3, 0, 0), Bucket: oplog.BucketDay},
		"centuries":          {Since: time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), Until: time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC), Bucket: oplog.BucketDay},
	} {
		if _, err := w.Stats(ctx, f); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%s: Stats = %v, want ErrInvalid", name, err)
		}
	}
	if len(asked) != 0 {
		t.Errorf("refused spans reached the Store: %+v", asked)
	}

	// A Store that counts a bucket outside the span is an error, not a
	// series with a hole.
	odd := &oplog.Writer{Store: listStore{CountLogsFunc: func(oplog.CountFilter) ([]oplog.Count, error) {
		return []oplog.Count{{Start: h.Add(30 * time.Minute), Type: "x", Operation: "y", Status: oplog.StatusSuccess, Count: 1}}, nil
	}}}
	if _, err := odd.Stats(ctx, oplog.CountFilter{Since: h, Until: h.Add(2 * time.Hour), Bucket: oplog.BucketHour}); err == nil || errors.Is(err, store.ErrInvalid) {
		t.Errorf("a count off the buckets: %v, want an internal error", err)
	}
	// A Store that is no Counter cannot answer.
	plain := &oplog.Writer{Store: struct{ oplog.Store }{listStore{}}}
	if _, err := plain.Stats(ctx, oplog.CountFilter{Since: h, Until: h.Add(time.Hour), Bucket: oplog.BucketHour}); err == nil {
		t.Error("Stats over a Store without CountLogs: no error")
	}
}
