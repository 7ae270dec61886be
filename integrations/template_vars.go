package integrations

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// TemplateVars are the values a template's variables resolve to.
type TemplateVars struct {
	// ConnectionConfig resolves ${connectionConfig.KEY}.
	ConnectionConfig map[string]string
	// Credentials resolves ${credentials.KEY}.
	Credentials map[string]string
	// APIKey resolves ${apiKey}; when empty, Credentials["apiKey"] is used.
	APIKey string
	// AccessToken resolves ${accessToken}.
	AccessToken string
	// ClientID resolves ${clientId}, the integration's OAuth client ID.
	ClientID string
	// ClientSecret resolves ${clientSecret}.
	ClientSecret string
	// Raw is the raw token response of the connection: it resolves
	// ${credentials.raw.PATH}, PATH being dot-separated keys into nested
	// objects ("credentials.raw.a.b").
	Raw map[string]any
	// Extra resolves the other bare names: ${token}, ${refresh_token},
	// ${apiSubdomain}, ${step1.access_token}, ${assertionOption.privateKey}...
	// A dotted name is looked up through nested maps, then as a key that
	// holds the dots.
	Extra map[string]any
	// Request is the request a template's value is computed for: it
	// resolves ${method}, ${host}, ${path}, ${endpoint}, ${params},
	// ${urlCanonicalParams}, ${bodyCanonicalParams}, ${contentType} and is
	// what awsSigV4 signs. Nil outside a request: those values are then
	// missing.
	Request *TemplateRequest
	// Now is the clock of ${now}; nil means time.Now. Times are written in
	// UTC.
	Now func() time.Time
	// Random returns the value of ${random}; nil means a random UUID
	// (version 4, lower-case hex with hyphens).
	Random func() string
}

// TemplateRequest is an outgoing request as templates see it.
type TemplateRequest struct {
	// Method is the HTTP method, such as "GET".
	Method string
	// URL is the request's absolute URL.
	URL *url.URL
	// Endpoint is the endpoint the caller asked for, relative to the base
	// URL, with its query as Nango's ${endpoint} has it
	// ("/v1/users?page=2").
	Endpoint string
	// Body is the request body (nil for none).
	Body []byte
	// ContentType is the request's Content-Type header.
	ContentType string
}

// Stable returns a copy of tv whose Now and Random each return one value,
// taken on first use, so that the templates of one request agree on them
// (a date header and the signature that covers it; an id header and the
// digest that includes it). Use one Stable copy per request.
func (tv TemplateVars) Stable() TemplateVars {
	now := tv.Now
	if now == nil {
		now = time.Now
	}
	random := tv.Random
	if random == nil {
		random = randomUUID
	}
	s := &stableValues{now: now, random: random}
	tv.Now, tv.Random = s.Now, s.Rand
	return tv
}

type stableValues struct {
	nowOnce, randOnce sync.Once
	now               func() time.Time
	random            func() string
	t                 time.Time
	r                 string
}

func (s *stableValues) Now() time.Time {
	s.nowOnce.Do(func() { s.t = s.now() })
	return s.t
}

func (s *stableValues) Rand() string {
	s.randOnce.Do(func() { s.r = s.random() })
	return s.r
}

func (tv *TemplateVars) now() time.Time {
	if tv.Now != nil {
		return tv.Now().UTC()
	}
	return time.Now().UTC()
}

func (tv *TemplateVars) random() string {
	if tv.Random != nil {
		return tv.Random()
	}
	return randomUUID()
}

// randomUUID returns a random (version 4) UUID.
func randomUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand panics on failure)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	var out [36]byte
	hex.Encode(out[0:8], b[0:4])
	out[8] = '-'
	hex.Encode(out[9:13], b[4:6])
	out[13] = '-'
	hex.Encode(out[14:18], b[6:8])
	out[18] = '-'
	hex.Encode(out[19:23], b[8:10])
	out[23] = '-'
	hex.Encode(out[24:], b[10:])
	return string(out[:])
}

// How a variable is resolved.
type varRoot uint8

const (
	rootConfig varRoot = iota + 1
	rootCredentials
	rootRaw
	rootBare
	rootRequest
)

// The bare names a template may use: the connection's own values, and the
// names of Nango's two-step, JWT and SAML flows (resolved from
// TemplateVars.Extra). stepN.PATH and assertionOption.PATH are allowed too.
var bareNames = []string{"apiKey", "accessToken", "clientId", "clientSecret", "token", "refresh_token", "apiSubdomain"}

