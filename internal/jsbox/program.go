package jsbox

import (
	"errors"
	"fmt"
	"reflect"
	"unsafe"

	"modernc.org/libc"
	lib "modernc.org/libquickjs"
	"modernc.org/quickjs"
)

// Program is a CommonJS module compiled once to the engine's bytecode, to
// be loaded into many Boxes ([Box.LoadProgram], [Options.Programs]):
// loading it skips parsing. It is read-only and safe for concurrent use:
// each Box reads a copy of its bytecode into its own engine. The bytecode
// belongs to this version of the engine; it is never read from elsewhere.
// It keeps the module's name as its file name, its line numbers for the
// stack traces of errors thrown in it, and its source for the toString of
// its functions.
type Program struct {
	name     string
	bytecode []byte
}

// Name is the module's name, the file name of its stack frames.
func (p *Program) Name() string { return p.name }

// Size is the length of the bytecode, in bytes.
func (p *Program) Size() int { return len(p.bytecode) }

// moduleHead and moduleTail wrap the source of a CommonJS module into a
// function of its free variables, as Node wraps it. The head is on the
// source's first line, so that line numbers are the source's; columns of
// that first line are shifted by len(moduleHead).
const (
	moduleHead = "(function (exports, require, module) {"
	moduleTail = "\n})"
)

// ModuleColumnOffset is how far right the columns of the first line of a
// module's source are in stack traces: the length of the wrapper Node-like
// CommonJS loading puts before it on that line. Lines are the source's.
const ModuleColumnOffset = len(moduleHead)

// Compile compiles src, a CommonJS module (what the nango CLI compiles a
// function to), to bytecode, as the module name. It runs none of it: a
// syntax error is its only error.
func Compile(name, src string) (*Program, error) {
	return compile(name, src, keepAll)
}

// compile is Compile, stripping what strip says (stripSource for the
// modules the Box provides: their functions show as built-ins do).
func compile(name, src string, strip stripping) (*Program, error) {
	vm, err := quickjs.NewVM()
	if err != nil {
		return nil, fmt.Errorf("jsbox: %w", err)
	}
	defer vm.Close()
	vm.SetMemoryLimit(DefaultMemory)
	bc, err := compileNamed(vm, name, moduleHead+src+moduleTail, strip)
	if err != nil {
		return nil, err
	}
	return &Program{name: name, bytecode: bc}, nil
}

// errNoEngineAccess is compileNamed's error when the engine's internals it
// reads are not where it looks for them (a newer modernc.org/quickjs).
var errNoEngineAccess = errors.New("jsbox: cannot reach the engine's context")

// engineContext returns the C context of vm and its thread-local state.
//
// modernc.org/quickjs compiles every script as the file "<eval>": neither
// VM.Eval nor VM.Compile takes a file name. To keep the names of modules
// in stack traces, compileNamed calls the engine's JS_Eval itself, with the
// context and the thread-local state the VM keeps in unexported fields,
// read here by reflection. It only parses (JS_EVAL_FLAG_COMPILE_ONLY): no
// JavaScript runs outside the VM's own entry points. TestStackNamesTheFile
// fails if a release of modernc.org/quickjs moves them.
func engineContext(vm *quickjs.VM) (tls *libc.TLS, ctx uintptr, ok bool) {
	v := reflect.ValueOf(vm).Elem()
	c := v.FieldByName("cContext")
	rt := v.FieldByName("runtime")
	if !c.IsValid() || c.Kind() != reflect.Uintptr || !rt.IsValid() || rt.Kind() != reflect.Pointer || rt.IsNil() {
		return nil, 0, false
	}
	t := rt.Elem().FieldByName("tls")
	if !t.IsValid() || t.Type() != reflect.TypeFor[*libc.TLS]() || t.IsNil() {
		return nil, 0, false
	}
	return (*libc.TLS)(t.UnsafePointer()), uintptr(c.Uint()), true
}

// stripping says what compileNamed leaves out of the bytecode.
type stripping int32

