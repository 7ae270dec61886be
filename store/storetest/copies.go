package storetest

import (
	"testing"
	"time"

	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/oplog"
)

var copyTests = []test{
	{"Environment", testCopyEnvironment},
	{"APIKey", testCopyAPIKey},
	{"Integration", testCopyIntegration},
	{"Connection", testCopyConnection},
	{"Log", testCopyLog},
}

// The copy tests mutate records after handing them to the store and after
// getting them back, and check that the stored records did not change.

func testCopyEnvironment(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	want := *env
	want.WebhookURLs = []string{env.WebhookURLs[0]}
	env.WebhookURLs[0] = "https://mutated.example.com/input"

	got, err := s.GetEnvironment(ctx, env.ID)
	must(t, err)
	diff(t, "environment after mutating the input", &want, got)
	got.WebhookURLs[0] = "https://mutated.example.com/output"
	list, err := s.ListEnvironments(ctx)
	must(t, err)
	list[0].WebhookURLs[0] = "https://mutated.example.com/list"
	got, err = s.GetEnvironmentByName(ctx, "dev")
	must(t, err)
	diff(t, "environment after mutating outputs", &want, got)

	upd := want
	upd.WebhookURLs = []string{"https://new.example.com/hook"}
	must(t, s.UpdateEnvironment(ctx, &upd))
	upd.WebhookURLs[0] = "https://mutated.example.com/update"
	got, err = s.GetEnvironment(ctx, env.ID)
	must(t, err)
	if got.WebhookURLs[0] != "https://new.example.com/hook" {
		t.Errorf("mutating the input of UpdateEnvironment changed the store: %v", got.WebhookURLs)
	}
}

func testCopyAPIKey(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	k := newAPIKey(t, s, env.ID, "hash-0001", []string{"a", "b"})
	want := *k
	want.Hash = []byte("hash-0001")
	want.Scopes = []string{"a", "b"}
	k.Hash[0] = 'X'
	k.Scopes[0] = "mutated"

	got, err := s.GetAPIKeyByHash(ctx, []byte("hash-0001"))
	must(t, err)
	diff(t, "api key after mutating the input", &want, got)
	got.Hash[0] = 'Y'
	got.Scopes[1] = "mutated"
	list, err := s.ListAPIKeys(ctx, env.ID)
	must(t, err)
	list[0].Scopes[0] = "mutated"
	got, err = s.GetAPIKeyByHash(ctx, []byte("hash-0001"))
	must(t, err)
	diff(t, "api key after mutating outputs", &want, got)
}

func testCopyIntegration(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	in := newIntegration(t, s, env.ID, "github")
	want := *in
	want.IntegrationConfig = map[string]string{"app_slug": "github"}
	in.IntegrationConfig["app_slug"] = "mutated"
	in.IntegrationConfig["added"] = "mutated"

	got, err := s.GetIntegration(ctx, env.ID, "github")
	must(t, err)
	diff(t, "integration after mutating the input", &want, got)
	got.IntegrationConfig["app_slug"] = "mutated"
	list, err := s.ListIntegrations(ctx, env.ID)
	must(t, err)
	list[0].IntegrationConfig["added"] = "mutated"
	got, err = s.GetIntegration(ctx, env.ID, "github")
	must(t, err)
	diff(t, "integration after mutating outputs", &want, got)
}

func testCopyConnection(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	newIntegration(t, s, env.ID, "github")
	expires := at(60)
	c := &connections.Connection{
		EnvironmentID: env.ID, IntegrationKey: "github", ConnectionID: "u1",
		ConnectionConfig:     map[string]any{"nested": map[string]any{"k": "v"}},
		Metadata:             map[string]any{"list": []any{"a", map[string]any{"k": "v"}}},
		Tags:                 map[string]string{"org": "acme"},
		Errors:               []connections.Error{{Type: "auth", LogID: "l1"}},
		CredentialsExpiresAt: &expires,
		CreatedAt:            ts, UpdatedAt: ts,
	}
	must(t, s.CreateConnection(ctx, c))
	pristine := func() *connections.Connection {
		w := *c
		w.ConnectionConfig = map[string]any{"nested": map[string]any{"k": "v"}}
		w.Metadata = map[string]any{"list": []any{"a", map[string]any{"k": "v"}}}
		w.Tags = map[string]string{"org": "acme"}
		w.Errors = []connections.Error{{Type: "auth", LogID: "l1"}}
		e := at(60)
		w.CredentialsExpiresAt = &e
		return &w
	}
	want := pristine()
	mutate := func(c *connections.Connection) {
		c.ConnectionConfig["nested"].(map[string]any)["k"] = "mutated"
		c.Metadata["list"].([]any)[0] = "mutated"
		c.Metadata["list"].([]any)[1].(map[string]any)["k"] = "mutated"
		c.Tags["org"] = "mutated"
		c.Errors[0].Type = "mutated"
		*c.CredentialsExpiresAt = time.Time{}
	}
	mutate(c)

	got, err := s.GetConnection(ctx, env.ID, "github", "u1")
	must(t, err)
	diff(t, "connection after mutating the input", want, got)
	mutate(got)
	list, err := s.ListConnections(ctx, connections.Filter{EnvironmentID: env.ID})
	must(t, err)
	mutate(list[0])
	got, err = s.GetConnection(ctx, env.ID, "github", "u1")
	must(t, err)
	diff(t, "connection after mutating outputs", want, got)

	upd := pristine()
	upd.Version = got.Version
	must(t, s.UpdateConnection(ctx, upd))
	want.Version = upd.Version
	mutate(upd)
	got, err = s.GetConnection(ctx, env.ID, "github", "u1")
	must(t, err)
	diff(t, "connection after mutating the input of an update", want, got)
}

func testCopyLog(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	e := &oplog.Entry{ID: "l1", EnvironmentID: env.ID, Type: "auth", Operation: "create", Status: oplog.StatusSuccess,
		Meta: map[string]any{"nested": map[string]any{"k": "v"}}, CreatedAt: ts}
	must(t, s.AppendLog(ctx, e))
	want := *e
	want.Meta = map[string]any{"nested": map[string]any{"k": "v"}}
	e.Meta["nested"].(map[string]any)["k"] = "mutated"
	got, err := s.ListLogs(ctx, oplog.Filter{EnvironmentID: env.ID})
	must(t, err)
	diff(t, "log after mutating the input", []*oplog.Entry{&want}, got)
	got[0].Meta["nested"].(map[string]any)["k"] = "mutated"
	got, err = s.ListLogs(ctx, oplog.Filter{EnvironmentID: env.ID})
	must(t, err)
	diff(t, "log after mutating outputs", []*oplog.Entry{&want}, got)
}
