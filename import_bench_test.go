package connect_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lib/pq"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/internal/pgtest"
	"github.com/embedauth/connect/internal/secret"
	"github.com/embedauth/connect/store/postgres"
	"github.com/embedauth/connect/store/sqlite"
)

// importBenchBatch is the number of connections of one bulk import in
// BenchmarkImport: connections.MaxImportBatch.
const importBenchBatch = connections.MaxImportBatch

// importBenchSingleClients is how many clients send single imports at once
// in the single variant of BenchmarkImport; the pool of internal/pgtest
// has 10 connections.
const importBenchSingleClients = 8

// BenchmarkImport measures importing new OAuth 2 connections (access and
// refresh token, expiry, metadata, tags) through the real path against a
// floor, on each store: sub-benchmarks sqlite (a file in b.TempDir() with
// the production defaults, synchronous FULL) and postgres, one after the
// other; when both ran it prints SQLite's rates divided by Postgres's.
// Within each, the variants are interleaved in one run so that every
// variant sees the same machine and database load. Each of the b.N rounds
// runs, in turn:
//
//   - baseline: the floor of storing them: the same connection rows,
//     already sealed (the credentials' JSON encrypted with the Service's
//     key, outside the timing), inserted as raw batched inserts over the
//     Store's own database handle: on Postgres one INSERT ... SELECT FROM
//     unnest of 1,000 rows per transaction, on SQLite one transaction of
//     1,000 executions of a prepared INSERT on the writer connection. No
//     validation, no log entries, no HTTP.
//   - bulk: POST /connections with a JSON array of 1,000 connections over
//     loopback HTTP to httptest.NewServer(svc.Handler()): API key,
//     decoding, validation, sealing, the Store's write and the operations
//     log entries in one transaction, the JSON answer.
//   - replace: the same POST of the round's bulk connections again, with
//     new tokens: every connection exists, so each is updated (its
//     credentials replaced), as a re-import of existing connections does.
//   - baseline_x2, bulk_x2: the same, two clients at once (2,000
//     connections).
//   - single: the way before bulk imports, one POST /connections per
//     connection, from 8 clients at once (the Postgres pool has 10
//     connections; on two cores more clients do not go faster); 200
//     connections a round, which is enough for its rate.
//
// It reports the connections/s of each, ratio (bulk / baseline, one
// client each; goal at least 0.5), ratio-x2 (the same with two clients
// each) and speedup (the better of bulk and bulk_x2 / single; goal at
// least 10), and prints them with the CPU each connection took in the Go
// process (server and clients; on SQLite the database's work too) and,
// when Postgres runs on the same host (its sessions' /proc entries are
// readable), in Postgres; and the spread of the ratio over the rounds.
// Rate limiting is off. Run it with
//
//	TEST_DATABASE_URL='postgres://postgres@127.0.0.1:5432/test?sslmode=disable' \
//		go test -run '^$' -bench BenchmarkImport -benchtime 10x .
func BenchmarkImport(b *testing.B) {
	benchEachStore(b, "import of new connections", benchmarkImport, "bulk-conn/s", "replace-conn/s", "bulk-x2-conn/s", "single-conn/s", "baseline-conn/s")
}

