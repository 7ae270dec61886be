package functions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/embedauth/connect/integrations"
	"github.com/google/go-cmp/cmp"
)

// pageReply is a fake provider's answer: a JSON body and Link headers.
type pageReply struct {
	body   string
	links  []string
	status int
	err    error
}

// fakeFetch answers the requests in order with replies, records a summary
// of each request, and fails the test when more requests come than
// replies.
type fakeFetch struct {
	t       *testing.T
	replies []pageReply
	got     []string
}

func (f *fakeFetch) fetch(_ context.Context, r PageRequest) (*Page, error) {
	n := len(f.got)
	f.got = append(f.got, summarize(r))
	if n >= len(f.replies) {
		f.t.Fatalf("request %d (%s): no reply left", n+1, f.got[n])
	}
	rep := f.replies[n]
	// The pager must not depend on what fetch does to the request.
	if r.Params != nil {
		r.Params.Set("mutated", "1")
	}
	if r.Body != nil {
		r.Body["mutated"] = true
	}
	if rep.err != nil {
		return nil, rep.err
	}
	status := rep.status
	if status == 0 {
		status = http.StatusOK
	}
	h := http.Header{}
	for _, l := range rep.links {
		h.Add("Link", l)
	}
	return &Page{Status: status, Header: h, Body: []byte(rep.body)}, nil
}

// summarize writes a request as "METHOD [override|]endpoint?query body".
func summarize(r PageRequest) string {
	s := r.Method + " "
	if r.BaseURLOverride != "" {
		s += r.BaseURLOverride + "|"
	}
	s += r.Endpoint
	if len(r.Params) > 0 {
		s += "?" + r.Params.Encode()
	}
	if r.Body != nil {
		b, err := json.Marshal(r.Body)
		if err != nil {
			b = []byte("(" + err.Error() + ")")
		}
		s += " " + string(b)
	}
	return s
}

func collect(seq func(yield func([]json.RawMessage, error) bool)) (pages []string, err error) {
	for page, e := range seq {
		if e != nil {
			if page != nil {
				return pages, fmt.Errorf("an error came with a page: %v", e)
			}
			return pages, e
		}
		b, _ := json.Marshal(page)
		pages = append(pages, string(b))
	}
	return pages, nil
}

