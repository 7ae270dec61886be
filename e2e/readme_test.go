package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/format"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// TestREADME runs the examples of README.md and of every page of docs/, so that the
// documentation cannot drift from the code. Each page is a subtest (TestREADME/README.md,
// TestREADME/docs/proxy.md, ...), run alone with -run 'TestREADME/docs/proxy.md'. Every fenced
// code block in a language it can run is an example, and runs in the order of its page, as a
// reader following the page would run them, each in the state the earlier blocks of the page
// left:
//
//   - ```sh (or bash, shell): a bash script (set -euo pipefail) run from the repository root.
//     Variables it exports stay exported for every later block of the page, as in one terminal.
//   - ```js: an ES module. One that imports @nangohq/frontend runs in a page of headless
//     Chromium (through playwright-core; see e2e/readme/browser.mjs), where anything that goes
//     wrong fails it: an uncaught error, a CSP violation, a WebSocket that cannot connect, a
//     request to a server under test that fails or gets a status of 400 or more. Any other runs
//     in Node. Both resolve packages from e2e/node_modules: the published @nangohq/node and
//     @nangohq/frontend.
//   - ```go: a complete program (package main, gofmt-formatted), built in a module of its own
//     that requires this one (as an application would), and run.
//
// A block fails when it exits with an error (a non-zero status, a rejected promise). Blocks in
// other languages, or without one, are documentation (text, json, yaml) or fail the test
// unless marked. A block is marked by an HTML comment on the line before it (only blank lines
// between), invisible on GitHub, with clauses separated by ";":
//
//   - <!-- example: skip: REASON --> does not run it (the reason is required and logged).
//   - <!-- example: server: URL --> for a sh or go block that starts a server: it runs in the
//     background (a sh block's last command; the lines before it run first) until the page
//     ends, and the next block waits until GET URL answers 2xx.
//   - <!-- example: uses: NAME, ... --> for a js block that uses values an earlier js block of
//     the page declared (const NAME = ...): they are handed over as JSON.
//   - <!-- example: twice --> runs the block a second time once it has passed: an example
//     that a reader may well run again (one that creates something) must pass again.
//
// Every page starts afresh: its own home directory, no variables but the test's, no servers.
// README.md starts its servers itself, as its reader does. A page of docs/ starts where the
// README's "Run it" leaves its reader: CONNECT_API_KEY exported and the reference server
// running on its default store, the SQLite file of ~/.connect in the page's home directory
// (started as `go run ./examples/server`), before the page's first block, unless that block
// starts a server itself. A page may start another one (with other settings, or on Postgres)
// with a server block; one on the default store finds what the earlier ones kept there.
//
// Placeholders are replaced in the code and the marks before anything runs:
// localhost:3003 (the reference server) and https://connect.example.com become the reference
// server this test runs on a free port (started with PORT set); localhost:3004 and PORT=3004 (a
// second instance of it) another free port; localhost:8080 (the embedding example) another;
// https://app.example.com (your application, such as a webhook URL) a local server that accepts
// anything; postgres://... a fresh database for each block that names it (each such block is an
// application of its own: the reference server on Postgres, your application embedding the
// library; a page that needs the same database in several blocks exports its URL).
// Blocks run with HOME set to a directory of the page, so that files an example keeps in the
// reader's home (an encryption key, a backup) are made there and not in the repository or your
// home.
// A server block whose ready URL names the host and port of a server started by an earlier
// block of the page stops that one first, as a reader stops a server with Ctrl-C before
// starting the next one on its port.
// Provider APIs are a local fake (fakeProviderAPI): the reference server gets the catalogue
// with every proxy base URL, and OAuth 2 authorization and token URL, pointing at it
// (CONNECT_PROVIDERS_FILE), so credentials such as 'sk-...' pass their check.
//
// A failure names the page and line of the block (docs/proxy.md:N) and shows its output.
func TestREADME(t *testing.T) {
	p := browserPrereqs(t)
	repo := filepath.Dir(p.e2eDir)
	pages, err := docPages(repo)
	if err != nil {
		t.Fatal(err)
	}
	// Every page's marks are checked before anything runs.
	blocks := map[string][]exampleBlock{}
	exportsOf := map[string]map[int][]string{}
	for _, page := range pages {
		raw, err := os.ReadFile(filepath.Join(repo, page))
		if err != nil {
			t.Fatal(err)
		}
		bs, errs := parseExamples(page, string(raw))
		for _, err := range errs {
			t.Error(err)
		}
		ex, errs := resolveUses(bs)
		for _, err := range errs {
			t.Error(err)
		}
		blocks[page], exportsOf[page] = bs, ex
	}
	if t.Failed() {
		t.FailNow()
	}

	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	h := &readmeHarness{ctx: ctx, repo: repo, e2e: p.e2eDir, node: p.node, chromium: p.chromium, dir: t.TempDir()}
	// Packages resolve from the examples' directory as from e2e/.
	if err := os.Symlink(filepath.Join(p.e2eDir, "node_modules"), filepath.Join(h.dir, "node_modules")); err != nil {
		t.Fatal(err)
	}

	fake := fakeProviderAPI(t)
	providers := filepath.Join(h.dir, "providers.yaml")
	if err := writeFakeCatalog(repo, fake.URL, providers); err != nil {
		t.Fatal(err)
	}
	// The application's own endpoints, such as a webhook URL: they accept anything.
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	t.Cleanup(app.Close)
	refPort, secondPort, embedPort := freePort(t), freePort(t), freePort(t)
	h.refURL = "http://localhost:" + refPort
	h.placeholders = strings.NewReplacer(
		"localhost:3003", "localhost:"+refPort,
		"localhost:3004", "localhost:"+secondPort,
		"PORT=3004", "PORT="+secondPort,
		"https://connect.example.com", h.refURL,
		"localhost:8080", "localhost:"+embedPort,
		"https://app.example.com", app.URL,
	)
	h.newDatabase = func() string { return createDatabase(ctx, h.t, p.adminURL) }
	h.watch = []string{h.refURL, "http://localhost:" + secondPort, "http://localhost:" + embedPort}
	base := append(environWithout("PORT", "DATABASE_URL", "CONNECT_", "NANGO_", "NODE_OPTIONS", "README_", "GOFLAGS"),
		"PORT="+refPort,
		"CONNECT_PROVIDERS_FILE="+providers,
		// The fake provider API listens on 127.0.0.1.
		"CONNECT_PROXY_ALLOW_PRIVATE_NETWORKS=true",
	)
	// The reader's home gets the Go caches of this machine, so that nothing is built twice.
	base = slices.DeleteFunc(base, func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return name == "HOME" || name == "GOCACHE" || name == "GOMODCACHE" || name == "GOPATH"
	})
	for _, name := range []string{"GOCACHE", "GOMODCACHE", "GOPATH"} {
		out, err := exec.Command("go", "env", name).Output()
		if err != nil {
			t.Fatalf("go env %s: %v", name, err)
		}
		base = append(base, name+"="+strings.TrimSpace(string(out)))
	}
	h.startPageServer(t)

	for i, page := range pages {
		t.Run(page, func(t *testing.T) {
			h.t, h.page, h.exports, h.servers = t, page, map[string]json.RawMessage{}, nil
			home := filepath.Join(h.dir, fmt.Sprintf("home-%d", i))
			if err := os.Mkdir(home, 0o700); err != nil {
				t.Fatal(err)
			}
			h.env = append(slices.Clone(base), "HOME="+home)
			docsPage := page != "README.md"
			if docsPage {
				h.env = append(h.env, "CONNECT_API_KEY=readme_"+randomHex(t, 24))
			}
			h.runPage(blocks[page], exportsOf[page], docsPage)
		})
	}
}

