// require('zod'): a facade of zod that reads zod (zod.js, zodProgram in
// zod.go) into the Box only when code first uses a schema. Functions the
// nango CLI compiles require zod and build the schemas of their definition
// at their module's top level, schemas most runs never use: zod's start-up
// would cost each run a few milliseconds.
//
// - The module and the namespaces z (also default), z.coerce and z.iso are
//   proxies with the own properties of zod's, in its order: __esModule, a
//   data property, and accessors (enumerable, not configurable) for the
//   rest, defined on the proxy's target the first time code asks for the
//   properties (Object.getOwnPropertyNames, as esbuild's __toESM does, a
//   descriptor, in, an assignment...), after which the proxy forwards all
//   to its target. Reading a member does not define them.
// - The factories (zodFactories in zod.go: z.object, z.string, z.enum,
//   z.coerce.number...) answer a lazy schema, a proxy that records the
//   call: its class, the schema it was called on (for a builder), the
//   method, the arguments. The builder methods of its class (zodBuilders:
//   optional, array, min, extend...) answer another. Anything else done
//   to a lazy schema (parse, shape, _zod, instanceof, Object.keys,
//   JSON.stringify...) materialises it: loads zod if not yet, replays the
//   calls once (each with its arguments resolved: a lazy schema, anywhere
//   in the plain objects and arrays of the arguments, becomes its schema,
//   in copies of them; getters are kept, answering schemas too) and keeps
//   the schema, to which the proxy then forwards what is done to it, its
//   methods bound to it.
// - Any other member of the namespaces (z.ZodError, z.ZodObject,
//   z.config, z.toJSONSchema, z.NEVER...) loads zod and is zod's own.
// - Once zod is loaded, the factories and the builders of lazy schemas
//   answer zod's schemas, built at once (their arguments resolved).
//
// A lazy schema is not the schema: code that compares them with === finds
// two objects, and so do zod's functions that keep schemas by identity (a
// registry's get, z.toJSONSchema's cycles) when handed a lazy schema, by
// code or by the function of a z.lazy. Errors zod throws while building a
// schema of arguments it refuses are thrown when the schema is first used.
//
// This file is the body of a function (zodFacade in zod.go) of the
// intrinsics bootstrap.js took before any other code ran, under their
// names there, and of the host function, after a first line zod.go makes:
// moduleNames, namespaceNames, coerceNames and isoNames, which answer the
// real zod's own property names, and tables, which answers the tables of
// zodFactories and zodBuilders (objects without a prototype). It answers
// the module. What runs when it loads and later calls only those
// intrinsics, never a method other code could have replaced (no
// prototype's method, no iteration, descriptors and records without a
// prototype), and hands code none of its own objects but the proxies and
// the functions it answers; the proxies' handlers have no prototype and
// define every trap the facade needs, so that none is looked up on
// Object.prototype.

// zod is the real zod's module, once loaded (host operation 9, hostZod).
let zod;
const noRequire = (id) => { throw new Error("Cannot find module '" + id + "'"); };
const loadZod = () => {
	if (zod === undefined) {
		const fn = host(9);
		if (typeof fn !== 'function') throw new Error(fn);
		const module = { __proto__: null, exports: {} };
		apply(fn, module.exports, [module.exports, noRequire, module]);
		zod = module.exports;
	}
	return zod;
};
// realNamespace is zod's z (0), z.coerce (1) or z.iso (2).
const realNamespace = (ns) => {
	const z = loadZod().z;
	return ns === 0 ? z : ns === 1 ? z.coerce : z.iso;
};

let tablesMade;
const table = () => (tablesMade === undefined ? (tablesMade = tables()) : tablesMade);
// builderClass is the class of what the method k of a schema of class cls
// answers, or undefined when it is no builder.
const builderClass = (cls, k) => {
	const t = table();
	let c = t.builders[k];
	if (c === undefined) {
		const methods = t.classes[cls];
		if (methods === undefined) return undefined;
		c = methods[k];
		if (c === undefined) return undefined;
	}
	return c === '' ? cls : c;
};

