//go:build !race

package e2e

// raceEnabled is true when this test binary was built with -race; see race_test.go.
const raceEnabled = false
