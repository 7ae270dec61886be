package postgres_test

import (
	"database/sql"
	"encoding/json"
	"testing"
	"time"

	"github.com/lib/pq"

	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/internal/pgtest"
	"github.com/embedauth/connect/store/postgres"
)

// explainPages runs query under EXPLAIN (ANALYZE, BUFFERS), which executes
// it, and returns the pages it touched, its subplans' included.
func explainPages(t *testing.T, db *sql.DB, query string, args ...any) int {
	t.Helper()
	var plan []struct {
		Plan struct {
			Hit  int `json:"Shared Hit Blocks"`
			Read int `json:"Shared Read Blocks"`
		} `json:"Plan"`
	}
	var raw []byte
	if err := db.QueryRowContext(t.Context(), `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) `+query, args...).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &plan); err != nil || len(plan) != 1 {
		t.Fatalf("EXPLAIN output %s: %v", raw, err)
	}
	return plan[0].Plan.Hit + plan[0].Plan.Read
}

// TestRetentionReadsOnlyWhatItDeletes: the retention statements find the
// few rows they delete through their indexes, however many newer rows the
// tables hold (the table was never analyzed: the plans must not depend on
// statistics).
func TestRetentionReadsOnlyWhatItDeletes(t *testing.T) {
	t.Parallel()
	s, db, schema := newStore(t)
	ctx := t.Context()
	now := time.Now().UTC().Truncate(time.Microsecond)
	env := &environments.Environment{Name: "dev", Account: "a", CreatedAt: now, UpdatedAt: now}
	if err := s.CreateEnvironment(ctx, env); err != nil {
		t.Fatal(err)
	}
	const fresh, old = 50000, 20
	q := pq.QuoteIdentifier(schema)
	// Fresh delivered deliveries, a few old ones, and old pending ones
	// (never deleted); forwards of two integrations.
	if _, err := db.ExecContext(ctx, `INSERT INTO `+q+`.webhook_deliveries (id, environment_id, event_id, type,
		integration_key, connection_id, url, body, status, attempts, last_status_code, last_error, created_at,
		updated_at, next_attempt_at)
		SELECT 'd' || g, $1, 'e' || g, CASE WHEN g % 2 = 0 THEN 'forward' ELSE 'auth' END,
			CASE WHEN g % 4 = 0 THEN 'a' ELSE 'b' END, 'c' || g, 'https://example.com/hook',
			convert_to(repeat('x', 200), 'UTF8'), CASE WHEN g > $3 + $4 THEN 'pending' ELSE 'delivered' END, 1, 200, '',
			$2::timestamptz - CASE WHEN g > $3 THEN interval '40 days' ELSE interval '0' END + g * interval '1 microsecond',
			$2::timestamptz - CASE WHEN g > $3 THEN interval '40 days' ELSE interval '0' END + g * interval '1 microsecond',
			$2::timestamptz
		FROM generate_series(1, $3::int + 2 * $4::int) g`, env.ID, now, fresh, old); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO `+q+`.webhook_forward_usage (environment_id, integration_key, bytes)
		SELECT environment_id, integration_key, sum(octet_length(body)) FROM `+q+`.webhook_deliveries
		WHERE type = 'forward' GROUP BY 1, 2`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO `+q+`.operations_log (id, environment_id, type, operation, status,
		integration_key, connection_id, message, created_at)
		SELECT 'l' || g, $1, 'proxy', 'call', 'success', 'a', 'c', repeat('m', 100),
			$2::timestamptz - CASE WHEN g > $3 THEN interval '20 days' ELSE interval '0' END + g * interval '1 microsecond'
		FROM generate_series(1, $3::int + $4::int) g`, env.ID, now, fresh, old); err != nil {
		t.Fatal(err)
	}
	var deliveryPages, logPages int
	if err := db.QueryRowContext(ctx, `SELECT pg_relation_size($1::regclass) / 8192, pg_relation_size($2::regclass) / 8192`,
		schema+".webhook_deliveries", schema+".operations_log").Scan(&deliveryPages, &logPages); err != nil {
		t.Fatal(err)
	}
	delSQL, logSQL, trimSQL := s.RetentionSQL()
	cutoff := now.Add(-30 * 24 * time.Hour)

	count := func(query string, args ...any) int {
		t.Helper()
		var n int
		if err := db.QueryRowContext(ctx, query, args...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	pages := explainPages(t, db, delSQL, cutoff, 1000)
	t.Logf("DeleteDeliveriesBefore: %d deleted, %d pages touched (table: %d pages)", old, pages, deliveryPages)
	if pages >= deliveryPages/4 {
		t.Errorf("deleting %d of %d deliveries touched %d pages of %d", old, fresh+2*old, pages, deliveryPages)
	}
	if n := count(`SELECT count(*) FROM `+q+`.webhook_deliveries WHERE updated_at < $1`, cutoff); n != old {
		t.Errorf("%d old deliveries left, want the %d pending ones", n, old)
	}
	if n := count(`SELECT count(*) FROM ` + q + `.webhook_deliveries`); n != fresh+old {
		t.Errorf("%d deliveries left, want %d", n, fresh+old)
	}

	pages = explainPages(t, db, logSQL, now.Add(-15*24*time.Hour), 1000)
	t.Logf("DeleteLogsBefore: %d deleted, %d pages touched (table: %d pages)", old, pages, logPages)
	if pages >= logPages/4 {
		t.Errorf("deleting %d of %d log entries touched %d pages of %d", old, fresh+old, pages, logPages)
	}
	if n := count(`SELECT count(*) FROM ` + q + `.operations_log`); n != fresh {
		t.Errorf("%d log entries left, want %d", n, fresh)
	}

	// Trimming integration a by a few rows reads a few rows, not the
	// integration's 12,500 finished forwards, nor b's.
	pages = explainPages(t, db, trimSQL, env.ID, "a", 1000, 100)
	t.Logf("TrimForwards: %d pages touched (table: %d pages)", pages, deliveryPages)
	if pages >= deliveryPages/4 {
		t.Errorf("trimming 1000 bytes touched %d pages of %d", pages, deliveryPages)
	}
	// 200-byte bodies: the 5 oldest go, and the usage says so. (Of the
	// old deliveries, a quarter were a's forwards: the delivered ones are
	// gone, the pending ones stay.)
	want := fresh/4 + old/4 - 5
	if n := count(`SELECT count(*) FROM ` + q + `.webhook_deliveries WHERE integration_key = 'a' AND type = 'forward'`); n != want {
		t.Errorf("%d forwards of a left, want %d", n, want)
	}
	if n := count(`SELECT bytes - (SELECT sum(octet_length(body)) FROM ` + q + `.webhook_deliveries
		WHERE integration_key = 'a' AND type = 'forward') FROM ` + q + `.webhook_forward_usage WHERE integration_key = 'a'`); n != 0 {
		t.Errorf("usage of a is off by %d", n)
	}
}

// TestMigrationCountsStoredForwards: migration 016 fills the usage of the
// forwards stored before it, so that the quota counts them.
func TestMigrationCountsStoredForwards(t *testing.T) {
	t.Parallel()
	db, schema := pgtest.Schema(t)
	ctx := t.Context()
	opts := &postgres.Options{Schema: schema}
	if err := postgres.MigrateTo(ctx, db, opts, 15); err != nil {
		t.Fatal(err)
	}
	old := openStore(t, db, opts)
	now := time.Now().UTC().Truncate(time.Microsecond)
	env := &environments.Environment{Account: "default", Name: "dev", WebhookSettings: environments.DefaultWebhookSettings(),
		CreatedAt: now, UpdatedAt: now}
	if err := old.CreateEnvironment(ctx, env); err != nil {
		t.Fatal(err)
	}
	q := pq.QuoteIdentifier(schema)
	// Before 016, CreateDeliveries knows no usage table: rows as that
	// version stored them.
	if _, err := db.ExecContext(ctx, `INSERT INTO `+q+`.webhook_deliveries (id, environment_id, event_id, type,
		integration_key, connection_id, url, body, status, attempts, last_status_code, last_error, created_at,
		updated_at, next_attempt_at)
		VALUES ('f1', $1, 'e1', 'forward', 'notion', '', 'https://example.com', '\x0102', 'delivered', 1, 200, '', $2, $2, $2),
			('f2', $1, 'e2', 'forward', 'notion', '', 'https://example.com', '\x010203', 'pending', 0, 0, '', $2, $2, $2),
			('f3', $1, 'e3', 'forward', 'zendesk', '', 'https://example.com', '\x01', 'failed', 3, 500, 'x', $2, $2, $2),
			('a1', $1, 'e4', 'auth', 'notion', 'c', 'https://example.com', '\x0102030405', 'delivered', 1, 200, '', $2, $2, $2)`,
		env.ID, now); err != nil {
		t.Fatal(err)
	}
	if err := postgres.MigrateWithoutRiver(ctx, db, opts); err != nil {
		t.Fatal(err)
	}
	s := openStore(t, db, opts)
	for key, want := range map[string]int64{"notion": 5, "zendesk": 1, "other": 0} {
		if got, err := s.TrimForwards(ctx, env.ID, key, 1<<40); err != nil || got != want {
			t.Errorf("forwards of %s after the migration: %d bytes, %v; want %d", key, got, err, want)
		}
	}
}
