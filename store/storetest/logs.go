package storetest

import (
	"fmt"
	"testing"

	"github.com/embedauth/connect/oplog"
	"github.com/embedauth/connect/store"
)

var logTests = []test{
	{"Filters", testLogFilters},
	{"Limit", testLogLimit},
	{"Conflict", testLogConflict},
}

func testLogFilters(t *testing.T, s Store) {
	ctx := t.Context()
	a := newEnv(t, s, "a")
	b := newEnv(t, s, "b")
	entries := []*oplog.Entry{
		{ID: "e1", EnvironmentID: a.ID, Type: "connection", Operation: "create", Status: oplog.StatusSuccess,
			IntegrationKey: "github", ConnectionID: "u1", Message: "Connection created",
			Meta: map[string]any{"auth_mode": "OAUTH2", "scopes": []any{"repo", "user"}, "n": float64(2)}, CreatedAt: at(0)},
		{ID: "e2", EnvironmentID: a.ID, Type: "auth", Operation: "refresh", Status: oplog.StatusFailure,
			IntegrationKey: "github", ConnectionID: "u2", Message: "Refresh failed: invalid_grant", CreatedAt: at(1)},
		{ID: "e3", EnvironmentID: a.ID, Type: "connection", Operation: "delete", Status: oplog.StatusSuccess,
			IntegrationKey: "slack", ConnectionID: "u1", CreatedAt: at(2)},
		// Same CreatedAt as e3: the larger ID comes first.
		{ID: "e4", EnvironmentID: a.ID, Type: "webhook", Operation: "delivery", Status: oplog.StatusSuccess,
			Meta: map[string]any{}, CreatedAt: at(2)},
		{ID: "e5", EnvironmentID: b.ID, Type: "connection", Operation: "create", Status: oplog.StatusSuccess,
			IntegrationKey: "github", ConnectionID: "u1", CreatedAt: at(3)},
	}
	// Appended out of time order: ordering is by CreatedAt, not insertion.
	for _, i := range []int{2, 0, 4, 3, 1} {
		must(t, s.AppendLog(ctx, entries[i]))
	}
	e1, e2, e3, e4, e5 := entries[0], entries[1], entries[2], entries[3], entries[4]

	for _, tc := range []struct {
		name string
		f    oplog.Filter
		want []*oplog.Entry
	}{
		{"environment", oplog.Filter{EnvironmentID: a.ID}, []*oplog.Entry{e4, e3, e2, e1}},
		{"other environment", oplog.Filter{EnvironmentID: b.ID}, []*oplog.Entry{e5}},
		{"every environment", oplog.Filter{}, []*oplog.Entry{e5, e4, e3, e2, e1}},
		{"type", oplog.Filter{EnvironmentID: a.ID, Type: "connection"}, []*oplog.Entry{e3, e1}},
		{"integration", oplog.Filter{EnvironmentID: a.ID, IntegrationKey: "github"}, []*oplog.Entry{e2, e1}},
		{"connection", oplog.Filter{EnvironmentID: a.ID, ConnectionID: "u1"}, []*oplog.Entry{e3, e1}},
		{"since is inclusive", oplog.Filter{EnvironmentID: a.ID, Since: at(1)}, []*oplog.Entry{e4, e3, e2}},
		{"until is exclusive", oplog.Filter{EnvironmentID: a.ID, Until: at(2)}, []*oplog.Entry{e2, e1}},
		{"since and until", oplog.Filter{EnvironmentID: a.ID, Since: at(1), Until: at(2)}, []*oplog.Entry{e2}},
		{"limit", oplog.Filter{EnvironmentID: a.ID, Limit: 2}, []*oplog.Entry{e4, e3}},
		{"combined", oplog.Filter{EnvironmentID: a.ID, Type: "connection", IntegrationKey: "github",
			ConnectionID: "u1", Since: at(0), Until: at(1)}, []*oplog.Entry{e1}},
		{"no match", oplog.Filter{EnvironmentID: a.ID, Type: "proxy"}, []*oplog.Entry{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.ListLogs(ctx, tc.f)
			must(t, err)
			diff(t, fmt.Sprintf("ListLogs(%+v)", tc.f), tc.want, got)
		})
	}

	got, err := s.ListLogs(ctx, oplog.Filter{EnvironmentID: a.ID, Type: "webhook"})
	must(t, err)
	if len(got) != 1 || got[0].Meta == nil {
		t.Errorf("empty Meta came back nil: %+v", got)
	}
	got, err = s.ListLogs(ctx, oplog.Filter{EnvironmentID: a.ID, Type: "auth"})
	must(t, err)
	if len(got) != 1 || got[0].Meta != nil {
		t.Errorf("nil Meta came back non-nil: %+v", got)
	}
}

func testLogLimit(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	const n = 105
	for i := range n {
		must(t, s.AppendLog(ctx, &oplog.Entry{ID: fmt.Sprintf("log-%03d", i), EnvironmentID: env.ID,
			Type: "proxy", Operation: "call", Status: oplog.StatusSuccess, CreatedAt: at(i)}))
	}
	ids := func(f oplog.Filter) []string {
		t.Helper()
		list, err := s.ListLogs(ctx, f)
		must(t, err)
		out := []string{}
		for _, e := range list {
			out = append(out, e.ID)
		}
		return out
	}
	var want []string
	for i := n - 1; i >= n-100; i-- {
		want = append(want, fmt.Sprintf("log-%03d", i))
	}
	diff(t, "default limit of 100, newest first", want, ids(oplog.Filter{EnvironmentID: env.ID}))
	diff(t, "limit 3", want[:3], ids(oplog.Filter{EnvironmentID: env.ID, Limit: 3}))
	if got := ids(oplog.Filter{EnvironmentID: env.ID, Limit: 200}); len(got) != n {
		t.Errorf("limit 200 returned %d entries, want %d", len(got), n)
	}
}

func testLogConflict(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	e := &oplog.Entry{ID: "dup", EnvironmentID: env.ID, Type: "auth", Operation: "create",
		Status: oplog.StatusSuccess, Message: "first", CreatedAt: ts}
	must(t, s.AppendLog(ctx, e))
	dup := *e
	dup.Message = "second"
	wantErr(t, "AppendLog(duplicate id)", s.AppendLog(ctx, &dup), store.ErrConflict)
	got, err := s.ListLogs(ctx, oplog.Filter{EnvironmentID: env.ID})
	must(t, err)
	diff(t, "logs", []*oplog.Entry{e}, got)
}
