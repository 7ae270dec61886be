package environments_test

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/internal/httpapi"
	"github.com/embedauth/connect/internal/secret"
	"github.com/embedauth/connect/store"
	"github.com/embedauth/connect/store/sqlite"
)

// countingStore counts the reads of API keys and environments; while gate
// is set, each read waits for it to close (after reading), and while fail
// is set, each read fails with it.
type countingStore struct {
	*sqlite.Store
	mu       sync.Mutex
	keyReads int
	envReads int
	gate     chan struct{}
	fail     error
}

func (s *countingStore) wait(ctx context.Context, n *int) error {
	s.mu.Lock()
	*n++
	gate, fail := s.gate, s.fail
	s.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return fail
}

func (s *countingStore) GetAPIKeyByHash(ctx context.Context, hash []byte) (*environments.APIKey, error) {
	k, err := s.Store.GetAPIKeyByHash(ctx, hash)
	if werr := s.wait(ctx, &s.keyReads); werr != nil {
		return nil, werr
	}
	return k, err
}

func (s *countingStore) GetEnvironment(ctx context.Context, id int64) (*environments.Environment, error) {
	e, err := s.Store.GetEnvironment(ctx, id)
	if werr := s.wait(ctx, &s.envReads); werr != nil {
		return nil, werr
	}
	return e, err
}

func (s *countingStore) set(gate chan struct{}, fail error) {
	s.mu.Lock()
	s.gate, s.fail = gate, fail
	s.mu.Unlock()
}

func (s *countingStore) reads() (keys, envs int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keyReads, s.envReads
}

type cacheBundle struct {
	svc *environments.Service
	st  *countingStore
	env *environments.Environment
	key *environments.APIKey
	raw string

	mu  sync.Mutex
	now time.Time
}

func (b *cacheBundle) clock() time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.now
}

func (b *cacheBundle) advance(d time.Duration) {
	b.mu.Lock()
	b.now = b.now.Add(d)
	b.mu.Unlock()
}

// cacheSetup builds a Service with a 10 s key cache on a counting store,
// with an environment and an API key, authenticated once (cached).
func cacheSetup(t *testing.T) *cacheBundle {
	t.Helper()
	k, err := secret.NewKeyring(secret.Key{ID: "k", Secret: bytes.Repeat([]byte{3}, 32)})
	if err != nil {
		t.Fatal(err)
	}
	b := &cacheBundle{st: &countingStore{Store: newStore(t)}, now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	b.svc = environments.NewService(b.st, k, b.clock, 10*time.Second)
	ctx := context.Background()
	if b.env, err = b.svc.Create(ctx, environments.CreateInput{Name: "dev", WebhookSigningKey: "signing-key-0123456789"}); err != nil {
		t.Fatal(err)
	}
	if b.raw, b.key, err = b.svc.CreateAPIKey(ctx, b.env.ID, environments.NewAPIKey{Name: "k", Scopes: []string{environments.ScopeAll}}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.svc.Authenticate(ctx, b.raw); err != nil {
		t.Fatal(err)
	}
	if _, err := b.svc.SigningKey(ctx, b.env.ID); err != nil {
		t.Fatal(err)
	}
	return b
}

// authAll authenticates the bundle's key from n goroutines at once; once
// they all wait or are done (synctest.Wait) it returns their results so
// far and a function that waits for the rest.
func (b *cacheBundle) authAll(n int) (ps []*httpapi.Principal, errs []error, wait func()) {
	ps, errs = make([]*httpapi.Principal, n), make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { ps[i], errs[i] = b.svc.Authenticate(context.Background(), b.raw) })
	}
	synctest.Wait()
	return ps, errs, wg.Wait
}

// TestAuthenticateSingleFlight: when a cached key has expired, N concurrent
// requests with it read the Store once.
func TestAuthenticateSingleFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := cacheSetup(t)
		b.advance(11 * time.Second)
		keys0, envs0 := b.st.reads()
		gate := make(chan struct{})
		b.st.set(gate, nil)
		ps, errs, wait := b.authAll(64)
		if keys, _ := b.st.reads(); keys-keys0 != 1 {
			t.Errorf("%d reads of the API key for 64 concurrent requests after expiry, want 1", keys-keys0)
		}
		b.st.set(nil, nil)
		close(gate)
		wait()
		for i := range ps {
			if errs[i] != nil || ps[i].KeyID != b.key.ID {
				t.Fatalf("request %d: %+v, %v", i, ps[i], errs[i])
			}
		}
		if keys, envs := b.st.reads(); keys-keys0 != 1 || envs-envs0 != 1 {
			t.Errorf("%d key reads and %d environment reads, want 1 and 1", keys-keys0, envs-envs0)
		}
	})
}

