package functions

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/internal/jsonvalue"
)

// Page is one response of a paged API, as the fetch function of Paginate
// returns it.
type Page struct {
	// Status is the HTTP status: Paginate refuses a page outside 2xx.
	Status int
	Header http.Header
	// Body is the response body: JSON, or empty.
	Body []byte
}

// PageResult is one page of a paged list, as PaginatePages yields it.
type PageResult struct {
	// Records are the page's records: the elements of the array at the
	// settings' response_path.
	Records []json.RawMessage
	// Response is the page's response.
	Response *Page
	// NextPageParam is what the request of the next page carries
	// (Nango's on_page nextPageParam): for cursor pagination the cursor
	// (a string, or a json.Number for a cursor the provider wrote as a
	// number), for offset pagination the offset (an int), for link
	// pagination the link (a string, as the provider wrote it). It is
	// nil when this page is the last one. Saved in a checkpoint once the
	// page's records are saved, it is where a later run resumes: pass it
	// as the from of PaginatePages.
	NextPageParam any
}

// PageRequest is one request Paginate asks its fetch function to make,
// relative to the provider's base URL.
type PageRequest struct {
	// Method is the HTTP method; Paginate sends "GET" for an empty one.
	Method string
	// Endpoint is the path, relative to the base URL (or to
	// BaseURLOverride).
	Endpoint string
	// Params are the query parameters.
	Params url.Values
	// Body is the JSON body, nil for none.
	Body map[string]any
	// BaseURLOverride, when set, replaces the provider's base URL: it is
	// the scheme and host of an absolute next-page link. The fetch
	// function must hold it to the same policy as a function's own
	// override (the provider's hosts; no internal addresses), since it
	// comes from the provider's response.
	BaseURLOverride string
}

// MaxPages is how many pages Paginate reads at most before it ends with
// an error: an API that never stops paging is a bug, not a data set.
const MaxPages = 100_000

// MergePaginate returns the pagination settings of a function's call:
// the provider's (proxy.paginate) with the call's non-zero fields over
// them, as Nango spreads the call's paginate object over the provider's.
// Either may be nil.
func MergePaginate(provider, call *integrations.Paginate) integrations.Paginate {
	var p integrations.Paginate
	if provider != nil {
		p = *provider.Clone()
	}
	if call == nil {
		return p
	}
	c := call.Clone()
	set := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	set(&p.Type, c.Type)
	set(&p.LimitNameInRequest, c.LimitNameInRequest)
	set(&p.CursorPathInResponse, c.CursorPathInResponse)
	set(&p.CursorNameInRequest, c.CursorNameInRequest)
	set(&p.LinkRelInResponseHeader, c.LinkRelInResponseHeader)
	set(&p.LinkPathInResponseBody, c.LinkPathInResponseBody)
	set(&p.OffsetNameInRequest, c.OffsetNameInRequest)
	set(&p.OffsetCalculationMethod, c.OffsetCalculationMethod)
	set(&p.ResponsePath, c.ResponsePath)
	if c.OffsetStartValue != 0 {
		p.OffsetStartValue = c.OffsetStartValue
	}
	if c.InBody != nil {
		p.InBody = c.InBody
	}
	if c.Limit != 0 {
		p.Limit = c.Limit
	}
	return p
}

