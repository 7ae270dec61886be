package connect_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lib/pq"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/internal/pgtest"
	"github.com/embedauth/connect/internal/secret"
	"github.com/embedauth/connect/jobs"
	"github.com/embedauth/connect/store/postgres"
	"github.com/embedauth/connect/store/sqlite"
)

// benchConnections is how many connections BenchmarkGetConnection seeds; each
// operation looks up a random one of them.
const benchConnections = 1000

// benchGetQuery is the query string of GET /connections/{id} as
// @nangohq/node's getConnection sends it (after the integration key).
const benchGetQuery = "&force_refresh=false&refresh_token=false&refresh_github_app_jwt_token=false"

// BenchmarkGetConnection measures GET /connections/{id} with credentials,
// on SQLite (sub-benchmark sqlite, a file with the production defaults) and
// on Postgres (postgres), against a baseline that does only what the
// answer needs: one prepared SELECT of the connection row by
// (environment_id, integration_key, connection_id), over the Store's
// *sql.DB on Postgres and over a read-only pool on the file like the
// Store's on SQLite, then opening the sealed credentials with an
// internal/secret keyring and decoding them into connections.Credentials.
// The goal is an API at most 1.5 times the baseline on each store.
//
// Sub-benchmarks of each store:
//
//   - baseline: the raw lookup and decryption.
//   - api: the request @nangohq/node sends (Bearer key, Content-Type:
//     application/json, the four query parameters) served by svc.Handler()
//     in process: routing, authentication, scope check, query parsing, the
//     Store, decryption and the JSON body. The requests are parsed up
//     front, as a server parses a request before its handler runs, and the
//     body is checked as cheaply as the baseline's result (status and
//     access token).
//     This is the goal metric: it compares the API's own work with the
//     baseline's, both without a network. Rate limiting is disabled
//     (RateLimitRequests: -1); the API-key cache keeps its default TTL, as
//     in production.
//   - api_http: the same request to httptest.NewServer(svc.Handler()) over
//     a keep-alive client on loopback TCP.
//   - baseline_http: the floor of any HTTP API in this setup: the same
//     client and request against a bare net/http handler that does the
//     baseline, decodes the row's JSON columns and writes the same body
//     (connections.APIFull), without authentication, routing or the Store.
//   - ratio: the four interleaved in blocks of 100 in one run, so that
//     they see the same machine and database load. It reports base-ns/op,
//     api-ns/op, ratio (api / baseline, the goal metric), api-http-ns/op,
//     http-floor-ns/op and http-ratio (api_http / baseline_http), and
//     prints a summary. Its ns/op is the sum of the four.
//
// Every variant is serial, one request in flight: the question is the
// latency the API adds to one lookup, and one goroutine on each side keeps
// the comparison fair (b.RunParallel would measure the connection pools and
// the scheduler as much as the code). All variants look up the same
// pseudo-random sequence of connections.
//
// It needs TEST_DATABASE_URL (see internal/pgtest), for example
//
//	TEST_DATABASE_URL='postgres://postgres@127.0.0.1:5432/test?sslmode=disable' \
//		go test -run '^$' -bench 'BenchmarkGetConnection/.*/ratio' -benchtime 3000x -count 3 .
func BenchmarkGetConnection(b *testing.B) {
	for _, store := range benchStores {
		b.Run(store, func(b *testing.B) { benchGetConnection(b, store) })
	}
}

