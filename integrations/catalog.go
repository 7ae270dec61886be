package integrations

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"unicode"

	"gopkg.in/yaml.v3"
)

//go:embed providers/*.yaml
var embeddedProviders embed.FS

// Catalog is an immutable set of providers, in a fixed order. It is safe for
// concurrent use. The providers it returns are shared: treat them as
// read-only.
//
// A catalogue built leniently (see [BuildCatalog]) may also list providers
// it cannot use: [Catalog.List], [Catalog.Search] and [Catalog.Lookup]
// return them, [Catalog.Unusable] says why, and [Catalog.Get] never
// returns them, so code that acts on a provider only ever sees valid data.
type Catalog struct {
	list     []*Provider
	unusable []*UnusableError // parallel to list; nil for a usable provider
	dropped  []*UnusableError // problems of entries that could not be listed
	byName   map[string]int
	keys     []searchKey
}

// searchKey holds a provider's normalized search fields.
type searchKey struct {
	name, display string
	categories    []string
}

// DefaultCatalog returns a catalogue of the providers embedded in this
// package, most used first.
//
// The embedded YAML (about 120 KB for some 220 providers) is parsed once per
// process; each call builds a new Catalog from deep copies of the parsed
// providers, so catalogues returned by different calls share nothing. A
// call after the first costs the validation of every provider (about a
// tenth of the parse); still, keep the result rather than calling it per
// request.
func DefaultCatalog() (*Catalog, error) {
	all, err := embeddedParsed()
	if err != nil {
		return nil, err
	}
	return NewCatalog(all...)
}

// embeddedParsed is parseEmbedded, once. Its result is never modified:
// NewCatalog works on clones.
var embeddedParsed = sync.OnceValues(parseEmbedded)

// parseEmbedded parses the embedded providers.
func parseEmbedded() ([]*Provider, error) {
	entries, err := fs.ReadDir(embeddedProviders, "providers")
	if err != nil {
		return nil, fmt.Errorf("integrations: reading embedded providers: %w", err)
	}
	var all []*Provider
	for _, e := range entries { // sorted by file name
		name := path.Join("providers", e.Name())
		data, err := embeddedProviders.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("integrations: reading %s: %w", name, err)
		}
		ps, err := loadOwn(data)
		if err != nil {
			return nil, fmt.Errorf("integrations: %s: %w", name, err)
		}
		all = append(all, ps...)
	}
	return all, nil
}

// NewCatalog returns a catalogue of the providers, in the given order. It
// is strict: any problem with any provider fails it, every problem listed
// (BuildCatalog with Strict set).
//
// The providers are copied, so later changes to them do not affect the
// catalogue. A provider with an Alias that is not yet resolved inherits
// from the provider of that name among the others. Documented defaults are
// filled in (scope_separator " " and token_request_auth_method "body" for
// OAuth modes, signature_method HMAC-SHA1 for OAUTH1, verification method
// GET). Then every provider is validated with [Provider.Validate]. Names
// must be unique. All problems are reported together.
func NewCatalog(providers ...*Provider) (*Catalog, error) {
	return BuildCatalog(nil, BuildOptions{Strict: true}, providers...)
}

// With returns a new catalogue holding c's providers and the given ones: a
// given provider replaces the one of the same name in place, and new ones
// are appended in order. Aliases among the given providers resolve against
// the given ones first, then c's. c itself is unchanged; providers that
// aliased a replaced provider keep what they inherited. Like NewCatalog it
// is strict; [BuildCatalog] without Strict keeps bad providers as
// unusable instead.
func (c *Catalog) With(providers ...*Provider) (*Catalog, error) {
	return BuildCatalog(c, BuildOptions{Strict: true}, providers...)
}

// BuildOptions say how [BuildCatalog] treats providers with problems.
type BuildOptions struct {
	// Strict fails the whole build when any provider has a problem (an
	// entry that could not be read, an alias that cannot be resolved, a
	// failed [Provider.Validate], a duplicate or missing name), returning
	// every problem joined with errors.Join. Use it to check a providers
	// file in CI. NewCatalog and Catalog.With are strict.
	//
	// When false, one bad provider never takes the others down: it is kept
	// in the catalogue as unusable, listed with the reason that
	// [Catalog.Unusable] returns, and [Catalog.Get] does not return it. An
	// entry without a name, a nil provider and the second of two providers
	// of the same name cannot be listed: they are left out and reported by
	// [Catalog.Problems] only.
	Strict bool
}

