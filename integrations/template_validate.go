package integrations

import (
	"errors"
	"maps"
	"slices"
	"strings"
)

// checkTemplate checks the syntax and the variables of a template: every
// ${connectionConfig.KEY} and ${credentials.KEY} must be declared (a
// dotted KEY by its first segment or whole); credentials.raw paths, bare
// names and request values need no declaration.
func (v *validator) checkTemplate(field, tmpl string) {
	names, err := Placeholders(tmpl)
	if err != nil {
		v.addf(field, "%v", templateProblem(err))
		return
	}
	for _, n := range names {
		if k, ok := strings.CutPrefix(n, "connectionConfig."); ok {
			head, _, _ := strings.Cut(k, ".")
			if !v.configDeclared(k) && !v.configDeclared(head) {
				v.addf(field, "uses ${%s} but connection_config does not declare %q", n, k)
			}
		}
		if k, ok := strings.CutPrefix(n, "credentials."); ok && !strings.HasPrefix(k, "raw.") {
			head, _, _ := strings.Cut(k, ".")
			if !v.credentialDeclared(k) && !v.credentialDeclared(head) {
				v.addf(field, "uses ${%s} but credentials does not declare %q", n, k)
			}
		}
	}
}

func (v *validator) checkTemplateMap(field string, m map[string]string) {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if k == "" {
			v.addf(field, "empty key")
			continue
		}
		v.checkTemplate(field+"."+k, m[k])
	}
}

// checkTemplateURL checks a URL template: each alternative is an absolute
// http(s) URL once its expressions are filled (a port expression with a
// port), or starts with an expression that supplies the whole origin.
func (v *validator) checkTemplateURL(field, tmpl string) {
	n := len(v.errs)
	v.checkTemplate(field, tmpl)
	if len(v.errs) > n {
		return
	}
	t, err := parseCached(tmpl)
	if err != nil {
		return // reported by checkTemplate
	}
	for _, alt := range t.alts {
		a, err := analyze(alt, false)
		if err == nil && a.origin {
			continue
		}
		if err != nil || (a.scheme != "https" && a.scheme != "http") || a.host == "" {
			v.addf(field, "not an absolute http(s) URL: %q", altSource(alt))
			return
		}
	}
}

// altSource writes an alternative back as text.
func altSource(alt []node) string {
	var b strings.Builder
	for _, n := range alt {
		if n.kind == nodeLiteral {
			b.WriteString(n.text)
		} else {
			b.WriteString(n.src)
		}
	}
	return b.String()
}

func templateProblem(err error) string {
	var te *TemplateError
	if errors.As(err, &te) {
		return te.Problem
	}
	return strings.TrimPrefix(err.Error(), "integrations: ")
}
