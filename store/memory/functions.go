package memory

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/embedauth/connect/functions"
	"github.com/embedauth/connect/internal/jsonvalue"
	"github.com/embedauth/connect/internal/uuid"
	"github.com/embedauth/connect/store"
)

// The keys of the functions' maps of data.
type (
	// functionKey is the identity of a deployed function.
	functionKey struct {
		env         int64
		integration string
		kind        functions.Kind
		name        string
	}
	// syncKey is the identity of a sync (a functions.Schedule).
	syncKey struct {
		conn          int64
		name, variant string
	}
	// checkpointKey is the identity of a checkpoint.
	checkpointKey struct {
		conn int64
		key  string
	}
)

// canonicalUUID returns id in the canonical form the store keeps, or
// store.ErrInvalid when it is not a UUID (as Postgres' uuid type reads
// one).
func canonicalUUID(field, id string) (string, error) {
	c, ok := uuid.Parse(id)
	if !ok {
		return "", fmt.Errorf("%s %q: %w: not a UUID", field, id, store.ErrInvalid)
	}
	return c, nil
}

// optionalUUID is canonicalUUID where "" means none.
func optionalUUID(field, id string) (string, error) {
	if id == "" {
		return "", nil
	}
	return canonicalUUID(field, id)
}

// checkJSONText rejects, as Postgres' jsonb does, JSON that is not UTF-8,
// not JSON, or holds text Postgres cannot store (a NUL). Empty is SQL
// NULL, and fine.
func checkJSONText(field string, b []byte) error {
	if len(b) == 0 {
		return nil
	}
	if !utf8.Valid(b) || !json.Valid(b) {
		return fmt.Errorf("%w: %s: not valid JSON", store.ErrInvalid, field)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("%w: %s: %v", store.ErrInvalid, field, err)
	}
	if err := checkText(v); err != nil {
		return fmt.Errorf("%s: %w", field, err)
	}
	return nil
}

// jsonEqual reports whether two JSON documents hold the same value, as
// jsonb compares them (object keys in any order).
func jsonEqual(a, b []byte) bool {
	decode := func(b []byte) (any, bool) {
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber()
		var v any
		return v, d.Decode(&v) == nil
	}
	va, oka := decode(a)
	vb, okb := decode(b)
	return oka && okb && reflect.DeepEqual(va, vb)
}

// ---- Functions ----

// storableDefinition returns def as it comes back from a jsonb column,
// with its JSON encoding, or store.ErrInvalid.
func storableDefinition(def functions.Definition) (functions.Definition, []byte, error) {
	if err := checkText(def); err != nil {
		return functions.Definition{}, nil, fmt.Errorf("definition: %w", err)
	}
	b, err := json.Marshal(def)
	if err != nil {
		return functions.Definition{}, nil, fmt.Errorf("%w: definition: %v", store.ErrInvalid, err)
	}
	if err := checkJSONText("definition", b); err != nil {
		return functions.Definition{}, nil, err
	}
	var out functions.Definition
	if err := json.Unmarshal(b, &out); err != nil {
		return functions.Definition{}, nil, fmt.Errorf("%w: definition: %v", store.ErrInvalid, err)
	}
	return out, b, nil
}

func copyDefinition(d functions.Definition) functions.Definition {
	c := d
	if d.Models != nil {
		c.Models = make([]functions.Model, len(d.Models))
		for i, m := range d.Models {
			c.Models[i] = functions.Model{Name: m.Name, Schema: bytes.Clone(m.Schema)}
		}
	}
	c.JSONSchema = bytes.Clone(d.JSONSchema)
	c.Scopes = slices.Clone(d.Scopes)
	c.Endpoints = slices.Clone(d.Endpoints)
	c.WebhookSubscriptions = slices.Clone(d.WebhookSubscriptions)
	c.Attributes = jsonvalue.CloneMap(d.Attributes)
	c.Features = slices.Clone(d.Features)
	return c
}

func copyFunction(f *functions.Function) *functions.Function {
	c := *f
	c.Definition = copyDefinition(f.Definition)
	c.Code = bytes.Clone(f.Code)
	return &c
}

// nextVersion is the version of a changed function: the one given, else
// the stored one plus one when it is a number (of up to 18 digits), else
// the stored one.
func nextVersion(stored, given string) string {
	if given != "" {
		return given
	}
	if len(stored) == 0 || len(stored) > 18 || strings.Trim(stored, "0123456789") != "" {
		return stored
	}
	n, err := strconv.ParseInt(stored, 10, 64)
	if err != nil {
		return stored
	}
	return strconv.FormatInt(n+1, 10)
}

