package slack_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

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

// Register post-message for the integration "slack" and post a message
// as a connection's bot, then post to a channel that does not exist. A
// fake Slack stands in for slack.com/api.
func ExampleFunctions() {
	api := slacktest.NewServer("xoxb-example")
	defer api.Close()

	// The catalogue's slack provider, on the fake's address.
	cat, _ := integrations.DefaultCatalog()
	p, _ := cat.Get("slack")
	p = p.Clone()
	p.Proxy.BaseURL = api.URL
	cat, _ = cat.With(p)

	db, err := sqlite.Connect(context.Background(), sqlite.MemoryPath, nil)
	if err != nil {
		panic(err)
	}
	defer db.Close() // after the Service has stopped
	svc, err := connect.New(connect.Config{
		Store:          db.Store,
		Scheduler:      db.Scheduler,
		EncryptionKeys: []connect.EncryptionKey{{Key: bytes.Repeat([]byte{1}, 32)}},
		Providers:      cat,
		Egress:         egress.Policy{AllowLoopback: true}, // the fake listens on 127.0.0.1
	})
	if err != nil {
		panic(err)
	}
	if err := svc.Functions().Register(slack.Functions("slack")...); err != nil {
		panic(err)
	}
	ctx := context.Background()
	env, _ := svc.Environments().Create(ctx, environments.CreateInput{Name: "dev"})
	_, err = svc.Integrations().Create(ctx, env.ID, integrations.CreateInput{Provider: "slack", UniqueKey: "slack",
		Credentials: &integrations.Credentials{Type: "OAUTH2", ClientID: "client-id", ClientSecret: "client-secret", Scopes: "chat:write"}})
	if err != nil {
		panic(err)
	}
	_, _, err = svc.Connections().Import(ctx, env.ID, connections.ImportInput{ProviderConfigKey: "slack", ConnectionID: "team-1",
		AccessToken: "xoxb-example", NoExpiration: true})
	if err != nil {
		panic(err)
	}

	var out slack.PostMessageOutput
	err = svc.Functions().TriggerAction(ctx, env.ID, "slack", "team-1", "post-message",
		slack.PostMessageInput{Channel: "#general", Text: "The nightly build passed."}, &out)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%+v\n", out)

	err = svc.Functions().TriggerAction(ctx, env.ID, "slack", "team-1", "post-message",
		slack.PostMessageInput{Channel: "#nowhere", Text: "Hello?"}, nil)
	var re *functions.RunError
	if errors.As(err, &re) {
		payload, _ := json.Marshal(re.Failure.Body.Error.Payload)
		fmt.Println(re.Failure.Status, re.Failure.Body.Error.Code, string(payload))
	}
	// Output:
	// {OK:true Channel:C0GENERAL TS:1700000000.000001}
	// 500 action_script_runtime_error {"error":"channel_not_found"}
}
