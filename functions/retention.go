package functions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/embedauth/connect/jobs"
	"github.com/embedauth/connect/store"
)

// RetentionJobKind is the Scheduler job kind that applies retention.
const RetentionJobKind = "functions.retention"

// Retention periods.
const (
	// RecordPayloadRetention: a record not updated for this long loses its
	// payload (its id, hash and timestamps stay, so that change detection
	// still works).
	RecordPayloadRetention = 30 * 24 * time.Hour
	// StaleSyncRetention: the records of a sync that has not run for this
	// long are deleted.
	StaleSyncRetention = 60 * 24 * time.Hour
	// RunRetention: finished sync runs older than this are deleted (the
	// latest of each sync stays).
	RunRetention = 30 * 24 * time.Hour
	// ActionTaskRetention: the outcome of an async action is kept this
	// long after it finished.
	ActionTaskRetention = 7 * 24 * time.Hour
	// RetentionInterval is how often retention runs.
	RetentionInterval = 5 * time.Minute
)

// retentionBatch bounds each step of one retention job; what is left
// waits for the next.
const retentionBatch = 10_000

// RetentionResult counts what one retention pass did.
type RetentionResult struct {
	PayloadsPruned  int
	RecordsDeleted  int
	OrphansDeleted  int
	RunsDeleted     int
	TasksDeleted    int
	StaleSyncsFound int
}

// maybeQueueRetention queues the retention job of the current interval,
// once per interval and process; the job's unique key keeps instances
// from queueing it twice while it waits or runs.
func (s *Service) maybeQueueRetention(ctx context.Context) error {
	if s.cfg.Scheduler == nil {
		return nil
	}
	bucket := s.cfg.Now().Unix() / int64(RetentionInterval/time.Second)
	s.mu.Lock()
	due := bucket != s.retentionBucket
	s.retentionBucket = bucket
	s.mu.Unlock()
	if !due {
		return nil
	}
	return s.cfg.Scheduler.Enqueue(ctx, jobs.Job{Kind: RetentionJobKind, Args: json.RawMessage(`{}`), MaxAttempts: 3,
		UniqueKey: fmt.Sprintf("retention-%d", bucket), Timeout: 10 * time.Minute})
}

func (s *Service) handleRetentionJob(ctx context.Context, _ *jobs.Run) error {
	_, err := s.Retain(ctx)
	return err
}

// Retain applies retention once, each step bounded: payloads of records
// not updated for RecordPayloadRetention are pruned; the records of syncs
// that have not run for StaleSyncRetention, and of connections that no
// longer exist, are deleted; old finished runs and action tasks are
// deleted. A started Service runs it as a Scheduler job every
// RetentionInterval.
func (s *Service) Retain(ctx context.Context) (RetentionResult, error) {
	var res RetentionResult
	now := s.nowUTC()
	n, err := s.st.PruneStaleRecords(ctx, now.Add(-RecordPayloadRetention), retentionBatch, now)
	res.PayloadsPruned = n
	if err != nil {
		return res, err
	}
	if res.OrphansDeleted, err = s.st.DeleteOrphanRecords(ctx, retentionBatch); err != nil {
		return res, err
	}
	if res.RunsDeleted, err = s.st.DeleteSyncRunsBefore(ctx, now.Add(-RunRetention), retentionBatch); err != nil {
		return res, err
	}
	if res.TasksDeleted, err = s.st.DeleteActionTasksBefore(ctx, now.Add(-ActionTaskRetention), retentionBatch); err != nil {
		return res, err
	}
	err = s.deleteStaleSyncRecords(ctx, now, &res)
	return res, err
}

