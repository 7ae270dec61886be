package connect_test

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lib/pq"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/functions"
	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/internal/pgtest"
	"github.com/embedauth/connect/internal/secret"
	"github.com/embedauth/connect/store"
	"github.com/embedauth/connect/store/postgres"
	"github.com/embedauth/connect/store/sqlite"
)

// The benchmarks of this file measure the records of syncs through the
// whole path against raw SQL doing the same rows' work, the variants
// interleaved in rounds of one run; BenchmarkSyncSave on each store
// (sub-benchmarks sqlite and postgres), BenchmarkListRecords on Postgres:
//
//	TEST_DATABASE_URL=... go test -run '^$' -bench 'BenchmarkSyncSave|BenchmarkListRecords' -benchtime 5x .

// recordsBenchBatches is how many batches of functions.MaxRecordsPerBatch
// records a round of BenchmarkSyncSave saves, and how many pages
// BenchmarkListRecords reads.
const recordsBenchBatches = 10

// benchTicket is the record of the benchmarks' sync: a typical issue of a
// ticketing API, about 1 KiB of JSON (benchTicketSize) once its body is
// filled.
type benchTicket struct {
	ID        string    `json:"id"`
	Number    int       `json:"number"`
	Title     string    `json:"title"`
	State     string    `json:"state"`
	Author    string    `json:"author"`
	Assignees []string  `json:"assignees"`
	Labels    []string  `json:"labels"`
	Comments  int       `json:"comments"`
	Locked    bool      `json:"locked"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	URL       string    `json:"url"`
	Body      string    `json:"body"`
}

// benchTicketSize is the size of a benchTicket's JSON.
const benchTicketSize = 1024

// newBenchTicket returns record i of a round, its body filled up to
// benchTicketSize bytes of JSON.
func newBenchTicket(round, i int) benchTicket {
	at := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(round*100000+i) * time.Second)
	t := benchTicket{ID: fmt.Sprintf("r%03d-%05d", round, i), Number: round*100000 + i,
		Title: fmt.Sprintf("Crash when exporting report %d of round %d", i, round), State: []string{"open", "closed"}[i%2],
		Author: fmt.Sprintf("user-%d", i%97), Assignees: []string{fmt.Sprintf("user-%d", i%13), "triage-bot"},
		Labels: []string{"bug", []string{"p1", "p2", "p3"}[i%3], "export"}, Comments: i % 17, CreatedAt: at, UpdatedAt: at.Add(time.Hour),
		URL: fmt.Sprintf("https://tickets.example.com/acme/app/issues/%d", round*100000+i)}
	b, _ := json.Marshal(t)
	const lorem = "Steps to reproduce: open the report, choose export, pick CSV and wait. Expected a file; got an error dialog. "
	t.Body = strings.Repeat(lorem, benchTicketSize/len(lorem)+1)[:max(benchTicketSize-len(b), 0)]
	return t
}

// ingestJob is what the benchmarks' sync saves in one run; it answers on
// done the time its Save calls took.
type ingestJob struct {
	batches [][]benchTicket
	done    chan ingestResult
}

type ingestResult struct {
	spent time.Duration
	err   error
}

// recordsBench is the fixture of BenchmarkSyncSave and
// BenchmarkListRecords: a started Service on Postgres or SQLite whose sync
// "ingest" of integration "gh" saves what it receives on jobs, for one
// connection.
type recordsBench struct {
	db      *sql.DB // Postgres: a pool of its own, whose sessions carry app
	app     string  // the pool's application_name, for sessionCPU
	schema  string
	lite    *sqlite.Store // SQLite: the Store (a file with the production defaults)
	svc     *connect.Service
	envID   int64
	key     string // API key
	keyring *secret.Keyring
	jobs    chan *ingestJob
	target  functions.SyncTarget
}

// benchConnRef is the connection of the records benchmarks.
const benchConnRef = "records-conn"

func newRecordsBench(b *testing.B, store string) *recordsBench {
	b.Helper()
	ctx := context.Background()
	f := &recordsBench{jobs: make(chan *ingestJob)}
	var cfg connect.Config
	switch store {
	case "postgres":
		_, f.schema = pgtest.Schema(b)
		f.app = "connect_records_bench_" + f.schema
		f.db = openAppDB(b, f.app)
		cfg.Store, cfg.Scheduler = openBenchPostgres(b, f.db, f.schema, postgres.SchedulerConfig{})
	case "sqlite":
		st, sched := openBenchSQLite(b, sqlite.SchedulerConfig{})
		cfg.Store, cfg.Scheduler, f.lite = st, sched, st
	}
	cfg.EncryptionKeys, cfg.RateLimitRequests = []connect.EncryptionKey{testKey}, -1
	svc, err := connect.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	f.svc = svc
	if err := svc.Functions().Register(functions.Sync{Integration: "gh", Name: "ingest", Frequency: "1d",
		Models: []functions.Model{functions.ModelOf[benchTicket]("Ticket")}, Run: f.run}); err != nil {
		b.Fatal(err)
	}
	env, err := svc.Environments().Create(ctx, environments.CreateInput{Name: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	f.envID = env.ID
	if f.key, _, err = svc.Environments().CreateAPIKey(ctx, env.ID, environments.NewAPIKey{Name: "bench", Scopes: []string{environments.ScopeAll}}); err != nil {
		b.Fatal(err)
	}
	if _, err := svc.Integrations().Create(ctx, env.ID, integrations.CreateInput{Provider: "github", UniqueKey: "gh",
		Credentials: &integrations.Credentials{Type: "OAUTH2", ClientID: "cid", ClientSecret: "csecret", Scopes: "repo"}}); err != nil {
		b.Fatal(err)
	}
	exp := connections.DateTime{Time: time.Now().Add(365 * 24 * time.Hour).UTC().Truncate(time.Second)}
	if _, _, err := svc.Connections().Import(ctx, env.ID, connections.ImportInput{ProviderConfigKey: "gh",
		ConnectionID: benchConnRef, AccessToken: "gho_records", ExpiresAt: &exp}); err != nil {
		b.Fatal(err)
	}
	if f.keyring, err = secret.NewKeyring(secret.Key{ID: testKey.ID, Secret: testKey.Key}); err != nil {
		b.Fatal(err)
	}
	if err := svc.Start(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = svc.Stop(ctx)
	})
	f.target = functions.SyncTarget{EnvironmentID: env.ID, Integration: "gh", ConnectionID: benchConnRef,
		Syncs: []functions.SyncRef{{Name: "ingest"}}}
	return f
}

// openAppDB opens a pool on TEST_DATABASE_URL whose sessions carry the
// application_name app, so that their CPU time can be read (sessionCPU).
// Its sessions stay open, so that none of their CPU time is lost.
func openAppDB(b *testing.B, app string) *sql.DB {
	b.Helper()
	u, err := url.Parse(pgtest.URL(b))
	if err != nil || u.Scheme == "" {
		b.Fatalf("the benchmark needs TEST_DATABASE_URL as a postgres:// URL: %v", err)
	}
	q := u.Query()
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	db, err := sql.Open("postgres", u.String())
	if err != nil {
		b.Fatal(err)
	}
	db.SetMaxOpenConns(pgtest.MaxOpenConns)
	db.SetMaxIdleConns(pgtest.MaxOpenConns)
	b.Cleanup(func() { db.Close() })
	return db
}

// sessionCPU returns the CPU time used by the Postgres sessions whose
// application_name is app, from /proc: ok is false when Postgres runs
// elsewhere.
func sessionCPU(db *sql.DB, app string) (d time.Duration, ok bool) {
	rows, err := db.Query(`SELECT pid FROM pg_stat_activity WHERE application_name = $1`, app)
	if err != nil {
		return 0, false
	}
	defer rows.Close()
	for rows.Next() {
		var pid int
		if rows.Scan(&pid) != nil {
			return 0, false
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return 0, false
		}
		// utime and stime are the 12th and 13th fields after the command
		// name, in clock ticks of 1/100 s.
		fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(fields) < 13 {
			return 0, false
		}
		for _, s := range fields[11:13] {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return 0, false
			}
			d += time.Duration(n) * 10 * time.Millisecond
		}
	}
	return d, rows.Err() == nil
}

// run is the Run of the sync: it saves the batches of the next job and
// answers the time the Save calls took.
func (f *recordsBench) run(ctx context.Context, s *functions.SyncContext) error {
	var job *ingestJob
	select {
	case job = <-f.jobs:
	case <-ctx.Done():
		return ctx.Err()
	}
	t0 := time.Now()
	for _, batch := range job.batches {
		if err := s.Save(ctx, "Ticket", batch); err != nil {
			job.done <- ingestResult{err: err}
			return err
		}
	}
	job.done <- ingestResult{spent: time.Since(t0)}
	return nil
}

// ingest triggers a run of the sync that saves batches and returns the
// time its Save calls took.
func (f *recordsBench) ingest(b *testing.B, batches [][]benchTicket) time.Duration {
	ctx := context.Background()
	for {
		err := f.svc.Functions().TriggerSync(ctx, f.target, functions.TriggerOptions{})
		if errors.Is(err, store.ErrConflict) { // the previous run is finishing
			time.Sleep(2 * time.Millisecond)
			continue
		}
		if err != nil {
			b.Fatal(err)
		}
		break
	}
	job := &ingestJob{batches: batches, done: make(chan ingestResult, 1)}
	select {
	case f.jobs <- job:
	case <-time.After(time.Minute):
		b.Fatal("the sync run did not start within a minute")
	}
	res := <-job.done
	if res.err != nil {
		b.Fatal(res.err)
	}
	return res.spent
}

// tickets returns the records of a round, in batches.
func tickets(round int) [][]benchTicket {
	out := make([][]benchTicket, recordsBenchBatches)
	for k := range out {
		out[k] = make([]benchTicket, functions.MaxRecordsPerBatch)
		for i := range out[k] {
			out[k][i] = newBenchTicket(round, k*functions.MaxRecordsPerBatch+i)
		}
	}
	return out
}

// sealedBatch is a batch as the baseline writes it: ids, sealed payloads
// and hashes.
type sealedBatch struct {
	ids, payloads, hashes benchTextArray
}

// benchTextArray is a text[] parameter, encoded as store/postgres encodes
// its arrays (pq.StringArray takes three times as long on 1 KiB
// elements, which would slow the baseline down).
type benchTextArray []string

// Value encodes the array literal.
func (a benchTextArray) Value() (driver.Value, error) {
	n := 2
	for _, s := range a {
		n += len(s) + 3
	}
	b := make([]byte, 0, n)
	b = append(b, '{')
	for i, v := range a {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		for {
			k := strings.IndexAny(v, `"\`)
			if k < 0 {
				b = append(b, v...)
				break
			}
			b = append(append(b, v[:k]...), '\\', v[k])
			v = v[k+1:]
		}
		b = append(b, '"')
	}
	return string(append(b, '}')), nil
}

