package connect_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/store"
)

// serviceWith returns a Service, not started, on the backend's Store with
// the keys.
func serviceWith(t *testing.T, b *backend, keys ...connect.EncryptionKey) *connect.Service {
	t.Helper()
	svc, err := connect.New(connect.Config{Store: b.store, EncryptionKeys: keys, Scheduler: schedulerFor(t, b)})
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// storeState is what the tests of this file compare before and after a
// refused call: the environments, their API keys, variables and
// integrations, and the key ids of sealed values.
type storeState struct {
	Envs      []string
	Keys      map[string][]string // hints by environment
	Vars      map[string][]string // names by environment
	Integs    map[string][]string // unique keys by environment
	SealedIDs []string
}

func stateOf(t *testing.T, st connect.Store) storeState {
	t.Helper()
	ctx := context.Background()
	envs, err := st.ListEnvironments(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s := storeState{Keys: map[string][]string{}, Vars: map[string][]string{}, Integs: map[string][]string{}}
	for _, e := range envs {
		s.Envs = append(s.Envs, e.Name)
		keys, err := st.ListAPIKeys(ctx, e.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			s.Keys[e.Name] = append(s.Keys[e.Name], k.Hint)
		}
		vars, err := st.ListVariables(ctx, e.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range vars {
			s.Vars[e.Name] = append(s.Vars[e.Name], v.Name)
		}
		its, err := st.ListIntegrations(ctx, e.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range its {
			s.Integs[e.Name] = append(s.Integs[e.Name], it.UniqueKey)
		}
	}
	if s.SealedIDs, err = st.SealingKeyIDs(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}

var allScopes = []string{environments.ScopeAll}

// TestKeysCheckedBeforeFirstWrite: a Service whose encryption keys do not
// open the Store's secrets (the key that sealed them missing, or another
// key under its id), used before Start, writes nothing: Ensure, creating an
// environment, an API key, variables or an integration with credentials,
// from Go or over HTTP, fail with the check's error (ErrEncryptionKey, a
// *MissingKeysError naming the key id) and leave the Store as it was. With
// the right key, the same calls work before Start, the check run once.
func TestKeysCheckedBeforeFirstWrite(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		ctx := context.Background()
		bu := setup(t, b) // environment dev, its signing key sealed under testKey
		if err := bu.svc.Environments().SetVariables(ctx, bu.env.ID, map[string]string{"REGION": "eu"}); err != nil {
			t.Fatal(err)
		}
		before := stateOf(t, b.store)
		if !slices.Equal(before.SealedIDs, []string{testKey.ID}) {
			t.Fatalf("sealed key ids before: %v", before.SealedIDs)
		}
		creds := &integrations.Credentials{Type: "OAUTH2", ClientID: "cid", ClientSecret: "client-secret-1"}
		for name, keys := range map[string][]connect.EncryptionKey{
			"missing key":    {otherKey},
			"other material": {{ID: testKey.ID, Key: otherKey.Key}},
		} {
			svc := serviceWith(t, b, keys...)
			envs := svc.Environments()
			refused := func(what string, err error) {
				t.Helper()
				var mk *connect.MissingKeysError
				if !errors.Is(err, connect.ErrEncryptionKey) || !errors.As(err, &mk) || len(mk.Keys) != 1 || mk.Keys[0].ID != testKey.ID {
					t.Errorf("%s: %s = %v, want the check's MissingKeysError naming %q", name, what, err, testKey.ID)
				}
			}
			_, err := envs.Ensure(ctx, environments.CreateInput{Name: "prod"},
				&environments.NewAPIKey{Name: "backend", Secret: "prod-key-0123456789abcdef", Scopes: allScopes})
			refused("Ensure of a new environment", err)
			_, err = envs.Ensure(ctx, environments.CreateInput{Name: "dev"},
				&environments.NewAPIKey{Name: "backend", Secret: "dev-key-0123456789abcdef", Scopes: allScopes})
			refused("Ensure of a key for the existing environment", err)
			_, err = envs.Create(ctx, environments.CreateInput{Name: "prod"})
			refused("Create", err)
			_, _, err = envs.CreateAPIKey(ctx, bu.env.ID, environments.NewAPIKey{Name: "k", Scopes: allScopes})
			refused("CreateAPIKey", err)
			refused("SetVariables", envs.SetVariables(ctx, bu.env.ID, map[string]string{"REGION": "us"}))
			_, err = svc.Integrations().Create(ctx, bu.env.ID, integrations.CreateInput{Provider: "github", UniqueKey: "gh", Credentials: creds})
			refused("integration with credentials", err)
			_, err = svc.ReencryptSecrets(ctx)
			refused("ReencryptSecrets", err)

			// Over HTTP, with the environment's API key: a 500 that names
			// no secret, nothing written.
			srv := newServer(t, svc)
			hb := *bu
			hb.srv = srv
			r := hb.do(t, req{method: "POST", path: "/integrations",
				body: `{"provider":"github","unique_key":"gh2","credentials":{"type":"OAUTH2","client_id":"cid","client_secret":"client-secret-2"}}`})
			if r.status != 500 || r.errCode() != store.CodeUnknownEncryptionKey || strings.Contains(string(r.raw), "client-secret-2") {
				t.Errorf("%s: POST /integrations: %d %s", name, r.status, r.raw)
			}
			if d := cmp.Diff(before, stateOf(t, b.store)); d != "" {
				t.Errorf("%s: the Store changed (-before +after):\n%s", name, d)
			}
		}

		// The right key, before Start: the calls work.
		svc := serviceWith(t, b, testKey)
		res, err := svc.Environments().Ensure(ctx, environments.CreateInput{Name: "prod"},
			&environments.NewAPIKey{Name: "backend", Secret: "prod-key-0123456789abcdef", Scopes: allScopes})
		if err != nil || !res.CreatedEnvironment || !res.CreatedAPIKey {
			t.Fatalf("Ensure with the key: %+v, %v", res, err)
		}
		if _, err := svc.Integrations().Create(ctx, res.Environment.ID, integrations.CreateInput{Provider: "github", UniqueKey: "gh", Credentials: creds}); err != nil {
			t.Fatalf("integration with the key: %v", err)
		}
		if ids, err := b.store.SealingKeyIDs(ctx); err != nil || !slices.Equal(ids, []string{testKey.ID}) {
			t.Errorf("sealed key ids: %v, %v", ids, err)
		}
	})
}

// TestEnsure: Ensure creates the environment and its API key when missing,
// changes nothing when run again, adds the key to an environment that has
// other keys, and refuses, writing nothing, a secret of another
// environment's key and bad input. The key it adds authenticates at once.
func TestEnsure(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		ctx := context.Background()
		bu := setup(t, b) // environment dev with a generated key
		envs := bu.svc.Environments()
		const secret = "prod-backend-key-0123456789"
		prodKey := &environments.NewAPIKey{Name: "backend", Secret: secret, Scopes: allScopes}
		hooks := environments.CreateInput{Name: "prod", WebhookURLs: []string{"https://app.example.com/hooks"}}

		res, err := envs.Ensure(ctx, hooks, prodKey)
		if err != nil || !res.CreatedEnvironment || !res.CreatedAPIKey || res.Environment.Name != "prod" ||
			!slices.Equal(res.Environment.WebhookURLs, hooks.WebhookURLs) || res.APIKey.Hint != "6789" ||
			res.APIKey.EnvironmentID != res.Environment.ID || !slices.Equal(res.APIKey.Scopes, allScopes) {
			t.Fatalf("first Ensure: %+v, %v", res, err)
		}
		p, err := envs.Authenticate(ctx, secret)
		if err != nil || p.EnvironmentID != res.Environment.ID {
			t.Fatalf("the ensured key does not open prod: %+v, %v", p, err)
		}
		after := stateOf(t, b.store)

		// Again, with other settings and key name: nothing changes.
		again, err := envs.Ensure(ctx, environments.CreateInput{Name: "prod"},
			&environments.NewAPIKey{Name: "renamed", Secret: secret, Scopes: []string{environments.ScopeIntegrationsRead}})
		if err != nil || again.CreatedEnvironment || again.CreatedAPIKey || again.Environment.ID != res.Environment.ID ||
			again.APIKey.ID != res.APIKey.ID || again.APIKey.Name != "backend" || !slices.Equal(again.Environment.WebhookURLs, hooks.WebhookURLs) {
			t.Fatalf("second Ensure: %+v, %v", again, err)
		}
		if d := cmp.Diff(after, stateOf(t, b.store)); d != "" {
			t.Errorf("the second Ensure changed the Store (-before +after):\n%s", d)
		}

		// dev has a key already: another is added, the first kept.
		devRes, err := envs.Ensure(ctx, environments.CreateInput{Name: "dev"},
			&environments.NewAPIKey{Name: "second", Secret: "dev-second-key-0123456789", Scopes: allScopes})
		if err != nil || devRes.CreatedEnvironment || !devRes.CreatedAPIKey || devRes.Environment.ID != bu.env.ID {
			t.Fatalf("Ensure of a second key for dev: %+v, %v", devRes, err)
		}
		for _, key := range []string{bu.key, "dev-second-key-0123456789"} {
			if p, err := envs.Authenticate(ctx, key); err != nil || p.EnvironmentID != bu.env.ID {
				t.Errorf("a key of dev after Ensure: %+v, %v", p, err)
			}
		}
		// No key: the environment only.
		if r, err := envs.Ensure(ctx, environments.CreateInput{Name: "staging"}, nil); err != nil || !r.CreatedEnvironment || r.APIKey != nil {
			t.Fatalf("Ensure without a key: %+v, %v", r, err)
		}
		after = stateOf(t, b.store)

		// Refused, nothing written.
		for name, c := range map[string]struct {
			in   environments.CreateInput
			key  *environments.NewAPIKey
			kind error
			code string
		}{
			"prod's key for a new environment": {environments.CreateInput{Name: "qa"}, prodKey, store.ErrConflict, "api_key_in_other_environment"},
			"prod's key for dev":               {environments.CreateInput{Name: "dev"}, prodKey, store.ErrConflict, "api_key_in_other_environment"},
			"no secret":                        {environments.CreateInput{Name: "qa"}, &environments.NewAPIKey{Name: "k", Scopes: allScopes}, store.ErrInvalid, "invalid_body"},
			"short secret":                     {environments.CreateInput{Name: "qa"}, &environments.NewAPIKey{Secret: "short", Scopes: allScopes}, store.ErrInvalid, "invalid_body"},
			"unknown scope":                    {environments.CreateInput{Name: "qa"}, &environments.NewAPIKey{Secret: "qa-key-0123456789abc", Scopes: []string{"everything"}}, store.ErrInvalid, "invalid_body"},
			"bad name":                         {environments.CreateInput{Name: "QA env"}, nil, store.ErrInvalid, "invalid_body"},
			"bad webhook URL":                  {environments.CreateInput{Name: "qa", WebhookURLs: []string{"ftp://x"}}, nil, store.ErrInvalid, "invalid_body"},
			"short signing key":                {environments.CreateInput{Name: "qa", WebhookSigningKey: "short"}, nil, store.ErrInvalid, "invalid_body"},
		} {
			r, err := envs.Ensure(ctx, c.in, c.key)
			if !errors.Is(err, c.kind) || store.CodeOf(err) != c.code || r != nil {
				t.Errorf("%s: Ensure = %+v, %v; want %v %s", name, r, err, c.kind, c.code)
			}
			if err != nil && strings.Contains(err.Error(), secret) {
				t.Errorf("%s: the error holds the secret: %v", name, err)
			}
		}
		if _, err := envs.Ensure(ctx, environments.CreateInput{Name: "qa"}, prodKey); err == nil ||
			!strings.Contains(err.Error(), `environment "prod"`) {
			t.Errorf("the refusal of another environment's key does not name it: %v", err)
		}
		if d := cmp.Diff(after, stateOf(t, b.store)); d != "" {
			t.Errorf("a refused Ensure changed the Store (-before +after):\n%s", d)
		}
	})
}

// TestEnsureConcurrent: instances starting at once, each a Service of its
// own on the same Store, all run Ensure for the same environment and key:
// every call succeeds, one environment and one key result, and exactly one
// call reports creating each.
func TestEnsureConcurrent(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		const instances = 6
		svcs := make([]*connect.Service, instances)
		for i := range svcs {
			svcs[i] = serviceWith(t, b, testKey)
		}
		results := ensureAll(t, svcs)
		checkEnsuredOnce(t, b.store, results)
	})
}

