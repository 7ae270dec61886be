package webhooks

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"hash"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/embedauth/connect/integrations"
)

// SignedRequest is the part of an incoming provider webhook that a
// provider signature can cover.
type SignedRequest struct {
	// Method is the HTTP method, such as "POST".
	Method string
	// URL is the full URL the provider called, such as
	// "https://connect.example.com/webhook/dev/hubspot?x=1".
	URL string
	// Header holds the request headers.
	Header http.Header
	// Body is the raw request body, exactly as received.
	Body []byte
}

// ErrInvalidProviderSignature is matched, with errors.Is, by every error that
// VerifyProviderSignature returns.
var ErrInvalidProviderSignature = errors.New("webhooks: invalid provider signature")

// Reasons a provider signature is refused, the Reason of a SignatureError.
const (
	// ReasonUnsupported: the signature data names an algorithm, encoding,
	// format, placeholder or timestamp unit this package does not know, or
	// is incomplete. The delivery is refused rather than accepted unchecked.
	ReasonUnsupported = "unsupported_scheme"
	// ReasonNoSecret: the integration has no secret to check with.
	ReasonNoSecret = "no_secret"
	// ReasonMissingHeader: the signature header is absent or empty.
	ReasonMissingHeader = "missing_header"
	// ReasonMalformedHeader: the signature header does not have the
	// expected shape (wrong prefix, repeated, bad key=value list).
	ReasonMalformedHeader = "malformed_header"
	// ReasonBadEncoding: the digest is not valid hex or base64.
	ReasonBadEncoding = "bad_encoding"
	// ReasonWrongLength: the digest has the wrong number of bytes.
	ReasonWrongLength = "wrong_length"
	// ReasonMissingTimestamp: the data requires a timestamp and there is
	// none.
	ReasonMissingTimestamp = "missing_timestamp"
	// ReasonBadTimestamp: the timestamp is not a non-negative integer.
	ReasonBadTimestamp = "malformed_timestamp"
	// ReasonStaleTimestamp: the timestamp is further than MaxAge from now,
	// in the past or in the future.
	ReasonStaleTimestamp = "stale_timestamp"
	// ReasonMismatch: the digest is well formed but wrong.
	ReasonMismatch = "mismatch"
)

// SignatureError says why a provider signature was refused. It never holds
// a secret, a digest or the body.
type SignatureError struct {
	// Reason is one of the Reason constants.
	Reason string
}

func (e *SignatureError) Error() string { return "webhooks: invalid provider signature: " + e.Reason }

// Is makes errors.Is(err, ErrInvalidProviderSignature) true.
func (e *SignatureError) Is(target error) bool { return target == ErrInvalidProviderSignature }

func sigErr(reason string) error { return &SignatureError{Reason: reason} }

// SignatureReason returns the Reason of a SignatureError in err's chain, or
// "" when there is none.
func SignatureReason(err error) string {
	var se *SignatureError
	if errors.As(err, &se) {
		return se.Reason
	}
	return ""
}

// maxSignatureElements bounds the elements of a key_value header, so that a
// hostile header cannot make verification compute many comparisons.
const maxSignatureElements = 32

// maxTimestampDigits bounds a timestamp: 19 digits fit an int64.
const maxTimestampDigits = 19

