package functions

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/jobs"
	"github.com/embedauth/connect/oplog"
	"github.com/embedauth/connect/store"
	"github.com/embedauth/connect/webhooks"
)

// ActionCall names an action to run and its input.
type ActionCall struct {
	EnvironmentID int64
	// Integration is the integration's unique key (Provider-Config-Key).
	Integration string
	// ConnectionID is the connection's id (Connection-Id).
	ConnectionID string
	Action       string
	// Input is the action's input as JSON; empty for none.
	Input json.RawMessage
}

// RunError is a failed run, as its caller sees it: Failure is the status
// and body POST /action/trigger answers.
type RunError struct {
	Failure *Failure
	// Err is the function's own error, never shown to API callers.
	Err error
}

func (e *RunError) Error() string {
	return fmt.Sprintf("functions: %s: %v", e.Failure.Body.Error.Code, e.Err)
}

func (e *RunError) Unwrap() error { return e.Err }

// MaxActionRetries is the most retries of an async action.
const MaxActionRetries = 5

// ActionJobKind is the Scheduler job kind that runs an attempt of an
// async action.
const ActionJobKind = "functions.action"

// prepared is what a run needs, found before it starts.
type prepared struct {
	fn   *Function
	rt   Runtime
	conn *connections.Connection
}

// prepare finds the connection and the deployed, enabled function of a
// call: unknown_connection (400), not_found (404) or disabled_resource
// (404) otherwise.
func (s *Service) prepare(ctx context.Context, env int64, integration, connectionID string, kind Kind, name string) (*prepared, error) {
	conn, err := s.connection(ctx, env, integration, connectionID)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, store.Invalid("unknown_connection", fmt.Sprintf("No connection %q of integration %q was found.", connectionID, integration))
		}
		return nil, err
	}
	if err := s.deploy(ctx, env, integration); err != nil {
		return nil, err
	}
	f, err := s.getFunction(ctx, env, integration, kind, name)
	if errors.Is(err, store.ErrNotFound) && s.isRegistered(integration, kind, name) {
		// Registered, but not stored: the integration was deleted and
		// created again (through another instance). Store it again.
		s.ForgetIntegration(env, integration)
		if err := s.deploy(ctx, env, integration); err != nil {
			return nil, err
		}
		f, err = s.getFunction(ctx, env, integration, kind, name)
	}
	if errors.Is(err, store.ErrNotFound) {
		return nil, store.NotFound("not_found", "No %s %q is deployed to integration %q.", kind, name, integration)
	}
	if err != nil {
		return nil, err
	}
	if !f.Enabled {
		return nil, store.NotFound("disabled_resource", "The %s %q of integration %q is disabled.", kind, name, integration)
	}
	rt, err := s.runtimeOf(f)
	if err != nil {
		return nil, err
	}
	return &prepared{fn: f, rt: rt, conn: conn}, nil
}

// newContext returns the run context of a function run.
func (s *Service) newContext(p *prepared, runID, logID string, checkpointKey string) *Context {
	return &Context{
		EnvironmentID: p.conn.EnvironmentID,
		Integration:   p.conn.IntegrationKey,
		Provider:      p.conn.Provider,
		ConnectionID:  p.conn.ConnectionID,
		Kind:          p.fn.Kind,
		Name:          p.fn.Name,
		RunID:         runID,
		LogID:         logID,
		svc:           s,
		connRow:       p.conn.ID,
		cp:            checkpointState{key: checkpointKey},
	}
}

// RunAction runs an action now and returns its output as JSON: at most
// MaxActionOutput bytes, within Config.ActionTimeout. A failed run is a
// *RunError whose Failure is what POST /action/trigger answers; a missing
// connection or action is the store error the route answers. An input
// that does not fit the action's input schema (Definition.Input in
// Definition.JSONSchema) is a *RunError too, 400 invalid_action_input
// naming the paths of the problems (see InputError): the action does not
// run and no operations log entry is written.
func (s *Service) RunAction(ctx context.Context, call ActionCall) (json.RawMessage, error) {
	p, err := s.prepare(ctx, call.EnvironmentID, call.Integration, call.ConnectionID, KindAction, call.Action)
	if err != nil {
		return nil, err
	}
	if ie := s.checkInput(ctx, p.fn, call.Input); ie != nil {
		return nil, &RunError{Failure: Classify(ie), Err: ie}
	}
	logID, start := s.cfg.Log.NewID(), s.cfg.Now()
	out, runErr := s.execAction(ctx, p, "", logID, call.Input)
	s.logRun(ctx, p, logID, "action", start, map[string]any{"input_bytes": len(call.Input)}, runErr)
	if runErr != nil {
		return nil, runErr
	}
	return out, nil
}

