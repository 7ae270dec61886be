package connect_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/embedauth/connect"
)

// TestConsoleMounted: Handler serves the console at /console/ unless
// DisableConsole; ConsoleHandler serves it alone, under any prefix, behind
// whatever authentication the host puts in front.
func TestConsoleMounted(t *testing.T) {
	backends(t, func(t *testing.T, b *backend) {
		bu := setup(t, b)
		page := func(bu *bundle) (int, string) {
			resp, err := http.Get(bu.srv.URL + "/console/")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(b)
		}
		if st, body := page(bu); st != 200 || !strings.Contains(body, `src="ui/app.js?v=`) {
			t.Errorf("GET /console/ = %d %.200s", st, body)
		}
		off, err := connect.New(connect.Config{Store: b.store, Scheduler: schedulerFor(t, b), EncryptionKeys: []connect.EncryptionKey{testKey}, DisableConsole: true})
		if err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		off.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/console/", nil))
		if rec.Code != 404 {
			t.Errorf("GET /console/ with DisableConsole = %d", rec.Code)
		}
		// The host's own authentication in front of ConsoleHandler.
		auth := func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if u, p, ok := r.BasicAuth(); !ok || u != "ops" || p != "pw" {
					w.Header().Set("WWW-Authenticate", `Basic realm="ops"`)
					http.Error(w, "who are you", http.StatusUnauthorized)
					return
				}
				next.ServeHTTP(w, r)
			})
		}
		mux := http.NewServeMux()
		mux.Handle("/ops/", auth(http.StripPrefix("/ops", off.ConsoleHandler())))
		srv := httptest.NewServer(mux)
		defer srv.Close()
		resp, err := http.Get(srv.URL + "/ops/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 401 {
			t.Errorf("without the host's credentials: %d", resp.StatusCode)
		}
		rq, _ := http.NewRequest("GET", srv.URL+"/ops/ui/app.js", nil)
		rq.SetBasicAuth("ops", "pw")
		resp, err = http.DefaultClient.Do(rq)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(body), "import") {
			t.Errorf("GET /ops/ui/app.js = %d", resp.StatusCode)
		}
	})
}
