package egress_test

import (
	"fmt"
	"net/http"
	"net/netip"

	"github.com/embedauth/connect/egress"
)

// A client for requests built from stored or end-user input: every
// connection it opens, redirects included, is checked after DNS
// resolution.
func ExampleNewTransport() {
	client := &http.Client{Transport: egress.NewTransport(egress.Policy{})}
	_, err := client.Get("http://[64:ff9b::a9fe:a9fe]/latest/meta-data/") // NAT64 form of 169.254.169.254
	f := egress.Describe(err)
	fmt.Println(f.Code, "-", f.Message)
	// Output: address_not_allowed - address not allowed
}

func ExamplePolicy_Check() {
	private := egress.Policy{AllowPrivateNetworks: true}
	for _, a := range []string{"10.0.0.7", "169.254.169.254", "2606:4700::1111"} {
		fmt.Println(a, private.Check(netip.MustParseAddr(a)) == nil)
	}
	// Output:
	// 10.0.0.7 true
	// 169.254.169.254 false
	// 2606:4700::1111 true
}

// A refusal names the setting that allows private networks, when the
// policy names one: here the field of the host's configuration.
func ExamplePolicy_Setting() {
	policy := egress.Policy{Setting: "Config.Egress.AllowPrivateNetworks"}
	client := &http.Client{Transport: egress.NewTransport(policy)}
	_, err := client.Get("http://10.0.0.7/")
	fmt.Println(egress.Describe(err).Message)
	// Output: address not allowed (loopback and private network addresses are allowed by Config.Egress.AllowPrivateNetworks)
}
