package egress

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
)

// lastAddr returns the last address of a prefix.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	for i := range b {
		bit := i * 8
		switch {
		case bit >= p.Bits():
			b[i] = 0xff
		case bit+8 > p.Bits():
			b[i] |= byte(0xff >> (p.Bits() - bit))
		}
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// allowedBy reports whether a class may be allowed by an option.
func allowedBy(p Policy, c Class) bool {
	switch c {
	case Public:
		return true
	case Loopback:
		return p.AllowLoopback || p.AllowPrivateNetworks
	case Private:
		return p.AllowPrivateNetworks
	}
	return false
}

// TestSpecialRanges checks every entry of the registry table: its first
// and last addresses are refused by the strict policy, and AllowLoopback
// and AllowPrivateNetworks open only what they name.
func TestSpecialRanges(t *testing.T) {
	t.Parallel()
	for _, r := range specialRanges {
		t.Run(r.prefix.String(), func(t *testing.T) {
			t.Parallel()
			for _, a := range []netip.Addr{r.prefix.Masked().Addr(), lastAddr(r.prefix)} {
				class, via := Classify(a)
				if class == Public {
					t.Fatalf("%s (%s, %s) is classified public", a, r.prefix, r.name)
				}
				if err := (Policy{}).Check(a); err == nil {
					t.Errorf("the strict policy allows %s (%s)", a, r.name)
				} else if !errors.Is(err, ErrAddressNotAllowed) {
					t.Errorf("Check(%s) = %v, not an address refusal", a, err)
				}
				for _, p := range []Policy{{AllowLoopback: true}, {AllowPrivateNetworks: true}} {
					err := p.Check(a)
					if want := !via && allowedBy(p, class); (err == nil) != want {
						t.Errorf("%+v on %s (%s, class %s): %v", p, a, r.name, class, err)
					}
				}
			}
		})
	}
}

