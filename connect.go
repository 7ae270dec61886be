package connect

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/connectui"
	"github.com/embedauth/connect/console"
	"github.com/embedauth/connect/egress"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/functions"
	"github.com/embedauth/connect/functions/jsruntime"
	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/internal/cache"
	"github.com/embedauth/connect/internal/httpapi"
	"github.com/embedauth/connect/internal/secret"
	"github.com/embedauth/connect/jobs"
	"github.com/embedauth/connect/mcp"
	"github.com/embedauth/connect/oplog"
	"github.com/embedauth/connect/proxy"
	"github.com/embedauth/connect/ratelimit"
	"github.com/embedauth/connect/store"
	"github.com/embedauth/connect/webhooks"
)

// EncryptionKey is one key of the keyring that seals secrets at rest.
type EncryptionKey struct {
	// ID names the key inside sealed values (1 to 32 letters, digits, '-'
	// or '_'). It must never be reused for different key material. Empty
	// means EncryptionKeyID(Key), the id derived from the key itself, which
	// ParseEncryptionKey and the reference server use too: leave it empty
	// unless the database holds values sealed under an id chosen otherwise.
	ID string
	// Key is 32 random bytes.
	Key []byte
}

// Config configures a Service. Store and EncryptionKeys are required; every
// other field has a documented default.
type Config struct {
	// Store holds all state. Required: the Backend.Store of sqlite.Connect
	// (one process, a file; sqlite.MemoryPath for tests) or of
	// postgres.Connect, or a Store of the host's own.
	Store Store

	// EncryptionKeys seal credentials, client secrets, signing keys and
	// environment variable values with AES-256-GCM. The first key is the
	// primary: new values are sealed with it; the others only open old
	// values until ReencryptSecrets has re-sealed them. Required.
	//
	// Keep them: a secret sealed under a key that is lost cannot be read
	// again. Start (and CheckEncryptionKeys) refuse to run without a key
	// that stored secrets need, or with other material under its id, and a
	// read that meets such a secret answers 500 unknown_encryption_key
	// (encryption_key_mismatch). Give each key material its own id: leave
	// ID empty for EncryptionKeyID's, derived from the key (as
	// ParseEncryptionKey and the reference server do). Nothing is written
	// before the keys are checked: see CheckEncryptionKeys.
	EncryptionKeys []EncryptionKey

	// Providers is the provider catalogue. Defaults to
	// integrations.DefaultCatalog(), the embedded catalogue.
	Providers *integrations.Catalog

	// PublicURL is the address at which browsers and providers reach
	// Handler, with the path it is mounted under: "https://app.example.com/connect"
	// for a handler mounted with
	//
	//	mux.Handle("/connect/", http.StripPrefix("/connect", svc.Handler()))
	//
	// It is the one setting every generated address derives from: a
	// session's connect_link (ConnectUIURL), the API the connect UI calls
	// (ConnectUI.APIURL), provider logo URLs, integrations' incoming
	// webhook URLs, the OAuth redirect URI (OAuthCallbackURL), and the
	// websocketsPath GET /connect/session announces (its path followed by
	// WebsocketsPath). Handler serves its routes relative to its mount
	// point, so mount it with http.StripPrefix of PublicURL's path. Without
	// a PublicURL those addresses are paths from the root of the host,
	// right only when the handler is mounted at the root, and OAuth
	// providers refuse the relative redirect URI: set it in production.
	PublicURL string

	// LogoBaseURL is where the host serves provider logos of its own, an
	// absolute http or https URL without query or fragment: when set, the
	// logo URL of every provider without a logo of its own in the
	// catalogue is LogoBaseURL + "/" + provider + ".svg", and
	// GET /providers/{provider}/logo.svg redirects there. Empty (the
	// default): that route serves the logos this library embeds (from two
	// CC0 icon sets) and a monogram for the other providers.
	LogoBaseURL string

	// RateLimitRequests is the number of requests an account may make per
	// RateLimitWindow. Defaults to 3000; negative disables rate limiting.
	RateLimitRequests int
	// RateLimitWindow is the length of the fixed rate-limit window.
	// Defaults to one minute.
	RateLimitWindow time.Duration
	// RateLimiter replaces the in-process limiter built from
	// RateLimitRequests and RateLimitWindow, so that several instances can
	// share one limit (see postgres.NewRateLimiter).
	RateLimiter ratelimit.Limiter

	// APIKeyCacheTTL is how long an authenticated API key (and an
	// environment's webhook signing key) is remembered in process. A key
	// revoked by another instance keeps working here for at most this
	// long; one revoked through this Service stops at once. Concurrent
	// requests with a key that is not cached read the Store once, and a
	// key in use is read again in the background during the last quarter
	// of this TTL, so requests do not wait for the Store when it expires.
	// Defaults to 10 seconds; negative disables the cache.
	APIKeyCacheTTL time.Duration

	// MaxRequestBody limits API request bodies. Defaults to 1 MiB.
	MaxRequestBody int64
	// MaxImportBody limits the body of a bulk import (POST /connections
	// with an array of up to connections.MaxImportBatch connections).
	// Defaults to connections.DefaultMaxImportBody (32 MiB); it is never
	// less than MaxRequestBody.
	MaxImportBody int64

	// Logger receives operational logs. Defaults to discarding them.
	Logger *slog.Logger

	// Now returns the current time. Defaults to time.Now; tests set it.
	Now func() time.Time

	// Scheduler runs background jobs: webhook deliveries, sync runs, async
	// actions, on-event functions, retention. Required: the job queue in
	// the Store's database, Backend.Scheduler of sqlite.Connect or of
	// postgres.Connect (or sqlite.NewScheduler, postgres.NewScheduler).
	// Jobs are rows inserted in the same transaction as the change that
	// caused them; they survive restarts, and every instance on the
	// database shares them. (Tests use sqlite.Connect(ctx,
	// sqlite.MemoryPath, nil), whose Store and Scheduler live in memory.)
	// The webhook delivery job only wakes the outbox (attempts run outside
	// it, and wait in the Store between them), so the default JobTimeout
	// suffices. New registers its handlers on it, so a Scheduler serves
	// one Service; Start and Stop start and stop it.
	Scheduler jobs.Scheduler

	// Notifier receives events (connection created, refresh failed, sync
	// finished, provider webhook forwarded) in the transaction of the
	// change. Defaults to the webhook notifier, which stores signed
	// webhooks for the environment's URLs in the outbox and delivers them
	// through Scheduler. A host may replace it, for example to publish
	// events to its own queue.
	Notifier webhooks.Notifier

	// Webhooks tunes webhook delivery: the first retries (default 2),
	// their backoff (default 100 ms, doubling), then the slow retries of
	// its Schedule (default webhooks.DefaultSchedule(): the attempts of a
	// delivery span about 26 hours), per-attempt timeout (default 20 s),
	// the address policy of webhook URLs (Webhooks.Policy: by default only
	// public addresses, as for providers; webhook URLs are set by the
	// environments' API-key holders, so allow private networks only when
	// they are your own; refusals name Webhooks.Policy.Setting, by
	// default "connect.Config.Webhooks.Policy.AllowPrivateNetworks") and
	// the HTTP client (default: the policy checked at dial time, no
	// redirects followed). The policy is also applied when a webhook URL
	// is set (an environment's, a connect session's or a connection's
	// override: see webhooks.DeliveryConfig.CheckURL): a URL no delivery
	// could reach is refused with a 400 then.
	Webhooks webhooks.DeliveryConfig

	// WebhookFrom is the "from" of webhook bodies. Defaults to "nango", so
	// that receivers written for Nango keep working.
	WebhookFrom string

	// RefreshThreshold: reading a connection with its credentials
	// (GET /connections/{id}, Connections().Get) first refreshes an OAuth 2
	// or client-credentials token that expires within it and has at most
	// half of its lifetime left (so a token that lives shorter than the
	// threshold is refreshed once half used, not on every read; see
	// connections.RefreshDue); a provider's token_expiration_buffer
	// (seconds) replaces it. force_refresh=true refreshes whenever the
	// connection can be. Defaults to 15 minutes.
	RefreshThreshold time.Duration
	// RefreshTimeout bounds each request to a provider's token endpoint.
	// Defaults to 10 seconds.
	RefreshTimeout time.Duration
	// RefreshBackoff: after a failed refresh, reads without force_refresh
	// answer connection_refresh_backoff without calling the provider for
	// this long. Defaults to 30 seconds; negative disables it.
	RefreshBackoff time.Duration

	// ConnectSessionTTL is the lifetime of a connect session token
	// (POST /connect/sessions). Defaults to 30 minutes.
	ConnectSessionTTL time.Duration
	// ConnectUIURL is the address of the pre-built connect UI: a session's
	// connect_link is it with ?session_token=<token>. Defaults to
	// PublicURL + "/connect/" (or the relative "/connect/" without a
	// PublicURL). Must be an absolute http or https URL when set.
	ConnectUIURL string
	// ConnectUI configures the pre-built connect UI that Handler and
	// ConnectHandler serve at /connect/. Its APIURL defaults to PublicURL
	// (without a PublicURL, the UI calls the parent of its own address).
	ConnectUI connectui.Config
	// Console configures the operations console that Handler serves at
	// /console/ and ConsoleHandler alone. Its APIURL defaults to PublicURL
	// (without a PublicURL, the console calls the parent of its own
	// address).
	Console console.Config
	// DisableConsole leaves the console out of Handler (ConsoleHandler
	// still serves it, for a host that mounts it behind its own
	// authentication).
	DisableConsole bool
	// Egress is the outbound address policy of every request to a provider
	// built from stored or end-user input: the proxy, token and refresh
	// requests (code exchange, refresh, client credentials, OAuth 1 and
	// app installation tokens) and credential checks. It is checked at dial
	// time, after DNS resolution, for every connection and redirect (see
	// package egress). The zero value, the default, allows only public
	// addresses: loopback, private, link-local, metadata and every other
	// special-purpose address are refused. Egress.AllowLoopback and
	// Egress.AllowPrivateNetworks open loopback and private networks
	// (metadata addresses stay refused), for providers on your own network
	// or fakes in tests. A Proxy.Transport you set replaces it for the
	// proxy (build it on proxy.NewTransport or egress.NewTransport).
	// Refusals ("address not allowed", 403 upstream_address_refused)
	// name Egress.Setting as what allows private networks; it defaults
	// to "connect.Config.Egress.AllowPrivateNetworks": a host whose
	// operators set the policy another way (an environment variable, a
	// flag) names that instead.
	Egress egress.Policy

	// Proxy tunes the proxy (ProxyHandler, Proxy, ProxyClient): retries,
	// the upstream timeout (ResponseHeaderTimeout, 100 s per attempt by
	// default), redirects, body limits (MaxRequestBody and MaxResponseBody,
	// unlimited by default) and the upstream Transport. Its Policy is
	// Egress (a Proxy.Policy set without Egress is taken as Egress, as
	// before Egress existed; both set and different is an error); its
	// Source, Logger and Now are set by New.
	Proxy proxy.Config
	// ProxyCacheTTL is how long the proxy reuses a connection it read
	// (with its credentials) for later calls to the same connection. A
	// token about to expire is never reused, a 401 bypasses the cache, and
	// a change of the connection or of its integration through this
	// Service drops it; a connection deleted or re-authorized through
	// another instance may be used with its old credentials for at most
	// this long. Concurrent calls to a connection that is not cached read
	// it once, and a connection in use is read again in the background
	// during the last quarter of this TTL, so calls do not wait for the
	// Store when it expires. Defaults to 5 seconds; negative disables the
	// cache.
	//
	// A started Service whose Store has a change feed (store.ChangeFeed:
	// store/postgres and store/sqlite have one) follows it instead and
	// reuses connections for up to ProxyCacheMaxAge: a change made through
	// any instance then drops the cached copies within about
	// ChangePollInterval. ProxyCacheTTL applies again while the Service is
	// stopped and whenever the feed cannot be read for longer than
	// ProxyCacheTTL.
	ProxyCacheTTL time.Duration
	// ProxyCacheMaxAge is how long the proxy reuses a connection while the
	// Service follows the Store's change feed (see ProxyCacheTTL). A token
	// about to expire is still never reused. Defaults to
	// DefaultProxyCacheMaxAge (5 minutes); negative keeps ProxyCacheTTL
	// always.
	ProxyCacheMaxAge time.Duration
	// ProxyCacheEntries bounds the number of connections the proxy caches
	// (each takes about 1 KiB with its credentials, in a form the garbage
	// collector does not scan: see proxy.Packed). Defaults to
	// DefaultProxyCacheEntries (100,000).
	ProxyCacheEntries int
	// ChangePollInterval is how often a started Service reads the Store's
	// change feed (see ProxyCacheTTL). Defaults to 1 second.
	ChangePollInterval time.Duration

	// CredentialCheckTimeout bounds the request that checks the
	// credentials an end user enters through a connect session (the
	// provider's verification endpoint), and the token request of a
	// client-credentials connection. Defaults to 10 seconds.
	CredentialCheckTimeout time.Duration
	// AWSSTSEndpoint returns the AWS STS endpoint of a region for AWS
	// SigV4 integrations in builtin STS mode; nil means AWS's own
	// (https://sts.{region}.amazonaws.com/). The region is a checked
	// region name; an end user never chooses the host. Tests point it at
	// a fake STS.
	AWSSTSEndpoint connections.AWSSTSEndpointFunc
	// OAuthCallbackURL is the redirect URI to register with OAuth
	// providers: where end users' browsers reach GET /oauth/callback.
	// Defaults to PublicURL + "/oauth/callback". Must be an absolute http
	// or https URL when set.
	OAuthCallbackURL string
	// OAuthFlowTTL is how long an end user has to come back from the
	// provider once an OAuth flow started. Defaults to 15 minutes.
	OAuthFlowTTL time.Duration
	// WebsocketsPath is the path, relative to the handler's mount point, of
	// the WebSocket that @nangohq/frontend's auth() listens on. Handler and
	// ConnectHandler serve it to WebSocket upgrade requests. The frontend's
	// websocketsPath option is PublicURL's path followed by it ("/connect/"
	// for the default under PublicURL "https://app.example.com/connect"):
	// the client resolves it against its host's origin, dropping the
	// host's path. GET /connect/session announces that value. Defaults to
	// "/".
	WebsocketsPath string

	// Functions tunes function runs: their deadlines, the heartbeat of
	// sync runs (a run not heard from for three heartbeats is taken as
	// interrupted) and how often due syncs are looked for. See
	// FunctionsConfig.
	Functions FunctionsConfig

	// MaintenanceInterval is how often a started Service sweeps: it
	// refreshes tokens that would expire before the next sweep (plus
	// RefreshThreshold), so that connections nobody reads stay valid and
	// their refresh tokens stay in use (a token that lives shorter than
	// that window is refreshed once per window, not at every sweep; see
	// connections.SweepDue), it deletes expired connect
	// sessions and OAuth flows, and it queues the retention job (see
	// Retention). Several instances may sweep at once: each
	// token is still refreshed once. Defaults to 5 minutes; negative
	// disables the sweeps (call Sweep yourself).
	MaintenanceInterval time.Duration

	// Retention says how long finished webhook deliveries (30 days by
	// default) and operations log entries (15 days) are kept. See
	// RetentionConfig.
	Retention RetentionConfig

	// IncomingWebhooks bounds what providers' webhooks
	// (POST /webhook/{environment}/{integration}) may store: the size of
	// a body and each integration's storage quota of forwarded webhooks.
	// See IncomingWebhooksConfig.
	IncomingWebhooks IncomingWebhooksConfig
}