// benchmarkImport is BenchmarkImport on one store; it records its rates
// in figs.
func benchmarkImport(b *testing.B, store string, figs storeFigures) {
	f := newImportBench(b, store)
	const singlePerRound = 200
	type variant struct {
		name     string
		n        int // connections per round
		prepare  func(round int) func()
		spent    time.Duration
		cpu, pg  time.Duration
		count    int
		perRound []float64 // connections/s
	}
	both := func(x, y func()) func() {
		return func() {
			var wg sync.WaitGroup
			wg.Go(x)
			wg.Go(y)
			wg.Wait()
		}
	}
	vs := []*variant{
		{name: "baseline raw batched insert", n: importBenchBatch, prepare: func(r int) func() { return f.baseline(b, "base", r) }},
		{name: "bulk POST /connections", n: importBenchBatch, prepare: func(r int) func() { return f.bulk(b, "bulk", r) }},
		{name: "bulk re-import of those (replace)", n: importBenchBatch, prepare: func(r int) func() { return f.replace(b, "bulk", r) }},
		{name: "baseline, 2 clients", n: 2 * importBenchBatch, prepare: func(r int) func() {
			return both(f.baseline(b, "base2a", r), f.baseline(b, "base2b", r))
		}},
		{name: "bulk, 2 clients", n: 2 * importBenchBatch, prepare: func(r int) func() {
			return both(f.bulk(b, "bulk2a", r), f.bulk(b, "bulk2b", r))
		}},
		{name: fmt.Sprintf("single POST /connections, %d clients", importBenchSingleClients), n: singlePerRound,
			prepare: func(r int) func() { return f.single(b, r, singlePerRound) }},
	}
	pgOK := true
	b.ResetTimer()
	for round := range b.N {
		for _, v := range vs {
			// Each variant prepares its round (bodies, sealed rows)
			// untimed; its run is measured.
			b.StopTimer()
			run := v.prepare(round)
			b.StartTimer()
			p0, ok0 := f.postgresCPU()
			c0, t0 := processCPU(), time.Now()
			run()
			d := time.Since(t0)
			v.cpu += processCPU() - c0
			p1, ok1 := f.postgresCPU()
			v.pg += p1 - p0
			pgOK = pgOK && ok0 && ok1
			v.spent += d
			v.count += v.n
			v.perRound = append(v.perRound, float64(v.n)/d.Seconds())
		}
	}
	b.StopTimer()
	rate := func(v *variant) float64 { return float64(v.count) / v.spent.Seconds() }
	per := func(d time.Duration, v *variant) float64 { return float64(d.Microseconds()) / float64(v.count) }
	base, bulk, replace, base2, bulk2, single := vs[0], vs[1], vs[2], vs[3], vs[4], vs[5]
	ratio, ratio2 := rate(bulk)/rate(base), rate(bulk2)/rate(base2)
	speedup := max(rate(bulk), rate(bulk2)) / rate(single)
	b.ReportMetric(rate(bulk), "bulk-conn/s")
	b.ReportMetric(rate(base), "baseline-conn/s")
	b.ReportMetric(rate(replace), "replace-conn/s")
	b.ReportMetric(rate(bulk2), "bulk-x2-conn/s")
	b.ReportMetric(rate(single), "single-conn/s")
	b.ReportMetric(ratio, "ratio")
	b.ReportMetric(ratio2, "ratio-x2")
	b.ReportMetric(speedup, "speedup")
	for _, v := range []struct {
		name string
		v    *variant
	}{{"bulk-conn/s", bulk}, {"replace-conn/s", replace}, {"bulk-x2-conn/s", bulk2}, {"single-conn/s", single}, {"baseline-conn/s", base}} {
		figs.set(store, v.name, rate(v.v))
	}
	b.ReportMetric(per(bulk.cpu, bulk), "bulk-go-µs/conn")
	b.ReportMetric(per(replace.cpu, replace), "replace-go-µs/conn")
	if pgOK {
		b.ReportMetric(per(bulk.pg, bulk), "bulk-pg-µs/conn")
		b.ReportMetric(per(base.pg, base), "baseline-pg-µs/conn")
	}
	if b.N < 2 { // the probe run
		return
	}
	where := "Postgres"
	if store == "sqlite" {
		where = "SQLite (its work in the Go process)"
	}
	fmt.Printf("import of new connections on %s, %d rounds:\n", where, b.N)
	for _, v := range vs {
		cpu := fmt.Sprintf("Go %4.0f", per(v.cpu, v))
		if pgOK {
			cpu += fmt.Sprintf(" + Postgres %4.0f", per(v.pg, v))
		}
		fmt.Printf("  %-40s %6.0f conn/s   CPU per connection: %s µs\n", v.name, rate(v), cpu)
	}
	spread := func(a, b *variant) string {
		rs := make([]float64, len(a.perRound))
		for i := range rs {
			rs[i] = a.perRound[i] / b.perRound[i]
		}
		slices.Sort(rs)
		return fmt.Sprintf("rounds %.2f-%.2f, median %.2f", rs[0], rs[len(rs)-1], rs[len(rs)/2])
	}
	fmt.Printf("  ratio bulk/baseline %.2f (goal >= 0.5; %s); with 2 clients each %.2f (%s)\n",
		ratio, spread(bulk, base), ratio2, spread(bulk2, base2))
	fmt.Printf("  speedup over single requests %.1f (goal >= 10)\n", speedup)
}

// importBench is the fixture of BenchmarkImport.
type importBench struct {
	db      *sql.DB // Postgres: the Store's pool, else nil
	app     string  // the application_name of db's sessions
	table   string  // the connections table, quoted
	lite    *sqlite.Store
	insert  *sql.Stmt // SQLite: the baseline's insert of one row, on the writer
	envID   int64
	keyring *secret.Keyring
	client  *http.Client
	url     string // POST /connections
	auth    string
	exp     time.Time
}