// docPages returns the pages whose examples TestREADME runs: README.md, then docs/*.md.
func docPages(repo string) ([]string, error) {
	docs, err := filepath.Glob(filepath.Join(repo, "docs", "*.md"))
	if err != nil {
		return nil, err
	}
	pages := []string{"README.md"}
	for _, d := range docs {
		pages = append(pages, filepath.ToSlash(filepath.Join("docs", filepath.Base(d))))
	}
	sort.Strings(pages[1:])
	return pages, nil
}

// runPage runs the blocks of one page in order. With refServer, the reference server is
// started first, as the README's "Run it" starts it, unless the first block that runs starts a
// server itself.
func (h *readmeHarness) runPage(blocks []exampleBlock, exportsOf map[int][]string, refServer bool) {
	t := h.t
	for i, b := range blocks {
		if b.mark.skip != "" {
			t.Logf("%s:%d: ```%s not run: %s", b.file, b.line, b.lang, b.mark.skip)
			continue
		}
		if refServer {
			refServer = false
			if b.mark.server == "" {
				if err := h.startReferenceServer(); err != nil {
					t.Fatalf("%s: starting the reference server for the page: %v", h.page, err)
				}
			}
		}
		runs := 1
		if b.mark.twice {
			runs = 2
		}
		for run := 1; run <= runs; run++ {
			start := time.Now()
			err := h.run(b, exportsOf[i])
			again := ""
			if run > 1 {
				again = " again"
			}
			if err != nil {
				if b.mark.server != "" {
					t.Fatalf("%s:%d: ```%s block%s: %v", b.file, b.line, b.lang, again, err)
				}
				t.Errorf("%s:%d: ```%s block%s: %v", b.file, b.line, b.lang, again, err)
				break
			}
			t.Logf("%s:%d: ```%s ran%s (%s)", b.file, b.line, b.lang, again, time.Since(start).Round(time.Millisecond))
		}
	}
}

