package proxy

import (
	"errors"
	"net/http"

	"github.com/embedauth/connect/egress"
)

var errNotHTTPURL = errors.New("not an absolute http or https URL")

// Policy decides which addresses the proxy may connect to: the service's
// one outbound address policy (see package egress).
type Policy = egress.Policy

// AddressError is a connection the network policy refused (see package
// egress).
type AddressError = egress.AddressError

// NewTransport returns an http.Transport for upstream calls that enforces
// the policy at dial time (egress.NewTransport), never decompresses on its
// own (compressed bodies pass through unless asked otherwise), keeps many
// connections per upstream alive and ignores proxy environment variables.
func NewTransport(p Policy) *http.Transport {
	t := egress.NewTransport(p)
	t.MaxIdleConns = 512
	t.MaxIdleConnsPerHost = 256
	t.DisableCompression = true
	return t
}
