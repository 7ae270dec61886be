package proxy

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/embedauth/connect/store"
)

// Request headers of the proxy route, as @nangohq/node sends them.
const (
	HeaderConnectionID             = "Connection-Id"
	HeaderProviderConfigKey        = "Provider-Config-Key"
	HeaderBaseURLOverride          = "Base-Url-Override"
	HeaderRetries                  = "Retries"
	HeaderRetryOn                  = "Retry-On"
	HeaderDecompress               = "Decompress"
	HeaderForwardHeadersOnRedirect = "Forward-Headers-On-Redirect"
	HeaderActivityLogID            = "Nango-Activity-Log-Id"
	// HeaderPrefix marks a caller header meant for the upstream: it is
	// sent without the prefix (matched case-insensitively).
	HeaderPrefix = "Nango-Proxy-"
)

// CodeInvalidHeaders is the error code of malformed proxy headers.
const CodeInvalidHeaders = "invalid_headers"

// Options are the per-call options of a proxied request.
type Options struct {
	// BaseURLOverride replaces the provider's base URL. Empty means the
	// provider's.
	BaseURLOverride string
	// Retries is how many times a failed call is retried (0: none).
	Retries int
	// RetryOn lists extra statuses to retry, beyond 5xx and 429.
	RetryOn []int
	// Decompress decodes gzip or deflate response bodies before they are
	// returned (the provider's decompress flag has the same effect).
	Decompress bool
	// ForwardHeadersOnRedirect keeps every header, the credentials
	// included, when a redirect leads to another host.
	ForwardHeadersOnRedirect bool
}

// ParseHeaders reads the routing and option headers of a proxy request:
// Connection-Id and Provider-Config-Key (required), Base-Url-Override (an
// absolute http(s) URL or empty), Retries (0 to maxRetries), Retry-On
// (comma-separated status codes), Decompress and Forward-Headers-On-Redirect
// (true or false), and the flags Nango-Is-Sync, Nango-Is-Dry-Run and
// Nango-Is-Script (true or false). Nango-Activity-Log-Id is accepted, even
// empty, and ignored. Every problem is listed in one invalid_headers error.
func ParseHeaders(h http.Header, maxRetries int) (integrationKey, connectionID string, opts Options, err error) {
	var fe []store.FieldError
	bad := func(name, code, msg string) {
		fe = append(fe, store.FieldError{Code: code, Message: msg, Path: []string{strings.ToLower(name)}})
	}
	connectionID = strings.TrimSpace(h.Get(HeaderConnectionID))
	if connectionID == "" {
		bad(HeaderConnectionID, "required", "is required")
	}
	integrationKey = strings.TrimSpace(h.Get(HeaderProviderConfigKey))
	if integrationKey == "" {
		bad(HeaderProviderConfigKey, "required", "is required")
	}
	if v := strings.TrimSpace(h.Get(HeaderBaseURLOverride)); v != "" {
		if _, perr := parseBaseURL(v); perr != nil {
			bad(HeaderBaseURLOverride, "invalid_string", "must be an absolute http or https URL or empty")
		} else {
			opts.BaseURLOverride = v
		}
	}
	if v := strings.TrimSpace(h.Get(HeaderRetries)); v != "" {
		n, perr := strconv.Atoi(v)
		switch {
		case perr != nil || n < 0:
			bad(HeaderRetries, "invalid_type", "must be a non-negative integer")
		case n > maxRetries:
			bad(HeaderRetries, "too_big", "must be at most "+strconv.Itoa(maxRetries))
		default:
			opts.Retries = n
		}
	}
	if vs, ok := h[http.CanonicalHeaderKey(HeaderRetryOn)]; ok {
		codes, perr := parseRetryOn(strings.Join(vs, ","))
		if perr != "" {
			bad(HeaderRetryOn, "invalid_string", perr)
		} else {
			opts.RetryOn = codes
		}
	}
	for _, f := range []struct {
		name string
		dst  *bool
	}{
		{HeaderDecompress, &opts.Decompress},
		{HeaderForwardHeadersOnRedirect, &opts.ForwardHeadersOnRedirect},
		{"Nango-Is-Sync", nil},
		{"Nango-Is-Dry-Run", nil},
		{"Nango-Is-Script", nil},
	} {
		v := strings.TrimSpace(h.Get(f.name))
		if v == "" {
			continue
		}
		b, ok := parseBool(v)
		if !ok {
			bad(f.name, "invalid_enum_value", "must be true or false")
			continue
		}
		if f.dst != nil {
			*f.dst = b
		}
	}
	if len(fe) > 0 {
		names := make([]string, len(fe))
		for i, f := range fe {
			names[i] = f.Path[0]
		}
		return "", "", Options{}, store.Invalid(CodeInvalidHeaders,
			"Invalid proxy headers: "+strings.Join(names, ", ")+".", fe...)
	}
	return integrationKey, connectionID, opts, nil
}