// Paginate reads a paged list: it calls fetch with first, then with the
// request of each next page, and yields the records of each page (the
// elements of a JSON array) until the last, as Nango's paginate does
// (functions.md §1.2), for the three types of p:
//
//   - cursor: after each page, the value at p.CursorPathInResponse in its
//     body (a string, trimmed, or a number, sent as written) is sent as
//     p.CursorNameInRequest. It ends on an empty page (not yielded) or
//     when the cursor is missing, null, an empty string or another kind
//     of value.
//   - link: the next page is at the link of relation
//     p.LinkRelInResponseHeader in the Link header, or at the string at
//     p.LinkPathInResponseBody in the body. An absolute link (http or
//     https) becomes the BaseURLOverride (scheme and host) and the
//     Endpoint and Params (path and query) of the next request; a
//     relative one only the Endpoint and Params (its query; the path
//     stays when it has none). Next requests carry the link's query
//     alone, not first's Params nor the limit (a body is kept). It ends
//     when the link is missing, empty, or the same as the last one; empty
//     pages are yielded and do not end it.
//   - offset: p.OffsetNameInRequest counts from p.OffsetStartValue, by the
//     size of each page (integrations.OffsetByResponseSize, the default)
//     or by one (integrations.OffsetPerPage). It ends on an empty page
//     (not yielded) or a page shorter than p.Limit.
//
// Common settings: p.Limit, when not zero, is sent as
// p.LimitNameInRequest. The records are the array at p.ResponsePath in
// the body (a lodash-style path: "data.items", "results[0].rows"), or
// the body itself without one; missing or null reads as an empty page,
// and any other value ends the iteration with an error that says where.
// The pagination parameters go in the JSON body when p.InBody says so
// (by default for POST, PUT and PATCH), their dotted names expanded into
// nested objects ("page.size": {"page":{"size":n}}); otherwise in the
// query, where they replace first's parameters of the same name. first's
// own Params and Body are kept and never modified; the names of its Body
// are not expanded (Nango expands them too).
//
// An error of fetch (returned as is), a page outside 2xx, a body that is
// not JSON, a next link that is not an http(s) URL, a cancelled ctx
// (checked before each request), settings that lack what their type
// needs, and reading more than MaxPages pages each end the iteration with
// an error, yielded with a nil page (after the records of the page whose
// next link was wrong). fetch should itself return an error for a
// response outside 2xx (such as the proxy's *UpstreamError) so that its
// caller sees the upstream's answer. The iteration is not safe to use from
// several goroutines; each range over it starts again from first.
//
// Paginate yields the records of each page; PaginatePages yields each
// page with its next-page parameter, to checkpoint and resume.
func Paginate(ctx context.Context, fetch func(ctx context.Context, r PageRequest) (*Page, error), first PageRequest, p integrations.Paginate) iter.Seq2[[]json.RawMessage, error] {
	return paginate(ctx, fetch, first, p, MaxPages)
}

// PaginatePages is Paginate yielding each page whole: its records, its
// response and its NextPageParam (Nango's on_page callback, as the body of
// the range loop), and starting, when from is not nil, at the page an
// earlier page's NextPageParam names instead of the first:
//
//   - cursor: from (a string, or a number: a json.Number, an integer or a
//     float64 as a checkpoint reads it back) is sent as
//     p.CursorNameInRequest on the first request; an empty string starts
//     at the first page;
//   - offset: from (an integer, or an integral json.Number or float64) is
//     the offset of the first request, in place of p.OffsetStartValue;
//   - link: from (a string) is followed as a next-page link is: the first
//     request is the link's.
//
// A from of another kind ends the iteration with an error before any
// request. A sync that checkpoints per page saves each page's records,
// then its NextPageParam, and clears the checkpoint once the loop ends
// without an error (see the example).
func PaginatePages(ctx context.Context, fetch func(ctx context.Context, r PageRequest) (*Page, error), first PageRequest, p integrations.Paginate, from any) iter.Seq2[*PageResult, error] {
	return paginatePages(ctx, fetch, first, p, from, MaxPages)
}

// paginate is Paginate with a bound on the pages, for tests.
func paginate(ctx context.Context, fetch func(ctx context.Context, r PageRequest) (*Page, error), first PageRequest, p integrations.Paginate, maxPages int) iter.Seq2[[]json.RawMessage, error] {
	return recordsOf(paginatePages(ctx, fetch, first, p, nil, maxPages))
}

// recordsOf yields the records of each page of pages.
func recordsOf(pages iter.Seq2[*PageResult, error]) iter.Seq2[[]json.RawMessage, error] {
	return func(yield func([]json.RawMessage, error) bool) {
		for page, err := range pages {
			var records []json.RawMessage
			if page != nil {
				records = page.Records
			}
			if !yield(records, err) {
				return
			}
		}
	}
}

