package integrations

import (
	"errors"
	"os"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// templateStrings returns every string of a YAML document that holds
// "${", with where it is.
func templateStrings(t *testing.T, data []byte) map[string]string {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("the YAML does not parse: %v", err)
	}
	out := map[string]string{}
	var walk func(n *yaml.Node, where string)
	walk = func(n *yaml.Node, where string) {
		switch n.Kind {
		case yaml.DocumentNode, yaml.SequenceNode:
			for _, c := range n.Content {
				walk(c, where)
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				walk(n.Content[i+1], where+"."+n.Content[i].Value)
			}
		case yaml.ScalarNode:
			if strings.Contains(n.Value, "${") {
				out[where+"@"+itoa(n.Line)] = n.Value
			}
		}
	}
	walk(&doc, "")
	return out
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}

// TestParseProviderFileTemplates parses every template of the Nango
// providers.yaml named by CONNECT_NANGO_PROVIDERS_FILE (the e2e setup
// points it at the file of @nangohq/providers), or, when it is not set,
// of testdata/templates.yaml, which holds one line per construct of that
// file. Each must parse, evaluate without panicking, and report its names.
func TestParseProviderFileTemplates(t *testing.T) {
	t.Parallel()
	file := os.Getenv("CONNECT_NANGO_PROVIDERS_FILE")
	if file == "" {
		file = "testdata/templates.yaml"
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	tmpls := templateStrings(t, data)
	if len(tmpls) < 20 {
		t.Fatalf("%s: only %d templates found", file, len(tmpls))
	}
	t.Logf("%s: %d templates", file, len(tmpls))
	for where, s := range tmpls {
		tp, err := ParseTemplate(s)
		if err != nil {
			t.Errorf("%s: %v", where, err)
			continue
		}
		// Without values, a template each of whose alternatives uses a
		// variable has no value.
		needs := true
		for _, alt := range tp.alts {
			a := &Template{}
			a.collect(alt)
			needs = needs && len(a.names) > 0
		}
		_, err = tp.Eval(&TemplateVars{})
		var mv *MissingValueError
		if needs != errors.As(err, &mv) {
			t.Errorf("%s: %q evaluated without values: %v", where, s, err)
		}
	}
}
