package functions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/embedauth/connect/egress"
	"github.com/embedauth/connect/proxy"
	"github.com/embedauth/connect/store"
)

// TestActionErrorPayload: an ActionError's Type is the payload's "type",
// first, over a "type" of the payload's own; the payload is an object
// whatever its Go value.
func TestActionErrorPayload(t *testing.T) {
	t.Parallel()
	type detail struct {
		Message string `json:"message"`
		Field   string `json:"field"`
	}
	for _, tc := range []struct {
		err  *ActionError
		want string
	}{
		{&ActionError{Payload: map[string]any{"reason": "nope"}}, `{"reason":"nope"}`},
		{&ActionError{Type: "not_found", Payload: map[string]any{"message": "User not found", "id": 7}}, `{"type":"not_found","id":7,"message":"User not found"}`},
		{&ActionError{Type: "invalid_input", Payload: detail{"bad", "email"}}, `{"type":"invalid_input","field":"email","message":"bad"}`},
		{&ActionError{Type: "mine", Payload: map[string]any{"type": "theirs", "a": 1}}, `{"type":"mine","a":1}`},
		{&ActionError{Type: "mine", Payload: map[string]any{"type": "theirs"}}, `{"type":"mine"}`},
		{&ActionError{Type: "rate_limited"}, `{"type":"rate_limited"}`},
		{&ActionError{Type: "oops", Payload: "it broke"}, `{"type":"oops","message":"it broke"}`},
		{&ActionError{Type: "many", Payload: []int{1, 2}}, `{"type":"many","message":[1,2]}`},
		{&ActionError{Type: `quote"d`}, `{"type":"quote\"d"}`},
		{&ActionError{Payload: map[string]any{"type": "kept"}}, `{"type":"kept"}`},
	} {
		f := Classify(fmt.Errorf("wrapped: %w", tc.err))
		if f.Status != 500 || f.Body.Error.Code != "action_script_runtime_error" {
			t.Errorf("%+v: %d %s", tc.err, f.Status, f.Body.Error.Code)
		}
		got, err := json.Marshal(f.Body.Error.Payload)
		if err != nil || string(got) != tc.want {
			t.Errorf("%+v: payload %s (%v), want %s", tc.err, got, err, tc.want)
		}
	}
	if s := (&ActionError{Type: "not_found", Payload: map[string]any{"id": 7}}).Error(); s != `action error not_found: {"id":7}` {
		t.Errorf("Error() = %q", s)
	}
}

// TestClassifyAddressRefusal: a request the address policy refused, as
// the proxy reports it or as a client's dial error, is 403
// upstream_address_refused with the proxy's message, naming neither the
// address nor its class; a panic's stack stays out of the answer.
func TestClassifyAddressRefusal(t *testing.T) {
	t.Parallel()
	ae := &egress.AddressError{Addr: netip.MustParseAddr("10.0.0.7"), Class: egress.Private, Setting: "X=true"}
	const want = "The network policy refused the upstream: address not allowed (loopback and private network addresses are allowed by X=true)."
	for _, err := range []error{
		fmt.Errorf("call: %w", proxy.AddressRefused(ae)),
		fmt.Errorf("sdk: %w", &net.OpError{Op: "dial", Net: "tcp", Err: ae}),
	} {
		f := Classify(err)
		if f.Status != 403 || f.Body.Error.Code != proxy.CodeAddressRefused || f.Body.Error.Message != want || f.Body.Error.Payload != nil {
			t.Errorf("Classify(%v) = %d %+v", err, f.Status, f.Body.Error)
		}
	}
	f := Classify(&PanicError{Value: "boom", Stack: []string{"main.f (/src/f.go:1)"}})
	b, _ := json.Marshal(f.Body)
	if f.Status != 500 || f.Body.Error.Code != "script_internal_error" || strings.Contains(string(b), "f.go") || !strings.Contains(string(b), "boom") {
		t.Errorf("a panic answered %d %s", f.Status, b)
	}
	if f := Classify(errors.New("other")); f.Body.Error.Code != "script_internal_error" {
		t.Errorf("another error answered %+v", f.Body.Error)
	}
}

// timeoutErr is a network timeout, as a client's transport reports one.
type timeoutErr struct{}

