package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
)

// fastVersions are the protocol versions whose tools/call the endpoint
// answers itself (an absent header is one of them, as the SDK assumes).
// Later versions carry more (_meta and header checks) and go to the SDK.
var fastVersions = []string{"", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// fastCall answers a request that is one tools/call, as the SDK answers
// it (the same status, headers and JSON-RPC body; TestFastCallMatchesSDK
// compares them), without the SDK's transport: its JSON decoder buffers
// 32 KiB for each value it decodes, a dozen per call, which made a call
// of a no-op action cost four times POST /action/trigger. It reports
// false, having written nothing, for anything else, which the SDK serves.
func (e *endpoint) fastCall(ctx context.Context, w http.ResponseWriter, r *http.Request, rq *request, body []byte) bool {
	if !slices.Contains(fastVersions, r.Header.Get("Mcp-Protocol-Version")) {
		return false
	}
	if t := bytes.TrimLeft(body, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return false // a batch, or not JSON-RPC
	}
	var msg struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  string          `json:"method"`
		Params  *struct {
			Name      *string         `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &msg) != nil || msg.JSONRPC != "2.0" || msg.Method != "tools/call" || !plainID(msg.ID) ||
		msg.Params == nil || msg.Params.Name == nil {
		return false
	}
	params := msg.Params
	if t := bytes.TrimSpace(params.Arguments); len(t) > 0 && t[0] != '{' && string(t) != "null" {
		return false // the SDK refuses arguments that are not an object
	}
	res, err := e.tools.call(ctx, rq, *params.Name, params.Arguments)
	out := struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  any             `json:"result,omitempty"`
		Error   *rpcErr         `json:"error,omitempty"`
	}{JSONRPC: "2.0", ID: bytes.TrimSpace(msg.ID)}
	if err != nil {
		var re *rpcErr
		if !errors.As(err, &re) {
			re = rpcError(err).(*rpcErr)
		}
		out.Error = re
	} else {
		out.Result = res
	}
	b, merr := json.Marshal(out)
	if merr != nil {
		return false
	}
	w.Header().Set("Cache-Control", "no-cache, no-transform")
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
	return true
}

// plainID reports whether a JSON-RPC id is a string or an integer: what
// a request's id is. Anything else is left to the SDK to refuse.
func plainID(id json.RawMessage) bool {
	id = bytes.TrimSpace(id)
	if len(id) == 0 {
		return false
	}
	if id[0] == '"' {
		var s string
		return json.Unmarshal(id, &s) == nil
	}
	for i, c := range id {
		if (c < '0' || c > '9') && !(i == 0 && c == '-') {
			return false
		}
	}
	return len(id) < 16
}
