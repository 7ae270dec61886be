package postgres_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/lib/pq"

	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/functions"
	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/store"
	"github.com/embedauth/connect/store/postgres"
)

// newRecordScope creates a connection and returns a scope of it.
func newRecordScope(t testing.TB, s *postgres.Store) functions.RecordScope {
	t.Helper()
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Microsecond)
	env := &environments.Environment{Account: "default", Name: "dev", WebhookSettings: environments.DefaultWebhookSettings(),
		CreatedAt: now, UpdatedAt: now}
	if err := s.CreateEnvironment(ctx, env); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateIntegration(ctx, &integrations.Integration{EnvironmentID: env.ID, UniqueKey: "gh", Provider: "github",
		CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	c := &connections.Connection{EnvironmentID: env.ID, IntegrationKey: "gh", ConnectionID: "c", Provider: "github",
		AuthMode: integrations.AuthModeOAuth2, CreatedAt: now, UpdatedAt: now}
	if err := s.CreateConnection(ctx, c); err != nil {
		t.Fatal(err)
	}
	return functions.RecordScope{EnvironmentID: env.ID, ConnectionID: c.ID, Model: "Issue", Variant: functions.BaseVariant}
}

// sealedPayloadCases are payloads around the edges of the key id's form
// ("v1:<1 to 32 of [A-Za-z0-9_-]>:"), which the triggers of records parse
// in SQL (migration 013) and store.SealedKeyID in Go.
var sealedPayloadCases = []string{
	"v1:k1:data",
	"v1:a_b-C9::",
	"v1:" + strings.Repeat("x", 32) + ":d",
	"v1:" + strings.Repeat("y", 33) + ":d",
	"v1:" + strings.Repeat("z", 36) + ":d",
	"v1:" + strings.Repeat("w", 37) + ":d",
	"v1:" + strings.Repeat("v", 40) + ":d",
	"v1:" + strings.Repeat("u", 80),
	"v1:" + strings.Repeat("t", 80) + ":",
	"v1::data",
	"v1:k2",
	"v1:k 3:x",
	"v1:kü:x",
	"v1:k.4:x",
	"v2:k5:x",
	"V1:k6:x",
	"xv1:k7:x",
	" v1:k8:x",
	"v1:k9:x:y:z",
	"v1:%:x",
	"v1:_:x",
	"",
	"plain",
}

// TestRecordSealingKeyIDs: the triggers of records register the key id
// that store.SealedKeyID finds in a payload, and nothing else, on insert
// and on update.
func TestRecordSealingKeyIDs(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, _, _ := newStore(t)
	sc := newRecordScope(t, s)
	base, err := s.SealingKeyIDs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var inserts, updates []functions.RecordWrite
	want := map[string]bool{}
	for _, id := range base {
		want[id] = true
	}
	for i, p := range sealedPayloadCases {
		inserts = append(inserts, functions.RecordWrite{ID: fmt.Sprintf("i%02d", i), SealedPayload: p, Hash: "1"})
		updates = append(updates, functions.RecordWrite{ID: fmt.Sprintf("u%02d", i), SealedPayload: "plain", Hash: "1"})
		if id, ok := store.SealedKeyID(p); ok {
			want[id] = true
		}
	}
	if _, err := s.SaveRecords(ctx, sc, append(inserts, updates...), time.Now(), 0); err != nil {
		t.Fatal(err)
	}
	// The payloads of the updates move from no key to the cases'.
	for i := range updates {
		updates[i].SealedPayload, updates[i].Hash = sealedPayloadCases[i], "2"
	}
	if _, err := s.SaveRecords(ctx, sc, updates, time.Now(), 0); err != nil {
		t.Fatal(err)
	}
	got, err := s.SealingKeyIDs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantIDs := slices.Sorted(func(yield func(string) bool) {
		for id := range want {
			if !yield(id) {
				return
			}
		}
	})
	if !slices.Equal(got, wantIDs) {
		t.Errorf("key ids: got %q, want %q", got, wantIDs)
	}
}

// FuzzRecordSealingKeyID: whatever the payload, the triggers of records
// register exactly the key id that store.SealedKeyID finds. Each input
// empties the registry, then saves a record with the payload.
func FuzzRecordSealingKeyID(f *testing.F) {
	for _, p := range sealedPayloadCases {
		f.Add(p)
	}
	s, db, schema := newStoreWith(f, postgres.Options{})
	sc := newRecordScope(f, s)
	calls := 0
	f.Fuzz(func(t *testing.T, payload string) {
		if strings.IndexByte(payload, 0) >= 0 || !utf8.ValidString(payload) {
			t.Skip("not storable text")
		}
		ctx := t.Context()
		if _, err := db.ExecContext(ctx, `DELETE FROM `+pq.QuoteIdentifier(schema)+`.sealing_keys`); err != nil {
			t.Fatal(err)
		}
		calls++ // a new hash: the record is written every time
		recs := []functions.RecordWrite{{ID: "r", SealedPayload: payload, Hash: fmt.Sprint(calls)}}
		if _, err := s.SaveRecords(ctx, sc, recs, time.Now(), 0); err != nil {
			t.Fatal(err)
		}
		got, err := s.SealingKeyIDs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{}
		if id, ok := store.SealedKeyID(payload); ok {
			want = append(want, id)
		}
		if !slices.Equal(got, want) {
			t.Errorf("payload %q registers %q, want %q", payload, got, want)
		}
	})
}

// TestResealRecordsWaitsForLockedRow: ResealValues re-seals the record
// payloads a page at a time, skipping a row that a transaction holds, then
// waits for that row alone, before it reads the next page, and re-seals it
// once the transaction has committed (a deletion keeps the payload).
func TestResealRecordsWaitsForLockedRow(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, db, schema := newStore(t)
	sc := newRecordScope(t, s)
	now := time.Now().UTC().Truncate(time.Microsecond)
	var recs []functions.RecordWrite
	for i := range 450 { // three pages of 200
		id := fmt.Sprintf("r%03d", i)
		recs = append(recs, functions.RecordWrite{ID: id, SealedPayload: "v1:old:" + id, Hash: "1"})
	}
	if _, err := s.SaveRecords(ctx, sc, recs, now, 0); err != nil {
		t.Fatal(err)
	}
	held, release := make(chan struct{}), make(chan struct{})
	txDone := make(chan error, 1)
	go func() {
		txDone <- s.WithTx(context.Background(), func(ctx context.Context) error {
			_, err := s.DeleteRecords(ctx, sc, []string{"r300"}, now)
			close(held)
			if err != nil {
				return err
			}
			<-release
			return nil
		})
	}()
	<-held
	type result struct {
		n   int
		err error
	}
	resealed := make(chan result, 1)
	go func() {
		n, err := s.ResealValues(context.Background(), store.SealedRecordPayload, "old", func(v string) (string, error) {
			return "v1:new:" + strings.TrimPrefix(v, "v1:old:"), nil
		})
		resealed <- result{n, err}
	}()
	// Wait until ResealValues waits for a lock on records.
	for waiting := false; !waiting; {
		err := db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND strpos(query, $1) > 0)`, pq.QuoteIdentifier(schema)+".records").Scan(&waiting)
		if err != nil {
			t.Fatal(err)
		}
		select {
		case r := <-resealed:
			t.Fatalf("ResealValues returned %d, %v while r300 was held", r.n, r.err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	got, err := s.ListRecords(ctx, sc, functions.RecordQuery{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range got {
		// The first two pages are re-sealed but r300, the third is not
		// read yet.
		if old := r.ID == "r300" || r.ID >= "r400"; old != strings.HasPrefix(r.SealedPayload, "v1:old:") {
			t.Errorf("while r300 is held, %s holds %q", r.ID, r.SealedPayload)
		}
	}
	close(release)
	if err := <-txDone; err != nil {
		t.Fatal(err)
	}
	r := <-resealed
	if r.err != nil || r.n != len(recs) {
		t.Fatalf("ResealValues = %d, %v; want %d", r.n, r.err, len(recs))
	}
	counts, err := s.ForgetSealingKeyID(ctx, "old")
	if err != nil || len(counts) != 0 {
		t.Errorf("counts of the old key after re-sealing: %v, %v", counts, err)
	}
	got, err = s.ListRecords(ctx, sc, functions.RecordQuery{IDs: []string{"r300"}, Limit: 1})
	if err != nil || len(got) != 1 || got[0].SealedPayload != "v1:new:r300" || got[0].DeletedAt == nil {
		t.Errorf("r300 after re-sealing: %+v, %v", got, err)
	}
}

// TestResealRecordsSkipsChangedValue: a payload changed between the read
// and the replacement is left alone, and not counted.
func TestResealRecordsSkipsChangedValue(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, _, _ := newStore(t)
	sc := newRecordScope(t, s)
	now := time.Now().UTC().Truncate(time.Microsecond)
	recs := []functions.RecordWrite{{ID: "a", SealedPayload: "v1:old:a", Hash: "1"}, {ID: "b", SealedPayload: "v1:old:b", Hash: "1"}}
	if _, err := s.SaveRecords(ctx, sc, recs, now, 0); err != nil {
		t.Fatal(err)
	}
	n, err := s.ResealValues(ctx, store.SealedRecordPayload, "old", func(v string) (string, error) {
		if v == "v1:old:a" {
			// A sync saves a meanwhile.
			if _, err := s.SaveRecords(ctx, sc, []functions.RecordWrite{{ID: "a", SealedPayload: "v1:primary:a2", Hash: "2"}}, now, 0); err != nil {
				return "", err
			}
		}
		return "v1:new:" + strings.TrimPrefix(v, "v1:old:"), nil
	})
	if err != nil || n != 1 {
		t.Fatalf("ResealValues = %d, %v; want 1", n, err)
	}
	got, err := s.GetRecords(ctx, sc, []string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	payloads := map[string]string{}
	for _, r := range got {
		payloads[r.ID] = r.SealedPayload
	}
	if payloads["a"] != "v1:primary:a2" || payloads["b"] != "v1:new:b" {
		t.Errorf("payloads after re-sealing: %v", payloads)
	}
}

// TestForgetSealingKeyWaitsForRecordWriters: a record payload being written
// under a key id in a transaction that has not committed yet is counted:
// the records' trigger takes the registry's lock as the others do.
func TestForgetSealingKeyWaitsForRecordWriters(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, db, schema := newStore(t)
	sc := newRecordScope(t, s)
	written, commit := make(chan struct{}), make(chan struct{})
	txDone := make(chan error, 1)
	go func() {
		txDone <- s.WithTx(context.Background(), func(ctx context.Context) error {
			_, err := s.SaveRecords(ctx, sc, []functions.RecordWrite{{ID: "a", SealedPayload: "v1:k-rec:x", Hash: "1"}}, time.Now(), 0)
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
		c, err := s.ForgetSealingKeyID(context.Background(), "k-rec")
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
	close(commit)
	if err := <-txDone; err != nil {
		t.Fatal(err)
	}
	r := <-forgot
	if r.err != nil || r.counts[store.SealedRecordPayload] != 1 {
		t.Errorf("ForgetSealingKeyID = %v, %v; want the committed record counted", r.counts, r.err)
	}
}

// TestRecordQueriesUseIndexes: the reads and writes of a scope find its
// rows through the indexes of migration 013, not by reading the table.
func TestRecordQueriesUseIndexes(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, db, schema := newStore(t)
	sc := newRecordScope(t, s)
	var recs []functions.RecordWrite
	for i := range 1000 {
		recs = append(recs, functions.RecordWrite{ID: fmt.Sprintf("r%04d", i), SealedPayload: "v1:k:" + strings.Repeat("p", 200), Hash: "1"})
	}
	for b := range 5 {
		other := sc
		other.Model = fmt.Sprint("M", b)
		if _, err := s.SaveRecords(ctx, other, recs, time.Now(), 0); err != nil {
			t.Fatal(err)
		}
	}
	q := pq.QuoteIdentifier(schema)
	if _, err := db.ExecContext(ctx, `ANALYZE `+q+`.records`); err != nil {
		t.Fatal(err)
	}
	var id int64
	if err := db.QueryRowContext(ctx, `SELECT id FROM `+q+`.record_scopes WHERE model = 'M2'`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	for name, query := range map[string]string{
		"page by seq":   `SELECT * FROM ` + q + `.records WHERE scope_id = $1 AND seq > 10 ORDER BY seq LIMIT 100`,
		"get by ids":    `SELECT * FROM ` + q + `.records WHERE scope_id = $1 AND external_id = ANY('{r0001,r0002}') AND deleted_at IS NULL`,
		"stale":         `SELECT * FROM ` + q + `.records WHERE updated_at < now() - interval '1 day' AND pruned_at IS NULL ORDER BY updated_at LIMIT 100`,
		"reseal cursor": `SELECT * FROM ` + q + `.records WHERE (scope_id, external_id) > ($1, 'r0500') AND starts_with(sealed_payload, 'v1:k:') ORDER BY scope_id, external_id LIMIT 200`,
	} {
		var plan strings.Builder
		args := []any{id}
		if name == "stale" {
			args = nil
		}
		rows, err := db.QueryContext(ctx, `EXPLAIN `+query, args...)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			plan.WriteString(line + "\n")
		}
		rows.Close()
		if strings.Contains(plan.String(), "Seq Scan") || !strings.Contains(plan.String(), "Index") {
			t.Errorf("%s reads the table:\n%s", name, plan.String())
		}
	}
}

// BenchmarkSaveRecords compares SaveRecords of 1,000 records of 1 KiB with
// the plain upsert it is built on (INSERT ... SELECT FROM unnest ... ON
// CONFLICT DO UPDATE ... WHERE the hash differs) into the same table,
// adding new records (insert) and changing every record (update).
func BenchmarkSaveRecords(b *testing.B) {
	s, db, schema := newStoreWith(b, postgres.Options{})
	sc := newRecordScope(b, s)
	ctx := context.Background()
	const n = 1000
	payload := "v1:k1:" + strings.Repeat("A", 1018)
	batch := func(i int, version string) []functions.RecordWrite {
		recs := make([]functions.RecordWrite, n)
		for k := range recs {
			recs[k] = functions.RecordWrite{ID: fmt.Sprintf("b%06d-%04d", i, k), SealedPayload: payload[:len(payload)-len(version)] + version, Hash: version}
		}
		return recs
	}
	raw := `INSERT INTO ` + pq.QuoteIdentifier(schema) + `.records AS r (scope_id, seq, added_seq, first_seen_at, updated_at,
			external_id, hash, sealed_payload)
		SELECT $1, $2 + i.n, $2 + i.n, $3, $3, i.external_id, i.hash, i.sealed_payload
		FROM unnest($4::text[], $5::text[], $6::text[]) WITH ORDINALITY AS i(external_id, sealed_payload, hash, n)
		ON CONFLICT (scope_id, external_id) DO UPDATE SET sealed_payload = EXCLUDED.sealed_payload,
			hash = EXCLUDED.hash, updated_at = EXCLUDED.updated_at, seq = EXCLUDED.seq
		WHERE r.hash <> EXCLUDED.hash`
	var seq int64 = 1 << 40
	rawSave := func(scope int64, recs []functions.RecordWrite) {
		ids, payloads, hashes := make(pq.StringArray, n), make(pq.StringArray, n), make(pq.StringArray, n)
		for k, r := range recs {
			ids[k], payloads[k], hashes[k] = r.ID, r.SealedPayload, r.Hash
		}
		seq += n
		if _, err := db.ExecContext(ctx, raw, scope, seq, time.Now(), ids, payloads, hashes); err != nil {
			b.Fatal(err)
		}
	}
	for _, mode := range []string{"insert", "update"} {
		b.Run("store/"+mode, func(b *testing.B) {
			scope := sc
			scope.Model = "Store" + mode
			for i := 0; b.Loop(); i++ {
				recs := batch(i, "1")
				if mode == "update" {
					recs = batch(0, fmt.Sprint(i))
				}
				if _, err := s.SaveRecords(ctx, scope, recs, time.Now(), 0); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("raw/"+mode, func(b *testing.B) {
			scope := -time.Now().UnixNano() // no scope row: the raw statement does not need one
			for i := 0; b.Loop(); i++ {
				recs := batch(i, "1")
				if mode == "update" {
					recs = batch(0, fmt.Sprint(i))
				}
				rawSave(scope, recs)
			}
		})
	}
}
