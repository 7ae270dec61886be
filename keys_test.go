package connect_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/embedauth/connect"
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
