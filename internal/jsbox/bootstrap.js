// The first code a Box runs, before any other. It makes code generation
// from strings throw (eval, and the constructors of every kind of
// function, reachable from any function's constructor property) while
// instanceof Function still works; takes the host function New registered
// off the global object; takes the intrinsics the other setup files need;
// and installs console, require, setTimeout and clearTimeout, btoa and
// atob, and, for Buffer, URL and URLSearchParams, an accessor whose first
// read loads the setup file that defines them and replaces itself with a
// data property. Its value is forHost, the function the host calls.
//
// Each Box runs it, so it does as little as it can: the other setup files
// (buffer.js, url.js, crypto.js, timers.js) are loaded into a Box when its
// code first uses what they define. The engine makes each built-in
// function when code first reads it: the intrinsics taken here are those
// the setup files need, no more (no Math: it costs more than all the rest).
//
// What runs later, when code calls what this file installs, calls only
// the intrinsics taken here, before any other code ran, and no method
// other code could have replaced (no Array.prototype method, no iteration,
// descriptors without a prototype): what user code did to the global
// object or the prototypes changes none of it, and none of it (the host
// function above all) is ever handed to user code.
(() => {
	'use strict';
	const global = globalThis;
	const { defineProperty, getOwnPropertyDescriptor, getPrototypeOf, setPrototypeOf, freeze, keys } = Object;
	const { apply, ownKeys } = Reflect;
	const { parse: parseJSON, stringify } = JSON;
	const { isArray, from: arrayFrom } = Array;
	const { fromCharCode, fromCodePoint } = String;
	const { isView } = ArrayBuffer;
	// The intrinsics the other setup files take, which know them by these
	// names (jsbox.go makes each file a function that names them so). An
	// array costs less than an object to make in each Box.
	const intrinsics = [defineProperty, getOwnPropertyDescriptor, setPrototypeOf, freeze, apply, ownKeys, isArray, arrayFrom, fromCharCode,
		fromCodePoint, isView, Array, String, Number, Symbol, Error, TypeError, RangeError, Uint8Array, Int16Array, ArrayBuffer, parseInt];
	const IString = String, IError = Error, ITypeError = TypeError, IPromise = Promise;

	// The host function (Box.host in jsbox.go): host(op, ...args), its
	// operations numbered as there.
	const CONSOLE = 0, RESOLVE = 2, LOAD = 3, FUNC = 8;
	const host = global.__jsbox_host;
	delete global.__jsbox_host;

	// d is the descriptor of the data properties defined here. The
	// constructors of all kinds of functions refuse; instanceof Function
	// still holds.
	const d = { __proto__: null, value: undefined, writable: false, enumerable: false, configurable: false };
	const F = function Function() { throw new EvalError('code generation from strings is not allowed in functions'); };
	F.prototype = Function.prototype;
	d.value = F;
	defineProperty(global, 'Function', d);
	defineProperty(Function.prototype, 'constructor', d);
	defineProperty(getPrototypeOf(async function () {}), 'constructor', d);
	defineProperty(getPrototypeOf(function* () {}), 'constructor', d);
	defineProperty(getPrototypeOf(async function* () {}), 'constructor', d);
	d.value = () => { throw new EvalError('code generation from strings is not allowed in functions'); };
	defineProperty(global, 'eval', d);

	const console = {};
	const levels = ['log', 'info', 'warn', 'error', 'debug'];
	for (let i = 0; i < 5; i++) {
		const level = levels[i];
		console[level] = (...args) => {
			let out = '';
			for (let i = 0; i < args.length; i++) {
				const a = args[i];
				let s;
				if (typeof a === 'string') s = a;
				else if (a instanceof IError) s = a.stack ? IString(a.stack) : IString(a);
				else if (a === undefined || typeof a === 'function' || typeof a === 'symbol' || typeof a === 'bigint') s = IString(a);
				else {
					try { s = stringify(a); } catch (e) { s = IString(a); }
				}
				out += i === 0 ? s : ' ' + s;
			}
			host(CONSOLE, level, out);
		};
	}
	d.value = freeze(console);
	defineProperty(global, 'console', d);

	// The setup files loaded when first used: each is a function of the
	// intrinsics (and what else it needs) that answers what it defines,
	// run once. The host numbers them as setupFiles lists them.
	const BUFFER_JS = 0, URL_JS = 1, CRYPTO_JS = 2, TIMERS_JS = 3;
	const loaded = [undefined, undefined, undefined, undefined];
	const load = (file) => {
		let x = loaded[file];
		if (x === undefined) {
			const fn = host(LOAD, file);
			if (typeof fn !== 'function') throw new IError(fn);
			x = file === CRYPTO_JS ? fn(intrinsics, load(BUFFER_JS).Buffer, setTimeout, host) : file === TIMERS_JS ? fn(intrinsics, host) : fn(intrinsics);
			loaded[file] = x;
		}
		return x;
	};

	// Buffer, URL and URLSearchParams: reading one loads its file and
	// replaces the accessor, while it is still there, with a data property,
	// as assigning one does with the value assigned.
	const names = ['Buffer', 'URL', 'URLSearchParams'], files = [BUFFER_JS, URL_JS, URL_JS], gets = [undefined, undefined, undefined];
	// lazy replaces accessor i, if still there, with a data property of
	// value v, an own property of self when that is not the global object
	// (as when a writable data property is inherited). The global object
	// may be frozen: get then keeps the accessor.
	const lazy = (i, self, v, get) => {
		const name = names[i];
		if (self !== global) {
			if ((typeof self === 'object' && self !== null) || typeof self === 'function') {
				defineProperty(self, name, { __proto__: null, value: v, writable: true, enumerable: true, configurable: true });
			}
			return;
		}
		const p = getOwnPropertyDescriptor(global, name);
		if (p === undefined || setPrototypeOf(p, null).get !== gets[i]) return;
		try {
			defineProperty(global, name, { __proto__: null, value: v, writable: true, enumerable: false, configurable: true });
		} catch (e) {
			if (!get) throw e;
		}
	};
	const get = (i) => {
		const v = load(files[i])[names[i]];
		lazy(i, global, v, true);
		return v;
	};
	const a = { __proto__: null, get: undefined, set: undefined, enumerable: false, configurable: true };
	a.get = gets[0] = () => get(0);
	a.set = function (v) { lazy(0, this, v, false); };
	defineProperty(global, 'Buffer', a);
	a.get = gets[1] = () => get(1);
	a.set = function (v) { lazy(1, this, v, false); };
	defineProperty(global, 'URL', a);
	a.get = gets[2] = () => get(2);
	a.set = function (v) { lazy(2, this, v, false); };
	defineProperty(global, 'URLSearchParams', a);

	const cache = { __proto__: null };
	const require = (id) => {
		if (typeof id !== 'string') throw new ITypeError('The "id" argument must be of type string. Received ' + (id === null ? 'null' : typeof id));
		if (id in cache) return cache[id].exports;
		// url and crypto, and their node: names, then the modules the host
		// resolves (its Programs and Modules, then zod), each run once.
		const file = id === 'url' || id === 'node:url' ? URL_JS : id === 'crypto' || id === 'node:crypto' ? CRYPTO_JS : -1;
		if (file !== -1) {
			const exports = load(file).module;
			cache[id] = { __proto__: null, exports };
			return exports;
		}
		const fn = host(RESOLVE, id);
		if (typeof fn === 'string') throw new IError(fn);
		if (typeof fn !== 'function') throw new IError("Cannot find module '" + id + "': functions may require only the modules the host provides");
		const module = { exports: {} };
		cache[id] = module;
		try {
			apply(fn, module.exports, [module.exports, require, module]);
		} catch (e) {
			delete cache[id];
			throw e;
		}
		return module.exports;
	};
	// No setInterval or setImmediate: Nango's runner has neither.
	const setTimeout = (callback, after, ...args) => load(TIMERS_JS).set(callback, after, args);
	const clearTimeout = (timer) => { if (loaded[TIMERS_JS] !== undefined) loaded[TIMERS_JS].clear(timer); };
	const btoa = (s) => load(BUFFER_JS).btoa(s);
	const atob = (s) => load(BUFFER_JS).atob(s);
	d.value = require;
	defineProperty(global, 'require', d);
	d.writable = d.configurable = true;
	d.value = setTimeout;
	defineProperty(global, 'setTimeout', d);
	d.value = clearTimeout;
	defineProperty(global, 'clearTimeout', d);
	d.value = btoa;
	defineProperty(global, 'btoa', d);
	d.value = atob;
	defineProperty(global, 'atob', d);

	// forHost is what the host calls: forHost(0, id) runs a timer's
	// callback; forHost(1, name, index) installs a host function the host
	// adds after setup (Box.Func: its arguments cross as one JSON array and
	// its answer as a JSON envelope); forHost(2, v) answers v when it is a
	// promise, else undefined.
	return (op, a, b) => {
		if (op === 2) return a instanceof IPromise ? a : undefined;
		if (op === 0) return loaded[TIMERS_JS].fire(a);
		const index = b;
		const fn = { [a](...args) {
			const r = parseJSON(host(FUNC, index, stringify(args)));
			if (r[0] === 0) return r[1];
			if (r[0] === 1) throw new IError(r[1]);
			if (r[0] === 3) throw r[1];
			// An object of the host's choosing: an Error with its fields.
			const v = r[1];
			const e = new IError(typeof v.message === 'string' ? v.message : '');
			const ks = keys(v);
			for (let i = 0; i < ks.length; i++) {
				const k = ks[i];
				defineProperty(e, k, { __proto__: null, value: v[k], writable: true, enumerable: k !== 'message' && k !== 'stack', configurable: true });
			}
			throw e;
		} }[a];
		defineProperty(global, a, { __proto__: null, value: fn, writable: false, enumerable: false, configurable: true });
	};
})();