// Lazy schemas. recs maps each lazy schema, and the target of its proxy,
// to its record.
const recs = new WeakMap();
const recOf = (o) => apply(weakMapGet, recs, [o]);
const ObjectPrototype = getPrototypeOf({}), ArrayPrototype = getPrototypeOf([]);

const lazy = (parent, ns, method, args, cls) => {
	// parent: the record of the schema a builder was called on, undefined
	// for a factory of the namespace ns. real: the schema, once made.
	const r = { __proto__: null, parent, ns, method, args, cls, real: undefined, busy: false, builders: undefined, bound: undefined };
	const t = {};
	const p = new Proxy(t, lazyTraps);
	apply(weakMapSet, recs, [t, r]);
	apply(weakMapSet, recs, [p, r]);
	return p;
};

// materialise answers the schema of the record r, made (and zod loaded)
// the first time.
const materialise = (r) => {
	let s = r.real;
	if (s !== undefined) return s;
	if (r.busy) throw new TypeError('zod: a schema was used while it was being built');
	r.busy = true;
	try {
		const self = r.parent === undefined ? realNamespace(r.ns) : materialise(r.parent);
		s = apply(self[r.method], self, resolve(r.args, 0, new WeakMap()));
	} finally {
		r.busy = false;
	}
	if (s === null || (typeof s !== 'object' && typeof s !== 'function')) throw new TypeError('zod: ' + r.method + '() did not answer a schema');
	r.real = s;
	r.parent = r.args = undefined;
	return s;
};

// resolve answers v with the lazy schemas in it replaced by their schemas:
// v's schema if v is one, else, for a plain object or array (of the
// intrinsic prototypes, or none) that holds some, a copy of it with its
// properties resolved (getters answer their value resolved), else v;
// containers nested deeper than MAX_DEPTH are left as they are. seen maps
// the containers done, and those being done, to their answers.
const MAX_DEPTH = 64;
const resolve = (v, depth, seen) => {
	if (typeof v !== 'object' || v === null) return v;
	const r = recOf(v);
	if (r !== undefined) return materialise(r);
	if (depth >= MAX_DEPTH) return v;
	const array = isArray(v);
	const proto = getPrototypeOf(v);
	if (array ? proto !== ArrayPrototype : proto !== ObjectPrototype && proto !== null) return v;
	const done = apply(weakMapGet, seen, [v]);
	if (done !== undefined) return done;
	apply(weakMapSet, seen, [v, v]);
	const keys = ownKeys(v);
	const descs = { __proto__: null };
	let changed = false;
	for (let i = 0; i < keys.length; i++) {
		const d = getOwnPropertyDescriptor(v, keys[i]);
		if (d === undefined) continue;
		setPrototypeOf(d, null);
		descs[i] = d;
		if ('value' in d) {
			const x = resolve(d.value, depth + 1, seen);
			if (x !== d.value) {
				d.value = x;
				changed = true;
			}
		} else if (d.get !== undefined) {
			const get = d.get;
			d.get = function () { return resolve(apply(get, v, []), 0, new WeakMap()); };
			changed = true;
		}
	}
	if (!changed) return v;
	const copy = array ? [] : proto === null ? { __proto__: null } : {};
	for (let i = 0; i < keys.length; i++) {
		if (descs[i] !== undefined) reflectDefineProperty(copy, keys[i], descs[i]);
	}
	apply(weakMapSet, seen, [v, copy]);
	return copy;
};

// builder answers the builder method k of the lazy schema of record r,
// whose answer is of class c: before zod is loaded, it answers a lazy
// schema; after, zod's.
const builder = (r, k, c) => {
	let m = r.builders;
	if (m === undefined) m = r.builders = { __proto__: null };
	let f = m[k];
	if (f === undefined) {
		f = m[k] = { [k](...args) {
			if (zod === undefined) return lazy(r, -1, k, args, c);
			const s = materialise(r);
			return apply(s[k], s, resolve(args, 0, new WeakMap()));
		} }[k];
	}
	return f;
};

