package functions

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/internal/httpapi"
	"github.com/embedauth/connect/store"
)

func (s *Service) recordRoutes(rt *httpapi.Router) {
	read := environments.ScopeRecordsRead
	for _, r := range []httpapi.Route{
		{Pattern: "GET /records", Scope: read, Handler: s.listRecordsHTTP},
		{Pattern: "GET /records/{$}", Scope: read, Handler: s.listRecordsHTTP},
		{Pattern: "PATCH /records/prune", Scope: environments.ScopeRecordsWrite, Handler: s.pruneRecordsHTTP},
	} {
		rt.Handle(r)
	}
}

// recordModelPattern is what GET /records accepts as a model.
var recordModelPattern = regexp.MustCompile(`^[A-Z][A-Za-z0-9_-]{0,254}$`)

// EncodeCursor returns the cursor of GET /records that points at a
// record: base64 of its last change and its Seq.
func EncodeCursor(r *Record) string {
	return base64.StdEncoding.EncodeToString([]byte(r.UpdatedAt.UTC().Format(time.RFC3339Nano) + "||" + strconv.FormatInt(r.Seq, 10)))
}

// DecodeCursor returns the Seq a cursor points at.
func DecodeCursor(c string) (int64, error) {
	if len(c) > 1000 {
		return 0, errors.New("the cursor is longer than 1000 characters")
	}
	b, err := base64.StdEncoding.DecodeString(c)
	if err != nil {
		b, err = base64.RawURLEncoding.DecodeString(c)
	}
	if err != nil {
		return 0, errors.New("the cursor is not one this service gave")
	}
	_, seq, ok := strings.Cut(string(b), "||")
	n, err := strconv.ParseInt(seq, 10, 64)
	if !ok || err != nil || n < 0 {
		return 0, errors.New("the cursor is not one this service gave")
	}
	return n, nil
}

// recordScopeOf reads the Connection-Id and Provider-Config-Key headers
// and finds the connection.
func (s *Service) recordScopeOf(ctx context.Context, r *http.Request, p *httpapi.Principal, model, variant string) (RecordScope, error) {
	key := strings.TrimSpace(r.Header.Get("Provider-Config-Key"))
	conn := strings.TrimSpace(r.Header.Get("Connection-Id"))
	var fe []store.FieldError
	if key == "" {
		fe = append(fe, store.FieldError{Code: "required", Message: "is required", Path: []string{"provider-config-key"}})
	}
	if conn == "" {
		fe = append(fe, store.FieldError{Code: "required", Message: "is required", Path: []string{"connection-id"}})
	}
	if len(fe) > 0 {
		return RecordScope{}, store.Invalid("invalid_headers", "The headers are invalid.", fe...)
	}
	c, err := s.st.GetConnection(ctx, p.EnvironmentID, key, conn)
	if errors.Is(err, store.ErrNotFound) {
		return RecordScope{}, store.Invalid("unknown_connection", fmt.Sprintf("No connection %q of integration %q was found.", conn, key))
	}
	if err != nil {
		return RecordScope{}, err
	}
	if variant == "" {
		variant = BaseVariant
	}
	return RecordScope{EnvironmentID: p.EnvironmentID, ConnectionID: c.ID, Model: model, Variant: variant}, nil
}

