package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/functions"
	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/internal/uuid"
	"github.com/embedauth/connect/store"
)

var sealedTests = []test{
	{"KeyIDs", testSealingKeyIDs},
	{"KeyIDsFollowWrites", testSealingKeyIDsFollowWrites},
	{"Forget", testForgetSealingKeyID},
	{"Sample", testSampleSealedValue},
	{"Reseal", testResealValues},
	{"ResealErrors", testResealErrors},
}

// sealedFixture stores one value of every kind, each sealed under the key
// id "<prefix>-<kind>", plus values that are not sealed values at all.
type sealedFixture struct {
	env     *environments.Environment
	ids     map[string]string // key id by kind
	connKey string
	// records is the scope of the records: r1 and r2 sealed, r3 sealed and
	// deleted (its payload stays), r4 pruned (no payload).
	records functions.RecordScope
	// tasks are the ids of three action tasks, each with a sealed input:
	// pending (no output or error), succeeded (an output) and failed (an
	// error body), the last two finished at ts.
	tasks [3]string
}

func newSealedFixture(t *testing.T, s Store, prefix string) *sealedFixture {
	t.Helper()
	ctx := t.Context()
	f := &sealedFixture{ids: map[string]string{}}
	for _, kind := range store.SealedKinds {
		f.ids[kind] = prefix + "-" + strings.ReplaceAll(kind, "_", "-")
	}
	v := func(kind, data string) string { return "v1:" + f.ids[kind] + ":" + data }
	f.env = newEnv(t, s, prefix)
	env := *f.env
	env.SealedWebhookSigningKey = v(store.SealedSigningKey, "sk")
	must(t, s.UpdateEnvironment(ctx, &env))
	must(t, s.SetVariables(ctx, f.env.ID, []environments.Variable{
		{Name: "a", SealedValue: v(store.SealedVariable, "a")},
		{Name: "b", SealedValue: v(store.SealedVariable, "b")},
		{Name: "plain", SealedValue: "not-sealed"},
	}))
	in := newIntegrationValue(f.env.ID, "gh")
	in.SealedCredentials = v(store.SealedIntegrationCredentials, "cr")
	in.SealedCustom = v(store.SealedIntegrationCustom, "cu")
	must(t, s.CreateIntegration(ctx, in))
	empty := newIntegrationValue(f.env.ID, "empty")
	empty.SealedCredentials, empty.SealedCustom = "", ""
	must(t, s.CreateIntegration(ctx, empty))
	f.connKey = "gh"
	for _, id := range []string{"c1", "c2", "c3"} {
		c := newConn(t, s, f.env.ID, "gh", id, nil)
		c.SealedCredentials = v(store.SealedConnectionCredentials, id)
		must(t, s.UpdateConnection(ctx, c))
		if id == "c1" {
			f.records = functions.RecordScope{EnvironmentID: f.env.ID, ConnectionID: c.ID, Model: "Issue", Variant: functions.BaseVariant}
		}
	}
	rec := func(id string) functions.RecordWrite {
		return functions.RecordWrite{ID: id, SealedPayload: v(store.SealedRecordPayload, id), Hash: "h-" + id}
	}
	_, err := s.SaveRecords(ctx, f.records, []functions.RecordWrite{rec("r4")}, ts, 0)
	must(t, err)
	_, _, err = s.PruneRecords(ctx, f.records, 1<<62, 1, ts)
	must(t, err)
	_, err = s.SaveRecords(ctx, f.records, []functions.RecordWrite{rec("r1"), rec("r2"), rec("r3")}, ts, 0)
	must(t, err)
	_, err = s.DeleteRecords(ctx, f.records, []string{"r3"}, ts)
	must(t, err)
	sess := newSessionValue(f.env.ID, prefix, 1800)
	sess.SealedIntegrationsConfigDefaults = v(store.SealedSessionDefaults, "d")
	must(t, s.CreateConnectSession(ctx, sess))
	flow := newFlowValue(f.env.ID, sess.ID, prefix, "client-"+prefix, 900)
	flow.SealedSecrets = v(store.SealedOAuthFlowSecrets, "fs")
	must(t, s.CreateOAuthFlow(ctx, flow))
	// The tasks finish through UpdateActionTask, as the Service's do.
	for i, status := range []string{functions.TaskPending, functions.TaskSucceeded, functions.TaskFailed} {
		tk := &functions.ActionTask{ID: uuid.New(), EnvironmentID: f.env.ID, ConnectionID: f.records.ConnectionID,
			Integration: f.connKey, ConnectionRef: "c1", ActionName: "create-issue",
			SealedInput: v(store.SealedActionInput, fmt.Sprintf("in%d", i)), Status: functions.TaskPending,
			MaxRetries: 1, LogID: "log", CreatedAt: ts, UpdatedAt: ts}
		must(t, s.CreateActionTask(ctx, tk))
		f.tasks[i] = tk.ID
		switch status {
		case functions.TaskSucceeded:
			tk.SealedOutput = v(store.SealedActionOutput, "out")
		case functions.TaskFailed:
			tk.SealedError, tk.ErrorStatus = v(store.SealedActionError, "err"), 424
		default:
			continue
		}
		tk.Status, tk.Attempts, tk.FinishedAt = status, 1, &ts
		must(t, s.UpdateActionTask(ctx, tk))
	}
	return f
}

