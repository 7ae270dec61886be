package storetest

import (
	"testing"

	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/store"
)

var environmentTests = []test{
	{"CRUD", testEnvironmentCRUD},
	{"NotFound", testEnvironmentNotFound},
	{"Conflict", testEnvironmentConflict},
	{"APIKeys", testAPIKeys},
	{"APIKeyConflict", testAPIKeyConflict},
	{"Variables", testVariables},
	{"MissingEnvironment", testMissingEnvironment},
}

func testEnvironmentCRUD(t *testing.T, s Store) {
	ctx := t.Context()
	dev := newEnv(t, s, "dev")
	prod := &environments.Environment{
		Account:                 "acme",
		Name:                    "prod",
		WebhookURLs:             []string{"https://a.example.com/hook", "https://b.example.com/hook"},
		SealedWebhookSigningKey: "v1:k2:c2VhbGVk",
		WebhookSettings:         environments.WebhookSettings{SendAuthCreation: true, SendSync: true},
		ConnectUI: environments.ConnectUISettings{
			Theme: "dark", PrimaryColorLight: "#00b2e3", PrimaryColorDark: "#003344", HideSecuredBy: true,
		},
		CallbackURL: "https://app.example.com/oauth/callback",
		CreatedAt:   at(1),
		UpdatedAt:   at(2),
	}
	must(t, s.CreateEnvironment(ctx, prod))
	if prod.ID == 0 || prod.ID == dev.ID {
		t.Fatalf("CreateEnvironment set ID %d (dev has %d)", prod.ID, dev.ID)
	}

	got, err := s.GetEnvironment(ctx, prod.ID)
	must(t, err)
	diff(t, "GetEnvironment", prod, got)
	got, err = s.GetEnvironmentByName(ctx, "prod")
	must(t, err)
	diff(t, "GetEnvironmentByName", prod, got)

	list, err := s.ListEnvironments(ctx)
	must(t, err)
	diff(t, "ListEnvironments", []*environments.Environment{dev, prod}, list)

	upd := *prod
	upd.Account = "acme-2"
	upd.Name = "production"
	upd.WebhookURLs = []string{"https://c.example.com/hook"}
	upd.SealedWebhookSigningKey = "v1:k3:bmV3"
	upd.WebhookSettings = environments.DefaultWebhookSettings()
	upd.ConnectUI = environments.ConnectUISettings{Theme: "light"}
	upd.CallbackURL = ""
	upd.CreatedAt = at(100) // ignored: CreatedAt never changes
	upd.UpdatedAt = at(3)
	must(t, s.UpdateEnvironment(ctx, &upd))
	want := upd
	want.CreatedAt = prod.CreatedAt
	got, err = s.GetEnvironment(ctx, prod.ID)
	must(t, err)
	diff(t, "environment after update", &want, got)
	got, err = s.GetEnvironmentByName(ctx, "production")
	must(t, err)
	diff(t, "environment by new name", &want, got)
	_, err = s.GetEnvironmentByName(ctx, "prod")
	wantErr(t, "GetEnvironmentByName(old name)", err, store.ErrNotFound)

	// Updating without renaming is not a conflict with itself.
	upd.UpdatedAt = at(4)
	must(t, s.UpdateEnvironment(ctx, &upd))
}

func testEnvironmentNotFound(t *testing.T, s Store) {
	ctx := t.Context()
	dev := newEnv(t, s, "dev")
	_, err := s.GetEnvironment(ctx, dev.ID+1000)
	wantErr(t, "GetEnvironment", err, store.ErrNotFound)
	_, err = s.GetEnvironmentByName(ctx, "nope")
	wantErr(t, "GetEnvironmentByName", err, store.ErrNotFound)
	missing := *dev
	missing.ID = dev.ID + 1000
	missing.Name = "other"
	wantErr(t, "UpdateEnvironment", s.UpdateEnvironment(ctx, &missing), store.ErrNotFound)
}

