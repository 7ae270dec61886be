package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"sync"

	"github.com/embedauth/connect/store"
)

// Style selects the shape of error bodies of a route.
type Style int

const (
	// StyleStandard answers {"error":{"code","message","errors"}}.
	StyleStandard Style = iota
	// StyleMessage answers {"message"}, the shape of the deprecated import
	// and delete routes.
	StyleMessage
)

// StatusError overrides the status code of an error.
type StatusError struct {
	Status int
	Err    *store.Error
}

func (e *StatusError) Error() string { return e.Err.Error() }
func (e *StatusError) Unwrap() error { return e.Err }

// WithStatus wraps err so that it is answered with status.
func WithStatus(status int, err *store.Error) error { return &StatusError{Status: status, Err: err} }

// kindStatus maps each sentinel of package store to its status, the code
// of an error that has none, and the message of an error that is not a
// *store.Error: a Store's or a driver's error (such as Postgres refusing a
// value), whose own text never reaches an answer.
var kindStatus = []struct {
	kind    error
	status  int
	code    string
	message string
}{
	{store.ErrInvalid, http.StatusBadRequest, "invalid_request", "The request holds a value that cannot be stored."},
	{store.ErrUnauthorized, http.StatusUnauthorized, "unauthorized", "Authentication failed."},
	{store.ErrForbidden, http.StatusForbidden, "forbidden", "The request is not allowed."},
	{store.ErrNotFound, http.StatusNotFound, "not_found", "The resource was not found."},
	{store.ErrConflict, http.StatusConflict, "conflict", "The request conflicts with the current state; retry it."},
	{store.ErrRateLimited, http.StatusTooManyRequests, "too_many_requests", "Rate limit exceeded."},
	{store.ErrUnavailable, http.StatusServiceUnavailable, "service_unavailable", "The service is temporarily unavailable; retry later."},
	{store.ErrEncryptionKey, http.StatusInternalServerError, store.CodeUnknownEncryptionKey, "A stored secret names an encryption key this service does not hold."},
}

// ErrorBody is the standard wire error body.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is the inside of ErrorBody.
type ErrorDetail struct {
	Code    string             `json:"code"`
	Message string             `json:"message,omitempty"`
	Errors  []store.FieldError `json:"errors,omitempty"`
	Payload any                `json:"payload,omitempty"`
}

// Resolve maps err to a status code and an error detail. Only a
// *store.Error's code and message are shown: an error that matches a
// store sentinel otherwise (a Store's or a driver's error) gets the
// sentinel's status with a generic message, and unknown errors are 500
// server_error with a generic message.
func Resolve(err error) (int, ErrorDetail) {
	var se *StatusError
	if errors.As(err, &se) {
		return se.Status, detail(se.Err, "")
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return http.StatusServiceUnavailable, ErrorDetail{Code: "request_timeout", Message: "The request was cancelled or timed out."}
	}
	for _, ks := range kindStatus {
		if errors.Is(err, ks.kind) {
			var e *store.Error
			if errors.As(err, &e) {
				return ks.status, detail(e, ks.code)
			}
			return ks.status, ErrorDetail{Code: ks.code, Message: ks.message}
		}
	}
	return http.StatusInternalServerError, ErrorDetail{Code: "server_error", Message: "An internal error occurred."}
}

func detail(e *store.Error, fallback string) ErrorDetail {
	code := e.Code
	if code == "" {
		code = fallback
	}
	return ErrorDetail{Code: code, Message: e.Message, Errors: e.Errors, Payload: e.Payload}
}

// WriteError writes err in the given style. 5xx errors, and errors that
// carry no *store.Error (a Store's own error, which the edge's validation
// should have prevented), are logged with the underlying cause; the cause
// never reaches the body. A request whose body RequireBodyProgress cut off
// is answered 408 request_timeout instead.
func WriteError(w http.ResponseWriter, r *http.Request, logger *slog.Logger, style Style, err error) {
	if BodyTimedOut(r.Context()) {
		// The handler's error, whatever it is, follows from the client
		// not sending its body (RequireBodyProgress).
		err = errBodyTimeout
	}
	status, d := Resolve(err)
	if logger != nil {
		if status >= 500 {
			logger.ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path, "status", status, "err", err)
		} else if _, ok := errors.AsType[*store.Error](err); !ok {
			logger.WarnContext(r.Context(), "request refused by the store", "method", r.Method, "path", r.URL.Path, "status", status, "err", err)
		}
	}
	var re *retryAfterError
	if errors.As(err, &re) {
		w.Header().Set("Retry-After", strconv.Itoa(re.seconds))
	}
	if style == StyleMessage {
		msg := d.Message
		if msg == "" {
			msg = d.Code
		}
		WriteJSON(w, status, map[string]string{"message": msg})
		return
	}
	WriteJSON(w, status, ErrorBody{Error: d})
}

// JSONAppender is a value that writes its own JSON encoding, as
// json.Marshal would, without reflection: WriteJSON uses it.
type JSONAppender interface {
	AppendJSON(dst []byte) ([]byte, error)
}

// WriteJSON writes v as JSON with the status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	buf := jsonBuffers.Get().(*bytes.Buffer)
	defer putJSONBuffer(buf)
	var err error
	if a, ok := v.(JSONAppender); ok {
		var b []byte
		if b, err = a.AppendJSON(buf.AvailableBuffer()); err == nil {
			buf.Write(append(b, '\n')) // b is buf's own free space: no copy
		}
	} else {
		// Encode writes what Marshal does, and the newline.
		err = json.NewEncoder(buf).Encode(v)
	}
	if err != nil {
		status = http.StatusInternalServerError
		buf.Reset()
		buf.WriteString(`{"error":{"code":"server_error","message":"An internal error occurred."}}` + "\n")
	}
	h := w.Header()
	// The keys are canonical already: no Set, which canonicalises them.
	h["Content-Type"] = jsonContentType
	h["Content-Length"] = []string{strconv.Itoa(buf.Len())}
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// jsonContentType is the Content-Type of WriteJSON's answers, shared by
// them: net/http only reads a header's values.
var jsonContentType = []string{"application/json; charset=utf-8"}

// jsonBuffers are WriteJSON's buffers.
var jsonBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// putJSONBuffer returns buf to jsonBuffers, unless a large body grew it:
// the pool keeps small buffers only.
func putJSONBuffer(buf *bytes.Buffer) {
	if buf.Cap() > 64<<10 {
		return
	}
	buf.Reset()
	jsonBuffers.Put(buf)
}

type retryAfterError struct {
	seconds int
	err     *store.Error
}

func (e *retryAfterError) Error() string { return e.err.Error() }
func (e *retryAfterError) Unwrap() error { return e.err }
