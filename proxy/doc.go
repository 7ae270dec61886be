// Package proxy calls providers' APIs with a connection's credentials: the
// credential-injecting reverse proxy behind the /proxy route, the same call
// from Go ([Proxy.Do]), and an [http.RoundTripper] bound to one connection
// for providers' Go SDKs ([Proxy.Transport]).
//
// # What goes upstream
//
// The upstream URL is the provider's base URL (its ${connectionConfig.x}
// templates filled from the connection) or the Base-Url-Override header,
// followed by the path and query after /proxy, byte for byte. Headers
// prefixed Nango-Proxy- go upstream without the prefix, but for those
// that belong to a hop or to the proxy, which are dropped: the hop-by-hop
// headers (Connection, Keep-Alive, TE, Trailer, Transfer-Encoding,
// Upgrade), every Proxy-* header (Proxy-Authorization would hand a
// credential to a forward proxy on the way), Host and Content-Length.
// Of the caller's other headers only content negotiation (Accept,
// Accept-Encoding, Accept-Language, Content-Type, Content-Encoding,
// Content-Language), conditional and range requests (If-*, Range),
// User-Agent and trace context (Traceparent, Tracestate) are forwarded.
// The caller's Authorization (the API key) and cookies never are.
//
// The credentials follow the connection's auth mode: Bearer tokens for
// OAuth 2, app and client-credentials connections, Basic for BASIC, an
// OAuth 1.0a signature (the provider's method: HMAC-SHA1, HMAC-SHA256,
// RSA-SHA1 with Target.PrivateKey, or PLAINTEXT; TBA uses HMAC-SHA256
// with the account id as realm), then the provider's header and query
// templates (API keys). A header the caller sets through Nango-Proxy- wins
// over an injected one. Credentials go only to the base URL's scheme and
// host: a redirect to another host drops them unless
// Forward-Headers-On-Redirect is true.
//
// # What comes back
//
// The upstream's status, headers (minus hop-by-hop headers) and body,
// streamed through [net/http/httputil.ReverseProxy] with no buffering.
// Compressed bodies pass through unless Decompress is true (or the
// provider's catalogue entry says decompress). The proxy's own failures
// use the standard error body {"error":{"code","message"}}: 400
// invalid_headers for malformed option headers, 400
// invalid_connection_config and missing_connection_config for a base URL
// that cannot be built, 403
// upstream_address_refused, 502 upstream_error, 504 upstream_timeout.
//
// # Retries and refresh
//
// Retries (default 0) are made with go-retryablehttp: transient network
// errors (connection reset, refused or aborted, timeouts, unreachable host
// or network, a temporary DNS failure; never an address the [Policy]
// refuses, nor a name that does not exist), 5xx, 429 and the Retry-On
// statuses, with exponential backoff, honouring Retry-After and the
// provider's rate-limit reset headers, within the request's context. Only
// bodies kept in memory ([Config.MaxReplayBody]) are replayed. When the
// retries run out, the last upstream response is returned unchanged, or
// the last failure: 502 upstream_error, or 504 upstream_timeout when no
// response headers came within [Config.ResponseHeaderTimeout] (100 s by
// default, per attempt). A 401 on an OAuth 2 connection makes the [Source]
// refresh the token once, and the call is sent once more.
//
// # Safety
//
// Upstream connections follow the service's outbound address [Policy]
// (package egress), checked at dial time, after DNS resolution, by a
// net.Dialer Control hook ([NewTransport]): loopback, private, link-local,
// metadata and the other special-purpose addresses are refused unless the
// Policy allows them (metadata never), so neither DNS rebinding nor a
// redirect bypasses the check. The answers (403 upstream_address_refused,
// 502 upstream_error, 504 upstream_timeout) never name an address, a port
// or a dial error. The provider's base URL is built with
// integrations.Provider.RenderURL: a connection config value that would
// move it to another host is 400 invalid_connection_config.
package proxy
