package jsbox_test

import (
	"fmt"
	"testing"

	"github.com/embedauth/connect/internal/jsbox"
)

// TestURLAsNode: URL, URLSearchParams and require('url') answer what Node
// 20 answers. testdata/url_node.json holds each expression with Node's
// answer, written by `node testdata/url_node.js`.
func TestURLAsNode(t *testing.T) {
	t.Parallel()
	b := newBox(t, jsbox.Options{})
	for _, c := range nodeCases(t, "url_node.json", 150) {
		got, err := b.Eval(asNode(c[0]))
		if err != nil || fmt.Sprint(got) != c[1] {
			t.Errorf("%s\n got %q, %v\nnode %q", c[0], got, err, c[1])
		}
	}
}