func (timeoutErr) Error() string   { return "read tcp 10.0.0.5:41000->10.0.0.5:8080: i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

// TestClassifyTransportFailure: a provider call that got no answer, as a
// client of Context.HTTPClient reports it (an *url.Error around a dial
// or read error, wrapped or not, or thrown as a panic) or as
// Context.Proxy reports it (the proxy's own error), is answered as the
// proxy answers it: 502 upstream_error, 504 upstream_timeout, with no
// address, port, URL or dial error; the run's log detail keeps the dial
// error and the host, never the URL's path or query. The run's own
// deadline or cancellation wins over a call it cut short.
func TestClassifyTransportFailure(t *testing.T) {
	t.Parallel()
	refused := &url.Error{Op: "Get", URL: "http://10.0.0.5:8080/users?api_key=sk-secret", Err: &net.OpError{Op: "dial", Net: "tcp",
		Addr: &net.TCPAddr{IP: net.IPv4(10, 0, 0, 5), Port: 8080}, Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}
	timedOut := &url.Error{Op: "Post", URL: "http://10.0.0.5:8080/users", Err: timeoutErr{}}
	const (
		msgFailed  = "The upstream failed: could not reach the provider."
		msgTimeout = "The upstream did not answer in time: could not reach the provider."
	)
	for _, tc := range []struct {
		name   string
		err    error
		status int
		code   string
		msg    string
		detail string // in the log detail; "" for none
	}{
		{"refused, as returned", refused, 502, proxy.CodeUpstreamError, msgFailed, "Get http://10.0.0.5:8080: dial tcp 10.0.0.5:8080: connect: connection refused"},
		{"refused, wrapped", fmt.Errorf("list users: %w", refused), 502, proxy.CodeUpstreamError, msgFailed, "list users: Get http://10.0.0.5:8080: dial tcp"},
		{"refused, read error", fmt.Errorf("read the answer: %w", refused.Err), 502, proxy.CodeUpstreamError, msgFailed, "read the answer: dial tcp 10.0.0.5:8080"},
		{"timeout", timedOut, 504, proxy.CodeUpstreamTimeout, msgTimeout, "Post http://10.0.0.5:8080: read tcp"},
		{"client timeout (a deadline of the function's own)", &url.Error{Op: "Get", URL: "http://10.0.0.5:8080/", Err: context.DeadlineExceeded},
			504, proxy.CodeUpstreamTimeout, msgTimeout, "Get http://10.0.0.5:8080: context deadline exceeded"},
		{"through Context.Proxy", fmt.Errorf("list users: %w", proxy.TransportFailure(refused)), 502, proxy.CodeUpstreamError, msgFailed,
			"dial tcp 10.0.0.5:8080: connect: connection refused"},
		{"through Context.Proxy, timeout", proxy.TransportFailure(timedOut), 504, proxy.CodeUpstreamTimeout, msgTimeout, "i/o timeout"},
		{"the run's deadline cut it short", &endedError{ctx: context.DeadlineExceeded, err: refused}, 500, "execution_timeout",
			"The function ran past its deadline.", "connection refused"},
		{"the run was cancelled", &endedError{ctx: context.Canceled, err: proxy.TransportFailure(refused)}, 410, "script_aborted",
			"The function run was cancelled.", "connection refused"},
		{"the run's deadline", context.DeadlineExceeded, 500, "execution_timeout", "The function ran past its deadline.", ""},
	} {
		f := Classify(tc.err)
		b, _ := json.Marshal(f.Body)
		if f.Status != tc.status || f.Body.Error.Code != tc.code || f.Body.Error.Message != tc.msg || f.Body.Error.Payload != nil {
			t.Errorf("%s: answered %d %s, want %d %s %q", tc.name, f.Status, b, tc.status, tc.code, tc.msg)
		}
		for _, w := range []string{"10.0.0.5", "8080", "dial", "refused", "i/o", "deadline exceeded", "users", "sk-secret"} {
			if strings.Contains(string(b), w) {
				t.Errorf("%s: the answer gives away %q: %s", tc.name, w, b)
			}
		}
		d := failureDetail(tc.err)
		if (tc.detail == "") != (d == "") || !strings.Contains(d, tc.detail) {
			t.Errorf("%s: log detail %q, want it to hold %q", tc.name, d, tc.detail)
		}
		if strings.Contains(d, "/users") || strings.Contains(d, "sk-secret") {
			t.Errorf("%s: the log detail holds the URL's path or query: %q", tc.name, d)
		}
	}

	// A panic with such an error: the panic's answer, with the proxy's
	// words for its message.
	f := Classify(&PanicError{Value: refused})
	b, _ := json.Marshal(f.Body)
	if f.Status != 500 || f.Body.Error.Code != "script_internal_error" || !strings.Contains(string(b), `"message":"`+msgFailed+`"`) ||
		strings.Contains(string(b), "10.0.0.5") {
		t.Errorf("a panic with a dial error answered %d %s", f.Status, b)
	}
	if d := failureDetail(&PanicError{Value: refused}); !strings.Contains(d, "connection refused") {
		t.Errorf("a panic with a dial error: log detail %q", d)
	}

	// An error of the function's own keeps its text (as Nango answers
	// it), without the URL of a request it names; a failure of ours that
	// a client reports (the connection's refresh) is not the network's.
	for _, tc := range []struct {
		err  error
		want string
	}{
		{errors.New("the account is locked"), "the account is locked"},
		{&url.Error{Op: "Get", URL: "https://api.example.com/me?token=sk-secret", Err: &store.Error{Kind: store.ErrInvalid,
			Code: "refresh_failed", Message: "Refreshing the access token failed."}}, "Get: refresh_failed: Refreshing the access token failed."},
	} {
		f := Classify(tc.err)
		p, _ := f.Body.Error.Payload.(map[string]any)
		if f.Status != 500 || f.Body.Error.Code != "script_internal_error" || p["name"] != "error" || p["message"] != tc.want {
			t.Errorf("Classify(%v) = %d %+v, want the message %q", tc.err, f.Status, f.Body.Error, tc.want)
		}
		if d := failureDetail(tc.err); d != "" {
			t.Errorf("Classify(%v): log detail %q, want none", tc.err, d)
		}
	}

	// An address the policy refused keeps its answer, and its log detail
	// is none: the address stays out of the log as well.
	ae := &egress.AddressError{Addr: netip.MustParseAddr("10.0.0.7"), Class: egress.Private}
	if d := failureDetail(&url.Error{Op: "Get", URL: "http://10.0.0.7/", Err: &net.OpError{Op: "dial", Net: "tcp", Err: ae}}); d != "" {
		t.Errorf("a refused address: log detail %q", d)
	}
}
