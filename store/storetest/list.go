package storetest

import (
	"fmt"
	"testing"

	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/store"
)

var listConnectionsTests = []test{
	{"Filters", testListConnectionsFilters},
	{"Pagination", testListConnectionsPagination},
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
