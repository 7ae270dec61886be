package jsbox_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/embedauth/connect/internal/jsbox"
)

// TestZodFacadeAsNode: schemas built through the facade parse, fail with
// the issues and errors, answer instanceof, shape and toJSONSchema as zod
// does in Node: testdata/zodfacade_node.json holds each expression with
// Node's answer, written by testdata/zodfacade_node.js. Each runs in a
// fresh Box, where the schemas are lazy until first used (which loads
// zod, once), and in a Box where zod was loaded first.
func TestZodFacadeAsNode(t *testing.T) {
	t.Parallel()
	eager := newBox(t, jsbox.Options{})
	if _, err := eager.Eval(`typeof require('zod').ZodError`); err != nil || jsbox.ZodLoads(eager) != 1 {
		t.Fatalf("eager: %v, %d loads", err, jsbox.ZodLoads(eager))
	}
	for _, c := range nodeCases(t, "zodfacade_node.json", 30) {
		b := newBox(t, jsbox.Options{})
		got, err := b.Eval(asNode(c[0]))
		if err != nil || fmt.Sprint(got) != c[1] {
			t.Errorf("lazy: %s\n got %q, %v\nnode %q", c[0], got, err, c[1])
		}
		if n := jsbox.ZodLoads(b); n > 1 {
			t.Errorf("lazy: %s: zod loaded %d times", c[0], n)
		}
		got, err = eager.Eval(asNode(c[0]))
		if err != nil || fmt.Sprint(got) != c[1] {
			t.Errorf("eager: %s\n got %q, %v\nnode %q", c[0], got, err, c[1])
		}
	}
	if n := jsbox.ZodLoads(eager); n != 1 {
		t.Errorf("eager: zod loaded %d times", n)
	}
}

// TestZodFacadeUnused: a module that requires zod and builds schemas it
// never uses does not load zod: as the nango CLI compiles a no-op action,
// the CLI's own bundles (functions/jsruntime/testdata/cli), what the
// module's import and the schemas' builders do.
func TestZodFacadeUnused(t *testing.T) {
	t.Parallel()
	programs := map[string]string{"noop.cjs": noopCLI}
	dir := "../../functions/jsruntime/testdata/cli"
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".cjs") {
			src, err := os.ReadFile(dir + "/" + e.Name())
			if err != nil {
				t.Fatal(err)
			}
			programs[e.Name()] = string(src)
		}
	}
	if len(programs) < 5 {
		t.Fatalf("%d modules", len(programs))
	}
	for name, src := range programs {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p, err := jsbox.Compile(name, src)
			if err != nil {
				t.Fatal(err)
			}
			b := newBox(t, jsbox.Options{Programs: []*jsbox.Program{p}})
			v, err := b.Eval(`const d = require(` + fmt.Sprintf("%q", name) + `).default; [typeof d, typeof d.exec, typeof d.input, typeof d.output].join()`)
			if err != nil || !strings.HasPrefix(fmt.Sprint(v), "object,function") {
				t.Fatalf("%v, %v", v, err)
			}
			if n := jsbox.ZodLoads(b); n != 0 {
				t.Errorf("zod loaded %d times", n)
			}
		})
	}
	b := newBox(t, jsbox.Options{})
	v, err := b.Eval(`const m = require('zod'), { z } = m;
		const names = [Object.getOwnPropertyNames(m).length, Object.getOwnPropertyNames(z).length, Object.keys(z.coerce).length, Object.keys(z.iso).length];
		const ns = __toESM(m);
		const s = ns.object({ a: z.string().min(1).max(9).optional(), b: z.array(z.coerce.number().int()).nonempty(), c: z.enum(['x']).nullable().default(null) })
			.extend({ d: z.iso.datetime() }).partial().strict().describe('s').refine(() => true).transform((v) => v).pipe(z.any()).optional().array();
		[names.join(), typeof s, m === require('zod'), z === m.default, z.object === m.object, ns.object === z.object, s.min === s.min, 'object' in m, 'ZodError' in z,
			Object.getOwnPropertyDescriptor(m, 'ZodError').enumerable, typeof Object.getOwnPropertyDescriptor(z, 'string').get].join(' ')
		function __toESM(mod) {
			const target = Object.create(Object.getPrototypeOf(mod));
			Object.defineProperty(target, 'default', { value: mod, enumerable: true });
			for (const key of Object.getOwnPropertyNames(mod)) {
				if (key !== 'default') Object.defineProperty(target, key, { get: () => mod[key], enumerable: Object.getOwnPropertyDescriptor(mod, key).enumerable });
			}
			return target;
		}`)
	if want := "239,236,5,8 object true true true true true true true true function"; err != nil || v != want {
		t.Errorf("%v, %v\nwant %s", v, err, want)
	}
	if n := jsbox.ZodLoads(b); n != 0 {
		t.Errorf("zod loaded %d times", n)
	}
	// The first use loads it, once.
	if v, err := b.Eval(`[s.parse([{ b: ['1'], d: '2024-01-02T03:04:05Z' }])[0].b[0], typeof m.ZodError, s instanceof z.ZodArray].join()`); err != nil || v != "1,function,true" {
		t.Errorf("%v, %v", v, err)
	}
	if n := jsbox.ZodLoads(b); n != 1 {
		t.Errorf("zod loaded %d times", n)
	}
}