func benchGetConnection(b *testing.B, store string) {
	f := newGetConnectionBench(b, store)
	serial := func(op func(b *testing.B, i int)) func(b *testing.B) {
		return func(b *testing.B) {
			ids := f.ids(b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				op(b, ids[i])
			}
		}
	}
	b.Run("baseline", serial(f.baseline))
	b.Run("api", serial(f.apiHandler))
	b.Run("api_http", serial(f.api))
	b.Run("baseline_http", serial(f.baselineHTTP))
	b.Run("ratio", func(b *testing.B) {
		const block = 100
		ops := []func(b *testing.B, i int){f.baseline, f.apiHandler, f.api, f.baselineHTTP}
		spent := make([]time.Duration, len(ops))
		ids := f.ids(b.N)
		b.ResetTimer()
		for start := 0; start < b.N; start += block {
			end := min(start+block, b.N)
			for k, op := range ops {
				t := time.Now()
				for i := start; i < end; i++ {
					op(b, ids[i])
				}
				spent[k] += time.Since(t)
			}
		}
		b.StopTimer()
		perOp := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(b.N) }
		baseNs, apiNs, apiHTTPNs, floorNs := perOp(spent[0]), perOp(spent[1]), perOp(spent[2]), perOp(spent[3])
		b.ReportMetric(baseNs, "base-ns/op")
		b.ReportMetric(apiNs, "api-ns/op")
		b.ReportMetric(apiNs/baseNs, "ratio")
		b.ReportMetric(apiHTTPNs, "api-http-ns/op")
		b.ReportMetric(floorNs, "http-floor-ns/op")
		b.ReportMetric(apiHTTPNs/floorNs, "http-ratio")
		if b.N >= block { // not the N=1 probe run
			fmt.Printf("%s: GET /connections/{id}: api %.1f µs/op, baseline %.1f µs/op, ratio %.2f (goal <= 1.5; N=%d)\n",
				store, apiNs/1e3, baseNs/1e3, apiNs/baseNs, b.N)
			fmt.Printf("%s: over loopback TCP: api %.1f µs/op, baseline behind a bare net/http handler %.1f µs/op, ratio %.2f\n",
				store, apiHTTPNs/1e3, floorNs/1e3, apiHTTPNs/floorNs)
		}
	})
}

// getConnectionBench is the fixture of BenchmarkGetConnection.
type getConnectionBench struct {
	envID   int64
	keyring *secret.Keyring
	stmt    *sql.Stmt // the baseline's prepared SELECT
	lite    bool      // the Store is SQLite's (its row's column types)
	client  *http.Client
	apiURL  string // httptest server on svc.Handler()
	httpURL string // httptest server on the baseline_http handler
	auth    string // "Bearer <key>"
	handler http.Handler
	// requests are the parsed GET /connections/{id} requests of apiHandler,
	// by connection number.
	requests []*http.Request
	w        reusedWriter // apiHandler's ResponseWriter
	// tokenJSON[i] is `"access_token":"<token of connection i>"`.
	tokenJSON [][]byte
}