func TestClassify(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		addr  string
		class Class
		via   bool
	}{
		// Public.
		{"8.8.8.8", Public, false},
		{"1.1.1.1", Public, false},
		{"2606:4700::1111", Public, false},
		{"::ffff:8.8.8.8", Public, false},
		{"64:ff9b::808:808", Public, false}, // NAT64 of a public address
		// Loopback, private, link-local, unspecified.
		{"127.0.0.1", Loopback, false},
		{"127.8.9.10", Loopback, false},
		{"::1", Loopback, false},
		{"::ffff:127.0.0.1", Loopback, false},
		{"10.0.0.1", Private, false},
		{"172.16.5.4", Private, false},
		{"172.31.255.255", Private, false},
		{"192.168.1.1", Private, false},
		{"100.64.0.1", Private, false},
		{"fd12::1", Private, false},
		{"169.254.1.1", LinkLocal, false},
		{"fe80::1", LinkLocal, false},
		{"fe80::1%eth0", LinkLocal, false},
		{"0.0.0.0", Unspecified, false},
		{"0.1.2.3", Unspecified, false},
		{"::", Unspecified, false},
		// Metadata, whatever range holds them.
		{"169.254.169.254", Metadata, false},
		{"169.254.170.2", Metadata, false},
		{"169.254.170.23", Metadata, false},
		{"fd00:ec2::254", Metadata, false},
		{"fd00:ec2::23", Metadata, false},
		{"100.100.100.200", Metadata, false},
		{"168.63.129.16", Metadata, false},
		{"::ffff:169.254.169.254", Metadata, false},
		// IPv4 inside IPv6.
		{"64:ff9b::a9fe:a9fe", Metadata, true},                    // NAT64 of 169.254.169.254
		{"64:ff9b::7f00:1", Loopback, true},                       // NAT64 of 127.0.0.1
		{"64:ff9b::a00:1", Private, true},                         // NAT64 of 10.0.0.1
		{"::7f00:1", Loopback, true},                              // IPv4-compatible 127.0.0.1
		{"::a9fe:a9fe", Metadata, true},                           // IPv4-compatible 169.254.169.254
		{"::808:808", Reserved, false},                            // IPv4-compatible, deprecated
		{"::ffff:0:7f00:1", Loopback, true},                       // IPv4-translated 127.0.0.1
		{"::ffff:0:808:808", Reserved, false},                     // IPv4-translated
		{"2002:7f00:1::", Loopback, true},                         // 6to4 of 127.0.0.1
		{"2002:a9fe:a9fe::1", Metadata, true},                     // 6to4 of 169.254.169.254
		{"2002:808:808::1", Reserved, false},                      // 6to4 of a public address
		{"2001:0:4136:e378:8000:63bf:80ff:fffe", Loopback, true},  // Teredo, client 127.0.0.1
		{"2001:0:4136:e378:8000:63bf:f7f7:f7f7", Reserved, false}, // Teredo, client 8.8.8.8
		{"64:ff9b:1::1", Reserved, false},
		// Other special-purpose ranges.
		{"192.0.0.1", Reserved, false},
		{"192.0.0.9", Reserved, false},
		{"192.0.2.10", Documentation, false},
		{"198.51.100.7", Documentation, false},
		{"203.0.113.250", Documentation, false},
		{"198.18.0.1", Benchmarking, false},
		{"198.19.255.255", Benchmarking, false},
		{"192.88.99.1", Reserved, false},
		{"192.31.196.1", Reserved, false},
		{"192.52.193.1", Reserved, false},
		{"192.175.48.1", Reserved, false},
		{"224.0.0.1", Multicast, false},
		{"239.255.255.250", Multicast, false},
		{"240.0.0.1", Reserved, false},
		{"255.255.255.254", Reserved, false},
		{"255.255.255.255", Broadcast, false},
		{"100::1", Reserved, false},
		{"100:0:0:1::1", Reserved, false},
		{"2001:2::1", Benchmarking, false},
		{"2001:3::1", Reserved, false},
		{"2001:4:112::1", Reserved, false},
		{"2001:10::1", Reserved, false},
		{"2001:20::1", Reserved, false},
		{"2001:30::1", Reserved, false},
		{"2001:db8::1", Documentation, false},
		{"3fff::1", Documentation, false},
		{"2620:4f:8000::1", Reserved, false},
		{"5f00::1", Reserved, false},
		{"fec0::1", Reserved, false},
		{"ff02::1", Multicast, false},
		{"4000::1", Reserved, false}, // outside global unicast
		{"::2", Unspecified, true},   // IPv4-compatible 0.0.0.2
	} {
		a := netip.MustParseAddr(tc.addr)
		class, via := Classify(a)
		if class != tc.class || via != tc.via {
			t.Errorf("Classify(%s) = %q, %v; want %q, %v", tc.addr, class, via, tc.class, tc.via)
		}
		err := (Policy{}).Check(a)
		if (err == nil) != (tc.class == Public) {
			t.Errorf("strict policy on %s: %v", tc.addr, err)
		}
		for _, p := range []Policy{{AllowLoopback: true}, {AllowPrivateNetworks: true}} {
			if err := p.Check(a); (err == nil) != (!tc.via && allowedBy(p, tc.class)) {
				t.Errorf("%+v on %s: %v", p, tc.addr, err)
			}
		}
	}
}

func TestCheckHostAndControl(t *testing.T) {
	t.Parallel()
	strict := Policy{}
	for host, refused := range map[string]bool{
		"127.0.0.1": true, "[::1]": true, "::1": true, "[64:ff9b::a9fe:a9fe]": true, "[::7f00:1]": true,
		"example.com": false, "8.8.8.8": false, "[2606:4700::1111]": false, "0.0.0.0": true,
	} {
		if err := strict.CheckHost(host); (err != nil) != refused {
			t.Errorf("CheckHost(%q) = %v", host, err)
		}
	}
	if err := strict.Control("tcp4", "127.0.0.1:80", nil); !AddressNotAllowed(err) {
		t.Errorf("Control on loopback: %v", err)
	}
	if err := strict.Control("tcp6", "[fe80::1%eth0]:80", nil); !AddressNotAllowed(err) {
		t.Errorf("Control on link-local with a zone: %v", err)
	}
	if err := strict.Control("tcp4", "8.8.8.8:443", nil); err != nil {
		t.Errorf("Control on a public address: %v", err)
	}
	if err := strict.Control("tcp", "not an address", nil); err == nil || AddressNotAllowed(err) {
		t.Errorf("Control on garbage: %v", err)
	}
	e := &AddressError{Addr: netip.MustParseAddr("10.1.2.3"), Class: Private}
	if strings.Contains(e.Error(), "10.1.2.3") {
		t.Errorf("the error text names the address: %s", e)
	}
}

