package jsbox_test

import (
	"strings"
	"testing"

	"github.com/embedauth/connect/internal/jsbox"
)

// TestLazyGlobals: Buffer, URL and URLSearchParams are accessors of the
// global object until first read, which loads them and leaves data
// properties as Node has them; 'in', a descriptor read and btoa/atob do not
// load them; assignment replaces them, on the global object or on an
// object that inherits from it, as assigning Node's writable globals does.
func TestLazyGlobals(t *testing.T) {
	t.Parallel()
	const desc = `((n) => { const d = Object.getOwnPropertyDescriptor(globalThis, n); if (!d) return 'none';
		return ('get' in d ? 'accessor' : 'data:' + typeof d.value + (d.writable ? ',writable' : '')) + (d.enumerable ? ',enumerable' : '') + (d.configurable ? ',configurable' : ''); })`
	for _, tc := range []struct{ name, src, want string }{
		{"before", `const d = ` + desc + `; ['Buffer', 'URL', 'URLSearchParams', 'btoa', 'atob'].map(d).join(' ')`,
			"accessor,configurable accessor,configurable accessor,configurable data:function,writable,configurable data:function,writable,configurable"},
		{"in and keys do not load", `const d = ` + desc + `; ['Buffer' in globalThis, 'URL' in globalThis, Object.keys(globalThis).length, globalThis.hasOwnProperty('URLSearchParams'), d('Buffer'), d('URL')].join()`,
			"true,true,0,true,accessor,configurable,accessor,configurable"},
		{"typeof loads", `const d = ` + desc + `; [typeof Buffer, d('Buffer'), d('URL'), typeof URLSearchParams, d('URLSearchParams'), d('URL')].join(' ')`,
			"function data:function,writable,configurable accessor,configurable function data:function,writable,configurable accessor,configurable"},
		{"globalThis reads", `[globalThis.Buffer.from('hi').toString('hex'), new globalThis.URL('https://a.example/b?c=1').searchParams.get('c'), globalThis.Buffer === Buffer].join()`,
			"6869,1,true"},
		{"btoa does not load Buffer", `const d = ` + desc + `; [btoa('hi'), atob('aGk='), btoa.name, atob.length, d('Buffer')].join()`,
			"aGk=,hi,btoa,1,accessor,configurable"},
		{"the module and the global are one", `const u = require('url'); [u.URL === URL, u.URLSearchParams === URLSearchParams, ` + desc + `('URL')].join()`,
			"true,true,data:function,writable,configurable"},
		{"assignment before use", `const d = ` + desc + `; Buffer = 5; globalThis.URL = 'u'; [Buffer, URL, d('Buffer'), d('URL')].join()`,
			"5,u,data:number,writable,configurable,data:string,writable,configurable"},
		{"assignment in strict code", `(() => { 'use strict'; URLSearchParams = null; })(); [URLSearchParams, ` + desc + `('URLSearchParams')].join()`,
			",data:object,writable,configurable"},
		{"assigned over stays assigned", `Buffer = 1; const c = require('crypto').createHash('md5').update('x').digest('hex'); [Buffer, c].join()`,
			"1,9dd4e461268c8034f5c8564e155c67a6"},
		{"deleted stays deleted", `delete globalThis.Buffer; const c = require('crypto').randomBytes(2).length; [typeof Buffer, 'Buffer' in globalThis, c].join()`,
			"undefined,false,2"},
		{"defined over", `Object.defineProperty(globalThis, 'URL', { value: 7, configurable: true }); [URL, typeof require('url').URL].join()`,
			"7,function"},
		{"inherited assignment", `const o = Object.create(globalThis); o.Buffer = 3; [o.Buffer, Object.keys(o).join(), ` + desc + `('Buffer'), typeof Buffer].join(' ')`,
			"3 Buffer accessor,configurable function"},
		{"a getter taken out", `const g = Object.getOwnPropertyDescriptor(globalThis, 'Buffer').get; globalThis.Buffer = 9; [typeof g(), typeof g.call(5), Buffer].join()`,
			"function,function,9"},
		{"a setter taken out", `const s = Object.getOwnPropertyDescriptor(globalThis, 'URL').set; s.call(undefined, 1); s.call(globalThis, 2); [URL].join()`,
			"2"},
		{"frozen global", `Object.freeze(globalThis); [typeof Buffer, Buffer.from('a').toString('hex'), Buffer === Buffer, ` + desc + `('Buffer'), (() => { try { URL = 1; return 'assigned'; } catch (e) { return e.name; } })()].join()`,
			"function,61,true,accessor,TypeError"},
		{"the accessors refuse code too", `[Object.getOwnPropertyDescriptor(globalThis, 'Buffer').get, Object.getOwnPropertyDescriptor(globalThis, 'URL').set].map((f) => { try { f.constructor('return 1'); return 'ran'; } catch (e) { return e.name; } }).join()`,
			"EvalError,EvalError"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := newBox(t, jsbox.Options{})
			v, err := b.Eval(tc.src)
			if err != nil || v != tc.want {
				t.Errorf("%v, %v\nwant %s", v, err, tc.want)
			}
		})
	}
}

