package storetest

import (
	"context"
	"testing"

	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/store"
)

var sessionTests = []test{
	{"CRUD", testSessionCRUD},
	{"Conflict", testSessionConflict},
	{"MissingEnvironment", testSessionMissingEnvironment},
	{"NilVersusEmpty", testSessionNilVersusEmpty},
	{"DeleteOtherEnvironment", testSessionDeleteOtherEnvironment},
	{"DeleteExpired", testSessionDeleteExpired},
	{"Copies", testSessionCopies},
	{"Tx", testSessionTx},
	{"MarkConnection", testSessionMarkConnection},
	{"MarkDiesWithConnection", testSessionMarkDiesWithConnection},
	{"MarkTx", testSessionMarkTx},
}

func newSessionValue(env int64, hash string, expires int) *connections.Session {
	return &connections.Session{
		EnvironmentID:                    env,
		TokenHash:                        []byte("hash-" + hash),
		AllowedIntegrations:              []string{"github", "slack"},
		SealedIntegrationsConfigDefaults: "v1:k1:sealed-defaults-" + hash,
		Overrides:                        map[string]connections.IntegrationOverride{"github": {DocsConnect: "https://docs.example.com/gh"}},
		Tags:                             map[string]string{"end_user_id": "u1", "team": "red"},
		WebhookURLOverride:               "https://hooks.example.com/session",
		CreatedAt:                        ts,
		ExpiresAt:                        at(expires),
	}
}

func newSession(t *testing.T, s Store, env int64, hash string, expires int) *connections.Session {
	t.Helper()
	sess := newSessionValue(env, hash, expires)
	must(t, s.CreateConnectSession(t.Context(), sess))
	if sess.ID == 0 {
		t.Fatal("CreateConnectSession did not set ID")
	}
	return sess
}

func testSessionCRUD(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	a := newSession(t, s, env.ID, "a", 1800)
	b := newSessionValue(env.ID, "b", 1800)
	b.ConnectionID, b.IntegrationKey = "u1", "github"
	b.AllowedIntegrations = []string{"github"}
	b.SealedIntegrationsConfigDefaults = ""
	b.Overrides, b.Tags, b.WebhookURLOverride = nil, nil, ""
	must(t, s.CreateConnectSession(ctx, b))
	if a.ID == b.ID {
		t.Fatalf("two sessions got the ID %d", a.ID)
	}
	for _, want := range []*connections.Session{a, b} {
		got, err := s.GetConnectSession(ctx, want.TokenHash)
		must(t, err)
		diff(t, "GetConnectSession("+string(want.TokenHash)+")", want, got)
	}
	_, err := s.GetConnectSession(ctx, []byte("hash-none"))
	wantErr(t, "GetConnectSession(unknown)", err, store.ErrNotFound)

	must(t, s.DeleteConnectSession(ctx, env.ID, a.ID))
	_, err = s.GetConnectSession(ctx, a.TokenHash)
	wantErr(t, "GetConnectSession(deleted)", err, store.ErrNotFound)
	wantErr(t, "DeleteConnectSession(deleted)", s.DeleteConnectSession(ctx, env.ID, a.ID), store.ErrNotFound)
	_, err = s.GetConnectSession(ctx, b.TokenHash)
	must(t, err)
}

func testSessionConflict(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	newSession(t, s, env.ID, "a", 1800)
	wantErr(t, "CreateConnectSession(same hash)", s.CreateConnectSession(ctx, newSessionValue(env.ID, "a", 60)), store.ErrConflict)
	// Inside a transaction the refused call leaves it usable.
	err := s.WithTx(ctx, func(ctx context.Context) error {
		wantErr(t, "CreateConnectSession(same hash) in tx", s.CreateConnectSession(ctx, newSessionValue(env.ID, "a", 60)), store.ErrConflict)
		return s.CreateConnectSession(ctx, newSessionValue(env.ID, "c", 60))
	})
	must(t, err)
	_, err = s.GetConnectSession(ctx, []byte("hash-c"))
	must(t, err)
}

func testSessionMissingEnvironment(t *testing.T, s Store) {
	wantErr(t, "CreateConnectSession(no env)", s.CreateConnectSession(t.Context(), newSessionValue(999, "a", 60)), store.ErrNotFound)
}

