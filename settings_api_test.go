package connect_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/webhooks"
)

// fieldPaths returns the paths of the errors of a standard error body,
// each joined with dots, and their codes.
func (r *response) fieldPaths() (paths, codes []string) {
	e, _ := r.obj()["error"].(map[string]any)
	fes, _ := e["errors"].([]any)
	for _, fe := range fes {
		m, _ := fe.(map[string]any)
		var p []string
		ps, _ := m["path"].([]any)
		for _, s := range ps {
			p = append(p, s.(string))
		}
		paths = append(paths, strings.Join(p, "."))
		c, _ := m["code"].(string)
		codes = append(codes, c)
	}
	return paths, codes
}

// data returns the data member of an answer.
func (r *response) data() map[string]any {
	d, _ := r.obj()["data"].(map[string]any)
	return d
}

// newKey creates an API key of the bundle's environment from Go and
// returns it with its id.
func (bu *bundle) newKey(t *testing.T, name string, scopes ...string) (string, int64) {
	t.Helper()
	raw, k, err := bu.svc.Environments().CreateAPIKey(t.Context(), bu.env.ID, environments.NewAPIKey{Name: name, Scopes: scopes})
	if err != nil {
		t.Fatal(err)
	}
	return raw, k.ID
}

// secretsOf lists the forms in which an API key could leak: itself, and
// its SHA-256 in hex and base64.
func secretsOf(raw string) []string {
	h := sha256.Sum256([]byte(raw))
	return []string{raw, hex.EncodeToString(h[:]), base64.StdEncoding.EncodeToString(h[:]), base64.RawURLEncoding.EncodeToString(h[:])}
}

// noSecrets fails when an answer holds one of the secrets.
func noSecrets(t *testing.T, what string, r *response, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		if s != "" && strings.Contains(string(r.raw), s) {
			t.Errorf("%s: the answer holds the secret %q: %s", what, s, r.raw)
		}
	}
}

