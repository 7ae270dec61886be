package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/functions"
	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/oplog"
	"github.com/embedauth/connect/store"
	"github.com/embedauth/connect/webhooks"
)

// Store is what the suite tests: every store interface of connect. It has the
// method set of connect.Store, which this package does not import.
type Store interface {
	environments.Store
	integrations.Store
	connections.Store
	connections.SessionStore
	oplog.Store
	oplog.Counter
	oplog.Pruner
	webhooks.Store
	webhooks.Requeuer
	webhooks.Pruner
	store.SealedValues
	functions.RecordStore
	functions.FunctionStore
	functions.SyncStore
	functions.CheckpointStore
	functions.ActionStore
}

type test struct {
	name string
	fn   func(t *testing.T, s Store)
}

// Run runs the conformance suite. newStore returns an empty store for one
// subtest; it is called once per subtest, concurrently, and may use t for
// cleanup and for skipping.
func Run(t *testing.T, newStore func(t *testing.T) Store) {
	t.Helper()
	groups := []struct {
		name  string
		tests []test
	}{
		{"Environments", environmentTests},
		{"Integrations", integrationTests},
		{"Connections", connectionTests},
		{"ListConnections", listConnectionsTests},
		{"Import", importTests},
		{"Logs", logTests},
		{"Deliveries", deliveryTests},
		{"Retention", retentionTests},
		{"Copies", copyTests},
		{"Tx", txTests},
		{"Concurrency", concurrencyTests},
		{"Lock", lockTests},
		{"Sessions", sessionTests},
		{"OAuthFlows", flowTests},
		{"SealedValues", sealedTests},
		{"Records", recordTests},
		{"Functions", functionTests},
		{"FunctionVersions", functionVersionTests},
		{"Syncs", syncTests},
		{"SyncRuns", syncRunTests},
		{"Checkpoints", checkpointTests},
		{"ActionTasks", actionTaskTests},
		{"Text", textTests},
		{"ChangeFeed", changeFeedTests},
		{"Attempts", attemptTests},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			t.Parallel()
			for _, tc := range g.tests {
				t.Run(tc.name, func(t *testing.T) {
					t.Parallel()
					tc.fn(t, newStore(t))
				})
			}
		})
	}
}

// ts is a timestamp with microsecond precision, as the services store them.
var ts = time.Date(2025, 3, 14, 15, 9, 26, 535897000, time.UTC)

// at returns ts plus n seconds.
func at(n int) time.Time { return ts.Add(time.Duration(n) * time.Second) }

// cmpOpts treat nil and empty slices and maps as equal; the suite checks
// nil-ness of metadata separately.
var cmpOpts = []cmp.Option{cmpopts.EquateEmpty()}

func diff(t *testing.T, what string, want, got any) {
	t.Helper()
	if d := cmp.Diff(want, got, cmpOpts...); d != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", what, d)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
}

// wantErr fails unless err matches target under errors.Is.
func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s: got error %v, want %v", what, err, target)
	}
}

var errRollback = errors.New("storetest: roll back")

func newEnv(t *testing.T, s Store, name string) *environments.Environment {
	t.Helper()
	e := &environments.Environment{
		Account:                 "default",
		Name:                    name,
		WebhookURLs:             []string{"https://hooks.example.com/" + name},
		SealedWebhookSigningKey: "v1:k1:sealed-signing-key-" + name,
		WebhookSettings:         environments.DefaultWebhookSettings(),
		ConnectUI:               environments.ConnectUISettings{Theme: "system"},
		CreatedAt:               ts,
		UpdatedAt:               ts,
	}
	must(t, s.CreateEnvironment(t.Context(), e))
	if e.ID == 0 {
		t.Fatal("CreateEnvironment did not set ID")
	}
	return e
}

func newIntegrationValue(env int64, key string) *integrations.Integration {
	return &integrations.Integration{
		EnvironmentID:     env,
		UniqueKey:         key,
		Provider:          "github",
		DisplayName:       "GitHub " + key,
		IntegrationConfig: map[string]string{"app_slug": key},
		SealedCredentials: "v1:k1:sealed-app-credentials-" + key,
		CreatedAt:         ts,
		UpdatedAt:         ts,
	}
}

func newIntegration(t *testing.T, s Store, env int64, key string) *integrations.Integration {
	t.Helper()
	in := newIntegrationValue(env, key)
	must(t, s.CreateIntegration(t.Context(), in))
	if in.ID == 0 {
		t.Fatal("CreateIntegration did not set ID")
	}
	return in
}

func newConn(t *testing.T, s Store, env int64, key, connectionID string, tags map[string]string) *connections.Connection {
	t.Helper()
	c := &connections.Connection{
		EnvironmentID:     env,
		IntegrationKey:    key,
		ConnectionID:      connectionID,
		Provider:          "github",
		ConnectionConfig:  map[string]any{"subdomain": "acme"},
		Tags:              tags,
		AuthMode:          integrations.AuthModeOAuth2,
		SealedCredentials: "v1:k1:sealed-credentials-" + connectionID,
		CreatedAt:         ts,
		UpdatedAt:         ts,
	}
	must(t, s.CreateConnection(t.Context(), c))
	if c.ID == 0 || c.Version != 1 {
		t.Fatalf("CreateConnection set ID %d and Version %d, want an ID and version 1", c.ID, c.Version)
	}
	return c
}
