package webhooks

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Headers of every webhook POST.
const (
	// HeaderHMAC is the lowercase hex HMAC-SHA256 of the body keyed with
	// the environment's signing key.
	HeaderHMAC = "X-Svc-Hmac-Sha256"
	// HeaderNangoHMAC carries the same value as HeaderHMAC under the name
	// that Nango's verifyIncomingWebhookRequest (@nangohq/node) reads, so
	// that receivers written for Nango verify webhooks unchanged.
	HeaderNangoHMAC = "X-Nango-Hmac-Sha256"
	// HeaderLegacySignature is the lowercase hex SHA-256 of the key
	// followed by the body. It is sent for receivers of Nango's deprecated
	// verifyWebhookSignature only; it is open to length extension, do not
	// use it.
	HeaderLegacySignature = "X-Svc-Signature"
	// HeaderNangoLegacySignature carries the same value as
	// HeaderLegacySignature under Nango's name for it; do not use it
	// either.
	HeaderNangoLegacySignature = "X-Nango-Signature"
	// HeaderDeliveryID identifies the delivery; it is the same for every
	// attempt, so that a receiver can drop duplicates.
	HeaderDeliveryID = "X-Svc-Delivery-Id"
	// HeaderTimestamp is the time of the attempt in Unix seconds.
	HeaderTimestamp = "X-Svc-Timestamp"
	// HeaderSignature is "v1=" followed by the lowercase hex HMAC-SHA256,
	// keyed with the signing key, of the delivery id, ".", the timestamp,
	// "." and the body. It binds the body to the attempt's time, so that a
	// receiver can refuse replays (see VerifyOptions.Tolerance).
	HeaderSignature = "X-Svc-Webhook-Signature"
)

// signatureVersion prefixes the value of HeaderSignature.
const signatureVersion = "v1="

// ErrInvalidSignature is matched (errors.Is) by every error of Verify.
var ErrInvalidSignature = errors.New("webhooks: invalid signature")

// Canonical returns v as compact JSON with the keys of every object sorted,
// the form in which webhook bodies are signed and sent. v is marshaled, then
// decoded with numbers kept as written and re-encoded, so numbers are
// preserved exactly. HTML characters are not escaped.
func Canonical(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return CanonicalJSON(raw)
}