// TestEnvironmentSettingsAPI: GET /environment answers the settings of
// the key's environment, never its signing key; PATCH /environment changes
// the members given (webhook_settings and connect_ui member by member),
// answers the new settings, and refuses bad input whole, changing nothing.
func TestEnvironmentSettingsAPI(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		bu := setup(t, b)
		ctx := t.Context()
		signing, err := bu.svc.Environments().SigningKey(ctx, bu.env.ID)
		if err != nil {
			t.Fatal(err)
		}
		created := "2026-05-01T12:00:00.000Z"
		r := bu.mustDo(t, 200, req{method: "GET", path: "/environment"})
		want := map[string]any{"name": "dev", "webhook_urls": []any{},
			"webhook_settings": map[string]any{"send_auth_creation": true, "send_auth_refresh_error": true, "send_sync": true,
				"send_empty_sync": true, "send_async_action": true, "send_forward": true},
			"connect_ui":   map[string]any{"theme": "system", "hide_secured_by": false},
			"callback_url": nil, "has_signing_key": true, "created_at": created, "updated_at": created}
		if diff := cmp.Diff(want, r.data()); diff != "" {
			t.Errorf("GET /environment (-want +got):\n%s", diff)
		}
		noSecrets(t, "GET /environment", r, append(secretsOf(bu.key), signing)...)

		// A change of every member.
		bu.now.t = bu.now.t.Add(time.Hour)
		r = bu.mustDo(t, 200, req{method: "PATCH", path: "/environment", body: `{"webhook_urls":["https://hooks.example.com/a","https://hooks.example.com/b"],
			"webhook_settings":{"send_sync":false,"send_forward":false},
			"connect_ui":{"theme":"dark","primary_color_light":"#0be","primary_color_dark":"#003344","hide_secured_by":true},
			"callback_url":"https://app.example.com/oauth/callback"}`})
		want["webhook_urls"] = []any{"https://hooks.example.com/a", "https://hooks.example.com/b"}
		want["webhook_settings"].(map[string]any)["send_sync"] = false
		want["webhook_settings"].(map[string]any)["send_forward"] = false
		want["connect_ui"] = map[string]any{"theme": "dark", "primary_color_light": "#0be", "primary_color_dark": "#003344", "hide_secured_by": true}
		want["callback_url"] = "https://app.example.com/oauth/callback"
		want["updated_at"] = "2026-05-01T13:00:00.000Z"
		if diff := cmp.Diff(want, r.data()); diff != "" {
			t.Errorf("PATCH /environment (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(want, bu.mustDo(t, 200, req{method: "GET", path: "/environment"}).data()); diff != "" {
			t.Errorf("GET /environment after PATCH (-want +got):\n%s", diff)
		}
		env, err := bu.svc.Environments().Get(ctx, bu.env.ID)
		if err != nil {
			t.Fatal(err)
		}
		ws := environments.DefaultWebhookSettings()
		ws.SendSync, ws.SendForward = false, false
		if env.WebhookSettings != ws || env.CallbackURL != "https://app.example.com/oauth/callback" || len(env.WebhookURLs) != 2 ||
			env.ConnectUI != (environments.ConnectUISettings{Theme: "dark", PrimaryColorLight: "#0be", PrimaryColorDark: "#003344", HideSecuredBy: true}) {
			t.Errorf("stored environment %+v", env)
		}
		if k, _ := bu.svc.Environments().SigningKey(ctx, bu.env.ID); k != signing {
			t.Error("PATCH /environment changed the signing key")
		}

		// Members of webhook_settings and connect_ui change one by one;
		// null clears a colour and the callback URL; [] the webhook URLs.
		r = bu.mustDo(t, 200, req{method: "PATCH", path: "/environment", body: `{"webhook_settings":{"send_sync":true},
			"connect_ui":{"primary_color_light":null},"callback_url":null,"webhook_urls":[]}`})
		want["webhook_urls"] = []any{}
		want["webhook_settings"].(map[string]any)["send_sync"] = true
		want["connect_ui"] = map[string]any{"theme": "dark", "primary_color_dark": "#003344", "hide_secured_by": true}
		want["callback_url"] = nil
		if diff := cmp.Diff(want, r.data()); diff != "" {
			t.Errorf("PATCH /environment of some members (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(want, bu.mustDo(t, 200, req{method: "PATCH", path: "/environment", body: `{}`}).data()); diff != "" {
			t.Errorf("PATCH /environment {} (-want +got):\n%s", diff)
		}

		// Bad input: 400, naming the member, and nothing changes.
		for _, c := range []struct{ body, path, code string }{
			{`{"name":"prod"}`, "name", "unrecognized_keys"},
			{`{"webhook_signing_key":"0123456789abcdef0123"}`, "webhook_signing_key", "unrecognized_keys"},
			{`{"webhook_urls":"https://hooks.example.com"}`, "webhook_urls", "invalid_type"},
			{`{"webhook_urls":null}`, "webhook_urls", "invalid_type"},
			{`{"webhook_urls":["https://a.example.com","https://b.example.com","https://c.example.com"]}`, "webhook_urls", "invalid_value"},
			{`{"webhook_urls":["ftp://hooks.example.com"]}`, "webhook_urls.0", "invalid_value"},
			{`{"webhook_urls":["https://hooks.example.com","/relative"]}`, "webhook_urls.1", "invalid_value"},
			{`{"webhook_urls":["http://10.0.0.1/hooks"]}`, "webhook_urls.0", "address_not_allowed"},
			{`{"webhook_settings":{"send_sync":"no"}}`, "webhook_settings.send_sync", "invalid_type"},
			{`{"webhook_settings":{"send_sync":null}}`, "webhook_settings.send_sync", "invalid_type"},
			{`{"webhook_settings":{"send_everything":true}}`, "webhook_settings.send_everything", "unrecognized_keys"},
			{`{"webhook_settings":[true]}`, "webhook_settings", "invalid_type"},
			{`{"connect_ui":{"theme":"neon"}}`, "connect_ui.theme", "invalid_value"},
			{`{"connect_ui":{"theme":""}}`, "connect_ui.theme", "invalid_value"},
			{`{"connect_ui":{"theme":null}}`, "connect_ui.theme", "invalid_type"},
			{`{"connect_ui":{"primary_color_light":"#12345"}}`, "connect_ui.primary_color_light", "invalid_value"},
			{`{"connect_ui":{"primary_color_dark":"red"}}`, "connect_ui.primary_color_dark", "invalid_value"},
			{`{"connect_ui":{"primary_color_dark":""}}`, "connect_ui.primary_color_dark", "invalid_value"},
			{`{"connect_ui":{"hide_secured_by":"yes"}}`, "connect_ui.hide_secured_by", "invalid_type"},
			{`{"connect_ui":{"logo":"x"}}`, "connect_ui.logo", "unrecognized_keys"},
			{`{"connect_ui":null}`, "connect_ui", "invalid_type"},
			{`{"callback_url":""}`, "callback_url", "invalid_value"},
			{`{"callback_url":"/oauth/callback"}`, "callback_url", "invalid_value"},
			{`{"callback_url":"javascript:alert(1)"}`, "callback_url", "invalid_value"},
			{`{"callback_url":5}`, "callback_url", "invalid_type"},
			// A valid member does not make it through with a bad one.
			{`{"connect_ui":{"theme":"light"},"callback_url":"nope"}`, "callback_url", "invalid_value"},
			{`[]`, "", ""},
			{`null`, "", ""},
			{`{"webhook_urls":[]} {}`, "", ""},
		} {
			r := bu.do(t, req{method: "PATCH", path: "/environment", body: c.body})
			paths, codes := r.fieldPaths()
			if r.status != 400 || r.errCode() != "invalid_body" || (c.path != "" && (!slices.Contains(paths, c.path) || !slices.Contains(codes, c.code))) {
				t.Errorf("PATCH /environment %s = %d %s, want 400 invalid_body at %s (%s)", c.body, r.status, r.raw, c.path, c.code)
			}
		}
		if r := bu.do(t, req{method: "PATCH", path: "/environment"}); r.status != 400 || r.errCode() != "invalid_body" {
			t.Errorf("PATCH /environment without a body = %d %s, want 400 invalid_body", r.status, r.raw)
		}
		if diff := cmp.Diff(want, bu.mustDo(t, 200, req{method: "GET", path: "/environment"}).data()); diff != "" {
			t.Errorf("refused PATCHes changed the environment (-want +got):\n%s", diff)
		}

		// Another environment's key sees its own.
		other, err := bu.svc.Environments().Create(ctx, environments.CreateInput{Name: "other"})
		if err != nil {
			t.Fatal(err)
		}
		otherKey, _, err := bu.svc.Environments().CreateAPIKey(ctx, other.ID, environments.NewAPIKey{Name: "o", Scopes: []string{environments.ScopeAll}})
		if err != nil {
			t.Fatal(err)
		}
		r = bu.mustDo(t, 200, req{method: "GET", path: "/environment", key: otherKey})
		if r.data()["name"] != "other" || r.data()["connect_ui"].(map[string]any)["theme"] != "system" {
			t.Errorf("GET /environment with another environment's key: %s", r.raw)
		}
	})
}

