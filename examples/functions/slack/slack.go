package slack

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/embedauth/connect/functions"
)

// PostMessageName is the name of the post-message action.
const PostMessageName = "post-message"

// PostMessageInput is the input of the post-message action.
type PostMessageInput struct {
	// Channel is a channel's id (C0123456789) or name (#general).
	Channel string `json:"channel"`
	Text    string `json:"text"`
}

// PostMessageOutput is the output of the post-message action: Slack's
// answer (ok is always true; channel is the channel's id, ts the
// message's timestamp, which identifies it).
type PostMessageOutput struct {
	OK      bool   `json:"ok"`
	Channel string `json:"channel"`
	TS      string `json:"ts"`
}

// Functions returns the functions to register for the integration whose
// unique key is integrationKey: the post-message action.
//
//	err := svc.Functions().Register(slack.Functions("slack")...)
func Functions(integrationKey string) []any {
	return []any{PostMessage(integrationKey)}
}

// PostMessage returns the post-message action of an integration. See the
// package documentation.
func PostMessage(integrationKey string) functions.Action {
	a := functions.NewAction(integrationKey, PostMessageName, postMessage)
	a.Description = "Posts a message to a Slack channel as the connection's bot.\n" +
		"- channel: the channel's id (C0123456789) or name (#general)\n" +
		"- text: the message, in Slack's mrkdwn"
	a.Scopes = []string{"chat:write"}
	a.Endpoint = &functions.Endpoint{Method: "POST", Path: "/messages", Group: "Messages"}
	return a
}

// slackAnswer is the body of a Web API answer.
type slackAnswer struct {
	OK      bool   `json:"ok"`
	Error   string `json:"error"`
	Channel string `json:"channel"`
	TS      string `json:"ts"`
}

func postMessage(ctx context.Context, c *functions.Context, in PostMessageInput) (PostMessageOutput, error) {
	switch {
	case in.Channel == "":
		return PostMessageOutput{}, &functions.InputError{Err: errors.New("channel is required")}
	case in.Text == "":
		return PostMessageOutput{}, &functions.InputError{Err: errors.New("text is required")}
	}
	resp, err := c.Proxy(ctx, functions.ProxyRequest{Method: "POST", Endpoint: "/chat.postMessage",
		// Slack wants the charset, else it warns "missing_charset".
		Headers: http.Header{"Content-Type": {"application/json; charset=utf-8"}},
		Data:    map[string]string{"channel": in.Channel, "text": in.Text}})
	if err != nil {
		return PostMessageOutput{}, err
	}
	var a slackAnswer
	if err := resp.JSON(&a); err != nil {
		return PostMessageOutput{}, fmt.Errorf("slack: chat.postMessage answered %d with a body that is not JSON: %w", resp.Status, err)
	}
	if !a.OK {
		// Slack answers failures with 200 and ok false.
		e := a.Error
		if e == "" {
			e = "unknown_error"
		}
		return PostMessageOutput{}, &functions.ActionError{Payload: map[string]any{"error": e}}
	}
	return PostMessageOutput{OK: true, Channel: a.Channel, TS: a.TS}, nil
}
