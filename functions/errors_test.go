package functions

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/embedauth/connect/egress"
	"github.com/embedauth/connect/proxy"
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