// IncomingWebhooksConfig bounds what the unauthenticated route of providers'
// webhooks stores. The route of an integration whose provider does not sign
// its webhooks accepts deliveries from anyone who knows its URL (the
// environment's name and the integration's key), so these bounds are what
// stands between an anonymous flood and the database. Whatever is sent:
//
//   - the forwards stored for such an integration take at most
//     StorageQuota bytes, each charged its body and the cost of its row
//     (webhooks.ForwardCharge: n + n/16 + 3·t + 4096 bytes for a body of
//     n bytes and a URL, integration key and connection id of t bytes);
//   - the operations log entries of deliveries that no signature verified,
//     and of the delivery attempts of their forwards, are sampled: at most
//     one per LogInterval for each environment, integration and outcome
//     (at most 10 outcomes per integration), per Service instance, each
//     standing for those left out (meta "suppressed"), never holding the
//     body, at most 5 KiB on disk; kept for Retention.Logs, that is at most
//     10 × (Retention.Logs / LogInterval + 1) entries per integration and
//     instance: 216,010 entries, at most 1.03 GiB (typically about
//     150 MB), at the defaults.
//
// The rate limit (RateLimitRequests per RateLimitWindow and account, counted
// apart from the API's) bounds how many deliveries are accepted. The
// deliveries API keeps each forward's own status, last error and attempt
// count whatever the log samples.
type IncomingWebhooksConfig struct {
	// MaxBody limits the body of an incoming webhook: a larger one is
	// refused with 413 payload_too_large, before anything is stored or
	// logged. Defaults to webhooks.DefaultIncomingMaxBody (1 MiB).
	MaxBody int64
	// StorageQuota bounds, per integration, the bytes taken by the
	// forward webhooks (one per destination URL) that the outbox holds,
	// pending, delivered or failed: their bodies and rows, as charged (see
	// below). Storing a forward that takes an integration past it first
	// deletes that integration's oldest delivered or failed forwards,
	// before their retention period; when
	// the pending ones alone fill it (the application has not accepted
	// them), an incoming webhook that no signature verified is refused
	// with 429 webhook_storage_full and no forward of it is stored (a
	// verified one is stored regardless: only the provider can send it).
	// Each forward is charged webhooks.ForwardCharge of its row: the body,
	// a sixteenth more, three times the length of its URL, integration key
	// and connection id, and 4096 bytes for the rest of its row and its
	// index entries (measured on Postgres), so that the quota bounds many
	// tiny forwards as it bounds a few large ones. Defaults to
	// webhooks.DefaultForwardQuota (256 MiB); it must be at least four
	// times the charge of a forward of MaxBody bytes; negative disables
	// the quota.
	StorageQuota int64
	// LogInterval is the sampling interval of the operations log entries
	// that anyone can cause: those of incoming webhooks that no signature
	// verified (accepted, challenge answered, refused) and of the delivery
	// attempts of their forwards. Each Service instance records at most
	// one entry per LogInterval for each environment, integration and
	// outcome (a refusal's reason; accepted; delivered, retrying or
	// given_up), whose meta "suppressed" counts those it left out since
	// the previous one; by Config.Now. Entries of verified deliveries and
	// of every other webhook are all recorded. Defaults to one minute
	// (oplog.DefaultSampleInterval); it must not be negative.
	LogInterval time.Duration
}