// TestZodFacadeNames: the facade's module and namespaces have the own
// properties of zod's, in their order, with their attributes, before zod
// is loaded (TestZodFacadeUnused) and after: checked against zod itself,
// loaded into the same Box as another module.
func TestZodFacadeNames(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("zod.js")
	if err != nil {
		t.Fatal(err)
	}
	const describe = `((o) => JSON.stringify(Reflect.ownKeys(o).map((k) => { const d = Object.getOwnPropertyDescriptor(o, k);
		return [String(k), typeof d.get, typeof d.set, 'value' in d ? typeof d.value : '-', d.writable, d.enumerable, d.configurable]; })
		.concat([Object.getPrototypeOf(o) === Object.prototype, Object.isExtensible(o)])))`
	b := newBox(t, jsbox.Options{Modules: map[string]string{"zod-itself": string(src)}})
	v, err := b.Eval(`const describe = ` + describe + `;
		const f = require('zod'), r = require('zod-itself');
		const facade = [f, f.z, f.z.coerce, f.z.iso].map(describe);
		const loads = typeof f.ZodError;
		const real = [r, r.z, r.z.coerce, r.z.iso].map(describe);
		const after = [f, f.z, f.z.coerce, f.z.iso].map(describe);
		JSON.stringify([facade[0] === real[0], facade[1] === real[1], facade[2] === real[2], facade[3] === real[3], after.join() === real.join(), real[0].length > 5000])`)
	if err != nil || v != "[true,true,true,true,true,true]" {
		t.Errorf("%v, %v", v, err)
	}
}

