package integrations_test

import (
	"fmt"
	"net/url"
	"time"

	"github.com/embedauth/connect/integrations"
)

func ExampleParseTemplate() {
	t, err := integrations.ParseTemplate("Basic ${base64(${credentials.username}:${hmacSha1Hex(${now:ddd, DD MMM YYYY HH:mm:ss ZZ}\n${method}\n${host}\n${path}\n${params}, ${credentials.password})})}")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(t.Names(), t.PerRequest())

	u, _ := url.Parse("https://api.example.com/v1/items?b=2&a=1")
	vars := integrations.TemplateVars{
		Credentials: map[string]string{"username": "user", "password": "secret"},
		Request:     &integrations.TemplateRequest{Method: "GET", URL: u, Endpoint: "/v1/items"},
		Now:         func() time.Time { return time.Date(2024, 1, 15, 10, 30, 0, 0, time.UTC) },
	}
	v, err := t.Eval(&vars)
	fmt.Println(v, err)

	_, err = integrations.ParseTemplate("${base64(${connectionConfig.subdomain}")
	fmt.Println(err)
	// Output:
	// [credentials.username method host path params credentials.password] true
	// Basic dXNlcjo2MTkyYmU1OWQxOTIwODBjOWVjMTM4MjAyOTEzZGJhMDA3MzI2NTNk <nil>
	// integrations: template "${base64(${connectionConfig.subdomain}": unterminated call of base64: missing ")" (at byte 2)
}