// task returns the fixture's task i.
func (f *sealedFixture) task(t *testing.T, s Store, i int) *functions.ActionTask {
	t.Helper()
	tk, err := s.GetActionTask(t.Context(), f.env.ID, f.tasks[i])
	must(t, err)
	return tk
}

// wantCounts is what ForgetSealingKeyID counts for the fixture's key of
// kind.
func wantCounts(kind string) map[string]int {
	n := 1
	switch kind {
	case store.SealedVariable:
		n = 2
	case store.SealedConnectionCredentials, store.SealedRecordPayload, store.SealedActionInput:
		n = 3
	}
	return map[string]int{kind: n}
}

func keyIDs(t *testing.T, s Store) []string {
	t.Helper()
	ids, err := s.SealingKeyIDs(t.Context())
	must(t, err)
	if !slices.IsSorted(ids) {
		t.Errorf("SealingKeyIDs are not sorted: %v", ids)
	}
	return ids
}

func testSealingKeyIDs(t *testing.T, s Store) {
	diff(t, "key ids of an empty store", []string{}, keyIDs(t, s))
	f := newSealedFixture(t, s, "p")
	// The fixture's helpers seal a few values under k1 first (the signing
	// key of newEnv, then replaced; the connections of newConn, then
	// updated): a Store may still list it.
	want := []string{}
	for _, id := range f.ids {
		want = append(want, id)
	}
	slices.Sort(want)
	got := slices.DeleteFunc(keyIDs(t, s), func(id string) bool { return id == "k1" })
	diff(t, "key ids", want, got)
}

