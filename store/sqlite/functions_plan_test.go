package sqlite

import (
	"regexp"
	"strings"
	"testing"
)

// TestFunctionsQueryPlans checks that the statements of the functions group
// that must stay fast whatever the size of the tables read the indexes
// they were written for: a change to a statement or an index that makes
// SQLite scan a table fails here, not under load.
func TestFunctionsQueryPlans(t *testing.T) {
	t.Parallel()
	s, err := Open(t.Context(), MemoryPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	// A full scan of one of these tables, or of an index of one.
	fullScan := regexp.MustCompile(`\bSCAN (records|syncs|sync_runs|action_tasks|checkpoints|functions)\b`)
	for _, tc := range []struct {
		name  string
		query string
		uses  []string // each must appear in the plan
	}{
		{"UnchangedRecords", unchangedRecordsSQL("(?,?),(?,?)", 0), []string{"records_scope_id_external_id_idx (scope_id=? AND external_id=?)"}},
		{"UnchangedRecords touching", unchangedRecordsSQL("(?,?),(?,?)", 7), []string{"records_scope_id_external_id_idx (scope_id=? AND external_id=?)"}},
		{"SaveRecords touching", touchRecordsSQL(1, 3, 7), []string{"records_scope_id_external_id_idx (scope_id=? AND external_id=?)"}},
		{"DeleteRecords", qDeleteRecords, []string{"records_scope_id_external_id_idx (scope_id=? AND external_id=?)"}},
		{"GetRecords", qGetRecords, []string{"records_scope_id_external_id_idx (scope_id=? AND external_id=?)"}},
		{"CountRecords", qCountRecords, []string{"records_live_idx (scope_id=?)"}},
		{"PruneRecords", qPruneRecords, []string{"records_scope_id_seq_idx (scope_id=? AND seq<?)"}},
		{"DeleteUntouched", qDeleteUntouched, []string{"(scope_id=?)", "(scope_id=? AND external_id=?)"}},
		{"DeleteAllRecords", qDeleteAllRecords, []string{"(scope_id=?)"}},
		{"PruneStaleRecords", qPruneStaleRecords, []string{"records_stale_idx (updated_at<?)"}},
		{"ClaimDueSyncs", qClaimDueSyncs, []string{"syncs_due_idx"}},
		{"LatestSyncRuns", latestRunsSQL(false), []string{"sync_runs_latest_idx (sync_id=?)"}},
		{"LatestFinishedSyncRuns", latestRunsSQL(true), []string{"sync_runs_latest_finished_idx (sync_id=?)"}},
		{"StaleSyncRuns", qStaleSyncRuns, []string{"sync_runs_stale_idx (<expr><?)"}},
		{"DeleteSyncRunsBefore", qDeleteSyncRunsBefore, []string{"sync_runs_finished_at_idx (finished_at<?)",
			"sync_runs_latest_finished_idx (sync_id=? AND created_at>?)"}},
		{"StaleActionTasks", qStaleActionTasks, []string{"action_tasks_running_idx (updated_at<?)"}},
		{"DeleteActionTasksBefore", qDeleteActionTasksBefore, []string{"action_tasks_finished_at_idx"}},
	} {
		args := make([]any, strings.Count(tc.query, "?"))
		for i := range args {
			args[i] = int64(1)
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
		if m := fullScan.FindString(text); m != "" {
			t.Errorf("%s: the plan has %q:\n%s", tc.name, m, text)
		}
	}
}
