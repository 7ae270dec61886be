package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/store/postgres"
)

// embedded runs, on dsn, what the README's embedding example runs
// (ParseEncryptionKey, postgres.Connect with no options, Ensure of the dev
// environment with the API key, Start), serves the Service under /connect,
// and returns its base URL and what Ensure did. stop stops it all.
func embedded(t *testing.T, dsn, key, apiKey string) (base string, res *environments.Ensured, stop func()) {
	t.Helper()
	ctx := t.Context()
	k, err := connect.ParseEncryptionKey(key)
	if err != nil {
		t.Fatal(err)
	}
	pg, err := postgres.Connect(ctx, dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := connect.New(connect.Config{Store: pg.Store, Scheduler: pg.Scheduler, RateLimiter: pg.RateLimiter,
		EncryptionKeys: []connect.EncryptionKey{k}})
	if err != nil {
		pg.Close()
		t.Fatal(err)
	}
	res, err = svc.Environments().Ensure(ctx, environments.CreateInput{Name: "dev"},
		&environments.NewAPIKey{Name: "backend", Secret: apiKey, Scopes: []string{environments.ScopeAll}})
	if err != nil {
		pg.Close()
		t.Fatalf("Ensure: %v", err)
	}
	if err := svc.Start(ctx); err != nil {
		pg.Close()
		t.Fatalf("Start: %v", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/connect/", http.StripPrefix("/connect", svc.Handler()))
	srv := httptest.NewServer(mux)
	return srv.URL + "/connect", res, func() {
		srv.Close()
		if err := svc.Stop(context.Background()); err != nil {
			t.Error(err)
		}
		if err := pg.Close(); err != nil {
			t.Error(err)
		}
	}
}

// TestEmbeddingSharesTheDatabase: an application that embeds the library
// as the README shows and the reference server, given the same
// DATABASE_URL, CONNECT_ENCRYPTION_KEY and CONNECT_API_KEY, serve the same
// data whichever started first: the same environment and API key (nothing
// created twice, no api_key_exists), and secrets that either sealed open
// in the other (the same key id).
func TestEmbeddingSharesTheDatabase(t *testing.T) {
	t.Parallel()
	const apiKey = "shared-api-key-0123456789"
	createSecrets := func(t *testing.T, base string) {
		t.Helper()
		if status, body := call(t, "POST", base+"/integrations", apiKey, `{"provider":"jira-basic","unique_key":"zd"}`); status != 200 {
			t.Fatalf("create integration: %d %s", status, body)
		}
		if status, body := call(t, "POST", base+"/connections", apiKey, `{"provider_config_key":"zd","connection_id":"c1",
			"credentials":{"type":"BASIC","username":"ann","password":"s3cret-pass"},"connection_config":{"subdomain":"acme"}}`); status != 201 {
			t.Fatalf("import connection: %d %s", status, body)
		}
	}
	readSecrets := func(t *testing.T, base string) {
		t.Helper()
		if status, body := call(t, "GET", base+"/connections/c1?provider_config_key=zd", apiKey, ""); status != 200 ||
			!strings.Contains(body, `"password":"s3cret-pass"`) {
			t.Errorf("connection: %d %s", status, body)
		}
	}

	t.Run("reference server first", func(t *testing.T) {
		t.Parallel()
		dsn := freshDatabase(t)
		key, _ := newKey(t)
		base, stop := serve(t, map[string]string{"DATABASE_URL": dsn, "CONNECT_ENCRYPTION_KEY": key, "CONNECT_API_KEY": apiKey})
		createSecrets(t, base)
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			base, res, stop := embedded(t, dsn, key, apiKey)
			if res.CreatedEnvironment || res.CreatedAPIKey || res.APIKey.Name != "default" {
				t.Errorf("the application created what the server had: %+v", res)
			}
			readSecrets(t, base)
			stop()
		}
	})
	t.Run("application first", func(t *testing.T) {
		t.Parallel()
		dsn := freshDatabase(t)
		key, _ := newKey(t)
		base, res, stopApp := embedded(t, dsn, key, apiKey)
		if !res.CreatedEnvironment || !res.CreatedAPIKey {
			t.Errorf("the application on an empty database: %+v", res)
		}
		createSecrets(t, base)
		stopApp()
		base, res, stopApp = embedded(t, dsn, key, apiKey) // a restart
		if res.CreatedEnvironment || res.CreatedAPIKey {
			t.Errorf("the restarted application created again: %+v", res)
		}
		readSecrets(t, base)
		stopApp()

		base, stop := serve(t, map[string]string{"DATABASE_URL": dsn, "CONNECT_ENCRYPTION_KEY": key, "CONNECT_API_KEY": apiKey})
		readSecrets(t, base)
		if err := stop(); err != nil {
			t.Fatal(err)
		}
	})
}
