package egress

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// Class says why an address is special. The zero Class is a public
// address.
type Class string

// Classes of special addresses.
const (
	// Public is an ordinary, globally routable unicast address.
	Public Class = ""
	// Loopback is 127.0.0.0/8 and ::1.
	Loopback Class = "loopback"
	// Private is RFC 1918 (10/8, 172.16/12, 192.168/16), carrier-grade
	// NAT (100.64/10) and IPv6 unique local (fc00::/7).
	Private Class = "private"
	// LinkLocal is 169.254/16 and fe80::/10.
	LinkLocal Class = "link-local"
	// Metadata is a cloud instance metadata (or host agent) address.
	Metadata Class = "metadata"
	// Unspecified is 0.0.0.0/8 and ::.
	Unspecified Class = "unspecified"
	// Multicast is 224/4 and ff00::/8.
	Multicast Class = "multicast"
	// Broadcast is 255.255.255.255.
	Broadcast Class = "broadcast"
	// Documentation is TEST-NET-1/2/3, 2001:db8::/32 and 3fff::/20.
	Documentation Class = "documentation"
	// Benchmarking is 198.18/15 and 2001:2::/48.
	Benchmarking Class = "benchmarking"
	// Reserved is every other special-purpose or reserved range.
	Reserved Class = "reserved"
)

// rangeEntry is one special-purpose range.
type rangeEntry struct {
	prefix netip.Prefix
	class  Class
	// name is the range's name in the IANA registries (or the RFC).
	name string
	// embeds says how an IPv6 range carries an IPv4 address.
	embeds embedding
}

type embedding int

const (
	embedsNone embedding = iota
	// embedsLast32: the low 32 bits (mapped, compatible, translated,
	// NAT64).
	embedsLast32
	// embeds6to4: bits 16 to 47 (RFC 3056).
	embeds6to4
	// embedsTeredo: the server in bits 32 to 63, the client inverted in
	// bits 96 to 127 (RFC 4380).
	embedsTeredo
)

func entry(prefix string, class Class, name string) rangeEntry {
	return rangeEntry{prefix: netip.MustParsePrefix(prefix), class: class, name: name}
}

func embedded(prefix string, class Class, name string, e embedding) rangeEntry {
	r := entry(prefix, class, name)
	r.embeds = e
	return r
}

