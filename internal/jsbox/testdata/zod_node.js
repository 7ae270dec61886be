// Writes zod_node.json: each expression with what Node answers for it
// with zod 4.3.6, run through the same wrapper as TestZodAsNode (an
// exception answers "throws Name: message [code]"). Run with Node 20 and
// the zod package unpacked (npm pack zod@4.3.6; tar xzf zod-4.3.6.tgz):
//   ZOD=/path/to/package node testdata/zod_node.js > testdata/zod_node.json
const zod = require(process.env.ZOD || 'zod');
globalThis.require = (name) => { if (name === 'zod') return zod; throw new Error('no ' + name); };
const cases = [
  `require('zod').z.object({ a: require('zod').z.string() }).parse({ a: 'x', extra: 1 }).extra === undefined`,
  `JSON.stringify(require('zod').z.object({ id: require('zod').z.string(), n: require('zod').z.number().int().optional() }).parse({ id: 'x', n: 3, unknown: true }))`,
  `JSON.stringify(require('zod').z.object({ a: require('zod').z.string().min(1) }).safeParse({ a: '' }))`,
  `require('zod').z.string().min(1).safeParse('').error.issues[0].message`,
  `require('zod').z.string().min(1, 'Required').safeParse('').error.issues[0].message`,
  `require('zod').z.string().min(1).safeParse('').error.message`,
  `JSON.stringify(require('zod').z.string().safeParse(5).error.issues)`,
  `JSON.stringify(require('zod').z.object({ a: require('zod').z.string(), b: require('zod').z.object({ c: require('zod').z.number() }) }).safeParse({ b: { c: 'x' } }).error.issues)`,
  `require('zod').z.object({ a: require('zod').z.string() }).parse({})`,
  `JSON.stringify(require('zod').z.object({ a: require('zod').z.string() }).strict().safeParse({ a: 'x', b: 1 }).error.issues)`,
  `JSON.stringify(require('zod').z.object({ a: require('zod').z.string() }).passthrough().parse({ a: 'x', b: 1 }))`,
  `JSON.stringify(require('zod').z.object({ a: require('zod').z.string().default('d'), b: require('zod').z.string().nullable() }).parse({ b: null }))`,
  `JSON.stringify(require('zod').z.array(require('zod').z.union([require('zod').z.string(), require('zod').z.number()])).safeParse(['a', 1, true]).error.issues)`,
  `JSON.stringify(require('zod').z.enum(['a', 'b']).safeParse('c').error.issues)`,
  `require('zod').z.email().safeParse('not-an-email').error.issues[0].message`,
  `require('zod').z.string().email().safeParse('ada@example.com').success`,
  `require('zod').z.iso.datetime().safeParse('2024-01-02T03:04:05Z').success + ' ' + require('zod').z.iso.datetime().safeParse('2024-01-02').success`,
  `require('zod').z.coerce.number().parse('42') + 1`,
  `JSON.stringify(require('zod').z.string().transform((s) => s.length).parse('hello'))`,
  `require('zod').z.number().refine((n) => n % 2 === 0, { message: 'even please' }).safeParse(3).error.issues[0].message`,
  `JSON.stringify(require('zod').z.discriminatedUnion('type', [require('zod').z.object({ type: require('zod').z.literal('a'), x: require('zod').z.string() }), require('zod').z.object({ type: require('zod').z.literal('b') })]).safeParse({ type: 'c' }).error.issues)`,
  `JSON.stringify(require('zod').z.record(require('zod').z.string(), require('zod').z.number()).parse({ a: 1 }))`,
  `require('zod').z.prettifyError(require('zod').z.object({ a: require('zod').z.string(), b: require('zod').z.number() }).safeParse({ b: 'x' }).error)`,
  `JSON.stringify(require('zod').z.treeifyError(require('zod').z.object({ a: require('zod').z.string() }).safeParse({}).error))`,
  `JSON.stringify(require('zod').z.toJSONSchema(require('zod').z.object({ id: require('zod').z.string(), tags: require('zod').z.array(require('zod').z.string()).optional() })))`,
  `require('zod').z.date().safeParse(new Date(0)).success + ' ' + require('zod').z.date().safeParse('x').success`,
  `(async () => 0)() && require('zod').z.string().parseAsync('x').constructor.name`,
  `require('zod').z.object({}) instanceof require('zod').z.ZodType`,
  `require('zod').default === require('zod').z && typeof require('zod').ZodError`,
  `(() => { try { require('zod').z.number().parse('x'); } catch (e) { return [e instanceof require('zod').ZodError, e.name, e.issues.length].join(); } })()`,
];
const run = (c) => (0, eval)(`(() => { try { return String(${c}); } catch (e) { return 'throws ' + e.name + ': ' + e.message + (e.code ? ' [' + e.code + ']' : ''); } })()`);
console.log(JSON.stringify(cases.map((c) => [c, run(c)]), null, 1));
