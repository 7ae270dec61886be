package githubtest_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/embedauth/connect/examples/functions/github/githubtest"
)

func call(t *testing.T, method, url, token, body string, out any) (int, http.Header) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %d %s", method, url, resp.StatusCode, b)
		}
	}
	return resp.StatusCode, resp.Header
}

func TestListPagesAndFilters(t *testing.T) {
	t.Parallel()
	s := githubtest.NewServer("tok")
	defer s.Close()
	for i := range 5 {
		is := githubtest.Issue{Title: "i"}
		if i == 1 {
			is.PullRequest = &githubtest.PullRequest{}
		}
		s.AddIssue("o", "r", is)
	}
	s.UpdateIssue("o", "r", 1, func(is *githubtest.Issue) { is.State = "closed" })

	if st, _ := call(t, "GET", s.URL+"/repos/o/r/issues", "", "", nil); st != 401 {
		t.Errorf("without a token: %d", st)
	}
	if st, _ := call(t, "GET", s.URL+"/repos/o/nope/issues", "tok", "", nil); st != 404 {
		t.Errorf("unknown repository: %d", st)
	}
	// Default: open ones, newest first, with the pull request.
	var items []githubtest.Issue
	call(t, "GET", s.URL+"/repos/o/r/issues", "tok", "", &items)
	if len(items) != 4 || items[0].Number != 5 || items[3].Number != 2 || items[3].PullRequest == nil {
		t.Errorf("default listing: %+v", items)
	}
	// All, by update ascending, 2 a page: the closed #1 was updated last.
	var nums []int
	url := s.URL + "/repos/o/r/issues?state=all&sort=updated&direction=asc&per_page=2"
	for pages := 0; url != ""; pages++ {
		if pages > 3 {
			t.Fatal("too many pages")
		}
		items = nil
		_, h := call(t, "GET", url, "tok", "", &items)
		for _, is := range items {
			nums = append(nums, is.Number)
		}
		url = ""
		for _, l := range strings.Split(h.Get("Link"), ", ") {
			if strings.HasSuffix(l, `rel="next"`) {
				url = strings.TrimSuffix(strings.TrimPrefix(l, "<"), `>; rel="next"`)
				if !strings.Contains(url, "/repositories/") || !strings.Contains(url, "sort=updated") {
					t.Errorf("next link %s", url)
				}
			}
		}
	}
	if want := []int{2, 3, 4, 5, 1}; !equal(nums, want) {
		t.Errorf("pages gave %v, want %v", nums, want)
	}
	// since: updated at or after.
	since := s.Issues("o", "r")[4].UpdatedAt.Format(time.RFC3339)
	items = nil
	call(t, "GET", s.URL+"/repos/o/r/issues?state=all&since="+since, "tok", "", &items)
	if len(items) != 2 {
		t.Errorf("since %s: %+v", since, items)
	}
}

func TestCreateAndUpdate(t *testing.T) {
	t.Parallel()
	s := githubtest.NewServer("")
	defer s.Close()
	s.AddRepo("o", "r")
	var is githubtest.Issue
	if st, _ := call(t, "POST", s.URL+"/repos/o/r/issues", "", `{"title":"T","body":"B"}`, &is); st != 201 ||
		is.Number != 1 || is.Title != "T" || is.Body != "B" || is.State != "open" || is.HTMLURL != "https://github.com/o/r/issues/1" {
		t.Fatalf("create: %d %+v", st, is)
	}
	if st, _ := call(t, "POST", s.URL+"/repos/o/r/issues", "", `{"body":"B"}`, nil); st != 422 {
		t.Errorf("create without a title: %d", st)
	}
	var up githubtest.Issue
	if st, _ := call(t, "PATCH", s.URL+"/repos/o/r/issues/1", "", `{"state":"closed"}`, &up); st != 200 ||
		up.State != "closed" || up.ClosedAt == nil || !up.UpdatedAt.After(is.UpdatedAt) {
		t.Fatalf("close: %d %+v", st, up)
	}
	if st, _ := call(t, "PATCH", s.URL+"/repos/o/r/issues/1", "", `{"state":"open"}`, &up); st != 200 || up.ClosedAt != nil {
		t.Errorf("reopen: %d %+v", st, up)
	}
	if st, _ := call(t, "PATCH", s.URL+"/repos/o/r/issues/9", "", `{"state":"closed"}`, nil); st != 404 {
		t.Errorf("unknown issue: %d", st)
	}
}

func equal(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
