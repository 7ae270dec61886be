package storetest

import (
	"context"
	"testing"

	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/oplog"
	"github.com/embedauth/connect/store"
)

// unstorable is text no record can hold: Postgres refuses a NUL byte and
// invalid UTF-8 in text and jsonb.
var unstorable = []string{"a\x00b", "\xff\xfe", "caf\xe9"}

var textTests = []test{
	{"WritesRefuseUnstorableText", testWritesRefuseUnstorableText},
	{"LookupsRefuseUnstorableText", testLookupsRefuseUnstorableText},
}

// testWritesRefuseUnstorableText: a record holding text that cannot be
// stored is ErrInvalid and changes nothing, whatever the store.
func testWritesRefuseUnstorableText(t *testing.T, s Store) {
	ctx := t.Context()
	f := newFixture(t, s)
	before := takeSnapshot(t, s, f.env.ID)
	for _, bad := range unstorable {
		wantErr(t, "CreateEnvironment", s.CreateEnvironment(ctx, &environments.Environment{Name: bad, CreatedAt: ts, UpdatedAt: ts}), store.ErrInvalid)
		in := newIntegrationValue(f.env.ID, "x")
		in.DisplayName = bad
		wantErr(t, "CreateIntegration(display name)", s.CreateIntegration(ctx, in), store.ErrInvalid)
		wantErr(t, "CreateIntegration(key)", s.CreateIntegration(ctx, newIntegrationValue(f.env.ID, bad)), store.ErrInvalid)
		c := &connections.Connection{EnvironmentID: f.env.ID, IntegrationKey: "github", ConnectionID: bad, CreatedAt: ts, UpdatedAt: ts}
		wantErr(t, "CreateConnection(id)", s.CreateConnection(ctx, c), store.ErrInvalid)
		c = &connections.Connection{EnvironmentID: f.env.ID, IntegrationKey: "github", ConnectionID: "m", CreatedAt: ts, UpdatedAt: ts,
			Metadata: map[string]any{"k": []any{map[string]any{"v": bad}}}}
		wantErr(t, "CreateConnection(metadata)", s.CreateConnection(ctx, c), store.ErrInvalid)
		c = &connections.Connection{EnvironmentID: f.env.ID, IntegrationKey: "github", ConnectionID: "t", CreatedAt: ts, UpdatedAt: ts,
			Tags: map[string]string{bad: "v"}}
		wantErr(t, "CreateConnection(tag key)", s.CreateConnection(ctx, c), store.ErrInvalid)
		wantErr(t, "AppendLog", s.AppendLog(ctx, &oplog.Entry{ID: "l-" + string(rune('a'+len(bad))), EnvironmentID: f.env.ID, Type: "auth",
			Message: bad, CreatedAt: ts}), store.ErrInvalid)
	}
	diff(t, "the store after refused writes", before, takeSnapshot(t, s, f.env.ID))
}

// testLookupsRefuseUnstorableText: a lookup by text no record can hold is
// ErrInvalid in every store (Postgres cannot even compare it), not
// ErrNotFound in one and ErrInvalid in another.
func testLookupsRefuseUnstorableText(t *testing.T, s Store) {
	ctx := t.Context()
	f := newFixture(t, s)
	before := takeSnapshot(t, s, f.env.ID)
	for _, bad := range unstorable {
		_, err := s.GetEnvironmentByName(ctx, bad)
		wantErr(t, "GetEnvironmentByName", err, store.ErrInvalid)
		_, err = s.GetIntegration(ctx, f.env.ID, bad)
		wantErr(t, "GetIntegration", err, store.ErrInvalid)
		wantErr(t, "DeleteIntegration", s.DeleteIntegration(ctx, f.env.ID, bad), store.ErrInvalid)
		_, err = s.GetConnection(ctx, f.env.ID, "github", bad)
		wantErr(t, "GetConnection(id)", err, store.ErrInvalid)
		_, err = s.GetConnection(ctx, f.env.ID, bad, "u1")
		wantErr(t, "GetConnection(integration)", err, store.ErrInvalid)
		wantErr(t, "DeleteConnection", s.DeleteConnection(ctx, f.env.ID, "github", bad), store.ErrInvalid)
		err = s.WithTx(ctx, func(ctx context.Context) error { return s.LockConnection(ctx, f.env.ID, "github", bad) })
		wantErr(t, "LockConnection", err, store.ErrInvalid)
		for name, fl := range map[string]connections.Filter{
			"search":      {EnvironmentID: f.env.ID, Search: bad},
			"id":          {EnvironmentID: f.env.ID, ConnectionID: bad},
			"integration": {EnvironmentID: f.env.ID, IntegrationKeys: []string{"github", bad}},
			"tag value":   {EnvironmentID: f.env.ID, Tags: map[string]string{"k": bad}},
		} {
			_, err = s.ListConnections(ctx, fl)
			wantErr(t, "ListConnections("+name+")", err, store.ErrInvalid)
		}
		_, err = s.GetOAuthFlowByClientID(ctx, bad, 0)
		wantErr(t, "GetOAuthFlowByClientID", err, store.ErrInvalid)
		_, err = s.ListLogs(ctx, oplog.Filter{EnvironmentID: f.env.ID, IntegrationKey: bad})
		wantErr(t, "ListLogs", err, store.ErrInvalid)
		for name, fl := range map[string]oplog.Filter{
			"id":        {EnvironmentID: f.env.ID, ID: bad},
			"operation": {EnvironmentID: f.env.ID, Operation: bad},
			"status":    {EnvironmentID: f.env.ID, Status: bad},
			"after":     {EnvironmentID: f.env.ID, After: &oplog.Cursor{CreatedAt: ts, ID: bad}},
		} {
			_, err = s.ListLogs(ctx, fl)
			wantErr(t, "ListLogs("+name+")", err, store.ErrInvalid)
		}
	}
	diff(t, "the store after refused lookups", before, takeSnapshot(t, s, f.env.ID))
}
