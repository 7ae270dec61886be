package proxy

import (
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/integrations"
)

// TestTemplateHeaderOverrides: a provider's header template replaces the
// auth mode's header even when it is computed per request (Duo's HMAC
// Authorization over BASIC's), ${credentials.token} of TWO_STEP
// credentials is the token (tripletex), and ${endpoint} is the endpoint
// asked for with its query, as Nango's is.
func TestTemplateHeaderOverrides(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []http.Header
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Clone())
		mu.Unlock()
	}))
	t.Cleanup(up.Close)
	at := time.Date(2024, 1, 15, 10, 30, 5, 0, time.UTC)
	targets := map[string]*Target{
		"duo": {
			Connection: &connections.Connection{IntegrationKey: "duo", ConnectionID: "c1", Provider: "duo",
				AuthMode: integrations.AuthModeBasic, Credentials: &connections.Credentials{Type: "BASIC", Username: "ikey", Password: "skey"}},
			Provider: &integrations.Provider{Name: "duo", AuthMode: integrations.AuthModeBasic,
				Proxy: &integrations.Proxy{BaseURL: up.URL, Headers: map[string]string{
					"authorization": "Basic ${base64(${credentials.username}:${hmacSha1Hex(${now:X}\n${endpoint}, ${credentials.password})})}",
				}}},
		},
		"tt": {
			Connection: &connections.Connection{IntegrationKey: "tt", ConnectionID: "c1", Provider: "tt",
				AuthMode: integrations.AuthModeTwoStep, ConnectionConfig: map[string]any{"company": "42"},
				Credentials: &connections.Credentials{Type: "TWO_STEP", Token: "sess-1", Inputs: map[string]any{"consumerToken": "ct"}}},
			Provider: &integrations.Provider{Name: "tt", AuthMode: integrations.AuthModeTwoStep,
				Proxy: &integrations.Proxy{BaseURL: up.URL, Headers: map[string]string{
					"authorization": "Basic ${base64(${connectionConfig.company}:${credentials.token})}",
				}}},
		},
	}
	p, err := New(Config{Policy: Policy{AllowLoopback: true}, Now: func() time.Time { return at },
		Source: SourceFunc(func(_ context.Context, _ int64, key, _ string, _ bool) (*Target, error) { return targets[key], nil })})
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"duo", "tt"} {
		resp, err := p.Do(context.Background(), &Request{IntegrationKey: key, ConnectionID: "c1", Endpoint: "/v1/users?b=2&a=1"})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if len(got) != 2 {
		t.Fatalf("%d requests reached the upstream", len(got))
	}
	m := hmac.New(sha1.New, []byte("skey"))
	m.Write([]byte("1705314605\n/v1/users?b=2&a=1"))
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	if want := "Basic " + b64("ikey:"+hex.EncodeToString(m.Sum(nil))); got[0].Get("Authorization") != want || len(got[0].Values("Authorization")) != 1 {
		t.Errorf("per-request Authorization = %q, want %q", got[0].Values("Authorization"), want)
	}
	if want := "Basic " + b64("42:sess-1"); got[1].Get("Authorization") != want {
		t.Errorf("TWO_STEP Authorization = %q, want %q", got[1].Get("Authorization"), want)
	}
}
