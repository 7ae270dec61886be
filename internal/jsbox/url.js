// URL and URLSearchParams as Node 20 has them (the WHATWG URL standard:
// its parser, host parsing with IPv4 and IPv6 addresses, percent-encode
// sets, setters and the live link of searchParams), and the module url
// (require('url') / require('node:url')) with them. Domains with non-ASCII
// characters are mapped to ASCII by an approximation of UTS #46 (NFKC,
// lower case, Punycode), which gives Node's answer for the names in use.
//
// Loaded into a Box when its code first reads URL or URLSearchParams or
// requires url (bootstrap.js): this file is the body of a function
// (setupFiles in jsbox.go) of the intrinsics bootstrap.js took before any
// other code ran, under their names there, and answers URL,
// URLSearchParams and the module. What runs when it loads calls only those
// intrinsics, and no method other code could have replaced (no
// prototype's method, no iteration, descriptors without a prototype): what
// code did before to the global object or the prototypes does not change
// what it makes.
// floor of a number not below 0, all this file needs: no Math.
const floor = (x) => x - x % 1;
const FAILURE = Symbol('failure');

const isDigit = (c) => c >= 0x30 && c <= 0x39;
const isAlpha = (c) => (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);
const isAlnum = (c) => isDigit(c) || isAlpha(c);
const isHex = (c) => isDigit(c) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66);
const codePoints = (s) => arrayFrom(s, (ch) => ch.codePointAt(0));

const SPECIAL = freeze({ __proto__: null, ftp: 21, file: null, http: 80, https: 443, ws: 80, wss: 443 });
const isSpecialScheme = (s) => s in SPECIAL;
const isSpecial = (u) => u.scheme in SPECIAL;

// The percent-encode sets, as predicates on a code point.
const inC0 = (c) => c <= 0x1f || c > 0x7e;
const inFragment = (c) => inC0(c) || c === 0x20 || c === 0x22 || c === 0x3c || c === 0x3e || c === 0x60;
const inQuery = (c) => inC0(c) || c === 0x20 || c === 0x22 || c === 0x23 || c === 0x3c || c === 0x3e;
const inSpecialQuery = (c) => inQuery(c) || c === 0x27;
const inPath = (c) => inQuery(c) || c === 0x3f || c === 0x60 || c === 0x7b || c === 0x7d;
const inUserinfo = (c) => inPath(c) || c === 0x2f || c === 0x3a || c === 0x3b || c === 0x3d || c === 0x40 || (c >= 0x5b && c <= 0x5e) || c === 0x7c;
const inComponent = (c) => inUserinfo(c) || (c >= 0x24 && c <= 0x26) || c === 0x2b || c === 0x2c;
const inForm = (c) => inComponent(c) || c === 0x21 || (c >= 0x27 && c <= 0x29) || c === 0x7e;

const utf8 = (c) => {
	if (c < 0x80) return [c];
	if (c < 0x800) return [0xc0 | (c >> 6), 0x80 | (c & 63)];
	if (c < 0x10000) return [0xe0 | (c >> 12), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63)];
	return [0xf0 | (c >> 18), 0x80 | ((c >> 12) & 63), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63)];
};
const utf8Bytes = (s) => {
	const out = [];
	for (const c of codePoints(s)) out.push(...utf8(c));
	return out;
};
// utf8Decode is UTF-8 decode without BOM or fail's lenient sibling:
// each maximal invalid subpart is one U+FFFD.
const utf8Decode = (b) => {
	let s = '';
	let need = 0, cp = 0, lower = 0x80, upper = 0xbf;
	for (let i = 0; i < b.length; i++) {
		const x = b[i];
		if (need === 0) {
			if (x < 0x80) s += fromCharCode(x);
			else if (x >= 0xc2 && x <= 0xdf) { need = 1; cp = x & 0x1f; }
			else if (x >= 0xe0 && x <= 0xef) {
				if (x === 0xe0) lower = 0xa0;
				if (x === 0xed) upper = 0x9f;
				need = 2; cp = x & 0xf;
			} else if (x >= 0xf0 && x <= 0xf4) {
				if (x === 0xf0) lower = 0x90;
				if (x === 0xf4) upper = 0x8f;
				need = 3; cp = x & 0x7;
			} else s += '\ufffd';
		} else if (x < lower || x > upper) {
			cp = need = 0; lower = 0x80; upper = 0xbf;
			s += '\ufffd';
			i--;
		} else {
			lower = 0x80; upper = 0xbf;
			cp = (cp << 6) | (x & 0x3f);
			if (--need === 0) s += fromCodePoint(cp);
		}
	}
	if (need !== 0) s += '\ufffd';
	return s;
};
const HEX = '0123456789ABCDEF';
const encodeCP = (c, inSet, spaceAsPlus) => {
	if (spaceAsPlus && c === 0x20) return '+';
	if (!inSet(c)) return fromCodePoint(c);
	let s = '';
	for (const b of utf8(c)) s += '%' + HEX[b >> 4] + HEX[b & 15];
	return s;
};
const encodeString = (s, inSet, spaceAsPlus) => {
	let out = '';
	for (const c of codePoints(s)) out += encodeCP(c, inSet, spaceAsPlus);
	return out;
};
const percentDecode = (bytes) => {
	const out = [];
	for (let i = 0; i < bytes.length; i++) {
		const b = bytes[i];
		if (b === 0x25 && i + 2 < bytes.length && isHex(bytes[i + 1]) && isHex(bytes[i + 2])) {
			out.push(parseInt(fromCharCode(bytes[i + 1], bytes[i + 2]), 16));
			i += 2;
		} else out.push(b);
	}
	return out;
};
// toUSV converts as WebIDL converts to a USVString: a Symbol throws,
// a lone surrogate becomes U+FFFD.
const toUSV = (v) => {
	if (typeof v === 'symbol') throw new TypeError('Cannot convert a Symbol value to a string');
	const s = `${v}`;
	return s.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd');
};

