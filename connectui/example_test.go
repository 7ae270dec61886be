package connectui_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/embedauth/connect/connectui"
)

// Mount the connect UI on a mux of your own (connect.Service mounts it at
// /connect/ in Handler and ConnectHandler already). The page calls the API
// at APIURL unless its apiURL query parameter names an allowed origin.
func ExampleHandler_Register() {
	ui, err := connectui.New(connectui.Config{APIURL: "https://connect.example.com"})
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	ui.Register(mux, "/connect/")
	srv := httptest.NewServer(mux)
	defer srv.Close()

	resp, err := http.Get(srv.URL + "/connect/?session_token=nango_connect_session_example")
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	csp := resp.Header.Get("Content-Security-Policy")
	fmt.Println(resp.StatusCode, resp.Header.Get("Content-Type"))
	fmt.Println(strings.Contains(csp, "connect-src 'self' https://connect.example.com;"))

	resp, err = http.Get(srv.URL + "/connect/ui/app.js")
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode, resp.Header.Get("Content-Type"))
	// Output:
	// 200 text/html; charset=utf-8
	// true
	// 200 text/javascript; charset=utf-8
}
