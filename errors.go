package connect

import (
	"net/http"

	"github.com/embedauth/connect/store"
)

// The error vocabulary, re-exported from package store. Every error of the
// Service matches at most one of these under errors.Is.
var (
	ErrNotFound     = store.ErrNotFound
	ErrConflict     = store.ErrConflict
	ErrInvalid      = store.ErrInvalid
	ErrUnauthorized = store.ErrUnauthorized
	ErrForbidden    = store.ErrForbidden
	ErrRateLimited  = store.ErrRateLimited
	ErrUnavailable  = store.ErrUnavailable
	// ErrEncryptionKey: a sealed value names an encryption key the Service
	// does not hold, or does not open with the key of that id (see
	// Service.CheckEncryptionKeys).
	ErrEncryptionKey = store.ErrEncryptionKey
)

// Error is an error with a wire code; see store.Error.
type Error = store.Error

func notFoundRoute(r *http.Request) error {
	return store.NotFound("not_found", "No route %s %s.", r.Method, r.URL.Path)
}