func TestPaginate(t *testing.T) {
	t.Parallel()
	yes, no := true, false
	cursor := integrations.Paginate{Type: integrations.PaginateCursor, CursorNameInRequest: "cursor",
		CursorPathInResponse: "meta.next", ResponsePath: "data"}
	withLimit := func(p integrations.Paginate, name string, n int) integrations.Paginate {
		p.LimitNameInRequest, p.Limit = name, n
		return p
	}
	get := PageRequest{Endpoint: "/items", Params: url.Values{"q": {"x"}}}
	for _, tc := range []struct {
		name    string
		p       integrations.Paginate
		first   PageRequest
		replies []pageReply
		want    []string // requests
		pages   []string
		err     string
	}{
		{
			name:  "cursor",
			p:     withLimit(cursor, "limit", 2),
			first: get,
			replies: []pageReply{
				{body: `{"data":[1,2],"meta":{"next":"c1"}}`},
				{body: `{"data":[3],"meta":{"next":"  c2 "}}`},
				{body: `{"data":[{"id":"4"}],"meta":{"next":""}}`},
			},
			want:  []string{"GET /items?limit=2&q=x", "GET /items?cursor=c1&limit=2&q=x", "GET /items?cursor=c2&limit=2&q=x"},
			pages: []string{`[1,2]`, `[3]`, `[{"id":"4"}]`},
		},
		{
			name:  "cursor: a number is sent as written",
			p:     cursor,
			first: PageRequest{Method: "GET", Endpoint: "/items"},
			replies: []pageReply{
				{body: `{"data":[1],"meta":{"next":12345678901234567890}}`},
				{body: `{"data":[2],"meta":{"next":0}}`},
				{body: `{"data":[3],"meta":{"next":1.5e3}}`},
				{body: `{"data":[4],"meta":{"next":true}}`},
			},
			want:  []string{"GET /items", "GET /items?cursor=12345678901234567890", "GET /items?cursor=0", "GET /items?cursor=1.5e3"},
			pages: []string{`[1]`, `[2]`, `[3]`, `[4]`},
		},
		{
			name:    "cursor: ends when the cursor is missing",
			p:       cursor,
			first:   get,
			replies: []pageReply{{body: `{"data":[1],"meta":{}}`}},
			want:    []string{"GET /items?q=x"},
			pages:   []string{`[1]`},
		},
		{
			name:    "cursor: ends when the cursor is null",
			p:       cursor,
			first:   get,
			replies: []pageReply{{body: `{"data":[1],"meta":{"next":null}}`}},
			want:    []string{"GET /items?q=x"},
			pages:   []string{`[1]`},
		},
		{
			name:    "cursor: ends on an empty page, not yielded",
			p:       cursor,
			first:   get,
			replies: []pageReply{{body: `{"data":[1],"meta":{"next":"a"}}`}, {body: `{"data":[],"meta":{"next":"b"}}`}},
			want:    []string{"GET /items?q=x", "GET /items?cursor=a&q=x"},
			pages:   []string{`[1]`},
		},
		{
			name:    "cursor: a missing response path is an empty page",
			p:       cursor,
			first:   get,
			replies: []pageReply{{body: `{"meta":{"next":"a"}}`}},
			want:    []string{"GET /items?q=x"},
		},
		{
			name:    "cursor: an empty body is an empty page",
			p:       cursor,
			first:   get,
			replies: []pageReply{{body: ``, status: http.StatusNoContent}},
			want:    []string{"GET /items?q=x"},
		},
		{
			name: "cursor: POST sends the parameters in the body, dotted names expanded",
			p: integrations.Paginate{Type: integrations.PaginateCursor, CursorNameInRequest: "pagination.starting_after",
				CursorPathInResponse: "pages.next.starting_after", LimitNameInRequest: "pagination.per_page", Limit: 150,
				ResponsePath: "data"},
			first: PageRequest{Method: "post", Endpoint: "/search", Params: url.Values{"v": {"2"}},
				Body: map[string]any{"query": map[string]any{"a": 1}, "pagination": map[string]any{"other": true}, "pagination.x": 1}},
			replies: []pageReply{
				{body: `{"data":[1],"pages":{"next":{"starting_after":"c1"}}}`},
				{body: `{"data":[2],"pages":{"next":{}}}`},
			},
			want: []string{
				`post /search?v=2 {"pagination":{"other":true,"per_page":150},"pagination.x":1,"query":{"a":1}}`,
				`post /search?v=2 {"pagination":{"other":true,"per_page":150,"starting_after":"c1"},"pagination.x":1,"query":{"a":1}}`,
			},
			pages: []string{`[1]`, `[2]`},
		},
		{
			name:  "cursor: a dotted name replaces a value that is not an object",
			p:     integrations.Paginate{Type: integrations.PaginateCursor, CursorNameInRequest: "page.after", CursorPathInResponse: "next", ResponsePath: "items", InBody: &yes},
			first: PageRequest{Endpoint: "/q", Body: map[string]any{"page": 3}},
			replies: []pageReply{
				{body: `{"items":[1],"next":"n"}`},
				{body: `{"items":[2]}`},
			},
			want:  []string{`GET /q {"page":3}`, `GET /q {"page":{"after":"n"}}`},
			pages: []string{`[1]`, `[2]`},
		},
		{
			name: "cursor: dotted names merge into objects of any Go type",
			p: integrations.Paginate{Type: integrations.PaginateCursor, CursorNameInRequest: "page.after", CursorPathInResponse: "next",
				ResponsePath: "items", LimitNameInRequest: "page.size", Limit: 3},
			first: PageRequest{Method: http.MethodPatch, Endpoint: "/q", Body: map[string]any{
				"page": map[string]string{"sort": "asc"}, "filter": struct {
					IDs []int64 `json:"ids"`
				}{[]int64{1 << 62}}}},
			replies: []pageReply{
				{body: `{"items":[1],"next":"n"}`},
				{body: `{"items":[2]}`},
			},
			want: []string{
				`PATCH /q {"filter":{"ids":[4611686018427387904]},"page":{"size":3,"sort":"asc"}}`,
				`PATCH /q {"filter":{"ids":[4611686018427387904]},"page":{"after":"n","size":3,"sort":"asc"}}`,
			},
			pages: []string{`[1]`, `[2]`},
		},
		{
			name:    "a body that cannot be encoded is an error",
			p:       cursor,
			first:   PageRequest{Method: http.MethodPost, Endpoint: "/q", Body: map[string]any{"f": func() {}}},
			replies: nil,
			err:     "paginate POST /q: the body cannot be encoded as JSON",
		},
		{
			name:  "cursor: in_body false keeps a POST's parameters in the query",
			p:     func() integrations.Paginate { p := withLimit(cursor, "limit", 5); p.InBody = &no; return p }(),
			first: PageRequest{Method: http.MethodPost, Endpoint: "/items", Body: map[string]any{"filter": "x"}},
			replies: []pageReply{
				{body: `{"data":[1],"meta":{"next":"c"}}`},
				{body: `{"data":[2]}`},
			},
			want:  []string{`POST /items?limit=5 {"filter":"x"}`, `POST /items?cursor=c&limit=5 {"filter":"x"}`},
			pages: []string{`[1]`, `[2]`},
		},
		{
			name:  "cursor: the parameters replace the first request's of the same name",
			p:     withLimit(cursor, "limit", 2),
			first: PageRequest{Endpoint: "/items", Params: url.Values{"limit": {"9", "10"}, "cursor": {"old"}}},
			replies: []pageReply{
				{body: `{"data":[1],"meta":{"next":"c"}}`},
				{body: `{"data":[2]}`},
			},
			want:  []string{"GET /items?cursor=old&limit=2", "GET /items?cursor=c&limit=2"},
			pages: []string{`[1]`, `[2]`},
		},
		{
			name:    "the body itself is the page",
			p:       integrations.Paginate{Type: integrations.PaginateCursor, CursorNameInRequest: "c", CursorPathInResponse: "0.next"},
			first:   get,
			replies: []pageReply{{body: ` [{"next":""},2] `}},
			want:    []string{"GET /items?q=x"},
			pages:   []string{`[{"next":""},2]`},
		},
		{
			name:    "a response path leading to an object is an error",
			p:       cursor,
			first:   get,
			replies: []pageReply{{body: `{"data":{"items":[]}}`}},
			want:    []string{"GET /items?q=x"},
			err:     `paginate GET /items: page 1 (GET /items): response_path "data" leads to an object, not an array of records`,
		},
		{
			name:    "a body that is not an array is an error",
			p:       integrations.Paginate{Type: integrations.PaginateOffset, OffsetNameInRequest: "offset"},
			first:   get,
			replies: []pageReply{{body: `{"items":[]}`}},
			want:    []string{"GET /items?offset=0&q=x"},
			err:     "the body is an object, not an array of records (set response_path to the array)",
		},
		{
			name:    "a body that is not JSON is an error",
			p:       cursor,
			first:   get,
			replies: []pageReply{{body: `<html>`}},
			want:    []string{"GET /items?q=x"},
			err:     "page 1 (GET /items): the body is not JSON",
		},
		{
			name:    "a page outside 2xx is an error",
			p:       cursor,
			first:   get,
			replies: []pageReply{{body: `{"data":[1],"meta":{"next":"a"}}`}, {body: `{}`, status: 503}},
			want:    []string{"GET /items?q=x", "GET /items?cursor=a&q=x"},
			pages:   []string{`[1]`},
			err:     "page 2 (GET /items): the provider answered 503 Service Unavailable",
		},
		{
			name: "link in the header, GitHub style",
			p: integrations.Paginate{Type: integrations.PaginateLink, LinkRelInResponseHeader: "next",
				LimitNameInRequest: "per_page", Limit: 100},
			first: PageRequest{Endpoint: "/repos/o/r/issues", Params: url.Values{"state": {"all"}}},
			replies: []pageReply{
				{body: `[{"id":1}]`, links: []string{`<https://api.github.com/repositories/7/issues?state=all&per_page=100&page=2>; rel="next", <https://api.github.com/repositories/7/issues?page=5>; rel="last"`}},
				{body: `[{"id":2}]`, links: []string{`<https://api.github.com/repositories/7/issues?page=1>; rel="prev"`, `<https://api.github.com:8443/x%2Fy?page=3>; rel="next"`}},
				{body: `[]`, links: []string{`</relative/path?page=4>; rel=next`}},
				{body: `[{"id":4}]`},
			},
			want: []string{
				"GET /repos/o/r/issues?per_page=100&state=all",
				"GET https://api.github.com|/repositories/7/issues?page=2&per_page=100&state=all",
				"GET https://api.github.com:8443|/x%2Fy?page=3",
				"GET https://api.github.com:8443|/relative/path?page=4",
			},
			pages: []string{`[{"id":1}]`, `[{"id":2}]`, `[]`, `[{"id":4}]`},
		},
		{
			name:  "link in the body, relative",
			p:     integrations.Paginate{Type: integrations.PaginateLink, LinkPathInResponseBody: "links.next", ResponsePath: "items"},
			first: get,
			replies: []pageReply{
				{body: `{"items":[1],"links":{"next":"/v2/items?cursor=a%20b"}}`},
				{body: `{"links":{"next":"?cursor=c"}}`},
				{body: `{"items":[3],"links":{"next":null}}`},
			},
			want:  []string{"GET /items?q=x", "GET /v2/items?cursor=a+b", "GET /v2/items?cursor=c"},
			pages: []string{`[1]`, `[]`, `[3]`},
		},
		{
			name:  "link: a repeated link ends it",
			p:     integrations.Paginate{Type: integrations.PaginateLink, LinkPathInResponseBody: "next", ResponsePath: "items"},
			first: get,
			replies: []pageReply{
				{body: `{"items":[1],"next":"/p2"}`},
				{body: `{"items":[2],"next":"/p2"}`},
			},
			want:  []string{"GET /items?q=x", "GET /p2"},
			pages: []string{`[1]`, `[2]`},
		},
		{
			name:  "link: a POST keeps its body, with the limit",
			p:     integrations.Paginate{Type: integrations.PaginateLink, LinkPathInResponseBody: "next", ResponsePath: "items", LimitNameInRequest: "size", Limit: 10},
			first: PageRequest{Method: http.MethodPost, Endpoint: "/search", Body: map[string]any{"q": "x"}},
			replies: []pageReply{
				{body: `{"items":[1],"next":"https://other.example/search?page=2"}`},
				{body: `{"items":[2],"next":"  "}`},
			},
			want:  []string{`POST /search {"q":"x","size":10}`, `POST https://other.example|/search?page=2 {"q":"x","size":10}`},
			pages: []string{`[1]`, `[2]`},
		},
		{
			name:    "link: a link that is not http(s) is an error",
			p:       integrations.Paginate{Type: integrations.PaginateLink, LinkPathInResponseBody: "next", ResponsePath: "items"},
			first:   get,
			replies: []pageReply{{body: `{"items":[1],"next":"ftp://example.com/x"}`}},
			want:    []string{"GET /items?q=x"},
			pages:   []string{`[1]`},
			err:     `the next page's link "ftp://example.com/x" is not an http(s) URL`,
		},
		{
			name:    "link: a link that is not a string is an error",
			p:       integrations.Paginate{Type: integrations.PaginateLink, LinkPathInResponseBody: "next", ResponsePath: "items"},
			first:   get,
			replies: []pageReply{{body: `{"items":[],"next":{"href":"/x"}}`}},
			want:    []string{"GET /items?q=x"},
			pages:   []string{`[]`},
			err:     `link_path_in_response_body "next" leads to an object, not a URL`,
		},
		{
			name:  "offset by response size",
			p:     integrations.Paginate{Type: integrations.PaginateOffset, OffsetNameInRequest: "offset", LimitNameInRequest: "limit", Limit: 2},
			first: get,
			replies: []pageReply{
				{body: `[1,2]`},
				{body: `[3,4]`},
				{body: `[5]`},
			},
			want:  []string{"GET /items?limit=2&offset=0&q=x", "GET /items?limit=2&offset=2&q=x", "GET /items?limit=2&offset=4&q=x"},
			pages: []string{`[1,2]`, `[3,4]`, `[5]`},
		},
		{
			name: "offset per page, from 1, in the body",
			p: integrations.Paginate{Type: integrations.PaginateOffset, OffsetNameInRequest: "paging.page",
				OffsetStartValue: 1, OffsetCalculationMethod: integrations.OffsetPerPage, ResponsePath: "rows"},
			first: PageRequest{Method: http.MethodPut, Endpoint: "/rows"},
			replies: []pageReply{
				{body: `{"rows":[1,2,3]}`},
				{body: `{"rows":[4]}`},
				{body: `{"rows":[]}`},
			},
			want:  []string{`PUT /rows {"paging":{"page":1}}`, `PUT /rows {"paging":{"page":2}}`, `PUT /rows {"paging":{"page":3}}`},
			pages: []string{`[1,2,3]`, `[4]`},
		},
		{
			name:    "offset: ends on an empty page",
			p:       integrations.Paginate{Type: integrations.PaginateOffset, OffsetNameInRequest: "skip"},
			first:   PageRequest{Endpoint: "/e"},
			replies: []pageReply{{body: `[1]`}, {body: `null`}},
			want:    []string{"GET /e?skip=0", "GET /e?skip=1"},
			pages:   []string{`[1]`},
		},
		{
			name:    "the error of fetch ends it",
			p:       cursor,
			first:   get,
			replies: []pageReply{{body: `{"data":[1],"meta":{"next":"a"}}`}, {err: errors.New("upstream refused")}},
			want:    []string{"GET /items?q=x", "GET /items?cursor=a&q=x"},
			pages:   []string{`[1]`},
			err:     "upstream refused",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := &fakeFetch{t: t, replies: tc.replies}
			firstBefore := summarize(tc.first)
			pages, err := collect(Paginate(context.Background(), f.fetch, tc.first, tc.p))
			if tc.err == "" && err != nil {
				t.Errorf("error: %v", err)
			}
			if tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Errorf("error %v, want one saying %q", err, tc.err)
			}
			if diff := cmp.Diff(tc.want, f.got); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.pages, pages); diff != "" {
				t.Errorf("pages (-want +got):\n%s", diff)
			}
			if after := summarize(tc.first); after != firstBefore {
				t.Errorf("the first request changed from %s to %s", firstBefore, after)
			}
		})
	}
}

func TestPaginateConfigErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		p    integrations.Paginate
		says string
	}{
		{integrations.Paginate{}, "paginate GET /x: no pagination type"},
		{integrations.Paginate{Type: "page"}, `unknown pagination type "page"`},
		{integrations.Paginate{Type: integrations.PaginateCursor, CursorNameInRequest: "c"}, "cursor pagination needs cursor_name_in_request and cursor_path_in_response"},
		{integrations.Paginate{Type: integrations.PaginateCursor, CursorPathInResponse: "c"}, "cursor pagination needs"},
		{integrations.Paginate{Type: integrations.PaginateLink}, "link pagination needs link_rel_in_response_header or link_path_in_response_body"},
		{integrations.Paginate{Type: integrations.PaginateOffset}, "offset pagination needs offset_name_in_request"},
		{integrations.Paginate{Type: integrations.PaginateOffset, OffsetNameInRequest: "o", OffsetCalculationMethod: "x"}, `unknown offset_calculation_method "x"`},
		{integrations.Paginate{Type: integrations.PaginateOffset, OffsetNameInRequest: "o", Limit: 10}, "limit is set without limit_name_in_request"},
		{integrations.Paginate{Type: integrations.PaginateOffset, OffsetNameInRequest: "o", Limit: -1, LimitNameInRequest: "l"}, "limit -1 is negative"},
		{integrations.Paginate{Type: integrations.PaginateOffset, OffsetNameInRequest: "o", ResponsePath: "a[0"}, `response_path: the path "a[0" has an unclosed '['`},
		{integrations.Paginate{Type: integrations.PaginateCursor, CursorNameInRequest: "c", CursorPathInResponse: `a["b`}, "cursor_path_in_response: the path"},
	} {
		f := &fakeFetch{t: t}
		_, err := collect(Paginate(context.Background(), f.fetch, PageRequest{Endpoint: "/x"}, tc.p))
		if err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%+v: %v, want an error saying %q", tc.p, err, tc.says)
		}
		if len(f.got) != 0 {
			t.Errorf("%+v: %d requests made", tc.p, len(f.got))
		}
	}
	_, err := collect(Paginate(context.Background(), nil, PageRequest{}, integrations.Paginate{Type: integrations.PaginateLink, LinkRelInResponseHeader: "next"}))
	if err == nil || !strings.Contains(err.Error(), "no fetch function") {
		t.Errorf("nil fetch: %v", err)
	}
	nilPage := func(context.Context, PageRequest) (*Page, error) { return nil, nil }
	_, err = collect(Paginate(context.Background(), nilPage, PageRequest{}, integrations.Paginate{Type: integrations.PaginateLink, LinkRelInResponseHeader: "next"}))
	if err == nil || !strings.Contains(err.Error(), "returned no page and no error") {
		t.Errorf("nil page: %v", err)
	}
}

