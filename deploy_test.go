package connect_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/functions"
	"github.com/embedauth/connect/jobs"
)

// The tests of deployments with the nango CLI. Their bodies are those the
// real nango CLI 0.71.10 sent (functions/testdata/deploy, captured on
// branch clie2e): integration "fake", sync items (model Item, every
// hour), actions create-item and whoami, on-event setup.

// cliUA is the User-Agent of the CLI that sent the bodies.
const cliUA = "nango-cli/0.71.10 (linux/6.18.44; node.js/20.20.2)"

// fakeJS stands for the JavaScript runtime: actions answer their name and
// version, syncs save one Item.
type fakeJS struct {
	actions atomic.Int64
}

func (r *fakeJS) RunAction(ctx context.Context, f *functions.Function, c *functions.Context, input json.RawMessage) (json.RawMessage, error) {
	r.actions.Add(1)
	return json.Marshal(map[string]string{"ran": f.Name, "version": f.Version, "runtime": f.Runtime})
}

func (r *fakeJS) RunSync(ctx context.Context, f *functions.Function, c *functions.SyncContext, webhook json.RawMessage) error {
	for _, m := range f.Definition.Models {
		if err := c.Save(ctx, m.Name, []map[string]any{{"id": "i1", "title": "one", "n": 1}}); err != nil {
			return err
		}
	}
	return nil
}

func (r *fakeJS) RunOnEvent(ctx context.Context, f *functions.Function, c *functions.Context) error {
	return nil
}

// deployFixture is a started Service with the JavaScript runtime faked,
// the integration "fake" (of the fake provider API of fnBundle) and its
// connections c1 and c2.
type deployFixture struct {
	*fnBundle
	js *fakeJS
}

func setupDeploy(t *testing.T, b *backend, mutate ...func(*connect.Config)) *deployFixture {
	t.Helper()
	js := &fakeJS{}
	fb := setupFunctions(t, b, nil, append([]func(*connect.Config){func(c *connect.Config) {
		c.Functions.Runtimes = map[string]functions.Runtime{functions.JavaScriptRuntime: js}
	}}, mutate...)...)
	fb.mustDo(t, 200, req{method: "POST", path: "/integrations", body: `{"provider":"fx-api","unique_key":"fake"}`})
	for _, c := range []string{"c1", "c2"} {
		fb.mustDo(t, 201, req{method: "POST", path: "/connections",
			body: `{"provider_config_key":"fake","connection_id":"` + c + `","api_key":"sk"}`})
	}
	return &deployFixture{fnBundle: fb, js: js}
}

// setupDeployed is setupDeploy with the CLI's project deployed, and the
// integration "other" with the action create-item deployed with -i other.
func setupDeployed(t *testing.T, b *backend) *deployFixture {
	t.Helper()
	f := setupDeploy(t, b)
	f.mustDo(t, 200, req{method: "POST", path: "/integrations", body: `{"provider":"fx-api","unique_key":"other"}`})
	f.deploy(t, capturedBody(t, "all-deploy.json", nil))
	f.deploy(t, capturedBody(t, "integration-deploy.json", func(m map[string]any) {
		without("items", "whoami")(m)
		flowNamed(m, "create-item")["providerConfigKey"] = "other"
		delete(m, "onEventScriptsByProvider")
	}))
	return f
}

