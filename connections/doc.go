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
// and the refresh token only when asked with refresh_token=true.
//
// Imports (POST /connections and the deprecated POST /connection) accept the
// flat body of the service specification or a nested credentials object;
// importing an existing connection id updates it instead of duplicating it.
// Concurrent writers never lose an update: every change is an optimistic
// read-modify-write retried on a version conflict.
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