// endless answers every request with a full page and a next cursor.
func endless(calls *int) func(context.Context, PageRequest) (*Page, error) {
	return func(_ context.Context, r PageRequest) (*Page, error) {
		*calls++
		return &Page{Status: 200, Body: fmt.Appendf(nil, `{"data":[%d],"next":"c%d"}`, *calls, *calls)}, nil
	}
}

func TestPaginateStops(t *testing.T) {
	t.Parallel()
	p := integrations.Paginate{Type: integrations.PaginateCursor, CursorNameInRequest: "c", CursorPathInResponse: "next", ResponsePath: "data"}

	calls := 0
	pages, err := collect(paginate(context.Background(), endless(&calls), PageRequest{Endpoint: "/x"}, p, 3))
	if len(pages) != 3 || calls != 3 || err == nil || !strings.Contains(err.Error(), "paginate GET /x: stopped after 3 pages") {
		t.Errorf("cap of 3: %d pages, %d calls, %v", len(pages), calls, err)
	}

	// A consumer that stops early stops the requests.
	calls = 0
	n := 0
	for page, err := range Paginate(context.Background(), endless(&calls), PageRequest{Endpoint: "/x"}, p) {
		if err != nil || len(page) != 1 {
			t.Fatalf("page %v, %v", page, err)
		}
		if n++; n == 2 {
			break
		}
	}
	if calls != 2 {
		t.Errorf("break after 2 pages: %d calls", calls)
	}

	// A cancelled context ends it before the next request.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	calls = 0
	var gotErr error
	for _, err := range Paginate(ctx, endless(&calls), PageRequest{Endpoint: "/x"}, p) {
		if err != nil {
			gotErr = err
			break
		}
		cancel()
	}
	if calls != 1 || !errors.Is(gotErr, context.Canceled) {
		t.Errorf("cancelled: %d calls, %v", calls, gotErr)
	}
}

