package connect_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
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
	"github.com/embedauth/connect/store/postgres"
)

// benchConnections is how many connections BenchmarkGetConnection seeds; each
// operation looks up a random one of them.
const benchConnections = 1000

// BenchmarkGetConnection measures GET /connections/{id} with credentials on
// Postgres against a baseline that does only what the answer needs: one
// prepared SELECT of the connection row over the same *sql.DB, then opening
// the sealed credentials and decoding them into connections.Credentials.
// The goal is an API at most 1.5 times the baseline.
//
//   - baseline: the raw lookup and decryption.
//   - api: a real HTTP request, as @nangohq/node sends it (Bearer key,
//     Content-Type: application/json, the four boolean query parameters),
//     to httptest.NewServer(svc.Handler()) over a keep-alive client; the
//     body is read and decoded. Rate limiting is disabled
//     (RateLimitRequests: -1); the API-key cache keeps its default TTL.
//   - ratio: both, interleaved in blocks of 100 in the same run so that
//     they see the same machine and database state; it reports base-ns/op,
//     api-ns/op and ratio (api/base) and prints a summary line.
//
// Every variant is serial (one request in flight): the question is the
// latency the API adds to one lookup, and one goroutine on each side keeps
// the comparison fair (b.RunParallel would measure the pool and scheduler
// as much as the code). All variants look up the same pseudo-random
// sequence of connections.
//
// It needs TEST_DATABASE_URL (see internal/pgtest), for example
//
//	TEST_DATABASE_URL='postgres://postgres@127.0.0.1:5432/test?sslmode=disable' \
//		go test -run '^$' -bench BenchmarkGetConnection -benchtime 3000x -count 3 .
func BenchmarkGetConnection(b *testing.B) {
	f := newGetConnectionBench(b)

	b.Run("baseline", func(b *testing.B) {
		ids := f.ids(b.N)
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			f.baseline(b, ids[i])
		}
	})
	b.Run("api", func(b *testing.B) {
		ids := f.ids(b.N)
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			f.api(b, ids[i])
		}
	})
	b.Run("ratio", func(b *testing.B) {
		const block = 100
		ids := f.ids(b.N)
		var base, api time.Duration
		b.ResetTimer()
		for start := 0; start < b.N; start += block {
			end := min(start+block, b.N)
			t0 := time.Now()
			for i := start; i < end; i++ {
				f.baseline(b, ids[i])
			}
			t1 := time.Now()
			for i := start; i < end; i++ {
				f.api(b, ids[i])
			}
			base += t1.Sub(t0)
			api += time.Since(t1)
		}
		b.StopTimer()
		baseNs := float64(base.Nanoseconds()) / float64(b.N)
		apiNs := float64(api.Nanoseconds()) / float64(b.N)
		b.ReportMetric(baseNs, "base-ns/op")
		b.ReportMetric(apiNs, "api-ns/op")
		b.ReportMetric(apiNs/baseNs, "ratio")
		if b.N >= block { // not the N=1 probe run
			b.Logf("GET /connections/{id}: api %.1f µs/op, baseline %.1f µs/op, ratio %.2f (goal <= 1.5; N=%d)",
				apiNs/1e3, baseNs/1e3, apiNs/baseNs, b.N)
		}
	})
}

// getConnectionBench is the fixture of BenchmarkGetConnection.
type getConnectionBench struct {
	envID   int64
	keyring *secret.Keyring
	stmt    *sql.Stmt // the baseline's prepared SELECT
	client  *http.Client
	base    string // server URL
	auth    string // "Bearer <key>"
	seed    uint64
}