// Punycode (RFC 3492), for the labels of internationalised domains.
const punycode = (() => {
	const base = 36, tMin = 1, tMax = 26, skew = 38, damp = 700, initialBias = 72, initialN = 128;
	const adapt = (delta, numPoints, first) => {
		let k = 0;
		delta = first ? floor(delta / damp) : delta >> 1;
		delta += floor(delta / numPoints);
		for (; delta > ((base - tMin) * tMax) >> 1; k += base) delta = floor(delta / (base - tMin));
		return floor(k + ((base - tMin + 1) * delta) / (delta + skew));
	};
	const digit = (d) => fromCharCode(d + 22 + 75 * (d < 26));
	const encode = (input) => {
		const cps = codePoints(input);
		let n = initialN, delta = 0, bias = initialBias, out = '';
		for (const c of cps) if (c < 0x80) out += fromCharCode(c);
		const basic = out.length;
		let h = basic;
		if (basic) out += '-';
		while (h < cps.length) {
			let m = Infinity;
			for (const c of cps) if (c >= n && c < m) m = c;
			delta += (m - n) * (h + 1);
			n = m;
			for (const c of cps) {
				if (c < n) delta++;
				if (c === n) {
					let q = delta;
					for (let k = base; ; k += base) {
						const t = k <= bias ? tMin : k >= bias + tMax ? tMax : k - bias;
						if (q < t) break;
						out += digit(t + ((q - t) % (base - t)));
						q = floor((q - t) / (base - t));
					}
					out += digit(q);
					bias = adapt(delta, h + 1, h === basic);
					delta = 0;
					h++;
				}
			}
			delta++;
			n++;
		}
		return out;
	};
	// decode answers the code points, or FAILURE.
	const decode = (input) => {
		const out = [];
		let basic = input.lastIndexOf('-');
		if (basic < 0) basic = 0;
		for (let j = 0; j < basic; j++) {
			if (input.charCodeAt(j) >= 0x80) return FAILURE;
			out.push(input.charCodeAt(j));
		}
		let n = initialN, bias = initialBias, i = 0;
		for (let index = basic > 0 ? basic + 1 : 0; index < input.length;) {
			const oldi = i;
			for (let w = 1, k = base; ; k += base) {
				if (index >= input.length) return FAILURE;
				const c = input.charCodeAt(index++);
				const d = c - 48 < 10 ? c - 22 : c - 65 < 26 ? c - 65 : c - 97 < 26 ? c - 97 : base;
				if (d >= base) return FAILURE;
				i += d * w;
				const t = k <= bias ? tMin : k >= bias + tMax ? tMax : k - bias;
				if (d < t) break;
				w *= base - t;
				if (i > 0x7fffffff || w > 0x7fffffff) return FAILURE;
			}
			const len = out.length + 1;
			bias = adapt(i - oldi, len, oldi === 0);
			n += floor(i / len);
			i %= len;
			if (n > 0x10ffff) return FAILURE;
			out.splice(i++, 0, n);
		}
		return out;
	};
	return { encode, decode };
})();

const isForbiddenHost = (c) => c === 0 || c === 0x09 || c === 0x0a || c === 0x0d || c === 0x20 || c === 0x23 || c === 0x2f ||
	c === 0x3a || c === 0x3c || c === 0x3e || c === 0x3f || c === 0x40 || c === 0x5b || c === 0x5c || c === 0x5d || c === 0x5e || c === 0x7c;
const isForbiddenDomain = (c) => isForbiddenHost(c) || c <= 0x1f || c === 0x25 || c === 0x7f;

// domainToASCII is UTS #46 ToASCII as the URL standard calls it (not
// strict), approximated: code points mapped to nothing are dropped,
// the rest NFKC-normalised and lower-cased; labels with non-ASCII
// characters are Punycode-encoded, labels in Punycode must decode.
const IGNORED = /[\u00ad\u034f\u180b-\u180d\u200b\u2060\ufe00-\ufe0f\ufeff]/g;
const domainToASCII = (domain) => {
	let d = domain;
	if (/[^\x00-\x7f]/.test(d)) d = d.replace(IGNORED, '').normalize('NFKC').toLowerCase().normalize('NFC').replace(/[\u3002\uff0e\uff61]/g, '.');
	else d = d.toLowerCase();
	const labels = d.split('.');
	for (let i = 0; i < labels.length; i++) {
		const l = labels[i];
		if (l.startsWith('xn--')) {
			// A label in Punycode must decode to one that maps to itself.
			if (/[^\x00-\x7f]/.test(l)) return FAILURE;
			const cps = punycode.decode(l.slice(4));
			if (cps === FAILURE || cps.length === 0 || cps.every((c) => c < 0x80) || cps.some((c) => c <= 0x20 || (c >= 0x7f && c <= 0xa0))) return FAILURE;
			const u = fromCodePoint(...cps);
			if (u.replace(IGNORED, '').normalize('NFKC').toLowerCase().normalize('NFC') !== u) return FAILURE;
		} else if (/[^\x00-\x7f]/.test(l)) labels[i] = 'xn--' + punycode.encode(l);
	}
	const out = labels.join('.');
	if (out === '') return FAILURE;
	for (const c of codePoints(out)) if (isForbiddenDomain(c)) return FAILURE;
	return out;
};

