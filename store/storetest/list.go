package storetest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/functions"
	"github.com/embedauth/connect/store"
)

var listConnectionsTests = []test{
	{"Filters", testListConnectionsFilters},
	{"Pagination", testListConnectionsPagination},
	{"Health", testListConnectionsHealth},
}

// ref names a connection in expectations: "<environment>:<integration>/<connection id>".
func ref(envName string, c *connections.Connection) string {
	return fmt.Sprintf("%s:%s/%s", envName, c.IntegrationKey, c.ConnectionID)
}

func testListConnectionsFilters(t *testing.T, s Store) {
	ctx := t.Context()
	a := newEnv(t, s, "a")
	b := newEnv(t, s, "b")
	for _, k := range []string{"github", "slack", "jira"} {
		newIntegration(t, s, a.ID, k)
	}
	newIntegration(t, s, b.ID, "github")
	envName := map[int64]string{a.ID: "a", b.ID: "b"}
	// Created in this order, so ordered by ID in this order.
	for _, c := range []struct {
		env      int64
		key, cid string
		tags     map[string]string
	}{
		{a.ID, "github", "user-1", map[string]string{"org": "acme", "team": "x"}},
		{a.ID, "slack", "user-1", map[string]string{"org": "acme"}},
		{a.ID, "github", "user-2", map[string]string{"org": "globex", "team": "x"}},
		{a.ID, "jira", "100%_done", nil},
		{a.ID, "jira", "100xxdone", nil},
		{a.ID, "github", "User-10", map[string]string{"org": "acme"}},
		{b.ID, "github", "user-1", map[string]string{"org": "acme", "team": "x"}},
		{a.ID, "jira", `back\slash`, map[string]string{}},
	} {
		newConn(t, s, c.env, c.key, c.cid, c.tags)
	}

	for _, tc := range []struct {
		name string
		f    connections.Filter
		want []string
	}{
		{"environment", connections.Filter{EnvironmentID: a.ID}, []string{
			"a:github/user-1", "a:slack/user-1", "a:github/user-2", "a:jira/100%_done",
			"a:jira/100xxdone", "a:github/User-10", `a:jira/back\slash`}},
		{"other environment", connections.Filter{EnvironmentID: b.ID}, []string{"b:github/user-1"}},
		{"every environment", connections.Filter{}, []string{
			"a:github/user-1", "a:slack/user-1", "a:github/user-2", "a:jira/100%_done",
			"a:jira/100xxdone", "a:github/User-10", "b:github/user-1", `a:jira/back\slash`}},
		{"connection id across integrations", connections.Filter{EnvironmentID: a.ID, ConnectionID: "user-1"},
			[]string{"a:github/user-1", "a:slack/user-1"}},
		{"connection id across environments", connections.Filter{ConnectionID: "user-1"},
			[]string{"a:github/user-1", "a:slack/user-1", "b:github/user-1"}},
		{"connection id is exact", connections.Filter{EnvironmentID: a.ID, ConnectionID: "user"}, nil},
		{"integration keys", connections.Filter{EnvironmentID: a.ID, IntegrationKeys: []string{"slack", "jira"}},
			[]string{"a:slack/user-1", "a:jira/100%_done", "a:jira/100xxdone", `a:jira/back\slash`}},
		{"unknown integration key", connections.Filter{EnvironmentID: a.ID, IntegrationKeys: []string{"nope"}}, nil},
		{"one tag", connections.Filter{EnvironmentID: a.ID, Tags: map[string]string{"team": "x"}},
			[]string{"a:github/user-1", "a:github/user-2"}},
		{"all tags", connections.Filter{EnvironmentID: a.ID, Tags: map[string]string{"org": "acme", "team": "x"}},
			[]string{"a:github/user-1"}},
		{"tag value mismatch", connections.Filter{EnvironmentID: a.ID, Tags: map[string]string{"org": "nobody"}}, nil},
		{"search is case-insensitive", connections.Filter{EnvironmentID: a.ID, Search: "USER-1"},
			[]string{"a:github/user-1", "a:slack/user-1", "a:github/User-10"}},
		{"search percent is literal", connections.Filter{EnvironmentID: a.ID, Search: "%"}, []string{"a:jira/100%_done"}},
		{"search underscore is literal", connections.Filter{EnvironmentID: a.ID, Search: "_"}, []string{"a:jira/100%_done"}},
		{"search both literal", connections.Filter{EnvironmentID: a.ID, Search: "0%_d"}, []string{"a:jira/100%_done"}},
		{"search backslash is literal", connections.Filter{EnvironmentID: a.ID, Search: `k\s`}, []string{`a:jira/back\slash`}},
		{"search substring", connections.Filter{EnvironmentID: a.ID, Search: "xx"}, []string{"a:jira/100xxdone"}},
		{"search no match", connections.Filter{EnvironmentID: a.ID, Search: "zzz"}, nil},
		{"combined", connections.Filter{EnvironmentID: a.ID, IntegrationKeys: []string{"github"},
			Tags: map[string]string{"team": "x"}, Search: "user"},
			[]string{"a:github/user-1", "a:github/user-2"}},
		{"connection id and integration", connections.Filter{EnvironmentID: a.ID, ConnectionID: "user-1",
			IntegrationKeys: []string{"slack"}}, []string{"a:slack/user-1"}},
		{"combined with page", connections.Filter{EnvironmentID: a.ID, Search: "user",
			Page: store.Page{Limit: 2, Offset: 1}}, []string{"a:slack/user-1", "a:github/user-2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			list, err := s.ListConnections(ctx, tc.f)
			must(t, err)
			got := []string{}
			for _, c := range list {
				got = append(got, ref(envName[c.EnvironmentID], c))
			}
			want := tc.want
			if want == nil {
				want = []string{}
			}
			diff(t, fmt.Sprintf("ListConnections(%+v)", tc.f), want, got)
		})
	}
}

