package jsbox_test

import (
	"testing"

	"github.com/embedauth/connect/internal/jsbox"
)

// BenchmarkRun: a fresh Box per run, a small action loaded and executed,
// as each run of a deployed function does.
func BenchmarkRun(b *testing.B) {
	const action = `"use strict";
const fn = { type: 'action', exec: async (nango, input) => ({ id: input.id, ok: true, items: [1, 2, 3].map((n) => n * 2) }) };
module.exports.default = fn;`
	b.ReportAllocs()
	for b.Loop() {
		box, err := jsbox.New(jsbox.Options{})
		if err != nil {
			b.Fatal(err)
		}
		if err := box.Load("action.cjs", action); err != nil {
			b.Fatal(err)
		}
		v, err := box.Eval(`let out; require('action.cjs').default.exec(null, { id: 'x' }).then((v) => { out = JSON.stringify(v); }); 1`)
		if err != nil || v != 1 {
			b.Fatal(v, err)
		}
		box.Close()
	}
}