// withDefaults fills the zero fields of c and checks it.
func (c IncomingWebhooksConfig) withDefaults() (IncomingWebhooksConfig, error) {
	if c.MaxBody < 0 {
		return c, errors.New("connect: Config.IncomingWebhooks.MaxBody must not be negative")
	}
	if c.MaxBody == 0 {
		c.MaxBody = webhooks.DefaultIncomingMaxBody
	}
	if c.StorageQuota == 0 {
		c.StorageQuota = webhooks.DefaultForwardQuota
	}
	if charge := webhooks.ForwardCharge(int(c.MaxBody), 0); c.StorageQuota > 0 && c.StorageQuota/4 < charge {
		return c, fmt.Errorf("connect: Config.IncomingWebhooks.StorageQuota (%d bytes) must be at least four times the charge of a forward of MaxBody (%d bytes: %d), or negative to disable it",
			c.StorageQuota, c.MaxBody, charge)
	}
	if c.LogInterval < 0 {
		return c, errors.New("connect: Config.IncomingWebhooks.LogInterval must not be negative")
	}
	if c.LogInterval == 0 {
		c.LogInterval = oplog.DefaultSampleInterval
	}
	return c, nil
}

// FunctionsConfig tunes the functions of a Service (Service.Functions).
// Zero fields take the defaults of package functions.
type FunctionsConfig struct {
	// ActionTimeout bounds an action run (default 15 minutes).
	ActionTimeout time.Duration
	// SyncTimeout bounds a sync run (default 1 hour).
	SyncTimeout time.Duration
	// Heartbeat is how often a running sync run marks itself alive
	// (default 10 seconds).
	Heartbeat time.Duration
	// TickInterval is how often each started instance looks for due syncs
	// (default 1 second): a run starts within about this long of its due
	// time.
	TickInterval time.Duration
	// RetryBackoff is the wait before attempt n (from 2) of an async
	// action (default functions.DefaultRetryBackoff: 3 seconds, doubling,
	// at most 5 minutes).
	RetryBackoff func(n int) time.Duration
	// Runtimes run the functions deployed at run time, by the name their
	// Function.Runtime gives (see functions.Service.AddRuntime). The
	// functions deployed with the nango CLI (POST /sync/deploy) need
	// functions.JavaScriptRuntime: without it, their deployment is refused
	// with 501 javascript_runtime_unavailable.
	Runtimes map[string]functions.Runtime
	// JavaScript configures the runtime of functions deployed with the
	// nango CLI (memory, call depth and how many run at once); the zero
	// value keeps jsruntime's defaults.
	JavaScript jsruntime.Options
	// DisableJavaScript leaves the JavaScript runtime out (unless Runtimes
	// gives one): deployments of functions are then refused with 501
	// javascript_runtime_unavailable, and no code others wrote runs.
	DisableJavaScript bool
}

// Errors returned by New for a missing or wrong part of Config.
var (
	ErrMissingStore         = errors.New("connect: Config.Store is required")
	ErrMissingEncryptionKey = errors.New("connect: Config.EncryptionKeys needs at least one key")
	ErrMissingScheduler     = errors.New("connect: Config.Scheduler is required: give the Backend.Scheduler of sqlite.Connect or postgres.Connect, the job queue in the Store's database")
)

