// Package environments manages environments: isolated spaces with their own
// API keys, webhook URLs and signing key, connect-UI branding and environment
// variables.
//
// # API keys
//
// An API key is random (or given by the host), shown once at creation and
// stored only as its SHA-256 hash. Each key holds the scopes it was created
// with; only an explicit [ScopeAll] grants everything, and a key created
// without scopes holds none (every route answers it 403). Every API route
// requires one scope:
//
//	GET  /providers, /providers/{provider}          environment:providers:read
//	GET  /integrations, /integrations/{key}         environment:integrations:read
//	     ... with include=credentials               environment:integrations:read_credentials
//	POST, PATCH, DELETE /integrations...            environment:integrations:write
//	GET  /connections                               environment:connections:read
//	GET  /connections/{id}                          environment:connections:read
//	     ... credentials are included only with     environment:connections:read_credentials
//	POST /connections, POST /connection             environment:connections:create
//	metadata routes, PATCH /connections/{id}        environment:connections:update
//	DELETE /connections/{id}, /connection/{id}      environment:connections:delete
//	POST /connect/sessions                          environment:connect_sessions:write
//	POST /action/trigger                            environment:actions:execute
//	/proxy/...                                      environment:proxy
//	GET  /environment-variables                     environment:environment_variables:read
//	GET  /logs/operations, /logs/operations/{id}    environment:logs:read
//	POST /mcp                                       environment:mcp
//	POST /mcp/manage                                any key; each tool needs its route's scope
//
// A key of one environment never sees another environment's data: every
// request is scoped to the environment its key belongs to.
//
// # Secrets
//
// The webhook signing key (distinct from every API key) and the values of
// environment variables are sealed with AES-256-GCM before they reach the
// Store.
package environments
