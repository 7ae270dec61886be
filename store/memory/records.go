package memory

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/embedauth/connect/functions"
	"github.com/embedauth/connect/internal/recordcheck"
)

// recordScopeKey identifies a scope of records (functions.RecordScope).
type recordScopeKey struct {
	env, conn      int64
	model, variant string
}

func scopeKey(s functions.RecordScope) recordScopeKey {
	return recordScopeKey{s.EnvironmentID, s.ConnectionID, s.Model, s.Variant}
}

// recordScope holds the records of one scope. lastSeq survives the
// deletion of every record (DeleteAllRecords), so that Seq values never go
// back. A scope whose gen is not its data's recordsGen is shared with a
// snapshot and must be copied (data.ownScope) before it changes.
type recordScope struct {
	gen     uint64
	lastSeq int64
	recs    map[string]*storedRecord
}

// storedRecord is a record as stored: immutable, replaced on every change.
type storedRecord struct {
	functions.Record
	touched int64
}

// copyRecord returns a copy of r for a caller.
func copyRecord(r *storedRecord) *functions.Record {
	c := r.Record
	c.DeletedAt = copyTime(r.DeletedAt)
	c.PrunedAt = copyTime(r.PrunedAt)
	return &c
}

// scope returns the scope of k, or nil; the caller must not change it.
func (d *data) scope(k recordScopeKey) *recordScope { return d.recordScopes[k] }

// ownScope returns the scope of k for a change, creating it when create is
// set (else nil when there is none), copied first when a snapshot shares
// it.
func (d *data) ownScope(k recordScopeKey, create bool) *recordScope {
	sc := d.recordScopes[k]
	switch {
	case sc == nil && !create:
		return nil
	case sc == nil:
		sc = &recordScope{gen: d.recordsGen, recs: map[string]*storedRecord{}}
	case sc.gen != d.recordsGen:
		sc = &recordScope{gen: d.recordsGen, lastSeq: sc.lastSeq, recs: maps.Clone(sc.recs)}
	default:
		return sc
	}
	d.recordScopes[k] = sc
	return sc
}

// SaveRecords upserts recs in the scope (see functions.RecordStore).
func (s *Store) SaveRecords(ctx context.Context, scope functions.RecordScope, recs []functions.RecordWrite, now time.Time, touch int64) (functions.SaveResult, error) {
	var res functions.SaveResult
	order, err := recordcheck.ScopeWrites(scope, recs)
	if err != nil {
		return res, err
	}
	if len(recs) == 0 {
		return res, nil
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return res, err
	}
	defer unlock()
	sc := s.d.ownScope(scopeKey(scope), true)
	for _, i := range order {
		w := &recs[i]
		old := sc.recs[w.ID]
		var r storedRecord
		switch {
		case old == nil || old.DeletedAt != nil:
			r.FirstSeenAt = now
			res.Added++
		case old.Hash != w.Hash || old.PrunedAt != nil:
			r.FirstSeenAt = old.FirstSeenAt
			res.Updated++
		default:
			if touch != 0 && old.touched != touch {
				c := *old
				c.touched = touch
				sc.recs[w.ID] = &c
			}
			continue
		}
		sc.lastSeq++
		r.ID, r.SealedPayload, r.Hash, r.UpdatedAt, r.Seq = w.ID, w.SealedPayload, w.Hash, now, sc.lastSeq
		if r.touched = touch; touch == 0 && old != nil {
			r.touched = old.touched
		}
		sc.recs[w.ID] = &r
	}
	return res, nil
}

