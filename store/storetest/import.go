package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/oplog"
	"github.com/embedauth/connect/store"
)

var importTests = []test{
	{"CreateAndUpdate", testImportCreateAndUpdate},
	{"Replace", testImportReplace},
	{"AllOrNone", testImportAllOrNone},
	{"Environments", testImportEnvironments},
	{"Many", testImportMany},
	{"KeyIDs", testImportKeyIDs},
	{"Logs", testAppendLogs},
	{"WithLogs", testImportWithLogs},
}

// importItem returns an item creating connection id of integration key,
// with every field set.
func importItem(env int64, key, id string) *connections.ImportItem {
	return &connections.ImportItem{Connection: &connections.Connection{
		EnvironmentID:        env,
		IntegrationKey:       key,
		ConnectionID:         id,
		Provider:             "github",
		ConnectionConfig:     map[string]any{"subdomain": "new-" + id},
		Metadata:             map[string]any{"plan": "imported", "n": float64(1)},
		Tags:                 map[string]string{"end_user_id": "imported-" + id},
		AuthMode:             integrations.AuthModeOAuth2,
		SealedCredentials:    "v1:k1:imported-" + id,
		CredentialsExpiresAt: timePtr(at(7200)),
		Errors:               []connections.Error{},
		CreatedAt:            at(50),
		UpdatedAt:            at(50),
	}, ReplaceConnectionConfig: true, ReplaceMetadata: true, ReplaceTags: true}
}

// testImportCreateAndUpdate: new identities are created as CreateConnection
// creates them; an existing one gets the import's credentials, errors and
// UpdatedAt, loses its refresh bookkeeping, and keeps its other fields.
func testImportCreateAndUpdate(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	newIntegration(t, s, env.ID, "github")
	newIntegration(t, s, env.ID, "slack")
	old := newConn(t, s, env.ID, "github", "old", map[string]string{"team": "red"})
	old.Metadata = map[string]any{"plan": "old"}
	old.WebhookURLOverride = "https://hooks.example.com/old"
	old.Errors = []connections.Error{{Type: "auth", LogID: "log-1"}}
	old.LastFetchedAt = timePtr(at(5))
	old.LastRefreshFailure = timePtr(at(6))
	old.RefreshAttempts = 3
	must(t, s.UpdateConnection(ctx, old))

	n1 := importItem(env.ID, "github", "n1")
	n1.Connection.WebhookURLOverride = "https://hooks.example.com/n1"
	n1.Connection.LastFetchedAt = timePtr(at(1))
	n1.Connection.LastRefreshFailure = timePtr(at(2))
	n1.Connection.RefreshAttempts = 2
	n2 := importItem(env.ID, "slack", "n1") // the same connection id under another integration
	n2.Connection.Metadata, n2.Connection.Tags = nil, nil
	upd := importItem(env.ID, "github", "old")
	upd.Connection.Provider = "ignored"
	upd.Connection.AuthMode = integrations.AuthModeAPIKey
	upd.Connection.CredentialsExpiresAt = nil
	upd.Connection.WebhookURLOverride = "https://hooks.example.com/ignored"
	upd.ReplaceConnectionConfig, upd.ReplaceTags = false, false
	wantN1, wantN2 := storedConnection(n1.Connection), storedConnection(n2.Connection)

	must(t, s.ImportConnections(ctx, []*connections.ImportItem{n1, upd, n2}))
	if !n1.Created || !n2.Created || upd.Created {
		t.Errorf("Created = %v, %v, %v; want true, false, true", n1.Created, upd.Created, n2.Created)
	}
	if n1.Connection.ID == 0 || n2.Connection.ID == 0 || n1.Connection.ID == n2.Connection.ID ||
		n1.Connection.ID == old.ID || n2.Connection.ID == old.ID {
		t.Errorf("IDs of the created connections: %d and %d (existing %d)", n1.Connection.ID, n2.Connection.ID, old.ID)
	}
	if n1.Connection.Version != 1 || n2.Connection.Version != 1 {
		t.Errorf("Versions of the created connections: %d and %d, want 1", n1.Connection.Version, n2.Connection.Version)
	}
	wantN1.ID, wantN1.Version = n1.Connection.ID, 1
	wantN2.ID, wantN2.Version = n2.Connection.ID, 1
	got, err := s.GetConnection(ctx, env.ID, "github", "n1")
	must(t, err)
	diff(t, "created connection", wantN1, got)
	got, err = s.GetConnection(ctx, env.ID, "slack", "n1")
	must(t, err)
	diff(t, "created connection without metadata or tags", wantN2, got)
	if got.Metadata != nil {
		t.Errorf("nil Metadata came back as %#v", got.Metadata)
	}

	wantOld := storedConnection(old)
	wantOld.Version = old.Version + 1
	wantOld.AuthMode = integrations.AuthModeAPIKey
	wantOld.SealedCredentials = "v1:k1:imported-old"
	wantOld.CredentialsExpiresAt = nil
	wantOld.Errors = []connections.Error{}
	wantOld.UpdatedAt = at(50)
	wantOld.LastRefreshFailure, wantOld.RefreshAttempts = nil, 0
	wantOld.Metadata = map[string]any{"plan": "imported", "n": float64(1)}
	got, err = s.GetConnection(ctx, env.ID, "github", "old")
	must(t, err)
	diff(t, "updated connection", wantOld, got)
	diff(t, "the item of the updated connection", wantOld, upd.Connection)
}

