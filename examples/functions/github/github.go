package github

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"time"

	"github.com/embedauth/connect/functions"
)

// Names of the functions, of the sync's model and of its checkpoint's
// key, and the sync's frequency.
const (
	IssuesSyncName  = "issues"
	CreateIssueName = "create-issue"
	IssueModel      = "GithubIssue"
	// CheckpointKey holds the latest updated_at among the items listed
	// so far (RFC 3339, UTC): the next run asks for those updated since.
	CheckpointKey   = "updated_after"
	IssuesFrequency = "every hour"
)

// Issue is a record of the issues sync (model GithubIssue): a GitHub issue
// of the connection's repository. Its id is GitHub's issue id, as a
// string.
type Issue struct {
	ID        string     `json:"id"`
	Number    int        `json:"number"`
	Title     string     `json:"title"`
	State     string     `json:"state"`
	HTMLURL   string     `json:"html_url"`
	UserLogin string     `json:"user_login"`
	CreatedAt time.Time  `json:"created_at"`
	UpdatedAt time.Time  `json:"updated_at"`
	ClosedAt  *time.Time `json:"closed_at"`
}

// CreateIssueInput is the input of the create-issue action.
type CreateIssueInput struct {
	Title string `json:"title"`
	Body  string `json:"body,omitempty"`
}

// CreateIssueOutput is the output of the create-issue action: the new
// issue's id (as a string, like the records' ids), number and page.
type CreateIssueOutput struct {
	ID     string `json:"id"`
	Number int    `json:"number"`
	URL    string `json:"url"`
}

// Functions returns the functions to register for the integration whose
// unique key is integrationKey: the issues sync and the create-issue
// action.
//
//	err := svc.Functions().Register(github.Functions("github")...)
func Functions(integrationKey string) []any {
	return []any{IssuesSync(integrationKey), CreateIssue(integrationKey)}
}

// IssuesSync returns the issues sync of an integration. See the package
// documentation.
func IssuesSync(integrationKey string) functions.Sync {
	return functions.Sync{
		Integration: integrationKey,
		Name:        IssuesSyncName,
		Description: "Syncs the issues (not the pull requests) of the repository named by the connection's metadata " +
			"(owner, repo), incrementally: each run asks only for the issues updated since the last one it saw.",
		Frequency: IssuesFrequency,
		AutoStart: true,
		Scopes:    []string{"repo"},
		Models:    []functions.Model{functions.ModelOf[Issue](IssueModel)},
		Endpoints: []functions.Endpoint{{Method: "GET", Path: "/issues", Group: "Issues"}},
		Run:       syncIssues,
	}
}

// CreateIssue returns the create-issue action of an integration. See the
// package documentation.
func CreateIssue(integrationKey string) functions.Action {
	a := functions.NewAction(integrationKey, CreateIssueName, createIssue)
	a.Description = "Opens an issue in the repository named by the connection's metadata (owner, repo).\n" +
		"- title: the issue's title (required)\n" +
		"- body: its text, in Markdown"
	a.Scopes = []string{"repo"}
	a.Endpoint = &functions.Endpoint{Method: "POST", Path: "/issues", Group: "Issues"}
	return a
}

// mediaType is the Accept header GitHub recommends.
const mediaType = "application/vnd.github+json"