// TestZodFacadeTables: what zod.go's tables say of zod's factories and
// builder methods holds for zod.js: each factory builds a schema of its
// class, for each of the forms of its arguments tried; each builder
// method a class has is its own function there and answers a schema of
// the class the table says, for each form tried.
func TestZodFacadeTables(t *testing.T) {
	t.Parallel()
	factories, universal, classes := jsbox.ZodTables()
	// Forms of arguments, for each factory and each builder method.
	const S = "z.string()"
	fargs := map[string][]string{
		"object": {"", "{}", "{ a: z.string() }", "{ a: z.string() }, 'm'"}, "strictObject": {"{ a: z.string() }"}, "looseObject": {"{}"},
		"string": {"", "'m'", "{ message: 'm' }"}, "number": {"", "'m'"}, "boolean": {""}, "bigint": {""}, "date": {""}, "symbol": {""},
		"null": {""}, "undefined": {""}, "void": {""}, "never": {""}, "nan": {""}, "any": {""}, "unknown": {""},
		"array": {S, S + ", 'm'"}, "enum": {"['a', 'b']", "['a'], 'm'", "{ A: 'a', B: 1 }"}, "nativeEnum": {"{ A: 'a' }"},
		"literal": {"'a'", "1", "['a', 'b']", "null", "undefined", "true"}, "union": {"[z.string(), z.number()]"}, "xor": {"[z.string(), z.number()]"},
		"discriminatedUnion": {"'t', [z.object({ t: z.literal('a') }), z.object({ t: z.literal('b') })]"}, "intersection": {S + ", " + S},
		"tuple": {"[z.string()]", "[z.string()], z.number()", "[]"}, "record": {S + ", " + S, "z.enum(['a']), " + S}, "partialRecord": {"z.enum(['a']), " + S},
		"looseRecord": {S + ", " + S}, "map": {S + ", " + S}, "set": {S}, "promise": {S}, "lazy": {"() => z.string()"},
		"optional": {S}, "nullable": {S}, "nullish": {S}, "exactOptional": {S}, "nonoptional": {S}, "readonly": {S},
		"_default": {S + ", 'x'"}, "prefault": {S + ", 'x'"}, "catch": {S + ", 'x'"}, "success": {S}, "pipe": {S + ", " + S},
		"transform": {"(x) => x"}, "preprocess": {"(x) => x, " + S}, "custom": {"", "(x) => true", "(x) => true, 'm'"}, "instanceof": {"Date"},
		"email": {"", "'m'", "{ message: 'm' }"}, "url": {"", "{ protocol: /^https$/ }"}, "httpUrl": {""}, "uuid": {""}, "uuidv4": {""},
		"uuidv6": {""}, "uuidv7": {""}, "guid": {""}, "emoji": {""}, "nanoid": {""}, "cuid": {""}, "cuid2": {""}, "ulid": {""}, "xid": {""},
		"ksuid": {""}, "ipv4": {""}, "ipv6": {""}, "mac": {""}, "cidrv4": {""}, "cidrv6": {""}, "base64": {""}, "base64url": {""}, "e164": {""},
		"jwt": {""}, "hostname": {""}, "hex": {""}, "hash": {"'sha256'"}, "stringFormat": {"'f', (x) => true", "'f', /x/"},
		"int": {""}, "int32": {""}, "uint32": {""}, "float32": {""}, "float64": {""}, "int64": {""}, "uint64": {""},
		"stringbool": {"", "{ truthy: ['y'] }"}, "codec": {S + ", z.number(), { decode: Number, encode: String }"}, "templateLiteral": {"['a', z.string()]"},
		"file": {""}, "json": {""}, "keyof": {"z.object({ a: z.string() })"},
		"coerce.string": {""}, "coerce.number": {""}, "coerce.boolean": {""}, "coerce.bigint": {""}, "coerce.date": {""},
		"iso.datetime": {"", "{ offset: true }"}, "iso.date": {""}, "iso.time": {"", "{ precision: 0 }"}, "iso.duration": {""},
	}
	margs := map[string][]string{
		"optional": {""}, "exactOptional": {""}, "nullable": {""}, "nullish": {""}, "nonoptional": {"", "'m'"}, "array": {""},
		"or": {S}, "and": {S}, "default": {"'x'", "() => 'x'", ""}, "prefault": {"'x'", ""}, "catch": {"'x'", "() => 'x'", ""},
		"transform": {"(x) => x"}, "pipe": {S}, "readonly": {""}, "describe": {"'d'", ""}, "brand": {"", "'B'"}, "superRefine": {"(v, ctx) => {}"},
		"refine": {"() => true", "() => true, 'm'", "() => true, { message: 'm', path: ['a'] }", "async () => true"}, "check": {"(ctx) => {}", "", "z.minLength(1)"}, "with": {"(ctx) => {}"}, "overwrite": {"(x) => x"},
		"min": {"1", "1, 'm'", "1, { message: 'm' }"}, "max": {"1", "1, 'm'"}, "length": {"1", "1, 'm'"}, "nonempty": {"", "'m'"},
		"regex": {"/x/", "/x/, 'm'"}, "includes": {"'a'", "'a', { position: 1 }"}, "startsWith": {"'a'"}, "endsWith": {"'a'"},
		"lowercase": {""}, "uppercase": {""}, "trim": {""}, "normalize": {"", "'NFD'"}, "toLowerCase": {""}, "toUpperCase": {""}, "slugify": {""},
		"email": {"", "'m'", "{ pattern: /x/ }"}, "url": {"", "{ hostname: /x/ }"}, "jwt": {""}, "emoji": {""}, "guid": {""}, "uuid": {"", "{ version: 'v4' }"},
		"uuidv4": {""}, "uuidv6": {""}, "uuidv7": {""}, "nanoid": {""}, "cuid": {""}, "cuid2": {""}, "ulid": {""}, "base64": {""}, "base64url": {""},
		"xid": {""}, "ksuid": {""}, "ipv4": {""}, "ipv6": {""}, "cidrv4": {""}, "cidrv6": {""}, "e164": {""},
		"datetime": {"", "{ offset: true, precision: 3 }"}, "date": {""}, "time": {"", "{ precision: 0 }"}, "duration": {""},
		"gt": {"1"}, "gte": {"1"}, "lt": {"1"}, "lte": {"1"}, "positive": {""}, "negative": {""}, "nonnegative": {""}, "nonpositive": {""},
		"multipleOf": {"2"}, "int": {""}, "step": {"2"}, "finite": {""}, "safe": {""}, "size": {"1"},
		"extend": {"{}", "{ c: z.string() }"}, "safeExtend": {"{ c: z.string() }"}, "merge": {"z.object({ c: z.string() })"},
		"pick": {"{ a: true }"}, "omit": {"{ a: true }"}, "partial": {"", "{ a: true }"}, "required": {"", "{ a: true }"},
		"strict": {""}, "strip": {""}, "passthrough": {""}, "loose": {""}, "catchall": {S}, "keyof": {""}, "rest": {S},
	}
	// One schema of each class the tables name, made by a factory or a
	// builder; every class must have one.
	var js strings.Builder
	js.WriteString("const { z } = require('zod'); typeof z.ZodError; const out = [], inst = {};\n")
	js.WriteString("const cls = (v) => v instanceof z.ZodType ? v.constructor.name : 'not a schema: ' + typeof v;\n")
	js.WriteString("const check = (what, f, want) => { let got; try { got = cls(f()); } catch (e) { got = 'throws ' + e; } if (got !== want) out.push(what + ': ' + got + ', want ' + want); };\n")
	js.WriteString("const keep = (v) => { const c = cls(v); if (!(c in inst)) inst[c] = v; };\n")
	for name, class_ := range factories {
		forms, ok := fargs[name]
		if !ok {
			t.Errorf("no arguments to try for factory %s", name)
			continue
		}
		for _, a := range forms {
			fmt.Fprintf(&js, "check(%q, () => z.%s(%s), %q); keep(z.%s(%s));\n", name+"("+a+")", name, a, class_, name, a)
		}
	}
	// Builders' results are instances too.
	js.WriteString("for (const v of [z.string().transform((x) => x), z.object({}).keyof()]) keep(v);\n")
	js.WriteString("for (const c of ['ZodOptional', 'ZodNullable', 'ZodArray', 'ZodUnion', 'ZodIntersection', 'ZodDefault', 'ZodPrefault', 'ZodCatch', 'ZodReadonly', 'ZodExactOptional', 'ZodNonOptional', 'ZodPipe']) if (!(c in inst)) out.push('no instance of ' + c);\n")
	// Every class the tables name, each method of every class and those of
	// the class.
	seen := map[string]bool{}
	for _, c := range factories {
		seen[c] = true
	}
	for _, r := range universal {
		if r != "" {
			seen[r] = true
		}
	}
	for c, ms := range classes {
		seen[c] = true
		for _, r := range ms {
			if r != "" {
				seen[r] = true
			}
		}
	}
	for c := range seen {
		fmt.Fprintf(&js, "if (!(%q in inst)) out.push('no instance of %s');\n", c, c)
		methods := map[string]string{}
		for m, r := range universal {
			methods[m] = r
		}
		for m, r := range classes[c] {
			methods[m] = r
		}
		for m, r := range methods {
			want := r
			if want == "" {
				want = c
			}
			forms, ok := margs[m]
			if !ok {
				t.Errorf("no arguments to try for builder %s", m)
				continue
			}
			fmt.Fprintf(&js, "if (%q in inst) { const s = inst[%q]; if (!Object.getOwnPropertyNames(s).includes(%q) || typeof s[%q] !== 'function') out.push(%q);\n", c, c, m, m, c+"."+m+" is no method")
			for _, a := range forms {
				fmt.Fprintf(&js, "  check(%q, () => s.%s(%s), %q);\n", c+"."+m+"("+a+")", m, a, want)
			}
			js.WriteString("}\n")
		}
	}
	js.WriteString("out.join('\\n')")
	b := newBox(t, jsbox.Options{})
	v, err := b.Eval(js.String())
	if err != nil || v != "" {
		t.Errorf("%v\n%v", v, err)
	}
	if len(factories) < 90 || len(universal) < 20 || len(seen) < 50 {
		t.Errorf("%d factories, %d methods of every class, %d classes", len(factories), len(universal), len(seen))
	}
}