// seal encodes, seals and hashes batches as the Service does, for the
// baseline (untimed).
func (f *recordsBench) seal(b *testing.B, batches [][]benchTicket) []sealedBatch {
	out := make([]sealedBatch, len(batches))
	for k, batch := range batches {
		sb := &out[k]
		for _, t := range batch {
			p, err := json.Marshal(t)
			if err != nil {
				b.Fatal(err)
			}
			sealed, err := f.keyring.Seal(b.Context(), functions.PurposeRecordPayload, p)
			if err != nil {
				b.Fatal(err)
			}
			sb.ids = append(sb.ids, t.ID)
			sb.payloads = append(sb.payloads, sealed)
			sb.hashes = append(sb.hashes, functions.HashPayload(p))
		}
	}
	return out
}

// BenchmarkSyncSave measures the ingest of records by a sync on each store
// (sub-benchmarks sqlite, a file in b.TempDir() with the production
// defaults, synchronous FULL, and postgres, one after the other; when both
// ran it prints SQLite's rates divided by Postgres's):
// SyncContext.Save of 1 KiB records (structs) in batches of 1,000, inside
// a sync run triggered through the Service, timed around the Save calls
// (encoding, ids, hashing, AES-GCM sealing, the Store's upsert), against
// a baseline that upserts the same rows, already encoded, sealed and
// hashed (untimed), with one raw INSERT ... ON CONFLICT DO UPDATE ...
// WHERE the hash differs per batch into the same records table under a
// scope of its own, over the Store's own database handle: on Postgres an
// INSERT ... SELECT FROM unnest over the same pool, on SQLite one
// transaction of multi-row INSERT ... VALUES of 250 rows on the writer
// connection, as store/sqlite writes its chunks.
//
// Each b.N is one round: recordsBenchBatches batches of new records
// (first: every record added) through each variant, then the same records
// again (rerun: nothing changes), the variants interleaved and their order
// alternating from round to round. It reports the records/s of each, the
// ratios sync/baseline (goal: at least 0.8 for both) with their spread
// over the rounds, and the CPU per record in Go (on SQLite the database's
// work too) and in Postgres.
//
//	TEST_DATABASE_URL=... go test -run '^$' -bench BenchmarkSyncSave -benchtime 5x .
func BenchmarkSyncSave(b *testing.B) {
	benchEachStore(b, "sync records ingest", benchmarkSyncSave, "save-first-rec/s", "save-rerun-rec/s", "base-first-rec/s", "base-rerun-rec/s")
}

