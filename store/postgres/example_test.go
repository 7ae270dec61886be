package postgres_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"log"
	"log/slog"
	"time"

	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/jobs"
	"github.com/embedauth/connect/store/postgres"
)

// The host opens the database, migrates it once at start-up, then builds the
// Store on the same pool.
func Example() {
	ctx := context.Background()
	// The same Options serve Open, Migrate, New and NewScheduler. Open's
	// pool keeps its MaxConns sessions open while idle; New warns (to
	// Logger) about a pool that would close and reopen them under load.
	opts := &postgres.Options{Schema: "connect", MaxConns: 20, Logger: slog.Default()}
	db, err := postgres.Open(ctx, "postgres://app@localhost:5432/app?sslmode=disable", opts)
	if err != nil {
		log.Fatal(err) // postgres: cannot reach database app on localhost (port 5432) as user "app": ...
	}
	defer db.Close()

	if err := postgres.Migrate(ctx, db, opts); err != nil {
		log.Fatal(err)
	}
	s, err := postgres.New(db, opts)
	if err != nil {
		log.Fatal(err)
	}
	// Close the Store's prepared statements before the deferred db.Close.
	defer s.Close()
	if err := s.CreateEnvironment(ctx, &environments.Environment{Name: "prod", Account: "default"}); err != nil {
		log.Fatal(err)
	}
}

// A host runs the job queue on the Store's pool and schema: it registers the
// handlers, starts the Scheduler, enqueues jobs in the Store's transactions,
// and stops the Scheduler on shutdown. Every process of the fleet does the
// same; each job runs in one of them.
func ExampleNewScheduler() {
	ctx := context.Background()
	db, err := sql.Open("postgres", "postgres://app@localhost:5432/app?sslmode=disable")
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	opts := &postgres.Options{Schema: "connect"}
	// Migrate creates River's tables too.
	if err := postgres.Migrate(ctx, db, opts); err != nil {
		log.Fatal(err)
	}
	s, err := postgres.New(db, opts)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	sched, err := postgres.NewScheduler(db, opts, postgres.SchedulerConfig{
		Workers: 20,
		Logger:  slog.Default(),
	})
	if err != nil {
		log.Fatal(err)
	}
	err = sched.Register("greet", func(ctx context.Context, run *jobs.Run) error {
		var args struct{ Name string }
		if err := json.Unmarshal(run.Args, &args); err != nil {
			return jobs.Cancel(err) // retrying will not help
		}
		log.Printf("hello, %s (attempt %d of %d)", args.Name, run.Attempt, run.MaxAttempts)
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := sched.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer func() {
		// Running jobs get 30 seconds; then they are cancelled, and run
		// again in another process or after the next start.
		stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := sched.Stop(stopCtx); err != nil {
			log.Print(err)
		}
	}()

	// The environment and the job commit together, or neither does.
	err = s.WithTx(ctx, func(ctx context.Context) error {
		if err := s.CreateEnvironment(ctx, &environments.Environment{Name: "prod", Account: "default"}); err != nil {
			return err
		}
		return sched.Enqueue(ctx, jobs.Job{Kind: "greet", Args: json.RawMessage(`{"name":"prod"}`)})
	})
	if err != nil {
		log.Fatal(err)
	}
}