// testImportReplace: the Replace fields decide which of config, metadata
// and tags an update replaces, also with empty and nil values.
func testImportReplace(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	newIntegration(t, s, env.ID, "github")
	for _, tc := range []struct {
		name                string
		cfg, md, tags       bool
		wantCfg, wantMD     map[string]any
		wantTags            map[string]string
		newCfg, newMD       map[string]any
		newTags             map[string]string
		nilMetadataExpected bool
	}{
		{name: "none", wantCfg: map[string]any{"subdomain": "acme"}, wantMD: map[string]any{"k": "old"}, wantTags: map[string]string{"t": "old"},
			newCfg: map[string]any{"x": "y"}, newMD: map[string]any{"x": "y"}, newTags: map[string]string{"x": "y"}},
		{name: "all", cfg: true, md: true, tags: true, wantCfg: map[string]any{"x": "y"}, wantMD: map[string]any{"x": "y"}, wantTags: map[string]string{"x": "y"},
			newCfg: map[string]any{"x": "y"}, newMD: map[string]any{"x": "y"}, newTags: map[string]string{"x": "y"}},
		{name: "empty", cfg: true, md: true, tags: true, wantCfg: map[string]any{}, wantMD: map[string]any{}, wantTags: map[string]string{},
			newCfg: map[string]any{}, newMD: map[string]any{}, newTags: map[string]string{}},
		{name: "nil metadata", md: true, wantCfg: map[string]any{"subdomain": "acme"}, wantTags: map[string]string{"t": "old"},
			nilMetadataExpected: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newConn(t, s, env.ID, "github", tc.name, map[string]string{"t": "old"})
			c.Metadata = map[string]any{"k": "old"}
			must(t, s.UpdateConnection(ctx, c))
			it := importItem(env.ID, "github", tc.name)
			it.Connection.ConnectionConfig, it.Connection.Metadata, it.Connection.Tags = tc.newCfg, tc.newMD, tc.newTags
			it.ReplaceConnectionConfig, it.ReplaceMetadata, it.ReplaceTags = tc.cfg, tc.md, tc.tags
			must(t, s.ImportConnections(ctx, []*connections.ImportItem{it}))
			got, err := s.GetConnection(ctx, env.ID, "github", tc.name)
			must(t, err)
			diff(t, "connection config", tc.wantCfg, got.ConnectionConfig)
			diff(t, "metadata", tc.wantMD, got.Metadata)
			diff(t, "tags", tc.wantTags, got.Tags)
			if tc.nilMetadataExpected != (got.Metadata == nil) {
				t.Errorf("metadata %#v; want nil: %v", got.Metadata, tc.nilMetadataExpected)
			}
			if tc.wantMD != nil && got.Metadata == nil {
				t.Errorf("metadata came back nil, want %#v", tc.wantMD)
			}
		})
	}
}

