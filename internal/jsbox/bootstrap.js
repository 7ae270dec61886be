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
// (buffer.js, url.js, crypto.js, timers.js, globals.js) are loaded into a
// Box when its code first uses what they define, and what this file makes
// only calls them. The engine makes each built-in function when code first
// reads it: the intrinsics taken here are those the setup files need, no
// more (no Math: making it costs more than most of this file).
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
	const { apply, ownKeys, get: reflectGet, set: reflectSet, has: reflectHas, defineProperty: reflectDefineProperty,
		deleteProperty: reflectDeleteProperty, setPrototypeOf: reflectSetPrototypeOf, isExtensible, preventExtensions } = Reflect;
	const { get: weakMapGet, set: weakMapSet } = WeakMap.prototype;
	const { parse: parseJSON, stringify } = JSON;
	const { isArray, from: arrayFrom } = Array;
	const { fromCharCode, fromCodePoint } = String;
	const { isView } = ArrayBuffer;
	// The intrinsics the other setup files take, which know them by these
	// names (jsbox.go makes each file a function that names them so). An
	// array costs less than an object to make in each Box.
	const intrinsics = [defineProperty, getOwnPropertyDescriptor, setPrototypeOf, freeze, apply, ownKeys, isArray, arrayFrom, fromCharCode,
		fromCodePoint, isView, stringify, Array, String, Number, Symbol, Error, TypeError, RangeError, Uint8Array, Int16Array, ArrayBuffer,
		parseInt, getPrototypeOf, reflectGet, reflectSet, reflectHas, reflectDefineProperty, reflectDeleteProperty, reflectSetPrototypeOf,
		isExtensible, preventExtensions, Proxy, WeakMap, weakMapGet, weakMapSet];
	const IError = Error, ITypeError = TypeError, IPromise = Promise;

	// The host function (Box.host in jsbox.go): host(op, ...args), its
	// operations numbered as there (hostConsole...), as the setup files are
	// (setupBuffer...): numbers, not names, which would cost each Box a
	// variable its closures hold.
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
	defineProperty(getPrototypeOf(async () => {}), 'constructor', d);
	defineProperty(getPrototypeOf(function* () {}), 'constructor', d);
	defineProperty(getPrototypeOf(async function* () {}), 'constructor', d);
	d.value = () => { throw new EvalError('code generation from strings is not allowed in functions'); };
	defineProperty(global, 'eval', d);

	// console: its methods format their arguments with globals.js.
	const console = {
		log: (...args) => { host(0, 'log', load(4).format(args)); }, // hostConsole
		info: (...args) => { host(0, 'info', load(4).format(args)); },
		warn: (...args) => { host(0, 'warn', load(4).format(args)); },
		error: (...args) => { host(0, 'error', load(4).format(args)); },
		debug: (...args) => { host(0, 'debug', load(4).format(args)); },
	};
	d.value = freeze(console);
	defineProperty(global, 'console', d);

	// The setup files loaded when first used: buffer.js (0), url.js (1),
	// crypto.js (2), timers.js (3), globals.js (4), and zodfacade.js (5).
	// Each is a function of the intrinsics (and what else it needs) that
	// answers what it defines, run once.
	const loaded = [undefined, undefined, undefined, undefined, undefined, undefined];
	const load = (file) => {
		let x = loaded[file];
		if (x === undefined) {
			const fn = host(3, file); // hostLoad
			if (typeof fn !== 'function') throw new IError(fn);
			x = file === 2 ? fn(intrinsics, load(0).Buffer, setTimeout, host) : file === 3 || file === 5 ? fn(intrinsics, host) :
				file === 4 ? fn(intrinsics, global, names, gets) : fn(intrinsics);
			loaded[file] = x;
		}
		return x;
	};

	// Buffer, URL and URLSearchParams: reading one loads its file and
	// replaces the accessor, while it is still there, with a data property,
	// as assigning one does with the value assigned (globals.js).
	const names = ['Buffer', 'URL', 'URLSearchParams'], files = [0, 1, 1], gets = [undefined, undefined, undefined];
	const accessor = { __proto__: null, get: undefined, set: undefined, enumerable: false, configurable: true };
	for (let i = 0; i < 3; i++) {
		accessor.get = gets[i] = () => {
			const v = load(files[i])[names[i]];
			load(4).replace(i, global, v, true);
			return v;
		};
		accessor.set = function (v) { load(4).replace(i, this, v, false); };
		defineProperty(global, names[i], accessor);
	}

	const cache = { __proto__: null };
	const require = (id) => {
		if (typeof id !== 'string') throw new ITypeError('The "id" argument must be of type string. Received ' + (id === null ? 'null' : typeof id));
		if (id in cache) return cache[id].exports;
		// The host answers the setup file of url and crypto (and their
		// node: names) and of the facade of zod, the function of a module
		// it has (its Programs and Modules), or why it has none. Each runs
		// once.
		const fn = host(2, id); // hostResolve
		if (typeof fn === 'number') {
			const exports = load(fn).module;
			cache[id] = { __proto__: null, exports };
			return exports;
		}
		if (typeof fn !== 'function') throw new IError(fn);
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
	const setTimeout = (callback, after, ...args) => load(3).set(callback, after, args);
	const clearTimeout = (timer) => { if (loaded[3] !== undefined) loaded[3].clear(timer); };
	const btoa = (s) => load(0).btoa(s);
	const atob = (s) => load(0).atob(s);
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
	// its answer as a JSON envelope); forHost(3, name, index) replaces it
	// by one that crosses with strings (Box.FuncRaw); forHost(2, v) answers
	// v when it is a promise, else undefined.
	return (op, a, b) => {
		if (op === 2) return a instanceof IPromise ? a : undefined;
		if (op === 0) return loaded[3].fire(a);
		const index = b;
		if (op === 3) { // FuncRaw: a string in, the host's string out
			const raw = { [a](arg) { return host(8, index, typeof arg === 'string' ? arg : '' + arg); } }[a];
			defineProperty(global, a, { __proto__: null, value: raw, writable: false, enumerable: false, configurable: true });
			return;
		}
		const fn = { [a](...args) {
			const r = parseJSON(host(8, index, stringify(args))); // hostFunc
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