// Service holds end users' authorization for external APIs and serves the
// API over it. Create it with New; it is safe for concurrent use.
type Service struct {
	cfg     Config
	store   Store
	keyring *secret.Keyring
	logger  *slog.Logger
	limiter ratelimit.Limiter
	log     *oplog.Writer

	environments *environments.Service
	integrations *integrations.Service
	connections  *connections.Service
	sessions     *connections.Sessions
	connectUI    *connectui.Handler
	console      *console.Handler
	proxy        *proxy.Proxy
	proxyCache   *cache.Cache[proxyKey, proxy.Packed]

	functions *functions.Service
	mcp       *mcp.Server

	scheduler jobs.Scheduler
	notifier  webhooks.Notifier
	deliverer *webhooks.Deliverer
	outbox    *webhooks.Outbox
	// sampler samples the log entries that anyone can cause (incoming
	// webhooks no signature verified, attempts of their forwards): one
	// per Service, shared by its incoming handlers and its Deliverer.
	sampler *oplog.Sampler

	mu      sync.Mutex
	started bool
	// stopSweeps ends the maintenance loop; sweepsDone is closed when it
	// has ended.
	stopSweeps context.CancelFunc
	sweepsDone chan struct{}
	// stopWatch ends the change feed's watcher (nil when none runs);
	// watchDone is closed when it has ended.
	stopWatch context.CancelFunc
	watchDone chan struct{}
}