func TestMergePaginate(t *testing.T) {
	t.Parallel()
	yes, no := true, false
	provider := &integrations.Paginate{Type: integrations.PaginateCursor, CursorPathInResponse: "paging.next.after",
		CursorNameInRequest: "after", LimitNameInRequest: "limit", ResponsePath: "results", InBody: &yes, Limit: 10}
	got := MergePaginate(provider, &integrations.Paginate{ResponsePath: "data", Limit: 100, InBody: &no})
	want := integrations.Paginate{Type: integrations.PaginateCursor, CursorPathInResponse: "paging.next.after",
		CursorNameInRequest: "after", LimitNameInRequest: "limit", ResponsePath: "data", InBody: &no, Limit: 100}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("MergePaginate (-want +got):\n%s", diff)
	}
	*got.InBody = true
	if no {
		t.Error("MergePaginate shares InBody with the call")
	}
	if diff := cmp.Diff(integrations.Paginate{}, MergePaginate(nil, nil)); diff != "" {
		t.Errorf("MergePaginate(nil, nil) (-want +got):\n%s", diff)
	}
	call := integrations.Paginate{Type: integrations.PaginateOffset, OffsetNameInRequest: "o", OffsetStartValue: 1,
		OffsetCalculationMethod: integrations.OffsetPerPage, LinkRelInResponseHeader: "next", LinkPathInResponseBody: "l"}
	if diff := cmp.Diff(call, MergePaginate(nil, &call)); diff != "" {
		t.Errorf("MergePaginate(nil, call) (-want +got):\n%s", diff)
	}
	if got := MergePaginate(provider, nil); got.InBody == provider.InBody || !cmp.Equal(got, *provider) {
		t.Errorf("MergePaginate(provider, nil) = %+v, want a copy of the provider's", got)
	}
}

