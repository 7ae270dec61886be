package connect_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/store/sqlite"
)

// Check before serving that the Service holds every key that stored secrets
// were sealed under, and rotate to a new key without losing any.
func ExampleService_CheckEncryptionKeys() {
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
	oldKey := connect.EncryptionKey{ID: "k-2025", Key: bytes.Repeat([]byte{1}, 32)}
	newKey := connect.EncryptionKey{ID: "k-2026", Key: bytes.Repeat([]byte{2}, 32)}

	// First run: secrets are sealed under the old key.
	svc, _ := connect.New(connect.Config{Store: db.Store, Scheduler: scheduler(), EncryptionKeys: []connect.EncryptionKey{oldKey}})
	env, _ := svc.Environments().Create(ctx, environments.CreateInput{Name: "prod"})
	_ = svc.Environments().SetVariables(ctx, env.ID, map[string]string{"TOKEN": "s3cret"})

	// Restarted with the new key alone: refused, with what is missing.
	svc, _ = connect.New(connect.Config{Store: db.Store, Scheduler: scheduler(), EncryptionKeys: []connect.EncryptionKey{newKey}})
	err = svc.CheckEncryptionKeys(ctx)
	var missing *connect.MissingKeysError
	if errors.As(err, &missing) {
		for _, k := range missing.Keys {
			fmt.Println("missing key", k.ID, "for", k.Values)
		}
	}

	// Rotation: the new key first, the old one to open old values.
	svc, _ = connect.New(connect.Config{Store: db.Store, Scheduler: scheduler(), EncryptionKeys: []connect.EncryptionKey{newKey, oldKey}})
	n, err := svc.ReencryptSecrets(ctx)
	fmt.Println("re-sealed", n, err)

	// From now on the new key alone suffices.
	svc, _ = connect.New(connect.Config{Store: db.Store, Scheduler: scheduler(), EncryptionKeys: []connect.EncryptionKey{newKey}})
	fmt.Println("check:", svc.CheckEncryptionKeys(ctx))
	vars, _ := svc.Environments().Variables(ctx, env.ID)
	fmt.Println(vars[0].Name, vars[0].Value)
	// Output:
	// missing key k-2025 for map[environment_signing_key:1 environment_variable:1]
	// re-sealed 2 <nil>
	// check: <nil>
	// TOKEN s3cret
}
