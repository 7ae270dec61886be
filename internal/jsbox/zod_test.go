package jsbox_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/embedauth/connect/internal/jsbox"
)

// TestZodAsNode: require('zod') is zod 4.3.6 and answers what it answers
// in Node 20: a z.object parse strips unknown keys, safeParse's errors,
// zod 4's messages (z.string().min(1): "Too small: expected string to have
// >=1 characters"), toJSONSchema. testdata/zod_node.json holds each
// expression with Node's answer, written by testdata/zod_node.js. In a
// Box zod cannot compile parsers with new Function, as it does in Node:
// the answers are the same.
func TestZodAsNode(t *testing.T) {
	t.Parallel()
	b := newBox(t, jsbox.Options{})
	for _, c := range nodeCases(t, "zod_node.json", 30) {
		got, err := b.Eval(asNode(c[0]))
		if err != nil || fmt.Sprint(got) != c[1] {
			t.Errorf("%s\n got %q, %v\nnode %q", c[0], got, err, c[1])
		}
	}
}

// TestZodPerBox: each Box has a zod of its own, loaded from the bytecode
// compiled once, also in Boxes made side by side: what code does to its
// zod is not seen in the next Box.
func TestZodPerBox(t *testing.T) {
	t.Parallel()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Go(func() {
			b, err := jsbox.New(jsbox.Options{})
			if err != nil {
				errs <- err
				return
			}
			defer b.Close()
			v, err := b.Eval(fmt.Sprintf(`const { z } = require('zod');
				const seen = typeof z.string().mine;
				z.ZodString.prototype.mine = %d;
				[seen, require('zod') === require('zod'), z.object({ n: z.number() }).parse({ n: %d, x: 1 }).n].join()`, i, i))
			if want := fmt.Sprintf("undefined,true,%d", i); err != nil || v != want {
				errs <- fmt.Errorf("box %d: %v, %v; want %s", i, v, err, want)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestZodReplaced: a Module named zod is what require('zod') answers.
func TestZodReplaced(t *testing.T) {
	t.Parallel()
	b := newBox(t, jsbox.Options{Modules: map[string]string{"zod": `module.exports = { fake: true };`}})
	if v, err := b.Eval(`require('zod').fake`); err != nil || v != true {
		t.Errorf("%v, %v", v, err)
	}
}
