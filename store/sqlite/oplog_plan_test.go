package sqlite

import (
	"strings"
	"testing"
	"time"

	"github.com/embedauth/connect/oplog"
)

// TestListLogsQueryPlans checks that ListLogs reads an index in its order
// for the filters the log API sends, a page after a cursor included: no
// scan of the table, no sort of what matches. A list of failures reads the
// partial index of failures (migration 007), not every success of the
// environment.
func TestListLogsQueryPlans(t *testing.T) {
	t.Parallel()
	s, err := Open(t.Context(), MemoryPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	after := &oplog.Cursor{CreatedAt: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC), ID: "x"}
	const env, failures = "operations_log_environment_id_created_at_idx", "operations_log_failures_idx"
	for _, tc := range []struct {
		name string
		f    oplog.Filter
		uses string
	}{
		{"environment", oplog.Filter{EnvironmentID: 1}, env},
		{"after", oplog.Filter{EnvironmentID: 1, After: after}, env},
		{"type and operation after", oplog.Filter{EnvironmentID: 1, Type: "auth", Operation: "refresh", After: after}, env},
		{"successes", oplog.Filter{EnvironmentID: 1, Status: oplog.StatusSuccess}, env},
		{"failures", oplog.Filter{EnvironmentID: 1, Status: oplog.StatusFailure}, failures},
		{"failures after", oplog.Filter{EnvironmentID: 1, Status: oplog.StatusFailure, After: after}, failures},
		{"failures of a type since", oplog.Filter{EnvironmentID: 1, Status: oplog.StatusFailure, Type: "webhook",
			Since: after.CreatedAt.Add(-time.Hour)}, failures},
		{"connection after", oplog.Filter{EnvironmentID: 1, ConnectionID: "c", After: after}, "operations_log_environment_id_connection_id_created_at_idx"},
		{"id", oplog.Filter{EnvironmentID: 1, ID: "x"}, "sqlite_autoindex_operations_log_1"},
	} {
		q, args := listLogsSQL(tc.f)
		rows, err := s.w.QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+q, args...)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			plan = append(plan, detail)
		}
		if err := rows.Close(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		text := strings.Join(plan, "\n")
		if !strings.Contains(text, "USING INDEX "+tc.uses+" ") && !strings.HasSuffix(text, "USING INDEX "+tc.uses) {
			t.Errorf("%s: the plan does not use %s:\n%s", tc.name, tc.uses, text)
		}
		if strings.Contains(text, "SCAN operations_log") || strings.Contains(text, "TEMP B-TREE") {
			t.Errorf("%s: the plan scans or sorts:\n%s", tc.name, text)
		}
	}
}

// TestCountLogsQueryPlan: CountLogs reads the environment's range of its
// index on (environment_id, created_at), not the table.
func TestCountLogsQueryPlan(t *testing.T) {
	t.Parallel()
	s, err := Open(t.Context(), MemoryPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	since := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	q, args := countLogsSQL(oplog.CountFilter{EnvironmentID: 1, Since: since, Until: since.Add(24 * time.Hour), Bucket: oplog.BucketHour})
	rows, err := s.w.QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+q, args...)
	if err != nil {
		t.Fatal(err)
	}
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	text := strings.Join(plan, "\n")
	if !strings.Contains(text, "USING INDEX operations_log_environment_id_created_at_idx (environment_id=? AND created_at>? AND created_at<?)") {
		t.Errorf("the plan does not read the environment's range of its index:\n%s", text)
	}
	if strings.Contains(text, "SCAN operations_log") {
		t.Errorf("the plan scans the table:\n%s", text)
	}
}
