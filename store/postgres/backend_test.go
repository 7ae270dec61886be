package postgres_test

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/internal/pgtest"
	"github.com/embedauth/connect/jobs"
	"github.com/embedauth/connect/store/postgres"
)

// sessionsNamed counts the Postgres sessions whose application_name is name.
func sessionsNamed(t *testing.T, name string) int {
	t.Helper()
	var n int
	if err := pgtest.DB(t).QueryRowContext(t.Context(), `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// waitNoSessions waits until no session is named name: a closed session
// leaves pg_stat_activity once its server process has exited.
func waitNoSessions(t *testing.T, name string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for sessionsNamed(t, name) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d sessions named %s are still open", sessionsNamed(t, name), name)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestConnect: Connect opens the pool, creates the tables (the Store's and
// River's), and returns a Store, a Scheduler that runs jobs and a
// RateLimiter of the limit of the Options (3000 a minute by default), all
// on that pool; Close closes it. A second Connect on the migrated schema
// works too.
func TestConnect(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	schema := pgtest.Name()
	t.Cleanup(func() { pgtest.DropSchema(t, pgtest.DB(t), schema) })
	app := "connect_test_" + schema
	dsn := withParam(t, "application_name", app)

	pg, err := postgres.Connect(ctx, dsn, &postgres.Options{Schema: schema, MaxConns: 5,
		Scheduler:         postgres.SchedulerConfig{FetchPollInterval: 20 * time.Millisecond},
		RateLimitRequests: 2, RateLimitWindow: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if n := pg.DB.Stats().MaxOpenConnections; n != 5 {
		t.Errorf("the pool holds %d sessions at most, want 5", n)
	}
	env := &environments.Environment{Name: "dev", Account: "default", CreatedAt: time.Now().UTC(), UpdatedAt: time.Now().UTC()}
	if err := pg.Store.CreateEnvironment(ctx, env); err != nil {
		t.Fatalf("the Store's tables: %v", err)
	}
	if got, err := pg.Store.GetEnvironmentByName(ctx, "dev"); err != nil || got.ID != env.ID {
		t.Fatalf("read back: %+v, %v", got, err)
	}

	// The Scheduler runs a job enqueued in the Store's transaction.
	ran := make(chan string, 1)
	if err := pg.Scheduler.Register("greet", func(ctx context.Context, run *jobs.Run) error {
		ran <- string(run.Args)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := pg.Scheduler.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := pg.Store.WithTx(ctx, func(ctx context.Context) error {
		return pg.Scheduler.Enqueue(ctx, jobs.Job{Kind: "greet", Args: json.RawMessage(`{"name":"dev"}`)})
	}); err != nil {
		t.Fatal(err)
	}
	select {
	case args := <-ran:
		if !strings.Contains(args, `"dev"`) {
			t.Errorf("job args: %s", args)
		}
	case <-time.After(time.Minute):
		t.Fatal("the job did not run within a minute")
	}
	stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := pg.Scheduler.Stop(stopCtx); err != nil {
		t.Fatal(err)
	}

	// The RateLimiter has the Options' limit.
	for i, want := range []bool{true, true, false} {
		d, err := pg.RateLimiter.Allow(ctx, "acct")
		if err != nil || d.Allowed != want {
			t.Fatalf("request %d: %+v, %v; want allowed %v", i+1, d, err, want)
		}
	}
	if err := pg.Close(); err != nil {
		t.Fatal(err)
	}
	if err := pg.DB.PingContext(ctx); err == nil {
		t.Error("the pool answers after Close")
	}
	waitNoSessions(t, app)

	// Again on the migrated schema, with the default limit.
	pg, err = postgres.Connect(ctx, dsn, &postgres.Options{Schema: schema, MinConns: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	if d, err := pg.RateLimiter.Allow(ctx, "acct"); err != nil || !d.Allowed || d.Remaining != postgres.DefaultRateLimitRequests-1 {
		t.Errorf("first request at the default limit: %+v, %v; want %d remaining", d, err, postgres.DefaultRateLimitRequests-1)
	}
	if got, err := pg.Store.GetEnvironmentByName(ctx, "dev"); err != nil || got.ID != env.ID {
		t.Errorf("read back after a second Connect: %+v, %v", got, err)
	}
}

// TestConnectFails: bad Options, or a database that cannot be reached, fail
// Connect with an error naming the problem, and leave no session open.
func TestConnectFails(t *testing.T) {
	t.Parallel()
	schema := pgtest.Name()
	t.Cleanup(func() { pgtest.DropSchema(t, pgtest.DB(t), schema) })
	app := "connect_fail_" + schema
	dsn := withParam(t, "application_name", app)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/connect_no_such_db"
	for name, c := range map[string]struct {
		dsn  string
		opts *postgres.Options
		want string
	}{
		"negative rate limit": {dsn, &postgres.Options{Schema: schema, RateLimitRequests: -1}, "RateLimitRequests"},
		"negative window":     {dsn, &postgres.Options{Schema: schema, RateLimitWindow: -time.Second}, "RateLimitWindow"},
		"bad schema":          {dsn, &postgres.Options{Schema: "no such; schema"}, "schema"},
		"bad scheduler":       {dsn, &postgres.Options{Schema: schema, Scheduler: postgres.SchedulerConfig{Workers: -1}}, "Workers"},
		"no database":         {u.String(), nil, "connect_no_such_db"},
	} {
		pg, err := postgres.Connect(t.Context(), c.dsn, c.opts)
		if err == nil || pg != nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Connect = %v, %v; want an error naming %s", name, pg, err, c.want)
		}
	}
	waitNoSessions(t, app)
}