// A nil Tags (a reconnect session that keeps the connection's tags) stays
// nil; an empty map (one that clears them) stays empty.
func testSessionNilVersusEmpty(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	a := newSessionValue(env.ID, "nil", 60)
	a.Tags, a.AllowedIntegrations, a.Overrides = nil, nil, nil
	must(t, s.CreateConnectSession(ctx, a))
	b := newSessionValue(env.ID, "empty", 60)
	b.Tags = map[string]string{}
	must(t, s.CreateConnectSession(ctx, b))
	got, err := s.GetConnectSession(ctx, a.TokenHash)
	must(t, err)
	if got.Tags != nil || len(got.AllowedIntegrations) != 0 || len(got.Overrides) != 0 {
		t.Errorf("nil fields came back as %#v, %#v, %#v", got.Tags, got.AllowedIntegrations, got.Overrides)
	}
	got, err = s.GetConnectSession(ctx, b.TokenHash)
	must(t, err)
	if got.Tags == nil || len(got.Tags) != 0 {
		t.Errorf("empty tags came back as %#v", got.Tags)
	}
}

func testSessionDeleteOtherEnvironment(t *testing.T, s Store) {
	ctx := t.Context()
	dev := newEnv(t, s, "dev")
	prod := newEnv(t, s, "prod")
	a := newSession(t, s, dev.ID, "a", 60)
	wantErr(t, "DeleteConnectSession(other env)", s.DeleteConnectSession(ctx, prod.ID, a.ID), store.ErrNotFound)
	_, err := s.GetConnectSession(ctx, a.TokenHash)
	must(t, err)
}

func testSessionDeleteExpired(t *testing.T, s Store) {
	ctx := t.Context()
	dev := newEnv(t, s, "dev")
	prod := newEnv(t, s, "prod")
	for i, exp := range []int{10, 20, 30, 40} {
		env := dev.ID
		if i%2 == 1 {
			env = prod.ID
		}
		newSession(t, s, env, string(rune('a'+i)), exp)
	}
	// Strictly before: the session expiring at 30 stays.
	n, err := s.DeleteExpiredConnectSessions(ctx, at(30), 1)
	must(t, err)
	if n != 1 {
		t.Errorf("DeleteExpiredConnectSessions(limit 1) = %d, want 1", n)
	}
	_, err = s.GetConnectSession(ctx, []byte("hash-a"))
	wantErr(t, "the soonest expired session", err, store.ErrNotFound)
	n, err = s.DeleteExpiredConnectSessions(ctx, at(30), 0)
	must(t, err)
	if n != 1 {
		t.Errorf("DeleteExpiredConnectSessions(no limit) = %d, want 1", n)
	}
	for _, h := range []string{"c", "d"} {
		_, err := s.GetConnectSession(ctx, []byte("hash-"+h))
		must(t, err)
	}
	if n, err = s.DeleteExpiredConnectSessions(ctx, at(30), 0); err != nil || n != 0 {
		t.Errorf("DeleteExpiredConnectSessions again = %d, %v; want 0", n, err)
	}
}

func testSessionCopies(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	in := newSessionValue(env.ID, "a", 60)
	in.IntegrationsConfigDefaults = map[string]connections.IntegrationDefaults{"github": {UserScopes: "plain"}}
	must(t, s.CreateConnectSession(ctx, in))
	want := *newSessionValue(env.ID, "a", 60)
	want.ID = in.ID
	// The caller's values change after the call...
	in.TokenHash[0] = 'X'
	in.AllowedIntegrations[0] = "changed"
	in.Tags["team"] = "blue"
	in.Overrides["github"] = connections.IntegrationOverride{DocsConnect: "https://changed.example.com"}
	got, err := s.GetConnectSession(ctx, want.TokenHash)
	must(t, err)
	// ...and the stored ones do not; the plaintext defaults were not kept.
	diff(t, "stored session", &want, got)
	got.AllowedIntegrations[0] = "changed"
	got.Tags["team"] = "blue"
	again, err := s.GetConnectSession(ctx, want.TokenHash)
	must(t, err)
	diff(t, "session after changing a returned copy", &want, again)
}

func testSessionTx(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	kept := newSession(t, s, env.ID, "kept", 60)
	err := s.WithTx(ctx, func(ctx context.Context) error {
		if err := s.CreateConnectSession(ctx, newSessionValue(env.ID, "new", 60)); err != nil {
			return err
		}
		if _, err := s.GetConnectSession(ctx, []byte("hash-new")); err != nil {
			return err
		}
		if err := s.DeleteConnectSession(ctx, env.ID, kept.ID); err != nil {
			return err
		}
		if _, err := s.DeleteExpiredConnectSessions(ctx, at(1000), 0); err != nil {
			return err
		}
		return errRollback
	})
	wantErr(t, "WithTx", err, errRollback)
	_, err = s.GetConnectSession(ctx, []byte("hash-new"))
	wantErr(t, "session created in a rolled back transaction", err, store.ErrNotFound)
	_, err = s.GetConnectSession(ctx, kept.TokenHash)
	must(t, err)
}

