package connect_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

var fuzzRoutes = []struct{ method, path string }{
	{"POST", "/integrations"},
	{"PATCH", "/integrations/gh"},
	{"POST", "/connections"},
	{"POST", "/connection"},
	{"POST", "/connections/metadata"},
	{"PATCH", "/connections/metadata"},
	{"POST", "/connection/c1/metadata"},
	{"PATCH", "/connections/c1?provider_config_key=gh"},
}

// FuzzRequestBodies sends arbitrary bodies to every route that takes one and
// checks that none is answered with a 5xx.
func FuzzRequestBodies(f *testing.F) {
	for _, s := range []string{
		`{"provider":"github","unique_key":"x"}`,
		`{"provider_config_key":"gh","connection_id":"c9","access_token":"a","expires_in":60}`,
		`{"provider_config_key":"oa","credentials":{"type":"API_KEY","apiKey":"k"}}`,
		`{"metadata":{"a":[1,{"b":null}]},"connection_id":["c1","c2"],"provider_config_key":"gh"}`,
		`{"tags":{"A":"b"},"end_user":{"id":"u","tags":{"x":"y"}},"webhook_url_override":"https://x.example"}`,
		`{"expires_at":"2030-01-01","provider_config_key":"gh","access_token":"t"}`,
		`{"unique_key":null,"credentials":{"type":"APP"}}`,
		`[]`, `null`, `{"a":1}{`, "\x00",
		`{"provider":"github","unique_key":"x","unique_key":"y"}`,
		`{"metadata":{"a":{"b":1,"b":2}},"connection_id":"c1","provider_config_key":"gh"}`,
		"{\"provider\":\"github\",\"unique_key\":\"x\",\"display_name\":\"\xff\"}",
		`{"tags":{"a":"\u0000"}}`, `{"tags":{"a":"\ud800"}}`,
		`[{"provider_config_key":"oa","api_key":"k"},{"provider_config_key":"gh","connection_id":"c1","access_token":"a","no_expiration":true}]`,
		`[{"provider_config_key":"gh","connection_id":"x"},1,null,{"provider_config_key":"nope"}]`,
		`[{"provider_config_key":"oa","connection_id":"d","api_key":"k"},{"provider_config_key":"oa","connection_id":"d","api_key":"k"}]`,
	} {
		for i := range fuzzRoutes {
			f.Add(uint8(i), s)
		}
	}
	bu := setup(f, sqliteBackend(f))
	seed(f, bu)
	h := bu.svc.Handler()
	f.Fuzz(func(t *testing.T, route uint8, body string) {
		rt := fuzzRoutes[int(route)%len(fuzzRoutes)]
		r := httptest.NewRequest(rt.method, rt.path, strings.NewReader(body))
		r.Header.Set("Authorization", "Bearer "+bu.key)
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Provider-Config-Key", "gh")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code >= 500 || w.Code < 200 {
			t.Fatalf("%s %s with %q = %d %s", rt.method, rt.path, body, w.Code, w.Body)
		}
		if w.Code >= 400 && !strings.Contains(w.Body.String(), `"code"`) && !strings.Contains(w.Body.String(), `"message"`) {
			t.Fatalf("%s %s error body without code: %s", rt.method, rt.path, w.Body)
		}
	})
}

// FuzzRequestEdge sends arbitrary paths, queries and header values to
// every handler of the Service and checks that none is answered with a
// 5xx or carries a Store's text, and that whatever is refused is refused
// with a code.
func FuzzRequestEdge(f *testing.F) {
	for _, s := range []struct{ path, query, header string }{
		{"/integrations/gh", "", ""},
		{"/connections/c1", "provider_config_key=gh", ""},
		{"/connections", "search=%ff%fe", ""},
		{"/oauth/connect/%00", "connect_session_token=x", ""},
		{"/proxy/user", "a=%ff", "\xff\xfe"},
		{"/webhook/dev/gh", "", "sha256=00"},
		{"/connect/session", "", "Bearer nango_connect_session_00"},
		{"/providers/github/logo.svg", "", ""},
		{"/oauth/callback", "state=%00&code=x", ""},
	} {
		f.Add(s.path, s.query, s.header)
	}
	bu := setup(f, sqliteBackend(f))
	seed(f, bu)
	handlers := []http.Handler{bu.svc.Handler(), bu.svc.APIHandler(), bu.svc.ProxyHandler(), bu.svc.ConnectHandler()}
	f.Fuzz(func(t *testing.T, path, query, header string) {
		if !strings.HasPrefix(path, "/") {
			path = "/" + path
		}
		for i, h := range handlers {
			for _, method := range []string{"GET", "POST", "DELETE"} {
				r := httptest.NewRequest("GET", "/", nil)
				r.Method = method
				r.URL.Path, r.URL.RawPath, r.URL.RawQuery = path, "", query
				r.Header.Set("Authorization", "Bearer "+bu.key)
				r.Header["Provider-Config-Key"] = []string{header}
				r.Header["Connection-Id"] = []string{"nope"} // no proxy call leaves the process
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				if w.Code >= 500 {
					t.Fatalf("handler %d: %s %q?%q (Provider-Config-Key %q) = %d %s", i, method, path, query, header, w.Code, w.Body)
				}
				for _, l := range []string{"pq:", "postgres", "invalid byte sequence"} {
					if strings.Contains(w.Body.String(), l) {
						t.Fatalf("handler %d: %s %q: the answer holds %q: %s", i, method, path, l, w.Body)
					}
				}
			}
		}
	})
}
