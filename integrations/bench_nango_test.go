package integrations

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// nangoProvidersPath is Nango's own providers.yaml as npm ships it
// (@nangohq/providers, pinned in e2e/package.json and installed by
// `npm ci --prefix e2e`). The file (about 1 MB) is not copied into
// testdata: it would be a second, drifting copy of what e2e/package-lock.json
// already pins.
var nangoProvidersPath = filepath.Join("..", "e2e", "node_modules", "@nangohq", "providers", "providers.yaml")

// readNangoProviders returns the file, skipping without it unless CI=true
// or CONNECT_REQUIRE_POSTGRES=1, when its absence is a failure.
func readNangoProviders(tb testing.TB) []byte {
	tb.Helper()
	data, err := os.ReadFile(nangoProvidersPath)
	if err != nil {
		msg := "Nango's providers.yaml is missing (" + err.Error() + "): run `npm ci --prefix e2e` from the repository root"
		if os.Getenv("CI") == "true" || os.Getenv("CONNECT_REQUIRE_POSTGRES") == "1" {
			tb.Fatal(msg + " (required because CI=true or CONNECT_REQUIRE_POSTGRES=1)")
		}
		tb.Skip(msg)
	}
	return data
}

// BenchmarkLoadNangoProviders loads Nango's whole providers.yaml (1,013
// providers in 0.71.10) and builds a lenient catalogue of it over the
// embedded one, as CONNECT_PROVIDERS_FILE does: the time and allocations
// per op are those of a server start. retained-B is the heap the resulting
// catalogue keeps once garbage is collected; peak-heap-B is the largest
// live heap seen during one load (HeapInuse after GC before the load and
// sampled at its end without collecting).
func BenchmarkLoadNangoProviders(b *testing.B) {
	data := readNangoProviders(b)
	def, err := DefaultCatalog()
	if err != nil {
		b.Fatal(err)
	}
	load := func() *Catalog {
		ps, err := Load(bytes.NewReader(data))
		if err != nil {
			b.Fatal(err)
		}
		c, err := BuildCatalog(def, BuildOptions{}, ps...)
		if err != nil {
			b.Fatal(err)
		}
		return c
	}

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	c := load()
	runtime.ReadMemStats(&after)
	peak := after.HeapInuse - before.HeapInuse
	runtime.GC()
	runtime.ReadMemStats(&after)
	retained := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	if c.Len() < 1000 {
		b.Fatalf("catalogue of %d providers; want Nango's (over 1,000) and the embedded ones", c.Len())
	}
	runtime.KeepAlive(c)

	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		load()
	}
	b.ReportMetric(float64(retained), "retained-B")
	b.ReportMetric(float64(peak), "peak-heap-B")
	b.ReportMetric(float64(c.Len()), "providers")
}