func TestLinkHeaderTarget(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		values []string
		rel    string
		want   string
	}{
		{[]string{`<https://a/2>; rel="next", <https://a/9>; rel="last"`}, "next", "https://a/2"},
		{[]string{`<https://a/2>; rel="next", <https://a/9>; rel="last"`}, "last", "https://a/9"},
		{[]string{`<https://a/1>; rel="prev"`, `<https://a/3>; rel=next`}, "next", "https://a/3"},
		{[]string{`<https://a/3>; rel="Next Last"`}, "next", "https://a/3"},
		{[]string{`<https://a/3>; rel="next last"`}, "LAST", "https://a/3"},
		{[]string{`<https://a/x,y>; title="a, b; c"; rel="next"`}, "next", "https://a/x,y"},
		{[]string{`<https://a/3>;rel=next;type=json, <https://a/4>; rel = "next"`}, "next", "https://a/4"},
		{[]string{`<https://a/3>; nofollow; rel="next"`}, "next", "https://a/3"},
		{[]string{`<https://a/3>; rel="prev"`}, "next", ""},
		{[]string{`<https://a/3>`}, "next", ""},
		{[]string{`garbage`, `<https://a/3`}, "next", ""},
		{[]string{`<https://a/3>; rel="next`}, "next", "https://a/3"},
		{nil, "next", ""},
	} {
		if got := linkHeaderTarget(tc.values, tc.rel); got != tc.want {
			t.Errorf("linkHeaderTarget(%q, %q) = %q, want %q", tc.values, tc.rel, got, tc.want)
		}
	}
}

func TestLookupLodashPath(t *testing.T) {
	t.Parallel()
	const body = `{"a":{"b":[{"c":1},{"c":"two"}],"d.e":true,"":{"x":1}},"a.b":"whole key","n":null,"arr":[[0,1]]}`
	for _, tc := range []struct {
		path  string
		want  string
		found bool
	}{
		{"", body, true},
		{"a.b.0.c", `1`, true},
		{"a.b[1].c", `"two"`, true},
		{"a.b.1", `{"c":"two"}`, true},
		{`a["d.e"]`, `true`, true},
		{`a['d.e']`, `true`, true},
		{"a.b", `"whole key"`, true}, // the whole path as a key of the root, as lodash does
		{"a..x", `1`, true},          // the empty key
		{"arr[0][1]", `1`, true},
		{"arr.0.1", `1`, true},
		{"n", `null`, true},
		{"n.x", ``, false},
		{"a.b.2", ``, false},
		{"a.b.01", ``, false},
		{"a.b.-1", ``, false},
		{"a.b.0.c.d", ``, false},
		{"missing", ``, false},
		{"a.zz.c", ``, false},
	} {
		got, found, err := lookupLodashPath([]byte(body), tc.path)
		if err != nil || found != tc.found || string(got) != tc.want {
			t.Errorf("lookupLodashPath(%q) = %s, %v, %v; want %s, %v", tc.path, got, found, err, tc.want, tc.found)
		}
	}
	if _, _, err := lookupLodashPath([]byte(`{"a":`), "a"); err == nil {
		t.Error("a body that is not JSON: no error")
	}
	if v, found, err := lookupLodashPath([]byte("  "), "a"); err != nil || found || v != nil {
		t.Errorf("an empty body: %s %v %v", v, found, err)
	}
	for path, says := range map[string]string{
		"a[0":                          "unclosed '['",
		`a["b`:                         "unclosed quote",
		`a["b"x]`:                      "quote not followed by ']'",
		strings.Repeat("a.", 70) + "a": "more than 64 segments",
	} {
		if _, _, err := lookupLodashPath([]byte(`{}`), path); err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("lookupLodashPath(%.30q) = %v, want an error saying %q", path, err, says)
		}
	}
}

func TestParseLodashPath(t *testing.T) {
	t.Parallel()
	for path, want := range map[string][]string{
		"a":            {"a"},
		"a.b.c":        {"a", "b", "c"},
		"a[0].b":       {"a", "0", "b"},
		"a.[0]":        {"a", "0"},
		"[0]":          {"0"},
		".a":           {"", "a"},
		"a.":           {"a", ""},
		"a..b":         {"a", "", "b"},
		`a["b.c"].d`:   {"a", "b.c", "d"},
		`a['x\'y']`:    {"a", "x'y"},
		"a[b]":         {"a", "b"},
		"results[0]":   {"results", "0"},
		"paging.next.": {"paging", "next", ""},
	} {
		got, err := parseLodashPath(path)
		if err != nil {
			t.Errorf("parseLodashPath(%q): %v", path, err)
			continue
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("parseLodashPath(%q) (-want +got):\n%s", path, diff)
		}
	}
}