func parseBool(v string) (bool, bool) {
	switch strings.ToLower(v) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	return false, false
}

// parseRetryOn parses "429,503": digits separated by commas, each a status
// code from 100 to 599. It returns a problem description, or "".
func parseRetryOn(v string) ([]int, string) {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil, "must be a comma-separated list of status codes such as 429,503"
	}
	parts := strings.Split(v, ",")
	if len(parts) > 100 {
		return nil, "lists more than 100 status codes"
	}
	codes := make([]int, 0, len(parts))
	for _, p := range parts {
		p = strings.TrimSpace(p)
		if p == "" || len(p) > 3 || strings.Trim(p, "0123456789") != "" {
			return nil, "must be a comma-separated list of status codes such as 429,503"
		}
		n, _ := strconv.Atoi(p)
		if n < 100 || n > 599 {
			return nil, "status codes must be between 100 and 599"
		}
		codes = append(codes, n)
	}
	return codes, ""
}

// parseBaseURL parses an absolute http or https URL without user info or
// fragment.
func parseBaseURL(v string) (*url.URL, error) {
	u, err := url.Parse(v)
	if err != nil {
		return nil, err
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.Opaque != "" {
		return nil, errNotHTTPURL
	}
	u.Fragment, u.RawFragment = "", ""
	return u, nil
}

// ParseRetryAfter reads a Retry-After value: delay seconds, or an HTTP date
// (a date in the past is a zero wait). ok is false when v is neither.
func ParseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n < 0 {
			return 0, false
		}
		if n > maxHeaderWait {
			n = maxHeaderWait
		}
		return time.Duration(n) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		d := t.Sub(now)
		if d < 0 {
			d = 0
		}
		return min(d, maxHeaderWait*time.Second), true
	}
	return 0, false
}

// ParseResetAt reads a rate-limit reset header holding an absolute time:
// Unix seconds, Unix milliseconds, or an HTTP or RFC 3339 date. It returns
// the wait from now (zero when the time has passed).
func ParseResetAt(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	var t time.Time
	if n, err := strconv.ParseFloat(v, 64); err == nil {
		if n < 0 || n > 1e15 {
			return 0, false
		}
		if n > 1e11 { // milliseconds: seconds this large are past the year 5000
			n /= 1000
		}
		if n < 1e9 { // a small number: a delay in seconds (some APIs send one)
			return min(time.Duration(n*float64(time.Second)), maxHeaderWait*time.Second), true
		}
		t = time.Unix(0, int64(n*1e9))
	} else if pt, err := http.ParseTime(v); err == nil {
		t = pt
	} else if pt, err := time.Parse(time.RFC3339, v); err == nil {
		t = pt
	} else {
		return 0, false
	}
	d := t.Sub(now)
	if d < 0 {
		d = 0
	}
	return min(d, maxHeaderWait*time.Second), true
}

// maxHeaderWait caps the waits read from headers, in seconds (a day), so
// that absurd values cannot overflow.
const maxHeaderWait = 86400