// TestEnsureRace: the two orders in which concurrent Ensure calls can
// find each other's writes, forced. Postgres only: SQLite runs one write
// transaction at a time.
//
//   - Both calls find neither the environment nor the key, then both create
//     them: the second's writes meet the first's, it starts over and finds
//     them.
//   - One call finds no environment, then another creates the environment
//     and the key before the first looks for the key: the first finds the
//     key in an environment of the name it was given, starts over and finds
//     both (rather than refusing the key as another environment's).
func TestEnsureRace(t *testing.T) {
	t.Parallel()
	t.Run("both create", func(t *testing.T) {
		t.Parallel()
		b := postgresBackend(t)
		arrived := make(chan struct{})
		var late atomic.Bool
		hs := &lookupHookStore{Store: b.store, hook: func(n int) {
			// Hold the first two lookups until both arrived.
			switch {
			case n == 2:
				close(arrived)
			case n > 2:
				return
			}
			select {
			case <-arrived:
			case <-time.After(time.Minute):
				late.Store(true)
			}
		}}
		racy := b.with(hs)
		results := ensureAll(t, []*connect.Service{serviceWith(t, racy, testKey), serviceWith(t, racy, testKey)})
		if late.Load() {
			t.Fatal("the two calls did not both look up the key within a minute")
		}
		checkEnsuredOnce(t, b.store, results)
		if n := hs.lookups.Load(); n < 3 {
			t.Errorf("the key was looked up %d times: no call started over (want at least 3)", n)
		}
	})
	t.Run("created between the reads", func(t *testing.T) {
		t.Parallel()
		b := postgresBackend(t)
		other := serviceWith(t, b, testKey)
		var first *environments.Ensured
		var firstErr error
		hs := &lookupHookStore{Store: b.store, hook: func(n int) {
			if n == 1 { // the other instance runs, and commits, in between
				first, firstErr = other.Environments().Ensure(context.Background(), environments.CreateInput{Name: "prod"},
					&environments.NewAPIKey{Name: "other", Secret: "prod-key-0123456789abcdef", Scopes: allScopes})
			}
		}}
		svc := serviceWith(t, b.with(hs), testKey)
		second, err := svc.Environments().Ensure(context.Background(), environments.CreateInput{Name: "prod"},
			&environments.NewAPIKey{Name: "backend", Secret: "prod-key-0123456789abcdef", Scopes: allScopes})
		if firstErr != nil || err != nil {
			t.Fatalf("Ensure calls: %v; %v", firstErr, err)
		}
		checkEnsuredOnce(t, b.store, []*environments.Ensured{first, second})
		if n := hs.lookups.Load(); n < 2 {
			t.Errorf("the key was looked up %d times: the call did not start over (want at least 2)", n)
		}
	})
}