func FuzzLookupLodashPath(f *testing.F) {
	f.Add([]byte(`{"a":{"b":[{"c":1}]}}`), "a.b.0.c")
	f.Add([]byte(`{"a.b":1}`), "a.b")
	f.Add([]byte(`[[1,2],[3]]`), "[1][0]")
	f.Add([]byte(`{"a":{"x y":2}}`), `a["x y"]`)
	f.Add([]byte(``), "")
	f.Add([]byte(`{"a":`), "a")
	f.Add([]byte(`{"":{"":1}}`), "..")
	f.Add([]byte(`<https://a/2>; rel="next", <https://a/9>; title="x;y"; rel=last`), "next")
	f.Fuzz(func(t *testing.T, body []byte, path string) {
		v, found, err := lookupLodashPath(body, path)
		if err != nil {
			if found || v != nil {
				t.Fatalf("lookupLodashPath(%q, %q) = %s, %v with an error %v", body, path, v, found, err)
			}
			return
		}
		if found != (v != nil) {
			t.Fatalf("lookupLodashPath(%q, %q): found %v but value %q", body, path, found, v)
		}
		if found && !json.Valid(v) {
			t.Fatalf("lookupLodashPath(%q, %q) = %q: not JSON", body, path, v)
		}
		// Nor do the other readers of a page.
		_, _ = pageRecords(body, path)
		_, _ = pageCursor(body, path)
		_ = linkHeaderTarget([]string{string(body)}, path)
	})
}

// TestPaginatePages: each page comes with its response and the parameter
// of the next page (nil on the last), and an iteration started from a
// page's NextPageParam (as a checkpoint reads it back) makes the requests
// the rest of the first iteration made.
func TestPaginatePages(t *testing.T) {
	t.Parallel()
	cursor := integrations.Paginate{Type: integrations.PaginateCursor, CursorNameInRequest: "cursor",
		CursorPathInResponse: "next", ResponsePath: "data", LimitNameInRequest: "limit", Limit: 2}
	offset := integrations.Paginate{Type: integrations.PaginateOffset, OffsetNameInRequest: "offset",
		LimitNameInRequest: "limit", Limit: 2, OffsetStartValue: 10}
	perPage := integrations.Paginate{Type: integrations.PaginateOffset, OffsetNameInRequest: "page",
		OffsetCalculationMethod: integrations.OffsetPerPage, OffsetStartValue: 1}
	link := integrations.Paginate{Type: integrations.PaginateLink, LinkPathInResponseBody: "next", ResponsePath: "data"}
	get := PageRequest{Endpoint: "/items", Params: url.Values{"q": {"x"}}}
	for _, tc := range []struct {
		name    string
		p       integrations.Paginate
		replies []pageReply
		want    []string // requests
		next    []any    // the NextPageParam of each page
	}{
		{
			name: "cursor",
			p:    cursor,
			replies: []pageReply{
				{body: `{"data":[1,2],"next":"c1"}`},
				{body: `{"data":[3,4],"next":17}`},
				{body: `{"data":[5],"next":""}`},
			},
			want: []string{"GET /items?limit=2&q=x", "GET /items?cursor=c1&limit=2&q=x", "GET /items?cursor=17&limit=2&q=x"},
			next: []any{"c1", json.Number("17"), nil},
		},
		{
			name: "cursor ended by an empty page",
			p:    cursor,
			replies: []pageReply{
				{body: `{"data":[1,2],"next":"c1"}`},
				{body: `{"data":[],"next":"c2"}`},
			},
			want: []string{"GET /items?limit=2&q=x", "GET /items?cursor=c1&limit=2&q=x"},
			next: []any{"c1"},
		},
		{
			name: "offset",
			p:    offset,
			replies: []pageReply{
				{body: `[1,2]`},
				{body: `[3,4]`},
				{body: `[5]`},
			},
			want: []string{"GET /items?limit=2&offset=10&q=x", "GET /items?limit=2&offset=12&q=x", "GET /items?limit=2&offset=14&q=x"},
			next: []any{12, 14, nil},
		},
		{
			name:    "offset per page",
			p:       perPage,
			replies: []pageReply{{body: `[1]`}, {body: `[2]`}, {body: `[]`}},
			want:    []string{"GET /items?page=1&q=x", "GET /items?page=2&q=x", "GET /items?page=3&q=x"},
			next:    []any{2, 3},
		},
		{
			name: "link",
			p:    link,
			replies: []pageReply{
				{body: `{"data":[1],"next":"/items?page=2"}`},
				{body: `{"data":[2],"next":"https://api.example.com/v2/items?page=3"}`},
				{body: `{"data":[3]}`},
			},
			want: []string{"GET /items?q=x", "GET /items?page=2", "GET https://api.example.com|/v2/items?page=3"},
			next: []any{"/items?page=2", "https://api.example.com/v2/items?page=3", nil},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := &fakeFetch{t: t, replies: tc.replies}
			var next []any
			for page, err := range PaginatePages(context.Background(), f.fetch, get, tc.p, nil) {
				if err != nil {
					t.Fatal(err)
				}
				if page.Response == nil || page.Response.Status != 200 || len(page.Response.Body) == 0 {
					t.Errorf("page %d has the response %+v", len(next)+1, page.Response)
				}
				next = append(next, page.NextPageParam)
			}
			if diff := cmp.Diff(tc.want, f.got); diff != "" {
				t.Fatalf("requests (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.next, next); diff != "" {
				t.Fatalf("NextPageParam of each page (-want +got):\n%s", diff)
			}
			// Resume after each page, from its NextPageParam as a
			// checkpoint holds it once read back (numbers as float64).
			for i, from := range tc.next {
				if from == nil {
					continue
				}
				b, _ := json.Marshal(Checkpoint{"from": from})
				cp, err := DecodeCheckpoint(b)
				if err != nil {
					t.Fatal(err)
				}
				rf := &fakeFetch{t: t, replies: tc.replies[i+1:]}
				var again []any
				for page, err := range PaginatePages(context.Background(), rf.fetch, get, tc.p, cp["from"]) {
					if err != nil {
						t.Fatalf("resumed from %v: %v", from, err)
					}
					again = append(again, page.NextPageParam)
				}
				if diff := cmp.Diff(tc.want[i+1:], rf.got); diff != "" {
					t.Errorf("resumed from %v: requests (-want +got):\n%s", from, diff)
				}
				want := tc.next[i+1:]
				if len(want) == 0 {
					want = nil
				}
				if diff := cmp.Diff(want, again); diff != "" {
					t.Errorf("resumed from %v: NextPageParam (-want +got):\n%s", from, diff)
				}
			}
		})
	}
}

