package functions

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestSubscriptionMatches(t *testing.T) {
	tests := []struct {
		subs []string
		typ  string
		want bool
	}{
		{[]string{"issues", "pull_request"}, "issues", true},
		{[]string{"issues"}, "push", false},
		{[]string{"issues"}, "", false},
		{[]string{"*"}, "", true},
		{[]string{"*"}, "anything", true},
		{nil, "issues", false},
		{[]string{"Issues"}, "issues", false},
	}
	for _, tt := range tests {
		if got := SubscriptionMatches(tt.subs, tt.typ); got != tt.want {
			t.Errorf("SubscriptionMatches(%q, %q) = %v, want %v", tt.subs, tt.typ, got, tt.want)
		}
	}
}

func TestSyncWebhookSubscriptionsNeedHandler(t *testing.T) {
	run := func(ctx context.Context, s *SyncContext) error { return nil }
	handler := func(ctx context.Context, s *SyncContext, payload json.RawMessage) error { return nil }
	base := Sync{Integration: "gh", Name: "issues", Frequency: "1h", Run: run,
		Models: []Model{{Name: "Issue", Schema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}`)}}}

	s := base
	s.WebhookSubscriptions = []string{"issues"}
	if _, err := compile(s); err == nil || !strings.Contains(err.Error(), "needs OnWebhook") {
		t.Errorf("subscriptions without a handler: %v", err)
	}
	s.WebhookSubscriptions = []string{"issues", ""}
	s.OnWebhook = handler
	if _, err := compile(s); err == nil || !strings.Contains(err.Error(), "empty subscription") {
		t.Errorf("an empty subscription: %v", err)
	}
	s.WebhookSubscriptions = []string{"issues", "*"}
	r, err := compile(s)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.fn.Definition.WebhookSubscriptions; len(got) != 2 || got[1] != "*" {
		t.Errorf("definition's subscriptions %q", got)
	}
	// A handler without subscriptions is allowed (it never runs).
	s = base
	s.OnWebhook = handler
	if _, err := compile(s); err != nil {
		t.Errorf("a handler without subscriptions: %v", err)
	}
}

func TestGoRuntimeWithoutWebhookHandler(t *testing.T) {
	svc := &Service{reg: map[fnKey]*registered{}}
	r, err := compile(Sync{Integration: "gh", Name: "issues", Frequency: "1h",
		Run:    func(ctx context.Context, s *SyncContext) error { return nil },
		Models: []Model{{Name: "Issue", Schema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}`)}}})
	if err != nil {
		t.Fatal(err)
	}
	svc.reg[fnKey{"gh", KindSync, "issues"}] = r
	f := r.fn
	err = goRuntime{svc}.RunSync(context.Background(), &f, &SyncContext{}, json.RawMessage(`{}`))
	if !errors.Is(err, ErrNoWebhookHandler) {
		t.Errorf("RunSync with a webhook of a sync without a handler: %v", err)
	}
}
