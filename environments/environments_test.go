package environments_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/internal/secret"
	"github.com/embedauth/connect/store"
	"github.com/embedauth/connect/store/sqlite"
)

func newService(t *testing.T) (*environments.Service, *clock) {
	s, c, _ := newServiceStore(t)
	return s, c
}

func newServiceStore(t *testing.T) (*environments.Service, *clock, *sqlite.Store) {
	t.Helper()
	k, err := secret.NewKeyring(secret.Key{ID: "k", Secret: bytes.Repeat([]byte{3}, 32)})
	if err != nil {
		t.Fatal(err)
	}
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	st := newStore(t)
	return environments.NewService(st, k, c.now, 10*time.Second), c, st
}

// newStore returns a Store on a private in-memory SQLite database, closed
// when the test ends.
func newStore(t testing.TB) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(t.Context(), sqlite.MemoryPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Errorf("close store: %v", err)
		}
	})
	return st
}

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func TestCreateValidates(t *testing.T) {
	t.Parallel()
	s, _ := newService(t)
	ctx := context.Background()
	for name, in := range map[string]environments.CreateInput{
		"empty name":     {},
		"upper name":     {Name: "Dev"},
		"three webhooks": {Name: "a", WebhookURLs: []string{"https://a.example", "https://b.example", "https://c.example"}},
		"bad webhook":    {Name: "a", WebhookURLs: []string{"ftp://a.example"}},
		"bad theme":      {Name: "a", ConnectUI: &environments.ConnectUISettings{Theme: "neon"}},
		"bad colour":     {Name: "a", ConnectUI: &environments.ConnectUISettings{PrimaryColorDark: "red"}},
		"relative hook":  {Name: "a", WebhookURLs: []string{"/hook"}},
	} {
		if _, err := s.Create(ctx, in); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
	env, err := s.Create(ctx, environments.CreateInput{Name: "prod", WebhookURLs: []string{"https://a.example/h", "https://b.example/h"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, environments.CreateInput{Name: "prod"}); !errors.Is(err, store.ErrConflict) {
		t.Errorf("duplicate name: %v", err)
	}
	key, err := s.WebhookSigningKey(env)
	if err != nil || len(key) < 32 || strings.Contains(env.SealedWebhookSigningKey, key) {
		t.Errorf("signing key %q sealed %q: %v", key, env.SealedWebhookSigningKey, err)
	}
}

func TestAPIKeys(t *testing.T) {
	t.Parallel()
	s, _ := newService(t)
	ctx := context.Background()
	env, _ := s.Create(ctx, environments.CreateInput{Name: "dev"})
	raw, k, err := s.CreateAPIKey(ctx, env.ID, environments.NewAPIKey{Name: "ci", Scopes: []string{environments.ScopeConnectionsRead}})
	if err != nil {
		t.Fatal(err)
	}
	signing, _ := s.WebhookSigningKey(env)
	if raw == signing {
		t.Fatal("the API key equals the webhook signing key")
	}
	p, err := s.Authenticate(ctx, raw)
	if err != nil || p.EnvironmentID != env.ID || !p.Allows(environments.ScopeConnectionsRead) || p.Allows(environments.ScopeConnectionsDelete) {
		t.Fatalf("principal %+v, %v", p, err)
	}
	if _, err := s.Authenticate(ctx, raw+"x"); !errors.Is(err, store.ErrUnauthorized) {
		t.Errorf("wrong key: %v", err)
	}
	if _, _, err := s.CreateAPIKey(ctx, env.ID, environments.NewAPIKey{Scopes: []string{"environment:everything"}}); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("unknown scope: %v", err)
	}
	if _, _, err := s.CreateAPIKey(ctx, env.ID, environments.NewAPIKey{Secret: "short"}); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("short secret: %v", err)
	}
	// Fail closed: a key created without scopes holds none.
	bare, _, err := s.CreateAPIKey(ctx, env.ID, environments.NewAPIKey{Name: "bare"})
	if err != nil {
		t.Fatal(err)
	}
	if p, err := s.Authenticate(ctx, bare); err != nil || len(p.Scopes) != 0 || p.Allows(environments.ScopeConnectionsRead) || p.Allows(environments.ScopeAll) {
		t.Errorf("a key created without scopes: %+v, %v", p, err)
	}
	if _, _, err := s.CreateAPIKey(ctx, 999, environments.NewAPIKey{}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("missing environment: %v", err)
	}
	if err := s.DeleteAPIKey(ctx, env.ID, k.ID); err != nil {
		t.Fatal(err)
	}
	// Deleted in this process: refused at once, despite the cache.
	if _, err := s.Authenticate(ctx, raw); !errors.Is(err, store.ErrUnauthorized) {
		t.Errorf("deleted key: %v", err)
	}
}

// TestKeyCacheTTL deletes a key behind the service's back, as another
// instance would: it keeps working here until the cache TTL passes.
func TestKeyCacheTTL(t *testing.T) {
	t.Parallel()
	s, c, st := newServiceStore(t)
	ctx := context.Background()
	env, _ := s.Create(ctx, environments.CreateInput{Name: "dev"})
	raw, k, err := s.CreateAPIKey(ctx, env.ID, environments.NewAPIKey{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Authenticate(ctx, raw); err != nil {
		t.Fatal(err)
	}
	if err := st.DeleteAPIKey(ctx, env.ID, k.ID); err != nil {
		t.Fatal(err)
	}
	c.t = c.t.Add(9 * time.Second)
	if _, err := s.Authenticate(ctx, raw); err != nil {
		t.Errorf("within the TTL: %v", err)
	}
	c.t = c.t.Add(2 * time.Second)
	if _, err := s.Authenticate(ctx, raw); !errors.Is(err, store.ErrUnauthorized) {
		t.Errorf("after the TTL: %v", err)
	}
}

func TestVariables(t *testing.T) {
	t.Parallel()
	s, _ := newService(t)
	ctx := context.Background()
	env, _ := s.Create(ctx, environments.CreateInput{Name: "dev"})
	if err := s.SetVariables(ctx, env.ID, map[string]string{"B": "2", "A": "1"}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetVariables(ctx, env.ID, map[string]string{"1BAD": "x"}); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("bad name: %v", err)
	}
	vars, err := s.Variables(ctx, env.ID)
	if err != nil || len(vars) != 2 || vars[0] != (environments.PlainVariable{Name: "A", Value: "1"}) {
		t.Errorf("variables %v, %v", vars, err)
	}
}
