package jsbox

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"modernc.org/quickjs"
)

// Defaults and bounds of Limits.
const (
	DefaultMemory  = 64 << 20
	DefaultTimeout = 30 * time.Second
	// MaxCallDepth is the largest Limits.CallDepth: deeper JavaScript
	// calls would overflow the Go stack of the goroutine that runs them.
	MaxCallDepth = 65536
)

// Limits bound one Box.
type Limits struct {
	// Memory is the most the engine may allocate, in bytes. Defaults to
	// DefaultMemory.
	Memory int
	// CallDepth bounds how deep JavaScript calls may nest, up to
	// MaxCallDepth. Zero keeps the engine's own bound, about 5,000 calls.
	CallDepth int
	// Timeout is how long each evaluation (the module's load, each call)
	// may run, the time its timers wait included. Defaults to
	// DefaultTimeout.
	Timeout time.Duration
}

// Errors of a run stopped by a limit. They wrap the engine's error.
var (
	ErrTimeout = errors.New("jsbox: the run took longer than its deadline")
	ErrMemory  = errors.New("jsbox: the run used more memory than its limit")
	ErrStack   = errors.New("jsbox: the run's calls nested deeper than its limit")
)

// ErrUnsettled is the error of an evaluation whose value is a promise that
// can never settle: no job, no timer is left that could settle it (as in
// `new Promise(() => {})`).
var ErrUnsettled = errors.New("jsbox: the promise never settles: nothing is left to run")

// Options configure New.
type Options struct {
	Limits Limits
	// Modules are modules require resolves, by name: the source of a
	// CommonJS module (it sets module.exports), compiled when it is first
	// required.
	Modules map[string]string
	// Programs are modules require resolves by their names, compiled
	// once ([Compile]) for many Boxes. A Program and a Module of the same
	// name: the Program is used.
	//
	// Besides these, require resolves url, crypto (and their node: names)
	// and zod, and refuses every other name with an error naming it. A
	// Module or Program named zod replaces the bundled zod.
	Programs []*Program
	// Console receives what console.log, info, warn, error and debug
	// write: the level ("log", "info", "warn", "error", "debug") and the
	// arguments, formatted as Node formats strings and JSON for the rest.
	// Nil drops it.
	Console func(level, message string)
}

// Box is one run's JavaScript engine. It is not safe for concurrent use:
// one goroutine runs it, and Close it when done.
type Box struct {
	vm      *quickjs.VM
	timeout time.Duration
	timers  timers
	console func(level, message string)
	// forHost is the function of bootstrap.js the host calls: forHost(0,
	// id) runs a timer's callback, forHost(1, name, index) installs a host
	// function added by Func, forHost(2, v) answers v when it is a promise.
	forHost quickjs.Value

	programs map[string]*Program
	sources  map[string]string
	funcs    []func(args []any) (any, error)
	raws     map[int]func(arg string) string // FuncRaw's, by their index in funcs
	names    map[string]bool                 // of funcs
	closed   bool
	// zodLoads counts the times zod's module was read into the Box (once
	// at most, when code first uses a schema).
	zodLoads int
}

// Setup files, compiled once for all Boxes: bootstrap.js runs first in
// each new Box; the others are loaded into a Box when its code first uses
// what they define (bootstrap.js numbers them as setupFiles lists them).
var (
	//go:embed bootstrap.js
	bootstrapJS string
	// bufferJS defines Buffer, btoa and atob.
	//
	//go:embed buffer.js
	bufferJS string
	// urlJS defines URL and URLSearchParams, and the module url.
	//
	//go:embed url.js
	urlJS string
	// cryptoJS defines the module crypto.
	//
	//go:embed crypto.js
	cryptoJS string
	// timersJS defines what setTimeout and clearTimeout do.
	//
	//go:embed timers.js
	timersJS string
	// globalsJS defines what console and the accessors of Buffer, URL and
	// URLSearchParams do when first used.
	//
	//go:embed globals.js
	globalsJS string

	// setupFiles are the files bootstrap.js loads when first used: each is
	// the body of a function of params, which bootstrap.js calls with the
	// intrinsics it took, under their names there (intrinsicNames), and
	// what else the file needs.
	setupFiles = [...]struct{ name, params, src string }{
		{"jsbox/buffer.js", "intrinsics", bufferJS},
		{"jsbox/url.js", "intrinsics", urlJS},
		{"jsbox/crypto.js", "intrinsics, Buffer, setTimeout, host", cryptoJS},
		{"jsbox/timers.js", "intrinsics, host", timersJS},
		{"jsbox/globals.js", "intrinsics, global, names, gets", globalsJS},
	}

	// setup is the bytecode of bootstrap.js, then that of setupFiles.
	setup = sync.OnceValues(func() ([][]byte, error) {
		vm, err := quickjs.NewVM()
		if err != nil {
			return nil, err
		}
		defer vm.Close()
		// bootstrap.js, which each Box reads, without its line numbers:
		// its frames show as those of built-ins do.
		bc, err := compileNamed(vm, "jsbox/bootstrap.js", bootstrapJS, stripDebug)
		if err != nil {
			return nil, fmt.Errorf("jsbox/bootstrap.js: %w", err)
		}
		out := [][]byte{bc}
		for _, f := range setupFiles {
			head, err := setupHead(f.params)
			if err != nil {
				return nil, err
			}
			bc, err := compileNamed(vm, f.name, head+f.src+"\n})", stripSource)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f.name, err)
			}
			out = append(out, bc)
		}
		return out, nil
	})
)