// TriggerAction runs an action now, as RunAction does, with in encoded as
// its input and its output decoded into out (when out is not nil).
func (s *Service) TriggerAction(ctx context.Context, env int64, integration, connectionID, action string, in, out any) error {
	var raw json.RawMessage
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("functions: encode the input of %q: %w", action, err)
		}
		raw = b
	}
	res, err := s.RunAction(ctx, ActionCall{EnvironmentID: env, Integration: integration, ConnectionID: connectionID, Action: action, Input: raw})
	if err != nil {
		return err
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(res, out)
}

// checkInput checks an action's input against its input schema (see
// checkActionInput) and returns the refusal, or nil. A stored schema that
// cannot be read checks nothing: the host's logger hears of it.
func (s *Service) checkInput(ctx context.Context, fn *Function, input json.RawMessage) *InputError {
	problems, err := checkActionInput(&fn.Definition, input)
	if err != nil {
		s.cfg.Logger.WarnContext(ctx, "the input schema of an action cannot be read; its input is not checked",
			"integration", fn.Integration, "action", fn.Name, "err", err)
		return nil
	}
	if len(problems) == 0 {
		return nil
	}
	return &InputError{Problems: problems, Model: fn.Definition.Input}
}

// execAction runs the action of p with the deadline and panic recovery of
// every run, and checks its output.
func (s *Service) execAction(ctx context.Context, p *prepared, runID, logID string, input json.RawMessage) (json.RawMessage, error) {
	if len(input) > 0 && !json.Valid(input) {
		ie := &InputError{Problems: []InputProblem{{Path: "input", Keyword: "type", Message: "is not valid JSON"}}}
		return nil, &RunError{Failure: Classify(ie), Err: ie}
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.ActionTimeout)
	defer cancel()
	c := s.newContext(p, runID, logID, "action:"+p.fn.Name)
	var out json.RawMessage
	err := protect(func() error {
		var err error
		out, err = p.rt.RunAction(ctx, p.fn, c, input)
		return err
	})
	err = runEnd(ctx, err)
	if err == nil && len(out) > MaxActionOutput {
		err = errOutputTooLarge
	}
	if err != nil {
		return nil, &RunError{Failure: Classify(err), Err: err}
	}
	if len(out) == 0 {
		out = json.RawMessage("null")
	}
	return out, nil
}

// logRun writes the entry of a run that started at start (zero: unknown),
// with meta.
func (s *Service) logRun(ctx context.Context, p *prepared, logID, typ string, start time.Time, meta map[string]any, runErr error) {
	s.logRunOp(ctx, p, logID, typ, "run", start, meta, runErr)
}

// logRunOp is logRun with the entry's operation: "run", or "webhook" for
// the run of a sync's webhook handler.
func (s *Service) logRunOp(ctx context.Context, p *prepared, logID, typ, op string, start time.Time, meta map[string]any, runErr error) {
	what := fmt.Sprintf("%s %q", p.fn.Kind, p.fn.Name)
	if op == "webhook" {
		what = fmt.Sprintf("The webhook handler of %s %q", p.fn.Kind, p.fn.Name)
	}
	status, msg := oplog.StatusSuccess, what+" succeeded"
	if meta == nil {
		meta = map[string]any{}
	}
	meta["function"] = p.fn.Name
	if !start.IsZero() {
		meta["duration_ms"] = s.cfg.Now().Sub(start).Milliseconds()
	}
	if runErr != nil {
		status, msg = oplog.StatusFailure, what+" failed"
		cause := runErr
		var re *RunError
		if errors.As(runErr, &re) {
			meta["error"] = re.Failure.Body.Error.Code
			cause = re.Err
		}
		// A panic's stack is for whoever reads the run's log, never for
		// the answer or the webhooks.
		var pe *PanicError
		if errors.As(runErr, &pe) {
			msg = what + " panicked"
			meta["stacktrace"] = pe.Stack
		}
		// So is the detail of a provider call that got no answer: the
		// answer says only that the provider could not be reached.
		if d := failureDetail(cause); d != "" {
			meta["error_detail"] = d
		}
	}
	e := &oplog.Entry{ID: logID, EnvironmentID: p.conn.EnvironmentID, Type: typ, Operation: op, Status: status,
		IntegrationKey: p.conn.IntegrationKey, ConnectionID: p.conn.ConnectionID, Message: msg, Meta: meta}
	s.recordLater(ctx, e)
}

