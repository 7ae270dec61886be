package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/embedauth/connect/functions"
	"github.com/embedauth/connect/store"
)

// The tests of FunctionStore.ListFunctionVersions: the versions PutFunction
// and DeleteFunction keep.
var functionVersionTests = []test{
	{"KeptOnChange", testFunctionVersionsKept},
	{"KeptOnDelete", testFunctionVersionsDeleted},
	{"Pruned", testFunctionVersionsPruned},
	{"Identity", testFunctionVersionsIdentity},
	{"Integration", testFunctionVersionsIntegration},
	{"Rollback", testFunctionVersionsRollback},
	{"DeployLock", testDeployLock},
}

// versionOf is the FunctionVersion of a stored function.
func versionOf(f *functions.Function) *functions.FunctionVersion {
	return &functions.FunctionVersion{EnvironmentID: f.EnvironmentID, Integration: f.Integration, Kind: f.Kind, Name: f.Name,
		Version: f.Version, Runtime: f.Runtime, Source: f.Source, SDKVersion: f.SDKVersion, Definition: f.Definition,
		Code: f.Code, SourceCode: f.SourceCode, DeployedAt: f.DeployedAt}
}

func listVersions(t *testing.T, s Store, f *functions.Function) []*functions.FunctionVersion {
	t.Helper()
	vs, err := s.ListFunctionVersions(t.Context(), f.EnvironmentID, f.Integration, f.Kind, f.Name)
	must(t, err)
	return vs
}

// deployedValue is a function of another runtime than Go's, as the
// nango CLI deploys them.
func deployedValue(env int64, integration string, kind functions.Kind, name string) *functions.Function {
	f := newFunctionValue(env, integration, kind, name)
	f.Runtime, f.Source = "javascript", "repo"
	return f
}

func testFunctionVersionsKept(t *testing.T, s Store) {
	env := newEnv(t, s, "dev")
	newIntegration(t, s, env.ID, "github")
	first := deployedValue(env.ID, "github", functions.KindSync, "issues")
	first.Version = "1.0.0"
	putFunction(t, s, first)
	must(t, s.SetFunctionEnabled(t.Context(), env.ID, "github", functions.KindSync, "issues", false))
	if vs := listVersions(t, s, first); len(vs) != 0 {
		t.Fatalf("a new function has %d earlier versions, want none", len(vs))
	}
	// Unchanged: nothing kept.
	same := deployedValue(env.ID, "github", functions.KindSync, "issues")
	same.DeployedAt = at(5)
	if putFunction(t, s, same) {
		t.Fatal("PutFunction of the same function reported a change")
	}
	if vs := listVersions(t, s, first); len(vs) != 0 {
		t.Fatalf("an unchanged put kept %d versions, want none", len(vs))
	}
	second := deployedValue(env.ID, "github", functions.KindSync, "issues")
	second.Code, second.SourceCode, second.SDKVersion = []byte("module.exports = 2"), []byte("export default 2"), "0.72.0-zero"
	second.Definition.Description, second.DeployedAt = "second", at(10)
	putFunction(t, s, second)
	if second.Version != "1.0.1" || second.Enabled {
		t.Errorf("after a change: version %q, enabled %v; want 1.0.1, still disabled", second.Version, second.Enabled)
	}
	third := deployedValue(env.ID, "github", functions.KindSync, "issues")
	third.Version, third.DeployedAt = "2.0.0", at(20) // only the version differs
	putFunction(t, s, third)
	fdiff(t, "versions after two changes", []*functions.FunctionVersion{versionOf(second), versionOf(first)},
		listVersions(t, s, first))
}