// paginatePages is PaginatePages with a bound on the pages.
func paginatePages(ctx context.Context, fetch func(ctx context.Context, r PageRequest) (*Page, error), first PageRequest, p integrations.Paginate, from any, maxPages int) iter.Seq2[*PageResult, error] {
	return func(yield func(*PageResult, error) bool) {
		pg, err := newPager(fetch, first, p)
		if err == nil && from != nil {
			err = pg.resume(from)
		}
		if err != nil {
			yield(nil, err)
			return
		}
		for n := 1; ; n++ {
			if n > maxPages {
				yield(nil, fmt.Errorf("paginate %s: stopped after %d pages: the API keeps answering with a next page", pg.where(), maxPages))
				return
			}
			if err := ctx.Err(); err != nil {
				yield(nil, err)
				return
			}
			// An error found after a page was read (in its next link)
			// comes after the page, as in Nango.
			page, err := pg.next(ctx, n)
			if page != nil && !yield(page, nil) {
				return
			}
			if err != nil {
				yield(nil, err)
				return
			}
			if page == nil || page.NextPageParam == nil {
				return
			}
		}
	}
}

// pager holds the state of one pagination.
type pager struct {
	fetch  func(ctx context.Context, r PageRequest) (*Page, error)
	first  PageRequest
	cfg    integrations.Paginate
	inBody bool
	// req is the next request of link pagination, once reqSet.
	req    PageRequest
	reqSet bool
	// cursor is the next cursor: a string, or a json.Number.
	cursor   any
	offset   int
	lastLink string
}

func newPager(fetch func(ctx context.Context, r PageRequest) (*Page, error), first PageRequest, p integrations.Paginate) (*pager, error) {
	if first.Method == "" {
		first.Method = http.MethodGet
	}
	pg := &pager{fetch: fetch, first: first, cfg: p, offset: p.OffsetStartValue}
	bad := func(format string, args ...any) (*pager, error) {
		return nil, fmt.Errorf("paginate %s: "+format, append([]any{pg.where()}, args...)...)
	}
	if fetch == nil {
		return bad("no fetch function")
	}
	switch p.Type {
	case "":
		return bad("no pagination type: neither the provider's proxy.paginate nor the call sets one")
	case integrations.PaginateCursor:
		if p.CursorNameInRequest == "" || p.CursorPathInResponse == "" {
			return bad("cursor pagination needs cursor_name_in_request and cursor_path_in_response")
		}
	case integrations.PaginateLink:
		if p.LinkRelInResponseHeader == "" && p.LinkPathInResponseBody == "" {
			return bad("link pagination needs link_rel_in_response_header or link_path_in_response_body")
		}
	case integrations.PaginateOffset:
		if p.OffsetNameInRequest == "" {
			return bad("offset pagination needs offset_name_in_request")
		}
		switch p.OffsetCalculationMethod {
		case "", integrations.OffsetByResponseSize, integrations.OffsetPerPage:
		default:
			return bad("unknown offset_calculation_method %q (want by-response-size or per-page)", p.OffsetCalculationMethod)
		}
	default:
		return bad("unknown pagination type %q (want cursor, link or offset)", p.Type)
	}
	switch {
	case p.Limit < 0:
		return bad("limit %d is negative", p.Limit)
	case p.Limit > 0 && p.LimitNameInRequest == "":
		return bad("limit is set without limit_name_in_request")
	}
	if _, err := parseLodashPath(p.ResponsePath); err != nil {
		return bad("response_path: %v", err)
	}
	if _, err := parseLodashPath(p.CursorPathInResponse); err != nil {
		return bad("cursor_path_in_response: %v", err)
	}
	if _, err := parseLodashPath(p.LinkPathInResponseBody); err != nil {
		return bad("link_path_in_response_body: %v", err)
	}
	if first.Body != nil {
		// A plain copy, so that dotted names merge into nested objects
		// whatever their Go types, and first stays as it is.
		b, err := json.Marshal(first.Body)
		if err != nil {
			return bad("the body cannot be encoded as JSON: %v", err)
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		var body map[string]any
		if err := dec.Decode(&body); err != nil {
			return bad("the body cannot be encoded as JSON: %v", err)
		}
		pg.first.Body = body
	}
	if p.InBody != nil {
		pg.inBody = *p.InBody
	} else {
		switch strings.ToUpper(first.Method) {
		case http.MethodPost, http.MethodPut, http.MethodPatch:
			pg.inBody = true
		}
	}
	return pg, nil
}

// where names the paginated request in errors.
func (pg *pager) where() string {
	return pg.first.Method + " " + pg.first.Endpoint
}

// pageParam is a pagination parameter: its name and its value (an int, a
// string or a json.Number).
type pageParam struct {
	name  string
	value any
}

// request builds a request of cursor or offset pagination, or the first
// of link pagination: first's with the parameters set.
func (pg *pager) request(params []pageParam) PageRequest {
	r := pg.first
	r.Params = clonePageValues(pg.first.Params)
	if pg.first.Body != nil {
		r.Body = jsonvalue.Clone(pg.first.Body).(map[string]any)
	}
	for _, p := range params {
		if pg.inBody {
			if r.Body == nil {
				r.Body = map[string]any{}
			}
			setPageDotted(r.Body, p.name, p.value)
			continue
		}
		if r.Params == nil {
			r.Params = url.Values{}
		}
		r.Params.Set(p.name, pageParamText(p.value))
	}
	return r
}

func clonePageValues(v url.Values) url.Values {
	if v == nil {
		return nil
	}
	c := make(url.Values, len(v))
	for k, vs := range v {
		c[k] = append([]string(nil), vs...)
	}
	return c
}

// pageParamText writes a parameter's value in a query.
func pageParamText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case int:
		return strconv.Itoa(x)
	case json.Number:
		return string(x)
	}
	return fmt.Sprint(v)
}