// testImportAllOrNone: a missing integration or an identity given twice
// refuses the whole call, which then leaves an enclosing transaction
// usable; a call in a transaction that rolls back leaves nothing.
func testImportAllOrNone(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	newIntegration(t, s, env.ID, "github")
	old := newConn(t, s, env.ID, "github", "old", nil)
	all := func() []*connections.Connection {
		t.Helper()
		list, err := s.ListConnections(ctx, connections.Filter{})
		must(t, err)
		return list
	}
	before := all()

	must(t, s.ImportConnections(ctx, nil))
	diff(t, "connections after an empty import", before, all())

	missing := []*connections.ImportItem{importItem(env.ID, "github", "a"), importItem(env.ID, "github", "old"),
		importItem(env.ID, "nope", "b")}
	wantErr(t, "ImportConnections(missing integration)", s.ImportConnections(ctx, missing), store.ErrNotFound)
	diff(t, "connections after a refused import", before, all())
	wantErr(t, "ImportConnections(one item, missing integration)",
		s.ImportConnections(ctx, []*connections.ImportItem{importItem(env.ID, "nope", "old")}), store.ErrNotFound)
	wantErr(t, "ImportConnections(one item, missing environment)",
		s.ImportConnections(ctx, []*connections.ImportItem{importItem(env.ID+1000, "github", "old")}), store.ErrNotFound)
	diff(t, "connections after a refused import", before, all())

	twice := []*connections.ImportItem{importItem(env.ID, "github", "a"), importItem(env.ID, "github", "old"),
		importItem(env.ID, "github", "a")}
	wantErr(t, "ImportConnections(identity twice)", s.ImportConnections(ctx, twice), store.ErrConflict)
	diff(t, "connections after a refused import", before, all())

	err := s.WithTx(ctx, func(ctx context.Context) error {
		must(t, s.ImportConnections(ctx, []*connections.ImportItem{importItem(env.ID, "github", "a"), importItem(env.ID, "github", "old")}))
		return errRollback
	})
	wantErr(t, "WithTx", err, errRollback)
	diff(t, "connections after a rolled back import", before, all())

	// Refused inside a transaction, the transaction goes on.
	err = s.WithTx(ctx, func(ctx context.Context) error {
		wantErr(t, "ImportConnections(missing integration) in a transaction",
			s.ImportConnections(ctx, []*connections.ImportItem{importItem(env.ID, "github", "x"), importItem(env.ID, "nope", "y")}), store.ErrNotFound)
		wantErr(t, "ImportConnections(one item, missing integration) in a transaction",
			s.ImportConnections(ctx, []*connections.ImportItem{importItem(env.ID, "nope", "y")}), store.ErrNotFound)
		wantErr(t, "ImportConnections(identity twice) in a transaction",
			s.ImportConnections(ctx, []*connections.ImportItem{importItem(env.ID, "github", "x"), importItem(env.ID, "github", "x")}), store.ErrConflict)
		return s.ImportConnections(ctx, []*connections.ImportItem{importItem(env.ID, "github", "z")})
	})
	must(t, err)
	list := all()
	if len(list) != 2 || list[0].ID != old.ID || list[1].ConnectionID != "z" {
		t.Errorf("after the transaction: %d connections %v; want old and z", len(list), list)
	}
}

// testImportEnvironments: one call may span environments; a missing
// integration in one refuses all of them; nothing of one environment
// changes another.
func testImportEnvironments(t *testing.T, s Store) {
	ctx := t.Context()
	a, b := newEnv(t, s, "a"), newEnv(t, s, "b")
	newIntegration(t, s, a.ID, "github")
	newIntegration(t, s, b.ID, "github")
	newIntegration(t, s, b.ID, "slack")
	inB := newConn(t, s, b.ID, "github", "same", map[string]string{"env": "b"})

	wantErr(t, "ImportConnections(missing integration in the second environment)",
		s.ImportConnections(ctx, []*connections.ImportItem{importItem(a.ID, "github", "x"), importItem(b.ID, "nope", "x")}), store.ErrNotFound)
	if list, err := s.ListConnections(ctx, connections.Filter{EnvironmentID: a.ID}); err != nil || len(list) != 0 {
		t.Errorf("environment a after a refused import: %v, %v", list, err)
	}
	wantErr(t, "ImportConnections(slack exists in b only)",
		s.ImportConnections(ctx, []*connections.ImportItem{importItem(b.ID, "slack", "x"), importItem(a.ID, "slack", "x")}), store.ErrNotFound)

	items := []*connections.ImportItem{importItem(b.ID, "slack", "x"), importItem(a.ID, "github", "same"), importItem(b.ID, "github", "new")}
	must(t, s.ImportConnections(ctx, items))
	for i, want := range []bool{true, true, true} {
		if items[i].Created != want {
			t.Errorf("item %d Created = %v, want %v", i, items[i].Created, want)
		}
	}
	got, err := s.GetConnection(ctx, b.ID, "github", "same")
	must(t, err)
	diff(t, "the connection of the other environment", storedConnection(inB), got)
	got, err = s.GetConnection(ctx, a.ID, "github", "same")
	must(t, err)
	if got.EnvironmentID != a.ID || got.Tags["end_user_id"] != "imported-same" {
		t.Errorf("imported connection of a: %+v", got)
	}
}