// setupHead is what goes before the source of a setup file: the head of
// the function of params whose body it is, which names the intrinsics as
// bootstrap.js does. It is on the file's first line, so that the file's
// line numbers are its own.
func setupHead(params string) (string, error) {
	names, err := intrinsicNames()
	if err != nil {
		return "", err
	}
	var head strings.Builder
	fmt.Fprintf(&head, "(function (%s) { 'use strict'; const ", params)
	for i, n := range names {
		if i > 0 {
			head.WriteString(", ")
		}
		fmt.Fprintf(&head, "%s = intrinsics[%d]", n, i)
	}
	head.WriteString("; ")
	return head.String(), nil
}

// Indexes in setupFiles, and setupZod, the facade of zod, which is not
// among them (zodFacade).
const (
	setupBuffer = iota
	setupURL
	setupCrypto
	setupTimers
	setupGlobals
	setupZod
)

// intrinsicNames are the names of the intrinsics bootstrap.js takes for
// the other setup files, as its array intrinsics lists them.
func intrinsicNames() ([]string, error) {
	m := regexp.MustCompile(`(?s)const intrinsics = \[([^\]]*)\];`).FindStringSubmatch(bootstrapJS)
	if m == nil {
		return nil, errors.New("jsbox/bootstrap.js: no array intrinsics")
	}
	var names []string
	for _, n := range strings.Split(m[1], ",") {
		n = strings.TrimSpace(n)
		if !funcName.MatchString(n) {
			return nil, fmt.Errorf("jsbox/bootstrap.js: intrinsics: %q is not a name", n)
		}
		names = append(names, n)
	}
	return names, nil
}

// hostName is the global name under which New registers Box.host, which
// bootstrap.js takes off the global object before any other code runs.
const hostName = "__jsbox_host"

// Operations of the host function (Box.host), its first argument, as
// bootstrap.js numbers them.
const (
	hostConsole = iota // level, message
	hostTimer          // a timer operation (timers.op), its number
	hostResolve        // a module name
	hostLoad           // the index of a setup file in setupFiles
	hostHash           // the crypto operations: crypto.go
	hostRandom
	hostUUID
	hostEqual
	hostFunc // the index of a Func, its arguments as JSON
	hostZod  // the function of zod's module, for the facade of zod
)

// New returns a Box with its limits set and its globals hardened.
func New(opts Options) (*Box, error) {
	l := opts.Limits
	if l.Memory <= 0 {
		l.Memory = DefaultMemory
	}
	if l.CallDepth < 0 || l.CallDepth > MaxCallDepth {
		return nil, fmt.Errorf("jsbox: CallDepth %d: want 0 to %d", l.CallDepth, MaxCallDepth)
	}
	if l.Timeout <= 0 {
		l.Timeout = DefaultTimeout
	}
	files, err := setup()
	if err != nil {
		return nil, fmt.Errorf("jsbox: set up: %w", err)
	}
	vm, err := quickjs.NewVM()
	if err != nil {
		return nil, fmt.Errorf("jsbox: %w", err)
	}
	b := &Box{
		vm:      vm,
		timeout: l.Timeout,
		console: opts.Console,
	}
	if len(opts.Modules) > 0 {
		b.sources = make(map[string]string, len(opts.Modules))
		for name, src := range opts.Modules {
			b.sources[name] = src
		}
	}
	b.programs = make(map[string]*Program, len(opts.Programs))
	for _, p := range opts.Programs {
		b.programs[p.name] = p
	}
	vm.SetMemoryLimit(uintptr(l.Memory))
	if l.CallDepth > 0 {
		vm.SetMaxStackSize(uintptr(l.CallDepth))
	}
	if err := vm.SetEvalTimeout(l.Timeout); err != nil {
		vm.Close()
		return nil, fmt.Errorf("jsbox: %w", err)
	}
	err = vm.RegisterFunc(hostName, b.host, false)
	if err == nil {
		b.forHost, err = vm.EvalBytecodeValue(files[0])
	}
	if err != nil {
		b.Close()
		return nil, fmt.Errorf("jsbox: set up: %w", err)
	}
	return b, nil
}

