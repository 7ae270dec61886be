package integrations

import (
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// Where a placeholder sits in a URL template. The position decides what a
// value may hold.
const (
	// PositionOrigin: the alternative starts with the placeholder, whose
	// value supplies the scheme and host ("${connectionConfig.instance_url}/api").
	PositionOrigin = "origin"
	// PositionHost: in the host ("https://${connectionConfig.subdomain}.zendesk.com").
	PositionHost = "host"
	// PositionPath: a path segment.
	PositionPath = "path"
	// PositionQuery: the query.
	PositionQuery = "query"
	// PositionOther: anywhere else (scheme, user info, fragment): no
	// value is accepted there.
	PositionOther = "other"
)

// UnsafeValueError is a template value that cannot be used where a URL
// template puts it: a value in the host that would change more than the
// host name (or make it an IP address the field does not allow), a path
// value that would add a segment or a query, an origin that is not a
// plain http(s) URL. Rendering stops there: the URL is never built, so no
// request goes to a host that a value chose this way.
type UnsafeValueError struct {
	// Name is the placeholder, such as "connectionConfig.subdomain".
	Name string
	// Key is the connection config key of a connectionConfig placeholder
	// ("subdomain"), and "" for the others.
	Key string
	// Position is where the template puts the value (PositionHost...).
	Position string
	// Reason says what is wrong, in words fit for an error message.
	Reason string
}

func (e *UnsafeValueError) Error() string {
	return fmt.Sprintf("integrations: the value of ${%s} cannot be used in the %s of the URL: %s", e.Name, e.Position, e.Reason)
}

// PositionPort: the port ("https://${connectionConfig.host}:${connectionConfig.port}").
const PositionPort = "port"

// slot is one expression of an alternative of a URL template.
type slot struct {
	// name is the variable ("connectionConfig.subdomain"), or the
	// expression without "${" and "}" when it is not a variable.
	name string
	node *node
	pos  string
	// pinned: a host placeholder followed, in the host, by a fixed domain
	// of at least two labels (".zendesk.com"): whatever its value, the
	// host stays under that domain.
	pinned bool
	// wholeHost: the placeholder is the whole host.
	wholeHost bool
	// lastLabel: the placeholder ends the host (its value ends the top
	// label).
	lastLabel bool
	// host is the host with this placeholder as "\x00" and the others as
	// "x": filled with the value, it must be a host name.
	host string
}

// analyzed is an alternative of a URL template with its expressions
// located.
type analyzed struct {
	alt   []node
	slots []slot
	// host is the host of the alternative with each expression replaced by
	// marker(i); origin is whether the first expression is the origin.
	host   string
	origin bool
	// port is the port with each expression as marker(i), when an
	// expression is in it.
	port string
	// scheme is the alternative's scheme (of the origin stand-in when the
	// origin is an expression).
	scheme string
}

const originStandIn = "https://origin.invalid"

func marker(i int) string { return "zqph" + strconv.Itoa(i) + "hpqz" }

// markAlternative writes alt with each expression replaced by its marker
// (the first by originStandIn when origin is set and alt starts with it)
// and returns the expressions in order.
func markAlternative(alt []node, origin bool) (string, []*node) {
	var b strings.Builder
	var exprs []*node
	for i := range alt {
		n := &alt[i]
		if n.kind == nodeLiteral {
			b.WriteString(n.text)
			continue
		}
		if origin && len(exprs) == 0 && b.Len() == 0 {
			b.WriteString(originStandIn)
		} else {
			b.WriteString(marker(len(exprs)))
		}
		exprs = append(exprs, n)
	}
	return b.String(), exprs
}

// slotName is the name an expression goes by in errors.
func slotName(n *node) string {
	if n.kind == nodeVar {
		return n.text
	}
	return strings.TrimSuffix(strings.TrimPrefix(n.src, "${"), "}")
}

// splitPort finds the port of an absolute URL's authority in s: the text
// after the host's ':' up to the path, query or fragment, with its
// offsets.
func splitPort(s string) (start, end int, ok bool) {
	i := strings.Index(s, "://")
	if i < 0 {
		return 0, 0, false
	}
	a := i + 3
	e := len(s)
	if j := strings.IndexAny(s[a:], "/?#"); j >= 0 {
		e = a + j
	}
	hp := a
	if k := strings.LastIndexByte(s[a:e], '@'); k >= 0 {
		hp = a + k + 1
	}
	h := hp
	if strings.HasPrefix(s[hp:e], "[") {
		k := strings.IndexByte(s[hp:e], ']')
		if k < 0 {
			return 0, 0, false
		}
		h = hp + k
	}
	k := strings.IndexByte(s[h:e], ':')
	if k < 0 {
		return 0, 0, false
	}
	return h + k + 1, e, true
}

// analyze locates the expressions of one alternative of a URL template
// (absolute, or relative to a base when relative is true).
func analyze(alt []node, relative bool) (*analyzed, error) {
	marked, exprs := markAlternative(alt, !relative)
	a := &analyzed{alt: alt, origin: !relative && len(exprs) > 0 && len(alt) > 0 && alt[0].kind != nodeLiteral}
	if relative {
		marked = "https://base.invalid/" + strings.TrimLeft(marked, "/")
	}
	if ps, pe, ok := splitPort(marked); ok && strings.Contains(marked[ps:pe], "zqph") {
		a.port = marked[ps:pe]
		marked = marked[:ps] + "1" + marked[pe:]
	}
	u, err := url.Parse(marked)
	if err != nil {
		return nil, fmt.Errorf("integrations: URL template %q: %w", marked, err)
	}
	a.scheme = u.Scheme
	a.host = u.Hostname()
	host := a.host
	lastMarker := -1
	for i := range exprs {
		if k := strings.LastIndex(host, marker(i)); k >= 0 {
			lastMarker = max(lastMarker, k+len(marker(i)))
		}
	}
	pinned := false
	if lastMarker >= 0 {
		tail := host[lastMarker:]
		if _, after, ok := strings.Cut(tail, "."); ok {
			pinned = strings.Contains(after, ".") && !strings.Contains(after, "..") && !strings.HasSuffix(after, ".")
		}
	}
	for i, n := range exprs {
		s := slot{name: slotName(n), node: n}
		m := marker(i)
		switch {
		case i == 0 && a.origin:
			s.pos = PositionOrigin
		case strings.Contains(host, m):
			s.pos = PositionHost
			s.pinned = pinned
			s.wholeHost = host == m
			s.lastLabel = strings.HasSuffix(host, m)
			h := strings.ReplaceAll(host, m, "\x00")
			for j := range exprs {
				h = strings.ReplaceAll(h, marker(j), "x")
			}
			s.host = h
		case strings.Contains(a.port, m):
			s.pos = PositionPort
		case strings.Contains(u.EscapedPath(), m):
			s.pos = PositionPath
		case strings.Contains(u.RawQuery, m):
			s.pos = PositionQuery
		default:
			s.pos = PositionOther
		}
		a.slots = append(a.slots, s)
	}
	return a, nil
}

// checkValue checks a value at the position of s. spec is the connection
// config field of a connectionConfig placeholder, when declared.
func checkValue(s slot, v string, spec *FieldSpec) string {
	if strings.IndexFunc(v, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		return "must not hold spaces or control characters"
	}
	switch s.pos {
	case PositionOrigin:
		return checkOrigin(v)
	case PositionHost:
		if spec != nil && s.wholeHost && ipLiteralAllowed(spec, v) {
			return ""
		}
		if host, path, ok := strings.Cut(v, "/"); ok && spec != nil && s.wholeHost && slices.Contains(spec.Enum, v) {
			// A value the catalogue itself lists (ModMed's
			// "stage.ema-api.com/ema-dev"): a host, then path segments.
			for _, seg := range strings.Split(path, "/") {
				if seg == "" || seg == "." || seg == ".." || strings.ContainsAny(seg, `\?#%@:`) {
					return "must be a host name followed by path segments"
				}
			}
			return checkValue(s, host, nil)
		}
		for _, r := range v {
			if !(r == '-' || r == '.' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
				return "must be part of a host name: letters, digits, '-' and '.' only (no '@', '/', ':', '?', '#', '\\', '%' or port)"
			}
		}
		if strings.Contains(v, "..") || (s.wholeHost && (strings.HasPrefix(v, ".") || strings.HasSuffix(v, "."))) {
			return "must not make an empty host name label"
		}
		if s.lastLabel {
			last := v[strings.LastIndexByte(v, '.')+1:]
			if last == "" || !(last[0] >= 'a' && last[0] <= 'z' || last[0] >= 'A' && last[0] <= 'Z') {
				return "must end with a host name label that starts with a letter (no IP address)"
			}
		}
		if !IsHostname(strings.ReplaceAll(s.host, "\x00", v)) {
			return "must make a valid host name (labels of 1 to 63 letters, digits and '-', not starting or ending with '-')"
		}
	case PositionPath:
		if strings.ContainsAny(v, `/\?#%`) || v == "." || v == ".." {
			return `must be one path segment: no '/', '\', '?', '#' or '%', and not "." or ".."`
		}
	case PositionPort:
		if v == "" || strings.Trim(v, "0123456789") != "" || len(v) > 5 {
			return "must be a port: 1 to 5 digits"
		}
	case PositionQuery:
		if strings.ContainsAny(v, `&#%\`) {
			return `must not hold '&', '#', '%' or '\'`
		}
	default:
		return "cannot be used there"
	}
	return ""
}

// ipLiteralAllowed reports whether v is an IP address literal that the
// field's format declares: ipv4 (dotted), ipv6 (in brackets) or ip
// (either), without a zone.
func ipLiteralAllowed(f *FieldSpec, v string) bool {
	bracketed := strings.HasPrefix(v, "[") && strings.HasSuffix(v, "]")
	a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(v, "["), "]"))
	if err != nil || a.Zone() != "" {
		return false
	}
	v4 := a.Is4() && !bracketed
	v6 := a.Is6() && bracketed
	switch strings.ToLower(f.Format) {
	case "ipv4":
		return v4
	case "ipv6":
		return v6
	case "ip":
		return v4 || v6
	}
	return false
}

