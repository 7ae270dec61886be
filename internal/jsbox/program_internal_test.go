package jsbox

import (
	"bytes"
	"testing"
)

// TestBytecodeReadOnly: running a Program leaves its bytecode as it was:
// the engine reads a copy.
func TestBytecodeReadOnly(t *testing.T) {
	t.Parallel()
	p, err := Compile("m.cjs", `exports.n = 1; exports.s = 'x'.repeat(3);`)
	if err != nil {
		t.Fatal(err)
	}
	zod, err := zodProgram()
	if err != nil {
		t.Fatal(err)
	}
	before := bytes.Clone(p.bytecode)
	zodBefore := bytes.Clone(zod.bytecode)
	for range 3 {
		b, err := New(Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := b.LoadProgram(p); err != nil {
			t.Fatal(err)
		}
		if v, err := b.Eval(`require('m.cjs').s + typeof require('zod').z.object`); err != nil || v != "xxxfunction" {
			t.Errorf("%v, %v", v, err)
		}
		b.Close()
	}
	if !bytes.Equal(before, p.bytecode) || !bytes.Equal(zodBefore, zod.bytecode) {
		t.Error("the bytecode changed")
	}
}