// setPageDotted sets a value at a dotted name in a JSON object, creating (or
// replacing with) objects on the way, as lodash's set does with dots.
func setPageDotted(obj map[string]any, name string, v any) {
	keys := strings.Split(name, ".")
	for _, k := range keys[:len(keys)-1] {
		next, ok := obj[k].(map[string]any)
		if !ok || next == nil {
			next = map[string]any{}
			obj[k] = next
		}
		obj = next
	}
	obj[keys[len(keys)-1]] = v
}

// limitParams returns the limit parameter, if any.
func (pg *pager) limitParams() []pageParam {
	if pg.cfg.Limit > 0 {
		return []pageParam{{pg.cfg.LimitNameInRequest, pg.cfg.Limit}}
	}
	return nil
}

// next fetches page n and returns it (nil for none to yield; its
// NextPageParam is nil when no page follows), or an error; an error found
// after the records were read comes with them.
func (pg *pager) next(ctx context.Context, n int) (*PageResult, error) {
	var req PageRequest
	switch pg.cfg.Type {
	case integrations.PaginateCursor:
		params := pg.limitParams()
		if pg.cursor != nil {
			params = append(params, pageParam{pg.cfg.CursorNameInRequest, pg.cursor})
		}
		req = pg.request(params)
	case integrations.PaginateOffset:
		req = pg.request(append(pg.limitParams(), pageParam{pg.cfg.OffsetNameInRequest, pg.offset}))
	case integrations.PaginateLink:
		if !pg.reqSet {
			pg.req, pg.reqSet = pg.request(pg.limitParams()), true
		}
		req = pg.req
		// The next request shares nothing with this one.
		pg.req.Params = clonePageValues(req.Params)
		if req.Body != nil {
			pg.req.Body = jsonvalue.Clone(req.Body).(map[string]any)
		}
	}

	where := fmt.Sprintf("paginate %s: page %d (%s %s)", pg.where(), n, req.Method, req.Endpoint)
	page, err := pg.fetch(ctx, req)
	if err != nil {
		return nil, err
	}
	if page == nil {
		return nil, fmt.Errorf("%s: the fetch function returned no page and no error", where)
	}
	if page.Status < 200 || page.Status > 299 {
		return nil, fmt.Errorf("%s: the provider answered %d %s", where, page.Status, http.StatusText(page.Status))
	}
	records, err := pageRecords(page.Body, pg.cfg.ResponsePath)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	res := &PageResult{Records: records, Response: page}

	switch pg.cfg.Type {
	case integrations.PaginateCursor:
		if len(records) == 0 {
			return nil, nil
		}
		cursor, err := pageCursor(page.Body, pg.cfg.CursorPathInResponse)
		if err != nil {
			return res, fmt.Errorf("%s: cursor_path_in_response %q: %w", where, pg.cfg.CursorPathInResponse, err)
		}
		pg.cursor = cursor
		res.NextPageParam = cursor
		return res, nil
	case integrations.PaginateOffset:
		if len(records) == 0 {
			return nil, nil
		}
		if pg.cfg.Limit > 0 && len(records) < pg.cfg.Limit {
			return res, nil
		}
		if pg.cfg.OffsetCalculationMethod == integrations.OffsetPerPage {
			pg.offset++
		} else {
			pg.offset += len(records)
		}
		res.NextPageParam = pg.offset
		return res, nil
	default: // link
		if records == nil {
			res.Records = []json.RawMessage{}
		}
		link, err := pg.nextLink(page)
		if err != nil {
			return res, fmt.Errorf("%s: %w", where, err)
		}
		if link == "" || link == pg.lastLink {
			return res, nil
		}
		pg.lastLink = link
		if err := pg.follow(link); err != nil {
			return res, fmt.Errorf("%s: %w", where, err)
		}
		res.NextPageParam = link
		return res, nil
	}
}

