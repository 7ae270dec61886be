package proxy

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/integrations"
)

// routeFixture is a Proxy whose one connection calls upstream, served by
// an httptest server that mounts the route as the Service does.
func routeFixture(t *testing.T, upstream http.HandlerFunc) (proxyURL string) {
	t.Helper()
	up := httptest.NewServer(upstream)
	t.Cleanup(up.Close)
	target := &Target{
		Connection: &connections.Connection{IntegrationKey: "gh", ConnectionID: "c1", Provider: "fake",
			AuthMode: integrations.AuthModeOAuth2, Credentials: &connections.Credentials{Type: "OAUTH2", AccessToken: "tok-1"}},
		Provider: &integrations.Provider{Name: "fake", AuthMode: integrations.AuthModeOAuth2,
			Proxy: &integrations.Proxy{BaseURL: up.URL}},
	}
	p, err := New(Config{Policy: Policy{AllowLoopback: true},
		Source: SourceFunc(func(context.Context, int64, string, string, bool) (*Target, error) { return target, nil })})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { p.ServeHTTP(w, r, 1) }))
	t.Cleanup(srv.Close)
	return srv.URL
}

func routeGet(t *testing.T, url string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Provider-Config-Key", "gh")
	req.Header.Set("Connection-Id", "c1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// The upstream's status, headers and body come back; hop-by-hop headers,
// and those its Connection header names, do not. The upstream got the
// injected token and no User-Agent of Go's.
func TestRouteResponse(t *testing.T) {
	t.Parallel()
	url := routeFixture(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok-1" || r.Header.Get("User-Agent") != "" {
			http.Error(w, "auth "+r.Header.Get("Authorization")+" ua "+r.Header.Get("User-Agent"), 400)
			return
		}
		w.Header().Set("X-Rate-Remaining", "41")
		w.Header().Add("Set-Cookie", "a=1")
		w.Header().Add("Set-Cookie", "b=2")
		w.Header().Set("Connection", "X-Private")
		w.Header().Set("X-Private", "hop")
		w.Header().Set("Keep-Alive", "timeout=5")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"ok":true}`)
	})
	req, _ := http.NewRequest("GET", url+"/proxy/user", nil)
	req.Header.Set("Provider-Config-Key", "gh")
	req.Header.Set("Connection-Id", "c1")
	req.Header.Set("User-Agent", "")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated || string(body) != `{"ok":true}` {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if resp.Header.Get("X-Rate-Remaining") != "41" || len(resp.Header.Values("Set-Cookie")) != 2 {
		t.Errorf("headers %v", resp.Header)
	}
	for _, h := range []string{"X-Private", "Keep-Alive"} {
		if resp.Header.Get(h) != "" {
			t.Errorf("the hop-by-hop header %s came through: %v", h, resp.Header)
		}
	}
}

// A stream of unknown length, and an event stream, reach the caller part
// by part, while the upstream is still writing.
func TestRouteStreamsAsItComes(t *testing.T) {
	t.Parallel()
	for _, ct := range []string{"text/event-stream; charset=utf-8", "application/x-ndjson"} {
		release := make(chan struct{})
		url := routeFixture(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", ct)
			io.WriteString(w, "data: first\n\n")
			w.(http.Flusher).Flush()
			<-release // the caller must have the first part by now
			io.WriteString(w, "data: second\n\n")
		})
		resp := routeGet(t, url+"/proxy/events")
		br := bufio.NewReader(resp.Body)
		line, err := br.ReadString('\n')
		if err != nil || line != "data: first\n" {
			t.Fatalf("%s: first line %q, %v", ct, line, err)
		}
		close(release)
		rest, _ := io.ReadAll(br)
		if string(rest) != "\ndata: second\n\n" {
			t.Fatalf("%s: rest %q", ct, rest)
		}
	}
}

// A body that breaks off after the status is sent cuts the caller's
// connection: the caller sees an error, never a short body that looks
// whole (a chunked one would otherwise end cleanly).
func TestRouteTruncatedBody(t *testing.T) {
	t.Parallel()
	for _, declared := range []bool{false, true} {
		url := routeFixture(t, func(w http.ResponseWriter, r *http.Request) {
			if declared {
				w.Header().Set("Content-Length", "1000")
			}
			io.WriteString(w, strings.Repeat("x", 100))
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler) // the upstream dies mid-body
		})
		req, _ := http.NewRequest("GET", url+"/proxy/big", nil)
		req.Header.Set("Provider-Config-Key", "gh")
		req.Header.Set("Connection-Id", "c1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			continue // cut before the status line reached the caller: no answer at all
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err == nil {
			t.Fatalf("length declared %v: read %d bytes and no error: a truncated body passed for a whole one", declared, len(b))
		}
	}
}

// Trailers the upstream announces come back as trailers.
func TestRouteTrailers(t *testing.T) {
	t.Parallel()
	url := routeFixture(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Trailer", "X-Checksum")
		io.WriteString(w, "payload")
		w.Header().Set("X-Checksum", "abc123")
	})
	resp := routeGet(t, url+"/proxy/data")
	b, err := io.ReadAll(resp.Body)
	if err != nil || string(b) != "payload" {
		t.Fatalf("%q, %v", b, err)
	}
	if got := resp.Trailer.Get("X-Checksum"); got != "abc123" {
		t.Fatalf("trailer %q, want abc123 (trailers %v, headers %v)", got, resp.Trailer, resp.Header)
	}
}

// An upstream that switches protocols gets a 502: the route does not
// carry upgraded connections.
func TestRouteSwitchingProtocols(t *testing.T) {
	t.Parallel()
	url := routeFixture(t, func(w http.ResponseWriter, r *http.Request) {
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
		brw.Flush()
		time.Sleep(100 * time.Millisecond)
	})
	resp := routeGet(t, url+"/proxy/ws")
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(string(b), CodeUpstreamError) {
		t.Fatalf("%d %s, want 502 %s", resp.StatusCode, b, CodeUpstreamError)
	}
}