// New validates cfg and builds a Service. It does not touch the database:
// migrate it first (sqlite.Connect and postgres.Connect do).
func New(cfg Config) (*Service, error) {
	if cfg.Store == nil {
		return nil, ErrMissingStore
	}
	if len(cfg.EncryptionKeys) == 0 {
		return nil, ErrMissingEncryptionKey
	}
	if cfg.Scheduler == nil {
		return nil, ErrMissingScheduler
	}
	keys := make([]secret.Key, len(cfg.EncryptionKeys))
	for i, k := range cfg.EncryptionKeys {
		if k.ID == "" {
			k.ID = EncryptionKeyID(k.Key)
		}
		keys[i] = secret.Key{ID: k.ID, Secret: k.Key}
	}
	keyring, err := secret.NewKeyring(keys...)
	if err != nil {
		return nil, fmt.Errorf("connect: Config.EncryptionKeys: %w", err)
	}
	if cfg.PublicURL != "" {
		u, err := url.Parse(cfg.PublicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
			u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
			return nil, fmt.Errorf("connect: Config.PublicURL %q must be an absolute http or https URL without user info, query or fragment", cfg.PublicURL)
		}
		cfg.PublicURL = strings.TrimRight(cfg.PublicURL, "/")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	switch {
	case cfg.Proxy.Policy == (egress.Policy{}):
	case cfg.Egress == (egress.Policy{}):
		cfg.Egress = cfg.Proxy.Policy // the policy's name before Egress
	case cfg.Egress != cfg.Proxy.Policy:
		return nil, errors.New("connect: Config.Proxy.Policy and Config.Egress differ: set Config.Egress only")
	}
	cfg.Proxy.Policy = cfg.Egress
	// Refusals name the setting that allows private networks.
	if cfg.Egress.Setting == "" {
		cfg.Egress.Setting = "connect.Config.Egress.AllowPrivateNetworks"
		cfg.Proxy.Policy = cfg.Egress
	}
	if cfg.Webhooks.Policy.Setting == "" {
		cfg.Webhooks.Policy.Setting = "connect.Config.Webhooks.Policy.AllowPrivateNetworks"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.RateLimitWindow < 0 {
		return nil, errors.New("connect: Config.RateLimitWindow must not be negative")
	}
	if cfg.RateLimitWindow == 0 {
		cfg.RateLimitWindow = time.Minute
	}
	if cfg.RateLimitRequests == 0 {
		cfg.RateLimitRequests = 3000
	}
	if cfg.APIKeyCacheTTL == 0 {
		cfg.APIKeyCacheTTL = 10 * time.Second
	}
	if cfg.RefreshThreshold < 0 || cfg.RefreshTimeout < 0 {
		return nil, errors.New("connect: Config.RefreshThreshold and Config.RefreshTimeout must not be negative")
	}
	if cfg.ConnectSessionTTL < 0 || cfg.CredentialCheckTimeout < 0 {
		return nil, errors.New("connect: Config.ConnectSessionTTL and Config.CredentialCheckTimeout must not be negative")
	}
	if cfg.ConnectUIURL != "" {
		u, err := url.Parse(cfg.ConnectUIURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("connect: Config.ConnectUIURL %q must be an absolute http or https URL", cfg.ConnectUIURL)
		}
	} else {
		cfg.ConnectUIURL = cfg.PublicURL + "/connect/"
	}
	if cfg.OAuthCallbackURL != "" {
		u, err := url.Parse(cfg.OAuthCallbackURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("connect: Config.OAuthCallbackURL %q must be an absolute http or https URL", cfg.OAuthCallbackURL)
		}
	}
	if cfg.MaintenanceInterval == 0 {
		cfg.MaintenanceInterval = DefaultMaintenanceInterval
	}
	if cfg.ProxyCacheEntries < 0 || cfg.ChangePollInterval < 0 {
		return nil, errors.New("connect: Config.ProxyCacheEntries and Config.ChangePollInterval must not be negative")
	}
	if cfg.ProxyCacheEntries == 0 {
		cfg.ProxyCacheEntries = DefaultProxyCacheEntries
	}
	if cfg.ProxyCacheMaxAge == 0 {
		cfg.ProxyCacheMaxAge = DefaultProxyCacheMaxAge
	}
	if cfg.ChangePollInterval == 0 {
		cfg.ChangePollInterval = DefaultChangePollInterval
	}
	if cfg.OAuthFlowTTL < 0 {
		return nil, errors.New("connect: Config.OAuthFlowTTL must not be negative")
	}
	if cfg.MaxRequestBody < 0 {
		return nil, errors.New("connect: Config.MaxRequestBody must not be negative")
	}
	if cfg.MaxRequestBody == 0 {
		cfg.MaxRequestBody = httpapi.DefaultMaxBody
	}
	if cfg.MaxImportBody < 0 {
		return nil, errors.New("connect: Config.MaxImportBody must not be negative")
	}
	if cfg.MaxImportBody == 0 {
		cfg.MaxImportBody = connections.DefaultMaxImportBody
	}
	if err := checkRetention(cfg.Retention); err != nil {
		return nil, err
	}
	cfg.Retention = cfg.Retention.withDefaults()
	if cfg.IncomingWebhooks, err = cfg.IncomingWebhooks.withDefaults(); err != nil {
		return nil, err
	}
	if cfg.ConnectUI.APIURL == "" {
		cfg.ConnectUI.APIURL = cfg.PublicURL
	}
	connectUI, err := connectui.New(cfg.ConnectUI)
	if err != nil {
		return nil, fmt.Errorf("connect: Config.ConnectUI: %w", err)
	}
	if cfg.Console.APIURL == "" {
		cfg.Console.APIURL = cfg.PublicURL
	}
	consoleUI, err := console.New(cfg.Console)
	if err != nil {
		return nil, fmt.Errorf("connect: Config.Console: %w", err)
	}
	if cfg.Providers == nil {
		cat, err := integrations.DefaultCatalog()
		if err != nil {
			return nil, fmt.Errorf("connect: embedded provider catalogue: %w", err)
		}
		cfg.Providers = cat
	}
	s := &Service{cfg: cfg, store: cfg.Store, keyring: keyring, logger: cfg.Logger, connectUI: connectUI, console: consoleUI}
	// Nothing is sealed before the keys are checked against the Store.
	keyring.Guard(s.checkEncryptionKeys)
	switch {
	case cfg.RateLimiter != nil:
		s.limiter = cfg.RateLimiter
	case cfg.RateLimitRequests > 0:
		s.limiter = ratelimit.NewFixedWindow(cfg.RateLimitRequests, cfg.RateLimitWindow, cfg.Now)
	}
	s.log = &oplog.Writer{Store: cfg.Store, Now: cfg.Now}
	s.sampler = oplog.NewSampler(cfg.IncomingWebhooks.LogInterval)
	ttl := cfg.APIKeyCacheTTL
	if ttl < 0 {
		ttl = 0
	}
	s.environments = environments.NewService(cfg.Store, keyring, cfg.Now, ttl)
	s.proxyCache = s.newProxyCache()
	// Changes of connections and integrations made through this Service
	// drop the proxy's cached copies.
	s.integrations = integrations.NewService(integrationCacheInvalidator{cfg.Store, s.proxyCache, func(env int64, key string) {
		if s.functions != nil {
			s.functions.ForgetIntegration(env, key)
		}
	}}, cfg.Store, cfg.Providers, keyring, s.log, cfg.Now)
	if err := s.integrations.SetLogoBaseURL(cfg.LogoBaseURL); err != nil {
		return nil, fmt.Errorf("connect: Config.LogoBaseURL: %w", err)
	}
	s.connections = connections.NewService(proxyCacheInvalidator{cfg.Store, s.proxyCache}, cfg.Store, cfg.Providers, keyring, s.log, cfg.Now)
	s.connections.SetMaxImportBody(cfg.MaxImportBody)
	// Webhook URLs are checked against the webhook address policy when
	// they are set, not only when a delivery dials.
	s.environments.SetWebhookURLCheck(cfg.Webhooks.CheckURLField)
	s.connections.SetWebhookURLCheck(cfg.Webhooks.CheckURLField)
	if err := s.setupWebhooks(); err != nil {
		return nil, err
	}
	s.setupRefresh()
	if err := s.setupProxy(); err != nil {
		return nil, fmt.Errorf("connect: Config.Proxy: %w", err)
	}
	s.functions, err = functions.NewService(functions.Config{
		Store:         cfg.Store,
		Connections:   s.connections,
		Integrations:  s.integrations,
		Environments:  s.environments,
		Catalog:       cfg.Providers,
		Proxy:         s.proxy,
		Keyring:       keyring,
		Scheduler:     s.scheduler,
		Notifier:      s.notifier,
		Log:           s.log,
		Logger:        cfg.Logger,
		Now:           cfg.Now,
		WebhookFrom:   cfg.WebhookFrom,
		ActionTimeout: cfg.Functions.ActionTimeout,
		SyncTimeout:   cfg.Functions.SyncTimeout,
		Heartbeat:     cfg.Functions.Heartbeat,
		TickInterval:  cfg.Functions.TickInterval,
		RetryBackoff:  cfg.Functions.RetryBackoff,
		// A webhook run holds its provider webhook: an incoming body, or a
		// form body turned into JSON (which escapes may make larger).
		MaxWebhookPayload: 2 * int(cmp.Or(cfg.IncomingWebhooks.MaxBody, webhooks.DefaultIncomingMaxBody)),
	})
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	// The runtimes of functions deployed at run time; the JavaScript
	// runtime of the functions deployed with the nango CLI unless
	// Config.Functions.Runtimes gives one of that name.
	for name, rt := range cfg.Functions.Runtimes {
		if err := s.functions.AddRuntime(name, rt); err != nil {
			return nil, fmt.Errorf("connect: Config.Functions.Runtimes: %w", err)
		}
	}
	if _, ok := cfg.Functions.Runtimes[functions.JavaScriptRuntime]; !ok && !cfg.Functions.DisableJavaScript {
		js := cfg.Functions.JavaScript
		if js.Logger == nil {
			js.Logger = cfg.Logger
		}
		jsrt, err := jsruntime.New(js)
		if err != nil {
			return nil, fmt.Errorf("connect: Config.Functions.JavaScript: %w", err)
		}
		if err := s.functions.AddRuntime(functions.JavaScriptRuntime, jsrt); err != nil {
			return nil, fmt.Errorf("connect: %w", err)
		}
	}
	if err := s.functions.RegisterJobs(s.scheduler); err != nil {
		return nil, fmt.Errorf("connect: register the jobs of functions: %w", err)
	}
	if err := s.scheduler.Register(RetentionJobKind, s.handleRetentionJob); err != nil {
		return nil, fmt.Errorf("connect: register the retention job: %w", err)
	}
	s.connections.SetHooks(s.functions)
	s.sessions, err = connections.NewSessions(s.connections, connections.SessionsConfig{
		Store:          cfg.Store,
		Environments:   cfg.Store,
		Integrations:   s.integrations,
		Notifier:       s.notifier,
		Limiter:        s.limiter,
		Logger:         cfg.Logger,
		TTL:            cfg.ConnectSessionTTL,
		ConnectUIURL:   cfg.ConnectUIURL,
		PublicURL:      cfg.PublicURL,
		CheckTimeout:   cfg.CredentialCheckTimeout,
		AWSSTSEndpoint: cfg.AWSSTSEndpoint,
		Policy:         cfg.Egress,
		MaxBody:        cfg.MaxRequestBody,
		CallbackURL:    cfg.OAuthCallbackURL,
		FlowTTL:        cfg.OAuthFlowTTL,
		WebsocketsPath: cfg.WebsocketsPath,
	})
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	s.mcp = mcp.New(mcp.Config{Actions: s.functions, API: s.toolAPI(), Logger: s.logger})
	return s, nil
}

// setupRefresh installs the token refresher of Connections().Get. It needs
// the Notifier, so it runs after setupWebhooks.
func (s *Service) setupRefresh() {
	s.connections.EnableRefresh(connections.RefreshConfig{
		Threshold: s.cfg.RefreshThreshold,
		Timeout:   s.cfg.RefreshTimeout,
		Backoff:   s.cfg.RefreshBackoff,
		Policy:    s.cfg.Egress,
		Logger:    s.logger,
		ClientCredentials: func(ctx context.Context, envID int64, key string) (string, string, error) {
			it, err := s.integrations.Get(ctx, envID, key)
			if err != nil {
				return "", "", err
			}
			if it.Credentials == nil {
				return "", "", nil
			}
			return it.Credentials.ClientID, it.Credentials.ClientSecret, nil
		},
		AppCredentials: func(ctx context.Context, envID int64, key string) (string, string, error) {
			it, err := s.integrations.Get(ctx, envID, key)
			if err != nil {
				return "", "", err
			}
			if it.Credentials == nil {
				return "", "", nil
			}
			return it.Credentials.AppID, it.Credentials.PrivateKey, nil
		},
		Integration:    s.integrations.Get,
		AWSSTSEndpoint: s.cfg.AWSSTSEndpoint,
		Notifier:       s.notifier,
		EnvironmentName: func(ctx context.Context, envID int64) (string, error) {
			env, err := s.store.GetEnvironment(ctx, envID)
			if err != nil {
				return "", err
			}
			return env.Name, nil
		},
	})
}

// Environments manages environments, API keys and variables.
func (s *Service) Environments() *environments.Service { return s.environments }

// Integrations manages integrations and the provider catalogue.
func (s *Service) Integrations() *integrations.Service { return s.integrations }

// Connections manages connections.
func (s *Service) Connections() *connections.Service { return s.connections }

// Functions returns the functions part: register actions, syncs and
// on-event functions written in Go, trigger actions and syncs, read sync
// statuses.
func (s *Service) Functions() *functions.Service { return s.functions }

// ConnectSessions manages connect sessions: create them from Go (as
// POST /connect/sessions does), authenticate their tokens, and run the
// non-OAuth auth calls of the frontend client.
func (s *Service) ConnectSessions() *connections.Sessions { return s.sessions }

// ListLogs lists operations log entries, newest first.
func (s *Service) ListLogs(ctx context.Context, f oplog.Filter) ([]*oplog.Entry, error) {
	return s.log.List(ctx, f)
}

// Start starts background work (the Scheduler, which delivers webhooks). It
// returns at once; Stop ends the work. Webhooks are stored in the outbox
// whether or not the Service is started, and delivered once it is.
//
// It first checks the encryption keys (CheckEncryptionKeys) and refuses to
// start, with a *MissingKeysError, when the Store holds secrets sealed
// under keys that Config.EncryptionKeys lacks.
func (s *Service) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return errors.New("connect: Service already started")
	}
	if err := s.CheckEncryptionKeys(ctx); err != nil {
		return err
	}
	if err := s.deliverer.Start(ctx); err != nil {
		return fmt.Errorf("connect: start webhook delivery: %w", err)
	}
	if err := s.scheduler.Start(ctx); err != nil {
		_ = s.deliverer.Stop(ctx)
		return fmt.Errorf("connect: start scheduler: %w", err)
	}
	if err := s.functions.Start(ctx); err != nil {
		_ = s.scheduler.Stop(ctx)
		_ = s.deliverer.Stop(ctx)
		return fmt.Errorf("connect: start functions: %w", err)
	}
	s.started = true
	if w := s.newChangeWatcher(); w != nil {
		wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		s.stopWatch, s.watchDone = cancel, make(chan struct{})
		go s.watchChanges(wctx, w, s.watchDone)
	}
	if s.cfg.MaintenanceInterval > 0 {
		sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		s.stopSweeps, s.sweepsDone = cancel, make(chan struct{})
		go s.sweepLoop(sctx, s.sweepsDone)
	}
	return nil
}

