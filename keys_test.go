package connect_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/functions"
	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/internal/secret"
	"github.com/embedauth/connect/internal/uuid"
	"github.com/embedauth/connect/store"
)

var otherKey = connect.EncryptionKey{ID: "other2", Key: bytes.Repeat([]byte{9}, 32)}

// encryptionKeyBundle has secrets of every kind sealed under testKey, by
// the proxy bundle's Service: environment signing key and variables,
// integration credentials, connections, and a connect session with
// integrations_config_defaults.
type encryptionKeyBundle struct {
	*proxyBundle
	sessionToken string
}

func encryptionKeySetup(t *testing.T, b *backend) *encryptionKeyBundle {
	t.Helper()
	pb := proxySetup(t, b)
	if err := pb.svc.Environments().SetVariables(context.Background(), pb.env.ID, map[string]string{"REGION": "eu"}); err != nil {
		t.Fatal(err)
	}
	tok := pb.session(t, `{"end_user":{"id":"u1"},"integrations_config_defaults":{"pxo":{"connection_config":{"tenant":"acme"}}}}`)
	return &encryptionKeyBundle{proxyBundle: pb, sessionToken: tok}
}

// with returns a Service on the same Store with other encryption keys, and
// a bundle serving it (same environment and API key).
func (eb *encryptionKeyBundle) with(t *testing.T, keys ...connect.EncryptionKey) (*connect.Service, *bundle) {
	t.Helper()
	cfg := eb.cfg
	cfg.EncryptionKeys = keys
	cfg.Scheduler = schedulerFor(t, eb.b)
	svc, err := connect.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	bu := *eb.bundle
	bu.svc, bu.srv = svc, newServer(t, svc)
	return svc, &bu
}

// reads are the API calls that open a sealed value of each kind.
func (eb *encryptionKeyBundle) reads() map[string]req {
	return map[string]req{
		"connection":            {method: "GET", path: "/connections/" + pxConn + "?provider_config_key=" + pxOAuth},
		"integration":           {method: "GET", path: "/integrations/" + pxOAuth + "?include=credentials"},
		"environment variables": {method: "GET", path: "/environment-variables"},
		"proxy":                 {method: "GET", path: "/proxy/me", header: route(pxHeader)},
		"connect session":       {method: "GET", path: "/connect/session", key: eb.sessionToken},
	}
}

// TestEncryptionKeyMissing: a Service started without the key that stored
// secrets were sealed under refuses to start and says which key id it
// lacks and how many values it seals, without secret material; each read of
// such a secret answers 500 unknown_encryption_key (not server_error), and a
// key of the same id but other material answers encryption_key_mismatch.
func TestEncryptionKeyMissing(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		ctx := context.Background()
		eb := encryptionKeySetup(t, b)
		if err := eb.svc.CheckEncryptionKeys(ctx); err != nil {
			t.Fatalf("check with the key: %v", err)
		}

		svc, bu := eb.with(t, otherKey)
		err := svc.CheckEncryptionKeys(ctx)
		var mk *connect.MissingKeysError
		if !errors.As(err, &mk) || !errors.Is(err, connect.ErrEncryptionKey) || len(mk.Keys) != 1 || mk.Keys[0].ID != testKey.ID {
			t.Fatalf("CheckEncryptionKeys = %v, want the missing key %q", err, testKey.ID)
		}
		want := map[string]int{store.SealedSigningKey: 1, store.SealedVariable: 1, store.SealedIntegrationCredentials: 3,
			store.SealedConnectionCredentials: 11, store.SealedSessionDefaults: 1}
		for kind, n := range want {
			if mk.Keys[0].Values[kind] != n {
				t.Errorf("values of kind %s under the missing key: %d, want %d (all: %v)", kind, mk.Keys[0].Values[kind], n, mk.Keys[0].Values)
			}
		}
		msg := err.Error()
		if !strings.Contains(msg, `"test1"`) || !strings.Contains(msg, "11 connection_credentials") {
			t.Errorf("message does not say which key and how many values: %s", msg)
		}
		for _, secret := range []string{"pxo-secret", "key-header-123", "at-imported", eb.key, string(testKey.Key)} {
			if strings.Contains(msg, secret) {
				t.Errorf("message holds a secret: %s", msg)
			}
		}
		if err := svc.Start(ctx); !errors.Is(err, connect.ErrEncryptionKey) {
			t.Errorf("Start without the key = %v", err)
			_ = svc.Stop(ctx)
		}

		for name, rq := range eb.reads() {
			r := bu.do(t, rq)
			if r.status != 500 || r.errCode() != store.CodeUnknownEncryptionKey || !strings.Contains(string(r.raw), `\"test1\"`) {
				t.Errorf("%s without the key: %d %s", name, r.status, r.raw)
			}
		}
		if _, err := svc.Environments().SigningKey(ctx, eb.env.ID); !errors.Is(err, connect.ErrEncryptionKey) {
			t.Errorf("webhook signing key without the key: %v", err)
		}

		// The same id with other key material: refused too, and reads say
		// so.
		svc, bu = eb.with(t, connect.EncryptionKey{ID: testKey.ID, Key: otherKey.Key})
		err = svc.CheckEncryptionKeys(ctx)
		if !errors.As(err, &mk) || len(mk.Keys) != 1 || mk.Keys[0].ID != testKey.ID || !mk.Keys[0].Mismatch ||
			mk.Keys[0].Values[store.SealedConnectionCredentials] != 11 || !strings.Contains(err.Error(), `the key of id "test1" is not the key`) {
			t.Errorf("CheckEncryptionKeys with another key of the same id = %v", err)
		}
		if err := svc.Start(ctx); !errors.Is(err, connect.ErrEncryptionKey) {
			t.Errorf("Start with another key of the same id = %v", err)
			_ = svc.Stop(ctx)
		}
		for name, rq := range eb.reads() {
			if r := bu.do(t, rq); r.status != 500 || r.errCode() != store.CodeEncryptionKeyMismatch {
				t.Errorf("%s with another key of the same id: %d %s", name, r.status, r.raw)
			}
		}
	})
}