// specialRanges is the IANA IPv4 Special-Purpose Address Registry, the IANA
// IPv6 Special-Purpose Address Registry, multicast, and the other ranges
// that are not ordinary global unicast. The most specific range that holds
// an address decides its class. IPv6 addresses outside 2000::/3 that no
// entry names are Reserved (see classify).
var specialRanges = []rangeEntry{
	// IPv4 (RFC 6890 and later).
	entry("0.0.0.0/8", Unspecified, `"This network" (RFC 791)`),
	entry("10.0.0.0/8", Private, "Private-Use (RFC 1918)"),
	entry("100.64.0.0/10", Private, "Shared Address Space (RFC 6598)"),
	entry("127.0.0.0/8", Loopback, "Loopback (RFC 1122)"),
	entry("169.254.0.0/16", LinkLocal, "Link Local (RFC 3927)"),
	entry("172.16.0.0/12", Private, "Private-Use (RFC 1918)"),
	entry("192.0.0.0/24", Reserved, "IETF Protocol Assignments (RFC 6890)"),
	entry("192.0.0.0/29", Reserved, "IPv4 Service Continuity Prefix (RFC 7335)"),
	entry("192.0.0.8/32", Reserved, "IPv4 dummy address (RFC 7600)"),
	entry("192.0.0.9/32", Reserved, "Port Control Protocol Anycast (RFC 7723)"),
	entry("192.0.0.10/32", Reserved, "Traversal Using Relays around NAT Anycast (RFC 8155)"),
	entry("192.0.0.170/31", Reserved, "NAT64/DNS64 Discovery (RFC 7050)"),
	entry("192.0.2.0/24", Documentation, "Documentation (TEST-NET-1) (RFC 5737)"),
	entry("192.31.196.0/24", Reserved, "AS112-v4 (RFC 7535)"),
	entry("192.52.193.0/24", Reserved, "AMT (RFC 7450)"),
	entry("192.88.99.0/24", Reserved, "Deprecated 6to4 Relay Anycast (RFC 7526)"),
	entry("192.168.0.0/16", Private, "Private-Use (RFC 1918)"),
	entry("192.175.48.0/24", Reserved, "Direct Delegation AS112 Service (RFC 7534)"),
	entry("198.18.0.0/15", Benchmarking, "Benchmarking (RFC 2544)"),
	entry("198.51.100.0/24", Documentation, "Documentation (TEST-NET-2) (RFC 5737)"),
	entry("203.0.113.0/24", Documentation, "Documentation (TEST-NET-3) (RFC 5737)"),
	entry("224.0.0.0/4", Multicast, "Multicast (RFC 5771)"),
	entry("240.0.0.0/4", Reserved, "Reserved (RFC 1112)"),
	entry("255.255.255.255/32", Broadcast, "Limited Broadcast (RFC 919)"),

	// IPv6 (RFC 6890 and later).
	entry("::/128", Unspecified, "Unspecified Address (RFC 4291)"),
	entry("::1/128", Loopback, "Loopback Address (RFC 4291)"),
	embedded("::/96", Reserved, "IPv4-Compatible Address, deprecated (RFC 4291)", embedsLast32),
	embedded("::ffff:0:0/96", Public, "IPv4-mapped Address (RFC 4291)", embedsLast32),
	embedded("::ffff:0:0:0/96", Reserved, "IPv4-translated Address (RFC 2765)", embedsLast32),
	embedded("64:ff9b::/96", Public, "IPv4-IPv6 Translation (NAT64) (RFC 6052)", embedsLast32),
	entry("64:ff9b:1::/48", Reserved, "Local-Use IPv4/IPv6 Translation (RFC 8215)"),
	entry("100::/64", Reserved, "Discard-Only Address Block (RFC 6666)"),
	entry("100:0:0:1::/64", Reserved, "Dummy IPv6 Prefix (RFC 9780)"),
	entry("2001::/23", Reserved, "IETF Protocol Assignments (RFC 2928)"),
	embedded("2001::/32", Reserved, "TEREDO (RFC 4380)", embedsTeredo),
	entry("2001:1::1/128", Reserved, "Port Control Protocol Anycast (RFC 7723)"),
	entry("2001:1::2/128", Reserved, "Traversal Using Relays around NAT Anycast (RFC 8155)"),
	entry("2001:1::3/128", Reserved, "DNS-SD Service Registration Protocol Anycast (RFC 9665)"),
	entry("2001:2::/48", Benchmarking, "Benchmarking (RFC 5180)"),
	entry("2001:3::/32", Reserved, "AMT (RFC 7450)"),
	entry("2001:4:112::/48", Reserved, "AS112-v6 (RFC 7535)"),
	entry("2001:10::/28", Reserved, "Deprecated ORCHID (RFC 4843)"),
	entry("2001:20::/28", Reserved, "ORCHIDv2 (RFC 7343)"),
	entry("2001:30::/28", Reserved, "Drone Remote ID Protocol Entity Tags (RFC 9374)"),
	entry("2001:db8::/32", Documentation, "Documentation (RFC 3849)"),
	embedded("2002::/16", Reserved, "6to4 (RFC 3056)", embeds6to4),
	entry("2620:4f:8000::/48", Reserved, "Direct Delegation AS112 Service (RFC 7534)"),
	entry("3fff::/20", Documentation, "Documentation (RFC 9637)"),
	entry("5f00::/16", Reserved, "Segment Routing (SRv6) SIDs (RFC 9602)"),
	entry("fc00::/7", Private, "Unique-Local (RFC 4193)"),
	entry("fe80::/10", LinkLocal, "Link-Local Unicast (RFC 4291)"),
	entry("fec0::/10", Reserved, "Site-Local, deprecated (RFC 3879)"),
	entry("ff00::/8", Multicast, "Multicast (RFC 4291)"),
}