// TestEnvironmentSettingsScopes: each settings route answers a key with
// only its scope, and refuses (403 forbidden, nothing changed) a key with
// every other scope but environment:*.
func TestEnvironmentSettingsScopes(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		bu := setup(t, b)
		ctx := t.Context()
		victim := func() string {
			_, id := bu.newKey(t, "victim")
			return fmt.Sprint(id)
		}
		for _, c := range []struct {
			scope  string
			rq     func() req
			status int
		}{
			{environments.ScopeSettingsRead, func() req { return req{method: "GET", path: "/environment"} }, 200},
			{environments.ScopeSettingsWrite, func() req {
				return req{method: "PATCH", path: "/environment", body: `{"connect_ui":{"theme":"light"}}`}
			}, 200},
			{environments.ScopeSettingsWrite, func() req { return req{method: "POST", path: "/environment/webhook-signing-key"} }, 200},
			{environments.ScopeKeysRead, func() req { return req{method: "GET", path: "/environment/api-keys"} }, 200},
			{environments.ScopeKeysWrite, func() req {
				return req{method: "POST", path: "/environment/api-keys", body: `{"name":"n","scopes":[]}`}
			}, 201},
			{environments.ScopeKeysWrite, func() req { return req{method: "DELETE", path: "/environment/api-keys/" + victim()} }, 204},
			{environments.ScopeEnvironmentVariablesRead, func() req { return req{method: "GET", path: "/environment-variables"} }, 200},
			{environments.ScopeEnvironmentVariablesWrite, func() req {
				return req{method: "PUT", path: "/environment-variables", body: `[{"name":"REGION","value":"eu"}]`}
			}, 204},
		} {
			only, _ := bu.newKey(t, "only "+c.scope, c.scope)
			var others []string
			for _, s := range environments.AllScopes() {
				if s != c.scope {
					others = append(others, s)
				}
			}
			allBut, _ := bu.newKey(t, "all but "+c.scope, others...)

			rq := c.rq()
			before := settingsSnapshot(t, bu)
			rq.key = allBut
			if r := bu.do(t, rq); r.status != 403 || r.errCode() != "forbidden" || !strings.Contains(r.obj()["error"].(map[string]any)["message"].(string), c.scope) {
				t.Errorf("%s %s with every scope but %s = %d %s, want 403 forbidden naming it", rq.method, rq.path, c.scope, r.status, r.raw)
			}
			if diff := cmp.Diff(before, settingsSnapshot(t, bu)); diff != "" {
				t.Errorf("%s %s refused changed the environment (-before +after):\n%s", rq.method, rq.path, diff)
			}
			rq = c.rq()
			rq.key = only
			bu.mustDo(t, c.status, rq)
		}
		vars, err := bu.svc.Environments().Variables(ctx, bu.env.ID)
		if err != nil || len(vars) != 1 || vars[0] != (environments.PlainVariable{Name: "REGION", Value: "eu"}) {
			t.Errorf("variables %v, %v", vars, err)
		}
	})
}