// The request values a template may use.
var requestNames = []string{"method", "host", "path", "endpoint", "params", "urlCanonicalParams", "bodyCanonicalParams", "contentType"}

// classify checks a variable's name and says how it resolves.
func classify(name string) (varRoot, error) {
	for _, prefix := range []string{"connectionConfig.", "credentials."} {
		if k, ok := strings.CutPrefix(name, prefix); ok {
			if k == "" || strings.HasPrefix(k, ".") || strings.HasSuffix(k, ".") || strings.Contains(k, "..") {
				return 0, fmt.Errorf("bad placeholder %q", name)
			}
			if prefix == "connectionConfig." {
				return rootConfig, nil
			}
			if p, ok := strings.CutPrefix(k, "raw."); ok && p != "" {
				return rootRaw, nil
			}
			return rootCredentials, nil
		}
	}
	if slices.Contains(bareNames, name) {
		return rootBare, nil
	}
	if slices.Contains(requestNames, name) {
		return rootRequest, nil
	}
	if head, rest, ok := strings.Cut(name, "."); ok && rest != "" && !strings.HasSuffix(rest, ".") && !strings.Contains(rest, "..") {
		if head == "assertionOption" {
			return rootBare, nil
		}
		if n, ok := strings.CutPrefix(head, "step"); ok && n != "" && strings.Trim(n, "0123456789") == "" {
			return rootBare, nil
		}
	}
	return 0, fmt.Errorf("unknown variable %q (want connectionConfig.KEY, credentials.KEY, credentials.raw.PATH, %s, stepN.PATH, assertionOption.PATH, %s, now or random)",
		name, strings.Join(bareNames, ", "), strings.Join(requestNames, ", "))
}

// lookup returns the value of a variable and whether it has one. An empty
// value is no value, except for request values (an empty query is one).
func (tv *TemplateVars) lookup(name string, root varRoot) (string, bool) {
	switch root {
	case rootConfig:
		v := tv.ConnectionConfig[name[len("connectionConfig."):]]
		return v, v != ""
	case rootCredentials:
		v := tv.Credentials[name[len("credentials."):]]
		return v, v != ""
	case rootRaw:
		return lookupPath(tv.Raw, name[len("credentials.raw."):])
	case rootRequest:
		return tv.requestValue(name)
	}
	var v string
	switch name {
	case "apiKey":
		v = tv.APIKey
		if v == "" {
			v = tv.Credentials["apiKey"]
		}
	case "accessToken":
		v = tv.AccessToken
	case "clientId":
		v = tv.ClientID
	case "clientSecret":
		v = tv.ClientSecret
	}
	if v != "" {
		return v, true
	}
	return lookupPath(tv.Extra, name)
}

// lookupPath looks a dotted path up in nested maps, then as a key holding the
// dots. Strings and numbers have values; anything else does not.
func lookupPath(m map[string]any, p string) (string, bool) {
	if m == nil {
		return "", false
	}
	var cur any = m
	rest := p
	for rest != "" {
		obj, ok := cur.(map[string]any)
		if !ok {
			cur = nil
			break
		}
		var k string
		k, rest, _ = strings.Cut(rest, ".")
		if cur, ok = obj[k]; !ok {
			break
		}
	}
	if s, ok := scalar(cur); ok && rest == "" {
		return s, true
	}
	if s, ok := scalar(m[p]); ok {
		return s, true
	}
	return "", false
}

// scalar writes a string or a number as text; "" has no value.
func scalar(v any) (string, bool) {
	var s string
	switch v := v.(type) {
	case string:
		s = v
	case json.Number:
		s = v.String()
	case float64:
		s = strconv.FormatFloat(v, 'f', -1, 64)
	case float32:
		s = strconv.FormatFloat(float64(v), 'f', -1, 32)
	case int:
		s = strconv.Itoa(v)
	case int64:
		s = strconv.FormatInt(v, 10)
	case int32:
		s = strconv.FormatInt(int64(v), 10)
	case uint64:
		s = strconv.FormatUint(v, 10)
	default:
		return "", false
	}
	return s, s != ""
}