// VerifyProviderSignature checks the signature of an incoming provider
// webhook as the catalogue data sig describes it, with the secret that keys
// the HMAC, at time now. It returns nil only for a valid signature; every
// refusal is a *SignatureError matching ErrInvalidProviderSignature. It fails
// closed: a nil sig, an empty secret, data it does not understand, a
// missing, repeated or malformed header, a digest of bad encoding or
// length, and a missing, malformed or (when sig.MaxAge is set) stale
// timestamp are all refusals.
//
// The signed bytes follow sig.SignedPayload (default "${body}"), where
// ${body} is the raw body, ${timestamp} the timestamp text as received,
// ${method} the HTTP method and ${url} the full request URL. When ${url} is
// used, the URL is also tried with HubSpot's decoding of reserved
// characters (%3A to ':' and so on), which is how HubSpot signs it.
// Digests are compared in constant time.
func VerifyProviderSignature(sig *integrations.WebhookSignature, secret string, req SignedRequest, now time.Time) error {
	if sig == nil || sig.Header == "" {
		return sigErr(ReasonUnsupported)
	}
	newHash, size := hashFor(sig.Algorithm)
	if newHash == nil {
		return sigErr(ReasonUnsupported)
	}
	decode := decoderFor(sig.Encoding)
	if decode == nil {
		return sigErr(ReasonUnsupported)
	}
	tmpl := sig.SignedPayload
	if tmpl == "" {
		tmpl = "${body}"
	}
	parts, ok := parseSignedPayload(tmpl)
	if !ok {
		return sigErr(ReasonUnsupported)
	}
	usesTS, usesURL := false, false
	for _, p := range parts {
		usesTS = usesTS || p.kind == partTimestamp
		usesURL = usesURL || p.kind == partURL
	}
	kv := false
	switch sig.Format {
	case "", "plain":
	case "key_value":
		if sig.SignatureKey == "" {
			return sigErr(ReasonUnsupported)
		}
		kv = true
	default:
		return sigErr(ReasonUnsupported)
	}
	tsInHeader := kv && sig.TimestampKey != ""
	hasTSSource := tsInHeader || sig.TimestampHeader != ""
	if (usesTS || sig.MaxAge > 0) && !hasTSSource {
		return sigErr(ReasonUnsupported)
	}
	var unit time.Duration
	switch sig.TimestampUnit {
	case "", "seconds":
		unit = time.Second
	case "milliseconds":
		unit = time.Millisecond
	default:
		return sigErr(ReasonUnsupported)
	}
	if secret == "" {
		return sigErr(ReasonNoSecret)
	}

	raw, err := singleHeader(req.Header, sig.Header)
	if err != nil {
		return err
	}
	var candidates []string
	var ts string
	tsSeen := false
	if kv {
		elems := strings.Split(raw, ",")
		if len(elems) > maxSignatureElements {
			return sigErr(ReasonMalformedHeader)
		}
		for _, e := range elems {
			k, v, ok := strings.Cut(e, "=")
			k, v = strings.TrimSpace(k), strings.TrimSpace(v)
			if !ok || k == "" {
				return sigErr(ReasonMalformedHeader)
			}
			switch {
			case k == sig.SignatureKey:
				candidates = append(candidates, v)
			case tsInHeader && k == sig.TimestampKey:
				if tsSeen {
					return sigErr(ReasonMalformedHeader)
				}
				ts, tsSeen = v, true
			}
		}
		if len(candidates) == 0 {
			return sigErr(ReasonMalformedHeader)
		}
	} else {
		if !strings.HasPrefix(raw, sig.Prefix) {
			return sigErr(ReasonMalformedHeader)
		}
		candidates = []string{raw[len(sig.Prefix):]}
	}
	if hasTSSource && !tsInHeader {
		vals := req.Header.Values(sig.TimestampHeader)
		if len(vals) > 1 {
			return sigErr(ReasonBadTimestamp)
		}
		if len(vals) == 1 {
			ts, tsSeen = strings.TrimSpace(vals[0]), true
		}
	}
	if hasTSSource {
		if !tsSeen || ts == "" {
			return sigErr(ReasonMissingTimestamp)
		}
		n, ok := parseTimestamp(ts)
		if !ok {
			return sigErr(ReasonBadTimestamp)
		}
		if sig.MaxAge > 0 {
			var at time.Time
			if unit == time.Millisecond {
				at = time.UnixMilli(n)
			} else {
				at = time.Unix(n, 0)
			}
			age := now.Sub(at)
			limit := time.Duration(sig.MaxAge) * time.Second
			if age > limit || age < -limit {
				return sigErr(ReasonStaleTimestamp)
			}
		}
	}

	urls := []string{req.URL}
	if usesURL {
		if d := hubspotDecodeURL(req.URL); d != req.URL {
			urls = append(urls, d)
		}
	}
	expected := make([][]byte, 0, len(urls))
	for _, u := range urls {
		mac := hmac.New(newHash, []byte(secret))
		for _, p := range parts {
			switch p.kind {
			case partLiteral:
				mac.Write([]byte(p.lit))
			case partBody:
				mac.Write(req.Body)
			case partTimestamp:
				mac.Write([]byte(ts))
			case partMethod:
				mac.Write([]byte(req.Method))
			case partURL:
				mac.Write([]byte(u))
			}
		}
		expected = append(expected, mac.Sum(nil))
	}

	reason := ReasonMismatch
	wellFormed := false
	for _, c := range candidates {
		got, err := decode(c)
		if err != nil {
			reason = ReasonBadEncoding
			continue
		}
		if len(got) != size {
			reason = ReasonWrongLength
			continue
		}
		wellFormed = true
		for _, want := range expected {
			if hmac.Equal(got, want) {
				return nil
			}
		}
	}
	if wellFormed {
		reason = ReasonMismatch
	}
	return sigErr(reason)
}

