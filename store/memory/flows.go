package memory

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/internal/jsonvalue"
	"github.com/embedauth/connect/store"
)

// copyFlow deep-copies an OAuth flow.
func copyFlow(in *connections.OAuthFlow) *connections.OAuthFlow {
	c := *in
	c.StateHash = slices.Clone(in.StateHash)
	c.BrowserHash = slices.Clone(in.BrowserHash)
	c.ConnectionConfig = jsonvalue.CloneMap(in.ConnectionConfig)
	c.Tags = maps.Clone(in.Tags)
	c.Scopes = slices.Clone(in.Scopes)
	c.Secrets = nil // a Store does not persist it
	if in.CompletedAt != nil {
		t := *in.CompletedAt
		c.CompletedAt = &t
	}
	return &c
}

// CreateOAuthFlow stores f and sets its ID. A StateHash already stored is
// store.ErrConflict; a missing environment is store.ErrNotFound.
func (s *Store) CreateOAuthFlow(ctx context.Context, f *connections.OAuthFlow) error {
	if err := checkText(f); err != nil {
		return err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if _, ok := s.d.envs[f.EnvironmentID]; !ok {
		return fmt.Errorf("environment %d: %w", f.EnvironmentID, store.ErrNotFound)
	}
	if _, dup := s.d.flowIndex[string(f.StateHash)]; dup {
		return fmt.Errorf("oauth flow state: %w", store.ErrConflict)
	}
	s.d.lastFlowID++
	c := copyFlow(f)
	c.ID = s.d.lastFlowID
	s.d.flows[c.ID] = c
	s.d.flowIndex[string(c.StateHash)] = c.ID
	f.ID = c.ID
	return nil
}

// ClaimOAuthFlow moves the pending flow with the state hash to
// connections.FlowExchanging and returns it. An unknown hash is
// store.ErrNotFound; a flow that is not pending is store.ErrConflict.
func (s *Store) ClaimOAuthFlow(ctx context.Context, hash []byte) (*connections.OAuthFlow, error) {
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	id, ok := s.d.flowIndex[string(hash)]
	if !ok {
		return nil, fmt.Errorf("oauth flow: %w", store.ErrNotFound)
	}
	f := s.d.flows[id]
	if f.Status != connections.FlowPending {
		return nil, fmt.Errorf("oauth flow %d is %s: %w", id, f.Status, store.ErrConflict)
	}
	c := copyFlow(f)
	c.Status = connections.FlowExchanging
	s.d.flows[id] = c // records are immutable once stored: replace
	return copyFlow(c), nil
}

// CompleteOAuthFlow sets the outcome of a flow, or returns
// store.ErrNotFound.
func (s *Store) CompleteOAuthFlow(ctx context.Context, id int64, status, errorType, errorMessage string, at time.Time) error {
	if err := checkText([]string{status, errorType, errorMessage}); err != nil {
		return err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	f, ok := s.d.flows[id]
	if !ok {
		return fmt.Errorf("oauth flow %d: %w", id, store.ErrNotFound)
	}
	c := copyFlow(f)
	c.Status, c.ErrorType, c.ErrorMessage = status, errorType, errorMessage
	at = at.UTC()
	c.CompletedAt = &at
	s.d.flows[id] = c
	return nil
}

// GetOAuthFlowByClientID returns the newest flow with the client id, of the
// session when sessionID is not 0, or store.ErrNotFound.
func (s *Store) GetOAuthFlowByClientID(ctx context.Context, clientID string, sessionID int64) (*connections.OAuthFlow, error) {
	if err := checkText(clientID); err != nil {
		return nil, err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	var best *connections.OAuthFlow
	for _, f := range s.d.flows {
		if clientID == "" || f.ClientID != clientID || (sessionID != 0 && f.SessionID != sessionID) {
			continue
		}
		if best == nil || f.ID > best.ID {
			best = f
		}
	}
	if best == nil {
		return nil, fmt.Errorf("oauth flow of client %q: %w", clientID, store.ErrNotFound)
	}
	return copyFlow(best), nil
}

// DeleteExpiredOAuthFlows deletes at most limit flows (all when limit <= 0)
// that expired before before, soonest expired first, and returns how many
// it deleted.
func (s *Store) DeleteExpiredOAuthFlows(ctx context.Context, before time.Time, limit int) (int, error) {
	unlock, err := s.lock(ctx)
	if err != nil {
		return 0, err
	}
	defer unlock()
	var expired []*connections.OAuthFlow
	for _, f := range s.d.flows {
		if f.ExpiresAt.Before(before) {
			expired = append(expired, f)
		}
	}
	slices.SortFunc(expired, func(a, b *connections.OAuthFlow) int {
		return cmp.Or(a.ExpiresAt.Compare(b.ExpiresAt), cmp.Compare(a.ID, b.ID))
	})
	if limit > 0 && len(expired) > limit {
		expired = expired[:limit]
	}
	for _, f := range expired {
		delete(s.d.flows, f.ID)
		delete(s.d.flowIndex, string(f.StateHash))
	}
	return len(expired), nil
}
