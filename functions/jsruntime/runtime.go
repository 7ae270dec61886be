package jsruntime

import (
	"container/list"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/embedauth/connect/functions"
	"github.com/embedauth/connect/internal/jsbox"
)

// Defaults of Options.
const (
	DefaultMemory = 64 << 20
	// DefaultCallDepth bounds how deep a function's calls may nest.
	DefaultCallDepth = 10000
	// DefaultCacheSize is how many compiled deployments are kept.
	DefaultCacheSize = 256
	// DefaultMaxLogs is how many log lines (nango.log, console) a run
	// writes; later ones are dropped, with one line saying so.
	DefaultMaxLogs = 1000
	// fallbackTimeout bounds a run whose context has no deadline.
	fallbackTimeout = 15 * time.Minute
)

// Options configure New.
type Options struct {
	// Memory is the most one run's engine may allocate, in bytes.
	// Defaults to DefaultMemory.
	Memory int
	// CallDepth bounds how deep a run's calls may nest (at most
	// jsbox.MaxCallDepth). Defaults to DefaultCallDepth.
	CallDepth int
	// MaxRuns is how many runs execute at once; others wait for a slot
	// (or for their context to end). Defaults to 4 × GOMAXPROCS, at least 8.
	MaxRuns int
	// CacheSize is how many compiled deployments are kept. Defaults to
	// DefaultCacheSize.
	CacheSize int
	// MaxLogs is how many log lines one run writes. Defaults to
	// DefaultMaxLogs.
	MaxLogs int
	// Logger hears of what is wrong with the runtime itself (not of the
	// functions' own errors, which go to their runs). Defaults to
	// slog.Default().
	Logger *slog.Logger
}

// Runtime runs functions deployed as JavaScript (functions.Function with
// Runtime functions.JavaScriptRuntime): the CommonJS files the nango CLI
// compiles TypeScript functions to. Each run gets a fresh sandbox; two runs
// never share JavaScript state. It is safe for concurrent use.
type Runtime struct {
	opts  Options
	slots chan struct{}
	locks *lockTable

	mu    sync.Mutex
	cache map[programKey]*list.Element // of *program
	lru   *list.List
}

