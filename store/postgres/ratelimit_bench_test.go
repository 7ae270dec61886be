package postgres_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/lib/pq"

	"github.com/embedauth/connect/internal/pgtest"
	"github.com/embedauth/connect/store/postgres"
)

// BenchmarkRateLimiter compares two ways of limiting one key of a huge
// limit under at least 64 concurrent goroutines, on one pool of
// DefaultMaxConns sessions (as the reference server's): "per-request" counts
// every request in the table with one upsert of the key's row, which is what
// RateLimiter did before leases; "leased" is RateLimiter, which takes leases
// of 1000 requests. Each reports allows/s; "leased" also reports the ratio of
// its allows/s to per-request's, measured just before in the same run.
//
//	go test ./store/postgres -run '^$' -bench BenchmarkRateLimiter -benchtime 3s
func BenchmarkRateLimiter(b *testing.B) {
	const limit = 1 << 40
	ctx := context.Background()
	shared, schema := pgtest.Schema(b)
	now := window0.Add(10 * time.Second)
	opts := &postgres.Options{Schema: schema, Now: func() time.Time { return now }}
	if err := postgres.MigrateWithoutRiver(ctx, shared, opts); err != nil {
		b.Fatal(err)
	}
	db, err := postgres.Open(ctx, pgtest.URL(b), opts)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	start, end := now.Truncate(time.Minute), now.Truncate(time.Minute).Add(time.Minute)
	parallelism := (64 + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0)

	var perRequest float64 // allows/s
	b.Run("per-request", func(b *testing.B) {
		upsert := `INSERT INTO ` + pq.QuoteIdentifier(schema) + `.rate_limits AS r (key, window_start, window_end, count)
			VALUES ($1, $2, $3, 1)
			ON CONFLICT (key, window_start, window_end) DO UPDATE SET count = r.count + 1
			RETURNING count`
		b.SetParallelism(parallelism)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				var count int64
				if err := db.QueryRowContext(ctx, upsert, "per-request", start, end).Scan(&count); err != nil {
					b.Error(err)
					return
				}
				if count > limit {
					b.Error("refused")
					return
				}
			}
		})
		perRequest = float64(b.N) / b.Elapsed().Seconds()
		b.ReportMetric(perRequest, "allows/s")
	})
	b.Run("leased", func(b *testing.B) {
		l := postgres.NewRateLimiter(db, opts, limit, time.Minute)
		b.SetParallelism(parallelism)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				d, err := l.Allow(ctx, "leased")
				if err != nil {
					b.Error(err)
					return
				}
				if !d.Allowed {
					b.Error("refused")
					return
				}
			}
		})
		leased := float64(b.N) / b.Elapsed().Seconds()
		b.ReportMetric(leased, "allows/s")
		if perRequest > 0 {
			b.ReportMetric(leased/perRequest, "leased/per-request")
		}
	})
}