func newImportBench(b *testing.B, store string) *importBench {
	b.Helper()
	ctx := context.Background()
	f := &importBench{}
	var cfg connect.Config
	switch store {
	case "postgres":
		_, schema := pgtest.Schema(b)
		// A pool of its own, whose sessions carry an application_name, so
		// that their CPU time can be read (postgresCPU).
		f.app = "connect_import_bench_" + schema
		f.db = openAppDB(b, f.app)
		cfg.Store, cfg.Scheduler = openBenchPostgres(b, f.db, schema, postgres.SchedulerConfig{})
		f.table = pq.QuoteIdentifier(schema) + ".connections"
	case "sqlite":
		st, sched := openBenchSQLite(b, sqlite.SchedulerConfig{})
		cfg.Store, cfg.Scheduler = st, sched
		f.lite = st
		var err error
		f.insert, err = st.DB().PrepareContext(ctx, `INSERT INTO connections (environment_id, integration_key, connection_id,
			connection_id_folded, provider, connection_config, metadata, tags, webhook_url_override, auth_mode,
			sealed_credentials, credentials_expires_at, errors, last_fetched_at, last_refresh_failure, refresh_attempts,
			version, created_at, updated_at)
			VALUES (?, 'gh', ?, ?, 'github', '{}', ?, ?, '', 'OAUTH2', ?, ?, '[]', NULL, NULL, 0, 1, ?, ?)`)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { f.insert.Close() })
	}
	cfg.EncryptionKeys, cfg.RateLimitRequests = []connect.EncryptionKey{testKey}, -1
	svc, err := connect.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	env, err := svc.Environments().Create(ctx, environments.CreateInput{Name: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	key, _, err := svc.Environments().CreateAPIKey(ctx, env.ID, environments.NewAPIKey{Name: "bench", Scopes: []string{environments.ScopeAll}})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := svc.Integrations().Create(ctx, env.ID, integrations.CreateInput{Provider: "github", UniqueKey: "gh",
		Credentials: &integrations.Credentials{Type: "OAUTH2", ClientID: "cid", ClientSecret: "csecret"}}); err != nil {
		b.Fatal(err)
	}
	keyring, err := secret.NewKeyring(secret.Key{ID: testKey.ID, Secret: testKey.Key})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(svc.Handler())
	b.Cleanup(srv.Close)
	tr := &http.Transport{MaxIdleConnsPerHost: importBenchSingleClients * 2, IdleConnTimeout: time.Minute}
	b.Cleanup(tr.CloseIdleConnections)
	f.envID, f.keyring = env.ID, keyring
	f.client, f.url, f.auth = &http.Client{Transport: tr}, srv.URL+"/connections", "Bearer "+key
	f.exp = time.Now().Add(8 * time.Hour).UTC().Truncate(time.Second)
	// Warm up each path: the pools, the API-key cache, the statements.
	f.baseline(b, "base", -1)()
	f.bulk(b, "bulk", -1)()
	f.replace(b, "bulk", -1)()
	f.single(b, -1, 50)()
	return f
}

// postgresCPU returns the CPU time the Postgres sessions of f.db have
// used, from /proc (see sessionCPU): ok is false when Postgres runs
// elsewhere, or on SQLite.
func (f *importBench) postgresCPU() (d time.Duration, ok bool) {
	if f.db == nil {
		return 0, false
	}
	return sessionCPU(f.db, f.app)
}

// importBenchItem is connection i of a variant's round as a single import
// body.
func (f *importBench) item(variant string, round, i int) string {
	return fmt.Sprintf(`{"provider_config_key":"gh","connection_id":"%s-%d-%d","access_token":"gho_%036d",`+
		`"refresh_token":"ghr_%036d","expires_at":%q,"metadata":{"plan":"pro","seats":%d},"tags":{"end_user_id":"user-%d"}}`,
		variant, round, i, i, i, f.exp.Format(time.RFC3339), i%50, i)
}

// baseline prepares the round's rows, sealed, and returns their insert in
// one transaction.
func (f *importBench) baseline(b *testing.B, tag string, round int) func() {
	now := time.Now().UTC().Truncate(time.Microsecond)
	exp := f.exp.Format(time.RFC3339Nano)
	cols := make([]pq.StringArray, 12)
	rows := make([][]any, 0, importBenchBatch)
	for i := range importBenchBatch {
		at, rt := fmt.Sprintf("gho_%036d", i), fmt.Sprintf("ghr_%036d", i)
		creds, err := json.Marshal(&connections.Credentials{Type: "OAUTH2", AccessToken: at, RefreshToken: rt,
			ExpiresAt: &f.exp, Raw: map[string]any{"access_token": at, "refresh_token": rt, "expires_at": exp}})
		if err != nil {
			b.Fatal(err)
		}
		sealed, err := f.keyring.Seal(b.Context(), "connection.credentials", creds)
		if err != nil {
			b.Fatal(err)
		}
		id, md, tags := fmt.Sprintf("%s-%d-%d", tag, round, i), fmt.Sprintf(`{"plan":"pro","seats":%d}`, i%50), fmt.Sprintf(`{"end_user_id":"user-%d"}`, i)
		if f.lite != nil {
			rows = append(rows, []any{f.envID, id, strings.ToLower(id), md, tags, sealed, f.exp.UnixMicro(), now.UnixMicro(), now.UnixMicro()})
			continue
		}
		at8601 := now.Format(time.RFC3339Nano)
		for k, v := range []string{"gh", id, "github", "{}", md, tags, "OAUTH2", sealed, exp, "[]", at8601, at8601} {
			cols[k] = append(cols[k], v)
		}
	}
	if f.lite != nil {
		return func() { f.insertSQLite(b, rows) }
	}
	args := []any{f.envID}
	for _, c := range cols {
		args = append(args, c)
	}
	return func() {
		f.insertRows(b, args)
	}
}

func (f *importBench) insertRows(b *testing.B, args []any) {
	ctx := context.Background()
	tx, err := f.db.BeginTx(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO `+f.table+` (environment_id, integration_key, connection_id, provider,
		connection_config, metadata, tags, webhook_url_override, auth_mode, sealed_credentials,
		credentials_expires_at, errors, version, created_at, updated_at)
		SELECT $1, k, id, p, cfg::jsonb, md::jsonb, tags::jsonb, '', mode, sealed, exp::timestamptz, errs::jsonb,
			1, at::timestamptz, up::timestamptz
		FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[],
			$9::text[], $10::text[], $11::text[], $12::text[], $13::text[])
			AS r(k, id, p, cfg, md, tags, mode, sealed, exp, errs, at, up)`, args...)
	if err != nil {
		_ = tx.Rollback()
		b.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
}

// insertSQLite is the baseline's insert on SQLite: the rows in one
// transaction on the writer, one execution of a prepared INSERT each.
func (f *importBench) insertSQLite(b *testing.B, rows [][]any) {
	ctx := context.Background()
	tx, err := f.lite.DB().BeginTx(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	st := tx.StmtContext(ctx, f.insert)
	for _, r := range rows {
		if _, err := st.ExecContext(ctx, r...); err != nil {
			_ = tx.Rollback()
			b.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
}

// bulk returns the import of the round's connections in one POST
// /connections.
func (f *importBench) bulk(b *testing.B, tag string, round int) func() {
	return f.bulkBody(b, tag, round, "", "created")
}

// replace returns the import of the connections that bulk imported in the
// round again, with other tokens: each is updated.
func (f *importBench) replace(b *testing.B, tag string, round int) func() {
	return f.bulkBody(b, tag, round, "gho_", "updated")
}

// bulkBody returns one POST /connections of the round's connections of
// tag, their access tokens prefixed with prefix, whose answer counts them
// all as result ("created" or "updated").
func (f *importBench) bulkBody(b *testing.B, tag string, round int, prefix, result string) func() {
	var body bytes.Buffer
	body.WriteByte('[')
	for i := range importBenchBatch {
		if i > 0 {
			body.WriteByte(',')
		}
		item := f.item(tag, round, i)
		if prefix != "" {
			item = strings.Replace(item, `"access_token":"`, `"access_token":"`+prefix, 1)
		}
		body.WriteString(item)
	}
	body.WriteByte(']')
	return func() {
		status, resp := f.post(b, body.Bytes())
		if status != http.StatusOK || !bytes.Contains(resp, []byte(fmt.Sprintf(`"%s":%d`, result, importBenchBatch))) {
			b.Fatalf("bulk import (%s): %d %.300s", result, status, resp)
		}
	}
}

// single returns the import of n connections of the round with one POST
// /connections each, from importBenchSingleClients clients.
func (f *importBench) single(b *testing.B, round, n int) func() {
	bodies := make([][]byte, n)
	for i := range bodies {
		bodies[i] = []byte(f.item("single", round, i))
	}
	return func() { f.singles(b, bodies) }
}

func (f *importBench) singles(b *testing.B, bodies [][]byte) {
	n := len(bodies)
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Value
	for range importBenchSingleClients {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if status, resp := f.post(b, bodies[i]); status != http.StatusCreated {
					failed.Store(fmt.Sprintf("%d %.300s", status, resp))
					return
				}
			}
		})
	}
	wg.Wait()
	if msg := failed.Load(); msg != nil {
		b.Fatalf("single import: %s", msg)
	}
}

func (f *importBench) post(b *testing.B, body []byte) (int, []byte) {
	req, err := http.NewRequest(http.MethodPost, f.url, bytes.NewReader(body))
	if err != nil {
		b.Error(err)
		return 0, nil
	}
	req.Header.Set("Authorization", f.auth)
	req.Header.Set("Content-Type", "application/json")
	resp, err := f.client.Do(req)
	if err != nil {
		b.Error(err)
		return 0, nil
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}