// deleteStaleSyncRecords deletes the records of the syncs whose last run
// started before the stale limit (syncs that never succeeded count from
// their creation).
func (s *Service) deleteStaleSyncRecords(ctx context.Context, now time.Time, res *RetentionResult) error {
	limit := now.Add(-StaleSyncRetention)
	envs, err := s.st.ListEnvironments(ctx)
	if err != nil {
		return err
	}
	budget := retentionBatch
	for _, e := range envs {
		after := ""
		for {
			page, err := s.st.ListSyncs(ctx, SyncFilter{EnvironmentID: e.ID, Limit: 1000, AfterID: after})
			if err != nil {
				return err
			}
			var stale []*Schedule
			var ids []string
			for _, sc := range page {
				last := sc.CreatedAt
				if sc.LastSyncDate != nil {
					last = *sc.LastSyncDate
				}
				if last.Before(limit) && sc.RunID == "" {
					stale = append(stale, sc)
					ids = append(ids, sc.ID)
				}
			}
			if len(stale) > 0 {
				runs, err := s.st.LatestSyncRuns(ctx, ids)
				if err != nil {
					return err
				}
				for _, sc := range stale {
					if r := runs[sc.ID]; r != nil && r.CreatedAt.After(limit) {
						continue // it ran, and failed, recently
					}
					n, found, err := s.deleteSyncRecords(ctx, sc.ID, limit, budget)
					res.RecordsDeleted += n
					budget -= n
					if found {
						res.StaleSyncsFound++
					}
					if err != nil {
						return err
					}
					if budget <= 0 {
						return nil
					}
				}
			}
			if len(page) < 1000 {
				break
			}
			after = page[len(page)-1].ID
		}
	}
	return nil
}

// deleteSyncRecords deletes up to budget records of the sync id if it is
// still stale (no run queued or running, none started since limit). The
// check and the deletes are one transaction that first writes the sync's
// row: a run queued meanwhile (which writes the row too) makes it fail
// with ErrConflict and delete nothing, and a run queued after it waits for
// it to commit; a webhook run, which writes the row as it starts, is
// either seen by the check (made again after the write) or starts once
// the deletes are committed. So the records of a sync that runs are never
// deleted under it. found reports a sync found stale.
func (s *Service) deleteSyncRecords(ctx context.Context, id string, limit time.Time, budget int) (n int, found bool, err error) {
	err = s.st.WithTx(ctx, func(ctx context.Context) error {
		n = 0
		sc, err := s.st.GetSyncByID(ctx, id)
		if err != nil {
			return err
		}
		last := sc.CreatedAt
		if sc.LastSyncDate != nil {
			last = *sc.LastSyncDate
		}
		if !last.Before(limit) || sc.RunID != "" {
			return nil
		}
		sc.UpdatedAt = s.nowUTC()
		if err := s.st.UpdateSync(ctx, sc); err != nil {
			return err
		}
		// A webhook run does not hold the schedule: read the latest run
		// again now that the row is written (a webhook run starting
		// writes it too, so it either committed before and is seen here,
		// or waits for this transaction).
		latest, err := s.st.LatestSyncRuns(ctx, []string{sc.ID})
		if err != nil {
			return err
		}
		if r := latest[sc.ID]; r != nil && (r.CreatedAt.After(limit) || r.Status == RunQueued || r.Status == RunRunning) {
			return nil
		}
		found = true
		f, err := s.st.GetFunction(ctx, sc.EnvironmentID, sc.Integration, KindSync, sc.Name)
		if err != nil {
			return err
		}
		for _, m := range f.Definition.Models {
			k, err := s.st.DeleteAllRecords(ctx, RecordScope{EnvironmentID: sc.EnvironmentID, ConnectionID: sc.ConnectionID,
				Model: m.Name, Variant: sc.Variant}, budget-n)
			n += k
			if err != nil {
				return err
			}
			if n >= budget {
				return nil
			}
		}
		return nil
	})
	switch {
	case isNotFound(err):
		return 0, found, nil // the sync or its function is gone
	case errors.Is(err, store.ErrConflict):
		return 0, false, nil // it moved meanwhile: not stale now, or the next pass sees it
	case err != nil:
		return 0, found, err
	}
	return n, found, nil
}

func isNotFound(err error) bool { return errors.Is(err, store.ErrNotFound) }