const parseIPv4Number = (s) => {
	if (s === '') return FAILURE;
	let radix = 10;
	if (s.length >= 2 && (s.startsWith('0x') || s.startsWith('0X'))) { s = s.slice(2); radix = 16; }
	else if (s.length >= 2 && s[0] === '0') { s = s.slice(1); radix = 8; }
	if (s === '') return 0;
	const valid = radix === 10 ? /^[0-9]+$/ : radix === 16 ? /^[0-9a-fA-F]+$/ : /^[0-7]+$/;
	if (!valid.test(s)) return FAILURE;
	return parseInt(s, radix);
};
const endsInANumber = (s) => {
	const parts = s.split('.');
	if (parts[parts.length - 1] === '') {
		if (parts.length === 1) return false;
		parts.pop();
	}
	const last = parts[parts.length - 1];
	if (last !== '' && /^[0-9]+$/.test(last)) return true;
	return parseIPv4Number(last) !== FAILURE;
};
const parseIPv4 = (s) => {
	const parts = s.split('.');
	if (parts[parts.length - 1] === '' && parts.length > 1) parts.pop();
	if (parts.length > 4) return FAILURE;
	const numbers = [];
	for (const p of parts) {
		const n = parseIPv4Number(p);
		if (n === FAILURE) return FAILURE;
		numbers.push(n);
	}
	for (let i = 0; i < numbers.length - 1; i++) if (numbers[i] > 255) return FAILURE;
	if (numbers[numbers.length - 1] >= 256 ** (5 - numbers.length)) return FAILURE;
	let ipv4 = numbers[numbers.length - 1];
	for (let i = 0; i < numbers.length - 1; i++) ipv4 += numbers[i] * 256 ** (3 - i);
	return ipv4;
};
const serializeIPv4 = (n) => {
	const out = [];
	for (let i = 0; i < 4; i++) {
		out.unshift(String(n % 256));
		n = floor(n / 256);
	}
	return out.join('.');
};
const parseIPv6 = (input) => {
	const address = [0, 0, 0, 0, 0, 0, 0, 0];
	let pieceIndex = 0, compress = null, p = 0;
	const cps = codePoints(input);
	if (cps[p] === 0x3a) {
		if (cps[p + 1] !== 0x3a) return FAILURE;
		p += 2;
		compress = ++pieceIndex;
	}
	while (cps[p] !== undefined) {
		if (pieceIndex === 8) return FAILURE;
		if (cps[p] === 0x3a) {
			if (compress !== null) return FAILURE;
			p++;
			compress = ++pieceIndex;
			continue;
		}
		let value = 0, length = 0;
		while (length < 4 && cps[p] !== undefined && isHex(cps[p])) {
			value = value * 16 + parseInt(fromCharCode(cps[p]), 16);
			p++;
			length++;
		}
		if (cps[p] === 0x2e) {
			if (length === 0) return FAILURE;
			p -= length;
			if (pieceIndex > 6) return FAILURE;
			let numbersSeen = 0;
			while (cps[p] !== undefined) {
				let piece = null;
				if (numbersSeen > 0) {
					if (cps[p] === 0x2e && numbersSeen < 4) p++;
					else return FAILURE;
				}
				if (cps[p] === undefined || !isDigit(cps[p])) return FAILURE;
				while (cps[p] !== undefined && isDigit(cps[p])) {
					const n = cps[p] - 0x30;
					if (piece === null) piece = n;
					else if (piece === 0) return FAILURE;
					else piece = piece * 10 + n;
					if (piece > 255) return FAILURE;
					p++;
				}
				address[pieceIndex] = address[pieceIndex] * 0x100 + piece;
				numbersSeen++;
				if (numbersSeen === 2 || numbersSeen === 4) pieceIndex++;
			}
			if (numbersSeen !== 4) return FAILURE;
			break;
		} else if (cps[p] === 0x3a) {
			p++;
			if (cps[p] === undefined) return FAILURE;
		} else if (cps[p] !== undefined) return FAILURE;
		address[pieceIndex++] = value;
	}
	if (compress !== null) {
		let swaps = pieceIndex - compress;
		pieceIndex = 7;
		while (pieceIndex !== 0 && swaps > 0) {
			const t = address[compress + swaps - 1];
			address[compress + swaps - 1] = address[pieceIndex];
			address[pieceIndex] = t;
			pieceIndex--;
			swaps--;
		}
	} else if (pieceIndex !== 8) return FAILURE;
	return address;
};
const serializeIPv6 = (a) => {
	let best = null, bestLen = 1;
	for (let i = 0; i < 8;) {
		if (a[i] !== 0) { i++; continue; }
		let j = i;
		while (j < 8 && a[j] === 0) j++;
		if (j - i > bestLen) { best = i; bestLen = j - i; }
		i = j;
	}
	let out = '';
	for (let i = 0; i < 8; i++) {
		if (i === best) {
			out += i === 0 ? '::' : ':';
			i += bestLen - 1;
			continue;
		}
		out += a[i].toString(16);
		if (i !== 7) out += ':';
	}
	return out;
};
// parseHost answers the host serialized: a domain, an IPv4 address,
// [an IPv6 address], an opaque host, or the empty host.
const parseHost = (input, isOpaque) => {
	if (input[0] === '[') {
		if (input[input.length - 1] !== ']') return FAILURE;
		const a = parseIPv6(input.slice(1, -1));
		return a === FAILURE ? FAILURE : '[' + serializeIPv6(a) + ']';
	}
	if (isOpaque) {
		for (const c of codePoints(input)) if (isForbiddenHost(c)) return FAILURE;
		return encodeString(input, inC0);
	}
	const ascii = domainToASCII(utf8Decode(percentDecode(utf8Bytes(input))));
	if (ascii === FAILURE) return FAILURE;
	if (endsInANumber(ascii)) {
		const v4 = parseIPv4(ascii);
		return v4 === FAILURE ? FAILURE : serializeIPv4(v4);
	}
	return ascii;
};