// Close frees the engine. Timers still pending never run.
func (b *Box) Close() error {
	if b.closed {
		return nil
	}
	b.closed = true
	if b.forHost.VM() != nil {
		b.forHost.Free()
	}
	return b.vm.Close()
}

// host is the one host function of a Box, for bootstrap.js: op is one of
// the host* operations. Its answer is a value for bootstrap.js to read;
// what it cannot do is answered undefined, or a string for an error
// message (hostResolve, hostLoad), or -1 (hostTimer, too many timers).
func (b *Box) host(op int, args ...any) quickjs.Value {
	switch op {
	case hostConsole:
		if b.console != nil && len(args) == 2 {
			level, _ := args[0].(string)
			msg, _ := args[1].(string)
			b.console(level, msg)
		}
		return quickjs.UndefinedValue
	case hostTimer:
		v, err := b.timers.op(args)
		if errors.Is(err, errTooManyTimers) {
			return b.vm.NewInt(-1)
		}
		return b.value(v, err)
	case hostResolve:
		name, _ := args0String(args)
		return b.resolve(name)
	case hostLoad:
		files, err := setup()
		i, ok := args0Int(args)
		if ok && i == setupZod {
			bc, err := zodFacade()
			if err != nil {
				return b.errorValue(fmt.Sprintf("jsbox/zodfacade.js: %v", err))
			}
			return b.evalValue(bc, "jsbox/zodfacade.js")
		}
		if err != nil || !ok || i < 0 || i >= len(setupFiles) {
			return b.errorValue("jsbox: no such setup file")
		}
		return b.evalValue(files[1+i], setupFiles[i].name)
	case hostZod:
		p, err := zodProgram()
		if err != nil {
			return b.errorValue(fmt.Sprintf("Cannot load module 'zod': %v", err))
		}
		b.zodLoads++
		return b.evalValue(p.bytecode, "zod")
	case hostHash:
		return b.value(hostHashOp(args))
	case hostRandom:
		return b.value(hostRandomOp(args))
	case hostUUID:
		return b.value(uuid4(), nil)
	case hostEqual:
		return b.value(hostEqualOp(args))
	case hostFunc:
		if len(args) == 2 {
			i, ok := number(args[0])
			s, _ := args[1].(string)
			if ok && i >= 0 && int(i) < len(b.funcs) {
				if raw := b.raws[int(i)]; raw != nil {
					return b.value(raw(s), nil)
				}
				return b.value(b.callFunc(b.funcs[int(i)], s), nil)
			}
		}
	}
	return quickjs.UndefinedValue
}

// value converts v, a string, int, float64 or bool, to a JavaScript value
// (a bool to 1 or 0); nil and any error are undefined.
func (b *Box) value(v any, err error) quickjs.Value {
	if err != nil {
		return quickjs.UndefinedValue
	}
	switch v := v.(type) {
	case string:
		s, err := b.vm.NewString(v)
		if err != nil {
			return quickjs.UndefinedValue
		}
		return s
	case int:
		return b.vm.NewInt(v)
	case float64:
		return b.vm.NewFloat64(v)
	case bool:
		if v {
			return b.vm.NewInt(1)
		}
		return b.vm.NewInt(0)
	}
	return quickjs.UndefinedValue
}

func args0String(args []any) (string, bool) {
	if len(args) != 1 {
		return "", false
	}
	s, ok := args[0].(string)
	return s, ok
}