func testSessionMarkConnection(t *testing.T, s Store) {
	ctx := t.Context()
	dev := newEnv(t, s, "dev")
	prod := newEnv(t, s, "prod")
	newIntegration(t, s, dev.ID, "github")
	a := newConn(t, s, dev.ID, "github", "a", nil)
	b := newConn(t, s, dev.ID, "github", "b", nil)
	for _, c := range []int64{a.ID, b.ID} {
		marked, err := s.IsSessionConnection(ctx, dev.ID, c)
		must(t, err)
		if marked {
			t.Errorf("connection %d is marked before MarkSessionConnection", c)
		}
	}
	must(t, s.MarkSessionConnection(ctx, dev.ID, a.ID))
	must(t, s.MarkSessionConnection(ctx, dev.ID, a.ID)) // twice is fine
	if marked, err := s.IsSessionConnection(ctx, dev.ID, a.ID); err != nil || !marked {
		t.Errorf("IsSessionConnection(a) = %v, %v; want true", marked, err)
	}
	if marked, err := s.IsSessionConnection(ctx, dev.ID, b.ID); err != nil || marked {
		t.Errorf("IsSessionConnection(b) = %v, %v; want false", marked, err)
	}
	// Another environment sees nothing and changes nothing.
	if marked, err := s.IsSessionConnection(ctx, prod.ID, a.ID); err != nil || marked {
		t.Errorf("IsSessionConnection(other env) = %v, %v; want false", marked, err)
	}
	wantErr(t, "MarkSessionConnection(other env)", s.MarkSessionConnection(ctx, prod.ID, b.ID), store.ErrNotFound)
	wantErr(t, "MarkSessionConnection(missing)", s.MarkSessionConnection(ctx, dev.ID, 999999), store.ErrNotFound)
	if marked, err := s.IsSessionConnection(ctx, dev.ID, 999999); err != nil || marked {
		t.Errorf("IsSessionConnection(missing) = %v, %v; want false", marked, err)
	}
	// Updating the connection keeps the mark.
	c, err := s.GetConnection(ctx, dev.ID, "github", "a")
	must(t, err)
	c.Tags = map[string]string{"x": "y"}
	must(t, s.UpdateConnection(ctx, c))
	if marked, err := s.IsSessionConnection(ctx, dev.ID, a.ID); err != nil || !marked {
		t.Errorf("IsSessionConnection after an update = %v, %v; want true", marked, err)
	}
}

// A connection deleted and created again under the same id is not marked.
func testSessionMarkDiesWithConnection(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	newIntegration(t, s, env.ID, "github")
	a := newConn(t, s, env.ID, "github", "a", nil)
	must(t, s.MarkSessionConnection(ctx, env.ID, a.ID))
	must(t, s.DeleteConnection(ctx, env.ID, "github", "a"))
	again := newConn(t, s, env.ID, "github", "a", nil)
	if marked, err := s.IsSessionConnection(ctx, env.ID, again.ID); err != nil || marked {
		t.Errorf("IsSessionConnection(re-created) = %v, %v; want false", marked, err)
	}
	if marked, err := s.IsSessionConnection(ctx, env.ID, a.ID); err != nil || marked {
		t.Errorf("IsSessionConnection(deleted) = %v, %v; want false", marked, err)
	}
}

func testSessionMarkTx(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	newIntegration(t, s, env.ID, "github")
	a := newConn(t, s, env.ID, "github", "a", nil)
	err := s.WithTx(ctx, func(ctx context.Context) error {
		if err := s.MarkSessionConnection(ctx, env.ID, a.ID); err != nil {
			return err
		}
		if marked, err := s.IsSessionConnection(ctx, env.ID, a.ID); err != nil || !marked {
			t.Errorf("IsSessionConnection in the transaction = %v, %v; want true", marked, err)
		}
		return errRollback
	})
	wantErr(t, "WithTx", err, errRollback)
	if marked, err := s.IsSessionConnection(ctx, env.ID, a.ID); err != nil || marked {
		t.Errorf("IsSessionConnection after rollback = %v, %v; want false", marked, err)
	}
	// A connection and its mark created in one transaction.
	must(t, s.WithTx(ctx, func(ctx context.Context) error {
		c := &connections.Connection{EnvironmentID: env.ID, IntegrationKey: "github", ConnectionID: "b", CreatedAt: ts, UpdatedAt: ts}
		if err := s.CreateConnection(ctx, c); err != nil {
			return err
		}
		return s.MarkSessionConnection(ctx, env.ID, c.ID)
	}))
	b, err := s.GetConnection(ctx, env.ID, "github", "b")
	must(t, err)
	if marked, err := s.IsSessionConnection(ctx, env.ID, b.ID); err != nil || !marked {
		t.Errorf("IsSessionConnection(b) = %v, %v; want true", marked, err)
	}
}
