package jsonvalue_test

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/embedauth/connect/internal/jsonvalue"
)

// checkAppend fails unless Append writes v as json.Marshal does, or fails
// where it fails.
func checkAppend(t *testing.T, v any) {
	t.Helper()
	want, wantErr := json.Marshal(v)
	got, err := jsonvalue.Append([]byte("prefix"), v)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("Append(%#v): error %v, json.Marshal's %v", v, err, wantErr)
	}
	if err == nil && !bytes.Equal(got, append([]byte("prefix"), want...)) {
		t.Fatalf("Append(%#v)\n got %s\nwant prefix%s", v, got, want)
	}
}

var trickyStrings = []string{
	"", "plain", `quote " and \ backslash`, "<script>&amp;</script>", "\x00\x01\x1f\x7f", "\b\f\n\r\t",
	"é日本語🎉", "\u2028 and \u2029", "bad \xff utf8 \xc3", "\xed\xa0\x80 surrogate", strings.Repeat("a<", 40),
}

var trickyFloats = []float64{
	0, math.Copysign(0, -1), 1, -1, 0.1, 1e-6, 9.99e-7, 1e-7, 1.5e-10, 1e20, 1e21, 123456789e20, -1e21, 1e300,
	math.MaxFloat64, math.SmallestNonzeroFloat64, 3.141592653589793, 1 << 53, 1e-100, 5e-324,
}

func TestAppendMatchesMarshal(t *testing.T) {
	for _, s := range trickyStrings {
		checkAppend(t, s)
		checkAppend(t, map[string]any{s: s})
		checkAppend(t, map[string]string{s: s, "k": s})
		checkAppend(t, []string{s})
	}
	for _, f := range trickyFloats {
		checkAppend(t, f)
		checkAppend(t, -f)
	}
	for _, v := range []any{
		nil, true, false, map[string]any(nil), map[string]any{}, []any(nil), []any{}, map[string]string(nil),
		[]string(nil), json.Number("12.5e3"), json.Number(""), json.Number("1e400"), json.Number("01"),
		json.Number("1."), json.Number("-"), json.Number("abc"), 42, int64(-7), int32(3), uint64(math.MaxUint64),
		math.NaN(), math.Inf(1), map[string]any{"nan": math.Inf(-1)},
		// Other types go through json.Marshal.
		time.Date(2026, 11, 27, 1, 2, 3, 0, time.UTC), struct {
			A string `json:"a"`
		}{"<b>"}, []int{1, 2}, map[string]int{"b": 2, "a": 1}, json.RawMessage(`{"x": [1, 2]}`),
	} {
		checkAppend(t, v)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		checkAppend(t, randomValue(r, 4))
	}
}

// randomValue returns a decoded JSON value, nested up to depth.
func randomValue(r *rand.Rand, depth int) any {
	switch k := r.IntN(8); {
	case k == 0:
		return nil
	case k == 1:
		return r.IntN(2) == 0
	case k == 2:
		return trickyFloats[r.IntN(len(trickyFloats))] * float64(r.IntN(3)-1)
	case k == 3:
		return r.NormFloat64() * math.Pow(10, float64(r.IntN(60)-30))
	case k == 4 || depth == 0:
		return trickyStrings[r.IntN(len(trickyStrings))]
	case k == 5:
		s := make([]any, r.IntN(4))
		for i := range s {
			s[i] = randomValue(r, depth-1)
		}
		return s
	default:
		m := map[string]any{}
		for range r.IntN(6) {
			m[trickyStrings[r.IntN(len(trickyStrings))]+string(rune('a'+r.IntN(26)))] = randomValue(r, depth-1)
		}
		return m
	}
}

// FuzzAppend: any JSON document, decoded, is written back by Append as
// json.Marshal writes it; any text is written as a string, a key and a
// number as json.Marshal writes them.
func FuzzAppend(f *testing.F) {
	for _, s := range trickyStrings {
		f.Add(s)
	}
	for _, s := range []string{`{"a": [1, 2.5e-8, "x<"], "b": {"c": null, "d": true}}`, `[]`, `1e21`, `"\u2028"`, `-0`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var v any
		if json.Unmarshal([]byte(s), &v) == nil {
			checkAppend(t, v)
		}
		checkAppend(t, s)
		checkAppend(t, map[string]string{s: s})
		checkAppend(t, json.Number(s))
	})
}