// DefaultMaintenanceInterval is the default Config.MaintenanceInterval.
const DefaultMaintenanceInterval = 5 * time.Minute

// SweepResult is what one maintenance sweep did.
type SweepResult struct {
	Refresh connections.SweepResult
	// SessionsDeleted and FlowsDeleted count the expired connect sessions
	// and OAuth flows deleted.
	SessionsDeleted int
	FlowsDeleted    int
	// ChangesPruned counts the changes pruned from the Store's change
	// feed (store.ChangeFeed), kept for an hour.
	ChangesPruned int
}

// Sweep runs one maintenance pass now (a started Service runs one every
// Config.MaintenanceInterval): it refreshes every token that expires within
// within plus RefreshThreshold (the window) and has at most half of its
// lifetime left, unless it was obtained less than one window ago
// (connections.SweepDue), and deletes expired connect sessions and OAuth
// flows, and the changes of the Store's change feed older than an hour. It
// also queues the retention job (RetentionJobKind, see Retain), which the
// Scheduler runs on one instance.
func (s *Service) Sweep(ctx context.Context, within time.Duration) (SweepResult, error) {
	var res SweepResult
	var err error
	threshold := s.cfg.RefreshThreshold
	if threshold <= 0 {
		threshold = connections.DefaultRefreshThreshold
	}
	res.Refresh, err = s.connections.SweepRefresh(ctx, within+threshold)
	if err != nil {
		return res, fmt.Errorf("connect: refresh sweep: %w", err)
	}
	res.SessionsDeleted, err = s.sessions.Prune(ctx)
	if err != nil {
		return res, fmt.Errorf("connect: pruning connect sessions: %w", err)
	}
	res.FlowsDeleted, err = s.store.DeleteExpiredOAuthFlows(ctx, s.cfg.Now().UTC().Add(-time.Hour), 0)
	if err != nil {
		return res, fmt.Errorf("connect: pruning OAuth flows: %w", err)
	}
	if feed, ok := s.store.(store.ChangeFeed); ok {
		res.ChangesPruned, err = feed.PruneConnectionChanges(ctx, s.cfg.Now().UTC().Add(-changeRetention))
		if err != nil {
			return res, fmt.Errorf("connect: pruning the change feed: %w", err)
		}
	}
	if err := s.queueRetention(ctx); err != nil {
		return res, fmt.Errorf("connect: queueing the retention job: %w", err)
	}
	return res, nil
}

// sweepLoop runs Sweep every MaintenanceInterval (the first after a random
// part of it, so that instances started together spread out) until ctx
// ends.
func (s *Service) sweepLoop(ctx context.Context, done chan struct{}) {
	defer close(done)
	every := s.cfg.MaintenanceInterval
	wait := time.Duration(rand.Int64N(int64(every)))
	for {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		res, err := s.Sweep(ctx, every)
		switch {
		case err != nil && ctx.Err() == nil:
			s.logger.ErrorContext(ctx, "maintenance sweep failed", "err", err)
		case err == nil && (res.Refresh.Checked > 0 || res.SessionsDeleted > 0 || res.FlowsDeleted > 0 || res.ChangesPruned > 0):
			s.logger.InfoContext(ctx, "maintenance sweep", "checked", res.Refresh.Checked, "refreshed", res.Refresh.Refreshed,
				"failed", res.Refresh.Failed, "sessions_deleted", res.SessionsDeleted, "flows_deleted", res.FlowsDeleted, "changes_pruned", res.ChangesPruned)
		}
		wait = every
	}
}

// Stop stops background work, waiting for running jobs within ctx's
// deadline; jobs still running then are interrupted and run again after
// the next Start (or by another instance sharing a Postgres scheduler). It
// also waits, within ctx, for the caches' background refreshes (of API
// keys, signing keys and the proxy's connections) to end.
func (s *Service) Stop(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.started {
		return nil
	}
	s.started = false
	if s.stopSweeps != nil {
		s.stopSweeps()
		select {
		case <-s.sweepsDone:
		case <-ctx.Done():
		}
		s.stopSweeps, s.sweepsDone = nil, nil
	}
	if s.stopWatch != nil {
		s.stopWatch()
		select {
		case <-s.watchDone:
		case <-ctx.Done():
		}
		s.stopWatch, s.watchDone = nil, nil
	}
	ferr := s.functions.Stop(ctx)
	// Webhook delivery first: it stops claiming at once and its attempts
	// in flight end (or are cut short) within ctx, while the delivery jobs
	// the scheduler may still be running only kick it, and return.
	derr := errors.Join(ferr, s.deliverer.Stop(ctx))
	if err := s.scheduler.Stop(ctx); err != nil {
		return errors.Join(derr, fmt.Errorf("connect: stop scheduler: %w", err))
	}
	// The caches' background refreshes end too, before the host closes
	// its database.
	refreshed := make(chan struct{})
	go func() {
		s.proxyCache.Wait()
		s.environments.WaitRefreshes()
		close(refreshed)
	}()
	select {
	case <-refreshed:
	case <-ctx.Done():
	}
	if derr != nil {
		return fmt.Errorf("connect: stop webhook delivery: %w", derr)
	}
	return nil
}

