package jsbox

import (
	"errors"
	"fmt"
	"regexp"
)

var hostName = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$]*$`)

// Func installs fn as the global function name: JavaScript calls it with
// arguments converted to Go values (strings, float64, bool, nil, ...),
// and its result is converted back; an error it returns is thrown as a
// JavaScript Error with the error's text. Host functions are how a runtime
// gives code its capabilities: a Box has none but those it is given.
// Install them before loading code that may capture the global.
func (b *Box) Func(name string, fn func(args []any) (any, error)) error {
	if !hostName.MatchString(name) {
		return fmt.Errorf("jsbox: Func %q: the name must be a JavaScript identifier", name)
	}
	if fn == nil {
		return errors.New("jsbox: Func: fn is nil")
	}
	return b.vm.RegisterHostFunc(name, fn)
}

// Interrupt stops the code the Box runs at its next check, as its
// deadline does; the evaluation fails with ErrTimeout. It is safe to call
// from any goroutine, also after Close.
func (b *Box) Interrupt() { b.vm.Interrupt() }