func testEnvironmentConflict(t *testing.T, s Store) {
	ctx := t.Context()
	dev := newEnv(t, s, "dev")
	prod := newEnv(t, s, "prod")
	dup := &environments.Environment{Name: "dev", CreatedAt: ts, UpdatedAt: ts}
	wantErr(t, "CreateEnvironment(duplicate name)", s.CreateEnvironment(ctx, dup), store.ErrConflict)

	rename := *prod
	rename.Name = "dev"
	wantErr(t, "UpdateEnvironment(name of another)", s.UpdateEnvironment(ctx, &rename), store.ErrConflict)
	got, err := s.GetEnvironment(ctx, prod.ID)
	must(t, err)
	diff(t, "environment after refused rename", prod, got)

	list, err := s.ListEnvironments(ctx)
	must(t, err)
	diff(t, "ListEnvironments", []*environments.Environment{dev, prod}, list)
}

func newAPIKey(t *testing.T, s Store, env int64, hash string, scopes []string) *environments.APIKey {
	t.Helper()
	k := &environments.APIKey{
		EnvironmentID: env,
		Name:          "key " + hash[len(hash)-4:],
		Hash:          []byte(hash),
		Hint:          hash[len(hash)-4:],
		Scopes:        scopes,
		CreatedAt:     ts,
	}
	must(t, s.CreateAPIKey(t.Context(), k))
	if k.ID == 0 {
		t.Fatal("CreateAPIKey did not set ID")
	}
	return k
}

func testAPIKeys(t *testing.T, s Store) {
	ctx := t.Context()
	a := newEnv(t, s, "a")
	b := newEnv(t, s, "b")
	k1 := newAPIKey(t, s, a.ID, "\x00\xffhash-0001", []string{"environment:read", "connections:write"})
	k2 := newAPIKey(t, s, a.ID, "hash-0002", nil)
	k3 := newAPIKey(t, s, b.ID, "hash-0003", []string{"*"})

	for _, k := range []*environments.APIKey{k1, k2, k3} {
		got, err := s.GetAPIKeyByHash(ctx, k.Hash)
		must(t, err)
		diff(t, "GetAPIKeyByHash", k, got)
	}
	_, err := s.GetAPIKeyByHash(ctx, []byte("hash-9999"))
	wantErr(t, "GetAPIKeyByHash(unknown)", err, store.ErrNotFound)

	list, err := s.ListAPIKeys(ctx, a.ID)
	must(t, err)
	diff(t, "ListAPIKeys(a)", []*environments.APIKey{k1, k2}, list)
	list, err = s.ListAPIKeys(ctx, b.ID)
	must(t, err)
	diff(t, "ListAPIKeys(b)", []*environments.APIKey{k3}, list)

	wantErr(t, "DeleteAPIKey(other environment)", s.DeleteAPIKey(ctx, b.ID, k1.ID), store.ErrNotFound)
	must(t, s.DeleteAPIKey(ctx, a.ID, k1.ID))
	_, err = s.GetAPIKeyByHash(ctx, k1.Hash)
	wantErr(t, "GetAPIKeyByHash(deleted)", err, store.ErrNotFound)
	wantErr(t, "DeleteAPIKey(deleted)", s.DeleteAPIKey(ctx, a.ID, k1.ID), store.ErrNotFound)
	list, err = s.ListAPIKeys(ctx, a.ID)
	must(t, err)
	diff(t, "ListAPIKeys(a) after delete", []*environments.APIKey{k2}, list)
}

