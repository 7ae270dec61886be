package functions

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
)

// Runtime runs the code of deployed functions of one kind of code: Go
// functions registered with Service.Register (built in, named GoRuntime),
// or code deployed at run time (Service.Deploy) for a runtime the host
// adds with Service.AddRuntime. Everything around a run (scheduling, the
// run context, bookkeeping, webhooks, records) is the Service's: a
// Runtime only executes. The Service recovers a Runtime's panics and
// enforces the run's deadline through ctx.
type Runtime interface {
	// RunAction runs an action with its input and returns its output,
	// JSON-encoded.
	RunAction(ctx context.Context, f *Function, c *Context, input json.RawMessage) (json.RawMessage, error)
	// RunSync runs a sync; with a webhook payload (non-nil), its webhook
	// handler on that payload. A sync without one returns
	// ErrNoWebhookHandler (wrapped or not) for a webhook payload.
	RunSync(ctx context.Context, f *Function, c *SyncContext, webhook json.RawMessage) error
	// RunOnEvent runs an on-event function.
	RunOnEvent(ctx context.Context, f *Function, c *Context) error
}

// goRuntime runs the functions registered in Go.
type goRuntime struct{ s *Service }

func (g goRuntime) code(f *Function) (*registered, error) {
	r := g.s.lookup(f)
	if r == nil {
		return nil, fmt.Errorf("functions: %s %q of %q is deployed but not registered in this process", f.Kind, f.Name, f.Integration)
	}
	return r, nil
}

func (g goRuntime) RunAction(ctx context.Context, f *Function, c *Context, input json.RawMessage) (json.RawMessage, error) {
	r, err := g.code(f)
	if err != nil {
		return nil, err
	}
	if r.action == nil {
		return nil, fmt.Errorf("functions: %q of %q is not an action", f.Name, f.Integration)
	}
	out, err := r.action(ctx, c, input)
	if err != nil {
		return nil, err
	}
	if raw, ok := out.(json.RawMessage); ok {
		if !json.Valid(raw) {
			return nil, fmt.Errorf("functions: action %q returned invalid JSON", f.Name)
		}
		return raw, nil
	}
	return json.Marshal(out)
}

func (g goRuntime) RunSync(ctx context.Context, f *Function, c *SyncContext, webhook json.RawMessage) error {
	r, err := g.code(f)
	if err != nil {
		return err
	}
	if webhook != nil {
		if r.webhook == nil {
			return fmt.Errorf("functions: sync %q of %q: %w", f.Name, f.Integration, ErrNoWebhookHandler)
		}
		return r.webhook(ctx, c, webhook)
	}
	if r.sync == nil {
		return fmt.Errorf("functions: %q of %q is not a sync", f.Name, f.Integration)
	}
	return r.sync(ctx, c)
}

func (g goRuntime) RunOnEvent(ctx context.Context, f *Function, c *Context) error {
	r, err := g.code(f)
	if err != nil {
		return err
	}
	if r.onEvent == nil {
		return fmt.Errorf("functions: %q of %q is not an on-event function", f.Name, f.Integration)
	}
	return r.onEvent(ctx, c)
}

// AddRuntime makes functions deployed with Function.Runtime name run on
// rt. GoRuntime is built in and cannot be replaced.
func (s *Service) AddRuntime(name string, rt Runtime) error {
	if name == "" || name == GoRuntime || rt == nil {
		return fmt.Errorf("functions: AddRuntime(%q): a name other than %q and a Runtime are required", name, GoRuntime)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.runtimes == nil {
		s.runtimes = map[string]Runtime{}
	}
	s.runtimes[name] = rt
	return nil
}

// runtimeOf returns the Runtime of a deployed function.
func (s *Service) runtimeOf(f *Function) (Runtime, error) {
	if f.Runtime == GoRuntime {
		return goRuntime{s}, nil
	}
	s.mu.RLock()
	rt := s.runtimes[f.Runtime]
	s.mu.RUnlock()
	if rt == nil {
		return nil, fmt.Errorf("functions: %s %q of %q needs the runtime %q, which this process does not have", f.Kind, f.Name, f.Integration, f.Runtime)
	}
	return rt, nil
}

// protect runs fn, turning a panic into a *PanicError with its stack.
func protect(fn func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			if cp, ok := v.(*chunkPanic); ok { // raised again by inParallel
				err = &PanicError{Value: cp.value, Stack: cp.stack}
				return
			}
			err = &PanicError{Value: v, Stack: stack(3)}
		}
	}()
	return fn()
}

// stack returns up to 10 frames of the calling goroutine, skipping skip,
// as "function (file:line)", leaving out the runtime's own.
func stack(skip int) []string {
	pcs := make([]uintptr, 32)
	n := runtime.Callers(skip, pcs)
	frames := runtime.CallersFrames(pcs[:n])
	var out []string
	for len(out) < 10 {
		f, more := frames.Next()
		if !strings.HasPrefix(f.Function, "runtime.") {
			out = append(out, fmt.Sprintf("%s (%s:%d)", f.Function, f.File, f.Line))
		}
		if !more {
			break
		}
	}
	return out
}
