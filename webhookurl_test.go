package connect_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/egress"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/store"
	"github.com/google/go-cmp/cmp"
)

// TestWebhookURLsCheckedWhenSet: under the default webhook address policy
// a webhook URL that no delivery could reach is refused with a 400 naming
// the field when it is set, on every door: an environment's URLs
// (Environments().Create and Update), a connect session's
// webhook_url_override (POST /connect/sessions and
// ConnectSessions().Create) and a connection's (PATCH /connections/{id}
// and Connections().Patch). Refused are loopback, private, metadata and
// the other special addresses, localhost, a user name and password in the
// URL and other schemes; the message names the setting that allows
// loopback or private addresses. Nothing changes. A public address and a
// host name that does not resolve (yet) are accepted.
func TestWebhookURLsCheckedWhenSet(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		bu := setupStrict(t, b)
		seed(t, bu)
		ctx := context.Background()
		refused := []struct {
			url, code, mention string
		}{
			// The refusals name the policy's Setting, which connect.New sets
			// to the field that allows loopback and private networks both.
			{"http://127.0.0.1:9000/hooks", "address_not_allowed", "allowed by connect.Config.Webhooks.Policy.AllowPrivateNetworks"},
			{"http://localhost:9000/hooks", "address_not_allowed", "allowed by connect.Config.Webhooks.Policy.AllowPrivateNetworks"},
			{"http://10.1.2.3/hooks", "address_not_allowed", "allowed by connect.Config.Webhooks.Policy.AllowPrivateNetworks"},
			{"http://[fd00::1]/hooks", "address_not_allowed", "allowed by connect.Config.Webhooks.Policy.AllowPrivateNetworks"},
			{"http://169.254.169.254/latest/meta-data", "address_not_allowed", "never reach"},
			{"https://user:secret@hooks.example.com/x", "invalid_url", "user name or password"},
			{"ftp://hooks.example.com/x", "", "http or https"},
		}
		check := func(what string, status int, code, path, msg string, tc struct{ url, code, mention string }) {
			t.Helper()
			if status != 400 || !strings.Contains(msg, tc.mention) || (tc.code != "" && code != tc.code) || path == "" {
				t.Errorf("%s %s: %d code %q path %q %q, want 400 %s mentioning %q", what, tc.url, status, code, path, msg, tc.code, tc.mention)
			}
		}
		before, rows := snapshot(t, bu), tableCounts(t, b)
		envBefore, err := bu.svc.Environments().Get(ctx, bu.env.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range refused {
			body := `{"webhook_url_override":` + jsonString(tc.url) + `}`
			for _, rq := range []req{
				{method: "POST", path: "/connect/sessions", body: `{"tags":{},` + body[1:]},
				{method: "PATCH", path: "/connections/c1?provider_config_key=gh", body: body},
			} {
				r := bu.do(t, rq)
				e, _ := r.obj()["error"].(map[string]any)
				list, _ := e["errors"].([]any)
				code := ""
				if len(list) > 0 {
					code, _ = list[0].(map[string]any)["code"].(string)
				}
				msg, _ := e["message"].(string)
				if len(list) > 0 {
					m, _ := list[0].(map[string]any)["message"].(string)
					msg += " " + m
				}
				if p := errorPath(r); p != "webhook_url_override" {
					t.Errorf("%s %s %s: path %q (%s)", rq.method, rq.path, tc.url, p, r.raw)
				}
				check(rq.method+" "+rq.path, r.status, code, errorPath(r), msg, tc)
			}
			goErr := func(what string, err error, path string) {
				t.Helper()
				var se *store.Error
				if !errors.As(err, &se) || !errors.Is(err, store.ErrInvalid) {
					t.Errorf("%s %s: %v", what, tc.url, err)
					return
				}
				code, p, msg := "", storeErrorPath(err), se.Message
				if len(se.Errors) > 0 {
					code, msg = se.Errors[0].Code, msg+" "+se.Errors[0].Message
				}
				if p != path {
					t.Errorf("%s %s: path %q, want %q", what, tc.url, p, path)
				}
				check(what, 400, code, p, msg, tc)
			}
			urls := []string{"https://93.184.215.14/ok", tc.url}
			_, err := bu.svc.Environments().Update(ctx, bu.env.ID, environments.UpdateInput{WebhookURLs: &urls})
			goErr("Environments().Update", err, "webhook_urls.1")
			_, err = bu.svc.Environments().Create(ctx, environments.CreateInput{Name: "other", WebhookURLs: []string{tc.url}})
			goErr("Environments().Create", err, "webhook_urls.0")
			u := tc.url
			_, err = bu.svc.Connections().Patch(ctx, bu.env.ID, "gh", "c1", connections.PatchInput{WebhookURLOverride: &u})
			goErr("Connections().Patch", err, "webhook_url_override")
			_, err = bu.svc.ConnectSessions().Create(ctx, bu.env.ID, connections.CreateSessionInput{WebhookURLOverride: tc.url})
			goErr("ConnectSessions().Create", err, "webhook_url_override")
		}
		if diff := cmp.Diff(before, snapshot(t, bu)); diff != "" {
			t.Errorf("refused webhook URLs changed the store (-before +after):\n%s", diff)
		}
		if diff := cmp.Diff(rows, tableCounts(t, b)); diff != "" {
			t.Errorf("refused webhook URLs added rows (-before +after):\n%s", diff)
		}
		envAfter, err := bu.svc.Environments().Get(ctx, bu.env.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !cmp.Equal(envBefore.WebhookURLs, envAfter.WebhookURLs) {
			t.Errorf("the environment's webhook URLs became %v", envAfter.WebhookURLs)
		}
		if _, err := bu.svc.Environments().GetByName(ctx, "other"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("an environment was created with a refused URL: %v", err)
		}

		// A public address, and a name that does not resolve (.invalid
		// never does): the dial-time check stays the guard.
		urls := []string{"https://93.184.215.14/hooks", "https://hooks.connect-test.invalid/hooks"}
		if _, err := bu.svc.Environments().Update(ctx, bu.env.ID, environments.UpdateInput{WebhookURLs: &urls}); err != nil {
			t.Errorf("public and unresolvable URLs: %v", err)
		}
		bu.mustDo(t, 200, req{method: "PATCH", path: "/connections/c1?provider_config_key=gh", body: `{"webhook_url_override":"https://hooks.connect-test.invalid/c1"}`})
		bu.mustDo(t, 201, req{method: "POST", path: "/connect/sessions", body: `{"tags":{},"webhook_url_override":"https://93.184.215.14/s"}`})
	})
}

