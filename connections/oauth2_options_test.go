package connections

import (
	"net/url"
	"testing"
	"time"

	"github.com/embedauth/connect/integrations"
)

func TestWriteAuthorizationURL(t *testing.T) {
	t.Parallel()
	base := func() (*url.URL, url.Values) {
		u, err := url.Parse("https://auth.example.com/oauth/authorize")
		if err != nil {
			t.Fatal(err)
		}
		return u, url.Values{
			"client_id":     {"cid"},
			"redirect_uri":  {"https://cb.example.com/oauth/callback"},
			"response_type": {"code"},
			"state":         {"st"},
			"scope":         {"https://www.googleapis.com/auth/a,b c"},
			"prompt":        {""},
		}
	}
	cases := []struct {
		name string
		opts integrations.AuthDetails
		want string
	}{
		{"plain", integrations.AuthDetails{},
			"https://auth.example.com/oauth/authorize?client_id=cid&prompt=&redirect_uri=https%3A%2F%2Fcb.example.com%2Foauth%2Fcallback&response_type=code&scope=https%3A%2F%2Fwww.googleapis.com%2Fauth%2Fa%2Cb+c&state=st"},
		{"skip empty", integrations.AuthDetails{AuthorizationURLSkipEmpty: true},
			"https://auth.example.com/oauth/authorize?client_id=cid&redirect_uri=https%3A%2F%2Fcb.example.com%2Foauth%2Fcallback&response_type=code&scope=https%3A%2F%2Fwww.googleapis.com%2Fauth%2Fa%2Cb+c&state=st"},
		{"scopes not encoded", integrations.AuthDetails{AuthorizationURLSkipEncode: []string{"scopes"}},
			"https://auth.example.com/oauth/authorize?client_id=cid&prompt=&redirect_uri=https%3A%2F%2Fcb.example.com%2Foauth%2Fcallback&response_type=code&state=st&scope=https://www.googleapis.com/auth/a,b%20c"},
		{"replacements", integrations.AuthDetails{AuthorizationURLReplacements: map[string]string{"client_id=": "clientId=", "response_type=code&": ""}},
			"https://auth.example.com/oauth/authorize?clientId=cid&prompt=&redirect_uri=https%3A%2F%2Fcb.example.com%2Foauth%2Fcallback&scope=https%3A%2F%2Fwww.googleapis.com%2Fauth%2Fa%2Cb+c&state=st"},
		{"fragment", integrations.AuthDetails{AuthorizationURLFragment: "/oauth/authorize", AuthorizationURLSkipEmpty: true},
			"https://auth.example.com/oauth/authorize#/oauth/authorize?client_id=cid&redirect_uri=https%3A%2F%2Fcb.example.com%2Foauth%2Fcallback&response_type=code&scope=https%3A%2F%2Fwww.googleapis.com%2Fauth%2Fa%2Cb+c&state=st"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			u, q := base()
			p := &integrations.Provider{Name: "x", AuthDetails: c.opts}
			if got := writeAuthorizationURL(p, u, q); got != c.want {
				t.Errorf("got  %s\nwant %s", got, c.want)
			}
		})
	}
	// A replacement never reaches the host: it applies to the query.
	u, q := base()
	p := &integrations.Provider{Name: "x", AuthDetails: integrations.AuthDetails{AuthorizationURLReplacements: map[string]string{"auth.example.com": "evil.example"}}}
	got, err := url.Parse(writeAuthorizationURL(p, u, q))
	if err != nil || got.Host != "auth.example.com" {
		t.Errorf("the replacement changed the host: %v, %v", got, err)
	}
}

func TestEscapeQueryMinimal(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"a:b/c,d":    "a:b/c,d",
		"a b+c&d#e%": "a%20b%2Bc%26d%23e%25",
		"é<>\"'":     "%C3%A9%3C%3E%22%27",
		"\x00\x1f\n": "%00%1F%0A",
	} {
		if got := escapeQueryMinimal(in); got != want {
			t.Errorf("escapeQueryMinimal(%q) = %q, want %q", in, got, want)
		}
		if back, err := url.QueryUnescape(escapeQueryMinimal(in)); err != nil || back != in {
			t.Errorf("escapeQueryMinimal(%q) does not decode back: %q, %v", in, back, err)
		}
	}
}

func TestReadTokenOptions(t *testing.T) {
	t.Parallel()
	parse := func(body string) *TokenResponse {
		tr, err := ParseTokenResponse("application/json", []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	slack := &integrations.Provider{AuthDetails: integrations.AuthDetails{AlternateAccessTokenResponsePath: "authed_user"}}

	tr := parse(`{"ok":true,"authed_user":{"id":"U1","access_token":"xoxp-user","refresh_token":"r1","expires_in":3600}}`)
	readTokenOptions(slack, tr)
	if tr.AccessToken != "xoxp-user" || tr.RefreshToken != "r1" || tr.ExpiresIn != time.Hour {
		t.Errorf("token under authed_user: %+v", tr)
	}
	// A top-level token wins.
	tr = parse(`{"access_token":"xoxb-bot","authed_user":{"access_token":"xoxp-user"}}`)
	readTokenOptions(slack, tr)
	if tr.AccessToken != "xoxb-bot" {
		t.Errorf("top-level token: %q", tr.AccessToken)
	}
	// A string at the path is the token; nothing at the path leaves none.
	str := &integrations.Provider{AuthDetails: integrations.AuthDetails{AlternateAccessTokenResponsePath: "data.token"}}
	tr = parse(`{"data":{"token":"tok"}}`)
	readTokenOptions(str, tr)
	if tr.AccessToken != "tok" {
		t.Errorf("string at the path: %q", tr.AccessToken)
	}
	tr = parse(`{"data":{}}`)
	readTokenOptions(str, tr)
	if tr.AccessToken != "" {
		t.Errorf("nothing at the path: %q", tr.AccessToken)
	}

	ms := &integrations.Provider{AuthDetails: integrations.AuthDetails{ExpiresInUnit: "milliseconds"}}
	for body, want := range map[string]time.Duration{
		`{"access_token":"a","expires_in":3600000}`:  time.Hour,
		`{"access_token":"a","expires_in":"900000"}`: 15 * time.Minute,
		`{"access_token":"a","expires_in":"soon"}`:   0,
		`{"access_token":"a","expires_in":-5}`:       0,
		`{"access_token":"a"}`:                       0,
	} {
		tr := parse(body)
		readTokenOptions(ms, tr)
		if tr.ExpiresIn != want {
			t.Errorf("%s: expires in %v, want %v", body, tr.ExpiresIn, want)
		}
	}
}