// New returns a Runtime.
func New(opts Options) (*Runtime, error) {
	if opts.Memory <= 0 {
		opts.Memory = DefaultMemory
	}
	if opts.CallDepth == 0 {
		opts.CallDepth = DefaultCallDepth
	}
	if opts.CallDepth < 0 || opts.CallDepth > jsbox.MaxCallDepth {
		return nil, fmt.Errorf("jsruntime: CallDepth %d: want 1 to %d", opts.CallDepth, jsbox.MaxCallDepth)
	}
	if opts.MaxRuns <= 0 {
		opts.MaxRuns = max(8, 4*runtime.GOMAXPROCS(0))
	}
	if opts.CacheSize <= 0 {
		opts.CacheSize = DefaultCacheSize
	}
	if opts.MaxLogs <= 0 {
		opts.MaxLogs = DefaultMaxLogs
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Runtime{opts: opts, slots: make(chan struct{}, opts.MaxRuns), locks: newLockTable(),
		cache: map[programKey]*list.Element{}, lru: list.New()}, nil
}

//go:embed sdk.js
var sdkJS string

// sdkModule is the module name of sdk.js in a Box.
const sdkModule = "connect-nango-sdk.js"

var sdkModuleJSON, _ = json.Marshal(sdkModule)

// sdkProgram is sdk.js compiled, once per process.
var sdkProgram = sync.OnceValues(func() (*jsbox.Program, error) {
	p, err := jsbox.Compile(sdkModule, sdkJS)
	if err != nil {
		return nil, fmt.Errorf("jsruntime: compile the nango object: %w", err)
	}
	return p, nil
})

type programKey struct {
	env                     int64
	integration, kind, name string
	version                 string
	sum                     [sha256.Size]byte
}

// program is a deployment's code, ready to run.
type program struct {
	key  programKey
	prog *jsbox.Program
	smap *sourceMap
}

// program returns the compiled code of f, compiling it once per
// deployment.
func (r *Runtime) program(f *functions.Function) (*program, error) {
	if len(f.Code) == 0 {
		return nil, fmt.Errorf("jsruntime: %s %q of %q has no code", f.Kind, f.Name, f.Integration)
	}
	k := programKey{env: f.EnvironmentID, integration: f.Integration, kind: string(f.Kind), name: f.Name, version: f.Version, sum: sha256.Sum256(f.Code)}
	r.mu.Lock()
	if e, ok := r.cache[k]; ok {
		r.lru.MoveToFront(e)
		p := e.Value.(*program)
		r.mu.Unlock()
		return p, nil
	}
	r.mu.Unlock()
	src := string(f.Code)
	prog, err := jsbox.Compile(moduleName(f), src)
	if err != nil {
		return nil, &functions.ScriptError{Name: "SyntaxError", Message: err.Error()}
	}
	p := &program{key: k, prog: prog, smap: inlineSourceMap(src)}
	r.mu.Lock()
	defer r.mu.Unlock()
	if e, ok := r.cache[k]; ok {
		return e.Value.(*program), nil
	}
	r.cache[k] = r.lru.PushFront(p)
	for r.lru.Len() > r.opts.CacheSize {
		old := r.lru.Back()
		r.lru.Remove(old)
		delete(r.cache, old.Value.(*program).key)
	}
	return p, nil
}

// moduleName names a function's module as the nango CLI names its build
// file: <integration>_<kind>s_<name>.cjs.
func moduleName(f *functions.Function) string {
	kind := string(f.Kind)
	if f.Kind == functions.KindOnEvent {
		kind = "on-event"
	}
	return f.Integration + "_" + kind + "s_" + f.Name + ".cjs"
}

// RunAction runs an action and returns its output as JSON.
func (r *Runtime) RunAction(ctx context.Context, f *functions.Function, c *functions.Context, input json.RawMessage) (json.RawMessage, error) {
	if len(input) == 0 {
		input = json.RawMessage("null")
	}
	out, err := r.run(ctx, f, c, nil, "action", input)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// RunSync runs a sync, or with a webhook payload its webhook handler.
func (r *Runtime) RunSync(ctx context.Context, f *functions.Function, c *functions.SyncContext, webhook json.RawMessage) error {
	mode := "sync"
	if webhook != nil {
		mode = "webhook"
	}
	_, err := r.run(ctx, f, c.Context, c, mode, webhook)
	return err
}

// RunOnEvent runs an on-event function.
func (r *Runtime) RunOnEvent(ctx context.Context, f *functions.Function, c *functions.Context) error {
	_, err := r.run(ctx, f, c, nil, "onEvent", nil)
	return err
}

// runSpec is what __connect_start is given.
type runSpec struct {
	Module string          `json:"module"`
	Mode   string          `json:"mode"`
	Input  json.RawMessage `json:"input,omitempty"`
	Props  runProps        `json:"props"`
}

type runProps struct {
	ConnectionID      string         `json:"connectionId"`
	ProviderConfigKey string         `json:"providerConfigKey"`
	Provider          string         `json:"provider"`
	EnvironmentID     int64          `json:"environmentId"`
	ActivityLogID     string         `json:"activityLogId"`
	ScriptType        string         `json:"scriptType"`
	Variant           string         `json:"variant,omitempty"`
	LastSyncDate      string         `json:"lastSyncDate,omitempty"`
	TrackDeletes      bool           `json:"trackDeletes,omitempty"`
	SyncJobID         string         `json:"syncJobId,omitempty"`
	Attributes        map[string]any `json:"attributes,omitempty"`
	SyncConfig        map[string]any `json:"syncConfig"`
}

// outcome is what __connect_outcome answers.
type outcome struct {
	OK    bool    `json:"ok"`
	Value *string `json:"value"`
	Error *thrown `json:"error"`
}

// thrown describes what a function threw (see describe in sdk.js).
type thrown struct {
	Kind    string          `json:"kind"`
	Payload json.RawMessage `json:"payload"`
	Ref     int             `json:"ref"`
	Status  int             `json:"status"`
	Headers map[string]any  `json:"headers"`
	Data    json.RawMessage `json:"data"`
	Name    string          `json:"name"`
	Message string          `json:"message"`
	Code    string          `json:"code"`
	Stack   string          `json:"stack"`
}

func (r *Runtime) run(ctx context.Context, f *functions.Function, c *functions.Context, sc *functions.SyncContext, mode string, input json.RawMessage) (json.RawMessage, error) {
	p, err := r.program(f)
	if err != nil {
		return nil, err
	}
	select {
	case r.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	// The run executes on a goroutine of its own, which holds the slot
	// until it has really ended. The caller is answered when the run
	// ends or its context does: a run stuck past its deadline in one long
	// call of a native built-in, which the engine cannot interrupt, is
	// abandoned to finish on its own, and keeps its slot meanwhile.
	type result struct {
		out json.RawMessage
		err error
	}
	done := make(chan result, 1)
	go func() {
		defer func() { <-r.slots }()
		var res result
		err := protectRun(func() error {
			var err error
			res.out, err = r.exec(ctx, p, f, c, sc, mode, input)
			return err
		})
		res.err = err
		done <- res
	}()
	select {
	case res := <-done:
		return res.out, res.err
	case <-ctx.Done():
		select {
		case res := <-done: // it ended with its context: its own answer
			return res.out, res.err
		default:
			return nil, fmt.Errorf("%w: the run did not stop at its end (a long call of a native built-in); it is left to finish", ctx.Err())
		}
	}
}

// protectRun runs fn, turning a panic into an error.
func protectRun(fn func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("jsruntime: the run panicked: %v", v)
		}
	}()
	return fn()
}

// exec runs the function in a fresh Box.
func (r *Runtime) exec(ctx context.Context, p *program, f *functions.Function, c *functions.Context, sc *functions.SyncContext, mode string, input json.RawMessage) (json.RawMessage, error) {
	timeout := fallbackTimeout
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
		if timeout <= 0 {
			return nil, context.DeadlineExceeded
		}
	}
	h := newHost(ctx, r, c, sc, p)
	defer h.close()
	sdk, err := sdkProgram()
	if err != nil {
		return nil, err
	}
	box, err := jsbox.New(jsbox.Options{
		Limits:   jsbox.Limits{Memory: r.opts.Memory, CallDepth: r.opts.CallDepth, Timeout: timeout},
		Programs: []*jsbox.Program{sdk, p.prog},
		Console:  h.console,
	})
	if err != nil {
		return nil, err
	}
	defer box.Close()
	if err := box.FuncRaw("__connect_host", h.call); err != nil {
		return nil, err
	}
	spec := runSpec{Module: p.prog.Name(), Mode: mode, Input: input, Props: props(f, c, sc, mode)}
	specJSON, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	quoted, _ := json.Marshal(string(specJSON))
	v, err := box.EvalContext(ctx, "require("+string(sdkModuleJSON)+"); __connect_start("+string(quoted)+")")
	if errors.Is(err, jsbox.ErrUnsettled) {
		return nil, &functions.ScriptError{Name: "Error", Message: "the function never finished: it awaited a promise that nothing settles"}
	}
	if err != nil {
		return nil, h.engineError(ctx, err)
	}
	s, _ := v.(string)
	var o outcome
	if err := json.Unmarshal([]byte(s), &o); err != nil {
		return nil, fmt.Errorf("jsruntime: read the run's outcome: %w", err)
	}
	if !o.OK {
		return nil, h.thrownError(ctx, o.Error)
	}
	if o.Value == nil {
		return json.RawMessage("null"), nil
	}
	return json.RawMessage(*o.Value), nil
}

