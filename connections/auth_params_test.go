package connections

import (
	"errors"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/store"
)

func TestParseParams(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		raw  string
		want map[string]string
	}{
		{"", map[string]string{}},
		{"connection_id=c&connect_session_token=t", map[string]string{}},
		// Literal brackets (fetch) and encoded ones (the OAuth popup).
		{"params[subdomain]=a%20b", map[string]string{"subdomain": "a b"}},
		{"params%5Bsubdomain%5D=a+b", map[string]string{"subdomain": "a b"}},
		// encodeURIComponent of the key: a bracket inside stays in the key.
		{"params[a%5Db]=1&params[x%20y]=%26", map[string]string{"a]b": "1", "x y": "&"}},
		{"params[a][b]=1", map[string]string{"a][b": "1"}},
		{"params[empty]=", map[string]string{"empty": ""}},
		// Client-side webhook URLs are dropped.
		{"params[webhook_url]=https://x&params[WebhookUrl]=y&params[webhook-url-override]=z&params[k]=v", map[string]string{"k": "v"}},
		// Other bracket families are not params.
		{"authorization_params[prompt]=consent&credentials[oauth_client_id_override]=x", map[string]string{}},
	} {
		got, err := ParseParams(tc.raw)
		if err != nil {
			t.Errorf("%q: %v", tc.raw, err)
			continue
		}
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("%q (-want +got):\n%s", tc.raw, d)
		}
	}
	for _, raw := range []string{
		"params[a]=%zz", "params[]=1", "params[a=1", "params[a]=1&params[a]=2", "params[a]=x%00y", "params[a%00]=1",
		"params[a]=%ff", "params[" + strings.Repeat("k", MaxConfigKeyLength+1) + "]=v",
		"params[a]=" + strings.Repeat("v", MaxConfigValueLength+1), "a=1;b=2",
	} {
		if _, err := ParseParams(raw); store.CodeOf(err) != "invalid_query_params" {
			t.Errorf("%.60q: %v, want invalid_query_params", raw, err)
		}
	}
	// The other bracket families of an OAuth popup's URL.
	got, err := ParseBracketQuery("authorization_params%5Bprompt%5D=consent&credentials[oauth_client_id_override]=x&authorization_params[webhook_url]=kept", "authorization_params")
	if err != nil || !cmp.Equal(got, map[string]string{"prompt": "consent", "webhook_url": "kept"}) {
		t.Errorf("ParseBracketQuery: %v, %v", got, err)
	}
	many := url.Values{}
	for i := range MaxConfigEntries + 1 {
		many.Set("params[k"+strings.Repeat("x", i)+"]", "v")
	}
	if _, err := ParseParams(many.Encode()); store.CodeOf(err) != "invalid_query_params" {
		t.Errorf("%d params: %v", MaxConfigEntries+1, err)
	}
}

// FuzzParseParams: the params parser never panics, refuses only with
// invalid_query_params, returns text a Store can hold within the limits,
// drops webhook URLs, and what it returns survives an encode and a parse.
func FuzzParseParams(f *testing.F) {
	for _, s := range []string{
		"params[subdomain]=acme&connect_session_token=x",
		"params%5Ba%5D=1&params[b]=%E2%82%AC",
		"params[webhook_url]=https://x",
		"params[]=&params[a]=1&params[a]=2",
		"params[a%5D%5Bb]=%zz;x",
		"params[[]]]=1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		got, err := ParseParams(raw)
		if err != nil {
			if !errors.Is(err, store.ErrInvalid) || store.CodeOf(err) != "invalid_query_params" {
				t.Fatalf("%q: %v is not invalid_query_params", raw, err)
			}
			return
		}
		if len(got) > MaxConfigEntries {
			t.Fatalf("%q: %d params", raw, len(got))
		}
		back := url.Values{}
		for k, v := range got {
			if k == "" || len(k) > MaxConfigKeyLength || len(v) > MaxConfigValueLength {
				t.Fatalf("%q: param %q=%q out of bounds", raw, k, v)
			}
			for _, s := range []string{k, v} {
				if !utf8.ValidString(s) || strings.IndexByte(s, 0) >= 0 {
					t.Fatalf("%q: param %q=%q is not storable text", raw, k, v)
				}
			}
			if isClientWebhookKey(k) {
				t.Fatalf("%q: webhook param %q kept", raw, k)
			}
			back.Set("params["+k+"]", v)
		}
		again, err := ParseParams(back.Encode())
		if err != nil {
			t.Fatalf("%q: re-encoded %q: %v", raw, back.Encode(), err)
		}
		if d := cmp.Diff(got, again); d != "" {
			t.Fatalf("%q: round trip (-first +second):\n%s", raw, d)
		}
	})
}

