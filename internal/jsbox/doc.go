// Package jsbox runs untrusted JavaScript (the CommonJS files the nango CLI
// compiles functions to) in a sandbox inside the Go process, on QuickJS
// (modernc.org/quickjs: pure Go, no cgo).
//
// A [Box] is one run's engine, never shared: two runs never see each
// other's state. It has a memory limit, a call depth limit and a deadline
// ([Limits]); exceeding one ends the evaluation with an error
// ([ErrMemory], [ErrStack], [ErrTimeout]; inside a promise's job it
// rejects that promise instead, as any exception does) and leaves the host and other runs unharmed.
// Code generation from strings is refused (eval, the Function constructor
// and those of async and generator functions). The global object has no
// process and no fetch; its require resolves only the modules the host
// gave in [Options.Modules] and refuses every other with an error naming
// it. console writes to [Options.Console]. Buffer (utf8, base64,
// base64url, hex, latin1, ascii and utf16le, as Node reads and writes
// them: checked against Node's answers), btoa and atob are there. [Box.Load] runs a CommonJS
// module (what the nango CLI compiles a function to), [Box.Eval] a script.
//
// What cannot be preempted: a long call of a native built-in (one
// Array.prototype.join over a hundred million elements, say) runs to its
// end or to the memory limit, past the deadline; JavaScript loops are
// stopped at it. Callers bound the damage with a fixed number of Boxes
// running at once and the memory limit.
package jsbox