func testListConnectionsPagination(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	newIntegration(t, s, env.ID, "a")
	newIntegration(t, s, env.ID, "b")
	var all, onlyA []int64
	for i := range 25 {
		key := "a"
		if i%3 == 0 {
			key = "b"
		}
		c := newConn(t, s, env.ID, key, fmt.Sprintf("conn-%02d", 24-i), nil)
		all = append(all, c.ID)
		if key == "a" {
			onlyA = append(onlyA, c.ID)
		}
	}
	ids := func(f connections.Filter) []int64 {
		t.Helper()
		list, err := s.ListConnections(ctx, f)
		must(t, err)
		out := []int64{}
		for _, c := range list {
			out = append(out, c.ID)
		}
		return out
	}
	for i := 1; i < len(all); i++ {
		if all[i] <= all[i-1] {
			t.Fatalf("IDs are not increasing in creation order: %v", all)
		}
	}

	diff(t, "default limit", all, ids(connections.Filter{EnvironmentID: env.ID}))
	for _, tc := range []struct {
		f    connections.Filter
		want []int64
	}{
		{connections.Filter{EnvironmentID: env.ID}, all},
		{connections.Filter{EnvironmentID: env.ID, IntegrationKeys: []string{"a"}}, onlyA},
	} {
		for _, limit := range []int{1, 7, 25, 30} {
			var paged []int64
			for offset := 0; offset < len(tc.want)+limit; offset += limit {
				f := tc.f
				f.Page = store.Page{Limit: limit, Offset: offset}
				page := ids(f)
				if len(page) > limit {
					t.Fatalf("page of limit %d has %d items", limit, len(page))
				}
				paged = append(paged, page...)
			}
			diff(t, fmt.Sprintf("pages of %d of %v", limit, tc.f.IntegrationKeys), tc.want, paged)
		}
	}
	diff(t, "offset past the end", []int64{}, ids(connections.Filter{EnvironmentID: env.ID, Page: store.Page{Offset: 25}}))
	diff(t, "limit only", all[:3], ids(connections.Filter{EnvironmentID: env.ID, Page: store.Page{Limit: 3}}))
	diff(t, "offset only", all[20:], ids(connections.Filter{EnvironmentID: env.ID, Page: store.Page{Offset: 20}}))
}

