package postgres_test

import (
	"testing"
	"time"

	"github.com/lib/pq"

	"github.com/embedauth/connect/oplog"
)

// TestListLogsReadsOnlyItsPage: a page of the operations log reads about
// the entries it returns, however many others the environment holds: a
// page after a cursor starts at the cursor's position, and a list of
// failures reads the partial index of failures (migration 019), not every
// success between them (the table was never analyzed: the plans must not
// depend on statistics).
func TestListLogsReadsOnlyItsPage(t *testing.T) {
	t.Parallel()
	s, db, schema := newStore(t)
	ctx := t.Context()
	now := time.Now().UTC().Truncate(time.Microsecond)
	env := createEnv(t, s, now)
	// 50,000 successes, newer than 30 failures.
	const successes, failures = 50000, 30
	if _, err := db.ExecContext(ctx, `INSERT INTO `+pq.QuoteIdentifier(schema)+`.operations_log (id, environment_id, type,
		operation, status, integration_key, connection_id, message, created_at)
		SELECT 'l' || lpad(g::text, 6, '0'), $1, 'proxy', 'call', CASE WHEN g <= $3 THEN 'failure' ELSE 'success' END,
			'a', 'c', repeat('m', 100), $2::timestamptz + g * interval '1 millisecond'
		FROM generate_series(1, $3::int + $4::int) g`, env.ID, now, failures, successes); err != nil {
		t.Fatal(err)
	}
	var tablePages int
	if err := db.QueryRowContext(ctx, `SELECT pg_relation_size($1::regclass) / 8192`, schema+".operations_log").Scan(&tablePages); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		f    oplog.Filter
		want int
	}{
		{"first page", oplog.Filter{EnvironmentID: env.ID, Limit: 51}, 51},
		{"a page deep in the log", oplog.Filter{EnvironmentID: env.ID, Limit: 51,
			After: &oplog.Cursor{CreatedAt: now.Add(1000 * time.Millisecond), ID: "l001000"}}, 51},
		{"failures", oplog.Filter{EnvironmentID: env.ID, Status: oplog.StatusFailure, Limit: 51}, failures},
		{"failures after a cursor", oplog.Filter{EnvironmentID: env.ID, Status: oplog.StatusFailure, Limit: 11,
			After: &oplog.Cursor{CreatedAt: now.Add(20 * time.Millisecond), ID: "l000020"}}, 11},
		{"failures of no match", oplog.Filter{EnvironmentID: env.ID, Status: oplog.StatusFailure, Type: "auth", Limit: 51}, 0},
	} {
		query, args := s.ListLogsSQL(tc.f)
		pages := explainPages(t, db, query, args...)
		got, err := s.ListLogs(ctx, tc.f)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d entries, %d pages touched (table: %d pages)", tc.name, len(got), pages, tablePages)
		if len(got) != tc.want {
			t.Errorf("%s: %d entries, want %d", tc.name, len(got), tc.want)
		}
		if pages >= tablePages/10 {
			t.Errorf("%s: touched %d pages of %d", tc.name, pages, tablePages)
		}
	}
}
