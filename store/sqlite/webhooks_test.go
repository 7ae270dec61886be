package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/store"
	"github.com/embedauth/connect/store/sqlite"
	"github.com/embedauth/connect/webhooks"
)

// forwards returns n forward deliveries of env, created in order, with the
// IDs prefix-0000, prefix-0001, ...
func forwards(env int64, prefix string, n int) []*webhooks.Delivery {
	t0 := time.Date(2025, 3, 14, 15, 9, 26, 0, time.UTC)
	ds := make([]*webhooks.Delivery, n)
	for i := range ds {
		ds[i] = &webhooks.Delivery{ID: fmt.Sprintf("%s-%04d", prefix, i), EnvironmentID: env, EventID: "evt",
			Type: webhooks.TypeForward, IntegrationKey: "notion", ConnectionID: "u1",
			URL: "https://hooks.example.com/x", Body: []byte(fmt.Sprintf(`{"n":%d}`, i)),
			Status: webhooks.StatusDelivered, CreatedAt: t0.Add(time.Duration(i) * time.Millisecond),
			UpdatedAt: t0}
	}
	return ds
}

// TestCreateDeliveriesManyStatements: a batch too large for one statement
// is stored all or none, in and out of a transaction, and its forwards are
// charged once each.
func TestCreateDeliveriesManyStatements(t *testing.T) {
	for name, open := range map[string]func(*testing.T) *sqlite.Store{"file": openFile, "memory": openMemory} {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			s := open(t)
			env := &environments.Environment{Account: "default", Name: "dev",
				WebhookSettings: environments.DefaultWebhookSettings()}
			if err := s.CreateEnvironment(ctx, env); err != nil {
				t.Fatal(err)
			}
			count := func() int {
				t.Helper()
				list, err := s.ListDeliveries(ctx, webhooks.DeliveryFilter{Limit: 10000, OmitBody: true})
				if err != nil {
					t.Fatal(err)
				}
				return len(list)
			}
			total := func() int64 {
				t.Helper()
				n, err := s.TrimForwards(ctx, env.ID, "notion", 1<<50)
				if err != nil {
					t.Fatal(err)
				}
				return n
			}

			// The last delivery repeats the first one's ID: it is refused
			// in the third statement, and the first two are undone.
			refused := forwards(env.ID, "r", 1201)
			refused[1200].ID = refused[0].ID
			if err := s.CreateDeliveries(ctx, refused...); !errors.Is(err, store.ErrConflict) {
				t.Fatalf("CreateDeliveries(duplicate in the last statement) = %v, want ErrConflict", err)
			}
			if n := count(); n != 0 {
				t.Fatalf("%d deliveries stored by a refused batch", n)
			}
			if n := total(); n != 0 {
				t.Fatalf("a refused batch charged %d bytes", n)
			}

			// In a transaction: the refused batch leaves the
			// transaction's other writes, and the transaction usable.
			kept := forwards(env.ID, "k", 1)
			err := s.WithTx(ctx, func(ctx context.Context) error {
				if err := s.CreateDeliveries(ctx, kept...); err != nil {
					return err
				}
				if err := s.CreateDeliveries(ctx, refused...); !errors.Is(err, store.ErrConflict) {
					t.Errorf("CreateDeliveries(duplicate) in a transaction = %v, want ErrConflict", err)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if n := count(); n != 1 {
				t.Fatalf("%d deliveries after the transaction, want 1", n)
			}

			ds := forwards(env.ID, "d", 1201)
			if err := s.CreateDeliveries(ctx, ds...); err != nil {
				t.Fatal(err)
			}
			if n := count(); n != 1202 {
				t.Fatalf("%d deliveries, want 1202", n)
			}
			want := kept[0].ForwardCharge()
			for _, d := range ds {
				want += d.ForwardCharge()
			}
			if n := total(); n != want {
				t.Fatalf("total charge %d, want %d", n, want)
			}
		})
	}
}