// TestZodFacadeProxy: once used, a lazy schema answers what is done to it
// as its schema does, the engine's checks of a proxy's answers included
// (properties that cannot be configured, freezing): each operation on a
// lazy schema and on the same schema built after zod was loaded (zod's
// own) answers alike.
func TestZodFacadeProxy(t *testing.T) {
	t.Parallel()
	for _, op := range []string{
		`Object.keys(s).join()`,
		`Reflect.ownKeys(s).map(String).join()`,
		`JSON.stringify(Object.getOwnPropertyNames(s).map((k) => { const d = Object.getOwnPropertyDescriptor(s, k); return [k, typeof d.value, typeof d.get, d.writable, d.enumerable, d.configurable]; }))`,
		`['_zod', 'parse', 'shape', 'nope', Symbol.iterator].map((k) => k in s).join()`,
		`[Object.getPrototypeOf(s) === z.ZodObject.prototype, s.constructor === z.ZodObject, s instanceof z.ZodType, s.constructor.name, typeof s].join()`,
		`Object.prototype.toString.call(s) + String(Object.isExtensible(s))`,
		`Object.defineProperty(s, 'fixed', { value: 1 }); JSON.stringify([s.fixed, Object.getOwnPropertyDescriptor(s, 'fixed'), delete s.fixed, (() => { 'use strict'; try { s.fixed = 2; return 'set'; } catch (e) { return e.name; } })()])`,
		`s.mine = 5; JSON.stringify([s.mine, delete s.mine, 'mine' in s, Reflect.deleteProperty(s, '_zod')])`,
		`Object.preventExtensions(s); JSON.stringify([Object.isExtensible(s), Reflect.defineProperty(s, 'x', { value: 1 }), Object.keys(s).length > 0, Reflect.ownKeys(s).length > 0, s.safeParse({ a: 'x' }).success])`,
		`Object.freeze(s); JSON.stringify([Object.isFrozen(s), Object.isSealed(s), Object.getOwnPropertyDescriptor(s, 'parse').writable, Reflect.set(s, 'parse', 1), delete s.parse, typeof s.parse, s.parse({ a: 'y' })])`,
		`Object.seal(s); JSON.stringify([Object.isSealed(s), Object.isFrozen(s), delete s.parse, Reflect.setPrototypeOf(s, null), Object.getPrototypeOf(s) === z.ZodObject.prototype])`,
		`const c = Object.create(s); c.mine = 1; JSON.stringify([Object.keys(c), c.shape === s.shape, c.safeParse({ a: 'x' }).success, Object.hasOwn(s, 'mine')])`,
		`JSON.stringify([s.parse === s.parse, s.parse.call(null, { a: 'x' }), Object.keys(s.shape), s.shape.a instanceof z.ZodString, JSON.stringify(s).length > 0])`,
	} {
		build := `z.object({ a: z.string().min(1).optional() }).strict()`
		lazy := newBox(t, jsbox.Options{})
		got, err := lazy.Eval(`const { z } = require('zod'); const s = ` + build + `; ` + op)
		if err != nil {
			t.Errorf("%s: lazy: %v", op, err)
		}
		eager := newBox(t, jsbox.Options{})
		want, err := eager.Eval(`const { z } = require('zod'); typeof z.ZodType; const s = ` + build + `; ` + op)
		if err != nil {
			t.Errorf("%s: zod's: %v", op, err)
		}
		if got != want {
			t.Errorf("%s\n lazy %v\nzod's %v", op, got, want)
		}
	}
}

