//go:build race

package e2e

// raceBuildFlags are the go build flags of the programs the tests build (the reference server,
// the README's examples) when this test binary was built with -race: they are then built with
// -race too, so the end-to-end run also looks for data races in them. As scripts/test gives them: SQLite's
// translated C code is left out of the race detector, and checkptr is off in it, its libc and
// its allocator (see docs/development.md).
var raceBuildFlags = []string{
	"-race",
	"-gcflags=modernc.org/sqlite/lib=-race=false -d=checkptr=0",
	"-gcflags=modernc.org/libquickjs=-race=false -d=checkptr=0",
	"-gcflags=modernc.org/libc/...=-d=checkptr=0",
	"-gcflags=modernc.org/memory=-d=checkptr=0",
}
