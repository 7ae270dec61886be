package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lib/pq"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/jobs"
	"github.com/embedauth/connect/store/postgres"
	"github.com/embedauth/connect/store/sqlite"
)

// openAdmin connects to the Postgres that adminURL names and checks that it
// answers.
func openAdmin(ctx context.Context, adminURL string) (*sql.DB, error) {
	u, err := url.Parse(adminURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == "" {
		return nil, errors.New("the database URL (-db or TEST_DATABASE_URL) must be a postgres://user@host:port/db URL")
	}
	db, err := sql.Open("postgres", adminURL)
	if err != nil {
		return nil, err
	}
	// Its sessions are in the admin URL's database, not in the bench's:
	// they do not count in the bench's session figures.
	db.SetMaxOpenConns(2)
	db.SetMaxIdleConns(2)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("Postgres at %s does not answer (%v): start it, or point -db or TEST_DATABASE_URL at one "+
			"(such as postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable)", u.Redacted(), err)
	}
	return db, nil
}

// createDatabase creates a database, empty or a copy of template (when
// not ""), and returns its name and URL.
func createDatabase(ctx context.Context, admin *sql.DB, adminURL, suffix, template string) (string, string, error) {
	name := "serverload_" + suffix
	q := "CREATE DATABASE " + pq.QuoteIdentifier(name)
	if template != "" {
		q += " TEMPLATE " + pq.QuoteIdentifier(template)
	}
	if _, err := admin.ExecContext(ctx, q); err != nil {
		return "", "", fmt.Errorf("creating database %s: %w (the -db user needs CREATEDB)", name, err)
	}
	u, _ := url.Parse(adminURL)
	u.Path = "/" + name
	return name, u.String(), nil
}

// dropDatabase drops the bench's database, ending sessions a killed server
// may have left (WITH (FORCE), Postgres 13 and later). DROP DATABASE makes
// Postgres write an immediate checkpoint of the whole cluster, which takes
// tens of seconds on a machine whose disk is busy (40 s was seen on a loaded
// 2-core one, where 30 s cut it short and left the database behind): the
// bound only guards against a server that never answers.
func dropDatabase(admin *sql.DB, name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	_, err := admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+pq.QuoteIdentifier(name)+" WITH (FORCE)")
	return err
}

// pgStats are the Postgres figures of the bench's databases.
type pgStats struct {
	// Sessions is the sum of pg_stat_database.sessions, the sessions ever
	// opened to the databases (Postgres 14 and later; -1 before).
	Sessions int64
	// Backends is the number of sessions open now.
	Backends int64
	// CPU is the CPU time each of those sessions has used, by process id,
	// read from /proc; nil when Postgres runs elsewhere (or its processes
	// cannot be read).
	CPU map[int]time.Duration
}

// readPGStats reads the session counters of the databases names and the
// CPU time of their sessions. A backend reports its session to the
// statistics at the end of its first transaction, so a session opened in
// the last moments of a run may count in the next.
func readPGStats(ctx context.Context, admin *sql.DB, names []string) (pgStats, error) {
	var s pgStats
	var pids []int64
	err := admin.QueryRowContext(ctx, `SELECT
		CASE WHEN current_setting('server_version_num')::int >= 140000
			THEN (SELECT coalesce(sum((to_jsonb(d) ->> 'sessions')::bigint), 0) FROM pg_stat_database d WHERE datname = ANY($1))
			ELSE -1 END,
		(SELECT count(*) FROM pg_stat_activity WHERE datname = ANY($1)),
		(SELECT coalesce(array_agg(pid), '{}') FROM pg_stat_activity WHERE datname = ANY($1))`,
		pq.Array(names)).Scan(&s.Sessions, &s.Backends, pq.Array(&pids))
	if err != nil {
		return s, fmt.Errorf("reading pg_stat_database: %w", err)
	}
	s.CPU = map[int]time.Duration{}
	for _, pid := range pids {
		d, err := processCPU(int(pid))
		if err != nil {
			s.CPU = nil
			break
		}
		s.CPU[int(pid)] = d
	}
	return s, nil
}

// postgresMemory returns the number of sessions open to database name and
// the sum of their private resident memory (RssAnon of
// /proc/<pid>/status: the shared buffers, which every session maps, are
// not in it), or -1 for what cannot be read.
func postgresMemory(ctx context.Context, admin *sql.DB, name string) (sessions int, anonKiB int64) {
	var pids []int64
	if err := admin.QueryRowContext(ctx, `SELECT coalesce(array_agg(pid), '{}') FROM pg_stat_activity WHERE datname = $1`,
		name).Scan(pq.Array(&pids)); err != nil {
		return -1, -1
	}
	for _, pid := range pids {
		m, err := procMemory(int(pid))
		if err != nil {
			return len(pids), -1
		}
		anonKiB += m.AnonKiB
	}
	return len(pids), anonKiB
}

