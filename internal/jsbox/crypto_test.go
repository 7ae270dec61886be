package jsbox_test

import (
	"fmt"
	"testing"

	"github.com/embedauth/connect/internal/jsbox"
)

// TestCryptoAsNode: require('crypto') answers what Node 20 answers.
// testdata/crypto_node.json holds each expression with Node's answer,
// written by `node testdata/crypto_node.js`.
func TestCryptoAsNode(t *testing.T) {
	t.Parallel()
	b := newBox(t, jsbox.Options{})
	for _, c := range nodeCases(t, "crypto_node.json", 50) {
		got, err := b.Eval(asNode(c[0]))
		if err != nil || fmt.Sprint(got) != c[1] {
			t.Errorf("%s\n got %q, %v\nnode %q", c[0], got, err, c[1])
		}
	}
}

// TestRandomBytesBound: randomBytes refuses more than a MiB at once, and
// its callback form answers in a later job.
func TestRandomBytesBound(t *testing.T) {
	t.Parallel()
	b := newBox(t, jsbox.Options{})
	v, err := b.Eval(asNode(`require('crypto').randomBytes(1 << 20).length + ' ' + require('crypto').randomBytes((1 << 20) + 1)`))
	if err != nil || v != "throws RangeError: The value of \"size\" is out of range. Functions may ask for at most 1048576 random bytes at once. Received 1048577 [ERR_OUT_OF_RANGE]" {
		t.Errorf("over a MiB: %v, %v", v, err)
	}
	v, err = b.Eval(`new Promise((resolve) => { let sync = true; require('crypto').randomBytes(8, (err, buf) => resolve([err, buf.length, sync].join())); sync = false; })`)
	if err != nil || v != ",8,false" {
		t.Errorf("callback: %v, %v", v, err)
	}
}