// benchmarkSyncSave is BenchmarkSyncSave on one store; it records its
// rates in figs.
func benchmarkSyncSave(b *testing.B, store string, figs storeFigures) {
	f := newRecordsBench(b, store)
	ctx := context.Background()
	baseScope := -time.Now().UnixNano() // no scope row: the raw statement needs none
	var seq int64
	var upsert func(sb sealedBatch)
	if f.lite == nil {
		raw := `INSERT INTO ` + pq.QuoteIdentifier(f.schema) + `.records AS r (scope_id, seq, added_seq, touched,
			first_seen_at, updated_at, external_id, hash, sealed_payload)
		SELECT $1, $2 + i.n, $2 + i.n, 0, $3, $3, i.external_id, i.hash, i.sealed_payload
		FROM unnest($4::text[], $5::text[], $6::text[]) WITH ORDINALITY AS i(external_id, sealed_payload, hash, n)
		ON CONFLICT (scope_id, external_id) DO UPDATE SET sealed_payload = EXCLUDED.sealed_payload,
			hash = EXCLUDED.hash, updated_at = EXCLUDED.updated_at, seq = EXCLUDED.seq
		WHERE r.hash <> EXCLUDED.hash`
		upsert = func(sb sealedBatch) {
			if _, err := f.db.ExecContext(ctx, raw, baseScope, seq, time.Now().UTC(), sb.ids, sb.payloads, sb.hashes); err != nil {
				b.Fatal(err)
			}
		}
	} else {
		upsert = func(sb sealedBatch) { f.sqliteUpsert(b, baseScope, seq, sb) }
	}
	baseline := func(batches []sealedBatch) time.Duration {
		t0 := time.Now()
		for _, sb := range batches {
			upsert(sb)
			seq += int64(len(sb.ids))
		}
		return time.Since(t0)
	}
	type variant struct {
		name     string
		spent    time.Duration
		cpu, pg  time.Duration
		count    int
		perRound []float64
	}
	apiFirst, baseFirst := &variant{name: "Save, first run (all added)"}, &variant{name: "baseline, first run"}
	apiRerun, baseRerun := &variant{name: "Save, unchanged rerun"}, &variant{name: "baseline, unchanged rerun"}
	pgOK := f.db != nil
	measure := func(v *variant, op func() time.Duration) {
		p0, ok0 := f.postgresCPU()
		c0 := processCPU()
		d := op()
		v.cpu += processCPU() - c0
		p1, ok1 := f.postgresCPU()
		v.pg += p1 - p0
		pgOK = pgOK && ok0 && ok1
		n := recordsBenchBatches * functions.MaxRecordsPerBatch
		v.spent += d
		v.count += n
		v.perRound = append(v.perRound, float64(n)/d.Seconds())
	}
	// Warm-up: a round of each, not counted (the pool's sessions, the
	// statements' plans, the sync's deployment).
	warm := tickets(999)
	f.ingest(b, warm)
	f.ingest(b, warm)
	sealedWarm := f.seal(b, warm)
	baseline(sealedWarm)
	baseline(sealedWarm)

	b.ResetTimer()
	for round := range b.N {
		b.StopTimer()
		batches := tickets(round)
		sealed := f.seal(b, batches)
		b.StartTimer()
		api := func() time.Duration { return f.ingest(b, batches) }
		base := func() time.Duration { return baseline(sealed) }
		if round%2 == 0 {
			measure(apiFirst, api)
			measure(baseFirst, base)
			measure(apiRerun, api)
			measure(baseRerun, base)
		} else {
			measure(baseFirst, base)
			measure(apiFirst, api)
			measure(baseRerun, base)
			measure(apiRerun, api)
		}
	}
	b.StopTimer()
	rate := func(v *variant) float64 { return float64(v.count) / v.spent.Seconds() }
	per := func(d time.Duration, v *variant) float64 { return float64(d.Nanoseconds()) / 1e3 / float64(v.count) }
	first, rerun := rate(apiFirst)/rate(baseFirst), rate(apiRerun)/rate(baseRerun)
	b.ReportMetric(rate(apiFirst), "save-first-rec/s")
	b.ReportMetric(rate(baseFirst), "base-first-rec/s")
	b.ReportMetric(first, "ratio-first")
	b.ReportMetric(rate(apiRerun), "save-rerun-rec/s")
	b.ReportMetric(rate(baseRerun), "base-rerun-rec/s")
	b.ReportMetric(rerun, "ratio-rerun")
	figs.set(store, "save-first-rec/s", rate(apiFirst))
	figs.set(store, "save-rerun-rec/s", rate(apiRerun))
	figs.set(store, "base-first-rec/s", rate(baseFirst))
	figs.set(store, "base-rerun-rec/s", rate(baseRerun))
	if b.N < 2 {
		return
	}
	where := "Postgres"
	if f.lite != nil {
		where = "SQLite (its work in the Go process)"
	}
	fmt.Printf("sync records ingest on %s, %d rounds of %d records of %d bytes in batches of %d:\n",
		where, b.N, recordsBenchBatches*functions.MaxRecordsPerBatch, benchTicketSize, functions.MaxRecordsPerBatch)
	for _, v := range []*variant{apiFirst, baseFirst, apiRerun, baseRerun} {
		cpu := fmt.Sprintf("Go %5.1f", per(v.cpu, v))
		if pgOK {
			cpu += fmt.Sprintf(" + Postgres %5.1f", per(v.pg, v))
		}
		fmt.Printf("  %-30s %7.0f records/s   CPU per record: %s µs\n", v.name, rate(v), cpu)
	}
	fmt.Printf("  ratio first run %.2f (rounds %s), unchanged rerun %.2f (rounds %s); goal >= 0.8\n",
		first, roundSpread(apiFirst.perRound, baseFirst.perRound), rerun, roundSpread(apiRerun.perRound, baseRerun.perRound))
}