// ReencryptSecrets re-seals, under the primary encryption key, every secret
// still sealed with another key: signing keys, environment variables,
// integration credentials, connection credentials, connect sessions'
// defaults, OAuth flows' secrets, the payloads of sync records and the
// inputs, outputs and errors of async actions. It returns how many values it
// re-sealed. After it returns without error, older keys can be removed
// from Config.EncryptionKeys: it also drops their ids from the Store's
// registry (see CheckEncryptionKeys) when no value names them any longer.
// It checks the keys first (CheckEncryptionKeys, unless a check passed) and
// re-seals nothing when the Store needs a key the Service lacks.
func (s *Service) ReencryptSecrets(ctx context.Context) (int, error) {
	if err := s.keyring.Ready(ctx); err != nil {
		return 0, err
	}
	n, err := s.reencryptRecords(ctx)
	if err != nil {
		return n, err
	}
	k, err := s.resealRest(ctx)
	return n + k, err
}

// reencryptRecords re-seals the secrets of environments, integrations and
// connections, record by record.
func (s *Service) reencryptRecords(ctx context.Context) (int, error) {
	n, err := s.environments.Reseal(ctx)
	if err != nil {
		return n, err
	}
	envs, err := s.environments.List(ctx)
	if err != nil {
		return n, err
	}
	for _, env := range envs {
		k, err := s.integrations.Reseal(ctx, env.ID)
		n += k
		if err != nil {
			return n, err
		}
		k, err = s.connections.Reseal(ctx, env.ID)
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// APIHandler serves the API-key routes: providers, integrations,
// connections, connect sessions, environment variables and webhook
// deliveries. GET /integrations
// and GET /providers/{provider} also accept a connect session token as
// bearer, as the connect UI calls them (the integrations listed are then
// those the session allows); every other route refuses one. Mount it at the
// root of a mux, or under a prefix with http.StripPrefix.
func (s *Service) APIHandler() http.Handler {
	mux := http.NewServeMux()
	s.registerAPI(mux)
	return s.edge(s.sessions.Bearer(mux))
}

// ConsoleHandler serves the operations console, a browser application
// that calls the API (APIHandler's routes) with an API key the operator
// gives it; Handler serves it at /console/ unless Config.DisableConsole.
// Mount it under a prefix with http.StripPrefix; put the host's own
// authentication in front of it with any middleware. See package console.
func (s *Service) ConsoleHandler() http.Handler {
	return s.edge(s.console)
}

// MCPHandler serves the two MCP servers (streamable HTTP, stateless),
// which Handler and APIHandler serve too:
//
//   - POST /mcp, with scope environment:mcp and the headers connection-id
//     and provider-config-key: the connection's enabled actions as tools,
//     run as POST /action/trigger runs them, as Nango's MCP server serves
//     them;
//   - POST /mcp/manage: the service itself as tools (integrations, connect
//     sessions, connections, the proxy, syncs, records, the operations log
//     and webhook deliveries), each needing the scope of the API route it
//     calls; tools/list lists those the key may call.
//
// GET and DELETE answer 405: neither keeps sessions or an event stream.
// See package mcp.
func (s *Service) MCPHandler() http.Handler {
	mux := http.NewServeMux()
	s.mcp.Routes(s.router(mux, s.limiter))
	mux.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		httpapi.WriteError(w, r, s.logger, httpapi.StyleStandard, notFoundRoute(r))
	}))
	return s.edge(mux)
}

// ConnectHandler serves the pre-built connect UI (GET /connect/ and its
// assets under /connect/ui/, see package connectui) and the routes a
// browser calls with a connect session token and no API key, with CORS
// (any origin): GET and DELETE /connect/session (the connect UI) and the
// frontend client's non-OAuth auth calls POST /api-auth/api-key/{integration},
// /api-auth/basic/{integration}, /oauth2/auth/{integration} and
// /auth/unauthenticated/{integration}, the OAuth flow (GET
// /oauth/connect/{integration}, GET /oauth/callback, GET
// /oauth/status/{client}) and the frontend client's WebSocket at
// Config.WebsocketsPath. Handler includes them.
func (s *Service) ConnectHandler() http.Handler {
	mux := http.NewServeMux()
	s.sessions.PublicRoutes(mux)
	s.connectUI.Register(mux, connectui.DefaultPath)
	return s.edge(s.withWebSocket(mux))
}

// edge refuses, before routing, a request whose path, query or header
// values are not UTF-8 or hold control characters (httpapi.CheckRequest),
// so that no route, Store or upstream ever sees them. Every handler of the
// Service is wrapped in it once. The refusal is a 400 in the shape of the
// route: the OAuth popup's error page, {"message"} for the deprecated
// import and delete routes, the standard error body otherwise.
func (s *Service) edge(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		err := httpapi.CheckRequest(r)
		if err == nil {
			h.ServeHTTP(w, r)
			return
		}
		if connections.IsPopupPath(r.Method, r.URL.Path) {
			connections.WritePopupError(w, r.URL.Path, "The address of this page is malformed: start the connection again.")
			return
		}
		style := httpapi.StyleStandard
		if (r.Method == http.MethodPost && r.URL.Path == "/connection") ||
			(r.Method == http.MethodDelete && strings.HasPrefix(r.URL.Path, "/connection/")) {
			style = httpapi.StyleMessage
		}
		httpapi.WriteError(w, r, nil, style, err)
	})
}

// withWebSocket serves the frontend client's WebSocket (Config.WebsocketsPath)
// to upgrade requests and everything else with h.
func (s *Service) withWebSocket(h http.Handler) http.Handler {
	ws := s.sessions.WebSocketHandler()
	path := s.sessions.WebsocketsPath()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == path && connections.IsWebSocketUpgrade(r) {
			ws.ServeHTTP(w, r)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// Handler serves every route of the service: the routes of APIHandler,
// ProxyHandler and ConnectHandler, and the unauthenticated GET /health,
// GET /providers/{provider}/logo.svg and POST /webhook/{environment}/{integration}
// (providers' webhooks, verified by the provider's signature).
//
// Like every handler of the Service, it refuses with 400, before routing,
// a request whose decoded path, query keys or values, or header values
// (Cookie aside) are not UTF-8 or hold control characters, so that no
// route, Store or upstream sees them.
func (s *Service) Handler() http.Handler {
	mux := http.NewServeMux()
	s.registerAPI(mux)
	s.registerProxy(mux)
	s.sessions.PublicRoutes(mux)
	s.connectUI.Register(mux, connectui.DefaultPath)
	if !s.cfg.DisableConsole {
		s.console.Register(mux, console.DefaultPath)
	}
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		httpapi.WriteJSON(w, http.StatusOK, map[string]string{"result": "ok"})
	})
	mux.Handle("GET /providers/{provider}/logo.svg", s.integrations.LogoHandler())
	mux.Handle(webhooks.IncomingPattern, s.incomingHandler())
	return s.edge(s.withWebSocket(s.sessions.Bearer(mux)))
}