// resume makes the first request the one of the page from names (an
// earlier page's NextPageParam).
func (pg *pager) resume(from any) error {
	bad := func(want string) error {
		v := []rune(fmt.Sprint(from))
		if len(v) > 100 {
			v = append(v[:100], '…')
		}
		return fmt.Errorf("paginate %s: from: %T %s is not %s", pg.where(), from, string(v), want)
	}
	switch pg.cfg.Type {
	case integrations.PaginateCursor:
		if s, ok := from.(string); ok {
			if s = strings.TrimSpace(s); s != "" {
				pg.cursor = s
			}
			return nil
		}
		n, ok := pageNumber(from, false)
		if !ok {
			return bad("a cursor (a string or a number)")
		}
		pg.cursor = n
	case integrations.PaginateOffset:
		n, ok := pageNumber(from, true)
		if !ok {
			return bad("an offset (an integer)")
		}
		off, err := strconv.Atoi(string(n))
		if err != nil {
			return bad("an offset (an integer)")
		}
		pg.offset = off
	default: // link
		link, ok := from.(string)
		if !ok {
			return bad("a link (a string)")
		}
		if link = strings.TrimSpace(link); link == "" {
			return nil
		}
		pg.req, pg.reqSet = pg.request(pg.limitParams()), true
		if err := pg.follow(link); err != nil {
			return fmt.Errorf("paginate %s: from: %w", pg.where(), err)
		}
		pg.lastLink = link
	}
	return nil
}

// pageNumber returns a number as a json.Number: a json.Number (kept as
// written, unless integer), a Go integer, or a finite float64 or float32
// (as a checkpoint reads a number back); with integer, only integral
// ones.
func pageNumber(v any, integer bool) (json.Number, bool) {
	var f float64
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return json.Number(strconv.FormatInt(i, 10)), true
		}
		g, err := x.Float64()
		if err != nil || !json.Valid([]byte(x)) {
			return "", false
		}
		if !integer {
			return x, true
		}
		f = g
	case int:
		return json.Number(strconv.Itoa(x)), true
	case int32:
		return json.Number(strconv.FormatInt(int64(x), 10)), true
	case int64:
		return json.Number(strconv.FormatInt(x, 10)), true
	case uint32:
		return json.Number(strconv.FormatUint(uint64(x), 10)), true
	case uint64:
		return json.Number(strconv.FormatUint(x, 10)), true
	case float32:
		f = float64(x)
	case float64:
		f = x
	default:
		return "", false
	}
	switch {
	case math.IsNaN(f) || math.IsInf(f, 0):
		return "", false
	case f == math.Trunc(f) && math.Abs(f) < 1<<53:
		return json.Number(strconv.FormatInt(int64(f), 10)), true
	case integer:
		return "", false
	}
	return json.Number(strconv.FormatFloat(f, 'f', -1, 64)), true
}

// pageRecords returns the records of a page: the elements of the
// array at path in body (the body itself for an empty path); nil when the
// path leads nowhere or to null.
func pageRecords(body []byte, path string) ([]json.RawMessage, error) {
	v, found, err := lookupLodashPath(body, path)
	if err != nil {
		return nil, err
	}
	if !found || string(v) == "null" {
		return nil, nil
	}
	if v[0] != '[' {
		if path == "" {
			return nil, fmt.Errorf("the body is %s, not an array of records (set response_path to the array)", describeJSONKind(v))
		}
		return nil, fmt.Errorf("response_path %q leads to %s, not an array of records", path, describeJSONKind(v))
	}
	var records []json.RawMessage
	if err := json.Unmarshal(v, &records); err != nil {
		return nil, err
	}
	return records, nil
}

