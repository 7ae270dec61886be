package integrations

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
)

// Limits of a template, against abuse: a template longer than
// MaxTemplateLen bytes, or whose ${...} and function calls nest deeper
// than MaxTemplateDepth, does not parse.
const (
	MaxTemplateLen   = 64 << 10
	MaxTemplateDepth = 16
)

// Template is a parsed template: one or more alternatives separated by
// "||", each a sequence of literal text and ${...} expressions. It is
// immutable and safe for concurrent use. See the package documentation
// for the language.
type Template struct {
	src  string
	alts [][]node
	// names are the variables used, in order, without duplicates.
	names []string
	// perRequest: the template uses a request value, the clock or
	// ${random}.
	perRequest bool
}

type nodeKind uint8

const (
	nodeLiteral nodeKind = iota
	// nodeVar is a variable: connectionConfig.KEY, credentials.KEY,
	// credentials.raw.PATH, a bare name or a request value.
	nodeVar
	// nodeNow is ${now}, ${now:FORMAT} or ${now+N:UNIT[:FORMAT]}.
	nodeNow
	nodeRandom
	nodeCall
	// nodeOr is ${a || b}: the first expression that has a value.
	nodeOr
)

// node is one part of an alternative.
type node struct {
	kind nodeKind
	// text is the literal text, the variable's name, or the function's
	// name.
	text string
	// src is the source of an expression, "${...}" included.
	src string
	// root is how a variable is resolved.
	root varRoot
	// now: the offset and its unit, and the format (nil: ISO 8601 with
	// milliseconds, as JavaScript's toISOString).
	offset int
	unit   string
	format []fmtToken
	// call: the function and its arguments, each a sequence.
	fn   *function
	args [][]node
	// or: the alternative expressions.
	or []node
}

// TemplateError is a template that does not parse: Problem at byte
// offset Pos of Template.
type TemplateError struct {
	Template string
	Pos      int
	Problem  string
}

func (e *TemplateError) Error() string {
	t := e.Template
	if len(t) > 200 {
		t = t[:200] + "..."
	}
	return fmt.Sprintf("integrations: template %q: %s (at byte %d)", t, e.Problem, e.Pos)
}

// ParseTemplate parses a template. The error of a template that does not
// parse is a *TemplateError that says what is wrong and where.
//
// A Template is immutable and safe for concurrent use; ParseTemplate
// returns the same *Template for the same source while it remembers it
// (templates come from provider data, a bounded set), so that every
// connection of a provider shares its templates' trees.
func ParseTemplate(s string) (*Template, error) {
	return parseCached(s)
}

func parseTemplate(s string) (*Template, error) {
	if len(s) > MaxTemplateLen {
		return nil, &TemplateError{Template: s, Pos: MaxTemplateLen, Problem: fmt.Sprintf("longer than %d bytes", MaxTemplateLen)}
	}
	p := &parser{src: s}
	t := &Template{src: s}
	for {
		seq, stop, err := p.sequence(stopAlt)
		if err != nil {
			return nil, err
		}
		t.alts = append(t.alts, seq)
		if stop != "||" {
			break
		}
	}
	if len(t.alts) > 1 {
		for i := range t.alts {
			t.alts[i] = trimSeq(t.alts[i])
		}
	}
	for _, alt := range t.alts {
		t.collect(alt)
	}
	return t, nil
}

// templateCache holds parsed templates by source. Templates come from
// provider data, a bounded set; past cacheMax entries or cacheMaxBytes of
// sources, new ones are parsed each time.
var templateCache sync.Map // string -> *Template

var templateCacheLen struct {
	sync.Mutex
	n, bytes int
}

const (
	cacheMax      = 8192
	cacheMaxBytes = 4 << 20
)

// parseCached parses s once and remembers it.
func parseCached(s string) (*Template, error) {
	if t, ok := templateCache.Load(s); ok {
		return t.(*Template), nil
	}
	t, err := parseTemplate(s)
	if err != nil {
		return nil, err
	}
	templateCacheLen.Lock()
	defer templateCacheLen.Unlock()
	if templateCacheLen.n < cacheMax && templateCacheLen.bytes+len(s) <= cacheMaxBytes {
		if prev, loaded := templateCache.LoadOrStore(s, t); loaded {
			return prev.(*Template), nil
		}
		templateCacheLen.n++
		templateCacheLen.bytes += len(s)
	}
	return t, nil
}

// String returns the template's source.
func (t *Template) String() string { return t.src }

// Names returns the variables the template uses, in order and without
// duplicates: "connectionConfig.subdomain", "credentials.username",
// "credentials.raw.id_token", "apiKey", "method"... ${now} and ${random}
// are not variables.
func (t *Template) Names() []string { return append([]string(nil), t.names...) }

// PerRequest reports whether the template's value depends on the request
// it is sent with (${method}, ${host}, ${path}, ${endpoint}, ${params},
// ${bodyCanonicalParams}, ${urlCanonicalParams}, ${contentType},
// awsSigV4), on the clock (${now}) or on chance (${random}): such a
// template is evaluated for each request, the others may be evaluated once
// per connection.
func (t *Template) PerRequest() bool { return t.perRequest }

