package jsbox_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/embedauth/connect/internal/jsbox"
)

// A Box runs a CommonJS module as the nango CLI compiles a function, and
// stops code that runs past its deadline.
func Example() {
	b, err := jsbox.New(jsbox.Options{
		Limits:  jsbox.Limits{Memory: 32 << 20, Timeout: 100 * time.Millisecond},
		Console: func(level, msg string) { fmt.Println(level+":", msg) },
	})
	if err != nil {
		panic(err)
	}
	defer b.Close()
	err = b.Load("action.cjs", `module.exports.default = { type: 'action', exec: async (nango, input) => input.a + input.b };`)
	if err != nil {
		panic(err)
	}
	v, err := b.Eval(`let sum; require('action.cjs').default.exec(null, { a: 2, b: 3 }).then((v) => { sum = v; console.log('sum', v); }); 1`)
	fmt.Println(v, err)
	_, err = b.Eval(`for (;;) {}`)
	fmt.Println(errors.Is(err, jsbox.ErrTimeout))
	_, err = b.Eval(`require('fs')`)
	fmt.Println(err)
	// Output:
	// log: sum 5
	// 1 <nil>
	// true
	// Error: Cannot find module 'fs': functions may require only the modules the host provides
}

// A deployed function is compiled once and run in a fresh Box each time.
// The host gives it a function of its own (here a fake proxy); the
// function backs off with setTimeout, validates with zod and builds URLs;
// the evaluation awaits the promise exec returns.
func ExampleCompile() {
	fn, err := jsbox.Compile("github-list-issues.cjs", `"use strict";
const { z } = require('zod');
const crypto = require('crypto');
const Input = z.object({ owner: z.string().min(1), repo: z.string().min(1) });
module.exports.default = {
	type: 'action',
	exec: async (nango, input) => {
		const { owner, repo } = Input.parse(input);
		const url = new URL('/repos/' + owner + '/' + repo + '/issues', 'https://api.github.com');
		url.searchParams.set('per_page', '2');
		for (let attempt = 0; ; attempt++) {
			try {
				return { url: url.href, issues: await nango.proxy({ endpoint: url.pathname + url.search }) };
			} catch (e) {
				if (e.response?.status !== 429 || attempt === 2) throw e;
				await new Promise((resolve) => setTimeout(resolve, 10 * 2 ** attempt));
			}
		}
	},
	etag: (body) => crypto.createHash('sha256').update(JSON.stringify(body)).digest('hex').slice(0, 12),
};`)
	if err != nil {
		panic(err)
	}
	for _, input := range []string{`{ owner: 'golang', repo: 'go' }`, `{ owner: '', repo: 'go' }`} {
		b, err := jsbox.New(jsbox.Options{Limits: jsbox.Limits{Timeout: 10 * time.Second}})
		if err != nil {
			panic(err)
		}
		calls := 0
		err = b.Func("proxy", func(args []any) (any, error) {
			if calls++; calls == 1 {
				return nil, &jsbox.Throw{JSON: []byte(`{"message":"Request failed with status code 429","response":{"status":429}}`)}
			}
			return []map[string]any{{"number": 1}, {"number": 2}}, nil
		})
		if err == nil {
			err = b.LoadProgram(fn)
		}
		if err != nil {
			panic(err)
		}
		v, err := b.Eval(`const f = require('github-list-issues.cjs').default;
			f.exec({ proxy: async (config) => proxy(config) }, ` + input + `).then((out) => JSON.stringify(out) + ' ' + f.etag(out))`)
		fmt.Println(v, err != nil, calls)
		b.Close()
	}
	// Output:
	// {"url":"https://api.github.com/repos/golang/go/issues?per_page=2","issues":[{"number":1},{"number":2}]} 4976b226d67d false 2
	// <nil> true 0
}