// BuildCatalog returns a catalogue of base's providers (base may be nil)
// and the given ones, as [Catalog.With] describes: a given provider
// replaces base's provider of the same name in place, and new ones are
// appended in order. base is unchanged, and so are the given providers,
// which are copied. Aliases are resolved, documented defaults filled in
// and every given provider validated; opts says what a problem does.
//
// The error is nil when the build is lenient, whatever the problems: read
// them from [Catalog.Problems]. A strict build returns every problem.
func BuildCatalog(base *Catalog, opts BuildOptions, providers ...*Provider) (*Catalog, error) {
	return build(base, providers, opts.Strict)
}

func build(base *Catalog, given []*Provider, strict bool) (*Catalog, error) {
	var errs []error
	var dropped []*UnusableError
	fresh := make([]*Provider, 0, len(given))
	index := make(map[string]int, len(given))
	for i, p := range given {
		switch {
		case p == nil:
			err := fmt.Errorf("integrations: provider %d is nil", i)
			errs = append(errs, err)
			dropped = append(dropped, &UnusableError{Problems: []error{err}})
			continue
		case p.Name == "":
			// Validate names the problems of a nameless entry; it cannot
			// be listed.
			err := p.Validate()
			errs = append(errs, err)
			dropped = append(dropped, &UnusableError{Problems: unjoin(err)})
			continue
		}
		if j, dup := index[p.Name]; dup {
			err := &ValidationError{Provider: p.Name, Field: "name",
				Problem: fmt.Sprintf("duplicate (providers %d and %d); the first is kept", j, i)}
			errs = append(errs, err)
			dropped = append(dropped, &UnusableError{Provider: p.Name, Problems: []error{err}})
			continue
		}
		index[p.Name] = len(fresh)
		fresh = append(fresh, p.Clone())
	}
	lookup := func(name string) *Provider {
		if i, ok := index[name]; ok {
			return fresh[i]
		}
		if base != nil {
			if i, ok := base.byName[name]; ok {
				return base.list[i]
			}
		}
		return nil
	}
	aliasErrs := resolveAliases(fresh, lookup)
	problems := make([]*UnusableError, len(fresh))
	for i, p := range fresh {
		var ps []error
		if ae := aliasErrs[p]; len(ae) > 0 {
			ps = ae // the fields are those of the entry alone: not validated
		} else {
			p.applyDefaults()
			ps = unjoin(p.Validate())
		}
		if len(ps) > 0 {
			errs = append(errs, ps...)
			problems[i] = &UnusableError{Provider: p.Name, Problems: ps}
		}
	}
	if strict && len(errs) > 0 {
		return nil, errors.Join(errs...)
	}

	var list []*Provider
	var unusable []*UnusableError
	if base != nil {
		list = slices.Clone(base.list)
		unusable = slices.Clone(base.unusable)
		dropped = append(slices.Clone(base.dropped), dropped...)
		for i, p := range list {
			if j, ok := index[p.Name]; ok {
				list[i], unusable[i] = fresh[j], problems[j]
				fresh[j] = nil
			}
		}
	}
	for i, p := range fresh {
		if p != nil {
			list = append(list, p)
			unusable = append(unusable, problems[i])
		}
	}
	c := &Catalog{
		list:     list,
		unusable: unusable,
		dropped:  dropped,
		byName:   make(map[string]int, len(list)),
		keys:     make([]searchKey, len(list)),
	}
	for i, p := range list {
		c.byName[p.Name] = i
		k := searchKey{name: normalize(p.Name), display: normalize(p.DisplayName)}
		for _, cat := range p.Categories {
			k.categories = append(k.categories, normalize(cat))
		}
		c.keys[i] = k
	}
	return c, nil
}

// unjoin returns the errors joined in err (nil for nil).
func unjoin(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return slices.Clone(j.Unwrap())
	}
	return []error{err}
}

// UnusableError says why a catalogue cannot use a provider.
type UnusableError struct {
	// Provider is the provider's name; "" for an entry without one.
	Provider string
	// Problems are the reasons, most often *ValidationError values.
	Problems []error
}

func (e *UnusableError) Error() string {
	return fmt.Sprintf("integrations: provider %q cannot be used: %s", e.Provider, e.Reason())
}

// Unwrap returns the problems.
func (e *UnusableError) Unwrap() []error { return e.Problems }

