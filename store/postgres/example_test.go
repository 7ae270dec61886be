package postgres_test

import (
	"context"
	"database/sql"
	"log"

	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/store/postgres"
)

// The host opens the database, migrates it once at start-up, then builds the
// Store on the same pool.
func Example() {
	ctx := context.Background()
	db, err := sql.Open("postgres", "postgres://app@localhost:5432/app?sslmode=disable")
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	opts := &postgres.Options{Schema: "connect"}
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
