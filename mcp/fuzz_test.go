package mcp

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/embedauth/connect/internal/httpapi"
)

// FuzzManageArguments: any arguments of any management tool are either
// refused with a message or make a request; nothing panics.
func FuzzManageArguments(f *testing.F) {
	f.Add(8, `{"method":"GET","endpoint":"/a/../b?x#y","connection_id":"c","provider_config_key":"k","params":{"a":[1,{"b":null}]},"headers":{"X":true},"data":"x"}`)
	f.Add(1, `{"unique_key":"a/b","include":"credentials"}`)
	f.Add(6, `{"limit":1e3,"page":-0}`)
	f.Add(5, `{"end_user":{"id":"u"},"tags":{"a":"b"}}`)
	f.Fuzz(func(t *testing.T, i int, args string) {
		if i < 0 {
			i = -i
		}
		at := manageCatalogue[i%len(manageCatalogue)]
		values, err := at.arguments(json.RawMessage(args))
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an empty refusal")
			}
			return
		}
		req, err := at.request(context.Background(), values)
		if err != nil {
			return
		}
		if !strings.HasPrefix(req.URL.Path, "/") || (at.proxy && !strings.HasPrefix(req.URL.Path, "/proxy/")) {
			t.Fatalf("%s built %s", at.tool.Name, req.URL)
		}
	})
}

// FuzzFastCall: any body either is answered as a tools/call, as JSON, or
// is left to the SDK; nothing panics.
func FuzzFastCall(f *testing.F) {
	f.Add(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"a":1}}}`)
	f.Add(`{"jsonrpc":"2.0","id":"1","method":"tools/call","params":{"name":"fail"}}`)
	f.Add(`[{"jsonrpc":"2.0","id":1,"method":"tools/call"}]`)
	f.Add(`{"jsonrpc":"2.0","id":1e3,"method":"tools/call","params":{"name":"echo","arguments":[]}}`)
	s := New(Config{Actions: fakeActions{}, API: http.NotFoundHandler()})
	rq := &request{principal: &httpapi.Principal{EnvironmentID: 1}, integration: "fx", connectionID: "c1", header: http.Header{}}
	f.Fuzz(func(t *testing.T, body string) {
		w := httptest.NewRecorder()
		r := httptest.NewRequest("POST", "/mcp", strings.NewReader(body))
		if !s.actions.fastCall(context.Background(), w, r, rq, []byte(body)) {
			if w.Body.Len() != 0 {
				t.Fatal("wrote an answer and left the request to the SDK")
			}
			return
		}
		if !json.Valid(w.Body.Bytes()) || w.Code != 200 {
			t.Fatalf("answered %d %s", w.Code, w.Body)
		}
	})
}

// TestProxyEndpointStaysUnderProxy: the proxy tool's endpoint cannot
// leave /proxy/ for another route of the API.
func TestProxyEndpointStaysUnderProxy(t *testing.T) {
	i := 0
	for i = range manageCatalogue {
		if manageCatalogue[i].tool.Name == "proxy_request" {
			break
		}
	}
	at := manageCatalogue[i]
	for _, ep := range []string{"../integrations", "a/../../connections", "./x", "/..", "a/%2e%2e/b"} {
		values, err := at.arguments(json.RawMessage(`{"method":"GET","connection_id":"c","provider_config_key":"k","endpoint":` + strings.TrimSpace(mustJSON(ep)) + `}`))
		if err != nil {
			t.Fatal(err)
		}
		req, err := at.request(context.Background(), values)
		if err == nil && !strings.HasPrefix(req.URL.EscapedPath(), "/proxy/") {
			t.Errorf("%q built %s", ep, req.URL)
		}
		if err == nil && strings.Contains("/"+ep+"/", "/../") {
			t.Errorf("%q was accepted: %s", ep, req.URL)
		}
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
