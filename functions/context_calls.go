package functions

import (
	"context"
	"encoding/json"
	"iter"

	"github.com/embedauth/connect/connections"
)

// The calls below are a run's reach beyond its own connection, within its
// environment: what Nango's functions may do through their SDK (another
// connection's proxy or credentials, another action, a sync's schedule).
// Every one stays inside the run's environment.

// ProxyFor is Proxy for another connection of the run's environment
// (Nango's proxy with providerConfigKey and connectionId overrides): an
// empty integration or connectionID is the run's own.
func (c *Context) ProxyFor(ctx context.Context, integration, connectionID string, r ProxyRequest) (*ProxyResponse, error) {
	if (integration == "" || integration == c.Integration) && (connectionID == "" || connectionID == c.ConnectionID) {
		return c.Proxy(ctx, r)
	}
	other := &Context{EnvironmentID: c.EnvironmentID, Integration: c.Integration, ConnectionID: c.ConnectionID,
		Kind: c.Kind, Name: c.Name, RunID: c.RunID, LogID: c.LogID, svc: c.svc}
	if integration != "" {
		other.Integration = integration
	}
	if connectionID != "" {
		other.ConnectionID = connectionID
	}
	return other.Proxy(ctx, r)
}

// ConnectionOf returns a connection of the run's environment with its
// credentials (the run's own for empty integration and connectionID),
// refreshed first when forceRefresh is set or they are about to expire.
func (c *Context) ConnectionOf(ctx context.Context, integration, connectionID string, forceRefresh bool) (*connections.Connection, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if integration == "" {
		integration = c.Integration
	}
	if connectionID == "" {
		connectionID = c.ConnectionID
	}
	return c.svc.cfg.Connections.Get(ctx, c.EnvironmentID, integration, connectionID, connections.GetOptions{ForceRefresh: forceRefresh})
}

// TriggerAction runs an action of the run's environment now and returns
// its output, as POST /action/trigger does (Nango's triggerAction).
func (c *Context) TriggerAction(ctx context.Context, integration, connectionID, action string, input json.RawMessage) (json.RawMessage, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return c.svc.RunAction(ctx, ActionCall{EnvironmentID: c.EnvironmentID, Integration: integration,
		ConnectionID: connectionID, Action: action, Input: input})
}

// TriggerSync starts runs of syncs of the run's environment now (Nango's
// triggerSync), as POST /sync/trigger does.
func (c *Context) TriggerSync(ctx context.Context, integration, connectionID string, syncs []SyncRef, o TriggerOptions) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return c.svc.TriggerSync(ctx, SyncTarget{EnvironmentID: c.EnvironmentID, Integration: integration, ConnectionID: connectionID, Syncs: syncs}, o)
}

// StartSync resumes paused syncs of the run's environment (Nango's
// startSync), as POST /sync/start does.
func (c *Context) StartSync(ctx context.Context, integration, connectionID string, syncs []SyncRef) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return c.svc.StartSync(ctx, SyncTarget{EnvironmentID: c.EnvironmentID, Integration: integration, ConnectionID: connectionID, Syncs: syncs})
}

// IntegrationInfo is the run's integration as a function sees it (Nango's
// getIntegration): no credentials.
type IntegrationInfo struct {
	UniqueKey   string `json:"unique_key"`
	Provider    string `json:"provider"`
	DisplayName string `json:"display_name"`
	CreatedAt   string `json:"created_at"`
	UpdatedAt   string `json:"updated_at"`
}

// IntegrationOf returns the run's integration.
func (c *Context) IntegrationOf(ctx context.Context) (*IntegrationInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	it, err := c.svc.cfg.Integrations.Get(ctx, c.EnvironmentID, c.Integration)
	if err != nil {
		return nil, err
	}
	const layout = "2006-01-02T15:04:05.000Z07:00"
	return &IntegrationInfo{UniqueKey: it.UniqueKey, Provider: it.Provider, DisplayName: it.DisplayName,
		CreatedAt: it.CreatedAt.UTC().Format(layout), UpdatedAt: it.UpdatedAt.UTC().Format(layout)}, nil
}

// Models returns the models the run's sync saves (their names).
func (c *SyncContext) Models() []string {
	out := make([]string, 0, len(c.run.models))
	for m := range c.run.models {
		out = append(out, m)
	}
	return out
}

// ListPages is List in pages of at most n records, for callers that hand
// records out a page at a time.
func (c *SyncContext) ListPages(ctx context.Context, model string, n int) iter.Seq2[[]json.RawMessage, error] {
	return func(yield func([]json.RawMessage, error) bool) {
		var page []json.RawMessage
		for rec, err := range c.List(ctx, model) {
			if err != nil {
				yield(nil, err)
				return
			}
			page = append(page, rec)
			if len(page) == n {
				if !yield(page, nil) {
					return
				}
				page = nil
			}
		}
		if len(page) > 0 {
			yield(page, nil)
		}
	}
}
