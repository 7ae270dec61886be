package environments

// Scopes an API key can hold. ScopeAll grants every scope. The five scopes of
// the service specification are ScopeConnectionsCreate,
// ScopeConnectSessionsWrite, ScopeActionsExecute, ScopeConnectionsUpdate and
// ScopeConnectionsDelete; the others name the remaining routes.
const (
	ScopeAll = "environment:*"

	ScopeProvidersRead = "environment:providers:read"

	ScopeIntegrationsRead            = "environment:integrations:read"
	ScopeIntegrationsReadCredentials = "environment:integrations:read_credentials"
	ScopeIntegrationsWrite           = "environment:integrations:write"

	ScopeConnectionsRead            = "environment:connections:read"
	ScopeConnectionsReadCredentials = "environment:connections:read_credentials"
	ScopeConnectionsCreate          = "environment:connections:create"
	ScopeConnectionsUpdate          = "environment:connections:update"
	ScopeConnectionsDelete          = "environment:connections:delete"

	ScopeConnectSessionsWrite = "environment:connect_sessions:write"
	ScopeActionsExecute       = "environment:actions:execute"
	ScopeProxy                = "environment:proxy"

	ScopeEnvironmentVariablesRead = "environment:environment_variables:read"
	// ScopeEnvironmentVariablesWrite replaces the environment's variables
	// (PUT /environment-variables).
	ScopeEnvironmentVariablesWrite = "environment:environment_variables:write"

	// ScopeSettingsRead reads the environment's settings (GET
	// /environment: webhook URLs and settings, connect UI branding,
	// callback URL; never the webhook signing key); ScopeSettingsWrite
	// changes them (PATCH /environment) and rotates the webhook signing
	// key (POST /environment/webhook-signing-key).
	ScopeSettingsRead  = "environment:settings:read"
	ScopeSettingsWrite = "environment:settings:write"
	// ScopeKeysRead lists the environment's API keys (GET
	// /environment/api-keys: names, hints and scopes, never the keys);
	// ScopeKeysWrite creates keys (with at most the scopes of the calling
	// key) and revokes them (POST /environment/api-keys, DELETE
	// /environment/api-keys/{id}).
	ScopeKeysRead  = "environment:keys:read"
	ScopeKeysWrite = "environment:keys:write"

	// ScopeFunctionsRead lists deployed functions and their code
	// (/integrations/{key}/functions, /scripts/config,
	// /providers/{provider}/templates); ScopeFunctionsWrite deletes them.
	ScopeFunctionsRead  = "environment:functions:read"
	ScopeFunctionsWrite = "environment:functions:write"
	// ScopeEnvironmentDeploy deploys functions with the nango CLI
	// (/sync/deploy, /sync/deploy/confirmation,
	// /functions/deployments/bundle[/preview]): Nango's scope of those
	// routes.
	ScopeEnvironmentDeploy = "environment:deploy"
	// ScopeSyncsRead reads sync statuses; ScopeSyncsWrite triggers,
	// pauses and starts syncs, sets their frequency and manages variants.
	ScopeSyncsRead  = "environment:syncs:read"
	ScopeSyncsWrite = "environment:syncs:write"
	// ScopeRecordsRead lists sync records; ScopeRecordsWrite prunes them.
	ScopeRecordsRead  = "environment:records:read"
	ScopeRecordsWrite = "environment:records:write"

	// ScopeWebhooksRead lists and reads the environment's outgoing webhook
	// deliveries (their bodies included); ScopeWebhooksWrite resends
	// them.
	ScopeWebhooksRead  = "environment:webhooks:read"
	ScopeWebhooksWrite = "environment:webhooks:write"

	// ScopeLogsRead lists and reads the operations log
	// (/logs/operations...).
	ScopeLogsRead = "environment:logs:read"

	// ScopeMCP serves a connection's actions as MCP tools (POST /mcp):
	// Nango's scope of that route. The management MCP server (/mcp/manage)
	// needs no scope of its own: each of its tools needs the scope of the
	// API route it calls.
	ScopeMCP = "environment:mcp"
)

// AllScopes lists every scope but ScopeAll, in documentation order.
func AllScopes() []string {
	return []string{
		ScopeProvidersRead,
		ScopeIntegrationsRead, ScopeIntegrationsReadCredentials, ScopeIntegrationsWrite,
		ScopeConnectionsRead, ScopeConnectionsReadCredentials, ScopeConnectionsCreate,
		ScopeConnectionsUpdate, ScopeConnectionsDelete,
		ScopeConnectSessionsWrite, ScopeActionsExecute, ScopeProxy,
		ScopeEnvironmentVariablesRead, ScopeEnvironmentVariablesWrite,
		ScopeSettingsRead, ScopeSettingsWrite, ScopeKeysRead, ScopeKeysWrite,
		ScopeWebhooksRead, ScopeWebhooksWrite,
		ScopeFunctionsRead, ScopeFunctionsWrite, ScopeEnvironmentDeploy, ScopeSyncsRead, ScopeSyncsWrite,
		ScopeRecordsRead, ScopeRecordsWrite,
		ScopeLogsRead, ScopeMCP,
	}
}

// ValidScope reports whether s is a known scope.
func ValidScope(s string) bool {
	if s == ScopeAll {
		return true
	}
	for _, k := range AllScopes() {
		if k == s {
			return true
		}
	}
	return false
}
