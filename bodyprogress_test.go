package connect_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/integrations"
)

// bodyServer serves h behind RequireBodyProgress and reports the error of
// each request's body read.
func bodyServer(t *testing.T, window time.Duration, minBytes int64, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(connect.RequireBodyProgress(h, window, minBytes))
	t.Cleanup(srv.Close)
	return srv
}

// readAllBody is a handler that reads the body and sends the read's error
// (nil when the body was read to its end) on errs.
func readAllBody(errs chan<- error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		errs <- err
		if err != nil {
			http.Error(w, "body not read", http.StatusRequestTimeout)
			return
		}
		fmt.Fprint(w, "ok")
	}
}

// startSlowPost sends the headers of a POST of size bytes, with the header
// lines given, and the first byte of its body, and returns the connection.
func startSlowPost(t *testing.T, srv *httptest.Server, path string, size int, header ...string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	var h strings.Builder
	for _, line := range header {
		h.WriteString(line + "\r\n")
	}
	if _, err := fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\n%sContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{",
		path, h.String(), size); err != nil {
		t.Fatal(err)
	}
	return conn
}

// waitClosed reads the connection until the server closes it, within a
// generous bound that only turns a connection held forever into a failure,
// and returns what the server sent.
func waitClosed(t *testing.T, conn net.Conn) string {
	t.Helper()
	start := time.Now()
	if err := conn.SetReadDeadline(start.Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(conn)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the connection is still open after 30 s (read %q)", got)
	}
	t.Logf("connection closed by the server after %v (%v)", time.Since(start).Round(time.Millisecond), err)
	return string(got)
}

// receive waits for one value of ch, within a generous bound.
func receive[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(30 * time.Second):
		t.Fatalf("no %s within 30 s", what)
		panic("unreachable")
	}
}

// TestRequireBodyProgressCutsOffStalledBody: a client that sends its
// headers and part of its body, then nothing, is cut off.
func TestRequireBodyProgressCutsOffStalledBody(t *testing.T) {
	t.Parallel()
	errs := make(chan error, 1)
	srv := bodyServer(t, 100*time.Millisecond, 1024, readAllBody(errs))
	conn := startSlowPost(t, srv, "/", 1<<20)
	if err := receive(t, errs, "end of the body read"); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("body read: %v, want a deadline error", err)
	}
	waitClosed(t, conn)
}

// TestRequireBodyProgressCutsOffTrickle: a client that keeps sending a
// byte at a time, each within the window, but less than the minimum per
// window, is cut off too (a per-read idle timeout would keep it forever).
func TestRequireBodyProgressCutsOffTrickle(t *testing.T) {
	t.Parallel()
	errs := make(chan error, 1)
	// A byte every 20 ms, each far within the window of a second: only
	// the minimum per window (1 KiB) cuts it off.
	srv := bodyServer(t, time.Second, 1024, readAllBody(errs))
	conn := startSlowPost(t, srv, "/", 1<<20)
	stop := make(chan struct{})
	var sent atomic.Int64
	go func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			if _, err := conn.Write([]byte(" ")); err != nil {
				return
			}
			sent.Add(1)
		}
	}()
	defer close(stop)
	if err := receive(t, errs, "end of the body read"); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("body read: %v, want a deadline error", err)
	}
	waitClosed(t, conn)
	if sent.Load() == 0 {
		t.Error("the trickle sent nothing: the test did not test a trickle")
	}
}