// startReferenceServer starts the reference server as README.md's "Run it" does, for a page of
// docs/.
func (h *readmeHarness) startReferenceServer() error {
	b := exampleBlock{file: h.page, lang: "sh", code: "go run ./examples/server\n",
		mark: exampleMark{server: "http://localhost:3003/health"}}
	return h.run(b, nil)
}

// exampleBlock is a fenced code block of a page.
type exampleBlock struct {
	file string // the page, relative to the repository root
	line int    // of the opening fence, 1-based
	lang string
	code string
	mark exampleMark
}

// exampleMark is what an <!-- example: ... --> comment says about the next block.
type exampleMark struct {
	skip   string
	server string
	uses   []string
	twice  bool
}

const (
	runShell = "shell"
	runJS    = "js"
	runGo    = "go"
)

// runner returns how a block of the language runs: runShell, runJS, runGo, "" for
// documentation, or "?" for a language nothing runs.
func runner(lang string) string {
	switch lang {
	case "sh", "bash", "shell":
		return runShell
	case "js", "javascript", "mjs":
		return runJS
	case "go":
		return runGo
	case "", "text", "txt", "json", "yaml", "yml":
		return ""
	}
	return "?"
}

var (
	fenceRE = regexp.MustCompile("^( *)(`{3,}|~{3,})\\s*([^`\\s]*)")
	markRE  = regexp.MustCompile(`^\s*<!--\s*example:(.*?)-->\s*$`)
)

// parseExamples returns the example blocks of the page file (documentation blocks left out)
// and the problems of its marks, each with its line.
func parseExamples(file, text string) ([]exampleBlock, []error) {
	lines := strings.Split(text, "\n")
	var (
		blocks   []exampleBlock
		errs     []error
		mark     *exampleMark
		markLine int
	)
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if m := markRE.FindStringSubmatch(line); m != nil {
			if mark != nil {
				errs = append(errs, fmt.Errorf("%s:%d: an example mark not followed by a code block", file, markLine))
			}
			mk, err := parseMark(m[1])
			if err != nil {
				errs = append(errs, fmt.Errorf("%s:%d: %v", file, i+1, err))
			}
			mark, markLine = &mk, i+1
			continue
		}
		f := fenceRE.FindStringSubmatch(line)
		if f == nil {
			if strings.TrimSpace(line) != "" && mark != nil {
				errs = append(errs, fmt.Errorf("%s:%d: an example mark not followed by a code block", file, markLine))
				mark = nil
			}
			continue
		}
		indent, fence, lang := len(f[1]), f[2], strings.ToLower(f[3])
		start := i + 1
		var code []string
		closed := false
		for i++; i < len(lines); i++ {
			l := lines[i]
			if t := strings.TrimLeft(l, " "); strings.HasPrefix(t, fence) && strings.Trim(t, fence[:1]+" \t") == "" {
				closed = true
				break
			}
			// Content of an indented fence (in a list item) loses that indentation.
			for k := 0; k < indent && strings.HasPrefix(l, " "); k++ {
				l = l[1:]
			}
			code = append(code, l)
		}
		if !closed {
			errs = append(errs, fmt.Errorf("%s:%d: a code block that is never closed", file, start))
		}
		b := exampleBlock{file: file, line: start, lang: lang, code: strings.Join(code, "\n") + "\n"}
		if mark != nil {
			b.mark = *mark
			mark = nil
		}
		switch r := runner(lang); {
		case r == "" && (b.mark.isZero() || b.mark.skip != ""):
			continue // documentation
		case r == "":
			errs = append(errs, fmt.Errorf("%s:%d: a ```%s block is not run: only skip marks apply to it", file, start, lang))
		case r == "?" && b.mark.skip == "":
			errs = append(errs, fmt.Errorf("%s:%d: nothing runs ```%s blocks: add a runner to e2e/readme_test.go, or mark the block <!-- example: skip: why -->", file, start, lang))
		case b.mark.server != "" && r == runJS:
			errs = append(errs, fmt.Errorf("%s:%d: a js block cannot be a server", file, start))
		case len(b.mark.uses) > 0 && r != runJS:
			errs = append(errs, fmt.Errorf("%s:%d: only js blocks take values from earlier blocks", file, start))
		}
		blocks = append(blocks, b)
	}
	if mark != nil {
		errs = append(errs, fmt.Errorf("%s:%d: an example mark not followed by a code block", file, markLine))
	}
	return blocks, errs
}

