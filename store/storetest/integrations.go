package storetest

import (
	"testing"

	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/store"
)

var integrationTests = []test{
	{"CRUD", testIntegrationCRUD},
	{"NotFound", testIntegrationNotFound},
	{"Conflict", testIntegrationConflict},
	{"Rename", testIntegrationRename},
	{"RenameWithConnections", testIntegrationRenameWithConnections},
	{"DeleteCascades", testIntegrationDeleteCascades},
	{"Secrets", testIntegrationSecrets},
}

// stored returns in as a Store returns it: without plaintext secrets.
func storedIntegration(in *integrations.Integration) *integrations.Integration {
	c := *in
	c.Credentials = nil
	c.Custom = nil
	return &c
}

func testIntegrationCRUD(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	gh := newIntegration(t, s, env.ID, "github")
	sl := &integrations.Integration{
		EnvironmentID:   env.ID,
		UniqueKey:       "slack-prod",
		Provider:        "slack",
		DisplayName:     "Slack",
		ForwardWebhooks: true,
		CreatedAt:       at(1),
		UpdatedAt:       at(1),
	}
	must(t, s.CreateIntegration(ctx, sl))

	got, err := s.GetIntegration(ctx, env.ID, "slack-prod")
	must(t, err)
	diff(t, "GetIntegration", sl, got)
	list, err := s.ListIntegrations(ctx, env.ID)
	must(t, err)
	diff(t, "ListIntegrations", []*integrations.Integration{gh, sl}, list)

	upd := *gh
	upd.Provider = "github-app"
	upd.DisplayName = "GitHub App"
	upd.ForwardWebhooks = true
	upd.IntegrationConfig = map[string]string{"app_slug": "new", "base_url": "https://ghe.example.com"}
	upd.SealedCredentials = "v1:k2:bmV3"
	upd.SealedCustom = "v1:k2:Y3VzdG9t"
	upd.CreatedAt = at(100) // ignored
	upd.UpdatedAt = at(5)
	must(t, s.UpdateIntegration(ctx, &upd))
	want := upd
	want.CreatedAt = gh.CreatedAt
	got, err = s.GetIntegration(ctx, env.ID, "github")
	must(t, err)
	diff(t, "integration after update", &want, got)

	must(t, s.DeleteIntegration(ctx, env.ID, "github"))
	_, err = s.GetIntegration(ctx, env.ID, "github")
	wantErr(t, "GetIntegration(deleted)", err, store.ErrNotFound)
	list, err = s.ListIntegrations(ctx, env.ID)
	must(t, err)
	diff(t, "ListIntegrations after delete", []*integrations.Integration{sl}, list)
}

func testIntegrationNotFound(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	gh := newIntegration(t, s, env.ID, "github")
	_, err := s.GetIntegration(ctx, env.ID, "nope")
	wantErr(t, "GetIntegration", err, store.ErrNotFound)
	missing := *gh
	missing.ID = gh.ID + 1000
	missing.UniqueKey = "other"
	wantErr(t, "UpdateIntegration", s.UpdateIntegration(ctx, &missing), store.ErrNotFound)
	wantErr(t, "DeleteIntegration", s.DeleteIntegration(ctx, env.ID, "nope"), store.ErrNotFound)
	must(t, s.DeleteIntegration(ctx, env.ID, "github"))
	wantErr(t, "DeleteIntegration(deleted)", s.DeleteIntegration(ctx, env.ID, "github"), store.ErrNotFound)
	wantErr(t, "UpdateIntegration(deleted)", s.UpdateIntegration(ctx, gh), store.ErrNotFound)
}

func testIntegrationConflict(t *testing.T, s Store) {
	ctx := t.Context()
	a := newEnv(t, s, "a")
	b := newEnv(t, s, "b")
	gh := newIntegration(t, s, a.ID, "github")
	dup := newIntegrationValue(a.ID, "github")
	dup.DisplayName = "duplicate"
	wantErr(t, "CreateIntegration(duplicate key)", s.CreateIntegration(ctx, dup), store.ErrConflict)
	got, err := s.GetIntegration(ctx, a.ID, "github")
	must(t, err)
	diff(t, "integration after refused duplicate", gh, got)

	// The same key in another environment is fine.
	ghB := newIntegration(t, s, b.ID, "github")
	if ghB.ID == gh.ID {
		t.Fatalf("two integrations got ID %d", gh.ID)
	}
}

func testIntegrationRename(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	gh := newIntegration(t, s, env.ID, "github")
	sl := newIntegration(t, s, env.ID, "slack")

	// Onto an existing key: refused, nothing changes.
	onto := *gh
	onto.UniqueKey = "slack"
	onto.DisplayName = "changed"
	wantErr(t, "UpdateIntegration(onto existing key)", s.UpdateIntegration(ctx, &onto), store.ErrConflict)
	list, err := s.ListIntegrations(ctx, env.ID)
	must(t, err)
	diff(t, "integrations after refused rename", []*integrations.Integration{gh, sl}, list)

	// Without connections: allowed.
	renamed := *gh
	renamed.UniqueKey = "github-2"
	renamed.UpdatedAt = at(1)
	must(t, s.UpdateIntegration(ctx, &renamed))
	got, err := s.GetIntegration(ctx, env.ID, "github-2")
	must(t, err)
	diff(t, "renamed integration", &renamed, got)
	_, err = s.GetIntegration(ctx, env.ID, "github")
	wantErr(t, "GetIntegration(old key)", err, store.ErrNotFound)

	// The old key is free again, and connections follow the new key.
	newIntegration(t, s, env.ID, "github")
	newConn(t, s, env.ID, "github-2", "u1", nil)
	n, err := s.CountConnections(ctx, env.ID, "github")
	must(t, err)
	if n != 0 {
		t.Errorf("CountConnections(github) = %d, want 0", n)
	}
}

