package memory

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/oplog"
	"github.com/embedauth/connect/store"
)

// DefaultConnectionsLimit is the number of connections ListConnections
// returns when the filter's Limit is 0.
const DefaultConnectionsLimit = 1000

// CreateConnection stores c, sets its ID and sets Version to 1. A connection
// with the same (EnvironmentID, IntegrationKey, ConnectionID) is
// store.ErrConflict; a missing integration is store.ErrNotFound.
func (s *Store) CreateConnection(ctx context.Context, c *connections.Connection) error {
	stored, err := storableConnection(c)
	if err != nil {
		return err
	}
	if err := checkText(stored); err != nil {
		return err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if s.integrationByKey(c.EnvironmentID, c.IntegrationKey) == nil {
		return fmt.Errorf("integration %q: %w", c.IntegrationKey, store.ErrNotFound)
	}
	k := connKey{c.EnvironmentID, c.IntegrationKey, c.ConnectionID}
	if _, dup := s.d.connIndex[k]; dup {
		return fmt.Errorf("connection %q: %w", c.ConnectionID, store.ErrConflict)
	}
	s.d.lastConnID++
	stored.ID = s.d.lastConnID
	stored.Version = 1
	s.d.conns[stored.ID] = stored
	s.d.connIndex[k] = stored.ID
	c.ID = stored.ID
	c.Version = 1
	return nil
}

// GetConnection returns the connection or store.ErrNotFound.
func (s *Store) GetConnection(ctx context.Context, environmentID int64, integrationKey, connectionID string) (*connections.Connection, error) {
	if err := checkText([]string{integrationKey, connectionID}); err != nil {
		return nil, err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	id, ok := s.d.connIndex[connKey{environmentID, integrationKey, connectionID}]
	if !ok {
		return nil, fmt.Errorf("connection %q: %w", connectionID, store.ErrNotFound)
	}
	return copyConnection(s.d.conns[id]), nil
}

// ListConnections returns the connections matching f ordered by ID. An
// EnvironmentID of 0 matches every environment; a Limit of 0 means
// [DefaultConnectionsLimit]; negative Limit and Offset count as 0.
func (s *Store) ListConnections(ctx context.Context, f connections.Filter) ([]*connections.Connection, error) {
	if err := checkText(f); err != nil {
		return nil, err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	search := strings.ToLower(f.Search)
	var matched []*connections.Connection
	for _, c := range s.d.conns {
		switch {
		case f.EnvironmentID != 0 && c.EnvironmentID != f.EnvironmentID,
			f.ConnectionID != "" && c.ConnectionID != f.ConnectionID,
			len(f.IntegrationKeys) > 0 && !slices.Contains(f.IntegrationKeys, c.IntegrationKey),
			!hasTags(c.Tags, f.Tags),
			search != "" && !strings.Contains(strings.ToLower(c.ConnectionID), search),
			c.ID <= f.AfterID,
			f.ExpiresBefore != nil && (c.CredentialsExpiresAt == nil || !c.CredentialsExpiresAt.Before(*f.ExpiresBefore)):
			continue
		}
		matched = append(matched, c)
	}
	slices.SortFunc(matched, func(a, b *connections.Connection) int { return cmp.Compare(a.ID, b.ID) })
	limit, offset := f.Limit, max(f.Offset, 0)
	if limit <= 0 {
		limit = DefaultConnectionsLimit
	}
	if offset > len(matched) {
		offset = len(matched)
	}
	matched = matched[offset:]
	if len(matched) > limit {
		matched = matched[:limit]
	}
	out := make([]*connections.Connection, len(matched))
	for i, c := range matched {
		out[i] = copyConnection(c)
	}
	return out, nil
}

func hasTags(tags, want map[string]string) bool {
	for k, v := range want {
		if got, ok := tags[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// UpdateConnection replaces every field but the identity, ID and CreatedAt of
// the connection of c.EnvironmentID with c.ID when its stored Version equals
// c.Version, then sets c.Version to the next version. A stale version is
// store.ErrConflict; a missing connection is store.ErrNotFound.
func (s *Store) UpdateConnection(ctx context.Context, c *connections.Connection) error {
	stored, err := storableConnection(c)
	if err != nil {
		return err
	}
	if err := checkText(stored); err != nil {
		return err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	old, ok := s.d.conns[c.ID]
	if !ok || old.EnvironmentID != c.EnvironmentID {
		return fmt.Errorf("connection %d: %w", c.ID, store.ErrNotFound)
	}
	if old.Version != c.Version {
		return fmt.Errorf("connection %q: version %d is stale: %w", old.ConnectionID, c.Version, store.ErrConflict)
	}
	stored.IntegrationKey = old.IntegrationKey
	stored.ConnectionID = old.ConnectionID
	stored.CreatedAt = old.CreatedAt
	stored.Version = old.Version + 1
	s.d.conns[c.ID] = stored
	c.Version = stored.Version
	return nil
}

// DeleteConnection deletes the connection, with its syncs, their runs and
// its checkpoints, or returns store.ErrNotFound.
func (s *Store) DeleteConnection(ctx context.Context, environmentID int64, integrationKey, connectionID string) error {
	if err := checkText([]string{integrationKey, connectionID}); err != nil {
		return err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	k := connKey{environmentID, integrationKey, connectionID}
	id, ok := s.d.connIndex[k]
	if !ok {
		return fmt.Errorf("connection %q: %w", connectionID, store.ErrNotFound)
	}
	delete(s.d.conns, id)
	delete(s.d.connIndex, k)
	delete(s.d.sessionConns, id)
	s.d.deleteConnectionsData(map[int64]bool{id: true})
	return nil
}

// CountConnections returns how many connections the integration has.
func (s *Store) CountConnections(ctx context.Context, environmentID int64, integrationKey string) (int, error) {
	unlock, err := s.lock(ctx)
	if err != nil {
		return 0, err
	}
	defer unlock()
	return s.countConnections(environmentID, integrationKey), nil
}

func (s *Store) countConnections(env int64, key string) int {
	n := 0
	for k := range maps.Keys(s.d.connIndex) {
		if k.env == env && k.integrationKey == key {
			n++
		}
	}
	return n
}

// LockConnection checks that the connection exists. The transaction of ctx
// already holds the store's lock, which serialises every transaction, so
// there is nothing more to lock. Outside a transaction of s it returns an
// error; a missing connection is store.ErrNotFound.
func (s *Store) LockConnection(ctx context.Context, environmentID int64, integrationKey, connectionID string) error {
	if err := checkText([]string{integrationKey, connectionID}); err != nil {
		return err
	}
	t, ok := ctx.Value(txKey{}).(*tx)
	if !ok || t.s != s {
		return errors.New("memory: LockConnection must be called inside WithTx")
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.done {
		return errors.New("memory: LockConnection called after its transaction ended")
	}
	if _, ok := s.d.connIndex[connKey{environmentID, integrationKey, connectionID}]; !ok {
		return fmt.Errorf("connection %q: %w", connectionID, store.ErrNotFound)
	}
	return nil
}

// ImportConnections writes the connections of one import (see
// connections.ImportItem), all or none. An identity given twice is
// store.ErrConflict and a missing integration store.ErrNotFound; either
// writes nothing.
func (s *Store) ImportConnections(ctx context.Context, items []*connections.ImportItem) error {
	stored := make([]*connections.Connection, len(items))
	logs := make([]*oplog.Entry, len(items))
	seen := make(map[connKey]struct{}, len(items))
	logIDs := map[string]struct{}{}
	for i, it := range items {
		if it.Log != nil {
			meta, err := normalizeJSON("meta", it.Log.Meta)
			if err != nil {
				return err
			}
			e := *it.Log
			e.Meta = meta
			if err := checkText(&e); err != nil {
				return err
			}
			if _, twice := logIDs[e.ID]; twice {
				return fmt.Errorf("log entry %q: %w", e.ID, store.ErrConflict)
			}
			logIDs[e.ID] = struct{}{}
			logs[i] = &e
		}
		c, err := storableConnection(it.Connection)
		if err != nil {
			return err
		}
		if err := checkText(c); err != nil {
			return err
		}
		k := connKey{c.EnvironmentID, c.IntegrationKey, c.ConnectionID}
		if _, dup := seen[k]; dup {
			return fmt.Errorf("connection %q given twice: %w", c.ConnectionID, store.ErrConflict)
		}
		seen[k] = struct{}{}
		stored[i] = c
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	for _, c := range stored {
		if s.integrationByKey(c.EnvironmentID, c.IntegrationKey) == nil {
			return fmt.Errorf("integration %q: %w", c.IntegrationKey, store.ErrNotFound)
		}
	}
	for id := range logIDs {
		if _, dup := s.d.logIDs[id]; dup {
			return fmt.Errorf("log entry %q: %w", id, store.ErrConflict)
		}
	}
	for i, it := range items {
		c := stored[i]
		k := connKey{c.EnvironmentID, c.IntegrationKey, c.ConnectionID}
		id, exists := s.d.connIndex[k]
		if !exists {
			s.d.lastConnID++
			c.ID, c.Version = s.d.lastConnID, 1
			s.d.conns[c.ID] = c
			s.d.connIndex[k] = c.ID
			it.Connection.ID, it.Connection.Version = c.ID, 1
			it.Created = true
			continue
		}
		u := *s.d.conns[id]
		u.SealedCredentials, u.AuthMode, u.CredentialsExpiresAt = c.SealedCredentials, c.AuthMode, c.CredentialsExpiresAt
		u.Errors, u.UpdatedAt = c.Errors, c.UpdatedAt
		u.LastRefreshFailure, u.RefreshAttempts = nil, 0
		if it.ReplaceConnectionConfig {
			u.ConnectionConfig = c.ConnectionConfig
		}
		if it.ReplaceMetadata {
			u.Metadata = c.Metadata
		}
		if it.ReplaceTags {
			u.Tags = c.Tags
		}
		u.Version++
		s.d.conns[id] = &u
		*it.Connection = *copyConnection(&u)
		it.Created = false
	}
	// The log entries, with the operation of each outcome.
	for i, it := range items {
		if e := logs[i]; e != nil {
			e.Operation = connections.OpImportUpdate
			if it.Created {
				e.Operation = connections.OpImportCreate
			}
			it.Log.Operation = e.Operation
			s.d.logs = append(s.d.logs, e)
			s.d.logIDs[e.ID] = struct{}{}
		}
	}
	return nil
}
