package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/oplog"
	"github.com/embedauth/connect/store"
)

var connectionTests = []test{
	{"CRUD", testConnectionCRUD},
	{"NotFound", testConnectionNotFound},
	{"MissingIntegration", testConnectionMissingIntegration},
	{"Conflict", testConnectionConflict},
	{"KeysetAndExpiry", testConnectionKeysetAndExpiry},
	{"Version", testConnectionVersion},
	{"RoundTrip", testConnectionRoundTrip},
	{"NilMetadata", testConnectionNilMetadata},
	{"EnvironmentIsolation", testEnvironmentIsolation},
}

// storedConnection returns c as a Store returns it: without plaintext
// credentials.
func storedConnection(c *connections.Connection) *connections.Connection {
	s := *c
	s.Credentials = nil
	return &s
}

func storedConnections(cs ...*connections.Connection) []*connections.Connection {
	out := make([]*connections.Connection, len(cs))
	for i, c := range cs {
		out[i] = storedConnection(c)
	}
	return out
}

func timePtr(t time.Time) *time.Time { return &t }

func testConnectionCRUD(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	newIntegration(t, s, env.ID, "github")
	c := newConn(t, s, env.ID, "github", "user-1", map[string]string{"end_user_id": "u1"})
	c2 := newConn(t, s, env.ID, "github", "user-2", nil)
	if c2.ID == c.ID {
		t.Fatalf("two connections got ID %d", c.ID)
	}

	got, err := s.GetConnection(ctx, env.ID, "github", "user-1")
	must(t, err)
	diff(t, "GetConnection", storedConnection(c), got)
	n, err := s.CountConnections(ctx, env.ID, "github")
	must(t, err)
	if n != 2 {
		t.Errorf("CountConnections = %d, want 2", n)
	}

	upd := *got
	upd.Provider = "github-app"
	upd.ConnectionConfig = map[string]any{"subdomain": "other", "region": "eu"}
	upd.Metadata = map[string]any{"plan": "pro"}
	upd.Tags = map[string]string{"end_user_id": "u1", "organization_id": "o1"}
	upd.WebhookURLOverride = "https://override.example.com/hook"
	upd.AuthMode = integrations.AuthModeAPIKey
	upd.SealedCredentials = "v1:k2:bmV3LWNyZWRz"
	upd.CredentialsExpiresAt = timePtr(at(3600))
	upd.Errors = []connections.Error{{Type: "auth", LogID: "log-1"}}
	upd.LastFetchedAt = timePtr(at(10))
	upd.LastRefreshFailure = timePtr(at(20))
	upd.RefreshAttempts = 3
	upd.CreatedAt = at(100) // ignored
	upd.UpdatedAt = at(10)
	must(t, s.UpdateConnection(ctx, &upd))
	if upd.Version != 2 {
		t.Errorf("UpdateConnection set Version %d, want 2", upd.Version)
	}
	want := upd
	want.CreatedAt = c.CreatedAt
	got, err = s.GetConnection(ctx, env.ID, "github", "user-1")
	must(t, err)
	diff(t, "connection after update", &want, got)

	// The identity is not replaced by an update.
	moved := *got
	moved.IntegrationKey = "slack"
	moved.ConnectionID = "user-3"
	must(t, s.UpdateConnection(ctx, &moved))
	got, err = s.GetConnection(ctx, env.ID, "github", "user-1")
	must(t, err)
	if got.Version != 3 || got.IntegrationKey != "github" || got.ConnectionID != "user-1" {
		t.Errorf("after an update with another identity got %q/%q version %d, want github/user-1 version 3",
			got.IntegrationKey, got.ConnectionID, got.Version)
	}

	must(t, s.DeleteConnection(ctx, env.ID, "github", "user-1"))
	_, err = s.GetConnection(ctx, env.ID, "github", "user-1")
	wantErr(t, "GetConnection(deleted)", err, store.ErrNotFound)
	wantErr(t, "DeleteConnection(deleted)", s.DeleteConnection(ctx, env.ID, "github", "user-1"), store.ErrNotFound)
	wantErr(t, "UpdateConnection(deleted)", s.UpdateConnection(ctx, got), store.ErrNotFound)
	n, err = s.CountConnections(ctx, env.ID, "github")
	must(t, err)
	if n != 1 {
		t.Errorf("CountConnections after delete = %d, want 1", n)
	}
}