// settingsSnapshot is what the settings routes can change: the
// environment, its signing key, keys and variables.
func settingsSnapshot(t *testing.T, bu *bundle) string {
	t.Helper()
	ctx := t.Context()
	envs := bu.svc.Environments()
	env, err := envs.Get(ctx, bu.env.ID)
	if err != nil {
		t.Fatal(err)
	}
	signing, err := envs.WebhookSigningKey(env)
	if err != nil {
		t.Fatal(err)
	}
	env.SealedWebhookSigningKey = ""
	keys, err := envs.ListAPIKeys(ctx, bu.env.ID)
	if err != nil {
		t.Fatal(err)
	}
	vars, err := envs.Variables(ctx, bu.env.ID)
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "%+v\n%s\n", *env, signing)
	for _, k := range keys {
		fmt.Fprintf(&sb, "%d %s %s %v\n", k.ID, k.Name, k.Hint, k.Scopes)
	}
	fmt.Fprintf(&sb, "%+v\n", vars)
	return sb.String()
}

// TestAPIKeysAPI: keys are listed without their secrets, created with at
// most the scopes of the calling key (the new key shown once), and
// revoked: a revoked key is refused at once, a key cannot revoke itself,
// and another environment's keys are out of reach.
func TestAPIKeysAPI(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		bu := setup(t, b)
		seed(t, bu)
		ctx := t.Context()
		envs := bu.svc.Environments()
		created := "2026-05-01T12:00:00.000Z"
		keys, err := envs.ListAPIKeys(ctx, bu.env.ID)
		if err != nil || len(keys) != 1 {
			t.Fatalf("keys %v, %v", keys, err)
		}
		fullID := keys[0].ID

		r := bu.mustDo(t, 200, req{method: "GET", path: "/environment/api-keys"})
		want := []any{map[string]any{"id": float64(fullID), "name": "full", "hint": bu.key[len(bu.key)-4:],
			"scopes": []any{"environment:*"}, "created_at": created}}
		if diff := cmp.Diff(want, r.obj()["data"]); diff != "" {
			t.Errorf("GET /environment/api-keys (-want +got):\n%s", diff)
		}
		noSecrets(t, "GET /environment/api-keys", r, secretsOf(bu.key)...)

		// Create: the key is answered once, and works with its scopes.
		r = bu.mustDo(t, 201, req{method: "POST", path: "/environment/api-keys",
			body: `{"name":"CI – read only","scopes":["environment:connections:read","environment:integrations:read"]}`})
		d := r.data()
		newKey, _ := d["key"].(string)
		if len(newKey) < 32 || d["hint"] != newKey[len(newKey)-4:] || d["name"] != "CI – read only" || d["created_at"] != created ||
			!cmp.Equal(d["scopes"], []any{"environment:connections:read", "environment:integrations:read"}) {
			t.Errorf("POST /environment/api-keys = %s", r.raw)
		}
		newID := int64(d["id"].(float64))
		bu.mustDo(t, 200, req{method: "GET", path: "/connections", key: newKey})
		bu.mustDo(t, 403, req{method: "GET", path: "/environment-variables", key: newKey})
		r = bu.mustDo(t, 200, req{method: "GET", path: "/environment/api-keys"})
		if got := len(r.obj()["data"].([]any)); got != 2 {
			t.Errorf("%d keys listed, want 2: %s", got, r.raw)
		}
		for _, k := range r.obj()["data"].([]any) {
			if _, ok := k.(map[string]any)["key"]; ok {
				t.Errorf("a listed key has its key: %v", k)
			}
		}
		noSecrets(t, "GET /environment/api-keys", r, append(secretsOf(bu.key), secretsOf(newKey)...)...)

		// No escalation: a key grants only scopes it holds; environment:*
		// only a key that holds environment:*.
		manager, managerID := bu.newKey(t, "manager", environments.ScopeKeysWrite, environments.ScopeKeysRead, environments.ScopeProxy)
		bu.mustDo(t, 201, req{method: "POST", path: "/environment/api-keys", key: manager,
			body: `{"name":"proxy","scopes":["environment:proxy","environment:keys:read"]}`})
		everything, _ := bu.newKey(t, "every scope", environments.AllScopes()...)
		before := settingsSnapshot(t, bu)
		for _, c := range []struct {
			key, scopes, scope string
		}{
			{manager, `["environment:proxy","environment:connections:read"]`, "environment:connections:read"},
			{manager, `["environment:*"]`, "environment:*"},
			{manager, `["environment:settings:write"]`, "environment:settings:write"},
			{everything, `["environment:*"]`, "environment:*"},
		} {
			r := bu.do(t, req{method: "POST", path: "/environment/api-keys", key: c.key, body: `{"name":"x","scopes":` + c.scopes + `}`})
			msg, _ := r.obj()["error"].(map[string]any)["message"].(string)
			if r.status != 403 || r.errCode() != "forbidden" || !strings.Contains(msg, c.scope) {
				t.Errorf("escalation to %s = %d %s, want 403 forbidden naming %s", c.scopes, r.status, r.raw, c.scope)
			}
		}
		if diff := cmp.Diff(before, settingsSnapshot(t, bu)); diff != "" {
			t.Errorf("refused escalations changed the keys (-before +after):\n%s", diff)
		}
		all := `["` + strings.Join(environments.AllScopes(), `","`) + `"]`
		bu.mustDo(t, 201, req{method: "POST", path: "/environment/api-keys", key: everything, body: `{"name":"all","scopes":` + all + `}`})
		bu.mustDo(t, 201, req{method: "POST", path: "/environment/api-keys", body: `{"name":"admin","scopes":["environment:*"]}`})
		bu.mustDo(t, 201, req{method: "POST", path: "/environment/api-keys", body: `{"name":"nothing","scopes":[]}`})

		// Bad bodies: 400 naming the member; nothing is created.
		before = settingsSnapshot(t, bu)
		for _, c := range []struct{ body, path, code string }{
			{`{"scopes":[]}`, "name", "invalid_value"},
			{`{"name":null,"scopes":[]}`, "name", "invalid_type"},
			{`{"name":"","scopes":[]}`, "name", "invalid_value"},
			{`{"name":"  ","scopes":[]}`, "name", "invalid_value"},
			{`{"name":"a\nb","scopes":[]}`, "name", "invalid_value"},
			{`{"name":"` + strings.Repeat("n", 256) + `","scopes":[]}`, "name", "invalid_value"},
			{`{"name":7,"scopes":[]}`, "name", "invalid_type"},
			{`{"name":"x"}`, "scopes", "invalid_value"},
			{`{"name":"x","scopes":null}`, "scopes", "invalid_type"},
			{`{"name":"x","scopes":"environment:proxy"}`, "scopes", "invalid_type"},
			{`{"name":"x","scopes":["environment:proxy","environment:everything"]}`, "scopes.1", "invalid_value"},
			{`{"name":"x","scopes":[""]}`, "scopes.0", "invalid_value"},
			{`{"name":"x","scopes":["environment:proxy","environment:proxy"]}`, "scopes.1", "invalid_value"},
			{`{"name":"x","scopes":[],"secret":"sk_chosen_by_the_caller_000"}`, "secret", "unrecognized_keys"},
			{`{"name":"x","scopes":[],"key":"sk_chosen_by_the_caller_000"}`, "key", "unrecognized_keys"},
			{`["x"]`, "", ""},
		} {
			r := bu.do(t, req{method: "POST", path: "/environment/api-keys", body: c.body})
			paths, codes := r.fieldPaths()
			if r.status != 400 || r.errCode() != "invalid_body" || (c.path != "" && (!slices.Contains(paths, c.path) || !slices.Contains(codes, c.code))) {
				t.Errorf("POST /environment/api-keys %s = %d %s, want 400 invalid_body at %s (%s)", c.body, r.status, r.raw, c.path, c.code)
			}
		}
		if diff := cmp.Diff(before, settingsSnapshot(t, bu)); diff != "" {
			t.Errorf("refused creations changed the keys (-before +after):\n%s", diff)
		}

		// Revoke: the key is refused at once (it was cached: it has just
		// been used, and the clock does not move).
		bu.mustDo(t, 200, req{method: "GET", path: "/connections", key: newKey})
		// (manager may not revoke it: it holds scopes manager lacks.)
		bu.mustDo(t, 403, req{method: "DELETE", path: fmt.Sprintf("/environment/api-keys/%d", newID), key: manager})
		bu.mustDo(t, 204, req{method: "DELETE", path: fmt.Sprintf("/environment/api-keys/%d", newID)})
		if r := bu.do(t, req{method: "GET", path: "/connections", key: newKey}); r.status != 401 || r.errCode() != "unknown_account" {
			t.Errorf("a revoked key = %d %s, want 401 unknown_account", r.status, r.raw)
		}
		bu.mustDo(t, 404, req{method: "DELETE", path: fmt.Sprintf("/environment/api-keys/%d", newID)})

		// A key cannot revoke itself, and keeps working.
		r = bu.do(t, req{method: "DELETE", path: fmt.Sprintf("/environment/api-keys/%d", managerID), key: manager})
		if r.status != 409 || r.errCode() != "cannot_revoke_own_key" {
			t.Errorf("revoking the calling key = %d %s, want 409 cannot_revoke_own_key", r.status, r.raw)
		}
		r = bu.do(t, req{method: "DELETE", path: fmt.Sprintf("/environment/api-keys/%d", fullID)})
		if r.status != 409 || r.errCode() != "cannot_revoke_own_key" {
			t.Errorf("revoking the calling key = %d %s, want 409 cannot_revoke_own_key", r.status, r.raw)
		}
		bu.mustDo(t, 200, req{method: "GET", path: "/environment/api-keys", key: manager})

		// Nor revoke a key holding scopes it does not hold itself.
		r = bu.do(t, req{method: "DELETE", path: fmt.Sprintf("/environment/api-keys/%d", fullID), key: manager})
		if r.status != 403 || r.errCode() != "forbidden" || !strings.Contains(string(r.raw), environments.ScopeAll) {
			t.Errorf("revoking an environment:* key with a narrower one = %d %s, want 403 forbidden naming environment:*", r.status, r.raw)
		}
		bu.mustDo(t, 200, req{method: "GET", path: "/environment/api-keys"})

		// Another environment's keys: 404, untouched.
		other, err := envs.Create(ctx, environments.CreateInput{Name: "other"})
		if err != nil {
			t.Fatal(err)
		}
		otherKey, ok, err := envs.CreateAPIKey(ctx, other.ID, environments.NewAPIKey{Name: "o", Scopes: []string{environments.ScopeAll}})
		if err != nil {
			t.Fatal(err)
		}
		r = bu.do(t, req{method: "DELETE", path: fmt.Sprintf("/environment/api-keys/%d", ok.ID)})
		if r.status != 404 || r.errCode() != "not_found" {
			t.Errorf("revoking another environment's key = %d %s, want 404 not_found", r.status, r.raw)
		}
		bu.mustDo(t, 200, req{method: "GET", path: "/environment", key: otherKey})
		r = bu.mustDo(t, 200, req{method: "GET", path: "/environment/api-keys", key: otherKey})
		if got := r.obj()["data"].([]any); len(got) != 1 || got[0].(map[string]any)["name"] != "o" {
			t.Errorf("the other environment's keys: %s", r.raw)
		}
		for _, path := range []string{"999999", "0", "-1", "abc", "1.5", "99999999999999999999"} {
			r := bu.do(t, req{method: "DELETE", path: "/environment/api-keys/" + path})
			if r.status != 404 && !(r.status == 400 && r.errCode() == "invalid_uri_params") {
				t.Errorf("DELETE /environment/api-keys/%s = %d %s, want 404 or 400 invalid_uri_params", path, r.status, r.raw)
			}
		}
	})
}

