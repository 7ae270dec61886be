package postgres_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/store/postgres"
)

// A host application serves the service under /connect of its mux, on
// Postgres: Connect opens the pool, migrates, and makes the Store, the job
// queue and the shared rate limiter; Ensure makes sure, at every start, of
// the environment and the API key its backend uses.
func ExampleConnect() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context) error {
	key, err := connect.ParseEncryptionKey(os.Getenv("CONNECT_ENCRYPTION_KEY"))
	if err != nil {
		return fmt.Errorf("CONNECT_ENCRYPTION_KEY: %w", err)
	}
	pg, err := postgres.Connect(ctx, os.Getenv("DATABASE_URL"), nil) // pool, tables, job queue, rate limiter
	if err != nil {
		return err
	}
	defer pg.Close()
	svc, err := connect.New(connect.Config{Store: pg.Store, Scheduler: pg.Scheduler, RateLimiter: pg.RateLimiter,
		EncryptionKeys: []connect.EncryptionKey{key}, PublicURL: "http://localhost:8080/connect"})
	if err != nil {
		return err
	}
	// The environment of your end users' connections and your backend's API key for it: made once, then found.
	_, err = svc.Environments().Ensure(ctx, environments.CreateInput{Name: "dev"}, &environments.NewAPIKey{
		Name: "backend", Secret: os.Getenv("CONNECT_API_KEY"), Scopes: []string{environments.ScopeAll}})
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/connect/", http.StripPrefix("/connect", svc.Handler()))
	// Starts the service, serves until SIGINT or SIGTERM, then stops both without losing a request.
	return svc.ListenAndServe(ctx, &http.Server{Addr: "localhost:8080", Handler: mux})
}