// singleHeader returns the one value of the header, trimmed. An absent or
// empty header is missing; a repeated one is malformed.
func singleHeader(h http.Header, name string) (string, error) {
	vals := h.Values(name)
	switch {
	case len(vals) == 0:
		return "", sigErr(ReasonMissingHeader)
	case len(vals) > 1:
		return "", sigErr(ReasonMalformedHeader)
	}
	v := strings.TrimSpace(vals[0])
	if v == "" {
		return "", sigErr(ReasonMissingHeader)
	}
	return v, nil
}

func hashFor(alg string) (func() hash.Hash, int) {
	switch alg {
	case "HMAC-SHA256":
		return sha256.New, sha256.Size
	case "HMAC-SHA1":
		return sha1.New, sha1.Size
	}
	return nil, 0
}

func decoderFor(enc string) func(string) ([]byte, error) {
	switch enc {
	case "hex":
		return hex.DecodeString
	case "base64":
		return base64.StdEncoding.Strict().DecodeString
	}
	return nil
}

// parseTimestamp parses a non-negative decimal integer of at most 19 digits.
func parseTimestamp(s string) (int64, bool) {
	if len(s) == 0 || len(s) > maxTimestampDigits {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

type partKind int

const (
	partLiteral partKind = iota
	partBody
	partTimestamp
	partMethod
	partURL
)

type payloadPart struct {
	kind partKind
	lit  string
}

// parseSignedPayload splits a signed_payload template into literals and
// placeholders. An unknown or unterminated placeholder is not ok. The
// values substituted are never scanned again, so a body containing
// "${timestamp}" stays as it is.
func parseSignedPayload(tmpl string) ([]payloadPart, bool) {
	var parts []payloadPart
	for tmpl != "" {
		i := strings.Index(tmpl, "${")
		if i < 0 {
			parts = append(parts, payloadPart{kind: partLiteral, lit: tmpl})
			break
		}
		if i > 0 {
			parts = append(parts, payloadPart{kind: partLiteral, lit: tmpl[:i]})
		}
		j := strings.IndexByte(tmpl[i:], '}')
		if j < 0 {
			return nil, false
		}
		var k partKind
		switch tmpl[i+2 : i+j] {
		case "body":
			k = partBody
		case "timestamp":
			k = partTimestamp
		case "method":
			k = partMethod
		case "url":
			k = partURL
		default:
			return nil, false
		}
		parts = append(parts, payloadPart{kind: k})
		tmpl = tmpl[i+j+1:]
	}
	return parts, true
}

// hubspotReserved decodes the percent-encoded characters that HubSpot
// decodes in the request URI before signing (signature v3).
var hubspotReserved = func() *strings.Replacer {
	pairs := []string{}
	for _, p := range [][2]string{{"3A", ":"}, {"2F", "/"}, {"3F", "?"}, {"40", "@"}, {"21", "!"}, {"24", "$"},
		{"27", "'"}, {"28", "("}, {"29", ")"}, {"2A", "*"}, {"2C", ","}, {"3B", ";"}} {
		pairs = append(pairs, "%"+p[0], p[1])
		if lower := strings.ToLower(p[0]); lower != p[0] {
			pairs = append(pairs, "%"+lower, p[1])
		}
	}
	return strings.NewReplacer(pairs...)
}()

func hubspotDecodeURL(u string) string {
	if !strings.Contains(u, "%") {
		return u
	}
	return hubspotReserved.Replace(u)
}
