package jsbox

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"modernc.org/quickjs"
)

// zodJS is zod (the version the nango CLI pins, 4.3.6) bundled into one
// CommonJS file; zod.LICENSE is its license.
//
//go:generate go run ./internal/genzod -out .
//go:embed zod.js
var zodJS string

// zodProgram is zod compiled once, for the Boxes whose code uses it.
var zodProgram = sync.OnceValues(func() (*Program, error) {
	return compile("zod", zodJS, stripSource)
})

// zodFacadeJS is what require('zod') answers: a facade of zod that loads
// zod (zodProgram) into the Box only when code first uses a schema.
//
//go:embed zodfacade.js
var zodFacadeJS string

// zodFactories are the functions of zod's namespaces that build a schema,
// whatever their arguments (checked with zod 4.3.6 in Node and, against
// zod.js, by TestZodFacadeTables), and the class of what they build: the
// facade answers a lazy schema for each. A name is that of a function of
// z, "coerce." one of z.coerce, "iso." one of z.iso. Any other member of
// the namespaces loads zod.
var zodFactories = map[string]string{
	"object": "ZodObject", "strictObject": "ZodObject", "looseObject": "ZodObject",
	"string": "ZodString", "number": "ZodNumber", "boolean": "ZodBoolean", "bigint": "ZodBigInt",
	"date": "ZodDate", "symbol": "ZodSymbol", "null": "ZodNull", "undefined": "ZodUndefined",
	"void": "ZodVoid", "never": "ZodNever", "nan": "ZodNaN", "any": "ZodAny", "unknown": "ZodUnknown",
	"array": "ZodArray", "enum": "ZodEnum", "nativeEnum": "ZodEnum", "literal": "ZodLiteral",
	"union": "ZodUnion", "xor": "ZodXor", "discriminatedUnion": "ZodDiscriminatedUnion",
	"intersection": "ZodIntersection", "tuple": "ZodTuple", "record": "ZodRecord",
	"partialRecord": "ZodRecord", "looseRecord": "ZodRecord", "map": "ZodMap", "set": "ZodSet",
	"promise": "ZodPromise", "lazy": "ZodLazy", "optional": "ZodOptional", "nullable": "ZodNullable",
	"nullish": "ZodOptional", "exactOptional": "ZodExactOptional", "nonoptional": "ZodNonOptional",
	"readonly": "ZodReadonly", "_default": "ZodDefault", "prefault": "ZodPrefault", "catch": "ZodCatch",
	"success": "ZodSuccess", "pipe": "ZodPipe", "transform": "ZodTransform", "preprocess": "ZodPipe",
	"custom": "ZodCustom", "instanceof": "ZodCustom",
	"email": "ZodEmail", "url": "ZodURL", "httpUrl": "ZodURL", "uuid": "ZodUUID", "uuidv4": "ZodUUID",
	"uuidv6": "ZodUUID", "uuidv7": "ZodUUID", "guid": "ZodGUID", "emoji": "ZodEmoji", "nanoid": "ZodNanoID",
	"cuid": "ZodCUID", "cuid2": "ZodCUID2", "ulid": "ZodULID", "xid": "ZodXID", "ksuid": "ZodKSUID",
	"ipv4": "ZodIPv4", "ipv6": "ZodIPv6", "mac": "ZodMAC", "cidrv4": "ZodCIDRv4", "cidrv6": "ZodCIDRv6",
	"base64": "ZodBase64", "base64url": "ZodBase64URL", "e164": "ZodE164", "jwt": "ZodJWT",
	"hostname": "ZodCustomStringFormat", "hex": "ZodCustomStringFormat", "hash": "ZodCustomStringFormat",
	"stringFormat": "ZodCustomStringFormat", "int": "ZodNumberFormat", "int32": "ZodNumberFormat", "uint32": "ZodNumberFormat",
	"float32": "ZodNumberFormat", "float64": "ZodNumberFormat", "int64": "ZodBigIntFormat", "uint64": "ZodBigIntFormat",
	"stringbool": "ZodCodec", "codec": "ZodCodec", "templateLiteral": "ZodTemplateLiteral",
	"file": "ZodFile", "json": "ZodLazy", "keyof": "ZodEnum",
	"coerce.string": "ZodString", "coerce.number": "ZodNumber", "coerce.boolean": "ZodBoolean",
	"coerce.bigint": "ZodBigInt", "coerce.date": "ZodDate",
	"iso.datetime": "ZodISODateTime", "iso.date": "ZodISODate", "iso.time": "ZodISOTime", "iso.duration": "ZodISODuration",
}