// TestRequireBodyProgressCountsOnlyWaiting: a handler may read a body
// slowly, pausing for longer than the window, a body that keeps coming is
// read to its end, and the handler may then work for longer than the
// window.
func TestRequireBodyProgressCountsOnlyWaiting(t *testing.T) {
	t.Parallel()
	const window = time.Second
	const size = 4 << 20
	errs := make(chan error, 1)
	srv := bodyServer(t, window, 1024, func(w http.ResponseWriter, r *http.Request) {
		half := make([]byte, size/2)
		if _, err := io.ReadFull(r.Body, half); err != nil {
			errs <- err
			return
		}
		<-time.After(3 * window) // the handler is busy, not the client slow
		n, err := io.Copy(io.Discard, r.Body)
		if err == nil && n != size/2 {
			err = fmt.Errorf("read %d bytes of the second half", n)
		}
		if err == nil {
			// Once the body is read (a read past its end included), the
			// handler may work on for longer than the window: the
			// request stays alive.
			if n, rerr := r.Body.Read(make([]byte, 1)); n != 0 || rerr != io.EOF {
				err = fmt.Errorf("read past the end: %d, %v", n, rerr)
			}
			<-time.After(3 * window)
			if err == nil {
				err = r.Context().Err()
			}
		}
		errs <- err
		fmt.Fprint(w, "ok")
	})
	resp, err := http.Post(srv.URL, "application/octet-stream", strings.NewReader(strings.Repeat("x", size)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if err := receive(t, errs, "end of the body read"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("a body read slowly: %d, %v", resp.StatusCode, err)
	}
}

// TestRequireBodyProgressThroughProxy: the reference server's setting in
// front of the whole Service. A large body streamed steadily goes through
// the proxy to an upstream that reads it slowly (pausing for longer than
// the window); a stalled body sent to the proxy is cut off, answered 408.
func TestRequireBodyProgressThroughProxy(t *testing.T) {
	t.Parallel()
	const window = time.Second
	const size = 8 << 20
	got := make(chan int64, 2)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, err := io.CopyN(io.Discard, r.Body, size/2)
		if err == nil {
			<-time.After(3 * window)
			var m int64
			m, err = io.Copy(io.Discard, r.Body)
			n += m
		}
		got <- n
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		fmt.Fprintf(w, `{"received":%d}`, n)
	}))
	t.Cleanup(up.Close)
	def, err := integrations.DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	cat, err := def.With(&integrations.Provider{Name: "slow-upstream", DisplayName: "Slow", AuthMode: integrations.AuthModeAPIKey,
		Credentials: map[string]integrations.FieldSpec{"apiKey": {Type: "string", Title: "API key"}},
		Proxy:       &integrations.Proxy{BaseURL: up.URL, Headers: map[string]string{"X-Api-Key": "${apiKey}"}}})
	if err != nil {
		t.Fatal(err)
	}
	bu := setup(t, sqliteBackend(t), func(c *connect.Config) { c.Providers = cat })
	bu.mustDo(t, 200, req{method: "POST", path: "/integrations", body: `{"provider":"slow-upstream","unique_key":"up"}`})
	bu.mustDo(t, 201, req{method: "POST", path: "/connections", body: `{"provider_config_key":"up","connection_id":"c1","api_key":"k"}`})
	srv := httptest.NewServer(connect.RequireBodyProgress(bu.svc.Handler(), window, 1024))
	t.Cleanup(srv.Close)

	r, err := http.NewRequest("POST", srv.URL+"/proxy/upload", strings.NewReader(strings.Repeat("y", size)))
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Authorization", "Bearer "+bu.key)
	r.Header.Set("Connection-Id", "c1")
	r.Header.Set("Provider-Config-Key", "up")
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if n := receive(t, got, "the upstream's read"); resp.StatusCode != 200 || n != size {
		t.Fatalf("streamed body: %d %s, upstream read %d of %d bytes", resp.StatusCode, body, n, size)
	}

	// Stalled: the headers of a large body, a byte, then nothing.
	conn := startSlowPost(t, srv, "/proxy/upload", size, "Authorization: Bearer "+bu.key, "Connection-Id: c1",
		"Provider-Config-Key: up")
	answer := waitClosed(t, conn)
	resp, err = http.ReadResponse(bufio.NewReader(strings.NewReader(answer)), nil)
	if err != nil {
		t.Fatalf("answer to a stalled body: %q: %v", answer, err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusRequestTimeout || errorCode(t, string(b)) != "request_timeout" {
		t.Errorf("answer to a stalled body: %d %s", resp.StatusCode, b)
	}

	// The API's routes answer the same.
	conn = startSlowPost(t, srv, "/connections", 4096, "Authorization: Bearer "+bu.key)
	resp, err = http.ReadResponse(bufio.NewReader(strings.NewReader(waitClosed(t, conn))), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusRequestTimeout || errorCode(t, string(b)) != "request_timeout" {
		t.Errorf("answer to a stalled API body: %d %s", resp.StatusCode, b)
	}
}

// TestRequireBodyProgressUnreadBody: a handler that answers without reading
// the body leaves the server to read the rest before it reuses the
// connection; a client that stopped sending is cut off there too.
func TestRequireBodyProgressUnreadBody(t *testing.T) {
	t.Parallel()
	srv := bodyServer(t, 100*time.Millisecond, 1024, func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "refused before the body", http.StatusForbidden)
	})
	// Small enough for the server to try to read the rest (up to 256 KiB).
	conn := startSlowPost(t, srv, "/", 4096)
	resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(waitClosed(t, conn))), nil)
	if err != nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("answer: %v, %v", resp, err)
	}
}