// postgresCPU returns the CPU time of the Postgres sessions of f.db (see
// sessionCPU); ok is false on SQLite.
func (f *recordsBench) postgresCPU() (time.Duration, bool) {
	if f.db == nil {
		return 0, false
	}
	return sessionCPU(f.db, f.app)
}

// sqliteChunk is how many records one statement of the SQLite baseline
// upserts: SaveRecords's chunk (store/sqlite measured 250 rows a statement
// faster than 1,000).
const sqliteChunk = 250

// sqliteUpsert is the SQLite baseline's upsert of a batch: one transaction
// on the writer connection, one multi-row INSERT ... VALUES per
// sqliteChunk records, with the scope, Seqs and time written in the text
// and each record's id, hash and sealed payload as anonymous parameters
// (SQLite looks a numbered parameter up in a list, which makes a statement
// of many rows several times slower).
func (f *recordsBench) sqliteUpsert(b *testing.B, scope, seq int64, sb sealedBatch) {
	ctx := context.Background()
	tx, err := f.lite.DB().BeginTx(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	now := strconv.FormatInt(time.Now().UnixMicro(), 10)
	var q strings.Builder
	args := make([]any, 0, 3*sqliteChunk)
	for lo := 0; lo < len(sb.ids); lo += sqliteChunk {
		hi := min(lo+sqliteChunk, len(sb.ids))
		q.Reset()
		q.WriteString(`INSERT INTO records AS r (scope_id, seq, added_seq, touched, first_seen_at, updated_at,
			external_id, hash, sealed_payload) VALUES `)
		args = args[:0]
		for k := lo; k < hi; k++ {
			if k > lo {
				q.WriteByte(',')
			}
			n := strconv.FormatInt(seq+int64(k)+1, 10)
			q.WriteString("(" + strconv.FormatInt(scope, 10) + "," + n + "," + n + ",0," + now + "," + now + ",?,?,?)")
			args = append(args, sb.ids[k], sb.hashes[k], sb.payloads[k])
		}
		q.WriteString(` ON CONFLICT (scope_id, external_id) DO UPDATE SET sealed_payload = excluded.sealed_payload,
			hash = excluded.hash, updated_at = excluded.updated_at, seq = excluded.seq
			WHERE r.hash <> excluded.hash`)
		if _, err := tx.ExecContext(ctx, q.String(), args...); err != nil {
			_ = tx.Rollback()
			b.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
}

// roundSpread returns the range of the ratios a[i]/b[i] over the rounds.
func roundSpread(a, b []float64) string {
	rs := make([]float64, len(a))
	for i := range rs {
		rs[i] = a[i] / b[i]
	}
	slices.Sort(rs)
	return fmt.Sprintf("%.2f-%.2f", rs[0], rs[len(rs)-1])
}

// BenchmarkListRecords measures GET /records of a sync's 10,000 records of
// 1 KiB in pages of 1,000 (limit=1000, following next_cursor) over
// loopback HTTP to httptest.NewServer(svc.Handler()) on Postgres, against
// a baseline that reads the same rows with a raw keyset SELECT of the
// same columns (scope_id = the scope's id AND seq > the last one, ORDER BY
// seq LIMIT 1000, until a page is short) over the same pool, decrypting
// every payload, in process. The client reads each answer whole into a
// buffer it reuses, counts its records and takes its next_cursor from its
// end, without decoding it. A third variant, baseline_http, serves the
// baseline's pages behind a bare net/http handler that writes the records
// as the API does, metadata included (the floor of any HTTP API of this
// data), to the same client.
//
// Each b.N is one round: the 10,000 records read once through each
// variant, interleaved. It reports records/s and the ratio API/baseline
// (goal: at least 0.7), with its spread over the rounds.
//
//	TEST_DATABASE_URL=... go test -run '^$' -bench BenchmarkListRecords -benchtime 10x .
func BenchmarkListRecords(b *testing.B) {
	f := newRecordsBench(b, "postgres")
	ctx := context.Background()
	f.ingest(b, tickets(0))
	var scopeID int64
	if err := f.db.QueryRowContext(ctx, `SELECT id FROM `+pq.QuoteIdentifier(f.schema)+`.record_scopes
		WHERE environment_id = $1 AND model = 'Ticket'`, f.envID).Scan(&scopeID); err != nil {
		b.Fatal(err)
	}
	const total = recordsBenchBatches * functions.MaxRecordsPerBatch
	const page = functions.MaxRecordsPerBatch
	query := `SELECT external_id, sealed_payload, hash, first_seen_at, updated_at, deleted_at, pruned_at, seq
		FROM ` + pq.QuoteIdentifier(f.schema) + `.records WHERE scope_id = $1 AND seq > $2 ORDER BY seq LIMIT ` + strconv.Itoa(page)
	// readPage is the baseline's page: the rows after seq, decrypted; it
	// calls emit for each.
	readPage := func(after int64, emit func(r *functions.Record, plain []byte)) (int64, int) {
		rows, err := f.db.QueryContext(ctx, query, scopeID, after)
		if err != nil {
			b.Fatal(err)
		}
		defer rows.Close()
		n := 0
		for rows.Next() {
			var r functions.Record
			var deleted, pruned sql.NullTime
			if err := rows.Scan(&r.ID, &r.SealedPayload, &r.Hash, &r.FirstSeenAt, &r.UpdatedAt, &deleted, &pruned, &r.Seq); err != nil {
				b.Fatal(err)
			}
			plain, err := f.keyring.Open(functions.PurposeRecordPayload, r.SealedPayload)
			if err != nil {
				b.Fatal(err)
			}
			if emit != nil {
				emit(&r, plain)
			}
			after = r.Seq
			n++
		}
		if err := rows.Err(); err != nil {
			b.Fatal(err)
		}
		return after, n
	}
	baseline := func() int {
		var after int64
		got := 0
		for {
			var n int
			after, n = readPage(after, nil)
			got += n
			if n < page {
				return got
			}
		}
	}
	// The floor's handler: a baseline page written as the API writes it,
	// into a buffer it reuses (one request at a time).
	var floorBuf bytes.Buffer
	floor := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var after int64
		if c := r.URL.Query().Get("cursor"); c != "" {
			after, _ = strconv.ParseInt(c, 10, 64)
		}
		buf := &floorBuf
		buf.Reset()
		buf.WriteString(`{"records":[`)
		n := 0
		last, _ := readPage(after, func(rec *functions.Record, plain []byte) {
			if n > 0 {
				buf.WriteByte(',')
			}
			n++
			buf.Write(plain[:len(plain)-1])
			b := append(buf.AvailableBuffer(), `,"_nango_metadata":{"first_seen_at":"`...)
			b = rec.FirstSeenAt.AppendFormat(b, time.RFC3339Nano)
			b = append(b, `","last_modified_at":"`...)
			b = rec.UpdatedAt.AppendFormat(b, time.RFC3339Nano)
			b = append(b, `","last_action":"ADDED","deleted_at":null,"pruned_at":null,"cursor":"`...)
			b = strconv.AppendInt(b, rec.Seq, 10)
			buf.Write(append(b, `"}}`...))
		})
		buf.WriteString(`],"next_cursor":`)
		if n == page {
			buf.WriteString(`"` + strconv.FormatInt(last, 10) + `"`)
		} else {
			buf.WriteString("null")
		}
		buf.WriteString("}")
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
		w.Write(buf.Bytes())
	}))
	b.Cleanup(floor.Close)
	api := httptest.NewServer(f.svc.Handler())
	b.Cleanup(api.Close)
	tr := &http.Transport{MaxIdleConns: 4, MaxIdleConnsPerHost: 2}
	b.Cleanup(tr.CloseIdleConnections)
	client := &http.Client{Transport: tr}
	metaKey := []byte(`"_nango_metadata"`)
	cursorKey := []byte(`"next_cursor":`)
	// list reads every record from base (the API or the floor), page by
	// page, into a buffer it reuses, and returns how many it got: it
	// counts the records and takes next_cursor from the end of each
	// answer, without decoding it.
	var body bytes.Buffer
	list := func(base string, withHeaders bool) int {
		got, cursor := 0, ""
		for range total/page + 2 {
			u := base + "/records?model=Ticket&limit=" + strconv.Itoa(page)
			if cursor != "" {
				u += "&cursor=" + url.QueryEscape(cursor)
			}
			r, _ := http.NewRequest(http.MethodGet, u, nil)
			if withHeaders {
				r.Header.Set("Authorization", "Bearer "+f.key)
				r.Header.Set("Connection-Id", benchConnRef)
				r.Header.Set("Provider-Config-Key", "gh")
			}
			resp, err := client.Do(r)
			if err != nil {
				b.Fatal(err)
			}
			body.Reset()
			_, err = body.ReadFrom(resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusOK {
				b.Fatalf("GET %s = %d %s (%v)", u, resp.StatusCode, body.Bytes()[:min(body.Len(), 300)], err)
			}
			got += bytes.Count(body.Bytes(), metaKey)
			i := bytes.LastIndex(body.Bytes(), cursorKey)
			if i < 0 {
				b.Fatalf("GET %s: no next_cursor", u)
			}
			next := bytes.TrimSuffix(body.Bytes()[i+len(cursorKey):], []byte("}"))
			if string(next) == "null" {
				return got
			}
			if err := json.Unmarshal(next, &cursor); err != nil {
				b.Fatal(err)
			}
		}
		b.Fatal("GET /records did not end")
		return 0
	}
	ops := []struct {
		name string
		op   func() int
	}{
		{"baseline: raw keyset SELECT + decrypt", baseline},
		{"GET /records over loopback HTTP", func() int { return list(api.URL, true) }},
		{"baseline_http: the same behind a bare handler", func() int { return list(floor.URL, false) }},
	}
	for _, o := range ops { // warm-up
		if n := o.op(); n != total {
			b.Fatalf("%s read %d records, want %d", o.name, n, total)
		}
	}
	spent := make([]time.Duration, len(ops))
	perRound := make([][]float64, len(ops))
	b.ResetTimer()
	for round := range b.N {
		for k := range ops {
			o := ops[(k+round)%len(ops)]
			t0 := time.Now()
			if n := o.op(); n != total {
				b.Fatalf("%s read %d records, want %d", o.name, n, total)
			}
			d := time.Since(t0)
			i := (k + round) % len(ops)
			spent[i] += d
			perRound[i] = append(perRound[i], total/d.Seconds())
		}
	}
	b.StopTimer()
	rate := func(i int) float64 { return float64(total*b.N) / spent[i].Seconds() }
	b.ReportMetric(rate(0), "base-rec/s")
	b.ReportMetric(rate(1), "api-rec/s")
	b.ReportMetric(rate(2), "floor-rec/s")
	b.ReportMetric(rate(1)/rate(0), "ratio")
	b.ReportMetric(rate(1)/rate(2), "http-ratio")
	if b.N < 2 {
		return
	}
	fmt.Printf("GET /records of %d records of %d bytes in pages of %d, %d rounds:\n", total, benchTicketSize, page, b.N)
	for i, o := range ops {
		fmt.Printf("  %-48s %7.0f records/s\n", o.name, rate(i))
	}
	fmt.Printf("  ratio API/baseline %.2f (rounds %s; goal >= 0.7), API/baseline_http %.2f (rounds %s)\n",
		rate(1)/rate(0), roundSpread(perRound[1], perRound[0]), rate(1)/rate(2), roundSpread(perRound[1], perRound[2]))
}
