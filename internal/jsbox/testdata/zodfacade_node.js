// Writes zodfacade_node.json: each expression with what Node answers for
// it with zod 4.3.6, run through the same wrapper as TestZodFacadeAsNode
// (an exception answers "throws Name: message [code]"). In a Box each
// runs in a fresh Box, where zod's facade builds lazy schemas until a
// schema is first used, and again in a Box where zod was loaded first.
// Run with Node 20 and the zod package unpacked (npm pack zod@4.3.6; tar
// xzf zod-4.3.6.tgz):
//   ZOD=/path/to/package node testdata/zodfacade_node.js > testdata/zodfacade_node.json
const zod = require(process.env.ZOD || 'zod');
globalThis.require = (name) => { if (name === 'zod') return zod; throw new Error('no ' + name); };
const f = (body) => `(() => { const { z } = require('zod'); ${body} })()`;
const cases = [
  // The module's names (Node's CommonJS zod and the bundle list them in
  // other orders, and Node's namespaces have __esModule too).
  `JSON.stringify(Object.getOwnPropertyNames(require('zod')).sort())`,
  `JSON.stringify(['object', 'ZodError', 'coerce'].map((k) => { const d = Object.getOwnPropertyDescriptor(require('zod'), k); return [typeof d.get, d.enumerable, d.configurable]; }))`,
  `JSON.stringify(Object.getOwnPropertyDescriptor(require('zod'), '__esModule'))`,
  `require('zod').z === require('zod').default && require('zod').object === require('zod').z.object && require('zod').z.object === require('zod').z.object`,
  `[require('zod').__esModule, typeof require('zod').z.coerce.number, typeof require('zod').z.iso.datetime, Object.getPrototypeOf(require('zod')) === Object.prototype, 'object' in require('zod'), 'nope' in require('zod')].join()`,
  // A schema of many kinds, built before use.
  f(`const Item = z.object({
    id: z.string().uuid().optional(),
    name: z.string().trim().min(1).max(20),
    tags: z.array(z.string().toLowerCase()).default([]),
    kind: z.enum(['a', 'b']).nullable(),
    value: z.union([z.number().int().positive(), z.string().regex(/^[0-9]+$/).transform(Number)]),
    meta: z.record(z.string(), z.unknown()).optional(),
    nested: z.object({ flag: z.boolean().default(false), at: z.iso.datetime().optional() }).partial(),
    count: z.number().refine((n) => n % 2 === 0, { message: 'even please' }).optional(),
    list: z.array(z.object({ n: z.number().nullish() })).nonempty().optional(),
    when: z.date().optional(),
  });
  const ok = Item.safeParse({ id: '123e4567-e89b-12d3-a456-426614174000', name: '  Ada ', tags: ['X', 'Y'], kind: null, value: '42', meta: { a: 1 }, nested: { at: '2024-01-02T03:04:05Z' }, count: 4, list: [{ n: null }, {}], extra: true });
  const bad = Item.safeParse({ id: 'nope', name: '', tags: [1], kind: 'c', value: -1.5, meta: 3, nested: { flag: 'y' }, count: 3, list: [] });
  return JSON.stringify([ok.success, ok.data, bad.success, bad.error.issues]);`),
  f(`const S = z.object({ a: z.string(), b: z.object({ c: z.number() }) }); return JSON.stringify([S.parse({ a: 'x', b: { c: 1, d: 2 }, e: 3 }), S.safeParse({ b: { c: 'x' } }).error.issues]);`),
  f(`return JSON.stringify([z.coerce.number().parse('42'), z.coerce.boolean().parse(''), z.coerce.string().parse(5), z.coerce.date().parse('2024-01-02T00:00:00Z').toISOString(), z.coerce.bigint().parse('7').toString(), z.coerce.number().safeParse('x').error.issues]);`),
  f(`const Base = z.object({ a: z.string(), b: z.number().optional() });
  const Ext = Base.extend({ c: z.boolean() });
  return JSON.stringify([Object.keys(Ext.shape), Object.keys(Base.pick({ a: true }).shape), Object.keys(Ext.omit({ b: true }).shape),
    Ext.partial().safeParse({}).success, Base.required().safeParse({ a: 'x' }).error.issues, Base.strict().safeParse({ a: 'x', q: 1 }).error.issues,
    Base.catchall(z.number()).parse({ a: 'x', q: 1 }), Base.passthrough().parse({ a: 'x', q: 1 }), Base.keyof().options, Base.merge(z.object({ d: z.null() })).parse({ a: 'x', d: null }),
    Base.safeExtend({ e: z.string().default('e') }).parse({ a: 'x' }), Ext.partial({ a: true }).safeParse({ c: true }).success]);`),
  f(`const U = z.discriminatedUnion('type', [z.object({ type: z.literal('a'), x: z.string() }), z.object({ type: z.literal('b'), y: z.number().default(1) })]);
  return JSON.stringify([U.parse({ type: 'b' }), U.safeParse({ type: 'c' }).error.issues, U.safeParse({ type: 'a', x: 1 }).error.issues]);`),
  f(`const S = z.object({ a: z.string() }); return [S instanceof z.ZodObject, S instanceof z.ZodType, z.string().optional() instanceof z.ZodOptional, Object.getPrototypeOf(S) === z.ZodObject.prototype, S.constructor === z.ZodObject, S.constructor.name, z.email() instanceof z.ZodEmail, z.coerce.number() instanceof z.ZodNumber].join();`),
  f(`const S = z.object({ a: z.string().optional(), b: z.array(z.number()) }); return [Object.keys(S.shape).join('+'), S.shape.a instanceof z.ZodOptional, S.shape.a.isOptional(), S.shape.b.element instanceof z.ZodNumber, S.shape.a.unwrap() instanceof z.ZodString].join();`),
  f(`const S = z.object({ id: z.string().describe('the id'), tags: z.array(z.string()).optional(), kind: z.enum(['a', 'b']), n: z.number().int().min(0).default(0) }); return JSON.stringify([S.toJSONSchema(), z.toJSONSchema(S), z.toJSONSchema(S, { io: 'input' })]);`),
  f(`const S = z.object({ a: z.string(), b: z.number() }); try { S.parse({ b: 'x' }); return 'parsed'; } catch (e) { return [e instanceof z.ZodError, e instanceof Error, e.name, e.issues.length, z.prettifyError(e), JSON.stringify(z.treeifyError(e)), JSON.stringify(z.flattenError(e))].join(' | '); }`),
  f(`const Cat = z.object({ name: z.string(), get children() { return z.array(Cat); } });
  return JSON.stringify([Cat.parse({ name: 'a', children: [{ name: 'b', children: [], x: 1 }] }), Cat.safeParse({ name: 'a', children: [{ name: 1, children: [] }] }).error.issues, Object.keys(Cat.shape)]);`),
  f(`const Cat = z.object({ name: z.string(), get children() { return z.array(Cat).optional(); } }); return JSON.stringify(Cat.toJSONSchema());`),
  f(`const T = z.lazy(() => z.object({ v: z.number(), next: T.optional() })); return JSON.stringify([T.parse({ v: 1, next: { v: 2 } }), T.safeParse({ v: 1, next: { v: 'x' } }).error.issues]);`),
  f(`const P = z.string().transform((s) => s.length).pipe(z.number().max(3)); return JSON.stringify([P.safeParse('ab'), P.safeParse('hello').error.issues, z.preprocess((v) => String(v), z.string()).parse(5), z.number().catch(7).parse('x'), z.string().default(() => 'd').parse(undefined)]);`),
  f(`return JSON.stringify([z.string().describe('d').description, z.string().brand('B').parse('x'), Object.isFrozen(z.object({ a: z.string() }).readonly().parse({ a: 'x' })), z.string().meta({ title: 'T' }).meta(), z.string().optional().isOptional(), z.string().nullable().parse(null)]);`),
  f(`return JSON.stringify([z.tuple([z.string(), z.number()]).rest(z.boolean()).parse(['a', 1, true]), z.intersection(z.object({ a: z.string() }), z.object({ b: z.number() })).parse({ a: 'x', b: 1, c: 2 }), z.literal(['a', 1]).safeParse(2).error.issues, z.nativeEnum({ A: 'a', B: 'b' }).parse('b'), [...z.set(z.number()).min(1).parse(new Set([1]))], [...z.map(z.string(), z.number()).parse(new Map([['a', 1]]))], z.bigint().positive().parse(5n).toString()]);`),
  f(`const s = z.string(); const o = z.object({ a: s }); return [s === s, s.min === s.min, o.parse === o.parse, z.object === z.object, typeof o.parse, typeof s.extend, typeof o.min].join();`),
  f(`try { z.string().extend({}); return 'no error'; } catch (e) { return e.name; }`),
  f(`return JSON.stringify([typeof z.NEVER, typeof z.config, Object.keys(z.ZodFirstPartyTypeKind).length > 0, typeof z.util, typeof z.core, typeof z.ZodIssueCode, typeof z.globalRegistry.get]);`),
  f(`const s = z.object({ a: z.string() }); return JSON.stringify([Object.keys(s).includes('parse'), 'parse' in s, Object.keys(s).length, Reflect.ownKeys(s).length, typeof Object.getOwnPropertyDescriptor(s, '_zod').value, Object.getOwnPropertyDescriptor(s, '_zod').configurable, Object.isFrozen(Object.freeze(s)), s.parse({ a: 'x' })]);`),
  f(`return JSON.stringify([z.enum(['a', 'b']).options, z.enum(['a', 'b']).enum, z.enum(['a', 'b', 'c']).exclude(['a']).options, z.enum(['a', 'b']).extract(['a']).parse('a'), z.keyof(z.object({ a: z.string(), b: z.number() })).options]);`),
  f(`return JSON.stringify([z.int().safeParse(1.5).error.issues, z.int32().safeParse(2 ** 40).error.issues[0].code, z.email().safeParse('x').error.issues[0].message, z.url().safeParse('https://a.example/b').success, z.uuid().safeParse('x').success, z.string().email().safeParse('a@b.example').success, z.iso.date().safeParse('2024-02-30').success, z.string().datetime({ offset: true }).safeParse('2024-01-02T03:04:05+02:00').success]);`),
  f(`return JSON.stringify([z.string().check(z.minLength(2)).safeParse('a').error.issues, z.string().min(1, 'Required').safeParse('').error.issues[0].message, z.string().min(2, { message: 'two' }).safeParse('a').error.issues[0].message, z.number().gt(1).lte(3).multipleOf(2).safeParse(4).error.issues]);`),
  f(`const S = z.object({ u: z.union([z.literal('a'), z.object({ k: z.array(z.tuple([z.string(), z.number()])) })]), r: z.record(z.enum(['x', 'y']), z.array(z.string().optional())) });
  return JSON.stringify([S.parse({ u: { k: [['a', 1]] }, r: { x: ['s', undefined], y: [] } }), S.safeParse({ u: { k: [['a', 'b']] }, r: { z: [] } }).error.issues]);`),
  f(`const S = z.object({ a: z.string() }); const A = z.array(S).min(1); const R = z.object({ items: A, first: S.optional() }); return JSON.stringify([R.parse({ items: [{ a: 'x', b: 1 }] }), R.shape.items.element instanceof z.ZodObject, R.shape.items.element.shape.a instanceof z.ZodString]);`),
  f(`const S = z.string().refine(async (s) => s.length > 1, 'too short'); return S.safeParseAsync('a').constructor.name;`),
  f(`const S = z.object({ a: z.number() }).superRefine((v, ctx) => { if (v.a > 1) ctx.addIssue({ code: 'custom', message: 'big', path: ['a'] }); }); return JSON.stringify(S.safeParse({ a: 2 }).error.issues);`),
  f(`const S = z.string().optional(); return [S.safeParse(undefined).success, S.unwrap().safeParse(undefined).success, z.string().nullish().parse(null), z.string().array().parse(['a']).length, z.string().or(z.number()).parse(1), JSON.stringify(z.object({ a: z.string() }).and(z.object({ b: z.string() })).parse({ a: 'x', b: 'y' }))].join();`),
  f(`const S = z.object({ a: z.string() }); const x = { s: S }; return [JSON.stringify(z.object(x).parse({ s: { a: 'q' } })), JSON.stringify(z.object({ a: z.string() }).shape.a.parse('x'))].join();`),
  f(`return JSON.stringify([z.stringbool().parse('yes'), z.templateLiteral(['id-', z.number()]).parse('id-3'), z.json().parse({ a: [1, 'x', null] }), z.instanceof(Date).safeParse(1).success, z.custom((v) => v === 1).safeParse(2).success, z.codec(z.string(), z.number(), { decode: Number, encode: String }).parse('5')]);`),
];
const run = (c) => (0, eval)(`(() => { try { return String(${c}); } catch (e) { return 'throws ' + e.name + ': ' + e.message + (e.code ? ' [' + e.code + ']' : ''); } })()`);
console.log(JSON.stringify(cases.map((c) => [c, run(c)]), null, 1));