func testConnectionNotFound(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	newIntegration(t, s, env.ID, "github")
	c := newConn(t, s, env.ID, "github", "u1", nil)
	for _, k := range [][2]string{{"github", "u2"}, {"slack", "u1"}, {"github", "U1"}} {
		_, err := s.GetConnection(ctx, env.ID, k[0], k[1])
		wantErr(t, "GetConnection("+k[0]+"/"+k[1]+")", err, store.ErrNotFound)
		wantErr(t, "DeleteConnection("+k[0]+"/"+k[1]+")", s.DeleteConnection(ctx, env.ID, k[0], k[1]), store.ErrNotFound)
	}
	missing := *c
	missing.ID = c.ID + 1000
	wantErr(t, "UpdateConnection(missing id)", s.UpdateConnection(ctx, &missing), store.ErrNotFound)
	n, err := s.CountConnections(ctx, env.ID, "nope")
	must(t, err)
	if n != 0 {
		t.Errorf("CountConnections(missing integration) = %d, want 0", n)
	}
}

func testConnectionMissingIntegration(t *testing.T, s Store) {
	ctx := t.Context()
	a := newEnv(t, s, "a")
	b := newEnv(t, s, "b")
	newIntegration(t, s, b.ID, "github")
	for _, c := range []*connections.Connection{
		{EnvironmentID: a.ID, IntegrationKey: "github", ConnectionID: "u1", CreatedAt: ts, UpdatedAt: ts},
		{EnvironmentID: a.ID + 1000, IntegrationKey: "github", ConnectionID: "u1", CreatedAt: ts, UpdatedAt: ts},
	} {
		wantErr(t, "CreateConnection(missing integration)", s.CreateConnection(ctx, c), store.ErrNotFound)
	}
	all, err := s.ListConnections(ctx, connections.Filter{})
	must(t, err)
	diff(t, "connections", []*connections.Connection{}, all)
}

func testConnectionConflict(t *testing.T, s Store) {
	ctx := t.Context()
	a := newEnv(t, s, "a")
	b := newEnv(t, s, "b")
	newIntegration(t, s, a.ID, "github")
	newIntegration(t, s, a.ID, "slack")
	newIntegration(t, s, b.ID, "github")
	c := newConn(t, s, a.ID, "github", "u1", nil)
	dup := &connections.Connection{EnvironmentID: a.ID, IntegrationKey: "github", ConnectionID: "u1",
		Provider: "other", CreatedAt: ts, UpdatedAt: ts}
	wantErr(t, "CreateConnection(duplicate)", s.CreateConnection(ctx, dup), store.ErrConflict)
	got, err := s.GetConnection(ctx, a.ID, "github", "u1")
	must(t, err)
	diff(t, "connection after refused duplicate", storedConnection(c), got)

	// The same connection id under another integration or environment is
	// another connection.
	c2 := newConn(t, s, a.ID, "slack", "u1", nil)
	c3 := newConn(t, s, b.ID, "github", "u1", nil)
	// Connection ids are case-sensitive.
	c4 := newConn(t, s, a.ID, "github", "U1", nil)
	all, err := s.ListConnections(ctx, connections.Filter{})
	must(t, err)
	diff(t, "connections", storedConnections(c, c2, c3, c4), all)
}

func testConnectionVersion(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	newIntegration(t, s, env.ID, "github")
	c := newConn(t, s, env.ID, "github", "u1", nil)

	first := storedConnection(c)
	stale := storedConnection(c)
	first.Metadata = map[string]any{"winner": "first"}
	must(t, s.UpdateConnection(ctx, first))
	if first.Version != 2 {
		t.Fatalf("Version after first update = %d, want 2", first.Version)
	}
	stale.Metadata = map[string]any{"winner": "stale"}
	wantErr(t, "UpdateConnection(stale)", s.UpdateConnection(ctx, stale), store.ErrConflict)
	if stale.Version != 1 {
		t.Errorf("refused update changed the caller's Version to %d", stale.Version)
	}
	got, err := s.GetConnection(ctx, env.ID, "github", "u1")
	must(t, err)
	diff(t, "connection after stale update", first, got)

	// A version from the future is stale too.
	future := *got
	future.Version = 10
	wantErr(t, "UpdateConnection(future version)", s.UpdateConnection(ctx, &future), store.ErrConflict)

	// Each update increments the version by one.
	for want := int64(3); want <= 5; want++ {
		must(t, s.UpdateConnection(ctx, got))
		if got.Version != want {
			t.Fatalf("Version = %d, want %d", got.Version, want)
		}
	}
	again, err := s.GetConnection(ctx, env.ID, "github", "u1")
	must(t, err)
	if again.Version != 5 {
		t.Errorf("stored Version = %d, want 5", again.Version)
	}
}