// checkOrigin checks a value that supplies a URL's scheme and host: an
// absolute http or https URL with a host, without user info, query or
// fragment, whose host is a host name or an IP address (which the address
// policy judges when dialled).
func checkOrigin(v string) string {
	if strings.ContainsAny(v, `\`) {
		return `must not hold '\'`
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		return "must be an absolute http or https URL"
	}
	if u.User != nil || strings.Contains(u.Host, "@") {
		return "must not hold user info"
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.ContainsAny(v, "?#") {
		return "must not hold a query or a fragment"
	}
	host := u.Hostname()
	if strings.ContainsAny(host, "%[]") {
		return "must have a plain host"
	}
	if _, err := netip.ParseAddr(host); err != nil && !IsHostname(host) {
		return "must have a valid host name"
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return "must have a valid port"
		}
	}
	return ""
}

// IsHostname reports whether s is a DNS host name: dot-separated labels of
// 1 to 63 letters, digits and '-' (not at either end of a label), at most
// 253 characters, whose last label starts with a letter (so that it cannot
// be read as an IP address in any notation).
func IsHostname(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	labels := strings.Split(s, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for _, r := range l {
			if !(r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
				return false
			}
		}
	}
	last := labels[len(labels)-1]
	return last[0] >= 'a' && last[0] <= 'z' || last[0] >= 'A' && last[0] <= 'Z'
}