// classify wraps an engine error in the error of the limit it hit.
func classify(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	switch {
	case strings.Contains(msg, "InternalError: interrupted"):
		return fmt.Errorf("%w: %w", ErrTimeout, err)
	case strings.Contains(msg, "InternalError: out of memory"):
		return fmt.Errorf("%w: %w", ErrMemory, err)
	case msg == "null":
		// Out of memory, the engine could not even make its error: it
		// throws null. (Code that throws null itself is reported so too.)
		return fmt.Errorf("%w (the engine threw null)", ErrMemory)
	case strings.Contains(msg, "InternalError: stack overflow"):
		return fmt.Errorf("%w: %w", ErrStack, err)
	}
	return err
}

// fail is classify for an error of an evaluation under ctx: once ctx is
// done, the error is that, whatever the engine says (an interrupt).
func fail(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return fmt.Errorf("jsbox: %w (%w)", ctx.Err(), err)
	}
	return classify(err)
}

// resolve answers what require (bootstrap.js) loads as the module name:
// the index in setupFiles of the file that defines url or crypto (or
// setupZod, the facade of zod), the function of the module (see
// moduleHead), or an error message, also when no module has the name. It
// runs inside the JavaScript of a require call, whose deadline its own
// evaluation shares.
func (b *Box) resolve(name string) quickjs.Value {
	switch name {
	case "url", "node:url":
		return b.vm.NewInt(setupURL)
	case "crypto", "node:crypto":
		return b.vm.NewInt(setupCrypto)
	}
	p := b.programs[name]
	if p == nil {
		if src, ok := b.sources[name]; ok {
			var err error
			if p, err = Compile(name, src); err != nil {
				var qe *quickjs.Error
				if errors.As(err, &qe) && qe.FileName != "" {
					err = fmt.Errorf("%w (%s:%d:%d)", err, qe.FileName, qe.LineNumber, qe.ColumnNumber)
				}
				return b.errorValue(fmt.Sprintf("Cannot load module '%s': %v", name, err))
			}
			b.programs[name] = p
			delete(b.sources, name)
		}
	}
	if p == nil {
		if name != "zod" {
			return b.errorValue(fmt.Sprintf("Cannot find module '%s': functions may require only the modules the host provides", name))
		}
		// The facade, which loads zod when first used; zod itself if the
		// facade cannot be made.
		if _, err := zodFacade(); err == nil {
			return b.vm.NewInt(setupZod)
		}
		var err error
		if p, err = zodProgram(); err != nil {
			return b.errorValue(fmt.Sprintf("Cannot load module 'zod': %v", err))
		}
		b.zodLoads++
	}
	v, err := b.vm.EvalBytecodeValue(p.bytecode)
	if err != nil {
		return b.errorValue(fmt.Sprintf("Cannot load module '%s': %v", name, err))
	}
	return v
}

// evalValue runs bytecode, that of name, for its value, or the message of its
// error.
func (b *Box) evalValue(bytecode []byte, name string) quickjs.Value {
	v, err := b.vm.EvalBytecodeValue(bytecode)
	if err != nil {
		return b.errorValue(fmt.Sprintf("%s: %v", name, err))
	}
	return v
}

func (b *Box) errorValue(msg string) quickjs.Value {
	v, err := b.vm.NewString(msg)
	if err != nil {
		return quickjs.UndefinedValue
	}
	return v
}

// Load runs src, a CommonJS module (what the nango CLI compiles a
// function to), as the module name, and keeps its exports as
// require(name) answers them. It is [Compile] then [Box.LoadProgram].
func (b *Box) Load(name, src string) error {
	p, err := Compile(name, src)
	if err != nil {
		return err
	}
	return b.LoadProgram(p)
}

// LoadProgram runs p, a compiled CommonJS module, as the module p.Name(),
// and keeps its exports as require answers them. A name that is already
// a module of the Box is an error.
func (b *Box) LoadProgram(p *Program) error {
	if _, ok := b.sources[p.name]; ok || b.programs[p.name] != nil {
		return fmt.Errorf("jsbox: module %q is already defined", p.name)
	}
	b.programs[p.name] = p
	quoted, _ := json.Marshal(p.name)
	_, err := b.Eval("void require(" + string(quoted) + ");")
	return err
}

// Eval is EvalContext without a context.
func (b *Box) Eval(src string) (any, error) {
	return b.EvalContext(context.Background(), src)
}

