package connections

import (
	"strings"
	"testing"

	"github.com/embedauth/connect/egress"
)

func TestAuthParam(t *testing.T) {
	for _, tc := range []struct{ h, want string }{
		{`Bearer resource_metadata="https://a.example/.well-known/oauth-protected-resource"`, "https://a.example/.well-known/oauth-protected-resource"},
		{`Bearer realm="x", resource_metadata=https://b.example/m, scope="a"`, "https://b.example/m"},
		{`Bearer realm="x"`, ""},
		{`Bearer resource_metadata="unterminated`, ""},
	} {
		if got := authParam(tc.h, "resource_metadata"); got != tc.want {
			t.Errorf("authParam(%q) = %q, want %q", tc.h, got, tc.want)
		}
	}
}

func TestCheckMCPURL(t *testing.T) {
	strict, loose := egress.Policy{}, egress.Policy{AllowLoopback: true}
	for _, tc := range []struct {
		u      string
		policy egress.Policy
		ok     bool
	}{
		{"https://mcp.example.com/mcp", strict, true},
		{"http://mcp.example.com/mcp", strict, false},
		{"http://mcp.example.com/mcp", loose, false},
		{"http://127.0.0.1:8080/mcp", loose, true},
		{"http://127.0.0.1:8080/mcp", strict, false},
		{"https://127.0.0.1/mcp", strict, false},
		{"https://user:pw@mcp.example.com/", strict, false},
		{"https://mcp.example.com/${x}", strict, false},
		{"https://mcp.example.com/#frag", strict, false},
		{"ftp://mcp.example.com/", strict, false},
		{"/relative", strict, false},
		{"", strict, false},
	} {
		if err := checkMCPURL(tc.u, tc.policy); (err == nil) != tc.ok {
			t.Errorf("checkMCPURL(%q, %+v) = %v, want ok %v", tc.u, tc.policy, err, tc.ok)
		}
	}
}

func FuzzMCPParsers(f *testing.F) {
	f.Add(`Bearer resource_metadata="https://a.example/x"`, `{"client_id":"c"}`)
	f.Add(`resource_metadata=`, `[]`)
	f.Fuzz(func(t *testing.T, h, body string) {
		v := authParam(h, "resource_metadata")
		if len(v) > len(h) {
			t.Fatalf("authParam made %q out of %q", v, h)
		}
		_ = checkMCPURL(v, egress.Policy{})
		var a registrationAnswer
		if err := decodeJSONObject("application/json", []byte(body), &a); err == nil && !strings.HasPrefix(strings.TrimSpace(body), "{") {
			t.Fatalf("decoded a non-object %q", body)
		}
	})
}