func testConnectionRoundTrip(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	newIntegration(t, s, env.ID, "github")
	zone := time.FixedZone("UTC+5:30", 5*3600+1800)
	c := &connections.Connection{
		EnvironmentID:  env.ID,
		IntegrationKey: "github",
		ConnectionID:   `o'brien "quoted" ünïcode; DROP TABLE x; -- \%_`,
		Provider:       "github",
		ConnectionConfig: map[string]any{
			"subdomain": "acme",
			"nested":    map[string]any{"list": []any{1.5, "two", true, nil, map[string]any{"deep": "yes"}}},
			"count":     float64(3),
		},
		Metadata: map[string]any{"plan": "pro", "seats": float64(42), "flags": []any{}, "none": nil},
		Tags: map[string]string{
			"end_user_id": "u1", "end_user_email": "u1@example.com", "organization_id": "org-1",
		},
		WebhookURLOverride: "https://override.example.com/hook",
		AuthMode:           integrations.AuthModeOAuth2,
		Credentials: &connections.Credentials{
			Type: integrations.AuthModeOAuth2, AccessToken: "plaintext-access", RefreshToken: "plaintext-refresh",
		},
		SealedCredentials:    "v1:key_2024-01:Zm9vYmFyYmF6cXV4LWFsbC1iYXNlNjR1cmwtYWxwaGFiZXRfLQ",
		CredentialsExpiresAt: timePtr(time.Date(2030, 1, 2, 3, 4, 5, 123456000, zone)),
		Errors:               []connections.Error{{Type: "auth", LogID: "log-1"}, {Type: "sync", LogID: "log-2"}},
		LastFetchedAt:        nil,
		LastRefreshFailure:   timePtr(time.Date(2029, 2, 3, 4, 5, 6, 654321000, zone)),
		RefreshAttempts:      7,
		CreatedAt:            time.Date(1999, 12, 31, 23, 59, 59, 999999000, zone),
		UpdatedAt:            time.Date(2038, 1, 19, 3, 14, 8, 1000, time.UTC),
	}
	must(t, s.CreateConnection(ctx, c))
	if c.Credentials == nil {
		t.Error("CreateConnection cleared the caller's Credentials")
	}
	got, err := s.GetConnection(ctx, env.ID, "github", c.ConnectionID)
	must(t, err)
	if got.Credentials != nil {
		t.Errorf("GetConnection returned plaintext Credentials %+v", got.Credentials)
	}
	if got.LastFetchedAt != nil {
		t.Errorf("LastFetchedAt = %v, want nil", got.LastFetchedAt)
	}
	diff(t, "connection", storedConnection(c), got)
	for name, pair := range map[string][2]time.Time{
		"CreatedAt":            {c.CreatedAt, got.CreatedAt},
		"UpdatedAt":            {c.UpdatedAt, got.UpdatedAt},
		"CredentialsExpiresAt": {*c.CredentialsExpiresAt, *got.CredentialsExpiresAt},
		"LastRefreshFailure":   {*c.LastRefreshFailure, *got.LastRefreshFailure},
	} {
		if !pair[0].Equal(pair[1]) {
			t.Errorf("%s = %v, want %v", name, pair[1], pair[0])
		}
	}

	got.LastFetchedAt = timePtr(time.Date(2026, 6, 7, 8, 9, 10, 999999000, time.UTC))
	got.CredentialsExpiresAt = nil
	got.Errors = nil
	got.SealedCredentials = ""
	got.LastRefreshFailure = nil
	got.RefreshAttempts = 0
	must(t, s.UpdateConnection(ctx, got))
	again, err := s.GetConnection(ctx, env.ID, "github", c.ConnectionID)
	must(t, err)
	diff(t, "connection after update", got, again)
	if again.CredentialsExpiresAt != nil {
		t.Errorf("CredentialsExpiresAt = %v, want nil", again.CredentialsExpiresAt)
	}
	if again.LastRefreshFailure != nil || again.RefreshAttempts != 0 {
		t.Errorf("LastRefreshFailure = %v, RefreshAttempts = %d, want nil and 0", again.LastRefreshFailure, again.RefreshAttempts)
	}
}

