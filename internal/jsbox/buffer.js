// Buffer, btoa and atob as Node has them, for the encodings functions use:
// utf8, base64, base64url, hex, latin1 (binary), ascii and utf16le.
//
// Loaded into a Box when its code first uses one of them (bootstrap.js):
// this file is the body of a function (setupFiles in jsbox.go) of the
// intrinsics bootstrap.js took before any other code ran, under their names
// there, and answers Buffer, btoa and atob. What runs when it loads calls
// only those intrinsics, and no method other code could have replaced (no
// prototype's method, no iteration, descriptors without a prototype): what
// code did before to the global object or the prototypes does not change
// what it makes.
// max and min as Math answers them when only b may be NaN, all this file
// needs: no Math.
const max = (a, b) => a > b ? a : b, min = (a, b) => a < b ? a : b;
const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const B64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
// lookup reads both alphabets: A-Z, a-z, 0-9, then + and - (62), / and _ (63).
const lookup = new Int16Array(128);
for (let c = 0; c < 128; c++) {
	lookup[c] = c >= 0x41 && c <= 0x5a ? c - 0x41 : c >= 0x61 && c <= 0x7a ? c - 0x61 + 26 : c >= 0x30 && c <= 0x39 ? c - 0x30 + 52 :
		c === 0x2b || c === 0x2d ? 62 : c === 0x2f || c === 0x5f ? 63 : -1;
}
const encoding = (e) => {
	const n = e === undefined || e === null ? 'utf8' : String(e).toLowerCase();
	switch (n) {
		case 'utf8': case 'utf-8': return 'utf8';
		case 'base64': case 'base64url': case 'hex': case 'latin1': case 'ascii': return n;
		case 'binary': return 'latin1';
		case 'ucs2': case 'ucs-2': case 'utf16le': case 'utf-16le': return 'utf16le';
	}
	throw new TypeError('Unknown encoding: ' + e);
};
const utf8Encode = (s) => {
	const out = [];
	for (let i = 0; i < s.length; i++) {
		let c = s.charCodeAt(i);
		if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
			const d = s.charCodeAt(i + 1);
			if (d >= 0xdc00 && d <= 0xdfff) {
				c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
				i++;
			}
		}
		if (c >= 0xd800 && c <= 0xdfff) c = 0xfffd; // a lone surrogate
		if (c < 0x80) out.push(c);
		else if (c < 0x800) out.push(0xc0 | (c >> 6), 0x80 | (c & 63));
		else if (c < 0x10000) out.push(0xe0 | (c >> 12), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
		else out.push(0xf0 | (c >> 18), 0x80 | ((c >> 12) & 63), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
	}
	return out;
};
// utf8Decode is the WHATWG decoder: each maximal invalid subpart is one U+FFFD.
const utf8Decode = (b, start, end) => {
	let s = '';
	const cps = [];
	const flush = () => { s += apply(fromCodePoint, undefined, cps); cps.length = 0; };
	let need = 0, cp = 0, lower = 0x80, upper = 0xbf;
	for (let i = start; i < end; i++) {
		const x = b[i];
		if (need === 0) {
			if (x < 0x80) cps.push(x);
			else if (x >= 0xc2 && x <= 0xdf) { need = 1; cp = x & 0x1f; }
			else if (x >= 0xe0 && x <= 0xef) {
				if (x === 0xe0) lower = 0xa0;
				if (x === 0xed) upper = 0x9f;
				need = 2; cp = x & 0xf;
			} else if (x >= 0xf0 && x <= 0xf4) {
				if (x === 0xf0) lower = 0x90;
				if (x === 0xf4) upper = 0x8f;
				need = 3; cp = x & 0x7;
			} else cps.push(0xfffd);
		} else if (x < lower || x > upper) {
			cp = need = 0; lower = 0x80; upper = 0xbf;
			cps.push(0xfffd);
			i--; // the byte starts anew
		} else {
			lower = 0x80; upper = 0xbf;
			cp = (cp << 6) | (x & 0x3f);
			if (--need === 0) cps.push(cp);
		}
		if (cps.length >= 4096) flush();
	}
	if (need !== 0) cps.push(0xfffd);
	flush();
	return s;
};
const base64Encode = (b, start, end, alphabet, pad) => {
	let s = '';
	let i = start;
	for (; i + 2 < end; i += 3) {
		const n = (b[i] << 16) | (b[i + 1] << 8) | b[i + 2];
		s += alphabet[n >> 18] + alphabet[(n >> 12) & 63] + alphabet[(n >> 6) & 63] + alphabet[n & 63];
	}
	if (end - i === 1) {
		const n = b[i] << 16;
		s += alphabet[n >> 18] + alphabet[(n >> 12) & 63] + (pad ? '==' : '');
	} else if (end - i === 2) {
		const n = (b[i] << 16) | (b[i + 1] << 8);
		s += alphabet[n >> 18] + alphabet[(n >> 12) & 63] + alphabet[(n >> 6) & 63] + (pad ? '=' : '');
	}
	return s;
};
// base64Decode is Node's: both alphabets, other characters skipped,
// stopping at the first '='.
const base64Decode = (s) => {
	const out = [];
	let acc = 0, bits = 0;
	for (let i = 0; i < s.length; i++) {
		const c = s.charCodeAt(i);
		if (c === 61) break;
		const v = c < 128 ? lookup[c] : -1;
		if (v < 0) continue;
		acc = (acc << 6) | v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out.push((acc >> bits) & 0xff);
		}
	}
	return out;
};
const hexDecode = (s) => {
	const out = [];
	for (let i = 0; i + 1 < s.length; i += 2) {
		const v = parseInt(s.substr(i, 2), 16);
		if (!/^[0-9a-fA-F]{2}$/.test(s.substr(i, 2))) break;
		out.push(v);
	}
	return out;
};
const bytesOf = (s, enc) => {
	switch (enc) {
		case 'utf8': return utf8Encode(s);
		case 'base64': case 'base64url': return base64Decode(s);
		case 'hex': return hexDecode(s);
		case 'latin1': case 'ascii': {
			const out = new Array(s.length);
			for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i) & 0xff;
			return out;
		}
		case 'utf16le': {
			const out = [];
			for (let i = 0; i < s.length; i++) { const c = s.charCodeAt(i); out.push(c & 0xff, c >> 8); }
			return out;
		}
	}
};

