package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"syscall"
	"testing"
	"time"
)

// TestRetryableError: the network errors the spec and Nango retry
// (ECONNRESET, ETIMEDOUT, ECONNABORTED, ECONNREFUSED, EHOSTUNREACH,
// EAI_AGAIN) are retried however they are wrapped; a refused address, a
// name that does not exist and other failures are not.
func TestRetryableError(t *testing.T) {
	t.Parallel()
	// wrap wraps err as net/http returns a dial or read failure.
	wrap := func(op string, err error) error {
		return &url.Error{Op: "Get", URL: "https://api.example.com/x", Err: &net.OpError{Op: op, Net: "tcp",
			Err: &os.SyscallError{Syscall: op, Err: err}}}
	}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"connection reset", wrap("read", syscall.ECONNRESET), true},
		{"connection refused", wrap("dial", syscall.ECONNREFUSED), true},
		{"connection aborted", wrap("read", syscall.ECONNABORTED), true},
		{"connection timed out", wrap("dial", syscall.ETIMEDOUT), true},
		{"host unreachable", wrap("dial", syscall.EHOSTUNREACH), true},
		{"network unreachable", wrap("dial", syscall.ENETUNREACH), true},
		{"broken pipe", wrap("write", syscall.EPIPE), true},
		{"closed before the response", &url.Error{Op: "Get", URL: "u", Err: io.EOF}, true},
		{"cut response", fmt.Errorf("reading: %w", io.ErrUnexpectedEOF), true},
		{"dns EAI_AGAIN", &url.Error{Op: "Get", URL: "u", Err: &net.OpError{Op: "dial", Err: &net.DNSError{
			Err: "temporary failure in name resolution", Name: "api.example.com", IsTemporary: true}}}, true},
		{"dns timeout", &net.OpError{Op: "dial", Err: &net.DNSError{Err: "i/o timeout", Name: "x", IsTimeout: true}}, true},
		{"response header timeout", &url.Error{Op: "Get", URL: "u", Err: timeoutError{}}, true},
		{"deadline", context.DeadlineExceeded, true},
		{"dns not found", &url.Error{Op: "Get", URL: "u", Err: &net.OpError{Op: "dial", Err: &net.DNSError{
			Err: "no such host", Name: "nope.example.com", IsNotFound: true}}}, false},
		{"address refused by the policy", &url.Error{Op: "Get", URL: "u", Err: &net.OpError{Op: "dial", Net: "tcp",
			Err: &AddressError{Addr: netip.MustParseAddr("127.0.0.1"), Class: "loopback"}}}, false},
		{"policy refusal wrapping a reset", fmt.Errorf("%w: %w", &AddressError{Addr: netip.MustParseAddr("10.0.0.1"),
			Class: "private"}, syscall.ECONNRESET), false},
		{"tls certificate", &url.Error{Op: "Get", URL: "u", Err: errors.New("tls: failed to verify certificate")}, false},
		{"malformed response", &url.Error{Op: "Get", URL: "u", Err: errors.New(`malformed HTTP response "x"`)}, false},
		{"cancelled", context.Canceled, false},
	} {
		if got := retryableError(tc.err); got != tc.want {
			t.Errorf("%s: retryableError(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}

type timeoutError struct{}

func (timeoutError) Error() string   { return "net/http: timeout awaiting response headers" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

// TestNewTimeoutDefaults: the default Transport waits at most
// DefaultResponseHeaderTimeout for each attempt's response headers unless
// configured otherwise; negative means no limit.
func TestNewTimeoutDefaults(t *testing.T) {
	t.Parallel()
	src := SourceFunc(func(context.Context, int64, string, string, bool) (*Target, error) { return nil, errors.New("unused") })
	for _, tc := range []struct {
		set, want time.Duration
	}{
		{0, DefaultResponseHeaderTimeout},
		{3 * time.Second, 3 * time.Second},
		{-1, 0},
	} {
		p, err := New(Config{Source: src, ResponseHeaderTimeout: tc.set})
		if err != nil {
			t.Fatal(err)
		}
		tr, ok := p.base.(*http.Transport)
		if !ok {
			t.Fatalf("default transport %T", p.base)
		}
		if tr.ResponseHeaderTimeout != tc.want {
			t.Errorf("ResponseHeaderTimeout %s: the transport waits %s, want %s", tc.set, tr.ResponseHeaderTimeout, tc.want)
		}
	}
	if DefaultResponseHeaderTimeout <= 0 {
		t.Error("no default upstream timeout")
	}
}

// TestSleep: the default Sleep waits, and ends early with the context's
// error.
func TestSleep(t *testing.T) {
	t.Parallel()
	if err := sleep(context.Background(), time.Millisecond); err != nil {
		t.Errorf("sleep = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("sleep with a cancelled context = %v", err)
	}
	if err := sleep(ctx, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("sleep(0) with a cancelled context = %v", err)
	}
}