func testIntegrationRenameWithConnections(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	gh := newIntegration(t, s, env.ID, "github")
	c := newConn(t, s, env.ID, "github", "u1", nil)

	renamed := *gh
	renamed.UniqueKey = "github-2"
	renamed.DisplayName = "changed"
	wantErr(t, "UpdateIntegration(rename with connections)", s.UpdateIntegration(ctx, &renamed), store.ErrConflict)
	got, err := s.GetIntegration(ctx, env.ID, "github")
	must(t, err)
	diff(t, "integration after refused rename", gh, got)
	_, err = s.GetIntegration(ctx, env.ID, "github-2")
	wantErr(t, "GetIntegration(new key)", err, store.ErrNotFound)
	gotConn, err := s.GetConnection(ctx, env.ID, "github", "u1")
	must(t, err)
	diff(t, "connection after refused rename", storedConnection(c), gotConn)

	// Other fields can change while connections exist.
	same := *gh
	same.DisplayName = "changed"
	same.UpdatedAt = at(1)
	must(t, s.UpdateIntegration(ctx, &same))
	got, err = s.GetIntegration(ctx, env.ID, "github")
	must(t, err)
	diff(t, "integration after update keeping its key", &same, got)

	// Once the connections are gone, the rename works.
	must(t, s.DeleteConnection(ctx, env.ID, "github", "u1"))
	must(t, s.UpdateIntegration(ctx, &renamed))
	_, err = s.GetIntegration(ctx, env.ID, "github-2")
	must(t, err)
}

func testIntegrationDeleteCascades(t *testing.T, s Store) {
	ctx := t.Context()
	a := newEnv(t, s, "a")
	b := newEnv(t, s, "b")
	newIntegration(t, s, a.ID, "github")
	newIntegration(t, s, a.ID, "slack")
	newIntegration(t, s, b.ID, "github")
	newConn(t, s, a.ID, "github", "u1", nil)
	newConn(t, s, a.ID, "github", "u2", nil)
	keep := []*connections.Connection{
		newConn(t, s, a.ID, "slack", "u1", nil),
		newConn(t, s, b.ID, "github", "u1", nil),
	}

	must(t, s.DeleteIntegration(ctx, a.ID, "github"))
	n, err := s.CountConnections(ctx, a.ID, "github")
	must(t, err)
	if n != 0 {
		t.Errorf("CountConnections after delete = %d, want 0", n)
	}
	_, err = s.GetConnection(ctx, a.ID, "github", "u1")
	wantErr(t, "GetConnection(cascaded)", err, store.ErrNotFound)
	all, err := s.ListConnections(ctx, connections.Filter{})
	must(t, err)
	diff(t, "remaining connections", storedConnections(keep...), all)

	// A new integration with the key starts without connections.
	newIntegration(t, s, a.ID, "github")
	n, err = s.CountConnections(ctx, a.ID, "github")
	must(t, err)
	if n != 0 {
		t.Errorf("CountConnections of re-created integration = %d, want 0", n)
	}
}

func testIntegrationSecrets(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	in := &integrations.Integration{
		EnvironmentID: env.ID,
		UniqueKey:     "custom",
		Provider:      "unauthenticated",
		Credentials: &integrations.Credentials{
			Type: "OAUTH2", ClientID: "id", ClientSecret: "plaintext-secret",
		},
		SealedCredentials: "v1:key-1:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0-P0BBQkNERUZHSElKS0xNTk9QUVJTVFVWV1hZWltcXV5f",
		Custom:            map[string]string{"plaintext": "value"},
		SealedCustom:      "v1:key-1:Y3VzdG9tIHZhbHVlcw",
		CreatedAt:         ts,
		UpdatedAt:         ts,
	}
	must(t, s.CreateIntegration(ctx, in))
	if in.Credentials == nil || in.Custom == nil {
		t.Error("CreateIntegration cleared the caller's plaintext fields")
	}
	got, err := s.GetIntegration(ctx, env.ID, "custom")
	must(t, err)
	if got.Credentials != nil || got.Custom != nil {
		t.Errorf("GetIntegration returned plaintext fields: Credentials %+v, Custom %v", got.Credentials, got.Custom)
	}
	diff(t, "integration with secrets", storedIntegration(in), got)
	if got.IntegrationConfig != nil {
		t.Errorf("IntegrationConfig = %#v, want nil as stored", got.IntegrationConfig)
	}

	upd := *got
	upd.Credentials = &integrations.Credentials{Type: "OAUTH2", ClientSecret: "other"}
	upd.SealedCredentials = ""
	upd.SealedCustom = ""
	must(t, s.UpdateIntegration(ctx, &upd))
	got, err = s.GetIntegration(ctx, env.ID, "custom")
	must(t, err)
	diff(t, "integration after clearing secrets", storedIntegration(&upd), got)
}