// bound answers the method v, read from s, the schema of the record r, as
// k, bound to s (one function for each).
const bound = (r, k, v, s) => {
	let m = r.bound;
	if (m === undefined) m = r.bound = { __proto__: null };
	const e = m[k];
	if (e !== undefined && e[0] === v) return e[1];
	const f = (...args) => apply(v, s, args);
	m[k] = [v, f];
	return f;
};

// The target of a lazy schema's proxy stays empty but for what the
// engine's checks of the proxy's answers need (the invariants of Proxy):
// the properties of the schema it says cannot be configured, and, once
// the schema cannot be extended, all of them, its prototype, and that.
const mirror = (t, s, k) => {
	const d = getOwnPropertyDescriptor(s, k);
	if (d === undefined) {
		reflectDeleteProperty(t, k);
		return;
	}
	if (d.configurable === false || !isExtensible(t) || getOwnPropertyDescriptor(t, k) !== undefined) {
		setPrototypeOf(d, null);
		reflectDefineProperty(t, k, d);
	}
};
const sync = (t, s) => {
	if (isExtensible(s)) return;
	const gone = ownKeys(t);
	for (let i = 0; i < gone.length; i++) {
		if (getOwnPropertyDescriptor(s, gone[i]) === undefined) reflectDeleteProperty(t, gone[i]);
	}
	const keys = ownKeys(s);
	for (let i = 0; i < keys.length; i++) {
		const d = getOwnPropertyDescriptor(s, keys[i]);
		setPrototypeOf(d, null);
		reflectDefineProperty(t, keys[i], d);
	}
	if (isExtensible(t)) {
		reflectSetPrototypeOf(t, getPrototypeOf(s));
		preventExtensions(t);
	}
};
// fixed says whether the target has k as a property that can be neither
// configured nor written: the proxy must answer its very value.
const fixed = (t, k) => {
	const d = getOwnPropertyDescriptor(t, k);
	return d !== undefined && d.configurable === false && getOwnPropertyDescriptor(d, 'writable') !== undefined && d.writable === false;
};
const schemaOf = (t) => {
	const s = materialise(recOf(t));
	sync(t, s);
	return s;
};

const lazyTraps = {
	__proto__: null,
	get(t, k, receiver) {
		const r = recOf(t);
		if (typeof k === 'string') {
			const c = builderClass(r.cls, k);
			if (c !== undefined && (r.real === undefined || !fixed(t, k))) return builder(r, k, c);
		}
		const s = materialise(r);
		const v = reflectGet(s, k, s);
		if (typeof v === 'function' && getOwnPropertyDescriptor(v, 'prototype') === undefined && !fixed(t, k)) return bound(r, k, v, s);
		return v;
	},
	set(t, k, v, receiver) {
		const s = schemaOf(t);
		return reflectSet(s, k, v, recOf(receiver) === recOf(t) ? s : receiver);
	},
	has(t, k) {
		return reflectHas(schemaOf(t), k);
	},
	ownKeys(t) {
		return ownKeys(schemaOf(t));
	},
	getOwnPropertyDescriptor(t, k) {
		const s = schemaOf(t);
		mirror(t, s, k);
		const d = getOwnPropertyDescriptor(s, k);
		if (d !== undefined) setPrototypeOf(d, null);
		return d;
	},
	defineProperty(t, k, d) {
		const s = schemaOf(t);
		setPrototypeOf(d, null);
		const ok = reflectDefineProperty(s, k, d);
		mirror(t, s, k);
		return ok;
	},
	deleteProperty(t, k) {
		const s = schemaOf(t);
		const ok = reflectDeleteProperty(s, k);
		mirror(t, s, k);
		return ok;
	},
	getPrototypeOf(t) {
		return getPrototypeOf(schemaOf(t));
	},
	setPrototypeOf(t, p) {
		const s = schemaOf(t);
		const ok = reflectSetPrototypeOf(s, p);
		sync(t, s);
		return ok;
	},
	isExtensible(t) {
		return isExtensible(schemaOf(t));
	},
	preventExtensions(t) {
		const s = schemaOf(t);
		const ok = preventExtensions(s);
		sync(t, s);
		return ok;
	},
};

