package main

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/examples/functions/github"
	"github.com/embedauth/connect/examples/functions/slack"
	"github.com/embedauth/connect/integrations"
)

// exampleSets are the example functions CONNECT_EXAMPLE_FUNCTIONS can
// register, by name: the provider they are templates of and the
// functions for an integration key.
var exampleSets = map[string]struct {
	provider  string
	functions func(integrationKey string) []any
}{
	"github": {"github", github.Functions},
	"slack":  {"slack", slack.Functions},
}

// exampleBinding is an example set registered for an integration.
type exampleBinding struct {
	set, integration string
}

// exampleFunctions reads CONNECT_EXAMPLE_FUNCTIONS: a comma-separated list
// of <set>=<integration key> (github=github,slack=team-slack), or 1 or
// true for every set under its own name; empty, 0 or false for none.
func exampleFunctions(v string) ([]exampleBinding, error) {
	const name = "CONNECT_EXAMPLE_FUNCTIONS"
	switch strings.TrimSpace(v) {
	case "", "0", "false":
		return nil, nil
	case "1", "true":
		return []exampleBinding{{"github", "github"}, {"slack", "slack"}}, nil
	}
	var out []exampleBinding
	seen := map[string]bool{}
	for _, item := range strings.Split(v, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		set, key, ok := strings.Cut(item, "=")
		set, key = strings.TrimSpace(set), strings.TrimSpace(key)
		if _, known := exampleSets[set]; !ok && known {
			return nil, fmt.Errorf("%s: %q is not <example>=<integration key>: write %s=%s, or set it to true for github=github,slack=slack",
				name, item, set, set)
		}
		if !ok {
			return nil, fmt.Errorf("%s: %q is not <example>=<integration key> (github=<key>, slack=<key>), true or false", name, item)
		}
		if _, known := exampleSets[set]; !known {
			return nil, fmt.Errorf("%s: unknown example %q: the examples are github and slack", name, set)
		}
		if !integrations.ValidKey(key) {
			return nil, fmt.Errorf("%s: %q is not an integration key (1 to 255 letters, digits and ~ : . @ _ - or spaces inside)", name, key)
		}
		if seen[set] {
			return nil, fmt.Errorf("%s: %s is given twice", name, set)
		}
		seen[set] = true
		out = append(out, exampleBinding{set, key})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s %q lists no example: use github=<integration key>,slack=<integration key>, or true", name, v)
	}
	return out, nil
}

// registerExamples registers the example functions for their
// integrations and lists them as templates of their providers.
func registerExamples(svc *connect.Service, logger *slog.Logger, bindings []exampleBinding) error {
	for _, b := range bindings {
		set := exampleSets[b.set]
		fns := set.functions(b.integration)
		if err := svc.Functions().Register(fns...); err != nil {
			return fmt.Errorf("CONNECT_EXAMPLE_FUNCTIONS: %s: %w", b.set, err)
		}
		if err := svc.Functions().AddTemplates(set.provider, fns...); err != nil {
			return fmt.Errorf("CONNECT_EXAMPLE_FUNCTIONS: %s: %w", b.set, err)
		}
		logger.Info("registered example functions", "example", b.set, "integration", b.integration, "functions", len(fns))
	}
	return nil
}
