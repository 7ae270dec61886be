package httpapi

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/embedauth/connect/store"
)

// DefaultMaxBody is the default limit of request bodies: 1 MiB.
const DefaultMaxBody = 1 << 20

// ErrBodyTooLarge is answered 413.
func errBodyTooLarge(limit int64) error {
	return WithStatus(http.StatusRequestEntityTooLarge, store.Invalid("payload_too_large",
		fmt.Sprintf("The request body is larger than %d bytes.", limit)))
}

// CheckContentType refuses, with 415 invalid_content_type, a body whose
// Content-Type is not JSON or names a charset other than UTF-8 (JSON is
// UTF-8). A missing Content-Type is accepted.
func CheckContentType(r *http.Request) error {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return nil
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
		return WithStatus(http.StatusUnsupportedMediaType, store.Invalid("invalid_content_type",
			"The Content-Type must be application/json."))
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") && !strings.EqualFold(cs, "utf8") {
		return WithStatus(http.StatusUnsupportedMediaType, store.Invalid("invalid_content_type",
			"The body must be UTF-8: the Content-Type's charset must be utf-8 or absent."))
	}
	return nil
}

// ReadBody reads the whole body, bounded by the limit set by the Router.
func ReadBody(r *http.Request) ([]byte, error) {
	if r.Body == nil {
		return nil, nil
	}
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, readError(err)
	}
	return b, nil
}

// ReadBodyLimited reads the whole body like ReadBody, with the limit
// that limit returns for the body's first byte other than JSON whitespace
// (0 for a blank body): a route that takes two forms of body (an object,
// or an array of them) can give each its own limit. The route's own limit
// (Route.MaxBody) still bounds both: set it to the larger one. Leading
// whitespace is not counted.
func ReadBodyLimited(w http.ResponseWriter, r *http.Request, limit func(first byte) int64) ([]byte, error) {
	if r.Body == nil {
		return nil, nil
	}
	br := bufio.NewReader(r.Body)
	var first byte
	for {
		c, err := br.ReadByte()
		if err == io.EOF {
			return nil, nil
		}
		if err != nil {
			return nil, readError(err)
		}
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			first = c
			_ = br.UnreadByte()
			break
		}
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, io.NopCloser(br), limit(first)))
	if err != nil {
		return nil, readError(err)
	}
	return b, nil
}

func readError(err error) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return errBodyTooLarge(mbe.Limit)
	}
	return store.Invalid("invalid_body", "The request body could not be read.")
}

// DecodeError turns an error of encoding/json's decoder into the
// invalid_body error that Unmarshal returns for it, naming the offending
// field, for a handler that decodes a body itself.
func DecodeError(err error) error { return decodeError(err) }

// Decode reads a JSON object body into v. An empty body is invalid_body.
func Decode(r *http.Request, v any) error {
	b, err := ReadBody(r)
	if err != nil {
		return err
	}
	return Unmarshal(b, v)
}

// ReadJSON reads the whole body, bounded by the limit set by the Router,
// and refuses it as CheckJSON does, for a handler that decodes the JSON
// itself. An empty body is returned as it is.
func ReadJSON(r *http.Request) ([]byte, error) {
	b, err := ReadBody(r)
	if err != nil {
		return nil, err
	}
	if err := CheckJSON(b); err != nil {
		return nil, err
	}
	return b, nil
}

// Unmarshal decodes a JSON body into v, turning decoding failures into
// invalid_body errors that name the offending field. It refuses what
// CheckJSON refuses (invalid UTF-8, duplicate keys, U+0000, lone
// surrogate escapes, deep nesting) before decoding.
func Unmarshal(b []byte, v any) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return store.Invalid("invalid_body", "The request body is empty; a JSON object is required.")
	}
	if b[0] != '{' {
		return store.Invalid("invalid_body", "The request body must be a JSON object.")
	}
	if err := CheckJSON(b); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(v); err != nil {
		return decodeError(err)
	}
	if dec.More() {
		return store.Invalid("invalid_body", "The request body has data after the JSON object.")
	}
	return nil
}

func decodeError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		path := []string{}
		if te.Field != "" {
			path = strings.Split(te.Field, ".")
		}
		return store.Invalid("invalid_body", "The request body is invalid.", store.FieldError{
			Code:    "invalid_type",
			Message: fmt.Sprintf("expected %s, received %s", jsonType(te.Type.Kind().String()), te.Value),
			Path:    path,
		})
	}
	var fe *FieldErr
	if errors.As(err, &fe) {
		return store.Invalid("invalid_body", "The request body is invalid.", store.FieldError{
			Code: "invalid_type", Message: fe.Message, Path: fe.Path,
		})
	}
	return store.Invalid("invalid_body", "The request body is not valid JSON.")
}

// FieldErr is returned by custom UnmarshalJSON methods to name a field.
type FieldErr struct {
	Path    []string
	Message string
}

func (e *FieldErr) Error() string { return strings.Join(e.Path, ".") + ": " + e.Message }

func jsonType(kind string) string {
	switch kind {
	case "string":
		return "string"
	case "bool":
		return "boolean"
	case "map", "struct":
		return "object"
	case "slice", "array":
		return "array"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64", "float32", "float64":
		return "number"
	}
	return kind
}

// QueryBool parses a string boolean query parameter: absent is false, "true"
// and "false" are accepted (case-insensitively, also 1 and 0), anything else
// is invalid_query_params.
func QueryBool(r *http.Request, name string) (bool, error) {
	return BoolParam(r.URL.Query(), name)
}

// BoolParam is QueryBool on a query already parsed: a handler that reads
// several parameters parses the query once.
func BoolParam(q url.Values, name string) (bool, error) {
	v := q.Get(name)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(strings.ToLower(v))
	if err != nil {
		return false, store.Invalid("invalid_query_params", "The query is invalid.", store.FieldError{
			Code: "invalid_type", Message: fmt.Sprintf("%s must be true or false", name), Path: []string{name},
		})
	}
	return b, nil
}

// QueryInt parses a non-negative integer query parameter within [min, max].
// def is returned when it is absent.
func QueryInt(r *http.Request, name string, def, min, max int) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < min || n > max {
		return 0, store.Invalid("invalid_query_params", "The query is invalid.", store.FieldError{
			Code: "invalid_value", Message: fmt.Sprintf("%s must be an integer from %d to %d", name, min, max), Path: []string{name},
		})
	}
	return n, nil
}

// InvalidQuery builds an invalid_query_params error for one parameter.
func InvalidQuery(name, message string) error {
	return store.Invalid("invalid_query_params", "The query is invalid.", store.FieldError{
		Code: "invalid_value", Message: message, Path: []string{name},
	})
}

// InvalidField builds an invalid_body error for one field.
func InvalidField(message string, path ...string) error {
	return store.Invalid("invalid_body", "The request body is invalid.", store.FieldError{
		Code: "invalid_value", Message: message, Path: path,
	})
}

// TimeFormat is how timestamps are written: ISO 8601 in UTC with
// milliseconds, as JavaScript's Date.toISOString writes them.
const TimeFormat = "2006-01-02T15:04:05.000Z07:00"

// Time formats t in TimeFormat.
func Time(t time.Time) string { return t.UTC().Format(TimeFormat) }

// TimePtr formats t, or returns nil for nil.
func TimePtr(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := Time(*t)
	return &s
}