func testFunctionVersionsDeleted(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	newIntegration(t, s, env.ID, "github")
	f := deployedValue(env.ID, "github", functions.KindAction, "create")
	putFunction(t, s, f)
	must(t, s.DeleteFunction(ctx, env.ID, "github", functions.KindAction, "create"))
	fdiff(t, "versions after DeleteFunction", []*functions.FunctionVersion{versionOf(f)}, listVersions(t, s, f))
	wantErr(t, "DeleteFunction again", s.DeleteFunction(ctx, env.ID, "github", functions.KindAction, "create"), store.ErrNotFound)
	if n := len(listVersions(t, s, f)); n != 1 {
		t.Errorf("a refused DeleteFunction left %d versions, want 1", n)
	}
	// The function deployed again starts at version 1; its history goes on.
	again := deployedValue(env.ID, "github", functions.KindAction, "create")
	again.Definition.Description = "again"
	putFunction(t, s, again)
	if again.Version != "1" {
		t.Errorf("deployed again: version %q, want 1", again.Version)
	}
	changed := deployedValue(env.ID, "github", functions.KindAction, "create")
	changed.DeployedAt = at(30)
	putFunction(t, s, changed)
	fdiff(t, "versions after a new life", []*functions.FunctionVersion{versionOf(again), versionOf(f)}, listVersions(t, s, f))
}

func testFunctionVersionsPruned(t *testing.T, s Store) {
	env := newEnv(t, s, "dev")
	newIntegration(t, s, env.ID, "github")
	n := functions.FunctionVersionsKept + 3
	for i := range n {
		f := deployedValue(env.ID, "github", functions.KindAction, "create")
		f.Definition.Description = fmt.Sprint("v", i)
		f.DeployedAt = at(i)
		putFunction(t, s, f)
	}
	vs := listVersions(t, s, deployedValue(env.ID, "github", functions.KindAction, "create"))
	if len(vs) != functions.FunctionVersionsKept {
		t.Fatalf("%d versions kept after %d changes, want %d", len(vs), n-1, functions.FunctionVersionsKept)
	}
	// The newest first: the one before the current, and so on.
	for i, v := range vs {
		if want := fmt.Sprint("v", n-2-i); v.Definition.Description != want || v.Version != fmt.Sprint(n-1-i) {
			t.Errorf("version %d: %q (version %q), want %q (version %d)", i, v.Definition.Description, v.Version, want, n-1-i)
		}
	}
}

func testFunctionVersionsIdentity(t *testing.T, s Store) {
	ctx := t.Context()
	dev, prod := newEnv(t, s, "dev"), newEnv(t, s, "prod")
	newIntegration(t, s, dev.ID, "github")
	newIntegration(t, s, dev.ID, "slack")
	newIntegration(t, s, prod.ID, "github")
	change := func(env int64, integration string, kind functions.Kind, name string) {
		t.Helper()
		putFunction(t, s, deployedValue(env, integration, kind, name))
		f := deployedValue(env, integration, kind, name)
		f.Definition.Description = "changed"
		putFunction(t, s, f)
	}
	change(dev.ID, "github", functions.KindSync, "issues")
	change(dev.ID, "github", functions.KindAction, "issues")
	change(dev.ID, "slack", functions.KindSync, "issues")
	change(prod.ID, "github", functions.KindSync, "issues")
	must(t, s.DeleteFunction(ctx, dev.ID, "github", functions.KindAction, "issues"))
	for _, tc := range []struct {
		env         int64
		integration string
		kind        functions.Kind
		name        string
		want        int
	}{
		{dev.ID, "github", functions.KindSync, "issues", 1},
		{dev.ID, "github", functions.KindAction, "issues", 2},
		{dev.ID, "slack", functions.KindSync, "issues", 1},
		{prod.ID, "github", functions.KindSync, "issues", 1},
		{dev.ID, "github", functions.KindSync, "Issues", 0},
		{dev.ID, "gitlab", functions.KindSync, "issues", 0},
		{dev.ID + prod.ID + 1000, "github", functions.KindSync, "issues", 0},
	} {
		vs, err := s.ListFunctionVersions(ctx, tc.env, tc.integration, tc.kind, tc.name)
		must(t, err)
		if len(vs) != tc.want {
			t.Errorf("ListFunctionVersions(%d, %s, %s, %s): %d versions, want %d", tc.env, tc.integration, tc.kind, tc.name, len(vs), tc.want)
		}
		for _, v := range vs {
			if v.EnvironmentID != tc.env || v.Integration != tc.integration || v.Kind != tc.kind || v.Name != tc.name {
				t.Errorf("ListFunctionVersions(%d, %s, %s, %s) listed a version of %d, %s, %s, %s", tc.env, tc.integration,
					tc.kind, tc.name, v.EnvironmentID, v.Integration, v.Kind, v.Name)
			}
		}
	}
}