// TestCallingKeyAPI: GET /environment/key answers the calling key, with
// its scopes, whatever they are (none included), and never the key.
func TestCallingKeyAPI(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		bu := setup(t, b)
		for _, scopes := range [][]string{nil, {environments.ScopeProxy, environments.ScopeKeysRead}, {environments.ScopeAll}} {
			raw, id := bu.newKey(t, "console", scopes...)
			r := bu.mustDo(t, 200, req{method: "GET", path: "/environment/key", key: raw})
			wantScopes := []any{}
			for _, s := range scopes {
				wantScopes = append(wantScopes, s)
			}
			want := map[string]any{"id": float64(id), "name": "console", "hint": raw[len(raw)-4:], "scopes": wantScopes, "environment": "dev"}
			if diff := cmp.Diff(want, r.data()); diff != "" {
				t.Errorf("GET /environment/key with scopes %v (-want +got):\n%s", scopes, diff)
			}
			noSecrets(t, "GET /environment/key", r, secretsOf(raw)...)
		}
		if r := bu.do(t, req{method: "GET", path: "/environment/key", key: "-"}); r.status != 401 {
			t.Errorf("GET /environment/key without a key = %d %s", r.status, r.raw)
		}
		if r := bu.do(t, req{method: "GET", path: "/environment/key", key: "sk_unknown_key_0123456789"}); r.status != 401 {
			t.Errorf("GET /environment/key with an unknown key = %d %s", r.status, r.raw)
		}
	})
}