func testSealingKeyIDsFollowWrites(t *testing.T, s Store) {
	ctx := t.Context()
	f := newSealedFixture(t, s, "p")
	has := func(what, id string) {
		t.Helper()
		if !slices.Contains(keyIDs(t, s), id) {
			t.Errorf("%s: SealingKeyIDs lacks %q", what, id)
		}
	}
	c, err := s.GetConnection(ctx, f.env.ID, f.connKey, "c1")
	must(t, err)
	c.SealedCredentials = "v1:conn-new:x"
	must(t, s.UpdateConnection(ctx, c))
	has("updated connection", "conn-new")

	env, err := s.GetEnvironment(ctx, f.env.ID)
	must(t, err)
	env.SealedWebhookSigningKey = "v1:env-new:x"
	must(t, s.UpdateEnvironment(ctx, env))
	has("updated environment", "env-new")

	must(t, s.SetVariables(ctx, f.env.ID, []environments.Variable{{Name: "a", SealedValue: "v1:var-new:x"}}))
	has("set variables", "var-new")

	in, err := s.GetIntegration(ctx, f.env.ID, "gh")
	must(t, err)
	in.SealedCustom = "v1:custom-new:x"
	must(t, s.UpdateIntegration(ctx, in))
	has("updated integration", "custom-new")

	// A value written in a transaction counts once it commits.
	err = s.WithTx(ctx, func(ctx context.Context) error {
		return s.CreateConnection(ctx, &connections.Connection{EnvironmentID: f.env.ID, IntegrationKey: f.connKey,
			ConnectionID: "in-tx", Provider: "github", AuthMode: integrations.AuthModeOAuth2,
			SealedCredentials: "v1:tx-new:x", CreatedAt: ts, UpdatedAt: ts})
	})
	must(t, err)
	has("connection created in a transaction", "tx-new")

	// Records: added, changed (the payload moves to another key), and in
	// a transaction.
	_, err = s.SaveRecords(ctx, f.records, []functions.RecordWrite{{ID: "new", SealedPayload: "v1:rec-new:x", Hash: "1"}}, ts, 0)
	must(t, err)
	has("saved record", "rec-new")
	_, err = s.SaveRecords(ctx, f.records, []functions.RecordWrite{{ID: "r1", SealedPayload: "v1:rec-changed:x", Hash: "2"}}, ts, 0)
	must(t, err)
	has("changed record", "rec-changed")
	err = s.WithTx(ctx, func(ctx context.Context) error {
		_, err := s.SaveRecords(ctx, f.records, []functions.RecordWrite{{ID: "in-tx", SealedPayload: "v1:rec-tx:x", Hash: "3"}}, ts, 1)
		return err
	})
	must(t, err)
	has("record saved in a transaction", "rec-tx")

	// Action tasks: created, finished with an output or an error body, and
	// in a transaction.
	tk := &functions.ActionTask{ID: uuid.New(), EnvironmentID: f.env.ID, ConnectionID: f.records.ConnectionID,
		Integration: f.connKey, ConnectionRef: "c1", ActionName: "a", SealedInput: "v1:task-in:x",
		Status: functions.TaskPending, LogID: "log", CreatedAt: ts, UpdatedAt: ts}
	must(t, s.CreateActionTask(ctx, tk))
	has("created action task", "task-in")
	tk.Status, tk.SealedOutput, tk.FinishedAt = functions.TaskSucceeded, "v1:task-out:x", &ts
	must(t, s.UpdateActionTask(ctx, tk))
	has("action task with an output", "task-out")
	failed := f.task(t, s, 0)
	failed.Status, failed.SealedError, failed.FinishedAt = functions.TaskFailed, "v1:task-err:x", &ts
	must(t, s.UpdateActionTask(ctx, failed))
	has("action task with an error", "task-err")
	err = s.WithTx(ctx, func(ctx context.Context) error {
		return s.CreateActionTask(ctx, &functions.ActionTask{ID: uuid.New(), EnvironmentID: f.env.ID,
			ConnectionID: f.records.ConnectionID, Integration: f.connKey, ConnectionRef: "c1", ActionName: "a",
			SealedInput: "v1:task-tx:x", Status: functions.TaskPending, LogID: "log", CreatedAt: ts, UpdatedAt: ts})
	})
	must(t, err)
	has("action task created in a transaction", "task-tx")
}

