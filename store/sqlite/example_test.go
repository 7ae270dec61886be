package sqlite_test

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/store/sqlite"
)

// A Service on a SQLite file keeps its data across restarts: the second
// start finds the environment, its API key and the integration that the
// first one made.
func ExampleConnect() {
	dir, err := os.MkdirTemp("", "connect-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "connect.db")
	key := connect.EncryptionKey{Key: bytes.Repeat([]byte{7}, 32)} // in production: connect.ParseEncryptionKey

	start := func(ctx context.Context) {
		db, err := sqlite.Connect(ctx, path, nil) // the file, its tables and the job queue in it
		if err != nil {
			log.Fatal(err)
		}
		defer db.Close()
		svc, err := connect.New(connect.Config{Store: db.Store, Scheduler: db.Scheduler,
			EncryptionKeys: []connect.EncryptionKey{key}})
		if err != nil {
			log.Fatal(err)
		}
		res, err := svc.Environments().Ensure(ctx, environments.CreateInput{Name: "dev"}, &environments.NewAPIKey{
			Name: "backend", Secret: "sk-example-0123456789abcdef", Scopes: []string{environments.ScopeAll}})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("created the environment:", res.CreatedEnvironment)
		list, err := svc.Integrations().List(ctx, res.Environment.ID)
		if err != nil {
			log.Fatal(err)
		}
		if len(list) == 0 {
			_, err = svc.Integrations().Create(ctx, res.Environment.ID, integrations.CreateInput{Provider: "github", UniqueKey: "github",
				Credentials: &integrations.Credentials{Type: "OAUTH2", ClientID: "client-id", ClientSecret: "client-secret"}})
			if err != nil {
				log.Fatal(err)
			}
			fmt.Println("created the integration")
			return
		}
		fmt.Println("found the integration:", list[0].UniqueKey)
	}
	start(context.Background())
	start(context.Background()) // a restart
	// Output:
	// created the environment: true
	// created the integration
	// created the environment: false
	// found the integration: github
}