// unsafe builds the error of a slot.
func unsafe(s slot, reason string) *UnsafeValueError {
	key := ""
	if s.node.kind == nodeVar && s.node.root == rootConfig {
		key = strings.TrimPrefix(s.name, "connectionConfig.")
	}
	return &UnsafeValueError{Name: s.name, Key: key, Position: s.pos, Reason: reason}
}

func (p *Provider) spec(name string) *FieldSpec {
	k, ok := strings.CutPrefix(name, "connectionConfig.")
	if !ok {
		return nil
	}
	if f, ok := p.ConnectionConfig[k]; ok {
		return &f
	}
	return nil
}

// RenderURL fills a URL template of the provider (authorization_url,
// token_url, refresh_url, request_url, proxy.base_url,
// proxy.verification.base_url_override) from vars, the way [Interpolate]
// does, and checks every value at the position it takes, so that no
// value can choose a host the template does not name:
//
//   - a value in the host may hold only letters, digits, '-' and '.' (no
//     '@', '/', ':', port, '?', '#', '\', '%', space), must not make an
//     empty label, and must not make an IP address of the host unless its
//     connection_config field's format is ipv4, ipv6 or ip;
//   - a value that supplies the origin (an alternative that starts with
//     the placeholder) must be an absolute http or https URL without user
//     info, query or fragment;
//   - a value in the path must be one segment (no '/', '\', '?', '#', '%',
//     "." or "..") and a value in the query must not hold '&', '#', '%' or
//     '\'; no value is accepted anywhere else (scheme, user info,
//     fragment).
//
// The URL built must be an absolute http or https URL whose host is the
// one the template and the checked values make. A missing value is a
// *MissingValueError, as for Interpolate; an unsafe one an
// *UnsafeValueError; a malformed template another error. Values are used
// wherever they come from (the end user, the backend, the provider or an
// older row), so a bad stored value cannot redirect a request either.
func (p *Provider) RenderURL(tmpl string, vars TemplateVars) (*url.URL, error) {
	raw, a, values, err := p.render(tmpl, vars, false)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return nil, fmt.Errorf("integrations: URL template %q does not make an absolute http or https URL", tmpl)
	}
	// The host must be the one the checked values make.
	want := a.host
	port := a.port
	for i, s := range a.slots {
		switch s.pos {
		case PositionHost:
			host, _, _ := strings.Cut(values[i], "/") // an enum value may carry a path
			want = strings.ReplaceAll(want, marker(i), host)
		case PositionPort:
			port = strings.ReplaceAll(port, marker(i), values[i])
		}
	}
	if a.port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || u.Port() != port {
			for _, s := range a.slots {
				if s.pos == PositionPort {
					return nil, unsafe(s, "must make a port from 1 to 65535")
				}
			}
		}
	}
	if a.origin {
		ou, err := url.Parse(values[0])
		if err != nil {
			return nil, unsafe(a.slots[0], "must be an absolute http or https URL")
		}
		want = ou.Hostname()
	}
	if strings.HasPrefix(want, "[") && strings.HasSuffix(want, "]") {
		want = want[1 : len(want)-1] // an IPv6 literal of a field that allows one
	}
	if !strings.EqualFold(u.Hostname(), want) {
		return nil, fmt.Errorf("integrations: URL template %q does not make the host it names", tmpl)
	}
	return u, nil
}