func testForgetSealingKeyID(t *testing.T, s Store) {
	ctx := t.Context()
	f := newSealedFixture(t, s, "p")
	for _, kind := range store.SealedKinds {
		id := f.ids[kind]
		counts, err := s.ForgetSealingKeyID(ctx, id)
		must(t, err)
		diff(t, "counts of "+id, wantCounts(kind), counts)
		if !slices.Contains(keyIDs(t, s), id) {
			t.Errorf("ForgetSealingKeyID dropped %q, which %d values name", id, counts[kind])
		}
	}
	counts, err := s.ForgetSealingKeyID(ctx, "never-used")
	must(t, err)
	diff(t, "counts of an unknown id", map[string]int{}, counts)

	// Once no value names an id, forgetting it drops it.
	c, err := s.GetConnection(ctx, f.env.ID, f.connKey, "c1")
	must(t, err)
	c.SealedCredentials = "v1:conn-new:x"
	must(t, s.UpdateConnection(ctx, c))
	must(t, s.DeleteConnection(ctx, f.env.ID, f.connKey, "c2"))
	c, err = s.GetConnection(ctx, f.env.ID, f.connKey, "c3")
	must(t, err)
	c.SealedCredentials = ""
	must(t, s.UpdateConnection(ctx, c))
	id := f.ids[store.SealedConnectionCredentials]
	counts, err = s.ForgetSealingKeyID(ctx, id)
	must(t, err)
	diff(t, "counts of a key no value names", map[string]int{}, counts)
	if slices.Contains(keyIDs(t, s), id) {
		t.Errorf("SealingKeyIDs still lists %q after ForgetSealingKeyID", id)
	}
	if !slices.Contains(keyIDs(t, s), "conn-new") {
		t.Error("ForgetSealingKeyID dropped another id")
	}
	// A key id used again is listed again.
	c.SealedCredentials = "v1:" + id + ":again"
	must(t, s.UpdateConnection(ctx, c))
	if !slices.Contains(keyIDs(t, s), id) {
		t.Errorf("SealingKeyIDs lacks %q, used again", id)
	}

	// Records: a deleted record's payload still names its key; once every
	// record is gone, the key can be forgotten.
	id = f.ids[store.SealedRecordPayload]
	_, err = s.DeleteRecords(ctx, f.records, []string{"r1", "r2"}, ts)
	must(t, err)
	counts, err = s.ForgetSealingKeyID(ctx, id)
	must(t, err)
	diff(t, "counts of the records' key, every record deleted", map[string]int{store.SealedRecordPayload: 3}, counts)
	for {
		n, err := s.DeleteAllRecords(ctx, f.records, 2)
		must(t, err)
		if n == 0 {
			break
		}
	}
	counts, err = s.ForgetSealingKeyID(ctx, id)
	must(t, err)
	diff(t, "counts of the records' key, no record left", map[string]int{}, counts)
	if slices.Contains(keyIDs(t, s), id) {
		t.Errorf("SealingKeyIDs still lists %q after ForgetSealingKeyID", id)
	}

	// Action tasks: once retention deleted the finished ones, the keys of
	// their outputs and errors can be forgotten; the pending task still
	// needs the key of its input.
	n, err := s.DeleteActionTasksBefore(ctx, at(1), 0)
	must(t, err)
	if n != 2 {
		t.Errorf("DeleteActionTasksBefore deleted %d tasks, want the 2 finished", n)
	}
	for _, kind := range []string{store.SealedActionOutput, store.SealedActionError} {
		id := f.ids[kind]
		counts, err := s.ForgetSealingKeyID(ctx, id)
		must(t, err)
		diff(t, "counts of the key of "+kind+", its task deleted", map[string]int{}, counts)
		if slices.Contains(keyIDs(t, s), id) {
			t.Errorf("SealingKeyIDs still lists %q after ForgetSealingKeyID", id)
		}
	}
	id = f.ids[store.SealedActionInput]
	counts, err = s.ForgetSealingKeyID(ctx, id)
	must(t, err)
	diff(t, "counts of the inputs' key, a pending task left", map[string]int{store.SealedActionInput: 1}, counts)
	if !slices.Contains(keyIDs(t, s), id) {
		t.Errorf("ForgetSealingKeyID dropped %q, which a pending task's input names", id)
	}
}