// TestWebhookURLsFollowTheConfiguredPolicy: the check at set time applies
// the configured Config.Webhooks.Policy: AllowLoopback accepts loopback
// URLs and still refuses private ones, AllowPrivateNetworks accepts both,
// metadata addresses stay refused; with a Client of the host's, whose
// transport enforces its own policy, only the URL's form is checked.
func TestWebhookURLsFollowTheConfiguredPolicy(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name           string
		mutate         func(*connect.Config)
		loopback, priv bool
	}{
		{"loopback", func(cfg *connect.Config) { cfg.Webhooks.Policy = egress.Policy{AllowLoopback: true} }, true, false},
		{"private networks", func(cfg *connect.Config) { cfg.Webhooks.Policy = egress.Policy{AllowPrivateNetworks: true} }, true, true},
		{"own client", func(cfg *connect.Config) {
			cfg.Webhooks.Client = &http.Client{Transport: egress.NewTransport(egress.Policy{})}
		}, true, true},
	} {
		bu := setupStrict(t, sqliteBackend(t), tc.mutate)
		for _, u := range []struct {
			url  string
			want bool
		}{{"http://localhost:9000/h", tc.loopback}, {"http://10.1.2.3/h", tc.priv}, {"http://169.254.169.254/h", tc.name == "own client"}} {
			urls := []string{u.url}
			_, err := bu.svc.Environments().Update(t.Context(), bu.env.ID, environments.UpdateInput{WebhookURLs: &urls})
			if (err == nil) != u.want {
				t.Errorf("%s: %s: %v, want accepted %v", tc.name, u.url, err, u.want)
			}
		}
	}
}