// RenderPath fills a path template relative to a base URL (such as a
// verification endpoint, "/users/${connectionConfig.user}") with the
// checks of RenderURL for the path and query.
func (p *Provider) RenderPath(tmpl string, vars TemplateVars) (string, error) {
	raw, _, _, err := p.render(tmpl, vars, true)
	return raw, err
}

// render picks the first alternative whose values are all present, checks
// the values and fills it in. It returns the alternative's analysis and
// the value of each of its expressions.
func (p *Provider) render(tmpl string, vars TemplateVars, relative bool) (string, *analyzed, []string, error) {
	t, err := parseCached(tmpl)
	if err != nil {
		return "", nil, nil, err
	}
	if t.perRequest && (vars.Now == nil || vars.Random == nil) {
		vars = vars.Stable()
	}
	e := evaluator{t: t, vars: &vars}
	var missing []string
	for _, alt := range t.alts {
		e.missing = e.missing[:0]
		var out strings.Builder
		var values []string
		var failed error
		for i := range alt {
			n := &alt[i]
			if n.kind == nodeLiteral {
				out.WriteString(n.text)
				continue
			}
			e.buf = e.buf[:0]
			if err := e.node(n); err != nil {
				if !errors.Is(err, errMissing) {
					return "", nil, nil, err
				}
				failed = err
			}
			v := string(e.buf)
			values = append(values, v)
			out.WriteString(v)
		}
		if failed != nil {
			for _, m := range e.missing {
				if !slices.Contains(missing, m) {
					missing = append(missing, m)
				}
			}
			continue
		}
		a, err := analyze(alt, relative)
		if err != nil {
			return "", nil, nil, fmt.Errorf("integrations: URL template %q does not parse as a URL", tmpl)
		}
		for i, s := range a.slots {
			if reason := checkValue(s, values[i], p.slotSpec(s)); reason != "" {
				return "", nil, nil, unsafe(s, reason)
			}
		}
		return out.String(), a, values, nil
	}
	return "", nil, nil, &MissingValueError{Template: tmpl, Names: missing}
}

// slotSpec is the connection config field of a slot that is a
// connectionConfig variable.
func (p *Provider) slotSpec(s slot) *FieldSpec {
	if s.node.kind != nodeVar || s.node.root != rootConfig {
		return nil
	}
	return p.spec(s.name)
}

// exprNames are the variables an expression uses.
func exprNames(n *node) []string {
	t := &Template{}
	t.collect([]node{*n})
	return t.names
}

