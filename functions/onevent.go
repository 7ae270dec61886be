package functions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/jobs"
	"github.com/embedauth/connect/store"
)

// OnEventJobKind is the Scheduler job kind that runs the
// post-connection-creation functions of a connection.
const OnEventJobKind = "functions.on_event"

// OnEventTimeout bounds an on-event function run.
const OnEventTimeout = 5 * time.Minute

// onEventJobArgs are the arguments of an OnEventJobKind job.
type onEventJobArgs struct {
	EnvironmentID int64  `json:"environment_id"`
	Integration   string `json:"integration"`
	ConnectionID  string `json:"connection_id"`
	// ConnectionRow is the connection's row id when the job was queued: a
	// connection deleted and created again meanwhile is not the same.
	ConnectionRow int64  `json:"connection_row"`
	Function      string `json:"function"`
}

// onEventFunctions returns the enabled on-event functions of an
// integration for an event.
func (s *Service) onEventFunctions(ctx context.Context, env int64, integration string, ev Event) ([]*Function, error) {
	if err := s.deploy(ctx, env, integration); err != nil {
		return nil, err
	}
	fs, err := s.st.ListFunctions(ctx, env, integration)
	if err != nil {
		return nil, err
	}
	var out []*Function
	for _, f := range fs {
		if f.Kind == KindOnEvent && f.Enabled && f.Definition.Event == ev {
			out = append(out, f)
		}
	}
	return out, nil
}

// ConnectionsSaved is called in the transaction that creates,
// re-authorizes or imports connections (connections.Hooks): it creates
// the schedules of the integration's syncs for the new ones (started when
// the sync auto-starts) and queues the post-connection-creation functions
// of every one as durable jobs, which run once the transaction commits.
func (s *Service) ConnectionsSaved(ctx context.Context, cs []*connections.Connection, created []bool) error {
	for _, c := range cs {
		s.forgetConnection(c)
	}
	type group struct {
		env         int64
		integration string
	}
	byGroup := map[group][]int{}
	var order []group
	for i, c := range cs {
		g := group{c.EnvironmentID, c.IntegrationKey}
		if _, ok := byGroup[g]; !ok {
			order = append(order, g)
		}
		byGroup[g] = append(byGroup[g], i)
	}
	for _, g := range order {
		fs, err := s.functionsOf(ctx, g.env, g.integration)
		if err != nil {
			return err
		}
		var scheds []*Schedule
		var js []jobs.Job
		for _, i := range byGroup[g] {
			c := cs[i]
			for _, f := range fs {
				switch {
				case f.Kind == KindSync && created[i]:
					scheds = append(scheds, s.newSchedule(c, f, BaseVariant, f.Definition.AutoStart))
				case f.Kind == KindOnEvent && f.Definition.Event == EventPostConnectionCreation && s.cfg.Scheduler != nil:
					b, _ := json.Marshal(onEventJobArgs{EnvironmentID: c.EnvironmentID, Integration: c.IntegrationKey,
						ConnectionID: c.ConnectionID, ConnectionRow: c.ID, Function: f.Name})
					js = append(js, jobs.Job{Kind: OnEventJobKind, Args: b, MaxAttempts: 1, Timeout: OnEventTimeout + time.Minute})
				}
			}
		}
		if len(scheds) > 0 {
			if _, err := s.st.CreateSyncs(ctx, scheds); err != nil {
				return err
			}
		}
		if len(js) > 0 {
			if err := s.cfg.Scheduler.Enqueue(ctx, js...); err != nil {
				return err
			}
		}
	}
	return nil
}

// functionsOf returns the enabled functions deployed to an integration.
func (s *Service) functionsOf(ctx context.Context, env int64, integration string) ([]*Function, error) {
	if err := s.deploy(ctx, env, integration); err != nil {
		return nil, err
	}
	fs, err := s.st.ListFunctions(ctx, env, integration)
	if err != nil {
		return nil, err
	}
	out := fs[:0]
	for _, f := range fs {
		if f.Enabled {
			out = append(out, f)
		}
	}
	return out, nil
}

// Validates reports whether the integration has validate-connection
// functions (connections.Hooks).
func (s *Service) Validates(ctx context.Context, env int64, integration string) (bool, error) {
	fs, err := s.onEventFunctions(ctx, env, integration, EventValidateConnection)
	return len(fs) > 0, err
}

