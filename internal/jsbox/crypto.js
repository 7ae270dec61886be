// require('crypto') and require('node:crypto'): what functions use of
// Node's crypto (createHash, createHmac, randomUUID, randomBytes,
// timingSafeEqual), over Go's crypto packages. Bytes cross to the host as
// latin1 strings, one character a byte.
//
// Loaded into a Box when its code first requires crypto (bootstrap.js):
// this file is the body of a function (setupFiles in jsbox.go) of the
// intrinsics bootstrap.js took before any other code ran, under their names
// there, of Buffer, setTimeout and the host function, and answers the
// module. What runs when it loads calls only those intrinsics, and no
// method other code could have replaced (no prototype's method, no
// iteration, descriptors without a prototype): what code did before to the
// global object or the prototypes does not change what it makes.
// The host's crypto operations (Box.host, crypto.go).
const hash = (alg, key, data) => {
	const r = host(4, alg, key, data);
	if (typeof r !== 'string') throw new Error('Digest method not supported');
	return r;
};
const random = (n) => {
	const r = host(5, n);
	if (typeof r !== 'string') throw new RangeError('The value of "size" is out of range.');
	return r;
};
const MAX_RANDOM = 1 << 20;
const codeError = (Ctor, code, message) => {
	const e = new Ctor(message);
	e.code = code;
	return e;
};
const received = (v) => {
	if (v === null || v === undefined) return 'Received ' + v;
	if (typeof v === 'function') return 'Received function ' + (v.name || '<anonymous>');
	if (typeof v === 'object') return 'Received an instance of ' + (v.constructor && v.constructor.name || 'Object');
	let s = typeof v === 'string' ? "'" + (v.length > 28 ? v.slice(0, 25) + '...' : v) + "'" : String(v);
	return 'Received type ' + typeof v + ' (' + s + ')';
};
const bytes = (v, enc, what, kinds) => {
	if (typeof v === 'string') return Buffer.from(v, enc);
	if (isView(v)) return new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
	if (v instanceof ArrayBuffer && kinds.includes('ArrayBuffer')) return new Uint8Array(v);
	throw codeError(TypeError, 'ERR_INVALID_ARG_TYPE', 'The "' + what + '" argument must be of type string or an instance of ' + kinds + '. ' + received(v));
};
const latin1 = (u8) => {
	let s = '';
	for (let i = 0; i < u8.length; i += 8192) s += apply(fromCharCode, null, u8.subarray(i, i + 8192));
	return s;
};
const output = (s, enc) => {
	const b = Buffer.from(s, 'latin1');
	if (enc === undefined || enc === 'buffer') return b;
	return b.toString(Buffer.isEncoding(enc) ? enc : 'utf8');
};
const algorithm = (alg) => {
	const a = String(alg).toLowerCase().replace(/^rsa-/, '');
	switch (a) {
		case 'md5': return 'md5';
		case 'sha1': case 'sha-1': return 'sha1';
		case 'sha224': case 'sha-224': return 'sha224';
		case 'sha256': case 'sha-256': return 'sha256';
		case 'sha384': case 'sha-384': return 'sha384';
		case 'sha512': case 'sha-512': return 'sha512';
	}
	return undefined;
};

