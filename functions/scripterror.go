package functions

import "strings"

// ScriptError is an error thrown by code a runtime runs (a JavaScript
// function's Error, or a value it threw) that is neither an ActionError
// nor a provider's answer: POST /action/trigger answers it as 500
// script_internal_error with the payload {name, message, code?,
// stacktrace}, as the original does. Stack holds the frames of the
// function's own code, at most 10, mapped to its source where the runtime
// can.
type ScriptError struct {
	Name    string
	Message string
	// Code is the thrown error's code property, when it has one.
	Code  string
	Stack []string
}

func (e *ScriptError) Error() string {
	var b strings.Builder
	b.WriteString(e.Name)
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if len(e.Stack) > 0 {
		b.WriteString(" (at ")
		b.WriteString(e.Stack[0])
		b.WriteString(")")
	}
	return b.String()
}

func (e *ScriptError) payload() map[string]any {
	p := map[string]any{"name": e.Name, "message": e.Message}
	if e.Code != "" {
		p["code"] = e.Code
	}
	stack := e.Stack
	if len(stack) > 10 {
		stack = stack[:10]
	}
	if stack == nil {
		stack = []string{}
	}
	p["stacktrace"] = stack
	return p
}