const isWindowsDriveLetter = (s) => s.length === 2 && isAlpha(s.charCodeAt(0)) && (s[1] === ':' || s[1] === '|');
const isNormalizedWindowsDriveLetter = (s) => typeof s === 'string' && s.length === 2 && isAlpha(s.charCodeAt(0)) && s[1] === ':';
const startsWithWindowsDriveLetter = (cps, p) => cps.length - p >= 2 && isAlpha(cps[p]) && (cps[p + 1] === 0x3a || cps[p + 1] === 0x7c) &&
	(cps.length - p === 2 || [0x2f, 0x5c, 0x3f, 0x23].includes(cps[p + 2]));
const isSingleDot = (s) => s === '.' || s.toLowerCase() === '%2e';
const isDoubleDot = (s) => ['..', '.%2e', '%2e.', '%2e%2e'].includes(s.toLowerCase());
const hasOpaquePath = (u) => typeof u.path === 'string';
const shortenPath = (u) => {
	if (u.scheme === 'file' && u.path.length === 1 && isNormalizedWindowsDriveLetter(u.path[0])) return;
	u.path.pop();
};
const includesCredentials = (u) => u.username !== '' || u.password !== '';
const newRecord = () => ({ scheme: '', username: '', password: '', host: null, port: null, path: [], query: null, fragment: null });

const S = {
	SCHEME_START: 1, SCHEME: 2, NO_SCHEME: 3, SPECIAL_RELATIVE_OR_AUTHORITY: 4, PATH_OR_AUTHORITY: 5, RELATIVE: 6,
	RELATIVE_SLASH: 7, SPECIAL_AUTHORITY_SLASHES: 8, SPECIAL_AUTHORITY_IGNORE_SLASHES: 9, AUTHORITY: 10, HOST: 11,
	HOSTNAME: 12, PORT: 13, FILE: 14, FILE_SLASH: 15, FILE_HOST: 16, PATH_START: 17, PATH: 18, OPAQUE_PATH: 19,
	QUERY: 20, FRAGMENT: 21,
};

