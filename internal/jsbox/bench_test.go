package jsbox_test

import (
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/embedauth/connect/internal/jsbox"
	"modernc.org/quickjs"
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

// BenchmarkZod: a fresh Box that requires zod and parses with it, zod
// loaded from the bytecode compiled once per process (as require('zod')
// loads it) against zod compiled from its source in each Box (Load of
// zod.js). Variants:
//   - box: a fresh Box that does not require zod, what every run pays.
//   - bytecode, source: the two ways, each on its own.
//   - ratio: both interleaved in blocks of 10 in one run; it reports
//     bytecode-ns/op, source-ns/op and ratio (source / bytecode), and
//     prints them.
func BenchmarkZod(b *testing.B) {
	src, err := os.ReadFile("zod.js")
	if err != nil {
		b.Fatal(err)
	}
	const use = `const { z } = require(%q); z.object({ id: z.string().min(1), n: z.number().optional() }).parse({ id: 'x', extra: 1 }).id`
	run := func(b *testing.B, load func(*jsbox.Box) (string, error)) {
		box, err := jsbox.New(jsbox.Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer box.Close()
		name, err := load(box)
		if err != nil {
			b.Fatal(err)
		}
		if v, err := box.Eval(fmt.Sprintf(use, name)); err != nil || v != "x" {
			b.Fatal(v, err)
		}
	}
	bytecode := func(b *testing.B) {
		run(b, func(*jsbox.Box) (string, error) { return "zod", nil })
	}
	source := func(b *testing.B) {
		run(b, func(box *jsbox.Box) (string, error) { return "zod-source", box.Load("zod-source", string(src)) })
	}
	bytecode(b) // compiles zod once, before any timing
	b.Run("box", func(b *testing.B) {
		for b.Loop() {
			box, err := jsbox.New(jsbox.Options{})
			if err != nil {
				b.Fatal(err)
			}
			box.Close()
		}
	})
	b.Run("bytecode", func(b *testing.B) {
		for b.Loop() {
			bytecode(b)
		}
	})
	b.Run("source", func(b *testing.B) {
		for b.Loop() {
			source(b)
		}
	})
	b.Run("ratio", func(b *testing.B) {
		const block = 10
		var spent [2]time.Duration
		for start := 0; start < b.N; start += block {
			end := min(start+block, b.N)
			for k, op := range []func(*testing.B){bytecode, source} {
				t := time.Now()
				for range end - start {
					op(b)
				}
				spent[k] += time.Since(t)
			}
		}
		b.StopTimer()
		perOp := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(b.N) }
		bc, sc := perOp(spent[0]), perOp(spent[1])
		b.ReportMetric(bc, "bytecode-ns/op")
		b.ReportMetric(sc, "source-ns/op")
		b.ReportMetric(sc/bc, "ratio")
		if b.N >= block {
			fmt.Printf("fresh Box + zod: from bytecode %.2f ms/op, from source %.2f ms/op, ratio %.1f (N=%d)\n", bc/1e6, sc/1e6, sc/bc, b.N)
		}
	})
}

// BenchmarkNew: what a fresh Box costs over the engine's own VM, New then
// Close against quickjs.NewVM then Close, interleaved in blocks of 10 in
// one run (the machine's load moves both alike). It reports vm-ns/op and
// box-ns/op, the medians over the blocks (a block that a burst of load
// slowed does not move them), ratio (box / vm), and mean-ratio, the ratio
// of the means; and prints them. Sub-benchmarks time each alone, and the
// Close of each alone.
func BenchmarkNew(b *testing.B) {
	vm := func(b *testing.B) {
		m, err := quickjs.NewVM()
		if err != nil {
			b.Fatal(err)
		}
		m.Close()
	}
	box := func(b *testing.B) {
		x, err := jsbox.New(jsbox.Options{})
		if err != nil {
			b.Fatal(err)
		}
		x.Close()
	}
	b.Run("vm", func(b *testing.B) {
		for b.Loop() {
			vm(b)
		}
	})
	b.Run("box", func(b *testing.B) {
		for b.Loop() {
			box(b)
		}
	})
	b.Run("close", func(b *testing.B) {
		b.StopTimer()
		for range b.N {
			x, err := jsbox.New(jsbox.Options{})
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			x.Close()
			b.StopTimer()
		}
	})
	b.Run("vm-close", func(b *testing.B) {
		b.StopTimer()
		for range b.N {
			m, err := quickjs.NewVM()
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			m.Close()
			b.StopTimer()
		}
	})
	b.Run("ratio", func(b *testing.B) {
		const block = 10
		var spent [2]time.Duration
		var blocks [2][]float64 // ns per op of each block
		for start := 0; start < b.N; start += block {
			end := min(start+block, b.N)
			for k, op := range []func(*testing.B){vm, box} {
				t := time.Now()
				for range end - start {
					op(b)
				}
				d := time.Since(t)
				spent[k] += d
				blocks[k] = append(blocks[k], float64(d.Nanoseconds())/float64(end-start))
			}
		}
		b.StopTimer()
		median := func(x []float64) float64 {
			slices.Sort(x)
			return x[len(x)/2]
		}
		v, x := median(blocks[0]), median(blocks[1])
		mean := float64(spent[1]) / float64(spent[0])
		b.ReportMetric(v, "vm-ns/op")
		b.ReportMetric(x, "box-ns/op")
		b.ReportMetric(x/v, "ratio")
		b.ReportMetric(mean, "mean-ratio")
		if b.N >= block {
			fmt.Printf("fresh Box: quickjs.NewVM+Close %.0f µs/op, jsbox.New+Close %.0f µs/op (medians of blocks of %d), ratio %.2f (of the means %.2f, N=%d)\n",
				v/1e3, x/1e3, block, x/v, mean, b.N)
		}
	})
}

// BenchmarkProgram: a fresh Box, a small Program (compiled once) loaded
// into it, one of its functions called for a value, Close: the least a
// run of a deployed function does.
func BenchmarkProgram(b *testing.B) {
	p, err := jsbox.Compile("fn.cjs", `"use strict";
exports.run = (input) => ({ id: input.id, ok: true, n: [1, 2, 3].map((n) => n * 2).length });`)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		box, err := jsbox.New(jsbox.Options{Programs: []*jsbox.Program{p}})
		if err != nil {
			b.Fatal(err)
		}
		v, err := box.Eval(`JSON.stringify(require('fn.cjs').run({ id: 'x' }))`)
		if err != nil || v != `{"id":"x","ok":true,"n":3}` {
			b.Fatal(v, err)
		}
		box.Close()
	}
}

