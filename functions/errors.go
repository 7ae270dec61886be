package functions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/embedauth/connect/egress"
	"github.com/embedauth/connect/proxy"
	"github.com/embedauth/connect/store"
)

// ActionError is an error a function returns on purpose, with a payload
// for its caller: POST /action/trigger answers it as 500
// action_script_runtime_error with the payload, an object: Type, when
// set, is its "type", first, followed by the fields of Payload. This is
// the payload of Nango's functions, which throw
// ActionError({type: "not_found", message: "User not found", ...}).
type ActionError struct {
	// Type says what went wrong, for the caller to branch on, such as
	// "not_found" or "invalid_input": the payload's "type" (it replaces a
	// "type" of Payload's own). Empty for none.
	Type string
	// Payload is the rest of the payload: an object (a map or a struct)
	// whose fields follow "type"; any other value is wrapped as
	// {"message": value}.
	Payload any
}

func (e *ActionError) Error() string {
	prefix := "action error"
	if e.Type != "" {
		prefix += " " + e.Type
	}
	b, err := json.Marshal(e.Payload)
	if err != nil {
		return prefix
	}
	return prefix + ": " + string(b)
}

// UpstreamError is a provider's answer outside 2xx to a call made through
// Context.Proxy. A function that returns it (or wraps it) fails with 424
// script_http_error, carrying the upstream status, content type and rate
// limit headers and body.
type UpstreamError struct {
	Status int
	Header http.Header
	// Body is the upstream body, at most MaxUpstreamErrorBody bytes.
	Body []byte
}

// MaxUpstreamErrorBody is the most of an upstream error body an
// UpstreamError keeps.
const MaxUpstreamErrorBody = 64 << 10

func (e *UpstreamError) Error() string {
	return fmt.Sprintf("the provider answered %d %s", e.Status, http.StatusText(e.Status))
}

// InputError is an action input that does not fit the action: 400
// invalid_action_input. An action returns one with Err saying why (its
// text is the answer's message); the service builds one with Problems when
// the input does not fit the action's input schema or its Go type, and
// the answer's payload then lists them: {"validation": [InputProblem...],
// "model": Model}.
type InputError struct {
	Err error
	// Problems are where and why the input does not fit.
	Problems []InputProblem
	// Model is the name of the input model checked, when known.
	Model string
}

func (e *InputError) Error() string {
	if e.Err == nil && len(e.Problems) > 0 {
		return "invalid action input: " + e.Problems[0].Path + ": " + e.Problems[0].Message
	}
	if e.Err == nil {
		return "invalid action input"
	}
	return "invalid action input: " + e.Err.Error()
}

func (e *InputError) Unwrap() error { return e.Err }

// failure is the Failure of the InputError: its message names the first
// problem's path.
func (e *InputError) failure() *Failure {
	f := &Failure{Status: http.StatusBadRequest, Body: FailureBody{Error: FailureDetail{Code: "invalid_action_input"}}}
	if len(e.Problems) == 0 {
		msg := "The action input is invalid."
		if e.Err != nil {
			msg = "The action input is invalid: " + e.Err.Error()
		}
		f.Body.Error.Message = msg
		return f
	}
	first := e.Problems[0]
	msg := "The action input is invalid: " + first.Path + ": " + first.Message
	if n := len(e.Problems) - 1; n == 1 {
		msg += " (and 1 more problem)"
	} else if n > 1 {
		msg += fmt.Sprintf(" (and %d more problems)", n)
	}
	f.Body.Error.Message = msg + "."
	payload := map[string]any{"validation": e.Problems}
	if e.Model != "" {
		payload["model"] = e.Model
	}
	f.Body.Error.Payload = payload
	return f
}

// PanicError is a function that panicked: a runtime error, never a crash
// of the host. Its stack goes into the run's operations log entry (Meta
// "stacktrace"), never into an answer or a webhook.
type PanicError struct {
	Value any
	// Stack holds the frames of the panic, innermost first, at most 10.
	Stack []string
}

func (e *PanicError) Error() string { return fmt.Sprintf("the function panicked: %v", e.Value) }

// errOutputTooLarge is an action output over MaxActionOutput.
var errOutputTooLarge = errors.New("the action output is larger than 10 MB")

// MaxActionOutput is the largest action output, encoded as JSON.
const MaxActionOutput = 10 << 20

// Failure is how a failed run is answered and reported: an HTTP status
// and the error body of the original ({"error": {...}}).
type Failure struct {
	Status int
	Body   FailureBody
}

// FailureBody is {"error": FailureDetail}.
type FailureBody struct {
	Error FailureDetail `json:"error"`
}

// FailureDetail is the error of a failed run.
type FailureDetail struct {
	Message  string    `json:"message,omitempty"`
	Code     string    `json:"code"`
	Payload  any       `json:"payload,omitempty"`
	Upstream *Upstream `json:"upstream,omitempty"`
}

