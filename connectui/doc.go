// Package connectui serves the pre-built connect UI: the page an end user
// opens to connect an account, through a connect session's connect_link or
// inside the iframe that @nangohq/frontend's openConnectUI opens.
//
// The UI is one HTML page (an embedded html/template) and plain JavaScript
// and CSS (embedded too), with no CDN and a strict Content-Security-Policy:
// scripts run only with the page's per-response nonce, styles and images
// come from the page's own origin or the API's, and the page talks only to
// the API origins [Config] allows.
//
// # What the page does
//
// It reads the session token from its ?session_token= query parameter
// (connect_link), or waits for the {type:"session_token", sessionToken}
// message of openConnectUI after posting {type:"ready"} to its parent. It
// then calls the API with the token as bearer: GET /connect/session (the
// branding, the allowed integrations and their defaults), GET /integrations
// and GET /providers/{provider}. It lists the integrations, collects what
// the chosen one needs (an API key, a username and password, the
// connection-config fields the provider declares, such as a subdomain,
// the end user's own OAuth app when the session's
// integrations_config_defaults ask for it with empty
// oauth_client_id_override and oauth_client_secret_override, and the auth
// mode can use one: connections.OwnAppApplies), and connects:
//
//   - API key, Basic, client credentials and unauthenticated integrations
//     with one POST (/api-auth/api-key/{integration}, /api-auth/basic/...,
//     /oauth2/auth/..., /auth/unauthenticated/...);
//   - OAuth integrations in a popup opened on
//     /oauth/connect/{integration}?connect_session_token=..&ws_client_id=<flow id>;
//     the outcome arrives as a message from the callback page (to the
//     opener, or on the BroadcastChannel "nango-oauth-callback"), and
//     GET /oauth/status/{flow id} is polled as a fallback for when the
//     popup cannot talk back.
//
// Query parameters of the page, as openConnectUI sets them: apiURL (the API
// base; only an origin Config allows is used, otherwise the default),
// theme (light, dark or system; overrides the environment's default),
// lang (the page's language and the Accept-Language of its API calls) and
// detectClosedAuthWindow (report a closed OAuth popup as an error event).
//
// Inside an iframe the page posts these messages to its parent, with
// target origin "*" and never a secret: {type:"ready"},
// {type:"settings_changed", payload: connectUISettings},
// {type:"connect", payload:{providerConfigKey, connectionId, isPending}},
// {type:"error", payload:{errorType, errorMessage}} and {type:"close"}.
//
// connect.Service mounts the UI at /connect/ in Handler and ConnectHandler;
// [Register] mounts it on any mux.
package connectui