// handleOnEventJob runs a post-connection-creation function. Its failure
// is logged; it is not retried.
func (s *Service) handleOnEventJob(ctx context.Context, run *jobs.Run) error {
	var a onEventJobArgs
	if err := json.Unmarshal(run.Args, &a); err != nil {
		return jobs.Cancel(fmt.Errorf("functions: on-event job arguments: %w", err))
	}
	p, err := s.prepare(ctx, a.EnvironmentID, a.Integration, a.ConnectionID, KindOnEvent, a.Function)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrInvalid) {
			return nil // the connection or the function is gone
		}
		return err
	}
	if a.ConnectionRow != 0 && p.conn.ID != a.ConnectionRow {
		return nil
	}
	_ = s.execOnEvent(ctx, p)
	return nil
}

// execOnEvent runs an on-event function with its deadline, logging its
// outcome.
func (s *Service) execOnEvent(ctx context.Context, p *prepared) error {
	logID, start := s.cfg.Log.NewID(), s.cfg.Now()
	ctx, cancel := context.WithTimeout(ctx, OnEventTimeout)
	defer cancel()
	c := s.newContext(p, "", logID, "on-event:"+p.fn.Name)
	err := runEnd(ctx, protect(func() error { return p.rt.RunOnEvent(ctx, p.fn, c) }))
	if err != nil {
		err = &RunError{Failure: Classify(err), Err: err}
	}
	s.logRun(ctx, p, logID, "on-event", start, map[string]any{"event": string(p.fn.Definition.Event)}, err)
	return err
}

// ValidateConnection runs the validate-connection functions of the
// connection's integration, in turn, with the connection as stored (its
// credentials usable through the run context). The first failure refuses
// the connection: connection_validation_failed (400), with the function's
// message.
func (s *Service) ValidateConnection(ctx context.Context, c *connections.Connection) error {
	fs, err := s.onEventFunctions(ctx, c.EnvironmentID, c.IntegrationKey, EventValidateConnection)
	if err != nil || len(fs) == 0 {
		return err
	}
	for _, f := range fs {
		rt, err := s.runtimeOf(f)
		if err != nil {
			return err
		}
		p := &prepared{fn: f, rt: rt, conn: c}
		if err := s.execOnEvent(ctx, p); err != nil {
			return store.Invalid("connection_validation_failed", validationMessage(err))
		}
	}
	return nil
}

// validationMessage is the message of a connection a validate-connection
// run refused, as Nango words it: the message (or error) of an
// ActionError's payload; the message of another failure's payload (the
// text of the error returned or of the panic, without request URLs); or
// the failure's own message: the proxy's words for a provider call that
// got no answer or that the address policy refused, never the address or
// the dial error. Otherwise "Connection failed validation".
func validationMessage(err error) string {
	const fallback = "Connection failed validation"
	var re *RunError
	if !errors.As(err, &re) {
		return fallback
	}
	var ae *ActionError
	if errors.As(re.Err, &ae) {
		if m, ok := ae.Payload.(map[string]any); ok {
			if s, ok := m["message"].(string); ok && s != "" {
				return s
			} else if s, ok := m["error"].(string); ok && s != "" {
				return s
			}
		} else if s, ok := ae.Payload.(string); ok && s != "" {
			return s
		}
		return fallback
	}
	d := re.Failure.Body.Error
	if p, ok := d.Payload.(map[string]any); ok {
		if s, ok := p["message"].(string); ok && s != "" {
			return s
		}
	}
	if d.Message != "" {
		return d.Message
	}
	return fallback
}

// BeforeDelete runs the pre-connection-deletion functions of the
// connection's integration, in turn. Their failures are logged; the
// deletion proceeds.
func (s *Service) BeforeDelete(ctx context.Context, c *connections.Connection) {
	defer s.forgetConnection(c)
	fs, err := s.onEventFunctions(ctx, c.EnvironmentID, c.IntegrationKey, EventPreConnectionDeletion)
	if err != nil {
		s.logger.Warn("functions: pre-connection-deletion", "connection", c.ConnectionID, "err", err)
		return
	}
	for _, f := range fs {
		rt, err := s.runtimeOf(f)
		if err != nil {
			s.logger.Warn("functions: pre-connection-deletion", "function", f.Name, "err", err)
			continue
		}
		_ = s.execOnEvent(ctx, &prepared{fn: f, rt: rt, conn: c})
	}
}

var _ connections.Hooks = (*Service)(nil)
