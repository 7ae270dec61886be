package functions

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/embedauth/connect/store"
	"github.com/google/go-cmp/cmp"
)

func TestCheckpointValidate(t *testing.T) {
	t.Parallel()
	type cursor string
	manyKeys := Checkpoint{}
	for i := range MaxCheckpointKeys {
		manyKeys[fmt.Sprintf("k%03d", i)] = i
	}
	tooMany := Checkpoint{"extra": true}
	for k, v := range manyKeys {
		tooMany[k] = v
	}
	for _, tc := range []struct {
		name string
		c    Checkpoint
		says string // "" when valid
	}{
		{"nil", nil, ""},
		{"empty", Checkpoint{}, ""},
		{"every scalar type", Checkpoint{"s": "x", "f": 1.5, "f32": float32(2), "i": 3, "i8": int8(-4), "u64": uint64(5),
			"n": json.Number("6.5e3"), "b": false, "named": cursor("abc"), "empty": ""}, ""},
		{"100 keys", manyKeys, ""},
		{"2^53", Checkpoint{"i": int64(1 << 53), "neg": -(1 << 53), "n": json.Number("9007199254740992")}, ""},
		{"255 characters", Checkpoint{strings.Repeat("é", 255): 1}, ""},
		{"101 keys", tooMany, "101 keys, more than the maximum of 100"},
		{"empty key", Checkpoint{"": 1}, "a key of the checkpoint is empty"},
		{"long key", Checkpoint{strings.Repeat("k", 256): 1}, "256 characters"},
		{"key with NUL", Checkpoint{"a\x00b": 1}, "U+0000"},
		{"key not UTF-8", Checkpoint{"a\xffb": 1}, "not valid UTF-8"},
		{"nil value", Checkpoint{"a": nil}, `"a" in the checkpoint is null`},
		{"nested object", Checkpoint{"a": map[string]any{"b": 1}}, `"a" in the checkpoint is an object`},
		{"struct", Checkpoint{"a": struct{}{}}, "is an object"},
		{"array", Checkpoint{"a": []any{1}}, `"a" in the checkpoint is an array`},
		{"pointer", Checkpoint{"a": new(int)}, "is a *int"},
		{"NaN", Checkpoint{"a": math.NaN()}, "not a finite number"},
		{"Inf", Checkpoint{"a": math.Inf(-1)}, "not a finite number"},
		{"big int", Checkpoint{"a": int64(1<<53 + 1)}, "beyond 2^53"},
		{"big uint", Checkpoint{"a": uint64(math.MaxUint64)}, "beyond 2^53"},
		{"big json.Number", Checkpoint{"a": json.Number("9007199254740993")}, "beyond 2^53"},
		{"bad json.Number", Checkpoint{"a": json.Number("0x10")}, "not a finite JSON number"},
		{"string json.Number", Checkpoint{"a": json.Number(`"1"`)}, "not a finite JSON number"},
		{"huge json.Number", Checkpoint{"a": json.Number("1e400")}, "not a finite JSON number"},
		{"string with NUL", Checkpoint{"a": "x\x00"}, "U+0000"},
		{"string not UTF-8", Checkpoint{"a": "\xff"}, "not valid UTF-8"},
		{"too large", Checkpoint{"a": strings.Repeat("x", MaxCheckpointSize)}, "more than the maximum of 65536"},
		{"first bad key in order", Checkpoint{"b": nil, "a": []any{}}, `"a"`},
	} {
		err := tc.c.Validate()
		if tc.says == "" {
			if err != nil {
				t.Errorf("%s: Validate() = %v", tc.name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: Validate() = %v, want an error saying %q", tc.name, err, tc.says)
			continue
		}
		if !errors.Is(err, store.ErrInvalid) || store.CodeOf(err) != CodeInvalidCheckpoint {
			t.Errorf("%s: Validate() = %v, want ErrInvalid with code %s", tc.name, err, CodeInvalidCheckpoint)
		}
	}
}

func TestCheckpointEncode(t *testing.T) {
	t.Parallel()
	b, err := Checkpoint(nil).Encode()
	if err != nil || string(b) != "{}" {
		t.Errorf("nil.Encode() = %s, %v; want {}", b, err)
	}
	b, err = Checkpoint{"b": true, "a": "x", "n": 2}.Encode()
	if err != nil || string(b) != `{"a":"x","b":true,"n":2}` {
		t.Errorf("Encode() = %s, %v", b, err)
	}
	if _, err := (Checkpoint{"a": nil}).Encode(); err == nil {
		t.Error("Encode() of an invalid checkpoint: no error")
	}
}

func TestDecodeCheckpoint(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want Checkpoint
		says string
	}{
		{`{}`, Checkpoint{}, ""},
		{` {"cursor":"abc","page":2,"done":false,"ratio":0.5} `, Checkpoint{"cursor": "abc", "page": 2.0, "done": false, "ratio": 0.5}, ""},
		{`{"updated_after":"2024-01-01T00:00:00Z"}`, Checkpoint{"updated_after": "2024-01-01T00:00:00Z"}, ""},
		{`{"a":"\u00e9\ud83d\ude00"}`, Checkpoint{"a": "é😀"}, ""},
		{``, nil, "not a JSON object"},
		{`null`, nil, "not a JSON object"},
		{`[]`, nil, "not a JSON object"},
		{`"x"`, nil, "not a JSON object"},
		{`{"a":1} {}`, nil, "not valid JSON"},
		{`{"a":1`, nil, "not valid JSON"},
		{`{"a":{"b":1}}`, nil, `"a" in the checkpoint is an object`},
		{`{"a":[1]}`, nil, `"a" in the checkpoint is an array`},
		{`{"a":null}`, nil, `"a" in the checkpoint is null`},
		{`{"a":1,"a":2}`, nil, `"a" is given twice`},
		{`{"a":"\u0000"}`, nil, "U+0000"},
		{`{"a":"\ud800"}`, nil, "lone UTF-16 surrogate"},
		{"{\"a\":\"\xff\"}", nil, "not valid UTF-8"},
		{`{"a":1e400}`, nil, "not valid JSON"},
		{`{"a":9007199254740993}`, Checkpoint{"a": 9007199254740992.0}, ""}, // read as float64, as JSON.parse does
		{`{"` + strings.Repeat("k", 256) + `":1}`, nil, "256 characters"},
		{`{"a":"` + strings.Repeat("x", maxCheckpointInput) + `"}`, nil, "more than the maximum of 262144"},
		{`{"a":"` + strings.Repeat("x", MaxCheckpointSize) + `"}`, nil, "more than the maximum of 65536"},
	} {
		got, err := DecodeCheckpoint([]byte(tc.in))
		name := tc.in
		if len(name) > 60 {
			name = name[:60] + "..."
		}
		if tc.says != "" {
			if err == nil || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("DecodeCheckpoint(%s) = %v, %v; want an error saying %q", name, got, err, tc.says)
			} else if store.CodeOf(err) != CodeInvalidCheckpoint {
				t.Errorf("DecodeCheckpoint(%s): code %q, want %s", name, store.CodeOf(err), CodeInvalidCheckpoint)
			}
			continue
		}
		if err != nil {
			t.Errorf("DecodeCheckpoint(%s): %v", name, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("DecodeCheckpoint(%s) (-want +got):\n%s", name, diff)
		}
	}
}

func FuzzDecodeCheckpoint(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":"b","n":1.5,"t":true}`, `{"a":{"b":1}}`, `{"a":1,"a":2}`, `null`,
		`{"a":"\ud83d\ude00"}`, `{"a":-0}`, `{"k":1e308}`, `[1]`, `{"a":"\u0000"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := DecodeCheckpoint(b)
		if err != nil {
			if store.CodeOf(err) != CodeInvalidCheckpoint {
				t.Fatalf("DecodeCheckpoint(%q) = %v: want code %s", b, err, CodeInvalidCheckpoint)
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("DecodeCheckpoint(%q) = %v, which Validate refuses: %v", b, c, err)
		}
		enc, err := c.Encode()
		if err != nil {
			t.Fatalf("Encode(%v): %v", c, err)
		}
		again, err := DecodeCheckpoint(enc)
		if err != nil {
			t.Fatalf("DecodeCheckpoint(%s) (re-encoded from %q): %v", enc, b, err)
		}
		if diff := cmp.Diff(c, again); diff != "" {
			t.Fatalf("round trip of %q (-first +second):\n%s", b, diff)
		}
	})
}