// AsyncAction is the handle of an action triggered asynchronously.
type AsyncAction struct {
	ID        string `json:"id"`
	StatusURL string `json:"statusUrl"`
}

// TriggerActionAsync stores the call as a task and its Scheduler job in one
// transaction, and returns its handle: the action runs in the background
// (retried up to retries times, 0 to MaxActionRetries, with backoff) and
// its outcome is read with ActionResult. An async action webhook is sent
// when it completes. An input that does not fit the action's input schema
// is refused now, as RunAction refuses it, with an ErrInvalid *store.Error
// of the same code, message and payload: nothing is stored or queued.
func (s *Service) TriggerActionAsync(ctx context.Context, call ActionCall, retries int) (*AsyncAction, error) {
	if retries < 0 || retries > MaxActionRetries {
		return nil, store.Invalid("invalid_headers", fmt.Sprintf("Retries must be between 0 and %d.", MaxActionRetries))
	}
	if s.cfg.Scheduler == nil {
		return nil, errors.New("functions: the Service has no Scheduler")
	}
	if len(call.Input) > 0 && !json.Valid(call.Input) {
		return nil, store.Invalid("invalid_body", "input must be JSON.")
	}
	p, err := s.prepare(ctx, call.EnvironmentID, call.Integration, call.ConnectionID, KindAction, call.Action)
	if err != nil {
		return nil, err
	}
	if ie := s.checkInput(ctx, p.fn, call.Input); ie != nil {
		d := Classify(ie).Body.Error
		return nil, &store.Error{Kind: store.ErrInvalid, Code: d.Code, Message: d.Message, Payload: d.Payload, Err: ie}
	}
	input := call.Input
	if len(input) == 0 {
		input = json.RawMessage("null")
	}
	sealed, err := s.cfg.Keyring.Seal(ctx, purposeActionInput, input)
	if err != nil {
		return nil, err
	}
	now := s.nowUTC()
	t := &ActionTask{ID: newUUID(), EnvironmentID: p.conn.EnvironmentID, ConnectionID: p.conn.ID,
		Integration: p.conn.IntegrationKey, ConnectionRef: p.conn.ConnectionID, ActionName: p.fn.Name,
		SealedInput: sealed, Status: TaskPending, MaxRetries: retries, CreatedAt: now, UpdatedAt: now}
	err = s.st.WithTx(ctx, func(ctx context.Context) error {
		if err := s.st.CreateActionTask(ctx, t); err != nil {
			return err
		}
		return s.cfg.Scheduler.Enqueue(ctx, s.actionJob(t, 1, time.Time{}))
	})
	if err != nil {
		return nil, err
	}
	return &AsyncAction{ID: t.ID, StatusURL: "/action/" + t.ID}, nil
}

// actionJobArgs are the arguments of an ActionJobKind job: the task and
// the attempt it runs.
type actionJobArgs struct {
	EnvironmentID int64  `json:"environment_id"`
	TaskID        string `json:"task_id"`
	Attempt       int    `json:"attempt"`
}

func (s *Service) actionJob(t *ActionTask, attempt int, at time.Time) jobs.Job {
	b, _ := json.Marshal(actionJobArgs{EnvironmentID: t.EnvironmentID, TaskID: t.ID, Attempt: attempt})
	return jobs.Job{Kind: ActionJobKind, Args: b, MaxAttempts: 1, RunAt: at,
		Timeout: s.cfg.ActionTimeout + time.Minute}
}

