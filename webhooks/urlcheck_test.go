package webhooks

import (
	"context"
	"errors"
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"github.com/embedauth/connect/egress"
	"github.com/embedauth/connect/store"
)

// fakeLookup resolves the names of a table; others do not resolve.
func fakeLookup(names map[string][]string) lookupFunc {
	return func(_ context.Context, _, host string) ([]netip.Addr, error) {
		list, ok := names[host]
		if !ok {
			return nil, errors.New("no such host")
		}
		var out []netip.Addr
		for _, a := range list {
			out = append(out, netip.MustParseAddr(a))
		}
		return out, nil
	}
}

func TestCheckURL(t *testing.T) {
	t.Parallel()
	lookup := fakeLookup(map[string][]string{
		"public.example.com":   {"93.184.215.14"},
		"internal.example.com": {"10.1.2.3", "192.168.0.9"},
		"mixed.example.com":    {"10.1.2.3", "93.184.215.14"},
		"loop.example.com":     {"127.0.0.1", "::1"},
		"meta.example.com":     {"169.254.169.254"},
	})
	strict, loop, private := DeliveryConfig{}, DeliveryConfig{Policy: egress.Policy{AllowLoopback: true}},
		DeliveryConfig{Policy: egress.Policy{AllowPrivateNetworks: true}}
	own := DeliveryConfig{Client: http.DefaultClient}
	for _, tc := range []struct {
		cfg     DeliveryConfig
		url     string
		code    string // "" when accepted
		mention string
	}{
		{strict, "https://public.example.com/hooks", "", ""},
		{strict, "https://93.184.215.14/hooks", "", ""},
		{strict, "https://not-yet.example.com/hooks", "", ""}, // does not resolve: checked when dialled
		{strict, "https://mixed.example.com/hooks", "", ""},   // one address allowed: checked when dialled
		{strict, "ftp://public.example.com/", CodeInvalidURL, "http or https"},
		{strict, "/relative", CodeInvalidURL, "absolute"},
		{strict, "https:///nohost", CodeInvalidURL, "absolute"},
		{strict, "https://" + strings.Repeat("a", MaxURLLength) + ".com/", CodeInvalidURL, "2048"},
		{strict, "https://user:secret@public.example.com/", CodeInvalidURL, "user name or password"},
		{strict, "http://127.0.0.1:8080/h", CodeURLNotAllowed, "AllowLoopback"},
		{strict, "http://[::1]/h", CodeURLNotAllowed, "loopback"},
		{strict, "http://localhost:3000/h", CodeURLNotAllowed, "AllowLoopback"},
		{strict, "http://api.localhost./h", CodeURLNotAllowed, "loopback"},
		{strict, "http://loop.example.com/h", CodeURLNotAllowed, "resolves only to loopback"},
		{strict, "http://10.0.0.5/h", CodeURLNotAllowed, "AllowPrivateNetworks"},
		{strict, "http://internal.example.com/h", CodeURLNotAllowed, "resolves only to private addresses"},
		{strict, "http://169.254.169.254/latest/meta-data", CodeURLNotAllowed, "never reach"},
		{strict, "http://meta.example.com/h", CodeURLNotAllowed, "never reach"},
		{strict, "http://[::ffff:10.0.0.1]/h", CodeURLNotAllowed, "private"},
		{loop, "http://127.0.0.1:8080/h", "", ""},
		{loop, "http://localhost/h", "", ""},
		{loop, "http://10.0.0.5/h", CodeURLNotAllowed, "AllowPrivateNetworks"},
		{private, "http://10.0.0.5/h", "", ""},
		{private, "http://internal.example.com/h", "", ""},
		{private, "http://169.254.169.254/h", CodeURLNotAllowed, "never reach"},
		{own, "http://127.0.0.1/h", "", ""}, // the host's client enforces its policy
		{own, "https://u:p@x.example.com/", CodeInvalidURL, "user name"},
	} {
		err := checkURL(t.Context(), tc.cfg, tc.url, lookup)
		var ue *URLError
		switch {
		case tc.code == "" && err != nil:
			t.Errorf("%s (%+v): refused: %v", tc.url, tc.cfg.Policy, err)
		case tc.code == "":
		case !errors.As(err, &ue) || ue.Code != tc.code || !strings.Contains(ue.Reason, tc.mention):
			t.Errorf("%s (%+v): %v, want %s mentioning %q", tc.url, tc.cfg.Policy, err, tc.code, tc.mention)
		case strings.Contains(ue.Reason, "10.1.2.3") || strings.Contains(ue.Reason, "127.0.0.1") && !strings.Contains(tc.url, "127.0.0.1"):
			t.Errorf("%s: the reason names a resolved address: %s", tc.url, ue.Reason)
		}
	}
}

func TestCheckURLField(t *testing.T) {
	t.Parallel()
	err := DeliveryConfig{}.CheckURLField(t.Context(), "http://127.0.0.1/h", "webhook_urls", "1")
	var se *store.Error
	if !errors.As(err, &se) || !errors.Is(err, store.ErrInvalid) || se.Code != "invalid_body" || len(se.Errors) != 1 ||
		strings.Join(se.Errors[0].Path, ".") != "webhook_urls.1" || se.Errors[0].Code != CodeURLNotAllowed ||
		!strings.HasPrefix(se.Message, "The webhook_urls.1 is a loopback address") {
		t.Errorf("CheckURLField: %#v", err)
	}
	if err := (DeliveryConfig{}).CheckURLField(t.Context(), "https://93.184.215.14/h", "x"); err != nil {
		t.Errorf("a public address: %v", err)
	}
}
