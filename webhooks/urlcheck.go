package webhooks

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/embedauth/connect/egress"
	"github.com/embedauth/connect/store"
)

// Codes of a URLError.
const (
	// CodeInvalidURL is a webhook URL that is not an absolute http(s) URL
	// of at most MaxURLLength characters without user name or password.
	CodeInvalidURL = "invalid_url"
	// CodeURLNotAllowed is a webhook URL whose host the address policy
	// refuses: an IP address, localhost, or a host name that resolves
	// only to refused addresses.
	CodeURLNotAllowed = "address_not_allowed"
)

// MaxURLLength is the longest webhook URL.
const MaxURLLength = 2048

// urlLookupTimeout bounds the resolution of a webhook URL's host name when
// the URL is set.
const urlLookupTimeout = 2 * time.Second

// URLError is a webhook URL refused when it is set (see
// DeliveryConfig.CheckURL). Its message names no resolved address.
type URLError struct {
	// Code is CodeInvalidURL or CodeURLNotAllowed.
	Code string
	// Reason says why, to follow the field's name ("must be ...").
	Reason string
}

func (e *URLError) Error() string { return "webhook URL " + e.Reason }

// CheckURL checks a webhook URL when it is set (an environment's webhook
// URLs, a connection's or a connect session's webhook_url_override), so
// that a URL no delivery could reach is refused at once rather than failing
// its deliveries for a day. It returns a *URLError when:
//
//   - the URL is not an absolute http or https URL of at most
//     MaxURLLength characters, or holds a user name or password (the
//     receiver authenticates webhooks by their signature);
//   - its host is an IP address that Policy refuses (loopback, private,
//     link-local, metadata and the other special addresses, as package
//     egress classifies them), or localhost and its subdomains, which
//     are loopback;
//   - its host name resolves, now, only to addresses that Policy
//     refuses.
//
// A host name that does not resolve (yet) is accepted: the check at dial
// time, which applies to every attempt, stays the guard, as it does for a
// name whose addresses change later. With a Client of the host's (which
// replaces Policy) only the URL's form is checked.
func (c DeliveryConfig) CheckURL(ctx context.Context, raw string) error {
	return checkURL(ctx, c, raw, net.DefaultResolver.LookupNetIP)
}

// lookupFunc resolves a host name, as net.Resolver.LookupNetIP.
type lookupFunc func(ctx context.Context, network, host string) ([]netip.Addr, error)

func checkURL(ctx context.Context, c DeliveryConfig, raw string, lookup lookupFunc) error {
	u, err := url.Parse(raw)
	switch {
	case len(raw) > MaxURLLength || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.Opaque != "":
		return &URLError{Code: CodeInvalidURL, Reason: fmt.Sprintf("must be an absolute http or https URL of at most %d characters", MaxURLLength)}
	case u.User != nil:
		return &URLError{Code: CodeInvalidURL, Reason: "must not hold a user name or password: receivers authenticate webhooks by their signature"}
	case c.Client != nil:
		return nil // the host's client enforces its own policy
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	if a, err := netip.ParseAddr(host); err == nil {
		return refusedAddress(c.Policy, []netip.Addr{a}, false)
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return refusedAddress(c.Policy, []netip.Addr{netip.IPv6Loopback()}, false)
	}
	lctx, cancel := context.WithTimeout(ctx, urlLookupTimeout)
	defer cancel()
	addrs, err := lookup(lctx, "ip", host)
	if err != nil || len(addrs) == 0 {
		return nil // not resolvable now: checked when dialled
	}
	return refusedAddress(c.Policy, addrs, true)
}

// refusedAddress returns the URLError of a host whose addresses (the
// literal one, or those its name resolved to) the policy all refuses,
// naming the class of the first and the setting that allows it, or nil
// when the policy allows one of them.
func refusedAddress(p egress.Policy, addrs []netip.Addr, resolved bool) error {
	var first *egress.AddressError
	for _, a := range addrs {
		var ae *egress.AddressError
		err := p.Check(a)
		if err == nil || !errors.As(err, &ae) {
			return nil
		}
		if first == nil {
			first = ae
		}
	}
	var why string
	switch {
	case (first.Class == egress.Loopback || first.Class == egress.Private) && first.Setting != "":
		why = "which the webhook address policy refuses (" + first.Remedy() + ")"
	case first.Class == egress.Loopback:
		why = "which the webhook address policy refuses: a host whose receivers run on its own machine allows them with Config.Webhooks.Policy.AllowLoopback (or AllowPrivateNetworks)"
	case first.Class == egress.Private:
		why = "which the webhook address policy refuses: a host whose receivers are on its own network allows them with Config.Webhooks.Policy.AllowPrivateNetworks"
	default:
		why = "which webhooks never reach"
	}
	what := fmt.Sprintf("is a %s address", first.Class)
	if strings.ContainsRune("aeiou", rune(first.Class[0])) {
		what = fmt.Sprintf("is an %s address", first.Class)
	}
	if resolved {
		what = fmt.Sprintf("has a host name that resolves only to %s addresses", first.Class)
	}
	return &URLError{Code: CodeURLNotAllowed, Reason: what + ", " + why}
}

// CheckURLField is CheckURL for a field of a request: a refused URL is a
// 400 invalid_body naming path (such as "webhook_url_override"), whose
// errors[] entry has the URLError's code and reason. It is an
// environments.WebhookURLCheck.
func (c DeliveryConfig) CheckURLField(ctx context.Context, rawURL string, path ...string) error {
	err := c.CheckURL(ctx, rawURL)
	var ue *URLError
	if !errors.As(err, &ue) {
		return err
	}
	return store.Invalid("invalid_body", fmt.Sprintf("The %s %s.", strings.Join(path, "."), ue.Reason),
		store.FieldError{Code: ue.Code, Message: ue.Reason, Path: path})
}
