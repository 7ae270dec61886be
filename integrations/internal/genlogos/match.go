package main

import (
	"regexp"
	"slices"
	"strings"
)

// variantSuffixes are the key suffixes (after a "-") and trailing display
// name words that name a variant of a provider (an auth mode, an
// environment, a version, an API of the same product) rather than another
// brand.
var variantSuffixes = []string{
	"api-key", "apikey", "api", "key", "token", "pat", "jwt", "basic", "cc",
	"oauth", "oauth2", "oauth1", "mcp", "scim", "app", "admin",
	"sandbox", "staging", "beta", "test", "dev", "legacy",
	"v1", "v2", "v3", "eu", "us",
}

// slug is simple-icons' titleToSlug: lower case, a few letters and signs
// spelled out, accents removed, everything but a-z and 0-9 dropped.
func slug(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if rep, ok := slugReplacements[r]; ok {
			b.WriteString(rep)
			continue
		}
		if f, ok := unaccented[r]; ok {
			r = f
		}
		if ('a' <= r && r <= 'z') || ('0' <= r && r <= '9') {
			b.WriteRune(r)
		}
	}
	return b.String()
}

var slugReplacements = map[rune]string{
	'+': "plus", '.': "dot", '&': "and",
	'đ': "d", 'ħ': "h", 'ı': "i", 'ĸ': "k", 'ŀ': "l", 'ł': "l", 'ß': "ss", 'ŧ': "t", 'ø': "o",
}

// unaccented maps the accented Latin letters to their base letter, as
// Unicode decomposition (NFD) followed by the removal of marks does.
var unaccented = func() map[rune]rune {
	m := map[rune]rune{}
	for base, letters := range map[rune]string{
		'a': "àáâãäåāăąǎ", 'c': "çćĉċč", 'd': "ď", 'e': "èéêëēĕėęě", 'g': "ĝğġģ", 'h': "ĥ",
		'i': "ìíîïĩīĭįǐ", 'j': "ĵ", 'k': "ķ", 'l': "ĺļľ", 'n': "ñńņňǹ", 'o': "òóôõöōŏőǒ",
		'r': "ŕŗř", 's': "śŝşšș", 't': "ţťț", 'u': "ùúûüũūŭůűųǔ", 'w': "ŵ", 'y': "ýÿŷ", 'z': "źżž",
	} {
		for _, r := range letters {
			m[r] = base
		}
	}
	return m
}()

// parenRE is a parenthesis of a display name: "1Password (SCIM)".
var parenRE = regexp.MustCompile(`\s*\([^)]*\)`)

// stripKey removes variant suffixes from the end of a key, one at a time,
// and returns each shorter key.
func stripKey(key string) []string {
	var out []string
	for {
		cut := false
		for _, s := range variantSuffixes {
			if rest, ok := strings.CutSuffix(key, "-"+s); ok && rest != "" {
				key, cut = rest, true
				out = append(out, key)
				break
			}
		}
		if !cut {
			return out
		}
	}
}

// stripName removes a display name's parentheses, then its trailing
// variant words one at a time, and returns each shorter name.
func stripName(name string) []string {
	var out []string
	if n := strings.TrimSpace(parenRE.ReplaceAllString(name, "")); n != name && n != "" {
		name = n
		out = append(out, name)
	}
	for {
		words := strings.Fields(name)
		if len(words) < 2 {
			return out
		}
		last := strings.ToLower(words[len(words)-1])
		if !slices.Contains(variantSuffixes, last) {
			return out
		}
		name = strings.Join(words[:len(words)-1], " ")
		out = append(out, name)
	}
}

// families are the brands whose products share the brand's mark: a
// provider "FAMILY-..." whose display name starts with the same word gets
// it when nothing else matched. The list is kept by hand, so that a
// provider named after a common word ("Loop Returns", "Orange Logic") does
// not take the mark of an unrelated brand of that word.
var families = []string{
	"adobe", "amazon", "apple", "atlassian", "aws", "azure", "bing", "canvas", "cisco",
	"confluence", "datto", "dropbox", "google", "greenhouse", "hackerrank", "hibob", "jira",
	"mcp", "meta", "microsoft", "oracle", "personio", "retell", "revolut", "sage",
	"salesforce", "sap", "shopify", "stripe", "tiktok", "twenty", "whatsapp", "zapier",
	"zendesk", "zoho",
}

// candidate is a slug a round tries; but for a family's, it may also
// match a product's short name (see index.addShort).
type candidate struct {
	slug, via string
	short     bool
}

// rounds returns the candidates of each round for p, in order: strict (the
// key, the display name), variant (the key and display name without their
// variant parts, the alias: the provider p inherits from), family. A slug
// appears only in the first round that has it.
func rounds(p provider) [3][]candidate {
	var r [3][]candidate
	seen := map[string]bool{}
	add := func(round int, via, name string) {
		s := slug(name)
		if s == "" || seen[s] {
			return
		}
		seen[s] = true
		r[round] = append(r[round], candidate{slug: s, via: via + " " + name, short: via != "family"})
	}
	add(0, "key", p.name)
	add(0, "display name", p.display)
	for _, k := range stripKey(p.name) {
		add(1, "key", k)
	}
	for _, n := range stripName(p.display) {
		add(1, "display name", n)
	}
	if p.alias != "" {
		add(1, "alias", p.alias)
		for _, k := range stripKey(p.alias) {
			add(1, "alias", k)
		}
	}
	if family, _, ok := strings.Cut(p.name, "-"); ok && slices.Contains(families, family) {
		if words := strings.Fields(p.display); len(words) > 1 && slug(words[0]) == slug(family) {
			add(2, "family", family)
		}
	}
	return r
}

var roundNames = [3]string{"strict", "variant", "family"}

// matchProvider finds p's icon: in each round, the first square SVG Logos
// match, else the first simple-icons match, else the first wide SVG Logos
// wordmark; it returns the icon, the round's name and what matched, or nil.
func matchProvider(p provider, logos, simple *index) (*icon, string, string) {
	for i, cands := range rounds(p) {
		var lg, wide, si *icon
		var lgVia, wideVia, siVia string
		for _, c := range cands {
			if ic := logos.lookup(c.slug, c.short); ic != nil {
				switch {
				case !ic.wide && lg == nil:
					lg, lgVia = ic, c.via
				case ic.wide && wide == nil:
					wide, wideVia = ic, c.via
				}
			}
			if si == nil {
				if si = simple.lookup(c.slug, c.short); si != nil {
					siVia = c.via
				}
			}
		}
		switch {
		case lg != nil:
			return lg, roundNames[i], lgVia
		case si != nil:
			return si, roundNames[i], siVia
		case wide != nil:
			return wide, roundNames[i], wideVia
		}
	}
	return nil, "", ""
}
