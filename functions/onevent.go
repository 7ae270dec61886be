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

// ConnectionCreated is called in the transaction that creates (or
// re-authorizes) a connection: it creates the schedules of the
// integration's syncs for a new connection (started when the sync
// auto-starts) and queues its post-connection-creation functions as
// durable jobs, which run once the transaction commits.
func (s *Service) ConnectionCreated(ctx context.Context, c *connections.Connection, created bool) error {
	if err := s.deploy(ctx, c.EnvironmentID, c.IntegrationKey); err != nil {
		return err
	}
	if created {
		fs, err := s.st.ListFunctions(ctx, c.EnvironmentID, c.IntegrationKey)
		if err != nil {
			return err
		}
		var scheds []*Schedule
		for _, f := range fs {
			if f.Kind == KindSync && f.Enabled {
				scheds = append(scheds, s.newSchedule(c, f, BaseVariant, f.Definition.AutoStart))
			}
		}
		if len(scheds) > 0 {
			if _, err := s.st.CreateSyncs(ctx, scheds); err != nil {
				return err
			}
		}
	}
	fs, err := s.onEventFunctions(ctx, c.EnvironmentID, c.IntegrationKey, EventPostConnectionCreation)
	if err != nil || len(fs) == 0 || s.cfg.Scheduler == nil {
		return err
	}
	js := make([]jobs.Job, len(fs))
	for i, f := range fs {
		b, _ := json.Marshal(onEventJobArgs{EnvironmentID: c.EnvironmentID, Integration: c.IntegrationKey,
			ConnectionID: c.ConnectionID, ConnectionRow: c.ID, Function: f.Name})
		js[i] = jobs.Job{Kind: OnEventJobKind, Args: b, MaxAttempts: 1, Timeout: OnEventTimeout + time.Minute}
	}
	return s.cfg.Scheduler.Enqueue(ctx, js...)
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
	logID, err := s.logStart(ctx, p, "on-event", string(p.fn.Definition.Event), nil)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, OnEventTimeout)
	defer cancel()
	c := s.newContext(p, "", logID, "on-event:"+p.fn.Name)
	err = protect(func() error { return p.rt.RunOnEvent(ctx, p.fn, c) })
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	if err != nil {
		err = &RunError{Failure: Classify(err), Err: err}
	}
	s.logEnd(ctx, p, logID, "on-event", err)
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
			msg := "Connection failed validation"
			var re *RunError
			if errors.As(err, &re) {
				var ae *ActionError
				if errors.As(re.Err, &ae) {
					if m, ok := ae.Payload.(map[string]any); ok {
						if s, ok := m["message"].(string); ok && s != "" {
							msg = s
						} else if s, ok := m["error"].(string); ok && s != "" {
							msg = s
						}
					} else if s, ok := ae.Payload.(string); ok && s != "" {
						msg = s
					}
				} else if re.Err != nil {
					msg = re.Err.Error()
				}
			}
			return store.Invalid("connection_validation_failed", msg)
		}
	}
	return nil
}

// BeforeDelete runs the pre-connection-deletion functions of the
// connection's integration, in turn. Their failures are logged; the
// deletion proceeds.
func (s *Service) BeforeDelete(ctx context.Context, c *connections.Connection) {
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
