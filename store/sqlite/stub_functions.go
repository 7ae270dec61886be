package sqlite

// Placeholders of the methods not written yet; each group deletes its file.

import (
	"context"
	"encoding/json"
	"time"

	"github.com/embedauth/connect/functions"
)

// functions.RecordStore
func (s *Store) CountRecords(ctx context.Context, scope functions.RecordScope) (int, error) {
	panic("sqlite: CountRecords is not implemented yet")
}
func (s *Store) DeleteAllRecords(ctx context.Context, scope functions.RecordScope, limit int) (int, error) {
	panic("sqlite: DeleteAllRecords is not implemented yet")
}
func (s *Store) DeleteOrphanRecords(ctx context.Context, limit int) (int, error) {
	panic("sqlite: DeleteOrphanRecords is not implemented yet")
}
func (s *Store) DeleteRecords(ctx context.Context, scope functions.RecordScope, ids []string, now time.Time) (functions.SaveResult, error) {
	panic("sqlite: DeleteRecords is not implemented yet")
}
func (s *Store) DeleteUntouched(ctx context.Context, scope functions.RecordScope, since int64, limit int, now time.Time) ([]string, error) {
	panic("sqlite: DeleteUntouched is not implemented yet")
}
func (s *Store) GetRecords(ctx context.Context, scope functions.RecordScope, ids []string) ([]*functions.Record, error) {
	panic("sqlite: GetRecords is not implemented yet")
}
func (s *Store) ListRecords(ctx context.Context, scope functions.RecordScope, q functions.RecordQuery) ([]*functions.Record, error) {
	panic("sqlite: ListRecords is not implemented yet")
}
func (s *Store) PruneRecords(ctx context.Context, scope functions.RecordScope, untilSeq int64, limit int, now time.Time) (n int, last int64, err error) {
	panic("sqlite: PruneRecords is not implemented yet")
}
func (s *Store) PruneStaleRecords(ctx context.Context, before time.Time, limit int, now time.Time) (int, error) {
	panic("sqlite: PruneStaleRecords is not implemented yet")
}
func (s *Store) SaveRecords(ctx context.Context, scope functions.RecordScope, recs []functions.RecordWrite, now time.Time, touch int64) (functions.SaveResult, error) {
	panic("sqlite: SaveRecords is not implemented yet")
}
func (s *Store) UnchangedRecords(ctx context.Context, scope functions.RecordScope, recs []functions.RecordWrite, touch int64) ([]string, error) {
	panic("sqlite: UnchangedRecords is not implemented yet")
}

// functions.FunctionStore
func (s *Store) DeleteFunction(ctx context.Context, environmentID int64, integration string, kind functions.Kind, name string) error {
	panic("sqlite: DeleteFunction is not implemented yet")
}
func (s *Store) GetFunction(ctx context.Context, environmentID int64, integration string, kind functions.Kind, name string) (*functions.Function, error) {
	panic("sqlite: GetFunction is not implemented yet")
}
func (s *Store) ListFunctions(ctx context.Context, environmentID int64, integration string) ([]*functions.Function, error) {
	panic("sqlite: ListFunctions is not implemented yet")
}
func (s *Store) PutFunction(ctx context.Context, f *functions.Function) (changed bool, err error) {
	panic("sqlite: PutFunction is not implemented yet")
}
func (s *Store) SetFunctionEnabled(ctx context.Context, environmentID int64, integration string, kind functions.Kind, name string, enabled bool) error {
	panic("sqlite: SetFunctionEnabled is not implemented yet")
}