// zodBuilder is a set of builder methods of zod's schemas, the methods
// that answer a schema (a new one, or for brand the same), whatever their
// arguments, checked as zodFactories are: each with the class of the
// schema it answers, "" for the class of the schema it is called on.
// Classes are those that have the methods, nil for every class. Methods
// whose answer depends on their arguments (meta: the metadata without
// one), that answer a schema of a class not known from the method's
// (unwrap), that refuse some arguments at once (extract, exclude), or that
// do more than build (register, apply, clone) are not builders: on a lazy
// schema they load zod.
type zodBuilder struct {
	classes []string
	methods map[string]string
}

// zodStringClasses are ZodString and its formats, the classes of the
// string schemas the factories build.
var zodStringClasses = []string{
	"ZodString", "ZodEmail", "ZodURL", "ZodUUID", "ZodGUID", "ZodEmoji", "ZodNanoID", "ZodCUID", "ZodCUID2",
	"ZodULID", "ZodXID", "ZodKSUID", "ZodIPv4", "ZodIPv6", "ZodMAC", "ZodCIDRv4", "ZodCIDRv6", "ZodBase64",
	"ZodBase64URL", "ZodE164", "ZodJWT", "ZodCustomStringFormat", "ZodISODateTime", "ZodISODate", "ZodISOTime",
	"ZodISODuration",
}

// zodBuilders are the builder methods the facade knows.
var zodBuilders = []zodBuilder{
	{nil, map[string]string{
		"optional": "ZodOptional", "exactOptional": "ZodExactOptional", "nullable": "ZodNullable",
		"nullish": "ZodOptional", "nonoptional": "ZodNonOptional", "array": "ZodArray", "or": "ZodUnion",
		"and": "ZodIntersection", "default": "ZodDefault", "prefault": "ZodPrefault", "catch": "ZodCatch",
		"transform": "ZodPipe", "pipe": "ZodPipe", "readonly": "ZodReadonly",
		"describe": "", "refine": "", "superRefine": "", "check": "", "with": "", "overwrite": "", "brand": "",
	}},
	{zodStringClasses, map[string]string{
		"min": "", "max": "", "length": "", "nonempty": "", "regex": "", "includes": "", "startsWith": "",
		"endsWith": "", "lowercase": "", "uppercase": "", "trim": "", "normalize": "", "toLowerCase": "",
		"toUpperCase": "", "slugify": "",
	}},
	{[]string{"ZodString"}, map[string]string{
		"email": "", "url": "", "jwt": "", "emoji": "", "guid": "", "uuid": "", "uuidv4": "", "uuidv6": "",
		"uuidv7": "", "nanoid": "", "cuid": "", "cuid2": "", "ulid": "", "base64": "", "base64url": "",
		"xid": "", "ksuid": "", "ipv4": "", "ipv6": "", "cidrv4": "", "cidrv6": "", "e164": "",
		"datetime": "", "date": "", "time": "", "duration": "",
	}},
	{[]string{"ZodNumber", "ZodNumberFormat", "ZodBigInt", "ZodBigIntFormat"}, map[string]string{
		"gt": "", "gte": "", "lt": "", "lte": "", "min": "", "max": "", "positive": "", "negative": "",
		"nonnegative": "", "nonpositive": "", "multipleOf": "",
	}},
	{[]string{"ZodNumber", "ZodNumberFormat"}, map[string]string{"int": "", "step": "", "finite": "", "safe": ""}},
	{[]string{"ZodDate", "ZodFile"}, map[string]string{"min": "", "max": ""}},
	{[]string{"ZodArray"}, map[string]string{"min": "", "max": "", "length": "", "nonempty": ""}},
	{[]string{"ZodMap", "ZodSet"}, map[string]string{"min": "", "max": "", "size": "", "nonempty": ""}},
	{[]string{"ZodObject"}, map[string]string{
		"extend": "", "safeExtend": "", "merge": "", "pick": "", "omit": "", "partial": "", "required": "",
		"strict": "", "strip": "", "passthrough": "", "loose": "", "catchall": "", "keyof": "ZodEnum",
	}},
	{[]string{"ZodTuple"}, map[string]string{"rest": ""}},
}

// zodNames are the own property names of the real zod's module, of its
// namespace z, and of z.coerce and z.iso, in their order.
type zodNames struct {
	Module, Namespace, Coerce, ISO []string
}

// readZodNames loads zod into a VM of its own and reads its names.
func readZodNames() (zodNames, error) {
	var names zodNames
	p, err := zodProgram()
	if err != nil {
		return names, err
	}
	vm, err := quickjs.NewVM()
	if err != nil {
		return names, err
	}
	defer vm.Close()
	vm.SetMemoryLimit(DefaultMemory)
	fn, err := vm.EvalBytecodeValue(p.bytecode)
	if err != nil {
		return names, err
	}
	// EvalThis frees fn.
	v, err := vm.EvalThis(fn, `(() => {
		const module = { exports: {} };
		this(module.exports, (id) => { throw new Error('zod requires ' + id); }, module);
		const m = module.exports, names = Object.getOwnPropertyNames;
		return JSON.stringify({ Module: names(m), Namespace: names(m.z), Coerce: names(m.z.coerce), ISO: names(m.z.iso) });
	})()`, quickjs.EvalGlobal)
	if err != nil {
		return names, err
	}
	s, _ := v.(string)
	if err := json.Unmarshal([]byte(s), &names); err != nil {
		return names, err
	}
	return names, nil
}