// BenchmarkFirstUse: a fresh Box whose code first uses what a setup file
// defines, which loads it (the Box's cost included): none, Buffer, URL,
// crypto (which loads Buffer too), a timer, console.
func BenchmarkFirstUse(b *testing.B) {
	for _, c := range []struct{ name, src string }{
		{"none", `1`},
		{"Buffer", `typeof Buffer`},
		{"URL", `typeof URL`},
		{"crypto", `typeof require('crypto')`},
		{"setTimeout", `clearTimeout(setTimeout(() => {}, 1))`},
		{"console", `console.log('x')`},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				box, err := jsbox.New(jsbox.Options{})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := box.Eval(c.src); err != nil {
					b.Fatal(err)
				}
				box.Close()
			}
		})
	}
}

// noopCLI is a no-op action as the nango CLI compiles it from
// createAction (testdata/noop_cli.cjs, which the root package's benchmarks
// read too): zod required, and its input and output schemas built, at the
// module's top level; noopHand is the same action written by hand, without
// zod.
var noopCLI = func() string {
	b, err := os.ReadFile("testdata/noop_cli.cjs")
	if err != nil {
		panic(err)
	}
	return string(b)
}()

const (
	noopHand = `"use strict";
var noop_exports = {};
module.exports = noop_exports;
module.exports.default = { type: 'action', description: 'does nothing', exec: async (nango, input) => ({ ok: true }) };
`
)

// BenchmarkCLINoop: what a run of a no-op action costs, a fresh Box, the
// action's module (compiled once) loaded, its exec called, Close: as the
// nango CLI compiles it (zod required and its schemas built, never used)
// against the same action written by hand. Both are interleaved in blocks
// of 10 in one run; it reports hand-ns/op and cli-ns/op, the medians over
// the blocks, and ratio (cli / hand), and prints them. Sub-benchmarks time
// each alone.
func BenchmarkCLINoop(b *testing.B) {
	run := func(src string) func(*testing.B) {
		p, err := jsbox.Compile("noop.cjs", src)
		if err != nil {
			b.Fatal(err)
		}
		return func(b *testing.B) {
			box, err := jsbox.New(jsbox.Options{Programs: []*jsbox.Program{p}})
			if err != nil {
				b.Fatal(err)
			}
			v, err := box.Eval(`require('noop.cjs').default.exec(null, {}).then((v) => v.ok)`)
			if err != nil || v != true {
				b.Fatal(v, err)
			}
			box.Close()
		}
	}
	hand, cli := run(noopHand), run(noopCLI)
	cli(b) // compiles zod once, before any timing
	b.Run("hand", func(b *testing.B) {
		for b.Loop() {
			hand(b)
		}
	})
	b.Run("cli", func(b *testing.B) {
		for b.Loop() {
			cli(b)
		}
	})
	b.Run("ratio", func(b *testing.B) {
		const block = 10
		var blocks [2][]float64 // ns per op of each block
		for start := 0; start < b.N; start += block {
			end := min(start+block, b.N)
			for k, op := range []func(*testing.B){hand, cli} {
				t := time.Now()
				for range end - start {
					op(b)
				}
				blocks[k] = append(blocks[k], float64(time.Since(t).Nanoseconds())/float64(end-start))
			}
		}
		b.StopTimer()
		median := func(x []float64) float64 {
			slices.Sort(x)
			return x[len(x)/2]
		}
		h, c := median(blocks[0]), median(blocks[1])
		b.ReportMetric(h, "hand-ns/op")
		b.ReportMetric(c, "cli-ns/op")
		b.ReportMetric(c/h, "ratio")
		if b.N >= block {
			fmt.Printf("no-op action, fresh Box: by hand %.0f µs/op, as the CLI compiles it %.0f µs/op (medians of blocks of %d), ratio %.2f (N=%d)\n",
				h/1e3, c/1e3, block, c/h, b.N)
		}
	})
}
