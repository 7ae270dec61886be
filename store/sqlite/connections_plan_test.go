package sqlite

import (
	"regexp"
	"strings"
	"testing"
)

// TestConnectionHealthQueryPlans: the health filters of ListConnections
// and SyncHealth find a connection's syncs through syncs_identity_key
// (which SQLite names sqlite_autoindex_syncs_2) and
// the latest finished run of each through sync_runs_latest_finished_idx:
// no scan of syncs or sync_runs, whatever their size.
func TestConnectionHealthQueryPlans(t *testing.T) {
	t.Parallel()
	s, err := Open(t.Context(), MemoryPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	fullScan := regexp.MustCompile(`\bSCAN (syncs|sync_runs)\b`)
	list := func(cond string) string {
		return `SELECT ` + connectionColumns + ` FROM connections WHERE environment_id = ? AND ` + cond + ` ORDER BY id LIMIT ?`
	}
	for _, tc := range []struct {
		name, query string
		uses        []string
	}{
		{"sync error", list(healthSyncError), []string{"sqlite_autoindex_syncs_2 (connection_id=?)", "sync_runs_latest_finished_idx (sync_id=?)"}},
		{"paused", list(healthPaused), []string{"sqlite_autoindex_syncs_2 (connection_id=?)"}},
		{"ok", list("NOT (" + healthAnyError + " OR " + healthSyncError + ")"), []string{"sqlite_autoindex_syncs_2 (connection_id=?)"}},
		{"SyncHealth", qSyncHealth, []string{"sqlite_autoindex_syncs_2 (connection_id=?)", "sync_runs_latest_finished_idx (sync_id=?)"}},
	} {
		args := make([]any, strings.Count(tc.query, "?"))
		for i := range args {
			args[i] = int64(1)
		}
		if tc.name == "SyncHealth" {
			args[0] = "[1,2]"
		}
		rows, err := s.w.QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+tc.query, args...)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
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
		for _, u := range tc.uses {
			if !strings.Contains(text, u) {
				t.Errorf("%s: the plan does not use %s:\n%s", tc.name, u, text)
			}
		}
		if fullScan.MatchString(text) {
			t.Errorf("%s: the plan scans a table:\n%s", tc.name, text)
		}
	}
}
