package jsbox

import (
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
	if b.funcs[name] {
		return fmt.Errorf("jsbox: Func %q: already installed", name)
	}
	raw := "__jsbox_func_" + name
	err := b.vm.RegisterHostFunc(raw, func(args []any) (any, error) {
		var in []any
		if len(args) == 1 {
			if s, ok := args[0].(string); ok {
				if err := json.Unmarshal([]byte(s), &in); err != nil {
					return nil, err
				}
			}
		}
		return envelope(fn(in)), nil
	})
	if err != nil {
		return fmt.Errorf("jsbox: Func %q: %w", name, err)
	}
	b.funcs[name] = true
	if _, err := b.install.Call(quickjs.UndefinedValue, name, raw); err != nil {
		return fmt.Errorf("jsbox: Func %q: %w", name, classify(err))
	}
	return nil
}

// envelope is the answer of a host function as install (bootstrap.js)
// reads it: [0, value], [1, message] for an error, [2, value] to throw.
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
		return `[2,` + string(t.JSON) + `]`
	}
	b, _ := json.Marshal([]any{1, err.Error()})
	return string(b)
}
