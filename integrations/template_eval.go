package integrations

import (
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// FunctionError is a template function that could not compute its value
// from the values it was given (a key that is not a key, say). It names
// the function, never the values.
type FunctionError struct {
	Template string
	Function string
	Problem  string
}

func (e *FunctionError) Error() string {
	t := e.Template
	if len(t) > 200 {
		t = t[:200] + "..."
	}
	return fmt.Sprintf("integrations: template %q: %s: %s", t, e.Function, e.Problem)
}

// Eval evaluates the template with vars: the first alternative whose
// values are all present (non-empty, except request values such as an
// empty ${params}) gives the value. When none does, the error is a
// *MissingValueError naming the variables without values; a function that
// cannot compute its value (ed25519Sign with a key that is not an Ed25519
// private key) is a *FunctionError. Errors name variables and functions,
// never values.
//
// Every ${now} and ${random} of one Eval, and of the Evals of one
// [TemplateVars.Stable] copy, has the same value.
func (t *Template) Eval(vars *TemplateVars) (string, error) {
	if vars == nil {
		vars = &TemplateVars{}
	}
	if len(t.alts) == 1 && len(t.alts[0]) == 1 {
		// One node: a literal, or a value returned as it is, without a
		// copy.
		switch n := &t.alts[0][0]; n.kind {
		case nodeLiteral:
			return n.text, nil
		case nodeVar:
			if v, ok := vars.lookup(n.text, n.root); ok {
				return v, nil
			}
			return "", &MissingValueError{Template: t.src, Names: []string{n.text}}
		case nodeRandom:
			return vars.random(), nil
		}
	}
	if t.perRequest && (vars.Now == nil || vars.Random == nil) {
		s := vars.Stable()
		vars = &s
	}
	e := evaluators.Get().(*evaluator)
	defer e.release()
	e.t, e.vars = t, vars
	var missing []string
	for _, alt := range t.alts {
		e.missing = e.missing[:0]
		e.buf = e.buf[:0]
		err := e.seq(alt)
		if err == nil {
			return string(e.buf), nil
		}
		if !errors.Is(err, errMissing) {
			return "", err
		}
		for _, m := range e.missing {
			if !containsString(missing, m) {
				missing = append(missing, m)
			}
		}
	}
	if len(missing) == 0 {
		missing = []string{"(a value)"}
	}
	return "", &MissingValueError{Template: t.src, Names: missing}
}

// An evaluator writes a template's value into buf, which it reuses from
// one evaluation to the next (evaluators are pooled): an evaluation
// allocates its result, and what functions allocate, but no intermediate
// text.
type evaluator struct {
	t       *Template
	vars    *TemplateVars
	missing []string
	buf     []byte
	args    [][]byte // the arguments of an appending function, parts of buf
}

var evaluators = sync.Pool{New: func() any { return &evaluator{buf: make([]byte, 0, 256)} }}

// maxPooledBuffer is the largest buffer an evaluator keeps when it goes
// back to the pool.
const maxPooledBuffer = 16 << 10

func (e *evaluator) release() {
	e.t, e.vars = nil, nil
	e.missing = e.missing[:0]
	clear(e.args[:cap(e.args)])
	e.args = e.args[:0]
	if cap(e.buf) > maxPooledBuffer {
		e.buf = make([]byte, 0, 256)
	}
	evaluators.Put(e)
}

// seq appends a sequence; errMissing when a value is missing (all missing
// names of the sequence are recorded first).
func (e *evaluator) seq(seq []node) error {
	var failed error
	for i := range seq {
		if err := e.node(&seq[i]); err != nil {
			if !errors.Is(err, errMissing) {
				return err
			}
			failed = err
		}
	}
	return failed
}

func (e *evaluator) node(n *node) error {
	switch n.kind {
	case nodeLiteral:
		e.buf = append(e.buf, n.text...)
	case nodeVar:
		v, ok := e.vars.lookup(n.text, n.root)
		if !ok {
			if !containsString(e.missing, n.text) {
				e.missing = append(e.missing, n.text)
			}
			return errMissing
		}
		e.buf = append(e.buf, v...)
	case nodeRandom:
		e.buf = append(e.buf, e.vars.random()...)
	case nodeNow:
		t := e.vars.now()
		switch n.unit {
		case "":
		case "M":
			t = t.AddDate(0, n.offset, 0)
		case "y":
			t = t.AddDate(n.offset, 0, 0)
		case "d":
			t = t.AddDate(0, 0, n.offset)
		case "w":
			t = t.AddDate(0, 0, 7*n.offset)
		default:
			t = t.Add(time.Duration(n.offset) * unitDurations[n.unit])
		}
		if n.format == nil {
			e.buf = t.AppendFormat(e.buf, "2006-01-02T15:04:05.000Z")
		} else {
			e.buf = appendDate(e.buf, t, n.format)
		}
	case nodeOr:
		mark, missing := len(e.buf), len(e.missing)
		for i := range n.or {
			err := e.node(&n.or[i])
			if err == nil {
				e.missing = e.missing[:missing]
				return nil
			}
			e.buf = e.buf[:mark]
			if !errors.Is(err, errMissing) {
				return err
			}
		}
		return errMissing
	case nodeCall:
		return e.call(n)
	}
	return nil
}

// call appends the value of a function call: its arguments are written
// into buf after mark, then replaced by the function's value.
func (e *evaluator) call(n *node) error {
	mark := len(e.buf)
	var ends [maxFunctionArgs]int
	var failed error
	for i, a := range n.args {
		if err := e.seq(a); err != nil {
			if !errors.Is(err, errMissing) {
				return err
			}
			failed = err
		}
		ends[i] = len(e.buf)
	}
	if failed != nil {
		e.buf = e.buf[:mark]
		return failed
	}
	start := mark
	if f := n.fn.append; f != nil {
		// The arguments are parts of buf; the value is appended after
		// them (an append that moves buf leaves them where they were,
		// unchanged), then moved down to mark.
		e.args = e.args[:0]
		for i := range n.args {
			e.args = append(e.args, e.buf[start:ends[i]:ends[i]])
			start = ends[i]
		}
		out := len(e.buf)
		var err error
		if e.buf, err = f(e.buf, e.args); err != nil {
			e.buf = e.buf[:mark]
			return &FunctionError{Template: e.t.src, Function: n.text, Problem: err.Error()}
		}
		k := copy(e.buf[mark:], e.buf[out:])
		e.buf = e.buf[:mark+k]
		return nil
	}
	args := make([]string, len(n.args))
	for i := range args {
		args[i] = string(e.buf[start:ends[i]])
		start = ends[i]
	}
	e.buf = e.buf[:mark]
	v, err := n.fn.eval(e.vars, args)
	if err != nil {
		return &FunctionError{Template: e.t.src, Function: n.text, Problem: err.Error()}
	}
	e.buf = append(e.buf, v...)
	return nil
}

// maxFunctionArgs is the most arguments a function takes.
const maxFunctionArgs = 8

// function is a template function.
type function struct {
	minArgs, maxArgs int // maxArgs <= maxFunctionArgs
	// perRequest: its value depends on the request or the clock.
	perRequest bool
	eval       func(vars *TemplateVars, args []string) (string, error)
	// append, when set, appends the value to dst instead of eval, from
	// arguments that it must not keep: it allocates nothing.
	append func(dst []byte, args [][]byte) ([]byte, error)
}

var functions = map[string]*function{
	"base64": {minArgs: 1, maxArgs: 1, append: func(dst []byte, a [][]byte) ([]byte, error) {
		return base64.StdEncoding.AppendEncode(dst, a[0]), nil
	}},
	"sha256Hex": {minArgs: 1, maxArgs: 1, append: func(dst []byte, a [][]byte) ([]byte, error) {
		h := sha256.Sum256(a[0])
		return hex.AppendEncode(dst, h[:]), nil
	}},
	"sha256Base64": {minArgs: 1, maxArgs: 1, append: func(dst []byte, a [][]byte) ([]byte, error) {
		h := sha256.Sum256(a[0])
		return base64.StdEncoding.AppendEncode(dst, h[:]), nil
	}},
	"hmacSha1Hex": {minArgs: 2, maxArgs: 2, append: func(dst []byte, a [][]byte) ([]byte, error) {
		m := hmac.New(sha1.New, a[1])
		m.Write(a[0])
		var sum [sha1.Size]byte
		return hex.AppendEncode(dst, m.Sum(sum[:0])), nil
	}},
	"ed25519Sign": {minArgs: 2, maxArgs: 2, eval: ed25519Sign},
	"fingerprint": {minArgs: 1, maxArgs: 1, eval: fingerprint},
	"awsSigV4":    {minArgs: 4, maxArgs: 5, perRequest: true, eval: awsSigV4},
}

const functionNames = "base64, sha256Hex, sha256Base64, hmacSha1Hex, ed25519Sign, awsSigV4 or fingerprint"

// ed25519Sign signs the message with an Ed25519 private key in PEM
// (PKCS #8, "BEGIN PRIVATE KEY") and returns the signature in base64.
func ed25519Sign(_ *TemplateVars, a []string) (string, error) {
	k, err := parsePrivateKey(a[1])
	if err != nil {
		return "", err
	}
	ek, ok := k.(ed25519.PrivateKey)
	if !ok {
		return "", errors.New("the key is not an Ed25519 private key")
	}
	return base64.StdEncoding.EncodeToString(ed25519.Sign(ek, []byte(a[0]))), nil
}

// fingerprint is the fingerprint of a private key's public key, as
// Snowflake's key-pair authentication names it: "SHA256:" and the base64
// SHA-256 digest of the public key in DER (SubjectPublicKeyInfo).
func fingerprint(_ *TemplateVars, a []string) (string, error) {
	k, err := parsePrivateKey(a[0])
	if err != nil {
		return "", err
	}
	s, ok := k.(crypto.Signer)
	if !ok {
		return "", errors.New("the key has no public key")
	}
	der, err := x509.MarshalPKIXPublicKey(s.Public())
	if err != nil {
		return "", errors.New("the key's public key cannot be encoded")
	}
	h := sha256.Sum256(der)
	return "SHA256:" + base64.StdEncoding.EncodeToString(h[:]), nil
}

// parsePrivateKey reads a PEM private key (PKCS #8, or PKCS #1 RSA and
// SEC 1 EC). A PEM whose line breaks were written as "\n" is accepted.
func parsePrivateKey(s string) (any, error) {
	s = strings.ReplaceAll(strings.TrimSpace(s), `\n`, "\n")
	blk, _ := pem.Decode([]byte(s))
	if blk == nil {
		return nil, errors.New("the key is not a PEM private key")
	}
	if k, err := x509.ParsePKCS8PrivateKey(blk.Bytes); err == nil {
		return k, nil
	}
	if k, err := x509.ParsePKCS1PrivateKey(blk.Bytes); err == nil {
		return k, nil
	}
	if k, err := x509.ParseECPrivateKey(blk.Bytes); err == nil {
		return k, nil
	}
	return nil, errors.New("the key is not a PKCS #8, PKCS #1 or SEC 1 private key")
}

// awsSigner is AWS's own Signature Version 4 signer.
var awsSigner = v4.NewSigner()

// awsSigV4 returns the Authorization header of AWS Signature Version 4
// for the request (vars.Request): accessKey, secretKey, region, service
// and, optionally, the host signed when there is no request. The request
// signed has the method, URL (path and query), Content-Type and
// Content-Length of the actual one and an X-Amz-Date of vars' clock
// (${now:YYYYMMDDTHHmmss[Z]} gives the same value), and its payload hash
// is the SHA-256 of the body.
func awsSigV4(vars *TemplateVars, a []string) (string, error) {
	accessKey, secretKey, region, service := a[0], a[1], a[2], a[3]
	r := vars.Request
	var u *url.URL
	method := http.MethodGet
	var body []byte
	contentType := ""
	if r != nil && r.URL != nil {
		c := *r.URL
		u = &c
		if r.Method != "" {
			method = r.Method
		}
		body, contentType = r.Body, r.ContentType
	} else {
		host := service + ".amazonaws.com"
		if len(a) == 5 && a[4] != "" {
			host = a[4]
		}
		u = &url.URL{Scheme: "https", Host: host, Path: "/"}
	}
	u.Fragment, u.RawFragment = "", ""
	req := &http.Request{Method: method, URL: u, Header: http.Header{}, Host: u.Host, ContentLength: int64(len(body))}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	h := sha256.Sum256(body)
	creds := aws.Credentials{AccessKeyID: accessKey, SecretAccessKey: secretKey}
	if err := awsSigner.SignHTTP(context.Background(), creds, req, hex.EncodeToString(h[:]), service, region, vars.now()); err != nil {
		return "", errors.New("the request cannot be signed")
	}
	return req.Header.Get("Authorization"), nil
}

// Time units of ${now+N:UNIT}, as dayjs names them, to their one-letter
// form.
var timeUnits = map[string]string{
	"ms": "ms", "millisecond": "ms", "milliseconds": "ms",
	"s": "s", "second": "s", "seconds": "s",
	"m": "m", "minute": "m", "minutes": "m",
	"h": "h", "hour": "h", "hours": "h",
	"d": "d", "day": "d", "days": "d",
	"w": "w", "week": "w", "weeks": "w",
	"M": "M", "month": "M", "months": "M",
	"y": "y", "year": "y", "years": "y",
}

const unitNames = "milliseconds, seconds, minutes, hours, days, weeks, months or years"

var unitDurations = map[string]time.Duration{"ms": time.Millisecond, "s": time.Second, "m": time.Minute, "h": time.Hour}

// fmtToken is a token of a date format: a dayjs token, or literal text.
type fmtToken struct {
	tok string // "" for literal text
	lit string
}

// The dayjs format tokens (with the advancedFormat plugin's X and x), the
// longest first.
var dateTokens = []string{"YYYY", "MMMM", "dddd", "MMM", "ddd", "SSS", "YY", "MM", "DD", "dd", "HH", "hh", "mm", "ss", "ZZ",
	"M", "D", "d", "H", "h", "m", "s", "Z", "A", "a", "X", "x"}

// parseDateFormat splits a dayjs format into tokens; [text] is literal.
func parseDateFormat(f string) []fmtToken {
	var out []fmtToken
	addLit := func(s string) {
		if k := len(out) - 1; k >= 0 && out[k].tok == "" {
			out[k].lit += s
			return
		}
		out = append(out, fmtToken{lit: s})
	}
	for i := 0; i < len(f); {
		if f[i] == '[' {
			if j := strings.IndexByte(f[i:], ']'); j > 0 {
				addLit(f[i+1 : i+j])
				i += j + 1
				continue
			}
		}
		matched := false
		for _, t := range dateTokens {
			if strings.HasPrefix(f[i:], t) {
				out = append(out, fmtToken{tok: t})
				i += len(t)
				matched = true
				break
			}
		}
		if !matched {
			addLit(f[i : i+1])
			i++
		}
	}
	if out == nil {
		out = []fmtToken{}
	}
	return out
}

// appendDate appends t (UTC) in a dayjs format.
func appendDate(b []byte, t time.Time, f []fmtToken) []byte {
	pad := func(n, w int) { b = appendPadded(b, n, w) }
	for _, x := range f {
		switch x.tok {
		case "":
			b = append(b, x.lit...)
		case "YYYY":
			pad(t.Year(), 4)
		case "YY":
			pad(t.Year()%100, 2)
		case "MMMM":
			b = append(b, t.Month().String()...)
		case "MMM":
			b = append(b, t.Month().String()[:3]...)
		case "MM":
			pad(int(t.Month()), 2)
		case "M":
			pad(int(t.Month()), 1)
		case "DD":
			pad(t.Day(), 2)
		case "D":
			pad(t.Day(), 1)
		case "dddd":
			b = append(b, t.Weekday().String()...)
		case "ddd":
			b = append(b, t.Weekday().String()[:3]...)
		case "dd":
			b = append(b, t.Weekday().String()[:2]...)
		case "d":
			pad(int(t.Weekday()), 1)
		case "HH":
			pad(t.Hour(), 2)
		case "H":
			pad(t.Hour(), 1)
		case "hh", "h":
			h := t.Hour() % 12
			if h == 0 {
				h = 12
			}
			pad(h, len(x.tok))
		case "mm":
			pad(t.Minute(), 2)
		case "m":
			pad(t.Minute(), 1)
		case "ss":
			pad(t.Second(), 2)
		case "s":
			pad(t.Second(), 1)
		case "SSS":
			pad(t.Nanosecond()/1e6, 3)
		case "ZZ":
			b = append(b, "+0000"...)
		case "Z":
			b = append(b, "+00:00"...)
		case "A", "a":
			ampm := "AM"
			if t.Hour() >= 12 {
				ampm = "PM"
			}
			if x.tok == "a" {
				ampm = strings.ToLower(ampm)
			}
			b = append(b, ampm...)
		case "X":
			b = strconv.AppendInt(b, t.Unix(), 10)
		case "x":
			b = strconv.AppendInt(b, t.UnixMilli(), 10)
		}
	}
	return b
}

// appendPadded appends n in decimal, with zeros before it up to w
// characters (a sign included).
func appendPadded(b []byte, n, w int) []byte {
	start := len(b)
	b = strconv.AppendInt(b, int64(n), 10)
	k := w - (len(b) - start)
	if k <= 0 {
		return b
	}
	for range k {
		b = append(b, '0')
	}
	copy(b[start+k:], b[start:len(b)-k])
	for i := range k {
		b[start+i] = '0'
	}
	return b
}
