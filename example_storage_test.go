package connect_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/oplog"
	"github.com/embedauth/connect/store/sqlite"
)

// Keep operations log entries for three days instead of 15, and apply the
// retention by hand. A started Service runs it as a job after each
// maintenance sweep.
func ExampleService_Retain() {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	db, err := sqlite.Connect(context.Background(), sqlite.MemoryPath, nil)
	if err != nil {
		panic(err)
	}
	defer db.Close() // after the Service has stopped
	svc, _ := connect.New(connect.Config{
		Store:          db.Store,
		Scheduler:      db.Scheduler,
		EncryptionKeys: []connect.EncryptionKey{{ID: "k1", Key: bytes.Repeat([]byte{1}, 32)}},
		Now:            func() time.Time { return now },
		Retention:      connect.RetentionConfig{Logs: 3 * 24 * time.Hour},
	})
	ctx := context.Background()
	env, _ := svc.Environments().Create(ctx, environments.CreateInput{Name: "dev"})
	// Creating an integration writes a log entry.
	_, _ = svc.Integrations().Create(ctx, env.ID, integrations.CreateInput{Provider: "openai", UniqueKey: "openai"})

	now = now.Add(3*24*time.Hour + time.Second)
	res, err := svc.Retain(ctx)
	fmt.Println(res.LogsDeleted, res.DeliveriesDeleted, err)
	// Output: 1 0 <nil>
}

// Serve the Service with a minimum pace for request bodies: here a client
// must send 1 KiB (or the end of its body) in each 200 ms spent waiting for
// it; one that stops sending is answered 408 and its connection closed.
func ExampleRequireBodyProgress() {
	db, err := sqlite.Connect(context.Background(), sqlite.MemoryPath, nil)
	if err != nil {
		panic(err)
	}
	defer db.Close() // after the Service has stopped
	svc, _ := connect.New(connect.Config{
		Store:          db.Store,
		Scheduler:      db.Scheduler,
		EncryptionKeys: []connect.EncryptionKey{{ID: "k1", Key: bytes.Repeat([]byte{1}, 32)}},
	})
	ctx := context.Background()
	env, _ := svc.Environments().Create(ctx, environments.CreateInput{Name: "dev"})
	_, _ = svc.Integrations().Create(ctx, env.ID, integrations.CreateInput{Provider: "notion", UniqueKey: "notion"})
	srv := httptest.NewUnstartedServer(connect.RequireBodyProgress(svc.Handler(), 200*time.Millisecond, 1024))
	srv.Config.ReadHeaderTimeout = 10 * time.Second
	srv.Start()
	defer srv.Close()

	// A body that never comes: it claims 4 KiB, sends one byte.
	pr, pw := io.Pipe()
	go func() { _, _ = pw.Write([]byte("{")) }()
	req, _ := http.NewRequest("POST", srv.URL+"/webhook/dev/notion", pr)
	req.ContentLength = 4096
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	pw.Close()
	fmt.Println(resp.StatusCode, strings.Contains(string(b), "request_timeout"))
	// Output: 408 true
}

// Log the anonymous webhooks of an integration whose provider does not sign
// them (notion) at most once every 10 minutes per outcome, each entry
// counting those left out; and store at most 64 MiB of their forwards per
// integration (bodies and rows, as webhooks.ForwardCharge counts them).
func ExampleIncomingWebhooksConfig() {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	db, err := sqlite.Connect(context.Background(), sqlite.MemoryPath, nil)
	if err != nil {
		panic(err)
	}
	defer db.Close() // after the Service has stopped
	svc, _ := connect.New(connect.Config{
		Store:          db.Store,
		Scheduler:      db.Scheduler,
		EncryptionKeys: []connect.EncryptionKey{{ID: "k1", Key: bytes.Repeat([]byte{1}, 32)}},
		Now:            func() time.Time { return now },
		IncomingWebhooks: connect.IncomingWebhooksConfig{
			MaxBody:      256 << 10,
			StorageQuota: 64 << 20,
			LogInterval:  10 * time.Minute,
		},
	})
	ctx := context.Background()
	env, _ := svc.Environments().Create(ctx, environments.CreateInput{Name: "dev"})
	_, _ = svc.Integrations().Create(ctx, env.ID, integrations.CreateInput{Provider: "notion", UniqueKey: "notion"})
	srv := httptest.NewServer(svc.Handler())
	defer srv.Close()
	post := func() {
		resp, err := http.Post(srv.URL+"/webhook/dev/notion", "application/json", strings.NewReader(`{"type":"page.created"}`))
		if err != nil {
			panic(err)
		}
		resp.Body.Close()
	}
	incoming := func() []*oplog.Entry {
		es, _ := svc.ListLogs(ctx, oplog.Filter{EnvironmentID: env.ID, Type: "webhook", IntegrationKey: "notion"})
		return es
	}

	for range 5 {
		post()
	}
	fmt.Println(len(incoming()), "entry for 5 webhooks")
	now = now.Add(10 * time.Minute)
	post()
	es := incoming()
	fmt.Println(len(es), "entries; the last stands for", es[0].Meta["suppressed"], "more")
	// Output:
	// 1 entry for 5 webhooks
	// 2 entries; the last stands for 4 more
}
