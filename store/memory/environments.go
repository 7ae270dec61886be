package memory

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/store"
)

// CreateEnvironment stores env and sets its ID. A duplicate Name is
// store.ErrConflict.
func (s *Store) CreateEnvironment(ctx context.Context, env *environments.Environment) error {
	if err := checkText(env); err != nil {
		return err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if s.envByName(env.Name) != nil {
		return fmt.Errorf("environment %q: %w", env.Name, store.ErrConflict)
	}
	s.d.lastEnvID++
	c := copyEnvironment(env)
	c.ID = s.d.lastEnvID
	s.d.envs[c.ID] = c
	env.ID = c.ID
	return nil
}

func (s *Store) envByName(name string) *environments.Environment {
	for _, e := range s.d.envs {
		if e.Name == name {
			return e
		}
	}
	return nil
}

// GetEnvironment returns the environment with the id, or store.ErrNotFound.
func (s *Store) GetEnvironment(ctx context.Context, id int64) (*environments.Environment, error) {
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	e, ok := s.d.envs[id]
	if !ok {
		return nil, fmt.Errorf("environment %d: %w", id, store.ErrNotFound)
	}
	return copyEnvironment(e), nil
}

// GetEnvironmentByName returns the environment with the name, or
// store.ErrNotFound.
func (s *Store) GetEnvironmentByName(ctx context.Context, name string) (*environments.Environment, error) {
	if err := checkText(name); err != nil {
		return nil, err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	e := s.envByName(name)
	if e == nil {
		return nil, fmt.Errorf("environment %q: %w", name, store.ErrNotFound)
	}
	return copyEnvironment(e), nil
}

// ListEnvironments returns every environment ordered by ID.
func (s *Store) ListEnvironments(ctx context.Context) ([]*environments.Environment, error) {
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	out := make([]*environments.Environment, 0, len(s.d.envs))
	for _, id := range slices.Sorted(maps.Keys(s.d.envs)) {
		out = append(out, copyEnvironment(s.d.envs[id]))
	}
	return out, nil
}

// UpdateEnvironment replaces every field of the environment with env.ID but
// ID and CreatedAt. A missing environment is store.ErrNotFound; a Name used
// by another environment is store.ErrConflict.
func (s *Store) UpdateEnvironment(ctx context.Context, env *environments.Environment) error {
	if err := checkText(env); err != nil {
		return err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	old, ok := s.d.envs[env.ID]
	if !ok {
		return fmt.Errorf("environment %d: %w", env.ID, store.ErrNotFound)
	}
	if other := s.envByName(env.Name); other != nil && other.ID != env.ID {
		return fmt.Errorf("environment %q: %w", env.Name, store.ErrConflict)
	}
	c := copyEnvironment(env)
	c.CreatedAt = old.CreatedAt
	s.d.envs[c.ID] = c
	return nil
}

// CreateAPIKey stores key and sets its ID. A duplicate Hash is
// store.ErrConflict; a missing environment is store.ErrNotFound.
func (s *Store) CreateAPIKey(ctx context.Context, key *environments.APIKey) error {
	if err := checkText(key); err != nil {
		return err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if _, ok := s.d.envs[key.EnvironmentID]; !ok {
		return fmt.Errorf("environment %d: %w", key.EnvironmentID, store.ErrNotFound)
	}
	if s.apiKeyByHash(key.Hash) != nil {
		return fmt.Errorf("api key: %w", store.ErrConflict)
	}
	s.d.lastAPIKeyID++
	c := copyAPIKey(key)
	c.ID = s.d.lastAPIKeyID
	s.d.apiKeys[c.ID] = c
	key.ID = c.ID
	return nil
}

func (s *Store) apiKeyByHash(hash []byte) *environments.APIKey {
	for _, k := range s.d.apiKeys {
		if bytes.Equal(k.Hash, hash) {
			return k
		}
	}
	return nil
}

// GetAPIKeyByHash returns the key with the hash, or store.ErrNotFound.
func (s *Store) GetAPIKeyByHash(ctx context.Context, hash []byte) (*environments.APIKey, error) {
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	k := s.apiKeyByHash(hash)
	if k == nil {
		return nil, fmt.Errorf("api key: %w", store.ErrNotFound)
	}
	return copyAPIKey(k), nil
}

// ListAPIKeys returns the keys of an environment ordered by ID.
func (s *Store) ListAPIKeys(ctx context.Context, environmentID int64) ([]*environments.APIKey, error) {
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	out := []*environments.APIKey{}
	for _, k := range s.d.apiKeys {
		if k.EnvironmentID == environmentID {
			out = append(out, copyAPIKey(k))
		}
	}
	slices.SortFunc(out, func(a, b *environments.APIKey) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// DeleteAPIKey deletes a key of the environment, or returns
// store.ErrNotFound.
func (s *Store) DeleteAPIKey(ctx context.Context, environmentID, id int64) error {
	unlock, err := s.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	k, ok := s.d.apiKeys[id]
	if !ok || k.EnvironmentID != environmentID {
		return fmt.Errorf("api key %d: %w", id, store.ErrNotFound)
	}
	delete(s.d.apiKeys, id)
	return nil
}

// SetVariables replaces every variable of the environment. A missing
// environment is store.ErrNotFound; two variables with one name are
// store.ErrInvalid.
func (s *Store) SetVariables(ctx context.Context, environmentID int64, vars []environments.Variable) error {
	if err := checkText(vars); err != nil {
		return err
	}
	if err := checkVariables(vars); err != nil {
		return err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if _, ok := s.d.envs[environmentID]; !ok {
		return fmt.Errorf("environment %d: %w", environmentID, store.ErrNotFound)
	}
	if len(vars) == 0 {
		delete(s.d.variables, environmentID)
		return nil
	}
	c := slices.Clone(vars)
	slices.SortFunc(c, func(a, b environments.Variable) int { return cmp.Compare(a.Name, b.Name) })
	s.d.variables[environmentID] = c
	return nil
}

func checkVariables(vars []environments.Variable) error {
	seen := make(map[string]struct{}, len(vars))
	for _, v := range vars {
		if _, dup := seen[v.Name]; dup {
			return fmt.Errorf("%w: variable %q is given twice", store.ErrInvalid, v.Name)
		}
		seen[v.Name] = struct{}{}
	}
	return nil
}

// ListVariables returns the variables of the environment ordered by name.
func (s *Store) ListVariables(ctx context.Context, environmentID int64) ([]environments.Variable, error) {
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	out := slices.Clone(s.d.variables[environmentID])
	if out == nil {
		out = []environments.Variable{}
	}
	return out, nil
}