// parse is the basic URL parser. With a state override it changes url
// in place (a setter) and answers nothing worth reading.
const parse = (input, base, url, override) => {
	if (!url) {
		url = newRecord();
		input = input.replace(/^[\u0000-\u0020]+|[\u0000-\u0020]+$/g, '');
	}
	input = input.replace(/[\t\n\r]/g, '');
	const cps = codePoints(input);
	let state = override || S.SCHEME_START;
	let buffer = '';
	let atSignSeen = false, insideBrackets = false, passwordTokenSeen = false;
	const isEnd = (c) => c === undefined || c === 0x2f || c === 0x3f || c === 0x23 || (isSpecial(url) && c === 0x5c);
	for (let p = 0; ; p++) {
		const c = cps[p];
		const ch = c === undefined ? '' : fromCodePoint(c);
		switch (state) {
			case S.SCHEME_START:
				if (c !== undefined && isAlpha(c)) {
					buffer += ch.toLowerCase();
					state = S.SCHEME;
				} else if (!override) {
					state = S.NO_SCHEME;
					p--;
				} else return FAILURE;
				break;
			case S.SCHEME:
				if (c !== undefined && (isAlnum(c) || c === 0x2b || c === 0x2d || c === 0x2e)) buffer += ch.toLowerCase();
				else if (c === 0x3a) {
					if (override) {
						if (isSpecial(url) !== isSpecialScheme(buffer)) return FAILURE;
						if ((includesCredentials(url) || url.port !== null) && buffer === 'file') return FAILURE;
						if (url.scheme === 'file' && url.host === '') return FAILURE;
					}
					url.scheme = buffer;
					if (override) {
						if (url.port === SPECIAL[url.scheme]) url.port = null;
						return url;
					}
					buffer = '';
					if (url.scheme === 'file') state = S.FILE;
					else if (isSpecial(url) && base && base.scheme === url.scheme) state = S.SPECIAL_RELATIVE_OR_AUTHORITY;
					else if (isSpecial(url)) state = S.SPECIAL_AUTHORITY_SLASHES;
					else if (cps[p + 1] === 0x2f) {
						state = S.PATH_OR_AUTHORITY;
						p++;
					} else {
						url.path = '';
						state = S.OPAQUE_PATH;
					}
				} else if (!override) {
					buffer = '';
					state = S.NO_SCHEME;
					p = -1;
				} else return FAILURE;
				break;
			case S.NO_SCHEME:
				if (!base || (hasOpaquePath(base) && c !== 0x23)) return FAILURE;
				if (hasOpaquePath(base) && c === 0x23) {
					url.scheme = base.scheme;
					url.path = base.path;
					url.query = base.query;
					url.fragment = '';
					state = S.FRAGMENT;
				} else if (base.scheme !== 'file') {
					state = S.RELATIVE;
					p--;
				} else {
					state = S.FILE;
					p--;
				}
				break;
			case S.SPECIAL_RELATIVE_OR_AUTHORITY:
				if (c === 0x2f && cps[p + 1] === 0x2f) {
					state = S.SPECIAL_AUTHORITY_IGNORE_SLASHES;
					p++;
				} else {
					state = S.RELATIVE;
					p--;
				}
				break;
			case S.PATH_OR_AUTHORITY:
				if (c === 0x2f) state = S.AUTHORITY;
				else {
					state = S.PATH;
					p--;
				}
				break;
			case S.RELATIVE:
				url.scheme = base.scheme;
				if (c === 0x2f || (isSpecial(url) && c === 0x5c)) state = S.RELATIVE_SLASH;
				else {
					url.username = base.username;
					url.password = base.password;
					url.host = base.host;
					url.port = base.port;
					url.path = base.path.slice();
					url.query = base.query;
					if (c === 0x3f) {
						url.query = '';
						state = S.QUERY;
					} else if (c === 0x23) {
						url.fragment = '';
						state = S.FRAGMENT;
					} else if (c !== undefined) {
						url.query = null;
						shortenPath(url);
						state = S.PATH;
						p--;
					}
				}
				break;
			case S.RELATIVE_SLASH:
				if (isSpecial(url) && (c === 0x2f || c === 0x5c)) state = S.SPECIAL_AUTHORITY_IGNORE_SLASHES;
				else if (c === 0x2f) state = S.AUTHORITY;
				else {
					url.username = base.username;
					url.password = base.password;
					url.host = base.host;
					url.port = base.port;
					state = S.PATH;
					p--;
				}
				break;
			case S.SPECIAL_AUTHORITY_SLASHES:
				state = S.SPECIAL_AUTHORITY_IGNORE_SLASHES;
				if (c === 0x2f && cps[p + 1] === 0x2f) p++;
				else p--;
				break;
			case S.SPECIAL_AUTHORITY_IGNORE_SLASHES:
				if (c !== 0x2f && c !== 0x5c) {
					state = S.AUTHORITY;
					p--;
				}
				break;
			case S.AUTHORITY:
				if (c === 0x40) {
					if (atSignSeen) buffer = '%40' + buffer;
					atSignSeen = true;
					for (const bc of codePoints(buffer)) {
						if (bc === 0x3a && !passwordTokenSeen) {
							passwordTokenSeen = true;
							continue;
						}
						if (passwordTokenSeen) url.password += encodeCP(bc, inUserinfo);
						else url.username += encodeCP(bc, inUserinfo);
					}
					buffer = '';
				} else if (isEnd(c)) {
					if (atSignSeen && buffer === '') return FAILURE;
					p -= codePoints(buffer).length + 1;
					buffer = '';
					state = S.HOST;
				} else buffer += ch;
				break;
			case S.HOST:
			case S.HOSTNAME:
				if (override && url.scheme === 'file') {
					p--;
					state = S.FILE_HOST;
				} else if (c === 0x3a && !insideBrackets) {
					if (buffer === '') return FAILURE;
					if (override === S.HOSTNAME) return FAILURE;
					const host = parseHost(buffer, !isSpecial(url));
					if (host === FAILURE) return FAILURE;
					url.host = host;
					buffer = '';
					state = S.PORT;
				} else if (isEnd(c)) {
					p--;
					if (isSpecial(url) && buffer === '') return FAILURE;
					if (override && buffer === '' && (includesCredentials(url) || url.port !== null)) return FAILURE;
					const host = parseHost(buffer, !isSpecial(url));
					if (host === FAILURE) return FAILURE;
					url.host = host;
					buffer = '';
					state = S.PATH_START;
					if (override) return url;
				} else {
					if (c === 0x5b) insideBrackets = true;
					if (c === 0x5d) insideBrackets = false;
					buffer += ch;
				}
				break;
			case S.PORT:
				if (c !== undefined && isDigit(c)) buffer += ch;
				else if (isEnd(c) || override) {
					if (buffer !== '') {
						const port = parseInt(buffer, 10);
						if (port > 65535) return FAILURE;
						url.port = SPECIAL[url.scheme] === port ? null : port;
						buffer = '';
						if (override) return url;
					}
					if (override) return FAILURE;
					state = S.PATH_START;
					p--;
				} else return FAILURE;
				break;
			case S.FILE:
				url.scheme = 'file';
				url.host = '';
				if (c === 0x2f || c === 0x5c) state = S.FILE_SLASH;
				else if (base && base.scheme === 'file') {
					url.host = base.host;
					url.path = base.path.slice();
					url.query = base.query;
					if (c === 0x3f) {
						url.query = '';
						state = S.QUERY;
					} else if (c === 0x23) {
						url.fragment = '';
						state = S.FRAGMENT;
					} else if (c !== undefined) {
						url.query = null;
						if (!startsWithWindowsDriveLetter(cps, p)) shortenPath(url);
						else url.path = [];
						state = S.PATH;
						p--;
					}
				} else {
					state = S.PATH;
					p--;
				}
				break;
			case S.FILE_SLASH:
				if (c === 0x2f || c === 0x5c) state = S.FILE_HOST;
				else {
					if (base && base.scheme === 'file') {
						url.host = base.host;
						if (!startsWithWindowsDriveLetter(cps, p) && isNormalizedWindowsDriveLetter(base.path[0])) url.path.push(base.path[0]);
					}
					state = S.PATH;
					p--;
				}
				break;
			case S.FILE_HOST:
				if (c === undefined || c === 0x2f || c === 0x5c || c === 0x3f || c === 0x23) {
					p--;
					if (!override && isWindowsDriveLetter(buffer)) state = S.PATH;
					else if (buffer === '') {
						url.host = '';
						if (override) return url;
						state = S.PATH_START;
					} else {
						let host = parseHost(buffer, !isSpecial(url));
						if (host === FAILURE) return FAILURE;
						if (host === 'localhost') host = '';
						url.host = host;
						if (override) return url;
						buffer = '';
						state = S.PATH_START;
					}
				} else buffer += ch;
				break;
			case S.PATH_START:
				if (isSpecial(url)) {
					state = S.PATH;
					if (c !== 0x2f && c !== 0x5c) p--;
				} else if (!override && c === 0x3f) {
					url.query = '';
					state = S.QUERY;
				} else if (!override && c === 0x23) {
					url.fragment = '';
					state = S.FRAGMENT;
				} else if (c !== undefined) {
					state = S.PATH;
					if (c !== 0x2f) p--;
				} else if (override && url.host === null) url.path.push('');
				break;
			case S.PATH: {
				const slash = c === 0x2f || (isSpecial(url) && c === 0x5c);
				if (c === undefined || slash || (!override && (c === 0x3f || c === 0x23))) {
					if (isDoubleDot(buffer)) {
						shortenPath(url);
						if (!slash) url.path.push('');
					} else if (isSingleDot(buffer) && !slash) url.path.push('');
					else if (!isSingleDot(buffer)) {
						if (url.scheme === 'file' && url.path.length === 0 && isWindowsDriveLetter(buffer)) buffer = buffer[0] + ':';
						url.path.push(buffer);
					}
					buffer = '';
					if (c === 0x3f) {
						url.query = '';
						state = S.QUERY;
					}
					if (c === 0x23) {
						url.fragment = '';
						state = S.FRAGMENT;
					}
				} else buffer += encodeCP(c, inPath);
				break;
			}
			case S.OPAQUE_PATH:
				if (c === 0x3f) {
					url.query = '';
					state = S.QUERY;
				} else if (c === 0x23) {
					url.fragment = '';
					state = S.FRAGMENT;
				} else if (c !== undefined) url.path += encodeCP(c, inC0);
				break;
			case S.QUERY:
				if (c === undefined || (!override && c === 0x23)) {
					url.query += encodeString(buffer, isSpecial(url) ? inSpecialQuery : inQuery);
					buffer = '';
					if (c === 0x23) {
						url.fragment = '';
						state = S.FRAGMENT;
					}
				} else buffer += ch;
				break;
			case S.FRAGMENT:
				if (c !== undefined) url.fragment += encodeCP(c, inFragment);
				break;
		}
		if (p >= cps.length) break;
	}
	return url;
};

