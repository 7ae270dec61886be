package postgres_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/lib/pq"

	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/integrations"
)

// TestClaimDueSyncsIgnoresIdleSyncs checks that a claim among 10,000 syncs
// that are not due (due later, paused, or running with a due time in the
// past) reads a handful of pages, with or without statistics: the claim
// reads syncs_due_idx, which holds only the syncs that may become due, in
// due order, and stops at the first one that is not due.
func TestClaimDueSyncsIgnoresIdleSyncs(t *testing.T) {
	t.Parallel()
	s, db, schema := newStore(t)
	ctx := t.Context()
	now := time.Now().UTC().Truncate(time.Microsecond)
	env := &environments.Environment{Name: "dev", Account: "a", CreatedAt: now, UpdatedAt: now}
	if err := s.CreateEnvironment(ctx, env); err != nil {
		t.Fatal(err)
	}
	in := &integrations.Integration{EnvironmentID: env.ID, UniqueKey: "github", Provider: "github", CreatedAt: now, UpdatedAt: now}
	if err := s.CreateIntegration(ctx, in); err != nil {
		t.Fatal(err)
	}
	conn := &connections.Connection{EnvironmentID: env.ID, IntegrationKey: "github", ConnectionID: "u1", CreatedAt: now, UpdatedAt: now}
	if err := s.CreateConnection(ctx, conn); err != nil {
		t.Fatal(err)
	}
	q := pq.QuoteIdentifier(schema)
	// 10,000 idle syncs: 7,000 due later, 2,000 paused, 1,000 running
	// (overdue, but with a run); then 5 due ones.
	if _, err := db.ExecContext(ctx, `INSERT INTO `+q+`.syncs (id, environment_id, connection_id, integration_key,
		connection_ref, name, variant, frequency, interval_ms, paused, next_run_at, last_sync_date, run_id,
		created_at, updated_at, version)
		SELECT gen_random_uuid(), $1, $2, 'github', 'u1', 'sync-' || g, 'base', '', 3600000,
			g % 10 IN (7, 8),
			CASE WHEN g % 10 IN (7, 8) THEN NULL
				WHEN g % 10 = 9 THEN $3::timestamptz - interval '1 hour'
				ELSE $3::timestamptz + g * interval '1 second' END,
			NULL,
			CASE WHEN g % 10 = 9 THEN gen_random_uuid() END,
			$3, $3, 1
		FROM generate_series(1, 10000) g`, env.ID, conn.ID, now); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO `+q+`.syncs (id, environment_id, connection_id, integration_key,
		connection_ref, name, variant, frequency, interval_ms, paused, next_run_at, created_at, updated_at, version)
		SELECT gen_random_uuid(), $1, $2, 'github', 'u1', 'due-' || g, 'base', '', 3600000, false,
			$3::timestamptz - g * interval '1 minute', $3, $3, 1
		FROM generate_series(1, 5) g`, env.ID, conn.ID, now); err != nil {
		t.Fatal(err)
	}
	var heapPages int
	if err := db.QueryRowContext(ctx, `SELECT pg_relation_size($1::regclass) / current_setting('block_size')::int`,
		schema+".syncs").Scan(&heapPages); err != nil {
		t.Fatal(err)
	}

	claimed := 0
	if err := s.WithTx(ctx, func(ctx context.Context) error {
		got, err := s.ClaimDueSyncs(ctx, now, 100)
		claimed = len(got)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if claimed != 5 {
		t.Fatalf("claimed %d syncs, want the 5 due", claimed)
	}

	for _, analyzed := range []bool{false, true} {
		if analyzed {
			if _, err := db.ExecContext(ctx, `ANALYZE `+q+`.syncs`); err != nil {
				t.Fatal(err)
			}
		}
		var plan []struct {
			Plan struct {
				Rows int `json:"Actual Rows"`
				Hit  int `json:"Shared Hit Blocks"`
				Read int `json:"Shared Read Blocks"`
			} `json:"Plan"`
		}
		var raw []byte
		if err := db.QueryRowContext(ctx, `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) `+s.ClaimDueSyncsSQL(), now, 100).Scan(&raw); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, &plan); err != nil || len(plan) != 1 {
			t.Fatalf("EXPLAIN output %s: %v", raw, err)
		}
		p := plan[0].Plan
		if p.Rows != 5 {
			t.Errorf("analyzed %v: the claim returned %d rows, want 5", analyzed, p.Rows)
		}
		// Five rows locked and an index page or two; a scan of the table,
		// or of an index holding the idle syncs, reads dozens.
		if touched := p.Hit + p.Read; touched > 30 {
			t.Errorf("analyzed %v: a claim of 5 among 10,000 idle syncs touched %d pages (the table has %d): plan %s",
				analyzed, touched, heapPages, raw)
		} else {
			t.Logf("analyzed %v: a claim of 5 among 10,000 idle syncs touched %d pages (table: %d pages)", analyzed, touched, heapPages)
		}
	}
}