// incomingHandler receives providers' webhooks and forwards them through the
// Notifier.
func (s *Service) incomingHandler() http.Handler {
	return webhooks.IncomingHandler(webhooks.IncomingConfig{
		Environments: s.environments,
		Integrations: s.integrations,
		Providers:    s.cfg.Providers,
		Connections: webhooks.ConnectionListerFunc(func(ctx context.Context, envID int64, key string, limit, offset int) ([]webhooks.RoutableConnection, error) {
			cs, err := s.store.ListConnections(ctx, connections.Filter{EnvironmentID: envID, IntegrationKeys: []string{key},
				Page: store.Page{Limit: limit, Offset: offset}})
			if err != nil {
				return nil, err
			}
			out := make([]webhooks.RoutableConnection, len(cs))
			for i, c := range cs {
				out[i] = webhooks.RoutableConnection{ConnectionID: c.ConnectionID, ConnectionConfig: c.ConnectionConfig}
			}
			return out, nil
		}),
		Notifier:   s.notifier,
		Syncs:      s.functions,
		Transactor: s.store,
		Log:        s.log,
		Logger:     s.logger,
		Limiter:    s.limiter,
		PublicURL:  s.cfg.PublicURL,
		Now:        s.cfg.Now,
		MaxBody:    s.cfg.IncomingWebhooks.MaxBody,
		Forwards:   s.store,
		MaxForward: s.cfg.IncomingWebhooks.StorageQuota,
		Sampler:    s.sampler,
	})
}

func (s *Service) registerAPI(mux *http.ServeMux) {
	rt := s.router(mux, s.limiter)
	s.registerRoutes(rt)
	s.mcp.Routes(rt)
	mux.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		httpapi.WriteError(w, r, s.logger, httpapi.StyleStandard, notFoundRoute(r))
	}))
}

// router is the Router of the API-key routes, rate-limited by limiter
// (nil: not limited).
func (s *Service) router(mux *http.ServeMux, limiter ratelimit.Limiter) *httpapi.Router {
	return &httpapi.Router{
		Mux:          mux,
		Authenticate: s.authenticate,
		Limiter:      limiter,
		Logger:       s.logger,
		MaxBody:      s.cfg.MaxRequestBody,
	}
}

// registerRoutes registers the JSON API of the feature packages.
func (s *Service) registerRoutes(rt *httpapi.Router) {
	s.integrations.Routes(rt, s.cfg.PublicURL)
	s.connections.Routes(rt)
	s.sessions.Routes(rt)
	s.environments.Routes(rt)
	s.outbox.Routes(rt)
	s.log.Routes(rt)
	s.functions.Routes(rt)
}

// toolAPI is the JSON API and the proxy as the management MCP tools call
// them, in process with the caller's key: not rate-limited again (the
// MCP request counted) and without the MCP routes.
func (s *Service) toolAPI() http.Handler {
	mux := http.NewServeMux()
	rt := s.router(mux, nil)
	s.registerRoutes(rt)
	s.proxyRoutes(rt)
	mux.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		httpapi.WriteError(w, r, s.logger, httpapi.StyleStandard, notFoundRoute(r))
	}))
	return s.edge(mux)
}

// authenticate resolves the API key of an API request. A connect session
// token is not an API key: it gets a 401 that says so.
func (s *Service) authenticate(ctx context.Context, key string) (*httpapi.Principal, error) {
	p, err := s.environments.Authenticate(ctx, key)
	if err != nil && errors.Is(err, store.ErrUnauthorized) && connections.LooksLikeSessionToken(key) {
		return nil, store.Errorf(store.ErrUnauthorized, "unknown_account",
			"Authentication failed: a connect session token is not an API key; only GET /integrations, GET /providers/{provider} and the connect routes accept one.")
	}
	return p, err
}

// setupWebhooks builds the Scheduler, the webhook Notifier and Deliverer,
// and registers the delivery handler.
func (s *Service) setupWebhooks() error {
	cfg := s.cfg
	if err := cfg.Webhooks.Validate(); err != nil {
		return fmt.Errorf("connect: Config.Webhooks: %w", err)
	}
	s.scheduler = cfg.Scheduler
	s.deliverer = webhooks.NewDeliverer(webhooks.DelivererConfig{
		Delivery:   cfg.Webhooks,
		Store:      cfg.Store,
		SigningKey: s.webhookSigningKey,
		Log:        s.log,
		Sampler:    s.sampler,
		Transactor: cfg.Store,
		Logger:     cfg.Logger,
		Now:        cfg.Now,
	})
	if err := s.scheduler.Register(webhooks.JobKind, s.deliverer.Handle); err != nil {
		return fmt.Errorf("connect: register the webhook delivery job: %w", err)
	}
	s.outbox = webhooks.NewOutbox(webhooks.OutboxConfig{
		Store:      cfg.Store,
		Scheduler:  s.scheduler,
		Transactor: cfg.Store,
		Log:        s.log,
		Now:        cfg.Now,
	})
	s.notifier = cfg.Notifier
	if s.notifier == nil {
		s.notifier = webhooks.NewNotifier(webhooks.NotifierConfig{
			Environments: cfg.Store,
			Overrides: webhooks.OverrideGetterFunc(func(ctx context.Context, envID int64, integrationKey, connectionID string) (string, error) {
				c, err := cfg.Store.GetConnection(ctx, envID, integrationKey, connectionID)
				if err != nil {
					return "", err
				}
				return c.WebhookURLOverride, nil
			}),
			Store:      cfg.Store,
			Scheduler:  s.scheduler,
			Transactor: cfg.Store,
			Log:        s.log,
			From:       cfg.WebhookFrom,
			Now:        cfg.Now,
		})
	}
	return nil
}

// webhookSigningKey opens the signing key of an environment (cached for
// Config.APIKeyCacheTTL).
func (s *Service) webhookSigningKey(ctx context.Context, envID int64) (string, error) {
	return s.environments.SigningKey(ctx, envID)
}

// Notify hands an event to the Notifier (Config.Notifier, by default the
// webhook notifier). Call it with the context of the transaction of the
// change that caused the event (see Store.WithTx): with the default
// Notifier, the webhooks exist if and only if that transaction commits.
func (s *Service) Notify(ctx context.Context, e webhooks.Event) error {
	return s.notifier.Notify(ctx, e)
}

// Webhooks lists and resends webhook deliveries, as the routes under
// /webhooks/deliveries do (see webhooks.Outbox.Routes).
func (s *Service) Webhooks() *webhooks.Outbox { return s.outbox }

// ListWebhookDeliveries lists webhook deliveries, newest first: for
// example the failed ones of an environment, with
// webhooks.DeliveryFilter{EnvironmentID: id, Status: webhooks.StatusFailed}.
// A zero EnvironmentID lists every environment. Limit defaults to 100 and
// is at most 1000. For pages (a next position) use Webhooks().List.
func (s *Service) ListWebhookDeliveries(ctx context.Context, f webhooks.DeliveryFilter) ([]*webhooks.Delivery, error) {
	if f.Limit <= 0 || f.Limit > 1000 {
		f.Limit = 100
	}
	return s.store.ListDeliveries(ctx, f)
}

// ResendWebhook sends a failed (or delivered) webhook again, to the same URL
// with the same body and delivery id: it makes the delivery pending with a
// fresh set of attempts and enqueues its job, in one transaction. A pending
// delivery is ErrConflict (it is being delivered); an unknown id is
// ErrNotFound. Webhooks().ResendFailed resends failed ones in bulk.
func (s *Service) ResendWebhook(ctx context.Context, deliveryID string) error {
	_, err := s.outbox.Resend(ctx, 0, deliveryID)
	return err
}