const serializePath = (u) => hasOpaquePath(u) ? u.path : u.path.map((s) => '/' + s).join('');
const serialize = (u, excludeFragment) => {
	let out = u.scheme + ':';
	if (u.host !== null) {
		out += '//';
		if (includesCredentials(u)) {
			out += u.username;
			if (u.password !== '') out += ':' + u.password;
			out += '@';
		}
		out += u.host;
		if (u.port !== null) out += ':' + u.port;
	} else if (!hasOpaquePath(u) && u.path.length > 1 && u.path[0] === '') out += '/.';
	out += serializePath(u);
	if (u.query !== null) out += '?' + u.query;
	if (!excludeFragment && u.fragment !== null) out += '#' + u.fragment;
	return out;
};
const stripTrailingSpaces = (u) => {
	if (!hasOpaquePath(u) || u.fragment !== null || u.query !== null) return;
	u.path = u.path.replace(/ +$/, '');
};

// application/x-www-form-urlencoded
const parseForm = (s) => {
	const out = [];
	for (const seq of s.split('&')) {
		if (seq === '') continue;
		const i = seq.indexOf('=');
		const name = i < 0 ? seq : seq.slice(0, i);
		const value = i < 0 ? '' : seq.slice(i + 1);
		const decode = (x) => utf8Decode(percentDecode(utf8Bytes(x.replace(/\+/g, ' '))));
		out.push([decode(name), decode(value)]);
	}
	return out;
};
const serializeForm = (list) => list.map(([n, v]) => encodeString(n, inForm, true) + '=' + encodeString(v, inForm, true)).join('&');

const nodeError = (Ctor, code, message, fields) => {
	const e = new Ctor(message);
	e.code = code;
	if (fields) {
		e.input = fields.input;
		if (fields.base !== undefined) e.base = fields.base;
	}
	return e;
};
const invalidURL = (input, base) => nodeError(TypeError, 'ERR_INVALID_URL', 'Invalid URL', base === undefined ? { input } : { input, base });
const received = (v) => {
	if (v === null || v === undefined) return 'Received ' + v;
	if (typeof v === 'function') return 'Received function ' + (v.name || '<anonymous>');
	if (typeof v === 'object') return 'Received an instance of ' + (v.constructor && v.constructor.name || 'Object');
	const s = typeof v === 'string' ? "'" + (v.length > 28 ? v.slice(0, 25) + '...' : v) + "'" : String(v);
	return 'Received type ' + typeof v + ' (' + s + ')';
};

let paramsOf; // (URLSearchParams) => its list, url: the link URL keeps
let newParams; // (URL, query) => the URLSearchParams of a URL
let recordOf; // (URL) => its record
let replaceList; // (URLSearchParams, list) => void, after a URL setter