// metadataAddrs are the addresses of cloud instance metadata services and
// host agents, refused whatever the policy: AWS, GCP, Azure, Oracle and
// others at 169.254.169.254 (and AWS's IPv6 fd00:ec2::254), the AWS ECS
// task metadata endpoint 169.254.170.2 and EKS Pod Identity agent
// 169.254.170.23 (fd00:ec2::23), Alibaba's 100.100.100.200 and Azure's
// WireServer 168.63.129.16.
var metadataAddrs = []netip.Addr{
	netip.MustParseAddr("169.254.169.254"),
	netip.MustParseAddr("169.254.170.2"),
	netip.MustParseAddr("169.254.170.23"),
	netip.MustParseAddr("fd00:ec2::254"),
	netip.MustParseAddr("fd00:ec2::23"),
	netip.MustParseAddr("100.100.100.200"),
	netip.MustParseAddr("168.63.129.16"),
}

var globalUnicast = netip.MustParsePrefix("2000::/3")

// Classify returns the class of an address, and whether it reached that
// class through an IPv4 address embedded in an IPv6 one (other than the
// IPv4-mapped form, which is the IPv4 address itself).
func Classify(a netip.Addr) (class Class, viaEmbedded bool) {
	a = a.WithZone("").Unmap()
	for _, m := range metadataAddrs {
		if a == m {
			return Metadata, false
		}
	}
	best := -1
	for i, r := range specialRanges {
		if r.prefix.Contains(a) && (best < 0 || r.prefix.Bits() > specialRanges[best].prefix.Bits()) {
			best = i
		}
	}
	if best < 0 {
		if a.Is6() && !globalUnicast.Contains(a) {
			return Reserved, false
		}
		return Public, false
	}
	r := specialRanges[best]
	if r.embeds == embedsNone {
		return r.class, false
	}
	// An embedded IPv4 address that is special decides; otherwise the
	// range's own class does.
	for _, v4 := range embeddedIPv4(a, r.embeds) {
		if c, _ := Classify(v4); c != Public {
			return c, true
		}
	}
	return r.class, false
}

// embeddedIPv4 returns the IPv4 addresses an IPv6 address of a range with
// the embedding e carries.
func embeddedIPv4(a netip.Addr, e embedding) []netip.Addr {
	b := a.As16()
	switch e {
	case embedsLast32:
		return []netip.Addr{netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})}
	case embeds6to4:
		return []netip.Addr{netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]})}
	case embedsTeredo:
		return []netip.Addr{
			netip.AddrFrom4([4]byte{b[4], b[5], b[6], b[7]}),
			netip.AddrFrom4([4]byte{^b[12], ^b[13], ^b[14], ^b[15]}),
		}
	}
	return nil
}

// Policy decides which addresses outbound requests may connect to. The
// zero Policy is the strictest: only public addresses.
type Policy struct {
	// AllowLoopback allows 127.0.0.0/8 and ::1 (and their IPv4-mapped
	// forms).
	AllowLoopback bool
	// AllowPrivateNetworks allows loopback and private networks: RFC 1918,
	// carrier-grade NAT (100.64.0.0/10) and unique local (fc00::/7)
	// addresses. Metadata addresses (169.254.169.254, fd00:ec2::254,
	// 100.100.100.200 and the like), link-local, multicast and every other
	// special-purpose range stay refused.
	AllowPrivateNetworks bool
	// RootCAs, when not nil, are the certificate authorities that
	// transports built by NewTransport trust instead of the system's: a
	// private CA of the providers called, or the test CA of fake
	// providers served over TLS.
	RootCAs *x509.CertPool
	// Setting names, in the messages of refusals, where whoever runs the
	// service allows private networks for this policy: a field of its
	// configuration ("connect.Config.Egress.AllowPrivateNetworks") or an
	// environment variable of its server
	// ("CONNECT_PROVIDER_ALLOW_PRIVATE_NETWORKS=true"). A refusal then
	// reads "address not allowed (loopback and private network addresses
	// are allowed by <Setting>)" (see AddressError.Message), the same
	// words whatever the address, so that they tell nothing about it.
	// Empty, or with AllowPrivateNetworks already set, a refusal names no
	// setting. It changes no decision.
	Setting string
}

