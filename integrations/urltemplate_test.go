package integrations

import (
	"errors"
	"net/url"
	"strings"
	"testing"
)

func TestRenderURL(t *testing.T) {
	t.Parallel()
	p := &Provider{Name: "p", ConnectionConfig: map[string]FieldSpec{
		"ip":   {Format: "ipv4"},
		"ip6":  {Format: "ipv6"},
		"host": {Format: "hostname"},
	}}
	cfg := func(kv ...string) TemplateVars {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return TemplateVars{ConnectionConfig: m}
	}
	for _, tc := range []struct {
		tmpl string
		vars TemplateVars
		want string // "" when an *UnsafeValueError is wanted
		pos  string // its position
	}{
		// Host label with a fixed domain.
		{"https://${connectionConfig.sub}.zendesk.com/api", cfg("sub", "acme-1"), "https://acme-1.zendesk.com/api", ""},
		{"https://${connectionConfig.sub}.zendesk.com/api", cfg("sub", "a.b"), "https://a.b.zendesk.com/api", ""},
		{"https://${connectionConfig.sub}.zendesk.com/api", cfg("sub", "evil.com/"), "", PositionHost},
		{"https://${connectionConfig.sub}.zendesk.com/api", cfg("sub", "evil.com#"), "", PositionHost},
		{"https://${connectionConfig.sub}.zendesk.com/api", cfg("sub", "evil.com?"), "", PositionHost},
		{"https://${connectionConfig.sub}.zendesk.com/api", cfg("sub", "user@evil.com"), "", PositionHost},
		{"https://${connectionConfig.sub}.zendesk.com/api", cfg("sub", "evil.com:443"), "", PositionHost},
		{"https://${connectionConfig.sub}.zendesk.com/api", cfg("sub", `evil.com\`), "", PositionHost},
		{"https://${connectionConfig.sub}.zendesk.com/api", cfg("sub", "evil%2ecom"), "", PositionHost},
		{"https://${connectionConfig.sub}.zendesk.com/api", cfg("sub", "a b"), "", PositionHost},
		{"https://${connectionConfig.sub}.zendesk.com/api", cfg("sub", "a..b"), "", PositionHost},
		{"https://${connectionConfig.sub}.zendesk.com/api", cfg("sub", "a\x00"), "", PositionHost},
		{"https://${connectionConfig.sub}.zendesk.com/api", cfg("sub", "ünïcode"), "", PositionHost},
		// The whole host: a host name, no IP literal unless the field says so.
		{"https://${connectionConfig.h}/token", cfg("h", "login.example.com"), "https://login.example.com/token", ""},
		{"https://${connectionConfig.h}/token", cfg("h", "localhost"), "https://localhost/token", ""},
		{"https://${connectionConfig.h}/token", cfg("h", "10.0.0.1"), "", PositionHost},
		{"https://${connectionConfig.h}/token", cfg("h", "0x7f.1"), "", PositionHost},
		{"https://${connectionConfig.h}/token", cfg("h", "2130706433"), "", PositionHost},
		{"https://${connectionConfig.h}/token", cfg("h", "[::1]"), "", PositionHost},
		{"https://${connectionConfig.h}/token", cfg("h", ".example.com"), "", PositionHost},
		{"https://${connectionConfig.h}/token", cfg("h", "example.com."), "", PositionHost},
		{"https://${connectionConfig.ip}/token", cfg("ip", "203.0.113.9"), "https://203.0.113.9/token", ""},
		{"https://${connectionConfig.ip}/token", cfg("ip", "[::1]"), "", PositionHost},
		{"https://${connectionConfig.ip6}/token", cfg("ip6", "[2001:db8::1]"), "https://[2001:db8::1]/token", ""},
		{"https://${connectionConfig.ip6}/token", cfg("ip6", "2001:db8::1"), "", PositionHost},
		{"https://${connectionConfig.host}:8443/x", cfg("host", "gitlab.example.com"), "https://gitlab.example.com:8443/x", ""},
		// A templated port: digits making a port, nothing else.
		{"https://${connectionConfig.host}:${connectionConfig.port}/x", cfg("host", "gitlab.example.com", "port", "8443"), "https://gitlab.example.com:8443/x", ""},
		{"https://${connectionConfig.host}:8${connectionConfig.port}/x", cfg("host", "gitlab.example.com", "port", "0"), "https://gitlab.example.com:80/x", ""},
		{"https://${connectionConfig.host}:${connectionConfig.port}/x", cfg("host", "gitlab.example.com", "port", "443@evil.com"), "", PositionPort},
		{"https://${connectionConfig.host}:${connectionConfig.port}/x", cfg("host", "gitlab.example.com", "port", "1/evil"), "", PositionPort},
		{"https://${connectionConfig.host}:${connectionConfig.port}/x", cfg("host", "gitlab.example.com", "port", "99999"), "", PositionPort},
		{"https://${connectionConfig.host}:${connectionConfig.port}/x", cfg("host", "gitlab.example.com", "port", "0"), "", PositionPort},
		{"https://${connectionConfig.host}:${connectionConfig.port}/x", cfg("host", "evil.com:1", "port", "1"), "", PositionHost},
		// A function's value is checked where it lands.
		{"https://api.example.com/${base64(${connectionConfig.t})}", cfg("t", "ab"), "https://api.example.com/YWI=", ""},
		{"https://${base64(${connectionConfig.t})}.example.com/x", cfg("t", "ab"), "", PositionHost}, // "YWI=": '=' is no host name
		{"https://x${hmacSha1Hex(${connectionConfig.t}, k)}.example.com/x", cfg("t", "ab"), "https://x" + hmacSHA1Hex("ab", "k") + ".example.com/x", ""},
		// The top-level domain: only a label starting with a letter.
		{"https://accounts.zoho.${connectionConfig.ext}/token", cfg("ext", "com.au"), "https://accounts.zoho.com.au/token", ""},
		{"https://accounts.zoho.${connectionConfig.ext}/token", cfg("ext", "evil.com/"), "", PositionHost},
		{"https://api.${connectionConfig.ext}/x", cfg("ext", "1"), "", PositionHost},
		// Path and query.
		{"https://api.example.com/t/${connectionConfig.t}/token", cfg("t", "acme"), "https://api.example.com/t/acme/token", ""},
		{"https://api.example.com/t/${connectionConfig.t}/token", cfg("t", "a@b:c"), "https://api.example.com/t/a@b:c/token", ""},
		{"https://api.example.com/t/${connectionConfig.t}/token", cfg("t", "../admin"), "", PositionPath},
		{"https://api.example.com/t/${connectionConfig.t}/token", cfg("t", ".."), "", PositionPath},
		{"https://api.example.com/t/${connectionConfig.t}/token", cfg("t", "a?x=1"), "", PositionPath},
		{"https://api.example.com/t/${connectionConfig.t}/token", cfg("t", "a#"), "", PositionPath},
		{"https://api.example.com/t/${connectionConfig.t}/token", cfg("t", "a%2f"), "", PositionPath},
		{"https://api.example.com/x?tenant=${connectionConfig.t}", cfg("t", "a=b"), "https://api.example.com/x?tenant=a=b", ""},
		{"https://api.example.com/x?tenant=${connectionConfig.t}", cfg("t", "a&admin=1"), "", PositionQuery},
		// The origin supplied whole.
		{"${connectionConfig.u}/services", cfg("u", "https://acme.my.example.com"), "https://acme.my.example.com/services", ""},
		{"${connectionConfig.u}/services", cfg("u", "http://127.0.0.1:8080/base"), "http://127.0.0.1:8080/base/services", ""},
		{"${connectionConfig.u}/services", cfg("u", "https://user:pw@evil.com"), "", PositionOrigin},
		{"${connectionConfig.u}/services", cfg("u", "https://evil.com?"), "", PositionOrigin},
		{"${connectionConfig.u}/services", cfg("u", "https://evil.com#"), "", PositionOrigin},
		{"${connectionConfig.u}/services", cfg("u", "javascript:alert(1)"), "", PositionOrigin},
		{"${connectionConfig.u}/services", cfg("u", "//evil.com"), "", PositionOrigin},
		{"${connectionConfig.u}/services", cfg("u", `https://evil.com\@good.com`), "", PositionOrigin},
		{"${connectionConfig.u}", cfg("u", "https://a.example.com"), "https://a.example.com", ""},
		// Alternatives: the first whose values are all there is used, and
		// an unsafe value stops rendering (no fallback).
		{"https://api.${connectionConfig.r}.x.io || https://api.x.io", cfg(), "https://api.x.io", ""},
		{"https://api.${connectionConfig.r}.x.io || https://api.x.io", cfg("r", "eu"), "https://api.eu.x.io", ""},
		{"https://api.${connectionConfig.r}.x.io || https://api.x.io", cfg("r", "evil.com/"), "", PositionHost},
		// Other placeholders get the same checks.
		{"https://${credentials.host}/x", TemplateVars{Credentials: map[string]string{"host": "a@b"}}, "", PositionHost},
	} {
		u, err := p.RenderURL(tc.tmpl, tc.vars)
		if tc.want != "" {
			if err != nil || u.String() != tc.want {
				t.Errorf("RenderURL(%q, %v) = %v, %v; want %s", tc.tmpl, tc.vars.ConnectionConfig, u, err, tc.want)
			}
			continue
		}
		var ue *UnsafeValueError
		if !errors.As(err, &ue) || ue.Position != tc.pos || !errors.Is(err, ErrUnsafeValue) {
			t.Errorf("RenderURL(%q, %q) = %v, %v; want an unsafe value in the %s", tc.tmpl, tc.vars.ConnectionConfig, u, err, tc.pos)
		}
	}
	ported := &Provider{Name: "ported", DisplayName: "Ported", AuthMode: AuthModeAPIKey, Credentials: map[string]FieldSpec{"apiKey": {}},
		ConnectionConfig: map[string]FieldSpec{"host": {}, "port": {}},
		Proxy:            &Proxy{BaseURL: "https://${connectionConfig.host}:${connectionConfig.port}"}}
	if err := ported.Validate(); err != nil {
		t.Errorf("a base URL with a templated port: %v", err)
	}
	if err := ported.CheckURLValues(map[string]string{"host": "a.example.com", "port": "80/x"}); !errors.Is(err, ErrUnsafeValue) {
		t.Errorf("CheckURLValues with a bad port: %v", err)
	}
	var mv *MissingValueError
	if _, err := p.RenderURL("https://${connectionConfig.a}.x.io", cfg()); !errors.As(err, &mv) {
		t.Errorf("a missing value: %v", err)
	}
	if _, err := p.RenderURL("ftp://x.io/${connectionConfig.a}", cfg("a", "b")); err == nil || errors.Is(err, ErrUnsafeValue) {
		t.Errorf("a template that is no http(s) URL: %v", err)
	}
	if got, err := p.RenderPath("/users/${connectionConfig.u}?x=1", cfg("u", "me")); err != nil || got != "/users/me?x=1" {
		t.Errorf("RenderPath = %q, %v", got, err)
	}
	if _, err := p.RenderPath("/users/${connectionConfig.u}", cfg("u", "../admin")); !errors.Is(err, ErrUnsafeValue) {
		t.Errorf("RenderPath with a traversal: %v", err)
	}
}

func TestCheckURLValues(t *testing.T) {
	t.Parallel()
	p := &Provider{Name: "p", AuthorizationURL: "https://${connectionConfig.sub}.example.com/authorize",
		TokenURL:   "https://api.example.com/${connectionConfig.tenant}/token",
		RefreshURL: "https://${connectionConfig.sub}.example.com/refresh",
		RequestURL: "https://req.example.com/${connectionConfig.tenant}",
		Proxy: &Proxy{BaseURL: "${connectionConfig.instance_url} || https://api.example.com",
			Verification: &Verification{BaseURLOverride: "https://v.${connectionConfig.region}.example.com", Endpoints: []string{"/me/${connectionConfig.user}"}}}}
	for _, tc := range []struct {
		cfg map[string]string
		key string // "" when valid
	}{
		{map[string]string{"sub": "acme", "tenant": "t1", "instance_url": "https://i.example.com", "region": "eu", "user": "u"}, ""},
		{map[string]string{"unused": "a/b@c"}, ""},
		{map[string]string{"sub": "a/b"}, "sub"},
		{map[string]string{"tenant": "a/b"}, "tenant"},
		{map[string]string{"instance_url": "https://x@evil.com"}, "instance_url"},
		{map[string]string{"region": "eu:80"}, "region"},
		{map[string]string{"user": "a/../b"}, "user"},
	} {
		err := p.CheckURLValues(tc.cfg)
		var ue *UnsafeValueError
		if (tc.key == "") != (err == nil) || (err != nil && (!errors.As(err, &ue) || ue.Key != tc.key)) {
			t.Errorf("CheckURLValues(%v) = %v, want key %q", tc.cfg, err, tc.key)
		}
	}
}

func TestSecretHostKeys(t *testing.T) {
	t.Parallel()
	p := &Provider{Name: "p",
		AuthorizationURL: "https://${connectionConfig.auth}/authorize",                                                         // carries no secret
		TokenURL:         "https://${connectionConfig.hostname}/token || https://${connectionConfig.sub}.pinned.example/token", // hostname decides
		RefreshURL:       "https://accounts.x.${connectionConfig.ext}/refresh || ${connectionConfig.server}/refresh",
		RequestURL:       "https://api.example.com/${connectionConfig.tenant}/request",
		Proxy:            &Proxy{BaseURL: "https://${connectionConfig.base}"}}
	if got := strings.Join(p.SecretHostKeys(), ","); got != "ext,hostname,server" {
		t.Errorf("SecretHostKeys = %s", got)
	}
	p.Proxy.Headers = map[string]string{"X-Secret": "${clientSecret}"}
	if got := strings.Join(p.SecretHostKeys(), ","); got != "base,ext,hostname,server" {
		t.Errorf("with ${clientSecret} in the proxy headers: %s", got)
	}
}

// TestCatalogSecretHostsArePinned: every connection config key of the
// embedded catalogue that decides the host of a URL carrying the
// integration's secrets has a pattern that pins it down, so that end
// users can connect without a preset only to the provider's own hosts.
func TestCatalogSecretHostsArePinned(t *testing.T) {
	t.Parallel()
	cat, err := DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range cat.List() {
		for _, k := range p.SecretHostKeys() {
			f, ok := p.ConnectionConfig[k]
			if !ok || f.Pattern == "" || !strings.HasPrefix(f.Pattern, "^") || !strings.HasSuffix(f.Pattern, "$") {
				t.Errorf("%s: connection_config.%s decides the host of a secret-bearing URL without an anchored pattern", p.Name, k)
			}
		}
	}
	sf, _ := cat.Get("salesforce")
	f := sf.ConnectionConfig["hostname"]
	for v, pinned := range map[string]bool{"acme.my.salesforce.com": true, "login.salesforce.com": true, "acme--dev.sandbox.my.salesforce.com": true,
		"evil.example.com": false, "salesforce.com.evil.example": false, "evil.example/salesforce.com": false} {
		if f.PinsValue(v) != pinned || (pinned && f.CheckValue(v) != "") {
			t.Errorf("salesforce hostname %q: pinned %v, check %q", v, f.PinsValue(v), f.CheckValue(v))
		}
	}
}

func TestFieldCheckValue(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		f  FieldSpec
		v  string
		ok bool
	}{
		{FieldSpec{Type: "number"}, "12.5", true},
		{FieldSpec{Type: "number"}, "NaN", false},
		{FieldSpec{Type: "number"}, "twelve", false},
		{FieldSpec{Type: "boolean"}, "true", true},
		{FieldSpec{Type: "boolean"}, "yes", false},
		{FieldSpec{Format: "hostname"}, "gitlab.example.com", true},
		{FieldSpec{Format: "hostname"}, "https://gitlab.example.com", false},
		{FieldSpec{Format: "hostname"}, "gitlab.example.com:8443", false},
		{FieldSpec{Format: "hostname"}, "10.0.0.1", false},
		{FieldSpec{Format: "uri"}, "https://x.example.com/a", true},
		{FieldSpec{Format: "uri"}, "x.example.com", false},
		{FieldSpec{Format: "email"}, "a@b.example", true},
		{FieldSpec{Format: "email"}, "A <a@b.example>", false},
		{FieldSpec{Format: "uuid"}, "123e4567-e89b-12d3-a456-426614174000", true},
		{FieldSpec{Format: "uuid"}, "123", false},
		{FieldSpec{Format: "ipv4"}, "203.0.113.1", true},
		{FieldSpec{Format: "ipv4"}, "::1", false},
		{FieldSpec{Prefix: "https://", Suffix: ".zendesk.com"}, "acme", true},
		{FieldSpec{Prefix: "https://", Suffix: ".zendesk.com"}, "https://acme", false},
		{FieldSpec{Prefix: "https://", Suffix: ".zendesk.com"}, "acme.zendesk.com", false},
		{FieldSpec{Pattern: "^[a-z]+$"}, "acme", true},
		{FieldSpec{Pattern: "^[a-z]+$"}, "Acme", false},
		{FieldSpec{Pattern: "^(?!x)"}, "anything", true}, // JavaScript-only syntax: not checked here
	} {
		if got := tc.f.CheckValue(tc.v); (got == "") != tc.ok {
			t.Errorf("%+v.CheckValue(%q) = %q", tc.f, tc.v, got)
		}
	}
	if (FieldSpec{Pattern: "salesforce\\.com"}).PinsValue("salesforce.com.evil.example") {
		t.Error("PinsValue matches part of a value")
	}
	if (FieldSpec{}).PinsValue("x") || (FieldSpec{Pattern: "(?!x)"}).PinsValue("x") {
		t.Error("PinsValue without a usable pattern")
	}
}

// FuzzRenderURL: whatever the value, a rendered URL keeps the shape its
// template names: the fixed domain of a host label, the host and the
// number of path segments around a path value, the origin's host.
func FuzzRenderURL(f *testing.F) {
	for _, s := range []string{"acme", "evil.com/", "a@b", "x:1", "%2e", "..", "https://a.example.com", "https://u@e.com", "a b", "\\", "1.2.3.4", "[::1]", "ü"} {
		f.Add(s)
	}
	p := &Provider{Name: "p"}
	f.Fuzz(func(t *testing.T, v string) {
		vars := TemplateVars{ConnectionConfig: map[string]string{"v": v}}
		if u, err := p.RenderURL("https://${connectionConfig.v}.zendesk.com/api", vars); err == nil {
			if !strings.HasSuffix(u.Hostname(), ".zendesk.com") || u.User != nil || u.Port() != "" || u.Path != "/api" || u.RawQuery != "" {
				t.Errorf("host label %q made %s", v, u)
			}
		}
		if u, err := p.RenderURL("https://api.example.com/t/${connectionConfig.v}/token", vars); err == nil {
			if u.Host != "api.example.com" || strings.Count(u.EscapedPath(), "/") != 3 || !strings.HasSuffix(u.Path, "/token") || u.RawQuery != "" || u.Fragment != "" {
				t.Errorf("path segment %q made %s", v, u)
			}
		}
		if u, err := p.RenderURL("https://${connectionConfig.v}/token", vars); err == nil {
			if u.Hostname() != v || u.Port() != "" || u.User != nil || u.Path != "/token" || !IsHostname(v) {
				t.Errorf("host %q made %s", v, u)
			}
		}
		if u, err := p.RenderURL("${connectionConfig.v}/token", vars); err == nil {
			o, perr := url.Parse(v)
			if perr != nil || u.Hostname() != o.Hostname() || u.User != nil || u.RawQuery != "" || !strings.HasSuffix(u.Path, "/token") {
				t.Errorf("origin %q made %s", v, u)
			}
		}
	})
}
