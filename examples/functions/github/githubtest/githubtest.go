// Package githubtest is a fake of the part of the GitHub REST API that the
// github example functions call: listing a repository's issues (with
// GitHub's filters, sorting and Link header pagination) and creating an
// issue. Tests of the functions, and of hosts that run them, point a
// github provider's base URL at a [Server].
//
// It also answers PATCH /repos/{owner}/{repo}/issues/{number} (update an
// issue), for tests that change an issue the way a user would.
//
// The fake keeps its issues in memory, stamps them with its own clock
// (one minute per change from 2024-01-01T00:00:00Z, so runs are
// reproducible) and records every request it receives.
package githubtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Issue is an issue (or a pull request, which GitHub lists among the
// issues with a pull_request key) as the API answers it; a subset of
// GitHub's fields.
type Issue struct {
	ID          int64        `json:"id"`
	Number      int          `json:"number"`
	Title       string       `json:"title"`
	Body        string       `json:"body"`
	State       string       `json:"state"`
	HTMLURL     string       `json:"html_url"`
	User        User         `json:"user"`
	CreatedAt   time.Time    `json:"created_at"`
	UpdatedAt   time.Time    `json:"updated_at"`
	ClosedAt    *time.Time   `json:"closed_at"`
	PullRequest *PullRequest `json:"pull_request,omitempty"`
}

// User is the author of an issue.
type User struct {
	Login string `json:"login"`
	ID    int64  `json:"id"`
}

// PullRequest marks an Issue as a pull request.
type PullRequest struct {
	URL string `json:"url"`
}

// Request is a request the Server received.
type Request struct {
	Method        string
	Path          string
	Query         url.Values
	Authorization string
	Body          string
}

// Start is the time of the fake's clock before its first change.
var Start = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// Login is the user that issues created through the API are opened by.
const Login = "octocat"

// Server is a fake GitHub API. Create it with NewServer; Close it when
// done.
type Server struct {
	// URL is the API's base URL (GitHub's https://api.github.com).
	URL string

	srv   *httptest.Server
	token string

	mu       sync.Mutex
	repos    map[string]*repository // by "owner/repo"; guarded by mu
	byID     map[int64]*repository  // guarded by mu
	clock    time.Time              // guarded by mu
	nextID   int64                  // guarded by mu
	requests []Request              // guarded by mu
	fail     func(Request) int      // guarded by mu
}

type repository struct {
	id          int64
	owner, name string
	issues      []*Issue
}

// NewServer starts a fake GitHub API that accepts only the access token
// token (sent as "Bearer <token>" or "token <token>"); an empty token
// accepts any request.
func NewServer(token string) *Server {
	s := &Server{token: token, repos: map[string]*repository{}, byID: map[int64]*repository{}, clock: Start, nextID: 1000}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	return s
}

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// tick advances the clock by a minute and returns it; s.mu is held.
func (s *Server) tick() time.Time {
	s.clock = s.clock.Add(time.Minute)
	return s.clock
}

// repo returns the repository owner/name, created when create is set; s.mu
// is held.
func (s *Server) repo(owner, name string, create bool) *repository {
	key := strings.ToLower(owner + "/" + name)
	r := s.repos[key]
	if r == nil && create {
		s.nextID++
		r = &repository{id: s.nextID, owner: owner, name: name}
		s.repos[key] = r
		s.byID[r.id] = r
	}
	return r
}

// AddRepo creates an empty repository (AddIssue creates one too).
func (s *Server) AddRepo(owner, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.repo(owner, name, true)
}

// AddIssue adds an issue to the repository owner/name, creating the
// repository, and returns it as stored. Zero fields get defaults: the
// next id and number, state "open", the html_url, the author Login, and
// the clock's next minute as created_at and updated_at, and updated_at as
// closed_at of a closed one. A PullRequest gets its url.
func (s *Server) AddIssue(owner, name string, is Issue) Issue {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.add(s.repo(owner, name, true), is)
}

// add stores an issue; s.mu is held.
func (s *Server) add(r *repository, is Issue) Issue {
	if is.ID == 0 {
		s.nextID++
		is.ID = s.nextID
	}
	if is.Number == 0 {
		is.Number = len(r.issues) + 1
	}
	if is.State == "" {
		is.State = "open"
	}
	kind := "issues"
	if is.PullRequest != nil {
		kind = "pull"
		if is.PullRequest.URL == "" {
			is.PullRequest.URL = fmt.Sprintf("%s/repos/%s/%s/pulls/%d", s.URL, r.owner, r.name, is.Number)
		}
	}
	if is.HTMLURL == "" {
		is.HTMLURL = fmt.Sprintf("https://github.com/%s/%s/%s/%d", r.owner, r.name, kind, is.Number)
	}
	if is.User.Login == "" {
		is.User = User{Login: Login, ID: 1}
	}
	if is.CreatedAt.IsZero() {
		is.CreatedAt = s.tick()
	}
	if is.UpdatedAt.IsZero() {
		is.UpdatedAt = is.CreatedAt
	}
	if is.State == "closed" && is.ClosedAt == nil {
		t := is.UpdatedAt
		is.ClosedAt = &t
	}
	stored := is
	r.issues = append(r.issues, &stored)
	return stored
}

// UpdateIssue changes an issue of owner/name with f and stamps its
// updated_at with the clock's next minute (and closed_at when f closes
// it). It returns the issue as stored, or false when there is no such
// issue.
func (s *Server) UpdateIssue(owner, name string, number int, f func(*Issue)) (Issue, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repo(owner, name, false)
	if r == nil {
		return Issue{}, false
	}
	for _, is := range r.issues {
		if is.Number == number {
			f(is)
			is.UpdatedAt = s.tick()
			if is.State == "closed" && is.ClosedAt == nil {
				t := is.UpdatedAt
				is.ClosedAt = &t
			}
			return *is, true
		}
	}
	return Issue{}, false
}

// Issues returns the issues and pull requests of owner/name in the order
// they were added.
func (s *Server) Issues(owner, name string) []Issue {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repo(owner, name, false)
	if r == nil {
		return nil
	}
	out := make([]Issue, len(r.issues))
	for i, is := range r.issues {
		out[i] = *is
	}
	return out
}

// Requests returns the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// FailWith makes the server answer each request for which fail returns a
// status other than 0 with that status and GitHub's error body, rather
// than serve it. FailWith(nil) stops it.
func (s *Server) FailWith(fail func(r Request) int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = fail
}

// TakeRequests returns the requests received so far and forgets them.
func (s *Server) TakeRequests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.requests
	s.requests = nil
	return out
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	req := Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(),
		Authorization: r.Header.Get("Authorization"), Body: string(body)}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	fail := s.fail
	s.mu.Unlock()
	if fail != nil {
		if status := fail(req); status != 0 {
			writeJSON(w, status, map[string]string{"message": http.StatusText(status),
				"documentation_url": "https://docs.github.com/rest"})
			return
		}
	}

	if s.token != "" {
		a := r.Header.Get("Authorization")
		if a != "Bearer "+s.token && a != "token "+s.token {
			writeJSON(w, http.StatusUnauthorized, map[string]string{"message": "Bad credentials",
				"documentation_url": "https://docs.github.com/rest"})
			return
		}
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case len(parts) == 4 && parts[0] == "repos" && parts[3] == "issues" && r.Method == http.MethodGet:
		s.list(w, r, func() *repository { return s.repo(parts[1], parts[2], false) })
	case len(parts) == 3 && parts[0] == "repositories" && parts[2] == "issues" && r.Method == http.MethodGet:
		// Where GitHub's next links point.
		id, _ := strconv.ParseInt(parts[1], 10, 64)
		s.list(w, r, func() *repository { return s.byID[id] })
	case len(parts) == 4 && parts[0] == "repos" && parts[3] == "issues" && r.Method == http.MethodPost:
		s.create(w, parts[1], parts[2], body)
	case len(parts) == 5 && parts[0] == "repos" && parts[3] == "issues" && r.Method == http.MethodPatch:
		s.update(w, parts[1], parts[2], parts[4], body)
	default:
		notFound(w)
	}
}

