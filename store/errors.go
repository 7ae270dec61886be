package store

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error returned by a Store or a service matches at most
// one of them under errors.Is; the HTTP layer maps each to one status code.
var (
	// ErrNotFound means the record does not exist (in the caller's environment).
	ErrNotFound = errors.New("not found")
	// ErrConflict means a uniqueness constraint or an optimistic version check
	// failed.
	ErrConflict = errors.New("conflict")
	// ErrInvalid means the input was rejected by validation.
	ErrInvalid = errors.New("invalid input")
	// ErrUnauthorized means the caller could not be authenticated.
	ErrUnauthorized = errors.New("unauthorized")
	// ErrForbidden means the caller is authenticated but lacks a scope.
	ErrForbidden = errors.New("forbidden")
	// ErrRateLimited means the caller exceeded its request budget.
	ErrRateLimited = errors.New("rate limited")
	// ErrUnavailable means a dependency failed in a way the caller may retry.
	ErrUnavailable = errors.New("unavailable")
	// ErrEncryptionKey means a sealed value cannot be opened with the
	// encryption keys the Service holds: the key it names is missing (code
	// unknown_encryption_key), or the key of that id is not the one that
	// sealed it (code encryption_key_mismatch). It is a configuration error
	// of the server, answered with 500 and that code.
	ErrEncryptionKey = errors.New("encryption key missing")
)

// Codes of ErrEncryptionKey errors.
const (
	CodeUnknownEncryptionKey  = "unknown_encryption_key"
	CodeEncryptionKeyMismatch = "encryption_key_mismatch"
)

// FieldError describes one invalid field of an input, in the shape of the
// `errors` array of the wire error body.
type FieldError struct {
	Code    string   `json:"code"`
	Message string   `json:"message"`
	Path    []string `json:"path"`
}

// Error is an error with a machine-readable code. Kind is one of the sentinel
// errors of this package and is what errors.Is matches.
type Error struct {
	Kind    error
	Code    string
	Message string
	Errors  []FieldError
	// Payload is optional extra data sent in the error body.
	Payload any
	// Err is the underlying cause, never shown to API callers.
	Err error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Err)
	}
	return e.Code + ": " + e.Message
}

// Is reports whether target is the error's kind.
func (e *Error) Is(target error) bool { return target == e.Kind }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Errorf builds an *Error of the given kind and code.
func Errorf(kind error, code, format string, args ...any) *Error {
	return &Error{Kind: kind, Code: code, Message: fmt.Sprintf(format, args...)}
}

// Invalid builds an ErrInvalid error with field errors.
func Invalid(code, message string, fields ...FieldError) *Error {
	return &Error{Kind: ErrInvalid, Code: code, Message: message, Errors: fields}
}

// NotFound builds an ErrNotFound error.
func NotFound(code, format string, args ...any) *Error {
	return Errorf(ErrNotFound, code, format, args...)
}

// Conflict builds an ErrConflict error.
func Conflict(code, format string, args ...any) *Error {
	return Errorf(ErrConflict, code, format, args...)
}

// CodeOf returns the wire code of err, or "" when err carries none.
func CodeOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}