// TestLazyLoads: each setup file loads once, when first used, however it
// is reached: from a getter, inside a Proxy's trap, a callback, a timer, a
// promise's job.
func TestLazyLoads(t *testing.T) {
	t.Parallel()
	b := newBox(t, jsbox.Options{})
	v, err := b.Eval(`(async () => {
		const out = [];
		const o = { get b() { return Buffer; } };
		out.push(o.b.from('x').toString('base64'));
		const p = new Proxy({}, { get: (t, k) => k === 'url' ? new URL('http://h.example/' + k) : undefined });
		out.push(p.url.pathname);
		out.push([1].map(() => require('crypto').createHash('sha1').update('a').digest('hex').slice(0, 8))[0]);
		out.push(await new Promise((r) => setTimeout(() => r(typeof URLSearchParams), 1)));
		out.push(await Promise.resolve().then(() => require('node:url').domainToASCII('BÜCHER.example')));
		out.push(o.b === Buffer && require('crypto') === require('node:crypto'));
		return out.join(' ');
	})()`)
	if err != nil || v != "eA== /url 86f7e437 function xn--bcher-kva.example true" {
		t.Errorf("%v, %v", v, err)
	}
}

// pollute is a script that replaces, before anything was loaded, the
// functions of the prototypes and of the global objects the setup files
// could call, and adds accessors to Object.prototype for the names of
// descriptors and more: each spy records what it is called with (its this
// and arguments) in globalThis.seen, then does what it replaced. unpollute
// puts all back. Both run in a Box before anything else.
const pollute = `
const RApply = Reflect.apply, RConstruct = Reflect.construct, SAdd = Set.prototype.add, ODP = Object.defineProperty;
const OGOPD = Object.getOwnPropertyDescriptor, ROwnKeys = Reflect.ownKeys, ODel = Reflect.deleteProperty, OSPO = Object.setPrototypeOf;
// Descriptors without a prototype: the accessors below would be read.
const own = (o, k) => { const d = OGOPD(o, k); return d && OSPO(d, null); };
globalThis.seen = new Set();
globalThis.restore = [];
globalThis.ours = new Set();
// callbacks are the functions passed as callbacks to the methods that take
// them: what the setup files' code passes there are its helpers, pure
// functions of their arguments, as any library's.
globalThis.callbacks = new Set();
const takesCallback = { __proto__: null, map: 1, filter: 1, some: 1, every: 1, sort: 1, forEach: 1, reduce: 1, find: 1, findIndex: 1, from: 1, replace: 1, replaceAll: 1, then: 1 };
let busy = 0;
const record = (self, args, key) => {
	if (busy) return;
	busy++;
	RApply(SAdd, seen, [self]);
	for (let i = 0; i < args.length; i++) RApply(SAdd, typeof args[i] === 'function' && takesCallback[key] === 1 ? callbacks : seen, [args[i]]);
	busy--;
};
const spyOf = (orig, key) => {
	const spy = function (...args) { record(this, args, key); return new.target ? RConstruct(orig, args, new.target) : RApply(orig, this, args); };
	RApply(SAdd, ours, [spy]);
	return spy;
};
const spyOn = (obj, key) => {
	const d = own(obj, key);
	if (!d || typeof d.value !== 'function' || !d.configurable) return;
	restore[restore.length] = () => ODP(obj, key, d);
	ODP(obj, key, { __proto__: null, value: spyOf(d.value, key), writable: d.writable, enumerable: d.enumerable, configurable: true });
};
const protos = [Object.prototype, Array.prototype, String.prototype, Function.prototype, RegExp.prototype, Number.prototype,
	Map.prototype, Set.prototype, Promise.prototype, Object.getPrototypeOf(Uint8Array.prototype), Uint8Array.prototype, Error.prototype,
	Object.getPrototypeOf([][Symbol.iterator]()), Object.getPrototypeOf(''[Symbol.iterator]()), Symbol.prototype,
	Object, Array, String, Number, Math, JSON, Reflect, ArrayBuffer, Symbol, Promise, Uint8Array, Int16Array];
const all = [];
for (let i = 0; i < protos.length; i++) {
	const ks = ROwnKeys(protos[i]);
	for (let j = 0; j < ks.length; j++) if (ks[j] !== 'constructor' && ks[j] !== '__proto__' && ks[j] !== 'prototype') all[all.length] = [protos[i], ks[j]];
}
// Accessors on Object.prototype for names descriptors, modules and
// records are read and written by: they record, read as if absent, and
// write an own property, as if they were not there.
const names = ['get', 'set', 'value', 'writable', 'enumerable', 'configurable', 'exports', 'module', 'Buffer', 'URL', 'URLSearchParams',
	'then', '0', '1', 'scheme', 'path', 'host', 'query', 'input', 'code', 'id', 'callback', 'args', 't', 'hash', 'random', 'format', 'replace'];
// The globals the setup files use, replaced by spies of their own.
const globals = ['Uint8Array', 'Int16Array', 'ArrayBuffer', 'Symbol', 'Array', 'String', 'Number', 'Error', 'TypeError', 'RangeError', 'parseInt'];
for (let i = 0; i < all.length; i++) spyOn(all[i][0], all[i][1]);
for (let i = 0; i < names.length; i++) {
	const k = names[i];
	const get = function () { record(this, [], k); return undefined; };
	const set = function (v) { record(this, [v], k); ODP(this, k, { __proto__: null, value: v, writable: true, enumerable: true, configurable: true }); };
	RApply(SAdd, ours, [get]);
	RApply(SAdd, ours, [set]);
	restore[restore.length] = () => ODel(Object.prototype, k);
	ODP(Object.prototype, k, { __proto__: null, get, set, configurable: true });
}
for (let i = 0; i < globals.length; i++) {
	const k = globals[i], d = own(globalThis, k);
	restore[restore.length] = () => ODP(globalThis, k, d);
	ODP(globalThis, k, { __proto__: null, value: spyOf(d.value, k), writable: true, configurable: true });
}
1`

