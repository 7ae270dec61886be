package functions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/store"
)

// SyncRef names a sync and a variant (BaseVariant when empty).
type SyncRef struct {
	Name    string `json:"name"`
	Variant string `json:"variant,omitempty"`
}

func (r SyncRef) variant() string {
	if r.Variant == "" {
		return BaseVariant
	}
	return r.Variant
}

// SyncTarget selects syncs: of one integration, every connection or one
// (ConnectionID), these syncs (all of the integration when Syncs is nil).
type SyncTarget struct {
	EnvironmentID int64
	Integration   string
	// ConnectionID is a connection id; empty for every connection.
	ConnectionID string
	Syncs        []SyncRef
}

// MaxSyncVariants is the most variants a sync has per connection.
const MaxSyncVariants = 100

var variantPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,255}$`)

// schedulesOf returns the schedules a target selects. A named sync that
// is not deployed is not_found; a connection that does not exist
// unknown_connection.
func (s *Service) schedulesOf(ctx context.Context, t SyncTarget) ([]*Schedule, error) {
	if err := s.deploy(ctx, t.EnvironmentID, t.Integration); err != nil {
		return nil, err
	}
	var connRow int64
	if t.ConnectionID != "" {
		c, err := s.st.GetConnection(ctx, t.EnvironmentID, t.Integration, t.ConnectionID)
		if errors.Is(err, store.ErrNotFound) {
			return nil, store.NotFound("unknown_connection", "No connection %q of integration %q was found.", t.ConnectionID, t.Integration)
		}
		if err != nil {
			return nil, err
		}
		connRow = c.ID
	}
	for _, r := range t.Syncs {
		f, err := s.st.GetFunction(ctx, t.EnvironmentID, t.Integration, KindSync, r.Name)
		if errors.Is(err, store.ErrNotFound) {
			return nil, store.NotFound("not_found", "No sync %q is deployed to integration %q.", r.Name, t.Integration)
		}
		if err != nil {
			return nil, err
		}
		_ = f
	}
	want := func(sc *Schedule) bool {
		if t.Syncs == nil {
			return true
		}
		for _, r := range t.Syncs {
			if r.Name == sc.Name && r.variant() == sc.Variant {
				return true
			}
		}
		return false
	}
	var out []*Schedule
	after := ""
	for {
		page, err := s.st.ListSyncs(ctx, SyncFilter{EnvironmentID: t.EnvironmentID, Integration: t.Integration,
			ConnectionID: connRow, Limit: 1000, AfterID: after})
		if err != nil {
			return nil, err
		}
		for _, sc := range page {
			if want(sc) {
				out = append(out, sc)
			}
		}
		if len(page) < 1000 {
			break
		}
		after = page[len(page)-1].ID
	}
	return out, nil
}

// TriggerOptions are the options of TriggerSync.
type TriggerOptions struct {
	// Reset starts over: the run in progress (if any) is cancelled, the
	// sync's checkpoints and last sync date are cleared, and a run starts
	// at once.
	Reset bool
	// EmptyCache, with Reset, also deletes the sync's records before the
	// run (without Reset it is ignored, as in the original).
	EmptyCache bool
}

// ErrSyncRunning is the code of a trigger refused because the sync runs.
const codeSyncRunning = "sync_already_running"

// TriggerSync starts a run of each selected sync now. A sync that is
// queued or running is a conflict (sync_already_running), unless Reset is
// set: then its run is cancelled and the new one starts once it has
// stopped.
func (s *Service) TriggerSync(ctx context.Context, t SyncTarget, o TriggerOptions) error {
	scheds, err := s.schedulesOf(ctx, t)
	if err != nil {
		return err
	}
	now := s.nowUTC()
	for _, sc := range scheds {
		if sc.RunID != "" && !o.Reset {
			return store.Errorf(store.ErrConflict, codeSyncRunning,
				"The sync %q (variant %q) of connection %q is already running; trigger it with reset to restart it.",
				sc.Name, sc.Variant, sc.ConnectionRef)
		}
	}
	for _, sc := range scheds {
		err := s.retryStale(ctx, func(ctx context.Context) error {
			fresh, err := s.st.GetSyncByID(ctx, sc.ID)
			if err != nil {
				return err
			}
			supersedes := ""
			if fresh.RunID != "" {
				if !o.Reset {
					return store.Errorf(store.ErrConflict, codeSyncRunning, "The sync %q of connection %q is already running.",
						fresh.Name, fresh.ConnectionRef)
				}
				if err := s.requestCancel(ctx, fresh.RunID); err != nil {
					return err
				}
				supersedes = fresh.RunID
			}
			if o.Reset {
				fresh.LastSyncDate = nil
			}
			if err := s.queueRun(ctx, fresh, TriggerManual, o.Reset, o.Reset && o.EmptyCache, supersedes, now); err != nil {
				return err
			}
			return s.st.UpdateSync(ctx, fresh)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// retryStale runs fn in a transaction, again when it fails on a
// concurrent change of what it read (a stale version: another trigger,
// a pause, the retention pass that checks a sync), at most five times.
func (s *Service) retryStale(ctx context.Context, fn func(ctx context.Context) error) error {
	var err error
	for range 5 {
		err = s.st.WithTx(ctx, fn)
		var se *store.Error
		if !errors.Is(err, store.ErrConflict) || (errors.As(err, &se) && se.Code == codeSyncRunning) {
			return err
		}
	}
	return err
}

// requestCancel asks the instance running a run to stop it: a run of
// this process stops at once, one of another process at its next
// heartbeat (which reads the request).
func (s *Service) requestCancel(ctx context.Context, runID string) error {
	for range 5 {
		r, err := s.st.GetSyncRun(ctx, runID)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if r.Status != RunQueued && r.Status != RunRunning {
			return nil
		}
		if !r.CancelRequested {
			r.CancelRequested = true
			err = s.st.UpdateSyncRun(ctx, r)
			if errors.Is(err, store.ErrConflict) {
				continue
			}
			if err != nil {
				return err
			}
		}
		s.cancelHere(ctx, runID)
		return nil
	}
	return store.Errorf(store.ErrConflict, "conflict", "The run kept changing; retry.")
}

// CancelSync asks the runs of the selected syncs that are queued or
// running (a scheduled or manual run, and a provider webhook's run) to
// stop: a running one is cancelled, here at once and in another process
// at its next heartbeat, and ends as stopped with the error type
// "cancelled"; a queued one ends so without running. A sync with no run
// in progress is left as it is. The schedules stay: each sync runs again
// at its next trigger.
func (s *Service) CancelSync(ctx context.Context, t SyncTarget) error {
	scheds, err := s.schedulesOf(ctx, t)
	if err != nil {
		return err
	}
	ids := make([]string, len(scheds))
	for i, sc := range scheds {
		ids[i] = sc.ID
	}
	latest, err := s.st.LatestSyncRuns(ctx, ids)
	if err != nil {
		return err
	}
	for _, sc := range scheds {
		runs := []string{}
		if sc.RunID != "" {
			runs = append(runs, sc.RunID)
		}
		// A webhook run does not hold the schedule.
		if r := latest[sc.ID]; r != nil && r.ID != sc.RunID && (r.Status == RunQueued || r.Status == RunRunning) {
			runs = append(runs, r.ID)
		}
		for _, id := range runs {
			if err := s.requestCancel(ctx, id); err != nil {
				return err
			}
		}
	}
	return nil
}

// PauseSync pauses the selected syncs: no scheduled run starts until
// StartSync (a running one finishes).
func (s *Service) PauseSync(ctx context.Context, t SyncTarget) error {
	return s.setPaused(ctx, t, true)
}

// StartSync starts the selected syncs: a paused one runs now, then on its
// schedule.
func (s *Service) StartSync(ctx context.Context, t SyncTarget) error {
	return s.setPaused(ctx, t, false)
}

func (s *Service) setPaused(ctx context.Context, t SyncTarget, paused bool) error {
	scheds, err := s.schedulesOf(ctx, t)
	if err != nil {
		return err
	}
	now := s.nowUTC()
	for _, sc := range scheds {
		err := s.updateSchedule(ctx, sc.ID, func(sc *Schedule) bool {
			if sc.Paused == paused {
				return false
			}
			sc.Paused = paused
			if paused {
				sc.NextRunAt = nil
			} else {
				sc.NextRunAt = &now
			}
			return true
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// updateSchedule applies fn to the schedule with id, retrying on a
// concurrent change; fn returns false to leave it as it is.
func (s *Service) updateSchedule(ctx context.Context, id string, fn func(sc *Schedule) bool) error {
	for range 5 {
		sc, err := s.st.GetSyncByID(ctx, id)
		if err != nil {
			return err
		}
		if !fn(sc) {
			return nil
		}
		sc.UpdatedAt = s.nowUTC()
		err = s.st.UpdateSync(ctx, sc)
		if !errors.Is(err, store.ErrConflict) {
			return err
		}
	}
	return store.Errorf(store.ErrConflict, "conflict", "The sync kept changing; retry.")
}

// UpdateFrequency sets the frequency of one connection's sync (nil
// reverts to the function's), re-times its next run at once (the last
// run's start plus the new interval, or now when that is past) and
// returns the frequency in force, normalised.
func (s *Service) UpdateFrequency(ctx context.Context, env int64, integration, connectionID string, ref SyncRef, frequency *string) (string, error) {
	var f *Frequency
	if frequency != nil {
		fr, err := ParseFrequency(*frequency)
		if err != nil {
			var fe *FrequencyError
			if errors.As(err, &fe) {
				return "", store.Invalid(fe.Code, fe.Message)
			}
			return "", store.Invalid("invalid_frequency", err.Error())
		}
		f = &fr
	}
	scheds, err := s.schedulesOf(ctx, SyncTarget{EnvironmentID: env, Integration: integration, ConnectionID: connectionID,
		Syncs: []SyncRef{ref}})
	if err != nil {
		return "", err
	}
	if len(scheds) == 0 {
		return "", store.NotFound("not_found", "The connection %q has no sync %q of variant %q.", connectionID, ref.Name, ref.variant())
	}
	fn, err := s.st.GetFunction(ctx, env, integration, KindSync, ref.Name)
	if err != nil {
		return "", err
	}
	var out string
	now := s.nowUTC()
	err = s.updateSchedule(ctx, scheds[0].ID, func(sc *Schedule) bool {
		if f != nil {
			sc.Frequency, sc.Interval = f.String(), f.Interval
		} else {
			def, err := ParseFrequency(fn.Definition.Runs)
			if err != nil {
				def = Frequency{Interval: time.Hour}
			}
			sc.Frequency, sc.Interval = "", def.Interval
		}
		out = formatInterval(sc.Interval)
		if !sc.Paused {
			base := now
			if sc.LastSyncDate != nil {
				base = *sc.LastSyncDate
			}
			next := base.Add(sc.Interval)
			if next.Before(now) {
				next = now
			}
			sc.NextRunAt = &next
		}
		return true
	})
	return out, err
}

// CreateVariant creates a variant of a sync for one connection: its own
// schedule, records, checkpoints and status. It runs at once, then on the
// sync's schedule.
func (s *Service) CreateVariant(ctx context.Context, env int64, integration, connectionID, name, variant string) (*Schedule, error) {
	if err := checkVariant(variant); err != nil {
		return nil, err
	}
	if err := s.deploy(ctx, env, integration); err != nil {
		return nil, err
	}
	fn, err := s.st.GetFunction(ctx, env, integration, KindSync, name)
	if errors.Is(err, store.ErrNotFound) {
		return nil, store.NotFound("not_found", "No sync %q is deployed to integration %q.", name, integration)
	}
	if err != nil {
		return nil, err
	}
	c, err := s.st.GetConnection(ctx, env, integration, connectionID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, store.NotFound("unknown_connection", "No connection %q of integration %q was found.", connectionID, integration)
	}
	if err != nil {
		return nil, err
	}
	n, err := s.st.CountSyncVariants(ctx, c.ID, name)
	if err != nil {
		return nil, err
	}
	if n >= MaxSyncVariants {
		return nil, store.Invalid("resource_capped", fmt.Sprintf("The sync %q has %d variants for this connection: the most there can be.", name, MaxSyncVariants))
	}
	sc := s.newSchedule(c, fn, variant, true)
	created, err := s.st.CreateSyncs(ctx, []*Schedule{sc})
	if err != nil {
		return nil, err
	}
	if created == 0 {
		return nil, store.Errorf(store.ErrConflict, "sync_variant_already_exists", "The sync %q already has a variant %q for connection %q.", name, variant, connectionID)
	}
	return sc, nil
}

// DeleteVariant deletes a variant of a sync for one connection, with its
// runs; its records are deleted by retention.
func (s *Service) DeleteVariant(ctx context.Context, env int64, integration, connectionID, name, variant string) error {
	if err := checkVariant(variant); err != nil {
		return err
	}
	scheds, err := s.schedulesOf(ctx, SyncTarget{EnvironmentID: env, Integration: integration, ConnectionID: connectionID,
		Syncs: []SyncRef{{Name: name, Variant: variant}}})
	if err != nil {
		return err
	}
	if len(scheds) == 0 {
		return store.NotFound("not_found", "The sync %q has no variant %q for connection %q.", name, variant, connectionID)
	}
	return s.st.DeleteSync(ctx, scheds[0].ID)
}

func checkVariant(v string) error {
	if v == BaseVariant {
		return store.Invalid("invalid_variant", "The variant cannot be \"base\".")
	}
	if !variantPattern.MatchString(v) {
		return store.Invalid("invalid_variant", "A variant is 1 to 255 letters, digits, '-' or '_'.")
	}
	return nil
}

// newSchedule returns the schedule of a sync function for a connection:
// due now when started, paused otherwise.
func (s *Service) newSchedule(c *connections.Connection, f *Function, variant string, started bool) *Schedule {
	now := s.nowUTC()
	interval := time.Hour
	if fr, err := ParseFrequency(f.Definition.Runs); err == nil {
		interval = fr.Interval
	}
	sc := &Schedule{EnvironmentID: c.EnvironmentID, ConnectionID: c.ID, Integration: c.IntegrationKey,
		ConnectionRef: c.ConnectionID, Name: f.Name, Variant: variant, Interval: interval, Paused: !started,
		CreatedAt: now, UpdatedAt: now}
	if started {
		sc.NextRunAt = &now
	}
	return sc
}

// scheduleExisting creates the base schedules of a newly deployed sync
// for the existing connections of its integration: started when the sync
// auto-starts, paused otherwise.
func (s *Service) scheduleExisting(ctx context.Context, f *Function) error {
	const page = 1000
	for offset := 0; ; offset += page {
		cs, err := s.st.ListConnections(ctx, connections.Filter{EnvironmentID: f.EnvironmentID,
			IntegrationKeys: []string{f.Integration}, Page: store.Page{Limit: page, Offset: offset}})
		if err != nil {
			return err
		}
		scheds := make([]*Schedule, len(cs))
		for i, c := range cs {
			scheds[i] = s.newSchedule(c, f, BaseVariant, f.Definition.AutoStart)
		}
		if len(scheds) > 0 {
			if _, err := s.st.CreateSyncs(ctx, scheds); err != nil {
				return err
			}
		}
		if len(cs) < page {
			return nil
		}
	}
}

// SyncStatus is the status of one connection's sync (GET /sync/status).
type SyncStatus struct {
	ID           string `json:"id"`
	ConnectionID string `json:"connection_id"`
	Name         string `json:"name"`
	Variant      string `json:"variant"`
	Status       string `json:"status"`
	// Type is the type of the latest run that started, as Nango reports
	// it: "INCREMENTAL" when that run was incremental, otherwise (an
	// initial run, a reset, or no run yet) "INITIAL".
	Type                  string                 `json:"type"`
	FinishedAt            *time.Time             `json:"finishedAt"`
	NextScheduledSyncAt   *time.Time             `json:"nextScheduledSyncAt"`
	Frequency             string                 `json:"frequency"`
	LatestResult          map[string]ModelResult `json:"latestResult"`
	LatestExecutionStatus string                 `json:"latestExecutionStatus"`
	// JobStatus is the status of the latest run, finished or not (the
	// original's jobStatus).
	JobStatus   string         `json:"jobStatus,omitempty"`
	RecordCount map[string]int `json:"recordCount"`
	Checkpoint  map[string]any `json:"checkpoint"`
}

// Statuses of a SyncStatus.
const (
	StatusRunning = "RUNNING"
	StatusSuccess = "SUCCESS"
	StatusError   = "ERROR"
	StatusPaused  = "PAUSED"
	StatusStopped = "STOPPED"
)

// Status returns the status of the selected syncs.
func (s *Service) Status(ctx context.Context, t SyncTarget) ([]SyncStatus, error) {
	scheds, err := s.schedulesOf(ctx, t)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(scheds))
	for i, sc := range scheds {
		ids[i] = sc.ID
	}
	latest, err := s.st.LatestSyncRuns(ctx, ids)
	if err != nil {
		return nil, err
	}
	finished, err := s.st.LatestFinishedSyncRuns(ctx, ids)
	if err != nil {
		return nil, err
	}
	fns := map[string]*Function{}
	out := make([]SyncStatus, 0, len(scheds))
	for _, sc := range scheds {
		f, ok := fns[sc.Name]
		if !ok {
			f, err = s.st.GetFunction(ctx, sc.EnvironmentID, sc.Integration, KindSync, sc.Name)
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				return nil, err
			}
			fns[sc.Name] = f
		}
		e := SyncStatus{ID: sc.ID, ConnectionID: sc.ConnectionRef, Name: sc.Name, Variant: sc.Variant,
			Type: "INITIAL", NextScheduledSyncAt: sc.NextRunAt, LatestResult: map[string]ModelResult{},
			RecordCount: map[string]int{}}
		// The latest run's type, not the next one's: a queued run has
		// none yet, so the latest finished run's counts.
		typed := latest[sc.ID]
		if typed == nil || typed.Type == "" {
			typed = finished[sc.ID]
		}
		if typed != nil && typed.Type == "INCREMENTAL" {
			e.Type = "INCREMENTAL"
		}
		e.Frequency = formatInterval(sc.Interval)
		if sc.Frequency != "" {
			e.Frequency = sc.Frequency
		} else if f != nil && f.Definition.Runs != "" {
			e.Frequency = f.Definition.Runs
		}
		if fr := finished[sc.ID]; fr != nil {
			e.FinishedAt = fr.FinishedAt
			for m, r := range fr.Result {
				e.LatestResult[m] = r
			}
			e.LatestExecutionStatus = fr.Status
		}
		lr := latest[sc.ID]
		switch {
		case f == nil || !f.Enabled:
			e.Status = StatusStopped
		case sc.RunID != "", lr != nil && lr.Trigger == TriggerWebhook && (lr.Status == RunQueued || lr.Status == RunRunning):
			// The schedule's run, or a webhook run, is queued or running.
			e.Status = StatusRunning
		case sc.Paused:
			e.Status = StatusPaused
		case finished[sc.ID] != nil && finished[sc.ID].Status == RunStopped:
			e.Status = StatusError
		default:
			e.Status = StatusSuccess
		}
		if lr != nil {
			e.JobStatus = lr.Status
			if lr.Status == RunRunning || lr.Status == RunQueued {
				e.LatestExecutionStatus = lr.Status
			}
		}
		if f != nil {
			for _, m := range f.Definition.Models {
				n, err := s.st.CountRecords(ctx, RecordScope{EnvironmentID: sc.EnvironmentID, ConnectionID: sc.ConnectionID,
					Model: m.Name, Variant: sc.Variant})
				if err != nil {
					return nil, err
				}
				e.RecordCount[m.Name] = n
			}
		}
		cp, err := s.st.GetCheckpoint(ctx, sc.ConnectionID, runKey(sc))
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			return nil, err
		default:
			var m map[string]any
			if json.Unmarshal(cp.Value, &m) == nil {
				e.Checkpoint = m
			}
		}
		out = append(out, e)
	}
	return out, nil
}
