package github_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
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

const (
	token = "gho_test_token"
	key   = "gh" // the integration's unique key
	conn  = "user-1"
	owner = "octo-org"
	repo  = "widgets"
)

// fixture is a Service on a private in-memory SQLite database whose github provider calls a
// fake GitHub, with the example's functions registered for the
// integration "gh" and a connection "user-1" of it.
type fixture struct {
	svc    *connect.Service
	api    *githubtest.Server
	srv    *httptest.Server // the Service's API
	env    *environments.Environment
	apiKey string
}

// setup starts the fixture; before runs before the connection is made
// (and so before the sync's first run), metadata is the connection's.
func setup(t *testing.T, metadata map[string]any, before func(api *githubtest.Server)) *fixture {
	t.Helper()
	api := githubtest.NewServer(token)
	t.Cleanup(api.Close)
	cat, err := integrations.DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	gh, ok := cat.Get("github")
	if !ok {
		t.Fatal("no github provider in the catalogue")
	}
	// The catalogue's github provider, with its pagination settings, on
	// the fake's address.
	gh = gh.Clone()
	gh.Proxy.BaseURL = api.URL
	if cat, err = cat.With(gh); err != nil {
		t.Fatal(err)
	}
	db, err := sqlite.Connect(t.Context(), sqlite.MemoryPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() }) // after the Service's Stop, a later cleanup
	svc, err := connect.New(connect.Config{
		Store:          db.Store,
		Scheduler:      db.Scheduler,
		EncryptionKeys: []connect.EncryptionKey{{Key: bytes.Repeat([]byte{7}, 32)}},
		Providers:      cat,
		Egress:         egress.Policy{AllowLoopback: true},
		Functions:      connect.FunctionsConfig{TickInterval: 20 * time.Millisecond, Heartbeat: 50 * time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Functions().Register(github.Functions(key)...); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	env, err := svc.Environments().Create(ctx, environments.CreateInput{Name: "dev"})
	if err != nil {
		t.Fatal(err)
	}
	apiKey, _, err := svc.Environments().CreateAPIKey(ctx, env.ID, environments.NewAPIKey{Name: "full", Scopes: []string{environments.ScopeAll}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Integrations().Create(ctx, env.ID, integrations.CreateInput{Provider: "github", UniqueKey: key,
		Credentials: &integrations.Credentials{Type: "OAUTH2", ClientID: "cid", ClientSecret: "secret"}}); err != nil {
		t.Fatal(err)
	}
	if err := svc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = svc.Stop(ctx)
	})
	if before != nil {
		before(api)
	}
	if _, _, err := svc.Connections().Import(ctx, env.ID, connections.ImportInput{ProviderConfigKey: key, ConnectionID: conn,
		AccessToken: token, NoExpiration: true, Metadata: metadata}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(svc.Handler())
	t.Cleanup(srv.Close)
	return &fixture{svc: svc, api: api, srv: srv, env: env, apiKey: apiKey}
}

// do calls the Service's API and decodes the JSON answer into out (when
// not nil); it returns the status.
func (f *fixture) do(t *testing.T, method, path, body string, header map[string]string, out any) int {
	t.Helper()
	req, err := http.NewRequest(method, f.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+f.apiKey)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %d %s: %v", method, path, resp.StatusCode, b, err)
		}
	}
	return resp.StatusCode
}

// waitRun waits until the latest run of the sync's variant finished at or
// after since, and returns its status.
func (f *fixture) waitRun(t *testing.T, variant string, since time.Time) functions.SyncStatus {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		st, err := f.svc.Functions().Status(context.Background(), functions.SyncTarget{EnvironmentID: f.env.ID,
			Integration: key, ConnectionID: conn, Syncs: []functions.SyncRef{{Name: github.IssuesSyncName, Variant: variant}}})
		if err != nil {
			t.Fatal(err)
		}
		if len(st) == 1 && st[0].FinishedAt != nil && !st[0].FinishedAt.Before(since.Truncate(time.Microsecond)) &&
			st[0].Status != functions.StatusRunning {
			return st[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run of issues (%s) did not finish: %+v", variant, st)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// trigger starts a run of the sync's variant and waits for it.
func (f *fixture) trigger(t *testing.T, variant string, reset bool) functions.SyncStatus {
	t.Helper()
	before := time.Now()
	err := f.svc.Functions().TriggerSync(context.Background(), functions.SyncTarget{EnvironmentID: f.env.ID, Integration: key,
		ConnectionID: conn, Syncs: []functions.SyncRef{{Name: github.IssuesSyncName, Variant: variant}}},
		functions.TriggerOptions{Reset: reset})
	if err != nil {
		t.Fatal(err)
	}
	return f.waitRun(t, variant, before)
}

// record is a record as GET /records answers it.
type record struct {
	github.Issue
	Meta struct {
		LastAction string `json:"last_action"`
	} `json:"_nango_metadata"`
}

// records lists the records of a variant through GET /records.
func (f *fixture) records(t *testing.T, variant string) []record {
	t.Helper()
	var out []record
	cursor := ""
	for range 100 {
		q := url.Values{"model": {github.IssueModel}, "variant": {variant}, "limit": {"40"}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		var page struct {
			Records    []record `json:"records"`
			NextCursor *string  `json:"next_cursor"`
		}
		if st := f.do(t, "GET", "/records/?"+q.Encode(), "", map[string]string{"Connection-Id": conn, "Provider-Config-Key": key}, &page); st != 200 {
			t.Fatalf("GET /records: %d", st)
		}
		out = append(out, page.Records...)
		if page.NextCursor == nil || *page.NextCursor == "" {
			return out
		}
		cursor = *page.NextCursor
	}
	t.Fatal("GET /records did not end")
	return nil
}

// wantRecord is the record of an issue the fake serves.
func wantRecord(is githubtest.Issue) github.Issue {
	out := github.Issue{ID: strconv.FormatInt(is.ID, 10), Number: is.Number, Title: is.Title, State: is.State,
		HTMLURL: is.HTMLURL, UserLogin: is.User.Login, CreatedAt: is.CreatedAt, UpdatedAt: is.UpdatedAt, ClosedAt: is.ClosedAt}
	return out
}

// seed adds n items to owner/name: every fifth a pull request, every
// third issue closed.
func seed(api *githubtest.Server, name string, n int) {
	for i := 1; i <= n; i++ {
		is := githubtest.Issue{Title: fmt.Sprintf("%s item %d", name, i), User: githubtest.User{Login: "user" + strconv.Itoa(i%4), ID: int64(i % 4)}}
		if i%5 == 0 {
			is.PullRequest = &githubtest.PullRequest{}
		}
		added := api.AddIssue(owner, name, is)
		if i%3 == 0 && is.PullRequest == nil {
			api.UpdateIssue(owner, name, added.Number, func(is *githubtest.Issue) { is.State = "closed" })
		}
	}
}

// wantIssues are the records the fake's issues of owner/name make, by id.
func wantIssues(api *githubtest.Server, name string) map[string]github.Issue {
	out := map[string]github.Issue{}
	for _, is := range api.Issues(owner, name) {
		if is.PullRequest == nil {
			out[strconv.FormatInt(is.ID, 10)] = wantRecord(is)
		}
	}
	return out
}

func checkRecords(t *testing.T, got []record, want map[string]github.Issue) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d records, want %d", len(got), len(want))
	}
	for _, r := range got {
		w, ok := want[r.ID]
		if !ok {
			t.Fatalf("record %s (#%d %q) is not an issue of the repository", r.ID, r.Number, r.Title)
		}
		g := r.Issue
		if g.Number != w.Number || g.Title != w.Title || g.State != w.State || g.HTMLURL != w.HTMLURL || g.UserLogin != w.UserLogin ||
			!g.CreatedAt.Equal(w.CreatedAt) || !g.UpdatedAt.Equal(w.UpdatedAt) || (g.ClosedAt == nil) != (w.ClosedAt == nil) ||
			(g.ClosedAt != nil && !g.ClosedAt.Equal(*w.ClosedAt)) {
			t.Fatalf("record %s:\n got %+v\nwant %+v", r.ID, g, w)
		}
	}
}

// lastUpdated is the latest updated_at among the fake's items of
// owner/name, pull requests included.
func lastUpdated(api *githubtest.Server, name string) string {
	var last time.Time
	for _, is := range api.Issues(owner, name) {
		if is.UpdatedAt.After(last) {
			last = is.UpdatedAt
		}
	}
	return last.UTC().Format(time.RFC3339)
}

func TestIssuesSync(t *testing.T) {
	t.Parallel()
	start := time.Now()
	f := setup(t, map[string]any{"owner": owner, "repo": repo}, func(api *githubtest.Server) { seed(api, repo, 230) })

	// The first run starts by itself (AutoStart), lists everything in 3
	// pages and saves the issues without the pull requests.
	st := f.waitRun(t, functions.BaseVariant, start)
	want := wantIssues(f.api, repo)
	if st.Status != functions.StatusSuccess || st.LatestResult[github.IssueModel].Added != len(want) ||
		st.RecordCount[github.IssueModel] != len(want) || st.Frequency != "1h" {
		t.Fatalf("after the first run: %+v; want SUCCESS with %d added", st, len(want))
	}
	if got := st.Checkpoint[github.CheckpointKey]; got != lastUpdated(f.api, repo) {
		t.Errorf("checkpoint %v, want updated_after %s", st.Checkpoint, lastUpdated(f.api, repo))
	}
	checkRecords(t, f.records(t, functions.BaseVariant), want)

	reqs := f.api.TakeRequests()
	if len(reqs) != 3 {
		t.Fatalf("the first run made %d requests, want 3 pages: %+v", len(reqs), reqs)
	}
	first := reqs[0]
	if first.Method != "GET" || first.Path != "/repos/octo-org/widgets/issues" ||
		first.Query.Encode() != "direction=asc&per_page=100&sort=updated&state=all" {
		t.Errorf("first request %s %s?%s", first.Method, first.Path, first.Query.Encode())
	}
	for i, r := range reqs {
		if r.Authorization != "Bearer "+token {
			t.Errorf("request %d carried Authorization %q", i, r.Authorization)
		}
		if i > 0 && (!strings.HasPrefix(r.Path, "/repositories/") || r.Query.Get("page") != strconv.Itoa(i+1) || r.Query.Get("per_page") != "100") {
			t.Errorf("request %d did not follow the next link: %s?%s", i, r.Path, r.Query.Encode())
		}
	}

	// The next run asks only for what changed since the checkpoint: one
	// issue closed, one opened, one pull request.
	since := lastUpdated(f.api, repo)
	closed, _ := f.api.UpdateIssue(owner, repo, 1, func(is *githubtest.Issue) { is.State = "closed"; is.Title = "first, done" })
	opened := f.api.AddIssue(owner, repo, githubtest.Issue{Title: "new"})
	f.api.AddIssue(owner, repo, githubtest.Issue{Title: "new pull", PullRequest: &githubtest.PullRequest{}})
	st = f.trigger(t, functions.BaseVariant, false)
	res := st.LatestResult[github.IssueModel]
	if st.Status != functions.StatusSuccess || res.Added != 1 || res.Updated != 1 || st.RecordCount[github.IssueModel] != len(want)+1 {
		t.Fatalf("after the incremental run: %+v, want 1 added and 1 updated", st)
	}
	reqs = f.api.TakeRequests()
	if len(reqs) != 1 || reqs[0].Query.Get("since") != since {
		t.Fatalf("the incremental run asked %+v, want one request since %s", reqs, since)
	}
	want = wantIssues(f.api, repo)
	got := f.records(t, functions.BaseVariant)
	checkRecords(t, got, want)
	for _, r := range got {
		switch r.ID {
		case strconv.FormatInt(closed.ID, 10):
			if r.State != "closed" || r.ClosedAt == nil || r.Meta.LastAction != "UPDATED" {
				t.Errorf("the closed issue's record: %+v", r)
			}
		case strconv.FormatInt(opened.ID, 10):
			if r.Meta.LastAction != "ADDED" || r.Title != "new" {
				t.Errorf("the new issue's record: %+v", r)
			}
		}
	}

	// Nothing changed: one request, nothing counted.
	st = f.trigger(t, functions.BaseVariant, false)
	if res := st.LatestResult[github.IssueModel]; res.Added != 0 || res.Updated != 0 {
		t.Errorf("a run without changes counted %+v", res)
	}
	// A reset lists everything again, from the first page.
	st = f.trigger(t, functions.BaseVariant, true)
	reqs = f.api.TakeRequests()
	if len(reqs) != 4 || reqs[1].Query.Has("since") || st.Status != functions.StatusSuccess {
		t.Errorf("after a reset: %d requests (%+v), status %+v", len(reqs), reqs, st)
	}
}

func TestIssuesSyncResumesFromCheckpoint(t *testing.T) {
	t.Parallel()
	start := time.Now()
	f := setup(t, map[string]any{"owner": owner, "repo": repo}, func(api *githubtest.Server) {
		seed(api, repo, 250)
		// The second page fails (a 502 from GitHub).
		api.FailWith(func(r githubtest.Request) int {
			if r.Query.Get("page") == "2" {
				return http.StatusBadGateway
			}
			return 0
		})
	})
	st := f.waitRun(t, functions.BaseVariant, start)
	items := f.api.Issues(owner, repo)
	// Page one: the 100 items updated first (sorted by updated_at).
	sorted := slices.Clone(items)
	slices.SortStableFunc(sorted, func(a, b githubtest.Issue) int { return a.UpdatedAt.Compare(b.UpdatedAt) })
	pageOne := map[string]github.Issue{}
	for _, is := range sorted[:100] {
		if is.PullRequest == nil {
			pageOne[strconv.FormatInt(is.ID, 10)] = wantRecord(is)
		}
	}
	cp := sorted[99].UpdatedAt.UTC().Format(time.RFC3339)
	if st.Status != functions.StatusError || st.RecordCount[github.IssueModel] != len(pageOne) || st.Checkpoint[github.CheckpointKey] != cp {
		t.Fatalf("after the failed run: %+v; want ERROR with %d records and the checkpoint %s", st, len(pageOne), cp)
	}
	checkRecords(t, f.records(t, functions.BaseVariant), pageOne)

	// The next run starts from the checkpoint, not from the first page.
	f.api.FailWith(nil)
	f.api.TakeRequests()
	st = f.trigger(t, functions.BaseVariant, false)
	reqs := f.api.TakeRequests()
	if st.Status != functions.StatusSuccess || len(reqs) == 0 || reqs[0].Query.Get("since") != cp {
		t.Fatalf("the resumed run: %+v, requests %+v", st, reqs)
	}
	checkRecords(t, f.records(t, functions.BaseVariant), wantIssues(f.api, repo))
	// The issue updated at the checkpoint comes again unchanged: only the
	// others are added.
	if res := st.LatestResult[github.IssueModel]; res.Added != len(wantIssues(f.api, repo))-len(pageOne) || res.Updated != 0 {
		t.Errorf("the resumed run counted %+v", res)
	}
}

func TestIssuesSyncVariant(t *testing.T) {
	t.Parallel()
	f := setup(t, map[string]any{"owner": owner, "repo": repo}, func(api *githubtest.Server) {
		seed(api, repo, 12)
		seed(api, "gadgets", 7)
	})
	var v map[string]string
	before := time.Now()
	if st := f.do(t, "POST", "/sync/issues/variant/gadgets", fmt.Sprintf(`{"provider_config_key":%q,"connection_id":%q}`, key, conn), nil, &v); st != 200 || v["variant"] != "gadgets" {
		t.Fatalf("create variant: %d %v", st, v)
	}
	st := f.waitRun(t, "gadgets", before)
	if st.Status != functions.StatusSuccess {
		t.Fatalf("variant run: %+v", st)
	}
	checkRecords(t, f.records(t, "gadgets"), wantIssues(f.api, "gadgets"))
	f.waitRun(t, functions.BaseVariant, before.Add(-time.Minute))
	checkRecords(t, f.records(t, functions.BaseVariant), wantIssues(f.api, repo))
}

func TestIssuesSyncWithoutRepository(t *testing.T) {
	t.Parallel()
	start := time.Now()
	f := setup(t, map[string]any{"owner": owner, "repo": "../../user"}, nil)
	st := f.waitRun(t, functions.BaseVariant, start)
	if st.Status != functions.StatusError {
		t.Fatalf("status %+v, want ERROR", st)
	}
	if n := len(f.api.Requests()); n != 0 {
		t.Errorf("%d requests reached GitHub", n)
	}
}

func TestCreateIssue(t *testing.T) {
	t.Parallel()
	f := setup(t, map[string]any{"owner": owner, "repo": repo}, func(api *githubtest.Server) { api.AddRepo(owner, repo) })
	waitFirstRun(t, f)
	f.api.TakeRequests()

	ctx := context.Background()
	var out github.CreateIssueOutput
	err := f.svc.Functions().TriggerAction(ctx, f.env.ID, key, conn, github.CreateIssueName,
		github.CreateIssueInput{Title: "Broken build", Body: "The **main** branch fails."}, &out)
	if err != nil {
		t.Fatal(err)
	}
	issues := f.api.Issues(owner, repo)
	if len(issues) != 1 {
		t.Fatalf("the fake holds %d issues", len(issues))
	}
	is := issues[0]
	if is.Title != "Broken build" || is.Body != "The **main** branch fails." || is.State != "open" {
		t.Errorf("created %+v", is)
	}
	if want := (github.CreateIssueOutput{ID: strconv.FormatInt(is.ID, 10), Number: 1, URL: "https://github.com/octo-org/widgets/issues/1"}); out != want {
		t.Errorf("output %+v, want %+v", out, want)
	}
	reqs := f.api.TakeRequests()
	if len(reqs) != 1 || reqs[0].Method != "POST" || reqs[0].Path != "/repos/octo-org/widgets/issues" || reqs[0].Authorization != "Bearer "+token {
		t.Fatalf("requests %+v", reqs)
	}
	var sent map[string]any
	if err := json.Unmarshal([]byte(reqs[0].Body), &sent); err != nil || sent["title"] != "Broken build" || len(sent) != 2 {
		t.Errorf("body sent %s", reqs[0].Body)
	}

	// Through the API: refusals.
	hdr := map[string]string{"Connection-Id": conn, "Provider-Config-Key": key}
	var e struct {
		Error functions.FailureDetail `json:"error"`
	}
	if st := f.do(t, "POST", "/action/trigger", `{"action_name":"create-issue","input":{"body":"no title"}}`, hdr, &e); st != 400 || e.Error.Code != "invalid_action_input" {
		t.Errorf("without a title: %d %+v", st, e)
	}
	if n := len(f.api.TakeRequests()); n != 0 {
		t.Errorf("a refused input reached GitHub %d times", n)
	}
	f.api.FailWith(func(githubtest.Request) int { return http.StatusForbidden })
	e.Error = functions.FailureDetail{}
	if st := f.do(t, "POST", "/action/trigger", `{"action_name":"create-issue","input":{"title":"x"}}`, hdr, &e); st != 424 ||
		e.Error.Code != "script_http_error" || e.Error.Upstream == nil || e.Error.Upstream.Status != 403 {
		t.Errorf("refused by GitHub: %d %+v", st, e)
	}
	f.api.FailWith(nil)

	var re *functions.RunError
	if err := f.svc.Functions().TriggerAction(ctx, f.env.ID, key, conn, github.CreateIssueName, map[string]any{"title": 5}, nil); !errors.As(err, &re) ||
		re.Failure.Status != 400 {
		t.Errorf("a title of the wrong type: %v", err)
	}
}

func TestCreateIssueWithoutRepository(t *testing.T) {
	t.Parallel()
	f := setup(t, nil, nil)
	waitFirstRun(t, f)
	var e struct {
		Error functions.FailureDetail `json:"error"`
	}
	hdr := map[string]string{"Connection-Id": conn, "Provider-Config-Key": key}
	st := f.do(t, "POST", "/action/trigger", `{"action_name":"create-issue","input":{"title":"x"}}`, hdr, &e)
	p, _ := e.Error.Payload.(map[string]any)
	if st != 500 || e.Error.Code != "action_script_runtime_error" || p["error"] != "invalid_metadata" ||
		!strings.Contains(fmt.Sprint(p["message"]), "owner") {
		t.Errorf("without metadata: %d %+v", st, e)
	}
	if n := len(f.api.Requests()); n != 0 {
		t.Errorf("%d requests reached GitHub", n)
	}
}

// waitFirstRun waits for the run the new connection started, so that
// the test's own requests to the fake come after it.
func waitFirstRun(t *testing.T, f *fixture) {
	t.Helper()
	f.waitRun(t, functions.BaseVariant, time.Time{})
}

func TestFunctionsListed(t *testing.T) {
	t.Parallel()
	f := setup(t, nil, nil)
	var list struct {
		Data []functions.FunctionJSON `json:"data"`
	}
	if st := f.do(t, "GET", "/integrations/gh/functions", "", nil, &list); st != 200 || len(list.Data) != 2 {
		t.Fatalf("functions: %d %+v", st, list)
	}
	for _, fn := range list.Data {
		switch fn.Name {
		case github.IssuesSyncName:
			if fn.Type != functions.KindSync || *fn.Runs != "1h" || !*fn.AutoStart || len(fn.Returns) != 1 || fn.Returns[0] != github.IssueModel {
				t.Errorf("sync %+v", fn)
			}
			var schema struct {
				Defs map[string]struct {
					Required []string `json:"required"`
				} `json:"$defs"`
			}
			if err := json.Unmarshal(fn.JSONSchema, &schema); err != nil {
				t.Fatal(err)
			}
			if got := schema.Defs[github.IssueModel].Required; !slices.Equal(got, []string{"id", "number", "title", "state", "html_url",
				"user_login", "created_at", "updated_at"}) {
				t.Errorf("GithubIssue requires %v", got)
			}
		case github.CreateIssueName:
			if fn.Type != functions.KindAction || fn.Input == nil {
				t.Errorf("action %+v", fn)
			}
		default:
			t.Errorf("unexpected function %+v", fn)
		}
	}
}
