package jsbox_test

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"github.com/embedauth/connect/internal/jsbox"
)

// TestBufferAsNode: Buffer, btoa and atob answer what Node answers.
// testdata/buffer_node.json holds each expression with Node's answer,
// written by `node testdata/buffer_node.js` (Node 20).
func TestBufferAsNode(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("testdata/buffer_node.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases [][2]string
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) < 30 {
		t.Fatalf("%d cases", len(cases))
	}
	b := newBox(t, jsbox.Options{})
	for _, c := range cases {
		got, err := b.Eval("String(" + c[0] + ")")
		if err != nil || fmt.Sprint(got) != c[1] {
			t.Errorf("%s = %q, %v; Node answers %q", c[0], got, err, c[1])
		}
	}
}

// FuzzBufferEncodings: any bytes are written in base64, base64url and hex
// as Go's encoders write them, and read back.
func FuzzBufferEncodings(f *testing.F) {
	for _, s := range []string{"", "a", "ab", "abc", "\x00\xff\xfe", "héllo 🎉"} {
		f.Add([]byte(s))
	}
	b, err := jsbox.New(jsbox.Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { b.Close() })
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 4096 {
			return
		}
		arr, _ := json.Marshal(toInts(data))
		for enc, want := range map[string]string{
			"base64":    base64.StdEncoding.EncodeToString(data),
			"base64url": base64.RawURLEncoding.EncodeToString(data),
			"hex":       hex.EncodeToString(data),
		} {
			src := fmt.Sprintf(`(() => { const b = Buffer.from(%s); const s = b.toString(%q);
				return Buffer.from(s, %q).equals(b) ? s : 'no round trip'; })()`, arr, enc, enc)
			got, err := b.Eval(src)
			if err != nil || got != want {
				t.Fatalf("%s of %x = %q, %v; want %q", enc, data, got, err, want)
			}
		}
	})
}

func toInts(b []byte) []int {
	out := make([]int, len(b))
	for i, c := range b {
		out[i] = int(c)
	}
	return out
}
