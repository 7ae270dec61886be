// Package e2e holds the end-to-end tests: they drive the reference server (./examples/server)
// the way users do, through the published Node client @nangohq/node and, in headless Chromium,
// the connect UI and the published @nangohq/frontend, each pinned to exactly 0.71.10 in
// e2e/package.json and e2e/package-lock.json. The package has no non-test code.
//
// e2e/package.json also pins the Nango CLI (nango@0.71.10, with the zod 4.3.6 it requires), for
// e2e/nango-project: a small zero-yaml Nango project of our own that the real CLI compiles
// (build.sh) and deploys to a capture server (capture.sh). Their outputs are test data:
// functions/jsruntime/testdata/cli (the compiled .cjs) and functions/testdata/deploy (the
// deploy request bodies).
//
// TestNodeClient builds ./examples/server (once per run of the package's tests; with -race
// when the test binary has it, with the flags of scripts/test: see race_test.go), creates a
// fresh Postgres database connect_e2e_<random> through TEST_DATABASE_URL, starts the server on
// a free port with DATABASE_URL, a random CONNECT_ENCRYPTION_KEY and CONNECT_API_KEY, and
// CONNECT_DEV_ENV_VARS, waits for GET /health, and runs every e2e/node/*.test.mjs file with
// `node --test`. It then sends SIGTERM and requires the server to exit with code 0 within
// 10 seconds, and drops the database. TestNodeClientSQLite does the same on the server's
// default store: no DATABASE_URL and no key, a fresh CONNECT_DATA_DIR in which the server makes
// its SQLite file and its key. For the proxy tests (e2e/node/proxy.test.mjs) it also
// starts two fake provider APIs (upstream_test.go), passes their URLs to node as
// NANGO_E2E_UPSTREAM_URL and NANGO_E2E_UPSTREAM2_URL, gives the server a providers file whose
// base URLs point at them (CONNECT_PROVIDERS_FILE) and CONNECT_PROXY_ALLOW_PRIVATE_NETWORKS=true
// (the older name of CONNECT_PROVIDER_ALLOW_PRIVATE_NETWORKS), and checks afterwards that the
// server's API key never reached them. For the webhook test
// (e2e/node/webhook.test.mjs) it starts the host application's webhook endpoint
// (webhook_sink_test.go), gives the server its URL and a signing key (CONNECT_WEBHOOK_URLS,
// CONNECT_WEBHOOK_SIGNING_KEY) and passes both to node (NANGO_E2E_WEBHOOK_SINK_URL,
// NANGO_E2E_WEBHOOK_SIGNING_KEY): the Node test connects an end user through a connect session,
// and checks the auth webhook that arrives with the client's own verifyIncomingWebhookRequest.
// For the function tests (e2e/node/functions.test.mjs) it starts fake GitHub and Slack APIs (the
// githubtest and slacktest packages of examples/functions: issues listed with Link header
// pagination and since, created and updated; chat.postMessage and conversations.history), adds
// e2e-github and e2e-slack to the providers file (the catalogue's github and slack proxy
// settings, pagination included, on the fakes' addresses), starts the server with
// CONNECT_EXAMPLE_FUNCTIONS=github=e2e-fn-github,slack=e2e-fn-slack and passes the fakes to node
// as NANGO_E2E_FUNCTIONS (JSON). The Node test drives the example functions through the client
// (actions sync and async, sync controls and variants, records, function listings, scripts
// config, provider templates) and compares the records with what the fake GitHub serves; the Go
// test then checks that the fakes saw only the connections' tokens and that the sync followed
// GitHub's next links.
//
// TestNangoCLI (nango_cli_test.go) deploys e2e/nango-project with the real CLI (nango@0.71.10,
// run as `npx --no-install nango` with CI=true, no telemetry, no upgrade check, no dependency
// update) to the reference server on a fresh Postgres database. The integration fake uses
// private-api-bearer, an API-key provider of Nango's catalogue (the CLI's dry run looks the
// provider up there), read from e2e/node_modules/@nangohq/providers with its base URL moved to
// a fake provider API in the test (GET /items with cursor pagination, at most 10 a page; POST
// /items; DELETE /items/{id}), through CONNECT_PROVIDERS_FILE and
// CONNECT_PROXY_ALLOW_PRIVATE_NETWORKS=true. The project is copied to a temporary directory (the
// CLI writes build/ and .nango/ there), linked to e2e/node_modules. After `nango deploy dev
// --auto-confirm --allow-destructive` (exit 0, every function in its `Successfully deployed the
// functions:` lines), e2e/node-cli/deployed.test.mjs drives the functions with @nangohq/node:
// listings, scripts config and code, the items sync (triggerSync, syncStatus, listRecords
// against the fake's items), create-item synchronously, asynchronously and its ActionError,
// whoami, and the on-event setup of a connection made after the deployment.
// e2e/node-cli/mcp.test.mjs then drives the MCP servers with the official TypeScript client
// (@modelcontextprotocol/sdk@1.30.0, streamable HTTP): POST /mcp lists the deployed actions as
// tools and runs create-item (its output, its ActionError and input that breaks its schema as
// isError results equal to POST /action/trigger's error bodies, an unknown tool as a JSON-RPC
// error); plain fetch checks the refusals (400 invalid_headers and unknown_connection, 405 with
// Nango's JSON-RPC body, 403 without environment:mcp); POST /mcp/manage lists every management
// tool with its annotations and answers what the API answers, and to a key of
// environment:integrations:read alone lists two tools and refuses the others. The server has no
// route that creates API keys: the Go test adds those narrower keys to the dev environment
// through the library, on the server's database and encryption key, and requires the fake API
// to have received exactly one write during the script (the create-item run). Then `nango dryrun
// items` must print every item, `nango dryrun whoami` must answer what the server's run of
// whoami answers, and `nango pull` must write whoami.ts back as it was. The project is
// redeployed without whoami (removed from index.ts); e2e/node-cli/redeployed.test.mjs checks
// that it is gone (listings, code, trigger: 404) and that the sync, with trackDeletes, and
// create-item still run, and `nango pull` of whoami fails with not_found. The fake API must have
// seen only the connection's key.
//
// TestConnectUIBrowser (browser_test.go) runs the files e2e/browser/*.test.mjs (but the authmodes-* ones, which the auth-mode tests run with their own fakes, and console.test.mjs, TestConsole's; all share browsersuite_test.go) the same way, with
// playwright-core driving headless Chromium (Debian's chromium, or CHROMIUM_PATH; --no-sandbox
// when root). Around the reference server it starts (with
// CONNECT_PROVIDER_ALLOW_PRIVATE_NETWORKS=true), as httptest servers: a fake OAuth 2
// provider (an authorize endpoint that redirects straight back with a code and the state, and a
// token endpoint that checks the client, the redirect URI, the code's single use and PKCE) with
// an API-key check endpoint, registered through CONNECT_PROVIDERS_FILE; the host's webhook
// receiver, which verifies every X-Svc-Hmac-Sha256 with the signing key itself; and a test page
// on another origin that loads @nangohq/frontend@0.71.10 from e2e/node_modules. In the browser:
// connect_link connects an API-key integration (after a refused key and a malformed subdomain)
// and an OAuth 2 integration through the popup, and one with the end user's own OAuth app;
// openConnectUI connects an API-key and an OAuth 2 integration inside its iframe and the events
// it passes on are checked, and a popup closed early is reported with detectClosedAuthWindow; the
// frontend's auth() connects an API-key and an OAuth 2 integration. Every connection made must
// then exist and have its signed auth webhook. It also takes the connect UI screenshots in the
// light and dark themes: into docs/ with CONNECT_UPDATE_SCREENSHOTS=1, otherwise into a
// temporary directory.
//
// TestAuthModesTokensBrowser (authmodes_tokens_test.go) starts the server with Nango's own
// entries of netsuite-client-credentials (TWO_STEP), apple-app-store (JWT), emarsys (SIGNATURE),
// bill (BILL), netsuite-tba (TBA) and aws-sigv4 (AWS_SIGV4), read from the published
// providers.yaml with only their addresses moved to fakes that check what they receive (the
// client assertion and each JWT verified with the public key, the WSSE digest recomputed, the
// Bill login's body, the OAuth 1 and SigV4 signatures). e2e/browser/authmodes-tokens.test.mjs
// connects the four token modes with @nangohq/frontend's headless auth(), proxies through each,
// forces a refresh and requires a new token; then it connects all six through the connect UI's
// forms (the fields and labels the provider's schemas give), a refused Bill login showing the
// server's error in the form and storing nothing. It runs only with E2E_TOKENS=1, as the other
// e2e/browser/authmodes-*.test.mjs files run only with their own variables.
//
// TestPopupAuthModesBrowser (authmodes_popup_test.go) starts the server with Nango's entries
// of airtable-mcp (MCP_OAUTH2), mcp-generic (MCP_OAUTH2_GENERIC), github-app-oauth (CUSTOM) and
// crisp-plugin-install (INSTALL_PLUGIN) pointed at one fake: an MCP server with its
// authorization server (metadata, dynamic registration, PKCE), a GitHub App and a Crisp
// marketplace and plugin API, each checking what it receives. e2e/browser/authmodes-popup.test.mjs
// connects the first three with @nangohq/frontend's nango.auth() popup, then all four through
// the connect UI opened from a connect_link (the form shows mcp-generic's mcp_server_url field
// from its schema and refuses a value off its pattern; the others have no field), each up to
// the success screen; the Go test then proxies through every connection (the Bearer token, or
// the plugin's Basic credentials) and forces a refresh of the OAuth ones.
//
// Each browser test above runs twice, as the parallel subtests sqlite and postgres of browserTest
// (browsersuite_test.go), which starts the reference server: sqlite on its default store, no
// DATABASE_URL and no key, a SQLite file and the key the server makes in a fresh
// CONNECT_DATA_DIR; postgres on a fresh database with a random CONNECT_ENCRYPTION_KEY. The
// server's startup log must name that file (which must exist) or that database.
//
// TestConsole (console_test.go) drives the operations console (/console/) in headless Chromium
// with e2e/browser/console.test.mjs, against the reference server on a fresh Postgres database
// (Postgres only), with data made through the API and real flows. Its providers file holds the
// catalogue's hubspot, github and slack with their addresses moved to fakes (their logos
// stay): HubSpot's token endpoint refuses every refresh (invalid_grant); the example functions
// (CONNECT_EXAMPLE_FUNCTIONS) run on the githubtest and slacktest fakes. Connections of end
// users are imported with their tokens: one is refreshed by force (GET /connections/{id} with
// force_refresh=true: an auth error pointing at its log entry), one has an expired token (its
// first read refreshes it, and fails), GitHub's issues sync saves records. The host's webhook
// receiver verifies signatures and answers 500 until the browser test tells it (POST /control)
// to answer 200. In the browser: the modules of the first paint weigh less than 200 KB; the
// sign-in form, the skip link, the sections and "/" are used with the keyboard; the overview
// counts the imported connections and links the failed refreshes to the log; the Health
// filter (status=auth_error) finds the broken connection, whose error leads to its log entry;
// the expired one shows with its refresh's error; the sync is paused, resumed (it runs) and
// run (a new run ends); the run's webhook delivery shows its 500s, is delivered by a retry once
// the receiver answers 200, and is resent (its attempts in time order); a record opens as
// JSON; a function is disabled and enabled, and its code shows; Settings makes a key of
// environment:connections:read and environment:logs:read, with which the console shows the
// read-only badge, says that Settings is not allowed (403) and offers no write button on the
// connection page; the theme switch is kept. No uncaught error, failed request or console
// error may happen but the ones a step expects. The Go test then checks the key's scopes, the
// receiver's counts of the resent delivery and the signatures. With
// CONNECT_E2E_SCREENSHOTS=<dir> it writes docs/'s console-<screen>-<light|dark>.png (1280×800)
// there: `CONNECT_E2E_SCREENSHOTS=$PWD/../docs go test -run TestConsole .` from e2e/.
//
// TestEmbeddedUnderPrefix (embedded_test.go) embeds the library as the README's "Embed it"
// section shows: in the test process, on a fresh Postgres database, svc.Handler() is mounted
// under /connect of a host application's ServeMux with http.StripPrefix, and Config.PublicURL
// names that prefix. The host serves its own page with @nangohq/frontend on the same origin.
// e2e/embedded/*.test.mjs then connects, in headless Chromium, through the connect_link, inside
// openConnectUI's iframe, and with the frontend's auth() (OAuth 2 through the popup and the
// WebSocket at the websocketsPath that GET /connect/session announces, and an API key); no
// request under the prefix may fail.
//
// TestNangoProvidersFile (providers_test.go) starts the reference server on a fresh Postgres
// database with CONNECT_PROVIDERS_FILE set to Nango's own catalogue as npm ships it
// (e2e/node_modules/@nangohq/providers/providers.yaml, @nangohq/providers pinned to 0.71.10 in
// e2e/package.json). It reads the file on its own with a plain YAML parser and requires every
// provider of it to be listed by GET /providers with its auth mode and without an unusable
// reason, and POST /integrations to succeed for every one (with app credentials fitting its auth
// mode). A failure lists each provider that failed and why.
//
// TestTemplateHeaders (template_headers_test.go) finds in the same file, with a YAML parser,
// every provider whose proxy headers or query (or verification headers) use a template
// function, ${now}, ${random} or a request value, and starts the server on the file with only
// those providers' base URLs rewritten to a recording upstream. It imports a connection of
// each with known credentials, proxies a GET with a query and a POST with a JSON body, and
// recomputes every header each request carried with the standard library (base64 of the
// credentials, Avanan's and Duo's digests over the values sent, SigV4 verified by
// sigV4Check, the Ed25519 HTTP message signature with the test's key pair, UUID v4 and date
// formats). A provider found but not checked fails the test.
//
// TestREADME (readme_test.go) runs the examples of README.md and of every page of docs/, each
// page in order and on its own, against the reference server (started by the README's own
// command, or for a page of docs/ as the README's Run it leaves its reader): sh blocks in bash,
// js blocks in Node or (those that import @nangohq/frontend) in headless Chromium, go blocks
// built as an application module that requires this one. Its doc comment gives the
// conventions (the <!-- example: ... --> marks, the placeholders, the fake provider API); a
// failure names the page and line. TestDocsLinks (doclinks_test.go) checks the links of those
// pages and of CHANGELOG.md.
//
// # Running it locally
//
// scripts/test, from the repository root, installs what these tests need and runs the whole
// suite with everything required. By hand: once, and whenever e2e/package-lock.json changes:
//
//	npm ci --prefix e2e
//	apt-get install chromium   # for the browser tests
//
// Then, with a Postgres that the URL's user may create databases on:
//
//	TEST_DATABASE_URL='postgres://postgres@127.0.0.1:5432/test?sslmode=disable' \
//	  go test ./e2e/ -run TestNodeClient -v
//
// Without TEST_DATABASE_URL the test skips; with CONNECT_REQUIRE_POSTGRES=1 it fails instead.
// Without node or e2e/node_modules it skips too, unless CI=true or CONNECT_REQUIRE_POSTGRES=1,
// when it fails and says to run `npm ci --prefix e2e`. Node.js 20 or newer is needed.
//
// # Running the Node tests against a server you started
//
// The node:test files read NANGO_HOST and NANGO_API_KEY, and CONNECT_DEV_ENV_VARS for the
// expected environment variables (without it that test checks only the shape of the answer).
// Every name they create carries a per-run suffix, so they can be rerun against the same
// server:
//
//	CONNECT_API_KEY=dev-key CONNECT_DEV_ENV_VARS='{"A":"1"}' go run ./examples/server &
//	cd e2e && NANGO_HOST=http://127.0.0.1:3003 NANGO_API_KEY=dev-key \
//	  CONNECT_DEV_ENV_VARS='{"A":"1"}' node --test node/
//
// In CI, .ci/run runs scripts/test: it runs `npm ci --prefix e2e`, makes sure Postgres answers,
// and sets TEST_DATABASE_URL and CONNECT_REQUIRE_POSTGRES=1.
package e2e
