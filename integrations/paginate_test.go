package integrations

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestEmbeddedPaginate(t *testing.T) {
	t.Parallel()
	c := defaultCatalog(t)
	githubLink := &Paginate{Type: PaginateLink, LinkRelInResponseHeader: "next", LimitNameInRequest: "per_page"}
	for name, want := range map[string]*Paginate{
		"github":     githubLink,
		"github-app": githubLink,
		"github-pat": githubLink,
		"slack": {Type: PaginateCursor, CursorPathInResponse: "response_metadata.next_cursor",
			CursorNameInRequest: "cursor", LimitNameInRequest: "limit"},
		"hubspot": {Type: PaginateCursor, CursorPathInResponse: "paging.next.after", CursorNameInRequest: "after",
			LimitNameInRequest: "limit", ResponsePath: "results"},
	} {
		p, ok := c.Get(name)
		if !ok {
			t.Errorf("%s missing", name)
			continue
		}
		if p.Proxy == nil {
			t.Errorf("%s has no proxy", name)
			continue
		}
		if diff := cmp.Diff(want, p.Proxy.Paginate); diff != "" {
			t.Errorf("%s: proxy.paginate (-want +got):\n%s", name, diff)
		}
	}
}

func TestLoadNangoYAMLPaginate(t *testing.T) {
	t.Parallel()
	const doc = `
cursor-api:
  display_name: Cursor API
  auth_mode: NONE
  proxy:
    base_url: https://api.example.com
    paginate:
      type: cursor
      cursor_path_in_response: meta.next
      cursor_name_in_request: page.after
      limit_name_in_request: page.size
      response_path: data.items
      in_body: true
      limit: "100"
offset-api:
  display_name: Offset API
  auth_mode: NONE
  proxy:
    base_url: https://api.example.com
    paginate:
      type: offset
      offset_name_in_request: page
      offset_start_value: 1
      offset_calculation_method: per-page
      limit_name_in_request: per_page
      limit: 50
      in_body: false
link-api:
  display_name: Link API
  auth_mode: NONE
  proxy:
    base_url: https://api.example.com
    paginate:
      type: link
      link_path_in_response_body: links.next
      in_body: null
`
	ps, err := LoadNangoYAML(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	yes, no := true, false
	want := []*Paginate{
		{Type: PaginateCursor, CursorPathInResponse: "meta.next", CursorNameInRequest: "page.after",
			LimitNameInRequest: "page.size", ResponsePath: "data.items", InBody: &yes, Limit: 100},
		{Type: PaginateOffset, OffsetNameInRequest: "page", OffsetStartValue: 1, OffsetCalculationMethod: OffsetPerPage,
			LimitNameInRequest: "per_page", Limit: 50, InBody: &no},
		{Type: PaginateLink, LinkPathInResponseBody: "links.next"},
	}
	if len(ps) != len(want) {
		t.Fatalf("got %d providers, want %d", len(ps), len(want))
	}
	for i, p := range ps {
		if diff := cmp.Diff(want[i], p.Proxy.Paginate); diff != "" {
			t.Errorf("%s: proxy.paginate (-want +got):\n%s", p.Name, diff)
		}
	}
	if _, err := NewCatalog(ps...); err != nil {
		t.Errorf("NewCatalog: %v", err)
	}

	// A bad entry loads, carrying its problem: Validate names it.
	bad, err := LoadNangoYAML(strings.NewReader(`
bad:
  display_name: Bad
  auth_mode: NONE
  proxy:
    paginate:
      limit: many
`))
	if err != nil {
		t.Fatal(err)
	}
	if err := bad[0].Validate(); err == nil || !strings.Contains(err.Error(), `provider "bad"`) || !strings.Contains(err.Error(), "want an integer") {
		t.Errorf("a non-numeric limit: %v, want an error naming the provider", err)
	}
}

func TestLoadOwnFormatPaginate(t *testing.T) {
	t.Parallel()
	ps, err := Load(strings.NewReader(`providers:
  - name: acme
    display_name: Acme
    auth_mode: NONE
    proxy:
      base_url: https://api.acme.test
      paginate:
        type: offset
        offset_name_in_request: offset
        limit_name_in_request: limit
        limit: 25
        in_body: true
`))
	if err != nil {
		t.Fatal(err)
	}
	yes := true
	want := &Paginate{Type: PaginateOffset, OffsetNameInRequest: "offset", LimitNameInRequest: "limit", Limit: 25, InBody: &yes}
	if diff := cmp.Diff(want, ps[0].Proxy.Paginate); diff != "" {
		t.Errorf("proxy.paginate (-want +got):\n%s", diff)
	}

	// Our format is strict: a misspelt key is a problem of its entry.
	ps, err = Load(strings.NewReader(`providers:
  - name: acme
    display_name: Acme
    auth_mode: NONE
    proxy:
      paginate:
        type: offset
        offset_name: offset
`))
	if err != nil {
		t.Fatal(err)
	}
	if err := ps[0].Validate(); err == nil || !strings.Contains(err.Error(), "offset_name") {
		t.Errorf("an unknown paginate key: %v, want an error naming it", err)
	}
}

func TestValidatePaginate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		pg   Paginate
		says string
	}{
		{Paginate{}, ""},
		{Paginate{LimitNameInRequest: "limit"}, ""}, // the type is left to functions
		{Paginate{Type: PaginateCursor}, ""},        // so are the names it needs
		{Paginate{Type: PaginateOffset, OffsetCalculationMethod: OffsetByResponseSize}, ""},
		{Paginate{Type: "page"}, `provider "acme": proxy.paginate.type: unknown pagination type "page" (want cursor, link or offset)`},
		{Paginate{Type: "Cursor"}, `unknown pagination type "Cursor"`},
		{Paginate{Type: PaginateOffset, OffsetCalculationMethod: "by-page"}, `proxy.paginate.offset_calculation_method: unknown method "by-page"`},
		{Paginate{Type: PaginateOffset, Limit: -1}, "proxy.paginate.limit: must not be negative"},
	} {
		pg := tc.pg
		p := &Provider{Name: "acme", DisplayName: "Acme", AuthMode: AuthModeNone, Proxy: &Proxy{Paginate: &pg}}
		_, err := NewCatalog(p)
		if tc.says == "" {
			if err != nil {
				t.Errorf("%+v: %v", tc.pg, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%+v: NewCatalog = %v, want an error saying %q", tc.pg, err, tc.says)
		}
	}
}

func TestPaginateClone(t *testing.T) {
	t.Parallel()
	yes := true
	p := &Provider{Name: "acme", Proxy: &Proxy{Paginate: &Paginate{Type: PaginateCursor, InBody: &yes}}}
	c := p.Clone()
	c.Proxy.Paginate.Type = PaginateLink
	*c.Proxy.Paginate.InBody = false
	if p.Proxy.Paginate.Type != PaginateCursor || !*p.Proxy.Paginate.InBody {
		t.Errorf("changing a clone changed the original: %+v", p.Proxy.Paginate)
	}
	if (*Paginate)(nil).Clone() != nil {
		t.Error("nil.Clone() != nil")
	}
}
