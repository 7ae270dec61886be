package postgres_test

import (
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/lib/pq"

	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/internal/pgtest"
	"github.com/embedauth/connect/oplog"
	"github.com/embedauth/connect/store/postgres"
	"github.com/embedauth/connect/webhooks"
)

// createEnv creates an environment "dev" at now.
func createEnv(t *testing.T, s *postgres.Store, now time.Time) *environments.Environment {
	t.Helper()
	env := &environments.Environment{Name: "dev", Account: "a", CreatedAt: now, UpdatedAt: now}
	if err := s.CreateEnvironment(t.Context(), env); err != nil {
		t.Fatal(err)
	}
	return env
}

// totalSize returns pg_total_relation_size of a table: its pages, its
// TOAST table's and its indexes'.
func totalSize(t *testing.T, db *sql.DB, table string) int64 {
	t.Helper()
	var n int64
	if err := db.QueryRowContext(t.Context(), `SELECT pg_total_relation_size($1::regclass)`, table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

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
	env := createEnv(t, s, now)
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
		SELECT environment_id, integration_key, sum(`+postgres.ForwardChargeSQL+`) FROM `+q+`.webhook_deliveries
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
	var five int64 // what the 5 oldest finished forwards of a are charged
	if err := db.QueryRowContext(ctx, `SELECT sum(n) FROM (SELECT `+postgres.ForwardChargeSQL+` AS n FROM `+q+`.webhook_deliveries
		WHERE integration_key = 'a' AND type = 'forward' AND status <> 'pending' ORDER BY created_at, id LIMIT 5) f`).Scan(&five); err != nil {
		t.Fatal(err)
	}
	pages = explainPages(t, db, trimSQL, env.ID, "a", five, 100)
	t.Logf("TrimForwards: %d pages touched (table: %d pages)", pages, deliveryPages)
	if pages >= deliveryPages/4 {
		t.Errorf("trimming 5 forwards touched %d pages of %d", pages, deliveryPages)
	}
	// 200-byte bodies: the 5 oldest go, and the usage says so. (Of the
	// old deliveries, a quarter were a's forwards: the delivered ones are
	// gone, the pending ones stay.)
	want := fresh/4 + old/4 - 5
	if n := count(`SELECT count(*) FROM ` + q + `.webhook_deliveries WHERE integration_key = 'a' AND type = 'forward'`); n != want {
		t.Errorf("%d forwards of a left, want %d", n, want)
	}
	if n := count(`SELECT bytes - (SELECT sum(` + postgres.ForwardChargeSQL + `) FROM ` + q + `.webhook_deliveries
		WHERE integration_key = 'a' AND type = 'forward') FROM ` + q + `.webhook_forward_usage WHERE integration_key = 'a'`); n != 0 {
		t.Errorf("usage of a is off by %d", n)
	}
}

// TestMigrationCountsStoredForwards: migration 016 fills the usage of the
// forwards stored before it, so that the quota counts them; migration 017
// counts them again with the charge of their rows (webhooks.ForwardCharge)
// and marks none of them unverified.
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
	usage := func(when string, want map[string]int64) {
		t.Helper()
		for key, n := range want {
			var got int64
			err := db.QueryRowContext(ctx, `SELECT coalesce((SELECT bytes FROM `+q+`.webhook_forward_usage
				WHERE environment_id = $1 AND integration_key = $2), 0)`, env.ID, key).Scan(&got)
			if err != nil || got != n {
				t.Errorf("usage of %s %s: %d bytes, %v; want %d", key, when, got, err, n)
			}
		}
	}
	// 016 counts bodies.
	if err := postgres.MigrateTo(ctx, db, opts, 16); err != nil {
		t.Fatal(err)
	}
	usage("after 016", map[string]int64{"notion": 5, "zendesk": 1, "other": 0})
	// 017 counts bodies and rows, as the Store does from then on.
	if err := postgres.MigrateWithoutRiver(ctx, db, opts); err != nil {
		t.Fatal(err)
	}
	// Bodies of 2 and 3 bytes, and 1; the URL and the key are the text.
	text := len("https://example.com")
	charges := map[string]int64{"notion": webhooks.ForwardCharge(2, text+6) + webhooks.ForwardCharge(3, text+6),
		"zendesk": webhooks.ForwardCharge(1, text+7), "other": 0}
	usage("after 017", charges)
	s := openStore(t, db, opts)
	for key, want := range charges {
		if got, err := s.TrimForwards(ctx, env.ID, key, 1<<40); err != nil || got != want {
			t.Errorf("forwards of %s after the migration: %d bytes, %v; want %d", key, got, err, want)
		}
	}
	for _, id := range []string{"f1", "f2", "f3", "a1"} {
		d, err := s.GetDelivery(ctx, id)
		if err != nil || d.Unverified {
			t.Errorf("delivery %s after the migration: %+v, %v", id, d, err)
		}
	}
	// The pending forward stored before is claimed, mark and all, by the
	// claim that 017 replaced.
	ds, err := s.ClaimDeliveries(ctx, now.Add(time.Second), 10, now.Add(time.Hour))
	if err != nil || len(ds) != 1 || ds[0].ID != "f2" || ds[0].Attempts != 1 || ds[0].Unverified {
		t.Errorf("claim after the migration: %+v, %v", ds, err)
	}
}

