// Package httpapi is the thin HTTP layer shared by every feature package:
// routing with Go 1.22 patterns behind API-key authentication, scope checks
// and rate limiting; JSON decoding with size limits and precise 4xx errors;
// and the one table that maps errors to status codes and wire error bodies.
//
// Handlers return errors instead of writing them. An error that matches a
// sentinel of package store becomes its status (ErrInvalid 400,
// ErrUnauthorized 401, ErrForbidden 403, ErrNotFound 404, ErrConflict 409,
// ErrRateLimited 429, ErrUnavailable 503, ErrEncryptionKey 500 with its own
// code, such as unknown_encryption_key); anything else is logged and
// answered 500 with a generic message, so internal details never leak.
package httpapi
