// Package sigcheck verifies request signatures independently of the code
// that makes them, for tests: OAuth 1 HMAC-SHA256 (RFC 5849, as NetSuite
// TBA signs) and AWS Signature Version 4, each written from its
// specification. Tests use it as the fake provider's side, so that a bug in
// the service's signing cannot be mirrored by the check.
package sigcheck
