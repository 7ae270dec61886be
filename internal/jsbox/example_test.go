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