func notFound(w http.ResponseWriter) {
	writeJSON(w, http.StatusNotFound, map[string]string{"message": "Not Found",
		"documentation_url": "https://docs.github.com/rest"})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// list answers GET /repos/{owner}/{repo}/issues as GitHub does: query
// state (open, closed, all; default open), since (updated at or after),
// sort (created, updated; default created), direction (asc, desc;
// default desc), per_page (1 to 100, default 30) and page (from 1), with
// a Link header of rel next, last, first and prev pages whose URLs name
// the repository by id.
func (s *Server) list(w http.ResponseWriter, r *http.Request, find func() *repository) {
	q := r.URL.Query()
	s.mu.Lock()
	repo := find()
	if repo == nil {
		s.mu.Unlock()
		notFound(w)
		return
	}
	var since time.Time
	if v := q.Get("since"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			s.mu.Unlock()
			writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"message": "Validation Failed: since is not a timestamp"})
			return
		}
		since = t
	}
	state := q.Get("state")
	if state == "" {
		state = "open"
	}
	var items []Issue
	for _, is := range repo.issues {
		if (state != "all" && is.State != state) || is.UpdatedAt.Before(since) {
			continue
		}
		items = append(items, *is)
	}
	id := repo.id
	s.mu.Unlock()

	byUpdated := q.Get("sort") == "updated"
	asc := q.Get("direction") == "asc"
	slices.SortStableFunc(items, func(a, b Issue) int {
		ta, tb := a.CreatedAt, b.CreatedAt
		if byUpdated {
			ta, tb = a.UpdatedAt, b.UpdatedAt
		}
		c := ta.Compare(tb)
		if c == 0 {
			c = a.Number - b.Number
		}
		if !asc {
			c = -c
		}
		return c
	})
	perPage := 30
	if n, err := strconv.Atoi(q.Get("per_page")); err == nil && n > 0 {
		perPage = min(n, 100)
	}
	page := 1
	if n, err := strconv.Atoi(q.Get("page")); err == nil && n > 0 {
		page = n
	}
	last := max((len(items)+perPage-1)/perPage, 1)
	start := min((page-1)*perPage, len(items))
	end := min(start+perPage, len(items))

	link := func(p int, rel string) string {
		lq := url.Values{}
		for k, v := range q {
			lq[k] = v
		}
		lq.Set("page", strconv.Itoa(p))
		return fmt.Sprintf(`<http://%s/repositories/%d/issues?%s>; rel="%s"`, r.Host, id, lq.Encode(), rel)
	}
	var links []string
	if page > 1 {
		links = append(links, link(page-1, "prev"))
	}
	if page < last {
		links = append(links, link(page+1, "next"), link(last, "last"))
	}
	if page > 1 {
		links = append(links, link(1, "first"))
	}
	if len(links) > 0 {
		w.Header().Set("Link", strings.Join(links, ", "))
	}
	out := items[start:end]
	if out == nil {
		out = []Issue{}
	}
	writeJSON(w, http.StatusOK, out)
}

