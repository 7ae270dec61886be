package oplog

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/internal/httpapi"
	"github.com/embedauth/connect/store"
)

// Routes registers the operations log API, for the API key's environment,
// each with the scope environments.ScopeLogsRead (environment:logs:read):
//
//	GET /logs/operations        list, newest first
//	GET /logs/operations/{id}   one entry
//	GET /logs/stats             counts by bucket of time (see Writer.Stats)
//
// The list takes the query parameters type, operation, status (success or
// failure), integration (an integration's unique key), connection_id,
// since and until (RFC 3339 times: since <= created_at < until), limit (1
// to 100, default 50), delivery_id (the attempts of one webhook
// delivery) and cursor (the next_cursor of the page before), each
// at most once; an empty value is the same as none, and any other
// parameter is 400 invalid_query_params. It answers {"data": [entry...],
// "next_cursor": string or null}, and GET of one {"data": entry}, or 404
// not_found when the entry does not exist or is another environment's.
// An entry is {"id", "type", "operation", "status", "integration" (null
// for none), "connection_id" (null for none), "message", "meta" (an object
// or null), "created_at"}. Entries hold no secrets.
//
// The stats take since and until (RFC 3339; default until now and since
// 24 hours before until) and bucket (hour, the default, or day), each at
// most once, and answer {"data": {"bucket", "series": [{"start", "counts":
// [{"type", "operation", "status", "count"}]}]}}: one element per bucket
// of the span, empty ones included (counts []). A span of more than
// MaxStatsBuckets buckets is 400 invalid_query_params.
func (w *Writer) Routes(rt *httpapi.Router) {
	rt.Handle(httpapi.Route{
		Pattern: "GET /logs/operations",
		Scope:   environments.ScopeLogsRead,
		Handler: func(rw http.ResponseWriter, r *http.Request, p *httpapi.Principal) error {
			f, err := listQuery(r)
			if err != nil {
				return err
			}
			f.EnvironmentID = p.EnvironmentID
			page, err := w.ListPage(r.Context(), f)
			if err != nil {
				return err
			}
			out := listAnswer{Data: make([]apiEntry, len(page.Entries))}
			for i, e := range page.Entries {
				out.Data[i] = wireEntry(e)
			}
			if page.Next != nil {
				c := page.Next.String()
				out.NextCursor = &c
			}
			httpapi.WriteJSON(rw, http.StatusOK, out)
			return nil
		},
	})
	rt.Handle(httpapi.Route{
		Pattern: "GET /logs/operations/{id}",
		Scope:   environments.ScopeLogsRead,
		Handler: func(rw http.ResponseWriter, r *http.Request, p *httpapi.Principal) error {
			if err := onlyQuery(r); err != nil {
				return err
			}
			e, err := w.Get(r.Context(), p.EnvironmentID, r.PathValue("id"))
			if err != nil {
				return err
			}
			httpapi.WriteJSON(rw, http.StatusOK, map[string]apiEntry{"data": wireEntry(e)})
			return nil
		},
	})
	rt.Handle(httpapi.Route{
		Pattern: "GET /logs/stats",
		Scope:   environments.ScopeLogsRead,
		Handler: func(rw http.ResponseWriter, r *http.Request, p *httpapi.Principal) error {
			f, err := w.statsQuery(r)
			if err != nil {
				return err
			}
			f.EnvironmentID = p.EnvironmentID
			st, err := w.Stats(r.Context(), f)
			if err != nil {
				return err
			}
			httpapi.WriteJSON(rw, http.StatusOK, map[string]apiStats{"data": wireStats(st)})
			return nil
		},
	})
}

// apiStats are the counts of GET /logs/stats on the wire.
type apiStats struct {
	Bucket Bucket           `json:"bucket"`
	Series []apiStatsBucket `json:"series"`
}

type apiStatsBucket struct {
	Start  string     `json:"start"`
	Counts []apiCount `json:"counts"`
}