// handleActionJob runs one attempt of an async action. The task's status
// and attempt count make the job idempotent: a job whose attempt was
// already started (by a process that died: see reapActions) does nothing.
func (s *Service) handleActionJob(ctx context.Context, run *jobs.Run) error {
	var a actionJobArgs
	if err := json.Unmarshal(run.Args, &a); err != nil {
		return jobs.Cancel(fmt.Errorf("functions: action job arguments: %w", err))
	}
	t, err := s.st.GetActionTask(ctx, a.EnvironmentID, a.TaskID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if t.Status != TaskPending || t.Attempts != a.Attempt-1 {
		return nil
	}
	t.Status, t.Attempts, t.UpdatedAt = TaskRunning, a.Attempt, s.nowUTC()
	if err := s.st.UpdateActionTask(ctx, t); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return nil // another process took it
		}
		return err
	}
	// The heartbeat: UpdatedAt moves on while the attempt runs, so that
	// reapActions can tell a task whose instance died. The attempt is live
	// here (see liveRun) until its outcome is stored.
	var mu sync.Mutex
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	live, unmark := s.markLive("task:"+t.ID, s.cfg.ActionTimeout, nil)
	defer unmark()
	// Stopping the heartbeat never cuts a write short (see
	// Service.heartbeat).
	stopBeat, beatDone := make(chan struct{}), make(chan struct{})
	lost := false
	go func() {
		defer close(beatDone)
		tk := time.NewTicker(s.cfg.Heartbeat)
		defer tk.Stop()
		for {
			select {
			case <-stopBeat:
				return
			case <-ctx.Done():
				return
			case <-tk.C:
			}
			if !live.alive() {
				return // stuck past its deadline: a reaper ends it
			}
			mu.Lock()
			u := *t
			u.UpdatedAt = s.nowUTC()
			wctx, wcancel := context.WithTimeout(context.WithoutCancel(ctx), s.staleAfter())
			// updateOwnTask: a newer version of this attempt, still
			// running, is an earlier heartbeat whose answer was lost, not
			// a reaper.
			err := s.updateOwnTask(wctx, &u)
			wcancel()
			if err == nil {
				*t = u
			} else if errors.Is(err, store.ErrConflict) {
				lost = true // reaped: another attempt owns the task now
				cancel()
			}
			mu.Unlock()
			if lost {
				return
			}
		}
	}()
	snapshot := *t // runTask reads it while the heartbeat writes t
	out, logID, runErr := s.runTask(runCtx, &snapshot)
	live.returned()
	close(stopBeat)
	<-beatDone
	if lost {
		return nil
	}
	t.LogID = logID
	return s.finishTask(context.WithoutCancel(ctx), t, true, out, runErr)
}

