// What setTimeout and clearTimeout do, as Node has them (the host keeps the
// queue and runs the callbacks when the run is idle and they are due), and
// what runs a timer's callback.
//
// Loaded into a Box with its first timer (bootstrap.js): this file is the
// body of a function (setupFiles in jsbox.go) of the intrinsics
// bootstrap.js took before any other code ran, under their names there, and
// of the host function, and answers set, clear and fire.
// The host's timer operations (Box.host, timers.op).
const TIMER = 1, SET = 0, CLEAR = 1, REF = 2, UNREF = 3, REFRESH = 4, HAS_REF = 5;
const callbacks = { __proto__: null };
const clear = (id) => {
	if (id in callbacks) {
		delete callbacks[id];
		host(TIMER, CLEAR, id);
	}
};
class Timeout {
	#id;
	constructor(id) { this.#id = id; }
	ref() { host(TIMER, REF, this.#id); return this; }
	unref() { host(TIMER, UNREF, this.#id); return this; }
	hasRef() { return host(TIMER, HAS_REF, this.#id) === 1; }
	refresh() { host(TIMER, REFRESH, this.#id); return this; }
	close() { clear(this.#id); return this; }
	[Symbol.toPrimitive]() { return this.#id; }
}
freeze(Timeout.prototype);
const received = (v) => v === undefined ? 'undefined' : v === null ? 'null' : typeof v === 'object' ?
	'an instance of ' + (v.constructor && v.constructor.name || 'Object') : 'type ' + typeof v + ' (' + String(v) + ')';
const set = (callback, after, args) => {
	if (typeof callback !== 'function') {
		const e = new TypeError('The "callback" argument must be of type function. Received ' + received(callback));
		defineProperty(e, 'code', { __proto__: null, value: 'ERR_INVALID_ARG_TYPE', writable: true, enumerable: true, configurable: true });
		throw e;
	}
	after *= 1;
	if (!(after >= 1 && after <= 2147483647)) after = 1;
	const id = host(TIMER, SET, after);
	if (id === -1) throw new TypeError('too many timers pending');
	const t = new Timeout(id);
	callbacks[id] = { __proto__: null, callback, args, t };
	return t;
};
return {
	__proto__: null,
	set,
	clear: (timer) => {
		if (timer instanceof Timeout) timer = timer[Symbol.toPrimitive]();
		else if (typeof timer === 'string') timer = Number(timer);
		if (typeof timer === 'number') clear(timer);
	},
	fire: (id) => {
		if (!(id in callbacks)) return;
		const c = callbacks[id];
		delete callbacks[id];
		apply(c.callback, c.t, c.args);
	},
};