// TestEnvironmentVariablesPutAPI: PUT /environment-variables replaces
// every variable; a bad body is 400 naming the item and changes nothing.
func TestEnvironmentVariablesPutAPI(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		bu := setup(t, b)
		long := strings.Repeat("N", 255)
		big := strings.Repeat("v", 64<<10)
		bu.mustDo(t, 204, req{method: "PUT", path: "/environment-variables",
			body: `[{"name":"REGION","value":"eu"},{"name":"_x9","value":""},{"name":"` + long + `","value":"` + big + `"}]`})
		r := bu.mustDo(t, 200, req{method: "GET", path: "/environment-variables"})
		want := []any{map[string]any{"name": long, "value": big}, map[string]any{"name": "REGION", "value": "eu"}, map[string]any{"name": "_x9", "value": ""}}
		if diff := cmp.Diff(want, r.body); diff != "" {
			t.Errorf("GET /environment-variables (-want +got):\n%s", diff)
		}
		bu.mustDo(t, 204, req{method: "PUT", path: "/environment-variables", body: `[{"name":"REGION","value":"us"},{"value":"ÿ ok","name":"B"}]`})
		r = bu.mustDo(t, 200, req{method: "GET", path: "/environment-variables"})
		want = []any{map[string]any{"name": "B", "value": "ÿ ok"}, map[string]any{"name": "REGION", "value": "us"}}
		if diff := cmp.Diff(want, r.body); diff != "" {
			t.Errorf("GET /environment-variables after a replacement (-want +got):\n%s", diff)
		}

		var many strings.Builder
		many.WriteString("[")
		for i := range 1001 {
			if i > 0 {
				many.WriteString(",")
			}
			fmt.Fprintf(&many, `{"name":"V%d","value":"x"}`, i)
		}
		many.WriteString("]")
		for _, c := range []struct{ body, path, code string }{
			{`[{"name":"A","value":"1"},{"name":"A","value":"2"}]`, "1.name", "duplicate"},
			{`[{"name":"1A","value":"1"}]`, "0.name", "invalid_value"},
			{`[{"name":"a-b","value":"1"}]`, "0.name", "invalid_value"},
			{`[{"name":"","value":"1"}]`, "0.name", "invalid_value"},
			{`[{"name":"` + strings.Repeat("N", 256) + `","value":"1"}]`, "0.name", "invalid_value"},
			{`[{"name":"A","value":"` + big + `x"}]`, "0.value", "invalid_value"},
			{`[{"name":"A"}]`, "0.value", "invalid_type"},
			{`[{"name":"A","value":null}]`, "0.value", "invalid_type"},
			{`[{"name":"A","value":5}]`, "0.value", "invalid_type"},
			{`[{"value":"1"}]`, "0.name", "invalid_type"},
			{`[{"name":"A","value":"1","secret":true}]`, "0.secret", "unrecognized_keys"},
			{`[{"name":"A","value":"1"},"B"]`, "1", "invalid_type"},
			{`[null]`, "0", "invalid_type"},
			{many.String(), "", "invalid_size"},
			{`{"name":"A","value":"1"}`, "", ""},
			{`{"REGION":"eu"}`, "", ""},
			{`null`, "", ""},
			{`[{"name":"A","value":"1"}] []`, "", ""},
			{`[{"name":"A","value":"1"},]`, "", ""},
		} {
			r := bu.do(t, req{method: "PUT", path: "/environment-variables", body: c.body})
			paths, codes := r.fieldPaths()
			if r.status != 400 || r.errCode() != "invalid_body" || (c.code != "" && !slices.Contains(codes, c.code)) ||
				(c.path != "" && !slices.Contains(paths, c.path)) {
				t.Errorf("PUT /environment-variables %.80s = %d %.300s, want 400 invalid_body at %s (%s)", c.body, r.status, r.raw, c.path, c.code)
			}
		}
		if r := bu.do(t, req{method: "PUT", path: "/environment-variables"}); r.status != 400 || r.errCode() != "invalid_body" {
			t.Errorf("PUT /environment-variables without a body = %d %s", r.status, r.raw)
		}
		r = bu.mustDo(t, 200, req{method: "GET", path: "/environment-variables"})
		if diff := cmp.Diff(want, r.body); diff != "" {
			t.Errorf("refused PUTs changed the variables (-want +got):\n%s", diff)
		}
		bu.mustDo(t, 204, req{method: "PUT", path: "/environment-variables", body: `[]`})
		if r := bu.mustDo(t, 200, req{method: "GET", path: "/environment-variables"}); !cmp.Equal(r.body, []any{}) {
			t.Errorf("after PUT []: %s", r.raw)
		}
	})
}

