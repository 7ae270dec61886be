package functions

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/embedauth/connect/store"
)

// The bodies of testdata/deploy were sent by the real nango CLI 0.71.10
// (see that directory's README on branch clie2e): a project with the
// integration "fake", the sync items, the actions create-item and whoami
// and the on-event setup.

func readDeployBody(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "deploy", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDecodeDeployBodyCaptured(t *testing.T) {
	for _, tc := range []struct {
		file      string
		mode      string
		reconcile bool
		names     []string
		version   string
	}{
		{"all-deploy.json", deployModeAll, true, []string{"items", "create-item", "whoami", "setup"}, "1.0.0"},
		{"all-confirmation.json", deployModeAll, false, []string{"items", "create-item", "whoami", "setup"}, "1.0.0"},
		{"integration-deploy.json", deployModeIntegration, true, []string{"items", "create-item", "whoami", "setup"}, "1.0.0"},
		{"action-deploy.json", deployModeSingle, true, []string{"create-item"}, "1.0.0"},
		{"sync-confirmation.json", deployModeSingle, false, []string{"items"}, "1.0.0"},
		{"version-deploy.json", deployModeAll, true, []string{"items", "create-item", "whoami", "setup"}, "2.0.0"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			body, err := decodeDeployBody(readDeployBody(t, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if body.mode != tc.mode || body.reconcile != tc.reconcile {
				t.Errorf("mode %q, reconcile %v; want %q, %v", body.mode, body.reconcile, tc.mode, tc.reconcile)
			}
			var names []string
			for _, f := range body.fns {
				names = append(names, f.Name)
				if f.Runtime != JavaScriptRuntime || f.Integration != "fake" || f.SDKVersion != "0.71.10-zero" || f.Source != "repo" {
					t.Errorf("%s: runtime %q, integration %q, sdk %q, source %q", f.Name, f.Runtime, f.Integration, f.SDKVersion, f.Source)
				}
				if len(f.Code) == 0 || !strings.Contains(string(f.SourceCode), "import") {
					t.Errorf("%s: code of %d bytes, source %.40q", f.Name, len(f.Code), f.SourceCode)
				}
				want := tc.version
				if f.Kind == KindOnEvent {
					want = "" // on-event scripts come without one
				}
				if f.Version != want {
					t.Errorf("%s: version %q, want %q", f.Name, f.Version, want)
				}
			}
			if strings.Join(names, ",") != strings.Join(tc.names, ",") {
				t.Errorf("functions %v, want %v", names, tc.names)
			}
			if len(body.integrations) != 1 || body.integrations[0] != "fake" {
				t.Errorf("integrations %v, want [fake]", body.integrations)
			}
		})
	}
	body, err := decodeDeployBody(readDeployBody(t, "all-deploy.json"))
	if err != nil {
		t.Fatal(err)
	}
	items, create, setup := body.fns[0], body.fns[1], body.fns[3]
	d := items.Definition
	if items.Kind != KindSync || d.Runs != "1h" || !d.AutoStart || d.SyncType != "full" || len(d.Models) != 1 ||
		d.Models[0].Name != "Item" || len(d.Models[0].Schema) == 0 || d.Input != "" ||
		strings.Join(d.WebhookSubscriptions, ",") != "*" || strings.Join(d.Features, ",") != "checkpoints" {
		t.Errorf("items: %+v", d)
	}
	if c := create.Definition; create.Kind != KindAction || c.Input != "ActionInput_fake_createitem" ||
		len(c.Models) != 1 || c.Models[0].Name != "ActionOutput_fake_createitem" || c.Description != "Creates an item in the fake API" {
		t.Errorf("create-item: %+v", c)
	}
	if setup.Kind != KindOnEvent || setup.Definition.Event != EventPostConnectionCreation {
		t.Errorf("setup: kind %q, event %q", setup.Kind, setup.Definition.Event)
	}
}

// TestDecodeDeployBodyLegacy: the body of CLIs up to 0.69 (nango.yaml):
// singleDeployMode, one jsonSchema, endpoints as {"GET": path}, an input
// model object.
func TestDecodeDeployBodyLegacy(t *testing.T) {
	b := `{"flowConfigs":[{"type":"sync","syncName":"issues","providerConfigKey":"github","models":["Issue"],"runs":"every 5 minutes",
		"fileBody":{"js":"module.exports = {}","ts":"export default {}"},"endpoints":[{"GET":"/issues"}],"input":{"name":"Meta","fields":[]}}],
		"onEventScriptsByProvider":[],"jsonSchema":{"definitions":{"Issue":{"type":"object","properties":{"id":{"type":"string"}}}}},
		"reconcile":true,"debug":false,"nangoYamlBody":"integrations: {}","singleDeployMode":true,"sdkVersion":"0.69.36-yaml"}`
	body, err := decodeDeployBody([]byte(b))
	if err != nil {
		t.Fatal(err)
	}
	f := body.fns[0]
	if body.mode != deployModeSingle || f.Definition.Runs != "5m" || f.Definition.Input != "Meta" ||
		len(f.Definition.Endpoints) != 1 || f.Definition.Endpoints[0] != (Endpoint{Method: "GET", Path: "/issues"}) ||
		len(f.Definition.Models[0].Schema) == 0 {
		t.Errorf("mode %q, function %+v", body.mode, f.Definition)
	}
}

func TestDecodeDeployBodyRefused(t *testing.T) {
	valid := string(readDeployBody(t, "all-deploy.json"))
	for _, tc := range []struct {
		name, body string
		code       string // of errors[0]; the top code is invalid_body
	}{
		{"not JSON", `{"flowConfigs":`, ""},
		{"an array", `[]`, ""},
		{"no flowConfigs", `{"reconcile":true,"deployMode":"all"}`, "required"},
		{"no reconcile", `{"flowConfigs":[],"deployMode":"all"}`, "required"},
		{"bad mode", `{"flowConfigs":[],"reconcile":true,"deployMode":"some"}`, "invalid_value"},
		{"flowConfigs an object", `{"flowConfigs":{},"reconcile":true}`, "invalid_type"},
		{"reconcile a string", `{"flowConfigs":[],"reconcile":"yes"}`, "invalid_type"},
		{"bad sdkVersion", `{"flowConfigs":[],"reconcile":true,"sdkVersion":"0.71 beta"}`, "invalid_value"},
		{"bad source", `{"flowConfigs":[],"reconcile":true,"source":"My Repo"}`, "invalid_value"},
		{"flow not an object", `{"flowConfigs":[1],"reconcile":true}`, "invalid_type"},
		{"bad type", strings.Replace(valid, `"type": "sync"`, `"type": "webhook"`, 1), "invalid_value"},
		{"bad name", strings.Replace(valid, `"syncName": "items"`, `"syncName": "it ems"`, 1), "invalid_value"},
		{"no runs", strings.Replace(valid, `"runs": "every hour"`, `"runs": null`, 1), "required"},
		{"bad runs", strings.Replace(valid, `"runs": "every hour"`, `"runs": "sometimes"`, 1), CodeInvalidFrequency},
		{"short runs", strings.Replace(valid, `"runs": "every hour"`, `"runs": "every 10 seconds"`, 1), CodeSyncIntervalTooShort},
		{"bad model name", strings.Replace(valid, `"models": [
        "Item"
      ]`, `"models": ["item"]`, 1), "invalid_value"},
		{"model without schema", strings.Replace(valid, `"models": [
        "Item"
      ]`, `"models": ["Other"]`, 1), "invalid_model"},
		{"no js", strings.Replace(valid, `"js": "`, `"jsx": "`, 1), "required"},
		{"bad event", strings.Replace(valid, `"event": "post-connection-creation"`, `"event": "on-delete"`, 1), "invalid_value"},
		{"bad endpoint", strings.Replace(valid, `"endpoints": []`, `"endpoints": [{"method":"GET","path":"issues"}]`, 1), "invalid_value"},
		{"auto_start a string", strings.Replace(valid, `"auto_start": true`, `"auto_start": "true"`, 1), "invalid_type"},
		{"twice", strings.Replace(valid, `"syncName": "whoami"`, `"syncName": "create-item"`, 1), "duplicate_function"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.body == valid {
				t.Fatal("the replacement did not apply")
			}
			_, err := decodeDeployBody([]byte(tc.body))
			var e *store.Error
			if !errors.As(err, &e) || !errors.Is(err, store.ErrInvalid) || e.Message == "" {
				t.Fatalf("got %v, want an invalid_body error", err)
			}
			if tc.code == "" {
				return
			}
			if e.Code != "invalid_body" || len(e.Errors) == 0 || e.Errors[0].Code != tc.code || e.Errors[0].Message == "" {
				t.Fatalf("got %s %q %+v, want invalid_body with a problem %s", e.Code, e.Message, e.Errors, tc.code)
			}
		})
	}
	// Every problem is listed, not only the first.
	bad := strings.Replace(strings.Replace(valid, `"runs": "every hour"`, `"runs": 5`, 1), `"event": "post-connection-creation"`, `"event": 1`, 1)
	_, err := decodeDeployBody([]byte(bad))
	var e *store.Error
	if !errors.As(err, &e) || len(e.Errors) != 2 || !strings.Contains(e.Message, "1 more problem") {
		t.Errorf("two problems: %v", err)
	}
}

// TestDecodeDeployBodyTolerant: fields this server does not know are
// ignored, at every level.
func TestDecodeDeployBodyTolerant(t *testing.T) {
	var top map[string]any
	if err := json.Unmarshal(readDeployBody(t, "all-deploy.json"), &top); err != nil {
		t.Fatal(err)
	}
	top["newTopLevel"] = map[string]any{"x": 1}
	flow := top["flowConfigs"].([]any)[0].(map[string]any)
	flow["newFlowField"] = []any{1, "two"}
	flow["fileBody"].(map[string]any)["map"] = "..."
	b, _ := json.Marshal(top)
	if _, err := decodeDeployBody(b); err != nil {
		t.Fatal(err)
	}
}

func TestDecodeBundleBody(t *testing.T) {
	scope, err := decodeBundleBody(readDeployBody(t, "bundle-bundle.json"))
	if err != nil || len(scope) != 1 || scope[0] != "nosuch" {
		t.Fatalf("captured body: %v, %v", scope, err)
	}
	scope, err = decodeBundleBody([]byte(`{"reconciliationScope":{"kind":"environment"},"functions":[]}`))
	if err != nil || scope != nil {
		t.Fatalf("environment: %v, %v", scope, err)
	}
	for _, tc := range []struct{ body, code string }{
		{`{"functions":[]}`, "invalid_body"},
		{`{"reconciliationScope":{"kind":"account"},"functions":[]}`, "invalid_body"},
		{`{"reconciliationScope":{"kind":"integration"},"functions":[]}`, "invalid_body"},
		{`{"reconciliationScope":{"kind":"environment"}}`, "invalid_body"},
		{`{"reconciliationScope":{"kind":"environment"},"functions":[{"name":"x"}]}`, "functions_not_supported"},
	} {
		_, err := decodeBundleBody([]byte(tc.body))
		if store.CodeOf(err) != tc.code {
			t.Errorf("%s: %v, want %s", tc.body, err, tc.code)
		}
	}
}

// FuzzDecodeDeployBody: the decoder never panics; it refuses with an
// invalid input error, or returns functions that Deploy accepts.
func FuzzDecodeDeployBody(f *testing.F) {
	for _, name := range []string{"all-deploy.json", "action-confirmation.json"} {
		f.Add(readDeployBody(f, name))
	}
	f.Add([]byte(`{"flowConfigs":[{"type":"sync","syncName":"a","providerConfigKey":"k","models":["A"],"runs":"1h",
		"fileBody":{"js":"x"},"models_json_schema":{"definitions":{"A":{"type":"object","properties":{"id":{"type":"string"}}}}}}],
		"reconcile":true,"deployMode":"single","endpoints":[{"GET":"/a"}]}`))
	f.Add([]byte(`{"flowConfigs":[],"onEventScriptsByProvider":[{"providerConfigKey":"k","scripts":[{"name":"s","event":"validate-connection","fileBody":{"js":"x"}}]}],"reconcile":false}`))
	f.Add([]byte(`{"flowConfigs":null,"reconcile":null,"jsonSchema":[]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		body, err := decodeDeployBody(b)
		if err != nil {
			if !errors.Is(err, store.ErrInvalid) || store.CodeOf(err) == "" {
				t.Fatalf("error %v is not an invalid input with a code", err)
			}
			return
		}
		seen := map[fnCacheKey]bool{}
		for _, f := range body.fns {
			if f.Runtime != JavaScriptRuntime || len(f.Code) == 0 || !namePattern.MatchString(f.Name) || f.Integration == "" {
				t.Fatalf("accepted %+v", f)
			}
			if err := checkDeployable(f); err != nil {
				t.Fatalf("accepted a function Deploy refuses: %v", err)
			}
			if seen[identityOf(f)] {
				t.Fatalf("accepted %s %q twice", f.Kind, f.Name)
			}
			seen[identityOf(f)] = true
		}
		switch body.mode {
		case deployModeAll, deployModeIntegration, deployModeSingle:
		default:
			t.Fatalf("mode %q", body.mode)
		}
	})
}