func newGetConnectionBench(b *testing.B, kind string) *getConnectionBench {
	b.Helper()
	ctx := context.Background()
	var (
		st    connect.Store
		sched jobs.Scheduler
		db    *sql.DB
		query string // the baseline's SELECT: every column of the row, as the Store reads it
	)
	switch kind {
	case "sqlite":
		lite, ls := openBenchSQLite(b, sqlite.SchedulerConfig{})
		st, sched = lite, ls
		// A read pool like the Store's: read-only connections beside its
		// writer, whose page cache a commit of the writer invalidates,
		// mapping the file as the Store's do.
		var err error
		db, err = sql.Open("sqlite", "file:"+(&url.URL{Path: lite.Path()}).EscapedPath()+
			"?_pragma=busy_timeout(5000)&_pragma=foreign_keys(1)&_pragma=mmap_size(268435456)&_pragma=query_only(1)")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { db.Close() })
		query = `SELECT id, environment_id, integration_key, connection_id, provider,
			connection_config, metadata, tags, webhook_url_override, auth_mode, sealed_credentials,
			credentials_expires_at, errors, last_fetched_at, last_refresh_failure, refresh_attempts,
			version, created_at, updated_at
			FROM connections WHERE environment_id = ? AND integration_key = ? AND connection_id = ?`
	default:
		var schema string
		db, schema = pgtest.Schema(b)
		st, sched = openBenchPostgres(b, db, schema, postgres.SchedulerConfig{})
		query = `SELECT id, environment_id, integration_key, connection_id, provider,
			connection_config, metadata, tags, webhook_url_override, auth_mode, sealed_credentials,
			credentials_expires_at, errors, last_fetched_at, version, created_at, updated_at
			FROM ` + pq.QuoteIdentifier(schema) + `.connections
			WHERE environment_id = $1 AND integration_key = $2 AND connection_id = $3`
	}
	svc, err := connect.New(connect.Config{Store: st, EncryptionKeys: []connect.EncryptionKey{testKey},
		RateLimitRequests: -1, Scheduler: sched})
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
		Credentials: &integrations.Credentials{Type: "OAUTH2", ClientID: "cid", ClientSecret: "csecret", Scopes: "repo,user"}}); err != nil {
		b.Fatal(err)
	}
	benchSeedConnections(b, svc, env.ID)

	keyring, err := secret.NewKeyring(secret.Key{ID: testKey.ID, Secret: testKey.Key})
	if err != nil {
		b.Fatal(err)
	}
	stmt, err := db.PrepareContext(ctx, query)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { stmt.Close() })

	f := &getConnectionBench{envID: env.ID, keyring: keyring, stmt: stmt, lite: kind == "sqlite", auth: "Bearer " + key, handler: svc.Handler()}
	for i := range benchConnections {
		r := httptest.NewRequest(http.MethodGet, "/connections/"+url.PathEscape(benchConnectionID(i))+"?provider_config_key=gh"+benchGetQuery, nil)
		r.Header.Set("Authorization", f.auth)
		r.Header.Set("Content-Type", "application/json")
		f.requests = append(f.requests, r)
		f.tokenJSON = append(f.tokenJSON, []byte(`"access_token":"`+benchAccessToken(i)+`"`))
	}
	api := httptest.NewServer(svc.Handler())
	b.Cleanup(api.Close)
	floor := httptest.NewServer(http.HandlerFunc(f.serveFloor))
	b.Cleanup(floor.Close)
	tr := &http.Transport{MaxIdleConns: 4, MaxIdleConnsPerHost: 2, IdleConnTimeout: time.Minute}
	b.Cleanup(tr.CloseIdleConnections)
	f.client, f.apiURL, f.httpURL = &http.Client{Transport: tr}, api.URL, floor.URL
	// Warm up every path: the keep-alive connections, the API-key cache,
	// the pool's connections and the prepared statement on them.
	for i := range 20 {
		f.baseline(b, i)
		f.api(b, i)
		f.apiHandler(b, i)
		f.baselineHTTP(b, i)
	}
	return f
}

func benchConnectionID(i int) string { return fmt.Sprintf("conn-%04d", i) }

func benchAccessToken(i int) string {
	return fmt.Sprintf("gho_access_%04d_%s", i, "0123456789abcdefghijklmnopqrstuvwxyz")
}

// benchSeedConnections imports benchConnections OAuth 2 connections with a
// refresh token, an expiry, raw token data, metadata and tags.
func benchSeedConnections(b *testing.B, svc *connect.Service, envID int64) {
	b.Helper()
	ctx := context.Background()
	exp := connections.DateTime{Time: time.Now().Add(10 * 365 * 24 * time.Hour).UTC().Truncate(time.Second)}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		next  = make(chan int)
	)
	for range 4 {
		wg.Go(func() {
			for i := range next {
				at := benchAccessToken(i)
				_, _, err := svc.Connections().Import(ctx, envID, connections.ImportInput{
					ProviderConfigKey: "gh", ConnectionID: benchConnectionID(i),
					AccessToken: at, RefreshToken: fmt.Sprintf("ghr_refresh_%04d", i), ExpiresAt: &exp,
					Raw: map[string]any{"access_token": at, "token_type": "bearer", "scope": "repo,user",
						"refresh_token_expires_in": 15897600},
					Metadata: map[string]any{"team": "red", "n": i},
					Tags:     map[string]string{"end_user_id": fmt.Sprintf("user-%d", i)},
				})
				if err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		})
	}
	for i := range benchConnections {
		next <- i
	}
	close(next)
	wg.Wait()
	if first != nil {
		b.Fatal(first)
	}
}

