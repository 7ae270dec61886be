package memory

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/store"
)

// copySession deep-copies a connect session.
func copySession(in *connections.Session) *connections.Session {
	c := *in
	c.TokenHash = slices.Clone(in.TokenHash)
	c.AllowedIntegrations = slices.Clone(in.AllowedIntegrations)
	c.IntegrationsConfigDefaults = nil // a Store does not persist it
	c.Overrides = maps.Clone(in.Overrides)
	c.Tags = maps.Clone(in.Tags)
	return &c
}

// CreateConnectSession stores sess and sets its ID. A TokenHash already
// stored is store.ErrConflict; a missing environment is store.ErrNotFound.
func (s *Store) CreateConnectSession(ctx context.Context, sess *connections.Session) error {
	if err := checkText(sess); err != nil {
		return err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if _, ok := s.d.envs[sess.EnvironmentID]; !ok {
		return fmt.Errorf("environment %d: %w", sess.EnvironmentID, store.ErrNotFound)
	}
	if _, dup := s.d.sessionIndex[string(sess.TokenHash)]; dup {
		return fmt.Errorf("connect session token: %w", store.ErrConflict)
	}
	s.d.lastSessionID++
	c := copySession(sess)
	c.ID = s.d.lastSessionID
	s.d.sessions[c.ID] = c
	s.d.sessionIndex[string(c.TokenHash)] = c.ID
	sess.ID = c.ID
	return nil
}

// GetConnectSession returns the session whose token hash is hash, or
// store.ErrNotFound.
func (s *Store) GetConnectSession(ctx context.Context, hash []byte) (*connections.Session, error) {
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	id, ok := s.d.sessionIndex[string(hash)]
	if !ok {
		return nil, fmt.Errorf("connect session: %w", store.ErrNotFound)
	}
	return copySession(s.d.sessions[id]), nil
}

// DeleteConnectSession deletes a session of the environment, or returns
// store.ErrNotFound.
func (s *Store) DeleteConnectSession(ctx context.Context, environmentID, id int64) error {
	unlock, err := s.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	sess, ok := s.d.sessions[id]
	if !ok || sess.EnvironmentID != environmentID {
		return fmt.Errorf("connect session %d: %w", id, store.ErrNotFound)
	}
	delete(s.d.sessions, id)
	delete(s.d.sessionIndex, string(sess.TokenHash))
	return nil
}

// DeleteExpiredConnectSessions deletes at most limit sessions (all when
// limit <= 0) that expired before before, soonest expired first, and
// returns how many it deleted.
func (s *Store) DeleteExpiredConnectSessions(ctx context.Context, before time.Time, limit int) (int, error) {
	unlock, err := s.lock(ctx)
	if err != nil {
		return 0, err
	}
	defer unlock()
	var expired []*connections.Session
	for _, sess := range s.d.sessions {
		if sess.ExpiresAt.Before(before) {
			expired = append(expired, sess)
		}
	}
	slices.SortFunc(expired, func(a, b *connections.Session) int {
		return cmp.Or(a.ExpiresAt.Compare(b.ExpiresAt), cmp.Compare(a.ID, b.ID))
	})
	if limit > 0 && len(expired) > limit {
		expired = expired[:limit]
	}
	for _, sess := range expired {
		delete(s.d.sessions, sess.ID)
		delete(s.d.sessionIndex, string(sess.TokenHash))
	}
	return len(expired), nil
}

// MarkSessionConnection marks the connection with the numeric id as
// created through a connect session, or returns store.ErrNotFound.
func (s *Store) MarkSessionConnection(ctx context.Context, environmentID, id int64) error {
	unlock, err := s.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	c, ok := s.d.conns[id]
	if !ok || c.EnvironmentID != environmentID {
		return fmt.Errorf("connection %d: %w", id, store.ErrNotFound)
	}
	s.d.sessionConns[id] = struct{}{}
	return nil
}

// IsSessionConnection reports whether the connection with the numeric id
// is marked; a missing connection is not.
func (s *Store) IsSessionConnection(ctx context.Context, environmentID, id int64) (bool, error) {
	unlock, err := s.lock(ctx)
	if err != nil {
		return false, err
	}
	defer unlock()
	c, ok := s.d.conns[id]
	if !ok || c.EnvironmentID != environmentID {
		return false, nil
	}
	_, marked := s.d.sessionConns[id]
	return marked, nil
}
