package connect_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/functions"
	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/store/sqlite"
)

// Serve a connection's actions to AI agents as MCP tools: mount
// MCPHandler, give the agent an API key with the scope environment:mcp,
// and name the connection in the headers connection-id and
// provider-config-key.
func ExampleService_MCPHandler() {
	ctx := context.Background()
	db, err := sqlite.Connect(ctx, sqlite.MemoryPath, nil)
	if err != nil {
		panic(err)
	}
	defer db.Close()
	sched, err := sqlite.NewScheduler(ctx, db.Store, sqlite.SchedulerConfig{})
	if err != nil {
		panic(err)
	}
	svc, err := connect.New(connect.Config{Store: db.Store, Scheduler: sched,
		EncryptionKeys: []connect.EncryptionKey{{ID: "k1", Key: bytes.Repeat([]byte{7}, 32)}}})
	if err != nil {
		panic(err)
	}
	type greeting struct {
		Name string `json:"name"`
	}
	hello := functions.NewAction("gh", "hello", func(ctx context.Context, c *functions.Context, in greeting) (string, error) {
		return "Hello, " + in.Name, nil
	})
	hello.Description = "Greets someone."
	if err := svc.Functions().Register(hello); err != nil {
		panic(err)
	}
	env, _ := svc.Environments().Create(ctx, environments.CreateInput{Name: "prod"})
	key, _, _ := svc.Environments().CreateAPIKey(ctx, env.ID, environments.NewAPIKey{Name: "agent",
		Scopes: []string{environments.ScopeMCP}})
	_, _ = svc.Integrations().Create(ctx, env.ID, integrations.CreateInput{Provider: "github", UniqueKey: "gh",
		Credentials: &integrations.Credentials{Type: "OAUTH2", ClientID: "id", ClientSecret: "secret"}})
	_, _, _ = svc.Connections().Import(ctx, env.ID, connections.ImportInput{ProviderConfigKey: "gh", ConnectionID: "octocat",
		AccessToken: "gho_x", NoExpiration: true})

	mux := http.NewServeMux()
	mux.Handle("/", svc.MCPHandler())
	srv := httptest.NewServer(mux)
	defer srv.Close()

	call := func(body string) string {
		req, _ := http.NewRequest("POST", srv.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("connection-id", "octocat")
		req.Header.Set("provider-config-key", "gh")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return strings.TrimSpace(string(b))
	}
	fmt.Println(call(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	fmt.Println(call(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"hello","arguments":{"name":"Ada"}}}`))
	// Output:
	// {"jsonrpc":"2.0","id":1,"result":{"ttlMs":0,"cacheScope":"private","tools":[{"description":"Greets someone.","inputSchema":{"properties":{"name":{"type":"string"}},"required":["name"],"type":"object"},"name":"hello"}]}}
	// {"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"\"Hello, Ada\""}]}}
}