// ids returns n connection indexes, the same pseudo-random sequence for
// every variant.
func (f *getConnectionBench) ids(n int) []int {
	r := rand.New(rand.NewPCG(1, 0))
	out := make([]int, n)
	for i := range out {
		out[i] = r.IntN(benchConnections)
	}
	return out
}

// benchRow is a connection row as the baseline scans it: JSON columns stay
// raw.
type benchRow struct {
	c                   connections.Connection
	cfg, md, tags, errs []byte
}

// lookup is the baseline: the prepared SELECT, then opening and decoding
// the credentials into row.c.Credentials.
func (f *getConnectionBench) lookup(ctx context.Context, integrationKey, connectionID string) (*benchRow, error) {
	r := &benchRow{}
	c := &r.c
	row := f.stmt.QueryRowContext(ctx, f.envID, integrationKey, connectionID)
	var err error
	if f.lite { // times are microseconds since the epoch
		var expires, fetched, failure sql.NullInt64
		var created, updated int64
		err = row.Scan(&c.ID, &c.EnvironmentID, &c.IntegrationKey, &c.ConnectionID, &c.Provider,
			&r.cfg, &r.md, &r.tags, &c.WebhookURLOverride, &c.AuthMode, &c.SealedCredentials,
			&expires, &r.errs, &fetched, &failure, &c.RefreshAttempts, &c.Version, &created, &updated)
		micros := func(v sql.NullInt64) *time.Time {
			if !v.Valid {
				return nil
			}
			t := time.UnixMicro(v.Int64).UTC()
			return &t
		}
		c.CredentialsExpiresAt, c.LastFetchedAt, c.LastRefreshFailure = micros(expires), micros(fetched), micros(failure)
		c.CreatedAt, c.UpdatedAt = time.UnixMicro(created).UTC(), time.UnixMicro(updated).UTC()
	} else {
		err = row.Scan(&c.ID, &c.EnvironmentID,
			&c.IntegrationKey, &c.ConnectionID, &c.Provider, &r.cfg, &r.md, &r.tags, &c.WebhookURLOverride,
			&c.AuthMode, &c.SealedCredentials, &c.CredentialsExpiresAt, &r.errs, &c.LastFetchedAt, &c.Version,
			&c.CreatedAt, &c.UpdatedAt)
	}
	if err != nil {
		return nil, err
	}
	plain, err := f.keyring.Open("connection.credentials", c.SealedCredentials)
	if err != nil {
		return nil, err
	}
	c.Credentials = new(connections.Credentials)
	if err := json.Unmarshal(plain, c.Credentials); err != nil {
		return nil, err
	}
	return r, nil
}

func (f *getConnectionBench) baseline(b *testing.B, i int) {
	r, err := f.lookup(context.Background(), "gh", benchConnectionID(i))
	if err != nil {
		b.Fatal(err)
	}
	if want := benchAccessToken(i); r.c.Credentials.AccessToken != want {
		b.Fatalf("baseline %s: access token %q, want %q", benchConnectionID(i), r.c.Credentials.AccessToken, want)
	}
}