func testConnectionNilMetadata(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	newIntegration(t, s, env.ID, "github")
	nilMD := newConn(t, s, env.ID, "github", "nil", nil)
	empty := &connections.Connection{EnvironmentID: env.ID, IntegrationKey: "github", ConnectionID: "empty",
		Metadata: map[string]any{}, ConnectionConfig: map[string]any{}, CreatedAt: ts, UpdatedAt: ts}
	must(t, s.CreateConnection(ctx, empty))

	got, err := s.GetConnection(ctx, env.ID, "github", "nil")
	must(t, err)
	if got.Metadata != nil {
		t.Errorf("nil Metadata came back as %#v", got.Metadata)
	}
	got, err = s.GetConnection(ctx, env.ID, "github", "empty")
	must(t, err)
	if got.Metadata == nil || len(got.Metadata) != 0 {
		t.Errorf("empty Metadata came back as %#v, want an empty non-nil map", got.Metadata)
	}

	// Setting and then clearing metadata brings nil back.
	got.Metadata = map[string]any{"k": "v"}
	must(t, s.UpdateConnection(ctx, got))
	got.Metadata = nil
	must(t, s.UpdateConnection(ctx, got))
	got, err = s.GetConnection(ctx, env.ID, "github", "empty")
	must(t, err)
	if got.Metadata != nil {
		t.Errorf("cleared Metadata came back as %#v", got.Metadata)
	}
	list, err := s.ListConnections(ctx, connections.Filter{EnvironmentID: env.ID, ConnectionID: nilMD.ConnectionID})
	must(t, err)
	if len(list) != 1 || list[0].Metadata != nil {
		t.Errorf("ListConnections returned %d connections, metadata of the first %#v; want nil metadata", len(list), list)
	}
}