func (s *Service) listRecordsHTTP(w http.ResponseWriter, r *http.Request, p *httpapi.Principal) error {
	if err := onlyQuery(r, "model", "variant", "modified_after", "delta", "limit", "filter", "cursor", "ids"); err != nil {
		return err
	}
	q := r.URL.Query()
	var fe []store.FieldError
	bad := func(name, code, msg string) {
		fe = append(fe, store.FieldError{Code: code, Message: msg, Path: []string{name}})
	}
	model := q.Get("model")
	if model == "" {
		bad("model", "required", "is required")
	} else if !recordModelPattern.MatchString(model) {
		bad("model", "invalid_string", "must be a model name (a capital letter, then letters, digits, '_' or '-')")
	}
	variant := q.Get("variant")
	if variant != "" && variant != BaseVariant && !variantPattern.MatchString(variant) {
		bad("variant", "invalid_string", "a variant is 1 to 255 letters, digits, '-' or '_'")
	}
	var query RecordQuery
	if v := q.Get("modified_after"); v != "" || q.Get("delta") != "" {
		if v == "" {
			v = q.Get("delta")
		}
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			if d, err2 := time.Parse("2006-01-02", v); err2 == nil {
				t, err = d, nil
			}
		}
		if err != nil {
			bad("modified_after", "invalid_date", "must be an ISO 8601 date")
		} else {
			query.ModifiedAfter = &t
		}
	}
	query.Limit = DefaultRecordsPageLimit
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxRecordsPageLimit {
			bad("limit", "invalid_value", fmt.Sprintf("must be an integer from 1 to %d", MaxRecordsPageLimit))
		} else {
			query.Limit = n
		}
	}
	if v := q.Get("filter"); v != "" {
		parts := strings.Split(strings.ToLower(v), ",")
		if len(parts) > 2 {
			bad("filter", "invalid_value", "must be added, updated or deleted, or two of them joined by a comma")
		}
		for _, part := range parts {
			switch strings.TrimSpace(part) {
			case "added":
				query.Filter |= FilterAdded
			case "updated":
				query.Filter |= FilterUpdated
			case "deleted":
				query.Filter |= FilterDeleted
			default:
				bad("filter", "invalid_value", "must be added, updated or deleted, or two of them joined by a comma")
			}
		}
	}
	if v := q.Get("cursor"); v != "" {
		seq, err := DecodeCursor(v)
		if err != nil {
			bad("cursor", "invalid_string", err.Error())
		}
		query.AfterSeq = seq
	}
	if ids := q["ids"]; len(ids) > 0 {
		if len(ids) > 100 {
			bad("ids", "too_big", "at most 100 ids")
		}
		for _, id := range ids {
			if id == "" || len(id) > 256 {
				bad("ids", "invalid_string", "each id is 1 to 256 characters")
				break
			}
		}
		query.IDs = ids
	}
	if len(fe) > 0 {
		return store.Invalid("invalid_query_params", "The query is invalid.", fe...)
	}
	ctx := r.Context()
	scope, err := s.recordScopeOf(ctx, r, p, model, variant)
	if err != nil {
		return err
	}
	want := query.Limit
	query.Limit++
	recs, err := s.st.ListRecords(ctx, scope, query)
	if err != nil {
		return err
	}
	var next *string
	if len(recs) > want {
		recs = recs[:want]
		c := EncodeCursor(recs[len(recs)-1])
		next = &c
	}
	buf := recordPagePool.Get().(*bytes.Buffer)
	defer putRecordPage(buf)
	buf.Reset()
	buf.Grow(recordPageSize(recs))
	buf.WriteString(`{"records":[`)
	for i, rec := range recs {
		if i > 0 {
			buf.WriteByte(',')
		}
		if err := s.writeRecord(buf, rec); err != nil {
			return err
		}
	}
	buf.WriteString(`],"next_cursor":`)
	if next == nil {
		buf.WriteString("null")
	} else {
		b, _ := json.Marshal(*next)
		buf.Write(b)
	}
	buf.WriteString("}")
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(buf.Bytes())
	return nil
}

// recordPagePool holds the buffers of GET /records answers: a page of
// 1,000 records of 1 KiB is over a megabyte, which allocating and zeroing
// for every page would spend about as long on as writing it.
var recordPagePool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledRecordPage is the largest buffer recordPagePool keeps.
const maxPooledRecordPage = 8 << 20

func putRecordPage(buf *bytes.Buffer) {
	if buf.Cap() <= maxPooledRecordPage {
		recordPagePool.Put(buf)
	}
}

// recordPageSize is about the size of the answer listing recs: each
// payload (three quarters of its sealed form, base64) with its metadata.
func recordPageSize(recs []*Record) int {
	n := 64
	for _, r := range recs {
		n += len(r.SealedPayload)*3/4 + len(r.ID) + 300
	}
	return n
}

// recordMetadata is the _nango_metadata of a listed record.
type recordMetadata struct {
	FirstSeenAt    time.Time  `json:"first_seen_at"`
	LastModifiedAt time.Time  `json:"last_modified_at"`
	LastAction     string     `json:"last_action"`
	DeletedAt      *time.Time `json:"deleted_at"`
	PrunedAt       *time.Time `json:"pruned_at"`
	Cursor         string     `json:"cursor"`
}

