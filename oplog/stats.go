package oplog

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Bucket is the span of time each count of Writer.Stats covers: a whole
// hour or a whole day in UTC.
type Bucket string

// The buckets of Writer.Stats (GET /logs/stats?bucket=).
const (
	BucketHour Bucket = "hour"
	BucketDay  Bucket = "day"
)

// Duration returns the length of the bucket, 0 for an unknown one.
func (b Bucket) Duration() time.Duration {
	switch b {
	case BucketHour:
		return time.Hour
	case BucketDay:
		return 24 * time.Hour
	}
	return 0
}

// Start returns the start of the bucket that holds t: t in UTC truncated
// to the whole hour or day.
func (b Bucket) Start(t time.Time) time.Time { return t.UTC().Truncate(b.Duration()) }

// MaxStatsBuckets is the most buckets one Writer.Stats (one GET
// /logs/stats) covers.
const MaxStatsBuckets = 1000

// CountFilter selects the entries Counter.CountLogs counts.
type CountFilter struct {
	// EnvironmentID selects one environment; 0 counts every environment.
	EnvironmentID int64
	// Since and Until bound CreatedAt: Since <= CreatedAt < Until. Both
	// are required.
	Since time.Time
	Until time.Time
	// Bucket is BucketHour or BucketDay.
	Bucket Bucket
}

// Count is how many entries of one type, operation and status were
// created in one bucket.
type Count struct {
	// Start is the start of the bucket, in UTC (Bucket.Start of the
	// entries' CreatedAt).
	Start     time.Time
	Type      string
	Operation string
	Status    string
	Count     int64
}

// Stats are the counts of the entries of a span of time, bucket by
// bucket.
type Stats struct {
	Bucket Bucket
	// Series has one element per bucket from the one that holds Since to
	// the one that holds the last instant before Until, empty buckets
	// included, oldest first.
	Series []StatsBucket
}

// StatsBucket is one bucket of Stats: its start and its counts, sorted by
// type, operation then status (none for an empty bucket).
type StatsBucket struct {
	Start  time.Time
	Counts []Count
}

// Stats counts the entries of f.Since <= CreatedAt < f.Until by bucket,
// type, operation and status, in one grouped read of the Store, which
// must implement Counter. The first and last buckets count only the part of
// their hour or day within the span. Since and Until are rounded up to
// the microsecond, the precision of entries. A missing Since or Until,
// an Until not after Since, an unknown Bucket or a span of more than
// MaxStatsBuckets buckets is store.ErrInvalid (invalid_filter).
func (w *Writer) Stats(ctx context.Context, f CountFilter) (*Stats, error) {
	d := f.Bucket.Duration()
	if d == 0 {
		return nil, invalidFilter("bucket", "must be hour or day")
	}
	if f.Since.IsZero() || f.Until.IsZero() {
		return nil, invalidFilter("since", "since and until are required")
	}
	f.Since, f.Until = ceilMicro(f.Since).UTC(), ceilMicro(f.Until).UTC()
	if !f.Until.After(f.Since) {
		return nil, invalidFilter("until", "must be after since")
	}
	first, n := span(f.Bucket, f.Since, f.Until)
	if n > MaxStatsBuckets {
		return nil, invalidFilter("since", bucketsMessage(f.Bucket))
	}
	counter, ok := w.Store.(Counter)
	if !ok {
		return nil, errNoCounter
	}
	counts, err := counter.CountLogs(ctx, f)
	if err != nil {
		return nil, err
	}
	out := &Stats{Bucket: f.Bucket, Series: make([]StatsBucket, n)}
	for i := range out.Series {
		out.Series[i] = StatsBucket{Start: first.Add(time.Duration(i) * d), Counts: []Count{}}
	}
	for _, c := range counts {
		start := c.Start.UTC()
		i := int(start.Sub(first) / d)
		if start.Before(first) || i >= n || !out.Series[i].Start.Equal(start) {
			return nil, fmt.Errorf("oplog: the Store counted a bucket %s outside the %d from %s", start.Format(time.RFC3339), n, first.Format(time.RFC3339))
		}
		c.Start = start
		out.Series[i].Counts = append(out.Series[i].Counts, c)
	}
	for i := range out.Series {
		slices.SortFunc(out.Series[i].Counts, func(a, b Count) int {
			return cmp.Or(cmp.Compare(a.Type, b.Type), cmp.Compare(a.Operation, b.Operation), cmp.Compare(a.Status, b.Status))
		})
	}
	return out, nil
}

// errNoCounter is the error of Stats over a Store that cannot count.
var errNoCounter = errors.New("oplog: the Store implements no oplog.Counter: it cannot count entries")

// span returns the start of the first bucket of since <= t < until (until
// after since) and how many buckets the span covers.
func span(b Bucket, since, until time.Time) (first time.Time, n int) {
	first = b.Start(since)
	last := b.Start(until.Add(-time.Microsecond))
	// A Duration saturates: a span of centuries still counts as too many.
	return first, int(min(last.Sub(first)/b.Duration(), MaxStatsBuckets)) + 1
}

// bucketsMessage says how long a span of buckets may be.
func bucketsMessage(b Bucket) string {
	return fmt.Sprintf("since..until spans more than %d %ss", MaxStatsBuckets, b)
}
