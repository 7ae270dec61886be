package proxy

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/integrations"
)

// A primed Target sends what the full one sends, to the same base URL,
// while its connection keeps no config, metadata, sealed form or raw token
// response; a Target whose base URL cannot be built is returned as it is.
func TestPrime(t *testing.T) {
	var got http.Header
	var gotPath, gotQuery string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, gotPath, gotQuery = r.Header.Clone(), r.URL.Path, r.URL.RawQuery
	}))
	t.Cleanup(up.Close)
	full := &Target{
		Connection: &connections.Connection{IntegrationKey: "gh", ConnectionID: "c1", Provider: "fake",
			AuthMode: integrations.AuthModeOAuth2, SealedCredentials: "v1:k:sealed",
			ConnectionConfig: map[string]any{"tenant": "acme"}, Metadata: map[string]any{"m": 1}, Tags: map[string]string{"t": "1"},
			Credentials: &connections.Credentials{Type: "OAUTH2", AccessToken: "tok-1", RefreshToken: "rt-1",
				Raw: map[string]any{"access_token": "tok-1", "team": "blue"}}},
		Provider: &integrations.Provider{Name: "fake", AuthMode: integrations.AuthModeOAuth2,
			Proxy: &integrations.Proxy{BaseURL: up.URL + "/${connectionConfig.tenant}",
				Headers: map[string]string{"X-Team": "${credentials.team}"}, Query: map[string]string{"t": "${connectionConfig.tenant}"}}},
	}
	var target *Target
	p, err := New(Config{Policy: Policy{AllowLoopback: true},
		Source: SourceFunc(func(context.Context, int64, string, string, bool) (*Target, error) { return target, nil })})
	if err != nil {
		t.Fatal(err)
	}
	lean := p.Prime(full)
	if lean == full {
		t.Fatal("Prime returned the full Target")
	}
	c := lean.Connection
	if c.ConnectionConfig != nil || c.Metadata != nil || c.Tags != nil || c.SealedCredentials != "" || c.Credentials.Raw != nil {
		t.Fatalf("primed connection keeps %+v", c)
	}
	if c.Credentials.AccessToken != "tok-1" || c.AuthMode != integrations.AuthModeOAuth2 || full.Connection.Credentials.Raw == nil {
		t.Fatalf("primed credentials %+v; the full Target's raw %v must stay", c.Credentials, full.Connection.Credentials.Raw)
	}
	call := func(tg *Target) (http.Header, string, string) {
		target = tg
		got = nil
		resp, err := p.Do(context.Background(), &Request{IntegrationKey: "gh", ConnectionID: "c1", EnvironmentID: 1, Method: "GET", Endpoint: "/repos"})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return got, gotPath, gotQuery
	}
	fh, fp, fq := call(full)
	lh, lp, lq := call(lean)
	if fp != "/acme/repos" || fq != "t=acme" || fh.Get("X-Team") != "blue" || fh.Get("Authorization") != "Bearer tok-1" {
		t.Fatalf("full Target sent %s?%s with %v", fp, fq, fh)
	}
	if lp != fp || lq != fq || lh.Get("X-Team") != fh.Get("X-Team") || lh.Get("Authorization") != fh.Get("Authorization") {
		t.Fatalf("primed Target sent %s?%s with %v; the full one %s?%s with %v", lp, lq, lh, fp, fq, fh)
	}

	broken := &Target{Connection: &connections.Connection{AuthMode: integrations.AuthModeOAuth2,
		Credentials: &connections.Credentials{Type: "OAUTH2", AccessToken: "tok"}},
		Provider: &integrations.Provider{Name: "fake", Proxy: &integrations.Proxy{BaseURL: "https://${connectionConfig.sub}.example.com"}}}
	if p.Prime(broken) != broken {
		t.Fatal("Prime of a Target without its base URL's config did not return it as it is")
	}
}