// PutFunction creates f, or replaces the function of its identity when
// anything but its version differs, or its version differs and f has
// one; see functions.FunctionStore. A missing integration is
// store.ErrNotFound.
func (s *Store) PutFunction(ctx context.Context, f *functions.Function) (bool, error) {
	if err := checkText(f); err != nil {
		return false, err
	}
	def, defJSON, err := storableDefinition(f.Definition)
	if err != nil {
		return false, err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return false, err
	}
	defer unlock()
	if s.integrationByKey(f.EnvironmentID, f.Integration) == nil {
		return false, fmt.Errorf("integration %q: %w", f.Integration, store.ErrNotFound)
	}
	k := functionKey{f.EnvironmentID, f.Integration, f.Kind, f.Name}
	c := &functions.Function{EnvironmentID: f.EnvironmentID, Integration: f.Integration, Kind: f.Kind, Name: f.Name,
		Runtime: f.Runtime, Version: f.Version, Source: f.Source, Enabled: true, Definition: def,
		Code: bytes.Clone(f.Code), DeployedAt: f.DeployedAt, UpdatedAt: f.DeployedAt}
	if id, ok := s.d.functionIndex[k]; ok {
		old := s.d.functions[id]
		oldJSON, err := json.Marshal(old.Definition)
		if err != nil {
			return false, err
		}
		if old.Runtime == f.Runtime && old.Source == f.Source && bytes.Equal(old.Code, f.Code) &&
			jsonEqual(oldJSON, defJSON) && (f.Version == "" || f.Version == old.Version) {
			*f = *copyFunction(old)
			return false, nil
		}
		c.ID, c.Enabled, c.Version = old.ID, old.Enabled, nextVersion(old.Version, f.Version)
	} else {
		s.d.lastFunctionID++
		c.ID = s.d.lastFunctionID
		if c.Version == "" {
			c.Version = "1"
		}
		s.d.functionIndex[k] = c.ID
	}
	s.d.functions[c.ID] = c
	*f = *copyFunction(c)
	return true, nil
}

