package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// modules is e2e/node_modules, from this directory.
var modules = filepath.Join("..", "..", "..", "e2e", "node_modules")

// TestGeneratedFileIsUpToDate regenerates logos.gen.json.gz into a
// temporary directory from the pinned npm packages and compares it byte
// for byte with the committed file: the generator is deterministic, and
// the file is what it makes. Without the packages it is skipped, unless CI
// or CONNECT_REQUIRE_POSTGRES=1 (scripts/test) requires them.
func TestGeneratedFileIsUpToDate(t *testing.T) {
	t.Parallel()
	for _, pkg := range []string{pkgLogos, pkgSimple, pkgProviders} {
		if _, err := os.Stat(filepath.Join(modules, pkg, "package.json")); err != nil {
			msg := "e2e/node_modules lacks " + pkg + ": run npm ci --prefix e2e to check the generated logos"
			if os.Getenv("CI") == "true" || os.Getenv("CONNECT_REQUIRE_POSTGRES") == "1" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
	out := filepath.Join(t.TempDir(), "logos.gen.json.gz")
	var stdout, stderr bytes.Buffer
	if err := run([]string{"-node-modules", modules, "-o", out}, &stdout, &stderr); err != nil {
		t.Fatalf("genlogos: %v\n%s", err, stderr.Bytes())
	}
	t.Log(stdout.String())
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join("..", "..", "logos.gen.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		if bytes.Equal(gunzip(t, got), gunzip(t, want)) {
			t.Fatal("integrations/logos.gen.json.gz holds the same document but compresses differently (another Go version?): run go generate ./integrations")
		}
		t.Fatal("integrations/logos.gen.json.gz is not what the pinned packages give: run go generate ./integrations and review the change")
	}

	// A second run gives the same bytes again.
	res, err := generate(modules)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(res.data, got) {
		t.Error("two runs of the generator differ")
	}
}

func gunzip(t *testing.T, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestVersionCheck: the generator refuses a package whose installed
// version is not the pinned one, and one that is not installed.
func TestVersionCheck(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(path, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	nm := filepath.Join(dir, "node_modules")
	write(filepath.Join(dir, "package.json"), `{"devDependencies":{"simple-icons":"16.37.0"},"dependencies":{"@nangohq/providers":"0.71.10"}}`)
	write(filepath.Join(nm, "simple-icons", "package.json"), `{"version":"16.37.0"}`)
	write(filepath.Join(nm, "@nangohq", "providers", "package.json"), `{"version":"0.71.9"}`)
	if v, err := checkVersions(nm, "simple-icons"); err != nil || v["simple-icons"] != "16.37.0" {
		t.Errorf("checkVersions(simple-icons) = %v, %v", v, err)
	}
	if _, err := checkVersions(nm, "@nangohq/providers"); err == nil {
		t.Error("a version other than the pin was accepted")
	}
	if _, err := checkVersions(nm, "@iconify-json/logos"); err == nil {
		t.Error("a package that is not pinned was accepted")
	}
	write(filepath.Join(dir, "package.json"), `{"devDependencies":{"@iconify-json/logos":"1.2.19"}}`)
	if _, err := checkVersions(nm, "@iconify-json/logos"); err == nil {
		t.Error("a package that is not installed was accepted")
	}
}

func TestSlug(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"GitHub": "github", "Cal.com": "caldotcom", "Google Sheets": "googlesheets", "google-mail": "googlemail",
		"AT&T": "atandt", "Notion+": "notionplus", "Zoho Bigin (CRM)": "zohobigincrm", "Société Générale": "societegenerale",
		"Łódź": "lodz", "Straße": "strasse", "": "",
	} {
		if got := slug(in); got != want {
			t.Errorf("slug(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRounds(t *testing.T) {
	t.Parallel()
	slugs := func(cs []candidate) []string {
		var out []string
		for _, c := range cs {
			out = append(out, c.slug)
		}
		return out
	}
	for _, tc := range []struct {
		p                       provider
		strict, variant, family []string
	}{
		{p: provider{name: "github", display: "GitHub"}, strict: []string{"github"}},
		{p: provider{name: "salesforce-sandbox", display: "Salesforce (Sandbox)", alias: "salesforce"},
			strict: []string{"salesforcesandbox"}, variant: []string{"salesforce"}},
		{p: provider{name: "gitlab-pat", display: "GitLab Personal Access Token"},
			strict: []string{"gitlabpat", "gitlabpersonalaccesstoken"}, variant: []string{"gitlab", "gitlabpersonalaccess"}},
		{p: provider{name: "greenhouse-harvest-oauth2-cc", display: "Greenhouse Harvest (OAuth2 CC)"},
			strict:  []string{"greenhouseharvestoauth2cc"},
			variant: []string{"greenhouseharvestoauth2", "greenhouseharvest"}, family: []string{"greenhouse"}},
		{p: provider{name: "google-contacts", display: "Google Contacts", alias: "google"},
			strict: []string{"googlecontacts"}, variant: []string{"google"}},
		{p: provider{name: "zoho-crm", display: "Zoho CRM"}, strict: []string{"zohocrm"}, family: []string{"zoho"}},
		// Not a family: the display name does not start with the key's first word.
		{p: provider{name: "active-campaign", display: "ActiveCampaign"}, strict: []string{"activecampaign"}},
		// Not a family: the word is not a brand family of the list.
		{p: provider{name: "loop-returns", display: "Loop Returns"}, strict: []string{"loopreturns"}},
	} {
		r := rounds(tc.p)
		for i, want := range [][]string{tc.strict, tc.variant, tc.family} {
			if got := slugs(r[i]); !slices.Equal(got, want) {
				t.Errorf("%s: round %s = %q, want %q", tc.p.name, roundNames[i], got, want)
			}
		}
	}
}

// TestMatchPrefers: in a round, a square SVG Logos mark beats
// simple-icons, which beats a wide SVG Logos wordmark; an earlier round
// beats a later one.
func TestMatchPrefers(t *testing.T) {
	t.Parallel()
	mk := func(set, name string, wide bool) *entry {
		ic := &icon{set: set, name: name, wide: wide}
		return &entry{set: set, name: name, build: func() (*icon, error) { return ic, nil }}
	}
	logos, simple := newIndex(), newIndex()
	logos.add("acme", mk("logos", "acme-icon", false))
	simple.add("acme", mk("simple-icons", "acme", false))
	logos.add("wide", mk("logos", "wide", true))
	simple.add("wide", mk("simple-icons", "wide", false))
	logos.add("onlywide", mk("logos", "onlywide", true))
	simple.add("brand", mk("simple-icons", "brand", false))
	logos.add("otherbrand", mk("logos", "otherbrand", false))
	logos.addShort("google-gmail", mk("logos", "google-gmail", false))
	for _, tc := range []struct {
		p           provider
		icon, round string
	}{
		{provider{name: "acme", display: "Acme"}, "logos:acme-icon", "strict"},
		{provider{name: "wide", display: "Wide"}, "simple-icons:wide", "strict"},
		{provider{name: "onlywide", display: "Only Wide"}, "logos:onlywide", "strict"},
		{provider{name: "brand-sandbox", display: "Brand", alias: "otherbrand"}, "simple-icons:brand", "strict"},
		// The alias comes after the key in the round, but a square mark
		// of SVG Logos beats simple-icons within a round.
		{provider{name: "brand-sandbox", display: "Brand Sandbox", alias: "otherbrand"}, "logos:otherbrand", "variant"},
		{provider{name: "google-mail", display: "Gmail"}, "logos:google-gmail", "strict"},
		{provider{name: "nothing", display: "Nothing"}, "", ""},
	} {
		ic, round, _ := matchProvider(tc.p, logos, simple)
		got := ""
		if ic != nil {
			got = ic.set + ":" + ic.name
		}
		if got != tc.icon || round != tc.round {
			t.Errorf("%+v: %s in round %q, want %s in %q", tc.p, got, round, tc.icon, tc.round)
		}
	}
}