// functions.SyncStore
func (s *Store) ClaimDueSyncs(ctx context.Context, now time.Time, limit int) ([]*functions.Schedule, error) {
	panic("sqlite: ClaimDueSyncs is not implemented yet")
}
func (s *Store) CountSyncVariants(ctx context.Context, connectionID int64, name string) (int, error) {
	panic("sqlite: CountSyncVariants is not implemented yet")
}
func (s *Store) CreateSyncRun(ctx context.Context, r *functions.SyncRun) error {
	panic("sqlite: CreateSyncRun is not implemented yet")
}
func (s *Store) CreateSyncs(ctx context.Context, syncs []*functions.Schedule) (int, error) {
	panic("sqlite: CreateSyncs is not implemented yet")
}
func (s *Store) DeleteSync(ctx context.Context, id string) error {
	panic("sqlite: DeleteSync is not implemented yet")
}
func (s *Store) DeleteSyncRunsBefore(ctx context.Context, before time.Time, limit int) (int, error) {
	panic("sqlite: DeleteSyncRunsBefore is not implemented yet")
}
func (s *Store) GetSync(ctx context.Context, connectionID int64, name string, variant string) (*functions.Schedule, error) {
	panic("sqlite: GetSync is not implemented yet")
}
func (s *Store) GetSyncByID(ctx context.Context, id string) (*functions.Schedule, error) {
	panic("sqlite: GetSyncByID is not implemented yet")
}
func (s *Store) GetSyncRun(ctx context.Context, id string) (*functions.SyncRun, error) {
	panic("sqlite: GetSyncRun is not implemented yet")
}
func (s *Store) LatestFinishedSyncRuns(ctx context.Context, syncIDs []string) (map[string]*functions.SyncRun, error) {
	panic("sqlite: LatestFinishedSyncRuns is not implemented yet")
}
func (s *Store) LatestSyncRuns(ctx context.Context, syncIDs []string) (map[string]*functions.SyncRun, error) {
	panic("sqlite: LatestSyncRuns is not implemented yet")
}
func (s *Store) ListSyncs(ctx context.Context, f functions.SyncFilter) ([]*functions.Schedule, error) {
	panic("sqlite: ListSyncs is not implemented yet")
}
func (s *Store) StaleSyncRuns(ctx context.Context, before time.Time, limit int) ([]*functions.SyncRun, error) {
	panic("sqlite: StaleSyncRuns is not implemented yet")
}
func (s *Store) UpdateSync(ctx context.Context, sched *functions.Schedule) error {
	panic("sqlite: UpdateSync is not implemented yet")
}
func (s *Store) UpdateSyncRun(ctx context.Context, r *functions.SyncRun) error {
	panic("sqlite: UpdateSyncRun is not implemented yet")
}

// functions.CheckpointStore
func (s *Store) DeleteCheckpoint(ctx context.Context, connectionID int64, key string, expected int64) error {
	panic("sqlite: DeleteCheckpoint is not implemented yet")
}
func (s *Store) DeleteCheckpoints(ctx context.Context, connectionID int64, prefix string) (int, error) {
	panic("sqlite: DeleteCheckpoints is not implemented yet")
}
func (s *Store) GetCheckpoint(ctx context.Context, connectionID int64, key string) (*functions.StoredCheckpoint, error) {
	panic("sqlite: GetCheckpoint is not implemented yet")
}
func (s *Store) PutCheckpoint(ctx context.Context, connectionID int64, key string, value json.RawMessage, expected int64, now time.Time) (int64, error) {
	panic("sqlite: PutCheckpoint is not implemented yet")
}

// functions.ActionStore
func (s *Store) CreateActionTask(ctx context.Context, t *functions.ActionTask) error {
	panic("sqlite: CreateActionTask is not implemented yet")
}
func (s *Store) DeleteActionTasksBefore(ctx context.Context, before time.Time, limit int) (int, error) {
	panic("sqlite: DeleteActionTasksBefore is not implemented yet")
}
func (s *Store) GetActionTask(ctx context.Context, environmentID int64, id string) (*functions.ActionTask, error) {
	panic("sqlite: GetActionTask is not implemented yet")
}
func (s *Store) StaleActionTasks(ctx context.Context, before time.Time, limit int) ([]*functions.ActionTask, error) {
	panic("sqlite: StaleActionTasks is not implemented yet")
}
func (s *Store) UpdateActionTask(ctx context.Context, t *functions.ActionTask) error {
	panic("sqlite: UpdateActionTask is not implemented yet")
}
