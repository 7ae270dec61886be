package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/embedauth/connect/functions"
	"github.com/embedauth/connect/internal/uuid"
	"github.com/embedauth/connect/store"
)

// The tests of functions.FunctionStore, SyncStore, CheckpointStore and
// ActionStore. Beyond the doc comments of those interfaces they pin down
// these choices, which both shipped stores make:
//
//   - PutFunction with an empty Version compares the rest only (an empty
//     version matches any stored one); a changed function whose stored
//     version is not a number keeps it. A missing integration is
//     ErrNotFound. Renaming an integration renames its functions;
//     deleting it deletes them. SetFunctionEnabled leaves UpdatedAt.
//   - Sync, run and task IDs are UUIDs: the stores return them in
//     canonical form (lower case), and a lookup or write with an ID that
//     is not a UUID is ErrInvalid.
//   - CreateSyncs creates all or nothing: a missing connection is
//     ErrNotFound. Of syncs given twice in one call the first is created.
//     Intervals are kept to the millisecond.
//   - ListSyncs without an EnvironmentID is ErrInvalid; a Limit of 0 means
//     no limit, and so does a limit of 0 for ClaimDueSyncs, StaleSyncRuns,
//     DeleteSyncRunsBefore, StaleActionTasks and DeleteActionTasksBefore.
//     Claims come earliest due first, stale runs and tasks and deletions
//     oldest first.
//   - CreateSyncRun and CreateActionTask set Version to 1; an ID already
//     stored is ErrConflict, a missing sync (environment) ErrNotFound.
//     UpdateSyncRun of a missing run, and UpdateActionTask of a missing
//     task or one of another environment, are ErrNotFound.
//   - A RUNNING run without a HeartbeatAt is never stale.
//   - PutCheckpoint of a new checkpoint for a missing connection is
//     ErrNotFound; an empty value is ErrInvalid. DeleteCheckpoints takes
//     its prefix literally.
//   - JSON values (a definition's schemas, a run's checkpoints and error,
//     a checkpoint's value) come back as the same JSON value, not
//     necessarily the same bytes.

var functionTests = []test{
	{"PutNew", testPutFunctionNew},
	{"PutUnchanged", testPutFunctionUnchanged},
	{"PutChanged", testPutFunctionChanged},
	{"PutVersions", testPutFunctionVersions},
	{"PutRuntimes", testPutFunctionRuntimes},
	{"PutMissingIntegration", testPutFunctionMissingIntegration},
	{"GetNotFound", testGetFunctionNotFound},
	{"List", testListFunctions},
	{"Delete", testDeleteFunction},
	{"DeleteSyncFunction", testDeleteSyncFunction},
	{"SetEnabled", testSetFunctionEnabled},
	{"Environments", testFunctionEnvironments},
	{"IntegrationDeleted", testFunctionIntegrationDeleted},
	{"IntegrationRenamed", testFunctionIntegrationRenamed},
	{"Copies", testFunctionCopies},
	{"Text", testFunctionText},
	{"Rollback", testFunctionsRollback},
}

var syncTests = []test{
	{"CreateAndGet", testCreateSyncs},
	{"CreateIdempotent", testCreateSyncsIdempotent},
	{"CreateMissingConnection", testCreateSyncsMissingConnection},
	{"GetNotFound", testGetSyncNotFound},
	{"List", testListSyncs},
	{"Update", testUpdateSync},
	{"Delete", testDeleteSync},
	{"CountVariants", testCountSyncVariants},
	{"Claim", testClaimDueSyncs},
	{"ClaimOutsideTx", testClaimDueSyncsOutsideTx},
	{"ClaimConcurrent", testClaimDueSyncsConcurrent},
	{"ConnectionDeleted", testSyncsConnectionDeleted},
	{"IntegrationDeleted", testSyncsIntegrationDeleted},
	{"Copies", testSyncCopies},
}

var syncRunTests = []test{
	{"CreateGetUpdate", testSyncRunCreateGetUpdate},
	{"CreateRefused", testSyncRunCreateRefused},
	{"Latest", testLatestSyncRuns},
	{"Stale", testStaleSyncRuns},
	{"Retention", testDeleteSyncRunsBefore},
}

var checkpointTests = []test{
	{"Versions", testCheckpointVersions},
	{"Delete", testDeleteCheckpoint},
	{"DeletePrefix", testDeleteCheckpoints},
	{"Refused", testCheckpointRefused},
}

var actionTaskTests = []test{
	{"CreateGet", testActionTaskCreateGet},
	{"Update", testUpdateActionTask},
	{"Stale", testStaleActionTasks},
	{"Retention", testDeleteActionTasksBefore},
	{"OutlivesConnection", testActionTaskOutlivesConnection},
}

// rawJSONEqual compares JSON values, not their bytes: jsonb keeps neither
// spacing nor key order. (Empty is SQL NULL, which cmpOpts equate.)
var rawJSONEqual = cmp.FilterValues(func(a, b json.RawMessage) bool {
	return len(a) > 0 && len(b) > 0
}, cmp.Comparer(func(a, b json.RawMessage) bool {
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return bytes.Equal(a, b)
	}
	return reflect.DeepEqual(va, vb)
}))

func fdiff(t *testing.T, what string, want, got any) {
	t.Helper()
	if d := cmp.Diff(want, got, append(slices.Clone(cmpOpts), rawJSONEqual)...); d != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", what, d)
	}
}

func atp(n int) *time.Time {
	t := at(n)
	return &t
}

// ---- Functions ----

