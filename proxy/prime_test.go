package proxy

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

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

	// The primed copy shares nothing that its source may change.
	exp := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	withOverride := &Target{Provider: full.Provider, ClientID: "cid", ClientSecret: "csecret",
		Connection: &connections.Connection{IntegrationKey: "gh", ConnectionID: "c2", Provider: "fake",
			AuthMode: integrations.AuthModeOAuth2, ConnectionConfig: map[string]any{"tenant": "acme"}, CredentialsExpiresAt: &exp,
			Credentials: &connections.Credentials{Type: "OAUTH2", AccessToken: "tok-2", ExpiresAt: &exp,
				ConfigOverride: &connections.ConfigOverride{ClientID: "o-id", ClientSecret: "o-secret"},
				Raw:            map[string]any{"team": "red"}}}}
	pw := p.Prime(withOverride)
	pc := pw.Connection
	if pc == withOverride.Connection || pc.Credentials == withOverride.Connection.Credentials ||
		pc.Credentials.ConfigOverride == withOverride.Connection.Credentials.ConfigOverride ||
		pc.Credentials.ExpiresAt == &exp || pc.CredentialsExpiresAt == &exp {
		t.Fatal("the primed Target points into its source")
	}
	if !pc.Credentials.ExpiresAt.Equal(exp) || !pc.CredentialsExpiresAt.Equal(exp) ||
		*pc.Credentials.ConfigOverride != (connections.ConfigOverride{ClientID: "o-id", ClientSecret: "o-secret"}) ||
		pw.ClientID != "cid" || pw.ClientSecret != "csecret" || pc.ConnectionID != "c2" || pc.Credentials.AccessToken != "tok-2" {
		t.Fatalf("primed copy %+v, credentials %+v", pc, pc.Credentials)
	}
	exp = exp.Add(time.Hour)
	if pc.Credentials.ExpiresAt.Equal(exp) {
		t.Fatal("changing the source's expiry changed the primed copy")
	}
	wh, _, _ := call(pw)
	if wh.Get("X-Team") != "red" || wh.Get("Authorization") != "Bearer tok-2" {
		t.Fatalf("primed Target with an override sent %v", wh)
	}

	broken := &Target{Connection: &connections.Connection{AuthMode: integrations.AuthModeOAuth2,
		Credentials: &connections.Credentials{Type: "OAUTH2", AccessToken: "tok"}},
		Provider: &integrations.Provider{Name: "fake", Proxy: &integrations.Proxy{BaseURL: "https://${connectionConfig.sub}.example.com"}}}
	if p.Prime(broken) != broken {
		t.Fatal("Prime of a Target without its base URL's config did not return it as it is")
	}
}

// stringPack points every field at one shared string holding each distinct
// value once, and leaves the values as they were.
func TestStringPack(t *testing.T) {
	vals := []string{"alpha", "", "beta", "alpha", "gamma", "beta", "al"}
	fields := slices.Clone(vals)
	var sp stringPack
	for i := range fields {
		sp.add(&fields[i])
	}
	sp.pack()
	if !slices.Equal(fields, vals) {
		t.Fatalf("packed %q, want %q", fields, vals)
	}
	base := unsafe.StringData(fields[0])
	total := 0
	for _, f := range []string{"alpha", "beta", "gamma", "al"} {
		total += len(f)
	}
	for i, f := range fields {
		if f == "" {
			continue
		}
		off := uintptr(unsafe.Pointer(unsafe.StringData(f))) - uintptr(unsafe.Pointer(base))
		if off > uintptr(total) {
			t.Fatalf("field %d (%q) is not in the shared string", i, f)
		}
	}
	if unsafe.StringData(fields[3]) != base || unsafe.StringData(fields[5]) != unsafe.StringData(fields[2]) {
		t.Fatal("a repeated value was stored twice")
	}
}

// BenchmarkPrimeHeap measures what a cache of primed Targets costs the
// garbage collector: the heap objects and bytes per Target kept, and the
// time of a full collection with 100,000 of them live, against the same
// Targets kept unprimed (as loaded, then used once: their injection and
// base URL computed). Each connection's strings are allocated one by one,
// as a store's decoding allocates them.
func BenchmarkPrimeHeap(b *testing.B) {
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
		m := make(map[key]*Target, n)
		for i := range n {
			t := load(i)
			if prime {
				t = p.Prime(t)
			} else {
				// As a cache of unprimed Targets holds them once used:
				// the injection and base URL computed on the first call.
				c := &call{p: p}
				if err := c.setTarget(t); err != nil {
					b.Fatal(err)
				}
				if _, err := c.baseURL(); err != nil {
					b.Fatal(err)
				}
			}
			m[key{1, "github", fmt.Sprintf("user-%d", i)}] = t
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
	var fullGC, primedGC time.Duration
	var fullObj, primedObj, fullBytes, primedBytes float64
	for i := range b.N {
		for _, prime := range []bool{i%2 == 0, i%2 != 0} { // alternating which goes first
			o, by, g := measure(prime)
			if prime {
				primedObj, primedBytes, primedGC = o, by, primedGC+g
			} else {
				fullObj, fullBytes, fullGC = o, by, fullGC+g
			}
		}
	}
	b.ReportMetric(fullObj, "full-objects/target")
	b.ReportMetric(primedObj, "primed-objects/target")
	b.ReportMetric(fullBytes, "full-B/target")
	b.ReportMetric(primedBytes, "primed-B/target")
	b.ReportMetric(float64(fullGC.Microseconds())/float64(b.N)/1000, "full-gc-ms")
	b.ReportMetric(float64(primedGC.Microseconds())/float64(b.N)/1000, "primed-gc-ms")
	b.ReportMetric(float64(primedGC)/float64(fullGC), "gc-ratio")
}