// Hash and Hmac keep what update gives them and hash it all at digest.
class Hash {
	#alg; #key; #parts = []; #done = false;
	constructor(alg, key, parts) { this.#alg = alg; this.#key = key; if (parts) this.#parts = parts.slice(); }
	update(data, enc) {
		if (this.#done) throw codeError(Error, 'ERR_CRYPTO_HASH_FINALIZED', 'Digest already called');
		const b = bytes(data, enc, 'data', 'Buffer, TypedArray, or DataView');
		if (typeof data === 'string' && enc === 'hex' && data.length % 2 !== 0) {
			throw codeError(TypeError, 'ERR_INVALID_ARG_VALUE', "The argument 'encoding' is invalid for data of length " + data.length + ". Received 'hex'");
		}
		this.#parts.push(latin1(b));
		return this;
	}
	digest(enc) {
		if (this.#done) {
			// Node's Hmac answers empty, its Hash throws.
			if (this.#key !== null) return output('', enc);
			throw codeError(Error, 'ERR_CRYPTO_HASH_FINALIZED', 'Digest already called');
		}
		this.#done = true;
		const data = this.#parts.join('');
		this.#parts = [];
		return output(hash(this.#alg, this.#key, data), enc);
	}
	copy() {
		if (this.#done) throw codeError(Error, 'ERR_CRYPTO_HASH_FINALIZED', 'Digest already called');
		if (this.#key !== null) throw new TypeError('hmac.copy is not a function');
		return new Hash(this.#alg, null, this.#parts);
	}
}
const HashProto = Hash.prototype;
class Hmac extends Hash {}
defineProperty(Hmac.prototype, 'copy', { __proto__: null, value: undefined });
freeze(HashProto);
freeze(Hmac.prototype);

const createHash = function createHash(alg) {
	const a = algorithm(alg);
	if (a === undefined) throw new Error('Digest method not supported');
	return new Hash(a, null);
};
const createHmac = function createHmac(alg, key) {
	const a = algorithm(alg);
	if (a === undefined) throw codeError(TypeError, 'ERR_CRYPTO_INVALID_DIGEST', 'Invalid digest: ' + alg);
	const k = bytes(key, 'utf8', 'key', 'ArrayBuffer, Buffer, TypedArray, DataView, KeyObject, or CryptoKey');
	const h = new Hash(a, latin1(k));
	setPrototypeOf(h, Hmac.prototype);
	return h;
};
const randomBytes = function randomBytes(size, callback) {
	if (typeof size !== 'number') throw codeError(TypeError, 'ERR_INVALID_ARG_TYPE', 'The "size" argument must be of type number. ' + received(size));
	if (!(size >= 0 && size <= 2147483647)) {
		throw codeError(RangeError, 'ERR_OUT_OF_RANGE', 'The value of "size" is out of range. It must be >= 0 && <= 2147483647. Received ' + size);
	}
	if (size > MAX_RANDOM) {
		throw codeError(RangeError, 'ERR_OUT_OF_RANGE', 'The value of "size" is out of range. Functions may ask for at most ' + MAX_RANDOM + ' random bytes at once. Received ' + size);
	}
	if (callback !== undefined && typeof callback !== 'function') {
		throw codeError(TypeError, 'ERR_INVALID_ARG_TYPE', 'The "callback" argument must be of type function. ' + received(callback));
	}
	const b = Buffer.from(random(size - size % 1), 'latin1');
	if (callback === undefined) return b;
	setTimeout(callback, 0, null, b);
};
const randomUUID = function randomUUID() { return host(6); };
const timingSafeEqual = function timingSafeEqual(a, b) {
	const view = (v, name) => {
		if (isView(v)) return new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
		if (v instanceof ArrayBuffer) return new Uint8Array(v);
		throw codeError(TypeError, 'ERR_INVALID_ARG_TYPE', 'The "' + name + '" argument must be an instance of ArrayBuffer, Buffer, TypedArray, or DataView.');
	};
	const x = view(a, 'buf1'), y = view(b, 'buf2');
	if (x.length !== y.length) throw codeError(RangeError, 'ERR_CRYPTO_TIMING_SAFE_EQUAL_LENGTH', 'Input buffers must have the same byte length');
	return host(7, latin1(x), latin1(y)) === 1;
};
const getHashes = () => ['md5', 'sha1', 'sha224', 'sha256', 'sha384', 'sha512'];

return { __proto__: null, module: freeze({ createHash, createHmac, randomBytes, randomUUID, timingSafeEqual, getHashes, Hash, Hmac }) };
