package functions

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/embedauth/connect/store"
)

// CheckConnection reports whether a connection of an integration exists in
// an environment, as a run finds it: nil when it does, the 400
// unknown_connection error of POST /action/trigger when it does not. The
// answer comes from the cache runs share, so a caller may ask on every
// request.
func (s *Service) CheckConnection(ctx context.Context, env int64, integration, connectionID string) error {
	_, err := s.connection(ctx, env, integration, connectionID)
	if errors.Is(err, store.ErrNotFound) {
		return store.Invalid("unknown_connection", fmt.Sprintf("No connection %q of integration %q was found.", connectionID, integration))
	}
	return err
}

// ConnectionActions returns the enabled actions a connection can run, Go
// and deployed code alike, sorted by name: what RunAction runs for it.
// The connection is checked as CheckConnection does.
func (s *Service) ConnectionActions(ctx context.Context, env int64, integration, connectionID string) ([]*Function, error) {
	if err := s.CheckConnection(ctx, env, integration, connectionID); err != nil {
		return nil, err
	}
	if err := s.deploy(ctx, env, integration); err != nil {
		return nil, err
	}
	fs, err := s.st.ListFunctions(ctx, env, integration)
	if err != nil {
		return nil, err
	}
	out := make([]*Function, 0, len(fs))
	for _, f := range fs {
		if f.Kind == KindAction && f.Enabled {
			out = append(out, f)
		}
	}
	slices.SortFunc(out, func(a, b *Function) int { return cmp.Compare(a.Name, b.Name) })
	return out, nil
}

// Action returns the deployed, enabled action name of an integration, as
// a run finds it: the 404 not_found or disabled_resource error of POST
// /action/trigger otherwise. The answer comes from the cache runs share.
func (s *Service) Action(ctx context.Context, env int64, integration, name string) (*Function, error) {
	if err := s.deploy(ctx, env, integration); err != nil {
		return nil, err
	}
	f, err := s.getFunction(ctx, env, integration, KindAction, name)
	if errors.Is(err, store.ErrNotFound) {
		return nil, store.NotFound("not_found", "No %s %q is deployed to integration %q.", KindAction, name, integration)
	}
	if err != nil {
		return nil, err
	}
	if !f.Enabled {
		return nil, store.NotFound("disabled_resource", "The %s %q of integration %q is disabled.", KindAction, name, integration)
	}
	return f, nil
}

// SetEnabled enables or disables a deployed function: a disabled action
// is neither run nor listed as a tool; a disabled function does not run.
// ErrNotFound when no such function is deployed.
func (s *Service) SetEnabled(ctx context.Context, env int64, integration string, kind Kind, name string, enabled bool) error {
	if err := s.deploy(ctx, env, integration); err != nil {
		return err
	}
	if err := s.st.SetFunctionEnabled(ctx, env, integration, kind, name, enabled); err != nil {
		return err
	}
	s.forgetFunction(env, integration, kind, name)
	return nil
}