// testImportMany: a batch of the API's largest size, new and existing
// connections interleaved, comes back in the callers' order.
func testImportMany(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	newIntegration(t, s, env.ID, "github")
	const n = connections.MaxImportBatch
	for i := 0; i < n; i += 3 {
		newConn(t, s, env.ID, "github", fmt.Sprintf("c%04d", i), nil)
	}
	items := make([]*connections.ImportItem, n)
	for i := range items {
		// Reversed: the Store's order of work is not the callers'.
		items[i] = importItem(env.ID, "github", fmt.Sprintf("c%04d", n-1-i))
	}
	must(t, s.ImportConnections(ctx, items))
	ids := map[int64]bool{}
	for i, it := range items {
		if want := (n-1-i)%3 != 0; it.Created != want {
			t.Fatalf("item %d (%s) Created = %v, want %v", i, it.Connection.ConnectionID, it.Created, want)
		}
		if ids[it.Connection.ID] {
			t.Fatalf("item %d has the ID %d of another item", i, it.Connection.ID)
		}
		ids[it.Connection.ID] = true
		got, err := s.GetConnection(ctx, env.ID, "github", it.Connection.ConnectionID)
		must(t, err)
		if got.ID != it.Connection.ID || got.SealedCredentials != "v1:k1:imported-"+it.Connection.ConnectionID {
			t.Fatalf("item %d: stored %d %q, item %d", i, got.ID, got.SealedCredentials, it.Connection.ID)
		}
	}
	count, err := s.CountConnections(ctx, env.ID, "github")
	must(t, err)
	if count != n {
		t.Errorf("CountConnections = %d, want %d", count, n)
	}
}

// testImportKeyIDs: the key ids of imported credentials are registered,
// those of created and of updated connections.
func testImportKeyIDs(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	newIntegration(t, s, env.ID, "github")
	newConn(t, s, env.ID, "github", "old", nil)
	items := []*connections.ImportItem{importItem(env.ID, "github", "a"), importItem(env.ID, "github", "b"),
		importItem(env.ID, "github", "old"), importItem(env.ID, "github", "plain")}
	items[0].Connection.SealedCredentials = "v1:import-a:x"
	items[1].Connection.SealedCredentials = "v1:import-b:x"
	items[2].Connection.SealedCredentials = "v1:import-old:x"
	items[3].Connection.SealedCredentials = "v1:not a key id:x"
	must(t, s.ImportConnections(ctx, items))
	ids := keyIDs(t, s)
	for _, id := range []string{"import-a", "import-b", "import-old"} {
		if !slices.Contains(ids, id) {
			t.Errorf("SealingKeyIDs %v lack %q", ids, id)
		}
	}
	if slices.Contains(ids, "not a key id") {
		t.Errorf("SealingKeyIDs %v hold the id of a value that is not sealed", ids)
	}
}