// Reason is the problems in one line, without the provider's name:
// "auth_mode: unknown auth mode \"X\"; proxy.base_url: missing". It holds
// provider data only, never a secret.
func (e *UnusableError) Reason() string {
	parts := make([]string, 0, len(e.Problems))
	for _, p := range e.Problems {
		var ve *ValidationError
		if errors.As(p, &ve) {
			parts = append(parts, ve.Field+": "+ve.Problem)
		} else {
			parts = append(parts, strings.TrimPrefix(p.Error(), "integrations: "))
		}
	}
	return strings.Join(parts, "; ")
}

// resolveAliases applies unresolved aliases in ps in place. lookup finds an
// alias target by name (it may return an entry of ps). Chains of aliases
// are followed. The problems (cycles, missing targets) are returned per
// provider; such a provider is left as it is, and so is every provider
// whose chain leads to one.
func resolveAliases(ps []*Provider, lookup func(string) *Provider) map[*Provider][]error {
	state := make(map[*Provider]int) // 1 resolving, 2 done
	failed := make(map[*Provider][]error)
	var resolve func(p *Provider, chain []string) error
	resolve = func(p *Provider, chain []string) error {
		if p.Alias == "" || p.aliasResolved || state[p] == 2 {
			return nil
		}
		if errs, ok := failed[p]; ok {
			return errs[0]
		}
		if state[p] == 1 {
			return &ValidationError{Provider: p.Name, Field: "alias",
				Problem: fmt.Sprintf("alias cycle %s", strings.Join(append(chain, p.Name), " -> "))}
		}
		state[p] = 1
		target := lookup(p.Alias)
		var err error
		switch {
		case target == p:
			err = &ValidationError{Provider: p.Name, Field: "alias", Problem: "a provider cannot alias itself"}
		case target == nil:
			err = &ValidationError{Provider: p.Name, Field: "alias",
				Problem: fmt.Sprintf("unknown provider %q", p.Alias)}
		default:
			if terr := resolve(target, append(chain, p.Name)); terr != nil {
				var ve *ValidationError
				if errors.As(terr, &ve) && strings.HasPrefix(ve.Problem, "alias cycle") {
					err = &ValidationError{Provider: p.Name, Field: "alias", Problem: ve.Problem}
				} else {
					err = &ValidationError{Provider: p.Name, Field: "alias",
						Problem: fmt.Sprintf("provider %q cannot be resolved", p.Alias)}
				}
			}
		}
		if err != nil {
			state[p] = 0
			failed[p] = []error{err}
			return err
		}
		*p = *inherit(target, p)
		state[p] = 2
		return nil
	}
	for _, p := range ps {
		_ = resolve(p, nil) // recorded in failed
	}
	return failed
}

// Get returns the usable provider with the name: a provider the catalogue
// lists as unusable is not returned (see [Catalog.Lookup]).
func (c *Catalog) Get(name string) (*Provider, bool) {
	i, ok := c.byName[name]
	if !ok || c.unusable[i] != nil {
		return nil, false
	}
	return c.list[i], true
}

// Lookup returns the provider with the name, usable or not, for display:
// check [Catalog.Unusable] before using it, or use [Catalog.Get].
func (c *Catalog) Lookup(name string) (*Provider, bool) {
	i, ok := c.byName[name]
	if !ok {
		return nil, false
	}
	return c.list[i], true
}

// Unusable returns why the catalogue cannot use the provider with the name,
// as an *UnusableError, or nil when the provider is usable or not listed.
func (c *Catalog) Unusable(name string) error {
	if i, ok := c.byName[name]; ok && c.unusable[i] != nil {
		return c.unusable[i]
	}
	return nil
}

// Problems returns every problem a lenient build kept out of use: one
// *UnusableError per unusable provider, in catalogue order, then one per
// entry that could not be listed (nameless, nil or duplicate), in the order
// they were given. Empty for a catalogue built strictly.
func (c *Catalog) Problems() []*UnusableError {
	var out []*UnusableError
	for _, u := range c.unusable {
		if u != nil {
			out = append(out, u)
		}
	}
	return append(out, c.dropped...)
}

// List returns every provider in catalogue order (for DefaultCatalog: most
// used first), unusable ones included. The slice is new; the providers are
// shared.
func (c *Catalog) List() []*Provider { return slices.Clone(c.list) }

// Len returns the number of providers, unusable ones included.
func (c *Catalog) Len() int { return len(c.list) }