func (m exampleMark) isZero() bool {
	return m.skip == "" && m.server == "" && len(m.uses) == 0 && !m.twice
}

func parseMark(s string) (exampleMark, error) {
	var m exampleMark
	for _, clause := range strings.Split(s, ";") {
		clause = strings.TrimSpace(clause)
		if clause == "" {
			continue
		}
		key, val, _ := strings.Cut(clause, ":")
		val = strings.TrimSpace(val)
		switch strings.TrimSpace(key) {
		case "skip":
			if val == "" {
				return m, errors.New("`skip` needs a reason: <!-- example: skip: why it cannot run -->")
			}
			m.skip = val
		case "server":
			if u, err := url.Parse(val); err != nil || u.Scheme == "" || u.Host == "" {
				return m, fmt.Errorf("`server` needs the URL that answers 2xx once the server is ready, not %q", val)
			}
			m.server = val
		case "twice":
			if val != "" {
				return m, errors.New("`twice` takes no value")
			}
			m.twice = true
		case "uses":
			for _, n := range strings.Split(val, ",") {
				if n = strings.TrimSpace(n); !regexp.MustCompile(`^[A-Za-z_$][\w$]*$`).MatchString(n) {
					return m, fmt.Errorf("`uses` takes JavaScript names, not %q", n)
				}
				m.uses = append(m.uses, n)
			}
		default:
			return m, fmt.Errorf("unknown example mark %q (skip, server, uses, twice)", clause)
		}
	}
	return m, nil
}

// resolveUses finds, for every name a js block uses, the nearest earlier js block that declares
// it, and returns the names each block must hand over.
func resolveUses(blocks []exampleBlock) (map[int][]string, []error) {
	out := map[int][]string{}
	var errs []error
	for i, b := range blocks {
		for _, name := range b.mark.uses {
			decl := regexp.MustCompile(`\b(?:const|let|var)\s+(?:` + regexp.QuoteMeta(name) + `\b|\{[^}]*\b` + regexp.QuoteMeta(name) + `\b[^}]*\})`)
			found := -1
			for j := i - 1; j >= 0; j-- {
				if runner(blocks[j].lang) == runJS && decl.MatchString(blocks[j].code) {
					found = j
					break
				}
			}
			switch {
			case found < 0:
				errs = append(errs, fmt.Errorf("%s:%d: uses %s, which no earlier js block of the page declares", b.file, b.line, name))
			case blocks[found].mark.skip != "":
				errs = append(errs, fmt.Errorf("%s:%d: uses %s from line %d, which is not run", b.file, b.line, name, blocks[found].line))
			case !slices.Contains(out[found], name):
				out[found] = append(out[found], name)
			}
		}
	}
	return out, errs
}

// readmeHarness runs the blocks of a page and keeps what they leave: exported shell variables,
// values of js blocks, servers.
type readmeHarness struct {
	t              *testing.T // the page's subtest
	page           string     // the page running
	refURL         string     // where the reference server listens
	ctx            context.Context
	repo, e2e, dir string
	node, chromium string
	placeholders   *strings.Replacer
	watch          []string // origins of the servers under test
	env            []string // the shell's exported variables
	exports        map[string]json.RawMessage
	pageURL        string
	n              int // blocks run, of every page, for file names
	newDatabase    func() string
	// servers stops the server started by a block, by the host and port of its ready URL.
	servers map[string]func()
}

const (
	exampleTimeout     = 3 * time.Minute
	exampleReadyWithin = 5 * time.Minute // a server block may compile first
)