class Buffer extends Uint8Array {
	static from(value, encodingOrOffset, length) {
		if (typeof value === 'string') {
			const b = bytesOf(value, encoding(encodingOrOffset));
			const out = new Buffer(b.length);
			out.set(b);
			return out;
		}
		if (value instanceof ArrayBuffer) {
			const off = encodingOrOffset === undefined ? 0 : Number(encodingOrOffset);
			const len = length === undefined ? value.byteLength - off : Number(length);
			return new Buffer(value, off, len);
		}
		if (isView(value)) {
			const src = new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
			const out = new Buffer(src.length);
			out.set(src);
			return out;
		}
		if (isArray(value)) {
			const out = new Buffer(value.length);
			for (let i = 0; i < value.length; i++) out[i] = Number(value[i]) & 0xff;
			return out;
		}
		if (value && value.type === 'Buffer' && isArray(value.data)) return Buffer.from(value.data);
		throw new TypeError('The first argument must be of type string, Buffer, ArrayBuffer, Array, or Array-like Object');
	}
	static alloc(size, fill, enc) {
		const b = new Buffer(Number(size));
		if (fill !== undefined) {
			if (typeof fill === 'number') b.fill(fill & 0xff);
			else {
				const f = Buffer.from(String(fill), enc);
				if (f.length > 0) for (let i = 0; i < b.length; i++) b[i] = f[i % f.length];
			}
		}
		return b;
	}
	static allocUnsafe(size) { return new Buffer(Number(size)); }
	static isBuffer(b) { return b instanceof Buffer; }
	static isEncoding(e) { try { encoding(e); return typeof e === 'string'; } catch (err) { return false; } }
	static byteLength(s, enc) {
		if (typeof s !== 'string') return s.byteLength;
		return bytesOf(s, encoding(enc)).length;
	}
	static concat(list, total) {
		const len = total === undefined ? list.reduce((n, b) => n + b.length, 0) : Number(total);
		const out = Buffer.alloc(len);
		let off = 0;
		for (const b of list) {
			if (off >= len) break;
			const part = b.length > len - off ? b.subarray(0, len - off) : b;
			out.set(part, off);
			off += part.length;
		}
		return out;
	}
	toString(enc, start, end) {
		const e = encoding(enc);
		const s = start === undefined ? 0 : max(0, Number(start));
		const t = end === undefined ? this.length : min(this.length, Number(end));
		if (t <= s) return '';
		switch (e) {
			case 'utf8': return utf8Decode(this, s, t);
			case 'base64': return base64Encode(this, s, t, B64, true);
			case 'base64url': return base64Encode(this, s, t, B64URL, false);
			case 'hex': {
				let h = '';
				for (let i = s; i < t; i++) h += (this[i] < 16 ? '0' : '') + this[i].toString(16);
				return h;
			}
			case 'latin1': {
				let r = '';
				for (let i = s; i < t; i++) r += fromCharCode(this[i]);
				return r;
			}
			case 'ascii': {
				let r = '';
				for (let i = s; i < t; i++) r += fromCharCode(this[i] & 0x7f);
				return r;
			}
			case 'utf16le': {
				let r = '';
				for (let i = s; i + 1 < t; i += 2) r += fromCharCode(this[i] | (this[i + 1] << 8));
				return r;
			}
		}
	}
	toJSON() { return { type: 'Buffer', data: arrayFrom(this) }; }
	equals(other) {
		if (this.length !== other.length) return false;
		for (let i = 0; i < this.length; i++) if (this[i] !== other[i]) return false;
		return true;
	}
	slice(start, end) { return this.subarray(start, end); }
	write(s, offset, enc) {
		const b = Buffer.from(String(s), enc);
		const off = offset === undefined ? 0 : Number(offset);
		const n = min(b.length, this.length - off);
		this.set(b.subarray(0, n), off);
		return n;
	}
}
const btoa = (s) => {
	s = String(s);
	for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 255) throw new Error('Invalid character');
	return Buffer.from(s, 'latin1').toString('base64');
};
const atob = (s) => Buffer.from(String(s).replace(/[\t\n\f\r ]/g, ''), 'base64').toString('latin1');
return { __proto__: null, Buffer, btoa, atob };