// capturedBody returns a captured body of functions/testdata/deploy,
// changed by edit.
func capturedBody(t testing.TB, name string, edit func(m map[string]any)) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("functions", "testdata", "deploy", name))
	if err != nil {
		t.Fatal(err)
	}
	if edit == nil {
		return string(b)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// flows returns the flow configs of a decoded body.
func flows(m map[string]any) []any { return m["flowConfigs"].([]any) }

// flowNamed returns the flow config of a function.
func flowNamed(m map[string]any, name string) map[string]any {
	for _, f := range flows(m) {
		if f.(map[string]any)["syncName"] == name {
			return f.(map[string]any)
		}
	}
	panic("no flow " + name)
}

// without removes the flows of the names from a body.
func without(names ...string) func(m map[string]any) {
	return func(m map[string]any) {
		var keep []any
		for _, f := range flows(m) {
			if !slices.Contains(names, f.(map[string]any)["syncName"].(string)) {
				keep = append(keep, f)
			}
		}
		m["flowConfigs"] = keep
	}
}

func cliReq(path, body string) req {
	return req{method: "POST", path: path, body: body, header: map[string]string{"User-Agent": cliUA}}
}

func (f *deployFixture) confirm(t *testing.T, body string) map[string]any {
	t.Helper()
	r := f.mustDo(t, 200, cliReq("/sync/deploy/confirmation", body))
	for _, k := range []string{"newSyncs", "updatedSyncs", "deletedSyncs", "newActions", "updatedActions", "deletedActions",
		"newOnEventScripts", "updatedOnEventScripts", "deletedOnEventScripts", "deletedModels"} {
		if _, ok := r.obj()[k].([]any); !ok {
			t.Fatalf("confirmation without the array %s: %s", k, r.raw)
		}
	}
	return r.obj()
}

func (f *deployFixture) deploy(t *testing.T, body string) []map[string]any {
	t.Helper()
	r := f.mustDo(t, 200, cliReq("/sync/deploy", body))
	var out []map[string]any
	for _, x := range r.body.([]any) {
		out = append(out, x.(map[string]any))
	}
	return out
}

// names lists the "name" of each item of a confirmation's array.
func names(v any) []string {
	out := []string{}
	for _, x := range v.([]any) {
		if m, ok := x.(map[string]any); ok {
			out = append(out, m["name"].(string))
		} else {
			out = append(out, x.(string))
		}
	}
	return out
}

// stored returns the stored functions of the environment, by name and
// kind.
func (f *deployFixture) stored(t *testing.T) map[string]*functions.Function {
	t.Helper()
	fs, err := f.b.store.ListFunctions(context.Background(), f.env.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*functions.Function{}
	for _, fn := range fs {
		out[fn.Integration+"/"+string(fn.Kind)+"/"+fn.Name] = fn
	}
	return out
}

func (f *deployFixture) schedules(t *testing.T, name string) []*functions.Schedule {
	t.Helper()
	ss, err := f.b.store.ListSyncs(context.Background(), functions.SyncFilter{EnvironmentID: f.env.ID, Integration: "fake", Name: name})
	if err != nil {
		t.Fatal(err)
	}
	return ss
}

// TestDeployWithTheCLI: the confirmation and the deployment of the CLI's
// project, its functions listed, run and pulled, and a second deployment
// of the same that changes nothing.
func TestDeployWithTheCLI(t *testing.T) {
	backends(t, func(t *testing.T, b *backend) {
		f := setupDeploy(t, b)
		c := f.confirm(t, capturedBody(t, "all-confirmation.json", nil))
		if got := names(c["newSyncs"]); !slices.Equal(got, []string{"items"}) {
			t.Errorf("newSyncs %v", got)
		}
		item := c["newSyncs"].([]any)[0].(map[string]any)
		if item["providerConfigKey"] != "fake" || item["connections"] != float64(2) || item["auto_start"] != true {
			t.Errorf("newSyncs[0] = %v", item)
		}
		if got := names(c["newActions"]); !slices.Equal(got, []string{"create-item", "whoami"}) {
			t.Errorf("newActions %v", got)
		}
		if got := names(c["newOnEventScripts"]); !slices.Equal(got, []string{"setup"}) {
			t.Errorf("newOnEventScripts %v", got)
		}
		for _, k := range []string{"updatedSyncs", "deletedSyncs", "updatedActions", "deletedActions", "deletedModels"} {
			if n := len(c[k].([]any)); n != 0 {
				t.Errorf("%s has %d items", k, n)
			}
		}
		if n := len(f.stored(t)); n != 0 {
			t.Fatalf("the confirmation stored %d functions", n)
		}

		res := f.deploy(t, capturedBody(t, "all-deploy.json", nil))
		want := []struct{ name, version, typ string }{{"items", "1.0.0", "sync"}, {"create-item", "1.0.0", "action"},
			{"whoami", "1.0.0", "action"}, {"setup", "0.0.1", "on-event"}}
		if len(res) != len(want) {
			t.Fatalf("deploy answered %d functions: %v", len(res), res)
		}
		for i, w := range want {
			r := res[i]
			if r["name"] != w.name || r["version"] != w.version || r["type"] != w.typ || r["providerConfigKey"] != "fake" ||
				r["id"] == float64(0) || r["last_deployed"] == "" {
				t.Errorf("deploy answer %d: %v, want %v", i, r, w)
			}
		}
		if res[0]["runs"] != "1h" || !slices.Equal(names2(res[0]["models"]), []string{"Item"}) || res[1]["input"] != "ActionInput_fake_createitem" {
			t.Errorf("deploy answer: %v", res)
		}
		st := f.stored(t)
		items := st["fake/sync/items"]
		if len(st) != 4 || items == nil || items.Runtime != functions.JavaScriptRuntime || items.SDKVersion != "0.71.10-zero" ||
			items.Source != "repo" || !strings.Contains(string(items.SourceCode), "createSync") {
			t.Fatalf("stored: %v", st)
		}
		// Every connection gets the new sync, started (auto_start).
		ss := f.schedules(t, "items")
		if len(ss) != 2 || ss[0].Paused || ss[1].Paused {
			t.Fatalf("schedules of items: %+v", ss)
		}
		// It runs on the runtime, and so do the actions.
		waitFor(t, 30*time.Second, "the sync run", func() bool {
			r := f.mustDo(t, 200, req{method: "GET", path: "/sync/status?syncs=items&provider_config_key=fake&connection_id=c1"})
			s := r.obj()["syncs"].([]any)[0].(map[string]any)
			return s["status"] == functions.StatusSuccess
		})
		r := f.mustDo(t, 200, req{method: "POST", path: "/action/trigger", body: `{"action_name":"create-item","input":{"title":"x"}}`,
			header: map[string]string{"Connection-Id": "c1", "Provider-Config-Key": "fake"}})
		if r.obj()["ran"] != "create-item" || r.obj()["runtime"] != functions.JavaScriptRuntime {
			t.Errorf("the action answered %s", r.raw)
		}

		// Listed like Go functions, with their source and SDK version.
		r = f.mustDo(t, 200, req{method: "GET", path: "/integrations/fake/functions"})
		for _, x := range r.obj()["data"].([]any) {
			fn := x.(map[string]any)
			if fn["source"] != "repo" || fn["sdk_version"] != "0.71.10-zero" {
				t.Errorf("listed %v", fn)
			}
		}
		r = f.mustDo(t, 200, req{method: "GET", path: "/scripts/config"})
		var found bool
		for _, x := range r.body.([]any) {
			e := x.(map[string]any)
			if e["providerConfigKey"] != "fake" {
				continue
			}
			found = true
			s := e["syncs"].([]any)[0].(map[string]any)
			if s["name"] != "items" || s["sdk_version"] != "0.71.10-zero" || s["version"] != "1.0.0" || len(e["actions"].([]any)) != 2 {
				t.Errorf("scripts config of fake: %v", e)
			}
		}
		if !found {
			t.Errorf("/scripts/config lists no fake: %s", r.raw)
		}
		// nango pull: the TypeScript entry file.
		var sent map[string]any
		_ = json.Unmarshal([]byte(capturedBody(t, "all-deploy.json", nil)), &sent)
		ts := flowNamed(sent, "items")["fileBody"].(map[string]any)["ts"]
		r = f.mustDo(t, 200, req{method: "GET", path: "/integrations/fake/functions/items/code?type=sync"})
		if r.obj()["type"] != "sync" || r.obj()["code"] != ts {
			t.Errorf("code of items: %.200s", r.raw)
		}

		// A new sync that does not auto-start gets paused schedules.
		f.deploy(t, capturedBody(t, "sync-deploy.json", func(m map[string]any) {
			flowNamed(m, "items")["syncName"], flowNamed(m, "items")["auto_start"] = "items-later", false
		}))
		if ss := f.schedules(t, "items-later"); len(ss) != 2 || !ss[0].Paused || !ss[1].Paused || ss[0].NextRunAt != nil {
			t.Errorf("schedules of a sync without auto_start: %+v", ss)
		}
		f.mustDo(t, 200, req{method: "DELETE", path: "/integrations/fake/functions/items-later?type=sync"})

		// The same again: nothing new, nothing changed.
		c = f.confirm(t, capturedBody(t, "all-confirmation.json", nil))
		for k, v := range c {
			if n := len(v.([]any)); n != 0 {
				t.Errorf("second confirmation: %s has %d items", k, n)
			}
		}
		res = f.deploy(t, capturedBody(t, "all-deploy.json", nil))
		if len(res) != 4 || res[3]["version"] != "0.0.1" {
			t.Errorf("second deploy answered %v", res)
		}
		for _, fn := range f.stored(t) {
			if !fn.DeployedAt.Equal(st[fn.Integration+"/"+string(fn.Kind)+"/"+fn.Name].DeployedAt) {
				t.Errorf("%s redeployed unchanged", fn.Name)
			}
		}
	})
}

func names2(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

// TestDeployReconcile: functions left out of a deployment are deleted in
// its scope (all: the environment's, integration: the integration's,
// single: none), with their schedules, and the records of the models no
// sync declares any more.
func TestDeployReconcile(t *testing.T) {
	backends(t, func(t *testing.T, b *backend) {
		f := setupDeployed(t, b)
		if _, ok := f.stored(t)["other/action/create-item"]; !ok || len(f.stored(t)) != 5 {
			t.Fatalf("after -i other: %v", f.stored(t))
		}
		c1 := connRow(t, f, "c1")
		scope := functions.RecordScope{EnvironmentID: f.env.ID, ConnectionID: c1, Model: "Item", Variant: functions.BaseVariant}
		waitFor(t, 30*time.Second, "the records of items", func() bool {
			n, err := b.store.CountRecords(context.Background(), scope)
			return err == nil && n == 1
		})

		// --sync items: single, deletes nothing.
		f.deploy(t, capturedBody(t, "sync-deploy.json", nil))
		if n := len(f.stored(t)); n != 5 {
			t.Fatalf("a single deployment left %d functions, want 5", n)
		}
		// -i fake without items and setup: deletes them, not other's.
		body := capturedBody(t, "integration-confirmation.json", func(m map[string]any) {
			without("items")(m)
			m["onEventScriptsByProvider"] = []any{}
		})
		c := f.confirm(t, body)
		if got := names(c["deletedSyncs"]); !slices.Equal(got, []string{"items"}) {
			t.Errorf("deletedSyncs %v", got)
		}
		if d := c["deletedSyncs"].([]any)[0].(map[string]any); d["connections"] != float64(2) {
			t.Errorf("deletedSyncs[0] = %v", d)
		}
		if got := names(c["deletedOnEventScripts"]); !slices.Equal(got, []string{"setup"}) {
			t.Errorf("deletedOnEventScripts %v", got)
		}
		if got := names(c["deletedModels"]); !slices.Equal(got, []string{"Item"}) {
			t.Errorf("deletedModels %v", got)
		}
		if got := names(c["deletedActions"]); len(got) != 0 {
			t.Errorf("deletedActions %v", got)
		}
		f.deploy(t, capturedBody(t, "integration-deploy.json", func(m map[string]any) {
			without("items")(m)
			m["onEventScriptsByProvider"] = []any{}
		}))
		st := f.stored(t)
		if len(st) != 3 || st["fake/sync/items"] != nil || st["fake/on-event/setup"] != nil || st["other/action/create-item"] == nil {
			t.Fatalf("after -i fake without items and setup: %v", st)
		}
		if ss := f.schedules(t, "items"); len(ss) != 0 {
			t.Errorf("items still has %d schedules", len(ss))
		}
		waitFor(t, 30*time.Second, "the records of the deleted model", func() bool {
			n, err := b.store.CountRecords(context.Background(), scope)
			return err == nil && n == 0
		})
		// The deleted functions are kept in their versions.
		vs, err := b.store.ListFunctionVersions(context.Background(), f.env.ID, "fake", functions.KindSync, "items")
		if err != nil || len(vs) != 1 || vs[0].Version != "1.0.0" {
			t.Errorf("versions of the deleted items: %v, %v", vs, err)
		}
		// Everything without -i: other's function goes too.
		f.deploy(t, capturedBody(t, "all-deploy.json", without("items", "whoami")))
		st = f.stored(t)
		if len(st) != 2 || st["other/action/create-item"] != nil {
			t.Fatalf("after a deployment of everything: %v", st)
		}
	})
}

// connRow returns the row id of a connection of fake.
func connRow(t *testing.T, f *deployFixture, id string) int64 {
	t.Helper()
	c, err := f.b.store.GetConnection(context.Background(), f.env.ID, "fake", id)
	if err != nil {
		t.Fatal(err)
	}
	return c.ID
}

// TestDeployVersions: a changed function counts from its version, or
// takes the one given; an on-event function starts at 0.0.1; the version
// it replaces is kept; a disabled function stays disabled.
func TestDeployVersions(t *testing.T) {
	backends(t, func(t *testing.T, b *backend) {
		f := setupDeploy(t, b)
		ctx := context.Background()
		f.deploy(t, capturedBody(t, "all-deploy.json", nil))
		if err := b.store.SetFunctionEnabled(ctx, f.env.ID, "fake", functions.KindAction, "create-item", false); err != nil {
			t.Fatal(err)
		}
		changed := func(version any) func(m map[string]any) {
			return func(m map[string]any) {
				for _, fl := range flows(m) {
					fl := fl.(map[string]any)
					fl["version"] = version
					fb := fl["fileBody"].(map[string]any)
					fb["js"] = fb["js"].(string) + "\n// changed"
				}
				for _, g := range m["onEventScriptsByProvider"].([]any) {
					s := g.(map[string]any)["scripts"].([]any)[0].(map[string]any)["fileBody"].(map[string]any)
					s["js"] = s["js"].(string) + "\n// changed"
				}
			}
		}
		res := f.deploy(t, capturedBody(t, "all-deploy.json", changed(nil)))
		for _, r := range res {
			want := map[string]string{"sync": "1.0.1", "action": "1.0.1", "on-event": "0.0.2"}[r["type"].(string)]
			if r["version"] != want {
				t.Errorf("%s: version %v, want %s", r["name"], r["version"], want)
			}
		}
		f.deploy(t, capturedBody(t, "version-deploy.json", nil)) // --version 2.0.0, the first code again
		st := f.stored(t)
		ci := st["fake/action/create-item"]
		if ci.Version != "2.0.0" || ci.Enabled || st["fake/on-event/setup"].Version != "0.0.3" {
			t.Errorf("after --version 2.0.0: create-item %q (enabled %v), setup %q", ci.Version, ci.Enabled, st["fake/on-event/setup"].Version)
		}
		vs, err := b.store.ListFunctionVersions(ctx, f.env.ID, "fake", functions.KindAction, "create-item")
		if err != nil {
			t.Fatal(err)
		}
		if len(vs) != 2 || vs[0].Version != "1.0.1" || !strings.HasSuffix(string(vs[0].Code), "// changed") ||
			vs[1].Version != "1.0.0" || vs[1].SDKVersion != "0.71.10-zero" || len(vs[1].SourceCode) == 0 {
			t.Errorf("versions of create-item: %d", len(vs))
			for _, v := range vs {
				t.Logf("  %s %s", v.Version, v.DeployedAt)
			}
		}
		f.mustDo(t, 404, req{method: "POST", path: "/action/trigger", body: `{"action_name":"create-item"}`,
			header: map[string]string{"Connection-Id": "c1", "Provider-Config-Key": "fake"}})
	})
}

// TestDeployFrequency: a new frequency re-times the sync's schedules of
// every connection and variant, but for a connection's own frequency.
func TestDeployFrequency(t *testing.T) {
	backends(t, func(t *testing.T, b *backend) {
		f := setupDeploy(t, b)
		f.deploy(t, capturedBody(t, "all-deploy.json", nil))
		f.mustDo(t, 200, req{method: "POST", path: "/sync/items/variant/blue", body: `{"provider_config_key":"fake","connection_id":"c1"}`})
		f.mustDo(t, 200, req{method: "PUT", path: "/sync/update-connection-frequency",
			body: `{"sync_name":"items","provider_config_key":"fake","connection_id":"c2","frequency":"every 5 minutes"}`})
		// Every schedule waits for its next run (c2's first may have been
		// put off by its own frequency).
		var before []*functions.Schedule
		waitFor(t, 30*time.Second, "the first runs", func() bool {
			before = f.schedules(t, "items")
			for _, s := range before {
				if s.RunID != "" || s.NextRunAt == nil || !s.NextRunAt.After(time.Now()) {
					return false
				}
			}
			return len(before) == 3
		})
		f.deploy(t, capturedBody(t, "all-deploy.json", func(m map[string]any) {
			flowNamed(m, "items")["runs"] = "every 2 hours"
		}))
		after := f.schedules(t, "items")
		for i, s := range after {
			was := before[i]
			if s.ID != was.ID {
				t.Fatalf("schedules changed: %v, %v", before, after)
			}
			if s.Frequency != "" {
				if s.Interval != 5*time.Minute || !s.NextRunAt.Equal(*was.NextRunAt) {
					t.Errorf("the schedule of its own frequency changed: %+v", s)
				}
				continue
			}
			if s.Interval != 2*time.Hour || !s.NextRunAt.Equal(was.NextRunAt.Add(time.Hour)) {
				t.Errorf("%s %s: interval %v, next run %v (was %v); want 2h, an hour later", s.ConnectionRef, s.Variant, s.Interval,
					s.NextRunAt, was.NextRunAt)
			}
		}
	})
}

// blockingScheduler holds the jobs a deployment queues (it queues them in
// its transaction) until released.
type blockingScheduler struct {
	jobs.Scheduler
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func (s *blockingScheduler) Enqueue(ctx context.Context, js ...jobs.Job) error {
	if len(js) > 0 && js[0].Kind == functions.DeployJobKind {
		s.once.Do(func() { close(s.entered) })
		<-s.release
	}
	return s.Scheduler.Enqueue(ctx, js...)
}

// TestDeployConcurrent: a deployment of an environment while another one
// is in progress is refused with concurrent_deployment, through the same
// Service and, on Postgres, through another one on the database.
func TestDeployConcurrent(t *testing.T) {
	backends(t, func(t *testing.T, b *backend) {
		block := &blockingScheduler{entered: make(chan struct{}), release: make(chan struct{})}
		f := setupDeploy(t, b, func(c *connect.Config) {
			block.Scheduler = schedulerFor(t, b)
			c.Scheduler = block
		})
		f.deploy(t, capturedBody(t, "all-deploy.json", nil))
		done := make(chan *response, 1)
		go func() {
			// Deletes items: it queues the deletion of its records, and
			// waits there, in its transaction.
			done <- f.do(t, cliReq("/sync/deploy", capturedBody(t, "all-deploy.json", without("items"))))
		}()
		<-block.entered
		for _, path := range []string{"/sync/deploy", "/functions/deployments/bundle"} {
			body := capturedBody(t, "all-deploy.json", nil)
			if strings.Contains(path, "bundle") {
				body = `{"reconciliationScope":{"kind":"environment"},"functions":[]}`
			}
			r := f.mustDo(t, 409, cliReq(path, body))
			if r.errCode() != "concurrent_deployment" || r.obj()["error"].(map[string]any)["message"] != "A deployment is already in progress" {
				t.Errorf("%s during a deployment: %s", path, r.raw)
			}
		}
		// The confirmation only reads.
		f.mustDo(t, 200, cliReq("/sync/deploy/confirmation", capturedBody(t, "all-confirmation.json", nil)))
		if b.db != nil {
			// Another instance on the database.
			other, err := connect.New(connect.Config{Store: b.store, EncryptionKeys: []connect.EncryptionKey{testKey},
				Scheduler: schedulerFor(t, b), Providers: fxCatalog(t, f.api.srv.URL),
				Functions: connect.FunctionsConfig{Runtimes: map[string]functions.Runtime{functions.JavaScriptRuntime: f.js}}})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(other.Handler())
			defer srv.Close()
			ob := &bundle{svc: other, srv: srv, env: f.env, key: f.key, b: b}
			r := ob.mustDo(t, 409, cliReq("/sync/deploy", capturedBody(t, "all-deploy.json", nil)))
			if r.errCode() != "concurrent_deployment" {
				t.Errorf("through another instance: %s", r.raw)
			}
		}
		close(block.release)
		if r := <-done; r.status != 200 {
			t.Fatalf("the first deployment: %d %s", r.status, r.raw)
		}
		if st := f.stored(t); len(st) != 3 {
			t.Errorf("after the first deployment: %v", st)
		}
		// Done: the next one goes.
		f.deploy(t, capturedBody(t, "all-deploy.json", nil))
	})
}

// TestDeployGoClash: a deployment cannot replace a function registered in
// Go, and a Go function registered over a deployed one is not stored
// (DeployAll says so).
func TestDeployGoClash(t *testing.T) {
	backends(t, func(t *testing.T, b *backend) {
		f := setupDeploy(t, b)
		ctx := context.Background()
		goAction := functions.NewAction("fake", "whoami", func(ctx context.Context, c *functions.Context, in struct{}) (string, error) {
			return "go", nil
		})
		if err := f.svc.Functions().Register(goAction); err != nil {
			t.Fatal(err)
		}
		f.mustDo(t, 200, req{method: "GET", path: "/integrations/fake/functions"}) // stores it
		for _, path := range []string{"/sync/deploy/confirmation", "/sync/deploy"} {
			r := f.mustDo(t, 409, cliReq(path, capturedBody(t, "all-deploy.json", nil)))
			if r.errCode() != functions.CodeRegisteredInGo || !strings.Contains(r.raw2(), "whoami") {
				t.Errorf("%s over a Go function: %s", path, r.raw)
			}
		}
		st := f.stored(t)
		if len(st) != 1 || st["fake/action/whoami"].Runtime != functions.GoRuntime {
			t.Fatalf("after the refused deployment: %v", st)
		}

		// The reverse: deployed first, registered after.
		f.deploy(t, capturedBody(t, "all-deploy.json", without("whoami")))
		goCreate := functions.NewAction("fake", "create-item", func(ctx context.Context, c *functions.Context, in struct{}) (string, error) {
			return "go", nil
		})
		if err := f.svc.Functions().Register(goCreate); err != nil {
			t.Fatal(err)
		}
		err := f.svc.Functions().DeployAll(ctx)
		var clash *functions.ClashError
		if !errors.As(err, &clash) || clash.Name != "create-item" || clash.Runtime != functions.JavaScriptRuntime {
			t.Fatalf("DeployAll after registering over a deployed function: %v", err)
		}
		if fn := f.stored(t)["fake/action/create-item"]; fn == nil || fn.Runtime != functions.JavaScriptRuntime {
			t.Fatalf("the deployed function was replaced: %+v", fn)
		}
		// The API goes on, with the deployed one.
		f.mustDo(t, 200, req{method: "GET", path: "/integrations/fake/functions"})
		r := f.mustDo(t, 200, req{method: "POST", path: "/action/trigger", body: `{"action_name":"create-item"}`,
			header: map[string]string{"Connection-Id": "c1", "Provider-Config-Key": "fake"}})
		if r.obj()["runtime"] != functions.JavaScriptRuntime {
			t.Errorf("create-item answered %s", r.raw)
		}
	})
}

func (r *response) raw2() string { return string(r.raw) }

// TestDeployRefused: bad bodies, unknown integrations, old CLIs, and a
// server without the JavaScript runtime are answered in the error shape
// with a 4xx (the runtime: 501), and store nothing.
func TestDeployRefused(t *testing.T) {
	backends(t, func(t *testing.T, b *backend) {
		f := setupDeploy(t, b)
		valid := capturedBody(t, "all-deploy.json", nil)
		for _, tc := range []struct {
			name   string
			rq     req
			status int
			code   string
		}{
			{"not JSON", cliReq("/sync/deploy", `{"flowConfigs":`), 400, "invalid_body"},
			{"an array", cliReq("/sync/deploy", `[]`), 400, "invalid_body"},
			{"empty", cliReq("/sync/deploy", ``), 400, "invalid_body"},
			{"no reconcile", cliReq("/sync/deploy", capturedBody(t, "all-deploy.json", func(m map[string]any) { delete(m, "reconcile") })), 400, "invalid_body"},
			{"bad runs", cliReq("/sync/deploy", capturedBody(t, "all-deploy.json", func(m map[string]any) {
				flowNamed(m, "items")["runs"] = "every 10 seconds"
			})), 400, "invalid_body"},
			{"one bad among good", cliReq("/sync/deploy", capturedBody(t, "all-deploy.json", func(m map[string]any) {
				flowNamed(m, "whoami")["type"] = "webhook"
			})), 400, "invalid_body"},
			{"unknown integration", cliReq("/sync/deploy", capturedBody(t, "all-deploy.json", func(m map[string]any) {
				flowNamed(m, "whoami")["providerConfigKey"] = "nosuch"
			})), 404, "unknown_provider_config"},
			{"unknown integration, confirmation", cliReq("/sync/deploy/confirmation", capturedBody(t, "all-confirmation.json", func(m map[string]any) {
				flowNamed(m, "whoami")["providerConfigKey"] = "nosuch"
			})), 404, "unknown_provider_config"},
			{"old CLI", req{method: "POST", path: "/sync/deploy", body: valid,
				header: map[string]string{"User-Agent": "nango-cli/0.39.24 (linux; node.js/18)"}}, 400, "invalid_cli_version"},
			{"query", cliReq("/sync/deploy?x=1", valid), 400, "invalid_query_params"},
			{"too large", cliReq("/sync/deploy", `{"nangoYamlBody":"`+strings.Repeat("a", functions.MaxDeployBody)+`"}`), 413, "payload_too_large"},
			{"createFunction", cliReq("/functions/deployments/bundle", `{"reconciliationScope":{"kind":"environment"},"functions":[{"name":"f"}]}`),
				400, "functions_not_supported"},
			{"bad scope", cliReq("/functions/deployments/bundle/preview", `{"reconciliationScope":{"kind":"world"},"functions":[]}`), 400, "invalid_body"},
		} {
			r := f.do(t, tc.rq)
			e, _ := r.obj()["error"].(map[string]any)
			if r.status != tc.status || r.errCode() != tc.code || e["message"] == "" {
				t.Errorf("%s: %d %.300s, want %d %s", tc.name, r.status, r.raw, tc.status, tc.code)
			}
		}
		r := f.do(t, cliReq("/sync/deploy", capturedBody(t, "all-deploy.json", func(m map[string]any) {
			flowNamed(m, "items")["runs"] = 7
			flowNamed(m, "whoami")["syncName"] = "who am i"
		})))
		errs, _ := r.obj()["error"].(map[string]any)["errors"].([]any)
		if len(errs) != 2 || !strings.Contains(errs[0].(map[string]any)["message"].(string), "flowConfigs[0].runs") {
			t.Errorf("two problems answered %s", r.raw)
		}
		if st := f.stored(t); len(st) != 0 {
			t.Fatalf("refused deployments stored %v", st)
		}
		if ss := f.schedules(t, "items"); len(ss) != 0 {
			t.Fatalf("refused deployments scheduled %v", ss)
		}
	})
}

// TestDeployWithoutRuntime: a server without the JavaScript runtime
// (Config.Functions.DisableJavaScript) refuses deployments of functions with 501, and stores nothing.
func TestDeployWithoutRuntime(t *testing.T) {
	backends(t, func(t *testing.T, b *backend) {
		f := setupFunctions(t, b, nil, func(c *connect.Config) { c.Functions.DisableJavaScript = true })
		f.mustDo(t, 200, req{method: "POST", path: "/integrations", body: `{"provider":"fx-api","unique_key":"fake"}`})
		for _, path := range []string{"/sync/deploy/confirmation", "/sync/deploy"} {
			r := f.mustDo(t, 501, cliReq(path, capturedBody(t, "all-deploy.json", nil)))
			if r.errCode() != "javascript_runtime_unavailable" {
				t.Errorf("%s without the runtime: %s", path, r.raw)
			}
		}
		if fs, err := b.store.ListFunctions(context.Background(), f.env.ID, ""); err != nil || len(fs) != 0 {
			t.Errorf("stored %d functions (%v)", len(fs), err)
		}
		// Removing functions needs no runtime.
		f.mustDo(t, 200, cliReq("/functions/deployments/bundle", `{"reconciliationScope":{"kind":"environment"},"functions":[]}`))
	})
}

// TestDeployScope: the deploy routes need environment:deploy, which
// environment:* grants; the telemetry needs no key.
func TestDeployScope(t *testing.T) {
	backends(t, func(t *testing.T, b *backend) {
		f := setupDeploy(t, b)
		ctx := context.Background()
		deployOnly, _, err := f.svc.Environments().CreateAPIKey(ctx, f.env.ID, environments.NewAPIKey{Name: "deploy",
			Scopes: []string{environments.ScopeEnvironmentDeploy}})
		if err != nil {
			t.Fatal(err)
		}
		readOnly, _, err := f.svc.Environments().CreateAPIKey(ctx, f.env.ID, environments.NewAPIKey{Name: "read",
			Scopes: []string{environments.ScopeFunctionsRead, environments.ScopeFunctionsWrite}})
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range []string{"/sync/deploy/confirmation", "/sync/deploy"} {
			rq := cliReq(path, capturedBody(t, "all-deploy.json", nil))
			rq.key = readOnly
			if r := f.do(t, rq); r.status != 403 || r.errCode() != "forbidden" {
				t.Errorf("%s without environment:deploy: %d %s", path, r.status, r.raw)
			}
			rq.key = deployOnly
			f.mustDo(t, 200, rq)
		}
		// Telemetry: no key, 204, the body ignored; a large one refused.
		r := f.mustDo(t, 204, req{method: "POST", path: "/cli/telemetry", key: "-",
			body: `{"deviceId":"5f0c","event":"cli:deploy","ephemeral":false}`})
		if len(r.raw) != 0 {
			t.Errorf("telemetry answered %s", r.raw)
		}
		r = f.mustDo(t, 413, req{method: "POST", path: "/cli/telemetry", key: "-", body: `"` + strings.Repeat("a", functions.MaxTelemetryBody) + `"`})
		if r.errCode() != "payload_too_large" {
			t.Errorf("large telemetry: %s", r.raw)
		}
	})
}

// TestDeployBundle: the functions kind's routes remove the deployed
// functions of their scope; the preview changes nothing.
func TestDeployBundle(t *testing.T) {
	backends(t, func(t *testing.T, b *backend) {
		f := setupDeployed(t, b)
		// The captured body: an integration that does not exist here.
		for _, path := range []string{"/functions/deployments/bundle/preview", "/functions/deployments/bundle"} {
			r := f.mustDo(t, 200, cliReq(path, capturedBody(t, "bundle-bundle.json", nil)))
			for _, k := range []string{"created", "updated", "unchanged", "deleted"} {
				if l, ok := r.obj()[k].([]any); !ok || len(l) != 0 {
					t.Errorf("%s answered %s", path, r.raw)
				}
			}
		}
		scopeFake := `{"reconciliationScope":{"kind":"integration","integrationId":"fake"},"functions":[]}`
		r := f.mustDo(t, 200, cliReq("/functions/deployments/bundle/preview", scopeFake))
		var deleted []string
		for _, x := range r.obj()["deleted"].([]any) {
			d := x.(map[string]any)
			if d["integrationId"] != "fake" {
				t.Errorf("preview of fake deletes %v", d)
			}
			deleted = append(deleted, d["name"].(string))
		}
		slices.Sort(deleted)
		if !slices.Equal(deleted, []string{"create-item", "items", "setup", "whoami"}) {
			t.Errorf("preview deletes %v", deleted)
		}
		if n := len(f.stored(t)); n != 5 {
			t.Fatalf("the preview deleted: %d left", n)
		}
		f.mustDo(t, 200, cliReq("/functions/deployments/bundle", scopeFake))
		if st := f.stored(t); len(st) != 1 || st["other/action/create-item"] == nil {
			t.Fatalf("after the bundle of fake: %v", st)
		}
		r = f.mustDo(t, 200, cliReq("/functions/deployments/bundle", `{"reconciliationScope":{"kind":"environment"},"functions":[]}`))
		if d := r.obj()["deleted"].([]any); len(d) != 1 {
			t.Errorf("the bundle of the environment deleted %v", d)
		}
		if n := len(f.stored(t)); n != 0 {
			t.Errorf("%d functions left", n)
		}
	})
}

// TestDeployLogged: a deployment is an entry of the operations log (type
// deploy) naming what it changed.
func TestDeployLogged(t *testing.T) {
	backends(t, func(t *testing.T, b *backend) {
		f := setupDeploy(t, b)
		f.deploy(t, capturedBody(t, "all-deploy.json", nil))
		var e map[string]any
		waitFor(t, 10*time.Second, "the deployment's log entry", func() bool {
			r := f.mustDo(t, 200, req{method: "GET", path: "/logs/operations?type=deploy"})
			data, _ := r.obj()["data"].([]any)
			if len(data) == 0 {
				return false
			}
			e = data[0].(map[string]any)
			return true
		})
		meta, _ := e["meta"].(map[string]any)
		if e["status"] != "success" || e["operation"] != "deploy" || e["integration"] != "fake" ||
			!strings.Contains(fmt.Sprint(meta["new"]), "fake/action/create-item@1.0.0") || meta["runtime"] != functions.JavaScriptRuntime {
			t.Errorf("the deployment's entry = %v", e)
		}
	})
}
