// The first code a Box runs. It makes code generation from strings throw
// (eval, and the constructors of every kind of function, reachable from
// any function's constructor property) while instanceof Function still
// works; takes the host functions New registered off the global object;
// and installs console, require, setTimeout and clearTimeout. What the
// other setup files need it leaves in globalThis.__jsbox_internal, which
// the last of them removes before any other code runs.
(() => {
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

	// The host functions, which no other code may see.
	const take = (name) => {
		const f = globalThis[name];
		delete globalThis[name];
		return f;
	};
	const hostConsole = take('__jsbox_console');
	const hostResolve = take('__jsbox_resolve');
	const hostTimer = take('__jsbox_timer');
	const host = {
		hash: take('__jsbox_hash'),
		random: take('__jsbox_random'),
		uuid: take('__jsbox_uuid'),
		equal: take('__jsbox_equal'),
	};

	const { defineProperty, freeze } = Object;
	const { parse: parseJSON, stringify } = JSON;
	const { apply } = Reflect;
	const IntrinsicPromise = Promise;
	const global = (name, value) => defineProperty(globalThis, name, { value, writable: true, enumerable: false, configurable: true });

	const format = (args) => args.map((a) => {
		if (typeof a === 'string') return a;
		if (a instanceof Error) return a.stack ? String(a.stack) : String(a);
		if (a === undefined || typeof a === 'function' || typeof a === 'symbol' || typeof a === 'bigint') return String(a);
		try { return stringify(a); } catch (e) { return String(a); }
	}).join(' ');
	const console = {};
	for (const level of ['log', 'info', 'warn', 'error', 'debug']) {
		console[level] = (...args) => { hostConsole(level, format(args)); };
	}
	defineProperty(globalThis, 'console', { value: freeze(console), writable: false, enumerable: false, configurable: false });

	// require: the modules the setup files define, then those the host
	// resolves (its Programs and Modules, then zod), each run once.
	const defined = Object.create(null);
	const cache = Object.create(null);
	const require = function require(id) {
		if (typeof id !== 'string') throw new TypeError('The "id" argument must be of type string. Received ' + (id === null ? 'null' : typeof id));
		if (id in cache) return cache[id].exports;
		let fn = defined[id];
		if (fn === undefined) {
			const r = hostResolve(id);
			if (typeof r === 'string') throw new Error(r);
			if (typeof r !== 'function') throw new Error("Cannot find module '" + id + "': functions may require only the modules the host provides");
			fn = r;
		}
		const module = { exports: {} };
		cache[id] = module;
		try {
			fn.call(module.exports, module.exports, require, module);
		} catch (e) {
			delete cache[id];
			throw e;
		}
		return module.exports;
	};
	defineProperty(globalThis, 'require', { value: require, writable: false, enumerable: false, configurable: false });
	// define registers a module the setup files provide, under its names.
	const define = (names, fn) => { for (const n of names) defined[n] = fn; };

	// setTimeout and clearTimeout, as Node has them; the host keeps the
	// queue and runs the callbacks when the run is idle and they are due.
	// No setInterval or setImmediate: Nango's runner has neither.
	const callbacks = new Map();
	const TIMEOUT_MAX = 2 ** 31 - 1;
	class Timeout {
		#id;
		constructor(id) { this.#id = id; }
		ref() { hostTimer(2, this.#id); return this; }
		unref() { hostTimer(3, this.#id); return this; }
		hasRef() { return hostTimer(5, this.#id); }
		refresh() { hostTimer(4, this.#id); return this; }
		close() { clear(this.#id); return this; }
		[Symbol.toPrimitive]() { return this.#id; }
	}
	freeze(Timeout.prototype);
	const clear = (id) => {
		if (callbacks.delete(id)) hostTimer(1, id);
	};
	const typeName = (v) => v === null ? 'null' : typeof v === 'function' ? 'function' : typeof v === 'object' ? 'an instance of ' + (v.constructor && v.constructor.name || 'Object') : 'type ' + typeof v + ' (' + String(v) + ')';
	global('setTimeout', function setTimeout(callback, after, ...args) {
		if (typeof callback !== 'function') {
			const e = new TypeError('The "callback" argument must be of type function. Received ' + (callback === undefined ? 'undefined' : typeName(callback)));
			e.code = 'ERR_INVALID_ARG_TYPE';
			throw e;
		}
		after *= 1;
		if (!(after >= 1 && after <= TIMEOUT_MAX)) after = 1;
		const id = hostTimer(0, after);
		const t = new Timeout(id);
		callbacks.set(id, { callback, args, t });
		return t;
	});
	global('clearTimeout', function clearTimeout(timer) {
		if (timer instanceof Timeout) timer = timer[Symbol.toPrimitive]();
		else if (typeof timer === 'string') timer = Number(timer);
		if (typeof timer === 'number') clear(timer);
	});
	const fire = (id) => {
		const c = callbacks.get(id);
		if (c === undefined) return;
		callbacks.delete(id);
		apply(c.callback, c.t, c.args);
	};

	// Host functions the host adds after setup (Box.Func): their arguments
	// cross as one JSON array and their answer as a JSON envelope.
	const toThrow = (v) => {
		if (v === null || typeof v !== 'object' || Array.isArray(v)) return v;
		const e = new Error(typeof v.message === 'string' ? v.message : '');
		for (const k of Object.keys(v)) defineProperty(e, k, { value: v[k], writable: true, enumerable: k !== 'message' && k !== 'stack', configurable: true });
		return e;
	};
	const install = (name, raw) => {
		const f = take(raw);
		const fn = { [name](...args) {
			const r = parseJSON(f(stringify(args)));
			switch (r[0]) {
				case 0: return r[1];
				case 1: throw new Error(r[1]);
				default: throw toThrow(r[1]);
			}
		} }[name];
		defineProperty(globalThis, name, { value: fn, writable: false, enumerable: false, configurable: true });
	};
	const promised = (v) => v instanceof IntrinsicPromise ? v : undefined;

	defineProperty(globalThis, '__jsbox_internal', {
		value: { define, host, forHost: freeze({ fire, install, promised }) },
		writable: false, enumerable: false, configurable: true,
	});
})();
