package functions_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/egress"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/functions"
	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/store/memory"
)

// An action registered in Go calls the provider through the connection's
// credentials and answers a typed output; the host triggers it from Go as
// POST /action/trigger would.
func ExampleNewAction() {
	// A provider API that greets whoever holds the key "sk-1".
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Api-Key") != "sk-1" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		fmt.Fprintf(w, `{"greeting":"hello, %s"}`, r.URL.Query().Get("name"))
	}))
	defer api.Close()
	cat, _ := integrations.DefaultCatalog()
	cat, _ = cat.With(&integrations.Provider{Name: "greeter", DisplayName: "Greeter", AuthMode: integrations.AuthModeAPIKey,
		Credentials: map[string]integrations.FieldSpec{"apiKey": {Type: "string", Title: "API key"}},
		Proxy:       &integrations.Proxy{BaseURL: api.URL, Headers: map[string]string{"X-Api-Key": "${apiKey}"}}})
	svc, err := connect.New(connect.Config{
		Store:          memory.New(),
		EncryptionKeys: []connect.EncryptionKey{{ID: "k1", Key: bytes.Repeat([]byte{1}, 32)}},
		Providers:      cat,
		Egress:         egress.Policy{AllowLoopback: true}, // the fake API is on 127.0.0.1
	})
	if err != nil {
		panic(err)
	}

	type In struct {
		Name string `json:"name"`
	}
	type Out struct {
		Greeting string `json:"greeting"`
	}
	err = svc.Functions().Register(functions.NewAction("greeter", "greet",
		func(ctx context.Context, c *functions.Context, in In) (Out, error) {
			var out Out
			resp, err := c.Proxy(ctx, functions.ProxyRequest{Endpoint: "/greet", Params: map[string][]string{"name": {in.Name}}})
			if err != nil {
				return out, err
			}
			return out, resp.JSON(&out)
		}))
	if err != nil {
		panic(err)
	}

	ctx := context.Background()
	env, _ := svc.Environments().Create(ctx, environments.CreateInput{Name: "dev"})
	if _, err := svc.Integrations().Create(ctx, env.ID, integrations.CreateInput{Provider: "greeter", UniqueKey: "greeter"}); err != nil {
		panic(err)
	}
	if _, _, err := svc.Connections().Import(ctx, env.ID, connections.ImportInput{ProviderConfigKey: "greeter",
		ConnectionID: "user-1", APIKey: "sk-1"}); err != nil {
		panic(err)
	}
	var out Out
	if err := svc.Functions().TriggerAction(ctx, env.ID, "greeter", "user-1", "greet", In{Name: "Ada"}, &out); err != nil {
		panic(err)
	}
	fmt.Println(out.Greeting)

	// An input that does not fit In's schema is refused before the action
	// runs, in JSON's terms.
	_, err = svc.Functions().RunAction(ctx, functions.ActionCall{EnvironmentID: env.ID, Integration: "greeter",
		ConnectionID: "user-1", Action: "greet", Input: json.RawMessage(`{"name":5}`)})
	var re *functions.RunError
	if errors.As(err, &re) {
		fmt.Println(re.Failure.Status, re.Failure.Body.Error.Code)
		fmt.Println(re.Failure.Body.Error.Message)
	}
	// Output:
	// hello, Ada
	// 400 invalid_action_input
	// The action input is invalid: input.name: expected string, got number.
}
