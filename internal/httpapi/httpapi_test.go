package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/embedauth/connect/store"
)

func TestUnmarshalErrors(t *testing.T) {
	t.Parallel()
	type body struct {
		Name  string `json:"name"`
		Inner struct {
			N int `json:"n"`
		} `json:"inner"`
	}
	for in, wantPath := range map[string][]string{
		``:                    nil,
		`[]`:                  nil,
		`{"name":`:            nil,
		`{"name":1}`:          {"name"},
		`{"inner":{"n":"x"}}`: {"inner", "n"},
		`{} {}`:               nil,
	} {
		var b body
		err := Unmarshal([]byte(in), &b)
		var e *store.Error
		if !errors.As(err, &e) || e.Code != "invalid_body" || !errors.Is(err, store.ErrInvalid) {
			t.Errorf("Unmarshal(%q) = %v", in, err)
			continue
		}
		var got []string
		if len(e.Errors) > 0 {
			got = e.Errors[0].Path
		}
		if diff := cmp.Diff(wantPath, got); diff != "" {
			t.Errorf("Unmarshal(%q) path (-want +got):\n%s", in, diff)
		}
	}
}

func TestResolve(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err    error
		status int
		code   string
	}{
		{store.Invalid("invalid_body", "x"), 400, "invalid_body"},
		{store.NotFound("unknown_provider_config", "x"), 404, "unknown_provider_config"},
		{store.ErrConflict, 409, "conflict"},
		{WithStatus(413, store.Invalid("payload_too_large", "x")), 413, "payload_too_large"},
		{context.DeadlineExceeded, 503, "request_timeout"},
		{errors.New("secret detail"), 500, "server_error"},
		// A Store's own errors keep their status, never their text.
		{fmt.Errorf("postgres: get integration: %w: %w", store.ErrInvalid, errors.New(`pq: invalid byte sequence for encoding "UTF8": 0xff secret`)), 400, "invalid_request"},
		{fmt.Errorf("postgres: create: %w: secret unique violation", store.ErrConflict), 409, "conflict"},
		{fmt.Errorf("postgres: %w: secret connection refused", store.ErrUnavailable), 503, "service_unavailable"},
		{fmt.Errorf("memory: %w: secret text", store.ErrNotFound), 404, "not_found"},
	} {
		status, d := Resolve(tc.err)
		if status != tc.status || d.Code != tc.code {
			t.Errorf("Resolve(%v) = %d %s, want %d %s", tc.err, status, d.Code, tc.status, tc.code)
		}
		if strings.Contains(d.Message, "secret") || strings.Contains(d.Message, "pq:") || strings.Contains(d.Message, "postgres") {
			t.Errorf("Resolve(%v) leaks the cause: %q", tc.err, d.Message)
		}
	}
}

func TestQueryBool(t *testing.T) {
	t.Parallel()
	for q, want := range map[string]bool{"": false, "?f=true": true, "?f=false": false, "?f=TRUE": true, "?f=1": true} {
		r := httptest.NewRequest("GET", "/"+q, nil)
		got, err := QueryBool(r, "f")
		if err != nil || got != want {
			t.Errorf("QueryBool(%q) = %v, %v", q, got, err)
		}
	}
	if _, err := QueryBool(httptest.NewRequest("GET", "/?f=yes", nil), "f"); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("QueryBool(yes) = %v", err)
	}
}

func TestRouterAuthAndScopes(t *testing.T) {
	t.Parallel()
	rt := &Router{Mux: http.NewServeMux(), Authenticate: func(_ context.Context, key string) (*Principal, error) {
		if key != "good" {
			return nil, store.Errorf(store.ErrUnauthorized, "unknown_account", "unknown")
		}
		return &Principal{Scopes: []string{"a"}}, nil
	}}
	ok := func(w http.ResponseWriter, r *http.Request, p *Principal) error {
		WriteJSON(w, 200, map[string]bool{"ok": true})
		return nil
	}
	rt.Handle(Route{Pattern: "GET /a", Scope: "a", Handler: ok})
	rt.Handle(Route{Pattern: "GET /b", Scope: "b", Handler: ok})
	for _, tc := range []struct {
		path, auth string
		status     int
		code       string
	}{
		{"/a", "Bearer good", 200, ""},
		{"/a", "", 401, "missing_auth_header"},
		{"/a", "Bearer", 401, "malformed_auth_header"},
		{"/a", "Token good", 401, "malformed_auth_header"},
		{"/a", "Bearer bad", 401, "unknown_account"},
		{"/b", "Bearer good", 403, "forbidden"},
	} {
		r := httptest.NewRequest("GET", tc.path, nil)
		if tc.auth != "" {
			r.Header.Set("Authorization", tc.auth)
		}
		w := httptest.NewRecorder()
		rt.Mux.ServeHTTP(w, r)
		if w.Code != tc.status || (tc.code != "" && !strings.Contains(w.Body.String(), `"code":"`+tc.code+`"`)) {
			t.Errorf("%s %q = %d %s", tc.path, tc.auth, w.Code, w.Body)
		}
	}
}

func FuzzUnmarshal(f *testing.F) {
	f.Add([]byte(`{"a":"b","n":[1,2]}`))
	f.Add([]byte(`{"a":`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var v struct {
			A string         `json:"a"`
			N []int          `json:"n"`
			M map[string]any `json:"m"`
		}
		if err := Unmarshal(b, &v); err != nil && !errors.Is(err, store.ErrInvalid) {
			t.Fatalf("Unmarshal(%q) = %v, not ErrInvalid", b, err)
		}
	})
}

// appender writes its own JSON, or fails.
type appender struct{ fail bool }

func (a appender) AppendJSON(dst []byte) ([]byte, error) {
	if a.fail {
		return append(dst, `{"half`...), errors.New("cannot encode")
	}
	return append(dst, `{"own":true}`...), nil
}

// TestWriteJSONAppender: a JSONAppender's own encoding is the body, with
// the newline Encode writes and its length; one that fails is a 500 with
// the server_error body, nothing of the half-written value.
func TestWriteJSONAppender(t *testing.T) {
	for _, tc := range []struct {
		v      any
		status int
		body   string
	}{
		{appender{}, 201, "{\"own\":true}\n"},
		{appender{fail: true}, 500, `{"error":{"code":"server_error","message":"An internal error occurred."}}` + "\n"},
	} {
		w := httptest.NewRecorder()
		WriteJSON(w, 201, tc.v)
		if w.Code != tc.status || w.Body.String() != tc.body || w.Header().Get("Content-Length") != strconv.Itoa(len(tc.body)) {
			t.Errorf("WriteJSON(%+v) = %d %q (Content-Length %s), want %d %q", tc.v, w.Code, w.Body, w.Header().Get("Content-Length"), tc.status, tc.body)
		}
	}
}
