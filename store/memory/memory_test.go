package memory_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	connect "github.com/embedauth/connect"
	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/oplog"
	"github.com/embedauth/connect/store"
	"github.com/embedauth/connect/store/memory"
	"github.com/embedauth/connect/store/storetest"
)

var (
	_ connect.Store      = (*memory.Store)(nil)
	_ store.CommitHooker = (*memory.Store)(nil)
)

func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) storetest.Store { return memory.New() })
}

func TestInvalidData(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := memory.New()
	env := &environments.Environment{Name: "dev"}
	if err := s.CreateEnvironment(ctx, env); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateIntegration(ctx, &integrations.Integration{EnvironmentID: env.ID, UniqueKey: "github"}); err != nil {
		t.Fatal(err)
	}
	conn := func(cid string, md map[string]any) *connections.Connection {
		return &connections.Connection{EnvironmentID: env.ID, IntegrationKey: "github", ConnectionID: cid, Metadata: md}
	}
	for name, err := range map[string]error{
		"NaN metadata":         s.CreateConnection(ctx, conn("u1", map[string]any{"nan": math.NaN()})),
		"NUL in metadata":      s.CreateConnection(ctx, conn("u2", map[string]any{"k": "a\x00b"})),
		"NUL in connection id": s.CreateConnection(ctx, conn("u\x00", nil)),
		"invalid UTF-8 name":   s.CreateEnvironment(ctx, &environments.Environment{Name: "\xff"}),
		"NUL in variable":      s.SetVariables(ctx, env.ID, []environments.Variable{{Name: "v", SealedValue: "\x00"}}),
		"NUL in log":           s.AppendLog(ctx, &oplog.Entry{ID: "l\x00"}),
	} {
		if !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%s: got %v, want ErrInvalid", name, err)
		}
	}
	// Bytes are not text, and plaintext fields are not stored.
	if err := s.CreateAPIKey(ctx, &environments.APIKey{EnvironmentID: env.ID, Hash: []byte{0, 0xff}}); err != nil {
		t.Errorf("CreateAPIKey with a binary hash: %v", err)
	}
	c := conn("u3", nil)
	c.Credentials = &connections.Credentials{AccessToken: "\x00"}
	if err := s.CreateConnection(ctx, c); err != nil {
		t.Errorf("CreateConnection with NUL in plaintext credentials: %v", err)
	}
}

func TestLockWaitHonoursContext(t *testing.T) {
	t.Parallel()
	s := memory.New()
	err := s.WithTx(t.Context(), func(txCtx context.Context) error {
		// A call with a context outside the transaction waits for it; its
		// deadline ends the wait.
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
		defer cancel()
		_, err := s.ListEnvironments(ctx)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("call outside the transaction: got %v, want DeadlineExceeded", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestContextOfEndedTransaction(t *testing.T) {
	t.Parallel()
	s := memory.New()
	var kept context.Context
	if err := s.WithTx(t.Context(), func(ctx context.Context) error {
		kept = ctx
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// Once the transaction has ended its context takes the store lock
	// normally, and a WithTx with it starts a new transaction.
	err := s.WithTx(kept, func(ctx context.Context) error {
		return s.CreateEnvironment(ctx, &environments.Environment{Name: "dev"})
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetEnvironmentByName(kept, "dev"); err != nil {
		t.Fatal(err)
	}
}

func TestTransactionContextFromGoroutines(t *testing.T) {
	t.Parallel()
	s := memory.New()
	err := s.WithTx(t.Context(), func(ctx context.Context) error {
		done := make(chan error, 10)
		for i := range 10 {
			go func() {
				done <- s.CreateEnvironment(ctx, &environments.Environment{Name: string(rune('a' + i))})
			}()
		}
		for range 10 {
			if err := <-done; err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	envs, err := s.ListEnvironments(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(envs) != 10 {
		t.Errorf("got %d environments, want 10", len(envs))
	}
}

// The memory Store runs AfterCommit functions after the outermost commit,
// never after a rollback, and at once outside a transaction.
func TestAfterCommit(t *testing.T) {
	t.Parallel()
	st := memory.New()
	ctx := t.Context()
	var got []string
	st.AfterCommit(ctx, func() { got = append(got, "outside") })
	err := st.WithTx(ctx, func(ctx context.Context) error {
		st.AfterCommit(ctx, func() { got = append(got, "rolled back") })
		return errors.New("roll back")
	})
	if err == nil {
		t.Fatal("WithTx returned nil")
	}
	var kept context.Context
	err = st.WithTx(ctx, func(ctx context.Context) error {
		kept = ctx
		st.AfterCommit(ctx, func() {
			got = append(got, "first")
			// The store's lock is released: fn may use the Store.
			if _, err := st.ListEnvironments(context.Background()); err != nil {
				t.Error(err)
			}
		})
		err := st.WithTx(ctx, func(ctx context.Context) error {
			st.AfterCommit(ctx, func() { got = append(got, "nested") })
			return nil
		})
		if len(got) != 1 {
			t.Errorf("the nested WithTx ran hooks: %v", got)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	st.AfterCommit(kept, func() { got = append(got, "ended tx") })
	want := []string{"outside", "first", "nested", "ended tx"}
	if len(got) != len(want) {
		t.Fatalf("ran %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("ran %v, want %v", got, want)
		}
	}
	// A panic rolls back and runs nothing.
	func() {
		defer func() { _ = recover() }()
		_ = st.WithTx(ctx, func(ctx context.Context) error {
			st.AfterCommit(ctx, func() { got = append(got, "panicked") })
			panic("boom")
		})
	}()
	if len(got) != len(want) {
		t.Errorf("a panicking transaction ran its hooks: %v", got)
	}
}