// TestEncryptionKeyRotation: with a new primary and the old key as a
// previous one, ReencryptSecrets re-seals every secret (connect sessions
// too); afterwards a Service with the new key alone passes the check,
// starts, and reads everything.
func TestEncryptionKeyRotation(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		ctx := context.Background()
		eb := encryptionKeySetup(t, b)

		rotating, bu := eb.with(t, otherKey, testKey)
		if err := rotating.CheckEncryptionKeys(ctx); err != nil {
			t.Fatalf("check with both keys: %v", err)
		}
		for name, rq := range eb.reads() {
			if r := bu.do(t, rq); r.status != 200 {
				t.Errorf("%s with both keys: %d %s", name, r.status, r.raw)
			}
		}
		n, err := rotating.ReencryptSecrets(ctx)
		if err != nil || n < 16 {
			t.Fatalf("ReencryptSecrets = %d, %v", n, err)
		}
		if ids, err := b.store.SealingKeyIDs(ctx); err != nil || len(ids) != 1 || ids[0] != otherKey.ID {
			t.Errorf("key ids after the rotation: %v, %v; want only the new key", ids, err)
		}

		svc, bu := eb.with(t, otherKey)
		if err := svc.CheckEncryptionKeys(ctx); err != nil {
			t.Fatalf("check with the new key alone: %v", err)
		}
		if err := svc.Start(ctx); err != nil {
			t.Fatalf("Start with the new key alone: %v", err)
		}
		t.Cleanup(func() { _ = svc.Stop(context.Background()) })
		for name, rq := range eb.reads() {
			if r := bu.do(t, rq); r.status != 200 {
				t.Errorf("%s with the new key alone: %d %s", name, r.status, r.raw)
			}
		}
		if k, err := svc.Environments().SigningKey(ctx, eb.env.ID); err != nil || k == "" {
			t.Errorf("webhook signing key with the new key alone: %v", err)
		}
	})
}