// signedHook is a webhook as its receiver got it.
type signedHook struct {
	header http.Header
	body   []byte
}

// TestWebhookSigningKeyRotation: POST /environment/webhook-signing-key
// answers a new random key once; the webhooks sent after it are signed
// with it, not with the old one, although the old one was cached by a
// delivery just before; no other answer shows it.
func TestWebhookSigningKeyRotation(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		got := make(chan signedHook, 8)
		rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			got <- signedHook{r.Header.Clone(), body}
		}))
		t.Cleanup(rcv.Close)
		bu := hookSetup(t, b, []string{rcv.URL + "/hooks"})
		receive := func() signedHook {
			t.Helper()
			select {
			case h := <-got:
				return h
			case <-time.After(30 * time.Second): // a failure, not a wait: deliveries take milliseconds
				t.Fatal("no webhook received")
			}
			return signedHook{}
		}
		ctx := context.Background()
		if err := bu.svc.Notify(ctx, forwardEvent(bu)); err != nil {
			t.Fatal(err)
		}
		h := receive()
		if err := webhooks.Verify(h.header, h.body, hookKey, nil); err != nil {
			t.Fatalf("a webhook before the rotation does not verify with the old key: %v", err)
		}

		r := bu.mustDo(t, 200, req{method: "POST", path: "/environment/webhook-signing-key"})
		key, _ := r.data()["signing_key"].(string)
		if len(key) < 32 || key == hookKey || len(r.data()) != 1 {
			t.Fatalf("POST /environment/webhook-signing-key = %s", r.raw)
		}
		if k, err := bu.svc.Environments().SigningKey(ctx, bu.env.ID); err != nil || k != key {
			t.Errorf("SigningKey after the rotation = %q, %v", k, err)
		}
		for _, rq := range []req{{method: "GET", path: "/environment"}, {method: "PATCH", path: "/environment", body: `{}`},
			{method: "GET", path: "/environment/api-keys"}, {method: "GET", path: "/environment/key"}} {
			r := bu.mustDo(t, 200, rq)
			noSecrets(t, rq.method+" "+rq.path, r, key, hookKey)
			if rq.path == "/environment" && r.data()["has_signing_key"] != true {
				t.Errorf("%s %s: has_signing_key is not true: %s", rq.method, rq.path, r.raw)
			}
		}

		if err := bu.svc.Notify(ctx, forwardEvent(bu)); err != nil {
			t.Fatal(err)
		}
		h = receive()
		if err := webhooks.Verify(h.header, h.body, key, nil); err != nil {
			t.Errorf("a webhook after the rotation does not verify with the new key: %v", err)
		}
		if webhooks.Verify(h.header, h.body, hookKey, nil) == nil {
			t.Error("a webhook after the rotation verifies with the old key")
		}

		// A second rotation gives another key; the route takes no body.
		r = bu.mustDo(t, 200, req{method: "POST", path: "/environment/webhook-signing-key", body: `{}`})
		if k, _ := r.data()["signing_key"].(string); k == key || len(k) < 32 {
			t.Errorf("a second rotation = %s", r.raw)
		}
		for _, body := range []string{`{"signing_key":"0123456789abcdef0123"}`, `[]`, `"x"`} {
			if r := bu.do(t, req{method: "POST", path: "/environment/webhook-signing-key", body: body}); r.status != 400 || r.errCode() != "invalid_body" {
				t.Errorf("POST /environment/webhook-signing-key %s = %d %s, want 400 invalid_body", body, r.status, r.raw)
			}
		}
	})
}