// Static reports whether the template is literal text only.
func (t *Template) Static() bool { return len(t.names) == 0 && !t.perRequest && !t.hasCalls() }

func (t *Template) hasCalls() bool {
	var walk func([]node) bool
	walk = func(seq []node) bool {
		for _, n := range seq {
			switch n.kind {
			case nodeCall:
				return true
			case nodeOr:
				if walk(n.or) {
					return true
				}
			}
		}
		return false
	}
	for _, a := range t.alts {
		if walk(a) {
			return true
		}
	}
	return false
}

func (t *Template) collect(seq []node) {
	for i := range seq {
		n := &seq[i]
		switch n.kind {
		case nodeVar:
			if n.root == rootRequest {
				t.perRequest = true
			}
			if !containsString(t.names, n.text) {
				t.names = append(t.names, n.text)
			}
		case nodeNow, nodeRandom:
			t.perRequest = true
		case nodeCall:
			if n.fn.perRequest {
				t.perRequest = true
			}
			for _, a := range n.args {
				t.collect(a)
			}
		case nodeOr:
			t.collect(n.or)
		}
	}
}

func containsString(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// trimSeq trims the spaces around an alternative.
func trimSeq(seq []node) []node {
	if len(seq) > 0 && seq[0].kind == nodeLiteral {
		seq[0].text = strings.TrimLeft(seq[0].text, " \t\r\n")
		if seq[0].text == "" {
			seq = seq[1:]
		}
	}
	if k := len(seq) - 1; k >= 0 && seq[k].kind == nodeLiteral {
		seq[k].text = strings.TrimRight(seq[k].text, " \t\r\n")
		if seq[k].text == "" {
			seq = seq[:k]
		}
	}
	return seq
}

type parser struct {
	src   string
	pos   int
	depth int
}

// What ends a sequence.
type stopSet uint8

const (
	// stopAlt: a top-level "||" or the end.
	stopAlt stopSet = iota
	// stopArg: a ',' or ')' of a call, outside parentheses of the text.
	stopArg
)

func (p *parser) errorf(pos int, format string, args ...any) error {
	return &TemplateError{Template: p.src, Pos: pos, Problem: fmt.Sprintf(format, args...)}
}

// sequence reads literal text and expressions up to what ends it, and
// returns what ended it: "||", ",", ")" or "" (the end of the input).
func (p *parser) sequence(stop stopSet) ([]node, string, error) {
	var seq []node
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			seq = append(seq, node{kind: nodeLiteral, text: lit.String()})
			lit.Reset()
		}
	}
	parens := 0
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		switch {
		case c == '$' && strings.HasPrefix(p.src[p.pos:], "${"):
			flush()
			n, err := p.expression()
			if err != nil {
				return nil, "", err
			}
			seq = append(seq, n)
			continue
		case stop == stopAlt && c == '|' && strings.HasPrefix(p.src[p.pos:], "||"):
			flush()
			p.pos += 2
			return seq, "||", nil
		case stop == stopArg && c == '(':
			parens++
		case stop == stopArg && c == ')' && parens > 0:
			parens--
		case stop == stopArg && (c == ')' || c == ',') && parens == 0:
			flush()
			p.pos++
			return seq, string(c), nil
		}
		lit.WriteByte(c)
		p.pos++
	}
	flush()
	return seq, "", nil
}

// expression reads ${...} at p.pos.
func (p *parser) expression() (node, error) {
	start := p.pos
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > MaxTemplateDepth {
		return node{}, p.errorf(start, "nested deeper than %d", MaxTemplateDepth)
	}
	p.pos += 2
	var alts []node
	for {
		p.spaces()
		if p.pos >= len(p.src) {
			return node{}, p.errorf(start, "unterminated \"${\"")
		}
		if p.src[p.pos] == '}' && len(alts) == 0 {
			return node{}, p.errorf(start, "empty placeholder \"${}\"")
		}
		n, err := p.primary(start)
		if err != nil {
			return node{}, err
		}
		alts = append(alts, n)
		p.spaces()
		switch {
		case p.pos >= len(p.src):
			return node{}, p.errorf(start, "unterminated \"${\"")
		case p.src[p.pos] == '}':
			p.pos++
			src := p.src[start:p.pos]
			if len(alts) == 1 {
				alts[0].src = src
				return alts[0], nil
			}
			return node{kind: nodeOr, or: alts, src: src}, nil
		case strings.HasPrefix(p.src[p.pos:], "||"):
			p.pos += 2
		default:
			return node{}, p.errorf(p.pos, "unexpected %q in \"${...}\"", rune(p.src[p.pos]))
		}
	}
}

func (p *parser) spaces() {
	for p.pos < len(p.src) && (p.src[p.pos] == ' ' || p.src[p.pos] == '\t') {
		p.pos++
	}
}

// wordEnd reports whether c ends a name.
func wordEnd(c byte) bool {
	return strings.IndexByte("}{$()|,:+ \t\r\n", c) >= 0
}