// create answers POST /repos/{owner}/{repo}/issues: 201 with the new
// issue, 422 without a title, 404 for an unknown repository.
func (s *Server) create(w http.ResponseWriter, owner, name string, body []byte) {
	var in struct {
		Title any    `json:"title"`
		Body  string `json:"body"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"message": "Problems parsing JSON"})
		return
	}
	title, _ := in.Title.(string)
	if title == "" {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"message": "Validation Failed",
			"errors": []map[string]string{{"resource": "Issue", "code": "missing_field", "field": "title"}}})
		return
	}
	s.mu.Lock()
	r := s.repo(owner, name, false)
	if r == nil {
		s.mu.Unlock()
		notFound(w)
		return
	}
	is := s.add(r, Issue{Title: title, Body: in.Body})
	s.mu.Unlock()
	writeJSON(w, http.StatusCreated, is)
}

// update answers PATCH /repos/{owner}/{repo}/issues/{number}: it sets the
// title, body and state given ("open" or "closed") and answers 200 with
// the issue (see UpdateIssue), 404 for an unknown issue, 422 for another
// state.
func (s *Server) update(w http.ResponseWriter, owner, name, number string, body []byte) {
	var in struct {
		Title *string `json:"title"`
		Body  *string `json:"body"`
		State *string `json:"state"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"message": "Problems parsing JSON"})
		return
	}
	if in.State != nil && *in.State != "open" && *in.State != "closed" {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"message": "Validation Failed",
			"errors": []map[string]string{{"resource": "Issue", "code": "invalid", "field": "state"}}})
		return
	}
	n, err := strconv.Atoi(number)
	if err != nil {
		notFound(w)
		return
	}
	is, ok := s.UpdateIssue(owner, name, n, func(is *Issue) {
		if in.Title != nil {
			is.Title = *in.Title
		}
		if in.Body != nil {
			is.Body = *in.Body
		}
		if in.State != nil {
			is.State = *in.State
			if is.State == "open" {
				is.ClosedAt = nil
			}
		}
	})
	if !ok {
		notFound(w)
		return
	}
	writeJSON(w, http.StatusOK, is)
}
