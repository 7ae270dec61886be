//go:build !race

package e2e

// raceBuildFlags are the go build flags of the programs the tests build: none without -race;
// see race_test.go.
var raceBuildFlags []string
