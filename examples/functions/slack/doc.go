// Package slack holds an example function written in Go against the Slack
// Web API: an action that posts a message. It runs on connections of an
// integration of the slack provider (a bot token with the chat:write
// scope); the host picks the integration's unique key:
//
//	if err := svc.Functions().Register(slack.Functions("slack")...); err != nil { ... }
//	// Offered as templates of the provider (GET /providers/slack/templates):
//	if err := svc.Functions().AddTemplates("slack", slack.Functions("slack")...); err != nil { ... }
//
// The reference server (examples/server) registers it with
// CONNECT_EXAMPLE_FUNCTIONS=slack=<integration key>.
//
// # The post-message action
//
// [PostMessage] ("post-message") takes {"channel": "C0123456789" or
// "#general", "text": "..."}, calls POST chat.postMessage with that JSON
// body and answers Slack's {"ok": true, "channel": "<channel id>",
// "ts": "<message timestamp>"}.
//
// Slack answers most failures with 200 and {"ok": false, "error":
// "channel_not_found"}: the action turns them into an
// [functions.ActionError] whose payload is {"error": "channel_not_found"}
// (POST /action/trigger answers 500 action_script_runtime_error with it).
// An answer outside 2xx (429 when rate limited) is the action's failure
// 424 script_http_error with Slack's status and body. A missing channel or
// text is refused before any call (400 invalid_action_input).
//
// Package slacktest is a fake of chat.postMessage, for tests.
package slack