// CanonicalJSON re-encodes one JSON value in canonical form (see Canonical).
func CanonicalJSON(raw []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var x any
	if err := dec.Decode(&x); err != nil {
		return nil, fmt.Errorf("webhooks: canonical JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("webhooks: canonical JSON: data after the value")
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	// Maps are encoded with sorted keys.
	if err := enc.Encode(x); err != nil {
		return nil, fmt.Errorf("webhooks: canonical JSON: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func hmacHex(key string, parts ...[]byte) string {
	m := hmac.New(sha256.New, []byte(key))
	for _, p := range parts {
		m.Write(p)
	}
	return hex.EncodeToString(m.Sum(nil))
}

// legacySignature is sha256(key ‖ body), hex.
func legacySignature(key string, body []byte) string {
	h := sha256.New()
	h.Write([]byte(key))
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

func timestampedSignature(key, deliveryID, ts string, body []byte) string {
	return signatureVersion + hmacHex(key, []byte(deliveryID), []byte("."), []byte(ts), []byte("."), body)
}

// Sign returns the headers of one attempt to deliver body, signed with key:
// Content-Type, HeaderHMAC and HeaderNangoHMAC, HeaderLegacySignature and
// HeaderNangoLegacySignature, HeaderDeliveryID, HeaderTimestamp (at, in
// Unix seconds) and HeaderSignature.
func Sign(key string, body []byte, deliveryID string, at time.Time) http.Header {
	ts := strconv.FormatInt(at.Unix(), 10)
	mac, legacy := hmacHex(key, body), legacySignature(key, body)
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set(HeaderHMAC, mac)
	h.Set(HeaderNangoHMAC, mac)
	h.Set(HeaderLegacySignature, legacy)
	h.Set(HeaderNangoLegacySignature, legacy)
	h.Set(HeaderDeliveryID, deliveryID)
	h.Set(HeaderTimestamp, ts)
	h.Set(HeaderSignature, timestampedSignature(key, deliveryID, ts, body))
	return h
}

// VerifyOptions tunes Verify. The zero value checks HeaderHMAC only.
type VerifyOptions struct {
	// Tolerance, when positive, makes Verify check HeaderSignature instead
	// of HeaderHMAC and require HeaderTimestamp within Tolerance of Now,
	// which refuses replays of old requests. Five minutes is usual.
	Tolerance time.Duration
	// Now returns the current time; defaults to time.Now.
	Now func() time.Time
}

// Verify checks a webhook request's signature against its raw body and the
// environment's signing key, in constant time. It returns nil when the
// request is authentic, else an error matching ErrInvalidSignature.
//
// Without opts (or with a zero Tolerance) it checks HeaderHMAC, like
// Nango's verifyIncomingWebhookRequest. With a positive Tolerance it checks
// HeaderSignature over the delivery id, timestamp and body, and that the
// timestamp is within the tolerance.
//
// It fails closed: an empty key, or a missing, repeated, empty, non-hex,
// uppercase, wrong-length or otherwise malformed header is an error. With a
// Tolerance, the delivery id must be 1 to 128 letters, digits, '-' or '_'
// (ids are UUIDs), so that the "." separators of the signed string cannot
// be moved.
func Verify(h http.Header, body []byte, key string, opts *VerifyOptions) error {
	if key == "" {
		return fmt.Errorf("%w: empty signing key", ErrInvalidSignature)
	}
	if opts == nil || opts.Tolerance <= 0 {
		got, err := single(h, HeaderHMAC)
		if err != nil {
			return err
		}
		if !isLowerHex(got, sha256.Size*2) {
			return fmt.Errorf("%w: %s is not 64 lowercase hex digits", ErrInvalidSignature, HeaderHMAC)
		}
		if !hmac.Equal([]byte(got), []byte(hmacHex(key, body))) {
			return fmt.Errorf("%w: %s does not match", ErrInvalidSignature, HeaderHMAC)
		}
		return nil
	}
	sig, err := single(h, HeaderSignature)
	if err != nil {
		return err
	}
	ts, err := single(h, HeaderTimestamp)
	if err != nil {
		return err
	}
	id, err := single(h, HeaderDeliveryID)
	if err != nil {
		return err
	}
	hexSig, ok := strings.CutPrefix(sig, signatureVersion)
	if !ok || !isLowerHex(hexSig, sha256.Size*2) {
		return fmt.Errorf("%w: %s is not v1= and 64 lowercase hex digits", ErrInvalidSignature, HeaderSignature)
	}
	if !validDeliveryID(id) {
		return fmt.Errorf("%w: %s is not 1 to 128 letters, digits, '-' or '_'", ErrInvalidSignature, HeaderDeliveryID)
	}
	if len(ts) > 12 || !isDigits(ts) || (len(ts) > 1 && ts[0] == '0') {
		return fmt.Errorf("%w: %s is not Unix seconds", ErrInvalidSignature, HeaderTimestamp)
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: %s is not Unix seconds", ErrInvalidSignature, HeaderTimestamp)
	}
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	if d := now().Sub(time.Unix(sec, 0)); d > opts.Tolerance || d < -opts.Tolerance {
		return fmt.Errorf("%w: %s is outside the tolerance of %s", ErrInvalidSignature, HeaderTimestamp, opts.Tolerance)
	}
	if !hmac.Equal([]byte(sig), []byte(timestampedSignature(key, id, ts, body))) {
		return fmt.Errorf("%w: %s does not match", ErrInvalidSignature, HeaderSignature)
	}
	return nil
}

// single returns the one non-empty value of header name. Keys are compared
// case-insensitively, so a header map built by hand with a non-canonical
// key cannot smuggle in a second value.
func single(h http.Header, name string) (string, error) {
	var vals []string
	for k, vs := range h {
		if strings.EqualFold(k, name) {
			vals = append(vals, vs...)
		}
	}
	switch {
	case len(vals) == 0:
		return "", fmt.Errorf("%w: missing %s", ErrInvalidSignature, name)
	case len(vals) > 1:
		return "", fmt.Errorf("%w: %d values of %s", ErrInvalidSignature, len(vals), name)
	case vals[0] == "":
		return "", fmt.Errorf("%w: empty %s", ErrInvalidSignature, name)
	}
	return vals[0], nil
}

func isLowerHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// validDeliveryID reports whether id can be part of the signed string: it
// must not contain the "." separator, or the split into id, timestamp and
// body would be ambiguous.
func validDeliveryID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