// GetFunction returns the function of an identity, or store.ErrNotFound.
func (s *Store) GetFunction(ctx context.Context, environmentID int64, integration string, kind functions.Kind, name string) (*functions.Function, error) {
	if err := checkText([]string{integration, string(kind), name}); err != nil {
		return nil, err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	id, ok := s.d.functionIndex[functionKey{environmentID, integration, kind, name}]
	if !ok {
		return nil, fmt.Errorf("%s function %q of %q: %w", kind, name, integration, store.ErrNotFound)
	}
	return copyFunction(s.d.functions[id]), nil
}

// ListFunctions returns the functions of an environment, of one
// integration when integration is not empty, ordered by integration, kind,
// then name (byte order).
func (s *Store) ListFunctions(ctx context.Context, environmentID int64, integration string) ([]*functions.Function, error) {
	if err := checkText(integration); err != nil {
		return nil, err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	out := []*functions.Function{}
	for _, f := range s.d.functions {
		if f.EnvironmentID == environmentID && (integration == "" || f.Integration == integration) {
			out = append(out, copyFunction(f))
		}
	}
	slices.SortFunc(out, func(a, b *functions.Function) int {
		return cmp.Or(strings.Compare(a.Integration, b.Integration), strings.Compare(string(a.Kind), string(b.Kind)),
			strings.Compare(a.Name, b.Name))
	})
	return out, nil
}

// DeleteFunction deletes the function of an identity and, for a sync,
// every sync of the function (by environment, integration and name) with
// their runs; or returns store.ErrNotFound.
func (s *Store) DeleteFunction(ctx context.Context, environmentID int64, integration string, kind functions.Kind, name string) error {
	if err := checkText([]string{integration, string(kind), name}); err != nil {
		return err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	k := functionKey{environmentID, integration, kind, name}
	id, ok := s.d.functionIndex[k]
	if !ok {
		return fmt.Errorf("%s function %q of %q: %w", kind, name, integration, store.ErrNotFound)
	}
	delete(s.d.functions, id)
	delete(s.d.functionIndex, k)
	if kind == functions.KindSync {
		s.d.deleteSyncs(func(sy *functions.Schedule) bool {
			return sy.EnvironmentID == environmentID && sy.Integration == integration && sy.Name == name
		})
	}
	return nil
}

// SetFunctionEnabled sets Enabled, or returns store.ErrNotFound. It leaves
// UpdatedAt as it is.
func (s *Store) SetFunctionEnabled(ctx context.Context, environmentID int64, integration string, kind functions.Kind, name string, enabled bool) error {
	if err := checkText([]string{integration, string(kind), name}); err != nil {
		return err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	id, ok := s.d.functionIndex[functionKey{environmentID, integration, kind, name}]
	if !ok {
		return fmt.Errorf("%s function %q of %q: %w", kind, name, integration, store.ErrNotFound)
	}
	c := copyFunction(s.d.functions[id])
	c.Enabled = enabled
	s.d.functions[id] = c
	return nil
}

// deleteIntegrationFunctions deletes the functions of an integration, as
// the functions' foreign key does in Postgres.
func (d *data) deleteIntegrationFunctions(env int64, key string) {
	for k, id := range d.functionIndex {
		if k.env == env && k.integration == key {
			delete(d.functions, id)
			delete(d.functionIndex, k)
		}
	}
}

// renameIntegrationFunctions moves the functions of an integration to its
// new key, as the functions' foreign key (ON UPDATE CASCADE) does in
// Postgres.
func (d *data) renameIntegrationFunctions(env int64, from, to string) {
	if from == to {
		return
	}
	for k, id := range d.functionIndex {
		if k.env == env && k.integration == from {
			c := copyFunction(d.functions[id])
			c.Integration = to
			d.functions[id] = c
			delete(d.functionIndex, k)
			k.integration = to
			d.functionIndex[k] = id
		}
	}
}

// ---- Syncs ----

func copySchedule(sy *functions.Schedule) *functions.Schedule {
	c := *sy
	c.NextRunAt = copyTime(sy.NextRunAt)
	c.LastSyncDate = copyTime(sy.LastSyncDate)
	return &c
}

// deleteSyncs deletes the syncs that match and their runs.
func (d *data) deleteSyncs(match func(*functions.Schedule) bool) {
	gone := map[string]bool{}
	for id, sy := range d.syncs {
		if match(sy) {
			gone[id] = true
			delete(d.syncs, id)
			delete(d.syncIndex, syncKey{sy.ConnectionID, sy.Name, sy.Variant})
		}
	}
	if len(gone) == 0 {
		return
	}
	for id, r := range d.syncRuns {
		if gone[r.SyncID] {
			delete(d.syncRuns, id)
		}
	}
}

// deleteConnectionsData deletes the syncs (with their runs) and the
// checkpoints of the connections, as their foreign keys do in Postgres.
func (d *data) deleteConnectionsData(conns map[int64]bool) {
	if len(conns) == 0 {
		return
	}
	d.deleteSyncs(func(sy *functions.Schedule) bool { return conns[sy.ConnectionID] })
	for k := range d.checkpoints {
		if conns[k.conn] {
			delete(d.checkpoints, k)
		}
	}
}

// CreateSyncs creates the syncs that do not exist yet (by ConnectionID,
// Name, Variant; the first of syncs given twice) and leaves the others,
// and the structs given for them, as they are. It sets ID (a random
// UUID), UpdatedAt (to CreatedAt) and Version (1) of those it created.
// All or none: a missing connection is store.ErrNotFound and creates
// nothing.
func (s *Store) CreateSyncs(ctx context.Context, syncs []*functions.Schedule) (int, error) {
	stored := make([]*functions.Schedule, len(syncs))
	for i, sy := range syncs {
		if err := checkText(sy); err != nil {
			return 0, err
		}
		run, err := optionalUUID("run id", sy.RunID)
		if err != nil {
			return 0, err
		}
		c := copySchedule(sy)
		c.RunID, c.Interval = run, sy.Interval.Truncate(time.Millisecond)
		c.UpdatedAt, c.Version = sy.CreatedAt, 1
		stored[i] = c
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return 0, err
	}
	defer unlock()
	for _, sy := range syncs {
		if _, ok := s.d.conns[sy.ConnectionID]; !ok {
			return 0, fmt.Errorf("connection %d: %w", sy.ConnectionID, store.ErrNotFound)
		}
	}
	n := 0
	for i, c := range stored {
		k := syncKey{c.ConnectionID, c.Name, c.Variant}
		if _, ok := s.d.syncIndex[k]; ok {
			continue
		}
		c.ID = uuid.New()
		s.d.syncs[c.ID] = c
		s.d.syncIndex[k] = c.ID
		syncs[i].ID, syncs[i].UpdatedAt, syncs[i].Version = c.ID, c.UpdatedAt, 1
		n++
	}
	return n, nil
}

// GetSync returns a sync by identity, or store.ErrNotFound.
func (s *Store) GetSync(ctx context.Context, connectionID int64, name, variant string) (*functions.Schedule, error) {
	if err := checkText([]string{name, variant}); err != nil {
		return nil, err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	id, ok := s.d.syncIndex[syncKey{connectionID, name, variant}]
	if !ok {
		return nil, fmt.Errorf("sync %q (%s) of connection %d: %w", name, variant, connectionID, store.ErrNotFound)
	}
	return copySchedule(s.d.syncs[id]), nil
}

// GetSyncByID returns a sync by ID, or store.ErrNotFound. An ID that is
// not a UUID is store.ErrInvalid.
func (s *Store) GetSyncByID(ctx context.Context, id string) (*functions.Schedule, error) {
	id, err := canonicalUUID("sync id", id)
	if err != nil {
		return nil, err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	sy, ok := s.d.syncs[id]
	if !ok {
		return nil, fmt.Errorf("sync %s: %w", id, store.ErrNotFound)
	}
	return copySchedule(sy), nil
}

// ListSyncs returns the syncs matching f, by ID. An EnvironmentID of 0 is
// store.ErrInvalid; a Limit of 0 or less means no limit.
func (s *Store) ListSyncs(ctx context.Context, f functions.SyncFilter) ([]*functions.Schedule, error) {
	if f.EnvironmentID == 0 {
		return nil, fmt.Errorf("list syncs: %w: no environment", store.ErrInvalid)
	}
	if err := checkText(f); err != nil {
		return nil, err
	}
	after := ""
	if f.AfterID != "" {
		var err error
		if after, err = canonicalUUID("after id", f.AfterID); err != nil {
			return nil, err
		}
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	out := []*functions.Schedule{}
	for _, sy := range s.d.syncs {
		switch {
		case sy.EnvironmentID != f.EnvironmentID,
			f.Integration != "" && sy.Integration != f.Integration,
			f.ConnectionID != 0 && sy.ConnectionID != f.ConnectionID,
			f.Name != "" && sy.Name != f.Name,
			f.Variant != "" && sy.Variant != f.Variant,
			after != "" && sy.ID <= after:
			continue
		}
		out = append(out, sy)
	}
	slices.SortFunc(out, func(a, b *functions.Schedule) int { return strings.Compare(a.ID, b.ID) })
	if f.Limit > 0 && len(out) > f.Limit {
		out = out[:f.Limit]
	}
	for i, sy := range out {
		out[i] = copySchedule(sy)
	}
	return out, nil
}

// UpdateSync replaces the mutable fields of the sync with sy.ID when its
// stored Version equals sy.Version, then sets sy.Version to the next one.
// A stale version is store.ErrConflict; a missing sync
// store.ErrNotFound.
func (s *Store) UpdateSync(ctx context.Context, sy *functions.Schedule) error {
	if err := checkText(sy); err != nil {
		return err
	}
	id, err := canonicalUUID("sync id", sy.ID)
	if err != nil {
		return err
	}
	run, err := optionalUUID("run id", sy.RunID)
	if err != nil {
		return err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	old, ok := s.d.syncs[id]
	if !ok {
		return fmt.Errorf("sync %s: %w", id, store.ErrNotFound)
	}
	if old.Version != sy.Version {
		return fmt.Errorf("sync %s: version %d is stale: %w", id, sy.Version, store.ErrConflict)
	}
	c := copySchedule(old)
	c.Frequency, c.Interval, c.Paused = sy.Frequency, sy.Interval.Truncate(time.Millisecond), sy.Paused
	c.NextRunAt, c.LastSyncDate = copyTime(sy.NextRunAt), copyTime(sy.LastSyncDate)
	c.RunID, c.UpdatedAt, c.Version = run, sy.UpdatedAt, old.Version+1
	s.d.syncs[id] = c
	sy.Version = c.Version
	return nil
}

// DeleteSync deletes a sync and its runs, or returns store.ErrNotFound.
func (s *Store) DeleteSync(ctx context.Context, id string) error {
	id, err := canonicalUUID("sync id", id)
	if err != nil {
		return err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if _, ok := s.d.syncs[id]; !ok {
		return fmt.Errorf("sync %s: %w", id, store.ErrNotFound)
	}
	s.d.deleteSyncs(func(sy *functions.Schedule) bool { return sy.ID == id })
	return nil
}

// CountSyncVariants counts the syncs of a connection and sync name whose
// variant is not functions.BaseVariant.
func (s *Store) CountSyncVariants(ctx context.Context, connectionID int64, name string) (int, error) {
	if err := checkText(name); err != nil {
		return 0, err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return 0, err
	}
	defer unlock()
	n := 0
	for k := range s.d.syncIndex {
		if k.conn == connectionID && k.name == name && k.variant != functions.BaseVariant {
			n++
		}
	}
	return n, nil
}

// ClaimDueSyncs returns up to limit syncs (all when limit is 0 or less)
// that are not paused, have no RunID and are due at now, earliest due
// first. The transaction of ctx holds the store's lock, which serialises
// every transaction, so there is nothing more to lock. Outside a
// transaction of s it returns an error.
func (s *Store) ClaimDueSyncs(ctx context.Context, now time.Time, limit int) ([]*functions.Schedule, error) {
	t, ok := ctx.Value(txKey{}).(*tx)
	if !ok || t.s != s {
		return nil, errors.New("memory: ClaimDueSyncs must be called inside WithTx")
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.done {
		return nil, errors.New("memory: ClaimDueSyncs called after its transaction ended")
	}
	out := []*functions.Schedule{}
	for _, sy := range s.d.syncs {
		if !sy.Paused && sy.RunID == "" && sy.NextRunAt != nil && !sy.NextRunAt.After(now) {
			out = append(out, sy)
		}
	}
	slices.SortFunc(out, func(a, b *functions.Schedule) int {
		return cmp.Or(a.NextRunAt.Compare(*b.NextRunAt), strings.Compare(a.ID, b.ID))
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	for i, sy := range out {
		out[i] = copySchedule(sy)
	}
	return out, nil
}

// ---- Sync runs ----

func copyRun(r *functions.SyncRun) *functions.SyncRun {
	c := *r
	c.StartedAt = copyTime(r.StartedAt)
	c.FinishedAt = copyTime(r.FinishedAt)
	c.HeartbeatAt = copyTime(r.HeartbeatAt)
	c.Result = maps.Clone(r.Result)
	c.CheckpointFrom = bytes.Clone(r.CheckpointFrom)
	c.CheckpointTo = bytes.Clone(r.CheckpointTo)
	c.Error = bytes.Clone(r.Error)
	return &c
}

// storableRun checks r and returns the copy the store keeps, with its ID
// and Supersedes in canonical form (the caller checks SyncID).
func storableRun(r *functions.SyncRun) (*functions.SyncRun, error) {
	if err := checkText(r); err != nil {
		return nil, err
	}
	for _, f := range []struct {
		name string
		b    []byte
	}{{"checkpoint_from", r.CheckpointFrom}, {"checkpoint_to", r.CheckpointTo}, {"error", r.Error}} {
		if err := checkJSONText(f.name, f.b); err != nil {
			return nil, err
		}
	}
	c := copyRun(r)
	var err error
	if c.ID, err = canonicalUUID("run id", r.ID); err != nil {
		return nil, err
	}
	if c.Supersedes, err = optionalUUID("supersedes", r.Supersedes); err != nil {
		return nil, err
	}
	// Empty JSON is SQL NULL.
	for _, b := range []*json.RawMessage{&c.CheckpointFrom, &c.CheckpointTo, &c.Error} {
		if len(*b) == 0 {
			*b = nil
		}
	}
	return c, nil
}

// CreateSyncRun stores a new run (ID set by the caller, a UUID) and sets
// its Version to 1. A missing sync is store.ErrNotFound; an ID already
// stored store.ErrConflict.
func (s *Store) CreateSyncRun(ctx context.Context, r *functions.SyncRun) error {
	c, err := storableRun(r)
	if err != nil {
		return err
	}
	if c.SyncID, err = canonicalUUID("sync id", r.SyncID); err != nil {
		return err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if _, ok := s.d.syncs[c.SyncID]; !ok {
		return fmt.Errorf("sync %s: %w", c.SyncID, store.ErrNotFound)
	}
	if _, dup := s.d.syncRuns[c.ID]; dup {
		return fmt.Errorf("sync run %s: %w", c.ID, store.ErrConflict)
	}
	c.Version = 1
	s.d.syncRuns[c.ID] = c
	r.ID, r.SyncID, r.Version = c.ID, c.SyncID, 1
	return nil
}

// GetSyncRun returns a run, or store.ErrNotFound.
func (s *Store) GetSyncRun(ctx context.Context, id string) (*functions.SyncRun, error) {
	id, err := canonicalUUID("run id", id)
	if err != nil {
		return nil, err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	r, ok := s.d.syncRuns[id]
	if !ok {
		return nil, fmt.Errorf("sync run %s: %w", id, store.ErrNotFound)
	}
	return copyRun(r), nil
}

// UpdateSyncRun replaces the mutable fields of the run with r.ID when its
// stored Version equals r.Version, then sets r.Version to the next one. A
// stale version is store.ErrConflict; a missing run store.ErrNotFound.
func (s *Store) UpdateSyncRun(ctx context.Context, r *functions.SyncRun) error {
	c, err := storableRun(r)
	if err != nil {
		return err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	old, ok := s.d.syncRuns[c.ID]
	if !ok {
		return fmt.Errorf("sync run %s: %w", c.ID, store.ErrNotFound)
	}
	if old.Version != r.Version {
		return fmt.Errorf("sync run %s: version %d is stale: %w", c.ID, r.Version, store.ErrConflict)
	}
	c.SyncID, c.Trigger, c.CreatedAt, c.Version = old.SyncID, old.Trigger, old.CreatedAt, old.Version+1
	s.d.syncRuns[c.ID] = c
	r.Version = c.Version
	return nil
}

// latestRun reports whether a is later than b (by CreatedAt, then ID).
func latestRun(a, b *functions.SyncRun) bool {
	return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), strings.Compare(a.ID, b.ID)) > 0
}

func finishedRun(r *functions.SyncRun) bool {
	return r.Status == functions.RunSuccess || r.Status == functions.RunStopped
}

// LatestSyncRuns returns the latest run (by CreatedAt, then ID) of each of
// the syncs, by sync ID as given; a sync without runs is absent.
func (s *Store) LatestSyncRuns(ctx context.Context, syncIDs []string) (map[string]*functions.SyncRun, error) {
	return s.latestRuns(ctx, syncIDs, func(*functions.SyncRun) bool { return true })
}

// LatestFinishedSyncRuns is LatestSyncRuns among the runs that finished
// (SUCCESS or STOPPED).
func (s *Store) LatestFinishedSyncRuns(ctx context.Context, syncIDs []string) (map[string]*functions.SyncRun, error) {
	return s.latestRuns(ctx, syncIDs, finishedRun)
}

func (s *Store) latestRuns(ctx context.Context, syncIDs []string, match func(*functions.SyncRun) bool) (map[string]*functions.SyncRun, error) {
	given := make(map[string]string, len(syncIDs))
	for _, raw := range syncIDs {
		id, err := canonicalUUID("sync id", raw)
		if err != nil {
			return nil, err
		}
		given[id] = raw
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	latest := map[string]*functions.SyncRun{}
	for _, r := range s.d.syncRuns {
		if _, ok := given[r.SyncID]; !ok || !match(r) {
			continue
		}
		if l, ok := latest[r.SyncID]; !ok || latestRun(r, l) {
			latest[r.SyncID] = r
		}
	}
	out := make(map[string]*functions.SyncRun, len(latest))
	for id, r := range latest {
		out[given[id]] = copyRun(r)
	}
	return out, nil
}

// staleSince is the time a run in progress is stale from: a running run's
// heartbeat (nil: never), a queued run's creation.
func staleSince(r *functions.SyncRun) *time.Time {
	switch r.Status {
	case functions.RunRunning:
		return r.HeartbeatAt
	case functions.RunQueued:
		return &r.CreatedAt
	}
	return nil
}

// StaleSyncRuns returns up to limit runs (all when limit is 0 or less)
// that are RUNNING with a HeartbeatAt before before, or QUEUED with a
// CreatedAt before before, the oldest first. A RUNNING run without a
// HeartbeatAt is not stale.
func (s *Store) StaleSyncRuns(ctx context.Context, before time.Time, limit int) ([]*functions.SyncRun, error) {
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	out := []*functions.SyncRun{}
	for _, r := range s.d.syncRuns {
		if t := staleSince(r); t != nil && t.Before(before) {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b *functions.SyncRun) int {
		return cmp.Or(staleSince(a).Compare(*staleSince(b)), strings.Compare(a.ID, b.ID))
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	for i, r := range out {
		out[i] = copyRun(r)
	}
	return out, nil
}

// DeleteSyncRunsBefore deletes up to limit (all when limit is 0 or less)
// finished runs that finished before before and are not the latest
// finished run of their sync, those that finished first first, and returns
// how many.
func (s *Store) DeleteSyncRunsBefore(ctx context.Context, before time.Time, limit int) (int, error) {
	unlock, err := s.lock(ctx)
	if err != nil {
		return 0, err
	}
	defer unlock()
	latest := map[string]*functions.SyncRun{}
	for _, r := range s.d.syncRuns {
		if !finishedRun(r) {
			continue
		}
		if l, ok := latest[r.SyncID]; !ok || latestRun(r, l) {
			latest[r.SyncID] = r
		}
	}
	var gone []*functions.SyncRun
	for _, r := range s.d.syncRuns {
		if finishedRun(r) && r.FinishedAt != nil && r.FinishedAt.Before(before) && latest[r.SyncID] != r {
			gone = append(gone, r)
		}
	}
	slices.SortFunc(gone, func(a, b *functions.SyncRun) int {
		return cmp.Or(a.FinishedAt.Compare(*b.FinishedAt), strings.Compare(a.ID, b.ID))
	})
	if limit > 0 && len(gone) > limit {
		gone = gone[:limit]
	}
	for _, r := range gone {
		delete(s.d.syncRuns, r.ID)
	}
	return len(gone), nil
}

// ---- Checkpoints ----

// GetCheckpoint returns a checkpoint, or store.ErrNotFound.
func (s *Store) GetCheckpoint(ctx context.Context, connectionID int64, key string) (*functions.StoredCheckpoint, error) {
	if err := checkText(key); err != nil {
		return nil, err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	c, ok := s.d.checkpoints[checkpointKey{connectionID, key}]
	if !ok {
		return nil, fmt.Errorf("checkpoint %q of connection %d: %w", key, connectionID, store.ErrNotFound)
	}
	out := *c
	out.Value = bytes.Clone(c.Value)
	return &out, nil
}

// PutCheckpoint writes a checkpoint when its stored version is expected
// (0: none is stored) and returns the new version; otherwise it returns
// store.ErrConflict and writes nothing. A new checkpoint of a missing
// connection is store.ErrNotFound; an empty value store.ErrInvalid.
func (s *Store) PutCheckpoint(ctx context.Context, connectionID int64, key string, value json.RawMessage, expected int64, now time.Time) (int64, error) {
	if err := checkText(key); err != nil {
		return 0, err
	}
	if len(value) == 0 {
		return 0, fmt.Errorf("checkpoint %q: %w: no value", key, store.ErrInvalid)
	}
	if err := checkJSONText("checkpoint", value); err != nil {
		return 0, err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return 0, err
	}
	defer unlock()
	k := checkpointKey{connectionID, key}
	old, ok := s.d.checkpoints[k]
	switch {
	case expected == 0 && ok:
		return 0, fmt.Errorf("checkpoint %q: already stored: %w", key, store.ErrConflict)
	case expected == 0:
		if _, ok := s.d.conns[connectionID]; !ok {
			return 0, fmt.Errorf("connection %d: %w", connectionID, store.ErrNotFound)
		}
	case !ok || old.Version != expected:
		return 0, fmt.Errorf("checkpoint %q: version %d is not the stored one: %w", key, expected, store.ErrConflict)
	}
	c := &functions.StoredCheckpoint{Value: bytes.Clone(value), Version: expected + 1, UpdatedAt: now}
	s.d.checkpoints[k] = c
	return c.Version, nil
}

// DeleteCheckpoint deletes a checkpoint when its stored version is
// expected (0: any); a stale version is store.ErrConflict, a missing
// checkpoint is no error.
func (s *Store) DeleteCheckpoint(ctx context.Context, connectionID int64, key string, expected int64) error {
	if err := checkText(key); err != nil {
		return err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	k := checkpointKey{connectionID, key}
	old, ok := s.d.checkpoints[k]
	if !ok {
		return nil
	}
	if expected != 0 && old.Version != expected {
		return fmt.Errorf("checkpoint %q: version %d is stale: %w", key, expected, store.ErrConflict)
	}
	delete(s.d.checkpoints, k)
	return nil
}

// DeleteCheckpoints deletes every checkpoint of the connection whose key
// starts with prefix, and returns how many.
func (s *Store) DeleteCheckpoints(ctx context.Context, connectionID int64, prefix string) (int, error) {
	if err := checkText(prefix); err != nil {
		return 0, err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return 0, err
	}
	defer unlock()
	n := 0
	for k := range s.d.checkpoints {
		if k.conn == connectionID && strings.HasPrefix(k.key, prefix) {
			delete(s.d.checkpoints, k)
			n++
		}
	}
	return n, nil
}

// ---- Action tasks ----

func copyTask(t *functions.ActionTask) *functions.ActionTask {
	c := *t
	c.FinishedAt = copyTime(t.FinishedAt)
	return &c
}

// CreateActionTask stores a new task (ID set by the caller, a UUID) and
// sets its Version to 1. A missing environment is store.ErrNotFound; an
// ID already stored store.ErrConflict.
func (s *Store) CreateActionTask(ctx context.Context, t *functions.ActionTask) error {
	if err := checkText(t); err != nil {
		return err
	}
	id, err := canonicalUUID("action task id", t.ID)
	if err != nil {
		return err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if _, ok := s.d.envs[t.EnvironmentID]; !ok {
		return fmt.Errorf("environment %d: %w", t.EnvironmentID, store.ErrNotFound)
	}
	if _, dup := s.d.actionTasks[id]; dup {
		return fmt.Errorf("action task %s: %w", id, store.ErrConflict)
	}
	c := copyTask(t)
	c.ID, c.Version = id, 1
	s.d.actionTasks[id] = c
	t.ID, t.Version = id, 1
	return nil
}

// GetActionTask returns a task of the environment, or store.ErrNotFound.
func (s *Store) GetActionTask(ctx context.Context, environmentID int64, id string) (*functions.ActionTask, error) {
	id, err := canonicalUUID("action task id", id)
	if err != nil {
		return nil, err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	t, ok := s.d.actionTasks[id]
	if !ok || t.EnvironmentID != environmentID {
		return nil, fmt.Errorf("action task %s: %w", id, store.ErrNotFound)
	}
	return copyTask(t), nil
}

// UpdateActionTask replaces the mutable fields of the task of
// t.EnvironmentID with t.ID when its stored Version equals t.Version, then
// sets t.Version to the next one. A stale version is store.ErrConflict; a
// missing task (or one of another environment) store.ErrNotFound.
func (s *Store) UpdateActionTask(ctx context.Context, t *functions.ActionTask) error {
	if err := checkText(t); err != nil {
		return err
	}
	id, err := canonicalUUID("action task id", t.ID)
	if err != nil {
		return err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	old, ok := s.d.actionTasks[id]
	if !ok || old.EnvironmentID != t.EnvironmentID {
		return fmt.Errorf("action task %s: %w", id, store.ErrNotFound)
	}
	if old.Version != t.Version {
		return fmt.Errorf("action task %s: version %d is stale: %w", id, t.Version, store.ErrConflict)
	}
	c := copyTask(old)
	c.Status, c.Attempts, c.SealedOutput, c.SealedError = t.Status, t.Attempts, t.SealedOutput, t.SealedError
	c.ErrorStatus, c.LogID, c.UpdatedAt, c.FinishedAt = t.ErrorStatus, t.LogID, t.UpdatedAt, copyTime(t.FinishedAt)
	c.Version = old.Version + 1
	s.d.actionTasks[id] = c
	t.Version = c.Version
	return nil
}

// StaleActionTasks returns up to limit tasks (all when limit is 0 or
// less) that are RUNNING with an UpdatedAt before before, the oldest
// first.
func (s *Store) StaleActionTasks(ctx context.Context, before time.Time, limit int) ([]*functions.ActionTask, error) {
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	out := []*functions.ActionTask{}
	for _, t := range s.d.actionTasks {
		if t.Status == functions.TaskRunning && t.UpdatedAt.Before(before) {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b *functions.ActionTask) int {
		return cmp.Or(a.UpdatedAt.Compare(b.UpdatedAt), strings.Compare(a.ID, b.ID))
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	for i, t := range out {
		out[i] = copyTask(t)
	}
	return out, nil
}

// DeleteActionTasksBefore deletes up to limit tasks (all when limit is 0
// or less) that finished before before, those that finished first first,
// and returns how many.
func (s *Store) DeleteActionTasksBefore(ctx context.Context, before time.Time, limit int) (int, error) {
	unlock, err := s.lock(ctx)
	if err != nil {
		return 0, err
	}
	defer unlock()
	var gone []*functions.ActionTask
	for _, t := range s.d.actionTasks {
		if t.FinishedAt != nil && t.FinishedAt.Before(before) {
			gone = append(gone, t)
		}
	}
	slices.SortFunc(gone, func(a, b *functions.ActionTask) int {
		return cmp.Or(a.FinishedAt.Compare(*b.FinishedAt), strings.Compare(a.ID, b.ID))
	})
	if limit > 0 && len(gone) > limit {
		gone = gone[:limit]
	}
	for _, t := range gone {
		delete(s.d.actionTasks, t.ID)
	}
	return len(gone), nil
}
