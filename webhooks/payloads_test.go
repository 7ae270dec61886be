package webhooks

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden.json")

var (
	t0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	t1 = time.Date(2026, 5, 1, 12, 3, 4, 567_000_000, time.FixedZone("CEST", 2*3600))
)

// goldenPayloads are the bodies checked against testdata: the exact bytes
// that are signed and sent, one file each.
func goldenPayloads() []struct {
	name    string
	typ     string
	payload any
} {
	return []struct {
		name    string
		typ     string
		payload any
	}{
		{"auth_creation", TypeAuth, &AuthPayload{
			ConnectionID: "conn-1", AuthMode: "OAUTH2", ProviderConfigKey: "github", Provider: "github",
			Environment: "dev", Operation: OperationCreation, Success: true,
			Tags:    map[string]string{"end_user_id": "u1", "organization_id": "o1"},
			EndUser: &EndUser{EndUserID: "u1", OrganizationID: "o1", EndUserEmail: "u1@example.com", Tags: map[string]string{"plan": "pro"}},
		}},
		{"auth_refresh_error", TypeAuth, AuthPayload{
			ConnectionID: "conn-1", AuthMode: "OAUTH2", ProviderConfigKey: "github", Provider: "github",
			Environment: "prod", Operation: OperationRefresh, Success: false,
			Error:   &ErrorPayload{Type: "refresh_token_external_error", Description: "invalid_grant: token revoked"},
			EndUser: &EndUser{EndUserID: "u1"},
		}},
		{"sync_success", TypeSync, &SyncPayload{
			ConnectionID: "conn-1", ProviderConfigKey: "github", SyncName: "issues", SyncVariant: "base",
			Model: "Issue", SyncType: SyncTypeIncremental, Success: true,
			Checkpoints:     &Checkpoints{From: map[string]any{"cursor": "abc", "page": 3, "done": false}, To: map[string]any{"cursor": "def"}},
			ModifiedAfter:   t0,
			ResponseResults: SyncResults{Added: 3, Updated: 1, Deleted: 0},
			QueryTimeStamp:  &t1,
		}},
		{"sync_success_empty", TypeSync, &SyncPayload{
			ConnectionID: "conn-1", ProviderConfigKey: "github", SyncName: "issues", SyncVariant: "base",
			Model: "Issue", SyncType: SyncTypeInitial, Success: true,
			Checkpoints:   &Checkpoints{},
			ModifiedAfter: t0,
		}},
		{"sync_failure", TypeSync, &SyncPayload{
			ConnectionID: "conn-1", ProviderConfigKey: "github", SyncName: "issues", SyncVariant: "base",
			Model: "Issue", SyncType: SyncTypeWebhook, Success: false,
			Error:     &ErrorPayload{Type: "script_error", Description: "boom"},
			StartedAt: t0, FailedAt: t1,
			// Success fields are not written on failure.
			ResponseResults: SyncResults{Added: 9},
		}},
		{"async_action", TypeAsyncAction, &AsyncActionPayload{
			ConnectionID: "conn-1", ProviderConfigKey: "github",
			Payload: AsyncActionResult{ID: "act_123", StatusURL: "/action/act_123"},
		}},
		{"forward", TypeForward, &ForwardPayload{
			ConnectionID: "conn-1", ProviderConfigKey: "github",
			Payload: json.RawMessage(`{"zeta":1.50,"alpha":{"b":12345678901234567890,"a":[3,2,1e2]},"html":"<a href=\"x\">&</a>","u":"é\u2028"}`),
		}},
		{"forward_unmatched", TypeForward, &ForwardPayload{
			ProviderConfigKey: "hubspot", From: "custom",
			Payload: []any{map[string]any{"portalId": 42, "eventId": "e1"}},
		}},
	}
}

func TestPayloadGolden(t *testing.T) {
	t.Parallel()
	for _, c := range goldenPayloads() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p, err := prepare(c.payload, c.typ, DefaultFrom)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Canonical(p)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", c.name+".golden.json")
			if *update {
				if err := os.WriteFile(path, append(got, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if !bytes.Equal(got, bytes.TrimSuffix(want, []byte("\n"))) {
				t.Errorf("body differs from %s:\ngot  %s\nwant %s", path, got, want)
			}
			// The golden body is canonical: re-canonicalising changes
			// nothing, and it is one line of compact JSON.
			again, err := CanonicalJSON(got)
			if err != nil || !bytes.Equal(again, got) {
				t.Errorf("not a fixed point: %s (%v)", again, err)
			}
			var m any
			if err := json.Unmarshal(got, &m); err != nil {
				t.Fatal(err)
			}
			obj, ok := m.(map[string]any)
			if !ok || obj["type"] != c.typ || obj["from"] == nil {
				t.Errorf("type/from: %s", got)
			}
		})
	}
}

