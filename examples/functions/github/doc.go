// Package github holds example functions written in Go against the GitHub
// REST API: a sync of a repository's issues and an action that opens an
// issue. They run on connections of any integration whose provider speaks
// GitHub's API (github, github-app, github-pat); the host picks the
// integration's unique key:
//
//	if err := svc.Functions().Register(github.Functions("github")...); err != nil { ... }
//	// Offered as templates of the provider (GET /providers/github/templates):
//	if err := svc.Functions().AddTemplates("github", github.Functions("github")...); err != nil { ... }
//
// The reference server (examples/server) registers them with
// CONNECT_EXAMPLE_FUNCTIONS=github=<integration key>.
//
// # The repository
//
// Both read the repository from the connection's metadata, which the host
// sets when it creates or imports the connection (or later with
// setMetadata): {"owner": "octo-org", "repo": "widgets"}. A connection
// without them fails the run with [ErrRepository].
//
// # The issues sync
//
// [IssuesSync] ("issues", every hour, started for new connections) saves
// records of the model GithubIssue ([Issue]: id, number, title, state,
// html_url, user_login, created_at, updated_at, closed_at). It calls
//
//	GET /repos/{owner}/{repo}/issues?state=all&sort=updated&direction=asc&per_page=100[&since=...]
//
// through [functions.Context.Paginate], which follows the Link header's
// rel="next" as the github provider's proxy.paginate says. Items with a
// pull_request key are pull requests, which GitHub lists among the
// issues: they are skipped. After each page it saves that page's issues,
// then the checkpoint {"updated_after": <the latest updated_at seen>}:
// an interrupted run resumes after the last page it saved, and every
// later run asks only for the issues updated since (GitHub's since is
// inclusive, so the last issue comes again, unchanged, and is not
// counted). A trigger with reset (triggerSync(..., {reset: true})) clears
// the checkpoint and lists everything again. Issues are never deleted by
// the sync.
//
// A sync variant other than "base" syncs another repository of the same
// owner: the variant's name is the repository's (so
// createSyncVariant({name: "issues", variant: "gadgets"}) syncs
// octo-org/gadgets into its own records).
//
// # The create-issue action
//
// [CreateIssue] ("create-issue") takes {"title": "...", "body": "..."},
// calls POST /repos/{owner}/{repo}/issues and answers
// {"id": "<issue id>", "number": 12, "url": "<the html_url>"}.
// An empty title is refused before any call (400 invalid_action_input);
// a refusal by GitHub is the action's failure 424 script_http_error with
// GitHub's status and body; metadata without a repository is an
// [functions.ActionError] {"error": "invalid_metadata", "message": ...}.
//
// Package githubtest is a fake of the endpoints these functions call,
// for tests.
package github