// TestEncryptionKeyRotationFunctions: ReencryptSecrets re-seals what
// functions store too, a sync's records and async action tasks (their
// inputs, outputs and error bodies), under the new primary key; afterwards
// the old key can be forgotten, and a Service with the new key alone
// passes the check and reads them all.
func TestEncryptionKeyRotationFunctions(t *testing.T) {
	backends(t, func(t *testing.T, b *backend) {
		ctx := context.Background()
		var cfg *connect.Config
		start := time.Now()
		f := setupSyncConfig(t, b, func(c *connect.Config) { cfg = c }, issueSync(nil, false, "every hour", true),
			functions.NewAction("fx", "shout", func(ctx context.Context, c *functions.Context, in struct{ Text string }) (map[string]string, error) {
				return map[string]string{"text": strings.ToUpper(in.Text)}, nil
			}),
			functions.NewAction("fx", "refuse", func(ctx context.Context, c *functions.Context, in struct{ Text string }) (any, error) {
				return nil, &functions.ActionError{Payload: map[string]any{"refused": in.Text}}
			}))
		f.waitRun(t, "issues", start)
		async := map[string]string{"X-Async": "true", "X-Max-Retries": "0"}
		tasks := map[string]string{} // task id by action
		results := map[string]*response{}
		for action, input := range map[string]string{"shout": `{"Text":"hello"}`, "refuse": `{"Text":"no"}`} {
			id, _ := f.mustDo(t, 202, actionReq(action, input, async)).obj()["id"].(string)
			tasks[action] = id
			waitFor(t, 20*time.Second, "the result of "+action, func() bool {
				results[action] = f.do(t, req{method: "GET", path: "/action/" + id})
				return results[action].status != 404
			})
		}
		if r := results["shout"]; r.status != 200 || r.obj()["text"] != "HELLO" {
			t.Fatalf("result of shout: %d %s", r.status, r.raw)
		}
		if r := results["refuse"]; r.status == 200 || !strings.Contains(string(r.raw), `"refused":"no"`) {
			t.Fatalf("result of refuse: %d %s", r.status, r.raw)
		}
		wantRecords := f.records(t, "")
		if len(wantRecords) != 250 {
			t.Fatalf("%d records before the rotation, want 250", len(wantRecords))
		}

		// with returns a Service on the same Store with other keys, and a
		// fixture serving it.
		with := func(keys ...connect.EncryptionKey) (*connect.Service, *syncFixture) {
			c := *cfg
			c.EncryptionKeys = keys
			c.Scheduler = schedulerFor(t, b)
			svc, err := connect.New(c)
			if err != nil {
				t.Fatal(err)
			}
			bu := *f.bundle
			bu.svc, bu.srv = svc, newServer(t, svc)
			fb := *f.fnBundle
			fb.bundle = &bu
			return svc, &syncFixture{fnBundle: &fb, issues: f.issues}
		}
		rotating, _ := with(otherKey, testKey)
		n, err := rotating.ReencryptSecrets(ctx)
		if err != nil || n < 250+4 {
			t.Fatalf("ReencryptSecrets = %d, %v; want at least the 250 records and the tasks' 4 values", n, err)
		}
		if ids, err := b.store.SealingKeyIDs(ctx); err != nil || len(ids) != 1 || ids[0] != otherKey.ID {
			t.Errorf("key ids after the rotation: %v, %v; want only the new key", ids, err)
		}
		if counts, err := b.store.ForgetSealingKeyID(ctx, testKey.ID); err != nil || len(counts) != 0 {
			t.Errorf("values still under the old key: %v, %v", counts, err)
		}

		svc, g := with(otherKey)
		if err := svc.CheckEncryptionKeys(ctx); err != nil {
			t.Fatalf("check with the new key alone: %v", err)
		}
		if d := cmp.Diff(wantRecords, g.records(t, "")); d != "" {
			t.Errorf("records with the new key alone (-before +after):\n%s", d)
		}
		for action, id := range tasks {
			r := g.do(t, req{method: "GET", path: "/action/" + id})
			if r.status != results[action].status || string(r.raw) != string(results[action].raw) {
				t.Errorf("result of %s with the new key alone: %d %s; before: %d %s", action, r.status, r.raw,
					results[action].status, results[action].raw)
			}
		}
		// The inputs, which only the instance running a task reads.
		ring, err := secret.NewKeyring(secret.Key{ID: otherKey.ID, Secret: otherKey.Key})
		if err != nil {
			t.Fatal(err)
		}
		for action, id := range tasks {
			tk, err := b.store.GetActionTask(ctx, f.env.ID, id)
			if err != nil {
				t.Fatal(err)
			}
			if in, err := ring.Open(store.SealedActionInput, tk.SealedInput); err != nil || !strings.Contains(string(in), `"Text"`) {
				t.Errorf("input of %s with the new key alone: %q, %v", action, in, err)
			}
		}
	})
}

