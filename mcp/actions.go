package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/embedauth/connect/functions"
	"github.com/embedauth/connect/internal/httpapi"
	"github.com/embedauth/connect/store"
)

// Actions is what the connection tools need of the functions service: a
// *functions.Service.
type Actions interface {
	CheckConnection(ctx context.Context, env int64, integration, connectionID string) error
	ConnectionActions(ctx context.Context, env int64, integration, connectionID string) ([]*functions.Function, error)
	Action(ctx context.Context, env int64, integration, name string) (*functions.Function, error)
	RunAction(ctx context.Context, call functions.ActionCall) (json.RawMessage, error)
}

// actionTools serves a connection's actions as tools: the connection is
// named by the connection-id and provider-config-key headers, as Nango's
// MCP server names it.
type actionTools struct {
	fns Actions
	// wrapped remembers, per deployed function, whether its tool wraps
	// its input (see actionSchema), so that a call does not read the
	// schema again. A redeployment is another *Function; the map is
	// emptied when it grows past maxWrapped.
	mu      sync.Mutex
	wrapped map[*functions.Function]bool
}

const maxWrapped = 4096

// wraps reports whether fn's tool takes its input as {"input": value}.
func (t *actionTools) wraps(fn *functions.Function) bool {
	if fn.Definition.Input == "" {
		return false
	}
	t.mu.Lock()
	w, ok := t.wrapped[fn]
	t.mu.Unlock()
	if ok {
		return w
	}
	_, w = actionSchema(&fn.Definition)
	t.mu.Lock()
	if t.wrapped == nil || len(t.wrapped) >= maxWrapped {
		t.wrapped = map[*functions.Function]bool{}
	}
	t.wrapped[fn] = w
	t.mu.Unlock()
	return w
}

func (t *actionTools) admit(ctx context.Context, rq *request) error {
	rq.integration = strings.TrimSpace(rq.header.Get("Provider-Config-Key"))
	rq.connectionID = strings.TrimSpace(rq.header.Get("Connection-Id"))
	var fe []store.FieldError
	if rq.connectionID == "" {
		fe = append(fe, store.FieldError{Code: "required", Message: "is required", Path: []string{"connection-id"}})
	}
	if rq.integration == "" {
		fe = append(fe, store.FieldError{Code: "required", Message: "is required", Path: []string{"provider-config-key"}})
	}
	if len(fe) > 0 {
		return store.Invalid("invalid_headers", "The headers connection-id and provider-config-key name the connection whose actions are the tools.", fe...)
	}
	return t.fns.CheckConnection(ctx, rq.principal.EnvironmentID, rq.integration, rq.connectionID)
}

func (t *actionTools) list(ctx context.Context, rq *request) ([]*sdk.Tool, error) {
	fs, err := t.fns.ConnectionActions(ctx, rq.principal.EnvironmentID, rq.integration, rq.connectionID)
	if err != nil {
		return nil, err
	}
	tools := make([]*sdk.Tool, 0, len(fs))
	for _, f := range fs {
		schema, _ := actionSchema(&f.Definition)
		desc := f.Definition.Description
		if desc == "" {
			desc = f.Name
		}
		tools = append(tools, &sdk.Tool{Name: f.Name, Description: desc, InputSchema: schema})
	}
	return tools, nil
}

func (t *actionTools) call(ctx context.Context, rq *request, name string, args json.RawMessage) (*sdk.CallToolResult, error) {
	env := rq.principal.EnvironmentID
	fn, err := t.fns.Action(ctx, env, rq.integration, name)
	if errors.Is(err, store.ErrNotFound) {
		return nil, unknownTool(name)
	}
	if err != nil {
		return errorResult(err), nil
	}
	input, ierr := actionInput(&fn.Definition, t.wraps(fn), args)
	if ierr != nil {
		return failureResult(functions.Classify(ierr)), nil
	}
	out, err := t.fns.RunAction(ctx, functions.ActionCall{EnvironmentID: env, Integration: rq.integration,
		ConnectionID: rq.connectionID, Action: name, Input: input})
	if err != nil {
		if errors.Is(err, store.ErrNotFound) && !isRunError(err) {
			return nil, unknownTool(name) // deleted or disabled meanwhile
		}
		return errorResult(err), nil
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: indented(out)}}}, nil
}

// actionInput is the input of an action from the arguments of its tool:
// the arguments themselves, or their "input" member when the tool wraps
// an input that is not an object. An action with an input model gets {}
// for no arguments, so that its required properties are checked.
func actionInput(d *functions.Definition, wrapped bool, args json.RawMessage) (json.RawMessage, *functions.InputError) {
	blank := len(bytes.TrimSpace(args)) == 0 || string(bytes.TrimSpace(args)) == "null"
	if d.Input == "" {
		if blank || string(bytes.TrimSpace(args)) == "{}" {
			return nil, nil
		}
		return args, nil
	}
	if !wrapped {
		if blank {
			return json.RawMessage("{}"), nil
		}
		return args, nil
	}
	var obj map[string]json.RawMessage
	if !blank {
		if err := json.Unmarshal(args, &obj); err != nil {
			return nil, &functions.InputError{Model: d.Input, Problems: []functions.InputProblem{{Path: "arguments",
				Keyword: "type", Message: "must be an object"}}}
		}
	}
	in, ok := obj[inputKey]
	if !ok {
		return nil, &functions.InputError{Model: d.Input, Problems: []functions.InputProblem{{Path: "arguments." + inputKey,
			InstancePath: "/" + inputKey, Keyword: "required", Message: "is required: the action's input"}}}
	}
	for k := range obj {
		if k != inputKey {
			return nil, &functions.InputError{Model: d.Input, Problems: []functions.InputProblem{{Path: "arguments." + k,
				InstancePath: "/" + k, Keyword: "additionalProperties", Message: "is not an argument: the tool takes only " + inputKey}}}
		}
	}
	return in, nil
}

func isRunError(err error) bool {
	var re *functions.RunError
	return errors.As(err, &re)
}

func unknownTool(name string) error {
	return &rpcErr{Code: codeInvalidParams, Message: fmt.Sprintf("unknown tool %q", name)}
}

// errorResult is the result of a tool that failed: a failed run answers
// what POST /action/trigger answers, other errors the API's error body.
func errorResult(err error) *sdk.CallToolResult {
	var re *functions.RunError
	if errors.As(err, &re) {
		return failureResult(re.Failure)
	}
	_, d := httpapi.Resolve(err)
	return bodyResult(httpapi.ErrorBody{Error: d}, true)
}

func failureResult(f *functions.Failure) *sdk.CallToolResult {
	return bodyResult(f.Body, true)
}

// bodyResult is a result whose content is v as indented JSON text, and
// also its structured content when v is an object.
func bodyResult(v any, isError bool) *sdk.CallToolResult {
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte(`{"error":{"code":"server_error","message":"An internal error occurred."}}`)
	}
	res := &sdk.CallToolResult{IsError: isError, Content: []sdk.Content{&sdk.TextContent{Text: indented(b)}}}
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '{' {
		res.StructuredContent = json.RawMessage(b)
	}
	return res
}

// indented is JSON as Nango's MCP server writes a tool's output:
// JSON.stringify(output, null, 2).
func indented(b []byte) string {
	var buf bytes.Buffer
	if json.Indent(&buf, b, "", "  ") != nil {
		return string(b)
	}
	return buf.String()
}
