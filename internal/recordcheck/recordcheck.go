package recordcheck

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/embedauth/connect/functions"
	"github.com/embedauth/connect/store"
)

// Text returns store.ErrInvalid when s holds what Postgres cannot store in
// text: a NUL byte or invalid UTF-8.
func Text(what, s string) error {
	if strings.IndexByte(s, 0) >= 0 || !utf8.ValidString(s) {
		return fmt.Errorf("%w: %s holds a NUL byte or invalid UTF-8", store.ErrInvalid, what)
	}
	return nil
}

// Scope checks a scope: a connection row id (above 0), a model and a
// variant (not empty: the base variant is functions.BaseVariant), all
// storable text.
func Scope(s functions.RecordScope) error {
	switch {
	case s.ConnectionID <= 0:
		return fmt.Errorf("%w: record scope without a connection", store.ErrInvalid)
	case s.Model == "":
		return fmt.Errorf("%w: record scope without a model", store.ErrInvalid)
	case s.Variant == "":
		return fmt.Errorf("%w: record scope without a variant (the base one is %q)", store.ErrInvalid, functions.BaseVariant)
	}
	if err := Text("model", s.Model); err != nil {
		return err
	}
	return Text("variant", s.Variant)
}

// ID checks the id of a record to write: 1 to functions.MaxRecordIDLen
// characters of storable text.
func ID(id string) error {
	if err := Text("record id", id); err != nil {
		return err
	}
	if n := utf8.RuneCountInString(id); n == 0 || n > functions.MaxRecordIDLen {
		return fmt.Errorf("%w: a record id has %d characters, want 1 to %d", store.ErrInvalid, n, functions.MaxRecordIDLen)
	}
	return nil
}

// Writes checks the records of one SaveRecords call: at most
// functions.MaxRecordsPerBatch, valid and distinct ids, storable payloads
// and hashes. It returns the indexes of recs in ascending order of id, the
// order in which a store writes (and locks) them.
func Writes(recs []functions.RecordWrite) ([]int, error) {
	if len(recs) > functions.MaxRecordsPerBatch {
		return nil, fmt.Errorf("%w: %d records in one write, at most %d", store.ErrInvalid, len(recs), functions.MaxRecordsPerBatch)
	}
	order := make([]int, len(recs))
	for i := range recs {
		r := &recs[i]
		if err := ID(r.ID); err != nil {
			return nil, err
		}
		if err := Text("record payload", r.SealedPayload); err != nil {
			return nil, err
		}
		if err := Text("record hash", r.Hash); err != nil {
			return nil, err
		}
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(recs[a].ID, recs[b].ID) })
	for k := 1; k < len(order); k++ {
		if id := recs[order[k]].ID; id == recs[order[k-1]].ID {
			return nil, fmt.Errorf("%w: record %q given twice", store.ErrInvalid, id)
		}
	}
	return order, nil
}

// ScopeWrites checks a scope and the records of one write to it (see
// Scope and Writes) and returns Writes' order.
func ScopeWrites(s functions.RecordScope, recs []functions.RecordWrite) ([]int, error) {
	if err := Scope(s); err != nil {
		return nil, err
	}
	return Writes(recs)
}

// IDs checks the ids of a lookup or a deletion (at most max of them when
// max is above 0) and returns them sorted, without repeats. An id that no
// record could have (empty, too long) is kept: it matches nothing.
func IDs(ids []string, max int) ([]string, error) {
	if max > 0 && len(ids) > max {
		return nil, fmt.Errorf("%w: %d record ids in one call, at most %d", store.ErrInvalid, len(ids), max)
	}
	for _, id := range ids {
		if err := Text("record id", id); err != nil {
			return nil, err
		}
	}
	out := slices.Clone(ids)
	slices.Sort(out)
	return slices.Compact(out), nil
}

// Limit checks the limit of a page or of a batch: at least 1.
func Limit(n int) error {
	if n < 1 {
		return fmt.Errorf("%w: limit %d, want at least 1", store.ErrInvalid, n)
	}
	return nil
}

// allFilters are the bits of a functions.RecordFilter.
const allFilters = functions.FilterAdded | functions.FilterUpdated | functions.FilterDeleted

// Query checks a page's query and returns its ids sorted, without repeats
// (nil when it has none). A Filter with bits of no filter is refused.
func Query(q functions.RecordQuery) ([]string, error) {
	if err := Limit(q.Limit); err != nil {
		return nil, err
	}
	if q.AfterSeq < 0 {
		return nil, fmt.Errorf("%w: AfterSeq %d is negative", store.ErrInvalid, q.AfterSeq)
	}
	if q.Filter&^allFilters != 0 {
		return nil, fmt.Errorf("%w: record filter %#x", store.ErrInvalid, uint8(q.Filter))
	}
	if len(q.IDs) == 0 {
		return nil, nil
	}
	return IDs(q.IDs, 0)
}

// Matches reports whether a record whose last action is action (see
// functions.Record.LastAction) passes filter.
func Matches(filter functions.RecordFilter, action string) bool {
	if filter == 0 {
		return true
	}
	switch action {
	case functions.ActionAdded:
		return filter&functions.FilterAdded != 0
	case functions.ActionUpdated:
		return filter&functions.FilterUpdated != 0
	default:
		return filter&functions.FilterDeleted != 0
	}
}
