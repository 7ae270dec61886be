package proxy

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

var errNotHTTPURL = errors.New("not an absolute http or https URL")

// AddressError is a connection the network policy refused: the upstream
// resolved to a loopback, private, link-local or metadata address (see
// Config.AllowLoopback and Config.AllowPrivateNetworks).
type AddressError struct {
	// Addr is the refused IP address.
	Addr netip.Addr
	// Class says why: "loopback", "private", "link-local", "metadata" or
	// "unspecified".
	Class string
}

func (e *AddressError) Error() string {
	return fmt.Sprintf("proxy: the upstream address %s is %s and not allowed", e.Addr, e.Class)
}

var (
	cgnat        = netip.MustParsePrefix("100.64.0.0/10")
	benchmarking = netip.MustParsePrefix("198.18.0.0/15")
	// metadata addresses of cloud instance metadata services: AWS, GCP,
	// Azure and others (169.254.169.254, within link-local), AWS's IPv6
	// fd00:ec2::254, and Alibaba's 100.100.100.200.
	metadataAddrs = []netip.Addr{
		netip.MustParseAddr("169.254.169.254"),
		netip.MustParseAddr("fd00:ec2::254"),
		netip.MustParseAddr("100.100.100.200"),
	}
)

// classify returns why an address is special, or "" for a public one.
func classify(a netip.Addr) string {
	a = a.Unmap()
	for _, m := range metadataAddrs {
		if a == m {
			return "metadata"
		}
	}
	switch {
	case a.IsUnspecified():
		return "unspecified"
	case a.IsLoopback():
		return "loopback"
	case a.IsLinkLocalUnicast(), a.IsLinkLocalMulticast():
		return "link-local"
	case a.IsPrivate(), cgnat.Contains(a), benchmarking.Contains(a), a.IsMulticast(), a.IsInterfaceLocalMulticast():
		return "private"
	}
	if a.Is6() && a.As16()[0] == 0x20 && a.As16()[1] == 0x02 { // 6to4 embeds an IPv4 address
		b := a.As16()
		return classify(netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}))
	}
	return ""
}

// Policy decides which addresses the proxy may connect to.
type Policy struct {
	// AllowLoopback allows 127.0.0.0/8 and ::1.
	AllowLoopback bool
	// AllowPrivateNetworks allows loopback, private (RFC 1918, unique
	// local, carrier-grade NAT) and link-local addresses. Metadata
	// addresses (169.254.169.254 and the like) stay refused.
	AllowPrivateNetworks bool
}

// Check returns an *AddressError when the policy refuses a.
func (p Policy) Check(a netip.Addr) error {
	class := classify(a)
	switch class {
	case "":
		return nil
	case "loopback":
		if p.AllowLoopback || p.AllowPrivateNetworks {
			return nil
		}
	case "private", "link-local":
		if p.AllowPrivateNetworks {
			return nil
		}
	}
	return &AddressError{Addr: a.Unmap(), Class: class}
}

// control is a net.Dialer Control hook: it runs after DNS resolution, on
// the address actually dialled, so a name that resolves (or re-resolves)
// to a refused address cannot get through.
func (p Policy) control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("proxy: unexpected dial address %q", address)
	}
	return p.Check(ap.Addr())
}

// NewTransport returns an http.Transport for upstream calls that enforces
// the policy at dial time, never decompresses on its own (compressed bodies
// pass through unless asked otherwise) and ignores proxy environment
// variables.
func NewTransport(p Policy) *http.Transport {
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Control: p.control}
	return &http.Transport{
		DialContext:           d.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          512,
		MaxIdleConnsPerHost:   256,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: 1 * time.Second,
		DisableCompression:    true,
	}
}