// primary reads the inside of ${...} up to "}" or "||": now, random, a
// call or a variable.
func (p *parser) primary(exprStart int) (node, error) {
	start := p.pos
	rest := p.src[p.pos:]
	if strings.HasPrefix(rest, "now") && (len(rest) == 3 || strings.IndexByte(":+-} \t|", rest[3]) >= 0) {
		return p.now()
	}
	end := p.pos
	for end < len(p.src) && !wordEnd(p.src[end]) {
		end++
	}
	word := p.src[start:end]
	p.pos = end
	if word == "" {
		if p.pos < len(p.src) && p.src[p.pos] == '}' {
			return node{}, p.errorf(start, "empty expression")
		}
		return node{}, p.errorf(start, "unexpected %q in \"${...}\"", rune(p.src[p.pos]))
	}
	if p.pos < len(p.src) && p.src[p.pos] == '(' {
		return p.call(word, start)
	}
	if word == "random" {
		return node{kind: nodeRandom}, nil
	}
	if p.pos < len(p.src) && p.src[p.pos] == ':' {
		return node{}, p.errorf(p.pos, "unknown variable %q", word+p.src[p.pos:min(len(p.src), p.pos+20)])
	}
	root, err := classify(word)
	if err != nil {
		return node{}, p.errorf(start, "%s", err)
	}
	return node{kind: nodeVar, text: word, root: root}, nil
}

// call reads the arguments of name(...) at p.pos.
func (p *parser) call(name string, start int) (node, error) {
	fn := functions[name]
	if fn == nil {
		return node{}, p.errorf(start, "unknown function %q (want %s)", name, functionNames)
	}
	p.pos++ // '('
	n := node{kind: nodeCall, text: name, fn: fn}
	p.spaces()
	if p.pos < len(p.src) && p.src[p.pos] == ')' {
		p.pos++
	} else {
		for {
			arg, stop, err := p.sequence(stopArg)
			if err != nil {
				return node{}, err
			}
			n.args = append(n.args, trimSeq(arg))
			if stop == ")" {
				break
			}
			if stop == "" {
				return node{}, p.errorf(start, "unterminated call of %s: missing \")\"", name)
			}
		}
	}
	if len(n.args) < fn.minArgs || len(n.args) > fn.maxArgs {
		want := strconv.Itoa(fn.minArgs)
		if fn.maxArgs > fn.minArgs {
			want += " or " + strconv.Itoa(fn.maxArgs)
		}
		noun := "arguments"
		if want == "1" {
			noun = "argument"
		}
		return node{}, p.errorf(start, "%s takes %s %s, not %d", name, want, noun, len(n.args))
	}
	return n, nil
}

// now reads now, now:FORMAT, now+N:UNIT or now+N:UNIT:FORMAT.
func (p *parser) now() (node, error) {
	start := p.pos
	p.pos += 3
	n := node{kind: nodeNow}
	if p.pos < len(p.src) && (p.src[p.pos] == '+' || p.src[p.pos] == '-') {
		sign := 1
		if p.src[p.pos] == '-' {
			sign = -1
		}
		p.pos++
		d := p.pos
		for p.pos < len(p.src) && p.src[p.pos] >= '0' && p.src[p.pos] <= '9' && p.pos-d < 9 {
			p.pos++
		}
		if d == p.pos {
			return node{}, p.errorf(d, "now+ and now- need a number")
		}
		v, _ := strconv.Atoi(p.src[d:p.pos])
		n.offset = sign * v
		if p.pos >= len(p.src) || p.src[p.pos] != ':' {
			return node{}, p.errorf(p.pos, "now%+d needs a unit (%s)", n.offset, unitNames)
		}
		p.pos++
		u := p.pos
		for p.pos < len(p.src) && (p.src[p.pos] >= 'a' && p.src[p.pos] <= 'z' || p.src[p.pos] >= 'A' && p.src[p.pos] <= 'Z') {
			p.pos++
		}
		unit, ok := timeUnits[p.src[u:p.pos]]
		if !ok {
			return node{}, p.errorf(u, "unknown time unit %q (want %s)", p.src[u:p.pos], unitNames)
		}
		n.unit = unit
	}
	if p.pos < len(p.src) && p.src[p.pos] == ':' {
		p.pos++
		f := p.pos
		for p.pos < len(p.src) && p.src[p.pos] != '}' {
			if p.src[p.pos] == '$' && strings.HasPrefix(p.src[p.pos:], "${") {
				return node{}, p.errorf(p.pos, "a date format cannot hold \"${\"")
			}
			p.pos++
		}
		if f == p.pos {
			return node{}, p.errorf(f, "empty date format")
		}
		n.format = parseDateFormat(p.src[f:p.pos])
	}
	if p.pos < len(p.src) && p.src[p.pos] != '}' && p.src[p.pos] != ' ' && p.src[p.pos] != '\t' && p.src[p.pos] != '|' {
		return node{}, p.errorf(start, "unknown variable %q", p.src[start:min(len(p.src), p.pos+1)])
	}
	return n, nil
}