// Upstream describes a provider's failed answer in a FailureDetail.
type Upstream struct {
	Status  int               `json:"status"`
	Headers map[string]string `json:"headers"`
	Body    any               `json:"body"`
}

// Classify turns the error of a run into its Failure, as the original
// answers POST /action/trigger: an UpstreamError is 424
// script_http_error; an ActionError 500 action_script_runtime_error; a
// bad input 400 invalid_action_input; an output over 10 MB 400
// script_output_too_large; a provider call (through Context.Proxy,
// Paginate or HTTPClient) that got no answer is answered as the proxy
// answers it (proxy.TransportFailure): 403 upstream_address_refused when
// the address policy refused it, 504 upstream_timeout, or 502
// upstream_error, never with the address or the dial error (the run's
// operations log entry keeps them); the run deadline 500
// execution_timeout; a cancelled run 410 script_aborted; a panic or any
// other error 500 script_internal_error with {name, message} (a panic's
// stack is logged, never answered; a message holds no request URL).
func Classify(err error) *Failure {
	var (
		up    *UpstreamError
		ae    *ActionError
		ie    *InputError
		pe    *PanicError
		se    *ScriptError
		ended *endedError
		bad   = func(status int, code, msg string, payload any) *Failure {
			return &Failure{Status: status, Body: FailureBody{Error: FailureDetail{Code: code, Message: msg, Payload: payload}}}
		}
	)
	if errors.As(err, &ended) {
		err = ended.ctx // whatever the run returned once its time was up
	}
	if se := addressRefusal(err); se != nil {
		return bad(http.StatusForbidden, se.Code, se.Message, nil)
	}
	if status, se := transportFailure(err); se != nil {
		return bad(status, se.Code, se.Message, nil)
	}
	switch {
	case errors.As(err, &up):
		body := decodeBody(up.Body)
		f := bad(http.StatusFailedDependency, "script_http_error",
			fmt.Sprintf("The provider answered %d to a call of the function.", up.Status), body)
		headers := map[string]string{}
		for k, vs := range up.Header {
			lk := strings.ToLower(k)
			if lk == "content-type" || strings.HasPrefix(lk, "x-rate") || lk == "retry-after" {
				headers[lk] = strings.Join(vs, ", ")
			}
		}
		f.Body.Error.Upstream = &Upstream{Status: up.Status, Headers: headers, Body: body}
		return f
	case errors.As(err, &ae):
		return bad(http.StatusInternalServerError, "action_script_runtime_error",
			"The action script failed with a runtime error", actionPayload(ae))
	case errors.As(err, &ie):
		return ie.failure()
	case errors.Is(err, errOutputTooLarge):
		return bad(http.StatusBadRequest, "script_output_too_large", "The action output is larger than 10 MB; nothing was returned.", nil)
	case errors.Is(err, context.DeadlineExceeded):
		return bad(http.StatusInternalServerError, "execution_timeout", "The function ran past its deadline.", nil)
	case errors.Is(err, context.Canceled):
		return bad(http.StatusGone, "script_aborted", "The function run was cancelled.", nil)
	case errors.As(err, &se):
		return bad(http.StatusInternalServerError, "script_internal_error", "The function failed with an internal error.", se.payload())
	case errors.As(err, &pe):
		msg := fmt.Sprint(pe.Value)
		if v, ok := pe.Value.(error); ok {
			msg = publicText(v)
		}
		return bad(http.StatusInternalServerError, "script_internal_error", "The function failed with an internal error.",
			map[string]any{"name": "panic", "message": msg})
	default:
		return bad(http.StatusInternalServerError, "script_internal_error", "The function failed with an internal error.",
			map[string]any{"name": "error", "message": publicText(err)})
	}
}

// endedError is the error of a run whose own context ended (its deadline
// passed, or it was cancelled) before it returned err: Classify answers
// the context's end, whatever err says, so that a provider call cut short
// by the run's deadline is the run's timeout, not the provider's.
type endedError struct {
	ctx error // context.DeadlineExceeded or context.Canceled
	err error
}

func (e *endedError) Error() string   { return e.ctx.Error() + ": " + e.err.Error() }
func (e *endedError) Unwrap() []error { return []error{e.ctx, e.err} }

// runEnd returns the error of a run that returned err, with ctx the run's
// context: err, or the context's error when the run returned none after
// its context ended, or both (an *endedError) when it returned one.
func runEnd(ctx context.Context, err error) error {
	cerr := ctx.Err()
	switch {
	case cerr == nil:
		return err
	case err == nil:
		return cerr
	}
	return &endedError{ctx: cerr, err: err}
}

