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
	"github.com/embedauth/connect/egress"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/proxy"
	"github.com/embedauth/connect/store/sqlite"
)

// Mount the Service's API under a prefix of the host's mux and call it with
// an environment's API key.
func ExampleService_Handler() {
	db, err := sqlite.Connect(context.Background(), sqlite.MemoryPath, nil)
	if err != nil {
		panic(err)
	}
	defer db.Close() // after the Service has stopped
	svc, err := connect.New(connect.Config{
		Store:          db.Store,
		Scheduler:      db.Scheduler,
		EncryptionKeys: []connect.EncryptionKey{{Key: bytes.Repeat([]byte{1}, 32)}},
	})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	env, _ := svc.Environments().Create(ctx, environments.CreateInput{Name: "dev"})
	// A key holds only the scopes it is given (none by default).
	key, _, _ := svc.Environments().CreateAPIKey(ctx, env.ID, environments.NewAPIKey{Name: "backend",
		Scopes: []string{environments.ScopeIntegrationsRead, environments.ScopeIntegrationsWrite}})

	mux := http.NewServeMux()
	mux.Handle("/connect/", http.StripPrefix("/connect", svc.Handler()))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	body := `{"provider":"openai","unique_key":"openai-prod"}`
	req, _ := http.NewRequest("POST", srv.URL+"/connect/integrations", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	fmt.Println(resp.Status)

	req, _ = http.NewRequest("GET", srv.URL+"/connect/integrations", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, _ = http.DefaultClient.Do(req)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(strings.Contains(string(b), `"unique_key":"openai-prod"`))
	// Output:
	// 200 OK
	// true
}

// Import an existing API key for an end user and read it back from Go.
func ExampleService_Connections() {
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
	_, err = svc.Integrations().Create(ctx, env.ID, integrations.CreateInput{Provider: "openai", UniqueKey: "openai"})
	if err != nil {
		panic(err)
	}
	_, created, err := svc.Connections().Import(ctx, env.ID, connections.ImportInput{
		ProviderConfigKey: "openai",
		ConnectionID:      "user-42",
		APIKey:            "sk-example",
		Tags:              map[string]string{"End_User_Id": "42"},
	})
	if err != nil {
		panic(err)
	}
	c, _ := svc.Connections().Get(ctx, env.ID, "openai", "user-42", connections.GetOptions{})
	fmt.Println(created, c.Credentials.Type, c.Credentials.APIKey, c.Tags)
	// Output: true API_KEY sk-example map[end_user_id:42]
}

// Call a connection's API from Go: svc.Proxy sends the request with the
// connection's credentials and returns the upstream's response, and
// svc.ProxyClient is an *http.Client to hand to a provider's Go SDK.
func ExampleService_Proxy() {
	// A stand-in for api.openai.com that shows what it receives.
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s %s with %q", r.Method, r.URL.Path, r.Header.Get("Authorization"))
	}))
	defer api.Close()

	db, err := sqlite.Connect(context.Background(), sqlite.MemoryPath, nil)
	if err != nil {
		panic(err)
	}
	defer db.Close() // after the Service has stopped
	svc, _ := connect.New(connect.Config{
		Store:          db.Store,
		Scheduler:      db.Scheduler,
		EncryptionKeys: []connect.EncryptionKey{{Key: bytes.Repeat([]byte{1}, 32)}},
		// The stand-in listens on 127.0.0.1, which provider calls may not
		// reach by default.
		Egress: egress.Policy{AllowLoopback: true},
	})
	ctx := context.Background()
	env, _ := svc.Environments().Create(ctx, environments.CreateInput{Name: "dev"})
	svc.Integrations().Create(ctx, env.ID, integrations.CreateInput{Provider: "openai", UniqueKey: "openai"})
	svc.Connections().Import(ctx, env.ID, connections.ImportInput{ProviderConfigKey: "openai", ConnectionID: "user-42", APIKey: "sk-example"})

	resp, err := svc.Proxy(ctx, &proxy.Request{
		EnvironmentID:  env.ID,
		IntegrationKey: "openai",
		ConnectionID:   "user-42",
		Endpoint:       "/v1/models",
		Options:        proxy.Options{BaseURLOverride: api.URL, Retries: 2},
	})
	if err != nil {
		panic(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.StatusCode, string(b))

	client := svc.ProxyClient(env.ID, "openai", "user-42", proxy.Options{BaseURLOverride: api.URL})
	resp, err = client.Post(api.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{}`))
	if err != nil {
		panic(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.StatusCode, string(b))
	// Output:
	// 200 GET /v1/models with "Bearer sk-example"
	// 200 POST /v1/chat/completions with "Bearer sk-example"
}
