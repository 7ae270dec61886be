package jsbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"

	"modernc.org/quickjs"
)

// Throw is an error a host function ([Box.Func]) returns to throw a value
// of its choosing: JSON, the value as JSON. When it is an object, the
// exception is an Error with the object's fields (its message the
// object's message field, name and stack included when it has them), so
// that code sees an Error, instanceof Error included; any other value is
// thrown as it is.
type Throw struct {
	JSON json.RawMessage
}

func (t *Throw) Error() string { return "jsbox: a host function throws " + string(t.JSON) }

var funcName = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$]*$`)

// Func installs fn as the global function name, not enumerable. Its
// arguments reach fn as JSON decodes them (numbers as float64, objects as
// map[string]any, undefined as nil); what it returns reaches JavaScript as
// JSON (json.Marshal; a json.RawMessage as it is). An error it returns is
// thrown: an Error with the error's message, or, for a [*Throw], the value
// it holds. fn runs on the Box's goroutine, inside the JavaScript that
// calls it, and must not call the Box.
//
// The global is configurable, so that the host's own setup code can take
// it into a closure and delete it. Installing a name twice is an error.
func (b *Box) Func(name string, fn func(args []any) (any, error)) error {
	if !funcName.MatchString(name) {
		return fmt.Errorf("jsbox: Func %q: not an identifier", name)
	}
	if b.names[name] {
		return fmt.Errorf("jsbox: Func %q: already installed", name)
	}
	if b.names == nil {
		b.names = map[string]bool{}
	}
	b.names[name] = true
	b.funcs = append(b.funcs, fn)
	if _, err := b.forHost.Call(quickjs.UndefinedValue, 1, name, len(b.funcs)-1); err != nil {
		return fmt.Errorf("jsbox: Func %q: %w", name, classify(err))
	}
	return nil
}

// FuncRaw installs fn as the global function name, as Func does, for a
// host that crosses with strings of its own: JavaScript calls it with one
// string (any other argument is converted to one), and gets fn's answer,
// a string, as it is. Nothing is encoded on the way: the host and its
// JavaScript agree on the format (a host's own JSON, say), and fn cannot
// throw; it answers an error in its format.
func (b *Box) FuncRaw(name string, fn func(arg string) string) error {
	if fn == nil {
		return fmt.Errorf("jsbox: FuncRaw %q: fn is nil", name)
	}
	if err := b.Func(name, nil); err != nil {
		return err
	}
	if b.raws == nil {
		b.raws = map[int]func(string) string{}
	}
	b.raws[len(b.funcs)-1] = fn
	if _, err := b.forHost.Call(quickjs.UndefinedValue, 3, name, len(b.funcs)-1); err != nil {
		return fmt.Errorf("jsbox: FuncRaw %q: %w", name, classify(err))
	}
	return nil
}

// callFunc calls fn, a function of Func, with the arguments args holds as
// a JSON array, and answers the envelope of its answer.
func (b *Box) callFunc(fn func(args []any) (any, error), args string) string {
	var in []any
	if err := json.Unmarshal([]byte(args), &in); err != nil {
		return envelope(nil, err)
	}
	return envelope(fn(in))
}

// envelope is the answer of a host function as bootstrap.js reads it:
// [0, value], [1, message] for an error, [2, object] to throw as an Error
// with its fields, [3, value] to throw as it is.
func envelope(v any, err error) string {
	if err == nil {
		b, merr := json.Marshal([]any{0, v})
		if merr == nil {
			return string(b)
		}
		err = fmt.Errorf("jsbox: the host function's answer is not JSON: %w", merr)
	}
	var t *Throw
	if errors.As(err, &t) && json.Valid(t.JSON) {
		if v := bytes.TrimLeft(t.JSON, " \t\r\n"); len(v) > 0 && v[0] == '{' {
			return `[2,` + string(t.JSON) + `]`
		}
		return `[3,` + string(t.JSON) + `]`
	}
	b, _ := json.Marshal([]any{1, err.Error()})
	return string(b)
}
