package slacktest_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/embedauth/connect/examples/functions/slack/slacktest"
)

func post(t *testing.T, url, token, contentType, body string) map[string]any {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", contentType)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 {
		t.Fatalf("%s: %d %v", url, resp.StatusCode, err)
	}
	return out
}

func TestPostAndHistory(t *testing.T) {
	t.Parallel()
	s := slacktest.NewServer("xoxb-1")
	defer s.Close()
	const js = "application/json; charset=utf-8"
	for _, tc := range []struct {
		token, ctype, body, err string
	}{
		{"", js, `{"channel":"#general","text":"x"}`, "not_authed"},
		{"xoxb-2", js, `{"channel":"#general","text":"x"}`, "invalid_auth"},
		{"xoxb-1", js, `{"channel":"#nope","text":"x"}`, "channel_not_found"},
		{"xoxb-1", js, `{"channel":"#general"}`, "no_text"},
	} {
		if got := post(t, s.URL+"/chat.postMessage", tc.token, tc.ctype, tc.body); got["ok"] != false || got["error"] != tc.err {
			t.Errorf("%s: %v, want %s", tc.body, got, tc.err)
		}
	}
	a := post(t, s.URL+"/chat.postMessage", "xoxb-1", js, `{"channel":"#general","text":"one"}`)
	b := post(t, s.URL+"/chat.postMessage", "xoxb-1", "application/x-www-form-urlencoded", "channel=C0GENERAL&text=two")
	if a["ok"] != true || a["channel"] != slacktest.GeneralID || b["ok"] != true || a["ts"] == b["ts"] {
		t.Fatalf("posted %v and %v", a, b)
	}
	h := post(t, s.URL+"/conversations.history?channel="+slacktest.GeneralID, "xoxb-1", js, "")
	msgs, _ := h["messages"].([]any)
	if h["ok"] != true || len(msgs) != 2 || msgs[0].(map[string]any)["text"] != "two" || msgs[1].(map[string]any)["ts"] != a["ts"] {
		t.Errorf("history %v", h)
	}
	if got := len(s.Messages()); got != 2 {
		t.Errorf("%d messages", got)
	}
}