// The factories, one function each, for z (0), z.coerce (1), z.iso (2).
const factories = [{ __proto__: null }, { __proto__: null }, { __proto__: null }];
const factory = (ns, k) => {
	const m = factories[ns];
	let f = m[k];
	if (f === undefined) {
		const c = table().factories[ns][k];
		if (c === undefined) return undefined;
		f = m[k] = { [k](...args) {
			if (zod === undefined) return lazy(undefined, ns, k, args, c);
			const self = realNamespace(ns);
			return apply(self[k], self, resolve(args, 0, new WeakMap()));
		} }[k];
	}
	return f;
};

// The module (0) and the namespaces z (1), z.coerce (2), z.iso (3).
// member answers their member k, a name of theirs.
const namespaces = [undefined, undefined, undefined, undefined];
const member = (kind, k) => {
	const v = known(kind, k);
	if (v !== undefined) return v;
	return kind === 0 ? loadZod()[k] : realNamespace(kind - 1)[k];
};
// known answers the members the facade makes, undefined for the others.
const known = (kind, k) => {
	if (typeof k !== 'string') return undefined;
	if (kind === 0) {
		if (k === '__esModule') return true;
		if (k === 'z' || k === 'default') return namespace(1);
	}
	if (kind <= 1) {
		if (k === 'coerce') return namespace(2);
		if (k === 'iso') return namespace(3);
		return factory(0, k);
	}
	return factory(kind - 1, k);
};
// define gives the target t of the namespace kind its properties, as zod's.
const define = (kind, t) => {
	const names = kind === 0 ? moduleNames() : kind === 1 ? namespaceNames() : kind === 2 ? coerceNames() : isoNames();
	const d = { __proto__: null, get: undefined, set: undefined, enumerable: true, configurable: false };
	for (let i = 0; i < names.length; i++) {
		const k = names[i];
		if (k === '__esModule') {
			defineProperty(t, k, { __proto__: null, value: true, writable: false, enumerable: false, configurable: false });
			continue;
		}
		d.get = () => member(kind, k);
		defineProperty(t, k, d);
	}
};
const namespace = (kind) => {
	let p = namespaces[kind];
	if (p === undefined) {
		const t = {};
		// Before its properties are defined, the traps define them first,
		// and then, removed, leave all to the target; but get answers the
		// members the facade makes without.
		const traps = { __proto__: null };
		const ready = () => {
			define(kind, t);
			delete traps.get;
			delete traps.set;
			delete traps.has;
			delete traps.ownKeys;
			delete traps.getOwnPropertyDescriptor;
			delete traps.defineProperty;
			delete traps.deleteProperty;
			delete traps.preventExtensions;
		};
		traps.get = (t, k, receiver) => {
			const v = known(kind, k);
			if (v !== undefined) return v;
			ready();
			return reflectGet(t, k, receiver);
		};
		traps.set = (t, k, v, receiver) => { ready(); return reflectSet(t, k, v, receiver); };
		traps.has = (t, k) => { ready(); return reflectHas(t, k); };
		traps.ownKeys = (t) => { ready(); return ownKeys(t); };
		traps.getOwnPropertyDescriptor = (t, k) => {
			ready();
			const d = getOwnPropertyDescriptor(t, k);
			if (d !== undefined) setPrototypeOf(d, null);
			return d;
		};
		traps.defineProperty = (t, k, d) => { ready(); setPrototypeOf(d, null); return reflectDefineProperty(t, k, d); };
		traps.deleteProperty = (t, k) => { ready(); return reflectDeleteProperty(t, k); };
		traps.preventExtensions = (t) => { ready(); return preventExtensions(t); };
		p = namespaces[kind] = new Proxy(t, traps);
	}
	return p;
};

return { __proto__: null, module: namespace(0) };
