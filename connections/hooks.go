package connections

import (
	"context"
	"errors"

	"github.com/embedauth/connect/oplog"
)

// Hooks let another part of a host's service act on connection changes:
// package functions creates the schedules of syncs and runs on-event
// functions through them. Every method may be called concurrently.
type Hooks interface {
	// ConnectionsSaved is called in the transaction that creates,
	// re-authorizes or imports connections, after they are stored;
	// created[i] tells whether cs[i] is new. An error rolls the change
	// back.
	ConnectionsSaved(ctx context.Context, cs []*Connection, created []bool) error
	// Validates reports whether connections of an integration are
	// validated (ValidateConnection does something for them).
	Validates(ctx context.Context, environmentID int64, integrationKey string) (bool, error)
	// ValidateConnection checks a connection once it is stored and
	// committed; an error refuses it (the caller answers the error, a
	// *store.Error such as connection_validation_failed).
	ValidateConnection(ctx context.Context, c *Connection) error
	// BeforeDelete is called before a connection is deleted; the deletion
	// proceeds whatever it does.
	BeforeDelete(ctx context.Context, c *Connection)
}

// SetHooks installs the hooks. It must be called before the Service
// serves requests.
func (s *Service) SetHooks(h Hooks) { s.hooks = h }

// saved calls the hooks' ConnectionsSaved for one connection.
func (s *Service) saved(ctx context.Context, c *Connection, created bool) error {
	if s.hooks == nil {
		return nil
	}
	return s.hooks.ConnectionsSaved(ctx, []*Connection{c}, []bool{created})
}

// savedImports calls the hooks' ConnectionsSaved for imported items.
func (s *Service) savedImports(ctx context.Context, items []*ImportItem) error {
	if s.hooks == nil || len(items) == 0 {
		return nil
	}
	cs, created := make([]*Connection, len(items)), make([]bool, len(items))
	for i, it := range items {
		cs[i], created[i] = it.Connection, it.Created
	}
	return s.hooks.ConnectionsSaved(ctx, cs, created)
}

// validates reports whether connections of the integration are validated.
func (s *Service) validates(ctx context.Context, environmentID int64, integrationKey string) (bool, error) {
	if s.hooks == nil {
		return false, nil
	}
	return s.hooks.Validates(ctx, environmentID, integrationKey)
}

// validate runs the hooks' validation of a stored connection. A new
// connection that fails it is deleted again; a re-authorized one keeps
// its new credentials and the failure is logged. Either way the failure
// is returned.
func (s *Service) validate(ctx context.Context, c *Connection, created bool) error {
	verr := s.hooks.ValidateConnection(ctx, c)
	if verr == nil {
		return nil
	}
	bg := context.WithoutCancel(ctx)
	if created {
		if err := s.store.DeleteConnection(bg, c.EnvironmentID, c.IntegrationKey, c.ConnectionID); err != nil {
			return errors.Join(verr, err)
		}
	}
	if _, err := s.log.Record(bg, &oplog.Entry{EnvironmentID: c.EnvironmentID, Type: "auth", Operation: "validation",
		Status: oplog.StatusFailure, IntegrationKey: c.IntegrationKey, ConnectionID: c.ConnectionID,
		Message: "the connection failed validation: " + verr.Error()}); err != nil {
		return errors.Join(verr, err)
	}
	return verr
}

// beforeDelete calls the hooks' BeforeDelete with the stored connection.
func (s *Service) beforeDelete(ctx context.Context, environmentID int64, integrationKey, connectionID string) {
	if s.hooks == nil {
		return
	}
	c, err := s.store.GetConnection(ctx, environmentID, integrationKey, connectionID)
	if err != nil {
		return
	}
	s.hooks.BeforeDelete(ctx, c)
}
