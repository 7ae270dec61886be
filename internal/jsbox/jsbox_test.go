package jsbox_test

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/embedauth/connect/internal/jsbox"
)

func newBox(t *testing.T, opts jsbox.Options) *jsbox.Box {
	t.Helper()
	b, err := jsbox.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// TestSandbox: what untrusted code may not do fails with a clear error,
// and the Box still runs code afterwards.
func TestSandbox(t *testing.T) {
	t.Parallel()
	b := newBox(t, jsbox.Options{Limits: jsbox.Limits{Timeout: 2 * time.Second}})
	if err := b.Func("hostFn", func([]any) (any, error) { return nil, nil }); err != nil {
		t.Fatal(err)
	}
	const refused = "code generation from strings is not allowed"
	for _, tc := range []struct{ src, want string }{
		{`process.env`, "ReferenceError"},
		{`fetch('https://example.com')`, "ReferenceError"},
		{`require('fs')`, "Cannot find module 'fs'"},
		{`require('child_process')`, "Cannot find module 'child_process'"},
		{`require('node:fs')`, "Cannot find module 'node:fs'"},
		{`require('node:child_process')`, "Cannot find module 'node:child_process'"},
		{`require('process')`, "Cannot find module 'process'"},
		{`require('os')`, "Cannot find module 'os'"},
		{`require('buffer')`, "Cannot find module 'buffer'"},
		{`require(5)`, `TypeError: The "id" argument must be of type string`},
		{`setTimeout('globalThis.x = 1', 1)`, `TypeError: The "callback" argument must be of type function`},
		// The Function constructor is out of reach through every object
		// the Box adds.
		{`new URL('http://a.com').constructor.constructor('return 1')()`, refused},
		{`URLSearchParams.prototype.get.constructor('return 1')()`, refused},
		{`new URLSearchParams('a=1').keys().next.constructor('return 1')()`, refused},
		{`require('url').domainToASCII.constructor('return 1')()`, refused},
		{`require('crypto').createHash.constructor('return 1')()`, refused},
		{`require('crypto').createHash('md5').update.constructor('return 1')()`, refused},
		{`require('crypto').randomUUID.constructor('return 1')()`, refused},
		{`setTimeout.constructor('return 1')()`, refused},
		{`Object.getPrototypeOf(setTimeout(() => {}, 1)).constructor.constructor('return 1')()`, refused},
		{`clearTimeout.constructor('return 1')()`, refused},
		{`require.constructor('return 1')()`, refused},
		{`console.log.constructor('return 1')()`, refused},
		{`hostFn.constructor('return 1')()`, refused},
		{`Buffer.from.constructor('return 1')()`, refused},
		{`require('zod').z.string().parse.constructor('return 1')()`, refused},
		{`require('zod').z.object({}).safeParse.constructor('return 1')()`, refused},
		{`eval('1 + 1')`, "code generation from strings is not allowed"},
		{`globalThis.eval('1 + 1')`, "code generation from strings is not allowed"},
		{`(0, eval)('1 + 1')`, "code generation from strings is not allowed"},
		{`new Function('return 1')()`, "code generation from strings is not allowed"},
		{`Function('return 1')()`, "code generation from strings is not allowed"},
		{`(function () {}).constructor('return 1')()`, "code generation from strings is not allowed"},
		{`(async function () {}).constructor('return 1')`, "code generation from strings is not allowed"},
		{`(function* () {}).constructor('yield 1')`, "code generation from strings is not allowed"},
		{`(async function* () {}).constructor('yield 1')`, "code generation from strings is not allowed"},
		{`Object.getPrototypeOf(function () {}).constructor = null; 1`, ""},
		{`delete globalThis.eval`, ""},
	} {
		_, err := b.Eval(tc.src)
		if tc.want == "" {
			// Changing the guards is refused or ignored: code generation
			// stays refused.
			if _, err := b.Eval(`(function () {}).constructor('return 1')()`); err == nil {
				t.Errorf("after %q, the Function constructor runs", tc.src)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one saying %q", tc.src, err, tc.want)
		}
	}
	if v, err := b.Eval(`[typeof process, typeof fetch, (function () {}) instanceof Function, typeof require].join()`); err != nil ||
		v != "undefined,undefined,true,function" {
		t.Errorf("globals: %v, %v", v, err)
	}
	// The host functions of the setup are out of reach; Nango's runner has
	// no setInterval or setImmediate.
	if v, err := b.Eval(`['__jsbox_internal', '__jsbox_host', '__jsbox_console', '__jsbox_resolve', '__jsbox_timer', '__jsbox_hash', '__jsbox_random', '__jsbox_uuid', '__jsbox_equal', '__jsbox_func_hostFn', 'setInterval', 'setImmediate', 'crypto']
		.filter((n) => typeof globalThis[n] !== 'undefined').join()`); err != nil || v != "" {
		t.Errorf("globals that should not be there: %v, %v", v, err)
	}
	// The modules the Box provides are frozen.
	if v, err := b.Eval(`require('url').URL = 1; require('crypto').createHash = 1; (require('url').URL === URL) + ' ' + typeof require('crypto').createHash`); err != nil || v != "true function" {
		t.Errorf("modules: %v, %v", v, err)
	}
}

// TestLimits: an endless loop stops at the deadline, growing memory at the
// memory limit, deep recursion at the stack limit, a huge string at the
// memory limit; each with its error.
func TestLimits(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, src string
		want      error
	}{
		{"endless loop", `for (;;) {}`, jsbox.ErrTimeout},
		{"endless async loop", `(async () => { for (;;) { await null; } })(); 1`, jsbox.ErrTimeout},
		{"endless loop in a promise job", `Promise.resolve().then(() => { for (;;) {} }); 1`, jsbox.ErrTimeout},
		{"growing array", `const a = []; for (;;) a.push({ n: a.length, s: 'x'.repeat(64) + a.length });`, jsbox.ErrMemory},
		{"huge string", `'x'.repeat(2 ** 28).length`, jsbox.ErrMemory},
		{"deep recursion", `function f(n) { return f(n + 1) + 1; } f(0)`, jsbox.ErrStack},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// The deadline is short only where it is what is tested: a
			// race build runs the engine several times slower.
			timeout := time.Minute
			if tc.want == jsbox.ErrTimeout {
				timeout = 300 * time.Millisecond
			}
			b := newBox(t, jsbox.Options{Limits: jsbox.Limits{Memory: 16 << 20, Timeout: timeout}})
			start := time.Now()
			_, err := b.Eval(tc.src)
			if !errors.Is(err, tc.want) {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
			if d := time.Since(start); tc.want == jsbox.ErrTimeout && d > 20*time.Second {
				t.Errorf("stopped after %v", d)
			}
		})
	}
}