func testAPIKeyConflict(t *testing.T, s Store) {
	ctx := t.Context()
	a := newEnv(t, s, "a")
	b := newEnv(t, s, "b")
	k := newAPIKey(t, s, a.ID, "hash-0001", nil)
	for _, env := range []int64{a.ID, b.ID} {
		dup := &environments.APIKey{EnvironmentID: env, Name: "dup", Hash: []byte("hash-0001"), CreatedAt: ts}
		wantErr(t, "CreateAPIKey(duplicate hash)", s.CreateAPIKey(ctx, dup), store.ErrConflict)
	}
	list, err := s.ListAPIKeys(ctx, a.ID)
	must(t, err)
	diff(t, "ListAPIKeys(a)", []*environments.APIKey{k}, list)
	list, err = s.ListAPIKeys(ctx, b.ID)
	must(t, err)
	diff(t, "ListAPIKeys(b)", []*environments.APIKey{}, list)
}

func testVariables(t *testing.T, s Store) {
	ctx := t.Context()
	a := newEnv(t, s, "a")
	b := newEnv(t, s, "b")
	list := func(env int64) []environments.Variable {
		t.Helper()
		vars, err := s.ListVariables(ctx, env)
		must(t, err)
		return vars
	}

	diff(t, "variables before any set", []environments.Variable{}, list(a.ID))
	must(t, s.SetVariables(ctx, a.ID, []environments.Variable{
		{Name: "b_token", SealedValue: "v1:k1:Yg"},
		{Name: "B_upper", SealedValue: "v1:k1:QlU"},
		{Name: "a_url", SealedValue: "v1:k1:YQ"},
	}))
	must(t, s.SetVariables(ctx, b.ID, []environments.Variable{{Name: "only_b", SealedValue: "v1:k1:b25seQ"}}))
	// Ordered by name, byte-wise.
	diff(t, "variables of a", []environments.Variable{
		{Name: "B_upper", SealedValue: "v1:k1:QlU"},
		{Name: "a_url", SealedValue: "v1:k1:YQ"},
		{Name: "b_token", SealedValue: "v1:k1:Yg"},
	}, list(a.ID))

	// Set replaces everything.
	must(t, s.SetVariables(ctx, a.ID, []environments.Variable{{Name: "c", SealedValue: "v1:k1:Yw"}}))
	diff(t, "variables of a after replace", []environments.Variable{{Name: "c", SealedValue: "v1:k1:Yw"}}, list(a.ID))
	diff(t, "variables of b", []environments.Variable{{Name: "only_b", SealedValue: "v1:k1:b25seQ"}}, list(b.ID))

	// Duplicate names are refused and change nothing.
	err := s.SetVariables(ctx, a.ID, []environments.Variable{{Name: "x", SealedValue: "1"}, {Name: "x", SealedValue: "2"}})
	wantErr(t, "SetVariables(duplicate names)", err, store.ErrInvalid)
	diff(t, "variables of a after refused set", []environments.Variable{{Name: "c", SealedValue: "v1:k1:Yw"}}, list(a.ID))

	must(t, s.SetVariables(ctx, a.ID, nil))
	diff(t, "variables of a after clearing", []environments.Variable{}, list(a.ID))
	diff(t, "variables of b after clearing a", []environments.Variable{{Name: "only_b", SealedValue: "v1:k1:b25seQ"}}, list(b.ID))
}

func testMissingEnvironment(t *testing.T, s Store) {
	ctx := t.Context()
	a := newEnv(t, s, "a")
	missing := a.ID + 1000
	err := s.CreateAPIKey(ctx, &environments.APIKey{EnvironmentID: missing, Hash: []byte("h"), CreatedAt: ts})
	wantErr(t, "CreateAPIKey(missing environment)", err, store.ErrNotFound)
	err = s.SetVariables(ctx, missing, []environments.Variable{{Name: "x", SealedValue: "y"}})
	wantErr(t, "SetVariables(missing environment)", err, store.ErrNotFound)
	in := newIntegrationValue(missing, "github")
	wantErr(t, "CreateIntegration(missing environment)", s.CreateIntegration(ctx, in), store.ErrNotFound)
	vars, err := s.ListVariables(ctx, missing)
	must(t, err)
	diff(t, "ListVariables(missing environment)", []environments.Variable{}, vars)
}