// transportFailure returns the status and error of the proxy's answer
// (proxy.TransportFailure) to a provider call of a run that got no
// answer, or a nil error when err is not one: an error of Context.Proxy
// that is already that answer (upstream_error, upstream_timeout,
// upstream_response_too_large), or a network error (a net.Error: a
// client's *url.Error, a dial or read error) returned as it is or
// wrapped. A failure of our own that a client of Context.HTTPClient
// reports (a *store.Error inside its *url.Error: the connection is gone,
// its refresh failed) is not one, nor is a context's end (the run's, or a
// cancellation the function made itself).
func transportFailure(err error) (int, *store.Error) {
	var se *store.Error
	if errors.As(err, &se) {
		switch se.Code {
		case proxy.CodeUpstreamError, proxy.CodeResponseTooLarge:
			return http.StatusBadGateway, se
		case proxy.CodeUpstreamTimeout:
			return http.StatusGatewayTimeout, se
		}
		return 0, nil
	}
	var ne net.Error
	if !errors.As(err, &ne) || error(ne) == context.DeadlineExceeded || errors.Is(err, context.Canceled) {
		return 0, nil
	}
	tf := proxy.TransportFailure(err)
	status, _ := proxy.HTTPStatus(tf)
	errors.As(tf, &se)
	return status, se
}

// publicText is the text of an error for an answer: err.Error() with the
// request URL of each *url.Error left out (a client's errors start with
// the method and URL of the request, which may hold what its query
// carries), and the proxy's message in place of a network failure's
// detail.
func publicText(err error) string {
	if _, se := transportFailure(err); se != nil {
		return se.Message
	}
	return urlText(err, false)
}

// failureDetail is what the run's operations log entry keeps of a provider
// call that got no answer (transportFailure), in a run's error or in the
// error value of a panic: the error's text, with the dial error and the
// address, and the scheme and host of each request URL but not its path
// or query. It is "" for any other error, and for an address the policy
// refused, whose answer says all there is to say.
func failureDetail(err error) string {
	var ended *endedError
	if errors.As(err, &ended) {
		err = ended.err // the call its deadline cut short
	}
	var pe *PanicError
	if errors.As(err, &pe) {
		v, ok := pe.Value.(error)
		if !ok {
			return ""
		}
		err = v
	}
	if addressRefusal(err) != nil {
		return ""
	}
	if _, se := transportFailure(err); se == nil {
		return ""
	}
	return urlText(err, true)
}

// urlText is err.Error() with each *url.Error's "Method \"URL\"" cut
// down to "Method", or to "Method scheme://host" with host.
func urlText(err error, host bool) string {
	s := err.Error()
	var ue *url.Error
	for e := err; errors.As(e, &ue) && ue.Err != nil; e = ue.Err {
		short := ue.Op
		if u, perr := url.Parse(ue.URL); host && perr == nil && u.Host != "" {
			short += " " + u.Scheme + "://" + u.Host
		}
		s = strings.Replace(s, ue.Error(), short+": "+ue.Err.Error(), 1)
	}
	return s
}

// addressRefusal returns the proxy's 403 upstream_address_refused for an
// error of a request the address policy refused: the proxy's own answer
// (Context.Proxy calls Proxy.Do), or the policy's *egress.AddressError (a
// client from Context.HTTPClient); nil for any other error.
func addressRefusal(err error) *store.Error {
	var se *store.Error
	if errors.As(err, &se) && se.Code == proxy.CodeAddressRefused {
		return se
	}
	var ae *egress.AddressError
	if errors.As(err, &ae) && errors.As(proxy.AddressRefused(ae), &se) {
		return se
	}
	return nil
}

// actionPayload is the payload of an ActionError's answer: its Payload
// as an object, with its Type as "type" first.
func actionPayload(ae *ActionError) any {
	p := wrapPayload(ae.Payload)
	if ae.Type == "" {
		return p
	}
	typ, _ := json.Marshal(ae.Type)
	var rest map[string]json.RawMessage
	if b, err := json.Marshal(p); err == nil {
		_ = json.Unmarshal(b, &rest)
	}
	delete(rest, "type")
	out := `{"type":` + string(typ)
	if len(rest) > 0 {
		b, _ := json.Marshal(rest) // sorted keys
		out += "," + string(b[1:])
	} else {
		out += "}"
	}
	return json.RawMessage(out)
}

// wrapPayload makes an ActionError payload an object.
func wrapPayload(p any) any {
	if p == nil {
		return map[string]any{}
	}
	b, err := json.Marshal(p)
	if err != nil {
		return map[string]any{"message": fmt.Sprint(p)}
	}
	if len(b) > 0 && b[0] == '{' {
		return json.RawMessage(b)
	}
	return map[string]any{"message": json.RawMessage(b)}
}

// decodeBody is an upstream body as JSON when it is JSON, else as text.
func decodeBody(b []byte) any {
	if json.Valid(b) {
		return json.RawMessage(b)
	}
	if utf8.Valid(b) {
		return string(b)
	}
	return fmt.Sprintf("(%d bytes of binary data)", len(b))
}