// Search returns the providers matching q, best matches first, unusable
// ones included.
//
// Matching ignores case and every character that is not a letter or a
// digit, so "git hub", "GitHub" and "git-hub" all find github, and
// "cal com" finds Cal.com. A provider matches when the normalized query is
// a substring of its normalized name, display name or one of its
// categories. Results are ranked: exact name or display-name matches, then
// prefix matches, then other name or display-name matches, then category
// matches; ties keep catalogue order. An empty query (after
// normalization) returns every provider.
func (c *Catalog) Search(q string) []*Provider {
	nq := normalize(q)
	if nq == "" {
		return c.List()
	}
	var tiers [4][]*Provider
	for i, k := range c.keys {
		tier := -1
		switch {
		case k.name == nq || k.display == nq:
			tier = 0
		case strings.HasPrefix(k.name, nq) || strings.HasPrefix(k.display, nq):
			tier = 1
		case strings.Contains(k.name, nq) || strings.Contains(k.display, nq):
			tier = 2
		default:
			for _, cat := range k.categories {
				if strings.Contains(cat, nq) {
					tier = 3
					break
				}
			}
		}
		if tier >= 0 {
			tiers[tier] = append(tiers[tier], c.list[i])
		}
	}
	return slices.Concat(tiers[:]...)
}

// normalize lowercases s and drops everything but letters and digits.
func normalize(s string) string {
	var b strings.Builder
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

// maxDocumentSize bounds what Load reads.
const maxDocumentSize = 32 << 20

// Load reads providers from a YAML document in either format and returns
// them in document order:
//
//   - our format, a mapping with a "providers" key holding a list of
//     [Provider] entries (the embedded files use it). Unknown fields are
//     errors, so typos do not pass silently.
//   - Nango's providers.yaml, a mapping from provider key to entry; see
//     [LoadNangoYAML].
//
// Aliases whose target is in the same document are resolved; the others
// are left for [NewCatalog] or [Catalog.With]. The providers are not
// validated: NewCatalog does that, and [Provider.Validate] lets a caller
// pick out the valid ones first. Documents over 32 MiB are refused.
func Load(r io.Reader) ([]*Provider, error) {
	data, err := readLimited(r)
	if err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := safeYAML(func() error { return yaml.Unmarshal(data, &doc) }); err != nil {
		return nil, fmt.Errorf("integrations: parsing providers: %w", err)
	}
	root := documentRoot(&doc)
	if root == nil {
		return nil, errors.New("integrations: parsing providers: empty document")
	}
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("integrations: parsing providers: line %d: want a mapping at the top level", root.Line)
	}
	if isOwnFormat(root) {
		return loadOwn(data)
	}
	return loadNangoNode(root)
}

// LoadFile is [Load] on the file at path.
func LoadFile(path string) ([]*Provider, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("integrations: %w", err)
	}
	defer f.Close()
	ps, err := Load(f)
	if err != nil {
		return nil, fmt.Errorf("%w (in %s)", err, path)
	}
	return ps, nil
}

func readLimited(r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxDocumentSize+1))
	if err != nil {
		return nil, fmt.Errorf("integrations: reading providers: %w", err)
	}
	if len(data) > maxDocumentSize {
		return nil, fmt.Errorf("integrations: reading providers: document larger than %d bytes", maxDocumentSize)
	}
	return data, nil
}

// safeYAML runs f and turns a panic inside the YAML decoder into an error,
// so malformed input never crashes the host.
func safeYAML(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("malformed YAML (%v)", r)
		}
	}()
	return f()
}

func documentRoot(doc *yaml.Node) *yaml.Node {
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil
	}
	root := doc.Content[0]
	for root.Kind == yaml.AliasNode && root.Alias != nil {
		root = root.Alias
	}
	return root
}

// isOwnFormat reports whether a top-level mapping is our format: it has a
// "providers" key whose value is a list.
func isOwnFormat(root *yaml.Node) bool {
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "providers" && root.Content[i+1].Kind == yaml.SequenceNode {
			return true
		}
	}
	return false
}

type ownDocument struct {
	Providers []*Provider `yaml:"providers"`
}