func (h *readmeHarness) run(b exampleBlock, exports []string) error {
	h.n++
	code := h.placeholders.Replace(b.code)
	if strings.Contains(code, "postgres://...") {
		code = strings.ReplaceAll(code, "postgres://...", h.newDatabase())
	}
	ready := h.placeholders.Replace(b.mark.server)
	if ready != "" {
		if u, err := url.Parse(ready); err == nil {
			if stop := h.servers[u.Host]; stop != nil {
				stop()
				delete(h.servers, u.Host)
			}
		}
	}
	switch runner(b.lang) {
	case runShell:
		if ready != "" {
			setup, serve := splitLastCommand(code)
			if serve == "" {
				return errors.New("a server block needs a command")
			}
			if err := h.shell(setup); err != nil {
				return err
			}
			return h.serve(b, exec.Command("bash", "-c", serve), ready)
		}
		return h.shell(code)
	case runJS:
		return h.js(b, code, exports)
	case runGo:
		return h.goProgram(b, code, ready)
	}
	return fmt.Errorf("no runner for ```%s", b.lang)
}

// shell runs a bash script from the repository root and keeps the variables it exported.
func (h *readmeHarness) shell(code string) error {
	state := filepath.Join(h.dir, fmt.Sprintf("env-%d", h.n))
	script := "set -euo pipefail\n" + code + "\nenv -0 > \"$README_STATE\"\n"
	ctx, cancel := context.WithTimeout(h.ctx, exampleTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Dir = h.repo
	cmd.Env = append(slices.Clone(h.env), "README_STATE="+state)
	out, err := runGroup(ctx, cmd)
	if err != nil {
		return fmt.Errorf("%v\n%s", err, out)
	}
	raw, err := os.ReadFile(state)
	if err != nil {
		return err
	}
	var env []string
	for _, kv := range strings.Split(string(raw), "\x00") {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "", "_", "SHLVL", "PWD", "OLDPWD", "README_STATE":
			continue
		}
		env = append(env, kv)
	}
	h.env = env
	return nil
}

// runGroup runs cmd (made with exec.CommandContext(ctx, ...)) in a process group of its own
// and returns its combined output. When ctx ends, the whole group is killed: a command that
// started a server which never exits (an unmarked server block) cannot hold the test.
func runGroup(ctx context.Context, cmd *exec.Cmd) ([]byte, error) {
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	if ctx.Err() == context.DeadlineExceeded {
		err = fmt.Errorf("did not finish within %s: a block that starts a server must be marked <!-- example: server: URL --> (%v)", exampleTimeout, err)
	}
	return []byte(out.String()), err
}

// splitLastCommand splits a script into everything before its last command (a line, with its
// backslash continuations) and that command.
func splitLastCommand(code string) (setup, last string) {
	lines := strings.Split(strings.TrimRight(code, "\n"), "\n")
	end := len(lines) - 1
	for end >= 0 && (strings.TrimSpace(lines[end]) == "" || strings.HasPrefix(strings.TrimSpace(lines[end]), "#")) {
		end--
	}
	if end < 0 {
		return code, ""
	}
	start := end
	for start > 0 && strings.HasSuffix(lines[start-1], "\\") {
		start--
	}
	return strings.Join(lines[:start], "\n") + "\n", strings.Join(lines[start:end+1], "\n")
}

