package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/embedauth/connect/functions"
	"github.com/embedauth/connect/internal/httpapi"
	"github.com/embedauth/connect/store"
)

// fakeActions is an integration "fx" with one connection "c1" and the
// actions echo (answers its input), fail (an ActionError) and text (whose
// output holds characters JSON encoders may escape).
type fakeActions struct{}

func (fakeActions) CheckConnection(_ context.Context, _ int64, integration, conn string) error {
	if integration != "fx" || conn != "c1" {
		return store.Invalid("unknown_connection", "no such connection")
	}
	return nil
}

func (f fakeActions) ConnectionActions(ctx context.Context, env int64, integration, conn string) ([]*functions.Function, error) {
	var out []*functions.Function
	for _, n := range []string{"echo", "fail", "text"} {
		fn, _ := f.Action(ctx, env, integration, n)
		out = append(out, fn)
	}
	return out, nil
}

func (fakeActions) Action(_ context.Context, _ int64, _ string, name string) (*functions.Function, error) {
	switch name {
	case "echo", "fail", "text":
		return &functions.Function{Name: name, Kind: functions.KindAction, Enabled: true}, nil
	}
	return nil, store.NotFound("not_found", "no such action")
}

func (fakeActions) RunAction(_ context.Context, call functions.ActionCall) (json.RawMessage, error) {
	switch call.Action {
	case "fail":
		ae := &functions.ActionError{Payload: map[string]any{"reason": "<nope> & more"}}
		return nil, &functions.RunError{Failure: functions.Classify(ae), Err: ae}
	case "text":
		return json.RawMessage(`{"html":"<b>a & b</b>","unicode":"é\u2028"}`), nil
	}
	if len(call.Input) == 0 {
		return json.RawMessage(`null`), nil
	}
	return call.Input, nil
}

func serveBoth(t *testing.T) (fast, sdk *httptest.Server) {
	t.Helper()
	mk := func(useFast bool) *httptest.Server {
		s := New(Config{Actions: fakeActions{}, API: http.NotFoundHandler()})
		s.actions.fast = useFast
		mux := http.NewServeMux()
		s.Routes(&httpapi.Router{Mux: mux, Authenticate: func(ctx context.Context, key string) (*httpapi.Principal, error) {
			return &httpapi.Principal{EnvironmentID: 1, Scopes: []string{httpapi.ScopeAll}}, nil
		}})
		srv := httptest.NewServer(mux)
		t.Cleanup(srv.Close)
		return srv
	}
	return mk(true), mk(false)
}

func post(t *testing.T, url, body string, header map[string]string) (int, http.Header, []byte) {
	t.Helper()
	r, _ := http.NewRequest("POST", url+"/mcp", strings.NewReader(body))
	r.Header.Set("Authorization", "Bearer k")
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	r.Header.Set("Connection-Id", "c1")
	r.Header.Set("Provider-Config-Key", "fx")
	for k, v := range header {
		r.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

// TestFastCallMatchesSDK: a tools/call answered without the SDK's
// transport is answered as the SDK answers it, byte for byte.
func TestFastCallMatchesSDK(t *testing.T) {
	fast, sdk := serveBoth(t)
	v := map[string]string{"Mcp-Protocol-Version": "2025-11-25"}
	for _, tc := range []struct {
		body   string
		header map[string]string
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"a":[1,2,{"b":null}]}}}`, v},
		{`{"jsonrpc":"2.0","id":"x-1","method":"tools/call","params":{"name":"echo","arguments":{}}}`, nil},
		{`{"jsonrpc":"2.0","id":-3,"method":"tools/call","params":{"name":"echo"}}`, v},
		{`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":null,"_meta":{"progressToken":"p"}}}`, v},
		{`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"fail","arguments":{"q":1}}}`, v},
		{`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"nope","arguments":{}}}`, v},
		{`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"text","arguments":{}}}`, v},
		{`  {"id":8,"jsonrpc":"2.0","params":{"arguments":{"s":"<>&é"},"name":"echo"},"method":"tools/call"}`, map[string]string{"Mcp-Protocol-Version": "2025-06-18"}},
	} {
		fs, fh, fb := post(t, fast.URL, tc.body, tc.header)
		ss, sh, sb := post(t, sdk.URL, tc.body, tc.header)
		if fs != ss || fh.Get("Content-Type") != sh.Get("Content-Type") || fh.Get("Cache-Control") != sh.Get("Cache-Control") {
			t.Errorf("%s: fast %d %v, SDK %d %v", tc.body, fs, fh, ss, sh)
		}
		if !bytes.Equal(bytes.TrimSpace(fb), bytes.TrimSpace(sb)) {
			var fj, sj any
			_ = json.Unmarshal(fb, &fj)
			_ = json.Unmarshal(sb, &sj)
			t.Errorf("%s:\nfast %s\nSDK  %s\n%s", tc.body, fb, sb, cmp.Diff(sj, fj))
		}
	}
}

// TestSDKLogsOnlyWarnings: the SDK's INFO records of each stateless
// session do not reach the host's log.
func TestSDKLogsOnlyWarnings(t *testing.T) {
	var buf bytes.Buffer
	var mu sync.Mutex
	h := slog.NewTextHandler(lockedWriter{&mu, &buf}, &slog.HandlerOptions{Level: slog.LevelDebug})
	s := New(Config{Actions: fakeActions{}, API: http.NotFoundHandler(), Logger: slog.New(h)})
	mux := http.NewServeMux()
	s.Routes(&httpapi.Router{Mux: mux, Authenticate: func(ctx context.Context, key string) (*httpapi.Principal, error) {
		return &httpapi.Principal{EnvironmentID: 1, Scopes: []string{httpapi.ScopeAll}}, nil
	}})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	if st, _, b := post(t, srv.URL, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, nil); st != 200 || !strings.Contains(string(b), `"name":"echo"`) {
		t.Fatalf("tools/list: %d %s", st, b)
	}
	mu.Lock()
	defer mu.Unlock()
	if buf.Len() != 0 {
		t.Errorf("the host's log got %s", buf.String())
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
