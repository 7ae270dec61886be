package e2e

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// TestDocsLinks checks the user documentation (README.md, CHANGELOG.md and docs/*.md) without
// running anything: every relative link and image points to a file of the repository and, with
// a #fragment, to a heading of that page; every page of docs/ is linked from README.md or
// docs/README.md; and no page cites the project's issues or development sessions, which belong
// in commits and the changelog's history, not in user documentation.
func TestDocsLinks(t *testing.T) {
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	pages, err := docPages(repo)
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, "CHANGELOG.md")
	anchors := map[string][]string{} // page -> its heading anchors
	texts := map[string]string{}
	for _, page := range pages {
		raw, err := os.ReadFile(filepath.Join(repo, page))
		if err != nil {
			t.Fatal(err)
		}
		texts[page] = string(raw)
		anchors[page] = headingAnchors(string(raw))
	}
	linked := map[string]bool{}
	history := regexp.MustCompile(`(?i)\bissues? #?\d+|\bthis session\b|\bin session\b`)
	for _, page := range pages {
		for i, line := range strings.Split(texts[page], "\n") {
			if m := history.FindString(line); m != "" {
				t.Errorf("%s:%d: %q: user documentation cites the project's history", page, i+1, m)
			}
		}
		for _, l := range markdownLinks(texts[page]) {
			u, err := url.Parse(l.target)
			if err != nil {
				t.Errorf("%s:%d: link %q: %v", page, l.line, l.target, err)
				continue
			}
			if u.Scheme != "" || u.Host != "" {
				continue // an outside address
			}
			target := page
			if u.Path != "" {
				target = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(page), u.Path)))
				if strings.HasPrefix(target, "../") {
					t.Errorf("%s:%d: link %q leaves the repository", page, l.line, l.target)
					continue
				}
				if _, err := os.Stat(filepath.Join(repo, target)); err != nil {
					t.Errorf("%s:%d: link %q: no such file or directory %s", page, l.line, l.target, target)
					continue
				}
				linked[target] = linked[target] || page == "README.md" || page == "docs/README.md"
			}
			if u.Fragment == "" {
				continue
			}
			as, ok := anchors[target]
			if !ok {
				if strings.HasSuffix(target, ".md") {
					raw, err := os.ReadFile(filepath.Join(repo, target))
					if err != nil {
						t.Errorf("%s:%d: link %q: %v", page, l.line, l.target, err)
						continue
					}
					as = headingAnchors(string(raw))
				} else {
					t.Errorf("%s:%d: link %q: a #fragment into a file that is not a markdown page", page, l.line, l.target)
					continue
				}
			}
			if !slices.Contains(as, u.Fragment) {
				t.Errorf("%s:%d: link %q: %s has no heading #%s", page, l.line, l.target, target, u.Fragment)
			}
		}
	}
	for _, page := range pages {
		if strings.HasPrefix(page, "docs/") && page != "docs/README.md" && !linked[page] {
			t.Errorf("%s is linked from neither README.md nor docs/README.md", page)
		}
	}
}

// mdLink is a link or image of a markdown page.
type mdLink struct {
	line   int
	target string
}

var (
	linkRE       = regexp.MustCompile(`!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(([^()\s]+(?:\([^()\s]*\))?)(?:\s+"[^"]*")?\)`)
	inlineCodeRE = regexp.MustCompile("`+[^`]*`+")
	headingRE    = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
)

// markdownLinks returns the links and images of a page outside code blocks and code spans.
func markdownLinks(text string) []mdLink {
	var out []mdLink
	fence := ""
	for i, line := range strings.Split(text, "\n") {
		if f := fenceRE.FindStringSubmatch(line); f != nil {
			switch {
			case fence == "":
				fence = f[2]
				continue
			case strings.HasPrefix(strings.TrimLeft(line, " "), fence) && strings.Trim(strings.TrimSpace(line), fence[:1]) == "":
				fence = ""
				continue
			}
		}
		if fence != "" {
			continue
		}
		prose := inlineCodeRE.ReplaceAllString(line, "``")
		for _, m := range linkRE.FindAllStringSubmatch(prose, -1) {
			out = append(out, mdLink{line: i + 1, target: m[1]})
		}
	}
	return out
}

// headingAnchors returns the anchors GitHub gives the headings of a page: the heading's text,
// lowercased, without punctuation, spaces made hyphens, and -1, -2... after repeats.
func headingAnchors(text string) []string {
	var out []string
	seen := map[string]int{}
	fence := ""
	for _, line := range strings.Split(text, "\n") {
		if f := fenceRE.FindStringSubmatch(line); f != nil {
			if fence == "" {
				fence = f[2]
			} else if strings.Trim(strings.TrimSpace(line), fence[:1]) == "" {
				fence = ""
			}
			continue
		}
		if fence != "" {
			continue
		}
		m := headingRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		a := slug(m[1])
		if n := seen[a]; n > 0 {
			seen[a]++
			a = fmt.Sprintf("%s-%d", a, n)
		} else {
			seen[a] = 1
		}
		out = append(out, a)
	}
	return out
}

func slug(heading string) string {
	// Links in a heading count by their text.
	heading = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`).ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// TestHeadingAnchors checks the anchor rules against headings whose GitHub anchors are known.
func TestHeadingAnchors(t *testing.T) {
	got := headingAnchors("# connect\n## Run it\n```sh\n# not a heading\n```\n### End users' connection config\n" +
		"## Loading Nango's providers.yaml\n## `Config.Egress` and the [address policy](x.md)\n## Run it\n")
	want := []string{"connect", "run-it", "end-users-connection-config", "loading-nangos-providersyaml",
		"configegress-and-the-address-policy", "run-it-1"}
	if !slices.Equal(got, want) {
		t.Errorf("anchors %q, want %q", got, want)
	}
	links := markdownLinks("See [a](docs/a.md#x) and ![b](b.png).\n```md\n[c](nowhere.md)\n```\n`[d](code.md)` [e](https://e.example)\n")
	var targets []string
	for _, l := range links {
		targets = append(targets, l.target)
	}
	if want := []string{"docs/a.md#x", "b.png", "https://e.example"}; !slices.Equal(targets, want) {
		t.Errorf("targets %q, want %q", targets, want)
	}
}
