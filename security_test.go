package connect_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/connections"
)

// TestNoPlaintextAtRest reads every raw row of every table and looks for the
// secrets the test stored.
func TestNoPlaintextAtRest(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		bu := setup(t, b)
		seed(t, bu)
		ctx := context.Background()
		if err := bu.svc.Environments().SetVariables(ctx, bu.env.ID, map[string]string{"STRIPE_KEY": "var-secret-value"}); err != nil {
			t.Fatal(err)
		}
		bu.mustDo(t, 200, req{method: "PATCH", path: "/integrations/gh", body: `{"custom":{"k":"custom-secret-value"}}`})
		signing, err := bu.svc.Environments().WebhookSigningKey(bu.env)
		if err != nil {
			t.Fatal(err)
		}
		secrets := []string{"csecret-gh", "at-c1", "rt-c1", "at-c2", "sk-live-k1", "var-secret-value", "custom-secret-value", signing, bu.key}

		var all strings.Builder
		for _, tbl := range b.tables(t) {
			for _, row := range b.rowTexts(t, tbl) {
				all.WriteString(tbl + ": " + row + "\n")
			}
		}
		if !strings.Contains(all.String(), "u1") || !strings.Contains(all.String(), "v1:test1:") {
			t.Fatalf("the dump does not hold the seeded rows:\n%s", all.String())
		}
		for _, s := range secrets {
			if strings.Contains(all.String(), s) {
				t.Errorf("plaintext secret %q found in a raw row", s)
			}
		}
	})
}

// TestReencryptSecrets adds a new primary key, re-seals everything and then
// reads it all back with the new key alone.
func TestReencryptSecrets(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		bu := setup(t, b)
		seed(t, bu)
		ctx := context.Background()
		if err := bu.svc.Environments().SetVariables(ctx, bu.env.ID, map[string]string{"A": "1", "B": "2"}); err != nil {
			t.Fatal(err)
		}
		before := snapshot(t, bu)

		newKey := connect.EncryptionKey{ID: "test2", Key: bytes.Repeat([]byte{9}, 32)}
		both, err := connect.New(connect.Config{Store: b.store, EncryptionKeys: []connect.EncryptionKey{newKey, testKey}, Now: bu.now.Now, Scheduler: schedulerFor(t, b)})
		if err != nil {
			t.Fatal(err)
		}
		n, err := both.ReencryptSecrets(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// 1 signing key + 2 variables + 1 integration + 3 connections.
		if n != 7 {
			t.Errorf("re-sealed %d values, want 7", n)
		}
		if n, err := both.ReencryptSecrets(ctx); err != nil || n != 0 {
			t.Errorf("second run re-sealed %d (%v), want 0", n, err)
		}

		onlyNew, err := connect.New(connect.Config{Store: b.store, EncryptionKeys: []connect.EncryptionKey{newKey}, Now: bu.now.Now, Scheduler: schedulerFor(t, b)})
		if err != nil {
			t.Fatal(err)
		}
		after := snapshot(t, &bundle{svc: onlyNew, env: bu.env})
		if diff := cmp.Diff(before, after); diff != "" {
			t.Errorf("data changed by re-encryption (-before +after):\n%s", diff)
		}
		conns, err := b.store.ListConnections(ctx, connections.Filter{EnvironmentID: bu.env.ID})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range conns {
			if !strings.HasPrefix(c.SealedCredentials, "v1:test2:") {
				t.Errorf("connection %s still sealed as %.12s", c.ConnectionID, c.SealedCredentials)
			}
		}
		// The old key alone can no longer read the credentials.
		oldOnly, err := connect.New(connect.Config{Store: b.store, EncryptionKeys: []connect.EncryptionKey{testKey}, Scheduler: schedulerFor(t, b)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := oldOnly.Connections().Get(ctx, bu.env.ID, "gh", "c1", connections.GetOptions{}); err == nil {
			t.Error("the retired key still opens re-sealed credentials")
		}
	})
}

// TestAPIKeysHashed checks that keys are shown once and stored as hashes.
func TestAPIKeysHashed(t *testing.T) {
	t.Parallel()
	bu := setup(t, sqliteBackend(t))
	keys, err := bu.svc.Environments().ListAPIKeys(context.Background(), bu.env.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 1 || len(keys[0].Hash) != 32 || strings.Contains(fmt.Sprintf("%+v", *keys[0]), bu.key) {
		t.Fatalf("stored key %+v", keys)
	}
	if keys[0].Hint != bu.key[len(bu.key)-4:] {
		t.Errorf("hint %q", keys[0].Hint)
	}
	if err := bu.svc.Environments().DeleteAPIKey(context.Background(), bu.env.ID, keys[0].ID); err != nil {
		t.Fatal(err)
	}
	bu.mustDo(t, 401, req{method: "GET", path: "/integrations"})
}
