package postgres_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/lib/pq"

	"github.com/embedauth/connect/environments"
)

// TestClaimReadsOnlyWhatItClaims checks that a claim from a large backlog
// touches about as many pages as it claims rows, whatever the statistics
// say: on a table that was never analyzed the planner estimates a handful
// of pending rows, and the plain statement then reads every pending row
// through a bitmap scan and sorts them, for each claim (a backlog drained
// in quadratic time). The claim function's plan reads the due index in
// order and stops after the limit.
func TestClaimReadsOnlyWhatItClaims(t *testing.T) {
	t.Parallel()
	s, db, schema := newStore(t)
	ctx := t.Context()
	now := time.Now().UTC()
	env := &environments.Environment{Name: "dev", Account: "a", CreatedAt: now, UpdatedAt: now}
	if err := s.CreateEnvironment(ctx, env); err != nil {
		t.Fatal(err)
	}
	const backlog = 50000
	q := pq.QuoteIdentifier(schema)
	if _, err := db.ExecContext(ctx, `INSERT INTO `+q+`.webhook_deliveries (id, environment_id, event_id, type,
		integration_key, connection_id, url, body, status, attempts, last_status_code, last_error, created_at,
		updated_at, next_attempt_at)
		SELECT 'd' || g, $1, 'e' || g, 'auth', 'github', 'c' || g, 'https://example.com/hook',
			convert_to(repeat('x', 200), 'UTF8'), 'pending', 0, 0, '', $2::timestamptz, $2::timestamptz, $2::timestamptz - g * interval '1 microsecond'
		FROM generate_series(1, $3) g`, env.ID, now, backlog); err != nil {
		t.Fatal(err)
	}
	var heapPages int
	if err := db.QueryRowContext(ctx, `SELECT pg_relation_size($1::regclass) / current_setting('block_size')::int`,
		schema+".webhook_deliveries").Scan(&heapPages); err != nil {
		t.Fatal(err)
	}

	claimed, err := s.ClaimDeliveries(ctx, now, 64, now.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if len(claimed) != 64 {
		t.Fatalf("claimed %d deliveries, want 64", len(claimed))
	}
	// Earliest due first: d50000 is due first, then d19999...
	if claimed[0].ID != "d50000" && claimed[63].ID != "d50000" {
		t.Errorf("the claim did not take the earliest due delivery (d50000): first %s, last %s", claimed[0].ID, claimed[63].ID)
	}

	// Pages touched by the next claim, as counted by EXPLAIN ANALYZE (the
	// function's own statements included).
	var plan []struct {
		Plan struct {
			Rows    int `json:"Actual Rows"`
			Hit     int `json:"Shared Hit Blocks"`
			Read    int `json:"Shared Read Blocks"`
			Dirtied int `json:"Shared Dirtied Blocks"`
		} `json:"Plan"`
	}
	var raw []byte
	if err := db.QueryRowContext(ctx, `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) SELECT * FROM `+q+
		`.claim_webhook_attempts($1, 64, $2)`, now, now.Add(time.Minute)).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &plan); err != nil || len(plan) != 1 {
		t.Fatalf("EXPLAIN output %s: %v", raw, err)
	}
	p := plan[0].Plan
	if p.Rows != 64 {
		t.Fatalf("second claim returned %d rows, want 64", p.Rows)
	}
	// Each claimed row costs about a dozen page accesses (the due index,
	// the row lock, the row's new version, the join back by id), whatever
	// the backlog; a pass over the backlog costs at least every heap page.
	if touched := p.Hit + p.Read; touched >= heapPages/2 {
		t.Errorf("a claim of 64 rows from %d pending touched %d pages; the table has %d: the claim reads the backlog instead of the due index in order",
			backlog, touched, heapPages)
	} else {
		t.Logf("a claim of 64 from %d pending touched %d pages (table: %d pages)", backlog, touched, heapPages)
	}
}