// TestForwardChargeCoversRowCost: what a forward delivery is charged
// against its integration's storage quota (webhooks.ForwardCharge of its
// body) covers what its row takes on disk, measured with
// pg_total_relation_size (table, TOAST and indexes) over many fresh rows:
// with bodies that do not compress, from empty to larger than a page;
// pending, delivered and failed (which different partial indexes hold);
// with short text, and with the integration key and connection id of 255
// characters and the URL of 2,048 that the API allows.
func TestForwardChargeCoversRowCost(t *testing.T) {
	t.Parallel()
	s, db, schema := newStore(t)
	ctx := t.Context()
	now := time.Now().UTC().Truncate(time.Microsecond)
	env := createEnv(t, s, now)
	q := pq.QuoteIdentifier(schema)
	size := func() int64 { return totalSize(t, db, schema+".webhook_deliveries") }
	type text struct{ key, conn, url string }
	short := text{"notion", "conn-0123456789", "https://app.example.com/webhooks/nango"}
	long := text{strings.Repeat("k", 255), strings.Repeat("c", 255), "https://app.example.com/" + strings.Repeat("u", 2048-24)}
	for _, c := range []struct {
		text   text
		status string
		body   int
		rows   int
	}{
		{short, webhooks.StatusPending, 0, 2000},
		{short, webhooks.StatusFailed, 2, 2000}, // in the most indexes
		{short, webhooks.StatusDelivered, 1000, 1000},
		{short, webhooks.StatusFailed, 1800, 1000}, // two rows per page: the worst fill
		{short, webhooks.StatusFailed, 4000, 500},  // out of line, in 3 chunks
		{short, webhooks.StatusDelivered, 64 << 10, 60},
		{long, webhooks.StatusFailed, 2, 1000},
		{long, webhooks.StatusPending, 1500, 1000},
		{long, webhooks.StatusFailed, 6000, 500},
		{long, webhooks.StatusFailed, 10000, 300}, // the most beyond body + body/16 measured
		{long, webhooks.StatusDelivered, 64 << 10, 60},
	} {
		if _, err := db.ExecContext(ctx, `TRUNCATE `+q+`.webhook_deliveries`); err != nil {
			t.Fatal(err)
		}
		before := size()
		// Random ids (as NewID makes); bodies and URLs of MD5 digests,
		// which do not compress.
		if _, err := db.ExecContext(ctx, `INSERT INTO `+q+`.webhook_deliveries (id, environment_id, event_id, type,
			integration_key, connection_id, url, body, status, attempts, last_status_code, last_error, created_at,
			updated_at, next_attempt_at, delivered_at, unverified)
			SELECT gen_random_uuid()::text, $1, gen_random_uuid()::text, 'forward', $3, $4,
				left($5, 24) || substr((SELECT string_agg(md5(g::text || ':u' || k), '')
					FROM generate_series(1, 64) k), 1, length($5) - 24),
				substring((SELECT string_agg(decode(md5(g::text || ':' || k), 'hex'), ''::bytea)
					FROM generate_series(1, $7 / 16 + 1) k) FOR $7),
				$6, 1, 200, CASE WHEN $6 = 'failed' THEN 'status 503' ELSE '' END,
				$2::timestamptz + g * interval '1 microsecond', $2::timestamptz + g * interval '1 microsecond',
				$2::timestamptz, CASE WHEN $6 = 'delivered' THEN $2::timestamptz END, true
			FROM generate_series(1, $8::int) g`, env.ID, now, c.text.key, c.text.conn, c.text.url, c.status, c.body, c.rows); err != nil {
			t.Fatal(err)
		}
		per := float64(size()-before) / float64(c.rows)
		charge := webhooks.ForwardCharge(c.body, len(c.text.key)+len(c.text.conn)+len(c.text.url))
		t.Logf("%s, key %d, connection %d, URL %d characters, body %d bytes: %.0f bytes per row on disk, charged %d",
			c.status, len(c.text.key), len(c.text.conn), len(c.text.url), c.body, per, charge)
		if per > float64(charge) {
			t.Errorf("a %s forward of %d bytes takes %.0f bytes on disk, more than its charge of %d", c.status, c.body, per, charge)
		}
	}
}

// TestSampledLogEntrySize: the largest operations log entry that a
// webhook no signature verified can cause, a delivery attempt's (its URL
// of the 2,048 characters allowed, the 256 bytes of response kept, an
// integration key and connection id of 255 characters, random so that
// nothing compresses), takes less than the 5 KiB on disk (table, TOAST and
// indexes) that the documented bound of the sampled log counts per entry.
func TestSampledLogEntrySize(t *testing.T) {
	t.Parallel()
	s, db, schema := newStore(t)
	ctx := t.Context()
	now := time.Now().UTC().Truncate(time.Microsecond)
	env := createEnv(t, s, now)
	random := func(n int) string {
		b := make([]byte, n)
		rand.Read(b)
		return base64.RawURLEncoding.EncodeToString(b)[:n]
	}
	size := func() int64 { return totalSize(t, db, schema+".operations_log") }
	const n = 1000
	before := size()
	w := &oplog.Writer{Store: s}
	es := make([]*oplog.Entry, n)
	for i := range es {
		es[i] = &oplog.Entry{EnvironmentID: env.ID, Type: "webhook", Operation: "delivery", Status: oplog.StatusFailure,
			IntegrationKey: random(255), ConnectionID: random(255),
			Message: "forward webhook attempt 17 of 17 failed: timeout after 20s; giving up",
			Meta: map[string]any{"delivery_id": webhooks.NewID(), "event_id": webhooks.NewID(),
				"url": "https://app.example.com/" + random(2048-24), "attempt": 17, "status": 0, "duration_ms": 20000,
				"response": random(256), "error": "timeout after 20s", "unverified": true, "suppressed": 1 << 40}}
	}
	if err := w.RecordAll(ctx, es); err != nil {
		t.Fatal(err)
	}
	per := float64(size()-before) / n
	t.Logf("the largest sampled log entry takes %.0f bytes on disk", per)
	if per >= 5<<10 {
		t.Errorf("the largest sampled log entry takes %.0f bytes on disk, not under 5 KiB", per)
	}
}