// UnchangedRecords returns the ids of recs stored with the same hash,
// neither deleted nor pruned, and with touch marks them touched.
func (s *Store) UnchangedRecords(ctx context.Context, scope functions.RecordScope, recs []functions.RecordWrite, touch int64) ([]string, error) {
	order, err := recordcheck.ScopeWrites(scope, recs)
	if err != nil {
		return nil, err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	out := []string{}
	k := scopeKey(scope)
	sc := s.d.recordScopes[k]
	if sc == nil {
		return out, nil
	}
	for _, i := range order {
		w := &recs[i]
		old := sc.recs[w.ID]
		if old == nil || old.DeletedAt != nil || old.PrunedAt != nil || old.Hash != w.Hash {
			continue
		}
		if touch != 0 && old.touched != touch {
			sc = s.d.ownScope(k, false) // written: the transaction's own copy
			c := *old
			c.touched = touch
			sc.recs[w.ID] = &c
		}
		out = append(out, w.ID)
	}
	return out, nil
}

// DeleteRecords soft-deletes the stored records of ids that are not
// deleted.
func (s *Store) DeleteRecords(ctx context.Context, scope functions.RecordScope, ids []string, now time.Time) (functions.SaveResult, error) {
	var res functions.SaveResult
	if err := recordcheck.Scope(scope); err != nil {
		return res, err
	}
	ids, err := recordcheck.IDs(ids, functions.MaxRecordsPerBatch)
	if err != nil {
		return res, err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return res, err
	}
	defer unlock()
	sc := s.d.ownScope(scopeKey(scope), false)
	if sc == nil {
		return res, nil
	}
	for _, id := range ids {
		if r := sc.recs[id]; r != nil && r.DeletedAt == nil {
			sc.delete(r, now)
			res.Deleted++
		}
	}
	return res, nil
}

// delete stores r deleted at now, with a new Seq. sc is owned.
func (sc *recordScope) delete(r *storedRecord, now time.Time) {
	c := *r
	c.DeletedAt, c.UpdatedAt = copyTime(&now), now
	sc.lastSeq++
	c.Seq = sc.lastSeq
	sc.recs[r.ID] = &c
}

// GetRecords returns the stored records of ids that are not deleted.
func (s *Store) GetRecords(ctx context.Context, scope functions.RecordScope, ids []string) ([]*functions.Record, error) {
	if err := recordcheck.Scope(scope); err != nil {
		return nil, err
	}
	ids, err := recordcheck.IDs(ids, 0)
	if err != nil {
		return nil, err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	out := []*functions.Record{}
	sc := s.d.scope(scopeKey(scope))
	if sc == nil {
		return out, nil
	}
	for _, id := range ids {
		if r := sc.recs[id]; r != nil && r.DeletedAt == nil {
			out = append(out, copyRecord(r))
		}
	}
	return out, nil
}

// ListRecords returns a page of the scope's records matching q, by
// ascending Seq.
func (s *Store) ListRecords(ctx context.Context, scope functions.RecordScope, q functions.RecordQuery) ([]*functions.Record, error) {
	if err := recordcheck.Scope(scope); err != nil {
		return nil, err
	}
	ids, err := recordcheck.Query(q)
	if err != nil {
		return nil, err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	out := []*functions.Record{}
	sc := s.d.scope(scopeKey(scope))
	if sc == nil {
		return out, nil
	}
	var matched []*storedRecord
	match := func(r *storedRecord) {
		switch {
		case r.Seq <= q.AfterSeq,
			q.ModifiedAfter != nil && r.UpdatedAt.Before(*q.ModifiedAfter),
			!recordcheck.Matches(q.Filter, r.LastAction()):
			return
		}
		matched = append(matched, r)
	}
	if ids != nil {
		for _, id := range ids {
			if r := sc.recs[id]; r != nil {
				match(r)
			}
		}
	} else {
		for _, r := range sc.recs {
			match(r)
		}
	}
	slices.SortFunc(matched, func(a, b *storedRecord) int { return cmp.Compare(a.Seq, b.Seq) })
	for _, r := range matched[:min(len(matched), q.Limit)] {
		out = append(out, copyRecord(r))
	}
	return out, nil
}

// CountRecords returns how many records of the scope are not deleted.
func (s *Store) CountRecords(ctx context.Context, scope functions.RecordScope) (int, error) {
	if err := recordcheck.Scope(scope); err != nil {
		return 0, err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return 0, err
	}
	defer unlock()
	n := 0
	if sc := s.d.scope(scopeKey(scope)); sc != nil {
		for _, r := range sc.recs {
			if r.DeletedAt == nil {
				n++
			}
		}
	}
	return n, nil
}

// PruneRecords empties the payload of up to limit records not pruned, by
// ascending Seq, up to and including untilSeq.
func (s *Store) PruneRecords(ctx context.Context, scope functions.RecordScope, untilSeq int64, limit int, now time.Time) (int, int64, error) {
	if err := recordcheck.Scope(scope); err != nil {
		return 0, 0, err
	}
	if err := recordcheck.Limit(limit); err != nil {
		return 0, 0, err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return 0, 0, err
	}
	defer unlock()
	sc := s.d.ownScope(scopeKey(scope), false)
	if sc == nil {
		return 0, 0, nil
	}
	var due []*storedRecord
	for _, r := range sc.recs {
		if r.PrunedAt == nil && r.Seq <= untilSeq {
			due = append(due, r)
		}
	}
	slices.SortFunc(due, func(a, b *storedRecord) int { return cmp.Compare(a.Seq, b.Seq) })
	due = due[:min(len(due), limit)]
	for _, r := range due {
		sc.recs[r.ID] = pruned(r, now)
	}
	if len(due) == 0 {
		return 0, 0, nil
	}
	return len(due), due[len(due)-1].Seq, nil
}

// pruned returns r with its payload emptied at now.
func pruned(r *storedRecord, now time.Time) *storedRecord {
	c := *r
	c.SealedPayload, c.PrunedAt = "", copyTime(&now)
	return &c
}

// DeleteUntouched soft-deletes up to limit records not deleted and not
// touched at generation since or later, in ascending order of id, and
// returns their ids.
func (s *Store) DeleteUntouched(ctx context.Context, scope functions.RecordScope, since int64, limit int, now time.Time) ([]string, error) {
	if err := recordcheck.Scope(scope); err != nil {
		return nil, err
	}
	if err := recordcheck.Limit(limit); err != nil {
		return nil, err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	out := []string{}
	sc := s.d.ownScope(scopeKey(scope), false)
	if sc == nil {
		return out, nil
	}
	for _, r := range sc.recs {
		if r.DeletedAt == nil && r.touched < since {
			out = append(out, r.ID)
		}
	}
	slices.Sort(out)
	out = out[:min(len(out), limit)]
	for _, id := range out {
		sc.delete(sc.recs[id], now)
	}
	return out, nil
}

// DeleteAllRecords hard-deletes up to limit records of the scope. The
// scope's last Seq stays, so that records saved later get Seqs above those
// of the deleted ones.
func (s *Store) DeleteAllRecords(ctx context.Context, scope functions.RecordScope, limit int) (int, error) {
	if err := recordcheck.Scope(scope); err != nil {
		return 0, err
	}
	if err := recordcheck.Limit(limit); err != nil {
		return 0, err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return 0, err
	}
	defer unlock()
	sc := s.d.ownScope(scopeKey(scope), false)
	if sc == nil {
		return 0, nil
	}
	return sc.deleteSome(limit), nil
}

// deleteSome hard-deletes up to limit records of the owned scope sc and
// returns how many.
func (sc *recordScope) deleteSome(limit int) int {
	n := 0
	for id := range sc.recs {
		if n == limit {
			break
		}
		delete(sc.recs, id)
		n++
	}
	return n
}

// PruneStaleRecords empties the payload of up to limit records, of every
// scope, not updated since before and not pruned, the least recently
// updated first.
func (s *Store) PruneStaleRecords(ctx context.Context, before time.Time, limit int, now time.Time) (int, error) {
	if err := recordcheck.Limit(limit); err != nil {
		return 0, err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return 0, err
	}
	defer unlock()
	type stale struct {
		k recordScopeKey
		r *storedRecord
	}
	var due []stale
	for k, sc := range s.d.recordScopes {
		for _, r := range sc.recs {
			if r.PrunedAt == nil && r.UpdatedAt.Before(before) {
				due = append(due, stale{k, r})
			}
		}
	}
	slices.SortFunc(due, func(a, b stale) int { return a.r.UpdatedAt.Compare(b.r.UpdatedAt) })
	due = due[:min(len(due), limit)]
	for _, st := range due {
		s.d.ownScope(st.k, false).recs[st.r.ID] = pruned(st.r, now)
	}
	return len(due), nil
}

// DeleteOrphanRecords hard-deletes up to limit records of scopes whose
// connection (row id, in the scope's environment) no longer exists, and
// drops the scopes it empties.
func (s *Store) DeleteOrphanRecords(ctx context.Context, limit int) (int, error) {
	if err := recordcheck.Limit(limit); err != nil {
		return 0, err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return 0, err
	}
	defer unlock()
	var orphans []recordScopeKey
	for k := range s.d.recordScopes {
		if c := s.d.conns[k.conn]; c == nil || c.EnvironmentID != k.env {
			orphans = append(orphans, k)
		}
	}
	slices.SortFunc(orphans, func(a, b recordScopeKey) int {
		return cmp.Or(cmp.Compare(a.env, b.env), cmp.Compare(a.conn, b.conn),
			strings.Compare(a.model, b.model), strings.Compare(a.variant, b.variant))
	})
	n := 0
	for _, k := range orphans {
		sc := s.d.ownScope(k, false)
		n += sc.deleteSome(limit - n)
		if len(sc.recs) == 0 {
			delete(s.d.recordScopes, k)
		}
		if n == limit {
			break
		}
	}
	return n, nil
}
