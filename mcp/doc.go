// Package mcp serves the Model Context Protocol to AI agents: a
// connection's actions as tools, and the service itself as tools. Both
// servers speak the streamable HTTP transport statelessly (every request
// stands alone; GET and DELETE answer 405), through the official Go SDK,
// behind the API's own key authentication, scopes, rate limit and error
// bodies.
//
// # A connection's actions (POST /mcp)
//
// Wire-compatible with Nango's MCP server: the environment's API key as
// Bearer with scope environment:mcp, and the headers connection-id and
// provider-config-key naming the connection (400 invalid_headers when
// one is missing, 400 unknown_connection when no connection matches).
// tools/list answers every enabled action of the integration, Go or
// deployed JavaScript alike, named by the action and described by its
// description; its input schema is the action's input model from its
// published JSON Schema, with every reference resolved (a model that
// refers to itself keeps a reference into the schema's own "$defs"). An
// action whose input is not an object is kept as a tool whose one
// argument "input" carries it. tools/call runs the action as POST
// /action/trigger does (same checks of the input, run context, logs,
// limits and timeout) and answers its output as JSON text; a failure is a
// result with isError set whose text, and structured content, is the
// error body POST /action/trigger answers ({"error": {"code", "message",
// "payload"}}), so that an agent reads it. An unknown or disabled action
// is a JSON-RPC error.
//
// # The service (POST /mcp/manage)
//
// Each tool is one route of the JSON API, called in process with the
// caller's key, so it needs that route's scope and validates as it does:
// integrations_list, integrations_get, integrations_create,
// integrations_update, integrations_delete, connect_session_create,
// connections_list, connections_get (credentials only for a key that may
// read them), proxy_request (the answer cut at 1 MiB), functions_list,
// syncs_status, syncs_trigger, records_list, logs_list_operations,
// logs_get_operation and webhooks_list_deliveries. tools/list answers
// only the tools the key may call; each carries annotations (read-only,
// destructive, idempotent, open-world) so a client can ask before acting.
package mcp