// TestPayloadFields checks the field sets each type writes, independently of
// the golden files.
func TestPayloadFields(t *testing.T) {
	t.Parallel()
	keys := func(t *testing.T, typ string, p any) map[string]any {
		t.Helper()
		pp, err := prepare(p, typ, "nango")
		if err != nil {
			t.Fatal(err)
		}
		b, err := Canonical(pp)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	has := func(t *testing.T, m map[string]any, present string, absent string) {
		t.Helper()
		for _, k := range strings.Fields(present) {
			if _, ok := m[k]; !ok {
				t.Errorf("missing %q in %v", k, m)
			}
		}
		for _, k := range strings.Fields(absent) {
			if _, ok := m[k]; ok {
				t.Errorf("unexpected %q in %v", k, m)
			}
		}
	}
	common := "from type connectionId providerConfigKey syncName syncVariant model syncType success"
	ok := keys(t, TypeSync, SyncPayload{Success: true, ModifiedAfter: t0})
	has(t, ok, common+" modifiedAfter responseResults queryTimeStamp", "error startedAt failedAt checkpoints")
	if ok["queryTimeStamp"] != nil || ok["modifiedAfter"] != "2026-05-01T12:00:00.000Z" {
		t.Errorf("success sync %v", ok)
	}
	bad := keys(t, TypeSync, SyncPayload{Success: false})
	has(t, bad, common+" error startedAt failedAt", "modifiedAfter responseResults queryTimeStamp")
	if e, _ := bad["error"].(map[string]any); e == nil || e["type"] != "" {
		t.Errorf("failed sync without Error still has an error object: %v", bad)
	}
	auth := keys(t, TypeAuth, AuthPayload{EndUser: &EndUser{EndUserID: "u"}})
	has(t, auth, "from type connectionId authMode providerConfigKey provider environment operation success endUser", "error tags")
	if eu := auth["endUser"].(map[string]any); eu["tags"] == nil || eu["organizationId"] != nil {
		t.Errorf("endUser %v", eu)
	}
	fw := keys(t, TypeForward, ForwardPayload{Payload: nil})
	has(t, fw, "from type providerConfigKey payload", "connectionId")
	aa := keys(t, TypeAsyncAction, AsyncActionPayload{})
	has(t, aa, "from type connectionId providerConfigKey payload", "")
	if p := aa["payload"].(map[string]any); p["id"] == nil || p["statusUrl"] == nil {
		t.Errorf("async payload %v", p)
	}
}

func TestPrepare(t *testing.T) {
	t.Parallel()
	in := &AuthPayload{Type: "wrong"}
	out, err := prepare(in, TypeAuth, "me")
	if err != nil {
		t.Fatal(err)
	}
	if in.From != "" || in.Type != "wrong" {
		t.Errorf("prepare changed the caller's payload: %+v", in)
	}
	if a := out.(AuthPayload); a.From != "me" || a.Type != TypeAuth {
		t.Errorf("prepared %+v", a)
	}
	if out, _ := prepare(&SyncPayload{From: "kept"}, TypeSync, "me"); out.(SyncPayload).From != "kept" {
		t.Error("an explicit From was replaced")
	}
	if _, err := prepare(&SyncPayload{}, TypeAuth, "me"); err == nil {
		t.Error("a sync payload passed as an auth event")
	}
	if _, err := prepare(nil, TypeAuth, "me"); err == nil {
		t.Error("nil payload accepted")
	}
	if _, err := prepare((*ForwardPayload)(nil), TypeForward, "me"); err == nil {
		t.Error("nil *ForwardPayload accepted")
	}
	custom := map[string]any{"type": "custom", "x": 1}
	if out, err := prepare(custom, "custom", "me"); err != nil || out.(map[string]any)["x"] != 1 {
		t.Errorf("custom payload: %v %v", out, err)
	}
}

func TestCanonical(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{`{"b":1,"a":{"d":[{"z":1,"y":2}],"c":null}}`, `{"a":{"c":null,"d":[{"y":2,"z":1}]},"b":1}`},
		{` { "n" : 1.000 , "big" : 123456789012345678901234567890, "e": -1E-7 } `, `{"big":123456789012345678901234567890,"e":-1E-7,"n":1.000}`},
		{`"<&>"`, `"<&>"`},
		{`[]`, `[]`},
		{`{"a":"\u00e9\t"}`, `{"a":"é\t"}`},
	} {
		got, err := CanonicalJSON([]byte(c.in))
		if err != nil || string(got) != c.want {
			t.Errorf("CanonicalJSON(%s) = %s, %v; want %s", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{``, `{`, `{} {}`, `{"a":1}x`, `nul`} {
		if got, err := CanonicalJSON([]byte(bad)); err == nil {
			t.Errorf("CanonicalJSON(%q) = %s, want an error", bad, got)
		}
	}
	if _, err := Canonical(func() {}); err == nil {
		t.Error("Canonical of a func succeeded")
	}
}