// TestZodFacadeHardened: what code did before requiring zod (replaced
// built-ins, setters and traps on the prototypes) changes nothing the
// facade does and is never called by it, while it makes the module, its
// names and lazy schemas; and the lazy schemas then work.
func TestZodFacadeHardened(t *testing.T) {
	t.Parallel()
	b := newBox(t, jsbox.Options{})
	v, err := b.Eval(`
		// What code before the require did: the spies record their calls,
		// into log, and go on, so that the harness still works.
		const log = { __proto__: null, n: 0 }, undo = { __proto__: null, n: 0 };
		const { apply: call, defineProperty: define, getOwnPropertyDescriptor: describe } = Reflect;
		const names = Object.getOwnPropertyNames;
		const spy = (o, k, name) => {
			const d = describe(o, k), f = d.value;
			undo[undo.n++] = () => define(o, k, d);
			define(o, k, { __proto__: null, value: function (...a) { log[log.n++] = name; return call(f, this, a); }, writable: true, configurable: true });
		};
		const list = (...a) => a;
		const each = (a, f) => { for (let i = 0; i < a.length; i++) f(a[i]); };
		each(list('get', 'set', 'has', 'ownKeys', 'getOwnPropertyDescriptor', 'defineProperty', 'deleteProperty', 'getPrototypeOf',
			'setPrototypeOf', 'isExtensible', 'preventExtensions', 'apply', 'construct'), (k) => spy(Reflect, k, 'Reflect.' + k));
		each(list('defineProperty', 'getOwnPropertyDescriptor', 'getPrototypeOf', 'setPrototypeOf', 'getOwnPropertyNames', 'keys', 'freeze', 'create'),
			(k) => spy(Object, k, 'Object.' + k));
		each(list('get', 'set', 'has'), (k) => spy(WeakMap.prototype, k, 'WeakMap.' + k));
		each(list('push', 'map', 'slice', 'concat', 'join', Symbol.iterator), (k) => spy(Array.prototype, k, 'Array.' + String(k)));
		each(list('apply', 'call', 'bind'), (k) => spy(Function.prototype, k, 'Function.' + k));
		// Traps and descriptor fields a proxy handler or a descriptor could
		// inherit, and setters of array indexes.
		each(list('has', 'ownKeys', 'getOwnPropertyDescriptor', 'defineProperty', 'deleteProperty', 'getPrototypeOf', 'setPrototypeOf',
			'isExtensible', 'preventExtensions', 'apply', 'construct', 'writable', 'enumerable', 'configurable', '0', '1'), (k) => {
			const target = k === '0' || k === '1' ? Array.prototype : Object.prototype;
			define(target, k, { __proto__: null, get() { log[log.n++] = 'get ' + k; return undefined; }, set(v) { log[log.n++] = 'set ' + k; }, configurable: true });
			undo[undo.n++] = () => delete target[k];
		});
		log.n = 0;
		const m = require('zod'), { z } = m;
		const count = names(m).length + names(z).length;
		const d = describe(m, 'object');
		const s = z.object({ a: z.array(z.string().min(1)).optional(), b: z.coerce.number(), c: z.union([z.literal('x'), z.null()]) }).extend({ d: z.iso.date() }).partial().strict();
		let seen = '';
		for (let i = 0; i < log.n; i++) seen += log[i] + ' ';
		const loads = 'ZodError' in m ? 1 : 0;
		for (let i = undo.n - 1; i >= 0; i--) undo[i]();
		[seen || 'none', count, typeof d.get, d.configurable, loads, JSON.stringify(s.parse({ a: ['q'], b: '3', c: null })), s.safeParse({ e: 1 }).success, s instanceof z.ZodObject].join(' ')`)
	if want := "none 475 function false 1 {\"a\":[\"q\"],\"b\":3,\"c\":null} false true"; err != nil || v != want {
		t.Errorf("%v, %v\nwant %s", v, err, want)
	}
}
