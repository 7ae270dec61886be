package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/oplog"
	"github.com/embedauth/connect/store"
	"github.com/embedauth/connect/webhooks"
)

func TestRecordAttempt(t *testing.T) {
	t.Parallel()
	s, db, _ := newStore(t)
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	env := &environments.Environment{Name: "dev", Account: "a", CreatedAt: now, UpdatedAt: now}
	if err := s.CreateEnvironment(ctx, env); err != nil {
		t.Fatal(err)
	}
	d := &webhooks.Delivery{ID: "d1", EnvironmentID: env.ID, EventID: "e1", Type: "auth", URL: "https://x.example",
		Body: []byte(`{"a":1}`), Status: webhooks.StatusPending, CreatedAt: now, UpdatedAt: now}
	if err := s.CreateDeliveries(ctx, d); err != nil {
		t.Fatal(err)
	}
	d.Status, d.Attempts, d.LastStatusCode, d.UpdatedAt = webhooks.StatusDelivered, 1, 204, now.Add(time.Second)
	at := d.UpdatedAt
	d.DeliveredAt = &at
	e := &oplog.Entry{ID: "log1", EnvironmentID: env.ID, Type: "webhook", Operation: "delivery", Status: "success",
		Message: "delivered", Meta: map[string]any{"attempt": 1}, CreatedAt: at}
	if err := s.RecordAttempt(ctx, d, e); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetDelivery(ctx, "d1")
	if err != nil || got.Status != webhooks.StatusDelivered || got.Attempts != 1 || got.LastStatusCode != 204 || got.DeliveredAt == nil {
		t.Fatalf("delivery after RecordAttempt: %+v, %v", got, err)
	}
	logs, err := s.ListLogs(ctx, oplog.Filter{EnvironmentID: env.ID})
	if err != nil || len(logs) != 1 || logs[0].ID != "log1" || logs[0].Meta["attempt"] != float64(1) {
		t.Fatalf("logs %+v, %v", logs, err)
	}
	// The statement relaxes durability of its own transaction only.
	var sc string
	if err := db.QueryRowContext(ctx, `SHOW synchronous_commit`).Scan(&sc); err != nil || sc != "on" {
		t.Errorf("synchronous_commit of the pool = %q, %v", sc, err)
	}
	missing := &webhooks.Delivery{ID: "nope", UpdatedAt: at}
	if err := s.RecordAttempt(ctx, missing, &oplog.Entry{ID: "log2", EnvironmentID: env.ID, CreatedAt: at}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("missing delivery: %v", err)
	}
	if logs, _ := s.ListLogs(ctx, oplog.Filter{EnvironmentID: env.ID}); len(logs) != 1 {
		t.Errorf("a log entry was written for a missing delivery: %d entries", len(logs))
	}
}