// serveFloor is the baseline_http handler: the baseline, the JSON columns
// decoded, and the API's body written.
func (f *getConnectionBench) serveFloor(w http.ResponseWriter, r *http.Request) {
	row, err := f.lookup(r.Context(), r.URL.Query().Get("provider_config_key"),
		strings.TrimPrefix(r.URL.Path, "/connections/"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	c := &row.c
	for _, col := range []struct {
		b   []byte
		dst any
	}{{row.cfg, &c.ConnectionConfig}, {row.md, &c.Metadata}, {row.tags, &c.Tags}, {row.errs, &c.Errors}} {
		if col.b != nil {
			err = errors.Join(err, json.Unmarshal(col.b, col.dst))
		}
	}
	body, err2 := json.Marshal(connections.APIFull(c, true, false))
	if err = errors.Join(err, err2); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Write(append(body, '\n'))
}

// benchConnectionBody is the part of the GET /connections/{id} body the
// benchmark checks; the rest is decoded and dropped like any client would.
type benchConnectionBody struct {
	ConnectionID      string         `json:"connection_id"`
	ProviderConfigKey string         `json:"provider_config_key"`
	Metadata          map[string]any `json:"metadata"`
	Tags              map[string]any `json:"tags"`
	Credentials       struct {
		Type        string         `json:"type"`
		AccessToken string         `json:"access_token"`
		ExpiresAt   string         `json:"expires_at"`
		Raw         map[string]any `json:"raw"`
	} `json:"credentials"`
}

// api fetches connection i over HTTP as @nangohq/node's getConnection does.
func (f *getConnectionBench) api(b *testing.B, i int) { f.get(b, f.apiURL, i) }

// baselineHTTP makes the same request to the baseline_http handler.
func (f *getConnectionBench) baselineHTTP(b *testing.B, i int) { f.get(b, f.httpURL, i) }

// apiHandler serves the same request in process. The requests are parsed
// once, up front, as a server parses them before its handler runs, and the
// answer goes to a ResponseWriter that is reused, as a server reuses its
// connection's: the handler's work is what is measured.
func (f *getConnectionBench) apiHandler(b *testing.B, i int) {
	r := f.requests[i]
	w := &f.w
	w.reset()
	f.handler.ServeHTTP(w, r)
	// As cheap a check as the baseline's: the status and the access token
	// in the body (the HTTP variants decode the whole body, both of them).
	if w.code != http.StatusOK || !bytes.Contains(w.body.Bytes(), f.tokenJSON[i]) {
		b.Fatalf("GET %s = %d %s", r.URL, w.code, w.body.Bytes())
	}
}

// reusedWriter is an http.ResponseWriter that keeps the status and body
// of one answer, reset for the next.
type reusedWriter struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (w *reusedWriter) reset() {
	if w.header == nil {
		w.header = http.Header{}
	}
	clear(w.header)
	w.code = 0
	w.body.Reset()
}

func (w *reusedWriter) Header() http.Header { return w.header }

func (w *reusedWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}

func (w *reusedWriter) Write(p []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.body.Write(p)
}

func (f *getConnectionBench) get(b *testing.B, base string, i int) {
	id := benchConnectionID(i)
	u := base + "/connections/" + url.PathEscape(id) + "?provider_config_key=gh" + benchGetQuery
	r, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		b.Fatal(err)
	}
	r.Header.Set("Authorization", f.auth)
	r.Header.Set("Content-Type", "application/json")
	resp, err := f.client.Do(r)
	if err != nil {
		b.Fatal(err)
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		b.Fatal(err)
	}
	f.check(b, u, i, resp.StatusCode, raw)
}

// check decodes a GET /connections/{id} answer and checks it is connection i.
func (f *getConnectionBench) check(b *testing.B, u string, i, status int, raw []byte) {
	id := benchConnectionID(i)
	if status != http.StatusOK {
		b.Fatalf("GET %s = %d %s", u, status, raw)
	}
	var body benchConnectionBody
	if err := json.Unmarshal(raw, &body); err != nil {
		b.Fatal(err)
	}
	if want := benchAccessToken(i); body.ConnectionID != id || body.Credentials.AccessToken != want {
		b.Fatalf("GET %s: connection %q access token %q, want %q %q", u, body.ConnectionID, body.Credentials.AccessToken, id, want)
	}
}