class URLSearchParams {
	#list = [];
	#url = null;
	constructor(init = undefined) {
		if (init === undefined || init === null) return;
		if (typeof init === 'object' || typeof init === 'function') {
			if (typeof init[Symbol.iterator] === 'function') {
				for (const pair of init) {
					if ((typeof pair !== 'object' && typeof pair !== 'function') || pair === null || typeof pair[Symbol.iterator] !== 'function') {
						throw nodeError(TypeError, 'ERR_INVALID_TUPLE', 'Each query pair must be an iterable [name, value] tuple');
					}
					const kv = [...pair];
					if (kv.length !== 2) throw nodeError(TypeError, 'ERR_INVALID_TUPLE', 'Each query pair must be an iterable [name, value] tuple');
					this.#list.push([toUSV(kv[0]), toUSV(kv[1])]);
				}
			} else {
				for (const key of ownKeys(init)) {
					if (!apply(propertyIsEnumerable, init, [key])) continue;
					this.#list.push([toUSV(key), toUSV(init[key])]);
				}
			}
			return;
		}
		let s = toUSV(init);
		if (s[0] === '?') s = s.slice(1);
		this.#list = parseForm(s);
	}
	#update() {
		if (this.#url === null) return;
		const u = recordOf(this.#url);
		const q = serializeForm(this.#list);
		u.query = q === '' ? null : q;
		if (u.query === null) stripTrailingSpaces(u);
	}
	get size() { return this.#list.length; }
	append(name, value) {
		if (arguments.length < 2) throw nodeError(TypeError, 'ERR_MISSING_ARGS', 'The "name" and "value" arguments must be specified');
		this.#list.push([toUSV(name), toUSV(value)]);
		this.#update();
	}
	delete(name, value = undefined) {
		if (arguments.length < 1) throw nodeError(TypeError, 'ERR_MISSING_ARGS', 'The "name" argument must be specified');
		const n = toUSV(name);
		const v = value === undefined ? undefined : toUSV(value);
		this.#list = this.#list.filter(([k, x]) => !(k === n && (v === undefined || x === v)));
		this.#update();
	}
	get(name) {
		if (arguments.length < 1) throw nodeError(TypeError, 'ERR_MISSING_ARGS', 'The "name" argument must be specified');
		const n = toUSV(name);
		const e = this.#list.find(([k]) => k === n);
		return e === undefined ? null : e[1];
	}
	getAll(name) {
		if (arguments.length < 1) throw nodeError(TypeError, 'ERR_MISSING_ARGS', 'The "name" argument must be specified');
		const n = toUSV(name);
		return this.#list.filter(([k]) => k === n).map(([, v]) => v);
	}
	has(name, value = undefined) {
		if (arguments.length < 1) throw nodeError(TypeError, 'ERR_MISSING_ARGS', 'The "name" argument must be specified');
		const n = toUSV(name);
		const v = value === undefined ? undefined : toUSV(value);
		return this.#list.some(([k, x]) => k === n && (v === undefined || x === v));
	}
	set(name, value) {
		if (arguments.length < 2) throw nodeError(TypeError, 'ERR_MISSING_ARGS', 'The "name" and "value" arguments must be specified');
		const n = toUSV(name), v = toUSV(value);
		const i = this.#list.findIndex(([k]) => k === n);
		if (i < 0) this.#list.push([n, v]);
		else {
			this.#list[i] = [n, v];
			this.#list = this.#list.filter(([k], j) => j <= i || k !== n);
		}
		this.#update();
	}
	sort() {
		// A stable sort by the names' UTF-16 code units.
		const keyed = this.#list.map((e, i) => [e, i]);
		keyed.sort(([a, i], [b, j]) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : i - j));
		this.#list = keyed.map(([e]) => e);
		this.#update();
	}
	toString() { return serializeForm(this.#list); }
	forEach(callback, thisArg = undefined) {
		if (typeof callback !== 'function') {
			throw nodeError(TypeError, 'ERR_INVALID_ARG_TYPE', 'The "callback" argument must be of type function. ' + received(callback));
		}
		for (let i = 0; i < this.#list.length; i++) {
			const [k, v] = this.#list[i];
			callback.call(thisArg, v, k, this);
		}
	}
	entries() { return new ParamsIterator(this.#list, 'entries', this); }
	keys() { return new ParamsIterator(this.#list, 'keys', this); }
	values() { return new ParamsIterator(this.#list, 'values', this); }
	static {
		paramsOf = (p) => p.#list;
		newParams = (url, query) => {
			const p = new URLSearchParams(query === null ? '' : query);
			p.#url = url;
			return p;
		};
		replaceList = (p, list) => { p.#list = list; };
	}
}
defineProperty(URLSearchParams.prototype, Symbol.iterator, { __proto__: null, value: URLSearchParams.prototype.entries, writable: true, configurable: true });
defineProperty(URLSearchParams.prototype, Symbol.toStringTag, { __proto__: null, value: 'URLSearchParams', configurable: true });

// ParamsIterator walks the live list, as the standard's iterators do.
class ParamsIterator {
	#params; #kind; #index = 0;
	constructor(list, kind, params) { this.#params = params; this.#kind = kind; }
	next() {
		const list = paramsOf(this.#params);
		if (this.#index >= list.length) return { value: undefined, done: true };
		const [k, v] = list[this.#index++];
		return { value: this.#kind === 'keys' ? k : this.#kind === 'values' ? v : [k, v], done: false };
	}
	[Symbol.iterator]() { return this; }
}
defineProperty(ParamsIterator.prototype, Symbol.toStringTag, { __proto__: null, value: 'URLSearchParams Iterator', configurable: true });

class URL {
	#u;
	#params;
	constructor(url, base = undefined) {
		if (arguments.length === 0) throw nodeError(TypeError, 'ERR_MISSING_ARGS', 'The "url" argument must be specified');
		const input = toUSV(url);
		let b = null;
		if (base !== undefined) {
			const baseInput = toUSV(base);
			b = parse(baseInput, null);
			if (b === FAILURE) throw invalidURL(input, baseInput);
		}
		const u = parse(input, b);
		if (u === FAILURE) throw invalidURL(input, base === undefined ? undefined : toUSV(base));
		this.#u = u;
		this.#params = newParams(this, u.query);
	}
	static canParse(url, base = undefined) {
		try {
			new URL(url, base);
			return true;
		} catch (e) {
			return false;
		}
	}
	static parse(url, base = undefined) {
		try {
			return new URL(url, base);
		} catch (e) {
			return null;
		}
	}
	get href() { return serialize(this.#u); }
	set href(v) {
		const input = toUSV(v);
		const u = parse(input, null);
		if (u === FAILURE) throw invalidURL(input);
		this.#u = u;
		replaceList(this.#params, u.query === null ? [] : parseForm(u.query));
	}
	get origin() {
		const u = this.#u;
		switch (u.scheme) {
			case 'blob': {
				const inner = parse(serializePath(u), null);
				if (inner !== FAILURE && (inner.scheme === 'http' || inner.scheme === 'https')) return new URL(serialize(inner)).origin;
				return 'null';
			}
			case 'ftp': case 'http': case 'https': case 'ws': case 'wss':
				return u.scheme + '://' + u.host + (u.port === null ? '' : ':' + u.port);
		}
		return 'null';
	}
	get protocol() { return this.#u.scheme + ':'; }
	set protocol(v) { parse(toUSV(v) + ':', null, this.#u, S.SCHEME_START); }
	get username() { return this.#u.username; }
	set username(v) {
		const u = this.#u;
		if (u.host === null || u.host === '' || u.scheme === 'file') return;
		u.username = encodeString(toUSV(v), inUserinfo);
	}
	get password() { return this.#u.password; }
	set password(v) {
		const u = this.#u;
		if (u.host === null || u.host === '' || u.scheme === 'file') return;
		u.password = encodeString(toUSV(v), inUserinfo);
	}
	get host() {
		const u = this.#u;
		if (u.host === null) return '';
		return u.port === null ? u.host : u.host + ':' + u.port;
	}
	set host(v) {
		if (hasOpaquePath(this.#u)) return;
		this.#set(toUSV(v), S.HOST);
	}
	get hostname() { return this.#u.host === null ? '' : this.#u.host; }
	set hostname(v) {
		if (hasOpaquePath(this.#u)) return;
		this.#set(toUSV(v), S.HOSTNAME);
	}
	get port() { return this.#u.port === null ? '' : String(this.#u.port); }
	set port(v) {
		const u = this.#u;
		if (u.host === null || u.host === '' || u.scheme === 'file') return;
		const s = toUSV(v);
		if (s === '') u.port = null;
		else this.#set(s, S.PORT);
	}
	get pathname() { return serializePath(this.#u); }
	set pathname(v) {
		const u = this.#u;
		if (hasOpaquePath(u)) return;
		u.path = [];
		parse(toUSV(v), null, u, S.PATH_START);
	}
	get search() {
		const q = this.#u.query;
		return q === null || q === '' ? '' : '?' + q;
	}
	set search(v) {
		const u = this.#u;
		const s = toUSV(v);
		if (s === '') {
			u.query = null;
			replaceList(this.#params, []);
			stripTrailingSpaces(u);
			return;
		}
		const input = s[0] === '?' ? s.slice(1) : s;
		u.query = '';
		parse(input, null, u, S.QUERY);
		replaceList(this.#params, parseForm(input));
	}
	get searchParams() { return this.#params; }
	get hash() {
		const f = this.#u.fragment;
		return f === null || f === '' ? '' : '#' + f;
	}
	set hash(v) {
		const u = this.#u;
		const s = toUSV(v);
		if (s === '') {
			u.fragment = null;
			stripTrailingSpaces(u);
			return;
		}
		u.fragment = '';
		parse(s[0] === '#' ? s.slice(1) : s, null, u, S.FRAGMENT);
	}
	toString() { return serialize(this.#u); }
	toJSON() { return serialize(this.#u); }
	// #set runs a setter's state of the parser on the URL. As the
	// standard has it, what it changed before it failed stays changed
	// (a host set before a bad port).
	#set(input, state) { parse(input, null, this.#u, state); }
	static {
		recordOf = (url) => url.#u;
	}
}
defineProperty(URL.prototype, Symbol.toStringTag, { __proto__: null, value: 'URL', configurable: true });
// The members are enumerable, in Node's order, as WebIDL has them.
const members = [
	[URL, ['toString', 'href', 'origin', 'protocol', 'username', 'password', 'host', 'hostname', 'port', 'pathname', 'search', 'searchParams', 'hash', 'toJSON']],
	[URLSearchParams, ['size', 'append', 'delete', 'get', 'getAll', 'has', 'set', 'sort', 'entries', 'forEach', 'keys', 'values', 'toString']],
];
for (let m = 0; m < members.length; m++) {
	const proto = members[m][0].prototype, names = members[m][1];
	// Each defined anew goes last: they end in the order of names.
	for (let i = 0; i < names.length; i++) {
		const d = setPrototypeOf(getOwnPropertyDescriptor(proto, names[i]), null);
		d.enumerable = true;
		delete proto[names[i]];
		defineProperty(proto, names[i], d);
	}
}

const domainToUnicode = (domain) => {
	const ascii = parseHost(toUSV(domain), false);
	if (ascii === FAILURE) return '';
	return ascii.split('.').map((l) => {
		if (!l.startsWith('xn--')) return l;
		const cps = punycode.decode(l.slice(4));
		return cps === FAILURE ? l : fromCodePoint(...cps);
	}).join('.');
};
const url = freeze({
	URL,
	URLSearchParams,
	domainToASCII: (domain) => {
		const h = parseHost(toUSV(domain), false);
		return h === FAILURE ? '' : h;
	},
	domainToUnicode,
	format: (u, options) => {
		if (u instanceof URL) {
			const o = { auth: true, fragment: true, search: true, unicode: false, ...options };
			const r = { ...recordOf(u) };
			if (!o.auth) { r.username = ''; r.password = ''; }
			if (!o.fragment) r.fragment = null;
			if (!o.search) r.query = null;
			if (o.unicode && r.host !== null) r.host = domainToUnicode(r.host);
			return serialize(r);
		}
		throw nodeError(TypeError, 'ERR_INVALID_ARG_TYPE', 'The "urlObject" argument must be a URL here (the legacy url.format of objects and strings is not provided). ' + received(u));
	},
});
return { __proto__: null, URL, URLSearchParams, module: url };
