// Package connect holds a host application's end users' authorization for
// external APIs and uses it: OAuth 2, OAuth 1, API key, Basic and
// client-credentials connections, stored encrypted in the host's own
// Postgres, served over an HTTP API that the published Nango clients speak.
//
// # Embedding
//
// Build a Service with New from a Config that names a Store and the
// encryption keys, make sure of the environment and API key the host uses,
// then mount its handlers on the host's mux:
//
//	key, err := connect.ParseEncryptionKey(os.Getenv("CONNECT_ENCRYPTION_KEY")) // base64 of 32 bytes
//	pg, err := postgres.Connect(ctx, dsn, nil) // pool, tables, job queue and rate limiter (see package store/postgres)
//	defer pg.Close()
//	svc, err := connect.New(connect.Config{
//		Store:          pg.Store,
//		Scheduler:      pg.Scheduler,
//		RateLimiter:    pg.RateLimiter,
//		EncryptionKeys: []connect.EncryptionKey{key},
//		PublicURL:      "https://app.example.com/connect",
//	})
//	_, err = svc.Environments().Ensure(ctx, environments.CreateInput{Name: "prod"},
//		&environments.NewAPIKey{Name: "backend", Secret: apiKey, Scopes: []string{environments.ScopeAll}})
//	if err := svc.Start(ctx); err != nil { ... } // background work: webhook deliveries
//	mux.Handle("/connect/", http.StripPrefix("/connect", svc.Handler()))
//
// Nothing is written before the encryption keys are checked against the
// Store (see [Service.CheckEncryptionKeys]): Ensure, and the first write
// that seals a secret, check them when Start has not, and a Service whose
// keys do not open the stored secrets fails without writing. Ensure is
// idempotent and atomic, safe at every start of every instance.
//
// The handler's routes are relative to where it is mounted, and
// [Config.PublicURL] says where that is as browsers and providers see it,
// prefix included: every address the service hands out (connect links, the
// connect UI's API, logo and webhook URLs, the OAuth redirect URI, the
// WebSocket path announced to @nangohq/frontend) comes from it. The README's
// "Embed it" section is a complete program.
//
// Go code manages the same data without HTTP through the feature services:
// [Service.Environments], [Service.Integrations] and [Service.Connections].
//
// # Connect UI
//
// Handler and ConnectHandler also serve the pre-built connect UI at
// /connect/ (package connectui): the page a connect session's connect_link
// opens, and the one @nangohq/frontend's openConnectUI shows in an iframe.
// It lists the session's integrations, collects what each needs, runs
// OAuth in a popup, and follows the environment's branding. [Config.ConnectUI]
// says which API origins it may call and who may frame it.
//
// # Storage
//
// A [Store] holds all state, and a [Scheduler] runs the background jobs
// in the same database. store/sqlite keeps both in one SQLite file, for
// one process with nothing to install (or in memory, for tests:
// sqlite.Connect(ctx, sqlite.MemoryPath, nil)); store/postgres keeps them in
// tables of their own schema inside the host's database, for several
// instances. Both pass the conformance suite of store/storetest, which a
// host can run against a Store of its own.
//
// # Bounded storage
//
// What the Service keeps stays bounded. Delivered and failed webhook
// deliveries are deleted 30 days after their final state, and operations
// log entries after 15 days ([Config.Retention], applied by
// [Service.Retain] as a job that each maintenance sweep queues). Providers'
// webhooks, which for providers that do not sign them anyone may send, are
// limited to 1 MiB a body, the forwards each integration stores to 256 MiB
// (bodies and rows, as webhooks.ForwardCharge counts them), and the
// operations log entries they cause to one per integration and outcome per
// minute and instance, each counting those left out
// ([Config.IncomingWebhooks]). [RequireBodyProgress] cuts off
// clients that send a request body too slowly, without bounding how long a
// steadily sent body (through the proxy, say) may take.
//
// # Webhooks
//
// Events (a connection created, a refresh failed, a provider's webhook
// forwarded) go to the [Config.Notifier]; the default writes one delivery
// per destination URL into an outbox in the same transaction as the change,
// and the [Config.Scheduler] delivers them, signed, with retries. See
// package webhooks.
//
// # Proxy
//
// /proxy/{endpoint} ([Service.ProxyHandler], included in [Service.Handler])
// calls a provider's API with a connection's credentials and returns the
// upstream's answer unchanged and streamed; [Service.Proxy] makes the same
// call from Go and [Service.ProxyClient] is an *http.Client bound to one
// connection for a provider's Go SDK. See package proxy.
//
// # Outbound requests
//
// Every request built from stored or end-user input follows one address
// policy (package egress), checked at dial time: calls to providers (the
// proxy, token and refresh requests, credential checks, OAuth 1 and app
// token calls) under [Config.Egress], webhook deliveries under
// Config.Webhooks.Policy. By default only public addresses are reached,
// and a refusal or an unreachable address is told to the caller as
// "address not allowed" (with the setting that allows private networks,
// egress.Policy.Setting) or "could not reach the provider", nothing more.
// No end user chooses the host that receives an integration's secrets: a
// connect session's preset connection config wins, end-user values must be
// declared fields that fit them, and every URL is built from its template
// by one renderer that keeps each value in its place (see package
// connections and integrations.Provider.RenderURL).
//
// # Security
//
// Every API request carries an environment's API key as a bearer token; the
// key's scopes decide which routes it may call (see package environments).
// Credentials, client secrets, webhook signing keys and environment variable
// values are sealed with AES-256-GCM under a keyring before they reach the
// Store; API keys are stored only as hashes. [Service.ReencryptSecrets]
// moves every secret to a new primary key, and [Service.CheckEncryptionKeys]
// (run by Start) refuses to run without a key that stored secrets need.
package connect
