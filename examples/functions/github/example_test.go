package github_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/egress"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/examples/functions/github"
	"github.com/embedauth/connect/examples/functions/github/githubtest"
	"github.com/embedauth/connect/functions"
	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/store/sqlite"
)

// Register the GitHub functions for the integration "github", let the
// issues sync run for a new connection, read its records with
// GET /records, and open an issue with the create-issue action. A fake
// GitHub stands in for api.github.com.
func ExampleFunctions() {
	api := githubtest.NewServer("gho_example")
	defer api.Close()
	api.AddIssue("octo-org", "widgets", githubtest.Issue{Title: "Crash on start"})
	api.AddIssue("octo-org", "widgets", githubtest.Issue{Title: "Add dark mode", PullRequest: &githubtest.PullRequest{}})
	api.AddIssue("octo-org", "widgets", githubtest.Issue{Title: "Typo in README", State: "closed"})

	// The catalogue's github provider, on the fake's address.
	cat, _ := integrations.DefaultCatalog()
	gh, _ := cat.Get("github")
	gh = gh.Clone()
	gh.Proxy.BaseURL = api.URL
	cat, _ = cat.With(gh)

	db, err := sqlite.Connect(context.Background(), sqlite.MemoryPath, nil)
	if err != nil {
		panic(err)
	}
	defer db.Close() // after the Service has stopped
	svc, err := connect.New(connect.Config{
		Store:          db.Store,
		Scheduler:      db.Scheduler,
		EncryptionKeys: []connect.EncryptionKey{{Key: bytes.Repeat([]byte{1}, 32)}},
		Providers:      cat,
		Egress:         egress.Policy{AllowLoopback: true}, // the fake listens on 127.0.0.1
	})
	if err != nil {
		panic(err)
	}
	if err := svc.Functions().Register(github.Functions("github")...); err != nil {
		panic(err)
	}
	ctx := context.Background()
	env, _ := svc.Environments().Create(ctx, environments.CreateInput{Name: "dev"})
	apiKey, _, _ := svc.Environments().CreateAPIKey(ctx, env.ID, environments.NewAPIKey{Name: "full", Scopes: []string{environments.ScopeAll}})
	_, err = svc.Integrations().Create(ctx, env.ID, integrations.CreateInput{Provider: "github", UniqueKey: "github",
		Credentials: &integrations.Credentials{Type: "OAUTH2", ClientID: "client-id", ClientSecret: "client-secret"}})
	if err != nil {
		panic(err)
	}
	if err := svc.Start(ctx); err != nil {
		panic(err)
	}
	defer svc.Stop(ctx)

	// The connection names its repository in its metadata; the sync
	// starts for it at once.
	_, _, err = svc.Connections().Import(ctx, env.ID, connections.ImportInput{ProviderConfigKey: "github", ConnectionID: "user-42",
		AccessToken: "gho_example", NoExpiration: true, Metadata: map[string]any{"owner": "octo-org", "repo": "widgets"}})
	if err != nil {
		panic(err)
	}
	target := functions.SyncTarget{EnvironmentID: env.ID, Integration: "github", ConnectionID: "user-42",
		Syncs: []functions.SyncRef{{Name: "issues"}}}
	for {
		st, err := svc.Functions().Status(ctx, target)
		if err != nil {
			panic(err)
		}
		if st[0].FinishedAt != nil {
			fmt.Println(st[0].Status, st[0].LatestResult["GithubIssue"].Added, "added, checkpoint", st[0].Checkpoint)
			break
		}
		time.Sleep(10 * time.Millisecond)
	}

	srv := httptest.NewServer(svc.Handler())
	defer srv.Close()
	req, _ := http.NewRequest("GET", srv.URL+"/records/?model=GithubIssue", nil)
	req.Header.Set("Authorization", "Bearer "+apiKey)
	req.Header.Set("Connection-Id", "user-42")
	req.Header.Set("Provider-Config-Key", "github")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	var page struct {
		Records []github.Issue `json:"records"`
	}
	json.NewDecoder(resp.Body).Decode(&page)
	resp.Body.Close()
	for _, r := range page.Records {
		fmt.Printf("#%d %s (%s) by %s, updated %s\n", r.Number, r.Title, r.State, r.UserLogin, r.UpdatedAt.Format(time.RFC3339))
	}

	var out github.CreateIssueOutput
	err = svc.Functions().TriggerAction(ctx, env.ID, "github", "user-42", "create-issue",
		github.CreateIssueInput{Title: "Flaky test", Body: "It fails one run in ten."}, &out)
	if err != nil {
		panic(err)
	}
	fmt.Println(out.Number, out.URL)
	// Output:
	// SUCCESS 2 added, checkpoint map[updated_after:2024-01-01T00:03:00Z]
	// #1 Crash on start (open) by octocat, updated 2024-01-01T00:01:00Z
	// #3 Typo in README (closed) by octocat, updated 2024-01-01T00:03:00Z
	// 4 https://github.com/octo-org/widgets/issues/4
}
