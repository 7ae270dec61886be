// Package jsbox runs untrusted JavaScript (the CommonJS files the nango CLI
// compiles functions to) in a sandbox inside the Go process, on QuickJS
// (modernc.org/quickjs: pure Go, no cgo).
//
// A [Box] is one run's engine, never shared: two runs never see each
// other's state. It has a memory limit, a call depth limit and a deadline
// ([Limits]); exceeding one ends the evaluation with an error
// ([ErrMemory], [ErrStack], [ErrTimeout]; inside a promise's job it
// rejects that promise instead, as any exception does) and leaves the host
// and other runs unharmed.
//
// # What code sees
//
// What Nango's Node runner gives a function, no more:
//
//   - require, which resolves url and crypto (and their node: names), zod
//     (4.3.6, the version the nango CLI pins, bundled) and the modules the
//     host gives ([Options.Modules], [Options.Programs]); any other name
//     (fs, child_process, …) is refused with an error naming it.
//   - URL and URLSearchParams (the WHATWG standard, as Node 20 answers it:
//     checked against Node's answers), and require('url') with them,
//     domainToASCII, domainToUnicode and format of a URL.
//   - crypto's createHash and createHmac (md5, sha1, sha224, sha256,
//     sha384, sha512), randomUUID, randomBytes (at most 1 MiB at once) and
//     timingSafeEqual, over Go's crypto packages.
//   - setTimeout and clearTimeout (no setInterval, no setImmediate).
//   - Buffer (utf8, base64, base64url, hex, latin1, ascii and utf16le, as
//     Node reads and writes them), btoa and atob.
//   - console, which writes to [Options.Console].
//
// Buffer, URL and URLSearchParams are, until code first reads them,
// configurable accessors of the global object: the first read loads them
// and leaves a data property as Node has (writable, configurable, not
// enumerable); assigning one replaces it so too, and delete removes it.
// typeof, globalThis.URL, 'Buffer' in globalThis answer as in Node; only
// Object.getOwnPropertyDescriptor tells, before the first read. btoa and
// atob, require('url') and require('crypto'), setTimeout and console load
// what they need when first called.
//
// There is no process, no fetch, no global crypto. Code generation from
// strings is refused (eval, the Function constructor and those of async
// and generator functions, however reached). The host adds functions of
// its own with [Box.Func]; their arguments and answers cross as JSON, and
// they throw what the host returns as an error ([Throw] for a value of its
// choosing).
//
// # Running code
//
// [Box.Load] runs a CommonJS module, [Box.EvalContext] (and [Box.Eval]) a
// script. An evaluation runs the script, then the jobs its promises
// queued, then its timers: when no job is left it waits for the earliest
// timer (a timer due after the deadline is ErrTimeout at once), runs it,
// and goes on. When the script's value is a promise, the evaluation
// answers what it settles to ([ErrUnsettled] when nothing is left that
// could settle it). Cancelling the context interrupts the JavaScript and
// ends a wait.
//
// [Compile] compiles a module to bytecode once, as a [Program] that any
// number of Boxes load ([Box.LoadProgram]) without parsing it again: a
// deployed function is compiled once per deployment, and each run loads it
// into a fresh Box. The bytecode keeps the module's name as the file name
// and its line numbers for stack traces (columns of the first line are
// [ModuleColumnOffset] to the right). The modules the Box provides are
// compiled once per process, and a Box reads one only when code requires
// it: zod costs a run a few milliseconds when it is used, nothing when it
// is not.
//
// # What a Box costs
//
// A fresh Box is the engine's own (quickjs.NewVM) and one setup file,
// bootstrap.js, compiled once per process: it hardens code generation,
// takes the built-ins the other setup files need, and installs the
// globals, each a few lines that load the rest when first used. New and
// Close cost about 1.5 times quickjs.NewVM and Close (BenchmarkNew: 202
// against 139 µs on a loaded two-core machine; 822 µs, 5.8 times, when
// every Box ran all the setup files). What code first uses adds
// (BenchmarkFirstUse): Buffer about
// 110 µs, URL 420 µs, crypto 170 µs (Buffer included), a timer 50 µs,
// console 20 µs. The setup files load from what bootstrap.js took before
// any other code ran, and what runs while they load calls no method code
// could have replaced: code that replaced Object.defineProperty, JSON.parse,
// the methods of Array.prototype or put setters on Object.prototype before
// the first use changes nothing they make, and sees none of the Box's
// internals through them (their methods, as before, still call the methods
// of the prototypes as they find them).
//
// What cannot be preempted: a long call of a native built-in (one
// Array.prototype.join over a hundred million elements, say) runs to its
// end or to the memory limit, past the deadline; JavaScript loops are
// stopped at it. Callers bound the damage with a fixed number of Boxes
// running at once and the memory limit.
package jsbox
