package connect_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/functions"
	"github.com/embedauth/connect/proxy"
)

func TestOnEventFunctions(t *testing.T) {
	backends(t, func(t *testing.T, b *backend) {
		var created, deleting atomic.Int32
		f := setupFunctions(t, b, func(svc *connect.Service) {
			err := svc.Functions().Register(
				functions.OnEvent{Integration: "fx", Name: "welcome", Event: functions.EventPostConnectionCreation,
					Run: func(ctx context.Context, c *functions.Context) error {
						created.Add(1)
						return c.UpdateMetadata(ctx, map[string]any{"welcomed": c.ConnectionID})
					}},
				functions.OnEvent{Integration: "fx", Name: "check", Event: functions.EventValidateConnection,
					Run: func(ctx context.Context, c *functions.Context) error {
						conn, err := c.Connection(ctx)
						if err != nil {
							return err
						}
						switch conn.Credentials.APIKey {
						case "bad":
							return &functions.ActionError{Payload: map[string]any{"message": "the key is revoked"}}
						case "internal":
							// A check against an address the policy refuses.
							resp, err := c.HTTPClient(proxy.Options{}).Get("http://10.0.0.7/check")
							if err == nil {
								resp.Body.Close()
							}
							return err
						}
						return nil
					}},
				functions.OnEvent{Integration: "fx", Name: "goodbye", Event: functions.EventPreConnectionDeletion,
					Run: func(ctx context.Context, c *functions.Context) error {
						deleting.Add(1)
						return errors.New("cleanup failed")
					}},
			)
			if err != nil {
				t.Fatal(err)
			}
		})
		// c1 was imported before the Service started: its job ran once the
		// Scheduler started.
		waitFor(t, 10*time.Second, "post-connection-creation of c1", func() bool { return created.Load() >= 1 })

		// A valid import: created, then welcomed in the background.
		f.mustDo(t, 201, req{method: "POST", path: "/connections", body: `{"provider_config_key":"fx","connection_id":"c2","api_key":"good"}`})
		waitFor(t, 10*time.Second, "the welcome metadata of c2", func() bool {
			r := f.mustDo(t, 200, req{method: "GET", path: "/connections/c2?provider_config_key=fx"})
			md, _ := r.obj()["metadata"].(map[string]any)
			return md["welcomed"] == "c2"
		})

		// An invalid import: refused, and no connection is left.
		r := f.mustDo(t, 400, req{method: "POST", path: "/connections", body: `{"provider_config_key":"fx","connection_id":"c3","api_key":"bad"}`})
		if r.errCode() != "connection_validation_failed" || r.obj()["error"].(map[string]any)["message"] != "the key is revoked" {
			t.Errorf("invalid import answered %s", r.raw)
		}
		f.mustDo(t, 404, req{method: "GET", path: "/connections/c3?provider_config_key=fx"})

		// A check the address policy refuses says so, as the proxy would,
		// without the address or the dial error.
		r = f.mustDo(t, 400, req{method: "POST", path: "/connections", body: `{"provider_config_key":"fx","connection_id":"c3","api_key":"internal"}`})
		if msg, _ := r.obj()["error"].(map[string]any)["message"].(string); r.errCode() != "connection_validation_failed" ||
			!strings.HasPrefix(msg, "The network policy refused the upstream: address not allowed") || strings.Contains(msg, "10.0.0.7") {
			t.Errorf("a refused check answered %s", r.raw)
		}

		// Through a connect session as well.
		tok := f.session(t, `{"end_user":{"id":"u1"},"allowed_integrations":["fx"]}`)
		r = f.auth(t, "/api-auth/api-key/fx", tok, "connection_id=c4", `{"apiKey":"bad"}`)
		if r.status != 400 || r.errCode() != "connection_validation_failed" {
			t.Errorf("invalid session auth answered %d %s", r.status, r.raw)
		}
		f.mustDo(t, 404, req{method: "GET", path: "/connections/c4?provider_config_key=fx"})

		// A failing pre-connection-deletion function does not stop the
		// deletion.
		before := deleting.Load()
		f.mustDo(t, 200, req{method: "DELETE", path: "/connections/c2?provider_config_key=fx"})
		if deleting.Load() != before+1 {
			t.Errorf("pre-connection-deletion ran %d times", deleting.Load()-before)
		}
		f.mustDo(t, 404, req{method: "GET", path: "/connections/c2?provider_config_key=fx"})
	})
}
