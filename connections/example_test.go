package connections_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/store"
	"github.com/embedauth/connect/store/sqlite"
)

// Import connections in bulk from Go: all of them, or, when one is
// invalid, none, with the problems of every item by index.
func ExampleService_ImportBatch() {
	db, err := sqlite.Connect(context.Background(), sqlite.MemoryPath, nil)
	if err != nil {
		panic(err)
	}
	defer db.Close() // after the Service has stopped
	svc, _ := connect.New(connect.Config{
		Store:          db.Store,
		Scheduler:      db.Scheduler,
		EncryptionKeys: []connect.EncryptionKey{{Key: bytes.Repeat([]byte{1}, 32)}},
	})
	ctx := context.Background()
	env, _ := svc.Environments().Create(ctx, environments.CreateInput{Name: "dev"})
	if _, err := svc.Integrations().Create(ctx, env.ID, integrations.CreateInput{Provider: "openai", UniqueKey: "openai"}); err != nil {
		panic(err)
	}
	batch := []connections.ImportInput{
		{ProviderConfigKey: "openai", ConnectionID: "user-1", APIKey: "sk-1"},
		{ProviderConfigKey: "openai", ConnectionID: "user-2", APIKey: "sk-2"},
	}
	res, err := svc.Connections().ImportBatch(ctx, env.ID, batch)
	if err != nil {
		panic(err)
	}
	for _, r := range res {
		fmt.Println(r.Connection.ConnectionID, r.Created)
	}

	// user-2 again with a new key, and a third connection without one.
	_, err = svc.Connections().ImportBatch(ctx, env.ID, []connections.ImportInput{
		{ProviderConfigKey: "openai", ConnectionID: "user-2", APIKey: "sk-2-new"},
		{ProviderConfigKey: "openai", ConnectionID: "user-3"},
	})
	var e *store.Error
	if errors.As(err, &e) {
		fmt.Println(e.Message)
		for _, f := range e.Errors {
			fmt.Println(f.Path, f.Message)
		}
	}
	c, _ := svc.Connections().Get(ctx, env.ID, "openai", "user-2", connections.GetOptions{})
	fmt.Println(c.Credentials.APIKey)
	// Output:
	// user-1 true
	// user-2 true
	// 1 of the 2 connections is invalid; none was imported.
	// [1 api_key] is required
	// sk-2
}