type apiCount struct {
	Type      string `json:"type"`
	Operation string `json:"operation"`
	Status    string `json:"status"`
	Count     int64  `json:"count"`
}

func wireStats(st *Stats) apiStats {
	out := apiStats{Bucket: st.Bucket, Series: make([]apiStatsBucket, len(st.Series))}
	for i, b := range st.Series {
		wb := apiStatsBucket{Start: httpapi.Time(b.Start), Counts: make([]apiCount, len(b.Counts))}
		for j, c := range b.Counts {
			wb.Counts[j] = apiCount{Type: c.Type, Operation: c.Operation, Status: c.Status, Count: c.Count}
		}
		out.Series[i] = wb
	}
	return out
}

func spanBuckets(f CountFilter) int {
	_, n := span(f.Bucket, f.Since, f.Until)
	return n
}

// DefaultStatsSpan is the span GET /logs/stats counts when since is not
// given: the 24 hours before until.
const DefaultStatsSpan = 24 * time.Hour

// statsQuery reads the query of GET /logs/stats into a CountFilter
// (without its environment), with its defaults. Every parameter in error
// is named in the one error it returns.
func (w *Writer) statsQuery(r *http.Request) (CountFilter, error) {
	f := CountFilter{Bucket: BucketHour}
	if err := onlyQuery(r, "since", "until", "bucket"); err != nil {
		return f, err
	}
	q := r.URL.Query()
	var fe []store.FieldError
	bad := func(name, message string) {
		fe = append(fe, store.FieldError{Code: "invalid_value", Message: message, Path: []string{name}})
	}
	switch v := q.Get("bucket"); v {
	case "":
	case string(BucketHour), string(BucketDay):
		f.Bucket = Bucket(v)
	default:
		bad("bucket", "must be hour or day")
	}
	// A time given (the zero time included) is not a default.
	var since, until *time.Time
	for name, dst := range map[string]**time.Time{"since": &since, "until": &until} {
		v := q.Get(name)
		if v == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			bad(name, "must be an RFC 3339 time such as 2026-05-01T12:00:00Z (a + of an offset is %2B in a query)")
			continue
		}
		t = ceilMicro(t).UTC()
		*dst = &t
	}
	if len(fe) > 0 {
		return f, invalidQuery(fe)
	}
	if until != nil {
		f.Until = *until
	} else {
		now := time.Now
		if w.Now != nil {
			now = w.Now
		}
		f.Until = ceilMicro(now()).UTC()
	}
	if since != nil {
		f.Since = *since
	} else {
		f.Since = f.Until.Add(-DefaultStatsSpan)
	}
	switch {
	case !f.Until.After(f.Since):
		bad("until", "must be after since")
	case spanBuckets(f) > MaxStatsBuckets:
		bad("since", bucketsMessage(f.Bucket))
	}
	return f, invalidQuery(fe)
}

// apiEntry is an entry on the wire.
type apiEntry struct {
	ID        string `json:"id"`
	Type      string `json:"type"`
	Operation string `json:"operation"`
	Status    string `json:"status"`
	// Integration is the integration's unique key; null for an entry of
	// no integration.
	Integration *string `json:"integration"`
	// ConnectionID is null for an entry of no connection.
	ConnectionID *string        `json:"connection_id"`
	Message      string         `json:"message"`
	Meta         map[string]any `json:"meta"`
	CreatedAt    string         `json:"created_at"`
}

type listAnswer struct {
	Data       []apiEntry `json:"data"`
	NextCursor *string    `json:"next_cursor"`
}

func wireEntry(e *Entry) apiEntry {
	nonEmpty := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	return apiEntry{
		ID:           e.ID,
		Type:         e.Type,
		Operation:    e.Operation,
		Status:       e.Status,
		Integration:  nonEmpty(e.IntegrationKey),
		ConnectionID: nonEmpty(e.ConnectionID),
		Message:      e.Message,
		Meta:         e.Meta,
		CreatedAt:    httpapi.Time(e.CreatedAt),
	}
}

