package proxy_test

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"syscall"

	"github.com/embedauth/connect/proxy"
	"github.com/embedauth/connect/store"
)

// Code that calls a provider through a client of Proxy.Client answers a
// call that got no answer as the proxy route does: the status and code
// of the route, and a message that names neither the address nor the
// dial error (the error's cause keeps them, for the host's logs).
func ExampleTransportFailure() {
	// What the client returns when nothing listens at the provider's
	// address.
	err := &url.Error{Op: "Get", URL: "http://10.0.0.5:8080/users", Err: &net.OpError{Op: "dial", Net: "tcp",
		Addr: &net.TCPAddr{IP: net.IPv4(10, 0, 0, 5), Port: 8080}, Err: syscall.ECONNREFUSED}}
	answer := proxy.TransportFailure(err)
	status, code := proxy.HTTPStatus(answer)
	var se *store.Error
	errors.As(answer, &se)
	fmt.Println(status, code)
	fmt.Println(se.Message)
	fmt.Println(se.Err)
	// Output:
	// 502 upstream_error
	// The upstream failed: could not reach the provider.
	// dial tcp 10.0.0.5:8080: connection refused
}