// EvalContext runs src as a script, then the jobs its promises queued and
// its timers (setTimeout), waiting for each until it is due, until none
// is left. It returns the script's completion value converted to Go (see
// quickjs.VM.Eval); when that is a promise, it runs until the promise
// settles and returns its value, or its rejection as the error, and does
// not wait for the timers left ([ErrUnsettled] when nothing is left that
// could settle it).
//
// All of it, the waits included, must end within the Box's Timeout: a
// limit it hits is one of the Err values, and a timer due after the
// deadline is ErrTimeout at once. When ctx is done, the JavaScript running
// is interrupted and a wait ends: the error wraps ctx.Err(). A timer's
// callback that throws ends the evaluation with its exception.
//
// Timers left when the evaluation ends well run in the next evaluation
// that waits for timers; an evaluation that fails drops them.
func (b *Box) EvalContext(ctx context.Context, src string) (any, error) {
	v, err := b.eval(ctx, src)
	if err != nil {
		b.timers.drop()
	}
	return v, err
}

func (b *Box) eval(ctx context.Context, src string) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("jsbox: %w", err)
	}
	deadline := time.Now().Add(b.timeout)
	b.timers.now = time.Now()
	stop := b.watch(ctx)
	defer stop()

	if err := b.arm(deadline); err != nil {
		return nil, err
	}
	v, err := b.vm.EvalValue(src, quickjs.EvalGlobal)
	if err != nil {
		return nil, fail(ctx, err)
	}
	defer v.Free()
	p, err := b.forHost.CallValue(quickjs.UndefinedValue, 2, v)
	if err != nil {
		return nil, fail(ctx, err)
	}
	defer p.Free()
	if p.IsUndefined() {
		out, err := v.Any()
		if err != nil {
			return nil, fail(ctx, err)
		}
		return out, b.loop(ctx, deadline, nil)
	}

	var (
		settled bool
		out     any
		reason  error
	)
	then, err := p.Then(func(v quickjs.Value) {
		settled = true
		out, reason = v.Any()
	}, func(r quickjs.Value) {
		settled = true
		reason = quickjs.ErrorFromValue(r)
	})
	if err != nil {
		return nil, fail(ctx, err)
	}
	then.Free()
	if err := b.loop(ctx, deadline, func() bool { return settled }); err != nil {
		return nil, err
	}
	if reason != nil {
		return nil, classify(reason)
	}
	return out, nil
}

// arm sets the engine's timeout to what is left until deadline.
func (b *Box) arm(deadline time.Time) error {
	left := time.Until(deadline)
	if left <= 0 {
		return fmt.Errorf("%w: its promises or timers were still running", ErrTimeout)
	}
	return b.vm.SetEvalTimeout(left)
}

// watch interrupts the JavaScript the Box runs once ctx is done, until
// the stop it returns is called. The engine clears an interrupt at the
// start of each call into it, so the interrupt is repeated until then.
func (b *Box) watch(ctx context.Context) (stop func()) {
	if ctx.Done() == nil {
		return func() {}
	}
	done := make(chan struct{})
	exited := make(chan struct{})
	stopAfter := context.AfterFunc(ctx, func() {
		defer close(exited)
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			b.vm.Interrupt()
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	})
	return func() {
		if !stopAfter() {
			close(done)
			<-exited
		}
	}
}

// loop runs the jobs promises queued and the timers, until none is left,
// or, with settled, until it reports true.
func (b *Box) loop(ctx context.Context, deadline time.Time, settled func() bool) error {
	var wait *time.Timer
	defer func() {
		if wait != nil {
			wait.Stop()
		}
	}()
	for {
		for {
			if err := b.arm(deadline); err != nil {
				return err
			}
			n, err := b.vm.ExecutePendingJobs()
			if err != nil {
				return fail(ctx, err)
			}
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("jsbox: %w", err)
			}
			if n == 0 {
				break
			}
		}
		if settled != nil && settled() {
			return nil
		}
		t := b.timers.next()
		if t == nil {
			if settled != nil {
				return ErrUnsettled
			}
			return nil
		}
		if t.due.After(deadline) {
			return fmt.Errorf("%w: a timer is due %v after it", ErrTimeout, t.due.Sub(deadline).Round(time.Millisecond))
		}
		if d := time.Until(t.due); d > 0 {
			if wait == nil {
				wait = time.NewTimer(d)
			} else {
				wait.Reset(d)
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("jsbox: %w", ctx.Err())
			case <-wait.C:
			}
		}
		b.timers.now = time.Now()
		b.timers.remove(t)
		if err := b.arm(deadline); err != nil {
			return err
		}
		if _, err := b.forHost.Call(quickjs.UndefinedValue, 0, t.id); err != nil {
			return fail(ctx, err)
		}
	}
}
