// Package egress is the outbound address policy of every request the
// service builds from stored or end-user input: calls to providers (the
// proxy, token and refresh requests, credential checks, OAuth 1 and app
// token calls, and whatever later features add) and webhook deliveries.
//
// A [Policy] is checked at dial time, after DNS resolution, by a
// [net.Dialer] Control hook ([Policy.Control], used by [NewTransport] and
// [Policy.Dialer]): a host name that resolves, or re-resolves (DNS
// rebinding), to a refused address cannot get through, and every redirect
// is checked the same way because it dials again.
//
// The strict zero Policy refuses loopback, private (RFC 1918, carrier-grade
// NAT, unique local), link-local, unspecified, multicast and cloud metadata
// addresses, and every other range of the IANA IPv4 and IPv6
// Special-Purpose Address Registries (documentation, benchmarking, 240/4,
// broadcast, 192.0.0.0/24, the AS112 and AMT ranges, discard-only
// 100::/64, ORCHID, 6to4, Teredo, SRv6 SIDs...), and IPv6 addresses
// outside global unicast (2000::/3). IPv6 forms that embed an IPv4
// address are judged by it: an IPv4-mapped address (::ffff:a.b.c.d) is
// that IPv4 address, and a NAT64 address (64:ff9b::/96) is allowed when
// its IPv4 address is a public one; the IPv4-compatible (::/96),
// IPv4-translated (::ffff:0:0:0/96), local-use NAT64 (64:ff9b:1::/48),
// 6to4 and Teredo forms are always refused. [Policy.AllowLoopback] and
// [Policy.AllowPrivateNetworks] open loopback and private networks;
// nothing opens the rest, metadata addresses included.
//
// Failures are described to callers with [Describe]: "address not allowed"
// or "could not reach the provider", with a stable code
// ([CodeAddressNotAllowed], [CodeUnreachable]), never the dial error, the
// address or the port, so that a caller cannot use the service to probe a
// network. A refusal names the setting that allows private networks when
// the policy names one ([Policy.Setting]), in the same words whatever the
// refused address.
//
// A host that hands the service its own [net/http.Client] or
// [net/http.RoundTripper] replaces the policy with its own: build it on
// [NewTransport] (or set its dialer's Control to [Policy.Control]) to keep
// it.
package egress