// testFunctionVersionsIntegration: versions follow their integration, as
// functions do: renamed with it, deleted with it.
func testFunctionVersionsIntegration(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	in := newIntegration(t, s, env.ID, "github")
	f := deployedValue(env.ID, "github", functions.KindSync, "issues")
	putFunction(t, s, f)
	must(t, s.DeleteFunction(ctx, env.ID, "github", functions.KindSync, "issues"))
	in.UniqueKey = "github-app"
	must(t, s.UpdateIntegration(ctx, in))
	if n := len(listVersions(t, s, f)); n != 0 {
		t.Errorf("%d versions under the old key, want none", n)
	}
	want := versionOf(f)
	want.Integration = "github-app"
	moved := deployedValue(env.ID, "github-app", functions.KindSync, "issues")
	fdiff(t, "versions under the new key", []*functions.FunctionVersion{want}, listVersions(t, s, moved))
	must(t, s.DeleteIntegration(ctx, env.ID, "github-app"))
	newIntegration(t, s, env.ID, "github-app")
	if n := len(listVersions(t, s, moved)); n != 0 {
		t.Errorf("%d versions after the integration was deleted, want none", n)
	}
}

func testFunctionVersionsRollback(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	newIntegration(t, s, env.ID, "github")
	f := deployedValue(env.ID, "github", functions.KindSync, "issues")
	putFunction(t, s, f)
	err := s.WithTx(ctx, func(ctx context.Context) error {
		g := deployedValue(env.ID, "github", functions.KindSync, "issues")
		g.Definition.Description = "changed"
		if _, err := s.PutFunction(ctx, g); err != nil {
			return err
		}
		if err := s.DeleteFunction(ctx, env.ID, "github", functions.KindSync, "issues"); err != nil {
			return err
		}
		vs, err := s.ListFunctionVersions(ctx, env.ID, "github", functions.KindSync, "issues")
		if err != nil {
			return err
		}
		if len(vs) != 2 {
			t.Errorf("inside the transaction: %d versions, want 2", len(vs))
		}
		return errRollback
	})
	if !errors.Is(err, errRollback) {
		t.Fatalf("WithTx returned %v, want errRollback", err)
	}
	if n := len(listVersions(t, s, f)); n != 0 {
		t.Errorf("%d versions after the rollback, want none", n)
	}
	fdiff(t, "function after the rollback", f, getFunction(t, s, f))
}

// testDeployLock checks functions.DeployLocker, for a Store that has it:
// one transaction holds an environment's lock, another is refused at once,
// an environment's lock does not hold another's, and the end of the
// transaction releases it.
func testDeployLock(t *testing.T, s Store) {
	l, ok := s.(functions.DeployLocker)
	if !ok {
		t.Skip("the Store is no functions.DeployLocker")
	}
	ctx := t.Context()
	dev, prod := newEnv(t, s, "dev"), newEnv(t, s, "prod")
	if _, err := l.TryLockDeploy(ctx, dev.ID); err == nil {
		t.Error("TryLockDeploy outside a transaction returned no error")
	}
	held := make(chan struct{})
	release := make(chan struct{})
	aErr := make(chan error, 1)
	go func() {
		aErr <- s.WithTx(ctx, func(ctx context.Context) error {
			for range 2 { // taken again by its holder
				ok, err := l.TryLockDeploy(ctx, dev.ID)
				if err != nil || !ok {
					return fmt.Errorf("A: TryLockDeploy = %v, %v; want true", ok, err)
				}
			}
			close(held)
			<-release
			return nil
		})
	}()
	select {
	case <-held:
	case err := <-aErr:
		t.Fatal(err)
	}
	try := func(env int64) bool {
		t.Helper()
		var got bool
		must(t, s.WithTx(ctx, func(ctx context.Context) error {
			var err error
			got, err = l.TryLockDeploy(ctx, env)
			return err
		}))
		return got
	}
	if try(dev.ID) {
		t.Error("TryLockDeploy while another transaction holds the lock returned true")
	}
	if !try(prod.ID) {
		t.Error("TryLockDeploy of another environment returned false")
	}
	close(release)
	must(t, <-aErr)
	if !try(dev.ID) {
		t.Error("TryLockDeploy after the holder's transaction ended returned false")
	}
}