// js runs a JavaScript block in Node, or in Chromium when it imports @nangohq/frontend.
func (h *readmeHarness) js(b exampleBlock, code string, exports []string) error {
	var src strings.Builder
	// The handed-over values go on the block's first line, so that line numbers match.
	for _, name := range b.mark.uses {
		v, ok := h.exports[name]
		if !ok {
			return fmt.Errorf("uses %s, which the block that declares it did not hand over", name)
		}
		fmt.Fprintf(&src, "const %s = %s; ", name, v)
	}
	src.WriteString(code)
	if len(exports) > 0 {
		fmt.Fprintf(&src, "\n;export const __readme = { %s };\n", strings.Join(exports, ", "))
	}
	name := fmt.Sprintf("block-%d.mjs", h.n)
	if err := os.WriteFile(filepath.Join(h.dir, name), []byte(src.String()), 0o600); err != nil {
		return err
	}
	out := filepath.Join(h.dir, fmt.Sprintf("exports-%d.json", h.n))
	ctx, cancel := context.WithTimeout(h.ctx, exampleTimeout)
	defer cancel()
	var cmd *exec.Cmd
	if regexp.MustCompile(`\bfrom\s+['"]@nangohq/frontend['"]`).MatchString(code) {
		cmd = exec.CommandContext(ctx, h.node, filepath.Join(h.e2e, "readme", "browser.mjs"))
		cmd.Env = append(slices.Clone(h.env), "README_CHROMIUM="+h.chromium, "README_PAGE="+h.pageURL,
			"README_MODULE="+strings.TrimSuffix(h.pageURL, "page.html")+"blocks/"+name,
			"README_WATCH="+strings.Join(h.watch, ","), "README_EXPORTS="+out)
	} else {
		const runner = `import { writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
const m = await import(pathToFileURL(process.argv[1]).href);
writeFileSync(process.argv[2], JSON.stringify(m.__readme ?? {}));
`
		cmd = exec.CommandContext(ctx, h.node, "--input-type=module", "-e", runner, filepath.Join(h.dir, name), out)
		cmd.Env = slices.Clone(h.env)
	}
	cmd.Dir = h.dir
	output, err := runGroup(ctx, cmd)
	if err != nil {
		return fmt.Errorf("%v (line 1 of %s is %s:%d)\n%s", err, name, b.file, b.line+1, output)
	}
	if len(exports) > 0 {
		raw, err := os.ReadFile(out)
		if err != nil {
			return err
		}
		var vals map[string]json.RawMessage
		if err := json.Unmarshal(raw, &vals); err != nil {
			return fmt.Errorf("the values it hands over (%s) are not JSON: %v", strings.Join(exports, ", "), err)
		}
		for k, v := range vals {
			h.exports[k] = v
		}
	}
	return nil
}

// goProgram builds a Go block in a module of its own, as an application that requires this
// module, and runs it: to completion, or as a server until GET ready answers 2xx.
func (h *readmeHarness) goProgram(b exampleBlock, code, ready string) error {
	if !regexp.MustCompile(`(?m)^package main$`).MatchString(code) {
		return errors.New("not a complete program (package main): make it one, or mark it <!-- example: skip: why -->")
	}
	if formatted, err := format.Source([]byte(b.code)); err != nil {
		return fmt.Errorf("not Go source: %v", err)
	} else if string(formatted) != b.code {
		return errors.New("not gofmt-formatted")
	}
	dir := filepath.Join(h.dir, fmt.Sprintf("go-%d", h.n))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	// The application's go.mod: this module, replaced by the working tree, and its
	// requirements (so that nothing new is downloaded).
	mod, err := os.ReadFile(filepath.Join(h.repo, "go.mod"))
	if err != nil {
		return err
	}
	mod = regexp.MustCompile(`(?m)^module .*$`).ReplaceAll(mod, []byte("module example.com/readme"))
	mod = append(mod, fmt.Sprintf("\nrequire github.com/embedauth/connect v0.0.0\n\nreplace github.com/embedauth/connect => %s\n", h.repo)...)
	sum, err := os.ReadFile(filepath.Join(h.repo, "go.sum"))
	if err != nil {
		return err
	}
	for name, data := range map[string][]byte{"go.mod": mod, "go.sum": sum, "main.go": []byte(code)} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return err
		}
	}
	args := []string{"build", "-mod=mod", "-o", "program"}
	args = append(args, raceBuildFlags...)
	ctx, cancel := context.WithTimeout(h.ctx, buildTimeout)
	defer cancel()
	build := exec.CommandContext(ctx, "go", append(args, ".")...)
	build.Dir = dir
	build.Env = environWithout("GOFLAGS")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	cmd := exec.Command(filepath.Join(dir, "program"))
	if ready != "" {
		return h.serve(b, cmd, ready)
	}
	rctx, rcancel := context.WithTimeout(h.ctx, exampleTimeout)
	defer rcancel()
	run := exec.CommandContext(rctx, cmd.Path)
	run.Dir, run.Env = dir, slices.Clone(h.env)
	if out, err := runGroup(rctx, run); err != nil {
		return fmt.Errorf("%v\n%s", err, out)
	}
	return nil
}

