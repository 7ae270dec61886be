package storetest

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/store"
)

var flowTests = []test{
	{"CRUD", testFlowCRUD},
	{"ClaimOnce", testFlowClaimOnce},
	{"ClaimConcurrent", testFlowClaimConcurrent},
	{"Conflict", testFlowConflict},
	{"MissingEnvironment", testFlowMissingEnvironment},
	{"ByClientID", testFlowByClientID},
	{"DeleteExpired", testFlowDeleteExpired},
	{"Copies", testFlowCopies},
	{"Tx", testFlowTx},
}

func newFlowValue(env, session int64, state, client string, expires int) *connections.OAuthFlow {
	return &connections.OAuthFlow{
		EnvironmentID:      env,
		SessionID:          session,
		StateHash:          []byte("state-" + state),
		ClientID:           client,
		IntegrationKey:     "github",
		Provider:           "github",
		AuthMode:           integrations.AuthModeOAuth2,
		ConnectionID:       "conn-" + state,
		ConnectionConfig:   map[string]any{"subdomain": "acme", "n": float64(2)},
		Tags:               map[string]string{"end_user_id": "u1"},
		WebhookURLOverride: "https://hooks.example.com/flow",
		Scopes:             []string{"repo", "user"},
		SealedSecrets:      "v1:k1:sealed-" + state,
		BrowserHash:        []byte("browser-" + state),
		Status:             connections.FlowPending,
		CreatedAt:          ts,
		ExpiresAt:          at(expires),
	}
}

func newFlow(t *testing.T, s Store, env, session int64, state, client string, expires int) *connections.OAuthFlow {
	t.Helper()
	f := newFlowValue(env, session, state, client, expires)
	must(t, s.CreateOAuthFlow(t.Context(), f))
	if f.ID == 0 {
		t.Fatal("CreateOAuthFlow did not set ID")
	}
	return f
}

func testFlowCRUD(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	a := newFlow(t, s, env.ID, 7, "a", "ws-a", 900)
	b := newFlowValue(env.ID, 7, "b", "", 900)
	b.ConnectionConfig, b.Tags, b.Scopes, b.WebhookURLOverride, b.Reconnect = nil, nil, nil, "", true
	must(t, s.CreateOAuthFlow(ctx, b))
	if a.ID == b.ID {
		t.Fatalf("two flows got the ID %d", a.ID)
	}

	got, err := s.ClaimOAuthFlow(ctx, a.StateHash)
	must(t, err)
	want := *a
	want.Status = connections.FlowExchanging
	diff(t, "ClaimOAuthFlow", &want, got)

	must(t, s.CompleteOAuthFlow(ctx, a.ID, connections.FlowFailed, "token_err", "the provider refused the code", at(10)))
	got, err = s.GetOAuthFlowByClientID(ctx, "ws-a", 0)
	must(t, err)
	want.Status, want.ErrorType, want.ErrorMessage = connections.FlowFailed, "token_err", "the provider refused the code"
	done := at(10)
	want.CompletedAt = &done
	diff(t, "flow after CompleteOAuthFlow", &want, got)

	got, err = s.ClaimOAuthFlow(ctx, b.StateHash)
	must(t, err)
	if !got.Reconnect || got.ConnectionConfig != nil && len(got.ConnectionConfig) != 0 {
		t.Errorf("claimed flow b = %+v", got)
	}
	_, err = s.ClaimOAuthFlow(ctx, []byte("state-none"))
	wantErr(t, "ClaimOAuthFlow(unknown)", err, store.ErrNotFound)
	wantErr(t, "CompleteOAuthFlow(missing)", s.CompleteOAuthFlow(ctx, a.ID+b.ID+100, connections.FlowSuccess, "", "", at(1)), store.ErrNotFound)
}

// A state is used once: a second claim, whatever the flow's status, is a
// conflict.
func testFlowClaimOnce(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	f := newFlow(t, s, env.ID, 1, "once", "", 900)
	_, err := s.ClaimOAuthFlow(ctx, f.StateHash)
	must(t, err)
	_, err = s.ClaimOAuthFlow(ctx, f.StateHash)
	wantErr(t, "second claim", err, store.ErrConflict)
	must(t, s.CompleteOAuthFlow(ctx, f.ID, connections.FlowSuccess, "", "", at(5)))
	_, err = s.ClaimOAuthFlow(ctx, f.StateHash)
	wantErr(t, "claim of a completed flow", err, store.ErrConflict)
}

// Of many concurrent claims of one state, exactly one wins.
func testFlowClaimConcurrent(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	f := newFlow(t, s, env.ID, 1, "race", "", 900)
	const n = 20
	var wg sync.WaitGroup
	var mu sync.Mutex
	won, conflicts := 0, 0
	for range n {
		wg.Go(func() {
			_, err := s.ClaimOAuthFlow(ctx, f.StateHash)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				won++
			case errors.Is(err, store.ErrConflict):
				conflicts++
			default:
				t.Errorf("claim: %v", err)
			}
		})
	}
	wg.Wait()
	if won != 1 || conflicts != n-1 {
		t.Errorf("%d claims won and %d conflicted, want 1 and %d", won, conflicts, n-1)
	}
}

func testFlowConflict(t *testing.T, s Store) {
	env := newEnv(t, s, "dev")
	newFlow(t, s, env.ID, 1, "dup", "", 900)
	wantErr(t, "CreateOAuthFlow(same state)", s.CreateOAuthFlow(t.Context(), newFlowValue(env.ID, 2, "dup", "", 900)), store.ErrConflict)
}

