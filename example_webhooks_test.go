package connect_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/egress"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/store/sqlite"
	"github.com/embedauth/connect/webhooks"
)

// Set where an environment's webhooks go, the key that signs them and which
// of them are sent, from Go; the application's receiver checks each
// webhook's signature with webhooks.Verify. Environments().Update changes
// only the fields it is given, so it can run at every start of the host.
func ExampleService_Environments_webhooks() {
	// The signing key, at least 16 characters, shared with the receiver:
	// keep yours in your secret manager.
	signingKey := "whsec_4f9c2b7e1d8a6035"

	// The application's webhook receiver.
	received := make(chan string, 1)
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, "cannot read the body", http.StatusBadRequest)
			return
		}
		if err := webhooks.Verify(r.Header, body, signingKey, &webhooks.VerifyOptions{Tolerance: 5 * time.Minute}); err != nil {
			http.Error(w, "invalid signature", http.StatusUnauthorized)
			return
		}
		received <- string(body)
	}))
	defer app.Close()

	db, err := sqlite.Connect(context.Background(), sqlite.MemoryPath, nil)
	if err != nil {
		panic(err)
	}
	defer db.Close() // after the Service has stopped
	svc, err := connect.New(connect.Config{
		Store:          db.Store,
		Scheduler:      db.Scheduler,
		EncryptionKeys: []connect.EncryptionKey{{ID: "k1", Key: bytes.Repeat([]byte{1}, 32)}},
		// The receiver listens on 127.0.0.1, which webhooks may not reach
		// by default.
		Webhooks: webhooks.DeliveryConfig{Policy: egress.Policy{AllowLoopback: true}},
	})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	env, err := svc.Environments().Create(ctx, environments.CreateInput{Name: "prod"})
	if err != nil {
		panic(err)
	}

	urls := []string{app.URL + "/hooks/connect"} // at most two; both get every webhook
	settings := environments.DefaultWebhookSettings()
	settings.SendEmptySync = false // no sync webhook for a run that changed nothing
	env, err = svc.Environments().Update(ctx, env.ID, environments.UpdateInput{
		WebhookURLs:       &urls,
		WebhookSigningKey: &signingKey,
		WebhookSettings:   &settings,
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(len(env.WebhookURLs), env.WebhookSettings.SendEmptySync)

	// Webhooks are delivered by a started Service.
	if err := svc.Start(ctx); err != nil {
		panic(err)
	}
	defer svc.Stop(ctx)
	// The service's own events (auth, sync, async_action, forward) go
	// there, and so do the host's.
	err = svc.Notify(ctx, webhooks.Event{EnvironmentID: env.ID, Type: "invoice_paid",
		Payload: map[string]any{"type": "invoice_paid", "invoice": "in_42"}})
	if err != nil {
		panic(err)
	}
	select {
	case body := <-received:
		fmt.Println(body)
	case <-time.After(time.Minute):
		fmt.Println("no webhook within a minute")
	}
	// Output:
	// 1 false
	// {"invoice":"in_42","type":"invoice_paid"}
}