// lookupHookStore calls hook with the ordinal (from 1) of each lookup of an
// API key by hash, before it runs.
type lookupHookStore struct {
	connect.Store
	hook    func(n int)
	lookups atomic.Int32
}

func (s *lookupHookStore) GetAPIKeyByHash(ctx context.Context, hash []byte) (*environments.APIKey, error) {
	s.hook(int(s.lookups.Add(1)))
	return s.Store.GetAPIKeyByHash(ctx, hash)
}

// ensureAll runs Ensure of environment prod with one key on every Service
// at once.
func ensureAll(t *testing.T, svcs []*connect.Service) []*environments.Ensured {
	t.Helper()
	results := make([]*environments.Ensured, len(svcs))
	errs := make([]error, len(svcs))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, svc := range svcs {
		wg.Go(func() {
			<-start
			results[i], errs[i] = svc.Environments().Ensure(context.Background(), environments.CreateInput{Name: "prod"},
				&environments.NewAPIKey{Name: fmt.Sprintf("instance-%d", i), Secret: "prod-key-0123456789abcdef", Scopes: allScopes})
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("instance %d: Ensure: %v", i, err)
		}
	}
	return results
}

func checkEnsuredOnce(t *testing.T, st connect.Store, results []*environments.Ensured) {
	t.Helper()
	state := stateOf(t, st)
	if !slices.Equal(state.Envs, []string{"prod"}) || len(state.Keys["prod"]) != 1 {
		t.Fatalf("after concurrent Ensure calls: %+v, want one environment prod with one key", state)
	}
	envs, keys := 0, 0
	for i, r := range results {
		if r.Environment.Name != "prod" || r.APIKey == nil || r.APIKey.ID != results[0].APIKey.ID || r.Environment.ID != results[0].Environment.ID {
			t.Errorf("instance %d: %+v", i, r)
		}
		if r.CreatedEnvironment {
			envs++
		}
		if r.CreatedAPIKey {
			keys++
		}
	}
	if envs != 1 || keys != 1 {
		t.Errorf("%d calls report creating the environment and %d the key, want 1 and 1", envs, keys)
	}
}
