package jsbox

import (
	_ "embed"
	"sync"
)

// zodJS is zod (the version the nango CLI pins, 4.3.6) bundled into one
// CommonJS file; zod.LICENSE is its license.
//
//go:generate go run ./internal/genzod -out .
//go:embed zod.js
var zodJS string

// zodProgram is zod compiled once, for the Boxes whose code requires it.
var zodProgram = sync.OnceValues(func() (*Program, error) {
	return compile("zod", zodJS, stripSource)
})