// nameRE is what this package accepts as an owner or repository name:
// GitHub's characters, so that a name never changes the path it is put in.
var nameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,100}$`)

// ErrRepository is the error of a connection whose metadata does not name
// a repository.
var ErrRepository = errors.New("github: the connection's metadata must name a repository: {\"owner\": \"...\", \"repo\": \"...\"}")

// repository returns the owner and name of the repository a run is for:
// the connection's metadata owner and repo, or, for a sync variant other
// than the base one, the repository of that owner named by the variant.
func repository(ctx context.Context, c *functions.Context, variant string) (owner, repo string, err error) {
	md, err := c.Metadata(ctx)
	if err != nil {
		return "", "", err
	}
	owner, _ = md["owner"].(string)
	repo, _ = md["repo"].(string)
	if variant != "" && variant != functions.BaseVariant {
		repo = variant
	}
	for _, v := range []string{owner, repo} {
		if !nameRE.MatchString(v) || v == "." || v == ".." {
			return "", "", fmt.Errorf("%w (got owner %q, repo %q)", ErrRepository, owner, repo)
		}
	}
	return owner, repo, nil
}

// apiIssue is an issue as GitHub's API answers it.
type apiIssue struct {
	ID        int64                   `json:"id"`
	Number    int                     `json:"number"`
	Title     string                  `json:"title"`
	State     string                  `json:"state"`
	HTMLURL   string                  `json:"html_url"`
	User      *struct{ Login string } `json:"user"`
	CreatedAt time.Time               `json:"created_at"`
	UpdatedAt time.Time               `json:"updated_at"`
	ClosedAt  *time.Time              `json:"closed_at"`
	// PullRequest is set (to the key's value, null included) when the
	// item is a pull request.
	PullRequest json.RawMessage `json:"pull_request"`
}

func (a *apiIssue) record() Issue {
	is := Issue{ID: strconv.FormatInt(a.ID, 10), Number: a.Number, Title: a.Title, State: a.State, HTMLURL: a.HTMLURL,
		CreatedAt: a.CreatedAt.UTC(), UpdatedAt: a.UpdatedAt.UTC()}
	if a.User != nil {
		is.UserLogin = a.User.Login
	}
	if a.ClosedAt != nil {
		t := a.ClosedAt.UTC()
		is.ClosedAt = &t
	}
	return is
}

// syncIssues lists the repository's issues updated since the checkpoint,
// oldest update first, page by page through the provider's link
// pagination, saving each page's issues and then the checkpoint.
func syncIssues(ctx context.Context, s *functions.SyncContext) error {
	owner, repo, err := repository(ctx, s.Context, s.Variant)
	if err != nil {
		return err
	}
	cp, err := s.Checkpoint(ctx)
	if err != nil {
		return err
	}
	var since time.Time
	if v, ok := cp[CheckpointKey].(string); ok && v != "" {
		if since, err = time.Parse(time.RFC3339, v); err != nil {
			return fmt.Errorf("github: the checkpoint's %s %q is not a timestamp: %w", CheckpointKey, v, err)
		}
	}
	params := url.Values{"state": {"all"}, "sort": {"updated"}, "direction": {"asc"}, "per_page": {"100"}}
	if !since.IsZero() {
		params.Set("since", since.UTC().Format(time.RFC3339))
	}
	req := functions.ProxyRequest{Endpoint: "/repos/" + owner + "/" + repo + "/issues", Params: params,
		Headers: http.Header{"Accept": {mediaType}}}
	for page, err := range s.Paginate(ctx, req, nil) {
		if err != nil {
			return fmt.Errorf("github: list the issues of %s/%s: %w", owner, repo, err)
		}
		issues := make([]Issue, 0, len(page))
		last := since
		for _, raw := range page {
			var a apiIssue
			if err := json.Unmarshal(raw, &a); err != nil {
				return fmt.Errorf("github: an issue of %s/%s: %w", owner, repo, err)
			}
			if a.UpdatedAt.After(last) {
				last = a.UpdatedAt
			}
			if a.PullRequest != nil {
				continue
			}
			issues = append(issues, a.record())
		}
		for start := 0; start < len(issues); start += functions.MaxRecordsPerBatch {
			if err := s.Save(ctx, IssueModel, issues[start:min(start+functions.MaxRecordsPerBatch, len(issues))]); err != nil {
				return err
			}
		}
		if last.After(since) {
			since = last
			if err := s.SaveCheckpoint(ctx, functions.Checkpoint{CheckpointKey: since.UTC().Format(time.RFC3339)}); err != nil {
				return err
			}
		}
	}
	return nil
}

// createIssue opens an issue in the connection's repository.
func createIssue(ctx context.Context, c *functions.Context, in CreateIssueInput) (CreateIssueOutput, error) {
	if in.Title == "" {
		return CreateIssueOutput{}, &functions.InputError{Err: errors.New("title is required")}
	}
	owner, repo, err := repository(ctx, c, "")
	if err != nil {
		return CreateIssueOutput{}, &functions.ActionError{Payload: map[string]any{"error": "invalid_metadata", "message": err.Error()}}
	}
	resp, err := c.Proxy(ctx, functions.ProxyRequest{Method: "POST", Endpoint: "/repos/" + owner + "/" + repo + "/issues",
		Headers: http.Header{"Accept": {mediaType}}, Data: in})
	if err != nil {
		return CreateIssueOutput{}, err
	}
	var a apiIssue
	if err := resp.JSON(&a); err != nil {
		return CreateIssueOutput{}, fmt.Errorf("github: the created issue: %w", err)
	}
	return CreateIssueOutput{ID: strconv.FormatInt(a.ID, 10), Number: a.Number, URL: a.HTMLURL}, nil
}
