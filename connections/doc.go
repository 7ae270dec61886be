// Package connections manages connections: one end user's authorization
// against one integration, identified by (environment, integration key,
// connection id).
//
// A connection holds typed [Credentials] (OAuth 2, OAuth 1, client
// credentials, API key, Basic, app, TBA or none), sealed with AES-256-GCM
// before they reach the Store, plus connection config, free-form metadata,
// tags (lowercase keys, values of at most 255 characters; the conventional
// keys end_user_id, end_user_email and organization_id carry the end user)
// and an optional webhook URL override.
//
// The HTTP routes (see [Service.Routes]) speak the wire format of the
// published Nango clients: the list form never carries credentials, the
// single form carries them only for keys with the read_credentials scope,
// and the refresh token only when asked with refresh_token=true. The list
// (GET /connections, [Service.ListPage]) also reports each connection's
// [Health] (an auth error, a failed or a paused sync), filters on it
// (status) and pages with a keyset cursor beside Nango's page.
//
// Imports (POST /connections and the deprecated POST /connection) accept the
// flat body of the service specification or a nested credentials object;
// importing an existing connection id updates it instead of duplicating it
// (an upsert in the Store: [Store.ImportConnections]). A bulk import (POST
// /connections with an array, [Service.ImportBatch]) imports up to
// [MaxImportBatch] connections, all or none, in one transaction of a few
// statements; a refused batch names the problems of every item by index.
// Imports write an operations log entry per connection and send no
// webhook. Other changes never lose a concurrent update: each is an
// optimistic read-modify-write retried on a version conflict.
//
// # End users' connection config
//
// What an end user gives as connection config (params of the auth calls
// and of the OAuth popup, and the redirect_uri_metadata the provider's
// redirect back carries) is checked before anything is stored or sent: a
// value the connect session presets wins (it may be repeated, not
// changed), every other key must be a declared, non-automated field of the
// provider's connection_config (oauth_scopes_override is accepted; webhook
// URLs and the OAuth client overrides are dropped), each value must fit
// its field (integrations.FieldSpec.CheckValue), and a key that decides the
// host of a URL carrying the integration's secrets
// (integrations.Provider.SecretHostKeys) comes from the end user only when
// its pattern pins the value down. Every value, preset and stored ones
// included, must be safe where the provider's URL templates put it, and
// every URL is built with integrations.Provider.RenderURL. Refusals are 400
// invalid_connection_config naming the key in errors[].path.
//
// # Control characters
//
// A credential or connection config value reaches HTTP headers, URLs and
// templates, so every way in refuses one that holds a control character
// before anything is stored or sent: C0 (NUL, tab, line feed, carriage
// return and the others), DEL and C1, and text that is not UTF-8. Only a
// key may span lines: a value that is a whole PEM block or a JSON object
// (a private key, a certificate, a JWK) may hold tabs, line feeds and
// carriage returns. What an end user or the backend gives (auth calls,
// params[...], the OAuth popup's own-app credentials, a connect session's
// preset connection config, imports, and the same through the Go API) is
// refused with a 400 naming the field: invalid_credentials,
// invalid_connection_config, or invalid_body for a session. What a
// provider answers (tokens, token_response_metadata, redirect_uri_metadata)
// fails the flow or the refresh and is not stored. Credentials.Raw,
// Credentials.Scopes and metadata are kept as given.
//
// # Outbound requests
//
// Token, refresh and credential-check requests go through the address
// policy of package egress (RefreshConfig.Policy, SessionsConfig.Policy),
// checked at dial time; when a request gets no answer the caller, the
// operations log and the webhooks learn only address_not_allowed or
// provider_unreachable.
//
// # Token refresh
//
// With the built-in refresher ([Service.EnableRefresh], which connect.New
// installs), [Service.Get] renews OAuth 2 tokens (refresh_token grant) and
// client-credentials tokens (client_credentials grant) that expire within
// the threshold and have at most half of their lifetime left
// ([RefreshDue]; the lifetime runs from [Credentials.ObtainedAt], so a
// token that lives shorter than the threshold is not refreshed on every
// read), or always when forced. Concurrent calls in one process
// share one attempt; across processes the attempt holds
// [Store.LockConnection] in a transaction, re-reads the connection after
// locking (and returns what another process stored meanwhile), calls the
// provider and stores the new tokens, or the failure (an operations-log
// entry, the connection's auth error, an auth webhook when the connection
// was healthy until then), before the lock is released. A refresh token
// is never overwritten by a response that has none. After a failure,
// unforced calls answer [ErrRefreshBackoff] for the backoff period instead
// of calling the provider again.
package connections
