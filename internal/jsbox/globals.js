// What the globals bootstrap.js installs do that most runs never need:
// the formatting of console's messages, and the replacing of the accessors
// of Buffer, URL and URLSearchParams by data properties.
//
// Loaded into a Box when its code first calls console or reads or assigns
// one of those (bootstrap.js): this file is the body of a function
// (setupFiles in jsbox.go) of the intrinsics bootstrap.js took before any
// other code ran, under their names there, of the global object and of the
// names and getters of those accessors. What runs when it loads calls only
// those intrinsics, and no method other code could have replaced (no
// prototype's method, no iteration, descriptors without a prototype).

return {
	__proto__: null,
	// format is console's message of its arguments: strings as they are,
	// errors by their stack, JSON for the rest.
	format: (args) => {
		let out = '';
		for (let i = 0; i < args.length; i++) {
			const a = args[i];
			let s;
			if (typeof a === 'string') s = a;
			else if (a instanceof Error) s = a.stack ? String(a.stack) : String(a);
			else if (a === undefined || typeof a === 'function' || typeof a === 'symbol' || typeof a === 'bigint') s = String(a);
			else {
				try { s = stringify(a); } catch (e) { s = String(a); }
			}
			out += i === 0 ? s : ' ' + s;
		}
		return out;
	},
	// replace replaces accessor i (names[i]), if it is still there, with a
	// data property of value v; when self is not the global object, it
	// defines the property on self instead, as assigning through an object
	// that inherits a writable data property does. The global object may
	// be frozen: a read (get) then keeps the accessor, an assignment throws.
	replace: (i, self, v, get) => {
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
	},
};