// pageCursor returns the cursor at path in body: a trimmed string or a
// json.Number, or nil when there is none.
func pageCursor(body []byte, path string) (any, error) {
	v, found, err := lookupLodashPath(body, path)
	if err != nil || !found {
		return nil, err
	}
	switch v[0] {
	case '"':
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return nil, err
		}
		if s = strings.TrimSpace(s); s != "" {
			return s, nil
		}
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return json.Number(v), nil
	}
	return nil, nil
}

// nextLink returns the link to the next page, or "".
func (pg *pager) nextLink(page *Page) (string, error) {
	if rel := pg.cfg.LinkRelInResponseHeader; rel != "" {
		return linkHeaderTarget(page.Header.Values("Link"), rel), nil
	}
	path := pg.cfg.LinkPathInResponseBody
	v, found, err := lookupLodashPath(page.Body, path)
	if err != nil || !found || string(v) == "null" {
		return "", err
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return "", fmt.Errorf("link_path_in_response_body %q leads to %s, not a URL", path, describeJSONKind(v))
	}
	return strings.TrimSpace(s), nil
}

// follow makes pg.req the request of a next-page link.
func (pg *pager) follow(link string) error {
	u, err := url.Parse(link)
	if err != nil {
		return fmt.Errorf("the next page's link %.200q is not a URL: %v", link, err)
	}
	if u.IsAbs() || u.Host != "" {
		if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("the next page's link %.200q is not an http(s) URL", link)
		}
		pg.req.BaseURLOverride = u.Scheme + "://" + u.Host
		pg.req.Endpoint = u.EscapedPath()
	} else if u.Path != "" {
		pg.req.Endpoint = u.EscapedPath()
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return fmt.Errorf("the next page's link %.200q has an invalid query: %v", link, err)
	}
	pg.req.Params = q
	if len(q) == 0 {
		pg.req.Params = nil
	}
	return nil
}

// linkHeaderTarget returns the target of the last link of relation rel
// (compared without case; a link may list several relations) in Link
// header values (RFC 8288), or "".
func linkHeaderTarget(values []string, rel string) string {
	target := ""
	for _, v := range values {
		for s := v; ; {
			s = strings.TrimLeft(s, " \t,")
			if !strings.HasPrefix(s, "<") {
				break
			}
			end := strings.IndexByte(s, '>')
			if end < 0 {
				break
			}
			uri := s[1:end]
			s = s[end+1:]
			var rels string
			// Parameters: ;name=value or ;name="value", up to a comma
			// outside quotes.
			for {
				s = strings.TrimLeft(s, " \t")
				if !strings.HasPrefix(s, ";") {
					break
				}
				s = strings.TrimLeft(s[1:], " \t")
				eq := strings.IndexAny(s, "=;,")
				if eq < 0 || s[eq] != '=' {
					// A parameter without value.
					next := strings.IndexAny(s, ";,")
					if next < 0 {
						next = len(s)
					}
					s = s[next:]
					continue
				}
				name := strings.ToLower(strings.TrimSpace(s[:eq]))
				s = strings.TrimLeft(s[eq+1:], " \t")
				var value string
				if strings.HasPrefix(s, `"`) {
					var b strings.Builder
					i := 1
					for ; i < len(s) && s[i] != '"'; i++ {
						if s[i] == '\\' && i+1 < len(s) {
							i++
						}
						b.WriteByte(s[i])
					}
					value, s = b.String(), s[min(i+1, len(s)):]
				} else {
					next := strings.IndexAny(s, ";,")
					if next < 0 {
						next = len(s)
					}
					value, s = strings.TrimSpace(s[:next]), s[next:]
				}
				if name == "rel" {
					rels = value
				}
			}
			for _, r := range strings.Fields(rels) {
				if strings.EqualFold(r, rel) {
					target = uri
				}
			}
		}
	}
	return strings.TrimSpace(target)
}