// urlTemplates are the provider's URL templates by field, and its relative
// ones (verification endpoints).
func (p *Provider) urlTemplates() (abs map[string]string, rel []string) {
	abs = map[string]string{}
	for field, t := range map[string]string{"authorization_url": p.AuthorizationURL, "token_url": p.TokenURL,
		"refresh_url": p.RefreshURL, "request_url": p.RequestURL} {
		if t != "" {
			abs[field] = t
		}
	}
	if x := p.Proxy; x != nil {
		if x.BaseURL != "" {
			abs["proxy.base_url"] = x.BaseURL
		}
		if vf := x.Verification; vf != nil {
			if vf.BaseURLOverride != "" {
				abs["proxy.verification.base_url_override"] = vf.BaseURLOverride
			}
			rel = vf.Endpoints
		}
	}
	return abs, rel
}

// CheckURLValues checks connection config values against every URL
// template of the provider (authorization, token, refresh, request,
// proxy base and verification URLs, and verification endpoints), at every
// position they take in any alternative, as RenderURL will when the URLs
// are built. It returns the first *UnsafeValueError (in template field
// and key order), or nil. Use it to refuse a value before storing it or
// calling anyone.
func (p *Provider) CheckURLValues(config map[string]string) error {
	abs, rel := p.urlTemplates()
	type tmpl struct {
		t        string
		relative bool
	}
	var all []tmpl
	for _, f := range slices.Sorted(maps.Keys(abs)) {
		all = append(all, tmpl{abs[f], false})
	}
	for _, t := range rel {
		all = append(all, tmpl{t, true})
	}
	for _, t := range all {
		pt, err := parseCached(t.t)
		if err != nil {
			continue // a malformed template fails when it is rendered
		}
		for _, alt := range pt.alts {
			a, err := analyze(alt, t.relative)
			if err != nil {
				continue
			}
			for _, s := range a.slots {
				if s.node.kind != nodeVar || s.node.root != rootConfig {
					continue
				}
				k := strings.TrimPrefix(s.name, "connectionConfig.")
				if config[k] == "" {
					continue
				}
				if reason := checkValue(s, config[k], p.spec(s.name)); reason != "" {
					return unsafe(s, reason)
				}
			}
		}
	}
	return nil
}

// SecretHostKeys returns the connection config keys whose values decide
// the host of a URL that carries the integration's secrets: the token,
// refresh and request token URLs (which receive the client secret, the
// PKCE verifier, an app's signed JWT or an OAuth 1 signature), and the
// proxy's base URLs when its header or query templates use
// ${clientSecret}. A key decides the host when it supplies the origin, or
// sits in the host without a fixed domain of two labels or more after it
// ("https://${connectionConfig.hostname}/token",
// "https://accounts.zoho.${connectionConfig.extension}/token"), unlike
// "https://${connectionConfig.subdomain}.zendesk.com". Such a value must
// not come from the end user unless the field's pattern pins it down.
func (p *Provider) SecretHostKeys() []string {
	tmpls := []string{p.TokenURL, p.RefreshURL, p.RequestURL}
	if x := p.Proxy; x != nil && usesClientSecret(x) {
		tmpls = append(tmpls, x.BaseURL)
		if x.Verification != nil {
			tmpls = append(tmpls, x.Verification.BaseURLOverride)
		}
	}
	var keys []string
	for _, t := range tmpls {
		if t == "" {
			continue
		}
		pt, err := parseCached(t)
		if err != nil {
			continue
		}
		for _, alt := range pt.alts {
			a, err := analyze(alt, false)
			if err != nil {
				continue
			}
			for _, s := range a.slots {
				if s.pos != PositionOrigin && (s.pos != PositionHost || s.pinned) {
					continue
				}
				for _, n := range exprNames(s.node) {
					k, ok := strings.CutPrefix(n, "connectionConfig.")
					if ok && !slices.Contains(keys, k) {
						keys = append(keys, k)
					}
				}
			}
		}
	}
	slices.Sort(keys)
	return keys
}

func usesClientSecret(x *Proxy) bool {
	for _, m := range []map[string]string{x.Headers, x.Query} {
		for _, v := range m {
			if names, err := Placeholders(v); err == nil && slices.Contains(names, "clientSecret") {
				return true
			}
		}
	}
	return false
}

// ErrUnsafeValue matches every *UnsafeValueError with errors.Is.
var ErrUnsafeValue = errors.New("integrations: unsafe template value")

// Is makes errors.Is(err, ErrUnsafeValue) true.
func (e *UnsafeValueError) Is(target error) bool { return target == ErrUnsafeValue }