// TestLimitInAPromise: a limit hit inside a promise's job rejects the
// promise with the engine's error, as any exception there does, and the
// Box goes on.
func TestLimitInAPromise(t *testing.T) {
	t.Parallel()
	b := newBox(t, jsbox.Options{})
	if _, err := b.Eval(`let reason; Promise.resolve().then(function f() { return f() + 1; }).catch((e) => { reason = String(e); }); 1`); err != nil {
		t.Fatal(err)
	}
	if v, err := b.Eval(`reason`); err != nil || v != "InternalError: stack overflow" {
		t.Errorf("reason = %v, %v", v, err)
	}
}

// TestRunsShareNothing: a prototype polluted in one Box is clean in the
// next; Boxes run side by side in goroutines of their own.
func TestRunsShareNothing(t *testing.T) {
	t.Parallel()
	polluted := newBox(t, jsbox.Options{})
	if _, err := polluted.Eval(`Object.prototype.polluted = 'yes'; Array.prototype.push = () => 0; globalThis.leak = 1;`); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			b, err := jsbox.New(jsbox.Options{})
			if err != nil {
				errs <- err
				return
			}
			defer b.Close()
			v, err := b.Eval(`const a = []; a.push(1); [({}).polluted, typeof leak, a.length].join()`)
			if err != nil || v != ",undefined,1" {
				errs <- errors.New("a fresh Box sees another's state: " + strings.TrimSpace(toString(v)))
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func toString(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return ""
}

// TestModules: Load runs a CommonJS module as the CLI compiles it;
// require resolves the host's modules, each run once, and console goes to
// the host.
func TestModules(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var logged []string
	b := newBox(t, jsbox.Options{
		Modules: map[string]string{"greeting": `globalThis.loads = (globalThis.loads || 0) + 1; module.exports = { hello: (n) => 'hello ' + n };`},
		Console: func(level, msg string) {
			mu.Lock()
			logged = append(logged, level+": "+msg)
			mu.Unlock()
		},
	})
	err := b.Load("fn.cjs", `"use strict";
var g = require('greeting');
require('greeting');
console.log('loaded', { n: 1 }, [2]);
console.error(new Error('boom').message);
var fn = { type: 'action', exec: async (nango, input) => g.hello(input.name) };
module.exports.default = fn;`)
	if err != nil {
		t.Fatal(err)
	}
	v, err := b.Eval(`let out; require('fn.cjs').default.exec(null, { name: 'ada' }).then((v) => { out = v; }); globalThis.loads`)
	if err != nil || v != 1 {
		t.Fatalf("loads = %v, %v; want the module run once", v, err)
	}
	if v, err := b.Eval(`out`); err != nil || v != "hello ada" {
		t.Errorf("exec = %v, %v", v, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(logged, "\n") != "log: loaded {\"n\":1} [2]\nerror: boom" {
		t.Errorf("console: %q", logged)
	}
}