// requestValue returns a request value.
func (tv *TemplateVars) requestValue(name string) (string, bool) {
	r := tv.Request
	if r == nil || r.URL == nil {
		return "", false
	}
	switch name {
	case "method":
		return r.Method, r.Method != ""
	case "host":
		return r.URL.Host, true
	case "path":
		p := r.URL.EscapedPath()
		if p == "" {
			p = "/"
		}
		return p, true
	case "endpoint":
		return r.Endpoint, true
	case "params":
		return canonicalParams(r.Method, r.Body, r.ContentType, r.URL.RawQuery), true
	case "urlCanonicalParams":
		return canonicalParams(http.MethodGet, nil, "", r.URL.RawQuery), true
	case "bodyCanonicalParams":
		return string(r.Body), true
	case "contentType":
		return r.ContentType, true
	}
	return "", false
}

// canonicalParams is the parameter string of Duo's request signing (and
// Nango's ${params}): the form-encoded body of a POST, PUT or PATCH (a JSON
// object body: its top-level members), else the URL's query; sorted by
// name, each name and value percent-encoded as RFC 3986 says (upper-case
// hex, '~' kept), joined with '&'.
func canonicalParams(method string, body []byte, contentType, rawQuery string) string {
	type kv struct{ k, v string }
	var pairs []kv
	switch method {
	case "POST", "PUT", "PATCH":
		if len(body) == 0 {
			return ""
		}
		var obj map[string]any
		if strings.Contains(strings.ToLower(contentType), "json") || (body[0] == '{' && json.Valid(body)) {
			d := json.NewDecoder(strings.NewReader(string(body)))
			d.UseNumber()
			if d.Decode(&obj) != nil {
				return ""
			}
			for k, v := range obj {
				s, ok := scalar(v)
				if !ok {
					switch v := v.(type) {
					case bool:
						s = strconv.FormatBool(v)
					case nil:
						s = "null"
					default:
						b, _ := json.Marshal(v)
						s = string(b)
					}
				}
				pairs = append(pairs, kv{k, s})
			}
			break
		}
		rawQuery = strings.TrimPrefix(string(body), "?")
		fallthrough
	default:
		for _, part := range strings.Split(rawQuery, "&") {
			if part == "" {
				continue
			}
			k, v, _ := strings.Cut(part, "=")
			k, _ = url.QueryUnescape(k)
			v, _ = url.QueryUnescape(v)
			pairs = append(pairs, kv{k, v})
		}
	}
	slices.SortStableFunc(pairs, func(a, b kv) int { return strings.Compare(a.k, b.k) })
	var b strings.Builder
	for i, p := range pairs {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(rfc3986(p.k))
		b.WriteByte('=')
		b.WriteString(rfc3986(p.v))
	}
	return b.String()
}

// rfc3986 percent-encodes all but the unreserved characters.
func rfc3986(s string) string {
	return strings.ReplaceAll(url.QueryEscape(s), "+", "%20")
}

// MissingValueError reports the placeholders of a template that had no
// value (or an empty one) in every alternative.
type MissingValueError struct {
	// Template is the template that could not be resolved.
	Template string
	// Names are the placeholders without a value, without "${" and "}",
	// such as "connectionConfig.subdomain", in template order.
	Names []string
}

func (e *MissingValueError) Error() string {
	return fmt.Sprintf("integrations: template %q: no value for %s", e.Template, strings.Join(e.Names, ", "))
}

// Interpolate resolves tmpl from vars: it parses the template (once: parsed
// templates are cached) and evaluates it; see [ParseTemplate] and
// [Template.Eval]. Values are inserted as they are, without escaping, and
// are not themselves expanded.
//
// When no alternative can be resolved the error is a *MissingValueError
// naming the placeholders without values. A malformed template (an
// unterminated "${", an empty or unknown variable) is a *TemplateError.
func Interpolate(tmpl string, vars TemplateVars) (string, error) {
	if !strings.Contains(tmpl, "${") && !strings.Contains(tmpl, "||") {
		return tmpl, nil
	}
	t, err := parseCached(tmpl)
	if err != nil {
		return "", err
	}
	return t.Eval(&vars)
}

// Placeholders returns the variable names used by tmpl, in order and
// without duplicates, such as ["connectionConfig.subdomain", "apiKey"]
// (see [Template.Names]). It returns an error when the template does not
// parse.
func Placeholders(tmpl string) ([]string, error) {
	if !strings.Contains(tmpl, "${") {
		return nil, nil
	}
	t, err := parseCached(tmpl)
	if err != nil {
		return nil, err
	}
	return t.Names(), nil
}

// errMissing is the internal signal of a missing value.
var errMissing = errors.New("missing")