// Names of what the bench creates.
const (
	benchProvider    = "bench-api"
	benchIntegration = "api"
)

// connectionID is the id of the i-th seeded connection.
func connectionID(i int) string { return "user-" + strconv.Itoa(i) }

// accessToken is the access token of the i-th seeded connection; salt
// differs per bench run.
func accessToken(i int, salt string) string {
	return "at_" + strconv.Itoa(i) + "_" + salt
}

// seedConfig is what seeding needs.
type seedConfig struct {
	store     string
	dbURL     string // Postgres
	path      string // SQLite
	key       connect.EncryptionKey
	providers []*integrations.Provider
	n         int
	workers   int
	salt      string
	progress  io.Writer
}

// seedBatch is the number of connections of each ImportBatch of seed.
const seedBatch = 500

// seed imports cfg.n OAuth 2 connections into the dev environment with
// the library, in this process, on the server's database and key, while
// the server runs: connections.Service.ImportBatch in batches of
// seedBatch, the code behind the bulk form of POST /connections, with its
// validation, sealing and operations log, without the HTTP round trip.
// On SQLite it opens the server's file with store/sqlite's defaults (a
// second process on the file, which WAL mode allows; the writers of the
// two processes take SQLite's lock in turn). Their tokens expire in a
// year, so nothing refreshes during the bench.
func seed(ctx context.Context, cfg seedConfig) (time.Duration, error) {
	var st connect.Store
	var sched jobs.Scheduler
	switch cfg.store {
	case storePostgres:
		db, err := sql.Open("postgres", cfg.dbURL)
		if err != nil {
			return 0, err
		}
		defer db.Close()
		db.SetMaxOpenConns(cfg.workers + 2)
		db.SetMaxIdleConns(cfg.workers + 2)
		pg, err := postgres.New(db, nil)
		if err != nil {
			return 0, err
		}
		defer pg.Close()
		if sched, err = postgres.NewScheduler(db, nil, postgres.SchedulerConfig{}); err != nil {
			return 0, err
		}
		st = pg
	case storeSQLite:
		lite, err := sqlite.Open(ctx, cfg.path, nil)
		if err != nil {
			return 0, err
		}
		defer lite.Close()
		if sched, err = sqlite.NewScheduler(ctx, lite, sqlite.SchedulerConfig{}); err != nil {
			return 0, err
		}
		st = lite
	default:
		return 0, fmt.Errorf("unknown store %q", cfg.store)
	}
	cat, err := integrations.DefaultCatalog()
	if err != nil {
		return 0, err
	}
	if cat, err = cat.With(cfg.providers...); err != nil {
		return 0, err
	}
	// Not started: Import needs no background work.
	svc, err := connect.New(connect.Config{
		Store:     st,
		Scheduler: sched,
		// The id derived from the key, as the reference server's: it
		// opens what this seeder sealed.
		EncryptionKeys:    []connect.EncryptionKey{cfg.key},
		Providers:         cat,
		RateLimitRequests: -1,
	})
	if err != nil {
		return 0, err
	}
	env, err := svc.Environments().GetByName(ctx, "dev")
	if err != nil {
		return 0, fmt.Errorf("the server's dev environment: %w", err)
	}
	expires := &connections.DateTime{Time: time.Now().Add(365 * 24 * time.Hour).UTC().Truncate(time.Second)}

	start := time.Now()
	var next, done atomic.Int64
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	for range cfg.workers {
		wg.Go(func() {
			for {
				from := int(next.Add(seedBatch)) - seedBatch
				if from >= cfg.n || ctx.Err() != nil {
					return
				}
				to := min(from+seedBatch, cfg.n)
				batch := make([]connections.ImportInput, 0, to-from)
				for i := from; i < to; i++ {
					batch = append(batch, connections.ImportInput{
						ProviderConfigKey: benchIntegration,
						ConnectionID:      connectionID(i),
						AccessToken:       accessToken(i, cfg.salt),
						RefreshToken:      "rt_" + strconv.Itoa(i) + "_" + cfg.salt,
						ExpiresAt:         expires,
						ConnectionConfig:  map[string]any{"path": "api"},
					})
				}
				if _, err := svc.Connections().ImportBatch(ctx, env.ID, batch); err != nil {
					cancel(fmt.Errorf("importing connections %d to %d: %w", from, to-1, err))
					return
				}
				done.Add(int64(to - from))
			}
		})
	}
	stopProgress := make(chan struct{})
	progressDone := make(chan struct{})
	go func() {
		defer close(progressDone)
		t := time.NewTicker(10 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-stopProgress:
				return
			case <-t.C:
				d := done.Load()
				fmt.Fprintf(cfg.progress, "  seeded %d of %d (%.0f/s)\n", d, cfg.n, float64(d)/time.Since(start).Seconds())
			}
		}
	}()
	wg.Wait()
	close(stopProgress)
	<-progressDone
	if err := context.Cause(ctx); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}