// TestAuthenticateRefreshAhead: a key in the last quarter of its TTL is
// refreshed by one background read while requests keep being answered from
// the cache, and the refreshed entry lives a full TTL from that read.
func TestAuthenticateRefreshAhead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := cacheSetup(t)
		b.advance(8 * time.Second)
		keys0, _ := b.st.reads()
		gate := make(chan struct{})
		b.st.set(gate, nil)
		ps, errs, wait := b.authAll(32)
		for i := range ps { // answered while the refresh waits in the Store
			if errs[i] != nil || ps[i] == nil || ps[i].KeyID != b.key.ID {
				t.Errorf("request %d during the refresh: %+v, %v", i, ps[i], errs[i])
				break
			}
		}
		if keys, _ := b.st.reads(); keys-keys0 != 1 {
			t.Errorf("%d reads of the key near expiry, want 1 in the background", keys-keys0)
		}
		b.st.set(nil, nil)
		close(gate)
		wait()
		synctest.Wait()
		// At 17 s the entry read at 8 s still serves (and refreshes again
		// in the background), with no request waiting for the Store.
		b.advance(9 * time.Second)
		held := make(chan struct{}) // a request that waited for the Store would not return
		b.st.set(held, nil)
		keys1, _ := b.st.reads()
		done := make(chan error, 1)
		go func() {
			_, err := b.svc.Authenticate(context.Background(), b.raw)
			done <- err
		}()
		synctest.Wait()
		select {
		case err := <-done:
			if err != nil {
				t.Error(err)
			}
		default:
			t.Error("a request at 17 s waits for the Store")
		}
		if keys, _ := b.st.reads(); keys-keys1 != 1 {
			t.Errorf("%d reads at 17 s, want 1 refresh in the background", keys-keys1)
		}
		close(held)
		synctest.Wait()
	})
}

// TestRefreshFailureDoesNotPoison: a refresh that fails (the database is
// down) keeps the key working until its TTL ends; the failure is not
// cached.
func TestRefreshFailureDoesNotPoison(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := cacheSetup(t)
		down := errors.New("connection refused")
		b.st.set(nil, down)
		b.advance(8 * time.Second)
		keys0, _ := b.st.reads()
		for range 3 {
			if _, err := b.svc.Authenticate(context.Background(), b.raw); err != nil {
				t.Fatalf("during a failed refresh: %v", err)
			}
			synctest.Wait()
		}
		if keys, _ := b.st.reads(); keys-keys0 != 1 {
			t.Errorf("%d reads, want 1: a refresh that failed is not tried again before the key expires", keys-keys0)
		}
		b.advance(2 * time.Second) // expired
		if _, err := b.svc.Authenticate(context.Background(), b.raw); !errors.Is(err, down) {
			t.Fatalf("after expiry with the database down: %v", err)
		}
		b.st.set(nil, nil)
		if p, err := b.svc.Authenticate(context.Background(), b.raw); err != nil || p.KeyID != b.key.ID {
			t.Errorf("once the database is back: %+v, %v", p, err)
		}
	})
}

// TestRevokeDuringRefresh: a key deleted through the Service is refused at
// once, even while a refresh that read it before the deletion is in
// flight, and after that refresh ends.
func TestRevokeDuringRefresh(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := cacheSetup(t)
		b.advance(8 * time.Second)
		gate := make(chan struct{})
		b.st.set(gate, nil)
		if _, err := b.svc.Authenticate(context.Background(), b.raw); err != nil {
			t.Error(err)
		}
		synctest.Wait() // the refresh has read the key and waits
		b.st.set(nil, nil)
		if err := b.svc.DeleteAPIKey(context.Background(), b.env.ID, b.key.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := b.svc.Authenticate(context.Background(), b.raw); !errors.Is(err, store.ErrUnauthorized) {
			t.Errorf("right after DeleteAPIKey: %v", err)
		}
		close(gate)
		synctest.Wait()
		if _, err := b.svc.Authenticate(context.Background(), b.raw); !errors.Is(err, store.ErrUnauthorized) {
			t.Errorf("after the refresh that read the key ended: %v", err)
		}
	})
}

// TestRefreshFindsKeyDeletedElsewhere: a refresh that finds the key deleted
// (by another process) forgets it at once, before its TTL ends.
func TestRefreshFindsKeyDeletedElsewhere(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := cacheSetup(t)
		if err := b.st.Store.DeleteAPIKey(context.Background(), b.env.ID, b.key.ID); err != nil {
			t.Fatal(err)
		}
		b.advance(8 * time.Second)
		if _, err := b.svc.Authenticate(context.Background(), b.raw); err != nil {
			t.Fatalf("within the TTL: %v", err)
		}
		synctest.Wait()
		if _, err := b.svc.Authenticate(context.Background(), b.raw); !errors.Is(err, store.ErrUnauthorized) {
			t.Errorf("after the refresh found it deleted: %v", err)
		}
	})
}

// TestSigningKeySingleFlight: concurrent deliveries of an environment whose
// signing key expired read the environment once; a new key set through the
// Service is used at once.
func TestSigningKeySingleFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := cacheSetup(t)
		b.advance(11 * time.Second)
		_, envs0 := b.st.reads()
		gate := make(chan struct{})
		b.st.set(gate, nil)
		keys := make([]string, 32)
		var wg sync.WaitGroup
		for i := range keys {
			wg.Go(func() { keys[i], _ = b.svc.SigningKey(context.Background(), b.env.ID) })
		}
		synctest.Wait()
		if _, envs := b.st.reads(); envs-envs0 != 1 {
			t.Errorf("%d environment reads for 32 concurrent signing-key lookups, want 1", envs-envs0)
		}
		b.st.set(nil, nil)
		close(gate)
		wg.Wait()
		for i, k := range keys {
			if k != "signing-key-0123456789" {
				t.Fatalf("lookup %d = %q", i, k)
			}
		}
		rotated := "rotated-signing-key-0123"
		if _, err := b.svc.Update(context.Background(), b.env.ID, environments.UpdateInput{WebhookSigningKey: &rotated}); err != nil {
			t.Fatal(err)
		}
		if k, err := b.svc.SigningKey(context.Background(), b.env.ID); err != nil || k != rotated {
			t.Errorf("after Update: %q, %v", k, err)
		}
	})
}