// Check returns an *AddressError when the policy refuses a.
func (p Policy) Check(a netip.Addr) error {
	class, via := Classify(a)
	switch {
	case class == Public:
		return nil
	case via:
		// A special IPv4 address inside a translation form is never
		// reached on purpose.
	case class == Loopback && (p.AllowLoopback || p.AllowPrivateNetworks):
		return nil
	case class == Private && p.AllowPrivateNetworks:
		return nil
	}
	ae := &AddressError{Addr: a.WithZone("").Unmap(), Class: class}
	if !p.AllowPrivateNetworks {
		ae.Setting = p.Setting
	}
	return ae
}

// CheckHost checks a URL's host when it is an IP address literal (with or
// without brackets), so that a refused literal is refused before any
// connection is attempted; host names are checked when dialled.
func (p Policy) CheckHost(host string) error {
	if len(host) > 1 && host[0] == '[' && host[len(host)-1] == ']' {
		host = host[1 : len(host)-1]
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return nil
	}
	return p.Check(a)
}

// Control is a [net.Dialer] Control hook: it runs after DNS resolution, on
// each address actually dialled, and refuses those the policy refuses.
func (p Policy) Control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("egress: unexpected dial address %q on %s", address, network)
	}
	return p.Check(ap.Addr())
}

// Dialer returns a dialer that enforces the policy, with the timeouts of
// net/http's default transport.
func (p Policy) Dialer() *net.Dialer {
	return &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Control: p.Control}
}

// DialContext dials with [Policy.Dialer]; an address that is an IP literal
// is checked before anything is opened.
func (p Policy) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	if host, _, err := net.SplitHostPort(address); err == nil {
		if err := p.CheckHost(host); err != nil {
			return nil, &net.OpError{Op: "dial", Net: network, Err: err}
		}
	}
	return p.Dialer().DialContext(ctx, network, address)
}

// NewTransport returns an [net/http.Transport] that enforces the policy at
// dial time, with the settings of net/http's default transport except
// that it ignores the proxy environment variables (a forward proxy would
// be the address checked, not the destination's).
func NewTransport(p Policy) *http.Transport {
	t := &http.Transport{
		DialContext:           p.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	if p.RootCAs != nil {
		t.TLSClientConfig = &tls.Config{RootCAs: p.RootCAs, MinVersion: tls.VersionTLS12}
	}
	return t
}

// AddressError is a connection the policy refused. Its Error text names
// the class but not the address; Addr is for the host's own logs. What
// a caller of the service may read is Message.
type AddressError struct {
	// Addr is the refused address.
	Addr netip.Addr
	// Class says why it was refused.
	Class Class
	// Setting is the refusing Policy's Setting when that policy does not
	// allow private networks yet, else empty.
	Setting string
}

func (e *AddressError) Error() string {
	return fmt.Sprintf("egress: address not allowed (%s)", e.Class)
}

// Remedy returns "loopback and private network addresses are allowed by
// <Setting>", or "" when the refusing policy names no setting.
func (e *AddressError) Remedy() string {
	if e.Setting == "" {
		return ""
	}
	return "loopback and private network addresses are allowed by " + e.Setting
}

// Message is the refusal in words safe to show to whoever asked for the
// request: MessageAddressNotAllowed, followed by Remedy in parentheses
// when there is one. It names neither the address nor its class.
func (e *AddressError) Message() string {
	if r := e.Remedy(); r != "" {
		return MessageAddressNotAllowed + " (" + r + ")"
	}
	return MessageAddressNotAllowed
}

// Is makes errors.Is(err, ErrAddressNotAllowed) true.
func (e *AddressError) Is(target error) bool { return target == ErrAddressNotAllowed }

// ErrAddressNotAllowed matches every *AddressError with errors.Is.
var ErrAddressNotAllowed = errors.New("egress: address not allowed")