func testSampleSealedValue(t *testing.T, s Store) {
	ctx := t.Context()
	f := newSealedFixture(t, s, "p")
	for _, kind := range store.SealedKinds {
		id := f.ids[kind]
		gotKind, v, err := s.SampleSealedValue(ctx, id)
		must(t, err)
		if gotKind != kind || !strings.HasPrefix(v, "v1:"+id+":") {
			t.Errorf("SampleSealedValue(%s) = %s %q", id, gotKind, v)
		}
	}
	_, _, err := s.SampleSealedValue(ctx, "never-used")
	wantErr(t, "SampleSealedValue(unknown id)", err, store.ErrNotFound)
	// A key id with a '_' matches itself only.
	c, err := s.GetConnection(ctx, f.env.ID, f.connKey, "c1")
	must(t, err)
	c.SealedCredentials = "v1:a_b:x"
	must(t, s.UpdateConnection(ctx, c))
	_, _, err = s.SampleSealedValue(ctx, "a-b")
	wantErr(t, "SampleSealedValue(a-b)", err, store.ErrNotFound)
	if kind, v, err := s.SampleSealedValue(ctx, "a_b"); err != nil || kind != store.SealedConnectionCredentials || v != "v1:a_b:x" {
		t.Errorf("SampleSealedValue(a_b) = %s %q, %v", kind, v, err)
	}
}

func testResealValues(t *testing.T, s Store) {
	ctx := t.Context()
	f := newSealedFixture(t, s, "p")
	g := newSealedFixture(t, s, "q") // another environment, other keys
	for _, kind := range store.SealedKinds {
		id := f.ids[kind]
		var seen []string
		n, err := s.ResealValues(ctx, kind, id, func(v string) (string, error) {
			seen = append(seen, v)
			rest, _ := strings.CutPrefix(v, "v1:"+id+":")
			return "v1:new:" + rest, nil
		})
		must(t, err)
		if want := wantCounts(kind)[kind]; n != want || len(seen) != want {
			t.Errorf("ResealValues(%s) = %d after %d calls, want %d", kind, n, len(seen), want)
		}
		for _, v := range seen {
			if !strings.HasPrefix(v, "v1:"+id+":") {
				t.Errorf("ResealValues(%s, %s) handed over %q", kind, id, v)
			}
		}
		counts, err := s.ForgetSealingKeyID(ctx, id)
		must(t, err)
		diff(t, "counts of "+id+" after resealing", map[string]int{}, counts)
		// The other environment's values, under other keys, stay.
		counts, err = s.ForgetSealingKeyID(ctx, g.ids[kind])
		must(t, err)
		diff(t, "counts of "+g.ids[kind], wantCounts(kind), counts)
	}
	counts, err := s.ForgetSealingKeyID(ctx, "new")
	must(t, err)
	total := 0
	for _, kind := range store.SealedKinds {
		total += counts[kind]
		if counts[kind] != wantCounts(kind)[kind] {
			t.Errorf("values of kind %s under the new key: %d, want %d", kind, counts[kind], wantCounts(kind)[kind])
		}
	}
	// The records hold the new values.
	c, err := s.GetConnection(ctx, f.env.ID, f.connKey, "c2")
	must(t, err)
	if c.SealedCredentials != "v1:new:c2" {
		t.Errorf("connection c2 holds %q", c.SealedCredentials)
	}
	env, err := s.GetEnvironment(ctx, f.env.ID)
	must(t, err)
	if env.SealedWebhookSigningKey != "v1:new:sk" {
		t.Errorf("environment holds %q", env.SealedWebhookSigningKey)
	}
	vars, err := s.ListVariables(ctx, f.env.ID)
	must(t, err)
	diff(t, "variables", []environments.Variable{{Name: "a", SealedValue: "v1:new:a"}, {Name: "b", SealedValue: "v1:new:b"},
		{Name: "plain", SealedValue: "not-sealed"}}, vars)
	in, err := s.GetIntegration(ctx, f.env.ID, "gh")
	must(t, err)
	if in.SealedCredentials != "v1:new:cr" || in.SealedCustom != "v1:new:cu" {
		t.Errorf("integration holds %q and %q", in.SealedCredentials, in.SealedCustom)
	}
	sess, err := s.GetConnectSession(ctx, []byte("hash-p"))
	must(t, err)
	if sess.SealedIntegrationsConfigDefaults != "v1:new:d" {
		t.Errorf("session holds %q", sess.SealedIntegrationsConfigDefaults)
	}
	flow, err := s.GetOAuthFlowByClientID(ctx, "client-p", 0)
	must(t, err)
	if flow.SealedSecrets != "v1:new:fs" {
		t.Errorf("flow holds %q", flow.SealedSecrets)
	}
	// Re-sealing changes neither a record's Seq nor its times; the deleted
	// record's payload is re-sealed, the pruned one stays empty.
	recs, err := s.ListRecords(ctx, f.records, functions.RecordQuery{Limit: 10})
	must(t, err)
	payloads := map[string]string{}
	for _, r := range recs {
		payloads[r.ID] = r.SealedPayload
		if !r.UpdatedAt.Equal(ts) {
			t.Errorf("record %s: UpdatedAt %v after re-sealing", r.ID, r.UpdatedAt)
		}
	}
	diff(t, "record payloads", map[string]string{"r1": "v1:new:r1", "r2": "v1:new:r2", "r3": "v1:new:r3", "r4": ""}, payloads)
	g2, err := s.ListRecords(ctx, g.records, functions.RecordQuery{Limit: 10})
	must(t, err)
	for _, r := range g2 {
		if strings.HasPrefix(r.SealedPayload, "v1:new:") {
			t.Errorf("record %s of the other environment was re-sealed", r.ID)
		}
	}
	// Re-sealing changes neither a task's Version nor its UpdatedAt (the
	// instance running it must not be refused its next write); empty
	// outputs and errors stay empty.
	type sealedTask struct {
		Input, Output, Error string
		Version              int64
		UpdatedAt            time.Time
	}
	var tasks []sealedTask
	for i := range f.tasks {
		tk := f.task(t, s, i)
		tasks = append(tasks, sealedTask{tk.SealedInput, tk.SealedOutput, tk.SealedError, tk.Version, tk.UpdatedAt})
	}
	diff(t, "action tasks", []sealedTask{
		{"v1:new:in0", "", "", 1, ts},
		{"v1:new:in1", "v1:new:out", "", 2, ts},
		{"v1:new:in2", "", "v1:new:err", 2, ts},
	}, tasks)
	for i := range g.tasks {
		tk := g.task(t, s, i)
		for _, v := range []string{tk.SealedInput, tk.SealedOutput, tk.SealedError} {
			if strings.HasPrefix(v, "v1:new:") {
				t.Errorf("action task %d of the other environment was re-sealed: %q", i, v)
			}
		}
	}
}

