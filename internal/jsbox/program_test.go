package jsbox_test

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/embedauth/connect/internal/jsbox"
	"modernc.org/quickjs"
)

const throwingModule = `"use strict";
function f(a) {
  return a.b.c;
}
module.exports = { f, line: 5 };`

// TestStackNamesTheFile: errors thrown in a module loaded from source or
// from a Program name the module's file and the source's line in their
// stack; a syntax error names them in its fields.
func TestStackNamesTheFile(t *testing.T) {
	t.Parallel()
	p, err := jsbox.Compile("fn.cjs", throwingModule)
	if err != nil {
		t.Fatal(err)
	}
	for i, load := range []func(b *jsbox.Box) error{
		func(b *jsbox.Box) error { return b.Load("fn.cjs", throwingModule) },
		func(b *jsbox.Box) error { return b.LoadProgram(p) },
		nil, // required from Options.Programs
	} {
		opts := jsbox.Options{}
		if load == nil {
			opts.Programs = []*jsbox.Program{p}
		}
		b := newBox(t, opts)
		if load != nil {
			if err := load(b); err != nil {
				t.Fatal(i, err)
			}
		}
		_, err := b.Eval(`require('fn.cjs').f({})`)
		var qe *quickjs.Error
		if !errors.As(err, &qe) || !strings.Contains(qe.Stack, "at f (fn.cjs:3:") {
			t.Errorf("error %v; stack %q, want a frame at f (fn.cjs:3:", err, stackOf(qe))
		}
		// The bytecode keeps the source, for toString as Node has it.
		if v, err := b.Eval(`String(require('fn.cjs').f)`); err != nil || v != "function f(a) {\n  return a.b.c;\n}" {
			t.Errorf("toString: %q, %v", v, err)
		}
	}

	// Columns of the first line are ModuleColumnOffset to the right.
	if c1, c2 := column(t, "col.cjs", "null.x;"), column(t, "col.cjs", "\nnull.x;"); c1 != c2+jsbox.ModuleColumnOffset {
		t.Errorf("column %d on the first line, %d on the second", c1, c2)
	}

	_, err = jsbox.Compile("bad.cjs", "\"use strict\";\n\nlet x = ;")
	var qe *quickjs.Error
	if !errors.As(err, &qe) || qe.Name != "SyntaxError" || qe.FileName != "bad.cjs" || qe.LineNumber != 3 {
		t.Errorf("syntax error %#v", qe)
	}
	b := newBox(t, jsbox.Options{Modules: map[string]string{"bad.cjs": "\nlet x = ;"}})
	if _, err := b.Eval(`require('bad.cjs')`); err == nil || !strings.Contains(err.Error(), "Cannot load module 'bad.cjs': SyntaxError") || !strings.Contains(err.Error(), "(bad.cjs:2:") {
		t.Errorf("a Module that does not compile: %v", err)
	}
}

// column is the column of the frame in name of the error src throws
// when loaded as name.
func column(t *testing.T, name, src string) int {
	t.Helper()
	err := newBox(t, jsbox.Options{}).Load(name, src)
	var qe *quickjs.Error
	if !errors.As(err, &qe) {
		t.Fatalf("error %v", err)
	}
	m := regexp.MustCompile(regexp.QuoteMeta(name) + `:\d+:(\d+)\)`).FindStringSubmatch(qe.Stack)
	if m == nil {
		t.Fatalf("stack %q", qe.Stack)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

func stackOf(e *quickjs.Error) string {
	if e == nil {
		return ""
	}
	return e.Stack
}

// TestProgramManyBoxes: one Program runs in many Boxes at once, each with
// its own module state: the bytecode is shared read-only.
func TestProgramManyBoxes(t *testing.T) {
	t.Parallel()
	p, err := jsbox.Compile("counter.cjs", `let n = 0; exports.next = () => ++n; exports.name = module.id;`)
	if err != nil {
		t.Fatal(err)
	}
	if p.Name() != "counter.cjs" || p.Size() == 0 {
		t.Errorf("Name %q, Size %d", p.Name(), p.Size())
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 8 {
		wg.Go(func() {
			for i := range 8 {
				b, err := jsbox.New(jsbox.Options{})
				if err != nil {
					errs <- err
					return
				}
				if err := b.LoadProgram(p); err != nil {
					errs <- err
				} else if v, err := b.Eval(`const c = require('counter.cjs'); c.next(); c.next()`); err != nil || v != 2 {
					errs <- fmt.Errorf("goroutine %d, box %d: %v, %v", g, i, v, err)
				}
				b.Close()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestModulesLazy: Modules and Programs run only when required, once;
// a module that throws while loading is not kept, as in Node; loading a
// name twice is an error.
func TestModulesLazy(t *testing.T) {
	t.Parallel()
	p, err := jsbox.Compile("p.cjs", `globalThis.runs = (globalThis.runs || 0) + 1; module.exports = this === exports;`)
	if err != nil {
		t.Fatal(err)
	}
	b := newBox(t, jsbox.Options{
		Programs: []*jsbox.Program{p},
		Modules: map[string]string{
			"broken": `globalThis.tries = (globalThis.tries || 0) + 1; throw new Error('broken');`,
			"p.cjs":  `module.exports = 'the Module, not the Program';`,
		},
	})
	if v, err := b.Eval(`typeof runs`); err != nil || v != "undefined" {
		t.Errorf("before require: %v, %v", v, err)
	}
	if v, err := b.Eval(`[require('p.cjs'), require('p.cjs'), runs].join()`); err != nil || v != "true,true,1" {
		t.Errorf("require: %v, %v", v, err)
	}
	if v, err := b.Eval(asNode(`require('broken')`) + ` + ' ' + ` + asNode(`require('broken')`) + ` + ' ' + tries`); err != nil || v != "throws Error: broken throws Error: broken 2" {
		t.Errorf("a module that throws: %v, %v", v, err)
	}
	if err := b.LoadProgram(p); err == nil {
		t.Error("LoadProgram of a name already defined: no error")
	}
	if err := b.Load("other.cjs", `exports.x = 1;`); err != nil {
		t.Error(err)
	}
	if err := b.Load("other.cjs", `exports.x = 2;`); err == nil {
		t.Error("Load twice: no error")
	}
}
