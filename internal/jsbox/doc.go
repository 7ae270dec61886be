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
//     (4.3.6, the version the nango CLI pins, bundled; see zod below) and
//     the modules the host gives ([Options.Modules], [Options.Programs]);
//     any other name (fs, child_process, …) is refused with an error
//     naming it.
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
// it (zod only when code uses a schema).
//
// # zod
//
// Every function the nango CLI compiles requires zod at its module's top
// level and builds the schemas of its definition there (input, output,
// models, metadata, checkpoint), which most runs never use; reading zod
// into the Box and its start-up cost a run a few milliseconds. So
// require('zod') answers a facade (zodfacade.js), and zod is read into the
// Box only when code first uses a schema:
//
//   - The module and the namespaces z (default), z.coerce and z.iso have
//     the own properties of zod's, in its order and with its attributes
//     (accessors, __esModule), so that esbuild's __toESM, TypeScript's
//     __importStar and destructuring work as with zod, without it. The
//     names are read from zod once per process, in a VM of its own.
//   - zod's factories (z.object, z.string, z.enum, z.union, z.record,
//     z.coerce.number, z.iso.datetime, …) answer lazy schemas, proxies
//     that record the call; the builder methods of their class (optional,
//     array, min, extend, pick, refine, transform, describe, …) answer
//     others. Which functions and methods are builders, and the class of
//     what they answer, are tables in zod.go (checked with zod 4.3.6 in
//     Node when written, and against zod.js by TestZodFacadeTables); a
//     method not in them (meta, unwrap, parse, …) uses the schema.
//   - Anything else done to a lazy schema (parse, safeParse, shape, _zod,
//     instanceof, Object.keys, JSON.stringify, …) loads zod if not yet,
//     replays the calls once, their arguments resolved (lazy schemas in
//     the plain objects and arrays of the arguments become their schemas,
//     in copies; getters are kept, and answer schemas), and from then on
//     the proxy forwards all to the schema, its methods bound to it. The
//     other members of the namespaces (z.ZodError, z.ZodObject, z.config,
//     z.toJSONSchema, …) load zod and are zod's own. Once zod is loaded,
//     the factories and builders answer zod's schemas at once.
//
// A lazy schema behaves as its schema in every way but identity: === tells
// them apart, and so do zod's functions that keep schemas by identity when
// handed a lazy one (a registry's get; z.toJSONSchema of a recursive lazy
// schema writes its recursion one level deeper, with $defs, where the
// schema's own toJSONSchema method writes {"$ref": "#"}). Errors zod
// throws at once for arguments it refuses (z.enum() without values) are
// thrown when the schema is first used. The facade is built, as the setup
// files are, from the intrinsics taken before any code ran, hands code
// nothing of the Box's but its proxies and functions, and zod itself is
// reachable only through it.
//
// A run of a no-op action as the CLI compiles it (BenchmarkCLINoop: fresh
// Box, module loaded, exec called, Close) costs 1.32 ms against 0.26 ms by
// hand, 5.0 times; it was 6.25 ms, 24 times, when require('zod') read zod.
// What is left is mostly esbuild's __toESM copying zod's 239 names (about
// 0.55 ms) and the facade defining them as accessors when first asked
// (0.3 ms). Using a schema adds zod's start-up, once per run.
//
// # What a Box costs
//
// A fresh Box is the engine's own (quickjs.NewVM) and one setup file,
// bootstrap.js, compiled once per process: it hardens code generation,
// takes the built-ins the other setup files need, and installs the
// globals, each a few lines that load the rest when first used. New and
// Close cost about 1.5 times quickjs.NewVM and Close (BenchmarkNew: 209
// against 137 µs on a two-core machine; 822 µs, 5.8 times, when every Box
// ran all the setup files). What code first uses adds
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