// zodFacade is the bytecode of the facade, made at the first require of
// zod in the process: zodfacade.js, after a first line that defines what
// it reads from the real zod (its names, read once in a VM of its own)
// and the tables above. An error means require('zod') answers the real
// zod at once, as before the facade.
var zodFacade = sync.OnceValues(func() ([]byte, error) {
	names, err := readZodNames()
	if err != nil {
		return nil, err
	}
	gen, err := zodFacadeHead(names)
	if err != nil {
		return nil, err
	}
	head, err := setupHead("intrinsics, host")
	if err != nil {
		return nil, err
	}
	vm, err := quickjs.NewVM()
	if err != nil {
		return nil, err
	}
	defer vm.Close()
	return compileNamed(vm, "jsbox/zodfacade.js", head+gen+zodFacadeJS+"\n})", stripSource)
})

// zodFacadeHead is the first line of zodfacade.js: moduleNames,
// namespaceNames, coerceNames and isoNames, functions that answer the
// names of the real zod (an array each, made when first needed), and
// tables, a function that answers the tables: factories, for z, z.coerce
// and z.iso, the class each factory builds; builders, the class of what
// each builder method every schema has answers; classes, for each class,
// the class of what each of its other builder methods answers. "" is the
// class called on. All objects without a prototype. It checks that each
// factory is a function of the names.
func zodFacadeHead(names zodNames) (string, error) {
	var b strings.Builder
	for _, n := range []struct {
		name  string
		names []string
	}{{"moduleNames", names.Module}, {"namespaceNames", names.Namespace}, {"coerceNames", names.Coerce}, {"isoNames", names.ISO}} {
		js, err := json.Marshal(n.names)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "const %s = () => %s; ", n.name, js)
	}
	for _, want := range []string{"z", "default", "coerce", "iso", "__esModule"} {
		if !slices.Contains(names.Module, want) {
			return "", fmt.Errorf("jsbox: zod has no %s", want)
		}
	}

	factories := [3]map[string]string{{}, {}, {}}
	for name, class := range zodFactories {
		ns, fn := 0, name
		from := names.Namespace
		if rest, ok := strings.CutPrefix(name, "coerce."); ok {
			ns, fn, from = 1, rest, names.Coerce
		} else if rest, ok := strings.CutPrefix(name, "iso."); ok {
			ns, fn, from = 2, rest, names.ISO
		}
		if !slices.Contains(from, fn) {
			return "", fmt.Errorf("jsbox: zod has no factory %s", name)
		}
		factories[ns][fn] = class
	}
	b.WriteString("const tables = () => ({ __proto__: null, factories: [")
	for i, f := range factories {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(jsTable(f))
	}
	b.WriteString("], builders: ")

	// The methods of each class but those of every class; classes whose
	// methods are the same share one object.
	perClass := map[string]map[string]string{}
	for _, g := range zodBuilders {
		if g.classes == nil {
			b.WriteString(jsTable(g.methods))
			continue
		}
		for _, c := range g.classes {
			if perClass[c] == nil {
				perClass[c] = map[string]string{}
			}
			for m, r := range g.methods {
				if old, ok := perClass[c][m]; ok && old != r {
					return "", fmt.Errorf("jsbox: zod builder %s.%s: two classes", c, m)
				}
				perClass[c][m] = r
			}
		}
	}
	b.WriteString(", classes: ")
	shared := map[string]string{} // table → its variable
	var defs strings.Builder
	var classes strings.Builder
	classes.WriteString("{ __proto__: null")
	for _, c := range slices.Sorted(maps.Keys(perClass)) {
		t := jsTable(perClass[c])
		v, ok := shared[t]
		if !ok {
			v = fmt.Sprintf("c%d", len(shared))
			shared[t] = v
			fmt.Fprintf(&defs, "const %s = %s; ", v, t)
		}
		fmt.Fprintf(&classes, ", %s: %s", jsString(c), v)
	}
	classes.WriteString(" }")
	b.WriteString("(() => { " + defs.String() + "return " + classes.String() + "; })() }); ")
	return b.String(), nil
}

// jsTable is m as a JavaScript object without a prototype, its keys in
// order.
func jsTable(m map[string]string) string {
	var b strings.Builder
	b.WriteString("{ __proto__: null")
	for _, k := range slices.Sorted(maps.Keys(m)) {
		fmt.Fprintf(&b, ", %s: %s", jsString(k), jsString(m[k]))
	}
	b.WriteString(" }")
	return b.String()
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
