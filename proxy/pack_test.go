package proxy

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/integrations"
)

// A packed Target sends what the full one sends, to the same base URL,
// while its connection keeps no config, metadata, sealed form or raw token
// response; a Target whose base URL cannot be built is kept as it is.
func TestPack(t *testing.T) {
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
	lean := p.Pack(full).Target()
	if lean == full {
		t.Fatal("Pack kept the full Target")
	}
	c := lean.Connection
	if c.ConnectionConfig != nil || c.Metadata != nil || c.Tags != nil || c.SealedCredentials != "" || c.Credentials.Raw != nil {
		t.Fatalf("packed connection keeps %+v", c)
	}
	if c.Credentials.AccessToken != "tok-1" || c.AuthMode != integrations.AuthModeOAuth2 || full.Connection.Credentials.Raw == nil {
		t.Fatalf("packed credentials %+v; the full Target's raw %v must stay", c.Credentials, full.Connection.Credentials.Raw)
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
		t.Fatalf("packed Target sent %s?%s with %v; the full one %s?%s with %v", lp, lq, lh, fp, fq, fh)
	}

	// The packed copy shares nothing that its source may change, and
	// keeps every field calls read.
	exp := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	withOverride := &Target{Provider: full.Provider, ClientID: "cid", ClientSecret: "csecret",
		Connection: &connections.Connection{IntegrationKey: "gh", ConnectionID: "c2", Provider: "fake",
			AuthMode: integrations.AuthModeOAuth2, ConnectionConfig: map[string]any{"tenant": "acme"}, CredentialsExpiresAt: &exp,
			Credentials: &connections.Credentials{Type: "OAUTH2", AccessToken: "tok-2", ExpiresAt: &exp,
				ConfigOverride: &connections.ConfigOverride{ClientID: "o-id", ClientSecret: "o-secret"},
				Raw:            map[string]any{"team": "red"}}}}
	pk := p.Pack(withOverride)
	pw := pk.Target()
	if pw == pk.Target() {
		t.Fatal("Target returned the same Target twice: each call needs its own")
	}
	pc := pw.Connection
	if pc == withOverride.Connection || pc.Credentials == withOverride.Connection.Credentials ||
		pc.Credentials.ConfigOverride == withOverride.Connection.Credentials.ConfigOverride ||
		pc.Credentials.ExpiresAt == &exp || pc.CredentialsExpiresAt == &exp {
		t.Fatal("the packed Target points into its source")
	}
	if !pc.Credentials.ExpiresAt.Equal(exp) || !pc.CredentialsExpiresAt.Equal(exp) ||
		*pc.Credentials.ConfigOverride != (connections.ConfigOverride{ClientID: "o-id", ClientSecret: "o-secret"}) ||
		pw.ClientID != "cid" || pw.ClientSecret != "csecret" || pc.ConnectionID != "c2" || pc.Credentials.AccessToken != "tok-2" {
		t.Fatalf("packed copy %+v, credentials %+v", pc, pc.Credentials)
	}
	exp = exp.Add(time.Hour)
	if pc.Credentials.ExpiresAt.Equal(exp) {
		t.Fatal("changing the source's expiry changed the packed copy")
	}
	wh, _, _ := call(pw)
	if wh.Get("X-Team") != "red" || wh.Get("Authorization") != "Bearer tok-2" {
		t.Fatalf("packed Target with an override sent %v", wh)
	}

	broken := &Target{Connection: &connections.Connection{AuthMode: integrations.AuthModeOAuth2,
		Credentials: &connections.Credentials{Type: "OAUTH2", AccessToken: "tok"}},
		Provider: &integrations.Provider{Name: "fake", Proxy: &integrations.Proxy{BaseURL: "https://${connectionConfig.sub}.example.com"}}}
	if p.Pack(broken).Target() != broken {
		t.Fatal("Pack of a Target without its base URL's config did not keep it as it is")
	}
}