// testListConnectionsHealth: the Health filter reads each connection's
// errors and the state of its syncs (any variant): auth_error is an error
// of type auth, sync_error a sync whose latest finished run stopped (a
// run in progress after it does not count, a success after it clears
// it), paused a paused sync, error any error or a failed sync, ok the
// others. It combines with the other filters and keyset paging.
// SyncHealth reports the same sync state for the connections that have
// syncs, in one call.
func testListConnectionsHealth(t *testing.T, s Store) {
	ctx := t.Context()
	a := newEnv(t, s, "a")
	b := newEnv(t, s, "b")
	newIntegration(t, s, a.ID, "github")
	newIntegration(t, s, a.ID, "slack")
	newIntegration(t, s, b.ID, "github")
	conns := map[string]*connections.Connection{}
	conn := func(env int64, key, id string, errs []connections.Error) *connections.Connection {
		c := newConn(t, s, env, key, id, nil)
		if errs != nil {
			c.Errors = errs
			must(t, s.UpdateConnection(ctx, c))
		}
		conns[id] = c
		return c
	}
	sync := func(c *connections.Connection, variant string, paused bool, runs ...string) {
		sc := newScheduleValue(c.EnvironmentID, c.ID, c.IntegrationKey, c.ConnectionID, "issues", variant)
		if paused {
			sc.Paused, sc.NextRunAt = true, nil
		}
		createSyncs(t, s, sc)
		for i, status := range runs {
			createRun(t, s, newRunValue(sc.ID, status, at(i)))
		}
	}
	auth := []connections.Error{{Type: connections.ErrorTypeAuth, LogID: "log-1"}}
	conn(a.ID, "github", "ok", nil)
	conn(a.ID, "github", "auth", auth)
	conn(a.ID, "github", "other-error", []connections.Error{{Type: "other", LogID: "log-2"}})
	conn(a.ID, "github", "no-errors", []connections.Error{})
	sync(conn(a.ID, "github", "sync-failed", nil), functions.BaseVariant, false,
		functions.RunSuccess, functions.RunStopped, functions.RunRunning)
	sync(conn(a.ID, "slack", "sync-recovered", nil), functions.BaseVariant, false, functions.RunStopped, functions.RunSuccess)
	sync(conn(a.ID, "github", "paused", nil), functions.BaseVariant, true, functions.RunSuccess)
	variant := conn(a.ID, "slack", "variant-failed", nil)
	sync(variant, functions.BaseVariant, false, functions.RunSuccess)
	sync(variant, "blue", false, functions.RunStopped)
	authPaused := conn(a.ID, "github", "auth-paused", auth)
	sync(authPaused, functions.BaseVariant, true)
	sync(conn(a.ID, "github", "queued", nil), functions.BaseVariant, false, functions.RunQueued)
	conn(b.ID, "github", "b-auth", auth)

	list := func(f connections.Filter) []string {
		t.Helper()
		got, err := s.ListConnections(ctx, f)
		must(t, err)
		out := []string{}
		for _, c := range got {
			out = append(out, c.ConnectionID)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		f    connections.Filter
		want []string
	}{
		{"auth error", connections.Filter{EnvironmentID: a.ID, Health: connections.HealthAuthError}, []string{"auth", "auth-paused"}},
		{"sync error", connections.Filter{EnvironmentID: a.ID, Health: connections.HealthSyncError}, []string{"sync-failed", "variant-failed"}},
		{"paused", connections.Filter{EnvironmentID: a.ID, Health: connections.HealthPaused}, []string{"paused", "auth-paused"}},
		{"error", connections.Filter{EnvironmentID: a.ID, Health: connections.HealthError},
			[]string{"auth", "other-error", "sync-failed", "variant-failed", "auth-paused"}},
		{"ok", connections.Filter{EnvironmentID: a.ID, Health: connections.HealthOK},
			[]string{"ok", "no-errors", "sync-recovered", "paused", "queued"}},
		{"every environment", connections.Filter{Health: connections.HealthAuthError}, []string{"auth", "auth-paused", "b-auth"}},
		{"with an integration", connections.Filter{EnvironmentID: a.ID, Health: connections.HealthError, IntegrationKeys: []string{"slack"}},
			[]string{"variant-failed"}},
		{"with a search", connections.Filter{EnvironmentID: a.ID, Health: connections.HealthOK, Search: "e"},
			[]string{"no-errors", "sync-recovered", "paused", "queued"}},
		{"after a position", connections.Filter{EnvironmentID: a.ID, Health: connections.HealthError, AfterID: conns["sync-failed"].ID},
			[]string{"variant-failed", "auth-paused"}},
		{"a page", connections.Filter{EnvironmentID: a.ID, Health: connections.HealthOK, Page: store.Page{Limit: 2, Offset: 1}},
			[]string{"no-errors", "sync-recovered"}},
	} {
		diff(t, tc.name, tc.want, list(tc.f))
	}
	if _, err := s.ListConnections(ctx, connections.Filter{EnvironmentID: a.ID, Health: "broken"}); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("an unknown health filter: %v, want ErrInvalid", err)
	}

	var ids []int64
	for _, c := range conns {
		ids = append(ids, c.ID)
	}
	got, err := s.SyncHealth(ctx, append(ids, conns["b-auth"].ID+1000))
	must(t, err)
	byID := map[string]connections.Health{}
	for id, h := range got {
		for name, c := range conns {
			if c.ID == id {
				byID[name] = h
			}
		}
	}
	diff(t, "SyncHealth", map[string]connections.Health{
		"sync-failed":    {SyncError: true},
		"sync-recovered": {},
		"paused":         {Paused: true},
		"variant-failed": {SyncError: true},
		"auth-paused":    {Paused: true},
		"queued":         {},
	}, byID)
	if len(got) != len(byID) {
		t.Errorf("SyncHealth answered for connections that do not exist: %v", got)
	}
	got, err = s.SyncHealth(ctx, nil)
	must(t, err)
	diff(t, "SyncHealth of none", map[int64]connections.Health{}, got)
}
