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
//	PUT  /environment-variables                     environment:environment_variables:write
//	GET  /environment                               environment:settings:read
//	PATCH /environment                              environment:settings:write
//	POST /environment/webhook-signing-key           environment:settings:write
//	GET  /environment/api-keys                      environment:keys:read
//	POST /environment/api-keys                      environment:keys:write (grants only scopes the key holds)
//	DELETE /environment/api-keys/{id}               environment:keys:write (never the calling key)
//	GET  /environment/key                           any key: the calling key and its scopes
//	GET  /logs/operations, /logs/operations/{id}    environment:logs:read
//	POST /mcp                                       environment:mcp
//	POST /mcp/manage                                any key; each tool needs its route's scope
//
// A key of one environment never sees another environment's data: every
// request is scoped to the environment its key belongs to.
//
// # Managing keys over HTTP
//
// POST /environment/api-keys creates a key with at most the scopes of the
// calling key (ScopeAll only by a key that holds ScopeAll), so a key cannot
// make one that may do more than it may; DELETE /environment/api-keys/{id}
// refuses to revoke the calling key (409 cannot_revoke_own_key). A revoked
// key is refused at once by the Service that revoked it (DeleteAPIKey drops
// it from the key cache, also after the commit of the caller's
// transaction), and by other processes within the key cache TTL. Neither
// list shows a key or its hash, and GET /environment never shows the
// webhook signing key: POST /environment/webhook-signing-key
// (RotateWebhookSigningKey) answers a new one once.
//
// # Secrets
//
// The webhook signing key (distinct from every API key) and the values of
// environment variables are sealed with AES-256-GCM before they reach the
// Store.
package environments
