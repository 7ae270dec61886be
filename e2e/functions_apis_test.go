package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/embedauth/connect/examples/functions/github/githubtest"
	"github.com/embedauth/connect/examples/functions/slack/slacktest"
	"github.com/embedauth/connect/integrations"
)

// The example functions of e2e/node/functions.test.mjs: the reference server registers them
// (CONNECT_EXAMPLE_FUNCTIONS) for these integration keys, whose providers e2e-github and e2e-slack
// (in the providers file) call the fake GitHub and Slack APIs below.
const (
	fnGithubKey      = "e2e-fn-github"
	fnSlackKey       = "e2e-fn-slack"
	fnGithubProvider = "e2e-github"
	fnSlackProvider  = "e2e-slack"
	fnGithubToken    = "gho_e2e_functions_0123456789"
	fnSlackToken     = "xoxb-e2e-functions-0123456789"
	fnGithubOwner    = "e2e-org"
	fnGithubRepo     = "widgets"
	fnGithubVariant  = "gadgets" // a second repository, synced by the variant of that name
	fnGithubItems    = 230       // in widgets: 3 pages of 100, every fifth a pull request
	fnGadgetsItems   = 12
)

// functionAPIs are the fake provider APIs of the example functions: a stateful GitHub
// (githubtest: issues listed with Link header pagination and since, created, updated) and
// Slack (slacktest: chat.postMessage, conversations.history).
type functionAPIs struct {
	github *githubtest.Server
	slack  *slacktest.Server
}

// startFunctionAPIs starts the fakes with the repositories e2e-org/widgets and e2e-org/gadgets.
func startFunctionAPIs(t *testing.T) *functionAPIs {
	t.Helper()
	a := &functionAPIs{github: githubtest.NewServer(fnGithubToken), slack: slacktest.NewServer(fnSlackToken)}
	t.Cleanup(a.github.Close)
	t.Cleanup(a.slack.Close)
	seedRepo(a.github, fnGithubRepo, fnGithubItems)
	seedRepo(a.github, fnGithubVariant, fnGadgetsItems)
	return a
}

// seedRepo adds n items to e2e-org/name: every fifth a pull request, every third issue closed,
// authored by four users.
func seedRepo(gh *githubtest.Server, name string, n int) {
	for i := 1; i <= n; i++ {
		is := githubtest.Issue{Title: fmt.Sprintf("%s: item %d", name, i), Body: "body " + strconv.Itoa(i),
			User: githubtest.User{Login: "dev" + strconv.Itoa(i%4), ID: int64(100 + i%4)}}
		if i%5 == 0 {
			is.PullRequest = &githubtest.PullRequest{}
		}
		added := gh.AddIssue(fnGithubOwner, name, is)
		if is.PullRequest == nil && i%3 == 0 {
			gh.UpdateIssue(fnGithubOwner, name, added.Number, func(is *githubtest.Issue) { is.State = "closed" })
		}
	}
}

// providersYAML is the part of the providers file for the fakes: e2e-github and e2e-slack, the
// catalogue's github and slack providers (their proxy settings: pagination, retries) on the
// fakes' addresses.
func (a *functionAPIs) providersYAML(t *testing.T) string {
	t.Helper()
	cat, err := integrations.DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	var ps []*integrations.Provider
	for _, p := range []struct{ name, from, baseURL string }{
		{fnGithubProvider, "github", a.github.URL},
		{fnSlackProvider, "slack", a.slack.URL},
	} {
		orig, ok := cat.Get(p.from)
		if !ok || orig.Proxy == nil || orig.Proxy.Paginate == nil {
			t.Fatalf("the catalogue's %s provider has no proxy.paginate", p.from)
		}
		px := orig.Clone().Proxy
		px.BaseURL = p.baseURL
		ps = append(ps, &integrations.Provider{Name: p.name, DisplayName: "E2E " + orig.DisplayName,
			AuthMode: integrations.AuthModeOAuth2, AuthorizationURL: p.baseURL + "/authorize", TokenURL: p.baseURL + "/token", Proxy: px})
	}
	b, err := yaml.Marshal(map[string]any{"providers": ps})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// withProviders writes a providers file of the providers of the file at path and those of
// extra (both YAML documents with a providers list), and returns its path.
func withProviders(t *testing.T, path, extra string) string {
	t.Helper()
	var base, more struct {
		Providers []map[string]any `yaml:"providers"`
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &base); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal([]byte(extra), &more); err != nil {
		t.Fatal(err)
	}
	base.Providers = append(base.Providers, more.Providers...)
	out, err := yaml.Marshal(base)
	if err != nil {
		t.Fatal(err)
	}
	merged := filepath.Join(t.TempDir(), "providers.yaml")
	if err := os.WriteFile(merged, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return merged
}

// serverEnv is the server's CONNECT_EXAMPLE_FUNCTIONS.
func (a *functionAPIs) serverEnv() string {
	return "CONNECT_EXAMPLE_FUNCTIONS=github=" + fnGithubKey + ",slack=" + fnSlackKey
}

// nodeEnv is NANGO_E2E_FUNCTIONS, what e2e/node/functions.test.mjs needs to know of them.
func (a *functionAPIs) nodeEnv(t *testing.T) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{
		"github": map[string]any{"url": a.github.URL, "token": fnGithubToken, "key": fnGithubKey, "provider": fnGithubProvider,
			"owner": fnGithubOwner, "repo": fnGithubRepo, "variantRepo": fnGithubVariant},
		"slack": map[string]any{"url": a.slack.URL, "token": fnSlackToken, "key": fnSlackKey, "provider": fnSlackProvider,
			"channel": slacktest.GeneralID, "channelName": slacktest.GeneralName},
	})
	if err != nil {
		t.Fatal(err)
	}
	return "NANGO_E2E_FUNCTIONS=" + string(b)
}

// check verifies, after the Node tests, that the fakes were called with the connections' tokens
// only (never the server's API key), that the issues sync listed pages
// beyond the first through GitHub's next links, and that messages were posted.
func (a *functionAPIs) check(t *testing.T, apiKey string) {
	t.Helper()
	reqs := a.github.Requests()
	followed := 0
	for _, r := range reqs {
		if strings.Contains(r.Authorization+r.Body+r.Query.Encode(), apiKey) {
			t.Errorf("the server's API key reached the fake GitHub: %+v", r)
		}
		// The Node test calls the fake with the same token as the connection's.
		if r.Authorization != "Bearer "+fnGithubToken {
			t.Errorf("the fake GitHub was called with Authorization %q: %s %s", r.Authorization, r.Method, r.Path)
		}
		if strings.HasPrefix(r.Path, "/repositories/") {
			followed++
		}
	}
	if followed == 0 {
		t.Errorf("the issues sync never followed a next link (%d requests to the fake GitHub)", len(reqs))
	}
	for _, r := range a.slack.Requests() {
		if strings.Contains(r.Authorization+r.Body, apiKey) {
			t.Errorf("the server's API key reached the fake Slack: %+v", r)
		}
		// The connections' bot tokens: the fake's, and a revoked one.
		if r.Authorization != "Bearer "+fnSlackToken && r.Authorization != "Bearer xoxb-revoked" {
			t.Errorf("the fake Slack was called with Authorization %q: %s %s", r.Authorization, r.Method, r.Path)
		}
	}
	if len(a.slack.Messages()) == 0 {
		t.Error("the function tests posted no Slack message")
	}
}
