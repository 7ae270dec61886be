package postgres_test

import (
	"database/sql"
	"testing"
	"time"

	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/internal/pgtest"
	"github.com/embedauth/connect/oplog"
	"github.com/embedauth/connect/store/postgres"
	"github.com/embedauth/connect/webhooks"
)

// RecordAttempts relaxes the durability of its own transaction only (what
// it records is the outcome of a delivery that is retried when lost): the
// session it ran on commits synchronously afterwards. The suite's Attempts
// group checks what it stores.
func TestRecordAttemptsRelaxesItsTransactionOnly(t *testing.T) {
	t.Parallel()
	_, _, schema := newStore(t)
	// A pool of one session: the statement ran on the session checked.
	db, err := sql.Open("postgres", pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	s := openStore(t, db, &postgres.Options{Schema: schema})
	ctx := t.Context()
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	env := &environments.Environment{Name: "dev", Account: "a", CreatedAt: now, UpdatedAt: now}
	if err := s.CreateEnvironment(ctx, env); err != nil {
		t.Fatal(err)
	}
	d := &webhooks.Delivery{ID: "d1", EnvironmentID: env.ID, EventID: "e1", Type: "auth", URL: "https://x.example",
		Body: []byte(`{}`), Status: webhooks.StatusPending, CreatedAt: now, UpdatedAt: now}
	if err := s.CreateDeliveries(ctx, d); err != nil {
		t.Fatal(err)
	}
	done := *d
	done.Status, done.Attempts, done.UpdatedAt = webhooks.StatusDelivered, 1, now.Add(time.Second)
	if err := s.RecordAttempts(ctx, []webhooks.Attempt{{Delivery: &done, Entry: &oplog.Entry{ID: "log1", EnvironmentID: env.ID,
		Type: "webhook", Operation: "delivery", Message: "delivered", CreatedAt: now}}}); err != nil {
		t.Fatal(err)
	}
	if g, err := s.GetDelivery(ctx, "d1"); err != nil || g.Status != webhooks.StatusDelivered {
		t.Fatalf("GetDelivery = %+v, %v", g, err)
	}
	var sc string
	if err := db.QueryRowContext(ctx, `SHOW synchronous_commit`).Scan(&sc); err != nil || sc != "on" {
		t.Errorf("synchronous_commit of the session after RecordAttempts = %q, %v; want on", sc, err)
	}
}