// TestRefusalNamesTheSetting: a refusal names the policy's Setting, in
// the same words whatever the refused address (so that they give nothing
// of it away), and none when the policy allows private networks already
// or names no setting.
func TestRefusalNamesTheSetting(t *testing.T) {
	t.Parallel()
	const setting = "Config.Egress.AllowPrivateNetworks"
	const want = "address not allowed (loopback and private network addresses are allowed by " + setting + ")"
	for _, p := range []Policy{{Setting: setting}, {Setting: setting, AllowLoopback: true}} {
		for _, a := range []string{"10.0.0.7", "127.0.0.1", "169.254.169.254", "192.0.2.1", "fd00::1"} {
			err := p.Check(netip.MustParseAddr(a))
			if p.AllowLoopback && a == "127.0.0.1" {
				if err != nil {
					t.Errorf("%+v refused %s: %v", p, a, err)
				}
				continue
			}
			var ae *AddressError
			if !errors.As(err, &ae) || ae.Message() != want {
				t.Errorf("%+v refused %s with %v, want the message %q", p, a, err, want)
				continue
			}
			if f := Describe(&net.OpError{Op: "dial", Net: "tcp", Err: err}); f.Code != CodeAddressNotAllowed || f.Message != want {
				t.Errorf("Describe(refusal of %s) = %+v", a, f)
			}
			if strings.Contains(ae.Message(), a) || strings.Contains(ae.Message(), string(ae.Class)+")") {
				t.Errorf("the message names the address or its class: %s", ae.Message())
			}
		}
	}
	for _, p := range []Policy{{}, {AllowPrivateNetworks: true, Setting: setting}} {
		err := p.Check(netip.MustParseAddr("169.254.169.254"))
		var ae *AddressError
		if !errors.As(err, &ae) || ae.Message() != "address not allowed" || ae.Remedy() != "" {
			t.Errorf("%+v: %v, want the message without a setting", p, err)
		}
	}
}

// TestTransportDialTime shows the check at dial time: a name that resolves
// to loopback is refused, and so is a redirect from an allowed address to
// a refused one.
func TestTransportDialTime(t *testing.T) {
	t.Parallel()
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") }))
	defer target.Close()
	_, port, _ := net.SplitHostPort(target.Listener.Addr().String())

	strict := &http.Client{Transport: NewTransport(Policy{})}
	for _, u := range []string{target.URL, "http://localhost:" + port, "http://[::ffff:127.0.0.1]:" + port} {
		resp, err := strict.Get(u)
		if err == nil {
			resp.Body.Close()
			t.Fatalf("GET %s went through the strict policy", u)
		}
		if !AddressNotAllowed(err) {
			t.Errorf("GET %s: %v, want an address refusal", u, err)
		}
		if f := Describe(err); f.Code != CodeAddressNotAllowed || f.Message != "address not allowed" {
			t.Errorf("Describe = %+v", f)
		}
	}

	loop := &http.Client{Transport: NewTransport(Policy{AllowLoopback: true})}
	resp, err := loop.Get("http://localhost:" + port)
	if err != nil {
		t.Fatalf("loopback allowed: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "ok" {
		t.Errorf("body %q", b)
	}

	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://10.255.255.1:"+port+"/", http.StatusFound)
	}))
	defer redirect.Close()
	if resp, err := loop.Get(redirect.URL); err == nil {
		resp.Body.Close()
		t.Fatal("a redirect to a private address was followed")
	} else if !AddressNotAllowed(err) {
		t.Errorf("redirect to a private address: %v", err)
	}
}

func TestDescribe(t *testing.T) {
	t.Parallel()
	if Describe(nil) != nil {
		t.Error("Describe(nil)")
	}
	closed := httptest.NewServer(http.NotFoundHandler())
	u := closed.URL
	closed.Close()
	_, err := (&http.Client{Transport: NewTransport(Policy{AllowLoopback: true})}).Get(u)
	if err == nil {
		t.Fatal("a closed port answered")
	}
	f := Describe(err)
	if f.Code != CodeUnreachable || f.Error() != "could not reach the provider" || errors.Is(f, ErrAddressNotAllowed) {
		t.Errorf("Describe(%v) = %+v", err, f)
	}
	if f := Describe(fmt.Errorf("wrapped: %w", &AddressError{Class: Metadata})); !errors.Is(f, ErrAddressNotAllowed) {
		t.Errorf("Describe of a wrapped refusal = %+v", f)
	}
}