// props are the nango object's properties for a run.
func props(f *functions.Function, c *functions.Context, sc *functions.SyncContext, mode string) runProps {
	st := string(f.Kind)
	if mode == "webhook" {
		st = "webhook"
	}
	p := runProps{ConnectionID: c.ConnectionID, ProviderConfigKey: c.Integration, Provider: c.Provider,
		EnvironmentID: c.EnvironmentID, ActivityLogID: c.LogID, ScriptType: st,
		SyncConfig: map[string]any{"sync_name": f.Name, "type": string(f.Kind), "version": f.Version,
			"models": modelNames(f), "runs": f.Definition.Runs, "track_deletes": f.Definition.TrackDeletes,
			"auto_start": f.Definition.AutoStart, "sdk_version": f.SDKVersion, "attributes": f.Definition.Attributes,
			"input": f.Definition.Input}}
	if sc != nil {
		p.Variant = sc.Variant
		if sc.LastSyncDate != nil {
			p.LastSyncDate = sc.LastSyncDate.UTC().Format(time.RFC3339Nano)
		}
		p.TrackDeletes = f.Definition.TrackDeletes
		p.SyncJobID = c.RunID
		p.Attributes = f.Definition.Attributes
	}
	return p
}

func modelNames(f *functions.Function) []string {
	out := make([]string, 0, len(f.Definition.Models))
	for _, m := range f.Definition.Models {
		out = append(out, m.Name)
	}
	return out
}

