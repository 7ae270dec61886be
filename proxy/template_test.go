package proxy

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/store"
)

// TestPerRequestTemplates: headers and query parameters whose templates
// read the request, the clock or ${random} are computed for each request
// (method, path, query and body of that request; one ${random} shared by
// the headers of a request, another for the next), the others once.
func TestPerRequestTemplates(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []*http.Request
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(strings.NewReader(string(b)))
		r.Header.Set("X-Got-Body", string(b))
		mu.Lock()
		got = append(got, r)
		mu.Unlock()
	}))
	t.Cleanup(up.Close)
	at := time.Date(2024, 1, 15, 10, 30, 5, 0, time.UTC)
	target := &Target{
		Connection: &connections.Connection{IntegrationKey: "sig", ConnectionID: "c1", Provider: "signed",
			AuthMode: integrations.AuthModeOAuth2, Credentials: &connections.Credentials{Type: "OAUTH2", AccessToken: "tok-1",
				Raw: map[string]any{"secret": "s3cr3t", "account": map[string]any{"id": "acc-1"}}}},
		Provider: &integrations.Provider{Name: "signed", AuthMode: integrations.AuthModeOAuth2,
			Proxy: &integrations.Proxy{BaseURL: up.URL + "/api", Headers: map[string]string{
				"X-Sig":     "${sha256Hex(${method}${path}${params}${credentials.secret})}",
				"X-Digest":  "sha-256=:${sha256Base64(${bodyCanonicalParams})}:",
				"X-Date":    "${now:ddd, DD MMM YYYY HH:mm:ss ZZ}",
				"X-Id":      "${random}",
				"X-Id-Copy": "${random}",
				"X-Account": "${credentials.raw.account.id}",
				"X-Missing": "${credentials.raw.nope}",
			}, Query: map[string]string{"ts": "${now:X}"}}},
	}
	p, err := New(Config{Policy: Policy{AllowLoopback: true}, Now: func() time.Time { return at },
		Source: SourceFunc(func(context.Context, int64, string, string, bool) (*Target, error) { return target, nil })})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []*Request{
		{IntegrationKey: "sig", ConnectionID: "c1", Method: "GET", Endpoint: "/users?b=2&a=1"},
		{IntegrationKey: "sig", ConnectionID: "c1", Method: "POST", Endpoint: "/users", Body: strings.NewReader("b=2&a=1"),
			Header: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}},
	} {
		resp, err := p.Do(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if len(got) != 2 {
		t.Fatalf("%d requests reached the upstream", len(got))
	}
	hexsum := func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }
	b64sum := func(s string) string { h := sha256.Sum256([]byte(s)); return base64.StdEncoding.EncodeToString(h[:]) }
	for i, want := range []struct{ sig, body string }{
		{hexsum("GET/api/usersa=1&b=2&ts=1705314605s3cr3t"), ""},
		{hexsum("POST/api/usersa=1&b=2s3cr3t"), "b=2&a=1"},
	} {
		r := got[i]
		h := r.Header
		if h.Get("X-Sig") != want.sig {
			t.Errorf("request %d: X-Sig = %q; want %q", i, h.Get("X-Sig"), want.sig)
		}
		if h.Get("X-Digest") != "sha-256=:"+b64sum(want.body)+":" || h.Get("X-Got-Body") != want.body {
			t.Errorf("request %d: X-Digest = %q for body %q", i, h.Get("X-Digest"), h.Get("X-Got-Body"))
		}
		if h.Get("X-Date") != "Mon, 15 Jan 2024 10:30:05 +0000" || r.URL.Query().Get("ts") != "1705314605" {
			t.Errorf("request %d: X-Date = %q, ts = %q", i, h.Get("X-Date"), r.URL.Query().Get("ts"))
		}
		if len(h.Get("X-Id")) != 36 || h.Get("X-Id") != h.Get("X-Id-Copy") {
			t.Errorf("request %d: X-Id = %q, X-Id-Copy = %q; want one UUID", i, h.Get("X-Id"), h.Get("X-Id-Copy"))
		}
		if h.Get("X-Account") != "acc-1" || h.Get("Authorization") != "Bearer tok-1" {
			t.Errorf("request %d: X-Account = %q, Authorization = %q", i, h.Get("X-Account"), h.Get("Authorization"))
		}
		if _, ok := h["X-Missing"]; ok {
			t.Errorf("request %d: a header without a value was sent", i)
		}
	}
	if got[0].Header.Get("X-Id") == got[1].Header.Get("X-Id") {
		t.Errorf("two requests share ${random}")
	}
}

// TestPerRequestTemplateFailure: a function that cannot compute its value
// fails the call with provider_template_failed, without the key in the
// message.
func TestPerRequestTemplateFailure(t *testing.T) {
	t.Parallel()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the upstream was called")
	}))
	t.Cleanup(up.Close)
	target := &Target{
		Connection: &connections.Connection{IntegrationKey: "sig", ConnectionID: "c1", Provider: "signed",
			AuthMode: integrations.AuthModeBasic, Credentials: &connections.Credentials{Type: "BASIC", Username: "u", Password: "not-a-pem-secret"}},
		Provider: &integrations.Provider{Name: "signed", AuthMode: integrations.AuthModeBasic,
			Proxy: &integrations.Proxy{BaseURL: up.URL, Headers: map[string]string{
				"Signature": "${ed25519Sign(${method} ${path}, ${credentials.password})}"}}},
	}
	p, err := New(Config{Policy: Policy{AllowLoopback: true},
		Source: SourceFunc(func(context.Context, int64, string, string, bool) (*Target, error) { return target, nil })})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Do(context.Background(), &Request{IntegrationKey: "sig", ConnectionID: "c1", Endpoint: "/x"})
	se, ok := err.(*store.Error)
	if !ok || se.Code != CodeTemplateFailed || strings.Contains(err.Error(), "not-a-pem-secret") || !strings.Contains(err.Error(), "ed25519Sign") {
		t.Errorf("Do = %v; want a %s error naming ed25519Sign", err, CodeTemplateFailed)
	}
}