func newGetConnectionBench(b *testing.B) *getConnectionBench {
	b.Helper()
	ctx := context.Background()
	db, schema := pgtest.Schema(b)
	opts := &postgres.Options{Schema: schema}
	if err := postgres.Migrate(ctx, db, opts); err != nil {
		b.Fatal(err)
	}
	st, err := postgres.New(db, opts)
	if err != nil {
		b.Fatal(err)
	}
	svc, err := connect.New(connect.Config{Store: st, EncryptionKeys: []connect.EncryptionKey{testKey},
		RateLimitRequests: -1})
	if err != nil {
		b.Fatal(err)
	}
	env, err := svc.Environments().Create(ctx, environments.CreateInput{Name: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	key, _, err := svc.Environments().CreateAPIKey(ctx, env.ID, environments.NewAPIKey{Name: "bench"})
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
	// The row as the store reads it; the baseline scans every column.
	stmt, err := db.PrepareContext(ctx, `SELECT id, environment_id, integration_key, connection_id, provider,
		connection_config, metadata, tags, webhook_url_override, auth_mode, sealed_credentials,
		credentials_expires_at, errors, last_fetched_at, version, created_at, updated_at
		FROM `+pq.QuoteIdentifier(schema)+`.connections
		WHERE environment_id = $1 AND integration_key = $2 AND connection_id = $3`)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { stmt.Close() })

	srv := httptest.NewServer(svc.Handler())
	b.Cleanup(srv.Close)
	tr := &http.Transport{MaxIdleConns: 4, MaxIdleConnsPerHost: 4, IdleConnTimeout: time.Minute}
	b.Cleanup(tr.CloseIdleConnections)
	f := &getConnectionBench{envID: env.ID, keyring: keyring, stmt: stmt, client: &http.Client{Transport: tr},
		base: srv.URL, auth: "Bearer " + key, seed: 1}
	// Warm up both paths: the keep-alive connection, the API-key cache, the
	// pool's connections and the prepared statement on them.
	for i := range 20 {
		f.baseline(b, i%benchConnections)
		f.api(b, i%benchConnections)
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
	r := rand.New(rand.NewPCG(f.seed, 0))
	out := make([]int, n)
	for i := range out {
		out[i] = r.IntN(benchConnections)
	}
	return out
}

// baseline reads connection i with the prepared SELECT and opens its
// credentials.
func (f *getConnectionBench) baseline(b *testing.B, i int) {
	var (
		id, envID, version                         int64
		integrationKey, connectionID, provider     string
		cfg, md, tags, errs                        []byte
		webhookURL, authMode, sealed               string
		expiresAt, lastFetchedAt                   *time.Time
		createdAt, updatedAt                       time.Time
		creds                                      connections.Credentials
		ctx                                        = context.Background()
		wantAccessToken, wantConnectionID, wantKey = benchAccessToken(i), benchConnectionID(i), "gh"
	)
	err := f.stmt.QueryRowContext(ctx, f.envID, wantKey, wantConnectionID).Scan(&id, &envID, &integrationKey,
		&connectionID, &provider, &cfg, &md, &tags, &webhookURL, &authMode, &sealed, &expiresAt, &errs,
		&lastFetchedAt, &version, &createdAt, &updatedAt)
	if err != nil {
		b.Fatal(err)
	}
	plain, err := f.keyring.Open("connection.credentials", sealed)
	if err != nil {
		b.Fatal(err)
	}
	if err := json.Unmarshal(plain, &creds); err != nil {
		b.Fatal(err)
	}
	if creds.AccessToken != wantAccessToken {
		b.Fatalf("baseline %s: access token %q, want %q", wantConnectionID, creds.AccessToken, wantAccessToken)
	}
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
func (f *getConnectionBench) api(b *testing.B, i int) {
	id := benchConnectionID(i)
	u := f.base + "/connections/" + url.PathEscape(id) +
		"?provider_config_key=gh&force_refresh=false&refresh_token=false&refresh_github_app_jwt_token=false"
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
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("GET %s = %d %s", u, resp.StatusCode, raw)
	}
	var body benchConnectionBody
	if err := json.Unmarshal(raw, &body); err != nil {
		b.Fatal(err)
	}
	if want := benchAccessToken(i); body.ConnectionID != id || body.Credentials.AccessToken != want {
		b.Fatalf("GET %s: connection %q access token %q, want %q %q", u, body.ConnectionID, body.Credentials.AccessToken, id, want)
	}
}