// loadOwn decodes a document of our format and resolves the aliases it
// can. Each entry is decoded strictly; an entry that cannot be decoded (an
// unknown field, a value of the wrong type) becomes a provider with the
// name, display name and auth mode it has, carrying the problem, so that
// [Provider.Validate] reports it and a lenient catalogue lists it as
// unusable.
func loadOwn(data []byte) ([]*Provider, error) {
	var doc ownDocument
	err := safeYAML(func() error {
		dec := yaml.NewDecoder(bytes.NewReader(data))
		dec.KnownFields(true)
		return dec.Decode(&doc)
	})
	if err != nil {
		// Find the bad entries one by one.
		if doc.Providers, err = loadOwnEntries(data); err != nil {
			return nil, fmt.Errorf("integrations: parsing providers: %w", err)
		}
	}
	byName := make(map[string]*Provider, len(doc.Providers))
	ps := make([]*Provider, 0, len(doc.Providers))
	for i, p := range doc.Providers {
		if p == nil {
			p = &Provider{}
			p.addLoadProblem("", fmt.Sprintf("entry %d is empty", i))
		}
		if _, dup := byName[p.Name]; !dup && p.Name != "" {
			byName[p.Name] = p
		}
		ps = append(ps, p)
	}
	// Problems are left for the catalogue, which reports them per provider.
	_ = resolveAliases(localAliases(ps, byName), func(name string) *Provider { return byName[name] })
	return ps, nil
}

// loadOwnEntries decodes the entries of a document of our format one by
// one. The document itself must be well formed: a mapping whose only key
// is "providers", holding a list.
func loadOwnEntries(data []byte) ([]*Provider, error) {
	var doc yaml.Node
	if err := safeYAML(func() error { return yaml.Unmarshal(data, &doc) }); err != nil {
		return nil, err
	}
	root := documentRoot(&doc)
	if root == nil || root.Kind != yaml.MappingNode {
		return nil, errors.New("want a mapping with a providers list")
	}
	var list *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		k := root.Content[i]
		if k.Value != "providers" {
			return nil, fmt.Errorf("line %d: unknown field %q (want providers)", k.Line, k.Value)
		}
		list = deref(root.Content[i+1])
	}
	if list == nil || list.Kind != yaml.SequenceNode {
		return nil, errors.New("want a mapping with a providers list")
	}
	ps := make([]*Provider, 0, len(list.Content))
	for _, n := range list.Content {
		ps = append(ps, decodeOwnEntry(deref(n)))
	}
	return ps, nil
}

// decodeOwnEntry decodes one entry of our format strictly.
func decodeOwnEntry(n *yaml.Node) *Provider {
	if n == nil || n.Kind != yaml.MappingNode {
		p := &Provider{}
		line := 0
		if n != nil {
			line = n.Line
		}
		p.addLoadProblem("", fmt.Sprintf("line %d: want a mapping", line))
		return p
	}
	var p Provider
	err := safeYAML(func() error {
		b, err := yaml.Marshal(n)
		if err != nil {
			return err
		}
		dec := yaml.NewDecoder(bytes.NewReader(b))
		dec.KnownFields(true)
		return dec.Decode(&p)
	})
	if err == nil {
		return &p
	}
	bad := &Provider{
		Name:        scalarField(n, "name"),
		DisplayName: scalarField(n, "display_name"),
		AuthMode:    scalarField(n, "auth_mode"),
	}
	bad.addLoadProblem("", fmt.Sprintf("entry at line %d cannot be read: %s", n.Line, yamlProblem(err)))
	return bad
}

// yamlProblem shortens a YAML decoding error: the line numbers it gives are
// those of the re-encoded entry, so they are dropped.
func yamlProblem(err error) string {
	msg := strings.TrimPrefix(err.Error(), "yaml: unmarshal errors:\n")
	var parts []string
	for _, l := range strings.Split(msg, "\n") {
		l = strings.TrimSpace(l)
		if rest, ok := strings.CutPrefix(l, "line "); ok {
			if _, after, ok := strings.Cut(rest, ": "); ok {
				l = after
			}
		}
		if l != "" {
			parts = append(parts, l)
		}
	}
	return strings.Join(parts, "; ")
}

// localAliases returns the aliases of ps whose chain of targets stays
// within byName; the others are left for the catalogue to resolve.
func localAliases(ps []*Provider, byName map[string]*Provider) []*Provider {
	var local []*Provider
	for _, p := range ps {
		if p.Alias == "" || p.aliasResolved {
			continue
		}
		seen := make(map[*Provider]bool)
		q := p
		for q != nil && q.Alias != "" && !q.aliasResolved && !seen[q] {
			seen[q] = true
			q = byName[q.Alias]
		}
		if q != nil { // reached a plain provider, or a cycle reported later
			local = append(local, p)
		}
	}
	return local
}