// Errors of runs stopped by a limit of the sandbox.
var (
	// ErrMemory is a run that used more memory than Options.Memory.
	ErrMemory = errors.New("the function used more memory than its limit")
	// ErrStack is a run whose calls nested deeper than Options.CallDepth.
	ErrStack = errors.New("the function's calls nested deeper than its limit (too deep a recursion)")
)

// engineError turns an error of the engine (a limit hit, or a module that
// does not load) into the run's error.
func (h *host) engineError(ctx context.Context, err error) error {
	switch {
	case errors.Is(err, jsbox.ErrTimeout):
		if cerr := ctx.Err(); cerr != nil {
			return fmt.Errorf("%w (%w)", cerr, err)
		}
		return fmt.Errorf("%w (%w)", context.DeadlineExceeded, err)
	case errors.Is(err, jsbox.ErrMemory):
		return &functions.ScriptError{Name: "RangeError", Message: fmt.Sprintf("%s (%d MiB)", ErrMemory, h.rt.opts.Memory>>20)}
	case errors.Is(err, jsbox.ErrStack):
		return &functions.ScriptError{Name: "RangeError", Message: ErrStack.Error()}
	}
	msg := err.Error()
	name, rest, ok := strings.Cut(msg, ": ")
	if !ok || strings.ContainsAny(name, " \n") {
		name, rest = "Error", msg
	}
	text, stack, _ := strings.Cut(rest, "\n")
	return &functions.ScriptError{Name: name, Message: text, Stack: h.prog.smap.frames(h.prog.prog.Name(), stack)}
}

// thrownError turns what a function threw into the run's error.
func (h *host) thrownError(ctx context.Context, t *thrown) error {
	if t == nil {
		return &functions.ScriptError{Name: "Error", Message: "the function failed"}
	}
	switch t.Kind {
	case "null": // what the engine throws when it is out of memory
		return &functions.ScriptError{Name: "RangeError", Message: fmt.Sprintf("%s (%d MiB)", ErrMemory, h.rt.opts.Memory>>20)}
	case "action":
		var payload any = map[string]any{}
		if len(t.Payload) > 0 && string(t.Payload) != "null" {
			_ = json.Unmarshal(t.Payload, &payload)
		}
		return &functions.ActionError{Payload: payload}
	case "ref":
		if err := h.ref(t.Ref); err != nil {
			return err
		}
	case "http":
		hdr := map[string][]string{}
		for k, v := range t.Headers {
			hdr[k] = []string{fmt.Sprint(v)}
		}
		body := []byte(t.Data)
		var s string
		if json.Unmarshal(t.Data, &s) == nil {
			body = []byte(s)
		}
		if len(body) > functions.MaxUpstreamErrorBody {
			body = body[:functions.MaxUpstreamErrorBody]
		}
		return &functions.UpstreamError{Status: t.Status, Header: hdr, Body: body}
	}
	// What the engine raises inside a promise's job when a limit is hit
	// is thrown like any error: recognise it.
	switch {
	case t.Name == "InternalError" && strings.Contains(t.Message, "interrupted"):
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		return context.DeadlineExceeded
	case t.Name == "InternalError" && strings.Contains(t.Message, "out of memory"):
		return &functions.ScriptError{Name: "RangeError", Message: fmt.Sprintf("%s (%d MiB)", ErrMemory, h.rt.opts.Memory>>20)}
	case t.Name == "InternalError" && strings.Contains(t.Message, "stack overflow"):
		return &functions.ScriptError{Name: "RangeError", Message: ErrStack.Error()}
	}
	_, stack, _ := strings.Cut(t.Stack, "\n")
	if !strings.HasPrefix(strings.TrimSpace(t.Stack), "at ") && stack == "" {
		stack = t.Stack
	} else if strings.HasPrefix(strings.TrimSpace(t.Stack), "at ") {
		stack = t.Stack
	}
	return &functions.ScriptError{Name: t.Name, Message: t.Message, Code: t.Code, Stack: h.prog.smap.frames(h.prog.prog.Name(), stack)}
}

// Name is the functions.Function.Runtime of functions deployed with the
// nango CLI: functions.JavaScriptRuntime.
const Name = functions.JavaScriptRuntime