// TestEncryptionKeyCheckFunctions: the start-up check opens a sample of
// sync records' payloads and of action tasks' inputs, outputs and error
// bodies, with their purposes, so that a key of the same id but other
// material is refused for them too.
func TestEncryptionKeyCheckFunctions(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		ctx := context.Background()
		bu := setup(t, b)
		now := time.Now().UTC().Truncate(time.Microsecond)
		if err := b.store.CreateIntegration(ctx, &integrations.Integration{EnvironmentID: bu.env.ID, UniqueKey: "gh", Provider: "github",
			CreatedAt: now, UpdatedAt: now}); err != nil {
			t.Fatal(err)
		}
		conn := &connections.Connection{EnvironmentID: bu.env.ID, IntegrationKey: "gh", ConnectionID: "c1", Provider: "github",
			AuthMode: integrations.AuthModeOAuth2, CreatedAt: now, UpdatedAt: now}
		if err := b.store.CreateConnection(ctx, conn); err != nil {
			t.Fatal(err)
		}
		// One key per kind, each sealing values of that kind only (under
		// the kind's purpose, as package functions seals them).
		keys := map[string]connect.EncryptionKey{}
		seal := func(kind string) string {
			t.Helper()
			k := connect.EncryptionKey{ID: "solo-" + strings.ReplaceAll(kind, "_", "-"), Key: bytes.Repeat([]byte{byte(len(keys) + 20)}, 32)}
			keys[kind] = k
			ring, err := secret.NewKeyring(secret.Key{ID: k.ID, Secret: k.Key})
			if err != nil {
				t.Fatal(err)
			}
			v, err := ring.Seal(ctx, kind, []byte(`{"v":1}`))
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
		if store.SealedRecordPayload != functions.PurposeRecordPayload {
			t.Fatalf("the kind of record payloads is not their purpose")
		}
		scope := functions.RecordScope{EnvironmentID: bu.env.ID, ConnectionID: conn.ID, Model: "Issue", Variant: functions.BaseVariant}
		if _, err := b.store.SaveRecords(ctx, scope, []functions.RecordWrite{{ID: "r1", SealedPayload: seal(store.SealedRecordPayload), Hash: "h"}}, now, 0); err != nil {
			t.Fatal(err)
		}
		plain, err := secret.NewKeyring(secret.Key{ID: testKey.ID, Secret: testKey.Key})
		if err != nil {
			t.Fatal(err)
		}
		for _, kind := range []string{store.SealedActionInput, store.SealedActionOutput, store.SealedActionError} {
			input, err := plain.Seal(ctx, store.SealedActionInput, []byte(`{}`))
			if err != nil {
				t.Fatal(err)
			}
			tk := &functions.ActionTask{ID: uuid.New(), EnvironmentID: bu.env.ID, ConnectionID: conn.ID, Integration: "gh",
				ConnectionRef: "c1", ActionName: "a", SealedInput: input, Status: functions.TaskPending, CreatedAt: now, UpdatedAt: now}
			switch kind {
			case store.SealedActionInput:
				tk.SealedInput = seal(kind)
			case store.SealedActionOutput:
				tk.Status, tk.SealedOutput, tk.FinishedAt = functions.TaskSucceeded, seal(kind), &now
			case store.SealedActionError:
				tk.Status, tk.SealedError, tk.ErrorStatus, tk.FinishedAt = functions.TaskFailed, seal(kind), 400, &now
			}
			if err := b.store.CreateActionTask(ctx, tk); err != nil {
				t.Fatal(err)
			}
		}

		// With every key: no error (each sample opens with its purpose).
		all, wrong := []connect.EncryptionKey{testKey}, []connect.EncryptionKey{testKey}
		for _, k := range keys {
			all = append(all, k)
			wrong = append(wrong, connect.EncryptionKey{ID: k.ID, Key: otherKey.Key})
		}
		check := func(keys []connect.EncryptionKey) error {
			cfg := connect.Config{Store: b.store, EncryptionKeys: keys, Scheduler: schedulerFor(t, b)}
			svc, err := connect.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			return svc.CheckEncryptionKeys(ctx)
		}
		if err := check(all); err != nil {
			t.Fatalf("check with every key: %v", err)
		}
		// Same ids, other material: each refused as a mismatch, with its
		// value counted.
		var mk *connect.MissingKeysError
		if err := check(wrong); !errors.As(err, &mk) {
			t.Fatalf("check with other material = %v, want a MissingKeysError", err)
		}
		got := map[string]connect.MissingKey{}
		for _, k := range mk.Keys {
			got[k.ID] = k
		}
		for kind, k := range keys {
			m, ok := got[k.ID]
			if !ok || !m.Mismatch || !cmp.Equal(m.Values, map[string]int{kind: 1}) {
				t.Errorf("the key of %s with other material: %+v (found %v), want a mismatch of one %s value", kind, m, ok, kind)
			}
		}
		if len(mk.Keys) != len(keys) {
			t.Errorf("check with other material named %d keys, want %d: %v", len(mk.Keys), len(keys), mk)
		}
	})
}
