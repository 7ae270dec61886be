package storetest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/functions"
	"github.com/embedauth/connect/store"
)

var recordTests = []test{
	{"SaveCounts", testRecordSaveCounts},
	{"RoundTrip", testRecordRoundTrip},
	{"ReAddDeleted", testRecordReAddDeleted},
	{"CountsIgnoreTimes", testRecordCountsIgnoreTimes},
	{"PrunedUpdated", testRecordPrunedUpdated},
	{"SeqOrder", testRecordSeqOrder},
	{"ScopesIsolated", testRecordScopesIsolated},
	{"UnknownScope", testRecordUnknownScope},
	{"ListPaging", testRecordListPaging},
	{"ListFilters", testRecordListFilters},
	{"ListModifiedAfter", testRecordListModifiedAfter},
	{"ListIDs", testRecordListIDs},
	{"ListLimit", testRecordListLimit},
	{"Delete", testRecordDelete},
	{"Get", testRecordGet},
	{"Count", testRecordCount},
	{"Prune", testRecordPrune},
	{"DeleteUntouched", testRecordDeleteUntouched},
	{"Unchanged", testRecordUnchanged},
	{"DeleteAll", testRecordDeleteAll},
	{"PruneStale", testRecordPruneStale},
	{"DeleteOrphans", testRecordDeleteOrphans},
	{"Invalid", testRecordInvalid},
	{"Tx", testRecordTx},
	{"Copies", testRecordCopies},
	{"ConcurrentSaves", testRecordConcurrentSaves},
	{"ConcurrentReader", testRecordConcurrentReader},
}

// recordEnv is an environment with a connection whose scopes the record
// tests write.
type recordEnv struct {
	env  *environments.Environment
	conn *connections.Connection
}

func newRecordEnv(t *testing.T, s Store) *recordEnv {
	t.Helper()
	env := newEnv(t, s, "dev")
	newIntegration(t, s, env.ID, "github")
	return &recordEnv{env: env, conn: newConn(t, s, env.ID, "github", "u1", nil)}
}

// scope is the base variant of model for the environment's connection.
func (e *recordEnv) scope(model string) functions.RecordScope {
	return functions.RecordScope{EnvironmentID: e.env.ID, ConnectionID: e.conn.ID, Model: model, Variant: functions.BaseVariant}
}

// rw is the write of record id at version v: its payload depends on both,
// its hash on v alone.
func rw(id, v string) functions.RecordWrite {
	return functions.RecordWrite{ID: id, SealedPayload: "v1:rk:" + id + "@" + v, Hash: "hash-" + v}
}

func saveRecs(t *testing.T, s Store, sc functions.RecordScope, now time.Time, touch int64, recs ...functions.RecordWrite) functions.SaveResult {
	t.Helper()
	res, err := s.SaveRecords(t.Context(), sc, recs, now, touch)
	must(t, err)
	return res
}

func deleteRecs(t *testing.T, s Store, sc functions.RecordScope, now time.Time, ids ...string) functions.SaveResult {
	t.Helper()
	res, err := s.DeleteRecords(t.Context(), sc, ids, now)
	must(t, err)
	return res
}

func listRecs(t *testing.T, s Store, sc functions.RecordScope, q functions.RecordQuery) []*functions.Record {
	t.Helper()
	recs, err := s.ListRecords(t.Context(), sc, q)
	must(t, err)
	for i := 1; i < len(recs); i++ {
		if recs[i].Seq <= recs[i-1].Seq {
			t.Errorf("ListRecords: record %q (Seq %d) after %q (Seq %d)", recs[i].ID, recs[i].Seq, recs[i-1].ID, recs[i-1].Seq)
		}
	}
	return recs
}

// allRecs lists every record of the scope, deleted ones included.
func allRecs(t *testing.T, s Store, sc functions.RecordScope) []*functions.Record {
	t.Helper()
	return listRecs(t, s, sc, functions.RecordQuery{Limit: functions.MaxRecordsPageLimit})
}

func byID(recs []*functions.Record) map[string]*functions.Record {
	m := map[string]*functions.Record{}
	for _, r := range recs {
		m[r.ID] = r
	}
	return m
}

func recIDs(recs []*functions.Record) []string {
	out := []string{}
	for _, r := range recs {
		out = append(out, r.ID)
	}
	return out
}

func maxSeq(recs []*functions.Record) int64 {
	var m int64
	for _, r := range recs {
		m = max(m, r.Seq)
	}
	return m
}

func countRecs(t *testing.T, s Store, sc functions.RecordScope) int {
	t.Helper()
	n, err := s.CountRecords(t.Context(), sc)
	must(t, err)
	return n
}

// wantRecord is the record that a write of w at first, changed at
// updated, holds; Seq is taken from got, which is checked apart.
func wantRecord(w functions.RecordWrite, first, updated time.Time, got *functions.Record) *functions.Record {
	r := &functions.Record{ID: w.ID, SealedPayload: w.SealedPayload, Hash: w.Hash, FirstSeenAt: first, UpdatedAt: updated}
	if got != nil {
		r.Seq = got.Seq
	}
	return r
}

func testRecordSaveCounts(t *testing.T, s Store) {
	e := newRecordEnv(t, s)
	sc := e.scope("Issue")
	res := saveRecs(t, s, sc, at(1), 0, rw("a", "1"), rw("b", "1"), rw("c", "1"))
	diff(t, "first save", functions.SaveResult{Added: 3}, res)
	first := byID(allRecs(t, s, sc))
	for _, id := range []string{"a", "b", "c"} {
		diff(t, "record "+id, wantRecord(rw(id, "1"), at(1), at(1), first[id]), first[id])
		if first[id] == nil || first[id].Seq <= 0 || first[id].LastAction() != functions.ActionAdded {
			t.Errorf("record %s after the first save: %+v", id, first[id])
		}
	}
	before := maxSeq(allRecs(t, s, sc))

	res = saveRecs(t, s, sc, at(2), 0, rw("a", "1"), rw("b", "2"), rw("d", "1"))
	diff(t, "second save (a unchanged, b changed, d new)", functions.SaveResult{Added: 1, Updated: 1}, res)
	got := byID(allRecs(t, s, sc))
	diff(t, "unchanged a", first["a"], got["a"])
	diff(t, "untouched c", first["c"], got["c"])
	diff(t, "updated b", wantRecord(rw("b", "2"), at(1), at(2), got["b"]), got["b"])
	diff(t, "added d", wantRecord(rw("d", "1"), at(2), at(2), got["d"]), got["d"])
	if got["b"].Seq <= before || got["d"].Seq <= before || got["b"].Seq == got["d"].Seq {
		t.Errorf("Seqs after the second save: b %d, d %d; want distinct and above %d", got["b"].Seq, got["d"].Seq, before)
	}
	if a := got["b"].LastAction(); a != functions.ActionUpdated {
		t.Errorf("b's last action is %s, want UPDATED", a)
	}

	// Saving the same records again changes nothing.
	all := allRecs(t, s, sc)
	res = saveRecs(t, s, sc, at(3), 0, rw("a", "1"), rw("b", "2"), rw("c", "1"), rw("d", "1"))
	diff(t, "a save of unchanged records", functions.SaveResult{}, res)
	diff(t, "records after a save of unchanged ones", all, allRecs(t, s, sc))

	// Nothing to save is no error.
	diff(t, "an empty save", functions.SaveResult{}, saveRecs(t, s, sc, at(4), 0))
	diff(t, "a nil save", functions.SaveResult{}, saveRecs(t, s, sc, at(4), 7, []functions.RecordWrite(nil)...))
	if c := countRecs(t, s, sc); c != 4 {
		t.Errorf("CountRecords = %d, want 4", c)
	}
}