const unpollute = `for (let i = restore.length - 1; i >= 0; i--) restore[i](); 1`

// uses load every setup file in ways a run could, and answers what they
// answer.
const uses = `(async () => {
	const out = [];
	const o = { get b() { return Buffer; } };
	out.push(o.b.from('héllo wörld').toString('base64'), Buffer.from('aGk=', 'base64').toString(), btoa('hi'), JSON.stringify(Buffer.from([1, 2])));
	const p = new Proxy({}, { get: (t, k) => new URL('https://user:pw@bücher.example:8080/a/../b?x=1&y=2#f') });
	const u = p.anything;
	out.push(u.href, u.origin, u.searchParams.get('y'), [...new URLSearchParams({ a: '1', b: '2' })].join(';'), String(new URLSearchParams([['q', 'a b']])));
	out.push([1].map(function mine() { return require('crypto').createHmac('sha256', 'k').update('v').digest('hex'); })[0], require('crypto').randomBytes(4).length);
	out.push(require('url').domainToUnicode('xn--bcher-kva.example'), require('node:crypto').timingSafeEqual(Buffer.from('a'), Buffer.from('a')));
	out.push(await new Promise((r) => setTimeout(() => r('timer'), 1)));
	console.log('logged', { a: 1 });
	Buffer = 'assigned';
	out.push(Buffer);
	out.push(Object.getPrototypeOf(require('url').URL.prototype) === Object.prototype, Object.keys(require('url').URL.prototype).length);
	return out.join('|');
})()`

