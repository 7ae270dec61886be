package slack_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/egress"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/examples/functions/slack"
	"github.com/embedauth/connect/examples/functions/slack/slacktest"
	"github.com/embedauth/connect/functions"
	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/store/sqlite"
)

const (
	token = "xoxb-test-token"
	key   = "team-slack" // the integration's unique key
)

// fixture is a Service on a private in-memory SQLite database whose slack provider calls a
// fake Slack, with post-message registered for the integration
// "team-slack", a connection "bot" with the fake's token and a
// connection "revoked" with another one.
type fixture struct {
	svc    *connect.Service
	api    *slacktest.Server
	srv    *httptest.Server
	env    *environments.Environment
	apiKey string
}

func setup(t *testing.T) *fixture {
	t.Helper()
	api := slacktest.NewServer(token)
	t.Cleanup(api.Close)
	cat, err := integrations.DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	p, ok := cat.Get("slack")
	if !ok {
		t.Fatal("no slack provider in the catalogue")
	}
	p = p.Clone()
	p.Proxy.BaseURL = api.URL
	if cat, err = cat.With(p); err != nil {
		t.Fatal(err)
	}
	db, err := sqlite.Connect(t.Context(), sqlite.MemoryPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() }) // after the Service's Stop, a later cleanup
	svc, err := connect.New(connect.Config{
		Store:          db.Store,
		Scheduler:      db.Scheduler,
		EncryptionKeys: []connect.EncryptionKey{{Key: bytes.Repeat([]byte{9}, 32)}},
		Providers:      cat,
		Egress:         egress.Policy{AllowLoopback: true},
		Functions:      connect.FunctionsConfig{TickInterval: 20 * time.Millisecond, RetryBackoff: func(int) time.Duration { return 10 * time.Millisecond }},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Functions().Register(slack.Functions(key)...); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	env, err := svc.Environments().Create(ctx, environments.CreateInput{Name: "dev"})
	if err != nil {
		t.Fatal(err)
	}
	apiKey, _, err := svc.Environments().CreateAPIKey(ctx, env.ID, environments.NewAPIKey{Name: "full", Scopes: []string{environments.ScopeAll}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Integrations().Create(ctx, env.ID, integrations.CreateInput{Provider: "slack", UniqueKey: key,
		Credentials: &integrations.Credentials{Type: "OAUTH2", ClientID: "cid", ClientSecret: "secret", Scopes: "chat:write"}}); err != nil {
		t.Fatal(err)
	}
	for id, tok := range map[string]string{"bot": token, "revoked": "xoxb-revoked"} {
		if _, _, err := svc.Connections().Import(ctx, env.ID, connections.ImportInput{ProviderConfigKey: key, ConnectionID: id,
			AccessToken: tok, NoExpiration: true}); err != nil {
			t.Fatal(err)
		}
	}
	if err := svc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = svc.Stop(ctx)
	})
	srv := httptest.NewServer(svc.Handler())
	t.Cleanup(srv.Close)
	return &fixture{svc: svc, api: api, srv: srv, env: env, apiKey: apiKey}
}

// trigger calls POST /action/trigger for post-message on a connection
// and returns the status and the decoded answer.
func (f *fixture) trigger(t *testing.T, conn, input string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest("POST", f.srv.URL+"/action/trigger", strings.NewReader(`{"action_name":"post-message","input":`+input+`}`))
	req.Header.Set("Authorization", "Bearer "+f.apiKey)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Connection-Id", conn)
	req.Header.Set("Provider-Config-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("answer %d %s: %v", resp.StatusCode, b, err)
	}
	return resp.StatusCode, out
}

// errorOf returns the error object of a failed action's answer.
func errorOf(body map[string]any) map[string]any {
	e, _ := body["error"].(map[string]any)
	return e
}

func TestPostMessage(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()

	var out slack.PostMessageOutput
	if err := f.svc.Functions().TriggerAction(ctx, f.env.ID, key, "bot", slack.PostMessageName,
		slack.PostMessageInput{Channel: slacktest.GeneralID, Text: "Deploy *finished* ✅"}, &out); err != nil {
		t.Fatal(err)
	}
	msgs := f.api.Messages()
	if len(msgs) != 1 || msgs[0].Channel != slacktest.GeneralID || msgs[0].Text != "Deploy *finished* ✅" {
		t.Fatalf("messages %+v", msgs)
	}
	if want := (slack.PostMessageOutput{OK: true, Channel: slacktest.GeneralID, TS: msgs[0].TS}); out != want {
		t.Errorf("output %+v, want %+v", out, want)
	}
	reqs := f.api.Requests()
	if len(reqs) != 1 || reqs[0].Method != "POST" || reqs[0].Path != "/api/chat.postMessage" ||
		reqs[0].Authorization != "Bearer "+token || reqs[0].ContentType != "application/json; charset=utf-8" {
		t.Fatalf("requests %+v", reqs)
	}
	var sent map[string]string
	if err := json.Unmarshal([]byte(reqs[0].Body), &sent); err != nil || len(sent) != 2 || sent["channel"] != slacktest.GeneralID {
		t.Errorf("body %s", reqs[0].Body)
	}

	// By name, through the API: Slack's answer.
	f.api.AddChannel("C0RANDOM", "random")
	status, body := f.trigger(t, "bot", `{"channel":"#random","text":"hello"}`)
	if status != 200 || body["ok"] != true || body["channel"] != "C0RANDOM" || body["ts"] != f.api.Messages()[1].TS || len(body) != 3 {
		t.Errorf("by name: %d %v", status, body)
	}
}

func TestPostMessageFailures(t *testing.T) {
	t.Parallel()
	f := setup(t)
	for _, tc := range []struct {
		name, conn, input string
		status            int
		code, slackError  string
	}{
		{"unknown channel", "bot", `{"channel":"C0NOPE","text":"hi"}`, 500, "action_script_runtime_error", "channel_not_found"},
		{"revoked token", "revoked", `{"channel":"#general","text":"hi"}`, 500, "action_script_runtime_error", "invalid_auth"},
		{"too long", "bot", `{"channel":"#general","text":"` + strings.Repeat("a", slacktest.MaxText+1) + `"}`, 500, "action_script_runtime_error", "msg_too_long"},
		{"no text", "bot", `{"channel":"#general"}`, 400, "invalid_action_input", ""},
		{"no channel", "bot", `{"text":"hi"}`, 400, "invalid_action_input", ""},
		{"wrong type", "bot", `{"channel":5,"text":"hi"}`, 400, "invalid_action_input", ""},
	} {
		before := len(f.api.Requests())
		status, body := f.trigger(t, tc.conn, tc.input)
		e := errorOf(body)
		if status != tc.status || e["code"] != tc.code {
			t.Errorf("%s: %d %v, want %d %s", tc.name, status, body, tc.status, tc.code)
			continue
		}
		if tc.slackError != "" {
			if p, _ := e["payload"].(map[string]any); p["error"] != tc.slackError || len(p) != 1 {
				t.Errorf("%s: payload %v, want {error: %s}", tc.name, e["payload"], tc.slackError)
			}
		} else if n := len(f.api.Requests()) - before; n != 0 {
			t.Errorf("%s: a refused input reached Slack %d times", tc.name, n)
		}
	}
	if n := len(f.api.Messages()); n != 0 {
		t.Errorf("%d messages posted", n)
	}

	// Rate limited: Slack's 429 is the action's upstream failure.
	f.api.RateLimit(1)
	status, body := f.trigger(t, "bot", `{"channel":"#general","text":"hi"}`)
	e := errorOf(body)
	up, _ := e["upstream"].(map[string]any)
	hdr, _ := up["headers"].(map[string]any)
	if status != 424 || e["code"] != "script_http_error" || up["status"] != float64(429) || hdr["retry-after"] != "30" {
		t.Errorf("rate limited: %d %v", status, body)
	}

	// From Go: the failure carries Slack's error.
	err := f.svc.Functions().TriggerAction(context.Background(), f.env.ID, key, "bot", slack.PostMessageName,
		slack.PostMessageInput{Channel: "#nope", Text: "x"}, nil)
	var re *functions.RunError
	if !errors.As(err, &re) || re.Failure.Status != 500 {
		t.Fatalf("TriggerAction = %v", err)
	}
	if p, _ := json.Marshal(re.Failure.Body.Error.Payload); string(p) != `{"error":"channel_not_found"}` {
		t.Errorf("payload %s", p)
	}
}

func TestPostMessageAsync(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	// The first attempt is rate limited; the retry posts.
	f.api.RateLimit(1)
	h, err := f.svc.Functions().TriggerActionAsync(ctx, functions.ActionCall{EnvironmentID: f.env.ID, Integration: key,
		ConnectionID: "bot", Action: slack.PostMessageName, Input: json.RawMessage(`{"channel":"#general","text":"later"}`)}, 1)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		out, failure, err := f.svc.Functions().ActionResult(ctx, f.env.ID, h.ID)
		if err == nil && failure != nil {
			t.Fatalf("failed: %+v", failure)
		}
		if err == nil {
			var o slack.PostMessageOutput
			if err := json.Unmarshal(out, &o); err != nil || !o.OK || o.Channel != slacktest.GeneralID {
				t.Fatalf("output %s", out)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no result: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if msgs := f.api.Messages(); len(msgs) != 1 || msgs[0].Text != "later" || len(f.api.Requests()) != 2 {
		t.Errorf("messages %+v after %d requests", msgs, len(f.api.Requests()))
	}
}