// Every field a packed Target keeps comes back as it was: strings (empty
// ones too), times (nil, zero and set, past 2262 too), the override, the
// injected headers beyond the inline ones, the query, the secrets and the
// base URL with its port, escaped path and query.
func TestPackRoundTrip(t *testing.T) {
	p, err := New(Config{Source: SourceFunc(func(context.Context, int64, string, string, bool) (*Target, error) { return nil, nil })})
	if err != nil {
		t.Fatal(err)
	}
	exp := time.Date(2400, 1, 2, 3, 4, 5, 6, time.UTC)
	obt := time.Date(2026, 11, 25, 1, 2, 3, 999, time.FixedZone("x", 3600))
	var zero time.Time
	headers := map[string]string{}
	for i := range unpackedInline + 3 {
		headers[fmt.Sprintf("X-H%02d", i)] = fmt.Sprintf("v%d-${connectionConfig.tenant}", i)
	}
	src := &Target{ClientID: "cid", ClientSecret: "cs", PrivateKey: "pem",
		Provider: &integrations.Provider{Name: "fake", AuthMode: integrations.AuthModeOAuth2,
			Proxy: &integrations.Proxy{BaseURL: "https://api.example.com:8443/v1/${connectionConfig.tenant}/%2F?a=b",
				Headers: headers, Query: map[string]string{"q1": "${connectionConfig.tenant}", "q2": "two"}}},
		Connection: &connections.Connection{ID: -7, EnvironmentID: 1 << 40, IntegrationKey: "gh", ConnectionID: "c-é",
			Provider: "fake", WebhookURLOverride: "", AuthMode: integrations.AuthModeOAuth2, RefreshAttempts: 3, Version: 9,
			ConnectionConfig: map[string]any{"tenant": "acme"}, CredentialsExpiresAt: &exp, LastFetchedAt: &zero,
			CreatedAt: obt, UpdatedAt: time.Time{},
			Credentials: &connections.Credentials{Type: "OAUTH2", AccessToken: "at", RefreshToken: "rt", ExpiresAt: &exp,
				ObtainedAt: &obt, OAuthToken: "ot", OAuthTokenSecret: "ots", Token: "tk", ClientID: "ci", ClientSecret: "cse",
				APIKey: "ak", Username: "un", Password: "pw", JWTToken: "jw", TokenID: "ti", TokenSecret: "tsec",
				ConfigOverride: &connections.ConfigOverride{ClientID: "oid", ClientSecret: ""}}}}
	want := p.Pack(src) // computes src's injection and base, as Target carries them
	got := want.Target()
	inj, err := p.inject(src)
	if err != nil {
		t.Fatal(err)
	}
	base, err := (&call{p: p, t: src}).computeBaseURL()
	if err != nil {
		t.Fatal(err)
	}
	wantConn := *src.Connection
	wantConn.ConnectionConfig = nil
	wantCreds := *src.Connection.Credentials
	wantConn.Credentials = &wantCreds
	opts := []cmp.Option{cmp.AllowUnexported(injection{}, headerField{}), cmpopts.IgnoreUnexported(Target{}),
		cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) }), cmpopts.EquateEmpty()}
	if d := cmp.Diff(&wantConn, got.Connection, opts...); d != "" {
		t.Errorf("connection (-want +got):\n%s", d)
	}
	if got.Connection.LastFetchedAt == nil || !got.Connection.LastFetchedAt.IsZero() || got.Connection.LastRefreshFailure != nil {
		t.Errorf("a zero time must come back zero and a nil one nil: %v, %v", got.Connection.LastFetchedAt, got.Connection.LastRefreshFailure)
	}
	if got.ClientID != "cid" || got.ClientSecret != "cs" || got.PrivateKey != "pem" || got.Provider != src.Provider {
		t.Errorf("target %+v", got)
	}
	if d := cmp.Diff(inj, got.injection.Load(), opts...); d != "" {
		t.Errorf("injection (-want +got):\n%s", d)
	}
	if gu := got.base.Load(); gu == nil || gu.u.String() != base.String() || gu.u.RawPath != base.RawPath || gu.u.RawQuery != "a=b" {
		t.Errorf("base %v, want %v", gu, base)
	}
	for _, now := range []time.Time{time.Now(), exp.Add(-time.Minute), exp.Add(time.Minute)} {
		if w := !connections.RefreshDue(src.Connection.Credentials, now, time.Hour); want.Fresh(now, time.Hour) != w {
			t.Errorf("Fresh at %v = %v, want %v", now, !w, w)
		}
	}
	cc := &Target{Provider: src.Provider, Connection: &connections.Connection{AuthMode: integrations.AuthModeOAuth2CC,
		ConnectionConfig: map[string]any{"tenant": "acme"},
		Credentials:      &connections.Credentials{Type: integrations.AuthModeOAuth2CC}}}
	if p.Pack(cc).Fresh(time.Now(), time.Hour) {
		t.Error("client credentials without a token are fresh")
	}
	if (Packed{}).Target() != nil {
		t.Error("the zero Packed has a Target")
	}
}