func testFlowMissingEnvironment(t *testing.T, s Store) {
	wantErr(t, "CreateOAuthFlow(missing environment)", s.CreateOAuthFlow(t.Context(), newFlowValue(987654, 1, "x", "", 900)), store.ErrNotFound)
}

// The newest flow of a client id wins; a session id narrows the search.
func testFlowByClientID(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	newFlow(t, s, env.ID, 1, "old", "ws-1", 900)
	newer := newFlow(t, s, env.ID, 1, "new", "ws-1", 900)
	other := newFlow(t, s, env.ID, 2, "other", "ws-2", 900)
	newFlow(t, s, env.ID, 1, "blank", "", 900)

	got, err := s.GetOAuthFlowByClientID(ctx, "ws-1", 0)
	must(t, err)
	if got.ID != newer.ID {
		t.Errorf("GetOAuthFlowByClientID(ws-1) = flow %d, want the newest %d", got.ID, newer.ID)
	}
	got, err = s.GetOAuthFlowByClientID(ctx, "ws-1", 1)
	must(t, err)
	if got.ID != newer.ID {
		t.Errorf("GetOAuthFlowByClientID(ws-1, session 1) = flow %d, want %d", got.ID, newer.ID)
	}
	_, err = s.GetOAuthFlowByClientID(ctx, "ws-1", 2)
	wantErr(t, "GetOAuthFlowByClientID(of another session)", err, store.ErrNotFound)
	got, err = s.GetOAuthFlowByClientID(ctx, "ws-2", 2)
	must(t, err)
	if got.ID != other.ID {
		t.Errorf("GetOAuthFlowByClientID(ws-2) = flow %d, want %d", got.ID, other.ID)
	}
	_, err = s.GetOAuthFlowByClientID(ctx, "", 0)
	wantErr(t, "GetOAuthFlowByClientID(empty)", err, store.ErrNotFound)
	_, err = s.GetOAuthFlowByClientID(ctx, "ws-none", 0)
	wantErr(t, "GetOAuthFlowByClientID(unknown)", err, store.ErrNotFound)
}

func testFlowDeleteExpired(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	gone1 := newFlow(t, s, env.ID, 1, "e1", "", 10)
	gone2 := newFlow(t, s, env.ID, 1, "e2", "", 20)
	kept := newFlow(t, s, env.ID, 1, "live", "", 900)
	n, err := s.DeleteExpiredOAuthFlows(ctx, at(100), 1)
	must(t, err)
	if n != 1 {
		t.Fatalf("DeleteExpiredOAuthFlows(limit 1) = %d", n)
	}
	_, err = s.ClaimOAuthFlow(ctx, gone1.StateHash)
	wantErr(t, "claim of the soonest expired flow", err, store.ErrNotFound)
	n, err = s.DeleteExpiredOAuthFlows(ctx, at(100), 0)
	must(t, err)
	if n != 1 {
		t.Fatalf("DeleteExpiredOAuthFlows(all) = %d, want 1", n)
	}
	_, err = s.ClaimOAuthFlow(ctx, gone2.StateHash)
	wantErr(t, "claim of an expired flow", err, store.ErrNotFound)
	_, err = s.ClaimOAuthFlow(ctx, kept.StateHash)
	must(t, err)
}

// The Store keeps its own copies: changing a value after Create, or a
// returned one, changes nothing stored.
func testFlowCopies(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	f := newFlowValue(env.ID, 1, "c", "ws-c", 900)
	f.Secrets = &connections.FlowSecrets{CodeVerifier: "plain"}
	must(t, s.CreateOAuthFlow(ctx, f))
	want := *f
	want.Secrets = nil
	want.ConnectionConfig = map[string]any{"subdomain": "acme", "n": float64(2)}
	want.Tags = map[string]string{"end_user_id": "u1"}
	want.Scopes = []string{"repo", "user"}
	f.ConnectionConfig["subdomain"] = "changed"
	f.Tags["end_user_id"] = "changed"
	f.Scopes[0] = "changed"
	got, err := s.GetOAuthFlowByClientID(ctx, "ws-c", 0)
	must(t, err)
	diff(t, "flow after changing the created value (Secrets is not stored)", &want, got)
	got.ConnectionConfig["subdomain"] = "changed again"
	got, err = s.GetOAuthFlowByClientID(ctx, "ws-c", 0)
	must(t, err)
	diff(t, "flow after changing a returned value", &want, got)
}

func testFlowTx(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	f := newFlow(t, s, env.ID, 1, "tx", "ws-tx", 900)
	boom := errors.New("boom")
	err := s.WithTx(ctx, func(ctx context.Context) error {
		if _, err := s.ClaimOAuthFlow(ctx, f.StateHash); err != nil {
			return err
		}
		if err := s.CreateOAuthFlow(ctx, newFlowValue(env.ID, 1, "tx-new", "ws-new", 900)); err != nil {
			return err
		}
		return boom
	})
	wantErr(t, "WithTx", err, boom)
	got, err := s.ClaimOAuthFlow(ctx, f.StateHash)
	must(t, err)
	if got.ID != f.ID {
		t.Errorf("claimed flow %d, want %d", got.ID, f.ID)
	}
	_, err = s.GetOAuthFlowByClientID(ctx, "ws-new", 0)
	wantErr(t, "flow created in a rolled back transaction", err, store.ErrNotFound)
}
