package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/store"
)

func (s *Store) integrationByKey(env int64, key string) *integrations.Integration {
	for _, in := range s.d.integrations {
		if in.EnvironmentID == env && in.UniqueKey == key {
			return in
		}
	}
	return nil
}

// CreateIntegration stores in and sets its ID. A UniqueKey already used in
// the environment is store.ErrConflict; a missing environment is
// store.ErrNotFound.
func (s *Store) CreateIntegration(ctx context.Context, in *integrations.Integration) error {
	if err := checkText(copyIntegration(in)); err != nil {
		return err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if _, ok := s.d.envs[in.EnvironmentID]; !ok {
		return fmt.Errorf("environment %d: %w", in.EnvironmentID, store.ErrNotFound)
	}
	if s.integrationByKey(in.EnvironmentID, in.UniqueKey) != nil {
		return fmt.Errorf("integration %q: %w", in.UniqueKey, store.ErrConflict)
	}
	s.d.lastIntegrationID++
	c := copyIntegration(in)
	c.ID = s.d.lastIntegrationID
	s.d.integrations[c.ID] = c
	in.ID = c.ID
	return nil
}

// GetIntegration returns the integration of the environment with the key, or
// store.ErrNotFound.
func (s *Store) GetIntegration(ctx context.Context, environmentID int64, uniqueKey string) (*integrations.Integration, error) {
	if err := checkText(uniqueKey); err != nil {
		return nil, err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	in := s.integrationByKey(environmentID, uniqueKey)
	if in == nil {
		return nil, fmt.Errorf("integration %q: %w", uniqueKey, store.ErrNotFound)
	}
	return copyIntegration(in), nil
}

// ListIntegrations returns the environment's integrations ordered by ID.
func (s *Store) ListIntegrations(ctx context.Context, environmentID int64) ([]*integrations.Integration, error) {
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	out := []*integrations.Integration{}
	for _, in := range s.d.integrations {
		if in.EnvironmentID == environmentID {
			out = append(out, copyIntegration(in))
		}
	}
	slices.SortFunc(out, func(a, b *integrations.Integration) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// UpdateIntegration replaces every field but ID, EnvironmentID and CreatedAt
// of the integration of in.EnvironmentID with in.ID. A UniqueKey used by
// another integration is store.ErrConflict, and so is renaming an
// integration that has connections. Renaming an integration renames its
// functions. A missing integration is store.ErrNotFound.
func (s *Store) UpdateIntegration(ctx context.Context, in *integrations.Integration) error {
	if err := checkText(copyIntegration(in)); err != nil {
		return err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	old, ok := s.d.integrations[in.ID]
	if !ok || old.EnvironmentID != in.EnvironmentID {
		return fmt.Errorf("integration %d: %w", in.ID, store.ErrNotFound)
	}
	if in.UniqueKey != old.UniqueKey {
		if s.integrationByKey(old.EnvironmentID, in.UniqueKey) != nil {
			return fmt.Errorf("integration %q: %w", in.UniqueKey, store.ErrConflict)
		}
		if s.countConnections(old.EnvironmentID, old.UniqueKey) > 0 {
			return fmt.Errorf("integration %q has connections and cannot be renamed: %w", old.UniqueKey, store.ErrConflict)
		}
	}
	c := copyIntegration(in)
	c.CreatedAt = old.CreatedAt
	s.d.integrations[c.ID] = c
	s.d.renameIntegrationFunctions(old.EnvironmentID, old.UniqueKey, in.UniqueKey)
	return nil
}

// DeleteIntegration deletes the integration and all its connections (with
// their syncs and checkpoints) and functions, or returns
// store.ErrNotFound.
func (s *Store) DeleteIntegration(ctx context.Context, environmentID int64, uniqueKey string) error {
	if err := checkText(uniqueKey); err != nil {
		return err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	in := s.integrationByKey(environmentID, uniqueKey)
	if in == nil {
		return fmt.Errorf("integration %q: %w", uniqueKey, store.ErrNotFound)
	}
	gone := map[int64]bool{}
	for id, c := range s.d.conns {
		if c.EnvironmentID == environmentID && c.IntegrationKey == uniqueKey {
			delete(s.d.conns, id)
			delete(s.d.connIndex, connKey{c.EnvironmentID, c.IntegrationKey, c.ConnectionID})
			delete(s.d.sessionConns, id)
			gone[id] = true
		}
	}
	s.d.deleteConnectionsData(gone)
	s.d.deleteIntegrationFunctions(environmentID, uniqueKey)
	delete(s.d.integrations, in.ID)
	return nil
}
