package jsbox

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
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
	// may run. Defaults to DefaultTimeout.
	Timeout time.Duration
}

// Errors of a run stopped by a limit. They wrap the engine's error.
var (
	ErrTimeout = errors.New("jsbox: the run took longer than its deadline")
	ErrMemory  = errors.New("jsbox: the run used more memory than its limit")
	ErrStack   = errors.New("jsbox: the run's calls nested deeper than its limit")
)

// Options configure New.
type Options struct {
	Limits Limits
	// Modules are the modules require resolves, by name: the source of a
	// CommonJS module (it sets module.exports). Every other name is
	// refused.
	Modules map[string]string
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
}

// hardening runs before any other code. It makes code generation from
// strings throw (eval, and the constructors of every kind of function,
// reachable from any function's constructor property) while instanceof
// Function still works, and installs require and console over the host
// functions.
const hardening = `(() => {
	'use strict';
	const refuse = function () { throw new EvalError('code generation from strings is not allowed in functions'); };
	const kinds = [function () {}, async function () {}, function* () {}, async function* () {}];
	for (const k of kinds) {
		const proto = Object.getPrototypeOf(k);
		const guard = function () { return refuse(); };
		guard.prototype = proto;
		Object.defineProperty(proto, 'constructor', { value: guard, writable: false, enumerable: false, configurable: false });
	}
	const F = function Function() { return refuse(); };
	F.prototype = Function.prototype;
	Object.defineProperty(globalThis, 'Function', { value: F, writable: false, enumerable: false, configurable: false });
	Object.defineProperty(globalThis, 'eval', { value: function () { return refuse(); }, writable: false, enumerable: false, configurable: false });

	const hostConsole = globalThis.__jsbox_console;
	delete globalThis.__jsbox_console;
	const format = (args) => args.map((a) => {
		if (typeof a === 'string') return a;
		if (a instanceof Error) return a.stack ? String(a.stack) : String(a);
		if (a === undefined || typeof a === 'function' || typeof a === 'symbol' || typeof a === 'bigint') return String(a);
		try { return JSON.stringify(a); } catch (e) { return String(a); }
	}).join(' ');
	const console = {};
	for (const level of ['log', 'info', 'warn', 'error', 'debug']) {
		console[level] = (...args) => { hostConsole(level, format(args)); };
	}
	Object.defineProperty(globalThis, 'console', { value: Object.freeze(console), writable: false, enumerable: false, configurable: false });

	const defined = Object.create(null);
	const cache = Object.create(null);
	const require = (name) => {
		name = String(name);
		if (name in cache) return cache[name].exports;
		if (!(name in defined)) throw new Error("Cannot find module '" + name + "': functions may require only the modules the host provides");
		const module = { exports: {} };
		cache[name] = module;
		defined[name].call(module.exports, module, module.exports, require);
		return module.exports;
	};
	Object.defineProperty(globalThis, 'require', { value: require, writable: false, enumerable: false, configurable: false });
	Object.defineProperty(globalThis, '__jsbox_define', {
		value: (name, fn) => { defined[name] = fn; },
		writable: false, enumerable: false, configurable: false,
	});
})();`

// bufferJS installs Buffer, btoa and atob.
//
//go:embed buffer.js
var bufferJS string

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
	vm, err := quickjs.NewVM()
	if err != nil {
		return nil, fmt.Errorf("jsbox: %w", err)
	}
	b := &Box{vm: vm, timeout: l.Timeout}
	vm.SetMemoryLimit(uintptr(l.Memory))
	if l.CallDepth > 0 {
		vm.SetMaxStackSize(uintptr(l.CallDepth))
	}
	if err := vm.SetEvalTimeout(l.Timeout); err != nil {
		vm.Close()
		return nil, fmt.Errorf("jsbox: %w", err)
	}
	console := opts.Console
	if console == nil {
		console = func(string, string) {}
	}
	err = errors.Join(
		vm.RegisterHostFunc("__jsbox_console", func(args []any) (any, error) {
			if len(args) == 2 {
				level, _ := args[0].(string)
				msg, _ := args[1].(string)
				console(level, msg)
			}
			return nil, nil
		}),
	)
	if err == nil {
		_, err = vm.Eval(hardening, quickjs.EvalGlobal)
	}
	if err == nil {
		_, err = vm.Eval(bufferJS, quickjs.EvalGlobal)
	}
	for name, src := range opts.Modules {
		if err == nil {
			err = b.define(name, src)
		}
	}
	if err != nil {
		vm.Close()
		return nil, fmt.Errorf("jsbox: set up: %w", err)
	}
	return b, nil
}

// Close frees the engine.
func (b *Box) Close() error { return b.vm.Close() }

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

// define registers src, a CommonJS module, under name: require(name) runs
// it once.
func (b *Box) define(name, src string) error {
	quoted, err := json.Marshal(name)
	if err != nil {
		return err
	}
	_, err = b.vm.Eval("__jsbox_define("+string(quoted)+", function (module, exports, require) {\n"+src+"\n});", quickjs.EvalGlobal)
	return classify(err)
}

// Load runs src, a CommonJS module (what the nango CLI compiles a
// function to), as the module name, and keeps its exports as
// require(name) answers them.
func (b *Box) Load(name, src string) error {
	if err := b.define(name, src); err != nil {
		return err
	}
	quoted, _ := json.Marshal(name)
	_, err := b.Eval("void require(" + string(quoted) + ");")
	return err
}

// Eval runs src as a script, then the jobs its promises queued, and
// returns its completion value converted to Go (see quickjs.VM.Eval); a
// limit it hits is one of the Err values.
func (b *Box) Eval(src string) (any, error) {
	deadline := time.Now().Add(b.timeout)
	v, err := b.vm.Eval(src, quickjs.EvalGlobal)
	if err != nil {
		return nil, classify(err)
	}
	return v, b.runJobs(deadline)
}

// runJobs runs the jobs promises queued until none is left, or fails with
// ErrTimeout once deadline has passed.
func (b *Box) runJobs(deadline time.Time) error {
	for {
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: its promises were still running", ErrTimeout)
		}
		n, err := b.vm.ExecutePendingJobs()
		if err != nil {
			return classify(err)
		}
		if n == 0 {
			return nil
		}
	}
}