// testRecordRoundTrip: ids, payloads and hashes come back verbatim, text
// that an array literal or a query would mangle included; times to the
// microsecond.
func testRecordRoundTrip(t *testing.T, s Store) {
	ctx := t.Context()
	sc := newRecordEnv(t, s).scope("Weird")
	long := strings.Repeat("é", functions.MaxRecordIDLen) // 255 characters, 510 bytes
	writes := []functions.RecordWrite{
		{ID: `"quoted"`, SealedPayload: `v1:rk:{"a":"b\"c\\d","e":[1,2]}`, Hash: `h"1\`},
		{ID: `back\slash`, SealedPayload: `v1:rk:,{}"\\`, Hash: "h,2"},
		{ID: "NULL", SealedPayload: "NULL", Hash: "NULL"},
		{ID: " spaced, {braced} ", SealedPayload: " ", Hash: ""},
		{ID: long, SealedPayload: "v1:rk:" + strings.Repeat("x", 10000), Hash: "h5"},
		{ID: "ünï©ødé 🎉", SealedPayload: "v1:rk:ünï©ødé 🎉", Hash: "h6"},
		{ID: "0", SealedPayload: "", Hash: "h7"},
	}
	now := time.Date(2025, 3, 14, 15, 9, 26, 535897000, time.UTC)
	diff(t, "save", functions.SaveResult{Added: len(writes)}, saveRecs(t, s, sc, now, 0, writes...))
	got := byID(allRecs(t, s, sc))
	ids := []string{}
	for _, w := range writes {
		diff(t, "record "+w.ID, wantRecord(w, now, now, got[w.ID]), got[w.ID])
		ids = append(ids, w.ID)
	}
	recs, err := s.GetRecords(ctx, sc, ids)
	must(t, err)
	diff(t, "GetRecords", len(writes), len(recs))
	for _, r := range recs {
		diff(t, "GetRecords "+r.ID, got[r.ID], r)
	}
	recs = listRecs(t, s, sc, functions.RecordQuery{IDs: []string{long, `back\slash`}, Limit: 10})
	diff(t, "ListRecords by ids", []string{`back\slash`, long}, sorted(recIDs(recs)))
	diff(t, "save again", functions.SaveResult{}, saveRecs(t, s, sc, now, 0, writes...))
}

func sorted(s []string) []string {
	slices.Sort(s)
	return s
}

func testRecordReAddDeleted(t *testing.T, s Store) {
	ctx := t.Context()
	sc := newRecordEnv(t, s).scope("Issue")
	saveRecs(t, s, sc, at(1), 0, rw("a", "1"), rw("b", "1"))
	saved := byID(allRecs(t, s, sc))

	diff(t, "delete a", functions.SaveResult{Deleted: 1}, deleteRecs(t, s, sc, at(2), "a"))
	got := byID(allRecs(t, s, sc))["a"]
	want := wantRecord(rw("a", "1"), at(1), at(2), got)
	want.DeletedAt = timePtr(at(2))
	diff(t, "deleted a (its payload stays)", want, got)
	if got.Seq <= maxSeq(slices.Collect(maps.Values(saved))) {
		t.Errorf("deleted a has Seq %d, not above the scope's others", got.Seq)
	}
	if got.LastAction() != functions.ActionDeleted {
		t.Errorf("a's last action is %s, want DELETED", got.LastAction())
	}
	recs, err := s.GetRecords(ctx, sc, []string{"a", "b"})
	must(t, err)
	diff(t, "GetRecords skips deleted a", []string{"b"}, recIDs(recs))
	diff(t, "count", 1, countRecs(t, s, sc))

	// Saved again with the same hash: added, with fresh times.
	deletedSeq := got.Seq
	diff(t, "save deleted a again", functions.SaveResult{Added: 1}, saveRecs(t, s, sc, at(3), 0, rw("a", "1")))
	got = byID(allRecs(t, s, sc))["a"]
	diff(t, "re-added a", wantRecord(rw("a", "1"), at(3), at(3), got), got)
	if got.Seq <= deletedSeq || got.LastAction() != functions.ActionAdded {
		t.Errorf("re-added a: Seq %d (deleted at %d), last action %s", got.Seq, deletedSeq, got.LastAction())
	}
	diff(t, "count", 2, countRecs(t, s, sc))

	// And with another hash.
	deleteRecs(t, s, sc, at(4), "a")
	diff(t, "save deleted a changed", functions.SaveResult{Added: 1}, saveRecs(t, s, sc, at(5), 0, rw("a", "2")))
	got = byID(allRecs(t, s, sc))["a"]
	diff(t, "re-added a, changed", wantRecord(rw("a", "2"), at(5), at(5), got), got)
}

// testRecordCountsIgnoreTimes: what a save counts depends on the stored
// record, not on times: a record deleted and saved again at the same
// instant is added, one added and changed at the same instant updated.
func testRecordCountsIgnoreTimes(t *testing.T, s Store) {
	sc := newRecordEnv(t, s).scope("Issue")
	diff(t, "add", functions.SaveResult{Added: 1}, saveRecs(t, s, sc, at(1), 0, rw("a", "1")))
	diff(t, "change at the same time", functions.SaveResult{Updated: 1}, saveRecs(t, s, sc, at(1), 0, rw("a", "2")))
	diff(t, "delete at the same time", functions.SaveResult{Deleted: 1}, deleteRecs(t, s, sc, at(1), "a"))
	diff(t, "re-add at the same time", functions.SaveResult{Added: 1}, saveRecs(t, s, sc, at(1), 0, rw("a", "2")))
	diff(t, "change again", functions.SaveResult{Updated: 1}, saveRecs(t, s, sc, at(1), 5, rw("a", "3")))
}

func testRecordPrunedUpdated(t *testing.T, s Store) {
	ctx := t.Context()
	sc := newRecordEnv(t, s).scope("Issue")
	saveRecs(t, s, sc, at(1), 0, rw("a", "1"), rw("b", "1"))
	before := allRecs(t, s, sc)
	n, last, err := s.PruneRecords(ctx, sc, maxSeq(before), 10, at(2))
	must(t, err)
	if n != 2 || last != maxSeq(before) {
		t.Errorf("PruneRecords = %d, %d; want 2, %d", n, last, maxSeq(before))
	}
	a := byID(allRecs(t, s, sc))["a"]
	want := wantRecord(rw("a", "1"), at(1), at(1), a)
	want.SealedPayload, want.PrunedAt = "", timePtr(at(2))
	diff(t, "pruned a", want, a)

	// A pruned record saved with the same hash is updated: its payload is
	// back.
	diff(t, "save pruned a", functions.SaveResult{Updated: 1}, saveRecs(t, s, sc, at(3), 0, rw("a", "1")))
	got := byID(allRecs(t, s, sc))
	diff(t, "a saved after pruning", wantRecord(rw("a", "1"), at(1), at(3), got["a"]), got["a"])
	if got["a"].Seq <= maxSeq(before) {
		t.Errorf("a saved after pruning has Seq %d, not above %d", got["a"].Seq, maxSeq(before))
	}
	if got["b"].PrunedAt == nil {
		t.Error("b lost its pruning")
	}
	// Deleted and pruned, then saved: added.
	deleteRecs(t, s, sc, at(4), "b")
	diff(t, "save deleted, pruned b", functions.SaveResult{Added: 1}, saveRecs(t, s, sc, at(5), 0, rw("b", "1")))
	b := byID(allRecs(t, s, sc))["b"]
	diff(t, "b re-added", wantRecord(rw("b", "1"), at(5), at(5), b), b)
}

// testRecordSeqOrder: every write that adds, changes or deletes a record
// gives it a Seq above every other of its scope; other records keep
// theirs; Seqs are distinct.
func testRecordSeqOrder(t *testing.T, s Store) {
	ctx := t.Context()
	sc := newRecordEnv(t, s).scope("Issue")
	steps := []struct {
		name    string
		op      func() error
		changed []string
	}{
		{"add", func() error {
			_, err := s.SaveRecords(ctx, sc, []functions.RecordWrite{rw("c", "1"), rw("a", "1"), rw("b", "1")}, at(1), 1)
			return err
		}, []string{"a", "b", "c"}},
		{"change b", func() error {
			_, err := s.SaveRecords(ctx, sc, []functions.RecordWrite{rw("a", "1"), rw("b", "2")}, at(2), 0)
			return err
		}, []string{"b"}},
		{"touch a", func() error {
			_, err := s.SaveRecords(ctx, sc, []functions.RecordWrite{rw("a", "1")}, at(3), 2)
			return err
		}, nil},
		{"delete a", func() error {
			_, err := s.DeleteRecords(ctx, sc, []string{"a", "x"}, at(3))
			return err
		}, []string{"a"}},
		{"add d, re-add a", func() error {
			_, err := s.SaveRecords(ctx, sc, []functions.RecordWrite{rw("d", "1"), rw("a", "1")}, at(4), 0)
			return err
		}, []string{"a", "d"}},
		{"prune", func() error {
			_, _, err := s.PruneRecords(ctx, sc, 1<<62, 2, at(5))
			return err
		}, nil},
		{"save pruned", func() error {
			_, err := s.SaveRecords(ctx, sc, []functions.RecordWrite{rw("c", "1"), rw("b", "2"), rw("a", "1")}, at(6), 0)
			return err
		}, []string{"b", "c"}},
		// a was touched at 2 before it was deleted, and a save without
		// a generation keeps it.
		{"delete untouched", func() error {
			_, err := s.DeleteUntouched(ctx, sc, 2, 10, at(7))
			return err
		}, []string{"b", "c", "d"}},
	}
	before := allRecs(t, s, sc)
	for _, st := range steps {
		if err := st.op(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		after := allRecs(t, s, sc)
		old, top := byID(before), maxSeq(before)
		seqs := map[int64]string{}
		for _, r := range after {
			if other, dup := seqs[r.Seq]; dup {
				t.Errorf("%s: %s and %s have Seq %d", st.name, other, r.ID, r.Seq)
			}
			seqs[r.Seq] = r.ID
			switch {
			case slices.Contains(st.changed, r.ID) && r.Seq <= top:
				t.Errorf("%s: %s changed and has Seq %d, not above %d", st.name, r.ID, r.Seq, top)
			case !slices.Contains(st.changed, r.ID) && (old[r.ID] == nil || old[r.ID].Seq != r.Seq):
				t.Errorf("%s: %s did not change and has Seq %d (was %+v)", st.name, r.ID, r.Seq, old[r.ID])
			}
		}
		before = after
	}
}

func testRecordScopesIsolated(t *testing.T, s Store) {
	ctx := t.Context()
	e := newRecordEnv(t, s)
	base := e.scope("Issue")
	u2 := newConn(t, s, e.env.ID, "github", "u2", nil)
	env2 := newEnv(t, s, "prod")
	others := map[string]functions.RecordScope{
		"other connection": {EnvironmentID: e.env.ID, ConnectionID: u2.ID, Model: "Issue", Variant: functions.BaseVariant},
		"other model":      e.scope("Pull"),
		"other variant":    {EnvironmentID: e.env.ID, ConnectionID: e.conn.ID, Model: "Issue", Variant: "v2"},
		"other env":        {EnvironmentID: env2.ID, ConnectionID: e.conn.ID, Model: "Issue", Variant: functions.BaseVariant},
	}
	saveRecs(t, s, base, at(1), 1, rw("a", "1"), rw("b", "1"))
	for name, sc := range others {
		diff(t, "first save in "+name, functions.SaveResult{Added: 2}, saveRecs(t, s, sc, at(2), 1, rw("a", "2"), rw("c", "2")))
	}
	diff(t, "base records", []string{"a", "b"}, sorted(recIDs(allRecs(t, s, base))))
	if h := byID(allRecs(t, s, base))["a"].Hash; h != "hash-1" {
		t.Errorf("base a has hash %q", h)
	}
	deleteRecs(t, s, base, at(3), "a")
	_, _, err := s.PruneRecords(ctx, base, 1<<62, 10, at(3))
	must(t, err)
	_, err = s.DeleteUntouched(ctx, base, 5, 10, at(3))
	must(t, err)
	for name, sc := range others {
		recs := allRecs(t, s, sc)
		diff(t, name+" records", []string{"a", "c"}, sorted(recIDs(recs)))
		for _, r := range recs {
			if r.Hash != "hash-2" || r.DeletedAt != nil || r.PrunedAt != nil {
				t.Errorf("%s: record %s changed by writes of another scope: %+v", name, r.ID, r)
			}
		}
		diff(t, name+" count", 2, countRecs(t, s, sc))
		got, err := s.GetRecords(ctx, sc, []string{"b"})
		must(t, err)
		diff(t, name+": GetRecords of another scope's record", []string{}, recIDs(got))
	}
	n, err := s.DeleteAllRecords(ctx, others["other model"], 10)
	must(t, err)
	diff(t, "DeleteAllRecords", 2, n)
	diff(t, "base after another scope's DeleteAllRecords", []string{"a", "b"}, sorted(recIDs(allRecs(t, s, base))))
	diff(t, "other variant after another scope's DeleteAllRecords", 2, countRecs(t, s, others["other variant"]))
}

// testRecordUnknownScope: a scope nothing was saved in has no records,
// and writes to it are no error.
func testRecordUnknownScope(t *testing.T, s Store) {
	ctx := t.Context()
	sc := newRecordEnv(t, s).scope("Nothing")
	diff(t, "ListRecords", []string{}, recIDs(allRecs(t, s, sc)))
	got, err := s.GetRecords(ctx, sc, []string{"a"})
	must(t, err)
	diff(t, "GetRecords", 0, len(got))
	diff(t, "CountRecords", 0, countRecs(t, s, sc))
	diff(t, "DeleteRecords", functions.SaveResult{}, deleteRecs(t, s, sc, at(1), "a"))
	n, last, err := s.PruneRecords(ctx, sc, 10, 10, at(1))
	must(t, err)
	if n != 0 || last != 0 {
		t.Errorf("PruneRecords = %d, %d", n, last)
	}
	ids, err := s.DeleteUntouched(ctx, sc, 5, 10, at(1))
	must(t, err)
	diff(t, "DeleteUntouched", 0, len(ids))
	k, err := s.DeleteAllRecords(ctx, sc, 10)
	must(t, err)
	diff(t, "DeleteAllRecords", 0, k)
}

func testRecordListPaging(t *testing.T, s Store) {
	sc := newRecordEnv(t, s).scope("Issue")
	for b := range 3 {
		var ws []functions.RecordWrite
		for i := range 4 {
			if n := b*4 + i; n < 10 {
				ws = append(ws, rw(fmt.Sprintf("r%02d", n), "1"))
			}
		}
		saveRecs(t, s, sc, at(b), 0, ws...)
	}
	deleteRecs(t, s, sc, at(5), "r03")
	all := allRecs(t, s, sc)
	diff(t, "records", 10, len(all))
	var paged []*functions.Record
	var cursor int64
	var sizes []int
	for range 10 {
		page := listRecs(t, s, sc, functions.RecordQuery{AfterSeq: cursor, Limit: 3})
		sizes = append(sizes, len(page))
		if len(page) == 0 {
			break
		}
		if page[0].Seq <= cursor {
			t.Errorf("a page after %d starts at %d", cursor, page[0].Seq)
		}
		paged = append(paged, page...)
		cursor = page[len(page)-1].Seq
	}
	diff(t, "page sizes", []int{3, 3, 3, 1, 0}, sizes)
	diff(t, "paged records", all, paged)
	diff(t, "the deleted record is last", "r03", all[len(all)-1].ID)
}

// recordFilterFixture stores records of every last action: a, b and f
// ADDED (f deleted, then saved again), c UPDATED, d and e DELETED (e
// updated first).
func recordFilterFixture(t *testing.T, s Store, sc functions.RecordScope) {
	t.Helper()
	saveRecs(t, s, sc, at(1), 0, rw("a", "1"), rw("b", "1"), rw("c", "1"), rw("d", "1"), rw("e", "1"), rw("f", "1"))
	saveRecs(t, s, sc, at(2), 0, rw("c", "2"), rw("e", "2"))
	deleteRecs(t, s, sc, at(2), "f")
	deleteRecs(t, s, sc, at(3), "d", "e")
	saveRecs(t, s, sc, at(3), 0, rw("f", "1"))
}

func testRecordListFilters(t *testing.T, s Store) {
	ctx := t.Context()
	sc := newRecordEnv(t, s).scope("Issue")
	recordFilterFixture(t, s, sc)
	all := allRecs(t, s, sc)
	actions := map[string]string{}
	for _, r := range all {
		actions[r.ID] = r.LastAction()
	}
	diff(t, "last actions", map[string]string{"a": "ADDED", "b": "ADDED", "c": "UPDATED", "d": "DELETED", "e": "DELETED", "f": "ADDED"}, actions)
	const (
		A = functions.FilterAdded
		U = functions.FilterUpdated
		D = functions.FilterDeleted
	)
	for f, want := range map[functions.RecordFilter][]string{
		0:         {"a", "b", "c", "d", "e", "f"},
		A:         {"a", "b", "f"},
		U:         {"c"},
		D:         {"d", "e"},
		A | U:     {"a", "b", "c", "f"},
		A | D:     {"a", "b", "d", "e", "f"},
		U | D:     {"c", "d", "e"},
		A | U | D: {"a", "b", "c", "d", "e", "f"},
	} {
		got := listRecs(t, s, sc, functions.RecordQuery{Filter: f, Limit: 100})
		diff(t, fmt.Sprintf("filter %03b", f), want, sorted(recIDs(got)))
		// Paged one at a time, the filter holds on every page.
		var paged []string
		var cursor int64
		for range 10 {
			page := listRecs(t, s, sc, functions.RecordQuery{Filter: f, AfterSeq: cursor, Limit: 1})
			if len(page) == 0 {
				break
			}
			paged, cursor = append(paged, page[0].ID), page[0].Seq
		}
		diff(t, fmt.Sprintf("filter %03b, paged", f), recIDs(got), paged)
	}
	_, err := s.ListRecords(ctx, sc, functions.RecordQuery{Filter: 1 << 3, Limit: 10})
	wantErr(t, "ListRecords with an unknown filter bit", err, store.ErrInvalid)
}

func testRecordListModifiedAfter(t *testing.T, s Store) {
	sc := newRecordEnv(t, s).scope("Issue")
	saveRecs(t, s, sc, at(1), 0, rw("a", "1"))
	saveRecs(t, s, sc, at(2), 0, rw("b", "1"))
	saveRecs(t, s, sc, at(3), 0, rw("c", "1"))
	q := func(after time.Time, f functions.RecordFilter, seq int64) []string {
		t.Helper()
		return recIDs(listRecs(t, s, sc, functions.RecordQuery{ModifiedAfter: &after, Filter: f, AfterSeq: seq, Limit: 100}))
	}
	diff(t, "modified at or after 2", []string{"b", "c"}, q(at(2), 0, 0))
	diff(t, "modified after 2 plus a microsecond", []string{"c"}, q(at(2).Add(time.Microsecond), 0, 0))
	diff(t, "modified after 4", []string{}, q(at(4), 0, 0))
	deleteRecs(t, s, sc, at(5), "a")
	diff(t, "modified after 4, a deleted at 5", []string{"a"}, q(at(4), 0, 0))
	diff(t, "modified after 4, added", []string{}, q(at(4), functions.FilterAdded, 0))
	diff(t, "modified after 2, deleted", []string{"a"}, q(at(2), functions.FilterDeleted, 0))
	bSeq := byID(allRecs(t, s, sc))["b"].Seq
	diff(t, "modified after 2, after b's Seq", []string{"c", "a"}, q(at(2), 0, bSeq))
}

func testRecordListIDs(t *testing.T, s Store) {
	sc := newRecordEnv(t, s).scope("Issue")
	saveRecs(t, s, sc, at(1), 0, rw("a", "1"), rw("b", "1"), rw("c", "1"), rw("d", "1"), rw("e", "1"))
	deleteRecs(t, s, sc, at(2), "b")
	all := byID(allRecs(t, s, sc))
	q := func(q functions.RecordQuery) []string {
		t.Helper()
		q.Limit = max(q.Limit, 1)
		return recIDs(listRecs(t, s, sc, q))
	}
	ids := []string{"b", "d", "zz", "d", ""}
	diff(t, "by ids (the deleted one included, in Seq order)", []string{"d", "b"}, q(functions.RecordQuery{IDs: ids, Limit: 10}))
	diff(t, "by ids, added", []string{"d"}, q(functions.RecordQuery{IDs: ids, Filter: functions.FilterAdded, Limit: 10}))
	diff(t, "by ids, deleted", []string{"b"}, q(functions.RecordQuery{IDs: ids, Filter: functions.FilterDeleted, Limit: 10}))
	diff(t, "by ids, after d's Seq", []string{"b"}, q(functions.RecordQuery{IDs: ids, AfterSeq: all["d"].Seq, Limit: 10}))
	diff(t, "by ids, limit 1", []string{"d"}, q(functions.RecordQuery{IDs: ids, Limit: 1}))
	diff(t, "by unknown ids", []string{}, q(functions.RecordQuery{IDs: []string{"x", "y"}, Limit: 10}))
	diff(t, "by empty ids (no filter)", 5, len(q(functions.RecordQuery{IDs: []string{}, Limit: 10})))
}

func testRecordListLimit(t *testing.T, s Store) {
	ctx := t.Context()
	sc := newRecordEnv(t, s).scope("Issue")
	saveRecs(t, s, sc, at(1), 0, rw("a", "1"), rw("b", "1"), rw("c", "1"))
	all := allRecs(t, s, sc)
	diff(t, "limit 1", all[:1], listRecs(t, s, sc, functions.RecordQuery{Limit: 1}))
	diff(t, "limit 2", all[:2], listRecs(t, s, sc, functions.RecordQuery{Limit: 2}))
	// A page one larger than the largest (to tell whether more follow) is
	// allowed.
	diff(t, "limit above the largest page", all, listRecs(t, s, sc, functions.RecordQuery{Limit: functions.MaxRecordsPageLimit + 1}))
	for _, q := range []functions.RecordQuery{{Limit: 0}, {Limit: -1}, {AfterSeq: -1, Limit: 10}} {
		_, err := s.ListRecords(ctx, sc, q)
		wantErr(t, fmt.Sprintf("ListRecords(%+v)", q), err, store.ErrInvalid)
	}
}

func testRecordDelete(t *testing.T, s Store) {
	sc := newRecordEnv(t, s).scope("Issue")
	saveRecs(t, s, sc, at(1), 0, rw("a", "1"), rw("b", "1"), rw("c", "1"))
	diff(t, "delete a, an unknown id, a again and an empty id", functions.SaveResult{Deleted: 1},
		deleteRecs(t, s, sc, at(2), "a", "zz", "a", ""))
	afterFirst := byID(allRecs(t, s, sc))
	diff(t, "delete a (deleted already) and b", functions.SaveResult{Deleted: 1}, deleteRecs(t, s, sc, at(3), "a", "b"))
	got := byID(allRecs(t, s, sc))
	diff(t, "a, deleted before", afterFirst["a"], got["a"])
	want := wantRecord(rw("b", "1"), at(1), at(3), got["b"])
	want.DeletedAt = timePtr(at(3))
	diff(t, "b", want, got["b"])
	if got["b"].Seq <= maxSeq(slices.Collect(maps.Values(afterFirst))) {
		t.Errorf("b has Seq %d, not above the others", got["b"].Seq)
	}
	diff(t, "c", wantRecord(rw("c", "1"), at(1), at(1), got["c"]), got["c"])
	diff(t, "delete nothing", functions.SaveResult{}, deleteRecs(t, s, sc, at(4)))
	diff(t, "records after deleting nothing", got, byID(allRecs(t, s, sc)))
}

func testRecordGet(t *testing.T, s Store) {
	ctx := t.Context()
	sc := newRecordEnv(t, s).scope("Issue")
	saveRecs(t, s, sc, at(1), 0, rw("a", "1"), rw("b", "1"), rw("c", "1"))
	deleteRecs(t, s, sc, at(2), "b")
	c := byID(allRecs(t, s, sc))["c"]
	_, _, err := s.PruneRecords(ctx, sc, c.Seq, 10, at(3))
	must(t, err)
	all := byID(allRecs(t, s, sc))
	recs, err := s.GetRecords(ctx, sc, []string{"c", "b", "zz", "a", "c"})
	must(t, err)
	slices.SortFunc(recs, func(x, y *functions.Record) int { return strings.Compare(x.ID, y.ID) })
	diff(t, "GetRecords (b deleted, c pruned)", []*functions.Record{all["a"], all["c"]}, recs)
	if recs[1].SealedPayload != "" || recs[1].PrunedAt == nil {
		t.Errorf("pruned c: %+v", recs[1])
	}
	recs, err = s.GetRecords(ctx, sc, nil)
	must(t, err)
	diff(t, "GetRecords of no id", 0, len(recs))
}

func testRecordCount(t *testing.T, s Store) {
	ctx := t.Context()
	sc := newRecordEnv(t, s).scope("Issue")
	saveRecs(t, s, sc, at(1), 0, rw("a", "1"), rw("b", "1"), rw("c", "1"))
	diff(t, "count", 3, countRecs(t, s, sc))
	deleteRecs(t, s, sc, at(2), "b")
	diff(t, "count after a deletion", 2, countRecs(t, s, sc))
	_, _, err := s.PruneRecords(ctx, sc, 1<<62, 10, at(3))
	must(t, err)
	diff(t, "count after pruning", 2, countRecs(t, s, sc))
	saveRecs(t, s, sc, at(4), 0, rw("b", "1"))
	diff(t, "count after re-adding", 3, countRecs(t, s, sc))
}

func testRecordPrune(t *testing.T, s Store) {
	ctx := t.Context()
	sc := newRecordEnv(t, s).scope("Issue")
	for i, id := range []string{"a", "b", "c", "d", "e"} {
		saveRecs(t, s, sc, at(i), 0, rw(id, "1"))
	}
	deleteRecs(t, s, sc, at(6), "e")
	before := byID(allRecs(t, s, sc))
	seq := func(id string) int64 { return before[id].Seq }
	prune := func(until int64, limit int, wantN int, wantLast int64) {
		t.Helper()
		n, last, err := s.PruneRecords(ctx, sc, until, limit, at(10))
		must(t, err)
		if n != wantN || last != wantLast {
			t.Errorf("PruneRecords(until %d, limit %d) = %d, %d; want %d, %d", until, limit, n, last, wantN, wantLast)
		}
	}
	prune(seq("c"), 2, 2, seq("b"))
	got := byID(allRecs(t, s, sc))
	for _, id := range []string{"a", "b"} {
		want := *before[id]
		want.SealedPayload, want.PrunedAt = "", timePtr(at(10))
		diff(t, "pruned "+id+" (UpdatedAt and Seq unchanged)", &want, got[id])
	}
	diff(t, "c, not pruned yet", before["c"], got["c"])
	prune(seq("c"), 10, 1, seq("c"))
	prune(seq("c"), 10, 0, 0)
	// Up to the deleted e: d and e.
	prune(seq("e"), 10, 2, seq("e"))
	prune(1<<62, 10, 0, 0)
	for _, r := range allRecs(t, s, sc) {
		if r.SealedPayload != "" || r.PrunedAt == nil || !r.PrunedAt.Equal(at(10)) {
			t.Errorf("record %s after pruning everything: %+v", r.ID, r)
		}
	}
	diff(t, "count after pruning", 4, countRecs(t, s, sc))
	_, _, err := s.PruneRecords(ctx, sc, 1<<62, 0, at(11))
	wantErr(t, "PruneRecords with limit 0", err, store.ErrInvalid)
}

func testRecordDeleteUntouched(t *testing.T, s Store) {
	ctx := t.Context()
	sc := newRecordEnv(t, s).scope("Issue")
	untouched := func(since int64, limit int, now time.Time) []string {
		t.Helper()
		ids, err := s.DeleteUntouched(ctx, sc, since, limit, now)
		must(t, err)
		return sorted(ids)
	}
	diff(t, "save at generation 1", functions.SaveResult{Added: 3}, saveRecs(t, s, sc, at(1), 1, rw("a", "1"), rw("b", "1"), rw("c", "1")))
	before := allRecs(t, s, sc)
	// Touching unchanged records changes neither their Seq nor UpdatedAt.
	diff(t, "touch a and b at generation 2", functions.SaveResult{}, saveRecs(t, s, sc, at(2), 2, rw("a", "1"), rw("b", "1")))
	diff(t, "records after touching", before, allRecs(t, s, sc))

	diff(t, "untouched since 2", []string{"c"}, untouched(2, 10, at(3)))
	c := byID(allRecs(t, s, sc))["c"]
	want := wantRecord(rw("c", "1"), at(1), at(3), c)
	want.DeletedAt = timePtr(at(3))
	diff(t, "c, deleted as untouched", want, c)
	if c.Seq <= maxSeq(before) {
		t.Errorf("c has Seq %d, not above %d", c.Seq, maxSeq(before))
	}
	diff(t, "untouched since 2, again", []string{}, untouched(2, 10, at(4)))
	diff(t, "untouched since 1", []string{}, untouched(1, 10, at(4)))

	// A save without a generation keeps the record's.
	diff(t, "change b without a generation", functions.SaveResult{Updated: 1}, saveRecs(t, s, sc, at(5), 0, rw("b", "2")))
	diff(t, "untouched since 2 after that", []string{}, untouched(2, 10, at(5)))

	// New records saved without a generation were never touched; the
	// limit applies.
	saveRecs(t, s, sc, at(6), 0, rw("d", "1"), rw("e", "1"), rw("f", "1"))
	first := untouched(1, 2, at(7))
	diff(t, "untouched since 1, limit 2", 2, len(first))
	diff(t, "untouched since 1, the rest", 1, len(untouched(1, 2, at(7))))
	diff(t, "untouched since 1, none left", []string{}, untouched(1, 2, at(7)))
	diff(t, "count", 2, countRecs(t, s, sc))

	// A record saved again (added) at generation 3 is touched.
	diff(t, "re-add c at generation 3", functions.SaveResult{Added: 1}, saveRecs(t, s, sc, at(8), 3, rw("c", "1")))
	diff(t, "untouched since 3", []string{"a", "b"}, untouched(3, 10, at(9)))
	diff(t, "count", 1, countRecs(t, s, sc))
	_, err := s.DeleteUntouched(ctx, sc, 3, 0, at(10))
	wantErr(t, "DeleteUntouched with limit 0", err, store.ErrInvalid)
}

// testRecordUnchanged: UnchangedRecords selects the records a save would
// leave unchanged (same hash, neither deleted nor pruned), writes nothing
// without a generation, and with one touches them as a save would.
func testRecordUnchanged(t *testing.T, s Store) {
	ctx := t.Context()
	e := newRecordEnv(t, s)
	sc := e.scope("Issue")
	unchanged := func(touch int64, recs ...functions.RecordWrite) []string {
		t.Helper()
		ids, err := s.UnchangedRecords(ctx, sc, recs, touch)
		must(t, err)
		return sorted(ids)
	}
	diff(t, "a scope without records", []string{}, unchanged(0, rw("a", "1")))
	diff(t, "a scope without records, touching", []string{}, unchanged(3, rw("a", "1")))
	diff(t, "the scope is still empty", []string{}, recIDs(allRecs(t, s, sc)))

	saveRecs(t, s, sc, at(1), 0, rw("p", "1"))
	saveRecs(t, s, sc, at(2), 1, rw("a", "1"), rw("b", "1"), rw("c", "1"), rw("d", "1"))
	if n, _, err := s.PruneRecords(ctx, sc, 1<<62, 1, at(3)); err != nil || n != 1 {
		t.Fatalf("PruneRecords: %d, %v; want p pruned", n, err)
	}
	deleteRecs(t, s, sc, at(4), "c")
	before := allRecs(t, s, sc)
	// a is the same; b changed; c is deleted; p is pruned; x is new. The
	// hashes are compared per record: d's stored hash is x's new one.
	got := unchanged(0, rw("x", "1"), rw("p", "1"), rw("c", "1"), rw("b", "2"), rw("a", "1"), functions.RecordWrite{ID: "d", Hash: "hash-2"})
	diff(t, "unchanged", []string{"a"}, got)
	diff(t, "records after asking", before, allRecs(t, s, sc))
	diff(t, "no records given", []string{}, unchanged(0))

	// With a generation, the unchanged ones are touched: DeleteUntouched
	// spares them; Seqs and times do not change.
	diff(t, "unchanged, touching at 2", []string{"a", "d"}, unchanged(2, rw("a", "1"), rw("d", "1"), rw("b", "2")))
	diff(t, "unchanged, touching at 2 again", []string{"a", "d"}, unchanged(2, rw("a", "1"), rw("d", "1")))
	diff(t, "records after touching", before, allRecs(t, s, sc))
	ids, err := s.DeleteUntouched(ctx, sc, 2, 10, at(5))
	must(t, err)
	diff(t, "untouched since 2", []string{"b", "p"}, sorted(ids))

	// Other scopes are not looked at.
	other := e.scope("Pull")
	ids, err = s.UnchangedRecords(ctx, other, []functions.RecordWrite{rw("a", "1")}, 0)
	must(t, err)
	diff(t, "another scope", []string{}, ids)
}

func testRecordDeleteAll(t *testing.T, s Store) {
	ctx := t.Context()
	e := newRecordEnv(t, s)
	sc, other := e.scope("Issue"), e.scope("Pull")
	saveRecs(t, s, sc, at(1), 0, rw("a", "1"), rw("b", "1"), rw("c", "1"), rw("d", "1"), rw("e", "1"))
	deleteRecs(t, s, sc, at(2), "e")
	saveRecs(t, s, other, at(1), 0, rw("a", "1"), rw("b", "1"))
	top := maxSeq(allRecs(t, s, sc))
	var ns []int
	for range 6 {
		n, err := s.DeleteAllRecords(ctx, sc, 2)
		must(t, err)
		if ns = append(ns, n); n == 0 {
			break
		}
	}
	diff(t, "DeleteAllRecords chunks", []int{2, 2, 1, 0}, ns)
	diff(t, "records left", []string{}, recIDs(allRecs(t, s, sc)))
	diff(t, "count", 0, countRecs(t, s, sc))
	diff(t, "the other scope's records", []string{"a", "b"}, sorted(recIDs(allRecs(t, s, other))))
	// Seqs do not go back: a reader's cursor from before stays valid.
	diff(t, "save after deleting all", functions.SaveResult{Added: 1}, saveRecs(t, s, sc, at(3), 0, rw("a", "1")))
	if a := allRecs(t, s, sc)[0]; a.Seq <= top {
		t.Errorf("a saved after DeleteAllRecords has Seq %d, not above %d", a.Seq, top)
	}
	_, err := s.DeleteAllRecords(ctx, sc, 0)
	wantErr(t, "DeleteAllRecords with limit 0", err, store.ErrInvalid)
}

func testRecordPruneStale(t *testing.T, s Store) {
	ctx := t.Context()
	e := newRecordEnv(t, s)
	sc := e.scope("Issue")
	other := functions.RecordScope{EnvironmentID: e.env.ID, ConnectionID: newConn(t, s, e.env.ID, "github", "u2", nil).ID,
		Model: "Issue", Variant: "v2"}
	saveRecs(t, s, sc, at(1), 0, rw("a", "1"), rw("d", "1"))
	saveRecs(t, s, sc, at(2), 0, rw("b", "1"))
	saveRecs(t, s, sc, at(3), 0, rw("c", "1"))
	deleteRecs(t, s, sc, at(2), "d")
	saveRecs(t, s, other, at(1), 0, rw("x", "1"))
	saveRecs(t, s, other, at(3), 0, rw("y", "1"))
	before := map[string]*functions.Record{}
	for id, r := range byID(allRecs(t, s, sc)) {
		before["sc/"+id] = r
	}
	for id, r := range byID(allRecs(t, s, other)) {
		before["other/"+id] = r
	}
	pruned := func() []string {
		var out []string
		for _, p := range []struct {
			name string
			sc   functions.RecordScope
		}{{"sc", sc}, {"other", other}} {
			for _, r := range allRecs(t, s, p.sc) {
				if r.PrunedAt != nil {
					out = append(out, p.name+"/"+r.ID)
				}
			}
		}
		return sorted(out)
	}
	stale := func(limit, want int) {
		t.Helper()
		n, err := s.PruneStaleRecords(ctx, at(3), limit, at(10))
		must(t, err)
		if n != want {
			t.Errorf("PruneStaleRecords(limit %d) = %d, want %d", limit, n, want)
		}
	}
	// The least recently updated first.
	stale(2, 2)
	diff(t, "pruned first", []string{"other/x", "sc/a"}, pruned())
	stale(10, 2)
	diff(t, "pruned next (the deleted d included)", []string{"other/x", "sc/a", "sc/b", "sc/d"}, pruned())
	stale(10, 0)
	for _, scope := range []functions.RecordScope{sc, other} {
		for _, r := range allRecs(t, s, scope) {
			key := "sc/" + r.ID
			if scope == other {
				key = "other/" + r.ID
			}
			want := *before[key]
			if slices.Contains(pruned(), key) {
				want.SealedPayload, want.PrunedAt = "", timePtr(at(10))
			}
			diff(t, "record "+key, &want, r)
		}
	}
	diff(t, "save pruned a", functions.SaveResult{Updated: 1}, saveRecs(t, s, sc, at(11), 0, rw("a", "1")))
	_, err := s.PruneStaleRecords(ctx, at(3), 0, at(12))
	wantErr(t, "PruneStaleRecords with limit 0", err, store.ErrInvalid)
}

func testRecordDeleteOrphans(t *testing.T, s Store) {
	ctx := t.Context()
	e := newRecordEnv(t, s)
	u2 := newConn(t, s, e.env.ID, "github", "u2", nil)
	u3 := newConn(t, s, e.env.ID, "github", "u3", nil)
	kept := functions.RecordScope{EnvironmentID: e.env.ID, ConnectionID: u2.ID, Model: "Issue", Variant: functions.BaseVariant}
	emptied := functions.RecordScope{EnvironmentID: e.env.ID, ConnectionID: u3.ID, Model: "Issue", Variant: functions.BaseVariant}
	saveRecs(t, s, e.scope("Issue"), at(1), 0, rw("a", "1"), rw("b", "1"), rw("c", "1"))
	saveRecs(t, s, e.scope("Pull"), at(1), 0, rw("a", "1"), rw("b", "1"))
	deleteRecs(t, s, e.scope("Pull"), at(2), "b")
	saveRecs(t, s, kept, at(1), 0, rw("a", "1"))
	saveRecs(t, s, emptied, at(1), 0, rw("a", "1"))
	// A scope names a connection row and its environment: the row of
	// another environment is not its connection.
	env2 := newEnv(t, s, "prod")
	mismatched := functions.RecordScope{EnvironmentID: env2.ID, ConnectionID: u2.ID, Model: "Issue", Variant: functions.BaseVariant}
	saveRecs(t, s, mismatched, at(1), 0, rw("a", "1"))
	_, err := s.DeleteAllRecords(ctx, emptied, 10)
	must(t, err)

	n, err := s.DeleteOrphanRecords(ctx, 10)
	must(t, err)
	diff(t, "orphans while every connection exists (but the one of another environment)", 1, n)
	diff(t, "records of a connection of another environment", []string{}, recIDs(allRecs(t, s, mismatched)))
	must(t, s.DeleteConnection(ctx, e.env.ID, "github", "u1"))
	must(t, s.DeleteConnection(ctx, e.env.ID, "github", "u3"))
	diff(t, "records stay until the sweep", 3, countRecs(t, s, e.scope("Issue")))
	var ns []int
	for range 10 {
		n, err := s.DeleteOrphanRecords(ctx, 2)
		must(t, err)
		if ns = append(ns, n); n == 0 {
			break
		}
	}
	diff(t, "DeleteOrphanRecords chunks", []int{2, 2, 1, 0}, ns)
	diff(t, "the orphans' records", []string{}, recIDs(allRecs(t, s, e.scope("Issue"))))
	diff(t, "the orphans' records (Pull)", []string{}, recIDs(allRecs(t, s, e.scope("Pull"))))
	diff(t, "another connection's records", []string{"a"}, recIDs(allRecs(t, s, kept)))

	// The connection created again under the same id is another row, with
	// no records.
	again := newConn(t, s, e.env.ID, "github", "u1", nil)
	if again.ID == e.conn.ID {
		t.Fatalf("the connection created again has the deleted one's row id %d", again.ID)
	}
	sc := functions.RecordScope{EnvironmentID: e.env.ID, ConnectionID: again.ID, Model: "Issue", Variant: functions.BaseVariant}
	diff(t, "records of the connection created again", []string{}, recIDs(allRecs(t, s, sc)))
	diff(t, "save in it", functions.SaveResult{Added: 1}, saveRecs(t, s, sc, at(3), 0, rw("a", "1")))
	n, err = s.DeleteOrphanRecords(ctx, 10)
	must(t, err)
	diff(t, "orphans after the sweep", 0, n)
	diff(t, "count of the connection created again", 1, countRecs(t, s, sc))
	_, err = s.DeleteOrphanRecords(ctx, 0)
	wantErr(t, "DeleteOrphanRecords with limit 0", err, store.ErrInvalid)
}

func testRecordInvalid(t *testing.T, s Store) {
	ctx := t.Context()
	e := newRecordEnv(t, s)
	sc := e.scope("Issue")
	saveRecs(t, s, sc, at(1), 0, rw("a", "1"))
	before := allRecs(t, s, sc)
	badScopes := map[string]functions.RecordScope{
		"no connection": {EnvironmentID: e.env.ID, Model: "Issue", Variant: functions.BaseVariant},
		"no model":      {EnvironmentID: e.env.ID, ConnectionID: e.conn.ID, Variant: functions.BaseVariant},
		"no variant":    {EnvironmentID: e.env.ID, ConnectionID: e.conn.ID, Model: "Issue"},
	}
	for _, bad := range unstorable {
		badScopes["model "+bad] = functions.RecordScope{EnvironmentID: e.env.ID, ConnectionID: e.conn.ID, Model: bad, Variant: functions.BaseVariant}
		badScopes["variant "+bad] = functions.RecordScope{EnvironmentID: e.env.ID, ConnectionID: e.conn.ID, Model: "Issue", Variant: bad}
	}
	for name, bad := range badScopes {
		_, err := s.SaveRecords(ctx, bad, []functions.RecordWrite{rw("b", "1")}, at(2), 0)
		wantErr(t, "SaveRecords, "+name, err, store.ErrInvalid)
		_, err = s.DeleteRecords(ctx, bad, []string{"a"}, at(2))
		wantErr(t, "DeleteRecords, "+name, err, store.ErrInvalid)
		_, err = s.GetRecords(ctx, bad, []string{"a"})
		wantErr(t, "GetRecords, "+name, err, store.ErrInvalid)
		_, err = s.ListRecords(ctx, bad, functions.RecordQuery{Limit: 10})
		wantErr(t, "ListRecords, "+name, err, store.ErrInvalid)
		_, err = s.CountRecords(ctx, bad)
		wantErr(t, "CountRecords, "+name, err, store.ErrInvalid)
		_, _, err = s.PruneRecords(ctx, bad, 10, 10, at(2))
		wantErr(t, "PruneRecords, "+name, err, store.ErrInvalid)
		_, err = s.DeleteUntouched(ctx, bad, 1, 10, at(2))
		wantErr(t, "DeleteUntouched, "+name, err, store.ErrInvalid)
		_, err = s.DeleteAllRecords(ctx, bad, 10)
		wantErr(t, "DeleteAllRecords, "+name, err, store.ErrInvalid)
		_, err = s.UnchangedRecords(ctx, bad, []functions.RecordWrite{rw("a", "1")}, 0)
		wantErr(t, "UnchangedRecords, "+name, err, store.ErrInvalid)
	}
	badWrites := map[string][]functions.RecordWrite{
		"an empty id":          {rw("b", "1"), rw("", "1")},
		"an id too long":       {rw(strings.Repeat("é", functions.MaxRecordIDLen+1), "1")},
		"an id given twice":    {rw("b", "1"), rw("c", "1"), rw("b", "2")},
		"too many records":     make([]functions.RecordWrite, functions.MaxRecordsPerBatch+1),
		"a stored id, changed": {rw("a", "2"), rw("a", "3")},
	}
	for i := range badWrites["too many records"] {
		badWrites["too many records"][i] = rw(fmt.Sprintf("n%04d", i), "1")
	}
	for _, bad := range unstorable {
		badWrites["id "+bad] = []functions.RecordWrite{rw("b", "1"), rw(bad, "1")}
		badWrites["payload "+bad] = []functions.RecordWrite{rw("b", "1"), {ID: "c", SealedPayload: bad, Hash: "h"}}
		badWrites["hash "+bad] = []functions.RecordWrite{{ID: "c", SealedPayload: "p", Hash: bad}, rw("b", "1")}
	}
	for name, recs := range badWrites {
		_, err := s.SaveRecords(ctx, sc, recs, at(2), 0)
		wantErr(t, "SaveRecords with "+name, err, store.ErrInvalid)
		_, err = s.UnchangedRecords(ctx, sc, recs, 2)
		wantErr(t, "UnchangedRecords with "+name, err, store.ErrInvalid)
	}
	tooMany := make([]string, functions.MaxRecordsPerBatch+1)
	for i := range tooMany {
		tooMany[i] = fmt.Sprintf("n%04d", i)
	}
	tooMany[0] = "a"
	_, err := s.DeleteRecords(ctx, sc, tooMany, at(2))
	wantErr(t, "DeleteRecords of too many ids", err, store.ErrInvalid)
	for _, bad := range unstorable {
		_, err := s.DeleteRecords(ctx, sc, []string{"a", bad}, at(2))
		wantErr(t, "DeleteRecords of "+bad, err, store.ErrInvalid)
		_, err = s.GetRecords(ctx, sc, []string{"a", bad})
		wantErr(t, "GetRecords of "+bad, err, store.ErrInvalid)
		_, err = s.ListRecords(ctx, sc, functions.RecordQuery{IDs: []string{"a", bad}, Limit: 10})
		wantErr(t, "ListRecords of "+bad, err, store.ErrInvalid)
	}
	diff(t, "records after refused calls", before, allRecs(t, s, sc))

	// The longest id is fine.
	long := strings.Repeat("é", functions.MaxRecordIDLen)
	diff(t, "save the longest id", functions.SaveResult{Added: 1}, saveRecs(t, s, sc, at(3), 0, rw(long, "1")))
	diff(t, "records", []string{"a", long}, recIDs(allRecs(t, s, sc)))
}

func testRecordTx(t *testing.T, s Store) {
	ctx := t.Context()
	sc := newRecordEnv(t, s).scope("Issue")
	saveRecs(t, s, sc, at(1), 0, rw("x", "1"), rw("y", "1"))
	before := allRecs(t, s, sc)

	// Every kind of write, rolled back.
	err := s.WithTx(ctx, func(ctx context.Context) error {
		if _, err := s.SaveRecords(ctx, sc, []functions.RecordWrite{rw("a", "1"), rw("x", "2")}, at(2), 1); err != nil {
			return err
		}
		if recs, err := s.ListRecords(ctx, sc, functions.RecordQuery{Limit: 10}); err != nil || len(recs) != 3 {
			return fmt.Errorf("the transaction reads %d records, %v; want its own write", len(recs), err)
		}
		if _, err := s.DeleteRecords(ctx, sc, []string{"y"}, at(2)); err != nil {
			return err
		}
		if _, _, err := s.PruneRecords(ctx, sc, 1<<62, 10, at(2)); err != nil {
			return err
		}
		if _, err := s.PruneStaleRecords(ctx, at(5), 10, at(2)); err != nil {
			return err
		}
		if _, err := s.DeleteUntouched(ctx, sc, 5, 10, at(2)); err != nil {
			return err
		}
		if _, err := s.DeleteAllRecords(ctx, sc, 10); err != nil {
			return err
		}
		return errRollback
	})
	wantErr(t, "WithTx", err, errRollback)
	diff(t, "records after a rollback", before, allRecs(t, s, sc))

	// A failing write rolls back the transaction's earlier ones.
	err = s.WithTx(ctx, func(ctx context.Context) error {
		if _, err := s.SaveRecords(ctx, sc, []functions.RecordWrite{rw("a", "1")}, at(3), 0); err != nil {
			return err
		}
		_, err := s.SaveRecords(ctx, sc, []functions.RecordWrite{rw("b", "1"), rw("b", "2")}, at(3), 0)
		return err
	})
	wantErr(t, "WithTx with a failing save", err, store.ErrInvalid)
	diff(t, "records after a failed transaction", before, allRecs(t, s, sc))

	// A refused write leaves the transaction usable.
	err = s.WithTx(ctx, func(ctx context.Context) error {
		if _, err := s.SaveRecords(ctx, sc, []functions.RecordWrite{rw("a", "1")}, at(4), 0); err != nil {
			return err
		}
		_, err := s.SaveRecords(ctx, sc, []functions.RecordWrite{rw("b", "1"), rw("b", "2")}, at(4), 0)
		if !errors.Is(err, store.ErrInvalid) {
			return fmt.Errorf("save of an id given twice: %v, want ErrInvalid", err)
		}
		_, err = s.SaveRecords(ctx, sc, []functions.RecordWrite{rw("c", "1")}, at(4), 0)
		return err
	})
	must(t, err)
	diff(t, "records after a transaction with a refused write", []string{"a", "c", "x", "y"}, sorted(recIDs(allRecs(t, s, sc))))
}

func testRecordCopies(t *testing.T, s Store) {
	ctx := t.Context()
	sc := newRecordEnv(t, s).scope("Issue")
	w := []functions.RecordWrite{rw("a", "1"), rw("b", "1")}
	saveRecs(t, s, sc, at(1), 0, w...)
	w[0].Hash = "changed"
	deleteRecs(t, s, sc, at(2), "b")
	_, _, err := s.PruneRecords(ctx, sc, 1<<62, 10, at(3))
	must(t, err)
	want := allRecs(t, s, sc)
	got := allRecs(t, s, sc)
	for _, r := range got {
		r.SealedPayload, r.Hash, r.Seq = "x", "y", 99
		*r.PrunedAt = at(100)
		if r.DeletedAt != nil {
			*r.DeletedAt = at(100)
		}
	}
	ids := []string{"b", "a"}
	recs, err := s.GetRecords(ctx, sc, ids)
	must(t, err)
	for _, r := range recs {
		r.ID = "z"
		*r.PrunedAt = at(200)
	}
	diff(t, "ids passed to GetRecords", []string{"b", "a"}, ids)
	diff(t, "records after changing returned copies", want, allRecs(t, s, sc))
}

// testRecordConcurrentSaves: saves of one scope from several goroutines,
// some of the same records, are serialised: every count is right and
// every Seq distinct.
func testRecordConcurrentSaves(t *testing.T, s Store) {
	ctx := t.Context()
	sc := newRecordEnv(t, s).scope("Issue")
	results := make([]functions.SaveResult, writers)
	errs := race(func(i int) error {
		var ws []functions.RecordWrite
		for k := range 10 {
			ws = append(ws, rw(fmt.Sprintf("shared-%d", k), fmt.Sprint(i)))
		}
		for k := range 5 {
			ws = append(ws, rw(fmt.Sprintf("own-%02d-%d", i, k), "1"))
		}
		var err error
		results[i], err = s.SaveRecords(ctx, sc, ws, at(i), 0)
		return err
	})
	var sum functions.SaveResult
	for i, err := range errs {
		if err != nil {
			t.Errorf("writer %d: %v", i, err)
		}
		sum.Added += results[i].Added
		sum.Updated += results[i].Updated
	}
	diff(t, "counts of every save", functions.SaveResult{Added: 10 + writers*5, Updated: (writers - 1) * 10}, sum)
	all := allRecs(t, s, sc)
	diff(t, "records", 10+writers*5, len(all))
	seqs := map[int64]bool{}
	for _, r := range all {
		if seqs[r.Seq] {
			t.Errorf("Seq %d given twice", r.Seq)
		}
		seqs[r.Seq] = true
	}
	// The shared records hold the last save's version, which has the
	// highest Seq of them.
	last := ""
	for _, r := range all {
		if strings.HasPrefix(r.ID, "shared-") {
			last = r.Hash
		}
	}
	for _, r := range all {
		if strings.HasPrefix(r.ID, "shared-") && r.Hash != last {
			t.Errorf("%s holds %s, the last save wrote %s", r.ID, r.Hash, last)
		}
	}
	diff(t, "count", 10+writers*5, countRecs(t, s, sc))
}

// testRecordConcurrentReader: a reader that pages by Seq while writers
// commit, each in a transaction that takes a while, never misses a record:
// a Seq is handed out in commit order.
func testRecordConcurrentReader(t *testing.T, s Store) {
	ctx := t.Context()
	sc := newRecordEnv(t, s).scope("Issue")
	const (
		goroutines = 6
		txs        = 15
		perTx      = 3
	)
	var wg sync.WaitGroup
	errc := make(chan error, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			for k := range txs {
				err := s.WithTx(ctx, func(ctx context.Context) error {
					var ws []functions.RecordWrite
					for j := range perTx {
						ws = append(ws, rw(fmt.Sprintf("g%d-t%02d-%d", g, k, j), "1"))
					}
					if _, err := s.SaveRecords(ctx, sc, ws, at(k), 0); err != nil {
						return err
					}
					time.Sleep(time.Duration(rand.IntN(1500)) * time.Microsecond)
					return nil
				})
				if err != nil {
					errc <- fmt.Errorf("writer %d: %w", g, err)
					return
				}
			}
		})
	}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	seen := map[string]int{}
	var cursor int64
	finished := false
	for {
		select {
		case <-done:
			finished = true
		default:
		}
		page, err := s.ListRecords(ctx, sc, functions.RecordQuery{AfterSeq: cursor, Limit: 4})
		must(t, err)
		for _, r := range page {
			if r.Seq <= cursor {
				t.Fatalf("record %s has Seq %d, at or below the cursor %d", r.ID, r.Seq, cursor)
			}
			seen[r.ID]++
			cursor = r.Seq
		}
		if len(page) == 0 && finished {
			break
		}
	}
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	missed := 0
	for g := range goroutines {
		for k := range txs {
			for j := range perTx {
				if id := fmt.Sprintf("g%d-t%02d-%d", g, k, j); seen[id] != 1 {
					missed++
					if missed < 5 {
						t.Errorf("the reader saw %s %d times", id, seen[id])
					}
				}
			}
		}
	}
	if missed > 0 {
		t.Errorf("the reader missed or repeated %d of %d records", missed, goroutines*txs*perTx)
	}
}