func testResealErrors(t *testing.T, s Store) {
	ctx := t.Context()
	f := newSealedFixture(t, s, "p")
	id := f.ids[store.SealedConnectionCredentials]
	_, err := s.ResealValues(ctx, "no_such_kind", id, func(v string) (string, error) { return v, nil })
	wantErr(t, "ResealValues(unknown kind)", err, store.ErrInvalid)

	// A value still under the same key is refused.
	_, err = s.ResealValues(ctx, store.SealedConnectionCredentials, id, func(v string) (string, error) { return v, nil })
	wantErr(t, "ResealValues(same key)", err, store.ErrInvalid)

	// reseal's error stops it; what it replaced before stays.
	boom := errors.New("boom")
	calls := 0
	n, err := s.ResealValues(ctx, store.SealedConnectionCredentials, id, func(v string) (string, error) {
		if calls++; calls == 2 {
			return "", boom
		}
		return "v1:new:x", nil
	})
	if !errors.Is(err, boom) || n != 1 {
		t.Errorf("ResealValues with a failing reseal = %d, %v; want 1, boom", n, err)
	}
	counts, err := s.ForgetSealingKeyID(ctx, id)
	must(t, err)
	diff(t, "counts after a failed reseal", map[string]int{store.SealedConnectionCredentials: 2}, counts)
}
