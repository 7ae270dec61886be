package postgres_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/lib/pq"

	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/functions"
	"github.com/embedauth/connect/internal/pgtest"
	"github.com/embedauth/connect/internal/uuid"
	"github.com/embedauth/connect/store"
	"github.com/embedauth/connect/store/postgres"
)

// newTask returns a pending task of env with a sealed input.
func newTask(env int64, input string) *functions.ActionTask {
	now := time.Now().UTC().Truncate(time.Microsecond)
	return &functions.ActionTask{ID: uuid.New(), EnvironmentID: env, ConnectionID: 1, Integration: "gh",
		ConnectionRef: "c", ActionName: "a", SealedInput: input, Status: functions.TaskPending, LogID: "log",
		CreatedAt: now, UpdatedAt: now}
}

func newTaskEnv(t *testing.T, s *postgres.Store) int64 {
	t.Helper()
	now := time.Now().UTC().Truncate(time.Microsecond)
	env := &environments.Environment{Account: "default", Name: "dev", WebhookSettings: environments.DefaultWebhookSettings(),
		CreatedAt: now, UpdatedAt: now}
	if err := s.CreateEnvironment(t.Context(), env); err != nil {
		t.Fatal(err)
	}
	return env.ID
}

// TestActionTaskSealingKeysMigration: migration 015 registers the key ids
// of the action tasks stored before it, in each of their sealed columns.
func TestActionTaskSealingKeysMigration(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db, schema := pgtest.Schema(t)
	opts := &postgres.Options{Schema: schema}
	if err := postgres.MigrateTo(ctx, db, opts, 14); err != nil {
		t.Fatal(err)
	}
	old := openStore(t, db, opts)
	env := newTaskEnv(t, old)
	succeeded, failed := newTask(env, "plain"), newTask(env, "")
	succeeded.Status, succeeded.SealedOutput = functions.TaskSucceeded, "v1:k-out:x"
	failed.Status, failed.SealedError = functions.TaskFailed, "v1:k-err_1:x"
	for _, tk := range []*functions.ActionTask{newTask(env, "v1:k-in:x"), succeeded, failed} {
		if err := old.CreateActionTask(ctx, tk); err != nil {
			t.Fatal(err)
		}
	}
	before, err := old.SealingKeyIDs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(before) != 0 {
		t.Fatalf("key ids before migration 015: %q, want none", before)
	}
	if err := postgres.MigrateWithoutRiver(ctx, db, opts); err != nil {
		t.Fatal(err)
	}
	s := openStore(t, db, opts)
	ids, err := s.SealingKeyIDs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"k-err_1", "k-in", "k-out"}, ids); d != "" {
		t.Errorf("key ids after the migration (-want +got):\n%s", d)
	}
	for id, kind := range map[string]string{"k-in": store.SealedActionInput, "k-out": store.SealedActionOutput,
		"k-err_1": store.SealedActionError} {
		counts, err := s.ForgetSealingKeyID(ctx, id)
		if err != nil || !cmp.Equal(counts, map[string]int{kind: 1}) {
			t.Errorf("counts of %s: %v, %v; want one %s", id, counts, err, kind)
		}
	}
}

// TestActionTaskSealingKeyIDs: the triggers of action tasks register the
// key id that store.SealedKeyID finds in each sealed column, and nothing
// else, on insert and on update.
func TestActionTaskSealingKeyIDs(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, _, _ := newStore(t)
	env := newTaskEnv(t, s)
	base, err := s.SealingKeyIDs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, id := range base {
		want[id] = true
	}
	// Each case as an input (insert), then as the output and the error
	// body of tasks updated from none.
	for _, sealed := range sealedPayloadCases {
		if id, ok := store.SealedKeyID(sealed); ok {
			want[id] = true
		}
		if err := s.CreateActionTask(ctx, newTask(env, sealed)); err != nil {
			t.Fatal(err)
		}
		for _, setOutput := range []bool{true, false} {
			tk := newTask(env, "plain")
			if err := s.CreateActionTask(ctx, tk); err != nil {
				t.Fatal(err)
			}
			if setOutput {
				tk.Status, tk.SealedOutput = functions.TaskSucceeded, sealed
			} else {
				tk.Status, tk.SealedError = functions.TaskFailed, sealed
			}
			if err := s.UpdateActionTask(ctx, tk); err != nil {
				t.Fatal(err)
			}
		}
	}
	got, err := s.SealingKeyIDs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantIDs := []string{}
	for id := range want {
		wantIDs = append(wantIDs, id)
	}
	slices.Sort(wantIDs)
	if d := cmp.Diff(wantIDs, got); d != "" {
		t.Errorf("key ids (-want +got):\n%s", d)
	}
}

// TestForgetSealingKeyWaitsForActionTaskWriters: an action task's output
// being written under a key id in a transaction that has not committed yet
// is counted: the tasks' trigger takes the registry's lock as the others
// do.
func TestForgetSealingKeyWaitsForActionTaskWriters(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, db, schema := newStore(t)
	env := newTaskEnv(t, s)
	tk := newTask(env, "v1:k-in:x")
	if err := s.CreateActionTask(ctx, tk); err != nil {
		t.Fatal(err)
	}
	written, commit := make(chan struct{}), make(chan struct{})
	// The writer commits when the test ends, whatever happened, so that
	// its connection is free when the Store closes.
	var once sync.Once
	release := func() { once.Do(func() { close(commit) }) }
	t.Cleanup(release)
	txDone := make(chan error, 1)
	go func() {
		txDone <- s.WithTx(context.Background(), func(ctx context.Context) error {
			tk.Status, tk.SealedOutput = functions.TaskSucceeded, "v1:k-out:x"
			err := s.UpdateActionTask(ctx, tk)
			close(written)
			if err != nil {
				return err
			}
			<-commit
			return nil
		})
	}()
	<-written
	type result struct {
		counts map[string]int
		err    error
	}
	forgot := make(chan result, 1)
	go func() {
		c, err := s.ForgetSealingKeyID(context.Background(), "k-out")
		forgot <- result{c, err}
	}()
	for waiting := false; !waiting; {
		err := db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE NOT granted
			AND relation = ($1 || '.sealing_keys')::regclass)`, pq.QuoteIdentifier(schema)).Scan(&waiting)
		if err != nil {
			t.Fatal(err)
		}
		select {
		case r := <-forgot:
			t.Fatalf("ForgetSealingKeyID returned %v, %v while a writer of the key had not committed", r.counts, r.err)
		default:
		}
	}
	release()
	if err := <-txDone; err != nil {
		t.Fatal(err)
	}
	r := <-forgot
	if r.err != nil || r.counts[store.SealedActionOutput] != 1 {
		t.Errorf("ForgetSealingKeyID = %v, %v; want the committed output counted", r.counts, r.err)
	}
}
