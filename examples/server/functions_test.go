package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"testing"
)

// startServer runs the server with env (PORT and CONNECT_API_KEY are
// added; see serve) until the test ends, and returns its base URL and API
// key.
func startServer(t *testing.T, env map[string]string) (base, key string) {
	t.Helper()
	key = "test-key-0123456789abcdef"
	env["CONNECT_API_KEY"] = key
	base, stop := serve(t, env)
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("run returned %v after shutdown", err)
		}
	})
	return base, key
}

// callJSON is call, decoding the JSON answer into out.
func callJSON(t *testing.T, method, url, key, body string, out any) int {
	t.Helper()
	status, b := call(t, method, url, key, body)
	if err := json.Unmarshal([]byte(b), out); err != nil {
		t.Fatalf("%s %s: %d %s", method, url, status, b)
	}
	return status
}

// named lists the names of {data: [{name, type}]} answers as "type name".
type named struct {
	Data []struct {
		Name string `json:"name"`
		Type string `json:"type"`
	} `json:"data"`
}

func (n named) names() []string {
	var out []string
	for _, d := range n.Data {
		out = append(out, d.Type+" "+d.Name)
	}
	slices.Sort(out)
	return out
}

// TestExampleFunctionsRegistered: with CONNECT_EXAMPLE_FUNCTIONS the
// server deploys the example functions to the integrations it names and
// lists them as templates of the github and slack providers.
func TestExampleFunctionsRegistered(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		value, github, slack string
	}{
		{"github=gh, slack=team-slack", "gh", "team-slack"},
		{"true", "github", "slack"},
		{"1", "github", "slack"},
	} {
		base, key := startServer(t, map[string]string{"CONNECT_EXAMPLE_FUNCTIONS": tc.value})
		for _, it := range []struct{ provider, key string }{{"github", tc.github}, {"slack", tc.slack}} {
			if st, b := call(t, "POST", base+"/integrations", key, `{"provider":"`+it.provider+`","unique_key":"`+it.key+`"}`); st != 200 {
				t.Fatalf("%s: create integration %s: %d %s", tc.value, it.key, st, b)
			}
		}
		var fns named
		if st := callJSON(t, "GET", base+"/integrations/"+tc.github+"/functions", key, "", &fns); st != 200 ||
			!slices.Equal(fns.names(), []string{"action create-issue", "sync issues"}) {
			t.Errorf("%s: functions of %s: %d %v", tc.value, tc.github, st, fns.names())
		}
		fns = named{}
		if st := callJSON(t, "GET", base+"/integrations/"+tc.slack+"/functions", key, "", &fns); st != 200 ||
			!slices.Equal(fns.names(), []string{"action post-message"}) {
			t.Errorf("%s: functions of %s: %d %v", tc.value, tc.slack, st, fns.names())
		}
		var tpl named
		if st := callJSON(t, "GET", base+"/providers/github/templates", key, "", &tpl); st != 200 ||
			!slices.Equal(tpl.names(), []string{"action create-issue", "sync issues"}) {
			t.Errorf("%s: github templates: %d %v", tc.value, st, tpl.names())
		}
		tpl = named{}
		if st := callJSON(t, "GET", base+"/providers/slack/templates", key, "", &tpl); st != 200 ||
			!slices.Equal(tpl.names(), []string{"action post-message"}) {
			t.Errorf("%s: slack templates: %d %v", tc.value, st, tpl.names())
		}
	}

	// Only the named set; without the variable, none.
	base, key := startServer(t, map[string]string{"CONNECT_EXAMPLE_FUNCTIONS": "slack=slack"})
	var tpl named
	if st := callJSON(t, "GET", base+"/providers/github/templates", key, "", &tpl); st != 200 || len(tpl.Data) != 0 {
		t.Errorf("slack only: github templates %d %v", st, tpl.names())
	}
	base, key = startServer(t, map[string]string{})
	tpl = named{}
	if st := callJSON(t, "GET", base+"/providers/slack/templates", key, "", &tpl); st != 200 || len(tpl.Data) != 0 {
		t.Errorf("unset: slack templates %d %v", st, tpl.names())
	}
	call(t, "POST", base+"/integrations", key, `{"provider":"github","unique_key":"github"}`)
	var fns named
	if st := callJSON(t, "GET", base+"/integrations/github/functions", key, "", &fns); st != 200 || len(fns.Data) != 0 {
		t.Errorf("unset: functions of github %d %v", st, fns.names())
	}
}

// TestExampleFunctionsBadValue: a wrong CONNECT_EXAMPLE_FUNCTIONS stops
// the start with a message that names the variable and the problem.
func TestExampleFunctionsBadValue(t *testing.T) {
	t.Parallel()
	for value, want := range map[string]string{
		"github":                  `"github" is not <example>=<integration key>: write github=github`,
		"jira=jira":               `unknown example "jira": the examples are github and slack`,
		"github=":                 `"" is not an integration key`,
		"github=a/b":              `"a/b" is not an integration key`,
		"github=a,github=b":       "github is given twice",
		",":                       "lists no example",
		"yes":                     `"yes" is not <example>=<integration key>`,
		"slack=ok,github=bad key": "", // a key may hold spaces inside: valid
	} {
		err := run(context.Background(), slog.New(slog.DiscardHandler), envFunc(map[string]string{
			"PORT": freePort(t), "CONNECT_EXAMPLE_FUNCTIONS": value, "CONNECT_RATE_LIMIT": "many"}))
		// CONNECT_RATE_LIMIT is wrong too, and read after: a valid value
		// of CONNECT_EXAMPLE_FUNCTIONS lets run fail on it instead.
		if want == "" {
			if err == nil || strings.Contains(err.Error(), "CONNECT_EXAMPLE_FUNCTIONS") {
				t.Errorf("%q: %v, want it accepted", value, err)
			}
			continue
		}
		if err == nil || !strings.HasPrefix(err.Error(), "CONNECT_EXAMPLE_FUNCTIONS") || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want CONNECT_EXAMPLE_FUNCTIONS: ...%s...", value, err, want)
		}
	}
}

func TestExampleFunctionsParse(t *testing.T) {
	t.Parallel()
	for value, want := range map[string][]exampleBinding{
		"":                           nil,
		"false":                      nil,
		"0":                          nil,
		"true":                       {{"github", "github"}, {"slack", "slack"}},
		"slack=s1":                   {{"slack", "s1"}},
		" github = gh-1 , slack=s ,": {{"github", "gh-1"}, {"slack", "s"}},
	} {
		got, err := exampleFunctions(value)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("%q: %v, %v; want %v", value, got, err, want)
		}
	}
}