// serve starts cmd in the background (from the repository root, with the shell's variables, in
// a process group of its own) until the test ends, and waits until GET ready answers 2xx.
func (h *readmeHarness) serve(b exampleBlock, cmd *exec.Cmd, ready string) error {
	out := &lockedBuffer{}
	if cmd.Dir == "" {
		cmd.Dir = h.repo
	}
	cmd.Env = slices.Clone(h.env)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{}) // closed once the process has exited; then waitErr is set
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(done)
	}()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		// The whole group: `go run` leaves the server it built as a child.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(shutdownTimeout):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	}
	if u, err := url.Parse(ready); err == nil {
		if h.servers == nil {
			h.servers = map[string]func(){}
		}
		h.servers[u.Host] = stop
	}
	h.t.Cleanup(func() {
		stop()
		if h.t.Failed() {
			h.t.Logf("%s:%d: output of the server:\n%s", b.file, b.line, out.String())
		}
	})
	client := &http.Client{Timeout: 5 * time.Second}
	deadline := time.Now().Add(exampleReadyWithin)
	last := ""
	for {
		select {
		case <-done:
			return fmt.Errorf("the server exited before %s answered: %v\n%s", ready, waitErr, out.String())
		case <-h.ctx.Done():
			return h.ctx.Err()
		default:
		}
		resp, err := client.Get(ready)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode >= 200 && resp.StatusCode < 300 {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("GET %s did not answer 2xx within %s (last: %s)\n%s", ready, exampleReadyWithin, last, out.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// startPageServer serves the page the browser examples run in: an import map that resolves
// @nangohq/frontend to the published package, which it serves from e2e/node_modules, and the
// blocks written to the harness's directory.
func (h *readmeHarness) startPageServer(t *testing.T) {
	mux := http.NewServeMux()
	mux.Handle("GET /frontend/", http.StripPrefix("/frontend/",
		http.FileServer(http.Dir(filepath.Join(h.e2e, "node_modules", "@nangohq", "frontend", "dist")))))
	mux.HandleFunc("GET /blocks/{name}", func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		if !regexp.MustCompile(`^block-\d+\.mjs$`).MatchString(name) {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/javascript")
		http.ServeFile(w, r, filepath.Join(h.dir, name))
	})
	mux.HandleFunc("GET /page.html", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>README example</title>
<script type="importmap">{"imports": {"@nangohq/frontend": "/frontend/index.js"}}</script>
</head><body><h1>Your application</h1></body></html>
`)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	h.pageURL = srv.URL + "/page.html"
}

// fakeProviderAPI stands in for every provider: /authorize sends the browser straight back to
// the redirect_uri with a code, /token issues tokens for any code, and anything else answers
// 200 {"ok":true}, so that any credentials pass a credential check.
func fakeProviderAPI(t *testing.T) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /authorize", func(w http.ResponseWriter, r *http.Request) {
		back, err := url.Parse(r.URL.Query().Get("redirect_uri"))
		if err != nil || back.Scheme == "" {
			http.Error(w, "bad redirect_uri", http.StatusBadRequest)
			return
		}
		q := back.Query()
		q.Set("code", "readme-code")
		q.Set("state", r.URL.Query().Get("state"))
		back.RawQuery = q.Encode()
		http.Redirect(w, r, back.String(), http.StatusFound)
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"access_token":"readme-access-token","refresh_token":"readme-refresh-token","token_type":"bearer","expires_in":3600}`)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ok":true}`)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// writeFakeCatalog writes the embedded catalogue (integrations/providers/*.yaml) as one
// providers file whose proxy base URLs, verification base URLs and OAuth 2 authorization and
// token URLs point at the fake provider API.
func writeFakeCatalog(repo, fake, path string) error {
	files, err := filepath.Glob(filepath.Join(repo, "integrations", "providers", "*.yaml"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no providers in integrations/providers (err=%v)", err)
	}
	sort.Strings(files)
	var all []map[string]any
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		var doc struct {
			Providers []map[string]any `yaml:"providers"`
		}
		if err := yaml.Unmarshal(raw, &doc); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		for _, p := range doc.Providers {
			if proxy, ok := p["proxy"].(map[string]any); ok {
				if _, ok := proxy["base_url"]; ok {
					proxy["base_url"] = fake
				}
				if v, ok := proxy["verification"].(map[string]any); ok {
					if _, ok := v["base_url_override"]; ok {
						v["base_url_override"] = fake
					}
				}
			}
			if p["auth_mode"] == "OAUTH2" {
				for k, path := range map[string]string{"authorization_url": "/authorize", "token_url": "/token", "refresh_url": "/token"} {
					if _, ok := p[k]; ok {
						p[k] = fake + path
					}
				}
			}
			all = append(all, p)
		}
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	if err := enc.Encode(map[string]any{"providers": all}); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o600)
}

// TestParseExamples checks the README parser on its own: blocks, marks and their mistakes.
func TestParseExamples(t *testing.T) {
	doc := strings.Join([]string{
		"# T",      // 1
		"```sh",    // 2
		"echo one", // 3
		"```",      // 4
		"<!-- example: skip: needs a cluster -->", // 5
		"```go",          // 6
		"x := 1",         // 7
		"```",            // 8
		"",               // 9
		"  ```js",        // 10
		"  const a = 1;", // 11
		"  ```",          // 12
		"```",            // 13
		"layout",         // 14
		"```",            // 15
		"<!-- example: uses: a; server: http://localhost:1/health -->", // 16
		"",      // 17
		"```sh", // 18
		"serve", // 19
		"```",   // 20
	}, "\n")
	blocks, errs := parseExamples("README.md", doc)
	if len(blocks) != 4 {
		t.Fatalf("%d blocks, want 4: %+v", len(blocks), blocks)
	}
	if b := blocks[0]; b.line != 2 || b.lang != "sh" || b.code != "echo one\n" || !b.mark.isZero() {
		t.Errorf("block 1: %+v", b)
	}
	if b := blocks[1]; b.line != 6 || b.mark.skip != "needs a cluster" {
		t.Errorf("block 2: %+v", b)
	}
	if b := blocks[2]; b.line != 10 || b.code != "const a = 1;\n" {
		t.Errorf("block 3 (indented): %+v", b)
	}
	if b := blocks[3]; b.line != 18 || b.mark.server != "http://localhost:1/health" || !slices.Equal(b.mark.uses, []string{"a"}) {
		t.Errorf("block 4: %+v", b)
	}
	// uses on a sh block is a mistake, and is reported with its line.
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "README.md:18:") {
		t.Errorf("errors %v, want one about README.md:18", errs)
	}

	for name, doc := range map[string]string{
		"skip without a reason": "<!-- example: skip -->\n```sh\nx\n```\n",
		"unknown clause":        "<!-- example: maybe -->\n```sh\nx\n```\n",
		"mark before text":      "<!-- example: skip: x -->\ntext\n```sh\nx\n```\n",
		"unknown language":      "```python\nprint(1)\n```\n",
		"unclosed":              "```sh\nx\n",
		"server without URL":    "<!-- example: server: later -->\n```sh\nx\n```\n",
		"twice with a value":    "<!-- example: twice: 3 -->\n```sh\nx\n```\n",
	} {
		if _, errs := parseExamples("README.md", doc); len(errs) == 0 {
			t.Errorf("%s: no error", name)
		}
	}
	// Problems name the page they are on; twice runs a block again.
	blocks, errs = parseExamples("docs/ops.md", "x\n<!-- example: twice -->\n```sh\necho\n```\n```ruby\nputs 1\n```\n")
	if len(errs) != 1 || !strings.HasPrefix(errs[0].Error(), "docs/ops.md:6:") {
		t.Errorf("errors %v, want one about docs/ops.md:6", errs)
	}
	if len(blocks) != 2 || !blocks[0].mark.twice || blocks[0].file != "docs/ops.md" || blocks[0].line != 3 {
		t.Errorf("blocks %+v", blocks)
	}
	// A marked unknown language is fine; so is documentation.
	if _, errs := parseExamples("docs/x.md", "<!-- example: skip: no python here -->\n```python\nprint(1)\n```\n```yaml\na: 1\n```\n"); len(errs) != 0 {
		t.Errorf("errors %v", errs)
	}

	setup, last := splitLastCommand("export A=1\ngo run \\\n  ./x\n# done\n\n")
	if setup != "export A=1\n" || last != "go run \\\n  ./x" {
		t.Errorf("splitLastCommand: %q, %q", setup, last)
	}
	// The nearest earlier declaration hands the value over.
	blocks, _ = parseExamples("docs/x.md", "```js\nconst { data } = f();\n```\n```js\nlet x = 1;\n```\n<!-- example: uses: data -->\n```js\ng(data);\n```\n")
	exp, errs := resolveUses(blocks)
	if len(errs) != 0 || !slices.Equal(exp[0], []string{"data"}) || len(exp[1]) != 0 {
		t.Errorf("resolveUses: %v %v", exp, errs)
	}
	blocks, _ = parseExamples("docs/x.md", "<!-- example: uses: nope -->\n```js\ng(nope);\n```\n")
	if _, errs := resolveUses(blocks); len(errs) != 1 {
		t.Errorf("an undeclared name: %v", errs)
	}
}