// reapActions ends the attempts of async actions whose instance died (no
// heartbeat for three heartbeats) as failed: they are retried when they
// have retries left.
func (s *Service) reapActions(ctx context.Context) (int, error) {
	stale, err := s.st.StaleActionTasks(ctx, s.nowUTC().Add(-s.staleAfter()), 100)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, t := range stale {
		if s.liveHere("task:" + t.ID) {
			continue // alive here: its heartbeat is late, not missing
		}
		err := s.finishTask(ctx, t, false, nil, &RunError{Failure: &Failure{Status: 500, Body: FailureBody{Error: FailureDetail{
			Code: "script_internal_error", Message: "The instance running the action stopped before it ended."}}},
			Err: errors.New("interrupted")})
		if errors.Is(err, store.ErrConflict) {
			continue
		}
		if err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// runTask runs the action of a task and returns its output and the id of
// its operations log entry.
func (s *Service) runTask(ctx context.Context, t *ActionTask) (json.RawMessage, string, error) {
	input, err := s.cfg.Keyring.Open(purposeActionInput, t.SealedInput)
	if err != nil {
		return nil, "", err
	}
	p, err := s.prepare(ctx, t.EnvironmentID, t.Integration, t.ConnectionRef, KindAction, t.ActionName)
	if err != nil {
		return nil, "", err
	}
	logID, start := s.cfg.Log.NewID(), s.cfg.Now()
	in := json.RawMessage(input)
	if string(in) == "null" {
		in = nil
	}
	out, runErr := s.execAction(ctx, p, t.ID, logID, in)
	s.logRun(ctx, p, logID, "action", start, map[string]any{"task_id": t.ID, "attempt": t.Attempts, "async": true}, runErr)
	return out, logID, runErr
}

// finishTask stores the outcome of an attempt: the output, a retry, or the
// final failure; a completed task sends its async action webhook in the
// same transaction.
func (s *Service) finishTask(ctx context.Context, t *ActionTask, own bool, out json.RawMessage, runErr error) error {
	now := s.nowUTC()
	t.UpdatedAt = now
	var retry *jobs.Job
	if runErr == nil {
		sealed, err := s.cfg.Keyring.Seal(ctx, purposeActionOutput, out)
		if err != nil {
			return err
		}
		t.Status, t.SealedOutput, t.FinishedAt = TaskSucceeded, sealed, &now
	} else {
		var re *RunError
		if !errors.As(runErr, &re) {
			re = &RunError{Failure: failureOf(runErr), Err: runErr}
		}
		code := re.Failure.Body.Error.Code
		retriable := code != "invalid_action_input" && code != "script_output_too_large" &&
			code != "not_found" && code != "disabled_resource" && code != "unknown_connection"
		if retriable && t.Attempts <= t.MaxRetries {
			t.Status = TaskPending
			j := s.actionJob(t, t.Attempts+1, now.Add(s.cfg.RetryBackoff(t.Attempts+1)))
			retry = &j
		} else {
			body, err := json.Marshal(re.Failure.Body)
			if err != nil {
				return err
			}
			sealed, err := s.cfg.Keyring.Seal(ctx, purposeActionError, body)
			if err != nil {
				return err
			}
			t.Status, t.SealedError, t.ErrorStatus, t.FinishedAt = TaskFailed, sealed, re.Failure.Status, &now
		}
	}
	return s.st.WithTx(ctx, func(ctx context.Context) error {
		update := s.st.UpdateActionTask // a reaper's view must be current
		if own {
			update = s.updateOwnTask
		}
		if err := update(ctx, t); err != nil {
			return err
		}
		if retry != nil {
			return s.cfg.Scheduler.Enqueue(ctx, *retry)
		}
		if s.cfg.Notifier == nil {
			return nil
		}
		return s.cfg.Notifier.Notify(ctx, webhooks.Event{EnvironmentID: t.EnvironmentID, IntegrationKey: t.Integration,
			ConnectionID: t.ConnectionRef, Type: webhooks.TypeAsyncAction,
			Payload: &webhooks.AsyncActionPayload{From: s.cfg.WebhookFrom, Type: webhooks.TypeAsyncAction,
				ConnectionID: t.ConnectionRef, ProviderConfigKey: t.Integration,
				Payload: webhooks.AsyncActionResult{ID: t.ID, StatusURL: "/action/" + t.ID}}})
	})
}

// updateOwnTask stores t, the outcome of the attempt t.Attempts that
// t.Version saw running. A newer version of the same attempt still
// running is the attempt's own (a heartbeat whose answer was lost): t is
// stored over it. Otherwise another took the task (a reaper): ErrConflict.
func (s *Service) updateOwnTask(ctx context.Context, t *ActionTask) error {
	for range 5 {
		err := s.st.UpdateActionTask(ctx, t)
		if !errors.Is(err, store.ErrConflict) {
			return err
		}
		fresh, ferr := s.st.GetActionTask(ctx, t.EnvironmentID, t.ID)
		if ferr != nil {
			return ferr
		}
		if fresh.Version == t.Version || fresh.Status != TaskRunning || fresh.Attempts != t.Attempts {
			return err
		}
		t.Version = fresh.Version
	}
	return store.Errorf(store.ErrConflict, "conflict", "The action task %s kept changing.", t.ID)
}

// failureOf is the Failure of an error that is not a run's own: the store
// errors of prepare (a connection or action gone), or an internal error.
func failureOf(err error) *Failure {
	var se *store.Error
	if errors.As(err, &se) {
		status := 500
		switch {
		case errors.Is(err, store.ErrNotFound):
			status = 404
		case errors.Is(err, store.ErrInvalid):
			status = 400
		}
		return &Failure{Status: status, Body: FailureBody{Error: FailureDetail{Code: se.Code, Message: se.Message}}}
	}
	return &Failure{Status: 500, Body: FailureBody{Error: FailureDetail{Code: "action_script_failure",
		Message: "The action script failed with an error."}}}
}

// ActionResult returns the outcome of an async action: its output, or
// the Failure of its last attempt. While the task is pending or running
// (or unknown) it is store.ErrNotFound.
func (s *Service) ActionResult(ctx context.Context, env int64, id string) (json.RawMessage, *Failure, error) {
	t, err := s.st.GetActionTask(ctx, env, id)
	if err != nil {
		return nil, nil, err
	}
	switch t.Status {
	case TaskSucceeded:
		out, err := s.cfg.Keyring.Open(purposeActionOutput, t.SealedOutput)
		if err != nil {
			return nil, nil, err
		}
		return json.RawMessage(out), nil, nil
	case TaskFailed:
		body, err := s.cfg.Keyring.Open(purposeActionError, t.SealedError)
		if err != nil {
			return nil, nil, err
		}
		f := &Failure{Status: t.ErrorStatus}
		if err := json.Unmarshal(body, &f.Body); err != nil {
			return nil, nil, fmt.Errorf("functions: the stored error of task %s: %w", t.ID, err)
		}
		return nil, f, nil
	default:
		return nil, nil, store.NotFound("not_found", "The action %s has no result yet.", id)
	}
}

// The purposes (associated data) of the sealed values of action tasks.
const (
	purposeActionInput  = "action_input"
	purposeActionOutput = "action_output"
	purposeActionError  = "action_error"
)

// newUUID returns a random (version 4) UUID.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
