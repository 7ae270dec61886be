//go:build race

package e2e

// raceEnabled is true when this test binary was built with -race; the server is then built
// with -race too, so the end-to-end run also looks for data races in it.
const raceEnabled = true
