package connect_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/store/sqlite"
)

// Make sure, at every start of the host, of the environment its end users'
// connections live in and of the API key its backend calls the API with:
// Ensure creates them the first time, in one transaction, and changes
// nothing afterwards. It checks the encryption key first, so a host started
// with the wrong key writes nothing.
func ExampleService_Environments() {
	ctx := context.Background()
	db, err := sqlite.Connect(ctx, sqlite.MemoryPath, nil) // the same database across restarts
	if err != nil {
		panic(err)
	}
	defer db.Close()
	// A Scheduler per start: the Service registers its jobs on it.
	scheduler := func() *sqlite.Scheduler {
		s, err := sqlite.NewScheduler(ctx, db.Store, sqlite.SchedulerConfig{})
		if err != nil {
			panic(err)
		}
		return s
	}
	// CONNECT_ENCRYPTION_KEY, made once with openssl rand -base64 32.
	key, err := connect.ParseEncryptionKey("BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=")
	if err != nil {
		panic(err)
	}
	fmt.Println("key id", key.ID)
	backend := &environments.NewAPIKey{Name: "backend", Secret: "sk-prod-0123456789abcdef", Scopes: []string{environments.ScopeAll}}

	for start := 1; start <= 2; start++ {
		svc, err := connect.New(connect.Config{Store: db.Store, Scheduler: scheduler(), EncryptionKeys: []connect.EncryptionKey{key}})
		if err != nil {
			panic(err)
		}
		res, err := svc.Environments().Ensure(ctx, environments.CreateInput{Name: "prod"}, backend)
		if err != nil {
			panic(err)
		}
		fmt.Println("start", start, res.Environment.Name, "created:", res.CreatedEnvironment, res.CreatedAPIKey)
	}

	// Started with another key: refused before anything is written.
	other, _ := connect.ParseEncryptionKey("CAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAg=")
	svc, _ := connect.New(connect.Config{Store: db.Store, Scheduler: scheduler(), EncryptionKeys: []connect.EncryptionKey{other}})
	_, err = svc.Environments().Ensure(ctx, environments.CreateInput{Name: "staging"}, nil)
	fmt.Println("with another key:", errors.Is(err, connect.ErrEncryptionKey))
	// Output:
	// key id k4bb06f8e
	// start 1 prod created: true true
	// start 2 prod created: false false
	// with another key: true
}

// Read the encryption key from its base64 text (openssl rand -base64 32):
// its id derives from the key, so the same key always has the same id, in
// every program that uses the library and in the reference server.
func ExampleParseEncryptionKey() {
	key, err := connect.ParseEncryptionKey("BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=\n")
	fmt.Println(key.ID, len(key.Key), err, key.ID == connect.EncryptionKeyID(key.Key))

	_, err = connect.ParseEncryptionKey("c2hvcnQ=")
	fmt.Println(err)
	// Output:
	// k4bb06f8e 32 <nil> true
	// connect: the encryption key is 5 bytes, want 32 (openssl rand -base64 32)
}