// testAppendLogs: AppendLogs stores every entry or, when an ID is stored
// already or given twice, none.
func testAppendLogs(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	entry := func(id string, n int) *oplog.Entry {
		return &oplog.Entry{ID: id, EnvironmentID: env.ID, Type: "connection", Operation: "import_create",
			Status: oplog.StatusSuccess, IntegrationKey: "github", ConnectionID: id, Message: "connection imported",
			Meta: map[string]any{"auth_mode": "OAUTH2", "n": float64(n)}, CreatedAt: at(n)}
	}
	must(t, s.AppendLogs(ctx, nil))
	batch := []*oplog.Entry{entry("l1", 1), entry("l2", 2), entry("l3", 3)}
	batch[1].Meta = nil
	batch[2].Status = oplog.StatusFailure
	must(t, s.AppendLogs(ctx, batch))
	list := func() []*oplog.Entry {
		t.Helper()
		got, err := s.ListLogs(ctx, oplog.Filter{EnvironmentID: env.ID})
		must(t, err)
		return got
	}
	want := []*oplog.Entry{batch[2], batch[1], batch[0]}
	diff(t, "logs", want, list())
	if got := list(); got[1].Meta != nil {
		t.Errorf("nil Meta came back as %#v", got[1].Meta)
	}
	wantErr(t, "AppendLogs(stored id)", s.AppendLogs(ctx, []*oplog.Entry{entry("l4", 4), entry("l2", 5)}), store.ErrConflict)
	wantErr(t, "AppendLogs(id twice)", s.AppendLogs(ctx, []*oplog.Entry{entry("l5", 4), entry("l5", 5)}), store.ErrConflict)
	diff(t, "logs after refused batches", want, list())
	err := s.WithTx(ctx, func(ctx context.Context) error {
		wantErr(t, "AppendLogs(stored id) in a transaction", s.AppendLogs(ctx, []*oplog.Entry{entry("l1", 9)}), store.ErrConflict)
		return s.AppendLogs(ctx, []*oplog.Entry{entry("l6", 6)})
	})
	must(t, err)
	if got := list(); len(got) != 4 || got[0].ID != "l6" {
		t.Errorf("after the transaction: %v", got)
	}
}

// testImportWithLogs: an ImportItem's Log is stored with its connection,
// its Operation set by outcome, in a batch and alone; a Log ID stored
// already, or given twice, fails the import with nothing written.
func testImportWithLogs(t *testing.T, s Store) {
	ctx := t.Context()
	env := newEnv(t, s, "dev")
	newIntegration(t, s, env.ID, "github")
	newConn(t, s, env.ID, "github", "old", nil)
	logged := func(id string, n int) *connections.ImportItem {
		it := importItem(env.ID, "github", id)
		it.Log = &oplog.Entry{ID: "log-" + id, EnvironmentID: env.ID, Type: "connection", Operation: "placeholder",
			Status: oplog.StatusSuccess, IntegrationKey: "github", ConnectionID: id, Message: "connection imported",
			Meta: map[string]any{"auth_mode": "OAUTH2", "n": float64(n)}, CreatedAt: at(n)}
		return it
	}
	list := func() []*oplog.Entry {
		t.Helper()
		got, err := s.ListLogs(ctx, oplog.Filter{EnvironmentID: env.ID})
		must(t, err)
		return got
	}
	batch := []*connections.ImportItem{logged("a", 1), logged("old", 2), logged("b", 3)}
	must(t, s.ImportConnections(ctx, batch))
	for i, want := range []string{connections.OpImportCreate, connections.OpImportUpdate, connections.OpImportCreate} {
		if got := batch[i].Log.Operation; got != want {
			t.Errorf("batch item %d: Log.Operation = %q, want %q", i, got, want)
		}
	}
	one := []*connections.ImportItem{logged("a", 4)}
	one[0].Log.ID = "log-a-again"
	must(t, s.ImportConnections(ctx, one))
	if one[0].Log.Operation != connections.OpImportUpdate {
		t.Errorf("single item: Log.Operation = %q, want %q", one[0].Log.Operation, connections.OpImportUpdate)
	}
	want := []*oplog.Entry{one[0].Log, batch[2].Log, batch[1].Log, batch[0].Log}
	diff(t, "logs", want, list())

	// Refused: nothing of the import is written.
	stored := logged("c", 5)
	stored.Log.ID = "log-b"
	wantErr(t, "ImportConnections(stored log id)", s.ImportConnections(ctx, []*connections.ImportItem{logged("d", 5), stored}), store.ErrConflict)
	twice := logged("f", 6)
	twice.Log.ID = "log-e"
	wantErr(t, "ImportConnections(log id twice)", s.ImportConnections(ctx, []*connections.ImportItem{logged("e", 6), twice}), store.ErrConflict)
	single := logged("g", 7)
	single.Log.ID = "log-a"
	wantErr(t, "ImportConnections(one item, stored log id)", s.ImportConnections(ctx, []*connections.ImportItem{single}), store.ErrConflict)
	diff(t, "logs after refused imports", want, list())
	for _, id := range []string{"c", "d", "e", "f", "g"} {
		if _, err := s.GetConnection(ctx, env.ID, "github", id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("connection %q after the refused imports: %v, want ErrNotFound", id, err)
		}
	}
}