// TestLazyLoadsUnsubverted: code that replaced the prototypes' methods and
// the global objects' functions, and put accessors on Object.prototype,
// before Buffer, URL, crypto, the timers or console were first used, sees
// none of the Box's internals through them (no function, no object of the
// setup files but those any code reaches), and the setup files load as
// they would have: once it puts back what it replaced, they answer as in a
// Box no code touched.
func TestLazyLoadsUnsubverted(t *testing.T) {
	t.Parallel()
	clean := newBox(t, jsbox.Options{})
	want, err := clean.Eval(uses)
	if err != nil {
		t.Fatal(err)
	}

	b := newBox(t, jsbox.Options{Console: func(string, string) {}})
	for _, src := range []string{pollute, uses, unpollute} {
		if _, err := b.Eval(src); err != nil {
			t.Fatalf("%v\n%.200s", err, src)
		}
	}
	// What the spies saw: functions any code reaches from the global object
	// (and the getters and setters of the lazy globals) or the test's own;
	// no object without a prototype but the test's; no array holding the
	// intrinsics.
	v, err := b.Eval(`(() => {
		const reach = new Set();
		const walk = (x, depth) => {
			if ((typeof x !== 'object' && typeof x !== 'function') || x === null || reach.has(x) || depth > 6) return;
			reach.add(x);
			walk(Object.getPrototypeOf(x), depth + 1);
			for (const k of Reflect.ownKeys(x)) {
				const d = Object.getOwnPropertyDescriptor(x, k);
				if (!d) continue;
				if ('value' in d) walk(d.value, depth + 1);
				else { walk(d.get, depth + 1); walk(d.set, depth + 1); }
			}
		};
		walk(globalThis, 0);
		walk(require('url'), 0);
		walk(require('crypto'), 0);
		walk(setTimeout(() => {}, 1), 0);
		const problems = [];
		for (const x of seen) {
			try {
			if (typeof x === 'function') {
				if (!reach.has(x) && !ours.has(x)) problems.push('function ' + String(x.name) + ': ' + Function.prototype.toString.call(x).slice(0, 80));
				continue;
			}
			if (typeof x !== 'object' || x === null) continue;
			if (Object.getPrototypeOf(x) === null && !reach.has(x)) problems.push('an object without a prototype: ' + Reflect.ownKeys(x).map(String).join());
			if (Array.isArray(x) && x.includes(Object.defineProperty)) problems.push('the intrinsics');
			for (const k of Reflect.ownKeys(x)) {
				const d = Object.getOwnPropertyDescriptor(x, k);
				if (d && typeof d.value === 'function' && !reach.has(d.value) && !ours.has(d.value)) problems.push('a function ' + String(k) + ' in an object ' + Reflect.ownKeys(x).map(String).join());
			}
			} catch (e) { problems.push('checking ' + typeof x + ': ' + e); }
		}
		return [seen.size > 100, ...new Set(problems)].join('\n');
	})()`)
	if err != nil || v != "true" {
		t.Errorf("the spies saw internals:\n%v %v", v, err)
	}
	// Put back, the setup files answer as in a Box no code touched.
	b2 := newBox(t, jsbox.Options{Console: func(string, string) {}})
	for _, src := range []string{pollute, `typeof Buffer + typeof URL + typeof require('crypto') + typeof require('url'); setTimeout(() => {}, 1); console.log(1); 1`, unpollute} {
		if _, err := b2.Eval(src); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := b2.Eval(uses); err != nil || got != want {
		t.Errorf("loaded while polluted:\n got %v, %v\nwant %v", got, err, want)
	}
}

// TestLazyLoadsHostile: code that replaced, before the first use, the
// global objects' functions and constructors the setup files take, the
// prototypes' methods, and put accessors on Object.prototype that answer
// junk (a getter for get, a value for value), changes nothing the setup
// files make when they load: once it puts back what it replaced, they
// answer as in a Box no code touched. The host functions and console
// work while it is all replaced.
func TestLazyLoadsHostile(t *testing.T) {
	t.Parallel()
	clean := newBox(t, jsbox.Options{})
	want, err := clean.Eval(uses)
	if err != nil {
		t.Fatal(err)
	}
	var logged []string
	b := newBox(t, jsbox.Options{Console: func(level, msg string) { logged = append(logged, msg) }})
	if err := b.Func("echo", func(args []any) (any, error) { return map[string]any{"got": args}, nil }); err != nil {
		t.Fatal(err)
	}
	const hostile = `
const ODP = Object.defineProperty, OGOPD = Object.getOwnPropertyDescriptor, OSPO = Object.setPrototypeOf, ODel = Reflect.deleteProperty, E = Error;
globalThis.restore = [];
const replace = (o, k, v) => {
	const d = OSPO(OGOPD(o, k), null);
	restore[restore.length] = () => ODP(o, k, d);
	ODP(o, k, { __proto__: null, value: v, writable: true, configurable: true });
};
const junk = () => { throw new E('junk called'); };
const pairs = [];
for (const [o, ks] of [
	[Object, ['defineProperty', 'getOwnPropertyDescriptor', 'setPrototypeOf', 'freeze', 'keys', 'assign', 'create', 'getPrototypeOf', 'defineProperties']],
	[Reflect, ['apply', 'ownKeys', 'defineProperty', 'construct']],
	[JSON, ['parse', 'stringify']],
	[Array, ['isArray', 'from', 'of']],
	[String, ['fromCharCode', 'fromCodePoint']],
	[ArrayBuffer, ['isView']],
	[Math, ['floor', 'max', 'min']],
	[Array.prototype, ['push', 'map', 'join', 'forEach', 'filter', 'slice', 'includes', 'concat', 'fill', Symbol.iterator]],
	[Object.getPrototypeOf([][Symbol.iterator]()), ['next']],
	[String.prototype, ['charCodeAt', 'slice', 'split', 'replace', 'toLowerCase', Symbol.iterator]],
	[Function.prototype, ['call', 'apply', 'bind']],
	[Object.getPrototypeOf(Uint8Array.prototype), ['fill', 'set', 'subarray']],
]) for (const k of ks) pairs.push([o, k]);
const Junk = function Junk() { throw new E('junk constructed'); };
for (const k of ['Uint8Array', 'Int16Array', 'ArrayBuffer', 'Symbol', 'Array', 'String', 'Number', 'Error', 'TypeError', 'RangeError', 'parseInt', 'Promise']) pairs.push([globalThis, k, Junk]);
const accessors = [['get', () => () => 'evil'], ['set', () => () => {}], ['value', () => 'evil'], ['writable', () => true], ['enumerable', () => true], ['configurable', () => false]];
for (let i = 0; i < pairs.length; i++) replace(pairs[i][0], pairs[i][1], pairs[i][2] || junk);
for (let i = 0; i < accessors.length; i++) {
	const k = accessors[i][0];
	restore[restore.length] = () => ODel(Object.prototype, k);
	ODP(Object.prototype, k, { __proto__: null, get: accessors[i][1], set: junk, configurable: true });
}
1`
	loads := `const r = [typeof Buffer, typeof URL, typeof URLSearchParams, typeof require('crypto').createHash, typeof require('url').format];
	setTimeout(() => {}, 1);
	console.log('a', 1, { b: 2 });
	r[r.length] = echo('x');
	r`
	for _, src := range []string{hostile, loads} {
		if _, err := b.Eval(src); err != nil {
			t.Fatalf("%v\n%.300s", err, src)
		}
	}
	if v, err := b.Eval(`const e = echo(1, 'two'); e`); err != nil {
		t.Errorf("a host function while JSON is replaced: %v, %v", v, err)
	}
	if _, err := b.Eval(`for (let i = restore.length - 1; i >= 0; i--) restore[i](); 1`); err != nil {
		t.Fatal(err)
	}
	if got, err := b.Eval(`JSON.stringify(echo(1, 'two'))`); err != nil || got != `{"got":[1,"two"]}` {
		t.Errorf("echo: %v, %v", got, err)
	}
	if strings.Join(logged, "\n") != `a 1 {"b":2}` {
		t.Errorf("console: %q", logged)
	}
	if got, err := b.Eval(uses); err != nil || got != want {
		t.Errorf("loaded while replaced:\n got %v, %v\nwant %v", got, err, want)
	}
}