// BenchmarkPackHeap measures what a cache of packed Targets costs the
// garbage collector: the heap objects and bytes per Target kept, and the
// time of a full collection with 100,000 of them live, against the same
// Targets kept unpacked (as loaded, then used once: their injection and
// base URL computed). Each connection's strings are allocated one by one,
// as a store's decoding allocates them.
func BenchmarkPackHeap(b *testing.B) {
	const n = 100_000
	p, err := New(Config{Source: SourceFunc(func(context.Context, int64, string, string, bool) (*Target, error) { return nil, nil })})
	if err != nil {
		b.Fatal(err)
	}
	prov := &integrations.Provider{Name: "github", AuthMode: integrations.AuthModeOAuth2,
		Proxy: &integrations.Proxy{BaseURL: "https://api.github.com", Headers: map[string]string{"X-GitHub-Api-Version": "2022-11-28"}}}
	type key struct {
		env     int64
		key, id string
	}
	load := func(i int) *Target {
		exp := time.Now().Add(time.Hour)
		at, rt := fmt.Sprintf("gho_%036d", i), fmt.Sprintf("ghr_%036d", i)
		return &Target{Provider: prov, Connection: &connections.Connection{ID: int64(i), EnvironmentID: 1,
			IntegrationKey: strings.Clone("github"), ConnectionID: fmt.Sprintf("user-%d", i), Provider: strings.Clone("github"),
			AuthMode: strings.Clone(integrations.AuthModeOAuth2), SealedCredentials: fmt.Sprintf("v1:k1:%0200d", i),
			ConnectionConfig: map[string]any{}, Metadata: map[string]any{"plan": "pro", "seats": float64(i % 50)},
			Tags: map[string]string{"end_user_id": fmt.Sprintf("user-%d", i)}, CredentialsExpiresAt: &exp,
			Credentials: &connections.Credentials{Type: strings.Clone("OAUTH2"), AccessToken: at, RefreshToken: rt, ExpiresAt: &exp,
				Raw: map[string]any{"access_token": strings.Clone(at), "refresh_token": strings.Clone(rt), "expires_in": float64(3600)}}}}
	}
	measure := func(prime bool) (objects, bytes float64, gc time.Duration) {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		m := make(map[key]Packed, n)
		for i := range n {
			t := load(i)
			if prime {
				m[key{1, "github", fmt.Sprintf("user-%d", i)}] = p.Pack(t)
			} else {
				// As a cache of unpacked Targets holds them once used:
				// the injection and base URL computed on the first call.
				c := &call{p: p}
				if err := c.setTarget(t); err != nil {
					b.Fatal(err)
				}
				if _, err := c.baseURL(); err != nil {
					b.Fatal(err)
				}
				m[key{1, "github", fmt.Sprintf("user-%d", i)}] = Packed{full: t}
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		const collections = 5
		t0 := time.Now()
		for range collections {
			runtime.GC()
		}
		gc = time.Since(t0) / collections
		runtime.KeepAlive(m)
		return float64(after.HeapObjects-before.HeapObjects) / n, float64(after.HeapAlloc-before.HeapAlloc) / n, gc
	}
	var fullGC, packedGC time.Duration
	var fullObj, packedObj, fullBytes, packedBytes float64
	for i := range b.N {
		for _, prime := range []bool{i%2 == 0, i%2 != 0} { // alternating which goes first
			o, by, g := measure(prime)
			if prime {
				packedObj, packedBytes, packedGC = o, by, packedGC+g
			} else {
				fullObj, fullBytes, fullGC = o, by, fullGC+g
			}
		}
	}
	b.ReportMetric(fullObj, "full-objects/target")
	b.ReportMetric(packedObj, "packed-objects/target")
	b.ReportMetric(fullBytes, "full-B/target")
	b.ReportMetric(packedBytes, "packed-B/target")
	b.ReportMetric(float64(fullGC.Microseconds())/float64(b.N)/1000, "full-gc-ms")
	b.ReportMetric(float64(packedGC.Microseconds())/float64(b.N)/1000, "packed-gc-ms")
	b.ReportMetric(float64(packedGC)/float64(fullGC), "gc-ratio")
}
