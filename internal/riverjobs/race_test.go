//go:build race

package riverjobs_test

// raceEnabled reports whether the tests run under the race detector, which
// makes modernc.org/sqlite (C translated to Go, checked pointer by pointer)
// some 30 times slower.
const raceEnabled = true