const (
	// keepAll keeps the source text (what Function.prototype.toString
	// shows) and the line and column numbers (of stack traces).
	keepAll stripping = 0
	// stripSource leaves out the source text: the toString of the
	// functions is then that of built-ins ("function f() { [native code]
	// }"). It weighs as much again as the rest, read into each Box.
	stripSource stripping = lib.MJS_STRIP_SOURCE
	// stripDebug leaves out the source text and the line and column
	// numbers too: stack frames of the functions show their name only, as
	// those of built-ins do.
	stripDebug stripping = lib.MJS_STRIP_SOURCE | lib.MJS_STRIP_DEBUG
)

// compileNamed compiles src, a script, to bytecode as the file name, in
// vm, leaving out what strip says. A syntax error is returned as the
// engine reports it.
func compileNamed(vm *quickjs.VM, name, src string, strip stripping) ([]byte, error) {
	tls, ctx, ok := engineContext(vm)
	if !ok {
		return nil, errNoEngineAccess
	}
	psrc, err := libc.CString(src)
	if err != nil {
		return nil, fmt.Errorf("jsbox: %w", err)
	}
	defer libc.Xfree(tls, psrc)
	pname, err := libc.CString(name)
	if err != nil {
		return nil, fmt.Errorf("jsbox: %w", err)
	}
	defer libc.Xfree(tls, pname)

	lib.XJS_SetStripInfo(tls, lib.XJS_GetRuntime(tls, ctx), int32(strip))
	fn := lib.XJS_Eval(tls, ctx, psrc, libc.Tsize_t(len(src)), pname, lib.MJS_EVAL_TYPE_GLOBAL|lib.MJS_EVAL_FLAG_COMPILE_ONLY)
	if lib.XJS_HasException(tls, ctx) != 0 {
		return nil, classify(rethrow(vm, tls, ctx))
	}
	defer lib.XFreeValue(tls, ctx, fn)

	plen := tls.Alloc(int(unsafe.Sizeof(libc.Tsize_t(0))))
	defer tls.Free(int(unsafe.Sizeof(libc.Tsize_t(0))))
	p := lib.XJS_WriteObject(tls, ctx, plen, fn, lib.MJS_WRITE_OBJ_BYTECODE)
	if p == 0 {
		if lib.XJS_HasException(tls, ctx) != 0 {
			return nil, classify(rethrow(vm, tls, ctx))
		}
		return nil, errors.New("jsbox: cannot write the bytecode")
	}
	defer lib.Xjs_free(tls, ctx, p)
	n := int(*(*libc.Tsize_t)(cMemory(plen)))
	return append([]byte(nil), unsafe.Slice((*byte)(cMemory(p)), n)...), nil
}

// cMemory is the address p, of memory the engine allocated (C memory, not
// the Go heap, so that no Go pointer rule applies to it), as a pointer.
// unsafe.Add instead of a conversion: go vet takes every conversion of a
// uintptr to a pointer for a misuse.
func cMemory(p uintptr) unsafe.Pointer { return unsafe.Add(nil, p) }

// rethrow takes the exception pending in the engine and returns it as
// the VM's own entry points report an exception: it hands it to a script,
// which throws it again.
func rethrow(vm *quickjs.VM, tls *libc.TLS, ctx uintptr) error {
	exc := lib.XJS_GetException(tls, ctx)
	global := lib.XJS_GetGlobalObject(tls, ctx)
	defer lib.XFreeValue(tls, ctx, global)
	key, err := libc.CString(compileErrorKey)
	if err != nil {
		lib.XFreeValue(tls, ctx, exc)
		return fmt.Errorf("jsbox: %w", err)
	}
	defer libc.Xfree(tls, key)
	if lib.XJS_SetPropertyStr(tls, ctx, global, key, exc) < 0 { // takes exc
		lib.XFreeValue(tls, ctx, lib.XJS_GetException(tls, ctx))
		return errors.New("jsbox: the source does not compile (its error cannot be read)")
	}
	_, err = vm.Eval(`(() => { const e = globalThis.`+compileErrorKey+`; delete globalThis.`+compileErrorKey+`; throw e; })()`, quickjs.EvalGlobal)
	if err == nil {
		err = errors.New("jsbox: the engine failed without an exception")
	}
	return err
}

const compileErrorKey = "__jsbox_compile_error"