// TestPaginatePagesFrom: a from that does not fit the type ends the
// iteration before any request; an empty cursor or link starts at the
// first page; a link that is not an http(s) URL is refused.
func TestPaginatePagesFrom(t *testing.T) {
	t.Parallel()
	cursor := integrations.Paginate{Type: integrations.PaginateCursor, CursorNameInRequest: "c", CursorPathInResponse: "n"}
	offset := integrations.Paginate{Type: integrations.PaginateOffset, OffsetNameInRequest: "o"}
	link := integrations.Paginate{Type: integrations.PaginateLink, LinkRelInResponseHeader: "next"}
	for _, tc := range []struct {
		p    integrations.Paginate
		from any
		says string
	}{
		{cursor, true, "from: bool true is not a cursor"},
		{cursor, map[string]any{}, "is not a cursor"},
		{cursor, json.Number("x1"), "is not a cursor"},
		{offset, "10", "from: string 10 is not an offset"},
		{offset, 1.5, "is not an offset"},
		{offset, json.Number("2.5"), "is not an offset"},
		{link, 3, "from: int 3 is not a link"},
		{link, "ftp://files.example.com/x", "is not an http(s) URL"},
	} {
		f := &fakeFetch{t: t}
		_, err := collect(recordsOf(PaginatePages(context.Background(), f.fetch, PageRequest{Endpoint: "/x"}, tc.p, tc.from)))
		if err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s from %#v: %v, want an error saying %q", tc.p.Type, tc.from, err, tc.says)
		}
		if len(f.got) != 0 {
			t.Errorf("%s from %#v: %d requests made", tc.p.Type, tc.from, len(f.got))
		}
	}
	for _, tc := range []struct {
		p    integrations.Paginate
		from any
		want string
	}{
		{cursor, "  ", "GET /x"},
		{cursor, " k ", "GET /x?c=k"},
		{cursor, float64(1e15), "GET /x?c=1000000000000000"},
		{cursor, 0.25, "GET /x?c=0.25"},
		{cursor, json.Number("12345678901234567890"), "GET /x?c=12345678901234567890"},
		{offset, int64(40), "GET /x?o=40"},
		{offset, json.Number("7"), "GET /x?o=7"},
		{link, "", "GET /x"},
		{link, "/x?page=9", "GET /x?page=9"},
	} {
		f := &fakeFetch{t: t, replies: []pageReply{{body: `[]`}}}
		if _, err := collect(recordsOf(PaginatePages(context.Background(), f.fetch, PageRequest{Endpoint: "/x"}, tc.p, tc.from))); err != nil {
			t.Errorf("%s from %#v: %v", tc.p.Type, tc.from, err)
		}
		if len(f.got) != 1 || f.got[0] != tc.want {
			t.Errorf("%s from %#v: requests %q, want %q", tc.p.Type, tc.from, f.got, tc.want)
		}
	}
}
