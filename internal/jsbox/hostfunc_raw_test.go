package jsbox_test

import (
	"strings"
	"testing"

	"github.com/embedauth/connect/internal/jsbox"
)

// FuncRaw crosses with strings as they are: no encoding on the way in or
// out, whatever they hold.
func TestFuncRaw(t *testing.T) {
	b, err := jsbox.New(jsbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var got []string
	if err := b.FuncRaw("echo", func(arg string) string {
		got = append(got, arg)
		return strings.ToUpper(arg) + `"\`
	}); err != nil {
		t.Fatal(err)
	}
	v, err := b.Eval(`echo('a"b\\c\n') + '|' + echo(42) + '|' + typeof echo('x')`)
	if err != nil {
		t.Fatal(err)
	}
	if want := "A\"B\\C\n\"\\|42\"\\|string"; v != want {
		t.Errorf("answered %q, want %q", v, want)
	}
	if len(got) != 3 || got[0] != "a\"b\\c\n" || got[1] != "42" {
		t.Errorf("the host got %q", got)
	}
	if err := b.FuncRaw("echo", func(string) string { return "" }); err == nil {
		t.Error("a second FuncRaw of the same name was installed")
	}
}