// listQueryParams are the query parameters of the list.
var listQueryParams = []string{"type", "operation", "status", "integration", "connection_id", "delivery_id", "since", "until", "cursor", "limit"}

// onlyQuery refuses query parameters other than allowed, and any given
// more than once, naming each.
func onlyQuery(r *http.Request, allowed ...string) error {
	var fe []store.FieldError
	for name, vs := range r.URL.Query() {
		switch {
		case !slices.Contains(allowed, name):
			msg := fmt.Sprintf("unknown parameter %q; this route takes none", name)
			if len(allowed) > 0 {
				msg = fmt.Sprintf("unknown parameter %q; the list takes %s", name, strings.Join(allowed, ", "))
			}
			fe = append(fe, store.FieldError{Code: "unrecognized_keys", Message: msg, Path: []string{name}})
		case len(vs) > 1:
			fe = append(fe, store.FieldError{Code: "invalid_value", Message: "given more than once", Path: []string{name}})
		}
	}
	return invalidQuery(fe)
}

// invalidQuery returns the invalid_query_params error of the field errors,
// sorted by parameter, or nil for none.
func invalidQuery(fe []store.FieldError) error {
	if len(fe) == 0 {
		return nil
	}
	slices.SortStableFunc(fe, func(a, b store.FieldError) int { return strings.Compare(a.Path[0], b.Path[0]) })
	return store.Invalid("invalid_query_params", "The query is invalid.", fe...)
}

// listQuery reads the list's query into a Filter (without its
// environment). Every parameter in error is named in the one error it
// returns.
func listQuery(r *http.Request) (Filter, error) {
	var f Filter
	if err := onlyQuery(r, listQueryParams...); err != nil {
		return f, err
	}
	q := r.URL.Query()
	var fe []store.FieldError
	bad := func(name, message string) {
		fe = append(fe, store.FieldError{Code: "invalid_value", Message: message, Path: []string{name}})
	}
	for name, dst := range map[string]*string{"type": &f.Type, "operation": &f.Operation,
		"integration": &f.IntegrationKey, "connection_id": &f.ConnectionID, "delivery_id": &f.DeliveryID} {
		v := q.Get(name)
		if v != "" && !validText(v) {
			bad(name, fmt.Sprintf("must be 1 to %d characters without control characters", maxTextLen))
			continue
		}
		*dst = v
	}
	switch f.Status = q.Get("status"); f.Status {
	case "", StatusSuccess, StatusFailure:
	default:
		bad("status", "must be success or failure")
	}
	times := map[string]*time.Time{"since": &f.Since, "until": &f.Until}
	for name, dst := range times {
		v := q.Get(name)
		if v == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			bad(name, "must be an RFC 3339 time such as 2026-05-01T12:00:00Z (a + of an offset is %2B in a query)")
			continue
		}
		*dst = ceilMicro(t)
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Until.After(f.Since) {
		bad("until", "must be after since")
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxPageLimit {
			bad("limit", fmt.Sprintf("must be an integer from 1 to %d", MaxPageLimit))
		} else {
			f.Limit = n
		}
	}
	if v := q.Get("cursor"); v != "" {
		c, err := ParseCursor(v)
		if err != nil {
			bad("cursor", "not a next_cursor of this list")
		} else {
			f.After = &c
		}
	}
	return f, invalidQuery(fe)
}

// ceilMicro rounds t up to a whole microsecond, the precision at which
// entries are stored: created_at >= t (or < t) then selects the same
// entries as with t itself, in every Store (Postgres would round t to the
// nearest microsecond, SQLite truncate it).
func ceilMicro(t time.Time) time.Time {
	if c := t.Truncate(time.Microsecond); c.Before(t) {
		return c.Add(time.Microsecond)
	}
	return t
}