func newFunctionValue(env int64, integration string, kind functions.Kind, name string) *functions.Function {
	return &functions.Function{
		EnvironmentID: env,
		Integration:   integration,
		Kind:          kind,
		Name:          name,
		Runtime:       "go",
		Source:        "host",
		Definition: functions.Definition{
			Description:  "Fetches " + name,
			Runs:         "1h",
			AutoStart:    true,
			TrackDeletes: true,
			SyncType:     "incremental",
			Models: []functions.Model{{Name: "Issue",
				Schema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}}}`)}},
			Input:                "IssueInput",
			JSONSchema:           json.RawMessage(`{"definitions":{"Issue":{"type":"object"}},"$schema":"http://json-schema.org/draft-07/schema#"}`),
			Scopes:               []string{"repo", "read:user"},
			Endpoints:            []functions.Endpoint{{Method: "GET", Path: "/issues", Group: "Issues"}},
			WebhookSubscriptions: []string{"issues"},
			Attributes:           map[string]any{"timeout": float64(30), "nested": map[string]any{"a": []any{"b", true}}},
			Features:             []string{"checkpoints"},
		},
		Code:       []byte("module.exports = {}"),
		SourceCode: []byte("export default {}"),
		SDKVersion: "0.71.10-zero",
		DeployedAt: ts,
		UpdatedAt:  ts,
	}
}

func putFunction(t *testing.T, s Store, f *functions.Function) bool {
	t.Helper()
	changed, err := s.PutFunction(t.Context(), f)
	must(t, err)
	return changed
}

func getFunction(t *testing.T, s Store, f *functions.Function) *functions.Function {
	t.Helper()
	got, err := s.GetFunction(t.Context(), f.EnvironmentID, f.Integration, f.Kind, f.Name)
	must(t, err)
	return got
}

func testPutFunctionNew(t *testing.T, s Store) {
	env := newEnv(t, s, "dev")
	newIntegration(t, s, env.ID, "github")
	f := newFunctionValue(env.ID, "github", functions.KindSync, "issues")
	f.Enabled = false // a new function is enabled whatever f says
	f.UpdatedAt = at(5)
	given := *f
	if !putFunction(t, s, f) {
		t.Error("PutFunction of a new function reported no change")
	}
	if f.ID == 0 {
		t.Fatal("PutFunction did not set ID")
	}
	want := given
	want.ID, want.Version, want.Enabled, want.DeployedAt, want.UpdatedAt = f.ID, "1", true, ts, ts
	fdiff(t, "PutFunction's f", &want, f)
	fdiff(t, "GetFunction", &want, getFunction(t, s, f))

	// A second function gets another ID.
	g := newFunctionValue(env.ID, "github", functions.KindAction, "issues")
	putFunction(t, s, g)
	if g.ID == 0 || g.ID == f.ID {
		t.Errorf("second function has ID %d, first %d; want distinct IDs", g.ID, f.ID)
	}
}

func testPutFunctionUnchanged(t *testing.T, s Store) {
	env := newEnv(t, s, "dev")
	newIntegration(t, s, env.ID, "github")
	putFunction(t, s, newFunctionValue(env.ID, "github", functions.KindSync, "issues"))
	stored := getFunction(t, s, newFunctionValue(env.ID, "github", functions.KindSync, "issues"))

	for _, tc := range []struct {
		name   string
		change func(f *functions.Function)
	}{
		{"same", func(*functions.Function) {}},
		{"same version given", func(f *functions.Function) { f.Version = "1" }},
		// Compared as JSON: key order and spacing do not matter.
		{"same JSON", func(f *functions.Function) {
			f.Definition.JSONSchema = json.RawMessage(`{ "$schema": "http://json-schema.org/draft-07/schema#",
				"definitions": {"Issue": {"type": "object"}} }`)
		}},
		// What the store does not compare.
		{"other enabled, id and times", func(f *functions.Function) {
			f.Enabled, f.ID, f.UpdatedAt = false, 999, at(30)
		}},
	} {
		f := newFunctionValue(env.ID, "github", functions.KindSync, "issues")
		f.DeployedAt = at(20)
		tc.change(f)
		if putFunction(t, s, f) {
			t.Errorf("%s: PutFunction reported a change", tc.name)
		}
		// f is set to what is stored, DeployedAt included.
		fdiff(t, tc.name+": PutFunction's f", stored, f)
		fdiff(t, tc.name+": GetFunction", stored, getFunction(t, s, f))
	}
}

func testPutFunctionChanged(t *testing.T, s Store) {
	env := newEnv(t, s, "dev")
	newIntegration(t, s, env.ID, "github")
	first := newFunctionValue(env.ID, "github", functions.KindSync, "issues")
	putFunction(t, s, first)
	must(t, s.SetFunctionEnabled(t.Context(), env.ID, "github", functions.KindSync, "issues", false))

	version := 1
	changes := []struct {
		name   string
		change func(f *functions.Function)
	}{
		{"description", func(f *functions.Function) { f.Definition.Description = "Other" }},
		{"schema", func(f *functions.Function) { f.Definition.JSONSchema = json.RawMessage(`{"definitions":{}}`) }},
		{"attributes", func(f *functions.Function) { f.Definition.Attributes = nil }},
		{"source", func(f *functions.Function) { f.Source = "repo" }},
		{"code", func(f *functions.Function) { f.Code = []byte("module.exports = {a: 1}") }},
		{"source code", func(f *functions.Function) { f.SourceCode = []byte("export default {a: 1}") }},
		{"SDK version", func(f *functions.Function) { f.SDKVersion = "0.71.11-zero" }},
	}
	for i, tc := range changes {
		f := newFunctionValue(env.ID, "github", functions.KindSync, "issues")
		f.Enabled = true // kept as stored (false)
		f.DeployedAt = at(10 * (i + 1))
		f.UpdatedAt = at(1000) // replaced by DeployedAt
		tc.change(f)
		given := *f
		if !putFunction(t, s, f) {
			t.Errorf("%s: PutFunction reported no change", tc.name)
			continue
		}
		version++
		want := given
		want.ID, want.Enabled, want.Version = first.ID, false, fmt.Sprint(version)
		want.UpdatedAt = want.DeployedAt
		fdiff(t, tc.name+": PutFunction's f", &want, f)
		fdiff(t, tc.name+": GetFunction", &want, getFunction(t, s, f))
		// The next change starts from this one.
		if i+1 < len(changes) {
			putFunction(t, s, newFunctionValue(env.ID, "github", functions.KindSync, "issues"))
			version++
		}
	}
	list, err := s.ListFunctions(t.Context(), env.ID, "github")
	must(t, err)
	if len(list) != 1 {
		t.Errorf("ListFunctions returned %d functions after replacements, want 1", len(list))
	}
}

func testPutFunctionVersions(t *testing.T, s Store) {
	env := newEnv(t, s, "dev")
	newIntegration(t, s, env.ID, "github")
	put := func(version, description string, deployedAt time.Time) (*functions.Function, bool) {
		t.Helper()
		f := newFunctionValue(env.ID, "github", functions.KindAction, "create-issue")
		f.Version, f.Definition.Description, f.DeployedAt = version, description, deployedAt
		changed := putFunction(t, s, f)
		return f, changed
	}
	check := func(what string, f *functions.Function, changed, wantChanged bool, wantVersion string, wantDeployed time.Time) {
		t.Helper()
		if changed != wantChanged {
			t.Errorf("%s: changed = %v, want %v", what, changed, wantChanged)
		}
		got := getFunction(t, s, f)
		if got.Version != wantVersion || f.Version != wantVersion {
			t.Errorf("%s: version %q (f: %q), want %q", what, got.Version, f.Version, wantVersion)
		}
		if !got.DeployedAt.Equal(wantDeployed) || !got.UpdatedAt.Equal(wantDeployed) {
			t.Errorf("%s: deployed at %v, updated at %v; want both %v", what, got.DeployedAt, got.UpdatedAt, wantDeployed)
		}
	}
	f, changed := put("", "a", at(1))
	check("new without version", f, changed, true, "1", at(1))
	f, changed = put("", "b", at(2))
	check("changed without version", f, changed, true, "2", at(2))
	f, changed = put("", "b", at(3))
	check("unchanged without version", f, changed, false, "2", at(2))
	// An explicit version is kept, and a new one is a change.
	f, changed = put("v2.0", "b", at(4))
	check("only the version given", f, changed, true, "v2.0", at(4))
	f, changed = put("v2.0", "b", at(5))
	check("same version given", f, changed, false, "v2.0", at(4))
	f, changed = put("", "b", at(6))
	check("unchanged, no version given", f, changed, false, "v2.0", at(4))
	// A version that is not a number cannot be counted: it stays.
	f, changed = put("", "c", at(7))
	check("changed after a named version", f, changed, true, "v2.0", at(7))
	f, changed = put("41", "c", at(8))
	check("numeric version given", f, changed, true, "41", at(8))
	f, changed = put("", "d", at(9))
	check("counted from the given number", f, changed, true, "42", at(9))
	// Numbers separated by dots count by their last.
	f, changed = put("1.0.9", "d", at(10))
	check("dotted version given", f, changed, true, "1.0.9", at(10))
	f, changed = put("", "e", at(11))
	check("counted from the dotted version", f, changed, true, "1.0.10", at(11))
	f, changed = put("1.x", "e", at(12))
	check("version with a part that is no number", f, changed, true, "1.x", at(12))
	f, changed = put("", "f", at(13))
	check("not counted from it", f, changed, true, "1.x", at(13))

	// A new function with an explicit version keeps it.
	g := newFunctionValue(env.ID, "github", functions.KindAction, "close-issue")
	g.Version = "2024.1"
	putFunction(t, s, g)
	if got := getFunction(t, s, g); got.Version != "2024.1" {
		t.Errorf("new function with version 2024.1 stored version %q", got.Version)
	}
}

// testPutFunctionRuntimes: a function of one runtime replaced by one of
// another is a change, unless one of them is a Go function: that is
// ErrConflict and changes nothing.
func testPutFunctionRuntimes(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	newIntegration(t, s, env.ID, "github")
	js := newFunctionValue(env.ID, "github", functions.KindAction, "create")
	js.Runtime = "javascript"
	putFunction(t, s, js)
	other := newFunctionValue(env.ID, "github", functions.KindAction, "create")
	other.Runtime = "wasm"
	if !putFunction(t, s, other) || other.Runtime != "wasm" || other.Version != "2" {
		t.Errorf("another runtime: runtime %q, version %q; want a change to wasm, version 2", other.Runtime, other.Version)
	}
	want := getFunction(t, s, other)
	over := newFunctionValue(env.ID, "github", functions.KindAction, "create") // Runtime "go"
	_, err := s.PutFunction(ctx, over)
	wantErr(t, "PutFunction(a Go function over another runtime's)", err, store.ErrConflict)
	fdiff(t, "function after the refused replacement", want, getFunction(t, s, want))

	goFn := newFunctionValue(env.ID, "github", functions.KindSync, "issues")
	putFunction(t, s, goFn)
	wantGo := getFunction(t, s, goFn)
	deployed := newFunctionValue(env.ID, "github", functions.KindSync, "issues")
	deployed.Runtime, deployed.Version = "javascript", "9"
	_, err = s.PutFunction(ctx, deployed)
	wantErr(t, "PutFunction(another runtime's function over a Go one)", err, store.ErrConflict)
	fdiff(t, "Go function after the refused replacement", wantGo, getFunction(t, s, goFn))
	for _, id := range []*functions.Function{want, wantGo} {
		vs, err := s.ListFunctionVersions(ctx, env.ID, "github", id.Kind, id.Name)
		must(t, err)
		if want := map[string]int{"create": 1, "issues": 0}[id.Name]; len(vs) != want {
			t.Errorf("%s: %d versions kept, want %d", id.Name, len(vs), want)
		}
	}
}

func testPutFunctionMissingIntegration(t *testing.T, s Store) {
	env := newEnv(t, s, "dev")
	newIntegration(t, s, env.ID, "github")
	_, err := s.PutFunction(t.Context(), newFunctionValue(env.ID, "slack", functions.KindAction, "post"))
	wantErr(t, "PutFunction(missing integration)", err, store.ErrNotFound)
	_, err = s.PutFunction(t.Context(), newFunctionValue(env.ID+1000, "github", functions.KindAction, "post"))
	wantErr(t, "PutFunction(missing environment)", err, store.ErrNotFound)
	list, err := s.ListFunctions(t.Context(), env.ID, "")
	must(t, err)
	if len(list) != 0 {
		t.Errorf("ListFunctions returned %d functions, want none", len(list))
	}
}

func testGetFunctionNotFound(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	newIntegration(t, s, env.ID, "github")
	putFunction(t, s, newFunctionValue(env.ID, "github", functions.KindSync, "issues"))
	for _, k := range []struct {
		env         int64
		integration string
		kind        functions.Kind
		name        string
	}{
		{env.ID, "github", functions.KindAction, "issues"},
		{env.ID, "github", functions.KindSync, "Issues"},
		{env.ID, "gitlab", functions.KindSync, "issues"},
		{env.ID + 1000, "github", functions.KindSync, "issues"},
	} {
		_, err := s.GetFunction(ctx, k.env, k.integration, k.kind, k.name)
		wantErr(t, fmt.Sprintf("GetFunction(%d, %s, %s, %s)", k.env, k.integration, k.kind, k.name), err, store.ErrNotFound)
	}
}

func testListFunctions(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	other := newEnv(t, s, "prod")
	for _, key := range []string{"b-int", "a-int", "B-int"} {
		newIntegration(t, s, env.ID, key)
	}
	newIntegration(t, s, other.ID, "a-int")
	type id struct {
		Integration string
		Kind        functions.Kind
		Name        string
	}
	// Put in an order that is none of the expected ones.
	for _, k := range []id{
		{"b-int", functions.KindSync, "z"}, {"a-int", functions.KindSync, "b"}, {"a-int", functions.KindAction, "z"},
		{"B-int", functions.KindAction, "a"}, {"a-int", functions.KindSync, "B"}, {"a-int", functions.KindOnEvent, "a"},
		{"a-int", functions.KindAction, "a"},
	} {
		putFunction(t, s, newFunctionValue(env.ID, k.Integration, k.Kind, k.Name))
	}
	putFunction(t, s, newFunctionValue(other.ID, "a-int", functions.KindAction, "other"))
	ids := func(fs []*functions.Function) []id {
		out := []id{}
		for _, f := range fs {
			if f.EnvironmentID != env.ID {
				t.Errorf("function %q of environment %d listed in environment %d", f.Name, f.EnvironmentID, env.ID)
			}
			out = append(out, id{f.Integration, f.Kind, f.Name})
		}
		return out
	}
	all, err := s.ListFunctions(ctx, env.ID, "")
	must(t, err)
	diff(t, "ListFunctions(all)", []id{
		{"B-int", functions.KindAction, "a"},
		{"a-int", functions.KindAction, "a"}, {"a-int", functions.KindAction, "z"},
		{"a-int", functions.KindOnEvent, "a"},
		{"a-int", functions.KindSync, "B"}, {"a-int", functions.KindSync, "b"},
		{"b-int", functions.KindSync, "z"},
	}, ids(all))
	one, err := s.ListFunctions(ctx, env.ID, "a-int")
	must(t, err)
	diff(t, "ListFunctions(a-int)", []id{
		{"a-int", functions.KindAction, "a"}, {"a-int", functions.KindAction, "z"},
		{"a-int", functions.KindOnEvent, "a"},
		{"a-int", functions.KindSync, "B"}, {"a-int", functions.KindSync, "b"},
	}, ids(one))
	// Listed functions are whole.
	fdiff(t, "listed function", getFunction(t, s, one[0]), one[0])
	none, err := s.ListFunctions(ctx, env.ID, "c-int")
	must(t, err)
	if len(none) != 0 {
		t.Errorf("ListFunctions(c-int) returned %d functions, want none", len(none))
	}
	theirs, err := s.ListFunctions(ctx, other.ID, "")
	must(t, err)
	if len(theirs) != 1 || theirs[0].Name != "other" {
		t.Errorf("ListFunctions(other environment) = %d functions, want only \"other\"", len(theirs))
	}
}

func testDeleteFunction(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	newIntegration(t, s, env.ID, "github")
	putFunction(t, s, newFunctionValue(env.ID, "github", functions.KindAction, "issues"))
	putFunction(t, s, newFunctionValue(env.ID, "github", functions.KindSync, "issues"))
	must(t, s.DeleteFunction(ctx, env.ID, "github", functions.KindAction, "issues"))
	_, err := s.GetFunction(ctx, env.ID, "github", functions.KindAction, "issues")
	wantErr(t, "GetFunction after DeleteFunction", err, store.ErrNotFound)
	wantErr(t, "DeleteFunction again", s.DeleteFunction(ctx, env.ID, "github", functions.KindAction, "issues"), store.ErrNotFound)
	wantErr(t, "DeleteFunction(other environment)", s.DeleteFunction(ctx, env.ID+1000, "github", functions.KindSync, "issues"), store.ErrNotFound)
	// The sync of the same name stays.
	getFunction(t, s, newFunctionValue(env.ID, "github", functions.KindSync, "issues"))
}

// syncFixture is an environment with an integration, two connections and
// a helper to make syncs of them.
type syncFixture struct {
	env    int64
	c1, c2 int64
}

func newSyncFixture(t *testing.T, s Store) syncFixture {
	env := newEnv(t, s, "dev")
	newIntegration(t, s, env.ID, "github")
	return syncFixture{
		env: env.ID,
		c1:  newConn(t, s, env.ID, "github", "u1", nil).ID,
		c2:  newConn(t, s, env.ID, "github", "u2", nil).ID,
	}
}

func newScheduleValue(env, conn int64, integration, ref, name, variant string) *functions.Schedule {
	return &functions.Schedule{
		EnvironmentID: env,
		ConnectionID:  conn,
		Integration:   integration,
		ConnectionRef: ref,
		Name:          name,
		Variant:       variant,
		Frequency:     "30m",
		Interval:      30 * time.Minute,
		NextRunAt:     atp(60),
		CreatedAt:     ts,
	}
}

// sched returns a sync of the fixture's connection conn (c1 or c2).
func (f syncFixture) sched(conn int64, name, variant string) *functions.Schedule {
	ref := "u1"
	if conn == f.c2 {
		ref = "u2"
	}
	return newScheduleValue(f.env, conn, "github", ref, name, variant)
}

func createSyncs(t *testing.T, s Store, syncs ...*functions.Schedule) {
	t.Helper()
	n, err := s.CreateSyncs(t.Context(), syncs)
	must(t, err)
	if n != len(syncs) {
		t.Fatalf("CreateSyncs created %d syncs, want %d", n, len(syncs))
	}
}

func newRunValue(syncID string, status string, created time.Time) *functions.SyncRun {
	return &functions.SyncRun{ID: uuid.New(), SyncID: syncID, Status: status, Type: "INITIAL", Trigger: "schedule",
		LogID: "log-" + syncID[:8], CreatedAt: created}
}

func createRun(t *testing.T, s Store, r *functions.SyncRun) *functions.SyncRun {
	t.Helper()
	must(t, s.CreateSyncRun(t.Context(), r))
	return r
}

func testDeleteSyncFunction(t *testing.T, s Store) {
	ctx := t.Context()
	fx := newSyncFixture(t, s)
	newIntegration(t, s, fx.env, "gitlab")
	gl := newConn(t, s, fx.env, "gitlab", "u1", nil)
	putFunction(t, s, newFunctionValue(fx.env, "github", functions.KindSync, "issues"))
	putFunction(t, s, newFunctionValue(fx.env, "github", functions.KindSync, "pulls"))
	putFunction(t, s, newFunctionValue(fx.env, "github", functions.KindAction, "issues"))
	putFunction(t, s, newFunctionValue(fx.env, "gitlab", functions.KindSync, "issues"))
	gone := []*functions.Schedule{fx.sched(fx.c1, "issues", functions.BaseVariant), fx.sched(fx.c1, "issues", "v1"),
		fx.sched(fx.c2, "issues", functions.BaseVariant)}
	kept := []*functions.Schedule{fx.sched(fx.c1, "pulls", functions.BaseVariant),
		newScheduleValue(fx.env, gl.ID, "gitlab", "u1", "issues", functions.BaseVariant)}
	createSyncs(t, s, append(slices.Clone(gone), kept...)...)
	var runs []*functions.SyncRun
	for _, sy := range append(slices.Clone(gone), kept...) {
		runs = append(runs, createRun(t, s, newRunValue(sy.ID, functions.RunSuccess, at(1))))
	}

	// Deleting the action of the same name deletes no sync.
	must(t, s.DeleteFunction(ctx, fx.env, "github", functions.KindAction, "issues"))
	for _, sy := range gone {
		if _, err := s.GetSyncByID(ctx, sy.ID); err != nil {
			t.Errorf("sync %s/%s after deleting the action: %v", sy.Name, sy.Variant, err)
		}
	}
	must(t, s.DeleteFunction(ctx, fx.env, "github", functions.KindSync, "issues"))
	for i, sy := range gone {
		_, err := s.GetSyncByID(ctx, sy.ID)
		wantErr(t, fmt.Sprintf("GetSyncByID(%s/%s of %d)", sy.Name, sy.Variant, sy.ConnectionID), err, store.ErrNotFound)
		_, err = s.GetSyncRun(ctx, runs[i].ID)
		wantErr(t, "GetSyncRun of a deleted sync", err, store.ErrNotFound)
	}
	for i, sy := range kept {
		if _, err := s.GetSyncByID(ctx, sy.ID); err != nil {
			t.Errorf("sync %s of %s: %v", sy.Name, sy.Integration, err)
		}
		if _, err := s.GetSyncRun(ctx, runs[len(gone)+i].ID); err != nil {
			t.Errorf("run of sync %s of %s: %v", sy.Name, sy.Integration, err)
		}
	}
	n, err := s.CountSyncVariants(ctx, fx.c1, "issues")
	must(t, err)
	if n != 0 {
		t.Errorf("CountSyncVariants after DeleteFunction = %d, want 0", n)
	}
}

func testSetFunctionEnabled(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	newIntegration(t, s, env.ID, "github")
	f := newFunctionValue(env.ID, "github", functions.KindAction, "issues")
	putFunction(t, s, f)
	must(t, s.SetFunctionEnabled(ctx, env.ID, "github", functions.KindAction, "issues", false))
	got := getFunction(t, s, f)
	if got.Enabled {
		t.Error("Enabled after SetFunctionEnabled(false)")
	}
	want := *f
	want.Enabled = false
	fdiff(t, "function after SetFunctionEnabled(false)", &want, got)
	must(t, s.SetFunctionEnabled(ctx, env.ID, "github", functions.KindAction, "issues", true))
	if !getFunction(t, s, f).Enabled {
		t.Error("not Enabled after SetFunctionEnabled(true)")
	}
	wantErr(t, "SetFunctionEnabled(missing)", s.SetFunctionEnabled(ctx, env.ID, "github", functions.KindSync, "issues", true), store.ErrNotFound)
	wantErr(t, "SetFunctionEnabled(other environment)", s.SetFunctionEnabled(ctx, env.ID+1000, "github", functions.KindAction, "issues", true), store.ErrNotFound)
}

func testFunctionEnvironments(t *testing.T, s Store) {
	ctx := t.Context()
	dev, prod := newEnv(t, s, "dev"), newEnv(t, s, "prod")
	newIntegration(t, s, dev.ID, "github")
	newIntegration(t, s, prod.ID, "github")
	a := newFunctionValue(dev.ID, "github", functions.KindSync, "issues")
	b := newFunctionValue(prod.ID, "github", functions.KindSync, "issues")
	b.Definition.Description = "prod"
	putFunction(t, s, a)
	if !putFunction(t, s, b) || b.Version != "1" || b.ID == a.ID {
		t.Errorf("the same function in another environment: version %q, ID %d (first's %d); want a new function", b.Version, b.ID, a.ID)
	}
	must(t, s.SetFunctionEnabled(ctx, prod.ID, "github", functions.KindSync, "issues", false))
	must(t, s.DeleteFunction(ctx, prod.ID, "github", functions.KindSync, "issues"))
	got := getFunction(t, s, a)
	fdiff(t, "dev's function after prod's changes", a, got)
}

func testFunctionIntegrationDeleted(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	newIntegration(t, s, env.ID, "github")
	newIntegration(t, s, env.ID, "slack")
	putFunction(t, s, newFunctionValue(env.ID, "github", functions.KindSync, "issues"))
	putFunction(t, s, newFunctionValue(env.ID, "github", functions.KindAction, "create"))
	keep := newFunctionValue(env.ID, "slack", functions.KindAction, "post")
	putFunction(t, s, keep)
	must(t, s.DeleteIntegration(ctx, env.ID, "github"))
	// An integration created again under the key has no functions.
	newIntegration(t, s, env.ID, "github")
	list, err := s.ListFunctions(ctx, env.ID, "github")
	must(t, err)
	if len(list) != 0 {
		t.Errorf("ListFunctions after DeleteIntegration returned %d functions, want none", len(list))
	}
	_, err = s.GetFunction(ctx, env.ID, "github", functions.KindSync, "issues")
	wantErr(t, "GetFunction after DeleteIntegration", err, store.ErrNotFound)
	fdiff(t, "another integration's function", keep, getFunction(t, s, keep))
}

func testFunctionIntegrationRenamed(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	in := newIntegration(t, s, env.ID, "github")
	f := newFunctionValue(env.ID, "github", functions.KindSync, "issues")
	putFunction(t, s, f)
	in.UniqueKey = "github-app"
	must(t, s.UpdateIntegration(ctx, in))
	_, err := s.GetFunction(ctx, env.ID, "github", functions.KindSync, "issues")
	wantErr(t, "GetFunction under the old key", err, store.ErrNotFound)
	want := *f
	want.Integration = "github-app"
	got, err := s.GetFunction(ctx, env.ID, "github-app", functions.KindSync, "issues")
	must(t, err)
	fdiff(t, "function under the new key", &want, got)
}

func testFunctionCopies(t *testing.T, s Store) {
	env := newEnv(t, s, "dev")
	newIntegration(t, s, env.ID, "github")
	f := newFunctionValue(env.ID, "github", functions.KindSync, "issues")
	putFunction(t, s, f)
	want := getFunction(t, s, f)
	// Change what the caller gave and what it got back.
	f.Code[0] = 'X'
	f.Definition.Models[0].Schema[0] = '['
	f.Definition.Scopes[0] = "admin"
	f.Definition.Attributes["timeout"] = float64(1)
	got := getFunction(t, s, f)
	got.Definition.JSONSchema[0] = '['
	got.Definition.Endpoints[0].Path = "/other"
	got.Definition.Attributes["nested"].(map[string]any)["a"] = nil
	got.Code[1] = 'Y'
	fdiff(t, "function after the caller changed its copies", want, getFunction(t, s, f))
	list, err := s.ListFunctions(t.Context(), env.ID, "")
	must(t, err)
	list[0].Definition.Features[0] = "other"
	fdiff(t, "function after the caller changed a listed copy", want, getFunction(t, s, f))
}

func testFunctionText(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	newIntegration(t, s, env.ID, "github")
	for _, tc := range []struct {
		name   string
		change func(f *functions.Function)
	}{
		{"name", func(f *functions.Function) { f.Name = "a\x00b" }},
		{"description", func(f *functions.Function) { f.Definition.Description = "bad \xff" }},
		{"attribute", func(f *functions.Function) { f.Definition.Attributes = map[string]any{"k": "a\x00"} }},
		{"schema", func(f *functions.Function) { f.Definition.JSONSchema = json.RawMessage(`{"a":"\u0000"}`) }},
	} {
		f := newFunctionValue(env.ID, "github", functions.KindSync, "issues")
		tc.change(f)
		_, err := s.PutFunction(ctx, f)
		wantErr(t, "PutFunction("+tc.name+")", err, store.ErrInvalid)
	}
	_, err := s.GetFunction(ctx, env.ID, "github", functions.KindSync, "a\x00b")
	wantErr(t, "GetFunction(NUL)", err, store.ErrInvalid)
	list, err := s.ListFunctions(ctx, env.ID, "")
	must(t, err)
	if len(list) != 0 {
		t.Errorf("ListFunctions returned %d functions after refused writes, want none", len(list))
	}
}

// testFunctionsRollback writes every kind of record of the functions
// stores in a transaction that rolls back, and expects none of it.
func testFunctionsRollback(t *testing.T, s Store) {
	ctx := t.Context()
	fx := newSyncFixture(t, s)
	base := fx.sched(fx.c1, "issues", functions.BaseVariant)
	createSyncs(t, s, base)
	run := createRun(t, s, newRunValue(base.ID, functions.RunRunning, at(1)))
	_, err := s.PutCheckpoint(ctx, fx.c1, "sync:issues:base", json.RawMessage(`{"page":1}`), 0, at(1))
	must(t, err)
	f := newFunctionValue(fx.env, "github", functions.KindSync, "issues")
	putFunction(t, s, f)
	task := &functions.ActionTask{ID: uuid.New(), EnvironmentID: fx.env, ConnectionID: fx.c1, Status: functions.TaskPending,
		CreatedAt: ts, UpdatedAt: ts}
	must(t, s.CreateActionTask(ctx, task))

	var added *functions.Schedule
	var addedRun, addedTask string
	err = s.WithTx(ctx, func(ctx context.Context) error {
		g := newFunctionValue(fx.env, "github", functions.KindAction, "create")
		if _, err := s.PutFunction(ctx, g); err != nil {
			return err
		}
		changed := newFunctionValue(fx.env, "github", functions.KindSync, "issues")
		changed.Definition.Description = "changed"
		if _, err := s.PutFunction(ctx, changed); err != nil {
			return err
		}
		added = fx.sched(fx.c2, "issues", functions.BaseVariant)
		if _, err := s.CreateSyncs(ctx, []*functions.Schedule{added}); err != nil {
			return err
		}
		sy, err := s.GetSyncByID(ctx, base.ID)
		if err != nil {
			return err
		}
		sy.Paused, sy.NextRunAt = true, nil
		if err := s.UpdateSync(ctx, sy); err != nil {
			return err
		}
		r := newRunValue(added.ID, functions.RunQueued, at(2))
		addedRun = r.ID
		if err := s.CreateSyncRun(ctx, r); err != nil {
			return err
		}
		ru, err := s.GetSyncRun(ctx, run.ID)
		if err != nil {
			return err
		}
		ru.Status = functions.RunSuccess
		if err := s.UpdateSyncRun(ctx, ru); err != nil {
			return err
		}
		if _, err := s.PutCheckpoint(ctx, fx.c1, "sync:issues:base", json.RawMessage(`{"page":2}`), 1, at(2)); err != nil {
			return err
		}
		if _, err := s.PutCheckpoint(ctx, fx.c2, "sync:issues:base", json.RawMessage(`{"page":9}`), 0, at(2)); err != nil {
			return err
		}
		tk := &functions.ActionTask{ID: uuid.New(), EnvironmentID: fx.env, Status: functions.TaskPending, CreatedAt: ts, UpdatedAt: ts}
		addedTask = tk.ID
		if err := s.CreateActionTask(ctx, tk); err != nil {
			return err
		}
		tu, err := s.GetActionTask(ctx, fx.env, task.ID)
		if err != nil {
			return err
		}
		tu.Status = functions.TaskRunning
		if err := s.UpdateActionTask(ctx, tu); err != nil {
			return err
		}
		// Deletions too.
		if err := s.DeleteConnection(ctx, fx.env, "github", "u1"); err != nil {
			return err
		}
		if err := s.DeleteFunction(ctx, fx.env, "github", functions.KindSync, "issues"); err != nil {
			return err
		}
		return errRollback
	})
	if !errors.Is(err, errRollback) {
		t.Fatalf("WithTx returned %v, want errRollback", err)
	}
	fdiff(t, "function", f, getFunction(t, s, f))
	_, err = s.GetFunction(ctx, fx.env, "github", functions.KindAction, "create")
	wantErr(t, "GetFunction(rolled back)", err, store.ErrNotFound)
	gotSync, err := s.GetSyncByID(ctx, base.ID)
	must(t, err)
	fdiff(t, "sync", base, gotSync)
	_, err = s.GetSync(ctx, fx.c2, "issues", functions.BaseVariant)
	wantErr(t, "GetSync(rolled back)", err, store.ErrNotFound)
	gotRun, err := s.GetSyncRun(ctx, run.ID)
	must(t, err)
	fdiff(t, "run", run, gotRun)
	_, err = s.GetSyncRun(ctx, addedRun)
	wantErr(t, "GetSyncRun(rolled back)", err, store.ErrNotFound)
	cp, err := s.GetCheckpoint(ctx, fx.c1, "sync:issues:base")
	must(t, err)
	if cp.Version != 1 || !jsonEqual(cp.Value, `{"page":1}`) {
		t.Errorf("checkpoint after rollback: version %d, value %s; want 1 and {\"page\":1}", cp.Version, cp.Value)
	}
	_, err = s.GetCheckpoint(ctx, fx.c2, "sync:issues:base")
	wantErr(t, "GetCheckpoint(rolled back)", err, store.ErrNotFound)
	gotTask, err := s.GetActionTask(ctx, fx.env, task.ID)
	must(t, err)
	fdiff(t, "action task", task, gotTask)
	_, err = s.GetActionTask(ctx, fx.env, addedTask)
	wantErr(t, "GetActionTask(rolled back)", err, store.ErrNotFound)
}

func jsonEqual(raw json.RawMessage, want string) bool {
	var a, b any
	return json.Unmarshal(raw, &a) == nil && json.Unmarshal([]byte(want), &b) == nil && reflect.DeepEqual(a, b)
}

// ---- Syncs ----

func testCreateSyncs(t *testing.T, s Store) {
	ctx := t.Context()
	fx := newSyncFixture(t, s)
	a := fx.sched(fx.c1, "issues", functions.BaseVariant)
	a.Interval = 90*time.Minute + 1500*time.Millisecond
	a.LastSyncDate = atp(-60)
	a.UpdatedAt, a.Version = at(99), 7 // set by CreateSyncs
	b := fx.sched(fx.c1, "issues", "v1")
	b.Frequency, b.Paused, b.NextRunAt = "", true, nil
	c := fx.sched(fx.c2, "issues", functions.BaseVariant)
	c.RunID = uuid.New()
	c.CreatedAt = at(3)
	given := []functions.Schedule{*a, *b, *c}
	createSyncs(t, s, a, b, c)
	seen := map[string]bool{}
	for i, sy := range []*functions.Schedule{a, b, c} {
		if canon, ok := uuid.Parse(sy.ID); !ok || canon != sy.ID {
			t.Errorf("sync %d: ID %q is not a UUID in canonical form", i, sy.ID)
		}
		if seen[sy.ID] {
			t.Errorf("sync %d: ID %s given twice", i, sy.ID)
		}
		seen[sy.ID] = true
		want := given[i]
		want.ID, want.UpdatedAt, want.Version = sy.ID, want.CreatedAt, 1
		fdiff(t, fmt.Sprintf("sync %d as returned", i), &want, sy)
		got, err := s.GetSyncByID(ctx, sy.ID)
		must(t, err)
		fdiff(t, fmt.Sprintf("GetSyncByID(sync %d)", i), &want, got)
		got, err = s.GetSync(ctx, sy.ConnectionID, sy.Name, sy.Variant)
		must(t, err)
		fdiff(t, fmt.Sprintf("GetSync(sync %d)", i), &want, got)
	}
	// An ID in upper case finds the sync.
	upper := []byte(a.ID)
	for i, ch := range upper {
		if ch >= 'a' && ch <= 'f' {
			upper[i] = ch - 'a' + 'A'
		}
	}
	got, err := s.GetSyncByID(ctx, string(upper))
	must(t, err)
	if got.ID != a.ID {
		t.Errorf("GetSyncByID(upper case) returned ID %q, want %q", got.ID, a.ID)
	}
	// Intervals are kept to the millisecond.
	a.Interval = 90*time.Minute + 1500*time.Millisecond + 999*time.Microsecond
	d := fx.sched(fx.c2, "pulls", functions.BaseVariant)
	d.Interval = a.Interval
	createSyncs(t, s, d)
	got, err = s.GetSyncByID(ctx, d.ID)
	must(t, err)
	if want := 90*time.Minute + 1500*time.Millisecond; got.Interval != want {
		t.Errorf("Interval %v stored as %v, want %v", d.Interval, got.Interval, want)
	}
	n, err := s.CreateSyncs(ctx, nil)
	must(t, err)
	if n != 0 {
		t.Errorf("CreateSyncs(nil) = %d, want 0", n)
	}
}

func testCreateSyncsIdempotent(t *testing.T, s Store) {
	ctx := t.Context()
	fx := newSyncFixture(t, s)
	a, b := fx.sched(fx.c1, "issues", functions.BaseVariant), fx.sched(fx.c2, "issues", functions.BaseVariant)
	createSyncs(t, s, a, b)
	before, err := s.ListSyncs(ctx, functions.SyncFilter{EnvironmentID: fx.env})
	must(t, err)

	// The same identities with other values create nothing and change
	// nothing.
	again := []*functions.Schedule{fx.sched(fx.c1, "issues", functions.BaseVariant), fx.sched(fx.c2, "issues", functions.BaseVariant)}
	for _, sy := range again {
		sy.Frequency, sy.Interval, sy.Paused, sy.NextRunAt, sy.CreatedAt = "1d", 24*time.Hour, true, nil, at(50)
	}
	n, err := s.CreateSyncs(ctx, again)
	must(t, err)
	if n != 0 {
		t.Errorf("second CreateSyncs created %d syncs, want 0", n)
	}
	after, err := s.ListSyncs(ctx, functions.SyncFilter{EnvironmentID: fx.env})
	must(t, err)
	fdiff(t, "syncs after the second CreateSyncs", before, after)

	// A mix creates the new ones only; of one identity given twice, the
	// first.
	c1 := fx.sched(fx.c1, "issues", "v1")
	c1.Frequency = "first"
	c2 := fx.sched(fx.c1, "issues", "v1")
	c2.Frequency = "second"
	mixed := []*functions.Schedule{fx.sched(fx.c1, "issues", functions.BaseVariant), c1, c2}
	n, err = s.CreateSyncs(ctx, mixed)
	must(t, err)
	if n != 1 {
		t.Errorf("CreateSyncs of one new sync (given twice) and one existing created %d, want 1", n)
	}
	got, err := s.GetSync(ctx, fx.c1, "issues", "v1")
	must(t, err)
	if got.Frequency != "first" || got.ID != c1.ID {
		t.Errorf("sync given twice: stored frequency %q and ID %q; want the first (ID %q)", got.Frequency, got.ID, c1.ID)
	}
	if c2.ID != "" {
		t.Errorf("the second of a sync given twice got ID %q, want none", c2.ID)
	}
	all, err := s.ListSyncs(ctx, functions.SyncFilter{EnvironmentID: fx.env})
	must(t, err)
	if len(all) != 3 {
		t.Errorf("%d syncs stored, want 3", len(all))
	}
}

func testCreateSyncsMissingConnection(t *testing.T, s Store) {
	ctx := t.Context()
	fx := newSyncFixture(t, s)
	ok := fx.sched(fx.c1, "issues", functions.BaseVariant)
	missing := newScheduleValue(fx.env, fx.c2+1000, "github", "gone", "issues", functions.BaseVariant)
	_, err := s.CreateSyncs(ctx, []*functions.Schedule{ok, missing})
	wantErr(t, "CreateSyncs(missing connection)", err, store.ErrNotFound)
	all, err := s.ListSyncs(ctx, functions.SyncFilter{EnvironmentID: fx.env})
	must(t, err)
	if len(all) != 0 {
		t.Errorf("CreateSyncs that failed stored %d syncs, want none", len(all))
	}
	// A sync refused for its text creates nothing either.
	bad := fx.sched(fx.c2, "a\x00", functions.BaseVariant)
	_, err = s.CreateSyncs(ctx, []*functions.Schedule{fx.sched(fx.c1, "issues", functions.BaseVariant), bad})
	wantErr(t, "CreateSyncs(NUL in name)", err, store.ErrInvalid)
	badRun := fx.sched(fx.c2, "issues", functions.BaseVariant)
	badRun.RunID = "not-a-uuid"
	_, err = s.CreateSyncs(ctx, []*functions.Schedule{badRun})
	wantErr(t, "CreateSyncs(RunID not a UUID)", err, store.ErrInvalid)
	all, err = s.ListSyncs(ctx, functions.SyncFilter{EnvironmentID: fx.env})
	must(t, err)
	if len(all) != 0 {
		t.Errorf("CreateSyncs that failed stored %d syncs, want none", len(all))
	}
}

func testGetSyncNotFound(t *testing.T, s Store) {
	ctx := t.Context()
	fx := newSyncFixture(t, s)
	a := fx.sched(fx.c1, "issues", functions.BaseVariant)
	createSyncs(t, s, a)
	for _, k := range []struct {
		conn          int64
		name, variant string
	}{
		{fx.c1, "issues", "v1"}, {fx.c1, "Issues", functions.BaseVariant}, {fx.c2, "issues", functions.BaseVariant},
	} {
		_, err := s.GetSync(ctx, k.conn, k.name, k.variant)
		wantErr(t, fmt.Sprintf("GetSync(%d, %s, %s)", k.conn, k.name, k.variant), err, store.ErrNotFound)
	}
	_, err := s.GetSyncByID(ctx, uuid.New())
	wantErr(t, "GetSyncByID(unknown)", err, store.ErrNotFound)
	for _, id := range []string{"", "not-a-uuid", a.ID + "0", a.ID[:35]} {
		_, err := s.GetSyncByID(ctx, id)
		wantErr(t, fmt.Sprintf("GetSyncByID(%q)", id), err, store.ErrInvalid)
	}
	_, err = s.GetSync(ctx, fx.c1, "a\x00", functions.BaseVariant)
	wantErr(t, "GetSync(NUL)", err, store.ErrInvalid)
}

func testListSyncs(t *testing.T, s Store) {
	ctx := t.Context()
	fx := newSyncFixture(t, s)
	newIntegration(t, s, fx.env, "gitlab")
	gl := newConn(t, s, fx.env, "gitlab", "u1", nil)
	other := newEnv(t, s, "prod")
	newIntegration(t, s, other.ID, "github")
	oc := newConn(t, s, other.ID, "github", "u1", nil)
	all := []*functions.Schedule{
		fx.sched(fx.c1, "issues", functions.BaseVariant), fx.sched(fx.c1, "issues", "v1"),
		fx.sched(fx.c1, "pulls", functions.BaseVariant), fx.sched(fx.c2, "issues", functions.BaseVariant),
		fx.sched(fx.c2, "issues", "v1"), newScheduleValue(fx.env, gl.ID, "gitlab", "u1", "issues", functions.BaseVariant),
	}
	createSyncs(t, s, all...)
	createSyncs(t, s, newScheduleValue(other.ID, oc.ID, "github", "u1", "issues", functions.BaseVariant))
	byID := slices.Clone(all)
	slices.SortFunc(byID, func(a, b *functions.Schedule) int {
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
	pick := func(match func(*functions.Schedule) bool) []*functions.Schedule {
		out := []*functions.Schedule{}
		for _, sy := range byID {
			if match(sy) {
				out = append(out, sy)
			}
		}
		return out
	}
	for _, tc := range []struct {
		name string
		f    functions.SyncFilter
		want []*functions.Schedule
	}{
		{"environment", functions.SyncFilter{EnvironmentID: fx.env}, byID},
		{"integration", functions.SyncFilter{EnvironmentID: fx.env, Integration: "github"},
			pick(func(sy *functions.Schedule) bool { return sy.Integration == "github" })},
		{"connection", functions.SyncFilter{EnvironmentID: fx.env, ConnectionID: fx.c1},
			pick(func(sy *functions.Schedule) bool { return sy.ConnectionID == fx.c1 })},
		{"name", functions.SyncFilter{EnvironmentID: fx.env, Name: "issues"},
			pick(func(sy *functions.Schedule) bool { return sy.Name == "issues" })},
		{"variant", functions.SyncFilter{EnvironmentID: fx.env, Variant: "v1"},
			pick(func(sy *functions.Schedule) bool { return sy.Variant == "v1" })},
		{"base variant", functions.SyncFilter{EnvironmentID: fx.env, Integration: "github", Name: "issues", Variant: functions.BaseVariant},
			pick(func(sy *functions.Schedule) bool {
				return sy.Integration == "github" && sy.Name == "issues" && sy.Variant == functions.BaseVariant
			})},
		{"connection of another environment", functions.SyncFilter{EnvironmentID: fx.env, ConnectionID: oc.ID}, nil},
		{"limit", functions.SyncFilter{EnvironmentID: fx.env, Limit: 2}, byID[:2]},
		{"after", functions.SyncFilter{EnvironmentID: fx.env, AfterID: byID[1].ID}, byID[2:]},
		{"after and limit", functions.SyncFilter{EnvironmentID: fx.env, AfterID: byID[1].ID, Limit: 3}, byID[2:5]},
		{"after the last", functions.SyncFilter{EnvironmentID: fx.env, AfterID: byID[len(byID)-1].ID}, nil},
	} {
		got, err := s.ListSyncs(ctx, tc.f)
		must(t, err)
		fdiff(t, "ListSyncs("+tc.name+")", tc.want, got)
	}
	// Paging through with Limit and AfterID visits each once.
	var paged []*functions.Schedule
	f := functions.SyncFilter{EnvironmentID: fx.env, Limit: 4}
	for range 10 {
		page, err := s.ListSyncs(ctx, f)
		must(t, err)
		if len(page) == 0 {
			break
		}
		paged = append(paged, page...)
		f.AfterID = page[len(page)-1].ID
	}
	fdiff(t, "paged ListSyncs", byID, paged)
	_, err := s.ListSyncs(ctx, functions.SyncFilter{})
	wantErr(t, "ListSyncs(no environment)", err, store.ErrInvalid)
	_, err = s.ListSyncs(ctx, functions.SyncFilter{EnvironmentID: fx.env, AfterID: "x"})
	wantErr(t, "ListSyncs(AfterID not a UUID)", err, store.ErrInvalid)
}

func testUpdateSync(t *testing.T, s Store) {
	ctx := t.Context()
	fx := newSyncFixture(t, s)
	a := fx.sched(fx.c1, "issues", functions.BaseVariant)
	createSyncs(t, s, a)
	u := *a
	runID := uuid.New()
	u.Frequency, u.Interval, u.Paused, u.NextRunAt = "2h", 2*time.Hour, true, nil
	u.LastSyncDate, u.RunID, u.UpdatedAt = atp(40), runID, at(41)
	// What UpdateSync does not replace.
	u.Name, u.Variant, u.ConnectionRef, u.Integration, u.CreatedAt = "other", "v9", "x", "y", at(77)
	must(t, s.UpdateSync(ctx, &u))
	if u.Version != 2 {
		t.Errorf("UpdateSync set Version %d, want 2", u.Version)
	}
	want := *a
	want.Frequency, want.Interval, want.Paused, want.NextRunAt = "2h", 2*time.Hour, true, nil
	want.LastSyncDate, want.RunID, want.UpdatedAt, want.Version = atp(40), runID, at(41), 2
	got, err := s.GetSyncByID(ctx, a.ID)
	must(t, err)
	fdiff(t, "sync after UpdateSync", &want, got)

	// The stale version is refused and changes nothing.
	stale := *a
	stale.Frequency = "stale"
	wantErr(t, "UpdateSync(stale)", s.UpdateSync(ctx, &stale), store.ErrConflict)
	if stale.Version != 1 {
		t.Errorf("a refused UpdateSync set Version %d, want it left at 1", stale.Version)
	}
	got, err = s.GetSyncByID(ctx, a.ID)
	must(t, err)
	fdiff(t, "sync after a stale UpdateSync", &want, got)

	// Back to no run, due again.
	got.RunID, got.NextRunAt, got.Paused = "", atp(50), false
	must(t, s.UpdateSync(ctx, got))
	again, err := s.GetSyncByID(ctx, a.ID)
	must(t, err)
	if again.RunID != "" || again.Version != 3 || again.NextRunAt == nil || !again.NextRunAt.Equal(at(50)) {
		t.Errorf("after clearing RunID: RunID %q, Version %d, NextRunAt %v", again.RunID, again.Version, again.NextRunAt)
	}

	missing := *a
	missing.ID = uuid.New()
	wantErr(t, "UpdateSync(missing)", s.UpdateSync(ctx, &missing), store.ErrNotFound)
	badRun := *again
	badRun.RunID = "run-1"
	wantErr(t, "UpdateSync(RunID not a UUID)", s.UpdateSync(ctx, &badRun), store.ErrInvalid)
}

func testDeleteSync(t *testing.T, s Store) {
	ctx := t.Context()
	fx := newSyncFixture(t, s)
	a, b := fx.sched(fx.c1, "issues", functions.BaseVariant), fx.sched(fx.c1, "issues", "v1")
	createSyncs(t, s, a, b)
	ra := createRun(t, s, newRunValue(a.ID, functions.RunSuccess, at(1)))
	rb := createRun(t, s, newRunValue(b.ID, functions.RunSuccess, at(1)))
	must(t, s.DeleteSync(ctx, a.ID))
	_, err := s.GetSyncByID(ctx, a.ID)
	wantErr(t, "GetSyncByID after DeleteSync", err, store.ErrNotFound)
	_, err = s.GetSync(ctx, fx.c1, "issues", functions.BaseVariant)
	wantErr(t, "GetSync after DeleteSync", err, store.ErrNotFound)
	_, err = s.GetSyncRun(ctx, ra.ID)
	wantErr(t, "GetSyncRun of a deleted sync", err, store.ErrNotFound)
	if _, err := s.GetSyncRun(ctx, rb.ID); err != nil {
		t.Errorf("run of another sync: %v", err)
	}
	wantErr(t, "DeleteSync again", s.DeleteSync(ctx, a.ID), store.ErrNotFound)
	// The identity is free again.
	createSyncs(t, s, fx.sched(fx.c1, "issues", functions.BaseVariant))
}

func testCountSyncVariants(t *testing.T, s Store) {
	ctx := t.Context()
	fx := newSyncFixture(t, s)
	createSyncs(t, s, fx.sched(fx.c1, "issues", functions.BaseVariant), fx.sched(fx.c1, "issues", "v1"),
		fx.sched(fx.c1, "issues", "v2"), fx.sched(fx.c1, "pulls", "v1"), fx.sched(fx.c2, "issues", "v1"))
	for _, tc := range []struct {
		conn int64
		name string
		want int
	}{{fx.c1, "issues", 2}, {fx.c1, "pulls", 1}, {fx.c2, "issues", 1}, {fx.c2, "pulls", 0}, {fx.c1, "other", 0}} {
		n, err := s.CountSyncVariants(ctx, tc.conn, tc.name)
		must(t, err)
		if n != tc.want {
			t.Errorf("CountSyncVariants(%d, %s) = %d, want %d", tc.conn, tc.name, n, tc.want)
		}
	}
}

// claim runs ClaimDueSyncs in a transaction and returns the names of the
// syncs claimed, in order.
func claim(t *testing.T, s Store, now time.Time, limit int) []string {
	t.Helper()
	var names []string
	must(t, s.WithTx(t.Context(), func(ctx context.Context) error {
		got, err := s.ClaimDueSyncs(ctx, now, limit)
		if err != nil {
			return err
		}
		for _, sy := range got {
			names = append(names, sy.Name)
		}
		return nil
	}))
	return names
}

func testClaimDueSyncs(t *testing.T, s Store) {
	ctx := t.Context()
	fx := newSyncFixture(t, s)
	other := newEnv(t, s, "prod")
	newIntegration(t, s, other.ID, "github")
	oc := newConn(t, s, other.ID, "github", "u1", nil)
	mk := func(name string, next *time.Time, paused bool, run string) *functions.Schedule {
		sy := fx.sched(fx.c1, name, functions.BaseVariant)
		sy.NextRunAt, sy.Paused, sy.RunID = next, paused, run
		return sy
	}
	due3 := mk("due-3", atp(30), false, "")
	createSyncs(t, s,
		mk("due-2", atp(20), false, ""),
		due3,
		mk("due-1", atp(10), false, ""),
		mk("due-now", atp(40), false, ""),
		mk("later", atp(41), false, ""),
		mk("paused", atp(5), true, ""),
		mk("running", atp(5), false, uuid.New()),
		mk("unscheduled", nil, false, ""),
	)
	// Another environment's syncs are claimed too: claims serve every
	// environment.
	o := newScheduleValue(other.ID, oc.ID, "github", "u1", "other-env", functions.BaseVariant)
	o.NextRunAt = atp(15)
	createSyncs(t, s, o)

	diff(t, "claimed at 40", []string{"due-1", "other-env", "due-2", "due-3", "due-now"}, claim(t, s, at(40), 0))
	diff(t, "claimed at 40, limit 2", []string{"due-1", "other-env"}, claim(t, s, at(40), 2))
	diff(t, "claimed at 9", []string(nil), claim(t, s, at(9), 10))
	// Claimed syncs come whole.
	must(t, s.WithTx(ctx, func(ctx context.Context) error {
		got, err := s.ClaimDueSyncs(ctx, at(30), 4)
		if err != nil {
			return err
		}
		if len(got) != 4 {
			return fmt.Errorf("claimed %d syncs, want 4", len(got))
		}
		fdiff(t, "claimed sync", due3, got[3])
		// The caller gives them a run: they are no longer claimable.
		for _, sy := range got {
			sy.RunID = uuid.New()
			if err := s.UpdateSync(ctx, sy); err != nil {
				return err
			}
		}
		return nil
	}))
	diff(t, "claimed at 40 after the runs", []string{"due-now"}, claim(t, s, at(40), 0))
	diff(t, "claimed at 100 after the runs", []string{"due-now", "later"}, claim(t, s, at(100), 0))
}

func testClaimDueSyncsOutsideTx(t *testing.T, s Store) {
	ctx := t.Context()
	fx := newSyncFixture(t, s)
	createSyncs(t, s, fx.sched(fx.c1, "issues", functions.BaseVariant))
	if got, err := s.ClaimDueSyncs(ctx, at(100), 10); err == nil {
		t.Errorf("ClaimDueSyncs outside a transaction returned %d syncs and no error, want an error", len(got))
	}
	var ended context.Context
	must(t, s.WithTx(ctx, func(ctx context.Context) error {
		ended = ctx
		return nil
	}))
	if got, err := s.ClaimDueSyncs(ended, at(100), 10); err == nil {
		t.Errorf("ClaimDueSyncs with the context of an ended transaction returned %d syncs and no error, want an error", len(got))
	}
}

// testClaimDueSyncsConcurrent has transactions A and B claim two of four
// due syncs each, and each hold its claim until both have claimed (when
// the store runs them side by side), then give their syncs a run. No sync
// may be claimed twice. A store whose transactions run side by side must
// let B claim while A holds its syncs (skipping them): B's start is
// detected, and A then waits for B's claim, failing if it never comes. A
// store that serialises transactions never starts B while A runs; A goes
// on after a second.
func testClaimDueSyncsConcurrent(t *testing.T, s Store) {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	fx := newSyncFixture(t, s)
	var due []*functions.Schedule
	for i := range 4 {
		sy := fx.sched([]int64{fx.c1, fx.c2}[i%2], fmt.Sprintf("sync-%d", i), functions.BaseVariant)
		sy.NextRunAt = atp(i)
		due = append(due, sy)
	}
	createSyncs(t, s, due...)

	claimAndRun := func(ctx context.Context) ([]string, error) {
		got, err := s.ClaimDueSyncs(ctx, at(10), 2)
		if err != nil {
			return nil, err
		}
		var ids []string
		for _, sy := range got {
			ids = append(ids, sy.ID)
		}
		return ids, nil
	}
	mark := func(ctx context.Context, ids []string) error {
		for _, id := range ids {
			sy, err := s.GetSyncByID(ctx, id)
			if err != nil {
				return err
			}
			sy.RunID = uuid.New()
			if err := s.UpdateSync(ctx, sy); err != nil {
				return err
			}
		}
		return nil
	}

	aClaimed := make(chan struct{})
	bStarted := make(chan struct{})
	bClaimed := make(chan struct{})
	var concurrent atomic.Bool
	var aIDs, bIDs []string
	aErr := make(chan error, 1)
	go func() {
		aErr <- s.WithTx(ctx, func(ctx context.Context) error {
			ids, err := claimAndRun(ctx)
			if err != nil {
				return err
			}
			aIDs = ids
			close(aClaimed)
			select {
			case <-bStarted:
				concurrent.Store(true)
				select {
				case <-bClaimed:
				case <-time.After(15 * time.Second):
					return errors.New("B's claim waited for A's transaction: ClaimDueSyncs must skip the syncs another transaction holds")
				}
			case <-time.After(time.Second):
			case <-ctx.Done():
				return ctx.Err()
			}
			return mark(ctx, ids)
		})
	}()
	select {
	case <-aClaimed:
	case err := <-aErr:
		t.Fatalf("transaction A: %v", err)
	}
	bErr := s.WithTx(ctx, func(ctx context.Context) error {
		close(bStarted)
		ids, err := claimAndRun(ctx)
		if err != nil {
			return err
		}
		bIDs = ids
		close(bClaimed)
		return mark(ctx, ids)
	})
	if err := <-aErr; err != nil {
		t.Fatalf("transaction A: %v", err)
	}
	must(t, bErr)
	t.Logf("transactions ran side by side: %v", concurrent.Load())
	if len(aIDs) != 2 || len(bIDs) != 2 {
		t.Errorf("A claimed %d syncs and B %d, want 2 each", len(aIDs), len(bIDs))
	}
	var want, got []string
	for _, sy := range due {
		want = append(want, sy.ID)
	}
	got = append(append(got, aIDs...), bIDs...)
	slices.Sort(want)
	slices.Sort(got)
	diff(t, "syncs claimed by A and B", want, got)
	if left := claim(t, s, at(100), 0); len(left) != 0 {
		t.Errorf("after both claims, %v are still claimable", left)
	}
}

func testSyncsConnectionDeleted(t *testing.T, s Store) {
	ctx := t.Context()
	fx := newSyncFixture(t, s)
	a, b := fx.sched(fx.c1, "issues", functions.BaseVariant), fx.sched(fx.c1, "issues", "v1")
	kept := fx.sched(fx.c2, "issues", functions.BaseVariant)
	createSyncs(t, s, a, b, kept)
	ra := createRun(t, s, newRunValue(a.ID, functions.RunSuccess, at(1)))
	rk := createRun(t, s, newRunValue(kept.ID, functions.RunSuccess, at(1)))
	for _, conn := range []int64{fx.c1, fx.c2} {
		for _, key := range []string{"sync:issues:base", "sync:issues:v1"} {
			_, err := s.PutCheckpoint(ctx, conn, key, json.RawMessage(`{"n":1}`), 0, at(1))
			must(t, err)
		}
	}
	must(t, s.DeleteConnection(ctx, fx.env, "github", "u1"))
	for _, sy := range []*functions.Schedule{a, b} {
		_, err := s.GetSyncByID(ctx, sy.ID)
		wantErr(t, "GetSyncByID of a deleted connection's sync", err, store.ErrNotFound)
	}
	_, err := s.GetSyncRun(ctx, ra.ID)
	wantErr(t, "GetSyncRun of a deleted connection's sync", err, store.ErrNotFound)
	_, err = s.GetCheckpoint(ctx, fx.c1, "sync:issues:base")
	wantErr(t, "GetCheckpoint of a deleted connection", err, store.ErrNotFound)
	// The same connection id created again is another connection row,
	// without the old one's syncs and checkpoints.
	c1 := newConn(t, s, fx.env, "github", "u1", nil)
	if _, err := s.GetSync(ctx, c1.ID, "issues", functions.BaseVariant); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetSync of the recreated connection: %v, want ErrNotFound", err)
	}
	// The other connection keeps its own.
	if _, err := s.GetSyncByID(ctx, kept.ID); err != nil {
		t.Errorf("sync of another connection: %v", err)
	}
	if _, err := s.GetSyncRun(ctx, rk.ID); err != nil {
		t.Errorf("run of another connection's sync: %v", err)
	}
	for _, key := range []string{"sync:issues:base", "sync:issues:v1"} {
		if _, err := s.GetCheckpoint(ctx, fx.c2, key); err != nil {
			t.Errorf("checkpoint %s of another connection: %v", key, err)
		}
	}
}

func testSyncsIntegrationDeleted(t *testing.T, s Store) {
	ctx := t.Context()
	fx := newSyncFixture(t, s)
	newIntegration(t, s, fx.env, "gitlab")
	gl := newConn(t, s, fx.env, "gitlab", "u1", nil)
	a, b := fx.sched(fx.c1, "issues", functions.BaseVariant), fx.sched(fx.c2, "issues", functions.BaseVariant)
	kept := newScheduleValue(fx.env, gl.ID, "gitlab", "u1", "issues", functions.BaseVariant)
	createSyncs(t, s, a, b, kept)
	ra := createRun(t, s, newRunValue(a.ID, functions.RunQueued, at(1)))
	for _, conn := range []int64{fx.c1, gl.ID} {
		_, err := s.PutCheckpoint(ctx, conn, "sync:issues:base", json.RawMessage(`{"n":1}`), 0, at(1))
		must(t, err)
	}
	must(t, s.DeleteIntegration(ctx, fx.env, "github"))
	for _, sy := range []*functions.Schedule{a, b} {
		_, err := s.GetSyncByID(ctx, sy.ID)
		wantErr(t, "GetSyncByID of a deleted integration's sync", err, store.ErrNotFound)
	}
	_, err := s.GetSyncRun(ctx, ra.ID)
	wantErr(t, "GetSyncRun of a deleted integration's sync", err, store.ErrNotFound)
	_, err = s.GetCheckpoint(ctx, fx.c1, "sync:issues:base")
	wantErr(t, "GetCheckpoint of a deleted integration's connection", err, store.ErrNotFound)
	if _, err := s.GetSyncByID(ctx, kept.ID); err != nil {
		t.Errorf("sync of another integration: %v", err)
	}
	if _, err := s.GetCheckpoint(ctx, gl.ID, "sync:issues:base"); err != nil {
		t.Errorf("checkpoint of another integration's connection: %v", err)
	}
	if claimed := claim(t, s, at(100), 0); len(claimed) != 1 || claimed[0] != "issues" {
		t.Errorf("claimable syncs after DeleteIntegration: %v, want only gitlab's", claimed)
	}
}

func testSyncCopies(t *testing.T, s Store) {
	ctx := t.Context()
	fx := newSyncFixture(t, s)
	a := fx.sched(fx.c1, "issues", functions.BaseVariant)
	a.LastSyncDate = atp(1)
	createSyncs(t, s, a)
	want, err := s.GetSyncByID(ctx, a.ID)
	must(t, err)
	*a.NextRunAt = at(500)
	*a.LastSyncDate = at(500)
	got, err := s.GetSyncByID(ctx, a.ID)
	must(t, err)
	*got.NextRunAt = at(600)
	list, err := s.ListSyncs(ctx, functions.SyncFilter{EnvironmentID: fx.env})
	must(t, err)
	*list[0].LastSyncDate = at(700)
	must(t, s.WithTx(ctx, func(ctx context.Context) error {
		claimed, err := s.ClaimDueSyncs(ctx, at(100), 1)
		if err == nil && len(claimed) == 1 {
			*claimed[0].NextRunAt = at(800)
		}
		return err
	}))
	got, err = s.GetSyncByID(ctx, a.ID)
	must(t, err)
	fdiff(t, "sync after the caller changed its copies", want, got)

	r := newRunValue(a.ID, functions.RunSuccess, at(1))
	r.Result = map[string]functions.ModelResult{"Issue": {Added: 1}}
	r.CheckpointTo = json.RawMessage(`{"page":2}`)
	r.FinishedAt = atp(2)
	createRun(t, s, r)
	wantRun, err := s.GetSyncRun(ctx, r.ID)
	must(t, err)
	r.Result["Issue"] = functions.ModelResult{Added: 9}
	r.CheckpointTo[2] = 'X'
	*r.FinishedAt = at(9)
	gotRun, err := s.GetSyncRun(ctx, r.ID)
	must(t, err)
	gotRun.Result["Other"] = functions.ModelResult{}
	*gotRun.FinishedAt = at(9)
	latest, err := s.LatestSyncRuns(ctx, []string{a.ID})
	must(t, err)
	latest[a.ID].CheckpointTo[2] = 'Y'
	gotRun, err = s.GetSyncRun(ctx, r.ID)
	must(t, err)
	fdiff(t, "run after the caller changed its copies", wantRun, gotRun)
}

// ---- Sync runs ----

func testSyncRunCreateGetUpdate(t *testing.T, s Store) {
	ctx := t.Context()
	fx := newSyncFixture(t, s)
	a := fx.sched(fx.c1, "issues", functions.BaseVariant)
	createSyncs(t, s, a)
	r := &functions.SyncRun{
		ID: uuid.New(), SyncID: a.ID, Status: functions.RunQueued, Type: "INITIAL", Trigger: "manual",
		Reset: true, EmptyCache: true, LogID: "log-1", CreatedAt: at(1), Version: 9,
	}
	given := *r
	must(t, s.CreateSyncRun(ctx, r))
	if r.Version != 1 {
		t.Errorf("CreateSyncRun set Version %d, want 1", r.Version)
	}
	want := given
	want.Version = 1
	got, err := s.GetSyncRun(ctx, r.ID)
	must(t, err)
	fdiff(t, "GetSyncRun", &want, got)

	// Every mutable field changes; ID, SyncID, Trigger and CreatedAt stay.
	u := *got
	other := fx.sched(fx.c2, "issues", functions.BaseVariant)
	createSyncs(t, s, other)
	superseded := uuid.New()
	u.SyncID, u.Trigger, u.CreatedAt = other.ID, "webhook", at(99)
	u.Status, u.Type, u.Reset, u.EmptyCache, u.LogID = functions.RunStopped, "INCREMENTAL", false, false, "log-2"
	u.StartedAt, u.FinishedAt, u.HeartbeatAt, u.CancelRequested = atp(2), atp(4), atp(3), true
	u.Supersedes = superseded
	u.Result = map[string]functions.ModelResult{"Issue": {Added: 3, Updated: 2, Deleted: 1}, "Comment": {}}
	u.CheckpointFrom, u.CheckpointTo, u.CheckpointsTouched = json.RawMessage(`null`), json.RawMessage(`{"page": 2, "cursor": "abc"}`), true
	u.Error = json.RawMessage(`{"type":"script_error","description":"boom","payload":{"a":[1,2]}}`)
	must(t, s.UpdateSyncRun(ctx, &u))
	if u.Version != 2 {
		t.Errorf("UpdateSyncRun set Version %d, want 2", u.Version)
	}
	want = u
	want.SyncID, want.Trigger, want.CreatedAt = a.ID, "manual", at(1)
	got, err = s.GetSyncRun(ctx, r.ID)
	must(t, err)
	fdiff(t, "run after UpdateSyncRun", &want, got)

	// And back to empty values.
	got.Result, got.CheckpointFrom, got.CheckpointTo, got.Error, got.Supersedes = nil, nil, nil, nil, ""
	got.StartedAt, got.FinishedAt, got.HeartbeatAt = nil, nil, nil
	must(t, s.UpdateSyncRun(ctx, got))
	again, err := s.GetSyncRun(ctx, r.ID)
	must(t, err)
	fdiff(t, "run after clearing its fields", got, again)
	if again.Result != nil || again.CheckpointTo != nil || again.Error != nil {
		t.Errorf("cleared fields came back as Result %v, CheckpointTo %q, Error %q; want nil", again.Result, again.CheckpointTo, again.Error)
	}

	stale := want
	stale.Status = functions.RunRunning
	wantErr(t, "UpdateSyncRun(stale)", s.UpdateSyncRun(ctx, &stale), store.ErrConflict)
	if stale.Version != 2 {
		t.Errorf("a refused UpdateSyncRun set Version %d, want it left at 2", stale.Version)
	}
	got, err = s.GetSyncRun(ctx, r.ID)
	must(t, err)
	fdiff(t, "run after a stale UpdateSyncRun", again, got)
	missing := want
	missing.ID = uuid.New()
	wantErr(t, "UpdateSyncRun(missing)", s.UpdateSyncRun(ctx, &missing), store.ErrNotFound)
	_, err = s.GetSyncRun(ctx, uuid.New())
	wantErr(t, "GetSyncRun(unknown)", err, store.ErrNotFound)
	_, err = s.GetSyncRun(ctx, "run-1")
	wantErr(t, "GetSyncRun(not a UUID)", err, store.ErrInvalid)
}

func testSyncRunCreateRefused(t *testing.T, s Store) {
	ctx := t.Context()
	fx := newSyncFixture(t, s)
	a := fx.sched(fx.c1, "issues", functions.BaseVariant)
	createSyncs(t, s, a)
	r := createRun(t, s, newRunValue(a.ID, functions.RunQueued, at(1)))
	dup := newRunValue(a.ID, functions.RunRunning, at(2))
	dup.ID = r.ID
	wantErr(t, "CreateSyncRun(ID taken)", s.CreateSyncRun(ctx, dup), store.ErrConflict)
	got, err := s.GetSyncRun(ctx, r.ID)
	must(t, err)
	if got.Status != functions.RunQueued {
		t.Errorf("a refused CreateSyncRun changed the run's status to %s", got.Status)
	}
	wantErr(t, "CreateSyncRun(missing sync)", s.CreateSyncRun(ctx, newRunValue(uuid.New(), functions.RunQueued, at(1))), store.ErrNotFound)
	bad := newRunValue(a.ID, functions.RunQueued, at(1))
	bad.ID = "run-1"
	wantErr(t, "CreateSyncRun(ID not a UUID)", s.CreateSyncRun(ctx, bad), store.ErrInvalid)
	bad = newRunValue(a.ID, functions.RunQueued, at(1))
	bad.Error = json.RawMessage(`{"type":`)
	wantErr(t, "CreateSyncRun(bad JSON)", s.CreateSyncRun(ctx, bad), store.ErrInvalid)
	bad = newRunValue(a.ID, functions.RunQueued, at(1))
	bad.Supersedes = "x"
	wantErr(t, "CreateSyncRun(Supersedes not a UUID)", s.CreateSyncRun(ctx, bad), store.ErrInvalid)
	latest, err := s.LatestSyncRuns(ctx, []string{a.ID})
	must(t, err)
	if l := latest[a.ID]; l == nil || l.ID != r.ID {
		t.Errorf("after refused creations the latest run is %v, want %s", l, r.ID)
	}
}

func testLatestSyncRuns(t *testing.T, s Store) {
	ctx := t.Context()
	fx := newSyncFixture(t, s)
	a, b, c := fx.sched(fx.c1, "issues", functions.BaseVariant), fx.sched(fx.c1, "issues", "v1"),
		fx.sched(fx.c2, "issues", functions.BaseVariant)
	createSyncs(t, s, a, b, c)
	finished := func(r *functions.SyncRun, at *time.Time) *functions.SyncRun {
		r.FinishedAt = at
		return r
	}
	// a: two finished runs, then a running one; two runs share the
	// latest CreatedAt, and the greater ID wins.
	createRun(t, s, finished(newRunValue(a.ID, functions.RunSuccess, at(1)), atp(2)))
	aStopped := createRun(t, s, finished(newRunValue(a.ID, functions.RunStopped, at(3)), atp(4)))
	tie1 := newRunValue(a.ID, functions.RunRunning, at(5))
	tie2 := newRunValue(a.ID, functions.RunQueued, at(5))
	if tie1.ID < tie2.ID {
		tie1, tie2 = tie2, tie1
	}
	createRun(t, s, tie1) // the greater ID, created first
	createRun(t, s, tie2)
	// b: only a running run.
	bRunning := createRun(t, s, newRunValue(b.ID, functions.RunRunning, at(1)))
	// c: a success created after a stopped one that finished later.
	createRun(t, s, finished(newRunValue(c.ID, functions.RunStopped, at(1)), atp(9)))
	cSuccess := createRun(t, s, finished(newRunValue(c.ID, functions.RunSuccess, at(2)), atp(3)))
	// d: a sync without runs.
	d := fx.sched(fx.c2, "pulls", functions.BaseVariant)
	createSyncs(t, s, d)

	ids := func(m map[string]*functions.SyncRun) map[string]string {
		out := map[string]string{}
		for k, r := range m {
			if r.SyncID != k {
				t.Errorf("run %s of sync %s listed under sync %s", r.ID, r.SyncID, k)
			}
			out[k] = r.ID
		}
		return out
	}
	latest, err := s.LatestSyncRuns(ctx, []string{a.ID, b.ID, c.ID, d.ID})
	must(t, err)
	diff(t, "LatestSyncRuns", map[string]string{a.ID: tie1.ID, b.ID: bRunning.ID, c.ID: cSuccess.ID}, ids(latest))
	stored, err := s.GetSyncRun(ctx, tie1.ID)
	must(t, err)
	fdiff(t, "latest run of a", stored, latest[a.ID])
	fin, err := s.LatestFinishedSyncRuns(ctx, []string{a.ID, b.ID, c.ID, d.ID})
	must(t, err)
	diff(t, "LatestFinishedSyncRuns", map[string]string{a.ID: aStopped.ID, c.ID: cSuccess.ID}, ids(fin))
	// Only the syncs asked about.
	some, err := s.LatestSyncRuns(ctx, []string{b.ID})
	must(t, err)
	diff(t, "LatestSyncRuns(b)", map[string]string{b.ID: bRunning.ID}, ids(some))
	none, err := s.LatestSyncRuns(ctx, nil)
	must(t, err)
	if len(none) != 0 {
		t.Errorf("LatestSyncRuns(nil) returned %d runs", len(none))
	}
	_, err = s.LatestFinishedSyncRuns(ctx, []string{"x"})
	wantErr(t, "LatestFinishedSyncRuns(not a UUID)", err, store.ErrInvalid)
}

func testStaleSyncRuns(t *testing.T, s Store) {
	ctx := t.Context()
	fx := newSyncFixture(t, s)
	a := fx.sched(fx.c1, "issues", functions.BaseVariant)
	createSyncs(t, s, a)
	mk := func(status string, created int, heartbeat *time.Time) *functions.SyncRun {
		r := newRunValue(a.ID, status, at(created))
		r.HeartbeatAt = heartbeat
		return createRun(t, s, r)
	}
	runningOld := mk(functions.RunRunning, 1, atp(20))
	mk(functions.RunRunning, 1, atp(50)) // heartbeat fresh
	mk(functions.RunRunning, 1, nil)     // no heartbeat: never stale
	queuedOld := mk(functions.RunQueued, 10, nil)
	mk(functions.RunQueued, 40, nil)    // created after
	mk(functions.RunQueued, 30, atp(1)) // a queued run's heartbeat does not count
	mk(functions.RunSuccess, 1, atp(1)) // finished
	mk(functions.RunStopped, 1, atp(1)) // finished
	runningOldest := mk(functions.RunRunning, 35, atp(5))

	names := func(rs []*functions.SyncRun) []string {
		out := []string{}
		for _, r := range rs {
			out = append(out, r.ID)
		}
		return out
	}
	got, err := s.StaleSyncRuns(ctx, at(30), 0)
	must(t, err)
	diff(t, "StaleSyncRuns(30)", []string{runningOldest.ID, queuedOld.ID, runningOld.ID}, names(got))
	got, err = s.StaleSyncRuns(ctx, at(30), 2)
	must(t, err)
	diff(t, "StaleSyncRuns(30, limit 2)", []string{runningOldest.ID, queuedOld.ID}, names(got))
	if len(got) > 0 {
		stored, err := s.GetSyncRun(ctx, runningOldest.ID)
		must(t, err)
		fdiff(t, "stale run", stored, got[0])
	}
	got, err = s.StaleSyncRuns(ctx, at(5), 0)
	must(t, err)
	diff(t, "StaleSyncRuns(5): strictly before", []string{}, names(got))
}

func testDeleteSyncRunsBefore(t *testing.T, s Store) {
	ctx := t.Context()
	fx := newSyncFixture(t, s)
	a, b := fx.sched(fx.c1, "issues", functions.BaseVariant), fx.sched(fx.c2, "issues", functions.BaseVariant)
	createSyncs(t, s, a, b)
	run := func(sync string, status string, created int, finished *time.Time) *functions.SyncRun {
		r := newRunValue(sync, status, at(created))
		r.FinishedAt = finished
		return createRun(t, s, r)
	}
	a1 := run(a.ID, functions.RunSuccess, 1, atp(3))
	a2 := run(a.ID, functions.RunStopped, 2, atp(2)) // finished first
	a3 := run(a.ID, functions.RunSuccess, 4, atp(5))
	aLatest := run(a.ID, functions.RunStopped, 6, atp(7)) // the latest finished: kept, however old
	aRunning := run(a.ID, functions.RunRunning, 8, nil)
	aLate := run(a.ID, functions.RunSuccess, 0, atp(40)) // finished after the cut-off, created first
	bOnly := run(b.ID, functions.RunSuccess, 1, atp(2))  // b's latest finished: kept

	exists := func(r *functions.SyncRun) bool {
		_, err := s.GetSyncRun(ctx, r.ID)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			t.Fatal(err)
		}
		return err == nil
	}
	n, err := s.DeleteSyncRunsBefore(ctx, at(30), 1)
	must(t, err)
	if n != 1 || exists(a2) || !exists(a1) {
		t.Errorf("DeleteSyncRunsBefore(limit 1) deleted %d; a2 (finished first) exists: %v, a1 exists: %v", n, exists(a2), exists(a1))
	}
	n, err = s.DeleteSyncRunsBefore(ctx, at(30), 0)
	must(t, err)
	if n != 2 {
		t.Errorf("DeleteSyncRunsBefore(30) deleted %d runs, want 2", n)
	}
	for _, r := range []*functions.SyncRun{a1, a3} {
		if exists(r) {
			t.Errorf("run created at %v finished at %v was kept", r.CreatedAt, r.FinishedAt)
		}
	}
	for _, r := range []*functions.SyncRun{aLatest, aRunning, aLate, bOnly} {
		if !exists(r) {
			t.Errorf("run %s (%s) created at %v was deleted", r.ID, r.Status, r.CreatedAt)
		}
	}
	n, err = s.DeleteSyncRunsBefore(ctx, at(30), 0)
	must(t, err)
	if n != 0 {
		t.Errorf("DeleteSyncRunsBefore again deleted %d runs, want 0", n)
	}
	fin, err := s.LatestFinishedSyncRuns(ctx, []string{a.ID, b.ID})
	must(t, err)
	if fin[a.ID] == nil || fin[a.ID].ID != aLatest.ID || fin[b.ID] == nil || fin[b.ID].ID != bOnly.ID {
		t.Errorf("latest finished runs after retention: %v", fin)
	}
}

// ---- Checkpoints ----

func testCheckpointVersions(t *testing.T, s Store) {
	ctx := t.Context()
	fx := newSyncFixture(t, s)
	const key = "sync:issues:base"
	v, err := s.PutCheckpoint(ctx, fx.c1, key, json.RawMessage(`{"cursor":"a","n":1}`), 0, at(1))
	must(t, err)
	if v != 1 {
		t.Errorf("first PutCheckpoint returned version %d, want 1", v)
	}
	got, err := s.GetCheckpoint(ctx, fx.c1, key)
	must(t, err)
	fdiff(t, "GetCheckpoint", &functions.StoredCheckpoint{Value: json.RawMessage(`{"n": 1, "cursor": "a"}`), Version: 1, UpdatedAt: at(1)}, got)

	_, err = s.PutCheckpoint(ctx, fx.c1, key, json.RawMessage(`{"x":1}`), 0, at(2))
	wantErr(t, "PutCheckpoint(expected 0, one stored)", err, store.ErrConflict)
	v, err = s.PutCheckpoint(ctx, fx.c1, key, json.RawMessage(`{"cursor":"b"}`), 1, at(3))
	must(t, err)
	if v != 2 {
		t.Errorf("second PutCheckpoint returned version %d, want 2", v)
	}
	for _, stale := range []int64{1, 3, -1} {
		_, err = s.PutCheckpoint(ctx, fx.c1, key, json.RawMessage(`{"x":1}`), stale, at(4))
		wantErr(t, fmt.Sprintf("PutCheckpoint(expected %d, stored 2)", stale), err, store.ErrConflict)
	}
	_, err = s.PutCheckpoint(ctx, fx.c1, "sync:other:base", json.RawMessage(`{"x":1}`), 1, at(4))
	wantErr(t, "PutCheckpoint(expected 1, none stored)", err, store.ErrConflict)
	got, err = s.GetCheckpoint(ctx, fx.c1, key)
	must(t, err)
	fdiff(t, "checkpoint after refused writes", &functions.StoredCheckpoint{Value: json.RawMessage(`{"cursor":"b"}`), Version: 2, UpdatedAt: at(3)}, got)

	// Keys and connections are apart.
	for _, k := range []struct {
		conn int64
		key  string
	}{{fx.c2, key}, {fx.c1, "sync:issues:v1"}, {fx.c1, "Sync:issues:base"}} {
		_, err := s.GetCheckpoint(ctx, k.conn, k.key)
		wantErr(t, fmt.Sprintf("GetCheckpoint(%d, %s)", k.conn, k.key), err, store.ErrNotFound)
	}
	v, err = s.PutCheckpoint(ctx, fx.c2, key, json.RawMessage(`{}`), 0, at(5))
	must(t, err)
	if v != 1 {
		t.Errorf("PutCheckpoint of another connection returned version %d, want 1", v)
	}
	// Deleted, then written again: from version 1.
	must(t, s.DeleteCheckpoint(ctx, fx.c1, key, 2))
	v, err = s.PutCheckpoint(ctx, fx.c1, key, json.RawMessage(`{"cursor":"c"}`), 0, at(6))
	must(t, err)
	if v != 1 {
		t.Errorf("PutCheckpoint after DeleteCheckpoint returned version %d, want 1", v)
	}
	// A copy does not alias the store.
	got, err = s.GetCheckpoint(ctx, fx.c1, key)
	must(t, err)
	got.Value[2] = 'X'
	again, err := s.GetCheckpoint(ctx, fx.c1, key)
	must(t, err)
	fdiff(t, "checkpoint after the caller changed its copy", &functions.StoredCheckpoint{Value: json.RawMessage(`{"cursor":"c"}`), Version: 1, UpdatedAt: at(6)}, again)
}

func testDeleteCheckpoint(t *testing.T, s Store) {
	ctx := t.Context()
	fx := newSyncFixture(t, s)
	put := func(key string) {
		t.Helper()
		_, err := s.PutCheckpoint(ctx, fx.c1, key, json.RawMessage(`{"n":1}`), 0, at(1))
		must(t, err)
		_, err = s.PutCheckpoint(ctx, fx.c1, key, json.RawMessage(`{"n":2}`), 1, at(2))
		must(t, err)
	}
	put("a")
	put("b")
	wantErr(t, "DeleteCheckpoint(stale)", s.DeleteCheckpoint(ctx, fx.c1, "a", 1), store.ErrConflict)
	if _, err := s.GetCheckpoint(ctx, fx.c1, "a"); err != nil {
		t.Errorf("checkpoint after a stale DeleteCheckpoint: %v", err)
	}
	must(t, s.DeleteCheckpoint(ctx, fx.c1, "a", 2))
	_, err := s.GetCheckpoint(ctx, fx.c1, "a")
	wantErr(t, "GetCheckpoint after DeleteCheckpoint", err, store.ErrNotFound)
	// Missing: no error, whatever the version.
	must(t, s.DeleteCheckpoint(ctx, fx.c1, "a", 2))
	must(t, s.DeleteCheckpoint(ctx, fx.c1, "a", 0))
	must(t, s.DeleteCheckpoint(ctx, fx.c2+1000, "a", 5))
	// 0 deletes any version.
	must(t, s.DeleteCheckpoint(ctx, fx.c1, "b", 0))
	_, err = s.GetCheckpoint(ctx, fx.c1, "b")
	wantErr(t, "GetCheckpoint after DeleteCheckpoint(0)", err, store.ErrNotFound)
}

func testDeleteCheckpoints(t *testing.T, s Store) {
	ctx := t.Context()
	fx := newSyncFixture(t, s)
	keys := []string{"sync:issues:base", "sync:issues:v1", "sync:issues2:base", "sync:pulls:base", "sync:issues:", "Sync:issues:base", "a%b", "a_b"}
	for _, conn := range []int64{fx.c1, fx.c2} {
		for _, k := range keys {
			_, err := s.PutCheckpoint(ctx, conn, k, json.RawMessage(`{}`), 0, at(1))
			must(t, err)
		}
	}
	left := func(conn int64) []string {
		var out []string
		for _, k := range keys {
			if _, err := s.GetCheckpoint(ctx, conn, k); err == nil {
				out = append(out, k)
			} else if !errors.Is(err, store.ErrNotFound) {
				t.Fatal(err)
			}
		}
		return out
	}
	for _, tc := range []struct {
		prefix string
		n      int
		left   []string
	}{
		{"sync:issues:", 3, []string{"sync:issues2:base", "sync:pulls:base", "Sync:issues:base", "a%b", "a_b"}},
		{"sync:issues:", 0, []string{"sync:issues2:base", "sync:pulls:base", "Sync:issues:base", "a%b", "a_b"}},
		// The prefix is literal.
		{"a_", 1, []string{"sync:issues2:base", "sync:pulls:base", "Sync:issues:base", "a%b"}},
		{"%", 0, []string{"sync:issues2:base", "sync:pulls:base", "Sync:issues:base", "a%b"}},
		{"sync:%", 0, []string{"sync:issues2:base", "sync:pulls:base", "Sync:issues:base", "a%b"}},
		{"", 4, nil},
	} {
		n, err := s.DeleteCheckpoints(ctx, fx.c1, tc.prefix)
		must(t, err)
		if n != tc.n {
			t.Errorf("DeleteCheckpoints(%q) = %d, want %d", tc.prefix, n, tc.n)
		}
		diff(t, fmt.Sprintf("checkpoints left after DeleteCheckpoints(%q)", tc.prefix), tc.left, left(fx.c1))
	}
	diff(t, "another connection's checkpoints", keys, left(fx.c2))
}

func testCheckpointRefused(t *testing.T, s Store) {
	ctx := t.Context()
	fx := newSyncFixture(t, s)
	_, err := s.PutCheckpoint(ctx, fx.c2+1000, "k", json.RawMessage(`{}`), 0, at(1))
	wantErr(t, "PutCheckpoint(missing connection)", err, store.ErrNotFound)
	_, err = s.PutCheckpoint(ctx, fx.c1, "k", nil, 0, at(1))
	wantErr(t, "PutCheckpoint(no value)", err, store.ErrInvalid)
	_, err = s.PutCheckpoint(ctx, fx.c1, "k", json.RawMessage(`{"a":`), 0, at(1))
	wantErr(t, "PutCheckpoint(bad JSON)", err, store.ErrInvalid)
	_, err = s.PutCheckpoint(ctx, fx.c1, "k\x00", json.RawMessage(`{}`), 0, at(1))
	wantErr(t, "PutCheckpoint(NUL in key)", err, store.ErrInvalid)
	_, err = s.GetCheckpoint(ctx, fx.c1, "k")
	wantErr(t, "GetCheckpoint after refused writes", err, store.ErrNotFound)
}

// ---- Action tasks ----

func newTaskValue(env, conn int64) *functions.ActionTask {
	return &functions.ActionTask{
		ID: uuid.New(), EnvironmentID: env, ConnectionID: conn, Integration: "github", ConnectionRef: "u1",
		ActionName: "create-issue", SealedInput: "v1:k1:sealed-input", Status: functions.TaskPending,
		MaxRetries: 3, LogID: "log-1", CreatedAt: ts, UpdatedAt: ts,
	}
}

func testActionTaskCreateGet(t *testing.T, s Store) {
	ctx := t.Context()
	fx := newSyncFixture(t, s)
	other := newEnv(t, s, "prod")
	tk := newTaskValue(fx.env, fx.c1)
	tk.Version = 5
	given := *tk
	must(t, s.CreateActionTask(ctx, tk))
	if tk.Version != 1 {
		t.Errorf("CreateActionTask set Version %d, want 1", tk.Version)
	}
	want := given
	want.Version = 1
	got, err := s.GetActionTask(ctx, fx.env, tk.ID)
	must(t, err)
	fdiff(t, "GetActionTask", &want, got)

	_, err = s.GetActionTask(ctx, other.ID, tk.ID)
	wantErr(t, "GetActionTask(other environment)", err, store.ErrNotFound)
	_, err = s.GetActionTask(ctx, fx.env, uuid.New())
	wantErr(t, "GetActionTask(unknown)", err, store.ErrNotFound)
	_, err = s.GetActionTask(ctx, fx.env, "task-1")
	wantErr(t, "GetActionTask(not a UUID)", err, store.ErrInvalid)

	dup := newTaskValue(other.ID, fx.c1)
	dup.ID = tk.ID
	wantErr(t, "CreateActionTask(ID taken)", s.CreateActionTask(ctx, dup), store.ErrConflict)
	wantErr(t, "CreateActionTask(missing environment)", s.CreateActionTask(ctx, newTaskValue(other.ID+1000, fx.c1)), store.ErrNotFound)
	bad := newTaskValue(fx.env, fx.c1)
	bad.ID = "task-1"
	wantErr(t, "CreateActionTask(ID not a UUID)", s.CreateActionTask(ctx, bad), store.ErrInvalid)
	got, err = s.GetActionTask(ctx, fx.env, tk.ID)
	must(t, err)
	fdiff(t, "task after refused creations", &want, got)

	// A finished task round-trips too.
	done := newTaskValue(fx.env, fx.c2)
	done.Status, done.Attempts, done.SealedOutput, done.FinishedAt = functions.TaskSucceeded, 1, "v1:k1:out", atp(3)
	must(t, s.CreateActionTask(ctx, done))
	got, err = s.GetActionTask(ctx, fx.env, done.ID)
	must(t, err)
	fdiff(t, "GetActionTask(finished)", done, got)
	got.FinishedAt = atp(99)
	*done.FinishedAt = at(98)
	again, err := s.GetActionTask(ctx, fx.env, done.ID)
	must(t, err)
	if !again.FinishedAt.Equal(at(3)) {
		t.Errorf("FinishedAt changed through a copy: %v", again.FinishedAt)
	}
}

func testUpdateActionTask(t *testing.T, s Store) {
	ctx := t.Context()
	fx := newSyncFixture(t, s)
	other := newEnv(t, s, "prod")
	tk := newTaskValue(fx.env, fx.c1)
	must(t, s.CreateActionTask(ctx, tk))
	u := *tk
	u.Status, u.Attempts, u.SealedOutput, u.SealedError = functions.TaskFailed, 2, "v1:k1:out", "v1:k1:err"
	u.ErrorStatus, u.LogID, u.UpdatedAt, u.FinishedAt = 424, "log-2", at(5), atp(6)
	// What UpdateActionTask does not replace.
	u.ConnectionID, u.Integration, u.ConnectionRef, u.ActionName = 77, "x", "y", "z"
	u.SealedInput, u.MaxRetries, u.CreatedAt = "v1:k1:other", 0, at(9)
	must(t, s.UpdateActionTask(ctx, &u))
	if u.Version != 2 {
		t.Errorf("UpdateActionTask set Version %d, want 2", u.Version)
	}
	want := *tk
	want.Status, want.Attempts, want.SealedOutput, want.SealedError = functions.TaskFailed, 2, "v1:k1:out", "v1:k1:err"
	want.ErrorStatus, want.LogID, want.UpdatedAt, want.FinishedAt, want.Version = 424, "log-2", at(5), atp(6), 2
	got, err := s.GetActionTask(ctx, fx.env, tk.ID)
	must(t, err)
	fdiff(t, "task after UpdateActionTask", &want, got)

	stale := *tk
	stale.Status = functions.TaskRunning
	wantErr(t, "UpdateActionTask(stale)", s.UpdateActionTask(ctx, &stale), store.ErrConflict)
	if stale.Version != 1 {
		t.Errorf("a refused UpdateActionTask set Version %d, want it left at 1", stale.Version)
	}
	elsewhere := want
	elsewhere.EnvironmentID = other.ID
	wantErr(t, "UpdateActionTask(other environment)", s.UpdateActionTask(ctx, &elsewhere), store.ErrNotFound)
	missing := want
	missing.ID = uuid.New()
	wantErr(t, "UpdateActionTask(missing)", s.UpdateActionTask(ctx, &missing), store.ErrNotFound)
	got, err = s.GetActionTask(ctx, fx.env, tk.ID)
	must(t, err)
	fdiff(t, "task after refused updates", &want, got)
	// Retried: back to running, not finished.
	got.Status, got.FinishedAt, got.Attempts = functions.TaskRunning, nil, 3
	must(t, s.UpdateActionTask(ctx, got))
	again, err := s.GetActionTask(ctx, fx.env, tk.ID)
	must(t, err)
	fdiff(t, "task after a retry", got, again)
}

func testStaleActionTasks(t *testing.T, s Store) {
	ctx := t.Context()
	fx := newSyncFixture(t, s)
	other := newEnv(t, s, "prod")
	mk := func(env int64, status string, updated int) *functions.ActionTask {
		tk := newTaskValue(env, fx.c1)
		tk.Status, tk.UpdatedAt = status, at(updated)
		must(t, s.CreateActionTask(ctx, tk))
		return tk
	}
	old := mk(fx.env, functions.TaskRunning, 20)
	oldest := mk(other.ID, functions.TaskRunning, 5) // every environment
	mk(fx.env, functions.TaskRunning, 30)            // not strictly before
	mk(fx.env, functions.TaskRunning, 50)            // fresh
	mk(fx.env, functions.TaskPending, 1)             // not running
	mk(fx.env, functions.TaskFailed, 1)              // finished
	mk(fx.env, functions.TaskSucceeded, 1)           // finished
	ids := func(ts []*functions.ActionTask) []string {
		out := []string{}
		for _, tk := range ts {
			out = append(out, tk.ID)
		}
		return out
	}
	got, err := s.StaleActionTasks(ctx, at(30), 0)
	must(t, err)
	diff(t, "StaleActionTasks(30)", []string{oldest.ID, old.ID}, ids(got))
	if len(got) == 2 {
		fdiff(t, "stale task", oldest, got[0])
	}
	got, err = s.StaleActionTasks(ctx, at(30), 1)
	must(t, err)
	diff(t, "StaleActionTasks(30, limit 1)", []string{oldest.ID}, ids(got))
	// A heartbeat (an update) makes a task fresh again.
	old.UpdatedAt = at(60)
	must(t, s.UpdateActionTask(ctx, old))
	got, err = s.StaleActionTasks(ctx, at(30), 0)
	must(t, err)
	diff(t, "StaleActionTasks(30) after a heartbeat", []string{oldest.ID}, ids(got))
}

func testDeleteActionTasksBefore(t *testing.T, s Store) {
	ctx := t.Context()
	fx := newSyncFixture(t, s)
	mk := func(finished *time.Time) *functions.ActionTask {
		tk := newTaskValue(fx.env, fx.c1)
		if finished != nil {
			tk.Status = functions.TaskSucceeded
		}
		tk.FinishedAt = finished
		must(t, s.CreateActionTask(ctx, tk))
		return tk
	}
	second := mk(atp(2))
	first := mk(atp(1))
	third := mk(atp(3))
	pending := mk(nil)
	later := mk(atp(20))
	exists := func(tk *functions.ActionTask) bool {
		_, err := s.GetActionTask(ctx, fx.env, tk.ID)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			t.Fatal(err)
		}
		return err == nil
	}
	n, err := s.DeleteActionTasksBefore(ctx, at(10), 1)
	must(t, err)
	if n != 1 || exists(first) || !exists(second) {
		t.Errorf("DeleteActionTasksBefore(limit 1) deleted %d; first finished exists: %v, second: %v", n, exists(first), exists(second))
	}
	n, err = s.DeleteActionTasksBefore(ctx, at(3), 0)
	must(t, err)
	if n != 1 || exists(second) || !exists(third) {
		t.Errorf("DeleteActionTasksBefore(3) deleted %d; second exists: %v, third (finished at 3) exists: %v", n, exists(second), exists(third))
	}
	n, err = s.DeleteActionTasksBefore(ctx, at(10), 0)
	must(t, err)
	if n != 1 || exists(third) {
		t.Errorf("DeleteActionTasksBefore(10) deleted %d, want 1 (third)", n)
	}
	if !exists(pending) || !exists(later) {
		t.Errorf("pending task kept: %v, task finished later kept: %v; want both", exists(pending), exists(later))
	}
}

func testActionTaskOutlivesConnection(t *testing.T, s Store) {
	ctx := t.Context()
	fx := newSyncFixture(t, s)
	tk := newTaskValue(fx.env, fx.c1)
	must(t, s.CreateActionTask(ctx, tk))
	must(t, s.DeleteConnection(ctx, fx.env, "github", "u1"))
	must(t, s.DeleteIntegration(ctx, fx.env, "github"))
	got, err := s.GetActionTask(ctx, fx.env, tk.ID)
	must(t, err)
	fdiff(t, "task after its connection was deleted", tk, got)
	// A task for a connection that no longer exists can still be created.
	must(t, s.CreateActionTask(ctx, newTaskValue(fx.env, fx.c1)))
}
