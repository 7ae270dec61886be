package proxy

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/embedauth/connect/store"
)

// TestSourceFailuresAreNotUpstreamErrors: when reading the connection
// fails, the proxy answers the Source's error for what it is (a Store's
// error with a generic message, its own *store.Error as it is), never as
// 502 upstream_error with the Store's text.
func TestSourceFailuresAreNotUpstreamErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err    error
		status int
		code   string
	}{
		{fmt.Errorf("postgres: get connection: %w: %w", store.ErrInvalid, errors.New(`pq: invalid byte sequence for encoding "UTF8": 0xff`)), 400, "invalid_request"},
		{fmt.Errorf("postgres: get connection: %w: pq: connection refused", store.ErrUnavailable), 503, "service_unavailable"},
		{errors.New("secret: unknown key id k9"), 500, "server_error"},
		{store.NotFound("not_found", "The connection was not found."), 404, "not_found"},
	} {
		p, err := New(Config{Source: SourceFunc(func(context.Context, int64, string, string, bool) (*Target, error) { return nil, tc.err })})
		if err != nil {
			t.Fatal(err)
		}
		r := httptest.NewRequest("GET", "/proxy/user", nil)
		r.Header.Set("Provider-Config-Key", "gh")
		r.Header.Set("Connection-Id", "c1")
		w := httptest.NewRecorder()
		p.ServeHTTP(w, r, 1)
		body := w.Body.String()
		if w.Code != tc.status || !strings.Contains(body, `"code":"`+tc.code+`"`) {
			t.Errorf("Source error %v: %d %s, want %d %s", tc.err, w.Code, body, tc.status, tc.code)
		}
		for _, l := range []string{"pq:", "postgres", "upstream", "key id"} {
			if strings.Contains(body, l) {
				t.Errorf("Source error %v: the answer holds %q: %s", tc.err, l, body)
			}
		}
		_, err = p.Do(context.Background(), &Request{EnvironmentID: 1, IntegrationKey: "gh", ConnectionID: "c1"})
		if status, code := HTTPStatus(err); status != tc.status || code != tc.code {
			t.Errorf("Do with Source error %v: %d %s, want %d %s", tc.err, status, code, tc.status, tc.code)
		}
	}
}
