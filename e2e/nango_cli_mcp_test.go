package e2e

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/store/postgres"
)

// mcpKeys are the scopes of the API keys e2e/node-cli/mcp.test.mjs uses besides the server's
// own (environment:*), by the name the script knows them by.
var mcpKeys = map[string][]string{
	// The actions server's scope alone: enough for POST /mcp, no management tool.
	"mcp": {environments.ScopeMCP},
	// Integrations read alone: refused by POST /mcp (403), two management tools.
	"integrationsRead": {environments.ScopeIntegrationsRead},
}

// createAPIKeys adds API keys with the given scopes to the dev environment of the reference
// server whose database is dbURL, as an application embedding the library does (the server has
// no route that creates keys): a Service on the same database and encryption key, never
// started. It returns the keys' secrets by name.
func createAPIKeys(ctx context.Context, t *testing.T, dbURL, encryptionKey string, scopes map[string][]string) map[string]string {
	t.Helper()
	be, err := postgres.Connect(ctx, dbURL, &postgres.Options{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	key, err := connect.ParseEncryptionKey(encryptionKey)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := connect.New(connect.Config{Store: be.Store, Scheduler: be.Scheduler, EncryptionKeys: []connect.EncryptionKey{key}})
	if err != nil {
		t.Fatal(err)
	}
	env, err := svc.Environments().GetByName(ctx, "dev")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for name, sc := range scopes {
		raw, _, err := svc.Environments().CreateAPIKey(ctx, env.ID, environments.NewAPIKey{Name: "e2e-mcp-" + name, Scopes: sc})
		if err != nil {
			t.Fatalf("creating the API key %s %v: %v", name, sc, err)
		}
		out[name] = raw
	}
	return out
}

// checkMCPWrites requires the fake API's requests during mcp.test.mjs (reqs) to hold exactly one
// write: the POST /items of the one create-item call that was to run, with title and n 0. The
// other calls of create-item (its ActionError, input that breaks its schema) must not reach it.
func checkMCPWrites(t *testing.T, reqs []itemsRequest, title string) {
	t.Helper()
	var writes []itemsRequest
	for _, r := range reqs {
		if r.method != "GET" {
			writes = append(writes, r)
		}
	}
	if len(writes) != 1 || writes[0].method != "POST" || writes[0].path != "/items" {
		t.Fatalf("the fake API got %d writes during the MCP tests, want one POST /items: %+v", len(writes), writes)
	}
	var body map[string]any
	if err := json.Unmarshal([]byte(writes[0].body), &body); err != nil || len(body) != 2 || body["title"] != title || body["n"] != 0.0 {
		t.Errorf("the POST /items of the MCP tool call had the body %s, want {\"title\":%q,\"n\":0}", writes[0].body, title)
	}
}