func TestSessionToken(t *testing.T) {
	t.Parallel()
	a, b := NewSessionToken(), NewSessionToken()
	if a == b || !IsSessionToken(a) || !IsSessionToken(b) || len(a) != len(SessionTokenPrefix)+64 {
		t.Fatalf("tokens %q %q", a, b)
	}
	for _, tok := range []string{"", SessionTokenPrefix, SessionTokenPrefix + strings.Repeat("g", 64),
		SessionTokenPrefix + strings.Repeat("A", 64), SessionTokenPrefix + strings.Repeat("a", 63), "x" + a, a + "0"} {
		if IsSessionToken(tok) {
			t.Errorf("IsSessionToken(%q)", tok)
		}
	}
	if !LooksLikeSessionToken(SessionTokenPrefix+"zz") || LooksLikeSessionToken("sk_123") {
		t.Error("LooksLikeSessionToken")
	}
	if h := HashSessionToken(a); len(h) != 32 || string(h) == a {
		t.Errorf("hash %x", h)
	}
}

func TestSessionAllows(t *testing.T) {
	t.Parallel()
	open := &Session{}
	some := &Session{AllowedIntegrations: []string{"a", "b"}}
	re := &Session{AllowedIntegrations: []string{"a", "b"}, ConnectionID: "c1", IntegrationKey: "b"}
	for _, tc := range []struct {
		s    *Session
		key  string
		want bool
	}{
		{open, "anything", true}, {some, "a", true}, {some, "c", false}, {re, "b", true}, {re, "a", false},
	} {
		if got := tc.s.Allows(tc.key); got != tc.want {
			t.Errorf("%+v.Allows(%q) = %v", tc.s, tc.key, got)
		}
	}
}

// TestCheckConfigURLs: connection config values that would change more
// than their part of a provider's URL are invalid_connection_config naming
// the key. (An origin with a query used to pass: "?y" would have turned
// the rest of the template, "/services", into the query.)
func TestCheckConfigURLs(t *testing.T) {
	t.Parallel()
	p := &integrations.Provider{Name: "p", AuthMode: integrations.AuthModeAPIKey,
		Proxy: &integrations.Proxy{BaseURL: "https://${connectionConfig.subdomain}.example.com/api || https://api.example.com",
			Verification: &integrations.Verification{BaseURLOverride: "${connectionConfig.instance_url}/services", Endpoints: []string{"/me"}}}}
	for _, tc := range []struct {
		cfg map[string]string
		ok  bool
	}{
		{map[string]string{"subdomain": "acme-1"}, true},
		{map[string]string{"subdomain": ""}, true},
		{map[string]string{"instance_url": "https://my.instance.example.org/x"}, true},
		{map[string]string{"instance_url": "https://my.instance.example.org/x?y"}, false},
		{map[string]string{"instance_url": "https://user@evil.example.org"}, false},
		{map[string]string{"subdomain": "evil.com/x?"}, false},
		{map[string]string{"subdomain": "evil.com#"}, false},
		{map[string]string{"subdomain": "user@evil.com"}, false},
		{map[string]string{"subdomain": "a b"}, false},
		{map[string]string{"subdomain": "a%2fb"}, false},
		{map[string]string{"subdomain": "a\\b"}, false},
		{map[string]string{"subdomain": "a\nb"}, false},
		{map[string]string{"subdomain": "evil.com:443"}, false},
	} {
		err := checkConfigURLs(p, tc.cfg, "params")
		if (err == nil) != tc.ok {
			t.Errorf("%v: %v", tc.cfg, err)
		}
		if err != nil {
			var se *store.Error
			if !errors.As(err, &se) || se.Code != CodeInvalidConnectionConfig || len(se.Errors) != 1 || se.Errors[0].Path[0] != "params" {
				t.Errorf("%v: %v", tc.cfg, err)
			}
		}
	}
}

func TestJoinURL(t *testing.T) {
	t.Parallel()
	base, _ := url.Parse("https://api.example.com/v1/?fixed=1")
	for _, tc := range []struct{ ep, want string }{
		{"/me", "https://api.example.com/v1/me?fixed=1&k=v"},
		{"me?x=y", "https://api.example.com/v1/me?fixed=1&k=v&x=y"},
		{"/a b", "https://api.example.com/v1/a%20b?fixed=1&k=v"},
	} {
		got, err := joinURL(base, tc.ep, url.Values{"k": {"v"}})
		if err != nil || got != tc.want {
			t.Errorf("joinURL(%q) = %q, %v; want %q", tc.ep, got, err, tc.want)
		}
	}
}