func testEnvironmentIsolation(t *testing.T, s Store) {
	ctx := t.Context()
	a := newEnv(t, s, "a")
	b := newEnv(t, s, "b")
	inA := newIntegration(t, s, a.ID, "only-a")
	newIntegration(t, s, a.ID, "shared")
	newIntegration(t, s, b.ID, "shared")
	cA := newConn(t, s, a.ID, "only-a", "u1", map[string]string{"org": "x"})
	cShared := newConn(t, s, a.ID, "shared", "u1", map[string]string{"org": "x"})
	keyA := newAPIKey(t, s, a.ID, "hash-of-a", nil)
	must(t, s.SetVariables(ctx, a.ID, []environments.Variable{{Name: "v", SealedValue: "s"}}))
	must(t, s.AppendLog(ctx, &oplog.Entry{ID: "log-a", EnvironmentID: a.ID, Type: "connection",
		Operation: "create", Status: oplog.StatusSuccess, IntegrationKey: "shared", ConnectionID: "u1", CreatedAt: ts}))

	// Nothing of a is readable through b.
	_, err := s.GetIntegration(ctx, b.ID, "only-a")
	wantErr(t, "GetIntegration", err, store.ErrNotFound)
	_, err = s.GetConnection(ctx, b.ID, "only-a", "u1")
	wantErr(t, "GetConnection", err, store.ErrNotFound)
	_, err = s.GetConnection(ctx, b.ID, "shared", "u1")
	wantErr(t, "GetConnection(shared key)", err, store.ErrNotFound)
	ins, err := s.ListIntegrations(ctx, b.ID)
	must(t, err)
	if len(ins) != 1 || ins[0].UniqueKey != "shared" || ins[0].EnvironmentID != b.ID {
		t.Errorf("ListIntegrations(b) = %+v, want only b's shared", ins)
	}
	for _, f := range []connections.Filter{
		{EnvironmentID: b.ID},
		{EnvironmentID: b.ID, ConnectionID: "u1"},
		{EnvironmentID: b.ID, IntegrationKeys: []string{"only-a", "shared"}},
		{EnvironmentID: b.ID, Tags: map[string]string{"org": "x"}},
		{EnvironmentID: b.ID, Search: "u"},
	} {
		list, err := s.ListConnections(ctx, f)
		must(t, err)
		diff(t, "ListConnections(b)", []*connections.Connection{}, list)
	}
	n, err := s.CountConnections(ctx, b.ID, "shared")
	must(t, err)
	if n != 0 {
		t.Errorf("CountConnections(b, shared) = %d, want 0", n)
	}
	keys, err := s.ListAPIKeys(ctx, b.ID)
	must(t, err)
	diff(t, "ListAPIKeys(b)", []*environments.APIKey{}, keys)
	vars, err := s.ListVariables(ctx, b.ID)
	must(t, err)
	diff(t, "ListVariables(b)", []environments.Variable{}, vars)
	logs, err := s.ListLogs(ctx, oplog.Filter{EnvironmentID: b.ID})
	must(t, err)
	diff(t, "ListLogs(b)", []*oplog.Entry{}, logs)

	// Nothing of a is writable through b.
	wantErr(t, "DeleteConnection", s.DeleteConnection(ctx, b.ID, "shared", "u1"), store.ErrNotFound)
	wantErr(t, "DeleteIntegration", s.DeleteIntegration(ctx, b.ID, "only-a"), store.ErrNotFound)
	wantErr(t, "DeleteAPIKey", s.DeleteAPIKey(ctx, b.ID, keyA.ID), store.ErrNotFound)
	crossIn := *inA
	crossIn.EnvironmentID = b.ID
	crossIn.DisplayName = "hijacked"
	wantErr(t, "UpdateIntegration(id of a, environment b)", s.UpdateIntegration(ctx, &crossIn), store.ErrNotFound)
	crossConn := storedConnection(cA)
	crossConn.EnvironmentID = b.ID
	crossConn.Metadata = map[string]any{"hijacked": true}
	wantErr(t, "UpdateConnection(id of a, environment b)", s.UpdateConnection(ctx, crossConn), store.ErrNotFound)
	err = s.CreateConnection(ctx, &connections.Connection{EnvironmentID: b.ID, IntegrationKey: "only-a",
		ConnectionID: "u2", CreatedAt: ts, UpdatedAt: ts})
	wantErr(t, "CreateConnection(b, integration of a)", err, store.ErrNotFound)

	gotIn, err := s.GetIntegration(ctx, a.ID, "only-a")
	must(t, err)
	diff(t, "integration of a", inA, gotIn)
	all, err := s.ListConnections(ctx, connections.Filter{EnvironmentID: a.ID})
	must(t, err)
	diff(t, "connections of a", storedConnections(cA, cShared), all)
	keys, err = s.ListAPIKeys(ctx, a.ID)
	must(t, err)
	diff(t, "ListAPIKeys(a)", []*environments.APIKey{keyA}, keys)
}

// testConnectionKeysetAndExpiry: AfterID pages by ID across environments,
// and ExpiresBefore keeps the connections whose credentials expire before
// it (never those without an expiry).
func testConnectionKeysetAndExpiry(t *testing.T, s Store) {
	ctx := t.Context()
	a := newEnv(t, s, "a")
	b := newEnv(t, s, "b")
	newIntegration(t, s, a.ID, "github")
	newIntegration(t, s, b.ID, "github")
	var all []*connections.Connection
	for i, env := range []int64{a.ID, b.ID, a.ID, b.ID} {
		c := newConn(t, s, env, "github", fmt.Sprintf("u%d", i), nil)
		if i < 3 {
			exp := ts.Add(time.Duration(i) * time.Hour)
			c.CredentialsExpiresAt = &exp
			must(t, s.UpdateConnection(ctx, storedConnection(c)))
			c.Version++
		}
		all = append(all, c)
	}
	page, err := s.ListConnections(ctx, connections.Filter{AfterID: all[0].ID, Page: store.Page{Limit: 2}})
	must(t, err)
	diff(t, "page after the first", storedConnections(all[1], all[2]), page)
	page, err = s.ListConnections(ctx, connections.Filter{AfterID: all[2].ID, Page: store.Page{Limit: 2}})
	must(t, err)
	diff(t, "last page", storedConnections(all[3]), page)
	before := ts.Add(90 * time.Minute)
	page, err = s.ListConnections(ctx, connections.Filter{ExpiresBefore: &before})
	must(t, err)
	diff(t, "expiring before 90 minutes", storedConnections(all[0], all[1]), page)
}