// appendMetadata appends the _nango_metadata of r to b: what json.Marshal
// of its recordMetadata gives, without reflection (a page of 1,000
// records spent a fifth of its time there).
func appendMetadata(b []byte, r *Record) ([]byte, error) {
	if !jsonTime(&r.FirstSeenAt) || !jsonTime(&r.UpdatedAt) || !jsonTime(r.DeletedAt) || !jsonTime(r.PrunedAt) {
		return json.Marshal(recordMetadata{FirstSeenAt: r.FirstSeenAt, LastModifiedAt: r.UpdatedAt,
			LastAction: r.LastAction(), DeletedAt: r.DeletedAt, PrunedAt: r.PrunedAt, Cursor: EncodeCursor(r)})
	}
	appendTime := func(b []byte, t *time.Time) []byte {
		if t == nil {
			return append(b, "null"...)
		}
		b = append(b, '"')
		return append(t.AppendFormat(b, time.RFC3339Nano), '"')
	}
	b = append(b, `{"first_seen_at":`...)
	b = appendTime(b, &r.FirstSeenAt)
	b = append(b, `,"last_modified_at":`...)
	b = appendTime(b, &r.UpdatedAt)
	b = append(b, `,"last_action":"`...)
	b = append(b, r.LastAction()...) // letters only
	b = append(b, `","deleted_at":`...)
	b = appendTime(b, r.DeletedAt)
	b = append(b, `,"pruned_at":`...)
	b = appendTime(b, r.PrunedAt)
	b = append(b, `,"cursor":"`...)
	b = append(b, EncodeCursor(r)...) // base64: nothing to escape
	return append(b, `"}`...), nil
}

// jsonTime reports whether t is nil or a time that time.Time.MarshalJSON
// encodes as t.AppendFormat(RFC3339Nano) does: of years 0 to 9999, in a
// zone less than 24 hours from UTC (it refuses others).
func jsonTime(t *time.Time) bool {
	if t == nil {
		return true
	}
	_, off := t.Zone()
	return t.Year() >= 0 && t.Year() <= 9999 && off > -24*3600 && off < 24*3600
}

// writeRecord writes a record as GET /records lists it: its payload with
// _nango_metadata added (only its id when pruned).
func (s *Service) writeRecord(buf *bytes.Buffer, r *Record) error {
	if r.SealedPayload == "" {
		id, _ := json.Marshal(r.ID)
		buf.WriteString(`{"id":`)
		buf.Write(id)
		buf.WriteByte(',')
	} else {
		plain, err := s.cfg.Keyring.Open(PurposeRecordPayload, r.SealedPayload)
		if err != nil {
			return err
		}
		plain = bytes.TrimSpace(plain)
		if len(plain) < 2 || plain[0] != '{' || plain[len(plain)-1] != '}' {
			return fmt.Errorf("functions: the stored record %q is not a JSON object", r.ID)
		}
		buf.WriteByte('{')
		if body := bytes.TrimSpace(plain[1 : len(plain)-1]); len(body) > 0 {
			buf.Write(body)
			buf.WriteByte(',')
		}
	}
	buf.WriteString(`"_nango_metadata":`)
	meta, err := appendMetadata(buf.AvailableBuffer(), r)
	if err != nil {
		return err
	}
	buf.Write(meta)
	buf.WriteByte('}')
	return nil
}

func (s *Service) pruneRecordsHTTP(w http.ResponseWriter, r *http.Request, p *httpapi.Principal) error {
	if err := onlyQuery(r); err != nil {
		return err
	}
	var b struct {
		Model       string `json:"model"`
		Variant     string `json:"variant"`
		UntilCursor string `json:"until_cursor"`
		Limit       *int   `json:"limit"`
	}
	if err := httpapi.Decode(r, &b); err != nil {
		return err
	}
	var fe []store.FieldError
	if !recordModelPattern.MatchString(b.Model) {
		fe = append(fe, store.FieldError{Code: "invalid_string", Message: "must be a model name", Path: []string{"model"}})
	}
	if b.Variant != "" && b.Variant != BaseVariant && !variantPattern.MatchString(b.Variant) {
		fe = append(fe, store.FieldError{Code: "invalid_string", Message: "a variant is 1 to 255 letters, digits, '-' or '_'", Path: []string{"variant"}})
	}
	until, err := DecodeCursor(b.UntilCursor)
	if b.UntilCursor == "" {
		fe = append(fe, store.FieldError{Code: "required", Message: "is required", Path: []string{"until_cursor"}})
	} else if err != nil {
		fe = append(fe, store.FieldError{Code: "invalid_string", Message: err.Error(), Path: []string{"until_cursor"}})
	}
	limit := 1000
	if b.Limit != nil {
		if *b.Limit < 1 || *b.Limit > MaxRecordsPageLimit {
			fe = append(fe, store.FieldError{Code: "invalid_value", Message: fmt.Sprintf("must be from 1 to %d", MaxRecordsPageLimit), Path: []string{"limit"}})
		}
		limit = *b.Limit
	}
	if len(fe) > 0 {
		return store.Invalid("invalid_body", "The request body is invalid.", fe...)
	}
	ctx := r.Context()
	scope, err := s.recordScopeOf(ctx, r, p, b.Model, b.Variant)
	if err != nil {
		return err
	}
	n, last, err := s.st.PruneRecords(ctx, scope, until, limit, s.nowUTC())
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, map[string]any{"count": n, "has_more": n > 0 && last != until})
	return nil
}
